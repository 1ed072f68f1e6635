#!/usr/bin/env bash
# The scheduler's own speed at 1,024 slots (issue 23: 300 k events a second, its time inside the
# makespan), builds compared side by side: `npuzzle simulate` runs the real scheduler, and its
# column `sched_ev/s` is the events it handled over the real seconds it spent on them. Each run
# lasts some 40-90 ms, so one run is noise on a shared host: the builds alternate, ROUNDS times
# on each trace, and the medians are printed. With valgrind installed, CALLGRIND=1 adds the
# instructions the scheduler's `on_result` took (deterministic, the figure to compare builds by).
# WARM=N simulates each trace N more times in the same process first and keeps the last run: the
# scheduler in a process whose heap has already grown (a long-running coordinator's case), where
# a fresh process pays the system for every page its first job touches.
#
#   bench/scheduler_speed.sh BIN...    (default: target/release/npuzzle)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-8}
SLOTS=${SLOTS:-1024}
WARM=${WARM:-0}
slot_list=$SLOTS
for _ in $(seq "$WARM"); do slot_list="$slot_list,$SLOTS"; done
TRACES=${TRACES:-"korf24-29 korf24-36"}
if [[ $# -eq 0 ]]; then
  cargo build --release -p npuzzle-client
  set -- target/release/npuzzle
fi
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')"
echo "# rounds $ROUNDS, slots $SLOTS, warm-up runs $WARM"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for _ in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    for t in $TRACES; do
      # The last line is the table's row: column 12 is sched_ev/s, 11 sched_s, 2 the makespan.
      row=$("$bin" simulate "data/traces/$t.trace" --slots "$slot_list" | tail -1)
      echo "$bin $t $(echo "$row" | awk '{print $12, $11, $2}')" >> "$runs"
    done
  done
done
echo "# build trace: events/s of each run (sorted); median; sched_s and makespan of the median run"
for bin in "$@"; do
  for t in $TRACES; do
    grep "^$bin $t " "$runs" | sort -k3 -n | awk -v b="$bin" -v t="$t" '
      { ev[NR] = $3; s[NR] = $4; m[NR] = $5 }
      END {
        line = ""; for (i = 1; i <= NR; i++) line = line " " ev[i]
        mid = int((NR + 1) / 2)
        median = (NR % 2) ? ev[mid] : (ev[mid] + ev[mid + 1]) / 2
        printf "%s %s:%s; median %d; sched_s %s of makespan %s (run %d of %d)\n", b, t, line, median, s[mid], m[mid], mid, NR
      }'
  done
done
if [[ $# -gt 1 ]]; then
  # The host's speed drifts within a sitting (by 1.3-2 times here within minutes), and medians
  # taken apart carry the drift: each round's runs of two builds, back to back, make a pair, and
  # the median of the pairs' ratios is the figure to compare builds by.
  echo "# paired: each build's events/s over the first build's in the same round; median (quartiles)"
  for bin in "${@:2}"; do
    for t in $TRACES; do
      paste <(grep "^$1 $t " "$runs" | awk '{print $3}') <(grep "^$bin $t " "$runs" | awk '{print $3}') |
        awk '{print $2 / $1}' | sort -n | awk -v b="$bin" -v a="$1" -v t="$t" '
          { r[NR] = $1 }
          END {
            mid = int((NR + 1) / 2); lo = int((NR + 3) / 4); hi = int((3 * NR + 3) / 4)
            median = (NR % 2) ? r[mid] : (r[mid] + r[mid + 1]) / 2
            printf "%s / %s %s: %.3f (%.3f-%.3f) over %d rounds\n", b, a, t, median, r[lo], r[hi], NR
          }'
    done
  done
fi
if [[ "${CALLGRIND:-0}" == 1 ]]; then
  echo "# instructions in Scheduler::on_result (callgrind)"
  for bin in "$@"; do
    for t in $TRACES; do
      out=$(mktemp)
      valgrind --tool=callgrind --callgrind-out-file="$out" \
        --toggle-collect='npuzzle_coordinator::scheduler::*Scheduler*::on_result' \
        "$bin" simulate "data/traces/$t.trace" --slots "$SLOTS" > /dev/null 2>&1
      echo "$bin $t: $(callgrind_annotate "$out" 2>/dev/null | sed -n 's/ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p')"
      rm -f "$out"
    done
  done
fi
