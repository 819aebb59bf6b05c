#!/bin/sh
# tsan.sh - the pipeline under ThreadSanitizer over 2 ranks: in a build
# configured with --enable-sanitize=thread (the library and
# tests/loader/test_loader are instrumented by the build itself), run
# test_loader and fail on any data race, lock-order inversion or thread
# leak whose report passes through ferry's own sources (src/...).  Open
# MPI's internals are not instrumented and its own reports (its TCP
# transport's locks) are not ferry's: they are counted and ignored.  The
# run writes its reports to files (log_path) without the suppressions of
# tests/sanitize/tsan.supp, so a report that touches both Open MPI and
# ferry's code still fails here.  In any other build: skip (77).
case ",${FERRY_SANITIZE:-}," in
  *,thread,*) ;;
  *) echo "SKIP: not a ThreadSanitizer build (configure with --enable-sanitize=thread)"
     exit 77 ;;
esac
prog="$top_builddir/tests/loader/test_loader"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
tmp="${FERRY_TEST_TMPDIR:-/tmp}/tsan.$$"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
# exitcode=0: the verdict is the filter's below, not TSan's (which would
# count Open MPI's reports too).
TSAN_OPTIONS="halt_on_error=0 exitcode=0 report_signal_unsafe=0 log_path=$tmp/tsan"
export TSAN_OPTIONS
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT_TSAN:-300}
export FERRY_MPI_TIMEOUT
$RUN_MPI 2 "$prog" > "$tmp/out" 2>&1
status=$?
tail -3 "$tmp/out"
grep -q "^PASS" "$tmp/out" || { echo "FAIL: test_loader under TSan (exit $status)"; tail -30 "$tmp/out"; exit 1; }
bad=`cat "$tmp"/tsan.* 2>/dev/null | awk '
  /WARNING: ThreadSanitizer/ { p = 1; blk = "" }
  p { blk = blk "\n" $0 }
  /^SUMMARY: ThreadSanitizer/ { if (p && blk ~ /\/src\/(util|core|plan|loader|backends|gpu|plugins)\/[a-z_\/]*\.c:/) print blk; p = 0 }'`
if test -n "$bad"; then
  echo "FAIL: ThreadSanitizer reports in ferry's code:"
  echo "$bad" | head -80
  exit 1
fi
echo "PASS: ThreadSanitizer clean in ferry's sources over 2 ranks (`cat "$tmp"/tsan.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer'` reports inside Open MPI ignored)"
exit 0
