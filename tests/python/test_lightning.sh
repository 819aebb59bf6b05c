#!/bin/sh
# test_lightning.sh - ferry.lightning (tests/python/test_lightning.py) on 2 ranks; skips (77)
# when lightning is not installed for the configured Python.
. "$top_srcdir/tests/python/common.sh"
need_module lightning "the GPU machine has it"
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 1024 || exit 1
$RUN_MPI 2 "$PY" "$pydir/test_lightning.py" "$tmp/data" 1024
