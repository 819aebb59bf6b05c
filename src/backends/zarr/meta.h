/*
 * backends/zarr/meta.h - private to the zarr backend's metadata files
 * (meta.c, v3.c, store.c, describe.c): the helpers they share and the walk
 * of a store that describe reads.  The rest of the folder sees only
 * zarr.h, which this includes.
 */
#ifndef FERRY_ZARR_META_H
#define FERRY_ZARR_META_H

#include "backends/anndata.h"
#include "backends/zarr/zarr.h"

#include <jansson.h>

/* meta.c: reading metadata files. */

/** 1 on a little-endian host. */
int ferry__zarr_host_is_little(void);
/** The metadata file path whole (at most 16 MiB, a regular file); NULL
 *  with err set (missing: `what` says what that means; unreadable).  *len
 *  receives its size. */
char *ferry__zarr_read_meta(const char *path, const char *what, size_t *len,
                            ferry__err *err);
/** The len bytes of text (the contents of path) as a JSON object; NULL
 *  with err set (corrupt JSON, or not an object). */
json_t *ferry__zarr_json_text(const char *text, size_t len, const char *path,
                              ferry__err *err);
/** A metadata file parsed as a JSON object (NULL with err set). */
json_t *ferry__zarr_load_json(const char *path, const char *what,
                              ferry__err *err);
/** fill_value -> stored bytes of z; 0, or -1 when it cannot be
 *  represented in z's dtype. */
int ferry__zarr_parse_fill(json_t *jf, zmeta *z);

/* a * b into *out; 1 when it does not fit in int64 (a, b >= 0). */
static inline int ferry__zarr_mul_overflows(int64_t a, int64_t b,
                                            int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/* store.c: the walk of a store, for describe.c. */

/* An array found in a store. */
typedef struct zarr_array {
  char *name; /* path inside the store; the store's stem for a root array */
  zmeta z;
  int ok;    /* metadata parsed; else err holds why  */
  int coord; /* a 1-D coordinate of another dimension: not a variable */
  /* In an AnnData store: its AnnData meaning (zarr/anndata.c), else NULL */
  ferry__ad_array *ad;
  ferry__err err;
} zarr_array;

typedef struct zarr_walk {
  zarr_array *a;
  int n, cap;
  int root_array;
} zarr_walk;

/** Walk the store: its arrays (each with its metadata parsed, or the
 *  error that refused it), or the store itself when it is one array.
 *  Returns 0 or a FERRY_E* code with err set. */
int ferry__zarr_walk_store(const char *store, zarr_walk *w, ferry__err *err);
void ferry__zarr_walk_free(zarr_walk *w);

/* ---- AnnData stores (zarr/anndata.c) ---- */

/** When store is an AnnData store (its root's encoding-type "anndata"):
 *  its n arrays (w) given their AnnData meaning in *out (malloc'd, one
 *  per array, in w's order), the cells in *n_obs, and 1; 0 when it is not
 *  AnnData; a FERRY_E* code with err for input ferry refuses. */
int ferry__zarr_anndata(const char *store, const zarr_walk *w,
                        ferry__ad_array **out, int64_t *n_obs, ferry__err *err);
/** Free what ferry__zarr_anndata made (n arrays); NULL is fine. */
void ferry__zarr_anndata_free(ferry__ad_array *a, int n);

#endif /* FERRY_ZARR_META_H */
