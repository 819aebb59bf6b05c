/*
 * fuzz_zarr_meta.c - the Zarr v2 metadata parsers of the zarr backend
 * (backends/zarr/meta.c) on arbitrary bytes: the same input as a .zarray
 * (ferry__zarr_parse_zarray_text) and as a .zgroup
 * (ferry__zarr_parse_zgroup_text).  ferry reads nothing from .zattrs (the
 * probe only looks for the file), so there is no parser of it to fuzz.
 * The same bytes also go to the Zarr v3 zarr.json parser
 * (ferry__zarr_parse_v3_text).  What the parsers accept must have sizes
 * whose products fit
 * (chunk bytes, the band of chunks), and every chunk path, including the
 * last chunk's, must be printable.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/zarr/zarr.h"
#include "fuzz.h"

#include <string.h>

static void check_zarray(const zmeta *z) {
  FUZZ_CHECK(z->ndim >= 0 && z->ndim <= Z_MAX_DIMS);
  FUZZ_CHECK(z->itemsize >= 1 && z->itemsize <= 8);
  FUZZ_CHECK(z->ncodecs >= 0 && z->ncodecs <= Z_MAX_CODECS);
  FUZZ_CHECK(z->sep == '.' || z->sep == '/');
  int64_t chunk = (int64_t)z->itemsize, band = 0, last[Z_MAX_DIMS];
  for (int d = 0; d < z->ndim; d++) {
    FUZZ_CHECK(z->shape[d] >= 0 && z->chunks[d] >= 1);
    FUZZ_CHECK(!__builtin_mul_overflow(chunk, z->chunks[d], &chunk));
    last[d] = z->shape[d] ? zarr_nchunks(z, d) - 1 : 0;
  }
  FUZZ_CHECK((size_t)chunk == z->chunk_bytes);
  /* No chunk across a dimension of size 0 (shape (N, 0): empty rows,
   * refused once selected). */
  int empty = 0;
  for (int d = 1; d < z->ndim; d++)
    empty |= z->shape[d] == 0;
  FUZZ_CHECK(z->across >= 1 || (z->across == 0 && empty));
  FUZZ_CHECK(!__builtin_mul_overflow(chunk, z->across, &band));
  /* The native reader's buffers for one chunk must be computable. */
  FUZZ_CHECK(zarr_stored_bound(z->chunk_bytes) >= z->chunk_bytes);
  char *p = ferry__zarr_chunk_path("/s/a", z, last);
  FUZZ_CHECK(p != NULL);
  free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_copy(data, size);
  zmeta z;
  ferry__err err;
  memset(&err, 0, sizeof err);
  if (ferry__zarr_parse_zarray_text(text, size, "/s/a/.zarray", "a", &z,
                                    &err) == 0)
    check_zarray(&z);
  else
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  memset(&err, 0, sizeof err);
  if (ferry__zarr_parse_zgroup_text(text, size, "/s/.zgroup", &err) != 0)
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  /* the same bytes as a Zarr v3 array's zarr.json */
  memset(&err, 0, sizeof err);
  if (ferry__zarr_parse_v3_text(text, size, "/s/a/zarr.json", "a", &z, &err) ==
      0)
    check_zarray(&z);
  else
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  free(text);
  return 0;
}
