/*
 * fuzz_parquet_index.c - the two small decoders rank 0 runs on Parquet
 * metadata outside the footer proper: the OffsetIndex of a column chunk
 * (ferry__pq_offset_index_parse, backends/parquet/split.c, Thrift) and the
 * ARROW:schema hint (ferry__pq_arrow_hint_parse, backends/parquet/arrow.c,
 * a flatbuffer in base64).  The first byte picks: even, the rest is an
 * OffsetIndex; odd, the rest is the hint's bytes, base64-encoded here so
 * that the fuzzer mutates the flatbuffer itself.  Each must decode or
 * refuse with a reason; what it decodes must be consistent.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/parquet.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

static char *b64(const uint8_t *in, size_t n) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = malloc(n / 3 * 4 + 8);
  size_t k = 0;
  if (!o)
    return NULL;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    o[k++] = a[v >> 18 & 63];
    o[k++] = a[v >> 12 & 63];
    o[k++] = i + 1 < n ? a[v >> 6 & 63] : '=';
    o[k++] = i + 2 < n ? a[v & 63] : '=';
  }
  o[k] = '\0';
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *why = NULL;
  if (size < 1)
    return 0;
  if ((data[0] & 1) == 0) {
    pq_pages p;
    if (ferry__pq_offset_index_parse(data + 1, size - 1, &p, &why) == 0) {
      FUZZ_CHECK(p.n >= 0 && (p.n == 0 || (p.offset && p.first_row)));
    } else {
      FUZZ_CHECK(why != NULL && p.n == 0);
    }
    ferry__pq_pages_free(&p);
    return 0;
  }
  char *text = b64(data + 1, size - 1);
  if (!text)
    return 0;
  pq_arrow_hint h;
  if (ferry__pq_arrow_hint_parse(text, strlen(text), &h, &why) == 0) {
    for (int i = 0; i < h.n; i++)
      FUZZ_CHECK(h.names[i] && h.k[i] >= 1);
  } else {
    FUZZ_CHECK(why != NULL && h.n == 0);
  }
  ferry__pq_arrow_hint_free(&h);
  free(text);
  return 0;
}
