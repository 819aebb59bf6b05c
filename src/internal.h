/*
 * internal.h - declarations shared between ferry's source files and never
 * installed.  Names here use the ferry__ prefix; everything else in a .c file
 * is static.  The three pieces a backend or the core need are here: the error
 * record (ferry__err), the dataset manifest (ferry__manifest) that rank 0
 * builds and broadcasts, the backend vtable (ferry__backend), and the pure
 * epoch-plan functions (ferry__plan_*).
 */
#ifndef FERRY_INTERNAL_H
#define FERRY_INTERNAL_H

#include "ferry.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define FERRY__MSG_MAX 1024

/* ---- Errors ----------------------------------------------------------- */

/** A failure: code plus a message naming file, variable, rank and offset. */
typedef struct ferry__err {
  int code;
  char msg[FERRY__MSG_MAX];
} ferry__err;

/** Record code and a printf-style message in err (may be NULL); returns code.
 *  Also copies the message to the calling thread's last-error buffer. */
int ferry__seterr(ferry__err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Set the calling thread's last-error message (ferry_last_error(NULL)). */
void ferry__set_thread_error(const char *msg);
/** The calling thread's last-error message. */
const char *ferry__thread_error(void);
/**
 * One MPI-IO read of n bytes at off into buf, collective
 * (MPI_File_read_at_all) when coll.  FERRY_EIO when the call fails
 * ("<call> failed: WHERE, offset O, N bytes: <MPI's words>") or reads fewer
 * bytes ("short read: WHERE, offset O: got G of N bytes"); WHERE names file,
 * variable and rank ("file f.npy, variable x, rank 3").  A zero-byte read is
 * not checked: ROMIO leaves its status stale.
 */
int ferry__mpi_read(MPI_File fh, int coll, MPI_Offset off, void *buf, int n,
                    const char *where, ferry__err *err);
/** The FERRY_E* code for an errno value (ENOENT -> FERRY_ENOENT, ...). */
int ferry__errno_code(int e);

/** dtype from its ferry_dtype_name() ("float32"); 0 or FERRY_EINVAL. */
int ferry__dtype_from_name(const char *name, ferry_dtype *out);
/**
 * The synthetic value of element k of sample i, as `ferry gen` and the mem
 * backend write it: (i + k) mod M(dtype), M = 2^7 int8, 2^8 uint8, 2^15
 * int16, 2^16 uint16, 2^31 int32, 2^32 uint32, 2^62 (u)int64, 2^11 float16,
 * 2^24 float32, 2^53 float64, 2 bool.  Writes one native element to out.
 */
int ferry__gen_value(ferry_dtype dtype, int64_t sample, int64_t k, void *out);

/**
 * Large buffers (read buffers, the plan's slots): mmap with MAP_POPULATE
 * where available, so the kernel fills the page tables in one call -- about
 * 4x cheaper than a fault per 4 KiB page on first touch, which dominated the
 * first epoch.  The usable size is stored in the FERRY__BIG_HDR bytes in
 * front of the returned pointer (ferry__big_size).  NULL on failure.
 */
#define FERRY__BIG_HDR 64
void *ferry__big_alloc(size_t bytes);
void ferry__big_free(void *p);
size_t ferry__big_size(const void *p);

/* ---- Options (options.c) ---------------------------------------------- */

enum { FERRY__SHUFFLE_NONE = 0, FERRY__SHUFFLE_CHUNKS, FERRY__SHUFFLE_BLOCK };
enum { FERRY__PART_CONTIGUOUS = 0, FERRY__PART_STRIDED };
enum { FERRY__TAIL_DROP = 0, FERRY__TAIL_PAD, FERRY__TAIL_PARTIAL };
enum { FERRY__IO_INDEPENDENT = 0, FERRY__IO_COLLECTIVE };
enum { FERRY__DEV_AUTO = 0, FERRY__DEV_CPU, FERRY__DEV_CUDA };
enum {
  FERRY__SIG_NONE = 0, FERRY__SIG_USR1, FERRY__SIG_USR2, FERRY__SIG_TERM,
  FERRY__SIG_INT, FERRY__SIG_HUP, FERRY__SIG_XCPU
};

struct ferry_options {
  int64_t batch_size;
  uint64_t seed;
  int shuffle;
  int64_t block_size;
  int64_t shuffle_buffer;
  int partition;
  int tail;
  int64_t chunk_samples;   /* 0: auto (about FERRY__AUTO_CHUNK_BYTES per chunk) */
  char *vars;              /* comma-separated names, NULL or "": all          */
  int io;
  int64_t prefetch;
  int64_t threads;
  int64_t max_chunks;      /* 0: all */
  double fraction;         /* (0, 1] */
  int device;
  char *devices;           /* "auto", "all" or "0,1" (validated)             */
  int64_t device_prefetch; /* device ring depth                              */
  int keep_host;
  char *manifest;          /* path of a saved manifest, NULL: scan          */
  int64_t max_open_files;
  int checkpoint_signal;   /* FERRY__SIG_* */
  ferry_transform_fn transform;
  void *transform_user;
};

/* 1 MiB: shuffle windows (shuffle_buffer chunks, double-buffered) then stay
 * in cache, which doubled throughput from page cache; parallel file systems
 * with large stripes want chunk_samples raised. */
#define FERRY__AUTO_CHUNK_BYTES ((size_t)1 << 20)

/** Number of options in the table (ferry_option_info_get). */
int ferry__option_count(void);
/** 64-bit hash of option i's canonical value (for the cross-rank check). */
uint64_t ferry__option_hash(const ferry_options *opts, int i);

/* ---- Hashing and the generator (plan.c) -------------------------------- */

/** FNV-1a 64 of len bytes, continuing from h (start with FERRY__FNV_INIT). */
#define FERRY__FNV_INIT 0xcbf29ce484222325ULL
uint64_t ferry__fnv1a(uint64_t h, const void *data, size_t len);
/** SplitMix64 finaliser: a bijective 64-bit mix. */
uint64_t ferry__mix64(uint64_t x);
/** Counter-based generator: the counter-th 64-bit value of stream key. */
uint64_t ferry__rand64(uint64_t key, uint64_t counter);
/** Key for (seed, stream, a, b): independent streams of the generator. */
uint64_t ferry__rand_key(uint64_t seed, uint64_t stream, uint64_t a,
                         uint64_t b);
/** Fisher-Yates shuffle of perm[0..n) with stream key; unbiased (rejection). */
void ferry__shuffle(int64_t *perm, int64_t n, uint64_t key);

enum {
  FERRY__STREAM_CHUNKS = 1, /* (seed, epoch): permutation of pieces     */
  FERRY__STREAM_WINDOW = 2, /* (seed, epoch, rank, window): sample mix  */
  FERRY__STREAM_SUBSET = 3  /* (seed): chunks kept by max_chunks/fraction */
};

/* ---- Manifest (manifest.c) -------------------------------------------- */

/** One variable, as the batch will hold it. */
typedef struct ferry__var {
  char *name;
  ferry_dtype dtype;
  int swapped;                        /* stored non-native: swap after read */
  int row_ndim;                       /* dims after the sample dimension    */
  int64_t row_shape[FERRY_MAX_DIMS];
  size_t row_bytes;
  /* Storage layout, as the backend's describe() saw it in the first part
   * (later parts may differ; only the plan's chunk alignment and ferry info
   * use these, never the reads). */
  int64_t chunk_rows;   /* storage chunk along the sample dimension, 0: none */
  size_t cache_bytes;   /* decode cache the backend keeps per open file for
                         * this variable (HDF5/netCDF chunk cache), 0: none */
  char *storage;        /* for ferry info: "chunks (1024, 256), gzip(1),
                         * 3.1:1"; malloc'd, may be NULL */
} ferry__var;

/** One part: a file per variable (npy) or one file holding all variables. */
typedef struct ferry__part {
  int64_t num_samples;
  int64_t first_sample;   /* global index of its first sample              */
  char **paths;           /* [nvars] file holding each variable            */
  int64_t *data_offset;   /* [nvars] byte offset of row 0 in that file     */
  int64_t *file_size;     /* [nvars] size seen by rank 0 (checked on open) */
} ferry__part;

typedef struct ferry__manifest {
  char *backend;          /* "npy", "mem", ...                            */
  char *spec;             /* dataset string as given to ferry_open        */
  int nvars;
  ferry__var *vars;
  int64_t nparts;
  ferry__part *parts;
  int64_t num_samples;
  uint64_t hash;          /* ferry__manifest_hash()                       */
  char *notes;            /* the first part's describe notes, or NULL     */
} ferry__manifest;

/**
 * Rank 0 only: resolve spec (directory, .npy file, glob, @list) into parts,
 * describe every part with its backend, check that they agree, select the
 * variables named in vars (NULL/"": all) and fill m.  Returns 0 or a
 * negative code with err set.
 */
int ferry__manifest_scan(const char *spec, const char *vars,
                         ferry__manifest *m, ferry__err *err);
/** Serialise to a flat buffer (malloc'd) for MPI_Bcast, and back. */
int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len);
int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err);
/** Hash of everything that identifies the data (paths, sizes, shapes). */
uint64_t ferry__manifest_hash(const ferry__manifest *m);
/** JSON save/load (jansson); load re-applies the vars selection. */
int ferry__manifest_save_json(const ferry__manifest *m, const char *path,
                              ferry__err *err);
int ferry__manifest_load_json(const char *path, const char *vars,
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
/** "dir/name" (one slash between), malloc'd; NULL when out of memory. */
char *ferry__join_path(const char *dir, const char *name);

/* ---- Backends --------------------------------------------------------- */

enum {
  FERRY__CAP_COLLECTIVE = 1u << 0, /* io=collective is meaningful         */
  FERRY__CAP_THREADSAFE = 1u << 1  /* io calls may come from any thread    */
};

/** What describe() reports of one part (one file or one directory). */
typedef struct ferry__part_desc {
  int nvars;
  ferry__var *vars;       /* [nvars], names set                          */
  char **paths;           /* [nvars]                                      */
  int64_t *data_offset;   /* [nvars]                                      */
  int64_t *file_size;     /* [nvars]                                      */
  int64_t num_samples;    /* common first dimension (checked by describe) */
  char *notes;            /* malloc'd or NULL: what the backend chose and
                           * skipped, and why (ferry info, vars errors)    */
} ferry__part_desc;

void ferry__part_desc_free(ferry__part_desc *d);

/** Per-loader I/O state of a backend; lives on the loader's I/O thread. */
typedef struct ferry__io ferry__io;

typedef struct ferry__io_params {
  MPI_Comm comm;            /* the loader's I/O communicator (a dup)       */
  int rank;
  int collective;           /* io=collective: opens and reads are collective */
  int64_t max_open_files;   /* bound on files open at once                  */
} ferry__io_params;

typedef struct ferry__backend {
  const char *name;
  int version;
  unsigned caps;
  /** 1 if path (a file or a directory) is a part this backend reads. */
  int (*probe)(const char *path);
  /** Rank 0: describe one part.  Errors name the file. */
  int (*describe)(const char *path, ferry__part_desc *out, ferry__err *err);
  /** Create I/O state.  Runs on the I/O thread. */
  int (*io_open)(ferry__io **io, const ferry__manifest *m,
                 const ferry__io_params *p, ferry__err *err);
  /**
   * Read rows [row, row+nrows) of variable var of part into buf (nrows *
   * row_bytes bytes, stored byte order).  With collective set, every rank
   * calls it for the same (part, var) sequence and nrows may be 0.  A short
   * read is FERRY_EIO, never zeros.  Runs on the I/O thread.
   */
  int (*io_read)(ferry__io *io, int64_t part, int var, int64_t row,
                 int64_t nrows, void *buf, ferry__err *err);
  /** Free I/O state (closes files; collective when opened collectively). */
  void (*io_close)(ferry__io *io);
} ferry__backend;

extern const ferry__backend ferry__backend_npy;
extern const ferry__backend ferry__backend_mem;
#ifdef HAVE_HDF5
extern const ferry__backend ferry__backend_hdf5;
#endif
#ifdef HAVE_NETCDF
extern const ferry__backend ferry__backend_nczarr;
#endif

/** NULL-terminated table of compiled-in backends. */
extern const ferry__backend *const ferry__backends[];
const ferry__backend *ferry__backend_find(const char *name);

/** Parse a NumPy .npy header from the first len bytes of a file. */
typedef struct ferry__npy_header {
  int major, minor;
  ferry_dtype dtype;
  int swapped;
  int ndim;
  int64_t shape[FERRY_MAX_DIMS];
  int64_t data_offset;
} ferry__npy_header;
int ferry__npy_parse_header(const unsigned char *buf, size_t len,
                            ferry__npy_header *h, const char *path,
                            ferry__err *err);

/** Swap the bytes of n elements of size elsize in place. */
void ferry__byteswap(void *buf, size_t n, size_t elsize);

/* ---- Chunks and the epoch plan (plan.c) -------------------------------- */

/** A contiguous run of samples of one part.  Chunks never cross parts. */
typedef struct ferry__chunk {
  int64_t part;
  int64_t row;            /* first row inside the part         */
  int64_t count;
  int64_t global_first;   /* global index of the first sample  */
} ferry__chunk;

/** The plan's inputs besides the manifest. */
typedef struct ferry__plan_params {
  int64_t batch_size;
  uint64_t seed;
  int shuffle;
  int64_t block_size;
  int64_t shuffle_buffer;
  int partition;
  int tail;
  int64_t max_chunks;
  double fraction;
  int64_t epoch;
  int world_size;
} ferry__plan_params;

/**
 * chunk_samples=0 (auto): about FERRY__AUTO_CHUNK_BYTES of rows, rounded to
 * a multiple of the storage chunk rows of the variables (their least common
 * multiple; the largest when that exceeds FERRY__ALIGN_MAX times the
 * largest), so that every plan chunk reads whole storage chunks.  Never
 * below one storage chunk, never below 1.
 */
int64_t ferry__auto_chunk_samples(const ferry__manifest *m, size_t row_total);
#define FERRY__ALIGN_MAX 64

/** Split parts into chunks of at most chunk_samples rows (malloc'd array). */
int ferry__chunks_make(const ferry__manifest *m, int64_t chunk_samples,
                       ferry__chunk **out, int64_t *n);

/**
 * The pieces an epoch permutes: the chunks kept by max_chunks/fraction (a
 * subset drawn with the seed only, the same every epoch), split into blocks
 * of block_size with shuffle=block.  Sorted by global index.
 */
int ferry__plan_pieces(const ferry__chunk *chunks, int64_t nchunks,
                       const ferry__plan_params *pp, ferry__chunk **out,
                       int64_t *n);
/** The order of the pieces this epoch (identity for shuffle=none).
 *  perm has npieces entries.  Rank 0 draws it; others check it. */
void ferry__plan_permutation(const ferry__plan_params *pp, int64_t npieces,
                             int64_t *perm);

/** One run of rows read with one call: part rows [row, row+count). */
typedef struct ferry__extent {
  int64_t part;
  int64_t row;
  int64_t count;
  int64_t global_first;
  int64_t window;         /* window it belongs to                        */
  int64_t chunk;          /* chunk id holding it (for ferry_epoch_chunks) */
} ferry__extent;

/** One served sample. */
typedef struct ferry__slot {
  int64_t sample;         /* global index                                */
  int64_t extent;         /* extent holding it                           */
  int64_t row;            /* row inside the extent                       */
  uint8_t padded;
} ferry__slot;

/** One rank's plan for one epoch. */
typedef struct ferry__rank_plan {
  int64_t num_batches;          /* equal on every rank                  */
  int64_t epoch_samples;        /* samples in the epoch (all ranks)     */
  int64_t dropped;              /* samples no rank serves (all ranks)   */
  int64_t nslots;               /* samples this rank serves             */
  ferry__slot *slots;           /* [nslots] in served order             */
  int64_t slots_cap;            /* allocated entries (reused by the next build) */
  int64_t *batch_start;         /* [num_batches+1] slot index of each batch */
  int64_t nextents;
  ferry__extent *extents;       /* [nextents] in read order, by window  */
  int64_t nwindows;
  int64_t *window_first_extent; /* [nwindows+1]                         */
  int64_t *window_need;         /* [nwindows] first batch using window  */
  int64_t *window_samples;      /* [nwindows] slots served from window  */
  int64_t *batch_need;          /* [num_batches] extents (read order) that must be loaded */
  int64_t padded;
} ferry__rank_plan;

/**
 * Build rank's plan from the pieces and their permutation.  Pure: the same
 * inputs give the same plan on every platform.  out must be zeroed, or hold
 * a plan whose slots array (slots, slots_cap) is reused when large enough:
 * fresh memory costs a page fault per 4 KiB, which dominated set_epoch.  Returns 0, FERRY_ENOMEM,
 * FERRY_EEMPTY (no sample), FERRY_EINVAL (batch_size > a rank's share with
 * tail=drop_last; err names it).
 */
int ferry__plan_build(const ferry__chunk *pieces, int64_t npieces,
                      const int64_t *perm, const ferry__plan_params *pp,
                      int rank, ferry__rank_plan *out, ferry__err *err);
/**
 * Only the reads of rank (extents and windows, no slots): what collective
 * I/O needs to know of the other ranks.  Same contract as plan_build.
 */
int ferry__plan_reads(const ferry__chunk *pieces, int64_t npieces,
                      const int64_t *perm, const ferry__plan_params *pp,
                      int rank, ferry__rank_plan *out, ferry__err *err);
void ferry__rank_plan_free(ferry__rank_plan *p);

/** One stretch of an epoch: world_size ranks each served `batches` batches. */
typedef struct ferry__resume_step {
  int world_size;
  int64_t batches;
} ferry__resume_step;

/**
 * The rest of an epoch after steps[0..nsteps), over pp->world_size ranks
 * (pp->epoch, seed, options as when it started): steps[0] is the epoch's
 * original plan over steps[0].world_size ranks, of which every rank served
 * steps[0].batches; the rest was then served over steps[1].world_size
 * ranks, and so on.  When a step keeps the world size, every rank keeps the
 * rest of its own plan (the very batches an uninterrupted run serves); when
 * it changes, the unserved real samples (old rank order, then served order;
 * pads dropped) are cut into contiguous shares and the tail rule is applied
 * again.  Pure.  out (rank's plan with slots) and all ([pp->world_size]
 * zeroed plans receiving every rank's reads, for collective I/O) may each be
 * NULL.  A served count beyond a step's batches is FERRY_EFORMAT (a state
 * that does not belong to these inputs).  Returns 0, FERRY_ENOMEM,
 * FERRY_EINVAL, FERRY_EFORMAT.
 */
int ferry__plan_resume(const ferry__chunk *pieces, int64_t npieces,
                       const int64_t *perm, const ferry__plan_params *pp,
                       const ferry__resume_step *steps, int nsteps, int rank,
                       ferry__rank_plan *out, ferry__rank_plan *all,
                       ferry__err *err);
/** Checksum of a rank's plan (slots and batch boundaries). */
uint64_t ferry__rank_plan_checksum(const ferry__rank_plan *p);


/* ---- Checkpoint state and signal (state.c) ----------------------------- */

#define FERRY__STATE_VERSION 1

/** A decoded state file. */
typedef struct ferry__state {
  int version;
  char *dataset;               /* dataset string (for messages)          */
  uint64_t dataset_hash;       /* ferry__manifest_hash                   */
  int64_t num_samples;
  int nopts;
  char **opt_name, **opt_value; /* the plan-shaping options, canonical   */
  int64_t epoch;
  int world_size;              /* ranks that saved it                    */
  int64_t batches;             /* batches every rank served this epoch   */
  int64_t samples_served;      /* real samples served this epoch, all ranks */
  int nsteps;
  ferry__resume_step *steps;
  char *library;
} ferry__state;

/** NULL-terminated names of the options a resume must not change. */
const char *const *ferry__state_plan_options(void);
uint64_t ferry__state_options_hash(const ferry__state *s);
/** Header line + JSON body (malloc'd). */
int ferry__state_encode(const ferry__state *s, char **out, size_t *len,
                        ferry__err *err);
/** Check magic, version, length and checksum, then parse.  Errors name path:
 *  FERRY_EFORMAT (not a state file, truncated, corrupt), FERRY_ENOTSUP
 *  (newer version), FERRY_ENOMEM. */
int ferry__state_decode(const char *buf, size_t len, const char *path,
                        ferry__state *s, ferry__err *err);
void ferry__state_free(ferry__state *s);
/** Whole file (at most 1 MiB).  FERRY_ENOENT, FERRY_EACCES, FERRY_EIO... */
int ferry__state_read_file(const char *path, char **out, size_t *len,
                           ferry__err *err);
/** PATH.tmp.PID, fsync, rename to PATH, fsync the directory. */
int ferry__state_write_file(const char *path, const char *buf, size_t len,
                            ferry__err *err);
/** Install (reference-counted) the handler that sets the checkpoint flag;
 *  release restores the previous disposition with the last reference. */
int ferry__signal_install(int sig, ferry__err *err);
void ferry__signal_release(int sig);
/** 1 once the checkpoint signal arrived in this process. */
int ferry__signal_pending(void);
/** Forget a request (after a successful save, on every rank). */
void ferry__signal_clear(void);

/* ---- GPU stage (cuda.c) ------------------------------------------------ */

/** Per-loader CUDA state: the devices, one non-blocking stream each, the
 *  attached NCCL communicators.  Opaque outside cuda.c. */
typedef struct ferry__gpu ferry__gpu;

#define FERRY__DSLOT_MAGIC 0x66657272796473ULL /* "ferryds" */

/**
 * One slot of the device ring: a batch's buffers on every device of the
 * rank, the events of its copies, and the ferry_batch handed out for it.
 * State fields marked (L) are guarded by the epoch mutex of loader.c; the
 * CUDA fields are used by one thread at a time (the worker that copies,
 * then the consumer that waits and releases).
 */
typedef struct ferry__dslot {
  ferry_batch batch;            /* handed out; must stay the first member  */
  uint64_t magic;               /* FERRY__DSLOT_MAGIC                      */
  ferry__gpu *gpu;
  ferry_tensor *tensors;        /* [nvars]                                 */
  ferry_shard shards[FERRY_MAX_DEVICES];
  void **ptrs;                  /* [nshards * nvars] device pointers       */
  void *mem[FERRY_MAX_DEVICES]; /* one allocation per shard                */
  size_t mem_bytes[FERRY_MAX_DEVICES];
  int64_t per;                  /* samples per shard: batch_size / devices */
  void *ev_start[FERRY_MAX_DEVICES], *ev_done[FERRY_MAX_DEVICES];
  void *ev_release[FERRY_MAX_DEVICES]; /* recorded on the consumer's stream */
  void *consumer[FERRY_MAX_DEVICES];   /* stream of the last ferry_*_wait  */
  int has_consumer[FERRY_MAX_DEVICES];
  int release_pending[FERRY_MAX_DEVICES]; /* next copy waits on ev_release */
  int timing_pending;           /* copies whose time is not counted yet   */
  int64_t *ids;
  uint8_t *padded;
  int state;                    /* (L) SLOT_* of loader.c                  */
  int64_t bidx;                 /* (L) batch held                          */
  int64_t expect;               /* (L) the batch it serves next            */
  int host;                     /* (L) keep_host: paired host ring slot, -1 */
  int rc;                       /* (L) copy result                         */
  ferry__err err;
} ferry__dslot;

/**
 * Decide where batches go.  LOCAL (loader.c agrees on the result).  *out is
 * NULL for host delivery, with how saying why (device=cpu; device=auto and
 * no usable GPU; built without CUDA); else how says which devices and why.
 * FERRY_ENOTSUP: device=cuda in a build without CUDA; FERRY_ENODEV:
 * device=cuda without a usable GPU, or a devices list naming an absent one;
 * FERRY_EINVAL: batch_size not divisible by the number of devices.
 */
int ferry__gpu_open(const ferry_options *o, int rank, int local_rank,
                    ferry__gpu **out, char *how, size_t howlen,
                    ferry__err *err);
/** Finish every copy, deregister NCCL (unless the communicator failed),
 *  destroy the streams.  NULL is a no-op. */
void ferry__gpu_close(ferry__gpu *g);
/** Visible CUDA devices (-1 when not built in, 0 when none usable). */
int ferry__gpu_visible(void);
/** Fill the device part of a ferry_device_info (ndevices, devices,
 *  nccl_attached); host delivery leaves them 0. */
void ferry__gpu_info(const ferry__gpu *g, ferry_device_info *out);
int ferry__gpu_ndev(const ferry__gpu *g);
/** Wait for every copy on the loader's streams (epoch stop, close). */
int ferry__gpu_sync(ferry__gpu *g, ferry__err *err);
/** Pinned host memory (cudaHostAlloc), freed with ferry__gpu_host_free. */
int ferry__gpu_host_alloc(ferry__gpu *g, size_t bytes, void **out,
                          ferry__err *err);
void ferry__gpu_host_free(void *p);
/** Tell g which ring to register with NCCL (after the slots are built). */
void ferry__gpu_set_ring(ferry__gpu *g, ferry__dslot *ring, int64_t n);
/** Build one slot for batches of batch_size samples (device memory per
 *  shard, events); fini frees what init built (also after a failed init). */
int ferry__dslot_init(ferry__gpu *g, ferry__dslot *d,
                      const ferry__manifest *m, int64_t batch_size,
                      int rank, ferry__err *err);
void ferry__dslot_fini(ferry__dslot *d);
/**
 * Copy the assembled host batch into the slot: per shard, wait on the GPU
 * for the release of its previous batch, then one cudaMemcpyAsync per
 * variable on the device's stream, then record the shard's event; the
 * batch metadata (ids, sizes, shapes) is copied too.  host_data: the
 * tensors' data pointers (keep_host) or NULL.  Any worker thread.
 */
int ferry__dslot_copy(ferry__dslot *d, const ferry_batch *host, int host_data,
                      int rank, ferry__err *err);
/** Block until the slot's copies are done (the host batch may then be
 *  reused); adds their GPU time to *seconds once per copy. */
int ferry__dslot_sync(ferry__dslot *d, double *seconds, int rank,
                      ferry__err *err);
/** At ferry_release: record ev_release on each shard's consumer stream. */
int ferry__dslot_release(ferry__dslot *d, int rank, ferry__err *err);
/** ferry_attach_nccl / ferry_detach_nccl (FERRY_ENOTSUP without NCCL). */
int ferry__gpu_nccl_attach(ferry__gpu *g, void *comm, ferry__err *err);
int ferry__gpu_nccl_detach(ferry__gpu *g, ferry__err *err);

#endif /* FERRY_INTERNAL_H */
