/*
 * mds.c - MosaicML Streaming's MDS datasets (docs/images.md, decision
 * 0060): a directory of index.json and shard files, one part per shard in
 * the index's order, each column a variable.
 *
 * The scan hands the directory (or its index.json) to mds_expand, which
 * reads the index once and lists the shards: the raw shard.NNNNN.mds when
 * it is there, else the compressed one the index names (zstd only).  Each
 * shard is then described on its own from its header and the copy of the
 * configuration every shard carries (mds_format.c), so describing 10,000
 * shards parses index.json once, not 10,000 times.  A shard's columns are
 * interleaved sample by sample, so a variable's values are found through
 * the per-sample location table of decision 0057: kind 1, the value's
 * offset in the (decompressed) shard, its size the ragged step or the
 * row's bytes; kind 2, the value itself (str_int, str_float parsed at
 * describe); kind 5, a dynamic ndarray's values, as kind 1, with the
 * shard's shape summary after the table, from which mds_finish keeps the
 * dimensions after the first as the rows' inner shape when every sample
 * of every shard has the same ones.  Raw shards are read like WebDataset
 * members: values less than 64 KiB apart in one preadv, the bytes between them
 * in a scratch buffer.  A zstd shard is decompressed whole into memory on each
 * rank that reads it and kept in a cache of at most MDS_CACHE_BYTES (the least
 * recently used shard evicted first; at least one is kept whatever its
 * size).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/mds.h"
#include "backends/toolkit.h"
#include "util/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif

#define MDS_REC_VERSION 2
/* A column's record: its kind (the location table's kinds of decision
 * 0057, numbered across the backends: 3 and 4 are the image folders' and
 * WebDataset npy members'), codec (CODEC_*), the file's bytes on disk, the
 * sample count n, one u64 per sample (LOC_VALUES: the value; else where
 * the value starts in the decompressed shard), then for LOC_ARRAYS (a
 * dynamic ndarray column) the shard's shape summary: u8 ndim (0: no
 * sample), u8 inner_same, u64 where the first sample's value (its prefix)
 * starts, and when inner_same the ndim - 1 dimensions after the first, u64
 * each; mds_finish reads it.  Version 2 added LOC_ARRAYS (decision
 * 0064). */
enum { LOC_OFFSETS = 1, LOC_VALUES = 2, LOC_ARRAYS = 5 };
enum { CODEC_RAW = 0, CODEC_ZSTD = 1 };
/* A decompressed shard's bound: its offsets are uint32. */
#define MDS_MAX_RAW ((int64_t)UINT32_MAX)
/* The decompressed shards a rank keeps. */
#define MDS_CACHE_BYTES ((int64_t)1 << 30)

static int is_zstd_name(const char *s) {
  return ferry__has_suffix(s, ".zstd") || ferry__has_suffix(s, ".zst");
}

/* ---- Finding the shards ------------------------------------------------ */

/* The index file of path: path itself when it is named index.json, else
 * path/index.json when path is a directory holding one; NULL otherwise. */
static char *index_of(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return NULL;
  if (S_ISREG(st.st_mode)) {
    const char *b = strrchr(path, '/');
    return strcmp(b ? b + 1 : path, "index.json") == 0 ? strdup(path) : NULL;
  }
  if (!S_ISDIR(st.st_mode))
    return NULL;
  char *f = ferry__join_path(path, "index.json");
  if (f && (stat(f, &st) != 0 || !S_ISREG(st.st_mode))) {
    free(f);
    f = NULL;
  }
  return f;
}

static char *dir_of(const char *file) {
  const char *b = strrchr(file, '/');
  if (!b)
    return strdup(".");
  size_t n = b == file ? 1 : (size_t)(b - file);
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, file, n);
    d[n] = '\0';
  }
  return d;
}

/* The index's text, bounded. */
static int read_text(const char *file, char **text, size_t *len,
                     ferry__err *err) {
  *text = NULL;
  int fd = ferry__open_regular(file, NULL);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return ferry__seterr(err, ferry__errno_code(e), "MDS index %s: %s", file,
                         strerror(e));
  }
  int rc = 0;
  size_t got = 0;
  if ((uint64_t)st.st_size > FERRY__MDS_MAX_INDEX)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "MDS index %s: %lld bytes, more than the 1 GiB ferry "
                       "reads",
                       file, (long long)st.st_size);
  else if (!(*text = malloc((size_t)st.st_size + 1)))
    rc = ferry__oom(err, -1, (size_t)st.st_size + 1, "MDS index %s", file);
  else if (ferry__pread_full(fd, *text, (size_t)st.st_size, 0, &got) != 0 ||
           got != (size_t)st.st_size)
    rc = ferry__seterr(err, FERRY_EIO, "MDS index %s: short read", file);
  close(fd);
  if (rc) {
    free(*text);
    *text = NULL;
  }
  *len = got;
  return rc;
}

/* The file of shard k: DIR/raw when it is there (and raw_data.bytes
 * long), else DIR/zip for a zstd shard.  Malloc'd into *file. */
static int locate(const char *index, const char *dir, const ferry__mds_index *x,
                  int64_t k, char **file, int *zstd, ferry__err *err) {
  const ferry__mds_entry *e = &x->e[k];
  struct stat st;
  *file = ferry__join_path(dir, e->raw);
  *zstd = 0;
  if (!*file)
    return ferry__oom(err, -1, strlen(dir) + 300, "the shards of %s", index);
  if (stat(*file, &st) == 0 && S_ISREG(st.st_mode)) {
    if (st.st_size == e->raw_bytes)
      return 0;
    int rc = ferry__seterr(err, FERRY_EFORMAT,
                           "MDS shard %s is %lld bytes but index %s (shard "
                           "%lld) says raw_data.bytes %lld: a truncated or "
                           "rewritten shard",
                           *file, (long long)st.st_size, index, (long long)k,
                           (long long)e->raw_bytes);
    free(*file);
    *file = NULL;
    return rc;
  }
  free(*file);
  *file = NULL;
  if (!e->zip)
    return ferry__seterr(err, FERRY_ENOENT,
                         "MDS index %s lists shard %lld as %s/%s, which is "
                         "not there",
                         index, (long long)k, dir, e->raw);
  if (strncmp(e->compression, "zstd", 4) != 0 ||
      (e->compression[4] && e->compression[4] != ':'))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "MDS shard %s/%s is compressed with %.40s: ferry "
                         "reads raw and zstd shards; decompress it to %s "
                         "(Streaming's own cache does so)",
                         dir, e->zip, e->compression, e->raw);
  if (!(*file = ferry__join_path(dir, e->zip)))
    return ferry__oom(err, -1, strlen(dir) + 300, "the shards of %s", index);
  if (stat(*file, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size != e->zip_bytes) {
    int rc = ferry__seterr(err, stat(*file, &st) ? FERRY_ENOENT : FERRY_EFORMAT,
                           "MDS index %s, shard %lld: neither %s/%s nor %s "
                           "(of zip_data.bytes %lld) is there",
                           index, (long long)k, dir, e->raw, *file,
                           (long long)e->zip_bytes);
    free(*file);
    *file = NULL;
    return rc;
  }
  *zstd = 1;
  return 0;
}

/* The scan's hook (backend.h): a directory with a Streaming index.json,
 * or the index itself, becomes the list of its shards. */
static int mds_expand(const char *path, char ***parts, int64_t *nparts,
                      char **note, ferry__err *err) {
  *parts = NULL;
  *nparts = 0;
  *note = NULL;
  char *index = index_of(path), *text = NULL, *dir = NULL;
  if (!index)
    return 0;
  ferry__mds_index x;
  memset(&x, 0, sizeof x);
  size_t len = 0;
  int64_t nzstd = 0;
  int rc = read_text(index, &text, &len, err);
  if (!rc)
    rc = ferry__mds_index_parse(text, len, index, &x, err);
  if (rc == 1 && !(dir = dir_of(index)))
    rc = ferry__oom(err, -1, strlen(index), "the directory of %s", index);
  if (rc == 1 && !(*parts = calloc((size_t)x.n, sizeof **parts)))
    rc = ferry__oom(err, -1, (size_t)x.n * sizeof **parts, "the shards of %s",
                    index);
  for (int64_t k = 0; rc == 1 && k < x.n; k++) {
    int z = 0;
    int r = locate(index, dir, &x, k, &(*parts)[k], &z, err);
    if (r < 0)
      rc = r;
    else
      *nparts = k + 1;
    nzstd += z;
  }
  if (rc == 1) {
    char buf[600];
    snprintf(buf, sizeof buf,
             "MDS index %s: %lld shards (%lld raw, %lld zstd), read as as "
             "many parts in the index's order",
             index, (long long)x.n, (long long)(x.n - nzstd), (long long)nzstd);
    if (!(*note = strdup(buf)))
      rc = ferry__oom(err, -1, strlen(buf) + 1, "the note on %s", index);
  }
  if (rc != 1) {
    for (int64_t k = 0; *parts && k < *nparts; k++)
      free((*parts)[k]);
    free(*parts);
    *parts = NULL;
    *nparts = 0;
  }
  ferry__mds_index_free(&x);
  free(text);
  free(index);
  free(dir);
  return rc;
}

/* The one shard of a directory or index.json named as a part (an @list
 * line: the scan's hook sees plain paths only). */
static int single_shard(const char *path, char **file, int *zstd,
                        ferry__err *err) {
  char **parts = NULL, *note = NULL;
  int64_t n = 0;
  int rc = mds_expand(path, &parts, &n, &note, err);
  free(note);
  if (rc == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: not an MDS shard, nor a directory with a "
                         "Streaming index.json",
                         path);
  if (rc > 0 && n != 1)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "MDS dataset %s lists %lld shards: name the "
                       "directory itself as the dataset (not in an @list), "
                       "or list its shard files",
                       path, (long long)n);
  if (rc > 0) {
    *file = parts[0];
    parts[0] = NULL;
    *zstd = is_zstd_name(*file);
    rc = 0;
  }
  for (int64_t k = 0; k < n; k++)
    free(parts[k]);
  free(parts);
  return rc;
}

static int mds_probe(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 0;
  if (S_ISREG(st.st_mode) &&
      (ferry__has_suffix(path, ".mds") || ferry__has_suffix(path, ".mds.zstd")))
    return 1;
  char *index = index_of(path);
  int ok = index != NULL;
  free(index);
  return ok;
}

/* ---- zstd -------------------------------------------------------------- */

/* The whole of compressed shard file (fd, zsize bytes) decompressed into
 * *out (malloc'd, *outlen bytes, at most MDS_MAX_RAW). */
static int zstd_load(const char *file, int fd, int64_t zsize,
                     unsigned char **out, int64_t *outlen, int rank,
                     ferry__err *err) {
  *out = NULL;
  *outlen = 0;
#ifndef HAVE_ZSTD
  (void)fd;
  (void)zsize;
  return ferry__seterr_on(err, rank, FERRY_ENOTSUP,
                          "MDS shard %s is zstd-compressed and this ferry was "
                          "built without libzstd: decompress it (zstd -d %s) "
                          "or rebuild with --with-zstd",
                          file, file);
#else
  int rc = 0;
  size_t got = 0;
  unsigned char *in = NULL, *o = NULL;
  ZSTD_DStream *ds = NULL;
  if (zsize > MDS_MAX_RAW)
    return ferry__seterr_on(err, rank, FERRY_EFORMAT,
                            "MDS shard %s: %lld compressed bytes, more than "
                            "a shard's 4 GiB",
                            file, (long long)zsize);
  if (!(in = malloc((size_t)(zsize ? zsize : 1))))
    return ferry__oom(err, rank, (size_t)zsize, "compressed MDS shard %s",
                      file);
  if (ferry__pread_full(fd, in, (size_t)zsize, 0, &got) != 0 ||
      got != (size_t)zsize) {
    rc = ferry__seterr_on(err, rank, FERRY_EIO,
                          "MDS shard %s, offset 0: reading %lld compressed "
                          "bytes: %s",
                          file, (long long)zsize,
                          got < (size_t)zsize && !errno ? "short read"
                                                        : strerror(errno));
    goto done;
  }
  unsigned long long fs = ZSTD_getFrameContentSize(in, (size_t)zsize);
  size_t cap = fs != ZSTD_CONTENTSIZE_ERROR && fs != ZSTD_CONTENTSIZE_UNKNOWN &&
                       fs <= (unsigned long long)MDS_MAX_RAW
                   ? (size_t)fs + 1
                   : (size_t)zsize * 4 + 4096;
  if ((int64_t)cap > MDS_MAX_RAW)
    cap = (size_t)MDS_MAX_RAW;
  if (!(ds = ZSTD_createDStream()) || !(o = malloc(cap))) {
    rc = ferry__oom(err, rank, cap, "decompressing MDS shard %s", file);
    goto done;
  }
  ZSTD_initDStream(ds);
  ZSTD_inBuffer ib = {in, (size_t)zsize, 0};
  ZSTD_outBuffer ob = {o, cap, 0};
  size_t r = 1;
  while (ib.pos < ib.size || r != 0) {
    if (ob.pos == ob.size) {
      if ((int64_t)ob.size >= MDS_MAX_RAW) {
        rc = ferry__seterr_on(err, rank, FERRY_EFORMAT,
                              "MDS shard %s decompresses to more than 4 GiB, "
                              "more than a shard's offsets can address",
                              file);
        goto done;
      }
      size_t ncap =
          ob.size * 2 > (size_t)MDS_MAX_RAW ? (size_t)MDS_MAX_RAW : ob.size * 2;
      unsigned char *no = realloc(o, ncap);
      if (!no) {
        rc = ferry__oom(err, rank, ncap, "decompressing MDS shard %s", file);
        goto done;
      }
      o = no;
      ob.dst = o;
      ob.size = ncap;
    }
    size_t before_in = ib.pos, before_out = ob.pos;
    r = ZSTD_decompressStream(ds, &ob, &ib);
    if (ZSTD_isError(r) || (ib.pos == ib.size && r != 0 && ob.pos < ob.size &&
                            before_in == ib.pos && before_out == ob.pos)) {
      rc = ferry__seterr_on(err, rank, FERRY_EFORMAT,
                            "MDS shard %s, compressed offset %zu: corrupt or "
                            "truncated zstd data (%s)",
                            file, ib.pos,
                            ZSTD_isError(r) ? ZSTD_getErrorName(r)
                                            : "ends inside a frame");
      goto done;
    }
  }
  *out = o;
  *outlen = (int64_t)ob.pos;
  o = NULL;
done:
  ZSTD_freeDStream(ds);
  free(in);
  free(o);
  return rc;
#endif
}

/* ---- Digests (mds_hashes=check) ---------------------------------------- */

/* The index a rank's describe last read, kept for the next shard of the
 * same dataset (a scan describes shard after shard: reading index.json for
 * each would make the scan quadratic in the shards); read again when the
 * file changes.  Kept until the process ends (a few hundred bytes per
 * shard); the lock for loaders opened from several threads. */
static struct {
  pthread_mutex_t mu;
  char *path;
  struct stat st;
  ferry__mds_index x;
  int is_index; /* 1: a Streaming index; 0: another tool's index.json */
  int64_t last; /* the entry found last: the next search starts after it */
} idx_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int hashes_check(const ferry_options *opts) {
  char v[16];
  return opts && ferry_options_get(opts, "mds_hashes", v, sizeof v) == 0 &&
         strcmp(v, "check") == 0;
}

/* The entry of shard file base (its raw or, zstd, its zip name) in the
 * cached index, or -1.  Under idx_cache.mu. */
static int64_t cache_find(const char *base, int zstd) {
  const ferry__mds_index *x = &idx_cache.x;
  for (int64_t j = 0; j < x->n; j++) {
    int64_t k = (idx_cache.last + 1 + j) % x->n;
    const char *name = zstd ? x->e[k].zip : x->e[k].raw;
    if (name && strcmp(name, base) == 0)
      return idx_cache.last = k;
  }
  return -1;
}

/* Read index (path) into the cache unless it holds it already, unchanged.
 * Under idx_cache.mu. */
static int cache_load(const char *index, const struct stat *st,
                      ferry__err *err) {
  if (idx_cache.path && strcmp(idx_cache.path, index) == 0 &&
      idx_cache.st.st_dev == st->st_dev && idx_cache.st.st_ino == st->st_ino &&
      idx_cache.st.st_size == st->st_size &&
      idx_cache.st.st_mtim.tv_sec == st->st_mtim.tv_sec &&
      idx_cache.st.st_mtim.tv_nsec == st->st_mtim.tv_nsec)
    return 0;
  ferry__mds_index_free(&idx_cache.x);
  free(idx_cache.path);
  idx_cache.path = NULL;
  char *text = NULL;
  size_t len = 0;
  int rc = read_text(index, &text, &len, err);
  if (!rc)
    rc = ferry__mds_index_parse(text, len, index, &idx_cache.x, err);
  free(text);
  if (rc < 0)
    return rc;
  if (!(idx_cache.path = strdup(index))) {
    ferry__mds_index_free(&idx_cache.x);
    return ferry__oom(err, -1, strlen(index) + 1, "MDS index %s", index);
  }
  idx_cache.st = *st;
  idx_cache.is_index = rc == 1;
  idx_cache.last = -1;
  return 0;
}

/* The digest (algo: FERRY__DIG_*) of bytes [0, size) of fd, or of mem when
 * it is not NULL, into hex. */
static int digest_bytes(const char *file, int fd, const unsigned char *mem,
                        int64_t size, int algo, char *hex, ferry__err *err) {
  ferry__digest d;
  ferry__digest_init(&d, algo);
  unsigned char *buf = NULL;
  size_t step = (size_t)1 << 20;
  if (!mem && !(buf = malloc(step)))
    return ferry__oom(err, -1, step, "hashing MDS shard %s", file);
  for (int64_t at = 0; at < size;) {
    size_t n = size - at < (int64_t)step ? (size_t)(size - at) : step, got = 0;
    if (!mem && (ferry__pread_full(fd, buf, n, at, &got) != 0 || got != n)) {
      int e = errno;
      free(buf);
      return ferry__seterr(err, FERRY_EIO,
                           "MDS shard %s, offset %lld: reading it to hash "
                           "it: %s",
                           file, (long long)(at + (int64_t)got),
                           got < n && !e ? "short read" : strerror(e));
    }
    ferry__digest_update(&d, mem ? mem + at : buf, n);
    at += (int64_t)n;
  }
  free(buf);
  ferry__digest_hex(&d, hex);
  return 0;
}

/* name added to the comma-separated list (cap bytes) unless it is there. */
static void list_add(char *list, size_t cap, const char *name) {
  size_t used = strlen(list), k = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += k)
    if ((p == list || p[-1] == ' ') && (p[k] == ',' || !p[k]))
      return;
  if (used + k + 3 < cap)
    snprintf(list + used, cap - used, "%s%s", used ? ", " : "", name);
}

/* One file's digests (the shard as stored: what is "raw_data" or
 * "zip_data"; or the decompressed shard, mem) against the index's: one
 * algorithm, the fastest ferry computes of those listed (xxh64, md5, sha1,
 * sha256: a damaged file fails any of them).  The lists get the algorithm
 * compared (done), those not (other) and those ferry cannot compute
 * (skip). */
static int check_list(const char *file, const char *index, const char *what,
                      int fd, const unsigned char *mem, int64_t size,
                      const ferry__mds_hash *hs, int nh, char *done,
                      char *other, char *skip, size_t cap, ferry__err *err) {
  static const int fastest[] = {FERRY__DIG_XXH64, FERRY__DIG_MD5,
                                FERRY__DIG_SHA1, FERRY__DIG_SHA256};
  int pick = -1, rank = 4;
  for (int h = 0; h < nh; h++) {
    int a = ferry__digest_algo(hs[h].algo);
    for (int r = 0; a >= 0 && r < rank; r++)
      if (fastest[r] == a) {
        pick = h;
        rank = r;
      }
  }
  for (int h = 0; h < nh; h++)
    if (h != pick)
      list_add(ferry__digest_algo(hs[h].algo) >= 0 ? other : skip, cap,
               hs[h].algo);
  if (pick < 0)
    return 0;
  list_add(done, cap, hs[pick].algo);
  char hex[FERRY__DIG_HEX_MAX];
  int rc = digest_bytes(file, fd, mem, size, fastest[rank], hex, err);
  if (!rc && strcasecmp(hex, hs[pick].hex) != 0)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "MDS shard %s%s: its %s digest is %s but index %s says "
                       "%.*s (%s.hashes): the shard is damaged, or was "
                       "rewritten after the index",
                       file, mem ? " (decompressed)" : "", hs[pick].algo, hex,
                       index, FERRY__MDS_MAX_HEX, hs[pick].hex, what);
  return rc;
}

/* mds_hashes=check: the shard file (fd, its size; dec the decompressed
 * bytes of a zstd shard) against the digests its dataset's index.json
 * lists, with what was done in note. */
static int check_digests(const char *file, int fd, int64_t size, int zstd,
                         const unsigned char *dec, int64_t declen, char *note,
                         size_t nnote, ferry__err *err) {
  char *dir = dir_of(file),
       *index = dir ? ferry__join_path(dir, "index.json") : NULL;
  const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
  struct stat st;
  int rc = 0;
  snprintf(note, nnote,
           "mds_hashes=check: no index.json beside %s, no digest checked",
           file);
  if (!dir || !index) {
    free(dir);
    free(index);
    return ferry__oom(err, -1, strlen(file) + 16, "the index of %s", file);
  }
  if (stat(index, &st) != 0 || !S_ISREG(st.st_mode)) {
    free(dir);
    free(index);
    return 0;
  }
  pthread_mutex_lock(&idx_cache.mu);
  rc = cache_load(index, &st, err);
  int64_t k = !rc && idx_cache.is_index ? cache_find(base, zstd) : -1;
  if (!rc && k < 0)
    snprintf(note, nnote,
             "mds_hashes=check: %s is not listed in %s, no digest checked",
             file, index);
  if (!rc && k >= 0) {
    const ferry__mds_entry *e = &idx_cache.x.e[k];
    char done[200] = "", other[200] = "", skip[200] = "";
    if (zstd)
      rc = check_list(file, index, "zip_data", fd, NULL, size, e->zip_hash,
                      e->nzip_hash, done, other, skip, sizeof done, err);
    if (!rc)
      rc = check_list(file, index, "raw_data", fd, zstd ? dec : NULL,
                      zstd ? declen : size, e->raw_hash, e->nraw_hash, done,
                      other, skip, sizeof done, err);
    if (!rc && !*done && !*skip)
      snprintf(note, nnote, "mds_hashes=check: %s lists no digest for %s",
               index, file);
    else if (!rc && !*done)
      snprintf(note, nnote,
               "mds_hashes=check: index.json lists no digest ferry computes "
               "(it lists %s, ferry computes " FERRY__DIG_NAMES ")",
               skip);
    else if (!rc)
      snprintf(note, nnote,
               "mds_hashes=check: digests %s of every shard match "
               "index.json (one algorithm per file, the fastest ferry "
               "computes%s%s%s%s)",
               done, *other ? ". Not compared: " : "", other,
               *skip ? ". Not computed: " : "", skip);
  }
  pthread_mutex_unlock(&idx_cache.mu);
  free(dir);
  free(index);
  return rc;
}

/* ---- Describe (rank 0) ------------------------------------------------- */

static int fd_read(void *ctx, int64_t off, void *buf, size_t n, size_t *got) {
  return ferry__pread_full(*(int *)ctx, buf, n, off, got) != 0 ? errno : 0;
}

static const char *enc_note(const char *enc) {
  if (!strcmp(enc, "jpeg") || !strcmp(enc, "png"))
    return ": the image file's bytes (decode= decodes them)";
  if (!strcmp(enc, "pil"))
    return ": Pillow's raw form (uint32 width, height, mode length; the mode; "
           "the pixels), served as bytes";
  if (!strcmp(enc, "str") || !strcmp(enc, "json") ||
      !strcmp(enc, "str_decimal"))
    return ": UTF-8 text as bytes";
  if (!strncmp(enc, "list[", 5) || !strncmp(enc, "jpeg", 4))
    return ": a list of images in Streaming's layout (uint32 count, sizes, "
           "files), served as bytes";
  return "";
}

/* A LOC_ARRAYS record's shape summary (the record's layout above). */
typedef struct shape_sum {
  int ndim, same;
  int64_t at;
  int64_t inner[FERRY_MAX_DIMS];
} shape_sum;

static void get_shape_sum(ferry__rec_r *r, int64_t n, shape_sum *sum) {
  memset(sum, 0, sizeof *sum);
  sum->ndim = (int)ferry__rec_get_u8(r);
  sum->same = (int)ferry__rec_get_u8(r);
  sum->at = ferry__rec_get_nonneg(r, "bad offset of the first array");
  if (!r->rc &&
      (sum->ndim > 63 || (n > 0) != (sum->ndim > 0) || sum->same > 1 ||
       (sum->same && sum->ndim - 1 > FERRY__MDS_MAX_INNER)))
    ferry__rec_fail(r, "bad shape summary");
  for (int k = 0; !r->rc && sum->same && k < sum->ndim - 1; k++)
    if ((sum->inner[k] = ferry__rec_get_nonneg(r, "bad dimension")) < 1)
      ferry__rec_fail(r, "bad dimension");
}

static int fill_var(const ferry__mds_shard *s, const ferry__mds_col *c, int v,
                    const char *file, int zstd, int64_t stored,
                    ferry__part_desc *out, ferry__err *err) {
  ferry__var *var = &out->vars[v];
  int ragged = c->kind == FERRY__MDS_BYTES || c->kind == FERRY__MDS_DYNARRAY;
  size_t es = ferry_dtype_size(c->dtype);
  var->name = strdup(c->name);
  var->dtype = c->dtype;
  var->ragged = ragged;
  var->row_ndim = c->kind == FERRY__MDS_ARRAY ? c->ndim : 0;
  for (int k = 0; k < var->row_ndim; k++)
    var->row_shape[k] = c->shape[k];
  var->row_bytes = c->kind == FERRY__MDS_ARRAY ? (size_t)c->fixed : es;
  char st[400];
  snprintf(st, sizeof st, "MDS column, encoding %s%s%s%s", c->enc,
           enc_note(c->enc),
           c->kind == FERRY__MDS_DYNARRAY
               ? ": each sample's array flattened (its shape prefix skipped)"
           : c->kind == FERRY__MDS_STRINT || c->kind == FERRY__MDS_STRFLOAT
               ? ": digits parsed at describe"
               : "",
           zstd ? "; zstd shard, decompressed in memory" : "");
  var->storage = strdup(st);
  out->paths[v] = strdup(file);
  out->data_offset[v] = 0;
  out->file_size[v] = s->size;
  int values = c->kind == FERRY__MDS_STRINT || c->kind == FERRY__MDS_STRFLOAT;
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  int arrays = c->kind == FERRY__MDS_DYNARRAY;
  ferry__rec_put_u8(&w, values   ? LOC_VALUES
                        : arrays ? LOC_ARRAYS
                                 : LOC_OFFSETS);
  ferry__rec_put_u8(&w, zstd ? CODEC_ZSTD : CODEC_RAW);
  ferry__rec_put_u64(&w, (uint64_t)stored);
  ferry__rec_put_u64(&w, (uint64_t)s->n);
  ferry__rec_put_u64s(&w, c->pos, (size_t)s->n);
  if (arrays) {
    int same = c->dyn_ndim > 0 && c->inner_same;
    ferry__rec_put_u8(&w, (unsigned)c->dyn_ndim);
    ferry__rec_put_u8(&w, (unsigned)same);
    ferry__rec_put_u64(&w, (uint64_t)c->dyn_at);
    for (int k = 0; same && k < c->dyn_ndim - 1; k++)
      ferry__rec_put_u64(&w, (uint64_t)c->inner[k]);
  }
  int rc = ferry__rec_blob(&w, &out->rec[v]);
  if (ragged && !rc && (out->roff[v] = malloc(((size_t)s->n + 1) * 8))) {
    out->roff[v][0] = 0;
    for (int64_t i = 0; i < s->n; i++)
      out->roff[v][i + 1] = out->roff[v][i] + c->len[i] / (int64_t)es;
  }
  if (rc || !var->name || !var->storage || !out->paths[v] ||
      (ragged && !out->roff[v]))
    return ferry__oom(err, -1, ((size_t)s->n + 1) * 16,
                      "column %s of MDS shard %s", c->name, file);
  return 0;
}

static int fill_desc(const ferry__mds_shard *s, const char *file, int zstd,
                     int64_t stored, const char *hnote, ferry__part_desc *out,
                     ferry__err *err) {
  int n = 0;
  for (int c = 0; c < s->ncols; c++)
    n += s->cols[c].selected;
  if (n == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "MDS shard %s: none of its %d columns can be served",
                         file, s->ncols);
  out->vars = calloc((size_t)n, sizeof *out->vars);
  out->paths = calloc((size_t)n, sizeof *out->paths);
  out->data_offset = calloc((size_t)n, sizeof *out->data_offset);
  out->file_size = calloc((size_t)n, sizeof *out->file_size);
  out->rec = calloc((size_t)n, sizeof *out->rec);
  out->roff = calloc((size_t)n, sizeof *out->roff);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec || !out->roff)
    return ferry__oom(err, -1, (size_t)n * 80, "the variables of MDS shard %s",
                      file);
  out->nvars = n;
  out->num_samples = s->n;
  for (int c = 0, v = 0; c < s->ncols; c++)
    if (s->cols[c].selected) {
      int rc = fill_var(s, &s->cols[c], v++, file, zstd, stored, out, err);
      if (rc)
        return rc;
    }
  char notes[1600];
  size_t used = (size_t)snprintf(notes, sizeof notes,
                                 "mds, first shard %s: %lld samples, %d "
                                 "columns",
                                 file, (long long)s->n, s->ncols);
  for (int c = 0; c < s->ncols && used < sizeof notes; c++)
    if (!s->cols[c].kind)
      used += (size_t)snprintf(notes + used, sizeof notes - used,
                               "; column %s (%s) skipped: %s", s->cols[c].name,
                               s->cols[c].enc, s->cols[c].why);
  if (*hnote && used < sizeof notes)
    snprintf(notes + used, sizeof notes - used, "; %s", hnote);
  if (!(out->notes = strdup(notes)))
    return ferry__oom(err, -1, strlen(notes) + 1, "the notes of MDS shard %s",
                      file);
  return 0;
}

static int mds_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  char *file = NULL, *vars = NULL;
  unsigned char *dec = NULL;
  int64_t declen = 0;
  int zstd = 0, fd = -1, rc = 0;
  struct stat st;
  char hnote[600] = "";
  ferry__mds_shard s;
  memset(&s, 0, sizeof s);
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
      !ferry__has_suffix(path, "index.json")) {
    if (!(file = strdup(path)))
      return ferry__oom(err, -1, strlen(path) + 1, "the path %s", path);
    zstd = is_zstd_name(file);
  } else if ((rc = single_shard(path, &file, &zstd, err)) < 0) {
    return rc;
  }
  if ((fd = ferry__open_regular(file, NULL)) < 0 || fstat(fd, &st) != 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno), "open failed: %s: %s",
                       file, strerror(errno));
    goto done;
  }
  if (opts) {
    if (!(vars = malloc(65536))) {
      rc = ferry__oom(err, -1, 65536, "the vars option, reading %s", file);
      goto done;
    }
    if (ferry_options_get(opts, "vars", vars, 65536) != 0)
      vars[0] = '\0';
  }
  ferry__mds_mem mem = {0};
  ferry__mds_src src = {.read = fd_read,
                        .ctx = &fd,
                        .size = (int64_t)st.st_size,
                        .path = file,
                        .vars = vars};
  if (zstd) {
    if ((rc = zstd_load(file, fd, (int64_t)st.st_size, &dec, &declen, -1,
                        err)) < 0)
      goto done;
    mem.p = dec;
    mem.n = (size_t)declen;
    src.read = ferry__mds_mem_read;
    src.ctx = &mem;
    src.size = declen;
  }
  if (hashes_check(opts) &&
      (rc = check_digests(file, fd, (int64_t)st.st_size, zstd, dec, declen,
                          hnote, sizeof hnote, err)) < 0)
    goto done;
  if ((rc = ferry__mds_shard_scan(&src, &s, err)) < 0)
    goto done;
  rc = fill_desc(&s, file, zstd, (int64_t)st.st_size, hnote, out, err);
done:
  if (fd >= 0)
    close(fd);
  ferry__mds_shard_free(&s);
  free(dec);
  free(vars);
  free(file);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- Finish (rank 0, every shard described) --------------------------- */

/* Part p's record of variable v read up to its shape summary: *kind, and
 * *sum when it is LOC_ARRAYS; r->rc set when the record is damaged. */
static void rec_summary(const ferry__part *pt, int v, ferry__rec_r *r,
                        int *kind, shape_sum *sum) {
  ferry__rec_r_init(r, pt->rec ? pt->rec[v].p : NULL,
                    pt->rec ? pt->rec[v].len : 0);
  *kind = (int)ferry__rec_get_u8(r);
  (void)ferry__rec_get_u8(r);
  (void)ferry__rec_get_u64(r);
  int64_t n = ferry__rec_get_nonneg(r, "bad sample count");
  if (!r->rc && *kind == LOC_ARRAYS) {
    if ((uint64_t)n > ferry__rec_left(r) / 8)
      ferry__rec_fail(r, "bad sample count");
    else
      (void)ferry__rec_take(r, (size_t)n * 8);
    get_shape_sum(r, n, sum);
  }
}

/* The variable's storage text with "flattened" replaced by its rows'
 * inner shape. */
static int storage_rows(ferry__var *var, const shape_sum *sum,
                        ferry__err *err) {
  static const char flat[] = ": each sample's array flattened";
  char *f = var->storage ? strstr(var->storage, flat) : NULL;
  if (!f)
    return 0;
  const char *zstd = strstr(f, "; zstd");
  char shape[160], st[600];
  size_t used = 0;
  for (int k = 0; k < sum->ndim - 1; k++)
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld",
                             k ? ", " : "", (long long)sum->inner[k]);
  snprintf(st, sizeof st,
           "%.*s: each sample's array as rows of shape (%s), its first "
           "dimension the sample's row count (the shape prefix skipped)%s",
           (int)(f - var->storage), var->storage, shape, zstd ? zstd : "");
  char *d = strdup(st);
  if (!d)
    return ferry__oom(err, -1, strlen(st) + 1, "variable %s", var->name);
  free(var->storage);
  var->storage = d;
  return 0;
}

/* Each dynamic ndarray variable: its samples in every shard must have one
 * number of dimensions (else an error naming the shard, the column and the
 * first sample's offset); when their dimensions after the first are the
 * same in every sample of every shard, those become the ragged rows' inner
 * shape (the offsets divided by the elements of a row), else the values
 * stay flattened (rows of one element). */
static int mds_finish(ferry__manifest *m, ferry__err *err) {
  for (int v = 0; v < m->nvars; v++) {
    ferry__var *var = &m->vars[v];
    shape_sum first, sum;
    int64_t pfirst = -1;
    int same = 1, kind = 0;
    memset(&first, 0, sizeof first);
    for (int64_t p = 0; var->ragged && p < m->nparts; p++) {
      const ferry__part *pt = &m->parts[p];
      ferry__rec_r r;
      rec_summary(pt, v, &r, &kind, &sum);
      if (r.rc)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "file %s, variable %s: its record: %s at byte "
                             "%zu",
                             pt->paths[v], var->name, r.why ? r.why : "?",
                             r.at);
      if (kind != LOC_ARRAYS) {
        same = 0; /* a column of another encoding in this shard */
        continue;
      }
      if (sum.ndim == 0) /* a shard of no sample */
        continue;
      if (pfirst < 0) {
        first = sum;
        pfirst = p;
        continue;
      }
      if (sum.ndim != first.ndim)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "MDS shard %s, sample 0, column %s, offset %lld: "
                             "an ndarray of %d dimensions where shard %s's "
                             "have %d: ferry serves one number of dimensions "
                             "per column",
                             pt->paths[v], var->name, (long long)sum.at,
                             sum.ndim, m->parts[pfirst].paths[v], first.ndim);
      for (int k = 0; same && k < first.ndim - 1; k++)
        same = sum.same && first.same && sum.inner[k] == first.inner[k];
    }
    if (pfirst < 0 || !same || !first.same || first.ndim < 2)
      continue;
    int64_t elems = 1;
    for (int k = 0; k < first.ndim - 1; k++) {
      if (first.inner[k] > (int64_t)(SIZE_MAX / 8 / var->row_bytes) / elems)
        elems = -1;
      if (elems < 0)
        break;
      elems *= first.inner[k];
    }
    if (elems < 0)
      continue; /* rows too large for a size_t: keep them flat */
    for (int64_t p = 0; p < m->nparts; p++) {
      const int64_t *ro = m->parts[p].roff[v];
      for (int64_t i = 0; i <= m->parts[p].num_samples; i++)
        if (ro[i] % elems)
          return ferry__seterr(err, FERRY_EINTERNAL,
                               "MDS shard %s, column %s: sample %lld's "
                               "values are not whole rows of %lld elements",
                               m->parts[p].paths[v], var->name, (long long)i,
                               (long long)elems);
    }
    for (int64_t p = 0; p < m->nparts; p++) {
      int64_t *ro = m->parts[p].roff[v];
      for (int64_t i = 0; i <= m->parts[p].num_samples; i++)
        ro[i] /= elems;
    }
    var->row_ndim = first.ndim - 1;
    for (int k = 0; k < var->row_ndim; k++)
      var->row_shape[k] = first.inner[k];
    var->row_bytes *= (size_t)elems;
    int rc = storage_rows(var, &first, err);
    if (rc)
      return rc;
  }
  return 0;
}

/* ---- Reads (I/O thread) ------------------------------------------------ */

typedef struct loctab {
  int kind;     /* LOC_*; 0: not decoded yet */
  int codec;    /* CODEC_* */
  int64_t *pos; /* [n] value offsets, or values */
} loctab;

typedef struct shardbuf {
  int64_t part; /* -1: free slot */
  unsigned char *p;
  int64_t n;
  uint64_t used; /* the clock at its last use */
} shardbuf;

enum { DEC_SLOTS = 64 };

struct ferry__io {
  ferry__io_base b;
  loctab *t;
  unsigned char *scratch;
  shardbuf dec[DEC_SLOTS];
  int64_t dec_bytes;
  uint64_t clock;
};

static int64_t stored_size(const ferry__part *pt) {
  /* the record's third field: the file's bytes on disk */
  if (!pt->rec || !pt->rec[0].p || pt->rec[0].len < 10)
    return -1;
  return (int64_t)ferry__le64_load((const unsigned char *)pt->rec[0].p + 2);
}

static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  ferry__io *io = ctx;
  const ferry__part *pt = &io->b.m->parts[part];
  (void)var;
  return ferry__io_base_fd_open(&io->b, pt->paths[0], NULL, stored_size(pt),
                                handle, err);
}

static int64_t value_bytes(const ferry__part *pt, const ferry__var *v, int var,
                           int64_t i) {
  return v->ragged
             ? (pt->roff[var][i + 1] - pt->roff[var][i]) * (int64_t)v->row_bytes
             : (int64_t)v->row_bytes;
}

/* The table of (part, var), checked: one entry per sample, every value
 * inside the shard, in increasing order, none overlapping. */
static int tab_get(ferry__io *io, int64_t part, int var, loctab **out,
                   ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  loctab *t = &io->t[part * m->nvars + var];
  *out = t;
  if (t->kind)
    return 0;
  const ferry__part *pt = &m->parts[part];
  const ferry__var *v = &m->vars[var];
  ferry__rec_r r;
  ferry__rec_r_init(&r, pt->rec ? pt->rec[var].p : NULL,
                    pt->rec ? pt->rec[var].len : 0);
  int kind = (int)ferry__rec_get_u8(&r);
  int codec = (int)ferry__rec_get_u8(&r);
  (void)ferry__rec_get_u64(&r);
  int64_t n = ferry__rec_get_nonneg(&r, "bad sample count");
  if (!r.rc && kind != LOC_OFFSETS && kind != LOC_VALUES && kind != LOC_ARRAYS)
    ferry__rec_fail(&r, "bad kind");
  if (!r.rc && kind == LOC_ARRAYS && !v->ragged)
    ferry__rec_fail(&r, "arrays for a variable that is not ragged");
  if (!r.rc && kind == LOC_VALUES && (v->ragged || v->row_bytes != 8))
    ferry__rec_fail(&r, "values for a variable not of 8-byte scalars");
  if (!r.rc && codec != CODEC_RAW && codec != CODEC_ZSTD)
    ferry__rec_fail(&r, "bad codec");
  if (!r.rc && v->ragged && !pt->roff)
    ferry__rec_fail(&r, "a ragged variable without offsets");
  if (!r.rc && n != pt->num_samples)
    ferry__rec_fail(&r, "not one entry per sample");
  if (!r.rc && (uint64_t)n > ferry__rec_left(&r) / 8)
    ferry__rec_fail(&r, "bad sample count");
  if (!r.rc && !(t->pos = malloc((size_t)(n ? n : 1) * 8)))
    ferry__rec_oom(&r, (size_t)n * 8, "the location table");
  if (!r.rc)
    ferry__rec_get_u64s(&r, t->pos, (size_t)n);
  if (!r.rc && kind == LOC_ARRAYS) { /* finish's business; checked here */
    shape_sum sum;
    get_shape_sum(&r, n, &sum);
  }
  for (int64_t i = 0, end = 0; !r.rc && kind != LOC_VALUES && i < n; i++) {
    int64_t len = value_bytes(pt, v, var, i);
    if (len < 0 || t->pos[i] < end || t->pos[i] > pt->file_size[var] - len)
      ferry__rec_fail(&r, "a value outside the shard or out of order");
    end = t->pos[i] + len;
  }
  if (!r.rc)
    ferry__rec_end(&r, "bytes after the table");
  if (r.rc) {
    free(t->pos);
    t->pos = NULL;
    if (r.rc == FERRY_ENOMEM)
      return ferry__oom(err, io->b.rank, r.want,
                        "the location table of file %s, variable %s",
                        pt->paths[var], v->name);
    return ferry__seterr(
        err, FERRY_EFORMAT,
        "file %s, variable %s, rank %d: its record: %s at byte %zu",
        pt->paths[var], v->name, io->b.rank, r.why ? r.why : "?", r.at);
  }
  t->kind = kind == LOC_ARRAYS ? LOC_OFFSETS : kind;
  t->codec = codec;
  return 0;
}

static int mds_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = ferry__io_base_fd_close,
      .no_collective = "io=collective with MDS shards: their values are "
                       "read independently (io=auto or independent)",
  };
  void *vp = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &vp, err);
  ferry__io *io = vp;
  if (!rc &&
      (!(io->t = calloc((size_t)(m->nparts * m->nvars), sizeof *io->t)) ||
       !(io->scratch = malloc(FERRY__GATHER_GAP_MAX)))) {
    rc =
        ferry__oom(err, p->rank, (size_t)(m->nparts * m->nvars) * sizeof *io->t,
                   "the location tables of dataset %s", m->spec);
    ferry__io_base_close(&io->b);
    free(io->t);
    free(io);
    io = NULL;
  }
  for (int k = 0; io && k < DEC_SLOTS; k++)
    io->dec[k].part = -1;
  *out = io;
  return rc;
}

/* The decompressed bytes of zstd part, from the cache or decoded now. */
static int shard_get(ferry__io *io, int64_t part, int var,
                     const unsigned char **p, ferry__err *err) {
  const ferry__part *pt = &io->b.m->parts[part];
  shardbuf *hit = NULL, *free_slot = NULL;
  for (int k = 0; k < DEC_SLOTS; k++) {
    if (io->dec[k].part == part)
      hit = &io->dec[k];
    else if (io->dec[k].part < 0 && !free_slot)
      free_slot = &io->dec[k];
  }
  if (hit) {
    hit->used = ++io->clock;
    *p = hit->p;
    return 0;
  }
  void *h = NULL;
  int rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err);
  unsigned char *dec = NULL;
  int64_t n = 0;
  if (!rc)
    rc = zstd_load(pt->paths[var], *(int *)h, stored_size(pt), &dec, &n,
                   io->b.rank, err);
  if (!rc && n != pt->file_size[var])
    rc = ferry__seterr_on(err, io->b.rank, FERRY_EMISMATCH,
                          "MDS shard %s, variable %s: decompresses to %lld "
                          "bytes where rank 0 saw %lld (the file changed)",
                          pt->paths[var], io->b.m->vars[var].name, (long long)n,
                          (long long)pt->file_size[var]);
  if (rc) {
    free(dec);
    return rc;
  }
  /* evict the least recently used until it fits (or none is left) */
  while (io->dec_bytes + n > MDS_CACHE_BYTES || !free_slot) {
    shardbuf *old = NULL;
    for (int k = 0; k < DEC_SLOTS; k++)
      if (io->dec[k].part >= 0 && (!old || io->dec[k].used < old->used))
        old = &io->dec[k];
    if (!old)
      break;
    free(old->p);
    io->dec_bytes -= old->n;
    old->part = -1;
    old->p = NULL;
    if (!free_slot)
      free_slot = old;
  }
  if (!free_slot) { /* cannot be: a full cache has a least recent entry */
    free(dec);
    return ferry__seterr_on(err, io->b.rank, FERRY_EINTERNAL,
                            "MDS shard %s: no slot in the shard cache",
                            pt->paths[var]);
  }
  *free_slot = (shardbuf){.part = part, .p = dec, .n = n, .used = ++io->clock};
  io->dec_bytes += n;
  *p = dec;
  return 0;
}

static int mds_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (!rc)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  loctab *t = NULL;
  if (!rc && nrows > 0)
    rc = tab_get(io, part, var, &t, err);
  if (rc || nrows == 0)
    return rc;
  if (t->kind == LOC_VALUES) {
    memcpy(buf, t->pos + row, (size_t)nrows * 8);
    return 0;
  }
  const ferry__part *pt = &m->parts[part];
  if (t->codec == CODEC_ZSTD) {
    const unsigned char *p = NULL;
    if ((rc = shard_get(io, part, var, &p, err)) < 0)
      return rc;
    unsigned char *d = buf;
    for (int64_t i = row; i < row + nrows; i++) {
      int64_t len = value_bytes(pt, &m->vars[var], var, i);
      memcpy(d, p + t->pos[i], (size_t)len);
      d += len;
    }
    return 0;
  }
  void *h = NULL;
  rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err);
  if (rc)
    return rc;
  return ferry__gather_entries(*(int *)h, io->b.m, part, var, t->pos, row,
                               nrows, buf, io->scratch, io->b.rank, err);
}

static void mds_io_close(ferry__io *io) {
  if (!io)
    return;
  for (int64_t i = 0; io->t && i < io->b.m->nparts * io->b.m->nvars; i++)
    free(io->t[i].pos);
  for (int k = 0; k < DEC_SLOTS; k++)
    free(io->dec[k].p);
  free(io->t);
  free(io->scratch);
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_mds = {
    .name = "mds",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = MDS_REC_VERSION,
    .probe = mds_probe,
    .accepts = "a MosaicML Streaming MDS dataset: a directory with an "
               "index.json of mds shards, the index.json, or a shard "
               "(.mds, .mds.zstd)",
    .expand = mds_expand,
    .describe = mds_describe,
    .finish = mds_finish,
    .io_open = mds_io_open,
    .io_read = mds_io_read,
    .io_close = mds_io_close,
};
