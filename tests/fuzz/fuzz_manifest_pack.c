/*
 * fuzz_manifest_pack.c - the packed manifest rank 0 broadcasts to the
 * other ranks (ferry__manifest_unpack, core/manifest.c) on arbitrary
 * bytes.  The buffer carries its length and a checksum (ferry__hash_words),
 * which random bytes never match; the harness writes both into a copy of the
 * input (when it is long enough to hold them) so that the fuzzer reaches
 * the body.  What unpacks must pack into a buffer that unpacks again to the
 * same manifest (hash).  Reserved bytes are not checked on unpack, so the
 * packed bytes themselves may differ.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "core/manifest.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *buf = (unsigned char *)fuzz_copy(data, size);
  if (size >= 24) {
    for (size_t i = 0; i < 8; i++)
      buf[8 + i] = (unsigned char)((uint64_t)size >> (8 * i));
    uint64_t sum = ferry__hash_words(FERRY__FNV_INIT, buf, size - 8);
    for (size_t i = 0; i < 8; i++)
      buf[size - 8 + i] = (unsigned char)(sum >> (8 * i));
  }
  ferry__manifest m;
  ferry__err err;
  memset(&err, 0, sizeof err);
  if (ferry__manifest_unpack(buf, size, &m, &err) != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    free(buf);
    return 0;
  }
  void *again = NULL;
  size_t alen = 0;
  if (ferry__manifest_pack(&m, &again, &alen) == 0) {
    ferry__manifest back;
    FUZZ_CHECK(ferry__manifest_unpack(again, alen, &back, &err) == 0);
    FUZZ_CHECK(back.hash == m.hash && back.nparts == m.nparts);
    ferry__manifest_free(&back);
    free(again);
  }
  ferry__manifest_free(&m);
  free(buf);
  return 0;
}
