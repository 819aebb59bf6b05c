#!/bin/sh
# decode.sh - the image decode benchmark of docs/performance.md, "Image
# decode" (issue 28: JPEG decode + resize + crop to 224x224 at >= 2x
# torchvision's PIL pipeline per core).
#
# usage: tests/bench/decode.sh BUILD_DIR WORK_DIR [IMAGES] [ROUNDS]
#
# Writes IMAGES (200) photo-like 500x375 JPEGs with Pillow at quality 90
# (gradients, shapes and noise: about 110 KiB each; decode_peer.py make),
# builds tests/bench/img_bench (make tests/bench/img_bench), then measures
# on one core, in the same run, the three pipelines both ways:
#   random   RandomResizedCrop(224) + RandomHorizontalFlip -> uint8
#   center   Resize(256) + CenterCrop(224) -> uint8
#   random/f32  the same random crop -> ToTensor + Normalize (float32 CHW)
# ferry: img_bench (one thread, files read each round; again without DCT
# scaling, FERRY_IMG_NO_DCT, without the cropped JPEG decode,
# FERRY_IMG_NO_CROP, and without the SIMD resize, FERRY_IMG_NO_SIMD, for
# the levers' share); torchvision:
# decode_peer.py run (ImageFolder's loader: open, Image.open, convert RGB;
# then the transforms; one process, num_workers=0, torch on one thread).
# Each measures images per CPU second of its process (one thread: per
# core), which other jobs on a shared machine disturb less than the wall
# time; three runs of each, alternated, the median.  Prints the rates and
# the ratios.
set -eu
build=$(cd "$1" && pwd)
work=$2
count=${3:-200}
rounds=${4:-5}
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
"$py" "$here/decode_peer.py" make "$work/jpeg" "$count"
make -s -C "$build" tests/bench/img_bench >/dev/null
files=$(ls "$work"/jpeg/*.jpg)
echo "images: $count JPEGs, $(du -k "$work/jpeg" | tail -n 1 | cut -f1) KiB"
# images per CPU second of RUN's output; three runs of each, alternated,
# the median.
rate() { sed -n 's/.*images\/cpu-s \([0-9.]*\).*/\1/p'; }
median() { sort -n | sed -n 2p; }
for mode in random center random/f32; do
  case $mode in
    random/f32) m=random; layout=f32 ;;
    *) m=$mode; layout=u8 ;;
  esac
  : >"$work/c" ; : >"$work/c0" ; : >"$work/c1" ; : >"$work/c2" ; : >"$work/t"
  for i in 1 2 3; do
    "$build/tests/bench/img_bench" $m $layout "$rounds" $files | rate >>"$work/c"
    FERRY_IMG_NO_DCT=1 "$build/tests/bench/img_bench" $m $layout "$rounds" \
      $files | rate >>"$work/c0"
    FERRY_IMG_NO_CROP=1 "$build/tests/bench/img_bench" $m $layout "$rounds" \
      $files | rate >>"$work/c1"
    FERRY_IMG_NO_SIMD=1 "$build/tests/bench/img_bench" $m $layout "$rounds" \
      $files | rate >>"$work/c2"
    "$py" "$here/decode_peer.py" run "$m" "$layout" "$rounds" $files |
      rate >>"$work/t"
  done
  c=$(median <"$work/c") c0=$(median <"$work/c0") c1=$(median <"$work/c1")
  c2=$(median <"$work/c2")
  t=$(median <"$work/t")
  ratio() { echo "$1 $t" | awk '{printf "%.2f", $1 / $2}'; }
  echo "$mode: ferry $c images/cpu-s (without DCT scaling $c0, without the cropped JPEG decode $c1, without the SIMD resize $c2), torchvision $t, ratio $(ratio "$c")x ($(ratio "$c0")x without DCT scaling, $(ratio "$c1")x without the cropped decode, $(ratio "$c2")x without the SIMD resize)"
done
