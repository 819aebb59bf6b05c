#!/bin/sh
# check_selftest.sh - the test library checks what it says it checks:
# tests/lib/check.sh's expect_refusal fails a command that is served, exits
# with another status, prints two messages, lacks a word or does not name
# its file, and in_lanes reports a failed lane (a check that cannot fail
# would pass every refusal test built on it); tests/lib/tier.sh leaves the
# slow tier out of quick, expands folder entries, keeps only registered
# tests and refuses an unknown tier (a typo in TIER= must not run nothing);
# tests/run-mpi.sh preloads the idle shim (tests/lib/idle.c), which sleeps;
# wait_line waits for a line, for its time or while its process runs.
#
# Environment: top_srcdir, FERRY_TEST_TMPDIR; RUN_MPI, FERRY_MPI_IDLE (the
# shim is checked only with both).  Exit 0 pass, 1 fail.

top_srcdir=${top_srcdir:-`dirname "$0"`/../..}
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/check_selftest.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
. "$top_srcdir/tests/lib/check.sh"

errors=0
# want VERDICT LABEL COMMAND...: COMMAND (a check) leaves fail=VERDICT.
want() {
  w_want=$1 w_label=$2
  shift 2
  fail=0
  "$@" >"$tmp/want.out" 2>&1
  if test "$fail" = "$w_want"; then
    echo "ok: $w_label -> fail=$fail"
  else
    echo "FAIL: $w_label: fail=$fail, expected $w_want"
    sed 's/^/    /' "$tmp/want.out"
    errors=1
  fi
}

refuses() { echo "ferry: dump: rank 0: /x/bad.zarr: corrupt JSON at line 2" >&2; return 1; }
twice() { refuses; refuses; }
status2() { refuses; return 2; }

want 0 "a refusal as expected" expect_refusal -n /x/bad.zarr 1 'corrupt|json' refuses
want 1 "a word the message lacks" expect_refusal 1 'corrupt|zstd' refuses
want 1 "another exit status" expect_refusal 1 corrupt status2
want 1 "a message without the file" expect_refusal -n /y/other.zarr 1 corrupt refuses
want 1 "two messages" expect_refusal 1 corrupt twice
want 1 "served, not refused" expect_refusal 1 corrupt true

lane_fn() { if test "$1" = 2; then failed "lane $1"; else ok "lane $1"; fi; }
want 0 "lanes that pass" in_lanes lane_fn 1 3
want 1 "a lane that fails" in_lanes lane_fn 1 2 3
in_lanes lane_fn 3 1 >"$tmp/order.out"
if test "`cat "$tmp/order.out"`" = "ok: lane 3
ok: lane 1"; then
  echo "ok: in_lanes prints the lanes in the order given"
else
  echo "FAIL: in_lanes printed:"; sed 's/^/    /' "$tmp/order.out"; errors=1
fi

# tier.sh on a registered list of four tests.
tier() {
  FERRY_REGISTERED='tests/unit/a tests/cli/b.sh tests/corpus/c.sh tests/fuzz/d' \
    FERRY_TIER_slow='tests/corpus/c.sh tests/cli/gone.sh' \
    FERRY_TIER_asan='tests/unit/a tests/fuzz/' FERRY_TIER_tsan='' FERRY_TIER_fuzz=tests/fuzz/ \
    sh "$top_srcdir/tests/lib/tier.sh" "$@"
}
tier_is() {
  t_got=`tier "$1" 2>/dev/null`
  if test "$t_got" = "$2"; then
    echo "ok: tier $1: $t_got"
  else
    echo "FAIL: tier $1: '$t_got', expected '$2'"
    errors=1
  fi
}
tier_is quick 'tests/unit/a tests/cli/b.sh tests/fuzz/d'
tier_is slow 'tests/corpus/c.sh'
tier_is all 'tests/unit/a tests/cli/b.sh tests/corpus/c.sh tests/fuzz/d'
tier_is asan 'tests/unit/a tests/fuzz/d'
tier_is fuzz 'tests/fuzz/d'
# The idle shim (issue 24): run-mpi.sh preloads it into the ranks with
# yield_when_idle on, and a thread that keeps calling sched_yield() sleeps
# once it has yielded for 5 ms: 50 calls then take at least 50 x 100 us
# (without the shim, on an idle core, about 50 us).  Three tries: a thread
# descheduled for a millisecond starts a new wait, which yields at once.
# On a busy machine a plain sched_yield() may be slow too: then the
# timing cannot tell, the preload check still can.
idle=${FERRY_MPI_IDLE:-}
case ${FERRY_SANITIZE-}:${ASAN_OPTIONS-} in
  *address*verify_asan_link_order=0*) ;;
  *address*) idle= ;;
esac
if test -n "$idle" && test -r "$idle" && test -n "${RUN_MPI:-}"; then
  got=`$RUN_MPI 1 sh -c 'echo "$LD_PRELOAD|$OMPI_MCA_mpi_yield_when_idle"' 2>&1`
  case $got in
    *"$idle"*"|1") echo "ok: run-mpi.sh preloads the idle shim, yield_when_idle=1" ;;
    *) echo "FAIL: run-mpi.sh: a rank's LD_PRELOAD|yield_when_idle is '$got'"
       errors=1 ;;
  esac
  slept=`LD_PRELOAD=$idle python3 -c '
import os, time
for attempt in range(3):
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.01:  # past the 5 ms of yields
        os.sched_yield()
    t1 = time.monotonic()
    for i in range(50):
        os.sched_yield()
    us = (time.monotonic() - t1) * 1e6
    if us >= 5000:
        break
print(int(us))' 2>&1`
  case $slept in
    ''|*[!0-9]*) echo "FAIL: the idle shim timing did not run: $slept"; errors=1 ;;
    *) if test "$slept" -ge 5000; then
         echo "ok: the idle shim sleeps: 50 yields after 10 ms took $slept us"
       else
         echo "FAIL: the idle shim does not sleep: 50 yields took $slept us (< 5000)"
         errors=1
       fi ;;
  esac
else
  echo "note: FERRY_MPI_IDLE not set or not built (make check sets it): the idle shim is not checked"
fi

# ferry_test_init (tests/lib/common.sh) unsets the caller's loader options
# but keeps the harness's own settings: the idle shim, the MPI time limit,
# the sanitizer list (it once unset them all, so no test using it had the
# shim or the sanitizer time limits).
kept=`FERRY=/bin/true FERRY_MPI_IDLE=/x.so FERRY_MPI_TIMEOUT=7 \
  FERRY_SANITIZE=thread FERRY_BATCH_SIZE=3 FERRY_SEED=9 \
  FERRY_TEST_TMPDIR=$tmp top_srcdir=$top_srcdir sh -c '
  . "$top_srcdir/tests/lib/common.sh"
  ferry_test_init selftest_env
  echo "${FERRY_MPI_IDLE-}|${FERRY_MPI_TIMEOUT-}|${FERRY_SANITIZE-}|${FERRY_BATCH_SIZE-}|${FERRY_SEED-}"'`
if test "$kept" = "/x.so|7|thread||"; then
  echo "ok: ferry_test_init keeps FERRY_MPI_*, FERRY_SANITIZE; unsets loader options"
else
  echo "FAIL: ferry_test_init left '$kept' (want '/x.so|7|thread||')"
  errors=1
fi

# wait_line: a line that comes (written after 0.3 s), one that never comes
# (1 s, then 1), and a process that ends before the line (1 at once, not
# after the 30 s)
: >"$tmp/w.out"
(sleep 0.3; echo "epoch 0: go" >>"$tmp/w.out") &
w_t0=`date +%s`
if wait_line "$tmp/w.out" '^epoch 0:' 10 &&
   ! wait_line "$tmp/w.out" '^epoch 9:' 1 &&
   { sleep 0.2 & w_p=$!; wait $w_p; ! wait_line "$tmp/w.out" 'never' 30 $w_p; } &&
   test `expr \`date +%s\` - $w_t0` -lt 10; then
  echo "ok: wait_line sees a line come, gives up after its time, stops with its process"
else
  echo "FAIL: wait_line"
  errors=1
fi

if tier quikc >/dev/null 2>&1; then
  echo "FAIL: tier.sh accepted the tier 'quikc'"
  errors=1
else
  echo "ok: tier.sh refuses an unknown tier"
fi
exit $errors
