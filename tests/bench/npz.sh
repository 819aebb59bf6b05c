#!/bin/sh
# npz.sh - the .npz benchmark of docs/performance.md (issue 14).
#
# usage: tests/bench/npz.sh BUILD_DIR WORK_DIR [SIZE [RUNS]]
#
# The rows of the .npy benchmark (`ferry gen`: float32 rows of 256 values,
# 1 KiB, SIZE bytes, default 256MiB) as samples.npy, and the same array
# written by numpy.savez (a stored member) and numpy.savez_compressed (a
# deflated member, zlib level 6: these synthetic rows compress 3.4:1), and
# "pixels" rows (integers 0..255 drawn uniformly, stored as float32, as
# image data often is before normalisation; 2.6:1) savez_compressed.  With
# the page
# cache warm, RUNS times (default 3), in the same loop iteration:
#   npy          mpirun -np 2 ferry bench samples.npy, shuffle=chunks,
#                shuffle_buffer 4, chunk_samples 1024, batch 1024, 4 epochs
#   npz-stored   the same on the stored archive
#   npz-deflate  the same on the deflated archive, with chunk_samples 0
#                (automatic: chunks start on the inflate checkpoints) and
#                1024 (reads start between checkpoints)
#   pixels       the deflated pixels archive, chunk_samples 0
# NPZ_BENCH_STORED_ONLY=yes runs only npy and npz-stored (more rounds in
# the same time).  Results: WORK_DIR/npz-results.jsonl, and per run on stdout the bytes/s
# (served bytes over the slowest rank's time) and the served bytes per CPU
# second (user + system of mpirun and its ranks, start-up included: less
# sensitive to the share of a loaded machine a job gets), each with its
# ratio to .npy in the same run.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-256MiB}
runs=${4:-3}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/npz-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"

if ! test -f "$work/npy/samples.npy"; then
  rm -rf "$work/npy"
  "$ferry" gen "$work/npy" --size "$size" --var samples:float32:256 >/dev/null
fi
$py - "$work" <<'EOF'
import os, sys
import numpy as np
work = sys.argv[1]
a = np.load(os.path.join(work, "npy", "samples.npy"), mmap_mode="r")
p = os.path.join(work, "stored.npz")
if not os.path.exists(p):
    np.savez(p, samples=a)
p = os.path.join(work, "deflate.npz")
if not os.path.exists(p):
    np.savez_compressed(p, samples=a)
p = os.path.join(work, "pixels.npz")
if not os.path.exists(p):
    rng = np.random.default_rng(0)
    px = rng.integers(0, 256, a.shape, dtype=np.uint8).astype(np.float32)
    np.savez_compressed(p, samples=px)
EOF
ls -l "$work"/*.npz "$work/npy/samples.npy"

run() { # label dataset chunk_samples
  j=$(/usr/bin/time -f '%U %S' -o "$work/cpu.txt" \
    $mpirun -np 2 "$ferry" bench "$2" --epochs 4 --batch-size 1024 \
    --shuffle chunks --shuffle-buffer 4 --seed 1 --chunk-samples "$3" \
    --json | tail -1)
  cpu=$(tail -1 "$work/cpu.txt" | awk '{print $1 + $2}')
  echo "{\"kind\":\"$1\",\"run\":$i,\"chunk_samples\":$3,\"cpu_s\":$cpu,\"ferry\":$j}" >>"$out"
}

i=1
while test $i -le "$runs"; do
  for f in "$work/npy/samples.npy" "$work"/*.npz; do cat "$f" >/dev/null; done
  run npy "$work/npy/samples.npy" 1024
  run npz-stored "$work/stored.npz" 1024
  if test "${NPZ_BENCH_STORED_ONLY:-no}" = no; then
    run npz-deflate "$work/deflate.npz" 0
    run npz-deflate "$work/deflate.npz" 1024
    run pixels-deflate "$work/pixels.npz" 0
  fi
  i=$((i + 1))
done

$py - "$out" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
runs = sorted({r["run"] for r in rs})
cols = [("npz-stored", None), ("npz-deflate", 0), ("npz-deflate", 1024),
        ("pixels-deflate", None)]
print("columns: npy, stored (chunk 1024), deflate (auto chunks), deflate "
      "(chunk 1024), pixels deflate (auto chunks); ratio to npy in brackets")
for what, f in (("GB/s", lambda r: r["ferry"]["bytes_per_s"] / 1e9),
                ("GB per CPU s", lambda r: r["ferry"]["bytes"] / r["cpu_s"] / 1e9)):
    print(what)
    for k in runs:
        row = [r for r in rs if r["run"] == k]
        def g(kind, cs=None):
            for r in row:
                if r["kind"] == kind and (cs is None or r["chunk_samples"] == cs):
                    return f(r)
            return float("nan")
        n = g("npy")
        print("  run %d: %.2f  " % (k, n) +
              "  ".join("%.2f (%.2fx)" % (g(*c), g(*c) / n) for c in cols))
EOF
