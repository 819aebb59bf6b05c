#!/bin/sh
# shrink.sh - a failed read of an HDF5 file gives the same clear error on
# every rank: an AnnData .h5ad (its CSR rows) and a plain HDF5 dataset,
# each read with the default independent I/O (raw reads by pread since
# the .h5ad work, hdf5.c raw_io), then cut short by rank 0 after the
# second batch (shrink_check.py): each rank of 1 and 2 must fail with
# ferry.IOFailure naming the short read, the file, the dataset and "the
# file shrank after it was opened?".  Skips (77) without the Python
# extension, mpi4py or h5py.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init shrink
"$FERRY" --version 2>/dev/null | grep '^backends:.*hdf5' >/dev/null ||
  { echo "SKIP: ferry was built without the hdf5 backend"; exit 77; }
test -n "${FERRY_PYTHON:-}" && test -n "${FERRY_PY_EXT:-}" &&
  test -f "$FERRY_PYTHONPATH/ferry/_ferry$FERRY_PY_EXT" &&
  "$FERRY_PYTHON" -c "import mpi4py, h5py" >/dev/null 2>&1 ||
  { echo "SKIP: the Python extension is not built here, or its Python lacks mpi4py or h5py"; exit 77; }
status=0
for np in 1 2; do
  for kind in h5ad h5; do
    f=$tmp/$kind.$np.$kind
    if test $kind = h5ad; then
      "$FERRY" gen "$f" --anndata --samples 3000 --genes 400 --density 0.1 \
        --seed 1 >/dev/null 2>&1 || { echo "FAIL: ferry gen --anndata"; exit 1; }
      vars=X/indices,X/data
    else
      "$FERRY_PYTHON" -c "
import h5py, numpy as np
with h5py.File('$f', 'w') as h:
    h['x'] = np.arange(3000 * 64, dtype=np.float32).reshape(3000, 64)
" || { echo "FAIL: h5py could not write $f"; exit 1; }
      vars=x
    fi
    if PYTHONPATH=$FERRY_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH} \
       PYTHONDONTWRITEBYTECODE=1 $RUN_MPI $np "$FERRY_PYTHON" \
         "$top_srcdir/tests/hdf5/shrink_check.py" "$f" "$vars" \
         >"$tmp/out" 2>&1 &&
       test "`grep -c '^rank [0-9]*: ok after' "$tmp/out"`" -eq $np; then
      echo "ok: $kind on $np ranks: `grep '^rank 0:' "$tmp/out" | cut -c1-160`"
    else
      echo "FAIL: $kind cut short on $np ranks"
      cat "$tmp/out"
      status=1
    fi
  done
done
exit $status
