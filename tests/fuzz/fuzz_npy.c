/*
 * fuzz_npy.c - the .npy header parser (ferry__npy_parse_header, backends/
 * npy.c) on arbitrary bytes, as rank 0 reads them from the start of a file.
 * What it accepts must describe a header that lies inside the input and an
 * array whose byte count fits in 64 bits.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/backend.h"
#include "backends/npy.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ferry__npy_header h;
  ferry__err err;
  memset(&err, 0, sizeof err);
  if (ferry__npy_parse_header(data, size, &h, "fuzz.npy", &err) != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return 0;
  }
  FUZZ_CHECK(h.data_offset > 0 && (size_t)h.data_offset <= size);
  FUZZ_CHECK(h.ndim >= 1 && h.ndim <= FERRY_MAX_DIMS);
  FUZZ_CHECK((int)h.dtype >= 0 && (int)h.dtype < FERRY_DTYPE_COUNT);
  int64_t bytes = (int64_t)ferry_dtype_size(h.dtype);
  for (int d = 0; d < h.ndim; d++) {
    FUZZ_CHECK(h.shape[d] >= 0);
    FUZZ_CHECK(!__builtin_mul_overflow(bytes, h.shape[d], &bytes));
  }
  return 0;
}
