#!/bin/sh
# reopen.sh - after any failed allocation in the open or the epoch of one
# HDF5 dataset, the same process opens and reads another HDF5 dataset.
# Pins the leak of the process-wide HDF5/netCDF library lock: the hdf5
# backend's io_open returned after a failed calloc with the lock held, so
# the next HDF5 call of the process (the second open) blocked for ever.
#
# tests/mpi/test_reopen (public API, linked against libferry.so) runs under
# the LD_PRELOAD shim tests/unit/failmalloc.c: for every N from 1 to the
# number of libferry allocations the first dataset's open and epoch make,
# the N-th fails; the second dataset must then be read whole (300 samples)
# within the timeout.  At least one N must make the first open fail, so a
# shim that never fires is noticed.
#
# Exit 0 pass, 1 fail, 77 skip (no hdf5 backend, no h5py, no shim).
shim="$top_builddir/tests/unit/.libs/libfailmalloc.so"
prog="$top_builddir/tests/mpi/.libs/test_reopen"
test -x "$prog" || prog="$top_builddir/tests/mpi/test_reopen"
test -f "$shim" || { echo "SKIP: $shim not built"; exit 77; }
case `uname -s` in Linux) ;; *) echo "SKIP: the shim needs glibc"; exit 77 ;; esac
"$top_builddir/ferry" --version 2>/dev/null | grep '^backends:.*hdf5' >/dev/null ||
  { echo "SKIP: ferry was built without the hdf5 backend"; exit 77; }
test -n "$PYTHON_NUMPY" && "$PYTHON_NUMPY" -c 'import h5py' 2>/dev/null ||
  { echo "SKIP: no Python with h5py to write the fixtures"; exit 77; }
LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/reopen.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' 0
"$PYTHON_NUMPY" -c "
import h5py, numpy as np
with h5py.File('$tmp/a.h5', 'w') as f:
    f.create_dataset('x', data=np.arange(2000, dtype=np.float32).reshape(500, 4), chunks=(64, 4))
with h5py.File('$tmp/b.h5', 'w') as f:
    f.create_dataset('x', data=np.arange(900, dtype=np.float32).reshape(300, 3), chunks=(50, 3))
" || exit 1

run() { # NTH: the output of one run
  LD_PRELOAD="$shim" FAILMALLOC_NTH=$1 FAILMALLOC_LOG=1 \
    ${TIMEOUT:-timeout} 20 "$prog" "$tmp/a.h5" "$tmp/b.h5" 2>&1
}
# The allocations of the first dataset's open and epoch: counted in a run
# whose second dataset does not exist (its failed open adds a few).
total=`LD_PRELOAD="$shim" FAILMALLOC_NTH=1000000000 FAILMALLOC_LOG=1 \
  ${TIMEOUT:-timeout} 20 "$prog" "$tmp/a.h5" "$tmp/none.h5" 2>&1 |
  sed -n "s/^failmalloc: \\([0-9]*\\) allocations counted$/\\1/p" | sort -n | tail -n 1`
test -n "$total" && test "$total" -gt 0 || { echo "FAIL: the shim counted no allocation"; exit 1; }
echo "libferry allocations of the first dataset (open, one epoch): $total"
status=0 opened_failed=0 n=1
while test $n -le $total; do
  out=`run $n`
  rc=$?
  case $out in *"open $tmp/a.h5"*) opened_failed=$((opened_failed + 1)) ;; esac
  if test $rc -ne 0 || ! echo "$out" | grep '^second: 300 samples$' >/dev/null; then
    # The N-th allocation may be the second dataset's own: then its open
    # fails with the out-of-memory message, which is right; only a hang
    # (124/137) or a crash, or a second open failing for another reason, fails.
    case $rc in
      124|137) echo "FAIL: allocation $n failed: the second open hung (timeout)"; status=1 ;;
      1) echo "$out" | grep "open $tmp/b.h5: .*out of memory\|read $tmp/b.h5: .*out of memory\|options for $tmp/b.h5: out of memory" >/dev/null ||
           { echo "FAIL: allocation $n failed: the second dataset was not read:"; echo "$out" | sed 's/^/    /'; status=1; } ;;
      *) echo "FAIL: allocation $n failed: exit $rc:"; echo "$out" | sed 's/^/    /'; status=1 ;;
    esac
  fi
  n=$((n + 1))
done
echo "$total runs; the first open failed in $opened_failed"
test $opened_failed -gt 0 || { echo "FAIL: no failed allocation made the first open fail"; status=1; }
exit $status
