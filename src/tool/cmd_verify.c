/*
 * cmd_verify.c - `ferry verify DATASET --epochs K`: check every promise of
 * the loader at once, on every epoch, using only what ferry_next hands out:
 *   batches       every rank gets the same number of batches (ferry_num_batches
 *                 and the batches actually received before FERRY_END, by
 *                 MPI_Allreduce min/max), and each batch is well-formed;
 *   exactly-once  the sample ids of all ranks, gathered on rank 0, cover the
 *                 epoch as the tail option promises (partial: each sample
 *                 once; drop_last: no repeat, all but the dropped ones; pad:
 *                 each once plus padded repeats), all in [0, N);
 *   content       for data written by `ferry gen` (DIR/FERRY_GEN) or a mem:
 *                 spec, every element of every variable of every sample
 *                 holds the value its index encodes (tool_fill_rows); for
 *                 an .h5ad of `ferry gen --anndata`, every cell's row of X,
 *                 code and n_counts its formula's (verify_anndata.c);
 *   determinism   ferry_set_epoch again with the same epoch gives the same
 *                 batches (a hash of index, ids, padding and data per batch);
 *   order         consecutive epochs give different orders (a warning only,
 *                 and only when something is shuffled);
 *   mixing        the plan of epoch 0 mixes at least 4 distinct chunks per
 *                 batch on average (a warning only, when something is
 *                 shuffled and 4 could be: batch_size and chunks >= 4);
 *                 from ferry_plan_order, as `ferry quality` measures it.
 *   hashes        an MDS dataset's shard digests (mds_hashes=auto is check
 *                 here: the open compares them, backends/mds.c); the line
 *                 says what was compared.
 * Rank 0 prints one PASS/FAIL/WARN/SKIP line per check and epoch and a
 * summary.  Exit 0 when all hold, 3 when one failed, 1 on a library error.
 *
 * With --state FILE the run can be interrupted and resumed (checkpoint
 * signal, exit 75, ferry_state_load on the next run, with any number of
 * ranks): each epoch runs once (no determinism rerun), and the ids served
 * before the checkpoint are kept in FILE.served (rank 0 writes them, one per
 * line after a '#' header naming the epoch), so exactly-once is checked over
 * the interrupted and the resumed runs together.  At the end of every epoch
 * FILE.served holds that whole epoch's ids, a record a test can check alone.
 */
#include "measures.h"
#include "verify.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *const verify_check_names[CK_COUNT] = {
    "batches", "exactly-once", "content", "determinism", "order",
    "mixing",  "sampling",     "tokens",  "sparse",      "hashes"};
const char *const verify_res_names[4] = {"SKIP", "PASS", "WARN", "FAIL"};

enum {
  OPT_EPOCHS = 1,
  OPT_JSON,
  OPT_STATE,
  OPT_COMPUTE_MS,
  OPT_MAX_MEMORY,
  OPT_IMAGES,
  OPT_MAX_ERRORS
};

static int run_verify(tool_ctx *ctx);

static const tool_opt verify_opts[] = {
    {"epochs", 1, OPT_EPOCHS, "K",
     "Epochs to check (0..K-1); each is run twice, for determinism.  "
     "Default: 2."},
    {"json", 0, OPT_JSON, NULL,
     "Print one JSON object (rank 0) instead of text."},
    {"state", 1, OPT_STATE, "FILE",
     "Checkpoint and resume: start from FILE when it exists; on the "
     "checkpoint_signal save to FILE, the ids served so far to FILE.served, "
     "and exit 75 (requeue me); exactly-once is then checked over all the "
     "runs of the epoch.  Each epoch runs once (no determinism rerun)."},
    {"max-memory", 1, OPT_MAX_MEMORY, "SIZE",
     "Refuse to start when the exactly-once check's arrays would need more "
     "than SIZE: about 25 bytes per sample of the dataset on rank 0 (every "
     "rank's ids gathered, a seen-mark each) plus 72 per sample of a rank's "
     "share (its ids twice, and the plan's order for the mixing check).  "
     "Default: " TOOL_MAX_MEMORY_DEFAULT "."},
    {"compute-ms", 1, OPT_COMPUTE_MS, "X",
     "Sleep X milliseconds per batch, standing for a training step (to "
     "test checkpoints mid-epoch).  Default: 0."},
    {"images", 0, OPT_IMAGES, NULL,
     "Instead of the epochs: decode every image of the decode= variables "
     "as the loader would (its decode options and threads; the ranks share "
     "the samples) and name each one that fails; exits 3 when one does "
     "(verify_images.c, docs/images.md)."},
    {"max-errors", 1, OPT_MAX_ERRORS, "N",
     "With --images: name the first N bad images in sample order (all are "
     "counted).  Default: " VERIFY_MAX_ERRORS_DEFAULT "."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_verify = {
    .name = "verify",
    .args = "DATASET [--epochs K] [--json] [--state FILE] [--compute-ms X] "
            "[--images [--max-errors N]] [loader options]",
    .summary = "check batch counts, exactly-once, content, determinism",
    .description =
        "Run epochs 0..K-1, each twice, and check: equal batch counts on "
        "every rank; every sample served exactly once as the tail option "
        "promises; the content of every element for datasets written by "
        "'ferry gen' (or mem: specs, or every cell of a 'ferry gen --anndata' "
        "file); identical batches when an epoch is "
        "run again; different orders in different epochs (a warning); at "
        "least 4 distinct chunks per batch on average (a warning); with "
        "weights, balance or a mix, the draws' observed shares against the "
        "requested ones instead of exactly-once.  "
        "Prints PASS/FAIL per check and a summary; exits 0 when all hold, 3 "
        "when one failed, 1 on a library error, 75 when it saved a "
        "checkpoint to --state FILE on the checkpoint signal (run it again, "
        "with any number of ranks, to finish).  The batches are read on the "
        "host (device=auto means cpu here).  With --images (and decode=), "
        "check the dataset's images instead: every one decoded, each bad one "
        "named with its file, variable, sample, row and the decoder's "
        "message.",
    .loader_options = 1,
    .opts = verify_opts,
    .run = run_verify,
};

void verify_result(report *rep, int check, int res, int64_t epoch,
                   const char *fmt, ...) {
  char msg[2 * MSG_LEN], line[3 * MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (epoch >= 0)
    snprintf(line, sizeof line, "%-4s %-12s epoch %" PRId64 ": %s",
             verify_res_names[res], verify_check_names[check], epoch, msg);
  else
    snprintf(line, sizeof line, "%-4s %-12s %s", verify_res_names[res],
             verify_check_names[check], msg);
  if (res > rep->worst[check])
    rep->worst[check] = res;
  rep->counts[res]++;
  if (!rep->json) {
    printf("%s\n", line);
    fflush(stdout);
    return;
  }
  if (rep->nlines == rep->cap) {
    int cap = rep->cap ? 2 * rep->cap : 32;
    char **grown = realloc(rep->lines, (size_t)cap * sizeof *grown);
    if (grown == NULL)
      return; /* the tally above still counts it */
    rep->lines = grown;
    rep->cap = cap;
  }
  if ((rep->lines[rep->nlines] = strdup(line)) != NULL)
    rep->nlines++;
}

/* The first message of the lowest rank that has one, onto rank 0's out. */
void verify_first_message(const tool_ctx *ctx, int has, const char *msg,
                          char *out) {
  int cand = has ? ctx->rank : INT_MAX, lowest = INT_MAX;
  MPI_Allreduce(&cand, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  out[0] = '\0';
  if (lowest == INT_MAX)
    return;
  if (lowest == 0) {
    if (ctx->rank == 0)
      snprintf(out, MSG_LEN, "%s", msg);
  } else if (ctx->rank == lowest) {
    MPI_Send(msg, MSG_LEN, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
  } else if (ctx->rank == 0) {
    MPI_Recv(out, MSG_LEN, MPI_CHAR, lowest, 0, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    out[MSG_LEN - 1] = '\0';
  }
}

int64_t verify_sum_i64(int64_t v) {
  int64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

void verify_minmax_i64(int64_t v, int64_t *mn, int64_t *mx) {
  MPI_Allreduce(&v, mn, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, mx, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
}

/* A fast 64-bit hash, compared only with itself between two runs. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
    h ^= h >> 32;
  }
  for (; n > 0; n--, b++)
    h = (h ^ *b) * UINT64_C(0x100000001b3);
  return h;
}

/* ---- Content: does the dataset encode its indices? --------------------- */

/* Rank 0: the directory where `ferry gen` would have put FERRY_GEN for this
 * dataset string: the directory itself, the directory of a .npy file, or
 * the directory above the first wildcard of a glob. */
static int marker_dir(const char *spec, char *dir, size_t len) {
  struct stat st;
  if (spec[0] == '@')
    return -1;
  size_t glob = strcspn(spec, "*?[");
  if (spec[glob] == '\0' && stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(dir, len, "%s", spec);
    return 0;
  }
  size_t slash = glob;
  while (slash > 0 && spec[slash - 1] != '/')
    slash--;
  if (slash == 0) {
    snprintf(dir, len, ".");
    return 0;
  }
  snprintf(dir, len, "%.*s", (int)(slash - 1), spec);
  if (dir[0] == '\0')
    snprintf(dir, len, "/");
  return 0;
}

static int decide_content(const tool_ctx *ctx, const ferry_loader *L,
                          const setup *su, char *why, size_t len) {
  /* packed rows: the corpus's documents are the generated samples */
  int64_t samples_want = su->pack ? su->pi.documents : ferry_num_samples(L);
  int on = 0;
  if (strncmp(ctx->target, "mem:", 4) == 0) {
    on = 1;
    snprintf(why, len, "mem: dataset");
  } else if (ctx->rank == 0) {
    char dir[4096], path[4200];
    FILE *f = NULL;
    if (ferry_mix_count(L) > 0) {
      snprintf(why, len,
               "a mix of datasets; content is checked for one 'ferry gen' "
               "directory or a mem: spec");
    } else if (marker_dir(ctx->target, dir, sizeof dir) != 0) {
      snprintf(why, len,
               "a list dataset; content is checked for 'ferry gen' "
               "directories and mem: specs");
    } else {
      snprintf(path, sizeof path, "%s/FERRY_GEN", dir);
      f = fopen(path, "r");
      if (f == NULL)
        snprintf(why, len, "no %.512s: not written by 'ferry gen'", path);
    }
    if (f != NULL) {
      char text[65536];
      size_t got = fread(text, 1, sizeof text - 1, f);
      text[got] = '\0';
      fclose(f);
      const char *s = strstr(text, "\"samples\":");
      long long samples = -1;
      if (s == NULL || sscanf(s + 10, "%lld", &samples) != 1)
        snprintf(why, len, "%.512s has no sample count", path);
      else if (samples != samples_want)
        snprintf(why, len,
                 "%.512s is for %lld samples, the dataset has %" PRId64
                 " (a part of a generated dataset)",
                 path, samples, samples_want);
      else {
        on = 1;
        snprintf(why, len, "written by 'ferry gen' (%.512s)", path);
      }
    }
  }
  MPI_Bcast(&on, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return on;
}

/* ---- Running an epoch ---------------------------------------------------- */

static int grow(void **p, int64_t *cap, int64_t need, size_t elsize,
                int narrays, void **q) {
  if (need <= *cap)
    return 0;
  int64_t c = need * 2 + 64;
  void *a = realloc(*p, (size_t)c * elsize);
  if (a == NULL)
    return -1;
  *p = a;
  if (narrays > 1) {
    void *b = realloc(*q, (size_t)c * elsize);
    if (b == NULL)
      return -1;
    *q = b;
  }
  *cap = c;
  return 0;
}

static void check_batch(const setup *su, const ferry_batch *b, int64_t epoch,
                        int64_t expect_index, int nvars, epoch_run *run) {
  char msg[MSG_LEN] = "";
  int64_t pads = 0;
  if (b->epoch != epoch || b->index != expect_index)
    snprintf(msg, sizeof msg,
             "batch %" PRId64 " of epoch %" PRId64 " came as batch %" PRId64
             " of epoch %" PRId64,
             expect_index, epoch, b->index, b->epoch);
  else if (b->size < 0 || b->size > su->batch_size)
    snprintf(msg, sizeof msg,
             "batch %" PRId64 " holds %" PRId64
             " samples, batch_size is %" PRId64,
             b->index, b->size, su->batch_size);
  else if (b->nvars != nvars)
    snprintf(msg, sizeof msg,
             "batch %" PRId64 " has %d variables, the "
             "dataset %d",
             b->index, b->nvars, nvars);
  else if (b->size > 0 && (b->sample_ids == NULL || b->padded == NULL))
    snprintf(msg, sizeof msg, "batch %" PRId64 " has no sample ids", b->index);
  if (msg[0] == '\0') {
    for (int64_t j = 0; j < b->size; j++)
      pads += b->padded[j] != 0;
    if (pads != b->num_padded)
      snprintf(msg, sizeof msg,
               "batch %" PRId64 " says %" PRId64
               " padded samples but flags %" PRId64,
               b->index, b->num_padded, pads);
  }
  for (int v = 0; msg[0] == '\0' && v < nvars; v++) {
    const ferry_tensor *t = &b->vars[v];
    const ferry_var_info *vi = &su->vars[v];
    /* a ragged variable: nvalues rows, its offsets from 0 up to them */
    /* ragged: nvalues rows, offsets from 0 up to them; padded (the pad
     * option): [size, W, ...], lengths within W */
    int padded = vi->ragged && t->lengths;
    int64_t rows = padded       ? b->size * t->shape[1]
                   : vi->ragged ? t->nvalues
                                : b->size;
    int bad_offsets = vi->ragged && !padded &&
                      (!t->offsets || t->offsets[0] != 0 ||
                       t->offsets[b->size] != t->nvalues);
    for (int64_t j = 0; vi->ragged && !padded && !bad_offsets && j < b->size;
         j++)
      bad_offsets = t->offsets[j + 1] < t->offsets[j] ||
                    t->offsets[j + 1] - t->offsets[j] > t->max_len;
    for (int64_t j = 0; padded && !bad_offsets && j < b->size; j++)
      bad_offsets = t->lengths[j] < 0 || t->lengths[j] > t->shape[1] ||
                    t->lengths[j] > t->max_len;
    /* offsets_dtype=int32: the int32 copy, equal; a group: one array */
    int bad32 = vi->ragged && !padded && su->int32 && !t->offsets32;
    for (int64_t j = 0; !bad32 && !bad_offsets && t->offsets32 && j <= b->size;
         j++)
      bad32 = t->offsets32[j] != t->offsets[j];
    int ungrouped = vi->ragged && vi->offsets_of >= 0 && vi->offsets_of != v &&
                    vi->offsets_of < b->nvars && !padded &&
                    t->offsets != b->vars[vi->offsets_of].offsets;
    if (bad_offsets)
      snprintf(msg, sizeof msg,
               "batch %" PRId64 " variable '%s': its offsets do not run "
               "from 0 to nvalues %" PRId64 " in steps of at most max_len "
               "%" PRId64,
               b->index, t->name, t->nvalues, t->max_len);
    else if (bad32)
      snprintf(msg, sizeof msg,
               "batch %" PRId64 " variable '%s': offsets_dtype=int32, but "
               "its int32 offsets are %s",
               b->index, t->name, t->offsets32 ? "not its offsets" : "NULL");
    else if (ungrouped)
      snprintf(msg, sizeof msg,
               "batch %" PRId64 " variable '%s': its lengths are those of "
               "'%s' in every sample, but it does not share its offsets",
               b->index, t->name, b->vars[vi->offsets_of].name);
    else if (strcmp(t->name, vi->name) != 0 || t->dtype != vi->dtype ||
             t->row_bytes != vi->row_bytes ||
             t->shape[0] != (padded ? b->size : rows) ||
             t->nbytes != (size_t)rows * vi->row_bytes ||
             (t->nbytes > 0 && t->data == NULL))
      snprintf(msg, sizeof msg,
               "batch %" PRId64 " variable %d ('%s' %s, "
               "%" PRId64 " rows, %zu bytes) does not match '%s' %s with %zu "
               "bytes per row",
               b->index, v, t->name, ferry_dtype_name(t->dtype), t->shape[0],
               t->nbytes, vi->name, ferry_dtype_name(vi->dtype), vi->row_bytes);
  }
  if (msg[0] != '\0') {
    if (run->malformed++ == 0)
      snprintf(run->malformed_msg, MSG_LEN, "%s", msg);
  }
}

static void check_content(const setup *su, const ferry_batch *b, int64_t epoch,
                          epoch_run *run) {
  for (int v = 0; v < b->nvars && v < su->nvars; v++) {
    const ferry_tensor *t = &b->vars[v];
    size_t rb = su->vars[v].row_bytes, el = ferry_dtype_size(t->dtype);
    if (rb == 0 || el == 0 || t->row_bytes != rb || t->data == NULL)
      continue;
    for (int64_t j = 0; j < b->size; j++) {
      int64_t id = b->sample_ids[j];
      if (id < 0 || id >= su->n)
        continue; /* exactly-once reports it */
      /* a ragged sample (ferry gen --format megatron): element k of its
       * values is (id + k) mod M, as one row of len * row elements */
      size_t at = t->offsets   ? (size_t)t->offsets[j]
                  : t->lengths ? (size_t)j * (size_t)t->shape[1]
                               : (size_t)j;
      size_t n = t->offsets   ? (size_t)(t->offsets[j + 1] - t->offsets[j]) * rb
                 : t->lengths ? (size_t)t->lengths[j] * rb
                              : rb;
      if (n == 0 || n > su->expect_bytes)
        continue; /* the layout check reports a bad length */
      const unsigned char *got = (const unsigned char *)t->data + at * rb;
      tool_fill_rows(t->dtype, id, 1, (int64_t)(n / el), su->expect);
      run->checked += v == 0;
      if (memcmp(got, su->expect, n) == 0)
        continue;
      if (run->bad_values++ > 0)
        continue;
      size_t k = 0;
      while (k + 1 < n / el &&
             memcmp(got + k * el, su->expect + k * el, el) == 0)
        k++;
      char want[64], have[64];
      tool_format_value(t->dtype, su->expect + k * el, want, sizeof want);
      tool_format_value(t->dtype, got + k * el, have, sizeof have);
      snprintf(run->content_msg, MSG_LEN,
               "epoch %" PRId64 " batch %" PRId64 " sample %" PRId64
               " variable '%s' element %zu: expected %s, "
               "got %s",
               epoch, b->index, id, t->name, k, want, have);
    }
  }
}

/* Run epoch e to its end.  Returns 0 or an exit status (a library error,
 * the same on every rank). */
static void sleep_ms(double ms) {
  if (ms <= 0)
    return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int64_t ns = (int64_t)(ms * 1e6) + t.tv_nsec;
  t.tv_sec += (time_t)(ns / 1000000000);
  t.tv_nsec = (long)(ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
    ; /* EINTR (the checkpoint signal): sleep the rest */
}

/* Run epoch e to its end, or with --state until a checkpoint is requested
 * (*ckpt set).  started: the epoch is already set (tool_state_begin).
 * Returns 0 or an exit status (a library error, the same on every rank). */
static int run_epoch(tool_ctx *ctx, ferry_loader *L, const setup *su, int64_t e,
                     int first_pass, epoch_run *run, int started,
                     const char *state, double compute_ms, int *ckpt) {
  int rc = started ? 0 : ferry_set_epoch(L, e);
  if (rc != 0)
    return tool_lib_error(ctx, L, rc);
  if ((rc = ferry_epoch_info_get(L, &run->info)) != 0)
    tool_local_fatal(ctx, L, "ferry_epoch_info_get", rc);
  run->num_batches = ferry_num_batches(L);
  int nvars = ferry_num_vars(L);
  for (;;) {
    ferry_batch *b = NULL;
    rc = ferry_next(L, &b);
    if (rc == FERRY_END)
      break;
    if (rc != 0) /* collective: every rank fails at the same batch */
      return tool_lib_error(ctx, L, rc);
    if (grow((void **)&run->hash, &run->cap_hash, run->received + 1,
             sizeof(uint64_t), 2, (void **)&run->sizes) != 0)
      tool_oom(ctx, (size_t)(2 * (run->received + 1) + 64) * sizeof(uint64_t),
               "the hashes of %lld batches of dataset %s",
               (long long)run->received + 1, ctx->target);
    int64_t before = run->malformed;
    check_batch(su, b, e, run->info.first_batch + run->received, nvars, run);
    for (int v = 0; su->max_tokens && v < b->nvars; v++)
      if (b->vars[v].offsets || b->vars[v].lengths) { /* the first ragged */
        if (b->vars[v].nvalues > su->max_tokens && run->malformed++ == 0)
          snprintf(run->malformed_msg, MSG_LEN,
                   "batch %" PRId64 " holds %" PRId64 " rows of variable "
                   "'%s', more than max_tokens=%" PRId64,
                   run->received, b->vars[v].nvalues, b->vars[v].name,
                   su->max_tokens);
        break;
      }
    int ok = run->malformed == before;
    uint64_t h =
        hash_bytes(UINT64_C(0xcbf29ce484222325), &b->index, sizeof b->index);
    h = hash_bytes(h, &b->size, sizeof b->size);
    if (ok && b->size > 0) {
      h = hash_bytes(h, b->sample_ids, (size_t)b->size * sizeof(int64_t));
      h = hash_bytes(h, b->padded, (size_t)b->size);
      for (int v = 0; v < b->nvars; v++)
        h = hash_bytes(h, b->vars[v].data, b->vars[v].nbytes);
    }
    run->hash[run->received] = h;
    run->sizes[run->received] = b->size;
    if (first_pass && ok && b->size > 0) {
      if (grow((void **)&run->ids, &run->cap_ids, run->nids + b->size,
               sizeof(int64_t), 2, (void **)&run->padded) != 0)
        tool_oom(ctx,
                 (size_t)(2 * (run->nids + b->size) + 64) * sizeof(int64_t),
                 "the ids of %lld samples of dataset %s",
                 (long long)(run->nids + b->size), ctx->target);
      for (int64_t j = 0; j < b->size; j++) {
        run->ids[run->nids] = b->sample_ids[j];
        run->padded[run->nids++] = b->padded[j] != 0;
      }
      if (su->nsparse)
        verify_sparse_batch(su, b, run);
      if (su->pack && verify_pack_batch(su, b, run) != 0)
        tool_oom(ctx, (size_t)su->pi.documents * 24,
                 "the documents' counts of %s", ctx->target);
      else if (su->content && su->adgen)
        verify_anndata_batch(su, b, e, run);
      else if (su->content && !su->pack)
        check_content(su, b, e, run);
    }
    run->received++;
    if ((rc = ferry_release(L, b)) != 0)
      tool_local_fatal(ctx, L, "ferry_release", rc);
    sleep_ms(compute_ms);
    if (state && ferry_checkpoint_requested(L)) {
      *ckpt = 1; /* every rank, after the same batch */
      return 0;
    }
  }
  /* Batches are full, except with tail=partial: there a rank's batches
   * are full, then at most one short one, then empty ones (a rank with a
   * smaller share still gets as many batches as the others). */
  int64_t short_at = -1;
  for (int64_t i = 0; i < run->received; i++) {
    int64_t size = run->sizes[i];
    int ok = su->tail == TAIL_PARTIAL
                 ? (short_at < 0 ? size <= su->batch_size : size == 0)
                 : size == su->batch_size;
    if (su->tail == TAIL_PARTIAL && short_at < 0 && size < su->batch_size &&
        !su->max_tokens)
      short_at = i;
    if (su->max_tokens) { /* 1 to batch_size samples, then empty ones */
      ok = short_at < 0 ? size <= su->batch_size : size == 0;
      short_at = short_at < 0 && size == 0 ? i : short_at;
    }
    if (ok)
      continue;
    if (run->malformed++ == 0)
      snprintf(run->malformed_msg, MSG_LEN,
               "batch %" PRId64 " of %" PRId64 " holds %" PRId64
               " samples, batch_size is %" PRId64 "%s",
               i, run->received, size, su->batch_size,
               su->max_tokens ? " (max_tokens: at most batch_size, and only "
                                "empty ones after an empty one)"
               : su->tail == TAIL_PARTIAL ? " (after a short batch only empty "
                                            "ones may follow)"
                                          : "");
  }
  if (run->num_batches != run->info.num_batches && run->malformed++ == 0)
    snprintf(run->malformed_msg, MSG_LEN,
             "ferry_num_batches says %" PRId64
             ", ferry_epoch_info_get %" PRId64,
             run->num_batches, run->info.num_batches);
  return 0;
}

static void epoch_run_reset(epoch_run *r) {
  verify_pack_free(r);
  free(r->hash);
  free(r->sizes);
  free(r->ids);
  free(r->padded);
  memset(r, 0, sizeof *r);
}

/* ---- --state: the ids earlier runs of an epoch served ------------------- */

/* Rank 0: the ids FILE.served holds for epoch e (none when it is missing or
 * for another epoch).  Returns the count, -1 when out of memory (*want:
 * the bytes asked for). */
static int64_t served_read(const char *state, int64_t e, int64_t **out,
                           size_t *want) {
  char path[4200];
  *out = NULL;
  snprintf(path, sizeof path, "%s.served", state);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  long long fe = -1, id;
  int64_t n = 0, cap = 0;
  if (fscanf(f, "# ferry verify --state: epoch %lld%*[^\n]", &fe) != 1 ||
      fe != e) {
    fclose(f);
    return 0;
  }
  while (fscanf(f, "%lld", &id) == 1) {
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      int64_t *t = realloc(*out, (size_t)cap * sizeof *t);
      if (t == NULL) {
        *want = (size_t)cap * sizeof *t;
        fclose(f);
        free(*out);
        *out = NULL;
        return -1;
      }
      *out = t;
    }
    (*out)[n++] = id;
  }
  fclose(f);
  return n;
}

/* Rank 0: FILE.served = the earlier runs' ids of epoch e, then this run's
 * real (not padded) ones; written under a temporary name and renamed. */
static int served_write(const char *state, int64_t e, const int64_t *prev,
                        int64_t nprev, const int64_t *ids, const int64_t *pad,
                        int64_t n) {
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s.served", state);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return -1;
  int64_t real = nprev;
  for (int64_t i = 0; i < n; i++)
    real += !pad[i];
  fprintf(f, "# ferry verify --state: epoch %" PRId64 ", %" PRId64 " ids\n", e,
          real);
  for (int64_t i = 0; i < nprev; i++)
    fprintf(f, "%" PRId64 "\n", prev[i]);
  for (int64_t i = 0; i < n; i++)
    if (!pad[i])
      fprintf(f, "%" PRId64 "\n", ids[i]);
  if (fclose(f) != 0 || rename(tmp, path) != 0)
    return -1;
  return 0;
}

/* ---- The run --------------------------------------------------------------
 */

/* verify's own options. */
typedef struct verify_cfg {
  int64_t epochs;
  int json;
  const char *state; /* --state FILE, or NULL */
  double compute_ms;
  uint64_t max_memory; /* --max-memory: the arrays' bound */
  int images;          /* --images: verify_images.c instead of the epochs */
  int64_t max_errors;  /* --max-errors N */
} verify_cfg;

/* Returns 0, or TOOL_EXIT_USAGE after a message. */
static int verify_args(const tool_ctx *ctx, verify_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->epochs = 2;
  cfg->max_errors = atoi(VERIFY_MAX_ERRORS_DEFAULT);
  (void)tool_parse_size(TOOL_MAX_MEMORY_DEFAULT, &cfg->max_memory);
  for (int i = 0; i < ctx->nargs; i++) {
    if (ctx->args[i].id == OPT_STATE)
      cfg->state = ctx->args[i].value;
    else if (ctx->args[i].id == OPT_COMPUTE_MS &&
             tool_parse_double(ctx->args[i].value, &cfg->compute_ms) != 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --compute-ms: expected a "
                              "number >= 0",
                              ctx->args[i].value);
    else if (ctx->args[i].id == OPT_JSON)
      cfg->json = 1;
    else if (ctx->args[i].id == OPT_IMAGES)
      cfg->images = 1;
    else if (ctx->args[i].id == OPT_MAX_ERRORS &&
             tool_parse_i64(ctx->args[i].value, 0, 1 << 20, &cfg->max_errors) !=
                 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --max-errors: expected an "
                              "integer in [0, 1048576]",
                              ctx->args[i].value);
    else if (ctx->args[i].id == OPT_MAX_MEMORY &&
             tool_max_memory_arg(ctx, ctx->args[i].value, &cfg->max_memory))
      return TOOL_EXIT_USAGE;
    else if (ctx->args[i].id == OPT_EPOCHS &&
             tool_parse_i64(ctx->args[i].value, 1, INT64_C(1) << 40,
                            &cfg->epochs) != 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --epochs: expected an "
                              "integer >= 1",
                              ctx->args[i].value);
  }
  return 0;
}

/* What the epochs need to know, from the loader and the options.
 * COLLECTIVE (decide_content). */
static void setup_init(tool_ctx *ctx, ferry_loader *L, int adgen_found,
                       setup *su) {
  char buf[256];
  su->n = ferry_num_samples(L);
  su->nvars = ferry_num_vars(L);
  su->vars = calloc((size_t)(su->nvars > 0 ? su->nvars : 1), sizeof *su->vars);
  size_t max_row = 1;
  for (int v = 0; su->vars && v < su->nvars; v++) {
    ferry_var_info_get(L, v, &su->vars[v]);
    size_t rows = su->vars[v].ragged ? (size_t)su->vars[v].max_len : 1;
    if (su->vars[v].row_bytes * rows > max_row)
      max_row = su->vars[v].row_bytes * rows;
  }
  su->expect_bytes = max_row;
  su->expect = malloc(max_row);
  if (su->vars == NULL || su->expect == NULL)
    tool_oom(ctx,
             (size_t)(su->nvars > 0 ? su->nvars : 1) * sizeof *su->vars +
                 max_row,
             "the %d variables of dataset %s", su->nvars, ctx->target);
  tool_parse_i64(tool_option(ctx, "batch_size", buf, sizeof buf), 1, INT64_MAX,
                 &su->batch_size);
  tool_parse_i64(tool_option(ctx, "max_tokens", buf, sizeof buf), 0, INT64_MAX,
                 &su->max_tokens);
  su->int32 =
      !strcmp(tool_option(ctx, "offsets_dtype", buf, sizeof buf), "int32");
  tool_option(ctx, "tail", su->tail_name, sizeof su->tail_name);
  tool_option(ctx, "shuffle", su->shuffle_name, sizeof su->shuffle_name);
  su->tail = strcmp(su->tail_name, "pad") == 0       ? TAIL_PAD
             : strcmp(su->tail_name, "partial") == 0 ? TAIL_PARTIAL
                                                     : TAIL_DROP;
  su->shuffled = strcmp(su->shuffle_name, "none") != 0;
  verify_pack_setup(ctx, L, su);
  verify_sparse_setup(su);
  int ad = verify_anndata_setup(ctx, L, adgen_found, su);
  su->content =
      ad ? ad > 0 : decide_content(ctx, L, su, su->why, sizeof su->why);
  ferry_sampling_info_get(L, &su->si);
}

/* Everything run_verify keeps from one epoch to the next. */
typedef struct verify_run {
  setup su;
  report rep;
  epoch_run r1, r2;     /* the epoch and its rerun (for determinism)     */
  int64_t *ids, *pad;   /* the epoch's ids and padding flags, on rank 0  */
  int64_t *prev, nprev; /* rank 0: the ids earlier runs of the first
                           epoch served (--state FILE.served)             */
  uint64_t prev_order;  /* rank 0: hash of the previous epoch's order    */
  int prev_valid;
} verify_run;

/*
 * The checkpoint was requested during epoch e: save the position first (the
 * commit point), then the ids served (prev: the earlier runs', nprev of
 * them) to FILE.served.  Returns TOOL_EXIT_REQUEUE, or an exit status.
 */
static int verify_checkpoint(tool_ctx *ctx, ferry_loader *L,
                             const verify_cfg *cfg, verify_run *v, int64_t e,
                             const int64_t *prev, int64_t nprev) {
  int st = tool_state_save(ctx, L, cfg->state, v->r1.received, cfg->json);
  if (st != 0)
    return st;
  free(v->ids);
  free(v->pad);
  v->ids = v->pad = NULL;
  int64_t t1 = tool_gather_i64(v->r1.ids, v->r1.nids, &v->ids, NULL);
  int64_t t2 = tool_gather_i64(v->r1.padded, v->r1.nids, &v->pad, NULL);
  int ok = t1 >= 0 && t2 >= 0;
  if (ok && ctx->rank == 0)
    ok = served_write(cfg->state, e, prev, nprev, v->ids, v->pad, t1) == 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    tool_error(ctx, "cannot write %s.served (the ids served so far)",
               cfg->state);
    return TOOL_EXIT_ERROR;
  }
  return TOOL_EXIT_REQUEUE;
}

/* --state after a whole epoch e: FILE.served gets its ids (total of them,
 * gathered: rank 0 has them); after the last epoch, FILE its end.
 * Returns 0 or an exit status. */
static int verify_epoch_saved(tool_ctx *ctx, ferry_loader *L,
                              const verify_cfg *cfg, verify_run *v, int64_t e,
                              const int64_t *prev, int64_t nprev, int64_t total,
                              int gathered) {
  int ok = gathered;
  if (ok && ctx->rank == 0)
    ok = served_write(cfg->state, e, prev, nprev, v->ids, v->pad, total) == 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok)
    tool_error(ctx, "warning: cannot write %s.served", cfg->state);
  /* the end of the last epoch: a rerun has nothing left to do */
  if (e + 1 == cfg->epochs)
    return tool_state_save(ctx, L, cfg->state, v->r1.received, 1);
  return 0;
}

/* Content for epoch e.  COLLECTIVE. */
static void check_content_all(const tool_ctx *ctx, report *rep, const setup *su,
                              int64_t e, const epoch_run *r) {
  char msg[MSG_LEN];
  int64_t bad = verify_sum_i64(r->bad_values),
          checked = verify_sum_i64(r->checked);
  verify_first_message(ctx, r->bad_values > 0, r->content_msg, msg);
  if (ctx->rank != 0)
    return;
  if (su->pack)
    verify_result(rep, CK_CONTENT, RES_SKIP, e,
                  "packed rows: the tokens check compares every token with "
                  "its document's");
  else if (!su->content)
    verify_result(rep, CK_CONTENT, RES_SKIP, e, "%s", su->why);
  else if (su->adgen && bad == 0 && !su->ad_msg[0])
    verify_result(rep, CK_CONTENT, RES_PASS, e, "%" PRId64 " cells checked: %s",
                  checked, su->why);
  else if (su->adgen && bad == 0)
    verify_result(rep, CK_CONTENT, RES_FAIL, e, "%s", su->ad_msg);
  else if (su->adgen)
    verify_result(rep, CK_CONTENT, RES_FAIL, e,
                  "%" PRId64 " values differ from the formula of 'ferry "
                  "gen --anndata'; first: %s",
                  bad, msg);
  else if (bad == 0)
    verify_result(rep, CK_CONTENT, RES_PASS, e,
                  "%" PRId64 " samples x %d "
                  "variables hold the values of their index",
                  checked, su->nvars);
  else
    verify_result(rep, CK_CONTENT, RES_FAIL, e,
                  "%" PRId64 " sample rows differ "
                  "from the values of their index; first: %s",
                  bad, msg);
}

/* Determinism for epoch e: r1 and its rerun r2 (once: --state, no rerun).
 * COLLECTIVE. */
static void check_determinism(const tool_ctx *ctx, report *rep, int64_t e,
                              const epoch_run *r1, const epoch_run *r2,
                              int once) {
  int64_t differ = 0;
  char dmsg[MSG_LEN] = "", msg[MSG_LEN];
  if (once) {
    /* one run per epoch: nothing to compare */
  } else if (r1->received != r2->received) {
    differ = 1;
    snprintf(dmsg, sizeof dmsg,
             "rank %d: %" PRId64 " batches, then %" PRId64 " when rerun",
             ctx->rank, r1->received, r2->received);
  }
  for (int64_t i = 0; i < r1->received && i < r2->received; i++)
    if (r1->hash[i] != r2->hash[i] && differ++ == 0)
      snprintf(dmsg, sizeof dmsg,
               "rank %d batch %" PRId64 " differs when "
               "the epoch is run again",
               ctx->rank, i);
  int64_t differ_all = verify_sum_i64(differ);
  verify_first_message(ctx, differ > 0, dmsg, msg);
  if (ctx->rank != 0)
    return;
  if (once)
    verify_result(rep, CK_DETERMINISM, RES_SKIP, e,
                  "--state runs each epoch once");
  else if (differ_all == 0)
    verify_result(rep, CK_DETERMINISM, RES_PASS, e,
                  "the rerun gave identical "
                  "batches (ids, padding and data)");
  else
    verify_result(rep, CK_DETERMINISM, RES_FAIL, e,
                  "%" PRId64 " batches differ "
                  "in the rerun; first: %s",
                  differ_all, msg);
}

/* Order for epoch e against the epoch before (total ids gathered on rank 0
 * when gathered; resumed: this epoch was served in more than one run).
 * COLLECTIVE. */
static void check_order(const tool_ctx *ctx, verify_run *v, int64_t e,
                        int64_t total, int gathered, int resumed) {
  report *rep = &v->rep;
  int64_t pieces = verify_sum_i64(v->r1.info.num_chunks);
  if (ctx->rank != 0 || !gathered)
    return;
  uint64_t h = hash_bytes(1, v->ids, (size_t)total * sizeof *v->ids);
  h = hash_bytes(h, v->pad, (size_t)total * sizeof *v->pad);
  if (resumed || !v->prev_valid) {
    if (e > 0)
      verify_result(
          rep, CK_ORDER, RES_SKIP, e,
          "the previous or this epoch was served in more than one run");
  } else {
    if (!v->su.shuffled)
      verify_result(rep, CK_ORDER, RES_SKIP, e,
                    "shuffle=none: the same order "
                    "every epoch is expected");
    else if (pieces <= 1)
      verify_result(rep, CK_ORDER, RES_SKIP, e,
                    "the epoch has one piece: "
                    "nothing to permute");
    else if (h == v->prev_order)
      verify_result(
          rep, CK_ORDER, RES_WARN, e,
          "the same order as epoch %" PRId64 " although shuffle is on", e - 1);
    else
      verify_result(rep, CK_ORDER, RES_PASS, e,
                    "the order differs from epoch %" PRId64, e - 1);
  }
  v->prev_order = h;
  v->prev_valid = !resumed;
}

/*
 * Epoch e, checked (resumed: it continues an earlier run whose ids are
 * v->prev; started: tool_state_begin set it already).  Returns 0, or an
 * exit status the same on every rank: a library error, TOOL_EXIT_REQUEUE
 * after a checkpoint was saved, or a failed save.
 */
static int verify_epoch(tool_ctx *ctx, ferry_loader *L, const verify_cfg *cfg,
                        verify_run *v, int64_t e, int started, int resumed) {
  epoch_run_reset(&v->r1);
  epoch_run_reset(&v->r2);
  const int64_t *prev = resumed ? v->prev : NULL;
  int64_t nprev = resumed ? v->nprev : 0;
  int ckpt = 0, st;
  if ((st = run_epoch(ctx, L, &v->su, e, 1, &v->r1, started, cfg->state,
                      cfg->compute_ms, &ckpt)) != 0)
    return st;
  if (ckpt)
    return verify_checkpoint(ctx, L, cfg, v, e, prev, nprev);
  if (!cfg->state &&
      (st = run_epoch(ctx, L, &v->su, e, 0, &v->r2, 0, NULL, 0, &ckpt)) != 0)
    return st;

  verify_check_batches(ctx, &v->rep, e, &v->r1);
  int64_t total = 0;
  int gathered = 0;
  free(v->ids);
  free(v->pad);
  verify_check_once(ctx, &v->rep, &v->su, e, &v->r1, prev, nprev, &v->ids,
                    &v->pad, &total, &gathered);
  if (cfg->state && (st = verify_epoch_saved(ctx, L, cfg, v, e, prev, nprev,
                                             total, gathered)) != 0)
    return st;
  if (v->su.si.mode && ctx->rank == 0 && gathered)
    verify_check_sampling(L, &v->rep, &v->su, e, v->ids, v->pad, total);
  check_content_all(ctx, &v->rep, &v->su, e, &v->r1);
  verify_check_tokens(ctx, &v->rep, &v->su, e, &v->r1);
  verify_check_sparse(ctx, &v->rep, &v->su, e, &v->r1);
  check_determinism(ctx, &v->rep, e, &v->r1, &v->r2, cfg->state != NULL);
  check_order(ctx, v, e, total, gathered, resumed);
  return 0;
}

/* Distinct chunks per batch in epoch 0's plan, averaged over every batch
 * of every rank: a warning below MIN_MIXING.  COLLECTIVE. */
#define MIN_MIXING 4
static void check_mixing(const tool_ctx *ctx, const ferry_loader *L,
                         verify_run *v) {
  int64_t *s = NULL, *c = NULL, *bs = NULL, nb = 0;
  double mine[2] = {0, 0}, all[2] = {0, 0}; /* sum of distinct, batches */
  int ok = ferry_plan_order(L, 0, ctx->size, ctx->rank, &s, &c, &bs, &nb) == 0;
  if (ok) {
    int *rk = calloc((size_t)(nb > 0 ? nb : 1), sizeof *rk);
    qm_order o = {bs[nb], s, nb, bs, rk};
    double mean = 0, mn = 0;
    ok = rk && qm_chunks_per_batch(&o, c, &mean, &mn) == 0;
    for (int64_t b = 0; ok && b < nb; b++)
      mine[1] += bs[b + 1] > bs[b];
    if (ok && mine[1] > 0)
      mine[0] = mean * mine[1];
    free(rk);
  }
  free(s);
  free(c);
  free(bs);
  ok = tool_all(ok);
  MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (ctx->rank != 0)
    return;
  report *rep = &v->rep;
  int64_t nchunks = ferry_num_chunks(L);
  double mean = all[1] > 0 ? all[0] / all[1] : 0;
  if (!ok)
    verify_result(rep, CK_MIXING, RES_SKIP, -1, "cannot plan epoch 0 here: %s",
                  ferry_last_error(NULL));
  else if (!v->su.shuffled)
    verify_result(rep, CK_MIXING, RES_SKIP, -1,
                  "shuffle=none: batches of neighbouring samples are expected");
  else if (v->su.batch_size < MIN_MIXING || nchunks < MIN_MIXING)
    verify_result(rep, CK_MIXING, RES_SKIP, -1,
                  "batch_size %" PRId64 " and %" PRId64
                  " chunks: fewer than %d "
                  "chunks could share a batch",
                  v->su.batch_size, nchunks, MIN_MIXING);
  else if (mean < MIN_MIXING)
    verify_result(
        rep, CK_MIXING, RES_WARN, -1,
        "the plan mixes %.2f distinct chunks per batch on average (fewer "
        "than %d): batches hold runs of neighbouring samples; raise "
        "shuffle_buffer, lower chunk_samples or use shuffle=block "
        "(ferry quality measures the order)",
        mean, MIN_MIXING);
  else
    verify_result(rep, CK_MIXING, RES_PASS, -1,
                  "the plan mixes %.2f distinct chunks per batch on average",
                  mean);
}

/* Rank 0: the summary (text or JSON).  Returns the verdict on every rank:
 * TOOL_EXIT_OK or TOOL_EXIT_VERIFY.  COLLECTIVE. */
static int verify_summary(const tool_ctx *ctx, const verify_cfg *cfg,
                          const verify_run *v) {
  const report *rep = &v->rep;
  int verdict = TOOL_EXIT_OK;
  if (ctx->rank == 0) {
    verdict = rep->counts[RES_FAIL] > 0 ? TOOL_EXIT_VERIFY : TOOL_EXIT_OK;
    if (cfg->json) {
      printf("{\"dataset\": ");
      tool_json_string(stdout, ctx->target);
      printf(", \"result\": \"%s\", \"ranks\": %d, \"epochs\": %" PRId64
             ", \"samples\": %" PRId64 ", \"batch_size\": %" PRId64
             ", \"tail\": \"%s\", \"checks\": {",
             verdict ? "fail" : "pass", ctx->size, cfg->epochs, v->su.n,
             v->su.batch_size, v->su.tail_name);
      for (int c = 0; c < CK_COUNT; c++)
        printf("%s\"%s\": \"%s\"", c ? ", " : "", verify_check_names[c],
               rep->worst[c] >= 0 ? verify_res_names[rep->worst[c]] : "SKIP");
      printf("}, \"failed\": %d, \"warnings\": %d, \"lines\": [",
             rep->counts[RES_FAIL], rep->counts[RES_WARN]);
      for (int i = 0; i < rep->nlines; i++) {
        printf("%s", i ? ", " : "");
        tool_json_string(stdout, rep->lines[i]);
      }
      printf("]}\n");
    } else {
      printf("summary:");
      for (int c = 0; c < CK_COUNT; c++)
        printf(" %s %s%s", verify_check_names[c],
               rep->worst[c] >= 0 ? verify_res_names[rep->worst[c]] : "SKIP",
               c + 1 < CK_COUNT ? "," : "\n");
      printf("ferry verify: %s (%d checks passed, %d failed, %d warnings, %d "
             "skipped)\n",
             verdict ? "FAIL" : "PASS", rep->counts[RES_PASS],
             rep->counts[RES_FAIL], rep->counts[RES_WARN],
             rep->counts[RES_SKIP]);
    }
    fflush(stdout);
  }
  MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return verdict;
}

/* The epochs, from --state FILE's position when it exists.  Returns 0 or
 * an exit status. */
static int verify_epochs(tool_ctx *ctx, ferry_loader *L, const verify_cfg *cfg,
                         verify_run *v) {
  int64_t e0 = 0;
  int resumed = 0, st;
  if (cfg->state &&
      (st = tool_state_begin(ctx, L, cfg->state, cfg->json, &e0, &resumed)))
    return st;
  size_t want = 0;
  if (resumed && ctx->rank == 0 &&
      (v->nprev = served_read(cfg->state, e0, &v->prev, &want)) < 0)
    tool_oom(ctx, want, "the ids %s.served holds", cfg->state);
  for (int64_t e = e0; e < cfg->epochs; e++) {
    int started = cfg->state != NULL && e == e0;
    if ((st = verify_epoch(ctx, L, cfg, v, e, started, resumed && e == e0)))
      return st;
  }
  if (ctx->rank == 0 && cfg->epochs < 2)
    verify_result(&v->rep, CK_ORDER, RES_SKIP, -1, "needs --epochs 2 or more");
  return 0;
}

/* The hashes line (rank 0), from the note an MDS scan with mds_hashes=check
 * leaves (backends/mds.c): PASS when it compared digests (a shard that
 * differs fails the open itself, naming the shard), SKIP when none it
 * computes is listed; no line for other datasets. */
static void check_hashes(const tool_ctx *ctx, const ferry_loader *L,
                         verify_run *v) {
  static const char mark[] = "mds_hashes=check: ";
  const char *n = ferry_dataset_notes(L), *at = n ? strstr(n, mark) : NULL;
  if (ctx->rank != 0 || !at)
    return;
  at += sizeof mark - 1;
  int len = (int)strcspn(at, ";");
  verify_result(&v->rep, CK_HASHES,
                strncmp(at, "digests ", 8) == 0 ? RES_PASS : RES_SKIP, -1,
                "%.*s", len, at);
}

static int run_verify(tool_ctx *ctx) {
  verify_cfg cfg;
  int st = verify_args(ctx, &cfg), rc;
  if (st != 0)
    return st;
  if ((st = tool_host_batches(ctx)) != TOOL_CONTINUE)
    return st;
  /* an MDS dataset's shard digests: checked at the open (mds_hashes=auto
   * is check here) */
  char hs[16];
  if (strcmp(tool_option(ctx, "mds_hashes", hs, sizeof hs), "auto") == 0)
    ferry_options_set(ctx->opts, "mds_hashes", "check");
  if (cfg.images)
    return verify_images(ctx, cfg.json, (int)cfg.max_errors);
  ferry_loader *L = NULL;
  /* a packing loader: every output, document_ids too (verify_pack.c) */
  char pk[64], vars[64];
  if (strcmp(tool_option(ctx, "pack", pk, sizeof pk), "none") != 0 &&
      !*tool_option(ctx, "vars", vars, sizeof vars))
    ferry_options_set(ctx->opts, "vars", VERIFY_PACK_VARS);
  adgen_params ad; /* a file of ferry gen --anndata: read before the open */
  int adgen_found = verify_anndata_probe(ctx, &ad);
  if ((st = tool_open(ctx, &L)) != 0)
    return st;
  /* bounded: refuse before anything per sample is held (issue 30) */
  if ((st = tool_memory_check(ctx, L,
                              "every rank's ids gathered for the "
                              "exactly-once check",
                              25, 72, cfg.max_memory)) != 0) {
    ferry_close(L);
    return st;
  }
  verify_run v;
  memset(&v, 0, sizeof v);
  v.rep.json = cfg.json;
  for (int c = 0; c < CK_COUNT; c++)
    v.rep.worst[c] = RES_NONE;
  v.su.ad = ad;
  setup_init(ctx, L, adgen_found, &v.su);
  if (ctx->rank == 0 && !cfg.json) {
    printf("ferry verify: %s, %d rank%s, epochs 0..%" PRId64 ", %" PRId64
           " samples, batch_size %" PRId64 ", shuffle %s, tail %s\n",
           ctx->target, ctx->size, ctx->size == 1 ? "" : "s", cfg.epochs - 1,
           v.su.n, v.su.batch_size, v.su.shuffle_name, v.su.tail_name);
    fflush(stdout);
  }
  check_hashes(ctx, L, &v);
  check_mixing(ctx, L, &v);
  if ((st = verify_epochs(ctx, L, &cfg, &v)) == 0)
    st = verify_summary(ctx, &cfg, &v);

  epoch_run_reset(&v.r1);
  epoch_run_reset(&v.r2);
  free(v.ids);
  free(v.pad);
  free(v.prev);
  free(v.su.vars);
  free(v.su.expect);
  for (int i = 0; i < v.rep.nlines; i++)
    free(v.rep.lines[i]);
  free(v.rep.lines);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
