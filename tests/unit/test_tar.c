/*
 * test_tar.c - unit tests of the tar header scan and the WebDataset sample
 * grouping (backends/tar.c).  Archives are written here, header by header
 * (ustar, a PAX 'x' path, a GNU 'L' long name, a base-256 size, a
 * directory and a __meta__ member): the samples, their extensions, their
 * payloads' offsets and sizes and the cls values are what was written.
 * Then every truncation, every single-bit flip and every byte set to 0x00
 * and 0xff of a valid archive: the scan returns 0 or a negative code with
 * a message naming the archive, never crashes or reads outside its bytes
 * (each input is its own malloc'd copy of exactly its length, so the ASan
 * tier catches an over-read), and what it accepts has every payload inside
 * the bytes.  Finally the refusals, each with its code and offset.
 *
 * Exit status: 0 pass, 1 fail (each failure is printed).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

/* ---- A tar writer ----------------------------------------------------- */

typedef struct tw {
  unsigned char b[65536];
  size_t n;
} tw;

static void header(tw *t, const char *name, int type, size_t size,
                   int base256) {
  unsigned char *h = t->b + t->n;
  memset(h, 0, 512);
  strncpy((char *)h, name, 100);
  memcpy(h + 100, "0000444", 7);
  if (base256) {
    h[124] = 0x80;
    for (int i = 0; i < 8; i++)
      h[135 - i] = (unsigned char)(size >> (8 * i));
  } else {
    char f[32];
    snprintf(f, sizeof f, "%011llo",
             (unsigned long long)size & 077777777777ULL);
    memcpy(h + 124, f, 11);
  }
  h[156] = (unsigned char)type;
  memcpy(h + 257,
         "ustar\0"
         "00",
         8);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  t->n += 512;
}

static void payload(tw *t, const void *p, size_t n) {
  memcpy(t->b + t->n, p, n);
  t->n += (n + 511) / 512 * 512;
}

static void add(tw *t, const char *name, const char *data) {
  header(t, name, '0', strlen(data), 0);
  payload(t, data, strlen(data));
}

static void end(tw *t) {
  memset(t->b + t->n, 0, 1024);
  t->n += 1024;
}

static int build_m(const unsigned char *p, size_t n, const char *select,
                   const char *missing, ferry__tar_index *x, ferry__err *err) {
  unsigned char *copy = malloc(n ? n : 1);
  memcpy(copy, p, n);
  ferry__tar_mem mem = {.p = copy, .n = n};
  ferry__tar_src src = {.read = ferry__tar_mem_read,
                        .ctx = &mem,
                        .size = (int64_t)n,
                        .path = "t.tar"};
  memset(err, 0, sizeof *err);
  int rc = ferry__tar_index_build(&src, select, missing, x, err);
  free(copy);
  return rc;
}

static int build(const unsigned char *p, size_t n, const char *select,
                 ferry__tar_index *x, ferry__err *err) {
  return build_m(p, n, select, NULL, x, err);
}

/* The archive of the valid tests: 3 samples, every kind of header. */
static void good(tw *t) {
  memset(t, 0, sizeof *t);
  header(t, "__meta__", '0', 3, 0);
  payload(t, "abc", 3);
  header(t, "dir", '5', 0, 0);
  add(t, "dir/k0.cls", " 12\n");
  add(t, "dir/k0.JPG", "jpeg0");
  static const char pax[] = "30 path=dir/long-key-0001.cls\n";
  header(t, "PaxHeaders/x", 'x', strlen(pax), 0);
  payload(t, pax, strlen(pax));
  add(t, "ignored-name.cls", "-7");
  add(t, "dir/long-key-0001.jpg", "");
  static const char ln[] = "dir/gnu-key.cls";
  header(t, "././@LongLink", 'L', sizeof ln, 0);
  payload(t, ln, sizeof ln);
  add(t, "dir/gnu-k", "3");
  header(t, "dir/gnu-key.jpg", '0', 4, 1);
  payload(t, "JPEG", 4);
  end(t);
}

static int test_good(void) {
  tw t;
  good(&t);
  ferry__tar_index x;
  ferry__err err;
  int rc = build(t.b, t.n, NULL, &x, &err);
  REQUIRE(rc == 0, "good archive refused: %s", err.msg);
  CHECK(x.n == 3 && x.nvars == 2, "%lld samples, %d vars", (long long)x.n,
        x.nvars);
  CHECK(x.skipped == 2, "skipped %lld", (long long)x.skipped);
  /* __meta__ 0, dir 1024, k0 1536; the PAX header 3584; the 'L' 6144 */
  CHECK(x.start[0] == 1536 && x.start[1] == 3584 && x.start[2] == 6144,
        "starts %lld %lld %lld", (long long)x.start[0], (long long)x.start[1],
        (long long)x.start[2]);
  CHECK(x.end == 9216, "end %lld", (long long)x.end);
  const ferry__tar_var *c = NULL, *j = NULL;
  for (int v = 0; v < x.nvars; v++) {
    if (!strcmp(x.vars[v].ext, "cls"))
      c = &x.vars[v];
    if (!strcmp(x.vars[v].ext, "jpg"))
      j = &x.vars[v];
  }
  REQUIRE(c && j, "extensions cls and jpg (lower-cased)");
  CHECK(c->kind == FERRY__TAR_INT && c->pos[0] == 12 && c->pos[1] == -7 &&
            c->pos[2] == 3,
        "cls %lld %lld %lld", (long long)c->pos[0], (long long)c->pos[1],
        (long long)c->pos[2]);
  CHECK(j->kind == FERRY__TAR_BYTES && j->len[0] == 5 && j->len[1] == 0 &&
            j->len[2] == 4,
        "jpg sizes");
  CHECK(memcmp(t.b + j->pos[0], "jpeg0", 5) == 0 &&
            memcmp(t.b + j->pos[2], "JPEG", 4) == 0,
        "jpg payloads");
  unsigned char side[4 * 8];
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 8; k++)
      side[8 * i + k] =
          (unsigned char)((uint64_t)(i < 3 ? x.start[i] : x.end) >> (8 * k));
  char why[160];
  CHECK(ferry__tar_sidecar_check(side, sizeof side, &x, why, sizeof why) == 0,
        "its own sidecar");
  side[8] ^= 1;
  CHECK(ferry__tar_sidecar_check(side, sizeof side, &x, why, sizeof why) == 1 &&
            strstr(why, "entry 1"),
        "a stale sidecar: %s", why);
  ferry__tar_index_free(&x);
  rc = build(t.b, t.n, "jpg", &x, &err);
  CHECK(rc == 0 && x.nvars == 1 && x.ignored == 3, "select jpg");
  ferry__tar_index_free(&x);
  return 0;
}

/* Every truncation, bit flip and byte value: accepted or refused, no
 * crash, what is accepted inside the bytes. */
static void one_damaged(const unsigned char *p, size_t n) {
  ferry__tar_index x;
  ferry__err err;
  int rc = build(p, n, NULL, &x, &err);
  if (rc < 0) {
    CHECK(err.code < 0 && strstr(err.msg, "t.tar"),
          "a refusal without the "
          "file: %s",
          err.msg);
    return;
  }
  for (int v = 0; v < x.nvars; v++)
    for (int64_t i = 0; i < x.n; i++)
      CHECK(x.vars[v].len[i] >= 0 &&
                (x.vars[v].kind != FERRY__TAR_BYTES ||
                 x.vars[v].pos[i] + x.vars[v].len[i] <= (int64_t)n),
            "a payload outside the bytes");
  ferry__tar_index_free(&x);
}

static void test_damage(void) {
  tw t;
  good(&t);
  for (size_t k = 0; k < t.n; k += (k < 4096 ? 1 : 37))
    one_damaged(t.b, k);
  unsigned char *c = malloc(t.n);
  for (size_t i = 0; i < t.n; i++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(c, t.b, t.n);
      c[i] ^= (unsigned char)(1u << bit);
      one_damaged(c, t.n);
    }
    memcpy(c, t.b, t.n);
    c[i] = 0;
    one_damaged(c, t.n);
    c[i] = 0xff;
    one_damaged(c, t.n);
  }
  free(c);
}

static void refused(tw *t, const char *want) {
  ferry__tar_index x;
  ferry__err err;
  int rc = build(t->b, t->n, NULL, &x, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, want),
        "want a refusal with '%s', got %d: %s", want, rc, err.msg);
  if (rc == 0)
    ferry__tar_index_free(&x);
}

static void test_refusals(void) {
  tw t;
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  add(&t, "b.cls", "2");
  add(&t, "a.jpg", "x");
  end(&t);
  refused(&t, "offset 2048: member a... starts a sample of key 'a'");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  add(&t, "a.cls", "2");
  end(&t);
  refused(&t, "offset 1024: member 'a.cls' is the second member");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  add(&t, "a.jpg", "1");
  add(&t, "b.cls", "1");
  end(&t);
  refused(&t, "offset 2048: sample 'b' has no member b.jpg");
  memset(&t, 0, sizeof t);
  add(&t, "a.", "1");
  end(&t);
  refused(&t, "offset 0: member 'a.' is not named KEY.EXTENSION (it ends");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1x");
  end(&t);
  refused(&t, "member a.cls is not an ASCII integer ('1x')");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "99999999999999999999");
  end(&t);
  refused(&t, "not an ASCII integer");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  t.b[5] ^= 1;
  end(&t);
  refused(&t, "offset 0: a tar header whose checksum is wrong");
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  refused(&t, "no end-of-archive block after its last member (offset 1024)");
  memset(&t, 0, sizeof t);
  static const char bad[] = "99 path=x.cls\n";
  header(&t, "x", 'x', strlen(bad), 0);
  payload(&t, bad, strlen(bad));
  add(&t, "y.cls", "1");
  end(&t);
  refused(&t, "offset 0: a malformed PAX extended header");
  memset(&t, 0, sizeof t);
  header(&t, "big.jpg", '0', (size_t)1 << 40, 1);
  end(&t);
  refused(&t, "runs past the end of the file");
  memset(&t, 0, sizeof t);
  end(&t);
  refused(&t, "no member");
}

/* missing=: defaults for the samples without a member. */
static void test_missing(void) {
  tw t;
  memset(&t, 0, sizeof t);
  add(&t, "a.cls", "1");
  add(&t, "a.jpg", "xy");
  add(&t, "b.jpg", "z");
  add(&t, "c.cls", "3");
  end(&t);
  ferry__tar_index x;
  ferry__err err;
  int rc = build_m(t.b, t.n, NULL, "cls=-1,jpg=", &x, &err);
  CHECK(rc == 0, "missing=cls=-1,jpg=: %s", err.msg);
  if (rc == 0) {
    const ferry__tar_var *c =
        !strcmp(x.vars[0].ext, "cls") ? &x.vars[0] : &x.vars[1];
    const ferry__tar_var *j = c == &x.vars[0] ? &x.vars[1] : &x.vars[0];
    CHECK(c->pos[0] == 1 && c->pos[1] == -1 && c->pos[2] == 3, "cls defaults");
    CHECK(j->len[0] == 2 && j->len[1] == 1 && j->len[2] == 0 &&
              j->pos[2] == j->pos[1] + 1,
          "jpg: an empty sample after the last payload");
    ferry__tar_index_free(&x);
  }
  rc = build_m(t.b, t.n, NULL, "cls=-1", &x, &err);
  CHECK(rc == FERRY_EFORMAT &&
            strstr(err.msg, "sample 'c' has no member c.jpg"),
        "jpg without a default: %s", err.msg);
  rc = build_m(t.b, t.n, NULL, "cls=x,jpg=", &x, &err);
  CHECK(rc == FERRY_EINVAL && strstr(err.msg, "cls=x"), "cls=x: %s", err.msg);
  rc = build_m(t.b, t.n, NULL, "cls=1,jpg=abc", &x, &err);
  CHECK(rc == FERRY_EINVAL && strstr(err.msg, "jpg=abc"), "jpg=abc: %s",
        err.msg);
}

/* The checksum of a header with bytes >= 0x80 (a non-ASCII name): its
 * unsigned sum (POSIX) and its signed one (some old tars) differ, and both
 * are accepted; a third number is refused.  Pins the vectorised sum. */
static void test_checksums(void) {
  for (int how = 0; how < 3; how++) {
    tw t;
    memset(&t, 0, sizeof t);
    add(&t, "\xe9t\xe9-k.cls", "1");
    end(&t);
    unsigned char *h = t.b;
    memset(h + 148, ' ', 8);
    unsigned u = 0;
    int s = 0;
    for (int i = 0; i < 512; i++) {
      u += h[i];
      s += (signed char)h[i];
    }
    CHECK(s > 0 && (unsigned)s != u, "the sums should differ: %u %d", u, s);
    unsigned v = how == 0 ? u : how == 1 ? (unsigned)s : u + 1;
    snprintf((char *)h + 148, 8, "%06o", v);
    ferry__tar_index x;
    ferry__err err;
    int rc = build(t.b, t.n, NULL, &x, &err);
    if (how < 2) {
      CHECK(rc == 0, "checksum %s sum refused: %s", how ? "signed" : "unsigned",
            err.msg);
      if (rc == 0)
        ferry__tar_index_free(&x);
    } else
      CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "checksum is wrong"),
            "a wrong checksum: rc %d %s", rc, err.msg);
  }
}

int main(void) {
  test_good();
  test_damage();
  test_refusals();
  test_missing();
  test_checksums();
  return ft_summary("test_tar");
}
