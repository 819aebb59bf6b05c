/*
 * bytes.c - byte order and path helpers shared by the core and the backends.
 */
#include "config.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* One loop per element size, each element loaded, swapped and stored whole
 * (memcpy, no alignment assumed): compilers turn these loops into vector
 * shuffles, where the byte-by-byte loop ran at a fraction of memory speed
 * (netCDF classic data is big-endian: every batch of it is swapped). */
#if defined(__GNUC__) || defined(__clang__)
#define SWAP_LOOP(bits)                                                        \
  for (size_t i = 0; i < n; i++) {                                             \
    uint##bits##_t v;                                                          \
    memcpy(&v, p + i * sizeof v, sizeof v);                                    \
    v = __builtin_bswap##bits(v);                                              \
    memcpy(p + i * sizeof v, &v, sizeof v);                                    \
  }
#endif

void ferry__byteswap(void *buf, size_t n, size_t elsize) {
  unsigned char *p = buf;
  if (elsize < 2)
    return;
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
