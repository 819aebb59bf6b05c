/*
 * test_npy.c - unit tests of ferry's storage layer: the .npy header parser,
 * byte swapping, the mem backend and its value encoding, dataset resolution
 * (globs with **, @list files, directories), the variable selection, the
 * manifest's pack/unpack and JSON forms, and MPI-IO reads of the npy backend
 * on one rank.  When NumPy is available (PYTHON_NUMPY and top_srcdir, as
 * make check exports them, or FERRY_NPY_FIXTURES naming a directory written
 * by tests/fixtures/make_npy.py) every fixture written by NumPy itself is
 * read back and checked value by value.  Scratch files go to a fresh
 * directory under FERRY_TEST_TMPDIR (or /tmp), removed at the end unless
 * FERRY_KEEP_TMP is set.
 *
 * Exit status: 0 pass, 1 fail (each failure is printed), 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include "backends/backend.h"
#include "backends/gen.h"
#include "backends/npy.h"
#include "core/options.h"
#include "dataset/dataset.h"
#include "plan/plan.h"

#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ferry_test.h"

/* rc must be code; the message must mention want (if given). */
static void expect_code(int rc, int code, const ferry__err *e, const char *want,
                        const char *expr, int line) {
  ft_checks++;
  if (rc != code) {
    ft_fail_at(__FILE__, line, expr);
    fprintf(stderr, "got %d, want %d; message: %s\n", rc, code, e->msg);
  } else if (want && !strstr(e->msg, want)) {
    ft_fail_at(__FILE__, line, expr);
    fprintf(stderr, "message '%s' lacks '%s'\n", e->msg, want);
  }
}
#define EXPECT_CODE(rc, code, e, want)                                         \
  expect_code((rc), (code), &(e), (want), #rc, __LINE__)

static char tmpdir[256];

static int host_little(void) {
  const uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* ---- In-memory headers ------------------------------------------------ */

/* Magic, version major.minor, length field, then dict as given. */
static size_t make_header(unsigned char *buf, size_t cap, int major, int minor,
                          const char *dict) {
  size_t n = strlen(dict), start = major == 1 ? 10 : 12;
  if (start + n > cap)
    return 0;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = (unsigned char)minor;
  buf[8] = (unsigned char)(n & 0xff);
  buf[9] = (unsigned char)(n >> 8);
  if (major != 1) {
    buf[10] = (unsigned char)(n >> 16);
    buf[11] = (unsigned char)(n >> 24);
  }
  memcpy(buf + start, dict, n);
  return start + n;
}

static int parse_dict(const char *dict, int major, ferry__npy_header *h,
                      ferry__err *e) {
  unsigned char buf[4096];
  size_t len = make_header(buf, sizeof buf, major, 0, dict);
  memset(e, 0, sizeof *e);
  return ferry__npy_parse_header(buf, len, h, "test.npy", e);
}

static void test_header_dtypes(void) {
  static const struct {
    const char *descr;
    ferry_dtype dtype;
    char order;
  } cases[] = {
      {"|b1", FERRY_BOOL, '|'},    {"<i1", FERRY_INT8, '<'},
      {"|i1", FERRY_INT8, '|'},    {"<i2", FERRY_INT16, '<'},
      {">i2", FERRY_INT16, '>'},   {"<i4", FERRY_INT32, '<'},
      {">i4", FERRY_INT32, '>'},   {"<i8", FERRY_INT64, '<'},
      {">i8", FERRY_INT64, '>'},   {"|u1", FERRY_UINT8, '|'},
      {">u1", FERRY_UINT8, '>'},   {"<u2", FERRY_UINT16, '<'},
      {">u2", FERRY_UINT16, '>'},  {"<u4", FERRY_UINT32, '<'},
      {">u4", FERRY_UINT32, '>'},  {"<u8", FERRY_UINT64, '<'},
      {">u8", FERRY_UINT64, '>'},  {"<f2", FERRY_FLOAT16, '<'},
      {">f2", FERRY_FLOAT16, '>'}, {"<f4", FERRY_FLOAT32, '<'},
      {">f4", FERRY_FLOAT32, '>'}, {"<f8", FERRY_FLOAT64, '<'},
      {">f8", FERRY_FLOAT64, '>'}, {"=f8", FERRY_FLOAT64, '='},
      {"f4", FERRY_FLOAT32, '='},  {">b1", FERRY_BOOL, '>'},
  };
  char dict[256];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ferry__npy_header h;
    ferry__err e;
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': (97, 3), }",
             cases[i].descr);
    int rc = parse_dict(dict, 1, &h, &e);
    CHECK(rc == 0, "descr %s: rc %d: %s", cases[i].descr, rc, e.msg);
    if (rc)
      continue;
    int multi = ferry_dtype_size(cases[i].dtype) > 1;
    int want_swap = multi && ((cases[i].order == '>' && host_little()) ||
                              (cases[i].order == '<' && !host_little()));
    CHECK(h.dtype == cases[i].dtype, "descr %s: dtype %d", cases[i].descr,
          (int)h.dtype);
    CHECK(h.swapped == want_swap, "descr %s: swapped %d", cases[i].descr,
          h.swapped);
    CHECK(h.ndim == 2 && h.shape[0] == 97 && h.shape[1] == 3, "descr %s: shape",
          cases[i].descr);
  }
}

static void test_header_forms(void) {
  ferry__npy_header h;
  ferry__err e;
  /* versions: data follows the header at 10 + len or 12 + len */
  const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  for (int major = 1; major <= 3; major++) {
    int rc = parse_dict(d, major, &h, &e);
    CHECK(rc == 0, "version %d: %s", major, e.msg);
    CHECK(h.major == major && h.minor == 0, "version %d fields", major);
    CHECK(h.data_offset == (int64_t)((major == 1 ? 10 : 12) + strlen(d)),
          "version %d: data_offset %lld", major, (long long)h.data_offset);
    CHECK(h.ndim == 1 && h.shape[0] == 5, "version %d shape", major);
  }
  /* key orders, whitespace, quotes, Python 2 longs, trailing commas */
  static const char *ok[] = {
      "{'shape': (7, 2), 'fortran_order': False, 'descr': '<i4'}",
      "{'fortran_order': False, 'descr': '<i4', 'shape': (7, 2)}",
      "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(7,2)}",
      ("  {\n\t'descr' : '<i4' ,\n 'fortran_order' :False,"
       "'shape':( 7 , 2 , ) ,}   \n"),
      "{'descr': '<i4', 'fortran_order': False, 'shape': (7L, 2L), }",
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    int rc = parse_dict(ok[i], 1, &h, &e);
    CHECK(rc == 0, "form %zu: %s", i, e.msg);
    CHECK(rc || (h.dtype == FERRY_INT32 && h.ndim == 2 && h.shape[0] == 7 &&
                 h.shape[1] == 2),
          "form %zu: fields", i);
  }
  /* 8 dimensions are fine, 0 rows too */
  CHECK(parse_dict("{'descr': '<f4', 'fortran_order': False, "
                   "'shape': (3, 1, 1, 1, 1, 1, 1, 2), }",
                   1, &h, &e) == 0 &&
            h.ndim == 8 && h.shape[7] == 2,
        "8 dims: %s", e.msg);
  CHECK(parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (0, "
                   "3), }",
                   1, &h, &e) == 0 &&
            h.shape[0] == 0,
        "0 rows: %s", e.msg);
}

static void test_header_errors(void) {
  ferry__npy_header h;
  ferry__err e;
  unsigned char buf[512];
  static const struct {
    const char *dict;
    int code;
    const char *want;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", FERRY_EFORMAT,
       "0-d"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }",
       FERRY_ENOTSUP, "ascontiguousarray"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'|O'"},
      {"{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, "
       "'shape': (3,), }",
       FERRY_ENOTSUP, "structured"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'<c8'"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'<U3'"},
      {"{'descr': '|S5', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'|S5'"},
      {"{'descr': '|V8', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'|V8'"},
      {"{'descr': '<M8[s]', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "datetime64"},
      {"{'descr': '<m8[s]', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "timedelta64"},
      {"{'descr': '<f16', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'<f16'"},
      {"{'descr': '<i3', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'<i3'"},
      {"{'descr': '<x4', 'fortran_order': False, 'shape': (3,), }",
       FERRY_ENOTSUP, "'<x4'"},
      {"{'descr': '', 'fortran_order': False, 'shape': (3,), }", FERRY_EFORMAT,
       "dtype"},
      {"{'fortran_order': False, 'shape': (3,), }", FERRY_EFORMAT, "'descr'"},
      {"{'descr': '<f4', 'shape': (3,), }", FERRY_EFORMAT, "'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, }", FERRY_EFORMAT, "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (3, 1, 1, 1, 1, 1, 1, 1, 2), }",
       FERRY_ENOTSUP, "9 dimensions"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
       FERRY_EFORMAT, "unknown key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (3,)}",
       FERRY_EFORMAT, "duplicate"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x",
       FERRY_EFORMAT, "after the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
       FERRY_EFORMAT, "byte"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", FERRY_EFORMAT,
       "tuple"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (99999999999999999999,)}",
       FERRY_EFORMAT, "overflow"},
      {"{'descr': '<f8', 'fortran_order': False, "
       "'shape': (4611686018427387904, 4)}",
       FERRY_EFORMAT, "overflow"},
      {"{'descr': '<f4', 'fortran_order': Tru, 'shape': (3,)}", FERRY_EFORMAT,
       "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (3,)}",
       FERRY_EFORMAT, "True or False"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}", FERRY_EFORMAT,
       "byte"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}", FERRY_EFORMAT,
       "expected ','"},
      {"['descr', '<f4']", FERRY_EFORMAT, "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", FERRY_EFORMAT,
       "byte"},
      {"", FERRY_EFORMAT, "byte 10"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int rc = parse_dict(cases[i].dict, 1, &h, &e);
    EXPECT_CODE(rc, cases[i].code, e, cases[i].want);
    if (rc != cases[i].code)
      fprintf(stderr, "  (case %zu: %s)\n", i, cases[i].dict);
    CHECK(strstr(e.msg, "test.npy") != NULL,
          "case %zu: message lacks the "
          "file name: %s",
          i, e.msg);
  }

  /* bad magic, short buffers, lengths beyond the buffer, versions */
  const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  size_t len = make_header(buf, sizeof buf, 1, 0, d);
  buf[1] = 'n';
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_EFORMAT,
              e, "not a .npy file");
  EXPECT_CODE(ferry__npy_parse_header(NULL, 0, &h, "x.npy", &e), FERRY_EFORMAT,
              e, "not a .npy file");
  len = make_header(buf, sizeof buf, 1, 0, d);
  for (size_t k = 0; k < len; k++) {
    int rc = ferry__npy_parse_header(buf, k, &h, "x.npy", &e);
    CHECK(rc == FERRY_EFORMAT, "prefix of %zu bytes: rc %d", k, rc);
    if (k >= 6)
      CHECK(strstr(e.msg, "byte") != NULL, "prefix %zu: no offset in '%s'", k,
            e.msg);
  }
  buf[8] = 0xff; /* header length 65535+: beyond the buffer */
  buf[9] = 0xff;
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_EFORMAT,
              e, "truncated .npy header at byte");
  len = make_header(buf, sizeof buf, 2, 0, d);
  buf[11] = 0x7f; /* 2 GiB header length */
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_EFORMAT,
              e, "byte 8");
  len = make_header(buf, sizeof buf, 4, 0, d);
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_ENOTSUP,
              e, "version 4.0");
  len = make_header(buf, sizeof buf, 1, 1, d);
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_ENOTSUP,
              e, "version 1.1");
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, NULL, &e), FERRY_ENOTSUP, e,
              NULL);

  /* ferry__npy_parse_array_header (a WebDataset member's array): 0-d
   * accepted, everything else as ferry__npy_parse_header */
  len = make_header(buf, sizeof buf, 1, 0,
                    "{'descr': '>f8', 'fortran_order': False, 'shape': (), }");
  memset(&e, 0, sizeof e);
  CHECK(ferry__npy_parse_array_header(buf, len, &h, "k.npy", &e) == 0 &&
            h.ndim == 0 && h.dtype == FERRY_FLOAT64 &&
            h.swapped == host_little() && h.data_offset == (int64_t)len,
        "a 0-d member: %s", e.msg);
  EXPECT_CODE(ferry__npy_parse_header(buf, len, &h, "x.npy", &e), FERRY_EFORMAT,
              e, "0-d");
  len = make_header(buf, sizeof buf, 1, 0,
                    "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}");
  EXPECT_CODE(
      ferry__npy_parse_array_header(buf, len, &h, "s.tar, member k.npy", &e),
      FERRY_ENOTSUP, e, "s.tar, member k.npy: array is stored in Fortran");
  len = make_header(buf, sizeof buf, 1, 0, d);
  EXPECT_CODE(ferry__npy_parse_array_header(buf, len - 1, &h, "k.npy", &e),
              FERRY_EFORMAT, e, "truncated .npy header");

  /* Any single corrupted byte: a clean result or a clean error. */
  len = make_header(buf, sizeof buf, 3, 0, d);
  for (size_t k = 0; k < len; k++)
    for (int bit = 0; bit < 8; bit++) {
      buf[k] ^= (unsigned char)(1u << bit);
      int rc = ferry__npy_parse_header(buf, len, &h, "x.npy", &e);
      CHECK(rc == 0 || rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP,
            "flip byte %zu bit %d: rc %d", k, bit, rc);
      buf[k] ^= (unsigned char)(1u << bit);
    }
}

/* Seeded random damage to a real header (several bytes, printable
 * characters that keep the parser busy, random lengths): the parser must
 * return 0 or a clean error and never read past len (ASan builds check). */
static void test_header_fuzz(void) {
  static const char alphabet[] = "{}()[],:'\" 0123456789TrueFalsL<>|=bfiuOc\n";
  const char *d = "{'descr': '>f8', 'fortran_order': False, 'shape': (97, 3, "
                  "4), }                                       \n";
  unsigned char good[256], buf[256];
  size_t glen = make_header(good, sizeof good, 2, 0, d);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  int parsed = 0;
  for (int iter = 0; iter < 20000; iter++) {
    memcpy(buf, good, glen);
    size_t len = glen;
    x = ferry__mix64(x + (uint64_t)iter);
    int edits = 1 + (int)(x % 4);
    for (int k = 0; k < edits; k++) {
      x = ferry__mix64(x);
      size_t at = 12 + (size_t)(x % (glen - 12));
      buf[at] = (unsigned char)alphabet[(x >> 20) % (sizeof alphabet - 1)];
    }
    if ((x >> 40) % 8 == 0)
      len = (size_t)((x >> 44) % glen);
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, buf, len);
    ferry__npy_header h;
    ferry__err e = {0};
    int rc = ferry__npy_parse_header(copy, len, &h, "fuzz.npy", &e);
    CHECK(rc == 0 || rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP,
          "fuzz %d: rc %d", iter, rc);
    CHECK(rc == 0 || strstr(e.msg, "fuzz.npy") != NULL,
          "fuzz %d: message lacks the file: %s", iter, e.msg);
    if (rc == 0) {
      parsed++;
      CHECK(h.ndim >= 1 && h.ndim <= FERRY_MAX_DIMS &&
                h.data_offset == (int64_t)glen && len == glen,
            "fuzz %d: accepted a bad header", iter);
    }
    free(copy);
  }
  CHECK(parsed > 0, "fuzz: no mutation parsed (the test damages too much)");
}

static void test_byteswap(void) {
  unsigned char b[16];
  for (int i = 0; i < 16; i++)
    b[i] = (unsigned char)i;
  ferry__byteswap(b, 2, 8);
  CHECK(b[0] == 7 && b[7] == 0 && b[8] == 15 && b[15] == 8, "swap 8");
  ferry__byteswap(b, 2, 8);
  for (int i = 0; i < 16; i++)
    CHECK(b[i] == i, "swap 8 twice: byte %d", i);
  ferry__byteswap(b, 4, 4);
  CHECK(b[0] == 3 && b[3] == 0 && b[4] == 7 && b[15] == 12, "swap 4");
  ferry__byteswap(b, 4, 4);
  ferry__byteswap(b, 8, 2);
  CHECK(b[0] == 1 && b[1] == 0 && b[14] == 15, "swap 2");
  ferry__byteswap(b, 8, 2);
  ferry__byteswap(b, 16, 1);
  ferry__byteswap(b, 0, 8);
  for (int i = 0; i < 16; i++)
    CHECK(b[i] == i, "swap identity: byte %d", i);
  uint32_t x = 0x01020304u;
  ferry__byteswap(&x, 1, 4);
  CHECK(x == 0x04030201u, "swap u32: %08x", x);
}

/* ---- Values ----------------------------------------------------------- */

static void test_gen_value(void) {
  uint8_t u8;
  int8_t i8;
  uint16_t u16;
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  float f32;
  double f64;
  ferry__gen_value(FERRY_INT8, 127, 0, &i8);
  CHECK(i8 == 127, "int8 127");
  ferry__gen_value(FERRY_INT8, 100, 28, &i8);
  CHECK(i8 == 0, "int8 wraps at 128");
  ferry__gen_value(FERRY_UINT8, 255, 1, &u8);
  CHECK(u8 == 0, "uint8 wraps at 256");
  ferry__gen_value(FERRY_BOOL, 3, 0, &u8);
  CHECK(u8 == 1, "bool odd");
  ferry__gen_value(FERRY_BOOL, 3, 1, &u8);
  CHECK(u8 == 0, "bool even");
  ferry__gen_value(FERRY_UINT16, 65536 + 5, 0, &u16);
  CHECK(u16 == 5, "uint16 wraps");
  ferry__gen_value(FERRY_INT32, INT64_C(1) << 31, 3, &i32);
  CHECK(i32 == 3, "int32 wraps at 2^31");
  ferry__gen_value(FERRY_UINT32, INT64_C(1) << 32, 0, &u32);
  CHECK(u32 == 0, "uint32 wraps at 2^32");
  ferry__gen_value(FERRY_INT64, INT64_C(1) << 62, 9, &i64);
  CHECK(i64 == 9, "int64 wraps at 2^62");
  ferry__gen_value(FERRY_UINT64, (INT64_C(1) << 62) - 1, 0, &u64);
  CHECK(u64 == (UINT64_C(1) << 62) - 1, "uint64 below 2^62");
  ferry__gen_value(FERRY_FLOAT32, (INT64_C(1) << 24) + 2, 0, &f32);
  CHECK(f32 == 2.0f, "float32 wraps at 2^24");
  ferry__gen_value(FERRY_FLOAT64, 12345, 5, &f64);
  CHECK(f64 == 12350.0, "float64");
  static const struct {
    int64_t v;
    uint16_t bits;
  } halves[] = {{0, 0x0000},    {1, 0x3c00},    {2, 0x4000},    {3, 0x4200},
                {1024, 0x6400}, {2047, 0x67ff}, {2048, 0x0000}, {1000, 0x63d0}};
  for (size_t i = 0; i < sizeof halves / sizeof *halves; i++) {
    ferry__gen_value(FERRY_FLOAT16, halves[i].v, 0, &u16);
    CHECK(u16 == halves[i].bits, "float16 of %lld: %04x, want %04x",
          (long long)halves[i].v, u16, halves[i].bits);
  }
  CHECK(ferry__gen_value(FERRY_DTYPE_COUNT, 0, 0, &u64) == FERRY_EINVAL,
        "bad dtype");
}

/* Expected stored bytes of rows [row, row+n) of a variable whose sample
 * numbers start at first. */
static void expected_rows(const ferry__var *v, int64_t first, int64_t n,
                          unsigned char *out) {
  size_t el = ferry_dtype_size(v->dtype);
  int64_t per = (int64_t)(v->row_bytes / el);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < per; k++, out += el)
      ferry__gen_value(v->dtype, first + i, k, out);
}

/* Read all of variable var of every part through io and compare with the
 * gen encoding (after swapping stored bytes to native). */
static int check_all_values(const ferry__backend *be, ferry__io *io,
                            const ferry__manifest *m, int var,
                            const char *what) {
  const ferry__var *v = &m->vars[var];
  int bad = 0;
  for (int64_t p = 0; p < m->nparts && !bad; p++) {
    const ferry__part *pt = &m->parts[p];
    size_t bytes = (size_t)pt->num_samples * v->row_bytes;
    unsigned char *got = malloc(bytes + 1), *want = malloc(bytes + 1);
    ferry__err e = {0};
    int rc = be->io_read(io, p, var, 0, pt->num_samples, got, &e);
    CHECK(rc == 0, "%s: read part %lld: %s", what, (long long)p, e.msg);
    if (rc == 0) {
      if (v->swapped)
        ferry__byteswap(got, bytes / ferry_dtype_size(v->dtype),
                        ferry_dtype_size(v->dtype));
      expected_rows(v, pt->first_sample, pt->num_samples, want);
      bad = memcmp(got, want, bytes) != 0;
      CHECK(!bad, "%s: values of part %lld differ", what, (long long)p);
    } else {
      bad = 1;
    }
    free(got);
    free(want);
  }
  return bad ? -1 : 0;
}

/* ---- mem backend ------------------------------------------------------ */

static void test_mem(void) {
  ferry__manifest m;
  ferry__err e = {0};
  const ferry__backend *be = ferry__backend_find("mem");
  CHECK(be != NULL && ferry__backend_for_scheme("mem:N=1") == be &&
            !ferry__backend_for_scheme("data/x.npy") &&
            !ferry__backend_for_scheme("memo:N=1") &&
            !ferry__backend_for_scheme("mem"),
        "mem scheme");
  int rc = ferry__manifest_scan(
      "mem:N=1000,vars=x:float32:4,y:int64,h:float16:2x3,b:bool", NULL, NULL,
      &m, &e);
  CHECK(rc == 0, "mem scan: %s", e.msg);
  if (rc)
    return;
  CHECK(strcmp(m.backend, "mem") == 0 && m.nparts == 1 &&
            m.num_samples == 1000 && m.nvars == 4,
        "mem manifest");
  CHECK(strcmp(m.vars[0].name, "x") == 0 && m.vars[0].dtype == FERRY_FLOAT32 &&
            m.vars[0].row_ndim == 1 && m.vars[0].row_shape[0] == 4 &&
            m.vars[0].row_bytes == 16,
        "mem var x");
  CHECK(strcmp(m.vars[1].name, "y") == 0 && m.vars[1].row_ndim == 0 &&
            m.vars[1].row_bytes == 8,
        "mem var y");
  CHECK(m.vars[2].row_ndim == 2 && m.vars[2].row_shape[1] == 3 &&
            m.vars[2].row_bytes == 12,
        "mem var h");
  ferry__io_params p = {MPI_COMM_SELF, 0, 0, 4, NULL, 0, 0, 0};
  ferry__io *io = NULL;
  rc = be->io_open(&io, &m, &p, &e);
  CHECK(rc == 0, "mem io_open: %s", e.msg);
  if (rc == 0) {
    for (int v = 0; v < m.nvars; v++)
      check_all_values(be, io, &m, v, "mem");
    float x[3 * 4];
    rc = be->io_read(io, 0, 0, 10, 3, x, &e);
    CHECK(rc == 0 && x[0] == 10.0f && x[3] == 13.0f && x[4] == 11.0f &&
              x[11] == 15.0f,
          "mem x rows 10..12");
    EXPECT_CODE(be->io_read(io, 0, 0, 999, 2, x, &e), FERRY_EINTERNAL, e,
                "outside");
    EXPECT_CODE(be->io_read(io, 0, 9, 0, 1, x, &e), FERRY_EINTERNAL, e, NULL);
    CHECK(be->io_read(io, 0, 0, 1000, 0, x, &e) == 0, "empty read at end");
    be->io_close(io);
  }
  ferry__manifest_free(&m);

  /* failure injection, on every rank or on one */
  rc = ferry__manifest_scan("mem:N=100,vars=x:int32,fail_at=50,fail_rank=1",
                            NULL, NULL, &m, &e);
  CHECK(rc == 0, "mem fail scan: %s", e.msg);
  if (rc == 0) {
    int32_t buf[100];
    for (int rank = 0; rank < 2; rank++) {
      ferry__io_params q = {MPI_COMM_SELF, rank, 0, 4, NULL, 0, 0, 0};
      if (be->io_open(&io, &m, &q, &e) != 0)
        continue;
      rc = be->io_read(io, 0, 0, 40, 20, buf, &e);
      if (rank == 1)
        EXPECT_CODE(rc, FERRY_EIO, e, "rank 1");
      else
        CHECK(rc == 0, "fail_rank=1 must not fail rank 0: %s", e.msg);
      CHECK(be->io_read(io, 0, 0, 0, 50, buf, &e) == 0, "rows before 50");
      CHECK(be->io_read(io, 0, 0, 51, 49, buf, &e) == 0, "rows after 50");
      be->io_close(io);
    }
    ferry__manifest_free(&m);
  }
  CHECK(ferry__manifest_scan("mem:N=10,vars=x:int8,fail_at=3", NULL, NULL, &m,
                             &e) == 0,
        "fail_at without fail_rank: %s", e.msg);
  if (m.nparts == 1) {
    ferry__io_params q = {MPI_COMM_SELF, 5, 0, 4, NULL, 0, 0, 0};
    int8_t buf[10];
    if (be->io_open(&io, &m, &q, &e) == 0) {
      EXPECT_CODE(be->io_read(io, 0, 0, 0, 10, buf, &e), FERRY_EIO, e,
                  "variable x");
      be->io_close(io);
    }
    ferry__manifest_free(&m);
  }

  static const struct {
    const char *spec;
    const char *want;
  } bad[] = {
      {"mem:N=10", "vars="},
      {"mem:vars=x:int8", "N="},
      {"mem:N=x,vars=a:float32", "'N=x'"},
      {"mem:N=-1,vars=a:float32", "'N=-1'"},
      {"mem:N=10,vars=a:float33", "'a:float33'"},
      {"mem:N=10,vars=a", "'a'"},
      {"mem:N=10,vars=:int8", "':int8'"},
      {"mem:N=10,vars=a:float32:0", "'a:float32:0'"},
      {"mem:N=10,vars=a:float32:2xx3", "'a:float32:2xx3'"},
      {"mem:N=10,vars=a:float32:1x1x1x1x1x1x1x1", "dimensions"},
      {"mem:N=10,vars=a:float32,a:int8", "'a'"},
      {"mem:N=10,,vars=a:int8", "empty"},
      {"mem:N=10,foo=1,vars=a:int8", "'foo=1'"},
      {"mem:x:int8,N=10", "'x:int8'"},
      {"mem:N=10,vars=a:int8,fail_at=z", "'fail_at=z'"},
      {"mem:N=4611686018427387904,vars=a:float64", "overflow"},
      {"mem:", "empty"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int r = ferry__manifest_scan(bad[i].spec, NULL, NULL, &m, &e);
    EXPECT_CODE(r, FERRY_EINVAL, e, bad[i].want);
    if (r != FERRY_EINVAL)
      fprintf(stderr, "  (spec %s)\n", bad[i].spec);
    CHECK(m.nvars == 0 && m.parts == NULL, "manifest left zeroed");
  }
  EXPECT_CODE(ferry__manifest_scan("mem:N=0,vars=a:int8", NULL, NULL, &m, &e),
              FERRY_EEMPTY, e, "no sample");
}

/* ---- Files ------------------------------------------------------------ */

static char *tpath(const char *rel) {
  static char buf[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
  return buf[k];
}

static void mkdirs(const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
  for (char *s = p + strlen(tmpdir) + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
}

/* Write a version 1.0 .npy of n rows of row shape (d1) (d1 = 0: scalar
 * rows) holding the gen encoding from sample first, big-endian if be. */
static void write_npy(const char *rel, ferry_dtype dt, int big, int64_t n,
                      int64_t d1, int64_t first) {
  static const char kinds[] = {'b', 'i', 'i', 'i', 'i', 'u',
                               'u', 'u', 'u', 'f', 'f', 'f'};
  size_t el = ferry_dtype_size(dt);
  char descr[8], dict[256];
  char order = el == 1 ? '|' : big ? '>' : '<';
  snprintf(descr, sizeof descr, "%c%c%zu", order, kinds[dt], el);
  if (d1)
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, "
             "%lld), }",
             descr, (long long)n, (long long)d1);
  else
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
             descr, (long long)n);
  size_t hl = strlen(dict) + 1, total = 10 + hl;
  size_t pad = (64 - total % 64) % 64;
  hl += pad;
  unsigned char head[512];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(hl & 0xff);
  head[9] = (unsigned char)(hl >> 8);
  memcpy(head + 10, dict, strlen(dict));
  memset(head + 10 + strlen(dict), ' ', pad);
  head[10 + hl - 1] = '\n';
  int64_t per = d1 ? d1 : 1;
  size_t bytes = (size_t)(n * per) * el;
  unsigned char *data = malloc(bytes + 1);
  ferry__var v = {0};
  v.dtype = dt;
  v.row_bytes = (size_t)per * el;
  expected_rows(&v, first, n, data);
  if ((big && host_little()) || (!big && !host_little()))
    ferry__byteswap(data, (size_t)(n * per), el);
  FILE *f = fopen(tpath(rel), "wb");
  if (!f) {
    CHECK(0, "cannot write %s", rel);
    free(data);
    return;
  }
  fwrite(head, 1, 10 + hl, f);
  fwrite(data, 1, bytes, f);
  fclose(f);
  free(data);
}

static void write_text(const char *rel, const char *text) {
  FILE *f = fopen(tpath(rel), "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(p);
  return 0;
}

static void test_glob(void) {
  ferry__manifest m;
  ferry__err e = {0};
  mkdirs("g/a/b/c");
  mkdirs("g/a/B");
  mkdirs("g/a/.hidden");
  write_npy("g/a/part-1.npy", FERRY_FLOAT32, 0, 11, 2, 0);
  write_npy("g/a/part-2.npy", FERRY_FLOAT32, 0, 13, 2, 0);
  write_npy("g/a/b/part-3.npy", FERRY_FLOAT32, 0, 17, 2, 0);
  write_npy("g/a/b/c/part-4.npy", FERRY_FLOAT32, 0, 19, 2, 0);
  write_npy("g/a/B/part-0.npy", FERRY_FLOAT32, 0, 23, 2, 0);
  write_npy("g/a/.hidden/part-5.npy", FERRY_FLOAT32, 0, 29, 2, 0);
  write_npy("g/a/.part-6.npy", FERRY_FLOAT32, 0, 29, 2, 0);
  write_text("g/a/notes.txt", "not data\n");
  /* a link loop: ** must neither hang nor list anything twice */
  symlink("..", tpath("g/a/b/up"));

  char pat[600];
  snprintf(pat, sizeof pat, "%s/g/a/**/part-*.npy", tmpdir);
  int rc = ferry__manifest_scan(pat, NULL, NULL, &m, &e);
  CHECK(rc == 0, "glob **: %s", e.msg);
  if (rc == 0) {
    /* byte-wise order: 'B' < 'b', "b/c/" < "b/p" */
    static const char *order[] = {"g/a/B/part-0.npy", "g/a/b/c/part-4.npy",
                                  "g/a/b/part-3.npy", "g/a/part-1.npy",
                                  "g/a/part-2.npy"};
    static const int64_t ns[] = {23, 19, 17, 11, 13};
    CHECK(m.nparts == 5, "glob ** gives %lld parts, want 5",
          (long long)m.nparts);
    int64_t first = 0;
    for (int64_t i = 0; i < m.nparts && i < 5; i++) {
      CHECK(strcmp(m.parts[i].paths[0], tpath(order[i])) == 0,
            "glob part %lld is %s, want %s", (long long)i, m.parts[i].paths[0],
            order[i]);
      CHECK(m.parts[i].num_samples == ns[i] && m.parts[i].first_sample == first,
            "glob part %lld sizes", (long long)i);
      first += ns[i];
    }
    CHECK(m.num_samples == first, "glob total");
    CHECK(strcmp(m.vars[0].name, "part-0") == 0,
          "variable named after the first part: %s", m.vars[0].name);
    ferry__manifest_free(&m);
  }
  snprintf(pat, sizeof pat, "%s/g/a/part-[12].npy", tmpdir);
  rc = ferry__manifest_scan(pat, NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 2 &&
            strcmp(m.parts[1].paths[0], tpath("g/a/part-2.npy")) == 0,
        "glob [12]: %s", e.msg);
  ferry__manifest_free(&m);
  snprintf(pat, sizeof pat, "%s/g/*/b/part-?.npy", tmpdir);
  rc = ferry__manifest_scan(pat, NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 1 &&
            strcmp(m.parts[0].paths[0], tpath("g/a/b/part-3.npy")) == 0,
        "glob */b/?: %s", e.msg);
  ferry__manifest_free(&m);
  /* a name with glob characters that match nothing is taken literally */
  mkdirs("g/br[1]");
  write_npy("g/br[1]/x.npy", FERRY_INT8, 0, 3, 0, 0);
  rc = ferry__manifest_scan(tpath("g/br[1]/x.npy"), NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 1 && m.num_samples == 3,
        "literal name with brackets: %s", e.msg);
  ferry__manifest_free(&m);
  snprintf(pat, sizeof pat, "%s/g/**/nothing-*.npy", tmpdir);
  EXPECT_CODE(ferry__manifest_scan(pat, NULL, NULL, &m, &e), FERRY_ENOENT, e,
              pat);
  /* a relative pattern and a trailing ** with a literal file */
  char cwd[512];
  if (getcwd(cwd, sizeof cwd) && chdir(tmpdir) == 0) {
    rc = ferry__manifest_scan("g/**/part-4.npy", NULL, NULL, &m, &e);
    CHECK(rc == 0 && m.nparts == 1 &&
              strcmp(m.parts[0].paths[0], "g/a/b/c/part-4.npy") == 0,
          "relative glob: %s", e.msg);
    ferry__manifest_free(&m);
    CHECK(chdir(cwd) == 0, "chdir back");
  }
}

static void test_list_and_dirs(void) {
  ferry__manifest m;
  ferry__err e = {0};
  char text[2048];
  mkdirs("lists");
  snprintf(text, sizeof text,
           "# parts of the dataset\n\n../g/a/part-2.npy\r\n%s\n"
           "   ../g/a/b/part-3.npy   \n# end\n",
           tpath("g/a/part-1.npy"));
  write_text("lists/list.txt", text);
  char spec[600];
  snprintf(spec, sizeof spec, "@%s", tpath("lists/list.txt"));
  int rc = ferry__manifest_scan(spec, NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 3, "list: %s", e.msg);
  if (rc == 0) {
    CHECK(strcmp(m.parts[0].paths[0], tpath("lists/../g/a/part-2.npy")) == 0,
          "list order 0: %s", m.parts[0].paths[0]);
    CHECK(strcmp(m.parts[1].paths[0], tpath("g/a/part-1.npy")) == 0,
          "list absolute: %s", m.parts[1].paths[0]);
    CHECK(m.parts[2].num_samples == 17 && m.num_samples == 13 + 11 + 17,
          "list sizes");
    CHECK(strcmp(m.vars[0].name, "part-2") == 0, "list var name %s",
          m.vars[0].name);
    ferry__manifest_free(&m);
  }
  write_text("lists/empty.txt", "# nothing\n\n");
  snprintf(spec, sizeof spec, "@%s", tpath("lists/empty.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_EEMPTY, e,
              "empty.txt");
  snprintf(spec, sizeof spec, "@%s", tpath("lists/missing.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_ENOENT, e,
              "missing.txt");
  write_text("lists/bad.txt", "../g/a/nope.npy\n");
  snprintf(spec, sizeof spec, "@%s", tpath("lists/bad.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_ENOENT, e,
              "nope.npy");

  /* a directory of variables is one part; the selection picks and orders */
  mkdirs("d");
  write_npy("d/y.npy", FERRY_INT64, 0, 31, 0, 0);
  write_npy("d/x.npy", FERRY_FLOAT32, 1, 31, 4, 0);
  write_text("d/README", "not a variable\n");
  rc = ferry__manifest_scan(tpath("d"), NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 1 && m.nvars == 2, "dir: %s", e.msg);
  if (rc == 0) {
    CHECK(strcmp(m.vars[0].name, "x") == 0 && strcmp(m.vars[1].name, "y") == 0,
          "dir vars sorted");
    CHECK(m.vars[0].swapped == host_little() && m.vars[1].swapped == 0,
          "dir swapped flags");
    ferry__manifest_free(&m);
  }
  rc = ferry__manifest_scan(tpath("d"), " y , x ", NULL, &m, &e);
  CHECK(rc == 0 && m.nvars == 2 && strcmp(m.vars[0].name, "y") == 0 &&
            strcmp(m.parts[0].paths[0], tpath("d/y.npy")) == 0 &&
            strcmp(m.parts[0].paths[1], tpath("d/x.npy")) == 0,
        "vars y,x: %s", e.msg);
  uint64_t h_yx = m.hash;
  ferry__manifest_free(&m);
  rc = ferry__manifest_scan(tpath("d"), "x", NULL, &m, &e);
  CHECK(rc == 0 && m.nvars == 1 && strcmp(m.vars[0].name, "x") == 0 &&
            m.hash != h_yx,
        "vars x: %s", e.msg);
  ferry__manifest_free(&m);
  rc = ferry__manifest_scan(tpath("d"), "", NULL, &m, &e);
  CHECK(rc == 0 && m.nvars == 2, "vars '' means all");
  ferry__manifest_free(&m);
  EXPECT_CODE(ferry__manifest_scan(tpath("d"), "x,z", NULL, &m, &e),
              FERRY_EINVAL, e, "variable 'z' not found; the dataset has: x, y");
  EXPECT_CODE(ferry__manifest_scan(tpath("d"), "x,x", NULL, &m, &e),
              FERRY_EINVAL, e, "twice");
  EXPECT_CODE(ferry__manifest_scan(tpath("d"), "x,,y", NULL, &m, &e),
              FERRY_EINVAL, e, "empty");

  /* describe errors */
  mkdirs("bad/len");
  write_npy("bad/len/a.npy", FERRY_INT32, 0, 31, 0, 0);
  write_npy("bad/len/b.npy", FERRY_INT32, 0, 30, 0, 0);
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/len"), NULL, NULL, &m, &e),
              FERRY_ESHAPE, e, "'a' (31 samples) and 'b' (30 samples)");
  write_npy("bad/trunc.npy", FERRY_FLOAT64, 0, 31, 2, 0);
  struct stat st;
  CHECK(stat(tpath("bad/trunc.npy"), &st) == 0 &&
            truncate(tpath("bad/trunc.npy"), st.st_size - 3) == 0,
        "truncate");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/trunc.npy"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e,
              "holds 493 bytes of data, header says 496 (variable trunc)");
  EXPECT_CODE(
      ferry__manifest_scan(tpath("bad/nothing.npy"), NULL, NULL, &m, &e),
      FERRY_ENOENT, e, "nothing.npy");
  write_text("bad/plain.txt", "hello\n");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/plain.txt"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e, "no backend reads");
  /* what an unread file looks like: size, first bytes, the format they
   * are the signature of, the backends tried */
  CHECK(strstr(e.msg, "6 bytes, starting 68 65 6c 6c 6f 0a") != NULL &&
            strstr(e.msg, "looks like text") != NULL &&
            strstr(e.msg, "tried: npy (") != NULL,
        "plain.txt described: %s", e.msg);
  /* a Parquet file is read by the parquet backend, which names what is
   * wrong with it */
  write_text("bad/table.parquet", "PAR1\025\004 not really");
  EXPECT_CODE(
      ferry__manifest_scan(tpath("bad/table.parquet"), NULL, NULL, &m, &e),
      FERRY_EFORMAT, e, "no PAR1 magic at the end");
  write_text("bad/old.hdf", "\016\003\023\001 and more");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/old.hdf"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e, "an HDF4 file");
  write_text("bad/hollow.bin", "");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/hollow.bin"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e, "it is empty (0 bytes)");
  /* a directory of files ferry does not read is not called empty */
  mkdirs("bad/records");
  write_text("bad/records/train.tfrecord", "x");
  write_text("bad/records/valid.tfrecord", "x");
  write_text("bad/records/notes", "x");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/records"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e,
              "holds nothing ferry reads: 3 files (2 .tfrecord, 1 without "
              "extension)");
  /* a directory of shards (names differing only in digits) is a directory
   * of parts: the first one that no backend reads is described */
  mkdirs("bad/shards");
  write_text("bad/shards/p0.tfrecord", "xy");
  write_text("bad/shards/p1.tfrecord", "xy");
  write_text("bad/shards/_SUCCESS", "");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/shards"), NULL, NULL, &m, &e),
              FERRY_EFORMAT, e, "shards/p0.tfrecord: 2 bytes");
  write_text("bad/magicless.npy", "hello, this is not numpy\n");
  EXPECT_CODE(
      ferry__manifest_scan(tpath("bad/magicless.npy"), NULL, NULL, &m, &e),
      FERRY_EFORMAT, e, "not a .npy file");
  /* an empty directory is an empty dataset, and says so */
  mkdirs("bad/empty");
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/empty"), NULL, NULL, &m, &e),
              FERRY_EEMPTY, e, "is empty");
  /* parts that disagree */
  write_npy("bad/f64.npy", FERRY_FLOAT64, 0, 5, 2, 0);
  write_npy("bad/f32.npy", FERRY_FLOAT32, 0, 5, 2, 0);
  write_npy("bad/f32x3.npy", FERRY_FLOAT32, 0, 5, 3, 0);
  write_npy("bad/f32be.npy", FERRY_FLOAT32, 1, 5, 2, 0);
  snprintf(text, sizeof text, "f32.npy\nf64.npy\n");
  write_text("bad/l1.txt", text);
  snprintf(spec, sizeof spec, "@%s", tpath("bad/l1.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_EFORMAT, e,
              "is float64 but it is float32");
  write_text("bad/l2.txt", "f32.npy\nf32x3.npy\n");
  snprintf(spec, sizeof spec, "@%s", tpath("bad/l2.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_ESHAPE, e,
              "rows of shape (3,) but (2,)");
  write_text("bad/l3.txt", "f32.npy\nf32be.npy\n");
  snprintf(spec, sizeof spec, "@%s", tpath("bad/l3.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_EFORMAT, e,
              "endian");
  snprintf(text, sizeof text, "%s\nf32.npy\n", tpath("d"));
  write_text("bad/l4.txt", text);
  snprintf(spec, sizeof spec, "@%s", tpath("bad/l4.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_EFORMAT, e,
              "variables");
  write_text("bad/l5.txt", "mem:N=3,vars=x:float32:2\nf32.npy\n");
  snprintf(spec, sizeof spec, "@%s", tpath("bad/l5.txt"));
  EXPECT_CODE(ferry__manifest_scan(spec, NULL, NULL, &m, &e), FERRY_EFORMAT, e,
              "backend");
  mkdirs("bad/zero");
  write_npy("bad/zero/a.npy", FERRY_INT8, 0, 0, 0, 0);
  EXPECT_CODE(ferry__manifest_scan(tpath("bad/zero"), NULL, NULL, &m, &e),
              FERRY_EEMPTY, e, "no sample");
  if (geteuid() != 0) {
    write_npy("bad/secret.npy", FERRY_INT8, 0, 3, 0, 0);
    chmod(tpath("bad/secret.npy"), 0);
    EXPECT_CODE(
        ferry__manifest_scan(tpath("bad/secret.npy"), NULL, NULL, &m, &e),
        FERRY_EACCES, e, "secret.npy");
  }
}

/* ---- Pack / unpack / JSON --------------------------------------------- */

static int same_manifest(const ferry__manifest *a, const ferry__manifest *b) {
  void *pa = NULL, *pb = NULL;
  size_t la = 0, lb = 0;
  int same = ferry__manifest_pack(a, &pa, &la) == 0 &&
             ferry__manifest_pack(b, &pb, &lb) == 0 && la == lb &&
             memcmp(pa, pb, la) == 0 && a->hash == b->hash;
  free(pa);
  free(pb);
  return same;
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void test_pack(void) {
  ferry__manifest m, u;
  ferry__err e = {0};
  char pat[600];
  snprintf(pat, sizeof pat, "%s/g/a/**/part-*.npy", tmpdir);
  int rc = ferry__manifest_scan(pat, NULL, NULL, &m, &e);
  CHECK(rc == 0, "pack scan: %s", e.msg);
  if (rc)
    return;
  void *buf = NULL;
  size_t len = 0;
  CHECK(ferry__manifest_pack(&m, &buf, &len) == 0 && len > 24, "pack");
  rc = ferry__manifest_unpack(buf, len, &u, &e);
  CHECK(rc == 0, "unpack: %s", e.msg);
  if (rc == 0) {
    CHECK(same_manifest(&m, &u), "pack round trip differs");
    CHECK(u.nparts == m.nparts && u.num_samples == m.num_samples &&
              strcmp(u.spec, m.spec) == 0 &&
              strcmp(u.parts[3].paths[0], m.parts[3].paths[0]) == 0 &&
              u.parts[3].data_offset[0] == m.parts[3].data_offset[0] &&
              u.parts[3].file_size[0] == m.parts[3].file_size[0],
          "unpacked fields");
    ferry__manifest_free(&u);
  }
  /* the hash ignores how the dataset was spelled, not what it holds */
  uint64_t h = m.hash;
  char *spec = m.spec;
  m.spec = "elsewhere";
  CHECK(ferry__manifest_hash(&m) == h, "hash depends on the spec string");
  m.spec = spec;
  m.parts[1].file_size[0]++;
  CHECK(ferry__manifest_hash(&m) != h, "hash ignores a file size");
  m.parts[1].file_size[0]--;
  m.vars[0].swapped = 1;
  CHECK(ferry__manifest_hash(&m) != h, "hash ignores the byte order");
  m.vars[0].swapped = 0;

  /* every truncation, every flipped byte, garbage: clean EFORMAT */
  unsigned char *c = malloc(len);
  for (size_t k = 0; k < len; k++) {
    rc = ferry__manifest_unpack(buf, k, &u, &e);
    CHECK(rc == FERRY_EFORMAT, "unpack of %zu of %zu bytes: rc %d", k, len, rc);
    CHECK(u.nvars == 0 && u.parts == NULL, "failed unpack left data");
  }
  for (size_t k = 0; k < len; k++) {
    memcpy(c, buf, len);
    c[k] ^= 0x5a;
    rc = ferry__manifest_unpack(c, len, &u, &e);
    CHECK(rc == FERRY_EFORMAT, "unpack with byte %zu flipped: rc %d", k, rc);
  }
  /* ... and with the checksum repaired, so the body checks are reached */
  for (size_t k = 16; k + 8 < len; k++)
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(c, buf, len);
      c[k] ^= (unsigned char)(1u << bit);
      put_u64(c + len - 8, ferry__fnv1a(FERRY__FNV_INIT, c, len - 8));
      rc = ferry__manifest_unpack(c, len, &u, &e);
      CHECK(rc == 0 || rc == FERRY_EFORMAT,
            "unpack, byte %zu bit %d flipped, checksum fixed: rc %d", k, bit,
            rc);
      ferry__manifest_free(&u);
    }
  for (size_t k = 0; k < len; k++)
    c[k] = (unsigned char)(k * 131 + 7);
  EXPECT_CODE(ferry__manifest_unpack(c, len, &u, &e), FERRY_EFORMAT, e,
              "not a ferry manifest");
  EXPECT_CODE(ferry__manifest_unpack(NULL, 0, &u, &e), FERRY_EFORMAT, e, NULL);
  memcpy(c, buf, len);
  c[4] = 9;
  EXPECT_CODE(ferry__manifest_unpack(c, len, &u, &e), FERRY_EFORMAT, e,
              "version 9");
  free(c);
  free(buf);

  /* JSON */
  char *jpath = tpath("m.json");
  rc = ferry__manifest_save_json(&m, jpath, &e);
  CHECK(rc == 0, "save json: %s", e.msg);
  rc = ferry__manifest_load_json(jpath, NULL, &u, &e);
  CHECK(rc == 0, "load json: %s", e.msg);
  if (rc == 0) {
    CHECK(same_manifest(&m, &u), "JSON round trip differs");
    ferry__manifest_free(&u);
  }
  ferry__manifest_free(&m);
  rc = ferry__manifest_scan(tpath("d"), NULL, NULL, &m, &e);
  if (rc == 0 && ferry__manifest_save_json(&m, jpath, &e) == 0) {
    rc = ferry__manifest_load_json(jpath, "y", &u, &e);
    CHECK(rc == 0 && u.nvars == 1 && strcmp(u.vars[0].name, "y") == 0 &&
              strcmp(u.parts[0].paths[0], tpath("d/y.npy")) == 0,
          "load json with vars=y: %s", e.msg);
    ferry__manifest_free(&u);
    ferry__manifest scanned;
    if (ferry__manifest_scan(tpath("d"), "y", NULL, &scanned, &e) == 0) {
      rc = ferry__manifest_load_json(jpath, "y", &u, &e);
      CHECK(rc == 0 && same_manifest(&scanned, &u),
            "JSON + selection equals scan + selection");
      ferry__manifest_free(&u);
      ferry__manifest_free(&scanned);
    }
    EXPECT_CODE(ferry__manifest_load_json(jpath, "q", &u, &e), FERRY_EINVAL, e,
                "variable 'q' not found; the dataset has: x, y");
  }
  ferry__manifest_free(&m);
  rc = ferry__manifest_scan("mem:N=5,vars=a:uint16:3", NULL, NULL, &m, &e);
  if (rc == 0 && ferry__manifest_save_json(&m, jpath, &e) == 0) {
    rc = ferry__manifest_load_json(jpath, NULL, &u, &e);
    CHECK(rc == 0 && same_manifest(&m, &u), "mem JSON round trip: %s", e.msg);
    ferry__manifest_free(&u);
  }
  ferry__manifest_free(&m);

  static const struct {
    const char *json;
    int code;
    const char *want;
  } bad[] = {
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\"", FERRY_EFORMAT,
       "invalid JSON"},
      {"[1, 2]", FERRY_EFORMAT, "not a JSON object"},
      {"{\"backend\": \"npy\"}", FERRY_EFORMAT, "'ferry_manifest'"},
      {"{\"ferry_manifest\": 2}", FERRY_ENOTSUP, "version 2"},
      {"{\"ferry_manifest\": 1, \"spec\": \"x\", \"vars\": [], \"parts\": []}",
       FERRY_EFORMAT, "'backend'"},
      {"{\"ferry_manifest\": 1, \"backend\": \"hdf9\", \"spec\": \"x\", "
       "\"vars\": [{}], \"parts\": []}",
       FERRY_ENOTSUP, "hdf9"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"swapped\": 0, \"row_shape\": []}], "
       "\"parts\": []}",
       FERRY_EFORMAT, "'vars[0].dtype'"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"dtype\": \"int8\", \"swapped\": 0, "
       "\"row_shape\": [0]}], \"parts\": []}",
       FERRY_EFORMAT, "'vars[0].row_shape'"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"dtype\": \"int8\", \"swapped\": 0, "
       "\"row_shape\": []}]}",
       FERRY_EFORMAT, "'parts'"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"dtype\": \"int8\", \"swapped\": 0, "
       "\"row_shape\": []}], \"parts\": [{\"num_samples\": 4, \"files\": "
       "[{\"path\": \"a.npy\", \"data_offset\": 128}]}]}",
       FERRY_EFORMAT, "'parts[0].files[0].file_size'"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"dtype\": \"int8\", \"swapped\": 0, "
       "\"row_shape\": []}], \"parts\": [{\"num_samples\": 4, \"files\": "
       "[{\"path\": \"a.npy\", \"data_offset\": 128, \"file_size\": 130}]}]}",
       FERRY_EFORMAT, "do not fit"},
      {"{\"ferry_manifest\": 1, \"backend\": \"npy\", \"spec\": \"x\", "
       "\"vars\": [{\"name\": \"a\", \"dtype\": \"int8\", \"swapped\": 0, "
       "\"row_shape\": []}], \"parts\": [{\"num_samples\": 0, \"files\": "
       "[{\"path\": \"a.npy\", \"data_offset\": 128, \"file_size\": 130}]}]}",
       FERRY_EEMPTY, "no sample"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_text("bad.json", bad[i].json);
    EXPECT_CODE(ferry__manifest_load_json(tpath("bad.json"), NULL, &u, &e),
                bad[i].code, e, bad[i].want);
    CHECK(strstr(e.msg, "bad.json") != NULL,
          "JSON error %zu lacks the file: "
          "%s",
          i, e.msg);
  }
  EXPECT_CODE(ferry__manifest_load_json(tpath("none.json"), NULL, &u, &e),
              FERRY_ENOENT, e, "none.json");
}

/* ---- MPI-IO reads ----------------------------------------------------- */

static void test_npy_io(void) {
  ferry__manifest m;
  ferry__err e = {0};
  const ferry__backend *be = ferry__backend_find("npy");
  char pat[600];
  snprintf(pat, sizeof pat, "%s/g/a/**/part-*.npy", tmpdir);
  /* the glob's parts hold gen values from sample 0 each; rewrite them so
   * values continue across parts as the manifest numbers them */
  write_npy("g/a/B/part-0.npy", FERRY_FLOAT32, 0, 23, 2, 0);
  write_npy("g/a/b/c/part-4.npy", FERRY_FLOAT32, 0, 19, 2, 23);
  write_npy("g/a/b/part-3.npy", FERRY_FLOAT32, 0, 17, 2, 42);
  write_npy("g/a/part-1.npy", FERRY_FLOAT32, 0, 11, 2, 59);
  write_npy("g/a/part-2.npy", FERRY_FLOAT32, 0, 13, 2, 70);
  int rc = ferry__manifest_scan(pat, NULL, NULL, &m, &e);
  CHECK(rc == 0, "io scan: %s", e.msg);
  if (rc)
    return;
  for (int collective = 0; collective < 2; collective++) {
    for (int64_t max_open = 1; max_open <= 8; max_open *= 2) {
      ferry__io_params p = {MPI_COMM_WORLD, 0, collective, max_open,
                            NULL,           0, 0,          0};
      ferry__io *io = NULL;
      char what[64];
      snprintf(what, sizeof what, "npy collective=%d max_open=%lld", collective,
               (long long)max_open);
      rc = be->io_open(&io, &m, &p, &e);
      CHECK(rc == 0, "%s: io_open: %s", what, e.msg);
      if (rc)
        continue;
      for (int round = 0; round < 2; round++)
        check_all_values(be, io, &m, 0, what);
      float x[2 * 5];
      rc = be->io_read(io, 2, 0, 3, 5, x, &e);
      CHECK(rc == 0 && x[0] == 45.0f && x[1] == 46.0f && x[9] == 50.0f,
            "%s: rows 3..7 of part 2", what);
      CHECK(be->io_read(io, 2, 0, 17, 0, x, &e) == 0, "%s: 0 rows", what);
      EXPECT_CODE(be->io_read(io, 2, 0, 10, 8, x, &e), FERRY_EINTERNAL, e,
                  "outside");
      be->io_close(io);
    }
  }
  /* a big-endian variable arrives in stored order and swaps back */
  ferry__manifest d;
  if (ferry__manifest_scan(tpath("d"), NULL, NULL, &d, &e) == 0) {
    ferry__io_params p = {MPI_COMM_WORLD, 0, 0, 4, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    if (be->io_open(&io, &d, &p, &e) == 0) {
      check_all_values(be, io, &d, 0, "big-endian x");
      check_all_values(be, io, &d, 1, "little-endian y");
      be->io_close(io);
    }
    ferry__manifest_free(&d);
  }

  /* a file that changed size since the scan */
  FILE *f = fopen(tpath("g/a/part-1.npy"), "ab");
  if (f) {
    fputs("more", f);
    fclose(f);
  }
  for (int collective = 0; collective < 2; collective++) {
    ferry__io_params p = {MPI_COMM_WORLD, 0, collective, 2, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    float x[2];
    if (be->io_open(&io, &m, &p, &e) != 0)
      continue;
    EXPECT_CODE(be->io_read(io, 3, 0, 0, 1, x, &e), FERRY_EMISMATCH, e,
                "bytes on rank 0 but");
    CHECK(be->io_read(io, 4, 0, 0, 1, x, &e) == 0, "other files still read");
    be->io_close(io);
  }
  /* a short read: the manifest promises more rows than the file holds */
  m.parts[3].num_samples += 5;
  m.parts[3].file_size[0] += 4;
  for (int collective = 0; collective < 2; collective++) {
    ferry__io_params p = {MPI_COMM_WORLD, 0, collective, 2, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    float x[2 * 16];
    if (be->io_open(&io, &m, &p, &e) != 0)
      continue;
    EXPECT_CODE(be->io_read(io, 3, 0, 0, 16, x, &e), FERRY_EIO, e,
                "short read: file");
    CHECK(strstr(e.msg, "variable part-0, rank 0, offset 128") != NULL,
          "short read message: %s", e.msg);
    be->io_close(io);
  }
  /* a file that vanished */
  remove(tpath("g/a/part-2.npy"));
  {
    ferry__io_params p = {MPI_COMM_WORLD, 0, 0, 2, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    float x[2];
    if (be->io_open(&io, &m, &p, &e) == 0) {
      EXPECT_CODE(be->io_read(io, 4, 0, 0, 1, x, &e), FERRY_ENOENT, e,
                  "part-2.npy");
      be->io_close(io);
    }
  }
  ferry__manifest_free(&m);
}

/* ---- NumPy-written fixtures ------------------------------------------- */

static int code_of(const char *name) {
  static const struct {
    const char *name;
    int code;
  } codes[] = {{"ok", 0},
               {"EFORMAT", FERRY_EFORMAT},
               {"ENOTSUP", FERRY_ENOTSUP},
               {"ESHAPE", FERRY_ESHAPE},
               {"ENOENT", FERRY_ENOENT},
               {"EEMPTY", FERRY_EEMPTY}};
  for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
    if (strcmp(codes[i].name, name) == 0)
      return codes[i].code;
  return 999;
}

/* Fixtures: FERRY_NPY_FIXTURES names a directory already written, or
 * make_npy.py (under top_srcdir, as make check exports it) is run with
 * PYTHON_NUMPY (configure's Python with NumPy). */
static const char *find_fixture_dir(char *buf, size_t len) {
  const char *env = getenv("FERRY_NPY_FIXTURES");
  if (env && *env)
    return env;
  const char *top = getenv("top_srcdir");
  const char *py = getenv("PYTHON_NUMPY");
  if (!top || !*top || !py || !*py)
    return NULL;
  char script[1024], cmd[3072];
  snprintf(script, sizeof script, "%s/tests/fixtures/make_npy.py", top);
  if (access(script, R_OK) != 0)
    return NULL;
  snprintf(buf, len, "%s/fixtures", tmpdir);
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' 2>&1", py, script, buf);
  int st = system(cmd);
  if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return buf;
  CHECK(0, "%s failed", cmd);
  return NULL;
}

static void test_fixtures(void) {
  char dirbuf[512];
  const char *dir = find_fixture_dir(dirbuf, sizeof dirbuf);
  if (!dir) {
    printf("SKIP NumPy fixtures: set FERRY_NPY_FIXTURES, or top_srcdir and "
           "PYTHON_NUMPY\n");
    return;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/index.json", dir);
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  json_t *files = json_object_get(root, "files");
  CHECK(json_is_array(files) && json_array_size(files) > 100,
        "fixture index %s: %s", path, je.text);
  const ferry__backend *be = ferry__backend_find("npy");
  size_t i, ngood = 0, nbad = 0;
  json_t *ent;
  json_array_foreach(files, i, ent) {
    const char *file = json_string_value(json_object_get(ent, "file"));
    const char *expect = json_string_value(json_object_get(ent, "expect"));
    if (!file || !expect)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ferry__manifest m;
    ferry__err e = {0};
    int rc = ferry__manifest_scan(path, NULL, NULL, &m, &e);
    int want = code_of(expect);
    CHECK(rc == want, "fixture %s: got %d, want %s: %s", file, rc, expect,
          e.msg);
    if (rc != 0) {
      nbad++;
      if (rc < 0)
        CHECK(strstr(e.msg, file) != NULL || strstr(e.msg, "bad_lengths"),
              "fixture %s: message lacks the file: %s", file, e.msg);
      continue;
    }
    ngood++;
    json_t *dt = json_object_get(ent, "dtype");
    if (json_is_string(dt)) {
      ferry_dtype want_dt;
      json_t *shape = json_object_get(ent, "shape");
      CHECK(ferry__dtype_from_name(json_string_value(dt), &want_dt) == 0 &&
                m.vars[0].dtype == want_dt,
            "fixture %s: dtype %s", file, ferry_dtype_name(m.vars[0].dtype));
      CHECK(m.vars[0].swapped ==
                (int)json_integer_value(json_object_get(ent, "swapped")),
            "fixture %s: swapped %d", file, m.vars[0].swapped);
      CHECK((size_t)m.vars[0].row_ndim + 1 == json_array_size(shape) &&
                m.num_samples == json_integer_value(json_array_get(shape, 0)),
            "fixture %s: shape", file);
      for (int d = 0; d < m.vars[0].row_ndim; d++)
        CHECK(m.vars[0].row_shape[d] ==
                  json_integer_value(json_array_get(shape, (size_t)d + 1)),
              "fixture %s: dim %d", file, d + 1);
      /* values continue across parts: shift to this file's first sample */
      m.parts[0].first_sample =
          json_integer_value(json_object_get(ent, "first_sample"));
    }
    ferry__io_params p = {MPI_COMM_WORLD, 0, 0, 4, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    if (be->io_open(&io, &m, &p, &e) == 0) {
      for (int v = 0; v < m.nvars; v++)
        check_all_values(be, io, &m, v, file);
      be->io_close(io);
    }
    ferry__manifest_free(&m);
  }
  /* the parts read as one variable whose values continue */
  snprintf(path, sizeof path, "%s/parts/part-*.npy", dir);
  ferry__manifest m;
  ferry__err e = {0};
  int rc = ferry__manifest_scan(path, NULL, NULL, &m, &e);
  CHECK(rc == 0 && m.nparts == 3 && m.num_samples == 97 + 89 + 83 &&
            strcmp(m.vars[0].name, "part-000") == 0,
        "fixture parts glob: %s", e.msg);
  if (rc == 0) {
    ferry__io_params p = {MPI_COMM_WORLD, 0, 1, 2, NULL, 0, 0, 0};
    ferry__io *io = NULL;
    if (be->io_open(&io, &m, &p, &e) == 0) {
      check_all_values(be, io, &m, 0, "fixture parts (collective)");
      be->io_close(io);
    }
    ferry__manifest_free(&m);
  }
  printf("fixtures: %zu good and %zu bad inputs checked\n", ngood, nbad);
  json_decref(root);
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
      MPI_SUCCESS) {
    fprintf(stderr, "SKIP: MPI_Init_thread failed\n");
    return 77;
  }
  const char *scratch = getenv("FERRY_TEST_TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_npy-XXXXXX",
           scratch && *scratch ? scratch : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    MPI_Finalize();
    return 1;
  }
  test_header_dtypes();
  test_header_forms();
  test_header_errors();
  test_header_fuzz();
  test_byteswap();
  test_gen_value();
  test_mem();
  test_glob();
  test_list_and_dirs();
  test_pack();
  test_npy_io();
  test_fixtures();
  if (!getenv("FERRY_KEEP_TMP"))
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  int status = ft_summary("test_npy");
  MPI_Finalize();
  return status;
}
