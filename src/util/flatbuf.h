/*
 * util/flatbuf.h - a small, bounded reader of flatbuffers (the encoding of
 * Arrow IPC metadata: the ARROW:schema hint of a Parquet footer,
 * backends/parquet/arrow.c, and the messages of Arrow IPC files,
 * backends/arrow.c).  Every offset, vtable and vector length is checked
 * against the buffer before it is followed; positions are byte offsets
 * into the buffer, 0 means "absent" for an optional field and -1 "bad".
 */
#ifndef FERRY_FLATBUF_H
#define FERRY_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ferry__fb {
  const unsigned char *p;
  size_t n;
} ferry__fb;

static inline int ferry__fb_u32(const ferry__fb *b, size_t at, uint32_t *v) {
  if (at > b->n || b->n - at < 4)
    return -1;
  *v = (uint32_t)b->p[at] | (uint32_t)b->p[at + 1] << 8 |
       (uint32_t)b->p[at + 2] << 16 | (uint32_t)b->p[at + 3] << 24;
  return 0;
}

static inline int ferry__fb_u16(const ferry__fb *b, size_t at, uint16_t *v) {
  if (at > b->n || b->n - at < 2)
    return -1;
  *v = (uint16_t)(b->p[at] | b->p[at + 1] << 8);
  return 0;
}

static inline int ferry__fb_i64(const ferry__fb *b, size_t at, int64_t *v) {
  uint32_t lo, hi;
  if (ferry__fb_u32(b, at, &lo) < 0 || ferry__fb_u32(b, at + 4, &hi) < 0)
    return -1;
  *v = (int64_t)((uint64_t)hi << 32 | lo);
  return 0;
}

/* The position of field id of the table at t, 0 when absent; -1: bad. */
static inline int64_t ferry__fb_field(const ferry__fb *b, size_t t, int id) {
  uint32_t so;
  uint16_t vlen, off;
  if (ferry__fb_u32(b, t, &so) < 0)
    return -1;
  int64_t vt = (int64_t)t - (int64_t)(int32_t)so;
  if (vt < 0 || (uint64_t)vt >= b->n ||
      ferry__fb_u16(b, (size_t)vt, &vlen) < 0 || vlen < 4 || (vlen & 1))
    return -1;
  if ((size_t)(4 + 2 * id) + 2 > vlen)
    return 0; /* past the vtable: absent */
  if (ferry__fb_u16(b, (size_t)vt + 4 + 2 * (size_t)id, &off) < 0)
    return -1;
  if (off == 0)
    return 0;
  if ((uint64_t)t + off >= b->n)
    return -1;
  return (int64_t)t + off;
}

/* Follow the uoffset at position at. */
static inline int64_t ferry__fb_deref(const ferry__fb *b, size_t at) {
  uint32_t o;
  if (ferry__fb_u32(b, at, &o) < 0 || (uint64_t)at + o >= b->n)
    return -1;
  return (int64_t)(at + o);
}

/* The table (or vector, string) that field id of table t points to: its
 * position, 0 when absent, -1 when bad. */
static inline int64_t ferry__fb_ref(const ferry__fb *b, size_t t, int id) {
  int64_t f = ferry__fb_field(b, t, id);
  return f <= 0 ? f : ferry__fb_deref(b, (size_t)f);
}

/* The length of the vector at v whose elements are elem bytes each, all of
 * them inside the buffer. */
static inline int ferry__fb_vector(const ferry__fb *b, size_t v, size_t elem,
                                   uint32_t *n) {
  if (ferry__fb_u32(b, v, n) < 0 || elem == 0 || *n > (b->n - v - 4) / elem)
    return -1;
  return 0;
}

/* A scalar field of table t: its bytes (1, 2, 4 or 8, little-endian) as an
 * int64_t, def when absent; -1 when bad. */
static inline int ferry__fb_scalar(const ferry__fb *b, size_t t, int id,
                                   int bytes, int64_t def, int64_t *out) {
  int64_t f = ferry__fb_field(b, t, id);
  if (f < 0)
    return -1;
  if (f == 0) {
    *out = def;
    return 0;
  }
  if ((uint64_t)f + (uint64_t)bytes > b->n)
    return -1;
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; k--)
    v = v << 8 | b->p[f + k];
  *out = bytes == 1   ? (int64_t)(int8_t)v
         : bytes == 2 ? (int64_t)(int16_t)v
         : bytes == 4 ? (int64_t)(int32_t)v
                      : (int64_t)v;
  return 0;
}

#endif /* FERRY_FLATBUF_H */
