#!/bin/sh
# held.sh - holding batches does not stop training (issue 30, item 2;
# tests/python/held_check.py on 1 and 2 ranks): loops that keep 3, 8 and 64
# batches (to the end of the epoch, or as gradient accumulation) see the
# batches of a loop that keeps none; past held_memory the error says how
# much is held and names the option; the note of the first time is printed
# once per loader (two loaders hold more than their ring).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 1001 || exit 1
status=0
for np in 1 2; do
  $RUN_MPI $np "$PY" "$pydir/held_check.py" "$tmp/data" 1001 >"$tmp/out" 2>&1 ||
    { echo "FAIL: held_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
  notes=`grep -c "^ferry: note: rank 0: the caller still holds batch" "$tmp/out"`
  if test "$notes" != 2; then
    echo "FAIL: $notes notes on rank 0 with $np ranks, want 2 (one per loader)"
    status=1
  fi
done
exit $status
