/*
 * cmd_info.c - `ferry info DATASET`: open the dataset (collective) and print
 * what the library found, on rank 0: backend, parts, variables (dtype,
 * stored byte order, shape, bytes), samples, chunks, the memory budget and
 * the options in effect after --config, FERRY_* and the command line, so a
 * user can see what a job will read before running it.  --save-manifest
 * writes the manifest (rank 0) for the `manifest` option of later runs.
 */
#include "info_images.h"
#include "tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_JSON = 1, OPT_SAVE_MANIFEST, OPT_RANKS, OPT_PROBE };
enum { RANK_LINE = 512 };

static int run_info(tool_ctx *ctx);

static const tool_opt info_opts[] = {
    {"json", 0, OPT_JSON, NULL, "Print one JSON object instead of text."},
    {"save-manifest", 1, OPT_SAVE_MANIFEST, "FILE",
     "Write the dataset's manifest to FILE (rank 0), to be given later as "
     "--manifest FILE to skip the scan."},
    {"ranks", 0, OPT_RANKS, NULL,
     "Also print one line per rank: its host, its index on the node, and "
     "where its batches go (the GPU it drives and how it was chosen, or why "
     "they stay in host memory)."},
    {"probe", 1, OPT_PROBE, "K",
     "With decode=: read the headers of K images of each decoded variable "
     "(drawn from the seed; all when there are fewer) and show their "
     "formats, sizes, channels and subsampling (info_images.c); 0: none.  "
     "Default: " INFO_PROBE_DEFAULT "."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_info = {
    .name = "info",
    .args = "DATASET [--json] [--save-manifest FILE] [--ranks] [--probe K] "
            "[loader options]",
    .summary = "describe a dataset: variables, samples, chunks, memory budget",
    .description =
        "Open DATASET (a directory of .npy files, a .npy file, a glob such as "
        "'data/part-*', '@list.txt', or a 'mem:' spec) on every rank and print "
        "on rank 0 its backend, parts, variables (name, dtype, stored byte "
        "order, shape, row bytes, total bytes), number of samples, chunks "
        "and chunk size, the chunk_samples in effect and the rule that chose "
        "it, the memory budget of a loader with these options, "
        "and the options in effect.  With decode=, the headers of a sample "
        "of the images: formats, width and height, channels, subsampling.",
    .loader_options = 1,
    .opts = info_opts,
    .run = run_info,
};

static const char *byte_order(const ferry_var_info *v) {
  if (ferry_dtype_size(v->dtype) == 1)
    return "n/a";
  int little = tool_host_little();
  if (v->swapped)
    little = !little;
  return little ? "little" : "big";
}

/* The last chunk of the part of chunk `first` (chunks are listed part by
 * part), by binary search: the walks below cost O(parts x log chunks), not
 * O(chunks) (issue 30: a Zarr shape of 2^47 rows made 2^29 chunks, and
 * ferry info looped over them for many seconds). */
static int64_t part_last_chunk(const ferry_loader *L, int64_t first,
                               int64_t part) {
  int64_t lo = first, hi = ferry_num_chunks(L) - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    ferry_chunk_info c;
    if (ferry_chunk_info_get(L, mid, &c) == 0 && c.part == part)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* 1 when a plan chunk other than the last of its part does not end on a
 * storage chunk boundary of chunk_rows rows.  Every chunk but the last of
 * a part has chunk_samples rows, so the first of each part tells. */
static int cuts_storage_chunks(const ferry_loader *L, int64_t chunk_rows) {
  int64_t nc = ferry_num_chunks(L);
  ferry_chunk_info c;
  for (int64_t i = 0; i < nc && ferry_chunk_info_get(L, i, &c) == 0;) {
    int64_t last = part_last_chunk(L, i, c.part);
    if (last > i && c.num_samples % chunk_rows != 0)
      return 1;
    i = last + 1;
  }
  return 0;
}

/* The samples of the largest plan chunk: the first of some part. */
static int64_t largest_chunk(const ferry_loader *L) {
  int64_t nc = ferry_num_chunks(L), best = 0;
  ferry_chunk_info c;
  for (int64_t i = 0; i < nc && ferry_chunk_info_get(L, i, &c) == 0;) {
    if (c.num_samples > best)
      best = c.num_samples;
    i = part_last_chunk(L, i, c.part) + 1;
  }
  return best;
}

/* Weighted or balanced sampling: where the weights come from, the draws,
 * and how the blocks are drawn (docs/sampling.md, issue 30: every epoch a
 * weighted sample in itself, not only on average). */
static void print_sampling(const ferry_loader *L) {
  ferry_sampling_info si;
  if (ferry_sampling_info_get(L, &si) || si.mode != 1)
    return;
  printf("sampling       %s; %" PRId64 " non-zero of %" PRId64
         " samples; %" PRId64 " draws per epoch %s replacement, read in "
         "blocks of %" PRId64 " rows",
         si.what, si.nonzero, ferry_num_samples(L), si.draws,
         si.replacement ? "with" : "without", si.block);
  if (si.replacement)
    printf(" (every block gets its weight's share of each epoch's draws to "
           "within one draw, in runs of about a block; the samples inside "
           "a block drawn by their weights)\n");
  else
    printf(" (every block gets its expected share of each epoch's draws to "
           "within one draw; a block's samples taken in their weighted "
           "order)\n");
}

/* cache=node|cluster: where the chunks are kept and what an epoch moves
 * once the cache is filled (ferry_cache_info); nothing with cache=none. */
static void print_cache(const ferry_loader *L) {
  ferry_cache_info ci;
  if (ferry_cache_info_get(L, &ci) != 0 || !ci.mode)
    return;
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
  printf("cache          %s over %d node%s: %s of %s cached (%" PRId64
         " of %" PRId64 " chunks), %s on this node (region %s in /dev/shm, "
         "capacity %s a node); once filled, per epoch: %s from storage, %s "
         "between nodes\n",
         ci.mode == 1 ? "node" : "cluster", ci.nodes, ci.nodes == 1 ? "" : "s",
         tool_fmt_bytes((double)ci.cached_bytes, b1, sizeof b1),
         tool_fmt_bytes((double)ci.dataset_bytes, b2, sizeof b2),
         ci.cached_chunks, ci.chunks,
         tool_fmt_bytes((double)ci.node_bytes, b3, sizeof b3),
         tool_fmt_bytes((double)ci.region_bytes, b4, sizeof b4),
         tool_fmt_bytes((double)ci.capacity_bytes, b5, sizeof b5),
         tool_fmt_bytes((double)ci.storage_bytes_per_epoch, b6, sizeof b6),
         tool_fmt_bytes((double)ci.network_bytes_per_epoch, b7, sizeof b7));
  if (ci.note[0])
    printf("               %s\n", ci.note);
}

/* The memory budget line: each term, and the held batches' bound on top. */
static void print_budget(const ferry_memory_budget *mb) {
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  printf("memory budget  %s per rank: batch %s, ring %s, reads %s, plan %s",
         tool_fmt_bytes((double)mb->total_bytes, b1, sizeof b1),
         tool_fmt_bytes((double)mb->batch_bytes, b2, sizeof b2),
         tool_fmt_bytes((double)mb->ring_bytes, b3, sizeof b3),
         tool_fmt_bytes((double)mb->read_bytes, b4, sizeof b4),
         tool_fmt_bytes((double)mb->plan_bytes, b5, sizeof b5));
  if (mb->cache_bytes)
    printf(", decode caches %s",
           tool_fmt_bytes((double)mb->cache_bytes, b1, sizeof b1));
  if (mb->index_bytes)
    printf(", ragged offsets %s",
           tool_fmt_bytes((double)mb->index_bytes, b1, sizeof b1));
  if (mb->pinned_bytes)
    printf(" (pinned %s)",
           tool_fmt_bytes((double)mb->pinned_bytes, b1, sizeof b1));
  if (mb->device_bytes)
    printf("; device memory %s",
           tool_fmt_bytes((double)mb->device_bytes, b1, sizeof b1));
  if (mb->held_bytes) /* slots for batches the caller holds (held_memory) */
    printf("; and up to %s %s for batches the caller holds past the ring "
           "(held_memory)",
           tool_fmt_bytes((double)mb->held_bytes, b1, sizeof b1),
           mb->device_bytes ? "more device memory" : "more");
  printf("\n");
  if (mb->index_bytes >= (size_t)64 << 20) /* docs/ragged.md, "Memory" */
    printf("note           every rank holds the %s of ragged offsets: save "
           "the manifest once (--save-manifest m.json) and open it "
           "(--manifest m.json) to map them instead\n",
           tool_fmt_bytes((double)mb->index_bytes, b1, sizeof b1));
}

/* pack=concat: the packing of epoch 0 (rows are the samples above). */
static void print_pack(const ferry_loader *L) {
  ferry_pack_info pi;
  if (ferry_pack_stats(L, 0, &pi) != 0)
    return;
  printf("packing        %" PRId64 " documents, %" PRId64 " tokens -> %" PRId64
         " rows of seq_len %" PRId64 "%s\n",
         pi.documents, pi.tokens, pi.rows, pi.seq_len,
         pi.overlap ? " + 1 (overlap)" : "");
  printf("               efficiency %.4f (%" PRId64 " padding tokens), %" PRId64
         " tokens dropped (the tail; overflow=drop), %" PRId64
         " documents split (epoch 0); "
         "%" PRId64 " runs of %" PRId64 " documents shuffled\n",
         pi.efficiency, pi.padding, pi.dropped, pi.split, pi.runs, pi.run_docs);
}

/* pack=concat: ", \"pack\": {...}" (nothing for other datasets). */
static void print_json_pack(const ferry_loader *L) {
  ferry_pack_info pi;
  if (ferry_pack_stats(L, 0, &pi) != 0)
    return;
  printf(", \"pack\": {\"seq_len\": %" PRId64 ", \"overlap\": %d, "
         "\"documents\": %" PRId64 ", \"tokens\": %" PRId64
         ", \"rows\": %" PRId64 ", \"padding\": %" PRId64
         ", \"dropped\": %" PRId64 ", \"efficiency\": %.6f, \"split\": %" PRId64
         ", \"runs\": %" PRId64 ", \"run_docs\": %" PRId64 "}",
         pi.seq_len, pi.overlap, pi.documents, pi.tokens, pi.rows, pi.padding,
         pi.dropped, pi.efficiency, pi.split, pi.runs, pi.run_docs);
}

/* The batch_size option (for the ragged line). */
static int64_t info_option(const tool_ctx *ctx, const char *name) {
  char v[32] = "0";
  if (ctx->opts)
    ferry_options_get(ctx->opts, name, v, sizeof v);
  return (int64_t)strtoll(v, NULL, 10);
}

static int64_t info_batch_size(const tool_ctx *ctx) {
  return info_option(ctx, "batch_size");
}

/* The variables' table and the ragged variables' lengths: *row_total
 * gets the bytes of a sample's dense variables, *ragged_bytes all the
 * ragged values' bytes. */
static void print_vars(const tool_ctx *ctx, const ferry_loader *L,
                       size_t *row_total_out, double *ragged_out) {
  int nvars = ferry_num_vars(L);
  int64_t n = ferry_num_samples(L);
  size_t row_total = 0;
  double ragged_bytes = 0;
  printf("variables      %d\n", nvars);
  printf("  %-16s %-8s %-6s %-22s %12s %16s\n", "name", "dtype", "order",
         "shape", "row_bytes", "total_bytes");
  for (int i = 0; i < nvars; i++) {
    ferry_var_info v;
    if (ferry_var_info_get(L, i, &v) != 0)
      continue;
    char shape[256];
    /* a ragged variable: (N, *, inner...), '*' the sample's length */
    int len = snprintf(shape, sizeof shape, "(%" PRId64 "%s", v.shape[0],
                       v.ragged ? ", *" : "");
    for (int d = 1; d < v.ndim && len < (int)sizeof shape; d++)
      len += snprintf(shape + len, sizeof shape - (size_t)len, ", %" PRId64,
                      v.shape[d]);
    snprintf(shape + len, sizeof shape - (size_t)len, "%s)",
             v.ndim == 1 && !v.ragged ? "," : "");
    double rows = v.ragged ? (double)v.total_rows : (double)n;
    printf("  %-16s %-8s %-6s %-22s %12zu %16.0f\n", v.name,
           ferry_dtype_name(v.dtype), byte_order(&v), shape, v.row_bytes,
           (double)v.row_bytes * rows);
    if (v.ragged)
      ragged_bytes += (double)v.row_bytes * rows;
    else
      row_total += v.row_bytes;
  }
  for (int i = 0; i < nvars; i++) {
    ferry_var_info v;
    if (ferry_var_info_get(L, i, &v) != 0 || !v.ragged)
      continue;
    int64_t T = info_option(ctx, "max_tokens");
    char why[64];
    if (T > 0 && v.batch_rows == T) /* the token budget caps the slot */
      snprintf(why, sizeof why, "max_tokens");
    else
      snprintf(why, sizeof why, "the %" PRId64 " longest samples",
               info_batch_size(ctx));
    printf("ragged         %s: lengths %" PRId64 " to %" PRId64
           " (mean %.1f), %" PRId64 " rows of %zu bytes; a batch slot holds "
           "%" PRId64 " rows (%s)\n",
           v.name, v.min_len, v.max_len,
           n ? (double)v.total_rows / (double)n : 0.0, v.total_rows,
           v.row_bytes, v.batch_rows, why);
    ferry_var_info g;
    if (v.offsets_of >= 0 && v.offsets_of != i &&
        ferry_var_info_get(L, v.offsets_of, &g) == 0)
      printf("ragged         %s: the lengths of %s in every sample: its "
             "batches share %s's offsets\n",
             v.name, g.name, g.name);
    if (v.width > 0) /* a sparse matrix's rows (docs/singlecell.md) */
      printf("sparse         %s: rows of a matrix of %" PRId64 " x %" PRId64
             ", %" PRId64 " values (density %.4f)\n",
             v.name, n, v.width, v.total_rows,
             n && v.width ? (double)v.total_rows / ((double)n * (double)v.width)
                          : 0.0);
  }
  for (int i = 0; i < nvars; i++) { /* categorical: the names of the codes */
    ferry_var_info v;
    if (ferry_var_info_get(L, i, &v) != 0 || !v.categories)
      continue;
    printf("categories     %s: %" PRId64 " (", v.name, v.ncategories);
    int k = 0;
    for (const char *c = v.categories; *c && k < 8; c++) {
      if (*c == '\n') {
        if (++k < 8)
          fputs(", ", stdout);
      } else
        putchar(*c);
    }
    size_t nl = strlen(v.name);
    int codes = nl >= 6 && !strcmp(v.name + nl - 6, "/codes");
    printf("%s)%s\n", v.ncategories > 8 ? ", ..." : "",
           codes ? "; code -1: missing" : "");
  }
  *row_total_out = row_total;
  *ragged_out = ragged_bytes;
}

static void print_text(const tool_ctx *ctx, const ferry_loader *L,
                       int64_t max_chunk, const ferry_memory_budget *mb,
                       const info_images *im) {
  char b1[32], b2[32];
  int nvars = ferry_num_vars(L);
  int64_t n = ferry_num_samples(L), nparts = ferry_num_parts(L);
  size_t row_total = 0;
  double ragged_bytes = 0;
  printf("dataset        %s\n", ctx->target);
  printf("backend        %s\n", ferry_backend(L));
  printf("parts          %" PRId64 "\n", nparts);
  for (int64_t p = 0; p < nparts && p < 8; p++)
    printf("  %s\n", ferry_part_path(L, p, 0));
  if (nparts > 8)
    printf("  ... (%" PRId64 " more)\n", nparts - 8);
  int nmix = ferry_mix_count(L);
  if (nmix > 0) {
    printf("mix            %d sources\n", nmix);
    printf("  %-10s %12s %10s %-8s %s\n", "backend", "samples", "proportion",
           "exhaust", "path");
  }
  for (int i = 0; i < nmix; i++) {
    ferry_mix_info x;
    if (ferry_mix_source(L, i, &x) == 0)
      printf("  %-10s %12" PRId64 " %10.4g %-8s %s\n", x.backend, x.samples,
             x.proportion, x.exhaust, x.path);
  }
  printf("samples        %" PRId64 "\n", n);
  print_pack(L);
  print_vars(ctx, L, &row_total, &ragged_bytes);
  if (ragged_bytes > 0)
    printf("sample bytes   %.1f on average (all variables), dataset %s\n",
           (double)row_total + ragged_bytes / (double)(n ? n : 1),
           tool_fmt_bytes((double)row_total * (double)n + ragged_bytes, b1,
                          sizeof b1));
  else
    printf("sample bytes   %zu (all variables), dataset %s\n", row_total,
           tool_fmt_bytes((double)row_total * (double)n, b1, sizeof b1));
  /* Storage layout, when the backend describes it (HDF5, Zarr). */
  const char *cut = NULL;
  int64_t cut_rows = 0;
  for (int i = 0; i < nvars; i++) {
    ferry_var_info v;
    if (ferry_var_info_get(L, i, &v) != 0 || !v.storage)
      continue;
    printf("storage        %s: %s", v.name, v.storage);
    if (v.cache_bytes)
      printf("; decode cache %s per open file",
             tool_fmt_bytes((double)v.cache_bytes, b1, sizeof b1));
    printf("\n");
    if (v.chunk_rows > 0 && !cut && cuts_storage_chunks(L, v.chunk_rows)) {
      cut = v.name;
      cut_rows = v.chunk_rows;
    }
  }
  printf(
      "chunks         %" PRId64 " of at most %" PRId64 " samples (%s%s)\n",
      ferry_num_chunks(L), max_chunk, ragged_bytes > 0 ? "on average " : "",
      tool_fmt_bytes((double)max_chunk * ((double)row_total +
                                          ragged_bytes / (double)(n ? n : 1)),
                     b1, sizeof b1));
  const char *why = "";
  int64_t cs = ferry_chunk_samples(L, &why);
  printf("chunk_samples  %" PRId64 " (%s)\n", cs, why);
  if (cut)
    printf("               not a multiple of %s's storage chunk of %" PRId64
           " rows: some storage chunks are read (and decoded) by two reads; "
           "chunk_samples=0 aligns them\n",
           cut, cut_rows);
  print_budget(mb);
  print_cache(L);
  char shuf[32], q[32], k[32];
  if (!strcmp(tool_option(ctx, "shuffle", shuf, sizeof shuf), "global")) {
    tool_option(ctx, "exchange", q, sizeof q);
    tool_option(ctx, "shuffle_buffer", k, sizeof k);
    double Q = atof(q), K = atof(k) > 0 ? atof(k) : 1;
    double P = ferry_world_size(L), W = K * (double)max_chunk,
           share = ((double)ferry_num_samples(L) + P - 1) / P;
    if (W > share) /* a window never holds more than a rank's share */
      W = (double)(int64_t)share;
    printf("global shuffle reads = the windows alive (read and receive "
           "buffers, served from) + the send staging, at most about "
           "(2 + 3Q) x W rows, W = "
           "min(shuffle_buffer x chunk_samples, a rank's share): "
           "(2 + 3 x %s) x %.0f x %s = %s per rank; the exchange moves "
           "Q (P-1)/P of the dataset per epoch\n",
           q, W, tool_fmt_bytes((double)row_total, b2, sizeof b2),
           tool_fmt_bytes((2 + 3 * Q) * W * (double)row_total, b1, sizeof b1));
  }
  if (ferry_dataset_notes(L))
    printf("notes          %s\n", ferry_dataset_notes(L));
  if (ferry_io_choice(L))
    printf("io             %s\n", ferry_io_choice(L));
  print_sampling(L);
  info_images_text(im);
  printf("options       ");
  const ferry_option_info *o;
  for (int i = 0; (o = ferry_option_info_get(i)) != NULL; i++) {
    char val[1024];
    printf(" %s=%s", o->name, tool_option(ctx, o->name, val, sizeof val));
  }
  printf("\nranks          %d\n", ctx->size);
}

/* A mix's sources: ", \"mix\": [{...}, ...]" (nothing for other datasets). */
static void print_json_mix(const ferry_loader *L) {
  int nmix = ferry_mix_count(L);
  if (nmix == 0)
    return;
  printf(", \"mix\": [");
  for (int i = 0; i < nmix; i++) {
    ferry_mix_info x;
    if (ferry_mix_source(L, i, &x) != 0)
      continue;
    printf("%s{\"path\": ", i ? ", " : "");
    tool_json_string(stdout, x.path);
    printf(", \"backend\": ");
    tool_json_string(stdout, x.backend);
    printf(", \"first\": %" PRId64 ", \"samples\": %" PRId64
           ", \"proportion\": %.17g, \"exhaust\": ",
           x.first, x.samples, x.proportion);
    tool_json_string(stdout, x.exhaust);
    printf("}");
  }
  printf("]");
}

static void print_json(const tool_ctx *ctx, const ferry_loader *L,
                       int64_t max_chunk, const ferry_memory_budget *mb,
                       const info_images *im) {
  int nvars = ferry_num_vars(L);
  int64_t n = ferry_num_samples(L), nparts = ferry_num_parts(L);
  size_t row_total = 0;
  printf("{\"dataset\": ");
  tool_json_string(stdout, ctx->target);
  printf(", \"backend\": ");
  tool_json_string(stdout, ferry_backend(L));
  printf(", \"ranks\": %d, \"parts\": %" PRId64 ", \"part_paths\": [",
         ctx->size, nparts);
  for (int64_t p = 0; p < nparts; p++) {
    if (p)
      printf(", ");
    tool_json_string(stdout, ferry_part_path(L, p, 0));
  }
  printf("]");
  print_json_mix(L);
  print_json_pack(L);
  printf(", \"samples\": %" PRId64 ", \"vars\": [", n);
  for (int i = 0; i < nvars; i++) {
    ferry_var_info v;
    if (ferry_var_info_get(L, i, &v) != 0)
      continue;
    printf("%s{\"name\": ", i ? ", " : "");
    tool_json_string(stdout, v.name);
    printf(", \"dtype\": \"%s\", \"byte_order\": \"%s\", \"shape\": [",
           ferry_dtype_name(v.dtype), byte_order(&v));
    for (int d = 0; d < v.ndim; d++)
      printf("%s%" PRId64, d ? ", " : "", v.shape[d]);
    printf("], \"row_bytes\": %zu, \"total_bytes\": %.0f, "
           "\"chunk_rows\": %" PRId64 ", \"cache_bytes\": %zu, ",
           v.row_bytes,
           (double)v.row_bytes * (v.ragged ? (double)v.total_rows : (double)n),
           v.chunk_rows, v.cache_bytes);
    if (v.ragged)
      printf("\"ragged\": true, \"min_len\": %" PRId64 ", \"max_len\": %" PRId64
             ", \"total_rows\": %" PRId64 ", \"batch_rows\": %" PRId64 ", ",
             v.min_len, v.max_len, v.total_rows, v.batch_rows);
    printf("\"storage\": ");
    if (v.storage)
      tool_json_string(stdout, v.storage);
    else
      printf("null");
    printf("}");
    row_total += v.row_bytes;
  }
  printf("], \"sample_bytes\": %zu, \"chunks\": %" PRId64
         ", \"chunk_samples\": %" PRId64 ", \"chunk_bytes\": %.0f",
         row_total, ferry_num_chunks(L), max_chunk,
         (double)max_chunk * (double)row_total);
  const char *why = "";
  ferry_chunk_samples(L, &why);
  printf(", \"chunk_samples_why\": ");
  tool_json_string(stdout, why);
  printf(", \"memory_budget\": {\"batch_bytes\": %zu, \"ring_bytes\": %zu, "
         "\"read_bytes\": %zu, \"plan_bytes\": %zu, \"cache_bytes\": %zu, "
         "\"index_bytes\": %zu, "
         "\"held_bytes\": %zu, \"total_bytes\": %zu}",
         mb->batch_bytes, mb->ring_bytes, mb->read_bytes, mb->plan_bytes,
         mb->cache_bytes, mb->index_bytes, mb->held_bytes, mb->total_bytes);
  ferry_cache_info ci;
  if (ferry_cache_info_get(L, &ci) == 0 && ci.mode) {
    printf(", \"cache\": {\"mode\": \"%s\", \"nodes\": %d, "
           "\"capacity_bytes\": %" PRId64 ", \"node_bytes\": %" PRId64
           ", \"region_bytes\": %" PRId64 ", \"dataset_bytes\": %" PRId64
           ", \"cached_bytes\": %" PRId64 ", \"chunks\": %" PRId64
           ", \"cached_chunks\": %" PRId64
           ", \"storage_bytes_per_epoch\": %" PRId64
           ", \"network_bytes_per_epoch\": %" PRId64 ", \"note\": ",
           ci.mode == 1 ? "node" : "cluster", ci.nodes, ci.capacity_bytes,
           ci.node_bytes, ci.region_bytes, ci.dataset_bytes, ci.cached_bytes,
           ci.chunks, ci.cached_chunks, ci.storage_bytes_per_epoch,
           ci.network_bytes_per_epoch);
    tool_json_string(stdout, ci.note);
    printf("}");
  }
  printf(", \"notes\": ");
  if (ferry_dataset_notes(L))
    tool_json_string(stdout, ferry_dataset_notes(L));
  else
    printf("null");
  printf(", \"io\": ");
  if (ferry_io_choice(L))
    tool_json_string(stdout, ferry_io_choice(L));
  else
    printf("null");
  info_images_json(im);
  printf(", \"options\": {");
  const ferry_option_info *o;
  for (int i = 0; (o = ferry_option_info_get(i)) != NULL; i++) {
    char val[1024];
    printf("%s\"%s\": ", i ? ", " : "", o->name);
    tool_json_string(stdout, tool_option(ctx, o->name, val, sizeof val));
  }
  printf("}}\n");
}

/* This rank's line of --ranks: host, node index, where batches go. */
static void rank_line(const tool_ctx *ctx, const ferry_loader *L, char *out) {
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int len = 0;
  ferry_device_info di;
  memset(&di, 0, sizeof di);
  MPI_Get_processor_name(host, &len);
  ferry_device_info_get(L, &di);
  int n = snprintf(out, RANK_LINE, "  %-5d %-16s %3d/%-3d ", ctx->rank, host,
                   di.local_rank, di.local_size);
  if (n < 0 || n >= RANK_LINE)
    return;
  if (di.cuda) {
    n += snprintf(out + n, RANK_LINE - (size_t)n, "cuda device%s",
                  di.ndevices == 1 ? "" : "s");
    for (int i = 0; i < di.ndevices && n < RANK_LINE; i++)
      n += snprintf(out + n, RANK_LINE - (size_t)n, "%s%d", i ? "," : " ",
                    di.devices[i]);
    if (n < RANK_LINE)
      snprintf(out + n, RANK_LINE - (size_t)n, ": %s", di.how);
  } else {
    snprintf(out + n, RANK_LINE - (size_t)n, "%s", di.how);
  }
}

static int run_info(tool_ctx *ctx) {
  int json = 0, ranks = 0;
  int64_t probe = atoi(INFO_PROBE_DEFAULT);
  const char *manifest = NULL;
  for (int i = 0; i < ctx->nargs; i++) {
    if (ctx->args[i].id == OPT_JSON)
      json = 1;
    else if (ctx->args[i].id == OPT_SAVE_MANIFEST)
      manifest = ctx->args[i].value;
    else if (ctx->args[i].id == OPT_RANKS)
      ranks = 1;
    else if (ctx->args[i].id == OPT_PROBE &&
             tool_parse_i64(ctx->args[i].value, 0, INT64_C(1) << 24, &probe))
      return tool_usage_error(ctx,
                              "bad value '%s' for --probe: expected an "
                              "integer in [0, 16777216]",
                              ctx->args[i].value);
  }
  ferry_loader *L = NULL;
  int st = tool_open(ctx, &L);
  if (st != 0)
    return st;

  if (manifest != NULL && (st = tool_save_manifest(ctx, L, manifest)) != 0)
    goto cleanup;
  /* the image headers (rank 0 reads them; every rank learns the result) */
  info_images *im = calloc(1, sizeof *im);
  if (!im)
    tool_oom(ctx, sizeof *im, "the image summary");
  int prc = ctx->rank == 0 ? info_images_probe(ctx, L, probe, im) : 0;
  MPI_Bcast(&prc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (prc != 0) {
    free(im);
    st = tool_lib_error(ctx, L, prc);
    goto cleanup;
  }
  if (ctx->rank == 0) {
    int64_t max_chunk = largest_chunk(L);
    ferry_memory_budget mb;
    memset(&mb, 0, sizeof mb);
    ferry_memory_budget_get(L, &mb);
    if (json)
      print_json(ctx, L, max_chunk, &mb, im);
    else
      print_text(ctx, L, max_chunk, &mb, im);
    if (manifest != NULL && !json)
      printf("manifest       saved to %s\n", manifest);
    fflush(stdout);
  }
  free(im);
  if (ranks) { /* collective: every rank sends its line to rank 0 */
    char mine[RANK_LINE] = "";
    char *all = ctx->rank == 0 ? calloc((size_t)ctx->size, RANK_LINE) : NULL;
    rank_line(ctx, L, mine);
    MPI_Gather(mine, RANK_LINE, MPI_CHAR, all, RANK_LINE, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (ctx->rank == 0 && all) {
      printf("  %-5s %-16s %7s  %s\n", "rank", "host", "node", "batches");
      for (int r = 0; r < ctx->size; r++)
        printf("%s\n", all + (size_t)r * RANK_LINE);
      fflush(stdout);
    }
    free(all);
  }
cleanup:;
  int rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
