/*
 * fuzz_parquet.c - the Parquet footer decoder (ferry__pq_footer_parse,
 * backends/parquet/meta.c over the Thrift compact decoder of thrift.c) on
 * arbitrary bytes: a FileMetaData as rank 0 reads it from the end of a
 * file.  It must decode or refuse with a message; what it decodes and
 * ferry__pq_check_chunks accepts has its column chunks inside the file's
 * data and adding up to no more than it (issue 30), and every OffsetIndex
 * it keeps inside the data.
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
    FUZZ_CHECK(f.data_end == fsize - 8 - (int64_t)size);
    for (int i = 0; i < f.ncols; i++) {
      /* chunks judged good lie in the data, and hold no more than it */
      int good = ferry__pq_check_chunks(&f, i, "fuzz.parquet", &err) == 0;
      int64_t sum = 0;
      for (int64_t g = 0; g < f.nrg; g++) {
        const pq_chunk *c = &f.rg[g].chunks[i];
        if (good) {
          FUZZ_CHECK(c->offset >= 4 && c->size >= 0 &&
                     c->offset + c->size <= f.data_end);
          sum += c->size;
          FUZZ_CHECK(sum <= f.data_end - 4);
        }
        /* an OffsetIndex kept lies in the data (issue 30) */
        FUZZ_CHECK(c->oi_off < 0 || (c->oi_off >= 4 && c->oi_len > 0 &&
                                     c->oi_off + c->oi_len <= f.data_end));
      }
    }
  } else {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  }
  ferry__pq_file_free(&f);
  return 0;
}
