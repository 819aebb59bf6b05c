#!/bin/sh
# loader.sh - the Python front on 1 to 4 ranks (tests/python/loader_check.py):
# every sample exactly once through numpy.from_dlpack and torch.from_dlpack,
# values against numpy's reads of the .npy files, equal len() on every
# rank, the same batches for the same seed, zero-copy, held tensors intact,
# the deleter on another thread, an mpi4py sub-communicator, the DLPack
# keywords and capsule kinds, a small torch model trained on the batches.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 1001 || exit 1
status=0
for np in 1 2 3 4; do
  $RUN_MPI $np "$PY" "$pydir/loader_check.py" "$tmp/data" 1001 ||
    { echo "FAIL: loader_check.py on $np ranks"; status=1; }
done
exit $status
