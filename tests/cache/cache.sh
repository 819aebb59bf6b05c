#!/bin/sh
# cache.sh - the node cache (cache=node|cluster, src/loader/cache.c,
# docs/cache.md) on this one machine; tests/cluster/cache.sh runs it over
# simulated hosts.  Nodes here come from the test hook FERRY_NODE_SIZE=N
# (every N consecutive ranks one node) or, unset, the machine (one node).
#
#  1. The same batches with and without the cache, byte for byte (`ferry
#     dump --epochs 3 --row-hash`, one loader for the three epochs), for
#     every shuffle and sampling mode, a mix, a ragged and a sparse dataset,
#     compressed chunks (a deflated .npz, Zarr with zlib and blosc, Parquet
#     with snappy: cached decoded), JPEGs under decode= (the encoded bytes
#     cached, random crops drawn anew each epoch), packed rows (pack=concat
#     and first_fit: the corpus's documents cached, the rows made anew each
#     epoch; a packed mix of two corpora), on 1 to 4 ranks: cache=node, and cache=cluster over 1-rank and
#     2-rank nodes.
#  2. What is read from storage: `ferry bench --epochs 3` with tail=partial
#     (every sample served each epoch): epoch 0 reads the dataset, epochs 1
#     and 2 read 0 B and take it all from the node cache (cache=node) or
#     from it and the other nodes (cluster); a cache smaller than the
#     dataset (cache_bytes) reads the rest every epoch, the same bytes; the
#     files emptied after epoch 0 (4 epochs of 10 ms batches): the job
#     fails without a cache and runs to the end with cache=node;
#     pack=concat reads its corpus in epoch 0 (at least once: a document
#     cut between two ranks' rows may be read by both) and nothing after; so does a packed mix in the corpora's
#     proportions.
#  3. Memory: a private /dev/shm of 4 MiB (a mount namespace of the test's
#     own): cache_bytes above it is cut, said on stderr, the batches still
#     the same; another process filling it during the job leaves chunks
#     uncached, the batches the same (no SIGBUS); during a job no ferry-cache-* file is left in /dev/shm (the
#     region is unlinked once mapped); a rank killed with SIGKILL mid-epoch
#     ends the job (no hang) and leaves nothing there either.
#  4. Resume on another rank count: `ferry verify --state` interrupted on 4
#     ranks with cache=cluster, resumed on 3: exactly once over both runs,
#     the cache rebuilt from storage.
#  5. A corrupt Zarr chunk with cache=cluster: the job fails with the
#     chunk's file named, no hang.
#  6. Refusals: io=mmap or collective, cache_bytes without a cache, a bad
#     FERRY_NODE_SIZE.
here=`dirname "$0"`
. "$here/../lib/common.sh"
ferry_test_init cache
# Under TSan (the tsan tier): cache=cluster's server thread drives Open
# MPI's progress, which then completes the main thread's receives (a
# gather of dump's records) on that thread, inside libmpi; TSan names
# libmpi in that write only with a longer history (otherwise "failed to
# restore the stack", and the suppressions of tests/sanitize/tsan.supp
# cannot match).
case ${TSAN_OPTIONS:-} in
  *history_size*) ;;
  ?*) TSAN_OPTIONS=$TSAN_OPTIONS:history_size=7; export TSAN_OPTIONS ;;
esac

py=/usr/bin/python3
$py -c 'import numpy' 2>/dev/null || { echo "SKIP: needs $py with numpy"; exit 77; }

F=$FERRY
"$F" gen "$tmp/d" --samples 12000 --var x:float32:16 --var y:int64 --parts 3 >/dev/null &&
"$F" gen "$tmp/e" --samples 5000 --var x:float32:16 --var y:int64 >/dev/null &&
"$F" gen "$tmp/r" --format megatron --samples 3000 --mean-len 40 >/dev/null &&
"$F" gen "$tmp/r3" --format megatron --samples 1000 --mean-len 30 --seed 3 >/dev/null &&
"$F" gen "$tmp/s.h5ad" --anndata --samples 2000 --genes 150 >/dev/null ||
  { echo "FAIL: ferry gen"; exit 1; }
$py -c "
import numpy as np
np.save('$tmp/w.npy', np.random.RandomState(1).rand(12000))
x = np.arange(6000 * 8, dtype=np.float32).reshape(6000, 8)
np.savez_compressed('$tmp/c.npz', x=x, y=np.arange(6000))
try:
    import zarr, numcodecs
except ImportError:
    raise SystemExit(0)
z = zarr.open('$tmp/z.zarr', mode='w')
z.create_dataset('x', data=x, chunks=(500, 8), compressor=numcodecs.Zlib(level=3))
z.create_dataset('y', data=np.arange(6000), chunks=(700,), compressor=numcodecs.Blosc())" ||
  { echo "FAIL: weights, npz, zarr"; exit 1; }
pq=$top_srcdir/tests/corpus/files/parquet-testing/data_datapage_v1-snappy-compressed-checksum.parquet
D="$tmp/d/part-*"

# same NAME NP DATASET OPTIONS...: the three epochs without a cache, then
# with cache=node and cache=cluster (FERRY_NODE_SIZE=1 and 2), and the
# options in $with (cache_bytes) then only
same() {
  name=$1 np=$2 ds=$3
  shift 3
  $RUN_MPI $np "$F" dump "$ds" --epochs 3 --row-hash --output "$tmp/base" \
    "$@" >"$tmp/err" 2>&1 || { failed "$name: the run without a cache"; cat "$tmp/err"; return; }
  test -s "$tmp/base" || { failed "$name: no output"; return; }
  for how in node:0 cluster:1 cluster:2; do
    mode=${how%:*} ns=${how#*:}
    if test $ns = 0; then
      $RUN_MPI $np "$F" dump "$ds" --epochs 3 --row-hash --output "$tmp/got" \
        --cache $mode ${with:-} "$@" >"$tmp/err" 2>&1
    else
      FERRY_NODE_SIZE=$ns $RUN_MPI $np "$F" dump "$ds" --epochs 3 --row-hash \
        --output "$tmp/got" --cache $mode ${with:-} "$@" >"$tmp/err" 2>&1
    fi
    rc=$?
    if test $rc != 0; then
      failed "$name: cache=$mode (node size $ns) exited $rc"; cat "$tmp/err"
    elif cmp -s "$tmp/base" "$tmp/got"; then
      ok "$name: cache=$mode, node size $ns: the same 3 epochs on $np ranks"
    else
      failed "$name: cache=$mode (node size $ns) served other batches"
    fi
  done
}

same chunks 3 "$D" --chunk-samples 300
same none 2 "$D" --shuffle none --chunk-samples 500
same block 4 "$D" --shuffle block --chunk-samples 700
same global 3 "$D" --shuffle global
same weights 3 "$D" --weights "$tmp/w.npy"
same balance 2 "$D" --balance y
same mix 3 mix --mix "$D=1,$tmp/e=2"
same ragged 3 "$tmp/r"
same sparse 2 "$tmp/s.h5ad"
same one-rank 1 "$D" --chunk-samples 400
# pack=: the corpus's documents cached under the view
same pack-concat 3 "$tmp/r" --pack concat --seq-len 64
same pack-first-fit 2 "$tmp/r" --pack first_fit --seq-len 48 --overflow split
same pack-mix 3 mix --mix "$tmp/r=1,$tmp/r3=2" --pack concat --seq-len 64
# decoded chunks, cached decoded: a deflated .npz (one storage chunk for all
# rows, split between the ranks), Zarr with zlib and blosc, Parquet (snappy)
same npz-deflated 3 "$tmp/c.npz"
if test -d "$tmp/z.zarr"; then
  same zarr 3 "$tmp/z.zarr"
else
  echo "SKIP zarr: $py has no zarr"
fi
# decode=: the encoded bytes cached under the view, the crops drawn anew
# each epoch (JPEGs of an image folder written by Pillow)
if $py -c "
from PIL import Image
import numpy as np, os
r = np.random.RandomState(0)
for c in range(3):
    os.makedirs('$tmp/img/c%d' % c)
    for i in range(30):
        a = (r.rand(40 + i % 7, 56, 3) * 255).astype('uint8')
        Image.fromarray(a).save('$tmp/img/c%d/%03d.jpg' % (c, i), quality=90)
" 2>/dev/null; then
  same decode 3 "$tmp/img" --decode image --image-size 32 --crop random \
    --tail partial --batch-size 8
else
  echo "SKIP decode: $py has no PIL"
fi
if test -f "$pq"; then
  same parquet 3 "$pq"
else
  echo "SKIP parquet: no $pq"
fi

# ---- 2. bytes from storage ------------------------------------------------
# exact FILE E NAME: bench's exact count NAME (storage, node_cache,
# other_nodes, sent) on the line of epoch E
exact() {
  sed -n "s/^epoch $2: .*; bytes: .*$3=\([0-9]*\).*/\1/p" "$1"
}
bench() { # OUT NP OPTIONS...
  out=$1 np=$2
  shift 2
  $RUN_MPI $np "$F" bench "$D" --epochs 3 --tail partial --chunk-samples 100 \
    "$@" >"$out" 2>&1 || { failed "bench $*"; cat "$out"; return 1; }
}
# 12000 samples x (64 + 8) bytes
dataset=864000
for how in node:0 cluster:1 cluster:2; do
  mode=${how%:*} ns=${how#*:}
  if test $ns = 0; then
    bench "$tmp/b" 3 --cache $mode || continue
  else
    FERRY_NODE_SIZE=$ns bench "$tmp/b" 4 --cache $mode || continue
  fi
  s0=`exact "$tmp/b" 0 storage` s1=`exact "$tmp/b" 1 storage`
  s2=`exact "$tmp/b" 2 storage` l2=`exact "$tmp/b" 2 node_cache`
  r2=`exact "$tmp/b" 2 other_nodes`
  if test "$s0" = $dataset && test "$s1" = 0 && test "$s2" = 0 &&
     test `expr $l2 + $r2` = $dataset; then
    ok "cache=$mode (node size $ns): epoch 0 read $s0 B from storage, epochs 1-2 none ($l2 B from the node, $r2 B from other nodes in epoch 2)"
  else
    failed "cache=$mode (node size $ns): storage $s0 / $s1 / $s2, epoch 2 node $l2 other $r2 (dataset $dataset B)"
    cat "$tmp/b"
  fi
  case $mode:$ns in
    node:0) test "$r2" = 0 || failed "cache=node took $r2 B from other nodes" ;;
    cluster:1) # 4 nodes: about 3/4 from the others (120 chunks placed by
      # bytes, read by whichever rank the shuffle deals them to: the share
      # varies by about 0.04 around 3/4)
      test $r2 -ge `expr $dataset \* 60 / 100` && test $r2 -le `expr $dataset \* 90 / 100` ||
        failed "cluster over 4 nodes: $r2 B from other nodes, expected about 3/4 of $dataset" ;;
  esac
done
# pack=concat, tail=partial (every token served each epoch): epoch 0 reads
# the corpus (.bin) at least once, at most 10% more (documents cut between
# two ranks' rows, read by both when neither has stored it yet), then none;
# a packed mix in the corpora's proportions (every document each epoch):
# epoch 0 reads both corpora at least once and at most once per rank (a
# packed mix's ranks read whole the documents cut at their rows' ends: 3x
# on 3 ranks without a cache too), then none
# pack_bytes WHAT MIN MAX MODE NODE_SIZE DATASET...: bench's storage bytes
pack_bytes() {
  what=$1 lo=$2 hi=$3 mode=$4 ns=$5
  shift 5
  if test $ns = 0; then
    $RUN_MPI 3 "$F" bench "$@" --pack concat --seq-len 64 --epochs 3 \
      --tail partial --cache $mode >"$tmp/b" 2>&1
  else
    FERRY_NODE_SIZE=$ns $RUN_MPI 3 "$F" bench "$@" --pack concat \
      --seq-len 64 --epochs 3 --tail partial --cache $mode >"$tmp/b" 2>&1
  fi || { failed "$what bench, cache=$mode"; cat "$tmp/b"; return; }
  s0=`exact "$tmp/b" 0 storage` s1=`exact "$tmp/b" 1 storage`
  s2=`exact "$tmp/b" 2 storage`
  if test -n "$s0" && test "$s0" -ge $lo && test "$s0" -le $hi &&
     test "$s1" = 0 && test "$s2" = 0; then
    ok "$what, cache=$mode (node size $ns): epoch 0 read $s0 B of $lo B, epochs 1-2 none"
  else
    failed "$what, cache=$mode (node size $ns): storage $s0 / $s1 / $s2 ($lo B)"
    cat "$tmp/b"
  fi
}
c1=`wc -c <"$tmp/r/corpus.bin"` c3=`wc -c <"$tmp/r3/corpus.bin"`
c13=`expr $c1 + $c3`
pack_bytes pack=concat $c1 `expr $c1 \* 11 / 10` node 0 "$tmp/r"
pack_bytes pack=concat $c1 `expr $c1 \* 11 / 10` cluster 1 "$tmp/r"
pack_bytes "a packed mix" $c13 `expr $c13 \* 3` node 0 mix --mix "$tmp/r=$c1,$tmp/r3=$c3"
pack_bytes "a packed mix" $c13 `expr $c13 \* 3` cluster 2 mix --mix "$tmp/r=$c1,$tmp/r3=$c3"
# cache=cluster over packed runs of one short document: ferry info advises
# a pack_chunk (each run another node holds is one request); long runs: no
# advice
for pc in 0 2048; do
  FERRY_NODE_SIZE=1 $RUN_MPI 2 "$F" info "$tmp/r" --pack concat --seq-len 64 \
    --cache cluster --pack-chunk $pc >"$tmp/info" 2>&1
  n=`grep -c "pack=: the packed rows read runs of 1 document (about [0-9]* bytes), one request each .* pack_chunk=[0-9]* would make requests of about 64 KiB" "$tmp/info"`
  case $pc:$n in
    0:1) ok "cache=cluster, pack_chunk auto (1 document): ferry info advises a pack_chunk" ;;
    2048:0) ok "cache=cluster, pack_chunk=2048: no advice" ;;
    *) failed "cache=cluster, pack_chunk=$pc: $n advice lines"; cat "$tmp/info" ;;
  esac
done
# the same note in ferry info --json ("cache": {"note": ...})
FERRY_NODE_SIZE=1 $RUN_MPI 2 "$F" info "$tmp/r" --pack concat --seq-len 64 \
  --cache cluster --json >"$tmp/info.json" 2>"$tmp/err"
if $py -c "
import json, sys
n = json.load(open('$tmp/info.json'))['cache']['note']
sys.exit(0 if n.startswith('pack=: the packed rows read runs of 1 document') else 1)"; then
  ok "ferry info --json: the cache's note"
else
  failed "ferry info --json: no cache note"; cat "$tmp/info.json" "$tmp/err"
fi
# a partial cache: a third of the dataset; later epochs read the rest
bench "$tmp/b" 2 --cache node --cache-bytes 288000 && {
  s1=`exact "$tmp/b" 1 storage` s2=`exact "$tmp/b" 2 storage`
  l2=`exact "$tmp/b" 2 node_cache`
  if test "$s1" -gt `expr $dataset / 2` && test "$s1" -lt $dataset &&
     test "$s1" = "$s2" && test "$l2" -gt 0 &&
     test `expr $l2 + $s2` = $dataset; then
    ok "cache_bytes=288000: epochs 1-2 read $s1 B from storage, $l2 B from the cache"
  else
    failed "cache_bytes=288000: storage $s1 then $s2, cache $l2"; cat "$tmp/b"
  fi
}
# the files emptied after epoch 0: without a cache the job fails in a
# later epoch (a short read); with cache=node it reads nothing from them
# and runs to the end.  Batches of 10 ms, 4 epochs: the epochs after the
# first take about 1.4 s, time for this shell to empty the files while
# they read also under the sanitizer tiers' load (3 ms batches and 3
# epochs: a job of 0.45 s in the ASan tier once ended first)
"$F" gen "$tmp/tr" --samples 6000 --var x:float32:16 --parts 2 >/dev/null
for mode in none node; do
  rm -rf "$tmp/tr.$mode" && cp -r "$tmp/tr" "$tmp/tr.$mode"
  # (a file of this run's own: the job's redirection happens in the child,
  # after the loop below may have looked)
  out=$tmp/tr.$mode.out
  $RUN_MPI 2 "$F" bench "$tmp/tr.$mode/part-*" --epochs 4 --tail partial \
    --compute-ms 10 --per-epoch --cache $mode >"$out" 2>&1 &
  job=$!
  wait_line "$out" '^epoch 0:' 30
  for f in "$tmp/tr.$mode"/part-*/x.npy; do : >"$f"; done
  wait $job
  rc=$?
  case $mode:$rc in
    none:0) failed "no cache, the files emptied after epoch 0: the job succeeded"
      cat "$out" ;;
    none:*) ok "no cache, the files emptied after epoch 0: the job failed (exit $rc)" ;;
    node:0)
      if test "`exact "$out" 2 storage`" = 0 && test "`exact "$out" 3 storage`" = 0; then
        ok "cache=node, the files emptied after epoch 0: epochs 2-3 served from the cache"
      else
        failed "cache=node, the files emptied: epoch 2 or 3 read from storage"; cat "$out"
      fi ;;
    *) failed "cache=node, the files emptied after epoch 0: exit $rc"; cat "$out" ;;
  esac
done
with="--cache-bytes 300000" same partial 3 "$D" --chunk-samples 300

# ---- 3. /dev/shm ----------------------------------------------------------
if unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs /dev/shm' 2>/dev/null; then
  # shm_run SCRIPT: SCRIPT in a mount namespace whose /dev/shm is 4 MiB
  shm_run() {
    unshare -m sh -c "sh '$top_srcdir/tests/lib/drop_slowfs.sh'
      mount -t tmpfs -o size=4m tmpfs /dev/shm && $1"
  }
  "$F" gen "$tmp/big" --samples 20000 --var x:float32:64 >/dev/null
  $RUN_MPI 2 "$F" dump "$tmp/big" --epochs 2 --row-hash --output "$tmp/base" >/dev/null 2>&1
  shm_run "FERRY_NODE_SIZE=1 $RUN_MPI 2 '$F' dump '$tmp/big' --epochs 2 --row-hash \
      --output '$tmp/got' --cache cluster --cache-bytes 64MiB" >"$tmp/err" 2>&1
  rc=$?
  if test $rc = 0 && grep -q "cache_bytes=.* asked, but /dev/shm on the node of rank [0-9]* holds less" "$tmp/err" &&
     cmp -s "$tmp/base" "$tmp/got"; then
    ok "a 4 MiB /dev/shm, 64 MiB asked: cut, said, the same batches"
  else
    failed "a 4 MiB /dev/shm: exit $rc"; cat "$tmp/err"
  fi
  # /dev/shm filled by another process while the job runs: the chunks
  # without room stay uncached (no SIGBUS), the batches are the same (Open
  # MPI's shared-memory transport off: its own segments there would fault)
  cat >"$tmp/fill.sh" <<EOF
( sleep 0.3; dd if=/dev/zero of=/dev/shm/filler bs=64k 2>/dev/null ) &
OMPI_MCA_btl=self,tcp $RUN_MPI 2 '$F' dump '$tmp/big' --epochs 2 --row-hash --output '$tmp/got' \
  --cache node --cache-bytes 3MiB --batch-size 16 >'$tmp/err' 2>&1
echo "rc=\$?" >>'$tmp/err'
wait
ls -l /dev/shm >>'$tmp/err'
EOF
  $RUN_MPI 2 "$F" dump "$tmp/big" --epochs 2 --row-hash --output "$tmp/base" \
    --batch-size 16 >/dev/null 2>&1
  shm_run "sh '$tmp/fill.sh'"
  if grep -q '^rc=0$' "$tmp/err" && grep -q filler "$tmp/err" &&
     cmp -s "$tmp/base" "$tmp/got"; then
    ok "/dev/shm filled by another process during the job: the same batches"
  else
    failed "/dev/shm filled during the job"; cat "$tmp/err"
  fi
  # during a job and after a rank is killed: nothing in /dev/shm
  cat >"$tmp/kill.sh" <<EOF
$RUN_MPI 3 '$F' bench '$D' --epochs 50 --compute-ms 5 --cache node --chunk-samples 400 >'$tmp/kjob' 2>&1 &
job=\$!
i=0
while ! grep -q '^epoch 1' '$tmp/kjob' && test \$i -lt 300; do sleep 0.1; i=\$((i + 1)); done
ls /dev/shm > '$tmp/during'
victim=\`sh '$top_srcdir/tests/lib/rank_of.sh' \$job\`
test -n "\$victim" && kill -9 \$victim
wait \$job
echo "rc=\$?" >> '$tmp/kjob'
ls /dev/shm > '$tmp/after'
EOF
  start=`date +%s`
  shm_run "sh '$tmp/kill.sh'"
  took=`expr \`date +%s\` - $start`
  if grep -q '^epoch 1' "$tmp/kjob" && ! grep -q '^rc=0$' "$tmp/kjob" &&
     test $took -lt 60 && ! grep -q ferry-cache "$tmp/during" &&
     ! grep -q ferry-cache "$tmp/after"; then
    ok "a rank killed in epoch 1+: the job ended in $took s ($(tail -1 "$tmp/kjob")), no ferry-cache-* in /dev/shm during or after"
  else
    failed "the kill: $took s, $(tail -1 "$tmp/kjob"); /dev/shm during: $(cat "$tmp/during" | tr '\n' ' ') after: $(cat "$tmp/after" | tr '\n' ' ')"
    tail -5 "$tmp/kjob"
  fi
else
  echo "SKIP part 3: no mount namespace here (unshare -m as root)"
fi

# ---- 4. resume on another rank count -------------------------------------
spec='mem:N=30000,vars=x:float32:4'
args="--epochs 2 --batch-size 8 --tail partial --chunk-samples 256 --compute-ms 5 --cache cluster"
FERRY_NODE_SIZE=2 $RUN_MPI 4 "$F" verify "$spec" $args --state "$tmp/st" >"$tmp/run1" 2>&1 &
job=$!
wait_line "$tmp/run1" 'no state file' 20
sleep 1
victim=`sh "$top_srcdir/tests/lib/rank_of.sh" $job`
test -n "$victim" && kill -USR1 "$victim"
wait $job
rc=$?
if test $rc != 75; then
  failed "resume: the interrupted run exited $rc, expected 75"; cat "$tmp/run1"
else
  FERRY_NODE_SIZE=1 $RUN_MPI 3 "$F" verify "$spec" $args --state "$tmp/st" >"$tmp/run2" 2>&1
  rc=$?
  if test $rc = 0 && grep -q "PASS exactly-once epoch 0: 30000 of 30000 samples served once each over the runs" "$tmp/run2"; then
    ok "resume: saved on 4 ranks (2 nodes), resumed on 3 (3 nodes): exactly once"
  else
    failed "resume on 3 ranks: exit $rc"; cat "$tmp/run2"
  fi
fi

# ---- 5. a bad chunk: the same error on every rank, no hang ----------------
if test -d "$tmp/z.zarr"; then
  cp -r "$tmp/z.zarr" "$tmp/zbad" && printf 'garbage' >"$tmp/zbad/x/5.0"
  start=`date +%s`
  FERRY_NODE_SIZE=1 $RUN_MPI 3 "$F" dump "$tmp/zbad" --epochs 2 --cache cluster \
    --output "$tmp/got" >"$tmp/err" 2>&1
  rc=$? took=`expr \`date +%s\` - $start`
  if test $rc != 0 && test $rc != 124 && test $took -lt 60 &&
     grep -q "chunk file .*zbad/x/5.0 cannot be decoded" "$tmp/err"; then
    ok "a corrupt Zarr chunk with cache=cluster: exit $rc in $took s, the chunk named"
  else
    failed "a corrupt Zarr chunk with cache=cluster: exit $rc in $took s"; cat "$tmp/err"
  fi
fi

# ---- 6. refusals ------------------------------------------------------------
refuse() { # WHAT TEXT OPTIONS...
  what=$1 text=$2
  shift 2
  $RUN_MPI 2 "$F" info "$D" "$@" >"$tmp/err" 2>&1
  if test $? != 0 && grep -q -- "$text" "$tmp/err"; then
    ok "refused: $what"
  else
    failed "not refused, or another message: $what"; cat "$tmp/err"
  fi
}
refuse "io=mmap" "option 'cache' = 'node' with io=mmap" --cache node --io mmap
refuse "io=collective" "with io=collective: the cache reads" --cache cluster --io collective
refuse "cache_bytes alone" "option 'cache_bytes' applies only with cache=node" --cache-bytes 1GiB
FERRY_NODE_SIZE=x $RUN_MPI 2 "$F" info "$D" --cache node >"$tmp/err" 2>&1
if test $? != 0 && grep -q "FERRY_NODE_SIZE is 'x'" "$tmp/err"; then
  ok "refused: FERRY_NODE_SIZE=x"
else
  failed "FERRY_NODE_SIZE=x"; cat "$tmp/err"
fi
exit $fail
