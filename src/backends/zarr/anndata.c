/*
 * zarr/anndata.c - AnnData Zarr stores (issue 27, docs/singlecell.md): the
 * answers the AnnData interpreter (backends/anndata.c) asks of a store --
 * a group's or array's attributes (.zattrs in v2, zarr.json's attributes
 * in v3), an integer array read whole (a CSR matrix's indptr), the strings
 * of a string array (categories, the genes' names) -- so that describe
 * (rank 0) serves cells as the .h5ad reader does.  Arrays are read with
 * the native reader (native.c, vlen.c), one lane, no pool.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/meta.h"
#include "util/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The integers of an indptr read at a time (8 MiB of int64). */
#define AD_BLOCK ((int64_t)1 << 20)
/* The largest attributes file read (a corrupt size is not slurped). */
#define AD_ATTRS_MAX ((off_t)1 << 24)

typedef struct zad_ctx {
  const char *store;
  const zarr_walk *w;
} zad_ctx;

/* The attributes of obj ("." the root) of store: a new reference, or
 * NULL (none, unreadable, not an object). */
static json_t *attributes(const char *store, const char *obj) {
  static const char *const files[] = {".zattrs", "zarr.json"};
  int root = !strcmp(obj, ".");
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(store) + strlen(obj) + 16;
    char *p = malloc(n);
    struct stat st;
    json_t *j = NULL;
    if (p) {
      snprintf(p, n, "%s%s%s/%s", store, root ? "" : "/", root ? "" : obj,
               files[i]);
      if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < AD_ATTRS_MAX)
        j = json_load_file(p, 0, NULL);
    }
    free(p);
    if (!j)
      continue;
    json_t *a = i == 1 ? json_object_get(j, "attributes") : j;
    if (json_is_object(a)) {
      json_incref(a);
      json_decref(j);
      return a;
    }
    json_decref(j);
  }
  return NULL;
}

static void ad_text(void *ctx, const char *obj, const char *name, char *buf,
                    size_t len) {
  json_t *a = attributes(((zad_ctx *)ctx)->store, obj);
  const char *s = json_string_value(json_object_get(a, name));
  snprintf(buf, len, "%s", s ? s : "");
  json_decref(a);
}

static int ad_ints(void *ctx, const char *obj, const char *name, int64_t *out,
                   int n) {
  json_t *a = attributes(((zad_ctx *)ctx)->store, obj);
  json_t *v = json_object_get(a, name);
  int rc = json_is_array(v) && json_array_size(v) == (size_t)n ? 0 : -1;
  for (int i = 0; rc == 0 && i < n; i++) {
    json_t *e = json_array_get(v, (size_t)i);
    if (json_is_integer(e))
      out[i] = (int64_t)json_integer_value(e);
    else
      rc = -1;
  }
  json_decref(a);
  return rc;
}

static int ad_exists(void *ctx, const char *obj) {
  zad_ctx *c = ctx;
  if (ferry__zarr_exists_in(c->store, obj, 1))
    return 1;
  for (int i = 0; i < c->w->n; i++) /* an array of the walk (consolidated) */
    if (c->w->a[i].name && !strcmp(c->w->a[i].name, obj))
      return 1;
  return 0;
}

static const zarr_array *array_of(const zad_ctx *c, const char *name) {
  for (int i = 0; i < c->w->n; i++)
    if (c->w->a[i].ok && c->w->a[i].name && !strcmp(c->w->a[i].name, name))
      return &c->w->a[i];
  return NULL;
}

/* A reader of array x of the store (native.c), for describe: one lane. */
static int reader_open(const zad_ctx *c, const zarr_array *x, zdecode *d,
                       zvar *zv, ferry__err *err) {
  memset(d, 0, sizeof *d);
  memset(zv, 0, sizeof *zv);
  d->nlanes = 1;
  zv->z = x->z;
  zv->band = -1;
  zv->shard_fd = -1;
  zv->dec = d;
  if (!(zv->adir = ferry__zarr_array_dir(c->store, x->name, 0)))
    return ferry__oom(err, -1, strlen(c->store) + strlen(x->name) + 2,
                      "the path of array %s of store %s", x->name, c->store);
  return 0;
}

static int ad_read_ints(void *ctx, const char *name, int64_t *out, int64_t n,
                        ferry__err *err) {
  zad_ctx *c = ctx;
  const zarr_array *x = array_of(c, name);
  if (!x || x->z.ndim != 1 || x->z.vlen || !ferry__dtype_is_int(x->z.dtype) ||
      x->z.itemsize > 8 || x->z.shape[0] != n)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "store %s: AnnData array /%s is not %lld integers "
                         "(variable /%s, offset 0)",
                         c->store, name, (long long)n, name);
  zdecode d;
  zvar zv;
  size_t el = x->z.itemsize;
  int rc = reader_open(c, x, &d, &zv, err);
  unsigned char *buf =
      rc ? NULL : malloc((size_t)(n < AD_BLOCK ? n : AD_BLOCK) * el + 1);
  if (rc == 0 && !buf)
    rc = ferry__oom(err, -1, (size_t)AD_BLOCK * el, "the indptr /%s of %s",
                    name, c->store);
  for (int64_t at = 0; rc == 0 && at < n; at += AD_BLOCK) {
    int64_t k = n - at < AD_BLOCK ? n - at : AD_BLOCK;
    rc = ferry__zarr_native_read(&zv, c->store, name, 0, at, k, el, buf, err);
    for (int64_t i = 0; rc == 0 && i < k; i++)
      if (ferry__dtype_as_int64_stored(buf + (size_t)i * el, x->z.dtype,
                                       x->z.swapped, &out[at + i]) != 0)
        rc = ferry__seterr(err, FERRY_EFORMAT,
                           "store %s: AnnData array /%s: entry %lld is past "
                           "int64 (variable /%s, offset %lld)",
                           c->store, name, (long long)(at + i), name,
                           (long long)(at + i) * (long long)el);
  }
  free(buf);
  ferry__zarr_var_free(&zv);
  return rc;
}

static char *ad_names(void *ctx, const char *name) {
  zad_ctx *c = ctx;
  const zarr_array *x = array_of(c, name);
  if (!x || x->z.ndim != 1 || x->z.vlen != 1 || x->z.shape[0] <= 0 ||
      x->z.shape[0] > FERRY__AD_NAMES_MAX)
    return NULL;
  int64_t n = x->z.shape[0], *roff = NULL;
  zdecode d;
  zvar zv;
  ferry__err e;
  memset(&e, 0, sizeof e);
  char *out = NULL, *buf = NULL;
  const char **s = NULL;
  size_t *lens = NULL;
  if (reader_open(c, x, &d, &zv, &e) == 0 &&
      ferry__zarr_vlen_offsets(zv.adir, &x->z, n, &roff, &e) == 0 &&
      roff[n] >= 0 && (size_t)roff[n] <= FERRY__AD_NAMES_BYTES &&
      (buf = malloc((size_t)roff[n] + 1)) &&
      (s = malloc((size_t)n * sizeof *s)) &&
      (lens = malloc((size_t)n * sizeof *lens)) &&
      ferry__zarr_vlen_read(&zv, c->store, name, 0, 0, n, 1, roff,
                            (unsigned char *)buf, &e) == 0) {
    for (int64_t i = 0; i < n; i++) {
      s[i] = buf + roff[i];
      lens[i] = (size_t)(roff[i + 1] - roff[i]);
    }
    out = ferry__anndata_join(s, lens, n);
  }
  free(lens);
  free(s);
  free(buf);
  free(roff);
  ferry__zarr_var_free(&zv);
  return out;
}

int ferry__zarr_anndata(const char *store, const zarr_walk *w,
                        ferry__ad_array **out, int64_t *n_obs,
                        ferry__err *err) {
  zad_ctx c = {store, w};
  const ferry__ad_ops ops = {&c,        ad_text,      ad_ints,
                             ad_exists, ad_read_ints, ad_names};
  ferry__ad_array *a = calloc((size_t)w->n + 1, sizeof *a);
  *out = NULL;
  if (!a)
    return ferry__oom(err, -1, ((size_t)w->n + 1) * sizeof *a,
                      "the arrays of store %s", store);
  for (int i = 0; i < w->n; i++) {
    const zarr_array *x = &w->a[i];
    a[i].name = x->name ? x->name : "";
    a[i].ndims = x->ok ? x->z.ndim : -1;
    a[i].dims0 = x->ok && x->z.ndim >= 1 ? x->z.shape[0] : 0;
    a[i].is_string = x->ok && x->z.vlen == 1;
    a[i].unreadable = !x->ok;
  }
  int rc = ferry__anndata_prepare(&ops, store, a, w->n, n_obs, err);
  if (rc <= 0) {
    ferry__zarr_anndata_free(a, w->n);
    return rc;
  }
  *out = a;
  return 1;
}

void ferry__zarr_anndata_free(ferry__ad_array *a, int n) {
  for (int i = 0; a && i < n; i++) {
    free(a[i].roff);
    free(a[i].cats);
  }
  free(a);
}
