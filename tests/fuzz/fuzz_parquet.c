/*
 * fuzz_parquet.c - the Parquet footer decoder (ferry__pq_footer_parse,
 * backends/parquet/meta.c over the Thrift compact decoder of thrift.c) on
 * arbitrary bytes: a FileMetaData as rank 0 reads it from the end of a
 * file.  It must decode or refuse with a message; what it decodes must
 * have its row groups' column chunks inside the file.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/parquet.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pq_file f;
  ferry__err err;
  memset(&f, 0, sizeof f);
  memset(&err, 0, sizeof err);
  /* the footer as if it ended a file of twice its size: its offsets may
   * point anywhere before it */
  int64_t fsize = (int64_t)size * 2 + 8;
  if (ferry__pq_footer_parse(data, size, fsize, "fuzz.parquet", &f, &err) ==
      0) {
    FUZZ_CHECK(f.ncols >= 0 && f.nrg >= 0 && f.num_rows >= 0);
  } else {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  }
  ferry__pq_file_free(&f);
  return 0;
}
