#!/bin/sh
# test_examples.sh - the examples/ scripts whose libraries exist, on 2 ranks,
# over data they make themselves; each prints one summary line.
. "$top_srcdir/tests/python/common.sh"
status=0
run() {
  $RUN_MPI 2 "$PY" "$top_srcdir/examples/$1" "$tmp/$2" >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  if test $rc -ne 0; then echo "FAIL: examples/$1 (status $rc)"; status=1; fi
}
run ddp_distributed_sampler.py npy
run scdataset_block_shuffle.py npy
run zarr_chunk_shuffle.py store.zarr
# the Lightning and JAX examples where their framework is installed (the GPU
# machine of tests/gpu/device.sh has both)
if "$PY" -c "import lightning" >/dev/null 2>&1 || "$PY" -c "import pytorch_lightning" >/dev/null 2>&1; then
  run lightning_datamodule.py parts
else
  echo "note: examples/lightning_datamodule.py not run: no Lightning for $PY"
fi
if "$PY" -c "import jax" >/dev/null 2>&1; then
  run jax_pmap.py npy2
else
  echo "note: examples/jax_pmap.py not run: no JAX for $PY"
fi
exit $status
