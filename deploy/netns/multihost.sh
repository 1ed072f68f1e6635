#!/usr/bin/env bash
# A real multi-host run on one machine: network namespaces stand in for hosts.
#
#   switch   a bridge, one veth port per host
#   coord    10.213.0.1   npuzzle-coordinator
#   w1..w3   10.213.0.11-13  npuzzle-worker (one search thread each)
#   client   10.213.0.100 npuzzle batch / solve / stats
#
# The addresses exist only inside those namespaces (no default route, nothing in the host's
# namespace), so no traffic leaves them. The real release binaries run a batch of 23 of Korf's
# 15-puzzles through the coordinator's address while faults are injected:
#   1. kill -9 of worker host w1's process mid-batch;
#   2. w2's link cut at the switch for 8 s (longer than the 3 s lease), then restored: w2 must
#      join again;
#   3. after the batch, kill -9 of the coordinator: a client gets an error at once, not a hang;
#      the coordinator restarts on the same address, the surviving workers reconnect and serve.
# Every answer is then checked by check_answers.py (replayed, length = known optimum).
#
# usage: deploy/netns/multihost.sh [BIN_DIR]   (default: ${CARGO_TARGET_DIR:-target}/release)
# Needs root and `ip netns`; otherwise it prints SKIP and exits 0. Every namespace and process
# it made is removed on exit, failure included.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:-${CARGO_TARGET_DIR:-$repo/target}/release}

skip() {
    echo "SKIP netns multi-host test: $*"
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
for b in npuzzle-coordinator npuzzle-worker npuzzle; do
    [ -x "$bin/$b" ] || { echo "FAIL: $bin/$b missing: build with cargo build --release" >&2; exit 1; }
done

prefix="npz$$"
sw="$prefix-sw"
hosts=(coord w1 w2 w3 client)
declare -A addr=([coord]=10.213.0.1 [w1]=10.213.0.11 [w2]=10.213.0.12 [w3]=10.213.0.13 [client]=10.213.0.100)
work=$(mktemp -d "${TMPDIR:-/tmp}/npuzzle-netns.XXXXXX")
made=()

cleanup() {
    local status=$?
    for ns in "${made[@]}"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    done
    for ns in "${made[@]}"; do
        ip netns del "$ns" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        for log in "$work"/*.log; do
            [ -f "$log" ] || continue
            echo "--- last lines of $(basename "$log")"
            tail -n 15 "$log"
        done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! ip netns add "$sw" 2>"$work/netns.err"; then
    skip "cannot create a network namespace: $(cat "$work/netns.err")"
fi
made+=("$sw")
ip -n "$sw" link set lo up
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
for h in "${hosts[@]}"; do
    ns="$prefix-$h"
    ip netns add "$ns"
    made+=("$ns")
    ip -n "$sw" link add "p-$h" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p-$h" master br0
    ip -n "$sw" link set "p-$h" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "${addr[$h]}/24" dev eth0
    ip -n "$ns" link set eth0 up
done
# Runs a command on host $1. Background processes are started with `ip netns exec` itself (it
# execs the command), so that `$!` is the binary's PID and `kill -9` reaches the binary.
on() { local h=$1; shift; ip netns exec "$prefix-$h" "$@"; }

url="http://${addr[coord]}:50051"
export RUST_LOG=${RUST_LOG:-info}
start_coordinator() {
    ip netns exec "$prefix-coord" "$bin/npuzzle-coordinator" --listen "${addr[coord]}:50051" --lease-secs 3 \
        --probe-nodes 1000 --units-per-slot 16 >>"$work/coord.log" 2>&1 &
    coord_pid=$!
    disown "$coord_pid" # killed on purpose below: no job-control chatter
}
start_coordinator
declare -A worker_pid
for w in w1 w2 w3; do
    ip netns exec "$prefix-$w" "$bin/npuzzle-worker" --coordinator "$url" --threads 1 --name "$w" \
        >"$work/$w.log" 2>&1 &
    worker_pid[$w]=$!
    disown "${worker_pid[$w]}"
done

workers() {
    on client "$bin/npuzzle" stats --coordinator "$url" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])' 2>/dev/null || echo 0
}
wait_workers() { # COUNT SECONDS WHAT
    local deadline=$((SECONDS + $2))
    until [ "$(workers)" -eq "$1" ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "FAIL: $3: $(workers) workers after $2 s, expected $1" >&2
            exit 1
        fi
        sleep 0.2
    done
}
wait_workers 3 30 "workers joining across the bridge"
echo "hosts up: coordinator ${addr[coord]}, workers w1 w2 w3 joined over the bridge"

# Korf's instances that take 0.3-1.5 s each with linear conflict on one core.
ids="10 11 14 21 22 26 27 33 37 52 54 64 67 70 72 76 80 89 91 92 98 99 100"
: >"$work/instances.txt"
for id in $ids; do
    awk -v id="$id" '$1 == id' "$repo/data/korf100.txt" >>"$work/instances.txt"
done
awk '{ $1 = ""; $2 = ""; sub(/^ +/, ""); print }' "$work/instances.txt" >"$work/boards.txt"
total=$(wc -l <"$work/instances.txt")

answers() { [ -f "$work/answers.jsonl" ] && wc -l <"$work/answers.jsonl" || echo 0; }
wait_answers() { # COUNT
    while [ "$(answers)" -lt "$1" ]; do
        kill -0 "$batch_pid" 2>/dev/null || return 0
        sleep 0.1
    done
}

started=$SECONDS
ip netns exec "$prefix-client" "$bin/npuzzle" batch "$work/boards.txt" --coordinator "$url" --goal blank-first \
    --heuristic lc --output jsonl --out "$work/answers.jsonl" >"$work/batch.log" 2>&1 &
batch_pid=$!

wait_answers 4
kill -9 "${worker_pid[w1]}"
echo "fault 1: killed worker w1 (kill -9) after $(answers)/$total answers"

wait_answers 9
ip -n "$sw" link set p-w2 down
echo "fault 2: cut w2's link after $(answers)/$total answers"
sleep 8
ip -n "$sw" link set p-w2 up
echo "         restored w2's link after 8 s ($(answers)/$total answers)"

if ! wait "$batch_pid"; then
    echo "FAIL: npuzzle batch exited non-zero" >&2
    exit 1
fi
batch_secs=$((SECONDS - started))
python3 "$here/check_answers.py" "$work/instances.txt" "$work/answers.jsonl"
wait_workers 2 60 "w2 rejoining after its link came back"
echo "batch: $total boards in ${batch_secs} s through faults 1-2; w2 rejoined"

requeued=$(grep -o 'requeued=[0-9]*' "$work/coord.log" | awk -F= '{ s += $2 } END { print s + 0 }')
expired=$(grep -c 'lease expired' "$work/coord.log" || true)
echo "         units requeued: $requeued; leases expired: $expired"
kill -9 "$coord_pid"
while kill -0 "$coord_pid" 2>/dev/null; do sleep 0.05; done
asked=$SECONDS
board=$(sed -n 1p "$work/boards.txt")
if on client timeout 30 "$bin/npuzzle" solve "$board" --coordinator "$url" --goal blank-first \
    >"$work/down.out" 2>"$work/down.err"; then
    echo "FAIL: a solve succeeded with the coordinator down" >&2
    exit 1
else
    status=$?
fi
if [ "$status" -eq 124 ]; then
    echo "FAIL: a solve hung for 30 s with the coordinator down" >&2
    exit 1
fi
echo "fault 3: coordinator killed (kill -9): a client failed in $((SECONDS - asked)) s: $(head -c 200 "$work/down.err")"

start_coordinator
wait_workers 2 60 "workers reconnecting to the restarted coordinator"
echo "         coordinator restarted: w2 and w3 reconnected"
optimal=$(sed -n 1p "$work/instances.txt" | awk '{print $2}')
on client "$bin/npuzzle" solve "$board" --coordinator "$url" --goal blank-first --json \
    >"$work/after.json"
python3 - "$work/after.json" "$optimal" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "solved" and r["length"] == int(sys.argv[2]), r
print(f"         solved again after the restart: {r['length']} moves (optimal)")
EOF
echo "PASS netns multi-host test: 3 faults injected and survived, 0 answers lost or wrong"
