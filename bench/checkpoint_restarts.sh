#!/usr/bin/env bash
# A detached job through real processes, its coordinator killed with SIGKILL at the given
# seconds after submission and restarted on the same port and store each time; then the same
# job uninterrupted on a fresh store. Prints each run's answer (`npuzzle wait --json`: length,
# nodes, resumed), its wall time, and the worker's CPU seconds (all the search work done,
# including what each kill threw away).
#
#   bench/checkpoint_restarts.sh PDB_DIR "TILES" "KILL_AT..." [CHECKPOINT_SECS]
#   bench/checkpoint_restarts.sh /tmp/pdb "$(awk '$1==1 {$1=$2=""; print}' data/korf24_50.txt)" "20 45"
#
# COORDINATOR_FLAGS adds flags to the coordinator (e.g. `--audit-fraction 0`). Needs release
# binaries (cargo build --release --bins) and, for a 24-puzzle, the 5x5 tables
# in PDB_DIR (npuzzle pdb build --size 5x5 --pdb-dir PDB_DIR).
set -euo pipefail
pdb_dir=$1
tiles=$2
kill_at=$3
checkpoint_secs=${4:-30}
bin=${BIN:-target/release}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
tick=$(getconf CLK_TCK)

start_coordinator() {
    RUST_LOG=info,npuzzle_coordinator::durable=debug NO_COLOR=1 \
        "$bin/npuzzle-coordinator" --listen "127.0.0.1:$port" --cache-dir "$1" \
        --checkpoint-secs "$checkpoint_secs" ${COORDINATOR_FLAGS:-} >>"$work/coordinator.log" 2>&1 &
    coordinator=$!
}

cpu_seconds() {
    awk -v t="$tick" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$1/stat"
}

run() {
    local name=$1 kills=$2 store=$work/store-$1
    start_coordinator "$store"
    "$bin/npuzzle-worker" --coordinator "$url" --threads 2 --pdb-dir "$pdb_dir" \
        >>"$work/worker-$name.log" 2>&1 &
    local worker=$!
    # The worker joins once its tables are loaded: a PDB job needs it there.
    for _ in $(seq 100); do
        grep -q joined "$work/worker-$name.log" && break
        sleep 0.2
    done
    local started id
    started=$(date +%s.%N)
    id=$("$bin/npuzzle" submit "$tiles" --goal blank-first --coordinator "$url")
    for at in $kills; do
        local now
        now=$(date +%s.%N)
        sleep "$(python3 -c "print(max(0.0, $started + $at - $now))")"
        kill -9 "$coordinator"
        wait "$coordinator" 2>/dev/null || true
        echo "$name: killed the coordinator at ${at}s" >&2
        start_coordinator "$store"
    done
    local answer
    answer=$("$bin/npuzzle" wait "$id" --json --coordinator "$url")
    local wall
    wall=$(python3 -c "import time; print(f'{time.time() - $started:.1f}')")
    echo "$name: wall ${wall}s, worker cpu $(cpu_seconds "$worker")s, answer $answer"
    # What checkpoints cost the coordinator (taken from the scheduler and encoded): their
    # count, bytes and time, against the wall time.
    grep ' checkpoint' "$work/coordinator.log" | grep -o 'micros=[0-9]*' |
        awk -v w="$wall" -v n="$name" -F= '{ s += $2; c++ } END {
            printf "%s: %d checkpoints, %.1f ms in all, %.4f%% of the wall time\n", n, c, s / 1e3, 100 * s / 1e6 / w }'
    mv "$work/coordinator.log" "$work/coordinator.log.$name"
    kill "$worker" "$coordinator" 2>/dev/null || true
    wait "$worker" "$coordinator" 2>/dev/null || true
}

run interrupted "$kill_at"
run uninterrupted ""
grep -hE "resuming|refused" "$work"/coordinator.log.* | cut -c1-300 >&2 || true
