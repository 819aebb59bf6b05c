/*
 * anndata.c - the AnnData meaning of a store's arrays (anndata.h): a
 * sample is a cell, a CSR matrix of cells (X, raw/X, layers/NAME) is read
 * as ragged rows whose offsets are its indptr, obs columns and obsm
 * entries are per cell, the rest is skipped with why.  Used by hdf5
 * (.h5ad) and zarr (AnnData Zarr stores); fuzzed by fuzz_anndata.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/anndata.h"
#include "util/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#define FERRY__AD_AVX2 1 /* target("avx2") functions, chosen at run time */
#include <immintrin.h>
#endif

#define AD_NAME_MAX 600 /* a path in the store ferry looks at */

static ferry__ad_array *find(ferry__ad_array *a, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (a[i].name && strcmp(a[i].name, name) == 0)
      return &a[i];
  return NULL;
}

/* A matrix group's format: "csr", "csc", or "" (anndata >= 0.8 names it
 * in encoding-type, older files in h5sparse_format). */
static void matrix_format(const ferry__ad_ops *ops, const char *g, char *fmt,
                          size_t len) {
  char enc[64];
  ops->text(ops->ctx, g, "encoding-type", enc, sizeof enc);
  if (!enc[0])
    ops->text(ops->ctx, g, "h5sparse_format", enc, sizeof enc);
  snprintf(fmt, len, "%s",
           !strcmp(enc, "csr_matrix") || !strcmp(enc, "csr")   ? "csr"
           : !strcmp(enc, "csc_matrix") || !strcmp(enc, "csc") ? "csc"
                                                               : "");
}

/* A matrix's shape attribute (anndata >= 0.8: shape, older h5sparse_shape)
 * into shape[2]: 0, or -1. */
static int matrix_shape(const ferry__ad_ops *ops, const char *g,
                        int64_t *shape) {
  return ops->ints(ops->ctx, g, "shape", shape, 2) == 0 ||
                 ops->ints(ops->ctx, g, "h5sparse_shape", shape, 2) == 0
             ? 0
             : -1;
}

/* The names of the columns of matrix g (its var's index: var/_index, or
 * raw/var/_index for raw/X), when there is one a column; else NULL. */
static char *gene_names(const ferry__ad_ops *ops, const char *g,
                        int64_t width) {
  char vg[16], idx[128], name[160];
  snprintf(vg, sizeof vg, "%s", !strcmp(g, "raw/X") ? "raw/var" : "var");
  ops->text(ops->ctx, vg, "_index", idx, sizeof idx);
  snprintf(name, sizeof name, "%s/%s", vg, idx[0] ? idx : "_index");
  if (!ops->exists(ops->ctx, vg) || !ops->exists(ops->ctx, name))
    return NULL;
  char *cats = ops->names(ops->ctx, name);
  int64_t names = 0;
  for (const char *c = cats; c && *c; c++)
    names += *c == '\n';
  if (cats && names + 1 != width) { /* not one name a column */
    free(cats);
    cats = NULL;
  }
  return cats;
}

/* The CSR matrix of group g (its indptr, indices and data in a) of n_obs
 * rows: indptr read as the rows' offsets (from 0, never decreasing, ending
 * at the values' count), indices and data marked csr with them. */
static int csr_prepare(const ferry__ad_ops *ops, const char *path,
                       const char *g, ferry__ad_array *a, int n, int64_t n_obs,
                       ferry__err *err) {
  char name[AD_NAME_MAX + 16];
  snprintf(name, sizeof name, "%s/indptr", g);
  ferry__ad_array *ip = find(a, n, name);
  snprintf(name, sizeof name, "%s/indices", g);
  ferry__ad_array *ix = find(a, n, name);
  snprintf(name, sizeof name, "%s/data", g);
  ferry__ad_array *dt = find(a, n, name);
  /* (ix or dt already csr: an array listed twice, which no store holds) */
  if (!ip || !ix || !dt || ip->ndims != 1 || ix->ndims != 1 || dt->ndims != 1 ||
      ip->is_string || ip->unreadable || ix->csr || dt->csr)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData matrix /%s: a CSR matrix needs the 1-D "
                         "integer arrays indptr and indices and the 1-D array "
                         "data (variable /%s, offset 0)",
                         path, g, g);
  if (ip->dims0 != n_obs + 1)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData matrix /%s: indptr has %lld entries, "
                         "its %lld rows need %lld (variable /%s/indptr, "
                         "offset 0)",
                         path, g, (long long)ip->dims0, (long long)n_obs,
                         (long long)n_obs + 1, g);
  if (ix->dims0 != dt->dims0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData matrix /%s: data has %lld values and "
                         "indices %lld (variable /%s/data, offset 0)",
                         path, g, (long long)dt->dims0, (long long)ix->dims0,
                         g);
  int64_t shape[2] = {-1, -1};
  if (matrix_shape(ops, g, shape) != 0 || shape[0] != n_obs || shape[1] < 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData matrix /%s: its shape attribute (%lld, "
                         "%lld) disagrees with its %lld rows, or is missing "
                         "(variable /%s, offset 0)",
                         path, g, (long long)shape[0], (long long)shape[1],
                         (long long)n_obs, g);
  size_t bytes = ((size_t)n_obs + 1) * sizeof(int64_t);
  int64_t *o = malloc(bytes);
  if (!o)
    return ferry__oom(err, -1, bytes, "the indptr of /%s of %s", g, path);
  snprintf(name, sizeof name, "%s/indptr", g);
  int rc = ops->read_ints(ops->ctx, name, o, n_obs + 1, err);
  if (rc < 0) {
    free(o);
    return rc;
  }
  const char *bad = NULL;
  int64_t at = 0;
  if (o[0] != 0)
    bad = "does not start at 0";
  for (int64_t i = 0; !bad && i < n_obs; i++)
    if (o[i + 1] < o[i]) {
      bad = "decreases";
      at = i + 1;
    }
  if (!bad && o[n_obs] != dt->dims0) {
    bad = "does not end at the values' count";
    at = n_obs;
  }
  if (bad) {
    int64_t last = o[n_obs];
    free(o);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData matrix /%s: indptr %s (entry %lld; it "
                         "ends at %lld, data holds %lld values; variable "
                         "/%s/indptr, offset %lld)",
                         path, g, bad, (long long)at, (long long)last,
                         (long long)dt->dims0, g, (long long)at * 8);
  }
  ix->cats = gene_names(ops, g, shape[1]);
  ip->why = "the row pointers of a CSR matrix (the offsets of its rows)";
  ferry__ad_array *two[2] = {ix, dt};
  for (int k = 0; k < 2; k++) {
    two[k]->csr = 1;
    two[k]->width = shape[1];
    two[k]->nnz = two[k]->dims0;
    two[k]->dims0 = n_obs;
    if (k == 0) {
      two[k]->roff = o;
    } else if (!(two[k]->roff = malloc(bytes))) {
      return ferry__oom(err, -1, bytes, "the indptr of /%s of %s", g, path);
    } else {
      memcpy(two[k]->roff, o, bytes);
    }
  }
  return 0;
}

/* 1 when array name lies in the group of a matrix (X, raw/X, layers/NAME)
 * whose path is g[len] on return. */
static int matrix_of(const char *name, char *g, size_t len) {
  const char *slash = strrchr(name, '/');
  if (!slash || (size_t)(slash - name) >= len)
    return 0;
  snprintf(g, len, "%.*s", (int)(slash - name), name);
  return !strcmp(g, "X") || !strcmp(g, "raw/X") ||
         (!strncmp(g, "layers/", 7) && g[7] && !strchr(g + 7, '/'));
}

/* The cells: X's rows (a dense X's first dimension, a CSR X's shape). */
static int cells(const ferry__ad_ops *ops, const char *path, ferry__ad_array *a,
                 int n, int64_t *n_obs, ferry__err *err) {
  char fmt[16];
  int64_t shape[2] = {0, 0};
  ferry__ad_array *xd = find(a, n, "X");
  if (!ops->exists(ops->ctx, "X"))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: an AnnData file without X (variable /X, "
                         "offset 0): nothing to serve per cell",
                         path);
  if (xd) {
    *n_obs = xd->ndims >= 1 ? xd->dims0 : 0;
    if (*n_obs < 0 || *n_obs > FERRY__AD_CELLS_MAX)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: AnnData X has %lld rows, more than ferry "
                           "reads (variable /X, offset 0)",
                           path, (long long)*n_obs);
    return 0;
  }
  matrix_format(ops, "X", fmt, sizeof fmt);
  if (!strcmp(fmt, "csc"))
    return ferry__seterr(
        err, FERRY_ENOTSUP,
        "%s: AnnData X is a CSC matrix (variable /X, offset 0): a cell's "
        "values are not contiguous in it, so cells cannot be read as rows; "
        "convert it once in Python: adata.X = adata.X.tocsr(), then "
        "adata.write_h5ad(...) or adata.write_zarr(...)",
        path);
  if (strcmp(fmt, "csr") != 0 || matrix_shape(ops, "X", shape) != 0 ||
      shape[0] < 0 || shape[1] < 0 || shape[0] > FERRY__AD_CELLS_MAX)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: AnnData X is a group that is not a CSR matrix "
                         "with a shape (encoding-type '%s', shape (%lld, "
                         "%lld); variable /X, offset 0)",
                         path, fmt, (long long)shape[0], (long long)shape[1]);
  *n_obs = shape[0];
  return 0;
}

/* Why array x is not served per cell, or NULL when it is (a dense matrix
 * of cells, an obs column, an obsm entry); a categorical column's codes get
 * their categories' names. */
static const char *per_cell(const ferry__ad_ops *ops, ferry__ad_array *x,
                            int64_t n_obs) {
  char g[AD_NAME_MAX];
  const char *n = x->name, *sl = strrchr(n, '/');
  int top_obs = !strncmp(n, "obs/", 4), top_obsm = !strncmp(n, "obsm/", 5);
  if (!strcmp(n, "X") || (!strncmp(n, "layers/", 7) && !strchr(n + 7, '/')))
    return x->ndims >= 1 && x->dims0 == n_obs ? NULL : "not one row per cell";
  if (top_obs && sl && !strcmp(sl, "/codes") && x->ndims == 1 &&
      x->dims0 == n_obs && !x->is_string) {
    char cat[AD_NAME_MAX + 16];
    if ((size_t)(sl - n) < AD_NAME_MAX) {
      snprintf(cat, sizeof cat, "%.*s/categories", (int)(sl - n), n);
      x->cats = ops->exists(ops->ctx, cat) ? ops->names(ops->ctx, cat) : NULL;
    }
    return NULL;
  }
  if (matrix_of(n, g, sizeof g))
    return "a part of a matrix that is not CSR";
  if (top_obs && sl && !strcmp(sl, "/categories"))
    return "the categories of a categorical column (its codes are served)";
  if (top_obs && !strcmp(n, "obs/_index"))
    return "the cells' names";
  if (top_obs && x->is_string)
    return "a string column (not served: make it categorical)";
  if (!(top_obs || top_obsm))
    return "not per cell (var, varm, varp, obsp, uns)";
  if (x->ndims < 1 || x->dims0 != n_obs)
    return "not one row per cell";
  return NULL;
}

int ferry__anndata_prepare(const ferry__ad_ops *ops, const char *path,
                           ferry__ad_array *a, int n, int64_t *n_obs,
                           ferry__err *err) {
  char enc[64], old[64], fmt[16];
  ops->text(ops->ctx, ".", "encoding-type", enc, sizeof enc);
  ops->text(ops->ctx, "X", "h5sparse_format", old, sizeof old);
  if (strcmp(enc, "anndata") != 0 && !old[0])
    return 0;
  int rc = cells(ops, path, a, n, n_obs, err);
  if (rc < 0)
    return rc;
  /* every CSR matrix of cells: X, raw/X, layers/NAME */
  for (int i = 0; i < n; i++) {
    char g[AD_NAME_MAX];
    ferry__ad_array *x = &a[i];
    if (x->csr || x->why || x->unreadable || !matrix_of(x->name, g, sizeof g))
      continue;
    if (strcmp(x->name + strlen(g) + 1, "indptr") != 0)
      continue;
    matrix_format(ops, g, fmt, sizeof fmt);
    if (strcmp(fmt, "csr") != 0) {
      x->why = "the row pointers of a CSC matrix (not served: its rows are "
               "not contiguous)";
    } else if ((rc = csr_prepare(ops, path, g, a, n, *n_obs, err)) < 0) {
      return rc;
    }
  }
  /* the rest: per cell or not */
  for (int i = 0; i < n; i++)
    if (!a[i].csr && !a[i].why && !a[i].unreadable)
      a[i].why = per_cell(ops, &a[i], *n_obs);
  return 1;
}

char *ferry__anndata_join(const char *const *s, const size_t *lens, int64_t n) {
  size_t len = 0;
  if (n <= 0 || n > FERRY__AD_NAMES_MAX)
    return NULL;
  for (int64_t i = 0; i < n; i++) {
    if (memchr(s[i], '\n', lens[i]) || memchr(s[i], '\0', lens[i]) ||
        lens[i] > FERRY__AD_NAMES_BYTES)
      return NULL;
    len += lens[i] + 1;
    if (len > FERRY__AD_NAMES_BYTES)
      return NULL;
  }
  char *out = malloc(len);
  if (!out)
    return NULL;
  size_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    memcpy(out + at, s[i], lens[i]);
    at += lens[i];
    out[at++] = i + 1 < n ? '\n' : '\0';
  }
  return out;
}

int ferry__anndata_is_indices(const ferry__var *v) {
  size_t len = strlen(v->name);
  return v->ragged && v->width > 0 && len >= 8 &&
         !strcmp(v->name + len - 8, "/indices") &&
         ferry__dtype_is_int(v->dtype) && v->row_bytes <= 8;
}

/* 1 when the n native int32 at p increase strictly (a canonical CSR row:
 * sorted, no column twice), at the level ferry__anndata_simd names: 2
 * AVX2, 16 pairs a step (where the CPU has it: 1.45 times SSE2 on rows in
 * L2, 68 GB/s against 47 here), 1 SSE2, 8 pairs a step (x86-64's
 * baseline: 2.4 times the loop below as the compiler vectorises it), 0
 * the plain loop, 16 at a time (what other CPUs run; compiled everywhere
 * so that the unit test runs each level). */
int ferry__anndata_simd = 2;

/* Pairs from k on, one at a time (every loop's last few). */
static int tail_bad_i32(const unsigned char *p, int64_t k, int64_t n) {
  int bad = 0;
  for (; k < n; k++) {
    int32_t a[2];
    memcpy(a, p + (size_t)(k - 1) * 4, sizeof a);
    bad |= a[1] <= a[0];
  }
  return bad;
}

static int increasing_i32_c(const unsigned char *p, int64_t n) {
  int32_t a[16], b[16];
  int bad[16] = {0};
  int64_t k = 1;
  for (; k + 16 <= n; k += 16) {
    memcpy(a, p + (size_t)(k - 1) * 4, sizeof a);
    memcpy(b, p + (size_t)k * 4, sizeof b);
    for (int i = 0; i < 16; i++)
      bad[i] |= b[i] <= a[i];
  }
  int any = tail_bad_i32(p, k, n);
  for (int i = 0; i < 16; i++)
    any |= bad[i];
  return !any;
}

#if defined(__SSE2__)
static int increasing_i32_sse2(const unsigned char *p, int64_t n) {
  __m128i ok0 = _mm_set1_epi32(-1), ok1 = ok0;
  int64_t k = 1;
  for (; k + 8 <= n; k += 8) {
    const unsigned char *q = p + (size_t)(k - 1) * 4;
    __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)(q + 4));
    __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(q + 16));
    __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(q + 20));
    ok0 = _mm_and_si128(ok0, _mm_cmpgt_epi32(b0, a0));
    ok1 = _mm_and_si128(ok1, _mm_cmpgt_epi32(b1, a1));
  }
  int bad = _mm_movemask_epi8(_mm_and_si128(ok0, ok1)) != 0xffff;
  return !(bad | tail_bad_i32(p, k, n));
}
#endif

#if defined(FERRY__AD_AVX2)
__attribute__((target("avx2"))) static int
increasing_i32_avx2(const unsigned char *p, int64_t n) {
  __m256i ok0 = _mm256_set1_epi32(-1), ok1 = ok0;
  int64_t k = 1;
  for (; k + 16 <= n; k += 16) {
    const unsigned char *q = p + (size_t)(k - 1) * 4;
    __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)q);
    __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(q + 4));
    __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(q + 32));
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(q + 36));
    ok0 = _mm256_and_si256(ok0, _mm256_cmpgt_epi32(b0, a0));
    ok1 = _mm256_and_si256(ok1, _mm256_cmpgt_epi32(b1, a1));
  }
  int bad = _mm256_movemask_epi8(_mm256_and_si256(ok0, ok1)) != -1;
  return !(bad | tail_bad_i32(p, k, n));
}
#endif

static int increasing_i32(const unsigned char *p, int64_t n) {
#if defined(FERRY__AD_AVX2)
  if (ferry__anndata_simd >= 2 && n > 16 && __builtin_cpu_supports("avx2"))
    return increasing_i32_avx2(p, n);
#endif
#if defined(__SSE2__)
  if (ferry__anndata_simd >= 1)
    return increasing_i32_sse2(p, n);
#endif
  return increasing_i32_c(p, n);
}

/* The same for native int64. */
static int increasing_i64(const unsigned char *p, int64_t n) {
  int bad = 0;
  for (int64_t k = 1; k < n; k++) {
    int64_t a[2];
    memcpy(a, p + (size_t)(k - 1) * 8, sizeof a);
    bad |= a[1] <= a[0];
  }
  return !bad;
}

/* Row r's first fault, element by element (any integer type, stored byte
 * order): an index outside [0, width) or one not above the one before;
 * the message names it.  0 when the row has none. */
static int row_fault(const ferry__var *v, const char *file, const char *what,
                     int rank, int64_t e0, int64_t cell, const unsigned char *q,
                     int64_t n, ferry__err *err) {
  size_t el = v->row_bytes;
  int64_t prev = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = -1; /* past int64 (uint64): outside */
    (void)ferry__dtype_as_int64_stored(q + (size_t)i * el, v->dtype, v->swapped,
                                       &x);
    if (x < 0 || x >= v->width)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, %s /%s, rank %d, offset %lld: column "
                           "index %lld outside [0, %lld) (the matrix's shape), "
                           "cell %lld",
                           file, what, v->name, rank,
                           (long long)((e0 + i) * (int64_t)el), (long long)x,
                           (long long)v->width, (long long)cell);
    if (i > 0 && x <= prev)
      return ferry__seterr(
          err, FERRY_EFORMAT,
          "file %s, %s /%s, rank %d, offset %lld: cell %lld names column "
          "%lld after column %lld: its column indices must increase (a "
          "canonical CSR row: sorted, no column twice, what "
          "torch.sparse_csr_tensor needs and what makes a dense row "
          "unambiguous); rewrite the matrix canonical, e.g. "
          "adata.X.sum_duplicates() (which also sorts) then write_h5ad",
          file, what, v->name, rank, (long long)((e0 + i) * (int64_t)el),
          (long long)cell, (long long)x, (long long)prev);
    prev = x;
  }
  return 0;
}

int ferry__anndata_indices_ok(const ferry__var *v, const char *file,
                              const char *what, int rank, const int64_t *roff,
                              int64_t cell0, int64_t row, int64_t nrows,
                              const void *buf, ferry__err *err) {
  if (!ferry__anndata_is_indices(v) || nrows <= 0)
    return 0; /* not integers: describe refuses nothing here */
  if (!roff)  /* a ragged variable always has its offsets */
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "file %s, %s /%s, rank %d: no row offsets to check "
                         "the matrix's rows against (a bug)",
                         file, what, v->name, rank);
  const unsigned char *q = buf;
  const int64_t e0 = roff[row];
  const int fast32 = !v->swapped && v->dtype == FERRY_INT32,
            fast64 = !v->swapped && v->dtype == FERRY_INT64;
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t s = roff[row + r] - e0, n = roff[row + r + 1] - roff[row + r];
    const unsigned char *p = q + (size_t)s * v->row_bytes;
    if (n <= 0)
      continue;
    /* native int32 and int64 (what anndata writes): a row that increases
     * strictly lies inside [0, width) when its first and last do */
    if (fast32) {
      int32_t first, last;
      memcpy(&first, p, 4);
      memcpy(&last, p + (size_t)(n - 1) * 4, 4);
      if (first >= 0 && last < v->width && increasing_i32(p, n))
        continue;
    } else if (fast64) {
      int64_t first, last;
      memcpy(&first, p, 8);
      memcpy(&last, p + (size_t)(n - 1) * 8, 8);
      if (first >= 0 && last < v->width && increasing_i64(p, n))
        continue;
    }
    int rc = row_fault(v, file, what, rank, e0 + s, cell0 + row + r, p, n, err);
    if (rc)
      return rc;
  }
  return 0;
}

int ferry__anndata_is_codes(const ferry__var *v) {
  size_t len = strlen(v->name);
  return !v->ragged && v->categories && v->row_ndim == 0 && len >= 6 &&
         !strcmp(v->name + len - 6, "/codes") &&
         ferry__dtype_is_int(v->dtype) && v->row_bytes <= 8;
}

int ferry__anndata_codes_ok(const ferry__var *v, const char *file,
                            const char *what, int rank, int64_t row0, int64_t n,
                            const void *buf, ferry__err *err) {
  if (!ferry__anndata_is_codes(v))
    return 0;
  int64_t ncat = 1;
  for (const char *c = v->categories; *c; c++)
    ncat += *c == '\n';
  size_t el = v->row_bytes;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = INT64_MIN; /* past int64 (uint64): outside */
    (void)ferry__dtype_as_int64_stored(
        (const unsigned char *)buf + (size_t)i * el, v->dtype, v->swapped, &x);
    if (x < -1 || x >= ncat)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, %s /%s, rank %d, offset %lld: code %lld "
                           "of cell %lld outside [-1, %lld) (-1 missing, else "
                           "one of its %lld categories)",
                           file, what, v->name, rank,
                           (long long)((row0 + i) * (int64_t)el), (long long)x,
                           (long long)(row0 + i), (long long)ncat,
                           (long long)ncat);
  }
  return 0;
}

int ferry__anndata_values_ok(const ferry__var *v, const ferry__part *pt,
                             int var, const char *file, const char *what,
                             int rank, int64_t row, int64_t nrows,
                             const void *buf, ferry__err *err) {
  return ferry__anndata_is_indices(v)
             ? ferry__anndata_indices_ok(v, file, what, rank,
                                         pt->roff ? pt->roff[var] : NULL,
                                         pt->first_sample, row, nrows, buf, err)
             : ferry__anndata_codes_ok(v, file, what, rank, row, nrows, buf,
                                       err);
}

int ferry__anndata_checks(const ferry__var *v) {
  return ferry__anndata_is_indices(v) || ferry__anndata_is_codes(v);
}
