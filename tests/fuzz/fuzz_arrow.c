/*
 * fuzz_arrow.c - the Arrow IPC reader (backends/arrow.c, describe) on
 * arbitrary bytes taken as a whole .arrow file (stream or file format).
 * It must accept or refuse with a message; what it accepts describes
 * variables whose records and offsets hold together: ragged offsets from
 * 0, never decreasing.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/backend.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], path[96];

static void cleanup(void) {
  unlink(path);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/fuzz_arrow.XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/d.arrow", dir);
    atexit(cleanup);
  }
  FILE *f = fopen(path, "wb");
  FUZZ_CHECK(f != NULL);
  FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  fclose(f);
  const ferry__backend *be = ferry__backend_find("arrow");
  FUZZ_CHECK(be != NULL);
  ferry__part_desc d;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = be->describe(path, NULL, &d, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return 0;
  }
  FUZZ_CHECK(d.nvars >= 1 && d.num_samples >= 0 && d.rec && d.roff);
  for (int v = 0; v < d.nvars; v++) {
    FUZZ_CHECK(d.vars[v].name && d.vars[v].row_bytes >= 1);
    FUZZ_CHECK(d.file_size[v] == (int64_t)size);
    if (!d.vars[v].ragged)
      continue;
    const int64_t *o = d.roff[v];
    FUZZ_CHECK(o && o[0] == 0);
    for (int64_t i = 0; i < d.num_samples; i++)
      FUZZ_CHECK(o[i + 1] >= o[i]);
  }
  ferry__part_desc_free(&d);
  return 0;
}
