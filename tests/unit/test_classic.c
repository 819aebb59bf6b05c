/*
 * test_classic.c - unit tests of the netCDF classic header parser
 * (backends/classic.c, ferry__cdf_parse).  Headers are written here, field
 * by field, in CDF-1, CDF-2 and CDF-5: the parser finds the version, the
 * variables, numrecs (STREAMING included) and the record size (padded per
 * variable, not padded for a single record variable).  Then a fuzz: every
 * truncation of each valid file (as the whole file: a clear FERRY_EFORMAT
 * naming the file; as the first bytes of a longer file: "read more"), every
 * single-bit flip and every byte set to 0x00, 0x7f, 0x80 and 0xff; the
 * parser must return 0 or a negative code with a message naming the file,
 * never crash or read outside its buffer (each input is its own malloc'd
 * copy of exactly its length, so the ASan build and valgrind catch an
 * over-read).  Finally the specific refusals, each with its code and the
 * field and offset in its message.  Also ferry__byteswap, which every
 * batch of big-endian netCDF data goes through.
 *
 * Exit status: 0 pass, 1 fail (each failure is printed).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/classic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

#define PATH "hdr.nc"

/* ---- A header writer -------------------------------------------------- */

typedef struct wr {
  unsigned char b[4096];
  size_t n;
  int version;
} wr;

static void put(wr *w, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; i--)
    w->b[w->n++] = (unsigned char)(v >> (8 * i));
}
static void w32(wr *w, uint64_t v) { put(w, v, 4); }
/* NON_NEG: 64 bits in CDF-5. */
static void wnn(wr *w, uint64_t v) { put(w, v, w->version == 5 ? 8 : 4); }
static void wname(wr *w, const char *s) {
  size_t n = strlen(s);
  wnn(w, n);
  memcpy(w->b + w->n, s, n);
  w->n += n;
  while (w->n % 4)
    w->b[w->n++] = 0;
}
static void wbegin(wr *w, uint64_t v) { put(w, v, w->version == 1 ? 4 : 8); }

typedef struct tvar {
  const char *name;
  int ndims;
  int dimids[3];
  int type;
  int64_t bytes; /* the variable's data bytes (a record variable: a row) */
} tvar;

/* dims: t (unlimited), n = 4, c = 3.  Offsets of interesting fields go to
 * off[]: 0 numrecs, 1 the dimension list's count, 2 the first dimension's
 * name length, 3 the first variable's nc_type, 4 its begin.  Returns the
 * file's size (header plus data, zeros). */
static size_t build(wr *w, int version, int64_t numrecs, const tvar *vars,
                    int nvars, size_t off[5]) {
  static const char *const dn[3] = {"t", "n", "c"};
  static const int64_t dl[3] = {0, 4, 3};
  memset(w, 0, sizeof *w);
  w->version = version;
  memcpy(w->b, "CDF", 3);
  w->b[3] = (unsigned char)version;
  w->n = 4;
  off[0] = w->n;
  wnn(w, (uint64_t)numrecs);
  w32(w, 0x0A);
  off[1] = w->n;
  wnn(w, 3);
  off[2] = w->n;
  for (int i = 0; i < 3; i++) {
    wname(w, dn[i]);
    wnn(w, (uint64_t)dl[i]);
  }
  /* global attributes: a 5-char title and 3 shorts (both padded) */
  w32(w, 0x0C);
  wnn(w, 2);
  wname(w, "title");
  w32(w, 2);
  wnn(w, 5);
  memcpy(w->b + w->n, "hello\0\0", 8);
  w->n += 8;
  wname(w, "levels");
  w32(w, 3);
  wnn(w, 3);
  w->n += 8;
  w32(w, nvars ? 0x0B : 0);
  wnn(w, (uint64_t)nvars);
  size_t begin_at[8];
  for (int i = 0; i < nvars; i++) {
    wname(w, vars[i].name);
    wnn(w, (uint64_t)vars[i].ndims);
    for (int d = 0; d < vars[i].ndims; d++)
      wnn(w, (uint64_t)vars[i].dimids[d]);
    w32(w, 0);
    wnn(w, 0);
    if (i == 0)
      off[3] = w->n;
    w32(w, (uint64_t)vars[i].type);
    wnn(w, (uint64_t)((vars[i].bytes + 3) & ~3));
    if (i == 0)
      off[4] = w->n;
    begin_at[i] = w->n;
    wbegin(w, 0);
  }
  /* Fixed variables first, then the records. */
  int64_t pos = (int64_t)w->n, recsize = 0;
  for (int i = 0; i < nvars; i++) {
    if (vars[i].ndims && vars[i].dimids[0] == 0)
      continue;
    size_t save = w->n;
    w->n = begin_at[i];
    wbegin(w, (uint64_t)pos);
    w->n = save;
    pos += (vars[i].bytes + 3) & ~3;
  }
  for (int i = 0; i < nvars; i++) {
    if (!(vars[i].ndims && vars[i].dimids[0] == 0))
      continue;
    size_t save = w->n;
    w->n = begin_at[i];
    wbegin(w, (uint64_t)(pos + recsize));
    w->n = save;
    recsize += (vars[i].bytes + 3) & ~3;
  }
  return (size_t)(pos + recsize * (numrecs < 0 ? 0 : numrecs));
}

/* Parse the first len bytes (an exact-size copy) of a file of fsize. */
static int parse(const unsigned char *b, size_t len, int64_t fsize,
                 ferry__cdf **h, ferry__err *e) {
  unsigned char *copy = malloc(len ? len : 1);
  if (!copy)
    return FERRY_ENOMEM;
  memcpy(copy, b, len);
  memset(e, 0, sizeof *e);
  int rc = ferry__cdf_parse(copy, len, fsize, PATH, h, e);
  free(copy);
  return rc;
}

static const tvar VARS[] = {
    {"x", 2, {1, 2}, 3, 4 * 3 * 2}, /* short x(n, c): fixed, 24 bytes    */
    {"r", 1, {0}, 1, 1},            /* byte r(t): 1 byte, padded to 4    */
    {"r2", 2, {0, 2}, 5, 12},       /* float r2(t, c): 12 bytes a record */
    {"s", 0, {0}, 6, 8},            /* double s: a scalar                */
};

static int test_good(int version) {
  wr w;
  size_t off[5];
  size_t fsize = build(&w, version, 2, VARS, 4, off);
  ferry__cdf *h = NULL;
  ferry__err e;
  int rc = parse(w.b, w.n, (int64_t)fsize, &h, &e);
  REQUIRE(rc == 0, "CDF-%d: rc %d: %s", version, rc, e.msg);
  int v = 0, nvars = 0;
  int64_t numrecs = 0, recsize = 0;
  ferry__cdf_summary(h, &v, &nvars, &numrecs, &recsize);
  CHECK(v == version && nvars == 4 && numrecs == 2 && recsize == 16,
        "CDF-%d: version %d, %d vars, %lld records of %lld bytes", version, v,
        nvars, (long long)numrecs, (long long)recsize);
  ferry__cdf_free(h);

  /* STREAMING: the records the file holds (2 of 16 bytes). */
  wr s = w;
  memset(s.b + off[0], 0xff, version == 5 ? 8 : 4);
  rc = parse(s.b, s.n, (int64_t)fsize, &h, &e);
  REQUIRE(rc == 0, "CDF-%d streaming: rc %d: %s", version, rc, e.msg);
  ferry__cdf_summary(h, &v, &nvars, &numrecs, &recsize);
  CHECK(numrecs == 2, "CDF-%d streaming: %lld records", version,
        (long long)numrecs);
  ferry__cdf_free(h);

  /* A single record variable of 1 byte: records of 1 byte, not 4. */
  wr one;
  fsize = build(&one, version, 5, &VARS[1], 1, off);
  rc = parse(one.b, one.n, (int64_t)fsize, &h, &e);
  REQUIRE(rc == 0, "CDF-%d one record variable: %s", version, e.msg);
  ferry__cdf_summary(h, &v, &nvars, &numrecs, &recsize);
  CHECK(recsize == 1 && numrecs == 5, "CDF-%d one record variable: %lld",
        version, (long long)recsize);
  ferry__cdf_free(h);

  /* No variable, no dimension used: parses. */
  wr none;
  fsize = build(&none, version, 0, NULL, 0, off);
  rc = parse(none.b, none.n, (int64_t)fsize, &h, &e);
  CHECK(rc == 0, "CDF-%d without variables: %s", version, e.msg);
  ferry__cdf_free(h);
  return 0;
}

/* Any outcome but a crash: 0, or a negative code naming the file. */
static void fuzz_one(const unsigned char *b, size_t len, int64_t fsize,
                     const char *what, size_t at) {
  ferry__cdf *h = NULL;
  ferry__err e;
  int rc = parse(b, len, fsize, &h, &e);
  if (rc == 0) {
    CHECK(h != NULL, "%s at %zu: success without a header", what, at);
    ferry__cdf_free(h);
    return;
  }
  CHECK(rc < 0 && h == NULL, "%s at %zu: rc %d", what, at, rc);
  CHECK(rc == FERRY_EFORMAT || rc == FERRY_ENOMEM, "%s at %zu: rc %d: %s", what,
        at, rc, e.msg);
  CHECK(strstr(e.msg, PATH) != NULL, "%s at %zu: message '%s'", what, at,
        e.msg);
}

static void test_fuzz(int version) {
  wr w;
  size_t off[5];
  size_t fsize = build(&w, version, 2, VARS, 4, off);
  /* The data after the header is zeros: the parse sees the whole file. */
  unsigned char *file = calloc(1, fsize);
  if (!file) {
    CHECK(0, "out of memory");
    return;
  }
  memcpy(file, w.b, w.n);
  for (size_t n = 0; n < w.n; n++) {
    /* Every truncation, as a whole file: a clear refusal. */
    ferry__cdf *h = NULL;
    ferry__err e;
    int rc = parse(file, n, (int64_t)n, &h, &e);
    CHECK(rc == FERRY_EFORMAT && strstr(e.msg, PATH),
          "CDF-%d truncated to %zu bytes: rc %d: %s", version, n, rc, e.msg);
    ferry__cdf_free(h);
    /* As the first n bytes of the whole file: read more. */
    rc = parse(file, n, (int64_t)fsize, &h, &e);
    CHECK(rc == 1 && h == NULL, "CDF-%d first %zu bytes: rc %d", version, n,
          rc);
  }
  unsigned char *m = malloc(fsize);
  for (size_t i = 0; m && i < w.n; i++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(m, file, fsize);
      m[i] ^= (unsigned char)(1u << bit);
      fuzz_one(m, fsize, (int64_t)fsize, "bit flip", i);
    }
    static const unsigned char vals[4] = {0x00, 0x7f, 0x80, 0xff};
    for (int k = 0; k < 4; k++) {
      memcpy(m, file, fsize);
      m[i] = vals[k];
      fuzz_one(m, fsize, (int64_t)fsize, "byte set", i);
    }
  }
  free(m);
  free(file);
}

/* rc must be code and the message hold every word. */
static void refused(const wr *w, size_t fsize, int code, const char *w1,
                    const char *w2) {
  ferry__cdf *h = NULL;
  ferry__err e;
  int rc = parse(w->b, w->n, (int64_t)fsize, &h, &e);
  CHECK(rc == code && strstr(e.msg, PATH) && strstr(e.msg, w1) &&
            (!w2 || strstr(e.msg, w2)),
        "rc %d (want %d), message '%s' (want '%s', '%s')", rc, code, e.msg, w1,
        w2 ? w2 : "");
  ferry__cdf_free(h);
}

static void set(wr *w, size_t at, uint64_t v, int bytes) {
  size_t save = w->n;
  w->n = at;
  put(w, v, bytes);
  w->n = save;
}

static void test_refusals(void) {
  wr w, b;
  size_t off[5];
  size_t fsize = build(&w, 1, 2, VARS, 4, off);
  char at[64];

  b = w;
  memcpy(b.b, "CDF\x03", 4);
  refused(&b, fsize, FERRY_EFORMAT, "not a netCDF classic file", NULL);
  b = w;
  set(&b, off[2], 0x7ffffff0, 4);
  snprintf(at, sizeof at, "offset %zu", off[2]);
  refused(&b, fsize, FERRY_EFORMAT, at, "dimension name length is 2147483632");
  b = w;
  set(&b, off[1], 0x7fffffff, 4);
  snprintf(at, sizeof at, "offset %zu", off[1]);
  refused(&b, fsize, FERRY_EFORMAT, at, "dimension list is 2147483647");
  b = w;
  set(&b, off[3], 99, 4);
  snprintf(at, sizeof at, "offset %zu", off[3]);
  refused(&b, fsize, FERRY_EFORMAT, at, "nc_type 99");
  b = w;
  set(&b, off[3], 11, 4);
  refused(&b, fsize, FERRY_EFORMAT, at, "not a netCDF type of CDF-1");
  b = w;
  set(&b, off[4], 8, 4);
  refused(&b, fsize, FERRY_EFORMAT, "begins at 8, inside the header", NULL);
  b = w;
  set(&b, off[0], 0x80000000u, 4);
  refused(&b, fsize, FERRY_EFORMAT, "offset 4", "numrecs is negative");
  /* A tag that is no list's. */
  b = w;
  set(&b, off[1] - 4, 0x0B, 4);
  refused(&b, fsize, FERRY_EFORMAT, "dimension list tag is 0xb", NULL);
  /* CDF-5: a 64-bit dimension length of 2^62 makes x(n, c) overflow. */
  fsize = build(&w, 5, 2, VARS, 4, off);
  b = w;
  /* "t": name 12 bytes, length 8; then "n": name 12 bytes, its length. */
  set(&b, off[2] + 32, (uint64_t)1 << 62, 8);
  refused(&b, fsize, FERRY_EFORMAT, "variable 'x' ends past 2^63 bytes", NULL);
  /* Truncated inside the variable list: the count is checked first. */
  refused(&(wr){.n = 0}, 0, FERRY_EFORMAT, "not a netCDF classic file", NULL);
  b = w;
  b.n = off[3] + 2;
  refused(&b, b.n, FERRY_EFORMAT, "variable list is 4", "50 bytes left");
}

/* ferry__byteswap (util/bytes.c) against a byte-by-byte reversal, for
 * every element size the vector and scalar loops handle and every length
 * around their 16-byte steps, at an unaligned start. */
static void test_byteswap(void) {
  unsigned char buf[1 + 8 * 40], want[8 * 40];
  for (size_t el = 2; el <= 8; el *= 2)
    for (size_t n = 0; n <= 40; n++) {
      unsigned char *p = buf + 1;
      for (size_t i = 0; i < n * el; i++)
        p[i] = (unsigned char)(i * 7 + 1);
      for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < el; b++)
          want[i * el + b] = p[i * el + el - 1 - b];
      ferry__byteswap(p, n, el);
      CHECK(memcmp(p, want, n * el) == 0, "byteswap of %zu elements of %zu", n,
            el);
    }
}

int main(void) {
  test_byteswap();
  for (int v = 1; v <= 5; v++) {
    if (v == 3 || v == 4)
      continue;
    test_good(v);
    test_fuzz(v);
  }
  test_refusals();
  return ft_summary("test_classic");
}
