/*
 * fuzz_record.c - the readers of the records a manifest carries, built on
 * util/record.h (issue 24): a parquet variable's record
 * (ferry__pq_rec_get, src/backends/parquet/record.c) and a mix source's
 * record (ferry__mix_record_parse, src/backends/mixread.c), on arbitrary
 * bytes.  Both come from saved manifest JSON files (hex) as well as from
 * rank 0.  Byte 0 even: the rest is a parquet record (either byte order);
 * odd: a mix record.  What a reader accepts must write again (in this
 * host's order) into a record that reads back the same.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/mixrec.h"
#include "backends/parquet/parquet.h"
#include "fuzz.h"

#include <string.h>

static void parquet(const ferry__blob *in) {
  pq_rec r, back;
  ferry__err err;
  memset(&err, 0, sizeof err);
  if (ferry__pq_rec_get(in, &r, "fuzz", &err) != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return;
  }
  ferry__blob again = {0};
  if (ferry__pq_rec_put(&r, &again) == 0) {
    FUZZ_CHECK(ferry__pq_rec_get(&again, &back, "again", &err) == 0);
    FUZZ_CHECK(back.k == r.k && back.nfiles == r.nfiles && back.nrg == r.nrg);
    for (int32_t i = 0; i < r.nfiles; i++)
      FUZZ_CHECK(strcmp(back.files[i], r.files[i]) == 0 &&
                 back.fsize[i] == r.fsize[i]);
    FUZZ_CHECK(r.nrg == 0 ||
               memcmp(back.rg, r.rg, (size_t)r.nrg * sizeof *r.rg) == 0);
    ferry__pq_rec_free(&back);
    free(again.p);
  }
  ferry__pq_rec_free(&r);
}

static void mix(const ferry__blob *in) {
  ferry__mix_record r, back;
  ferry__err err;
  memset(&err, 0, sizeof err);
  if (ferry__mix_record_parse(in, &r, "fuzz", &err) != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return;
  }
  ferry__blob again = {0};
  if (ferry__mix_record_pack(&r, &again) == 0) {
    FUZZ_CHECK(ferry__mix_record_parse(&again, &back, "again", &err) == 0);
    FUZZ_CHECK(back.ncommon == r.ncommon && back.sublen == r.sublen &&
               strcmp(back.path, r.path) == 0 &&
               (r.sublen == 0 || memcmp(back.sub, r.sub, r.sublen) == 0));
    for (int i = 0; i < r.ncommon; i++)
      FUZZ_CHECK(strcmp(back.common[i], r.common[i]) == 0);
    ferry__mix_record_free(&back);
    free(again.p);
  }
  ferry__mix_record_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  /* exactly the record's bytes, so ASan sees a read past them */
  ferry__blob in = {(unsigned char *)fuzz_copy(data + 1, size - 1), size - 1};
  if (data[0] % 2 == 0)
    parquet(&in);
  else
    mix(&in);
  free(in.p);
  return 0;
}
