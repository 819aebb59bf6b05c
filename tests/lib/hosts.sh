# hosts.sh - several simulated hosts on this one machine, for the tests
# that need MPI jobs over more than one node (issue 29): each host is a
# network namespace with its own address, host name and /dev/shm, joined
# to the others by a veth pair to a bridge; Open MPI starts its daemons in
# them through an agent of its own (no ssh) and talks TCP between them.
# Source it (after lib/common.sh, which sets $tmp and the trap this
# library extends), then:
#
#   hosts_up 3 2                 # 3 hosts, 2 slots each; skips (exit 77)
#                                # where namespaces cannot be made
#   hosts_run 6 "$prog" args     # mpirun over them, under the time limit
#   hosts_exec 1 cat /dev/shm/x  # a command on host 1 (its namespaces)
#   hosts_link 1 down            # cut host 1 from the others (or up)
#   hosts_down                   # remove it all (idempotent; the trap
#                                # calls it on every exit too)
#
# The hosts, 0 to N-1:
#   network    namespace ferry-PID-hI (ip netns), eth0 = 10.213.0.(I+1)/24,
#              a veth pair whose other end, pI, is a port of the bridge br0
#              in one more namespace, ferry-PID-sw: the root namespace gets
#              no link, address or route, so the machine's own network is
#              never touched (PID: the test's; several tests can run at
#              once, each with its own namespaces and the same addresses)
#   host name  ferry-hI (a UTS namespace), resolvable on every host (an
#              /etc/hosts of the harness bind-mounted over the host's own,
#              in its mount namespace: the machine's file is not changed)
#   /dev/shm   a tmpfs of the host's own (HOSTS_SHM=private, the default;
#              size HOSTS_SHM_SIZE, default 1g), so what one host writes
#              there the others do not see, as on real nodes; with
#              HOSTS_SHM=shared every host sees the machine's /dev/shm (all
#              namespaces here share one mount namespace otherwise)
#   files      everything else is the machine's: the hosts share the file
#              system the way nodes share a parallel file system
#
# Each host's UTS and mount namespaces are held by a small process (a
# "holder") started in its network namespace; every command on the host,
# Open MPI's daemons too, enters all three with nsenter.  A holder ends by
# itself within a second of the test's shell.  A test killed with SIGKILL
# (no trap runs) so leaves no tmpfs; its job runs on until its own time
# limit (hosts_run), and its network namespaces (files under /run/netns)
# and the harness's directory stay until the next hosts_up on the machine,
# which removes those of shells that no longer run.
#
# mpirun runs on host 0 (like a job script on the first node of its
# allocation): hostfile lines "ferry-hI slots=RANKS_PER_HOST", the agent
# (plm_rsh_agent) runs "HOST COMMAND" on that host, as ssh would, without
# tree spawn, and the daemons (oob) and ranks (btl tcp) use only
# 10.213.0.0/24.  Within a host the ranks use shared memory (btl vader)
# as on a real node; between hosts only TCP over the veth links.  So that
# a link cut fails the job in seconds instead of TCP's 15 minutes, each
# host's namespace retransmits less (net.ipv4.tcp_retries2=4) and the
# daemons' connections send keepalives (every second after 2 s idle).
#
# Settings (environment):
#   HOSTS_SHM          private (default) or shared, above
#   HOSTS_SHM_SIZE     the size of each private /dev/shm (default 1g)
#   HOSTS_MPI_TIMEOUT  seconds one hosts_run may take (default
#                      $FERRY_MPI_TIMEOUT, else 100); exit 124 past it
#   HOSTS_MPIRUN_FLAGS more mpirun options for every hosts_run
#
# Needs: root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), ip (iproute2) with
# veth and bridge links, nsenter and unshare (util-linux), mpirun of Open
# MPI.  hosts_up skips the test (exit 77, saying why) where one is missing;
# once the hosts are up, anything that goes wrong is a failure.

hosts_n=0
hosts_ppn=1
hosts_id=
hosts_dir=

# hosts_skip WHY: skip the calling test.
hosts_skip() {
  echo "SKIP: simulated hosts: $*"
  hosts_down
  exit 77
}

# hosts_ns I: the network namespace of host I ("sw": the switch's).
hosts_ns() {
  case $1 in
    sw) echo "ferry-$hosts_id-sw" ;;
    *) echo "ferry-$hosts_id-h$1" ;;
  esac
}

# hosts_tmpbase: where the harness's files go (a directory of its own).
hosts_tmpbase() {
  echo "${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}"
}

# hosts_sweep: remove what an earlier test killed before its hosts_down
# left behind: namespaces ferry-PID-* (and the processes in them) and
# directories ferry-hosts.PID.*, PID no longer running.
hosts_sweep() {
  for s_dir in "$(hosts_tmpbase)"/ferry-hosts.*.*; do
    test -d "$s_dir" || continue
    s_pid=${s_dir##*/ferry-hosts.}
    s_pid=${s_pid%%.*}
    case $s_pid in ''|*[!0-9]*) continue ;; esac
    kill -0 "$s_pid" 2>/dev/null || rm -rf "$s_dir"
  done
  for s_ns in $(ip netns list 2>/dev/null | sed -n 's/^\(ferry-[0-9][0-9]*-[a-z0-9]*\).*/\1/p'); do
    s_pid=${s_ns#ferry-}
    s_pid=${s_pid%%-*}
    kill -0 "$s_pid" 2>/dev/null && continue
    hosts_kill_ns "$s_ns"
    ip netns del "$s_ns" 2>/dev/null
  done
}

# hosts_kill_ns NS: kill every process in network namespace NS.
hosts_kill_ns() {
  k_pids=$(ip netns pids "$1" 2>/dev/null)
  test -n "$k_pids" || return 0
  # shellcheck disable=SC2086
  kill -KILL $k_pids 2>/dev/null
  k_i=0
  while test -n "$(ip netns pids "$1" 2>/dev/null)" && test $k_i -lt 50; do
    sleep 0.1
    k_i=$((k_i + 1))
  done
}

# hosts_up N [RANKS_PER_HOST]: make N hosts (RANKS_PER_HOST slots each,
# default 1).  Skips the test (77) where it cannot; on another failure
# says why, removes what it made and exits 1.
hosts_up() {
  hosts_n=$1
  hosts_ppn=${2:-1}
  case $hosts_n$hosts_ppn in
    *[!0-9]*|'') echo "hosts_up: N and RANKS_PER_HOST are numbers" >&2; exit 99 ;;
  esac
  if test "$hosts_n" -lt 1 || test "$hosts_n" -gt 200; then
    echo "hosts_up: 1 to 200 hosts, not $hosts_n" >&2
    exit 99
  fi
  test "$(id -u)" = 0 || hosts_skip "not root (network namespaces need CAP_NET_ADMIN)"
  for h_cmd in ip nsenter unshare mount ${TIMEOUT:-timeout}; do
    command -v "$h_cmd" >/dev/null 2>&1 || hosts_skip "no $h_cmd (Debian: iproute2, util-linux, coreutils)"
  done
  h_mpirun=${MPIRUN:-mpirun}
  h_mpirun=${h_mpirun%% *}
  case $(basename "$h_mpirun") in
    mpirun|mpiexec|orterun) ;;
    *) hosts_skip "the MPI launcher is $h_mpirun, not Open MPI's mpirun" ;;
  esac
  case $($h_mpirun --version 2>/dev/null) in
    *"Open MPI"*|*OpenRTE*) ;;
    *) hosts_skip "$h_mpirun is not Open MPI's" ;;
  esac
  hosts_sweep
  hosts_id=$$
  hosts_dir=$(mktemp -d "$(hosts_tmpbase)/ferry-hosts.$$.XXXXXX") || exit 1
  # The trap of common.sh removes $tmp; this one also takes the hosts
  # down, on any exit and on the signals a timeout sends.
  trap 'hosts_down; rm -rf "${tmp:-}"' 0
  trap 'exit 143' TERM
  trap 'exit 130' INT
  trap 'exit 129' HUP

  # Probe: can this machine make a namespace and a veth pair at all?
  h_sw=$(hosts_ns sw)
  ip netns add "$h_sw" 2>"$hosts_dir/err" ||
    hosts_skip "ip netns add failed ($(head -1 "$hosts_dir/err")): no CAP_SYS_ADMIN/CAP_NET_ADMIN?"
  ip -n "$h_sw" link add br0 type bridge 2>"$hosts_dir/err" ||
    hosts_skip "no bridge link ($(head -1 "$hosts_dir/err"))"
  ip -n "$h_sw" link set br0 up && ip -n "$h_sw" link set lo up || hosts_fail "switch"

  {
    echo "127.0.0.1 localhost"
    h_i=0
    while test $h_i -lt "$hosts_n"; do
      echo "10.213.0.$((h_i + 1)) ferry-h$h_i"
      h_i=$((h_i + 1))
    done
  } >"$hosts_dir/hosts"
  : >"$hosts_dir/hostfile"
  h_i=0
  while test $h_i -lt "$hosts_n"; do
    h_ns=$(hosts_ns $h_i)
    ip netns add "$h_ns" || hosts_fail "ip netns add $h_ns"
    if ! ip -n "$h_ns" link add eth0 type veth peer name p$h_i netns "$h_sw" 2>"$hosts_dir/err"; then
      test $h_i = 0 && hosts_skip "no veth link ($(head -1 "$hosts_dir/err"))"
      hosts_fail "veth of host $h_i"
    fi
    ip -n "$h_sw" link set p$h_i master br0 &&
      ip -n "$h_sw" link set p$h_i up &&
      ip -n "$h_ns" addr add 10.213.0.$((h_i + 1))/24 dev eth0 &&
      ip -n "$h_ns" link set eth0 up &&
      ip -n "$h_ns" link set lo up &&
      ip netns exec "$h_ns" sh -c 'echo 4 >/proc/sys/net/ipv4/tcp_retries2' ||
      hosts_fail "the links of host $h_i"
    hosts_hold $h_i || hosts_fail "the namespaces of host $h_i"
    echo "ferry-h$h_i slots=$hosts_ppn" >>"$hosts_dir/hostfile"
    h_i=$((h_i + 1))
  done
  hosts_agent
}

# hosts_fail WHAT: hosts_up could not make WHAT: fail the test.
hosts_fail() {
  echo "FAIL: simulated hosts: $1"
  test -s "$hosts_dir/err" && sed 's/^/    /' "$hosts_dir/err" | head -5
  exit 1
}

# hosts_hold I: start host I's holder: in its network namespace, a new UTS
# and mount namespace with the host name, /etc/hosts and (private)
# /dev/shm; it waits while the test's shell lives.  Its pid goes to
# $hosts_dir/holder.I once the namespaces are ready.
hosts_hold() {
  o_pidf=$hosts_dir/holder.$1
  o_shm=
  if test "${HOSTS_SHM:-private}" = private; then
    o_shm="mount -t tmpfs -o size=${HOSTS_SHM_SIZE:-1g},mode=1777 ferry-h$1-shm /dev/shm &&"
  fi
  # The new mount namespace is a copy of the machine's: it would also hold
  # the slow file systems of other tests running at the same time, whose
  # loop devices would then outlive their tests: lib/drop_slowfs.sh
  # unmounts those copies (this test's own, slowfs_up before hosts_up,
  # stays).
  # The holder must not keep the test's output open (make would wait),
  # nor be a job of the test's shell (which would report its end).
  (
    ip netns exec "$(hosts_ns "$1")" unshare --uts --mount --propagation private \
      sh -c "hostname ferry-h$1 && $o_shm
        mount --bind '$hosts_dir/hosts' /etc/hosts &&
        sh '$top_srcdir/tests/lib/drop_slowfs.sh' '${slowfs_state:-/nonexistent}/image' &&
        echo \$\$ >'$o_pidf.tmp' && mv '$o_pidf.tmp' '$o_pidf' || exit 1
        while kill -0 $$ 2>/dev/null; do sleep 1; done" \
      </dev/null >/dev/null 2>"$hosts_dir/err.$1" &
  )
  o_i=0
  while test ! -s "$o_pidf"; do
    o_i=$((o_i + 1))
    if test $o_i -gt 100; then
      cat "$hosts_dir/err.$1" >"$hosts_dir/err"
      return 1
    fi
    sleep 0.1
  done
}

# hosts_agent: write the agent Open MPI starts its daemons with (as it
# would ssh: "AGENT HOST WORDS...", the words a shell command line).
hosts_agent() {
  cat >"$hosts_dir/agent" <<EOF
#!/bin/sh
# Written by tests/lib/hosts.sh: run a command on a simulated host.
case \$1 in
  ferry-h[0-9]*) i=\${1#ferry-h} ;;
  10.213.0.*) i=\$((\${1#10.213.0.} - 1)) ;;
  *) echo "hosts agent: no simulated host \$1" >&2; exit 255 ;;
esac
test -s "$hosts_dir/holder.\$i" || { echo "hosts agent: no host \$1" >&2; exit 255; }
shift
exec nsenter -t "\$(cat "$hosts_dir/holder.\$i")" -n -u -m sh -c "\$*"
EOF
  chmod +x "$hosts_dir/agent"
}

# hosts_exec I COMMAND...: run COMMAND on host I (its network, UTS and
# mount namespaces); its exit status.
hosts_exec() {
  x_i=$1
  shift
  nsenter -t "$(cat "$hosts_dir/holder.$x_i")" -n -u -m "$@"
}

# hosts_link I down|up: take host I's link down (at the switch, as a
# pulled cable: the host keeps its address) or bring it back.
hosts_link() {
  ip -n "$(hosts_ns sw)" link set "p$1" "$2"
}

# hosts_run NP PROGRAM [ARG...]: mpirun NP ranks over the hosts (filled in
# order, RANKS_PER_HOST each), from host 0, within HOSTS_MPI_TIMEOUT
# seconds (then TERM, KILL 5 s later: status 124 or 137, and a line
# saying so).  Standard input is /dev/null.  The exit status is mpirun's.
hosts_run() {
  r_np=$1
  shift
  r_limit=${HOSTS_MPI_TIMEOUT:-${FERRY_MPI_TIMEOUT:-100}}
  r_timeout=${TIMEOUT:-timeout}
  r_mpirun=${MPIRUN:-mpirun}
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
  # Waiting ranks sleep instead of spinning, as in run-mpi.sh (the
  # tests/lib/idle.c shim that make check names; not in an ASan build
  # without verify_asan_link_order=0).
  r_idle=${FERRY_MPI_IDLE-}
  case ${FERRY_SANITIZE-}/${ASAN_OPTIONS-} in
    *address*/*verify_asan_link_order=0*) ;;
    *address*/*) r_idle= ;;
  esac
  # In the background, waited for: a signal to the test's shell (its time
  # limit) runs its trap at once, which stops the job and takes the hosts
  # down, instead of waiting for the job to end.
  (
    if test -n "$r_idle" && test -r "$r_idle"; then
      LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD }$r_idle
      OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle-1}
      export LD_PRELOAD OMPI_MCA_mpi_yield_when_idle
    fi
    # shellcheck disable=SC2086
    exec $r_timeout -k 5 "$r_limit" \
      nsenter -t "$(cat "$hosts_dir/holder.0")" -n -u -m \
      ${r_mpirun%% *} -np "$r_np" --hostfile "$hosts_dir/hostfile" \
      --map-by slot --mca plm_rsh_agent "$hosts_dir/agent" \
      --mca plm_rsh_no_tree_spawn 1 \
      --mca btl self,vader,tcp \
      --mca btl_tcp_if_include 10.213.0.0/24 \
      --mca oob_tcp_if_include 10.213.0.0/24 \
      --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \
      --mca oob_tcp_keepalive_probes 3 \
      ${HOSTS_MPIRUN_FLAGS-} "$@" </dev/null
  ) &
  r_job=$!
  wait $r_job
  r_st=$?
  case $r_st in
    124|137) echo "hosts_run: timed out after ${r_limit}s: $r_np ranks of $*" >&2 ;;
  esac
  return $r_st
}

# hosts_down: stop every process on the hosts, remove their namespaces,
# the switch and the harness's files.  Idempotent; safe before hosts_up.
hosts_down() {
  test -n "$hosts_id" || return 0
  d_i=0
  while test $d_i -lt "$hosts_n"; do
    hosts_kill_ns "$(hosts_ns $d_i)"
    d_i=$((d_i + 1))
  done
  d_i=0
  while test $d_i -lt "$hosts_n"; do
    ip netns del "$(hosts_ns $d_i)" 2>/dev/null
    d_i=$((d_i + 1))
  done
  hosts_kill_ns "$(hosts_ns sw)"
  ip netns del "$(hosts_ns sw)" 2>/dev/null
  test -n "$hosts_dir" && rm -rf "$hosts_dir"
  hosts_id=
  hosts_dir=
}
