/*
 * meta.c - a Parquet file's footer: the "PAR1" magic at both ends, the
 * footer length (bounded by the file and by PQ_MAX_FOOTER), and the
 * FileMetaData it holds (schema, row groups, column chunks), decoded with
 * thrift.c.  The schema tree is flattened into leaf columns with their
 * definition and repetition levels; a column is either a top-level
 * primitive, a 3-level (or legacy 2-level) LIST of a primitive, or nested
 * in something ferry does not read.  Only the fields a reader needs are
 * kept; every other field is skipped by structure.  Sizes and offsets are
 * checked against the file where a column is used (parquet.c calls
 * ferry__pq_check_chunks for its variables), so that a column nobody
 * selects never makes an open fail.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/parquet/parquet.h"
#include "codecs/codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ferry__pq_codec_name(int codec) {
  static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP",
                                      "LZO",          "BROTLI", "LZ4",
                                      "ZSTD",         "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? names[codec] : "unknown codec";
}

int ferry__pq_codec_kind(int codec) {
  switch (codec) {
  case PQ_CODEC_SNAPPY: return FERRY__CODEC_SNAPPY;
  case PQ_CODEC_GZIP: return FERRY__CODEC_GZIP;
  case PQ_CODEC_ZSTD: return FERRY__CODEC_ZSTD;
  case PQ_CODEC_LZ4: return FERRY__CODEC_LZ4_HADOOP;
  case PQ_CODEC_LZ4_RAW: return FERRY__CODEC_LZ4_RAW;
  default: return FERRY__CODEC_NONE;
  }
}

int ferry__pq_codec_available(int codec) {
  int kind = ferry__pq_codec_kind(codec);
  return codec == PQ_CODEC_NONE ||
         (kind != FERRY__CODEC_NONE && ferry__codec_available(kind));
}

const char *ferry__pq_encoding_name(int enc) {
  static const char *const names[] = {"PLAIN",
                                      "GROUP_VAR_INT",
                                      "PLAIN_DICTIONARY",
                                      "RLE",
                                      "BIT_PACKED",
                                      "DELTA_BINARY_PACKED",
                                      "DELTA_LENGTH_BYTE_ARRAY",
                                      "DELTA_BYTE_ARRAY",
                                      "RLE_DICTIONARY",
                                      "BYTE_STREAM_SPLIT"};
  return enc >= 0 && enc < 10 ? names[enc] : "unknown encoding";
}

const char *ferry__pq_type_name(int type) {
  static const char *const names[] = {
      "BOOLEAN", "INT32",  "INT64",      "INT96",
      "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type < 8 ? names[type] : "unknown type";
}

/* ---- Schema ----------------------------------------------------------- */

typedef struct pq_se {
  int32_t type, type_length, repetition, num_children, converted, logical;
  int32_t int_bits, int_signed;
  char *name;
} pq_se;

enum { REQUIRED = 0, OPTIONAL = 1, REPEATED = 2 };
enum { CONV_LIST = 3, LOGICAL_LIST = 3, LOGICAL_INTEGER = 10 };

static int parse_int_type(pq_tr *t, int ftype, pq_se *se) {
  int16_t last = 0, id;
  int ty, r;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 1)
      ferry__pq_tr_i32(t, ty, &se->int_bits);
    else if (id == 2)
      ferry__pq_tr_bool(t, ty, &se->int_signed);
    else
      ferry__pq_tr_skip(t, ty);
  }
  ferry__pq_tr_leave(t);
  return r < 0 || t->why ? -1 : 0;
}

/* LogicalType is a union: the id of its one set field says which. */
static int parse_logical(pq_tr *t, int ftype, pq_se *se) {
  int16_t last = 0, id;
  int ty, r;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    se->logical = id;
    if (id == LOGICAL_INTEGER)
      parse_int_type(t, ty, se);
    else
      ferry__pq_tr_skip(t, ty);
  }
  ferry__pq_tr_leave(t);
  return r < 0 || t->why ? -1 : 0;
}

static int parse_se(pq_tr *t, int ftype, pq_se *se) {
  int16_t last = 0, id;
  int ty, r;
  const unsigned char *s;
  size_t n;
  memset(se, 0, sizeof *se);
  se->type = -1;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    switch (id) {
    case 1: ferry__pq_tr_i32(t, ty, &se->type); break;
    case 2: ferry__pq_tr_i32(t, ty, &se->type_length); break;
    case 3: ferry__pq_tr_i32(t, ty, &se->repetition); break;
    case 4:
      if (ferry__pq_tr_binary(t, ty, &s, &n) == 0 && !se->name) {
        if (memchr(s, '\0', n))
          return ferry__pq_tr_fail(t, "a schema name holds a NUL byte");
        if ((se->name = malloc(n + 1)) == NULL)
          return ferry__pq_tr_oom(t, n + 1);
        memcpy(se->name, s, n);
        se->name[n] = '\0';
      }
      break;
    case 5: ferry__pq_tr_i32(t, ty, &se->num_children); break;
    case 6:
      ferry__pq_tr_i32(t, ty, &se->converted);
      /* stored + 1 (0: absent); INT32_MAX stays (no signed overflow) */
      if (se->converted < INT32_MAX)
        se->converted++;
      break;
    case 10: parse_logical(t, ty, se); break;
    default: ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (!se->name)
    return ferry__pq_tr_fail(t, "a schema element has no name");
  if (se->num_children < 0 || se->repetition < 0 || se->repetition > 2)
    return ferry__pq_tr_fail(t, "a schema element has a bad child count or "
                                "repetition");
  return 0;
}

/* converted is stored +1 so that 0 means "none". */
#define CONV(c) ((c) + 1)

typedef struct walk {
  pq_se *se;
  int64_t nse, next;
  pq_col *cols;
  int ncols;
  pq_tr *t;
} walk;

static char *join_dot(const char *a, const char *b) {
  size_t na = a ? strlen(a) : 0, nb = strlen(b);
  char *s = malloc(na + nb + 2);
  if (!s)
    return NULL;
  if (na) {
    memcpy(s, a, na);
    s[na] = '.';
    memcpy(s + na + 1, b, nb + 1);
  } else {
    memcpy(s, b, nb + 1);
  }
  return s;
}

/* Is the group at index gi a LIST holding one primitive, 3-level
 * (G(LIST) > repeated group > leaf) or 2-level (G(LIST) > repeated leaf)? */
static int is_list_group(const walk *w, int64_t gi) {
  const pq_se *g = &w->se[gi];
  if (!(g->converted == CONV(CONV_LIST) || g->logical == LOGICAL_LIST) ||
      g->num_children != 1 || gi + 1 >= w->nse)
    return 0;
  const pq_se *r = &w->se[gi + 1];
  if (r->repetition != REPEATED)
    return 0;
  if (r->num_children == 0)
    return 1;
  return r->num_children == 1 && gi + 2 < w->nse &&
         w->se[gi + 2].num_children == 0 &&
         w->se[gi + 2].repetition != REPEATED;
}

static int add_leaf(walk *w, const pq_se *se, const char *path, const char *top,
                    int def, int rep, int depth, int list) {
  if (w->ncols >= PQ_MAX_COLUMNS)
    return ferry__pq_tr_fail(w->t, "more than 100000 columns");
  pq_col *c = &w->cols[w->ncols];
  memset(c, 0, sizeof *c);
  c->name = strdup(path);
  c->top = strdup(top);
  if (!c->name || !c->top) {
    size_t want = !c->name ? strlen(path) + 1 : strlen(top) + 1;
    free(c->name);
    free(c->top);
    return ferry__pq_tr_oom(w->t, want);
  }
  w->ncols++;
  c->type = se->type;
  c->type_length = se->type_length;
  c->converted = se->converted;
  c->logical = se->logical;
  c->int_bits = se->int_bits;
  c->int_signed = se->int_signed;
  c->max_def = def;
  c->max_rep = rep;
  c->is_list = list;
  c->repeated_leaf = depth == 1 && se->repetition == REPEATED;
  c->elem_opt = list && se->repetition == OPTIONAL;
  c->nested = depth > 1 && !list;
  return 0;
}

/* Walk the children of the element just consumed, depth-first. */
static int walk_children(walk *w, int32_t nchildren, const char *prefix,
                         const char *top, int def, int rep, int depth,
                         int list) {
  if (depth > PQ_MAX_DEPTH)
    return ferry__pq_tr_fail(w->t, "schema nested too deep");
  if (nchildren > w->nse - w->next)
    return ferry__pq_tr_fail(w->t, "schema child count past the schema's end");
  for (int32_t i = 0; i < nchildren; i++) {
    if (w->next >= w->nse) /* nested children used up the elements */
      return ferry__pq_tr_fail(w->t, "schema child count past the schema's "
                                     "end");
    int64_t me = w->next++;
    const pq_se *se = &w->se[me];
    int d = def + (se->repetition != REQUIRED);
    int r = rep + (se->repetition == REPEATED);
    char *path = join_dot(prefix, se->name);
    if (!path)
      return ferry__pq_tr_oom(w->t, (prefix ? strlen(prefix) : 0) +
                                        strlen(se->name) + 2);
    const char *tp = depth == 1 ? se->name : top;
    int lst =
        list || (depth == 1 && se->num_children > 0 && is_list_group(w, me));
    int rc = se->num_children == 0 ? add_leaf(w, se, path, tp, d, r, depth, lst)
                                   : walk_children(w, se->num_children, path,
                                                   tp, d, r, depth + 1, lst);
    free(path);
    if (rc < 0)
      return -1;
  }
  return 0;
}

static int parse_schema(pq_tr *t, int ftype, pq_file *f) {
  int et;
  int64_t n;
  int rc = 0;
  if (ferry__pq_tr_list(t, ftype, &et, &n) < 0)
    return -1;
  if (n < 1)
    return ferry__pq_tr_fail(t, "the schema is empty");
  pq_se *se = calloc((size_t)n, sizeof *se);
  walk w = {se, n, 1, NULL, 0, t};
  if (!se)
    return ferry__pq_tr_oom(t, (size_t)n * sizeof *se);
  for (int64_t i = 0; rc == 0 && i < n; i++)
    rc = parse_se(t, et, &se[i]);
  if (rc == 0 && !(w.cols = calloc((size_t)n, sizeof *w.cols)))
    rc = ferry__pq_tr_oom(t, (size_t)n * sizeof *w.cols);
  if (rc == 0)
    rc = walk_children(&w, se[0].num_children, NULL, NULL, 0, 0, 1, 0);
  if (rc == 0 && w.next != n)
    rc = ferry__pq_tr_fail(t, "schema elements left after the tree");
  for (int64_t i = 0; i < n; i++)
    free(se[i].name);
  free(se);
  f->cols = w.cols;
  f->ncols = w.ncols;
  return rc;
}

/* ---- Row groups --------------------------------------------------------- */

static int parse_stats(pq_tr *t, int ftype, pq_chunk *c) {
  int16_t last = 0, id;
  int ty, r;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 3)
      ferry__pq_tr_i64(t, ty, &c->null_count);
    else
      ferry__pq_tr_skip(t, ty);
  }
  ferry__pq_tr_leave(t);
  return r < 0 || t->why ? -1 : 0;
}

static int parse_encodings(pq_tr *t, int ftype, pq_chunk *c) {
  int et;
  int64_t n;
  if (ferry__pq_tr_list(t, ftype, &et, &n) < 0)
    return -1;
  for (int64_t i = 0; i < n; i++) {
    int32_t e = 0;
    if (ferry__pq_tr_i32(t, et, &e) < 0)
      return -1;
    if (e >= 0 && e < 32)
      c->encodings |= 1u << e;
  }
  return 0;
}

static int parse_colmeta(pq_tr *t, int ftype, pq_chunk *c) {
  int16_t last = 0, id;
  int ty, r;
  int64_t data_off = -1, dict_off = -1;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    switch (id) {
    case 1: ferry__pq_tr_i32(t, ty, &c->type); break;
    case 2: parse_encodings(t, ty, c); break;
    case 4: ferry__pq_tr_i32(t, ty, &c->codec); break;
    case 5: ferry__pq_tr_i64(t, ty, &c->num_values); break;
    case 6: ferry__pq_tr_i64(t, ty, &c->usize); break;
    case 7: ferry__pq_tr_i64(t, ty, &c->size); break;
    case 9: ferry__pq_tr_i64(t, ty, &data_off); break;
    case 11: ferry__pq_tr_i64(t, ty, &dict_off); break;
    case 12: parse_stats(t, ty, c); break;
    default: ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  /* Some writers set dictionary_page_offset to 0 with no dictionary. */
  c->offset = dict_off > 0 && (data_off < 0 || dict_off < data_off) ? dict_off
                                                                    : data_off;
  c->data_off = data_off;
  return 0;
}

static int parse_colchunk(pq_tr *t, int ftype, pq_chunk *c) {
  int16_t last = 0, id;
  int ty, r, have = 0;
  const unsigned char *s;
  size_t n;
  memset(c, 0, sizeof *c);
  c->null_count = -1;
  c->offset = -1;
  c->type = -1;
  c->oi_off = -1;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 4) {
      ferry__pq_tr_i64(t, ty, &c->oi_off);
    } else if (id == 5) {
      ferry__pq_tr_i32(t, ty, &c->oi_len);
    } else if (id == 1) {
      if (ferry__pq_tr_binary(t, ty, &s, &n) == 0 && n > 0)
        return ferry__pq_tr_fail(t, "a column chunk lives in another file "
                                    "(file_path), which ferry does not read");
    } else if (id == 3) {
      have = parse_colmeta(t, ty, c) == 0;
    } else {
      ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (!have)
    return ferry__pq_tr_fail(t, "a column chunk has no ColumnMetaData");
  return 0;
}

static int parse_rowgroup(pq_tr *t, int ftype, pq_rowgroup *g, int ncols) {
  int16_t last = 0, id;
  int ty, r, et;
  int64_t n = -1;
  g->num_rows = -1;
  if (ferry__pq_tr_enter(t, ftype) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 1 && !g->chunks) {
      if (ferry__pq_tr_list(t, ty, &et, &n) < 0)
        break;
      if (n != ncols)
        return ferry__pq_tr_fail(t,
                                 "a row group's column count differs from the "
                                 "schema's");
      if (!(g->chunks = calloc((size_t)(n ? n : 1), sizeof *g->chunks)))
        return ferry__pq_tr_oom(t, (size_t)(n ? n : 1) * sizeof *g->chunks);
      for (int64_t i = 0; i < n; i++)
        if (parse_colchunk(t, et, &g->chunks[i]) < 0)
          break;
    } else if (id == 3) {
      ferry__pq_tr_i64(t, ty, &g->num_rows);
    } else {
      ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (!g->chunks || g->num_rows < 0)
    return ferry__pq_tr_fail(t,
                             "a row group lacks its columns or its row count");
  return 0;
}

static int parse_rowgroups(pq_tr *t, int ftype, pq_file *f) {
  int et;
  int64_t n;
  if (ferry__pq_tr_list(t, ftype, &et, &n) < 0)
    return -1;
  if (n > PQ_MAX_ROW_GROUPS)
    return ferry__pq_tr_fail(t, "too many row groups");
  if (!(f->rg = calloc((size_t)(n ? n : 1), sizeof *f->rg)))
    return ferry__pq_tr_oom(t, (size_t)(n ? n : 1) * sizeof *f->rg);
  f->nrg = n;
  for (int64_t i = 0; i < n; i++)
    if (parse_rowgroup(t, et, &f->rg[i], f->ncols) < 0)
      return -1;
  return 0;
}

/* key_value_metadata: keep the value of ARROW:schema. */
static int parse_kv(pq_tr *t, int ftype, pq_file *f) {
  int et;
  int64_t n;
  if (ferry__pq_tr_list(t, ftype, &et, &n) < 0)
    return -1;
  for (int64_t i = 0; i < n; i++) {
    int16_t last = 0, id;
    int ty, r;
    const unsigned char *k = NULL, *v = NULL, *s;
    size_t kn = 0, vn = 0, sn;
    if (ferry__pq_tr_enter(t, et) < 0)
      return -1;
    while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
      if ((id == 1 || id == 2) && ferry__pq_tr_binary(t, ty, &s, &sn) == 0) {
        if (id == 1) {
          k = s;
          kn = sn;
        } else {
          v = s;
          vn = sn;
        }
      } else if (id != 1 && id != 2) {
        ferry__pq_tr_skip(t, ty);
      }
    }
    ferry__pq_tr_leave(t);
    if (r < 0 || t->why)
      return -1;
    if (k && v && kn == 12 && memcmp(k, "ARROW:schema", 12) == 0 &&
        !f->arrow_schema) {
      if (!(f->arrow_schema = malloc(vn + 1)))
        return ferry__pq_tr_oom(t, vn + 1);
      memcpy(f->arrow_schema, v, vn);
      f->arrow_schema[vn] = '\0';
      f->arrow_schema_len = vn;
    }
  }
  return 0;
}

static int parse_filemeta(pq_tr *t, pq_file *f) {
  int16_t last = 0, id;
  int ty, r, have_schema = 0, have_rg = 0;
  const unsigned char *s;
  size_t n;
  f->num_rows = -1;
  if (ferry__pq_tr_enter(t, PQ_T_STRUCT) < 0)
    return -1;
  while ((r = ferry__pq_tr_field(t, &last, &id, &ty)) == 1) {
    if (id == 2 && !have_schema) {
      have_schema = 1;
      parse_schema(t, ty, f);
    } else if (id == 3) {
      ferry__pq_tr_i64(t, ty, &f->num_rows);
    } else if (id == 5) {
      parse_kv(t, ty, f);
    } else if (id == 4 && !have_rg) {
      if (!have_schema)
        return ferry__pq_tr_fail(t, "row groups before the schema");
      have_rg = 1;
      parse_rowgroups(t, ty, f);
    } else if (id == 6 && ferry__pq_tr_binary(t, ty, &s, &n) == 0 &&
               !f->created_by) {
      if ((f->created_by = malloc(n + 1)) != NULL) {
        memcpy(f->created_by, s, n);
        f->created_by[n] = '\0';
        for (size_t i = 0; i < n; i++)
          if ((unsigned char)f->created_by[i] < 32)
            f->created_by[i] = '?';
      }
    } else if (id != 6) {
      ferry__pq_tr_skip(t, ty);
    }
  }
  ferry__pq_tr_leave(t);
  if (r < 0 || t->why)
    return -1;
  if (!have_schema || !have_rg || f->num_rows < 0)
    return ferry__pq_tr_fail(t,
                             "FileMetaData lacks its schema, row groups or row "
                             "count");
  int64_t sum = 0;
  for (int64_t i = 0; i < f->nrg; i++) {
    if (f->rg[i].num_rows > INT64_MAX - sum)
      return ferry__pq_tr_fail(t, "row counts overflow");
    sum += f->rg[i].num_rows;
  }
  if (sum != f->num_rows)
    return ferry__pq_tr_fail(t,
                             "the row groups' rows do not add up to num_rows");
  return 0;
}

/* An OffsetIndex is optional (split.c reads it to cut large row groups at
 * page starts): one whose stated place is not inside the file's data is
 * forgotten, so that its length is never allocated. */
static void drop_bad_indexes(pq_file *f) {
  for (int64_t g = 0; g < f->nrg; g++)
    for (int i = 0; i < f->ncols; i++) {
      pq_chunk *c = &f->rg[g].chunks[i];
      if (c->oi_off >= 0 &&
          (c->oi_off < 4 || c->oi_len <= 0 || c->oi_off > f->data_end ||
           c->oi_len > f->data_end - c->oi_off))
        c->oi_off = -1;
    }
}

void ferry__pq_file_free(pq_file *f) {
  if (!f)
    return;
  for (int i = 0; f->cols && i < f->ncols; i++) {
    free(f->cols[i].name);
    free(f->cols[i].top);
  }
  free(f->cols);
  for (int64_t i = 0; f->rg && i < f->nrg; i++)
    free(f->rg[i].chunks);
  free(f->rg);
  free(f->created_by);
  free(f->arrow_schema);
  memset(f, 0, sizeof *f);
}

int ferry__pq_footer_parse(const unsigned char *buf, size_t len,
                           int64_t file_size, const char *path, pq_file *f,
                           ferry__err *err) {
  pq_tr t;
  memset(f, 0, sizeof *f);
  f->size = file_size;
  f->data_end = file_size - 8 - (int64_t)len;
  ferry__pq_tr_init(&t, buf, len);
  if (parse_filemeta(&t, f) < 0) {
    int64_t at =
        file_size - 8 - (int64_t)len + (int64_t)ferry__pq_tr_offset(&t);
    int rc =
        t.oom
            ? ferry__oom(err, -1, t.oom,
                         "the Parquet footer of %s (footer byte %zu, "
                         "file offset %lld)",
                         path, ferry__pq_tr_offset(&t), (long long)at)
            : ferry__seterr(err, FERRY_EFORMAT,
                            "%s: corrupt Parquet footer: %s (footer byte %zu, "
                            "file offset %lld)",
                            path, t.why ? t.why : "malformed",
                            ferry__pq_tr_offset(&t), (long long)at);
    ferry__pq_file_free(f);
    return rc;
  }
  drop_bad_indexes(f);
  return 0;
}

static int read_tail(int fd, const char *path, int64_t size,
                     unsigned char **out, size_t *outlen, ferry__err *err) {
  unsigned char tail[8], head[4];
  size_t got = 0;
  if (size < 12)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: not a Parquet file: %lld bytes, fewer than the "
                         "12 of the two magics and the footer length",
                         path, (long long)size);
  if (ferry__pread_full(fd, head, 4, 0, &got) < 0 || got != 4 ||
      ferry__pread_full(fd, tail, 8, size - 8, &got) < 0 || got != 8)
    return ferry__seterr(err, FERRY_EIO, "%s: read failed at offset 0 or %lld",
                         path, (long long)(size - 8));
  if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: not a Parquet file: no PAR1 magic at the %s "
                         "(offset %lld)",
                         path, memcmp(head, "PAR1", 4) ? "start" : "end",
                         memcmp(head, "PAR1", 4) ? 0LL : (long long)(size - 4));
  uint32_t flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 |
                  (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
  if ((int64_t)flen > size - 12 || flen > PQ_MAX_FOOTER || flen == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: Parquet footer length %u at offset %lld is past "
                         "the file's %lld bytes (truncated file?)%s",
                         path, flen, (long long)(size - 8), (long long)size,
                         flen > PQ_MAX_FOOTER ? " or above ferry's 64 MiB "
                                                "bound"
                                              : "");
  unsigned char *buf = malloc(flen);
  if (!buf)
    return ferry__oom(err, -1, flen, "the Parquet footer of %s", path);
  if (ferry__pread_full(fd, buf, flen, size - 8 - flen, &got) < 0 ||
      got != flen) {
    free(buf);
    return ferry__seterr(err, FERRY_EIO,
                         "%s: short read of the footer at offset %lld", path,
                         (long long)(size - 8 - flen));
  }
  *out = buf;
  *outlen = flen;
  return 0;
}

int ferry__pq_file_read(const char *path, pq_file *f, ferry__err *err) {
  const char *kind = NULL;
  memset(f, 0, sizeof *f);
  int fd = ferry__open_regular(path, &kind);
  if (fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT, "%s is %s, not a Parquet file",
                         path, kind ? kind : "not a regular file");
  if (fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                         strerror(errno));
  struct stat st;
  unsigned char *buf = NULL;
  size_t len = 0;
  int rc;
  if (fstat(fd, &st) != 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                       strerror(errno));
  else
    rc = read_tail(fd, path, (int64_t)st.st_size, &buf, &len, err);
  close(fd);
  if (rc == 0)
    rc = ferry__pq_footer_parse(buf, len, (int64_t)st.st_size, path, f, err);
  free(buf);
  return rc;
}

/* The column chunks of column i of f, judged by the file's own sizes
 * before anything is allocated or read for them: each lies in the file's
 * data (between the leading magic and the footer), and they do not add up
 * to more bytes than the data holds -- column chunks never share bytes, so
 * row groups that claim more (DuckDB's broken_structure.parquet: three row
 * groups of 2^31 - 1 rows, each pointing at the same 49 bytes) are a
 * corrupt footer, not 48 GiB of rows to allocate (issue 30). */
int ferry__pq_check_chunks(const pq_file *f, int i, const char *file,
                           ferry__err *err) {
  const pq_col *col = &f->cols[i];
  int64_t data = f->data_end - 4, sum = 0;
  for (int64_t g = 0; g < f->nrg; g++) {
    const pq_chunk *ch = &f->rg[g].chunks[i];
    if (ch->type != col->type || ch->usize < 0 || ch->num_values < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: column %s, row group %lld: the column chunk's "
                           "type, total_uncompressed_size or num_values is "
                           "corrupt (%s, %lld, %lld)",
                           file, col->name, (long long)g,
                           ferry__pq_type_name(ch->type), (long long)ch->usize,
                           (long long)ch->num_values);
    if (ch->offset < 4 || ch->size < 0 || ch->offset > f->data_end ||
        ch->size > f->data_end - ch->offset)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: column %s, row group %lld: the column chunk at "
                           "offset %lld of %lld bytes (total_compressed_size) "
                           "lies outside the file's data, offsets 4 to %lld "
                           "(the footer follows): the footer is corrupt",
                           file, col->name, (long long)g, (long long)ch->offset,
                           (long long)ch->size, (long long)f->data_end);
    sum += ch->size; /* no overflow: each is at most data */
    if (sum > data)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: column %s: the column chunks of row groups 0 "
                           "to %lld add up to %lld bytes "
                           "(total_compressed_size), more than the file's %lld "
                           "bytes of data: they overlap, the footer is corrupt "
                           "(row group %lld's chunk: offset %lld, %lld bytes, "
                           "%lld rows)",
                           file, col->name, (long long)g, (long long)sum,
                           (long long)data, (long long)g, (long long)ch->offset,
                           (long long)ch->size, (long long)f->rg[g].num_rows);
  }
  return 0;
}

/* ---- Types -------------------------------------------------------------- */

static int int_dtype(int bits, int is_signed, ferry_dtype *dt) {
  switch (bits) {
  case 8: *dt = is_signed ? FERRY_INT8 : FERRY_UINT8; return 0;
  case 16: *dt = is_signed ? FERRY_INT16 : FERRY_UINT16; return 0;
  case 32: *dt = is_signed ? FERRY_INT32 : FERRY_UINT32; return 0;
  case 64: *dt = is_signed ? FERRY_INT64 : FERRY_UINT64; return 0;
  default: return -1;
  }
}

/* Converted types UINT_8..INT_64 are 11..18 (stored +1). */
static int conv_int(int conv, int *bits, int *sgn) {
  static const int b[] = {8, 16, 32, 64, 8, 16, 32, 64};
  int c = conv - 1;
  if (c < 11 || c > 18)
    return -1;
  *bits = b[c - 11];
  *sgn = c >= 15;
  return 0;
}

int ferry__pq_col_dtype(const pq_col *c, ferry_dtype *dt, const char **why) {
  int bits = 0, sgn = 1;
  if (c->type == PQ_BYTE_ARRAY) {
    *why = "byte arrays (strings, binary) are not a ferry dtype";
    return -1;
  }
  if (c->type == PQ_INT96) {
    *why = "INT96 timestamps are not a ferry dtype";
    return -1;
  }
  if (c->logical == LOGICAL_INTEGER) {
    bits = c->int_bits;
    sgn = c->int_signed;
  } else if (c->converted && conv_int(c->converted, &bits, &sgn) < 0) {
    *why = "its logical type (date, time, decimal...) is not a ferry "
           "dtype";
    return -1;
  } else if (c->logical && c->logical != 15) {
    *why = "its logical type (date, time, timestamp, decimal...) is not a "
           "ferry dtype";
    return -1;
  }
  switch (c->type) {
  case PQ_BOOLEAN: *dt = FERRY_BOOL; return 0;
  case PQ_INT32:
    if (int_dtype(bits ? bits : 32, sgn, dt) == 0 && bits <= 32)
      return 0;
    break;
  case PQ_INT64:
    if (int_dtype(bits ? bits : 64, sgn, dt) == 0 && (!bits || bits == 64))
      return 0;
    break;
  case PQ_FLOAT:
    if (!bits) {
      *dt = FERRY_FLOAT32;
      return 0;
    }
    break;
  case PQ_DOUBLE:
    if (!bits) {
      *dt = FERRY_FLOAT64;
      return 0;
    }
    break;
  case PQ_FLBA:
    if (c->logical == 15 && c->type_length == 2) {
      *dt = FERRY_FLOAT16;
      return 0;
    }
    *why = "fixed-length byte arrays are read only as FLOAT16";
    return -1;
  default: break;
  }
  *why = "its physical and logical types do not map to a ferry dtype";
  return -1;
}
