/*
 * bytes.c - byte order and path helpers shared by the core and the backends.
 */
#include "config.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void ferry__byteswap(void *buf, size_t n, size_t elsize) {
  unsigned char *p = buf;
  if (elsize < 2)
    return;
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
