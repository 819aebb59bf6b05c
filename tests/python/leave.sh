#!/bin/sh
# leave.sh - one rank of 3 breaks out of `for batch in loader` and leaves
# its `with ferry.Loader(...)` block while the others iterate: every rank
# gets ferry.PeerError naming the rank that left, none hangs (the job runs
# under run-mpi.sh's hard timeout); every rank breaking together is fine.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 2000 || exit 1
FERRY_MPI_TIMEOUT=${FERRY_LEAVE_TIMEOUT:-90}
export FERRY_MPI_TIMEOUT
$RUN_MPI 3 "$PY" "$pydir/leave_check.py" "$tmp/data" ||
  { echo "FAIL: leave_check.py on 3 ranks"; exit 1; }
