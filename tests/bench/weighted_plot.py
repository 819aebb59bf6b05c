#!/usr/bin/python3
"""weighted_plot.py RESULTS.jsonl OUT.png - the bars of docs/performance.md
("Sampling"): bytes/s of each run of tests/bench/weighted.sh by mode, with
the PyTorch peer's, on a log scale (ratios, not absolute speeds, are what
the noisy shared machine lets one compare)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
kinds = ["chunks", "weighted", "norep", "balanced", "torch"]
labels = {"chunks": "shuffle=chunks", "weighted": "weights=",
          "norep": "weights=,\nreplacement=no", "balanced": "balance=",
          "torch": "PyTorch\nWeightedRandomSampler"}
fig, ax = plt.subplots(figsize=(7, 3.6))
for x, k in enumerate(kinds):
    v = [(r["ferry"]["bytes_per_s"] if "ferry" in r else r["bytes_per_s"]) / 2**20
         for r in rows if r["kind"] == k]
    if not v:
        continue
    med = sorted(v)[len(v) // 2]
    ax.bar(x, med, color="#4477aa" if k != "torch" else "#cc6677", alpha=0.8)
    ax.plot([x] * len(v), v, "k.", ms=6)
    ax.text(x, med * 1.08, "%.0f" % med, ha="center", fontsize=8)
ax.set_yscale("log")
ax.set_xticks(range(len(kinds)))
ax.set_xticklabels([labels[k] for k in kinds], fontsize=8)
ax.set_ylabel("MiB/s handed out (2 ranks)")
ax.set_title("Sampling on the .npy benchmark data (bars: median, dots: runs)",
             fontsize=9)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
