/*
 * tar.c - the tar member scan and WebDataset's sample grouping (tar.h),
 * pure functions over a byte source: the wds backend (wds.c) runs them on a
 * shard's descriptor on rank 0, the fuzz harness on a buffer.
 *
 * The scan reads headers only: each 512-byte header block is read through
 * a small window (4 KiB: a header and the small members after it, such as
 * KEY.cls, come in one pread), the payload skipped by its size rounded up
 * to 512 bytes.  PAX extended headers ('x'; 'g', global, parsed and
 * ignored as Python's tarfile does for regular members) and GNU long names
 * ('L'; 'K', long link names, skipped) are read whole, bounded by
 * FERRY__TAR_EXT_MAX.  Every header's checksum is verified (unsigned or,
 * as old tars wrote it, signed), every size is bounded by the bytes left in
 * the source, and a source that ends before its end-of-archive block is
 * refused as truncated.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/npy.h"
#include "backends/tar.h"
#include "util/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The scan reads headers through a window of WIN bytes, grown up to WIN_MAX
 * while the headers lie close together (small members: one read then
 * brings dozens) and shrunk back when they lie far apart (a read per
 * header of a large member, which is skipped). */
enum { BLOCK = 512, WIN = 4096, WIN_MAX = 65536 };

int ferry__tar_mem_read(void *ctx, int64_t off, void *buf, size_t n,
                        size_t *got) {
  const ferry__tar_mem *m = ctx;
  *got = 0;
  if (off < 0 || (uint64_t)off >= m->n)
    return 0;
  size_t k = m->n - (size_t)off < n ? m->n - (size_t)off : n;
  memcpy(buf, m->p + off, k);
  *got = k;
  return 0;
}

/* ---- Reading through a window ----------------------------------------- */

typedef struct win {
  const ferry__tar_src *s;
  unsigned char b[WIN_MAX];
  int64_t at;
  size_t len;
  size_t want; /* the next read's size, WIN to WIN_MAX */
} win;

/* n <= WIN bytes at off, or NULL with err set (short: truncated). */
static const unsigned char *win_get(win *w, int64_t off, size_t n,
                                    const char *what, ferry__err *err) {
  if (off >= w->at && off - w->at <= (int64_t)w->len &&
      w->len - (size_t)(off - w->at) >= n)
    return w->b + (off - w->at);
  size_t got = 0;
  if (w->want < WIN)
    w->want = WIN;
  int64_t end = w->at + (int64_t)w->len; /* the last window's end */
  if (off >= end && off - end < (int64_t)w->want)
    w->want = w->want * 2 < WIN_MAX ? w->want * 2 : WIN_MAX;
  else if (off >= end && off - end > 4 * (int64_t)w->want)
    w->want = w->want / 2 > WIN ? w->want / 2 : WIN;
  int e = w->s->read(w->s->ctx, off, w->b, w->want, &got);
  w->at = off;
  w->len = e ? 0 : got;
  if (e) {
    ferry__seterr(err, ferry__errno_code(e),
                  "read failed: file %s, offset %lld: %s", w->s->path,
                  (long long)off, strerror(e));
    return NULL;
  }
  if (got < n) {
    ferry__seterr(err, FERRY_EFORMAT,
                  "file %s, offset %lld: %s runs past the end of the file "
                  "(%lld bytes): a truncated tar archive",
                  w->s->path, (long long)off, what, (long long)w->s->size);
    return NULL;
  }
  return w->b;
}

/* n bytes at off into a malloc'd buffer (PAX records, long names). */
static int read_payload(const ferry__tar_src *s, int64_t off, int64_t n,
                        unsigned char **out, ferry__err *err) {
  *out = NULL;
  if (n > FERRY__TAR_EXT_MAX)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: an extended header of %lld "
                         "bytes (ferry reads at most %d)",
                         s->path, (long long)off, (long long)n,
                         FERRY__TAR_EXT_MAX);
  unsigned char *p = malloc((size_t)n + 1);
  if (!p)
    return ferry__oom(err, -1, (size_t)n + 1, "a tar header of file %s",
                      s->path);
  size_t got = 0;
  int e = s->read(s->ctx, off, p, (size_t)n, &got);
  if (e || got != (size_t)n) {
    free(p);
    return e ? ferry__seterr(err, ferry__errno_code(e),
                             "read failed: file %s, offset %lld: %s", s->path,
                             (long long)off, strerror(e))
             : ferry__seterr(err, FERRY_EFORMAT,
                             "file %s, offset %lld: an extended header runs "
                             "past the end of the file: a truncated tar "
                             "archive",
                             s->path, (long long)off);
  }
  p[n] = '\0';
  *out = p;
  return 0;
}

/* ---- Header fields ---------------------------------------------------- */

/* An octal field (leading spaces, digits, then NUL or spaces) or a
 * base-256 one (top bit of the first byte set; negative refused): the
 * value, or -1. */
static int64_t num_field(const unsigned char *f, size_t n) {
  if (f[0] & 0x80) {
    if (f[0] != 0x80)
      return -1; /* negative, or more than 63 bits */
    uint64_t v = 0;
    for (size_t i = 1; i < n; i++) {
      if (v >> 55)
        return -1;
      v = (v << 8) | f[i];
    }
    return v > (uint64_t)INT64_MAX / 2 ? -1 : (int64_t)v;
  }
  size_t i = 0;
  while (i < n && f[i] == ' ')
    i++;
  int64_t v = 0;
  int digits = 0;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v > INT64_MAX / 16)
      return -1;
    v = v * 8 + (f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != '\0')
      return -1;
  return digits ? v : -1;
}

/* The header's checksum: the sum of its bytes with the checksum field as
 * spaces, unsigned (POSIX) or signed (some old tars).  The unsigned sum is
 * one plain loop the compiler vectorises (it was half of the scan's time
 * as a loop that tested the field at every byte); the signed one runs only
 * when the unsigned one does not match. */
static int checksum_ok(const unsigned char *h) {
  int64_t want = num_field(h + 148, 8);
  if (want < 0)
    return 0;
  uint32_t u = 8 * ' ';
  for (int i = 0; i < BLOCK; i++)
    u += h[i];
  for (int i = 148; i < 156; i++)
    u -= h[i];
  if (want == (int64_t)u)
    return 1;
  int32_t s = 8 * ' ';
  for (int i = 0; i < BLOCK; i++)
    s += (signed char)h[i];
  for (int i = 148; i < 156; i++)
    s -= (signed char)h[i];
  return want == (int64_t)s;
}

static int all_zero(const unsigned char *h) {
  for (int i = 0; i < BLOCK; i++)
    if (h[i])
      return 0;
  return 1;
}

/* The NUL-terminated (or full) length of a name field. */
static size_t field_len(const unsigned char *f, size_t n) {
  size_t k = 0;
  while (k < n && f[k])
    k++;
  return k;
}

/* PAX records "LEN KEY=VALUE\n" of p[0..n): path and size into *path (a
 * pointer into p) and *size (-1: none).  0, or -1 when malformed. */
static int pax_parse(unsigned char *p, size_t n, const char **path,
                     size_t *path_len, int64_t *size) {
  size_t i = 0;
  while (i < n) {
    size_t len = 0, j = i;
    while (j < n && p[j] >= '0' && p[j] <= '9' && len < ((size_t)1 << 40))
      len = len * 10 + (size_t)(p[j++] - '0');
    if (j == i || j >= n || p[j] != ' ' || len < 5 || len > n - i ||
        j + 1 > i + len - 1 || p[i + len - 1] != '\n')
      return -1;
    const unsigned char *kv = p + j + 1, *stop = p + i + len - 1;
    const unsigned char *eq = memchr(kv, '=', (size_t)(stop - kv));
    if (!eq)
      return -1;
    size_t klen = (size_t)(eq - kv), vlen = (size_t)(stop - eq - 1);
    if (klen == 4 && memcmp(kv, "path", 4) == 0) {
      *path = (const char *)eq + 1;
      *path_len = vlen;
    } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
      int64_t v = 0;
      if (vlen == 0 || vlen > 18)
        return -1;
      for (size_t k = 0; k < vlen; k++) {
        if (eq[1 + k] < '0' || eq[1 + k] > '9')
          return -1;
        v = v * 10 + (eq[1 + k] - '0');
      }
      *size = v;
    }
    i += len;
  }
  return 0;
}

/* ---- The scan --------------------------------------------------------- */

typedef struct pending {
  unsigned char *long_name, *pax; /* payloads of 'L' and 'x' */
  const char *name;               /* the next member's name, from them */
  size_t name_len, long_len;
  int name_pax;  /* name is the PAX path */
  int64_t size;  /* PAX size, -1: none */
  int64_t first; /* offset of the first header of the member, -1: none */
} pending;

static void pending_clear(pending *p) {
  free(p->long_name);
  free(p->pax);
  memset(p, 0, sizeof *p);
  p->size = -1;
  p->first = -1;
}

/* An extension header ('L', 'x', 'g') of size bytes at data, into pend. */
static int take_extension(const ferry__tar_src *s, int type, int64_t at,
                          int64_t data, int64_t size, pending *pend,
                          ferry__err *err) {
  unsigned char *p = NULL;
  int rc = read_payload(s, data, size, &p, err);
  if (rc)
    return rc;
  if (type == 'L') {
    free(pend->long_name);
    pend->long_name = p;
    pend->long_len = field_len(p, (size_t)size);
    if (!pend->name_pax) { /* a PAX path wins over a long name */
      pend->name = (const char *)p;
      pend->name_len = pend->long_len;
    }
    return 0;
  }
  const char *path = NULL;
  size_t path_len = 0;
  int64_t psize = -1;
  if (pax_parse(p, (size_t)size, &path, &path_len, &psize) < 0) {
    free(p);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a malformed PAX %s header "
                         "(records are \"LENGTH KEY=VALUE\\n\")",
                         s->path, (long long)at,
                         type == 'g' ? "global" : "extended");
  }
  if (type == 'g') { /* as tarfile: global records do not name members */
    free(p);
    return 0;
  }
  if (pend->name_pax) { /* a second PAX header: the first one's path goes */
    pend->name = (const char *)pend->long_name;
    pend->name_len = pend->long_len;
    pend->name_pax = 0;
  }
  free(pend->pax);
  pend->pax = p;
  if (path) {
    pend->name = path;
    pend->name_len = path_len;
    pend->name_pax = 1;
  }
  pend->size = psize;
  return 0;
}

/* The name of a ustar/GNU header: prefix "/" name for POSIX ustar. */
static void header_name(const unsigned char *h, char *buf, size_t *len) {
  size_t n = field_len(h, 100), k = 0;
  if (memcmp(h + 257, "ustar\0", 6) == 0) {
    size_t pl = field_len(h + 345, 155);
    if (pl) {
      memcpy(buf, h + 345, pl);
      buf[pl] = '/';
      k = pl + 1;
    }
  }
  memcpy(buf + k, h, n);
  *len = k + n;
}

/* One header at *at: its member handed to fn (or kept as an extension, or
 * skipped); *at moves past its payload; *done at the end block. */
static int scan_one(const ferry__tar_src *s, win *w, int64_t *at, pending *pend,
                    ferry__tar_member_fn fn, void *ctx, int64_t *skipped,
                    int *done, ferry__err *err) {
  const unsigned char *h = win_get(w, *at, BLOCK, "a header block", err);
  if (!h)
    return err ? err->code : FERRY_EFORMAT;
  if (all_zero(h)) {
    *done = 1;
    return 0;
  }
  if (!checksum_ok(h))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a tar header whose checksum "
                         "is wrong (a corrupt or not a tar archive)",
                         s->path, (long long)*at);
  int type = h[156];
  int64_t size = num_field(h + 124, 12), data = *at + BLOCK;
  if (pend->size >= 0 && type != 'x' && type != 'X' && type != 'L' &&
      type != 'g' && type != 'K')
    size = pend->size;
  if (size < 0 || size > s->size - data)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a member of %lld bytes runs "
                         "past the end of the file (%lld bytes): a truncated "
                         "or corrupt tar archive",
                         s->path, (long long)*at, (long long)size,
                         (long long)s->size);
  int64_t next = data + ((size + BLOCK - 1) / BLOCK) * BLOCK;
  if (pend->first < 0 && type != 'g')
    pend->first = *at;
  int rc = 0;
  if (type == 'L' || type == 'x' || type == 'X' || type == 'g') {
    rc =
        take_extension(s, type == 'X' ? 'x' : type, *at, data, size, pend, err);
    if (type == 'g' && pend->first == *at)
      pend->first = -1;
  } else if (type == 'K') {
    /* a long link name: only links have one, and links are skipped */
  } else if (type == '0' || type == '\0' || type == '7') {
    char name[FERRY__TAR_NAME_MAX + 256];
    ferry__tar_member mb = {.header = pend->first, .data = data, .size = size};
    if (pend->name) {
      if (pend->name_len > FERRY__TAR_NAME_MAX)
        rc = ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, offset %lld: a member name of %zu bytes "
                           "(ferry reads at most %d)",
                           s->path, (long long)*at, pend->name_len,
                           FERRY__TAR_NAME_MAX);
      mb.name = pend->name;
      mb.name_len = pend->name_len;
    } else {
      header_name(h, name, &mb.name_len);
      mb.name = name;
    }
    if (data >= w->at && data - w->at <= (int64_t)w->len) {
      size_t in = w->len - (size_t)(data - w->at);
      mb.head = w->b + (data - w->at);
      mb.head_len = (int64_t)in < size ? in : (size_t)size;
    }
    if (!rc)
      rc = fn(ctx, &mb, err);
    pending_clear(pend);
  } else {
    (*skipped)++; /* directories, links, devices, FIFOs, sparse files */
    pending_clear(pend);
  }
  *at = next;
  return rc;
}

int ferry__tar_scan(const ferry__tar_src *s, ferry__tar_member_fn fn, void *ctx,
                    int64_t *skipped, int64_t *end, ferry__err *err) {
  win *w = malloc(sizeof *w);
  if (!w)
    return ferry__oom(err, -1, sizeof *w, "the tar scan of %s", s->path);
  w->s = s;
  w->at = -1;
  w->len = 0;
  w->want = WIN;
  pending pend = {0};
  pending_clear(&pend);
  int64_t at = 0;
  int rc = 0, done = 0;
  *skipped = 0;
  while (!rc && !done) {
    if (at >= s->size) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: no end-of-archive block after its last "
                         "member (offset %lld): a truncated tar archive",
                         s->path, (long long)at);
      break;
    }
    rc = scan_one(s, w, &at, &pend, fn, ctx, skipped, &done, err);
  }
  if (!rc && pend.first >= 0)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "file %s, offset %lld: an extended header with no "
                       "member after it",
                       s->path, (long long)pend.first);
  *end = at;
  pending_clear(&pend);
  free(w);
  return rc;
}

/* ---- WebDataset samples ----------------------------------------------- */

static int is_int_ext(const char *e) {
  return !strcmp(e, "cls") || !strcmp(e, "cls2") || !strcmp(e, "index") ||
         !strcmp(e, "id");
}

/* npy, or an extension ending in .npy (KEY.seg.npy: WebDataset decodes a
 * member by the last part of its extension). */
static int is_npy_ext(const char *e) {
  size_t n = strlen(e);
  return !strcmp(e, "npy") || (n > 4 && !strcmp(e + n - 4, ".npy"));
}

static int selected(const char *select, const char *ext, size_t n) {
  if (!select || !*select)
    return 1;
  for (const char *p = select; *p;) {
    const char *c = strchr(p, ',');
    size_t k = c ? (size_t)(c - p) : strlen(p);
    const char *q = p;
    if (k && *q == '/') { /* a leading '/' of a vars name is ignored */
      q++;
      k--;
    }
    if (k == n && strncmp(q, ext, n) == 0)
      return 1;
    if (!c)
      break;
    p = c + 1;
  }
  return 0;
}

static uint64_t key_hash(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
  return h;
}

/* Room for sample n (every variable's arrays, starts, keys' offsets). */
static int grow_samples(ferry__tar_index *x, ferry__err *err) {
  if (x->n < x->cap)
    return 0;
  int64_t cap = x->cap ? 2 * x->cap : 256;
  int64_t *st = realloc(x->start, (size_t)cap * sizeof *st);
  if (st)
    x->start = st;
  int64_t *ka = st ? realloc(x->keyat, (size_t)cap * sizeof *ka) : NULL;
  if (ka)
    x->keyat = ka;
  int ok = st && ka;
  for (int v = 0; ok && v < x->nvars; v++) {
    int64_t *p = realloc(x->vars[v].pos, (size_t)cap * sizeof *p);
    if (p)
      x->vars[v].pos = p;
    int64_t *l = p ? realloc(x->vars[v].len, (size_t)cap * sizeof *l) : NULL;
    if (l)
      x->vars[v].len = l;
    ok = p && l;
  }
  if (!ok)
    return ferry__oom(err, -1, (size_t)cap * 16 * (size_t)(x->nvars + 1),
                      "the samples of tar archive %s", x->src->path);
  x->cap = cap;
  return 0;
}

/* The hash set of keys, grown to twice the samples. */
static int rehash(ferry__tar_index *x, ferry__err *err) {
  if (x->nslots > 2 * (x->n + 1))
    return 0;
  int64_t ns = x->nslots ? 4 * x->nslots : 1024;
  int64_t *sl = calloc((size_t)ns, sizeof *sl);
  if (!sl)
    return ferry__oom(err, -1, (size_t)ns * sizeof *sl,
                      "the keys of tar archive %s", x->src->path);
  for (int64_t i = 0; i < x->n; i++) {
    const char *k = x->keys + x->keyat[i];
    uint64_t h = key_hash(k, strlen(k)) % (uint64_t)ns;
    while (sl[h])
      h = (h + 1) % (uint64_t)ns;
    sl[h] = i + 1;
  }
  free(x->slots);
  x->slots = sl;
  x->nslots = ns;
  return 0;
}

/* Sample index + 1 of key, or 0. */
static int64_t key_find(const ferry__tar_index *x, const char *k, size_t n,
                        uint64_t *slot) {
  uint64_t h = key_hash(k, n) % (uint64_t)x->nslots;
  for (; x->slots[h]; h = (h + 1) % (uint64_t)x->nslots) {
    const char *o = x->keys + x->keyat[x->slots[h] - 1];
    if (strlen(o) == n && memcmp(o, k, n) == 0)
      break;
  }
  *slot = h;
  return x->slots[h];
}

/* A new sample of key k (n bytes) whose first header is at header. */
static int new_sample(ferry__tar_index *x, const char *k, size_t n,
                      int64_t header, ferry__err *err) {
  int rc = grow_samples(x, err);
  if (!rc)
    rc = rehash(x, err);
  if (rc)
    return rc;
  uint64_t slot;
  int64_t seen = key_find(x, k, n, &slot);
  if (seen)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: member %.*s... starts a "
                         "sample of key '%.*s', but sample %lld (offset %lld) "
                         "has that key: a key's members must be adjacent "
                         "(WebDataset groups consecutive members)",
                         x->src->path, (long long)header, (int)n, k, (int)n, k,
                         (long long)(seen - 1), (long long)x->start[seen - 1]);
  if (x->keys_len + n + 1 > x->keys_cap) {
    size_t cap = (x->keys_len + n + 1) * 2;
    char *p = realloc(x->keys, cap);
    if (!p)
      return ferry__oom(err, -1, cap, "the keys of tar archive %s",
                        x->src->path);
    x->keys = p;
    x->keys_cap = cap;
  }
  memcpy(x->keys + x->keys_len, k, n);
  x->keys[x->keys_len + n] = '\0';
  x->keyat[x->n] = (int64_t)x->keys_len;
  x->keys_len += n + 1;
  x->start[x->n] = header;
  for (int v = 0; v < x->nvars; v++)
    x->vars[v].len[x->n] = -1;
  x->slots[slot] = x->n + 1;
  x->n++;
  return 0;
}

/* The variable of extension ext, made on first sight. */
static int var_of(ferry__tar_index *x, const char *ext, ferry__err *err) {
  for (int v = 0; v < x->nvars; v++)
    if (strcmp(x->vars[v].ext, ext) == 0)
      return v;
  if (x->nvars >= 1024)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: more than 1024 extensions (select some "
                         "with vars=)",
                         x->src->path);
  ferry__tar_var *nv = realloc(x->vars, (size_t)(x->nvars + 1) * sizeof *nv);
  if (!nv)
    return ferry__oom(err, -1, (size_t)(x->nvars + 1) * sizeof *nv,
                      "the extensions of tar archive %s", x->src->path);
  x->vars = nv;
  ferry__tar_var *t = &nv[x->nvars];
  memset(t, 0, sizeof *t);
  t->ext = strdup(ext);
  t->pos = malloc((size_t)x->cap * sizeof *t->pos);
  t->len = malloc((size_t)x->cap * sizeof *t->len);
  x->nvars++; /* freed with the index whatever happens next */
  if (!t->ext || !t->pos || !t->len)
    return ferry__oom(err, -1, (size_t)x->cap * 16,
                      "the extension %s of tar archive %s", ext, x->src->path);
  t->kind = is_int_ext(ext)   ? FERRY__TAR_INT
            : is_npy_ext(ext) ? FERRY__TAR_NPY
                              : FERRY__TAR_BYTES;
  t->npy_first = -1;
  for (int64_t i = 0; i < x->n; i++)
    t->len[i] = -1;
  return x->nvars - 1;
}

/* An ASCII integer member's value (surrounding white space allowed). */
static int int_value(ferry__tar_index *x, const ferry__tar_member *mb,
                     const char *name, int64_t *out, ferry__err *err) {
  unsigned char b[64];
  size_t got = 0;
  int e = 0;
  if (mb->size > (int64_t)sizeof b ||
      (e = x->src->read(x->src->ctx, mb->data, b, (size_t)mb->size, &got)) ||
      got != (size_t)mb->size)
    return e ? ferry__seterr(err, ferry__errno_code(e),
                             "read failed: file %s, offset %lld: %s",
                             x->src->path, (long long)mb->data, strerror(e))
             : ferry__seterr(err, FERRY_EFORMAT,
                             "file %s, offset %lld: member %s holds %lld "
                             "bytes, not an integer",
                             x->src->path, (long long)mb->header, name,
                             (long long)mb->size);
  size_t i = 0, n = got;
  while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r'))
    i++;
  while (n > i && (b[n - 1] == ' ' || b[n - 1] == '\n' || b[n - 1] == '\t' ||
                   b[n - 1] == '\r'))
    n--;
  int neg = i < n && (b[i] == '-' || b[i] == '+') ? b[i++] == '-' : 0;
  uint64_t v = 0;
  size_t d0 = i;
  for (; i < n && b[i] >= '0' && b[i] <= '9'; i++) {
    if (v > ((uint64_t)INT64_MAX - 9) / 10)
      break;
    v = v * 10 + (uint64_t)(b[i] - '0');
  }
  if (i != n || i == d0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: member %s is not an ASCII "
                         "integer ('%.*s')",
                         x->src->path, (long long)mb->header, name, (int)got,
                         (const char *)b);
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

/* "(3, 4)", "(7,)" or "()", as NumPy prints a shape. */
static void shape_str(char *b, size_t cap, const int64_t *shape, int ndim) {
  size_t k = (size_t)snprintf(b, cap, "(");
  for (int d = 0; d < ndim && k < cap; d++)
    k += (size_t)snprintf(b + k, cap - k, "%s%lld", d ? ", " : "",
                          (long long)shape[d]);
  if (k < cap)
    snprintf(b + k, cap - k, "%s)", ndim == 1 ? "," : "");
}

/* The .npy header of a member of at most this many bytes after the
 * preamble is read (npy.c's limit, which the parser enforces); a header
 * the scan's window does not hold is read with one bounded read (two when
 * the window ends inside the 12-byte preamble). */
enum { NPY_HEAD_MAX = 12 + (1 << 20), NPY_PRE = 256 };

/* n <= NPY_HEAD_MAX bytes of mb's payload from its start into buf. */
static int npy_read(ferry__tar_index *x, const ferry__tar_member *mb,
                    unsigned char *buf, size_t n, size_t *got,
                    ferry__err *err) {
  int e = x->src->read(x->src->ctx, mb->data, buf, n, got);
  if (e)
    return ferry__seterr(err, ferry__errno_code(e),
                         "read failed: file %s, offset %lld: %s", x->src->path,
                         (long long)mb->data, strerror(e));
  return 0;
}

/* Member mb (name) of sample s holds a .npy file: its header parsed,
 * bounded by the member; t->pos[s] and t->len[s] become its values'
 * offset and bytes; the array checked against the variable's first. */
static int npy_member(ferry__tar_index *x, ferry__tar_var *t, int64_t s,
                      const ferry__tar_member *mb, const char *name,
                      ferry__err *err) {
  char label[FERRY__MSG_MAX / 2];
  snprintf(label, sizeof label, "file %s, member %s, offset %lld", x->src->path,
           name, (long long)mb->header);
  unsigned char pre[NPY_PRE], *big = NULL;
  const unsigned char *p = mb->head;
  size_t have = mb->head_len, got = 0;
  size_t whole = mb->size < NPY_HEAD_MAX ? (size_t)mb->size : NPY_HEAD_MAX;
  int rc = 0;
  if (have < (whole < 12 ? whole : 12)) { /* the window ends in the preamble */
    size_t n = whole < NPY_PRE ? whole : NPY_PRE;
    if ((rc = npy_read(x, mb, pre, n, &got, err)) < 0)
      return rc;
    p = pre;
    have = got;
  }
  size_t need = have; /* the header's bytes, as its preamble says */
  if (have >= 10 && memcmp(p, "\x93NUMPY", 6) == 0) {
    if (p[6] == 1)
      need = 10 + ((size_t)p[8] | (size_t)p[9] << 8);
    else if (have >= 12 && (p[6] == 2 || p[6] == 3))
      need = 12 + (size_t)ferry__le32_load(p + 8);
    if (need > NPY_HEAD_MAX)
      need = 12; /* the parser names the bad length */
    if (need > whole)
      need = whole; /* the parser says the header runs past the member */
  }
  if (need > have) {
    if (!(big = malloc(need)))
      return ferry__oom(err, -1, need, "the .npy header of %s", label);
    if ((rc = npy_read(x, mb, big, need, &got, err)) < 0)
      goto done;
    p = big;
    have = got;
  }
  ferry__npy_header h;
  if ((rc = ferry__npy_parse_array_header(p, have, &h, label, err)) < 0)
    goto done;
  /* one row (the dimensions after the first; a 0-d array: its element),
   * then the rows: bounded, the parser's product check skips a 0 */
  int64_t row = (int64_t)ferry_dtype_size(h.dtype), rows = h.ndim ? 0 : 1;
  char sh[160], sh0[160];
  shape_str(sh, sizeof sh, h.shape, h.ndim);
  for (int d = 1; d < h.ndim && row > 0; d++)
    row = h.shape[d] > INT64_MAX / row ? -1 : row * h.shape[d];
  if (h.ndim)
    rows = h.shape[0];
  if (row <= 0 || (row && rows > INT64_MAX / row)) {
    rc = ferry__seterr(err, row < 0 ? FERRY_EFORMAT : FERRY_ENOTSUP,
                       "%s: an array of shape %s: %s", label, sh,
                       row < 0 ? "its size overflows 64 bits"
                               : "its rows (the dimensions after the first) "
                                 "hold no value; ferry serves no empty rows");
    goto done;
  }
  if (rows * row > mb->size - h.data_offset) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: an array of shape %s (%s) needs %lld bytes of "
                       "values after its %lld-byte header, the member holds "
                       "%lld: a truncated .npy file",
                       label, sh, ferry_dtype_name(h.dtype),
                       (long long)(rows * row), (long long)h.data_offset,
                       (long long)(mb->size - h.data_offset));
    goto done;
  }
  if (t->npy_first < 0) {
    t->npy_first = s;
    t->npy_dtype = h.dtype;
    t->npy_swapped = h.swapped;
    t->npy_ndim = h.ndim;
    memcpy(t->npy_shape, h.shape, sizeof h.shape);
    t->npy_row_bytes = row;
  } else {
    const char *k0 = x->keys + x->keyat[t->npy_first];
    int same = h.ndim == t->npy_ndim;
    for (int d = 1; same && d < h.ndim; d++)
      same = h.shape[d] == t->npy_shape[d];
    shape_str(sh0, sizeof sh0, t->npy_shape, t->npy_ndim);
    if (h.dtype != t->npy_dtype || h.swapped != t->npy_swapped)
      rc = ferry__seterr(
          err, FERRY_EFORMAT,
          "%s: an array of %s (%s-endian) where sample '%s' of the shard "
          "holds %s (%s-endian): the %s members of a dataset hold one dtype",
          label, ferry_dtype_name(h.dtype), h.swapped ? "non-native" : "native",
          k0, ferry_dtype_name(t->npy_dtype),
          t->npy_swapped ? "non-native" : "native", t->ext);
    else if (!same)
      rc = ferry__seterr(
          err, FERRY_ESHAPE,
          "%s: an array of shape %s where sample '%s' of the shard holds "
          "one of shape %s: the %s members of a dataset may differ in "
          "their first dimension only (then a ragged variable)",
          label, sh, k0, sh0, t->ext);
  }
  if (!rc) {
    t->pos[s] = mb->data + h.data_offset;
    t->len[s] = rows * row;
  }
done:
  free(big);
  return rc;
}

/* One member: its key and extension; a new sample or the current one. */
static int on_member(void *ctx, const ferry__tar_member *mb, ferry__err *err) {
  ferry__tar_index *x = ctx;
  char name[FERRY__TAR_NAME_MAX + 1];
  size_t n = mb->name_len;
  memcpy(name, mb->name, n);
  name[n] = '\0';
  if (memchr(name, '\0', n))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a member name holding a NUL",
                         x->src->path, (long long)mb->header);
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  size_t bl = strlen(base);
  if (!slash && bl >= 4 && strncmp(base, "__", 2) == 0 &&
      strcmp(base + bl - 2, "__") == 0) {
    x->skipped++;
    return 0;
  }
  const char *dot = strchr(base, '.');
  if (!dot || dot == base || !dot[1])
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: member '%s' is not named "
                         "KEY.EXTENSION (%s)",
                         x->src->path, (long long)mb->header, name,
                         !dot          ? "its base name has no dot"
                         : dot == base ? "its base name starts with a dot"
                                       : "it ends with a dot");
  size_t klen = (size_t)(dot - name);
  char *ext = (char *)dot + 1;
  for (char *c = ext; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  int same = x->n > 0 && strlen(x->keys + x->keyat[x->n - 1]) == klen &&
             memcmp(x->keys + x->keyat[x->n - 1], name, klen) == 0;
  int rc = same ? 0 : new_sample(x, name, klen, mb->header, err);
  if (rc)
    return rc;
  if (!selected(x->select, ext, strlen(ext))) {
    x->ignored++;
    return 0;
  }
  int v = var_of(x, ext, err);
  if (v < 0)
    return v;
  ferry__tar_var *t = &x->vars[v];
  int64_t s = x->n - 1;
  if (t->len[s] >= 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: member '%s' is the second "
                         "member of extension %s of sample '%.*s'",
                         x->src->path, (long long)mb->header, name, ext,
                         (int)klen, name);
  t->len[s] = mb->size;
  t->pos[s] = mb->data;
  x->members++;
  if (t->kind == FERRY__TAR_INT) {
    t->len[s] = 8;
    return int_value(x, mb, name, &t->pos[s], err);
  }
  if (t->kind == FERRY__TAR_NPY)
    return npy_member(x, t, s, mb, name, err);
  return 0;
}

/* The VALUE of EXT=VALUE in list (comma-separated) for ext: 1 with *val
 * and *vlen set, or 0. */
static int missing_value(const char *list, const char *ext, const char **val,
                         size_t *vlen) {
  size_t n = strlen(ext);
  for (const char *p = list; p && *p;) {
    const char *c = strchr(p, ','), *eq = strchr(p, '=');
    const char *stop = c ? c : p + strlen(p);
    if (eq && eq < stop && (size_t)(eq - p) == n && strncmp(p, ext, n) == 0) {
      *val = eq + 1;
      *vlen = (size_t)(stop - eq - 1);
      return 1;
    }
    p = c ? c + 1 : NULL;
  }
  return 0;
}

/* The default of variable t for the samples without a member (missing=):
 * 1 when there is one, in *value; 0 when there is none; FERRY_EINVAL. */
static int default_of(const ferry__tar_index *x, const ferry__tar_var *t,
                      const char *missing, int64_t *value, ferry__err *err) {
  const char *val = NULL;
  size_t vlen = 0;
  if (!missing_value(missing, t->ext, &val, &vlen))
    return 0;
  *value = 0;
  if ((t->kind == FERRY__TAR_BYTES ||
       (t->kind == FERRY__TAR_NPY && t->npy_ndim > 0)) &&
      vlen == 0)
    return 1;
  char b[32];
  int ok = t->kind == FERRY__TAR_INT && vlen > 0 && vlen < sizeof b;
  if (ok) {
    memcpy(b, val, vlen);
    b[vlen] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(b, &end, 10);
    ok = errno == 0 && end && *end == '\0';
    *value = (int64_t)v;
  }
  if (ok)
    return 1;
  return ferry__seterr(
      err, FERRY_EINVAL, "option missing: %s=%.*s for file %s: %s", t->ext,
      (int)vlen, val, x->src->path,
      t->kind == FERRY__TAR_INT ? "an integer extension's default is an integer"
      : t->kind == FERRY__TAR_NPY && t->npy_ndim == 0
          ? "its arrays are 0-d (one value a sample): no "
            "default fills them"
          : "a bytes or npy extension's default is nothing "
            "(EXT=: an empty sample, no rows)");
}

/* Every sample has a member of every variable, or the variable's default
 * (missing=): an integer, or an empty payload placed where the sample's
 * members would be, so the payloads stay in order. */
static int check_complete(const ferry__tar_index *x, const char *missing,
                          ferry__err *err) {
  for (int v = 0; v < x->nvars; v++) {
    ferry__tar_var *t = &x->vars[v];
    int64_t value = 0, end = 0;
    int has = default_of(x, t, missing, &value, err);
    if (has < 0)
      return has;
    for (int64_t i = 0; has && i < x->n; i++) {
      if (t->len[i] < 0) {
        t->len[i] = t->kind == FERRY__TAR_INT ? 8 : 0;
        t->pos[i] = t->kind == FERRY__TAR_INT ? value : end;
      }
      if (t->kind != FERRY__TAR_INT)
        end = t->pos[i] + t->len[i];
    }
  }
  for (int v = 0; v < x->nvars; v++)
    for (int64_t i = 0; i < x->n; i++)
      if (x->vars[v].len[i] < 0)
        return ferry__seterr(
            err, FERRY_EFORMAT,
            "file %s, offset %lld: sample '%s' has no member %s.%s, which "
            "other samples have (select the extensions every sample has "
            "with vars=, or give a default with missing=)",
            x->src->path, (long long)x->start[i], x->keys + x->keyat[i],
            x->keys + x->keyat[i], x->vars[v].ext);
  return 0;
}

void ferry__tar_index_free(ferry__tar_index *x) {
  if (!x)
    return;
  for (int v = 0; v < x->nvars; v++) {
    free(x->vars[v].ext);
    free(x->vars[v].pos);
    free(x->vars[v].len);
  }
  free(x->vars);
  free(x->start);
  free(x->keys);
  free(x->keyat);
  free(x->slots);
  memset(x, 0, sizeof *x);
}

int ferry__tar_index_build(const ferry__tar_src *s, const char *select,
                           const char *missing, ferry__tar_index *x,
                           ferry__err *err) {
  memset(x, 0, sizeof *x);
  x->src = s;
  x->select = select;
  int64_t skipped = 0;
  int rc = ferry__tar_scan(s, on_member, x, &skipped, &x->end, err);
  x->skipped += skipped;
  if (!rc)
    rc = check_complete(x, missing, err);
  if (!rc && x->nvars == 0)
    rc = ferry__seterr(
        err, FERRY_EFORMAT,
        "file %s: no member%s (%lld samples, %lld members "
        "skipped, %lld of other extensions)",
        s->path, select && *select ? " of the selected extensions" : "",
        (long long)x->n, (long long)x->skipped, (long long)x->ignored);
  x->select = NULL;
  x->src = NULL;
  if (rc)
    ferry__tar_index_free(x);
  return rc;
}

int ferry__tar_sidecar_check(const unsigned char *p, size_t n,
                             const ferry__tar_index *x, char *why,
                             size_t why_len) {
  if (n % 8 != 0 || n / 8 != (size_t)x->n + 1) {
    snprintf(why, why_len, "%zu bytes, not %lld entries of 8 bytes", n,
             (long long)x->n + 1);
    return 1;
  }
  for (int64_t i = 0; i <= x->n; i++) {
    int64_t want = i < x->n ? x->start[i] : x->end;
    uint64_t got = ferry__le64_load(p + 8 * i);
    if (got != (uint64_t)want) {
      snprintf(why, why_len, "entry %lld is %llu where the shard's %s at %lld",
               (long long)i, (unsigned long long)got,
               i < x->n ? "sample starts" : "members end", (long long)want);
      return 1;
    }
  }
  return 0;
}
