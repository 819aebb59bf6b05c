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

#include <stdlib.h>
#include <string.h>

typedef struct wbuf {
  unsigned char *p;
  size_t n, cap;
  int bad;
  size_t want; /* bad: the bytes that could not be had */
} wbuf;

static void w_bytes(wbuf *w, const void *p, size_t n) {
  if (w->bad)
    return;
  if (w->n + n > w->cap) {
    size_t c = w->cap ? w->cap * 2 : 256;
    while (c < w->n + n)
      c *= 2;
    unsigned char *q = realloc(w->p, c);
    if (!q) {
      w->bad = 1;
      w->want = c;
      return;
    }
    w->p = q;
    w->cap = c;
  }
  memcpy(w->p + w->n, p, n);
  w->n += n;
}
static void w_i64(wbuf *w, int64_t v) { w_bytes(w, &v, 8); }
static void w_i32(wbuf *w, int32_t v) { w_bytes(w, &v, 4); }

int ferry__pq_rec_put(const pq_rec *r, ferry__blob *b) {
  wbuf w = {0};
  w_i32(&w, (int32_t)PQ_REC_MAGIC);
  int32_t hdr[6] = {r->type,    r->type_length, r->dtype,
                    r->max_def, r->max_rep,     r->is_list};
  w_bytes(&w, hdr, sizeof hdr);
  w_i64(&w, r->k);
  w_i32(&w, r->nfiles);
  for (int32_t i = 0; i < r->nfiles; i++) {
    int32_t n = (int32_t)strlen(r->files[i]);
    w_i32(&w, n);
    w_bytes(&w, r->files[i], (size_t)n);
    w_i64(&w, r->fsize[i]);
  }
  w_i64(&w, r->nrg);
  for (int64_t i = 0; i < r->nrg; i++) {
    const pq_rg_rec *g = &r->rg[i];
    int64_t v[6] = {g->first_row, g->num_rows, g->offset,
                    g->size,      g->usize,    g->num_values};
    w_bytes(&w, v, sizeof v);
    w_i32(&w, g->file);
    w_i32(&w, g->codec);
    int64_t x[3] = {g->rgi, g->dict_offset, g->dict_size};
    w_bytes(&w, x, sizeof x);
  }
  if (w.bad) {
    free(w.p);
    b->p = NULL;
    b->len = w.want; /* for the caller's message */
    return FERRY_ENOMEM;
  }
  b->p = w.p;
  b->len = w.n;
  return 0;
}

typedef struct rbuf {
  const unsigned char *p;
  size_t n, at;
  int bad;
  size_t oom; /* out of memory: the bytes that could not be had */
} rbuf;

static void r_bytes(rbuf *r, void *out, size_t n) {
  if (r->bad || n > r->n - r->at) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  memcpy(out, r->p + r->at, n);
  r->at += n;
}
static int64_t r_i64(rbuf *r) {
  int64_t v;
  r_bytes(r, &v, 8);
  return v;
}
static int32_t r_i32(rbuf *r) {
  int32_t v;
  r_bytes(r, &v, 4);
  return v;
}

void ferry__pq_rec_free(pq_rec *r) {
  for (int32_t i = 0; r->files && i < r->nfiles; i++)
    free(r->files[i]);
  free(r->files);
  free(r->fsize);
  free(r->rg);
  memset(r, 0, sizeof *r);
}

static int rec_files(rbuf *b, pq_rec *r) {
  r->nfiles = r_i32(b);
  if (b->bad || r->nfiles < 1 || (size_t)r->nfiles > b->n)
    return -1;
  r->files = calloc((size_t)r->nfiles, sizeof *r->files);
  r->fsize = calloc((size_t)r->nfiles, sizeof *r->fsize);
  if (!r->files || !r->fsize) {
    b->oom = (size_t)r->nfiles * (sizeof *r->files + sizeof *r->fsize);
    return -1;
  }
  for (int32_t i = 0; i < r->nfiles; i++) {
    int32_t n = r_i32(b);
    if (b->bad || n < 0 || (size_t)n > b->n - b->at)
      return -1;
    if (!(r->files[i] = malloc((size_t)n + 1))) {
      b->oom = (size_t)n + 1;
      return -1;
    }
    r_bytes(b, r->files[i], (size_t)n);
    r->files[i][n] = '\0';
    r->fsize[i] = r_i64(b);
  }
  return b->bad ? -1 : 0;
}

int ferry__pq_rec_get(const ferry__blob *blob, pq_rec *r, const char *where,
                      ferry__err *err) {
  rbuf b = {blob->p, blob->len, 0, 0, 0};
  memset(r, 0, sizeof *r);
  int ok = (uint32_t)r_i32(&b) == PQ_REC_MAGIC;
  int32_t hdr[6];
  r_bytes(&b, hdr, sizeof hdr);
  r->type = hdr[0];
  r->type_length = hdr[1];
  r->dtype = hdr[2];
  r->max_def = hdr[3];
  r->max_rep = hdr[4];
  r->is_list = hdr[5];
  r->k = r_i64(&b);
  ok = ok && !b.bad && r->k >= 1 && rec_files(&b, r) == 0;
  r->nrg = ok ? r_i64(&b) : 0;
  ok = ok && !b.bad && r->nrg >= 0 && (uint64_t)r->nrg <= b.n / 80;
  if (ok && !(r->rg = calloc((size_t)(r->nrg ? r->nrg : 1), sizeof *r->rg))) {
    ok = 0;
    b.oom = (size_t)(r->nrg ? r->nrg : 1) * sizeof *r->rg;
  }
  for (int64_t i = 0; ok && i < r->nrg; i++) {
    pq_rg_rec *g = &r->rg[i];
    int64_t v[6];
    r_bytes(&b, v, sizeof v);
    g->first_row = v[0];
    g->num_rows = v[1];
    g->offset = v[2];
    g->size = v[3];
    g->usize = v[4];
    g->num_values = v[5];
    g->file = r_i32(&b);
    g->codec = r_i32(&b);
    int64_t x[3];
    r_bytes(&b, x, sizeof x);
    g->rgi = x[0];
    g->dict_offset = x[1];
    g->dict_size = x[2];
    ok = !b.bad && g->file >= 0 && g->file < r->nfiles && g->size >= 0 &&
         g->offset >= 0 && g->num_rows >= 0 && g->rgi >= 0 &&
         g->dict_offset >= 0 && g->dict_size >= 0 &&
         g->dict_size <= (int64_t)PQ_MAX_DICT &&
         (i == 0 ||
          g->first_row == r->rg[i - 1].first_row + r->rg[i - 1].num_rows);
  }
  if (b.oom) {
    ferry__pq_rec_free(r);
    return ferry__oom(err, -1, b.oom, "the parquet record of %s", where);
  }
  if (!ok || b.at != b.n) {
    ferry__pq_rec_free(r);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the manifest's parquet record is corrupt", where);
  }
  return 0;
}
