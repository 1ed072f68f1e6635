#!/usr/bin/env bash
# Interactive latency under load (issue 52): one coordinator, one worker with 2 threads; client B
# solves one easy 15-puzzle a second (`npuzzle solve`, a process each, as a user would), first
# with nothing else running, then while a detached 24-puzzle searches (Korf & Felner #47 with
# linear conflict: it runs until cancelled). Prints B's latency percentiles for each, for
# --preempt-slice-ms 100 (the default: a new search gets a thread at once) and 0 (it waits for a
# thread to free), run alternately.
#
# With PDB_DIR (the 5x5 tables, `npuzzle pdb build --size 5x5`), it then times a long search
# itself (Korf & Felner #25 with the tables, through the cluster) alone and while B runs, rows
# alternating: what B's thread costs it.
#
#   bench/interactive_load.sh                 # release build; N=30 requests per row
#   PROFILE=dev N=10 bench/interactive_load.sh
#   PDB_DIR=~/.cache/npuzzle/pdb bench/interactive_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-30}
PROFILE=${PROFILE:-release}
PORT=${PORT:-50731}
if [[ "$PROFILE" == dev ]]; then
  cargo build -q -p npuzzle-coordinator -p npuzzle-worker -p npuzzle-client
  BIN=${CARGO_TARGET_DIR:-target}/debug
else
  cargo build -q --release -p npuzzle-coordinator -p npuzzle-worker -p npuzzle-client
  BIN=${CARGO_TARGET_DIR:-target}/release
fi
URL=http://127.0.0.1:$PORT
LONG=$(awk '$1 == 47 { $1 = ""; $2 = ""; print }' data/korf24_50.txt)
lscpu | grep -E 'Model name|L3' | sed 's/  */ /g'

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# B's boards: easy random 15-puzzles, the same for every row.
mapfile -t BOARDS < <("$BIN/npuzzle" gen --size 4x4 --count "$N" --seed 52 --walk 60)

percentiles() {
  sort -n | awk '{ v[NR] = $1 } END {
    p50 = v[int((NR - 1) * 0.5) + 1]; p90 = v[int((NR - 1) * 0.9) + 1]
    printf "p50 %6.1f ms  p90 %6.1f ms  max %6.1f ms  (%d requests)\n", p50, p90, v[NR], NR }'
}

# B's requests, one a second; prints each latency in milliseconds.
client_b() {
  for board in "${BOARDS[@]}"; do
    local t0 t1
    t0=$(date +%s%N)
    "$BIN/npuzzle" solve "$board" --coordinator "$URL" > /dev/null
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" | awk '{ printf "%.1f\n", $1 / 1000 }'
    sleep 1
  done
}

start_cluster() {
  local slice=$1
  "$BIN/npuzzle-coordinator" --listen "127.0.0.1:$PORT" --preempt-slice-ms "$slice" \
    --log-format json 2> /dev/null &
  coordinator=$!
  pids+=("$coordinator")
  sleep 0.5
  "$BIN/npuzzle-worker" --coordinator "$URL" --threads 2 ${PDB_DIR:+--pdb-dir "$PDB_DIR"} 2> /dev/null &
  worker=$!
  pids+=("$worker")
  sleep 1
}

row() {
  local slice=$1 long=$2
  start_cluster "$slice"
  local id=""
  if [[ "$long" == 1 ]]; then
    id=$("$BIN/npuzzle" submit "$LONG" --goal blank-first --heuristic lc --coordinator "$URL")
    sleep 2
  fi
  printf "preempt %3s ms, %-22s " "$slice" "$([[ $long == 1 ]] && echo 'a 24-puzzle running:' || echo 'nothing else running:')"
  client_b | percentiles
  [[ -n "$id" ]] && "$BIN/npuzzle" cancel "$id" --coordinator "$URL" > /dev/null || true
  kill "$worker" "$coordinator" 2> /dev/null || true
  wait "$worker" "$coordinator" 2> /dev/null || true
}

for slice in 100 0; do row "$slice" 0; done
for slice in 100 0 100 0; do row "$slice" 1; done

[[ -n "${PDB_DIR:-}" ]] || exit 0
# The long search's own time, alone and while B runs (preemption on).
KF25=$(awk '$1 == 25 { $1 = ""; $2 = ""; print }' data/korf24_50.txt)
for round in 1 2; do
  for with_b in 0 1; do
    start_cluster 100
    b=""
    if [[ "$with_b" == 1 ]]; then
      client_b > /dev/null &
      b=$!
    fi
    t0=$(date +%s%N)
    "$BIN/npuzzle" solve "$KF25" --goal blank-first --heuristic pdb --coordinator "$URL" > /dev/null
    t1=$(date +%s%N)
    [[ -n "$b" ]] && kill "$b" 2> /dev/null || true
    printf "round %d, KF #25 through the cluster, %-16s %.2f s\n" "$round" \
      "$([[ $with_b == 1 ]] && echo 'while B runs:' || echo 'alone:')" \
      "$(echo "$(( (t1 - t0) / 1000000 ))" | awk '{ print $1 / 1000 }')"
    kill "$worker" "$coordinator" 2> /dev/null || true
    wait "$worker" "$coordinator" 2> /dev/null || true
  done
done
