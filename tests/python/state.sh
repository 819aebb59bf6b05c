#!/bin/sh
# state.sh - loader.state_dict() mid-epoch on 2 ranks, pickled, then
# load_state_dict on 3 ranks resumes exactly (tests/python/state_check.py).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 333 || exit 1
$RUN_MPI 3 "$PY" "$pydir/state_check.py" "$tmp/data" 333 "$tmp/state.pkl"
