#!/bin/sh
# agree.sh - the fused agreements (tests/loader/test_agree.c) on 1, 3 and 4
# ranks: ferry__agree_check and ferry__bcast_blob_rc give the same outcome
# on every rank (issue 12's fewer collective rounds).
prog="$top_builddir/tests/loader/test_agree"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
for n in 1 3 4; do
  $RUN_MPI $n "$prog" || { echo "FAIL: test_agree with $n ranks"; status=1; }
done
exit $status
