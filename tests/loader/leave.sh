#!/bin/sh
# leave.sh - a rank that leaves the loop early (ferry_close or
# ferry_set_epoch while the others call ferry_next), a rank that stops
# answering (collective_timeout) and a rank killed mid-epoch:
# tests/loader/test_leave.c on 3 ranks.  Each
# job runs under run-mpi.sh's hard timeout: a hang is a failure.
prog="$top_builddir/tests/loader/test_leave"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
tmpout=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/leave.$$
trap 'rm -f "$tmpout"' 0
FERRY_MPI_TIMEOUT=${FERRY_LEAVE_TIMEOUT:-90}
export FERRY_MPI_TIMEOUT
$RUN_MPI 3 "$prog" leave || { echo "FAIL: test_leave leave"; status=1; }
$RUN_MPI 3 "$prog" timeout || { echo "FAIL: test_leave timeout"; status=1; }

# A rank killed mid-epoch (SIGKILL after 5 batches).  Open MPI's mpirun
# kills the whole job ("mpirun noticed that process rank 1 ... exited on
# signal 9 (Killed)"): the job must end, long before the hard timeout.
# With --enable-recovery Open MPI lets the other ranks run on: their
# ferry_next must fail with FERRY_EPEER after collective_timeout (3 s)
# instead of waiting forever.  (run-mpi.sh says "timed out" for any status
# 137, which is also the status of a job whose rank got SIGKILL: the time
# taken tells the two apart.)
t0=`date +%s`
$RUN_MPI 3 "$prog" kill >"$tmpout" 2>&1
rc=$?
t1=`date +%s`
if test `expr $t1 - $t0` -lt 60; then
  echo "ok: a killed rank ends the job (status $rc after `expr $t1 - $t0` s)"
else
  echo "FAIL: a killed rank: the job ran `expr $t1 - $t0` s"; status=1
fi
grep -i "signal 9\|killed" "$tmpout" | head -2
case `$MPIRUN --version 2>&1 | head -1` in
  *"Open MPI"*)
    MPIRUN_FLAGS="$MPIRUN_FLAGS --enable-recovery" $RUN_MPI 3 "$prog" kill >"$tmpout" 2>&1
    n=`grep -c "^survivor: rank [02]: ferry_next returned -16 after [3-5]\.[0-9] s: rank [02]: no answer from the other 2 ranks within 3 s (collective_timeout) in ferry_next" "$tmpout"`
    if test "$n" = 2; then
      echo "ok: with --enable-recovery both survivors fail with FERRY_EPEER after collective_timeout"
    else
      echo "FAIL: with --enable-recovery, $n survivors reported FERRY_EPEER, not 2"
      sed 's/^/    /' "$tmpout" | head -20
      status=1
    fi ;;
  *) echo "note: not Open MPI: the --enable-recovery case is not run" ;;
esac
exit $status
