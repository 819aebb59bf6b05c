#!/bin/sh
# roff_map.sh - a saved manifest's ragged offsets mapped, not held
# (core/roffmap.c, docs/ragged.md "At scale"): a `ferry gen` Megatron
# corpus read by a scan and through its saved manifest on 2 ranks serves
# the same batches, and a state taken with either resumes with the other
# (tests/python/roff_map_check.py).
. "$top_srcdir/tests/python/common.sh"
FERRY=${FERRY:-$top_builddir/ferry}
megatron_saved 3000 6
status=0
$RUN_MPI 2 "$PY" "$pydir/roff_map_check.py" "$tmp/c" "$tmp/m.json" \
  >"$tmp/out" 2>&1 || { echo "FAIL: roff_map_check.py on 2 ranks"; status=1; }
cat "$tmp/out"
exit $status
