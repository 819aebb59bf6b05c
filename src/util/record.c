/*
 * record.c - the one writer and reader of flat binary records (record.h).
 *
 * Why one: the manifest, the mix record and the parquet record each had a
 * growable writer and a bounds-checked reader of their own, three copies of
 * the same growth loop, integer encoding and length checks with small
 * differences (one hashed without keeping bytes, one wrote the host's byte
 * order, one bounded strings and another did not).  A fix to one (a bound,
 * an overflow) now reaches all.  The bytes each user writes are unchanged:
 * tests/unit/test_record pins them.
 */
#include "config.h"
#include "util/record.h"

#include <stdlib.h>
#include <string.h>

/* ---- Writer ---- */

void ferry__rec_w_init(ferry__rec_w *w) { memset(w, 0, sizeof *w); }

void ferry__rec_w_init_hash(ferry__rec_w *w, uint64_t h0) {
  memset(w, 0, sizeof *w);
  w->hash_only = 1;
  w->h = h0;
}

static void w_fail(ferry__rec_w *w, size_t want) {
  if (w->rc)
    return;
  w->rc = FERRY_ENOMEM;
  w->want = want;
}

/* Room for n more bytes: the capacity doubles from 256, so a record of
 * many small puts costs a few reallocs. */
static int w_grow(ferry__rec_w *w, size_t n) {
  if (n <= w->cap - w->len)
    return 0;
  size_t ncap = w->cap ? w->cap : 256;
  while (n > ncap - w->len) {
    if (ncap > SIZE_MAX / 2) {
      w_fail(w, SIZE_MAX);
      return -1;
    }
    ncap *= 2;
  }
  unsigned char *np =
      w->realloc_fn ? w->realloc_fn(w->p, ncap) : realloc(w->p, ncap);
  if (!np) {
    w_fail(w, ncap);
    return -1;
  }
  w->p = np;
  w->cap = ncap;
  return 0;
}

void ferry__rec_put(ferry__rec_w *w, const void *src, size_t n) {
  if (w->rc || n == 0)
    return;
  if (w->hash_only) {
    w->h = ferry__fnv1a(w->h, src, n);
    w->len += n;
    return;
  }
  if (w_grow(w, n) < 0)
    return;
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

/* v as n bytes in the writer's order. */
static void put_uint(ferry__rec_w *w, uint64_t v, int n) {
  unsigned char b[8];
  for (int i = 0; i < n; i++)
    b[w->big_endian ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
  ferry__rec_put(w, b, (size_t)n);
}

void ferry__rec_put_u8(ferry__rec_w *w, unsigned v) {
  unsigned char b = (unsigned char)v;
  ferry__rec_put(w, &b, 1);
}

void ferry__rec_put_u32(ferry__rec_w *w, uint32_t v) { put_uint(w, v, 4); }
void ferry__rec_put_u64(ferry__rec_w *w, uint64_t v) { put_uint(w, v, 8); }

static int host_little(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

void ferry__rec_put_u64s(ferry__rec_w *w, const int64_t *v, size_t n) {
  unsigned char buf[8 * 512];
  if (w->rc || n == 0)
    return;
  if (!w->hash_only && !w->big_endian && host_little()) {
    if (n > SIZE_MAX / 8)
      w_fail(w, SIZE_MAX);
    else
      ferry__rec_put(w, v, n * 8);
    return;
  }
  if (!w->hash_only) { /* another order: value by value */
    for (size_t i = 0; i < n; i++)
      put_uint(w, (uint64_t)v[i], 8);
    return;
  }
  for (size_t i = 0; i < n;) {
    size_t k = n - i < 512 ? n - i : 512;
    if (host_little())
      memcpy(buf, v + i, k * 8);
    else
      for (size_t j = 0; j < k; j++)
        for (int b = 0; b < 8; b++)
          buf[8 * j + (size_t)b] =
              (unsigned char)((uint64_t)v[i + j] >> (8 * b));
    w->h = ferry__hash_words(w->h, buf, k * 8);
    w->len += k * 8;
    i += k;
  }
}
void ferry__rec_put_i32(ferry__rec_w *w, int32_t v) {
  put_uint(w, (uint32_t)v, 4);
}
void ferry__rec_put_i64(ferry__rec_w *w, int64_t v) {
  put_uint(w, (uint64_t)v, 8);
}

void ferry__rec_put_blob(ferry__rec_w *w, const void *p, size_t n) {
  if (n > UINT32_MAX) { /* the length field cannot say it */
    w_fail(w, n);
    return;
  }
  ferry__rec_put_u32(w, (uint32_t)n);
  ferry__rec_put(w, p, n);
}

void ferry__rec_put_str(ferry__rec_w *w, const char *s) {
  ferry__rec_put_blob(w, s, s ? strlen(s) : 0);
}

int ferry__rec_finish(ferry__rec_w *w, void **buf, size_t *len) {
  int rc = w->rc;
  *buf = rc ? NULL : w->p;
  *len = rc ? w->want : w->len;
  if (rc)
    free(w->p);
  memset(w, 0, sizeof *w);
  return rc;
}

void ferry__rec_w_free(ferry__rec_w *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}

/* ---- Reader ---- */

void ferry__rec_r_init(ferry__rec_r *r, const void *p, size_t len) {
  memset(r, 0, sizeof *r);
  r->p = p;
  r->len = p ? len : 0;
}

size_t ferry__rec_left(const ferry__rec_r *r) {
  return r->rc ? 0 : r->len - r->pos;
}

int ferry__rec_fail(ferry__rec_r *r, const char *why) {
  if (!r->rc) {
    r->rc = FERRY_EFORMAT;
    r->why = why;
    r->at = r->pos;
  }
  return r->rc;
}

int ferry__rec_oom(ferry__rec_r *r, size_t bytes, const char *why) {
  if (!r->rc) {
    r->rc = FERRY_ENOMEM;
    r->why = why;
    r->at = r->pos;
    r->want = bytes;
  }
  return r->rc;
}

int ferry__rec_end(ferry__rec_r *r, const char *why) {
  if (!r->rc && r->pos != r->len)
    ferry__rec_fail(r, why);
  return r->rc;
}

const void *ferry__rec_take(ferry__rec_r *r, size_t n) {
  static const unsigned char none[1];
  if (r->rc)
    return NULL;
  if (n == 0) /* no offset on a NULL buffer (UBSan) */
    return r->p ? r->p + r->pos : none;
  if (n > r->len - r->pos) {
    ferry__rec_fail(r, "buffer ends early");
    return NULL;
  }
  const void *at = r->p + r->pos;
  r->pos += n;
  return at;
}

int ferry__rec_get(ferry__rec_r *r, void *dst, size_t n) {
  const void *src = ferry__rec_take(r, n);
  if (src)
    memcpy(dst, src, n);
  else if (n)
    memset(dst, 0, n);
  return r->rc;
}

/* n bytes in the reader's order; 0 on failure. */
static uint64_t get_uint(ferry__rec_r *r, int n) {
  const unsigned char *b = ferry__rec_take(r, (size_t)n);
  uint64_t v = 0;
  for (int i = 0; b && i < n; i++)
    v |= (uint64_t)b[r->big_endian ? n - 1 - i : i] << (8 * i);
  return v;
}

unsigned ferry__rec_get_u8(ferry__rec_r *r) { return (unsigned)get_uint(r, 1); }
uint32_t ferry__rec_get_u32(ferry__rec_r *r) {
  return (uint32_t)get_uint(r, 4);
}
uint64_t ferry__rec_get_u64(ferry__rec_r *r) { return get_uint(r, 8); }

void ferry__rec_get_u64s(ferry__rec_r *r, int64_t *out, size_t n) {
  if (r->rc)
    return;
  if (r->big_endian || !host_little() || n > (r->len - r->pos) / 8) {
    for (size_t i = 0; i < n && !r->rc; i++)
      out[i] = (int64_t)get_uint(r, 8);
    return;
  }
  memcpy(out, r->p + r->pos, n * 8);
  r->pos += n * 8;
}
int32_t ferry__rec_get_i32(ferry__rec_r *r) {
  uint32_t u = ferry__rec_get_u32(r);
  int32_t v;
  memcpy(&v, &u, sizeof v); /* two's complement without overflow */
  return v;
}
int64_t ferry__rec_get_i64(ferry__rec_r *r) {
  uint64_t u = ferry__rec_get_u64(r);
  int64_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

int64_t ferry__rec_get_nonneg(ferry__rec_r *r, const char *why) {
  uint64_t v = ferry__rec_get_u64(r);
  if (v > (uint64_t)INT64_MAX) {
    ferry__rec_fail(r, why);
    return 0;
  }
  return (int64_t)v;
}

uint32_t ferry__rec_get_len(ferry__rec_r *r, const char *why) {
  uint32_t n = ferry__rec_get_u32(r);
  if (r->rc)
    return 0;
  if (n > r->len - r->pos) {
    ferry__rec_fail(r, why);
    return 0;
  }
  return n;
}

char *ferry__rec_get_str(ferry__rec_r *r) {
  uint32_t n = ferry__rec_get_len(r, "string runs past the end");
  if (r->rc)
    return NULL;
  if (n && memchr(r->p + r->pos, 0, n)) {
    ferry__rec_fail(r, "string holds a NUL byte");
    return NULL;
  }
  /* n + 1 <= the bytes left + 1: bounded by the record, never by a
   * length alone */
  char *s = r->realloc_fn ? r->realloc_fn(NULL, (size_t)n + 1)
                          : malloc((size_t)n + 1);
  if (!s) {
    ferry__rec_oom(r, (size_t)n + 1, "a string");
    return NULL;
  }
  if (n)
    memcpy(s, r->p + r->pos, n);
  s[n] = '\0';
  r->pos += n;
  return s;
}

const void *ferry__rec_get_blob(ferry__rec_r *r, size_t *n) {
  uint32_t k = ferry__rec_get_len(r, "blob runs past the end");
  *n = k;
  return r->rc ? NULL : ferry__rec_take(r, k);
}

/* ---- Fixed places ---- */

uint32_t ferry__le32_load(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

uint64_t ferry__le64_load(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void ferry__le64_store(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
