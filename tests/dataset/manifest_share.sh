#!/bin/sh
# manifest_share.sh - the manifest broadcast of ferry_open gives one
# outcome on every rank, and on one rank the same as on several
# (tests/dataset/test_manifest_share.c, on 1, 2 and 3 ranks).  Issue 30: a
# manifest with two variables of one name was served on one rank and
# refused by rank 1 alone on two.
prog="$top_builddir/tests/dataset/test_manifest_share"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
for n in 1 2 3; do
  $RUN_MPI $n "$prog" || { echo "FAIL: test_manifest_share with $n ranks"; status=1; }
done
exit $status
