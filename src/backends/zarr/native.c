/*
 * native.c - ferry's own Zarr chunk reader: reads chunk files with pread
 * and decodes them with the codecs of src/codecs/codec.c (the same
 * decoders as the NCZarr plugins), without netCDF-C.  A chunk a read covers
 * whole is decoded (or read, uncompressed) straight into the read buffer;
 * other chunks through a band of rows kept per variable.  Its buffers are
 * allocated once per open store, never per chunk, and counted in
 * cache_bytes by describe (describe.c).  Every chunk file a read touches is
 * checked first (ferry__zarr_check_chunk): present, or absent with a
 * fill_value; of the exact size when uncompressed.  Zarr v3: a chunk's
 * crc32c is checked before decoding; a sharded array's unit is the inner
 * chunk, found through its shard's index, which each rank reads once per
 * shard (checked: crc32c, every entry inside the shard) and keeps in a few
 * slots, so that reads are pread's of inner chunks' byte ranges, adjacent
 * uncompressed ones coalesced, never whole shards.  The chunks a read
 * covers whole are read here, in order, into a lane's buffer and decoded
 * on the I/O state's decode pool (pool.c), straight into the read buffer;
 * the chunk's lane is the number of chunks queued since the last wait, so
 * no lane buffer is reused before its chunk is decoded.
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
#include <pthread.h>
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

/* ---- CRC-32C ------------------------------------------------------------ */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Zarr v3's
 * crc32c codec appends it (little-endian) to a chunk or a shard index.  A
 * table built once; bytewise, which is far faster than the disk. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t ferry__crc32c(const void *p, size_t n) {
  const unsigned char *b = p;
  uint32_t c = 0xFFFFFFFFu;
  pthread_once(&crc_once, crc_init);
  for (size_t i = 0; i < n; i++)
    c = crc_table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* ---- Where a chunk's bytes are ------------------------------------------ */

/* What the messages about one chunk name. */
typedef struct zwhere {
  const char *store, *vname;
  int rank;
  int64_t row;
  char what[1024]; /* "chunk file P", "inner chunk N of shard file P" */
} zwhere;

#define WHERE_FMT "%s (store %s, array %s, rank %d, row %lld)"
#define WHERE_ARGS(w)                                                          \
  (w)->what, (w)->store, (w)->vname, (w)->rank, (long long)(w)->row

/* The shard of inner chunk idx: its linear number (*key) and the inner
 * chunk's number inside it (*inner). */
static int64_t shard_of(const zmeta *z, const int64_t *idx, int64_t *inner) {
  int64_t key = 0, in = 0;
  for (int d = 0; d < z->ndim; d++) {
    int64_t n = zarr_nchunks(z, d);
    int64_t nshard = n / z->per_shard[d] + (n % z->per_shard[d] != 0);
    key = key * nshard + idx[d] / z->per_shard[d];
    in = in * z->per_shard[d] + idx[d] % z->per_shard[d];
  }
  *inner = in;
  return key;
}

/* Open the shard file p (number key), keeping it open for the next inner
 * chunks: 1 open, 0 absent (every inner chunk is the fill value). */
static int open_shard(zvar *zv, const char *p, int64_t key, zwhere *w,
                      ferry__err *err) {
  if (zv->shard_fd >= 0 && zv->shard_key == key)
    return 1;
  if (zv->shard_fd >= 0)
    close(zv->shard_fd);
  zv->shard_fd = -1;
  const char *kind = "";
  int fd = ferry__open_regular(p, &kind);
  if (fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "shard file %s is %s, not a regular file: store %s, "
                         "array %s, rank %d, row %lld",
                         p, kind, w->store, w->vname, w->rank,
                         (long long)w->row);
  if (fd < 0 && errno == ENOENT)
    return 0;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return ferry__seterr(err, ferry__errno_code(e), WHERE_FMT ": %s",
                         WHERE_ARGS(w), strerror(e));
  }
  zv->shard_fd = fd;
  zv->shard_key = key;
  zv->shard_size = (int64_t)st.st_size;
  return 1;
}

/* Check entry i (offset o, n bytes) of a shard index: empty (all ones), or
 * inside the shard's data, which the index does not overlap. */
static int check_entry(const zvar *zv, uint64_t o, uint64_t n, int64_t i,
                       zwhere *w, ferry__err *err) {
  const zmeta *z = &zv->z;
  uint64_t size = (uint64_t)zv->shard_size, ix = z->index_bytes;
  uint64_t lo = z->index_start ? ix : 0, hi = z->index_start ? size : size - ix;
  if (o == UINT64_MAX && n == UINT64_MAX)
    return 0;
  if (o < lo || o > hi || n > hi - o)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: its index entry %lld (offset %llu, %llu bytes) "
                         "points outside the shard's data (bytes %llu to "
                         "%llu of %llu; corrupt shard): store %s, array %s, "
                         "rank %d, row %lld",
                         w->what, (long long)i, (unsigned long long)o,
                         (unsigned long long)n, (unsigned long long)lo,
                         (unsigned long long)hi, (unsigned long long)size,
                         w->store, w->vname, w->rank, (long long)w->row);
  return 0;
}

/* The index of the open shard (number key): from its slot, or read once,
 * its crc32c checked and every entry checked; *ix its 2 * n_inner
 * (offset, nbytes) pairs. */
static int shard_index(zvar *zv, int64_t key, zwhere *w, const uint64_t **ix,
                       ferry__err *err) {
  const zmeta *z = &zv->z;
  size_t nent = (size_t)z->n_inner * 2;
  if (!zv->slot_key) {
    zv->nslots = zarr_nslots(z);
    zv->slot_key = malloc((size_t)zv->nslots * sizeof *zv->slot_key);
    zv->slot_ix = malloc((size_t)zv->nslots * nent * sizeof *zv->slot_ix);
    zv->ixraw = malloc(z->index_bytes);
    if (!zv->slot_key || !zv->slot_ix || !zv->ixraw)
      return ferry__oom(
          err, -1,
          (size_t)zv->nslots *
                  (sizeof *zv->slot_key + nent * sizeof *zv->slot_ix) +
              z->index_bytes,
          "%lld shard indexes of %zu bytes (store %s, array %s, rank %d)",
          (long long)zv->nslots, z->index_bytes, w->store, w->vname, w->rank);
    for (int s = 0; s < zv->nslots; s++)
      zv->slot_key[s] = -1;
  }
  int slot = (int)(key % zv->nslots);
  uint64_t *e = zv->slot_ix + (size_t)slot * nent;
  *ix = e;
  if (zv->slot_key[slot] == key)
    return 0;
  zv->slot_key[slot] = -1;
  if ((uint64_t)zv->shard_size < z->index_bytes)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is %lld bytes, shorter than its index (%zu "
                         "bytes; truncated?): store %s, array %s, rank %d, "
                         "row %lld",
                         w->what, (long long)zv->shard_size, z->index_bytes,
                         w->store, w->vname, w->rank, (long long)w->row);
  off_t at = z->index_start ? 0 : (off_t)zv->shard_size - (off_t)z->index_bytes;
  errno = 0;
  if (pread_exact(zv->shard_fd, zv->ixraw, z->index_bytes, at) < 0)
    return ferry__seterr(err, FERRY_EIO,
                         "cannot read the index of %s at offset %lld: %s "
                         "(store %s, array %s, rank %d, row %lld)",
                         w->what, (long long)at,
                         errno ? strerror(errno) : "shorter than it was",
                         w->store, w->vname, w->rank, (long long)w->row);
  if (z->index_crc) {
    uint32_t want = le32(zv->ixraw + nent * 8),
             got = ferry__crc32c(zv->ixraw, nent * 8);
    if (want != got)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: its index fails its crc32c (stored %08x, "
                           "computed %08x; corrupt or truncated shard): "
                           "store %s, array %s, rank %d, row %lld",
                           w->what, (unsigned)want, (unsigned)got, w->store,
                           w->vname, w->rank, (long long)w->row);
  }
  memcpy(e, zv->ixraw, nent * 8);
  if (z->index_swapped)
    ferry__byteswap(e, nent, 8);
  for (size_t i = 0; i < (size_t)z->n_inner; i++) {
    int rc = check_entry(zv, e[2 * i], e[2 * i + 1], (int64_t)i, w, err);
    if (rc < 0)
      return rc;
  }
  zv->slot_key[slot] = key;
  return 0;
}

/* Where inner chunk idx of a sharded array is: 1 at (*off, *n) in
 * zv->shard_fd, 0 absent (its shard is, or its index entry is empty). */
static int inner_where(zvar *zv, const int64_t *idx, zwhere *w, uint64_t *off,
                       uint64_t *n, ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t inner = 0, key = shard_of(z, idx, &inner);
  char *p = ferry__zarr_chunk_path(zv->adir, z, idx);
  const uint64_t *ix = NULL;
  if (!p)
    return ferry__oom(err, -1, ferry__zarr_chunk_path_bytes(zv->adir, z, idx),
                      "a chunk path (store %s, array %s, rank %d)", w->store,
                      w->vname, w->rank);
  snprintf(w->what, sizeof w->what, "shard file %s", p);
  int rc = open_shard(zv, p, key, w, err);
  if (rc == 1 && (rc = shard_index(zv, key, w, &ix, err)) == 0) {
    *off = ix[2 * inner];
    *n = ix[2 * inner + 1];
    rc = !(*off == UINT64_MAX && *n == UINT64_MAX);
  }
  snprintf(w->what, sizeof w->what, "inner chunk %lld of shard file %s",
           (long long)inner, p);
  free(p);
  return rc;
}

/* One decode lane: its buffers (lane 0: the variable's raw and mid) and
 * the chunk queued on it, whose stored bytes the I/O thread has read. */
typedef struct zlane {
  unsigned char *raw, *mid;
  const zmeta *z;
  zwhere w;
  size_t size;
  unsigned char *out;
} zlane;

/* A wait no read asked for (a store closing with chunks queued): its
 * error is kept for the next settle. */
static void park(zdecode *d) {
  if (!d->busy)
    return;
  ferry__err e;
  memset(&e, 0, sizeof e);
  int wrc = ferry__pool_wait(d->pool, &e);
  d->busy = 0;
  if (wrc < 0 && d->rc == 0) {
    d->rc = wrc;
    d->err = e;
  }
}

int ferry__zarr_settle(zdecode *d, int rc, ferry__err *err) {
  park(d);
  if (d->rc < 0) {
    *err = d->err;
    rc = d->rc;
    d->rc = 0;
  }
  return rc;
}

void ferry__zarr_lanes_free(zvar *zv) {
  if (zv->dec)
    park(zv->dec);
  for (int k = 1; zv->lane && k < zv->dec->nlanes; k++) {
    free(zv->lane[k].raw);
    free(zv->lane[k].mid);
  }
  free(zv->lane);
  zv->lane = NULL;
}

/* The stored-bytes and middle buffers of lane k (0: zv->raw and zv->mid),
 * allocated at first use; every lane but 0 is counted in cache_bytes
 * (native_cache_bytes, by the threads option). */
static int lane_bufs(zvar *zv, int k, const zwhere *w, unsigned char **raw,
                     unsigned char **mid, ferry__err *err) {
  const zmeta *z = &zv->z;
  unsigned char **r = &zv->raw, **m = &zv->mid;
  if (k > 0) {
    if (!zv->lane &&
        !(zv->lane = calloc((size_t)zv->dec->nlanes, sizeof *zv->lane)))
      return ferry__oom(err, -1, (size_t)zv->dec->nlanes * sizeof *zv->lane,
                        "%d decode lanes (store %s, array %s, rank %d)",
                        zv->dec->nlanes, w->store, w->vname, w->rank);
    r = &zv->lane[k].raw;
    m = &zv->lane[k].mid;
  }
  if ((z->ncodecs || z->crc) && !*r &&
      !(*r = malloc(zarr_stored_bound(z->chunk_bytes) + 4)))
    return ferry__oom(err, -1, zarr_stored_bound(z->chunk_bytes) + 4,
                      "a stored chunk (store %s, array %s, rank %d)", w->store,
                      w->vname, w->rank);
  if (z->ncodecs > 1 && !*m && !(*m = malloc(z->chunk_bytes)))
    return ferry__oom(err, -1, z->chunk_bytes,
                      "a chunk between codecs (store %s, array %s, rank %d)",
                      w->store, w->vname, w->rank);
  *raw = *r;
  *mid = *m;
  return 0;
}

/* The n stored bytes of a chunk (w names it): of the exact size when
 * uncompressed, else no more than any codec stores. */
static int check_stored(const zmeta *z, uint64_t n, const zwhere *w,
                        ferry__err *err) {
  size_t crc = z->crc ? 4 : 0;
  if (!z->ncodecs ? n != z->chunk_bytes + crc
                  : n > zarr_stored_bound(z->chunk_bytes) + crc)
    return ferry__seterr(err, FERRY_EFORMAT,
                         !z->ncodecs
                             ? "%s is %llu bytes, not the %zu of an "
                               "uncompressed chunk (truncated?): store %s, "
                               "array %s, rank %d, row %lld"
                             : "%s is %llu bytes, more than any codec stores "
                               "for a chunk of %zu bytes (corrupt?): store "
                               "%s, array %s, rank %d, row %lld",
                         w->what, (unsigned long long)n, z->chunk_bytes + crc,
                         w->store, w->vname, w->rank, (long long)w->row);
  return 0;
}

/* Decode size stored bytes in raw (mid: the middle stage) into out
 * (chunk_bytes): the crc32c checked first when the chain ends with one.
 * Touches nothing but its arguments: runs on any decode lane. */
static int decode_bytes(const zmeta *z, unsigned char *raw, unsigned char *mid,
                        size_t size, const zwhere *w, unsigned char *out,
                        ferry__err *err) {
  if (z->crc) {
    uint32_t want = size >= 4 ? le32(raw + size - 4) : 0,
             got = size >= 4 ? ferry__crc32c(raw, size - 4) : 1;
    if (want != got)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s fails its crc32c (stored %08x, computed %08x; "
                           "corrupt): store %s, array %s, rank %d, row %lld",
                           w->what, (unsigned)want, (unsigned)got, w->store,
                           w->vname, w->rank, (long long)w->row);
    size -= 4;
    if (!z->ncodecs)
      memcpy(out, raw, size);
  }
  /* Codecs in decode order: compressor first.  Every stage decodes to
   * chunk_bytes (the only filter ferry knows, shuffle, keeps the size). */
  unsigned char *src = raw;
  for (int c = z->ncodecs - 1; c >= 0; c--) {
    unsigned char *dst = c == 0 ? out : src == raw ? mid : raw;
    const char *why = NULL;
    if (ferry__codec_decode_into(z->codec[c], z->param[c], src, size, dst,
                                 z->chunk_bytes, &why) < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s cannot be decoded with %s: %s (store %s, "
                           "array %s, rank %d, row %lld)",
                           w->what, ferry__codec_name(z->codec[c]), why,
                           w->store, w->vname, w->rank, (long long)w->row);
    src = dst;
    size = z->chunk_bytes;
  }
  return 0;
}

static int lane_job(void *arg, ferry__err *err) {
  zlane *l = arg;
  return decode_bytes(l->z, l->raw, l->mid, l->size, &l->w, l->out, err);
}

/* Decode the n stored bytes at off in fd (a chunk, w names it) into out
 * (chunk_bytes): uncompressed straight into out, else through raw (and
 * mid); the crc32c checked first when the chain ends with one.  With par
 * (the chunk goes straight into a read's buffer) and several lanes, the
 * bytes are read here and decoded on the pool: the caller settles. */
static int decode_stored(zvar *zv, int fd, uint64_t off, uint64_t n, zwhere *w,
                         unsigned char *out, int par, ferry__err *err) {
  const zmeta *z = &zv->z;
  int stored = z->ncodecs || z->crc;
  int rc = check_stored(z, n, w, err);
  if (rc < 0)
    return rc;
  zdecode *d = zv->dec;
  par = par && stored && d->nlanes > 1;
  if (par && d->busy == d->nlanes && (rc = ferry__zarr_settle(d, 0, err)) < 0)
    return rc;
  int k = par ? d->busy : 0;
  unsigned char *raw = NULL, *mid = NULL;
  if ((rc = lane_bufs(zv, k, w, &raw, &mid, err)) < 0)
    return rc;
  errno = 0;
  if (pread_exact(fd, stored ? raw : out, (size_t)n, (off_t)off) < 0)
    return ferry__seterr(err, FERRY_EIO, "cannot read " WHERE_FMT ": %s",
                         WHERE_ARGS(w),
                         errno ? strerror(errno) : "shorter than it was");
  if (!stored)
    return 0;
  if (!par)
    return decode_bytes(z, raw, mid, (size_t)n, w, out, err);
  if (!zv->lane &&
      !(zv->lane = calloc((size_t)zv->dec->nlanes, sizeof *zv->lane)))
    return ferry__oom(err, -1, (size_t)zv->dec->nlanes * sizeof *zv->lane,
                      "%d decode lanes (store %s, array %s, rank %d)",
                      zv->dec->nlanes, w->store, w->vname, w->rank);
  zlane *l = &zv->lane[k];
  l->z = z;
  l->w = *w;
  l->size = (size_t)n;
  l->out = out;
  l->raw = raw; /* lane 0: the variable's own (freed with it) */
  l->mid = mid;
  d->busy++;
  return ferry__pool_submit(d->pool, lane_job, l, err);
}

/* The fill value into out (chunk_bytes), or an error when there is none. */
static int fill_chunk(const zmeta *z, zwhere *w, unsigned char *out,
                      ferry__err *err) {
  if (!z->has_fill)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is missing and array %s has no fill_value "
                         "(zarr-python would return uninitialised memory): "
                         "store %s, rank %d, row %lld",
                         w->what, w->vname, w->store, w->rank,
                         (long long)w->row);
  for (size_t i = 0; i < z->chunk_bytes; i += z->itemsize)
    memcpy(out + i, z->fill, z->itemsize);
  return 0;
}

/* Read and decode the chunk idx into out (chunk_bytes, the fill value when
 * it is absent), through the variable's reused buffers: a chunk file (or an
 * inner chunk's byte range in its shard) is read into raw, each codec but
 * the last decodes into mid or raw, the last into out.  No allocation once
 * the buffers exist.  On failure out holds unspecified bytes that the
 * caller must not serve. */
static int load_chunk(zvar *zv, const int64_t *idx, const char *store,
                      const char *vname, int rank, int64_t row,
                      unsigned char *out, int par, ferry__err *err) {
  const zmeta *z = &zv->z;
  zwhere w = {store, vname, rank, row, ""};
  if (z->sharded) {
    uint64_t off = 0, n = 0;
    int rc = inner_where(zv, idx, &w, &off, &n, err);
    if (rc < 0)
      return rc;
    return rc ? decode_stored(zv, zv->shard_fd, off, n, &w, out, par, err)
              : fill_chunk(z, &w, out, err);
  }
  char *p = ferry__zarr_chunk_path(zv->adir, z, idx);
  int rc = 0, fd = -1;
  if (!p)
    return ferry__oom(err, -1, ferry__zarr_chunk_path_bytes(zv->adir, z, idx),
                      "a chunk path (store %s, array %s, rank %d)", store,
                      vname, rank);
  snprintf(w.what, sizeof w.what, "chunk file %s", p);
  const char *kind = "";
  fd = ferry__open_regular(p, &kind); /* never blocks on a FIFO */
  struct stat st;
  if (fd == -2)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "chunk file %s is %s, not a regular file: store %s, "
                       "array %s, rank %d, row %lld",
                       p, kind, store, vname, rank, (long long)row);
  else if (fd < 0 && errno == ENOENT)
    rc = fill_chunk(z, &w, out, err);
  else if (fd < 0 || fstat(fd, &st) != 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), WHERE_FMT ": %s",
                       WHERE_ARGS(&w), strerror(errno));
  else
    rc = decode_stored(zv, fd, 0, (uint64_t)st.st_size, &w, out, par, err);
  if (fd >= 0)
    close(fd);
  free(p);
  return rc;
}

/* Sharded, uncompressed and unchecked inner chunks of whole rows, from
 * chunk ci on, that a read covers whole up to row end: those that follow
 * each other in one shard file are read with one pread into dst.  *done
 * receives how many chunks were read (0: none could be, the caller reads
 * chunk ci by itself). */
static int read_run(zvar *zv, int64_t ci, int64_t end, const char *store,
                    const char *vname, int rank, unsigned char *dst,
                    int64_t *done, ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t c0 = z->chunks[0], k = 0;
  uint64_t start = 0, next = 0;
  zwhere w = {store, vname, rank, ci * c0, ""};
  *done = 0;
  if (!z->sharded || z->ncodecs || z->crc || !zarr_chunk_is_rows(z))
    return 0;
  for (; (ci + k + 1) * c0 <= end; k++) {
    int64_t idx[Z_MAX_DIMS] = {0};
    uint64_t off = 0, n = 0;
    idx[0] = ci + k;
    if (k > 0 && idx[0] % z->per_shard[0] == 0)
      break; /* the next shard */
    int rc = inner_where(zv, idx, &w, &off, &n, err);
    if (rc < 0)
      return rc;
    if (!rc || n != z->chunk_bytes || (k > 0 && off != next))
      break;
    if (k == 0)
      start = off;
    next = off + n;
  }
  if (k < 2)
    return 0;
  errno = 0;
  if (pread_exact(zv->shard_fd, dst, (size_t)(next - start), (off_t)start) < 0)
    return ferry__seterr(err, FERRY_EIO,
                         "cannot read inner chunks %lld to %lld of %s: %s",
                         (long long)ci, (long long)(ci + k - 1), w.what,
                         errno ? strerror(errno) : "shorter than it was");
  *done = k;
  return 0;
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
 * into buf, on the pool when there are several lanes (its stored bytes read
 * here, in chunk order); any other chunk goes through the band, which then
 * serves the following reads of the same rows. */
static int native_rows(zvar *zv, const char *store, const char *vname, int rank,
                       int64_t row, int64_t nrows, size_t row_bytes,
                       unsigned char *buf, ferry__err *err) {
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
    int64_t run = 0;
    if (rows_layout && r == bstart && take == c0 &&
        (rc = read_run(zv, ci, row + nrows, store, vname, rank, dst, &run,
                       err)) < 0)
      return rc;
    if (run > 0) {
      r = bstart + run * c0;
      continue;
    }
    if (rows_layout && r == bstart && take == c0) {
      /* The read covers the whole chunk: decode it into its rows. */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, dst, 1, err)) < 0)
        return rc;
      r = bend;
      continue;
    }
    if (!z->ncodecs && !z->crc && !z->sharded && rows_layout) {
      /* Part of an uncompressed chunk: pread just those rows. */
      char *p = ferry__zarr_chunk_path(zv->adir, z, idx);
      off_t size = 0;
      if (!p)
        return ferry__oom(
            err, -1, ferry__zarr_chunk_path_bytes(zv->adir, z, idx),
            "a chunk path (store %s, array %s, rank %d)", store, vname, rank);
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
    /* Decode the band of chunks holding rows [bstart, bstart+c0), through
     * lane 0's buffers: the queued chunks first. */
    if ((rc = ferry__zarr_settle(zv->dec, 0, err)) < 0)
      return rc;
    zv->band = -1;
    if (!zv->band_buf && !(zv->band_buf = malloc((size_t)c0 * row_bytes + 1)))
      return ferry__oom(err, -1, (size_t)c0 * row_bytes + 1,
                        "a band of chunks (store %s, array %s, rank %d)", store,
                        vname, rank);
    if (rows_layout) {
      /* One chunk, laid out as the band's rows (the last chunk may
       * reach past the array's end: chunk_bytes is c0 rows). */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->band_buf, 0,
                           err)) < 0)
        return rc;
    } else {
      if (!zv->chunk_buf && !(zv->chunk_buf = malloc(z->chunk_bytes)))
        return ferry__oom(err, -1, z->chunk_bytes,
                          "a decoded chunk (store %s, array %s, rank %d)",
                          store, vname, rank);
      for (int64_t a = 0; a < z->across; a++) {
        int64_t rest = a;
        for (int d = z->ndim - 1; d >= 1; d--) {
          int64_t nd = zarr_nchunks(z, d);
          idx[d] = rest % nd;
          rest /= nd;
        }
        if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->chunk_buf, 0,
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

int ferry__zarr_native_read(zvar *zv, const char *store, const char *vname,
                            int rank, int64_t row, int64_t nrows,
                            size_t row_bytes, unsigned char *buf,
                            ferry__err *err) {
  int rc = native_rows(zv, store, vname, rank, row, nrows, row_bytes, buf, err);
  return zv->dec->defer ? rc : ferry__zarr_settle(zv->dec, rc, err);
}

void ferry__zarr_var_free(zvar *zv) {
  ferry__zarr_lanes_free(zv); /* first: queued chunks use raw */
  free(zv->adir);
  free(zv->band_buf);
  free(zv->chunk_buf);
  free(zv->raw);
  free(zv->mid);
  free(zv->slot_key);
  free(zv->slot_ix);
  free(zv->ixraw);
  if (zv->shard_fd >= 0)
    close(zv->shard_fd);
  zv->shard_fd = -1;
}
