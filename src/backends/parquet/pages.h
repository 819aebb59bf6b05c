/*
 * backends/parquet/pages.h - private to pages.c and ragged.c: the state of
 * one column chunk's decode and the page-level pieces both use (page
 * headers, decompression, levels, PLAIN/dictionary/delta values).  pages.c
 * decodes fixed-size rows, ragged.c rows of varying length.
 */
#ifndef FERRY_PQ_PAGES_H
#define FERRY_PQ_PAGES_H

#include "backends/parquet/parquet.h"

#define PQ_MAX_PAGE (1u << 30)
/* Levels of one page decoded at once, at most (a ragged column's): 16 Mi
 * entries, 64 MiB of each kind; a page claiming more is refused. */
#define PQ_MAX_PAGE_LEVELS (1u << 24)

typedef struct pq_page_hdr {
  int32_t type, usize, csize;
  int32_t num_values, encoding, def_enc, rep_enc;
  int32_t num_nulls, num_rows, def_len, rep_len;
  int is_compressed, have_body;
} pq_page_hdr;

typedef struct pq_dec {
  const pq_job *j;
  pq_scratch *s;
  ferry__err *err;
  size_t phys;  /* bytes of one physical value (0: BOOLEAN bits)    */
  size_t elem;  /* bytes of one output element                     */
  int64_t want; /* values the rows need: num_rows * k (ragged: the
                 * offsets' count; INT64_MAX counting lengths)     */
  int64_t got;  /* values written                                   */
  int64_t dict_n;
  const unsigned char *dict; /* dict_n decoded values (a scratch's)   */
  int64_t page_at; /* chunk offset of the current page               */
  int64_t base;    /* file offset of the bytes page_at is relative to */
  size_t nulls;    /* nulls of the current page (null_fill), its levels
                    * in s->lv                                        */
  /* ragged (ragged.c) */
  int64_t row;  /* rows begun in the chunk, minus one (-1: none yet) */
  int64_t cur;  /* elements of the row being read                    */
  int64_t prev; /* DELTA_BYTE_ARRAY: bytes of the last value          */
} pq_dec;

typedef struct pq_bits {
  const unsigned char *p, *end;
} pq_bits;

int ferry__pq_uvarint(pq_bits *b, uint64_t *v);
/* n values of bw bits (LSB first) from p (avail bytes) to out64 or out32. */
int ferry__pq_unpack(const unsigned char *p, size_t avail, int bw,
                     uint64_t *out64, uint32_t *out32, size_t n);
/* The RLE/bit-packed hybrid: exactly n values of bw bits (bw <= 32). */
int ferry__pq_rle(const unsigned char *p, size_t len, int bw, uint32_t *out,
                  size_t n, const char **why);
int ferry__pq_bit_width(uint32_t max);
/* DELTA_BINARY_PACKED: n values of elem bytes to out (little-endian),
 * *used (may be NULL) the bytes they took; -1 when corrupt. */
int ferry__pq_delta(const unsigned char *p, size_t len, size_t n, size_t elem,
                    unsigned char *out, size_t *used);

int ferry__pq_page_header(pq_tr *t, pq_page_hdr *h);
/* Grow *p to need bytes: 0, or (out of memory) the bytes it could not
 * have. */
size_t ferry__pq_grow(void **p, size_t *cap, size_t need);
/* The error of d's page (file, column, row group, page offset, rank). */
int ferry__pq_fail(pq_dec *d, int code, const char *what);
int ferry__pq_oom(pq_dec *d, size_t bytes, const char *what);
void ferry__pq_dec_init(pq_dec *d, const pq_job *j, pq_scratch *s,
                        ferry__err *err);
/* A page's body: decompressed into s->page, or in place when
 * uncompressed. */
int ferry__pq_page_body(pq_dec *d, const unsigned char *in, size_t inlen,
                        size_t outlen, int codec, const unsigned char **body);
/* A dictionary page of numeric values into s->dict. */
int ferry__pq_dict_page(pq_dec *d, const unsigned char *body, size_t len,
                        const pq_page_hdr *h);
/* A data page v1's body b (*len bytes): its repetition and definition
 * levels (RLE, each after its u32 length) into lv/ll (NULL/0: the column
 * has none), *b and *len moved past them to the values. */
int ferry__pq_v1_levels(pq_dec *d, const unsigned char **b, size_t *len,
                        const pq_page_hdr *h, const unsigned char *lv[2],
                        size_t ll[2]);
/* n numeric values of encoding enc at p to j->out at value d->got. */
int ferry__pq_values(pq_dec *d, int enc, const unsigned char *p, size_t len,
                     size_t n);

#endif /* FERRY_PQ_PAGES_H */
