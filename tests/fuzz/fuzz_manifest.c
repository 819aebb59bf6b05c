/*
 * fuzz_manifest.c - the saved-manifest loader (the "manifest" option,
 * ferry__manifest_load_json_text, dataset/json.c) on arbitrary bytes.  An
 * input may start with a line "vars=LIST" (the vars option the load
 * applies); the rest is the JSON.  A manifest it accepts must survive the
 * trip every open makes, packed on rank 0 and unpacked on the others, to
 * the same hash.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "dataset/dataset.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char vars[256] = "";
  const uint8_t *json = data;
  size_t len = size;
  if (size > 5 && memcmp(data, "vars=", 5) == 0) {
    const uint8_t *nl = memchr(data, '\n', size);
    size_t n = nl ? (size_t)(nl - data) - 5 : 0;
    if (!nl || n >= sizeof vars)
      return 0;
    memcpy(vars, data + 5, n);
    vars[n] = '\0';
    json = nl + 1;
    len = size - (size_t)(json - data);
  }
  char *text = fuzz_copy(json, len);
  ferry__manifest m;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__manifest_load_json_text(text, len, "fuzz.json",
                                          vars[0] ? vars : NULL, &m, &err);
  free(text);
  if (rc != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return 0;
  }
  FUZZ_CHECK(m.nvars >= 1 && m.num_samples >= 1);
  void *buf = NULL;
  size_t blen = 0;
  if (ferry__manifest_pack(&m, &buf, &blen) == 0) {
    ferry__manifest back;
    memset(&err, 0, sizeof err);
    rc = ferry__manifest_unpack(buf, blen, &back, &err);
    if (rc != 0)
      fprintf(stderr, "unpack: %s\n", err.msg);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(back.hash == m.hash && back.num_samples == m.num_samples);
    ferry__manifest_free(&back);
    free(buf);
  }
  ferry__manifest_free(&m);
  return 0;
}
