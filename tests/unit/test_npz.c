/*
 * test_npz.c - unit tests of the npz backend's zip reader (src/backends/
 * npz.c) on archives this test writes byte by byte (no NumPy needed): a
 * stored archive, a deflated one (when zlib is built in) and a Zip64 one
 * are described and read back value by value through io_read, rows in
 * shuffled order; every refusal has its code and a message naming the file;
 * and a mutation test: every truncation of each archive and three bit
 * patterns flipped in every byte are described and, when that succeeds,
 * read whole -- never a crash, a hang or an error without a message (run
 * it in an ASan/UBSan build: configure --enable-sanitize=address,undefined).
 * Scratch files go to a fresh directory under FERRY_TEST_TMPDIR (or /tmp).
 *
 * Exit status: 0 pass, 1 fail, 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "dataset/dataset.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "../ferry_test.h"

extern const ferry__backend ferry__backend_npz;

static char tmpdir[256];

/* ---- A byte buffer and a zip writer ------------------------------------ */

typedef struct bbuf {
  unsigned char p[1 << 16];
  size_t n;
} bbuf;

static void b_put(bbuf *b, const void *src, size_t n) {
  if (b->n + n <= sizeof b->p) {
    memcpy(b->p + b->n, src, n);
    b->n += n;
  }
}
static void b_u16(bbuf *b, unsigned v) {
  unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  b_put(b, x, 2);
}
static void b_u32(bbuf *b, uint32_t v) {
  b_u16(b, v & 0xffffu);
  b_u16(b, v >> 16);
}
static void b_u64(bbuf *b, uint64_t v) {
  b_u32(b, (uint32_t)v);
  b_u32(b, (uint32_t)(v >> 32));
}

/* CRC-32 (IEEE), bit by bit: independent of zlib's. */
static uint32_t crc32_ref(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* A version 1.0 .npy image: header dict padded to 64 bytes, then data. */
static size_t npy_image(unsigned char *out, const char *descr,
                        const char *shape, const void *data, size_t n) {
  char dict[200];
  int len = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
  size_t hl = (size_t)len + 1, total = 10 + hl;
  size_t pad = (64 - total % 64) % 64;
  hl += pad;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (unsigned char)(hl & 0xff);
  out[9] = (unsigned char)(hl >> 8);
  memcpy(out + 10, dict, (size_t)len);
  memset(out + 10 + len, ' ', pad);
  out[10 + hl - 1] = '\n';
  memcpy(out + 10 + hl, data, n);
  return 10 + hl + n;
}

typedef struct zm {
  const char *name;
  const unsigned char *data;
  size_t n;
  int method; /* 0, 8, or anything to write as is */
  unsigned flags;
} zm;

/* A zip archive of members m[0..k); zip64: every size and offset through
 * the Zip64 extra field, with a Zip64 end record and locator; disks: the
 * end record's disk number. */
static void write_zip(bbuf *b, const zm *m, int k, int zip64, int disks) {
  uint64_t lho[8], csz[8];
  uint32_t crc[8];
#ifdef HAVE_ZLIB
  static unsigned char comp[8][1 << 14];
#endif
  b->n = 0;
  for (int i = 0; i < k; i++) {
    const unsigned char *d = m[i].data;
    size_t cn = m[i].n;
#ifdef HAVE_ZLIB
    if (m[i].method == 8) {
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      zs.next_in = (unsigned char *)(uintptr_t)d;
      zs.avail_in = (uInt)m[i].n;
      zs.next_out = comp[i];
      zs.avail_out = sizeof comp[i];
      deflate(&zs, Z_FINISH);
      cn = sizeof comp[i] - zs.avail_out;
      deflateEnd(&zs);
      d = comp[i];
    }
#endif
    lho[i] = b->n;
    csz[i] = cn;
    crc[i] = crc32_ref(m[i].data, m[i].n);
    size_t nl = strlen(m[i].name);
    b_put(b, "PK\3\4", 4);
    b_u16(b, 20);
    b_u16(b, m[i].flags);
    b_u16(b, (unsigned)m[i].method);
    b_u32(b, 0x210000);
    b_u32(b, crc[i]);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)cn);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)m[i].n);
    b_u16(b, (unsigned)nl);
    b_u16(b, zip64 ? 20 : 0);
    b_put(b, m[i].name, nl);
    if (zip64) {
      b_u16(b, 1);
      b_u16(b, 16);
      b_u64(b, m[i].n);
      b_u64(b, cn);
    }
    b_put(b, d, cn);
  }
  size_t cd = b->n;
  for (int i = 0; i < k; i++) {
    size_t nl = strlen(m[i].name);
    b_put(b, "PK\1\2", 4);
    b_u16(b, 45);
    b_u16(b, 20);
    b_u16(b, m[i].flags);
    b_u16(b, (unsigned)m[i].method);
    b_u32(b, 0x210000);
    b_u32(b, crc[i]);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)csz[i]);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)m[i].n);
    b_u16(b, (unsigned)nl);
    b_u16(b, zip64 ? 28 : 0);
    b_u16(b, 0);
    b_u16(b, 0);
    b_u16(b, 0);
    b_u32(b, 0);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)lho[i]);
    b_put(b, m[i].name, nl);
    if (zip64) {
      b_u16(b, 1);
      b_u16(b, 24);
      b_u64(b, m[i].n);
      b_u64(b, csz[i]);
      b_u64(b, lho[i]);
    }
  }
  size_t cdn = b->n - cd;
  if (zip64) {
    size_t rec = b->n;
    b_put(b, "PK\6\6", 4);
    b_u64(b, 44);
    b_u16(b, 45);
    b_u16(b, 45);
    b_u32(b, 0);
    b_u32(b, 0);
    b_u64(b, (uint64_t)k);
    b_u64(b, (uint64_t)k);
    b_u64(b, cdn);
    b_u64(b, cd);
    b_put(b, "PK\6\7", 4);
    b_u32(b, 0);
    b_u64(b, rec);
    b_u32(b, 1);
  }
  b_put(b, "PK\5\6", 4);
  b_u16(b, (unsigned)disks);
  b_u16(b, (unsigned)disks);
  b_u16(b, zip64 ? 0xffff : (unsigned)k);
  b_u16(b, zip64 ? 0xffff : (unsigned)k);
  b_u32(b, zip64 ? 0xffffffffu : (uint32_t)cdn);
  b_u32(b, zip64 ? 0xffffffffu : (uint32_t)cd);
  b_u16(b, 0);
}

static const char *save(const char *name, const unsigned char *p, size_t n) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n) {
    perror(path);
    exit(99);
  }
  fclose(f);
  return path;
}

/* ---- The archives ------------------------------------------------------ */

static int32_t xs[5] = {7, -3, 11, 400000, -9};
static double ys[5][2] = {{0.5, 1}, {2, 3.25}, {-4, 5}, {6, 7}, {8, -9.5}};
static unsigned char xnpy[256], ynpy[256];
static size_t xlen_, ylen_;

static void members(zm *m, int method) {
  xlen_ = npy_image(xnpy, "<i4", "(5,)", xs, sizeof xs);
  ylen_ = npy_image(ynpy, "<f8", "(5, 2)", ys, sizeof ys);
  m[0] = (zm){"x.npy", xnpy, xlen_, method, 0};
  m[1] = (zm){"y.npy", ynpy, ylen_, method, 0};
}

/* Scan path and read every row of every variable (rows in the order 3, 0,
 * 4, 1, 2 one at a time, then all at once) into out (x then y); 0 or the
 * first error. */
static int read_all(const char *path, unsigned char *out, size_t cap,
                    ferry__err *e) {
  ferry__manifest m;
  int rc = ferry__manifest_scan(path, NULL, NULL, &m, e);
  if (rc < 0)
    return rc;
  size_t need = 0;
  for (int v = 0; v < m.nvars; v++)
    need += (size_t)m.num_samples * m.vars[v].row_bytes;
  if (need > cap) { /* a mutant that claims more rows: not read */
    ferry__manifest_free(&m);
    return 0;
  }
  ferry__io *io = NULL;
  ferry__io_params p = {MPI_COMM_SELF, 0, 0, 4, NULL, 0, 0, 0};
  if ((rc = ferry__backend_npz.io_open(&io, &m, &p, e)) == 0) {
    static const int64_t order[5] = {3, 0, 4, 1, 2};
    size_t at = 0;
    for (int v = 0; rc == 0 && v < m.nvars; v++) {
      size_t rb = m.vars[v].row_bytes;
      for (int k = 0; rc == 0 && k < 5 && order[k] < m.num_samples; k++)
        rc = ferry__backend_npz.io_read(io, 0, v, order[k], 1,
                                        out + at + (size_t)order[k] * rb, e);
      if (rc == 0)
        rc =
            ferry__backend_npz.io_read(io, 0, v, 0, m.num_samples, out + at, e);
      at += (size_t)m.num_samples * rb;
    }
    ferry__backend_npz.io_close(io);
  }
  ferry__manifest_free(&m);
  return rc;
}

static void check_good(const char *label, const bbuf *b, int method) {
  const char *path = save(label, b->p, b->n);
  ferry__part_desc d;
  ferry__err e = {0};
  int rc = ferry__backend_npz.describe(path, NULL, &d, &e);
  CHECK(rc == 0, "%s: describe: %s", label, e.msg);
  if (rc == 0) {
    CHECK(d.nvars == 2 && d.num_samples == 5, "%s: %d vars, %lld samples",
          label, d.nvars, (long long)d.num_samples);
    CHECK(d.nvars == 2 && strcmp(d.vars[0].name, "x") == 0 &&
              strcmp(d.vars[1].name, "y") == 0 &&
              d.vars[0].dtype == FERRY_INT32 &&
              d.vars[1].dtype == FERRY_FLOAT64 && d.vars[1].row_ndim == 1 &&
              d.vars[1].row_shape[0] == 2 && d.vars[1].row_bytes == 16,
          "%s: variables", label);
    CHECK(d.vars[0].storage &&
              strstr(d.vars[0].storage, method ? "deflate" : "stored"),
          "%s: storage '%s'", label,
          d.vars[0].storage ? d.vars[0].storage : "(none)");
    if (method == 0) /* x's data: after the local header, name, header */
      CHECK(d.data_offset[0] == (int64_t)(xlen_ - sizeof xs) + 30 + 5 +
                                    (strstr(label, "64") ? 20 : 0),
            "%s: x's data at %lld", label, (long long)d.data_offset[0]);
    ferry__part_desc_free(&d);
  }
  unsigned char got[sizeof xs + sizeof ys];
  memset(got, 0, sizeof got);
  rc = read_all(path, got, sizeof got, &e);
  CHECK(rc == 0, "%s: read: %s", label, e.msg);
  CHECK(memcmp(got, xs, sizeof xs) == 0 &&
            memcmp(got + sizeof xs, ys, sizeof ys) == 0,
        "%s: values read differ from those written", label);
}

static void refuse(const char *label, const bbuf *b, int code,
                   const char *want) {
  const char *path = save(label, b->p, b->n);
  ferry__part_desc d;
  ferry__err e = {0};
  int rc = ferry__backend_npz.describe(path, NULL, &d, &e);
  CHECK(rc == code, "%s: got %d, want %d: %s", label, rc, code, e.msg);
  CHECK(strstr(e.msg, want) && strstr(e.msg, path),
        "%s: message '%s' lacks "
        "'%s' or the file name",
        label, e.msg, want);
}

static void test_refusals(void) {
  zm m[2];
  bbuf b;
  members(m, 0);
  write_zip(&b, m, 2, 0, 0);
  bbuf t = b;
  t.n = 10;
  refuse("short.npz", &t, FERRY_EFORMAT, "shorter than an end of central");
  t.n = b.n - 5;
  refuse("cut.npz", &t, FERRY_EFORMAT, "no end of central directory");
  m[1].method = 14;
  write_zip(&b, m, 2, 0, 0);
  refuse("lzma.npz", &b, FERRY_ENOTSUP, "member y.npy: compression method 14");
  members(m, 0);
  m[0].flags = 1;
  write_zip(&b, m, 2, 0, 0);
  refuse("locked.npz", &b, FERRY_ENOTSUP, "member x.npy: is encrypted");
  members(m, 0);
  m[1].name = "y.txt";
  write_zip(&b, m, 2, 0, 0);
  refuse("text.npz", &b, FERRY_EFORMAT, "member y.txt: is not a .npy array");
  members(m, 0);
  m[1].name = "x.npy";
  write_zip(&b, m, 2, 0, 0);
  refuse("twice.npz", &b, FERRY_EFORMAT, "appears twice");
  members(m, 0);
  write_zip(&b, m, 2, 0, 1);
  refuse("disks.npz", &b, FERRY_ENOTSUP, "multi-disk");
  m[0].data = (const unsigned char *)"not an array";
  m[0].n = 12;
  write_zip(&b, m, 2, 0, 0);
  refuse("junk.npz", &b, FERRY_EFORMAT, "member x.npy: not a .npy file");
  write_zip(&b, m, 0, 0, 0);
  refuse("empty.npz", &b, FERRY_EFORMAT, "holds no member");
}

/* Every truncation, and bytes XORed with 0x01, 0x80 and 0xff at every
 * position: describe and read never crash and every error has a message. */
static void mutate(const char *label, const bbuf *good) {
  static bbuf b;
  unsigned char out[4096];
  int bad = 0, ok = 0;
  static const unsigned char masks[3] = {0x01, 0x80, 0xff};
  size_t variants = good->n + 3 * good->n;
  for (size_t k = 0; k < variants; k++) {
    b = *good;
    if (k < good->n) {
      b.n = k;
    } else {
      size_t i = (k - good->n) / 3;
      b.p[i] ^= masks[(k - good->n) % 3];
    }
    char name[64];
    snprintf(name, sizeof name, "%s.mut.npz", label);
    const char *path = save(name, b.p, b.n);
    ferry__err e = {0};
    int rc = read_all(path, out, sizeof out, &e);
    if (rc < 0 && !e.msg[0]) {
      CHECK(0, "%s: variant %zu failed (%d) without a message", label, k, rc);
      bad++;
    } else if (rc == 0) {
      ok++;
    }
    if (bad > 5)
      break;
  }
  printf("%s: %zu variants, %d read without an error\n", label, variants, ok);
  CHECK(ok > 0, "%s: no variant was read (the intact bytes should be)", label);
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
      MPI_SUCCESS) {
    fprintf(stderr, "SKIP: MPI_Init_thread failed\n");
    return 77;
  }
  const char *scratch = getenv("FERRY_TEST_TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_npz-XXXXXX",
           scratch && *scratch ? scratch : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    MPI_Finalize();
    return 1;
  }
  zm m[2];
  bbuf stored, zip64, deflated;
  members(m, 0);
  write_zip(&stored, m, 2, 0, 0);
  check_good("stored.npz", &stored, 0);
  write_zip(&zip64, m, 2, 1, 0);
  check_good("zip64.npz", &zip64, 0);
#ifdef HAVE_ZLIB
  members(m, 8);
  write_zip(&deflated, m, 2, 0, 0);
  check_good("deflated.npz", &deflated, 8);
#else
  deflated = stored;
  printf("no zlib in this build: deflated members are not tested\n");
#endif
  test_refusals();
  mutate("stored", &stored);
  mutate("zip64", &zip64);
  mutate("deflated", &deflated);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (!getenv("FERRY_KEEP_TMP") && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmpdir);
  int st = ft_summary("test_npz");
  MPI_Finalize();
  return st;
}
