#!/bin/sh
# decode_loader.sh - decode= in the loader against torchvision's
# DataLoader (docs/performance.md, "Decode in the loader").
#
# usage: tests/bench/decode_loader.sh BUILD_DIR WORK_DIR [IMAGES] [THREADS] [ROUNDS]
#
# The photo-like 500x375 JPEGs of decode.sh (decode_peer.py make, about
# 110 KiB each), IMAGES (400) of them, written also as WebDataset shards
# of 100 samples (decode_loader_peer.py shards).  Then, alternated ROUNDS
# (3) times, the median of each:
#   ferry: `ferry bench SHARDS --vars jpg,cls --decode jpg --image-size 224
#          --crop random --threads THREADS --batch-size 32 --epochs 3`
#          on one rank (images/s over the run: decode=jpg, one a sample);
#   torchvision: a DataLoader of THREADS workers over the same files, PIL
#          decode + RandomResizedCrop(224) + flip + PILToTensor, batch 32,
#          2 epochs timed after a first (decode_loader_peer.py run).
# Prints the rates and the ratio.
set -eu
build=$(cd "$1" && pwd)
work=$2
count=${3:-400}
threads=${4:-2}
rounds=${5:-3}
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
"$py" "$here/decode_peer.py" make "$work/jpeg" "$count"
rm -rf "$work/shards"
"$py" "$here/decode_loader_peer.py" shards "$work/jpeg" "$work/shards" 100
echo "images: $count JPEGs, $(du -k "$work/jpeg" | tail -n 1 | cut -f1) KiB; threads/workers $threads"
median() { sort -n | sed -n "$(( (rounds + 1) / 2 ))p"; }
: >"$work/f" && : >"$work/t"
i=0
while test $i -lt "$rounds"; do
  "$build/ferry" bench "$work/shards" --vars jpg,cls --decode jpg \
    --image-size 224 --crop random --threads "$threads" --batch-size 32 \
    --epochs 3 | sed -n 's/^decode: \([0-9.]*\) images.*/\1/p' >>"$work/f"
  "$py" "$here/decode_loader_peer.py" run "$work/jpeg" "$threads" 32 2 |
    sed -n 's/^torchvision: \([0-9.]*\) images.*/\1/p' >>"$work/t"
  i=$((i + 1))
done
f=$(median <"$work/f")
t=$(median <"$work/t")
echo "ferry decode=: $(tr '\n' ' ' <"$work/f")-> median $f images/s"
echo "torchvision DataLoader: $(tr '\n' ' ' <"$work/t")-> median $t images/s"
echo "ratio: $(echo "$f $t" | awk '{printf "%.2f", $1 / $2}')x"
