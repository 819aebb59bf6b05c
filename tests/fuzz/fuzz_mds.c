/*
 * fuzz_mds.c - the MDS parsers (backends/mds_format.c) on arbitrary bytes
 * held in memory: the bytes as a shard (header, offsets, configuration,
 * every sample's column sizes, dynamic ndarray prefixes, str_int and
 * str_float digits), with every column and with vars=img,an; and the bytes
 * as index.json.  Each must accept or refuse with a message; a shard it
 * accepts has every selected value inside the shard and in increasing
 * order, a dynamic ndarray's values a whole number of elements (of whole
 * rows of its inner shape when every sample has the same dimensions after
 * the first, at most FERRY__MDS_MAX_INNER of them, and its first sample's
 * offset inside the shard); an index it accepts has plain file names and
 * at most 32 digests per file, each a name of 1 to 32 bytes and 1 to 256
 * hex digits.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/mds.h"
#include "fuzz.h"

#include <string.h>

static void shard(const uint8_t *data, size_t size, const char *vars) {
  ferry__mds_mem mem = {.p = data, .n = size};
  ferry__mds_src src = {.read = ferry__mds_mem_read,
                        .ctx = &mem,
                        .size = (int64_t)size,
                        .path = "fuzz.mds",
                        .vars = vars};
  ferry__mds_shard s;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__mds_shard_scan(&src, &s, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0] && s.cols == NULL);
    return;
  }
  FUZZ_CHECK(rc == 0 && s.ncols >= 1 && s.n >= 0 && s.size == (int64_t)size);
  for (int c = 0; c < s.ncols; c++) {
    const ferry__mds_col *col = &s.cols[c];
    if (!col->selected)
      continue;
    FUZZ_CHECK(col->kind != 0 && col->pos != NULL);
    if (col->kind == FERRY__MDS_STRINT || col->kind == FERRY__MDS_STRFLOAT)
      continue;
    int64_t end = 0, row = (int64_t)ferry_dtype_size(col->dtype);
    if (col->kind == FERRY__MDS_DYNARRAY) {
      FUZZ_CHECK((s.n > 0) == (col->dyn_ndim > 0) && col->dyn_ndim <= 63);
      FUZZ_CHECK(s.n == 0 ||
                 (col->dyn_at >= 0 && col->dyn_at < col->pos[0] &&
                  col->pos[0] - col->dyn_at <= 2 + 8 * col->dyn_ndim));
      FUZZ_CHECK(!col->inner_same || col->dyn_ndim - 1 <= FERRY__MDS_MAX_INNER);
      for (int k = 0; col->inner_same && k < col->dyn_ndim - 1; k++) {
        FUZZ_CHECK(col->inner[k] >= 1 && col->inner[k] <= (int64_t)size);
        row *= col->inner[k];
        FUZZ_CHECK(row <= (int64_t)size);
      }
    }
    for (int64_t i = 0; i < s.n; i++) {
      int64_t len = col->len ? col->len[i] : col->fixed;
      FUZZ_CHECK(len >= 0 && col->pos[i] >= end &&
                 col->pos[i] <= (int64_t)size - len);
      if (col->kind == FERRY__MDS_DYNARRAY)
        FUZZ_CHECK(len > 0 && len % row == 0);
      end = col->pos[i] + len;
    }
  }
  ferry__mds_shard_free(&s);
}

static void check_hashes(const ferry__mds_hash *h, int n) {
  FUZZ_CHECK(n >= 0 && n <= FERRY__MDS_MAX_HASHES && (n == 0 || h));
  for (int k = 0; k < n; k++) {
    size_t a = strlen(h[k].algo), x = strlen(h[k].hex);
    FUZZ_CHECK(a >= 1 && a <= 32 && x >= 1 && x <= FERRY__MDS_MAX_HEX &&
               strspn(h[k].hex, "0123456789abcdefABCDEF") == x);
  }
}

static void index_json(const uint8_t *data, size_t size) {
  ferry__mds_index x;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc =
      ferry__mds_index_parse((const char *)data, size, "index.json", &x, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0] && x.e == NULL);
    return;
  }
  if (rc == 0)
    return;
  FUZZ_CHECK(x.n >= 1);
  for (int64_t k = 0; k < x.n; k++) {
    FUZZ_CHECK(x.e[k].raw && x.e[k].raw[0] && !strchr(x.e[k].raw, '/'));
    FUZZ_CHECK(!x.e[k].zip || (!strchr(x.e[k].zip, '/') && x.e[k].compression));
    check_hashes(x.e[k].raw_hash, x.e[k].nraw_hash);
    check_hashes(x.e[k].zip_hash, x.e[k].nzip_hash);
  }
  ferry__mds_index_free(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  shard(data, size, NULL);
  shard(data, size, "img,an");
  index_json(data, size);
  return 0;
}
