/*
 * backends/zarr/zarr.h - private to the zarr backend's folder: the types
 * its files share (an array's .zarray, the record, the per-loader I/O
 * state) and the functions one file offers the others.  meta.c reads the
 * metadata files and parses v2 .zarray, v3.c v3 zarr.json, store.c walks
 * a store's layout, names its chunk files and reads an array's metadata
 * from its directory, describe.c describes a store
 * (rank 0; meta.h is shared by those four), bounds.c judges the sizes
 * derived from the metadata, native.c is ferry's own chunk reader, netcdf.c the
 * NCZarr reader (built with netCDF-C only), zarr.c the vtable: probe and
 * the io_* dispatch.  Nothing outside this folder includes it.
 */
#ifndef FERRY_ZARR_H
#define FERRY_ZARR_H

#include "backends/backend.h"
#include "backends/toolkit.h"
#include "codecs/codec.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define Z_MAX_DIMS (FERRY_MAX_DIMS + 1)
#define Z_MAX_CODECS 8

/* One array's metadata, as .zarray gives it. */
typedef struct zmeta {
  int ndim;
  int64_t shape[Z_MAX_DIMS];
  int64_t chunks[Z_MAX_DIMS];
  ferry_dtype dtype;
  int swapped; /* stored non-native                      */
  size_t itemsize;
  int ncodecs; /* encode order: filters..., compressor   */
  int codec[Z_MAX_CODECS];
  unsigned param[Z_MAX_CODECS];
  int has_compressor;
  char sep; /* dimension_separator: '.' or '/'        */
  int has_fill;
  unsigned char fill[8]; /* fill value, stored byte order          */
  char codecs_text[160]; /* "blosc(lz4, shuffle) + shuffle(4)"     */
  size_t chunk_bytes;    /* bytes of one decoded chunk             */
  int64_t across;        /* chunks spanning one row band           */
  /* Zarr v3 (zarr.json).  With sharding, chunks[] is the inner chunk (the
   * unit the reader decodes) and shard[] the chunk grid's chunk (one shard
   * file); codec[] is then the inner chunks' chain. */
  int nested_legacy; /* v2, no dimension_separator, nested chunks  */
  int v3;
  int key_c;                 /* chunk keys "c/0/1" (v3 default encoding)  */
  int crc;                   /* each (inner) chunk ends with its crc32c   */
  int sharded;               /* sharding_indexed                          */
  int index_start;           /* the shard index is at the shard's start   */
  int index_crc;             /* the shard index ends with its crc32c      */
  int index_swapped;         /* the shard index is big-endian on this host */
  int64_t shard[Z_MAX_DIMS]; /* shard shape                     */
  int64_t per_shard[Z_MAX_DIMS]; /* inner chunks per shard, per dim  */
  int64_t n_inner;               /* inner chunks per shard           */
  size_t index_bytes;            /* bytes of one shard index         */
  /* The fields above are hashed for v3 (ZMETA_HASHED). */
  uint64_t hash;     /* FNV-1a of the .zarray bytes (v2), of the
                        fields above (v3)                      */
  int64_t meta_size; /* .zarray's size (v2), a constant (v3)   */
  /* Not hashed: the name of dimension 0 (v3 dimension_names, v2
   * _ARRAY_DIMENSIONS of .zattrs, read by describe), or "". */
  char dim0[64];
  /* Variable-length (object dtype "|O" with a numcodecs vlen filter, v2):
   * 1 vlen-utf8 or vlen-bytes (a ragged uint8 of the bytes), 2 vlen-array
   * (a ragged variable of its dtype); 0 a dense array.  Then the codec
   * chain is the compressor alone (zarr/vlen.c). */
  int vlen;
} zmeta;

#define ZMETA_HASHED offsetof(zmeta, hash)

/* ---- The record (zarr.c) ---------------------------------------------- */

/*
 * The zarr backend's record of one variable of one part (ferry__blob,
 * record version ZREC_VERSION): u8 reader (ZREC_NATIVE or ZREC_NETCDF),
 * then the FNV-1a hash of its .zarray as u64 little-endian.  The manifest
 * packs, hashes and saves it; only this folder reads it.
 */
#define ZREC_VERSION 1
#define ZREC_LEN 9
enum { ZREC_NATIVE = 0, ZREC_NETCDF = 1 };

/** Fill b (malloc'd); -1 out of memory. */
int ferry__zarr_rec_put(ferry__blob *b, int reader, uint64_t hash);
/** Variable v's record in part pt; FERRY_EFORMAT naming the store when it
 *  is missing or malformed (a manifest another ferry saved). */
int ferry__zarr_rec_get(const ferry__manifest *m, const ferry__part *pt, int v,
                        int rank, int *reader, uint64_t *hash, ferry__err *err);

/* ---- Metadata: meta.c (v2 .zarray), v3.c (zarr.json), store.c (layout,
 * chunk paths, an array's metadata from its directory), describe.c (the
 * vtable's describe).  Calls run describe.c -> store.c -> v3.c -> meta.c,
 * never back. --------------------------------------------------------- */

/** Parse ADIR/.zarray into z; errors name label (the array). */
int ferry__zarr_parse_zarray(const char *adir, const char *label, zmeta *z,
                             ferry__err *err);
/** Parse the text of a .zarray (len bytes; path names it in errors, label
 *  the array) into z: FERRY_EFORMAT for corrupt metadata (naming path and
 *  the field), FERRY_ENOTSUP for what ferry cannot serve (naming label).
 *  Every product of sizes it reads is checked to fit in 64 bits. */
int ferry__zarr_parse_zarray_text(const char *text, size_t len,
                                  const char *path, const char *label, zmeta *z,
                                  ferry__err *err);
/** chunk_bytes and across of z from its shape, chunks and itemsize
 *  (bounds.c): FERRY_EFORMAT naming path and the field when a product of
 *  sizes overflows, a band of chunks exceeds 2^60 bytes, or a chunk that
 *  reaches past a non-empty array would decode to more than 1 GiB. */
int ferry__zarr_derive_sizes(const char *path, zmeta *z, ferry__err *err);
/** Parse one v3 array's metadata (a zarr.json object, j: a json_t *) into
 *  z; the same errors as ferry__zarr_parse_zarray_text. */
int ferry__zarr_parse_v3(const void *j, const char *path, const char *label,
                         zmeta *z, ferry__err *err);
/** Parse the text of a zarr.json (an array's) into z. */
int ferry__zarr_parse_v3_text(const char *text, size_t len, const char *path,
                              const char *label, zmeta *z, ferry__err *err);
/** 1 when the store directory is itself one array (.zarray, or a zarr.json
 *  whose node_type is "array"). */
int ferry__zarr_root_is_array(const char *store);
/** CRC-32C (Castagnoli) of n bytes, as Zarr v3's crc32c codec stores it. */
uint32_t ferry__crc32c(const void *p, size_t n);
/** Check the text of a .zgroup (len bytes; path names it in errors): a
 *  JSON object whose zarr_format is 2; FERRY_EFORMAT for corrupt JSON,
 *  FERRY_ENOTSUP for another format. */
int ferry__zarr_parse_zgroup_text(const char *text, size_t len,
                                  const char *path, ferry__err *err);
/** 1 when dir/name exists and is a directory (want_dir) or a file. */
int ferry__zarr_exists_in(const char *dir, const char *name, int want_dir);
/** The store directory of a dataset string: a directory, or
 *  file://PATH#mode=... (the path part); malloc'd, NULL out of memory. */
char *ferry__zarr_store_dir(const char *spec);
/** Directory of array name in store (the store itself for a root array). */
char *ferry__zarr_array_dir(const char *store, const char *name,
                            int root_array);
/** Path of the chunk file of chunk index idx (ndim entries); for a sharded
 *  array idx is an inner chunk's and the path is its shard's. */
char *ferry__zarr_chunk_path(const char *adir, const zmeta *z,
                             const int64_t *idx);
/** The bytes ferry__zarr_chunk_path allocates for idx (for its
 *  out-of-memory message). */
size_t ferry__zarr_chunk_path_bytes(const char *adir, const zmeta *z,
                                    const int64_t *idx);
/** The vtable's describe (rank 0). */
int ferry__zarr_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err);

/* The largest chunk file the native reader accepts for a chunk of n
 * decoded bytes: above what any codec stores for incompressible data (lz4
 * adds n/255 + 16 bytes, zstd about n/256, blosc 16, zlib and gzip less),
 * so a larger file is corrupt.  Its read buffer has this size. */
static inline size_t zarr_stored_bound(size_t n) { return n + n / 16 + 4096; }

/* Chunks along dimension d: ceil(shape / chunks), without the overflow of
 * shape + chunks - 1 near INT64_MAX. */
static inline int64_t zarr_nchunks(const zmeta *z, int d) {
  return z->shape[d] / z->chunks[d] + (z->shape[d] % z->chunks[d] != 0);
}

/* 1 when a decoded chunk is c0 whole rows of the array, laid out as in the
 * read buffer: chunked on dimension 0 only, with chunks no larger than the
 * array on the others.  Such a chunk is decoded straight into the rows of a
 * read, or of the band. */
static inline int zarr_chunk_is_rows(const zmeta *z) {
  for (int d = 1; d < z->ndim; d++)
    if (z->chunks[d] != z->shape[d])
      return 0;
  return 1;
}

/* ---- Per-loader I/O state (zarr.c) ------------------------------------ */

/* ---- Reads (I/O thread) ----------------------------------------------- */

/* The I/O state's decoding: chunks whose stored bytes the I/O thread read
 * are decoded on the pool, lane k of a variable (its own buffers) taking
 * the k-th chunk queued since the last wait, whatever the variable.  With
 * defer (ferry__io_params.defer) a read returns with its chunks queued and
 * io_wait settles them. */
typedef struct zdecode {
  ferry__pool *pool;
  int nlanes;
  int busy;       /* lanes holding a queued chunk                        */
  int defer;      /* reads return with chunks queued                     */
  int rc;         /* the error of a wait no read reported yet (a store    */
  ferry__err err; /* closed by the handle cache waits first)        */
} zdecode;

typedef struct zvar {
  zmeta z;
  char *adir;     /* array directory                         */
  int gid, varid; /* netCDF handles                          */
  /* The native reader's buffers, allocated at first use and kept while
   * the store is open (describe counted them in cache_bytes). */
  int64_t band;             /* dim-0 chunk held in band_buf, or -1     */
  unsigned char *band_buf;  /* c0 rows of the array                    */
  unsigned char *chunk_buf; /* one decoded chunk, when chunks are not rows */
  unsigned char *raw;       /* a chunk file's stored bytes (compressed) */
  unsigned char *mid;       /* a middle stage of a chain of codecs      */
  /* Sharded arrays: the indexes of recently read shards (direct-mapped by
   * the shard's linear number; nslots * index_bytes, counted in
   * cache_bytes) and the shard file last opened. */
  int nslots;
  int64_t *slot_key;    /* [nslots], -1 empty                        */
  uint64_t *slot_ix;    /* [nslots][2 * n_inner] offset, nbytes       */
  unsigned char *ixraw; /* one index as stored                     */
  int shard_fd;         /* -1 none                                   */
  int64_t shard_key;    /* linear number of the shard of shard_fd    */
  int64_t shard_size;   /* its size                                   */
  /* Parallel decoding (native.c): the I/O state's pool and the lanes this
   * variable decodes on; lane 0 uses raw and mid above, lanes 1.. their
   * own (allocated at first use, counted in cache_bytes by describe). */
  struct zdecode *dec; /* the I/O state's                           */
  struct zlane *lane;  /* [dec->nlanes]                              */
} zvar;

/* Shard index slots kept per variable: a few MiB at most. */
#define Z_SLOTS_BYTES ((size_t)16 << 20)
#define Z_SLOTS_MAX 64
static inline int zarr_nslots(const zmeta *z) {
  size_t n = z->index_bytes ? Z_SLOTS_BYTES / z->index_bytes : 1;
  return n < 1 ? 1 : n > Z_SLOTS_MAX ? Z_SLOTS_MAX : (int)n;
}

typedef struct zpart {
  int64_t part;
  char *store; /* its directory, named in messages (queued chunks' too) */
  int ncid;    /* netCDF, -1 with the native reader   */
  zvar *v;     /* [nvars]                              */
} zpart;

struct ferry__io {
  ferry__io_base b; /* manifest, rank; b.files: the open stores, var -1
                       (io_base.c, backends/toolkit.c) */
  zdecode dec;
};

/* ---- The native reader (native.c) ------------------------------------- */

/** Free what a zvar holds (its lanes first: queued chunks use its
 *  buffers), closing its shard. */
void ferry__zarr_var_free(zvar *zv);

/** Check chunk file p before a read: 1 present, 0 absent (fill value), or
 *  an error naming the file; *size receives its size. */
int ferry__zarr_check_chunk(const zvar *zv, const char *p, const char *store,
                            const char *vname, int rank, int64_t row,
                            ferry__err *err, off_t *size);
/** Free zv's decode lanes (the queued chunks waited for first, an error
 *  kept in zv->dec for the next read or io_wait). */
void ferry__zarr_lanes_free(zvar *zv);
/** Wait for the queued chunks: the first one's error (in queue order), or
 *  one kept by an earlier wait, wins over rc. */
int ferry__zarr_settle(zdecode *d, int rc, ferry__err *err);
/** Rows [row, row+nrows) of zv into buf (stored byte order); the chunks a
 *  read covers whole are decoded on zv->pool, waited for before return. */
int ferry__zarr_native_read(zvar *zv, const char *store, const char *vname,
                            int rank, int64_t row, int64_t nrows,
                            size_t row_bytes, unsigned char *buf,
                            ferry__err *err);

/* ---- Variable-length arrays (vlen.c) ------------------------------------ */

/** The lengths of the n items of vlen array (adir, z), as offsets (n + 1,
 *  in elements), every chunk read and decoded once (rank 0, describe);
 *  *out malloc'd.  Errors name the chunk file and the item. */
int ferry__zarr_vlen_offsets(const char *adir, const zmeta *z, int64_t n,
                             int64_t **out, ferry__err *err);
/** The first k items of a decoded vlen chunk d[len] (u32 count, then u32
 *  length + bytes per item): their lengths in elements of el bytes into
 *  lens, where their bytes start into at (may be NULL).  0, or
 *  FERRY_EFORMAT with why naming the item (fuzz_zarr_vlen). */
int ferry__zarr_vlen_items(const unsigned char *d, size_t len, int64_t k,
                           size_t el, int64_t *lens, size_t *at, char *why,
                           size_t wl);
/** Rows [row, row+nrows) of a vlen array into buf, one item after the
 *  other, each length checked against roff (the part's offsets). */
int ferry__zarr_vlen_read(const zvar *zv, const char *store, const char *vname,
                          int rank, int64_t row, int64_t nrows, size_t el,
                          const int64_t *roff, unsigned char *buf,
                          ferry__err *err);

/* ---- The netCDF reader (netcdf.c, HAVE_NCZARR only) ------------------- */

#ifdef HAVE_NCZARR
/** Open store with netCDF-C into p (ncid, every variable's gid/varid),
 *  checking that netCDF-C sees each array as its .zarray describes it and
 *  can apply its whole codec chain; bounds its chunk caches. */
int ferry__zarr_nc_open(zpart *p, const ferry__manifest *m, const char *store,
                        int rank, ferry__err *err);
void ferry__zarr_nc_close(zpart *p);
int ferry__zarr_nc_read(zvar *zv, const char *store, const char *vname,
                        int rank, int64_t row, int64_t nrows, size_t row_bytes,
                        void *buf, ferry__err *err);
#endif

#endif /* FERRY_ZARR_H */
