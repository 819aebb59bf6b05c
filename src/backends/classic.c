/*
 * classic.c - the netCDF classic backend: CDF-1 (classic), CDF-2 (64-bit
 * offset) and CDF-5 (64-bit data) files.
 *
 * Why its own header parser and not netCDF-C: the classic format is short
 * and fully specified (a magic, numrecs, three tagged lists, every field a
 * big-endian integer), and all a loader needs from it is where each
 * variable's bytes are.  netCDF-C would bring a global library state that is
 * not thread-safe, its own idea of file access (PnetCDF or its MPI-IO layer,
 * with collective opens of its own) where ferry wants plain MPI-IO byte
 * ranges at offsets it computes, and a dependency on how netCDF-C was built
 * (this backend is in every build, with or without netCDF-C).  The parser
 * trusts nothing it reads: every count and length is bounded by the file's
 * size before it is used, sizes are computed overflow-checked, and a
 * malformed header is FERRY_EFORMAT naming the file, the field and its
 * offset (tests/unit/test_classic.c mutates headers to hold it to that).
 *
 * A part is one file.  Rank 0 parses the header (describe); each chosen
 * variable's layout travels in the manifest: data_offset is its `begin`,
 * and its record says whether it is a fixed-size variable (rows contiguous
 * from begin) or a record variable (the unlimited dimension is the sample
 * dimension, row i at begin + i * recsize, every record holding one row of
 * every record variable).  The loader's I/O thread reads with MPI-IO: fixed
 * variables like .npy rows; record variables, independently, by reading
 * whole records once into a span buffer (at most SPAN_MAX bytes) that serves
 * every record variable of the same rows (the loader reads them one after
 * the other), or row by row when records or rows are large.  With
 * io=collective every call makes exactly one MPI_File_read_at_all on every
 * rank: the records it needs, or 0 bytes when its rows are in the span
 * buffer already or were read row by row (a strided file view, tried
 * first, ran at a twentieth of the contiguous read's speed under OMPIO).
 * Data is big-endian on disk: variables are marked swapped, and the
 * loader's worker threads swap them to native order as they assemble
 * batches.  NC_CHAR variables are served as uint8 (their bytes as stored).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/classic.h"
#include "backends/toolkit.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CDF_NAME_MAX 256                  /* netCDF's NC_MAX_NAME */
#define CDF_FIRST_READ ((size_t)1 << 20)  /* first header read    */
#define CDF_HEADER_MAX ((size_t)64 << 20) /* largest header read  */
#define CDF_READ_MAX ((int64_t)1 << 30)   /* one independent read */
#define SPAN_MAX ((int64_t)32 << 20)      /* record span buffer   */
#define ROW_DIRECT ((int64_t)64 << 10)    /* rows read one by one */
#define CDF_REC_VERSION 1
#define CDF_REC_LEN 18

enum { TAG_DIM = 0x0A, TAG_VAR = 0x0B, TAG_ATT = 0x0C };

/* nc_type 1..11: name, size, ferry dtype. */
static const struct {
  const char *name;
  int size;
  ferry_dtype dtype;
} nc_types[12] = {
    {NULL, 0, FERRY_UINT8},          {"NC_BYTE", 1, FERRY_INT8},
    {"NC_CHAR", 1, FERRY_UINT8},     {"NC_SHORT", 2, FERRY_INT16},
    {"NC_INT", 4, FERRY_INT32},      {"NC_FLOAT", 4, FERRY_FLOAT32},
    {"NC_DOUBLE", 8, FERRY_FLOAT64}, {"NC_UBYTE", 1, FERRY_UINT8},
    {"NC_USHORT", 2, FERRY_UINT16},  {"NC_UINT", 4, FERRY_UINT32},
    {"NC_INT64", 8, FERRY_INT64},    {"NC_UINT64", 8, FERRY_UINT64},
};

typedef struct cdf_dim {
  char *name;
  int64_t len; /* 0: the record (unlimited) dimension */
} cdf_dim;

typedef struct cdf_var {
  char *name;
  int ndims;
  int64_t *dimids;
  int type;
  int64_t begin;
  int is_rec;
  int64_t row_bytes; /* one row along the first dimension (a scalar: all) */
  int64_t end;       /* first byte after its data (record: after the last
                      * record's row); 0 for a record variable with no
                      * record */
} cdf_var;

struct ferry__cdf {
  int version; /* 1, 2 or 5 */
  int streaming;
  int64_t numrecs;
  int ndims, nvars, recdim; /* recdim: -1 when none */
  cdf_dim *dims;
  cdf_var *vars;
  int64_t header_end, recsize, begin_rec, file_size;
};

/* ---- Header parser ---------------------------------------------------- */

typedef struct cur {
  const unsigned char *b;
  size_t len;    /* bytes in b (the file's first len bytes) */
  int64_t fsize; /* the file's size                          */
  size_t pos;
  int v5;
  const char *path;
  ferry__err *err;
} cur;

static int bad(const cur *c, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(const cur *c, size_t at, const char *fmt, ...) {
  char what[FERRY__MSG_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ferry__seterr(c->err, FERRY_EFORMAT,
                       "%s: corrupt netCDF classic header at offset %zu: %s",
                       c->path, at, what);
}

/* 0 when n bytes are there at pos; 1 when they lie past the bytes read but
 * inside the file (read more); FERRY_EFORMAT when past the file's end. */
static int need(const cur *c, size_t n, const char *field) {
  if (n <= c->len - c->pos)
    return 0;
  if ((int64_t)c->len < c->fsize)
    return 1;
  return ferry__seterr(c->err, FERRY_EFORMAT,
                       "%s: truncated netCDF classic header: %s at offset %zu "
                       "needs %zu bytes, the file ends at %lld",
                       c->path, field, c->pos, n, (long long)c->fsize);
}

static uint64_t get_be(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

static int rd_u32(cur *c, const char *field, uint32_t *out) {
  int rc = need(c, 4, field);
  if (rc)
    return rc;
  *out = (uint32_t)get_be(c->b + c->pos, 4);
  c->pos += 4;
  return 0;
}

/* NON_NEG: a 32-bit (CDF-1/2) or 64-bit (CDF-5) non-negative integer. */
static int rd_nonneg(cur *c, const char *field, int64_t *out) {
  int n = c->v5 ? 8 : 4;
  size_t at = c->pos;
  int rc = need(c, (size_t)n, field);
  if (rc)
    return rc;
  uint64_t v = get_be(c->b + c->pos, n);
  if (v > (c->v5 ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX))
    return bad(c, at, "%s is negative (0x%llx)", field, (unsigned long long)v);
  c->pos += (size_t)n;
  *out = (int64_t)v;
  return 0;
}

/* A count of entries of at least min_size bytes each: bounded by what is
 * left of the file, and by INT_MAX. */
static int rd_count(cur *c, const char *field, int64_t min_size, int *out) {
  size_t at = c->pos;
  int64_t n = 0;
  int rc = rd_nonneg(c, field, &n);
  if (rc)
    return rc;
  int64_t left = c->fsize - (int64_t)c->pos;
  if (n > left / min_size || n > INT_MAX)
    return bad(c, at,
               "%s is %lld, more than the %lld bytes left in the file can "
               "hold",
               field, (long long)n, (long long)left);
  *out = (int)n;
  return 0;
}

static int64_t pad4(int64_t n) { return (n + 3) & ~(int64_t)3; }

/* name = nelems namestring, padded to 4 bytes. */
static int rd_name(cur *c, const char *field, char **out) {
  size_t at = c->pos;
  int64_t n = 0;
  int rc = rd_nonneg(c, field, &n);
  if (rc)
    return rc;
  if (n == 0 || n > CDF_NAME_MAX)
    return bad(c, at, "%s length is %lld (netCDF names hold 1 to %d bytes)",
               field, (long long)n, CDF_NAME_MAX);
  if ((rc = need(c, (size_t)pad4(n), field)) != 0)
    return rc;
  /* Old writers (netCDF-C's own nctest reference files) padded names with
   * NUL bytes inside their length; netCDF-C reads the name up to the first
   * NUL.  A NUL followed by anything else is corrupt. */
  const unsigned char *nm = c->b + c->pos;
  const unsigned char *nul = memchr(nm, 0, (size_t)n);
  if (nul == nm)
    return bad(c, c->pos, "%s starts with a NUL byte", field);
  for (const unsigned char *q = nul; q && q < nm + n; q++)
    if (*q)
      return bad(c, c->pos, "%s holds a NUL byte", field);
  if (!(*out = malloc((size_t)n + 1)))
    return ferry__oom(c->err, -1, (size_t)n + 1, "a %s in %s (offset %zu)",
                      field, c->path, c->pos);
  memcpy(*out, c->b + c->pos, (size_t)n);
  (*out)[n] = '\0';
  c->pos += (size_t)pad4(n);
  return 0;
}

static int rd_type(cur *c, const char *field, int *out) {
  size_t at = c->pos;
  uint32_t t = 0;
  int rc = rd_u32(c, field, &t);
  if (rc)
    return rc;
  if (t < 1 || t > (c->v5 ? 11u : 6u))
    return bad(c, at, "%s %u is not a netCDF type of %s", field, t,
               c->v5 ? "CDF-5" : "CDF-1 or CDF-2");
  *out = (int)t;
  return 0;
}

/* A list's tag and count: ABSENT (two zeros) gives 0 entries. */
static int rd_list(cur *c, uint32_t tag, const char *field, int64_t min_size,
                   int *n) {
  size_t at = c->pos;
  uint32_t t = 0;
  int rc = rd_u32(c, field, &t);
  if (rc)
    return rc;
  if (t != 0 && t != tag)
    return bad(c, at, "%s tag is 0x%x, expected 0x%x or 0 (absent)", field, t,
               tag);
  if ((rc = rd_count(c, field, min_size, n)) != 0)
    return rc;
  if (t == 0 && *n != 0)
    return bad(c, at, "%s is absent (tag 0) but counts %d entries", field, *n);
  return 0;
}

/* Attributes are skipped: their values do not change what is read. */
static int skip_atts(cur *c) {
  int n = 0, rc;
  if ((rc = rd_list(c, TAG_ATT, "attribute list", 12, &n)) != 0)
    return rc;
  for (int i = 0; i < n; i++) {
    char *name = NULL;
    int type = 0;
    int64_t count = 0;
    if ((rc = rd_name(c, "attribute name", &name)) != 0)
      return rc;
    free(name);
    if ((rc = rd_type(c, "attribute nc_type", &type)) != 0 ||
        (rc = rd_nonneg(c, "attribute nelems", &count)) != 0)
      return rc;
    int64_t size = nc_types[type].size;
    if (count > (c->fsize - (int64_t)c->pos) / size)
      return bad(c, c->pos,
                 "attribute of %lld values of %s runs past the end "
                 "of the file",
                 (long long)count, nc_types[type].name);
    if ((rc = need(c, (size_t)pad4(count * size), "attribute values")) != 0)
      return rc;
    c->pos += (size_t)pad4(count * size);
  }
  return 0;
}

static int rd_dims(cur *c, ferry__cdf *h) {
  int rc = rd_list(c, TAG_DIM, "dimension list", 8, &h->ndims);
  if (rc)
    return rc;
  if (h->ndims && !(h->dims = calloc((size_t)h->ndims, sizeof *h->dims)))
    return ferry__oom(c->err, -1, (size_t)h->ndims * sizeof *h->dims,
                      "the %d dimensions of %s", h->ndims, c->path);
  for (int i = 0; i < h->ndims; i++) {
    if ((rc = rd_name(c, "dimension name", &h->dims[i].name)) != 0 ||
        (rc = rd_nonneg(c, "dimension length", &h->dims[i].len)) != 0)
      return rc;
    if (h->dims[i].len == 0) {
      if (h->recdim >= 0)
        return bad(c, c->pos, "dimensions '%s' and '%s' are both unlimited",
                   h->dims[h->recdim].name, h->dims[i].name);
      h->recdim = i;
    }
  }
  return 0;
}

static int rd_var(cur *c, ferry__cdf *h, cdf_var *v) {
  int rc = rd_name(c, "variable name", &v->name);
  if (rc)
    return rc;
  if ((rc = rd_count(c, "variable dimension count", c->v5 ? 8 : 4,
                     &v->ndims)) != 0)
    return rc;
  if (v->ndims && !(v->dimids = calloc((size_t)v->ndims, sizeof *v->dimids)))
    return ferry__oom(c->err, -1, (size_t)v->ndims * sizeof *v->dimids,
                      "the dimension ids of variable %s in %s", v->name,
                      c->path);
  for (int d = 0; d < v->ndims; d++) {
    size_t at = c->pos;
    if ((rc = rd_nonneg(c, "dimension id", &v->dimids[d])) != 0)
      return rc;
    if (v->dimids[d] >= h->ndims)
      return bad(c, at, "variable '%s' names dimension id %lld of %d", v->name,
                 (long long)v->dimids[d], h->ndims);
    if (d > 0 && v->dimids[d] == h->recdim)
      return bad(c, at,
                 "variable '%s' has the unlimited dimension in place %d, "
                 "not first",
                 v->name, d);
  }
  if ((rc = skip_atts(c)) != 0 || (rc = rd_type(c, "nc_type", &v->type)) != 0)
    return rc;
  int64_t vsize = 0;
  if (c->v5) {
    if ((rc = rd_nonneg(c, "vsize", &vsize)) != 0)
      return rc;
  } else {
    uint32_t vs = 0; /* unsigned in CDF-2: large variables say 2^32-1 */
    if ((rc = rd_u32(c, "vsize", &vs)) != 0)
      return rc;
  }
  size_t at = c->pos;
  if (h->version == 1) {
    uint32_t b = 0;
    if ((rc = rd_u32(c, "begin", &b)) != 0)
      return rc;
    if (b > INT32_MAX)
      return bad(c, at, "begin of variable '%s' is negative", v->name);
    v->begin = b;
  } else {
    if ((rc = need(c, 8, "begin")) != 0)
      return rc;
    uint64_t b = get_be(c->b + c->pos, 8);
    if (b > (uint64_t)INT64_MAX)
      return bad(c, at, "begin of variable '%s' is negative", v->name);
    c->pos += 8;
    v->begin = (int64_t)b;
  }
  return 0;
}

/* Row sizes, extents, the record size, and the checks that need the whole
 * header.  Every product is overflow-checked. */
static int shapes(cur *c, ferry__cdf *h) {
  int nrec = 0;
  int64_t recsize = 0, begin_rec = INT64_MAX;
  for (int i = 0; i < h->nvars; i++) {
    cdf_var *v = &h->vars[i];
    v->is_rec = v->ndims > 0 && v->dimids[0] == h->recdim;
    int64_t b = nc_types[v->type].size;
    for (int d = 1; d < v->ndims; d++) {
      int64_t n = h->dims[v->dimids[d]].len;
      if (n != 0 && b > INT64_MAX / n)
        return bad(c, c->pos, "variable '%s': its size overflows 64 bits",
                   v->name);
      b *= n;
    }
    v->row_bytes = b;
    if (v->begin < h->header_end)
      return bad(c, c->pos,
                 "variable '%s' begins at %lld, inside the header (which "
                 "ends at %lld)",
                 v->name, (long long)v->begin, (long long)h->header_end);
    if (v->is_rec) {
      nrec++;
      if (pad4(b) > INT64_MAX - recsize - 3)
        return bad(c, c->pos, "the record size overflows 64 bits");
      recsize += pad4(b);
      if (v->begin < begin_rec)
        begin_rec = v->begin;
      continue;
    }
    int64_t n = v->ndims > 0 ? h->dims[v->dimids[0]].len : 1;
    if (n != 0 && b > (INT64_MAX - v->begin) / n)
      return bad(c, c->pos, "variable '%s' ends past 2^63 bytes", v->name);
    v->end = v->begin + n * b;
  }
  /* One record variable: its records are not padded (netCDF-C does the
   * same for every version). */
  if (nrec == 1)
    for (int i = 0; i < h->nvars; i++)
      if (h->vars[i].is_rec)
        recsize = h->vars[i].row_bytes;
  h->recsize = recsize;
  h->begin_rec = nrec ? begin_rec : h->header_end;
  if (h->streaming) /* a file still being written: whole records only */
    h->numrecs = recsize > 0 && h->file_size > h->begin_rec
                     ? (h->file_size - h->begin_rec) / recsize
                     : 0;
  for (int i = 0; i < h->nvars; i++) {
    cdf_var *v = &h->vars[i];
    if (!v->is_rec || h->numrecs == 0)
      continue;
    if (h->numrecs - 1 > (INT64_MAX - v->begin - v->row_bytes) / (recsize | 1))
      return bad(c, c->pos, "variable '%s': %lld records end past 2^63 bytes",
                 v->name, (long long)h->numrecs);
    v->end = v->begin + (h->numrecs - 1) * recsize + v->row_bytes;
  }
  for (int i = 0; i < h->nvars; i++) {
    const cdf_var *v = &h->vars[i];
    if (v->is_rec && (v->row_bytes > recsize ||
                      v->begin - h->begin_rec > recsize - v->row_bytes))
      return bad(c, c->pos,
                 "record variable '%s' (begin %lld, %lld bytes a record) "
                 "lies outside the record of %lld bytes from %lld",
                 v->name, (long long)v->begin, (long long)v->row_bytes,
                 (long long)recsize, (long long)h->begin_rec);
  }
  return 0;
}

void ferry__cdf_free(ferry__cdf *h) {
  if (!h)
    return;
  for (int i = 0; h->dims && i < h->ndims; i++)
    free(h->dims[i].name);
  for (int i = 0; h->vars && i < h->nvars; i++) {
    free(h->vars[i].name);
    free(h->vars[i].dimids);
  }
  free(h->dims);
  free(h->vars);
  free(h);
}

static int parse_body(cur *c, ferry__cdf *h) {
  int64_t nr = 0;
  int rc = need(c, c->v5 ? 8 : 4, "numrecs");
  if (rc)
    return rc;
  uint64_t raw = get_be(c->b + c->pos, c->v5 ? 8 : 4);
  if (raw == (c->v5 ? UINT64_MAX : (uint64_t)UINT32_MAX)) {
    h->streaming = 1;
    c->pos += c->v5 ? 8 : 4;
  } else if ((rc = rd_nonneg(c, "numrecs", &nr)) != 0) {
    return rc;
  }
  h->numrecs = nr;
  if ((rc = rd_dims(c, h)) != 0 || (rc = skip_atts(c)) != 0 ||
      (rc = rd_list(c, TAG_VAR, "variable list", 24, &h->nvars)) != 0)
    return rc;
  if (h->nvars && !(h->vars = calloc((size_t)h->nvars, sizeof *h->vars)))
    return ferry__oom(c->err, -1, (size_t)h->nvars * sizeof *h->vars,
                      "the %d variables of %s", h->nvars, c->path);
  for (int i = 0; i < h->nvars; i++)
    if ((rc = rd_var(c, h, &h->vars[i])) != 0)
      return rc;
  h->header_end = (int64_t)c->pos;
  return shapes(c, h);
}

int ferry__cdf_parse(const unsigned char *buf, size_t len, int64_t file_size,
                     const char *path, ferry__cdf **out, ferry__err *err) {
  *out = NULL;
  if ((int64_t)len > file_size)
    len = (size_t)file_size;
  if (len < 4 || memcmp(buf, "CDF", 3) != 0 ||
      (buf[3] != 1 && buf[3] != 2 && buf[3] != 5))
    return (int64_t)len < file_size && len < 4
               ? 1
               : ferry__seterr(err, FERRY_EFORMAT,
                               "%s: not a netCDF classic file (no 'CDF' "
                               "magic with version 1, 2 or 5 at offset 0)",
                               path);
  ferry__cdf *h = calloc(1, sizeof *h);
  if (!h)
    return ferry__oom(err, -1, sizeof *h, "the netCDF header of %s", path);
  h->version = buf[3];
  h->recdim = -1;
  h->file_size = file_size;
  cur c = {buf, len, file_size, 4, buf[3] == 5, path, err};
  int rc = parse_body(&c, h);
  if (rc != 0) {
    ferry__cdf_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

void ferry__cdf_summary(const ferry__cdf *h, int *version, int *nvars,
                        int64_t *numrecs, int64_t *recsize) {
  *version = h->version;
  *nvars = h->nvars;
  *numrecs = h->numrecs;
  *recsize = h->recsize;
}

/* ---- Probe and describe (rank 0) -------------------------------------- */

static int classic_probe(const char *path) {
  struct stat st;
  unsigned char m[4];
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 4)
    return 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  size_t got = fread(m, 1, 4, f);
  fclose(f);
  return got == 4 && memcmp(m, "CDF", 3) == 0 &&
         (m[3] == 1 || m[3] == 2 || m[3] == 5);
}

/* Read and parse the header: 1 MiB first, doubled while the parser needs
 * more, up to CDF_HEADER_MAX. */
static int read_header(const char *path, ferry__cdf **h, ferry__err *err) {
  const char *kind = NULL;
  int fd = ferry__open_regular(path, &kind);
  if (fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT, "%s is %s, not a regular file",
                         path, kind);
  if (fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                         strerror(errno));
  struct stat st;
  int rc = fstat(fd, &st) == 0 ? 1
                               : ferry__seterr(err, ferry__errno_code(errno),
                                               "%s: %s", path, strerror(errno));
  unsigned char *buf = NULL;
  for (size_t want = CDF_FIRST_READ; rc == 1; want *= 2) {
    if (want > CDF_HEADER_MAX) {
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: netCDF classic header larger than %zu MiB", path,
                         CDF_HEADER_MAX >> 20);
      break;
    }
    if ((int64_t)want > (int64_t)st.st_size)
      want = (size_t)st.st_size;
    size_t got = 0;
    unsigned char *nb = realloc(buf, want ? want : 1);
    if (!nb) {
      rc =
          ferry__oom(err, -1, want ? want : 1, "the netCDF header of %s", path);
      break;
    }
    buf = nb;
    if (ferry__pread_full(fd, buf, want, 0, &got) != 0) {
      rc = ferry__seterr(err, FERRY_EIO, "%s: read failed at offset 0: %s",
                         path, strerror(errno));
      break;
    }
    rc = ferry__cdf_parse(buf, got, (int64_t)st.st_size, path, h, err);
    if (rc == 1 && got < want) /* the file shrank under us */
      rc = ferry__seterr(err, FERRY_EIO, "%s: short read of its header", path);
  }
  free(buf);
  close(fd);
  return rc;
}

static int servable(const cdf_var *v) {
  return v->ndims >= 1 && v->ndims - 1 <= FERRY_MAX_DIMS;
}

static int64_t dim_rows(const ferry__cdf *h, int64_t d) {
  return d == h->recdim ? h->numrecs : h->dims[d].len;
}

/* The first named servable variable's first dimension, or -1. */
static int64_t named_dim(const ferry__cdf *h, const char *named) {
  size_t len;
  for (const char *p = named, *s; (s = ferry__next_name(&p, &len)) != NULL;)
    for (int i = 0; i < h->nvars; i++)
      if (strlen(h->vars[i].name) == len &&
          strncmp(s, h->vars[i].name, len) == 0 && servable(&h->vars[i]))
        return h->vars[i].dimids[0];
  return -1;
}

/* The default sample dimension: the longest first dimension of a servable
 * variable (the unlimited one on a tie); -1 when there is none. */
static int64_t default_dim(const ferry__cdf *h) {
  int64_t best = -1;
  for (int i = 0; i < h->nvars; i++) {
    if (!servable(&h->vars[i]))
      continue;
    int64_t d = h->vars[i].dimids[0];
    if (best < 0 || dim_rows(h, d) > dim_rows(h, best) ||
        (dim_rows(h, d) == dim_rows(h, best) && d == h->recdim))
      best = d;
  }
  return best;
}

static const char *version_name(int v) {
  return v == 1   ? "CDF-1 (classic)"
         : v == 2 ? "CDF-2 (64-bit offset)"
                  : "CDF-5 (64-bit data)";
}

/* Append to s (cap bytes, *n used) without ever moving past its end. */
static void app(char *s, size_t cap, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void app(char *s, size_t cap, size_t *n, const char *fmt, ...) {
  if (*n + 1 >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(s + *n, cap - *n, fmt, ap);
  va_end(ap);
  if (k > 0)
    *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

/* "netCDF CDF-2 (64-bit offset); dimensions t = UNLIMITED (3 records),
 * x = 4; record size 24 bytes; chose a, b (3 rows along t); skipped c
 * (...)". */
static int make_notes(const ferry__cdf *h, int64_t sdim, const char *chosen,
                      const char *skipped, char **out, size_t *want) {
  size_t cap = 512 + strlen(chosen) + strlen(skipped), n = 0;
  for (int i = 0; i < h->ndims; i++)
    cap += strlen(h->dims[i].name) + 48;
  *want = cap;
  char *s = malloc(cap);
  if (!s)
    return -1;
  s[0] = '\0';
  app(s, cap, &n, "netCDF %s%s; dimensions ", version_name(h->version),
      h->streaming ? ", numrecs STREAMING" : "");
  for (int i = 0; i < h->ndims; i++) {
    if (i == h->recdim)
      app(s, cap, &n, "%s%s = UNLIMITED (%lld records)", i ? ", " : "",
          h->dims[i].name, (long long)h->numrecs);
    else
      app(s, cap, &n, "%s%s = %lld", i ? ", " : "", h->dims[i].name,
          (long long)h->dims[i].len);
  }
  if (h->ndims == 0)
    app(s, cap, &n, "none");
  if (h->recdim >= 0)
    app(s, cap, &n, "; record size %lld bytes", (long long)h->recsize);
  app(s, cap, &n, "; chose %s (%lld rows along %s); skipped %s", chosen,
      (long long)dim_rows(h, sdim), h->dims[sdim].name,
      skipped[0] ? skipped : "nothing");
  *out = s;
  return 0;
}

/* The record a variable's reads need: version, kind (0 fixed, 1 record),
 * record size and the offset of the first record (little-endian). */
static int rec_put(ferry__blob *b, int is_rec, int64_t recsize,
                   int64_t begin_rec) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u8(&w, CDF_REC_VERSION);
  ferry__rec_put_u8(&w, (unsigned)is_rec);
  ferry__rec_put_i64(&w, recsize);
  ferry__rec_put_i64(&w, begin_rec);
  return ferry__rec_blob(&w, b);
}

/* Fill out's variable k from v: its layout, checked against the file. */
static int fill_var(const char *path, const ferry__cdf *h, const cdf_var *v,
                    int k, ferry__part_desc *out, ferry__err *err) {
  ferry__var *fv = &out->vars[k];
  if (v->end > h->file_size)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "truncated: file %s holds %lld bytes, variable %s "
                         "needs bytes up to offset %lld (begin %lld)",
                         path, (long long)h->file_size, v->name,
                         (long long)v->end, (long long)v->begin);
  const uint16_t one = 1;
  unsigned char low;
  memcpy(&low, &one, 1);
  int little = low == 1;
  fv->dtype = nc_types[v->type].dtype;
  fv->swapped = nc_types[v->type].size > 1 && little;
  fv->row_ndim = v->ndims - 1;
  for (int d = 1; d < v->ndims; d++)
    fv->row_shape[d - 1] = h->dims[v->dimids[d]].len;
  fv->row_bytes = (size_t)v->row_bytes;
  char st[256];
  if (v->is_rec)
    snprintf(st, sizeof st,
             "record variable, %s big-endian%s, one row every %lld bytes "
             "(the record size) from offset %lld",
             nc_types[v->type].name, v->type == 2 ? " served as uint8" : "",
             (long long)h->recsize, (long long)v->begin);
  else
    snprintf(st, sizeof st,
             "fixed-size variable, %s big-endian%s, contiguous at offset "
             "%lld",
             nc_types[v->type].name, v->type == 2 ? " served as uint8" : "",
             (long long)v->begin);
  if (!(fv->name = strdup(v->name)) || !(fv->storage = strdup(st)) ||
      !(out->paths[k] = strdup(path)) ||
      rec_put(&out->rec[k], v->is_rec, h->recsize, h->begin_rec) < 0)
    return ferry__oom(err, -1,
                      !fv->name        ? strlen(v->name) + 1
                      : !fv->storage   ? strlen(st) + 1
                      : !out->paths[k] ? strlen(path) + 1
                                       : CDF_REC_LEN,
                      "the description of variable %s in %s", v->name, path);
  out->data_offset[k] = v->begin;
  out->file_size[k] = h->file_size;
  return 0;
}

/* Mark the chosen variables (sel[i] = 1) and describe why the others are
 * not; returns how many are chosen. */
static int choose(const ferry__cdf *h, int64_t sdim, const char *named,
                  char *sel, char *chosen, size_t clen, char *skipped,
                  size_t slen) {
  int nsel = 0;
  for (int i = 0; i < h->nvars; i++) {
    const cdf_var *v = &h->vars[i];
    char why[160] = "";
    if (named && !ferry__name_listed(named, v->name))
      snprintf(why, sizeof why, "not named in vars");
    else if (v->ndims < 1)
      snprintf(why, sizeof why, "a scalar, no sample dimension");
    else if (!servable(v))
      snprintf(why, sizeof why, "%d dimensions, ferry reads at most %d",
               v->ndims, FERRY_MAX_DIMS + 1);
    else if (v->dimids[0] != sdim)
      snprintf(why, sizeof why, "along %s (%lld rows), not %s",
               h->dims[v->dimids[0]].name, (long long)dim_rows(h, v->dimids[0]),
               h->dims[sdim].name);
    if (why[0]) {
      size_t n = strlen(skipped);
      snprintf(skipped + n, slen - n, "%s%s (%s)", n ? "; " : "", v->name, why);
      continue;
    }
    size_t n = strlen(chosen);
    snprintf(chosen + n, clen - n, "%s%s", n ? ", " : "", v->name);
    sel[i] = 1;
    nsel++;
  }
  return nsel;
}

static int classic_describe(const char *path, const ferry_options *opts,
                            ferry__part_desc *out, ferry__err *err) {
  char named[1024] = "";
  if (opts && ferry_options_get(opts, "vars", named, sizeof named) != 0)
    named[0] = '\0';
  memset(out, 0, sizeof *out);
  ferry__cdf *h = NULL;
  int rc = read_header(path, &h, err);
  if (rc < 0)
    return rc;
  char chosen[1024] = "", skipped[2048] = "";
  char *sel = calloc((size_t)h->nvars + 1, 1);
  if (!sel) {
    rc = ferry__oom(err, -1, (size_t)h->nvars + 1,
                    "the variable selection of %s (%d variables)", path,
                    h->nvars);
    goto cleanup;
  }
  /* With vars, the sample dimension is the first named servable variable's;
   * when no named variable can be served the default selection stands and
   * the manifest's selection names what is missing. */
  int64_t sdim = named[0] ? named_dim(h, named) : -1;
  int usenamed = sdim >= 0;
  if (!usenamed)
    sdim = default_dim(h);
  int nsel = sdim < 0 ? 0
                      : choose(h, sdim, usenamed ? named : NULL, sel, chosen,
                               sizeof chosen, skipped, sizeof skipped);
  if (nsel == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY,
                       "%s: the netCDF file holds no variable ferry can serve "
                       "(%d variables, none with a sample dimension)",
                       path, h->nvars);
    goto cleanup;
  }
  out->vars = calloc((size_t)nsel, sizeof *out->vars);
  out->paths = calloc((size_t)nsel, sizeof *out->paths);
  out->data_offset = calloc((size_t)nsel, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nsel, sizeof *out->file_size);
  out->rec = calloc((size_t)nsel, sizeof *out->rec);
  size_t notes = 0;
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec ||
      make_notes(h, sdim, chosen, skipped, &out->notes, &notes) < 0) {
    rc = ferry__oom(err, -1,
                    notes ? notes
                          : (size_t)nsel *
                                (sizeof *out->vars + sizeof *out->paths +
                                 sizeof *out->data_offset +
                                 sizeof *out->file_size + sizeof *out->rec),
                    "the description of %d variables of %s", nsel, path);
    goto cleanup;
  }
  out->nvars = nsel;
  out->num_samples = dim_rows(h, sdim);
  for (int i = 0, k = 0; i < h->nvars && rc == 0; i++)
    if (sel[i])
      rc = fill_var(path, h, &h->vars[i], k++, out, err);
cleanup:
  free(sel);
  ferry__cdf_free(h);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- MPI-IO reads (I/O thread) ---------------------------------------- */

/* One MPI_File per part (handle cache key var -1); the span buffer holds
 * whole records [span_row, span_row + span_n) of part span_part. */
struct ferry__io {
  ferry__io_base b; /* manifest, rank, mode, hints, files (io_base.c) */
  int64_t span_part, span_row, span_n;
  size_t span_len; /* valid bytes (the last record may end at EOF) */
  size_t span_cap; /* allocated bytes                               */
  unsigned char *span;
};

/* Open part's file (collectively with io=collective: the ranks agree on
 * the outcome before any keeps the handle); the handle serves every
 * variable (key var -1). */
static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  ferry__io *io = ctx;
  (void)var;
  const ferry__part *pt = &io->b.m->parts[part];
  return ferry__io_base_mpi_open(&io->b, pt->paths[0], NULL, pt->file_size[0],
                                 handle, err);
}

static int classic_io_open(ferry__io **out, const ferry__manifest *m,
                           const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = ferry__io_base_mpi_close,
      .hints = 1,
  };
  void *io = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &io, err);
  *out = io;
  if (rc == 0)
    (*out)->span_part = -1;
  return rc;
}

/* The record of (part, var), checked. */
static int rec_get(const ferry__io *io, const ferry__part *pt, int var,
                   int *is_rec, int64_t *recsize, int64_t *begin_rec,
                   ferry__err *err) {
  const ferry__blob *b = pt->rec ? &pt->rec[var] : NULL;
  if (io->b.m->record_version != CDF_REC_VERSION || !b ||
      b->len != CDF_REC_LEN || b->p[0] != CDF_REC_VERSION || b->p[1] > 1)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, variable %s: the manifest's netCDF record "
                         "is missing or malformed (version %d, %zu bytes; "
                         "rank %d): scan the dataset again",
                         pt->paths[var], io->b.m->vars[var].name,
                         io->b.m->record_version, b ? b->len : 0, io->b.rank);
  ferry__rec_r rd; /* its length was checked: every get succeeds */
  ferry__rec_r_init(&rd, b->p, b->len);
  (void)ferry__rec_get_u8(&rd); /* the version, checked */
  *is_rec = (int)ferry__rec_get_u8(&rd);
  uint64_t rs = ferry__rec_get_u64(&rd), br = ferry__rec_get_u64(&rd);
  *recsize = (int64_t)rs;
  *begin_rec = (int64_t)br;
  int64_t rb = (int64_t)io->b.m->vars[var].row_bytes;
  int64_t voff = pt->data_offset[var] - *begin_rec;
  if (rs > (uint64_t)INT64_MAX || br > (uint64_t)INT64_MAX ||
      (*is_rec && (voff < 0 || rb > *recsize || voff > *recsize - rb)))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, variable %s: the manifest's netCDF record "
                         "is inconsistent (record size %lld, rank %d)",
                         pt->paths[var], io->b.m->vars[var].name,
                         (long long)*recsize, io->b.rank);
  return 0;
}

/* Contiguous bytes [off, off + n) into buf: split into 1 GiB calls
 * independently, one call collectively when coll (refused over 2 GiB,
 * joined with a count of 0 when rc says this rank already failed). */
static int read_flat(MPI_File fh, int coll, int64_t off, int64_t n, void *buf,
                     const char *where, int rc, ferry__err *err) {
  if (coll) {
    if (rc == 0 && n > INT_MAX)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "collective read of %lld bytes (%s, offset %lld) "
                         "exceeds the 2 GiB one MPI call can read; use a "
                         "smaller chunk_samples",
                         (long long)n, where, (long long)off);
    int rc2 = ferry__mpi_read(fh, 1, (MPI_Offset)off, buf, rc < 0 ? 0 : (int)n,
                              where, rc < 0 ? NULL : err);
    return rc < 0 ? rc : rc2;
  }
  for (int64_t done = 0; rc == 0 && done < n;) {
    int count = (int)(n - done < CDF_READ_MAX ? n - done : CDF_READ_MAX);
    rc = ferry__mpi_read(fh, 0, (MPI_Offset)(off + done), (char *)buf + done,
                         count, where, err);
    done += count;
  }
  return rc;
}

/* Where a record variable's rows are: record size, first record, the
 * variable's offset in a record, its row bytes, its file's size. */
typedef struct rec_layout {
  int64_t rs, begin_rec, voff, rb, fsize;
} rec_layout;

/* Whole records [r, r + k) of part into the span buffer (the last one may
 * stop at the end of the file); one collective call when coll, joined with
 * a count of 0 when rc says this rank already failed. */
static int span_fill(ferry__io *io, MPI_File fh, int coll, int64_t part,
                     int64_t r, int64_t k, const rec_layout *L,
                     const char *where, int rc, ferry__err *err) {
  int64_t start = L->begin_rec + r * L->rs, want = k * L->rs;
  if (want > L->fsize - start)
    want = L->fsize - start > 0 ? L->fsize - start : 0;
  io->span_part = -1;
  /* Grown to what the reads need (at most SPAN_MAX), never shrunk. */
  if (rc == 0 && (size_t)want > io->span_cap) {
    unsigned char *nb = realloc(io->span, (size_t)want);
    if (!nb)
      rc = ferry__oom(err, -1, (size_t)want, "the record buffer (%s)", where);
    else {
      io->span = nb;
      io->span_cap = (size_t)want;
    }
  }
  rc = read_flat(fh, coll, start, want, io->span, where, rc, err);
  if (rc < 0)
    return rc;
  io->span_part = part;
  io->span_row = r;
  io->span_n = k;
  io->span_len = (size_t)want;
  return 0;
}

/* Rows [r, r + k) of the variable out of the span buffer into dst. */
static int span_copy(const ferry__io *io, const rec_layout *L, int64_t r,
                     int64_t k, unsigned char *dst, const char *where,
                     ferry__err *err) {
  for (int64_t i = 0; i < k; i++) {
    size_t at = (size_t)((r + i - io->span_row) * L->rs + L->voff);
    if (at + (size_t)L->rb > io->span_len)
      return ferry__seterr(
          err, FERRY_EIO,
          "short read: %s, offset %lld: the file ends "
          "inside record %lld",
          where, (long long)(L->begin_rec + (r + i) * L->rs + L->voff),
          (long long)(r + i));
    memcpy(dst + i * L->rb, io->span + at, (size_t)L->rb);
  }
  return 0;
}

static int span_has(const ferry__io *io, int64_t part, int64_t r, int64_t k) {
  return io->span_part == part && r >= io->span_row &&
         r + k <= io->span_row + io->span_n;
}

/* Record variable: rows through the span buffer (whole records, read once
 * for every record variable of the same rows), or one read per row when
 * records are larger than the buffer or rows large.  With io=collective
 * every call makes exactly one collective read, whatever each rank does:
 * the span's read, or a read of 0 bytes when the rank's rows are in the
 * span already, were read row by row, or its checks failed (rc). */
static int read_rec(ferry__io *io, MPI_File fh, int64_t part,
                    const rec_layout *L, int64_t row, int64_t n, void *buf,
                    const char *where, int rc, ferry__err *err) {
  int coll = io->b.collective;
  unsigned char *dst = buf;
  int direct = L->rs > SPAN_MAX || L->rb >= ROW_DIRECT ||
               (coll && n > SPAN_MAX / (L->rs | 1));
  if (rc < 0 || direct || (coll && span_has(io, part, row, n))) {
    for (int64_t i = 0; rc == 0 && direct && i < n; i++)
      rc = read_flat(fh, 0, L->begin_rec + L->voff + (row + i) * L->rs, L->rb,
                     dst + i * L->rb, where, 0, err);
    if (rc == 0 && !direct)
      rc = span_copy(io, L, row, n, dst, where, err);
    if (coll) {
      int rc2 = ferry__mpi_read(fh, 1, 0, buf, 0, where, NULL);
      (void)rc2; /* a 0-byte read is not checked (toolkit.c) */
    }
    return rc;
  }
  if (coll) {
    rc = span_fill(io, fh, 1, part, row, n, L, where, 0, err);
    return rc < 0 ? rc : span_copy(io, L, row, n, dst, where, err);
  }
  int64_t per = L->rs > 0 ? SPAN_MAX / L->rs : n;
  for (int64_t r = row; rc == 0 && r < row + n;) {
    int64_t k = row + n - r < per ? row + n - r : per;
    if (!span_has(io, part, r, k))
      rc = span_fill(io, fh, 0, part, r, k, L, where, 0, err);
    if (rc == 0)
      rc = span_copy(io, L, r, k, dst + (r - row) * L->rb, where, err);
    r += k;
  }
  return rc;
}

static int classic_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                           int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc)
    return rc;
  const ferry__part *pt = &m->parts[part];
  void *h = NULL;
  if ((rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err)) < 0)
    return rc;
  MPI_File fh = *(MPI_File *)h;
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           m->vars[var].name, io->b.rank);
  /* Local checks after the (possibly collective) open; a collective read
   * is joined with nothing to read when they fail. */
  int is_rec = 0;
  rec_layout L = {0};
  L.rb = (int64_t)m->vars[var].row_bytes;
  L.fsize = pt->file_size[var];
  rc = rec_get(io, pt, var, &is_rec, &L.rs, &L.begin_rec, err);
  if (rc == 0)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  if (rc < 0)
    nrows = 0;
  L.voff = pt->data_offset[var] - L.begin_rec;
  if (is_rec)
    return read_rec(io, fh, part, &L, row, nrows, buf, where, rc, err);
  if (rc < 0 && !io->b.collective)
    return rc;
  return read_flat(fh, io->b.collective, pt->data_offset[var] + row * L.rb,
                   nrows * L.rb, buf, where, rc, err);
}

static void classic_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__io_base_close(&io->b);
  free(io->span);
  free(io);
}

const ferry__backend ferry__backend_classic = {
    .name = "netcdf-classic",
    .version = 1,
    .caps = FERRY__CAP_COLLECTIVE,
    .record_version = CDF_REC_VERSION,
    .probe = classic_probe,
    .accepts = "a netCDF classic file (CDF-1, CDF-2, CDF-5)",
    .describe = classic_describe,
    .io_open = classic_io_open,
    .io_read = classic_io_read,
    .io_close = classic_io_close,
};
