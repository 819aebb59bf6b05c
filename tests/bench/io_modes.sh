#!/bin/sh
# io_modes.sh - the .npy benchmark's reads against dd (issue 12): 1 GiB of
# 1 KiB rows (float32[256]), page cache warm, 2 ranks, shuffle=chunks,
# shuffle_buffer 4, batch 256, 3 epochs; ROUNDS (default 3) interleaved
# rounds of: dd of the file (bs=4M), ferry bench with io=independent
# (pread), io=mmap and io=collective.  Prints GiB/s and the ratio to dd of
# the same round.
#
# usage: tests/bench/io_modes.sh BUILD_DIR WORK_DIR [SIZE]   (SIZE default 1GiB)
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}
size=${3:-1GiB}
rounds=${ROUNDS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work"
if test "`cat "$work/made" 2>/dev/null`" != "$size"; then
  rm -rf "$work/data"
  "$build/ferry" gen "$work/data" --size "$size" --var samples:float32:256 >/dev/null
  echo "$size" >"$work/made"
fi
f=$work/data/samples.npy
cat "$f" >/dev/null
for r in $(seq "$rounds"); do
  bytes=$(stat -c %s "$f")
  t0=$(date +%s.%N)
  dd if="$f" of=/dev/null bs=4M 2>/dev/null
  t1=$(date +%s.%N)
  dd=$(awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN {print b / (z - a) / 1073741824}')
  line="round $r: dd $(printf %.2f "$dd") GiB/s"
  for io in independent mmap collective; do
    bps=$(mpirun --oversubscribe -np 2 "$build/ferry" bench "$work/data" --io $io \
            --epochs 3 --shuffle chunks --shuffle-buffer 4 --batch-size 256 --json |
          grep -o '"bytes_per_s": [0-9.e+]*' | head -n 1 | sed 's/.*: //')
    line="$line; $(awk -v io=$io -v b="$bps" -v d="$dd" 'BEGIN {g = b / 1073741824; printf "%s %.2f GiB/s (%.2fx dd)", io, g, g / d}')"
  done
  echo "$line"
done
