/*
 * test_state_file.c - the checkpoint state file (src/loader/state.c) without
 * MPI or a loader: encode/decode round trip (every field, byte-identical
 * re-encoding), the file helpers (write, read back, missing file, a file
 * over the 1 MiB limit), and damage: every truncation length is
 * FERRY_EFORMAT, every single bit flip is refused (the checksum covers the
 * body; the header's fields are checked) except a flip that turns a hex
 * letter of the header's checksum into its other case (the same value),
 * and a newer format version is FERRY_ENOTSUP naming the file.  Each
 * decode gets a buffer of exactly the file's length, so that an
 * AddressSanitizer build catches any read past its end.
 * tests/loader/test_state.c covers the loader's use of the file over MPI.
 */
#include "config.h"
#include "loader/state.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

static char *opt_names[] = {"batch_size", "seed", "shuffle", NULL};
static char *opt_values[] = {"16", "42", "chunks", NULL};
/* max_tokens steps carry each rank's served positions (the third member) */
static int64_t served4[] = {7, 9, 0, 12}, served3[] = {3, 1, 2};
static ferry__resume_step steps[] = {{4, 7, served4, NULL, NULL},
                                     {3, 2, served3, NULL, NULL},
                                     {5, 0, NULL, NULL, NULL}};

static ferry__state sample_state(void) {
  ferry__state s;
  memset(&s, 0, sizeof s);
  s.version = FERRY__STATE_VERSION;
  s.dataset = "data/part-*.npy";
  s.dataset_hash = 0x0123456789abcdefULL;
  s.num_samples = 1000003;
  s.nopts = 3;
  s.opt_name = opt_names;
  s.opt_value = opt_values;
  s.epoch = 5;
  s.world_size = 5;
  s.batches = 2;
  s.samples_served = 4242;
  s.nsteps = 3;
  s.steps = steps;
  return s;
}

/* Decode buf[0..len) from a copy of exactly len bytes (ASan sees overruns). */
static int decode_copy(const char *buf, size_t len, ferry__state *out,
                       ferry__err *err) {
  char *copy = malloc(len ? len : 1);
  if (!copy)
    return FERRY_ENOMEM;
  memcpy(copy, buf, len);
  int rc = ferry__state_decode(copy, len, "t.state", out, err);
  free(copy);
  return rc;
}

static int same_state(const ferry__state *a, const ferry__state *b) {
  if (strcmp(a->dataset, b->dataset) || a->dataset_hash != b->dataset_hash ||
      a->num_samples != b->num_samples || a->nopts != b->nopts ||
      a->epoch != b->epoch || a->world_size != b->world_size ||
      a->batches != b->batches || a->samples_served != b->samples_served ||
      a->nsteps != b->nsteps)
    return 0;
  for (int i = 0; i < a->nopts; i++)
    if (strcmp(a->opt_name[i], b->opt_name[i]) ||
        strcmp(a->opt_value[i], b->opt_value[i]))
      return 0;
  for (int i = 0; i < a->nsteps; i++)
    if (a->steps[i].world_size != b->steps[i].world_size ||
        a->steps[i].batches != b->steps[i].batches ||
        !a->steps[i].served != !b->steps[i].served ||
        (a->steps[i].served &&
         memcmp(a->steps[i].served, b->steps[i].served,
                (size_t)a->steps[i].world_size * sizeof(int64_t))))
      return 0;
  return 1;
}

static void test_round_trip(const char *buf, size_t len) {
  ferry__state in = sample_state(), out;
  ferry__err err = {0};
  int rc = decode_copy(buf, len, &out, &err);
  CHECK(rc == 0, "decode: %d %s", rc, err.msg);
  if (rc)
    return;
  CHECK(out.version == FERRY__STATE_VERSION, "version %d", out.version);
  CHECK(same_state(&in, &out), "decoded fields differ from the encoded ones");
  CHECK(strcmp(out.library, ferry_version()) == 0, "library '%s'", out.library);
  CHECK(ferry__state_options_hash(&out) == ferry__state_options_hash(&in),
        "options hash");
  char *again = NULL;
  size_t alen = 0;
  CHECK(ferry__state_encode(&out, &again, &alen, &err) == 0, "re-encode");
  CHECK(again && alen == len && memcmp(again, buf, len) == 0,
        "re-encoding the decoded state gives other bytes");
  CHECK(buf[len - 1] == '\n' && strncmp(buf, "FERRY-STATE 1 ", 14) == 0,
        "header or final newline: %.40s", buf);
  free(again);
  ferry__state_free(&out);
}

static void test_truncations(const char *buf, size_t len) {
  int bad = 0;
  for (size_t n = 0; n < len; n++) {
    ferry__state out;
    ferry__err err = {0};
    int rc = decode_copy(buf, n, &out, &err);
    CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "t.state"),
          "truncated to %zu of %zu bytes: rc %d, '%s'", n, len, rc, err.msg);
    if (rc == 0)
      ferry__state_free(&out);
    bad += rc == FERRY_EFORMAT;
  }
  printf("truncations: %d of %zu lengths refused\n", bad, len);
}

/* The header is "FERRY-STATE V SUM16HEX LEN\n": a hex letter of SUM in the
 * other case keeps the value (strtoull and sscanf accept both). */
static int same_hex_value(const char *buf, size_t at, char flipped) {
  const char *nl = memchr(buf, '\n', 256);
  size_t sum_at = strlen("FERRY-STATE 1 ");
  return nl && at >= sum_at && at < sum_at + 16 &&
         isxdigit((unsigned char)buf[at]) && isxdigit((unsigned char)flipped) &&
         tolower((unsigned char)buf[at]) == tolower((unsigned char)flipped);
}

static void test_bit_flips(const char *buf, size_t len) {
  char *t = malloc(len);
  int refused = 0, same = 0;
  if (!t) {
    CHECK(0, "out of memory");
    return;
  }
  ferry__state in = sample_state();
  for (size_t at = 0; at < len; at++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(t, buf, len);
      t[at] = (char)(t[at] ^ (1 << bit));
      ferry__state out;
      ferry__err err = {0};
      int rc = decode_copy(t, len, &out, &err);
      if (rc == 0) {
        CHECK(same_hex_value(buf, at, t[at]) && same_state(&in, &out),
              "byte %zu bit %d flipped ('%c' -> 0x%02x): accepted", at, bit,
              isprint((unsigned char)buf[at]) ? buf[at] : '?',
              (unsigned char)t[at]);
        same++;
        ferry__state_free(&out);
      } else {
        CHECK(rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP,
              "byte %zu bit %d: rc %d '%s'", at, bit, rc, err.msg);
        CHECK(strstr(err.msg, "t.state") != NULL,
              "byte %zu bit %d: the message does not name the file: %s", at,
              bit, err.msg);
        refused++;
      }
    }
  free(t);
  printf("bit flips: %d refused, %d accepted (hex letter case in the "
         "checksum)\n",
         refused, same);
}

static void test_newer_version(const char *buf, size_t len) {
  /* Version 2 with a valid checksum and length: only the version is new. */
  char *t = malloc(len);
  if (!t) {
    CHECK(0, "out of memory");
    return;
  }
  memcpy(t, buf, len);
  t[12] = '2';
  ferry__state out;
  ferry__err err = {0};
  int rc = decode_copy(t, len, &out, &err);
  CHECK(rc == FERRY_ENOTSUP, "version 2: rc %d", rc);
  CHECK(strstr(err.msg, "t.state") && strstr(err.msg, "version 2") &&
            strstr(err.msg, "newer"),
        "version 2: message '%s'", err.msg);
  if (rc == 0)
    ferry__state_free(&out);
  free(t);
}

static void test_files(const char *buf, size_t len) {
  char dir[] = "/tmp/ferry-state-XXXXXX", path[256], big[256];
  const char *base = getenv("FERRY_TEST_TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/state-file.XXXXXX", base ? base : "/tmp");
  char *d = mkdtemp(base ? tmpl : dir);
  if (!d) {
    CHECK(0, "mkdtemp failed");
    return;
  }
  snprintf(path, sizeof path, "%s/st", d);
  ferry__err err = {0};
  CHECK(ferry__state_write_file(path, buf, len, &err) == 0, "write: %s",
        err.msg);
  char *back = NULL;
  size_t blen = 0;
  CHECK(ferry__state_read_file(path, &back, &blen, &err) == 0, "read: %s",
        err.msg);
  CHECK(back && blen == len && memcmp(back, buf, len) == 0,
        "read back %zu bytes, wrote %zu", blen, len);
  free(back);
  /* Rewriting replaces the file whole (rename), leaving no temporary. */
  CHECK(ferry__state_write_file(path, buf, len / 2, &err) == 0, "rewrite");
  CHECK(ferry__state_read_file(path, &back, &blen, &err) == 0 &&
            blen == len / 2,
        "rewritten file holds %zu bytes, want %zu", blen, len / 2);
  free(back);
  char missing[300];
  snprintf(missing, sizeof missing, "%s/none", d);
  int rc = ferry__state_read_file(missing, &back, &blen, &err);
  CHECK(rc == FERRY_ENOENT && strstr(err.msg, missing), "missing: %d %s", rc,
        err.msg);
  snprintf(big, sizeof big, "%s/big", d);
  FILE *f = fopen(big, "wb");
  CHECK(f != NULL, "create %s", big);
  if (f) {
    for (int i = 0; i < (1 << 20) / 64 + 1; i++)
      fputs("FERRY-STATE 1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
            f);
    fclose(f);
    rc = ferry__state_read_file(big, &back, &blen, &err);
    CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "larger than"),
          "a file over 1 MiB: %d %s", rc, err.msg);
    if (rc == 0)
      free(back);
  }
  unlink(path);
  unlink(big);
  CHECK(rmdir(d) == 0, "%s holds files the writes left behind", d);
}

int main(void) {
  ferry__state s = sample_state();
  char *buf = NULL;
  size_t len = 0;
  ferry__err err = {0};
  int rc = ferry__state_encode(&s, &buf, &len, &err);
  CHECK(rc == 0 && buf && len > 0, "encode: %d %s", rc, err.msg);
  if (rc == 0) {
    test_round_trip(buf, len);
    test_truncations(buf, len);
    test_bit_flips(buf, len);
    test_newer_version(buf, len);
    test_files(buf, len);
  }
  free(buf);
  return ft_summary("test_state_file");
}
