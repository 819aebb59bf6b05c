#!/usr/bin/python3
"""Plot tests/bench/npy.sh results: throughput against batch size and ranks.

usage: plot.py results.jsonl OUT_DIR   (writes perf-batch.png, perf-ranks.png)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(line) for line in open(sys.argv[1])]
out = sys.argv[2]
dd = max(r["bytes_per_s"] for r in rows if r["kind"] == "dd") / 1e9

for kind, key, xlabel, name in (
    ("sweep_batch", "batch", "batch size (samples of 1 KiB), 2 ranks", "perf-batch.png"),
    ("sweep_ranks", "ranks", "MPI ranks (batch 1024)", "perf-ranks.png"),
):
    pts = sorted((r[key], r["ferry"]["bytes_per_s"] / 1e9) for r in rows if r["kind"] == kind)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="ferry bench (aggregate)")
    ax.axhline(dd, color="gray", ls="--", label="dd bs=4M")
    ax.axhline(dd / 2, color="gray", ls=":", label="50% of dd (target)")
    if key == "batch":
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GB/s")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("ferry .npy throughput, page cache warm, 2-core machine", fontsize=9)
    fig.tight_layout()
    fig.savefig(f"{out}/{name}", dpi=110)
    print("wrote", f"{out}/{name}")
