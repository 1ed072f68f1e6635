#!/usr/bin/env python3
"""Plots `npuzzle simulate --json` output: speed-up and efficiency against slots.

usage: plot_sim.py OUT.png LABEL=FILE.jsonl [LABEL=FILE.jsonl ...]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    out, series = sys.argv[1], sys.argv[2:]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.4))
    top = 1
    for item in series:
        label, path = item.split("=", 1)
        rows = [json.loads(line) for line in open(path) if line.strip()]
        slots = [r["slots"] for r in rows]
        top = max(top, max(slots))
        ax1.plot(slots, [r["speedup"] for r in rows], marker="o", label=label)
        ax2.plot(slots, [r["efficiency"] for r in rows], marker="o", label=label)
        ax3.plot(slots, [r["utilization"] for r in rows], marker="o", label=label)
    ax1.plot([1, top], [1, top], linestyle=":", color="grey", label="linear")
    for ax in (ax1, ax2, ax3):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("search threads (slots)")
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_yscale("log", base=2)
    ax1.set_ylabel("speed-up over one serial thread")
    ax2.set_ylabel("efficiency (speed-up / slots)")
    ax2.set_ylim(0, 1.6)
    ax3.set_ylabel("utilization (slot time spent searching)")
    ax3.set_ylim(0, 1.05)
    for ax in (ax2, ax3):
        ax.axhline(0.9, linestyle=":", color="grey")
        ax.axhline(0.8, linestyle=":", color="grey")
    ax1.legend(fontsize=7)
    fig.suptitle("npuzzle cluster, simulated: the real scheduler, worker costs from recorded traces")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
