/*
 * core/roffmap.c - a saved manifest's ragged offsets, mapped from its
 * PATH.roff instead of held (issue 25: a dataset of 10^8 sequences has
 * 763 MiB of offsets, which every rank held whole after the broadcast).
 *
 * The file (dataset/json.c writes it: "FRYO", version 1, the count, the
 * int64 offsets little-endian, part after part, then a checksum) is mapped
 * read-only and shared on every rank that opens the manifest; the parts'
 * roff[v] point into the mapping, so every reader of offsets is unchanged.
 * What a rank holds of them is then the pages it touched, and those are
 * the page cache's (shared by the ranks of a node, clean, reclaimable):
 * ferry__manifest_trim drops them from the rank's mappings after each pass
 * over whole arrays and every few hundred batches (a dropped page is read
 * again from the page cache when next touched; nothing is lost), so what a
 * rank keeps resident is bounded by the window it reads, not the dataset.
 * Big-endian hosts read the file into memory instead (json.c).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise */
#endif

#include "core/manifest.h"
#include "util/record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int ferry__roff_map_supported(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1; /* little-endian: the file's int64s are the host's */
}

int ferry__roff_map_open(const char *path, int version, int64_t count,
                         uint64_t fnv, ferry__roff_map **out, ferry__err *err) {
  return ferry__side_map_open(path, FERRY__ROFF_MAGIC, "offsets' file", version,
                              count, fnv, out, err);
}

int ferry__side_map_open(const char *path, const char *magic, const char *what,
                         int version, int64_t count, uint64_t fnv,
                         ferry__roff_map **out, ferry__err *err) {
  *out = NULL;
  if (count < 1 || count > (INT64_MAX - 64) / 8)
    return ferry__seterr(err, FERRY_EFORMAT, "%s %s: bad count %lld", what,
                         path, (long long)count);
  size_t len = FERRY__ROFF_HEAD + 8 * (size_t)count + 8;
  /* never blocks (a FIFO named by a bad manifest would wait for a writer):
   * non-blocking, and a regular file only (below) */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "%s %s: %s (it is saved beside the "
                         "manifest: copy both)",
                         what, path, strerror(errno));
  struct stat st;
  int rc = 0;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) != 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), "%s %s: %s", what, path,
                       strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = ferry__seterr(err, FERRY_EFORMAT, "%s %s: not a regular file", what,
                       path);
  else if ((uint64_t)st.st_size != (uint64_t)len)
    rc =
        ferry__seterr(err, FERRY_EFORMAT,
                      "%s %s: %lld bytes, not the %zu of a count of %lld "
                      "(saved with another manifest?)",
                      what, path, (long long)st.st_size, len, (long long)count);
  else if ((p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
    rc = ferry__seterr(err, ferry__errno_code(errno),
                       "%s %s: mmap of %zu bytes: %s", what, path, len,
                       strerror(errno));
  close(fd); /* the mapping stays */
  if (rc)
    return rc;
  const unsigned char *b = p;
  if (memcmp(b, magic, 4) != 0 || b[4] != version ||
      memcmp(b + 5, "\0\0\0", 3) != 0 ||
      ferry__le64_load(b + 8) != (uint64_t)count ||
      ferry__le64_load(b + len - 8) != fnv) {
    munmap(p, len);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s %s does not match its manifest "
                         "(header, count %lld or checksum): saved with "
                         "another manifest, or changed since",
                         what, path, (long long)count);
  }
  ferry__roff_map *mp = calloc(1, sizeof *mp);
  if (!mp || !(mp->path = strdup(path))) {
    free(mp);
    munmap(p, len);
    return ferry__oom(err, -1, strlen(path) + sizeof *mp, "a path");
  }
  mp->what = what;
  mp->addr = p;
  mp->len = len;
  mp->count = count;
  mp->fnv = fnv;
  mp->version = version;
  *out = mp;
  return 0;
}

void ferry__roff_map_close(ferry__roff_map *mp) {
  if (!mp)
    return;
  munmap(mp->addr, mp->len);
  free(mp->path);
  free(mp->dig_at);
  free(mp->dig);
  free(mp->blk);
  free(mp);
}

static void trim_range(const ferry__roff_map *mp, uintptr_t from, uintptr_t to);

int ferry__side_map_check(ferry__roff_map *mp, int fnv1a, uint64_t *sum) {
  const int64_t nb = ferry__roff_map_nblocks(mp);
  if (!(mp->blk = malloc((size_t)nb * sizeof *mp->blk)))
    return FERRY_ENOMEM;
  const unsigned char *b = mp->addr;
  size_t n = mp->len - 8, step = (size_t)FERRY__TRIM_STEP * 8;
  uint64_t h = FERRY__FNV_INIT;
  for (size_t i = 0; i < n; i += step) {
    size_t k = n - i < step ? n - i : step;
    h = fnv1a ? ferry__fnv1a(h, b + i, k) : ferry__hash_words(h, b + i, k);
    mp->blk[i / step] = ferry__roff_map_block_hash(mp, (int64_t)(i / step));
    trim_range(mp, (uintptr_t)(b + i), (uintptr_t)(b + i + k));
  }
  mp->nblk = nb;
  *sum = h;
  return 0;
}

int64_t ferry__roff_map_nblocks(const ferry__roff_map *mp) {
  const int64_t step = FERRY__TRIM_STEP * 8, body = (int64_t)mp->len - 8;
  return (body + step - 1) / step;
}

uint64_t ferry__roff_map_block_hash(const ferry__roff_map *mp, int64_t k) {
  const size_t step = (size_t)FERRY__TRIM_STEP * 8, body = mp->len - 8;
  size_t at = (size_t)k * step, n = body - at < step ? body - at : step;
  return ferry__hash_words(FERRY__FNV_INIT,
                           (const unsigned char *)mp->addr + at, n);
}

int ferry__roff_map_verify(const ferry__roff_map *mp, int rank, int size,
                           ferry__err *err) {
  if (!mp || rank < 1 || size < 2)
    return 0;
  const int64_t nb = ferry__roff_map_nblocks(mp);
  if (mp->nblk != nb)
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "%s %s: %lld block hashes for %lld blocks", mp->what,
                         mp->path, (long long)mp->nblk, (long long)nb);
  const size_t step = (size_t)FERRY__TRIM_STEP * 8;
  const unsigned char *b = mp->addr;
  for (int64_t k = rank - 1; k < nb; k += size - 1) {
    uint64_t h = ferry__roff_map_block_hash(mp, k);
    size_t at = (size_t)k * step,
           end = at + step < mp->len - 8 ? at + step : mp->len - 8;
    trim_range(mp, (uintptr_t)(b + at), (uintptr_t)(b + end));
    if (h != mp->blk[k])
      return ferry__seterr_on(err, rank, FERRY_EFORMAT,
                              "%s %s: bytes %zu to %zu differ from "
                              "what rank 0 read (another copy of the file on "
                              "this node, or changed since)",
                              mp->what, mp->path, at, end);
  }
  return 0;
}

const int64_t *ferry__roff_map_at(const ferry__roff_map *mp, int64_t at) {
  return (const int64_t *)((const unsigned char *)mp->addr + FERRY__ROFF_HEAD) +
         at;
}

int64_t ferry__roff_map_pos(const ferry__roff_map *mp, const int64_t *o) {
  if (!mp || !o)
    return -1;
  const int64_t *base = ferry__roff_map_at(mp, 0);
  if (o < base || o >= base + mp->count)
    return -1;
  return o - base;
}

int ferry__manifest_owns_roff(const ferry__manifest *m, const int64_t *o) {
  return m && m->roff_map && ferry__roff_map_pos(m->roff_map, o) >= 0;
}

int ferry__manifest_owns_rec(const ferry__manifest *m, const void *p) {
  if (!m || !m->rec_map || !p)
    return 0;
  uintptr_t a = (uintptr_t)m->rec_map->addr, x = (uintptr_t)p;
  return x >= a && x < a + m->rec_map->len;
}

/* The whole pages of m's mapping inside [from, to), dropped. */
static void trim_range(const ferry__roff_map *mp, uintptr_t from,
                       uintptr_t to) {
  uintptr_t a = (uintptr_t)mp->addr, z = a + mp->len;
  if (from < a)
    from = a;
  if (to > z)
    to = z;
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t pg = page > 0 ? (uintptr_t)page : 4096;
  from = (from + pg - 1) / pg * pg; /* whole pages inside [from, to) */
  to = to == z ? z : to / pg * pg;
  if (to > from) /* clean pages of a read-only file: nothing is lost */
    (void)madvise((void *)from, to - from, MADV_DONTNEED);
}

void ferry__manifest_trim(const ferry__manifest *m, const void *lo,
                          const void *hi) {
  if (m && !lo && !hi) { /* the whole: and the datasets under a view's */
    if (m->inner)
      ferry__manifest_trim(m->inner, NULL, NULL);
    for (int64_t i = 0; m->srcs && i < m->nsrcs; i++)
      ferry__manifest_trim(&m->srcs[i], NULL, NULL);
  }
  if (!m || !m->roff_map)
    return;
  uintptr_t a = (uintptr_t)m->roff_map->addr;
  trim_range(m->roff_map, lo ? (uintptr_t)lo : a,
             hi ? (uintptr_t)hi : a + m->roff_map->len);
}

int ferry__roff_map_remember(ferry__roff_map *mp, const int64_t *o,
                             uint64_t digest) {
  int64_t at = ferry__roff_map_pos(mp, o);
  if (at < 0)
    return 0;
  if (mp->ndig == mp->capdig) {
    int64_t cap = mp->capdig ? 2 * mp->capdig : 16;
    int64_t *a = realloc(mp->dig_at, (size_t)cap * sizeof *a);
    if (a)
      mp->dig_at = a;
    uint64_t *d = a ? realloc(mp->dig, (size_t)cap * sizeof *d) : NULL;
    if (!d)
      return -1;
    mp->dig = d;
    mp->capdig = cap;
  }
  mp->dig_at[mp->ndig] = at;
  mp->dig[mp->ndig++] = digest;
  return 0;
}

int ferry__roff_map_recall(const ferry__roff_map *mp, const int64_t *o,
                           uint64_t *digest) {
  int64_t at = mp ? ferry__roff_map_pos(mp, o) : -1;
  for (int64_t k = 0; at >= 0 && k < mp->ndig; k++)
    if (mp->dig_at[k] == at) {
      *digest = mp->dig[k];
      return 1;
    }
  return 0;
}

void ferry__manifest_trim_near(const ferry__manifest *m, const int64_t *o) {
  if (!m || !m->roff_map)
    return;
  uintptr_t p = (uintptr_t)o, r = (uintptr_t)FERRY__TRIM_NEAR;
  trim_range(m->roff_map, p > r ? p - r : 0, p + r);
}
