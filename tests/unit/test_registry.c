/*
 * test_registry.c - the backend contract (backends/backend.h) holds for
 * every backend compiled in, and ferry__backend_check refuses a table that
 * breaks each of its rules, naming the backend and the rule.  A new backend
 * whose table lacks a mandatory entry fails here (and ferry_open refuses to
 * run with it: ferry__backend_registry_check).
 */
#include "config.h"
#include "backends/backend.h"

#include <string.h>

#include "../ferry_test.h"

/* broken(TABLE-EDIT, RULE-WORDS): a copy of the mem backend's table with
 * one rule broken must be refused, with the rule in the message. */
static void broken(const ferry__backend *good, void (*edit)(ferry__backend *),
                   const char *words) {
  ferry__backend b = *good;
  ferry__err err = {0};
  edit(&b);
  int rc = ferry__backend_check(&b, &err);
  CHECK(rc == FERRY_EINTERNAL, "a table that breaks '%s' gave %d", words, rc);
  CHECK(strstr(err.msg, words) != NULL, "the message lacks '%s': %s", words,
        err.msg);
  CHECK(strstr(err.msg, "backend contract") != NULL, "message: %s", err.msg);
}

static void no_name(ferry__backend *b) { b->name = NULL; }
static void old_version(ferry__backend *b) { b->version = 0; }
static void no_read(ferry__backend *b) { b->io_read = NULL; }
static void no_describe(ferry__backend *b) { b->describe = NULL; }
static void unreachable(ferry__backend *b) {
  b->probe = NULL;
  b->scheme = NULL;
}
static void unknown_cap(ferry__backend *b) { b->caps |= 1u << 30; }

static int probe_any(const char *path) { return path != NULL; }
static void silent_probe(ferry__backend *b) {
  b->probe = probe_any;
  b->accepts = NULL;
}

int main(void) {
  int n = 0;
  for (int i = 0; ferry__backends[i]; i++, n++) {
    ferry__err err = {0};
    int rc = ferry__backend_check(ferry__backends[i], &err);
    CHECK(rc == 0, "backend %s: %s", ferry__backends[i]->name, err.msg);
    CHECK(ferry__backend_find(ferry__backends[i]->name) == ferry__backends[i],
          "backend %s is not found by its name (two of that name?)",
          ferry__backends[i]->name);
  }
  CHECK(n >= 4, "only %d backends compiled in", n);
  ferry__err err = {0};
  CHECK(ferry__backend_registry_check(&err) == 0, "registry: %s", err.msg);

  const ferry__backend *mem = ferry__backend_find("mem");
  CHECK(mem != NULL, "no mem backend");
  if (!mem)
    return ft_summary("test_registry");
  broken(mem, no_name, "no name");
  broken(mem, old_version, "version");
  broken(mem, no_read, "mandatory");
  broken(mem, no_describe, "mandatory");
  broken(mem, unreachable, "neither a probe nor a scheme");
  broken(mem, silent_probe, "what it accepts");
  broken(mem, unknown_cap, "capability");
  return ft_summary("test_registry");
}
