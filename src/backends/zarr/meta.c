/*
 * meta.c - the zarr backend's metadata side, all on rank 0 but for the
 * .zarray (zarr.json) check every rank makes when it opens a store:
 * parsing .zarray and v3 zarr.json (consolidated metadata when a v3 group
 * has it)
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
#include <math.h>
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

/* Read a whole small file; *len receives its size.  NULL with errno (with
 * ENOMEM, *len is the bytes it could not have). */
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
  *len = (size_t)st.st_size + 1;
  if (!(buf = malloc(*len)))
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
    if (e == ENOMEM)
      ferry__oom(err, -1, *len, "the metadata file %s", path);
    else if (e == EINVAL) /* slurp: not a regular file (a FIFO would block) */
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

/* A metadata file parsed as a JSON object (NULL with err set). */
static json_t *load_json(const char *path, const char *what, ferry__err *err) {
  size_t len = 0;
  char *text = read_meta(path, what, &len, err);
  if (!text)
    return NULL;
  json_t *j = json_object_text(text, len, path, err);
  free(text);
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
      d = (double)NAN; /* the quiet NaN numpy writes, sign bit clear */
    else if (strcmp(s, "Infinity") == 0)
      d = (double)INFINITY;
    else if (strcmp(s, "-Infinity") == 0)
      d = -(double)INFINITY;
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

/* The fields of a parsed .zarray, in the order they are checked. */
static int zarray_fields(json_t *j, const char *path, const char *label,
                         zmeta *z, ferry__err *err) {
  json_t *fmt = json_object_get(j, "zarr_format"),
         *fill = json_object_get(j, "fill_value");
  int rc;
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 2)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: zarr_format is not 2 (a .zarray is Zarr v2 "
                         "metadata; a v3 array keeps its metadata in "
                         "zarr.json)",
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
  return ferry__zarr_derive_sizes(path, z, err);
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

/* ---- zarr.json (v3) ---------------------------------------------------- */

/* A v3 data_type name -> dtype and itemsize; 0, or -1 with why. */
static int v3_dtype(const char *s, zmeta *z, const char **why) {
  static const struct {
    const char *name;
    ferry_dtype t;
    size_t size;
  } tab[] = {{"bool", FERRY_BOOL, 1},       {"int8", FERRY_INT8, 1},
             {"int16", FERRY_INT16, 2},     {"int32", FERRY_INT32, 4},
             {"int64", FERRY_INT64, 8},     {"uint8", FERRY_UINT8, 1},
             {"uint16", FERRY_UINT16, 2},   {"uint32", FERRY_UINT32, 4},
             {"uint64", FERRY_UINT64, 8},   {"float16", FERRY_FLOAT16, 2},
             {"float32", FERRY_FLOAT32, 4}, {"float64", FERRY_FLOAT64, 8}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(s, tab[i].name) == 0) {
      z->dtype = tab[i].t;
      z->itemsize = tab[i].size;
      return 0;
    }
  *why = strncmp(s, "complex", 7) == 0 ? "a complex type"
         : s[0] == 'r'                 ? "a raw bits type"
                                       : "a type ferry does not know";
  return -1;
}

/* A codec entry: its name and configuration (NULL when absent). */
static const char *v3_codec_name(json_t *c, json_t **conf) {
  *conf = NULL;
  if (json_is_string(c))
    return json_string_value(c);
  if (!json_is_object(c) || !json_is_string(json_object_get(c, "name")))
    return NULL;
  *conf = json_object_get(c, "configuration");
  return json_string_value(json_object_get(c, "name"));
}

/* The "bytes" codec: its endian (absent only for one-byte types). */
static int v3_bytes(json_t *conf, const char *path, size_t itemsize,
                    int *swapped, ferry__err *err) {
  json_t *e = conf ? json_object_get(conf, "endian") : NULL;
  const char *s = json_is_string(e) ? json_string_value(e) : NULL;
  if (!s && itemsize == 1) {
    *swapped = 0;
    return 0;
  }
  if (!s || (strcmp(s, "little") != 0 && strcmp(s, "big") != 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: codec bytes: endian must be "
                         "\"little\" or \"big\"",
                         path);
  *swapped = itemsize > 1 && ((s[0] == 'l') != host_is_little());
  return 0;
}

/* "transpose": only the identity order keeps each sample's bytes where
 * ferry reads them; any other order is refused. */
static int v3_transpose(json_t *conf, const char *path, const char *label,
                        int ndim, ferry__err *err) {
  json_t *o = conf ? json_object_get(conf, "order") : NULL;
  if (!json_is_array(o) || (int)json_array_size(o) != ndim)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: codec transpose: order must "
                         "list the %d dimensions",
                         path, ndim);
  for (int d = 0; d < ndim; d++) {
    json_t *x = json_array_get(o, (size_t)d);
    if (!json_is_integer(x) || json_integer_value(x) != d)
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "array %s: codec transpose with an order other "
                           "than the identity moves the elements of a sample "
                           "apart, which ferry does not read; rewrite the "
                           "array without transpose (C order)",
                           label);
  }
  return 0;
}

/* A compressor of the chain (gzip, zstd, blosc) into z->codec[]. */
static int v3_compressor(const char *name, json_t *conf, const char *label,
                         zmeta *z, ferry__err *err) {
  int kind = ferry__codec_kind(name);
  if (kind != FERRY__CODEC_GZIP && kind != FERRY__CODEC_ZSTD &&
      kind != FERRY__CODEC_BLOSC)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: codec '%s' cannot be decoded by ferry (it "
                         "decodes bytes, transpose (identity), blosc, gzip, "
                         "zstd, crc32c and sharding_indexed in Zarr v3); "
                         "rewrite the array with them",
                         label, name);
  if (!ferry__codec_available(kind))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: codec '%s': this ferry was built without "
                         "its library (install it, e.g. apt-get install "
                         "lib%s-dev, and rebuild ferry)",
                         label, name, kind == FERRY__CODEC_GZIP ? "z" : name);
  if (z->ncodecs == Z_MAX_CODECS)
    return ferry__seterr(err, FERRY_ENOTSUP, "array %s: more than %d codecs",
                         label, Z_MAX_CODECS);
  size_t used = strlen(z->codecs_text);
  json_t *lv = conf ? json_object_get(conf, "level") : NULL;
  json_t *cn = conf ? json_object_get(conf, "cname") : NULL;
  char extra[48] = "";
  if (json_is_string(cn))
    snprintf(extra, sizeof extra, "(%s)", json_string_value(cn));
  else if (json_is_integer(lv))
    snprintf(extra, sizeof extra, "(%d)", (int)json_integer_value(lv));
  snprintf(z->codecs_text + used, sizeof z->codecs_text - used, "%s%s%s",
           used ? " + " : "", name, extra);
  z->codec[z->ncodecs] = kind;
  z->param[z->ncodecs] = 0;
  z->ncodecs++;
  return 0;
}

static int v3_sharding(json_t *conf, const char *path, const char *label,
                       zmeta *z, ferry__err *err);

/* A codec chain (an array's, or the inner chunks' of a shard: inner set):
 * [transpose] bytes|sharding_indexed [gzip|zstd|blosc]... [crc32c]. */
static int v3_chain(json_t *codecs, const char *path, const char *label,
                    zmeta *z, int inner, ferry__err *err) {
  int seen_bytes = 0, rc;
  if (!json_is_array(codecs) || json_array_size(codecs) == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: codecs must be a non-empty "
                         "list",
                         path);
  for (size_t i = 0; i < json_array_size(codecs); i++) {
    json_t *conf = NULL;
    const char *name = v3_codec_name(json_array_get(codecs, i), &conf);
    int last = i + 1 == json_array_size(codecs);
    if (!name)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: a codec without a name",
                           path);
    if (z->crc)
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "array %s: codec '%s' after crc32c: ferry checks "
                           "crc32c only as the last codec",
                           label, name);
    if (strcmp(name, "transpose") == 0 && !seen_bytes)
      rc = v3_transpose(conf, path, label, z->ndim, err);
    else if (strcmp(name, "bytes") == 0 && !seen_bytes) {
      seen_bytes = 1;
      rc = v3_bytes(conf, path, z->itemsize, &z->swapped, err);
    } else if (strcmp(name, "sharding_indexed") == 0 && !seen_bytes && !inner) {
      seen_bytes = 1;
      if (!last)
        return ferry__seterr(err, FERRY_ENOTSUP,
                             "array %s: codecs after sharding_indexed "
                             "(they would compress whole shards, which "
                             "ferry does not read in parts)",
                             label);
      rc = v3_sharding(conf, path, label, z, err);
    } else if (strcmp(name, "crc32c") == 0 && seen_bytes) {
      z->crc = 1;
      rc = 0;
    } else if (seen_bytes)
      rc = v3_compressor(name, conf, label, z, err);
    else
      return ferry__seterr(
          err,
          strcmp(name, "bytes") == 0 || strcmp(name, "transpose") == 0 ||
                  strcmp(name, "crc32c") == 0
              ? FERRY_EFORMAT
              : FERRY_ENOTSUP,
          "%s: codec '%s' %s (array %s)", path, name,
          strcmp(name, "bytes") == 0 || strcmp(name, "transpose") == 0 ||
                  strcmp(name, "crc32c") == 0
              ? "is out of place in the codec chain"
              : "cannot be decoded by ferry (it decodes bytes, transpose "
                "(identity), blosc, gzip, zstd, crc32c and "
                "sharding_indexed in Zarr v3)",
          label);
    if (rc < 0)
      return rc;
  }
  if (!seen_bytes)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: the codecs have no bytes "
                         "codec",
                         path);
  return 0;
}

/* A list of ndim positive integers into out. */
static int v3_dims(json_t *a, int ndim, int64_t min, int64_t *out) {
  if (!json_is_array(a) || (int)json_array_size(a) != ndim)
    return -1;
  for (int d = 0; d < ndim; d++) {
    json_t *x = json_array_get(a, (size_t)d);
    if (!json_is_integer(x) || json_integer_value(x) < min)
      return -1;
    out[d] = (int64_t)json_integer_value(x);
  }
  return 0;
}

/* sharding_indexed: inner chunk shape (dividing the shard), the inner
 * chain, index_codecs (bytes [+ crc32c]) and index_location. */
static int v3_sharding(json_t *conf, const char *path, const char *label,
                       zmeta *z, ferry__err *err) {
  json_t *ix = conf ? json_object_get(conf, "index_codecs") : NULL;
  json_t *loc = conf ? json_object_get(conf, "index_location") : NULL;
  int64_t inner[Z_MAX_DIMS];
  if (!conf ||
      v3_dims(json_object_get(conf, "chunk_shape"), z->ndim, 1, inner) < 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: sharding_indexed: "
                         "chunk_shape must list %d sizes >= 1",
                         path, z->ndim);
  z->sharded = 1;
  z->n_inner = 1;
  for (int d = 0; d < z->ndim; d++) {
    z->shard[d] = z->chunks[d];
    if (z->shard[d] % inner[d] != 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: sharding_indexed: the "
                           "inner chunk shape does not divide the shard "
                           "shape (dimension %d)",
                           path, d);
    z->per_shard[d] = z->shard[d] / inner[d];
    z->chunks[d] = inner[d];
    if (mul_overflows(z->n_inner, z->per_shard[d], &z->n_inner))
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: corrupt metadata: sharding_indexed: the "
                           "number of inner chunks overflows 64 bits",
                           path);
  }
  if (loc &&
      !(json_is_string(loc) && (strcmp(json_string_value(loc), "end") == 0 ||
                                strcmp(json_string_value(loc), "start") == 0)))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: sharding_indexed: "
                         "index_location must be \"end\" or \"start\"",
                         path);
  z->index_start = loc && strcmp(json_string_value(loc), "start") == 0;
  /* The index: bytes (either endian), then crc32c or nothing. */
  size_t nix = json_is_array(ix) ? json_array_size(ix) : 0;
  json_t *c0conf = NULL, *c1conf = NULL;
  const char *c0 = nix ? v3_codec_name(json_array_get(ix, 0), &c0conf) : NULL;
  const char *c1 =
      nix > 1 ? v3_codec_name(json_array_get(ix, 1), &c1conf) : "crc32c";
  if (!c0 || strcmp(c0, "bytes") != 0 || nix > 2 || !c1 ||
      strcmp(c1, "crc32c") != 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: sharding_indexed: index_codecs other "
                         "than bytes [+ crc32c] are not read by ferry",
                         label);
  int rc = v3_bytes(c0conf, path, 8, &z->index_swapped, err);
  if (rc < 0)
    return rc;
  z->index_crc = nix == 2;
  if (z->n_inner > (int64_t)(Z_SLOTS_BYTES * 16) / 16)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a shard of %lld inner chunks: its index "
                         "is larger than ferry reads (%zu MiB)",
                         label, (long long)z->n_inner, Z_SLOTS_BYTES >> 16);
  z->index_bytes = (size_t)z->n_inner * 16 + (z->index_crc ? 4 : 0);
  return v3_chain(json_object_get(conf, "codecs"), path, label, z, 1, err);
}

/* fill_value of a v3 array: a number, a bool, "NaN", "Infinity",
 * "-Infinity", or the raw bits "0x...". */
static int v3_fill(json_t *jf, zmeta *z) {
  const char *s = json_is_string(jf) ? json_string_value(jf) : NULL;
  if (s && s[0] == '0' && s[1] == 'x' && strlen(s) == 2 + 2 * z->itemsize) {
    char *end = NULL;
    errno = 0;
    unsigned long long bits = strtoull(s + 2, &end, 16);
    if (errno || *end)
      return -1;
    for (size_t i = 0; i < z->itemsize; i++) { /* stored order */
      int shift =
          (int)(8 * (host_is_little() != z->swapped ? i : z->itemsize - 1 - i));
      z->fill[i] = (unsigned char)(bits >> shift);
    }
    z->has_fill = 1;
    return 0;
  }
  if (s && z->dtype == FERRY_FLOAT16 && strcmp(s, "NaN") == 0) {
    uint16_t h = 0x7e00;
    memcpy(z->fill, &h, 2);
    if (z->swapped)
      ferry__byteswap(z->fill, 1, 2);
    z->has_fill = 1;
    return 0;
  }
  return parse_fill(jf, z);
}

/* The v3 fields that are not codecs: node_type, shape, data_type, the
 * chunk grid and the chunk key encoding. */
static int v3_layout(json_t *j, const char *path, const char *label, zmeta *z,
                     ferry__err *err) {
  json_t *fmt = json_object_get(j, "zarr_format"),
         *nt = json_object_get(j, "node_type"),
         *shape = json_object_get(j, "shape"),
         *dt = json_object_get(j, "data_type"),
         *grid = json_object_get(j, "chunk_grid"),
         *key = json_object_get(j, "chunk_key_encoding"),
         *st = json_object_get(j, "storage_transformers");
  const char *why = NULL;
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 3 ||
      !json_is_string(nt) || strcmp(json_string_value(nt), "array") != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: not a Zarr v3 array "
                         "(zarr_format 3, node_type \"array\")",
                         path);
  if (!json_is_array(shape) || json_array_size(shape) > Z_MAX_DIMS)
    return ferry__seterr(
        err, json_is_array(shape) ? FERRY_ENOTSUP : FERRY_EFORMAT, "%s: %s",
        path,
        json_is_array(shape) ? "too many dimensions for ferry"
                             : "corrupt metadata: shape must be a list");
  z->ndim = (int)json_array_size(shape);
  if (v3_dims(shape, z->ndim, 0, z->shape) < 0)
    return ferry__seterr(err, FERRY_EFORMAT, "%s: corrupt metadata: bad shape",
                         path);
  if (!json_is_string(dt))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a data_type that is not a name (an "
                         "extension), which ferry cannot represent",
                         label);
  if (v3_dtype(json_string_value(dt), z, &why) < 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: data_type '%s' is %s, which ferry cannot "
                         "represent (bool, integers and float16/32/64 only)",
                         label, json_string_value(dt), why);
  json_t *gconf =
      json_is_object(grid) ? json_object_get(grid, "configuration") : NULL;
  if (!json_is_object(grid) || !json_is_string(json_object_get(grid, "name")) ||
      strcmp(json_string_value(json_object_get(grid, "name")), "regular") != 0)
    return ferry__seterr(
        err, json_is_object(grid) ? FERRY_ENOTSUP : FERRY_EFORMAT, "%s: %s",
        path,
        json_is_object(grid) ? "a chunk_grid other than \"regular\", which "
                               "ferry does not read"
                             : "corrupt metadata: chunk_grid is missing");
  if (!gconf ||
      v3_dims(json_object_get(gconf, "chunk_shape"), z->ndim, 1, z->chunks) < 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: chunk_grid: chunk_shape must "
                         "list %d sizes >= 1",
                         path, z->ndim);
  const char *kname =
      json_is_object(key) && json_is_string(json_object_get(key, "name"))
          ? json_string_value(json_object_get(key, "name"))
          : NULL;
  json_t *kconf = kname ? json_object_get(key, "configuration") : NULL;
  json_t *sep =
      json_is_object(kconf) ? json_object_get(kconf, "separator") : NULL;
  if (!kname || (strcmp(kname, "default") != 0 && strcmp(kname, "v2") != 0) ||
      (sep &&
       !(json_is_string(sep) && (strcmp(json_string_value(sep), "/") == 0 ||
                                 strcmp(json_string_value(sep), ".") == 0))))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: chunk_key_encoding must be "
                         "\"default\" or \"v2\" with separator \"/\" or "
                         "\".\"",
                         path);
  z->key_c = strcmp(kname, "default") == 0;
  z->sep = sep ? json_string_value(sep)[0] : z->key_c ? '/' : '.';
  if (st && !(json_is_array(st) && json_array_size(st) == 0))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: storage_transformers, which ferry does "
                         "not apply",
                         label);
  return 0;
}

int ferry__zarr_parse_v3(const void *jv, const char *path, const char *label,
                         zmeta *z, ferry__err *err) {
  json_t *j = (json_t *)(uintptr_t)jv;
  int rc;
  memset(z, 0, sizeof *z);
  z->v3 = 1;
  if ((rc = v3_layout(j, path, label, z, err)) < 0 ||
      (rc = v3_chain(json_object_get(j, "codecs"), path, label, z, 0, err)) < 0)
    return rc;
  json_t *fill = json_object_get(j, "fill_value");
  if (!fill || v3_fill(fill, z) < 0)
    return ferry__seterr(err, fill ? FERRY_ENOTSUP : FERRY_EFORMAT,
                         fill ? "array %s: fill_value cannot be represented "
                                "in its data_type by ferry"
                              : "array %s: corrupt metadata: no fill_value",
                         label);
  if ((rc = ferry__zarr_derive_sizes(path, z, err)) < 0)
    return rc;
  z->meta_size = (int64_t)ZMETA_HASHED;
  z->hash = ferry__fnv1a(FERRY__FNV_INIT, z, ZMETA_HASHED) >> 1;
  json_t *dn = json_object_get(j, "dimension_names"); /* not hashed */
  if (json_is_array(dn) && json_is_string(json_array_get(dn, 0)))
    snprintf(z->dim0, sizeof z->dim0, "%s",
             json_string_value(json_array_get(dn, 0)));
  return 0;
}

int ferry__zarr_parse_v3_text(const char *text, size_t len, const char *path,
                              const char *label, zmeta *z, ferry__err *err) {
  memset(z, 0, sizeof *z);
  json_t *j = json_object_text(text, len, path, err);
  if (!j)
    return err ? err->code : FERRY_EFORMAT;
  int rc = ferry__zarr_parse_v3(j, path, label, z, err);
  json_decref(j);
  return rc;
}

/* A v2 array without dimension_separator whose chunks are nested
 * directories (zarr-python's NestedDirectoryStore, fixture/nested_legacy):
 * the first chunk key is a directory, not a file.  Its chunks are read with
 * '/' rather than served as fill values. */
static void detect_nested(const char *adir, const char *text, zmeta *z) {
  if (z->sep != '.' || z->ndim < 2 || strstr(text, "dimension_separator"))
    return;
  int64_t idx[Z_MAX_DIMS] = {0};
  char *first = ferry__zarr_chunk_path(adir, z, idx);
  struct stat st;
  if (first && stat(first, &st) != 0) {
    char *dir = ferry__join_path(adir, "0");
    if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      z->sep = '/';
      z->nested_legacy = 1;
    }
    free(dir);
  }
  free(first);
}

/* Parse ARRAYDIR/.zarray (or ARRAYDIR/zarr.json, Zarr v3) into z.  Errors
 * name the store and the array. */
int ferry__zarr_parse_zarray(const char *adir, const char *label, zmeta *z,
                             ferry__err *err) {
  int v3 = !ferry__zarr_exists_in(adir, ".zarray", 0) &&
           ferry__zarr_exists_in(adir, "zarr.json", 0);
  char *path = ferry__join_path(adir, v3 ? "zarr.json" : ".zarray");
  memset(z, 0, sizeof *z);
  if (!path)
    return ferry__oom(err, -1, strlen(adir) + 11,
                      "the metadata path of array %s (%s)", label, adir);
  size_t len = 0;
  char *text = read_meta(path,
                         "the array has no .zarray (v2) nor zarr.json (v3) "
                         "(not written completely, or not a Zarr array)",
                         &len, err);
  int rc = !text ? (err ? err->code : FERRY_EFORMAT)
           : v3  ? ferry__zarr_parse_v3_text(text, len, path, label, z, err)
                : ferry__zarr_parse_zarray_text(text, len, path, label, z, err);
  if (rc == 0 && !v3)
    detect_nested(adir, text, z);
  free(text);
  free(path);
  return rc;
}

/* ---- Store layout ----------------------------------------------------- */

/* A metadata "file" that exists as a FIFO, socket or device counts as
 * present: reading it then refuses it by name (ferry__open_regular) rather
 * than calling it missing. */
int ferry__zarr_exists_in(const char *dir, const char *name, int want_dir) {
  /* No allocation: a path that could not be allocated used to read as
   * "absent" (tests/mpi/oom.sh), which may pick another layout. */
  struct stat st;
  int dfd = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return 0;
  int yes = fstatat(dfd, name, &st, 0) == 0 &&
            (want_dir ? S_ISDIR(st.st_mode) : !S_ISDIR(st.st_mode));
  close(dfd);
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
  int ok;    /* metadata parsed; else err holds why  */
  int coord; /* a 1-D coordinate of another dimension: not a variable */
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

/* Append array name (its directory dir); its metadata is parsed from dir,
 * or from meta (a v3 array's object of consolidated metadata) when given. */
static size_t add_array_meta(zarr_walk *w, const char *dir, const char *name,
                             json_t *meta) {
  if (w->n == w->cap) {
    int ncap = w->cap ? 2 * w->cap : 16;
    zarr_array *na = realloc(w->a, (size_t)ncap * sizeof *na);
    if (!na)
      return (size_t)ncap * sizeof *na;
    w->a = na;
    w->cap = ncap;
  }
  zarr_array *x = &w->a[w->n];
  memset(x, 0, sizeof *x);
  if (!(x->name = strdup(name)))
    return strlen(name) + 1;
  w->n++;
  if (meta) {
    char *p = ferry__join_path(dir, "zarr.json");
    if (!p)
      return strlen(dir) + 11;
    x->ok = ferry__zarr_parse_v3(meta, p, name, &x->z, &x->err) == 0;
    free(p);
  } else {
    x->ok = ferry__zarr_parse_zarray(dir, name, &x->z, &x->err) == 0;
  }
  if (x->ok && !x->z.v3 && ferry__zarr_exists_in(dir, ".zattrs", 0)) {
    /* xarray's _ARRAY_DIMENSIONS; a .zattrs that cannot be read only
     * loses the name. */
    char *p = ferry__join_path(dir, ".zattrs");
    ferry__err e;
    memset(&e, 0, sizeof e);
    json_t *j = p ? load_json(p, "", &e) : NULL;
    json_t *ad = j ? json_object_get(j, "_ARRAY_DIMENSIONS") : NULL;
    if (json_is_array(ad) && json_is_string(json_array_get(ad, 0)))
      snprintf(x->z.dim0, sizeof x->z.dim0, "%s",
               json_string_value(json_array_get(ad, 0)));
    json_decref(j);
    free(p);
  }
  return 0;
}

static size_t add_array(zarr_walk *w, const char *dir, const char *name) {
  return add_array_meta(w, dir, name, NULL);
}

/* node_type of dir/zarr.json: 1 array, 2 group, 0 unreadable or corrupt
 * (then read as an array, whose parse reports why).  Memory that runs out
 * here is not taken for an answer (tests/mpi/oom.sh): the path needs no
 * allocation, and a zarr.json that cannot be held is 1, so the array's own
 * parse reads it again and reports what it finds (out of memory included),
 * never "the array has no zarr.json". */
static int v3_node_type(const char *dir) {
  char p[PATH_MAX];
  int n = snprintf(p, sizeof p, "%s/zarr.json", dir[0] ? dir : ".");
  if (n < 0 || (size_t)n >= sizeof p)
    return 0;
  ferry__err e;
  memset(&e, 0, sizeof e);
  json_t *j = load_json(p, "", &e);
  if (!j && e.code == FERRY_ENOMEM)
    return 1;
  json_t *nt = j ? json_object_get(j, "node_type") : NULL;
  int t = json_is_string(nt) && strcmp(json_string_value(nt), "group") == 0 ? 2
          : json_is_string(nt) && strcmp(json_string_value(nt), "array") == 0
              ? 1
              : 0;
  json_decref(j);
  return t;
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
        rc = ferry__oom(err, -1, ncap * sizeof *nv,
                        "the list of %zu names in %s (store %s)", ncap, dir,
                        store);
        goto cleanup;
      }
      names = nv;
      cap = ncap;
    }
    if (!(names[nn] = strdup(e->d_name))) {
      rc = ferry__oom(err, -1, strlen(e->d_name) + 1,
                      "the name %s in %s (store %s)", e->d_name, dir, store);
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
    size_t want = 0;
    if (!sub || !rel) {
      rc = ferry__oom(
          err, -1, (!sub ? strlen(dir) : strlen(prefix)) + strlen(names[i]) + 2,
          "the path of %s in %s (store %s)", names[i], dir, store);
    } else if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (ferry__zarr_exists_in(sub, ".zarray", 0)) {
        if ((want = add_array(w, sub, rel)) != 0)
          rc = ferry__oom(err, -1, want, "array %s of store %s", rel, store);
      } else if (ferry__zarr_exists_in(sub, ".zgroup", 0)) {
        rc = walk_group(w, store, sub, rel, depth + 1, err);
      } else if (ferry__zarr_exists_in(sub, "zarr.json", 0)) {
        if (v3_node_type(sub) == 2)
          rc = walk_group(w, store, sub, rel, depth + 1, err);
        else if ((want = add_array(w, sub, rel)) != 0)
          rc = ferry__oom(err, -1, want, "array %s of store %s", rel, store);
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

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The arrays of a v3 group's consolidated metadata (sorted by path), when
 * it has some: 1 when they were used, 0 when there are none. */
static int walk_consolidated(zarr_walk *w, const char *store, json_t *root,
                             ferry__err *err) {
  json_t *cm = json_object_get(root, "consolidated_metadata");
  json_t *md = json_is_object(cm) ? json_object_get(cm, "metadata") : NULL;
  if (!json_is_object(md))
    return 0;
  size_t n = json_object_size(md), k = 0;
  const char **keys = calloc(n ? n : 1, sizeof *keys);
  const char *key;
  json_t *val;
  int rc = 1;
  if (!keys)
    return ferry__oom(err, -1, (n ? n : 1) * sizeof *keys,
                      "the %zu consolidated metadata keys of store %s", n,
                      store);
  json_object_foreach(md, key, val) keys[k++] = key;
  qsort(keys, k, sizeof *keys, cmp_str);
  for (size_t i = 0; i < k && rc == 1; i++) {
    json_t *a = json_object_get(md, keys[i]);
    json_t *nt = json_is_object(a) ? json_object_get(a, "node_type") : NULL;
    if (json_is_string(nt) && strcmp(json_string_value(nt), "group") == 0)
      continue;
    char *dir = ferry__join_path(store, keys[i]);
    size_t want = !dir ? strlen(store) + strlen(keys[i]) + 2
                       : add_array_meta(w, dir, keys[i], a);
    if (want)
      rc = ferry__oom(err, -1, want, "array %s of store %s", keys[i], store);
    free(dir);
  }
  free(keys);
  return rc;
}

/* A Zarr v3 store (zarr.json at its root): one array, or a group whose
 * arrays come from its consolidated metadata (one read) or its tree. */
static int walk_v3(const char *store, zarr_walk *w, ferry__err *err) {
  char *zj = ferry__join_path(store, "zarr.json");
  if (!zj)
    return ferry__oom(err, -1, strlen(store) + 11, "the path of %s/zarr.json",
                      store);
  json_t *j = load_json(zj, "not a Zarr v3 node", err);
  json_t *nt = j ? json_object_get(j, "node_type") : NULL;
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (json_is_string(json_object_get(j, "zarr_format")))
    rc =
        ferry__seterr(err, FERRY_ENOTSUP, /* zarr_implementations' .zr3 */
                      "%s: zarr_format \"%.200s\" is a draft of Zarr v3 "
                      "older than its 1.0 (meta/ and data/ trees), which "
                      "ferry does not read; rewrite the store with a Zarr "
                      "v3 writer (zarr-python 3, zarrita, zarrs)",
                      zj, json_string_value(json_object_get(j, "zarr_format")));
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 3 ||
           !json_is_string(nt) ||
           (strcmp(json_string_value(nt), "array") != 0 &&
            strcmp(json_string_value(nt), "group") != 0))
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: corrupt metadata: zarr_format must be 3 and "
                       "node_type \"array\" or \"group\"",
                       zj);
  else if (strcmp(json_string_value(nt), "group") == 0) {
    rc = walk_consolidated(w, store, j, err);
    if (rc == 0)
      rc = walk_group(w, store, store, "", 0, err);
    else if (rc == 1)
      rc = 0;
  } else {
    rc = 1; /* a root array */
  }
  json_decref(j);
  free(zj);
  return rc;
}

/* Add the store itself as its one array, named after the directory. */
static int add_root_array(const char *store, zarr_walk *w, ferry__err *err) {
  const char *base = strrchr(store, '/');
  char *stem = strdup(base && base[1] ? base + 1 : store);
  if (!stem)
    return ferry__oom(err, -1, strlen(base && base[1] ? base + 1 : store) + 1,
                      "the array name of store %s", store);
  char *slash = strchr(stem, '/');
  if (slash)
    *slash = '\0';
  size_t n = strlen(stem);
  if (n > 5 && strcmp(stem + n - 5, ".zarr") == 0)
    stem[n - 5] = '\0';
  size_t want = add_array(w, store, stem);
  int rc =
      want ? ferry__oom(err, -1, want, "the root array of store %s", store) : 0;
  free(stem);
  w->root_array = 1;
  return rc;
}

int ferry__zarr_root_is_array(const char *store) {
  if (ferry__zarr_exists_in(store, ".zarray", 0))
    return 1;
  return !ferry__zarr_exists_in(store, ".zgroup", 0) &&
         ferry__zarr_exists_in(store, "zarr.json", 0) &&
         v3_node_type(store) == 1;
}

/* Check the text of a .zgroup (len bytes read from path). */
int ferry__zarr_parse_zgroup_text(const char *text, size_t len,
                                  const char *path, ferry__err *err) {
  json_t *j = json_object_text(text, len, path, err);
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 2)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: zarr_format is not 2 (a .zgroup is Zarr v2 "
                       "metadata)",
                       path);
  json_decref(j);
  return rc;
}

/* Walk the store: its arrays, or the store itself when it is one array. */
static int walk_store(const char *store, zarr_walk *w, ferry__err *err) {
  memset(w, 0, sizeof *w);
  if (!ferry__zarr_exists_in(store, ".zarray", 0) &&
      !ferry__zarr_exists_in(store, ".zgroup", 0) &&
      ferry__zarr_exists_in(store, "zarr.json", 0)) {
    int rc = walk_v3(store, w, err);
    return rc == 1 ? add_root_array(store, w, err) : rc;
  }
  if (ferry__zarr_exists_in(store, ".zarray", 0))
    return add_root_array(store, w, err);
  if (!ferry__zarr_exists_in(store, ".zgroup", 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is not a Zarr store: it holds neither "
                         ".zgroup, .zarray nor zarr.json",
                         store);
  char *zg = ferry__join_path(store, ".zgroup");
  if (!zg)
    return ferry__oom(err, -1, strlen(store) + 9, "the path of %s/.zgroup",
                      store);
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
    if (x->z.v3)
      return *why = "a Zarr v3 store (netCDF-C reads v2 only)", 0;
    if (x->z.nested_legacy)
      return *why = "an array keeps its chunks in nested directories "
                    "without a dimension_separator (netCDF-C would serve "
                    "fill values)",
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
#define Z_KEY_MAX (Z_MAX_DIMS * 21 + 3)

/* The chunk key of idx in key[Z_KEY_MAX]; returns its length. */
static size_t chunk_key(const zmeta *z, const int64_t *idx, char *key) {
  const char *sep = z->sep == '/' ? "/" : ".";
  size_t used = 0;
  if (z->key_c)
    used += (size_t)snprintf(key, Z_KEY_MAX, "c");
  else if (z->ndim == 0)
    used += (size_t)snprintf(key, Z_KEY_MAX, "0");
  for (int d = 0; d < z->ndim; d++) {
    int64_t i = z->sharded ? idx[d] / z->per_shard[d] : idx[d];
    used += (size_t)snprintf(key + used, Z_KEY_MAX - used, "%s%lld",
                             d || z->key_c ? sep : "", (long long)i);
  }
  return used;
}

char *ferry__zarr_chunk_path(const char *adir, const zmeta *z,
                             const int64_t *idx) {
  char key[Z_KEY_MAX];
  chunk_key(z, idx, key);
  return ferry__join_path(adir, key);
}

size_t ferry__zarr_chunk_path_bytes(const char *adir, const zmeta *z,
                                    const int64_t *idx) {
  char key[Z_KEY_MAX];
  size_t a = strlen(adir);
  return a + (size_t)(a > 0 && adir[a - 1] != '/') + chunk_key(z, idx, key) + 1;
}

/* What the native reader keeps per variable and open store (describe
 * counts it in cache_bytes): the band (c0 rows; one band of chunks bounds
 * it), one decoded chunk when chunks are not rows, the stored bytes of one
 * chunk file when compressed, one intermediate stage of a chain of codecs. */
static size_t native_cache_bytes(const zmeta *z, int lanes) {
  size_t n = z->chunk_bytes * (size_t)z->across;
  /* Each further decode lane (the `threads` option, pool.c) holds its own
   * stored bytes and middle stage while it decodes a chunk of a read. */
  size_t lane = zarr_stored_bound(z->chunk_bytes) + 4 +
                (z->ncodecs > 1 ? z->chunk_bytes : 0);
  if ((z->ncodecs || z->crc) && lanes > 1)
    n = lane > (SIZE_MAX / 4 - n) / (size_t)(lanes - 1)
            ? SIZE_MAX / 4 /* past any budget: refused there */
            : n + (size_t)(lanes - 1) * lane;
  if (!zarr_chunk_is_rows(z))
    n += z->chunk_bytes;
  if (z->ncodecs || z->crc)
    n += zarr_stored_bound(z->chunk_bytes) + 4;
  if (z->ncodecs > 1)
    n += z->chunk_bytes;
  if (z->sharded)
    n += (size_t)zarr_nslots(z) * (size_t)z->n_inner * 16 + z->index_bytes;
  return n;
}

char *ferry__zarr_array_dir(const char *store, const char *name,
                            int root_array) {
  return root_array ? strdup(store) : ferry__join_path(store, name);
}

/* "chunks (10, 3), blosc(lz4, shuffle), 2.8:1; ..." for ferry info. */
#define Z_STORAGE_MAX 512 /* the most storage_text (or its directory) takes */

static char *storage_text(const char *adir, const zmeta *z, const char *reader,
                          int lanes, int64_t *cache) {
  char buf[Z_STORAGE_MAX];
  size_t used = 0;
  used += (size_t)snprintf(buf, sizeof buf, "chunks (");
  for (int d = 0; d < z->ndim; d++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld",
                             d ? ", " : "", (long long)z->chunks[d]);
  used += (size_t)snprintf(
      buf + used, sizeof buf - used, "%s), %s%s", z->ndim == 1 ? "," : "",
      z->ncodecs ? z->codecs_text : "uncompressed", z->crc ? " + crc32c" : "");
  if (z->sharded) {
    used += (size_t)snprintf(buf + used, sizeof buf - used, ", in shards of (");
    for (int d = 0; d < z->ndim && used < sizeof buf; d++)
      used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld",
                               d ? ", " : "", (long long)z->shard[d]);
    if (used < sizeof buf)
      used += (size_t)snprintf(
          buf + used, sizeof buf - used, "%s) with the index at the %s",
          z->ndim == 1 ? "," : "", z->index_start ? "start" : "end");
  }
  /* Compression ratio from the first chunks (shards) along dimension 0. */
  int64_t idx[Z_MAX_DIMS] = {0}, nch = zarr_nchunks(z, 0);
  int64_t step = z->sharded ? z->per_shard[0] : 1;
  nch = nch / step + (nch % step != 0);
  long long stored = 0, missing = 0;
  double raw = 0; /* up to 16 chunks of 2^60 bytes: no integer overflow */
  for (int64_t c = 0; c < nch && c < Z_RATIO_SAMPLE; c++) {
    idx[0] = c * step;
    char *p = ferry__zarr_chunk_path(adir, z, idx);
    struct stat st;
    if (p && stat(p, &st) == 0) {
      stored += (long long)st.st_size;
      raw += (double)z->chunk_bytes * (double)(z->sharded ? z->n_inner : 1);
    } else {
      missing++;
    }
    free(p);
  }
  if (z->ncodecs && stored > 0 && used < sizeof buf)
    used += (size_t)snprintf(buf + used, sizeof buf - used, ", %.1f:1",
                             raw / (double)stored);
  if (missing && used < sizeof buf)
    used += (size_t)snprintf(
        buf + used, sizeof buf - used,
        ", %lld of the first %lld %s absent (%s)", missing,
        (long long)(nch < Z_RATIO_SAMPLE ? nch : Z_RATIO_SAMPLE),
        z->sharded ? "shards" : "chunks",
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
               : (int64_t)native_cache_bytes(z, lanes);
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

/* 1 when array x is a variable: its dimension 0 is the longest, and it is
 * not a coordinate of another dimension. */
static int is_selected(const zarr_array *x, int64_t longest) {
  return x->ok && x->z.ndim >= 1 && x->z.shape[0] == longest && !x->coord;
}

/* With dimension names (xarray's _ARRAY_DIMENSIONS, v3 dimension_names):
 * the sample dimension is the name of dimension 0 the most arrays of the
 * longest length share (those of two or more dimensions first), and a 1-D
 * array of that length named along another dimension (a coordinate, e.g.
 * lat beside time when both have as many entries) is not a variable.
 * Returns the sample dimension's name, or "" without names. */
static const char *mark_coords(zarr_walk *w, int64_t longest) {
  const char *best = "";
  long best_score = 0;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok || x->z.ndim < 1 || x->z.shape[0] != longest || !x->z.dim0[0])
      continue;
    long score = 0;
    for (int k = 0; k < w->n; k++) {
      const zarr_array *y = &w->a[k];
      if (y->ok && y->z.ndim >= 1 && y->z.shape[0] == longest &&
          strcmp(y->z.dim0, x->z.dim0) == 0)
        score += y->z.ndim >= 2 ? 1000 : 1;
    }
    if (score > best_score) {
      best_score = score;
      best = x->z.dim0;
    }
  }
  for (int i = 0; i < w->n; i++) {
    zarr_array *x = &w->a[i];
    x->coord = best[0] && x->ok && x->z.ndim == 1 && x->z.shape[0] == longest &&
               x->z.dim0[0] && strcmp(x->z.dim0, best) != 0;
  }
  return best;
}

/* The sample dimension (the longest dimension 0 of the arrays, *longest)
 * and the number of variables (*nsel).  Select, then validate (issue 11: a
 * zarr-python group was refused for one bz2 array it also held): an array
 * ferry cannot read (its dtype, order or codec, FERRY_ENOTSUP) is an error
 * only when `vars` (named) names it; otherwise it is skipped and the notes
 * say why.  Metadata that cannot be read at all is an error (the array
 * might be a variable), and so is a store with no array to serve: the
 * message then gives the first skipped array's reason. */
static int pick_arrays(const char *store, zarr_walk *w, const char *named,
                       int64_t *longest, int *nsel, ferry__err *err) {
  *longest = -1;
  *nsel = 0;
  for (int i = 0; i < w->n; i++)
    if (w->a[i].ok && w->a[i].z.ndim >= 1 && w->a[i].z.shape[0] > *longest)
      *longest = w->a[i].z.shape[0];
  mark_coords(w, *longest);
  /* Arrays whose metadata could not be read at all are errors: they might
   * be the variables. */
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok && (x->err.code != FERRY_ENOTSUP || *longest < 0))
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
  }
  const zarr_array *first_bad = NULL;
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    if (!x->ok && named && named[0] && ferry__name_listed(named, x->name))
      return ferry__seterr(err, x->err.code, "store %s: %s", store, x->err.msg);
    if (!x->ok && !first_bad)
      first_bad = x;
    if (is_selected(x, *longest))
      (*nsel)++;
  }
  if (*nsel == 0 && first_bad)
    return ferry__seterr(err, first_bad->err.code, "store %s: %s", store,
                         first_bad->err.msg);
  if (*nsel == 0)
    return ferry__seterr(err, FERRY_EEMPTY,
                         "store %s holds no array with a sample dimension",
                         store);
  return 0;
}

/* The reader: ferry's own (auto, native), or netCDF-C when zarr_reader
 * says netcdf and it can read the store (and was built in); netcdf where it
 * cannot is FERRY_ENOTSUP.  The native reader is the default since it reads
 * every store netCDF-C reads, v3 ones too, 5-10 times faster. */
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
  if (strcmp(mode, "netcdf") != 0)
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
    return ferry__oom(err, -1,
                      (size_t)nsel *
                          (sizeof *out->vars + sizeof *out->paths +
                           sizeof *out->data_offset + sizeof *out->file_size +
                           sizeof *out->rec),
                      "the description of %d arrays of store %s", nsel, store);
  out->nvars = nsel;
  return 0;
}

/* The other groups of arrays that could be served together (issue 11):
 * readable arrays of another first-dimension length, grouped by it, as
 * "; other selections: vars=a,b (300 rows); ...". */
static void other_groups(const zarr_walk *w, int64_t longest, char *buf,
                         size_t cap) {
  for (int i = 0; i < w->n; i++) {
    const zarr_array *a = &w->a[i];
    if (!a->ok || a->z.ndim < 1 || a->z.shape[0] == longest)
      continue;
    int first = 1;
    for (int k = 0; k < i && first; k++)
      first = !(w->a[k].ok && w->a[k].z.ndim >= 1 &&
                w->a[k].z.shape[0] == a->z.shape[0]);
    if (!first)
      continue;
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%svars=", n ? "; " : "; other selections: ");
    for (int k = i, sep = 0; k < w->n; k++) {
      const zarr_array *b = &w->a[k];
      if (!b->ok || b->z.ndim < 1 || b->z.shape[0] != a->z.shape[0])
        continue;
      n = strlen(buf);
      snprintf(buf + n, cap - n, "%s%s", sep++ ? "," : "", b->name);
    }
    n = strlen(buf);
    snprintf(buf + n, cap - n, " (%lld rows)", (long long)a->z.shape[0]);
  }
}

/* What was chosen and what was skipped, and why (ferry info; the error of
 * a `vars` naming a skipped array), into out->notes. */
static int describe_notes(const char *store, zarr_walk *w, int64_t longest,
                          ferry__part_desc *out, ferry__err *err) {
  char chosen[512] = "", skipped[1536] = "";
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    char *buf = is_selected(x, longest) ? chosen : skipped;
    size_t cap = buf == chosen ? sizeof chosen : sizeof skipped;
    size_t n = strlen(buf);
    if (buf == chosen)
      snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", x->name);
    else if (!x->ok)
      snprintf(buf + n, cap - n, "%s%s (%s)", n ? "; " : "", x->name,
               x->err.msg);
    else if (x->coord)
      snprintf(buf + n, cap - n,
               "%s%s (a coordinate of dimension %s, not of the sample "
               "dimension)",
               n ? "; " : "", x->name, x->z.dim0);
    else if (x->z.ndim < 1)
      snprintf(buf + n, cap - n, "%s%s (a scalar, no sample dimension)",
               n ? "; " : "", x->name);
    else
      snprintf(buf + n, cap - n,
               "%s%s (%lld rows where the sample dimension has %lld)",
               n ? "; " : "", x->name, (long long)x->z.shape[0],
               (long long)longest);
  }
  const char *dim = mark_coords(w, longest);
  char others[1024] = "";
  other_groups(w, longest, others, sizeof others);
  size_t len =
      strlen(chosen) + strlen(skipped) + strlen(dim) + strlen(others) + 64;
  if (!(out->notes = malloc(len)))
    return ferry__oom(err, -1, len, "the selection notes of store %s", store);
  snprintf(out->notes, len, "chose %s (%lld rows%s%s); skipped %s%s", chosen,
           (long long)longest, dim[0] ? " along " : "", dim,
           skipped[0] ? skipped : "nothing", others);
  return 0;
}

/* Variable k of out from array x (its name moves to the variable). */
static int describe_var(const char *store, const zarr_walk *w, zarr_array *x,
                        int use_netcdf, int lanes, ferry__part_desc *out, int k,
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
  /* what a failed storage text wanted: its directory's path, or (a bound)
   * the text itself */
  size_t storage_want =
      adir ? Z_STORAGE_MAX : strlen(store) + strlen(v->name) + 2;
  int64_t cache = 0;
  v->storage = adir
                   ? storage_text(adir, &x->z, use_netcdf ? "netcdf" : "native",
                                  lanes, &cache)
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
    return ferry__oom(err, -1,
                      !out->paths[k] ? strlen(store) + 1
                      : !v->storage  ? storage_want
                                     : ZREC_LEN,
                      "the description of array %s of store %s", v->name,
                      store);
  return 0;
}

int ferry__zarr_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err) {
  zarr_walk w;
  int rc = 0, nsel = 0, use_netcdf = 0;
  int64_t longest = -1;
  char named[4096] = "";
  if (opts && ferry_options_get(opts, "vars", named, sizeof named) != 0)
    named[0] = '\0';
  char *store = ferry__zarr_store_dir(path);
  memset(out, 0, sizeof *out);
  memset(&w, 0, sizeof w);
  if (!store)
    return ferry__oom(err, -1, strlen(path) + 1, "the store path of %s", path);
  if ((rc = check_store_dir(store, err)) < 0 ||
      (rc = walk_store(store, &w, err)) < 0 ||
      (rc = pick_arrays(store, &w, named, &longest, &nsel, err)) < 0 ||
      (rc = pick_reader(store, opts, &w, &use_netcdf, err)) < 0 ||
      (rc = alloc_desc(out, nsel, store, err)) < 0)
    goto cleanup;
  out->num_samples = longest;
  if ((rc = describe_notes(store, &w, longest, out, err)) < 0)
    goto cleanup;
  for (int i = 0, k = 0; i < w.n && rc == 0; i++)
    if (is_selected(&w.a[i], longest))
      rc = describe_var(store, &w, &w.a[i], use_netcdf,
                        ferry__pool_lanes_for(opts), out, k++, err);
cleanup:
  walk_free(&w);
  free(store);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}
