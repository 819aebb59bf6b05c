/*
 * plan_scale.c - the scale run of issue 12: how long ferry_open,
 * ferry_set_epoch and the first ferry_next take on a large dataset, and the
 * peak RSS of every rank, through the public API only.  Run under mpirun
 * (tests/bench/plan_scale.sh builds and runs it).  Rank 0 prints one line:
 *
 *   ranks P open S set_epoch S first_batch S total S rss_max MiB rss_min MiB
 *   plan_bytes B
 *
 * Times are the slowest rank's (each step ends with a barrier); rss is
 * getrusage's ru_maxrss (peak resident set) over the ranks.
 *
 * usage: plan_scale DATASET [name=value ...]   (loader options)
 *
 * FERRY_BENCH_SAVE=PATH: after the first batch, serve 999 more and save the
 * state to PATH; FERRY_BENCH_LOAD=PATH: ferry_state_load(PATH) instead of
 * ferry_set_epoch (printed as state_load): run with another number of
 * ranks than the save, the elastic resume.
 */
#include <ferry.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, ferry_loader *L, int rc) {
  fprintf(stderr, "plan_scale: %s: %s (%d)\n", what, ferry_last_error(L), rc);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0)
      fprintf(stderr, "usage: plan_scale DATASET [name=value ...]\n");
    MPI_Finalize();
    return 2;
  }
  ferry_options *o = NULL;
  if (ferry_options_create(&o))
    return fail("options", NULL, -1);
  for (int i = 2; i < argc; i++) {
    char name[128];
    const char *eq = strchr(argv[i], '=');
    if (!eq || (size_t)(eq - argv[i]) >= sizeof name)
      return fail("option NAME=VALUE expected", NULL, -1);
    memcpy(name, argv[i], (size_t)(eq - argv[i]));
    name[eq - argv[i]] = '\0';
    int rc = ferry_options_set(o, name, eq + 1);
    if (rc)
      return fail(argv[i], NULL, rc);
  }
  ferry_loader *L = NULL;
  double t[4];
  MPI_Barrier(MPI_COMM_WORLD);
  t[0] = now();
  int rc = ferry_open(MPI_COMM_WORLD, argv[1], o, &L);
  if (rc)
    return fail("ferry_open", L, rc);
  MPI_Barrier(MPI_COMM_WORLD);
  t[1] = now();
  /* FERRY_BENCH_LOAD=PATH: resume from a state (elastic when it was saved
   * on another number of ranks) instead of starting epoch 0. */
  const char *load = getenv("FERRY_BENCH_LOAD");
  const char *save = getenv("FERRY_BENCH_SAVE");
  rc = load ? ferry_state_load(L, load) : ferry_set_epoch(L, 0);
  if (rc)
    return fail(load ? "ferry_state_load" : "ferry_set_epoch", L, rc);
  MPI_Barrier(MPI_COMM_WORLD);
  t[2] = now();
  ferry_batch *b = NULL;
  rc = ferry_next(L, &b);
  if (rc)
    return fail("ferry_next", L, rc);
  ferry_release(L, b);
  MPI_Barrier(MPI_COMM_WORLD);
  t[3] = now();
  /* FERRY_BENCH_SAVE=PATH: serve 1,000 batches and save the state. */
  for (int i = 1; save && i < 1000; i++) {
    rc = ferry_next(L, &b);
    if (rc)
      return fail("ferry_next", L, rc);
    ferry_release(L, b);
  }
  if (save && (rc = ferry_state_save(L, save)))
    return fail("ferry_state_save", L, rc);
  ferry_memory_budget mb;
  ferry_memory_budget_get(L, &mb);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long rss = ru.ru_maxrss, hi = 0, lo = 0;
  MPI_Reduce(&rss, &hi, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&rss, &lo, 1, MPI_LONG, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("ranks %d open %.3f %s %.3f first_batch %.3f total %.3f "
           "rss_max %.1f MiB rss_min %.1f MiB plan_bytes %zu\n",
           size, t[1] - t[0], load ? "state_load" : "set_epoch", t[2] - t[1],
           t[3] - t[2], t[3] - t[0], (double)hi / 1024.0, (double)lo / 1024.0,
           mb.plan_bytes);
  ferry_close(L);
  ferry_options_free(o);
  MPI_Finalize();
  return 0;
}
