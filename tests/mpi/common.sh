# common.sh - the preamble shared by the tests/mpi/*.sh scripts that drive
# the ferry tool.  Source it, then call ferry_test_init NAME:
#
#   . "`dirname "$0"`/common.sh"
#   ferry_test_init datasets
#
# It skips the test (exit 77) when $FERRY is not the ferry program, defaults
# RUN_MPI to tests/run-mpi.sh (make check sets it), unsets the caller's
# FERRY_* loader options (they would change the results; FERRY_TEST_* and
# FERRY_MPI_TIMEOUT stay), makes the scratch directory $tmp (removed on exit)
# and sets fail=0.

here=`dirname "$0"`
top_srcdir=${top_srcdir:-$here/../..}

ferry_test_init() {
  if test -z "${FERRY:-}" || test ! -x "$FERRY"; then
    echo "SKIP: FERRY is not set to the ferry program"
    exit 77
  fi
  if test -z "${RUN_MPI:-}"; then
    RUN_MPI="sh $top_srcdir/tests/run-mpi.sh"
  fi
  for v in `env | sed -n 's/^\(FERRY_[A-Z_]*\)=.*/\1/p'`; do
    case $v in FERRY_TEST_*|FERRY_MPI_TIMEOUT) ;; *) unset "$v" ;; esac
  done
  tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/$1.$$
  rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
  trap 'rm -rf "$tmp"' 0
  fail=0
}

# Batched `ferry dump` jobs checked by tests/fixtures/dump_compare.py (used
# by npy_fixtures.sh, hdf5.sh, zarr.sh).  The caller sets jobs (the job
# list file, emptied), PAR (streams run at once: most of a short MPI job is
# start-up latency), njobs=0, BATCH and common (the dump options of every
# job).  The streams quote paths with '...': $tmp must hold no single quote.
#
# dump_queue ENV LABEL NP FLAGS DATASET VAR "LOADER OPTIONS" NPY...: queue
# `ENV ferry dump DATASET --var VAR` over NP ranks on stream njobs % PAR
# (ENV: "" or "env NAME=VALUE..."), and record the job: FLAGS and the NPY
# files (one per part, in order) are dump_compare.py's.
dump_queue() {
  q_env=$1 q_label=$2 q_np=$3 q_flags=$4 q_ds=$5 q_var=$6 q_opts=$7
  shift 7
  njobs=`expr $njobs + 1`
  q_out=$tmp/dump.$njobs
  # $common and $q_opts are lists of words: split them on purpose.
  printf '%s\n' "$q_env $RUN_MPI $q_np \"\$FERRY\" dump '$q_ds' --var '$q_var' $common $q_opts >'$q_out' 2>'$q_out.err'; echo \$? >'$q_out.status'" \
    >>"$tmp/stream.`expr $njobs % $PAR`"
  q_line="$q_label np=$q_np	$q_out	$q_out.err	$q_out.status	$q_np	$BATCH	$q_flags"
  for q_f in "$@"; do
    q_line="$q_line	$q_f"
  done
  printf '%s\n' "$q_line" >>"$jobs"
}
# dump_run: start the streams and wait for them.
dump_run() {
  for s in "$tmp"/stream.*; do
    sh "$s" &
  done
  wait
  rm -f "$tmp"/stream.*
}
