#!/bin/sh
# kernel.sh - the node cache's bytes from storage, checked against the
# kernel's count: a dataset on the slow file system of tests/lib/slowfs.sh
# (a loop device; its reads capped by a blkio cgroup), evicted from the
# page cache over and over while the job runs, so that every read of the
# files goes to the device.  `ferry bench --epochs 3` prints per epoch
# ferry's own bytes from storage and the kernel's read_bytes of the ranks'
# /proc/self/io (summed):
#
#  - without a cache: every epoch reads the dataset again, and the kernel
#    counts some of it in epochs 1 and 2 (the evictions race the reads:
#    how much depends on the machine's load);
#  - with cache=node: epoch 0 reads the dataset (ferry's count and the
#    kernel's both at least 90% of it), epochs 1 and 2 read 0 bytes by
#    both counts.
#
# Skips (77) where the slow file system cannot be made (not root, no loop
# device or blkio cgroup) or where the kernel counts no block reads
# (some containers).
here=`dirname "$0"`
. "$here/../lib/common.sh"
ferry_test_init cache_kernel
. "$top_srcdir/tests/lib/slowfs.sh"

slowfs_up "$tmp/pfs" 400
F=$FERRY
# 16,384 samples of 512 bytes: 8 MiB in 2 parts
"$F" gen "$tmp/pfs/d" --samples 16384 --var x:float32:128 --parts 2 >/dev/null ||
  { echo "FAIL: ferry gen"; exit 1; }
sync
dataset=8388608
D="$tmp/pfs/d/part-*"

# evicting: drop the dataset's pages every 50 ms until $tmp/stop exists
# (the files' own pages only: slowfs_evict's machine-wide drop_caches, its
# fallback, would also drop the pages of tests running beside this one)
evicting() {
  while test ! -f "$tmp/stop"; do
    for f in "$tmp"/pfs/d/part-*/*.npy; do
      dd if="$f" iflag=nocache count=0 status=none 2>/dev/null
    done
    sleep 0.05
  done
}
# run OUT OPTIONS...: bench under the cap while the pages are evicted
run() {
  out=$1
  shift
  rm -f "$tmp/stop"
  slowfs_evict "$tmp/pfs/d" >/dev/null 2>&1
  evicting &
  ev=$!
  slowfs_run $RUN_MPI 2 "$F" bench "$D" --epochs 3 --tail partial \
    --compute-ms 2 --batch-size 64 "$@" >"$out" 2>&1
  rc=$?
  touch "$tmp/stop"
  wait $ev
  return $rc
}
# field FILE E NAME: bytes of NAME on epoch E's line ("storage", "kernel
# read_bytes", "node cache"), as a number
field() {
  sed -n "s/^epoch $2: .*$3 \([0-9.]*\) \([KMGT]*i*B\).*/\1 \2/p" "$1" |
    awk '{m = 1; if ($2 == "KiB") m = 1024; if ($2 == "MiB") m = 1048576;
      if ($2 == "GiB") m = 1073741824; printf "%.0f\n", $1 * m}'
}

run "$tmp/none" --per-epoch || { failed "bench without a cache"; cat "$tmp/none"; exit 1; }
k0=`field "$tmp/none" 0 'read_bytes'`
grep -q 'kernel read_bytes unknown' "$tmp/none" && { echo "SKIP: no /proc/self/io"; exit 77; }
if test -z "$k0" || test "$k0" = 0; then
  echo "SKIP: the kernel counts no block reads here (read_bytes 0 in epoch 0)"
  cat "$tmp/none"
  exit 77
fi
k1=`field "$tmp/none" 1 'read_bytes'` k2=`field "$tmp/none" 2 'read_bytes'`
s1=`field "$tmp/none" 1 storage`
# (how much of it the evictions catch depends on how the machine's other
# work schedules the evicting loop: some of it, in one of the epochs)
if test "$s1" -ge `expr $dataset - $dataset / 100` &&
   test `expr $k1 + $k2` -gt 0; then
  ok "no cache: epoch 1 read $s1 B by ferry's count, the kernel read $k1 B and $k2 B in epochs 1 and 2"
else
  failed "no cache, pages evicted: ferry $s1 B, kernel $k1 B / $k2 B in epochs 1 / 2"
  cat "$tmp/none"
fi

run "$tmp/node" --cache node || { failed "bench with cache=node"; cat "$tmp/node"; exit 1; }
s0=`field "$tmp/node" 0 storage` k0=`field "$tmp/node" 0 'read_bytes'`
s1=`field "$tmp/node" 1 storage` k1=`field "$tmp/node" 1 'read_bytes'`
s2=`field "$tmp/node" 2 storage` k2=`field "$tmp/node" 2 'read_bytes'`
l2=`field "$tmp/node" 2 'node cache'`
lo=`expr $dataset - $dataset / 10`
if test "$s0" -ge $lo && test "$k0" -ge $lo && test "$s1" = 0 &&
   test "$k1" = 0 && test "$s2" = 0 && test "$k2" = 0 && test "$l2" -ge $lo; then
  ok "cache=node: epoch 0 read $s0 B (kernel: $k0 B), epochs 1-2 read 0 B by both counts ($l2 B from the cache in epoch 2)"
else
  failed "cache=node: ferry $s0 / $s1 / $s2 B, kernel $k0 / $k1 / $k2 B, cache $l2 B"
  cat "$tmp/node"
fi
exit $fail
