/*
 * fuzz_parquet_ragged.c - the decoder of a ragged Parquet column chunk
 * (backends/parquet/ragged.c: pages, repetition and definition levels,
 * PLAIN, dictionary and DELTA byte arrays) on arbitrary bytes.  The first
 * byte picks the column (bit 0: a LIST of optional int32 elements in an
 * optional list, else an optional BYTE_ARRAY; bit 1: nulls served per
 * null_fill), the second the rows of the row group (1-64); the rest is the
 * column chunk, uncompressed.  Rank 0's pass (the lengths only) must decode
 * or refuse with a message; what it decodes, the read pass must decode
 * again from the same bytes into exactly the values the lengths say (a
 * read that disagrees with the open would be an error on a good file) --
 * or, for a list, whose values the open does not look at, refuse them as
 * corrupt.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/parquet.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  int list = data[0] & 1, nulls = (data[0] >> 1) & 1;
  int64_t rows = data[1] % 64 + 1;
  const unsigned char *chunk = data + 2;
  size_t len = size - 2;
  pq_rec r;
  memset(&r, 0, sizeof r);
  r.type = list ? PQ_INT32 : PQ_BYTE_ARRAY;
  r.dtype = list ? FERRY_INT32 : FERRY_UINT8;
  r.max_def = list ? 3 : 1;
  r.max_rep = list ? 1 : 0;
  r.rep_def = list ? 2 : 0;
  r.is_list = list;
  r.ragged = list ? PQ_RAGGED_LIST : PQ_RAGGED_BYTES;
  r.k = 1;
  pq_rg_rec g = {
      0, rows, 4, (int64_t)len, (int64_t)len, 1 << 20, 0, PQ_CODEC_NONE,
      0, 0,    0};
  static const unsigned char fill[8] = {7, 0, 0, 0};
  int64_t lens[64], roff[65];
  pq_job j;
  memset(&j, 0, sizeof j);
  j.rec = &r;
  j.rg = &g;
  j.chunk = chunk;
  j.file = "fuzz.parquet";
  j.var = "v";
  j.fill = nulls ? fill : NULL;
  j.null_empty = nulls;
  j.lens = lens;
  pq_scratch s;
  memset(&s, 0, sizeof s);
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__pq_decode_ragged(&j, &s, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code == rc && err.msg[0]);
    ferry__pq_scratch_free(&s);
    return 0;
  }
  roff[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    FUZZ_CHECK(lens[i] >= 0 && lens[i] <= ((int64_t)1 << 40));
    roff[i + 1] = roff[i] + lens[i];
  }
  size_t el = list ? 4 : 1;
  /* a value's bytes are its page's (PLAIN), a dictionary entry's, or a
   * prefix of the value before plus its own (DELTA_BYTE_ARRAY): each at
   * most the chunk's; a list's elements are bounded by the levels (RLE
   * runs make many of few bytes): read them again while that stays small */
  FUZZ_CHECK(list || (size_t)roff[rows] <= (size_t)rows * len);
  if (roff[rows] <= ((int64_t)1 << 20)) {
    unsigned char *out = malloc((size_t)roff[rows] * el + 1);
    if (out) {
      j.lens = NULL;
      j.roff = roff;
      j.out = out;
      rc = ferry__pq_decode_ragged(&j, &s, &err);
      /* byte arrays' values are parsed at open too; a list's values only
       * by the read, which may refuse them (corrupt values), never with
       * lengths that disagree with the open's */
      FUZZ_CHECK(rc == 0 ||
                 (list && (rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP)));
      free(out);
    }
  }
  ferry__pq_scratch_free(&s);
  return 0;
}
