/*
 * codec.c - decoders for the numcodecs codecs ferry reads (see codec.h;
 * the Parquet page formats are page.c's).
 *
 * The byte formats are numcodecs' (0.11):
 *   blosc    a Blosc-1 frame; its header gives the decoded and the stored
 *            size, both checked (the inner codec - lz4, zstd, zlib,
 *            blosclz, lz4hc - and the byte/bit shuffle are in the frame)
 *   zlib     a zlib stream (RFC 1950)
 *   gzip     a gzip member (RFC 1952)
 *   zstd     a Zstandard frame
 *   lz4      a 4-byte little-endian decoded size, then one LZ4 block
 *   shuffle  bytes of element k of every element together (elementsize)
 * A decoder whose library configure did not find reports itself unavailable
 * (ferry__codec_available), and the zarr backend refuses such arrays before
 * reading.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

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

/* No chunk decodes to more than this (a corrupt header must not make us
 * allocate terabytes). */
#define CODEC_MAX_OUT ((size_t)1 << 36)

static const char *const codec_names[FERRY__CODEC_COUNT] = {
    "blosc", "zlib", "gzip", "zstd", "lz4", "shuffle",
    /* Parquet's page formats (not numcodecs ids) */
    "snappy", "lz4_raw", "lz4_hadoop", "lz4_frame"};

const char *ferry__codec_name(int kind) {
  return kind >= 0 && kind < FERRY__CODEC_COUNT ? codec_names[kind] : NULL;
}

int ferry__codec_kind(const char *id) {
  for (int k = 0; id && k < FERRY__CODEC_NUMCODECS; k++)
    if (strcmp(id, codec_names[k]) == 0)
      return k;
  return FERRY__CODEC_NONE;
}

int ferry__codec_available(int kind) {
  switch (kind) {
#ifdef HAVE_BLOSC
  case FERRY__CODEC_BLOSC: return 1;
#endif
#ifdef HAVE_ZLIB
  case FERRY__CODEC_ZLIB:
  case FERRY__CODEC_GZIP: return 1;
#endif
#ifdef HAVE_ZSTD
  case FERRY__CODEC_ZSTD: return 1;
#endif
#ifdef HAVE_LZ4
  case FERRY__CODEC_LZ4:
  case FERRY__CODEC_LZ4_RAW:
  case FERRY__CODEC_LZ4_HADOOP:
  case FERRY__CODEC_LZ4_FRAME: return 1;
#endif
#ifdef HAVE_SNAPPY
  case FERRY__CODEC_SNAPPY: return 1;
#endif
  case FERRY__CODEC_SHUFFLE: return 1;
  default: return 0;
  }
}

static int fail(const char **why, const char *msg) {
  *why = msg;
  return -1;
}

/* Out of memory for bytes bytes of what: the reason in a per-thread buffer
 * (valid until this thread's next decode; the caller names the chunk). */
static int fail_oom(const char **why, size_t bytes, const char *what) {
  static _Thread_local char text[128];
  snprintf(text, sizeof text, "out of memory: %zu bytes for %s", bytes, what);
  *why = text;
  return -1;
}

/* The size a decoder with a self-described size must produce: the header's,
 * which must equal what the caller expects when it knows. */
static int check_size(size_t got, size_t expect, const char **why) {
  if (got == 0 || got > CODEC_MAX_OUT)
    return fail(why, "the header gives an impossible decoded size");
  if (expect && got != expect)
    return fail(why, "the decoded size in the header differs from the "
                     "chunk's size");
  return 0;
}

/* Every decoder below writes exactly outlen bytes to out (the size the
 * caller knows, already checked against the header when the format has
 * one) or fails; out is never read from. */

#ifdef HAVE_BLOSC
/* The decoded size of a Blosc-1 frame, after checking its header against
 * the input. */
static int blosc_size(const void *in, size_t inlen, size_t *n,
                      const char **why) {
  size_t nbytes = 0, cbytes = 0, bsize = 0;
  if (inlen < 16) /* BLOSC_MIN_HEADER_LENGTH */
    return fail(why, "truncated blosc data (shorter than its header)");
  blosc_cbuffer_sizes(in, &nbytes, &cbytes, &bsize);
  if (cbytes != inlen)
    return fail(why, "truncated or corrupt blosc data (its header gives "
                     "another stored size)");
  if (blosc_cbuffer_validate(in, inlen, &nbytes) < 0)
    return fail(why, "corrupt blosc header");
  *n = nbytes;
  return 0;
}

static int dec_blosc(const void *in, size_t inlen, void *out, size_t outlen,
                     const char **why) {
  (void)inlen; /* blosc_size checked it against the frame's header */
  if (outlen > INT32_MAX)
    return fail(why, "blosc chunk larger than 2 GiB");
  /* The _ctx form uses no global state: safe from any thread. */
  int n = blosc_decompress_ctx(in, out, outlen, 1);
  if (n < 0 || (size_t)n != outlen)
    return fail(why, "corrupt blosc data (decompression failed)");
  return 0;
}
#endif

#ifdef HAVE_ZLIB
/* windowbits 15: zlib; 15 + 16: gzip.  The stream must end exactly at the
 * end of the input.  *buf holds *cap bytes; with grow the buffer (malloc'd,
 * or NULL) is enlarged as needed, without it the stream must decode to
 * exactly *cap bytes.  *done receives the decoded size. */
static int inflate_run(int gzip, const void *in, size_t inlen,
                       unsigned char **buf, size_t *cap, int grow,
                       size_t *done_out, const char **why) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (grow && !*buf) {
    *cap = inlen < 4096 ? 16384 : 4 * inlen;
    if (!(*buf = malloc(*cap)))
      return fail_oom(why, *cap, "the decoded data");
  }
  if (inflateInit2(&zs, gzip ? 15 + 16 : 15) != Z_OK)
    return fail(why, "zlib cannot start");
  size_t done = 0, used = 0, want = 0; /* want: a failed growth's bytes */
  int zrc = Z_OK, overflow = 0;
  while (zrc != Z_STREAM_END) {
    unsigned char probe;
    unsigned char *to = *buf + done;
    size_t out_left = *cap - done;
    if (out_left == 0) {
      if (grow && *cap < CODEC_MAX_OUT) {
        unsigned char *nb = realloc(*buf, *cap * 2);
        if (!nb) {
          zrc = Z_MEM_ERROR;
          want = *cap * 2;
          break;
        }
        *buf = nb;
        *cap *= 2;
        continue;
      }
      /* Full: what is left of the stream may only be its end. */
      to = &probe;
      out_left = 1;
    }
    size_t in_left = inlen - used;
    zs.next_in = (Bytef *)((const unsigned char *)in + used);
    zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
    zs.next_out = to;
    zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
    uInt ai = zs.avail_in, ao = zs.avail_out;
    zrc = inflate(&zs, Z_NO_FLUSH);
    used += ai - zs.avail_in;
    if (to == &probe) {
      if (zs.avail_out == 0) {
        overflow = 1; /* more data than the chunk holds */
        break;
      }
    } else {
      done += ao - zs.avail_out;
    }
    if (zrc == Z_BUF_ERROR && used == inlen)
      break; /* input ended before the stream did */
    if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR)
      break;
  }
  inflateEnd(&zs);
  if (overflow || zrc != Z_STREAM_END || used != inlen ||
      (!grow && done != *cap)) {
    if (zrc == Z_MEM_ERROR && want)
      return fail_oom(why, want, "the decoded data");
    if (zrc == Z_MEM_ERROR) /* zlib's state: its 32 KiB window and ~7 KiB */
      return fail_oom(why, 32768 + 7168, "zlib's inflate state");
    if (overflow || (zrc == Z_STREAM_END && used == inlen))
      return fail(why, "the decoded size differs from the chunk's size");
    return fail(why, zrc == Z_STREAM_END
                         ? "trailing bytes after the compressed stream"
                         : (gzip ? "truncated or corrupt gzip data"
                                 : "truncated or corrupt zlib data"));
  }
  *done_out = done;
  return 0;
}
#endif

#ifdef HAVE_ZSTD
static int zstd_size(const void *in, size_t inlen, size_t expect, size_t *n,
                     const char **why) {
  unsigned long long fs = ZSTD_getFrameContentSize(in, inlen);
  if (fs == ZSTD_CONTENTSIZE_ERROR)
    return fail(why, "truncated or corrupt zstd data (bad frame header)");
  if (fs == ZSTD_CONTENTSIZE_UNKNOWN) {
    if (!expect)
      return fail(why, "zstd frame without its decoded size");
    fs = expect;
  }
  if (fs > CODEC_MAX_OUT)
    return fail(why, "the header gives an impossible decoded size");
  *n = (size_t)fs;
  return 0;
}

static int dec_zstd(const void *in, size_t inlen, void *out, size_t outlen,
                    const char **why) {
  size_t r = ZSTD_decompress(out, outlen, in, inlen);
  if (ZSTD_isError(r) || r != outlen)
    return fail(why, "truncated or corrupt zstd data");
  return 0;
}
#endif

#ifdef HAVE_LZ4
static int lz4_size(const void *in, size_t inlen, size_t *n, const char **why) {
  const unsigned char *p = in;
  if (inlen < 4)
    return fail(why, "truncated lz4 data (shorter than its size header)");
  *n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
       (size_t)p[3] << 24;
  return 0;
}

static int dec_lz4(const void *in, size_t inlen, void *out, size_t outlen,
                   const char **why) {
  if (outlen > INT32_MAX || inlen - 4 > INT32_MAX)
    return fail(why, "lz4 block larger than 2 GiB");
  int r = LZ4_decompress_safe((const char *)in + 4, out, (int)(inlen - 4),
                              (int)outlen);
  if (r < 0 || (size_t)r != outlen)
    return fail(why, "truncated or corrupt lz4 data");
  return 0;
}
#endif

static int dec_shuffle(unsigned es, const void *in, size_t inlen, void *out,
                       size_t outlen, const char **why) {
  if (inlen != outlen)
    return fail(why, "shuffled data of another size than the chunk");
  if (es > 1 && inlen % es != 0)
    return fail(why, "shuffled data not a multiple of its element size");
  const unsigned char *src = in;
  unsigned char *dst = out;
  if (es <= 1) {
    memcpy(dst, src, inlen);
  } else {
    size_t count = inlen / es;
    for (size_t b = 0; b < es; b++)
      for (size_t i = 0; i < count; i++)
        dst[i * es + b] = src[b * count + i];
  }
  return 0;
}

/* The decoded size of in: the one its header records (blosc, zstd, lz4) or
 * its own (shuffle), checked against expect when expect is not 0; expect
 * itself for zlib and gzip, whose formats do not record it (0: unknown). */
static int decoded_size(int kind, const void *in, size_t inlen, size_t expect,
                        size_t *n, const char **why) {
  int rc = 0;
  *n = expect;
  switch (kind) {
#ifdef HAVE_BLOSC
  case FERRY__CODEC_BLOSC: rc = blosc_size(in, inlen, n, why); break;
#endif
#ifdef HAVE_ZLIB
  case FERRY__CODEC_ZLIB:
  case FERRY__CODEC_GZIP: return 0;
#endif
#ifdef HAVE_ZSTD
  case FERRY__CODEC_ZSTD: rc = zstd_size(in, inlen, expect, n, why); break;
#endif
#ifdef HAVE_LZ4
  case FERRY__CODEC_LZ4: rc = lz4_size(in, inlen, n, why); break;
#endif
  case FERRY__CODEC_SHUFFLE:
    if (expect && inlen != expect)
      return fail(why, "shuffled data of another size than the chunk");
    *n = inlen;
    return 0;
  default: return fail(why, "this codec is not built into ferry");
  }
  if (rc < 0)
    return rc;
  return check_size(*n, expect, why);
}

/* Decode into out[0..outlen), outlen already known to be the decoded size
 * (checked against the header by decoded_size). */
static int decode_exact(int kind, unsigned param, const void *in, size_t inlen,
                        void *out, size_t outlen, const char **why) {
  switch (kind) {
#ifdef HAVE_BLOSC
  case FERRY__CODEC_BLOSC: return dec_blosc(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_ZLIB
  case FERRY__CODEC_ZLIB:
  case FERRY__CODEC_GZIP: {
    unsigned char *b = out;
    size_t cap = outlen, done = 0;
    return inflate_run(kind == FERRY__CODEC_GZIP, in, inlen, &b, &cap, 0, &done,
                       why);
  }
#endif
#ifdef HAVE_ZSTD
  case FERRY__CODEC_ZSTD: return dec_zstd(in, inlen, out, outlen, why);
#endif
#ifdef HAVE_LZ4
  case FERRY__CODEC_LZ4: return dec_lz4(in, inlen, out, outlen, why);
#endif
  case FERRY__CODEC_SHUFFLE:
    return dec_shuffle(param, in, inlen, out, outlen, why);
  default: return fail(why, "this codec is not built into ferry");
  }
}

int ferry__codec_decode_into(int kind, unsigned param, const void *in,
                             size_t inlen, void *out, size_t outlen,
                             const char **why) {
  size_t n = 0;
  *why = NULL;
  if (kind >= FERRY__CODEC_NUMCODECS) /* a Parquet page format */
    return ferry__codec_decode_page(kind, in, inlen, out, outlen, why);
  if (outlen == 0)
    return fail(why, "a chunk of zero bytes");
  if (decoded_size(kind, in, inlen, outlen, &n, why) < 0)
    return -1;
  return decode_exact(kind, param, in, inlen, out, outlen, why);
}

/* The most a codec can expand its stored bytes, rounded up: an LZ4 block
 * gives at most 255 bytes per input byte (a run of 0xFF length bytes), a
 * Zstandard RLE block 128 KiB from 4 bytes (32768), and a Blosc frame no
 * more than its inner codec (lz4, zstd, zlib: 1032; the header and block
 * offsets only add input).  0: the codec has no size header to bound. */
static size_t max_ratio(int kind) {
  switch (kind) {
  case FERRY__CODEC_LZ4: return 256;
  case FERRY__CODEC_ZSTD:
  case FERRY__CODEC_BLOSC: return 65536;
  default: return 0;
  }
}

/* A Parquet page format through ferry__codec_decode: its size is expect,
 * or snappy's own header (judged against what the stored bytes can make
 * before it is allocated); the other page formats record no size. */
static int decode_page_alloc(int kind, const void *in, size_t inlen,
                             size_t expect, void **out, size_t *outlen,
                             const char **why) {
  size_t n = expect;
#ifdef HAVE_SNAPPY
  if (!n && kind == FERRY__CODEC_SNAPPY &&
      snappy_uncompressed_length(in, inlen, &n) != SNAPPY_OK)
    return fail(why, "corrupt snappy length");
#endif
  if (!ferry__codec_available(kind))
    return fail(why, "this codec is not built into ferry");
  if (!n)
    return fail(why, "the decoded size is neither known nor recorded");
  if (n > CODEC_MAX_OUT || n > ferry__codec_max_decoded(kind, inlen))
    return fail(why, "the decoded size is larger than its codec can produce "
                     "from the stored bytes (corrupt)");
  void *buf = malloc(n);
  if (!buf)
    return fail_oom(why, n, "the decoded data");
  if (ferry__codec_decode_page(kind, in, inlen, buf, n, why) < 0) {
    free(buf);
    return -1;
  }
  *out = buf;
  *outlen = n;
  return 0;
}

int ferry__codec_decode(int kind, unsigned param, const void *in, size_t inlen,
                        size_t expect, void **out, size_t *outlen,
                        const char **why) {
  size_t n = 0;
  *out = NULL;
  *outlen = 0;
  *why = NULL;
  if (kind >= FERRY__CODEC_NUMCODECS)
    return decode_page_alloc(kind, in, inlen, expect, out, outlen, why);
  if (decoded_size(kind, in, inlen, expect, &n, why) < 0)
    return -1;
  /* With the size unknown (the NCZarr plugins), the header's size is all
   * there is: one that inlen bytes cannot hold is corrupt, refused before
   * it is allocated (a 9-byte lz4 chunk must not ask for 4 GiB). */
  size_t r = max_ratio(kind);
  if (!expect && r && n > 4096 && (n - 4096) / r > inlen)
    return fail(why, "the header gives a decoded size larger than its "
                     "codec can produce from the stored bytes (corrupt)");
#ifdef HAVE_ZLIB
  if ((kind == FERRY__CODEC_ZLIB || kind == FERRY__CODEC_GZIP) && n == 0) {
    /* Size unknown (a plugin called by netCDF-C): grow as needed. */
    unsigned char *b = NULL;
    size_t cap = 0, done = 0;
    if (inflate_run(kind == FERRY__CODEC_GZIP, in, inlen, &b, &cap, 1, &done,
                    why) < 0) {
      free(b);
      return -1;
    }
    *out = b;
    *outlen = done;
    return 0;
  }
#endif
  void *buf = malloc(n ? n : 1);
  if (!buf)
    return fail_oom(why, n ? n : 1, "the decoded data");
  if (n && decode_exact(kind, param, in, inlen, buf, n, why) < 0) {
    free(buf);
    return -1;
  }
  *out = buf;
  *outlen = n;
  return 0;
}
