#!/bin/sh
# run-mpi.sh - start an MPI job the way every ferry test does, bounded in
# time so that a deadlock fails the test instead of hanging "make check".
#
# usage: run-mpi.sh NP COMMAND [ARG...]
#   runs:  $TIMEOUT -k 5 $FERRY_MPI_TIMEOUT $MPIRUN $MPIRUN_FLAGS -np NP COMMAND ARG...
#   (-n NP when MPIRUN is srun)
#
# Under "make check" MPIRUN, MPIRUN_FLAGS and TIMEOUT come from configure
# (see AM_TESTS_ENVIRONMENT in Makefile.am); test scripts call it as
# "$RUN_MPI 4 ./prog".  Run by hand it falls back to mpirun (with
# --oversubscribe for Open MPI) and timeout from PATH.
# FERRY_MPI_TIMEOUT (seconds, default 100) bounds one job (5 times that in
# a TSan build, 3 times in another sanitizer build); it is shorter than the
# per-test limit so that this script can say which job hung.
# Standard input is /dev/null: mpirun would otherwise forward the
# terminal to rank 0.  The exit status is the job's; 124 means timed out.

if test $# -lt 2; then
  echo "usage: $0 NP COMMAND [ARG...]" >&2
  exit 99
fi
np=$1
shift
case $np in
  ''|*[!0-9]*|0)
    echo "$0: NP must be a positive integer, not '$np'" >&2
    exit 99 ;;
esac

if test -z "${MPIRUN+set}"; then
  MPIRUN=$(command -v mpirun || command -v mpiexec)
  if test -z "${MPIRUN_FLAGS+set}"; then
    case $($MPIRUN --version 2>/dev/null) in
      *"Open MPI"*|*OpenRTE*) MPIRUN_FLAGS=--oversubscribe ;;
    esac
  fi
fi
if test -z "$MPIRUN"; then
  echo "$0: no MPI launcher: configure found neither mpirun nor mpiexec (set MPIRUN)" >&2
  exit 99
fi
if test -z "${TIMEOUT+set}"; then
  TIMEOUT=$(command -v timeout)
fi
limit=${FERRY_MPI_TIMEOUT:-100}
# The limit catches hangs, not slowness: in a sanitizer build (make check
# exports FERRY_SANITIZE) every rank runs several times slower, more so
# while ./bootstrap check runs the asan, tsan and fuzz tiers at once (a
# 60 s batch of Parquet dumps timed out under both, 2026-11-27).
case ${FERRY_SANITIZE-} in
  *thread*) limit=$((limit * 5)) ;;
  ?*) limit=$((limit * 3)) ;;
esac

# Open MPI refuses to start as root without these (CI containers run as root).
if test "$(id -u 2>/dev/null)" = 0; then
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi

# Each Open MPI job its own session directory (under the test's, which
# tests/lib/timed.sh makes): two jobs starting at once race to create the
# top one (ompi.HOST.UID), and the loser fails with "mkdir ... File exists"
# in orte_session_dir (2026-11-28).  Removed when the job ends.
sessdir=
case $(basename "${MPIRUN%% *}") in
  srun) ;;
  *)
    if sessdir=$(mktemp -d "${OMPI_MCA_orte_tmpdir_base:-${TMPDIR:-/tmp}}/mpi.XXXXXX" 2>/dev/null); then
      OMPI_MCA_orte_tmpdir_base=$sessdir
      export OMPI_MCA_orte_tmpdir_base
    fi ;;
esac

# Waiting ranks sleep instead of spinning (tests/lib/idle.c; FERRY_MPI_IDLE,
# set by "make check", names the shim; empty: spin as Open MPI does).  On
# the 2-core machine two jobs of 2-3 ranks run at once: a rank spinning in
# sched_yield() took the core from the rank that works.  yield_when_idle
# makes Open MPI call sched_yield() when not oversubscribed too.  An ASan
# rank refuses a library preloaded before its runtime unless
# verify_asan_link_order=0 (make check sets it): without it, no shim.
idle=${FERRY_MPI_IDLE-}
case ${FERRY_SANITIZE-} in
  *address*)
    case ${ASAN_OPTIONS-} in
      *verify_asan_link_order=0*) ;;
      *) idle= ;;
    esac ;;
esac
if test -n "$idle" && test -r "$idle"; then
  LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD }$idle
  OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle-1}
  export LD_PRELOAD OMPI_MCA_mpi_yield_when_idle
fi

# srun counts tasks with -n; mpirun and mpiexec take -np.
case $(basename "${MPIRUN%% *}") in
  srun) npflag=-n ;;
  *) npflag=-np ;;
esac

# The processes under pid $1 (its children, theirs, ...), one per line.
descendants() {
  for c in $(pgrep -P "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# A job that hangs is worth more with its stacks: the hang seen once on a
# CI machine and never again is mended only from them.  With gdb on PATH
# (FERRY_MPI_STACKS=no to skip), print every thread's stack of every process
# under the launcher to standard error, then stop the job as timeout would.
stacks() {
  echo "run-mpi.sh: the stacks of the job's processes at ${limit}s:" >&2
  for p in $(descendants "$1"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in
      mpirun|orted|prterun|prted|hydra_pmi_proxy|srun|timeout|"") continue ;;
    esac
    echo "--- pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-200))" >&2
    $TIMEOUT 30 gdb -p "$p" -batch -nx -ex "set pagination off" \
      -ex "thread apply all bt 30" </dev/null 2>/dev/null |
      grep -E '^(Thread|#)' >&2
  done
}

# MPIRUN and MPIRUN_FLAGS are lists of words: split them on purpose.
# shellcheck disable=SC2086
if test -n "$TIMEOUT" && test "${FERRY_MPI_STACKS:-yes}" != no &&
  command -v gdb >/dev/null 2>&1 && command -v pgrep >/dev/null 2>&1; then
  # The job in the background, a watchdog beside it: at the limit it
  # prints the stacks, then TERM, and KILL 5 s later (timeout -k 5).
  fired=${TMPDIR:-/tmp}/run-mpi.$$.fired
  rm -f "$fired"
  $MPIRUN $MPIRUN_FLAGS $npflag "$np" "$@" </dev/null &
  job=$!
  (
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "$limit" &
    s=$!
    wait "$s"
    : >"$fired"
    stacks "$job"
    kill -TERM "$job" 2>/dev/null
    sleep 5 &
    s=$!
    wait "$s"
    kill -KILL "$job" 2>/dev/null
    for p in $(descendants "$job"); do kill -KILL "$p" 2>/dev/null; done
  ) &
  watch=$!
  wait "$job"
  status=$?
  kill -TERM "$watch" 2>/dev/null
  wait "$watch" 2>/dev/null
  if test -e "$fired"; then
    status=124 # the watchdog ended the job
    rm -f "$fired"
  fi
elif test -n "$TIMEOUT"; then
  $TIMEOUT -k 5 "$limit" $MPIRUN $MPIRUN_FLAGS $npflag "$np" "$@" </dev/null
  status=$?
else
  $MPIRUN $MPIRUN_FLAGS $npflag "$np" "$@" </dev/null
  status=$?
fi
case $status in
  124|137)
    if test -n "$TIMEOUT"; then
      echo "run-mpi.sh: timed out after ${limit}s: $MPIRUN $MPIRUN_FLAGS $npflag $np $*" >&2
    fi ;;
esac
if test -n "$sessdir"; then
  rm -rf "$sessdir"
fi
exit $status
