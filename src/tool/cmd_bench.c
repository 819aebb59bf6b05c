/*
 * cmd_bench.c - `ferry bench DATASET --epochs K`: measure the loader the way
 * a training job uses it.  For each epoch e = 0..K-1: ferry_set_epoch, then
 * per batch ferry_next, an optional emulated compute step (--compute-ms: a
 * sleep that leaves the CPU to the pipeline, as an accelerator would, or a
 * busy loop that competes with it), ferry_release.  Reports per rank and in
 * aggregate (MPI reductions) throughput, the time ferry_next waited for data
 * (ferry_stats), and the accelerator utilisation AU = compute time / total
 * time as MLPerf Storage defines it, leaving out the first step of each
 * epoch (it pays for filling the pipeline).  It prints the memory budget the
 * library announced and the peak RSS measured (getrusage), so the budget can
 * be checked against reality.
 */
#include "tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { OPT_EPOCHS = 1, OPT_COMPUTE_MS, OPT_COMPUTE_MODE, OPT_JSON, OPT_STATE };

static int run_bench(tool_ctx *ctx);

static const tool_opt bench_opts[] = {
    {"epochs", 1, OPT_EPOCHS, "K", "Epochs to run (0..K-1).  Default: 1."},
    {"compute-ms", 1, OPT_COMPUTE_MS, "X",
     "Emulated compute per batch, in milliseconds (a number >= 0).  "
     "Default: 0."},
    {"compute-mode", 1, OPT_COMPUTE_MODE, "sleep|spin",
     "How compute is emulated: sleep (the CPU stays free for the pipeline, "
     "as with a GPU) or spin (a busy loop on the calling thread).  "
     "Default: sleep."},
    {"json", 0, OPT_JSON, NULL,
     "Print one JSON object (rank 0) instead of "
     "text."},
    {"state", 1, OPT_STATE, "FILE",
     "Checkpoint and resume: start from FILE when it exists; when the "
     "checkpoint_signal arrives (sbatch --signal=B:USR1@120), save the "
     "position to FILE and exit 75 (requeue me); at the end, save the end "
     "of the last epoch."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_bench = {
    .name = "bench",
    .args = "DATASET [--epochs K] [--compute-ms X] [--compute-mode sleep|spin] "
            "[--json] [--state FILE] [loader options]",
    .summary = "measure throughput, data wait and accelerator utilisation",
    .description =
        "Run K epochs: per batch ferry_next, the emulated compute, "
        "ferry_release.  Reports per rank and in aggregate samples/s and "
        "bytes/s (handed out, over the slowest rank's time), the time spent "
        "waiting for data and its fraction of the run, the accelerator "
        "utilisation AU (compute time over wall time, without the first "
        "step of each epoch; 0 without --compute-ms), batches per rank, "
        "the memory budget and the peak RSS (maximum over ranks).  With "
        "--state FILE it resumes from FILE and, on the checkpoint signal, "
        "saves to FILE and exits 75.",
    .loader_options = 1,
    .opts = bench_opts,
    .run = run_bench,
};

/* Per-rank measurements gathered on rank 0. */
enum {
  M_ELAPSED,
  M_BATCHES,
  M_SAMPLES,
  M_BYTES,
  M_BYTES_READ,
  M_WAIT,
  M_READ_S,
  M_COMPUTE,
  M_AU_COMPUTE,
  M_AU_TIME,
  M_RSS,
  M_LOADER_PEAK,
  M_COUNT
};

static void emulate_compute(double ms, int spin) {
  if (ms <= 0)
    return;
  if (spin) {
    double end = MPI_Wtime() + ms / 1e3;
    while (MPI_Wtime() < end)
      ;
    return;
  }
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int64_t ns = (int64_t)(ms * 1e6) + t.tv_nsec;
  t.tv_sec += (time_t)(ns / 1000000000);
  t.tv_nsec = (long)(ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
    ; /* EINTR: sleep the rest */
}

static double peak_rss_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (double)ru.ru_maxrss * 1024.0; /* Linux reports KiB */
}

static int run_bench(tool_ctx *ctx) {
  int64_t epochs = 1;
  double compute_ms = 0;
  int spin = 0, json = 0;
  const char *state = NULL;
  for (int i = 0; i < ctx->nargs; i++) {
    const char *v = ctx->args[i].value;
    switch (ctx->args[i].id) {
    case OPT_EPOCHS:
      if (tool_parse_i64(v, 1, INT64_C(1) << 40, &epochs) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --epochs: expected "
                                "an integer >= 1",
                                v);
      break;
    case OPT_COMPUTE_MS:
      if (tool_parse_double(v, &compute_ms) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --compute-ms: "
                                "expected a number >= 0",
                                v);
      break;
    case OPT_COMPUTE_MODE:
      if (strcmp(v, "sleep") != 0 && strcmp(v, "spin") != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --compute-mode: "
                                "expected sleep or spin",
                                v);
      spin = strcmp(v, "spin") == 0;
      break;
    case OPT_JSON:
      json = 1;
      break;
    case OPT_STATE:
      state = v;
      break;
    }
  }
  ferry_loader *L = NULL;
  int st = tool_open(ctx, &L), rc;
  if (st != 0)
    return st;
  double *all = NULL;
  ferry_stats s0, s1;
  memset(&s0, 0, sizeof s0);
  memset(&s1, 0, sizeof s1);
  ferry_stats_get(L, &s0);
  double m[M_COUNT] = {0};
  int64_t per_epoch = 0;

  int64_t e0 = 0;
  int resumed = 0;
  if (state && (st = tool_state_begin(ctx, L, state, json, &e0, &resumed)))
    goto cleanup;
  MPI_Barrier(MPI_COMM_WORLD); /* start together: elapsed is comparable */
  double t_start = MPI_Wtime();
  for (int64_t e = e0; e < epochs; e++) {
    if (!(state && e == e0) && (rc = ferry_set_epoch(L, e)) != 0) {
      st = tool_lib_error(ctx, L, rc);
      goto cleanup;
    }
    per_epoch = ferry_num_batches(L);
    double first_step_end = 0;
    for (int64_t step = 0;; step++) {
      ferry_batch *b = NULL;
      rc = ferry_next(L, &b);
      if (rc == FERRY_END)
        break;
      if (rc != 0) { /* collective: every rank fails at the same batch */
        st = tool_lib_error(ctx, L, rc);
        goto cleanup;
      }
      double c = 0;
      if (compute_ms > 0) {
        double c0 = MPI_Wtime();
        emulate_compute(compute_ms, spin);
        c = MPI_Wtime() - c0;
      }
      if ((rc = ferry_release(L, b)) != 0)
        tool_local_fatal(ctx, L, "ferry_release", rc);
      if (state && ferry_checkpoint_requested(L)) {
        /* the same answer on every rank after the same batch */
        st = tool_state_save(ctx, L, state, step + 1, json);
        if (st == 0)
          st = TOOL_EXIT_REQUEUE;
        goto cleanup;
      }
      m[M_BATCHES] += 1;
      m[M_COMPUTE] += c;
      if (step == 0)
        first_step_end = MPI_Wtime();
      else
        m[M_AU_COMPUTE] += c;
    }
    if (first_step_end > 0)
      m[M_AU_TIME] += MPI_Wtime() - first_step_end;
    /* the end of the last epoch: a rerun with the same FILE has nothing
     * left to do instead of repeating an epoch */
    if (state && e + 1 == epochs &&
        (st = tool_state_save(ctx, L, state, per_epoch, 1)) != 0)
      goto cleanup;
  }
  m[M_ELAPSED] = MPI_Wtime() - t_start;
  ferry_stats_get(L, &s1);
  m[M_SAMPLES] = (double)(s1.samples - s0.samples);
  m[M_BYTES] = (double)(s1.bytes - s0.bytes);
  m[M_BYTES_READ] = (double)(s1.bytes_read - s0.bytes_read);
  m[M_WAIT] = s1.wait_seconds - s0.wait_seconds;
  m[M_READ_S] = s1.read_seconds - s0.read_seconds;
  m[M_RSS] = peak_rss_bytes();
  m[M_LOADER_PEAK] = (double)s1.peak_resident_bytes;

  ferry_memory_budget mb;
  memset(&mb, 0, sizeof mb);
  ferry_memory_budget_get(L, &mb);
  unsigned long long budget[5] = {mb.batch_bytes, mb.ring_bytes, mb.read_bytes,
                                  mb.plan_bytes, mb.total_bytes};
  MPI_Allreduce(MPI_IN_PLACE, budget, 5, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                MPI_COMM_WORLD);
  if (ctx->rank == 0 &&
      (all = malloc((size_t)ctx->size * M_COUNT * sizeof *all)) == NULL)
    tool_local_fatal(ctx, L, "out of memory", FERRY_ENOMEM);
  MPI_Gather(m, M_COUNT, MPI_DOUBLE, all, M_COUNT, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (ctx->rank != 0)
    goto cleanup;

  /* Aggregates: throughput over the slowest rank's time; fractions as
   * ratios of sums, i.e. weighted by each rank's time. */
  double t = 0, sum_elapsed = 0, samples = 0, bytes = 0, bytes_read = 0,
         wait = 0, au_c = 0, au_t = 0, rss = 0, loader_peak = 0, au_min = 1;
  double bmin = 0, bmax = 0;
  for (int r = 0; r < ctx->size; r++) {
    const double *x = all + (size_t)r * M_COUNT;
    t = x[M_ELAPSED] > t ? x[M_ELAPSED] : t;
    sum_elapsed += x[M_ELAPSED];
    samples += x[M_SAMPLES];
    bytes += x[M_BYTES];
    bytes_read += x[M_BYTES_READ];
    wait += x[M_WAIT];
    au_c += x[M_AU_COMPUTE];
    au_t += x[M_AU_TIME];
    double au_r = x[M_AU_TIME] > 0 ? x[M_AU_COMPUTE] / x[M_AU_TIME] : 0;
    au_min = r == 0 || au_r < au_min ? au_r : au_min;
    rss = x[M_RSS] > rss ? x[M_RSS] : rss;
    loader_peak =
        x[M_LOADER_PEAK] > loader_peak ? x[M_LOADER_PEAK] : loader_peak;
    bmin = r == 0 || x[M_BATCHES] < bmin ? x[M_BATCHES] : bmin;
    bmax = x[M_BATCHES] > bmax ? x[M_BATCHES] : bmax;
  }
  double sps = t > 0 ? samples / t : 0, bps = t > 0 ? bytes / t : 0;
  double wait_frac = sum_elapsed > 0 ? wait / sum_elapsed : 0;
  double au = au_t > 0 ? au_c / au_t : 0;
  char bs[64];
  const char *batch_size = tool_option(ctx, "batch_size", bs, sizeof bs);

  if (json) {
    printf("{\"dataset\": ");
    tool_json_string(stdout, ctx->target);
    printf(", \"ranks\": %d, \"epochs\": %" PRId64 ", \"batch_size\": %s"
           ", \"batches_per_rank\": %.0f, \"batches_per_epoch\": %" PRId64
           ", \"samples\": %.0f, \"bytes\": %.0f, \"bytes_read\": %.0f"
           ", \"elapsed_s\": ",
           ctx->size, epochs, batch_size, bmax, per_epoch, samples, bytes,
           bytes_read);
    tool_json_number(stdout, t);
    printf(", \"samples_per_s\": ");
    tool_json_number(stdout, sps);
    printf(", \"bytes_per_s\": ");
    tool_json_number(stdout, bps);
    printf(", \"wait_s\": ");
    tool_json_number(stdout, wait);
    printf(", \"wait_fraction\": ");
    tool_json_number(stdout, wait_frac);
    printf(", \"compute_ms\": ");
    tool_json_number(stdout, compute_ms);
    printf(", \"compute_mode\": \"%s\", \"au\": ", spin ? "spin" : "sleep");
    tool_json_number(stdout, au);
    printf(", \"au_min\": ");
    tool_json_number(stdout, au_min);
    printf(", \"peak_rss_bytes\": %.0f, \"peak_loader_bytes\": %.0f"
           ", \"budget_bytes\": %llu, \"budget\": {\"batch_bytes\": %llu"
           ", \"ring_bytes\": %llu, \"read_bytes\": %llu, \"plan_bytes\": "
           "%llu, \"total_bytes\": %llu}, \"per_rank\": [",
           rss, loader_peak, budget[4], budget[0], budget[1], budget[2],
           budget[3], budget[4]);
    for (int r = 0; r < ctx->size; r++) {
      const double *x = all + (size_t)r * M_COUNT;
      double el = x[M_ELAPSED];
      printf("%s{\"rank\": %d, \"batches\": %.0f, \"samples\": %.0f"
             ", \"elapsed_s\": ",
             r ? ", " : "", r, x[M_BATCHES], x[M_SAMPLES]);
      tool_json_number(stdout, el);
      printf(", \"samples_per_s\": ");
      tool_json_number(stdout, el > 0 ? x[M_SAMPLES] / el : 0);
      printf(", \"bytes_per_s\": ");
      tool_json_number(stdout, el > 0 ? x[M_BYTES] / el : 0);
      printf(", \"wait_s\": ");
      tool_json_number(stdout, x[M_WAIT]);
      printf(", \"wait_fraction\": ");
      tool_json_number(stdout, el > 0 ? x[M_WAIT] / el : 0);
      printf(", \"au\": ");
      tool_json_number(stdout,
                       x[M_AU_TIME] > 0 ? x[M_AU_COMPUTE] / x[M_AU_TIME] : 0);
      printf(", \"peak_rss_bytes\": %.0f}", x[M_RSS]);
    }
    printf("]}\n");
    fflush(stdout);
    goto cleanup;
  }

  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
  printf("ferry bench: %s, %d rank%s, %" PRId64
         " epoch%s, batch_size %s, %" PRId64
         " batches per rank per epoch, compute %g ms (%s)\n",
         ctx->target, ctx->size, ctx->size == 1 ? "" : "s", epochs,
         epochs == 1 ? "" : "s", batch_size, per_epoch, compute_ms,
         spin ? "spin" : "sleep");
  printf("%5s %9s %12s %12s %9s %9s %7s %12s\n", "rank", "batches", "samples/s",
         "MiB/s", "wait_s", "wait_frac", "AU", "peak_rss");
  for (int r = 0; r < ctx->size; r++) {
    const double *x = all + (size_t)r * M_COUNT;
    double el = x[M_ELAPSED];
    printf("%5d %9.0f %12.1f %12.1f %9.3f %9.3f %7.3f %12s\n", r, x[M_BATCHES],
           el > 0 ? x[M_SAMPLES] / el : 0,
           el > 0 ? x[M_BYTES] / el / 1048576.0 : 0, x[M_WAIT],
           el > 0 ? x[M_WAIT] / el : 0,
           x[M_AU_TIME] > 0 ? x[M_AU_COMPUTE] / x[M_AU_TIME] : 0,
           tool_fmt_bytes(x[M_RSS], b1, sizeof b1));
  }
  printf("total: %.1f samples/s, %s/s, wait_fraction %.3f, AU %.3f (min %.3f)"
         ", %.0f batches per rank, elapsed %.3f s\n",
         sps, tool_fmt_bytes(bps, b1, sizeof b1), wait_frac, au, au_min, bmax,
         t);
  printf("read: %s from storage (%.2fx the bytes handed out)\n",
         tool_fmt_bytes(bytes_read, b1, sizeof b1),
         bytes > 0 ? bytes_read / bytes : 0);
  printf("memory: budget %s per rank (batch %s, ring %s, reads %s, plan %s); "
         "loader buffers peak %s; peak RSS %s (max over ranks)\n",
         tool_fmt_bytes((double)budget[4], b1, sizeof b1),
         tool_fmt_bytes((double)budget[0], b2, sizeof b2),
         tool_fmt_bytes((double)budget[1], b3, sizeof b3),
         tool_fmt_bytes((double)budget[2], b4, sizeof b4),
         tool_fmt_bytes((double)budget[3], b5, sizeof b5),
         tool_fmt_bytes(loader_peak, b6, sizeof b6),
         tool_fmt_bytes(rss, b7, sizeof b7));
  if (bmin != bmax)
    printf("warning: ranks got different batch counts (%.0f to %.0f)\n", bmin,
           bmax);
  fflush(stdout);

cleanup:
  free(all);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
