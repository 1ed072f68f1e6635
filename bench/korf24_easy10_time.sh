#!/usr/bin/env bash
# Issue 21's time benchmark: Korf & Felner's ten easiest 24-puzzles (ids 40 38 25 44 32 28 22 36
# 30 1), one at a time through the embedded cluster (a coordinator and a worker on every core),
# under /usr/bin/time, each answer's length checked against the listed one.
#
#   bench/korf24_easy10_time.sh LABEL NPUZZLE PDB_DIR [VAR=VALUE ...]
#
# e.g. bench/korf24_easy10_time.sh sparse target/release/npuzzle ~/.cache/npuzzle/pdb
#      bench/korf24_easy10_time.sh dense target/release/npuzzle ~/.cache/npuzzle/pdb NPUZZLE_PDB_DENSE=1
# Run two builds alternately in one sitting and compare within it.
set -euo pipefail
label=$1 bin=$2 dir=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ids="40 38 25 44 32 28 22 36 30 1"
for id in $ids; do
  awk -v id="$id" '$1 == id { s = ""; for (i = 3; i <= NF; i++) s = s $i " "; print s }' \
    "$here/data/korf24_50.txt"
done >"$work/boards.txt"
for id in $ids; do awk -v id="$id" '$1 == id { print $2 }' "$here/data/korf24_50.txt"; done \
  >"$work/lengths.txt"
echo "=== $label $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
env "$@" /usr/bin/time -f "wall %e s, peak %M KB" "$bin" batch "$work/boards.txt" \
  --goal blank-first --heuristic pdb --pdb-dir "$dir" --jobs 1 --output jsonl \
  --out "$work/out.jsonl" 2>&1 | tail -1
python3 - "$work/out.jsonl" "$work/lengths.txt" <<'P'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
lengths = [int(l) for l in open(sys.argv[2])]
ok = sum(len(r.get("moves") or "") == n for r, n in zip(rows, lengths))
nodes = sum(int(r.get("nodes") or 0) for r in rows)
print(f"{len(rows)} answers, {ok} at the listed length, {nodes:,} nodes")
sys.exit(0 if ok == len(lengths) == len(rows) else 1)
P
