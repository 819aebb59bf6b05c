#!/bin/sh
# cache.sh - the node cache's benchmark (issue 29: cache=node|cluster):
# its targets as ratios measured in one run (docs/performance.md, "Node
# cache (cache=node|cluster)").  Four parts:
#
#  A. slow storage: a dataset of SIZE_MIB (default 512) MiB of float32[256]
#     rows in 8 parts on the slow file system of tests/lib/slowfs.sh, reads
#     capped at RATE (default 200) MB/s, NP (4) ranks as nodes of NODE_SIZE
#     (2) ranks (FERRY_NODE_SIZE: 2 "nodes" on this machine), every job run
#     in the capped cgroup.  ROUNDS (3) rounds of: the files evicted, EPOCHS
#     (4) epochs with cache=cluster; evicted again, one epoch without a
#     cache (the job as it is today on that storage); the files read into
#     the page cache (outside the cgroup), EPOCHS epochs without a cache,
#     io=independent (the cache's reads) and io=auto (here: mmap), the same
#     storage with the data in the page cache.  Ratios per round: the cache's
#     epochs >= 1 (median) over its epoch 0 (target >= 10x), over the
#     page-cache-warm epochs >= 1 (median; target >= 0.8x), and its epoch 0
#     over the cold epoch without a cache (what filling costs).
#  B. unthrottled: the same files read outside the cgroup (no cap), in the
#     page cache, NP_LOCAL (2) ranks on one node (no FERRY_NODE_SIZE: the
#     node of MPI_Comm_split_type), LOCAL_ROUNDS (5) interleaved rounds of
#     cache=none io=independent, cache=none io=auto, cache=node, EPOCHS
#     epochs each; per round the cache's rate over each (whole run, epoch 0
#     included; and epochs >= 1, median), then the medians (target >= 0.95x).
#  C. network: cache=cluster on 4 ranks as 2 and as 4 nodes (FERRY_NODE_SIZE
#     2, 1), unthrottled, 3 epochs: the bytes the busiest node received from
#     (and sent to) other nodes per epoch, over (nodes-1)/nodes x dataset /
#     nodes (target <= 1.1).
#  D. start-up: ferry_open of a sparse .npy of OPEN_GIB (4) GiB (the region
#     is sized to the dataset; /dev/shm pages are taken as chunks are
#     stored, so a sparse dataset times the same open as a real one) on 2
#     ranks, cache=none, node (1 node: a region of the whole dataset) and
#     cluster (2 nodes of 1 rank), OPEN_ROUNDS (5) interleaved rounds; the
#     medians and the cache's extra (target < 1 s).  Skipped without numpy.
#
# Times come from tests/bench/cache_epochs.c (built here with mpicc): each
# epoch timed between barriers (the slowest rank), with ferry_stats' cache
# counters summed per node.  Needs root (loop device, mount, blkio cgroup);
# skips (77) where tests/lib/slowfs.sh cannot make its file system.  About
# 2 minutes at the defaults.  Not part of make check (tests/bench is run by
# hand).
#
# usage: tests/bench/cache.sh BUILD_DIR WORK_DIR [SIZE_MIB]
usage="usage: $0 BUILD_DIR WORK_DIR [SIZE_MIB]"
build=$(cd "${1:?$usage}" && pwd) || exit 1
work=${2:?$usage}
mib=${3:-512}
rate=${RATE:-200}
np=${NP:-4}
nsize=${NODE_SIZE:-2}
epochs=${EPOCHS:-4}
rounds=${ROUNDS:-3}
np_local=${NP_LOCAL:-2}
local_rounds=${LOCAL_ROUNDS:-5}
open_gib=${OPEN_GIB:-4}
open_rounds=${OPEN_ROUNDS:-5}
py=${PYTHON:-/usr/bin/python3}
src=$(cd "$(dirname "$0")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}" HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--pci,-linuxio}"
unset FERRY_NODE_SIZE
mkdir -p "$work" && work=$(cd "$work" && pwd) || exit 1
tmp=$work/cache.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
. "$src/tests/lib/slowfs.sh"

die() {
  echo "cache.sh: $*" >&2
  exit 1
}

ce=$tmp/cache_epochs
mpicc -O2 -I"$src/include" -I"$build/include" "$src/tests/bench/cache_epochs.c" \
  -o "$ce" -L"$build/.libs" -lferry -Wl,-rpath,"$build/.libs" ||
  die "cannot build tests/bench/cache_epochs.c"

# The slow file system: room for the dataset and ext4's tables.
SLOWFS_SIZE=$((mib * 5 / 4 + 128))M
export SLOWFS_SIZE
slowfs_up "$tmp/pfs" "$rate"
"$build/ferry" gen "$tmp/pfs/d" --samples $((mib * 1024)) --var x:float32:256 \
  --parts 8 >/dev/null || die "ferry gen failed"
data="$tmp/pfs/d/part-*"
bytes=$((mib * 1048576))
warm() { cat "$tmp"/pfs/d/part-*/* >/dev/null; }

# ce RUN OUT NP NODE_SIZE EPOCHS DATA [options]: the helper on NP ranks
# (NODE_SIZE empty: the real nodes), run by RUN (slowfs_run: capped; -:
# directly); its output in OUT.
ce() {
  c_run=$1 c_out=$2 c_np=$3 c_ns=$4 c_ep=$5 c_data=$6
  shift 6
  test "$c_run" = - && c_run=
  c_x=
  if test -n "$c_ns"; then
    FERRY_NODE_SIZE=$c_ns
    export FERRY_NODE_SIZE
    c_x="-x FERRY_NODE_SIZE"
  fi
  # shellcheck disable=SC2086
  $c_run mpirun --oversubscribe -np "$c_np" $c_x "$ce" "$c_data" "$c_ep" "$@" >"$c_out" 2>&1 ||
    { cat "$c_out" >&2; die "cache_epochs $c_data $c_ep $* failed"; }
  unset FERRY_NODE_SIZE
}
# capped OUT EPOCHS [options]: part A's job (NP ranks, nodes of NODE_SIZE)
# in the capped cgroup.
capped() {
  p_out=$1 p_ep=$2
  shift 2
  ce slowfs_run "$p_out" "$np" "$nsize" "$p_ep" "$data" "$@"
}
# t0 OUT, tmed OUT: epoch 0's seconds; the median of epochs >= 1.
t0() { awk '$1 == "epoch" && $2 == 0 { print $3 }' "$1"; }
tmed() {
  awk '$1 == "epoch" && $2 > 0 { print $3 }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# field OUT EPOCH NAME: a counter of an epoch line.
field() {
  awk -v e="$2" -v n="$3" '$1 == "epoch" && $2 == e { for (i = 4; i < NF; i += 2) if ($i == n) print $(i + 1) }' "$1"
}
# div A B: A / B to 3 decimals; mb SECONDS: the dataset's MB/s in that time.
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
mb() { awk -v s="$1" -v b="$bytes" 'BEGIN { printf "%.0f", (s > 0 ? b / s / 1e6 : 0) }'; }
# tot OUT: the seconds of all its epochs.
tot() { awk '$1 == "epoch" { s += $3 } END { print s }' "$1"; }
# median: of the numbers on stdin.
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }

echo "cache.sh: $mib MiB ($bytes bytes) in 8 parts, float32[256] rows; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- A. slow storage ----------------------------------------------------
echo
echo "A. reads capped at $rate MB/s; $np ranks, nodes of $nsize (FERRY_NODE_SIZE), $epochs epochs"
for r in $(seq "$rounds"); do
  slowfs_evict "$tmp/pfs" || die "slowfs_evict left pages cached"
  capped "$tmp/a.cl.$r" "$epochs" cache=cluster
  slowfs_evict "$tmp/pfs" || die "slowfs_evict left pages cached"
  capped "$tmp/a.cold.$r" 1 cache=none io=independent
  warm
  capped "$tmp/a.wi.$r" "$epochs" cache=none io=independent
  capped "$tmp/a.wa.$r" "$epochs" cache=none io=auto
  c0=$(t0 "$tmp/a.cl.$r") c1=$(tmed "$tmp/a.cl.$r") cold=$(t0 "$tmp/a.cold.$r")
  wi=$(tmed "$tmp/a.wi.$r") wa=$(tmed "$tmp/a.wa.$r")
  st1=$(awk '$1 == "epoch" && $2 > 0 { s += $5; k += $7 } END { printf "%.0f %.0f", s, k }' "$tmp/a.cl.$r")
  wk=$(awk '$1 == "epoch" && $2 > 0 { k += $7 } END { printf "%.0f", k }' "$tmp/a.wi.$r" "$tmp/a.wa.$r")
  echo "round $r: cache=cluster epoch 0 $c0 s ($(mb "$c0") MB/s, kernel read $(field "$tmp/a.cl.$r" 0 kernel) B), epochs>=1 $c1 s ($(mb "$c1") MB/s; storage, kernel bytes: $st1); no cache cold epoch $cold s ($(mb "$cold") MB/s); page-cache-warm epochs>=1: io=independent $wi s ($(mb "$wi") MB/s), io=auto $wa s ($(mb "$wa") MB/s; kernel bytes $wk)"
  echo "$(div "$c0" "$c1") $(div "$wi" "$c1") $(div "$wa" "$c1") $(div "$cold" "$c0")" >>"$tmp/a.ratios"
done
echo "A. medians over $rounds rounds (range):"
echo "  cache=cluster epochs>=1 / its epoch 0:          $(cut -d' ' -f1 "$tmp/a.ratios" | median)x ($(cut -d' ' -f1 "$tmp/a.ratios" | range))  target >= 10"
echo "  cache=cluster epochs>=1 / warm io=independent:  $(cut -d' ' -f2 "$tmp/a.ratios" | median)x ($(cut -d' ' -f2 "$tmp/a.ratios" | range))  target >= 0.8"
echo "  cache=cluster epochs>=1 / warm io=auto (mmap):  $(cut -d' ' -f3 "$tmp/a.ratios" | median)x ($(cut -d' ' -f3 "$tmp/a.ratios" | range))"
echo "  cache=cluster epoch 0 / no cache, cold epoch:   $(cut -d' ' -f4 "$tmp/a.ratios" | median)x ($(cut -d' ' -f4 "$tmp/a.ratios" | range))  (the fill's cost; 1 = none)"

# ---- B. unthrottled, cache=node against none ----------------------------
echo
echo "B. no cap, page cache warm; $np_local ranks on one node; $epochs epochs; $local_rounds rounds"
warm
for r in $(seq "$local_rounds"); do
  ce - "$tmp/b.ni.$r" "$np_local" "" "$epochs" "$data" cache=none io=independent
  ce - "$tmp/b.na.$r" "$np_local" "" "$epochs" "$data" cache=none io=auto
  ce - "$tmp/b.nd.$r" "$np_local" "" "$epochs" "$data" cache=node
  ni=$(tot "$tmp/b.ni.$r") na=$(tot "$tmp/b.na.$r") nd=$(tot "$tmp/b.nd.$r")
  ni1=$(tmed "$tmp/b.ni.$r") na1=$(tmed "$tmp/b.na.$r") nd1=$(tmed "$tmp/b.nd.$r")
  echo "round $r: whole run none/independent $ni s, none/auto $na s, node $nd s (epoch 0 $(t0 "$tmp/b.nd.$r") s, its epoch 0 without: $(t0 "$tmp/b.ni.$r") s); epochs>=1 $ni1 s, $na1 s, $nd1 s; node's storage bytes epochs>=1: $(awk '$1 == "epoch" && $2 > 0 { s += $5 } END { printf "%.0f", s }' "$tmp/b.nd.$r")"
  echo "$(div "$ni" "$nd") $(div "$na" "$nd") $(div "$ni1" "$nd1") $(div "$na1" "$nd1")" >>"$tmp/b.ratios"
done
echo "B. medians over $local_rounds rounds (range): cache=node rate over no cache's"
echo "  whole run ($epochs epochs, the fill included), io=independent: $(cut -d' ' -f1 "$tmp/b.ratios" | median)x ($(cut -d' ' -f1 "$tmp/b.ratios" | range))  target >= 0.95"
echo "  whole run, io=auto (mmap):                        $(cut -d' ' -f2 "$tmp/b.ratios" | median)x ($(cut -d' ' -f2 "$tmp/b.ratios" | range))"
echo "  epochs >= 1, io=independent:                      $(cut -d' ' -f3 "$tmp/b.ratios" | median)x ($(cut -d' ' -f3 "$tmp/b.ratios" | range))  target >= 0.95"
echo "  epochs >= 1, io=auto (mmap):                      $(cut -d' ' -f4 "$tmp/b.ratios" | median)x ($(cut -d' ' -f4 "$tmp/b.ratios" | range))"

# ---- C. bytes between nodes -----------------------------------------------
echo
echo "C. cache=cluster, 4 ranks, no cap: bytes per node per epoch over (n-1)/n x dataset/n"
for ns in 2 1; do
  n=$((4 / ns))
  ce - "$tmp/c.$n" 4 "$ns" 3 "$data" cache=cluster
  d=$(awk '$1 == "open" { print $8 }' "$tmp/c.$n")
  bound=$(awk -v d="$d" -v n=$n 'BEGIN { printf "%.0f", (n - 1) / n * d / n }')
  awk -v b="$bound" -v n=$n '$1 == "epoch" {
      for (i = 4; i < NF; i += 2) v[$i] = $(i + 1)
      printf "  %d nodes, epoch %d: busiest node received %.0f B (%.3fx), sent %.0f B (%.3fx); all nodes: storage %.0f B, remote %.0f B\n",
        n, $2, v["recv_node_max"], v["recv_node_max"] / b, v["sent_node_max"], v["sent_node_max"] / b, v["storage"], v["remote"]
    }' "$tmp/c.$n"
  echo "  $n nodes: (n-1)/n x dataset/n = $bound B (dataset $d B); target <= 1.1x"
done

# ---- D. start-up -----------------------------------------------------------
echo
if "$py" -c 'import numpy' 2>/dev/null; then
  echo "D. ferry_open of a sparse ${open_gib} GiB .npy, 2 ranks, $open_rounds rounds (seconds, slowest rank)"
  big=$tmp/big/x.npy
  mkdir -p "$tmp/big"
  "$py" -c "
import numpy as np
np.lib.format.open_memmap('$big', mode='w+', dtype=np.float32, shape=($open_gib * 262144, 1024)).flush()" ||
    die "cannot write $big"
  for r in $(seq "$open_rounds"); do
    for c in none node cluster; do
      ns=
      test $c = cluster && ns=1
      ce - "$tmp/d.$c.$r" 2 "$ns" 0 "$big" cache=$c
      awk -v c=$c '$1 == "open" { printf "%s %s %s ", c, $2, $6 } $1 == "close" { print $2 }' "$tmp/d.$c.$r" >>"$tmp/d.all"
    done
  done
  for c in none node cluster; do
    echo "  cache=$c: open median $(awk -v c=$c '$1 == c { print $2 }' "$tmp/d.all" | median) s ($(awk -v c=$c '$1 == c { print $2 }' "$tmp/d.all" | range)), region $(awk -v c=$c '$1 == c { print $3 }' "$tmp/d.all" | head -1) B per node, close median $(awk -v c=$c '$1 == c { print $4 }' "$tmp/d.all" | median) s"
  done
  n0=$(awk '$1 == "none" { print $2 }' "$tmp/d.all" | median)
  for c in node cluster; do
    echo "  cache=$c: open's extra over cache=none (medians): $(awk -v a="$(awk -v c=$c '$1 == c { print $2 }' "$tmp/d.all" | median)" -v b="$n0" 'BEGIN { printf "%.3f", a - b }') s  target < 1"
  done
else
  echo "D. skipped: no numpy in $py to write the sparse .npy"
fi
