#!/bin/sh
# mmap.sh - io=mmap under a truncation (tests/python/mmap_check.py) on 1 and
# 2 ranks: a ferry error naming the file, the same on every rank, and no
# SIGBUS (the process exits normally).  Skips (77) as the other Python tests.
. "$top_srcdir/tests/python/common.sh"
status=0
for np in 1 2; do
  rm -rf "$tmp/data"
  "$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 20000 || exit 1
  $RUN_MPI $np "$PY" "$pydir/mmap_check.py" "$tmp/data" ||
    { echo "FAIL: mmap_check.py on $np ranks"; status=1; }
done
exit $status
