/*
 * nczarr.c - the Zarr backend: Zarr v2 stores on a file system, as
 * zarr-python and xarray write them, read through netCDF-C's NCZarr.
 *
 * A part is one store: a directory holding .zgroup (a group; its arrays,
 * and those of its sub-groups, are the variables, named by their path
 * "samples", "sub/x") or .zarray (a store that is one array, named after
 * the directory).  As with HDF5 the arrays whose first dimension is the
 * longest are the variables; shorter ones (coordinates of another axis)
 * are skipped.
 *
 * Rank 0 describes a store from its JSON metadata alone (jansson), before
 * netCDF-C sees it: netCDF-C 4.9.0 crashes (SIGSEGV in nc_open) on a store
 * holding a bool array, returns Fortran-ordered arrays transposed without
 * error, and older versions hand back compressed bytes as data when a codec
 * plugin is missing (Unidata/netcdf-c#2449, #2234).  So describe refuses,
 * with FERRY_ENOTSUP naming array, reason and fix, every variable whose
 * dtype ferry cannot hold (complex, datetime, object, strings, structured),
 * that is Fortran-ordered, or compressed with a codec ferry does not decode;
 * a Zarr v3 store is refused the same way.
 *
 * Reads.  Each rank opens the store itself (NCZarr has no MPI-IO) on the
 * loader's I/O thread, checks that every variable's .zarray is the one rank
 * 0 described (its size in the manifest's file_size, its hash in the
 * backend's record, ZREC below), and reads rows with one of two readers,
 * chosen by rank 0 and kept in the same record:
 *
 *   netcdf  (the default) nc_open("file://STORE#mode=zarr,file") and
 *           nc_get_vara; compressed chunks are decoded by ferry's NCZarr
 *           plugins (src/plugins), which netCDF-C finds through
 *           HDF5_PLUGIN_PATH (set_plugin_path below).  After the open every
 *           variable's filter chain, as netCDF-C reports it
 *           (nc_inq_var_filter_ids), must have as many codecs as its
 *           .zarray, or nothing is read.  Its chunk cache is bounded with
 *           nc_set_var_chunk_cache and counted in cache_bytes.
 *   native  ferry's own chunk reader with the same decoders (codec.c): for
 *           stores netCDF-C cannot open (a bool or float16 array anywhere
 *           in the store, a store that is a single array), or when
 *           zarr_reader=native.  A chunk a read covers whole is
 *           decoded (or read, uncompressed) straight into the read buffer;
 *           other chunks through a band of rows kept per variable.  Its
 *           buffers are allocated once per open store, never per chunk,
 *           and counted in cache_bytes (native_cache_bytes).
 *
 * Missing chunk files.  zarr-python does not write a chunk whose values all
 * equal the fill value (write_empty_chunks=False, its default) and reads a
 * missing chunk as the fill value; ferry does the same when the array has a
 * fill_value.  When fill_value is null zarr-python returns uninitialised
 * memory, so ferry refuses the read (FERRY_EFORMAT naming the chunk file).
 * Both readers check, before reading, that every chunk file they will touch
 * exists or may be absent and, without a compressor, has the chunk's exact
 * size; decoders check the decoded size.  A value that was not decoded is
 * never served.
 *
 * netCDF-C is not thread-safe: every netCDF call of this file holds
 * nc_mutex, so two loaders of one process (or a describe on rank 0 while
 * another loader reads) never call it at once.  An application that calls
 * netCDF-C itself from another thread while ferry reads is not protected.
 * caps is 0: no collective I/O (io=collective is refused by ferry_open) and
 * io_* calls come from the loader's single I/O thread.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "plugins/codec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_NCZARR
#include <netcdf.h>
#include <netcdf_filter.h>
#endif

#ifndef FERRY_PLUGIN_DIR
#define FERRY_PLUGIN_DIR ""
#endif
#ifndef FERRY_BUILD_PLUGIN_DIR
#define FERRY_BUILD_PLUGIN_DIR ""
#endif

#define Z_MAX_DIMS (FERRY_MAX_DIMS + 1)
#define Z_MAX_CODECS 8
#define Z_MAX_DEPTH 32
#define Z_META_MAX ((off_t)1 << 24) /* a .zarray above 16 MiB is corrupt */
#define Z_DEFAULT_OPEN 16
/* Chunk files stat'ed to estimate the compression ratio for ferry info. */
#define Z_RATIO_SAMPLE 16
/* The plugin every ferry build has: how the plugin directory is recognised. */
#define Z_PLUGIN_PROBE "lib__nczferry_shuffle.so"

static pthread_mutex_t nc_mutex = PTHREAD_MUTEX_INITIALIZER;

static int host_is_little(void) {
  const uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* ---- .zarray ---------------------------------------------------------- */

/* One array's metadata, as .zarray gives it. */
typedef struct zmeta {
  int ndim;
  int64_t shape[Z_MAX_DIMS];
  int64_t chunks[Z_MAX_DIMS];
  ferry_dtype dtype;
  int swapped;                 /* stored non-native                      */
  size_t itemsize;
  int ncodecs;                 /* encode order: filters..., compressor   */
  int codec[Z_MAX_CODECS];
  unsigned param[Z_MAX_CODECS];
  int has_compressor;
  char sep;                    /* dimension_separator: '.' or '/'        */
  int has_fill;
  unsigned char fill[8];       /* fill value, stored byte order          */
  char codecs_text[160];       /* "blosc(lz4, shuffle) + shuffle(4)"     */
  size_t chunk_bytes;          /* bytes of one decoded chunk             */
  int64_t across;              /* chunks spanning one row band           */
  uint64_t hash;               /* FNV-1a of the .zarray bytes            */
  int64_t meta_size;
} zmeta;

/* Read a whole small file; *len receives its size.  NULL with errno. */
static char *slurp(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
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

/* Parse a JSON metadata file; NULL with err set (missing, unreadable,
 * corrupt).  *hash and *size describe the bytes when not NULL. */
static json_t *load_json(const char *path, const char *what, uint64_t *hash,
                         int64_t *size, ferry__err *err) {
  size_t len = 0;
  char *text = slurp(path, &len);
  if (!text) {
    int e = errno;
    ferry__seterr(err, e == ENOENT ? FERRY_EFORMAT : ferry__errno_code(e),
                  "%s: %s %s", path,
                  e == ENOENT ? "is missing:" : "cannot be read:",
                  e == ENOENT ? what : strerror(e));
    return NULL;
  }
  json_error_t jerr;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (hash)
    *hash = ferry__fnv1a(FERRY__FNV_INIT, text, len) >> 1;
  if (size)
    *size = (int64_t)len;
  free(text);
  if (!j)
    ferry__seterr(err, FERRY_EFORMAT,
                  "%s: corrupt JSON at line %d, column %d: %s", path,
                  jerr.line, jerr.column, jerr.text);
  else if (!json_is_object(j)) {
    ferry__seterr(err, FERRY_EFORMAT, "%s: corrupt metadata: not a JSON "
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
    return ferry__seterr(err, FERRY_ENOTSUP, "%s: more than %d codecs",
                         where, Z_MAX_CODECS);
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
    json_t *cn = json_object_get(jc, "cname"), *sh = json_object_get(jc,
                                                                     "shuffle");
    json_int_t s = json_is_integer(sh) ? json_integer_value(sh) : 1;
    snprintf(extra, sizeof extra, "(%s%s)",
             json_is_string(cn) ? json_string_value(cn) : "?",
             s == 1 ? ", shuffle" : s == 2 ? ", bitshuffle" : "");
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

/* Parse ARRAYDIR/.zarray into z.  Errors name the store and the array. */
static int parse_zarray(const char *adir, const char *label, zmeta *z,
                        ferry__err *err) {
  char *path = ferry__join_path(adir, ".zarray");
  int rc = 0;
  const char *why = NULL;
  memset(z, 0, sizeof *z);
  if (!path)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  json_t *j = load_json(path, "the array has no .zarray (not written "
                              "completely, or not a Zarr v2 array)",
                        &z->hash, &z->meta_size, err);
  if (!j) {
    rc = err ? err->code : FERRY_EFORMAT;
    goto cleanup;
  }
  json_t *fmt = json_object_get(j, "zarr_format"),
         *shape = json_object_get(j, "shape"),
         *chunks = json_object_get(j, "chunks"),
         *dtype = json_object_get(j, "dtype"),
         *order = json_object_get(j, "order"),
         *comp = json_object_get(j, "compressor"),
         *filt = json_object_get(j, "filters"),
         *fill = json_object_get(j, "fill_value"),
         *sep = json_object_get(j, "dimension_separator");
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 2) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "%s: zarr_format is not 2: ferry reads Zarr v2 "
                       "stores only",
                       path);
    goto cleanup;
  }
  if (!json_is_array(shape) || !json_is_array(chunks) ||
      json_array_size(shape) != json_array_size(chunks) ||
      json_array_size(shape) > Z_MAX_DIMS) {
    rc = ferry__seterr(err,
                       json_array_size(shape) > Z_MAX_DIMS ? FERRY_ENOTSUP
                                                           : FERRY_EFORMAT,
                       "%s: %s", path,
                       json_array_size(shape) > Z_MAX_DIMS
                           ? "too many dimensions for ferry"
                           : "corrupt metadata: shape and chunks must be "
                             "lists of the same length");
    goto cleanup;
  }
  z->ndim = (int)json_array_size(shape);
  for (int d = 0; d < z->ndim; d++) {
    json_t *s = json_array_get(shape, (size_t)d),
           *c = json_array_get(chunks, (size_t)d);
    if (!json_is_integer(s) || !json_is_integer(c) ||
        json_integer_value(s) < 0 || json_integer_value(c) < 1) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: bad shape or chunks", path);
      goto cleanup;
    }
    z->shape[d] = (int64_t)json_integer_value(s);
    z->chunks[d] = (int64_t)json_integer_value(c);
  }
  if (!json_is_string(dtype)) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "array %s: a structured dtype, which ferry cannot "
                       "represent (store each field as its own array)",
                       label);
    goto cleanup;
  }
  if (parse_dtype(json_string_value(dtype), z, &why) < 0) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "array %s: dtype '%s' is %s, which ferry cannot "
                       "represent (bool, integers and float16/32/64 only)",
                       label, json_string_value(dtype), why);
    goto cleanup;
  }
  if (!json_is_string(order) ||
      (strcmp(json_string_value(order), "C") != 0 &&
       strcmp(json_string_value(order), "F") != 0)) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: corrupt metadata: order must be \"C\" or \"F\"",
                       path);
    goto cleanup;
  }
  if (strcmp(json_string_value(order), "F") == 0 && z->ndim > 1) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "array %s: order \"F\" (Fortran) is not supported: "
                       "netCDF-C returns such arrays transposed without an "
                       "error; rewrite it in C order, e.g. "
                       "zarr.array(src[...], chunks=src.chunks, order='C')",
                       label);
    goto cleanup;
  }
  if (sep && !json_is_null(sep)) {
    const char *s = json_is_string(sep) ? json_string_value(sep) : "";
    if (strcmp(s, ".") != 0 && strcmp(s, "/") != 0) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: dimension_separator must be "
                         "\".\" or \"/\"",
                         path);
      goto cleanup;
    }
    z->sep = s[0];
  } else {
    z->sep = '.';
  }
  if (filt && !json_is_null(filt)) {
    if (!json_is_array(filt)) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt metadata: filters must be a list or "
                         "null",
                         path);
      goto cleanup;
    }
    for (size_t i = 0; i < json_array_size(filt); i++)
      if ((rc = parse_codec(json_array_get(filt, i), z, label, err)) < 0)
        goto cleanup;
  }
  if (comp && !json_is_null(comp)) {
    if ((rc = parse_codec(comp, z, label, err)) < 0)
      goto cleanup;
    z->has_compressor = 1;
  }
  if (!fill || parse_fill(fill, z) < 0) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "array %s: fill_value cannot be represented in its "
                       "dtype by ferry",
                       label);
    goto cleanup;
  }
  z->chunk_bytes = z->itemsize;
  z->across = 1;
  for (int d = 0; d < z->ndim; d++) {
    z->chunk_bytes *= (size_t)z->chunks[d];
    if (d > 0)
      z->across *= (z->shape[d] + z->chunks[d] - 1) / z->chunks[d];
  }
cleanup:
  json_decref(j);
  free(path);
  return rc;
}

/* ---- Store layout ----------------------------------------------------- */

static int exists_in(const char *dir, const char *name, int want_dir) {
  char *p = ferry__join_path(dir, name);
  struct stat st;
  int yes = p && stat(p, &st) == 0 &&
            (want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
  free(p);
  return yes;
}

/* The store directory of a dataset string: a directory, or
 * file://PATH#mode=... (the path part, decoded no further). */
static char *store_dir_of(const char *spec) {
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

static int z_probe(const char *path) {
  struct stat st;
  if (!path)
    return 0;
  if (strncmp(path, "file://", 7) == 0)
    return strstr(path, "#mode=") != NULL &&
           (strstr(path, "zarr") != NULL);
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  return exists_in(path, ".zgroup", 0) || exists_in(path, ".zarray", 0) ||
         exists_in(path, "zarr.json", 0) || exists_in(path, ".zattrs", 0) ||
         (n > 5 && strncmp(path + n - 5, ".zarr", 5) == 0);
}

/* An array found in a store. */
typedef struct zarr_array {
  char *name;      /* path inside the store; the store's stem for a root array */
  zmeta z;
  int ok;          /* metadata parsed; else err holds why  */
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
  x->ok = parse_zarray(dir, name, &x->z, &x->err) == 0;
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
      if (exists_in(sub, ".zarray", 0)) {
        if (add_array(w, sub, rel) < 0)
          rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory");
      } else if (exists_in(sub, ".zgroup", 0)) {
        rc = walk_group(w, store, sub, rel, depth + 1, err);
      } else if (exists_in(sub, "zarr.json", 0)) {
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

/* Walk the store: its arrays, or the store itself when it is one array. */
static int walk_store(const char *store, zarr_walk *w, ferry__err *err) {
  memset(w, 0, sizeof *w);
  if (exists_in(store, "zarr.json", 0))
    return ferry__seterr(err, FERRY_ENOTSUP, "store %s is a Zarr v3 store "
                                             "(zarr.json). %s",
                         store, v3_advice);
  if (exists_in(store, ".zarray", 0)) {
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
  if (!exists_in(store, ".zgroup", 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is not a Zarr v2 store: it holds neither "
                         ".zgroup nor .zarray",
                         store);
  char *zg = ferry__join_path(store, ".zgroup");
  if (!zg)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  json_t *j = load_json(zg, "not a Zarr group", NULL, NULL, err);
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 2)
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "%s: zarr_format is not 2. %s", zg, v3_advice);
  json_decref(j);
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

/* ---- The record ------------------------------------------------------- */

/*
 * The zarr backend's record of one variable of one part (ferry__blob,
 * record version ZREC_VERSION): u8 reader (ZREC_NATIVE or ZREC_NETCDF),
 * then the FNV-1a hash of its .zarray as u64 little-endian.  The manifest
 * packs, hashes and saves it; only this file reads it.
 */
#define ZREC_VERSION 1
#define ZREC_LEN 9
enum { ZREC_NATIVE = 0, ZREC_NETCDF = 1 };

static int zrec_put(ferry__blob *b, int reader, uint64_t hash) {
  if (!(b->p = malloc(ZREC_LEN)))
    return -1;
  b->len = ZREC_LEN;
  b->p[0] = (unsigned char)reader;
  for (int i = 0; i < 8; i++)
    b->p[1 + i] = (unsigned char)(hash >> (8 * i));
  return 0;
}

/* Variable v's record in part pt; FERRY_EFORMAT naming the store when it
 * is missing or malformed (a manifest another ferry saved). */
static int zrec_get(const ferry__manifest *m, const ferry__part *pt, int v,
                    int rank, int *reader, uint64_t *hash, ferry__err *err) {
  const ferry__blob *b = pt->rec ? &pt->rec[v] : NULL;
  if (m->record_version != ZREC_VERSION || !b || b->len != ZREC_LEN ||
      b->p[0] > ZREC_NETCDF)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "store %s, array %s: the manifest's zarr record is "
                         "missing or malformed (version %d, %zu bytes; rank "
                         "%d): scan the dataset again",
                         pt->paths[v], m->vars[v].name, m->record_version,
                         b ? b->len : 0, rank);
  *reader = b->p[0];
  *hash = 0;
  for (int i = 0; i < 8; i++)
    *hash |= (uint64_t)b->p[1 + i] << (8 * i);
  return 0;
}

/* ---- Describe (rank 0) ------------------------------------------------ */

/* Path of the chunk file of chunk index idx (ndim entries). */
static char *chunk_path(const char *adir, const zmeta *z, const int64_t *idx) {
  char key[Z_MAX_DIMS * 21 + 1];
  size_t used = 0;
  for (int d = 0; d < z->ndim; d++)
    used += (size_t)snprintf(key + used, sizeof key - used, "%s%lld",
                             d ? (z->sep == '/' ? "/" : ".") : "",
                             (long long)idx[d]);
  return ferry__join_path(adir, key);
}

/* The largest chunk file the native reader accepts for a chunk of n
 * decoded bytes: above what any codec stores for incompressible data (lz4
 * adds n/255 + 16 bytes, zstd about n/256, blosc 16, zlib and gzip less),
 * so a larger file is corrupt.  Its read buffer has this size. */
static size_t stored_bound(size_t n) { return n + n / 16 + 4096; }

/* 1 when a decoded chunk is c0 whole rows of the array, laid out as in the
 * read buffer: chunked on dimension 0 only, with chunks no larger than the
 * array on the others.  Such a chunk is decoded straight into the rows of a
 * read, or of the band. */
static int chunk_is_rows(const zmeta *z) {
  for (int d = 1; d < z->ndim; d++)
    if (z->chunks[d] != z->shape[d])
      return 0;
  return 1;
}

/* What the native reader keeps per variable and open store (describe
 * counts it in cache_bytes): the band (c0 rows; one band of chunks bounds
 * it), one decoded chunk when chunks are not rows, the stored bytes of one
 * chunk file when compressed, one intermediate stage of a chain of codecs. */
static size_t native_cache_bytes(const zmeta *z) {
  size_t n = z->chunk_bytes * (size_t)z->across;
  if (!chunk_is_rows(z))
    n += z->chunk_bytes;
  if (z->ncodecs)
    n += stored_bound(z->chunk_bytes);
  if (z->ncodecs > 1)
    n += z->chunk_bytes;
  return n;
}

static char *array_dir(const char *store, const char *name, int root_array) {
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
  int64_t idx[Z_MAX_DIMS] = {0}, nch = z->shape[0] ? (z->shape[0] + z->chunks[0] - 1) / z->chunks[0] : 0;
  long long stored = 0, raw = 0, missing = 0;
  for (int64_t c = 0; c < nch && c < Z_RATIO_SAMPLE; c++) {
    idx[0] = c;
    char *p = chunk_path(adir, z, idx);
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
    used += (size_t)snprintf(buf + used, sizeof buf - used,
                             ", %lld of the first %lld chunks absent (%s)",
                             missing, (long long)(nch < Z_RATIO_SAMPLE ? nch : Z_RATIO_SAMPLE),
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

static int z_describe(const char *path, const ferry_options *opts,
                      ferry__part_desc *out, ferry__err *err) {
  zarr_walk w;
  int rc = 0, nsel = 0;
  int64_t longest = -1;
  char *store = store_dir_of(path), *abs = NULL;
  const char *why = NULL;
  memset(out, 0, sizeof *out);
  memset(&w, 0, sizeof w);
  if (!store)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  struct stat st;
  if (stat(store, &st) != 0 || !S_ISDIR(st.st_mode)) {
    rc = ferry__seterr(err, errno == ENOENT ? FERRY_ENOENT : FERRY_EFORMAT,
                       "%s: %s", store,
                       errno == ENOENT ? strerror(errno)
                                       : "not a directory (a Zarr store is "
                                         "one)");
    goto cleanup;
  }
  if ((rc = walk_store(store, &w, err)) < 0)
    goto cleanup;
  for (int i = 0; i < w.n; i++)
    if (w.a[i].ok && w.a[i].z.ndim >= 1 && w.a[i].z.shape[0] > longest)
      longest = w.a[i].z.shape[0];
  /* Arrays whose metadata could not be read at all are errors: they might
   * be the variables. */
  for (int i = 0; i < w.n; i++) {
    zarr_array *x = &w.a[i];
    if (!x->ok && (x->err.code != FERRY_ENOTSUP || longest < 0)) {
      rc = ferry__seterr(err, x->err.code, "store %s: %s", store,
                         x->err.msg);
      goto cleanup;
    }
  }
  for (int i = 0; i < w.n; i++) {
    zarr_array *x = &w.a[i];
    if (!x->ok) {
      /* Unsupported (dtype, order, codec): an error if it could be a
       * variable.  Its shape is unknown when its dtype failed, so any
       * unsupported array of the store is reported. */
      rc = ferry__seterr(err, x->err.code, "store %s: %s", store,
                         x->err.msg);
      goto cleanup;
    }
    if (x->z.ndim >= 1 && x->z.shape[0] == longest)
      nsel++;
  }
  if (nsel == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY,
                       "store %s holds no array with a sample dimension",
                       store);
    goto cleanup;
  }
  char mode[16];
  int use_netcdf;
  reader_option(opts, mode, sizeof mode);
#ifdef HAVE_NCZARR
  use_netcdf = netcdf_can_open(&w, &why);
  if (strcmp(mode, "netcdf") == 0 && !use_netcdf) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "store %s: zarr_reader=netcdf, but netCDF-C "
                       "cannot read it: %s",
                       store, why);
    goto cleanup;
  }
#else
  use_netcdf = 0;
  if (strcmp(mode, "netcdf") == 0) {
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "store %s: zarr_reader=netcdf, but this ferry was "
                       "built without netCDF-C (NCZarr): use "
                       "zarr_reader=native or auto",
                       store);
    goto cleanup;
  }
#endif
  if (strcmp(mode, "native") == 0)
    use_netcdf = 0;
  /* The path each rank opens: the store directory (the netCDF reader makes
   * its URL from it). */
  abs = strdup(store);
  if (!abs) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "store %s: out of memory or "
                                          "unresolvable path",
                       store);
    goto cleanup;
  }
  out->vars = calloc((size_t)nsel, sizeof *out->vars);
  out->paths = calloc((size_t)nsel, sizeof *out->paths);
  out->data_offset = calloc((size_t)nsel, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nsel, sizeof *out->file_size);
  out->rec = calloc((size_t)nsel, sizeof *out->rec);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
    goto cleanup;
  }
  out->nvars = nsel;
  out->num_samples = longest;
  {
    /* What was chosen and what was skipped, and why (ferry info; the error
     * of a `vars` naming a skipped array). */
    char chosen[512] = "", skipped[1536] = "";
    for (int i = 0; i < w.n; i++) {
      const zarr_array *x = &w.a[i];
      char *buf = x->z.ndim >= 1 && x->z.shape[0] == longest ? chosen : skipped;
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
    if (!(out->notes = malloc(len))) {
      rc = ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
      goto cleanup;
    }
    snprintf(out->notes, len, "chose %s (%lld rows); skipped %s", chosen,
             (long long)longest, skipped[0] ? skipped : "nothing");
  }
  for (int i = 0, k = 0; i < w.n; i++) {
    zarr_array *x = &w.a[i];
    if (x->z.ndim < 1 || x->z.shape[0] != longest)
      continue;
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
    char *adir = array_dir(store, v->name, w.root_array);
    int64_t cache = 0;
    v->storage = adir ? storage_text(adir, &x->z,
                                     use_netcdf ? "netcdf" : "native", &cache)
                      : NULL;
    v->cache_bytes = (size_t)cache;
    free(adir);
    /* Every rank checks its .zarray against its size and hash. */
    out->file_size[k] = x->z.meta_size;
    if (!(out->paths[k] = strdup(abs)) || !v->storage ||
        zrec_put(&out->rec[k], use_netcdf ? ZREC_NETCDF : ZREC_NATIVE,
                 x->z.hash) < 0) {
      rc = ferry__seterr(err, FERRY_ENOMEM, "%s: out of memory", store);
      goto cleanup;
    }
    k++;
  }
cleanup:
  walk_free(&w);
  free(store);
  free(abs);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- netCDF-C's plugin path ------------------------------------------- */

static char plugin_dir[PATH_MAX];
static int plugin_path_done;

static int dir_has_plugins(const char *dir) {
  return dir && *dir && exists_in(dir, Z_PLUGIN_PROBE, 0);
}

/*
 * Before the first nc_open of the process: prepend ferry's plugin directory
 * to HDF5_PLUGIN_PATH (netCDF-C reads it once, when it first needs a
 * filter).  The directory is $FERRY_PLUGIN_DIR, else the installed one,
 * else the build tree's (make check before make install).  Entries of the
 * user's HDF5_PLUGIN_PATH that are not directories are dropped: netCDF-C
 * 4.9.0 gives up loading every plugin when one entry does not exist.
 * Called with nc_mutex held.
 */
static void set_plugin_path(void) {
  if (plugin_path_done)
    return;
  plugin_path_done = 1;
  const char *env = getenv("FERRY_PLUGIN_DIR");
  const char *dir = env && *env ? env
                    : dir_has_plugins(FERRY_PLUGIN_DIR) ? FERRY_PLUGIN_DIR
                    : dir_has_plugins(FERRY_BUILD_PLUGIN_DIR)
                        ? FERRY_BUILD_PLUGIN_DIR
                        : FERRY_PLUGIN_DIR;
  snprintf(plugin_dir, sizeof plugin_dir, "%s", dir);
  const char *old = getenv("HDF5_PLUGIN_PATH");
  size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
  char *path = malloc(n), *copy = old ? strdup(old) : NULL;
  if (!path || (old && !copy)) {
    free(path);
    free(copy);
    return;
  }
  size_t used = 0;
  struct stat st;
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
    used += (size_t)snprintf(path, n, "%s", dir);
  for (char *s = copy, *save = NULL, *tok; s && (tok = strtok_r(s, ":;", &save));
       s = NULL)
    if (strcmp(tok, dir) != 0 && stat(tok, &st) == 0 && S_ISDIR(st.st_mode))
      used += (size_t)snprintf(path + used, n - used, "%s%s",
                               used ? ":" : "", tok);
  if (used)
    setenv("HDF5_PLUGIN_PATH", path, 1);
  free(path);
  free(copy);
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

typedef struct zvar {
  zmeta z;
  char *adir;          /* array directory                         */
  int gid, varid;      /* netCDF handles                          */
  /* The native reader's buffers, allocated at first use and kept while
   * the store is open (describe counted them in cache_bytes). */
  int64_t band;             /* dim-0 chunk held in band_buf, or -1     */
  unsigned char *band_buf;  /* c0 rows of the array                    */
  unsigned char *chunk_buf; /* one decoded chunk, when chunks are not rows */
  unsigned char *raw;       /* a chunk file's stored bytes (compressed) */
  unsigned char *mid;       /* a middle stage of a chain of codecs      */
} zvar;

typedef struct zpart {
  int64_t part;
  int ncid;            /* netCDF, -1 with the native reader   */
  zvar *v;             /* [nvars]                              */
  uint64_t last_use;
} zpart;

struct ferry__io {
  const ferry__manifest *m;
  int rank;
  size_t max_open;
  zpart **parts;
  size_t nparts, cap;
  uint64_t clock;
};

static void part_close(ferry__io *io, zpart *p) {
  for (int v = 0; p->v && v < io->m->nvars; v++) {
    free(p->v[v].adir);
    free(p->v[v].band_buf);
    free(p->v[v].chunk_buf);
    free(p->v[v].raw);
    free(p->v[v].mid);
  }
  free(p->v);
#ifdef HAVE_NCZARR
  if (p->ncid >= 0) {
    pthread_mutex_lock(&nc_mutex);
    nc_close(p->ncid);
    pthread_mutex_unlock(&nc_mutex);
  }
#endif
  free(p);
}

#ifdef HAVE_NCZARR
/* "file:///ABS/STORE#mode=zarr,file", malloc'd; NULL with errno. */
static char *netcdf_url(const char *store) {
  char *real = realpath(store, NULL), *url = NULL;
  if (!real)
    return NULL;
  size_t n = strlen(real) + 32;
  if ((url = malloc(n)))
    snprintf(url, n, "file://%s#mode=zarr,file", real);
  free(real);
  return url;
}
#endif

/* Open part: check every variable's .zarray against the manifest, then
 * open the store with netCDF-C when that is its reader. */
static int part_open(ferry__io *io, int64_t part, zpart **out,
                     ferry__err *err) {
  const ferry__manifest *m = io->m;
  const ferry__part *pt = &m->parts[part];
  const char *spec = pt->paths[0];
  int rc = 0;
  zpart *p = calloc(1, sizeof *p);
  char *store = store_dir_of(spec);
  if (!p || !store || !(p->v = calloc((size_t)m->nvars, sizeof *p->v))) {
    free(store);
    if (p)
      free(p->v);
    free(p);
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                         io->rank);
  }
  p->part = part;
  p->ncid = -1;
  int root_array = exists_in(store, ".zarray", 0), reader = ZREC_NATIVE;
  for (int v = 0; v < m->nvars && rc == 0; v++) {
    zvar *zv = &p->v[v];
    const ferry__var *mv = &m->vars[v];
    uint64_t hash = 0;
    zv->band = -1;
    if ((rc = zrec_get(m, pt, v, io->rank, &reader, &hash, err)) < 0)
      break;
    if (!(zv->adir = array_dir(store, mv->name, root_array))) {
      rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                         io->rank);
      break;
    }
    if ((rc = parse_zarray(zv->adir, mv->name, &zv->z, err)) < 0) {
      char msg[FERRY__MSG_MAX];
      snprintf(msg, sizeof msg, "%s", err->msg);
      rc = ferry__seterr(err, rc, "store %s on rank %d (offset 0): %s", store,
                         io->rank, msg);
      break;
    }
    if (zv->z.hash != hash ||
        zv->z.meta_size != pt->file_size[v] ||
        zv->z.shape[0] != pt->num_samples)
      rc = ferry__seterr(err, FERRY_EMISMATCH,
                         "store %s, array %s: its .zarray on rank %d differs "
                         "from the one rank 0 described (%lld against %lld "
                         "bytes; offset 0)",
                         store, mv->name, io->rank,
                         (long long)zv->z.meta_size,
                         (long long)pt->file_size[v]);
  }
#ifdef HAVE_NCZARR
  char *url = NULL;
  if (rc == 0 && reader == ZREC_NETCDF && !(url = netcdf_url(store)))
    rc = ferry__seterr(err, ferry__errno_code(errno),
                       "store %s on rank %d: cannot resolve its path: %s",
                       store, io->rank, strerror(errno));
  if (rc == 0 && reader == ZREC_NETCDF) {
    pthread_mutex_lock(&nc_mutex);
    set_plugin_path();
    int nrc = nc_open(url, NC_NOWRITE, &p->ncid);
    if (nrc != NC_NOERR) {
      p->ncid = -1;
      rc = ferry__seterr(err, FERRY_EIO,
                         "nc_open(%s) failed on rank %d: %s%s (offset 0)",
                         url, io->rank, nc_strerror(nrc),
                         nrc == NC_ENOFILTER
                             ? "; netCDF-C found no codec plugin: set "
                               "FERRY_PLUGIN_DIR to the directory of "
                               "lib__nczferry_*.so"
                             : "");
    }
    for (int v = 0; v < m->nvars && rc == 0; v++) {
      zvar *zv = &p->v[v];
      const ferry__var *mv = &m->vars[v];
      char grp[PATH_MAX] = "/";
      const char *slash = strrchr(mv->name, '/');
      const char *leaf = slash ? slash + 1 : mv->name;
      if (slash)
        snprintf(grp, sizeof grp, "/%.*s", (int)(slash - mv->name), mv->name);
      int nd = 0, dimids[NC_MAX_VAR_DIMS];
      size_t nf = 0;
      nrc = slash ? nc_inq_grp_full_ncid(p->ncid, grp, &zv->gid)
                  : (zv->gid = p->ncid, NC_NOERR);
      if (nrc == NC_NOERR)
        nrc = nc_inq_varid(zv->gid, leaf, &zv->varid);
      if (nrc == NC_NOERR)
        nrc = nc_inq_varndims(zv->gid, zv->varid, &nd);
      if (nrc == NC_NOERR && nd == zv->z.ndim && nd <= NC_MAX_VAR_DIMS)
        nrc = nc_inq_vardimid(zv->gid, zv->varid, dimids);
      if (nrc != NC_NOERR || nd != zv->z.ndim) {
        rc = ferry__seterr(err, FERRY_EIO,
                           "store %s, array %s: netCDF-C does not see it as "
                           "the .zarray describes it on rank %d: %s",
                           store, mv->name, io->rank,
                           nrc ? nc_strerror(nrc) : "other dimensions");
        break;
      }
      for (int d = 0; d < nd && rc == 0; d++) {
        size_t len = 0;
        if (nc_inq_dimlen(zv->gid, dimids[d], &len) != NC_NOERR ||
            (int64_t)len != zv->z.shape[d])
          rc = ferry__seterr(err, FERRY_EIO,
                             "store %s, array %s: netCDF-C gives dimension "
                             "%d another length than .zarray (rank %d)",
                             store, mv->name, d, io->rank);
      }
      /* The codec chain netCDF-C will apply must be the whole chain, or it
       * would hand out undecoded bytes (netCDF-C before 4.9 did). */
      unsigned ids[Z_MAX_CODECS];
      int missing = 0;
      nrc = nc_inq_var_filter_ids(zv->gid, zv->varid, &nf, NULL);
      if (nrc == NC_NOERR && nf <= Z_MAX_CODECS)
        nrc = nc_inq_var_filter_ids(zv->gid, zv->varid, &nf, ids);
      /* netCDF-C 4.9.0 lists a codec whose plugin it did not find as an
       * "incomplete" filter and fails only when a chunk is read. */
      for (size_t f = 0; nrc == NC_NOERR && f < nf && f < Z_MAX_CODECS; f++)
        missing += nc_inq_filter_avail(zv->gid, ids[f]) != NC_NOERR;
      if (rc == 0 &&
          (nrc != NC_NOERR || (int)nf != zv->z.ncodecs || missing))
        rc = ferry__seterr(err, FERRY_ENOTSUP,
                           "store %s, array %s: netCDF-C can apply %zu of its "
                           "%d codecs (%s) on rank %d: it did not load "
                           "ferry's codec plugins from '%s' (set "
                           "FERRY_PLUGIN_DIR to the directory holding "
                           "lib__nczferry_*.so, or zarr_reader=native)",
                           store, mv->name, nrc == NC_NOERR ? nf - (size_t)missing : 0,
                           zv->z.ncodecs, zv->z.codecs_text, io->rank,
                           plugin_dir);
      /* A bounded chunk cache: two bands of chunks, so an extent that
       * shares a storage chunk with the previous one does not decode it
       * again.  describe() counted the same size in cache_bytes. */
      if (rc == 0) {
        size_t bytes = zv->z.chunk_bytes * (size_t)zv->z.across * 2;
        size_t nelems = (size_t)zv->z.across * 2 + 1;
        nrc = nc_set_var_chunk_cache(zv->gid, zv->varid, bytes, nelems, 1.0f);
        if (nrc != NC_NOERR)
          rc = ferry__seterr(err, FERRY_EIO,
                             "store %s, array %s: nc_set_var_chunk_cache "
                             "failed on rank %d: %s",
                             store, mv->name, io->rank, nc_strerror(nrc));
      }
    }
    pthread_mutex_unlock(&nc_mutex);
  }
  free(url);
#else
  if (rc == 0 && reader == ZREC_NETCDF)
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "%s: this ferry's netCDF-C has no NCZarr (rank %d)",
                       spec, io->rank);
#endif
  free(store);
  if (rc < 0) {
    part_close(io, p);
    return rc;
  }
  *out = p;
  return 0;
}

static int acquire(ferry__io *io, int64_t part, zpart **out, ferry__err *err) {
  for (size_t i = 0; i < io->nparts; i++)
    if (io->parts[i]->part == part) {
      io->parts[i]->last_use = ++io->clock;
      *out = io->parts[i];
      return 0;
    }
  while (io->nparts >= io->max_open && io->nparts > 0) {
    size_t victim = 0;
    for (size_t i = 1; i < io->nparts; i++)
      if (io->parts[i]->last_use < io->parts[victim]->last_use)
        victim = i;
    part_close(io, io->parts[victim]);
    io->parts[victim] = io->parts[--io->nparts];
  }
  if (io->nparts == io->cap) {
    size_t ncap = io->cap ? 2 * io->cap : 8;
    zpart **np = realloc(io->parts, ncap * sizeof *np);
    if (!np)
      return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                           io->rank);
    io->parts = np;
    io->cap = ncap;
  }
  zpart *p = NULL;
  int rc = part_open(io, part, &p, err);
  if (rc < 0)
    return rc;
  p->last_use = ++io->clock;
  io->parts[io->nparts++] = p;
  *out = p;
  return 0;
}

/* pread exactly n bytes at off; 0, or -1 with *got the bytes read. */
static int pread_exact(int fd, void *buf, size_t n, off_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    done += (size_t)r;
  }
  return 0;
}

/* Check chunk file p before a read: 1 present, 0 absent (fill value),
 * or an error. */
static int check_chunk(const zvar *zv, const char *p, const char *store,
                       const char *vname, int rank, int64_t row,
                       ferry__err *err, off_t *size) {
  struct stat st;
  if (stat(p, &st) != 0) {
    if (errno != ENOENT)
      return ferry__seterr(err, ferry__errno_code(errno),
                           "chunk file %s (store %s, array %s, rank %d, row "
                           "%lld): %s",
                           p, store, vname, rank, (long long)row,
                           strerror(errno));
    if (!zv->z.has_fill)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "chunk file %s is missing and array %s has no "
                           "fill_value (zarr-python would return "
                           "uninitialised memory): store %s, rank %d, row "
                           "%lld",
                           p, vname, store, rank, (long long)row);
    return 0;
  }
  if (!zv->z.ncodecs && (size_t)st.st_size != zv->z.chunk_bytes)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s is %lld bytes, not the %zu of an "
                         "uncompressed chunk (truncated?): store %s, array "
                         "%s, rank %d, row %lld",
                         p, (long long)st.st_size, zv->z.chunk_bytes, store,
                         vname, rank, (long long)row);
  *size = st.st_size;
  return 1;
}

/* Read and decode the chunk idx into out (chunk_bytes, the fill value when
 * the file is absent), through the variable's reused buffers: a chunk file
 * is read into raw, each codec but the last decodes into mid or raw, the
 * last into out.  No allocation once the buffers exist.  On failure out
 * holds unspecified bytes that the caller must not serve. */
static int load_chunk(zvar *zv, const int64_t *idx, const char *store,
                      const char *vname, int rank, int64_t row,
                      unsigned char *out, ferry__err *err) {
  const zmeta *z = &zv->z;
  char *p = chunk_path(zv->adir, z, idx);
  int rc = 0, fd = -1;
  if (!p)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
  fd = open(p, O_RDONLY);
  if (fd < 0 && errno == ENOENT) {
    if (!z->has_fill) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s is missing and array %s has no "
                         "fill_value (zarr-python would return "
                         "uninitialised memory): store %s, rank %d, row "
                         "%lld",
                         p, vname, store, rank, (long long)row);
      goto cleanup;
    }
    for (size_t i = 0; i < z->chunk_bytes; i += z->itemsize)
      memcpy(out + i, z->fill, z->itemsize);
    goto cleanup;
  }
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno),
                       "chunk file %s (store %s, array %s, rank %d, row "
                       "%lld): %s",
                       p, store, vname, rank, (long long)row,
                       strerror(errno));
    goto cleanup;
  }
  size_t size = (size_t)st.st_size;
  if (!z->ncodecs ? size != z->chunk_bytes
                  : size > stored_bound(z->chunk_bytes)) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       !z->ncodecs
                           ? "chunk file %s is %lld bytes, not the %zu of an "
                             "uncompressed chunk (truncated?): store %s, "
                             "array %s, rank %d, row %lld"
                           : "chunk file %s is %lld bytes, more than any "
                             "codec stores for a chunk of %zu bytes "
                             "(corrupt?): store %s, array %s, rank %d, row "
                             "%lld",
                       p, (long long)st.st_size, z->chunk_bytes, store, vname,
                       rank, (long long)row);
    goto cleanup;
  }
  if (z->ncodecs && !zv->raw &&
      !(zv->raw = malloc(stored_bound(z->chunk_bytes)))) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
    goto cleanup;
  }
  if (z->ncodecs > 1 && !zv->mid && !(zv->mid = malloc(z->chunk_bytes))) {
    rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d", rank);
    goto cleanup;
  }
  errno = 0;
  if (pread_exact(fd, z->ncodecs ? zv->raw : out, size, 0) < 0) {
    rc = ferry__seterr(err, FERRY_EIO,
                       "cannot read chunk file %s (store %s, array %s, rank "
                       "%d, row %lld): %s",
                       p, store, vname, rank, (long long)row,
                       errno ? strerror(errno) : "shorter than it was");
    goto cleanup;
  }
  /* Codecs in decode order: compressor first.  Every stage decodes to
   * chunk_bytes (the only filter ferry knows, shuffle, keeps the size). */
  unsigned char *src = zv->raw;
  for (int c = z->ncodecs - 1; c >= 0; c--) {
    unsigned char *dst = c == 0 ? out : src == zv->raw ? zv->mid : zv->raw;
    const char *why = NULL;
    if (ferry__codec_decode_into(z->codec[c], z->param[c], src, size, dst,
                                 z->chunk_bytes, &why) < 0) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "chunk file %s cannot be decoded with %s: %s (store "
                         "%s, array %s, rank %d, row %lld)",
                         p, ferry__codec_name(z->codec[c]), why, store, vname,
                         rank, (long long)row);
      goto cleanup;
    }
    src = dst;
    size = z->chunk_bytes;
  }
cleanup:
  if (fd >= 0)
    close(fd);
  free(p);
  return rc;
}

/* Copy the part of chunk (decoded, idx) that lies in band rows into band
 * (c0 full rows, row-major).  Recursive over dimensions 1..ndim-1. */
static void place(const zmeta *z, const unsigned char *chunk,
                  unsigned char *band, const int64_t *idx, int d,
                  size_t coff, size_t boff) {
  size_t isz = z->itemsize;
  int64_t start = idx[d] * z->chunks[d];
  int64_t n = z->shape[d] - start < z->chunks[d] ? z->shape[d] - start
                                                 : z->chunks[d];
  /* strides in elements of dimension d for the chunk and the band */
  size_t cstride = 1, bstride = 1;
  for (int k = d + 1; k < z->ndim; k++) {
    cstride *= (size_t)z->chunks[k];
    bstride *= (size_t)z->shape[k];
  }
  if (d == z->ndim - 1) {
    memcpy(band + (boff + (size_t)start) * isz, chunk + coff * isz,
           (size_t)n * isz);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    place(z, chunk, band, idx, d + 1, coff + (size_t)i * cstride,
          boff + (size_t)(start + i) * bstride);
}

/* Native reader: rows [row, row+nrows) of one variable.  A chunk of rows
 * that the read covers whole is decoded (or, uncompressed, read) straight
 * into buf; any other chunk goes through the band, which then serves the
 * following reads of the same rows. */
static int native_read(zvar *zv, const char *store, const char *vname,
                       int rank, int64_t row, int64_t nrows, size_t row_bytes,
                       unsigned char *buf, ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t c0 = z->chunks[0];
  int rows_layout = chunk_is_rows(z);
  int rc = 0;
  for (int64_t r = row; r < row + nrows && rc == 0;) {
    int64_t ci = r / c0, bstart = ci * c0;
    int64_t bend = bstart + c0 < row + nrows ? bstart + c0 : row + nrows;
    int64_t take = bend - r;
    unsigned char *dst = buf + (size_t)(r - row) * row_bytes;
    if (zv->band == ci) {
      memcpy(dst, zv->band_buf + (size_t)(r - bstart) * row_bytes,
             (size_t)take * row_bytes);
      r = bend;
      continue;
    }
    int64_t idx[Z_MAX_DIMS] = {0};
    idx[0] = ci;
    if (rows_layout && r == bstart && take == c0) {
      /* The read covers the whole chunk: decode it into its rows. */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, dst, err)) < 0)
        return rc;
      r = bend;
      continue;
    }
    if (!z->ncodecs && rows_layout) {
      /* Part of an uncompressed chunk: pread just those rows. */
      char *p = chunk_path(zv->adir, z, idx);
      off_t size = 0;
      if (!p)
        return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                             rank);
      int present = check_chunk(zv, p, store, vname, rank, r, err, &size);
      if (present < 0) {
        free(p);
        return present;
      }
      if (!present) {
        for (size_t i = 0; i < (size_t)take * row_bytes; i += z->itemsize)
          memcpy(dst + i, z->fill, z->itemsize);
      } else {
        int fd = open(p, O_RDONLY);
        if (fd < 0 || pread_exact(fd, dst, (size_t)take * row_bytes,
                                  (off_t)((size_t)(r - bstart) * row_bytes)) <
                          0)
          rc = ferry__seterr(err, FERRY_EIO,
                             "short read of chunk file %s (store %s, array "
                             "%s, rank %d, row %lld): %s",
                             p, store, vname, rank, (long long)r,
                             strerror(errno));
        if (fd >= 0)
          close(fd);
      }
      free(p);
      r = bend;
      continue;
    }
    /* Decode the band of chunks holding rows [bstart, bstart+c0). */
    zv->band = -1;
    if (!zv->band_buf &&
        !(zv->band_buf = malloc((size_t)c0 * row_bytes + 1)))
      return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                           rank);
    if (rows_layout) {
      /* One chunk, laid out as the band's rows (the last chunk may
       * reach past the array's end: chunk_bytes is c0 rows). */
      if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->band_buf,
                           err)) < 0)
        return rc;
    } else {
      if (!zv->chunk_buf && !(zv->chunk_buf = malloc(z->chunk_bytes)))
        return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                             rank);
      for (int64_t a = 0; a < z->across; a++) {
        int64_t rest = a;
        for (int d = z->ndim - 1; d >= 1; d--) {
          int64_t nd = (z->shape[d] + z->chunks[d] - 1) / z->chunks[d];
          idx[d] = rest % nd;
          rest /= nd;
        }
        if ((rc = load_chunk(zv, idx, store, vname, rank, r, zv->chunk_buf,
                             err)) < 0)
          return rc;
        /* Rows of the band, each placed across dimensions 1.. */
        size_t crow = z->chunk_bytes / (size_t)c0 / z->itemsize;
        size_t brow = row_bytes / z->itemsize;
        for (int64_t i = 0; i < c0 && bstart + i < z->shape[0]; i++)
          place(z, zv->chunk_buf, zv->band_buf, idx, 1, (size_t)i * crow,
                (size_t)i * brow);
      }
    }
    zv->band = ci;
    memcpy(dst, zv->band_buf + (size_t)(r - bstart) * row_bytes,
           (size_t)take * row_bytes);
    r = bend;
  }
  return rc;
}

#ifdef HAVE_NCZARR
/* netCDF reader: check the chunk files the read touches, then one
 * nc_get_vara in stored byte order. */
static int netcdf_read(zpart *p, zvar *zv, const char *store,
                       const char *vname, int rank, int64_t row,
                       int64_t nrows, size_t row_bytes, void *buf,
                       ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t idx[Z_MAX_DIMS] = {0};
  for (int64_t ci = row / z->chunks[0]; ci * z->chunks[0] < row + nrows;
       ci++) {
    idx[0] = ci;
    for (int64_t a = 0; a < z->across; a++) {
      int64_t rest = a;
      for (int d = z->ndim - 1; d >= 1; d--) {
        int64_t nd = (z->shape[d] + z->chunks[d] - 1) / z->chunks[d];
        idx[d] = rest % nd;
        rest /= nd;
      }
      char *cp = chunk_path(zv->adir, z, idx);
      off_t size = 0;
      if (!cp)
        return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                             rank);
      int rc = check_chunk(zv, cp, store, vname, rank,
                           ci * z->chunks[0] > row ? ci * z->chunks[0] : row,
                           err, &size);
      free(cp);
      if (rc < 0)
        return rc;
    }
  }
  size_t start[Z_MAX_DIMS] = {0}, count[Z_MAX_DIMS];
  start[0] = (size_t)row;
  count[0] = (size_t)nrows;
  for (int d = 1; d < z->ndim; d++)
    count[d] = (size_t)z->shape[d];
  pthread_mutex_lock(&nc_mutex);
  int nrc = nc_get_vara(zv->gid, zv->varid, start, count, buf);
  pthread_mutex_unlock(&nc_mutex);
  (void)p;
  /* netCDF-C does not say which chunk failed: decode the same rows with
   * ferry's own reader, whose error names the chunk file.  The buffer's
   * contents do not matter any more: the read fails either way. */
  if (nrc != NC_NOERR &&
      native_read(zv, store, vname, rank, row, nrows, row_bytes, buf, err) <
          0)
    return err ? err->code : FERRY_EIO;
  if (nrc != NC_NOERR)
    return ferry__seterr(err, nrc == NC_EFILTER ? FERRY_EFORMAT : FERRY_EIO,
                         "nc_get_vara failed: store %s, array %s, rank %d, "
                         "rows [%lld, %lld): %s%s",
                         store, vname, rank, (long long)row,
                         (long long)(row + nrows), nc_strerror(nrc),
                         nrc == NC_EFILTER ? " (a chunk is truncated or "
                                             "corrupt)"
                                           : "");
  return 0;
}
#endif

static void z_io_close(ferry__io *io) {
  if (!io)
    return;
  for (size_t i = 0; i < io->nparts; i++)
    part_close(io, io->parts[i]);
  free(io->parts);
  free(io);
}

static int z_io_open(ferry__io **out, const ferry__manifest *m,
                     const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  if (p->collective)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "the zarr backend has no collective reads (rank %d)",
                         p->rank);
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                         p->rank);
  io->m = m;
  io->rank = p->rank;
  io->max_open =
      p->max_open_files > 0 ? (size_t)p->max_open_files : Z_DEFAULT_OPEN;
  *out = io;
  return 0;
}

static int z_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                     int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->m;
  int rc = ferry__check_part_var(m, part, var, io->rank, err);
  if (rc)
    return rc;
  const ferry__part *pt = &m->parts[part];
  const ferry__var *v = &m->vars[var];
  if ((rc = ferry__check_rows(m, part, var, row, nrows, io->rank, err)))
    return rc;
  if (nrows == 0)
    return 0;
  zpart *p = NULL;
  if ((rc = acquire(io, part, &p, err)) < 0)
    return rc;
  char *store = store_dir_of(pt->paths[var]);
  if (!store)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory on rank %d",
                         io->rank);
#ifdef HAVE_NCZARR
  if (p->ncid >= 0)
    rc = netcdf_read(p, &p->v[var], store, v->name, io->rank, row, nrows,
                     v->row_bytes, buf, err);
  else
#endif
    rc = native_read(&p->v[var], store, v->name, io->rank, row, nrows,
                     v->row_bytes, buf, err);
  free(store);
  return rc;
}

const ferry__backend ferry__backend_nczarr = {
    .name = "zarr",
    .version = 1,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = ZREC_VERSION,
    .probe = z_probe,
    .describe = z_describe,
    .io_open = z_io_open,
    .io_read = z_io_read,
    .io_close = z_io_close,
};
