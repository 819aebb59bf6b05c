/*
 * bytes.c - byte order and path helpers shared by the core and the backends.
 */
#include "config.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* One loop per element size, each element loaded, swapped (one bswap
 * instruction) and stored whole (memcpy, no alignment assumed): 3x the
 * byte-by-byte loop, which ran at a tenth of memcpy's speed (netCDF
 * classic data is big-endian: every batch of it is swapped). */
#if defined(__GNUC__) || defined(__clang__)
#define SWAP_LOOP(bits)                                                        \
  for (size_t i = 0; i < n; i++) {                                             \
    uint##bits##_t v;                                                          \
    memcpy(&v, p + i * sizeof v, sizeof v);                                    \
    v = __builtin_bswap##bits(v);                                              \
    memcpy(p + i * sizeof v, &v, sizeof v);                                    \
  }
#endif

/* x86-64: SSSE3's byte shuffle swaps 16 bytes per instruction, as fast as
 * the memcpy before it (the baseline SSE2 cannot shuffle bytes, so the
 * loops above stay scalar there); chosen at run time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang_analyzer__)
#include <tmmintrin.h>
#define HAVE_SSSE3_SWAP 1
__attribute__((target("ssse3"))) static size_t
swap_ssse3(unsigned char *p, size_t nbytes, size_t elsize) {
  static const unsigned char m2[16] = {1, 0, 3,  2,  5,  4,  7,  6,
                                       9, 8, 11, 10, 13, 12, 15, 14};
  static const unsigned char m4[16] = {3,  2,  1, 0, 7,  6,  5,  4,
                                       11, 10, 9, 8, 15, 14, 13, 12};
  static const unsigned char m8[16] = {7,  6,  5,  4,  3,  2,  1, 0,
                                       15, 14, 13, 12, 11, 10, 9, 8};
  const unsigned char *m = elsize == 2 ? m2 : elsize == 4 ? m4 : m8;
  __m128i mask = _mm_loadu_si128((const __m128i *)(const void *)m);
  size_t i = 0;
  for (; i + 16 <= nbytes; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(void *)(p + i));
    _mm_storeu_si128((__m128i *)(void *)(p + i), _mm_shuffle_epi8(v, mask));
  }
  return i / elsize; /* elements swapped */
}
#endif

void ferry__byteswap(void *buf, size_t n, size_t elsize) {
  unsigned char *p = buf;
  if (elsize < 2)
    return;
#ifdef HAVE_SSSE3_SWAP
  /* No cached flag: worker threads swap concurrently, and the test reads
   * a word libgcc filled in before main. */
  if (__builtin_cpu_supports("ssse3") &&
      (elsize == 2 || elsize == 4 || elsize == 8) && n <= SIZE_MAX / elsize) {
    size_t done = swap_ssse3(p, n * elsize, elsize);
    p += done * elsize;
    n -= done;
  }
#endif
#ifdef SWAP_LOOP
  switch (elsize) {
  case 2: SWAP_LOOP(16) return;
  case 4: SWAP_LOOP(32) return;
  case 8: SWAP_LOOP(64) return;
  default: break;
  }
#endif
  for (size_t i = 0; i < n; i++, p += elsize)
    for (size_t a = 0, b = elsize - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

char *ferry__join_path(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  int slash = a > 0 && dir[a - 1] != '/';
  char *s = malloc(a + (size_t)slash + b + 1);
  if (!s)
    return NULL;
  memcpy(s, dir, a);
  if (slash)
    s[a] = '/';
  memcpy(s + a + slash, name, b + 1);
  return s;
}

int ferry__cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t ferry__last_le(const int64_t *v, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (v[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
