/*
 * cmd_dump.c - `ferry dump DATASET --var NAME --epoch E`: run one epoch and
 * print every sample served, one line each, "rank batch global_index
 * first_value", where first_value is element 0 of that sample's row of
 * variable NAME (with --row-hash, a fifth field hashes the whole row).  Each
 * rank keeps fixed-size records of what it received and rank 0 gathers them
 * (MPI_Gatherv) and prints them in rank order, so the output is a deterministic
 * text that can be diffed between runs, world sizes and options, never the
 * interleaving of several ranks' stdout.
 */
#include "tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_VAR = 1, OPT_EPOCH, OPT_ROW_HASH };

static int run_dump(tool_ctx *ctx);

static const tool_opt dump_opts[] = {
    {"var", 1, OPT_VAR, "NAME",
     "Variable whose first element is printed.  Default: the first "
     "variable."},
    {"epoch", 1, OPT_EPOCH, "E", "Epoch to run (>= 0).  Default: 0."},
    {"row-hash", 0, OPT_ROW_HASH, NULL,
     "Add a fifth field, fnv=HEX: the FNV-1a 64-bit hash of the whole row's "
     "bytes as served (native byte order), so a test can check every "
     "element, not only the first."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_dump = {
    .name = "dump",
    .args = "DATASET [--var NAME] [--epoch E] [--row-hash] [loader options]",
    .summary = "print every sample served in an epoch, by rank and batch",
    .description =
        "Run epoch E and print one line per sample served: 'rank batch "
        "global_index first_value', rank 0's lines first, then rank 1's, and "
        "so on, each rank's in the order it received them.  first_value is "
        "the first element of the sample's row of variable NAME as a number: "
        "integers exactly, floats (float16 converted) with 17 significant "
        "digits, bool as 0 or 1; '-' when the row is empty.  The batches are "
        "read on the host (device=auto means cpu here).",
    .loader_options = 1,
    .opts = dump_opts,
    .run = run_dump,
};

/* One served sample: batch, global index, has a value, the value's bytes. */
enum { D_BATCH, D_SAMPLE, D_HAS, D_VALUE, D_HASH, D_FIELDS };

/* FNV-1a 64 of a row's bytes (tests/fixtures/dump_compare.py computes the
 * same from NumPy's row). */
static uint64_t fnv1a64(const unsigned char *p, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

/* The records of dump: growing array of D_FIELDS values per sample. */
typedef struct dump_recs {
  int64_t *recs, nrecs, cap;
} dump_recs;

/* Batch b's samples of variable vi (elements of elsize bytes) onto d. */
static void dump_batch(const tool_ctx *ctx, const ferry_batch *b, int vi,
                       size_t elsize, int row_hash, dump_recs *d) {
  if (d->nrecs + b->size > d->cap) {
    d->cap = (d->nrecs + b->size) * 2 + 64;
    int64_t *grown =
        realloc(d->recs, (size_t)d->cap * D_FIELDS * sizeof *d->recs);
    if (grown == NULL)
      tool_oom(ctx, (size_t)d->cap * D_FIELDS * sizeof *d->recs,
               "the records of %lld samples of dataset %s", (long long)d->cap,
               ctx->target);
    d->recs = grown;
  }
  const ferry_tensor *t = &b->vars[vi];
  for (int64_t j = 0; j < b->size; j++, d->nrecs++) {
    int64_t *r = d->recs + d->nrecs * D_FIELDS;
    r[D_BATCH] = b->index;
    r[D_SAMPLE] = b->sample_ids[j];
    r[D_HAS] = t->row_bytes >= elsize && elsize > 0;
    r[D_VALUE] = 0;
    const unsigned char *row =
        (const unsigned char *)t->data + (size_t)j * t->row_bytes;
    if (r[D_HAS])
      memcpy(&r[D_VALUE], row, elsize);
    r[D_HASH] = row_hash ? (int64_t)fnv1a64(row, t->row_bytes) : 0;
  }
}

/* Rank 0: every rank's records (all; counts[r] values for rank r), one
 * line per sample. */
static void dump_print(const tool_ctx *ctx, ferry_dtype dtype, int row_hash,
                       const int64_t *all, const int64_t *counts) {
  const int64_t *r = all;
  for (int rank = 0; rank < ctx->size; rank++)
    for (int64_t k = 0; k < counts[rank] / D_FIELDS; k++, r += D_FIELDS) {
      char val[64] = "-";
      if (r[D_HAS])
        tool_format_value(dtype, &r[D_VALUE], val, sizeof val);
      printf("%d %" PRId64 " %" PRId64 " %s", rank, r[D_BATCH], r[D_SAMPLE],
             val);
      if (row_hash)
        printf(" fnv=%016" PRIx64, (uint64_t)r[D_HASH]);
      printf("\n");
    }
  fflush(stdout);
}

static int run_dump(tool_ctx *ctx) {
  const char *var = NULL;
  int64_t epoch = 0;
  int row_hash = 0;
  for (int i = 0; i < ctx->nargs; i++) {
    if (ctx->args[i].id == OPT_ROW_HASH) {
      row_hash = 1;
    } else if (ctx->args[i].id == OPT_VAR) {
      var = ctx->args[i].value;
    } else if (ctx->args[i].id == OPT_EPOCH &&
               tool_parse_i64(ctx->args[i].value, 0, INT64_MAX, &epoch) != 0) {
      return tool_usage_error(ctx,
                              "bad value '%s' for --epoch: expected an "
                              "integer >= 0",
                              ctx->args[i].value);
    }
  }
  int st = tool_host_batches(ctx), rc;
  if (st != TOOL_CONTINUE)
    return st;
  ferry_loader *L = NULL;
  if ((st = tool_open(ctx, &L)) != 0)
    return st;
  dump_recs d = {NULL, 0, 0};
  int64_t *all = NULL, *counts = NULL;

  /* Every rank has the same manifest, so they all agree on the variable.
   * A leading '/' is accepted as everywhere else ("--vars /data/x"). */
  while (var && *var == '/')
    var++;
  int vi = -1;
  ferry_var_info vinfo;
  for (int i = 0; i < ferry_num_vars(L); i++)
    if (ferry_var_info_get(L, i, &vinfo) == 0 &&
        (var == NULL || strcmp(vinfo.name, var) == 0)) {
      vi = i;
      break;
    }
  if (vi < 0) {
    tool_error(ctx, "%s has no variable '%s'", ctx->target, var ? var : "");
    st = TOOL_EXIT_ERROR;
    goto cleanup;
  }
  size_t elsize = ferry_dtype_size(vinfo.dtype);

  if ((rc = ferry_set_epoch(L, epoch)) != 0) {
    st = tool_lib_error(ctx, L, rc);
    goto cleanup;
  }
  for (;;) {
    ferry_batch *b = NULL;
    rc = ferry_next(L, &b);
    if (rc == FERRY_END)
      break;
    if (rc != 0) { /* collective: every rank fails at the same batch */
      st = tool_lib_error(ctx, L, rc);
      goto cleanup;
    }
    dump_batch(ctx, b, vi, elsize, row_hash, &d);
    if ((rc = ferry_release(L, b)) != 0)
      tool_local_fatal(ctx, L, "ferry_release", rc);
  }

  if (tool_gather_i64(d.recs, d.nrecs * D_FIELDS, &all, &counts) < 0) {
    tool_error(ctx, "too many samples to gather on rank 0; dump fewer "
                    "(--max-chunks, --fraction)");
    st = TOOL_EXIT_ERROR;
    goto cleanup;
  }
  if (ctx->rank == 0)
    dump_print(ctx, vinfo.dtype, row_hash, all, counts);

cleanup:
  free(d.recs);
  free(all);
  free(counts);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
