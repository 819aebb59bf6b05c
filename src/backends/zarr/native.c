/*
 * native.c - ferry's own Zarr chunk reader: reads chunk files with pread
 * and decodes them with the codecs of src/plugins/codec.c (the same
 * decoders as the NCZarr plugins), without netCDF-C.  A chunk a read covers
 * whole is decoded (or read, uncompressed) straight into the read buffer;
 * other chunks through a band of rows kept per variable.  Its buffers are
 * allocated once per open store, never per chunk, and counted in
 * cache_bytes by describe (meta.c).  Every chunk file a read touches is
 * checked first (ferry__zarr_check_chunk): present, or absent with a
 * fill_value; of the exact size when uncompressed.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/zarr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* pread exactly n bytes at off (backends/toolkit.c); 0, or -1 with errno
 * set, 0 when the file was shorter. */
static int pread_exact(int fd, void *buf, size_t n, off_t off) {
  size_t got = 0;
  if (ferry__pread_full(fd, buf, n, (int64_t)off, &got) < 0)
    return -1;
  if (got < n) {
    errno = 0;
    return -1;
  }
  return 0;
}

/* Check chunk file p before a read: 1 present, 0 absent (fill value),
 * or an error. */
int ferry__zarr_check_chunk(const zvar *zv, const char *p, const char *store,
                            const char *vname, int rank, int64_t row,
                            ferry__err *err, off_t *size) {
  struct stat st;
  if (stat(p, &st) != 0) {
    if (errno != ENOENT)
      return ferry__seterr(err, ferry__errno_code(errno),
                           "chunk file %s (store %s, array %s, rank %d, row "
                           "%lld): %s",
                           p, store, vname, rank, (long long)row,
                           strerror(errno));
    if (!zv->z.has_fill)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "chunk file %s is missing and array %s has no "
                           "fill_value (zarr-python would return "
                           "uninitialised memory): store %s, rank %d, row "
                           "%lld",
                           p, vname, store, rank, (long long)row);
    return 0;
  }
  if (!S_ISREG(st.st_mode))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s is not a regular file (a FIFO, "
                         "directory, socket or device): store %s, array %s, "
                         "rank %d, row %lld",
                         p, store, vname, rank, (long long)row);
  if (!zv->z.ncodecs && (size_t)st.st_size != zv->z.chunk_bytes)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s is %lld bytes, not the %zu of an "
                         "uncompressed chunk (truncated?): store %s, array "
                         "%s, rank %d, row %lld",
                         p, (long long)st.st_size, zv->z.chunk_bytes, store,
                         vname, rank, (long long)row);
  *size = st.st_size;
  return 1;
}

/* Read and decode the chunk idx into out (chunk_bytes, the fill value when
 * the file is absent), through the variable's reused buffers: a chunk file
 * is read into raw, each codec but the last decodes into mid or raw, the
 * last into out.  No allocation once the buffers exist.  On failure out
 * holds unspecified bytes that the caller must not serve. */
static int load_chunk(zvar *zv, const int64_t *idx, const char *store,
                      const char *vname, int rank, int64_t row,
                      unsigned char *out, ferry__err *err) {
  const zmeta *z = &zv->z;
  char *p = ferry__zarr_chunk_path(zv->adir, z, idx);
  int rc = 0, fd = -1;
  if (!p)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
  const char *kind = "";
  fd = ferry__open_regular(p, &kind); /* never blocks on a FIFO */
  if (fd == -2) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "chunk file %s is %s, not a regular file: store %s, "
                       "array %s, rank %d, row %lld",
                       p, kind, store, vname, rank, (long long)row);
    goto cleanup;
  }
  if (fd < 0 && errno == ENOENT) {
    if (!z->has_fill) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s is missing and array %s has no "
                         "fill_value (zarr-python would return "
                         "uninitialised memory): store %s, rank %d, row "
                         "%lld",
                         p, vname, store, rank, (long long)row);
      goto cleanup;
    }
    for (size_t i = 0; i < z->chunk_bytes; i += z->itemsize)
      memcpy(out + i, z->fill, z->itemsize);
    goto cleanup;
  }
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno),
                       "chunk file %s (store %s, array %s, rank %d, row "
                       "%lld): %s",
                       p, store, vname, rank, (long long)row, strerror(errno));
    goto cleanup;
  }
  size_t size = (size_t)st.st_size;
  if (!z->ncodecs ? size != z->chunk_bytes
                  : size > zarr_stored_bound(z->chunk_bytes)) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       !z->ncodecs
                           ? "chunk file %s is %lld bytes, not the %zu of an "
                             "uncompressed chunk (truncated?): store %s, "
                             "array %s, rank %d, row %lld"
                           : "chunk file %s is %lld bytes, more than any "
                             "codec stores for a chunk of %zu bytes "
                             "(corrupt?): store %s, array %s, rank %d, row "
                             "%lld",
                       p, (long long)st.st_size, z->chunk_bytes, store, vname,
                       rank, (long long)row);
    goto cleanup;
  }
  if (z->ncodecs && !zv->raw &&
      !(zv->raw = malloc(zarr_stored_bound(z->chunk_bytes)))) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
    goto cleanup;
  }
  if (z->ncodecs > 1 && !zv->mid && !(zv->mid = malloc(z->chunk_bytes))) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
    goto cleanup;
  }
  errno = 0;
  if (pread_exact(fd, z->ncodecs ? zv->raw : out, size, 0) < 0) {
    rc = ferry__seterr(err, FERRY_EIO,
                       "cannot read chunk file %s (store %s, array %s, rank "
                       "%d, row %lld): %s",
                       p, store, vname, rank, (long long)row,
                       errno ? strerror(errno) : "shorter than it was");
    goto cleanup;
  }
  /* Codecs in decode order: compressor first.  Every stage decodes to
   * chunk_bytes (the only filter ferry knows, shuffle, keeps the size). */
  unsigned char *src = zv->raw;
  for (int c = z->ncodecs - 1; c >= 0; c--) {
    unsigned char *dst = c == 0 ? out : src == zv->raw ? zv->mid : zv->raw;
    const char *why = NULL;
    if (ferry__codec_decode_into(z->codec[c], z->param[c], src, size, dst,
                                 z->chunk_bytes, &why) < 0) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s cannot be decoded with %s: %s (store "
                         "%s, array %s, rank %d, row %lld)",
                         p, ferry__codec_name(z->codec[c]), why, store, vname,
                         rank, (long long)row);
      goto cleanup;
    }
    src = dst;
    size = z->chunk_bytes;
  }
cleanup:
  if (fd >= 0)
    close(fd);
  free(p);
  return rc;
}

/* Copy the part of chunk (decoded, idx) that lies in band rows into band
 * (c0 full rows, row-major).  Recursive over dimensions 1..ndim-1. */
static void place(const zmeta *z, const unsigned char *chunk,
                  unsigned char *band, const int64_t *idx, int d, size_t coff,
                  size_t boff) {
  size_t isz = z->itemsize;
  int64_t start = idx[d] * z->chunks[d];
  int64_t n =
      z->shape[d] - start < z->chunks[d] ? z->shape[d] - start : z->chunks[d];
  /* strides in elements of dimension d for the chunk and the band */
  size_t cstride = 1, bstride = 1;
  for (int k = d + 1; k < z->ndim; k++) {
    cstride *= (size_t)z->chunks[k];
    bstride *= (size_t)z->shape[k];
  }
  if (d == z->ndim - 1) {
    memcpy(band + (boff + (size_t)start) * isz, chunk + coff * isz,
           (size_t)n * isz);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    place(z, chunk, band, idx, d + 1, coff + (size_t)i * cstride,
          boff + (size_t)(start + i) * bstride);
}

/* Native reader: rows [row, row+nrows) of one variable.  A chunk of rows
 * that the read covers whole is decoded (or, uncompressed, read) straight
 * into buf; any other chunk goes through the band, which then serves the
 * following reads of the same rows. */
int ferry__zarr_native_read(zvar *zv, const char *store, const char *vname,
                            int rank, int64_t row, int64_t nrows,
                            size_t row_bytes, unsigned char *buf,
                            ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t c0 = z->chunks[0];
  int rows_layout = zarr_chunk_is_rows(z);
  int rc = 0;
  for (int64_t r = row; r < row + nrows && rc == 0;) {
    int64_t ci = r / c0, bstart = ci * c0;
    int64_t bend = bstart + c0 < row + nrows ? bstart + c0 : row + nrows;
    int64_t take = bend - r;
    unsigned char *dst = buf + (size_t)(r - row) * row_bytes;
    if (zv->band == ci) {
      memcpy(dst, zv->band_buf + (size_t)(r - bstart) * row_bytes,
             (size_t)take * row_bytes);
      r = bend;
      continue;
    }
    int64_t idx[Z_MAX_DIMS] = {0};
    idx[0] = ci;
    if (rows_layout && r == bstart && take == c0) {
      /* The read covers the whole chunk: decode it into its rows. */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, dst, err)) < 0)
        return rc;
      r = bend;
      continue;
    }
    if (!z->ncodecs && rows_layout) {
      /* Part of an uncompressed chunk: pread just those rows. */
      char *p = ferry__zarr_chunk_path(zv->adir, z, idx);
      off_t size = 0;
      if (!p)
        return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                             rank);
      int present =
          ferry__zarr_check_chunk(zv, p, store, vname, rank, r, err, &size);
      if (present < 0) {
        free(p);
        return present;
      }
      if (!present) {
        for (size_t i = 0; i < (size_t)take * row_bytes; i += z->itemsize)
          memcpy(dst + i, z->fill, z->itemsize);
      } else {
        int fd = ferry__open_regular(p, NULL); /* checked regular above */
        if (fd < 0 ||
            pread_exact(fd, dst, (size_t)take * row_bytes,
                        (off_t)((size_t)(r - bstart) * row_bytes)) < 0)
          rc = ferry__seterr(err, FERRY_EIO,
                             "short read of chunk file %s (store %s, array "
                             "%s, rank %d, row %lld): %s",
                             p, store, vname, rank, (long long)r,
                             errno ? strerror(errno) : "shorter than it was");
        if (fd >= 0)
          close(fd);
      }
      free(p);
      r = bend;
      continue;
    }
    /* Decode the band of chunks holding rows [bstart, bstart+c0). */
    zv->band = -1;
    if (!zv->band_buf && !(zv->band_buf = malloc((size_t)c0 * row_bytes + 1)))
      return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
    if (rows_layout) {
      /* One chunk, laid out as the band's rows (the last chunk may
       * reach past the array's end: chunk_bytes is c0 rows). */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->band_buf, err)) <
          0)
        return rc;
    } else {
      if (!zv->chunk_buf && !(zv->chunk_buf = malloc(z->chunk_bytes)))
        return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                             rank);
      for (int64_t a = 0; a < z->across; a++) {
        int64_t rest = a;
        for (int d = z->ndim - 1; d >= 1; d--) {
          int64_t nd = zarr_nchunks(z, d);
          idx[d] = rest % nd;
          rest /= nd;
        }
        if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->chunk_buf,
                             err)) < 0)
          return rc;
        /* Rows of the band, each placed across dimensions 1.. */
        size_t crow = z->chunk_bytes / (size_t)c0 / z->itemsize;
        size_t brow = row_bytes / z->itemsize;
        for (int64_t i = 0; i < c0 && bstart + i < z->shape[0]; i++)
          place(z, zv->chunk_buf, zv->band_buf, idx, 1, (size_t)i * crow,
                (size_t)i * brow);
      }
    }
    zv->band = ci;
    memcpy(dst, zv->band_buf + (size_t)(r - bstart) * row_bytes,
           (size_t)take * row_bytes);
    r = bend;
  }
  return rc;
}
