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
# FERRY_MPI_TIMEOUT (seconds, default 100) bounds one job; it is shorter
# than the per-test limit so that this script can say which job hung.
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

# Open MPI refuses to start as root without these (CI containers run as root).
if test "$(id -u 2>/dev/null)" = 0; then
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi

# srun counts tasks with -n; mpirun and mpiexec take -np.
case $(basename "${MPIRUN%% *}") in
  srun) npflag=-n ;;
  *) npflag=-np ;;
esac

# MPIRUN and MPIRUN_FLAGS are lists of words: split them on purpose.
# shellcheck disable=SC2086
if test -n "$TIMEOUT"; then
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
exit $status
