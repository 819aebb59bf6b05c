#!/bin/sh
# ferry-run.sh - the ferry tool as "make check" runs it (its FERRY; the
# program is FERRY_TEST_BIN).  Started alone, not by mpirun or srun, ferry runs
# as an isolated Open MPI singleton -- no orted forked beside it: 0.07 s
# instead of 0.36 s a run (2026-11-28), and the tests run it thousands of
# times -- in a session directory of its own under the test's (which
# tests/lib/timed.sh makes and removes): isolated singletons share one
# (jf.0), which the first to end removes under the others running at once.
# Under a launcher, or with the caller's own singleton setting, it runs as
# it is.  exec: signals and the exit status are ferry's.
if test -z "${OMPI_COMM_WORLD_SIZE:-}${PMIX_RANK:-}${PMI_RANK:-}${SLURM_PROCID:-}" &&
  test -z "${OMPI_MCA_ess_singleton_isolated+set}" &&
  test -n "${OMPI_MCA_orte_tmpdir_base:-}" &&
  d=$(mktemp -d "$OMPI_MCA_orte_tmpdir_base/s.XXXXXX" 2>/dev/null); then
  OMPI_MCA_orte_tmpdir_base=$d
  OMPI_MCA_ess_singleton_isolated=1
  export OMPI_MCA_orte_tmpdir_base OMPI_MCA_ess_singleton_isolated
fi
exec "${FERRY_TEST_BIN:?FERRY_TEST_BIN names the ferry program}" "$@"
