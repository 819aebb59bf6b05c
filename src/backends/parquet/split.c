/*
 * split.c - large row groups split at page boundaries.  A plan chunk is a
 * whole number of the storage chunks a backend reports (chunk_rows), so
 * with row groups as chunks a file of 16 MiB row groups is read 16 MiB at
 * a time, one read then one decode per row group, and ran at half the
 * speed of 2 MiB row groups.  Rank 0 therefore finds, at open, where the
 * pages of a column chunk larger than the plan's chunk target start (the
 * OffsetIndex of the Parquet page index when the file has one; else the
 * page headers, read one by one, at most PQ_MAX_SCAN_PAGES per chunk and
 * PQ_SCAN_BUDGET per part; none once a chunk of the column did not split),
 * and
 * picks one piece size q for the column: a divisor of the row-group size
 * whose multiples all fall on page starts, about the chunk target.  The
 * record then lists pieces instead of row groups (each with its pages'
 * byte range and, for a dictionary-encoded chunk, the dictionary page's),
 * chunk_rows becomes q, and a read decodes only the pages of its pieces.
 * Anything odd in an index or a header (unordered, outside its chunk,
 * pages not starting at a row) only means the chunk is read whole: the
 * pages themselves are still checked by pages.c when decoded.
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

void ferry__pq_pages_free(pq_pages *p) {
  free(p->offset);
  free(p->first_row);
  memset(p, 0, sizeof *p);
}

static int pages_add(pq_pages *p, int64_t *cap, int64_t off, int64_t row) {
  if (p->n == *cap) {
    int64_t c = *cap ? *cap * 2 : 64;
    int64_t *a = realloc(p->offset, (size_t)c * sizeof *a);
    if (a)
      p->offset = a;
    int64_t *b = a ? realloc(p->first_row, (size_t)c * sizeof *b) : NULL;
    if (!b)
      return -1;
    p->first_row = b;
    *cap = c;
  }
  p->offset[p->n] = off;
  p->first_row[p->n] = row;
  p->n++;
  return 0;
}

/* PageLocation: 1 offset (i64), 2 compressed_page_size (i32), 3
 * first_row_index (i64). */
static int parse_loc(pq_tr *t, int ftype, int64_t *off, int64_t *row) {
  int16_t last = 0, id;
  int ty, r;
  int32_t cs = -1;
  *off = *row = -1;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 1)
      ferry__pq_tr_i64(t, ty, off);
    else if (id == 2)
      ferry__pq_tr_i32(t, ty, &cs);
    else if (id == 3)
      ferry__pq_tr_i64(t, ty, row);
    else
      ferry__pq_tr_skip(t, ty);
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (*off < 0 || *row < 0 || cs < 0)
    return ferry__pq_tr_fail(t, "a page location lacks its offset, size or "
                                "first row");
  return 0;
}

int ferry__pq_offset_index_parse(const unsigned char *buf, size_t len,
                                 pq_pages *out, const char **why) {
  pq_tr t;
  int16_t last = 0, id;
  int ty, r, et, have = 0;
  int64_t n, cap = 0;
  memset(out, 0, sizeof *out);
  ferry__pq_tr_init(&t, buf, len);
  if (ferry__pq_tr_enter(&t, PQ_T_STRUCT) < 0)
    goto bad;
  while ((r = ferry__pq_tr_field(&t, &last, &id, &ty)) == 1) {
    if (id != 1 || have) {
      ferry__pq_tr_skip(&t, ty);
      continue;
    }
    have = 1;
    if (ferry__pq_tr_list(&t, ty, &et, &n) < 0)
      goto bad;
    for (int64_t i = 0; i < n; i++) {
      int64_t off, row;
      if (parse_loc(&t, et, &off, &row) < 0)
        goto bad;
      if (pages_add(out, &cap, off, row) < 0) {
        ferry__pq_tr_fail(&t, "out of memory");
        goto bad;
      }
    }
  }
  ferry__pq_tr_leave(&t);
  if (r < 0 || t.why)
    goto bad;
  if (!have) {
    ferry__pq_tr_fail(&t, "an OffsetIndex without page locations");
    goto bad;
  }
  out->from_index = 1;
  return 0;
bad:
  *why = t.why ? t.why : "malformed OffsetIndex";
  ferry__pq_pages_free(out);
  return -1;
}

/* Pages usable as piece starts: in order, inside the chunk's data pages,
 * the first at row 0, every row below nrows. */
static int pages_ok(const pq_pages *p, const pq_chunk *ch, int64_t nrows) {
  if (p->n < 1 || p->first_row[0] != 0 || p->offset[0] != ch->data_off)
    return 0;
  for (int64_t i = 0; i < p->n; i++) {
    if (p->first_row[i] >= nrows || p->offset[i] >= ch->offset + ch->size)
      return 0;
    if (i && (p->offset[i] <= p->offset[i - 1] ||
              p->first_row[i] <= p->first_row[i - 1]))
      return 0;
  }
  return 1;
}

static int read_index(int fd, const pq_chunk *ch, pq_pages *out) {
  if (ch->oi_len <= 0 || (uint32_t)ch->oi_len > PQ_MAX_INDEX)
    return -1;
  unsigned char *b = malloc((size_t)ch->oi_len);
  size_t got = 0;
  const char *why = NULL;
  if (!b)
    return -1;
  int rc = ferry__pread_full(fd, b, (size_t)ch->oi_len, ch->oi_off, &got);
  if (rc == 0 && got == (size_t)ch->oi_len)
    rc = ferry__pq_offset_index_parse(b, got, out, &why);
  else
    rc = -1;
  free(b);
  return rc;
}

/* The page headers of the chunk, read one by one.  A v1 page of a list
 * column may start inside a row (its values are not a multiple of k from
 * the chunk's start): it is no piece start and is left out. */
static int scan_headers(int fd, const pq_chunk *ch, int64_t k, pq_pages *out,
                        int64_t *budget) {
  enum { SMALL = 256, LARGE = 1 << 16 };
  unsigned char *b = malloc(LARGE);
  int64_t pos = ch->offset, end = ch->offset + ch->size, vals = 0, cap = 0;
  int rc = 0;
  if (!b)
    return -1;
  for (int64_t pages = 0; rc == 0 && pos < end; pages++) {
    pq_page_info pi;
    const char *why = NULL;
    size_t got = 0, want = SMALL;
    if (pages >= PQ_MAX_SCAN_PAGES || --*budget < 0) {
      rc = -1;
      break;
    }
    for (;;) {
      if ((int64_t)want > end - pos)
        want = (size_t)(end - pos);
      if (ferry__pread_full(fd, b, want, pos, &got) < 0 || got != want) {
        rc = -1;
        break;
      }
      if (ferry__pq_page_info(b, got, &pi, &why) == 0)
        break;
      if (want >= LARGE || (int64_t)want >= end - pos) {
        rc = -1; /* a header above 64 KiB (large statistics): give up */
        break;
      }
      want = LARGE;
    }
    if (rc < 0 || pi.csize < 0 || (int64_t)pi.hlen > end - pos ||
        pi.csize > end - pos - (int64_t)pi.hlen) {
      rc = -1;
      break;
    }
    if ((pi.type == PQ_PAGE_DATA || pi.type == PQ_PAGE_DATA_V2) &&
        vals % k == 0)
      rc = pages_add(out, &cap, pos, vals / k);
    if (pi.type == PQ_PAGE_DATA || pi.type == PQ_PAGE_DATA_V2)
      vals += pi.num_rows >= 0 && k == 1 ? pi.num_rows : pi.num_values;
    pos += (int64_t)pi.hlen + pi.csize;
  }
  free(b);
  return rc;
}

int ferry__pq_chunk_pages(int fd, const pq_chunk *ch, int64_t nrows, int64_t k,
                          pq_pages *out, int64_t *budget) {
  memset(out, 0, sizeof *out);
  if (k < 1 || ch->data_off < ch->offset ||
      ch->data_off >= ch->offset + ch->size ||
      ch->data_off - ch->offset > (int64_t)PQ_MAX_DICT)
    return 0;
  if (ch->oi_off >= 0 && read_index(fd, ch, out) == 0 &&
      pages_ok(out, ch, nrows))
    return 0;
  ferry__pq_pages_free(out);
  if (*budget > 0 && scan_headers(fd, ch, k, out, budget) == 0 &&
      pages_ok(out, ch, nrows))
    return 0;
  ferry__pq_pages_free(out);
  return 0;
}

/* Every multiple of q below the row group's rows is a page start. */
static int fits(const pq_pages *p, int64_t rows, int64_t q) {
  int64_t i = 0;
  for (int64_t at = q; at < rows; at += q) {
    while (i < p->n && p->first_row[i] < at)
      i++;
    if (i == p->n || p->first_row[i] != at)
      return 0;
  }
  return 1;
}

static int fits_all(const pq_rec *r, const pq_pages *pg, int64_t q) {
  for (int64_t g = 0; g < r->nrg; g++)
    if (pg[g].n > 0 && !fits(&pg[g], r->rg[g].num_rows, q))
      return 0;
  return 1;
}

int64_t ferry__pq_split_rows(const pq_rec *r, const pq_pages *pg,
                             size_t row_bytes, size_t target) {
  if (row_bytes == 0)
    return 0;
  /* row groups of one size but the last (which may be shorter): pieces of
   * a divisor of that size tile every row group on one grid */
  int64_t rows = r->nrg ? r->rg[0].num_rows : 0, any = 0;
  for (int64_t g = 0; g < r->nrg; g++) {
    if ((g + 1 < r->nrg && r->rg[g].num_rows != rows) ||
        r->rg[g].num_rows > rows)
      return 0;
    any |= pg[g].n > 1;
    /* a large row group whose pages are unknown stays whole: then all do,
     * so that pieces and row groups never mix on one column's grid */
    if (pg[g].n == 0 && (size_t)r->rg[g].num_rows > target / row_bytes)
      return 0;
  }
  if (!any || rows < 2 || row_bytes == 0)
    return 0;
  int64_t lim = (int64_t)(target / row_bytes);
  int64_t below = 0, above = 0; /* best divisor <= lim, smallest > lim */
  for (int64_t d = 1; d <= rows / d; d++) {
    if (rows % d)
      continue;
    int64_t pair[2] = {d, rows / d};
    for (int j = 0; j < 2; j++) {
      int64_t q = pair[j];
      if (q >= rows)
        continue;
      if (q <= lim && q > below && fits_all(r, pg, q))
        below = q;
      else if (q > lim && (!above || q < above) && fits_all(r, pg, q))
        above = q;
    }
  }
  return below ? below : above;
}

/* The index of the page of p starting at row at (it exists: fits). */
static int64_t page_at_row(const pq_pages *p, int64_t at) {
  int64_t lo = 0, hi = p->n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (p->first_row[mid] < at)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The pieces of q rows r's row groups become. */
static int64_t pieces(const pq_rec *r, const pq_pages *pg, int64_t q) {
  int64_t n = 0;
  for (int64_t g = 0; g < r->nrg; g++)
    n += pg[g].n > 0 ? (r->rg[g].num_rows + q - 1) / q : 1;
  return n;
}

size_t ferry__pq_split_bytes(const pq_rec *r, const pq_pages *pg, int64_t q) {
  int64_t n = q < 1 ? 0 : pieces(r, pg, q);
  return (size_t)(n ? n : 1) * sizeof(pq_rg_rec);
}

int ferry__pq_split_apply(pq_rec *r, const pq_pages *pg, int64_t q) {
  if (q < 1)
    return 0;
  int64_t n = pieces(r, pg, q);
  pq_rg_rec *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v)
    return FERRY_ENOMEM;
  int64_t o = 0;
  for (int64_t g = 0; g < r->nrg; g++) {
    const pq_rg_rec *a = &r->rg[g];
    const pq_pages *p = &pg[g];
    if (p->n == 0) {
      v[o++] = *a;
      continue;
    }
    int64_t end = a->offset + a->size;
    for (int64_t at = 0; at < a->num_rows; at += q) {
      pq_rg_rec *b = &v[o++];
      int64_t i = page_at_row(p, at);
      int64_t next =
          at + q < a->num_rows ? p->offset[page_at_row(p, at + q)] : end;
      *b = *a;
      b->first_row = a->first_row + at;
      b->num_rows = at + q < a->num_rows ? q : a->num_rows - at;
      b->offset = p->offset[i];
      b->size = next - p->offset[i];
      b->num_values = -1;
      b->dict_offset = a->offset;
      b->dict_size = p->offset[0] - a->offset;
    }
  }
  free(r->rg);
  r->rg = v;
  r->nrg = n;
  return 0;
}
