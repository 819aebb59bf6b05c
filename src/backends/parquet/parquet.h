/*
 * backends/parquet/parquet.h - private to the parquet backend's folder.
 * thrift.c decodes the Thrift compact protocol with bounds everywhere,
 * meta.c turns a footer into columns and row groups, pages.c decodes one column
 * chunk (pages, levels, encodings) into rows (its pages decompressed by
 * src/codecs/), describe.c probes and describes a part (rank 0), record.c
 * writes and reads the record every rank gets in the manifest, parquet.c is
 * the vtable and the io_* calls. Nothing outside this folder includes it.
 */
#ifndef FERRY_PARQUET_H
#define FERRY_PARQUET_H

#include "backends/backend.h"
#include "backends/toolkit.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Thrift compact protocol (thrift.c) ---- */

enum {
  PQ_T_STOP = 0,
  PQ_T_TRUE = 1,
  PQ_T_FALSE = 2,
  PQ_T_BYTE = 3,
  PQ_T_I16 = 4,
  PQ_T_I32 = 5,
  PQ_T_I64 = 6,
  PQ_T_DOUBLE = 7,
  PQ_T_BINARY = 8,
  PQ_T_LIST = 9,
  PQ_T_SET = 10,
  PQ_T_MAP = 11,
  PQ_T_STRUCT = 12
};

#define PQ_MAX_DEPTH 32

/* A cursor over bytes [p, end).  Every read checks the bytes left; the
 * first failure sets why (and every later read fails). */
typedef struct pq_tr {
  const unsigned char *p, *end, *start;
  int depth;
  const char *why; /* NULL while good */
  size_t oom;      /* why is out of memory: the bytes it could not have */
} pq_tr;

void ferry__pq_tr_init(pq_tr *t, const void *buf, size_t len);
/* Next field of the current struct: 1 with *id and *type, 0 at its end
 * (STOP), -1 on error. *last is the previous field id (start at 0). */
int ferry__pq_tr_field(pq_tr *t, int16_t *last, int16_t *id, int *type);
int ferry__pq_tr_skip(pq_tr *t, int type);
int ferry__pq_tr_i64(pq_tr *t, int type, int64_t *v);
int ferry__pq_tr_i32(pq_tr *t, int type, int32_t *v);
int ferry__pq_tr_bool(pq_tr *t, int type, int *v);
int ferry__pq_tr_binary(pq_tr *t, int type, const unsigned char **p, size_t *n);
/* A list header: element type and count (bounded by the bytes left). */
int ferry__pq_tr_list(pq_tr *t, int type, int *etype, int64_t *n);
/* Enter/leave a nested struct (depth bounded). */
int ferry__pq_tr_enter(pq_tr *t, int type);
void ferry__pq_tr_leave(pq_tr *t);
int ferry__pq_tr_fail(pq_tr *t, const char *why);
/* The same for an allocation of bytes that failed (why: out of memory). */
int ferry__pq_tr_oom(pq_tr *t, size_t bytes);
size_t ferry__pq_tr_offset(const pq_tr *t);

/* ---- Parquet enums ---- */

enum {
  PQ_BOOLEAN = 0,
  PQ_INT32 = 1,
  PQ_INT64 = 2,
  PQ_INT96 = 3,
  PQ_FLOAT = 4,
  PQ_DOUBLE = 5,
  PQ_BYTE_ARRAY = 6,
  PQ_FLBA = 7
};
enum {
  PQ_ENC_PLAIN = 0,
  PQ_ENC_PLAIN_DICT = 2,
  PQ_ENC_RLE = 3,
  PQ_ENC_BIT_PACKED = 4,
  PQ_ENC_DELTA_BINARY = 5,
  PQ_ENC_DELTA_LENGTH = 6,
  PQ_ENC_DELTA_BYTE_ARRAY = 7,
  PQ_ENC_RLE_DICT = 8,
  PQ_ENC_BYTE_STREAM_SPLIT = 9
};
enum {
  PQ_CODEC_NONE = 0,
  PQ_CODEC_SNAPPY = 1,
  PQ_CODEC_GZIP = 2,
  PQ_CODEC_LZO = 3,
  PQ_CODEC_BROTLI = 4,
  PQ_CODEC_LZ4 = 5,
  PQ_CODEC_ZSTD = 6,
  PQ_CODEC_LZ4_RAW = 7
};
enum {
  PQ_PAGE_DATA = 0,
  PQ_PAGE_INDEX = 1,
  PQ_PAGE_DICT = 2,
  PQ_PAGE_DATA_V2 = 3
};

const char *ferry__pq_codec_name(int codec);
const char *ferry__pq_encoding_name(int enc);
const char *ferry__pq_type_name(int type);
/* 1 when this build decodes codec. */
int ferry__pq_codec_available(int codec);
/* The kind of src/codecs/codec.h that decodes the pages of Parquet codec
 * (FERRY__CODEC_SNAPPY ...); FERRY__CODEC_NONE for UNCOMPRESSED and for the
 * codecs ferry has no decoder for (LZO, BROTLI, unknown). */
int ferry__pq_codec_kind(int codec);

/* ---- Footer (meta.c) ---- */

#define PQ_MAX_FOOTER (64u << 20) /* bound on the footer we read    */
#define PQ_MAX_COLUMNS 100000
#define PQ_MAX_ROW_GROUPS 10000000

/* One column chunk of one row group, as the footer gives it. */
typedef struct pq_chunk {
  int64_t offset; /* first page (dictionary page when there is one) */
  int64_t size;   /* total_compressed_size                          */
  int64_t usize;  /* total_uncompressed_size                        */
  int64_t num_values;
  int64_t null_count; /* -1: no statistics */
  int32_t codec;
  uint32_t encodings; /* bit e: encoding e is listed */
  int32_t type;
  int64_t data_off; /* first data page (data_page_offset)        */
  int64_t oi_off;   /* its OffsetIndex, -1: none                  */
  int32_t oi_len;   /* the OffsetIndex's length in bytes          */
} pq_chunk;

/* One leaf column of the schema. */
typedef struct pq_col {
  char *name; /* dotted path: "a", "v.list.element" */
  char *top;  /* name of its top-level field        */
  int32_t type, type_length, converted, logical, int_bits, int_signed;
  int max_def, max_rep;
  int is_list;  /* 3-level LIST of a primitive element */
  int elem_opt; /* a LIST's element is optional (its level max_def)    */
  int repeated_leaf;
  int nested; /* inside a group that is not a LIST   */
} pq_col;

typedef struct pq_rowgroup {
  int64_t num_rows;
  pq_chunk *chunks; /* [ncols] */
} pq_rowgroup;

typedef struct pq_file {
  int64_t size, num_rows;
  int64_t data_end; /* where the footer starts: column chunks lie in
                     * [4, data_end) */
  int ncols;
  pq_col *cols;
  int64_t nrg;
  pq_rowgroup *rg;
  char *created_by;
  char *arrow_schema; /* the ARROW:schema key-value, NULL: none */
  size_t arrow_schema_len;
} pq_file;

/* Read and decode the footer of path; messages name the file. */
int ferry__pq_file_read(const char *path, pq_file *f, ferry__err *err);
/* Decode a footer already in memory (the fuzz/unit test entry point). */
int ferry__pq_footer_parse(const unsigned char *buf, size_t len,
                           int64_t file_size, const char *path, pq_file *f,
                           ferry__err *err);
void ferry__pq_file_free(pq_file *f);

/* Judge the column chunks of leaf column i of f by the file's own sizes
 * (rank 0, before anything is allocated for them): 0, or FERRY_EFORMAT
 * naming file, column, row group, field and offset. */
int ferry__pq_check_chunks(const pq_file *f, int i, const char *file,
                           ferry__err *err);

/* The ferry dtype of a column, or -1 with *why saying why not. */
int ferry__pq_col_dtype(const pq_col *c, ferry_dtype *dt, const char **why);

/* ---- The ARROW:schema hint (arrow.c) ---- */

/* The top-level FixedSizeList fields of an Arrow schema: name and size. */
typedef struct pq_arrow_hint {
  int n;
  char **names;
  int32_t *k;
} pq_arrow_hint;

/* Decode the ARROW:schema value (base64 of an IPC Schema message, a
 * flatbuffer), bounded; -1 with *why (the hint is then not used). */
int ferry__pq_arrow_hint_parse(const char *b64, size_t len, pq_arrow_hint *h,
                               const char **why);
/* listSize of the FixedSizeList field name, 0: not one. */
int64_t ferry__pq_arrow_hint_k(const pq_arrow_hint *h, const char *name);
void ferry__pq_arrow_hint_free(pq_arrow_hint *h);

/* ---- The record: what every rank needs of one variable ---- */

#define PQ_REC_MAGIC 0x33525150u /* "PQR3" */
#define PQ_REC_VERSION 3         /* the backend's record_version */

/* pq_rec.ragged: a variable whose rows are of different lengths
 * (docs/ragged.md), its offsets in the manifest (ferry__part.roff). */
enum {
  PQ_FIXED = 0,
  PQ_RAGGED_LIST = 1, /* a LIST of a numeric element: a row is a list */
  PQ_RAGGED_BYTES = 2 /* a BYTE_ARRAY column: a row is its bytes      */
};

/* A row group, or a piece of one split at page boundaries (split.c): its
 * rows, the byte range of its pages, and for a piece of a column chunk
 * that has a dictionary page, that page's byte range (read apart). */
typedef struct pq_rg_rec {
  int64_t first_row, num_rows;
  int64_t offset, size, usize, num_values; /* usize: the whole chunk's */
  int32_t file;                            /* index into files */
  int32_t codec;
  int64_t rgi;                    /* row group index in its file   */
  int64_t dict_offset, dict_size; /* dict_size 0: none (or inside) */
} pq_rg_rec;

typedef struct pq_rec {
  int32_t type, type_length, dtype, max_def, max_rep, is_list;
  int64_t k; /* elements per row: 1, or the list length */
  int32_t nfiles;
  char **files;   /* as found by rank 0; [nfiles]         */
  int64_t *fsize; /* their sizes when rank 0 read them     */
  int64_t nrg;
  pq_rg_rec *rg;   /* [nrg], first_row increasing          */
  int32_t ragged;  /* PQ_FIXED, PQ_RAGGED_LIST, PQ_RAGGED_BYTES       */
  int32_t rep_def; /* a ragged list: the definition level at which its
                    * list holds an element (below: empty, or null below
                    * rep_def - 1)                                    */
} pq_rec;

/* The record (record.c): 0, or FERRY_ENOMEM with b->p NULL and b->len the
 * bytes it could not have (for the caller's message).  put writes the
 * host's byte order, put_order the one named (the tests' other order);
 * get reads either (the magic says which). */
int ferry__pq_rec_put(const pq_rec *r, ferry__blob *b);
int ferry__pq_rec_put_order(const pq_rec *r, int big_endian, ferry__blob *b);
int ferry__pq_rec_get(const ferry__blob *b, pq_rec *r, const char *where,
                      ferry__err *err);
void ferry__pq_rec_free(pq_rec *r);

/* The vtable's probe and describe (describe.c): 1 when path looks like a
 * .parquet file (suffix or PAR1 magic) or a directory holding some. */
int ferry__pq_probe(const char *path);
int ferry__pq_describe(const char *path, const ferry_options *opts,
                       ferry__part_desc *out, ferry__err *err);

/* ---- Column chunk decoding (pages.c) ---- */

/* What a chunk decode needs and where it writes.  Scratch buffers are
 * owned by the caller (one set per worker) and grown as needed. */
typedef struct pq_scratch {
  unsigned char *page;
  size_t page_cap;
  unsigned char *dict;
  size_t dict_cap;
  uint32_t *idx;
  size_t idx_cap;
  uint32_t *lv; /* definition levels of a page with nulls (null_fill) */
  size_t lv_cap;
  uint32_t *rl; /* repetition levels of a page (ragged lists)         */
  size_t rl_cap;
  uint64_t *bo; /* a byte-array dictionary: offset, length per entry   */
  size_t bo_cap;
  int64_t *len; /* DELTA byte arrays' lengths (and prefix lengths)     */
  size_t len_cap;
} pq_scratch;

typedef struct pq_job {
  const pq_rec *rec;
  const pq_rg_rec *rg;
  const unsigned char *chunk; /* the column chunk's bytes, rg->size */
  unsigned char *out;         /* rg->num_rows * k * elem bytes       */
  const char *file, *var;
  int rank;
  int64_t rgi;               /* row group index in its file   */
  int64_t row0;              /* file row of the chunk's (piece's) first row */
  int64_t in_rg;             /* rows of its row group before it (pieces)    */
  const unsigned char *dict; /* rg->dict_size bytes, or NULL   */
  const unsigned char *fill; /* one element served for a null (null_fill;
                              * columns that are not lists), NULL: a null
                              * is an error */
  const char *nofill;        /* why null_fill does not apply, or NULL */
  /* A ragged variable (rec->ragged, ragged.c): out receives the values of
   * the chunk's rows one after the other; roff (the part's offsets from
   * the chunk's first row, num_rows + 1 of them) says how many each row
   * holds, and a row that holds another count is an error.  With lens set
   * instead (rank 0 at open; out and roff NULL) only the lengths are
   * decoded, one per row, into lens. */
  const int64_t *roff;
  int64_t *lens;
  int null_empty; /* 1: a null list or byte array is served empty (null_fill
                   * given); 0: it is an error naming the row */
} pq_job;

/* Where a chunk's pages may be decoded: the I/O state's decode pool
 * (NULL: inline) and its free stack of scratches (take returns NULL when
 * none is free; the job then uses one of its own). */
typedef struct pq_lanes {
  ferry__pool *pool;
  pq_scratch *(*take)(void *ctx);
  void (*give)(void *ctx, pq_scratch *s);
  void *ctx;
} pq_lanes;

/* Decode one column chunk into j->out.  s: the scratch of the scan and
 * the dictionary.  With lanes (NULL: serially, on s) whose pool has more
 * than one lane and a chunk of 1 MiB or more, its data pages are decoded
 * as runs of pages, jobs on the pool (the caller's thread among the
 * lanes); ferry__pq_decode_chunk waits for them, so the pool must have no
 * other jobs pending.  Errors name file, column, row group and page: the
 * first failing page's, as serially. */
int ferry__pq_decode_chunk(const pq_job *j, pq_scratch *s,
                           const pq_lanes *lanes, ferry__err *err);
/* The same for a ragged variable (ragged.c): its pages in order, on the
 * calling thread. */
int ferry__pq_decode_ragged(const pq_job *j, pq_scratch *s, ferry__err *err);
/* Rank 0 at open: the offsets (*out, malloc'd, rows + 1) of ragged record
 * r's rows, every chunk of it read and decoded (ragged.c).  fill: the
 * null_fill value of its dtype (NULL: none fits, a null element is an
 * error, nofill saying why); null_empty as pq_job's.  An error names file,
 * column, row group and row; FERRY_EIO and FERRY_ENOMEM are the reads', any
 * other code says the column cannot be served as it is. */
int ferry__pq_ragged_offsets(const pq_rec *r, const char *var,
                             const unsigned char *fill, const char *nofill,
                             int null_empty, int64_t rows, int64_t **out,
                             ferry__err *err);
void ferry__pq_scratch_free(pq_scratch *s);

/* The page header at p (len bytes): kind, compressed size, values, rows
 * (data page v2; -1 otherwise) and the header's length.  -1 with *why. */
typedef struct pq_page_info {
  int32_t type, csize, num_values, num_rows;
  size_t hlen;
} pq_page_info;
int ferry__pq_page_info(const unsigned char *p, size_t len, pq_page_info *out,
                        const char **why);

/* ---- Splitting large row groups at page boundaries (split.c) ---- */

/* The data pages of one column chunk: file offset and first row (row
 * group relative), both increasing, the first at row 0. */
typedef struct pq_pages {
  int64_t *offset, *first_row;
  int64_t n;
  int from_index; /* 1: the OffsetIndex, 0: a scan of the page headers */
} pq_pages;

#define PQ_MAX_INDEX (16u << 20) /* bound on one OffsetIndex          */
#define PQ_MAX_SCAN_PAGES 65536  /* bound on a header scan, per chunk */
#define PQ_SCAN_BUDGET 1000000   /* page headers read per part, at most */
#define PQ_MAX_DICT (64u << 20)  /* bound on a piece's dictionary bytes */

/* Decode an OffsetIndex (thrift) into out (data pages only); -1 with why.
 * The fuzz and unit tests' entry point. */
int ferry__pq_offset_index_parse(const unsigned char *buf, size_t len,
                                 pq_pages *out, const char **why);
/* The pages of chunk ch (nrows rows of k values) of the open file fd: from
 * its OffsetIndex when it has one, else by reading its page headers
 * (bounded by PQ_MAX_SCAN_PAGES, and by *budget, the headers this part may
 * still have read, decremented).  0 with out->n == 0 when neither gives
 * usable row boundaries; never an error (the chunk is then read whole). */
int ferry__pq_chunk_pages(int fd, const pq_chunk *ch, int64_t nrows, int64_t k,
                          pq_pages *out, int64_t *budget);
void ferry__pq_pages_free(pq_pages *p);
/* Rows per piece for the record r (row groups as read from the footers)
 * whose row groups have the pages pg[nrg] (n == 0: not split): the largest
 * divisor q of the row-group size whose multiples all fall on page starts
 * and whose q rows take at most target bytes (else the smallest above
 * it); 0 when no such q below the row-group size exists. */
int64_t ferry__pq_split_rows(const pq_rec *r, const pq_pages *pg,
                             size_t row_bytes, size_t target);
/* Replace r's row groups by pieces of q rows (split where pg[g].n > 0). */
int ferry__pq_split_apply(pq_rec *r, const pq_pages *pg, int64_t q);
/* The bytes ferry__pq_split_apply allocates (its out-of-memory message). */
size_t ferry__pq_split_bytes(const pq_rec *r, const pq_pages *pg, int64_t q);

#endif /* FERRY_PARQUET_H */
