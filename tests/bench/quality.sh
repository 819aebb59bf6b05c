#!/bin/sh
# quality.sh - the shuffle-quality table and plot of docs/shuffling.md
# (issue 16).
#
# usage: tests/bench/quality.sh BUILD_DIR WORK_DIR [N [RANKS]]
#
# Writes WORK_DIR/sorted/{x,label}.npy with numpy: N rows (default 262144)
# of 256 float32 values (1 KiB, as the .npy benchmark) and an int64 label
# of 10 classes SORTED by label (rows 0..N/10-1 are class 0, and so on), the
# normal case of scientific files sorted by time, run or label.  Then
# `ferry quality --json --label label --epochs 3 --world-size RANKS`
# (default 4 ranks, batch_size 256, seed 0) for shuffle=none, chunks with
# shuffle_buffer 1, 4, 16, 64, block with block_size 1024, 256, 64, and
# global with exchange 1, 0.5, 0.1
# (shuffle_buffer 4), chunk_samples automatic.  Nothing but the label is
# read, so timing does not matter and the machine's load does not either:
# the numbers are exact functions of the plan.  Results:
# WORK_DIR/quality-results.jsonl, a Markdown table on stdout, and
# WORK_DIR/shuffle-quality.png (copy it to docs/).
set -eu
build=$(cd "$1" && pwd)
work=$2
n=${3:-262144}
ranks=${4:-4}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/quality-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
"$py" -c 'import matplotlib' 2>/dev/null || {
  echo "quality.sh: needs python3-matplotlib (apt-get install python3-matplotlib)" >&2
  exit 1
}

mkdir -p "$work/sorted"
"$py" - "$work/sorted" "$n" <<'PY'
import sys
import numpy as np
d, n = sys.argv[1], int(sys.argv[2])
np.save(f"{d}/x.npy", np.arange(n * 256, dtype=np.float32).reshape(n, 256))
np.save(f"{d}/label.npy", (np.arange(n) * 10 // n).astype(np.int64))
PY

run() { # name, options...
  name=$1
  shift
  "$ferry" quality "$work/sorted" --json --label label --epochs 3 \
    --world-size "$ranks" --batch-size 256 "$@" >"$work/q.json"
  # the chunk size a job of $ranks ranks gets (info runs on as many)
  cs=$(mpirun --oversubscribe -np "$ranks" "$ferry" info "$work/sorted" --json --batch-size 256 "$@" | "$py" -c \
    'import json, sys; print(json.load(sys.stdin)["chunk_samples"])')
  printf '{"config": "%s", "chunk_samples": %s, "report": %s}\n' "$name" "$cs" \
    "$(cat "$work/q.json")" >>"$out"
}
run "none" --shuffle none
for sb in 1 4 16 64; do
  run "chunks, shuffle_buffer $sb" --shuffle chunks --shuffle-buffer "$sb"
done
for bs in 1024 256 64; do
  run "block, block_size $bs" --shuffle block --block-size "$bs"
done
for q in 1 0.5 0.1; do
  run "global, exchange $q" --shuffle global --exchange "$q"
done

"$py" - "$out" "$work/shuffle-quality.png" <<'PY'
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(line) for line in open(sys.argv[1])]
keys = [
    ("chunks_per_batch_mean", "chunks/batch", "{:.1f}"),
    ("same_rank_next_epoch", "same rank", "{:.3f}"),
    ("pairs_together_again", "pairs again", "{:.4f}"),
    ("displacement", "displacement", "{:.3f}"),
    ("kendall_tau", "Kendall tau", "{:.3f}"),
    ("label_kl", "label KL (nats)", "{:.3f}"),
]
r0 = rows[0]["report"]
print(f"{r0['samples']} samples sorted by label (10 classes), "
      f"{r0['world_size']} ranks, batch_size {r0['batch_size']}, "
      f"epochs 0..{r0['epochs'] - 1}\n")
print("| order | " + " | ".join(k[1] for k in keys) + " |")
# chunks/batch: plan (ideal with the same chunks)
print("|---" * (len(keys) + 1) + "|")
def cell(m, k):
    v = k[2].format(m[k[0]]["plan"])
    if k[0] == "chunks_per_batch_mean":  # the ideal's depends on the chunks
        v += " (" + k[2].format(m[k[0]]["ideal"]) + ")"
    return v
for r in rows:
    m = r["report"]["measures"]
    print(f"| {r['config']} (chunk_samples {r['chunk_samples']}) | " +
          " | ".join(cell(m, k) for k in keys) + " |")
m = rows[0]["report"]["measures"]
print("| ideal uniform permutation | " + " | ".join(
    k[2].format(m[k[0]]["ideal"]) for k in keys) + " |")

fig, axes = plt.subplots(2, 3, figsize=(10, 5.6))
names = [r["config"] for r in rows]
for ax, (key, label, _) in zip(axes.flat, keys):
    vals = [r["report"]["measures"][key]["plan"] for r in rows]
    ideal = [r["report"]["measures"][key]["ideal"] for r in rows]
    ax.barh(range(len(rows)), vals, color="tab:blue")
    # the ideal of each row: the same slots (and chunks) uniformly permuted
    ax.scatter(ideal, range(len(rows)), color="tab:red", marker="|", s=160,
               zorder=3, label="ideal")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names if ax in axes[:, 0] else [], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(label, fontsize=9)
    if key == "chunks_per_batch_mean":
        ax.set_xscale("log")
    ax.tick_params(axis="x", labelsize=7)
axes.flat[0].legend(fontsize=7)
fig.suptitle("shuffle quality on a label-sorted dataset "
             f"({r0['samples']} samples, {r0['world_size']} ranks, "
             f"batch {r0['batch_size']}); red: the ideal uniform permutation",
             fontsize=9)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print("\nwrote", sys.argv[2])
PY
