/*
 * core/manifest.h - the dataset manifest: variables and parts, and its
 * records: packed for the broadcast, hashed, freed, and the checks a
 * backend's io_read makes against it (core/manifest.c).  Built on rank 0
 * by the scan and saved and loaded as JSON one layer up, above the
 * backends (dataset/dataset.h).
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
  /* 1: a ragged variable (docs/ragged.md): sample i of a part is rows
   * [roff[i], roff[i+1]) of its values, each row of row_shape (the inner
   * shape, row_ndim may be 0) and row_bytes; 0: every sample is one row;
   * 2: ragged, its values in compressed chunks (Zarr vlen), so the
   * offsets are not bounded by the part's file size. */
  int ragged;
  /* Storage layout, as the backend's describe() saw it in the first part
   * (later parts may differ; only the plan's chunk alignment and ferry info
   * use these, never the reads). */
  int64_t chunk_rows; /* storage chunk along the sample dimension, 0: none */
  size_t cache_bytes; /* decode cache the backend keeps per open file for
                       * this variable (HDF5/netCDF chunk cache), 0: none */
  char *storage;      /* for ferry info: "chunks (1024, 256), gzip(1),
                       * 3.1:1"; malloc'd, may be NULL */
  int64_t width;      /* the columns of the sparse matrix whose rows this
                       * ragged variable holds (an AnnData CSR matrix's
                       * indices or data: n_vars); 0: none */
  char *categories;   /* the names of a categorical variable's codes, code
                       * k the k-th, '\n'-joined (an AnnData obs column);
                       * malloc'd, NULL: none */
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
  /* [nvars], NULL when no variable is ragged: for a ragged variable v,
   * roff[v][i] (i in [0, num_samples]) is the first value row of sample
   * i, counted from the part's first value (roff[v][0] == 0); the values
   * are contiguous from data_offset[v] in sample order.  NULL for a dense
   * variable.  Read from the format's index by describe on rank 0 and
   * broadcast with the manifest (never the payload). */
  int64_t **roff;
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
  /* cache=node|cluster: the loader's cache (loader/cache.c), which the
   * cache backend's io_open finds here; NULL otherwise.  Never saved or
   * shared, and not owned: the loader frees the cache. */
  void *cache;
  /* A saved manifest's ragged offsets mapped from its PATH.roff
   * (core/roffmap.c): the parts' roff[v] point into it and are not freed
   * one by one; NULL: each roff[v] is its own allocation. */
  struct ferry__roff_map *roff_map;
  /* A saved manifest's records mapped from its PATH.recs (dataset/json.c,
   * decision 0066): the parts' rec[v].p point into it and are not freed one
   * by one; NULL: each record is its own allocation. */
  struct ferry__roff_map *rec_map;
  /* A virtual dataset's source (loader/pack.c: the packed rows of a token
   * corpus), owned and freed with it; NULL for a dataset of files.  Made
   * on every rank from the shared source, never packed or sent. */
  struct ferry__manifest *inner;
  /* A virtual dataset over a mix (inner is the mix, one part per source):
   * each source's own manifest, unpacked from the mix's records [nsrcs],
   * owned and freed with it; NULL otherwise. */
  struct ferry__manifest *srcs;
  int64_t nsrcs;
  /* A virtual dataset's own data (loader/pack.c: each source's tokens per
   * run of documents, made once at open), freed with it by aux_free;
   * never packed, sent or hashed. */
  void *aux;
  void (*aux_free)(void *);
} ferry__manifest;

/* ---- Mapped offsets (core/roffmap.c) ---- */

/* The offsets' file of a saved manifest (dataset/json.c): "FRYO", version
 * 1 or 2, three zero bytes, the count (u64), the offsets (int64), a
 * checksum, all little-endian. */
#define FERRY__ROFF_MAGIC "FRYO"
#define FERRY__ROFF_HEAD 16
/* Passes over whole arrays of mapped offsets drop what they read every
 * this many offsets (8 MiB). */
#define FERRY__TRIM_STEP ((int64_t)1 << 20)

/* The records' file of a saved manifest (decision 0066): "FRYR", version
 * 1, three zero bytes, the count of 8-byte words of records (u64), the
 * records, each from a multiple of 8 bytes, a checksum (ferry__hash_words
 * of everything before it); mapped and checked as the offsets' file is. */
#define FERRY__RECS_MAGIC "FRYR"

typedef struct ferry__roff_map {
  const char *what; /* "offsets' file", "records' file": for messages */
  char *path;       /* the file, as the manifest named it          */
  void *addr;       /* the whole file, read-only, shared           */
  size_t len;       /* its bytes                                   */
  int64_t count;    /* the offsets it holds                        */
  uint64_t fnv;     /* its checksum (the last 8 bytes)             */
  int version;      /* the file's version (1: FNV-1a, 2: word hash) */
  /* each checked array's own hash (the manifest hash's term), by where
   * it starts: one pass over the file checks and hashes it */
  int64_t ndig, capdig;
  int64_t *dig_at;
  uint64_t *dig;
  /* the hash of each block of the file (FERRY__TRIM_STEP offsets' bytes
   * from its start, the checksum aside; ferry__hash_words), taken by rank 0
   * in its check of every byte and sent with the manifest: each other rank
   * hashes its share of the blocks against them (ferry__roff_map_verify),
   * not the whole file.  nblk 0: none (not shared yet). */
  int64_t nblk;
  uint64_t *blk;
  int deferred; /* unpacked without its pass: the arrays' hashes from the
                 * buffer, the bytes left to ferry__roff_map_verify */
} ferry__roff_map;

/** 1 when offsets can be mapped (a little-endian host). */
int ferry__roff_map_supported(void);
/** Map the offsets' file at path, checking its size (count offsets), header
 *  and trailing checksum (fnv) -- not every byte: rank 0 checked those when
 *  it loaded the manifest (dataset/json.c). */
int ferry__roff_map_open(const char *path, int version, int64_t count,
                         uint64_t fnv, ferry__roff_map **out, ferry__err *err);
/** The same for any side file of a saved manifest: magic (4 bytes), what
 *  it is called in messages (a static string), count 8-byte words. */
int ferry__side_map_open(const char *path, const char *magic, const char *what,
                         int version, int64_t count, uint64_t fnv,
                         ferry__roff_map **out, ferry__err *err);
void ferry__roff_map_close(ferry__roff_map *mp);
/** Rank 0's check of a side file it mapped: every byte before the checksum
 *  hashed (FNV-1a when fnv1a, else ferry__hash_words) into *sum, each
 *  block's hash into mp->blk (nblk set) for the other ranks'
 *  ferry__roff_map_verify, each block's pages dropped after.  0 or
 *  FERRY_ENOMEM. */
int ferry__side_map_check(ferry__roff_map *mp, int fnv1a, uint64_t *sum);
/** 1 when p lies in m's mapped records (not to be freed). */
int ferry__manifest_owns_rec(const ferry__manifest *m, const void *p);
/** The blocks of mp's file (see nblk): how many, and block k's hash. */
int64_t ferry__roff_map_nblocks(const ferry__roff_map *mp);
uint64_t ferry__roff_map_block_hash(const ferry__roff_map *mp, int64_t k);
/** Rank `rank` of `size` (rank 0 checked every byte): the hash of each of
 *  its blocks (k = rank - 1, rank - 1 + size - 1, ...) against mp->blk,
 *  each block's pages dropped after.  0, or FERRY_EFORMAT naming the file
 *  and the bytes that differ from rank 0's. */
int ferry__roff_map_verify(const ferry__roff_map *mp, int rank, int size,
                           ferry__err *err);
/** The at-th offset of the file (at < count). */
const int64_t *ferry__roff_map_at(const ferry__roff_map *mp, int64_t at);
/** Where o lies in the file (in offsets), -1 when it is not inside it. */
int64_t ferry__roff_map_pos(const ferry__roff_map *mp, const int64_t *o);
/** 1 when o lies in m's mapped offsets (not to be freed). */
int ferry__manifest_owns_roff(const ferry__manifest *m, const int64_t *o);
/** Drop the rank's pages of m's mapped offsets in [lo, hi) (NULL: the
 *  whole file, and those of the datasets under a view: m->inner, m->srcs)
 *  from its resident set; nothing when m maps none.  Any time, from any
 *  thread: a page dropped is read again when touched. */
void ferry__manifest_trim(const ferry__manifest *m, const void *lo,
                          const void *hi);
/** Drop the pages of m's mapped offsets within FERRY__TRIM_NEAR bytes of
 *  o: what one read of o brought in (the page, and the ones around it the
 *  kernel maps with it: fault-around, 64 KiB by default, or the page
 *  cache's whole folio, up to 2 MiB, on kernels with large folios: 1.6 MiB
 *  a touch on average measured on Linux 6.18). */
#define FERRY__TRIM_NEAR ((size_t)2 << 20)
void ferry__manifest_trim_near(const ferry__manifest *m, const int64_t *o);
/** In a pass over o[0..n): every FERRY__TRIM_STEP offsets, the step just
 *  read is dropped (call with each i; inline: a test per offset). */
static inline void ferry__manifest_trim_step(const ferry__manifest *m,
                                             const int64_t *o, int64_t i) {
  if (m && m->roff_map && i > 0 && (i & (FERRY__TRIM_STEP - 1)) == 0)
    ferry__manifest_trim(m, o + i - FERRY__TRIM_STEP, o + i);
}
/** Remember the hash of the mapped array at o (checked); 0, or -1 when
 *  out of memory (it is then computed again when asked). */
int ferry__roff_map_remember(ferry__roff_map *mp, const int64_t *o,
                             uint64_t digest);
/** The remembered hash of the mapped array at o: 1 and *digest, or 0. */
int ferry__roff_map_recall(const ferry__roff_map *mp, const int64_t *o,
                           uint64_t *digest);
/** ferry__manifest_roff_bad and, in the same pass, the array's hash (what
 *  it puts in the manifest hash) remembered when m maps it. */
const char *ferry__manifest_roff_check(const ferry__manifest *m,
                                       const ferry__part *pt, int v,
                                       const int64_t *o);

/* The most samples (2^48) and bytes (2^60: every selected variable) of a
 * dataset ferry serves: larger counts come from corrupt metadata, and every
 * loop over chunks ends below them (issue 30). */
#define FERRY__MAX_SAMPLES ((int64_t)1 << 48)
#define FERRY__MAX_DATASET_BYTES ((int64_t)1 << 60)

/** Value rows of samples [row, row+n) of ragged variable var of part
 *  (n when var is dense). */
static inline int64_t ferry__part_rows(const ferry__part *pt, int var,
                                       int64_t row, int64_t n) {
  return pt->roff && pt->roff[var] ? pt->roff[var][row + n] - pt->roff[var][row]
                                   : n;
}
/** 1 when a variable of m is ragged. */
int ferry__manifest_ragged(const ferry__manifest *m);
/** Its last check alone (ferry__manifest_roff_bad's): the last offset
 *  within the file (ragged 1). */
const char *ferry__manifest_roff_bad_end(const ferry__manifest *m,
                                         const ferry__part *pt, int v,
                                         const int64_t *o);
/** Why o, the offsets of ragged variable v of part pt (num_samples + 1),
 *  cannot be: not from 0, decreasing, or (ragged 1) past the file's end;
 *  NULL when they can. */
const char *ferry__manifest_roff_bad(const ferry__manifest *m,
                                     const ferry__part *pt, int v,
                                     const int64_t *o);

/** Serialise to a flat buffer (malloc'd) for MPI_Bcast, and back. */
int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len);
/** The bytes ferry__manifest_pack makes of m (an out-of-memory message). */
size_t ferry__manifest_packed_size(const ferry__manifest *m);
int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err);
/** The same; with defer, mapped offsets are not read here: each array's
 *  hash is the buffer's, and the caller checks the file's bytes with
 *  ferry__roff_map_verify (dataset/share.c: each rank a share of the
 *  blocks, rank 0 having read every byte). */
int ferry__manifest_unpack_ex(const void *buf, size_t len, int defer,
                              ferry__manifest *m, ferry__err *err);
/** Hash of everything that identifies the data (paths, sizes, shapes). */
uint64_t ferry__manifest_hash(const ferry__manifest *m);
/** The hash before version 3 (the notes in it): what states saved before
 *  2026-11-29 hold, still accepted when resuming (loader/checkpoint.c). */
uint64_t ferry__manifest_hash_v2(const ferry__manifest *m);
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
