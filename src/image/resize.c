/*
 * image/resize.c - the bilinear resize with antialiasing, written to give
 * the very pixels of Pillow's Image.resize(size, Image.BILINEAR) (Pillow
 * 9.4, libImaging/Resample.c), which torchvision's Resize and
 * RandomResizedCrop call on PIL images: a separable triangle filter whose
 * support grows with the reduction (support = max(1, in/out) source pixels
 * each side, weights 1 - |d| / support normalised to sum 1), the weights
 * rounded to 22-bit fixed point, the horizontal pass first (only on the
 * rows the vertical pass reads) into 8-bit rows (rounded, clamped), then
 * the vertical pass.  Coordinates are Pillow's: output pixel x has its
 * centre at box_x0 + (x + 0.5) * box_w / out_w.
 *
 * Pillow resizes the whole image and torchvision crops after (CenterCrop)
 * or before (RandomResizedCrop); here the box, the clamp to the pixels the
 * filter may read (a crop's edges, as a cropped image has them) and the
 * output's offset in the resized image say both, and only the output's
 * pixels are computed.  Coefficients and rows live in the caller's scratch.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "image/image.h"
#include "util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRECISION_BITS (32 - 8 - 2)

/* The two passes' inner loops: GCC's -O2 vectorises only loops that need
 * no scalar tail; these are the decode's second cost after the IDCT
 * (docs/image-decode.md), so they get -O3 (clang vectorises at -O2), and
 * on x86-64 Linux an AVX2 clone picked at load time (SSE2 has no 32-bit
 * multiply: 5 % more images per second on the benchmark). */
/* Not under ThreadSanitizer or AddressSanitizer: the ifunc resolver the
 * clones need runs while the library is relocated, before the sanitizer's
 * runtime is set up, and an instrumented resolver crashes every program
 * that loads libferry (the TSan tier of ./bootstrap check: signal 11). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__) && !defined(__SANITIZE_THREAD__) &&                     \
    !defined(__SANITIZE_ADDRESS__)
#define FERRY__IMG_HOT                                                         \
  __attribute__((optimize("O3"), target_clones("avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define FERRY__IMG_HOT __attribute__((optimize("O3")))
#else
#define FERRY__IMG_HOT
#endif

int ferry__img_grow(void **buf, size_t *cap, size_t bytes) {
  if (bytes <= *cap && *buf)
    return 0;
  if (bytes == 0)
    bytes = 1;
  void *p = realloc(*buf, bytes);
  if (!p)
    return FERRY_ENOMEM;
  *buf = p;
  *cap = bytes;
  return 0;
}

static double bilinear(double x) {
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return 1.0 - x;
  return 0.0;
}

static unsigned char clip8(int32_t v) {
  v >>= PRECISION_BITS;
  return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/*
 * One axis: for the n outputs at virtual indices off .. off + n - 1 (in
 * reverse when flip) of a resized size of out_size, the first source index
 * (relative to the clamp's low end) and the tap count in b[2i], b[2i + 1],
 * and ksize fixed-point weights in k[i * ksize ...].  An index outside the
 * resized image gets no taps: its pixels are 0 (CenterCrop's padding).
 */
static int axis(double in0, double len, int64_t in_size, int64_t out_size,
                int64_t off, int64_t n, int flip, int32_t **k, size_t *kcap,
                int32_t **b, size_t *bcap, ferry__img_scratch *s,
                int64_t *ksize_out) {
  double scale = len / (double)out_size;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = 1.0 * filterscale;
  int64_t ksize = (int64_t)ceil(support) * 2 + 1;
  if (ksize > 2 * (in_size + 2))
    ksize = 2 * (in_size + 2);
  size_t kb, bb;
  if (__builtin_mul_overflow((size_t)n, (size_t)ksize * sizeof(int32_t), &kb) ||
      __builtin_mul_overflow((size_t)n, 2 * sizeof(int32_t), &bb))
    return FERRY_ENOMEM;
  if (ferry__img_grow((void **)k, kcap, kb) ||
      ferry__img_grow((void **)b, bcap, bb) ||
      ferry__img_grow((void **)&s->kd, &s->kd_cap,
                      (size_t)ksize * sizeof(double)))
    return FERRY_ENOMEM;
  int32_t *kk = *k, *bounds = *b;
  double *kd = s->kd, ss = 1.0 / filterscale;
  for (int64_t i = 0; i < n; i++) {
    int64_t xx = off + (flip ? n - 1 - i : i);
    int32_t *ki = kk + i * ksize;
    memset(ki, 0, (size_t)ksize * sizeof *ki);
    bounds[2 * i] = 0;
    bounds[2 * i + 1] = 0;
    if (xx < 0 || xx >= out_size)
      continue;
    double center = in0 + ((double)xx + 0.5) * scale;
    int64_t xmin = (int64_t)(center - support + 0.5);
    if (xmin < 0)
      xmin = 0;
    int64_t xmax = (int64_t)(center + support + 0.5);
    if (xmax > in_size)
      xmax = in_size;
    xmax -= xmin;
    if (xmax < 0)
      xmax = 0;
    if (xmax > ksize)
      xmax = ksize;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; x++) {
      double w = bilinear(((double)(x + xmin) - center + 0.5) * ss);
      kd[x] = w;
      ww += w;
    }
    for (int64_t x = 0; x < xmax; x++) {
      if (ww != 0.0)
        kd[x] /= ww;
      double v = kd[x] * (double)(1 << PRECISION_BITS);
      ki[x] = (int32_t)(v < 0 ? -0.5 + v : 0.5 + v);
    }
    bounds[2 * i] = (int32_t)xmin;
    bounds[2 * i + 1] = (int32_t)xmax;
  }
  *ksize_out = ksize;
  return 0;
}

/* One row of the horizontal pass: dw outputs of c channels from in. */
FERRY__IMG_HOT
static void horizontal_row(const unsigned char *in, const int32_t *bx,
                           const int32_t *kx, int64_t ksx, int64_t dw, int c,
                           unsigned char *o) {
  const int32_t half = 1 << (PRECISION_BITS - 1);
  for (int64_t x = 0; x < dw; x++) {
    const int32_t *k = kx + x * ksx;
    int32_t xmin = bx[2 * x], xn = bx[2 * x + 1];
    const unsigned char *px = in + (size_t)xmin * (size_t)c;
    if (c == 3) {
      int32_t s0 = half, s1 = half, s2 = half;
      for (int32_t t = 0; t < xn; t++) {
        s0 += px[3 * t] * k[t];
        s1 += px[3 * t + 1] * k[t];
        s2 += px[3 * t + 2] * k[t];
      }
      o[3 * x] = clip8(s0);
      o[3 * x + 1] = clip8(s1);
      o[3 * x + 2] = clip8(s2);
    } else {
      for (int ch = 0; ch < c; ch++) {
        int32_t s0 = half;
        for (int32_t t = 0; t < xn; t++)
          s0 += px[(size_t)t * (size_t)c + (size_t)ch] * k[t];
        o[(size_t)x * (size_t)c + (size_t)ch] = clip8(s0);
      }
    }
  }
}

/* Two rows of the horizontal pass of 3 channels (in and in + stride, into
 * o and o + ostride): each output's taps loaded once for both rows. */
FERRY__IMG_HOT
static void horizontal_rows3(const unsigned char *in, size_t stride,
                             const int32_t *bx, const int32_t *kx, int64_t ksx,
                             int64_t dw, unsigned char *o, size_t ostride) {
  const int32_t half = 1 << (PRECISION_BITS - 1);
  for (int64_t x = 0; x < dw; x++) {
    const int32_t *k = kx + x * ksx;
    int32_t xn = bx[2 * x + 1];
    const unsigned char *p = in + (size_t)bx[2 * x] * 3, *q = p + stride;
    int32_t a0 = half, a1 = half, a2 = half, b0 = half, b1 = half, b2 = half;
    for (int32_t t = 0; t < xn; t++) {
      int32_t w = k[t];
      a0 += p[3 * t] * w;
      a1 += p[3 * t + 1] * w;
      a2 += p[3 * t + 2] * w;
      b0 += q[3 * t] * w;
      b1 += q[3 * t + 1] * w;
      b2 += q[3 * t + 2] * w;
    }
    unsigned char *oa = o + 3 * x, *ob = oa + ostride;
    oa[0] = clip8(a0);
    oa[1] = clip8(a1);
    oa[2] = clip8(a2);
    ob[0] = clip8(b0);
    ob[1] = clip8(b1);
    ob[2] = clip8(b2);
  }
}

/*
 * The horizontal pass in SSSE3, the same integers as the scalar loops
 * (tests/image/test_image.c compares both on every shape it draws): a
 * weight k (0 .. 2^22) is split into k >> 11 and k & 2047, both int16, so
 * that pmaddwd (int16 pairs into int32 sums) makes p * (k >> 11) and
 * p * (k & 2047) exactly, and (hi << 11) + lo is the scalar's sum.  One
 * 16-byte load holds 5 pixels of 3 channels: two shuffles put taps (0, 1)
 * and (2, 3) of each channel side by side as int16, each multiplied by its
 * pair of weights; an output with more taps takes a load per 4.  Two rows
 * share each output's weights.  Only 3 channels; the loads read up to 16
 * bytes past a group's first pixel, so a row whose reads would pass the
 * source's end is left to the scalar loop.
 */
#if defined(__GNUC__) && defined(__x86_64__)
#define FERRY__IMG_SSSE3 1
#include <immintrin.h>

/* Per output x and group of 4 taps, 4 vectors of 8 int16: taps (0, 1)'s
 * high and low weights, taps (2, 3)'s, each pair repeated for the 3
 * channels, then 0, 0.  *need: the bytes a row's loads reach from its
 * first pixel. */
static int simd_weights(const int32_t *kx, const int32_t *bx, int64_t ksx,
                        int64_t dw, ferry__img_scratch *s, size_t *need) {
  int64_t groups = (ksx + 3) / 4;
  size_t bytes;
  if (__builtin_mul_overflow((size_t)dw, (size_t)groups * 64, &bytes) ||
      ferry__img_grow((void **)&s->kv, &s->kv_cap, bytes ? bytes : 64))
    return FERRY_ENOMEM;
  *need = 0;
  for (int64_t x = 0; x < dw; x++) {
    int32_t xn = bx[2 * x + 1];
    const int32_t *k = kx + x * ksx;
    for (int64_t g = 0; g < groups; g++) {
      int16_t *v = s->kv + (x * groups + g) * 32;
      for (int pair = 0; pair < 2; pair++) {
        int64_t t0 = 4 * g + 2 * pair, t1 = t0 + 1;
        int32_t k0 = t0 < xn ? k[t0] : 0, k1 = t1 < xn ? k[t1] : 0;
        int16_t *hi = v + 16 * pair, *lo = hi + 8;
        for (int ch = 0; ch < 3; ch++) {
          hi[2 * ch] = (int16_t)(k0 >> 11);
          hi[2 * ch + 1] = (int16_t)(k1 >> 11);
          lo[2 * ch] = (int16_t)(k0 & 2047);
          lo[2 * ch + 1] = (int16_t)(k1 & 2047);
        }
        hi[6] = hi[7] = lo[6] = lo[7] = 0;
      }
    }
    if (xn > 0) {
      size_t reach = ((size_t)bx[2 * x] + 4 * (size_t)((xn - 1) / 4)) * 3 + 16;
      if (reach > *need)
        *need = reach;
    }
  }
  return 0;
}

/* The sums of one output pixel (hi, lo) as 3 bytes at o. */
__attribute__((target("ssse3"))) static inline void
simd_store3(__m128i hi, __m128i lo, unsigned char *o) {
  const __m128i half = _mm_set1_epi32(1 << (PRECISION_BITS - 1));
  __m128i v = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(hi, 11), lo), half);
  v = _mm_srai_epi32(v, PRECISION_BITS);
  v = _mm_packs_epi32(v, v);
  v = _mm_packus_epi16(v, v);
  uint32_t w = (uint32_t)_mm_cvtsi128_si32(v);
  memcpy(o, &w, 3);
}

/* Rows a and b (b may be NULL: a alone) of the horizontal pass into oa, ob.
 */
__attribute__((target("ssse3"))) static void
simd_rows3(const unsigned char *a, const unsigned char *b, const int32_t *bx,
           const int16_t *kv, int64_t groups, int64_t dw, unsigned char *oa,
           unsigned char *ob) {
  const __m128i m01 =
      _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m128i m23 =
      _mm_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  for (int64_t x = 0; x < dw; x++) {
    int32_t xn = bx[2 * x + 1];
    size_t at = (size_t)bx[2 * x] * 3;
    const __m128i *w = (const __m128i *)(const void *)(kv + x * groups * 32);
    __m128i ha = _mm_setzero_si128(), la = ha, hb = ha, lb = ha;
    for (int32_t g = 0; 4 * g < xn; g++, at += 12, w += 4) {
      __m128i wh01 = _mm_loadu_si128(w), wl01 = _mm_loadu_si128(w + 1);
      __m128i wh23 = _mm_loadu_si128(w + 2), wl23 = _mm_loadu_si128(w + 3);
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(a + at));
      __m128i p01 = _mm_shuffle_epi8(v, m01), p23 = _mm_shuffle_epi8(v, m23);
      ha = _mm_add_epi32(ha, _mm_add_epi32(_mm_madd_epi16(p01, wh01),
                                           _mm_madd_epi16(p23, wh23)));
      la = _mm_add_epi32(la, _mm_add_epi32(_mm_madd_epi16(p01, wl01),
                                           _mm_madd_epi16(p23, wl23)));
      if (b) {
        v = _mm_loadu_si128((const __m128i *)(const void *)(b + at));
        p01 = _mm_shuffle_epi8(v, m01);
        p23 = _mm_shuffle_epi8(v, m23);
        hb = _mm_add_epi32(hb, _mm_add_epi32(_mm_madd_epi16(p01, wh01),
                                             _mm_madd_epi16(p23, wh23)));
        lb = _mm_add_epi32(lb, _mm_add_epi32(_mm_madd_epi16(p01, wl01),
                                             _mm_madd_epi16(p23, wl23)));
      }
    }
    simd_store3(ha, la, oa + 3 * x);
    if (b)
      simd_store3(hb, lb, ob + 3 * x);
  }
}

static int have_ssse3(void) { return __builtin_cpu_supports("ssse3"); }

/* simd_rows3 for two rows in AVX2: row a in the low 128-bit lane, row b in
 * the high one (shuffles and pmaddwd work within lanes), one output's
 * weights broadcast to both. */
__attribute__((target("avx2"))) static void
simd_rows3_avx2(const unsigned char *a, const unsigned char *b,
                const int32_t *bx, const int16_t *kv, int64_t groups,
                int64_t dw, unsigned char *oa, unsigned char *ob) {
  const __m256i m01 = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1,
                                       -1, -1, -1, -1, 0, -1, 3, -1, 1, -1, 4,
                                       -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m256i m23 = _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11,
                                       -1, -1, -1, -1, -1, 6, -1, 9, -1, 7, -1,
                                       10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  const __m256i half = _mm256_set1_epi32(1 << (PRECISION_BITS - 1));
  for (int64_t x = 0; x < dw; x++) {
    int32_t xn = bx[2 * x + 1];
    size_t at = (size_t)bx[2 * x] * 3;
    const __m128i *w = (const __m128i *)(const void *)(kv + x * groups * 32);
    __m256i h = _mm256_setzero_si256(), l = h;
    for (int32_t g = 0; 4 * g < xn; g++, at += 12, w += 4) {
      __m256i v = _mm256_inserti128_si256(
          _mm256_castsi128_si256(
              _mm_loadu_si128((const __m128i *)(const void *)(a + at))),
          _mm_loadu_si128((const __m128i *)(const void *)(b + at)), 1);
      __m256i p01 = _mm256_shuffle_epi8(v, m01),
              p23 = _mm256_shuffle_epi8(v, m23);
      __m256i wh01 = _mm256_broadcastsi128_si256(_mm_loadu_si128(w)),
              wl01 = _mm256_broadcastsi128_si256(_mm_loadu_si128(w + 1)),
              wh23 = _mm256_broadcastsi128_si256(_mm_loadu_si128(w + 2)),
              wl23 = _mm256_broadcastsi128_si256(_mm_loadu_si128(w + 3));
      h = _mm256_add_epi32(h, _mm256_add_epi32(_mm256_madd_epi16(p01, wh01),
                                               _mm256_madd_epi16(p23, wh23)));
      l = _mm256_add_epi32(l, _mm256_add_epi32(_mm256_madd_epi16(p01, wl01),
                                               _mm256_madd_epi16(p23, wl23)));
    }
    __m256i s =
        _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 11), l), half);
    s = _mm256_srai_epi32(s, PRECISION_BITS);
    s = _mm256_packs_epi32(s, s);
    s = _mm256_packus_epi16(s, s);
    uint32_t wa = (uint32_t)_mm256_extract_epi32(s, 0),
             wb = (uint32_t)_mm256_extract_epi32(s, 4);
    memcpy(oa + 3 * x, &wa, 3);
    memcpy(ob + 3 * x, &wb, 3);
  }
}

static int have_avx2(void) { return __builtin_cpu_supports("avx2"); }

/* One output row of the vertical pass in AVX2 (vertical_row's integers):
 * taps in pairs, the two rows' bytes interleaved as int16 pairs and
 * multiplied by the pair's weights (split as in the horizontal pass) with
 * pmaddwd, 16 outputs at a time in registers; the rest scalar. */
__attribute__((target("avx2"))) static void
vertical_row_avx2(const unsigned char *in, size_t n, const int32_t *k,
                  int32_t yn, unsigned char *restrict o) {
  const __m256i half = _mm256_set1_epi32(1 << (PRECISION_BITS - 1));
  const __m128i zero = _mm_setzero_si128();
  size_t x = 0;
  for (; x + 16 <= n; x += 16) {
    __m256i h0 = _mm256_setzero_si256(), l0 = h0, h1 = h0, l1 = h0;
    for (int32_t t = 0; t < yn; t += 2) {
      int32_t k0 = k[t], k1 = t + 1 < yn ? k[t + 1] : 0;
      __m128i r0 = _mm_loadu_si128(
          (const __m128i *)(const void *)(in + (size_t)t * n + x));
      __m128i r1 =
          t + 1 < yn
              ? _mm_loadu_si128(
                    (const __m128i *)(const void *)(in + (size_t)(t + 1) * n +
                                                    x))
              : zero;
      __m256i p0 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)),
              p1 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1));
      __m256i wh = _mm256_set1_epi32((int32_t)(((uint32_t)(k1 >> 11) << 16) |
                                               (uint32_t)(k0 >> 11))),
              wl = _mm256_set1_epi32((int32_t)(((uint32_t)(k1 & 2047) << 16) |
                                               (uint32_t)(k0 & 2047)));
      h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(p0, wh));
      l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(p0, wl));
      h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(p1, wh));
      l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(p1, wl));
    }
    __m256i s0 = _mm256_srai_epi32(
        _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h0, 11), l0), half),
        PRECISION_BITS);
    __m256i s1 = _mm256_srai_epi32(
        _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h1, 11), l1), half),
        PRECISION_BITS);
    __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi32(s0, s1), 0xD8);
    v = _mm256_permute4x64_epi64(_mm256_packus_epi16(v, v), 0x08);
    _mm_storeu_si128((__m128i *)(void *)(o + x), _mm256_castsi256_si128(v));
  }
  const int32_t h = 1 << (PRECISION_BITS - 1);
  for (; x < n; x++) {
    int32_t acc = h;
    for (int32_t t = 0; t < yn; t++)
      acc += in[(size_t)t * n + x] * k[t];
    o[x] = clip8(acc);
  }
}
#endif

/* One output row of the vertical pass: yn taps of k over the rows at in
 * (n bytes apart), into o. */
FERRY__IMG_HOT
static void vertical_row(const unsigned char *in, size_t n, const int32_t *k,
                         int32_t yn, int32_t *restrict acc,
                         unsigned char *restrict o) {
  const int32_t half = 1 << (PRECISION_BITS - 1);
  for (size_t x = 0; x < n; x++)
    acc[x] = half;
  for (int32_t t = 0; t < yn; t++) {
    const unsigned char *row = in + (size_t)t * n;
    int32_t kt = k[t];
    for (size_t x = 0; x < n; x++)
      acc[x] += row[x] * kt;
  }
  for (size_t x = 0; x < n; x++)
    o[x] = clip8(acc[x]);
}

int ferry__img_bilinear(const unsigned char *src, int64_t sw, int64_t sh, int c,
                        const ferry__img_resample *r, unsigned char *dst,
                        int64_t dw, int64_t dh, ferry__img_scratch *s,
                        char *why, size_t wl) {
  int64_t ksx, ksy;
  int rc;
  if (r->lo_x < 0 || r->hi_x > sw || r->lo_x >= r->hi_x || r->lo_y < 0 ||
      r->hi_y > sh || r->lo_y >= r->hi_y || r->out_w < 1 || r->out_h < 1 ||
      !(r->w > 0) || !(r->h > 0)) {
    if (why && wl)
      snprintf(why, wl,
               "image resize: box [%lld, %lld) x [%lld, %lld) of a %lldx%lld "
               "image",
               (long long)r->lo_x, (long long)r->hi_x, (long long)r->lo_y,
               (long long)r->hi_y, (long long)sw, (long long)sh);
    return FERRY_EINTERNAL;
  }
  int64_t in_w = r->hi_x - r->lo_x, in_h = r->hi_y - r->lo_y;
  rc = axis(r->x0 - (double)r->lo_x, r->w, in_w, r->out_w, r->off_x, dw,
            r->flip, &s->kx, &s->kx_cap, &s->bx, &s->bx_cap, s, &ksx);
  if (rc == 0)
    rc = axis(r->y0 - (double)r->lo_y, r->h, in_h, r->out_h, r->off_y, dh, 0,
              &s->ky, &s->ky_cap, &s->by, &s->by_cap, s, &ksy);
  if (rc) {
    if (why && wl)
      snprintf(why, wl, "image resize: out of memory for coefficients");
    return rc;
  }
  int64_t first = -1, last = -1;
  for (int64_t y = 0; y < dh; y++) {
    if (s->by[2 * y + 1] == 0)
      continue;
    int64_t a = s->by[2 * y], e = a + s->by[2 * y + 1];
    if (first < 0 || a < first)
      first = a;
    if (e > last)
      last = e;
  }
  size_t out_row = (size_t)dw * (size_t)c;
  if (first < 0) {
    memset(dst, 0, out_row * (size_t)dh);
    return 0;
  }
  size_t nrows = (size_t)(last - first);
  if (ferry__img_grow((void **)&s->rows, &s->rows_cap, nrows * out_row)) {
    if (why && wl)
      snprintf(why, wl, "image resize: out of memory for %zu rows", nrows);
    return FERRY_ENOMEM;
  }
  size_t stride = (size_t)sw * (size_t)c;
  const unsigned char *base =
      src + (size_t)r->lo_y * stride + (size_t)r->lo_x * (size_t)c;
  /* Horizontal pass: rows first .. last of the region, every output
   * column. */
  size_t yy = 0;
#ifdef FERRY__IMG_SSSE3
  size_t need = 0;
  if (c == 3 && !s->no_simd && have_ssse3() &&
      simd_weights(s->kx, s->bx, ksx, dw, s, &need) == 0) {
    /* the rows whose loads stay inside src (its last may not) */
    const unsigned char *end = src + (size_t)sh * stride;
    int64_t groups = (ksx + 3) / 4;
    size_t safe = 0;
    while (safe < nrows &&
           (size_t)(end - (base + ((size_t)first + safe) * stride)) >= need)
      safe++;
    if (have_avx2() && s->no_simd != 2)
      for (; yy + 2 <= safe; yy += 2)
        simd_rows3_avx2(base + ((size_t)first + yy) * stride,
                        base + ((size_t)first + yy + 1) * stride, s->bx, s->kv,
                        groups, dw, s->rows + yy * out_row,
                        s->rows + (yy + 1) * out_row);
    for (; yy + 2 <= safe; yy += 2)
      simd_rows3(base + ((size_t)first + yy) * stride,
                 base + ((size_t)first + yy + 1) * stride, s->bx, s->kv, groups,
                 dw, s->rows + yy * out_row, s->rows + (yy + 1) * out_row);
    for (; yy < safe; yy++)
      simd_rows3(base + ((size_t)first + yy) * stride, NULL, s->bx, s->kv,
                 groups, dw, s->rows + yy * out_row, NULL);
  }
#endif
  if (c == 3)
    for (; yy + 2 <= nrows; yy += 2)
      horizontal_rows3(base + ((size_t)first + yy) * stride, stride, s->bx,
                       s->kx, ksx, dw, s->rows + yy * out_row, out_row);
  for (; yy < nrows; yy++)
    horizontal_row(base + ((size_t)first + yy) * stride, s->bx, s->kx, ksx, dw,
                   c, s->rows + yy * out_row);
  /* Vertical pass, a row at a time: each tap's row scaled into 32-bit
   * sums across the whole output row (a loop compilers vectorise). */
  if (ferry__img_grow((void **)&s->acc, &s->acc_cap,
                      out_row * sizeof(int32_t))) {
    if (why && wl)
      snprintf(why, wl, "image resize: out of memory for a row");
    return FERRY_ENOMEM;
  }
  int32_t *acc = s->acc;
#ifdef FERRY__IMG_SSSE3
  int vavx = !s->no_simd && have_avx2();
#endif
  for (int64_t y = 0; y < dh; y++) {
    const int32_t *k = s->ky + y * ksy;
    int32_t yn = s->by[2 * y + 1];
    unsigned char *o = dst + (size_t)y * out_row;
    if (yn == 0) {
      memset(o, 0, out_row);
      continue;
    }
    const unsigned char *in =
        s->rows + (size_t)(s->by[2 * y] - first) * out_row;
#ifdef FERRY__IMG_SSSE3
    if (vavx) {
      vertical_row_avx2(in, out_row, k, yn, o);
      continue;
    }
#endif
    vertical_row(in, out_row, k, yn, acc, o);
  }
  /* A column outside the resized image (padding) has no taps: its rows
   * held (1 << 21) >> 22 = 0 already. */
  return 0;
}
