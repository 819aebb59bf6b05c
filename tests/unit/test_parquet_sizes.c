/*
 * test_parquet_sizes.c - issue 30's Parquet findings, in the decoders
 * (src/backends/parquet), without files:
 *
 *  - a GZIP page made of several gzip members one after another (as
 *    parquet-testing's concatenated_gzip_members.parquet has) decodes to
 *    all of its values; it was refused, "gzip data does not decompress to
 *    the page's stated size".  A member cut short is still refused;
 *  - sizes from damaged metadata are judged before a buffer of that size is
 *    allocated: a page header whose uncompressed_page_size is more than its
 *    codec can make of its bytes, a dictionary page whose num_values its
 *    bytes cannot hold (the scratch buffers must stay unallocated), and
 *    column chunks that lie past the file's data or add up to more bytes
 *    than it holds (DuckDB's broken_structure.parquet: three row groups of
 *    2^31 - 1 rows on the same 49 bytes, which asked for 96 GiB).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "../ferry_test.h"
#include "backends/parquet/parquet.h"
#include "codecs/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

/* Decode chunk (n bytes, codec) of one INT64 column of rows rows into out;
 * the scratch is left to the caller to inspect. */
static int decode(const unsigned char *chunk, size_t n, int codec, int64_t rows,
                  int64_t usize, int64_t *out, pq_scratch *s, ferry__err *err) {
  pq_rec r;
  memset(&r, 0, sizeof r);
  r.type = PQ_INT64;
  r.dtype = FERRY_INT64;
  r.k = 1;
  pq_rg_rec g = {0, rows, 100, (int64_t)n, usize, rows, 0, codec, 0, 0, 0};
  pq_job j = {&r,          &g,   chunk, (unsigned char *)out,
              "f.parquet", "x",  0,     0,
              0,           0,    NULL,  NULL,
              NULL,        NULL, NULL,  0};
  memset(err, 0, sizeof *err);
  return ferry__pq_decode_chunk(&j, s, NULL, err);
}

/* A Thrift varint of the zigzag of v at p; its length. */
static size_t zz(unsigned char *p, int64_t v) {
  uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  size_t n = 0;
  do {
    p[n++] = (unsigned char)((u & 0x7f) | (u > 0x7f ? 0x80 : 0));
    u >>= 7;
  } while (u);
  return n;
}

/* A DATA_PAGE header (v1, PLAIN values, RLE levels) of nvals values whose
 * body takes csize bytes and decompresses to usize. */
static size_t data_header(unsigned char *p, int32_t usize, int32_t csize,
                          int32_t nvals) {
  size_t n = 0;
  p[n++] = 0x15; /* 1: type DATA_PAGE */
  n += zz(p + n, PQ_PAGE_DATA);
  p[n++] = 0x15; /* 2: uncompressed_page_size */
  n += zz(p + n, usize);
  p[n++] = 0x15; /* 3: compressed_page_size */
  n += zz(p + n, csize);
  p[n++] = 0x2c; /* 5: data_page_header */
  p[n++] = 0x15;
  n += zz(p + n, nvals);
  p[n++] = 0x15; /* encoding PLAIN */
  n += zz(p + n, PQ_ENC_PLAIN);
  p[n++] = 0x15;
  n += zz(p + n, PQ_ENC_RLE);
  p[n++] = 0x15;
  n += zz(p + n, PQ_ENC_RLE);
  p[n++] = 0x00;
  p[n++] = 0x00;
  return n;
}

#ifdef HAVE_ZLIB
/* One gzip member of in[0..n) at out (cap bytes); its length, 0 on error. */
static size_t gzip_member(const void *in, size_t n, unsigned char *out,
                          size_t cap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return 0;
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  size_t len = cap - z.avail_out;
  deflateEnd(&z);
  return rc == Z_STREAM_END ? len : 0;
}

/* Issue 30: the values of a page in three gzip members, 3 + 2 + 1. */
static void test_gzip_members(void) {
  int64_t v[6] = {1, 2, 3, 4, 5, 513}, out[6];
  unsigned char body[512], chunk[600];
  size_t b = 0, m;
  const int cut[4] = {0, 3, 5, 6};
  for (int k = 0; k < 3; k++) {
    m = gzip_member(v + cut[k], (size_t)(cut[k + 1] - cut[k]) * 8, body + b,
                    sizeof body - b);
    CHECK(m > 0, "gzip member %d", k);
    if (m == 0)
      return;
    b += m;
  }
  size_t h = data_header(chunk, (int32_t)sizeof v, (int32_t)b, 6);
  memcpy(chunk + h, body, b);
  pq_scratch s;
  memset(&s, 0, sizeof s);
  ferry__err err;
  memset(out, 0, sizeof out);
  int rc = decode(chunk, h + b, PQ_CODEC_GZIP, 6, (int64_t)(h + sizeof v), out,
                  &s, &err);
  CHECK(rc == 0, "three gzip members: %d %s", rc, err.msg);
  CHECK(memcmp(out, v, sizeof v) == 0, "three gzip members: values %lld..%lld",
        (long long)out[0], (long long)out[5]);
  /* the last member cut short: refused, never half-read */
  h = data_header(chunk, (int32_t)sizeof v, (int32_t)(b - 4), 6);
  memcpy(chunk + h, body, b - 4);
  rc = decode(chunk, h + b - 4, PQ_CODEC_GZIP, 6, (int64_t)(h + sizeof v), out,
              &s, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "GZIP page") &&
            strstr(err.msg, "f.parquet") && strstr(err.msg, "column x"),
        "a cut member: %d %s", rc, err.msg);
  /* a stated size one value more than the members hold: refused */
  h = data_header(chunk, (int32_t)sizeof v + 8, (int32_t)b, 6);
  memcpy(chunk + h, body, b);
  rc = decode(chunk, h + b, PQ_CODEC_GZIP, 6, (int64_t)(h + sizeof v + 8), out,
              &s, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "stated size"),
        "less than stated: %d %s", rc, err.msg);
  ferry__pq_scratch_free(&s);
}
#endif

/* A GZIP page of 20 bytes that says it holds 512 MiB: refused naming the
 * field, and no page buffer was allocated for it. */
static void test_page_size_judged(void) {
  unsigned char chunk[64];
  size_t h = data_header(chunk, 1 << 29, 20, 1);
  memset(chunk + h, 0x1f, 20);
  pq_scratch s;
  memset(&s, 0, sizeof s);
  ferry__err err;
  int64_t out[1];
  int rc =
      decode(chunk, h + 20, PQ_CODEC_GZIP, 1, (1 << 30) - 1, out, &s, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "uncompressed_page_size") &&
            strstr(err.msg, "page at offset 100"),
        "512 MiB from 20 bytes: %d %s", rc, err.msg);
  CHECK(s.page_cap == 0, "a page buffer of %zu bytes was allocated first",
        s.page_cap);
  ferry__pq_scratch_free(&s);
  CHECK(ferry__codec_max_decoded(FERRY__CODEC_GZIP, 20) < 30000 &&
            ferry__codec_max_decoded(FERRY__CODEC_ZSTD, 4) >= 131072 &&
            ferry__codec_max_decoded(FERRY__CODEC_SNAPPY, 3) >= 64 &&
            ferry__codec_max_decoded(FERRY__CODEC_ZSTD, SIZE_MAX / 2) ==
                SIZE_MAX,
        "max_decoded bounds");
}

/* A PLAIN dictionary page of 8 bytes that says it holds 60 INT64 values:
 * refused before its dictionary buffer is allocated. */
static void test_dict_count_judged(void) {
  static const unsigned char chunk[] = {
      /* PageHeader: DICTIONARY_PAGE, 8 bytes, 8 bytes; 60 values, PLAIN */
      0x15, 0x04, 0x15, 0x10, 0x15, 0x10, 0x4c, 0x15, 0x78, 0x15, 0x00,
      0x00, 0x00, 1,    0,    0,    0,    0,    0,    0,    0};
  pq_scratch s;
  memset(&s, 0, sizeof s);
  ferry__err err;
  int64_t out[1];
  int rc = decode(chunk, sizeof chunk, PQ_CODEC_NONE, 1, 100, out, &s, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "dictionary page holds fewer "
                                               "bytes"),
        "60 values in 8 bytes: %d %s", rc, err.msg);
  CHECK(s.dict_cap == 0, "a dictionary buffer of %zu bytes was allocated first",
        s.dict_cap);
  ferry__pq_scratch_free(&s);
}

/* Column chunks judged by the file's sizes (ferry__pq_check_chunks). */
static void test_chunks_judged(void) {
  pq_col col;
  memset(&col, 0, sizeof col);
  col.name = (char *)"b";
  col.type = PQ_INT64;
  pq_chunk ch[3];
  pq_rowgroup rg[3];
  pq_file f;
  memset(&f, 0, sizeof f);
  f.size = 1000;
  f.data_end = 900; /* a footer of 92 bytes */
  f.ncols = 1;
  f.cols = &col;
  f.nrg = 3;
  f.rg = rg;
  for (int g = 0; g < 3; g++) {
    memset(&ch[g], 0, sizeof ch[g]);
    ch[g].type = PQ_INT64;
    ch[g].offset = 4 + 290 * g;
    ch[g].size = 290;
    ch[g].usize = 290;
    ch[g].num_values = 2147483647;
    rg[g].num_rows = 2147483647;
    rg[g].chunks = &ch[g];
  }
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__pq_check_chunks(&f, 0, "s.parquet", &err);
  CHECK(rc == 0, "disjoint chunks: %d %s", rc, err.msg);
  /* every row group on the same bytes: 870 + 290 > the 896 of data */
  for (int g = 0; g < 3; g++)
    ch[g].offset = 4;
  ch[0].size = ch[1].size = ch[2].size = 300;
  rc = ferry__pq_check_chunks(&f, 0, "s.parquet", &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "s.parquet: column b") &&
            strstr(err.msg, "add up to 900 bytes") &&
            strstr(err.msg, "total_compressed_size") &&
            strstr(err.msg, "row group 2's chunk: offset 4"),
        "overlapping chunks: %d %s", rc, err.msg);
  /* a chunk running into the footer */
  ch[0].size = 300;
  ch[1].offset = 304;
  ch[2].offset = 604;
  ch[2].size = 297;
  rc = ferry__pq_check_chunks(&f, 0, "s.parquet", &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "row group 2") &&
            strstr(err.msg, "offset 604 of 297 bytes") &&
            strstr(err.msg, "offsets 4 to 900"),
        "into the footer: %d %s", rc, err.msg);
  ch[2].size = 296;
  rc = ferry__pq_check_chunks(&f, 0, "s.parquet", &err);
  CHECK(rc == 0, "up to the footer: %d %s", rc, err.msg);
}

int main(void) {
#ifdef HAVE_ZLIB
  test_gzip_members();
#else
  printf("note: no zlib in this build: the gzip cases are not run\n");
#endif
  test_page_size_judged();
  test_dict_count_judged();
  test_chunks_judged();
  return ft_summary("test_parquet_sizes");
}
