#!/usr/bin/env bash
# Runs the Python example against a real cluster: installs its packages (a virtual environment in
# target/python-venv, kept between runs), starts `npuzzle cluster` on a free port, runs
# npuzzle_client.py against it, stops the cluster. Exits with the client's status.
#
#   bash examples/python/run.sh                                   # builds target/debug/npuzzle
#   NPUZZLE_BIN=target/release/npuzzle bash examples/python/run.sh  # uses that binary instead
set -euo pipefail
cd "$(dirname "$0")/../.."

target=${CARGO_TARGET_DIR:-target}
env_dir=$target/python-venv
requirements=examples/python/requirements.txt

# Packages: reinstalled whenever requirements.txt changes. Where `python3 -m venv` is missing
# (Debian without python3-venv), they go to a plain directory with `pip install --target`.
if ! cmp -s "$requirements" "$env_dir/requirements.txt"; then
    rm -rf "$env_dir"
    if python3 -m venv "$env_dir" >/dev/null 2>&1; then
        "$env_dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    else
        echo "python3 -m venv failed: installing with pip install --target $env_dir/lib" >&2
        rm -rf "$env_dir"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
            --target "$env_dir/lib" -r "$requirements" || {
            echo "could not install $requirements: python3 needs venv or pip" \
                "(Debian: apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    cp "$requirements" "$env_dir/requirements.txt"
fi
if [ -x "$env_dir/bin/python" ]; then
    python=("$env_dir/bin/python")
else
    python=(env "PYTHONPATH=$env_dir/lib${PYTHONPATH:+:$PYTHONPATH}" python3)
fi

if [ -z "${NPUZZLE_BIN:-}" ]; then
    cargo build --quiet -p npuzzle-client --bin npuzzle
    NPUZZLE_BIN=$target/debug/npuzzle
fi

# A free port (the kernel's pick; free again once this socket closes), and no pattern databases
# (an empty directory), so the run does not depend on what the user's cache holds.
port=$("${python[@]}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
pdb_dir=$(mktemp -d)
"$NPUZZLE_BIN" cluster --listen "127.0.0.1:$port" --threads 1 --pdb-dir "$pdb_dir" &
pids=($!)
stop() {
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    rm -rf "$pdb_dir"
}
trap stop EXIT

# The client in the background too, so that a SIGTERM to this script stops it with the cluster.
"${python[@]}" examples/python/npuzzle_client.py --wait 60 "127.0.0.1:$port" &
pids+=($!)
status=0
wait "${pids[1]}" || status=$?
exit "$status"
