#!/bin/sh
# hosts.sh - the simulated hosts of tests/lib/hosts.sh (issue 29: more than
# one node, tested on one machine) are what an MPI job over real nodes
# sees, and leave nothing behind.  3 hosts of 2 ranks:
#
#  - every host has its own name (ferry-hI), address and /dev/shm;
#  - test_hosts over the 6 ranks: MPI_COMM_TYPE_SHARED groups exactly the
#    ranks of each host ({0,1}, {2,3}, {4,5}), an allreduce and a 64 MiB
#    exchange per rank between hosts arrive intact, a shared window
#    (MPI_Win_allocate_shared on the node communicator) is shared within a
#    host and not across, a /dev/shm file of one host is not seen by the
#    others, a file rank 0 writes is read on every host;
#  - a host's link cut mid-job (hosts_link 1 down) fails the job with
#    Open MPI's error, within seconds, not at the time limit; with the
#    link back up a job runs again;
#  - HOSTS_SHM=shared (2 hosts): every host sees the machine's /dev/shm;
#  - hosts_down leaves no namespace, link, process or file of the harness,
#    and the root namespace's links are those it had before.
#
# Skips (77) where namespaces cannot be made: not root, no ip, no veth or
# bridge, a container without CAP_NET_ADMIN (tests/lib/hosts.sh says why).
here=`dirname "$0"`
. "$here/../lib/common.sh"
ferry_test_init hosts
. "$top_srcdir/tests/lib/hosts.sh"

prog=${top_builddir:-.}/tests/cluster/test_hosts
if test ! -x "$prog"; then
  echo "FAIL: $prog not built"
  exit 1
fi
links_before=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)

hosts_up 3 2
id=$hosts_id
hdir=$hosts_dir
for i in 0 1 2; do
  name=$(hosts_exec $i hostname)
  addr=$(hosts_exec $i ip -o -4 addr show dev eth0 | awk '{print $4}')
  shm=$(hosts_exec $i stat -c %d /dev/shm)
  if test "$name" = ferry-h$i && test "$addr" = 10.213.0.$((i + 1))/24; then
    ok "host $i: $name $addr, /dev/shm file system $shm"
  else
    failed "host $i: name '$name', address '$addr'"
  fi
  echo "$shm" >>"$tmp/shm.ids"
done
if test "$(sort -u "$tmp/shm.ids" | wc -l)" = 3 &&
  ! grep -x "$(stat -c %d /dev/shm)" "$tmp/shm.ids" >/dev/null; then
  ok "each host has a /dev/shm of its own"
else
  failed "the hosts share a /dev/shm" "$tmp/shm.ids"
fi

# The job over the 6 ranks: its checks, and its node groups read back.
mkdir -p "$tmp/shared"
start=$(date +%s)
hosts_run 6 "$prog" --hosts 3 --ppn 2 --shm private --dir "$tmp/shared" \
  >"$tmp/job.out" 2>&1
st=$?
if test $st = 0 && grep '^PASS: test_hosts: .* 0 failed over 6 ranks' "$tmp/job.out" >/dev/null; then
  ok "test_hosts over 3 hosts x 2 ranks in $(($(date +%s) - start)) s: $(grep '^PASS' "$tmp/job.out")"
else
  failed "test_hosts over 3 hosts x 2 ranks: exit $st" "$tmp/job.out"
  sed -n 's/^/    /; /FAIL/p' "$tmp/job.out" | head -20
fi
grep '^exchange:' "$tmp/job.out"
sed -n 's/^rank \([0-9]*\) host \([^ ]*\) node_size [0-9]* node_ranks \(.*\)/\1 \2 \3/p' \
  "$tmp/job.out" | sort -n >"$tmp/groups"
printf '%s\n' "0 ferry-h0 0,1" "1 ferry-h0 0,1" "2 ferry-h1 2,3" "3 ferry-h1 2,3" \
  "4 ferry-h2 4,5" "5 ferry-h2 4,5" >"$tmp/groups.want"
if cmp -s "$tmp/groups" "$tmp/groups.want"; then
  ok "MPI_COMM_TYPE_SHARED: {0,1} on ferry-h0, {2,3} on ferry-h1, {4,5} on ferry-h2"
else
  failed "the node groups are not those of the hosts" "$tmp/groups"
fi

# A link cut mid-job: the job fails with an error, well before its limit.
# (The daemons notice within seconds: tcp_retries2 and keepalives, above.)
rm -f "$tmp/ready"
start=$(date +%s)
HOSTS_MPI_TIMEOUT=90 hosts_run 6 "$prog" --mib 1 --loop 60 --ready "$tmp/ready" \
  >"$tmp/cut.out" 2>&1 &
job=$!
n=0
while test ! -e "$tmp/ready" && kill -0 $job 2>/dev/null && test $n -lt 600; do
  sleep 0.1
  n=$((n + 1))
done
if test -e "$tmp/ready"; then
  cut=$(date +%s)
  hosts_link 1 down
  wait $job
  st=$?
  took=$(($(date +%s) - cut))
  if test $st != 0 && test $st != 124 && test $st != 137 && test $took -lt 45 &&
    ! grep '^loop: .* no error' "$tmp/cut.out" >/dev/null; then
    ok "host 1's link cut: the job failed (exit $st) $took s later: $(grep -m1 -iE 'lost communication|error|unreachable' "$tmp/cut.out" | cut -c1-100)"
  else
    failed "host 1's link cut: exit $st, $took s later" "$tmp/cut.out"
  fi
else
  wait $job
  failed "the job to cut did not start (exit $?)" "$tmp/cut.out"
fi
hosts_link 1 up
hosts_run 6 "$prog" --hosts 3 --ppn 2 --mib 1 >"$tmp/again.out" 2>&1
st=$?
if test $st = 0 && grep '^PASS: test_hosts' "$tmp/again.out" >/dev/null; then
  ok "the link back up, a job runs over the 3 hosts again"
else
  failed "the link back up: exit $st" "$tmp/again.out"
fi

# Down, then the same shell brings up hosts sharing the machine's /dev/shm.
hosts_down
hosts_down
HOSTS_SHM=shared hosts_up 2 1
hosts_run 2 "$prog" --hosts 2 --ppn 1 --mib 1 --shm shared >"$tmp/shared.out" 2>&1
st=$?
if test $st = 0 && grep '^PASS: test_hosts' "$tmp/shared.out" >/dev/null; then
  ok "HOSTS_SHM=shared: 2 hosts see each other's /dev/shm files"
else
  failed "HOSTS_SHM=shared: exit $st" "$tmp/shared.out"
fi
id2=$hosts_id
hdir2=$hosts_dir
hosts_down

# Nothing is left: namespaces, links of the root namespace, processes,
# the harness's files.
left=$(ip netns list | grep -E "^ferry-($id|$id2)-")
links_after=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sort)
if test -z "$left" && test "$links_before" = "$links_after" &&
  test ! -e "$hdir" && test ! -e "$hdir2"; then
  ok "hosts_down left no namespace, link or file ($(echo $links_after))"
else
  echo "$left" >"$tmp/left"
  echo "links before: $(echo $links_before); after: $(echo $links_after)" >>"$tmp/left"
  failed "hosts_down left something behind" "$tmp/left"
fi
exit $fail
