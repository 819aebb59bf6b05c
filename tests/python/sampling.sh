#!/bin/sh
# sampling.sh - weighted, class-balanced and mixed sampling through the
# Python front (ferry.Loader's options), on 3 ranks
# (tests/python/sampling_check.py): the same global batches as one rank
# with a global batch of 12; state_dict() mid-epoch on 3 ranks resumed on
# 2 serves the uninterrupted run's draws; balance=y shares; a "mix:"
# dataset's shares; a bad weight is the same ferry.Error on every rank.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 600 || exit 1
"$PY" "$pydir/make_npy.py" "$tmp/small" 40 || exit 1
$RUN_MPI 3 "$PY" "$pydir/sampling_check.py" "$tmp"
