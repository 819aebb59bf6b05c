/*
 * fuzz_codec.c - the decoders of src/codecs/ on arbitrary bytes: the chunk
 * decoders (codec.c: blosc, zlib, gzip, zstd, lz4, shuffle) and the
 * Parquet page decoders (page.c: snappy, gzip members, zstd frames, bare
 * and Hadoop LZ4).  An input is
 *
 *   byte 0      codec kind (modulo FERRY__CODEC_COUNT)
 *   byte 1      the shuffle element size
 *   bytes 2-4   the decoded size the caller expects, little-endian, its
 *               low 20 bits (at most 1 MiB: larger sizes only slow the
 *               fuzzer down), as the zarr backend knows it from .zarray
 *   the rest    the stored chunk
 *
 * and each is decoded three ways: into a buffer of exactly the expected
 * size (the native reader, ferry__codec_decode_into), into a new buffer of
 * the expected size, and with the size unknown (the NCZarr plugins'
 * path, which sizes the output from the codec's header), and then as a
 * Parquet page of exactly the expected size (0 allowed; kinds without a
 * page format must refuse).  A decoder must
 * never write or read outside its buffers, and what it hands back must
 * have the size it was asked for.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "codecs/codec.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5)
    return 0;
  int kind = data[0] % FERRY__CODEC_COUNT;
  unsigned param = data[1];
  size_t expect =
      ((size_t)data[2] | (size_t)data[3] << 8 | (size_t)data[4] << 16) &
      0xFFFFF;
  const uint8_t *in = data + 5;
  size_t inlen = size - 5;
  /* The stored bytes in a buffer of their exact size (ASan sees a read
   * past them). */
  char *stored = fuzz_copy(in, inlen);
  const char *why = NULL;
  if (!ferry__codec_available(kind)) {
    FUZZ_CHECK(ferry__codec_decode_into(kind, param, stored, inlen, stored, 0,
                                        &why) < 0);
    free(stored);
    return 0;
  }
  if (expect) {
    unsigned char *out = malloc(expect);
    FUZZ_CHECK(out != NULL);
    if (ferry__codec_decode_into(kind, param, stored, inlen, out, expect,
                                 &why) < 0)
      FUZZ_CHECK(why != NULL);
    free(out);
  }
  void *dec = NULL;
  size_t dlen = 0;
  if (ferry__codec_decode(kind, param, stored, inlen, expect, &dec, &dlen,
                          &why) == 0) {
    FUZZ_CHECK(!expect || dlen == expect);
    free(dec);
  } else {
    FUZZ_CHECK(why != NULL && dec == NULL);
  }
  if (expect && ferry__codec_decode(kind, param, stored, inlen, 0, &dec, &dlen,
                                    &why) == 0)
    free(dec);
  /* a page buffer of exactly expect bytes (ASan sees a write past it) */
  unsigned char *page = malloc(expect ? expect : 1);
  FUZZ_CHECK(page != NULL);
  if (ferry__codec_decode_page(kind, stored, inlen, page, expect, &why) < 0)
    FUZZ_CHECK(why != NULL);
  free(page);
  free(stored);
  return 0;
}
