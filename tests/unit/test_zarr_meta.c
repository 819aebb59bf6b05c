/*
 * test_zarr_meta.c - unit tests of the Zarr v2 metadata parser
 * (backends/zarr/meta.c), through ferry__zarr_parse_zarray_text (a .zarray
 * held in memory) and ferry__zarr_parse_zarray (a file on disk).  Every
 * dtype ferry accepts gives the right dtype, itemsize and byte-swap flag;
 * fill values (null, numbers, NaN and the infinities) give the right
 * stored bytes; the codecs ferry decodes are accepted (or refused naming
 * the missing library when this build lacks it) and an unknown one is
 * refused naming it; every malformed or unsupported field (order "F",
 * shape/chunks mismatches, negative sizes, sizes whose products overflow
 * 64 bits, dimension separators, corrupt JSON, missing keys, zarr_format
 * other than 2) is refused with its error code and a message naming the
 * file or array and the field.  Zarr v3 (ferry__zarr_parse_v3_text): data
 * types, endianness, raw-bits and NaN fill values, crc32c, an unknown codec
 * named, a non-identity transpose refused, sharding (inner chunk shape,
 * index location and size, index codecs) and overflowing sizes.  Scratch files
 * go under FERRY_TEST_TMPDIR (or /tmp).
 *
 * Exit status: 0 pass, 1 fail (each failure is printed).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/zarr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ferry_test.h"

#define PATH "/store.zarr/x/.zarray"
#define LABEL "x"

static int host_little(void) {
  const uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* The fields of a .zarray; NULL leaves a key out. */
typedef struct fields {
  const char *format, *shape, *chunks, *dtype, *fill, *order, *comp, *filters,
      *sep;
} fields;

static const fields BASE = {"2",     "[10, 3]", "[4, 3]", "\"<f4\"", "0",
                            "\"C\"", "null",    "null",   NULL};

/* The JSON text of f. */
static const char *text_of(const fields *f) {
  static char buf[2048];
  const char *key[] = {"zarr_format", "shape",      "chunks",
                       "dtype",       "fill_value", "order",
                       "compressor",  "filters",    "dimension_separator"};
  const char *val[] = {f->format, f->shape, f->chunks,  f->dtype, f->fill,
                       f->order,  f->comp,  f->filters, f->sep};
  size_t used = (size_t)snprintf(buf, sizeof buf, "{");
  int first = 1;
  for (size_t i = 0; i < sizeof key / sizeof *key; i++) {
    if (!val[i])
      continue;
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s\"%s\": %s",
                             first ? "" : ", ", key[i], val[i]);
    first = 0;
  }
  snprintf(buf + used, sizeof buf - used, "}");
  return buf;
}

static int parse_text(const char *text, zmeta *z, ferry__err *err) {
  memset(err, 0, sizeof *err);
  return ferry__zarr_parse_zarray_text(text, strlen(text), PATH, LABEL, z, err);
}

static int parse(const fields *f, zmeta *z, ferry__err *err) {
  return parse_text(text_of(f), z, err);
}

/* f must parse. */
#define ACCEPT(f, z)                                                           \
  do {                                                                         \
    ferry__err e_;                                                             \
    int rc_ = parse(f, z, &e_);                                                \
    CHECK(rc_ == 0, "%s: rc %d (%s)", text_of(f), rc_, e_.msg);                \
  } while (0)

/* f must be refused with code, the message naming who and what. */
#define REFUSE(f, want, who, what)                                             \
  do {                                                                         \
    zmeta z_;                                                                  \
    ferry__err e_;                                                             \
    int rc_ = parse(f, &z_, &e_);                                              \
    CHECK(rc_ == (want) && e_.code == (want), "%s: rc %d, wanted %d (%s)",     \
          text_of(f), rc_, (want), e_.msg);                                    \
    CHECK(strstr(e_.msg, who) && strstr(e_.msg, what),                         \
          "%s: message '%s' does not name '%s' and '%s'", text_of(f), e_.msg,  \
          who, what);                                                          \
  } while (0)

static void test_dtypes(void) {
  static const struct {
    const char *s;
    ferry_dtype dt;
    size_t size;
  } t[] = {{"b1", FERRY_BOOL, 1},    {"i1", FERRY_INT8, 1},
           {"i2", FERRY_INT16, 2},   {"i4", FERRY_INT32, 4},
           {"i8", FERRY_INT64, 8},   {"u1", FERRY_UINT8, 1},
           {"u2", FERRY_UINT16, 2},  {"u4", FERRY_UINT32, 4},
           {"u8", FERRY_UINT64, 8},  {"f2", FERRY_FLOAT16, 2},
           {"f4", FERRY_FLOAT32, 4}, {"f8", FERRY_FLOAT64, 8}};
  const char orders[] = {'<', '>', '|'};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    for (size_t o = 0; o < sizeof orders; o++) {
      char dt[16];
      snprintf(dt, sizeof dt, "\"%c%s\"", orders[o], t[i].s);
      fields f = BASE;
      f.dtype = dt;
      zmeta z;
      ACCEPT(&f, &z);
      int swapped = t[i].size > 1 && ((orders[o] == '<' && !host_little()) ||
                                      (orders[o] == '>' && host_little()));
      CHECK(z.dtype == t[i].dt && z.itemsize == t[i].size &&
                z.swapped == swapped,
            "%s: dtype %d itemsize %zu swapped %d", dt, (int)z.dtype,
            z.itemsize, z.swapped);
      CHECK(z.chunk_bytes == 12 * t[i].size && z.across == 1,
            "%s: chunk_bytes %zu across %lld", dt, z.chunk_bytes,
            (long long)z.across);
    }
  static const char *bad[] = {"\"<c8\"", "\"<M8[ns]\"", "\"|O\"",
                              "\"<U4\"", "\"|S4\"",     "\"|V8\"",
                              "\"<i3\"", "\"<f16\"",    "\"|b2\"",
                              "\"f4\"",  "\"<x4\"",     "[[\"a\", \"<f4\"]]"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    fields f = BASE;
    f.dtype = bad[i];
    REFUSE(&f, FERRY_ENOTSUP, "array " LABEL, "dtype");
  }
}

static void test_fill(void) {
  fields f = BASE;
  zmeta z;
  float fv;
  double dv;
  f.fill = "null";
  ACCEPT(&f, &z);
  CHECK(!z.has_fill, "null fill: has_fill %d", z.has_fill);
  f.fill = "1.5";
  ACCEPT(&f, &z);
  memcpy(&fv, z.fill, 4);
  CHECK(z.has_fill && fv == 1.5f, "1.5 as <f4: %g", (double)fv);
  f.fill = "\"NaN\"";
  ACCEPT(&f, &z);
  memcpy(&fv, z.fill, 4);
  CHECK(z.has_fill && isnan(fv), "NaN as <f4: %g", (double)fv);
  f.dtype = "\"<f8\"";
  f.fill = "\"Infinity\"";
  ACCEPT(&f, &z);
  memcpy(&dv, z.fill, 8);
  CHECK(z.has_fill && isinf(dv) && dv > 0, "Infinity as <f8: %g", dv);
  f.fill = "\"-Infinity\"";
  ACCEPT(&f, &z);
  memcpy(&dv, z.fill, 8);
  CHECK(z.has_fill && isinf(dv) && dv < 0, "-Infinity as <f8: %g", dv);
  f.dtype = "\"<i4\"";
  f.fill = "-7";
  ACCEPT(&f, &z);
  CHECK(z.has_fill && z.fill[0] == 0xf9 && z.fill[1] == 0xff &&
            z.fill[2] == 0xff && z.fill[3] == 0xff,
        "-7 as <i4 stored as %02x %02x %02x %02x", z.fill[0], z.fill[1],
        z.fill[2], z.fill[3]);
  /* Big-endian storage: the fill is kept in the stored byte order. */
  f.dtype = "\">i4\"";
  f.fill = "5";
  ACCEPT(&f, &z);
  CHECK(z.fill[0] == 0 && z.fill[1] == 0 && z.fill[2] == 0 && z.fill[3] == 5,
        ">i4 fill 5 stored as %02x %02x %02x %02x", z.fill[0], z.fill[1],
        z.fill[2], z.fill[3]);
  f.dtype = "\"|b1\"";
  f.fill = "true";
  ACCEPT(&f, &z);
  CHECK(z.has_fill && z.fill[0] == 1, "true as |b1: %d", z.fill[0]);
  f.dtype = "\"<f2\"";
  f.fill = "0";
  ACCEPT(&f, &z);
  CHECK(z.has_fill && z.fill[0] == 0 && z.fill[1] == 0, "0 as <f2");
  /* Refused: what ferry cannot represent in the dtype. */
  static const struct {
    const char *dtype, *fill;
  } bad[] = {{"\"<f2\"", "1.5"},     {"\"<i4\"", "\"NaN\""},
             {"\"<i4\"", "2.5"},     {"\"<i8\"", "\"AAAAAAAAAAA=\""},
             {"\"<f4\"", "\"nan\""}, {"\"<f4\"", "[0]"},
             {"\"<f4\"", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    f.dtype = bad[i].dtype;
    f.fill = bad[i].fill;
    REFUSE(&f, FERRY_ENOTSUP, "array " LABEL, "fill_value");
  }
}

static void test_codecs(void) {
  static const struct {
    const char *json, *text;
    int kind;
  } t[] = {
      {"{\"id\": \"blosc\", \"cname\": \"lz4\", \"clevel\": 5, \"shuffle\": 1}",
       "blosc(lz4, shuffle)", FERRY__CODEC_BLOSC},
      {"{\"id\": \"zlib\", \"level\": 1}", "zlib(1)", FERRY__CODEC_ZLIB},
      {"{\"id\": \"gzip\", \"level\": 5}", "gzip(5)", FERRY__CODEC_GZIP},
      {"{\"id\": \"zstd\", \"level\": 3}", "zstd(3)", FERRY__CODEC_ZSTD},
      {"{\"id\": \"lz4\", \"acceleration\": 1}", "lz4", FERRY__CODEC_LZ4},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    fields f = BASE;
    f.comp = t[i].json;
    f.filters = "[{\"id\": \"shuffle\", \"elementsize\": 4}]";
    if (!ferry__codec_available(t[i].kind)) {
      REFUSE(&f, FERRY_ENOTSUP, LABEL ": ", "built without its library");
      continue;
    }
    zmeta z;
    ACCEPT(&f, &z);
    char want[160];
    snprintf(want, sizeof want, "shuffle(4) + %s", t[i].text);
    CHECK(z.ncodecs == 2 && z.has_compressor &&
              z.codec[0] == FERRY__CODEC_SHUFFLE && z.param[0] == 4 &&
              z.codec[1] == t[i].kind && strcmp(z.codecs_text, want) == 0,
          "codec %s: ncodecs %d codecs '%s'", t[i].text, z.ncodecs,
          z.codecs_text);
  }
  fields f = BASE;
  zmeta z;
  ACCEPT(&f, &z);
  CHECK(z.ncodecs == 0 && !z.has_compressor, "uncompressed: ncodecs %d",
        z.ncodecs);
  f.comp = "{\"id\": \"bz2\", \"level\": 1}";
  REFUSE(&f, FERRY_ENOTSUP, LABEL ": ", "codec 'bz2'");
  f.comp = "null";
  f.filters = "[{\"id\": \"delta\", \"dtype\": \"<f4\"}]";
  REFUSE(&f, FERRY_ENOTSUP, LABEL ": ", "codec 'delta'");
  f.filters = "[{\"elementsize\": 4}]";
  REFUSE(&f, FERRY_EFORMAT, LABEL ": ", "without an \"id\"");
  f.filters = "[{\"id\": \"shuffle\", \"elementsize\": -1}]";
  REFUSE(&f, FERRY_EFORMAT, LABEL ": ", "shuffle elementsize");
  f.filters = "{\"id\": \"shuffle\"}";
  REFUSE(&f, FERRY_EFORMAT, PATH, "filters");
  f.filters = "[{\"id\": \"shuffle\"}, {\"id\": \"shuffle\"}, {\"id\": "
              "\"shuffle\"}, {\"id\": \"shuffle\"}, {\"id\": \"shuffle\"}, "
              "{\"id\": \"shuffle\"}, {\"id\": \"shuffle\"}, {\"id\": "
              "\"shuffle\"}, {\"id\": \"shuffle\"}]";
  REFUSE(&f, FERRY_ENOTSUP, LABEL ": ", "more than 8 codecs");
}

static void test_layout(void) {
  fields f = BASE;
  zmeta z;
  ACCEPT(&f, &z);
  CHECK(z.sep == '.', "default separator '%c'", z.sep);
  f.sep = "\"/\"";
  ACCEPT(&f, &z);
  CHECK(z.sep == '/', "separator '/': '%c'", z.sep);
  /* The size a chunk path's out-of-memory message names is what the path
   * takes, with or without a trailing slash on the directory. */
  const char *dirs[2] = {"/data/s.zarr/a", "/data/s.zarr/a/"};
  int64_t idx[Z_MAX_DIMS] = {123, 4};
  for (int i = 0; i < 2; i++) {
    char *cp = ferry__zarr_chunk_path(dirs[i], &z, idx);
    size_t want = ferry__zarr_chunk_path_bytes(dirs[i], &z, idx);
    CHECK(cp && want == strlen(cp) + 1, "chunk path %s: %zu bytes named",
          cp ? cp : "(null)", want);
    free(cp);
  }
  f.sep = "\".\"";
  ACCEPT(&f, &z);
  CHECK(z.sep == '.', "separator '.': '%c'", z.sep);
  f.sep = "null";
  ACCEPT(&f, &z);
  CHECK(z.sep == '.', "separator null: '%c'", z.sep);
  f.sep = "\"-\"";
  REFUSE(&f, FERRY_EFORMAT, PATH, "dimension_separator");
  f.sep = "1";
  REFUSE(&f, FERRY_EFORMAT, PATH, "dimension_separator");
  f = BASE;
  f.order = "\"F\"";
  REFUSE(&f, FERRY_ENOTSUP, "array " LABEL, "order \"F\"");
  /* One dimension: F and C are the same layout. */
  f.shape = "[10]";
  f.chunks = "[4]";
  ACCEPT(&f, &z);
  f.order = "\"K\"";
  REFUSE(&f, FERRY_EFORMAT, PATH, "order");
  f.order = NULL;
  REFUSE(&f, FERRY_EFORMAT, PATH, "order");
}

static void test_sizes(void) {
  fields f = BASE;
  zmeta z;
  /* 10 x 7 in chunks of 4 x 3: 3 chunks across, 48-byte chunks. */
  f.shape = "[10, 7]";
  ACCEPT(&f, &z);
  CHECK(z.ndim == 2 && z.shape[0] == 10 && z.shape[1] == 7 &&
            z.chunks[0] == 4 && z.chunks[1] == 3 && z.across == 3 &&
            z.chunk_bytes == 48,
        "10x7/4x3: ndim %d across %lld chunk_bytes %zu", z.ndim,
        (long long)z.across, z.chunk_bytes);
  /* A scalar and an empty array are metadata ferry parses. */
  f.shape = "[]";
  f.chunks = "[]";
  ACCEPT(&f, &z);
  CHECK(z.ndim == 0 && z.chunk_bytes == 4, "scalar: ndim %d", z.ndim);
  f.shape = "[0, 3]";
  f.chunks = "[4, 3]";
  ACCEPT(&f, &z);
  static const struct {
    const char *shape, *chunks, *what;
    int code;
  } bad[] = {
      {"[10, 3]", "[4]", "same length", FERRY_EFORMAT},
      {"[10]", "[4, 3]", "same length", FERRY_EFORMAT},
      {"[-1, 3]", "[4, 3]", "bad shape or chunks", FERRY_EFORMAT},
      {"[10, 3]", "[4, -3]", "bad shape or chunks", FERRY_EFORMAT},
      {"[10, 3]", "[0, 3]", "bad shape or chunks", FERRY_EFORMAT},
      {"[10, 3.5]", "[4, 3]", "bad shape or chunks", FERRY_EFORMAT},
      {"[10, \"3\"]", "[4, 3]", "bad shape or chunks", FERRY_EFORMAT},
      {"10", "4", "same length", FERRY_EFORMAT},
      {NULL, "[4, 3]", "same length", FERRY_EFORMAT},
      {"[10, 3]", NULL, "same length", FERRY_EFORMAT},
      {"[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
       "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
       "too many dimensions", FERRY_ENOTSUP},
      /* Products of sizes that overflow 64 bits. */
      {"[10, 3]", "[4611686018427388004, 3]", "chunks: the bytes of one chunk",
       FERRY_EFORMAT},
      {"[10, 9223372036854775807]", "[4, 9223372036854775807]",
       "chunks: the bytes of one chunk", FERRY_EFORMAT},
      {"[10, 4611686018427387904, 4]", "[1, 1, 1]",
       "shape: the bytes or chunks of one sample", FERRY_EFORMAT},
      {"[9223372036854775807, 9223372036854775807]", "[1, 4096]",
       "shape: the bytes or chunks of one sample", FERRY_EFORMAT},
      {"[9223372036854775807, 1152921504606846976]", "[1, 288230376151711744]",
       "shape and chunks: the number of chunks", FERRY_EFORMAT},
      {"[2, 1152921504606846976]", "[1, 1]", "one band of chunks",
       FERRY_EFORMAT},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    f = BASE;
    f.shape = bad[i].shape;
    f.chunks = bad[i].chunks;
    REFUSE(&f, bad[i].code, PATH, bad[i].what);
  }
  /* The largest sizes that still fit are accepted (shape near INT64_MAX
   * counts its chunks without overflowing). */
  f = BASE;
  f.dtype = "\"|u1\"";
  f.shape = "[9223372036854775807]";
  f.chunks = "[1048576]";
  ACCEPT(&f, &z);
  CHECK(z.chunk_bytes == 1048576 && zarr_nchunks(&z, 0) == 8796093022208LL,
        "INT64_MAX rows: chunk_bytes %zu nchunks %lld", z.chunk_bytes,
        (long long)zarr_nchunks(&z, 0));
}

static void test_document(void) {
  fields f = BASE;
  f.format = "3";
  REFUSE(&f, FERRY_ENOTSUP, PATH, "zarr_format is not 2");
  f.format = "\"2\"";
  REFUSE(&f, FERRY_ENOTSUP, PATH, "zarr_format is not 2");
  f.format = NULL;
  REFUSE(&f, FERRY_ENOTSUP, PATH, "zarr_format is not 2");
  f = BASE;
  f.dtype = NULL;
  REFUSE(&f, FERRY_ENOTSUP, "array " LABEL, "dtype");
  static const char *corrupt[] = {"", "{", "{\"zarr_format\": 2,}",
                                  "{\"zarr_format\": 2, \"zarr_format\": 2}",
                                  "not json"};
  for (size_t i = 0; i < sizeof corrupt / sizeof *corrupt; i++) {
    zmeta z;
    ferry__err e;
    int rc = parse_text(corrupt[i], &z, &e);
    CHECK(rc == FERRY_EFORMAT && strstr(e.msg, PATH) &&
              strstr(e.msg, "corrupt JSON"),
          "'%s': rc %d (%s)", corrupt[i], rc, e.msg);
  }
  zmeta z;
  ferry__err e;
  int rc = parse_text("[1, 2]", &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, PATH) &&
            strstr(e.msg, "not a JSON object"),
        "a list: rc %d (%s)", rc, e.msg);
  /* The hash and size describe the bytes. */
  const char *t = text_of(&BASE);
  rc = parse_text(t, &z, &e);
  zmeta z2;
  char t2[2048];
  snprintf(t2, sizeof t2, "%s ", t);
  int rc2 = parse_text(t2, &z2, &e);
  CHECK(rc == 0 && rc2 == 0 && z.meta_size == (int64_t)strlen(t) &&
            z2.meta_size == z.meta_size + 1 && z.hash != z2.hash,
        "hash/size: %lld %lld", (long long)z.meta_size,
        (long long)z2.meta_size);
}

/* The file form: a .zarray on disk, and a missing one. */
static void test_file(void) {
  const char *tmp = getenv("FERRY_TEST_TMPDIR");
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/test_zarr_meta.%ld", tmp ? tmp : "/tmp",
           (long)getpid());
  CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
  zmeta z;
  ferry__err e;
  memset(&e, 0, sizeof e);
  int rc = ferry__zarr_parse_zarray(dir, LABEL, &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, dir) &&
            strstr(e.msg, ".zarray: is missing"),
        "missing .zarray: rc %d (%s)", rc, e.msg);
  snprintf(path, sizeof path, "%s/.zarray", dir);
  FILE *fp = fopen(path, "w");
  const char *t = text_of(&BASE);
  CHECK(fp && fputs(t, fp) >= 0 && fclose(fp) == 0, "write %s", path);
  rc = ferry__zarr_parse_zarray(dir, LABEL, &z, &e);
  zmeta zt;
  ferry__err et;
  parse_text(t, &zt, &et);
  CHECK(rc == 0 && z.dtype == FERRY_FLOAT32 && z.hash == zt.hash &&
            z.meta_size == zt.meta_size,
        "file: rc %d (%s)", rc, e.msg);
  fp = fopen(path, "w");
  CHECK(fp && fputs("{\"zarr_format\": 2", fp) >= 0 && fclose(fp) == 0,
        "write %s", path);
  rc = ferry__zarr_parse_zarray(dir, LABEL, &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, path) &&
            strstr(e.msg, "corrupt JSON"),
        "corrupt file: rc %d (%s)", rc, e.msg);
  unlink(path);
  rmdir(dir);
}

/* ---- Zarr v3 (zarr.json) ---------------------------------------------- */

#define V3PATH "/store.zarr/x/zarr.json"

/* A v3 array document: shape, data type, grid chunk shape, codecs, fill. */
static const char *v3_text(const char *shape, const char *dtype,
                           const char *chunks, const char *codecs,
                           const char *fill) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": %s, "
           "\"data_type\": \"%s\", \"chunk_grid\": {\"name\": \"regular\", "
           "\"configuration\": {\"chunk_shape\": %s}}, "
           "\"chunk_key_encoding\": {\"name\": \"default\"}, "
           "\"fill_value\": %s, \"codecs\": %s}",
           shape, dtype, chunks, fill, codecs);
  return buf;
}

static int v3_parse(const char *text, zmeta *z, ferry__err *err) {
  memset(err, 0, sizeof *err);
  return ferry__zarr_parse_v3_text(text, strlen(text), V3PATH, LABEL, z, err);
}

#define LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define BE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}"
#define SHARD(inner, codecs, ix, loc)                                          \
  "[{\"name\": \"sharding_indexed\", \"configuration\": "                      \
  "{\"chunk_shape\": " inner ", \"codecs\": " codecs ", \"index_codecs\": " ix \
  ", \"index_location\": \"" loc "\"}}]"

/* Types, endianness, keys, fill values and codecs of v3 arrays. */
static void test_v3(void) {
  zmeta z;
  ferry__err e;
  int rc = v3_parse(v3_text("[10, 3]", "float32", "[4, 3]", "[" LE "]", "0"),
                    &z, &e);
  CHECK(rc == 0 && z.v3 && z.dtype == FERRY_FLOAT32 && z.itemsize == 4 &&
            z.swapped == !host_little(),
        "plain: rc %d (%s)", rc, e.msg);
  CHECK(rc == 0 && z.key_c && z.sep == '/' && z.chunk_bytes == 48 &&
            z.ncodecs == 0 && !z.crc && !z.sharded,
        "plain fields");
  rc = v3_parse(v3_text("[10]", "uint16", "[4]",
                        "[" BE ", {\"name\": "
                        "\"crc32c\"}]",
                        "\"0x0102\""),
                &z, &e);
  CHECK(rc == 0 && z.swapped == host_little() && z.crc && z.has_fill &&
            z.fill[0] == 1 && z.fill[1] == 2,
        "big endian, crc32c, raw fill: rc %d (%s) fill %02x%02x", rc, e.msg,
        z.fill[0], z.fill[1]);
  rc = v3_parse(v3_text("[10]", "float64", "[4]", "[" LE "]", "\"NaN\""), &z,
                &e);
  double d = 0;
  memcpy(&d, z.fill, 8);
  CHECK(rc == 0 && isnan(d) && !signbit(d), "NaN fill: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "complex64", "[4]", "[" LE "]", "0"), &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "complex64"),
        "complex: rc %d (%s)", rc, e.msg);
  rc = v3_parse(
      v3_text("[10]", "int32", "[4]", "[" LE ", {\"name\": \"lzma\"}]", "0"),
      &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "'lzma'"),
        "unknown codec named: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10, 2]", "int32", "[4, 2]",
                        "[{\"name\": \"transpose\", \"configuration\": "
                        "{\"order\": [1, 0]}}, " LE "]",
                        "0"),
                &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "transpose"),
        "transpose refused: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "int32", "[4]", "[]", "0"), &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, V3PATH), "no codecs: rc %d (%s)",
        rc, e.msg);
  rc = v3_parse(v3_text("[10]", "int32", "[4]", "[" LE "]", "0") + 1, &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "corrupt JSON"),
        "corrupt: rc %d (%s)", rc, e.msg);
}

/* Sharding: inner chunks, index layout, and sizes checked. */
static void test_v3_shard(void) {
  zmeta z;
  ferry__err e;
  int rc = v3_parse(v3_text("[100, 6]", "uint32", "[40, 6]",
                            SHARD("[5, 6]", "[" LE "]",
                                  "[" LE ", {\"name\": \"crc32c\"}]", "start"),
                            "7"),
                    &z, &e);
  CHECK(rc == 0 && z.sharded && z.chunks[0] == 5 && z.shard[0] == 40 &&
            z.per_shard[0] == 8 && z.n_inner == 8 && z.index_start &&
            z.index_crc && z.index_bytes == 8 * 16 + 4 && z.chunk_bytes == 120,
        "shard: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[100]", "uint32", "[40]",
                        SHARD("[7]", "[" LE "]", "[" LE "]", "end"), "0"),
                &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "divide"),
        "inner not dividing: rc %d (%s)", rc, e.msg);
  rc = v3_parse(
      v3_text("[100]", "uint32", "[40]",
              SHARD("[5]", "[" LE "]", "[" LE ", {\"name\": \"gzip\"}]", "end"),
              "0"),
      &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "index_codecs"),
        "index codecs: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[100]", "uint32", "[40]",
                        SHARD("[5]", "[" LE "]", "[" LE "]", "middle"), "0"),
                &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "index_location"),
        "index location: rc %d (%s)", rc, e.msg);
  /* Sizes whose products overflow: refused, never wrapped. */
  rc = v3_parse(v3_text("[9223372036854775807, 9223372036854775807]", "int64",
                        "[9223372036854775807, 9223372036854775807]",
                        "[" LE "]", "0"),
                &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "overflow"),
        "overflowing chunk: rc %d (%s)", rc, e.msg);
  rc =
      v3_parse(v3_text("[4611686018427387904]", "int8", "[4611686018427387904]",
                       SHARD("[1]", "[" LE "]", "[" LE "]", "end"), "0"),
               &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "index"),
        "huge shard index: rc %d (%s)", rc, e.msg);
}

/* Issue 30: a .zarray whose chunks were [2^40, 10] for an array of 10 x 10
 * floats was accepted, and the first read failed with "out of memory:
 * 43980465111041 bytes for a band of chunks".  A chunk that reaches past
 * its array and would decode to more than 1 GiB is corrupt metadata,
 * refused naming the field (chunks; chunk_grid chunk_shape and the inner
 * chunk_shape of sharding_indexed in v3); a chunk reaching past its array
 * up to 1 GiB, or any chunk inside it, is accepted. */
static void test_padding(void) {
  zmeta z;
  ferry__err e;
  fields f = BASE;
  f.shape = "[10, 10]";
  f.chunks = "[1099511627776, 10]";
  REFUSE(&f, FERRY_EFORMAT, PATH, "chunks (1099511627776, 10) reaches past");
  REFUSE(&f, FERRY_EFORMAT, PATH, "43980465111040 bytes");
  f.chunks = "[10, 1099511627776]"; /* past on another dimension */
  REFUSE(&f, FERRY_EFORMAT, PATH, "corrupt metadata: chunks");
  f.dtype = "\"|u1\"";
  f.shape = "[3]";
  f.chunks = "[1073741824]"; /* exactly 1 GiB past the array: accepted */
  ACCEPT(&f, &z);
  CHECK(z.chunk_bytes == 1073741824u, "1 GiB chunk: %zu", z.chunk_bytes);
  f.chunks = "[1073741825]";
  REFUSE(&f, FERRY_EFORMAT, PATH, "1073741825 bytes");
  f.shape = "[0]"; /* an empty array has no chunk to read */
  ACCEPT(&f, &z);
  f.shape = "[4398046511104]"; /* a large chunk inside its array */
  f.chunks = "[2199023255552]";
  ACCEPT(&f, &z);
  int rc = v3_parse(
      v3_text("[10, 10]", "float32", "[1099511627776, 10]", "[" LE "]", "0"),
      &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, V3PATH) &&
            strstr(e.msg, "chunk_grid chunk_shape (1099511627776, 10)"),
        "v3 padded chunk: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "float32", "[2199023255552]",
                        SHARD("[1099511627776]", "[" LE "]", "[" LE "]", "end"),
                        "0"),
                &z, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, V3PATH) &&
            strstr(e.msg, "sharding_indexed chunk_shape (1099511627776,)"),
        "v3 padded inner chunk: rc %d (%s)", rc, e.msg);
}

/* Variable-length v3 arrays: zarr-python 3's string and bytes data types
 * with their vlen codecs, sharded too; what ferry cannot read refused. */
static void test_v3_vlen(void) {
  zmeta z;
  ferry__err e;
#define VLEN "{\"name\": \"vlen-utf8\"}"
#define ZSTD "{\"name\": \"zstd\", \"configuration\": {\"level\": 3}}"
  int rc = v3_parse(
      v3_text("[10]", "string", "[4]", "[" VLEN ", " ZSTD "]", "\"\""), &z, &e);
  CHECK(rc == 0 && z.vlen == 1 && z.dtype == FERRY_UINT8 && z.itemsize == 1 &&
            z.ncodecs == 1 && z.has_fill,
        "string + vlen-utf8 + zstd: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "variable_length_bytes", "[4]",
                        "[{\"name\": \"vlen-bytes\"}]", "\"\""),
                &z, &e);
  CHECK(rc == 0 && z.vlen == 1, "variable_length_bytes: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[16]", "string", "[8]",
                        SHARD("[4]", "[" VLEN "]", "[" LE "]", "end"), "\"\""),
                &z, &e);
  CHECK(rc == 0 && z.vlen == 1 && z.sharded && z.chunks[0] == 4,
        "sharded string: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "string", "[4]", "[" LE "]", "\"\""), &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "without a vlen-utf8"),
        "string with bytes: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10]", "int32", "[4]", "[" VLEN "]", "0"), &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "not variable-length"),
        "int32 with vlen-utf8: rc %d (%s)", rc, e.msg);
  rc = v3_parse(v3_text("[10, 2]", "string", "[4, 2]", "[" VLEN "]", "\"\""),
                &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "more than one dimension"),
        "2-D string: rc %d (%s)", rc, e.msg);
  rc =
      v3_parse(v3_text("[10]", "string", "[4]", "[" VLEN "]", "\"x\""), &z, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, "fill_value is not empty"),
        "fill x: rc %d (%s)", rc, e.msg);
#undef VLEN
#undef ZSTD
}

int main(void) {
  test_v3();
  test_v3_shard();
  test_v3_vlen();
  test_dtypes();
  test_fill();
  test_codecs();
  test_layout();
  test_sizes();
  test_padding();
  test_document();
  test_file();
  return ft_summary("test_zarr_meta");
}
