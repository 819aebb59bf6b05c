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
