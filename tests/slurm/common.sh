# common.sh - the preamble of the tests/slurm/*.sh scripts, which run ferry
# under a real Slurm: the one-node cluster of tests/slurm/cluster.sh that
# ./bootstrap check starts.  Source it, then call slurm_test_init NAME:
#
#   . "`dirname "$0"`/common.sh"
#   slurm_test_init srun
#
# It skips the test (exit 77) when no test cluster is up, that is when
# FERRY_TEST_SLURM_DIR is unset (a plain "make check"); when it is set, the
# cluster must answer, or the test fails.  Then it does what
# tests/lib/common.sh does (FERRY, $tmp, fail=0) and defines:
#
#   slurm_run LIMIT CMD...   CMD (srun, sbatch, ...) under timeout -k 5 LIMIT;
#                            a hang fails with 124 and says which command
#   show FILE...             indent FILE into the log
#
# Jobs run as the user of the test (root in CI: the Open MPI variables that
# allow it are in the environment, and srun and sbatch pass the environment
# on to the job).

slurm_dir=${FERRY_TEST_SLURM_DIR:-}
. "`dirname "$0"`/../lib/common.sh"

slurm_test_init() {
  if test -z "$slurm_dir"; then
    echo "SKIP: no test Slurm cluster (./bootstrap check starts one; by hand: sh tests/slurm/cluster.sh start DIR && . DIR/env)"
    exit 77
  fi
  if test ! -f "$slurm_dir/env"; then
    echo "FAIL: FERRY_TEST_SLURM_DIR=$slurm_dir holds no cluster (no $slurm_dir/env)"
    exit 1
  fi
  . "$slurm_dir/env"
  ferry_test_init "$1"
  TIMEOUT=${TIMEOUT-`command -v timeout`}
  state=`slurm_run 20 sinfo -h -N -o %t | head -n 1`
  case $state in
    idle|mix*|alloc*|comp*) ;;
    *)
      echo "FAIL: the test cluster in $slurm_dir does not answer or its node is not up (sinfo: '$state')"
      sh "$top_srcdir/tests/slurm/cluster.sh" status "$slurm_dir"
      exit 1 ;;
  esac
}

slurm_run() {
  limit=$1
  shift
  if test -n "$TIMEOUT"; then
    $TIMEOUT -k 5 "$limit" "$@" </dev/null
  else
    "$@" </dev/null
  fi
  st=$?
  case $st in
    124|137) echo "slurm_run: timed out after ${limit}s: $*" >&2 ;;
  esac
  return $st
}

show() {
  for f in "$@"; do
    test -f "$f" && sed 's/^/    /' "$f" | head -n 40
  done
}

# job_field ID FIELD: FIELD of `scontrol show job ID` (e.g. JobState; kept
# MinJobAge=60 s after the end by cluster.sh's configuration).
job_field() {
  slurm_run 10 scontrol show job "$1" 2>/dev/null |
    tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# wait_job ID LIMIT: wait until job ID has ended; its state on stdout, or
# "still STATE after LIMITs" (the job is then cancelled) and status 1.
wait_job() {
  i=0
  while test $i -lt "$2"; do
    s=`job_field "$1" JobState`
    case $s in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)
        echo "$s"
        return 0 ;;
    esac
    sleep 1
    i=`expr $i + 1`
  done
  echo "still ${s:-unknown} after ${2}s"
  slurm_run 10 scancel "$1"
  return 1
}
