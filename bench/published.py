#!/usr/bin/env python3
"""Our node counts beside the published ones, instance by instance, for Korf & Felner's 50
24-puzzles (data/korf24_50_nodes.txt: Korf & Felner 2002, Döbbelin, Schütt & Reinefeld 2013,
Clausecker's catalogues).

Reads the table `npuzzle bench` prints (from a file or standard input) and prints, for each
instance it holds, our expanded nodes, each published count and our count divided by it, then
the same for the instances together. Korf & Felner counted nodes *generated*, the others nodes
*expanded*: each is compared with ours of the same kind.

    npuzzle bench data/korf24_50.txt --goal blank-first --heuristic pdb --ids 40,38,25 \\
        | tee bench.txt
    python3 bench/published.py bench.txt

Exit status 1 if an instance in the input has a length other than its listed optimum, or no
published counts.
"""

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
PUBLISHED = HERE.parent / "data" / "korf24_50_nodes.txt"
# Column name in the data file -> (heading, whether it counts generated nodes).
COLUMNS = {
    "kf2002": ("KF02 gen", True),
    "d_6666": ("D 6666", False),
    "d_888": ("D 888", False),
    "d_996": ("D 996", False),
    "d_max": ("D max", False),
    "clausecker_improved": ("Clausecker", False),
}


def published(path):
    """id -> {column: count} (None where a count is -1: not run)."""
    names, rows = None, {}
    for line in path.read_text().splitlines():
        if line.startswith("# id "):
            names = line[2:].split()
            continue
        if not line.strip() or line.startswith("#"):
            continue
        if names is None:
            raise SystemExit(f"{path}: no '# id …' header line before the data")
        fields = line.split()
        row = {n: int(v) for n, v in zip(names, fields)}
        rows[row["id"]] = {n: (None if v < 0 else v) for n, v in row.items()}
    return rows


def ours(lines):
    """(heuristic, id, length, optimal, expanded, generated, seconds) per bench line."""
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or not fields[1].isdigit():
            continue
        try:
            kind, ident = fields[0], int(fields[1])
            length = None if fields[2] == "-" else int(fields[2])
            optimal = None if fields[3] == "-" else int(fields[3])
            expanded, generated = int(fields[4]), int(fields[5])
            seconds = float(fields[6])
        except ValueError:
            continue
        yield kind, ident, length, optimal, expanded, generated, seconds, "TIME LIMIT" in line


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_output", nargs="?", help="npuzzle bench's output (default: stdin)")
    parser.add_argument("--published", default=str(PUBLISHED), help="the published counts")
    args = parser.parse_args()
    table = published(pathlib.Path(args.published))
    text = open(args.bench_output) if args.bench_output else sys.stdin
    heads = [h for h, _ in COLUMNS.values()]
    print(f"{'h':<3} {'id':>3} {'len':>4} {'expanded':>14} {'seconds':>9}  "
          + "  ".join(f"{h:>17}" for h in heads))
    totals, bad = {}, False
    for kind, ident, length, optimal, expanded, generated, seconds, stopped in ours(text):
        row = table.get(ident)
        if row is None:
            print(f"{kind:<3} {ident:>3}: no published counts", file=sys.stderr)
            bad = True
            continue
        if not stopped and length != optimal:
            print(f"{kind:<3} {ident:>3}: length {length}, optimal {optimal}", file=sys.stderr)
            bad = True
        cells = []
        t = totals.setdefault(kind, {"expanded": 0, "generated": 0, "seconds": 0.0, "n": 0,
                                     **{c: [0, 0] for c in COLUMNS}})
        if not stopped:
            # The totals are over the instances solved: a stopped one has no count to compare.
            t["expanded"] += expanded
            t["generated"] += generated
            t["seconds"] += seconds
            t["n"] += 1
        for column, (_, is_generated) in COLUMNS.items():
            theirs = row.get(column)
            mine = generated if is_generated else expanded
            if theirs is None or stopped:
                cells.append(f"{'-':>17}")
                continue
            t[column][0] += mine
            t[column][1] += theirs
            cells.append(f"{theirs:>11} {mine / theirs:>5.2f}")
        flag = "  TIME LIMIT" if stopped else ""
        print(f"{kind:<3} {ident:>3} {length if length is not None else '-':>4} {expanded:>14} "
              f"{seconds:>9.2f}  " + "  ".join(cells) + flag)
    for kind, t in totals.items():
        cells = []
        for column in COLUMNS:
            mine, theirs = t[column]
            cells.append(f"{theirs:>11} {mine / theirs:>5.2f}" if theirs else f"{'-':>17}")
        print(f"{kind:<3} all {t['n']:>4} {t['expanded']:>14} {t['seconds']:>9.2f}  "
              + "  ".join(cells))
    print("(each cell: the published count, then ours divided by it; KF02 counts generated "
          "nodes, the others expanded)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
