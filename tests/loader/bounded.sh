#!/bin/sh
# bounded.sh - issue 30: the tool is bounded by the configuration, not by
# the dataset's size.  A sparse .npy of 2,147,483,700 one-byte samples (2^31
# + 52, jhdf's tiny_huge_1d_over_maxint.hdf5 has as many; the file is a
# hole, nothing is written): on 2 ranks
#   - `ferry info` prints a plan of at most 64 MiB a rank (it printed 1.5
#     GiB with chunks of 4 Mi samples: 32 B per sample of the windows alive);
#   - `ferry dump` of 4 Mi of its samples (--max-chunks 2) holds at most 256
#     MiB a rank (peak RSS, /usr/bin/time): it held a 40-byte record per
#     sample and rank 0 all of them, and a 32-byte slot per sample of its
#     window (rank 0 peaked at 263 MiB before the fix), and serves every
#     sample once;
#   - `ferry verify` and `ferry quality` refuse up front, naming the size
#     they would need and --max-memory.
# And issue 30 item 5: `ferry dump --var NAME` with NAME outside --vars
# prints NAME's values (it said "has no variable").
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init bounded
py=${PYTHON_NUMPY:-}
test -n "$py" || { echo "SKIP: no Python with NumPy (PYTHON_NUMPY)"; exit 77; }
test -x /usr/bin/time || { echo "SKIP: /usr/bin/time not installed"; exit 77; }
N=2147483700
"$py" - "$tmp/huge.npy" "$N" <<'PY' || { echo "FAIL: the sparse .npy"; exit 1; }
import sys, numpy as np
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    np.lib.format.write_array_header_1_0(
        f, {"descr": "|u1", "fortran_order": False, "shape": (n,)})
    f.truncate(f.tell() + n)  # a hole: no block is written
PY
MiB=1048576

# ferry info: the plan of the budget line, at most 64 MiB.
if $RUN_MPI 2 "$FERRY" info "$tmp/huge.npy" --chunk-samples 4194304 --json \
    >"$tmp/info" 2>"$tmp/err"; then
  plan=`"$py" -c "
import json, sys
rows = [l for l in open(sys.argv[1]) if l.lstrip().startswith('{')]
print(json.loads(rows[-1])['memory_budget']['plan_bytes'])" "$tmp/info"`
  if test -n "$plan" && test "$plan" -le $((64 * MiB)); then
    echo "ok: ferry info: plan $plan bytes <= 64 MiB"
  else
    echo "FAIL: ferry info: plan '$plan' bytes > 64 MiB"
    fail=1
  fi
else
  echo "FAIL: ferry info failed"; sed 's/^/    /' "$tmp/err" | head; fail=1
fi

# ferry dump: peak RSS per rank, every sample once.  Rank 0 writes the
# 4 Mi lines to a file (--output): through mpirun's forwarding they cost
# 30 s of the test's time.
rank_rss='exec /usr/bin/time -f %M -o "$0.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-$$}}" "$@"'
if $RUN_MPI 2 sh -c "$rank_rss" "$tmp/rss" "$FERRY" dump "$tmp/huge.npy" \
    --chunk-samples 2097152 --max-chunks 2 --batch-size 8192 \
    --tail partial --output "$tmp/dump" >"$tmp/out" 2>"$tmp/err"; then
  for f in "$tmp"/rss.*; do
    kib=`tail -n 1 "$f"`
    if test "$kib" -le $((256 * 1024)); then
      echo "ok: ferry dump: peak RSS $kib KiB <= 256 MiB (`basename "$f"`)"
    else
      echo "FAIL: ferry dump: peak RSS $kib KiB > 256 MiB (`basename "$f"`)"
      fail=1
    fi
  done
  lines=`wc -l <"$tmp/dump"`
  # Byte order (LC_ALL=C): the count of distinct indices is the same, and
  # sorting 4 Mi lines takes about half the time of the locale's collation.
  distinct=`cut -d' ' -f3 "$tmp/dump" | LC_ALL=C sort -u | wc -l`
  if test "$lines" -eq 4194304 && test "$distinct" -eq 4194304; then
    echo "ok: ferry dump: 4194304 samples, each once"
  else
    echo "FAIL: ferry dump: $lines lines, $distinct distinct samples (4194304)"
    fail=1
  fi
else
  echo "FAIL: ferry dump failed"; sed 's/^/    /' "$tmp/err" | head; fail=1
fi
rm -f "$tmp/dump"

# verify and quality refuse before holding anything per sample.
for cmd in verify quality; do
  if $RUN_MPI 2 "$FERRY" $cmd "$tmp/huge.npy" --chunk-samples 4194304 \
      >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: ferry $cmd accepted $N samples under --max-memory 4GiB"
    fail=1
  elif grep "needs about [0-9.]* GiB on rank 0 for up to $N samples.*more than --max-memory 4.0 GiB" "$tmp/err" >/dev/null; then
    echo "ok: ferry $cmd refuses: `grep 'needs about' "$tmp/err" | head -n 1`"
  else
    echo "FAIL: ferry $cmd: not the refusal expected:"
    sed 's/^/    /' "$tmp/err" | head; fail=1
  fi
done

# dump --var NAME outside --vars: NAME's values (issue 30, item 5).
"$FERRY" gen "$tmp/two" --samples 1000 --var samples:float32:3 \
  --var targets:int64 >/dev/null || { echo "FAIL: ferry gen"; exit 1; }
$RUN_MPI 2 "$FERRY" dump "$tmp/two" --vars samples --var targets \
  --tail partial --batch-size 64 >"$tmp/d.out" 2>"$tmp/d.err"
echo $? >"$tmp/d.status"
printf 'var-outside-vars\t%s\t%s\t%s\t2\t64\t-\t%s\n' "$tmp/d.out" \
  "$tmp/d.err" "$tmp/d.status" "$tmp/two/targets.npy" >"$tmp/jobs"
"$py" "$top_srcdir/tests/fixtures/dump_compare.py" "$tmp/jobs" || fail=1
exit $fail
