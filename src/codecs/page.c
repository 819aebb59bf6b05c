/*
 * page.c - the decompression of Parquet pages (ferry__codec_decode_page in
 * codec.h): snappy with libsnappy, gzip of several members with zlib,
 * Zstandard frames, bare and Hadoop-framed LZ4 with liblz4.  A page
 * decodes to exactly the size its header states, or it is refused.  The
 * chunk decoders of codec.c check a size header and refuse a chunk of zero
 * bytes; a page may be empty and its formats carry no header but snappy's,
 * hence decoders of their own here, beside them.
 *
 * Snappy was decoded by ferry's own code until 2026-11 (decision 0042):
 * libsnappy replaced it, measured on tests/bench/parquet.sh
 * (docs/performance.md).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "codecs/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_SNAPPY
#include <snappy-c.h>
#endif
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#include <lz4frame.h>
#endif

static int fail(const char **why, const char *msg) {
  *why = msg;
  return -1;
}

#ifdef HAVE_SNAPPY
/* The varint at the start must state outlen before anything is decoded:
 * libsnappy then checks every copy and literal against it. */
static int snappy_page(const void *in, size_t inlen, void *out, size_t outlen,
                       const char **why) {
  size_t n = 0;
  if (snappy_uncompressed_length(in, inlen, &n) != SNAPPY_OK)
    return fail(why, "corrupt snappy length");
  if (n != outlen)
    return fail(why,
                "snappy data does not decompress to the page's stated size");
  size_t got = outlen;
  /* libsnappy writes nothing for an empty page, but wants a buffer. */
  char one;
  if (snappy_uncompress(in, inlen, outlen ? out : &one, &got) != SNAPPY_OK)
    return fail(why, "truncated or corrupt snappy data");
  if (got != outlen)
    return fail(why,
                "snappy data does not decompress to the page's stated size");
  return 0;
}
#endif

#ifdef HAVE_ZLIB
/* A GZIP page may hold several gzip members one after another (RFC 1952
 * allows it, Arrow and parquet-mr read it, and parquet-testing's
 * concatenated_gzip_members.parquet has one): inflate until the stated
 * size is reached, starting again at each member's end while input is
 * left.  Window bits 15 + 32 take a zlib stream too.  Bytes after the
 * page's stated size are not read. */
static int gzip_page(const void *in, size_t inlen, void *out, size_t outlen,
                     const char **why) {
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inlen > UINT32_MAX || outlen > UINT32_MAX ||
      inflateInit2(&s, 15 + 32) != Z_OK)
    return fail(why, "zlib could not start");
  s.next_in = (unsigned char *)(uintptr_t)in;
  s.avail_in = (uInt)inlen;
  s.next_out = out;
  s.avail_out = (uInt)outlen;
  int zr = inflate(&s, Z_FINISH);
  /* each member's end consumes its 8-byte trailer: the loop moves on */
  while (zr == Z_STREAM_END && s.avail_out > 0 && s.avail_in > 0 &&
         inflateReset(&s) == Z_OK)
    zr = inflate(&s, Z_FINISH);
  size_t got = outlen - s.avail_out;
  inflateEnd(&s);
  if (zr != Z_STREAM_END || got != outlen)
    return fail(why,
                zr == Z_STREAM_END || zr == Z_BUF_ERROR
                    ? "gzip data does not decompress to the page's stated size"
                    : "corrupt gzip data");
  return 0;
}
#endif

#ifdef HAVE_ZSTD
/* ZSTD_decompress reads every frame of the page, one after another. */
static int zstd_page(const void *in, size_t inlen, void *out, size_t outlen,
                     const char **why) {
  size_t r = ZSTD_decompress(out, outlen, in, inlen);
  if (ZSTD_isError(r))
    return fail(why, "corrupt zstd data");
  if (r != outlen)
    return fail(why, "zstd data does not decompress to the page's stated size");
  return 0;
}
#endif

#ifdef HAVE_LZ4
static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 |
         (uint32_t)p[0] << 24;
}

/* Hadoop frames (big-endian decoded and compressed sizes, then an LZ4
 * block), which must fill out exactly. */
static int lz4_hadoop(const unsigned char *in, size_t inlen, unsigned char *out,
                      size_t outlen) {
  size_t ip = 0, op = 0;
  while (ip < inlen) {
    if (inlen - ip < 8)
      return -1;
    uint32_t dn = be32(in + ip), cn = be32(in + ip + 4);
    ip += 8;
    if (cn > inlen - ip || dn > outlen - op || cn > INT32_MAX || dn > INT32_MAX)
      return -1;
    int r = LZ4_decompress_safe((const char *)in + ip, (char *)out + op,
                                (int)cn, (int)dn);
    if (r < 0 || (uint32_t)r != dn)
      return -1;
    ip += cn;
    op += dn;
  }
  return op == outlen ? 0 : -1;
}

/* One or more LZ4 frames (lz4frame.h), which must fill out exactly. */
static int lz4_frame(const void *in, size_t inlen, void *out, size_t outlen,
                     const char **why) {
  LZ4F_dctx *dc = NULL;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dc, LZ4F_VERSION)))
    return fail(why, "out of memory for an lz4 frame context");
  size_t ip = 0, op = 0, r = 1;
  while (ip < inlen && op <= outlen) {
    size_t isz = inlen - ip, osz = outlen - op;
    r = LZ4F_decompress(dc, (char *)out + op, &osz, (const char *)in + ip, &isz,
                        NULL);
    if (LZ4F_isError(r) || (isz == 0 && osz == 0))
      break;
    ip += isz;
    op += osz;
    if (r == 0 && ip < inlen) /* the frame ended: another may follow */
      LZ4F_resetDecompressionContext(dc);
  }
  LZ4F_freeDecompressionContext(dc);
  if (LZ4F_isError(r) || ip != inlen)
    return fail(why, "corrupt lz4 frame data");
  if (op != outlen || r != 0)
    return fail(why, "lz4 frame data does not decompress to the stated size");
  return 0;
}

static int lz4_page(int hadoop, const void *in, size_t inlen, void *out,
                    size_t outlen, const char **why) {
  if (hadoop && lz4_hadoop(in, inlen, out, outlen) == 0)
    return 0; /* else a bare block */
  if (inlen > INT32_MAX || outlen > INT32_MAX)
    return fail(why, "an LZ4 page above 2 GiB");
  int r = LZ4_decompress_safe((const char *)in, (char *)out, (int)inlen,
                              (int)outlen);
  if (r < 0)
    return fail(why, "corrupt lz4 data");
  if ((size_t)r != outlen)
    return fail(why, "lz4 data does not decompress to the page's stated size");
  return 0;
}
#endif

int ferry__codec_decode_page(int kind, const void *in, size_t inlen, void *out,
                             size_t outlen, const char **why) {
  *why = NULL;
  switch (kind) {
#ifdef HAVE_SNAPPY
  case FERRY__CODEC_SNAPPY: return snappy_page(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_ZLIB
  case FERRY__CODEC_GZIP: return gzip_page(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_ZSTD
  case FERRY__CODEC_ZSTD: return zstd_page(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_LZ4
  case FERRY__CODEC_LZ4_RAW: return lz4_page(0, in, inlen, out, outlen, why);
  case FERRY__CODEC_LZ4_HADOOP: return lz4_page(1, in, inlen, out, outlen, why);
  case FERRY__CODEC_LZ4_FRAME: return lz4_frame(in, inlen, out, outlen, why);
#endif
  default: return fail(why, "this build has no decoder for the codec");
  }
}

/* The largest expansions: snappy's copy of 64 bytes takes 3 bytes (21.3:1,
 * rounded up); deflate's 258-byte match can take 2 bits (1032:1); an LZ4
 * sequence's length bytes each add 255; a zstd RLE block turns 4 bytes into
 * its largest 128 KiB (32768:1), and nothing in zstd does better. */
size_t ferry__codec_max_decoded(int kind, size_t inlen) {
  size_t ratio;
  switch (kind) {
  case FERRY__CODEC_SNAPPY: ratio = 22; break;
  case FERRY__CODEC_ZLIB:
  case FERRY__CODEC_GZIP: ratio = 1032; break;
  case FERRY__CODEC_LZ4:
  case FERRY__CODEC_LZ4_RAW:
  case FERRY__CODEC_LZ4_HADOOP:
  case FERRY__CODEC_LZ4_FRAME: ratio = 256; break;
  case FERRY__CODEC_ZSTD: ratio = 32768; break;
  default: return SIZE_MAX; /* no bound known here: the decoder checks */
  }
  return inlen > (SIZE_MAX - 64) / ratio ? SIZE_MAX : inlen * ratio + 64;
}
