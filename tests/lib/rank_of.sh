#!/bin/sh
# rank_of.sh JOB - the pid of the newest ferry rank (a process named ferry
# or lt-ferry) among the descendants of process JOB (run-mpi.sh -> timeout
# -> mpirun -> the ranks), so that a test signals its own job's rank and
# never another test's.  Prints nothing when there is none.
walk() {
  for c in `pgrep -P "$1" 2>/dev/null`; do
    case `cat /proc/$c/comm 2>/dev/null` in
      ferry|lt-ferry) echo "$c" ;;
    esac
    walk "$c"
  done
}
walk "$1" | sort -n | tail -1
