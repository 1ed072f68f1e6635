#!/usr/bin/env python3
"""Checks a batch's answers independently of npuzzle: every input index answered exactly once,
every answer solved, its moves (the blank's direction: U, D, L, R) replayed on the board reach
Korf's blank-first goal, and its length equals the known optimum.

usage: check_answers.py INSTANCES ANSWERS_JSONL
INSTANCES: one `id optimal_length tiles...` line per board, in the batch's input order.
"""
import json
import sys

STEP = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


def replay(tiles, side, moves):
    tiles = list(tiles)
    blank = tiles.index(0)
    for m in moves:
        dr, dc = STEP[m]
        r, c = divmod(blank, side)
        r, c = r + dr, c + dc
        if not (0 <= r < side and 0 <= c < side):
            return None
        nxt = r * side + c
        tiles[blank], tiles[nxt] = tiles[nxt], tiles[blank]
        blank = nxt
    return tiles


def main():
    instances = []
    with open(sys.argv[1]) as f:
        for line in f:
            fields = line.split()
            if fields:
                instances.append((fields[0], int(fields[1]), [int(t) for t in fields[2:]]))
    seen = {}
    with open(sys.argv[2]) as f:
        for n, line in enumerate(f, 1):
            record = json.loads(line)
            index = record["index"]
            if index in seen:
                sys.exit(f"answer line {n}: index {index} answered twice")
            seen[index] = record
    problems = []
    for index, (ident, optimal, tiles) in enumerate(instances):
        record = seen.get(index)
        side = int(len(tiles) ** 0.5)
        if record is None:
            problems.append(f"Korf #{ident} (index {index}): no answer")
        elif record["status"] != "solved":
            problems.append(f"Korf #{ident}: {record['status']} {record.get('error')}")
        elif record["length"] != optimal or len(record["moves"]) != optimal:
            problems.append(f"Korf #{ident}: {record['length']} moves, optimum {optimal}")
        elif replay(tiles, side, record["moves"]) != list(range(side * side)):
            problems.append(f"Korf #{ident}: the moves do not reach the goal")
    extra = set(seen) - set(range(len(instances)))
    if extra:
        problems.append(f"answers for indices not in the input: {sorted(extra)}")
    for p in problems:
        print("WRONG OR LOST:", p)
    print(f"{len(instances)} boards, {len(seen)} answers, {len(problems)} lost or wrong")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
