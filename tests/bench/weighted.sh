#!/bin/sh
# weighted.sh - weighted and class-balanced sampling against shuffle=chunks
# and PyTorch's WeightedRandomSampler, for docs/performance.md
# ("Sampling", issue 17).
#
# usage: tests/bench/weighted.sh BUILD_DIR WORK_DIR [SIZE] [TORCH_SECONDS]
#
# The .npy benchmark data of tests/bench/npy.sh (1 KiB rows, `ferry gen`,
# SIZE default 2GiB; reused when WORK_DIR/data exists) plus, written by
# numpy, a weight per row (log-normal, one in ten zero) in WORK_DIR/w.npy
# and a label variable DATA/label.npy (int32, 10 classes of very different
# sizes); page cache warm; then in the same run, alternating (3 rounds),
# 2 ranks, batch 1024, draw_block auto (256 rows):
#   chunks    shuffle=chunks, shuffle_buffer=4 (the reference)
#   weighted  weights=w.npy (with replacement, N draws per epoch)
#   norep     weights=w.npy, replacement=no
#   balanced  balance=label
# and PyTorch: WeightedRandomSampler + DataLoader reading rows one by one
# (2 processes, num_workers=0, tests/bench/torch_peer.py; skipped without
# torch).  Prints the ratios weighted/chunks and weighted/torch (bytes/s);
# results in WORK_DIR/weighted.jsonl.  COLD=1 adds the cold-file rounds
# (below).
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-2GiB}
tsec=${4:-20}
ferry="$build/ferry"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
data="$work/data"
out="$work/weighted.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"
if ! test -f "$data/samples.npy"; then
  rm -rf "$data"
  "$ferry" gen "$data" --size "$size" --var samples:float32:256
fi
file="$data/samples.npy"
$py - "$file" "$work/w.npy" "$data/label.npy" <<'PY'
import sys, numpy as np
n = np.load(sys.argv[1], mmap_mode="r").shape[0]
rng = np.random.default_rng(7)
w = rng.lognormal(0.0, 1.0, n).astype(np.float32)
w[rng.random(n) < 0.1] = 0
np.save(sys.argv[2], w)
p = np.array([0.5, 0.2, 0.1, 0.08, 0.05, 0.03, 0.02, 0.01, 0.007, 0.003])
np.save(sys.argv[3], rng.choice(10, size=n, p=p / p.sum()).astype(np.int32))
PY
cat "$file" > /dev/null   # page cache warm

run() { # label options...
  label=$1; shift
  j=$($mpirun -np 2 "$ferry" bench "$data" --vars samples --epochs 2 \
      --batch-size 1024 --shuffle-buffer 4 --seed 1 \
      --device cpu --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"ferry\":$j}" >> "$out"
  echo "$label: $(echo "$j" | $py -c 'import json,sys; d=json.load(sys.stdin); print("%.1f MiB/s" % (d["bytes_per_s"]/2**20))')"
}
for i in 1 2 3; do
  run chunks --shuffle chunks
  run weighted --weights "$work/w.npy"
  run norep --weights "$work/w.npy" --replacement no
  run balanced --balance label
done

# torch_run KIND: the PyTorch peer on 2 processes, its samples/s summed.
torch_run() {
  for r in 0 1; do
    $py "$here/torch_peer.py" "$file" $r 2 1024 0 "$tsec" "$work/w.npy" > "$work/torch.$r" &
  done
  wait
  cat "$work"/torch.0 "$work"/torch.1 | $py -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
sps = sum(r["samples"] / r["seconds"] for r in rows)
print(json.dumps({"kind": sys.argv[1], "samples_per_s": sps, "bytes_per_s": sps * 1024}))' "$1" | tee -a "$out"
}

# COLD=1: the same again with the file's pages evicted before every reader
# (`dd iflag=nocache count=0`: POSIX_FADV_DONTNEED on this one file, not the
# machine's cache), one epoch each, and the PyTorch peer cold too.
if test "${COLD:-0}" = 1; then
  evict() { dd if="$file" iflag=nocache count=0 2>/dev/null; }
  cold() { # label options...
    label=$1; shift
    evict
    j=$($mpirun -np 2 "$ferry" bench "$data" --vars samples --epochs 1 \
        --batch-size 1024 --shuffle-buffer 4 --seed 1 --device cpu --json "$@" | tail -1)
    echo "{\"kind\":\"$label\",\"ferry\":$j}" >> "$out"
    echo "$label: $(echo "$j" | $py -c 'import json,sys; d=json.load(sys.stdin); print("%.1f MiB/s" % (d["bytes_per_s"]/2**20))')"
  }
  for i in 1 2 3; do
    cold cold_chunks --shuffle chunks
    cold cold_weighted --weights "$work/w.npy"
    cold cold_weighted64 --weights "$work/w.npy" --draw-block 64
  done
  if $py -c 'import torch' >/dev/null 2>&1; then
    evict
    torch_run cold_torch
  fi
fi

if $py -c 'import torch' >/dev/null 2>&1; then
  echo "== torch WeightedRandomSampler + DataLoader (2 processes, num_workers=0, $tsec s)"
  torch_run torch
else
  echo "skip torch: $py has no torch"
fi

$py - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def bps(kind):
    v = [r["ferry"]["bytes_per_s"] for r in rows if r["kind"] == kind]
    return sorted(v)[len(v) // 2] if v else None
med = {k: bps(k) for k in ("chunks", "weighted", "norep", "balanced")}
for k, v in med.items():
    print("%-9s median %8.1f MiB/s" % (k, (v or 0) / 2**20))
for k in ("weighted", "norep", "balanced"):
    print("%s/chunks (2 ranks, median of 3): %.2f" % (k, med[k] / med["chunks"]))
t = [r for r in rows if r["kind"] == "torch"]
if t:
    print("weighted/torch: %.1f" % (med["weighted"] / t[0]["bytes_per_s"]))
cold = {k: bps(k) for k in ("cold_chunks", "cold_weighted", "cold_weighted64")}
if cold["cold_chunks"]:
    for k in ("cold_weighted", "cold_weighted64"):
        print("%s/cold_chunks (median of 3): %.2f" % (k, cold[k] / cold["cold_chunks"]))
    ct = [r for r in rows if r["kind"] == "cold_torch"]
    if ct:
        print("cold_weighted/cold_torch: %.1f" % (cold["cold_weighted"] / ct[0]["bytes_per_s"]))
PY
