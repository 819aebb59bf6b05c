#!/usr/bin/python3
"""Summarise tests/bench/au.sh results: AU per workload and rank count.

usage: au_plot.py results.jsonl PNG|"" UNET_SCALE

Prints a Markdown table (AU mean, standard deviation, minimum over the
repeats, wait fraction, bytes/s asked for and delivered per rank) and, when
PNG is given, plots AU against ranks with error bars (one standard
deviation), the way tests/bench/plot.py draws perf-*.png (matplotlib, Agg).
"""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
png = sys.argv[2] if len(sys.argv) > 2 else ""
scale = sys.argv[3] if len(sys.argv) > 3 else "8"
order = ("unet3d", "resnet50", "cosmoflow")
target = {"unet3d": 0.90, "resnet50": 0.90, "cosmoflow": 0.70}
label = {
    "unet3d": "3D U-Net (146.6 MB/%s, batch 7, 323/%s ms)" % (scale, scale),
    "resnet50": "ResNet-50 (114.7 KB, batch 400, 224 ms)",
    "cosmoflow": "CosmoFlow (2.83 MB, batch 1, 3.5 ms)",
}


def groups():
    out = {}
    for r in rows:
        out.setdefault((r["workload"], r["ranks"]), []).append(r)
    return out


g = groups()
print()
print("| workload | ranks | runs | AU mean | AU std | AU min | wait fraction | asked per rank | delivered per rank |")
print("|---|---|---|---|---|---|---|---|---|")
series = {}
for w in order:
    for (gw, np_), rs in sorted(g.items(), key=lambda kv: kv[0][1]):
        if gw != w:
            continue
        au = [r["ferry"]["au"] for r in rs]
        wf = [r["ferry"]["wait_fraction"] for r in rs]
        f = rs[0]["ferry"]
        sample = f["bytes"] / f["samples"] if f["samples"] else 0
        asked = rs[0]["batch"] * sample / (rs[0]["compute_ms"] / 1e3)
        got = statistics.mean(r["ferry"]["bytes_per_s"] for r in rs) / np_
        sd = statistics.stdev(au) if len(au) > 1 else 0.0
        series.setdefault(w, []).append((np_, statistics.mean(au), sd))
        print("| %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f GB/s | %.2f GB/s |" % (
            w, np_, len(rs), statistics.mean(au), sd, min(au), statistics.mean(wf),
            asked / 1e9, got / 1e9))

if png:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, w in enumerate(order):
        if w not in series:
            continue
        pts = sorted(series[w])
        x = [p[0] * (1 + 0.04 * (k - 1)) for p in pts]  # side by side
        line = ax.errorbar(x, [p[1] for p in pts], yerr=[p[2] for p in pts],
                           fmt="o-", capsize=3, label=label[w])
        ax.axhline(target[w], color=line[0].get_color(), ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4])
    ax.set_xticklabels(["1", "2", "4"])
    ax.set_xlabel("MPI ranks (one emulated accelerator each)")
    ax.set_ylabel("AU (mean of runs, ±1 sd)")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower left", fontsize=7)
    ax.set_title("ferry bench --compute-ms, MLPerf Storage workloads, 2-core machine "
                 "(dotted: targets)", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print()
    print("wrote", png)
