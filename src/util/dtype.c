/*
 * dtype.c - dtype names and sizes, and the IEEE half (float16) conversions
 * (dtype.h), written once for the library: the loader's weights read
 * halves (weights.c), the mem backend's generator writes them (mem.c),
 * the parquet backend turns a null_fill text into one (parquet.c).  They
 * were three copies until issue 24.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "util/dtype.h"
#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  size_t size;
} dtypes[FERRY_DTYPE_COUNT] = {
    [FERRY_BOOL] = {"bool", 1},         [FERRY_INT8] = {"int8", 1},
    [FERRY_INT16] = {"int16", 2},       [FERRY_INT32] = {"int32", 4},
    [FERRY_INT64] = {"int64", 8},       [FERRY_UINT8] = {"uint8", 1},
    [FERRY_UINT16] = {"uint16", 2},     [FERRY_UINT32] = {"uint32", 4},
    [FERRY_UINT64] = {"uint64", 8},     [FERRY_FLOAT16] = {"float16", 2},
    [FERRY_FLOAT32] = {"float32", 4},   [FERRY_FLOAT64] = {"float64", 8},
    [FERRY_BFLOAT16] = {"bfloat16", 2},
};

size_t ferry_dtype_size(ferry_dtype dtype) {
  if ((int)dtype < 0 || dtype >= FERRY_DTYPE_COUNT)
    return 0;
  return dtypes[dtype].size;
}

const char *ferry_dtype_name(ferry_dtype dtype) {
  if ((int)dtype < 0 || dtype >= FERRY_DTYPE_COUNT)
    return "?";
  return dtypes[dtype].name;
}

int ferry__dtype_from_name(const char *name, ferry_dtype *out) {
  for (int i = 0; i < FERRY_DTYPE_COUNT; i++)
    if (strcmp(name, dtypes[i].name) == 0) {
      *out = (ferry_dtype)i;
      return 0;
    }
  return FERRY_EINVAL;
}

double ferry__half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, f = h & 0x3ff;
  double v = e == 0    ? ldexp((double)f, -24)
             : e == 31 ? (f ? NAN : INFINITY)
                       : ldexp((double)(f + 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

int32_t ferry__half_of_double(double x) {
  if (isnan(x))
    return -1;
  uint32_t sign = signbit(x) ? 0x8000u : 0;
  double a = fabs(x);
  if (a == 0)
    return (int32_t)sign;
  if (isinf(a)) /* frexp leaves its exponent unspecified for inf */
    return (int32_t)(sign | 0x7c00u);
  int e = 0;
  double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  if (e > 16)
    return -1;
  if (e < -13) { /* subnormal: a multiple of 2^-24 */
    double m = ldexp(a, 24);
    return m == floor(m) && m < 1024 ? (int32_t)(sign | (uint32_t)m) : -1;
  }
  double m = ldexp(f, 11); /* 11 significant bits */
  if (m != floor(m))
    return -1;
  return (int32_t)(sign | (uint32_t)(e + 14) << 10 | ((uint32_t)m & 0x3ffu));
}

uint16_t ferry__half_of_int(uint32_t n) {
  if (n == 0)
    return 0;
  int e = 0;
  while ((n >> (e + 1)) != 0)
    e++;
  if (e > 15) /* past the largest half (65504): inf */
    return 0x7c00u;
  /* e <= 10 for n < 2048: the mantissa shift is exact. */
  uint32_t mant = e <= 10 ? (n << (10 - e)) : (n >> (e - 10));
  return (uint16_t)(((uint32_t)(e + 15) << 10) | (mant & 0x3ffu));
}

/* A number written as text as one element of dtype dt (native byte
 * order) into out (8 bytes at most), 0; -1 when dt cannot hold it exactly. */
int ferry__dtype_is_int(ferry_dtype dt) {
  switch (dt) {
  case FERRY_INT8:
  case FERRY_UINT8:
  case FERRY_INT16:
  case FERRY_UINT16:
  case FERRY_INT32:
  case FERRY_UINT32:
  case FERRY_INT64:
  case FERRY_UINT64: return 1;
  default: return 0;
  }
}

int ferry__value_of_text(const char *text, ferry_dtype dt, unsigned char *out) {
  char *end = NULL;
  double x = strtod(text, &end);
  if (end == text || *end)
    return -1;
  int whole = x == floor(x) && x >= -9.2e18 && x <= 1.8e19;
  switch (dt) {
  case FERRY_FLOAT64: memcpy(out, &x, 8); return 0;
  case FERRY_FLOAT32: {
    float f = (float)x;
    memcpy(out, &f, 4);
    return (double)f == x ? 0 : -1;
  }
  case FERRY_FLOAT16: {
    int32_t h = ferry__half_of_double(x);
    uint16_t v = (uint16_t)h;
    memcpy(out, &v, 2);
    return h < 0 ? -1 : 0;
  }
  case FERRY_BOOL: out[0] = x == 1; return x == 0 || x == 1 ? 0 : -1;
  case FERRY_BFLOAT16: {
    uint16_t v = ferry__bfloat16_of_float((float)x);
    memcpy(out, &v, 2);
    return (double)ferry__bfloat16_to_float(v) == x ? 0 : -1;
  }
  default: break;
  }
  if (!whole)
    return -1;
  int64_t lo = 0;
  uint64_t hi = 0;
  size_t n = ferry_dtype_size(dt);
  int sgn = dt == FERRY_INT8 || dt == FERRY_INT16 || dt == FERRY_INT32 ||
            dt == FERRY_INT64;
  if (n == 0 || n > 8)
    return -1;
  if (sgn) {
    lo = n == 8 ? INT64_MIN : -((int64_t)1 << (8 * n - 1));
    hi = n == 8 ? (uint64_t)INT64_MAX : ((uint64_t)1 << (8 * n - 1)) - 1;
    if (x < (double)lo || x > (double)hi || x >= 9.2e18)
      return -1;
  } else {
    hi = n == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * n)) - 1;
    if (x < 0 || x > (double)hi || x >= 1.8e19)
      return -1;
  }
  /* in range: the casts are defined */
  uint64_t u = sgn ? (uint64_t)(int64_t)x : (uint64_t)x;
  for (size_t b = 0; b < n; b++) /* native order: the host's bytes */
    out[b] = (unsigned char)(u >> (8 * b));
  if (*(const unsigned char *)&(uint16_t){1} == 0) /* big-endian host */
    for (size_t b = 0; b < n / 2; b++) {
      unsigned char t = out[b];
      out[b] = out[n - 1 - b];
      out[n - 1 - b] = t;
    }
  return 0;
}

double ferry__dtype_as_double(const unsigned char *p, ferry_dtype dt) {
  union {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
  } u;
  memcpy(&u, p, ferry_dtype_size(dt));
  switch (dt) {
  case FERRY_BOOL: return u.u8 ? 1.0 : 0.0;
  case FERRY_INT8: return (double)u.i8;
  case FERRY_INT16: return (double)u.i16;
  case FERRY_INT32: return (double)u.i32;
  case FERRY_INT64: return (double)u.i64;
  case FERRY_UINT8: return (double)u.u8;
  case FERRY_UINT16: return (double)u.u16;
  case FERRY_UINT32: return (double)u.u32;
  case FERRY_UINT64: return (double)u.u64;
  case FERRY_FLOAT16: return ferry__half_to_double(u.u16);
  case FERRY_FLOAT32: return (double)u.f32;
  case FERRY_BFLOAT16: return (double)ferry__bfloat16_to_float(u.u16);
  default: return u.f64;
  }
}

int ferry__dtype_as_int64(const unsigned char *p, ferry_dtype dt,
                          int64_t *out) {
  union {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
  } u;
  memcpy(&u, p, ferry_dtype_size(dt));
  switch (dt) {
  case FERRY_INT8: *out = (int64_t)u.i8; break;
  case FERRY_INT16: *out = u.i16; break;
  case FERRY_INT32: *out = u.i32; break;
  case FERRY_INT64: *out = u.i64; break;
  case FERRY_UINT8: *out = u.u8; break;
  case FERRY_UINT16: *out = u.u16; break;
  case FERRY_UINT32: *out = u.u32; break;
  default:
    if (u.u64 > (uint64_t)INT64_MAX)
      return -1;
    *out = (int64_t)u.u64;
  }
  return 0;
}

int ferry__dtype_as_int64_stored(const unsigned char *p, ferry_dtype dt,
                                 int swapped, int64_t *out) {
  size_t el = ferry_dtype_size(dt);
  unsigned char e[8];
  if (!swapped || el > 8)
    return ferry__dtype_as_int64(p, dt, out);
  for (size_t b = 0; b < el; b++)
    e[b] = p[el - 1 - b];
  return ferry__dtype_as_int64(e, dt, out);
}

uint16_t ferry__bfloat16_of_float(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return (uint16_t)((u >> 16) | 0x0040u); /* a NaN stays a (quiet) NaN */
  u += 0x7fffu + ((u >> 16) & 1u);          /* to nearest, ties to even */
  return (uint16_t)(u >> 16);
}

float ferry__bfloat16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
