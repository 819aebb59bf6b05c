#!/bin/sh
# ragged.sh - ragged variables in Python (docs/ragged.md;
# tests/python/ragged_check.py on 1 and 2 ranks): a Megatron corpus written
# by tests/fixtures/make_megatron.py, read through ferry.Loader (a
# ferry.Ragged of two zero-copy Arrays per batch) and ferry.torch (torch
# tensors; padded and nested forms), every sample's tokens equal to the
# writer's, every sample once, padded rows holding the pad value.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/c" --docs 70 \
  --empty 3 --seed 9 >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_megatron.py"
  cat "$tmp/make.out"
  exit 1
}
status=0
for np in 1 2; do
  $RUN_MPI $np "$PY" "$pydir/ragged_check.py" "$tmp/c" >"$tmp/out" 2>&1 ||
    { echo "FAIL: ragged_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
