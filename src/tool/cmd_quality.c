/*
 * cmd_quality.c - `ferry quality DATASET --epochs K [--label VAR] [--json]
 * [--world-size W] [loader options]`: how random the order these options
 * give is, with numbers, side by side with an ideal uniform permutation of
 * the same slots.  Computed from the plan alone (ferry_plan_order: every
 * rank of W simulated in this one process); no data is read except the
 * label variable when --label names one.  The measures are pure functions
 * of the orders (measures.c, unit-tested); this file only gathers the
 * orders, the labels, and prints.  Rank 0 does the work, the other ranks
 * help read the labels and wait for the exit status.
 */
#include "measures.h"
#include "tool.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_EPOCHS = 1, OPT_LABEL, OPT_JSON, OPT_WORLD, OPT_MAX_MEMORY };

static int run_quality(tool_ctx *ctx);

static const tool_opt quality_opts[] = {
    {"epochs", 1, OPT_EPOCHS, "K",
     "Epochs to plan (0..K-1, K >= 2: some measures compare consecutive "
     "epochs).  Default: 3."},
    {"label", 1, OPT_LABEL, "VAR",
     "A class-label variable (one value per sample, at most 4096 distinct "
     "values): also report the mean KL divergence of each batch's label "
     "distribution from the dataset's.  The only data read."},
    {"json", 0, OPT_JSON, NULL, "Print one JSON object instead of text."},
    {"world-size", 1, OPT_WORLD, "W",
     "Ranks of the job to simulate.  Default: the ranks of this run."},
    {"max-memory", 1, OPT_MAX_MEMORY, "SIZE",
     "Refuse to start when rank 0's arrays would need more than SIZE: about "
     "112 bytes per sample of the dataset (two epochs' orders and their "
     "chunks, the ideal permutation's, each sample's chunk, the measures' "
     "scratch).  Default: " TOOL_MAX_MEMORY_DEFAULT "."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_quality = {
    .name = "quality",
    .args = "DATASET [--epochs K] [--label VAR] [--json] [--world-size W] "
            "[loader options]",
    .summary = "measure how random the order of these options is",
    .description =
        "Plan epochs 0..K-1 for every rank of a job of W ranks with these "
        "options (nothing is read but --label's variable) and report, next "
        "to an ideal uniform permutation dealt to the same ranks and batch "
        "sizes: distinct chunks per batch (mean, min), the fraction of "
        "samples served by the same rank in the next epoch, the fraction of "
        "pairs sharing a batch that share one again in the next epoch, the "
        "mean displacement from storage order, Kendall's tau between "
        "consecutive epochs, and with --label the mean KL divergence of the "
        "batches' label distributions from the dataset's.  docs/shuffling.md "
        "explains the measures.",
    .loader_options = 1,
    .opts = quality_opts,
    .run = run_quality,
};

#define MAX_CLASSES 4096

typedef struct qcfg {
  int64_t epochs;
  int world;
  int json;
  const char *label;
  uint64_t seed;
  uint64_t max_memory; /* --max-memory: the arrays' bound */
} qcfg;

/* The measures, summed over epochs (or transitions) and counted. */
enum { M_CHUNKS, M_CHUNKS_MIN, M_STAY, M_PAIRS, M_DISP, M_TAU, M_KL, M_COUNT };
static const char *const m_keys[M_COUNT] = {"chunks_per_batch_mean",
                                            "chunks_per_batch_min",
                                            "same_rank_next_epoch",
                                            "pairs_together_again",
                                            "displacement",
                                            "kendall_tau",
                                            "label_kl"};
static const char *const m_text[M_COUNT] = {
    "distinct chunks per batch (mean)", "distinct chunks per batch (min)",
    "same rank next epoch (fraction)",  "pairs sharing a batch again",
    "displacement / N (mean)",          "Kendall tau, consecutive epochs",
    "label KL per batch (nats)"};

typedef struct acc {
  double sum[M_COUNT];
  int64_t n[M_COUNT];
} acc;

static void acc_add(acc *a, int m, double v) {
  if (isnan(v))
    return;
  if (m == M_CHUNKS_MIN) { /* the minimum over epochs */
    if (a->n[m] == 0 || v < a->sum[m])
      a->sum[m] = v;
    a->n[m] = 1;
    return;
  }
  a->sum[m] += v;
  a->n[m]++;
}

static double acc_get(const acc *a, int m) {
  return a->n[m] ? a->sum[m] / (double)a->n[m] : NAN;
}

/* One epoch over the W simulated ranks, rank-major, and its ideal twin. */
typedef struct epoch_ord {
  qm_order o, ideal;
  int64_t *sample, *chunk, *bstart, *isample, *ichunk;
  int *brank;
} epoch_ord;

static void epoch_free(epoch_ord *e) {
  free(e->sample);
  free(e->chunk);
  free(e->bstart);
  free(e->isample);
  free(e->ichunk);
  free(e->brank);
  memset(e, 0, sizeof *e);
}

/* Append rank r's order (s, c, bs, nb) to e.  Returns 0 or -1 (memory). */
static int epoch_append(epoch_ord *e, int r, const int64_t *s, const int64_t *c,
                        const int64_t *bs, int64_t nb) {
  int64_t n = bs[nb], n0 = e->o.n, b0 = e->o.nbatches;
  int64_t *ns = realloc(e->sample, (size_t)(n0 + n + 1) * sizeof *ns);
  if (ns)
    e->sample = ns;
  int64_t *nc = realloc(e->chunk, (size_t)(n0 + n + 1) * sizeof *nc);
  if (nc)
    e->chunk = nc;
  int64_t *nbs = realloc(e->bstart, (size_t)(b0 + nb + 1) * sizeof *nbs);
  if (nbs)
    e->bstart = nbs;
  int *nr = realloc(e->brank, (size_t)(b0 + nb + 1) * sizeof *nr);
  if (nr)
    e->brank = nr;
  if (!ns || !nc || !nbs || !nr)
    return -1;
  memcpy(e->sample + n0, s, (size_t)n * sizeof *s);
  memcpy(e->chunk + n0, c, (size_t)n * sizeof *c);
  for (int64_t b = 0; b < nb; b++) {
    e->bstart[b0 + b] = n0 + bs[b];
    e->brank[b0 + b] = r;
  }
  e->bstart[b0 + nb] = n0 + n;
  e->o.n = n0 + n;
  e->o.nbatches = b0 + nb;
  return 0;
}

/* Epoch ep over cfg->world ranks, and its ideal permutation; chunk_of[s]
 * learns the chunk of every sample served.  Returns 0, or 1 after printing
 * why not. */
static int epoch_build(const tool_ctx *ctx, const ferry_loader *L,
                       const qcfg *cfg, int64_t ep, int64_t N,
                       int64_t *chunk_of, epoch_ord *e) {
  memset(e, 0, sizeof *e);
  size_t want = sizeof *e->bstart; /* what failed */
  if (!(e->bstart = malloc(sizeof *e->bstart)))
    goto oom;
  e->bstart[0] = 0;
  for (int r = 0; r < cfg->world; r++) {
    int64_t *s = NULL, *c = NULL, *bs = NULL, nb = 0;
    int rc = ferry_plan_order(L, ep, cfg->world, r, &s, &c, &bs, &nb);
    if (rc) {
      tool_error(ctx, "cannot plan epoch %" PRId64 " of rank %d of %d: %s", ep,
                 r, cfg->world, ferry_last_error(NULL));
      return 1;
    }
    want =
        (size_t)(e->o.n + bs[nb] + 1) * (sizeof *e->sample + sizeof *e->chunk) +
        (size_t)(e->o.nbatches + nb + 1) *
            (sizeof *e->bstart + sizeof *e->brank);
    rc = epoch_append(e, r, s, c, bs, nb);
    free(s);
    free(c);
    free(bs);
    if (rc)
      goto oom;
  }
  e->o.sample = e->sample;
  e->o.bstart = e->bstart;
  e->o.brank = e->brank;
  for (int64_t i = 0; i < e->o.n; i++)
    if (e->sample[i] >= 0 && e->sample[i] < N)
      chunk_of[e->sample[i]] = e->chunk[i];
  size_t bytes = (size_t)(e->o.n + 1) * sizeof(int64_t);
  want = 2 * bytes;
  if (!(e->isample = malloc(bytes)) || !(e->ichunk = malloc(bytes)))
    goto oom;
  qm_ideal(&e->o, cfg->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)ep + 1,
           e->isample);
  for (int64_t i = 0; i < e->o.n; i++)
    e->ichunk[i] = chunk_of[e->isample[i]];
  e->ideal = e->o;
  e->ideal.sample = e->isample;
  return 0;
oom:
  tool_error(ctx,
             "out of memory: %zu bytes for the orders of epoch %" PRId64
             " of dataset %s",
             want, ep, ctx->target);
  return 1;
}

/* The measures of one epoch (prev: the epoch before, or NULL) into plan
 * and ideal.  Returns 0 or -1 (memory). */
static int epoch_measure(const epoch_ord *e, const epoch_ord *prev, int64_t N,
                         const int32_t *cls, int ncls, acc *plan, acc *ideal) {
  for (int which = 0; which < 2; which++) {
    const qm_order *o = which ? &e->ideal : &e->o;
    const qm_order *p = prev ? (which ? &prev->ideal : &prev->o) : NULL;
    acc *a = which ? ideal : plan;
    double v[M_COUNT], mn;
    for (int m = 0; m < M_COUNT; m++)
      v[m] = NAN;
    if (qm_chunks_per_batch(o, which ? e->ichunk : e->chunk, &v[M_CHUNKS],
                            &mn) ||
        qm_displacement(o, N, &v[M_DISP]))
      return -1;
    v[M_CHUNKS_MIN] = mn;
    if (p &&
        (qm_rank_stay(p, o, N, &v[M_STAY]) ||
         qm_pair_again(p, o, N, &v[M_PAIRS]) || qm_kendall(p, o, N, &v[M_TAU])))
      return -1;
    if (cls && qm_label_kl(o, cls, N, ncls, &v[M_KL]))
      return -1;
    for (int m = 0; m < M_COUNT; m++)
      acc_add(a, m, v[m]);
  }
  return 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Rank 0: the class of every sample from its label value (vals[N], NaN
 * where unread): the distinct values sorted.  Returns 0 or 1 after saying
 * why not. */
static int label_classes(const tool_ctx *ctx, const qcfg *cfg,
                         const double *vals, int64_t N, int32_t **cls_out,
                         int *ncls_out) {
  double *sorted = malloc((size_t)(N > 0 ? N : 1) * sizeof *sorted);
  int32_t *cls = malloc((size_t)(N > 0 ? N : 1) * sizeof *cls);
  if (!sorted || !cls) {
    free(sorted);
    free(cls);
    tool_error(ctx, "out of memory: %zu bytes for the labels of dataset %s",
               (size_t)(N > 0 ? N : 1) * (sizeof *sorted + sizeof *cls),
               ctx->target);
    return 1;
  }
  int64_t bad = -1;
  for (int64_t s = 0; s < N; s++) {
    sorted[s] = vals[s];
    if (isnan(vals[s]) && bad < 0)
      bad = s;
  }
  qsort(sorted, (size_t)N, sizeof *sorted, cmp_double);
  int64_t nd = 0;
  for (int64_t s = 0; s < N && bad < 0; s++)
    if (s == 0 || sorted[s] != sorted[s - 1])
      sorted[nd++] = sorted[s];
  if (bad >= 0 || nd > MAX_CLASSES) {
    if (bad >= 0)
      tool_error(ctx,
                 "--label %s: sample %" PRId64 " has no label value "
                 "(NaN, or not read)",
                 cfg->label, bad);
    else
      tool_error(ctx,
                 "--label %s: more than %d distinct values; --label "
                 "wants a class label",
                 cfg->label, MAX_CLASSES);
    free(sorted);
    free(cls);
    return 1;
  }
  for (int64_t s = 0; s < N; s++) {
    const double *hit =
        bsearch(&vals[s], sorted, (size_t)nd, sizeof *sorted, cmp_double);
    cls[s] = (int32_t)(hit - sorted);
  }
  free(sorted);
  *cls_out = cls;
  *ncls_out = (int)nd;
  return 0;
}

/* Options for reading the label variable in storage order. */
static int label_options(const tool_ctx *ctx, const char *label,
                         ferry_options **out) {
  static const char *const set[][2] = {
      {"shuffle", "none"}, {"tail", "partial"},    {"max_chunks", "0"},
      {"fraction", "1"},   {"batch_size", "4096"}, {"partition", "contiguous"},
      {"exchange", "1"}};
  if (ferry_options_copy(ctx->opts, out) != 0)
    return -1;
  if (ferry_options_set(*out, "vars", label) != 0)
    return -1;
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
    if (ferry_options_set(*out, set[i][0], set[i][1]) != 0)
      return -1;
  return 0;
}

/* Every rank reads its share of the label variable; rank 0 gets the
 * classes.  COLLECTIVE.  Returns 0 or an exit status, the same everywhere. */
static int read_labels(tool_ctx *ctx, const qcfg *cfg, int64_t N, int32_t **cls,
                       int *ncls) {
  ferry_options *o = NULL;
  ferry_loader *LL = NULL;
  if (label_options(ctx, cfg->label, &o) != 0) {
    ferry_options_free(o);
    return tool_usage_error(ctx, "--label %s: %s", cfg->label,
                            ferry_last_error(NULL));
  }
  int rc = ferry_open(MPI_COMM_WORLD, ctx->target, o, &LL);
  ferry_options_free(o);
  if (rc)
    return tool_lib_error(ctx, NULL, rc);
  ferry_var_info v;
  int st = 0;
  if (ferry_var_info_get(LL, 0, &v) != 0 ||
      v.row_bytes != ferry_dtype_size(v.dtype))
    st = tool_usage_error(ctx,
                          "--label %s: a label is one value per "
                          "sample; %s has %zu bytes a sample",
                          cfg->label, cfg->label, v.row_bytes);
  int64_t n = 0, cap = 0, *ids = NULL, *bits = NULL;
  if (!st && (rc = ferry_set_epoch(LL, 0)) != 0)
    st = tool_lib_error(ctx, LL, rc);
  ferry_batch *b = NULL;
  while (!st && (rc = ferry_next(LL, &b)) == 0) {
    if (n + b->size > cap) {
      cap = 2 * (n + b->size);
      int64_t *ni = realloc(ids, (size_t)cap * sizeof *ni);
      int64_t *nb = ni ? realloc(bits, (size_t)cap * sizeof *nb) : NULL;
      if (ni)
        ids = ni;
      if (nb)
        bits = nb;
      if (!ni || !nb)
        tool_oom(ctx, (size_t)cap * (sizeof *ni + sizeof *nb),
                 "the labels of %lld samples of dataset %s", (long long)cap,
                 ctx->target);
    }
    const unsigned char *p = b->vars[0].data;
    for (int64_t i = 0; i < b->size; i++, n++) {
      double d = tool_value_as_double(v.dtype, p + (size_t)i * v.row_bytes);
      ids[n] = b->sample_ids[i];
      memcpy(&bits[n], &d, sizeof d);
    }
    if ((rc = ferry_release(LL, b)) != 0)
      tool_local_fatal(ctx, LL, "ferry_release", rc);
  }
  if (!st && rc != FERRY_END)
    st = tool_lib_error(ctx, LL, rc);
  rc = ferry_close(LL);
  if (rc && !st)
    st = tool_lib_error(ctx, NULL, rc);
  int64_t *all_ids = NULL, *all_bits = NULL, total = 0;
  if (!st && ((total = tool_gather_i64(ids, n, &all_ids, NULL)) < 0 ||
              tool_gather_i64(bits, n, &all_bits, NULL) < 0)) {
    tool_error(ctx, "cannot gather the labels on rank 0");
    st = TOOL_EXIT_ERROR;
  }
  if (!st && ctx->rank == 0) {
    double *vals = malloc((size_t)(N > 0 ? N : 1) * sizeof *vals);
    if (!vals)
      tool_oom(ctx, (size_t)(N > 0 ? N : 1) * sizeof *vals,
               "the labels of dataset %s", ctx->target);
    for (int64_t s = 0; s < N; s++)
      vals[s] = NAN;
    for (int64_t i = 0; i < total; i++)
      if (all_ids[i] >= 0 && all_ids[i] < N)
        memcpy(&vals[all_ids[i]], &all_bits[i], sizeof *vals);
    st = label_classes(ctx, cfg, vals, N, cls, ncls) ? TOOL_EXIT_ERROR : 0;
    free(vals);
  }
  MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(ids);
  free(bits);
  free(all_ids);
  free(all_bits);
  return st;
}

static int quality_args(const tool_ctx *ctx, qcfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->epochs = 3;
  cfg->world = ctx->size;
  (void)tool_parse_size(TOOL_MAX_MEMORY_DEFAULT, &cfg->max_memory);
  for (int i = 0; i < ctx->nargs; i++) {
    const char *v = ctx->args[i].value;
    int64_t x;
    switch (ctx->args[i].id) {
    case OPT_EPOCHS:
      if (tool_parse_i64(v, 2, 100000, &cfg->epochs) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --epochs: expected an "
                                "integer in [2, 100000] (some measures "
                                "compare consecutive epochs)",
                                v);
      break;
    case OPT_WORLD:
      if (tool_parse_i64(v, 1, 1 << 20, &x) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --world-size: expected "
                                "an integer in [1, 1048576]",
                                v);
      cfg->world = (int)x;
      break;
    case OPT_LABEL:
      if (v[0] == '\0' || strchr(v, ',') != NULL)
        return tool_usage_error(ctx,
                                "bad value '%s' for --label: expected the "
                                "name of one variable",
                                v);
      cfg->label = v;
      break;
    case OPT_JSON: cfg->json = 1; break;
    case OPT_MAX_MEMORY:
      if (tool_max_memory_arg(ctx, v, &cfg->max_memory))
        return TOOL_EXIT_USAGE;
      break;
    default: break;
    }
  }
  char buf[64];
  int64_t seed = 0;
  if (tool_parse_i64(tool_option(ctx, "seed", buf, sizeof buf), 0, INT64_MAX,
                     &seed) == 0)
    cfg->seed = (uint64_t)seed;
  return TOOL_CONTINUE;
}

/* Rank 0: the report. */
static void quality_print(const tool_ctx *ctx, const ferry_loader *L,
                          const qcfg *cfg, int64_t N, int64_t nchunks,
                          const acc *plan, const acc *ideal, int ncls) {
  char shuffle[64], sb[64], bsz[64], bls[64];
  tool_option(ctx, "shuffle", shuffle, sizeof shuffle);
  tool_option(ctx, "shuffle_buffer", sb, sizeof sb);
  tool_option(ctx, "batch_size", bsz, sizeof bsz);
  tool_option(ctx, "block_size", bls, sizeof bls);
  const char *why = "";
  int64_t cs = ferry_chunk_samples(L, &why);
  int same = cfg->world == ctx->size;
  if (cfg->json) {
    printf("{\"dataset\": ");
    tool_json_string(stdout, ctx->target);
    printf(
        ", \"epochs\": %" PRId64 ", \"world_size\": %d, \"samples\": %" PRId64
        ", \"batch_size\": %s, \"shuffle\": \"%s\", \"shuffle_buffer\": %s"
        ", \"block_size\": %s, \"seed\": %" PRIu64 ", \"chunks\": %" PRId64,
        cfg->epochs, cfg->world, N, bsz, shuffle, sb, bls, cfg->seed, nchunks);
    if (same) {
      printf(", \"chunk_samples\": %" PRId64 ", \"chunk_samples_why\": ", cs);
      tool_json_string(stdout, why);
    }
    if (cfg->label) {
      printf(", \"label\": ");
      tool_json_string(stdout, cfg->label);
      printf(", \"classes\": %d", ncls);
    }
    printf(", \"measures\": {");
    for (int m = 0; m < M_COUNT; m++) {
      if (m == M_KL && !cfg->label)
        continue;
      printf("%s\"%s\": {\"plan\": ", m ? ", " : "", m_keys[m]);
      tool_json_number(stdout, acc_get(plan, m));
      printf(", \"ideal\": ");
      tool_json_number(stdout, acc_get(ideal, m));
      printf("}");
    }
    printf("}}\n");
    fflush(stdout);
    return;
  }
  printf("ferry quality: %s, %" PRId64 " samples, %d rank%s simulated, "
         "epochs 0..%" PRId64 ", batch_size %s, shuffle %s, shuffle_buffer "
         "%s, block_size %s\n",
         ctx->target, N, cfg->world, cfg->world == 1 ? "" : "s",
         cfg->epochs - 1, bsz, shuffle, sb, bls);
  printf("chunks: %" PRId64 " (as a job of %d ranks cuts them)", nchunks,
         cfg->world);
  if (same)
    printf(", chunk_samples %" PRId64 " (%s)", cs, why);
  printf("\n");
  if (cfg->label)
    printf("label %s: %d classes\n", cfg->label, ncls);
  printf("%-34s %12s %12s\n", "measure", "this plan", "ideal");
  for (int m = 0; m < M_COUNT; m++) {
    if (m == M_KL && !cfg->label)
      continue;
    double p = acc_get(plan, m), q = acc_get(ideal, m);
    char a[32], b[32];
    snprintf(a, sizeof a, isnan(p) ? "n/a" : "%.4g", p);
    snprintf(b, sizeof b, isnan(q) ? "n/a" : "%.4g", q);
    printf("%-34s %12s %12s\n", m_text[m], a, b);
  }
  fflush(stdout);
}

/* Rank 0: plan the epochs, measure, print.  Returns 0 or 1. */
static int quality_compute(const tool_ctx *ctx, const ferry_loader *L,
                           const qcfg *cfg, const int32_t *cls, int ncls) {
  int64_t N = ferry_num_samples(L);
  int64_t *chunk_of = calloc((size_t)(N > 0 ? N : 1), sizeof *chunk_of);
  if (!chunk_of) {
    tool_error(ctx,
               "out of memory: %zu bytes for the chunks of the %" PRId64
               " samples of dataset %s",
               (size_t)(N > 0 ? N : 1) * sizeof *chunk_of, N, ctx->target);
    return 1;
  }
  acc plan, ideal;
  memset(&plan, 0, sizeof plan);
  memset(&ideal, 0, sizeof ideal);
  epoch_ord prev, cur;
  memset(&prev, 0, sizeof prev);
  memset(&cur, 0, sizeof cur);
  int st = 0;
  int64_t nchunks = 0;
  for (int64_t e = 0; !st && e < cfg->epochs; e++) {
    st = epoch_build(ctx, L, cfg, e, N, chunk_of, &cur);
    for (int64_t i = 0; !st && e == 0 && i < cur.o.n; i++)
      if (cur.chunk[i] + 1 > nchunks)
        nchunks = cur.chunk[i] + 1; /* ids in storage order: the last + 1 */
    if (!st && epoch_measure(&cur, e ? &prev : NULL, N, cls, ncls, &plan,
                             &ideal) != 0) {
      /* about the largest of them: a table per sample, two per draw */
      tool_error(ctx,
                 "out of memory: %zu bytes for the measures of epoch "
                 "%" PRId64 " of dataset %s",
                 (size_t)(N + 2 * cur.o.n + 2) * sizeof(int64_t), e,
                 ctx->target);
      st = 1;
    }
    epoch_free(&prev);
    prev = cur;
    memset(&cur, 0, sizeof cur);
  }
  epoch_free(&prev);
  epoch_free(&cur);
  free(chunk_of);
  if (!st)
    quality_print(ctx, L, cfg, N, nchunks, &plan, &ideal, ncls);
  return st;
}

static int run_quality(tool_ctx *ctx) {
  qcfg cfg;
  int st = quality_args(ctx, &cfg), rc;
  if (st != TOOL_CONTINUE)
    return st;
  if ((st = tool_host_batches(ctx)) != TOOL_CONTINUE)
    return st;
  ferry_loader *L = NULL;
  if ((st = tool_open(ctx, &L)) != 0)
    return st;
  /* bounded: refuse before anything per sample is held (issue 30) */
  if ((st = tool_memory_check(ctx, L,
                              "every rank's order of two epochs and the "
                              "ideal one's",
                              112, 0, cfg.max_memory)) != 0) {
    ferry_close(L);
    return st;
  }
  int32_t *cls = NULL;
  int ncls = 0;
  if (cfg.label)
    st = read_labels(ctx, &cfg, ferry_num_samples(L), &cls, &ncls);
  if (!st && ctx->rank == 0)
    st = quality_compute(ctx, L, &cfg, cls, ncls) ? TOOL_EXIT_ERROR : 0;
  MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(cls);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
