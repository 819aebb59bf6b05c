#!/bin/sh
# checkpoint.sh - checkpoint and elastic resume under a real Slurm, through
# the generic job script slurm/ferry-generic.sbatch with FERRY_STATE set:
#
# 1. A job of 4 tasks runs `ferry verify --state FILE` over one epoch of a
#    mem: dataset, slowed by --compute-ms so that it lasts several seconds.
#    Mid-epoch the batch shell gets SIGUSR1 (`scancel --signal=USR1
#    --batch`, as --signal=B:USR1@120 sends it); the template forwards it
#    to the tasks, every rank stops after the same batch, rank 0 saves FILE
#    and FILE.served, and ferry exits 75.  With FERRY_MAX_REQUEUE=0 the job
#    ends there (ExitCode 75:0) instead of being requeued with 4 tasks.
# 2. The job is submitted again with 3 tasks: it resumes from FILE, deals
#    the rest of the epoch over 3 ranks, and verify checks exactly-once over
#    both jobs together (the first job's ids come from FILE.served).
# 3. FILE.served then holds the whole epoch: every sample id exactly once,
#    some served by the first job and the rest by the second.
#
# Environment: as tests/lib/common.sh's scripts, plus FERRY_TEST_SLURM_DIR (unset: skip).
# Exit 0 pass, 1 fail, 77 skip.  About half a minute.

. "`dirname "$0"`/common.sh"
slurm_test_init checkpoint
template=$top_srcdir/slurm/ferry-generic.sbatch
cd "$tmp" || exit 99
FERRY_MODULES=
export FERRY_MODULES

N=40000
spec="mem:N=$N,vars=x:float32:8"
args="--epochs 1 --batch-size 8 --tail partial --chunk-samples 256 --compute-ms 5"
state_file=$tmp/ckpt.state

# ---- 1. 4 tasks, SIGUSR1 mid-epoch: checkpoint, exit 75 --------------------
# $args is a list of words: split it on purpose.
id=`FERRY=$FERRY FERRY_STATE=$state_file FERRY_MAX_REQUEUE=0 slurm_run 20 \
  sbatch --parsable --ntasks=4 --cpus-per-task=1 --output="$tmp/job1.out" \
  "$template" verify \
  "$spec" $args 2>"$tmp/sbatch.err"`
case $id in
  ''|*[!0-9]*)
    echo "FAIL: sbatch did not submit the first job: $id"
    show "$tmp/sbatch.err"
    exit 1 ;;
esac
# Once rank 0 says the epoch started, let it run a little, then signal.
wait_line "$tmp/job1.out" '^ferry verify: no state file' 60
sleep 2
slurm_run 10 scancel --signal=USR1 --batch "$id"
state=`wait_job "$id" 120`
code=`job_field "$id" ExitCode`
if test "$state" = FAILED && test "$code" = 75:0 &&
   grep -q '^ferry verify: checkpoint saved to' "$tmp/job1.out" &&
   test -f "$state_file" && test -f "$state_file.served"; then
  echo "ok: job 1 (4 tasks) got SIGUSR1 mid-epoch, checkpointed and exited 75: `grep '^ferry verify: checkpoint saved' "$tmp/job1.out"`"
else
  echo "FAIL: job 1: state '$state', ExitCode '$code' (want FAILED, 75:0), or no checkpoint"
  show "$tmp/job1.out"
  exit 1
fi
before=`grep -v '^#' "$state_file.served" | wc -l`

# ---- 2. resubmitted with 3 tasks: the rest of the epoch --------------------
FERRY=$FERRY FERRY_STATE=$state_file FERRY_MAX_REQUEUE=0 slurm_run 200 \
  sbatch --wait --ntasks=3 --cpus-per-task=1 --output="$tmp/job2.out" \
  "$template" verify \
  "$spec" $args >"$tmp/sbatch2.out" 2>&1
st=$?
if test $st = 0 &&
   grep -q "^ferry verify: resumed from $state_file: epoch 0 after batch" "$tmp/job2.out" &&
   grep -q '^ferry verify: .*, 3 ranks,' "$tmp/job2.out" &&
   grep -q "^PASS exactly-once epoch 0: $N of $N samples served once each over the runs" "$tmp/job2.out" &&
   grep -q '^ferry verify: PASS' "$tmp/job2.out"; then
  echo "ok: job 2 (3 tasks) resumed: `grep '^PASS exactly-once' "$tmp/job2.out"`"
else
  echo "FAIL: job 2 (3 tasks): sbatch status $st"
  show "$tmp/sbatch2.out" "$tmp/job2.out"
  fail=1
fi

# ---- 3. the record of both jobs: every sample once -------------------------
total=`grep -v '^#' "$state_file.served" | wc -l`
distinct=`grep -v '^#' "$state_file.served" | sort -n | uniq | wc -l`
inrange=`grep -v '^#' "$state_file.served" | awk -v n=$N '$1 >= 0 && $1 < n' | wc -l`
if test "$before" -gt 0 && test "$before" -lt $N && test "$total" = $N &&
   test "$distinct" = $N && test "$inrange" = $N; then
  echo "ok: $before samples served by job 1 (4 tasks), `expr $N - $before` by job 2 (3 tasks): $distinct distinct of $N, each exactly once"
else
  echo "FAIL: over both jobs: $before before the checkpoint, $total ids, $distinct distinct, $inrange in range (want $N each)"
  fail=1
fi
exit $fail
