/*
 * cache_epochs.c - the node cache's benchmark helper (issue 29,
 * tests/bench/cache.sh builds and runs it): the time of ferry_open, then K
 * epochs of ferry_next + ferry_release (no compute step), each timed
 * between barriers, with what each epoch moved per node, through the
 * public API only.  Run under mpirun.  Rank 0 prints:
 *
 *   open S nodes N region B dataset B cached B
 *   epoch E S storage B kernel B local B remote B sent B
 *     recv_node_max B sent_node_max B
 *   close S
 *
 * S: the slowest rank's seconds (each step ends with a barrier).  storage,
 * local, remote, sent: ferry_stats' bytes_read, cache_local_bytes,
 * cache_remote_bytes, cache_sent_bytes of the epoch, summed over the ranks;
 * kernel: read_bytes of /proc/self/io (what the kernel read from block
 * devices for the ranks), summed; recv_node_max, sent_node_max: the
 * largest of the nodes' sums (ferry_cache_info's node) of remote and sent,
 * the bytes one node received from and sent to the other nodes' caches.
 * region: the largest node's shared-memory region; dataset, cached: what
 * ferry_cache_info says (0 without a cache).
 *
 * usage: cache_epochs DATASET EPOCHS [name=value ...]   (loader options)
 */
#include <ferry.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, ferry_loader *L, int rc) {
  fprintf(stderr, "cache_epochs: %s: %s (%d)\n", what,
          L ? ferry_last_error(L) : "", rc);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

/* read_bytes of /proc/self/io; 0 when unknown. */
static double kernel_read_bytes(void) {
  FILE *f = fopen("/proc/self/io", "r");
  long long v = 0;
  char line[128];
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "read_bytes: %lld", &v) == 1)
      break;
  fclose(f);
  return (double)v;
}

/* Seconds since t0 on the slowest rank (a barrier first). */
static double slowest(double t0) {
  MPI_Barrier(MPI_COMM_WORLD);
  double s = now() - t0, mx = 0;
  MPI_Allreduce(&s, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mx;
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) {
    if (rank == 0)
      fprintf(stderr, "usage: cache_epochs DATASET EPOCHS [name=value ...]\n");
    MPI_Finalize();
    return 2;
  }
  long epochs = atol(argv[2]);
  ferry_options *o = NULL;
  if (ferry_options_create(&o))
    return fail("options", NULL, -1);
  for (int i = 3; i < argc; i++) {
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
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  int rc = ferry_open(MPI_COMM_WORLD, argv[1], o, &L);
  if (rc)
    return fail("ferry_open", L, rc);
  double t_open = slowest(t0);
  ferry_cache_info ci;
  memset(&ci, 0, sizeof ci);
  ferry_cache_info_get(L, &ci);
  int nodes = ci.mode ? ci.nodes : 1, node = ci.mode ? ci.node : 0;
  double region = (double)ci.region_bytes;
  MPI_Allreduce(MPI_IN_PLACE, &region, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("open %.3f nodes %d region %.0f dataset %lld cached %lld\n", t_open,
           nodes, region, (long long)ci.dataset_bytes,
           (long long)ci.cached_bytes);
  double *pn = calloc((size_t)nodes * 2, sizeof *pn);
  double *pnsum = calloc((size_t)nodes * 2, sizeof *pnsum);
  if (!pn || !pnsum)
    return fail("calloc", L, -1);
  for (long e = 0; e < epochs; e++) {
    ferry_stats a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ferry_stats_get(L, &a);
    double k0 = kernel_read_bytes();
    MPI_Barrier(MPI_COMM_WORLD);
    double te = now();
    if ((rc = ferry_set_epoch(L, e)))
      return fail("ferry_set_epoch", L, rc);
    for (;;) {
      ferry_batch *bt = NULL;
      rc = ferry_next(L, &bt);
      if (rc == FERRY_END)
        break;
      if (rc)
        return fail("ferry_next", L, rc);
      ferry_release(L, bt);
    }
    double secs = slowest(te);
    ferry_stats_get(L, &b);
    double v[5] = {(double)(b.bytes_read - a.bytes_read),
                   kernel_read_bytes() - k0,
                   (double)(b.cache_local_bytes - a.cache_local_bytes),
                   (double)(b.cache_remote_bytes - a.cache_remote_bytes),
                   (double)(b.cache_sent_bytes - a.cache_sent_bytes)};
    double sum[5];
    MPI_Reduce(v, sum, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    memset(pn, 0, (size_t)nodes * 2 * sizeof *pn);
    pn[2 * node] = v[3];
    pn[2 * node + 1] = v[4];
    MPI_Reduce(pn, pnsum, nodes * 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double rmax = 0, smax = 0;
      for (int k = 0; k < nodes; k++) {
        rmax = pnsum[2 * k] > rmax ? pnsum[2 * k] : rmax;
        smax = pnsum[2 * k + 1] > smax ? pnsum[2 * k + 1] : smax;
      }
      printf("epoch %ld %.4f storage %.0f kernel %.0f local %.0f remote %.0f "
             "sent %.0f recv_node_max %.0f sent_node_max %.0f\n",
             e, secs, sum[0], sum[1], sum[2], sum[3], sum[4], rmax, smax);
      fflush(stdout);
    }
  }
  free(pn);
  free(pnsum);
  MPI_Barrier(MPI_COMM_WORLD);
  double tc = now();
  rc = ferry_close(L);
  if (rc)
    return fail("ferry_close", NULL, rc);
  double t_close = slowest(tc);
  if (rank == 0)
    printf("close %.3f\n", t_close);
  ferry_options_free(o);
  MPI_Finalize();
  return 0;
}
