/*
 * manifest.c - the manifest's records: what every rank holds of a dataset
 * once rank 0 has scanned it (dataset/scan.c), and how it travels.
 *
 * The manifest is serialised into a flat, versioned, little-endian buffer
 * for MPI_Bcast (pack/unpack, which never trusts the buffer it is given)
 * and hashed for the cross-rank and resume checks.  It lives here, below
 * the backends, because the backends read it: every io_read checks its
 * part and rows against it (ferry__check_part_var, ferry__check_rows) and
 * the mix backend unpacks each source's manifest from its record.  Making
 * one (the scan), saving and loading it (the JSON) name the backends and
 * live above them in src/dataset/.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "core/manifest.h"
#include "util/record.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void ferry__manifest_free(ferry__manifest *m) {
  if (!m)
    return;
  for (int64_t p = 0; m->parts && p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    for (int v = 0; pt->paths && v < m->nvars; v++)
      free(pt->paths[v]);
    for (int v = 0; pt->rec && v < m->nvars; v++)
      if (!ferry__manifest_owns_rec(m, pt->rec[v].p))
        free(pt->rec[v].p);
    free(pt->rec);
    for (int v = 0; pt->roff && v < m->nvars; v++)
      if (!ferry__manifest_owns_roff(m, pt->roff[v]))
        free(pt->roff[v]);
    free(pt->roff);
    free(pt->paths);
    free(pt->data_offset);
    free(pt->file_size);
  }
  free(m->parts);
  for (int v = 0; m->vars && v < m->nvars; v++) {
    free(m->vars[v].name);
    free(m->vars[v].storage);
    free(m->vars[v].categories);
  }
  free(m->vars);
  ferry__roff_map_close(m->roff_map);
  ferry__roff_map_close(m->rec_map);
  if (m->inner) {
    ferry__manifest_free(m->inner);
    free(m->inner);
  }
  if (m->aux_free)
    m->aux_free(m->aux);
  for (int64_t i = 0; m->srcs && i < m->nsrcs; i++)
    ferry__manifest_free(&m->srcs[i]);
  free(m->srcs);
  free(m->backend);
  free(m->spec);
  free(m->notes);
  memset(m, 0, sizeof *m);
}

int ferry__manifest_ragged(const ferry__manifest *m) {
  for (int v = 0; m && v < m->nvars; v++)
    if (m->vars[v].ragged)
      return 1;
  return 0;
}

int ferry__check_part_var(const ferry__manifest *m, int64_t part, int var,
                          int rank, ferry__err *err) {
  if (part >= 0 && part < m->nparts && var >= 0 && var < m->nvars)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "read of part %lld variable %d on rank %d: no such "
                       "part or variable (the dataset has %lld parts, %d "
                       "variables)",
                       (long long)part, var, rank, (long long)m->nparts,
                       m->nvars);
}

int ferry__check_rows(const ferry__manifest *m, int64_t part, int var,
                      int64_t row, int64_t nrows, int rank, ferry__err *err) {
  const ferry__part *pt = &m->parts[part];
  if (row >= 0 && nrows >= 0 && row <= pt->num_samples &&
      nrows <= pt->num_samples - row)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "rows [%lld, %lld) are outside %s (variable %s, %lld "
                       "rows; rank %d)",
                       (long long)row, (long long)(row + nrows), pt->paths[var],
                       m->vars[var].name, (long long)pt->num_samples, rank);
}

/* ---- Pack / unpack ---------------------------------------------------- */

/*
 * Layout (all integers little-endian):
 *   "FRYM"  u8 version=5  3 zero bytes  u64 total length
 *   str backend  str spec  str notes  u32 record_version  u32 nvars
 *   per variable: str name  u8 dtype  u8 swapped  u8 row_ndim  u8 ragged
 *                 i64 row_shape[row_ndim]  u64 row_bytes
 *                 i64 chunk_rows  u64 cache_bytes  str storage
 *                 i64 width (version 6; in the hash only when not 0,
 *                 after a 0xff byte, so other manifests hash as before)
 *                 str categories (version 6; "" none; in the hash only
 *                 when set, after a 0xfe byte)
 *   i64 nparts  i64 num_samples
 *   a ragged variable in the manifest only: the mapped offsets' file
 *       (core/roffmap.c) as a side file, below (added 2026-11-28
 *       without a new version: a buffer lives for one broadcast between
 *       the ranks of one build, and a dense manifest's bytes, pinned by
 *       tests/unit/test_record, are unchanged)
 *   records kept (record_version not 0) only: the records' file as a side
 *       file, and when it is named u64 the manifest hash (rank 0's, of the
 *       records' bytes: a rank that maps the file and checks its share of
 *       the blocks takes it rather than hash every record; version 7,
 *       decision 0066)
 *   a side file: str path ("" none: the offsets or records travel in the
 *       buffer), and when named: u64 count (8-byte words)  u64 checksum
 *       u8 version  u64 nblk  u64 block hashes[nblk] (pack_side)
 *   per part: i64 num_samples  i64 first_sample
 *             per variable: str path  i64 data_offset  i64 file_size
 *                           str record (the backend's bytes, may be empty;
 *                           with a recs_file: u64 where it starts in the
 *                           file's body and u32 its length, or UINT64_MAX
 *                           and the str)
 *                           ragged variables only: i64 roff[num_samples+1],
 *                           or with a roff_file u64 where they start in it
 *                           and u64 their hash (the manifest hash's term)
 *   u64 ferry__hash_words of every byte before it (version 4; FNV-1a
 *       before: the buffer is 8 bytes per sample of a ragged variable)
 * where str is u32 length + bytes (no NUL in a string; a record may hold
 * any byte).  The hash is FNV-1a over the same body with the spec left
 * empty (the spec is how the user spelled the dataset, the rest is what
 * identifies the data), led by HASH_VERSION, except a ragged variable's
 * offsets, which enter as their own hash (roff_digest, a u64: 2026-11-28,
 * so that mapped offsets are hashed without a second copy; checkpoints of
 * ragged datasets saved before it do not resume); the record fields enter it
 * only when the backend keeps records, and a ragged variable's flag is
 * the byte that was always 0 and its offsets follow only it, so the hash of a
 * manifest without records is the one ferry computed before records existed
 * (checkpoints taken then still resume).  Hash version 3 (2026-11-29,
 * decision 0067) puts each record in as its length (u32) and the
 * ferry__hash_words of its bytes (u64), and leaves the notes out (an empty
 * string in their place): they describe (which files of a directory were
 * not parts, whether a sidecar was checked), and a note that changed with
 * the directory's other files or with ferry's wording made a state refuse
 * to resume on the same data.  A state saved with a version 2 hash still
 * resumes: the loader compares it with ferry__manifest_hash_v2 when the
 * version 3 hash differs (loader/checkpoint.c).  Written and read with
 * util/record.h (the hash by its hash-only writer, which keeps no bytes); the
 * bytes and the hashes are pinned by tests/unit/test_record.
 */
/* 5: the mapped offsets' block hashes and each array's hash; 6: a
 * variable's width (2026-11-28); 7: the records' file (2026-11-29) */
#define PACK_VERSION 7
#define HASH_VERSION 3
#define PACK_HEAD 16

/* One pass over n offsets o, a step at a time so that mapped ones leave
 * the rank's pages as they are read: with h, their hash word by word
 * (ferry__rec_put_u64s: what a ragged variable's offsets put in the
 * manifest hash, the same whether they are held or mapped) into *h; with
 * check, whether they start at 0 and never decrease (1 when they do). */
static int roff_pass(const ferry__manifest *m, const int64_t *o, int64_t n,
                     int check, uint64_t *h) {
  ferry__rec_w w;
  ferry__rec_w_init_hash(&w, FERRY__FNV_INIT);
  int ok = !check || n < 1 || o[0] == 0;
  for (int64_t i = 0; ok && i < n; i += FERRY__TRIM_STEP) {
    int64_t k = n - i < FERRY__TRIM_STEP ? n - i : FERRY__TRIM_STEP;
    for (int64_t j = i > 0 ? i : 1; check && j < i + k; j++)
      if (o[j] < o[j - 1]) {
        ok = 0;
        break;
      }
    if (h)
      ferry__rec_put_u64s(&w, o + i, (size_t)k);
    ferry__manifest_trim(m, o + i, o + i + k);
  }
  if (h)
    *h = w.h;
  return ok;
}

/* The hash of n offsets o in the manifest hash: remembered when a check
 * made it (mapped offsets), else one pass. */
static uint64_t roff_digest(const ferry__manifest *m, const int64_t *o,
                            int64_t n) {
  uint64_t d = 0;
  if (!ferry__roff_map_recall(m->roff_map, o, &d))
    (void)roff_pass(m, o, n, 0, &d);
  return d;
}

/* A mapped side file of a saved manifest (core/roffmap.c) in the buffer:
 * its path ("" none), then, when named, its count, checksum, version and
 * block hashes (unpack_side). */
static void pack_side(ferry__rec_w *w, const ferry__roff_map *map) {
  ferry__rec_put_str(w, map ? map->path : "");
  if (!map)
    return;
  ferry__rec_put_u64(w, (uint64_t)map->count);
  ferry__rec_put_u64(w, map->fnv);
  ferry__rec_put_u8(w, (unsigned)map->version);
  ferry__rec_put_u64(w, (uint64_t)map->nblk);
  if (map->nblk > 0)
    ferry__rec_put_u64s(w, (const int64_t *)(const void *)map->blk,
                        (size_t)map->nblk);
}

/* full: the whole body (pack); else the hash's (see the layout above),
 * with the notes only when notes is set (hash version 2). */
static void pack_body(ferry__rec_w *w, const ferry__manifest *m, int full,
                      int notes) {
  int recs = full || m->record_version != 0;
  ferry__rec_put_str(w, m->backend);
  ferry__rec_put_str(w, full ? m->spec : "");
  ferry__rec_put_str(w, full || notes ? m->notes : "");
  if (recs)
    ferry__rec_put_u32(w, (uint32_t)m->record_version);
  ferry__rec_put_u32(w, (uint32_t)m->nvars);
  for (int v = 0; v < m->nvars; v++) {
    const ferry__var *x = &m->vars[v];
    ferry__rec_put_str(w, x->name);
    ferry__rec_put_u8(w, (unsigned)x->dtype);
    ferry__rec_put_u8(w, (unsigned)x->swapped);
    ferry__rec_put_u8(w, (unsigned)x->row_ndim);
    ferry__rec_put_u8(w, (unsigned)x->ragged);
    for (int k = 0; k < x->row_ndim; k++)
      ferry__rec_put_u64(w, (uint64_t)x->row_shape[k]);
    ferry__rec_put_u64(w, (uint64_t)x->row_bytes);
    ferry__rec_put_u64(w, (uint64_t)x->chunk_rows);
    ferry__rec_put_u64(w, (uint64_t)x->cache_bytes);
    ferry__rec_put_str(w, x->storage);
    if (full) {
      ferry__rec_put_u64(w, (uint64_t)x->width);
      ferry__rec_put_str(w, x->categories ? x->categories : "");
    } else {
      if (x->width) {
        ferry__rec_put_u8(w, 0xff);
        ferry__rec_put_u64(w, (uint64_t)x->width);
      }
      if (x->categories) {
        ferry__rec_put_u8(w, 0xfe);
        ferry__rec_put_str(w, x->categories);
      }
    }
  }
  ferry__rec_put_u64(w, (uint64_t)m->nparts);
  ferry__rec_put_u64(w, (uint64_t)m->num_samples);
  const ferry__roff_map *map = m->roff_map;
  if (full && ferry__manifest_ragged(m)) /* where the offsets are */
    pack_side(w, map);
  const ferry__roff_map *rmap = m->rec_map;
  if (full && m->record_version) { /* where the records are */
    pack_side(w, rmap);
    if (rmap)
      ferry__rec_put_u64(w, m->hash); /* what the bytes hash to */
  }
  for (int64_t p = 0; p < m->nparts; p++) {
    const ferry__part *pt = &m->parts[p];
    ferry__rec_put_u64(w, (uint64_t)pt->num_samples);
    ferry__rec_put_u64(w, (uint64_t)pt->first_sample);
    for (int v = 0; v < m->nvars; v++) {
      ferry__rec_put_str(w, pt->paths[v]);
      ferry__rec_put_u64(w, (uint64_t)pt->data_offset[v]);
      ferry__rec_put_u64(w, (uint64_t)pt->file_size[v]);
      const unsigned char *rp = pt->rec ? pt->rec[v].p : NULL;
      size_t rn = pt->rec ? pt->rec[v].len : 0;
      if (full && rmap && rn && ferry__manifest_owns_rec(m, rp)) {
        /* mapped: where it is in the records' file */
        ferry__rec_put_u64(w,
                           (uint64_t)(rp - (const unsigned char *)rmap->addr -
                                      FERRY__ROFF_HEAD));
        ferry__rec_put_u32(w, (uint32_t)rn);
      } else if (recs && !full && !notes) {
        /* hash version 3: a record enters as its length and the word hash
         * of its bytes (a pass 4x faster than FNV-1a byte by byte over
         * the 24 MB of records of a million WebDataset samples) */
        ferry__rec_put_u32(w, (uint32_t)rn);
        ferry__rec_put_u64(w,
                           rn ? ferry__hash_words(FERRY__FNV_INIT, rp, rn) : 0);
      } else if (recs) {
        if (full && rmap)
          ferry__rec_put_u64(w, UINT64_MAX); /* held: its bytes follow */
        ferry__rec_put_blob(w, rp, rn);
      }
      if (!m->vars[v].ragged)
        continue;
      if (!full) /* the hash: the offsets' own hash (roff_digest) */
        ferry__rec_put_u64(w, roff_digest(m, pt->roff[v], pt->num_samples + 1));
      else if (map) { /* mapped: where they are in the file, their hash */
        ferry__rec_put_u64(w, (uint64_t)ferry__roff_map_pos(map, pt->roff[v]));
        ferry__rec_put_u64(w, roff_digest(m, pt->roff[v], pt->num_samples + 1));
      } else
        ferry__rec_put_u64s(w, pt->roff[v], (size_t)pt->num_samples + 1);
    }
  }
}

uint64_t ferry__manifest_hash(const ferry__manifest *m) {
  ferry__rec_w w;
  ferry__rec_w_init_hash(&w, FERRY__FNV_INIT);
  ferry__rec_put_u8(&w, HASH_VERSION);
  pack_body(&w, m, 0, 0);
  return w.h;
}

uint64_t ferry__manifest_hash_v2(const ferry__manifest *m) {
  ferry__rec_w w;
  ferry__rec_w_init_hash(&w, FERRY__FNV_INIT);
  ferry__rec_put_u8(&w, 2);
  pack_body(&w, m, 0, 1);
  return w.h;
}

size_t ferry__manifest_packed_size(const ferry__manifest *m) {
  ferry__rec_w w;
  ferry__rec_w_init_hash(&w, FERRY__FNV_INIT); /* counts, writes nothing */
  pack_body(&w, m, 1, 1);
  return w.len + PACK_HEAD + 8; /* the header, then the checksum */
}

int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  *buf = NULL;
  *len = 0;
  ferry__rec_put(&w, "FRYM", 4);
  ferry__rec_put_u8(&w, PACK_VERSION);
  ferry__rec_put(&w, "\0\0\0", 3);
  ferry__rec_put_u64(&w, 0); /* total length, filled in below */
  pack_body(&w, m, 1, 1);
  ferry__rec_put_u64(&w, 0); /* checksum, filled in below */
  void *out;
  size_t n;
  if (ferry__rec_finish(&w, &out, &n) < 0)
    return FERRY_ENOMEM;
  unsigned char *p = out;
  ferry__le64_store(p + 8, n);
  ferry__le64_store(p + n - 8, ferry__hash_words(FERRY__FNV_INIT, p, n - 8));
  *buf = p;
  *len = n;
  return 0;
}

/* A record into *b; without b (no record version) it must be empty.  With
 * a records' file, where it lies in the file, or UINT64_MAX and its bytes. */
static int r_blob(ferry__rec_r *r, const ferry__manifest *m, ferry__blob *b) {
  if (b && m->rec_map) {
    uint64_t at = ferry__rec_get_u64(r);
    if (r->rc)
      return r->rc;
    if (at != UINT64_MAX) {
      uint32_t n = ferry__rec_get_u32(r);
      uint64_t body = (uint64_t)m->rec_map->count * 8;
      if (r->rc)
        return r->rc;
      if (n == 0 || at > body || n > body - at)
        return ferry__rec_fail(r, "a record outside the records' file");
      b->p = (unsigned char *)m->rec_map->addr + FERRY__ROFF_HEAD + at;
      b->len = n;
      return 0;
    }
  }
  uint32_t n = ferry__rec_get_len(r, "record runs past the end");
  if (r->rc)
    return r->rc;
  if (n && !b)
    return ferry__rec_fail(r, "a record but no record version");
  if (n && !(b->p = malloc(n)))
    return ferry__rec_oom(r, n, "a record");
  const void *src = ferry__rec_take(r, n);
  if (n)
    memcpy(b->p, src, n);
  if (b)
    b->len = n;
  return 0;
}

const char *ferry__manifest_roff_bad(const ferry__manifest *m,
                                     const ferry__part *pt, int v,
                                     const int64_t *o) {
  if (!roff_pass(m, o, pt->num_samples + 1, 1, NULL))
    return "ragged offsets not increasing from 0";
  return ferry__manifest_roff_bad_end(m, pt, v, o);
}

const char *ferry__manifest_roff_bad_end(const ferry__manifest *m,
                                         const ferry__part *pt, int v,
                                         const int64_t *o) {
  int64_t n = pt->num_samples + 1;
  int64_t room = pt->file_size[v] - pt->data_offset[v];
  int64_t rows = room > 0 ? room / (int64_t)m->vars[v].row_bytes : 0;
  if (m->vars[v].ragged == 1 && o[n - 1] > rows) /* 2: values in
                                                  * compressed chunks */
    return "ragged offsets past the end of the file";
  return NULL;
}

const char *ferry__manifest_roff_check(const ferry__manifest *m,
                                       const ferry__part *pt, int v,
                                       const int64_t *o) {
  if (!m->roff_map || ferry__roff_map_pos(m->roff_map, o) < 0)
    return ferry__manifest_roff_bad(m, pt, v, o);
  uint64_t h = 0;
  if (!roff_pass(m, o, pt->num_samples + 1, 1, &h))
    return "ragged offsets not increasing from 0";
  const char *bad = ferry__manifest_roff_bad_end(m, pt, v, o);
  if (!bad)
    (void)ferry__roff_map_remember(m->roff_map, o, h);
  return bad;
}

/* Ragged variable v's offsets of part pt: num_samples + 1 of them, from
 * 0, never decreasing, the last within the file (bytes from data_offset
 * to file_size): a buffer that says otherwise is corrupt. */
static int unpack_roff(ferry__rec_r *r, const ferry__manifest *m,
                       ferry__part *pt, int v) {
  uint64_t n = (uint64_t)pt->num_samples + 1;
  if (!m->roff_map && n > ferry__rec_left(r) / 8)
    return ferry__rec_fail(r, "ragged offsets run past the end");
  if (!pt->roff && !(pt->roff = calloc((size_t)m->nvars, sizeof *pt->roff)))
    return ferry__rec_oom(r, (size_t)m->nvars * sizeof *pt->roff,
                          "the ragged offsets");
  if (m->roff_map) { /* where they start in the mapped file */
    uint64_t at = ferry__rec_get_u64(r);
    if (r->rc)
      return -1;
    if (at > (uint64_t)m->roff_map->count ||
        n > (uint64_t)m->roff_map->count - at)
      return ferry__rec_fail(r, "ragged offsets past the end of their file");
    pt->roff[v] = (int64_t *)ferry__roff_map_at(m->roff_map, (int64_t)at);
    uint64_t h = ferry__rec_get_u64(r), mine = 0;
    if (r->rc)
      return -1;
    if (m->roff_map->deferred) { /* the bytes: ferry__roff_map_verify */
      const char *bad = ferry__manifest_roff_bad_end(m, pt, v, pt->roff[v]);
      if (!bad && ferry__roff_map_remember(m->roff_map, pt->roff[v], h) < 0)
        return ferry__rec_oom(r, 16, "an offsets' hash");
      return bad ? ferry__rec_fail(r, bad) : 0;
    }
    const char *bad = ferry__manifest_roff_check(m, pt, v, pt->roff[v]);
    if (!bad && ferry__roff_map_recall(m->roff_map, pt->roff[v], &mine) &&
        mine != h)
      bad = "ragged offsets differ from the sender's";
    return bad ? ferry__rec_fail(r, bad) : 0;
  }
  int64_t *o = malloc((size_t)n * sizeof *o);
  if (!o)
    return ferry__rec_oom(r, (size_t)n * sizeof *o, "the ragged offsets");
  pt->roff[v] = o;
  ferry__rec_get_u64s(r, o, (size_t)n);
  if (r->rc)
    return -1;
  const char *bad = ferry__manifest_roff_bad(m, pt, v, o);
  return bad ? ferry__rec_fail(r, bad) : 0;
}

/* Variable v of the body. */
static int unpack_var(ferry__rec_r *r, ferry__manifest *m, int v) {
  ferry__var *x = &m->vars[v];
  if (!(x->name = ferry__rec_get_str(r)))
    return -1;
  if (!*x->name)
    return ferry__rec_fail(r, "empty variable name");
  for (int k = 0; k < v; k++)
    if (strcmp(m->vars[k].name, x->name) == 0)
      return ferry__rec_fail(r, "variable named twice");
  unsigned dt = ferry__rec_get_u8(r), sw = ferry__rec_get_u8(r),
           nd = ferry__rec_get_u8(r), rg = ferry__rec_get_u8(r);
  if (r->rc)
    return -1;
  if (rg > 2)
    return ferry__rec_fail(r, "bad ragged flag");
  x->ragged = (int)rg;
  if (dt >= FERRY_DTYPE_COUNT)
    return ferry__rec_fail(r, "bad dtype");
  if (sw > 1)
    return ferry__rec_fail(r, "bad swapped flag");
  if (nd > FERRY_MAX_DIMS - 1)
    return ferry__rec_fail(r, "too many row dimensions");
  x->dtype = (ferry_dtype)dt;
  x->swapped = (int)sw;
  x->row_ndim = (int)nd;
  uint64_t bytes = ferry_dtype_size(x->dtype);
  for (unsigned k = 0; k < nd; k++) {
    int64_t d = ferry__rec_get_nonneg(r, "bad row dimension");
    if (r->rc)
      return -1;
    if (d < 1 || bytes > (uint64_t)INT64_MAX / (uint64_t)d)
      return ferry__rec_fail(r, "bad row dimension");
    x->row_shape[k] = d;
    bytes *= (uint64_t)d;
  }
  uint64_t rb = ferry__rec_get_u64(r);
  if (r->rc)
    return -1;
  if (rb != bytes || rb == 0)
    return ferry__rec_fail(r, "row size does not match dtype and shape");
  x->row_bytes = (size_t)rb;
  x->chunk_rows = ferry__rec_get_nonneg(r, "bad storage chunk");
  uint64_t cb = ferry__rec_get_u64(r);
  if (r->rc)
    return -1;
  if (cb > SIZE_MAX)
    return ferry__rec_fail(r, "bad cache size");
  x->cache_bytes = (size_t)cb;
  if (!(x->storage = ferry__rec_get_str(r)))
    return -1;
  x->width = ferry__rec_get_nonneg(r, "bad width");
  if (r->rc || !(x->categories = ferry__rec_get_str(r)))
    return -1;
  if (!*x->categories) {
    free(x->categories);
    x->categories = NULL;
  }
  return 0;
}

/* A side file the buffer names (pack_side), if any: mapped here, on this
 * rank, into *out (magic and what as ferry__side_map_open's, versions 1 to
 * vmax), its block hashes read, its bytes left to ferry__roff_map_verify
 * when defer.  A failure to map it is the rank's message in err, *maperr
 * set. */
static int unpack_side(ferry__rec_r *r, const char *magic, const char *what,
                       unsigned vmax, int defer, ferry__roff_map **out,
                       int *maperr, ferry__err *err) {
  char *path = ferry__rec_get_str(r);
  if (!path)
    return -1;
  if (!*path) {
    free(path);
    return 0;
  }
  uint64_t count = ferry__rec_get_u64(r), fnv = ferry__rec_get_u64(r);
  unsigned version = ferry__rec_get_u8(r);
  uint64_t nblk = ferry__rec_get_u64(r);
  int rc = r->rc ? -1 : 0;
  if (rc == 0 && (count > (uint64_t)INT64_MAX || version < 1 || version > vmax))
    rc = ferry__rec_fail(r, "bad side file count or version");
  else if (rc == 0 && ferry__side_map_open(path, magic, what, (int)version,
                                           (int64_t)count, fnv, out, err)) {
    *maperr = 1;
    rc = -1;
  }
  free(path);
  ferry__roff_map *mp = *out;
  if (rc == 0 && nblk != (uint64_t)ferry__roff_map_nblocks(mp))
    rc = ferry__rec_fail(r, "bad side file block count");
  else if (rc == 0 && !(mp->blk = malloc((size_t)nblk * sizeof *mp->blk)))
    return ferry__rec_oom(r, (size_t)nblk * 8, "a side file's block hashes");
  if (rc == 0) {
    ferry__rec_get_u64s(r, (int64_t *)(void *)mp->blk, (size_t)nblk);
    mp->nblk = (int64_t)nblk;
    mp->deferred = defer;
    rc = r->rc ? -1 : 0;
  }
  return rc;
}

/* The records' file the buffer names, if any (a manifest with records),
 * and *hash, the manifest hash the sender computed from its bytes; without
 * defer, every byte checked against its checksum here. */
static int unpack_recmap(ferry__rec_r *r, ferry__manifest *m, int defer,
                         uint64_t *hash, int *maperr, ferry__err *err) {
  int rc = unpack_side(r, FERRY__RECS_MAGIC, "records' file", 1, defer,
                       &m->rec_map, maperr, err);
  ferry__roff_map *mp = m->rec_map;
  if (rc || !mp)
    return rc;
  *hash = ferry__rec_get_u64(r);
  if (r->rc)
    return -1;
  if (!defer &&
      ferry__hash_words(FERRY__FNV_INIT, mp->addr, mp->len - 8) != mp->fnv) {
    *maperr = 1;
    return ferry__seterr(err, FERRY_EFORMAT,
                         "records' file %s: its bytes do not match its "
                         "checksum (changed since the manifest was saved)",
                         mp->path);
  }
  return 0;
}

static int unpack_body(ferry__rec_r *r, ferry__manifest *m, int defer,
                       uint64_t *hash, int *maperr, ferry__err *err) {
  if (!(m->backend = ferry__rec_get_str(r)) ||
      !(m->spec = ferry__rec_get_str(r)) || !(m->notes = ferry__rec_get_str(r)))
    return -1;
  if (!*m->notes) {
    free(m->notes);
    m->notes = NULL;
  }
  uint32_t rv = ferry__rec_get_u32(r);
  if (r->rc)
    return -1;
  if (rv > INT_MAX)
    return ferry__rec_fail(r, "bad record version");
  m->record_version = (int)rv;
  uint32_t nvars = ferry__rec_get_u32(r);
  if (r->rc)
    return -1;
  /* Each variable takes at least 17 bytes: never allocate more than the
   * buffer could describe. */
  if (nvars < 1 || nvars > INT_MAX || nvars > ferry__rec_left(r) / 17)
    return ferry__rec_fail(r, "bad variable count");
  if (!(m->vars = calloc(nvars, sizeof *m->vars)))
    return ferry__rec_oom(r, nvars * sizeof *m->vars, "the variables");
  m->nvars = (int)nvars;
  for (int v = 0; v < m->nvars; v++)
    if (unpack_var(r, m, v) < 0)
      return -1;
  int64_t nparts = ferry__rec_get_nonneg(r, "bad part count");
  int64_t total = ferry__rec_get_nonneg(r, "bad sample count");
  if (r->rc)
    return -1;
  if (ferry__manifest_ragged(m) &&
      unpack_side(r, FERRY__ROFF_MAGIC, "offsets' file", 2, defer, &m->roff_map,
                  maperr, err) < 0)
    return -1;
  if (m->record_version && unpack_recmap(r, m, defer, hash, maperr, err) < 0)
    return -1;
  uint64_t per_part = 16 + (uint64_t)m->nvars * 24;
  if ((uint64_t)nparts > ferry__rec_left(r) / per_part)
    return ferry__rec_fail(r, "bad part count");
  if (nparts > 0 && !(m->parts = calloc((size_t)nparts, sizeof *m->parts)))
    return ferry__rec_oom(r, (size_t)nparts * sizeof *m->parts, "the parts");
  m->nparts = nparts;
  int64_t sum = 0;
  for (int64_t p = 0; p < nparts; p++) {
    ferry__part *pt = &m->parts[p];
    pt->num_samples = ferry__rec_get_nonneg(r, "bad part sample count");
    pt->first_sample = ferry__rec_get_nonneg(r, "bad first sample");
    if (r->rc)
      return -1;
    if (pt->first_sample != sum || pt->num_samples > INT64_MAX - sum)
      return ferry__rec_fail(r, "parts do not add up");
    sum += pt->num_samples;
    pt->paths = calloc((size_t)m->nvars, sizeof *pt->paths);
    pt->data_offset = calloc((size_t)m->nvars, sizeof *pt->data_offset);
    pt->file_size = calloc((size_t)m->nvars, sizeof *pt->file_size);
    if (!pt->paths || !pt->data_offset || !pt->file_size ||
        (m->record_version &&
         !(pt->rec = calloc((size_t)m->nvars, sizeof *pt->rec))))
      return ferry__rec_oom(r,
                            (size_t)m->nvars *
                                (sizeof *pt->paths + sizeof *pt->data_offset +
                                 sizeof *pt->file_size +
                                 (m->record_version ? sizeof *pt->rec : 0)),
                            "a part's files");
    for (int v = 0; v < m->nvars; v++) {
      if (!(pt->paths[v] = ferry__rec_get_str(r)))
        return -1;
      pt->data_offset[v] = ferry__rec_get_nonneg(r, "bad data offset");
      pt->file_size[v] = ferry__rec_get_nonneg(r, "bad file size");
      if (r_blob(r, m, pt->rec ? &pt->rec[v] : NULL) < 0)
        return -1;
      if (m->vars[v].ragged && unpack_roff(r, m, pt, v) < 0)
        return -1;
    }
  }
  if (sum != total)
    return ferry__rec_fail(r, "parts do not add up to the sample count");
  m->num_samples = total;
  return 0;
}

int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err) {
  return ferry__manifest_unpack_ex(buf, len, 0, m, err);
}

int ferry__manifest_unpack_ex(const void *buf, size_t len, int defer,
                              ferry__manifest *m, ferry__err *err) {
  ferry__rec_r r;
  ferry__rec_r_init(&r, buf, len);
  memset(m, 0, sizeof *m);
  if (r.len < PACK_HEAD + 8 || memcmp(r.p, "FRYM", 4) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer of %zu bytes: not a ferry manifest",
                         len);
  if (r.p[4] != PACK_VERSION)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: version %u, this ferry reads %d",
                         r.p[4], PACK_VERSION);
  uint64_t total = ferry__le64_load(r.p + 8);
  if (total != len)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: holds %zu bytes but says %llu", len,
                         (unsigned long long)total);
  if (ferry__le64_load(r.p + len - 8) !=
      ferry__hash_words(FERRY__FNV_INIT, r.p, len - 8))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: checksum mismatch (corrupted)");
  r.pos = PACK_HEAD;
  r.len = len - 8; /* the body ends where the checksum starts */
  int maperr = 0;
  uint64_t hash = 0;
  int rc = unpack_body(&r, m, defer, &hash, &maperr, err);
  if (rc == 0)
    rc = ferry__rec_end(&r, "unexpected bytes after the last part");
  if (rc < 0) {
    ferry__manifest_free(m);
    if (maperr) /* the offsets' file, in this rank's words */
      return err->code ? err->code : FERRY_EIO;
    if (r.rc == FERRY_ENOMEM)
      return ferry__oom(err, -1, r.want,
                        "%s of the manifest buffer (at byte %zu of %zu)", r.why,
                        r.at, len);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer corrupt at byte %zu: %s", r.at,
                         r.why ? r.why : "?");
  }
  /* mapped records, deferred: the sender's hash of their bytes, which the
   * ranks' check of the file's blocks (dataset/share.c) shows are these */
  m->hash = m->rec_map && m->rec_map->deferred ? hash : ferry__manifest_hash(m);
  return 0;
}
