/*
 * meta.c - the zarr backend's metadata files, all read on rank 0 but for
 * the .zarray (zarr.json) check every rank makes when it opens a store:
 * reading a small metadata file as JSON (bounded, never from a FIFO), and
 * parsing a v2 .zarray (dtype, fill value, codecs; everything ferry cannot
 * serve is refused here, with FERRY_ENOTSUP naming array, reason and fix,
 * before any reader sees the store).  v3's zarr.json is v3.c; reading an
 * array's metadata from its directory, either version, and the walk of a
 * store's groups are store.c, describe describe.c.  It needs jansson only,
 * never netCDF-C.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/meta.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define Z_META_MAX ((off_t)1 << 24) /* a .zarray above 16 MiB is corrupt */

int ferry__zarr_host_is_little(void) {
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
char *ferry__zarr_read_meta(const char *path, const char *what, size_t *len,
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
json_t *ferry__zarr_json_text(const char *text, size_t len, const char *path,
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
json_t *ferry__zarr_load_json(const char *path, const char *what,
                              ferry__err *err) {
  size_t len = 0;
  char *text = ferry__zarr_read_meta(path, what, &len, err);
  if (!text)
    return NULL;
  json_t *j = ferry__zarr_json_text(text, len, path, err);
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
  z->swapped = size > 1 && ((order == '<' && !ferry__zarr_host_is_little()) ||
                            (order == '>' && ferry__zarr_host_is_little()));
  return 0;
}

/* fill_value -> stored bytes; 0, or -1 when it cannot be represented. */
int ferry__zarr_parse_fill(json_t *jf, zmeta *z) {
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
  if (!ferry__zarr_host_is_little() && n < 8 && z->dtype != FERRY_FLOAT32 &&
      z->dtype != FERRY_FLOAT64)
    memmove(out, out + 8 - n, n);
  memcpy(z->fill, out, n);
  if (z->swapped)
    ferry__byteswap(z->fill, 1, n);
  z->has_fill = 1;
  return 0;
}

/* A numcodecs vlen filter (vlen-utf8, vlen-bytes, vlen-array): only as the
 * first filter of an object array. */
static int parse_vlen(json_t *jc, const char *id, zmeta *z, const char *where,
                      ferry__err *err) {
  int kind = !strcmp(id, "vlen-utf8") || !strcmp(id, "vlen-bytes") ? 1
             : !strcmp(id, "vlen-array")                           ? 2
                                                                   : 0;
  if (!kind || z->vlen != -1 || z->ncodecs != 0)
    return ferry__seterr(err, FERRY_ENOTSUP, "%s: codec '%s' %s", where, id,
                         !kind ? "cannot be decoded by ferry (it reads "
                                 "vlen-utf8, vlen-bytes and vlen-array)"
                         : z->vlen != -1 ? "on an array whose dtype is not "
                                           "'|O' (objects)"
                                         : "after another filter (ferry "
                                           "reads it as the first)");
  if (kind == 2) {
    json_t *dt = json_object_get(jc, "dtype");
    const char *why = NULL;
    zmeta t;
    memset(&t, 0, sizeof t);
    if (!json_is_string(dt) ||
        parse_dtype(json_string_value(dt), &t, &why) < 0 || t.swapped)
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "%s: vlen-array of dtype %s, which ferry cannot "
                           "serve (integers, float16/32/64 of this host's "
                           "byte order)",
                           where,
                           json_is_string(dt) ? json_string_value(dt) : "?");
    z->dtype = t.dtype;
    z->itemsize = t.itemsize;
  }
  z->vlen = kind;
  size_t used = strlen(z->codecs_text);
  snprintf(z->codecs_text + used, sizeof z->codecs_text - used, "%s%s",
           used ? " + " : "", id);
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
  if (!strncmp(id, "vlen-", 5))
    return parse_vlen(jc, id, z, where, err);
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
  if (!strcmp(json_string_value(dtype), "|O")) { /* objects: a vlen filter
                                                  * must say what (codecs) */
    z->vlen = -1;
    z->dtype = FERRY_UINT8;
    z->itemsize = 1;
    return 0;
  }
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
  if (z->vlen == -1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: dtype '|O' (Python objects) without a "
                         "vlen-utf8, vlen-bytes or vlen-array filter, which "
                         "ferry cannot read",
                         label);
  if (z->vlen &&
      (z->ndim != 1 || z->ncodecs > 1 || (z->ncodecs && !z->has_compressor)))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a variable-length array %s, which ferry "
                         "cannot read (one dimension, a compressor and no "
                         "other filter)",
                         label,
                         z->ndim != 1 ? "of more than one dimension"
                                      : "with a filter after its vlen one");
  if (!fill || ferry__zarr_parse_fill(fill, z) < 0)
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
  json_t *j = ferry__zarr_json_text(text, len, path, err);
  if (!j)
    return err ? err->code : FERRY_EFORMAT;
  int rc = zarray_fields(j, path, label, z, err);
  json_decref(j);
  return rc;
}
