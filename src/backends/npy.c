/*
 * npy.c - the NumPy .npy backend.
 *
 * A part is either one .npy file (one variable, named by the file's stem) or a
 * directory whose *.npy files are the variables.  Rank 0 reads the headers
 * with plain POSIX I/O when the manifest is built (describe); the loader's I/O
 * thread then reads rows with pread (io=independent) or through MPI-IO
 * collectively over the loader's communicator (io=collective).  The header
 * parser below follows numpy/lib/format.py: magic, version, header length,
 * then a Python dict literal; it trusts no length it reads and bounds every
 * index.
 *
 * MPI counts are ints: a collective read must be one MPI_File_read_at_all
 * on every rank (ranks could not agree on a split without talking), so with
 * io=collective one extent of one variable must stay below 2 GiB; a larger
 * one is refused with FERRY_ENOTSUP (the rank still joins the call with a
 * count of 0, so no rank is left waiting).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/npy.h"
#include "backends/toolkit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* numpy refuses headers above 10000 bytes by default; we allow far more but
 * still refuse a length that would make us allocate gigabytes for a corrupt
 * file. */
#define NPY_HEADER_MAX ((size_t)1 << 20)

/* Independent MPI-IO reads (npz's stored members) are split into calls of
 * at most this many bytes, so the int count of MPI_File_read_at never
 * overflows. */

static const char *name_of(const char *path) {
  return path ? path : "<memory>";
}

static int host_is_little(void) {
  const uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* ---- Header parser ---------------------------------------------------- */

typedef struct hdr_cursor {
  const unsigned char *buf;
  size_t pos; /* offset in the file (buf starts at byte 0) */
  size_t end; /* first byte after the header dict          */
  const char *path;
  ferry__err *err;
} hdr_cursor;

static int corrupt(const hdr_cursor *c, const char *what) {
  return ferry__seterr(c->err, FERRY_EFORMAT,
                       "%s: corrupt .npy header at byte %zu: %s",
                       name_of(c->path), c->pos, what);
}

static int is_space(unsigned char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' ||
         ch == '\v';
}

static void skip_ws(hdr_cursor *c) {
  while (c->pos < c->end && is_space(c->buf[c->pos]))
    c->pos++;
}

static int peek(const hdr_cursor *c) {
  return c->pos < c->end ? c->buf[c->pos] : -1;
}

/* A quoted Python string without escapes (all the keys and typestrs numpy
 * writes).  Copied NUL-terminated into out. */
static int parse_string(hdr_cursor *c, char *out, size_t cap) {
  int q = peek(c);
  if (q != '\'' && q != '"')
    return corrupt(c, "expected a quoted string");
  c->pos++;
  size_t n = 0;
  for (;;) {
    int ch = peek(c);
    if (ch < 0)
      return corrupt(c, "unterminated string");
    if (ch == q)
      break;
    if (ch == '\\' || ch == '\n' || ch == 0)
      return corrupt(c, "unexpected character in string");
    if (n + 1 >= cap)
      return corrupt(c, "string too long");
    out[n++] = (char)ch;
    c->pos++;
  }
  out[n] = '\0';
  c->pos++;
  return 0;
}

static int is_ident(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_';
}

static int parse_bool(hdr_cursor *c, int *out) {
  static const char *const words[2] = {"False", "True"};
  for (int v = 0; v < 2; v++) {
    size_t n = strlen(words[v]);
    if (c->end - c->pos >= n && memcmp(c->buf + c->pos, words[v], n) == 0 &&
        !(c->pos + n < c->end && is_ident(c->buf[c->pos + n]))) {
      c->pos += n;
      *out = v;
      return 0;
    }
  }
  return corrupt(c, "expected True or False");
}

/* A Python tuple of non-negative ints: (), (97,), (97, 3, 4).  Dimensions
 * beyond FERRY_MAX_DIMS are counted but not stored. */
static int parse_shape(hdr_cursor *c, int64_t *shape, int *ndim) {
  if (peek(c) != '(')
    return corrupt(c, "expected '(' opening the shape");
  c->pos++;
  int n = 0, trailing_comma = 0;
  skip_ws(c);
  while (peek(c) != ')') {
    int ch = peek(c);
    if (ch < '0' || ch > '9')
      return corrupt(c, "expected a non-negative integer in the shape");
    int64_t v = 0;
    while ((ch = peek(c)) >= '0' && ch <= '9') {
      if (v > (INT64_MAX - (ch - '0')) / 10)
        return corrupt(c, "shape dimension overflows 64 bits");
      v = v * 10 + (ch - '0');
      c->pos++;
    }
    if (ch == 'L' || ch == 'l') /* Python 2 long literal, in old files */
      c->pos++;
    if (n < FERRY_MAX_DIMS)
      shape[n] = v;
    if (n < INT_MAX)
      n++;
    skip_ws(c);
    trailing_comma = 0;
    if (peek(c) == ',') {
      c->pos++;
      trailing_comma = 1;
      skip_ws(c);
    } else if (peek(c) != ')') {
      return corrupt(c, "expected ',' or ')' in the shape");
    }
  }
  if (n == 1 && !trailing_comma)
    return corrupt(c, "shape is not a tuple (missing ',')");
  c->pos++;
  *ndim = n;
  return 0;
}

typedef struct kind_name {
  char kind;
  const char *what;
} kind_name;

static const kind_name unsupported_kinds[] = {
    {'O', "Python objects"},  {'S', "byte strings"},     {'a', "byte strings"},
    {'U', "unicode strings"}, {'V', "void / raw bytes"}, {'M', "datetime64"},
    {'m', "timedelta64"},     {'c', "complex numbers"},
};

static int refuse_dtype(const char *path, const char *descr, const char *what,
                        ferry__err *err) {
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "%s: dtype '%s' (%s) is not supported; ferry reads "
                       "bool, int8-int64, uint8-uint64 and float16/32/64",
                       name_of(path), descr, what);
}

/* Map a numpy typestr ('<f4', '>i8', '|b1', '=u2', 'f8') to a ferry dtype. */
static int parse_descr(const char *descr, ferry_dtype *dtype, int *swapped,
                       const char *path, ferry__err *err) {
  const char *s = descr;
  char order = '=';
  if (*s == '<' || *s == '>' || *s == '|' || *s == '=')
    order = *s++;
  char kind = *s;
  if (kind == '\0')
    return ferry__seterr(err, FERRY_EFORMAT, "%s: empty dtype '%s'",
                         name_of(path), descr);
  s++;
  for (size_t i = 0; i < sizeof unsupported_kinds / sizeof *unsupported_kinds;
       i++)
    if (unsupported_kinds[i].kind == kind)
      return refuse_dtype(path, descr, unsupported_kinds[i].what, err);
  int size = 0;
  if (*s < '0' || *s > '9')
    return refuse_dtype(path, descr, "unknown type", err);
  while (*s >= '0' && *s <= '9') {
    if (size > 1000)
      return refuse_dtype(path, descr, "unknown size", err);
    size = size * 10 + (*s++ - '0');
  }
  if (*s != '\0')
    return refuse_dtype(path, descr, "unknown type", err);

  ferry_dtype dt;
  switch (kind) {
  case 'b':
    if (size != 1)
      return refuse_dtype(path, descr, "unknown bool size", err);
    dt = FERRY_BOOL;
    break;
  case 'i':
  case 'u': {
    int u = kind == 'u';
    switch (size) {
    case 1: dt = u ? FERRY_UINT8 : FERRY_INT8; break;
    case 2: dt = u ? FERRY_UINT16 : FERRY_INT16; break;
    case 4: dt = u ? FERRY_UINT32 : FERRY_INT32; break;
    case 8: dt = u ? FERRY_UINT64 : FERRY_INT64; break;
    default: return refuse_dtype(path, descr, "integer size", err);
    }
    break;
  }
  case 'f':
    switch (size) {
    case 2: dt = FERRY_FLOAT16; break;
    case 4: dt = FERRY_FLOAT32; break;
    case 8: dt = FERRY_FLOAT64; break;
    default: return refuse_dtype(path, descr, "float size", err);
    }
    break;
  default: return refuse_dtype(path, descr, "unknown type", err);
  }
  int little = host_is_little();
  *dtype = dt;
  /* Single bytes have no order; '|' and '=' are native by definition. */
  *swapped =
      size > 1 && ((order == '>' && little) || (order == '<' && !little));
  return 0;
}

/* The header dict {'descr': ..., 'fortran_order': ..., 'shape': ...}, each
 * key exactly once, nothing after it. */
static int parse_dict(hdr_cursor *c, ferry__npy_header *h, char *descr,
                      size_t descr_len, int *fortran) {
  char key[32];
  int have_descr = 0, have_fortran = 0, have_shape = 0;
  int rc;
  ferry__err *err = c->err;
  const char *path = c->path;

  skip_ws(c);
  if (peek(c) != '{')
    return corrupt(c, "expected '{'");
  c->pos++;
  for (;;) {
    skip_ws(c);
    if (peek(c) == '}')
      break;
    size_t key_pos = c->pos;
    if ((rc = parse_string(c, key, sizeof key)) < 0)
      return rc;
    skip_ws(c);
    if (peek(c) != ':')
      return corrupt(c, "expected ':' after a key");
    c->pos++;
    skip_ws(c);
    int *seen;
    if (strcmp(key, "descr") == 0) {
      seen = &have_descr;
      if (peek(c) == '[')
        return ferry__seterr(err, FERRY_ENOTSUP,
                             "%s: structured dtype (a list of fields) is not "
                             "supported; save each field as its own .npy file",
                             name_of(path));
      if ((rc = parse_string(c, descr, descr_len)) < 0)
        return rc;
    } else if (strcmp(key, "fortran_order") == 0) {
      seen = &have_fortran;
      if ((rc = parse_bool(c, fortran)) < 0)
        return rc;
    } else if (strcmp(key, "shape") == 0) {
      seen = &have_shape;
      if ((rc = parse_shape(c, h->shape, &h->ndim)) < 0)
        return rc;
    } else {
      c->pos = key_pos;
      return corrupt(c, "unknown key (expected 'descr', 'fortran_order', "
                        "'shape')");
    }
    if (*seen) {
      c->pos = key_pos;
      return corrupt(c, "duplicate key");
    }
    *seen = 1;
    skip_ws(c);
    if (peek(c) == ',') {
      c->pos++;
      continue;
    }
    if (peek(c) != '}')
      return corrupt(c, "expected ',' or '}'");
  }
  c->pos++;
  skip_ws(c);
  if (c->pos != c->end)
    return corrupt(c, "unexpected text after the header dict");
  if (!have_descr || !have_fortran || !have_shape)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt .npy header: key '%s' is missing",
                         name_of(path),
                         !have_descr     ? "descr"
                         : !have_fortran ? "fortran_order"
                                         : "shape");
  return 0;
}

/* The header parser of ferry__npy_parse_header and
 * ferry__npy_parse_array_header: scalar_ok accepts a 0-d array. */
static int parse_header(const unsigned char *buf, size_t len,
                        ferry__npy_header *h, const char *path, int scalar_ok,
                        ferry__err *err) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  memset(h, 0, sizeof *h);
  if (!buf || len < sizeof magic || memcmp(buf, magic, sizeof magic) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: not a .npy file (no \\x93NUMPY magic at byte 0)",
                         name_of(path));
  if (len < 8)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: truncated .npy header at byte %zu: the version "
                         "needs 8 bytes, only %zu present",
                         name_of(path), len, len);
  h->major = buf[6];
  h->minor = buf[7];
  if (h->major < 1 || h->major > 3 || h->minor != 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: .npy format version %d.%d is not supported "
                         "(1.0, 2.0, 3.0 are)",
                         name_of(path), h->major, h->minor);
  size_t start = h->major == 1 ? 10 : 12;
  if (len < start)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: truncated .npy header at byte %zu: the header "
                         "length field needs %zu bytes, only %zu present",
                         name_of(path), len, start, len);
  size_t hlen = h->major == 1
                    ? (size_t)buf[8] | (size_t)buf[9] << 8
                    : (size_t)buf[8] | (size_t)buf[9] << 8 |
                          (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
  if (hlen > NPY_HEADER_MAX)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt .npy header at byte 8: header length "
                         "%zu exceeds the %zu-byte limit",
                         name_of(path), hlen, NPY_HEADER_MAX);
  if (hlen > len - start)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: truncated .npy header at byte %zu: header "
                         "length %zu needs %zu bytes, only %zu present",
                         name_of(path), len, hlen, start + hlen, len);

  char descr[64];
  int fortran = 0;
  hdr_cursor c = {buf, start, start + hlen, path, err};
  int rc = parse_dict(&c, h, descr, sizeof descr, &fortran);
  if (rc < 0)
    return rc;
  if ((rc = parse_descr(descr, &h->dtype, &h->swapped, path, err)) < 0)
    return rc;
  if (fortran)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: array is stored in Fortran order; convert with "
                         "numpy.ascontiguousarray and save again",
                         name_of(path));
  if (h->ndim == 0 && !scalar_ok)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: array is 0-d (shape ()); a variable needs a "
                         "sample dimension",
                         name_of(path));
  if (h->ndim > FERRY_MAX_DIMS)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: array has %d dimensions; at most %d are "
                         "supported",
                         name_of(path), h->ndim, FERRY_MAX_DIMS);
  /* The whole array's byte count must fit in 64 bits. */
  int64_t bytes = (int64_t)ferry_dtype_size(h->dtype);
  for (int d = 0; d < h->ndim; d++) {
    if (h->shape[d] != 0 && bytes > INT64_MAX / h->shape[d])
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt .npy header: shape overflows 64 bits",
                           name_of(path));
    bytes *= h->shape[d];
  }
  h->data_offset = (int64_t)(start + hlen);
  return 0;
}

int ferry__npy_parse_header(const unsigned char *buf, size_t len,
                            ferry__npy_header *h, const char *path,
                            ferry__err *err) {
  return parse_header(buf, len, h, path, 0, err);
}

int ferry__npy_parse_array_header(const unsigned char *buf, size_t len,
                                  ferry__npy_header *h, const char *label,
                                  ferry__err *err) {
  return parse_header(buf, len, h, label, 1, err);
}

/* ---- Probe and describe (rank 0, POSIX I/O) --------------------------- */

static int has_npy_suffix(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".npy") == 0;
}

/* Directory entries that count as variables: visible *.npy names (dotfiles
 * such as macOS's ._x.npy are metadata, never data). */
static int is_var_name(const char *name) {
  return name[0] != '.' && has_npy_suffix(name);
}

static int dir_has_npy(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    if (!is_var_name(e->d_name))
      continue;
    struct stat st;
    found = fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode);
  }
  closedir(d);
  return found;
}

static int npy_probe(const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0)
    return 0;
  if (S_ISDIR(st.st_mode))
    return dir_has_npy(path);
  if (!S_ISREG(st.st_mode))
    return 0;
  if (has_npy_suffix(path))
    return 1;
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return 0;
  unsigned char m[6];
  ssize_t got = pread(fd, m, sizeof m, 0);
  close(fd);
  return got == (ssize_t)sizeof m && memcmp(m, "\x93NUMPY", 6) == 0;
}

/* pread until n bytes or end of file; *got receives the count. */
/* Read and check one variable's header.  name is the variable's name, for
 * messages. */
static int read_var(const char *path, const char *name, ferry__var *v,
                    int64_t *num_samples, int64_t *data_offset,
                    int64_t *file_size, ferry__err *err) {
  unsigned char pre[12];
  unsigned char *buf = NULL;
  size_t got = 0;
  ferry__npy_header h;
  int rc = 0;
  const char *kind = "";
  int fd = ferry__open_regular(path, &kind);
  if (fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: is %s, not a regular file (variable %s)", path,
                         kind, name);
  if (fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: cannot open: %s",
                         path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno), "%s: cannot stat: %s",
                       path, strerror(errno));
    goto cleanup;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = ferry__seterr(err, FERRY_EFORMAT, "%s: not a regular file", path);
    goto cleanup;
  }
  if (ferry__pread_full(fd, pre, sizeof pre, 0, &got) != 0) {
    rc = ferry__seterr(err, FERRY_EIO, "%s: read failed at offset 0: %s", path,
                       strerror(errno));
    goto cleanup;
  }
  /* Work out how much header there is; the parser reports everything that
   * is wrong with it, so an odd preamble just gets parsed as it is. */
  size_t want = got;
  if (got >= 10 && memcmp(pre, "\x93NUMPY", 6) == 0) {
    if (pre[6] == 1)
      want = 10 + ((size_t)pre[8] | (size_t)pre[9] << 8);
    else if (got == 12 && (pre[6] == 2 || pre[6] == 3))
      want = 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 |
                   (size_t)pre[10] << 16 | (size_t)pre[11] << 24);
    if (want > 12 + NPY_HEADER_MAX)
      want = 12; /* the parser names the bad length */
    if ((int64_t)want > (int64_t)st.st_size)
      want = (size_t)st.st_size;
    if (want < got)
      want = got;
  }
  buf = malloc(want ? want : 1);
  if (!buf) {
    rc = ferry__oom(err, -1, want ? want : 1, "the .npy header of %s", path);
    goto cleanup;
  }
  if (ferry__pread_full(fd, buf, want, 0, &got) != 0) {
    rc = ferry__seterr(err, FERRY_EIO, "%s: read failed at offset 0: %s", path,
                       strerror(errno));
    goto cleanup;
  }
  if ((rc = ferry__npy_parse_header(buf, got, &h, path, err)) < 0)
    goto cleanup;

  size_t elsize = ferry_dtype_size(h.dtype);
  int64_t row_bytes = (int64_t)elsize;
  for (int d = 1; d < h.ndim; d++)
    row_bytes *= h.shape[d]; /* bounded: the parser checked the product */
  /* Empty rows (shape (N, 0)) are refused by the manifest once selected,
   * the same for every backend (dataset/limits.c, check_nonempty_rows). */
  int64_t need = h.shape[0] * row_bytes;
  int64_t have = (int64_t)st.st_size - h.data_offset;
  if (have < 0)
    have = 0;
  if (need > have) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "truncated: file %s holds %lld bytes of data, header "
                       "says %lld (variable %s)",
                       path, (long long)have, (long long)need, name);
    goto cleanup;
  }
  v->dtype = h.dtype;
  v->swapped = h.swapped;
  v->row_ndim = h.ndim - 1;
  memset(v->row_shape, 0, sizeof v->row_shape);
  for (int d = 1; d < h.ndim; d++)
    v->row_shape[d - 1] = h.shape[d];
  v->row_bytes = (size_t)row_bytes;
  *num_samples = h.shape[0];
  *data_offset = h.data_offset;
  *file_size = (int64_t)st.st_size;
cleanup:
  free(buf);
  close(fd);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the variable files in dir, sorted byte-wise. */
static int list_vars(const char *dir, char ***out, int *n, ferry__err *err) {
  char **names = NULL;
  size_t count = 0, cap = 0;
  int rc = 0;
  DIR *d = opendir(dir);
  if (!d)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "%s: cannot open directory: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!is_var_name(e->d_name))
      continue;
    struct stat st; /* relative to the open directory: no path to allocate
                     * (a failed one used to read as a missing file) */
    int have = fstatat(dirfd(d), e->d_name, &st, 0) == 0;
    /* A FIFO, socket or device named like a variable would block or feed
     * garbage: refuse it by name (a subdirectory is not a variable). */
    if (have && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      rc = ferry__seterr(err, FERRY_EFORMAT, "%s: %s is %s, not a regular file",
                         dir, e->d_name,
                         S_ISFIFO(st.st_mode)   ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "a device");
      goto cleanup;
    }
    if (!have || !S_ISREG(st.st_mode))
      continue;
    if (count == cap) {
      size_t ncap = cap ? 2 * cap : 8;
      char **nn = realloc(names, ncap * sizeof *nn);
      if (!nn) {
        rc =
            ferry__oom(err, -1, ncap * sizeof *nn,
                       "the list of %zu file names in directory %s", ncap, dir);
        goto cleanup;
      }
      names = nn;
      cap = ncap;
    }
    if (!(names[count] = strdup(e->d_name))) {
      rc = ferry__oom(err, -1, strlen(e->d_name) + 1,
                      "the name of file %s in directory %s", e->d_name, dir);
      goto cleanup;
    }
    count++;
  }
  if (count == 0) {
    rc = ferry__seterr(err, FERRY_EFORMAT, "%s: directory holds no .npy file",
                       dir);
    goto cleanup;
  }
  if (count > INT_MAX) {
    rc = ferry__seterr(err, FERRY_ENOTSUP, "%s: too many .npy files", dir);
    goto cleanup;
  }
  qsort(names, count, sizeof *names, cmp_str);
cleanup:
  closedir(d);
  if (rc < 0) {
    for (size_t i = 0; i < count; i++)
      free(names[i]);
    free(names);
    return rc;
  }
  *out = names;
  *n = (int)count;
  return 0;
}

/* "dir/samples.npy" -> "samples" (a name without .npy is kept whole). */
static char *stem_of(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (has_npy_suffix(base))
    n -= 4;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, base, n);
    s[n] = '\0';
  }
  return s;
}

static int npy_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  (void)opts; /* npy has no option of its own */
  char **files = NULL;
  int nfiles = 0, rc = 0, is_dir;
  struct stat st;
  memset(out, 0, sizeof *out);
  if (stat(path, &st) != 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                         strerror(errno));
  is_dir = S_ISDIR(st.st_mode);
  if (is_dir) {
    if ((rc = list_vars(path, &files, &nfiles, err)) < 0)
      return rc;
  } else {
    nfiles = 1;
  }
  out->vars = calloc((size_t)nfiles, sizeof *out->vars);
  out->paths = calloc((size_t)nfiles, sizeof *out->paths);
  out->data_offset = calloc((size_t)nfiles, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nfiles, sizeof *out->file_size);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size) {
    rc = ferry__oom(err, -1,
                    (size_t)nfiles *
                        (sizeof *out->vars + sizeof *out->paths +
                         sizeof *out->data_offset + sizeof *out->file_size),
                    "the description of %d variables of %s", nfiles, path);
    goto cleanup;
  }
  out->nvars = nfiles;
  for (int i = 0; i < nfiles; i++) {
    out->paths[i] = is_dir ? ferry__join_path(path, files[i]) : strdup(path);
    out->vars[i].name = stem_of(out->paths[i] ? out->paths[i] : "");
    if (!out->paths[i] || !out->vars[i].name) {
      /* the joined path, or (when that was had) its stem */
      size_t want = out->paths[i] ? strlen(out->paths[i]) + 1
                    : is_dir      ? strlen(path) + strlen(files[i]) + 2
                                  : strlen(path) + 1;
      rc = ferry__oom(err, -1, want, "the path or name of variable %d of %s", i,
                      path);
      goto cleanup;
    }
    int64_t n = 0;
    rc = read_var(out->paths[i], out->vars[i].name, &out->vars[i], &n,
                  &out->data_offset[i], &out->file_size[i], err);
    if (rc < 0)
      goto cleanup;
    if (i == 0) {
      out->num_samples = n;
    } else if (n != out->num_samples) {
      rc = ferry__seterr(err, FERRY_ESHAPE,
                         "%s: variables '%s' (%lld samples) and '%s' (%lld "
                         "samples) differ in length",
                         path, out->vars[0].name, (long long)out->num_samples,
                         out->vars[i].name, (long long)n);
      goto cleanup;
    }
  }
cleanup:
  for (int i = 0; files && i < nfiles; i++)
    free(files[i]);
  free(files);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

/* Open files live in the toolkit's handle cache (backends/toolkit.c), at
 * most max_open_files of them, one per (part, variable): an MPI_File with
 * io=collective, a POSIX descriptor read with pread otherwise.  Independent
 * reads need nothing of MPI-IO, and MPI_File_open on MPI_COMM_SELF cost
 * about 1 ms per file here (ROMIO's set-up), which made a dataset of many
 * small parts an order of magnitude slower than numpy.load on each
 * (issue 12); open + fstat cost what the file system costs. */
struct ferry__io {
  ferry__io_base b; /* manifest, rank, mode, hints, files (io_base.c) */
};

static int npy_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = ferry__io_base_var_open,
      .close = ferry__io_base_var_close,
      .hints = 1,
  };
  void *io = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &io, err);
  *out = io;
  return rc;
}

static int npy_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc0 = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc0)
    return rc0;
  const ferry__part *pt = &m->parts[part];
  const char *path = pt->paths[var];
  const char *vname = m->vars[var].name;
  int64_t row_bytes = (int64_t)m->vars[var].row_bytes;
  void *h = NULL;
  int rc = ferry__handle_get(&io->b.files, part, var, io->b.rank, &h, err);
  if (rc < 0)
    return rc;

  /* Local checks come after the (possibly collective) open so that every
   * rank's cache sees the same sequence; with collective I/O a rank that
   * cannot read still joins the read with a count of 0. */
  int64_t offset = pt->data_offset[var];
  int64_t nbytes = 0;
  rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  if (rc == 0) {
    offset += row * row_bytes; /* bounded by the file size describe checked */
    nbytes = nrows * row_bytes;
    if (io->b.collective && nbytes > INT_MAX)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "collective read of %lld bytes from file %s "
                         "(variable %s, rank %d, offset %lld) exceeds the "
                         "2 GiB one MPI call can read; use a smaller "
                         "chunk_samples",
                         (long long)nbytes, path, vname, io->b.rank,
                         (long long)offset);
  }

  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", path, vname,
           io->b.rank);
  if (!io->b.collective)
    return rc ? rc
              : ferry__pread_exact(*(int *)h, buf, nbytes, offset, where, err);
  return ferry__mpiio_read_range(*(MPI_File *)h, 1, offset, nbytes, buf, rc,
                                 where, err);
}

/* io=mmap: the rows' bytes mapped from the descriptor cache's file (the
 * loader's I/O is then independent).  The size was checked at open. */
static int npy_io_map(ferry__io *io, int64_t part, int var, int64_t row,
                      int64_t nrows, ferry__mapping *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc)
    return rc;
  if (io->b.collective)
    return ferry__seterr(err, FERRY_EINVAL,
                         "io=mmap with files opened for collective I/O");
  void *h = NULL;
  if ((rc = ferry__handle_get(&io->b.files, part, var, io->b.rank, &h, err)) <
      0)
    return rc;
  if ((rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err)))
    return rc;
  const ferry__part *pt = &m->parts[part];
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  return ferry__map_range(*(int *)h, pt->paths[var],
                          pt->data_offset[var] + row * rb, (size_t)(nrows * rb),
                          out, err);
}

/* Collective when the files were opened collectively: every rank holds the
 * same entries in the same order, so the closes match up. */
static void npy_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_npy = {
    .name = "npy",
    .version = 1,
    .caps = FERRY__CAP_COLLECTIVE,
    .probe = npy_probe,
    .accepts = "a .npy file, or a directory of them",
    .describe = npy_describe,
    .io_open = npy_io_open,
    .io_map = npy_io_map,
    .io_read = npy_io_read,
    .io_close = npy_io_close,
};
