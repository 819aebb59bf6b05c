#!/bin/sh
# io_modes.sh - the .npy benchmark's reads against dd (issue 12): SIZE
# (default 2 GiB) of 1 KiB rows (float32[256]) in one .npy, page cache warm,
# 2 ranks, shuffle=chunks, shuffle_buffer 4, batch 256, 3 epochs.  ROUNDS
# (default 5) interleaved rounds of: dd of the file (bs=4M, as many passes
# as ferry's epochs), then ferry bench
# with each of MODES (default "independent mmap auto collective").  Prints
# each round's GiB/s and ratio to that round's dd, then per mode the median
# ratio and its spread (min-max) over the rounds.
#
# The data lives in WORK_DIR (its file system decides what io=auto picks).
# DIRECT=1 measures the other regime instead: the page cache is dropped
# before each reader (echo 3 > /proc/sys/vm/drop_caches: root only), dd
# reads with iflag=direct and ferry as configured (cold cache: every byte
# comes from the device).
#
# usage: tests/bench/io_modes.sh BUILD_DIR WORK_DIR [SIZE]
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}
size=${3:-2GiB}
rounds=${ROUNDS:-5}
modes=${MODES:-independent mmap auto collective}
np=${NP:-2}
direct=${DIRECT:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work"
if test "`cat "$work/made" 2>/dev/null`" != "$size"; then
  rm -rf "$work/data"
  "$build/ferry" gen "$work/data" --size "$size" --var samples:float32:256 >/dev/null
  echo "$size" >"$work/made"
fi
f=$work/data/samples.npy
bytes=$(stat -c %s "$f")
cold() { # drop the page cache (DIRECT=1), or warm the file
  if test "$direct" = 1; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
  else
    cat "$f" >/dev/null
  fi
}
res=$(mktemp)
trap 'rm -f "$res"' 0
"$build/ferry" info "$work/data" --io auto | grep -i '^io ' || true
for r in $(seq "$rounds"); do
  cold
  # dd reads the file as often as ferry does (3 epochs warm, 1 cold)
  if test "$direct" = 1; then flag=iflag=direct ep=1; else flag= ep=3; fi
  t0=$(date +%s.%N)
  for i in $(seq $ep); do dd if="$f" of=/dev/null bs=4M $flag 2>/dev/null; done
  t1=$(date +%s.%N)
  dd=$(awk -v b="$bytes" -v e=$ep -v a="$t0" -v z="$t1" 'BEGIN {print e * b / (z - a) / 1073741824}')
  load=$(cut -d' ' -f1 /proc/loadavg)
  line="round $r (load $load): dd $(printf %.2f "$dd") GiB/s"
  for io in $modes; do
    cold
    bps=$(mpirun --oversubscribe -np "$np" "$build/ferry" bench "$work/data" --io "$io" \
            --epochs $ep --shuffle chunks --shuffle-buffer 4 --batch-size 256 --json |
          grep -o '"bytes_per_s": [0-9.e+]*' | head -n 1 | sed 's/.*: //')
    ratio=$(awk -v b="$bps" -v d="$dd" 'BEGIN {printf "%.3f", b / 1073741824 / d}')
    echo "$io $ratio" >>"$res"
    line="$line; $io $(awk -v b="$bps" 'BEGIN {printf "%.2f", b / 1073741824}') GiB/s (${ratio}x)"
  done
  echo "$line"
done
echo "ratio to dd over $rounds rounds (median, min-max):"
for io in $modes; do
  grep "^$io " "$res" | awk '{print $2}' | sort -n |
    awk -v io="$io" '{v[NR] = $1} END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "  %-12s %.2fx (%.2f-%.2f)\n", io, m, v[1], v[NR]}'
done
