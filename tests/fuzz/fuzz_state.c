/*
 * fuzz_state.c - the checkpoint state decoder (ferry__state_decode,
 * loader/state.c) on arbitrary bytes.  A state file carries its body's
 * length and an FNV-1a checksum in its header line, which random bytes
 * never match: an input that starts with 'F' is decoded as it is (the
 * header parser), any other is taken as a body and given a correct header
 * first (the JSON body's decoder).  What decodes must encode and decode
 * again to the same state.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuzz.h"
#include "loader/state.h"

#include <inttypes.h>
#include <string.h>

/* A state file holding body[0..n) with a correct header; malloc'd. */
static char *with_header(const uint8_t *body, size_t n, size_t *len) {
  char head[128];
  int hl =
      snprintf(head, sizeof head, "FERRY-STATE %d %016" PRIx64 " %zu\n",
               FERRY__STATE_VERSION, ferry__fnv1a(FERRY__FNV_INIT, body, n), n);
  char *buf = malloc((size_t)hl + n + 1);
  FUZZ_CHECK(buf != NULL);
  memcpy(buf, head, (size_t)hl);
  if (n)
    memcpy(buf + hl, body, n);
  buf[(size_t)hl + n] = '\n';
  *len = (size_t)hl + n + 1;
  return buf;
}

/* The same options, in any order (the encoder sorts them by name; the
 * decoder keeps the order it reads, which resume never depends on: it
 * looks options up by name). */
static int same_options(const ferry__state *a, const ferry__state *b) {
  for (int i = 0; i < a->nopts; i++) {
    int found = 0;
    for (int k = 0; k < b->nopts && !found; k++)
      found = strcmp(a->opt_name[i], b->opt_name[k]) == 0 &&
              strcmp(a->opt_value[i], b->opt_value[k]) == 0;
    if (!found)
      return 0;
  }
  return a->nopts == b->nopts;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t len = size;
  char *buf = size && data[0] == 'F' ? fuzz_copy(data, size)
                                     : with_header(data, size, &len);
  ferry__state s;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__state_decode(buf, len, "fuzz.state", &s, &err);
  free(buf);
  if (rc != 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return 0;
  }
  FUZZ_CHECK(s.nsteps >= 1 && s.steps && s.dataset && s.library);
  FUZZ_CHECK(s.epoch >= 0 && s.world_size >= 1 && s.batches >= 0);
  char *out = NULL;
  size_t olen = 0;
  if (ferry__state_encode(&s, &out, &olen, &err) == 0) {
    ferry__state t;
    rc = ferry__state_decode(out, olen, "fuzz.state", &t, &err);
    if (rc != 0)
      fprintf(stderr, "re-decode: %s\n", err.msg);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(t.epoch == s.epoch && t.world_size == s.world_size &&
               t.batches == s.batches && t.nsteps == s.nsteps &&
               t.nopts == s.nopts);
    FUZZ_CHECK(same_options(&s, &t));
    ferry__state_free(&t);
    free(out);
  }
  ferry__state_free(&s);
  return 0;
}
