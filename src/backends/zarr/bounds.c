/*
 * bounds.c - the sizes the zarr backend derives from an array's metadata
 * (.zarray or zarr.json), judged before anything is allocated from them.
 * Every product of sizes must fit in 64 bits, and a size the metadata
 * cannot honestly claim is corruption, refused naming the field: issue 30
 * found a .zarray whose chunks were [2^40, 10] for an array of 10 x 10
 * floats, which ferry info accepted (a "decode cache" of 40 TiB) and the
 * first read turned into "out of memory: 43980465111041 bytes for a band of
 * chunks".  Zarr lets a chunk reach past the array (zarr-python writes
 * chunks of 1000 rows for an array of 3), so such a chunk is refused only
 * when its padding makes it absurd: larger than Z_PAD_MAX.  A chunk that
 * lies inside the array may be as large as a band allows; the memory
 * budget (cache_bytes) then says what it costs.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/zarr/zarr.h"

#include <stdio.h>

/* The largest band of chunks (one chunk along dimension 0, every chunk
 * along the others) ferry accepts: the native reader keeps about four of
 * its size per variable (native_cache_bytes), and that sum must fit. */
#define Z_BAND_MAX (INT64_MAX / 8)

/* The largest decoded chunk accepted when the chunk reaches past the
 * array's shape on some dimension: 1 GiB.  Beyond it the metadata claims a
 * chunk mostly made of padding no writer stores, and allocating it would
 * fail (or swap) on the first read. */
#define Z_PAD_MAX ((int64_t)1 << 30)

/* a * b into *out; 1 when it does not fit in int64 (a, b >= 0). */
static int mul_overflows(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/* The metadata field that holds z->chunks, as the user would look it up. */
static const char *chunks_field(const zmeta *z) {
  if (!z->v3)
    return "chunks";
  return z->sharded ? "sharding_indexed chunk_shape" : "chunk_grid chunk_shape";
}

/* "(a, b, c)" of n sizes into buf. */
static void dims_text(char *buf, size_t len, const int64_t *v, int n) {
  size_t used = (size_t)snprintf(buf, len, "(");
  for (int d = 0; d < n && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "",
                             (long long)v[d]);
  if (used < len)
    snprintf(buf + used, len - used, "%s)", n == 1 ? "," : "");
}

/* A chunk of `chunk` decoded bytes that reaches past a non-empty array is
 * refused above Z_PAD_MAX (an empty array has no chunk to read). */
static int check_padding(const char *path, const zmeta *z, int64_t chunk,
                         ferry__err *err) {
  int past = 0;
  for (int d = 0; d < z->ndim; d++) {
    if (z->shape[d] == 0)
      return 0;
    past |= z->chunks[d] > z->shape[d];
  }
  if (!past || chunk <= Z_PAD_MAX)
    return 0;
  char ct[160], st[160];
  dims_text(ct, sizeof ct, z->chunks, z->ndim);
  dims_text(st, sizeof st, z->shape, z->ndim);
  return ferry__seterr(err, FERRY_EFORMAT,
                       "%s: corrupt metadata: %s %s reaches past the array's "
                       "shape %s and one chunk would decode to %lld bytes, "
                       "more than the %lld (1 GiB) ferry accepts for a chunk "
                       "larger than its array",
                       path, chunks_field(z), ct, st, (long long)chunk,
                       (long long)Z_PAD_MAX);
}

int ferry__zarr_derive_sizes(const char *path, zmeta *z, ferry__err *err) {
  int64_t chunk = (int64_t)z->itemsize, row = (int64_t)z->itemsize;
  int64_t across = 1, nchunks = 1, band = 0;
  for (int d = 0; d < z->ndim; d++) {
    if (mul_overflows(chunk, z->chunks[d], &chunk))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: %s: the bytes of one "
                           "chunk overflow 64 bits",
                           path, chunks_field(z));
    if (d > 0 && (mul_overflows(row, z->shape[d], &row) ||
                  mul_overflows(across, zarr_nchunks(z, d), &across)))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: shape: the bytes or chunks "
                           "of one sample (a row of dimension 0) overflow 64 "
                           "bits",
                           path);
  }
  if (z->ndim > 0 && mul_overflows(zarr_nchunks(z, 0), across, &nchunks))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: shape and chunks: the number "
                         "of chunks overflows 64 bits",
                         path);
  if (mul_overflows(chunk, across, &band) || band > Z_BAND_MAX)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: %s: one band of chunks "
                         "(one along dimension 0, all along the others) "
                         "holds more than 2^60 bytes",
                         path, chunks_field(z));
  int rc = check_padding(path, z, chunk, err);
  if (rc < 0)
    return rc;
  z->chunk_bytes = (size_t)chunk;
  z->across = across;
  return 0;
}
