#!/bin/sh
# weights_epoch.sh - issue 30, item 1: "weighted sampling is weighted only
# on average over many epochs".  The issue's exact case through the tool:
# a 40,000-row .npy dataset (targets int64, w float32, label int64: 20-byte
# rows, so draw_block is 13,108 rows and the epoch reads about three
# blocks), w = 1 for the first half and 3 for the second, `--vars
# targets,w,label --weights w`, 3 ranks, batch 40.  One epoch's share of
# the heavy half must be 0.75 +- 0.02 for seeds 1, 2, 3, 4, 5 and 9 (it
# was 0.908, 0.825, 0.826, 0.492, 0.913, 0.911).  The same bound for
# `--balance label` (0.5 each) and without replacement with num_draws
# 20000 (the share of successive sampling, computed here: 0.6823), and
# `ferry verify --weights w` passes its tightened sampling check while
# `ferry info` says how the blocks share the draws.
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY.
# Exit 0 pass, 1 fail, 77 skip (no NumPy to write the dataset).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init weights_epoch

py=${PYTHON_NUMPY:-}
if test -z "$py" || ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY) to write the dataset"
  exit 77
fi
"$py" - "$tmp/data" <<'PY' || { echo "FAIL: writing the dataset"; exit 1; }
import os, sys, numpy as np
d = sys.argv[1]
os.makedirs(d)
n = 40000
np.save(os.path.join(d, "targets.npy"), np.arange(n, dtype=np.int64))
w = np.ones(n, np.float32)
w[n // 2:] = 3
np.save(os.path.join(d, "w.npy"), w)
np.save(os.path.join(d, "label.npy"), (np.arange(n) >= n // 2).astype(np.int64))
PY

# share OUT WANT: the share of draws of samples >= 20000 in a dump, within
# 0.02 of WANT.
share() {
  awk -v want="$2" '{n++; if ($3 >= 20000) h++}
    END {s = n ? h / n : 0; d = s - want; if (d < 0) d = -d;
         printf "%d draws, heavy half %.4f (want %.4f)\n", n, s, want;
         exit !(n > 0 && d <= 0.02)}' "$1"
}

opts="--vars targets,w,label --batch-size 40"
for seed in 1 2 3 4 5 9; do
  $RUN_MPI 3 "$FERRY" dump "$tmp/data" $opts --weights w --seed $seed \
    >"$tmp/dump" 2>"$tmp/err" || { echo "FAIL: dump seed $seed"; cat "$tmp/err"; fail=1; }
  printf 'weights seed %s: ' $seed
  share "$tmp/dump" 0.75 || { echo "FAIL: seed $seed: not 0.75 +- 0.02"; fail=1; }
done
for seed in 1 4; do
  $RUN_MPI 3 "$FERRY" dump "$tmp/data" $opts --balance label --seed $seed \
    >"$tmp/dump" 2>"$tmp/err" || { echo "FAIL: dump --balance seed $seed"; cat "$tmp/err"; fail=1; }
  printf 'balance seed %s: ' $seed
  share "$tmp/dump" 0.5 || { echo "FAIL: balance seed $seed: not 0.5 +- 0.02"; fail=1; }
done
# Without replacement, 20000 draws: 20000 (1 - e^-t) + 20000 (1 - e^-3t)
# = 20000, the heavy half's share (1 - e^-3t) / ((1 - e^-t) + (1 - e^-3t)).
want=`"$py" -c '
import math
lo, hi = 0.0, 10.0
for _ in range(200):
    t = (lo + hi) / 2
    f = (1 - math.exp(-t)) + (1 - math.exp(-3 * t))
    lo, hi = (t, hi) if f < 1 else (lo, t)
print("%.4f" % (1 - math.exp(-3 * lo)))'`
for seed in 1 4; do
  $RUN_MPI 3 "$FERRY" dump "$tmp/data" $opts --weights w --replacement no \
    --num-draws 20000 --seed $seed >"$tmp/dump" 2>"$tmp/err" ||
    { echo "FAIL: dump --replacement no seed $seed"; cat "$tmp/err"; fail=1; }
  printf 'no replacement seed %s: ' $seed
  share "$tmp/dump" "$want" || { echo "FAIL: no replacement seed $seed: not $want +- 0.02"; fail=1; }
  dup=`awk '{print $3}' "$tmp/dump" | sort | uniq -d | wc -l`
  test "$dup" = 0 || { echo "FAIL: no replacement: $dup samples twice"; fail=1; }
done

$RUN_MPI 3 "$FERRY" verify "$tmp/data" $opts --weights w --seed 4 --epochs 2 \
  >"$tmp/verify" 2>&1 && grep -q "^PASS sampling" "$tmp/verify" &&
  echo "ok: ferry verify's sampling check passes" ||
  { echo "FAIL: ferry verify --weights w"; cat "$tmp/verify"; fail=1; }
$RUN_MPI 3 "$FERRY" info "$tmp/data" $opts --weights w >"$tmp/info" 2>&1 &&
  grep -q "^sampling .*read in blocks of 13108 rows (every block gets its weight's share of each epoch's draws to within one draw" "$tmp/info" &&
  echo "ok: ferry info says how the blocks share the draws" ||
  { echo "FAIL: ferry info's sampling line"; cat "$tmp/info"; fail=1; }
exit $fail
