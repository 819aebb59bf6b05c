/*
 * fuzz_imgfolder.c - the image folder's record reader
 * (ferry__img_loctab_parse, src/backends/imgfolder.c; its layout in
 * backends/imgfolder.h) on arbitrary bytes: the image variable's location
 * table of kind 3 (the list of files below the root, then each sample's
 * file) and the label's of kind 2.  Records come from rank 0 and from saved
 * manifest files (hex), so the reader trusts nothing in them.
 *
 * Input: byte 0, bit 0: the image variable (kind 3 expected) or the label
 * (kind 2); bit 1: the sample count expected is byte 1 (so a wrong count is
 * tried), else the count the record states (so the rest is reached); the
 * record from byte 2 on.  What the reader accepts must hold: every name
 * inside the record, 1 to 4095 bytes, below the root (not absolute, no
 * empty, "." or ".." component, no NUL), every sample naming a file of the
 * list; and the record must be exactly the canonical bytes of what was
 * decoded (written again with util/record.h's writer).  What it refuses,
 * it refuses with a reason and an offset inside the record.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/imgfolder.h"
#include "fuzz.h"

#include <string.h>

static int below_root(const unsigned char *p, uint32_t n) {
  if (n == 0 || n > FERRY__IMG_REL_MAX || memchr(p, 0, n) || p[0] == '/')
    return 0;
  for (uint32_t i = 0; i <= n;) { /* each component */
    uint32_t j = i;
    while (j < n && p[j] != '/')
      j++;
    if (j == i || (j - i == 1 && p[i] == '.') ||
        (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
      return 0;
    i = j + 1;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  int ragged = data[0] & 1;
  size_t len = size - 2;
  /* exactly the record's bytes, so ASan sees a read past them */
  unsigned char *rec = (unsigned char *)fuzz_copy(data + 2, len);
  int64_t n = data[1];
  if (!(data[0] & 2) && len >= 9) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
      v = v << 8 | rec[1 + k];
    n = (int64_t)(v & INT64_MAX);
  }
  ferry__img_loctab t;
  ferry__rec_r r;
  int rc = ferry__img_loctab_parse(rec, len, ragged, n, &t, &r);
  if (rc != 0) {
    FUZZ_CHECK(rc == r.rc && (rc == FERRY_EFORMAT || rc == FERRY_ENOMEM));
    FUZZ_CHECK(rc != FERRY_EFORMAT || (r.why && r.why[0] && r.at <= len));
    FUZZ_CHECK(t.kind == 0 && !t.v && !t.name_at && !t.name_len);
    free(rec);
    return 0;
  }
  FUZZ_CHECK(t.kind == (ragged ? FERRY__IMG_LOC_FILES : FERRY__IMG_LOC_VALUES));
  FUZZ_CHECK(t.v != NULL && (!ragged || t.nfiles >= 0));
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u8(&w, (unsigned)t.kind);
  ferry__rec_put_u64(&w, (uint64_t)n);
  if (ragged) {
    ferry__rec_put_u64(&w, (uint64_t)t.nfiles);
    for (int64_t f = 0; f < t.nfiles; f++) {
      FUZZ_CHECK(t.name_at[f] >= 4 && (uint64_t)t.name_at[f] <= len &&
                 t.name_len[f] <= len - (size_t)t.name_at[f]);
      FUZZ_CHECK(below_root(rec + t.name_at[f], t.name_len[f]));
      ferry__rec_put_u32(&w, t.name_len[f]);
      ferry__rec_put(&w, rec + t.name_at[f], t.name_len[f]);
    }
    for (int64_t i = 0; i < n; i++)
      FUZZ_CHECK(t.v[i] >= 0 && t.v[i] < t.nfiles);
  }
  for (int64_t i = 0; i < n; i++)
    ferry__rec_put_u64(&w, (uint64_t)t.v[i]);
  void *again = NULL;
  size_t alen = 0;
  FUZZ_CHECK(ferry__rec_finish(&w, &again, &alen) == 0);
  FUZZ_CHECK(alen == len && memcmp(again, rec, len) == 0);
  free(again);
  ferry__img_loctab_free(&t);
  free(rec);
  return 0;
}
