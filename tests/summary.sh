#!/bin/sh
# summary.sh - count the results of an automake test run and print the one
# line "N passed, N failed, N skipped" that ends "make check" (CI reads it).
#
# usage: summary.sh FILE.trs...
#
# Counts the :test-result: lines of each .trs file: PASS and XPASS are
# passed, FAIL, XFAIL and ERROR are failed (a known failure is still a
# failure: skip with 77 and a reason instead), SKIP is skipped.  A listed
# test that left no .trs file did not produce a result and counts as failed.
# Exits 1 when a test failed or when no test passed or failed, so that a
# harness that runs nothing fails rather than passes.
#
# Before the count line it lists the slowest tests (FERRY_SLOWEST, default
# 10; 0 for none) with the wall and CPU seconds tests/lib/timed.sh wrote
# at the end of each TEST.log: the tests worth making cheaper, or moving
# to the slow tier (tests/local.mk).

passed=0
failed=0
skipped=0
missing=
for trs in "$@"; do
  if test ! -f "$trs"; then
    failed=$((failed + 1))
    missing="$missing ${trs%.trs}"
    continue
  fi
  results=$(sed -n 's/^[ 	]*:test-result:[ 	]*\([A-Z]*\).*/\1/p' "$trs")
  for r in $results; do
    case $r in
      PASS|XPASS) passed=$((passed + 1)) ;;
      SKIP) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1)) ;;
    esac
  done
done

srcdir_top=`dirname "$0"`/..
n=${FERRY_SLOWEST:-10}
case $n in ''|*[!0-9]*) n=10 ;; esac
if test "$n" -gt 0; then
  times=$(for trs in "$@"; do
    log=${trs%.trs}.log
    test -f "$log" || continue
    sed -n 's/^ferry-test-time: \([0-9.]*\) wall, \([0-9.]*\) cpu$/\1 \2/p' "$log" |
      tail -n 1 | while read -r wall cpu; do
        # The name as registered: a script's .sh is not in its .trs name.
        name=${trs%.trs}
        test -f "$srcdir_top/$name.sh" && name=$name.sh
        printf '%8.1f %8.1f  %s\n' "$wall" "$cpu" "$name"
      done
  done | sort -rn | head -n "$n")
  if test -n "$times"; then
    echo "slowest tests:   wall s    cpu s"
    echo "$times"
  fi
fi

status=0
if test -n "$missing"; then
  echo "no result from:$missing"
  status=1
fi
if test "$failed" -gt 0; then
  status=1
fi
if test $((passed + failed)) -eq 0; then
  echo "no test ran: a run without tests is a failure"
  status=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
