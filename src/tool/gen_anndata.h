/*
 * gen_anndata.h - the synthetic AnnData file of `ferry gen --anndata`
 * (gen_anndata.c writes it, verify_anndata.c checks what the loader serves
 * from it): its parameters and the formula of its values, shared so that
 * the writer and the check cannot drift apart.  Integer arithmetic only,
 * so that any machine (and tests/anndata/gen_check.py) computes the same.
 *
 * Cell i of a file of seed S: h = mix(S ^ mix(i)).  Its columns are a skip
 * sequence: c = -1, then for t = 0, 1, ...: c += 1 + mix(h + t) mod span,
 * while c < genes (span = round(2 / density - 1): gaps of mean about
 * 1 / density, so about density x genes columns, increasing, distinct).
 * The value at column c is 1 + ((h ^ c * GOLDEN) >> 56) mod 255: an integer
 * in [1, 255], exact in every data dtype.  Its code in obs/cell_type is -1
 * when mix(h ^ CODES) mod 20 is 0 (about 5% missing), else
 * (mix(h ^ CODES) >> 8) mod categories; its n_counts the sum of its values.
 */
#ifndef FERRY_TOOL_GEN_ANNDATA_H
#define FERRY_TOOL_GEN_ANNDATA_H

#include "tool.h"

/* The root attribute that marks a file as `ferry gen --anndata`'s (anndata
 * ignores attributes it does not know), and the version of its formula. */
#define ADGEN_ATTR "ferry-gen"
#define ADGEN_VERSION 1
#define ADGEN_MAX_CATEGORIES 127 /* codes are int8 */

typedef struct adgen_params {
  int64_t cells, genes;
  int64_t span; /* the gaps between columns: 1 + (0 .. span-1) */
  uint64_t seed;
  ferry_dtype dtype; /* X/data: float32, float64 or int32 */
  int categories;    /* obs/cell_type's */
  double density;    /* as asked (span is what is used) */
} adgen_params;

static inline uint64_t adgen_mix(uint64_t x) { /* splitmix64's finaliser */
  x += UINT64_C(0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

/* Cell i's hash. */
static inline uint64_t adgen_cell(const adgen_params *p, int64_t i) {
  return adgen_mix(p->seed ^ adgen_mix((uint64_t)i));
}

/* The column after prev (-1 for the first) at step t of cell hash h; a
 * column >= genes ends the row. */
static inline int64_t adgen_next(const adgen_params *p, uint64_t h, uint64_t t,
                                 int64_t prev) {
  return prev + 1 + (int64_t)(adgen_mix(h + t) % (uint64_t)p->span);
}

/* The value at column c of cell hash h: 1 .. 255. */
static inline int adgen_value(uint64_t h, int64_t c) {
  uint64_t x = h ^ ((uint64_t)c * UINT64_C(0x9e3779b97f4a7c15));
  return 1 + (int)((x >> 56) % 255);
}

/* Cell hash h's code in obs/cell_type: -1 (missing) or 0 .. categories-1. */
static inline int adgen_code(const adgen_params *p, uint64_t h) {
  uint64_t x = adgen_mix(h ^ UINT64_C(0x636f646573));
  return x % 20 == 0 ? -1 : (int)((x >> 8) % (uint64_t)p->categories);
}

/* span for a density in (0, 1]. */
int64_t adgen_span(double density);

/* Rank 0: write the file path (replacing one ferry gen --anndata wrote;
 * refusing any other existing file).  Progress lines on stdout.  Returns 0,
 * or -1 after a message (tool_error).  *bytes: what was written. */
int adgen_write(const tool_ctx *ctx, const char *path, const adgen_params *p,
                double *bytes);

/* Rank 0: 1 and *p when path is an HDF5 file with the ADGEN_ATTR root
 * attribute (of this version), else 0 with why (len bytes) saying why not.
 * No message otherwise: a file that is not ferry's is not an error. */
int adgen_read_params(const char *path, adgen_params *p, char *why, size_t len);

#endif /* FERRY_TOOL_GEN_ANNDATA_H */
