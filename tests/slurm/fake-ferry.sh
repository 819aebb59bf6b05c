#!/bin/sh
# fake-ferry.sh - stands in for `ferry` in the requeue test of sbatch.sh: it
# behaves as a ferry command that checkpoints on SIGUSR1, without needing the
# checkpoint itself.
#
# usage (as FERRY in slurm/*.sbatch, one process per task):
#   fake-ferry.sh LOG RUNS
# Each task appends "start RESTART RANK" to LOG.  While SLURM_RESTART_COUNT
# (0 on the first run) is below RUNS, it waits for SIGUSR1, appends
# "usr1 RESTART RANK" and exits 75 (checkpointed, requeue me); with no
# signal within 60 s it appends "nosignal" and exits 1.  Once RUNS runs have
# been interrupted, it appends "done RESTART RANK" and exits 0.

log=$1
runs=$2
restart=${SLURM_RESTART_COUNT:-0}
rank=${SLURM_PROCID:-0}
got=no
trap 'got=yes' USR1
echo "start $restart $rank" >>"$log"
if test "$restart" -ge "$runs"; then
  echo "done $restart $rank" >>"$log"
  exit 0
fi
# No command substitution in the loop: Slurm signals every process of the
# step, and a child (expr) killed by SIGUSR1 before this shell's trap ran
# once left i empty and ended the loop as "nosignal".  Only sleep is a
# child here; if the signal kills it, the loop goes on and the trap runs.
i=0
while test "$got" = no && test "$i" -lt 600; do
  sleep 0.1
  i=$((i + 1))
done
if test $got = yes; then
  echo "usr1 $restart $rank" >>"$log"
  exit 75
fi
echo "nosignal $restart $rank" >>"$log"
exit 1
