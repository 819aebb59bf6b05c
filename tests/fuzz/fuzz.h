/*
 * tests/fuzz/fuzz.h - what every fuzz harness (tests/fuzz/fuzz_NAME.c)
 * includes.  A harness defines LLVMFuzzerTestOneInput, which hands the
 * input bytes to one parser of ferry and returns 0; a crash, an ASan or
 * UBSan report, a leak or a hang is the finding.  FUZZ_CHECK states what a
 * parser promises about what it accepted (an invariant), and aborts, so
 * that the fuzzer reports a broken promise as a crash.
 *
 * The same source builds two ways (tests/fuzz/driver.c): with
 * configure --enable-fuzz (clang), against libFuzzer; otherwise with a
 * plain main() that replays files, so that "make check" runs every harness
 * over its corpus (tests/fuzz/corpus/NAME/) with any compiler.
 */
#ifndef FERRY_FUZZ_H
#define FERRY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of what a parser accepted. */
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,     \
              #cond);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* A malloc'd copy of exactly size bytes of data, not NUL-terminated: the
 * parsers take a length, and ASan catches a read past it. */
static inline char *fuzz_copy(const uint8_t *data, size_t size) {
  char *p = malloc(size ? size : 1);
  FUZZ_CHECK(p != NULL);
  for (size_t i = 0; i < size; i++)
    p[i] = (char)data[i];
  return p;
}

#endif /* FERRY_FUZZ_H */
