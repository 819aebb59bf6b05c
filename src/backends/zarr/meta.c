/*
 * meta.c - the zarr backend's metadata side, all on rank 0 but for the
 * .zarray check every rank makes when it opens a store: parsing .zarray
 * (dtype, fill value, codecs; everything ferry cannot serve is refused
 * here, with FERRY_ENOTSUP naming array, reason and fix, before any reader
 * sees the store), the walk of a store's groups, and describe, which picks
 * the variables and the reader (zarr_reader, see zarr.c) and leaves the
 * reader and the .zarray hash in each variable's record.  It needs
 * jansson only, never netCDF-C.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/zarr.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define Z_MAX_DEPTH 32
#define Z_META_MAX ((off_t)1 << 24) /* a .zarray above 16 MiB is corrupt */
/* Chunk files stat'ed to estimate the compression ratio for ferry info. */
#define Z_RATIO_SAMPLE 16

static int host_is_little(void) {
  const uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* ---- .zarray ---------------------------------------------------------- */

/* Read a whole small file; *len receives its size.  NULL with errno. */
static char *slurp(const char *path, size_t *len) {
  int fd = ferry__open_regular(path, NULL); /* never blocks on a FIFO */
  if (fd == -2)
    errno = EINVAL;
  if (fd < 0)
    return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) != 0)
    goto fail;
  if (!S_ISREG(st.st_mode) || st.st_size > Z_META_MAX) {
    errno = S_ISREG(st.st_mode) ? EFBIG : EISDIR;
    goto fail;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (!buf)
    goto fail;
  size_t done = 0;
  while (done < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (r == 0)
        errno = EIO;
      goto fail;
    }
    done += (size_t)r;
  }
  buf[done] = '\0';
  *len = done;
  close(fd);
  return buf;
fail : {
  int e = errno;
  free(buf);
  close(fd);
  errno = e;
  return NULL;
}
}

/* Read the metadata file path whole; NULL with err set (missing: what says
 * what that means; unreadable).  *len receives its size. */
static char *read_meta(const char *path, const char *what, size_t *len,
                       ferry__err *err) {
  char *text = slurp(path, len);
  if (!text) {
    int e = errno;
    if (e == EINVAL) /* slurp: not a regular file (a FIFO would block) */
      ferry__seterr(err, FERRY_EFORMAT,
                    "%s: is not a regular file (a FIFO, socket or device)",
                    path);
    else
      ferry__seterr(err, e == ENOENT ? FERRY_EFORMAT : ferry__errno_code(e),
                    "%s: %s %s", path,
                    e == ENOENT ? "is missing:" : "cannot be read:",
                    e == ENOENT ? what : strerror(e));
  }
  return text;
}

/* The len bytes of text (the contents of path) as a JSON object; NULL with
 * err set (corrupt JSON, or not an object). */
static json_t *json_object_text(const char *text, size_t len, const char *path,
                                ferry__err *err) {
  json_error_t jerr;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!j)
    ferry__seterr(err, FERRY_EFORMAT,
                  "%s: corrupt JSON at line %d, column %d: %s", path, jerr.line,
                  jerr.column, jerr.text);
  else if (!json_is_object(j)) {
    ferry__seterr(err, FERRY_EFORMAT,
                  "%s: corrupt metadata: not a JSON "
                  "object",
                  path);
    json_decref(j);
    j = NULL;
  }
  return j;
}

/* numpy typestr ("<f4") -> dtype; 0, or -1 with why. */
static int parse_dtype(const char *s, zmeta *z, const char **why) {
  char order = s[0], kind = s[0] ? s[1] : 0;
  char *end = NULL;
  long size = kind ? strtol(s + 2, &end, 10) : 0;
  if (!(order == '<' || order == '>' || order == '|' || order == '=') ||
      !kind || !end || end == s + 2 || (*end && *end != '['))
    return *why = "a dtype numpy does not write", -1;
  switch (kind) {
  case 'b':
    if (size != 1)
      return *why = "an unusual bool width", -1;
    z->dtype = FERRY_BOOL;
    break;
  case 'i':
  case 'u': {
    static const ferry_dtype si[] = {FERRY_INT8, FERRY_INT16, FERRY_INT32,
                                     FERRY_INT64};
    static const ferry_dtype ui[] = {FERRY_UINT8, FERRY_UINT16, FERRY_UINT32,
                                     FERRY_UINT64};
    int k = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
    if (k < 0)
      return *why = "an integer of unusual width", -1;
    z->dtype = kind == 'i' ? si[k] : ui[k];
    break;
  }
  case 'f':
    if (size == 2)
      z->dtype = FERRY_FLOAT16;
    else if (size == 4)
      z->dtype = FERRY_FLOAT32;
    else if (size == 8)
      z->dtype = FERRY_FLOAT64;
    else
      return *why = "a float other than float16/32/64", -1;
    break;
  case 'c': return *why = "a complex dtype", -1;
  case 'M': return *why = "a datetime64 dtype", -1;
  case 'm': return *why = "a timedelta64 dtype", -1;
  case 'O': return *why = "an object dtype", -1;
  case 'S':
  case 'U': return *why = "a string dtype", -1;
  case 'V': return *why = "a raw (void) dtype", -1;
  default: return *why = "an unknown dtype", -1;
  }
  z->itemsize = (size_t)size;
  z->swapped = size > 1 && ((order == '<' && !host_is_little()) ||
                            (order == '>' && host_is_little()));
  return 0;
}

/* fill_value -> stored bytes; 0, or -1 when it cannot be represented. */
static int parse_fill(json_t *jf, zmeta *z) {
  union {
    double d;
    float f;
    int64_t i;
    uint64_t u;
    uint8_t b[8];
  } v;
  double d = 0;
  int isnum = json_is_number(jf), isbool = json_is_boolean(jf);
  memset(&v, 0, sizeof v);
  if (json_is_null(jf)) {
    z->has_fill = 0;
    return 0;
  }
  if (json_is_string(jf)) {
    const char *s = json_string_value(jf);
    if (strcmp(s, "NaN") == 0)
      d = 0.0 / 0.0;
    else if (strcmp(s, "Infinity") == 0)
      d = 1.0 / 0.0;
    else if (strcmp(s, "-Infinity") == 0)
      d = -1.0 / 0.0;
    else
      return -1;
    isnum = 1;
    if (z->dtype != FERRY_FLOAT32 && z->dtype != FERRY_FLOAT64)
      return -1;
  } else if (isbool) {
    d = json_is_true(jf);
  } else if (isnum) {
    d = json_number_value(jf);
  } else {
    return -1;
  }
  unsigned char out[8];
  size_t n = z->itemsize;
  if (json_is_integer(jf) && z->dtype != FERRY_FLOAT32 &&
      z->dtype != FERRY_FLOAT64 && z->dtype != FERRY_FLOAT16) {
    v.i = (int64_t)json_integer_value(jf);
    memcpy(out, &v, 8);
  } else {
    switch (z->dtype) {
    case FERRY_FLOAT64: v.d = d; break;
    case FERRY_FLOAT32: v.f = (float)d; break;
    case FERRY_FLOAT16:
      if (d != 0)
        return -1; /* only 0 (the common case) is converted */
      break;
    default:
      if (d != (double)(int64_t)d)
        return -1;
      v.i = (int64_t)d;
    }
    memcpy(out, &v, 8);
  }
  /* out holds a native value in its low-order bytes. */
  if (!host_is_little() && n < 8 && z->dtype != FERRY_FLOAT32 &&
      z->dtype != FERRY_FLOAT64)
    memmove(out, out + 8 - n, n);
  memcpy(z->fill, out, n);
  if (z->swapped)
    ferry__byteswap(z->fill, 1, n);
  z->has_fill = 1;
  return 0;
}

/* One codec object of .zarray; 0 or an error naming the array. */
static int parse_codec(json_t *jc, zmeta *z, const char *where,
                       ferry__err *err) {
  json_t *jid = json_is_object(jc) ? json_object_get(jc, "id") : NULL;
  if (!json_is_string(jid))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: a codec without an \"id\"",
                         where);
  const char *id = json_string_value(jid);
  int kind = ferry__codec_kind(id);
  if (kind == FERRY__CODEC_NONE)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: codec '%s' cannot be decoded by ferry (it "
                         "decodes blosc, zlib, gzip, zstd, lz4 and the "
                         "shuffle filter); rewrite the array with one of "
                         "them, e.g. zarr.copy_store or "
                         "zarr.array(src, compressor=numcodecs.Blosc())",
                         where, id);
  if (!ferry__codec_available(kind))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: codec '%s': this ferry was built without its "
                         "library (install it, e.g. apt-get install "
                         "lib%s-dev, and rebuild ferry)",
                         where, id, kind == FERRY__CODEC_GZIP ? "z" : id);
  if (z->ncodecs == Z_MAX_CODECS)
    return ferry__seterr(err, FERRY_ENOTSUP, "%s: more than %d codecs", where,
                         Z_MAX_CODECS);
  unsigned param = 0;
  size_t used = strlen(z->codecs_text);
  char extra[64] = "";
  if (kind == FERRY__CODEC_SHUFFLE) {
    json_t *es = json_object_get(jc, "elementsize");
    json_int_t e = es ? json_integer_value(es) : 4;
    if ((es && !json_is_integer(es)) || e < 0 || e > 65535)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: shuffle elementsize", where);
    param = (unsigned)e;
    snprintf(extra, sizeof extra, "(%u)", param);
  } else if (kind == FERRY__CODEC_BLOSC) {
    json_t *cn = json_object_get(jc, "cname"),
           *sh = json_object_get(jc, "shuffle");
    json_int_t s = json_is_integer(sh) ? json_integer_value(sh) : 1;
    snprintf(extra, sizeof extra, "(%s%s)",
             json_is_string(cn) ? json_string_value(cn) : "?",
             s == 1   ? ", shuffle"
             : s == 2 ? ", bitshuffle"
                      : "");
  } else {
    json_t *lv = json_object_get(jc, "level");
    if (json_is_integer(lv))
      snprintf(extra, sizeof extra, "(%d)", (int)json_integer_value(lv));
  }
  snprintf(z->codecs_text + used, sizeof z->codecs_text - used, "%s%s%s",
           used ? " + " : "", id, extra);
  z->codec[z->ncodecs] = kind;
  z->param[z->ncodecs] = param;
  z->ncodecs++;
  return 0;
}

/* shape and chunks: lists of the same length, sizes >= 0 and >= 1. */
static int parse_shape(json_t *j, const char *path, zmeta *z, ferry__err *err) {
  json_t *shape = json_object_get(j, "shape"),
         *chunks = json_object_get(j, "chunks");
  if (!json_is_array(shape) || !json_is_array(chunks) ||
      json_array_size(shape) != json_array_size(chunks) ||
      json_array_size(shape) > Z_MAX_DIMS)
    return ferry__seterr(err,
                         json_array_size(shape) > Z_MAX_DIMS ? FERRY_ENOTSUP
                                                             : FERRY_EFORMAT,
                         "%s: %s", path,
                         json_array_size(shape) > Z_MAX_DIMS
                             ? "too many dimensions for ferry"
                             : "corrupt metadata: shape and chunks must be "
                               "lists of the same length");
  z->ndim = (int)json_array_size(shape);
  for (int d = 0; d < z->ndim; d++) {
    json_t *s = json_array_get(shape, (size_t)d),
           *c = json_array_get(chunks, (size_t)d);
    if (!json_is_integer(s) || !json_is_integer(c) ||
        json_integer_value(s) < 0 || json_integer_value(c) < 1)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: bad shape or chunks", path);
    z->shape[d] = (int64_t)json_integer_value(s);
    z->chunks[d] = (int64_t)json_integer_value(c);
  }
  return 0;
}

/* dtype: a plain numpy typestr ferry represents. */
static int parse_dtype_field(json_t *j, const char *label, zmeta *z,
                             ferry__err *err) {
  json_t *dtype = json_object_get(j, "dtype");
  const char *why = NULL;
  if (!json_is_string(dtype))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a structured dtype, which ferry cannot "
                         "represent (store each field as its own array)",
                         label);
  if (parse_dtype(json_string_value(dtype), z, &why) < 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: dtype '%s' is %s, which ferry cannot "
                         "represent (bool, integers and float16/32/64 only)",
                         label, json_string_value(dtype), why);
  return 0;
}

/* order ("C"; "F" only for one dimension) and dimension_separator. */
static int parse_layout(json_t *j, const char *path, const char *label,
                        zmeta *z, ferry__err *err) {
  json_t *order = json_object_get(j, "order"),
         *sep = json_object_get(j, "dimension_separator");
  if (!json_is_string(order) || (strcmp(json_string_value(order), "C") != 0 &&
                                 strcmp(json_string_value(order), "F") != 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: order must be \"C\" or \"F\"",
                         path);
  if (strcmp(json_string_value(order), "F") == 0 && z->ndim > 1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: order \"F\" (Fortran) is not supported: "
                         "netCDF-C returns such arrays transposed without an "
                         "error; rewrite it in C order, e.g. "
                         "zarr.array(src[...], chunks=src.chunks, order='C')",
                         label);
  z->sep = '.';
  if (sep && !json_is_null(sep)) {
    const char *s = json_is_string(sep) ? json_string_value(sep) : "";
    if (strcmp(s, ".") != 0 && strcmp(s, "/") != 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: dimension_separator must "
                           "be \".\" or \"/\"",
                           path);
    z->sep = s[0];
  }
  return 0;
}

/* filters, then compressor: the codec chain in encode order. */
static int parse_codecs(json_t *j, const char *path, const char *label,
                        zmeta *z, ferry__err *err) {
  json_t *comp = json_object_get(j, "compressor"),
         *filt = json_object_get(j, "filters");
  int rc;
  if (filt && !json_is_null(filt)) {
    if (!json_is_array(filt))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: filters must be a list or "
                           "null",
                           path);
    for (size_t i = 0; i < json_array_size(filt); i++)
      if ((rc = parse_codec(json_array_get(filt, i), z, label, err)) < 0)
        return rc;
  }
  if (comp && !json_is_null(comp)) {
    if ((rc = parse_codec(comp, z, label, err)) < 0)
      return rc;
    z->has_compressor = 1;
  }
  return 0;
}

/* a * b into *out; 1 when it does not fit in int64 (a, b >= 0). */
static int mul_overflows(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/* The largest band of chunks (one chunk along dimension 0, every chunk
 * along the others) ferry accepts: the native reader keeps about four of
 * its size per variable (native_cache_bytes), and that sum must fit. */
#define Z_BAND_MAX (INT64_MAX / 8)

/* chunk_bytes and across, with every product of sizes read from the
 * metadata checked before use: the bytes of one chunk, of one sample (a
 * row of dimension 0), of a band of chunks, and the number of chunks must
 * all fit in 64 bits, or the store is refused naming the field. */
static int derive_sizes(const char *path, zmeta *z, ferry__err *err) {
  int64_t chunk = (int64_t)z->itemsize, row = (int64_t)z->itemsize;
  int64_t across = 1, nchunks = 1, band = 0;
  for (int d = 0; d < z->ndim; d++) {
    if (mul_overflows(chunk, z->chunks[d], &chunk))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: chunks: the bytes of one "
                           "chunk overflow 64 bits",
                           path);
    if (d > 0 && (mul_overflows(row, z->shape[d], &row) ||
                  mul_overflows(across, zarr_nchunks(z, d), &across)))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: shape: the bytes or chunks "
                           "of one sample (a row of dimension 0) overflow 64 "
                           "bits",
                           path);
  }
  if (z->ndim > 0 && mul_overflows(zarr_nchunks(z, 0), across, &nchunks))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: shape and chunks: the number "
                         "of chunks overflows 64 bits",
                         path);
  if (mul_overflows(chunk, across, &band) || band > Z_BAND_MAX)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: chunks: one band of chunks "
                         "(one along dimension 0, all along the others) "
                         "holds more than 2^60 bytes",
                         path);
  z->chunk_bytes = (size_t)chunk;
  z->across = across;
  return 0;
}

/* The fields of a parsed .zarray, in the order they are checked. */
static int zarray_fields(json_t *j, const char *path, const char *label,
                         zmeta *z, ferry__err *err) {
  json_t *fmt = json_object_get(j, "zarr_format"),
         *fill = json_object_get(j, "fill_value");
  int rc;
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 2)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: zarr_format is not 2: ferry reads Zarr v2 "
                         "stores only",
                         path);
  if ((rc = parse_shape(j, path, z, err)) < 0 ||
      (rc = parse_dtype_field(j, label, z, err)) < 0 ||
      (rc = parse_layout(j, path, label, z, err)) < 0 ||
      (rc = parse_codecs(j, path, label, z, err)) < 0)
    return rc;
  if (!fill || parse_fill(fill, z) < 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: fill_value cannot be represented in its "
                         "dtype by ferry",
                         label);
  return derive_sizes(path, z, err);
}

/* Parse the text of a .zarray (len bytes read from path) into z. */
int ferry__zarr_parse_zarray_text(const char *text, size_t len,
                                  const char *path, const char *label, zmeta *z,
                                  ferry__err *err) {
  memset(z, 0, sizeof *z);
  z->hash = ferry__fnv1a(FERRY__FNV_INIT, text, len) >> 1;
  z->meta_size = (int64_t)len;
  json_t *j = json_object_text(text, len, path, err);
  if (!j)
    return err ? err->code : FERRY_EFORMAT;
  int rc = zarray_fields(j, path, label, z, err);
  json_decref(j);
  return rc;
}

/* Parse ARRAYDIR/.zarray into z.  Errors name the store and the array. */
int ferry__zarr_parse_zarray(const char *adir, const char *label, zmeta *z,
                             ferry__err *err) {
  char *path = ferry__join_path(adir, ".zarray");
  memset(z, 0, sizeof *z);
  if (!path)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  size_t len = 0;
  char *text = read_meta(path,
                         "the array has no .zarray (not written "
                         "completely, or not a Zarr v2 array)",
                         &len, err);
  int rc = text ? ferry__zarr_parse_zarray_text(text, len, path, label, z, err)
                : (err ? err->code : FERRY_EFORMAT);
  free(text);
  free(path);
  return rc;
}

/* ---- Store layout ----------------------------------------------------- */

/* A metadata "file" that exists as a FIFO, socket or device counts as
 * present: reading it then refuses it by name (ferry__open_regular) rather
 * than calling it missing. */
int ferry__zarr_exists_in(const char *dir, const char *name, int want_dir) {
  char *p = ferry__join_path(dir, name);
  struct stat st;
  int yes = p && stat(p, &st) == 0 &&
            (want_dir ? S_ISDIR(st.st_mode) : !S_ISDIR(st.st_mode));
  free(p);
  return yes;
}

/* The store directory of a dataset string: a directory, or
 * file://PATH#mode=... (the path part, decoded no further). */
char *ferry__zarr_store_dir(const char *spec) {
  if (strncmp(spec, "file://", 7) == 0) {
    const char *p = spec + 7, *hash = strchr(p, '#');
    size_t n = hash ? (size_t)(hash - p) : strlen(p);
    char *s = malloc(n + 1);
    if (s) {
      memcpy(s, p, n);
      s[n] = '\0';
    }
    return s;
  }
  return strdup(spec);
}

/* An array found in a store. */
typedef struct zarr_array {
  char *name; /* path inside the store; the store's stem for a root array */
  zmeta z;
  int ok; /* metadata parsed; else err holds why  */
  ferry__err err;
} zarr_array;

typedef struct zarr_walk {
  zarr_array *a;
  int n, cap;
  int root_array;
} zarr_walk;

static int is_chunk_name(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!(*s >= '0' && *s <= '9') && *s != '.')
      return 0;
  return 1;
}

static int add_array(zarr_walk *w, const char *dir, const char *name) {
  if (w->n == w->cap) {
    int ncap = w->cap ? 2 * w->cap : 16;
    zarr_array *na = realloc(w->a, (size_t)ncap * sizeof *na);
    if (!na)
      return -1;
    w->a = na;
    w->cap = ncap;
  }
  zarr_array *x = &w->a[w->n];
  memset(x, 0, sizeof *x);
  if (!(x->name = strdup(name)))
    return -1;
  w->n++;
  x->ok = ferry__zarr_parse_zarray(dir, name, &x->z, &x->err) == 0;
  return 0;
}

/* Visit the group at dir (its path inside the store: prefix). */
static int walk_group(zarr_walk *w, const char *store, const char *dir,
                      const char *prefix, int depth, ferry__err *err) {
  DIR *d = opendir(dir);
  int rc = 0;
  if (!d)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "store %s: cannot list %s: %s", store, dir,
                         strerror(errno));
  if (depth > Z_MAX_DEPTH) {
    closedir(d);
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: groups nested deeper than %d", store,
                         Z_MAX_DEPTH);
  }
  /* Sorted names: the variable order is the same on every file system. */
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (nn == cap) {
      size_t ncap = cap ? 2 * cap : 32;
      char **nv = realloc(names, ncap * sizeof *nv);
      if (!nv) {
        rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory");
        goto cleanup;
      }
      names = nv;
      cap = ncap;
    }
    if (!(names[nn] = strdup(e->d_name))) {
      rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory");
      goto cleanup;
    }
    nn++;
  }
  for (size_t i = 1; i < nn; i++)
    for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
      char *t = names[k];
      names[k] = names[k - 1];
      names[k - 1] = t;
    }
  for (size_t i = 0; i < nn && rc == 0; i++) {
    char *sub = ferry__join_path(dir, names[i]);
    char *rel = *prefix ? ferry__join_path(prefix, names[i]) : strdup(names[i]);
    struct stat st;
    if (!sub || !rel) {
      rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory");
    } else if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (ferry__zarr_exists_in(sub, ".zarray", 0)) {
        if (add_array(w, sub, rel) < 0)
          rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory");
      } else if (ferry__zarr_exists_in(sub, ".zgroup", 0)) {
        rc = walk_group(w, store, sub, rel, depth + 1, err);
      } else if (ferry__zarr_exists_in(sub, "zarr.json", 0)) {
        rc = ferry__seterr(err, FERRY_ENOTSUP,
                           "store %s: %s is a Zarr v3 node (zarr.json); "
                           "netCDF-C and ferry read Zarr v2 only",
                           store, rel);
      } else {
        /* Chunk files without metadata: an array whose .zarray is lost. */
        DIR *sd = opendir(sub);
        struct dirent *se;
        int chunks = 0;
        while (sd && !chunks && (se = readdir(sd)) != NULL)
          chunks = se->d_name[0] != '.' && is_chunk_name(se->d_name);
        if (sd)
          closedir(sd);
        if (chunks)
          rc = ferry__seterr(err, FERRY_EFORMAT,
                             "store %s: %s/.zarray is missing: %s holds "
                             "chunk files but no array metadata (not "
                             "written completely?)",
                             store, rel, rel);
      }
    }
    free(sub);
    free(rel);
  }
cleanup:
  for (size_t i = 0; i < nn; i++)
    free(names[i]);
  free(names);
  closedir(d);
  return rc;
}

static const char *v3_advice =
    "Zarr v3 is not supported by netCDF-C yet (nor by ferry); convert the "
    "store to v2, e.g. with zarr-python 3: "
    "zarr.copy_store / zarr.create_array(..., zarr_format=2) and write the "
    "arrays again";

/* Check the text of a .zgroup (len bytes read from path). */
int ferry__zarr_parse_zgroup_text(const char *text, size_t len,
                                  const char *path, ferry__err *err) {
  json_t *j = json_object_text(text, len, path, err);
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 2)
    rc = ferry__seterr(err, FERRY_ENOTSUP, "%s: zarr_format is not 2. %s", path,
                       v3_advice);
  json_decref(j);
  return rc;
}

/* Walk the store: its arrays, or the store itself when it is one array. */
static int walk_store(const char *store, zarr_walk *w, ferry__err *err) {
  memset(w, 0, sizeof *w);
  if (ferry__zarr_exists_in(store, "zarr.json", 0))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s is a Zarr v3 store "
                         "(zarr.json). %s",
                         store, v3_advice);
  if (ferry__zarr_exists_in(store, ".zarray", 0)) {
    const char *base = strrchr(store, '/');
    char *stem = strdup(base && base[1] ? base + 1 : store);
    if (!stem)
      return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
    char *slash = strchr(stem, '/');
    if (slash)
      *slash = '\0';
    size_t n = strlen(stem);
    if (n > 5 && strcmp(stem + n - 5, ".zarr") == 0)
      stem[n - 5] = '\0';
    int rc = add_array(w, store, stem) < 0
                 ? ferry__seterr(err, FERRY_ENOMEM, "out of memory")
                 : 0;
    free(stem);
    w->root_array = 1;
    return rc;
  }
  if (!ferry__zarr_exists_in(store, ".zgroup", 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is not a Zarr v2 store: it holds neither "
                         ".zgroup nor .zarray",
                         store);
  char *zg = ferry__join_path(store, ".zgroup");
  if (!zg)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  size_t len = 0;
  char *text = read_meta(zg, "not a Zarr group", &len, err);
  int rc = text ? ferry__zarr_parse_zgroup_text(text, len, zg, err)
                : (err ? err->code : FERRY_EFORMAT);
  free(text);
  free(zg);
  if (rc == 0)
    rc = walk_group(w, store, store, "", 0, err);
  return rc;
}

static void walk_free(zarr_walk *w) {
  for (int i = 0; i < w->n; i++)
    free(w->a[i].name);
  free(w->a);
  memset(w, 0, sizeof *w);
}

/* 1 when netCDF-C 4.9.0 can open every array of the store safely. */
static int netcdf_can_open(const zarr_walk *w, const char **why) {
  if (w->root_array)
    return *why = "the store is a single array (netCDF-C opens groups)", 0;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok)
      return *why = "an array of the store has metadata netCDF-C cannot "
                    "read",
             0;
    if (x->z.dtype == FERRY_BOOL)
      return *why = "the store holds a bool array (netCDF-C 4.9.0 crashes "
                    "on them)",
             0;
    if (x->z.dtype == FERRY_FLOAT16)
      return *why = "the store holds a float16 array (netCDF-C has no "
                    "float16)",
             0;
  }
  return 1;
}

/* ---- Describe (rank 0) ------------------------------------------------ */

/* Path of the chunk file of chunk index idx (ndim entries). */
char *ferry__zarr_chunk_path(const char *adir, const zmeta *z,
                             const int64_t *idx) {
  char key[Z_MAX_DIMS * 21 + 1];
  size_t used = 0;
  for (int d = 0; d < z->ndim; d++)
    used += (size_t)snprintf(key + used, sizeof key - used, "%s%lld",
                             d ? (z->sep == '/' ? "/" : ".") : "",
                             (long long)idx[d]);
  return ferry__join_path(adir, key);
}

/* What the native reader keeps per variable and open store (describe
 * counts it in cache_bytes): the band (c0 rows; one band of chunks bounds
 * it), one decoded chunk when chunks are not rows, the stored bytes of one
 * chunk file when compressed, one intermediate stage of a chain of codecs. */
static size_t native_cache_bytes(const zmeta *z) {
  size_t n = z->chunk_bytes * (size_t)z->across;
  if (!zarr_chunk_is_rows(z))
    n += z->chunk_bytes;
  if (z->ncodecs)
    n += zarr_stored_bound(z->chunk_bytes);
  if (z->ncodecs > 1)
    n += z->chunk_bytes;
  return n;
}

char *ferry__zarr_array_dir(const char *store, const char *name,
                            int root_array) {
  return root_array ? strdup(store) : ferry__join_path(store, name);
}

/* "chunks (10, 3), blosc(lz4, shuffle), 2.8:1; ..." for ferry info. */
static char *storage_text(const char *adir, const zmeta *z, const char *reader,
                          int64_t *cache) {
  char buf[512];
  size_t used = 0;
  used += (size_t)snprintf(buf, sizeof buf, "chunks (");
  for (int d = 0; d < z->ndim; d++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld",
                             d ? ", " : "", (long long)z->chunks[d]);
  used += (size_t)snprintf(buf + used, sizeof buf - used, "%s), %s",
                           z->ndim == 1 ? "," : "",
                           z->ncodecs ? z->codecs_text : "uncompressed");
  /* Compression ratio from the first chunks along dimension 0. */
  int64_t idx[Z_MAX_DIMS] = {0}, nch = zarr_nchunks(z, 0);
  long long stored = 0, raw = 0, missing = 0;
  for (int64_t c = 0; c < nch && c < Z_RATIO_SAMPLE; c++) {
    idx[0] = c;
    char *p = ferry__zarr_chunk_path(adir, z, idx);
    struct stat st;
    if (p && stat(p, &st) == 0) {
      stored += (long long)st.st_size;
      raw += (long long)z->chunk_bytes;
    } else {
      missing++;
    }
    free(p);
  }
  if (z->ncodecs && stored > 0 && used < sizeof buf)
    used += (size_t)snprintf(buf + used, sizeof buf - used, ", %.1f:1",
                             (double)raw / (double)stored);
  if (missing && used < sizeof buf)
    used += (size_t)snprintf(
        buf + used, sizeof buf - used,
        ", %lld of the first %lld chunks absent (%s)", missing,
        (long long)(nch < Z_RATIO_SAMPLE ? nch : Z_RATIO_SAMPLE),
        z->has_fill ? "read as fill_value" : "an error: no fill_value");
  if (z->across > 1 && used < sizeof buf)
    used += (size_t)snprintf(buf + used, sizeof buf - used,
                             "; chunked on other dimensions too: each read "
                             "decodes %lld chunks per %lld rows",
                             (long long)z->across, (long long)z->chunks[0]);
  if (used < sizeof buf)
    snprintf(buf + used, sizeof buf - used, "; reader %s", reader);
  *cache = strcmp(reader, "netcdf") == 0
               ? (int64_t)z->chunk_bytes * z->across * 2
               : (int64_t)native_cache_bytes(z);
  return strdup(buf);
}

/* The zarr_reader option ("auto" when opts is NULL). */
static void reader_option(const ferry_options *opts, char *buf, size_t len) {
  if (!opts || ferry_options_get(opts, "zarr_reader", buf, len) != 0)
    snprintf(buf, len, "auto");
}

/* The store directory must exist and be one. */
static int check_store_dir(const char *store, ferry__err *err) {
  struct stat st;
  if (stat(store, &st) != 0 || !S_ISDIR(st.st_mode))
    return ferry__seterr(err, errno == ENOENT ? FERRY_ENOENT : FERRY_EFORMAT,
                         "%s: %s", store,
                         errno == ENOENT ? strerror(errno)
                                         : "not a directory (a Zarr store is "
                                           "one)");
  return 0;
}

/* 1 when array x is a variable: its dimension 0 is the longest. */
static int is_selected(const zarr_array *x, int64_t longest) {
  return x->z.ndim >= 1 && x->z.shape[0] == longest;
}

/* The sample dimension (the longest dimension 0 of the arrays, *longest)
 * and the number of variables (*nsel); an error for an array whose
 * metadata failed, or when no array has a sample dimension. */
static int pick_arrays(const char *store, const zarr_walk *w, int64_t *longest,
                       int *nsel, ferry__err *err) {
  *longest = -1;
  *nsel = 0;
  for (int i = 0; i < w->n; i++)
    if (w->a[i].ok && w->a[i].z.ndim >= 1 && w->a[i].z.shape[0] > *longest)
      *longest = w->a[i].z.shape[0];
  /* Arrays whose metadata could not be read at all are errors: they might
   * be the variables. */
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok && (x->err.code != FERRY_ENOTSUP || *longest < 0))
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
  }
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    /* Unsupported (dtype, order, codec): an error if it could be a
     * variable.  Its shape is unknown when its dtype failed, so any
     * unsupported array of the store is reported. */
    if (!x->ok)
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
    if (is_selected(x, *longest))
      (*nsel)++;
  }
  if (*nsel == 0)
    return ferry__seterr(err, FERRY_EEMPTY,
                         "store %s holds no array with a sample dimension",
                         store);
  return 0;
}

/* The reader: netCDF-C where it can read the store (and was built in),
 * unless zarr_reader says native; zarr_reader=netcdf where it cannot is
 * FERRY_ENOTSUP. */
static int pick_reader(const char *store, const ferry_options *opts,
                       const zarr_walk *w, int *use_netcdf, ferry__err *err) {
  const char *why = NULL;
  char mode[16];
  reader_option(opts, mode, sizeof mode);
  *use_netcdf = netcdf_can_open(w, &why);
#ifndef HAVE_NCZARR
  *use_netcdf = 0;
  why = "this ferry was built without netCDF-C (NCZarr); use zarr_reader="
        "native or auto";
#endif
  if (strcmp(mode, "netcdf") == 0 && !*use_netcdf)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: zarr_reader=netcdf, but netCDF-C cannot "
                         "read it: %s",
                         store, why);
  if (strcmp(mode, "native") == 0)
    *use_netcdf = 0;
  return 0;
}

/* The per-variable arrays of out, for nsel variables. */
static int alloc_desc(ferry__part_desc *out, int nsel, const char *store,
                      ferry__err *err) {
  out->vars = calloc((size_t)nsel, sizeof *out->vars);
  out->paths = calloc((size_t)nsel, sizeof *out->paths);
  out->data_offset = calloc((size_t)nsel, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nsel, sizeof *out->file_size);
  out->rec = calloc((size_t)nsel, sizeof *out->rec);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec)
    return ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
  out->nvars = nsel;
  return 0;
}

/* What was chosen and what was skipped, and why (ferry info; the error of
 * a `vars` naming a skipped array), into out->notes. */
static int describe_notes(const char *store, const zarr_walk *w,
                          int64_t longest, ferry__part_desc *out,
                          ferry__err *err) {
  char chosen[512] = "", skipped[1536] = "";
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    char *buf = is_selected(x, longest) ? chosen : skipped;
    size_t cap = buf == chosen ? sizeof chosen : sizeof skipped;
    size_t n = strlen(buf);
    if (buf == chosen)
      snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", x->name);
    else if (x->z.ndim < 1)
      snprintf(buf + n, cap - n, "%s%s (a scalar, no sample dimension)",
               n ? "; " : "", x->name);
    else
      snprintf(buf + n, cap - n,
               "%s%s (%lld rows where the sample dimension has %lld)",
               n ? "; " : "", x->name, (long long)x->z.shape[0],
               (long long)longest);
  }
  size_t len = strlen(chosen) + strlen(skipped) + 64;
  if (!(out->notes = malloc(len)))
    return ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
  snprintf(out->notes, len, "chose %s (%lld rows); skipped %s", chosen,
           (long long)longest, skipped[0] ? skipped : "nothing");
  return 0;
}

/* Variable k of out from array x (its name moves to the variable). */
static int describe_var(const char *store, const zarr_walk *w, zarr_array *x,
                        int use_netcdf, ferry__part_desc *out, int k,
                        ferry__err *err) {
  ferry__var *v = &out->vars[k];
  v->name = x->name;
  x->name = NULL;
  v->dtype = x->z.dtype;
  v->swapped = x->z.swapped;
  v->row_ndim = x->z.ndim - 1;
  v->row_bytes = x->z.itemsize;
  for (int d = 1; d < x->z.ndim; d++) {
    v->row_shape[d - 1] = x->z.shape[d];
    v->row_bytes *= (size_t)x->z.shape[d];
  }
  v->chunk_rows = x->z.chunks[0];
  char *adir = ferry__zarr_array_dir(store, v->name, w->root_array);
  int64_t cache = 0;
  v->storage =
      adir ? storage_text(adir, &x->z, use_netcdf ? "netcdf" : "native", &cache)
           : NULL;
  v->cache_bytes = (size_t)cache;
  free(adir);
  /* Every rank checks its .zarray against its size and hash.  The path
   * each rank opens is the store directory (the netCDF reader makes its
   * URL from it). */
  out->file_size[k] = x->z.meta_size;
  if (!(out->paths[k] = strdup(store)) || !v->storage ||
      ferry__zarr_rec_put(&out->rec[k], use_netcdf ? ZREC_NETCDF : ZREC_NATIVE,
                          x->z.hash) < 0)
    return ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
  return 0;
}

int ferry__zarr_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err) {
  zarr_walk w;
  int rc = 0, nsel = 0, use_netcdf = 0;
  int64_t longest = -1;
  char *store = ferry__zarr_store_dir(path);
  memset(out, 0, sizeof *out);
  memset(&w, 0, sizeof w);
  if (!store)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  if ((rc = check_store_dir(store, err)) < 0 ||
      (rc = walk_store(store, &w, err)) < 0 ||
      (rc = pick_arrays(store, &w, &longest, &nsel, err)) < 0 ||
      (rc = pick_reader(store, opts, &w, &use_netcdf, err)) < 0 ||
      (rc = alloc_desc(out, nsel, store, err)) < 0)
    goto cleanup;
  out->num_samples = longest;
  if ((rc = describe_notes(store, &w, longest, out, err)) < 0)
    goto cleanup;
  for (int i = 0, k = 0; i < w.n && rc == 0; i++)
    if (is_selected(&w.a[i], longest))
      rc = describe_var(store, &w, &w.a[i], use_netcdf, out, k++, err);
cleanup:
  walk_free(&w);
  free(store);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}
