#!/bin/sh
# io_modes.sh - the .npy benchmark's reads against dd (issue 12): SIZE
# (default 2 GiB) of 1 KiB rows (float32[256]) in one .npy, page cache warm,
# 2 ranks, shuffle=chunks, shuffle_buffer 4, batch BATCH (default 256; the
# .npy benchmark of docs/performance.md uses 1024), 3 epochs.  ROUNDS
# (default 5) interleaved rounds of: dd of the file (bs=4M, as many passes
# as ferry's epochs), then ferry bench
# with each of MODES (default "independent mmap auto collective").  Prints
# each round's GiB/s and ratio to that round's dd, then per mode the median
# ratio and its spread (min-max) over the rounds.
#
# The data lives in WORK_DIR (its file system decides what io=auto picks).
# DIRECT=1 measures the other regime instead: the file's pages are evicted
# from the page cache before each reader (dd iflag=nocache count=0: a
# per-file POSIX_FADV_DONTNEED, so the machine's other users keep their
# cache; echo 3 > /proc/sys/vm/drop_caches would drop everyone's), dd reads
# with iflag=direct (O_DIRECT: no page cache at all) and ferry one epoch
# as configured: every byte comes from the device.
#
# usage: tests/bench/io_modes.sh BUILD_DIR WORK_DIR [SIZE]
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}
size=${3:-2GiB}
rounds=${ROUNDS:-5}
modes=${MODES:-independent mmap auto collective}
np=${NP:-2}
batch=${BATCH:-256}
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
    dd if="$f" iflag=nocache count=0 2>/dev/null
  else
    cat "$f" >/dev/null
  fi
}
res=$(mktemp)
cpuf=$(mktemp)
trap 'rm -f "$res" "$cpuf"' 0
# The CPU time of each command (user + system, its children included, GNU
# time) per GiB it moved: on a loaded machine the wall-clock ratio favours
# ferry's several threads over dd's one (the scheduler shares the cores by
# thread), the CPU cost per byte does not.  ferry's includes mpirun, MPI's
# start-up and ferry_open.
timer=
if test -x /usr/bin/time; then timer="/usr/bin/time -f %U+%S -o $cpuf"; fi
cpu_per_gib() { # EPOCHS: CPU seconds per GiB of the last timed command
  test -n "$timer" || return 0
  awk -v b="$bytes" -v e="$1" -F+ 'END {printf "%.3f", ($1 + $2) / (e * b / 1073741824)}' "$cpuf"
}
"$build/ferry" info "$work/data" --io auto | grep -i '^io ' || true
for r in $(seq "$rounds"); do
  cold
  # dd reads the file as often as ferry does (3 epochs warm, 1 cold)
  if test "$direct" = 1; then flag=iflag=direct ep=1; else flag= ep=3; fi
  t0=$(date +%s.%N)
  $timer sh -c "for i in \$(seq $ep); do dd if='$f' of=/dev/null bs=4M $flag 2>/dev/null; done"
  t1=$(date +%s.%N)
  dd=$(awk -v b="$bytes" -v e=$ep -v a="$t0" -v z="$t1" 'BEGIN {print e * b / (z - a) / 1073741824}')
  ddcpu=$(cpu_per_gib $ep)
  load=$(cut -d' ' -f1 /proc/loadavg)
  line="round $r (load $load): dd $(printf %.2f "$dd") GiB/s${ddcpu:+ [$ddcpu CPU s/GiB]}"
  for io in $modes; do
    cold
    bps=$($timer mpirun --oversubscribe -np "$np" "$build/ferry" bench "$work/data" --io "$io" \
            --epochs "$ep" --shuffle chunks --shuffle-buffer 4 --batch-size "$batch" --json |
          grep -o '"bytes_per_s": [0-9.e+]*' | head -n 1 | sed 's/.*: //')
    ratio=$(awk -v b="$bps" -v d="$dd" 'BEGIN {printf "%.3f", b / 1073741824 / d}')
    cpu=$(cpu_per_gib $ep)
    echo "$io $ratio $(awk -v c="${cpu:-0}" -v d="${ddcpu:-0}" 'BEGIN {printf "%.2f", (d > 0 ? c / d : 0)}')" >>"$res"
    line="$line; $io $(awk -v b="$bps" 'BEGIN {printf "%.2f", b / 1073741824}') GiB/s (${ratio}x)${cpu:+ [$cpu]}"
  done
  echo "$line"
done
median() { # COLUMN: "median (min-max)" of column COLUMN of mode $io's rows
  grep "^$io " "$res" | awk -v c="$1" '{print $c}' | sort -n |
    awk '{v[NR] = $1} END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.2fx (%.2f-%.2f)", m, v[1], v[NR]}'
}
echo "over $rounds rounds, median (min-max): bytes/s ratio to dd; CPU time per byte ratio to dd's"
for io in $modes; do
  printf '  %-12s %s; CPU per byte %s\n' "$io" "$(median 2)" "$(median 3)"
done
