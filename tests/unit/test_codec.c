/*
 * test_codec.c - the decoders of src/codecs/ (codec.c's Zarr chunks, and
 * page.c's Parquet pages in test_pages) against data
 * compressed here by the real libraries, for every codec this build has
 * (zlib and gzip with zlib, zstd, lz4 in numcodecs' framing, blosc with
 * byte shuffle, and ferry's own shuffle filter):
 *  - round trip: ferry__codec_decode with the size known and unknown, and
 *    ferry__codec_decode_into, give back the original bytes;
 *  - a wrong expected size (one byte more or less) is an error;
 *  - every truncation is an error with a reason, never data;
 *  - single bit flips never crash; where the format has a checksum
 *    (zlib's and gzip's) they never give other bytes than the original;
 *    when a decoder accepts a flipped frame it hands back exactly the
 *    chunk's size;
 *  - names and kinds map both ways; an unknown kind is refused;
 *  - Parquet pages (issue 24's codecs folder): snappy (libsnappy), gzip,
 *    zstd and bare LZ4 round trips with every truncation and a stated size
 *    one off refused; a page of two gzip members, of two zstd frames, an
 *    empty zstd page, Hadoop-framed and unframed legacy LZ4 accepted.
 * Each input is a malloc'd copy of exactly its length, so that an
 * AddressSanitizer build (configure --enable-sanitize=address,undefined)
 * catches any read past its end.
 */
#include "config.h"
#include "codecs/codec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif
#ifdef HAVE_SNAPPY
#include <snappy-c.h>
#endif

#include "../ferry_test.h"

enum { N = 6000 }; /* bytes of the test chunk: 1500 float32-like words */

static unsigned char raw[N];

/* Compressible but not trivial: a slow ramp of 4-byte words with noise in
 * the low byte. */
static void make_raw(void) {
  uint32_t x = 12345;
  for (size_t i = 0; i < N; i += 4) {
    x = x * 1103515245u + 12345u;
    uint32_t w = (uint32_t)(i / 4) * 3u + ((x >> 16) & 7u);
    memcpy(raw + i, &w, 4);
  }
}

/* ---- Encoders (the libraries' own, as numcodecs calls them) ------------ */

typedef struct blob {
  unsigned char *p;
  size_t n;
} blob;

#ifdef HAVE_ZLIB
static blob enc_zlib(int gzip) {
  blob b = {malloc(N + 1024), 0};
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (!b.p || deflateInit2(&zs, 6, Z_DEFLATED, gzip ? 15 + 16 : 15, 8,
                           Z_DEFAULT_STRATEGY) != Z_OK)
    return b;
  zs.next_in = raw;
  zs.avail_in = N;
  zs.next_out = b.p;
  zs.avail_out = N + 1024;
  if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
    b.n = zs.total_out;
  deflateEnd(&zs);
  return b;
}
#endif

#ifdef HAVE_ZSTD
static blob enc_zstd(void) {
  size_t cap = ZSTD_compressBound(N);
  blob b = {malloc(cap), 0};
  if (b.p) {
    size_t r = ZSTD_compress(b.p, cap, raw, N, 3);
    if (!ZSTD_isError(r))
      b.n = r;
  }
  return b;
}
#endif

#ifdef HAVE_LZ4
/* numcodecs' LZ4: the decoded size as 4 bytes little-endian, then a block. */
static blob enc_lz4(void) {
  int cap = LZ4_compressBound(N);
  blob b = {malloc((size_t)cap + 4), 0};
  if (b.p) {
    b.p[0] = N & 0xff;
    b.p[1] = (N >> 8) & 0xff;
    b.p[2] = (N >> 16) & 0xff;
    b.p[3] = (N >> 24) & 0xff;
    int r = LZ4_compress_default((const char *)raw, (char *)b.p + 4, N, cap);
    if (r > 0)
      b.n = (size_t)r + 4;
  }
  return b;
}
#endif

#ifdef HAVE_BLOSC
static blob enc_blosc(void) {
  size_t cap = N + 16 + 64; /* BLOSC_MAX_OVERHEAD is 16 */
  blob b = {malloc(cap), 0};
  if (b.p) {
    int r = blosc_compress_ctx(5, 1 /* byte shuffle */, 4, N, raw, b.p, cap,
                               "lz4", 0, 1);
    if (r > 0)
      b.n = (size_t)r;
  }
  return b;
}
#endif

/* The shuffle filter's encoding: byte k of every element together. */
static blob enc_shuffle(unsigned es) {
  blob b = {malloc(N), N};
  if (!b.p)
    return b;
  size_t count = N / es;
  for (size_t k = 0; k < es; k++)
    for (size_t i = 0; i < count; i++)
      b.p[k * count + i] = raw[i * es + k];
  return b;
}

/* ---- Checks ------------------------------------------------------------- */

static int decode_copy(int kind, unsigned param, const unsigned char *in,
                       size_t inlen, size_t expect, void **out, size_t *outlen,
                       const char **why) {
  unsigned char *copy = malloc(inlen ? inlen : 1);
  if (!copy)
    return -2;
  memcpy(copy, in, inlen);
  int rc =
      ferry__codec_decode(kind, param, copy, inlen, expect, out, outlen, why);
  free(copy);
  return rc;
}

static int decode_into_copy(int kind, unsigned param, const unsigned char *in,
                            size_t inlen, void *out, size_t outlen,
                            const char **why) {
  unsigned char *copy = malloc(inlen ? inlen : 1);
  if (!copy)
    return -2;
  memcpy(copy, in, inlen);
  int rc = ferry__codec_decode_into(kind, param, copy, inlen, out, outlen, why);
  free(copy);
  return rc;
}

static void round_trip(const char *name, int kind, unsigned param, blob b) {
  void *out = NULL;
  size_t outlen = 0;
  const char *why = NULL;
  int rc = decode_copy(kind, param, b.p, b.n, N, &out, &outlen, &why);
  CHECK(rc == 0 && outlen == N && memcmp(out, raw, N) == 0,
        "%s: decode with the size known: rc %d, %zu bytes, %s", name, rc,
        outlen, why ? why : "");
  free(out);
  out = NULL;
  rc = decode_copy(kind, param, b.p, b.n, 0, &out, &outlen, &why);
  CHECK(rc == 0 && outlen == N && memcmp(out, raw, N) == 0,
        "%s: decode with the size unknown: rc %d, %zu bytes, %s", name, rc,
        outlen, why ? why : "");
  free(out);
  unsigned char *into = malloc(N + 1);
  if (!into) {
    CHECK(0, "out of memory");
    return;
  }
  into[N] = 0xa5;
  rc = decode_into_copy(kind, param, b.p, b.n, into, N, &why);
  CHECK(rc == 0 && memcmp(into, raw, N) == 0 && into[N] == 0xa5,
        "%s: decode_into: rc %d %s", name, rc, why ? why : "");
  /* The chunk's size one byte off either way. */
  for (int d = -1; d <= 1; d += 2) {
    size_t want = (size_t)((long)N + d);
    out = NULL;
    why = NULL;
    rc = decode_copy(kind, param, b.p, b.n, want, &out, &outlen, &why);
    CHECK(rc == -1 && why != NULL && out == NULL,
          "%s: decode expecting %zu bytes (it holds %d): rc %d", name, want, N,
          rc);
    free(out);
    why = NULL;
    rc = decode_into_copy(kind, param, b.p, b.n, into, want, &why);
    CHECK(rc == -1 && why != NULL, "%s: decode_into %zu bytes: rc %d", name,
          want, rc);
  }
  free(into);
}

/* Every shorter input is refused with a reason; also with the size unknown
 * when the format records it or ends its stream (all but shuffle, which is
 * a permutation of any length). */
static void truncations(const char *name, int kind, unsigned param, blob b) {
  unsigned char *into = malloc(N);
  if (!into) {
    CHECK(0, "out of memory");
    return;
  }
  int refused = 0;
  for (size_t n = 0; n < b.n; n++) {
    const char *why = NULL;
    int rc = decode_into_copy(kind, param, b.p, n, into, N, &why);
    CHECK(rc == -1 && why != NULL, "%s: truncated to %zu of %zu bytes: rc %d",
          name, n, b.n, rc);
    refused++;
    if (kind == FERRY__CODEC_SHUFFLE)
      continue;
    void *out = NULL;
    size_t outlen = 0;
    why = NULL;
    rc = decode_copy(kind, param, b.p, n, 0, &out, &outlen, &why);
    CHECK(rc == -1 && why != NULL && out == NULL,
          "%s: truncated to %zu bytes, size unknown: rc %d (%zu bytes out)",
          name, n, rc, outlen);
    free(out);
  }
  free(into);
  printf("%s: %zu bytes compressed; %d truncations refused\n", name, b.n,
         refused);
}

/* Single bit flips (every bit of the first 64 bytes, then every 7th byte):
 * no crash; a checksummed format refuses each; an accepted frame yields
 * exactly the chunk's size. */
static void bit_flips(const char *name, int kind, unsigned param, blob b,
                      int checksummed) {
  unsigned char *t = malloc(b.n), *into = malloc(N);
  int refused = 0, accepted = 0;
  if (!t || !into) {
    CHECK(0, "out of memory");
    free(t);
    free(into);
    return;
  }
  for (size_t at = 0; at < b.n; at += at < 64 ? 1 : 7)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(t, b.p, b.n);
      t[at] ^= (unsigned char)(1u << bit);
      const char *why = NULL;
      int rc = decode_into_copy(kind, param, t, b.n, into, N, &why);
      CHECK(rc == 0 || rc == -1, "%s: byte %zu bit %d: rc %d", name, at, bit,
            rc);
      CHECK(rc == 0 || why != NULL, "%s: refused without a reason", name);
      if (checksummed) /* gzip's header fields (mtime, os) are not */
        CHECK(rc == -1 || memcmp(into, raw, N) == 0,
              "%s: byte %zu bit %d flipped: other bytes accepted", name, at,
              bit);
      void *out = NULL;
      size_t outlen = 0;
      int rc2 = decode_copy(kind, param, t, b.n, 0, &out, &outlen, &why);
      CHECK(rc2 == -1 || outlen > 0, "%s: an empty chunk accepted", name);
      free(out);
      rc == 0 ? accepted++ : refused++;
    }
  free(t);
  free(into);
  printf("%s: bit flips: %d refused, %d decoded to %d bytes\n", name, refused,
         accepted, N);
}

static void test_codec(const char *name, int kind, unsigned param, blob b,
                       int checksummed) {
  CHECK(ferry__codec_available(kind), "%s: not available", name);
  CHECK(b.p != NULL && b.n > 0, "%s: the library did not compress", name);
  if (!b.p || b.n == 0) {
    free(b.p);
    return;
  }
  round_trip(name, kind, param, b);
  truncations(name, kind, param, b);
  bit_flips(name, kind, param, b, checksummed);
  free(b.p);
}

static void test_names(void) {
  for (int k = 0; k < FERRY__CODEC_NUMCODECS; k++) {
    const char *n = ferry__codec_name(k);
    CHECK(n != NULL && ferry__codec_kind(n) == k, "kind %d <-> name %s", k,
          n ? n : "(null)");
  }
  /* The Parquet page formats share the folder, not the numcodecs ids: a
   * .zarray naming "snappy" must stay unknown to the zarr backend. */
  for (int k = FERRY__CODEC_NUMCODECS; k < FERRY__CODEC_COUNT; k++) {
    const char *n = ferry__codec_name(k);
    CHECK(n != NULL && ferry__codec_kind(n) == FERRY__CODEC_NONE,
          "Parquet kind %d (%s) taken for a numcodecs id", k, n ? n : "(null)");
  }
  CHECK(ferry__codec_kind("bz2") == FERRY__CODEC_NONE, "bz2 is not known");
  CHECK(ferry__codec_name(FERRY__CODEC_COUNT) == NULL, "name past the end");
  CHECK(ferry__codec_available(FERRY__CODEC_SHUFFLE), "shuffle is built in");
  const char *why = NULL;
  void *out = NULL;
  size_t outlen = 0;
  unsigned char in[8] = {0};
  CHECK(ferry__codec_decode(FERRY__CODEC_COUNT, 0, in, sizeof in, 8, &out,
                            &outlen, &why) == -1 &&
            why != NULL && out == NULL,
        "an unknown kind decoded");
  unsigned char dst[8];
  CHECK(ferry__codec_decode_into(FERRY__CODEC_SHUFFLE, 4, in, sizeof in, dst, 0,
                                 &why) == -1,
        "decode_into a chunk of zero bytes");
  CHECK(ferry__codec_decode_into(FERRY__CODEC_SHUFFLE, 3, in, sizeof in, dst,
                                 sizeof dst, &why) == -1,
        "shuffle of 8 bytes in elements of 3");
}

/* ---- Parquet pages (page.c) ------------------------------------------- */

/* Decode a page of stored bytes b into exactly outlen bytes; 0 when it
 * gave raw[0..outlen). */
static int page_ok(int kind, const unsigned char *b, size_t n, size_t outlen,
                   const char **why) {
  unsigned char *in = malloc(n ? n : 1), *out = malloc(outlen ? outlen : 1);
  int rc = -2;
  if (in && out) {
    if (n)
      memcpy(in, b, n);
    rc = ferry__codec_decode_page(kind, in, n, out, outlen, why);
    if (rc == 0 && memcmp(out, raw, outlen) != 0)
      rc = -3;
  }
  free(in);
  free(out);
  return rc;
}

/* A page of kind whose stored bytes are b (decoding to all of raw): it
 * decodes, one byte more or less is refused, and every truncation is
 * refused (with a reason). */
static void page_round_trip(const char *name, int kind, blob b) {
  const char *why = NULL;
  if (!b.p || !b.n) {
    CHECK(0, "%s: no encoded page", name);
    free(b.p);
    return;
  }
  int rc = page_ok(kind, b.p, b.n, N, &why);
  CHECK(rc == 0, "%s page: rc %d %s", name, rc, why ? why : "");
  CHECK(page_ok(kind, b.p, b.n, N - 1, &why) < 0 && why,
        "%s: a stated size one short accepted", name);
  CHECK(page_ok(kind, b.p, b.n, N + 1, &why) < 0 && why,
        "%s: a stated size one long accepted", name);
  for (size_t len = 0; len < b.n; len += 1 + len / 8)
    CHECK(page_ok(kind, b.p, len, N, &why) < 0 && why,
          "%s: truncated to %zu of %zu accepted", name, len, b.n);
  free(b.p);
}

/* What a Parquet page may hold that a Zarr chunk may not: several gzip
 * members or zstd frames one after another (Arrow writes and reads them),
 * and nothing at all (a page of 0 bytes). */
static void test_pages(void) {
  const char *why = NULL;
  CHECK(ferry__codec_decode_page(FERRY__CODEC_SHUFFLE, raw, N, raw, N, &why) <
                0 &&
            why,
        "shuffle is not a page format");
#ifdef HAVE_SNAPPY
  {
    blob b = {malloc(snappy_max_compressed_length(N)), 0};
    b.n = b.p ? snappy_max_compressed_length(N) : 0;
    if (b.p &&
        snappy_compress((const char *)raw, N, (char *)b.p, &b.n) != SNAPPY_OK)
      b.n = 0;
    CHECK(ferry__codec_max_decoded(FERRY__CODEC_SNAPPY, b.n) >= N,
          "snappy's bound below what it made");
    page_round_trip("snappy", FERRY__CODEC_SNAPPY, b);
  }
#endif
#ifdef HAVE_ZLIB
  {
    /* two gzip members: raw[0..N/2) and raw[N/2..N) */
    blob a = enc_zlib(1);
    page_round_trip("gzip", FERRY__CODEC_GZIP, a);
    unsigned char two[2 * (N + 1024)];
    size_t n = 0;
    for (int h = 0; h < 2; h++) {
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK)
        break;
      zs.next_in = raw + h * (N / 2);
      zs.avail_in = N / 2;
      zs.next_out = two + n;
      zs.avail_out = (uInt)(sizeof two - n);
      if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
        n += zs.total_out;
      deflateEnd(&zs);
    }
    int rc = page_ok(FERRY__CODEC_GZIP, two, n, N, &why);
    CHECK(rc == 0, "a page of two gzip members: rc %d %s", rc, why ? why : "");
  }
#endif
#ifdef HAVE_ZSTD
  {
    page_round_trip("zstd", FERRY__CODEC_ZSTD, enc_zstd());
    size_t cap = ZSTD_compressBound(N);
    unsigned char *two = malloc(2 * cap);
    size_t n = 0;
    for (int h = 0; two && h < 2; h++) {
      size_t r =
          ZSTD_compress(two + n, 2 * cap - n, raw + h * (N / 2), N / 2, 3);
      n += ZSTD_isError(r) ? 0 : r;
    }
    int rc = two ? page_ok(FERRY__CODEC_ZSTD, two, n, N, &why) : -2;
    CHECK(rc == 0, "a page of two zstd frames: rc %d %s", rc, why ? why : "");
    unsigned char empty[64];
    size_t e = ZSTD_compress(empty, sizeof empty, raw, 0, 3);
    CHECK(!ZSTD_isError(e) &&
              page_ok(FERRY__CODEC_ZSTD, empty, e, 0, &why) == 0,
          "an empty zstd page refused: %s", why ? why : "");
    free(two);
  }
#endif
#ifdef HAVE_LZ4
  {
    int cap = LZ4_compressBound(N);
    blob b = {malloc((size_t)cap + 8), 0};
    int r =
        b.p ? LZ4_compress_default((const char *)raw, (char *)b.p + 8, N, cap)
            : 0;
    if (r > 0) {
      /* Hadoop framing: big-endian decoded and compressed sizes */
      const uint32_t sz[2] = {N, (uint32_t)r};
      for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++)
          b.p[4 * k + i] = (unsigned char)(sz[k] >> (24 - 8 * i));
      int rc = page_ok(FERRY__CODEC_LZ4_HADOOP, b.p, (size_t)r + 8, N, &why);
      CHECK(rc == 0, "a Hadoop LZ4 page: rc %d %s", rc, why ? why : "");
      /* the bare block, as LZ4_RAW and as a legacy LZ4 without framing */
      rc = page_ok(FERRY__CODEC_LZ4_HADOOP, b.p + 8, (size_t)r, N, &why);
      CHECK(rc == 0, "a legacy LZ4 page without framing: rc %d %s", rc,
            why ? why : "");
      blob raw_blk = {malloc((size_t)r), (size_t)r};
      if (raw_blk.p)
        memcpy(raw_blk.p, b.p + 8, (size_t)r);
      page_round_trip("lz4_raw", FERRY__CODEC_LZ4_RAW, raw_blk);
    }
    free(b.p);
  }
#endif
}

int main(void) {
  make_raw();
  test_names();
  test_pages();
  int tested = 0;
  test_codec("shuffle(4)", FERRY__CODEC_SHUFFLE, 4, enc_shuffle(4), 0);
  test_codec("shuffle(8)", FERRY__CODEC_SHUFFLE, 8, enc_shuffle(8), 0);
  tested += 2;
#ifdef HAVE_ZLIB
  test_codec("zlib", FERRY__CODEC_ZLIB, 0, enc_zlib(0), 1);
  test_codec("gzip", FERRY__CODEC_GZIP, 0, enc_zlib(1), 1);
  tested += 2;
  {
    /* Trailing bytes after a complete stream are refused. */
    blob b = enc_zlib(0);
    unsigned char *t = malloc(b.n + 3);
    if (b.p && t && b.n) {
      memcpy(t, b.p, b.n);
      memset(t + b.n, 0, 3);
      unsigned char *into = malloc(N);
      const char *why = NULL;
      int rc = into ? decode_into_copy(FERRY__CODEC_ZLIB, 0, t, b.n + 3, into,
                                       N, &why)
                    : -2;
      CHECK(rc == -1 && why && strstr(why, "trailing"),
            "zlib with 3 trailing bytes: rc %d %s", rc, why ? why : "");
      free(into);
    }
    free(t);
    free(b.p);
  }
#else
  printf("zlib, gzip: not in this build (configure found no zlib)\n");
#endif
#ifdef HAVE_ZSTD
  test_codec("zstd", FERRY__CODEC_ZSTD, 0, enc_zstd(), 0);
  tested++;
#else
  printf("zstd: not in this build\n");
#endif
#ifdef HAVE_LZ4
  test_codec("lz4", FERRY__CODEC_LZ4, 0, enc_lz4(), 0);
  tested++;
#else
  printf("lz4: not in this build\n");
#endif
#ifdef HAVE_BLOSC
  test_codec("blosc(lz4, shuffle)", FERRY__CODEC_BLOSC, 0, enc_blosc(), 0);
  tested++;
#else
  printf("blosc: not in this build\n");
#endif
  printf("%d codecs tested\n", tested);
  return ft_summary("test_codec");
}
