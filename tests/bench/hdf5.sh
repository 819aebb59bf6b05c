#!/bin/sh
# hdf5.sh - the HDF5 benchmark of docs/performance.md (issue: parallel HDF5).
#
# usage: tests/bench/hdf5.sh BUILD_DIR WORK_DIR [SIZE]
#
# Uses (or writes) the .npy benchmark's dataset, WORK_DIR/data (SIZE,
# default 2GiB, of 1 KiB float32 rows), copies it with h5py into
# WORK_DIR/h5/samples.h5 (uncompressed, chunks of 1024 rows = 1 MiB) and the
# WORK_DIR/h5/gzip1.h5 (a quarter as many rows of random normal floats,
# shuffle + gzip level 1, same chunks), warms the page cache, then measures in the same run:
#   npy/hdf5   ferry bench on the .npy and on the HDF5 file, interleaved,
#              3 runs each, io=independent and io=collective (2 ranks,
#              shuffle=chunks, shuffle_buffer=4, batch 1024, 2 epochs)
#   gzip       ferry bench on gzip1.h5: bytes served per second is the
#              decompression rate (2 ranks, io=independent)
#   h5py       2 processes of DataLoader + DistributedSampler reading rows
#              one by one through h5py, num_workers=0 and 1, 20 s each
# Results go to WORK_DIR/h5-results.jsonl and a table on stdout.
# Run it on a quiet machine: every line is a ratio of runs made together.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-2GiB}
ferry="$build/ferry"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work/h5"
work=$(cd "$work" && pwd)
out="$work/h5-results.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"

if ! test -f "$work/data/samples.npy"; then
  rm -rf "$work/data"
  "$ferry" gen "$work/data" --size "$size" --var samples:float32:256
fi
npy="$work/data/samples.npy"
h5="$work/h5/samples.h5"
gz="$work/h5/gzip1.h5"
if ! test -f "$h5" || ! test -f "$gz"; then
  echo "== writing $h5 and $gz with h5py"
  $py - "$npy" "$h5" "$gz" <<'PY'
import sys
import h5py
import numpy as np
a = np.load(sys.argv[1], mmap_mode="r")
step = 1 << 16
with h5py.File(sys.argv[2] + ".tmp", "w") as f:
    d = f.create_dataset("samples", shape=a.shape, dtype=a.dtype,
                         chunks=(1024, a.shape[1]))
    for i in range(0, a.shape[0], step):
        d[i:i + step] = a[i:i + step]
q = a.shape[0] // 4
with h5py.File(sys.argv[3] + ".tmp", "w") as f:
    d = f.create_dataset("samples", shape=(q, a.shape[1]), dtype=a.dtype,
                         chunks=(1024, a.shape[1]), compression="gzip",
                         compression_opts=1, shuffle=True)
    # Random normal floats: the generated rows compress 85:1, which would
    # flatter gzip; real training data compresses little.
    rng = np.random.default_rng(0)
    for i in range(0, q, step):
        n = min(step, q - i)
        d[i:i + n] = rng.standard_normal((n, a.shape[1]), dtype=np.float32)
PY
  mv "$h5.tmp" "$h5"
  mv "$gz.tmp" "$gz"
fi
cat "$npy" "$h5" "$gz" > /dev/null   # page cache warm
"$ferry" info "$h5" | grep -E '^(storage|chunks)'
"$ferry" info "$gz" | grep -E '^(storage|chunks)'

bench() { # label dataset extra-options...
  label=$1 ds=$2
  shift 2
  j=$($mpirun -np 2 "$ferry" bench "$ds" --epochs 2 --batch-size 1024 \
      --shuffle chunks --shuffle-buffer 4 --seed 1 --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"ferry\":$j}" >> "$out"
  echo "$label: $(echo "$j" | $py -c 'import json,sys; j=json.load(sys.stdin); print("%.2f GB/s, %.0f samples/s" % (j["bytes_per_s"]/1e9, j["samples_per_s"]))')"
}

for io in independent collective; do
  echo "== npy against hdf5, io=$io (interleaved, 3 runs each)"
  for i in 1 2 3; do
    bench "npy_$io" "$work/data" --io "$io"
    bench "h5_$io" "$h5" --io "$io"
  done
done
echo "== gzip level 1 + shuffle (decompression)"
for i in 1 2 3; do bench gzip "$gz" --io independent; done

for w in 0 1; do
  echo "== h5py + DataLoader + DistributedSampler (2 processes, num_workers=$w, 20 s)"
  for r in 0 1; do
    $py "$here/h5py_peer.py" "$h5" samples $r 2 256 $w 20 > "$work/h5py.$r" &
  done
  wait
  cat "$work"/h5py.0 "$work"/h5py.1 | $py -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
sps = sum(r["samples"] / r["seconds"] for r in rows)
print(json.dumps({"kind": "h5py", "workers": int(sys.argv[1]), "samples_per_s": sps}))' "$w" | tee -a "$out"
done

$py - "$out" "$gz" <<'PY'
import json, os, sys
import h5py
rows = [json.loads(l) for l in open(sys.argv[1])]
def runs(kind):
    return [r["ferry"] for r in rows if r["kind"] == kind]
print()
print("| measure | run 1 | run 2 | run 3 |")
print("|---|---|---|---|")
for io in ("independent", "collective"):
    n, h = runs("npy_" + io), runs("h5_" + io)
    print("| `.npy`, io=%s | %s |" % (io, " | ".join("%.2f GB/s" % (f["bytes_per_s"] / 1e9) for f in n)))
    print("| HDF5, io=%s | %s |" % (io, " | ".join("%.2f GB/s" % (f["bytes_per_s"] / 1e9) for f in h)))
    print("| HDF5 / `.npy`, io=%s | %s |" % (io, " | ".join("%.0f%%" % (100 * b["bytes_per_s"] / a["bytes_per_s"]) for a, b in zip(n, h))))
g = runs("gzip")
with h5py.File(sys.argv[2], "r") as f:
    d = f["samples"]
    ratio = d.size * d.dtype.itemsize / d.id.get_storage_size()
print("| gzip-1 + shuffle (ratio %.1f:1), decompressed bytes served | %s |" % (ratio, " | ".join("%.2f GB/s" % (f["bytes_per_s"] / 1e9) for f in g)))
best = max(runs("h5_independent") + runs("h5_collective"), key=lambda f: f["samples_per_s"])
for r in rows:
    if r["kind"] == "h5py":
        print("| h5py + DataLoader, 2 procs, num_workers=%d | %.0f samples/s; ferry HDF5 best %.0f samples/s = %.0fx |||" % (r["workers"], r["samples_per_s"], best["samples_per_s"], best["samples_per_s"] / r["samples_per_s"]))
PY
