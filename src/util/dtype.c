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
#include <string.h>

static const struct {
  const char *name;
  size_t size;
} dtypes[FERRY_DTYPE_COUNT] = {
    [FERRY_BOOL] = {"bool", 1},       [FERRY_INT8] = {"int8", 1},
    [FERRY_INT16] = {"int16", 2},     [FERRY_INT32] = {"int32", 4},
    [FERRY_INT64] = {"int64", 8},     [FERRY_UINT8] = {"uint8", 1},
    [FERRY_UINT16] = {"uint16", 2},   [FERRY_UINT32] = {"uint32", 4},
    [FERRY_UINT64] = {"uint64", 8},   [FERRY_FLOAT16] = {"float16", 2},
    [FERRY_FLOAT32] = {"float32", 4}, [FERRY_FLOAT64] = {"float64", 8},
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
