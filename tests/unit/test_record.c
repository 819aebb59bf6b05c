/*
 * test_record.c - the record writer and reader of src/util/record.c (issue
 * 24, "one record writer/reader") and the bytes of its three users.
 *
 * The users' bytes (issue 24: the move must not change a byte): a packed
 * manifest (core/manifest.c) and its hash, with and without backend
 * records, a mix source's record (backends/mixread.c) and a parquet
 * variable's record (backends/parquet/record.c), each built by hand, are
 * compared with the bytes and hashes the code before the move wrote.  The
 * manifest hash is part of the plan certificate and of state files
 * (dataset_hash), the records are saved (hex) in manifest JSON files and
 * hashed with the manifest: a changed byte would refuse old checkpoints
 * and saved manifests.
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
#include "backends/mixrec.h"
#include "backends/parquet/parquet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

/* ---- The users' bytes, pinned from the code before the move ---------- */

/*
 * The expected values below were printed by this test (FERRY_TEST_PRINT=1)
 * against the code before issue 24 (commit a227933: core/manifest.c's own
 * wbuf, mixread.c's wb, parquet/record.c's native-order wbuf, on x86-64,
 * little-endian), and are kept here as constants: never regenerate them
 * from the code under test, or the test pins nothing.
 */

/* got as lowercase hex (out holds 2 n + 1 chars). */
static void hex(const unsigned char *got, size_t n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = d[got[i] >> 4];
    out[2 * i + 1] = d[got[i] & 15];
  }
  out[2 * n] = '\0';
}

/* The n bytes at got are the hex string want; else the first difference. */
static void same_bytes(const char *what, const void *got, size_t n,
                       const char *want) {
  char *h = malloc(2 * n + 1);
  if (!h) {
    CHECK(h != NULL, "%s: out of memory", what);
    return;
  }
  hex(got, n, h);
  if (getenv("FERRY_TEST_PRINT")) {
    printf("%s (%zu bytes):\n", what, n);
    for (size_t i = 0; i < 2 * n; i += 64)
      printf("    \"%.64s\"\n", h + i);
  }
  size_t i = 0;
  while (h[i] && want[i] && h[i] == want[i])
    i++;
  CHECK(h[i] == '\0' && want[i] == '\0',
        "%s: %zu bytes, want %zu; first difference at byte %zu", what, n,
        strlen(want) / 2, i / 2);
  free(h);
}

/* A manifest exercising every field: two variables (one swapped with a
 * two-dimensional row), notes, storage, two parts, records of 5, 0, 3 and
 * 4 bytes (zero bytes among them), offsets and sizes above 2^32. */
static char *dup(const char *s) {
  char *t = strdup(s);
  if (!t) {
    fprintf(stderr, "out of memory\n");
    exit(FT_HARD_ERROR);
  }
  return t;
}

static void *zalloc(size_t n) {
  void *p = calloc(1, n);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(FT_HARD_ERROR);
  }
  return p;
}

static void build_manifest(ferry__manifest *m, int record_version) {
  static const unsigned char recs[2][2][5] = {{{1, 0, 2, 0xff, 0x80}, {0}},
                                              {{9, 8, 7}, {0, 0, 0, 1}}};
  static const size_t lens[2][2] = {{5, 0}, {3, 4}};
  memset(m, 0, sizeof *m);
  m->backend = dup("zarr");
  m->spec = dup("data/store.zarr");
  m->notes = dup("chunks of 7 rows");
  m->record_version = record_version;
  m->nvars = 2;
  m->vars = zalloc(2 * sizeof *m->vars);
  m->vars[0].name = dup("image");
  m->vars[0].dtype = FERRY_UINT16;
  m->vars[0].swapped = 1;
  m->vars[0].row_ndim = 2;
  m->vars[0].row_shape[0] = 3;
  m->vars[0].row_shape[1] = 5;
  m->vars[0].row_bytes = 30;
  m->vars[0].chunk_rows = 7;
  m->vars[0].cache_bytes = (size_t)1 << 33;
  m->vars[0].storage = dup("blosc/lz4");
  m->vars[1].name = dup("label");
  m->vars[1].dtype = FERRY_INT64;
  m->vars[1].row_bytes = 8;
  m->nparts = 2;
  m->parts = zalloc(2 * sizeof *m->parts);
  for (int p = 0; p < 2; p++) {
    ferry__part *pt = &m->parts[p];
    pt->num_samples = p ? 20 : 13;
    pt->first_sample = p ? 13 : 0;
    pt->paths = zalloc(2 * sizeof *pt->paths);
    pt->data_offset = zalloc(2 * sizeof *pt->data_offset);
    pt->file_size = zalloc(2 * sizeof *pt->file_size);
    pt->rec = zalloc(2 * sizeof *pt->rec);
    for (int v = 0; v < 2; v++) {
      pt->paths[v] = dup(p ? "data/b.zarr/x" : "data/a.zarr/x");
      pt->data_offset[v] = 128 * (v + 1);
      pt->file_size[v] = ((int64_t)5 << 32) + 1000 * p + v;
      pt->rec[v].len = lens[p][v];
      if (lens[p][v]) {
        pt->rec[v].p = zalloc(lens[p][v]);
        memcpy(pt->rec[v].p, recs[p][v], lens[p][v]);
      }
    }
  }
  m->num_samples = 33;
}

static const char MANIFEST_PACKED[] =
    "4652594d030000008a01000000000000040000007a6172720f00000064617461"
    "2f73746f72652e7a617272100000006368756e6b73206f66203720726f777301"
    "0000000200000005000000696d61676506010200030000000000000005000000"
    "000000001e000000000000000700000000000000000000000200000009000000"
    "626c6f73632f6c7a34050000006c6162656c0400000008000000000000000000"
    "0000000000000000000000000000000000000200000000000000210000000000"
    "00000d0000000000000000000000000000000d000000646174612f612e7a6172"
    "722f788000000000000000000000000500000005000000010002ff800d000000"
    "646174612f612e7a6172722f7800010000000000000100000005000000000000"
    "0014000000000000000d000000000000000d000000646174612f622e7a617272"
    "2f788000000000000000e803000005000000030000000908070d000000646174"
    "612f622e7a6172722f780001000000000000e903000005000000040000000000"
    "00017e12f6a43c2a777e";
static const uint64_t MANIFEST_HASH_RECORDS = 0xe46116c322ff3322ULL;
static const uint64_t MANIFEST_HASH_NO_RECORDS = 0xdff1d21a7555e204ULL;

static void test_manifest_bytes(void) {
  ferry__manifest m;
  void *buf = NULL;
  size_t len = 0;
  build_manifest(&m, 1);
  int rc = ferry__manifest_pack(&m, &buf, &len);
  CHECK(rc == 0, "pack: rc %d", rc);
  if (rc == 0) {
    same_bytes("packed manifest", buf, len, MANIFEST_PACKED);
    CHECK(ferry__manifest_packed_size(&m) == len,
          "packed size %zu, pack made %zu", ferry__manifest_packed_size(&m),
          len);
  }
  uint64_t h = ferry__manifest_hash(&m);
  if (getenv("FERRY_TEST_PRINT"))
    printf("manifest hash, records: 0x%016llxULL\n", (unsigned long long)h);
  CHECK(h == MANIFEST_HASH_RECORDS, "manifest hash with records 0x%016llx",
        (unsigned long long)h);
  free(buf);
  ferry__manifest_free(&m);
  build_manifest(&m, 0);
  h = ferry__manifest_hash(&m);
  if (getenv("FERRY_TEST_PRINT"))
    printf("manifest hash, no records: 0x%016llxULL\n", (unsigned long long)h);
  CHECK(h == MANIFEST_HASH_NO_RECORDS,
        "manifest hash without records 0x%016llx", (unsigned long long)h);
  ferry__manifest_free(&m);
}

static const char MIX_RECORD[] =
    "000000000000d03f0100000007000000612f622e6e7079020000000500000069"
    "6d616765050000006c6162656c08000000000000004652594d000102fe";

static void test_mix_bytes(void) {
  static const unsigned char sub[] = {'F', 'R', 'Y', 'M', 0, 1, 2, 0xfe};
  char *common[] = {"image", "label"};
  ferry__mix_record r = {0.25,   1,           "a/b.npy", 2,
                         common, (void *)sub, sizeof sub};
  ferry__blob b = {0};
  int rc = ferry__mix_record_pack(&r, &b);
  CHECK(rc == 0, "mix record pack: rc %d", rc);
  if (rc == 0)
    same_bytes("mix record", b.p, b.len, MIX_RECORD);
  free(b.p);
}

static const char PARQUET_RECORD[] =
    "5051523205000000000000000a00000001000000000000000000000001000000"
    "00000000020000000b000000702f612e70617271756574d2040000000000000b"
    "000000702f622e70617271756574070000000300000002000000000000000000"
    "0000000000000a0000000000000004000000000000006400000000000000c800"
    "0000000000000a00000000000000000000000100000000000000000000000000"
    "00000000000000000000000000000a0000000000000005000000000000000900"
    "0000080000003c00000000000000460000000000000005000000000000000100"
    "000006000000020000000000000000000000080000002100000000000000";

static void test_parquet_bytes(void) {
  char *files[] = {"p/a.parquet", "p/b.parquet"};
  int64_t fsize[] = {1234, ((int64_t)3 << 32) + 7};
  pq_rg_rec rg[2] = {{0, 10, 4, 100, 200, 10, 0, 1, 0, 0, 0},
                     {10, 5, ((int64_t)1 << 35) + 9, 60, 70, 5, 1, 6, 2,
                      ((int64_t)1 << 35), 33}};
  pq_rec r = {5, 0, FERRY_FLOAT32, 1, 0, 0, 1, 2, files, fsize, 2, rg};
  ferry__blob b = {0};
  int rc = ferry__pq_rec_put(&r, &b);
  CHECK(rc == 0, "parquet record put: rc %d", rc);
  if (rc == 0)
    same_bytes("parquet record", b.p, b.len, PARQUET_RECORD);
  free(b.p);
}

int main(void) {
  test_manifest_bytes();
  test_mix_bytes();
  test_parquet_bytes();
  return ft_summary("test_record");
}
