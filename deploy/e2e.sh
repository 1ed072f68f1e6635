#!/usr/bin/env bash
# The deployment files, run for real on one Debian machine, as root, with no container registry:
#
#   image    deploy/image/base.sh makes the base from Debian's archive; deploy/Dockerfile builds
#            on it with --pull=never, the release binaries of BIN_DIR copied in (nothing compiled)
#   run      a coordinator and 2 worker containers on a podman network: health 1 -> 0 once a
#            worker joined, 4x4 and 5x5 boards solved through the published port with units on
#            both workers, a worker killed mid-job and the answer still optimal, SIGINT stop, exit 0
#   compose  deploy/compose.yaml through podman-compose (PyPI, pinned) with --scale worker=2
#   systemd  deploy/systemd's units booted in systemd-nspawn: solving, `systemd-analyze security`
#            no worse than 1.1 (coordinator) and 1.2 (worker), a clean stop
#   k8s      deploy/k8s rendered (kubectl kustomize) and validated offline (kubernetes-validate,
#            pinned, --strict, Kubernetes 1.30), then `podman kube play` as far as it goes
#
# usage: deploy/e2e.sh [BIN_DIR]   (default: ${CARGO_TARGET_DIR:-target}/release)
#        E2E_PARTS="image run" deploy/e2e.sh   (only those parts; all need the image part but k8s)
#        E2E_LOGS=DIR deploy/e2e.sh            (keeps every log there)
#
# It installs what it needs (Debian: podman, runc, netavark, iptables, catatonit, debootstrap, systemd-container; PyPI
# in a virtual environment: podman-compose, kubernetes-validate). A part the machine cannot run
# (not root, a package or the Debian mirror out of reach, containers refused by the kernel)
# prints SKIP with the reason; a part where npuzzle misbehaves prints FAIL. It ends with
# `N passed, N failed, N skipped` and exits 1 on any failure. Everything it makes (containers,
# images, networks, volumes: in a podman storage of its own; the nspawn tree; temp files) lives
# under one temp directory, removed on exit, failure and Ctrl-C included.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
bin=$(cd "${1:-$target/release}" 2>/dev/null && pwd) || bin=${1:-$target/release}
# Pinned: what was checked (deploy/README.md). Debian's podman-compose 1.0.3 cannot run
# compose.yaml (it ignores name:, profiles: and healthcheck: disable, and cannot scale).
podman_compose_pin=podman-compose==1.6.0
kubernetes_validate_pin=kubernetes-validate==1.37.0
k8s_version=1.30.0
# The scores `systemd-analyze security` gave the units when they were written (lower is better).
max_exposure_coordinator=1.1
max_exposure_worker=1.2

passed=0 failed=0 skipped=0
summary() {
    echo "$passed passed, $failed failed, $skipped skipped"
}

for b in npuzzle-coordinator npuzzle-worker npuzzle; do
    if [ ! -x "$bin/$b" ]; then
        echo "FAIL e2e: $bin/$b missing: build with cargo build --release first" >&2
        exit 1
    fi
done

# E2E_PARTS="image run" runs only those (the later parts need the image part).
read -r -a parts <<<"${E2E_PARTS:-image run compose systemd k8s}"
skip_all() { # REASON
    for p in "${parts[@]}"; do
        echo "SKIP $p: $1"
        skipped=$((skipped + 1))
    done
    summary
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip_all "not root (podman, debootstrap and systemd-nspawn need root here)"
command -v apt-get >/dev/null || skip_all "not Debian (no apt-get)"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/npuzzle-e2e.XXXXXX")
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

# ---- cleanup: only what this script made -----------------------------------------------------
have_podman=0
# netavark keeps root's network state (IPAM, aardvark-dns) in /run/containers/networks whatever
# the settings below: removed on exit if this run made it.
[ -e /run/containers/networks ] && made_netavark_dir=0 || made_netavark_dir=1
# and podman's blob cache for root in /var/lib/containers/cache (the same).
[ -e /var/lib/containers ] && made_containers_dir=0 || made_containers_dir=1
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -f "$work/nspawn.pid" ]; then
        local pid
        pid=$(cat "$work/nspawn.pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null
        fi
    fi
    if [ "$have_podman" = 1 ]; then
        # The storage, network and runtime directories are this script's own (see below):
        # `-a` reaches nothing else.
        timeout 120 podman pod rm -af -t 5 >/dev/null 2>&1
        timeout 120 podman rm -af -t 5 >/dev/null 2>&1
        timeout 60 podman volume rm -af >/dev/null 2>&1
        for n in $(podman network ls --format '{{.Name}}' 2>/dev/null); do
            [ "$n" = podman ] || timeout 30 podman network rm -f "$n" >/dev/null 2>&1
        done
        timeout 120 podman rmi -af >/dev/null 2>&1
    fi
    if [ "$made_netavark_dir" = 1 ]; then
        rm -rf /run/containers/networks
        rmdir /run/containers 2>/dev/null
    fi
    [ "$made_containers_dir" = 0 ] || rm -rf /var/lib/containers
    # Anything still mounted under the work directory (overlay layers, nspawn's tree).
    grep -o " $work[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null
    done
    if [ -n "${E2E_LOGS:-}" ]; then
        mkdir -p "$E2E_LOGS" && cp -r "$work/log/." "$E2E_LOGS/" 2>/dev/null
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- helpers ---------------------------------------------------------------------------------
# Runs part NAME (function part_NAME) in a subshell with `set -e`: exit 0 PASS, 3 SKIP (the
# reason in $work/why), anything else FAIL (the last lines of its logs shown).
part() {
    local name=$1 rc
    : >"$work/why"
    echo "---- $name"
    local started=$SECONDS
    (set -e; "part_$name")
    rc=$?
    local took=$((SECONDS - started))
    case $rc in
    0) echo "PASS $name: $(cat "$work/why") (${took} s)"; passed=$((passed + 1)) ;;
    3) echo "SKIP $name: $(cat "$work/why")"; skipped=$((skipped + 1)) ;;
    *)
        echo "FAIL $name: $(cat "$work/why") (exit $rc after ${took} s)"
        failed=$((failed + 1))
        for log in "$work"/log/"$name"-*; do
            [ -f "$log" ] || continue
            echo "--- last lines of $(basename "$log")"
            tail -n 20 "$log"
        done
        ;;
    esac
}
mkdir -p "$work/log"
skip() { echo "$*" >"$work/why"; exit 3; }
fail() { echo "$*" >"$work/why"; exit 1; }
ok() { echo "$*" >"$work/why"; }
say() { echo "  $*"; }

# Polls `CMD...` every 0.5 s until it succeeds, for at most SECONDS; 1 if it never did.
wait_for() { # SECONDS CMD...
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep "${WAIT_STEP:-0.5}"
    done
}
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port_free() { # PORT
    python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1])))' "$1" 2>/dev/null
}
# The coordinator at URL: its worker count (0 if it does not answer).
workers_at() { # URL [netns-prefix...]
    local url=$1
    shift
    "$@" "$bin/npuzzle" stats --coordinator "$url" --json 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"])' 2>/dev/null || echo 0
}
workers_are() { [ "$(workers_at "$2")" -eq "$1" ]; } # COUNT URL
# The sum of a Prometheus counter (every label set) at a metrics URL; 0 when absent.
metric() { # URL NAME [LABEL_FILTER]
    python3 - "$@" <<'EOF'
import sys, urllib.request
url, name = sys.argv[1], sys.argv[2]
want = sys.argv[3] if len(sys.argv) > 3 else ""
text = urllib.request.urlopen(url, timeout=10).read().decode()
total = 0.0
for line in text.splitlines():
    if line.startswith(name) and (line[len(name)] in " {") and want in line:
        total += float(line.rsplit(" ", 1)[1])
print(int(total))
EOF
}
# Korf's 15-puzzle instances by id (`id optimal tiles...`), and a batch file of their boards.
korf() { for id in "$@"; do awk -v id="$id" '$1 == id' "$repo/data/korf100.txt"; done; }
boards_of() { awk '{ $1 = ""; $2 = ""; sub(/^ +/, ""); print }' "$1"; }
# A 5x5 board (70 random moves from the blank-first goal, seed 25), 58 moves at best (IDA* with
# linear conflict, serial: 12.9 M nodes).
five_by_five="5x5 58 11 12 6 2 3 1 21 7 10 4 9 5 18 13 8 20 15 22 19 14 17 16 0 23 24"
# Solves INSTANCES (check_answers.py's format) through URL and checks every answer without
# npuzzle's code: replayed to the goal, length equal to the known optimum.
solve_checked() { # NAME INSTANCES URL [netns-prefix...]
    local name=$1 instances=$2 url=$3
    shift 3
    boards_of "$instances" >"$work/$name.boards"
    rm -f "$work/$name.jsonl"
    "$@" timeout 300 "$bin/npuzzle" batch "$work/$name.boards" --coordinator "$url" --goal blank-first \
        --heuristic lc --output jsonl --out "$work/$name.jsonl" >"$work/log/$name.batch" 2>&1 ||
        fail "npuzzle batch through $url failed: $(tail -n 2 "$work/log/$name.batch")"
    python3 "$here/netns/check_answers.py" "$instances" "$work/$name.jsonl" >"$work/$name.check" 2>&1 ||
        fail "wrong answers: $(tail -n 3 "$work/$name.check")"
    sed 's/^/  /' "$work/$name.check"
}

# ---- what the machine must provide -----------------------------------------------------------
echo "e2e: binaries from $bin, work directory $work"
need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/podman/netavark ] || need+=(netavark aardvark-dns)
# netavark sets up container networks with iptables: without it every network fails.
command -v iptables >/dev/null || need+=(iptables)
# podman kube play's pods need an init for their infra container.
command -v catatonit >/dev/null || [ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
apt_failed=""
if [ ${#need[@]} -gt 0 ]; then
    echo "e2e: apt-get install ${need[*]}"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${need[@]}"; } >"$work/log/apt" 2>&1; then
        apt_failed="apt-get install ${need[*]} failed: $(tail -n 1 "$work/log/apt")"
    fi
fi
# PyPI tools in a virtual environment kept beside the build (reused by later runs).
venv=$target/e2e-venv
pip_failed=""
if ! "$venv/bin/python" -m pip show -q podman-compose kubernetes-validate >/dev/null 2>&1 ||
    ! "$venv/bin/podman-compose" version 2>/dev/null | grep -q "${podman_compose_pin#*==}"; then
    echo "e2e: pip install $podman_compose_pin $kubernetes_validate_pin (in $venv)"
    if ! { python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "$podman_compose_pin" "$kubernetes_validate_pin"; } >"$work/log/pip" 2>&1; then
        pip_failed="pip install $podman_compose_pin $kubernetes_validate_pin failed: $(tail -n 1 "$work/log/pip")"
    fi
fi

# podman with a storage, network and runtime directory of this script's own: nothing it makes
# outlives the run or touches the machine's own containers. runc: crun refuses this kind of
# machine's hybrid cgroup layout; the ulimits: root here cannot raise RLIMIT_NOFILE/NPROC to
# podman's defaults.
cat >"$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$work/libpod"
[network]
network_config_dir = "$work/networks"
EOF
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
mkdir -p "$work/networks" "$work/libpod"
export CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf
podman_failed=""
if [ -n "$apt_failed" ] && ! command -v podman >/dev/null; then
    podman_failed=$apt_failed
elif ! podman info >"$work/log/podman-info" 2>&1; then
    podman_failed="podman cannot run here: $(tail -n 1 "$work/log/podman-info")"
else
    have_podman=1
    # Storage and network settings took: refuse to go on against the machine's own storage.
    if [ "$(podman info --format '{{.Store.GraphRoot}}')" != "$work/storage" ]; then
        echo "FAIL e2e: podman ignored CONTAINERS_STORAGE_CONF" >&2
        have_podman=0
        exit 1
    fi
fi

image=localhost/npuzzle:latest
base=localhost/npuzzle-e2e-base:bookworm
tree=$work/tree

# ---- image -----------------------------------------------------------------------------------
part_image() {
    [ -z "$podman_failed" ] || skip "$podman_failed"
    say "base image from Debian's archive (deploy/image/base.sh)"
    set +e
    "$here/image/base.sh" --keep-tree "$tree" "$base" >"$work/log/image-base" 2>&1
    local rc=$?
    set -e
    if [ "$rc" -eq 3 ]; then
        skip "debootstrap could not fetch Debian: $(grep -m1 -E 'E:|W:|Failure' "$work/log/image-base" || tail -n 1 "$work/log/image-base")"
    fi
    [ "$rc" -eq 0 ] || fail "deploy/image/base.sh failed"
    if ! timeout 60 podman run --rm --network none "$base" true >"$work/log/image-run" 2>&1; then
        skip "containers cannot run here: $(tail -n 1 "$work/log/image-run")"
    fi
    # The release binaries as an image holding /out: the Dockerfile's BINARIES stage.
    mkdir -p "$work/bins/out"
    cp "$bin/npuzzle-coordinator" "$bin/npuzzle-worker" "$bin/npuzzle" "$work/bins/out/"
    tar -C "$work/bins" -c out | podman import --quiet - localhost/npuzzle-e2e-bins:latest >/dev/null
    say "podman build --pull=never --format docker -f deploy/Dockerfile"
    timeout 600 podman build --pull=never --format docker -f "$repo/deploy/Dockerfile" \
        --build-arg RUNTIME_IMAGE="$base" --build-arg BINARIES=localhost/npuzzle-e2e-bins:latest \
        -t "$image" "$repo" >"$work/log/image-build" 2>&1 || fail "podman build failed"
    local health user stop
    health=$(podman image inspect --format '{{.HealthCheck}}' "$image" 2>/dev/null || true)
    [ -n "$health" ] && [ "$health" != "<nil>" ] || health=$(podman image inspect --format '{{.Config.Healthcheck}}' "$image")
    user=$(podman image inspect --format '{{.Config.User}}' "$image")
    stop=$(podman image inspect --format '{{.Config.StopSignal}}' "$image")
    case "$health" in *"npuzzle health"* | *npuzzle*health*) ;; *) fail "the image has no HEALTHCHECK: $health" ;; esac
    [ "$user" = 10001:10001 ] || fail "the image runs as '$user', not 10001:10001"
    [ "$stop" = SIGINT ] || fail "the image's stop signal is '$stop', not SIGINT"
    local out
    out=$(timeout 60 podman run --rm --network none "$image" npuzzle solve "8 6 7 2 5 4 3 0 1" --serial --json)
    echo "$out" | grep -q '"length":31' || fail "the image's npuzzle solve said: $out"
    ok "$(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }') image on a $(podman image inspect --format '{{.Size}}' "$base" | awk '{ printf "%.0f MB", $1 / 1e6 }') base from Debian's archive, offline build, HEALTHCHECK kept, user 10001, SIGINT"
}

declare -A stop_ms
container_exited() { [ "$(podman inspect --format '{{.State.Status}}' "$1" 2>/dev/null)" = exited ]; }
have_image() { podman image exists "$image" 2>/dev/null; }

# ---- run: a coordinator and two workers ------------------------------------------------------
part_run() {
    have_image || skip "no image (see the image part)"
    local net=npuzzle-e2e cport hport mport
    cport=$(free_port) hport=$(free_port) mport=$(free_port)
    podman network create "$net" >/dev/null
    # Probes of 1000 nodes: every board here goes to the workers.
    podman run -d --name e2e-coordinator --network "$net" \
        -p "127.0.0.1:$cport:50051" -p "127.0.0.1:$hport:8080" -p "127.0.0.1:$mport:9090" \
        -e NPUZZLE_PROBE_NODES=1000 -e NPUZZLE_UNITS_PER_SLOT=16 -e NPUZZLE_LEASE_SECS=3 \
        -e NPUZZLE_HTTP_LISTEN=0.0.0.0:8080 -e NPUZZLE_METRICS_LISTEN=0.0.0.0:9090 \
        "$image" >/dev/null 2>>"$work/log/run-podman"
    local url=http://127.0.0.1:$cport
    wait_for 60 "$bin/npuzzle" stats --coordinator "$url" || fail "the coordinator did not answer on $url within 60 s"
    local before=0
    podman healthcheck run e2e-coordinator >"$work/log/run-health" 2>&1 || before=$?
    [ "$before" -ne 0 ] || fail "healthy with no worker connected"
    for w in w1 w2; do
        podman run -d --name "e2e-$w" --network "$net" --no-healthcheck \
            -e NPUZZLE_COORDINATOR=http://e2e-coordinator:50051 -e NPUZZLE_WORKER_NAME="$w" \
            -e NPUZZLE_THREADS=1 -e NPUZZLE_METRICS_LISTEN=0.0.0.0:9090 "$image" npuzzle-worker \
            >/dev/null 2>>"$work/log/run-podman"
    done
    wait_for 60 workers_are 2 "$url" || fail "$(workers_at "$url") workers joined within 60 s, expected 2"
    wait_for 60 podman healthcheck run e2e-coordinator || fail "not healthy within 60 s of 2 workers joining"
    say "health $before -> 0 once the workers joined"
    # 4x4 (Korf's) and 5x5 boards through the published port.
    korf 10 11 14 21 22 >"$work/run-boards.txt"
    solve_checked run-4x4 "$work/run-boards.txt" "$url"
    echo "$five_by_five" >"$work/run-5x5.txt"
    solve_checked run-5x5 "$work/run-5x5.txt" "$url"
    local ip units=()
    for w in w1 w2; do
        ip=$(podman inspect --format "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "e2e-$w")
        units+=("$(metric "http://$ip:9090/metrics" npuzzle_worker_units_total)")
    done
    say "units searched: w1 ${units[0]}, w2 ${units[1]}; assigned by the coordinator: $(metric "http://127.0.0.1:$mport/metrics" npuzzle_coordinator_units_assigned_total)"
    [ "${units[0]}" -gt 0 ] && [ "${units[1]}" -gt 0 ] || fail "a worker searched no unit: w1 ${units[0]}, w2 ${units[1]}"
    # A worker killed while it holds a unit of a running job: the answer stays optimal.
    korf 88 >"$work/run-kill.txt"
    local requeued_before
    requeued_before=$(metric "http://127.0.0.1:$mport/metrics" npuzzle_coordinator_units_requeued_total)
    ( (solve_checked run-kill "$work/run-kill.txt" "$url") >"$work/run-kill.out" 2>&1
        echo $? >"$work/run-kill.rc") &
    local batch=$!
    w2_busy() {
        python3 - "http://127.0.0.1:$hport/api/v1/workers" <<'EOF'
import json, sys, urllib.request
workers = json.load(urllib.request.urlopen(sys.argv[1], timeout=5))
workers = workers.get("workers", workers) if isinstance(workers, dict) else workers
sys.exit(0 if any(w["name"] == "w2" and w["busy_slots"] > 0 for w in workers) else 1)
EOF
    }
    local deadline=$((SECONDS + 120))
    until w2_busy 2>/dev/null; do
        kill -0 "$batch" 2>/dev/null || fail "the job ended before w2 got a unit"
        [ "$SECONDS" -lt "$deadline" ] || fail "w2 got no unit of the job within 120 s"
        sleep 0.05
    done
    # Frozen first (its report cannot slip out), then killed: it held a unit when it died.
    podman pause e2e-w2 >/dev/null 2>&1 || true
    podman kill --signal KILL e2e-w2 >/dev/null
    say "killed worker w2 (SIGKILL) while it held a unit"
    wait "$batch" || true
    [ "$(cat "$work/run-kill.rc")" = 0 ] || fail "after the kill: $(tail -n 3 "$work/run-kill.out")"
    sed 's/^/  /' "$work/run-kill.out"
    local requeued
    requeued=$(metric "http://127.0.0.1:$mport/metrics" npuzzle_coordinator_units_requeued_total)
    say "units requeued: $((requeued - requeued_before))"
    [ "$requeued" -gt "$requeued_before" ] || fail "no unit was requeued after w2 was killed holding one"
    # SIGINT (the image's stop signal, which `podman stop` sends): the coordinator and the
    # surviving worker exit 0, and soon.
    local c cexit wexit stopped
    for c in e2e-coordinator e2e-w1; do
        # (podman shows a container's stop signal as its number: SIGINT is 2.)
        case "$(podman inspect --format '{{.Config.StopSignal}}' "$c")" in
        2 | SIGINT | INT) ;;
        *) fail "$c's stop signal is $(podman inspect --format '{{.Config.StopSignal}}' "$c"), not SIGINT" ;;
        esac
        stopped=$(date +%s%N)
        podman kill --signal SIGINT "$c" >/dev/null
        if ! WAIT_STEP=0.05 wait_for 30 container_exited "$c"; then
            podman logs "$c" >"$work/log/run-$c" 2>&1 || true
            podman top "$c" >>"$work/log/run-$c" 2>&1 || true
            fail "$c still running 30 s after SIGINT"
        fi
        stop_ms[$c]=$((($(date +%s%N) - stopped) / 1000000))
    done
    cexit=$(podman inspect --format '{{.State.ExitCode}}' e2e-coordinator)
    wexit=$(podman inspect --format '{{.State.ExitCode}}' e2e-w1)
    say "SIGINT: coordinator exit $cexit after ${stop_ms[e2e-coordinator]} ms, worker exit $wexit after ${stop_ms[e2e-w1]} ms (polled every 50 ms)"
    [ "$cexit" = 0 ] && [ "$wexit" = 0 ] || fail "stopped with SIGINT: coordinator exit $cexit, worker exit $wexit"
    podman rm -f e2e-coordinator e2e-w1 e2e-w2 >/dev/null
    podman network rm "$net" >/dev/null
    ok "health $before -> 0, 5 4x4 + one 5x5 boards optimal with units on both workers (${units[0]}, ${units[1]}), w2 killed mid-job and Korf #88 still optimal, SIGINT: exit 0 within ${stop_ms[e2e-coordinator]} ms"
}

# ---- compose ---------------------------------------------------------------------------------
part_compose() {
    have_image || skip "no image (see the image part)"
    [ -z "$pip_failed" ] || skip "$pip_failed"
    local port
    for port in 50051 9090; do
        port_free "$port" || skip "host port $port (compose.yaml publishes it) is in use"
    done
    local compose=("$venv/bin/podman-compose" -p npuzzle-e2e -f "$repo/deploy/compose.yaml")
    say "$("$venv/bin/podman-compose" version 2>/dev/null | grep -i 'podman-compose' | head -n 1): up -d --scale worker=2"
    timeout 300 "${compose[@]}" up -d --scale worker=2 >"$work/log/compose-up" 2>&1 || fail "podman-compose up failed"
    local url=http://127.0.0.1:50051
    wait_for 90 workers_are 2 "$url" || fail "$(workers_at "$url") workers joined within 90 s, expected 2"
    local project=(--filter label=io.podman.compose.project=npuzzle-e2e)
    local names coord workers
    names=$(podman ps -a "${project[@]}" --format '{{.Names}}')
    coord=$(echo "$names" | grep coordinator | head -n 1)
    workers=$(echo "$names" | grep -c worker || true)
    [ "$workers" -eq 2 ] || fail "$workers worker containers, expected 2: $names"
    ! echo "$names" | grep -q pdb-build || fail "the tools profile's pdb-build was started: $names"
    wait_for 60 podman healthcheck run "$coord" || fail "the coordinator was not healthy within 60 s of 2 workers joining"
    local w
    for w in $(echo "$names" | grep worker); do
        podman healthcheck run "$w" >/dev/null 2>&1 && fail "worker $w runs the image's health check (compose disables it)"
    done
    korf 26 27 33 >"$work/compose-boards.txt"
    solve_checked compose "$work/compose-boards.txt" "$url"
    local assigned
    assigned=$(metric http://127.0.0.1:9090/metrics npuzzle_coordinator_units_assigned_total)
    [ "$assigned" -gt 0 ] || fail "no unit reached a worker"
    timeout 120 "${compose[@]}" stop >"$work/log/compose-stop" 2>&1 || fail "podman-compose stop failed"
    local bad
    bad=$(podman ps -a "${project[@]}" --format '{{.Names}} {{.ExitCode}}' | awk '$2 != 0')
    [ -z "$bad" ] || fail "not exit 0 on stop (SIGINT): $bad"
    timeout 120 "${compose[@]}" down -v >"$work/log/compose-down" 2>&1 || fail "podman-compose down failed"
    ok "name:, profiles: and healthcheck: disable honoured, --scale worker=2 joined, healthy, 3 boards optimal ($assigned units assigned), stop exit 0, down"
}

# ---- systemd ---------------------------------------------------------------------------------
part_systemd() {
    command -v systemd-nspawn >/dev/null || skip "${apt_failed:-no systemd-nspawn}"
    [ -d "$tree/usr" ] || skip "no Debian tree (see the image part)"
    local root=$work/nspawn
    cp -a "$tree" "$root"
    say "systemd and dbus into the tree (apt-get in systemd-nspawn)"
    if ! timeout 600 systemd-nspawn -q -D "$root" --register=no --keep-unit -E DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus' \
        >"$work/log/systemd-apt" 2>&1; then
        grep -qiE "could not resolve|failed to fetch|temporary failure|unable to connect" "$work/log/systemd-apt" &&
            skip "apt-get in the tree could not reach Debian: $(grep -m1 -iE 'could not resolve|failed to fetch|temporary failure|unable to connect' "$work/log/systemd-apt")"
        fail "installing systemd into the tree failed"
    fi
    install -m 0755 "$bin/npuzzle-coordinator" "$bin/npuzzle-worker" "$bin/npuzzle" "$root/usr/local/bin/"
    install -d -m 0755 "$root/etc/npuzzle" "$root/etc/systemd/system/multi-user.target.wants"
    install -m 0644 "$repo/deploy/systemd/coordinator.env" "$root/etc/npuzzle/coordinator.env"
    # The one change: the worker's coordinator is on this machine.
    sed 's|^NPUZZLE_COORDINATOR=.*|NPUZZLE_COORDINATOR=http://127.0.0.1:50051|' \
        "$repo/deploy/systemd/worker.env" >"$root/etc/npuzzle/worker.env"
    printf 'NPUZZLE_THREADS=1\n' >"$root/etc/npuzzle/worker-1.env"
    printf 'NPUZZLE_THREADS=1\n' >"$root/etc/npuzzle/worker-2.env"
    install -m 0644 "$repo/deploy/systemd/npuzzle-coordinator.service" "$repo/deploy/systemd/npuzzle-worker@.service" \
        "$root/etc/systemd/system/"
    ln -s ../npuzzle-coordinator.service "$root/etc/systemd/system/multi-user.target.wants/npuzzle-coordinator.service"
    ln -s ../npuzzle-worker@.service "$root/etc/systemd/system/multi-user.target.wants/npuzzle-worker@1.service"
    ln -s ../npuzzle-worker@.service "$root/etc/systemd/system/multi-user.target.wants/npuzzle-worker@2.service"
    # Booted on a network of its own (its loopback only): the units' ports clash with nothing.
    systemd-nspawn -q -b -D "$root" --register=no --keep-unit --private-network --console=read-only \
        >"$work/log/systemd-boot" 2>&1 &
    echo $! >"$work/nspawn.pid"
    local nspawn=$! leader=""
    local deadline=$((SECONDS + 60))
    while [ -z "$leader" ]; do
        leader=$(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null | awk '{ print $1 }')
        [ "$SECONDS" -lt "$deadline" ] || fail "systemd-nspawn started no init within 60 s"
        kill -0 "$nspawn" 2>/dev/null || fail "systemd-nspawn exited"
        [ -n "$leader" ] || sleep 0.2
    done
    inside() { nsenter -t "$leader" -a "$@"; }
    innet() { nsenter -t "$leader" -n "$@"; }
    booted() { inside systemctl is-system-running 2>/dev/null | grep -qE '^(running|degraded)$'; }
    wait_for 120 booted || fail "the container did not finish booting within 120 s: $(inside systemctl is-system-running 2>&1)"
    say "booted: $(inside systemctl is-system-running 2>&1); $(inside systemctl is-active npuzzle-coordinator npuzzle-worker@1 npuzzle-worker@2 | tr '\n' ' ')"
    local url=http://127.0.0.1:50051
    wait_for 60 workers_are_in 2 || fail "$(workers_at "$url" innet) workers joined within 60 s, expected 2"
    # Korf's #60: far past the coordinator's own probe (200,000 nodes): the workers search it.
    korf 60 >"$work/systemd-boards.txt"
    solve_checked systemd "$work/systemd-boards.txt" "$url" innet
    local assigned
    assigned=$(innet python3 -c "
import urllib.request
t = urllib.request.urlopen('http://127.0.0.1:9090/metrics', timeout=5).read().decode()
print(int(sum(float(l.rsplit(' ', 1)[1]) for l in t.splitlines() if l.startswith('npuzzle_coordinator_units_assigned_total'))))")
    [ "$assigned" -gt 0 ] || fail "no unit reached a worker"
    local coordinator worker
    coordinator=$(inside systemd-analyze security npuzzle-coordinator.service 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    worker=$(inside systemd-analyze security npuzzle-worker@1.service 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    [ -n "$coordinator" ] && [ -n "$worker" ] || fail "systemd-analyze security gave no score: $(inside systemd-analyze security npuzzle-coordinator.service 2>&1 | tail -n 2)"
    say "systemd-analyze security: coordinator $coordinator, worker $worker"
    awk -v a="$coordinator" -v b="$max_exposure_coordinator" -v c="$worker" -v d="$max_exposure_worker" \
        'BEGIN { exit !(a <= b && c <= d) }' ||
        fail "exposure rose: coordinator $coordinator (was $max_exposure_coordinator), worker $worker (was $max_exposure_worker)"
    inside systemctl stop npuzzle-worker@1 npuzzle-worker@2 npuzzle-coordinator
    local results
    results=$(for u in npuzzle-coordinator npuzzle-worker@1 npuzzle-worker@2; do
        echo "$u $(inside systemctl show -p Result --value "$u") $(inside systemctl show -p ExecMainStatus --value "$u")"
    done)
    echo "$results" | awk '$2 != "success" || $3 != 0 { bad = 1 } END { exit bad }' || fail "after systemctl stop: $results"
    kill -TERM "$nspawn"
    deadline=$((SECONDS + 60))
    while kill -0 "$nspawn" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || fail "the container did not shut down within 60 s"
        sleep 0.2
    done
    ok "booted in systemd-nspawn, 2 workers joined, Korf #60 optimal ($assigned units assigned), exposure $coordinator and $worker, systemctl stop: success, exit 0"
}
workers_are_in() { [ "$(workers_at http://127.0.0.1:50051 nsenter -t "$leader" -n)" -eq "$1" ]; }

# ---- k8s -------------------------------------------------------------------------------------
part_k8s() {
    local rendered=$work/k8s.yaml how
    if command -v kubectl >/dev/null && kubectl kustomize "$repo/deploy/k8s" >"$rendered" 2>"$work/log/k8s-kustomize"; then
        how="kubectl kustomize ($(kubectl version --client 2>/dev/null | grep -i kustomize | awk '{ print $NF }'))"
    else
        # Without kustomize: the three files as they are (no common labels, no image rewrite).
        how="the files unrendered (no kubectl kustomize here: $(command -v kubectl >/dev/null && tail -n 1 "$work/log/k8s-kustomize" || echo 'kubectl not installed'))"
        for f in config coordinator worker; do
            cat "$repo/deploy/k8s/$f.yaml"
            echo "---"
        done >"$rendered"
    fi
    say "rendered: $how"
    [ -z "$pip_failed" ] || skip "$pip_failed"
    "$venv/bin/kubernetes-validate" --strict -k "$k8s_version" "$rendered" >"$work/log/k8s-validate" 2>&1 ||
        fail "kubernetes-validate --strict -k $k8s_version rejected the manifests"
    sed 's/^/  /' "$work/log/k8s-validate" | grep -v '^  *$' | head -n 12
    local played="podman kube play: not run (no image)"
    if ! have_image; then
        :
    elif ! port_free 50051 || ! port_free 9090; then
        played="podman kube play: not run (host port 50051 or 9090 in use: podman 4.3 publishes each containerPort on the host)"
    else
        # podman 4.3 publishes every containerPort on the host (a kubelet does not): the two
        # Deployments' metrics ports (9090) would clash, so the worker's is left out here.
        "$venv/bin/python" - "$rendered" "$work/k8s-coordinator.yaml" "$work/k8s-worker.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
worker = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "npuzzle-worker"]
rest = [d for d in docs if d not in worker]
for d in worker:
    for c in d["spec"]["template"]["spec"]["containers"]:
        c.pop("ports", None)
yaml.safe_dump_all(rest, open(sys.argv[2], "w"))
yaml.safe_dump_all([d for d in docs if d["kind"] == "ConfigMap"] + worker, open(sys.argv[3], "w"))
EOF
        podman network create npuzzle-e2e-k8s >/dev/null
        timeout 300 podman kube play --network npuzzle-e2e-k8s "$work/k8s-coordinator.yaml" >"$work/log/k8s-play" 2>&1 ||
            fail "podman kube play (the coordinator) failed: $(tail -n 1 "$work/log/k8s-play")"
        local coord
        coord=$(podman ps -a --format '{{.Names}}' | grep -m1 'coordinator-pod.*coordinator$' || true)
        [ -n "$coord" ] || fail "podman kube play made no coordinator container: $(podman ps -a --format '{{.Names}}' | tr '\n' ' ')"
        wait_for 30 "$bin/npuzzle" stats --coordinator http://127.0.0.1:50051 ||
            fail "the coordinator pod does not answer: $(podman logs "$coord" 2>&1 | tail -n 3)"
        local ro user
        ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$coord")
        user=$(podman inspect --format '{{.Config.User}}' "$coord")
        say "kube play: the coordinator serves on 50051 (read-only root $ro, user $user)"
        played="podman kube play (podman $(podman version --format '{{.Client.Version}}')): the coordinator served read-only as $user"
        local worker_note
        if timeout 300 podman kube play --network npuzzle-e2e-k8s "$work/k8s-worker.yaml" >>"$work/log/k8s-play" 2>&1; then
            # The worker's init container builds its tables (about 10 s) first.
            worker_up() { podman ps --format '{{.Names}}' | grep -q 'worker-pod.*worker$'; }
            wait_for 120 worker_up || fail "no worker container running within 120 s: $(podman ps -a --format '{{.Names}} {{.Status}}' | tr '\n' ';')"
            local wname joined
            wname=$(podman ps --format '{{.Names}}' | grep -m1 'worker-pod.*worker$')
            joined="did not join (no cluster DNS for the Service npuzzle-coordinator)"
            wait_for 20 workers_are 1 http://127.0.0.1:50051 && joined="joined"
            say "kube play: worker $wname up after its pdb-build init container and $joined"
            worker_note="the worker started after its init container built its tables and $joined"
        elif grep -q "failed to remove once init container" "$work/log/k8s-play"; then
            # podman 4.3 removes a pod's `once` init container right after starting it, and
            # fails while it still runs: podman's limit, not the manifest's.
            worker_note="the worker pod did not start: podman removes its init container (pdb-build) while it still runs ('failed to remove once init container')"
            say "kube play: $worker_note"
        else
            fail "podman kube play (the workers) failed: $(tail -n 1 "$work/log/k8s-play")"
        fi
        played="$played; $worker_note; ignored: the Service, the probes, replicas (one pod each), the worker's metrics port (left out: podman would publish it on the host)"
        timeout 120 podman kube down "$work/k8s-worker.yaml" >/dev/null 2>&1 || true
        timeout 120 podman kube down "$work/k8s-coordinator.yaml" >/dev/null 2>&1 || true
        podman network rm -f npuzzle-e2e-k8s >/dev/null 2>&1 || true
    fi
    ok "rendered with $how, valid for Kubernetes $k8s_version ($kubernetes_validate_pin --strict); $played"
}

for p in "${parts[@]}"; do
    part "$p"
done
summary
[ "$failed" -eq 0 ]
