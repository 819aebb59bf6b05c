/*
 * test_record.c - the record writer and reader of src/util/record.c (issue
 * 24, "one record writer/reader") and the bytes of its three users.
 *
 * The toolkit: every type round-trips in both byte orders with the bytes
 * the layout says; the hash-only writer's hash and length are those of
 * the whole buffer; an allocation that fails (a realloc_fn that fails the
 * N-th call, for every N a record makes) makes every later put a no-op and
 * finish FERRY_ENOMEM with the size it wanted, and a string too long for
 * its length field is refused the same way; the reader refuses the record
 * cut at every length and with every byte set to 0xff or 0x00 with a
 * FERRY_E* code and the offset, never reading past the end (each prefix is
 * a malloc of its own size: ASan sees a byte too far), and its first
 * failure sticks.
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
#include "util/record.h"

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
    "4652594d07000000a601000000000000040000007a6172720f00000064617461"
    "2f73746f72652e7a617272100000006368756e6b73206f66203720726f777301"
    "0000000200000005000000696d61676506010200030000000000000005000000"
    "000000001e000000000000000700000000000000000000000200000009000000"
    "626c6f73632f6c7a34000000000000000000000000050000006c6162656c0400"
    "0000080000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000002000000000000002100000000000000000000000d00"
    "00000000000000000000000000000d000000646174612f612e7a6172722f7880"
    "00000000000000000000000500000005000000010002ff800d00000064617461"
    "2f612e7a6172722f780001000000000000010000000500000000000000140000"
    "00000000000d000000000000000d000000646174612f622e7a6172722f788000"
    "000000000000e803000005000000030000000908070d000000646174612f622e"
    "7a6172722f780001000000000000e90300000500000004000000000000015086"
    "ad05f3e4cef0";
static const uint64_t MANIFEST_HASH_RECORDS = 0xe46116c322ff3322ULL;
static const uint64_t MANIFEST_HASH_NO_RECORDS = 0xdff1d21a7555e204ULL;
/* hash version 3 (2026-11-29): the notes left out, each record as its
 * length and word hash */
static const uint64_t MANIFEST_HASH3_RECORDS = 0x64b0304c2a3488f1ULL;
static const uint64_t MANIFEST_HASH3_NO_RECORDS = 0x6abd52221c656980ULL;

/* ferry__hash_words: pinned (the packed manifest's checksum, a ragged
 * variable's offsets in the manifest hash), and the same from an unaligned
 * copy. */
static void test_hash_words(void) {
  unsigned char b[18], *u = b + 1;
  for (int i = 0; i < 17; i++)
    u[i] = (unsigned char)(i + 1);
  uint64_t h = ferry__hash_words(FERRY__FNV_INIT, u, 17);
  CHECK(h == 0xebdb8c548918fceaULL, "hash_words of 1..17: 0x%016llx",
        (unsigned long long)h);
  CHECK(ferry__hash_words(FERRY__FNV_INIT, u, 16) !=
            ferry__hash_words(FERRY__FNV_INIT, u + 1, 16),
        "hash_words of other bytes");
  CHECK(ferry__hash_words(7, u, 5) == ferry__fnv1a(7, u, 5),
        "hash_words of fewer than 8 bytes is FNV-1a");
}

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
  /* version 2 (the notes in it): the value states saved before
   * 2026-11-29 hold, which they are still compared with */
  uint64_t h = ferry__manifest_hash_v2(&m);
  CHECK(h == MANIFEST_HASH_RECORDS, "manifest hash v2 with records 0x%016llx",
        (unsigned long long)h);
  h = ferry__manifest_hash(&m);
  if (getenv("FERRY_TEST_PRINT"))
    printf("manifest hash v3, records: 0x%016llxULL\n", (unsigned long long)h);
  CHECK(h == MANIFEST_HASH3_RECORDS, "manifest hash with records 0x%016llx",
        (unsigned long long)h);
  /* version 3 leaves the notes out, version 2 does not */
  free(m.notes);
  m.notes = dup("chunks of 7 rows (other files ignored)");
  CHECK(ferry__manifest_hash(&m) == h, "the notes changed the hash");
  CHECK(ferry__manifest_hash_v2(&m) != MANIFEST_HASH_RECORDS,
        "the notes did not change the version 2 hash");
  free(buf);
  ferry__manifest_free(&m);
  build_manifest(&m, 0);
  h = ferry__manifest_hash_v2(&m);
  CHECK(h == MANIFEST_HASH_NO_RECORDS,
        "manifest hash v2 without records 0x%016llx", (unsigned long long)h);
  h = ferry__manifest_hash(&m);
  if (getenv("FERRY_TEST_PRINT"))
    printf("manifest hash v3, no records: 0x%016llxULL\n",
           (unsigned long long)h);
  CHECK(h == MANIFEST_HASH3_NO_RECORDS,
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
    "5051523305000000000000000a00000001000000000000000000000000000000"
    "000000000100000000000000020000000b000000702f612e70617271756574d2"
    "040000000000000b000000702f622e7061727175657407000000030000000200"
    "00000000000000000000000000000a0000000000000004000000000000006400"
    "000000000000c8000000000000000a0000000000000000000000010000000000"
    "000000000000000000000000000000000000000000000a000000000000000500"
    "00000000000009000000080000003c0000000000000046000000000000000500"
    "0000000000000100000006000000020000000000000000000000080000002100"
    "000000000000";

static void test_parquet_bytes(void) {
  char *files[] = {"p/a.parquet", "p/b.parquet"};
  int64_t fsize[] = {1234, ((int64_t)3 << 32) + 7};
  pq_rg_rec rg[2] = {{0, 10, 4, 100, 200, 10, 0, 1, 0, 0, 0},
                     {10, 5, ((int64_t)1 << 35) + 9, 60, 70, 5, 1, 6, 2,
                      ((int64_t)1 << 35), 33}};
  pq_rec r = {5, 0,     FERRY_FLOAT32, 1, 0,  0,        1,
              2, files, fsize,         2, rg, PQ_FIXED, 0};
  ferry__blob b = {0};
  int rc = ferry__pq_rec_put(&r, &b);
  CHECK(rc == 0, "parquet record put: rc %d", rc);
  if (rc == 0)
    same_bytes("parquet record", b.p, b.len, PARQUET_RECORD);
  free(b.p);
}

/* ---- The toolkit ---------------------------------------------------- */

/* One record of every type, as the reader checks it back (read_sample). */
static void put_sample(ferry__rec_w *w) {
  static const unsigned char bin[] = {0, 0xff, 0, 7};
  ferry__rec_put(w, "AB", 2);
  ferry__rec_put_u8(w, 0xfe);
  ferry__rec_put_u32(w, 0x01020304u);
  ferry__rec_put_u64(w, 0x1122334455667788ULL);
  ferry__rec_put_i32(w, -2);
  ferry__rec_put_i64(w, INT64_MIN);
  ferry__rec_put_str(w, "path/x.npy");
  ferry__rec_put_str(w, NULL);
  ferry__rec_put_blob(w, bin, sizeof bin);
  ferry__rec_put_blob(w, NULL, 0);
  ferry__rec_put_u64(w, 42); /* a count read with get_nonneg */
}

/* Read the sample back; 1 when every value is what put_sample wrote (on a
 * failed read the values are 0 and NULL, and this says 0). */
static int read_sample(ferry__rec_r *r) {
  char ab[2];
  ferry__rec_get(r, ab, 2);
  unsigned u8 = ferry__rec_get_u8(r);
  uint32_t u32 = ferry__rec_get_u32(r);
  uint64_t u64 = ferry__rec_get_u64(r);
  int32_t i32 = ferry__rec_get_i32(r);
  int64_t i64 = ferry__rec_get_i64(r);
  char *s1 = ferry__rec_get_str(r), *s2 = ferry__rec_get_str(r);
  size_t n1 = 9, n2 = 9;
  const unsigned char *b1 = ferry__rec_get_blob(r, &n1);
  const void *b2 = ferry__rec_get_blob(r, &n2);
  int64_t count = ferry__rec_get_nonneg(r, "bad count");
  int ok = memcmp(ab, "AB", 2) == 0 && u8 == 0xfe && u32 == 0x01020304u &&
           u64 == 0x1122334455667788ULL && i32 == -2 && i64 == INT64_MIN &&
           s1 && strcmp(s1, "path/x.npy") == 0 && s2 && *s2 == '\0' && b1 &&
           n1 == 4 && b1[0] == 0 && b1[1] == 0xff && b1[3] == 7 && b2 &&
           n2 == 0 && count == 42;
  free(s1);
  free(s2);
  return ok;
}

/* The sample's bytes in one order, malloc'd. */
static unsigned char *sample(int big_endian, size_t *len) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  w.big_endian = big_endian;
  put_sample(&w);
  void *p = NULL;
  if (ferry__rec_finish(&w, &p, len) != 0) {
    fprintf(stderr, "out of memory\n");
    exit(FT_HARD_ERROR);
  }
  return p;
}

static void test_round_trip(void) {
  for (int big = 0; big < 2; big++) {
    size_t len;
    unsigned char *p = sample(big, &len);
    CHECK(len == 2 + 1 + 4 + 8 + 4 + 8 + 14 + 4 + 8 + 4 + 8,
          "sample: %zu bytes", len);
    /* the layout: "AB", 0xfe, then the u32 in the order asked for */
    static const unsigned char le[4] = {4, 3, 2, 1}, be[4] = {1, 2, 3, 4};
    CHECK(memcmp(p + 3, big ? be : le, 4) == 0, "u32 bytes, big_endian %d",
          big);
    CHECK(p[15] == (big ? 0xff : 0xfe) && p[18] == (big ? 0xfe : 0xff),
          "i32 -2 in order %d", big);
    ferry__rec_r r;
    ferry__rec_r_init(&r, p, len);
    r.big_endian = big;
    CHECK(read_sample(&r) && r.rc == 0, "round trip, big_endian %d: rc %d %s",
          big, r.rc, r.why ? r.why : "");
    CHECK(ferry__rec_end(&r, "extra") == 0, "bytes left after the sample");
    /* read in the other order, the integers come out swapped */
    ferry__rec_r_init(&r, p + 3, 4);
    r.big_endian = !big;
    CHECK(ferry__rec_get_u32(&r) == 0x04030201u, "other order");
    free(p);
  }
  unsigned char b[8];
  ferry__le64_store(b, 0x0102030405060708ULL);
  CHECK(b[0] == 8 && b[7] == 1 && ferry__le64_load(b) == 0x0102030405060708ULL,
        "le64 store/load");
  /* growth past the first 256 bytes, many times over */
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  for (uint32_t i = 0; i < 5000; i++)
    ferry__rec_put_u32(&w, i * 2654435761u);
  void *p;
  size_t len;
  CHECK(ferry__rec_finish(&w, &p, &len) == 0 && len == 20000, "5000 u32");
  ferry__rec_r r;
  ferry__rec_r_init(&r, p, len);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < 5000; i++)
    bad += ferry__rec_get_u32(&r) != i * 2654435761u;
  CHECK(bad == 0 && ferry__rec_end(&r, "extra") == 0, "%u of 5000 differ", bad);
  free(p);
}

static void test_hash_only(void) {
  for (int big = 0; big < 2; big++) {
    size_t len;
    unsigned char *p = sample(big, &len);
    ferry__rec_w h;
    ferry__rec_w_init_hash(&h, FERRY__FNV_INIT);
    h.big_endian = big;
    put_sample(&h);
    CHECK(h.h == ferry__fnv1a(FERRY__FNV_INIT, p, len) && h.len == len,
          "hash-only writer: hash %016llx, %zu bytes; the buffer's %016llx, "
          "%zu bytes",
          (unsigned long long)h.h, h.len,
          (unsigned long long)ferry__fnv1a(FERRY__FNV_INIT, p, len), len);
    CHECK(h.p == NULL && h.cap == 0, "the hash-only writer kept bytes");
    free(p);
  }
}

/* A realloc that fails its fail_at-th call (counted in calls). */
static long calls, fail_at;
static void *failing_realloc(void *p, size_t n) {
  if (++calls == fail_at)
    return NULL;
  return realloc(p, n);
}

static void test_alloc_failure(void) {
  /* 3000 bytes: reallocs at 256, 512, 1024, 2048, 4096 bytes */
  for (fail_at = 1; fail_at <= 5; fail_at++) {
    ferry__rec_w w;
    ferry__rec_w_init(&w);
    w.realloc_fn = failing_realloc;
    calls = 0;
    size_t kept = 0;
    for (int i = 0; i < 375; i++) {
      ferry__rec_put_u64(&w, (uint64_t)i);
      if (w.rc && !kept)
        kept = w.len;
    }
    ferry__rec_put_str(&w, "after the failure");
    CHECK(w.rc == FERRY_ENOMEM && w.len == kept && calls == fail_at,
          "failure %ld: rc %d, %zu bytes kept of %zu, %ld calls", fail_at, w.rc,
          w.len, kept, calls);
    void *p = (void *)1;
    size_t len = 0;
    int rc = ferry__rec_finish(&w, &p, &len);
    CHECK(rc == FERRY_ENOMEM && p == NULL && len == ((size_t)128 << fail_at),
          "failure %ld: finish rc %d, %zu bytes wanted", fail_at, rc, len);
  }
  /* a length the u32 field cannot say, or more than size_t can double to:
   * refused before any byte is read or allocated */
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u32(&w, 7);
#if SIZE_MAX > UINT32_MAX
  ferry__rec_put_blob(&w, "x", (size_t)UINT32_MAX + 1);
  CHECK(w.rc == FERRY_ENOMEM && w.want == (size_t)UINT32_MAX + 1 && w.len == 4,
        "a 4 GiB blob: rc %d want %zu", w.rc, w.want);
  ferry__rec_w_free(&w);
#endif
  ferry__rec_put(&w, "x", SIZE_MAX - 8);
  CHECK(w.rc == FERRY_ENOMEM && w.want == SIZE_MAX, "SIZE_MAX bytes: rc %d",
        w.rc);
  ferry__rec_w_free(&w);
  /* the reader's string */
  size_t len;
  unsigned char *s = sample(0, &len);
  ferry__rec_r r;
  ferry__rec_r_init(&r, s, len);
  r.realloc_fn = failing_realloc;
  calls = 0;
  fail_at = 1;
  CHECK(!read_sample(&r) && r.rc == FERRY_ENOMEM && r.want == 11 &&
            strcmp(r.why, "a string") == 0,
        "reader's string: rc %d want %zu", r.rc, r.want);
  free(s);
}

/* Read the first k bytes of s (a buffer of exactly k bytes, so ASan sees a
 * read past it). */
static int read_prefix(const unsigned char *s, size_t k, int big,
                       ferry__rec_r *r) {
  unsigned char *c = k ? malloc(k) : NULL;
  if (k && !c)
    return -1;
  if (k)
    memcpy(c, s, k);
  ferry__rec_r_init(r, c, k);
  r->big_endian = big;
  int ok = read_sample(r);
  ferry__rec_end(r, "extra");
  free(c);
  return ok;
}

static void test_truncated(void) {
  for (int big = 0; big < 2; big++) {
    size_t len;
    unsigned char *s = sample(big, &len);
    for (size_t k = 0; k < len; k++) {
      ferry__rec_r r;
      int ok = read_prefix(s, k, big, &r);
      CHECK(!ok && r.rc == FERRY_EFORMAT && r.at <= k && r.pos <= k && r.why,
            "cut at %zu of %zu: ok %d rc %d at %zu", k, len, ok, r.rc, r.at);
    }
    ferry__rec_r r;
    CHECK(read_prefix(s, len, big, &r) == 1 && r.rc == 0, "whole record");
    free(s);
  }
}

static void test_corrupt(void) {
  size_t len;
  unsigned char *s = sample(0, &len);
  /* every byte as 0xff and as 0: read to the end or refused with a code */
  for (size_t i = 0; i < len; i++)
    for (int v = 0; v < 256; v += 255) {
      unsigned char keep = s[i];
      s[i] = (unsigned char)v;
      ferry__rec_r r;
      int ok = read_prefix(s, len, 0, &r);
      CHECK(r.rc == 0 || r.rc == FERRY_EFORMAT, "byte %zu = %d: rc %d", i, v,
            r.rc);
      /* 0xff in a length field or the count's top byte is refused */
      int length = (i >= 27 && i < 31) || (i >= 41 && i < 49) ||
                   (i >= 53 && i < 57) || i == 64;
      CHECK(!(v == 255 && length) || (!ok && r.rc == FERRY_EFORMAT),
            "byte %zu = 0xff: read as good", i);
      s[i] = keep;
    }
  /* the first failure sticks: what and where */
  s[27] = 0xff; /* the string's length (offset 27) beyond the record */
  ferry__rec_r r;
  read_prefix(s, len, 0, &r);
  CHECK(r.rc == FERRY_EFORMAT && r.at == 31 &&
            strcmp(r.why, "string runs past the end") == 0,
        "long string: rc %d at %zu why %s", r.rc, r.at, r.why);
  CHECK(ferry__rec_get_u8(&r) == 0 && ferry__rec_take(&r, 0) == NULL &&
            ferry__rec_left(&r) == 0 &&
            ferry__rec_fail(&r, "later") == FERRY_EFORMAT &&
            strcmp(r.why, "string runs past the end") == 0,
        "the failure did not stick");
  s[27] = 10;
  s[33] = 0; /* inside "path/x.npy" */
  read_prefix(s, len, 0, &r);
  CHECK(r.rc == FERRY_EFORMAT && strcmp(r.why, "string holds a NUL byte") == 0,
        "NUL in a string: rc %d why %s", r.rc, r.why);
  s[33] = 'h';
  s[len - 1] = 0x80; /* the count's top bit */
  read_prefix(s, len, 0, &r);
  CHECK(r.rc == FERRY_EFORMAT && strcmp(r.why, "bad count") == 0,
        "negative count: rc %d why %s", r.rc, r.why);
  free(s);
}

/* A parquet record written on a big-endian host (before issue 24 and
 * after, the host's order) reads back on any host. */
static void test_parquet_orders(void) {
  char *files[] = {"f.parquet"};
  int64_t fsize[] = {((int64_t)1 << 40) + 3};
  pq_rg_rec rg[1] = {{0, 4, 8, 16, 32, 4, 0, 2, 0, 0, 0}};
  pq_rec r = {5, 0,     FERRY_FLOAT64, 1, 0,  0,        1,
              1, files, fsize,         1, rg, PQ_FIXED, 0};
  ferry__blob b[2] = {{0}, {0}};
  for (int big = 0; big < 2; big++) {
    CHECK(ferry__pq_rec_put_order(&r, big, &b[big]) == 0, "put %d", big);
    pq_rec back;
    ferry__err e = {0};
    int rc = ferry__pq_rec_get(&b[big], &back, "t", &e);
    CHECK(rc == 0 && back.nfiles == 1 && strcmp(back.files[0], files[0]) == 0 &&
              back.fsize[0] == fsize[0] && back.nrg == 1 &&
              back.rg[0].usize == 32 && back.rg[0].codec == 2 &&
              back.dtype == FERRY_FLOAT64,
          "parquet record, big_endian %d: rc %d %s", big, rc, e.msg);
    if (rc == 0)
      ferry__pq_rec_free(&back);
  }
  CHECK(b[0].len == b[1].len && memcmp(b[0].p, b[1].p, b[0].len) != 0,
        "the two orders wrote the same bytes");
  b[0].p[0] ^= 1; /* neither magic */
  pq_rec back;
  ferry__err e = {0};
  int rc = ferry__pq_rec_get(&b[0], &back, "t.parquet", &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "t.parquet") &&
            strstr(e.msg, "bad magic"),
        "bad magic: rc %d %s", rc, e.msg);
  free(b[0].p);
  free(b[1].p);
}

int main(void) {
  test_hash_words();
  test_round_trip();
  test_hash_only();
  test_alloc_failure();
  test_truncated();
  test_corrupt();
  test_parquet_orders();
  test_manifest_bytes();
  test_mix_bytes();
  test_parquet_bytes();
  return ft_summary("test_record");
}
