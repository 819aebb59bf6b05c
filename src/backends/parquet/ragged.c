/*
 * ragged.c - decode one Parquet column chunk of a ragged variable
 * (docs/ragged.md): a LIST column of a numeric element whose lists differ
 * in length, or a BYTE_ARRAY column (strings, binary), whose row is its
 * bytes.  Rank 0 decodes every chunk once at open for the rows' lengths
 * (j->lens; describe.c makes the part's offsets of them); a read decodes
 * the chunks its rows touch into their values, one row after the other,
 * and checks every row's length against those offsets.
 *
 * A list's levels: a repetition level 0 begins a row; a definition level
 * of rec->rep_def or more is an element (the maximum: a value, below it a
 * null element, served as null_fill or refused); below rep_def the row is
 * an empty list, or (below rep_def - 1) a null list, served empty with
 * null_fill or refused.  Rows may continue across pages (data pages v1),
 * so the pages are decoded in order, on the calling thread.  Byte arrays:
 * PLAIN (a u32 length before each), dictionary (a PLAIN dictionary page),
 * DELTA_LENGTH_BYTE_ARRAY (the lengths delta-packed, then the bytes) and
 * DELTA_BYTE_ARRAY (prefix lengths shared with the previous value, then
 * the suffixes as DELTA_LENGTH_BYTE_ARRAY).  Every count and length read is
 * checked against the bytes of its page, and a page's levels against
 * PQ_MAX_PAGE_LEVELS before anything is allocated for them.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/pages.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* A message naming the file row of the row being read. */
static int row_fail(pq_dec *d, int code, const char *what) {
  char msg[400];
  snprintf(msg, sizeof msg, "row %lld of the file: %s",
           (long long)(d->j->row0 + d->row), what);
  return ferry__pq_fail(d, code, msg);
}

/* The row being read is complete: its length recorded (lens) or checked
 * against the offsets made at open. */
static int row_done(pq_dec *d) {
  const pq_job *j = d->j;
  if (d->row < 0)
    return 0;
  if (j->lens) {
    j->lens[d->row] = d->cur;
    return 0;
  }
  int64_t want = j->roff[d->row + 1] - j->roff[d->row];
  if (want == d->cur)
    return 0;
  char msg[200];
  snprintf(msg, sizeof msg,
           "it holds %lld elements where rank 0 counted %lld at open (the "
           "file changed?)",
           (long long)d->cur, (long long)want);
  return row_fail(d, FERRY_EMISMATCH, msg);
}

static int row_begin(pq_dec *d) {
  if (row_done(d) < 0)
    return -1;
  if (d->row + 1 >= d->j->rg->num_rows)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "the column chunk holds more rows than its row "
                          "group");
  d->row++;
  d->cur = 0;
  return 0;
}

/* n levels of maximum max at p (len bytes) into *buf (grown); max 0: all
 * zero without reading. */
static int levels(pq_dec *d, const unsigned char *p, size_t len, int max,
                  size_t n, uint32_t **buf, size_t *cap) {
  size_t want = ferry__pq_grow((void **)buf, cap, (n ? n : 1) * 4);
  const char *why = "truncated or corrupt levels";
  if (want)
    return ferry__pq_oom(d, want, "the levels");
  if (max == 0) {
    memset(*buf, 0, n * 4);
    return 0;
  }
  if (ferry__pq_rle(p, len, ferry__pq_bit_width((uint32_t)max), *buf, n, &why) <
      0)
    return ferry__pq_fail(d, FERRY_EFORMAT, why);
  for (size_t i = 0; i < n; i++)
    if ((*buf)[i] > (uint32_t)max)
      return ferry__pq_fail(d, FERRY_EFORMAT, "a level above its maximum");
  return 0;
}

/* A null (a list or a byte array, or an element of a list): served per
 * null_fill, or an error. */
static int null_row(pq_dec *d, int element) {
  const pq_job *j = d->j;
  char msg[300];
  if (element ? j->fill != NULL : j->null_empty)
    return 0;
  snprintf(msg, sizeof msg, "a null %s: ferry reads columns without nulls (%s)",
           element                            ? "element of its list"
           : j->rec->ragged == PQ_RAGGED_LIST ? "list"
                                              : "value",
           element && j->nofill ? j->nofill
           : element            ? "null_fill=VALUE serves VALUE instead"
                     : "null_fill=VALUE serves it as an empty sample");
  return row_fail(d, FERRY_ENOTSUP, msg);
}

/* ---- Lists ----------------------------------------------------------------
 */

/* 1 when the n definition levels at p (len bytes) are one RLE run of max:
 * every level an element, no null, no empty list (the common page). */
static int all_elements(const unsigned char *p, size_t len, int max, size_t n) {
  pq_bits b = {p, p + len};
  uint64_t h, v = 0;
  size_t vbytes = ((size_t)ferry__pq_bit_width((uint32_t)max) + 7) / 8;
  if (max == 0 || ferry__pq_uvarint(&b, &h) < 0 || (h & 1) || (h >> 1) < n ||
      (size_t)(b.end - b.p) < vbytes)
    return 0;
  for (size_t i = 0; i < vbytes; i++)
    v |= (uint64_t)b.p[i] << (8 * i);
  return v == (uint64_t)max;
}

/* m repetition levels (one bit each, LSB first, of byte x) of elements. */
static int rep_bits(pq_dec *d, unsigned x, size_t m) {
  if (m == 8 && x == 0xffu && d->row >= 0) { /* 8 elements of one row */
    d->cur += 8;
    return 0;
  }
  for (size_t j = 0; j < m; j++) {
    if (!((x >> j) & 1u)) {
      if (row_begin(d) < 0)
        return -1;
    } else if (d->row < 0) {
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the column chunk's first level continues a "
                            "list");
    }
    d->cur++;
  }
  return 0;
}

/* The repetition levels (maximum 1) of a page whose every level is an
 * element, walked in the RLE/bit-packed hybrid without decoding them: a
 * run of 1s adds to the row being read, a 0 begins a row, a byte 0xff of
 * a bit-packed group is 8 elements of it. */
static int rep_walk(pq_dec *d, const unsigned char *p, size_t len, size_t n) {
  pq_bits b = {p, p + len};
  size_t done = 0;
  while (done < n) {
    uint64_t h;
    if (ferry__pq_uvarint(&b, &h) < 0)
      goto trunc;
    size_t avail = (size_t)(b.end - b.p);
    if (h & 1) { /* bit-packed: groups of 8 levels in one byte each */
      uint64_t groups = h >> 1;
      size_t take = groups * 8 < n - done ? (size_t)groups * 8 : n - done;
      if (groups == 0 || (take + 7) / 8 > avail)
        goto trunc;
      for (size_t k = 0; k < (take + 7) / 8; k++)
        if (rep_bits(d, b.p[k], take - k * 8 < 8 ? take - k * 8 : 8) < 0)
          return -1;
      b.p += groups < avail ? (size_t)groups : avail;
      done += take;
      continue;
    }
    uint64_t run = h >> 1;
    if (run == 0 || avail < 1)
      goto trunc;
    unsigned v = *b.p++;
    size_t take = run < n - done ? (size_t)run : n - done;
    if (v > 1)
      return ferry__pq_fail(d, FERRY_EFORMAT, "a level above its maximum");
    if (v == 1 && d->row < 0)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the column chunk's first level continues a "
                            "list");
    if (v == 1)
      d->cur += (int64_t)take;
    for (size_t i = 0; v == 0 && i < take; i++) { /* rows of one element */
      if (row_begin(d) < 0)
        return -1;
      d->cur = 1;
    }
    done += take;
  }
  return 0;
trunc:
  return ferry__pq_fail(d, FERRY_EFORMAT, "truncated or corrupt levels");
}

/* The n levels of a list page (repetition rp, definition dp), then its
 * values (vp, vl bytes, encoding enc) into the output. */
static int list_page(pq_dec *d, int enc, const unsigned char *rp, size_t rl,
                     const unsigned char *dp, size_t dl,
                     const unsigned char *vp, size_t vl, size_t n) {
  const pq_rec *r = d->j->rec;
  pq_scratch *s = d->s;
  if (r->max_rep == 1 && all_elements(dp, dl, r->max_def, n)) {
    if (rep_walk(d, rp, rl, n) < 0)
      return -1;
    return d->j->lens || n == 0 ? 0 : ferry__pq_values(d, enc, vp, vl, n);
  }
  if (levels(d, rp, rl, r->max_rep, n, &s->rl, &s->rl_cap) < 0 ||
      levels(d, dp, dl, r->max_def, n, &s->lv, &s->lv_cap) < 0)
    return -1;
  const uint32_t *R = s->rl, *D = s->lv;
  uint32_t rdef = (uint32_t)r->rep_def, maxd = (uint32_t)r->max_def;
  size_t nonnull = 0, nulls = 0;
  for (size_t i = 0; i < n; i++) {
    if (R[i] == 0 && row_begin(d) < 0)
      return -1;
    if (R[i] != 0 && d->row < 0)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the column chunk's first level continues a "
                            "list");
    if (D[i] >= rdef) {
      d->cur++;
      if (D[i] == maxd)
        nonnull++;
      else if (null_row(d, 1) < 0)
        return -1;
      else
        nulls++;
    } else if (R[i] != 0) {
      return row_fail(d, FERRY_EFORMAT,
                      "an empty or null list inside a list (a level of a "
                      "list that does not begin a row)");
    } else if (D[i] + 1 < rdef && null_row(d, 0) < 0) {
      return -1;
    }
  }
  if (d->j->lens)
    return 0;
  int64_t got0 = d->got;
  if (nonnull && ferry__pq_values(d, enc, vp, vl, nonnull) < 0)
    return -1;
  if (nulls == 0)
    return 0;
  if ((int64_t)nulls > d->want - d->got)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "the column chunk holds more elements than its "
                          "rows");
  size_t e = d->elem, v = nonnull, k = nonnull + nulls;
  unsigned char *o = d->j->out + (size_t)got0 * e;
  for (size_t i = n; i-- > 0;) { /* a value never moves forward */
    if (D[i] < rdef)
      continue;
    k--;
    if (D[i] == maxd)
      memmove(o + k * e, o + --v * e, e);
    else
      memcpy(o + k * e, d->j->fill, e);
  }
  d->got = got0 + (int64_t)(nonnull + nulls);
  return 0;
}

/* ---- Byte arrays -----------------------------------------------------------
 */

/* A dictionary page of byte arrays (PLAIN): its bytes copied to s->dict,
 * each entry's place in s->bo. */
static int bytes_dict(pq_dec *d, const unsigned char *body, size_t len,
                      const pq_page_hdr *h) {
  pq_scratch *s = d->s;
  if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICT)
    return ferry__pq_fail(d, FERRY_ENOTSUP,
                          "a dictionary page not PLAIN-encoded");
  size_t n = (size_t)h->num_values;
  if (n > len / 4) /* each entry takes 4 bytes at least */
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a dictionary page holds fewer bytes than its "
                          "values need");
  size_t want = ferry__pq_grow((void **)&s->dict, &s->dict_cap, len ? len : 1);
  if (!want)
    want = ferry__pq_grow((void **)&s->bo, &s->bo_cap, (n ? n : 1) * 16);
  if (want)
    return ferry__pq_oom(d, want, "the dictionary");
  memcpy(s->dict, body, len);
  size_t p = 0;
  for (size_t i = 0; i < n; i++) {
    if (len - p < 4 || le32(body + p) > len - p - 4)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "a dictionary entry runs past its page");
    s->bo[2 * i] = p + 4;
    s->bo[2 * i + 1] = le32(body + p);
    p += 4 + le32(body + p);
  }
  d->dict_n = (int64_t)n;
  d->dict = s->dict;
  return 0;
}

/* The values of a byte-array page, one at a time (ba_next). */
typedef struct ba {
  int enc;
  const unsigned char *p, *end; /* PLAIN: the values; DELTA*: the bytes */
  size_t i, n;
} ba;

/* n delta-packed lengths at *p (into out), *p moved past them. */
static int delta_lens(pq_dec *d, const unsigned char **p,
                      const unsigned char *end, size_t n, int64_t *out) {
  size_t used = 0;
  if (ferry__pq_delta(*p, (size_t)(end - *p), n, 8, (unsigned char *)out,
                      &used) < 0)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "truncated or corrupt delta-packed lengths");
  for (size_t i = 0; i < n; i++) { /* little-endian bytes to int64 */
    unsigned char *b = (unsigned char *)&out[i];
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
      v = v << 8 | b[k];
    out[i] = (int64_t)v;
  }
  *p += used;
  return 0;
}

static int ba_init(pq_dec *d, ba *it, int enc, const unsigned char *p,
                   size_t len, size_t n) {
  pq_scratch *s = d->s;
  const char *why = "truncated dictionary indices";
  *it = (ba){enc, p, p + len, 0, n};
  if (n == 0)
    return 0;
  if (enc == PQ_ENC_PLAIN)
    return 0;
  if (enc == PQ_ENC_PLAIN_DICT || enc == PQ_ENC_RLE_DICT) {
    if (d->dict_n < 0)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "dictionary-encoded values but no dictionary "
                            "page before them");
    if (len < 1 || p[0] > 32)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "bad bit width of dictionary indices");
    size_t want = ferry__pq_grow((void **)&s->idx, &s->idx_cap, n * 4);
    if (want)
      return ferry__pq_oom(d, want, "the dictionary indices");
    if (ferry__pq_rle(p + 1, len - 1, p[0], s->idx, n, &why) < 0)
      return ferry__pq_fail(d, FERRY_EFORMAT, why);
    return 0;
  }
  if (enc != PQ_ENC_DELTA_LENGTH && enc != PQ_ENC_DELTA_BYTE_ARRAY) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "encoding %s (%d) of BYTE_ARRAY values is not supported",
             ferry__pq_encoding_name(enc), enc);
    return ferry__pq_fail(d, FERRY_ENOTSUP, msg);
  }
  int two = enc == PQ_ENC_DELTA_BYTE_ARRAY; /* prefixes, then suffixes */
  size_t want = ferry__pq_grow((void **)&s->len, &s->len_cap, 2 * n * 8);
  if (want)
    return ferry__pq_oom(d, want, "the lengths of byte arrays");
  if (two && delta_lens(d, &it->p, it->end, n, s->len + n) < 0)
    return -1;
  if (!two)
    memset(s->len + n, 0, n * 8);
  return delta_lens(d, &it->p, it->end, n, s->len);
}

/* The next value: *src its bytes (NULL: the first *pre are the previous
 * value's, then *len - *pre from src), *len its length. */
static int ba_next(pq_dec *d, ba *it, const unsigned char **src, size_t *len,
                   size_t *pre) {
  pq_scratch *s = d->s;
  size_t i = it->i++, left = (size_t)(it->end - it->p);
  *pre = 0;
  switch (it->enc) {
  case PQ_ENC_PLAIN:
    if (left < 4 || le32(it->p) > left - 4)
      return row_fail(d, FERRY_EFORMAT,
                      "a PLAIN byte array runs past its page");
    *len = le32(it->p);
    *src = it->p + 4;
    it->p += 4 + *len;
    return 0;
  case PQ_ENC_PLAIN_DICT:
  case PQ_ENC_RLE_DICT:
    if ((int64_t)s->idx[i] >= d->dict_n) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "dictionary index %u out of range (the dictionary holds %lld "
               "values)",
               s->idx[i], (long long)d->dict_n);
      return row_fail(d, FERRY_EFORMAT, msg);
    }
    *src = d->dict + s->bo[2 * s->idx[i]];
    *len = (size_t)s->bo[2 * s->idx[i] + 1];
    return 0;
  default: { /* DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY */
    int64_t suf = s->len[i], p = s->len[it->n + i];
    if (suf < 0 || (uint64_t)suf > left || p < 0 || p > d->prev)
      return row_fail(d, FERRY_EFORMAT,
                      suf < 0 || (uint64_t)suf > left
                          ? "a byte array's length runs past its page"
                          : "a prefix longer than the value before it");
    *pre = (size_t)p;
    *len = (size_t)(p + suf);
    *src = it->p;
    it->p += suf;
    return 0;
  }
  }
}

/* One value of the row being read into the output. */
static int ba_put(pq_dec *d, const unsigned char *src, size_t len, size_t pre) {
  unsigned char *out = d->j->out;
  size_t last = (size_t)d->prev; /* the value before: its bytes end here */
  d->cur = (int64_t)len;
  d->prev = (int64_t)len;
  if (d->j->lens)
    return 0;
  if ((int64_t)len > d->want - d->got)
    return row_fail(d, FERRY_EMISMATCH,
                    "its byte array runs past the bytes rank 0 counted at "
                    "open (the file changed?)");
  if (len == 0)
    return 0;
  unsigned char *o = out + d->got;
  if (pre) /* the last value's bytes end at o */
    memmove(o, o - last, pre);
  memcpy(o + pre, src, len - pre);
  d->got += (int64_t)len;
  return 0;
}

/* The n rows of a byte-array page: definition levels dp (nulls), values
 * vp (vl bytes, encoding enc). */
static int bytes_page(pq_dec *d, int enc, const unsigned char *dp, size_t dl,
                      const unsigned char *vp, size_t vl, size_t n) {
  const pq_rec *r = d->j->rec;
  pq_scratch *s = d->s;
  if (levels(d, dp, dl, r->max_def, n, &s->lv, &s->lv_cap) < 0)
    return -1;
  size_t nonnull = 0;
  for (size_t i = 0; i < n; i++)
    nonnull += s->lv[i] == (uint32_t)r->max_def;
  ba it;
  if (ba_init(d, &it, enc, vp, vl, nonnull) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *src = NULL;
    size_t len = 0, pre = 0;
    if (row_begin(d) < 0)
      return -1;
    if (s->lv[i] != (uint32_t)r->max_def) {
      if (null_row(d, 0) < 0)
        return -1;
      continue;
    }
    if (ba_next(d, &it, &src, &len, &pre) < 0 || ba_put(d, src, len, pre) < 0)
      return -1;
  }
  return 0;
}

/* ---- Pages ------------------------------------------------------------------
 */

/* The levels and values of a page: rep/def levels (rl, dl bytes at rp,
 * dp), values at vp (vl bytes). */
static int page_rows(pq_dec *d, const pq_page_hdr *h, const unsigned char *rp,
                     size_t rl, const unsigned char *dp, size_t dl,
                     const unsigned char *vp, size_t vl) {
  size_t n = (size_t)h->num_values;
  if (n > PQ_MAX_PAGE_LEVELS)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a page of more than 16777216 values (ferry's "
                          "bound on one page of a ragged column)");
  if (d->j->rec->ragged == PQ_RAGGED_LIST)
    return list_page(d, h->encoding, rp, rl, dp, dl, vp, vl, n);
  return bytes_page(d, h->encoding, dp, dl, vp, vl, n);
}

static int data_v1(pq_dec *d, const unsigned char *b, size_t len,
                   const pq_page_hdr *h) {
  const unsigned char *lv[2];
  size_t ll[2];
  if (ferry__pq_v1_levels(d, &b, &len, h, lv, ll) < 0)
    return -1;
  return page_rows(d, h, lv[0], ll[0], lv[1], ll[1], b, len);
}

static int data_v2(pq_dec *d, const unsigned char *in, const pq_page_hdr *h,
                   int codec) {
  size_t rl = (size_t)h->rep_len, dl = (size_t)h->def_len;
  size_t cs = (size_t)h->csize, us = (size_t)h->usize;
  const unsigned char *body;
  if (rl > cs || dl > cs - rl || rl + dl > us)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a v2 page's level lengths exceed the page");
  int c = h->is_compressed ? codec : PQ_CODEC_NONE;
  if (ferry__pq_page_body(d, in + rl + dl, cs - rl - dl, us - rl - dl, c,
                          &body) < 0)
    return -1;
  return page_rows(d, h, in, rl, in + rl, dl, body, us - rl - dl);
}

static int one_page(pq_dec *d, const unsigned char *in, const pq_page_hdr *h) {
  const unsigned char *body;
  int codec = d->j->rg->codec;
  if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2 &&
      h->type != PQ_PAGE_DICT)
    return 0; /* index pages and unknown kinds carry no values */
  if (!h->have_body)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a page without its data or dictionary header");
  if (h->type == PQ_PAGE_DATA_V2)
    return data_v2(d, in, h, codec);
  if (ferry__pq_page_body(d, in, (size_t)h->csize, (size_t)h->usize, codec,
                          &body) < 0)
    return -1;
  if (h->type == PQ_PAGE_DATA)
    return data_v1(d, body, (size_t)h->usize, h);
  if (d->j->rec->ragged == PQ_RAGGED_BYTES)
    return bytes_dict(d, body, (size_t)h->usize, h);
  return ferry__pq_dict_page(d, body, (size_t)h->usize, h);
}

int ferry__pq_decode_ragged(const pq_job *j, pq_scratch *s, ferry__err *err) {
  pq_dec d;
  const pq_rg_rec *g = j->rg;
  size_t size = (size_t)g->size, pos = 0;
  size_t ubound =
      g->usize > 0 && g->usize < PQ_MAX_PAGE ? (size_t)g->usize : PQ_MAX_PAGE;
  int64_t levels_seen = 0;
  char msg[240];
  ferry__pq_dec_init(&d, j, s, err);
  d.row = -1;
  d.want = j->lens ? INT64_MAX : j->roff[g->num_rows] - j->roff[0];
  while (pos < size) {
    pq_tr t;
    pq_page_hdr h;
    d.page_at = (int64_t)pos;
    ferry__pq_tr_init(&t, j->chunk + pos, size - pos);
    if (ferry__pq_page_header(&t, &h) < 0) {
      snprintf(msg, sizeof msg, "corrupt page header: %s", t.why);
      return ferry__pq_fail(&d, FERRY_EFORMAT, msg);
    }
    size_t hl = ferry__pq_tr_offset(&t);
    if ((size_t)h.csize > size - pos - hl) {
      snprintf(msg, sizeof msg,
               "the page's compressed size %d runs past its column chunk "
               "(%zu bytes left)",
               h.csize, size - pos - hl);
      return ferry__pq_fail(&d, FERRY_EFORMAT, msg);
    }
    if ((size_t)h.usize > ubound)
      return ferry__pq_fail(&d, FERRY_EFORMAT,
                            "the page's uncompressed size is above its "
                            "column chunk's");
    if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
      levels_seen += h.num_values;
      if (levels_seen > g->num_values)
        return ferry__pq_fail(&d, FERRY_EFORMAT,
                              "the column chunk's pages hold more values "
                              "than its num_values");
    }
    if (one_page(&d, j->chunk + pos + hl, &h) < 0)
      return err && err->code < 0 ? err->code : FERRY_EFORMAT;
    pos += hl + (size_t)h.csize;
  }
  if (row_done(&d) < 0)
    return err->code;
  if (d.row + 1 != g->num_rows) {
    snprintf(msg, sizeof msg,
             "the column chunk holds %lld rows where its row group has %lld",
             (long long)(d.row + 1), (long long)g->num_rows);
    return ferry__pq_fail(&d, FERRY_EFORMAT, msg);
  }
  if (!j->lens && d.got != d.want) {
    snprintf(msg, sizeof msg,
             "the column chunk holds %lld values where rank 0 counted %lld at "
             "open (the file changed?)",
             (long long)d.got, (long long)d.want);
    return ferry__pq_fail(&d, FERRY_EMISMATCH, msg);
  }
  return 0;
}

/* ---- Offsets at open (rank 0) ----------------------------------------------
 */

int ferry__pq_ragged_offsets(const pq_rec *r, const char *var,
                             const unsigned char *fill, const char *nofill,
                             int null_empty, int64_t rows, int64_t **out,
                             ferry__err *err) {
  int64_t *o = malloc(((size_t)rows + 1) * sizeof *o);
  unsigned char *buf = NULL;
  size_t cap = 0;
  int fd = -1, fdi = -1, rc = 0;
  int64_t frow0 = 0; /* the part row of the open file's first row */
  pq_scratch s;
  memset(&s, 0, sizeof s);
  *out = NULL;
  if (!o)
    return ferry__oom(err, -1, ((size_t)rows + 1) * sizeof *o,
                      "the offsets of the %lld rows of column %s",
                      (long long)rows, var);
  o[0] = 0;
  for (int64_t g = 0; rc == 0 && g < r->nrg; g++) {
    const pq_rg_rec *rg = &r->rg[g];
    const char *file = r->files[rg->file];
    if (rg->first_row + rg->num_rows > rows) {
      rc = ferry__seterr(err, FERRY_EINTERNAL,
                         "column %s: row groups past the part's %lld rows", var,
                         (long long)rows);
      break;
    }
    if (!ferry__pq_codec_available(rg->codec)) {
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "file %s, column %s, row group %lld: codec %s (%d) "
                         "is not supported by this build",
                         file, var, (long long)rg->rgi,
                         ferry__pq_codec_name(rg->codec), rg->codec);
      break;
    }
    if (rg->file != fdi) {
      if (fd >= 0)
        close(fd);
      fdi = rg->file;
      frow0 = rg->first_row;
      if ((fd = ferry__open_regular(file, NULL)) < 0) {
        rc = ferry__seterr(err, FERRY_EIO, "%s: cannot open it: %s (offset 0)",
                           file, strerror(errno));
        break;
      }
    }
    size_t got = 0, need = (size_t)rg->size;
    if (need > cap) {
      unsigned char *nb = realloc(buf, need);
      if (!nb) {
        rc = ferry__oom(err, -1, need, "a column chunk of column %s (%s)", var,
                        file);
        break;
      }
      buf = nb;
      cap = need;
    }
    errno = 0;
    if (ferry__pread_full(fd, buf, need, rg->offset, &got) != 0 ||
        got != need) {
      rc = ferry__seterr(err, FERRY_EIO,
                         "file %s, column %s, row group %lld: read failed at "
                         "offset %lld: %s",
                         file, var, (long long)rg->rgi,
                         (long long)(rg->offset + (int64_t)got),
                         errno ? strerror(errno) : "end of file");
      break;
    }
    pq_job j = {.rec = r,
                .rg = rg,
                .chunk = buf,
                .file = file,
                .var = var,
                .rank = 0,
                .rgi = rg->rgi,
                .row0 = rg->first_row - frow0,
                .fill = fill,
                .nofill = nofill,
                .lens = o + 1 + rg->first_row,
                .null_empty = null_empty};
    rc = ferry__pq_decode_ragged(&j, &s, err);
    for (int64_t i = rg->first_row; rc == 0 && i < rg->first_row + rg->num_rows;
         i++) {
      if (o[i + 1] > INT64_MAX - o[i]) /* lengths are never negative */
        rc = ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, column %s: the lengths of its rows add up "
                           "past 2^63 at row %lld",
                           file, var, (long long)(i - frow0));
      else
        o[i + 1] += o[i];
    }
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  ferry__pq_scratch_free(&s);
  if (rc == 0 && r->nrg > 0 &&
      r->rg[r->nrg - 1].first_row + r->rg[r->nrg - 1].num_rows != rows)
    rc = ferry__seterr(err, FERRY_EINTERNAL,
                       "column %s: its row groups do not cover the part's "
                       "%lld rows",
                       var, (long long)rows);
  if (rc < 0) {
    free(o);
    return rc;
  }
  *out = o;
  return 0;
}
