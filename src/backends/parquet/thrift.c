/*
 * thrift.c - a decoder of the Thrift compact protocol, the encoding of
 * Parquet's footer and page headers.  Why our own: Debian ships no Thrift C
 * library for the compact protocol without a C++ runtime, and the subset a
 * reader needs (structs, lists, maps to skip, varints, binaries) is small.
 * Every read is bounded: varints stop after 10 bytes, a string or binary
 * must fit in the bytes left, a list's count cannot exceed the bytes left
 * (every element takes at least one byte), nesting is bounded by
 * PQ_MAX_DEPTH, and unknown fields of any type are skipped by structure.
 * The first failure is sticky: every later read fails with the same reason,
 * so callers check once at the end of a struct.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/parquet.h"

#include <string.h>

void ferry__pq_tr_init(pq_tr *t, const void *buf, size_t len) {
  t->start = t->p = buf;
  t->end = t->p + len;
  t->depth = 0;
  t->why = NULL;
  t->oom = 0;
}

int ferry__pq_tr_fail(pq_tr *t, const char *why) {
  if (!t->why)
    t->why = why;
  return -1;
}

int ferry__pq_tr_oom(pq_tr *t, size_t bytes) {
  if (!t->why) {
    t->why = "out of memory";
    t->oom = bytes;
  }
  return -1;
}

size_t ferry__pq_tr_offset(const pq_tr *t) { return (size_t)(t->p - t->start); }

static int get_byte(pq_tr *t, unsigned *b) {
  if (t->why)
    return -1;
  if (t->p >= t->end)
    return ferry__pq_tr_fail(t, "truncated Thrift data");
  *b = *t->p++;
  return 0;
}

static int varint(pq_tr *t, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    unsigned b;
    if (get_byte(t, &b) < 0)
      return -1;
    if (shift == 63 && (b & 0x7e))
      return ferry__pq_tr_fail(t, "Thrift varint overflows 64 bits");
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return ferry__pq_tr_fail(t, "Thrift varint longer than 10 bytes");
}

static int64_t unzigzag(uint64_t u) {
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

int ferry__pq_tr_field(pq_tr *t, int16_t *last, int16_t *id, int *type) {
  unsigned b;
  if (get_byte(t, &b) < 0)
    return -1;
  if (b == 0)
    return 0;
  *type = (int)(b & 0x0f);
  unsigned delta = b >> 4;
  if (delta) {
    int v = *last + (int)delta;
    if (v > INT16_MAX)
      return ferry__pq_tr_fail(t, "Thrift field id out of range");
    *id = (int16_t)v;
  } else {
    uint64_t u;
    if (varint(t, &u) < 0)
      return -1;
    int64_t v = unzigzag(u);
    if (v < INT16_MIN || v > INT16_MAX)
      return ferry__pq_tr_fail(t, "Thrift field id out of range");
    *id = (int16_t)v;
  }
  if (*type == PQ_T_STOP || *type > PQ_T_STRUCT)
    return ferry__pq_tr_fail(t, "unknown Thrift field type");
  *last = *id;
  return 1;
}

int ferry__pq_tr_i64(pq_tr *t, int type, int64_t *v) {
  if (type != PQ_T_I64 && type != PQ_T_I32 && type != PQ_T_I16)
    return ferry__pq_tr_fail(t, "Thrift field has the wrong type (expected an "
                                "integer)");
  uint64_t u;
  if (varint(t, &u) < 0)
    return -1;
  *v = unzigzag(u);
  return 0;
}

int ferry__pq_tr_i32(pq_tr *t, int type, int32_t *v) {
  int64_t x;
  if (type == PQ_T_BYTE) {
    unsigned b;
    if (get_byte(t, &b) < 0)
      return -1;
    *v = (int32_t)(int8_t)(uint8_t)b;
    return 0;
  }
  if (ferry__pq_tr_i64(t, type, &x) < 0)
    return -1;
  if (x < INT32_MIN || x > INT32_MAX)
    return ferry__pq_tr_fail(t, "Thrift i32 out of range");
  *v = (int32_t)x;
  return 0;
}

int ferry__pq_tr_bool(pq_tr *t, int type, int *v) {
  if (t->why)
    return -1;
  if (type != PQ_T_TRUE && type != PQ_T_FALSE)
    return ferry__pq_tr_fail(
        t, "Thrift field has the wrong type (expected a bool)");
  *v = type == PQ_T_TRUE;
  return 0;
}

int ferry__pq_tr_binary(pq_tr *t, int type, const unsigned char **p,
                        size_t *n) {
  uint64_t len;
  if (type != PQ_T_BINARY)
    return ferry__pq_tr_fail(t, "Thrift field has the wrong type (expected a "
                                "binary)");
  if (varint(t, &len) < 0)
    return -1;
  if (len > (uint64_t)(t->end - t->p))
    return ferry__pq_tr_fail(t, "Thrift binary longer than the bytes left");
  *p = t->p;
  *n = (size_t)len;
  t->p += len;
  return 0;
}

int ferry__pq_tr_list(pq_tr *t, int type, int *etype, int64_t *n) {
  unsigned b;
  if (type != PQ_T_LIST && type != PQ_T_SET)
    return ferry__pq_tr_fail(
        t, "Thrift field has the wrong type (expected a list)");
  if (get_byte(t, &b) < 0)
    return -1;
  uint64_t count = b >> 4;
  *etype = (int)(b & 0x0f);
  if (count == 15 && varint(t, &count) < 0)
    return -1;
  if (*etype == PQ_T_STOP || *etype > PQ_T_STRUCT)
    return ferry__pq_tr_fail(t, "unknown Thrift list element type");
  /* every element takes at least one byte */
  if (count > (uint64_t)(t->end - t->p))
    return ferry__pq_tr_fail(t, "Thrift list longer than the bytes left");
  *n = (int64_t)count;
  return 0;
}

int ferry__pq_tr_enter(pq_tr *t, int type) {
  if (t->why)
    return -1;
  if (type != PQ_T_STRUCT)
    return ferry__pq_tr_fail(t, "Thrift field has the wrong type (expected a "
                                "struct)");
  if (t->depth >= PQ_MAX_DEPTH)
    return ferry__pq_tr_fail(t, "Thrift structs nested too deep");
  t->depth++;
  return 0;
}

void ferry__pq_tr_leave(pq_tr *t) {
  if (t->depth > 0)
    t->depth--;
}

static int skip_n(pq_tr *t, size_t n) {
  if (t->why)
    return -1;
  if (n > (size_t)(t->end - t->p))
    return ferry__pq_tr_fail(t, "truncated Thrift data");
  t->p += n;
  return 0;
}

/* A list element of type bool is one byte; elsewhere a bool is the field
 * type itself and has no payload. */
static int skip_elem(pq_tr *t, int type) {
  if (type == PQ_T_TRUE || type == PQ_T_FALSE)
    return skip_n(t, 1);
  return ferry__pq_tr_skip(t, type);
}

static int skip_map(pq_tr *t) {
  uint64_t count;
  unsigned kv = 0;
  if (varint(t, &count) < 0)
    return -1;
  if (count == 0)
    return 0;
  if (get_byte(t, &kv) < 0)
    return -1;
  if (count > (uint64_t)(t->end - t->p))
    return ferry__pq_tr_fail(t, "Thrift map longer than the bytes left");
  int kt = (int)(kv >> 4), vt = (int)(kv & 0x0f);
  if (kt == PQ_T_STOP || kt > PQ_T_STRUCT || vt == PQ_T_STOP ||
      vt > PQ_T_STRUCT)
    return ferry__pq_tr_fail(t, "unknown Thrift map element type");
  for (uint64_t i = 0; i < count; i++)
    if (skip_elem(t, kt) < 0 || skip_elem(t, vt) < 0)
      return -1;
  return 0;
}

int ferry__pq_tr_skip(pq_tr *t, int type) {
  uint64_t u;
  const unsigned char *p;
  size_t n;
  int64_t cnt;
  int et, rc = 0;
  if (t->why)
    return -1;
  switch (type) {
  case PQ_T_TRUE:
  case PQ_T_FALSE: return 0;
  case PQ_T_BYTE: return skip_n(t, 1);
  case PQ_T_I16:
  case PQ_T_I32:
  case PQ_T_I64: return varint(t, &u);
  case PQ_T_DOUBLE: return skip_n(t, 8);
  case PQ_T_BINARY: return ferry__pq_tr_binary(t, type, &p, &n);
  case PQ_T_LIST:
  case PQ_T_SET:
    if (ferry__pq_tr_list(t, type, &et, &cnt) < 0)
      return -1;
    if (t->depth >= PQ_MAX_DEPTH)
      return ferry__pq_tr_fail(t, "Thrift containers nested too deep");
    t->depth++;
    for (int64_t i = 0; rc == 0 && i < cnt; i++)
      rc = skip_elem(t, et);
    t->depth--;
    return rc;
  case PQ_T_MAP:
    if (t->depth >= PQ_MAX_DEPTH)
      return ferry__pq_tr_fail(t, "Thrift containers nested too deep");
    t->depth++;
    rc = skip_map(t);
    t->depth--;
    return rc;
  case PQ_T_STRUCT: {
    int16_t last = 0, id;
    int ft, r;
    if (ferry__pq_tr_enter(t, type) < 0)
      return -1;
    while ((r = ferry__pq_tr_field(t, &last, &id, &ft)) == 1)
      if (ferry__pq_tr_skip(t, ft) < 0) {
        r = -1;
        break;
      }
    ferry__pq_tr_leave(t);
    return r < 0 ? -1 : 0;
  }
  default: return ferry__pq_tr_fail(t, "unknown Thrift type");
  }
}
