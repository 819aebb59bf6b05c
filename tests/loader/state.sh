#!/bin/sh
# state.sh - checkpoint and exact resume (tests/loader/test_state.c) with 5
# ranks: saved by 4, resumed by 3, 4 and 5; checkpoint signals; bad state
# files.  Then the tool: `ferry verify --state` interrupted by SIGUSR1 on
# one rank of 4 exits 75, a rerun on 3 ranks finishes the epoch, and the
# ids of both runs (FILE.served) cover the dataset exactly once.
prog="$top_builddir/tests/loader/test_state"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/state.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
status=0
$RUN_MPI 5 "$prog" "$tmp" 2>"$tmp/test_state.err" || { echo "FAIL: test_state"; status=1; }
# A framework's handler replaced ferry's (signal_case 2): rank 0 warns once.
n=`grep -c "ferry: warning: another handler replaced ferry's for signal" "$tmp/test_state.err"`
if test "$n" = 1; then
  echo "ok: one warning for the replaced signal handler"
else
  echo "FAIL: $n warnings for the replaced signal handler, not 1"; status=1
fi
grep -v "ferry: warning: another handler" "$tmp/test_state.err" >&2

# The tool, interrupted by a signal to one rank.  mpirun's children are the
# ranks (Open MPI, MPICH's hydra); the signal goes to one of them only.
if test -z "${FERRY:-}" || test ! -x "$FERRY"; then
  echo "SKIP: the tool part (FERRY not set)"
  exit $status
fi
if ! command -v pgrep >/dev/null 2>&1 || test ! -d /proc/self; then
  echo "SKIP: the tool part (needs pgrep and /proc to find a rank)"
  exit $status
fi
spec='mem:N=30000,vars=x:float32:4'
args="--epochs 1 --batch-size 8 --tail partial --chunk-samples 256 --compute-ms 5"
$RUN_MPI 4 "$FERRY" verify "$spec" $args --state "$tmp/st" >"$tmp/run1" 2>&1 &
job=$!
# run-mpi.sh -> timeout -> mpirun -> the ranks (maybe through libtool's
# wrapper): every descendant, then those running ferry.
descendants() {
  for c in `pgrep -P "$1" 2>/dev/null`; do echo "$c"; descendants "$c"; done
}
# Rank 0 prints "starting at epoch 0" after ferry_open returned on every
# rank, that is after every rank installed its signal handler.
i=0
while ! grep -q 'no state file' "$tmp/run1" 2>/dev/null && test $i -lt 200; do
  sleep 0.1
  i=`expr $i + 1`
done
last=
for i in `seq 1 40`; do
  n=0
  for k in `descendants $job`; do
    case `cat /proc/$k/comm 2>/dev/null` in
      ferry|lt-ferry) n=$((n + 1)); last=$k ;;
    esac
  done
  test $n -ge 4 && break
  sleep 0.25
done
sleep 0.5
if test -n "${last:-}"; then
  kill -USR1 "$last"
else
  echo "FAIL: could not find the ranks of the first run"; status=1
fi
wait $job
rc=$?
cat "$tmp/run1"
if test $rc != 75; then
  echo "FAIL: the interrupted run exited $rc, expected 75 (checkpointed)"
  exit 1
fi
grep -q "checkpoint saved to" "$tmp/run1" || { echo "FAIL: no checkpoint line"; status=1; }
before=`grep -v '^#' "$tmp/st.served" | wc -l`
$RUN_MPI 3 "$FERRY" verify "$spec" $args --state "$tmp/st" >"$tmp/run2" 2>&1
rc=$?
cat "$tmp/run2"
test $rc = 0 || { echo "FAIL: the resumed run exited $rc"; status=1; }
grep -q "PASS exactly-once epoch 0: 30000 of 30000 samples served once each over the runs" "$tmp/run2" ||
  { echo "FAIL: exactly-once over both runs"; status=1; }
total=`grep -v '^#' "$tmp/st.served" | wc -l`
distinct=`grep -v '^#' "$tmp/st.served" | sort -n | uniq | wc -l`
echo "served: $before ids before the checkpoint, $total in all, $distinct distinct"
if test "$before" -le 0 || test "$before" -ge 30000 || test "$total" != 30000 ||
   test "$distinct" != 30000; then
  echo "FAIL: the two runs do not serve the epoch exactly once"; status=1
fi
exit $status
