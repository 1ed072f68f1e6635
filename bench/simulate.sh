#!/usr/bin/env bash
# Scaling by simulation (issues 10, 23): recorded traces (data/traces/) through the real scheduler
# with simulated workers, 1 to 10,000 slots, the coordinator's time charged (calibrated); tables in
# docs/benchmarks/sim-*.txt, the plot in docs/sim-scaling.png. Record the traces again with
# RECORD=1 (needs the 5x5 tables, all three layouts, and the 4x4 7-8 ones in $NPUZZLE_PDB_DIR:
# `npuzzle pdb build`). The trace of #40 recorded before duplicate pruning, with one 6-6-6-6
# layout, is kept as docs/benchmarks/korf24-40-plain-ida.trace for the older tables that used it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs/benchmarks}
mkdir -p "$OUT" data/traces
cargo build --release -p npuzzle-client
BIN=target/release/npuzzle

if [[ "${RECORD:-0}" == 1 ]]; then
  # About 2 × the serial search per instance: #29 and #36 take some 6 minutes each here.
  for id in 40 25 29 36; do
    out=data/traces/korf24-$id.trace
    $BIN trace data/korf24_50.txt --goal blank-first --heuristic pdb --ids $id --depth 10 \
      --out "$out"
  done
  $BIN trace data/korf100.txt --goal blank-first --heuristic pdb --depth 5 --out data/traces/korf100-7-8.trace
fi

SLOTS=1,2,4,8,16,32,64,128,256,512,1024,2048,4096,10000
for t in korf24-29 korf24-36 korf24-25 korf24-40; do
  $BIN simulate data/traces/$t.trace --slots $SLOTS | tee "$OUT/sim-$t.txt"
  $BIN simulate data/traces/$t.trace --slots $SLOTS --json > "$OUT/sim-$t.jsonl"
done
# Korf's 100 as a batch, 4 boards in flight per slot's worth (a client with many requests out).
$BIN simulate data/traces/korf100-7-8.trace --slots 1,2,4,8,16,32,64 --jobs-in-flight 128 \
  | tee "$OUT/sim-korf100.txt"
$BIN simulate data/traces/korf100-7-8.trace --slots 1,2,4,8,16,32,64 --jobs-in-flight 128 --json \
  > "$OUT/sim-korf100.jsonl"

# The plot: matplotlib in a virtual environment of its own.
if [[ ! -x target/plot-venv/bin/python ]]; then
  python3 -m venv target/plot-venv
  target/plot-venv/bin/pip install --quiet matplotlib
fi
target/plot-venv/bin/python bench/plot_sim.py docs/sim-scaling.png \
  "24-puzzle #29 (88 moves, 68 s serial)=$OUT/sim-korf24-29.jsonl" \
  "24-puzzle #36 (90 moves, 65 s)=$OUT/sim-korf24-36.jsonl" \
  "24-puzzle #25 (81 moves, 5.1 s)=$OUT/sim-korf24-25.jsonl" \
  "24-puzzle #40 (82 moves, 1.2 s)=$OUT/sim-korf24-40.jsonl" \
  "Korf's 100, 7-8 tables, as a batch=$OUT/sim-korf100.jsonl"
