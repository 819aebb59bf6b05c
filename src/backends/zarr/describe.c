/*
 * describe.c - the zarr backend's describe (rank 0): from the arrays the
 * walk found (store.c), pick the variables and the reader (zarr_reader:
 * native, or netCDF-C when it can open the store safely; see zarr.c), say
 * why in notes, and leave the reader and the .zarray hash in each
 * variable's record, with the storage text and cache bytes ferry info
 * prints.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/meta.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Chunk files stat'ed to estimate the compression ratio for ferry info. */
#define Z_RATIO_SAMPLE 16

/* 1 when netCDF-C 4.9.0 can open every array of the store safely. */
static int netcdf_can_open(const zarr_walk *w, const char **why) {
  if (w->root_array)
    return *why = "the store is a single array (netCDF-C opens groups)", 0;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok)
      return *why = "an array of the store has metadata netCDF-C cannot "
                    "read",
             0;
    if (x->z.v3)
      return *why = "a Zarr v3 store (netCDF-C reads v2 only)", 0;
    if (x->z.nested_legacy)
      return *why = "an array keeps its chunks in nested directories "
                    "without a dimension_separator (netCDF-C would serve "
                    "fill values)",
             0;
    if (x->z.dtype == FERRY_BOOL)
      return *why = "the store holds a bool array (netCDF-C 4.9.0 crashes "
                    "on them)",
             0;
    if (x->z.dtype == FERRY_FLOAT16)
      return *why = "the store holds a float16 array (netCDF-C has no "
                    "float16)",
             0;
  }
  return 1;
}

/* ---- Describe (rank 0) ------------------------------------------------ */

/* What the native reader keeps per variable and open store (describe
 * counts it in cache_bytes): the band (c0 rows; one band of chunks bounds
 * it), one decoded chunk when chunks are not rows, the stored bytes of one
 * chunk file when compressed, one intermediate stage of a chain of codecs. */
static size_t native_cache_bytes(const zmeta *z, int lanes) {
  size_t n = z->chunk_bytes * (size_t)z->across;
  /* Each further decode lane (the `threads` option, pool.c) holds its own
   * stored bytes and middle stage while it decodes a chunk of a read. */
  size_t lane = zarr_stored_bound(z->chunk_bytes) + 4 +
                (z->ncodecs > 1 ? z->chunk_bytes : 0);
  if ((z->ncodecs || z->crc) && lanes > 1)
    n = lane > (SIZE_MAX / 4 - n) / (size_t)(lanes - 1)
            ? SIZE_MAX / 4 /* past any budget: refused there */
            : n + (size_t)(lanes - 1) * lane;
  if (!zarr_chunk_is_rows(z))
    n += z->chunk_bytes;
  if (z->ncodecs || z->crc)
    n += zarr_stored_bound(z->chunk_bytes) + 4;
  if (z->ncodecs > 1)
    n += z->chunk_bytes;
  if (z->sharded)
    n += (size_t)zarr_nslots(z) * (size_t)z->n_inner * 16 + z->index_bytes;
  return n;
}

/* "chunks (10, 3), blosc(lz4, shuffle), 2.8:1; ..." for ferry info. */
#define Z_STORAGE_MAX 512 /* the most storage_text (or its directory) takes */

static char *storage_text(const char *adir, const zmeta *z, const char *reader,
                          int lanes, int64_t *cache) {
  char buf[Z_STORAGE_MAX];
  size_t used = 0;
  used += (size_t)snprintf(buf, sizeof buf, "chunks (");
  for (int d = 0; d < z->ndim; d++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld",
                             d ? ", " : "", (long long)z->chunks[d]);
  used += (size_t)snprintf(
      buf + used, sizeof buf - used, "%s), %s%s", z->ndim == 1 ? "," : "",
      z->ncodecs ? z->codecs_text : "uncompressed", z->crc ? " + crc32c" : "");
  if (z->sharded) {
    used += (size_t)snprintf(buf + used, sizeof buf - used, ", in shards of (");
    for (int d = 0; d < z->ndim && used < sizeof buf; d++)
      used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld",
                               d ? ", " : "", (long long)z->shard[d]);
    if (used < sizeof buf)
      used += (size_t)snprintf(
          buf + used, sizeof buf - used, "%s) with the index at the %s",
          z->ndim == 1 ? "," : "", z->index_start ? "start" : "end");
  }
  /* Compression ratio from the first chunks (shards) along dimension 0. */
  int64_t idx[Z_MAX_DIMS] = {0}, nch = zarr_nchunks(z, 0);
  int64_t step = z->sharded ? z->per_shard[0] : 1;
  nch = nch / step + (nch % step != 0);
  long long stored = 0, missing = 0;
  double raw = 0; /* up to 16 chunks of 2^60 bytes: no integer overflow */
  for (int64_t c = 0; c < nch && c < Z_RATIO_SAMPLE; c++) {
    idx[0] = c * step;
    char *p = ferry__zarr_chunk_path(adir, z, idx);
    struct stat st;
    if (p && stat(p, &st) == 0) {
      stored += (long long)st.st_size;
      raw += (double)z->chunk_bytes * (double)(z->sharded ? z->n_inner : 1);
    } else {
      missing++;
    }
    free(p);
  }
  if (z->ncodecs && !z->vlen && stored > 0 && used < sizeof buf)
    used += (size_t)snprintf(buf + used, sizeof buf - used, ", %.1f:1",
                             raw / (double)stored);
  if (missing && used < sizeof buf)
    used += (size_t)snprintf(
        buf + used, sizeof buf - used,
        ", %lld of the first %lld %s absent (%s)", missing,
        (long long)(nch < Z_RATIO_SAMPLE ? nch : Z_RATIO_SAMPLE),
        z->sharded ? "shards" : "chunks",
        z->has_fill ? "read as fill_value" : "an error: no fill_value");
  if (z->across > 1 && used < sizeof buf)
    used += (size_t)snprintf(buf + used, sizeof buf - used,
                             "; chunked on other dimensions too: each read "
                             "decodes %lld chunks per %lld rows",
                             (long long)z->across, (long long)z->chunks[0]);
  if (used < sizeof buf)
    snprintf(buf + used, sizeof buf - used, "; reader %s", reader);
  *cache = strcmp(reader, "netcdf") == 0
               ? (int64_t)z->chunk_bytes * z->across * 2
               : (int64_t)native_cache_bytes(z, lanes);
  return strdup(buf);
}

/* The zarr_reader option ("auto" when opts is NULL). */
static void reader_option(const ferry_options *opts, char *buf, size_t len) {
  if (!opts || ferry_options_get(opts, "zarr_reader", buf, len) != 0)
    snprintf(buf, len, "auto");
}

/* The store directory must exist and be one. */
static int check_store_dir(const char *store, ferry__err *err) {
  struct stat st;
  if (stat(store, &st) != 0 || !S_ISDIR(st.st_mode))
    return ferry__seterr(err, errno == ENOENT ? FERRY_ENOENT : FERRY_EFORMAT,
                         "%s: %s", store,
                         errno == ENOENT ? strerror(errno)
                                         : "not a directory (a Zarr store is "
                                           "one)");
  return 0;
}

/* 1 when array x is a variable: its dimension 0 is the longest, and it is
 * not a coordinate of another dimension. */
static int is_selected(const zarr_array *x, int64_t longest) {
  if (x->ad) /* AnnData: per cell, a CSR matrix's rows among them */
    return x->ok && !x->ad->why && x->z.ndim >= 1 &&
           (x->ad->csr || x->z.shape[0] == longest);
  return x->ok && x->z.ndim >= 1 && x->z.shape[0] == longest && !x->coord;
}

/* With dimension names (xarray's _ARRAY_DIMENSIONS, v3 dimension_names):
 * the sample dimension is the name of dimension 0 the most arrays of the
 * longest length share (those of two or more dimensions first), and a 1-D
 * array of that length named along another dimension (a coordinate, e.g.
 * lat beside time when both have as many entries) is not a variable.
 * Returns the sample dimension's name, or "" without names. */
static const char *mark_coords(zarr_walk *w, int64_t longest) {
  const char *best = "";
  long best_score = 0;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok || x->z.ndim < 1 || x->z.shape[0] != longest || !x->z.dim0[0])
      continue;
    long score = 0;
    for (int k = 0; k < w->n; k++) {
      const zarr_array *y = &w->a[k];
      if (y->ok && y->z.ndim >= 1 && y->z.shape[0] == longest &&
          strcmp(y->z.dim0, x->z.dim0) == 0)
        score += y->z.ndim >= 2 ? 1000 : 1;
    }
    if (score > best_score) {
      best_score = score;
      best = x->z.dim0;
    }
  }
  for (int i = 0; i < w->n; i++) {
    zarr_array *x = &w->a[i];
    x->coord = best[0] && x->ok && x->z.ndim == 1 && x->z.shape[0] == longest &&
               x->z.dim0[0] && strcmp(x->z.dim0, best) != 0;
  }
  return best;
}

/* The sample dimension (the longest dimension 0 of the arrays, *longest)
 * and the number of variables (*nsel).  Select, then validate (issue 11: a
 * zarr-python group was refused for one bz2 array it also held): an array
 * ferry cannot read (its dtype, order or codec, FERRY_ENOTSUP) is an error
 * only when `vars` (named) names it; otherwise it is skipped and the notes
 * say why.  Metadata that cannot be read at all is an error (the array
 * might be a variable), and so is a store with no array to serve: the
 * message then gives the first skipped array's reason. */
static int pick_arrays(const char *store, zarr_walk *w, const char *named,
                       int64_t *longest, int *nsel, ferry__err *err) {
  int ad = w->n > 0 && w->a[0].ad; /* AnnData: *longest holds the cells */
  *nsel = 0;
  if (!ad)
    *longest = -1;
  for (int i = 0; i < w->n && !ad; i++)
    if (w->a[i].ok && w->a[i].z.ndim >= 1 && w->a[i].z.shape[0] > *longest)
      *longest = w->a[i].z.shape[0];
  if (!ad)
    mark_coords(w, *longest);
  /* Arrays whose metadata could not be read at all are errors: they might
   * be the variables. */
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok && (x->err.code != FERRY_ENOTSUP || *longest < 0))
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
  }
  const zarr_array *first_bad = NULL;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok && named && named[0] && ferry__name_listed(named, x->name))
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
    if (!x->ok && !first_bad)
      first_bad = x;
    if (is_selected(x, *longest))
      (*nsel)++;
  }
  if (*nsel == 0 && first_bad)
    return ferry__seterr(err, first_bad->err.code, "store %s: %s", store,
                         first_bad->err.msg);
  if (*nsel == 0)
    return ferry__seterr(err, FERRY_EEMPTY,
                         ad ? "AnnData store %s holds no array served per "
                              "cell (docs/singlecell.md)"
                            : "store %s holds no array with a sample dimension",
                         store);
  return 0;
}

/* The reader: ferry's own (auto, native), or netCDF-C when zarr_reader
 * says netcdf and it can read the store (and was built in); netcdf where it
 * cannot is FERRY_ENOTSUP.  The native reader is the default since it reads
 * every store netCDF-C reads, v3 ones too, 5-10 times faster. */
static int pick_reader(const char *store, const ferry_options *opts,
                       const zarr_walk *w, int *use_netcdf, ferry__err *err) {
  const char *why = NULL;
  char mode[16];
  reader_option(opts, mode, sizeof mode);
  *use_netcdf = netcdf_can_open(w, &why);
#ifndef HAVE_NCZARR
  *use_netcdf = 0;
  why = "this ferry was built without netCDF-C (NCZarr); use zarr_reader="
        "native or auto";
#endif
  if (strcmp(mode, "netcdf") == 0 && !*use_netcdf)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: zarr_reader=netcdf, but netCDF-C cannot "
                         "read it: %s",
                         store, why);
  if (strcmp(mode, "netcdf") != 0)
    *use_netcdf = 0;
  return 0;
}

/* The per-variable arrays of out, for nsel variables. */
static int alloc_desc(ferry__part_desc *out, int nsel, const char *store,
                      ferry__err *err) {
  out->vars = calloc((size_t)nsel, sizeof *out->vars);
  out->paths = calloc((size_t)nsel, sizeof *out->paths);
  out->data_offset = calloc((size_t)nsel, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nsel, sizeof *out->file_size);
  out->rec = calloc((size_t)nsel, sizeof *out->rec);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec)
    return ferry__oom(err, -1,
                      (size_t)nsel *
                          (sizeof *out->vars + sizeof *out->paths +
                           sizeof *out->data_offset + sizeof *out->file_size +
                           sizeof *out->rec),
                      "the description of %d arrays of store %s", nsel, store);
  out->nvars = nsel;
  return 0;
}

/* The other groups of arrays that could be served together (issue 11):
 * readable arrays of another first-dimension length, grouped by it, as
 * "; other selections: vars=a,b (300 rows); ...". */
static void other_groups(const zarr_walk *w, int64_t longest, char *buf,
                         size_t cap) {
  for (int i = 0; i < w->n; i++) {
    const zarr_array *a = &w->a[i];
    if (!a->ok || a->z.ndim < 1 || a->z.shape[0] == longest)
      continue;
    int first = 1;
    for (int k = 0; k < i && first; k++)
      first = !(w->a[k].ok && w->a[k].z.ndim >= 1 &&
                w->a[k].z.shape[0] == a->z.shape[0]);
    if (!first)
      continue;
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%svars=", n ? "; " : "; other selections: ");
    for (int k = i, sep = 0; k < w->n; k++) {
      const zarr_array *b = &w->a[k];
      if (!b->ok || b->z.ndim < 1 || b->z.shape[0] != a->z.shape[0])
        continue;
      n = strlen(buf);
      snprintf(buf + n, cap - n, "%s%s", sep++ ? "," : "", b->name);
    }
    n = strlen(buf);
    snprintf(buf + n, cap - n, " (%lld rows)", (long long)a->z.shape[0]);
  }
}

/* What was chosen and what was skipped, and why (ferry info; the error of
 * a `vars` naming a skipped array), into out->notes. */
static int describe_notes(const char *store, zarr_walk *w, int64_t longest,
                          ferry__part_desc *out, ferry__err *err) {
  char chosen[512] = "", skipped[1536] = "";
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    char *buf = is_selected(x, longest) ? chosen : skipped;
    size_t cap = buf == chosen ? sizeof chosen : sizeof skipped;
    size_t n = strlen(buf);
    if (buf == chosen)
      snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", x->name);
    else if (!x->ok)
      snprintf(buf + n, cap - n, "%s%s (%s)", n ? "; " : "", x->name,
               x->err.msg);
    else if (x->ad && x->ad->why)
      snprintf(buf + n, cap - n, "%s%s (%s)", n ? "; " : "", x->name,
               x->ad->why);
    else if (x->coord)
      snprintf(buf + n, cap - n,
               "%s%s (a coordinate of dimension %s, not of the sample "
               "dimension)",
               n ? "; " : "", x->name, x->z.dim0);
    else if (x->z.ndim < 1)
      snprintf(buf + n, cap - n, "%s%s (a scalar, no sample dimension)",
               n ? "; " : "", x->name);
    else
      snprintf(buf + n, cap - n,
               "%s%s (%lld rows where the sample dimension has %lld)",
               n ? "; " : "", x->name, (long long)x->z.shape[0],
               (long long)longest);
  }
  int ad = w->n > 0 && w->a[0].ad;
  const char *dim = ad ? "" : mark_coords(w, longest);
  char others[1024] = "";
  if (!ad)
    other_groups(w, longest, others, sizeof others);
  size_t len =
      strlen(chosen) + strlen(skipped) + strlen(dim) + strlen(others) + 64;
  if (!(out->notes = malloc(len)))
    return ferry__oom(err, -1, len, "the selection notes of store %s", store);
  snprintf(out->notes, len, "chose %s (%lld %s%s%s); skipped %s%s", chosen,
           (long long)longest, ad ? "cells" : "rows", dim[0] ? " along " : "",
           dim, skipped[0] ? skipped : "nothing", others);
  return 0;
}

/* Variable k of out from array x (its name moves to the variable). */
static int describe_var(const char *store, const zarr_walk *w, zarr_array *x,
                        int use_netcdf, int lanes, ferry__part_desc *out, int k,
                        ferry__err *err) {
  ferry__var *v = &out->vars[k];
  v->name = x->name;
  x->name = NULL;
  v->dtype = x->z.dtype;
  v->swapped = x->z.swapped;
  v->row_ndim = x->z.ndim - 1;
  v->row_bytes = x->z.itemsize;
  for (int d = 1; d < x->z.ndim; d++) {
    v->row_shape[d - 1] = x->z.shape[d];
    v->row_bytes *= (size_t)x->z.shape[d];
  }
  v->chunk_rows = x->z.chunks[0];
  char *adir = ferry__zarr_array_dir(store, v->name, w->root_array);
  if (x->z.vlen && adir) { /* ragged: every chunk read for the lengths */
    int rc = 0;
    v->ragged = 2; /* values in compressed chunks: not bounded by a file */
    if (use_netcdf)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: array %s is variable-length, which "
                         "netCDF-C does not read: use zarr_reader=native",
                         store, v->name);
    else if (!out->roff &&
             !(out->roff = calloc((size_t)out->nvars, sizeof *out->roff)))
      rc = ferry__oom(err, -1, (size_t)out->nvars * sizeof *out->roff,
                      "the offsets of store %s", store);
    else
      rc = ferry__zarr_vlen_offsets(adir, &x->z, out->num_samples,
                                    &out->roff[k], err);
    if (rc) {
      free(adir);
      return rc;
    }
  }
  if (x->ad) { /* AnnData: the names of its values; a CSR matrix's rows */
    v->categories = x->ad->cats;
    x->ad->cats = NULL;
  }
  if (x->ad && x->ad->csr && adir) {
    int rc = 0;
    v->ragged = 2; /* values in compressed chunks: not bounded by a file */
    v->width = x->ad->width;
    v->chunk_rows = 0; /* its chunks hold values, not cells */
    if (use_netcdf)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: array %s is a sparse matrix's, read as "
                         "rows, which netCDF-C does not do: use "
                         "zarr_reader=native",
                         store, v->name);
    else if (!out->roff &&
             !(out->roff = calloc((size_t)out->nvars, sizeof *out->roff)))
      rc = ferry__oom(err, -1, (size_t)out->nvars * sizeof *out->roff,
                      "the offsets of store %s", store);
    if (rc) {
      free(adir);
      return rc;
    }
    out->roff[k] = x->ad->roff;
    x->ad->roff = NULL;
  }
  /* what a failed storage text wanted: its directory's path, or (a bound)
   * the text itself */
  size_t storage_want =
      adir ? Z_STORAGE_MAX : strlen(store) + strlen(v->name) + 2;
  int64_t cache = 0;
  v->storage = adir
                   ? storage_text(adir, &x->z, use_netcdf ? "netcdf" : "native",
                                  lanes, &cache)
                   : NULL;
  v->cache_bytes = (size_t)cache;
  free(adir);
  /* Every rank checks its .zarray against its size and hash.  The path
   * each rank opens is the store directory (the netCDF reader makes its
   * URL from it). */
  out->file_size[k] = x->z.meta_size;
  if (!(out->paths[k] = strdup(store)) || !v->storage ||
      ferry__zarr_rec_put(&out->rec[k], use_netcdf ? ZREC_NETCDF : ZREC_NATIVE,
                          x->z.hash) < 0)
    return ferry__oom(err, -1,
                      !out->paths[k] ? strlen(store) + 1
                      : !v->storage  ? storage_want
                                     : ZREC_LEN,
                      "the description of array %s of store %s", v->name,
                      store);
  return 0;
}

int ferry__zarr_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err) {
  zarr_walk w;
  ferry__ad_array *ad = NULL;
  int rc = 0, nsel = 0, use_netcdf = 0;
  int64_t longest = -1;
  char named[4096] = "";
  if (opts && ferry_options_get(opts, "vars", named, sizeof named) != 0)
    named[0] = '\0';
  char *store = ferry__zarr_store_dir(path);
  memset(out, 0, sizeof *out);
  memset(&w, 0, sizeof w);
  if (!store)
    return ferry__oom(err, -1, strlen(path) + 1, "the store path of %s", path);
  if ((rc = check_store_dir(store, err)) < 0 ||
      (rc = ferry__zarr_walk_store(store, &w, err)) < 0 ||
      (rc = ferry__zarr_anndata(store, &w, &ad, &longest, err)) < 0)
    goto cleanup;
  for (int i = 0; ad && i < w.n; i++) /* AnnData: a sample is a cell */
    w.a[i].ad = &ad[i];
  if ((rc = pick_arrays(store, &w, named, &longest, &nsel, err)) < 0 ||
      (rc = pick_reader(store, opts, &w, &use_netcdf, err)) < 0 ||
      (rc = alloc_desc(out, nsel, store, err)) < 0)
    goto cleanup;
  out->num_samples = longest;
  if ((rc = describe_notes(store, &w, longest, out, err)) < 0)
    goto cleanup;
  for (int i = 0, k = 0; i < w.n && rc == 0; i++)
    if (is_selected(&w.a[i], longest))
      rc = describe_var(store, &w, &w.a[i], use_netcdf,
                        ferry__pool_lanes_for(opts), out, k++, err);
cleanup:
  ferry__zarr_anndata_free(ad, w.n);
  ferry__zarr_walk_free(&w);
  free(store);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}
