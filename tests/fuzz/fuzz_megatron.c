/*
 * fuzz_megatron.c - the Megatron-LM index reader (backends/megatron.c,
 * describe) on arbitrary bytes taken as PREFIX.idx, beside a PREFIX.bin of
 * BIN_BYTES bytes, read twice: as sequences and with
 * megatron_sample=document.  It must accept or refuse with a message; what
 * it accepts describes one ragged variable whose offsets run from 0, never
 * decrease and end inside the .bin.
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

enum { BIN_BYTES = 4096 };

static char dir[64], idx[96], bin[96];

static void cleanup(void) {
  unlink(idx);
  unlink(bin);
  rmdir(dir);
}

/* The directory and the .bin, once per process (removed at exit). */
static void files(void) {
  if (dir[0])
    return;
  snprintf(dir, sizeof dir, "/tmp/fuzz_megatron.XXXXXX");
  FUZZ_CHECK(mkdtemp(dir) != NULL);
  atexit(cleanup);
  snprintf(idx, sizeof idx, "%s/d.idx", dir);
  snprintf(bin, sizeof bin, "%s/d.bin", dir);
  FILE *f = fopen(bin, "wb");
  FUZZ_CHECK(f != NULL);
  static unsigned char zeros[BIN_BYTES];
  FUZZ_CHECK(fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros);
  fclose(f);
}

/* One describe; its promises on what it accepts. */
static void one(int documents) {
  const ferry__backend *be = ferry__backend_find("megatron");
  FUZZ_CHECK(be != NULL);
  ferry_options *o = NULL;
  if (documents) {
    FUZZ_CHECK(ferry_options_create(&o) == 0);
    FUZZ_CHECK(ferry_options_set(o, "megatron_sample", "document") == 0);
  }
  ferry__part_desc d;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = be->describe(idx, o, &d, &err);
  ferry_options_free(o);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
    return;
  }
  FUZZ_CHECK(d.nvars == 1 && d.vars[0].ragged && d.roff && d.roff[0]);
  size_t item = d.vars[0].row_bytes;
  FUZZ_CHECK(item >= 1 && item <= 8 && d.num_samples >= 0);
  const int64_t *off = d.roff[0];
  FUZZ_CHECK(off[0] == 0);
  for (int64_t i = 0; i < d.num_samples; i++)
    FUZZ_CHECK(off[i + 1] >= off[i]);
  FUZZ_CHECK(d.data_offset[0] >= 0 &&
             d.data_offset[0] + off[d.num_samples] * (int64_t)item <=
                 d.file_size[0]);
  ferry__part_desc_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  files();
  FILE *f = fopen(idx, "wb");
  FUZZ_CHECK(f != NULL);
  FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
  fclose(f);
  one(0);
  one(1);
  return 0;
}
