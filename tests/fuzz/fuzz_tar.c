/*
 * fuzz_tar.c - the tar member scan and WebDataset sample index
 * (backends/tar.c) on arbitrary bytes held in memory, with every
 * extension, and with vars=jpg,cls,npy and missing=cls=-1,jpg=,npy=.  It must
 * accept or refuse with a message; what it accepts has every member's payload
 * (an npy member's values: their .npy header parsed, bounded by the member)
 * inside the bytes, members of one variable in increasing order without
 * overlap, an npy variable's samples whole rows (one for 0-d arrays), each
 * sample starting before its members, and a sidecar made from it that
 * checks as valid.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/tar.h"
#include "fuzz.h"
#include "util/record.h"

#include <string.h>

static void one(const uint8_t *data, size_t size, const char *select,
                const char *missing) {
  ferry__tar_mem mem = {.p = data, .n = size};
  ferry__tar_src src = {.read = ferry__tar_mem_read,
                        .ctx = &mem,
                        .size = (int64_t)size,
                        .path = "fuzz.tar"};
  ferry__tar_index x;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__tar_index_build(&src, select, missing, &x, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return;
  }
  FUZZ_CHECK(x.n >= 1 && x.nvars >= 1 && x.end <= (int64_t)size);
  for (int64_t i = 0; i < x.n; i++)
    FUZZ_CHECK(x.start[i] >= 0 && (i == 0 || x.start[i] > x.start[i - 1]));
  for (int v = 0; v < x.nvars; v++) {
    const ferry__tar_var *t = &x.vars[v];
    int64_t prev_end = 0;
    /* npy: a dtype of the parser's, rows of whole row_bytes */
    FUZZ_CHECK(t->kind != FERRY__TAR_NPY ||
               (t->npy_first >= 0 && t->npy_first < x.n &&
                t->npy_row_bytes > 0 && t->npy_ndim >= 0 &&
                t->npy_ndim <= FERRY_MAX_DIMS &&
                (int)t->npy_dtype < FERRY_DTYPE_COUNT));
    for (int64_t i = 0; i < x.n; i++) {
      FUZZ_CHECK(t->len[i] >= 0);
      if (t->kind == FERRY__TAR_NPY)
        FUZZ_CHECK(t->len[i] % t->npy_row_bytes == 0 &&
                   (t->npy_ndim > 0 || t->len[i] == t->npy_row_bytes));
      if (t->kind == FERRY__TAR_INT)
        continue;
      FUZZ_CHECK(t->pos[i] >= prev_end &&
                 (t->len[i] == 0 || t->pos[i] > x.start[i]) &&
                 t->len[i] <= (int64_t)size - t->pos[i]);
      prev_end = t->pos[i] + t->len[i];
    }
  }
  unsigned char *side = malloc(((size_t)x.n + 1) * 8);
  FUZZ_CHECK(side != NULL);
  for (int64_t i = 0; i <= x.n; i++)
    ferry__le64_store(side + 8 * i, (uint64_t)(i < x.n ? x.start[i] : x.end));
  char why[160];
  FUZZ_CHECK(ferry__tar_sidecar_check(side, ((size_t)x.n + 1) * 8, &x, why,
                                      sizeof why) == 0);
  FUZZ_CHECK(ferry__tar_sidecar_check(side, (size_t)x.n * 8, &x, why,
                                      sizeof why) == 1);
  free(side);
  ferry__tar_index_free(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, NULL, NULL);
  one(data, size, "jpg,cls,npy", "cls=-1,jpg=,npy=");
  return 0;
}
