#!/bin/sh
# test_gpu.sh - the Python front on a real GPU (tests/python/test_gpu.py) on
# 1 and 2 ranks; skips (77) without the extension, torch or a CUDA device
# (CI; tests/gpu/device.sh runs it on a GPU machine).
. "$top_srcdir/tests/python/common.sh"
# several ranks share one GPU here: JAX must not take 75% of it per process
XLA_PYTHON_CLIENT_PREALLOCATE=false
export XLA_PYTHON_CLIENT_PREALLOCATE
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  echo "SKIP: torch sees no CUDA device"
  exit 77
fi
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 20000 || exit 1
# a ragged variable (test_gpu.py's ragged section)
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/meg" --docs 300 \
  --empty 3 --seed 9 >/dev/null || exit 1
FERRY_TEST_MEGATRON=$tmp/meg
export FERRY_TEST_MEGATRON
status=0
for np in 1 2; do
  $RUN_MPI $np "$PY" "$pydir/test_gpu.py" "$tmp/data" 20000 ||
    { echo "FAIL: test_gpu.py on $np ranks"; status=1; }
done
exit $status
