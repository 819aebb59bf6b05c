/*
 * hdf5_describe.c - the HDF5 backend's describe (rank 0, a serial H5Fopen
 * under the library lock: a local section): visit the file's links from
 * the root group, judge each dataset's type (ferry_dtype_of an HDF5 type),
 * filters and layout, keep as variables the datasets of the longest first
 * dimension (the netCDF-4 dimension-only datasets skipped), and fill each
 * variable's storage fields and ferry info's description.  The reads and
 * the vtable are hdf5.c; hdf5.h holds what the two share.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/anndata.h"
#include "backends/hdf5.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A 2-member enum of 1 byte, FALSE = 0 and TRUE = 1: h5py's bool. */
static int is_h5py_bool(hid_t t) {
  int ok = 0;
  if (H5Tget_class(t) != H5T_ENUM || H5Tget_size(t) != 1 ||
      H5Tget_nmembers(t) != 2)
    return 0;
  for (unsigned i = 0; i < 2; i++) {
    char *name = H5Tget_member_name(t, i);
    signed char v = -1;
    if (name && H5Tget_member_value(t, i, &v) >= 0)
      ok += (v == 0 && strcmp(name, "FALSE") == 0) ||
            (v == 1 && strcmp(name, "TRUE") == 0);
    H5free_memory(name);
  }
  return ok == 2;
}

/* An IEEE half: 1 sign, 5 exponent, 10 mantissa bits. */
static int is_ieee_half(hid_t t) {
  size_t spos, epos, esize, mpos, msize;
  if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0)
    return 0;
  return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 &&
         H5Tget_ebias(t) == 15;
}

/* ferry dtype of an HDF5 file type; 0, or -1 with why set. */
static int dtype_of(hid_t t, ferry_dtype *out, const char **why) {
  size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
  case H5T_INTEGER: {
    int sgn = H5Tget_sign(t) == H5T_SGN_2;
    switch (size) {
    case 1: *out = sgn ? FERRY_INT8 : FERRY_UINT8; return 0;
    case 2: *out = sgn ? FERRY_INT16 : FERRY_UINT16; return 0;
    case 4: *out = sgn ? FERRY_INT32 : FERRY_UINT32; return 0;
    case 8: *out = sgn ? FERRY_INT64 : FERRY_UINT64; return 0;
    default: *why = "an integer of unusual width"; return -1;
    }
  }
  case H5T_FLOAT:
    if (size == 4) {
      *out = FERRY_FLOAT32;
      return 0;
    }
    if (size == 8) {
      *out = FERRY_FLOAT64;
      return 0;
    }
    if (size == 2 && is_ieee_half(t)) {
      *out = FERRY_FLOAT16;
      return 0;
    }
    *why = "a floating-point type other than IEEE float16/32/64";
    return -1;
  case H5T_ENUM:
    if (is_h5py_bool(t)) {
      *out = FERRY_BOOL;
      return 0;
    }
    *why = "an enum type (only h5py's bool enum is read)";
    return -1;
  case H5T_COMPOUND: *why = "a compound type"; return -1;
  case H5T_STRING: *why = "a fixed-length string type"; return -1;
  case H5T_VLEN:
    *why = "a variable-length type of a non-numeric base";
    return -1;
  case H5T_REFERENCE: *why = "a reference type"; return -1;
  case H5T_ARRAY: *why = "an array type"; return -1;
  case H5T_OPAQUE: *why = "an opaque type"; return -1;
  case H5T_BITFIELD: *why = "a bitfield type"; return -1;
  default: *why = "an unknown type"; return -1;
  }
}
/* ---- Describe (rank 0) ------------------------------------------------ */

typedef struct h5_dset {
  char *name; /* path without the leading '/' */
  int ndims;
  hsize_t dims[H5S_MAX_RANK];
  ferry_dtype dtype;
  int vlen;         /* ferry__h5_vlen_kind: a ragged variable when > 0 */
  const char *why;  /* unsupported type: why, else NULL */
  int dim_only;     /* a netCDF-4 dimension, not a variable */
  char filter[128]; /* missing filter plugin, else ""  */
  int chunked;
  hsize_t chunk[H5S_MAX_RANK]; /* storage chunk shape when chunked */
  int nfilters;
  char filters[192]; /* "shuffle+gzip(1)", "" when none */
  hsize_t stored;    /* bytes on disk (H5Dget_storage_size) */
  /* AnnData (anndata_prepare): the indices or data of a CSR matrix, a
   * ragged variable whose offsets are the matrix's indptr (roff, malloc'd
   * [dims[0] + 1], dims[0] set to the cells), its values the dataset's
   * elements */
  int csr;
  int64_t *roff;
  int64_t width; /* the matrix's columns (its shape's second) */
  int ad_why;    /* why is AnnData's meaning, not an unreadable type */
  char *cats;    /* a categorical column's codes: its categories' names,
                  * '\n'-joined (malloc'd) */
} h5_dset;

typedef struct h5_visit {
  h5_dset *v;
  int n, cap;
  size_t oom; /* the bytes that could not be had; 0: none */
} h5_visit;

/* netCDF-4 stores a dimension without a coordinate variable as an empty
 * dimension-scale dataset whose NAME attribute starts with this text; it is
 * not data and must not become a variable. */
#define NC_DIM_ONLY "This is a netCDF dimension but not a netCDF variable"

/* Attribute `name` of object `obj` of f as text into buf[len] ("" when it
 * is absent or not a string). */
static void attr_text(hid_t f, const char *obj, const char *name, char *buf,
                      size_t len) {
  buf[0] = '\0';
  if ((strcmp(obj, ".") != 0 && H5Lexists(f, obj, H5P_DEFAULT) <= 0) ||
      H5Aexists_by_name(f, obj, name, H5P_DEFAULT) <= 0)
    return;
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  hid_t t = a >= 0 ? H5Aget_type(a) : -1, mt = -1;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
    if (H5Tis_variable_str(t) > 0) {
      char *v = NULL;
      /* the file's character set (h5py writes UTF-8): HDF5 converts no
       * variable-length string between ASCII and UTF-8 */
      if ((mt = H5Tcopy(H5T_C_S1)) >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 &&
          H5Tset_cset(mt, H5Tget_cset(t)) >= 0 && H5Aread(a, mt, &v) >= 0 && v)
        snprintf(buf, len, "%s", v);
      if (v)
        H5free_memory(v);
    } else {
      size_t n = H5Tget_size(t);
      char *v = n > 0 && n < 4096 ? calloc(1, n + 1) : NULL;
      if (v && (mt = H5Tcopy(t)) >= 0 && H5Aread(a, mt, v) >= 0)
        snprintf(buf, len, "%s", v);
      free(v);
    }
  }
  if (mt >= 0)
    H5Tclose(mt);
  if (t >= 0)
    H5Tclose(t);
  if (a >= 0)
    H5Aclose(a);
}

static int is_nc_dim_only(hid_t d) {
  char name[128];
  attr_text(d, ".", "NAME", name, sizeof name);
  return strncmp(name, NC_DIM_ONLY, strlen(NC_DIM_ONLY)) == 0;
}

/* Inspect one dataset: shape, type, filters. */
static void inspect(hid_t d, h5_dset *out) {
  hid_t s = H5Dget_space(d), t = H5Dget_type(d), pl = H5Dget_create_plist(d);
  out->dim_only = is_nc_dim_only(d);
  out->ndims = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
  if (out->ndims > H5S_MAX_RANK || out->ndims < 0 ||
      H5Sget_simple_extent_dims(s, out->dims, NULL) < 0)
    out->ndims = -1;
  out->vlen = t >= 0 ? ferry__h5_vlen_kind(t) : 0;
  if (out->vlen == 2) {
    out->dtype = FERRY_UINT8; /* a string's bytes */
  } else if (out->vlen == 1) {
    hid_t base = H5Tget_super(t);
    if (base < 0 || dtype_of(base, &out->dtype, &out->why) < 0)
      out->why = out->why ? out->why : "a variable-length type of no base";
    else if (out->dtype == FERRY_FLOAT16 || out->dtype == FERRY_BOOL)
      out->why = "a variable-length type of float16 or bool";
    if (base >= 0)
      H5Tclose(base);
  } else if (t < 0 || dtype_of(t, &out->dtype, &out->why) < 0) {
    out->why = out->why ? out->why : "an unreadable type";
  }
  if (out->vlen && !out->why && out->ndims != 1)
    out->why = "a variable-length type in more than one dimension";
  out->chunked = pl >= 0 && H5Pget_layout(pl) == H5D_CHUNKED &&
                 out->ndims >= 1 &&
                 H5Pget_chunk(pl, H5S_MAX_RANK, out->chunk) == out->ndims;
  out->stored = H5Dget_storage_size(d);
  int nf = pl >= 0 ? H5Pget_nfilters(pl) : 0;
  out->nfilters = nf > 0 ? nf : 0;
  for (int i = 0; i < nf; i++) {
    unsigned flags = 0, cd[16];
    size_t ncd = 16, len = strlen(out->filters);
    char fname[64] = "";
    H5Z_filter_t id = H5Pget_filter2(pl, (unsigned)i, &flags, &ncd, cd,
                                     sizeof fname, fname, NULL);
    if (!out->filter[0] && (id < 0 || H5Zfilter_avail(id) <= 0))
      snprintf(out->filter, sizeof out->filter, "%d%s%s%s", (int)id,
               fname[0] ? " (" : "", fname, fname[0] ? ")" : "");
    const char *sep = len ? "+" : "";
    char *at = out->filters + len;
    size_t room = sizeof out->filters - len;
    if (id == H5Z_FILTER_DEFLATE && ncd >= 1)
      snprintf(at, room, "%sgzip(%u)", sep, cd[0]);
    else if (id == H5Z_FILTER_SHUFFLE)
      snprintf(at, room, "%sshuffle", sep);
    else if (id == H5Z_FILTER_FLETCHER32)
      snprintf(at, room, "%sfletcher32", sep);
    else
      snprintf(at, room, "%sfilter %d%s%s%s", sep, (int)id,
               fname[0] ? " (" : "", fname, fname[0] ? ")" : "");
  }
  if (pl >= 0)
    H5Pclose(pl);
  if (t >= 0)
    H5Tclose(t);
  if (s >= 0)
    H5Sclose(s);
}

#if H5_VERSION_GE(1, 12, 0)
typedef H5L_info2_t h5_link_info;
#else
typedef H5L_info_t h5_link_info;
#endif

static herr_t visit_cb(hid_t g, const char *name, const h5_link_info *info,
                       void *data) {
  h5_visit *vis = data;
  if (info->type != H5L_TYPE_HARD)
    return 0;
  hid_t o = H5Oopen(g, name, H5P_DEFAULT);
  if (o < 0)
    return 0;
  if (H5Iget_type(o) == H5I_DATASET) {
    if (vis->n == vis->cap) {
      int ncap = vis->cap ? 2 * vis->cap : 16;
      h5_dset *nv = realloc(vis->v, (size_t)ncap * sizeof *nv);
      if (!nv) {
        vis->oom = (size_t)ncap * sizeof *nv;
        H5Oclose(o);
        return 1;
      }
      vis->v = nv;
      vis->cap = ncap;
    }
    h5_dset *ds = &vis->v[vis->n];
    memset(ds, 0, sizeof *ds);
    if (!(ds->name = strdup(name))) {
      vis->oom = strlen(name) + 1;
      H5Oclose(o);
      return 1;
    }
    vis->n++;
    inspect(o, ds);
  }
  H5Oclose(o);
  return 0;
}

/* Storage chunks a filtered dataset's cache holds: a read that ends inside
 * a storage chunk and the next read that starts in it decode it once, and
 * a plan chunk aligned on storage chunks (the auto rule) never needs more
 * than one. */
#define H5_CACHE_CHUNKS 4

/* Fill v's storage fields from ds: the chunk rows the plan aligns on, the
 * decode cache (none when unfiltered: see open_dataset), and ferry info's
 * description.  Returns 0, or the bytes it could not have (out of memory). */
static size_t layout(const h5_dset *ds, ferry__var *v, const char *path) {
  char buf[320];
  (void)path;
  v->chunk_rows = ds->chunked ? (int64_t)ds->chunk[0] : 0;
  v->cache_bytes = 0;
  size_t chunk_bytes = ferry_dtype_size(v->dtype);
  size_t n = 0;
  if (ds->chunked) {
    n += (size_t)snprintf(buf, sizeof buf, "chunks (");
    for (int j = 0; j < ds->ndims && n < sizeof buf; j++) {
      chunk_bytes *= (size_t)ds->chunk[j];
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%llu", j ? ", " : "",
                            (unsigned long long)ds->chunk[j]);
    }
    if (n < sizeof buf)
      n += (size_t)snprintf(buf + n, sizeof buf - n, ")");
    if (ds->nfilters > 0)
      v->cache_bytes = H5_CACHE_CHUNKS * chunk_bytes;
  } else {
    n += (size_t)snprintf(buf, sizeof buf, "contiguous");
  }
  if (n < sizeof buf && ds->nfilters > 0) {
    double logical = (double)v->row_bytes * (double)ds->dims[0];
    n += (size_t)snprintf(buf + n, sizeof buf - n, ", %s", ds->filters);
    if (ds->stored > 0 && n < sizeof buf && !ds->vlen) /* vlen: the
                                              elements are in the heap */
      n += (size_t)snprintf(buf + n, sizeof buf - n, ", ratio %.2f:1",
                            logical / (double)ds->stored);
  }
  if (n < sizeof buf && ds->chunked &&
      chunk_bytes / ds->chunk[0] != (size_t)v->row_bytes)
    snprintf(buf + n, sizeof buf - n,
             "; chunked across rows too: a read "
             "of whole rows touches %llu chunks per row block",
             (unsigned long long)(v->row_bytes / (chunk_bytes / ds->chunk[0])));
  free(v->storage);
  return (v->storage = strdup(buf)) ? 0 : strlen(buf) + 1;
}

/* With vars, the sample dimension is the first named servable dataset's
 * first dimension (issue 11: a named dataset that is not the longest could
 * never be loaded); 0 when no named dataset can be served: the default
 * selection then stands, and the manifest's selection says which name is
 * not there and why (the notes). */
static hsize_t named_rows(const h5_visit *vis, const char *named) {
  size_t len;
  for (const char *p = named, *s; (s = ferry__next_name(&p, &len)) != NULL;)
    for (int i = 0; i < vis->n; i++) {
      const h5_dset *ds = &vis->v[i];
      if (strlen(ds->name) == len && strncmp(s, ds->name, len) == 0 &&
          !ds->dim_only && ds->ndims >= 1 && !ds->why)
        return ds->dims[0];
    }
  return 0;
}

/* The selection: the datasets named by vars (select, then validate: an
 * unnamed dataset never makes the open fail), or by default the datasets
 * along the longest first dimension
 * that ferry can read.  The others are marked (ndims -1) and listed with
 * the reason in out->notes, which ferry info prints and a `vars` naming a
 * skipped dataset gets in its error.  Returns the number chosen (> 0) or a
 * negative code. */
/* The other groups of datasets that could be served together (issue 11):
 * servable datasets not of the sample dimension, grouped by their first
 * dimension, as "; other selections: vars=a,b (300 rows); ...". */
static void h5_other_groups(const h5_visit *vis, hsize_t longest, char *buf,
                            size_t cap) {
  for (int i = 0; i < vis->n; i++) {
    const h5_dset *a = &vis->v[i];
    if (a->dim_only || a->ndims < 1 || a->why || a->dims[0] == longest)
      continue;
    int first = 1; /* the first dataset of its length: one group */
    for (int k = 0; k < i && first; k++) {
      const h5_dset *b = &vis->v[k];
      first = !(!b->dim_only && b->ndims >= 1 && !b->why &&
                b->dims[0] == a->dims[0]);
    }
    if (!first)
      continue;
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%svars=", n ? "; " : "; other selections: ");
    for (int k = i, sep = 0; k < vis->n; k++) {
      const h5_dset *b = &vis->v[k];
      if (b->dim_only || b->ndims < 1 || b->why || b->dims[0] != a->dims[0])
        continue;
      n = strlen(buf);
      snprintf(buf + n, cap - n, "%s%s", sep++ ? "," : "", b->name);
    }
    n = strlen(buf);
    snprintf(buf + n, cap - n, " (%llu rows)", (unsigned long long)a->dims[0]);
  }
}

static int h5_select(const char *path, h5_visit *vis, hsize_t longest,
                     const char *named, ferry__part_desc *out,
                     ferry__err *err) {
  char chosen[512] = "", skipped[1536] = "", others[1024] = "";
  int nsel = 0;
  h5_other_groups(vis, longest, others, sizeof others);
  for (int i = 0; i < vis->n; i++) {
    h5_dset *ds = &vis->v[i];
    char why[200] = "";
    if (named && !ferry__name_listed(named, ds->name))
      snprintf(why, sizeof why, "not named in vars");
    else if (ds->dim_only)
      snprintf(why, sizeof why, "a netCDF dimension without data");
    else if (ds->ndims < 1)
      snprintf(why, sizeof why, "a scalar, no sample dimension");
    else if (ds->why && ds->ad_why)
      snprintf(why, sizeof why, "%s", ds->why);
    else if (ds->why)
      snprintf(why, sizeof why,
               "%s, which ferry cannot read (integers, "
               "float16/32/64, h5py bools, and variable-length "
               "sequences of integers or float32/64 and strings only)",
               ds->why);
    else if (ds->dims[0] != longest)
      snprintf(why, sizeof why,
               "%llu rows where the sample dimension has "
               "%llu",
               (unsigned long long)ds->dims[0], (unsigned long long)longest);
    if (why[0]) {
      size_t n = strlen(skipped);
      snprintf(skipped + n, sizeof skipped - n, "%s/%s (%s)", n ? "; " : "",
               ds->name, why);
      ds->ndims = -1; /* not a variable */
      continue;
    }
    if (ds->filter[0])
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "%s: dataset /%s is compressed with filter %s, "
                           "whose plugin is not available: set "
                           "HDF5_PLUGIN_PATH or install hdf5-filter-plugin",
                           path, ds->name, ds->filter);
    if (ds->ndims - 1 > FERRY_MAX_DIMS)
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "%s: dataset /%s has %d dimensions; ferry reads at "
                           "most %d after the sample dimension",
                           path, ds->name, ds->ndims, FERRY_MAX_DIMS);
    size_t n = strlen(chosen);
    snprintf(chosen + n, sizeof chosen - n, "%s%s", n ? ", " : "", ds->name);
    nsel++;
  }
  if (nsel == 0)
    return ferry__seterr(err, FERRY_EEMPTY,
                         "%s: the HDF5 file holds no dataset ferry can serve "
                         "(skipped: %s)",
                         path, skipped[0] ? skipped : "nothing, it is empty");
  size_t len = strlen(chosen) + strlen(skipped) + strlen(others) + 64;
  if (!(out->notes = malloc(len)))
    return ferry__oom(err, -1, len, "the selection notes of %s", path);
  snprintf(out->notes, len, "chose %s (%llu rows); skipped %s%s", chosen,
           (unsigned long long)longest, skipped[0] ? skipped : "nothing",
           others);
  return nsel;
}

/* A variable-length dataset's lengths as offsets (num_samples + 1), read
 * in blocks: HDF5 keeps no index of them (hdf5_vlen.c). */
enum { VLEN_BLOCK = 65536 };

static int vlen_offsets(hid_t f, const char *path, const char *name,
                        const h5_dset *ds, int64_t n, int64_t **out,
                        ferry__err *err) {
  int64_t *o = malloc(((size_t)n + 1) * sizeof *o);
  if (!o)
    return ferry__oom(err, -1, ((size_t)n + 1) * sizeof *o,
                      "the lengths of dataset /%s of %s", name, path);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t t = d >= 0 ? H5Dget_type(d) : -1;
  hid_t mt = t >= 0 ? ferry__h5_vlen_mtype(t, ds->vlen) : -1;
  int rc = 0;
  char why[512] = "cannot open it";
  if (mt < 0)
    rc = FERRY_EFORMAT;
  o[0] = 0;
  size_t el = ferry_dtype_size(ds->dtype);
  for (int64_t r = 0; !rc && r < n; r += VLEN_BLOCK) {
    int64_t k = n - r < VLEN_BLOCK ? n - r : VLEN_BLOCK;
    rc = ferry__h5_vlen_read(d, mt, ds->vlen, H5P_DEFAULT, r, k, el, o + r + 1,
                             NULL, NULL, 0, why, sizeof why);
    for (int64_t i = 0; !rc && i < k; i++) {
      if (o[r + 1 + i] > INT64_MAX / 16 / (int64_t)el - o[r + i]) {
        snprintf(why, sizeof why, "the lengths overflow at row %lld",
                 (long long)(r + i));
        rc = FERRY_EFORMAT;
      } else {
        o[r + 1 + i] += o[r + i];
      }
    }
  }
  if (mt >= 0)
    H5Tclose(mt);
  if (t >= 0)
    H5Tclose(t);
  if (d >= 0)
    H5Dclose(d);
  if (rc) {
    free(o);
    return rc == FERRY_ENOMEM
               ? ferry__oom(err, -1, (size_t)VLEN_BLOCK * sizeof(hvl_t),
                            "the lengths of dataset /%s of %s", name, path)
               : ferry__seterr(err, rc,
                               "%s: variable-length dataset /%s: %s (offset "
                               "0)",
                               path, name, why);
  }
  *out = o;
  return 0;
}

/* ---- AnnData (.h5ad: docs/singlecell.md, issue 27) ------------------- */

/* Integer array attribute `name` of obj (n values) into out: 0, or -1. */
static int attr_i64s(hid_t f, const char *obj, const char *name, int64_t *out,
                     int n) {
  if (H5Lexists(f, obj, H5P_DEFAULT) <= 0 ||
      H5Aexists_by_name(f, obj, name, H5P_DEFAULT) <= 0)
    return -1;
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1, t = a >= 0 ? H5Aget_type(a) : -1;
  int rc = -1;
  if (sp >= 0 && t >= 0 && H5Tget_class(t) == H5T_INTEGER &&
      H5Sget_simple_extent_npoints(sp) == n &&
      H5Aread(a, H5T_NATIVE_INT64, out) >= 0)
    rc = 0;
  if (t >= 0)
    H5Tclose(t);
  if (sp >= 0)
    H5Sclose(sp);
  if (a >= 0)
    H5Aclose(a);
  return rc;
}

/* The names of dataset `name` of f, a 1-D dataset of strings (a
 * categorical column's categories, the genes of var/_index), '\n'-joined
 * (malloc'd); NULL when it cannot be read, holds more than 2^20 names or 16
 * MiB, or a name holds '\n'. */
static char *category_names(hid_t f, const char *name) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t t = d >= 0 ? H5Dget_type(d) : -1, s = d >= 0 ? H5Dget_space(d) : -1;
  hid_t mt = -1;
  hssize_t n = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
  char **v = NULL, *out = NULL;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0 &&
      n > 0 && n <= FERRY__AD_NAMES_MAX && (v = calloc((size_t)n, sizeof *v)) &&
      (mt = H5Tcopy(H5T_C_S1)) >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 &&
      H5Tset_cset(mt, H5Tget_cset(t)) >= 0 &&
      H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0) {
    size_t *lens = malloc((size_t)n * sizeof *lens);
    int ok = lens != NULL;
    for (hssize_t i = 0; ok && i < n; i++)
      if ((ok = v[i] != NULL))
        lens[i] = strlen(v[i]);
    if (ok) /* '\n'-joined, bounded (anndata.c) */
      out = ferry__anndata_join((const char *const *)v, lens, (int64_t)n);
    free(lens);
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mt, s, H5P_DEFAULT, v);
#else
    H5Dvlen_reclaim(mt, s, H5P_DEFAULT, v);
#endif
  }
  free(v);
  if (mt >= 0)
    H5Tclose(mt);
  if (s >= 0)
    H5Sclose(s);
  if (t >= 0)
    H5Tclose(t);
  if (d >= 0)
    H5Dclose(d);
  return out;
}

/* The interpreter's questions (backends/anndata.h) about file f. */
typedef struct h5_ad_ctx {
  hid_t f;
  const char *path;
} h5_ad_ctx;

static void ad_text(void *ctx, const char *obj, const char *name, char *buf,
                    size_t len) {
  attr_text(((h5_ad_ctx *)ctx)->f, obj, name, buf, len);
}

static int ad_ints(void *ctx, const char *obj, const char *name, int64_t *out,
                   int n) {
  return attr_i64s(((h5_ad_ctx *)ctx)->f, obj, name, out, n);
}

static int ad_exists(void *ctx, const char *obj) {
  return H5Lexists(((h5_ad_ctx *)ctx)->f, obj, H5P_DEFAULT) > 0;
}

static int ad_read_ints(void *ctx, const char *name, int64_t *out, int64_t n,
                        ferry__err *err) {
  h5_ad_ctx *c = ctx;
  hid_t d = H5Dopen2(c->f, name, H5P_DEFAULT);
  hid_t s = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
  herr_t r = -1;
  if (s >= 0 && t >= 0 && H5Tget_class(t) == H5T_INTEGER &&
      H5Sget_simple_extent_npoints(s) == n)
    r = H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
  if (t >= 0)
    H5Tclose(t);
  if (s >= 0)
    H5Sclose(s);
  if (d >= 0)
    H5Dclose(d);
  return r < 0 ? ferry__seterr(err, FERRY_EFORMAT,
                               "%s: AnnData array /%s: its %lld integers "
                               "cannot be read (variable /%s, offset 0)",
                               c->path, name, (long long)n, name)
               : 0;
}

static char *ad_names(void *ctx, const char *name) {
  return category_names(((h5_ad_ctx *)ctx)->f, name);
}

/* f is an AnnData file (anndata_prepare of backends/anndata.c): its
 * datasets given their AnnData meaning in vis (a sample is a cell; CSR
 * matrices as ragged rows; what is not per cell skipped with why), *n_obs
 * the cells.  1 when AnnData, 0 when not, or a FERRY_E* code. */
static int anndata_prepare(hid_t f, const char *path, h5_visit *vis,
                           hsize_t *n_obs, ferry__err *err) {
  h5_ad_ctx c = {f, path};
  const ferry__ad_ops ops = {&c,        ad_text,      ad_ints,
                             ad_exists, ad_read_ints, ad_names};
  ferry__ad_array *a = calloc((size_t)vis->n + 1, sizeof *a);
  if (!a)
    return ferry__oom(err, -1, ((size_t)vis->n + 1) * sizeof *a,
                      "the datasets of %s", path);
  for (int i = 0; i < vis->n; i++) {
    const h5_dset *ds = &vis->v[i];
    a[i].name = ds->name;
    a[i].ndims = ds->ndims;
    a[i].dims0 = ds->ndims >= 1 ? (int64_t)ds->dims[0] : 0;
    a[i].is_string = ds->vlen == 2;
    a[i].unreadable = ds->why != NULL;
  }
  int64_t cells = 0;
  int rc = ferry__anndata_prepare(&ops, path, a, vis->n, &cells, err);
  for (int i = 0; i < vis->n; i++) {
    h5_dset *ds = &vis->v[i];
    if (a[i].why) {
      ds->why = a[i].why;
      ds->ad_why = 1;
    }
    ds->csr = a[i].csr;
    ds->roff = a[i].roff;
    ds->width = a[i].width;
    ds->cats = a[i].cats;
    if (a[i].csr)
      ds->dims[0] = (hsize_t)a[i].dims0;
  }
  free(a);
  if (rc > 0)
    *n_obs = (hsize_t)cells;
  return rc;
}

/* The chosen datasets (ndims >= 1) as the part's variables. */
static int h5_fill(hid_t f, const char *path, h5_visit *vis, int nsel,
                   hsize_t longest, int64_t file_size, ferry__part_desc *out,
                   ferry__err *err) {
  out->vars = calloc((size_t)nsel, sizeof *out->vars);
  out->paths = calloc((size_t)nsel, sizeof *out->paths);
  out->data_offset = calloc((size_t)nsel, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nsel, sizeof *out->file_size);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size)
    return ferry__oom(err, -1,
                      (size_t)nsel *
                          (sizeof *out->vars + sizeof *out->paths +
                           sizeof *out->data_offset + sizeof *out->file_size),
                      "the description of %d datasets of %s", nsel, path);
  out->nvars = nsel;
  out->num_samples = (int64_t)longest;
  for (int i = 0, k = 0; i < vis->n; i++) {
    h5_dset *ds = &vis->v[i];
    if (ds->ndims < 1)
      continue;
    ferry__var *v = &out->vars[k];
    v->name = ds->name;
    ds->name = NULL;
    v->dtype = ds->dtype;
    v->swapped = 0;
    v->row_ndim = ds->ndims - 1;
    v->row_bytes = ferry_dtype_size(ds->dtype);
    for (int j = 1; j < ds->ndims; j++) {
      v->row_shape[j - 1] = (int64_t)ds->dims[j];
      v->row_bytes *= (size_t)ds->dims[j];
    }
    out->file_size[k] = file_size;
    v->categories = ds->cats;
    ds->cats = NULL;
    if (ds->csr) { /* AnnData CSR: its rows' offsets are the indptr */
      v->ragged = 1;
      v->width = ds->width;
      if (!out->roff && !(out->roff = calloc((size_t)nsel, sizeof *out->roff)))
        return ferry__oom(err, -1, (size_t)nsel * sizeof *out->roff,
                          "the offsets of the datasets of %s", path);
      out->roff[k] = ds->roff;
      ds->roff = NULL;
    } else if (ds->vlen) { /* ragged: its lengths from the whole dataset */
      v->ragged = 1;
      if (!out->roff && !(out->roff = calloc((size_t)nsel, sizeof *out->roff)))
        return ferry__oom(err, -1, (size_t)nsel * sizeof *out->roff,
                          "the offsets of the datasets of %s", path);
      int rc = vlen_offsets(f, path, v->name, ds, (int64_t)longest,
                            &out->roff[k], err);
      if (rc)
        return rc;
    }
    size_t want = layout(ds, v, path);
    if (ds->csr) /* its chunks hold values, not cells */
      v->chunk_rows = 0;
    if (!want && !(out->paths[k] = strdup(path)))
      want = strlen(path) + 1;
    if (want)
      return ferry__oom(err, -1, want, "the description of dataset /%s of %s",
                        v->name, path);
    k++;
  }
  return 0;
}

static int describe_locked(const char *path, const ferry_options *opts,
                           ferry__part_desc *out, ferry__err *err) {
  /* The loader's vars: what is selected is validated, nothing else. */
  char named[1024] = "";
  if (opts && ferry_options_get(opts, "vars", named, sizeof named) != 0)
    named[0] = '\0';
  h5_visit vis = {0};
  hid_t f = -1;
  int rc = 0;
  hsize_t longest = 0;
  struct stat st;
  memset(out, 0, sizeof *out);
  ferry__h5_quiet_errors();
  if (stat(path, &st) != 0)
    return ferry__seterr(err, errno == ENOENT ? FERRY_ENOENT : FERRY_EIO,
                         "%s: %s", path, strerror(errno));
  if ((f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
    /* HDF5's own reason (a file left open for writing by a crashed writer,
     * a truncated superblock, ...), not a guess */
    char why[512];
    ferry__h5_reason(why, sizeof why);
    return ferry__seterr(err, FERRY_EFORMAT, "%s: HDF5 cannot open the file%s",
                         path, why[0] ? why : " (truncated or corrupt?)");
  }
  if (H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit_cb, &vis) < 0 || vis.oom) {
    rc = vis.oom
             ? ferry__oom(err, -1, vis.oom, "the list of datasets of %s", path)
             : ferry__seterr(err, FERRY_EFORMAT,
                             "%s: cannot list the file's datasets "
                             "(truncated or corrupt?)",
                             path);
    goto cleanup;
  }
  /* AnnData: a sample is a cell (anndata_prepare) */
  int ad = anndata_prepare(f, path, &vis, &longest, err);
  if (ad < 0) {
    rc = ad;
    goto cleanup;
  }
  /* The sample dimension is the longest first dimension of the datasets
   * ferry can serve (a compound dataset that ferry skips must not make
   * the numeric ones unreachable); of all, when none can be served, so the
   * message lists them. */
  for (int pass = 0; pass < 2 && longest == 0 && !ad; pass++)
    for (int i = 0; i < vis.n; i++)
      if (!vis.v[i].dim_only && vis.v[i].ndims >= 1 &&
          (pass == 1 || !vis.v[i].why) && vis.v[i].dims[0] > longest)
        longest = vis.v[i].dims[0];
  hsize_t rows = named[0] && !ad ? named_rows(&vis, named) : 0;
  if (rows > 0)
    longest = rows;
  rc = h5_select(path, &vis, longest,
                 rows > 0 || (ad && named[0]) ? named : NULL, out, err);
  if (rc > 0)
    rc = h5_fill(f, path, &vis, rc, longest, (int64_t)st.st_size, out, err);
cleanup:
  for (int i = 0; i < vis.n; i++) {
    free(vis.v[i].name);
    free(vis.v[i].roff);
    free(vis.v[i].cats);
  }
  free(vis.v);
  if (f >= 0)
    H5Fclose(f);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* Rank 0, serial H5Fopen: a local section. */
int ferry__h5_describe(const char *path, const ferry_options *opts,
                       ferry__part_desc *out, ferry__err *err) {
  ferry__h5_lock();
  int rc = describe_locked(path, opts, out, err);
  ferry__h5_unlock();
  return rc;
}
