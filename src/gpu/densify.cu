/*
 * gpu/densify.cu - ferry's densify kernel (sparse=dense on the device,
 * docs/decisions/0056-densify-on-the-device.md; the argument list is in
 * gpu/densify.h).  Compiled to PTX text at build time (nvcc -ptx, see
 * src/gpu/densify.mk) and embedded in libferry, which loads it through the
 * driver API at run time: no link-time CUDA dependency.  Its conversions
 * are the CPU view's (src/loader/sparse.c), bit for bit: values through
 * double, float16 through float rounded to the nearest half, ties to even,
 * with sparse.c's integer rounding, NaN and overflow rules.
 */
#include "densify.h"

typedef long long i64;
typedef unsigned long long u64;

__device__ static int dsize(int dt) {
  switch (dt) {
  case FERRY__KDT_BOOL:
  case FERRY__KDT_INT8:
  case FERRY__KDT_UINT8: return 1;
  case FERRY__KDT_INT16:
  case FERRY__KDT_UINT16:
  case FERRY__KDT_FLOAT16: return 2;
  case FERRY__KDT_INT32:
  case FERRY__KDT_UINT32:
  case FERRY__KDT_FLOAT32: return 4;
  default: return 8;
  }
}

/* util/dtype.c's ferry__half_to_double, exactly. */
__device__ static double half_to_double(unsigned short h) {
  int e = (h >> 10) & 0x1f, f = h & 0x3ff;
  double v = e == 0    ? ldexp((double)f, -24)
             : e == 31 ? (f ? __longlong_as_double(0x7ff8000000000000LL)
                            : __longlong_as_double(0x7ff0000000000000LL))
                       : ldexp((double)(f + 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

__device__ static double as_double(const void *p, i64 k, int dt) {
  switch (dt) {
  case FERRY__KDT_BOOL: return ((const unsigned char *)p)[k] ? 1.0 : 0.0;
  case FERRY__KDT_INT8: return (double)((const signed char *)p)[k];
  case FERRY__KDT_INT16: return (double)((const short *)p)[k];
  case FERRY__KDT_INT32: return (double)((const int *)p)[k];
  case FERRY__KDT_INT64: return (double)((const i64 *)p)[k];
  case FERRY__KDT_UINT8: return (double)((const unsigned char *)p)[k];
  case FERRY__KDT_UINT16: return (double)((const unsigned short *)p)[k];
  case FERRY__KDT_UINT32: return (double)((const unsigned *)p)[k];
  case FERRY__KDT_UINT64: return (double)((const u64 *)p)[k];
  case FERRY__KDT_FLOAT16:
    return half_to_double(((const unsigned short *)p)[k]);
  case FERRY__KDT_FLOAT32: return (double)((const float *)p)[k];
  default: return ((const double *)p)[k];
  }
}

__device__ static i64 as_index(const void *p, i64 k, int dt) {
  switch (dt) {
  case FERRY__KDT_INT8: return ((const signed char *)p)[k];
  case FERRY__KDT_INT16: return ((const short *)p)[k];
  case FERRY__KDT_INT32: return ((const int *)p)[k];
  case FERRY__KDT_UINT8: return ((const unsigned char *)p)[k];
  case FERRY__KDT_UINT16: return ((const unsigned short *)p)[k];
  case FERRY__KDT_UINT32: return ((const unsigned *)p)[k];
  case FERRY__KDT_UINT64: {
    u64 u = ((const u64 *)p)[k];
    return u > 0x7fffffffffffffffULL ? -1 : (i64)u;
  }
  default: return ((const i64 *)p)[k];
  }
}

/* src/loader/sparse.c's half_nearest, exactly. */
__device__ static unsigned short half_nearest(float f) {
  unsigned x = __float_as_uint(f);
  unsigned sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
  if (e == 0xffu)
    return (unsigned short)(sign | 0x7c00u | (m ? 0x200u : 0));
  int he = (int)e - 127 + 15;
  if (he >= 31)
    return (unsigned short)(sign | 0x7c00u);
  if (he <= 0) {
    if (he < -10)
      return (unsigned short)sign;
    m |= 0x800000u;
    unsigned shift = (unsigned)(14 - he);
    unsigned hm = m >> shift, rest = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    hm += rest > half || (rest == half && (hm & 1u));
    return (unsigned short)(sign | hm);
  }
  unsigned hm = m >> 13, rest = m & 0x1fffu;
  unsigned h = sign | ((unsigned)he << 10) | hm;
  h += rest > 0x1000u || (rest == 0x1000u && (hm & 1u));
  return (unsigned short)h;
}

extern "C" __global__ void ferry_densify(const i64 *off, const void *idx,
                                         int idx_dt, const void *val,
                                         int val_dt, i64 nrows, i64 width,
                                         const i64 *map, i64 kept, void *out,
                                         int out_dt) {
  const int es = dsize(out_dt), vs = dsize(val_dt);
  for (i64 r = blockIdx.x; r < nrows; r += gridDim.x) {
    unsigned char *row = (unsigned char *)out + (size_t)r * (size_t)kept * es;
    for (i64 b = threadIdx.x; b < kept * es; b += blockDim.x)
      row[b] = 0;
    __syncthreads();
    const i64 lo = off[r] - off[0], hi = off[r + 1] - off[0];
    for (i64 k = lo + threadIdx.x; k < hi; k += blockDim.x) {
      i64 c = as_index(idx, k, idx_dt);
      if (c < 0 || c >= width)
        continue;
      i64 at = map ? map[c] : c;
      if (at < 0)
        continue;
      unsigned char *e = row + (size_t)at * es;
      if (out_dt == val_dt) {
        const unsigned char *s = (const unsigned char *)val + (size_t)k * vs;
        for (int i = 0; i < es; i++)
          e[i] = s[i];
      } else if (out_dt == FERRY__KDT_FLOAT32) {
        *(float *)e = (float)as_double(val, k, val_dt);
      } else if (out_dt == FERRY__KDT_FLOAT64) {
        *(double *)e = as_double(val, k, val_dt);
      } else { /* float16 */
        *(unsigned short *)e = half_nearest((float)as_double(val, k, val_dt));
      }
    }
    __syncthreads();
  }
}
