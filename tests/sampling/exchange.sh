#!/bin/sh
# exchange.sh - the exchange of shuffle=global without the pipeline
# (tests/sampling/test_exchange.c) on 1, 2, 3, 4 and 7 ranks: rows reach the rank
# and position the plan deals them to, every sample once (or as the tail
# rule says), and a read failure injected on one rank gives every rank the
# same error without a hang.  Each job runs under run-mpi.sh's timeout.
prog="$top_builddir/tests/sampling/test_exchange"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
status=0
for np in 1 2 3 4 7; do
  $RUN_MPI $np "$prog" || { echo "FAIL: test_exchange on $np ranks"; status=1; }
done
exit $status
