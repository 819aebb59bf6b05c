/*
 * arrow_schema.c - the Schema of an Arrow IPC file (arrow.c): its fields
 * depth first, each top-level one classified as a dense or ragged
 * variable or skipped with the reason (docs/ragged.md).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/arrow.h"

#include <stdlib.h>
#include <string.h>

static int numeric_dtype(const ferry__fb *b, int type, int64_t t,
                         ferry_dtype *out) {
  int64_t bits = 0, sign = 0, prec = 0;
  if (t <= 0)
    return -1;
  if (type == T_INT) {
    if (ferry__fb_scalar(b, (size_t)t, 0, 4, 0, &bits) < 0 ||
        ferry__fb_scalar(b, (size_t)t, 1, 1, 0, &sign) < 0)
      return -1;
    switch (bits) {
    case 8: *out = sign ? FERRY_INT8 : FERRY_UINT8; return 0;
    case 16: *out = sign ? FERRY_INT16 : FERRY_UINT16; return 0;
    case 32: *out = sign ? FERRY_INT32 : FERRY_UINT32; return 0;
    case 64: *out = sign ? FERRY_INT64 : FERRY_UINT64; return 0;
    default: return -1;
    }
  }
  if (type == T_FLOAT) {
    if (ferry__fb_scalar(b, (size_t)t, 0, 2, 0, &prec) < 0 || prec < 0 ||
        prec > 2)
      return -1;
    *out = prec == 0   ? FERRY_FLOAT16
           : prec == 1 ? FERRY_FLOAT32
                       : FERRY_FLOAT64;
    return 0;
  }
  return -1;
}

/* Buffers of a field of type t alone (its children add theirs); -1: a
 * type whose layout ferry does not know (the file is refused). */
static int buffers_of(int type) {
  switch (type) {
  case 1: return 0; /* Null */
  case T_INT:
  case T_FLOAT:
  case T_BOOL:
  case T_DECIMAL:
  case T_DATE:
  case T_TIME:
  case T_TIMESTAMP:
  case T_INTERVAL:
  case T_FIXED_BINARY:
  case T_DURATION: return 2;
  case T_BINARY:
  case T_UTF8:
  case T_LARGE_BINARY:
  case T_LARGE_UTF8: return 3;
  case T_LIST:
  case T_LARGE_LIST:
  case T_MAP: return 2;
  case T_STRUCT:
  case T_FIXED_LIST: return 1;
  default: return -1;
  }
}

static int fb_string(const ferry__fb *b, int64_t s, char **out) {
  uint32_t len;
  if (s <= 0 || ferry__fb_u32(b, (size_t)s, &len) < 0 ||
      len > b->n - (size_t)s - 4)
    return -1;
  if (!(*out = malloc((size_t)len + 1)))
    return -2;
  memcpy(*out, b->p + s + 4, len);
  (*out)[len] = '\0';
  return 0;
}

/* How a top-level field with its first child c (or none) is served. */
static void classify(const ferry__fb *b, int64_t field, afield *a,
                     int64_t child, int child_type) {
  int64_t t = ferry__fb_ref(b, (size_t)field, 3), dict = 0;
  dict = ferry__fb_field(b, (size_t)field, 4);
  a->why = "its type is not served";
  if (dict > 0) {
    a->why = "dictionary-encoded";
    return;
  }
  switch (a->type) {
  case T_INT:
  case T_FLOAT:
    if (numeric_dtype(b, a->type, t, &a->dtype) == 0)
      a->kind = K_DENSE;
    return;
  case T_BOOL: a->why = "bool (bit-packed)"; return;
  case T_BINARY:
  case T_UTF8:
  case T_LARGE_BINARY:
  case T_LARGE_UTF8:
    a->kind = K_RAGGED;
    a->dtype = FERRY_UINT8;
    a->off64 = a->type == T_LARGE_BINARY || a->type == T_LARGE_UTF8;
    return;
  default: break;
  }
  if (a->type != T_LIST && a->type != T_LARGE_LIST && a->type != T_FIXED_LIST)
    return;
  int64_t ct = child > 0 ? ferry__fb_ref(b, (size_t)child, 3) : -1;
  if (a->nchild != 1 || numeric_dtype(b, child_type, ct, &a->dtype) < 0) {
    a->why = "a list of something other than numbers";
    return;
  }
  if (a->type == T_FIXED_LIST) {
    if (t <= 0 || ferry__fb_scalar(b, (size_t)t, 0, 4, 0, &a->k) < 0 ||
        a->k < 1) {
      a->why = "a FixedSizeList without a positive listSize";
      return;
    }
    a->kind = K_DENSE;
    return;
  }
  a->kind = K_RAGGED;
  a->off64 = a->type == T_LARGE_LIST;
}

/* Field f (a Field table) and its children, depth first, into s. */
static int walk_field(const ferry__fb *b, int64_t f, int top, aschema *s,
                      int depth, const char **why) {
  if (depth > 32 || s->n >= ARROW_MAX_FIELDS) {
    *why = "fields nested too deep, or too many";
    return -1;
  }
  int64_t tt = 0, kids = 0;
  afield *a = &s->f[s->n++];
  memset(a, 0, sizeof *a);
  a->top = top;
  if (f <= 0 || ferry__fb_scalar(b, (size_t)f, 2, 1, 0, &tt) < 0 ||
      (kids = ferry__fb_ref(b, (size_t)f, 5)) < 0) {
    *why = "a field is out of bounds";
    return -1;
  }
  a->type = (int)(uint8_t)tt;
  if ((a->nbuf = buffers_of(a->type)) < 0) {
    *why = "a field of a type whose buffers ferry does not know (union, "
           "view or run-end encoded)";
    return -1;
  }
  uint32_t nk = 0;
  if (ferry__fb_field(b, (size_t)f, 4) > 0) {
    a->nbuf = 2; /* dictionary-encoded: a batch holds its indices alone */
    kids = 0;
  }
  if (kids > 0 && ferry__fb_vector(b, (size_t)kids, 4, &nk) < 0) {
    *why = "a field's children run past the schema";
    return -1;
  }
  a->nchild = (int)nk;
  int64_t first_child = 0;
  int first_type = 0;
  for (uint32_t i = 0; i < nk; i++) {
    int64_t c = ferry__fb_deref(b, (size_t)kids + 4 + 4 * (size_t)i);
    if (i == 0 && c > 0) {
      int64_t ct = 0;
      first_child = c;
      if (ferry__fb_scalar(b, (size_t)c, 2, 1, 0, &ct) == 0)
        first_type = (int)(uint8_t)ct;
    }
    if (walk_field(b, c, 0, s, depth + 1, why) < 0)
      return -1;
  }
  if (top) {
    int r = fb_string(b, ferry__fb_ref(b, (size_t)f, 0), &a->name);
    if (r == -2) {
      *why = "out of memory";
      return -1;
    }
    if (r < 0 || !a->name[0]) {
      *why = "a column without a name";
      return -1;
    }
    classify(b, f, a, first_child, first_type);
  }
  return 0;
}

void ferry__arrow_schema_free(aschema *s) {
  for (int i = 0; i < s->n; i++)
    free(s->f[i].name);
  s->n = 0;
}

/* A Schema table into s. */
int ferry__arrow_parse_schema(const ferry__fb *b, int64_t schema, aschema *s,
                              const char **why) {
  int64_t endian = 0, fields;
  if (schema <= 0 ||
      ferry__fb_scalar(b, (size_t)schema, 0, 2, 0, &endian) < 0 ||
      (fields = ferry__fb_ref(b, (size_t)schema, 1)) < 0) {
    *why = "the Schema is out of bounds";
    return -1;
  }
  if (endian != 0) {
    *why = "a big-endian file (not read yet)";
    return -1;
  }
  uint32_t n = 0;
  if (fields > 0 && ferry__fb_vector(b, (size_t)fields, 4, &n) < 0) {
    *why = "the fields run past the Schema";
    return -1;
  }
  for (uint32_t i = 0; i < n; i++)
    if (walk_field(b, ferry__fb_deref(b, (size_t)fields + 4 + 4 * (size_t)i), 1,
                   s, 0, why) < 0)
      return -1;
  return 0;
}
