/*
 * cmd_plan.c - `ferry plan DATASET --epoch E`: plan one epoch over the ranks
 * of the job (ferry_set_epoch, collective) and print, on rank 0 in rank
 * order, what each rank will serve and read: batches, samples, padded
 * samples, and its reads (ferry_epoch_chunks: chunk id, first sample,
 * count), with the plan checksum every rank verified.  Nothing is read: the
 * loader is closed before the pipeline has produced a batch that anyone
 * consumes.  Run it with the world size of the real job, since the plan
 * depends on it.
 */
#include "tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_EPOCH = 1, OPT_JSON };

static int run_plan(tool_ctx *ctx);

static const tool_opt plan_opts[] = {
    {"epoch", 1, OPT_EPOCH, "E", "Epoch to plan (>= 0).  Default: 0."},
    {"json", 0, OPT_JSON, NULL, "Print one JSON object instead of text."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_plan = {
    .name = "plan",
    .args = "DATASET [--epoch E] [--json] [loader options]",
    .summary = "show each rank's batches and chunk reads for an epoch",
    .description =
        "Plan epoch E over the ranks of this job and print, for each rank in "
        "rank order, its batch count, samples served, padded samples and its "
        "reads in plan order (chunk id, first sample, sample count), with "
        "the plan checksum.  The plan depends on the world size: run it "
        "under mpirun or srun with the ranks of the real job.",
    .loader_options = 1,
    .opts = plan_opts,
    .run = run_plan,
};

/* The fixed per-rank record gathered on rank 0. */
enum {
  R_BATCHES,
  R_EPOCH_SAMPLES,
  R_SERVED,
  R_PADDED,
  R_DROPPED,
  R_NREADS,
  R_CHECKSUM,
  R_COUNT
};
/* Each read: chunk id, part, first sample, count. */
enum { C_ID, C_PART, C_FIRST, C_COUNT, C_FIELDS };

/* This rank's reads of the epoch set on L, C_FIELDS values each, into the
 * malloc'd *out; returns their count.  info: the epoch's info. */
static int64_t plan_reads(const tool_ctx *ctx, const ferry_loader *L,
                          const ferry_epoch_info *info, int64_t **out) {
  int64_t nreads = info->num_chunks, got = 0;
  int rc;
  ferry_chunk_info *chunks =
      malloc((size_t)(nreads > 0 ? nreads : 1) * sizeof *chunks);
  if (chunks == NULL)
    tool_oom(ctx, (size_t)(nreads > 0 ? nreads : 1) * sizeof *chunks,
             "the %lld chunks of dataset %s", (long long)nreads, ctx->target);
  if ((rc = ferry_epoch_chunks(L, chunks, nreads, &got)) != 0)
    tool_local_fatal(ctx, L, "ferry_epoch_chunks", rc);
  if (got < nreads)
    nreads = got;
  int64_t *reads =
      malloc((size_t)(nreads > 0 ? nreads : 1) * C_FIELDS * sizeof *reads);
  if (reads == NULL)
    tool_oom(ctx, (size_t)(nreads > 0 ? nreads : 1) * C_FIELDS * sizeof *reads,
             "the %lld reads of dataset %s", (long long)nreads, ctx->target);
  for (int64_t c = 0; c < nreads; c++) {
    reads[c * C_FIELDS + C_ID] = chunks[c].id;
    reads[c * C_FIELDS + C_PART] = chunks[c].part;
    reads[c * C_FIELDS + C_FIRST] = chunks[c].first_sample;
    reads[c * C_FIELDS + C_COUNT] = chunks[c].num_samples;
  }
  free(chunks);
  *out = reads;
  return nreads;
}

/* Rank 0: the plan of every rank (records: R_COUNT values per rank; reads:
 * counts[r] values for rank r, C_FIELDS per read), as text or JSON. */
static void plan_print(const tool_ctx *ctx, int json, int64_t epoch,
                       const int64_t *records, const int64_t *all_reads,
                       const int64_t *counts) {
  const int64_t *r0 = records;
  if (json) {
    printf("{\"dataset\": ");
    tool_json_string(stdout, ctx->target);
    printf(", \"epoch\": %" PRId64 ", \"ranks\": %d, \"num_batches\": %" PRId64
           ", \"epoch_samples\": %" PRId64 ", \"dropped_samples\": %" PRId64
           ", \"plan_checksum\": \"%016" PRIx64 "\", \"per_rank\": [",
           epoch, ctx->size, r0[R_BATCHES], r0[R_EPOCH_SAMPLES], r0[R_DROPPED],
           (uint64_t)r0[R_CHECKSUM]);
  } else {
    printf("epoch %" PRId64 ": %d rank%s, %" PRId64
           " batches per rank, %" PRId64 " samples in the epoch, %" PRId64
           " dropped, plan checksum %016" PRIx64 "\n",
           epoch, ctx->size, ctx->size == 1 ? "" : "s", r0[R_BATCHES],
           r0[R_EPOCH_SAMPLES], r0[R_DROPPED], (uint64_t)r0[R_CHECKSUM]);
  }
  const int64_t *rd = all_reads;
  for (int r = 0; r < ctx->size; r++) {
    const int64_t *rec = records + (size_t)r * R_COUNT;
    int64_t n = counts[r] / C_FIELDS;
    if (json) {
      printf("%s{\"rank\": %d, \"batches\": %" PRId64 ", \"samples\": %" PRId64
             ", \"padded\": %" PRId64 ", \"plan_checksum\": \"%016" PRIx64
             "\", \"chunks\": [",
             r ? ", " : "", r, rec[R_BATCHES], rec[R_SERVED], rec[R_PADDED],
             (uint64_t)rec[R_CHECKSUM]);
      for (int64_t c = 0; c < n; c++, rd += C_FIELDS)
        printf("%s[%" PRId64 ", %" PRId64 ", %" PRId64 "]", c ? ", " : "",
               rd[C_ID], rd[C_FIRST], rd[C_COUNT]);
      printf("]}");
    } else {
      printf("rank %d: %" PRId64 " batches, %" PRId64 " samples (%" PRId64
             " padded), %" PRId64 " reads\n",
             r, rec[R_BATCHES], rec[R_SERVED], rec[R_PADDED], n);
      if (n > 0)
        printf("  %10s %8s %14s %10s\n", "chunk", "part", "first_sample",
               "count");
      for (int64_t c = 0; c < n; c++, rd += C_FIELDS)
        printf("  %10" PRId64 " %8" PRId64 " %14" PRId64 " %10" PRId64 "\n",
               rd[C_ID], rd[C_PART], rd[C_FIRST], rd[C_COUNT]);
    }
  }
  if (json)
    printf("]}\n");
  fflush(stdout);
}

static int run_plan(tool_ctx *ctx) {
  int64_t epoch = 0;
  int json = 0;
  for (int i = 0; i < ctx->nargs; i++) {
    if (ctx->args[i].id == OPT_JSON) {
      json = 1;
    } else if (ctx->args[i].id == OPT_EPOCH &&
               tool_parse_i64(ctx->args[i].value, 0, INT64_MAX, &epoch) != 0) {
      return tool_usage_error(ctx,
                              "bad value '%s' for --epoch: expected an "
                              "integer >= 0",
                              ctx->args[i].value);
    }
  }
  ferry_loader *L = NULL;
  int st = tool_open(ctx, &L), rc;
  if (st != 0)
    return st;
  int64_t *records = NULL, *reads = NULL, *all_reads = NULL, *counts = NULL;
  if ((rc = ferry_set_epoch(L, epoch)) != 0) {
    st = tool_lib_error(ctx, L, rc);
    goto cleanup;
  }

  ferry_epoch_info info;
  if ((rc = ferry_epoch_info_get(L, &info)) != 0)
    tool_local_fatal(ctx, L, "ferry_epoch_info_get", rc);
  int64_t nreads = plan_reads(ctx, L, &info, &reads);
  int64_t mine[R_COUNT] = {info.num_batches,           info.epoch_samples,
                           info.served_samples,        info.padded_samples,
                           info.dropped_samples,       nreads,
                           (int64_t)info.plan_checksum};
  if (tool_gather_i64(mine, R_COUNT, &records, NULL) < 0 ||
      tool_gather_i64(reads, nreads * C_FIELDS, &all_reads, &counts) < 0) {
    tool_error(ctx, "cannot gather the plan on rank 0 (too large or out of "
                    "memory)");
    st = TOOL_EXIT_ERROR;
    goto cleanup;
  }
  if (ctx->rank == 0)
    plan_print(ctx, json, epoch, records, all_reads, counts);

cleanup:
  free(records);
  free(reads);
  free(all_reads);
  free(counts);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
