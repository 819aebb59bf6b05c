#!/bin/sh
# loader.sh - the pipeline's promises (tests/loader/test_loader.c, on the mem
# backend) with 1, 2, 3, 4 and 7 ranks, each job under a hard timeout.
prog="$top_builddir/tests/loader/test_loader"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
for np in 1 2 3 4 7; do
  echo "== $np ranks"
  $RUN_MPI "$np" "$prog" || { echo "FAIL: test_loader with $np ranks"; status=1; }
done
exit $status
