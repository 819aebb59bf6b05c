#!/bin/sh
# timed.sh - run one test (the rest of the command line) and append its wall
# and CPU time to its log, so that "make check" can name the slowest tests
# (tests/summary.sh reads the line back from each TEST.log).
#
# usage: timed.sh COMMAND [ARG...]      (the harness's LOG_COMPILER)
#
# The line is "ferry-test-time: WALL wall, CPU cpu" in seconds; CPU is
# user + system time of every process the test waited for (the shell's
# `times`), MPI ranks included when their launcher waits for them.  The
# exit status is the test's.

# Each test its own Open MPI session directories: Open MPI removes its
# top directory (/tmp/ompi.HOST.UID) when its last job ends and makes it
# again at the next start, and two tests starting at once raced on it
# ("mkdir ... File exists", orte_session_dir failed: three times in the
# fresh-clone checks of 2026-11-28, mpirun jobs and a singleton "ferry
# --help" alike).  Removed after the test; a caller's setting is kept.
sess=
if test -z "${OMPI_MCA_orte_tmpdir_base+set}" &&
  sess=$(mktemp -d "${TMPDIR:-/tmp}/ferry-mpi.XXXXXX" 2>/dev/null); then
  OMPI_MCA_orte_tmpdir_base=$sess
  export OMPI_MCA_orte_tmpdir_base
fi
start=$(date +%s.%N 2>/dev/null || date +%s)
"$@"
status=$?
end=$(date +%s.%N 2>/dev/null || date +%s)
if test -n "$sess"; then
  rm -rf "$sess"
fi
# The second line of `times` is the children's "user system" time, e.g.
# "0m1.230000s 0m0.450000s".  It runs in this shell, written to a file: a
# subshell (a pipe, $(...)) has no children of its own to count.
tf=$(mktemp "${TMPDIR:-/tmp}/ferry-times.XXXXXX") || exit $status
times >"$tf"
cpu=$(sed -n 2p "$tf" | awk '{
  s = 0
  for (i = 1; i <= 2; i++) {
    split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2]
  }
  printf "%.1f", s
}')
rm -f "$tf"
awk -v a="$start" -v b="$end" -v c="$cpu" \
  'BEGIN { printf "ferry-test-time: %.1f wall, %s cpu\n", b - a, c }'
exit $status
