/*
 * mds_format.c - the parsers of MosaicML Streaming's MDS format
 * (backends/mds.h): index.json, and a shard's header, configuration and
 * per-sample column sizes.  Written from the format as Streaming's
 * MDSWriter and encodings.py produce it (decision 0060); nothing here
 * trusts a length it read: each is bounded by the sample, the shard and
 * the limits of mds.h before it is used.
 *
 * The shard scan reads through a window (1 MiB when samples are small, so
 * the whole shard is read in large sequential pieces; 4 KiB when they are
 * large, so only their heads are read), since a sample's column sizes, a
 * dynamic ndarray's shape prefix and a str_int's digits lie at the start
 * of each sample or inside it, interleaved with the other columns.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/mds.h"
#include "backends/toolkit.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int ferry__mds_mem_read(void *ctx, int64_t off, void *buf, size_t n,
                        size_t *got) {
  const ferry__mds_mem *m = ctx;
  *got = 0;
  if (off < 0 || (uint64_t)off >= m->n)
    return 0;
  size_t k = m->n - (size_t)off < n ? m->n - (size_t)off : n;
  memcpy(buf, m->p + off, k);
  *got = k;
  return 0;
}

/* ---- The window ------------------------------------------------------- */

typedef struct win {
  const ferry__mds_src *src;
  unsigned char *buf;
  size_t cap, step; /* bytes allocated; bytes read per refill */
  int64_t at;       /* the window is [at, at + have) */
  size_t have;
} win;

/* Bytes [off, off + n) of the shard (inside it: the caller checked), at
 * *p; what names them in a message. */
static int win_get(win *w, int64_t off, size_t n, const unsigned char **p,
                   const char *what, ferry__err *err) {
  if (off >= w->at && (uint64_t)(off - w->at) + n <= w->have) {
    *p = w->buf + (off - w->at);
    return 0;
  }
  size_t want = n > w->step ? n : w->step;
  if ((uint64_t)want > (uint64_t)(w->src->size - off))
    want = (size_t)(w->src->size - off);
  if (want > w->cap) {
    unsigned char *b = realloc(w->buf, want);
    if (!b)
      return ferry__oom(err, -1, want, "reading %s of MDS shard %s", what,
                        w->src->path);
    w->buf = b;
    w->cap = want;
  }
  size_t got = 0;
  int e = w->src->read(w->src->ctx, off, w->buf, want, &got);
  w->at = off;
  w->have = e ? 0 : got;
  if (e)
    return ferry__seterr(err, ferry__errno_code(e),
                         "MDS shard %s, offset %lld: reading %s: %s",
                         w->src->path, (long long)off, what, strerror(e));
  if (got < n)
    return ferry__seterr(err, FERRY_EIO,
                         "MDS shard %s, offset %lld: reading %s: %zu of %zu "
                         "bytes (the file shrank?)",
                         w->src->path, (long long)off, what, got, n);
  *p = w->buf;
  return 0;
}

/* ---- Encodings -------------------------------------------------------- */

static const struct {
  const char *name;
  ferry_dtype dt;
} scalar_names[] = {
    {"uint8", FERRY_UINT8},     {"uint16", FERRY_UINT16},
    {"uint32", FERRY_UINT32},   {"uint64", FERRY_UINT64},
    {"int8", FERRY_INT8},       {"int16", FERRY_INT16},
    {"int32", FERRY_INT32},     {"int64", FERRY_INT64},
    {"float16", FERRY_FLOAT16}, {"float32", FERRY_FLOAT32},
    {"float64", FERRY_FLOAT64},
};

static int dtype_of_name(const char *s, size_t n, ferry_dtype *dt) {
  for (size_t i = 0; i < sizeof scalar_names / sizeof *scalar_names; i++)
    if (strlen(scalar_names[i].name) == n &&
        memcmp(scalar_names[i].name, s, n) == 0) {
      *dt = scalar_names[i].dt;
      return 1;
    }
  return 0;
}

/* NDArray's dtype byte (encodings.py's _int2value_dtype). */
static int dtype_of_code(unsigned c, ferry_dtype *dt) {
  static const struct {
    unsigned code;
    ferry_dtype dt;
  } t[] = {{8, FERRY_UINT8},  {9, FERRY_INT8},     {16, FERRY_UINT16},
           {17, FERRY_INT16}, {18, FERRY_FLOAT16}, {32, FERRY_UINT32},
           {33, FERRY_INT32}, {34, FERRY_FLOAT32}, {64, FERRY_UINT64},
           {65, FERRY_INT64}, {66, FERRY_FLOAT64}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (t[i].code == c) {
      *dt = t[i].dt;
      return 1;
    }
  return 0;
}

/* Encodings served as their stored bytes. */
static const char *const bytes_names[] = {
    "bytes",      "str",         "json",       "jpeg",      "png",
    "pil",        "str_decimal", "jpeg_array", "jpegarray", "list[pil]",
    "list[jpeg]", "list[png]",   NULL};

/* "ndarray", "ndarray:DTYPE" or "ndarray:DTYPE:D0,D1,...": 0, or -1 with
 * c->why set. */
static int parse_ndarray(const char *cfg, ferry__mds_col *c) {
  c->why = "an ndarray encoding ferry cannot parse (ndarray, ndarray:DTYPE "
           "or ndarray:DTYPE:D0,D1,...)";
  if (!*cfg) {
    c->kind = FERRY__MDS_DYNARRAY;
    c->dtype_byte = 1;
    c->dtype = FERRY_UINT8;
    return 0;
  }
  const char *colon = strchr(cfg, ':');
  size_t dn = colon ? (size_t)(colon - cfg) : strlen(cfg);
  if (!dtype_of_name(cfg, dn, &c->dtype))
    return -1;
  if (!colon) {
    c->kind = FERRY__MDS_DYNARRAY;
    return 0;
  }
  const char *s = colon + 1;
  int64_t elems = 1;
  c->ndim = 0;
  for (;;) {
    if (*s < '0' || *s > '9')
      return -1;
    int64_t d = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
      if (d > (INT64_MAX - 9) / 10)
        return -1;
      d = d * 10 + (*s - '0');
    }
    if (d < 1 || c->ndim >= FERRY_MAX_DIMS || elems > INT32_MAX / d) {
      c->why = "an ndarray whose fixed shape has a dimension of 0, more than "
               "8 dimensions or more than 2^31 elements";
      return -1;
    }
    elems *= d;
    c->shape[c->ndim++] = d;
    if (!*s)
      break;
    if (*s++ != ',')
      return -1;
  }
  c->kind = FERRY__MDS_ARRAY;
  c->fixed = elems * (int64_t)ferry_dtype_size(c->dtype);
  return 0;
}

/* The column's kind from its encoding (kind 0 and why when not served). */
static void parse_encoding(ferry__mds_col *c) {
  const char *e = c->enc;
  c->fixed = -1;
  for (int i = 0; bytes_names[i]; i++)
    if (strcmp(e, bytes_names[i]) == 0) {
      c->kind = FERRY__MDS_BYTES;
      c->dtype = FERRY_UINT8;
      return;
    }
  if (strcmp(e, "int") == 0 || dtype_of_name(e, strlen(e), &c->dtype)) {
    if (strcmp(e, "int") == 0)
      c->dtype = FERRY_INT64;
    c->kind = FERRY__MDS_SCALAR;
    c->fixed = (int64_t)ferry_dtype_size(c->dtype);
    return;
  }
  if (strcmp(e, "str_int") == 0 || strcmp(e, "str_float") == 0) {
    c->kind = e[4] == 'i' ? FERRY__MDS_STRINT : FERRY__MDS_STRFLOAT;
    c->dtype = e[4] == 'i' ? FERRY_INT64 : FERRY_FLOAT64;
    return;
  }
  if (strncmp(e, "ndarray", 7) == 0 && (!e[7] || e[7] == ':')) {
    if (parse_ndarray(e[7] ? e + 8 : "", c) != 0) {
      c->kind = 0;
      c->fixed = -1;
    }
    return;
  }
  c->why = strcmp(e, "pkl") == 0
               ? "pickle: loading it runs arbitrary code, and its values are "
                 "Python objects, not arrays"
               : "an encoding ferry does not know";
}

/* ---- The shard's configuration ---------------------------------------- */

static int config_fail(const ferry__mds_src *src, int64_t at, const char *why,
                       ferry__err *err) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "MDS shard %s, offset %lld: its configuration (JSON "
                       "after the offsets): %s",
                       src->path, (long long)at, why);
}

static int parse_config(const ferry__mds_src *src, const unsigned char *text,
                        size_t len, int64_t at, ferry__mds_shard *s,
                        ferry__err *err) {
  json_error_t jerr;
  json_t *j =
      json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES, &jerr);
  int rc = 0;
  if (!j || !json_is_object(j)) {
    char why[240];
    snprintf(why, sizeof why, "not a JSON object (%s)",
             j ? "another JSON value" : jerr.text);
    json_decref(j);
    return config_fail(src, at, why, err);
  }
  json_t *names = json_object_get(j, "column_names");
  json_t *encs = json_object_get(j, "column_encodings");
  json_t *sizes = json_object_get(j, "column_sizes");
  json_t *fmt = json_object_get(j, "format");
  json_t *ver = json_object_get(j, "version");
  size_t n = json_array_size(names);
  if (fmt &&
      (!json_is_string(fmt) || strcmp(json_string_value(fmt), "mds") != 0))
    rc = config_fail(src, at, "its format is not \"mds\"", err);
  else if (ver && (!json_is_integer(ver) || json_integer_value(ver) != 2))
    rc = config_fail(src, at, "its version is not 2", err);
  else if (!json_is_array(names) || !json_is_array(encs) ||
           !json_is_array(sizes) || n == 0 || n > FERRY__MDS_MAX_COLS ||
           json_array_size(encs) != n || json_array_size(sizes) != n)
    rc = config_fail(src, at,
                     "column_names, column_encodings and column_sizes are "
                     "not three lists of the same length (1 to 1024)",
                     err);
  if (!rc && !(s->cols = calloc(n, sizeof *s->cols)))
    rc = ferry__oom(err, -1, n * sizeof *s->cols, "the columns of MDS shard %s",
                    src->path);
  for (size_t c = 0; !rc && c < n; c++) {
    ferry__mds_col *col = &s->cols[c];
    json_t *nm = json_array_get(names, c), *en = json_array_get(encs, c);
    json_t *sz = json_array_get(sizes, c);
    s->ncols = (int)c + 1;
    if (!json_is_string(nm) || !json_is_string(en) || !*json_string_value(nm) ||
        strlen(json_string_value(nm)) > 255 ||
        strlen(json_string_value(en)) > 255) {
      rc = config_fail(src, at,
                       "a column name or encoding that is not a string of 1 "
                       "to 255 bytes",
                       err);
      break;
    }
    col->name = strdup(json_string_value(nm));
    col->enc = strdup(json_string_value(en));
    if (!col->name || !col->enc) {
      rc = ferry__oom(err, -1, 512, "the columns of MDS shard %s", src->path);
      break;
    }
    for (size_t k = 0; k < c; k++)
      if (strcmp(s->cols[k].name, col->name) == 0)
        rc = config_fail(src, at, "two columns of the same name", err);
    parse_encoding(col);
    /* column_sizes must say what the encoding implies: a fixed size, or
     * null for a size per sample */
    if (!rc && col->kind &&
        (col->fixed < 0
             ? !json_is_null(sz)
             : !json_is_integer(sz) || json_integer_value(sz) != col->fixed)) {
      char why[400];
      snprintf(why, sizeof why,
               "column %s (encoding %s): column_sizes gives %s where the "
               "encoding's size is %lld (-1: a size per sample)",
               col->name, col->enc,
               json_is_null(sz)      ? "null"
               : json_is_integer(sz) ? "another size"
                                     : "a non-integer",
               (long long)col->fixed);
      rc = config_fail(src, at, why, err);
    }
    /* a column not served still moves the cursor: its size must be
     * known, from column_sizes */
    if (!rc && !col->kind && !json_is_null(sz)) {
      if (!json_is_integer(sz) || json_integer_value(sz) < 0 ||
          json_integer_value(sz) > INT32_MAX)
        rc = config_fail(src, at, "a column size that is not null or 0..2^31",
                         err);
      else
        col->fixed = json_integer_value(sz);
    }
  }
  json_decref(j);
  return rc;
}

/* ---- The samples ------------------------------------------------------ */

static int sample_fail(const ferry__mds_src *src, int64_t i,
                       const ferry__mds_col *c, int64_t off, const char *why,
                       ferry__err *err) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "MDS shard %s, sample %lld, column %s, offset %lld: %s",
                       src->path, (long long)i, c ? c->name : "-",
                       (long long)off, why);
}

/* A dynamic ndarray's prefix at off (sz bytes in all): *skip the prefix's
 * bytes, *vbytes the values'.  Sample i must have the number of dimensions
 * of the shard's first; c->inner_same is cleared when its dimensions after
 * the first differ from the first sample's. */
static int ndarray_prefix(win *w, ferry__mds_col *c, int64_t i, int64_t off,
                          int64_t sz, int64_t *skip, int64_t *vbytes,
                          ferry__err *err) {
  const ferry__mds_src *src = w->src;
  const unsigned char *p;
  int64_t head = c->dtype_byte ? 2 : 1;
  if (sz < head)
    return sample_fail(src, i, c, off, "an ndarray shorter than its prefix",
                       err);
  int rc = win_get(w, off, (size_t)head, &p, "an ndarray's prefix", err);
  if (rc)
    return rc;
  if (c->dtype_byte) {
    ferry_dtype dt;
    if (!dtype_of_code(p[0], &dt))
      return sample_fail(src, i, c, off,
                         "an ndarray dtype code ferry does "
                         "not know",
                         err);
    if (c->dtype_known && dt != c->dtype)
      return sample_fail(src, i, c, off,
                         "an ndarray of another dtype than the column's "
                         "first sample: ferry serves one dtype per column",
                         err);
    c->dtype = dt;
    c->dtype_known = 1;
  }
  unsigned b = p[head - 1];
  int ndim = (int)(b >> 2), sdt = (int)(b & 3);
  int64_t sbytes = (int64_t)1 << sdt;
  if (ndim < 1)
    return sample_fail(src, i, c, off, "an ndarray of 0 dimensions", err);
  if (c->dyn_ndim && ndim != c->dyn_ndim) {
    char why[200];
    snprintf(why, sizeof why,
             "an ndarray of %d dimensions where the shard's sample 0 has %d "
             "(offset %lld): ferry serves one number of dimensions per "
             "column",
             ndim, c->dyn_ndim, (long long)c->dyn_at);
    return sample_fail(src, i, c, off, why, err);
  }
  if (sz - head < ndim * sbytes)
    return sample_fail(src, i, c, off, "an ndarray shorter than its shape",
                       err);
  if ((rc = win_get(w, off + head, (size_t)(ndim * sbytes), &p,
                    "an ndarray's shape", err)))
    return rc;
  uint64_t elems = 1, limit = (uint64_t)(sz - head - ndim * sbytes);
  int64_t dims[FERRY_MAX_DIMS] = {0}; /* the first FERRY_MAX_DIMS */
  for (int k = 0; k < ndim; k++) {
    uint64_t d = 0;
    for (int b8 = (int)sbytes - 1; b8 >= 0; b8--)
      d = (d << 8) | p[k * sbytes + b8];
    if (d == 0 || d > limit || elems > limit / d)
      return sample_fail(src, i, c, off,
                         "an ndarray shape whose size does not fit its "
                         "bytes",
                         err);
    elems *= d;
    if (k < FERRY_MAX_DIMS)
      dims[k] = (int64_t)d;
  }
  *skip = head + ndim * sbytes;
  *vbytes = (int64_t)elems * (int64_t)ferry_dtype_size(c->dtype);
  if (*vbytes != sz - *skip)
    return sample_fail(src, i, c, off,
                       "an ndarray whose values are not its shape's size", err);
  /* the dimensions after the first: the row's inner shape while every
   * sample has the same ones */
  if (!c->dyn_ndim) {
    c->dyn_ndim = ndim;
    c->dyn_at = off;
    c->inner_same = ndim - 1 <= FERRY__MDS_MAX_INNER;
    for (int k = 1; c->inner_same && k < ndim; k++)
      c->inner[k - 1] = dims[k];
  } else {
    for (int k = 1; c->inner_same && k < ndim; k++)
      c->inner_same = c->inner[k - 1] == dims[k];
  }
  return 0;
}

/* str_int / str_float's digits at off: the value, as int64 or float64
 * bits, into *out. */
static int parse_digits(win *w, const ferry__mds_col *c, int64_t i, int64_t off,
                        int64_t sz, int64_t *out, ferry__err *err) {
  const unsigned char *p;
  char text[72];
  if (sz < 1 || sz > 64)
    return sample_fail(w->src, i, c, off,
                       "a str_int/str_float of 0 or more than 64 bytes", err);
  int rc = win_get(w, off, (size_t)sz, &p, "a number's digits", err);
  if (rc)
    return rc;
  memcpy(text, p, (size_t)sz);
  text[sz] = '\0';
  char *end = NULL;
  errno = 0;
  if (c->kind == FERRY__MDS_STRINT) {
    long long v = strtoll(text, &end, 10);
    if (errno || end != text + sz || text[0] == ' ')
      return sample_fail(w->src, i, c, off,
                         "a str_int that is not a decimal integer within "
                         "int64",
                         err);
    *out = v;
  } else {
    double v = strtod(text, &end);
    if (end != text + sz || text[0] == ' ')
      return sample_fail(w->src, i, c, off, "a str_float that is not a number",
                         err);
    memcpy(out, &v, 8);
  }
  return 0;
}

static int scan_samples(const ferry__mds_src *src, const uint32_t *offs,
                        ferry__mds_shard *s, ferry__err *err) {
  int nvar = 0, rc = 0;
  for (int c = 0; c < s->ncols; c++)
    nvar += s->cols[c].fixed < 0;
  win w = {.src = src, .at = 0, .have = 0};
  int64_t body = (int64_t)offs[s->n] - (int64_t)offs[0];
  w.step = s->n && body / s->n <= (64 << 10) ? 1 << 20 : 4 << 10;
  for (int64_t i = 0; !rc && i < s->n; i++) {
    int64_t a = offs[i], z = offs[i + 1], cur = a + 4 * (int64_t)nvar;
    const unsigned char *head = NULL;
    uint32_t sizes[FERRY__MDS_MAX_COLS];
    if (z - a < 4 * (int64_t)nvar) {
      rc = sample_fail(src, i, NULL, a,
                       "a sample shorter than its column sizes", err);
      break;
    }
    if (nvar && (rc = win_get(&w, a, 4 * (size_t)nvar, &head,
                              "a sample's column sizes", err)))
      break;
    for (int k = 0; k < nvar; k++)
      sizes[k] = ferry__le32_load(head + 4 * k);
    for (int c = 0, k = 0; !rc && c < s->ncols; c++) {
      ferry__mds_col *col = &s->cols[c];
      int64_t sz = col->fixed >= 0 ? col->fixed : (int64_t)sizes[k++];
      if (sz > z - cur) {
        char why[160];
        snprintf(why, sizeof why,
                 "%lld bytes where the sample has %lld left (it ends at "
                 "%lld)",
                 (long long)sz, (long long)(z - cur), (long long)z);
        rc = sample_fail(src, i, col, cur, why, err);
        break;
      }
      int64_t skip = 0, vbytes = sz;
      if (col->kind == FERRY__MDS_DYNARRAY && col->selected)
        rc = ndarray_prefix(&w, col, i, cur, sz, &skip, &vbytes, err);
      if (!rc && col->selected) {
        if (col->kind == FERRY__MDS_STRINT || col->kind == FERRY__MDS_STRFLOAT)
          rc = parse_digits(&w, col, i, cur, sz, &col->pos[i], err);
        else
          col->pos[i] = cur + skip;
        if (col->len)
          col->len[i] = vbytes;
      }
      cur += sz;
    }
    if (!rc && cur != z) {
      char why[120];
      snprintf(why, sizeof why, "%lld bytes after its last column",
               (long long)(z - cur));
      rc = sample_fail(src, i, NULL, cur, why, err);
    }
  }
  free(w.buf);
  return rc;
}

/* Which columns get tables: those of vars (or all); a listed column that
 * cannot be served is refused. */
static int select_cols(const ferry__mds_src *src, ferry__mds_shard *s,
                       ferry__err *err) {
  for (int c = 0; c < s->ncols; c++) {
    ferry__mds_col *col = &s->cols[c];
    int listed =
        src->vars && *src->vars && ferry__name_listed(src->vars, col->name);
    if (!col->kind) {
      s->skipped++;
      if (listed)
        return ferry__seterr(err, FERRY_ENOTSUP,
                             "MDS shard %s, column %s: encoding %s is not "
                             "served: %s",
                             src->path, col->name, col->enc, col->why);
      continue;
    }
    col->selected = !src->vars || !*src->vars || listed;
    if (!col->selected)
      continue;
    size_t n = (size_t)(s->n ? s->n : 1);
    col->pos = malloc(n * 8);
    if (col->kind == FERRY__MDS_BYTES || col->kind == FERRY__MDS_DYNARRAY)
      col->len = malloc(n * 8);
    if (!col->pos || (!col->len && (col->kind == FERRY__MDS_BYTES ||
                                    col->kind == FERRY__MDS_DYNARRAY)))
      return ferry__oom(err, -1, n * 16,
                        "the tables of column %s of MDS "
                        "shard %s",
                        col->name, src->path);
  }
  return 0;
}

int ferry__mds_shard_scan(const ferry__mds_src *src, ferry__mds_shard *out,
                          ferry__err *err) {
  memset(out, 0, sizeof *out);
  out->size = src->size;
  uint32_t *offs = NULL;
  unsigned char *cfg = NULL, b4[4];
  size_t got = 0;
  int rc = 0, e;
  if (src->size < 8)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "MDS shard %s: %lld bytes, shorter than a header "
                         "(a sample count and one offset)",
                         src->path, (long long)src->size);
  if ((e = src->read(src->ctx, 0, b4, 4, &got)) != 0 || got != 4)
    return ferry__seterr(err, e ? ferry__errno_code(e) : FERRY_EIO,
                         "MDS shard %s, offset 0: reading its sample count: "
                         "%s",
                         src->path, e ? strerror(e) : "short read");
  int64_t n = ferry__le32_load(b4), hdr = 4 + 4 * (n + 1);
  if (hdr > src->size) {
    return ferry__seterr(err, FERRY_EFORMAT,
                         "MDS shard %s, offset 0: %lld samples need %lld "
                         "bytes of offsets, but the shard is %lld bytes",
                         src->path, (long long)n, (long long)(hdr - 4),
                         (long long)src->size);
  }
  out->n = n;
  if (!(offs = malloc((size_t)(n + 1) * 4)))
    return ferry__oom(err, -1, (size_t)(n + 1) * 4,
                      "the offsets of MDS shard %s", src->path);
  unsigned char *raw = (unsigned char *)offs;
  if ((e = src->read(src->ctx, 4, raw, (size_t)(hdr - 4), &got)) != 0 ||
      got != (size_t)(hdr - 4)) {
    rc = ferry__seterr(err, e ? ferry__errno_code(e) : FERRY_EIO,
                       "MDS shard %s, offset 4: reading %lld offsets: %s",
                       src->path, (long long)(n + 1),
                       e ? strerror(e) : "short read");
    goto done;
  }
  for (int64_t i = 0; i <= n; i++)
    offs[i] = ferry__le32_load(raw + 4 * i);
  for (int64_t i = 0; i <= n; i++) {
    int64_t o = offs[i];
    const char *why = NULL;
    if (i == 0 && o < hdr)
      why = "the first sample starts inside the header";
    else if (i == 0 && o - hdr > FERRY__MDS_MAX_CONFIG)
      why = "more than 16 MiB of configuration before the first sample";
    else if (i > 0 && o < (int64_t)offs[i - 1])
      why = "an offset before the previous one";
    else if (o > src->size)
      why = "an offset past the end of the shard";
    else if (i == n && o != src->size)
      why = "the last offset (where the samples end) is not the shard's size";
    if (why) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "MDS shard %s, offset %lld: offset %lld of %lld is "
                         "%lld: %s (the shard is %lld bytes)",
                         src->path, (long long)(4 + 4 * i), (long long)i,
                         (long long)n, (long long)o, why, (long long)src->size);
      goto done;
    }
  }
  out->config = (int64_t)offs[0] - hdr;
  if (!(cfg = malloc((size_t)out->config + 1))) {
    rc = ferry__oom(err, -1, (size_t)out->config + 1,
                    "the configuration of MDS shard %s", src->path);
    goto done;
  }
  if ((e = src->read(src->ctx, hdr, cfg, (size_t)out->config, &got)) != 0 ||
      got != (size_t)out->config) {
    rc = ferry__seterr(err, e ? ferry__errno_code(e) : FERRY_EIO,
                       "MDS shard %s, offset %lld: reading its configuration: "
                       "%s",
                       src->path, (long long)hdr,
                       e ? strerror(e) : "short read");
    goto done;
  }
  if ((rc = parse_config(src, cfg, (size_t)out->config, hdr, out, err)) ||
      (rc = select_cols(src, out, err)) ||
      (rc = scan_samples(src, offs, out, err)))
    goto done;
done:
  free(offs);
  free(cfg);
  if (rc)
    ferry__mds_shard_free(out);
  return rc;
}

void ferry__mds_shard_free(ferry__mds_shard *s) {
  for (int c = 0; s->cols && c < s->ncols; c++) {
    free(s->cols[c].name);
    free(s->cols[c].enc);
    free(s->cols[c].pos);
    free(s->cols[c].len);
  }
  free(s->cols);
  memset(s, 0, sizeof *s);
}

/* ---- index.json ------------------------------------------------------- */

static int plain_name(const char *s) {
  return s && *s && strlen(s) <= 255 && !strchr(s, '/') &&
         strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int index_fail(const char *path, int64_t k, const char *why,
                      ferry__err *err) {
  if (k < 0)
    return ferry__seterr(err, FERRY_EFORMAT, "MDS index %s: %s", path, why);
  return ferry__seterr(err, FERRY_EFORMAT, "MDS index %s, shard %lld: %s", path,
                       (long long)k, why);
}

/* An integer >= 0 of object o, or -1. */
static int64_t get_count(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) && json_integer_value(v) >= 0
             ? (int64_t)json_integer_value(v)
             : -1;
}

/* A file's "hashes" (o: raw_data or zip_data) into *out, *n. */
static int parse_hashes(json_t *o, const char *what, const char *path,
                        int64_t k, ferry__mds_hash **out, int *n,
                        ferry__err *err) {
  json_t *h = json_object_get(o, "hashes"), *v;
  const char *key;
  char why[120];
  *out = NULL;
  *n = 0;
  if (!h || json_is_null(h))
    return 0;
  snprintf(why, sizeof why,
           "%s.hashes is not an object of at most %d algorithm names to hex "
           "digests",
           what, FERRY__MDS_MAX_HASHES);
  if (!json_is_object(h) || json_object_size(h) > FERRY__MDS_MAX_HASHES)
    return index_fail(path, k, why, err);
  if (json_object_size(h) == 0)
    return 0;
  if (!(*out = calloc(json_object_size(h), sizeof **out)))
    return ferry__oom(err, -1, json_object_size(h) * sizeof **out,
                      "MDS index %s", path);
  json_object_foreach(h, key, v) {
    const char *x = json_string_value(v);
    size_t kl = strlen(key), xl = x ? strlen(x) : 0;
    if (kl < 1 || kl > 32 || xl < 1 || xl > FERRY__MDS_MAX_HEX ||
        strspn(x, "0123456789abcdefABCDEF") != xl)
      return index_fail(path, k, why, err);
    ferry__mds_hash *e = &(*out)[(*n)++];
    if (!(e->algo = strdup(key)) || !(e->hex = strdup(x)))
      return ferry__oom(err, -1, kl + xl + 2, "MDS index %s", path);
  }
  return 0;
}

static int parse_entry(json_t *sh, const char *path, int64_t k,
                       ferry__mds_entry *e, ferry__err *err) {
  if (!json_is_object(sh))
    return index_fail(path, k, "not a JSON object", err);
  json_t *fmt = json_object_get(sh, "format");
  if (!json_is_string(fmt))
    return index_fail(path, k, "no \"format\" string", err);
  if (strcmp(json_string_value(fmt), "mds") != 0) {
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "MDS index %s, shard %lld: format \"%.40s\": ferry "
                         "reads Streaming's mds shards only (not its "
                         "csv/tsv/jsonl formats)",
                         path, (long long)k, json_string_value(fmt));
  }
  json_t *ver = json_object_get(sh, "version");
  if (ver && (!json_is_integer(ver) || json_integer_value(ver) != 2))
    return index_fail(path, k, "a version other than 2", err);
  json_t *raw = json_object_get(sh, "raw_data");
  json_t *zip = json_object_get(sh, "zip_data");
  json_t *comp = json_object_get(sh, "compression");
  json_t *rb = json_object_get(raw, "basename");
  if (!json_is_object(raw) || !plain_name(json_string_value(rb)) ||
      (e->raw_bytes = get_count(raw, "bytes")) < 0)
    return index_fail(path, k,
                      "raw_data is not {basename: a file name without '/', "
                      "bytes: a count}",
                      err);
  e->samples = get_count(sh, "samples");
  if (e->samples < 0 || e->samples > UINT32_MAX)
    return index_fail(path, k, "samples is not a count below 2^32", err);
  if (!(e->raw = strdup(json_string_value(rb))))
    return ferry__oom(err, -1, 256, "MDS index %s", path);
  int rc =
      parse_hashes(raw, "raw_data", path, k, &e->raw_hash, &e->nraw_hash, err);
  if (rc)
    return rc;
  if (zip && !json_is_null(zip)) {
    json_t *zb = json_object_get(zip, "basename");
    if (!json_is_object(zip) || !plain_name(json_string_value(zb)) ||
        (e->zip_bytes = get_count(zip, "bytes")) < 0)
      return index_fail(path, k,
                        "zip_data is not null or {basename: a file name "
                        "without '/', bytes: a count}",
                        err);
    if (!json_is_string(comp))
      return index_fail(path, k, "zip_data without a compression", err);
    if (!(e->zip = strdup(json_string_value(zb))) ||
        !(e->compression = strdup(json_string_value(comp))))
      return ferry__oom(err, -1, 256, "MDS index %s", path);
    if ((rc = parse_hashes(zip, "zip_data", path, k, &e->zip_hash,
                           &e->nzip_hash, err)))
      return rc;
  }
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No two shards of one file: a shard listed twice would be read twice. */
static int check_unique(const ferry__mds_index *x, const char *path,
                        ferry__err *err) {
  char **v = malloc((x->n > 0 ? (size_t)x->n : 1) * sizeof *v);
  if (!v)
    return ferry__oom(err, -1, (size_t)x->n * sizeof *v, "MDS index %s", path);
  for (int64_t k = 0; k < x->n; k++)
    v[k] = x->e[k].raw;
  qsort(v, (size_t)x->n, sizeof *v, cmp_name);
  int rc = 0;
  for (int64_t k = 1; !rc && k < x->n; k++)
    if (strcmp(v[k - 1], v[k]) == 0)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "MDS index %s: two shards name the file %s", path,
                         v[k]);
  free(v);
  return rc;
}

int ferry__mds_index_parse(const char *text, size_t len, const char *path,
                           ferry__mds_index *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  json_error_t jerr;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  json_t *shards = json_object_get(j, "shards");
  int rc = 0;
  if (!j)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "MDS index %s, line %d, column %d: not JSON: %s", path,
                       jerr.line, jerr.column, jerr.text);
  else if (!json_is_array(shards)) {
    json_decref(j);
    return 0; /* not Streaming's index */
  } else {
    json_t *ver = json_object_get(j, "version");
    size_t n = json_array_size(shards);
    if (!json_is_integer(ver) || json_integer_value(ver) != 2)
      rc = index_fail(path, -1,
                      "its version is not 2 (MosaicML Streaming's index "
                      "version)",
                      err);
    else if (n == 0)
      rc =
          ferry__seterr(err, FERRY_EEMPTY, "MDS index %s lists no shard", path);
    else if (!(out->e = calloc(n, sizeof *out->e)))
      rc = ferry__oom(err, -1, n * sizeof *out->e, "MDS index %s", path);
    for (size_t k = 0; !rc && k < n; k++) {
      out->n = (int64_t)k + 1;
      rc = parse_entry(json_array_get(shards, k), path, (int64_t)k, &out->e[k],
                       err);
    }
    if (!rc)
      rc = check_unique(out, path, err);
  }
  json_decref(j);
  if (rc) {
    ferry__mds_index_free(out);
    return rc;
  }
  return 1;
}

void ferry__mds_index_free(ferry__mds_index *x) {
  for (int64_t k = 0; x->e && k < x->n; k++) {
    for (int h = 0; h < x->e[k].nraw_hash; h++) {
      free(x->e[k].raw_hash[h].algo);
      free(x->e[k].raw_hash[h].hex);
    }
    for (int h = 0; h < x->e[k].nzip_hash; h++) {
      free(x->e[k].zip_hash[h].algo);
      free(x->e[k].zip_hash[h].hex);
    }
    free(x->e[k].raw_hash);
    free(x->e[k].zip_hash);
    free(x->e[k].raw);
    free(x->e[k].zip);
    free(x->e[k].compression);
  }
  free(x->e);
  memset(x, 0, sizeof *x);
}
