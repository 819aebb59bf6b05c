#!/bin/sh
# valgrind.sh - the pipeline under valgrind memcheck over 2 ranks: no invalid
# access, no uninitialised use and no definite leak whose stack passes through
# ferry's own sources.  Open MPI's own start-up leaks are not ferry's and are
# filtered by that rule rather than by suppressing whole libraries.
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not installed"; exit 77; }
prog="$top_builddir/tests/mpi/test_loader"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
tmp="${FERRY_TEST_TMPDIR:-/tmp}/valgrind.$$"
mkdir -p "$tmp"
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT_VALGRIND:-400}
export FERRY_MPI_TIMEOUT
$RUN_MPI 2 valgrind -q --leak-check=full --log-file="$tmp/vg.%p" "$prog"
status=$?
if test $status -ne 0; then
  echo "FAIL: test_loader under valgrind exited $status"
  cat "$tmp"/vg.* 2>/dev/null | tail -50
  rm -rf "$tmp"
  exit 1
fi
# A report block starts with a "==PID== " line naming the problem and ends
# at a bare "==PID==" line; keep those whose frames are in ferry's sources.
bad=`cat "$tmp"/vg.* | awk '
  /(Invalid|uninitialised|Conditional jump|definitely lost|Mismatched|overlap)/ { p = 1; blk = "" }
  p { blk = blk "\n" $0 }
  /^==[0-9]+== *$/ { if (p && blk ~ /\((loader|plan|options|manifest|mem|npy|error)\.c:/) print blk; p = 0 }'`
rm -rf "$tmp"
if test -n "$bad"; then
  echo "FAIL: valgrind found errors in ferry's code:"
  echo "$bad"
  exit 1
fi
echo "PASS: valgrind clean in ferry's sources over 2 ranks"
exit 0
