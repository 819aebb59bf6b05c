#!/bin/sh
# close.sh - issue 11's performance check: the vote in ferry_next's
# certification and the process-wide HDF5 mutex must not slow the common
# path.  Runs tests/bench/compare.sh (OLD and NEW builds interleaved in one
# session, 2 ranks) on a .npy dataset (batch 1024 and batch 32, which
# stresses ferry_next's per-batch path; independent and collective I/O) and
# on h5py copies of it (unfiltered: raw MPI-IO reads; gzip: H5Dread), and
# prints each median ratio NEW/OLD.
#
# usage: tests/bench/close.sh OLD_FERRY NEW_FERRY [DIR] [ROUNDS]
set -eu
old=$1 new=$2 dir=${3:-/tmp/close-bench} rounds=${4:-6}
here=$(dirname "$0")
if test ! -f "$dir/npy/x.npy"; then
  mkdir -p "$dir"
  "$new" gen "$dir/npy" --samples 2000000 --var x:float32:16 --var y:int64 >/dev/null
fi
if test ! -f "$dir/gz.h5"; then
  /usr/bin/python3 - "$dir" <<'PY'
import sys
import h5py
import numpy as np
d = sys.argv[1]
x = np.load(d + "/npy/x.npy", mmap_mode="r")
y = np.load(d + "/npy/y.npy", mmap_mode="r")
for name, comp in (("raw.h5", None), ("gz.h5", "gzip")):
    with h5py.File(d + "/" + name, "w") as f:
        f.create_dataset("x", data=x, chunks=(8192, 16), compression=comp)
        f.create_dataset("y", data=y, chunks=(8192,), compression=comp)
PY
fi
cmp() {
  printf '%-36s ' "$1"
  shift
  sh "$here/compare.sh" "$old" "$new" "$@" | tail -1
}
cmp "npy, batch 1024, independent" "$dir/npy" "$rounds"
cmp "npy, batch 32, independent" "$dir/npy" "$rounds" --batch-size 32
cmp "npy, batch 1024, collective" "$dir/npy" "$rounds" --io collective
cmp "HDF5 raw, independent" "$dir/raw.h5" "$rounds"
cmp "HDF5 raw, collective" "$dir/raw.h5" "$rounds" --io collective
cmp "HDF5 gzip, independent" "$dir/gz.h5" "$rounds"
cmp "HDF5 gzip, collective" "$dir/gz.h5" "$rounds" --io collective
