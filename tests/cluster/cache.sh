#!/bin/sh
# cache.sh - the node cache (cache=node|cluster, issue 29, src/loader/cache.c)
# over 3 simulated hosts of 2 ranks (tests/lib/hosts.sh): each host is a
# node for MPI_Comm_split_type (FERRY_NODE_SIZE is not set) with its own
# /dev/shm, the ranks of different hosts talk TCP.  A dataset of 36,000
# samples of 72 bytes (x float32[16], y int64) in 3 parts, chunks of 125
# samples: 288 chunks of 9,000 bytes, 48 per rank.  Every job runs 3 epochs
# with tail=partial, so that each epoch serves every sample once.
#
#  1. ferry dump --epochs 3 --row-hash with cache=node and cache=cluster is
#     byte-identical to the run without a cache, for shuffle=chunks,
#     shuffle=global, weighted sampling (--weights, a float64 .npy) and
#     packed rows of a token corpus (pack=concat: the documents cached).
#  2. ferry bench --epochs 3 --cache cluster, the exact byte counts of its
#     per-epoch lines (sums over the ranks): epoch 0 reads the dataset once
#     from storage and gets nothing from other nodes; epochs 1 and 2 read
#     nothing from storage, take every byte from the node's region or
#     another node's (node cache + other nodes = the dataset), the servers
#     send exactly what the other nodes receive, and the bytes from other
#     nodes are about (nodes-1)/nodes = 2/3 of the dataset (why the bounds,
#     below).
#  3. While that job runs (after epoch 0): each host's two ranks map one
#     region, the same, on that host's own /dev/shm (the device of the
#     mapping is the host's tmpfs), different on each host, already
#     unlinked ("(deleted)"), and no host's /dev/shm lists a ferry-cache-*
#     file; after every job none is left either.
#  4. Host 1's /dev/shm cut to 512 KiB (remounted in its own mount
#     namespace: a node with less room than the others) and
#     --cache-bytes 64MiB: the job runs, rank 0 says on stderr that
#     cache_bytes was cut to what the node of rank 2 (host 1's first rank)
#     holds, the exact capacity, the batches are still byte-identical, and
#     epochs 1 and 2 read from storage exactly the uncached part (> 0, what
#     the plan line says), no more.
#  5. Failures in epoch 1, cache=cluster, --collective-timeout 5: rank 5
#     killed with SIGKILL; host 1's link cut (hosts_link 1 down): each job
#     ends non-zero well within its time limit (no hang).  Rank 4 (host
#     2's cache server) stopped with SIGSTOP: rank 0 reports FERRY_EPEER
#     within the timeout (no hang in the loader), and the tool then ends
#     the job by itself while the rank is still stopped.  After
#     each: no rank left on any host, no ferry-cache-* file in any host's
#     /dev/shm.
#
# Skips (77) where hosts.sh cannot make the hosts (not root, no namespaces).
# About 60 s on 2 cores.
here=`dirname "$0"`
. "$here/../lib/common.sh"
ferry_test_init cache
. "$top_srcdir/tests/lib/hosts.sh"

fbin=${FERRY_TEST_BIN:-$FERRY}
py=${PYTHON_NUMPY:-/usr/bin/python3}
samples=36000
dsbytes=$((samples * 72)) # the bytes of every sample once: 2,592,000
opts="--chunk-samples 125 --tail partial"

hosts_up 3 2
t_start=$(date +%s)

# The dataset (on the shared file system: every host reads it).
if ! "$FERRY" gen "$tmp/data" --samples $samples --var x:float32:16 \
  --var y:int64 --parts 3 >"$tmp/gen.out" 2>&1; then
  failed "ferry gen" "$tmp/gen.out"
  exit 1
fi
ds="$tmp/data/part-*"

# job NAME ARGS...: ferry ARGS over the 6 ranks of the 3 hosts; output in
# $tmp/NAME.out and .err, exit status in $st.
job() {
  j_name=$1
  shift
  hosts_run 6 "$fbin" "$@" >"$tmp/$j_name.out" 2>"$tmp/$j_name.err"
  st=$?
}

# ep FILE E FIELD: the exact byte count FIELD (storage, node_cache,
# other_nodes, sent) of bench's line for epoch E.
ep() {
  sed -n "s/^epoch $2: .*; bytes:.* $3=\([0-9]*\).*/\1/p" "$1" | head -1
}

# ranks_on I: the pids of the ferry ranks on host I (its network namespace).
ranks_on() {
  for r_p in $(ip netns pids "$(hosts_ns "$1")" 2>/dev/null); do
    case $(cat "/proc/$r_p/comm" 2>/dev/null) in
      *ferry*) echo "$r_p" ;;
    esac
  done
}

# shm_files: "host I: NAME" for every ferry-cache-* file in a host's /dev/shm.
shm_files() {
  for s_i in 0 1 2; do
    hosts_exec $s_i ls -a /dev/shm | sed -n "s/^\(ferry-cache-.*\)/host $s_i: \1/p"
  done
}

# no_shm_left WHEN: no host's /dev/shm holds a ferry-cache-* file.
no_shm_left() {
  shm_files >"$tmp/shm.left"
  if test -s "$tmp/shm.left"; then
    failed "$1: ferry-cache files left in /dev/shm" "$tmp/shm.left"
  else
    ok "$1: no ferry-cache-* file in any host's /dev/shm"
  fi
}

# no_ranks_left WHAT: no ferry rank runs on any host (waits 20 s at most:
# the daemons of a failed job stop their ranks within seconds).
no_ranks_left() {
  n_i=0
  while :; do
    n_left=$(for n_h in 0 1 2; do ranks_on $n_h; done)
    test -z "$n_left" && break
    n_i=$((n_i + 1))
    if test $n_i -ge 200; then
      for n_p in $n_left; do
        echo "$n_p $(tr '\0' ' ' <"/proc/$n_p/cmdline" 2>/dev/null)"
      done >"$tmp/ranks.left"
      failed "$1: ferry ranks still running 20 s after the job" "$tmp/ranks.left"
      return 1
    fi
    sleep 0.1
  done
  ok "$1: no ferry rank left on any host"
}

# ---- 1. The same batches with and without the cache ----------------------
weights=
if "$py" -c "import numpy as np; np.save('$tmp/w.npy', (np.arange($samples) % 7 + 1).astype('<f8'))" \
  >"$tmp/py.out" 2>&1 && test -s "$tmp/w.npy"; then
  weights="$tmp/w.npy"
else
  echo "note: no python with numpy ($py): the weighted run is left out"
  sed 's/^/    /' "$tmp/py.out" | head -3
fi
if ! "$FERRY" gen "$tmp/corpus" --format megatron --samples 3000 \
  --mean-len 40 >"$tmp/gen.out" 2>&1; then
  failed "ferry gen of a token corpus" "$tmp/gen.out"
  exit 1
fi
for how in chunks global weights pack; do
  hds=$ds want=$((3 * samples))
  case $how in
    chunks) hopts= ;;
    global) hopts="--shuffle global" ;;
    weights)
      test -n "$weights" || continue
      hopts="--weights $weights"
      ;;
    pack) hds=$tmp/corpus hopts="--pack concat --seq-len 64" want=1000 ;;
  esac
  for c in none node cluster; do
    # shellcheck disable=SC2086
    job "dump.$how.$c" dump "$hds" --epochs 3 --row-hash --output \
      "$tmp/dump.$how.$c" $opts $hopts --cache $c
    echo $st >"$tmp/dump.$how.$c.st"
  done
  n=$(wc -l <"$tmp/dump.$how.none" 2>/dev/null || echo 0)
  if test "$(cat "$tmp/dump.$how.none.st")" != 0 || test "$n" -lt "$want"; then
    failed "$how, no cache: exit $(cat "$tmp/dump.$how.none.st"), $n lines (want $want)" \
      "$tmp/dump.$how.none.err"
    continue
  fi
  for c in node cluster; do
    s=$(cat "$tmp/dump.$how.$c.st")
    if test "$s" = 0 && cmp -s "$tmp/dump.$how.none" "$tmp/dump.$how.$c"; then
      ok "$how, cache=$c over 3 hosts x 2 ranks: the $n samples of 3 epochs byte-identical to no cache"
    else
      diff "$tmp/dump.$how.none" "$tmp/dump.$how.$c" >"$tmp/diff" 2>&1
      cat "$tmp/dump.$how.$c.err" >>"$tmp/diff"
      failed "$how, cache=$c: exit $s, $(grep -c '^[<>]' "$tmp/diff") lines differ" "$tmp/diff"
    fi
  done
  rm -f "$tmp/dump.$how.node" "$tmp/dump.$how.cluster"
done
echo "note: the dumps took $(($(date +%s) - t_start)) s"

# ---- 2 and 3. Where the bytes come from; the regions while it runs -------
# --compute-ms 15: about 1.5 s an epoch (94 steps per rank), time to look
# at the hosts during epochs 1 and 2.
t0=$(date +%s)
# shellcheck disable=SC2086
hosts_run 6 "$fbin" bench "$ds" --epochs 3 $opts --cache cluster \
  --compute-ms 15 >"$tmp/bench.out" 2>"$tmp/bench.err" &
bjob=$!
if wait_line "$tmp/bench.out" '^epoch 0:' 30 $bjob; then
  : >"$tmp/maps"
  for i in 0 1 2; do
    for p in $(ranks_on $i); do
      # "ADDR PERMS OFFSET DEV INODE /dev/shm/ferry-cache-... (deleted)"
      awk -v h=$i -v p="$p" '$6 ~ /ferry-cache-/ { print h, p, $4, $6, $7 }' \
        "/proc/$p/maps" | sort -u >>"$tmp/maps"
    done
  done
  shm_files >"$tmp/shm.during"
  for i in 0 1 2; do
    dev=$(hosts_exec $i stat -c %d /dev/shm)
    nr=$(awk -v h=$i '$1 == h { print $2 }' "$tmp/maps" | sort -u | wc -l)
    nn=$(awk -v h=$i '$1 == h { print $4 }' "$tmp/maps" | sort -u | wc -l)
    nd=$(awk -v h=$i '$1 == h && $5 == "(deleted)"' "$tmp/maps" | wc -l)
    nl=$(awk -v h=$i '$1 == h' "$tmp/maps" | wc -l)
    mdev=$(awk -v h=$i '$1 == h { print $3 }' "$tmp/maps" | sort -u)
    case $mdev in
      *:*) mdev=$((0x${mdev%%:*} * 256 + 0x${mdev#*:})) ;;
    esac
    if test "$nr" = 2 && test "$nn" = 1 && test "$nd" = "$nl" &&
      test "$mdev" = "$dev"; then
      ok "during epoch 1, host $i: its 2 ranks map one region on its own /dev/shm (device $dev), unlinked: $(awk -v h=$i '$1 == h { print $4, $5; exit }' "$tmp/maps")"
    else
      failed "during epoch 1, host $i: $nr ranks map $nn regions, $nd of $nl mappings deleted, device '$mdev' (its /dev/shm: $dev)" "$tmp/maps"
    fi
  done
  if test "$(awk '{ print $4 }' "$tmp/maps" | sort -u | wc -l)" = 3; then
    ok "during epoch 1: 3 regions, one per host"
  else
    failed "during epoch 1: not one region per host" "$tmp/maps"
  fi
  if test -s "$tmp/shm.during"; then
    failed "during epoch 1: ferry-cache files listed in /dev/shm" "$tmp/shm.during"
  else
    ok "during epoch 1: no host's /dev/shm lists a ferry-cache-* file"
  fi
else
  failed "the bench did not reach epoch 1: nothing looked at during it" "$tmp/bench.err"
fi
wait $bjob
st=$?
echo "note: bench --compute-ms 15 took $(($(date +%s) - t0)) s"
grep -E '^(cache|epoch)' "$tmp/bench.out" | sed 's/^/    /'
if test $st != 0 || ! grep -q '^epoch 2:' "$tmp/bench.out"; then
  failed "bench --cache cluster over 3 hosts: exit $st" "$tmp/bench.err"
else
  if grep -q '^cache: cluster over 3 nodes; .* (288 of 288 chunks)' "$tmp/bench.out"; then
    ok "the plan: cluster over 3 nodes, the 288 chunks cached"
  else
    failed "the plan line is not cluster over 3 nodes, 288 of 288 chunks" "$tmp/bench.out"
  fi
  s0=$(ep "$tmp/bench.out" 0 storage)
  o0=$(ep "$tmp/bench.out" 0 other_nodes)
  if test "$s0" = $dsbytes && test "$o0" = 0; then
    ok "epoch 0: the dataset read once from storage ($s0 bytes), nothing from other nodes"
  else
    failed "epoch 0: storage '$s0' bytes (want $dsbytes), other nodes '$o0' (want 0)"
  fi
  osum=0
  for e in 1 2; do
    s=$(ep "$tmp/bench.out" $e storage)
    l=$(ep "$tmp/bench.out" $e node_cache)
    o=$(ep "$tmp/bench.out" $e other_nodes)
    x=$(ep "$tmp/bench.out" $e sent)
    if test "$s" = 0 && test -n "$l" && test -n "$o" &&
      test $((l + o)) = $dsbytes && test "$x" = "$o"; then
      ok "epoch $e: 0 bytes from storage; node cache $l + other nodes $o = the dataset; sent $x = received"
    else
      failed "epoch $e: storage '$s' (want 0), node cache '$l' + other nodes '$o' (want $dsbytes), sent '$x' (want '$o')"
    fi
    # The bytes from other nodes: a rank reads 48 chunks of the epoch's
    # permutation, each owned by one of the 3 nodes (a scattered order cut
    # in 3 runs), so about 2/3 of them are another node's.  Over such
    # random permutations of 288 chunks the share has a standard deviation
    # of 0.028 (simulated: 144 chunks 0.039, 72 chunks 0.056), the mean of
    # two epochs 0.020: each epoch within [0.5, 0.85] (6 sd) and their
    # mean below 1.1 x 2/3 (3.4 sd).  The seed and the dataset fix both
    # orders, so the result is the same on every run.
    if test -n "$o" && test "$o" -gt 0 && test $((o * 100)) -ge $((dsbytes * 50)) &&
      test $((o * 100)) -le $((dsbytes * 85)); then
      ok "epoch $e: $o bytes from other nodes, $((o * 1000 / dsbytes))/1000 of the dataset (within [0.5, 0.85])"
    else
      failed "epoch $e: '$o' bytes from other nodes, not within [0.5, 0.85] x $dsbytes"
    fi
    osum=$((osum + ${o:-0}))
  done
  # mean <= 1.1 * 2/3 * dataset  <=>  osum / 2 * 30 <= 22 * dataset
  if test $((osum * 15)) -le $((dsbytes * 22)); then
    ok "epochs 1-2: other nodes $((osum / 2)) bytes an epoch on average, $((osum * 500 / dsbytes))/1000 of the dataset (<= 1.1 x 2/3)"
  else
    failed "epochs 1-2: other nodes $((osum / 2)) bytes an epoch on average, over 1.1 x 2/3 of $dsbytes"
  fi
fi
no_shm_left "after the bench"

# ---- 4. A node with less /dev/shm than cache_bytes -----------------------
# Host 1 only: the message must name its first rank, 2; the capacity every
# node uses is what host 1's /dev/shm holds less 1/16 (agree_cap()).
if hosts_exec 1 mount -o remount,size=512k /dev/shm; then
  free=$(hosts_exec 1 stat -f -c '%a %S' /dev/shm | awk '{ print $1 * $2 }')
  cap=$((free - free / 16))
  job small.dump dump "$ds" --epochs 3 --row-hash --output "$tmp/dump.small" \
    $opts --cache cluster --cache-bytes 64MiB
  if test $st = 0 && cmp -s "$tmp/dump.chunks.none" "$tmp/dump.small"; then
    ok "host 1's /dev/shm 512 KiB, cache_bytes=64MiB: the job runs, the batches of 3 epochs byte-identical"
  else
    failed "host 1's /dev/shm 512 KiB: exit $st, or the batches differ" "$tmp/small.dump.err"
  fi
  msg="cache_bytes=67108864 asked, but /dev/shm on the node of rank 2 holds less: $cap bytes per node"
  if grep -F -q "$msg" "$tmp/small.dump.err"; then
    ok "stderr: $(grep -F "$msg" "$tmp/small.dump.err" | head -1)"
  else
    failed "stderr does not say '$msg'" "$tmp/small.dump.err"
  fi
  job small.bench bench "$ds" --epochs 3 $opts --cache cluster --cache-bytes 64MiB
  grep -E '^(cache|epoch)' "$tmp/small.bench.out" | sed 's/^/    /'
  # the plan's "per epoch: X from storage", formatted as the epoch lines
  plan=$(sed -n 's/^cache: cluster .*per epoch: \(.*\) from storage.*/\1/p' "$tmp/small.bench.out")
  chunks=$(sed -n 's/^cache: cluster .*(\([0-9]*\) of 288 chunks).*/\1/p' "$tmp/small.bench.out")
  s0=$(ep "$tmp/small.bench.out" 0 storage)
  if test $st = 0 && test "$s0" = $dsbytes && test -n "$chunks" && test "$chunks" -lt 288 &&
    test "$chunks" -gt 0; then
    ok "small /dev/shm: $chunks of 288 chunks cached, epoch 0 reads the dataset once ($s0 bytes)"
  else
    failed "small /dev/shm: exit $st, $chunks of 288 chunks cached, epoch 0 storage '$s0' (want $dsbytes)" "$tmp/small.bench.err"
  fi
  for e in 1 2; do
    s=$(ep "$tmp/small.bench.out" $e storage)
    l=$(ep "$tmp/small.bench.out" $e node_cache)
    o=$(ep "$tmp/small.bench.out" $e other_nodes)
    shown=$(sed -n "s/^epoch $e: storage \([^(]*\) (.*/\1/p" "$tmp/small.bench.out")
    if test -n "$s" && test "$s" -gt 0 && test "$s" -lt $dsbytes &&
      test $((s + l + o)) = $dsbytes && test "$shown" = "$plan"; then
      ok "small /dev/shm, epoch $e: $s bytes from storage (the uncached part, $shown as the plan says), $((l + o)) from the nodes"
    else
      failed "small /dev/shm, epoch $e: storage '$s' ('$shown', plan '$plan'), node cache '$l', other nodes '$o': want 0 < storage < $dsbytes, the sum $dsbytes"
    fi
  done
  hosts_exec 1 mount -o remount,size=1g /dev/shm
else
  failed "cannot remount host 1's /dev/shm at 512 KiB"
fi
no_shm_left "after the small /dev/shm jobs"

# ---- 5. A rank killed, stopped; a link cut -------------------------------
# fail_job WHAT ACTION: a cache=cluster bench over the hosts; once epoch 0
# is over, ACTION (a shell command); the job must end non-zero well within
# its limit (60 s; a job that hangs ends there, 124 or 137).  mpirun's own
# status is that of the first rank to fail: 137 for a rank killed with
# SIGKILL (hosts_run then says "timed out", wrongly): the time tells.
fail_job() {
  f_what=$1
  rm -f "$tmp/fail.out" # not the last job's "epoch 0" line
  # shellcheck disable=SC2086
  HOSTS_MPI_TIMEOUT=60 hosts_run 6 "$fbin" bench "$ds" --epochs 3 $opts \
    --cache cluster --compute-ms 15 --collective-timeout 5 \
    >"$tmp/fail.out" 2>&1 &
  f_job=$!
  if ! wait_line "$tmp/fail.out" '^epoch 0:' 30 $f_job; then
    wait $f_job
    failed "$f_what: the job did not reach epoch 1 (exit $?)" "$tmp/fail.out"
    return 1
  fi
  f_at=$(date +%s)
  eval "$2"
  wait $f_job
  f_st=$?
  f_took=$(($(date +%s) - f_at))
  if test $f_st != 0 && test $f_took -lt 30 && ! grep -q '^epoch 2:' "$tmp/fail.out"; then
    ok "$f_what in epoch 1: the job failed (exit $f_st) $f_took s later: $(grep -m1 -iE "${3:-noticed|lost communication|ferry:}" "$tmp/fail.out" | cut -c1-150)"
  else
    failed "$f_what in epoch 1: exit $f_st, $f_took s later" "$tmp/fail.out"
    return 1
  fi
}
# rank_pid R: the pid of rank R (on host R / 2), from its environment.
rank_pid() {
  for r_q in $(ranks_on $(($1 / 2))); do
    if tr '\0' '\n' <"/proc/$r_q/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$r_q"
      return 0
    fi
  done
  echo "rank $1 not found on host $(($1 / 2))" >>"$tmp/fail.out"
}
# A rank killed: mpirun sees it at once and stops the others.
fail_job "rank 5 (host 2) killed with SIGKILL" 'kill -KILL $(rank_pid 5)' \
  "noticed that process rank 5"
no_ranks_left "SIGKILL"
no_shm_left "after the SIGKILL"

# Rank 4, the first rank of host 2 and so its cache server, stopped
# (SIGSTOP: it lives, answers nothing): the loader must not hang, on the
# other nodes' requests for its chunks nor in its agreements: within
# collective_timeout (5 s; 10 s of slack) rank 0 reports FERRY_EPEER, and
# the tool then ends the job (src/tool/main.c: MPI_Abort after FERRY_EPEER,
# instead of waiting for the stopped rank in its last collective) while the
# rank is still stopped.
HOSTS_MPI_TIMEOUT=60 hosts_run 6 "$fbin" bench "$ds" --epochs 3 $opts \
  --cache cluster --compute-ms 15 --collective-timeout 5 \
  >"$tmp/stop.out" 2>&1 &
s_job=$!
if wait_line "$tmp/stop.out" '^epoch 0:' 30 $s_job && s_p=$(rank_pid 4) &&
  test -n "$s_p" && kill -STOP "$s_p"; then
  s_at=$(date +%s)
  if wait_line "$tmp/stop.out" 'within 5 s (collective_timeout)' 30 $s_job; then
    s_took=$(($(date +%s) - s_at))
  else
    s_took=never
  fi
  case $s_took in
    [0-9]|1[0-5])
      ok "rank 4 (host 2's cache server) stopped in epoch 1: $s_took s later: $(grep -m1 'collective_timeout' "$tmp/stop.out" | cut -c1-150)" ;;
    *) failed "rank 4 stopped in epoch 1: no FERRY_EPEER report within 15 s ($s_took)" "$tmp/stop.out" ;;
  esac
  s_at=$(date +%s)
  n=0
  while kill -0 $s_job 2>/dev/null && test $n -lt 150; do
    sleep 0.1
    n=$((n + 1))
  done
  if kill -0 $s_job 2>/dev/null; then
    kill -KILL "$s_p"
    wait $s_job
    failed "after FERRY_EPEER the job did not end by itself within 15 s (the stopped rank killed then)" "$tmp/stop.out"
  else
    wait $s_job
    s_st=$?
    s_took=$(($(date +%s) - s_at))
    if test $s_st != 0; then
      ok "after FERRY_EPEER the job ended by itself (exit $s_st) $s_took s later, rank 4 still stopped"
    else
      failed "after FERRY_EPEER the job exited 0" "$tmp/stop.out"
    fi
  fi
else
  kill -CONT "${s_p:-0}" 2>/dev/null
  wait $s_job
  failed "SIGSTOP: the job did not reach epoch 1, or rank 4 not found (exit $?)" "$tmp/stop.out"
fi
no_ranks_left "SIGSTOP"
no_shm_left "after the SIGSTOP"

# Host 1's cable pulled: the daemons lose each other within seconds.
fail_job "host 1's link cut" "hosts_link 1 down" "lost communication|ferry:"
no_ranks_left "link cut"
hosts_link 1 up
no_shm_left "after the link cut"

echo "note: the test took $(($(date +%s) - t_start)) s after hosts_up"
exit $fail
