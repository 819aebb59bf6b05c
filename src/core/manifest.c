/*
 * manifest.c - the manifest's records: what every rank holds of a dataset
 * once rank 0 has scanned it (dataset/scan.c), and how it travels.
 *
 * The manifest is serialised into a flat, versioned, little-endian buffer
 * for MPI_Bcast (pack/unpack, which never trusts the buffer it is given)
 * and hashed for the cross-rank and resume checks.  It lives here, below
 * the backends, because the backends read it: every io_read checks its
 * part and rows against it (ferry__check_part_var, ferry__check_rows) and
 * the mix backend unpacks each source's manifest from its record.  Making
 * one (the scan), saving and loading it (the JSON) name the backends and
 * live above them in src/dataset/.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "core/manifest.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void ferry__manifest_free(ferry__manifest *m) {
  if (!m)
    return;
  for (int64_t p = 0; m->parts && p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    for (int v = 0; pt->paths && v < m->nvars; v++)
      free(pt->paths[v]);
    for (int v = 0; pt->rec && v < m->nvars; v++)
      free(pt->rec[v].p);
    free(pt->rec);
    free(pt->paths);
    free(pt->data_offset);
    free(pt->file_size);
  }
  free(m->parts);
  for (int v = 0; m->vars && v < m->nvars; v++) {
    free(m->vars[v].name);
    free(m->vars[v].storage);
  }
  free(m->vars);
  free(m->backend);
  free(m->spec);
  free(m->notes);
  memset(m, 0, sizeof *m);
}

int ferry__check_part_var(const ferry__manifest *m, int64_t part, int var,
                          int rank, ferry__err *err) {
  if (part >= 0 && part < m->nparts && var >= 0 && var < m->nvars)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "read of part %lld variable %d on rank %d: no such "
                       "part or variable (the dataset has %lld parts, %d "
                       "variables)",
                       (long long)part, var, rank, (long long)m->nparts,
                       m->nvars);
}

int ferry__check_rows(const ferry__manifest *m, int64_t part, int var,
                      int64_t row, int64_t nrows, int rank, ferry__err *err) {
  const ferry__part *pt = &m->parts[part];
  if (row >= 0 && nrows >= 0 && row <= pt->num_samples &&
      nrows <= pt->num_samples - row)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "rows [%lld, %lld) are outside %s (variable %s, %lld "
                       "rows; rank %d)",
                       (long long)row, (long long)(row + nrows), pt->paths[var],
                       m->vars[var].name, (long long)pt->num_samples, rank);
}

/* ---- Pack / unpack ---------------------------------------------------- */

/*
 * Layout (all integers little-endian):
 *   "FRYM"  u8 version=3  3 zero bytes  u64 total length
 *   str backend  str spec  str notes  u32 record_version  u32 nvars
 *   per variable: str name  u8 dtype  u8 swapped  u8 row_ndim  u8 0
 *                 i64 row_shape[row_ndim]  u64 row_bytes
 *                 i64 chunk_rows  u64 cache_bytes  str storage
 *   i64 nparts  i64 num_samples
 *   per part: i64 num_samples  i64 first_sample
 *             per variable: str path  i64 data_offset  i64 file_size
 *                           str record (the backend's bytes, may be empty)
 *   u64 FNV-1a of every byte before it
 * where str is u32 length + bytes (no NUL in a string; a record may hold
 * any byte).  The hash is FNV-1a over the same body with the spec left
 * empty (the spec is how the user spelled the dataset, the rest is what
 * identifies the data), led by HASH_VERSION; the record fields enter it
 * only when the backend keeps records, so the hash of a manifest without
 * records is the one ferry computed before records existed (checkpoints
 * taken then still resume).
 */
#define PACK_VERSION 3
#define HASH_VERSION 2
#define PACK_HEAD 16

typedef struct wbuf {
  unsigned char *p;
  size_t len, cap;
  int failed;
  int hash_only;
  uint64_t h;
} wbuf;

static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->hash_only) {
    w->h = ferry__fnv1a(w->h, src, n);
    w->len += n;
    return;
  }
  if (w->failed)
    return;
  if (n > w->cap - w->len) {
    size_t ncap = w->cap ? w->cap : 256;
    while (n > ncap - w->len) {
      if (ncap > SIZE_MAX / 2) {
        w->failed = 1;
        return;
      }
      ncap *= 2;
    }
    unsigned char *np = realloc(w->p, ncap);
    if (!np) {
      w->failed = 1;
      return;
    }
    w->p = np;
    w->cap = ncap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void w_u64(wbuf *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 8);
}

static void w_u32(wbuf *w, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 4);
}

static void w_u8(wbuf *w, unsigned v) {
  unsigned char b = (unsigned char)v;
  w_bytes(w, &b, 1);
}

static void w_str(wbuf *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n > UINT32_MAX) {
    w->failed = 1;
    return;
  }
  w_u32(w, (uint32_t)n);
  w_bytes(w, s ? s : "", n);
}

static void w_blob(wbuf *w, const ferry__blob *b) {
  size_t n = b ? b->len : 0;
  if (n > UINT32_MAX) {
    w->failed = 1;
    return;
  }
  w_u32(w, (uint32_t)n);
  if (n)
    w_bytes(w, b->p, n);
}

/* full: the whole body (pack); else the hash's (see the layout above). */
static void pack_body(wbuf *w, const ferry__manifest *m, int full) {
  int recs = full || m->record_version != 0;
  w_str(w, m->backend);
  w_str(w, full ? m->spec : "");
  w_str(w, m->notes);
  if (recs)
    w_u32(w, (uint32_t)m->record_version);
  w_u32(w, (uint32_t)m->nvars);
  for (int v = 0; v < m->nvars; v++) {
    const ferry__var *x = &m->vars[v];
    w_str(w, x->name);
    w_u8(w, (unsigned)x->dtype);
    w_u8(w, (unsigned)x->swapped);
    w_u8(w, (unsigned)x->row_ndim);
    w_u8(w, 0);
    for (int k = 0; k < x->row_ndim; k++)
      w_u64(w, (uint64_t)x->row_shape[k]);
    w_u64(w, (uint64_t)x->row_bytes);
    w_u64(w, (uint64_t)x->chunk_rows);
    w_u64(w, (uint64_t)x->cache_bytes);
    w_str(w, x->storage);
  }
  w_u64(w, (uint64_t)m->nparts);
  w_u64(w, (uint64_t)m->num_samples);
  for (int64_t p = 0; p < m->nparts; p++) {
    const ferry__part *pt = &m->parts[p];
    w_u64(w, (uint64_t)pt->num_samples);
    w_u64(w, (uint64_t)pt->first_sample);
    for (int v = 0; v < m->nvars; v++) {
      w_str(w, pt->paths[v]);
      w_u64(w, (uint64_t)pt->data_offset[v]);
      w_u64(w, (uint64_t)pt->file_size[v]);
      if (recs)
        w_blob(w, pt->rec ? &pt->rec[v] : NULL);
    }
  }
}

uint64_t ferry__manifest_hash(const ferry__manifest *m) {
  wbuf w;
  memset(&w, 0, sizeof w);
  w.hash_only = 1;
  w.h = FERRY__FNV_INIT;
  w_u8(&w, HASH_VERSION);
  pack_body(&w, m, 0);
  return w.h;
}

size_t ferry__manifest_packed_size(const ferry__manifest *m) {
  wbuf w;
  memset(&w, 0, sizeof w);
  w.hash_only = 1; /* counts the bytes, writes nothing */
  pack_body(&w, m, 1);
  return w.len + 16 + 8; /* the header, then the checksum */
}

int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len) {
  wbuf w;
  memset(&w, 0, sizeof w);
  *buf = NULL;
  *len = 0;
  w_bytes(&w, "FRYM", 4);
  w_u8(&w, PACK_VERSION);
  w_u8(&w, 0);
  w_u8(&w, 0);
  w_u8(&w, 0);
  w_u64(&w, 0); /* total length, filled in below */
  pack_body(&w, m, 1);
  w_u64(&w, 0); /* checksum, filled in below */
  if (w.failed) {
    free(w.p);
    return FERRY_ENOMEM;
  }
  uint64_t total = w.len;
  for (int i = 0; i < 8; i++)
    w.p[8 + i] = (unsigned char)(total >> (8 * i));
  uint64_t sum = ferry__fnv1a(FERRY__FNV_INIT, w.p, w.len - 8);
  for (size_t i = 0; i < 8; i++)
    w.p[w.len - 8 + i] = (unsigned char)(sum >> (8 * i));
  *buf = w.p;
  *len = w.len;
  return 0;
}

typedef struct rbuf {
  const unsigned char *p;
  size_t len, pos;
  const char *bad; /* what was wrong, NULL while all is well */
  size_t bad_pos;
  int oom;
  size_t oom_bytes; /* what the failed allocation asked for */
} rbuf;

static int r_fail(rbuf *r, const char *what) {
  if (!r->bad) {
    r->bad = what;
    r->bad_pos = r->pos;
  }
  return -1;
}

/* Out of memory for bytes bytes of what. */
static int r_oom(rbuf *r, size_t bytes, const char *what) {
  if (!r->bad) {
    r->oom = 1;
    r->oom_bytes = bytes;
  }
  return r_fail(r, what);
}

static int r_bytes(rbuf *r, void *dst, size_t n) {
  if (r->bad)
    return -1;
  if (n > r->len - r->pos)
    return r_fail(r, "buffer ends early");
  memcpy(dst, r->p + r->pos, n);
  r->pos += n;
  return 0;
}

static uint64_t r_u64(rbuf *r) {
  unsigned char b[8] = {0};
  uint64_t v = 0;
  r_bytes(r, b, 8);
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)b[i] << (8 * i);
  return v;
}

/* A signed count or size that must be >= 0. */
static int64_t r_nonneg(rbuf *r, const char *what) {
  uint64_t v = r_u64(r);
  if (v > (uint64_t)INT64_MAX) {
    r_fail(r, what);
    return 0;
  }
  return (int64_t)v;
}

static uint32_t r_u32(rbuf *r) {
  unsigned char b[4] = {0};
  r_bytes(r, b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

static unsigned r_u8(rbuf *r) {
  unsigned char b = 0;
  r_bytes(r, &b, 1);
  return b;
}

static char *r_str(rbuf *r) {
  uint32_t n = r_u32(r);
  if (r->bad)
    return NULL;
  if (n > r->len - r->pos) {
    r_fail(r, "string runs past the end");
    return NULL;
  }
  if (memchr(r->p + r->pos, 0, n)) {
    r_fail(r, "string holds a NUL byte");
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    r_oom(r, (size_t)n + 1, "a string");
    return NULL;
  }
  memcpy(s, r->p + r->pos, n);
  s[n] = '\0';
  r->pos += n;
  return s;
}

/* A record into *b; without b (no record version) it must be empty. */
static int r_blob(rbuf *r, ferry__blob *b) {
  uint32_t n = r_u32(r);
  if (r->bad)
    return -1;
  if (n > r->len - r->pos)
    return r_fail(r, "record runs past the end");
  if (n && !b)
    return r_fail(r, "a record but no record version");
  if (n && !(b->p = malloc(n)))
    return r_oom(r, n, "a record");
  if (n)
    memcpy(b->p, r->p + r->pos, n);
  if (b)
    b->len = n;
  r->pos += n;
  return 0;
}

static int unpack_body(rbuf *r, ferry__manifest *m) {
  if (!(m->backend = r_str(r)) || !(m->spec = r_str(r)) ||
      !(m->notes = r_str(r)))
    return -1;
  if (!*m->notes) {
    free(m->notes);
    m->notes = NULL;
  }
  uint32_t rv = r_u32(r);
  if (r->bad)
    return -1;
  if (rv > INT_MAX)
    return r_fail(r, "bad record version");
  m->record_version = (int)rv;
  uint32_t nvars = r_u32(r);
  if (r->bad)
    return -1;
  /* Each variable takes at least 17 bytes: never allocate more than the
   * buffer could describe. */
  if (nvars < 1 || nvars > INT_MAX || nvars > (r->len - r->pos) / 17)
    return r_fail(r, "bad variable count");
  if (!(m->vars = calloc(nvars, sizeof *m->vars)))
    return r_oom(r, nvars * sizeof *m->vars, "the variables");
  m->nvars = (int)nvars;
  for (int v = 0; v < m->nvars; v++) {
    ferry__var *x = &m->vars[v];
    if (!(x->name = r_str(r)))
      return -1;
    if (!*x->name)
      return r_fail(r, "empty variable name");
    for (int k = 0; k < v; k++)
      if (strcmp(m->vars[k].name, x->name) == 0)
        return r_fail(r, "variable named twice");
    unsigned dt = r_u8(r), sw = r_u8(r), nd = r_u8(r);
    r_u8(r);
    if (r->bad)
      return -1;
    if (dt >= FERRY_DTYPE_COUNT)
      return r_fail(r, "bad dtype");
    if (sw > 1)
      return r_fail(r, "bad swapped flag");
    if (nd > FERRY_MAX_DIMS - 1)
      return r_fail(r, "too many row dimensions");
    x->dtype = (ferry_dtype)dt;
    x->swapped = (int)sw;
    x->row_ndim = (int)nd;
    uint64_t bytes = ferry_dtype_size(x->dtype);
    for (unsigned k = 0; k < nd; k++) {
      int64_t d = r_nonneg(r, "bad row dimension");
      if (r->bad)
        return -1;
      if (d < 1 || bytes > (uint64_t)INT64_MAX / (uint64_t)d)
        return r_fail(r, "bad row dimension");
      x->row_shape[k] = d;
      bytes *= (uint64_t)d;
    }
    uint64_t rb = r_u64(r);
    if (r->bad)
      return -1;
    if (rb != bytes || rb == 0)
      return r_fail(r, "row size does not match dtype and shape");
    x->row_bytes = (size_t)rb;
    x->chunk_rows = r_nonneg(r, "bad storage chunk");
    uint64_t cb = r_u64(r);
    if (r->bad)
      return -1;
    if (cb > SIZE_MAX)
      return r_fail(r, "bad cache size");
    x->cache_bytes = (size_t)cb;
    if (!(x->storage = r_str(r)))
      return -1;
  }
  int64_t nparts = r_nonneg(r, "bad part count");
  int64_t total = r_nonneg(r, "bad sample count");
  if (r->bad)
    return -1;
  uint64_t per_part = 16 + (uint64_t)m->nvars * 24;
  if ((uint64_t)nparts > (r->len - r->pos) / per_part)
    return r_fail(r, "bad part count");
  if (nparts > 0 && !(m->parts = calloc((size_t)nparts, sizeof *m->parts)))
    return r_oom(r, (size_t)nparts * sizeof *m->parts, "the parts");
  m->nparts = nparts;
  int64_t sum = 0;
  for (int64_t p = 0; p < nparts; p++) {
    ferry__part *pt = &m->parts[p];
    pt->num_samples = r_nonneg(r, "bad part sample count");
    pt->first_sample = r_nonneg(r, "bad first sample");
    if (r->bad)
      return -1;
    if (pt->first_sample != sum || pt->num_samples > INT64_MAX - sum)
      return r_fail(r, "parts do not add up");
    sum += pt->num_samples;
    pt->paths = calloc((size_t)m->nvars, sizeof *pt->paths);
    pt->data_offset = calloc((size_t)m->nvars, sizeof *pt->data_offset);
    pt->file_size = calloc((size_t)m->nvars, sizeof *pt->file_size);
    if (!pt->paths || !pt->data_offset || !pt->file_size ||
        (m->record_version &&
         !(pt->rec = calloc((size_t)m->nvars, sizeof *pt->rec))))
      return r_oom(r,
                   (size_t)m->nvars *
                       (sizeof *pt->paths + sizeof *pt->data_offset +
                        sizeof *pt->file_size +
                        (m->record_version ? sizeof *pt->rec : 0)),
                   "a part's files");
    for (int v = 0; v < m->nvars; v++) {
      if (!(pt->paths[v] = r_str(r)))
        return -1;
      pt->data_offset[v] = r_nonneg(r, "bad data offset");
      pt->file_size[v] = r_nonneg(r, "bad file size");
      if (r_blob(r, pt->rec ? &pt->rec[v] : NULL) < 0)
        return -1;
    }
  }
  if (sum != total)
    return r_fail(r, "parts do not add up to the sample count");
  m->num_samples = total;
  return 0;
}

int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err) {
  rbuf r;
  memset(&r, 0, sizeof r);
  memset(m, 0, sizeof *m);
  r.p = buf;
  r.len = buf ? len : 0;
  if (r.len < PACK_HEAD + 8 || memcmp(r.p, "FRYM", 4) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer of %zu bytes: not a ferry manifest",
                         len);
  if (r.p[4] != PACK_VERSION)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: version %u, this ferry reads %d",
                         r.p[4], PACK_VERSION);
  r.pos = 8;
  uint64_t total = r_u64(&r);
  if (total != len)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: holds %zu bytes but says %llu", len,
                         (unsigned long long)total);
  uint64_t sum = 0;
  for (size_t i = 0; i < 8; i++)
    sum |= (uint64_t)r.p[len - 8 + i] << (8 * i);
  if (sum != ferry__fnv1a(FERRY__FNV_INIT, r.p, len - 8))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: checksum mismatch (corrupted)");
  r.len = len - 8; /* the body ends where the checksum starts */
  int rc = unpack_body(&r, m);
  if (rc == 0 && r.pos != r.len)
    rc = r_fail(&r, "unexpected bytes after the last part");
  if (rc < 0) {
    ferry__manifest_free(m);
    if (r.oom)
      return ferry__oom(err, -1, r.oom_bytes,
                        "%s of the manifest buffer (at byte %zu of %zu)",
                        r.bad ? r.bad : "?", r.bad_pos, len);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer corrupt at byte %zu: %s", r.bad_pos,
                         r.bad ? r.bad : "?");
  }
  m->hash = ferry__manifest_hash(m);
  return 0;
}
