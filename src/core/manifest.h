/*
 * core/manifest.h - the dataset manifest: variables and parts, built on rank
 * 0 by scanning the dataset with the backends, broadcast packed, saved and
 * loaded as JSON (core/manifest.c).
 */
#ifndef FERRY_MANIFEST_H
#define FERRY_MANIFEST_H

#include "util/util.h"

/** One variable, as the batch will hold it. */
typedef struct ferry__var {
  char *name;
  ferry_dtype dtype;
  int swapped;  /* stored non-native: swap after read */
  int row_ndim; /* dims after the sample dimension    */
  int64_t row_shape[FERRY_MAX_DIMS];
  size_t row_bytes;
  /* Storage layout, as the backend's describe() saw it in the first part
   * (later parts may differ; only the plan's chunk alignment and ferry info
   * use these, never the reads). */
  int64_t chunk_rows; /* storage chunk along the sample dimension, 0: none */
  size_t cache_bytes; /* decode cache the backend keeps per open file for
                       * this variable (HDF5/netCDF chunk cache), 0: none */
  char *storage;      /* for ferry info: "chunks (1024, 256), gzip(1),
                       * 3.1:1"; malloc'd, may be NULL */
} ferry__var;

/**
 * A backend's own record of one variable of one part: what it needs at read
 * time that the fields of ferry__part do not say (the Zarr backend: its
 * reader and the hash of the .zarray).  Opaque bytes to the core, which
 * packs, hashes, saves (hex in the manifest JSON) and loads them; the
 * backend's record_version (backend.h) says how to read them.
 */
typedef struct ferry__blob {
  unsigned char *p; /* malloc'd, NULL when len is 0                 */
  size_t len;
} ferry__blob;

/** One part: a file per variable (npy) or one file holding all variables. */
typedef struct ferry__part {
  int64_t num_samples;
  int64_t first_sample; /* global index of its first sample              */
  char **paths;         /* [nvars] file holding each variable            */
  int64_t *data_offset; /* [nvars] byte offset of row 0 in that file     */
  int64_t *file_size;   /* [nvars] size seen by rank 0 (checked on open) */
  ferry__blob *rec;     /* [nvars] backend records, or NULL: none        */
} ferry__part;

typedef struct ferry__manifest {
  char *backend; /* "npy", "mem", ...                            */
  char *spec;    /* dataset string as given to ferry_open        */
  int nvars;
  ferry__var *vars;
  int64_t nparts;
  ferry__part *parts;
  int64_t num_samples;
  uint64_t hash;      /* ferry__manifest_hash()                       */
  char *notes;        /* the first part's describe notes, or NULL     */
  int record_version; /* the backend's record_version when the parts'
                       * records were made; 0: no record            */
} ferry__manifest;

/**
 * Rank 0 only: resolve spec (directory, .npy file, glob, @list) into parts,
 * describe every part with its backend, check that they agree, select the
 * variables named in vars (NULL/"": all) and fill m.  opts (NULL: defaults)
 * is handed to every describe, for the backends' own options.  Returns 0 or a
 * negative code with err set.
 */
int ferry__manifest_scan(const char *spec, const char *vars,
                         const ferry_options *opts, ferry__manifest *m,
                         ferry__err *err);
/* The most samples (2^48) and bytes (2^60: every selected variable) of a
 * dataset ferry serves: larger counts come from corrupt metadata, and every
 * loop over chunks ends below them (issue 30). */
#define FERRY__MAX_SAMPLES ((int64_t)1 << 48)
#define FERRY__MAX_DATASET_BYTES ((int64_t)1 << 60)
/**
 * Rank 0, after the variables are selected (core/limits.c): FERRY_ENOTSUP
 * naming spec (the dataset or saved manifest) when a selected variable has
 * empty rows, or when the dataset holds more than FERRY__MAX_SAMPLES
 * samples or FERRY__MAX_DATASET_BYTES bytes (the count and the limit in
 * the message); else 0.
 */
int ferry__manifest_check_servable(const ferry__manifest *m, const char *spec,
                                   ferry__err *err);
/**
 * FERRY_EFORMAT when two of m's variables share a name or one has an empty
 * name (what ferry__manifest_unpack refuses), naming the dataset, the part
 * and both variables; else 0.  ferry__manifest_scan calls it after the
 * vars selection, so selecting the other variables serves them.
 * (core/manifest_share.c)
 */
int ferry__manifest_check_names(const ferry__manifest *m, ferry__err *err);
/**
 * COLLECTIVE.  Every rank unpacks buf (len bytes, rank 0's packed m) --
 * rank 0 into a scratch copy, checked against m's hash, the others into m
 * -- and the ranks agree: 0 everywhere, or the lowest failing rank's error
 * on every rank (m then freed on the ranks that unpacked into it).
 */
int ferry__manifest_unpack_agree(MPI_Comm comm, int rank, const void *buf,
                                 size_t len, ferry__manifest *m,
                                 ferry__err *err);
/**
 * COLLECTIVE.  Rank 0 passes rc, its result of building m (0, or a negative
 * code with err set); it packs m and broadcasts it with rc, and every rank
 * (rank 0 too) unpacks it and agrees (ferry__manifest_unpack_agree): the
 * manifest every rank holds is one every rank accepts, with one outcome
 * on one rank and on many.  The other ranks' m must be empty (zeroed).
 */
int ferry__manifest_share(MPI_Comm comm, int rank, int rc, ferry__manifest *m,
                          const char *dataset, ferry__err *err);
/** Serialise to a flat buffer (malloc'd) for MPI_Bcast, and back. */
int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len);
/** The bytes ferry__manifest_pack makes of m (an out-of-memory message). */
size_t ferry__manifest_packed_size(const ferry__manifest *m);
int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err);
/** Hash of everything that identifies the data (paths, sizes, shapes). */
uint64_t ferry__manifest_hash(const ferry__manifest *m);
/** JSON save/load (jansson); load re-applies the vars selection. */
int ferry__manifest_save_json(const ferry__manifest *m, const char *path,
                              ferry__err *err);
int ferry__manifest_load_json(const char *path, const char *vars,
                              ferry__manifest *m, ferry__err *err);
/** The same from the len bytes of a saved manifest held in memory (path
 *  names it in errors); the fuzz harness's entry point. */
int ferry__manifest_load_json_text(const char *text, size_t len,
                                   const char *path, const char *vars,
                                   ferry__manifest *m, ferry__err *err);
void ferry__manifest_free(ferry__manifest *m);
/** For a backend's io_read: FERRY_EINTERNAL naming part, variable and rank
 *  when (part, var) is not in m (only a caller bug gets there), else 0. */
int ferry__check_part_var(const ferry__manifest *m, int64_t part, int var,
                          int rank, ferry__err *err);
/** For a backend's io_read, after ferry__check_part_var: FERRY_EINTERNAL
 *  naming rows, file, variable and rank when rows [row, row+nrows) are not
 *  inside the part (overflow-safe; only a caller bug gets there), else 0. */
int ferry__check_rows(const ferry__manifest *m, int64_t part, int var,
                      int64_t row, int64_t nrows, int rank, ferry__err *err);

#endif /* FERRY_MANIFEST_H */
