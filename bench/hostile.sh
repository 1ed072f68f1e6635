#!/usr/bin/env bash
# Hostile workers against the release binaries: for each attack, a fresh coordinator (default
# flags), one honest worker (--threads 1), the attack (coordinator/examples/hostile_worker.rs),
# then three Korf instances (#99, #37, #11: 0.3-0.5 s each with linear conflict on one thread)
# solved through the coordinator (each checked against its known
# optimal length), and each asked again (it must come from the cache, with the same length).
# The coordinator's RSS is sampled every 0.2 s from /proc/PID/status; its log is kept.
#
# A solve with no answer within $SOLVE_TIMEOUT s (default 20) is killed and the row's later
# instances are skipped.
#
# Then (RUN_RACE=1, the default) the racing-requests check, with no attack: 100 times a request with
# timeout_ms 40 on Korf's #88 and an identical one (timeout_ms 200) 40 ms later; the second must
# never end CANCELLED.
#
# Usage: bench/hostile.sh [ATTACK_ROW...]   (default: every row below; `none`: no row)
# COORD_ARGS: extra coordinator flags for every row (e.g. "--audit-fraction 1").
# Output: one line per row on stdout, the details under $OUT (default /tmp/hostile-bench).
set -u
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
OUT=${OUT:-/tmp/hostile-bench}
IDS=${IDS:-"99 37 11"}
SOLVE_TIMEOUT=${SOLVE_TIMEOUT:-20}
SETTLE=${SETTLE:-2}
SKIP_BUILD=${SKIP_BUILD:-0}
mkdir -p "$OUT"

if [ "$SKIP_BUILD" != 1 ]; then
    cargo build --release -p npuzzle-coordinator -p npuzzle-worker -p npuzzle-client --bins --examples \
        >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
COORD=$TARGET/release/npuzzle-coordinator
WORKER=$TARGET/release/npuzzle-worker
CLI=$TARGET/release/npuzzle
HOSTILE=$TARGET/release/examples/hostile_worker
RACER=$TARGET/release/examples/race_requests
EMPTY_PDB=$OUT/no-tables
mkdir -p "$EMPTY_PDB"

# name|hostile_worker arguments (empty: no attack)
ROWS=(
    "baseline|"
    "budget-storm(budget)|--attack budget-storm --variant budget"
    "budget-storm(split)|--attack budget-storm --variant split"
    "budget-storm(split-legal)|--attack budget-storm --variant split-legal"
    "budget-storm(split-dup)|--attack budget-storm --variant split-dup"
    "inflate-bound|--attack inflate-bound"
    "inflate-bound-small|--attack inflate-bound-small"
    "falling-bound|--attack falling-bound"
    "huge-bound|--attack huge-bound"
    # With one slot the attacker loses ties to the honest worker (which joined first): the honest
    # worker gets the whole job, and the attacker the pieces it hands back (units of one bound).
    "inflate-bound/1slot|--attack inflate-bound --slots 1"
    "inflate-bound-small/1slot|--attack inflate-bound-small --slots 1"
    "falling-bound/1slot|--attack falling-bound --slots 1"
    "huge-bound/1slot|--attack huge-bound --slots 1"
    "budget-storm(budget)/1slot|--attack budget-storm --variant budget --slots 1"
    "bounce(failed)/1slot|--attack bounce --variant failed --slots 1"
    "slots|--attack slots --count 8"
    "hello-flood|--attack hello-flood --seconds 5"
    "bounce(failed)|--attack bounce --variant failed"
    "bounce(cancelled)|--attack bounce --variant cancelled"
    "bounce(unsupported)|--attack bounce --variant unsupported"
    "bounce(garbage)|--attack bounce --variant garbage"
    "hold|--attack hold"
    "unsupported-storm|--attack unsupported-storm"
    "counters|--attack counters --rate 20000"
    "silent-join|--attack silent-join --count 8"
    "idle-tcp|--attack idle-tcp --count 8"
)
if [ $# -gt 0 ]; then
    SELECTED=()
    for want in "$@"; do
        for row in "${ROWS[@]}"; do
            [ "${row%%|*}" = "$want" ] && SELECTED+=("$row")
        done
    done
    ROWS=("${SELECTED[@]}")
fi

now() { date +%s.%N; }

port=50700
for row in "${ROWS[@]}"; do
    name=${row%%|*}
    attack_args=${row#*|}
    port=$((port + 1))
    url=http://127.0.0.1:$port
    dir=$OUT/$(echo "$name" | tr '()/' '___')
    rm -rf "$dir"
    mkdir -p "$dir"

    "$COORD" --listen 127.0.0.1:$port ${COORD_ARGS:-} >"$dir/coordinator.log" 2>&1 &
    cpid=$!
    (
        while [ -e /proc/$cpid/status ]; do
            awk '/VmRSS/ {print $2}' /proc/$cpid/status 2>/dev/null
            sleep 0.2
        done
    ) >"$dir/rss.kb" &
    spid=$!
    sleep 0.5
    "$WORKER" --coordinator "$url" --threads 1 --name honest --pdb-dir "$EMPTY_PDB" \
        >"$dir/worker.log" 2>&1 &
    wpid=$!
    sleep 1
    apid=
    if [ -n "$attack_args" ]; then
        # shellcheck disable=SC2086
        "$HOSTILE" --coordinator "$url" $attack_args >"$dir/attack.log" 2>&1 &
        apid=$!
    fi
    sleep "$SETTLE"

    times=()
    optimal=yes
    cached_ok=yes
    stalled=
    for id in $IDS; do
        if [ -n "$stalled" ]; then
            times+=("#$id:skipped")
            continue
        fi
        line=$(grep -E "^$id " data/korf100.txt)
        want=$(echo "$line" | awk '{print $2}')
        tiles=$(echo "$line" | cut -d' ' -f3-)
        t0=$(now)
        first=$(timeout "$SOLVE_TIMEOUT" "$CLI" solve "$tiles" --goal blank-first --coordinator "$url" --json 2>>"$dir/client.err")
        t1=$(now)
        second=$(timeout 10 "$CLI" solve "$tiles" --goal blank-first --coordinator "$url" --json 2>>"$dir/client.err")
        echo "#$id want=$want first=$first" >>"$dir/answers.txt"
        echo "#$id want=$want again=$second" >>"$dir/answers.txt"
        len=$(echo "$first" | jq -r '.length // "none"' 2>/dev/null)
        len2=$(echo "$second" | jq -r '.length // "none"' 2>/dev/null)
        cached=$(echo "$second" | jq -r '.cached // false' 2>/dev/null)
        if [ -z "$first" ]; then
            stalled=yes
            times+=("#$id:none-in-${SOLVE_TIMEOUT}s")
        else
            times+=("#$id:$(echo "$t1 - $t0" | bc | xargs printf '%.2f')")
        fi
        if [ "$len" != "$want" ]; then
            [ "$optimal" = yes ] && optimal=no
            optimal="$optimal #$id:$len/$want"
        fi
        if [ "$len2" != "$want" ] || [ "$cached" != true ]; then
            [ "$cached_ok" = yes ] && cached_ok=no
            cached_ok="$cached_ok #$id:$len2,cached=$cached"
        fi
    done
    stats=$(timeout 10 "$CLI" stats --coordinator "$url" --json 2>/dev/null | jq -c '{workers,slots,running_jobs,queue_depth,late_nodes}' 2>/dev/null)

    # Attacks that end by themselves (silent-join, idle-tcp, hello-flood) get up to 15 s more.
    if [ -n "$apid" ]; then
        for _ in $(seq 1 75); do
            kill -0 "$apid" 2>/dev/null || break
            case "$name" in silent-join|idle-tcp|hello-flood) sleep 0.2 ;; *) break ;; esac
        done
        kill "$apid" 2>/dev/null
        wait "$apid" 2>/dev/null
    fi
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$cpid/status 2>/dev/null)
    # The coordinator's CPU time (user + system), in seconds.
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' /proc/$cpid/stat 2>/dev/null)
    peak=$(sort -n "$dir/rss.kb" | tail -1)
    kill "$wpid" 2>/dev/null
    kill "$cpid" 2>/dev/null
    wait "$wpid" "$cpid" 2>/dev/null
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    logbytes=$(wc -c <"$dir/coordinator.log")
    saw=$( [ -n "$apid" ] && grep '^final' "$dir/attack.log" | cut -c1-400 || echo -)
    printf '%s | peak RSS %.1f MB (VmHWM %.1f MB) | %s | optimal=%s | cached=%s | log %s B | coordinator CPU %s s | stats %s | attacker: %s\n' \
        "$name" "$(echo "${peak:-0} / 1024" | bc -l)" "$(echo "${hwm:-0} / 1024" | bc -l)" \
        "${times[*]}" "$optimal" "$cached_ok" "$logbytes" "$cpu" "$stats" "$saw"
done

if [ "${RUN_RACE:-1}" = 1 ]; then
    port=$((port + 1))
    url=http://127.0.0.1:$port
    dir=$OUT/race
    rm -rf "$dir"
    mkdir -p "$dir"
    "$COORD" --listen 127.0.0.1:$port ${COORD_ARGS:-} >"$dir/coordinator.log" 2>&1 &
    cpid=$!
    sleep 0.5
    "$WORKER" --coordinator "$url" --threads 1 --name honest --pdb-dir "$EMPTY_PDB" \
        >"$dir/worker.log" 2>&1 &
    wpid=$!
    sleep 1
    timeout 300 "$RACER" --coordinator "$url" --rounds 100 --first-ms 40 --gap-ms 40 --second-ms 200 \
        >"$dir/race.log" 2>&1
    kill "$wpid" "$cpid" 2>/dev/null
    wait "$wpid" "$cpid" 2>/dev/null
    echo "race (100 rounds) | $(tr '\n' ' ' <"$dir/race.log")"
fi
