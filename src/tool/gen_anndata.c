/*
 * gen_anndata.c - `ferry gen FILE.h5ad --anndata`: a synthetic AnnData file
 * of cells x genes, laid out as anndata 0.8 writes one (a CSR X, an obs
 * dataframe with a categorical cell_type and a numeric n_counts, a var
 * dataframe of gene names, the empty obsm, varm, obsp, varp, layers, uns),
 * whose every value is the formula of gen_anndata.h, so that `ferry verify`
 * can check what it serves (verify_anndata.c).  The root attribute
 * "ferry-gen" records the parameters; anndata ignores it.
 *
 * Rank 0 writes with the HDF5 C API, in blocks: a first pass over the cells
 * writes indptr, obs (names, codes, n_counts) and counts the values, then
 * X/indices and X/data are created contiguous (the layout ferry reads with
 * one MPI-IO read per chunk) and a second pass fills them.  Nothing of the
 * size of the matrix is held.  The file is written as FILE.tmp and renamed
 * at the end: FILE exists only complete.
 */
#ifdef HAVE_CONFIG_H
#include <config.h> /* HAVE_HDF5 */
#endif

#include "gen_anndata.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_HDF5
#include <hdf5.h>
#endif

int64_t adgen_span(double density) {
  double s = floor(2.0 / density - 1.0 + 0.5);
  return s < 1 ? 1 : s > 1e12 ? (int64_t)1e12 : (int64_t)s;
}

#ifndef HAVE_HDF5

int adgen_write(const tool_ctx *ctx, const char *path, const adgen_params *p,
                double *bytes) {
  (void)p;
  *bytes = 0;
  tool_error(ctx,
             "cannot write %s: this ferry was built without HDF5 "
             "(configure --with-hdf5), which 'ferry gen --anndata' needs",
             path);
  return -1;
}

int adgen_read_params(const char *path, adgen_params *p, char *why,
                      size_t len) {
  (void)path;
  memset(p, 0, sizeof *p);
  snprintf(why, len, "this ferry was built without HDF5");
  return 0;
}

#else /* HAVE_HDF5 */

#define ADGEN_BLOCK_CELLS 65536 /* cells per block of obs, indptr */
#define ADGEN_BLOCK_VALUES ((int64_t)1 << 20) /* values per block of X */

/* The parameters as the root attribute's text. */
static void params_text(const adgen_params *p, char *buf, size_t len) {
  snprintf(buf, len,
           "ferry gen --anndata v%d: cells=%" PRId64 " genes=%" PRId64
           " span=%" PRId64 " seed=%" PRIu64 " dtype=%s categories=%d "
           "density=%.9g",
           ADGEN_VERSION, p->cells, p->genes, p->span, p->seed,
           ferry_dtype_name(p->dtype), p->categories, p->density);
}

static hid_t vlen_utf8(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t >= 0 &&
      (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* n strings (n < 0: one, a scalar) as attribute name of obj, vlen UTF-8 as
 * h5py writes a str. */
static int attr_strings(hid_t obj, const char *name, const char *const *s,
                        int n) {
  hsize_t dim = (hsize_t)(n < 0 ? 1 : n);
  hid_t t = vlen_utf8();
  hid_t sp = n < 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
  hid_t a = t >= 0 && sp >= 0
                ? H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)
                : -1;
  int rc = a >= 0 && H5Awrite(a, t, s) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  if (sp >= 0)
    H5Sclose(sp);
  if (t >= 0)
    H5Tclose(t);
  return rc;
}

static int attr_str(hid_t obj, const char *name, const char *s) {
  return attr_strings(obj, name, &s, -1);
}

/* encoding-type and encoding-version, as anndata marks every element. */
static int encoding(hid_t obj, const char *type, const char *version) {
  return attr_str(obj, "encoding-type", type) != 0 ||
                 attr_str(obj, "encoding-version", version) != 0
             ? -1
             : 0;
}

/* A numeric attribute of n elements (n == 0: an empty array). */
static int attr_num(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
                    const void *v, hsize_t n) {
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t a =
      sp >= 0 ? H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int rc = a >= 0 && H5Awrite(a, mtype, v) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  if (sp >= 0)
    H5Sclose(sp);
  return rc;
}

/* ordered=False: a NumPy bool, which h5py stores as an enum of int8. */
static int attr_false(hid_t obj, const char *name) {
  hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t f = 0, tr = 1;
  int rc = t >= 0 && H5Tenum_insert(t, "FALSE", &f) >= 0 &&
                   H5Tenum_insert(t, "TRUE", &tr) >= 0
               ? 0
               : -1;
  hid_t sp = rc == 0 ? H5Screate(H5S_SCALAR) : -1;
  hid_t a =
      sp >= 0 ? H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  rc = a >= 0 && H5Awrite(a, t, &f) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  if (sp >= 0)
    H5Sclose(sp);
  if (t >= 0)
    H5Tclose(t);
  return rc;
}

/* A group with anndata's encoding attributes. */
static hid_t group(hid_t parent, const char *name, const char *type,
                   const char *version) {
  hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g >= 0 && encoding(g, type, version) != 0) {
    H5Gclose(g);
    return -1;
  }
  return g;
}

/* A 1-D contiguous dataset of n elements; type/version: its encoding
 * attributes (NULL: none, as in a CSR matrix). */
static hid_t dataset(hid_t parent, const char *name, hid_t ftype, int64_t n,
                     const char *type) {
  hsize_t dim = (hsize_t)n;
  hid_t sp = H5Screate_simple(1, &dim, NULL);
  hid_t d = sp >= 0 ? H5Dcreate2(parent, name, ftype, sp, H5P_DEFAULT,
                                 H5P_DEFAULT, H5P_DEFAULT)
                    : -1;
  if (sp >= 0)
    H5Sclose(sp);
  if (d >= 0 && type && encoding(d, type, "0.2.0") != 0) {
    H5Dclose(d);
    return -1;
  }
  return d;
}

/* Elements [first, first + n) of a 1-D dataset from buf. */
static int put(hid_t d, hid_t mtype, int64_t first, int64_t n,
               const void *buf) {
  if (n == 0)
    return 0;
  hsize_t start = (hsize_t)first, count = (hsize_t)n;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
  int rc = fs >= 0 && ms >= 0 &&
                   H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count,
                                       NULL) >= 0 &&
                   H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf) >= 0
               ? 0
               : -1;
  if (ms >= 0)
    H5Sclose(ms);
  if (fs >= 0)
    H5Sclose(fs);
  return rc;
}

/* Names prefix0 .. prefix(n-1) as a string-array dataset, in blocks. */
static int names(hid_t parent, const char *name, const char *prefix,
                 int64_t n) {
  hid_t t = vlen_utf8();
  hid_t d = t >= 0 ? dataset(parent, name, t, n, "string-array") : -1;
  char *text = malloc((size_t)ADGEN_BLOCK_CELLS * 32);
  const char **ptr = malloc((size_t)ADGEN_BLOCK_CELLS * sizeof *ptr);
  int rc = d >= 0 && text && ptr ? 0 : -1;
  for (int64_t i = 0; rc == 0 && i < n; i += ADGEN_BLOCK_CELLS) {
    int64_t m = n - i < ADGEN_BLOCK_CELLS ? n - i : ADGEN_BLOCK_CELLS;
    for (int64_t k = 0; k < m; k++) {
      ptr[k] = text + k * 32;
      snprintf(text + k * 32, 32, "%s%" PRId64, prefix, i + k);
    }
    rc = put(d, t, i, m, ptr);
  }
  free(text);
  free(ptr);
  if (d >= 0)
    H5Dclose(d);
  if (t >= 0)
    H5Tclose(t);
  return rc;
}

/* The file's root, the empty groups and var: all but obs and X. */
static int skeleton(hid_t f, const adgen_params *p) {
  char text[512];
  params_text(p, text, sizeof text);
  int rc =
      encoding(f, "anndata", "0.1.0") != 0 || attr_str(f, ADGEN_ATTR, text) != 0
          ? -1
          : 0;
  static const char *const empty[] = {"layers", "obsm", "obsp",
                                      "uns",    "varm", "varp"};
  for (int k = 0; rc == 0 && k < 6; k++) {
    hid_t g = group(f, empty[k], "dict", "0.1.0");
    rc = g >= 0 ? 0 : -1;
    if (g >= 0)
      H5Gclose(g);
  }
  hid_t var = rc == 0 ? group(f, "var", "dataframe", "0.2.0") : -1;
  double none = 0;
  rc = var >= 0 && attr_str(var, "_index", "_index") == 0 &&
               attr_num(var, "column-order", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                        &none, 0) == 0 &&
               names(var, "_index", "gene", p->genes) == 0
           ? 0
           : -1;
  if (var >= 0)
    H5Gclose(var);
  return rc;
}

/* What the first pass writes, open. */
typedef struct obs_out {
  hid_t obs, cat, x;
  hid_t codes, n_counts, indptr;
} obs_out;

static int obs_open(hid_t f, const adgen_params *p, obs_out *o) {
  static const char *const order[] = {"cell_type", "n_counts"};
  o->obs = group(f, "obs", "dataframe", "0.2.0");
  int rc = o->obs >= 0 && attr_str(o->obs, "_index", "_index") == 0 &&
                   attr_strings(o->obs, "column-order", order, 2) == 0 &&
                   names(o->obs, "_index", "cell", p->cells) == 0
               ? 0
               : -1;
  o->cat = rc == 0 ? group(o->obs, "cell_type", "categorical", "0.2.0") : -1;
  rc = o->cat >= 0 && attr_false(o->cat, "ordered") == 0 &&
               names(o->cat, "categories", "type", p->categories) == 0
           ? 0
           : -1;
  o->codes =
      rc == 0 ? dataset(o->cat, "codes", H5T_STD_I8LE, p->cells, "array") : -1;
  o->n_counts = o->codes >= 0 ? dataset(o->obs, "n_counts", H5T_IEEE_F32LE,
                                        p->cells, "array")
                              : -1;
  o->x = o->n_counts >= 0 ? group(f, "X", "csr_matrix", "0.1.0") : -1;
  int64_t shape[2] = {p->cells, p->genes};
  rc = o->x >= 0 && attr_num(o->x, "shape", H5T_STD_I64LE, H5T_NATIVE_INT64,
                             shape, 2) == 0
           ? 0
           : -1;
  o->indptr =
      rc == 0 ? dataset(o->x, "indptr", H5T_STD_I64LE, p->cells + 1, NULL) : -1;
  return o->indptr >= 0 ? 0 : -1;
}

static void obs_close(obs_out *o) {
  hid_t *h[] = {&o->indptr, &o->n_counts, &o->codes};
  for (int k = 0; k < 3; k++)
    if (*h[k] >= 0)
      H5Dclose(*h[k]);
  if (o->cat >= 0)
    H5Gclose(o->cat);
  if (o->obs >= 0)
    H5Gclose(o->obs);
}

/* A progress line every 5 seconds of a long write. */
typedef struct progress {
  double t0, last;
  const char *what;
} progress;

static void progress_tick(progress *pg, int64_t done, int64_t total) {
  double now = MPI_Wtime();
  if (now - pg->last < 5)
    return;
  pg->last = now;
  printf("ferry gen: %s: %" PRId64 " of %" PRId64 " cells (%.0f%%), %.0f s\n",
         pg->what, done, total, 100.0 * (double)done / (double)total,
         now - pg->t0);
  fflush(stdout);
}

/* Pass 1: obs's codes and n_counts and X/indptr, block by block; *nnz the
 * values of the matrix. */
static int pass_obs(const adgen_params *p, obs_out *o, progress *pg,
                    int64_t *nnz) {
  int64_t *ptr = malloc(ADGEN_BLOCK_CELLS * sizeof *ptr);
  float *counts = malloc(ADGEN_BLOCK_CELLS * sizeof *counts);
  int8_t *codes = malloc(ADGEN_BLOCK_CELLS);
  int64_t total = 0;
  int rc = ptr && counts && codes
               ? put(o->indptr, H5T_NATIVE_INT64, 0, 1, &total)
               : -1;
  for (int64_t i = 0; rc == 0 && i < p->cells; i += ADGEN_BLOCK_CELLS) {
    int64_t m =
        p->cells - i < ADGEN_BLOCK_CELLS ? p->cells - i : ADGEN_BLOCK_CELLS;
    for (int64_t k = 0; k < m; k++) {
      uint64_t h = adgen_cell(p, i + k), t = 0;
      int64_t sum = 0;
      for (int64_t c = adgen_next(p, h, t, -1); c < p->genes;
           c = adgen_next(p, h, ++t, c))
        sum += adgen_value(h, c);
      total += (int64_t)t;
      ptr[k] = total;
      counts[k] = (float)sum;
      codes[k] = (int8_t)adgen_code(p, h);
    }
    rc = put(o->indptr, H5T_NATIVE_INT64, i + 1, m, ptr) == 0 &&
                 put(o->n_counts, H5T_NATIVE_FLOAT, i, m, counts) == 0 &&
                 put(o->codes, H5T_NATIVE_INT8, i, m, codes) == 0
             ? 0
             : -1;
    progress_tick(pg, i + m, p->cells);
  }
  free(ptr);
  free(counts);
  free(codes);
  *nnz = total;
  return rc;
}

/* The data dtype's file and memory types. */
static void data_types(ferry_dtype d, hid_t *ftype, hid_t *mtype) {
  *ftype = d == FERRY_FLOAT64 ? H5T_IEEE_F64LE
           : d == FERRY_INT32 ? H5T_STD_I32LE
                              : H5T_IEEE_F32LE;
  *mtype = d == FERRY_FLOAT64 ? H5T_NATIVE_DOUBLE
           : d == FERRY_INT32 ? H5T_NATIVE_INT32
                              : H5T_NATIVE_FLOAT;
}

static void store_value(ferry_dtype d, void *buf, int64_t k, int v) {
  if (d == FERRY_FLOAT64)
    ((double *)buf)[k] = v;
  else if (d == FERRY_INT32)
    ((int32_t *)buf)[k] = v;
  else
    ((float *)buf)[k] = (float)v;
}

/* Pass 2: X/indices and X/data, nnz values, in blocks of whole rows. */
static int pass_x(const adgen_params *p, hid_t x, int64_t nnz, progress *pg) {
  hid_t ftype, mtype;
  data_types(p->dtype, &ftype, &mtype);
  hid_t di = dataset(x, "indices", H5T_STD_I32LE, nnz, NULL);
  hid_t dd = di >= 0 ? dataset(x, "data", ftype, nnz, NULL) : -1;
  int64_t cap = p->genes > ADGEN_BLOCK_VALUES ? p->genes : ADGEN_BLOCK_VALUES;
  int32_t *ix = malloc((size_t)cap * sizeof *ix);
  void *dv = malloc((size_t)cap * 8);
  int rc = dd >= 0 && ix && dv ? 0 : -1;
  int64_t at = 0, n = 0; /* values written, values in the buffers */
  for (int64_t i = 0; rc == 0 && i < p->cells; i++) {
    if (n + p->genes > cap) {
      rc = put(di, H5T_NATIVE_INT32, at, n, ix) == 0 &&
                   put(dd, mtype, at, n, dv) == 0
               ? 0
               : -1;
      at += n;
      n = 0;
      progress_tick(pg, i, p->cells);
    }
    uint64_t h = adgen_cell(p, i), t = 0;
    for (int64_t c = adgen_next(p, h, t, -1); c < p->genes;
         c = adgen_next(p, h, ++t, c), n++) {
      ix[n] = (int32_t)c;
      store_value(p->dtype, dv, n, adgen_value(h, c));
    }
  }
  if (rc == 0)
    rc = put(di, H5T_NATIVE_INT32, at, n, ix) == 0 &&
                 put(dd, mtype, at, n, dv) == 0 && at + n == nnz
             ? 0
             : -1;
  free(ix);
  free(dv);
  if (dd >= 0)
    H5Dclose(dd);
  if (di >= 0)
    H5Dclose(di);
  return rc;
}

/* Rank 0: an existing path may be replaced only when ferry gen wrote it. */
static int may_replace(const tool_ctx *ctx, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return errno == ENOENT ? 0 : -1;
  adgen_params old;
  char why[256];
  if (S_ISREG(st.st_mode) && adgen_read_params(path, &old, why, sizeof why))
    return 0;
  tool_error(ctx,
             "%s exists and was not written by 'ferry gen --anndata' (%s); "
             "refusing to replace it",
             path, S_ISREG(st.st_mode) ? why : "not a regular file");
  return -1;
}

int adgen_write(const tool_ctx *ctx, const char *path, const adgen_params *p,
                double *bytes) {
  char tmp[4200];
  *bytes = 0;
  if (may_replace(ctx, path) != 0)
    return -1;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our messages, not HDF5's stack */
  obs_out o = {-1, -1, -1, -1, -1, -1};
  progress pg = {MPI_Wtime(), MPI_Wtime(), "obs and X/indptr"};
  int64_t nnz = 0;
  const char *stage = "the root, var and the empty groups";
  errno = 0;
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) {
    tool_error(ctx, "cannot create %s: %s", tmp,
               errno ? strerror(errno) : "HDF5 refused it");
    return -1;
  }
  int rc = skeleton(f, p) == 0 ? 0 : -1;
  if (rc == 0) {
    stage = "obs and X/indptr";
    rc = obs_open(f, p, &o) == 0 && pass_obs(p, &o, &pg, &nnz) == 0 ? 0 : -1;
  }
  if (rc == 0) {
    stage = "X/indices and X/data";
    pg.what = stage;
    rc = nnz <= INT64_C(1) << 62 ? pass_x(p, o.x, nnz, &pg) : -1;
  }
  obs_close(&o);
  if (o.x >= 0)
    H5Gclose(o.x);
  if (H5Fclose(f) < 0 && rc == 0) {
    stage = "the file's end (H5Fclose)";
    rc = -1;
  }
  if (rc == 0 && rename(tmp, path) != 0) {
    tool_error(ctx, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    rc = -2;
  }
  if (rc == -1)
    tool_error(ctx, "cannot write %s: writing %s failed (HDF5; disk full?)",
               tmp, stage);
  if (rc != 0)
    unlink(tmp);
  size_t el = p->dtype == FERRY_FLOAT64 ? 8 : 4;
  *bytes = (double)nnz * (double)(4 + el) + (double)p->cells * 13;
  return rc == 0 ? 0 : -1;
}

/* The attribute's text, or -1. */
static int read_attr_text(hid_t f, char *buf, size_t len) {
  hid_t a = H5Aopen(f, ADGEN_ATTR, H5P_DEFAULT);
  hid_t t = a >= 0 ? vlen_utf8() : -1;
  hid_t ft = a >= 0 ? H5Aget_type(a) : -1;
  char *s = NULL;
  int rc = ft >= 0 && H5Tget_class(ft) == H5T_STRING &&
                   H5Tis_variable_str(ft) > 0 && H5Aread(a, t, &s) >= 0 && s
               ? 0
               : -1;
  if (rc == 0)
    snprintf(buf, len, "%s", s);
  if (s)
    H5free_memory(s);
  if (ft >= 0)
    H5Tclose(ft);
  if (t >= 0)
    H5Tclose(t);
  if (a >= 0)
    H5Aclose(a);
  return rc;
}

static int parse_text(const char *text, adgen_params *p) {
  int version = 0, n = 0;
  long long cells, genes, span;
  unsigned long long seed;
  char dtype[16];
  if (sscanf(text,
             "ferry gen --anndata v%d: cells=%lld genes=%lld span=%lld "
             "seed=%llu dtype=%15s categories=%d density=%lg%n",
             &version, &cells, &genes, &span, &seed, dtype, &p->categories,
             &p->density, &n) != 8 ||
      version != ADGEN_VERSION || text[n] != '\0')
    return -1;
  int d = tool_dtype_from_name(dtype);
  p->cells = cells;
  p->genes = genes;
  p->span = span;
  p->seed = seed;
  p->dtype = (ferry_dtype)d;
  return cells >= 0 && genes >= 1 && span >= 1 &&
                 (d == FERRY_FLOAT32 || d == FERRY_FLOAT64 ||
                  d == FERRY_INT32) &&
                 p->categories >= 1 && p->categories <= ADGEN_MAX_CATEGORIES
             ? 0
             : -1;
}

int adgen_read_params(const char *path, adgen_params *p, char *why,
                      size_t len) {
  char text[512];
  memset(p, 0, sizeof *p);
  H5E_auto2_t fn = NULL;
  void *data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  int on = 0;
  if (f < 0)
    snprintf(why, len, "not an HDF5 file");
  else if (H5Aexists(f, ADGEN_ATTR) <= 0)
    snprintf(why, len, "no root attribute '%s'", ADGEN_ATTR);
  else if (read_attr_text(f, text, sizeof text) != 0 ||
           parse_text(text, p) != 0)
    snprintf(why, len,
             "its root attribute '%s' is not one this ferry writes "
             "(version %d)",
             ADGEN_ATTR, ADGEN_VERSION);
  else
    on = 1;
  if (f >= 0)
    H5Fclose(f);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  return on;
}

#endif /* HAVE_HDF5 */
