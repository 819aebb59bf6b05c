#!/bin/sh
# weights.sh - the per-sample weights of weighted and class-balanced
# sampling (src/loader/weights.c) on 1 and 3 ranks: tests/sampling/test_weights
# loads every case of tests/fixtures/make_weights.py (weight variables of
# every dtype in an .npy dataset directory, in a dataset of two parts and
# in an HDF5 file, an .npz, Zarr v2 and v3 stores and a netCDF classic
# file, each when built; weights and labels .npy files; int32, uint8, int16 and
# int64 labels with and without balance_shares) and compares the weights
# with NumPy's, and the hash across ranks; every bad input (negative, NaN,
# infinite or all-zero weights, a wrong length, rows of several values, a
# missing variable, float or bool labels, balance_shares that do not parse,
# name an absent label, give a negative or NaN share or leave every class
# at 0, weights with balance) gives the same code and message on every
# rank, without hanging (run-mpi.sh's time limit).
#
# Environment (set by "make check"; see tests/README.md): RUN_MPI,
# PYTHON_NUMPY, FERRY, FERRY_TEST_TMPDIR, top_builddir, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no NumPy).  The HDF5 cases need the hdf5
# backend and h5py; without them they are left out (said below).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init weights
prog="$top_builddir/tests/sampling/test_weights"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by NumPy"
  exit 77
fi
h5=
backends=`"$FERRY" --version 2>/dev/null | sed -n 's/^backends: //p'`
if "$FERRY" --version 2>/dev/null | grep '^backends:.* hdf5' >/dev/null &&
  "$PYTHON_NUMPY" -c 'import h5py' >/dev/null 2>&1; then
  h5=--hdf5
else
  echo "note: no hdf5 backend or no h5py: the HDF5 cases are left out"
fi
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_weights.py" "$tmp/fx" $h5 \
  "--backends=$backends" ||
  { echo "FAIL: make_weights.py"; exit 1; }
for n in 1 3; do
  $RUN_MPI $n "$prog" "$tmp/fx/jobs.txt" >"$tmp/out.$n" 2>&1 ||
    { echo "FAIL: test_weights on $n ranks"; fail=1; }
  cat "$tmp/out.$n"
done
# The same lines (what, or the error's message) whatever the rank count.
grep -v '^PASS\|^FAIL' "$tmp/out.1" >"$tmp/lines.1"
grep -v '^PASS\|^FAIL' "$tmp/out.3" >"$tmp/lines.3"
cmp -s "$tmp/lines.1" "$tmp/lines.3" ||
  { echo "FAIL: 1 and 3 ranks printed different lines:"; diff "$tmp/lines.1" "$tmp/lines.3"; fail=1; }
test -s "$tmp/lines.1" || { echo "FAIL: no case ran"; fail=1; }
exit $fail
