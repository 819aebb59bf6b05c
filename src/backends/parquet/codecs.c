/*
 * codecs.c - the decompression of Parquet pages: UNCOMPRESSED, SNAPPY
 * with our own decoder (no library), GZIP with zlib (several gzip members
 * one after another included), ZSTD, LZ4_RAW and the legacy Hadoop-framed
 * LZ4 with liblz4.  A page decompresses to exactly the size its header
 * states, or it is refused; ferry__pq_max_decoded bounds that stated size
 * by the codec's largest expansion, so that a damaged header is judged
 * before a buffer of its size is allocated (pages.c).  Split out of
 * pages.c, which decodes what these return.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/parquet/parquet.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif

/* ---- Snappy ------------------------------------------------------------- */

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 |
         (uint32_t)p[0] << 24;
}

/* One snappy element at *ip: a literal or a copy.  0, or -1 with why. */
static int snappy_elem(const unsigned char **ip, const unsigned char *end,
                       unsigned char *out, size_t *op, size_t outlen,
                       const char **why) {
  const unsigned char *p = *ip;
  unsigned tag = *p++;
  size_t len, off = 0;
  if ((tag & 3) == 0) {
    len = (tag >> 2) + 1u;
    if (len > 60) {
      size_t nb = len - 60;
      if ((size_t)(end - p) < nb)
        goto trunc;
      len = 0;
      for (size_t i = 0; i < nb; i++)
        len |= (size_t)p[i] << (8 * i);
      len += 1;
      p += nb;
    }
    if ((size_t)(end - p) < len || outlen - *op < len)
      goto trunc;
    memcpy(out + *op, p, len);
    *op += len;
    *ip = p + len;
    return 0;
  }
  if ((tag & 3) == 1) {
    if (end - p < 1)
      goto trunc;
    len = 4 + ((tag >> 2) & 7);
    off = ((size_t)(tag >> 5) << 8) | *p++;
  } else if ((tag & 3) == 2) {
    if (end - p < 2)
      goto trunc;
    len = 1 + (tag >> 2);
    off = (size_t)p[0] | (size_t)p[1] << 8;
    p += 2;
  } else {
    if (end - p < 4)
      goto trunc;
    len = 1 + (tag >> 2);
    off = le32(p);
    p += 4;
  }
  if (off == 0 || off > *op || outlen - *op < len) {
    *why = "corrupt snappy data (a copy before the start or past the end)";
    return -1;
  }
  for (size_t i = 0; i < len; i++, (*op)++)
    out[*op] = out[*op - off];
  *ip = p;
  return 0;
trunc:
  *why = "truncated or corrupt snappy data";
  return -1;
}

int ferry__pq_snappy_decode(const unsigned char *in, size_t inlen,
                            unsigned char *out, size_t outlen,
                            const char **why) {
  const unsigned char *p = in, *end = in + inlen;
  uint64_t n = 0;
  int shift = 0;
  for (;;) {
    if (p >= end || shift > 28) {
      *why = "corrupt snappy length";
      return -1;
    }
    unsigned b = *p++;
    n |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80))
      break;
  }
  if (n != outlen) {
    *why = "snappy data does not decompress to the page's stated size";
    return -1;
  }
  size_t op = 0;
  while (p < end)
    if (snappy_elem(&p, end, out, &op, outlen, why) < 0)
      return -1;
  if (op != outlen) {
    *why = "snappy data does not decompress to the page's stated size";
    return -1;
  }
  return 0;
}

/* ---- Codecs ------------------------------------------------------------- */

int ferry__pq_codec_available(int codec) {
  switch (codec) {
  case PQ_CODEC_NONE:
  case PQ_CODEC_SNAPPY: return 1;
#ifdef HAVE_ZLIB
  case PQ_CODEC_GZIP: return 1;
#endif
#ifdef HAVE_ZSTD
  case PQ_CODEC_ZSTD: return 1;
#endif
#ifdef HAVE_LZ4
  case PQ_CODEC_LZ4:
  case PQ_CODEC_LZ4_RAW: return 1;
#endif
  default: return 0;
  }
}

#ifdef HAVE_ZLIB
/* A GZIP page may hold several gzip members one after another (RFC 1952
 * allows it, Arrow and parquet-mr read it, and
 * parquet-testing's concatenated_gzip_members.parquet has one): inflate
 * until the stated size is reached, starting again at each member's end
 * while input is left.  Bytes after the page's stated size are not read,
 * as before. */
static int gunzip(const unsigned char *in, size_t inlen, unsigned char *out,
                  size_t outlen, const char **why) {
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inlen > UINT32_MAX || outlen > UINT32_MAX ||
      inflateInit2(&s, 15 + 32) != Z_OK) {
    *why = "zlib could not start";
    return -1;
  }
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
  if (zr != Z_STREAM_END || got != outlen) {
    *why = zr == Z_STREAM_END || zr == Z_BUF_ERROR
               ? "gzip data does not decompress to the page's stated size"
               : "corrupt gzip data";
    return -1;
  }
  return 0;
}
#endif

#ifdef HAVE_LZ4
/* Legacy LZ4 (codec 5): Hadoop frames (big-endian decoded and compressed
 * sizes, then an LZ4 block) when they fit exactly, else one raw block. */
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
#endif

/* The largest expansions: snappy's copy of 64 bytes takes 3 bytes (21.3:1,
 * rounded up); deflate's 258-byte match can take 2 bits (1032:1); an LZ4
 * sequence's length bytes each add 255; a zstd RLE block turns 4 bytes into
 * its largest 128 KiB (32768:1), and nothing in zstd does better. */
size_t ferry__pq_max_decoded(int codec, size_t inlen) {
  size_t ratio;
  switch (codec) {
  case PQ_CODEC_NONE: return inlen;
  case PQ_CODEC_SNAPPY: ratio = 22; break;
  case PQ_CODEC_GZIP: ratio = 1032; break;
  case PQ_CODEC_LZ4:
  case PQ_CODEC_LZ4_RAW: ratio = 256; break;
  case PQ_CODEC_ZSTD: ratio = 32768; break;
  default: return SIZE_MAX; /* not decoded here: the decoder refuses it */
  }
  return inlen > (SIZE_MAX - 64) / ratio ? SIZE_MAX : inlen * ratio + 64;
}

int ferry__pq_decompress(int codec, const unsigned char *in, size_t inlen,
                         unsigned char *out, size_t outlen, const char **why) {
  switch (codec) {
  case PQ_CODEC_NONE:
    if (inlen != outlen) {
      *why = "an uncompressed page's two sizes differ";
      return -1;
    }
    if (outlen)
      memcpy(out, in, outlen);
    return 0;
  case PQ_CODEC_SNAPPY:
    return ferry__pq_snappy_decode(in, inlen, out, outlen, why);
#ifdef HAVE_ZLIB
  case PQ_CODEC_GZIP: return gunzip(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_ZSTD
  case PQ_CODEC_ZSTD: {
    size_t r = ZSTD_decompress(out, outlen, in, inlen);
    if (ZSTD_isError(r) || r != outlen) {
      *why = ZSTD_isError(r) ? "corrupt zstd data"
                             : "zstd data does not decompress to the page's "
                               "stated size";
      return -1;
    }
    return 0;
  }
#endif
#ifdef HAVE_LZ4
  case PQ_CODEC_LZ4:
  case PQ_CODEC_LZ4_RAW: {
    if (codec == PQ_CODEC_LZ4 && lz4_hadoop(in, inlen, out, outlen) == 0)
      return 0; /* else a raw block */
    if (inlen > INT32_MAX || outlen > INT32_MAX) {
      *why = "an LZ4 page above 2 GiB";
      return -1;
    }
    int r = LZ4_decompress_safe((const char *)in, (char *)out, (int)inlen,
                                (int)outlen);
    if (r < 0 || (size_t)r != outlen) {
      *why = r < 0 ? "corrupt lz4 data"
                   : "lz4 data does not decompress to the page's stated size";
      return -1;
    }
    return 0;
  }
#endif
  default: *why = "this build has no decoder for the codec"; return -1;
  }
}
