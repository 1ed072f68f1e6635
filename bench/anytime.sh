#!/usr/bin/env bash
# Issue 50's benchmarks: Korf & Felner's 50 24-puzzles through the embedded cluster (a
# coordinator and a worker on every core) with pattern databases, as a batch, every answer's path
# replayed to the goal here and its length compared with the published optimum.
#
#   bench/anytime.sh first    NPUZZLE PDB_DIR          # a 1 s deadline each, one at a time
#   bench/anytime.sh within   NPUZZLE PDB_DIR W [IDS]  # --within W, two in flight
#   bench/anytime.sh deadline NPUZZLE PDB_DIR SECS     # a SECS deadline each, two in flight
#   bench/anytime.sh optimal  NPUZZLE PDB_DIR [IDS]    # optimal, one at a time (default: the ten easiest)
#
# IDS: ids from data/korf24_50.txt, space-separated (default: all 50, or the ten easiest).
# LIMIT=SECS in the environment stops the batch after SECS and reports the boards answered.
# Prints one line per board (id, optimum, status, length, ratio, lower bound, ms, nodes) and a
# summary; exits 1 if a path does not replay or breaks its guarantee.
set -euo pipefail
mode=$1 bin=$2 dir=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
case $mode in
  first) ids=${1:-}; args=(--timeout 1 --jobs 1) ;;
  within) w=$1; ids=${2:-}; args=(--within "$w" --jobs 2) ;;
  deadline) args=(--timeout "$1" --jobs 2); ids=${2:-} ;;
  optimal) ids=${1:-"40 38 25 44 32 28 22 36 30 1"}; args=(--jobs 1) ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
[ -n "$ids" ] || ids=$(awk '!/^#/ && NF { print $1 }' "$here/data/korf24_50.txt")
for id in $ids; do
  awk -v id="$id" '$1 == id { s = $1 " " $2; for (i = 3; i <= NF; i++) s = s " " $i; print s }' \
    "$here/data/korf24_50.txt"
done >"$work/instances.txt"
cut -d' ' -f3- "$work/instances.txt" >"$work/boards.txt"
echo "=== $mode ${args[*]} $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')"
timeout "${LIMIT:-100000}" /usr/bin/time -f "wall %e s, peak %M KB" "$bin" batch "$work/boards.txt" \
  --goal blank-first --heuristic pdb --pdb-dir "$dir" --output jsonl "${args[@]}" \
  --out "$work/out.jsonl" 2>&1 | tail -1 || true
python3 - "$work/out.jsonl" "$work/instances.txt" "$mode" "${w:-1}" <<'P'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
instances = [l.split() for l in open(sys.argv[2]) if l.strip()]
mode, w = sys.argv[3], float(sys.argv[4])

def replays(tiles, moves):
    board = list(tiles)
    blank = board.index(0)
    step = {"U": -5, "D": 5, "L": -1, "R": 1}
    for m in moves:
        to = blank + step[m]
        if to < 0 or to >= 25 or (m in "LR" and to // 5 != blank // 5):
            return False
        board[blank], board[to] = board[to], 0
        blank = to
    return board == list(range(25))

bad = paths = optimal_count = 0
nodes = 0
for row, inst in zip(rows, instances):
    ident, best, tiles = inst[0], int(inst[1]), [int(t) for t in inst[2:]]
    moves = row.get("moves") or ""
    length = len(moves)
    ok = bool(moves) and replays(tiles, moves)
    paths += ok
    nodes += int(row.get("nodes") or 0)
    lb = row.get("lower_bound")
    problems = []
    if moves and not ok:
        problems.append("DOES NOT REPLAY")
    if ok and length < best:
        problems.append("SHORTER THAN THE OPTIMUM")
    if lb is not None and lb > best:
        problems.append("LOWER BOUND ABOVE THE OPTIMUM")
    if row.get("optimal") and length != best:
        problems.append("CLAIMED OPTIMAL")
    if mode == "within" and row["status"] == "solved" and length > w * best:
        problems.append("OUTSIDE ITS FACTOR")
    if mode == "optimal" and row["status"] == "solved" and length != best:
        problems.append("NOT OPTIMAL")
    bad += bool(problems)
    optimal_count += length == best
    ratio = f"{length / best:.3f}" if moves else "-"
    print(f"#{ident:>2} opt {best:>3} {row['status']:<8} len {length or '-':>3} ratio {ratio:>5} "
          f"lb {lb if lb is not None else '-':>3} {row.get('millis', 0):>10.1f} ms "
          f"{int(row.get('nodes') or 0):>14,} nodes {' '.join(problems)}")
print(f"{len(rows)} answers of {len(instances)}, {paths} legal paths, {optimal_count} at the optimum, {nodes:,} nodes, {bad} bad")
sys.exit(1 if bad or len(rows) != len(instances) else 0)
P
