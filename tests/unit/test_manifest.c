/*
 * test_manifest.c - unit tests of the backend records of the manifest
 * (core/manifest.c, dataset/json.c): a manifest whose parts carry records
 * (ferry__blob) survives pack -> unpack and JSON save -> load byte for byte,
 * its hash covers the records, a packed record whose length runs past the
 * buffer is refused as a corrupt buffer, and a saved manifest whose record
 * version is not the backend's, or whose record is not hex, is refused with
 * a message naming the file.  The manifest is built by hand for the zarr
 * backend (the one that keeps records; always compiled).  Scratch files go
 * under FERRY_TEST_TMPDIR (or /tmp).  And a mapped offsets' file's block
 * check (ferry__roff_map_verify, core/roffmap.c): each rank of a few
 * hashes its share of the blocks against rank 0's hashes and names the
 * bytes that differ.  And a manifest whose records go to its records'
 * file, PATH.recs (decision 0066; test_recs).
 *
 * Exit status: 0 pass, 1 fail (each failure is printed), 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "dataset/dataset.h"
#include "util/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

/* A record no other field of the buffer holds, to find it in the pack. */
static const unsigned char MARK[] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x7f};

static char *xstrdup(const char *s) {
  char *t = strdup(s);
  if (!t) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return t;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

/* Two variables, two parts; records of 9, 0, 3 and 6 (MARK) bytes. */
static void build(ferry__manifest *m, int record_version) {
  memset(m, 0, sizeof *m);
  m->backend = xstrdup("zarr");
  m->spec = xstrdup("store.zarr");
  m->record_version = record_version;
  m->nvars = 2;
  m->vars = xcalloc(2, sizeof *m->vars);
  m->vars[0].name = xstrdup("x");
  m->vars[0].dtype = FERRY_FLOAT32;
  m->vars[0].row_ndim = 1;
  m->vars[0].row_shape[0] = 4;
  m->vars[0].row_bytes = 16;
  m->vars[1].name = xstrdup("y");
  m->vars[1].dtype = FERRY_INT64;
  m->vars[1].row_bytes = 8;
  m->nparts = 2;
  m->parts = xcalloc(2, sizeof *m->parts);
  static const size_t lens[2][2] = {{9, 0}, {3, sizeof MARK}};
  for (int p = 0; p < 2; p++) {
    ferry__part *pt = &m->parts[p];
    pt->num_samples = 10 + p;
    pt->first_sample = p ? 10 : 0;
    pt->paths = xcalloc(2, sizeof *pt->paths);
    pt->data_offset = xcalloc(2, sizeof *pt->data_offset);
    pt->file_size = xcalloc(2, sizeof *pt->file_size);
    pt->rec = xcalloc(2, sizeof *pt->rec);
    for (int v = 0; v < 2; v++) {
      pt->paths[v] = xstrdup(p ? "b.zarr" : "a.zarr");
      pt->file_size[v] = 300 + v;
      pt->rec[v].len = lens[p][v];
      if (!lens[p][v])
        continue;
      pt->rec[v].p = xcalloc(1, lens[p][v]);
      for (size_t k = 0; k < lens[p][v]; k++)
        pt->rec[v].p[k] =
            p && v ? MARK[k] : (unsigned char)(17 * k + (size_t)v + 1);
    }
  }
  m->num_samples = 21;
  m->hash = ferry__manifest_hash(m);
}

/* 1 when a and b hold the same records, paths and sizes. */
static int same_parts(const ferry__manifest *a, const ferry__manifest *b) {
  if (a->nparts != b->nparts || a->nvars != b->nvars ||
      a->record_version != b->record_version)
    return 0;
  for (int64_t p = 0; p < a->nparts; p++)
    for (int v = 0; v < a->nvars; v++) {
      const ferry__part *x = &a->parts[p], *y = &b->parts[p];
      size_t lx = x->rec ? x->rec[v].len : 0, ly = y->rec ? y->rec[v].len : 0;
      if (strcmp(x->paths[v], y->paths[v]) != 0 ||
          x->file_size[v] != y->file_size[v] || lx != ly ||
          (lx && memcmp(x->rec[v].p, y->rec[v].p, lx) != 0))
        return 0;
    }
  return 1;
}

static void test_pack(int rv) {
  ferry__manifest m, u;
  ferry__err e;
  void *buf = NULL;
  size_t len = 0;
  memset(&e, 0, sizeof e);
  build(&m, rv);
  CHECK(ferry__manifest_pack(&m, &buf, &len) == 0, "pack failed");
  int rc = ferry__manifest_unpack(buf, len, &u, &e);
  CHECK(rc == 0, "unpack: %d %s", rc, e.msg);
  if (rc == 0) {
    CHECK(same_parts(&m, &u), "unpacked records differ");
    CHECK(u.hash == m.hash, "unpacked hash differs");
    ferry__manifest_free(&u);
  }
  /* The hash covers the records. */
  uint64_t h = m.hash;
  m.parts[0].rec[0].p[3] ^= 1;
  CHECK(ferry__manifest_hash(&m) != h, "a record byte does not change the "
                                       "hash");
  m.parts[0].rec[0].p[3] ^= 1;
  /* A record length beyond the buffer (checksum made right again). */
  unsigned char *b = buf;
  unsigned char *at = NULL;
  for (size_t i = 4; i + sizeof MARK <= len && !at; i++)
    if (memcmp(b + i, MARK, sizeof MARK) == 0)
      at = b + i - 4;
  CHECK(at != NULL, "the record is not in the packed buffer");
  if (at) {
    at[0] = 0x00;
    at[1] = 0xff;
    at[2] = 0xff;
    at[3] = 0x00;
    uint64_t sum = ferry__hash_words(FERRY__FNV_INIT, b, len - 8);
    for (size_t i = 0; i < 8; i++)
      b[len - 8 + i] = (unsigned char)(sum >> (8 * i));
    rc = ferry__manifest_unpack(buf, len, &u, &e);
    CHECK(rc == FERRY_EFORMAT, "truncated record: rc %d", rc);
    CHECK(strstr(e.msg, "manifest buffer corrupt") &&
              strstr(e.msg, "record runs past the end"),
          "truncated record: message '%s'", e.msg);
    if (rc == 0)
      ferry__manifest_free(&u);
  }
  free(buf);
  ferry__manifest_free(&m);
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  int ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* path's text with the first "from" replaced by "to" written to out. */
static int rewrite(const char *path, const char *out, const char *from,
                   const char *to) {
  static char text[1 << 16], res[1 << 16];
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, from);
  if (!at)
    return -1;
  snprintf(res, sizeof res, "%.*s%s%s", (int)(at - text), text, to,
           at + strlen(from));
  return write_file(out, res);
}

static void test_json(const char *dir, int rv) {
  ferry__manifest m, u;
  ferry__err e;
  char path[600], bad[600], want[64];
  memset(&e, 0, sizeof e);
  snprintf(path, sizeof path, "%s/records.json", dir);
  snprintf(bad, sizeof bad, "%s/bad.json", dir);
  build(&m, rv);
  int rc = ferry__manifest_save_json(&m, path, &e);
  CHECK(rc == 0, "save: %d %s", rc, e.msg);
  char recs[620];
  snprintf(recs, sizeof recs, "%s.recs", path);
  CHECK(access(recs, F_OK) != 0, "a records' file for 18 bytes of records");
  rc = ferry__manifest_load_json(path, NULL, &u, &e);
  CHECK(rc == 0, "load: %d %s", rc, e.msg);
  if (rc == 0) {
    CHECK(same_parts(&m, &u), "loaded records differ");
    CHECK(u.hash == m.hash, "loaded hash differs");
    ferry__manifest_free(&u);
  }
  /* Selecting variables keeps each variable's record. */
  rc = ferry__manifest_load_json(path, "y", &u, &e);
  CHECK(rc == 0 && u.nvars == 1 && u.parts[1].rec &&
            u.parts[1].rec[0].len == sizeof MARK &&
            memcmp(u.parts[1].rec[0].p, MARK, sizeof MARK) == 0,
        "vars=y: record of y lost (%d %s)", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  /* Another record version: refused, naming the file. */
  snprintf(want, sizeof want, "\"record_version\": %d", rv);
  CHECK(rewrite(path, bad, want, "\"record_version\": 999") == 0,
        "cannot rewrite %s", path);
  rc = ferry__manifest_load_json(bad, NULL, &u, &e);
  CHECK(rc == FERRY_ENOTSUP && strstr(e.msg, bad) && strstr(e.msg, "999"),
        "record version 999: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  /* A record that is not hex. */
  CHECK(rewrite(path, bad, "deadbeef007f", "deadbeef007g") == 0,
        "cannot rewrite %s", path);
  rc = ferry__manifest_load_json(bad, NULL, &u, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, bad) &&
            strstr(e.msg, "parts[1].files[1].record"),
        "bad hex: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  unlink(bad);
  unlink(path);
  ferry__manifest_free(&m);
}

/* 1 when the file at path exists. */
static int exists(const char *path) { return access(path, F_OK) == 0; }

/* The byte at `at` of the file at path flipped (its checksum left). */
static int flip_byte(const char *path, long at) {
  FILE *f = fopen(path, "r+b");
  int c = f && fseek(f, at, SEEK_SET) == 0 ? fgetc(f) : EOF;
  int ok = c != EOF && fseek(f, at, SEEK_SET) == 0 && fputc(c ^ 0x40, f) != EOF;
  if (f && fclose(f) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

/* Records of 64 KiB and more go to PATH.recs (decision 0066): saved and
 * loaded they are the same bytes and hash, mapped (not held); packed and
 * unpacked deferred, each rank's share of the file's blocks is checked
 * against rank 0's, and a changed byte, a missing file or a record outside
 * the file is refused naming the file.  A manifest with fewer record bytes
 * keeps them in the JSON (test_json: no PATH.recs). */
static void test_recs(const char *dir, int rv) {
  ferry__manifest m, u, w;
  ferry__err e;
  char path[600], recs[620], bad[600];
  memset(&e, 0, sizeof e);
  snprintf(path, sizeof path, "%s/big.json", dir);
  snprintf(recs, sizeof recs, "%s.recs", path);
  snprintf(bad, sizeof bad, "%s/bigbad.json", dir);
  build(&m, rv);
  const size_t big = FERRY__TRIM_STEP * 8 + 70001; /* two blocks */
  free(m.parts[0].rec[0].p);
  m.parts[0].rec[0].p = xcalloc(1, big);
  m.parts[0].rec[0].len = big;
  for (size_t k = 0; k < big; k++)
    m.parts[0].rec[0].p[k] = (unsigned char)(k * 7 + k / 251);
  m.hash = ferry__manifest_hash(&m);
  int rc = ferry__manifest_save_json(&m, path, &e);
  CHECK(rc == 0 && exists(recs), "save with a records' file: %d %s", rc, e.msg);
  CHECK(rewrite(path, bad, "\"record_at\"", "\"record_at\"") == 0,
        "the JSON names no record_at");
  rc = ferry__manifest_load_json(path, NULL, &u, &e);
  CHECK(rc == 0, "load: %d %s", rc, e.msg);
  if (rc != 0) {
    ferry__manifest_free(&m);
    return;
  }
  CHECK(same_parts(&m, &u), "records from the records' file differ");
  CHECK(u.hash == m.hash, "loaded hash differs");
  CHECK(u.rec_map && ferry__manifest_owns_rec(&u, u.parts[0].rec[0].p) &&
            ferry__manifest_owns_rec(&u, u.parts[1].rec[1].p),
        "the records are not mapped");
  /* packed for the other ranks: where the records lie, not their bytes */
  void *buf = NULL;
  size_t len = 0;
  CHECK(ferry__manifest_pack(&u, &buf, &len) == 0 && len < 4096,
        "packed: %zu bytes", len);
  for (int defer = 0; buf && defer < 2; defer++) {
    rc = ferry__manifest_unpack_ex(buf, len, defer, &w, &e);
    CHECK(rc == 0, "unpack (defer %d): %d %s", defer, rc, e.msg);
    if (rc)
      continue;
    CHECK(same_parts(&m, &w) && w.hash == m.hash && w.rec_map &&
              w.rec_map->deferred == defer,
          "unpacked (defer %d): records or hash differ", defer);
    for (int size = 2; size <= 3; size++)
      for (int rank = 1; rank < size; rank++)
        CHECK(ferry__roff_map_verify(w.rec_map, rank, size, &e) == 0,
              "rank %d of %d: %s", rank, size, e.msg);
    ferry__manifest_free(&w);
  }
  /* selecting a variable frees the other's record, not the mapping */
  ferry__manifest_free(&u);
  rc = ferry__manifest_load_json(path, "y", &u, &e);
  CHECK(rc == 0 && u.nvars == 1 && u.parts[1].rec[0].len == sizeof MARK &&
            memcmp(u.parts[1].rec[0].p, MARK, sizeof MARK) == 0,
        "vars=y with a records' file: %d %s", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  /* a byte changed after the save (the checksum left as it was) */
  CHECK(flip_byte(recs, FERRY__ROFF_HEAD + 1000) == 0, "cannot change %s",
        recs);
  rc = ferry__manifest_load_json(path, NULL, &u, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, recs) &&
            strstr(e.msg, "does not match its checksum"),
        "a changed records' file: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  rc = buf ? ferry__manifest_unpack_ex(buf, len, 0, &w, &e) : -1;
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "records' file"),
        "a changed records' file, unpacked whole: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&w);
  rc = buf ? ferry__manifest_unpack_ex(buf, len, 1, &w, &e) : -1;
  CHECK(rc == 0, "a changed records' file, deferred: %d %s", rc, e.msg);
  if (rc == 0) { /* block 0, rank 1's share of 2 */
    memset(&e, 0, sizeof e);
    CHECK(ferry__roff_map_verify(w.rec_map, 1, 2, &e) == FERRY_EFORMAT &&
              strstr(e.msg, "records' file") &&
              strstr(e.msg, "differ from what rank 0"),
          "rank 1 of 2 should see the change: '%s'", e.msg);
    CHECK(ferry__roff_map_verify(w.rec_map, 2, 3, &e) == 0,
          "rank 2 of 3 (block 1, unchanged): %s", e.msg);
    ferry__manifest_free(&w);
  }
  CHECK(flip_byte(recs, FERRY__ROFF_HEAD + 1000) == 0, "cannot restore %s",
        recs);
  /* a record that runs past the file */
  char from[64], to[64];
  snprintf(from, sizeof from, "\"record_bytes\": %zu", big);
  snprintf(to, sizeof to, "\"record_bytes\": %zu", big + 4096);
  CHECK(rewrite(path, bad, from, to) == 0, "cannot rewrite %s", path);
  rc = ferry__manifest_load_json(bad, NULL, &u, &e);
  CHECK(rc == FERRY_EFORMAT && strstr(e.msg, "outside the records' file"),
        "a record past the file: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  unlink(bad);
  /* the file missing */
  unlink(recs);
  rc = ferry__manifest_load_json(path, NULL, &u, &e);
  CHECK(rc < 0 && strstr(e.msg, recs) && strstr(e.msg, "copy both"),
        "no records' file: %d '%s'", rc, e.msg);
  if (rc == 0)
    ferry__manifest_free(&u);
  free(buf);
  unlink(path);
  ferry__manifest_free(&m);
}

/* A version 2 offsets' file of n offsets (0, 1, 2, ...) at path, mapped;
 * each rank's share of its blocks checked against the right hashes and
 * against a changed one. */
static void test_roff_verify(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/o.roff", dir);
  const int64_t n = FERRY__TRIM_STEP + 3; /* two blocks: one whole */
  size_t len = FERRY__ROFF_HEAD + 8 * (size_t)n + 8;
  unsigned char *b = calloc(1, len);
  CHECK(b != NULL, "memory");
  if (!b)
    return;
  memcpy(b, FERRY__ROFF_MAGIC, 4);
  b[4] = 2;
  ferry__le64_store(b + 8, (uint64_t)n);
  for (int64_t i = 0; i < n; i++)
    ferry__le64_store(b + FERRY__ROFF_HEAD + 8 * i, (uint64_t)i);
  uint64_t sum = ferry__hash_words(FERRY__FNV_INIT, b, len - 8);
  ferry__le64_store(b + len - 8, sum);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(b, 1, len, f) == len && fclose(f) == 0, "write %s", path);
  free(b);
  ferry__roff_map *mp = NULL;
  ferry__err err = {0};
  CHECK(ferry__roff_map_open(path, 2, n, sum, &mp, &err) == 0, "map: %s",
        err.msg);
  if (!mp)
    return;
  int64_t nb = ferry__roff_map_nblocks(mp);
  CHECK(nb == 2, "%lld blocks", (long long)nb);
  mp->blk = malloc((size_t)nb * sizeof *mp->blk);
  for (int64_t k = 0; mp->blk && k < nb; k++)
    mp->blk[k] = ferry__roff_map_block_hash(mp, k);
  mp->nblk = nb;
  for (int size = 1; size <= 4; size++)
    for (int rank = 0; rank < size; rank++)
      CHECK(ferry__roff_map_verify(mp, rank, size, &err) == 0,
            "rank %d of %d, the right hashes: %s", rank, size, err.msg);
  mp->blk[1] ^= 1; /* the second block: what rank 1 of 2 and 2 of 3 read */
  memset(&err, 0, sizeof err);
  int rc = ferry__roff_map_verify(mp, 1, 2, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "differ from what rank 0") &&
            strstr(err.msg, path) && err.has_rank && err.rank == 1,
        "rank 1 of 2, a changed block: rc %d, '%s'", rc, err.msg);
  memset(&err, 0, sizeof err);
  CHECK(ferry__roff_map_verify(mp, 2, 3, &err) == FERRY_EFORMAT,
        "rank 2 of 3 (block 1): the change not seen");
  CHECK(ferry__roff_map_verify(mp, 1, 3, &err) == 0,
        "rank 1 of 3 (block 0): %s", err.msg);
  CHECK(ferry__roff_map_verify(mp, 0, 3, &err) == 0, "rank 0 checks none");
  mp->nblk = 1;
  CHECK(ferry__roff_map_verify(mp, 1, 2, &err) == FERRY_EINTERNAL,
        "a block count that is not the file's");
  ferry__roff_map_close(mp);
  unlink(path);
}

int main(void) {
  const ferry__backend *z = ferry__backend_find("zarr");
  if (!z || z->record_version < 1) {
    printf("SKIP: no zarr backend with records in this build\n");
    return 77;
  }
  const char *base = getenv("FERRY_TEST_TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/test_manifest.XXXXXX",
           base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror(dir);
    return 1;
  }
  test_pack(z->record_version);
  test_json(dir, z->record_version);
  test_recs(dir, z->record_version);
  test_roff_verify(dir);
  rmdir(dir);
  return ft_summary("test_manifest");
}
