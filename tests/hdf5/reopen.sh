#!/bin/sh
# reopen.sh - after any failed allocation in the open or the epoch of one
# HDF5 dataset, the same process opens and reads another HDF5 dataset.
# Pins the leak of the process-wide HDF5/netCDF library lock: the hdf5
# backend's io_open returned after a failed calloc with the lock held, so
# the next HDF5 call of the process (the second open) blocked for ever.
#
# tests/hdf5/test_reopen (public API, linked against libferry.so) runs under
# the LD_PRELOAD shim tests/unit/failmalloc.c: for every N from 1 to the
# number of libferry allocations the first dataset's open and epoch make,
# the N-th fails; the second dataset must then be read whole (300 samples)
# within the timeout.  At least one N must make the first open fail, so a
# shim that never fires is noticed.
#
# Exit 0 pass, 1 fail, 77 skip (no hdf5 backend, no h5py, no shim).
shim="$top_builddir/tests/unit/.libs/libfailmalloc.so"
prog="$top_builddir/tests/hdf5/.libs/test_reopen"
test -x "$prog" || prog="$top_builddir/tests/hdf5/test_reopen"
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
# check N: the run whose N-th allocation fails; prints "ran N", then
# "opened-failed N" when the first open failed and "FAIL: ..." when the
# second dataset was not read.
check() {
  out=`run $1`
  rc=$?
  echo "ran $1"
  case $out in *"open $tmp/a.h5"*) echo "opened-failed $1" ;; esac
  if test $rc -ne 0 || ! echo "$out" | grep '^second: 300 samples$' >/dev/null; then
    # The N-th allocation may be the second dataset's own: then its open
    # fails with the out-of-memory message, which is right; only a hang
    # (124/137) or a crash, or a second open failing for another reason, fails.
    case $rc in
      124|137) echo "FAIL: allocation $1 failed: the second open hung (timeout)" ;;
      1) echo "$out" | grep "open $tmp/b.h5: .*out of memory\|read $tmp/b.h5: .*out of memory\|options for $tmp/b.h5: out of memory" >/dev/null ||
           { echo "FAIL: allocation $1 failed: the second dataset was not read:"; echo "$out" | sed 's/^/    /'; } ;;
      *) echo "FAIL: allocation $1 failed: exit $rc:"; echo "$out" | sed 's/^/    /' ;;
    esac
  fi
}
# Every N from 1 to $total, in $lanes lanes at once (lane k takes N = k,
# k + lanes, ...): each run is a process of its own, mostly MPI start-up
# (a singleton's MPI_Init) and waiting, so four lanes take about a quarter
# of the time of one on two cores and check the same N.
lanes=${FERRY_TEST_LANES:-4}
k=1
while test $k -le $lanes; do
  (
    # this lane's MPI programs: an Open MPI session directory of their
    # own (lanes starting singletons at once raced on the test's)
    if test -n "${OMPI_MCA_orte_tmpdir_base:-}" &&
      d=`mktemp -d "$OMPI_MCA_orte_tmpdir_base/lane.XXXXXX"`; then
      OMPI_MCA_orte_tmpdir_base=$d
      export OMPI_MCA_orte_tmpdir_base
    fi
    n=$k
    while test $n -le $total; do
      check $n
      n=$((n + lanes))
    done
  ) >"$tmp/lane.$k" 2>&1 &
  k=$((k + 1))
done
wait
status=0
cat "$tmp"/lane.* >"$tmp/all"
grep '^FAIL\|^    ' "$tmp/all"
grep '^FAIL' "$tmp/all" >/dev/null && status=1
runs=`grep '^ran ' "$tmp/all" | sort -u | wc -l`
opened_failed=`grep -c '^opened-failed ' "$tmp/all"`
echo "$runs of $total runs in $lanes lanes; the first open failed in $opened_failed"
test "$runs" -eq "$total" || { echo "FAIL: $runs runs, not $total: a lane stopped early"; status=1; }
test $opened_failed -gt 0 || { echo "FAIL: no failed allocation made the first open fail"; status=1; }
exit $status
