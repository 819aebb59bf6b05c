/*
 * v3.c - the zarr backend's Zarr v3 metadata: a zarr.json's data_type,
 * chunk grid and key encoding, fill value and codec chain (bytes,
 * transpose, compressors, crc32c, sharding_indexed) parsed into the same
 * zmeta as a v2 .zarray, everything ferry cannot serve refused with
 * FERRY_ENOTSUP naming the array and the reason.  Rank 0 (and the open
 * check of every rank), like meta.c.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/meta.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A v3 data_type name -> dtype and itemsize; 0, or -1 with why.  The
 * variable-length types of zarr-python 3 ("string": UTF-8 text,
 * "variable_length_bytes" or "bytes") are ragged uint8 arrays: z->vlen
 * -1 until their vlen codec is found. */
static int v3_dtype(const char *s, zmeta *z, const char **why) {
  if (!strcmp(s, "string") || !strcmp(s, "bytes") ||
      !strcmp(s, "variable_length_bytes")) {
    z->dtype = FERRY_UINT8;
    z->itemsize = 1;
    z->vlen = -1;
    return 0;
  }
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
  *swapped = itemsize > 1 && ((s[0] == 'l') != ferry__zarr_host_is_little());
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

/* vlen-utf8, vlen-bytes (zarr-python 3's array-to-bytes codecs of its
 * variable-length types; the numcodecs framing of Zarr v2: a u32 count,
 * then a u32 length and the bytes of each item). */
static int is_vlen_codec(const char *name) {
  return !strcmp(name, "vlen-utf8") || !strcmp(name, "vlen-bytes") ||
         !strcmp(name, "numcodecs.vlen-utf8") ||
         !strcmp(name, "numcodecs.vlen-bytes");
}

static int v3_vlen(const char *name, const char *label, zmeta *z,
                   ferry__err *err) {
  if (z->vlen != -1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: codec '%s' on a data_type that is not "
                         "variable-length (string, bytes)",
                         label, name);
  z->vlen = 1;
  size_t used = strlen(z->codecs_text);
  snprintf(z->codecs_text + used, sizeof z->codecs_text - used, "%s%s",
           used ? " + " : "", name);
  return 0;
}

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
    else if (is_vlen_codec(name) && !seen_bytes) {
      seen_bytes = 1;
      rc = v3_vlen(name, label, z, err);
    } else if (strcmp(name, "bytes") == 0 && !seen_bytes) {
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
    if (ferry__zarr_mul_overflows(z->n_inner, z->per_shard[d], &z->n_inner))
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
      int shift = (int)(8 * (ferry__zarr_host_is_little() != z->swapped
                                 ? i
                                 : z->itemsize - 1 - i));
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
  return ferry__zarr_parse_fill(jf, z);
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

/* A variable-length array, its codecs parsed: one dimension, its vlen
 * codec found, a fill_value of the empty item (a chunk zarr-python did not
 * write, all its items empty, is read as such). */
static int v3_vlen_check(json_t *fill, const char *label, zmeta *z,
                         ferry__err *err) {
  if (z->vlen == -1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a variable-length data_type without a "
                         "vlen-utf8 or vlen-bytes codec, which ferry cannot "
                         "read",
                         label);
  if (z->ndim != 1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "array %s: a variable-length array of more than "
                         "one dimension, which ferry cannot read",
                         label);
  if (!fill || !((json_is_string(fill) && !json_string_length(fill)) ||
                 (json_is_array(fill) && !json_array_size(fill))))
    return ferry__seterr(err, fill ? FERRY_ENOTSUP : FERRY_EFORMAT,
                         fill ? "array %s: a variable-length array whose "
                                "fill_value is not empty, which ferry "
                                "cannot read"
                              : "array %s: corrupt metadata: no fill_value",
                         label);
  z->has_fill = 1; /* an absent chunk: empty items */
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
  if (z->vlen)
    rc = v3_vlen_check(fill, label, z, err);
  else if (!fill || v3_fill(fill, z) < 0)
    rc = ferry__seterr(err, fill ? FERRY_ENOTSUP : FERRY_EFORMAT,
                       fill ? "array %s: fill_value cannot be represented "
                              "in its data_type by ferry"
                            : "array %s: corrupt metadata: no fill_value",
                       label);
  if (rc < 0 || (rc = ferry__zarr_derive_sizes(path, z, err)) < 0)
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
  json_t *j = ferry__zarr_json_text(text, len, path, err);
  if (!j)
    return err ? err->code : FERRY_EFORMAT;
  int rc = ferry__zarr_parse_v3(j, path, label, z, err);
  json_decref(j);
  return rc;
}
