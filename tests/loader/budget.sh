#!/bin/sh
# budget.sh - the memory budget against the memory measured (issue 11): for
# a plan-heavy dataset (4 M one-byte samples in chunks of 100 and 10000)
# and a buffer-heavy one (4 KiB rows, prefetch and shuffle_buffer 8), on 2
# ranks, `ferry bench`'s peak RSS growth over the RSS before ferry_open
# (the loader's own memory) must stay within the stated margin of the
# budget: growth <= 1.15 x budget + 16 MiB (threads' stacks, MPI's
# buffers, malloc's arenas) and growth >= 0.5 x budget - 8 MiB (the budget
# does not overstate); `ferry info`'s figure, computed at open before any
# epoch, is within 10% of the budget of the planned epoch.  docs/options.md
# states the margin.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init budget
py=${PYTHON_NUMPY:-/usr/bin/python3}
test -x "$py" || py=python3
"$FERRY" gen "$tmp/small" --samples 4000000 --var x:uint8 >/dev/null &&
  "$FERRY" gen "$tmp/wide" --samples 20000 --var x:float32:1024 >/dev/null ||
  { echo "FAIL: ferry gen"; exit 1; }
check() {
  label=$1
  shift
  if ! $RUN_MPI 2 "$FERRY" info "$@" --json >"$tmp/info" 2>"$tmp/err" ||
     ! $RUN_MPI 2 "$FERRY" bench "$@" --epochs 1 --json >"$tmp/bench" 2>>"$tmp/err"; then
    echo "FAIL: $label: ferry info/bench failed"
    sed 's/^/    /' "$tmp/err" | head -20
    fail=1
    return
  fi
  "$py" - "$tmp/info" "$tmp/bench" "$label" <<'PY' || fail=1
import json, sys
def last_json(path):
    rows = [l for l in open(path) if l.lstrip().startswith("{")]
    return json.loads(rows[-1])
info, bench, label = last_json(sys.argv[1]), last_json(sys.argv[2]), sys.argv[3]
MiB = 1 << 20
budget = bench["budget_bytes"]
growth = bench["rss_growth_bytes"]
at_open = info["memory_budget"]["total_bytes"]
ok = True
def say(cond, what):
    global ok
    print(("ok: " if cond else "FAIL: ") + label + ": " + what)
    ok = ok and cond
say(growth <= 1.15 * budget + 16 * MiB,
    "RSS growth %.1f MiB <= 1.15 x budget %.1f MiB + 16 MiB" % (growth / MiB, budget / MiB))
say(growth >= 0.5 * budget - 8 * MiB,
    "RSS growth %.1f MiB >= 0.5 x budget %.1f MiB - 8 MiB" % (growth / MiB, budget / MiB))
say(abs(at_open - budget) <= 0.10 * budget,
    "ferry info's budget %.1f MiB within 10%% of the epoch's %.1f MiB" % (at_open / MiB, budget / MiB))
sys.exit(0 if ok else 1)
PY
}
check "plan-heavy, chunks of 100" "$tmp/small" --chunk-samples 100 --batch-size 256
check "plan-heavy, chunks of 10000" "$tmp/small" --chunk-samples 10000 --batch-size 256
check "buffer-heavy" "$tmp/wide" --batch-size 256 --prefetch 8 --shuffle-buffer 8
# An allocation that fails names the dataset and the size it tried (issue
# 11, issue 12): the plan holds no per-sample array any more, but one of 40 M
# samples in 40 M chunks of one sample needs about 5 GB of extents and runs
# (issue 12: O(chunks)), the address space is limited to 1 GB (one process,
# MPI's singleton start).
if "$FERRY" gen "$tmp/oom" --samples 40000000 --var x:uint8 >/dev/null; then
  ( ulimit -v 1000000 && "$FERRY" bench "$tmp/oom" --chunk-samples 1 --epochs 1 ) \
    >"$tmp/oom.out" 2>&1
  st=$?
  if test $st = 1 && grep "dataset $tmp/oom, epoch 0: out of memory: [0-9]* bytes for the plan's extents" "$tmp/oom.out" >/dev/null; then
    echo "ok: out of memory names the dataset and the size: `tail -n 1 "$tmp/oom.out"`"
  else
    echo "FAIL: out of memory under ulimit -v: status $st, message:"
    sed 's/^/    /' "$tmp/oom.out" | tail -5
    fail=1
  fi
  rm -rf "$tmp/oom"
fi
exit $fail
