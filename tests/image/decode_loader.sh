#!/bin/sh
# decode_loader.sh - decode= through the loader (src/loader/decode.c,
# docs/images.md "Decode"): WebDataset shards of Pillow JPEGs and PNGs
# written by tests/image/make_decode_wds.py, read by the ferry tool.
#
#  - full size (crop=none, dct_scale=0, every image 48 x 64): `ferry dump
#    --row-hash` of jpg and png on 1, 2 and 3 ranks, every sample's pixels
#    equal to Pillow's, every sample once, cls aligned with them
#    (tests/fixtures/dump_compare.py);
#  - resize=shorter:40 crop=center image_size=32, dct_scale=0: equal to
#    torchvision's Resize(40) + CenterCrop(32) of Pillow's decode;
#  - crop=random on images of many sizes: the dump with threads=1 and
#    threads=4 (and another chunk size) the same line for line; epoch 1
#    other pixels for (nearly) every sample; ferry verify (exactly once,
#    equal batch counts, the rerun identical) on 4 ranks;
#  - a JPEG cut in its scan data (shard 2, sample 16): on 1 to 4 ranks
#    ferry dump ends (no hang: run-mpi.sh's timeout) with one message
#    naming the shard, the variable, the sample and the rank;
#  - ferry bench prints images/s (2 a sample with decode=jpg,png) and
#    decode's share of the CPU (in (0, 1], a positive time per image);
#  - bad options and combinations refused naming the option.
#
# Skips (77) without TurboJPEG and libspng, or a Python with NumPy,
# Pillow and torchvision (the references).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init decode_loader
grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" &&
  grep -q '^#define HAVE_SPNG 1' "$top_builddir/config.h" || {
  echo "SKIP: this build has no TurboJPEG or no libspng"
  exit 77
}
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
"$PYW" -c "import numpy, PIL, torchvision" >/dev/null 2>&1 || {
  echo "SKIP: python3-pil or python3-torchvision missing (./bootstrap deps installs them)"
  exit 77
}
fx=$tmp/fx
"$PYW" "$top_srcdir/tests/image/make_decode_wds.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_decode_wds.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
r=$fx/ref
refs() { # refs NAME: the reference of each shard of same/
  for k in 0 1 2; do printf '%s ' "$r/$1.$k.npy"; done
}

# ---- pixels against Pillow and torchvision ------------------------------
BATCH=4
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash --vars jpg,png,cls"
full="--decode jpg,png --image-size 48x64 --crop none --dct-scale 0"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
dump_queue "" jpg-ordered 1 ordered "$fx/same" jpg \
  "$full --shuffle none --shuffle-buffer 0 --threads 1" `refs same.jpg`
dump_queue "" jpg-2 2 spread "$fx/same" jpg "$full --seed 3 --threads 2" \
  `refs same.jpg`
dump_queue "" png-2 2 "spread,plan=jpg-2 np=2" "$fx/same" png \
  "$full --seed 3 --threads 2" `refs same.png`
dump_queue "" cls-2 2 "spread,plan=jpg-2 np=2" "$fx/same" cls \
  "$full --seed 3 --threads 2" `refs same.cls`
dump_queue "" jpg-3 3 spread "$fx/same" jpg \
  "$full --seed 4 --threads 4 --chunk-samples 3" `refs same.jpg`
dump_queue "" center-3 3 spread "$fx/same" jpg \
  "--decode jpg --image-size 32 --resize shorter:40 --crop center --dct-scale 0 --seed 5 --threads 3" \
  `refs center.jpg`
dump_run
"$PYW" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" >"$tmp/cmp.out" 2>&1 ||
  fail=1
cat "$tmp/cmp.out"

# ---- random crops: threads, epochs, exactly once -------------------------
rnd="--vars jpg,cls --var jpg --decode jpg --image-size 24 --crop random --seed 9 --batch-size 3 --tail partial --row-hash"
$RUN_MPI 2 "$FERRY" dump "$fx/mixed" $rnd --threads 1 >"$tmp/t1" 2>&1 &&
  $RUN_MPI 2 "$FERRY" dump "$fx/mixed" $rnd --threads 4 >"$tmp/t4" 2>&1 &&
  $RUN_MPI 2 "$FERRY" dump "$fx/mixed" $rnd --threads 3 --epoch 1 >"$tmp/e1" 2>&1 || {
  failed "ferry dump of random crops" "$tmp/t1"
  cat "$tmp/t4" "$tmp/e1"
}
n=`wc -l <"$tmp/t1"`
if test "$n" -eq 26 && cmp -s "$tmp/t1" "$tmp/t4"; then
  ok "crop=random: threads=1 and threads=4 serve the same pixels ($n samples)"
else
  failed "crop=random: threads=1 and threads=4 differ ($n lines)" "$tmp/t4"
fi
# global index -> hash, epoch 0 against epoch 1: all but at most one differ
awk '{print $3, $5}' "$tmp/t1" | sort >"$tmp/h0"
awk '{print $3, $5}' "$tmp/e1" | sort >"$tmp/h1"
same=`comm -12 "$tmp/h0" "$tmp/h1" | wc -l`
if test "`wc -l <"$tmp/h1"`" -eq 26 && test "$same" -le 1; then
  ok "crop=random: epoch 1 crops other pixels ($same of 26 samples alike)"
else
  failed "crop=random: epoch 1 repeats $same of epoch 0's crops" "$tmp/e1"
fi
expect_verify 4 "$fx/mixed" --vars jpg,cls --decode jpg --image-size 24 \
  --batch-size 2 --threads 2

# ferry bench counts images with decode=
if $RUN_MPI 2 "$FERRY" bench "$fx/same" --vars jpg,png,cls --decode jpg,png \
     --image-size 32 --batch-size 4 --threads 2 >"$tmp/bench" 2>&1 &&
   grep '^decode: [0-9.]* images/s (decode=jpg,png: 2 images a sample' \
     "$tmp/bench" >/dev/null; then
  ok "ferry bench: `grep '^decode:' "$tmp/bench"`"
else
  failed "ferry bench with decode= prints no images/s" "$tmp/bench"
fi
# ... and decode's share of the CPU: ferry_stats' images_decoded and
# decode_cpu_seconds (summed over the ranks, over their processes' CPU)
if $RUN_MPI 2 "$FERRY" bench "$fx/same" --vars jpg,png,cls --decode jpg,png \
     --image-size 32 --batch-size 4 --threads 2 --epochs 2 --json \
     >"$tmp/bench.json" 2>&1 &&
   "$PYW" - "$tmp/bench.json" <<'PY' >"$tmp/bench.chk" 2>&1; then
import json, sys
d = json.load(open(sys.argv[1]))
f, ms = d["decode_cpu_fraction"], d["decode_cpu_ms_per_image"]
assert 0 < f <= 1, "decode_cpu_fraction %r" % f
assert 0 < ms < 1000, "decode_cpu_ms_per_image %r" % ms
print("decode %.0f%% of the CPU, %.3f ms an image" % (100 * f, ms))
PY
  ok "ferry bench --json: `cat "$tmp/bench.chk"`"
else
  failed "ferry bench --json: decode's CPU share" "$tmp/bench.json"
  cat "$tmp/bench.chk"
fi

# ---- a corrupt JPEG: one clear error, on any rank count ------------------
bad=`cat "$fx/corrupt/bad.txt"`
for np in 1 2 3 4; do
  expect_refusal -l "corrupt JPEG on $np ranks" -n "$bad" 1 \
    "variable jpg|sample 16|rank |premature end" \
    $RUN_MPI $np "$FERRY" dump "$fx/corrupt" --vars jpg,cls --var cls \
    --decode jpg --image-size 32 --batch-size 2 --threads 2
done

# ---- bad options --------------------------------------------------------
# refused at ferry_open (status 1), or as the value is set (status 2, the
# tool's usage error); a name of the corrupt shards' 40 x 56 images with
# crop=none and the default image_size: the sample's own error
refuse() { # refuse STATUS WORDS DATASET OPTIONS...
  r_st=$1 r_w=$2 r_ds=$3
  shift 3
  expect_refusal -l "refused: $*" "$r_st" "$r_w" \
    "$FERRY" dump "$r_ds" --vars jpg,cls --batch-size 2 "$@"
}
s=$fx/same
refuse 1 "option decode|cls|ragged uint8" "$s" --decode cls
refuse 1 "option decode|'nope'" "$s" --decode nope
refuse 1 "option resize|crop=random" "$s" --decode jpg --resize shorter:40
refuse 1 "option resize|crop=none" "$s" --decode jpg --crop none --resize shorter:40
refuse 1 "option mean|layout=hwc" "$s" --decode jpg --mean 0.5,0.5,0.5
refuse 1 "option std|channels=1" "$s" --decode jpg --layout chw --channels 1 --std 1,2,3
refuse 1 "option channels" "$s" --decode jpg --channels 2
refuse 1 "option crop_scale" "$s" --decode jpg --crop-scale 0.5:2
refuse 2 "option 'crop_ratio'|bad value" "$s" --decode jpg --crop-ratio 2:1
refuse 2 "option 'image_size'|bad value" "$s" --decode jpg --image-size 20y30
refuse 2 "option 'std'|bad value" "$s" --decode jpg --layout chw --std 1,0,1
refuse 2 "option 'mean'|bad value" "$s" --decode jpg --layout chw --mean 0.5,0.5
refuse 2 "option 'resize'|bad value" "$s" --decode jpg --resize shorter:0
refuse 1 "image of 56x40|neither resize nor crop|sample 0|variable jpg" \
  "$fx/corrupt" --decode jpg --crop none --shuffle none --threads 1
exit $fail
