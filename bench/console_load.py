#!/usr/bin/env python3
"""The web console's event stream with many searches running (issue: updates within 1 s with
1,000 searches). Starts a release coordinator with --http-listen and one worker (one thread),
keeps N hard searches running (random 15-puzzles with Manhattan distance, a long timeout, sent
by `npuzzle batch --coordinator --jobs N`), then reads GET /api/v1/events for a while and reports
the gap between snapshots, their size and how many searches they list, and the time of
GET /api/v1/searches; then times POST /api/v1/solve of an 8-puzzle (p50, p99) over loopback.

    python3 bench/console_load.py target/release [N]
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    bin_dir = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    grpc, http = free_port(), free_port()
    tmp = tempfile.mkdtemp()
    procs = []
    try:
        coord = subprocess.Popen(
            [f"{bin_dir}/npuzzle-coordinator", "--listen", f"127.0.0.1:{grpc}",
             "--http-listen", f"127.0.0.1:{http}", "--max-searches-per-client", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(coord)
        time.sleep(0.5)
        worker = subprocess.Popen(
            [f"{bin_dir}/npuzzle-worker", "--coordinator", f"http://127.0.0.1:{grpc}",
             "--threads", "1", "--pdb-dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(worker)
        boards = subprocess.run(
            [f"{bin_dir}/npuzzle", "gen", "--size", "4x4", "--count", str(n), "--seed", "7"],
            check=True, capture_output=True, text=True).stdout
        path = os.path.join(tmp, "boards.txt")
        with open(path, "w") as f:
            f.write(boards)
        batch = subprocess.Popen(
            [f"{bin_dir}/npuzzle", "batch", path, "--coordinator", f"http://127.0.0.1:{grpc}",
             "--jobs", str(n), "--heuristic", "md", "--output", "jsonl"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(batch)
        base = f"http://127.0.0.1:{http}"
        # Wait until the searches are running.
        started = time.time()
        while True:
            with urllib.request.urlopen(f"{base}/api/v1/stats") as r:
                running = json.load(r)["running_jobs"]
            if running >= n * 0.95 or time.time() - started > 60:
                break
            time.sleep(0.5)
        print(f"running searches: {running}")
        t = time.perf_counter()
        with urllib.request.urlopen(f"{base}/api/v1/searches") as r:
            body = r.read()
        print(f"GET /api/v1/searches: {len(json.loads(body))} searches, {len(body)} bytes, "
              f"{(time.perf_counter() - t) * 1000:.1f} ms")
        arrivals = []
        with urllib.request.urlopen(f"{base}/api/v1/events") as stream:
            data = []
            while len(arrivals) < 11:
                line = stream.readline()
                if not line:
                    break
                line = line.decode().rstrip("\n")
                if line.startswith("data:"):
                    data.append(line[5:])
                elif line == "" and data:
                    snapshot = json.loads("\n".join(data))
                    arrivals.append((time.perf_counter(), len("\n".join(data)),
                                     len(snapshot["searches"])))
                    data = []
        gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:])]
        print(f"events: {len(arrivals)} snapshots; gaps between them {min(gaps):.3f}-{max(gaps):.3f} s; "
              f"size {min(a[1] for a in arrivals)}-{max(a[1] for a in arrivals)} bytes; "
              f"searches listed {min(a[2] for a in arrivals)}-{max(a[2] for a in arrivals)}")
        browser_updates(base, tmp)
        post_timings(base, f"with {running} searches running")
        batch.kill()
        batch.wait()
        time.sleep(3)
        post_timings(base, "with no search running")
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()


def browser_updates(base, tmp):
    """The console in headless Chromium (when installed) for 10 s: when its searches table
    changed, how many rows it had, and the main thread's long tasks (over 50 ms)."""
    import importlib.util
    import shutil
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("browser: SKIP (chromium or chromedriver not installed)")
        return
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "console_test", os.path.join(here, "..", "coordinator", "tests", "browser", "console.py"))
    console = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(console)
    port = free_port()
    chromedriver = subprocess.Popen([driver, f"--port={port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = None
    try:
        url = f"http://127.0.0.1:{port}"
        console.wait_for("chromedriver", lambda: console.http("GET", f"{url}/status")[1]["value"]["ready"])
        browser = console.Browser(url, chromium)
        browser.open(base + "/")
        time.sleep(2)
        browser.js("""
            window.__updates = []; window.__long = [];
            new PerformanceObserver(l => l.getEntries().forEach(e => window.__long.push(e.duration)))
                .observe({entryTypes: ['longtask']});
            const body = document.querySelector('#searches tbody') || document.querySelector('#searches');
            new MutationObserver(() => window.__updates.push([performance.now(),
                document.querySelectorAll('#searches tbody tr').length]))
                .observe(body, {childList: true, subtree: true, characterData: true});
        """)
        time.sleep(10)
        updates = browser.js("return window.__updates")
        long_tasks = browser.js("return window.__long")
        # Mutations of one render come in a burst: keep the first of each.
        renders = []
        for at, rows in updates:
            if not renders or at - renders[-1][0] > 200:
                renders.append((at, rows))
        gaps = [(b[0] - a[0]) / 1000 for a, b in zip(renders, renders[1:])]
        print(f"browser: {len(renders)} table renders in 10 s, gaps {min(gaps):.3f}-{max(gaps):.3f} s, "
              f"rows {min(r[1] for r in renders)}-{max(r[1] for r in renders)}; "
              f"long tasks: {len(long_tasks)}, longest {max(long_tasks, default=0):.0f} ms")
    finally:
        if browser:
            browser.close()
        chromedriver.kill()
        chromedriver.wait()


def post_timings(base, what):
    """An 8-puzzle answered over loopback, one connection per request (urllib), half of them
    searched (skip_cache) and half from the cache."""
    times = []
    for i in range(300):
        req = urllib.request.Request(
            f"{base}/api/v1/solve",
            data=json.dumps({"board": "8 6 7 2 5 4 3 0 1", "skip_cache": i % 2 == 0}).encode(),
            headers={"Content-Type": "application/json"})
        t = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            answer = json.load(r)
        times.append((time.perf_counter() - t) * 1000)
        assert answer["length"] == 31, answer
    times.sort()
    print(f"POST /api/v1/solve (8-puzzle, 31 moves), {what}: "
          f"p50 {times[len(times) // 2]:.2f} ms, p99 {times[int(len(times) * 0.99)]:.2f} ms")


if __name__ == "__main__":
    main()
