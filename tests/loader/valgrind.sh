#!/bin/sh
# valgrind.sh - the pipeline under valgrind memcheck over 2 ranks, on the mem
# backend (tests/loader/test_loader) and on .npy parts read with collective
# MPI-IO and with io=auto (ferry verify): no invalid access, no uninitialised use and no
# definite leak whose stack passes through ferry's own sources.  Open MPI's own start-up leaks are not ferry's and are
# filtered by that rule rather than by suppressing whole libraries.
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not installed"; exit 77; }
prog="$top_builddir/tests/loader/test_loader"
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
# The real read path: .npy parts, collective MPI-IO, pad, through the tool
# (a libtool wrapper: valgrind must run the program it wraps).
if test -n "${FERRY:-}" && test -x "$FERRY" && test -x "$top_builddir/libtool"; then
  "$FERRY" gen "$tmp/data" --samples 3001 --parts 3 >/dev/null || {
    echo "FAIL: ferry gen"; rm -rf "$tmp"; exit 1; }
  $RUN_MPI 2 "$top_builddir/libtool" --mode=execute valgrind -q --leak-check=full \
    --log-file="$tmp/vg.npy.%p" "$FERRY" verify "$tmp/data/part-*" --epochs 2 \
    --batch-size 16 --io collective --tail pad > "$tmp/verify.out" 2>&1
  status=$?
  if test $status -ne 0; then
    echo "FAIL: ferry verify under valgrind exited $status"
    tail -20 "$tmp/verify.out"
    rm -rf "$tmp"
    exit 1
  fi
  echo "ran: ferry verify (npy, io=collective) under valgrind: `tail -1 "$tmp/verify.out"`"
  # io=auto: mapped rows on a local file system (guarded copies, the
  # I/O thread's page-table population), read ones elsewhere
  $RUN_MPI 2 "$top_builddir/libtool" --mode=execute valgrind -q --leak-check=full \
    --log-file="$tmp/vg.auto.%p" "$FERRY" verify "$tmp/data/part-*" --epochs 2 \
    --batch-size 16 --io auto > "$tmp/verify.out" 2>&1
  status=$?
  if test $status -ne 0; then
    echo "FAIL: ferry verify --io auto under valgrind exited $status"
    tail -20 "$tmp/verify.out"
    rm -rf "$tmp"
    exit 1
  fi
  echo "ran: ferry verify (npy, io=auto) under valgrind: `tail -1 "$tmp/verify.out"`"
  ls "$tmp"/vg.npy.* >/dev/null 2>&1 || { echo "FAIL: valgrind wrote no log for ferry verify"; rm -rf "$tmp"; exit 1; }
else
  echo "note: no ferry tool or libtool script: the .npy run is skipped"
fi
# A report block starts with a "==PID== " line naming the problem and ends
# at a bare "==PID==" line; keep those whose frames are in ferry's sources:
# a frame "(NAME.c:LINE)" with NAME.c a file of src/ (listed from the tree,
# so that a file added or moved there is covered), except the tool's main.c,
# whose main() is below every leak of Open MPI's MPI_Init.
names=`cd "$top_srcdir/src" && ls */*.c */*/*.c 2>/dev/null | sed 's|.*/||; s|\.c$||' | grep -v '^main$' | sort -u | tr '\n' '|'`
names=${names%|}
bad=`cat "$tmp"/vg.* | awk -v re="[(](${names:-loader})[.]c:" '
  /(Invalid|uninitialised|Conditional jump|definitely lost|Mismatched|overlap)/ { p = 1; blk = "" }
  p { blk = blk "\n" $0 }
  /^==[0-9]+== *$/ { if (p && blk ~ re) print blk; p = 0 }'`
rm -rf "$tmp"
if test -n "$bad"; then
  echo "FAIL: valgrind found errors in ferry's code:"
  echo "$bad"
  exit 1
fi
echo "PASS: valgrind clean in ferry's sources over 2 ranks (mem backend, and .npy with collective MPI-IO and io=auto)"
exit 0
