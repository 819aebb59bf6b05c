/*
 * fuzz_zarr_vlen.c - the decoded-chunk parser of Zarr v2 variable-length
 * arrays (backends/zarr/vlen.c, ferry__zarr_vlen_items) on arbitrary bytes:
 * the first byte picks how many items the array needs (0-63) and the
 * second the element size (1, 2, 4 or 8 bytes); the rest is the chunk.
 * What the parser accepts must lie inside the chunk: every item's bytes
 * between its length field and the end, whole elements, items one after
 * the other.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/zarr/zarr.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  int64_t k = data[0] % 64;
  size_t el = (size_t)1 << (data[1] % 4);
  const unsigned char *d = data + 2;
  size_t len = size - 2;
  int64_t lens[64];
  size_t at[64];
  char why[256] = "";
  int rc = ferry__zarr_vlen_items(d, len, k, el, lens, at, why, sizeof why);
  FUZZ_CHECK(rc == 0 || rc == FERRY_EFORMAT);
  if (rc) {
    FUZZ_CHECK(why[0] != '\0');
    return 0;
  }
  size_t end = 4;
  for (int64_t i = 0; i < k; i++) {
    FUZZ_CHECK(lens[i] >= 0);
    FUZZ_CHECK(at[i] == end + 4 && at[i] <= len);
    FUZZ_CHECK((size_t)lens[i] * el <= len - at[i]);
    end = at[i] + (size_t)lens[i] * el;
  }
  FUZZ_CHECK(end <= len);
  return 0;
}
