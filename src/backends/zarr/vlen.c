/*
 * zarr/vlen.c - Zarr variable-length arrays as ragged variables
 * (docs/ragged.md): a one-dimensional v2 array of dtype "|O" whose first
 * filter is numcodecs' vlen-utf8 or vlen-bytes (a ragged uint8 variable:
 * each item's bytes) or vlen-array (a ragged variable of its dtype), as
 * zarr-python 2 writes them with object_codec=; a one-dimensional v3 array
 * of data_type string or bytes with the vlen-utf8 or vlen-bytes codec, as
 * zarr-python 3 writes them, sharded or not, with compressors and crc32c
 * after it.
 *
 * A chunk, once its compressor is undone, is the item count (u32,
 * little-endian), then each item as its byte length (u32) and its bytes; a
 * chunk always holds chunks[0] items (the last one's extra items empty).
 * Correct, not fast: the lengths live only in the chunks, so describe
 * (rank 0) reads and decodes every chunk once at ferry_open, and a read
 * decodes each chunk it touches on the I/O thread (not on the decode
 * pool), checking every length against the open's.
 */
#include "config.h"
#include "backends/zarr/zarr.h"
#include "util/record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest chunk file read: 1 GiB (a corrupt size is an error). */
#define VLEN_FILE_MAX ((int64_t)1 << 30)

/* n bytes at off of fd into a new buffer (*raw); 0, or a code with why. */
static int read_new(int fd, int64_t off, size_t n, unsigned char **raw,
                    char *why, size_t wl) {
  size_t got = 0;
  if ((int64_t)n > VLEN_FILE_MAX) {
    snprintf(why, wl, "%zu bytes, more than ferry reads for one chunk", n);
    return FERRY_EFORMAT;
  }
  if (!(*raw = malloc(n ? n : 1))) {
    snprintf(why, wl, "out of memory for its %zu bytes", n);
    return FERRY_ENOMEM;
  }
  errno = 0;
  if (ferry__pread_full(fd, *raw, n, off, &got) != 0 || got != n) {
    snprintf(why, wl, "read failed at offset %lld: %s",
             (long long)off + (long long)got,
             got != n && errno == 0 ? "end of file" : strerror(errno));
    free(*raw);
    *raw = NULL;
    return FERRY_EIO;
  }
  return 0;
}

/* The stored bytes of inner chunk c of a sharded array, from the open shard
 * fd (size bytes): 1 in *raw, 0 absent (an empty index entry). */
static int inner_stored(int fd, int64_t size, const zmeta *z, int64_t c,
                        unsigned char **raw, size_t *n, char *why, size_t wl) {
  size_t nent = (size_t)z->n_inner * 2, ib = z->index_bytes;
  int64_t in = c % z->per_shard[0];
  uint64_t e[2];
  unsigned char *ix = NULL;
  if ((uint64_t)size < ib) {
    snprintf(why, wl, "shorter (%lld bytes) than its index (%zu bytes)",
             (long long)size, ib);
    return FERRY_EFORMAT;
  }
  int64_t at = z->index_start ? 0 : size - (int64_t)ib;
  int rc = read_new(fd, at, ib, &ix, why, wl);
  if (rc)
    return rc;
  if (z->index_crc &&
      ferry__le32_load(ix + nent * 8) != ferry__crc32c(ix, nent * 8)) {
    snprintf(why, wl, "its index fails its crc32c (corrupt shard)");
    free(ix);
    return FERRY_EFORMAT;
  }
  memcpy(e, ix + (size_t)in * 16, 16);
  free(ix);
  if (z->index_swapped)
    ferry__byteswap(e, 2, 8);
  if (e[0] == UINT64_MAX && e[1] == UINT64_MAX)
    return 0;
  uint64_t lo = z->index_start ? ib : 0,
           hi = z->index_start ? (uint64_t)size : (uint64_t)size - ib;
  if (e[0] < lo || e[0] > hi || e[1] > hi - e[0]) {
    snprintf(why, wl,
             "inner chunk %lld: its index entry (offset %llu, %llu bytes) "
             "points outside the shard's data (corrupt shard)",
             (long long)in, (unsigned long long)e[0], (unsigned long long)e[1]);
    return FERRY_EFORMAT;
  }
  *n = (size_t)e[1];
  rc = read_new(fd, (int64_t)e[0], *n, raw, why, wl);
  return rc ? rc : 1;
}

/* The stored bytes of chunk c (*raw, malloc'd, *n bytes): 1, or 0 when
 * it is absent (v3: its items are the empty fill value); *path names the
 * chunk file or shard (malloc'd). */
static int chunk_stored(const char *adir, const zmeta *z, int64_t c,
                        unsigned char **raw, size_t *n, char **path, char *why,
                        size_t wl) {
  int64_t idx[Z_MAX_DIMS] = {c};
  struct stat st;
  *raw = NULL;
  if (!(*path = ferry__zarr_chunk_path(adir, z, idx))) {
    snprintf(why, wl, "out of memory for a chunk path");
    return FERRY_ENOMEM;
  }
  int fd = open(*path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && z->v3 && z->has_fill)
    return 0; /* v3: its empty fill value (v2: every chunk is written) */
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(why, wl,
             "%s (a variable-length array has no fill value: "
             "every chunk must be written)",
             strerror(errno));
    if (fd >= 0)
      close(fd);
    return errno == ENOENT ? FERRY_EFORMAT : FERRY_EIO;
  }
  int rc = 1;
  if (z->sharded)
    rc = inner_stored(fd, (int64_t)st.st_size, z, c, raw, n, why, wl);
  else if ((rc = read_new(fd, 0, (size_t)st.st_size, raw, why, wl)) == 0)
    rc = 1;
  if (rc == 1 && !z->sharded)
    *n = (size_t)st.st_size;
  close(fd);
  return rc;
}

/* Chunk c's items, decoded: *dec (malloc'd, *declen bytes) and *path
 * (malloc'd, for messages).  An absent chunk (v3, with its empty fill
 * value) is k empty items.  0, or a code with why set. */
static int chunk_decoded(const char *adir, const zmeta *z, int64_t c,
                         unsigned char **dec, size_t *declen, char **path,
                         char *why, size_t wl) {
  unsigned char *raw = NULL;
  size_t n = 0;
  *dec = NULL;
  int rc = chunk_stored(adir, z, c, &raw, &n, path, why, wl);
  if (rc == 0) { /* absent: chunks[0] empty items */
    n = 4 + 4 * (size_t)z->chunks[0];
    if (!(raw = calloc(1, n))) {
      snprintf(why, wl, "out of memory for an empty chunk");
      return FERRY_ENOMEM;
    }
    for (int b = 0; b < 4; b++) /* the count, little-endian */
      raw[b] = (unsigned char)((uint64_t)z->chunks[0] >> (8 * b));
    *dec = raw;
    *declen = n;
    return 0;
  }
  if (rc < 0)
    return rc;
  if (z->crc &&
      (n < 4 || ferry__le32_load(raw + n - 4) != ferry__crc32c(raw, n - 4))) {
    snprintf(why, wl, "it fails its crc32c (corrupt)");
    free(raw);
    return FERRY_EFORMAT;
  }
  n -= z->crc ? 4 : 0;
  for (int k = z->ncodecs - 1; k >= 0; k--) { /* compressors, last first */
    void *out = NULL;
    size_t outlen = 0;
    const char *w = NULL;
    if (ferry__codec_decode(z->codec[k], z->param[k], raw, n, 0, &out, &outlen,
                            &w) < 0) {
      snprintf(why, wl, "cannot decode it with %s: %s",
               ferry__codec_name(z->codec[k]), w ? w : "?");
      free(raw);
      return FERRY_EFORMAT;
    }
    free(raw);
    raw = out;
    n = outlen;
  }
  *dec = raw;
  *declen = n;
  return 0;
}

/* The first k items of a decoded chunk: their lengths in elements (lens)
 * and where their bytes are (at, may be NULL).  0, or FERRY_EFORMAT with
 * why naming the item. */
int ferry__zarr_vlen_items(const unsigned char *d, size_t len, int64_t k,
                           size_t el, int64_t *lens, size_t *at, char *why,
                           size_t wl) {
  if (len < 4 || ferry__le32_load(d) < (uint64_t)k) {
    snprintf(why, wl, "it holds %lld items where the array needs %lld",
             len < 4 ? -1LL : (long long)ferry__le32_load(d), (long long)k);
    return FERRY_EFORMAT;
  }
  size_t p = 4;
  for (int64_t i = 0; i < k; i++) {
    if (len - p < 4) {
      snprintf(why, wl, "item %lld: truncated before its length", (long long)i);
      return FERRY_EFORMAT;
    }
    size_t b = ferry__le32_load(d + p);
    p += 4;
    if (b > len - p || b % el) {
      snprintf(why, wl, "item %lld: %zu bytes %s", (long long)i, b,
               b > len - p ? "past the chunk's end" : "are not whole elements");
      return FERRY_EFORMAT;
    }
    lens[i] = (int64_t)(b / el);
    if (at)
      at[i] = p;
    p += b;
  }
  return 0;
}

int ferry__zarr_vlen_offsets(const char *adir, const zmeta *z, int64_t n,
                             int64_t **out, ferry__err *err) {
  int64_t c0 = z->chunks[0];
  int64_t *o = malloc(((size_t)n + 1) * sizeof *o);
  if (!o)
    return ferry__oom(err, -1, ((size_t)n + 1) * sizeof *o,
                      "the lengths of the %lld items of array %s", (long long)n,
                      adir);
  o[0] = 0;
  int rc = 0;
  char why[400] = "";
  for (int64_t c = 0; !rc && c * c0 < n; c++) {
    unsigned char *d = NULL;
    size_t dl = 0;
    char *path = NULL;
    int64_t k = n - c * c0 < c0 ? n - c * c0 : c0;
    rc = chunk_decoded(adir, z, c, &d, &dl, &path, why, sizeof why);
    if (!rc)
      rc = ferry__zarr_vlen_items(d, dl, k, z->itemsize, o + c * c0 + 1, NULL,
                                  why, sizeof why);
    for (int64_t i = 0; !rc && i < k; i++)
      o[c * c0 + 1 + i] += o[c * c0 + i];
    if (rc)
      rc = rc == FERRY_ENOMEM
               ? ferry__oom(err, -1, (size_t)c0 * 16, "chunk %s", path)
               : ferry__seterr(err, rc,
                               "variable-length array %s: chunk %s: %s "
                               "(offset 0)",
                               adir, path ? path : "?", why);
    free(d);
    free(path);
  }
  if (rc) {
    free(o);
    return rc;
  }
  *out = o;
  return 0;
}

int ferry__zarr_vlen_read(const zvar *zv, const char *store, const char *vname,
                          int rank, int64_t row, int64_t nrows, size_t el,
                          const int64_t *roff, unsigned char *buf,
                          ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t c0 = z->chunks[0], end = row + nrows;
  int64_t *lens = malloc((size_t)c0 * sizeof *lens);
  size_t *at = malloc((size_t)c0 * sizeof *at), put = 0;
  int rc = 0;
  char why[400] = "";
  if (!lens || !at)
    rc = ferry__oom(err, rank, (size_t)c0 * 16,
                    "the items of a chunk of array %s of store %s", vname,
                    store);
  for (int64_t c = row / c0; !rc && c * c0 < end; c++) {
    unsigned char *d = NULL;
    size_t dl = 0;
    char *path = NULL;
    int64_t a = c * c0 > row ? c * c0 : row;
    int64_t b = (c + 1) * c0 < end ? (c + 1) * c0 : end;
    rc = chunk_decoded(zv->adir, z, c, &d, &dl, &path, why, sizeof why);
    if (!rc)
      rc = ferry__zarr_vlen_items(d, dl, b - c * c0, el, lens, at, why,
                                  sizeof why);
    for (int64_t i = a; !rc && i < b; i++) {
      int64_t L = lens[i - c * c0];
      if (L != roff[i + 1] - roff[i]) {
        snprintf(why, sizeof why,
                 "item %lld holds %lld elements where rank 0 counted %lld "
                 "at open (the store changed?)",
                 (long long)i, (long long)L,
                 (long long)(roff[i + 1] - roff[i]));
        rc = FERRY_EFORMAT;
        break;
      }
      memcpy(buf + put, d + at[i - c * c0], (size_t)L * el);
      put += (size_t)L * el;
    }
    if (rc && rc != FERRY_ENOMEM)
      rc = ferry__seterr(err, rc,
                         "store %s, variable-length array %s, rank %d, chunk "
                         "%s: %s",
                         store, vname, rank, path ? path : "?", why);
    else if (rc)
      rc = ferry__oom(err, rank, dl, "chunk %s of store %s", path, store);
    free(d);
    free(path);
  }
  free(lens);
  free(at);
  return rc;
}
