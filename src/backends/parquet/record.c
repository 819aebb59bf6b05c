/*
 * record.c - the parquet backend's per-variable record: what rank 0's
 * describe (describe.c) leaves in the manifest for every rank to read
 * with (files and their sizes, row groups with their first row, column
 * chunk offset and sizes, codec, physical type, levels, list length),
 * written and read back with every length bounded by the blob it comes
 * from.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/parquet/parquet.h"
#include "util/record.h"

#include <stdlib.h>
#include <string.h>

/*
 * Layout: u32 PQ_REC_MAGIC  i32 type, type_length, dtype, max_def,
 * max_rep, is_list, ragged, rep_def  i64 k  i32 nfiles  nfiles x (str path  i64
 * size) i64 nrg  nrg x (i64 first_row, num_rows, offset, size, usize,
 * num_values  i32 file, codec  i64 rgi, dict_offset, dict_size), where str
 * is u32 length + bytes, written with util/record.h.
 *
 * Byte order: the host's, as this record has always been written (the
 * magic says which: a reader finds it swapped in a record of the other
 * order and reads that too).  The record is not only passed between the
 * ranks of one job: it is saved (hex) in manifest JSON files and hashed
 * into the manifest hash (state files, the plan certificate), so writing
 * another order on a big-endian host would refuse its saved checkpoints
 * (docs/decisions/0044-one-record-writer.md).  On little-endian hosts it
 * is little-endian, like every other record; tests/unit/test_record pins
 * the bytes.
 */

static int host_big_endian(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 0;
}

static uint32_t swap32(uint32_t v) {
  return v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24;
}

int ferry__pq_rec_put(const pq_rec *r, ferry__blob *b) {
  return ferry__pq_rec_put_order(r, host_big_endian(), b);
}

int ferry__pq_rec_put_order(const pq_rec *r, int big_endian, ferry__blob *b) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  w.big_endian = big_endian;
  ferry__rec_put_u32(&w, PQ_REC_MAGIC);
  ferry__rec_put_i32(&w, r->type);
  ferry__rec_put_i32(&w, r->type_length);
  ferry__rec_put_i32(&w, r->dtype);
  ferry__rec_put_i32(&w, r->max_def);
  ferry__rec_put_i32(&w, r->max_rep);
  ferry__rec_put_i32(&w, r->is_list);
  ferry__rec_put_i32(&w, r->ragged);
  ferry__rec_put_i32(&w, r->rep_def);
  ferry__rec_put_i64(&w, r->k);
  ferry__rec_put_i32(&w, r->nfiles);
  for (int32_t i = 0; i < r->nfiles; i++) {
    ferry__rec_put_str(&w, r->files[i]);
    ferry__rec_put_i64(&w, r->fsize[i]);
  }
  ferry__rec_put_i64(&w, r->nrg);
  for (int64_t i = 0; i < r->nrg; i++) {
    const pq_rg_rec *g = &r->rg[i];
    ferry__rec_put_i64(&w, g->first_row);
    ferry__rec_put_i64(&w, g->num_rows);
    ferry__rec_put_i64(&w, g->offset);
    ferry__rec_put_i64(&w, g->size);
    ferry__rec_put_i64(&w, g->usize);
    ferry__rec_put_i64(&w, g->num_values);
    ferry__rec_put_i32(&w, g->file);
    ferry__rec_put_i32(&w, g->codec);
    ferry__rec_put_i64(&w, g->rgi);
    ferry__rec_put_i64(&w, g->dict_offset);
    ferry__rec_put_i64(&w, g->dict_size);
  }
  return ferry__rec_blob(&w, b);
}

void ferry__pq_rec_free(pq_rec *r) {
  for (int32_t i = 0; r->files && i < r->nfiles; i++)
    free(r->files[i]);
  free(r->files);
  free(r->fsize);
  free(r->rg);
  memset(r, 0, sizeof *r);
}

static int rec_files(ferry__rec_r *b, pq_rec *r) {
  r->nfiles = ferry__rec_get_i32(b);
  /* a file takes at least 12 bytes (length, size): bounded by the record */
  if (r->nfiles < 1 || (size_t)r->nfiles > ferry__rec_left(b) / 12)
    return ferry__rec_fail(b, "bad file count");
  r->files = calloc((size_t)r->nfiles, sizeof *r->files);
  r->fsize = calloc((size_t)r->nfiles, sizeof *r->fsize);
  if (!r->files || !r->fsize)
    return ferry__rec_oom(
        b, (size_t)r->nfiles * (sizeof *r->files + sizeof *r->fsize),
        "the file list");
  for (int32_t i = 0; i < r->nfiles && !b->rc; i++) {
    r->files[i] = ferry__rec_get_str(b);
    r->fsize[i] = ferry__rec_get_i64(b);
  }
  return b->rc;
}

/* Row group i of r, read: 0, or fails b naming what is wrong. */
static int rec_rg_check(ferry__rec_r *b, const pq_rec *r, int64_t i) {
  const pq_rg_rec *g = &r->rg[i];
  if (b->rc)
    return b->rc;
  /* first_row and num_rows bounded by the most samples ferry serves, so
   * that their sum below cannot overflow (fuzz_record found a corrupt
   * record adding two int64 past INT64_MAX, 2026-11-27). */
  if (g->file < 0 || g->file >= r->nfiles || g->size < 0 || g->offset < 0 ||
      g->num_rows < 0 || g->num_rows > FERRY__MAX_SAMPLES || g->first_row < 0 ||
      g->first_row > FERRY__MAX_SAMPLES || g->rgi < 0 || g->dict_offset < 0 ||
      g->dict_size < 0 || g->dict_size > (int64_t)PQ_MAX_DICT)
    return ferry__rec_fail(b, "bad row group");
  if (i > 0 && g->first_row != r->rg[i - 1].first_row + r->rg[i - 1].num_rows)
    return ferry__rec_fail(b, "row groups do not follow each other");
  return 0;
}

static void rec_rg(ferry__rec_r *b, pq_rg_rec *g) {
  g->first_row = ferry__rec_get_i64(b);
  g->num_rows = ferry__rec_get_i64(b);
  g->offset = ferry__rec_get_i64(b);
  g->size = ferry__rec_get_i64(b);
  g->usize = ferry__rec_get_i64(b);
  g->num_values = ferry__rec_get_i64(b);
  g->file = ferry__rec_get_i32(b);
  g->codec = ferry__rec_get_i32(b);
  g->rgi = ferry__rec_get_i64(b);
  g->dict_offset = ferry__rec_get_i64(b);
  g->dict_size = ferry__rec_get_i64(b);
}

int ferry__pq_rec_get(const ferry__blob *blob, pq_rec *r, const char *where,
                      ferry__err *err) {
  ferry__rec_r b;
  ferry__rec_r_init(&b, blob->p, blob->len);
  memset(r, 0, sizeof *r);
  uint32_t magic = ferry__rec_get_u32(&b);
  if (magic == swap32(PQ_REC_MAGIC))
    b.big_endian = 1; /* written on a big-endian host (see the layout) */
  else if (magic != PQ_REC_MAGIC)
    ferry__rec_fail(&b, "bad magic");
  r->type = ferry__rec_get_i32(&b);
  r->type_length = ferry__rec_get_i32(&b);
  r->dtype = ferry__rec_get_i32(&b);
  r->max_def = ferry__rec_get_i32(&b);
  r->max_rep = ferry__rec_get_i32(&b);
  r->is_list = ferry__rec_get_i32(&b);
  r->ragged = ferry__rec_get_i32(&b);
  r->rep_def = ferry__rec_get_i32(&b);
  r->k = ferry__rec_get_i64(&b);
  if (r->k < 1 || (r->ragged && r->k != 1))
    ferry__rec_fail(&b, "bad list length");
  if (r->ragged < PQ_FIXED || r->ragged > PQ_RAGGED_BYTES ||
      (r->ragged == PQ_RAGGED_LIST &&
       (r->max_rep != 1 || r->rep_def < 1 || r->rep_def > r->max_def)) ||
      (r->ragged == PQ_RAGGED_BYTES &&
       (r->max_rep != 0 || r->max_def > 1 || r->type != PQ_BYTE_ARRAY)))
    ferry__rec_fail(&b, "bad ragged kind or levels");
  if (!b.rc)
    rec_files(&b, r);
  r->nrg = b.rc ? 0 : ferry__rec_get_i64(&b);
  /* a row group takes 80 bytes: bounded by the record */
  if (r->nrg < 0 || (uint64_t)r->nrg > ferry__rec_left(&b) / 80)
    ferry__rec_fail(&b, "bad row group count");
  if (!b.rc && !(r->rg = calloc((size_t)(r->nrg ? r->nrg : 1), sizeof *r->rg)))
    ferry__rec_oom(&b, (size_t)(r->nrg ? r->nrg : 1) * sizeof *r->rg,
                   "the row groups");
  for (int64_t i = 0; !b.rc && i < r->nrg; i++) {
    rec_rg(&b, &r->rg[i]);
    rec_rg_check(&b, r, i);
  }
  if (ferry__rec_end(&b, "bytes after the last row group") == 0)
    return 0;
  ferry__pq_rec_free(r);
  if (b.rc == FERRY_ENOMEM)
    return ferry__oom(err, -1, b.want, "%s of the parquet record of %s", b.why,
                      where);
  return ferry__seterr(err, FERRY_EFORMAT,
                       "%s: the manifest's parquet record is corrupt at byte "
                       "%zu of %zu: %s",
                       where, b.at, blob->len, b.why);
}
