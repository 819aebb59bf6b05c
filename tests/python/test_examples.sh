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
exit $status
