/*
 * test_options.c - the option vocabulary: defaults, set/get round trips,
 * dashes, every bad value rejected with a message naming the option and
 * leaving the options unchanged, environment variables and config files.
 */
#include "config.h"
#include "core/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

static void expect_value(ferry_options *o, const char *name, const char *want) {
  char buf[256];
  int rc = ferry_options_get(o, name, buf, sizeof buf);
  CHECK(rc == 0 && strcmp(buf, want) == 0, "%s = '%s', want '%s'", name, buf,
        want);
}

static void expect_bad(ferry_options *o, const char *name, const char *value) {
  char before[256], after[256];
  int known = ferry_options_get(o, name, before, sizeof before) == 0;
  int rc = ferry_options_set(o, name, value);
  CHECK(rc == FERRY_EINVAL, "%s=%s accepted (rc %d)", name, value, rc);
  const char *msg = ferry_last_error(NULL);
  CHECK(strstr(msg, name) != NULL, "message '%s' does not name '%s'", msg,
        name);
  if (known) {
    ferry_options_get(o, name, after, sizeof after);
    CHECK(strcmp(before, after) == 0, "%s changed by a bad value", name);
  }
}

int main(void) {
  ferry_options *o = NULL;
  CHECK(ferry_options_create(&o) == 0 && o, "create");
  /* Every option in the table has a default that round-trips. */
  int n = 0;
  for (const ferry_option_info *i; (i = ferry_option_info_get(n)); n++) {
    char buf[256];
    CHECK(i->name && i->default_value && i->values && i->help, "table row %d",
          n);
    CHECK(ferry_options_get(o, i->name, buf, sizeof buf) == 0, "get %s",
          i->name);
    CHECK(ferry_options_set(o, i->name, buf) == 0, "set %s back to '%s'",
          i->name, buf);
  }
  CHECK(n >= 16, "only %d options", n);
  CHECK(ferry_option_info_get(-1) == NULL && ferry_option_info_get(n) == NULL,
        "out of range");
  static const char *const required[] = {
      "batch_size",     "seed",      "shuffle",  "block_size",
      "shuffle_buffer", "partition", "tail",     "chunk_samples",
      "vars",           "io",        "prefetch", "threads",
      "max_chunks",     "fraction",  "device",   NULL};
  for (int k = 0; required[k]; k++) {
    char buf[64];
    CHECK(ferry_options_get(o, required[k], buf, sizeof buf) == 0,
          "option %s missing", required[k]);
  }
  expect_value(o, "batch_size", "64");
  expect_value(o, "tail", "drop_last");
  expect_value(o, "shuffle", "chunks");

  CHECK(ferry_options_set(o, "batch-size", "256") == 0, "dashes");
  expect_value(o, "batch_size", "256");
  CHECK(ferry_options_set(o, "tail", "partial") == 0, "tail");
  expect_value(o, "tail", "partial");
  CHECK(ferry_options_set(o, "fraction", "0.25") == 0, "fraction");
  expect_value(o, "fraction", "0.25");
  CHECK(ferry_options_set(o, "vars", "x,y") == 0, "vars");
  expect_value(o, "vars", "x,y");
  CHECK(ferry_options_set(o, "seed", "18446744073709551615") == 0, "seed max");

  expect_bad(o, "batch_size", "0");
  expect_bad(o, "batch_size", "-3");
  expect_bad(o, "batch_size", "12abc");
  expect_bad(o, "batch_size", "");
  expect_bad(o, "seed", "-1");
  expect_bad(o, "shuffle", "random");
  expect_bad(o, "tail", "drop");
  expect_bad(o, "partition", "blocked");
  expect_bad(o, "io", "async");
  expect_bad(o, "device", "tpu");
  expect_bad(o, "fraction", "0");
  expect_bad(o, "fraction", "1.5");
  expect_bad(o, "prefetch", "0");
  expect_bad(o, "threads", "-1");
  expect_bad(o, "verbose", "3");
  expect_bad(o, "verbose", "-1");
  expect_bad(o, "no_such_option", "1");
  CHECK(ferry_options_set(o, "no_such_option", "1") == FERRY_EINVAL &&
            strstr(ferry_last_error(NULL), "unknown option"),
        "unknown option message: %s", ferry_last_error(NULL));

  /* Copies are deep. */
  ferry_options *c = NULL;
  CHECK(ferry_options_copy(o, &c) == 0, "copy");
  ferry_options_set(o, "vars", "z");
  expect_value(c, "vars", "x,y");
  ferry_options_free(c);

  /* Environment. */
  setenv("FERRY_BATCH_SIZE", "17", 1);
  setenv("FERRY_PARTITION", "strided", 1);
  CHECK(ferry_options_from_env(o) == 0, "env");
  expect_value(o, "batch_size", "17");
  expect_value(o, "partition", "strided");
  setenv("FERRY_TAIL", "bogus", 1);
  CHECK(ferry_options_from_env(o) == FERRY_EINVAL, "bad env value");
  CHECK(strstr(ferry_last_error(NULL), "FERRY_TAIL") != NULL,
        "env message names the variable: %s", ferry_last_error(NULL));
  unsetenv("FERRY_TAIL");
  unsetenv("FERRY_BATCH_SIZE");
  unsetenv("FERRY_PARTITION");

  /* Config files: good, bad (unchanged afterwards), missing. */
  char path[] = "/tmp/ferry-test-config-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# a comment\n\nbatch_size = 33  # trailing\nshuffle=block\n");
  fclose(f);
  CHECK(ferry_options_load(o, path) == 0, "load: %s", ferry_last_error(NULL));
  expect_value(o, "batch_size", "33");
  expect_value(o, "shuffle", "block");
  f = fopen(path, "w");
  fprintf(f, "batch_size = 5\nthreads = lots\n");
  fclose(f);
  CHECK(ferry_options_load(o, path) == FERRY_EINVAL, "bad config");
  CHECK(strstr(ferry_last_error(NULL), "line 2") &&
            strstr(ferry_last_error(NULL), "threads"),
        "config message: %s", ferry_last_error(NULL));
  expect_value(o, "batch_size", "33"); /* all or nothing */
  unlink(path);
  CHECK(ferry_options_load(o, path) == FERRY_ENOENT, "missing config");

  /* The hash used for the cross-rank check sees every value. */
  ferry_options *a = NULL, *b = NULL;
  ferry_options_create(&a);
  ferry_options_create(&b);
  for (int i = 0; i < ferry__option_count(); i++)
    CHECK(ferry__option_hash(a, i) == ferry__option_hash(b, i), "equal hash");
  ferry_options_set(b, "seed", "1");
  int differ = 0;
  for (int i = 0; i < ferry__option_count(); i++)
    differ += ferry__option_hash(a, i) != ferry__option_hash(b, i);
  CHECK(differ == 1, "seed change changes exactly one hash (%d)", differ);
  /* ... except the per-rank ones: devices and verbose (only rank 0 speaks). */
  ferry_options_set(b, "seed", "0");
  CHECK(ferry_options_set(b, "verbose", "2") == 0 &&
            ferry_options_set(b, "devices", "1") == 0,
        "set verbose and devices");
  differ = 0;
  for (int i = 0; i < ferry__option_count(); i++)
    differ += ferry__option_hash(a, i) != ferry__option_hash(b, i);
  CHECK(differ == 0, "verbose and devices left out of the hash (%d)", differ);
  ferry_options_free(a);
  ferry_options_free(b);

  ferry_options_free(o);
  ferry_options_free(NULL);
  return ft_summary("test_options");
}
