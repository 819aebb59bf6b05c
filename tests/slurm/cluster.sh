#!/bin/sh
# cluster.sh - a one-node Slurm cluster on this machine, for the tests of
# tests/slurm/ and the job scripts of slurm/.  ./bootstrap check starts it
# before "make check" and stops it on exit.
#
# usage: cluster.sh start DIR     write DIR/slurm.conf and a munge key, start
#                                 munged, slurmctld and slurmd (as root), wait
#                                 until the node is idle; then DIR/env holds
#                                 the variables the clients need
#        cluster.sh stop DIR      cancel the jobs, stop the three daemons
#        cluster.sh status DIR    exit 0 when the node answers, print sinfo
#
# Everything (configuration, key, sockets, pid files, logs, state) lives under
# DIR, so the machine's own /etc/slurm and /etc/munge are neither read nor
# changed, and two clusters with different DIR and ports can coexist.  DIR
# should be short (mktemp -d): munge's socket path must fit in 108 bytes.
#
# Settings from the environment:
#   FERRY_SLURM_CPUS   CPUs the node declares (default 8).  The machine may
#                      have fewer: SlurmdParameters=config_overrides makes
#                      slurmd trust the configuration instead of the hardware,
#                      so that "srun -n 4" fits on a 2-core CI machine.
#   FERRY_SLURM_PORT   slurmctld's port; slurmd takes the next one
#                      (default 16817, away from Slurm's default 6817 so that
#                      a site's own daemons are not disturbed).
#   FERRY_SLURM_WAIT   seconds to wait for the node to become idle (default 60)
#
# The configuration is what works in a container without systemd or a
# writable cgroup tree: processes are tracked by their parent chain
# (proctrack/linuxproc), tasks are not bound (task/none: the declared CPUs
# need not exist), no accounting.  MpiDefault is pmix when Slurm has the
# plugin, so a plain "srun ./mpi_program" starts Open MPI ranks directly.
#
# On failure "start" prints the daemons' logs and exits non-zero, leaving
# nothing running.

usage() {
  echo "usage: $0 start|stop|status DIR" >&2
  exit 2
}
test $# -eq 2 || usage
cmd=$1
case $2 in
  /*) dir=$2 ;;
  *) dir=`pwd`/$2 ;;
esac

cpus=${FERRY_SLURM_CPUS:-8}
port=${FERRY_SLURM_PORT:-16817}
wait_s=${FERRY_SLURM_WAIT:-60}
conf=$dir/slurm.conf
sock=$dir/munge/munge.socket
# Slurm's plugins: Debian puts them in a multiarch directory; slurmd finds
# them by itself, this is only to see whether mpi/pmix is there.
plugindir=
for d in /usr/lib/*/slurm-wlm /usr/lib64/slurm /usr/lib/slurm /usr/local/lib/slurm; do
  if test -f "$d/mpi_none.so"; then
    plugindir=$d
    break
  fi
done

say() { echo "cluster.sh: $*"; }

# Print the daemons' logs (last lines) to explain a failure.
show_logs() {
  for f in "$dir"/log/*.log; do
    test -f "$f" || continue
    echo "---- $f (last 30 lines)"
    tail -n 30 "$f"
  done
}

# kill_pidfile FILE: stop the daemon whose pid FILE holds; SIGKILL after 10 s.
kill_pidfile() {
  test -f "$1" || return 0
  pid=`cat "$1" 2>/dev/null`
  case $pid in ''|*[!0-9]*) rm -f "$1"; return 0 ;; esac
  if kill "$pid" 2>/dev/null; then
    i=0
    while kill -0 "$pid" 2>/dev/null && test $i -lt 20; do
      sleep 0.5
      i=`expr $i + 1`
    done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$1"
}

write_conf() {
  host=`hostname -s`
  mpi=none
  if test -n "$plugindir" && test -f "$plugindir/mpi_pmix.so"; then
    mpi=pmix
  fi
  mkdir -p "$dir/munge" "$dir/log" "$dir/state" "$dir/spool" "$dir/tmp" || return 1
  # munged wants its socket's directory searchable by all (clients run as
  # any user); the key itself is readable by root only.
  chmod 755 "$dir" "$dir/munge" || return 1
  cat >"$conf" <<EOF
# Written by tests/slurm/cluster.sh: a one-node test cluster under $dir.
ClusterName=ferrytest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=`expr $port + 1`
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also delays a requeued job: Slurm holds it for cred_expire+1
# seconds (120 by default); the requeue test waits for that.
AuthInfo=socket=$sock,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in a container: track processes by parentage, do not bind.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# The node declares more CPUs than the machine may have.
SlurmdParameters=config_overrides
MpiDefault=$mpi
MailProg=/bin/true
ReturnToService=2
# Short timeouts: a test waits for these.
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
# Jobs may be requeued (the job scripts requeue after a checkpoint).
JobRequeue=1
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=60 State=UP OverSubscribe=NO
EOF
  # A fresh key for each cluster: only this machine's daemons share it.
  if test ! -s "$dir/munge/munge.key"; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null ||
      return 1
  fi
  chmod 600 "$dir/munge/munge.key"
  cat >"$dir/env" <<EOF
SLURM_CONF='$conf'; export SLURM_CONF
FERRY_TEST_SLURM_DIR='$dir'; export FERRY_TEST_SLURM_DIR
EOF
}

node_state() {
  SLURM_CONF=$conf sinfo -h -N -o %t 2>/dev/null | head -n 1
}

start() {
  for t in munged slurmctld slurmd sinfo srun; do
    if ! command -v $t >/dev/null 2>&1 && ! test -x /usr/sbin/$t; then
      say "$t not found (Debian: apt-get install slurm-wlm munge)"
      return 1
    fi
  done
  if test "`id -u`" != 0; then
    say "the daemons run as root here; run as root"
    return 1
  fi
  PATH=$PATH:/usr/sbin:/sbin
  # Idempotent: a cluster already up in DIR is reused.
  if test -f "$conf" && test "`node_state`" = idle; then
    say "already running in $dir"
    return 0
  fi
  stop_all
  write_conf || { say "cannot write under $dir"; return 1; }
  export SLURM_CONF="$conf"

  munged --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" --force || {
    say "munged did not start"; show_logs; return 1; }
  if ! munge -S "$sock" -n | unmunge -S "$sock" >/dev/null 2>&1; then
    say "munge cannot encode and decode a credential through $sock"
    show_logs
    stop_all
    return 1
  fi
  # -c: start from an empty state (a new cluster, no old jobs).
  slurmctld -c -f "$conf" || {
    say "slurmctld did not start"; show_logs; stop_all; return 1; }
  slurmd -f "$conf" || {
    say "slurmd did not start"; show_logs; stop_all; return 1; }

  i=0
  state=
  while test $i -lt "$wait_s"; do
    state=`node_state`
    case $state in
      idle) break ;;
      down*|drain*|fail*)
        # ReturnToService=2 brings it back once slurmd registers; if it
        # registered with a problem, say so now.
        SLURM_CONF=$conf scontrol update NodeName=`hostname -s` State=RESUME \
          >/dev/null 2>&1 ;;
    esac
    sleep 1
    i=`expr $i + 1`
  done
  if test "$state" != idle; then
    say "the node is not idle after ${wait_s}s (state: ${state:-no answer})"
    SLURM_CONF=$conf scontrol show node 2>&1 | sed 's/^/    /'
    show_logs
    stop_all
    return 1
  fi
  say "one node, $cpus CPUs, idle (MpiDefault=`sed -n 's/^MpiDefault=//p' "$conf"`); SLURM_CONF=$conf"
}

stop_all() {
  if test -f "$conf" && test -f "$dir/slurmctld.pid"; then
    # Jobs first, so that no slurmstepd outlives its slurmd.
    SLURM_CONF=$conf timeout 10 scancel --full --quiet --user=root >/dev/null 2>&1
    SLURM_CONF=$conf timeout 10 scancel --quiet --user=root >/dev/null 2>&1
  fi
  kill_pidfile "$dir/slurmd.pid"
  kill_pidfile "$dir/slurmctld.pid"
  if test -S "$sock"; then
    munged --stop --socket="$sock" >/dev/null 2>&1
  fi
  kill_pidfile "$dir/munge/munged.pid"
}

case $cmd in
  start) start ;;
  stop)
    stop_all
    say "stopped the cluster in $dir" ;;
  status)
    test -f "$conf" || { say "no cluster in $dir"; exit 1; }
    SLURM_CONF=$conf timeout 10 sinfo ;;
  *) usage ;;
esac
