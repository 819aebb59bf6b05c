/*
 * backends/anndata.h - the AnnData meaning of a store's arrays (issue 27,
 * docs/singlecell.md), shared by the backends that read AnnData: hdf5
 * (.h5ad) and zarr (AnnData Zarr stores, v2 and v3).  A backend lists the
 * arrays it found and answers a few questions about its store (ops); the
 * interpreter decides which arrays are per cell, which CSR matrices become
 * ragged rows (their indptr read once, checked, as the rows' offsets), and
 * why the rest is skipped.  It touches no file itself, so
 * tests/fuzz/fuzz_anndata.c drives it with stores made of fuzz bytes.
 */
#ifndef FERRY_BACKENDS_ANNDATA_H
#define FERRY_BACKENDS_ANNDATA_H

#include "core/manifest.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

/* One array of the store, as its backend found it (in), with what AnnData
 * makes of it (out). */
typedef struct ferry__ad_array {
  const char *name; /* in: its path in the store, no leading '/'         */
  int ndims;        /* in: its dimensions (< 1: not an array to serve)    */
  int64_t dims0;    /* in: its length along dimension 0; out: the cells
                     * when csr                                           */
  int is_string;    /* in: an array of strings                            */
  int unreadable;   /* in: the backend cannot serve it (its own why)      */
  const char *why;  /* out: AnnData's reason not to serve it, or NULL     */
  int csr;          /* out: the indices or data of a CSR matrix           */
  int64_t *roff;    /* out, csr: the rows' offsets (the matrix's indptr,
                     * [cells + 1], malloc'd, the caller frees)           */
  int64_t nnz;      /* out, csr: its values                               */
  int64_t width;    /* out, csr: the matrix's columns                     */
  char *cats;       /* out: the names of its values, '\n'-joined, malloc'd
                     * (a categorical column's codes: its categories; a
                     * CSR matrix's indices: its genes), or NULL          */
} ferry__ad_array;

/* What the interpreter asks of the backend about its store.  obj is a
 * group or an array's path ("." the root). */
typedef struct ferry__ad_ops {
  void *ctx;
  /** Text attribute `name` of obj into buf[len]; "" when absent or not a
   *  string. */
  void (*text)(void *ctx, const char *obj, const char *name, char *buf,
               size_t len);
  /** Integer array attribute `name` of obj, exactly n values, into out: 0,
   *  or -1 (absent, not integers, another count). */
  int (*ints)(void *ctx, const char *obj, const char *name, int64_t *out,
              int n);
  /** 1 when obj exists (a group or an array). */
  int (*exists)(void *ctx, const char *obj);
  /** The n values of the 1-D integer array `name` (one of the list) as
   *  int64 into out: 0, or a FERRY_E* code with err (naming the store and
   *  the array). */
  int (*read_ints)(void *ctx, const char *name, int64_t *out, int64_t n,
                   ferry__err *err);
  /** The strings of the 1-D array `name`, '\n'-joined (malloc'd); NULL when
   *  it cannot be read, holds more than FERRY__AD_NAMES_MAX names or
   *  FERRY__AD_NAMES_BYTES bytes, or a name holds '\n'. */
  char *(*names)(void *ctx, const char *name);
} ferry__ad_ops;

#define FERRY__AD_NAMES_MAX ((int64_t)1 << 20)
#define FERRY__AD_NAMES_BYTES ((size_t)16 << 20)
/* The most cells ferry reads from an AnnData store (an indptr of 2^40
 * entries would be 8 TiB): beyond it the shape is corrupt. */
#define FERRY__AD_CELLS_MAX ((int64_t)1 << 40)

/** The store (path names it in messages) is AnnData when its root's
 *  encoding-type is "anndata", or X is a group in the older h5sparse
 *  layout: then give its n arrays their AnnData meaning (out fields) and
 *  the cells (*n_obs) and return 1.  0 when the store is not AnnData.  A
 *  FERRY_E* code with err on input ferry refuses: no X, X a CSC matrix or
 *  a group that is no CSR matrix with a shape, a CSR matrix without its
 *  three 1-D arrays, with a shape or indptr that disagrees with its arrays
 *  or an indptr that does not start at 0, decreases or does not end at the
 *  values' count.  On an error the out fields made so far stay for the
 *  caller to free. */
int ferry__anndata_prepare(const ferry__ad_ops *ops, const char *path,
                           ferry__ad_array *a, int n, int64_t *n_obs,
                           ferry__err *err);

/** '\n'-join n strings s[i] (lens[i] bytes each, no NUL needed) into a new
 *  string; NULL when n or the bytes exceed the limits above, a string
 *  holds '\n' or '\0', or out of memory. */
char *ferry__anndata_join(const char *const *s, const size_t *lens, int64_t n);

/** 1 when v is the column indices of a CSR matrix's rows (an integer
 *  ragged variable .../indices with a width). */
int ferry__anndata_is_indices(const ferry__var *v);

/** The vector level of the rows' check below: 2 (default) AVX2 where the
 *  CPU has it, 1 SSE2, 0 plain C (each falls back to the next one down
 *  where it is not built); the unit test sets it to run each level. */
extern int ferry__anndata_simd;

/** The column indices just read of rows [row, row + nrows) of a CSR
 *  matrix (v's elements [roff[row], roff[row + nrows]), stored byte order,
 *  in buf; cell0: the global number of the part's first cell): every row's
 *  indices inside [0, v->width) and strictly increasing (canonical CSR:
 *  sorted, no column twice), or FERRY_EFORMAT naming the first fault with
 *  its file, `what` it is in ("dataset", "array"), v, rank, byte offset
 *  and cell.  0 for a variable that is not the integer indices of a
 *  matrix (decision 0068). */
int ferry__anndata_indices_ok(const ferry__var *v, const char *file,
                              const char *what, int rank, const int64_t *roff,
                              int64_t cell0, int64_t row, int64_t nrows,
                              const void *buf, ferry__err *err);

/** 1 when v is a categorical column's codes (a dense integer column with
 *  categories, named .../codes). */
int ferry__anndata_is_codes(const ferry__var *v);

/** The codes just read of cells [row0, row0 + n) of v (stored byte order,
 *  in buf): each -1 (missing) or the number of one of its categories, or
 *  FERRY_EFORMAT naming the first one outside, its file, `what` it is in,
 *  v, rank, cell and byte offset.  0 for a variable that is not codes. */
int ferry__anndata_codes_ok(const ferry__var *v, const char *file,
                            const char *what, int rank, int64_t row0, int64_t n,
                            const void *buf, ferry__err *err);

/** 1 when a read of v is checked after it (a matrix's indices, a
 *  categorical column's codes). */
int ferry__anndata_checks(const ferry__var *v);

/** What variable var of part pt (v) just read must hold, the one check a
 *  backend calls after a read of rows [row, row + nrows): a CSR matrix's
 *  rows (the part's offsets of var) canonical and inside the matrix
 *  (ferry__anndata_indices_ok), a categorical column's codes among its
 *  categories; 0 for other variables. */
int ferry__anndata_values_ok(const ferry__var *v, const ferry__part *pt,
                             int var, const char *file, const char *what,
                             int rank, int64_t row, int64_t nrows,
                             const void *buf, ferry__err *err);

#endif /* FERRY_BACKENDS_ANNDATA_H */
