/*
 * pages.c - decode one Parquet column chunk (the bytes of one column in one
 * row group) into rows: page headers (Thrift, thrift.c), decompression
 * (src/codecs/page.c), repetition and
 * definition levels (the RLE/bit-packed hybrid), and values (PLAIN,
 * PLAIN_DICTIONARY/RLE_DICTIONARY with a dictionary page, a chunk falling
 * back from dictionary to PLAIN mid-way, RLE booleans, BYTE_STREAM_SPLIT,
 * DELTA_BINARY_PACKED).  Values are written little-endian in the variable's
 * dtype (narrowed from INT32 for 8- and 16-bit integers); describe marks
 * the variable swapped on a big-endian host.
 *
 * Every size read from a page is checked: a page's compressed size against
 * the bytes left in the chunk, its uncompressed size against the chunk's
 * total_uncompressed_size, 1 GiB and what its codec can make of its bytes
 * (before the page buffer is allocated), decompressed bytes against the stated
 * size, level and index streams against their bytes, dictionary indices
 * against the dictionary, value counts against the rows.  A null (a
 * definition level below the maximum) is refused naming the row; so is a
 * list whose length is not the variable's k.  The decoder keeps no state
 * between calls except the caller's scratch buffers, so chunks can be
 * decoded on several threads at once (one scratch each).  A large chunk's
 * data pages are decoded as runs of pages, jobs on the I/O state's decode
 * pool (backends/pool.c), not on threads created per call: each page
 * writes its own values' place, so the values do not depend on which run
 * ran where, and the pool returns the lowest-numbered failing job's error,
 * the first bad page's.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/parquet/pages.h"
#include "codecs/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* ---- Bit-level streams -------------------------------------------------- */

int ferry__pq_uvarint(pq_bits *b, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (b->p >= b->end)
      return -1;
    unsigned c = *b->p++;
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

/* 8 bytes at p, little-endian */
static uint64_t load64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

/* n values of bw bits (LSB first) from p, which has avail bytes. */
int ferry__pq_unpack(const unsigned char *p, size_t avail, int bw,
                     uint64_t *out64, uint32_t *out32, size_t n) {
  if (bw == 0) {
    for (size_t i = 0; i < n; i++) {
      if (out64)
        out64[i] = 0;
      else
        out32[i] = 0;
    }
    return 0;
  }
  if ((n * (size_t)bw + 7) / 8 > avail)
    return -1;
  size_t i = 0;
  if (bw <= 56) {
    /* a 64-bit little-endian window per value, while 8 bytes remain */
    const uint64_t mask = (UINT64_C(1) << bw) - 1;
    if (bw <= 8 && out32) /* groups of 8 values in bw bytes: levels */
      for (; i + 8 <= n && (i / 8 + 1) * (size_t)bw + 8 <= avail; i += 8) {
        uint64_t w = load64(p + i / 8 * (size_t)bw);
        for (int k = 0; k < 8; k++)
          out32[i + (size_t)k] = (uint32_t)((w >> (k * bw)) & mask);
      }
    for (; i < n; i++) {
      size_t bit = i * (size_t)bw, byte = bit >> 3;
      if (byte + 8 > avail)
        break;
      uint64_t v = (load64(p + byte) >> (bit & 7)) & mask;
      if (out64)
        out64[i] = v;
      else
        out32[i] = (uint32_t)v;
    }
  }
  for (; i < n; i++) { /* the tail, and widths above 56, bit by bit */
    size_t bit = i * (size_t)bw;
    uint64_t v = 0;
    for (int got = 0; got < bw;) {
      size_t byte = bit >> 3;
      unsigned sh = (unsigned)(bit & 7);
      int take = 8 - (int)sh;
      if (take > bw - got)
        take = bw - got;
      v |= (uint64_t)((p[byte] >> sh) & ((1u << take) - 1u)) << got;
      got += take;
      bit += (size_t)take;
    }
    if (out64)
      out64[i] = v;
    else
      out32[i] = (uint32_t)v;
  }
  return 0;
}

/* The RLE/bit-packed hybrid: exactly n values of bw bits (bw <= 32). */
int ferry__pq_rle(const unsigned char *p, size_t len, int bw, uint32_t *out,
                  size_t n, const char **why) {
  pq_bits b = {p, p + len};
  size_t done = 0, vbytes = ((size_t)bw + 7) / 8;
  while (done < n) {
    uint64_t h;
    if (ferry__pq_uvarint(&b, &h) < 0)
      goto trunc;
    if (h & 1) {
      uint64_t groups = h >> 1;
      if (groups == 0 || groups > (uint64_t)(b.end - b.p))
        goto trunc;
      size_t cnt = (size_t)groups * 8, take = cnt < n - done ? cnt : n - done;
      size_t bytes = (size_t)groups * (size_t)bw;
      size_t avail = (size_t)(b.end - b.p);
      if (ferry__pq_unpack(b.p, avail, bw, NULL, out + done, take) < 0)
        goto trunc;
      b.p += bytes < avail ? bytes : avail;
      done += take;
    } else {
      uint64_t run = h >> 1;
      if ((size_t)(b.end - b.p) < vbytes || run == 0)
        goto trunc;
      uint32_t v = 0;
      for (size_t i = 0; i < vbytes; i++)
        v |= (uint32_t)b.p[i] << (8 * i);
      b.p += vbytes;
      if (bw < 32 && (v >> bw) != 0) {
        *why = "an RLE run's value is wider than its bit width";
        return -1;
      }
      size_t take = run < n - done ? (size_t)run : n - done;
      for (size_t i = 0; i < take; i++)
        out[done + i] = v;
      done += take;
    }
  }
  return 0;
trunc:
  *why = "truncated or corrupt RLE/bit-packed data";
  return -1;
}

int ferry__pq_bit_width(uint32_t max) {
  int w = 0;
  while (max) {
    w++;
    max >>= 1;
  }
  return w;
}

/* ---- Page headers ------------------------------------------------------- */

static int parse_sub(pq_tr *t, int ftype, pq_page_hdr *h, int kind) {
  int16_t last = 0, id;
  int ty, r;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  h->have_body = 1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    int32_t *dst = NULL;
    if (id == 1)
      dst = &h->num_values;
    else if (kind == 0 && id == 2)
      dst = &h->encoding;
    else if (kind == 0 && id == 3)
      dst = &h->def_enc;
    else if (kind == 0 && id == 4)
      dst = &h->rep_enc;
    else if (kind == 1 && id == 2)
      dst = &h->encoding;
    else if (kind == 2 && id == 2)
      dst = &h->num_nulls;
    else if (kind == 2 && id == 3)
      dst = &h->num_rows;
    else if (kind == 2 && id == 4)
      dst = &h->encoding;
    else if (kind == 2 && id == 5)
      dst = &h->def_len;
    else if (kind == 2 && id == 6)
      dst = &h->rep_len;
    if (dst)
      ferry__pq_tr_i32(t, ty, dst);
    else if (kind == 2 && id == 7)
      ferry__pq_tr_bool(t, ty, &h->is_compressed);
    else
      ferry__pq_tr_skip(t, ty);
  }
  ferry__pq_tr_leave(t);
  return r < 0 || t->why ? -1 : 0;
}

int ferry__pq_page_header(pq_tr *t, pq_page_hdr *h) {
  int16_t last = 0, id;
  int ty, r;
  memset(h, 0, sizeof *h);
  h->type = h->usize = h->csize = -1;
  h->is_compressed = 1;
  h->def_enc = h->rep_enc = PQ_ENC_RLE;
  if (ferry__pq_tr_enter(t, PQ_T_STRUCT) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    switch (id) {
    case 1: ferry__pq_tr_i32(t, ty, &h->type); break;
    case 2: ferry__pq_tr_i32(t, ty, &h->usize); break;
    case 3: ferry__pq_tr_i32(t, ty, &h->csize); break;
    case 5: parse_sub(t, ty, h, 0); break;
    case 7: parse_sub(t, ty, h, 1); break;
    case 8: parse_sub(t, ty, h, 2); break;
    default: ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (h->type < 0 || h->usize < 0 || h->csize < 0 || h->num_values < 0 ||
      h->def_len < 0 || h->rep_len < 0 || h->num_nulls < 0)
    return ferry__pq_tr_fail(t,
                             "a page header lacks its type or sizes, or has a "
                             "negative one");
  return 0;
}

int ferry__pq_page_info(const unsigned char *p, size_t len, pq_page_info *out,
                        const char **why) {
  pq_tr t;
  pq_page_hdr h;
  ferry__pq_tr_init(&t, p, len);
  if (ferry__pq_page_header(&t, &h) < 0) {
    *why = t.why ? t.why : "corrupt page header";
    return -1;
  }
  out->type = h.type;
  out->csize = h.csize;
  out->num_values = h.num_values;
  out->num_rows = h.type == PQ_PAGE_DATA_V2 ? h.num_rows : -1;
  out->hlen = ferry__pq_tr_offset(&t);
  return 0;
}

/* ---- Chunk decoding ----------------------------------------------------- */

/* 0, or (out of memory) the bytes it could not have. */
size_t ferry__pq_grow(void **p, size_t *cap, size_t need) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 4096;
  while (c < need)
    c = c > SIZE_MAX / 2 ? need : c * 2;
  void *n = realloc(*p, c);
  if (!n)
    return c;
  *p = n;
  *cap = c;
  return 0;
}

int ferry__pq_fail(pq_dec *d, int code, const char *what) {
  const pq_job *j = d->j;
  return ferry__seterr(d->err, code,
                       "file %s, column %s, row group %lld (page at offset "
                       "%lld), rank %d: %s",
                       j->file, j->var, (long long)j->rgi,
                       (long long)(d->base + d->page_at), j->rank, what);
}

/* Out of memory: bytes for what, where fail says. */
int ferry__pq_oom(pq_dec *d, size_t bytes, const char *what) {
  const pq_job *j = d->j;
  return ferry__oom(d->err, -1, bytes,
                    "%s of file %s, column %s, row group %lld (page at offset "
                    "%lld), rank %d",
                    what, j->file, j->var, (long long)j->rgi,
                    (long long)(d->base + d->page_at), j->rank);
}

/* Little-endian output of the low elem bytes of v. */
static void put_le(unsigned char *o, uint64_t v, size_t elem) {
  for (size_t i = 0; i < elem; i++)
    o[i] = (unsigned char)(v >> (8 * i));
}

/* n PLAIN values of the physical type at p (bytes avail) to out. */
static int plain_values(pq_dec *d, const unsigned char *p, size_t avail,
                        size_t n, unsigned char *out) {
  if (d->phys == 0) {
    if ((n + 7) / 8 > avail)
      return -1;
    for (size_t i = 0; i < n; i++)
      out[i] = (unsigned char)(((unsigned)p[i >> 3] >> (i & 7)) & 1u);
    return 0;
  }
  if (n > avail / d->phys)
    return -1;
  if (d->phys == d->elem) {
    memcpy(out, p, n * d->elem);
    return 0;
  }
  for (size_t i = 0; i < n; i++) /* INT32 narrowed: little-endian low bytes */
    memcpy(out + i * d->elem, p + i * d->phys, d->elem);
  return 0;
}

int ferry__pq_dict_page(pq_dec *d, const unsigned char *body, size_t len,
                        const pq_page_hdr *h) {
  if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICT)
    return ferry__pq_fail(d, FERRY_ENOTSUP,
                          "a dictionary page not PLAIN-encoded");
  size_t n = (size_t)h->num_values; /* judged before its buffer exists */
  if (d->phys ? n > len / d->phys : n > len * 8)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a dictionary page holds fewer bytes than "
                          "its values need");
  size_t want = ferry__pq_grow((void **)&d->s->dict, &d->s->dict_cap,
                               (n ? n : 1) * d->elem);
  if (want)
    return ferry__pq_oom(d, want, "the dictionary");
  if (plain_values(d, body, len, n, d->s->dict) < 0)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a dictionary page holds fewer bytes than "
                          "its values need");
  d->dict_n = (int64_t)n;
  d->dict = d->s->dict;
  return 0;
}

static int dict_values(pq_dec *d, const unsigned char *p, size_t len, size_t n,
                       unsigned char *out) {
  const char *why = "truncated dictionary indices";
  if (d->dict_n < 0)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "dictionary-encoded values but no "
                          "dictionary page before them");
  if (len < 1 || p[0] > 32)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "bad bit width of dictionary indices");
  size_t want =
      ferry__pq_grow((void **)&d->s->idx, &d->s->idx_cap, (n ? n : 1) * 4);
  if (want)
    return ferry__pq_oom(d, want, "the dictionary indices");
  if (ferry__pq_rle(p + 1, len - 1, p[0], d->s->idx, n, &why) < 0)
    return ferry__pq_fail(d, FERRY_EFORMAT, why);
  const unsigned char *dict = d->dict;
  for (size_t i = 0; i < n; i++) {
    uint32_t k = d->s->idx[i];
    if ((int64_t)k >= d->dict_n) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "dictionary index %u out of range (the dictionary holds %lld "
               "values) at row %lld",
               k, (long long)d->dict_n,
               (long long)(d->j->row0 + (d->got + (int64_t)i) / d->j->rec->k));
      return ferry__pq_fail(d, FERRY_EFORMAT, msg);
    }
    memcpy(out + i * d->elem, dict + (size_t)k * d->elem, d->elem);
  }
  return 0;
}

static int bss_values(pq_dec *d, const unsigned char *p, size_t len, size_t n,
                      unsigned char *out) {
  size_t w = d->phys;
  if (w == 0 || w != d->elem || n > len / w)
    return -1;
  for (size_t i = 0; i < n; i++)
    for (size_t b = 0; b < w; b++)
      out[i * w + b] = p[b * n + i];
  return 0;
}

/* DELTA_BINARY_PACKED: blocks of miniblocks of bit-packed deltas; n values
 * of elem bytes (little-endian) to out, *used the bytes they took (the
 * header and every miniblock holding one of them). */
int ferry__pq_delta(const unsigned char *p, size_t len, size_t n, size_t elem,
                    unsigned char *out, size_t *used) {
  pq_bits b = {p, p + len};
  uint64_t bs, nmb, total, first;
  if (ferry__pq_uvarint(&b, &bs) < 0 || ferry__pq_uvarint(&b, &nmb) < 0 ||
      ferry__pq_uvarint(&b, &total) < 0 || ferry__pq_uvarint(&b, &first) < 0 ||
      nmb == 0 || bs == 0 || bs % nmb != 0 || (bs / nmb) % 8 != 0 ||
      bs > (1u << 20) || total < n)
    return -1;
  uint64_t per = bs / nmb, v = (first >> 1) ^ (0 - (first & 1));
  size_t done = 0;
  uint64_t buf[64];
  if (n > 0) {
    put_le(out, v, elem);
    done = 1;
  }
  while (done < n) {
    uint64_t zmin;
    if (ferry__pq_uvarint(&b, &zmin) < 0 || (uint64_t)(b.end - b.p) < nmb)
      return -1;
    uint64_t mind = (zmin >> 1) ^ (0 - (zmin & 1));
    const unsigned char *widths = b.p;
    b.p += nmb;
    for (uint64_t m = 0; m < nmb && done < n; m++) {
      int bw = widths[m];
      if (bw > 64)
        return -1;
      size_t mb_bytes = (size_t)(per * (uint64_t)bw / 8);
      size_t avail = (size_t)(b.end - b.p);
      for (uint64_t i = 0; i < per && done < n; i += 64) {
        size_t take = per - i < 64 ? (size_t)(per - i) : 64;
        if (take > n - done)
          take = n - done;
        size_t skip = (size_t)(i * (uint64_t)bw / 8);
        if (skip > avail ||
            ferry__pq_unpack(b.p + skip, avail - skip, bw, buf, NULL, take) < 0)
          return -1;
        for (size_t k = 0; k < take; k++, done++) {
          v += mind + buf[k];
          put_le(out + done * elem, v, elem);
        }
      }
      b.p += mb_bytes < avail ? mb_bytes : avail;
    }
  }
  if (used)
    *used = (size_t)(b.p - p);
  return 0;
}

static int rle_bool_values(pq_dec *d, const unsigned char *p, size_t len,
                           size_t n, unsigned char *out) {
  const char *why = "";
  if (len < 4 || le32(p) > len - 4)
    return -1;
  size_t want =
      ferry__pq_grow((void **)&d->s->idx, &d->s->idx_cap, (n ? n : 1) * 4);
  if (want)
    return ferry__pq_oom(d, want, "the boolean values");
  if (ferry__pq_rle(p + 4, le32(p), 1, d->s->idx, n, &why) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    out[i] = (unsigned char)d->s->idx[i];
  return 0;
}

int ferry__pq_values(pq_dec *d, int enc, const unsigned char *p, size_t len,
                     size_t n) {
  int32_t type = d->j->rec->type;
  if (n > (size_t)(d->want - d->got))
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "the column chunk holds more values than "
                          "its rows");
  unsigned char *out = d->j->out + (size_t)d->got * d->elem;
  int rc;
  char msg[200];
  switch (enc) {
  case PQ_ENC_PLAIN: rc = plain_values(d, p, len, n, out); break;
  case PQ_ENC_PLAIN_DICT:
  case PQ_ENC_RLE_DICT:
    if ((rc = dict_values(d, p, len, n, out)) < 0)
      return rc;
    break;
  case PQ_ENC_BYTE_STREAM_SPLIT: rc = bss_values(d, p, len, n, out); break;
  case PQ_ENC_DELTA_BINARY:
    if (type != PQ_INT32 && type != PQ_INT64)
      goto unsupported;
    rc = ferry__pq_delta(p, len, n, d->elem, out, NULL);
    break;
  case PQ_ENC_RLE:
    if (type != PQ_BOOLEAN)
      goto unsupported;
    rc = rle_bool_values(d, p, len, n, out);
    break;
  default: goto unsupported;
  }
  if (rc < 0) {
    snprintf(msg, sizeof msg, "truncated or corrupt %s values",
             ferry__pq_encoding_name(enc));
    return ferry__pq_fail(d, FERRY_EFORMAT, msg);
  }
  d->got += (int64_t)n;
  return 0;
unsupported:
  snprintf(msg, sizeof msg, "encoding %s (%d) of %s values is not supported",
           ferry__pq_encoding_name(enc), enc, ferry__pq_type_name(type));
  return ferry__pq_fail(d, FERRY_ENOTSUP, msg);
}

/* ---- Levels ---------------------------------------------------------- */

/* The levels are checked run by run, never stored: a definition level
 * below its maximum is a null (refused); a repetition level 0 must fall
 * exactly where a row starts, at values (d->got + i) % k == 0.  Nulls are
 * refused, so values and levels count alike and a page's first level is
 * value d->got: the check needs nothing of the pages before, and pages can
 * be decoded in any order on any thread.  An RLE run costs O(1), so a
 * column without nulls (a run of the maximum) costs nothing per value. */
typedef struct lvl {
  pq_dec *d;
  int rep;      /* 1: repetition levels, 0: definition levels */
  uint32_t max; /* the column's maximum level                 */
  int64_t k;    /* elements per row                           */
} lvl;

static int null_at(const lvl *L, size_t i) {
  char msg[400];
  const pq_job *j = L->d->j;
  int64_t row = (L->d->got + (int64_t)i) / L->k;
  const char *tail = j->rec->max_rep > 0 ? ""
                     : j->nofill         ? j->nofill
                                 : "null_fill=VALUE serves VALUE instead";
  snprintf(msg, sizeof msg,
           "a null%s at row %lld of the file (row %lld of the row group): "
           "ferry reads columns without nulls%s%s%s",
           j->rec->max_rep > 0 ? " (or an empty list)" : "",
           (long long)(j->row0 + row), (long long)(j->in_rg + row),
           tail[0] ? " (" : "", tail, tail[0] ? ")" : "");
  return ferry__pq_fail(L->d, FERRY_ENOTSUP, msg);
}

static int bad_row(const lvl *L, size_t i) {
  char msg[240];
  int64_t v = L->d->got + (int64_t)i, at = v % L->k;
  int64_t row = v / L->k - (at == 0);
  snprintf(msg, sizeof msg,
           "list row %lld of the file holds %s than the %lld elements of the "
           "rows before it",
           (long long)(L->d->j->row0 + row), at == 0 ? "more" : "fewer",
           (long long)L->k);
  return ferry__pq_fail(L->d, FERRY_ESHAPE, msg);
}

/* c levels of value v from level index i, which is element at of its row
 * (repetition levels). */
static int check_run(const lvl *L, size_t i, int64_t at, uint32_t v, size_t c) {
  if (v > L->max)
    return ferry__pq_fail(L->d, FERRY_EFORMAT, "a level above its maximum");
  if (!L->rep)
    return v < L->max ? null_at(L, i) : 0;
  if (v == 0) { /* every one starts a row: k == 1, or one level at a start */
    if (at != 0)
      return bad_row(L, i);
    return c > 1 && L->k > 1 ? bad_row(L, i + 1) : 0;
  }
  if (at == 0) /* continues a row where one must start */
    return bad_row(L, i);
  if ((int64_t)c > L->k - at) /* runs into the next row's start */
    return bad_row(L, i + (size_t)(L->k - at));
  return 0;
}

/* m bit-packed levels from index i; *at as in check_run, advanced. */
static int check_some(const lvl *L, size_t i, int64_t *at, const uint32_t *v,
                      size_t m) {
  for (size_t q = 0; q < m; q++)
    if (v[q] > L->max)
      return ferry__pq_fail(L->d, FERRY_EFORMAT, "a level above its maximum");
  if (!L->rep) {
    for (size_t q = 0; q < m; q++)
      if (v[q] < L->max)
        return null_at(L, i + q);
    return 0;
  }
  int64_t a = *at;
  for (size_t q = 0; q < m; q++) {
    if ((v[q] == 0) != (a == 0))
      return bad_row(L, i + q);
    if (++a == L->k)
      a = 0;
  }
  *at = a;
  return 0;
}

/* The common bit-packed cases a byte at a time: definition levels all at
 * the maximum (groups of 8 compared with the packed pattern), and
 * repetition levels of width 1 inside rows (bytes 0xff).  Returns the levels
 * done (a multiple of 8); the caller checks the rest one by one, which also
 * finds the place of any error. */
static size_t fast_groups(const lvl *L, const unsigned char *p, size_t avail,
                          int bw, size_t o, size_t take, int64_t *at) {
  if (!L->rep && bw >= 1 && bw <= 8) {
    unsigned char pat[8];
    uint64_t w = 0;
    for (int q = 0; q < 8; q++)
      w |= (uint64_t)L->max << (q * bw);
    for (int q = 0; q < bw; q++)
      pat[q] = (unsigned char)(w >> (8 * q));
    for (; o + 8 <= take && (o / 8 + 1) * (size_t)bw <= avail; o += 8)
      if (memcmp(p + o / 8 * (size_t)bw, pat, (size_t)bw) != 0)
        break;
    return o;
  }
  if (L->rep && bw == 1) {
    int64_t a = *at;
    for (; o + 8 <= take && o / 8 < avail; o += 8) {
      if (a < 1 || a + 8 > L->k || p[o / 8] != 0xff)
        break;
      a += 8;
      if (a == L->k)
        a = 0;
    }
    *at = a;
  }
  return o;
}

/* Walk n levels of the RLE/bit-packed hybrid at p (len bytes). */
static int walk_levels(const lvl *L, const unsigned char *p, size_t len,
                       size_t n) {
  int bw = ferry__pq_bit_width(L->max);
  pq_bits b = {p, p + len};
  size_t done = 0, vbytes = ((size_t)bw + 7) / 8;
  uint32_t buf[64];
  int64_t at = L->rep ? L->d->got % L->k : 0;
  while (done < n) {
    uint64_t h;
    if (ferry__pq_uvarint(&b, &h) < 0)
      goto trunc;
    size_t avail = (size_t)(b.end - b.p);
    if (h & 1) {
      uint64_t groups = h >> 1;
      if (groups == 0 || groups > avail)
        goto trunc;
      size_t cnt = (size_t)groups * 8, take = cnt < n - done ? cnt : n - done;
      size_t bytes = (size_t)groups * (size_t)bw;
      for (size_t o = 0; o < take;) {
        o = fast_groups(L, b.p, avail, bw, o, take, &at);
        if (o >= take)
          break;
        size_t m = take - o < 8 ? take - o : 8; /* one group, then fast */
        size_t skip = o / 8 * (size_t)bw;
        if (skip > avail ||
            ferry__pq_unpack(b.p + skip, avail - skip, bw, NULL, buf, m) < 0)
          goto trunc;
        if (check_some(L, done + o, &at, buf, m) < 0)
          return -1;
        o += m;
      }
      b.p += bytes < avail ? bytes : avail;
      done += take;
    } else {
      uint64_t run = h >> 1;
      if (avail < vbytes || run == 0)
        goto trunc;
      uint32_t v = 0;
      for (size_t i = 0; i < vbytes; i++)
        v |= (uint32_t)b.p[i] << (8 * i);
      b.p += vbytes;
      size_t take = run < n - done ? (size_t)run : n - done;
      if (check_run(L, done, at, v, take) < 0)
        return -1;
      if (L->rep)
        at = (at + (int64_t)(take % (size_t)L->k)) % L->k;
      done += take;
    }
  }
  return 0;
trunc:
  return ferry__pq_fail(L->d, FERRY_EFORMAT, "truncated or corrupt levels");
}

/* The definition levels of a page of a column that is not a list, with
 * null_fill: decoded into s->lv, nulls counted (d->nulls). */
static int fill_levels(pq_dec *d, const unsigned char *p, size_t len,
                       size_t n) {
  const char *why = "truncated or corrupt levels";
  uint32_t max = (uint32_t)d->j->rec->max_def;
  size_t want =
      ferry__pq_grow((void **)&d->s->lv, &d->s->lv_cap, (n ? n : 1) * 4);
  if (want)
    return ferry__pq_oom(d, want, "the levels");
  if (ferry__pq_rle(p, len, ferry__pq_bit_width(max), d->s->lv, n, &why) < 0)
    return ferry__pq_fail(d, FERRY_EFORMAT, why);
  d->nulls = 0;
  for (size_t i = 0; i < n; i++)
    d->nulls += d->s->lv[i] != max;
  return 0;
}

static int page_levels(pq_dec *d, const unsigned char *rp, size_t rl,
                       const unsigned char *dp, size_t dl, size_t n) {
  const pq_rec *r = d->j->rec;
  lvl L = {d, 0, (uint32_t)r->max_def, r->k};
  d->nulls = 0;
  if (r->max_def > 0 && d->j->fill && r->max_rep == 0)
    return fill_levels(d, dp, dl, n);
  if (r->max_def > 0 && walk_levels(&L, dp, dl, n) < 0)
    return -1;
  L.rep = 1;
  L.max = (uint32_t)r->max_rep;
  if (r->max_rep > 0 && walk_levels(&L, rp, rl, n) < 0)
    return -1;
  return 0;
}

/* The n rows of a page: values, or with nulls (null_fill) its n - nulls
 * values decoded to the front of its rows, then spread backwards over
 * them (a value never moves forward), nulls given the fill value. */
static int page_values(pq_dec *d, int enc, const unsigned char *p, size_t len,
                       size_t n) {
  if (d->nulls == 0)
    return ferry__pq_values(d, enc, p, len, n);
  if (d->nulls > n)
    return ferry__pq_fail(d, FERRY_EFORMAT, "more nulls than levels");
  int64_t got0 = d->got;
  size_t e = d->elem, v = n - d->nulls;
  if (ferry__pq_values(d, enc, p, len, v) < 0)
    return -1;
  unsigned char *o = d->j->out + (size_t)got0 * e;
  uint32_t max = (uint32_t)d->j->rec->max_def;
  for (size_t i = n; i-- > 0;) {
    if (d->s->lv[i] == max)
      memmove(o + i * e, o + --v * e, e);
    else
      memcpy(o + i * e, d->j->fill, e);
  }
  d->got = got0 + (int64_t)n;
  return 0;
}

int ferry__pq_v1_levels(pq_dec *d, const unsigned char **b, size_t *len,
                        const pq_page_hdr *h, const unsigned char *lv[2],
                        size_t ll[2]) {
  const pq_rec *r = d->j->rec;
  lv[0] = lv[1] = NULL;
  ll[0] = ll[1] = 0;
  for (int k = 0; k < 2; k++) { /* repetition levels first */
    int max = k == 0 ? r->max_rep : r->max_def;
    int enc = k == 0 ? h->rep_enc : h->def_enc;
    if (max == 0)
      continue;
    if (enc != PQ_ENC_RLE)
      return ferry__pq_fail(d, FERRY_ENOTSUP,
                            "levels not RLE-encoded (the deprecated "
                            "BIT_PACKED levels are not read)");
    if (*len < 4 || le32(*b) > *len - 4)
      return ferry__pq_fail(d, FERRY_EFORMAT, "levels longer than their page");
    lv[k] = *b + 4;
    ll[k] = le32(*b);
    *b += 4 + ll[k];
    *len -= 4 + ll[k];
  }
  return 0;
}

static int data_v1(pq_dec *d, const unsigned char *b, size_t len,
                   const pq_page_hdr *h) {
  const unsigned char *lv[2];
  size_t ll[2];
  if (ferry__pq_v1_levels(d, &b, &len, h, lv, ll) < 0)
    return -1;
  size_t n = (size_t)h->num_values;
  if (page_levels(d, lv[0], ll[0], lv[1], ll[1], n) < 0)
    return -1;
  return page_values(d, h->encoding, b, len, n);
}

/* The body of a page in s->page (decompressed), or straight from the
 * chunk when uncompressed. */
int ferry__pq_page_body(pq_dec *d, const unsigned char *in, size_t inlen,
                        size_t outlen, int codec, const unsigned char **body) {
  const char *why = "";
  if (codec == PQ_CODEC_NONE) {
    if (inlen != outlen)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "an uncompressed page's compressed and "
                            "uncompressed sizes differ");
    *body = in;
    return 0;
  }
  int kind = ferry__pq_codec_kind(codec);
  if (outlen > ferry__codec_max_decoded(kind, inlen))
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "the page header's uncompressed_page_size is "
                          "more than its codec can make of its bytes");
  size_t want = ferry__pq_grow((void **)&d->s->page, &d->s->page_cap,
                               outlen ? outlen : 1);
  if (want)
    return ferry__pq_oom(d, want, "a page");
  if (ferry__codec_decode_page(kind, in, inlen, d->s->page, outlen, &why) < 0) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s page: %s", ferry__pq_codec_name(codec), why);
    return ferry__pq_fail(d, FERRY_EFORMAT, msg);
  }
  *body = d->s->page;
  return 0;
}

static int data_v2(pq_dec *d, const unsigned char *in, const pq_page_hdr *h,
                   int codec) {
  size_t rl = (size_t)h->rep_len, dl = (size_t)h->def_len;
  size_t cs = (size_t)h->csize, us = (size_t)h->usize;
  if (rl > cs || dl > cs - rl || rl + dl > us)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a v2 page's level lengths exceed the "
                          "page");
  size_t n = (size_t)h->num_values;
  if (page_levels(d, in, rl, in + rl, dl, n) < 0)
    return -1;
  const unsigned char *body;
  int c = h->is_compressed ? codec : PQ_CODEC_NONE;
  if (ferry__pq_page_body(d, in + rl + dl, cs - rl - dl, us - rl - dl, c,
                          &body) < 0)
    return -1;
  return page_values(d, h->encoding, body, us - rl - dl, n);
}

static int one_page(pq_dec *d, const unsigned char *in, const pq_page_hdr *h) {
  const pq_rg_rec *g = d->j->rg;
  const unsigned char *body;
  if (h->type == PQ_PAGE_DATA_V2)
    return h->have_body ? data_v2(d, in, h, g->codec)
                        : ferry__pq_fail(d, FERRY_EFORMAT,
                                         "a v2 data page without its "
                                         "header");
  if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DICT)
    return 0; /* index pages and unknown kinds carry no values */
  if (!h->have_body)
    return ferry__pq_fail(d, FERRY_EFORMAT,
                          "a page without its data or dictionary "
                          "header");
  if (ferry__pq_page_body(d, in, (size_t)h->csize, (size_t)h->usize, g->codec,
                          &body) < 0)
    return -1;
  if (h->type == PQ_PAGE_DICT)
    return ferry__pq_dict_page(d, body, (size_t)h->usize, h);
  return data_v1(d, body, (size_t)h->usize, h);
}

/* One page found by the scan: where, its header, the value it starts at. */
typedef struct page_ref {
  size_t pos, hl;
  pq_page_hdr h;
  int64_t first;
} page_ref;

typedef struct scan {
  page_ref *pg;
  size_t n, cap;
} scan;

static int code_of(const ferry__err *err) {
  return err && err->code < 0 ? err->code : FERRY_EFORMAT;
}

void ferry__pq_dec_init(pq_dec *d, const pq_job *j, pq_scratch *s,
                        ferry__err *err) {
  memset(d, 0, sizeof *d);
  d->j = j;
  d->s = s;
  d->err = err;
  d->elem = ferry_dtype_size((ferry_dtype)j->rec->dtype);
  d->phys = j->rec->type == PQ_BOOLEAN ? 0
            : j->rec->type == PQ_FLBA  ? (size_t)j->rec->type_length
            : j->rec->type == PQ_INT32 || j->rec->type == PQ_FLOAT ? 4
                                                                   : 8;
  d->want = j->rg->num_rows * j->rec->k;
  d->dict_n = -1;
  d->base = j->rg->offset;
}

/* The dictionary page of a piece of a column chunk (split.c), read apart:
 * the pages before the chunk's first data page. */
static int dict_pages(pq_dec *d) {
  const pq_job *j = d->j;
  size_t size = (size_t)j->rg->dict_size, pos = 0;
  char msg[200];
  d->base = j->rg->dict_offset;
  while (pos < size) {
    pq_tr t;
    pq_page_hdr h;
    d->page_at = (int64_t)pos;
    ferry__pq_tr_init(&t, j->dict + pos, size - pos);
    if (ferry__pq_page_header(&t, &h) < 0) {
      snprintf(msg, sizeof msg, "corrupt page header: %s", t.why);
      return ferry__pq_fail(d, FERRY_EFORMAT, msg);
    }
    size_t hl = ferry__pq_tr_offset(&t);
    if ((size_t)h.csize > size - pos - hl)
      return ferry__pq_fail(
          d, FERRY_EFORMAT,
          "the dictionary page's compressed size runs past the "
          "bytes before the first data page");
    if ((uint32_t)h.usize > PQ_MAX_PAGE)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the dictionary page is too large");
    if (h.type == PQ_PAGE_DICT && one_page(d, j->dict + pos + hl, &h) < 0)
      return code_of(d->err);
    pos += hl + (size_t)h.csize;
  }
  d->base = j->rg->offset;
  d->page_at = 0;
  return 0;
}

/* Walk the page headers; decode the dictionary page on the way (into d's
 * scratch); list the data pages with the value each starts at. */
static int scan_pages(pq_dec *d, scan *sc) {
  const pq_job *j = d->j;
  size_t size = (size_t)j->rg->size, pos = 0;
  size_t ubound = j->rg->usize > 0 && j->rg->usize < PQ_MAX_PAGE
                      ? (size_t)j->rg->usize
                      : PQ_MAX_PAGE;
  int64_t vals = 0;
  char msg[200];
  if (j->dict && j->rg->dict_size > 0 && dict_pages(d) < 0)
    return code_of(d->err);
  while (pos < size && (vals < d->want || d->want == 0)) {
    pq_tr t;
    page_ref pr;
    d->page_at = (int64_t)pos;
    ferry__pq_tr_init(&t, j->chunk + pos, size - pos);
    if (ferry__pq_page_header(&t, &pr.h) < 0) {
      snprintf(msg, sizeof msg, "corrupt page header: %s", t.why);
      return ferry__pq_fail(d, FERRY_EFORMAT, msg);
    }
    pr.pos = pos;
    pr.hl = ferry__pq_tr_offset(&t);
    if ((size_t)pr.h.csize > size - pos - pr.hl) {
      snprintf(msg, sizeof msg,
               "the page's compressed size %d runs past its column chunk "
               "(%zu bytes left)",
               pr.h.csize, size - pos - pr.hl);
      return ferry__pq_fail(d, FERRY_EFORMAT, msg);
    }
    if ((size_t)pr.h.usize > ubound)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the page's uncompressed size is above "
                            "its column chunk's");
    pos += pr.hl + (size_t)pr.h.csize;
    if (pr.h.type == PQ_PAGE_DICT) {
      if (one_page(d, j->chunk + pr.pos + pr.hl, &pr.h) < 0)
        return code_of(d->err);
      continue;
    }
    if (pr.h.type != PQ_PAGE_DATA && pr.h.type != PQ_PAGE_DATA_V2)
      continue;
    if (pr.h.num_values > d->want - vals)
      return ferry__pq_fail(d, FERRY_EFORMAT,
                            "the column chunk's pages hold more "
                            "values than its rows");
    pr.first = vals;
    vals += pr.h.num_values;
    if (sc->n == sc->cap) {
      size_t c = sc->cap ? sc->cap * 2 : 64;
      page_ref *np = realloc(sc->pg, c * sizeof *np);
      if (!np)
        return ferry__pq_oom(d, c * sizeof *np, "the page list");
      sc->pg = np;
      sc->cap = c;
    }
    sc->pg[sc->n++] = pr;
    if (d->want == 0)
      break;
  }
  if (vals != d->want) {
    snprintf(msg, sizeof msg,
             "the column chunk holds %lld values; its %lld rows of %lld need "
             "%lld",
             (long long)vals, (long long)j->rg->num_rows, (long long)j->rec->k,
             (long long)d->want);
    return ferry__pq_fail(d, FERRY_EFORMAT, msg);
  }
  return 0;
}

/* Data pages [a, b) of sc in order, with scratch s; the dictionary is
 * proto's.  Stops at the first failing page (its error in err). */
static int pages_run(const pq_job *j, const scan *sc, const pq_dec *proto,
                     pq_scratch *s, size_t a, size_t b, ferry__err *err) {
  for (size_t i = a; i < b; i++) {
    const page_ref *pr = &sc->pg[i];
    pq_dec d;
    ferry__pq_dec_init(&d, j, s, err);
    d.dict = proto->dict;
    d.dict_n = proto->dict_n;
    d.got = pr->first;
    d.page_at = (int64_t)pr->pos;
    if (one_page(&d, j->chunk + pr->pos + pr->hl, &pr->h) < 0)
      return code_of(err);
  }
  return 0;
}

/* A run of pages decoded as one job on the decode pool, with a scratch
 * taken off the caller's free stack (or one of its own when none is free).
 * Each page writes only its own values' bytes of j->out. */
typedef struct prange {
  const pq_job *j;
  const scan *sc;
  const pq_dec *proto;
  const pq_lanes *ln;
  size_t a, b;
} prange;

static int prange_run(void *arg, ferry__err *err) {
  prange *r = arg;
  pq_scratch own, *s = r->ln->take ? r->ln->take(r->ln->ctx) : NULL;
  memset(&own, 0, sizeof own);
  int rc = pages_run(r->j, r->sc, r->proto, s ? s : &own, r->a, r->b, err);
  if (s)
    r->ln->give(r->ln->ctx, s);
  else
    ferry__pq_scratch_free(&own);
  return rc;
}

/* Pages in up to 4 runs a lane, submitted in page order, then waited for:
 * the pool keeps the lowest-numbered failing job's error and skips the
 * jobs after it, so the error is the first failing page's, as serially. */
static int pages_pool(const pq_job *j, const scan *sc, const pq_dec *proto,
                      pq_scratch *s, const pq_lanes *ln, ferry__err *err) {
  size_t lanes = (size_t)ferry__pool_lanes(ln->pool);
  size_t nr = sc->n < 4 * lanes ? sc->n : 4 * lanes;
  prange *r = calloc(nr, sizeof *r);
  if (!r) /* out of memory for the jobs: decode here, serially */
    return pages_run(j, sc, proto, s, 0, sc->n, err);
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < nr; k++) {
    r[k] = (prange){j, sc, proto, ln, sc->n * k / nr, sc->n * (k + 1) / nr};
    rc = ferry__pool_submit(ln->pool, prange_run, &r[k], err);
  }
  ferry__err e;
  memset(&e, 0, sizeof e);
  int wrc = ferry__pool_wait(ln->pool, &e);
  free(r);
  if (wrc < 0) { /* an earlier run's error comes first */
    if (err)
      *err = e;
    return wrc;
  }
  return rc;
}

int ferry__pq_decode_chunk(const pq_job *j, pq_scratch *s,
                           const pq_lanes *lanes, ferry__err *err) {
  pq_dec d;
  scan sc = {NULL, 0, 0};
  ferry__pq_dec_init(&d, j, s, err);
  int rc = scan_pages(&d, &sc);
  /* small chunks, or one page, are not worth a job each */
  if (rc == 0 && lanes && ferry__pool_lanes(lanes->pool) > 1 && sc.n > 1 &&
      j->rg->usize >= (1 << 20))
    rc = pages_pool(j, &sc, &d, s, lanes, err);
  else if (rc == 0)
    rc = pages_run(j, &sc, &d, s, 0, sc.n, err);
  free(sc.pg);
  return rc;
}

void ferry__pq_scratch_free(pq_scratch *s) {
  free(s->page);
  free(s->dict);
  free(s->idx);
  free(s->lv);
  free(s->rl);
  free(s->bo);
  free(s->len);
  memset(s, 0, sizeof *s);
}
