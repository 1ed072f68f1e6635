#!/usr/bin/env python3
"""The web console in a real browser: starts npuzzle-coordinator (with --http-listen) and an
npuzzle-worker from BIN_DIR, opens the console in headless Chromium (driven through
chromedriver's WebDriver HTTP API, with nothing but the standard library), and checks that

- the worker list shows the worker, live (no reload);
- a bad board typed into the form gets the command line's error;
- a 15-puzzle typed into the form is answered, and the answer shown (its moves, and the grid
  played to the end) replays from the board to the goal at the known optimal length;

then saves a screenshot of the console (--screenshot FILE). Exits 0 when every check passed, 1
otherwise, and 0 with SKIP where chromium or chromedriver is not installed (Debian: apt-get
install chromium chromium-driver).

    python3 coordinator/tests/browser/console.py target/release [--screenshot docs/console.png]
"""

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

# Korf's instance 12: 45 moves to the blank-first goal (data/korf100.txt).
BOARD = "14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15"
OPTIMAL = 45
GOAL = list(range(16))
WORKER = "browser-test-worker"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_for(what, check, timeout=20.0, every=0.1):
    """Calls check() until it returns something true (returned) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # not there yet
            last = e
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def replay(tiles, moves, width):
    """The board after the blank moves `moves` (U, D, L, R) from `tiles`."""
    tiles = list(tiles)
    blank = tiles.index(0)
    step = {"U": -width, "D": width, "L": -1, "R": 1}
    for m in moves:
        to = blank + step[m]
        row_ok = m in "UD" or to // width == blank // width
        assert 0 <= to < len(tiles) and row_ok, f"illegal move {m} at {blank}"
        tiles[blank], tiles[to] = tiles[to], 0
        blank = to
    return tiles


class Browser:
    """A WebDriver session with headless Chromium."""

    def __init__(self, driver_url, chromium):
        self.url = driver_url
        options = {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1400,1100"],
        }
        status, answer = http("POST", f"{self.url}/session", {
            "capabilities": {"alwaysMatch": {"browserName": "chrome",
                                             "goog:chromeOptions": options}}})
        assert status == 200, f"no session: {answer}"
        self.session = f"{self.url}/session/{answer['value']['sessionId']}"

    def call(self, method, path, body=None):
        status, answer = http(method, self.session + path, body)
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {answer}")
        return answer["value"]

    def open(self, url):
        self.call("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def element(self, css):
        found = self.call("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(found.values()))

    def type(self, css, text):
        element = self.element(css)
        self.call("POST", f"/element/{element}/clear", {})
        self.call("POST", f"/element/{element}/value", {"text": text})

    def click(self, css):
        self.call("POST", f"/element/{self.element(css)}/click", {})

    def text(self, css):
        return self.js(f"return document.querySelector({json.dumps(css)}).textContent")

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("GET", "/screenshot")))

    def close(self):
        try:
            http("DELETE", self.session)
        except Exception:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir", help="where npuzzle-coordinator and npuzzle-worker are")
    parser.add_argument("--screenshot", help="save a screenshot of the console here")
    args = parser.parse_args()

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("SKIP: chromium or chromedriver not installed (apt-get install chromium chromium-driver)")
        return 0

    grpc_port, http_port, driver_port = free_port(), free_port(), free_port()
    base = f"http://127.0.0.1:{http_port}"
    logs = tempfile.mkdtemp(prefix="npuzzle-browser-")
    processes = []

    def start(name, command, **kw):
        log = open(os.path.join(logs, name + ".log"), "w")
        p = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **kw)
        processes.append(p)
        return p

    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUZZLE_")}
    browser = None
    try:
        start("coordinator", [os.path.join(args.bin_dir, "npuzzle-coordinator"),
                              "--listen", f"127.0.0.1:{grpc_port}",
                              "--http-listen", f"127.0.0.1:{http_port}"], env=env)
        start("worker", [os.path.join(args.bin_dir, "npuzzle-worker"),
                         "--coordinator", f"http://127.0.0.1:{grpc_port}",
                         "--threads", "2", "--name", WORKER], env=env)
        wait_for("the worker to join",
                 lambda: http("GET", f"{base}/api/v1/stats")[1]["workers"] == 1)
        start("chromedriver", [driver, f"--port={driver_port}"])
        driver_url = f"http://127.0.0.1:{driver_port}"
        wait_for("chromedriver", lambda: http("GET", f"{driver_url}/status")[1]["value"]["ready"])
        browser = Browser(driver_url, chromium)
        browser.open(base + "/")

        # Live: the stream connects and the worker list shows the worker.
        wait_for("the event stream", lambda: browser.text("#connection") == "live")
        row = wait_for("the worker in the list", lambda: browser.js(
            "const r = document.querySelector('#workers tbody tr');"
            "return r && Array.from(r.cells).map(c => c.textContent);"))
        assert row[0] == WORKER, row
        assert row[1] == "127.0.0.1" and row[2] == "2", row
        print(f"ok: the worker list shows {row}")

        # A bad board gets the command line's error.
        browser.type("#board", "1 2 3 4 5 6 7 8 8")
        browser.click("#solve-button")
        error = wait_for("the error", lambda: (lambda t: "invalid" in t and t)(
            browser.text("#solve-status")))
        assert "duplicate tile 8" in error, error
        print(f"ok: a bad board shows {error!r}")

        # A 15-puzzle, to Korf's goal: the answer shown replays to the goal at the optimal
        # length, and so does the grid played to its end.
        browser.type("#board", BOARD)
        browser.js("const g = document.getElementById('goal');"
                   "g.value = 'blank-first'; g.dispatchEvent(new Event('change'));")
        browser.click("#solve-button")
        moves = wait_for("the answer", lambda: browser.js(
            "return document.getElementById('solve-status').dataset.moves"), timeout=120)
        tiles = [int(t) for t in BOARD.split()]
        assert len(moves) == OPTIMAL, f"{len(moves)} moves, optimal is {OPTIMAL}: {moves}"
        assert replay(tiles, moves, 4) == GOAL, f"{moves} does not reach the goal"
        shown = browser.text("#solve-status")
        assert f"optimal: {OPTIMAL} moves" in shown, shown
        print(f"ok: the form's answer {moves} replays to the goal in {OPTIMAL} moves")
        browser.click("#step")
        browser.click("#step")
        assert browser.js("return document.getElementById('grid').dataset.step") == "2"
        browser.click("#play")
        final = wait_for("the grid played to the end", lambda: browser.js(
            "const g = document.getElementById('grid');"
            f"return g.dataset.step === '{OPTIMAL}' && g.dataset.tiles"), timeout=30)
        assert [int(t) for t in final.split()] == GOAL, final
        print("ok: the grid, played to its end, shows the goal")

        # The search is among the ended ones, with its answer.
        ended = wait_for("the ended search", lambda: browser.js(
            "const r = document.querySelector('#finished tbody tr');"
            "return r && Array.from(r.cells).map(c => c.textContent);"))
        assert ended[1] == BOARD and ended[3] == "solved" and ended[4] == str(OPTIMAL), ended
        print(f"ok: the ended searches show {ended[:5]}")

        if args.screenshot:
            # More for the tables and the charts: an 8-puzzle answered, and a harder 15-puzzle
            # (Korf's instance 1, 57 moves) searched while the picture is taken.
            http("POST", f"{base}/api/v1/solve", {"board": "8 6 7 2 5 4 3 0 1"})
            hard = {"board": "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3", "goal": "blank-first",
                    "heuristic": "md"}
            threading.Thread(target=lambda: http("POST", f"{base}/api/v1/solve", hard, 300),
                             daemon=True).start()
            wait_for("the search to show", lambda: browser.js(
                "const r = document.querySelector('#searches tbody tr');"
                "return r && r.cells[4].textContent.includes('→');"), timeout=30)
            browser.js("document.getElementById('step-back').click()")
            browser.screenshot(args.screenshot)
            print(f"screenshot: {args.screenshot}")
        print("PASS: the console in headless Chromium")
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}\nlogs in {logs}")
        return 1
    finally:
        if browser:
            browser.close()
        for p in reversed(processes):
            p.terminate()
        for p in processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
