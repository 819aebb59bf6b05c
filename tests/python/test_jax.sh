#!/bin/sh
# test_jax.sh - ferry.jax (tests/python/test_jax.py) on 2 ranks; skips (77)
# when jax is not installed for the configured Python.
. "$top_srcdir/tests/python/common.sh"
# several ranks share one GPU here: JAX must not take 75% of it per process
XLA_PYTHON_CLIENT_PREALLOCATE=false
export XLA_PYTHON_CLIENT_PREALLOCATE
need_module jax "the GPU machine has it"
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 1024 || exit 1
# a ragged variable (test_jax.py's last section)
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/meg" --docs 60 \
  --empty 2 --seed 5 >/dev/null || exit 1
FERRY_TEST_MEGATRON=$tmp/meg
export FERRY_TEST_MEGATRON
# an AnnData file (test_jax.py's AnnData section), where ferry has HDF5
if "$FERRY" gen "$tmp/cells.h5ad" --anndata --samples 300 --genes 40 \
     --seed 3 >/dev/null 2>&1; then
  FERRY_TEST_ANNDATA=$tmp/cells.h5ad
  export FERRY_TEST_ANNDATA
fi
$RUN_MPI 2 "$PY" "$pydir/test_jax.py" "$tmp/data" 1024
