#!/bin/sh
# test_torch_front.sh - ferry.torch on 1 to 3 ranks (test_torch_front.py):
# every sample once per epoch through the Dataset and DataLoader(batch_size=
# None), len() exact and equal on every rank, zero copy, keys/transform,
# tail=pad, num_workers=2 refused clearly, a mid-epoch state_dict resumed
# exactly, a small model whose loss decreases.  Skips (77) without the
# extension, numpy, torch or mpi4py (tests/python/common.sh).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 1000 || exit 1
status=0
for np in 1 2 3; do
  $RUN_MPI $np "$PY" "$pydir/test_torch_front.py" "$tmp/data" 1000 ||
    { echo "FAIL: test_torch_front.py on $np ranks"; status=1; }
done
exit $status
