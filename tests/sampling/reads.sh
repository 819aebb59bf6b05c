#!/bin/sh
# reads.sh - each rank reads its own blocks under weighted sampling and a
# mix (docs/sampling.md: "a rank reads the blocks of its stretch and little
# else").  `ferry bench --json` on 4 ranks, one epoch, tail=partial: the
# bytes read from storage over the bytes handed out stay below 1.3 (the
# blocks that straddle two ranks' stretches are read by both).  Two plan
# faults this caught (both 1.66-1.75x here): the epoch's last draw window,
# shorter than the others, was permuted whole, so every rank drew from
# all its blocks; and a mix cut its sources' draws into pieces at
# multiples of draw_block, which after a pass's short block took the ends
# of two blocks each.  Small draw blocks and windows (--draw-block 256
# --draw-window 8192) stand in for the defaults' 256 KiB and 16 x
# draw_block x shuffle_buffer: several windows and a short last one.
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY.
# Exit 0 pass, 1 fail, 77 skip (no NumPy to write the weights).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init reads

py=${PYTHON_NUMPY:-}
if test -z "$py" || ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY) to write the weights"
  exit 77
fi
"$FERRY" gen "$tmp/a" --samples 40000 --var x:float32:64 >/dev/null &&
"$FERRY" gen "$tmp/b" --samples 20000 --var x:float32:64 >/dev/null &&
"$py" -c "import numpy as np; np.save('$tmp/w.npy', np.linspace(1, 3, 40000))" ||
  { echo "FAIL: writing the datasets"; exit 1; }

# ratio NAME DATASET OPTIONS...: bytes_read / bytes of one epoch on 4 ranks
ratio() {
  name=$1 ds=$2
  shift 2
  $RUN_MPI 4 "$FERRY" bench "$ds" --epochs 1 --tail partial --io independent \
    --draw-block 256 --draw-window 8192 --json "$@" >"$tmp/out" 2>"$tmp/err" ||
    { failed "$name: bench failed"; cat "$tmp/err"; return; }
  r=`sed -n 's/.*"bytes": \([0-9]*\),.*"bytes_read": \([0-9]*\),.*/\2 \1/p' "$tmp/out" |
    awk '$2 > 0 { printf "%.3f", $1 / $2 }'`
  if test -z "$r"; then
    failed "$name: no bytes in bench's JSON"; cat "$tmp/out"
  elif awk -v r="$r" 'BEGIN { exit !(r >= 0.99 && r <= 1.3) }'; then
    ok "$name: 4 ranks read ${r}x the bytes they handed out"
  else
    failed "$name: 4 ranks read ${r}x the bytes they handed out (at most 1.3)"
  fi
}
ratio weights "$tmp/a" --weights "$tmp/w.npy"
ratio "weights, seed 7" "$tmp/a" --weights "$tmp/w.npy" --seed 7
ratio "a mix 2:1" mix --mix "$tmp/a=2,$tmp/b=1"
ratio "a mix 1:1, restart" mix --mix "$tmp/a=1,$tmp/b=1" --mix-exhaust restart
exit $fail
