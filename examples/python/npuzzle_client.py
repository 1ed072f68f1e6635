"""Calling npuzzle from Python: `Solve` and `SolveStream` through stubs generated from proto/.

The stubs are generated at run time (grpc_tools.protoc into a temporary directory), so the
example always speaks the proto in this checkout. Every answer is checked: each move string is
replayed here and must reach the goal in the known optimal number of moves.

    python examples/python/npuzzle_client.py 127.0.0.1:50051

Exit status 0 when every check passes, 1 otherwise (2 when no cluster answers).
"""

import argparse
import importlib
import pathlib
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

PROTO_ROOT = pathlib.Path(__file__).resolve().parents[2] / "proto"
PROTO = "npuzzle/v1/npuzzle.proto"
STEPS = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}  # the blank's (row, column) step

# (name, width, height, tiles, blank_first, expected): expected is the optimal length, or the
# outcome name, or the gRPC status code name.
CASES = [
    ("8-puzzle", 3, 3, [8, 6, 7, 2, 5, 4, 3, 0, 1], False, 31),
    ("unsolvable 8-puzzle", 3, 3, [2, 1, 3, 4, 5, 6, 7, 8, 0], False, "OUTCOME_UNSOLVABLE"),
    ("duplicate tile", 3, 3, [1, 1, 3, 4, 5, 6, 7, 8, 0], False, "INVALID_ARGUMENT"),
    ("Korf #79", 4, 4, [0, 1, 9, 7, 11, 13, 5, 3, 14, 12, 4, 2, 8, 6, 10, 15], True, 42),
]


class Mismatch(Exception):
    """An answer that is not the one expected."""


def load_stubs(out_dir):
    """Generates npuzzle_pb2 and npuzzle_pb2_grpc from proto/ into out_dir and imports them."""
    args = ["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}", PROTO]
    if protoc.main(args) != 0:
        sys.exit(f"protoc failed on {PROTO_ROOT / PROTO}")
    sys.path.insert(0, str(out_dir))
    return (importlib.import_module("npuzzle.v1.npuzzle_pb2"),
            importlib.import_module("npuzzle.v1.npuzzle_pb2_grpc"))


def goal_tiles(n, blank_first):
    return list(range(n)) if blank_first else list(range(1, n)) + [0]


def replay(width, height, tiles, moves):
    """The board after `moves` (the blank's directions); Mismatch on a move off the board."""
    tiles = list(tiles)
    blank = tiles.index(0)
    for i, move in enumerate(moves):
        row, col = divmod(blank, width)
        d_row, d_col = STEPS[move]
        row, col = row + d_row, col + d_col
        if not (0 <= row < height and 0 <= col < width):
            raise Mismatch(f"move {i + 1} ({move}) leaves the board")
        target = row * width + col
        tiles[blank], tiles[target] = tiles[target], tiles[blank]
        blank = target
    return tiles


def check_path(answer, width, height, tiles, blank_first, length):
    if answer.length != length or len(answer.moves) != length:
        raise Mismatch(f"{answer.length} moves ({answer.moves!r}), expected {length}")
    if replay(width, height, tiles, answer.moves) != goal_tiles(len(tiles), blank_first):
        raise Mismatch(f"{answer.moves} does not reach the goal")


def check_solve(pb, stub, case):
    name, width, height, tiles, blank_first, expected = case
    request = make_request(pb, width, height, tiles, blank_first)
    try:
        answer = stub.Solve(request, timeout=120)
    except grpc.RpcError as error:
        if error.code().name != expected:
            raise Mismatch(f"{error.code().name}: {error.details()}") from None
        return f"{error.code().name} ({error.details()})"
    outcome = pb.Outcome.Name(answer.outcome)
    if isinstance(expected, str):
        if outcome != expected:
            raise Mismatch(f"{outcome}, expected {expected}")
        return outcome
    if outcome != "OUTCOME_SOLVED":
        raise Mismatch(f"{outcome} ({answer.error})")
    check_path(answer, width, height, tiles, blank_first, expected)
    return f"{answer.length} moves {answer.moves} ({answer.nodes} nodes, cached: {answer.cached})"


def check_stream(pb, stub, case):
    name, width, height, tiles, blank_first, length = case
    request = make_request(pb, width, height, tiles, blank_first, skip_cache=True)
    events = list(stub.SolveStream(request, timeout=120))
    kinds = [event.WhichOneof("event") for event in events]
    if not kinds or kinds[0] != "queued" or kinds[-1] != "result":
        raise Mismatch(f"events {kinds}: expected queued first and result last")
    result = events[-1].result
    check_path(result, width, height, tiles, blank_first, length)
    return (f"queued as job {events[0].queued.job}, {kinds.count('bound')} bound events, "
            f"result {result.length} moves")


def make_request(pb, width, height, tiles, blank_first, skip_cache=False):
    kind = pb.GOAL_KIND_BLANK_FIRST if blank_first else pb.GOAL_KIND_BLANK_LAST
    return pb.SolveRequest(board=pb.Board(width=width, height=height, tiles=tiles),
                           goal=pb.Goal(kind=kind), skip_cache=skip_cache)


def wait_for_worker(pb, stub, seconds):
    """Stats once the coordinator answers and has a worker; None after `seconds` without."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            stats = stub.Stats(pb.StatsRequest(), timeout=1)
            if stats.workers >= 1:
                return stats
        except grpc.RpcError as error:
            if error.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
        time.sleep(0.1)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="the coordinator, host:port (or http://host:port)")
    parser.add_argument("--wait", type=float, default=30, metavar="SECONDS",
                        help="how long to wait for the coordinator and a worker (default 30)")
    args = parser.parse_args()
    address = args.address.removeprefix("http://")

    with tempfile.TemporaryDirectory() as stubs_dir:
        pb, pb_grpc = load_stubs(stubs_dir)
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.SolverStub(channel)
        stats = wait_for_worker(pb, stub, args.wait)
        if stats is None:
            print(f"{address}: no coordinator with a worker after {args.wait:g} s", file=sys.stderr)
            return 2
        print(f"{address}: {stats.workers} worker(s), {stats.slots} search thread(s)")
        checks = [(f"Solve {case[0]}", check_solve, case) for case in CASES]
        checks.append((f"SolveStream {CASES[-1][0]}", check_stream, CASES[-1]))
        failed = 0
        for label, check, case in checks:
            try:
                print(f"ok    {label}: {check(pb, stub, case)}")
            except (Mismatch, grpc.RpcError) as error:
                failed += 1
                print(f"FAIL  {label}: {error}")
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
