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
 *
 * Device batches (device=cuda, batch->nshards > 0) are consumed as a
 * training loop on the GPU consumes them: one non-blocking stream per shard
 * device; per batch an event, ferry_shard_wait on the stream, an event (the
 * two events time the wait the consumer's stream sees), the step as a GPU
 * kernel of --compute-ms on that stream between two more events (its time,
 * the maximum over shards, is the compute time of AU), then ferry_release.
 * The host runs one step ahead of the GPU, as a training loop does: after
 * queueing step n it waits for step n-1 to finish, then asks for batch n+1
 * (the first step of an epoch is waited for at once: it ends the pipeline
 * fill that AU leaves out).  Before the run, every rank times a plain pinned
 * cudaMemcpyAsync of its shard's batch size on each of its devices: the
 * baseline that the H2D rate of the loader (ferry_stats: h2d_bytes over the
 * GPU time of its copies) is compared with.
 */
#ifdef HAVE_CONFIG_H
#include <config.h> /* HAVE_CUDA, HAVE_NVCC */
#endif
#include "tool.h"

#include "gpu_step.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif

enum {
  OPT_EPOCHS = 1,
  OPT_COMPUTE_MS,
  OPT_COMPUTE_MODE,
  OPT_JSON,
  OPT_STATE,
  OPT_PER_EPOCH
};

static int run_bench(tool_ctx *ctx);

static const tool_opt bench_opts[] = {
    {"epochs", 1, OPT_EPOCHS, "K", "Epochs to run (0..K-1).  Default: 1."},
    {"compute-ms", 1, OPT_COMPUTE_MS, "X",
     "Emulated compute per batch, in milliseconds (a number >= 0); with "
     "device batches (device=cuda) a GPU kernel of that duration on the "
     "consumer's stream, after the batch's copy.  Default: 0."},
    {"compute-mode", 1, OPT_COMPUTE_MODE, "sleep|spin",
     "How compute is emulated with host batches: sleep (the CPU stays free "
     "for the pipeline, as with a GPU) or spin (a busy loop on the calling "
     "thread).  Default: sleep."},
    {"json", 0, OPT_JSON, NULL,
     "Print one JSON object (rank 0) instead of text.  A dataset with a "
     "ragged variable adds rows_per_s (of the first one: tokens per "
     "second) and padding_fraction (of each batch padded to its longest "
     "sample, or to L with pad=L)."},
    {"per-epoch", 0, OPT_PER_EPOCH, NULL,
     "Print a line per epoch (text output): the bytes read from storage by "
     "ferry's count and by the kernel's (read_bytes of the ranks' "
     "/proc/self/io, summed: what came from a block device, the page "
     "cache's hits not counted), from the node cache and from other nodes "
     "(cache=), sent to other nodes, and the slowest rank's time.  On by "
     "itself with cache=node or cluster."},
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
            "[--json] [--per-epoch] [--state FILE] [loader options]",
    .summary = "measure throughput, data wait and accelerator utilisation",
    .description =
        "Run K epochs: per batch ferry_next, the emulated compute, "
        "ferry_release.  Reports per rank and in aggregate samples/s and "
        "bytes/s (handed out, over the slowest rank's time), the time spent "
        "waiting for data and its fraction of the run, the accelerator "
        "utilisation AU (compute time over wall time, without the first "
        "step of each epoch; 0 without --compute-ms), batches per rank, "
        "the memory budget and the peak RSS (maximum over ranks).  With "
        "device batches (--device cuda) each step waits for its batch on a "
        "stream of the consumer's (ferry_shard_wait) and --compute-ms is a "
        "GPU kernel on that stream, so AU includes the copy to the GPU; "
        "bench also reports the H2D rate of the loader's copies against a "
        "plain pinned cudaMemcpyAsync of the same size timed before the "
        "run, and the wait the consumer's stream saw.  With "
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
  M_RSS_GROWTH, /* peak RSS minus the RSS before ferry_open             */
  M_LOADER_PEAK,
  /* device batches only (all 0 on the host) */
  M_GPU,          /* 1: this rank's batches go to a GPU             */
  M_SHARDS,       /* shards per batch                                 */
  M_H2D_BYTES,    /* ferry_stats h2d_bytes over the run               */
  M_H2D_S,        /* ferry_stats h2d_seconds over the run             */
  M_BASE_BYTES,   /* baseline: bytes copied by the plain copies       */
  M_BASE_S,       /* baseline: their GPU time                         */
  M_BASE_SIZE,    /* baseline: bytes of one copy (a shard's batch)    */
  M_SWAIT,        /* consumer stream wait, every step (s)             */
  M_SWAIT_STEADY, /* the same without the first step of each epoch    */
  M_STEPS_STEADY, /* steps in M_SWAIT_STEADY                          */
  M_XBYTES,       /* shuffle=global: bytes sent to other ranks        */
  M_XSEC,         /* shuffle=global: seconds of the exchanges         */
  M_RAGGED,       /* 1: a ragged variable (the first is counted)      */
  M_ROWS,         /* its rows (tokens) served                         */
  M_CELLS,        /* batch size x width (pad: the padded width, else  */
                  /* the batch's longest): rows padded to it          */
  M_DEC_S,        /* decode=: CPU seconds of the decodes (ferry_stats) */
  M_CPU_S,        /* the process's CPU seconds over the run (rusage)  */
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

/* The resident set now (/proc/self/statm), 0 where unknown. */
static double rss_now_bytes(void) {
  long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%*s %ld", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

/* The RSS of this process before ferry_open: what the program and MPI use
 * without the loader, so that the peak's growth over it can be compared
 * with the loader's memory budget. */
static double bench_base_rss;
/* The process's CPU time (user + system) when the run began. */
static double bench_cpu0;

static double cpu_now(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double peak_rss_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (double)ru.ru_maxrss * 1024.0; /* Linux reports KiB */
}

/* ---- Device batches (device=cuda) --------------------------------------- */

/* Events of one step on one shard's stream: the consumer's wait on the
 * batch (W0..W1) and the step kernel (K0..K1). */
enum { EV_W0, EV_W1, EV_K0, EV_K1, EV_COUNT };

typedef struct gpu_bench {
  int nshards;                /* 0 until the first device batch       */
  int dev[FERRY_MAX_DEVICES]; /* CUDA ordinal of each shard           */
#ifdef HAVE_CUDA
  cudaStream_t stream[FERRY_MAX_DEVICES];
  cudaEvent_t ev[FERRY_MAX_DEVICES][2][EV_COUNT]; /* [shard][step & 1]  */
#endif
  int pending;          /* a queued step not yet waited for             */
  int64_t pending_step; /* its index in the epoch                       */
  int pending_kernel;   /* it has a kernel                               */
} gpu_bench;

#ifdef FERRY_TOOL_GPU_STEP
#define GPU_STEP_KERNEL 1
#else
#define GPU_STEP_KERNEL 0
#endif

#ifdef HAVE_CUDA

/* A CUDA call failed on this rank: the ranks cannot go on together. */
static void gpu_fatal(const tool_ctx *ctx, const char *what, cudaError_t err)
    __attribute__((noreturn));
static void gpu_fatal(const tool_ctx *ctx, const char *what, cudaError_t err) {
  tool_rank_fatal(ctx, "%s: %s (%s)", what, cudaGetErrorString(err),
                  cudaGetErrorName(err));
}

#define GPU_CHECK(ctx, call)                                                   \
  do {                                                                         \
    cudaError_t gpu_err_ = (call);                                             \
    if (gpu_err_ != cudaSuccess)                                               \
      gpu_fatal((ctx), #call, gpu_err_);                                       \
  } while (0)

/* Streams and events for the shards of the first device batch. */
static void gpu_init(const tool_ctx *ctx, gpu_bench *g, const ferry_batch *b) {
  if (b->nshards > FERRY_MAX_DEVICES) {
    tool_rank_fatal(ctx, "a batch has %d shards (at most %d expected)",
                    b->nshards, FERRY_MAX_DEVICES);
  }
  for (int i = 0; i < b->nshards; i++) {
    g->dev[i] = b->shards[i].device;
    GPU_CHECK(ctx, cudaSetDevice(g->dev[i]));
    GPU_CHECK(ctx,
              cudaStreamCreateWithFlags(&g->stream[i], cudaStreamNonBlocking));
    /* blocking sync: the host thread sleeps while it waits for a step,
     * leaving the cores to the pipeline */
    for (int p = 0; p < 2; p++)
      for (int k = 0; k < EV_COUNT; k++)
        GPU_CHECK(ctx, cudaEventCreateWithFlags(&g->ev[i][p][k],
                                                cudaEventBlockingSync));
    g->nshards = i + 1;
  }
}

static double gpu_elapsed_s(const tool_ctx *ctx, cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  GPU_CHECK(ctx, cudaEventElapsedTime(&ms, a, b));
  return ms / 1e3;
}

/* Wait for the pending step and account for it in m. */
static void gpu_collect(const tool_ctx *ctx, gpu_bench *g, double *m) {
  if (!g->pending)
    return;
  int p = (int)(g->pending_step & 1);
  double wait = 0, kernel = 0;
  for (int i = 0; i < g->nshards; i++) {
    cudaEvent_t *ev = g->ev[i][p];
    GPU_CHECK(ctx, cudaSetDevice(g->dev[i]));
    GPU_CHECK(ctx, cudaEventSynchronize(ev[g->pending_kernel ? EV_K1 : EV_W1]));
    double w = gpu_elapsed_s(ctx, ev[EV_W0], ev[EV_W1]);
    wait = w > wait ? w : wait;
    if (g->pending_kernel) {
      double k = gpu_elapsed_s(ctx, ev[EV_K0], ev[EV_K1]);
      kernel = k > kernel ? k : kernel;
    }
  }
  m[M_SWAIT] += wait;
  m[M_COMPUTE] += kernel;
  if (g->pending_step > 0) {
    m[M_SWAIT_STEADY] += wait;
    m[M_STEPS_STEADY] += 1;
    m[M_AU_COMPUTE] += kernel;
  }
  g->pending = 0;
}

/*
 * One training step on a device batch: per shard, on its stream, the wait
 * for the batch between two events and the step kernel between two more;
 * ferry_release; then wait for the step before (or, for the first step of
 * an epoch, this one).  The batch must not be used afterwards.
 */
static void gpu_step(const tool_ctx *ctx, ferry_loader *L, gpu_bench *g,
                     ferry_batch *b, double compute_ms, int64_t step,
                     double *m) {
  if (g->nshards == 0)
    gpu_init(ctx, g, b);
  if (b->nshards != g->nshards) {
    tool_rank_fatal(ctx, "batch %" PRId64 " has %d shards, the first had %d",
                    b->index, b->nshards, g->nshards);
  }
  int p = (int)(step & 1), kernel = compute_ms > 0, rc;
  if (g->pending && (g->pending_step & 1) == p)
    gpu_collect(ctx, g, m); /* never: steps alternate; keeps events safe */
  for (int i = 0; i < g->nshards; i++) {
    cudaEvent_t *ev = g->ev[i][p];
    if (b->shards[i].device != g->dev[i]) {
      tool_rank_fatal(ctx,
                      "batch %" PRId64 ": shard %d on device %d, "
                      "the first batch had it on device %d",
                      b->index, i, b->shards[i].device, g->dev[i]);
    }
    GPU_CHECK(ctx, cudaSetDevice(g->dev[i]));
    GPU_CHECK(ctx, cudaEventRecord(ev[EV_W0], g->stream[i]));
    if ((rc = ferry_shard_wait(b, i, g->stream[i])) != 0)
      tool_local_fatal(ctx, L, "ferry_shard_wait", rc);
    GPU_CHECK(ctx, cudaEventRecord(ev[EV_W1], g->stream[i]));
    if (kernel) {
      GPU_CHECK(ctx, cudaEventRecord(ev[EV_K0], g->stream[i]));
#if GPU_STEP_KERNEL
      GPU_CHECK(ctx,
                (cudaError_t)ferry_tool_gpu_spin(compute_ms, g->stream[i]));
#else
      gpu_fatal(ctx, "ferry_tool_gpu_spin (built without nvcc)",
                cudaErrorNotSupported);
#endif
      GPU_CHECK(ctx, cudaEventRecord(ev[EV_K1], g->stream[i]));
    }
  }
  /* the release is ordered after the kernels on the streams (ferry.h) */
  if ((rc = ferry_release(L, b)) != 0)
    tool_local_fatal(ctx, L, "ferry_release", rc);
  gpu_collect(ctx, g, m); /* the step before */
  g->pending = 1;
  g->pending_step = step;
  g->pending_kernel = kernel;
  if (step == 0)
    gpu_collect(ctx, g, m);
}

/* Wait for everything queued on the streams. */
static void gpu_drain(const tool_ctx *ctx, gpu_bench *g, double *m) {
  gpu_collect(ctx, g, m);
  for (int i = 0; i < g->nshards; i++) {
    GPU_CHECK(ctx, cudaSetDevice(g->dev[i]));
    GPU_CHECK(ctx, cudaStreamSynchronize(g->stream[i]));
  }
}

/* After ferry_close.  Errors are ignored: the measurements are taken. */
static void gpu_free(gpu_bench *g) {
  for (int i = 0; i < g->nshards; i++) {
    if (cudaSetDevice(g->dev[i]) != cudaSuccess)
      continue;
    cudaStreamSynchronize(g->stream[i]);
    for (int p = 0; p < 2; p++)
      for (int k = 0; k < EV_COUNT; k++)
        cudaEventDestroy(g->ev[i][p][k]);
    cudaStreamDestroy(g->stream[i]);
  }
  g->nshards = 0;
}

/* A shard's batch in bytes: ceil(batch_size / devices) samples. */
static size_t gpu_shard_bytes(const tool_ctx *ctx, const ferry_loader *L,
                              const ferry_device_info *dinfo) {
  ferry_memory_budget mb0;
  memset(&mb0, 0, sizeof mb0);
  ferry_memory_budget_get(L, &mb0);
  char bsz[64];
  int64_t bs = 0;
  if (tool_parse_i64(tool_option(ctx, "batch_size", bsz, sizeof bsz), 1,
                     INT64_MAX, &bs) == 0 &&
      mb0.batch_bytes % (size_t)bs == 0)
    return mb0.batch_bytes / (size_t)bs *
           (size_t)((bs + dinfo->ndevices - 1) / dinfo->ndevices);
  return (mb0.batch_bytes + (size_t)dinfo->ndevices - 1) /
         (size_t)dinfo->ndevices;
}

/*
 * The baseline: a plain pinned cudaMemcpyAsync of BYTES (a shard's batch)
 * on each device of this rank, on a non-blocking stream, each copy timed
 * with its own pair of events as the loader's copies are (ferry_stats
 * h2d_seconds).  Adds the bytes and GPU seconds to *bytes_out, *s_out.
 */
static void gpu_baseline(const tool_ctx *ctx, const ferry_device_info *info,
                         size_t bytes, double *bytes_out, double *s_out) {
  /* at least 20 copies, and about 2 GiB, at most 200 */
  int64_t n = (int64_t)((2.0 * 1073741824.0) / (double)bytes);
  n = n < 20 ? 20 : n > 200 ? 200 : n;
  for (int d = 0; d < info->ndevices; d++) {
    void *host = NULL, *dev = NULL;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    GPU_CHECK(ctx, cudaSetDevice(info->devices[d]));
    GPU_CHECK(ctx, cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
    memset(host, 0x5a, bytes);
    GPU_CHECK(ctx, cudaMalloc(&dev, bytes));
    GPU_CHECK(ctx, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    GPU_CHECK(ctx, cudaEventCreate(&e0));
    GPU_CHECK(ctx, cudaEventCreate(&e1));
    for (int k = 0; k < 2; k++) /* warm up */
      GPU_CHECK(ctx,
                cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st));
    GPU_CHECK(ctx, cudaStreamSynchronize(st));
    for (int64_t k = 0; k < n; k++) {
      GPU_CHECK(ctx, cudaEventRecord(e0, st));
      GPU_CHECK(ctx,
                cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st));
      GPU_CHECK(ctx, cudaEventRecord(e1, st));
      GPU_CHECK(ctx, cudaEventSynchronize(e1));
      *s_out += gpu_elapsed_s(ctx, e0, e1);
      *bytes_out += (double)bytes;
    }
    GPU_CHECK(ctx, cudaEventDestroy(e0));
    GPU_CHECK(ctx, cudaEventDestroy(e1));
    GPU_CHECK(ctx, cudaStreamDestroy(st));
    GPU_CHECK(ctx, cudaFree(dev));
    GPU_CHECK(ctx, cudaFreeHost(host));
  }
}

#else /* !HAVE_CUDA: the library delivers no device batches */

static void gpu_no_cuda(const tool_ctx *ctx) __attribute__((noreturn));
static void gpu_no_cuda(const tool_ctx *ctx) {
  tool_rank_fatal(ctx, "got a device batch, but this ferry was built "
                       "without CUDA");
}
static void gpu_step(const tool_ctx *ctx, ferry_loader *L, gpu_bench *g,
                     ferry_batch *b, double compute_ms, int64_t step,
                     double *m) {
  (void)L, (void)g, (void)b, (void)compute_ms, (void)step, (void)m;
  gpu_no_cuda(ctx);
}
static void gpu_drain(const tool_ctx *ctx, gpu_bench *g, double *m) {
  (void)ctx, (void)g, (void)m;
}
static void gpu_free(gpu_bench *g) { (void)g; }

#endif /* HAVE_CUDA */

/* ---- The run --------------------------------------------------------------
 */

/* bench's own options. */
typedef struct bench_cfg {
  int64_t epochs;
  double compute_ms;
  int spin, json, per_epoch;
  const char *state; /* --state FILE, or NULL */
} bench_cfg;

/* Returns 0, or TOOL_EXIT_USAGE after a message. */
static int bench_args(const tool_ctx *ctx, bench_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->epochs = 1;
  for (int i = 0; i < ctx->nargs; i++) {
    const char *v = ctx->args[i].value;
    switch (ctx->args[i].id) {
    case OPT_EPOCHS:
      if (tool_parse_i64(v, 1, INT64_C(1) << 40, &cfg->epochs) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --epochs: expected "
                                "an integer >= 1",
                                v);
      break;
    case OPT_COMPUTE_MS:
      if (tool_parse_double(v, &cfg->compute_ms) != 0)
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
      cfg->spin = strcmp(v, "spin") == 0;
      break;
    case OPT_JSON: cfg->json = 1; break;
    case OPT_PER_EPOCH: cfg->per_epoch = 1; break;
    case OPT_STATE: cfg->state = v; break;
    }
  }
  return 0;
}

/*
 * Device batches: the step kernel must exist, and the baseline copies run
 * now, before the pipeline starts, on every rank at once.  COLLECTIVE.
 * Returns 0 or an exit status, the same on every rank.
 */
static int bench_gpu_setup(tool_ctx *ctx, ferry_loader *L, const bench_cfg *cfg,
                           double *m) {
  ferry_device_info dinfo;
  memset(&dinfo, 0, sizeof dinfo);
  if (ferry_device_info_get(L, &dinfo) != 0)
    dinfo.cuda = 0;
  int gpu = dinfo.cuda && dinfo.ndevices > 0;
  /* [0]: some rank has device batches; [1]: some rank cannot run the step */
  int gpu_any[2] = {gpu, gpu && cfg->compute_ms > 0 && !GPU_STEP_KERNEL};
  MPI_Allreduce(MPI_IN_PLACE, gpu_any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (gpu_any[1])
    return tool_usage_error(ctx,
                            "--compute-ms with device batches (device=cuda) "
                            "runs a GPU kernel, but this ferry was built "
                            "without nvcc: no GPU step kernel; rebuild with "
                            "NVCC=/path/to/nvcc (configure), or use --device "
                            "cpu");
  if (gpu_any[0])
    MPI_Barrier(MPI_COMM_WORLD); /* the ranks' baselines run together */
  if (gpu) {
    m[M_GPU] = 1;
    m[M_SHARDS] = dinfo.ndevices;
#ifdef HAVE_CUDA
    size_t shard_bytes = gpu_shard_bytes(ctx, L, &dinfo);
    m[M_BASE_SIZE] = (double)shard_bytes;
    if (shard_bytes > 0)
      gpu_baseline(ctx, &dinfo, shard_bytes, &m[M_BASE_BYTES], &m[M_BASE_S]);
#endif
  }
  return 0;
}

/* Sampling (weights, balance, mix): the draws served per group of samples
 * (ferry_sampling_group), to report requested vs observed shares. */
#define SHARE_MAX 1024
static struct {
  int64_t n;
  int64_t first[SHARE_MAX + 1];
  double requested[SHARE_MAX], planned[SHARE_MAX], observed[SHARE_MAX];
} shares;

static void shares_setup(const ferry_loader *L) {
  ferry_sampling_info si;
  if (shares.n || ferry_sampling_info_get(L, &si) || !si.mode)
    return;
  int64_t n = si.ngroups < SHARE_MAX ? si.ngroups : SHARE_MAX, count = 0;
  for (int64_t g = 0; g < n; g++)
    if (ferry_sampling_group(L, g, &shares.first[g], &count,
                             &shares.requested[g], &shares.planned[g]))
      return;
  shares.first[n] = n ? shares.first[n - 1] + count : 0;
  shares.n = n;
}

static void shares_count(const ferry_batch *b) {
  for (int64_t i = 0; shares.n && b->sample_ids && i < b->size; i++) {
    int64_t id = b->sample_ids[i], lo = 0, hi = shares.n - 1;
    if ((b->padded && b->padded[i]) || id < shares.first[0] ||
        id >= shares.first[shares.n])
      continue;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (shares.first[mid] <= id)
        lo = mid;
      else
        hi = mid - 1;
    }
    shares.observed[lo] += 1;
  }
}

/* Rank 0: one line of the groups' shares (text) or a JSON array. */
static void shares_print(int json) {
  double total = 0;
  for (int64_t g = 0; g < shares.n; g++)
    total += shares.observed[g];
  printf(json ? ", \"sampling\": ["
              : "sampling: requested vs observed "
                "shares of the draws served:");
  for (int64_t g = 0; g < shares.n; g++) {
    double o = total > 0 ? shares.observed[g] / total : 0;
    if (json)
      printf("%s{\"first\": %" PRId64 ", \"end\": %" PRId64
             ", \"requested\": %.6f, \"planned\": %.6f, \"observed\": "
             "%.6f}",
             g ? ", " : "", shares.first[g], shares.first[g + 1],
             shares.requested[g], shares.planned[g], o);
    else
      printf("%s [%" PRId64 ",%" PRId64 ") %.4f/%.4f", g ? ";" : "",
             shares.first[g], shares.first[g + 1], shares.requested[g], o);
  }
  printf(json ? "]" : "\n");
}

/*
 * Epoch e, step by step (started: tool_state_begin set it already).
 * Returns 0, or an exit status the same on every rank: a library error,
 * TOOL_EXIT_REQUEUE after a checkpoint was saved, or a failed save.
 */
static int bench_epoch(tool_ctx *ctx, ferry_loader *L, gpu_bench *g,
                       const bench_cfg *cfg, int64_t e, int started, double *m,
                       int64_t *per_epoch) {
  int rc, st;
  if (!started && (rc = ferry_set_epoch(L, e)) != 0)
    return tool_lib_error(ctx, L, rc);
  *per_epoch = ferry_num_batches(L);
  shares_setup(L);
  double first_step_end = 0;
  for (int64_t step = 0;; step++) {
    ferry_batch *b = NULL;
    rc = ferry_next(L, &b);
    if (rc == FERRY_END)
      break;
    if (rc != 0) /* collective: every rank fails at the same batch */
      return tool_lib_error(ctx, L, rc);
    double c = 0;
    int on_gpu = b->nshards > 0;
    shares_count(b);
    for (int v = 0; v < b->nvars; v++) /* the first ragged variable */
      if (b->vars[v].offsets || b->vars[v].lengths) {
        const ferry_tensor *t = &b->vars[v];
        m[M_RAGGED] = 1;
        m[M_ROWS] += (double)t->nvalues;
        m[M_CELLS] +=
            (double)b->size * (double)(t->lengths ? t->shape[1] : t->max_len);
        break;
      }
    if (on_gpu) {
      /* waits on the GPU, the kernel, ferry_release; compute time and
       * stream waits are accounted when the step is waited for */
      gpu_step(ctx, L, g, b, cfg->compute_ms, step, m);
    } else {
      if (cfg->compute_ms > 0) {
        double c0 = MPI_Wtime();
        emulate_compute(cfg->compute_ms, cfg->spin);
        c = MPI_Wtime() - c0;
      }
      if ((rc = ferry_release(L, b)) != 0)
        tool_local_fatal(ctx, L, "ferry_release", rc);
    }
    if (cfg->state && ferry_checkpoint_requested(L)) {
      gpu_drain(ctx, g, m); /* the steps on the batches served are done */
      /* the same answer on every rank after the same batch */
      st = tool_state_save(ctx, L, cfg->state, step + 1, cfg->json);
      return st == 0 ? TOOL_EXIT_REQUEUE : st;
    }
    m[M_BATCHES] += 1;
    if (!on_gpu)
      m[M_COMPUTE] += c;
    if (step == 0)
      first_step_end = MPI_Wtime();
    else if (!on_gpu)
      m[M_AU_COMPUTE] += c;
  }
  gpu_drain(ctx, g, m); /* the epoch ends when its last step does */
  if (first_step_end > 0)
    m[M_AU_TIME] += MPI_Wtime() - first_step_end;
  /* the end of the last epoch: a rerun with the same FILE has nothing
   * left to do instead of repeating an epoch */
  if (cfg->state && e + 1 == cfg->epochs)
    return tool_state_save(ctx, L, cfg->state, *per_epoch, 1);
  return 0;
}

/* read_bytes of /proc/self/io: what the kernel fetched from block devices
 * for this process (the page cache's hits not counted); -1 when unknown. */
static double proc_read_bytes(void) {
  FILE *f = fopen("/proc/self/io", "r");
  if (!f)
    return -1;
  char line[128];
  long long v = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "read_bytes: %lld", &v) == 1)
      break;
  fclose(f);
  return (double)v;
}

/* cache=node|cluster: the plan, once (rank 0 prints; every rank calls). */
static void cache_plan_print(const tool_ctx *ctx, const ferry_cache_info *ci) {
  double mx = (double)ci->region_bytes;
  MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (ctx->rank != 0)
    return;
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
  printf("cache: %s over %d node%s; %s of %s cached (%" PRId64 " of %" PRId64
         " chunks), up to %s per node (capacity %s, region %s); once filled, "
         "per epoch: %s from storage, %s between nodes\n",
         ci->mode == 1 ? "node" : "cluster", ci->nodes,
         ci->nodes == 1 ? "" : "s",
         tool_fmt_bytes((double)ci->cached_bytes, b1, sizeof b1),
         tool_fmt_bytes((double)ci->dataset_bytes, b2, sizeof b2),
         ci->cached_chunks, ci->chunks,
         tool_fmt_bytes((double)ci->max_node_bytes, b3, sizeof b3),
         tool_fmt_bytes((double)ci->capacity_bytes, b4, sizeof b4),
         tool_fmt_bytes(mx, b5, sizeof b5),
         tool_fmt_bytes((double)ci->storage_bytes_per_epoch, b6, sizeof b6),
         tool_fmt_bytes((double)ci->network_bytes_per_epoch, b7, sizeof b7));
  if (ci->note[0])
    printf("cache: %s\n", ci->note);
}

/* One epoch's traffic, summed over the ranks (collective). */
static void cache_epoch_print(const tool_ctx *ctx, int64_t e,
                              const ferry_stats *a, const ferry_stats *b,
                              double kernel, double secs) {
  double v[6] = {(double)(b->bytes_read - a->bytes_read),
                 (double)(b->cache_local_bytes - a->cache_local_bytes),
                 (double)(b->cache_remote_bytes - a->cache_remote_bytes),
                 (double)(b->cache_sent_bytes - a->cache_sent_bytes),
                 kernel < 0 ? -1e300 : kernel,
                 secs};
  double sum[6];
  MPI_Reduce(v, sum, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&v[5], &sum[5], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (ctx->rank != 0)
    return;
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  /* then the same counters in exact bytes, for scripts (sums of integers
   * below 2^53: exact as doubles) */
  printf("epoch %" PRId64 ": storage %s (kernel read_bytes %s), node cache "
         "%s, other nodes %s, sent %s, %.3f s; bytes: storage=%.0f "
         "node_cache=%.0f other_nodes=%.0f sent=%.0f\n",
         e, tool_fmt_bytes(sum[0], b1, sizeof b1),
         sum[4] < 0 ? "unknown" : tool_fmt_bytes(sum[4], b2, sizeof b2),
         tool_fmt_bytes(sum[1], b3, sizeof b3),
         tool_fmt_bytes(sum[2], b4, sizeof b4),
         tool_fmt_bytes(sum[3], b5, sizeof b5), sum[5], sum[0], sum[1], sum[2],
         sum[3]);
  fflush(stdout);
}

/* The epochs (from --state FILE's position when it exists), timed from a
 * common start into m[M_ELAPSED].  Returns 0 or an exit status. */
static int bench_epochs(tool_ctx *ctx, ferry_loader *L, gpu_bench *g,
                        const bench_cfg *cfg, double *m, int64_t *per_epoch) {
  int64_t e0 = 0;
  int resumed = 0, st;
  if (cfg->state &&
      (st = tool_state_begin(ctx, L, cfg->state, cfg->json, &e0, &resumed)))
    return st;
  ferry_cache_info ci;
  ferry_cache_info_get(L, &ci);
  if (ci.mode && !cfg->json)
    cache_plan_print(ctx, &ci);
  MPI_Barrier(MPI_COMM_WORLD); /* start together: elapsed is comparable */
  double t_start = MPI_Wtime();
  for (int64_t e = e0; e < cfg->epochs; e++) {
    int started = cfg->state != NULL && e == e0;
    ferry_stats a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ferry_stats_get(L, &a);
    double k0 = proc_read_bytes(), t0 = MPI_Wtime();
    if ((st = bench_epoch(ctx, L, g, cfg, e, started, m, per_epoch)) != 0)
      return st;
    double t1 = MPI_Wtime(), k1 = proc_read_bytes();
    ferry_stats_get(L, &b);
    if ((ci.mode || cfg->per_epoch) && !cfg->json)
      cache_epoch_print(ctx, e, &a, &b, k1 >= 0 && k0 >= 0 ? k1 - k0 : -1,
                        t1 - t0);
  }
  m[M_ELAPSED] = MPI_Wtime() - t_start;
  return 0;
}

/* This rank's counters of the run: ferry_stats now minus s0, peak RSS. */
static void bench_measure(const ferry_loader *L, const ferry_stats *s0,
                          const gpu_bench *g, double *m) {
  ferry_stats s1;
  memset(&s1, 0, sizeof s1);
  ferry_stats_get(L, &s1);
  m[M_SAMPLES] = (double)(s1.samples - s0->samples);
  m[M_BYTES] = (double)(s1.bytes - s0->bytes);
  m[M_BYTES_READ] = (double)(s1.bytes_read - s0->bytes_read);
  m[M_WAIT] = s1.wait_seconds - s0->wait_seconds;
  m[M_READ_S] = s1.read_seconds - s0->read_seconds;
  m[M_RSS] = peak_rss_bytes();
  m[M_RSS_GROWTH] = bench_base_rss > 0 ? m[M_RSS] - bench_base_rss : 0;
  m[M_LOADER_PEAK] = (double)s1.peak_resident_bytes;
  m[M_H2D_BYTES] = (double)(s1.h2d_bytes - s0->h2d_bytes);
  m[M_H2D_S] = s1.h2d_seconds - s0->h2d_seconds;
  m[M_XBYTES] = (double)(s1.exchange_bytes - s0->exchange_bytes);
  m[M_XSEC] = s1.exchange_seconds - s0->exchange_seconds;
  m[M_DEC_S] = s1.decode_cpu_seconds - s0->decode_cpu_seconds;
  m[M_CPU_S] = cpu_now() - bench_cpu0;
  if (g->nshards > 0)
    m[M_SHARDS] = g->nshards;
}

/* The memory budget (maximum over ranks) into budget[5]: batch, ring,
 * reads, plan, total; every rank's m gathered on rank 0, into the malloc'd
 * array returned there (NULL elsewhere).  COLLECTIVE. */
static double *bench_gather(const tool_ctx *ctx, const ferry_loader *L,
                            double *m, unsigned long long *budget) {
  ferry_memory_budget mb;
  memset(&mb, 0, sizeof mb);
  ferry_memory_budget_get(L, &mb);
  budget[0] = mb.batch_bytes;
  budget[1] = mb.ring_bytes;
  budget[2] = mb.read_bytes;
  budget[3] = mb.plan_bytes;
  budget[4] = mb.total_bytes;
  MPI_Allreduce(MPI_IN_PLACE, budget, 5, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                MPI_COMM_WORLD);
  double *all = NULL;
  if (ctx->rank == 0 &&
      (all = malloc((size_t)ctx->size * M_COUNT * sizeof *all)) == NULL)
    tool_oom(ctx, (size_t)ctx->size * M_COUNT * sizeof *all,
             "the measures of %d ranks (dataset %s)", ctx->size, ctx->target);
  MPI_Gather(m, M_COUNT, MPI_DOUBLE, all, M_COUNT, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  return all;
}

/* ---- The report (rank 0) ------------------------------------------------- */

/* The aggregates over the ranks that both reports print. */
typedef struct bench_sum {
  int64_t per_epoch;            /* batches per rank in the last epoch */
  unsigned long long budget[5]; /* see bench_gather                   */
  char batch_size[64];
  double t, sum_elapsed, samples, bytes, bytes_read, wait, au_c, au_t, rss,
      growth, loader_peak, au_min, bmin, bmax;
  double sps, bps, wait_frac, au;
  /* device batches */
  int any_gpu, shards;
  double h2d_b, h2d_s, base_b, base_s, base_size, swait, swait_steady,
      steps_steady, batches;
  double h2d_bps, h2d_wall_bps, base_bps, h2d_ratio, swait_ms, swait_steady_ms;
  double xbytes, xsec_max; /* shuffle=global: sent by all ranks; the
                            * slowest rank's exchange time               */
  int ragged;              /* a ragged variable: rows (tokens) counted  */
  double rows, cells, rps, pad_frac;
  double dec_s, cpu_s; /* decode=: decode CPU and process CPU, all ranks */
  int pack;            /* pack=concat: the rows' tokens counted            */
  double pack_tps;     /* tokens per second: inputs of the rows, padding
                        * aside (samples/s x seq_len x efficiency)          */
  ferry_pack_info pi;
  int ndecode;      /* decode=: the image variables decoded          */
  char decode[256]; /* their names                                   */
  double ips;       /* images per second: samples/s x ndecode        */
  const char *mode;
  const char *io; /* ferry_io_choice: how rows were read and why */
} bench_sum;

/* Throughput over the slowest rank's time; fractions as ratios of sums,
 * i.e. weighted by each rank's time. */
static void bench_aggregate(const tool_ctx *ctx, const bench_cfg *cfg,
                            const double *all, bench_sum *s) {
  s->au_min = 1;
  for (int r = 0; r < ctx->size; r++) {
    const double *x = all + (size_t)r * M_COUNT;
    s->t = x[M_ELAPSED] > s->t ? x[M_ELAPSED] : s->t;
    s->sum_elapsed += x[M_ELAPSED];
    s->samples += x[M_SAMPLES];
    s->bytes += x[M_BYTES];
    s->bytes_read += x[M_BYTES_READ];
    s->wait += x[M_WAIT];
    s->au_c += x[M_AU_COMPUTE];
    s->au_t += x[M_AU_TIME];
    double au_r = x[M_AU_TIME] > 0 ? x[M_AU_COMPUTE] / x[M_AU_TIME] : 0;
    s->au_min = r == 0 || au_r < s->au_min ? au_r : s->au_min;
    s->rss = x[M_RSS] > s->rss ? x[M_RSS] : s->rss;
    s->growth = x[M_RSS_GROWTH] > s->growth ? x[M_RSS_GROWTH] : s->growth;
    s->loader_peak =
        x[M_LOADER_PEAK] > s->loader_peak ? x[M_LOADER_PEAK] : s->loader_peak;
    s->bmin = r == 0 || x[M_BATCHES] < s->bmin ? x[M_BATCHES] : s->bmin;
    s->bmax = x[M_BATCHES] > s->bmax ? x[M_BATCHES] : s->bmax;
    s->xbytes += x[M_XBYTES];
    s->xsec_max = x[M_XSEC] > s->xsec_max ? x[M_XSEC] : s->xsec_max;
    s->dec_s += x[M_DEC_S];
    s->cpu_s += x[M_CPU_S];
    s->ragged |= x[M_RAGGED] != 0;
    s->rows += x[M_ROWS];
    s->cells += x[M_CELLS];
  }
  s->rps = s->t > 0 ? s->rows / s->t : 0;
  s->pad_frac = s->cells > 0 ? 1 - s->rows / s->cells : 0;
  s->sps = s->t > 0 ? s->samples / s->t : 0;
  s->bps = s->t > 0 ? s->bytes / s->t : 0;
  s->wait_frac = s->sum_elapsed > 0 ? s->wait / s->sum_elapsed : 0;
  s->au = s->au_t > 0 ? s->au_c / s->au_t : 0;
  tool_option(ctx, "batch_size", s->batch_size, sizeof s->batch_size);

  /* Device batches: H2D rates as ratios of sums over ranks (bytes over the
   * GPU time of the copies), the consumer streams' waits summed. */
  for (int r = 0; r < ctx->size; r++) {
    const double *x = all + (size_t)r * M_COUNT;
    if (x[M_GPU] == 0)
      continue;
    s->any_gpu = 1;
    s->shards = x[M_SHARDS] > s->shards ? (int)x[M_SHARDS] : s->shards;
    s->h2d_b += x[M_H2D_BYTES];
    s->h2d_s += x[M_H2D_S];
    s->base_b += x[M_BASE_BYTES];
    s->base_s += x[M_BASE_S];
    s->base_size =
        x[M_BASE_SIZE] > s->base_size ? x[M_BASE_SIZE] : s->base_size;
    s->swait += x[M_SWAIT];
    s->swait_steady += x[M_SWAIT_STEADY];
    s->steps_steady += x[M_STEPS_STEADY];
    s->batches += x[M_BATCHES];
  }
  s->h2d_bps = s->h2d_s > 0 ? s->h2d_b / s->h2d_s : 0;
  s->h2d_wall_bps = s->t > 0 ? s->h2d_b / s->t : 0;
  s->base_bps = s->base_s > 0 ? s->base_b / s->base_s : 0;
  s->h2d_ratio = s->base_bps > 0 ? s->h2d_bps / s->base_bps : 0;
  s->swait_ms = s->batches > 0 ? 1e3 * s->swait / s->batches : 0;
  s->swait_steady_ms =
      s->steps_steady > 0 ? 1e3 * s->swait_steady / s->steps_steady : 0;
  s->mode = s->any_gpu ? "gpu" : cfg->spin ? "spin" : "sleep";
}

/* ", \"KEY\": V" with V a JSON number. */
static void json_num(const char *key, double v) {
  printf(", \"%s\": ", key);
  tool_json_number(stdout, v);
}

/* The "per_rank" array of the JSON report. */
static void bench_json_ranks(const tool_ctx *ctx, const bench_sum *s,
                             const double *all) {
  for (int r = 0; r < ctx->size; r++) {
    const double *x = all + (size_t)r * M_COUNT;
    double el = x[M_ELAPSED];
    printf("%s{\"rank\": %d, \"batches\": %.0f, \"samples\": %.0f"
           ", \"elapsed_s\": ",
           r ? ", " : "", r, x[M_BATCHES], x[M_SAMPLES]);
    tool_json_number(stdout, el);
    json_num("samples_per_s", el > 0 ? x[M_SAMPLES] / el : 0);
    json_num("bytes_per_s", el > 0 ? x[M_BYTES] / el : 0);
    json_num("wait_s", x[M_WAIT]);
    json_num("wait_fraction", el > 0 ? x[M_WAIT] / el : 0);
    json_num("au", x[M_AU_TIME] > 0 ? x[M_AU_COMPUTE] / x[M_AU_TIME] : 0);
    if (s->any_gpu) {
      json_num("h2d_bytes_per_s",
               x[M_H2D_S] > 0 ? x[M_H2D_BYTES] / x[M_H2D_S] : 0);
      json_num("h2d_baseline_bytes_per_s",
               x[M_BASE_S] > 0 ? x[M_BASE_BYTES] / x[M_BASE_S] : 0);
      json_num("stream_wait_s", x[M_SWAIT]);
    }
    printf(", \"peak_rss_bytes\": %.0f}", x[M_RSS]);
  }
}

static void bench_print_json(const tool_ctx *ctx, const bench_cfg *cfg,
                             const bench_sum *s, const double *all) {
  printf("{\"dataset\": ");
  tool_json_string(stdout, ctx->target);
  printf(", \"ranks\": %d, \"epochs\": %" PRId64 ", \"batch_size\": %s"
         ", \"batches_per_rank\": %.0f, \"batches_per_epoch\": %" PRId64
         ", \"samples\": %.0f, \"bytes\": %.0f, \"bytes_read\": %.0f"
         ", \"elapsed_s\": ",
         ctx->size, cfg->epochs, s->batch_size, s->bmax, s->per_epoch,
         s->samples, s->bytes, s->bytes_read);
  tool_json_number(stdout, s->t);
  json_num("samples_per_s", s->sps);
  json_num("bytes_per_s", s->bps);
  if (s->ragged) {
    json_num("rows_per_s", s->rps);
    json_num("padding_fraction", s->pad_frac);
  }
  if (s->ndecode) {
    json_num("images_per_s", s->ips);
    json_num("decode_cpu_fraction", s->cpu_s > 0 ? s->dec_s / s->cpu_s : 0);
    json_num("decode_cpu_ms_per_image",
             s->samples > 0 ? 1e3 * s->dec_s / (s->samples * s->ndecode) : 0);
  }
  if (s->pack) {
    json_num("tokens_per_s", s->pack_tps);
    json_num("pack_efficiency", s->pi.efficiency);
    json_num("pack_rows", (double)s->pi.rows);
    json_num("pack_tokens", (double)s->pi.tokens);
  }
  json_num("wait_s", s->wait);
  json_num("wait_fraction", s->wait_frac);
  json_num("compute_ms", cfg->compute_ms);
  printf(", \"compute_mode\": \"%s\"", s->mode);
  printf(", \"io\": ");
  if (s->io)
    tool_json_string(stdout, s->io);
  else
    printf("null");
  json_num("au", s->au);
  json_num("au_min", s->au_min);
  if (s->any_gpu) {
    printf(", \"device\": \"cuda\", \"shards\": %d, \"h2d_bytes\": %.0f",
           s->shards, s->h2d_b);
    json_num("h2d_seconds", s->h2d_s);
    json_num("h2d_bytes_per_s", s->h2d_bps);
    json_num("h2d_wall_bytes_per_s", s->h2d_wall_bps);
    printf(", \"h2d_baseline_copy_bytes\": %.0f", s->base_size);
    json_num("h2d_baseline_bytes_per_s", s->base_bps);
    json_num("h2d_ratio", s->h2d_ratio);
    json_num("stream_wait_s", s->swait);
    json_num("stream_wait_ms_per_batch", s->swait_ms);
    json_num("stream_wait_steady_ms_per_batch", s->swait_steady_ms);
    json_num("stream_wait_fraction",
             s->sum_elapsed > 0 ? s->swait / s->sum_elapsed : 0);
  }
  if (s->xbytes > 0 || s->xsec_max > 0) {
    printf(", \"exchange_bytes\": %.0f, \"bytes_handed\": %.0f", s->xbytes,
           s->bytes);
    json_num("exchange_seconds_max", s->xsec_max);
  }
  printf(", \"peak_rss_bytes\": %.0f, \"rss_growth_bytes\": %.0f"
         ", \"peak_loader_bytes\": %.0f"
         ", \"budget_bytes\": %llu, \"budget\": {\"batch_bytes\": %llu"
         ", \"ring_bytes\": %llu, \"read_bytes\": %llu, \"plan_bytes\": "
         "%llu, \"total_bytes\": %llu}, \"per_rank\": [",
         s->rss, s->growth, s->loader_peak, s->budget[4], s->budget[0],
         s->budget[1], s->budget[2], s->budget[3], s->budget[4]);
  bench_json_ranks(ctx, s, all);
  printf("]");
  if (shares.n)
    shares_print(1);
  printf("}\n");
  fflush(stdout);
}

static void bench_print_text(const tool_ctx *ctx, const bench_cfg *cfg,
                             const bench_sum *s, const double *all) {
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32];
  printf("ferry bench: %s, %d rank%s, %" PRId64
         " epoch%s, batch_size %s, %" PRId64
         " batches per rank per epoch, compute %g ms (%s)\n",
         ctx->target, ctx->size, ctx->size == 1 ? "" : "s", cfg->epochs,
         cfg->epochs == 1 ? "" : "s", s->batch_size, s->per_epoch,
         cfg->compute_ms, s->any_gpu ? "gpu kernel" : s->mode);
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
         s->sps, tool_fmt_bytes(s->bps, b1, sizeof b1), s->wait_frac, s->au,
         s->au_min, s->bmax, s->t);
  if (s->ragged)
    printf("ragged: %.1f rows (tokens) per second of the first ragged "
           "variable; padding %.1f%% of each batch padded to its longest "
           "sample (with pad=L: to L)\n",
           s->rps, 100 * s->pad_frac);
  if (s->pack)
    printf("pack: %.1f tokens per second (rows x seq_len %" PRId64
           " x efficiency %.4f); %" PRId64 " rows and %" PRId64
           " tokens per epoch, %" PRId64 " documents split, %" PRId64
           " tokens dropped (tail)\n",
           s->pack_tps, s->pi.seq_len, s->pi.efficiency, s->pi.rows,
           s->pi.tokens, s->pi.split, s->pi.dropped);
  if (s->ndecode)
    printf("decode: %.1f images/s (decode=%s: %d image%s a sample, decoded "
           "on %d %s); decoding took %.0f%% of the CPU time of the "
           "ranks' processes (%.2f ms of CPU an image)\n",
           s->ips, s->decode, s->ndecode, s->ndecode > 1 ? "s" : "", ctx->size,
           ctx->size == 1 ? "rank's decode pool" : "ranks' decode pools",
           s->cpu_s > 0 ? 100 * s->dec_s / s->cpu_s : 0,
           s->samples > 0 ? 1e3 * s->dec_s / (s->samples * s->ndecode) : 0);
  printf("read: %s from storage (%.2fx the bytes handed out)%s%s\n",
         tool_fmt_bytes(s->bytes_read, b1, sizeof b1),
         s->bytes > 0 ? s->bytes_read / s->bytes : 0, s->io ? "; io " : "",
         s->io ? s->io : "");
  printf("memory: budget %s per rank (batch %s, ring %s, reads %s, plan %s); "
         "loader buffers peak %s; peak RSS %s, %s over the RSS before "
         "ferry_open (max over ranks)\n",
         tool_fmt_bytes((double)s->budget[4], b1, sizeof b1),
         tool_fmt_bytes((double)s->budget[0], b2, sizeof b2),
         tool_fmt_bytes((double)s->budget[1], b3, sizeof b3),
         tool_fmt_bytes((double)s->budget[2], b4, sizeof b4),
         tool_fmt_bytes((double)s->budget[3], b5, sizeof b5),
         tool_fmt_bytes(s->loader_peak, b6, sizeof b6),
         tool_fmt_bytes(s->rss, b7, sizeof b7),
         tool_fmt_bytes(s->growth, b8, sizeof b8));
  if (s->xbytes > 0 || s->xsec_max > 0)
    printf("exchange (shuffle=global): %s sent between ranks over the run "
           "(%.2fx the bytes handed out), %.3f s on the slowest rank's I/O "
           "thread (overlapped with serving)\n",
           tool_fmt_bytes(s->xbytes, b1, sizeof b1),
           s->bytes > 0 ? s->xbytes / s->bytes : 0, s->xsec_max);
  if (s->any_gpu) {
    printf("gpu: %d shard%s per batch; H2D %s/s (copy time, ferry_stats), "
           "%s/s over the run; plain pinned cudaMemcpyAsync of %s: %s/s; "
           "loader/plain %.3f\n",
           s->shards, s->shards == 1 ? "" : "s",
           tool_fmt_bytes(s->h2d_bps, b1, sizeof b1),
           tool_fmt_bytes(s->h2d_wall_bps, b2, sizeof b2),
           tool_fmt_bytes(s->base_size, b3, sizeof b3),
           tool_fmt_bytes(s->base_bps, b4, sizeof b4), s->h2d_ratio);
    printf("consumer stream wait: %.3f s in all, %.3f ms per batch, %.3f ms "
           "per batch without the first step of each epoch\n",
           s->swait, s->swait_ms, s->swait_steady_ms);
  }
  if (cfg->compute_ms <= 0)
    printf("what this means: with no compute step (--compute-ms 0) the "
           "loader ran flat out, so AU (compute time over wall time) is 0 "
           "by definition;\n  wait_fraction is the share of the run spent "
           "in ferry_next waiting for data: with a real step in between, a "
           "loader that keeps up brings it near 0 and AU near 1.\n");
  if (shares.n)
    shares_print(0);
  if (s->bmin != s->bmax)
    printf("warning: ranks got different batch counts (%.0f to %.0f)\n",
           s->bmin, s->bmax);
  fflush(stdout);
}

static int run_bench(tool_ctx *ctx) {
  bench_cfg cfg;
  int st = bench_args(ctx, &cfg), rc;
  if (st != 0)
    return st;
  ferry_loader *L = NULL;
  gpu_bench g;
  memset(&g, 0, sizeof g);
  bench_base_rss = rss_now_bytes();
  if ((st = tool_open(ctx, &L)) != 0)
    return st;
  double *all = NULL;
  double m[M_COUNT] = {0};
  bench_sum s;
  memset(&s, 0, sizeof s);
  ferry_stats s0;
  memset(&s0, 0, sizeof s0);
  ferry_stats_get(L, &s0);
  bench_cpu0 = cpu_now();
  if ((st = bench_gpu_setup(ctx, L, &cfg, m)) != 0 ||
      (st = bench_epochs(ctx, L, &g, &cfg, m, &s.per_epoch)) != 0)
    goto cleanup;
  bench_measure(L, &s0, &g, m);
  if (shares.n) /* every rank has the same groups */
    MPI_Reduce(ctx->rank ? shares.observed : MPI_IN_PLACE, shares.observed,
               (int)shares.n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  all = bench_gather(ctx, L, m, s.budget);
  if (ctx->rank == 0) {
    bench_aggregate(ctx, &cfg, all, &s);
    s.io = ferry_io_choice(L);
    if (ferry_pack_stats(L, 0, &s.pi) == 0) {
      s.pack = 1;
      s.pack_tps = s.sps * (double)s.pi.seq_len * s.pi.efficiency;
    }
    /* decode=: every sample is one image of each variable named */
    if (ferry_options_get(ctx->opts, "decode", s.decode, sizeof s.decode) ==
            0 &&
        s.decode[0]) {
      s.ndecode = 1;
      for (const char *c = s.decode; *c; c++)
        s.ndecode += *c == ',';
      s.ips = s.sps * s.ndecode;
    }
    if (cfg.json)
      bench_print_json(ctx, &cfg, &s, all);
    else
      bench_print_text(ctx, &cfg, &s, all);
  }

cleanup:
  free(all);
  gpu_drain(ctx, &g, m); /* our work on device batches ends before close */
  rc = ferry_close(L);
  gpu_free(&g);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
