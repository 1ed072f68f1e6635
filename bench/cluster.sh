#!/usr/bin/env bash
# Cluster benchmarks (issue 3): the 20 hardest Korf instances (by linear-conflict nodes) through
# the embedded cluster with 1 and 2 search threads, and through a coordinator and two worker
# processes; then all 100 through the embedded cluster. Every run compares with a serial search
# of the same instances in the same process. Output: one file per run under $OUT (default
# docs/benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs/benchmarks}
mkdir -p "$OUT"
cargo build --release -p npuzzle-client -p npuzzle-coordinator -p npuzzle-worker
BIN=target/release
HARD20=88,66,60,82,49,32,56,3,15,53,17,7,91,59,22,92,72,14,26,10
common=(data/korf100.txt --goal blank-first --heuristic lc)

$BIN/npuzzle cluster-bench "${common[@]}" --ids $HARD20 --workers 1 --threads 1 --compare-serial \
  | tee "$OUT/cluster-hard20-1thread.txt"
$BIN/npuzzle cluster-bench "${common[@]}" --ids $HARD20 --workers 1 --threads 2 --compare-serial \
  | tee "$OUT/cluster-hard20-2threads.txt"

port=$((20000 + RANDOM % 20000))
$BIN/npuzzle-coordinator --listen 127.0.0.1:$port 2>/dev/null &
pids=($!)
for i in 1 2; do
  $BIN/npuzzle-worker --coordinator http://127.0.0.1:$port --threads 1 --name w$i 2>/dev/null &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
$BIN/npuzzle cluster-bench "${common[@]}" --ids $HARD20 --coordinator http://127.0.0.1:$port --compare-serial \
  | tee "$OUT/cluster-hard20-2processes.txt"
kill "${pids[@]}" 2>/dev/null || true

$BIN/npuzzle cluster-bench "${common[@]}" --workers 1 --threads 2 --compare-serial \
  | tee "$OUT/cluster-korf100-2threads.txt"

# With pattern databases (issue 10), the path users take: the workers and the serial comparison
# load the same tables from $NPUZZLE_PDB_DIR (build them first: `npuzzle pdb build --size 5x5
# --partition 6-6-6-6`, `--size 4x4 --partition 7-8`).
$BIN/npuzzle cluster-bench data/korf24_50.txt --goal blank-first --heuristic pdb --ids 40,25,29,36 \
  --workers 1 --threads 2 --compare-serial --latency-samples 0 | tee "$OUT/cluster-korf24-pdb-2threads.txt"
$BIN/npuzzle cluster-bench data/korf100.txt --goal blank-first --heuristic pdb --workers 1 --threads 2 \
  --compare-serial --latency-samples 0 | tee "$OUT/cluster-korf100-pdb-2threads.txt"

# Batches through the default engine (an embedded cluster) against --serial, same cores.
grep -v '^#' data/korf100.txt | awk '{$1=""; $2=""; print substr($0, 3)}' > "$OUT/.korf100.lines"
grep -v '^#' data/hard80_15puzzle.txt | awk '{$1=""; $2=""; print substr($0, 3)}' > "$OUT/.hard80.lines"
for f in korf100 hard80; do
  for engine in "" --serial; do
    /usr/bin/time -f "$f ${engine:-default}: %e s" $BIN/npuzzle batch "$OUT/.$f.lines" --goal blank-first \
      $engine > /dev/null
  done
done 2>&1 | tee "$OUT/batch-pdb-engines.txt"
rm -f "$OUT/.korf100.lines" "$OUT/.hard80.lines"
