/*
 * arrow.c - the ARROW:schema hint of a Parquet footer: the key-value
 * metadata that Arrow writers (pyarrow, arrow-rs, Polars) add, the base64
 * text of an Arrow IPC Schema message, a flatbuffer.  Parquet stores an
 * Arrow FixedSizeList<k> as a plain LIST, so the hint is the only place the
 * writer says every row holds k elements; ferry reads it to take k from the
 * writer instead of inferring it from value counts.  Only what that needs
 * is read: the top-level fields' names and, for a FixedSizeList, its
 * listSize.  The flatbuffer reader below is small and bounded: every
 * offset, vtable and vector length is checked against the buffer before it
 * is followed, nesting is not followed at all (top-level fields only), and
 * a bad hint is refused with a reason (a note in ferry info), never read
 * past its end.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/parquet.h"
#include "util/flatbuf.h"

#include <stdlib.h>
#include <string.h>

/* ---- base64 ------------------------------------------------------------ */

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

/* Decode s[0..n) (padding optional) into a new buffer. */
static unsigned char *b64_decode(const char *s, size_t n, size_t *outlen) {
  while (n > 0 && s[n - 1] == '=')
    n--;
  unsigned char *o = malloc(n / 4 * 3 + 3);
  size_t k = 0;
  uint32_t acc = 0;
  int bits = 0;
  if (!o)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    int v = b64_val((unsigned char)s[i]);
    if (v < 0) {
      free(o);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[k++] = (unsigned char)(acc >> bits);
    }
  }
  *outlen = k;
  return o;
}

/* ---- Schema ------------------------------------------------------------- */

enum { ARROW_TYPE_FIXED_SIZE_LIST = 16, ARROW_HEADER_SCHEMA = 1 };

void ferry__pq_arrow_hint_free(pq_arrow_hint *h) {
  for (int i = 0; h->names && i < h->n; i++)
    free(h->names[i]);
  free(h->names);
  free(h->k);
  memset(h, 0, sizeof *h);
}

/* One top-level Field: when it is a FixedSizeList, add its name and size. */
static int one_field(const ferry__fb *b, size_t f, pq_arrow_hint *h,
                     const char **why) {
  int64_t name = ferry__fb_ref(b, f, 0), tt = ferry__fb_field(b, f, 2);
  uint32_t len;
  if (name < 0 || tt < 0) {
    *why = "a field's name or type is out of bounds";
    return -1;
  }
  if (name == 0 || tt == 0 || b->p[tt] != ARROW_TYPE_FIXED_SIZE_LIST)
    return 0;
  int64_t ty = ferry__fb_ref(b, f, 3),
          ls = ty > 0 ? ferry__fb_field(b, (size_t)ty, 0) : -1;
  uint32_t k;
  if (ty <= 0 || ls <= 0 || ferry__fb_u32(b, (size_t)ls, &k) < 0 ||
      (int32_t)k < 1) {
    *why = "a FixedSizeList without a positive listSize";
    return -1;
  }
  if (ferry__fb_u32(b, (size_t)name, &len) < 0 ||
      len > b->n - (size_t)name - 4) {
    *why = "a field name runs past the schema";
    return -1;
  }
  char *s = malloc((size_t)len + 1);
  char **nn = realloc(h->names, (size_t)(h->n + 1) * sizeof *nn);
  if (nn)
    h->names = nn;
  int32_t *nk = nn ? realloc(h->k, (size_t)(h->n + 1) * sizeof *nk) : NULL;
  if (nk)
    h->k = nk;
  if (!s || !nk) {
    free(s);
    *why = "out of memory";
    return -1;
  }
  memcpy(s, b->p + name + 4, len);
  s[len] = '\0';
  h->names[h->n] = s;
  h->k[h->n] = (int32_t)k;
  h->n++;
  return 0;
}

static int parse_message(const ferry__fb *b, pq_arrow_hint *h,
                         const char **why) {
  int64_t msg = ferry__fb_deref(b, 0);
  if (msg < 0) {
    *why = "no root table";
    return -1;
  }
  int64_t ht = ferry__fb_field(b, (size_t)msg, 1);
  if (ht <= 0 || b->p[ht] != ARROW_HEADER_SCHEMA) {
    *why = "the IPC message is not a Schema";
    return -1;
  }
  int64_t schema = ferry__fb_ref(b, (size_t)msg, 2);
  int64_t fields = schema > 0 ? ferry__fb_ref(b, (size_t)schema, 1) : -1;
  uint32_t n;
  if (schema <= 0 || fields < 0) {
    *why = "the Schema or its fields are out of bounds";
    return -1;
  }
  if (fields == 0)
    return 0;
  if (ferry__fb_vector(b, (size_t)fields, 4, &n) < 0) {
    *why = "the fields vector runs past the schema";
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    int64_t f = ferry__fb_deref(b, (size_t)fields + 4 + 4 * (size_t)i);
    if (f < 0) {
      *why = "a field is out of bounds";
      return -1;
    }
    if (one_field(b, (size_t)f, h, why) < 0)
      return -1;
  }
  return 0;
}

int ferry__pq_arrow_hint_parse(const char *b64, size_t len, pq_arrow_hint *h,
                               const char **why) {
  size_t n = 0;
  memset(h, 0, sizeof *h);
  *why = NULL;
  if (len > PQ_MAX_FOOTER) {
    *why = "longer than the footer bound";
    return -1;
  }
  unsigned char *raw = b64_decode(b64, len, &n);
  if (!raw) {
    *why = "not base64 (or out of memory)";
    return -1;
  }
  /* an encapsulated IPC message: [0xFFFFFFFF] int32 length, flatbuffer */
  ferry__fb whole = {raw, n}, b;
  uint32_t a = 0, mlen = 0;
  size_t at = 0;
  int rc = ferry__fb_u32(&whole, 0, &a);
  if (rc == 0 && a == 0xFFFFFFFFu)
    at = 4;
  if (rc == 0)
    rc = ferry__fb_u32(&whole, at, &mlen);
  at += 4;
  if (rc < 0 || mlen < 8 || mlen > n - at) {
    free(raw);
    *why = "the IPC message length runs past the hint";
    return -1;
  }
  b.p = raw + at;
  b.n = mlen;
  rc = parse_message(&b, h, why);
  free(raw);
  if (rc < 0)
    ferry__pq_arrow_hint_free(h);
  return rc;
}

int64_t ferry__pq_arrow_hint_k(const pq_arrow_hint *h, const char *name) {
  for (int i = 0; i < h->n; i++)
    if (strcmp(h->names[i], name) == 0)
      return h->k[i];
  return 0;
}
