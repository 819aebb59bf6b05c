#!/bin/sh
# leave.sh - a rank that leaves the loop early (ferry_close or
# ferry_set_epoch while the others call ferry_next) and a rank that stops
# answering (collective_timeout): tests/mpi/test_leave.c on 3 ranks.  Each
# job runs under run-mpi.sh's hard timeout: a hang is a failure.
prog="$top_builddir/tests/mpi/test_leave"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
FERRY_MPI_TIMEOUT=${FERRY_LEAVE_TIMEOUT:-90}
export FERRY_MPI_TIMEOUT
$RUN_MPI 3 "$prog" leave || { echo "FAIL: test_leave leave"; status=1; }
$RUN_MPI 3 "$prog" timeout || { echo "FAIL: test_leave timeout"; status=1; }
exit $status
