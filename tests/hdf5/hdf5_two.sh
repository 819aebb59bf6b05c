#!/bin/sh
# hdf5_two.sh - two loaders over HDF5 files in one process (training and
# validation), their I/O threads calling HDF5 at the same time: HDF5 is not
# thread-safe in Debian's parallel build, so src/backends/hdf5.c serialises
# its calls with a process-wide mutex that collective sections take on every
# rank at once (docs/design/backends.md).  tests/hdf5/test_two_loaders.c on
# 1, 2 and 3 ranks, io=independent and io=collective, one thread alternating
# ferry_next between the loaders and one thread per loader; every value is
# checked against the formula the h5py writer used, every sample served
# exactly once per epoch.  Gzip-compressed and contiguous datasets, so both
# H5Dread and the raw MPI-IO path run.  Each job under a hard timeout.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init hdf5_two
prog="$top_builddir/tests/hdf5/test_two_loaders"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* hdf5' >/dev/null; then
  echo "SKIP: this ferry has no hdf5 backend (configure did not find parallel HDF5)"
  exit 77
fi
if test -z "${PYTHON_NUMPY:-}" || ! "$PYTHON_NUMPY" -c 'import h5py' >/dev/null 2>&1; then
  echo "SKIP: no Python with NumPy and h5py (apt-get install python3-h5py): the fixtures are written by h5py"
  exit 77
fi
"$PYTHON_NUMPY" - "$tmp" <<'PYEOF' || { echo "FAIL: fixture writer"; exit 1; }
import sys
import h5py
import numpy as np
d = sys.argv[1]
for name, n, off, gz in (("train", 997, 0, "x"), ("val", 403, 100000, "y")):
    v = np.arange(n) + off
    x = np.stack([v, v + 0.5, -v], axis=1).astype(np.float32)
    y = (7 * v).astype(np.int64)
    with h5py.File("%s/%s.h5" % (d, name), "w") as f:
        f.create_dataset("x", data=x, chunks=(16, 3) if gz == "x" else None,
                         compression="gzip" if gz == "x" else None)
        f.create_dataset("y", data=y, chunks=(8,) if gz == "y" else None,
                         compression="gzip" if gz == "y" else None)
PYEOF
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-90}
export FERRY_MPI_TIMEOUT
status=0
for np in 1 2 3; do
  for io in independent collective; do
    for mode in interleave threads; do
      if $RUN_MPI $np "$prog" "$tmp/train.h5" "$tmp/val.h5" $io $mode >"$tmp/out" 2>&1; then
        echo "ok: $np ranks, io=$io, $mode"
      else
        echo "FAIL: $np ranks, io=$io, $mode"
        sed 's/^/    /' "$tmp/out" | head -20
        status=1
      fi
    done
  done
done
# The deadlock of the one-agreement lock (hdf5.c's h5_lock_all): loader
# A's collective section held the mutex on two ranks waiting for the third,
# where B's section held it waiting for those two, whose B was blocked on
# the mutex in its io_open.  It needs the loaders' ranks at different
# stages: with the old lock, 1 run in 45 hung on the idle machine (three
# such jobs at once) and 2 in 6 while other builds loaded it, so this
# catches it often, not always: 3 lanes of 8 runs, each bounded at 30 s.
stress_lane() {
  k=0
  while test $k -lt 8; do
    if ! FERRY_MPI_TIMEOUT=30 $RUN_MPI 3 "$prog" "$tmp/train.h5" "$tmp/val.h5" \
         collective threads >"$tmp/stress.$1" 2>&1; then
      grep -v '^#[0-9]' "$tmp/stress.$1" >"$tmp/stress.$1.short"
      failed "two loaders, 3 ranks, io=collective, threads, 3 jobs at once: lane $1 run $k hung or failed" \
        "$tmp/stress.$1.short"
      return
    fi
    k=$((k + 1))
  done
  ok "two loaders, 3 ranks, io=collective, threads, 3 jobs at once: lane $1, 8 runs, no hang"
}
in_lanes stress_lane 1 2 3
test "$fail" = 0 || status=1
exit $status
