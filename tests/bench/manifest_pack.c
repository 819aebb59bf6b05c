/*
 * manifest_pack.c - the packed manifest's cost: ferry__manifest_pack,
 * _unpack and _hash of a manifest of N parts of two .npy variables (22 MB
 * packed for the default 200000), timed once each.  Built by hand, against
 * the sources of one tree (run it for two trees, alternated, to compare;
 * docs/decisions/0044-one-record-writer.md):
 *
 *   W=/path/to/ferry  # configured and built in $W/build
 *   gcc -O2 -DHAVE_CONFIG_H -DFERRY_BUILDING -I$W/build -I$W/include \
 *       -I$W/src $(mpicc --showme:compile) $W/tests/bench/manifest_pack.c \
 *       $W/src/core/manifest.c $W/src/util/error.c $W/src/util/dtype.c \
 *       $W/src/util/hash.c $W/src/util/bytes.c $W/src/util/record.c \
 *       -o manifest_pack $(mpicc --showme:link)
 *   ./manifest_pack 200000
 *
 * (a tree before issue 24 has no src/util/record.c: leave it out).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "core/manifest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  int64_t np = argc > 1 ? atoll(argv[1]) : 200000;
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.backend = strdup("npy");
  m.spec = strdup("data/part-*");
  m.nvars = 2;
  m.vars = calloc(2, sizeof *m.vars);
  m.vars[0].name = strdup("x");
  m.vars[0].dtype = FERRY_FLOAT32;
  m.vars[0].row_ndim = 1;
  m.vars[0].row_shape[0] = 16;
  m.vars[0].row_bytes = 64;
  m.vars[0].storage = strdup("");
  m.vars[1].name = strdup("y");
  m.vars[1].dtype = FERRY_INT64;
  m.vars[1].row_bytes = 8;
  m.vars[1].storage = strdup("");
  m.nparts = np;
  m.parts = calloc(np, sizeof *m.parts);
  for (int64_t p = 0; p < np; p++) {
    ferry__part *pt = &m.parts[p];
    pt->num_samples = 100;
    pt->first_sample = 100 * p;
    pt->paths = calloc(2, sizeof *pt->paths);
    pt->data_offset = calloc(2, 8);
    pt->file_size = calloc(2, 8);
    for (int v = 0; v < 2; v++) {
      char b[64];
      snprintf(b, sizeof b, "data/part-%07lld/%c.npy", (long long)p,
               v ? 'y' : 'x');
      pt->paths[v] = strdup(b);
      pt->data_offset[v] = 128;
      pt->file_size[v] = 128 + 100 * (v ? 8 : 64);
    }
  }
  m.num_samples = 100 * np;
  double t0 = now();
  void *buf;
  size_t len;
  if (ferry__manifest_pack(&m, &buf, &len))
    return 1;
  double t1 = now();
  ferry__manifest u;
  ferry__err e;
  memset(&e, 0, sizeof e);
  if (ferry__manifest_unpack(buf, len, &u, &e)) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  double t2 = now();
  uint64_t h = ferry__manifest_hash(&m);
  double t3 = now();
  printf("%zu bytes hash %016llx  pack %.1f ms  unpack %.1f ms  hash %.1f ms\n",
         len, (unsigned long long)h, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
         (t3 - t2) * 1e3);
  return 0;
}
