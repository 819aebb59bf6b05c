#!/bin/sh
# held.sh - holding batches does not stop training (issue 30, item 2):
# tests/loader/test_held.c on 1 and 2 ranks, and the note of the first time a
# held batch gets a slot of its own, printed once per loader (each loader
# of test_held that holds more than its ring says it once).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init held
prog="$top_builddir/tests/loader/test_held"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
for np in 1 2; do
  echo "== $np ranks"
  $RUN_MPI "$np" "$prog" >"$tmp/out" 2>&1 || { echo "FAIL: test_held with $np ranks"; status=1; }
  cat "$tmp/out"
  # 4 loaders of test_hold, 1 of test_bound: one note each on each rank
  notes=`grep -c "^ferry: note: rank 0: the caller still holds batch" "$tmp/out"`
  if test "$notes" != 5; then
    echo "FAIL: $notes notes on rank 0 with $np ranks, want 5 (one per loader)"
    status=1
  fi
done
exit $status
