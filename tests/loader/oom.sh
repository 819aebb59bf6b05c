#!/bin/sh
# oom.sh - out of memory, everywhere ferry allocates.  The LD_PRELOAD shim
# tests/unit/failmalloc.c makes the N-th allocation made directly by
# libferry fail (MPI, HDF5, the codecs and libc keep working), and this
# test runs `ferry bench` for every N from 1 to the number of allocations
# the run makes (a stride keeps it short), on datasets of every backend:
#
#  - one process: the run must end (no crash, no hang under the timeout);
#    when it fails, its message says "out of memory: <N> bytes for <what>"
#    (docs/design/errors.md, "Out of memory"); a failure the library absorbs (an
#    optional cache) must still give a correct run;
#  - 2 ranks, only rank 1 short of memory: every rank must end, with the
#    error, and none may wait for rank 1 in a collective call.
#
# Counts are printed so that a shim that never fires is noticed: at least
# one run of each dataset must fail.
shim="$top_builddir/tests/unit/.libs/libfailmalloc.so"
test -f "$shim" || { echo "SKIP: $shim not built"; exit 77; }
case `uname -s` in Linux) ;; *) echo "SKIP: the shim needs glibc"; exit 77 ;; esac
ferry="$top_builddir/.libs/ferry"
test -x "$ferry" || ferry="$top_builddir/ferry"
LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/oom.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' 0
corpus="$top_srcdir/tests/corpus/files"
py=${PYTHON:-/usr/bin/python3}
status=0
set -f # DATASET globs ('parts/part-*') are ferry's to expand

"$top_builddir/ferry" gen "$tmp/npy" --samples 3000 >/dev/null || exit 1
"$top_builddir/ferry" gen "$tmp/parts" --samples 3000 --parts 3 >/dev/null || exit 1
sets="$tmp/npy $tmp/parts/part-*"
if "$py" -c 'import numpy' 2>/dev/null; then
  "$py" -c "
import numpy as np
np.savez_compressed('$tmp/d.npz', x=np.arange(4000, dtype=np.float32).reshape(1000, 4),
                    y=np.arange(1000, dtype=np.int64))" && sets="$sets $tmp/d.npz"
fi
for f in zarrs/v2/array_blosc_C.zarr zarrs/v3_zarr_python/array_zstd.zarr \
         netcdf-c/nctest/ref_nctest_classic.nc jhdf/float_special_values_latest.hdf5; do
  test -e "$corpus/$f" && sets="$sets $corpus/$f"
done

bench() { # DATASET: ferry bench's arguments
  echo "$1" --epochs 1 --batch-size 4 --zarr-reader native
}

# The number of libferry allocations a run makes (the shim counts them).
count_allocs() {
  LD_PRELOAD="$shim" FAILMALLOC_NTH=1000000000 FAILMALLOC_LOG=1 \
    timeout 60 "$ferry" bench `bench "$1"` 2>&1 >/dev/null |
    sed -n 's/^failmalloc: \([0-9]*\) allocations counted$/\1/p' | sort -n |
    tail -n 1 # the largest: MPI's helper processes count none
}

# one_set DATASET: every step-th allocation of a bench of DATASET fails in
# turn; status 1 when a run crashed, hung or said something else.
one_set() {
  d=$1
  name=`echo "$d" | sed "s|$tmp/||; s|$corpus/||"`
  total=`count_allocs "$d"`
  if test -z "$total" || test "$total" -lt 1; then
    echo "FAIL: $name: the shim counted no allocation"; return 1
  fi
  step=$(( (total + 23) / 24 ))
  failed=0 absorbed=0 bad=0
  n=1
  while test $n -le "$total"; do
    out=`LD_PRELOAD="$shim" FAILMALLOC_NTH=$n FAILMALLOC_LOG=1 \
         timeout 60 "$ferry" bench \`bench "$d"\` 2>&1`
    rc=$?
    if test $rc -ge 124; then
      echo "FAIL: $name: allocation $n: status $rc (crash or hang)"
      echo "$out" | grep -v '^failmalloc: [0-9]* alloc' | tail -n 5 | sed 's/^/    /'
      bad=$((bad + 1))
    elif test $rc -ne 0; then
      failed=$((failed + 1))
      if ! echo "$out" | grep -q 'out of memory: [0-9][0-9]* bytes for '; then
        echo "FAIL: $name: allocation $n: the error does not name the size:"
        echo "$out" | grep -v '^failmalloc' | grep -i 'ferry' | head -n 2 | sed 's/^/    /'
        bad=$((bad + 1))
      fi
    elif echo "$out" | grep -q '^failmalloc: allocation'; then
      absorbed=$((absorbed + 1)) # the run went on: it must still be whole
      if ! echo "$out" | grep -q '^total:'; then
        echo "FAIL: $name: allocation $n failed, status 0 without a report"
        bad=$((bad + 1))
      fi
    fi
    n=$((n + step))
  done
  echo "$name: $total allocations, every ${step}th failed in turn: $failed runs failed with the message, $absorbed absorbed, $bad bad"
  test "$failed" -gt 0 || { echo "FAIL: $name: no run failed"; return 1; }
  test "$bad" = 0
}
# two_ranks: rank 1 alone out of memory: nobody waits for it.
two_ranks() {
status=0
d="$tmp/npy"
total=`count_allocs "$d"`
step=$(( (total + 15) / 16 ))
n=1 ended=0
while test $n -le "$total"; do
  out=`FERRY_MPI_TIMEOUT=60 $RUN_MPI 2 env LD_PRELOAD="$shim" FAILMALLOC_NTH=$n \
       FAILMALLOC_RANK=1 FAILMALLOC_LOG=1 "$ferry" bench \`bench "$d"\` 2>&1`
  rc=$?
  if test $rc -ge 124; then
    echo "FAIL: 2 ranks, allocation $n of rank 1: status $rc (hang or crash)"
    echo "$out" | grep -v '^failmalloc: [0-9]* alloc' | tail -n 5 | sed 's/^/    /'
    status=1
  elif echo "$out" | grep -q '^failmalloc: allocation'; then
    if test $rc -ne 0 && ! echo "$out" | grep -q 'out of memory'; then
      echo "FAIL: 2 ranks, allocation $n of rank 1: status $rc without the error"
      status=1
    fi
    ended=$((ended + 1))
  fi
  n=$((n + step))
done
echo "2 ranks: $ended runs where rank 1 ran out of memory, every one ended"
test "$ended" -gt 0 || { echo "FAIL: rank 1 never ran out of memory"; status=1; }
return $status
}
# The datasets, and the 2-rank runs, in lanes at once (each run is a
# process of its own, mostly start-up and waiting): the same runs as one
# after the other, the lanes' reports printed in order.
lanes=${FERRY_TEST_LANES:-4}
i=0
for d in $sets; do
  i=$((i + 1))
  echo "$d" >"$tmp/set.$i"
done
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
    st=0
    j=$k
    while test -f "$tmp/set.$j"; do
      one_set "`cat "$tmp/set.$j"`" || st=1
      j=$((j + lanes))
    done
    test $k = $lanes && { two_ranks || st=1; }
    exit $st
  ) >"$tmp/lane.$k" 2>&1 &
  eval "pid_$k=\$!"
  k=$((k + 1))
done
k=1
while test $k -le $lanes; do
  eval "wait \$pid_$k" || status=1
  cat "$tmp/lane.$k"
  k=$((k + 1))
done
exit $status
