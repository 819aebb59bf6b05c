#!/bin/sh
# global.sh - shuffle=global (issue 16) end to end.
#
#  - the pipeline's promises (tests/loader/test_loader.c run as
#    `test_loader global`, on the mem backend) on 1, 2, 3, 4 and 7 ranks:
#    every tail serves what it promises with equal batch counts, the same
#    batches for the same seed whatever threads/prefetch, an injected read
#    failure on the rank that reads the row is FERRY_EIO with the same
#    message on every rank, and no hang; `test_loader global 0.5` on 3
#    ranks with exchange=0.5; `test_loader global 1 collective` on 2, 4 and
#    7 ranks with io=collective;
#  - files written by numpy (and h5py, zarr-python when present), served by
#    `ferry dump --row-hash` on 1-4 and 7 ranks, checked against numpy's
#    rows by tests/fixtures/global_check.py (every sample as the tail says,
#    equal batch counts, each row's hash); threads=1 and threads=4 give the
#    same output byte for byte, and io=collective too (npy, HDF5);
#  - checkpoint mid-epoch on 3 ranks, resume on 3, 2 and 4
#    (`test_state DIR global`);
#  - the refusals: io=mmap with shuffle=global, exchange
#    without shuffle=global, exchange out of (0, 1].
#
# Environment (set by "make check"): FERRY, RUN_MPI, top_builddir,
# PYTHON_NUMPY, top_srcdir.  Exit 0 pass, 1 fail, 77 skip.
py_front=${FERRY_PYTHON:-} py_path=${FERRY_PYTHONPATH:-} # unset below
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init global

prog="${top_builddir:-.}/tests/loader/test_loader"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
for np in 1 2 3 4 7; do
  echo "== test_loader global, $np ranks"
  $RUN_MPI "$np" "$prog" global || {
    echo "FAIL: test_loader global with $np ranks"; fail=1; }
done
echo "== test_loader global 0.5, 3 ranks"
$RUN_MPI 3 "$prog" global 0.5 || {
  echo "FAIL: test_loader global 0.5 with 3 ranks"; fail=1; }
for np in 2 4 7; do
  echo "== test_loader global 1 collective, $np ranks"
  $RUN_MPI $np "$prog" global 1 collective || {
    echo "FAIL: test_loader global 1 collective with $np ranks"; fail=1; }
done

# Checkpoint and resume (tests/loader/test_state.c run as `test_state DIR
# global`): saved mid-epoch by 3 ranks, resumed by 3 (the very batches of
# the uninterrupted run), 2 and 4 (every sample not yet served, once).
sprog="${top_builddir:-.}/tests/loader/test_state"
if test -x "$sprog"; then
  echo "== test_state global, 4 ranks"
  $RUN_MPI 4 "$sprog" "$tmp" global || {
    echo "FAIL: test_state global"; fail=1; }
else
  echo "FAIL: $sprog not built"; fail=1
fi

# The Python front passes the options through by name (one rank).
if test -n "$py_front" && test -n "$py_path" &&
   PYTHONPATH=$py_path "$py_front" -c 'import ferry' >/dev/null 2>&1; then
  echo "== Python front"
  cat >"$tmp/front.py" <<'PY'
import ferry
L = ferry.Loader("mem:N=1001,vars=x:int32", batch_size=10, shuffle="global",
                 exchange=0.5, chunk_samples=20, shuffle_buffer=2)
L.set_epoch(0)
n = sum(1 for _ in L)
assert n == 100, n
print("python front: %d batches with shuffle=global, exchange=0.5" % n)
PY
  PYTHONPATH=$py_path $RUN_MPI 1 "$py_front" "$tmp/front.py" || {
    echo "FAIL: the Python front with shuffle=global"; fail=1; }
else
  echo "skip (Python front): no extension (FERRY_PYTHON/FERRY_PYTHONPATH)"
fi

# Refusals, on 2 ranks: the same clear message, no half-working mode.
refuse() { # refuse WANT OPTIONS...: ferry dump fails, saying WANT
  want=$1; shift
  if $RUN_MPI 2 "$FERRY" dump "mem:N=100,vars=x:int32" "$@" \
      >"$tmp/refuse.out" 2>&1; then
    echo "FAIL: ferry dump $* succeeded"; fail=1
  elif ! grep -q "$want" "$tmp/refuse.out"; then
    echo "FAIL: ferry dump $*: no '$want' in:"; cat "$tmp/refuse.out"; fail=1
  fi
}
refuse "io=independent or collective" --shuffle global --io mmap
refuse "applies only with shuffle=global" --exchange 0.5
refuse "exchange" --shuffle global --exchange 0
refuse "exchange" --shuffle global --exchange 1.5

if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP (files): no Python with NumPy (PYTHON_NUMPY is empty)"
  exit $fail
fi
"$PYTHON_NUMPY" - "$tmp" <<'PY' || { echo "FAIL: writing the fixtures"; exit 1; }
import sys
import numpy as np
d = sys.argv[1]
x = (np.arange(5003 * 3, dtype=np.float32).reshape(5003, 3) * 1.5 + 7)
np.save(d + "/x.npy", x)
try:
    import h5py
    with h5py.File(d + "/x.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(100, 3))
except ImportError:
    pass
try:
    import zarr
    z = zarr.open(d + "/x.zarr", mode="w", shape=x.shape, chunks=(100, 3),
                  dtype="f4")
    z[:] = x
except ImportError:
    pass
PY
check() { # check NP DATASET TAIL BATCH [OPTIONS...]
  c_np=$1 c_ds=$2 c_tail=$3 c_b=$4; shift 4
  c_out=$tmp/dump.$c_np.`basename $c_ds`.$c_tail.$c_b
  for t in 1 4; do
    $RUN_MPI "$c_np" "$FERRY" dump "$c_ds" --row-hash --shuffle global \
      --tail "$c_tail" --batch-size "$c_b" --chunk-samples 50 \
      --shuffle-buffer 2 --seed 7 --threads $t "$@" >"$c_out.$t" 2>&1 || {
      echo "FAIL: ferry dump $c_ds on $c_np ranks, tail=$c_tail threads=$t $*"
      cat "$c_out.$t"; fail=1; return; }
  done
  cmp -s "$c_out.1" "$c_out.4" || {
    echo "FAIL: $c_ds, $c_np ranks, tail=$c_tail: threads=1 and 4 differ"
    fail=1; }
  case $c_ds in *.zarr) ;; *) # io=collective: the very same batches
    $RUN_MPI "$c_np" "$FERRY" dump "$c_ds" --row-hash --shuffle global \
      --tail "$c_tail" --batch-size "$c_b" --chunk-samples 50 \
      --shuffle-buffer 2 --seed 7 --io collective "$@" >"$c_out.c" 2>&1 &&
    cmp -s "$c_out.1" "$c_out.c" || {
      echo "FAIL: $c_ds, $c_np ranks, tail=$c_tail: io=collective differs"
      head -3 "$c_out.c"; fail=1; } ;;
  esac
  "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/global_check.py" "$c_out.1" \
    "$tmp/x.npy" "$c_np" "$c_b" "$c_tail" || {
    echo "FAIL: $c_ds on $c_np ranks, tail=$c_tail batch=$c_b $*"; fail=1; }
}
for np in 1 2 3 4 7; do
  echo "== x.npy, $np ranks"
  check $np "$tmp/x.npy" drop_last 32
  check $np "$tmp/x.npy" pad 29
  check $np "$tmp/x.npy" partial 64 --exchange 0.3
done
if test -d "$tmp/x.h5" || test -f "$tmp/x.h5"; then
  if "$FERRY" --version 2>/dev/null | grep '^backends:.* hdf5' >/dev/null; then
    echo "== x.h5, 3 ranks"
    check 3 "$tmp/x.h5" pad 32
  else
    echo "skip (x.h5): this ferry has no hdf5 backend"
  fi
else
  echo "skip (x.h5): no h5py"
fi
if test -d "$tmp/x.zarr"; then
  if "$FERRY" --version 2>/dev/null | grep '^backends:.* zarr' >/dev/null; then
    echo "== x.zarr, 4 ranks"
    check 4 "$tmp/x.zarr" drop_last 16 --exchange 0.5
  else
    echo "skip (x.zarr): this ferry has no zarr backend"
  fi
else
  echo "skip (x.zarr): no zarr-python"
fi
exit $fail
