/* idle.c - an LD_PRELOAD shim for the test suite's MPI jobs: a rank that
 * has waited more than 5 ms sleeps instead of spinning.
 *
 * Why: the tests start 2-3 ranks per job, two jobs at once, on 2 cores.
 * Open MPI polls while a rank waits in a collective; oversubscribed (or
 * with mpi_yield_when_idle=1, which tests/run-mpi.sh sets) it calls
 * sched_yield() between polls.  sched_yield() returns at once when no
 * other thread wants the core, so every waiting rank burned a whole core
 * in system time (a part of the quick tier's 284 s, 2026-11-27): a
 * job of 3 ranks whose rank 0 works for 2 s cost 4 s CPU (0.7 s with
 * this shim).  The first 5 ms of a wait still yield (a reply that comes
 * soon is seen at once: the many short waits of a loader test cost no
 * latency); after that each call sleeps 100 us, so a waiting rank costs a
 * few percent of a core and the rank that works gets the core.
 *
 * It changes only how long a waiting thread waits, never what it waits
 * for: the tests check the same results.  Built without the tree's
 * CFLAGS (no sanitizer runtime: mpirun, which is not instrumented, loads
 * it too); tests/run-mpi.sh preloads it when FERRY_MPI_IDLE names it.
 * Nothing in the library or the tool is built with it. */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread double wait_start, last_cpu;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int sched_yield(void) {
  double t = clock_s(CLOCK_MONOTONIC);
  /* Calls between which the thread worked more than a millisecond (its
   * own CPU time) belong to different waits: it did something else in
   * between.  CPU time, not wall time: a waiting thread descheduled for a
   * while (a busy machine, the very case the shim is for) is still in the
   * same wait (with wall time it never reached its sleeps there, and
   * check_selftest.sh's timing failed under a loaded ./bootstrap check). */
  if (clock_s(CLOCK_THREAD_CPUTIME_ID) - last_cpu > 1e-3)
    wait_start = t;
  if (t - wait_start < 5e-3) {
    int rc = (int)syscall(SYS_sched_yield);
    last_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
    return rc;
  }
  struct timespec pause = {0, 100000};
  nanosleep(&pause, NULL);
  /* The sleep is part of the same wait, not a gap between two. */
  last_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
  return 0;
}
