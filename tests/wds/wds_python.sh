#!/bin/sh
# wds_python.sh - WebDataset tar shards in Python (docs/images.md;
# tests/wds/wds_check.py on 1, 2 and 3 ranks): the shards of
# tests/wds/make_wds.py through ferry.Loader, every sample's .jpg and .json
# bytes and its .cls equal to the writer's, every sample once, equal batch
# counts, and a resume (saved on 1 or 2 ranks, resumed on 1, 2, 3).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$top_srcdir/tests/wds/make_wds.py" "$tmp/fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_wds.py"
  cat "$tmp/make.out"
  exit 1
}
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
status=0
for np in 1 2 3; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/wds/wds_check.py" "$tmp/fx" \
    "$tmp/state.$np" >"$tmp/out" 2>&1 ||
    { echo "FAIL: wds_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
