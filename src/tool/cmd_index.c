/*
 * cmd_index.c - `ferry index DATASET`: write the sidecar SHARD.tar.idx of
 * every WebDataset shard of a dataset (a shard, a glob, an @list or a
 * directory of shards), in Megatron-Energon's layout (docs/images.md).  It
 * is ferry_open with tar_index=write: rank 0 scans each shard's headers,
 * as every open does, and writes its sidecar; the command then prints the
 * shards and samples indexed.  Run it once after writing or changing
 * shards; later opens check the sidecars against the headers.  With
 * --save-manifest FILE it saves the manifest of the same scan too: the
 * fast start (a job given manifest=FILE scans nothing; its location tables
 * are mapped from FILE.recs, decision 0066).
 */
#include "tool.h"

#include <inttypes.h>
#include <string.h>

static int run_index(tool_ctx *ctx);

enum { OPT_SAVE_MANIFEST = 1 };

static const tool_opt index_opts[] = {
    {"save-manifest", 1, OPT_SAVE_MANIFEST, "FILE",
     "Also write the dataset's manifest to FILE (rank 0; with FILE.roff and, "
     "for more than 64 KiB of location tables, FILE.recs beside it): jobs "
     "given --manifest FILE (manifest=FILE) then start without scanning a "
     "header."},
    {NULL, 0, 0, NULL, NULL}};

const tool_cmd tool_cmd_index = {
    .name = "index",
    .args = "DATASET [--save-manifest FILE] [loader options]",
    .summary = "write the sidecar SHARD.tar.idx of every WebDataset shard",
    .description =
        "Scan the headers of every tar shard of DATASET (a shard, a glob, "
        "an @list or a directory of shards) and write beside each its "
        "sidecar SHARD.tar.idx: one little-endian uint64 per sample, the "
        "offset of its first header, then the offset where the members end "
        "(Megatron-Energon's index).  ferry checks a sidecar against the "
        "headers when it opens a shard (tar_index=auto) and refuses a "
        "stale one.  The same as opening the dataset with tar_index=write.  "
        "The sidecars hold no member sizes, so an open still reads the "
        "headers; the start without a scan is a saved manifest "
        "(--save-manifest).",
    .loader_options = 1,
    .opts = index_opts,
    .run = run_index,
};

static int run_index(tool_ctx *ctx) {
  const char *manifest = NULL;
  for (int i = 0; i < ctx->nargs; i++)
    if (ctx->args[i].id == OPT_SAVE_MANIFEST)
      manifest = ctx->args[i].value;
  int rc = ferry_options_set(ctx->opts, "tar_index", "write");
  if (rc != 0)
    return tool_lib_error(ctx, NULL, rc);
  ferry_loader *L = NULL;
  int st = tool_open(ctx, &L);
  if (st != 0)
    return st;
  const char *backend = ferry_backend(L);
  if (strcmp(backend, "webdataset") != 0) {
    tool_error(ctx,
               "ferry index writes the sidecars of WebDataset tar shards; "
               "%s is read by backend %s",
               ctx->target, backend);
    st = TOOL_EXIT_ERROR;
  } else if (manifest) {
    st = tool_save_manifest(ctx, L, manifest);
  }
  if (st == 0 && ctx->rank == 0) {
    printf("indexed %" PRId64 " shard%s, %" PRId64 " samples: %s.idx%s\n",
           ferry_num_parts(L), ferry_num_parts(L) == 1 ? "" : "s",
           ferry_num_samples(L), ferry_part_path(L, 0, 0),
           ferry_num_parts(L) > 1 ? " and the others beside their shards" : "");
    if (manifest)
      printf("manifest saved to %s: open the dataset with --manifest %s "
             "(manifest=%s) to start without the scan\n",
             manifest, manifest, manifest);
    fflush(stdout);
  }
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
