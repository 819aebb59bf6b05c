#!/bin/sh
# sbatch.sh - the generic job script slurm/ferry-generic.sbatch on the test
# cluster:
#
# 1. `sbatch --wait` of the template running `ferry verify` on a `ferry gen`
#    dataset: sbatch exits 0, the job's output holds one "ferry verify: PASS"
#    over 4 ranks and the template's "exited with status 0".
# 2. The checkpoint-and-requeue protocol, with tests/slurm/fake-ferry.sh as
#    FERRY (a program that exits 75 on SIGUSR1, as ferry bench/verify do
#    with --state): once every task runs, the batch shell gets SIGUSR1, the
#    template forwards it to the job step, every task exits 75, the
#    template requeues the job, and the second run (SLURM_RESTART_COUNT=1)
#    completes: JobState COMPLETED, ExitCode 0:0, Restarts=1.
# 3. The requeue bound: with FERRY_MAX_REQUEUE=0 the same status 75 ends the
#    job (FAILED, ExitCode 75:0, Restarts=0, no second run).
#
# The signal is sent with `scancel --signal=USR1 --batch`, which reaches
# only the batch shell (as --signal=B:USR1@T does): the tasks get it only if
# the template forwards it.  It is not left to --signal's timer: Slurm may
# send that signal up to a minute early, so with the one-minute limit of a
# test job it can come while the tasks are still starting, before they
# handle it (a real ferry job asks for minutes, not seconds).
#
# Bugs it pins: a foreground srun (bash defers the trap until the step ends:
# the checkpoint signal arrives after the time limit); a signal sent to the
# batch shell only and never to the tasks; a requeue loop without a bound; a
# requeued job that restarts from the beginning with RESTART_COUNT unread.
#
# Environment: as tests/lib/common.sh's scripts, plus FERRY_TEST_SLURM_DIR (unset: skip).
# Exit 0 pass, 1 fail, 77 skip.  It takes about a minute (a requeued job
# waits cred_expire, 10 s in cluster.sh, before it may start again).

. "`dirname "$0"`/common.sh"
slurm_test_init sbatch
template=$top_srcdir/slurm/ferry-generic.sbatch
fake=$top_srcdir/tests/slurm/fake-ferry.sh
# The job runs in $tmp, where its output lands; no module: FERRY is the
# built tool.
cd "$tmp" || exit 99
FERRY_MODULES=
export FERRY_MODULES

# signal_when_started ID LOG: once the 4 tasks have logged their start,
# send SIGUSR1 to the job's batch shell.
signal_when_started() {
  i=0
  while test "`grep -c '^start 0 ' "$2" 2>/dev/null`" != 4 && test $i -lt 60; do
    sleep 1
    i=`expr $i + 1`
  done
  slurm_run 10 scancel --signal=USR1 --batch "$1"
}

# ---- 1. sbatch --wait of ferry verify --------------------------------------
if ! "$FERRY" gen "$tmp/data" --size 8MiB --var samples:float32:256 \
     --var targets:int64 >"$tmp/gen.log" 2>&1; then
  echo "FAIL: ferry gen"
  show "$tmp/gen.log"
  exit 1
fi
FERRY_PROG=$FERRY
FERRY=$FERRY_PROG slurm_run 200 sbatch --wait --output="$tmp/verify.out" \
  "$template" verify "$tmp/data" --epochs 2 >"$tmp/sbatch.out" 2>&1
st=$?
if test $st = 0 &&
   test "`grep -c '^ferry verify: PASS' "$tmp/verify.out"`" = 1 &&
   grep '^ferry verify: .*, 4 ranks,' "$tmp/verify.out" >/dev/null &&
   grep 'exited with status 0$' "$tmp/verify.out" >/dev/null; then
  echo "ok: sbatch --wait ferry-generic.sbatch verify: `grep '^ferry verify: PASS' "$tmp/verify.out"`"
else
  echo "FAIL: sbatch --wait ferry-generic.sbatch verify: sbatch status $st"
  show "$tmp/sbatch.out" "$tmp/verify.out"
  fail=1
fi

# ---- 2. signal before the time limit, checkpoint, requeue, resume ---------
id=`FERRY=$fake FERRY_MAX_REQUEUE=3 slurm_run 20 sbatch --parsable \
  --output="$tmp/requeue.out" "$template" "$tmp/requeue.log" 1 2>"$tmp/sbatch.err"`
case $id in
  ''|*[!0-9]*)
    echo "FAIL: sbatch did not submit the requeue job: $id"
    show "$tmp/sbatch.err"
    exit 1 ;;
esac
signal_when_started "$id" "$tmp/requeue.log"
state=`wait_job "$id" 150`
restarts=`job_field "$id" Restarts`
code=`job_field "$id" ExitCode`
n_usr1=`grep -c '^usr1 0 ' "$tmp/requeue.log" 2>/dev/null`
n_done=`grep -c '^done 1 ' "$tmp/requeue.log" 2>/dev/null`
if test "$state" = COMPLETED && test "$restarts" = 1 && test "$code" = 0:0 &&
   test "$n_usr1" = 4 && test "$n_done" = 4 &&
   grep 'requeue 1 of 3' "$tmp/requeue.out" >/dev/null; then
  echo "ok: SIGUSR1 to the batch shell reached the 4 tasks through the template, status 75 requeued the job once, run 2 completed (ExitCode $code, Restarts $restarts)"
else
  echo "FAIL: checkpoint and requeue: state '$state', Restarts '$restarts', ExitCode '$code', $n_usr1 tasks got SIGUSR1 on run 1 (want 4), $n_done tasks completed run 2 (want 4)"
  show "$tmp/requeue.out" "$tmp/requeue.log"
  fail=1
fi

# ---- 3. FERRY_MAX_REQUEUE bounds the requeues ------------------------------
id=`FERRY=$fake FERRY_MAX_REQUEUE=0 slurm_run 20 sbatch --parsable \
  --output="$tmp/bound.out" "$template" "$tmp/bound.log" 5 2>"$tmp/sbatch.err"`
case $id in
  ''|*[!0-9]*)
    echo "FAIL: sbatch did not submit the bound job: $id"
    show "$tmp/sbatch.err"
    exit 1 ;;
esac
signal_when_started "$id" "$tmp/bound.log"
state=`wait_job "$id" 60`
restarts=`job_field "$id" Restarts`
code=`job_field "$id" ExitCode`
n_usr1=`grep -c '^usr1 0 ' "$tmp/bound.log" 2>/dev/null`
if test "$state" = FAILED && test "$restarts" = 0 && test "$code" = 75:0 &&
   test "$n_usr1" = 4 && ! grep '^start 1 ' "$tmp/bound.log" >/dev/null &&
   grep 'FERRY_MAX_REQUEUE=0' "$tmp/bound.out" >/dev/null; then
  echo "ok: with FERRY_MAX_REQUEUE=0 status 75 ends the job: $state, ExitCode $code, not requeued"
else
  echo "FAIL: requeue bound: state '$state', Restarts '$restarts', ExitCode '$code' (want FAILED, 0, 75:0), $n_usr1 tasks got SIGUSR1 (want 4)"
  show "$tmp/bound.out" "$tmp/bound.log"
  fail=1
fi

exit $fail
