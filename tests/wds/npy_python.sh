#!/bin/sh
# npy_python.sh - WebDataset .npy members in Python (docs/images.md,
# decision 0062; tests/wds/npy_check.py on 1, 2 and 3 ranks): the shards of
# tests/wds/make_wds_npy.py through ferry.Loader, dense variables NumPy
# arrays of the arrays' shape, ragged ones ferry.Ragged, every sample equal
# to the writer's, every sample once, equal batch counts.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$top_srcdir/tests/wds/make_wds_npy.py" "$tmp/fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_wds_npy.py"
  cat "$tmp/make.out"
  exit 1
}
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
status=0
for np in 1 2 3; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/wds/npy_check.py" "$tmp/fx" \
    >"$tmp/out" 2>&1 || { echo "FAIL: npy_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
