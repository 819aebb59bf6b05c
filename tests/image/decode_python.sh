#!/bin/sh
# decode_python.sh - decode= in Python (tests/image/decode_check.py on 1
# to 4 ranks): ferry.Loader and ferry.torch over the shards of
# tests/image/make_decode_wds.py: Pillow's pixels at full size,
# torchvision's center crops, random crops the same with any threads and
# other in another epoch, chw float32 normalised, a resume mid-epoch, a
# corrupt JPEG's error the same on every rank.
. "$top_srcdir/tests/python/common.sh"
need_module PIL "python3-pil"
need_module torchvision "python3-torchvision"
"$PY" "$top_srcdir/tests/image/make_decode_wds.py" "$tmp/fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_decode_wds.py"
  cat "$tmp/make.out"
  exit 1
}
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
status=0
for np in 1 2 3 4; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/image/decode_check.py" "$tmp/fx" \
    "$tmp/state.$np" >"$tmp/out" 2>&1 ||
    { echo "FAIL: decode_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
