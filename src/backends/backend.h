/*
 * backends/backend.h - the backend contract.  A backend may use what this
 * header brings in: errors (util/util.h), the manifest types
 * (core/manifest.h), the vtable below and the shared toolkit
 * (backends/toolkit.c).  It never includes a core or loader header; the core
 * reaches a backend only through its vtable, found in the registry
 * (backends/registry.c).
 */
#ifndef FERRY_BACKEND_H
#define FERRY_BACKEND_H

#include "core/manifest.h"
#include "util/agree.h"

#include <mpi.h>

enum {
  FERRY__CAP_COLLECTIVE = 1u << 0, /* io=collective is meaningful         */
  FERRY__CAP_THREADSAFE = 1u << 1, /* io calls may come from any thread    */
  /* data_offset and file_size do not bound the rows (synthetic, chunked or
   * compressed data): loading a saved manifest skips the check that
   * data_offset + num_samples * row_bytes <= file_size. */
  FERRY__CAP_NOT_FLAT = 1u << 2
};

/** What describe() reports of one part (one file or one directory). */
typedef struct ferry__part_desc {
  int nvars;
  ferry__var *vars;     /* [nvars], names set                          */
  char **paths;         /* [nvars]                                      */
  int64_t *data_offset; /* [nvars]                                      */
  int64_t *file_size;   /* [nvars]                                      */
  ferry__blob *rec;     /* [nvars] the backend's records, or NULL       */
  int64_t num_samples;  /* common first dimension (checked by describe) */
  char *notes;          /* malloc'd or NULL: what the backend chose and
                         * skipped, and why (ferry info, vars errors)    */
} ferry__part_desc;

void ferry__part_desc_free(ferry__part_desc *d);

/** Per-loader I/O state of a backend; lives on the loader's I/O thread. */
typedef struct ferry__io ferry__io;

/** A read-only mapping of rows (io=mmap): base/len as mmap returned them,
 *  data the first byte of the rows inside; path names the file in errors. */
typedef struct ferry__mapping {
  void *base;
  size_t len;
  const unsigned char *data;
  const char *path;
} ferry__mapping;

typedef struct ferry__io_params {
  MPI_Comm comm; /* the loader's I/O communicator (a dup)       */
  int rank;
  int collective;            /* io=collective: opens and reads are collective */
  int64_t max_open_files;    /* bound on files open at once                  */
  const ferry_options *opts; /* the loader's options: a backend reads its
                              * own (zarr_reader) with ferry_options_get  */
  int threads; /* the loader's worker threads (the `threads` option, 0
                * resolved): the lanes of the backend's decode pool;
                * 0 or 1: decode inline */
  int defer;   /* 1: the caller calls io_wait (when the backend has one)
                * before it reads, frees or reuses a buffer it gave io_read;
                * io_read may then return with decode jobs still running */
} ferry__io_params;

typedef struct ferry__backend {
  const char *name;
  int version;
  unsigned caps;
  /** Version of the per-variable records describe() leaves in
   *  ferry__part_desc.rec (0: the backend keeps none).  A saved manifest
   *  whose records carry another version is refused on load; change it
   *  whenever the record's layout or meaning changes. */
  int record_version;
  /** A dataset scheme, e.g. "mem": a dataset string (or @list line) that
   *  starts with "SCHEME:" names no file and goes straight to this
   *  backend's describe, without probing.  NULL: the backend reads files. */
  const char *scheme;
  /** 1 if path (a file or a directory) is a part this backend reads; may
   *  be NULL for a backend reached only through its scheme. */
  int (*probe)(const char *path);
  /** What probe() accepts, in a few words, for the message naming the
   *  backends tried when none reads a part (backends/sniff.c). */
  const char *accepts;
  /** Rank 0: describe one part.  Errors name the file.  opts (NULL:
   *  defaults) carries the backend's own options, read by name with
   *  ferry_options_get; the core never interprets them. */
  int (*describe)(const char *path, const ferry_options *opts,
                  ferry__part_desc *out, ferry__err *err);
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
  /**
   * io=mmap (may be NULL: the backend then reads independently): map rows
   * [row, row+nrows) of variable var of part read-only and say where they
   * are (out->data; stored byte order).  The mapping belongs to the caller,
   * which releases it with ferry__unmap after the rows were copied: it
   * outlives the I/O state.  Sizes are checked before mapping; a file
   * truncated afterwards is caught by ferry__mapped_copy.  I/O thread.
   */
  int (*io_map)(ferry__io *io, int64_t part, int var, int64_t row,
                int64_t nrows, struct ferry__mapping *out, ferry__err *err);
  /**
   * May be NULL.  With ferry__io_params.defer set, io_read may leave decode
   * jobs on the backend's pool that still write into its buffer; io_wait
   * returns when every io_read since the last io_wait is complete, with the
   * error the first of them (in call order) would have returned serially.
   * After an io_read that failed, the caller still calls io_wait before
   * freeing the buffers of the reads before it; the error to report is
   * io_wait's when it has one (an earlier read's), else io_read's.  I/O
   * thread.
   */
  int (*io_wait)(ferry__io *io, ferry__err *err);
} ferry__backend;

/** NULL-terminated table of compiled-in backends. */
extern const ferry__backend *const ferry__backends[];
const ferry__backend *ferry__backend_find(const char *name);
/** The backend whose scheme starts spec ("mem:..."), or NULL. */
const ferry__backend *ferry__backend_for_scheme(const char *spec);
/** The error for a part that every probe declined (sniff.c): its size and
 *  first bytes, the format they are the signature of, the backends tried
 *  and what each reads; for a directory, what it holds.  FERRY_EEMPTY for
 *  an empty directory, else FERRY_EFORMAT (or the stat error). */
int ferry__sniff_unread(const char *path, ferry__err *err);

/* ---- Toolkit (toolkit.c) ---- */

/* io=auto (fstype.c): the file system a path is on. */
enum { FERRY__FS_UNKNOWN = 0, FERRY__FS_LOCAL, FERRY__FS_REMOTE };
/** statfs(2)'s f_type of path into *magic (its low 32 bits). */
int ferry__fs_of(const char *path, uint64_t *magic, ferry__err *err);
/** FERRY__FS_LOCAL (a local disk or memory file system: io=auto maps),
 *  FERRY__FS_REMOTE (parallel or network: io=auto reads) or
 *  FERRY__FS_UNKNOWN (read); *name is the file system's (static). */
int ferry__fs_classify(uint64_t magic, const char **name);

/**
 * Map bytes [off, off+n) of fd read-only (page-aligned underneath) into
 * *out; path names the file in errors.  fd may be closed afterwards.
 */
int ferry__map_range(int fd, const char *path, int64_t off, size_t n,
                     ferry__mapping *out, ferry__err *err);
/**
 * The names of a `vars` list, one by one: *p walks the list; returns the
 * next name (not terminated: *len bytes) with leading '/' and spaces taken
 * off, or NULL at the end.  ferry__name_listed: 1 when name (leading '/'
 * ignored) is one of the list's names, 0 otherwise (also for a NULL list).
 * Every backend that selects by `vars` normalises names this way.
 */
const char *ferry__next_name(const char **p, size_t *len);
int ferry__name_listed(const char *list, const char *name);

/**
 * The process-wide lock around libraries that are not thread-safe (HDF5,
 * netCDF-C): lock/unlock for a section in which no call waits for another
 * process; trylock (1 when taken) for hdf5.c's collective form, which
 * agrees with the other ranks before going on.
 */
void ferry__lib_lock(void);
void ferry__lib_unlock(void);
int ferry__lib_trylock(void);

/** A failed MPI call as an error: the caller's context (printf-style) and
 *  MPI's own words; returns code.  ferry__mpi_open_code: the FERRY_E* of a
 *  failed MPI_File_open (ENOENT, EACCES, else EIO). */
int ferry__mpi_fail(ferry__err *err, int code, int mpirc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ferry__mpi_open_code(int mpirc);

/**
 * Fill the page tables of bytes [data, data+n) of mapping m (part of it)
 * before they are copied (MADV_POPULATE_READ; MADV_WILLNEED on kernels
 * without it), so the copies take no page faults.  FERRY_EIO naming the
 * file when the range is past the file's end now (it was truncated).
 */
int ferry__map_populate(const ferry__mapping *m, const void *data, size_t n,
                        ferry__err *err);
/** Release a mapping (a zeroed one is a no-op). */
void ferry__unmap(ferry__mapping *m);
/**
 * memcpy(dst, src, n) from mapped memory, guarded against SIGBUS: a file
 * truncated after it was mapped makes the copy return FERRY_EIO with a
 * message naming path, never a signal that kills the process.  The first
 * call installs a SIGBUS handler that passes every fault outside a guarded
 * copy on to the handler installed before it.
 */
int ferry__mapped_copy(void *dst, const void *src, size_t n, const char *path,
                       ferry__err *err);

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

/**
 * open(path, O_RDONLY) that never blocks: the file is opened non-blocking
 * (a FIFO would otherwise wait for a writer forever) and must be a regular
 * file.  Returns the descriptor (blocking again, close-on-exec), or -1 with
 * errno set when open or fstat failed, or -2 when path is not a regular
 * file; *kind (may be NULL) then says what it is ("a FIFO", "a directory",
 * "a socket", "a device").
 */
int ferry__open_regular(const char *path, const char **kind);

/**
 * pread until n bytes are read, end of file, or an error; EINTR retried.
 * Returns 0 with *got the bytes read (less than n only at end of file), or
 * -1 with errno set.
 */
int ferry__pread_full(int fd, void *buf, size_t n, int64_t off, size_t *got);

/**
 * The cache of open handles every backend keeps on its I/O thread, at most
 * max of them, keyed by (part, var) (var -1 when a handle serves every
 * variable of a part), evicted least recently used first.
 *
 * The invariant that keeps collective opens and closes matched is here and
 * only here: the clock is a counter, so no two entries share a use time,
 * and the entries are held in an order that depends only on the sequence of
 * lookups.  With io=collective every rank performs the same sequence of
 * lookups, so every rank opens, evicts and closes the same files in the same
 * order.  Not thread-safe: one I/O thread uses it.
 */
typedef int (*ferry__handle_open_fn)(void *ctx, int64_t part, int var,
                                     void **handle, ferry__err *err);
typedef void (*ferry__handle_close_fn)(void *ctx, void *handle);

typedef struct ferry__handle_entry {
  int64_t part;
  int var;
  void *handle;
  uint64_t last_use;
} ferry__handle_entry;

typedef struct ferry__handle_cache {
  void *ctx;
  ferry__handle_open_fn open;
  ferry__handle_close_fn close;
  size_t max;
  ferry__handle_entry *e;
  size_t n, cap;
  uint64_t clock;
} ferry__handle_cache;

/** max: the max_open_files option (at least 1; 0 counts as its default, 64). */
void ferry__handle_cache_init(ferry__handle_cache *c, size_t max, void *ctx,
                              ferry__handle_open_fn open,
                              ferry__handle_close_fn close);
/** The handle of (part, var), opened (after evicting down to max - 1) when
 *  absent.  An open that fails leaves nothing in the cache.  rank names the
 *  caller in an out-of-memory message. */
int ferry__handle_get(ferry__handle_cache *c, int64_t part, int var, int rank,
                      void **out, ferry__err *err);
/** Close every handle (in the cache's order: the same on every rank). */
void ferry__handle_cache_free(ferry__handle_cache *c);

/*
 * The decode pool (pool.c): threads - 1 persistent threads, created once per
 * I/O state, plus the I/O thread, which runs jobs too while it waits.
 * ferry__pool_new returns NULL when threads <= 1 or when no thread could be
 * created (or out of memory): a NULL pool is valid everywhere and runs each
 * job inline in ferry__pool_submit, as a serial backend would.  A job
 * returns 0 or a negative FERRY_E* with its message in err; it may run on
 * any thread, so it touches only memory given to it alone (no MPI, no
 * handle cache).  ferry__pool_wait runs queued jobs on the calling thread
 * until all are done and returns the error of the lowest-numbered failing
 * job (jobs numbered in submission order; jobs after a failure may be
 * skipped): the error a serial run returns.  ferry__pool_submit returns 0
 * (queued), or for a NULL pool the job's own result; when the queue cannot
 * grow it waits for the queued jobs and runs the job inline (a negative
 * result then means nothing is pending).  ferry__pool_lanes: threads that
 * decode at once (1 for NULL).  Not thread-safe between callers: one I/O
 * thread submits and waits.  Usable by any backend (parquet's per-read
 * threads could move onto it).
 */
#define FERRY__POOL_MAX 64
typedef struct ferry__pool ferry__pool;
typedef int (*ferry__job_fn)(void *arg, ferry__err *err);
ferry__pool *ferry__pool_new(int threads);
int ferry__pool_lanes(const ferry__pool *p);
int ferry__pool_submit(ferry__pool *p, ferry__job_fn fn, void *arg,
                       ferry__err *err);
int ferry__pool_wait(ferry__pool *p, ferry__err *err);
/** 1 while submitted jobs are not waited for. */
int ferry__pool_pending(ferry__pool *p);
/** Wait (errors dropped), stop the threads, free. */
void ferry__pool_free(ferry__pool *p);
/** The decode lanes a variable's decode buffers are counted for at
 *  describe: the `threads` option of opts when positive (at most
 *  FERRY__POOL_MAX), else the most threads=0 can resolve to on this node
 *  (its CPUs minus one, at most 8). */
int ferry__pool_lanes_for(const ferry_options *opts);

/* ---- Backend-specific entry points used by tests and the core ---- */

/**
 * The synthetic value of element k of sample i, as `ferry gen` and the mem
 * backend write it: (i + k) mod M(dtype), M = 2^7 int8, 2^8 uint8, 2^15
 * int16, 2^16 uint16, 2^31 int32, 2^32 uint32, 2^62 (u)int64, 2^11 float16,
 * 2^24 float32, 2^53 float64, 2 bool.  Writes one native element to out.
 */
int ferry__gen_value(ferry_dtype dtype, int64_t sample, int64_t k, void *out);

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

/**
 * Parse a netCDF classic header (CDF-1, CDF-2, CDF-5) from the first len
 * bytes of a file of file_size bytes (classic.c).  0 with *out set (free
 * with ferry__cdf_free); 1 when the header runs past the len bytes given
 * but not past the file (read more and call again); a negative FERRY_E*
 * naming path, the field and its offset when the header is malformed.
 */
typedef struct ferry__cdf ferry__cdf;
int ferry__cdf_parse(const unsigned char *buf, size_t len, int64_t file_size,
                     const char *path, ferry__cdf **out, ferry__err *err);
void ferry__cdf_free(ferry__cdf *h);
void ferry__cdf_summary(const ferry__cdf *h, int *version, int *nvars,
                        int64_t *numrecs, int64_t *recsize);

/**
 * The npy backend's MPI-IO steps, shared with the npz backend (whose stored
 * members are read exactly like .npy files).  ferry__npy_open opens path
 * (collectively over comm when collective, the outcome agreed on every
 * rank) and checks that it still is file_size bytes, as rank 0 saw it;
 * vname names the variable in messages.  ferry__npy_read_range reads
 * nbytes at offset: one collective call (rc < 0: a local failure found
 * before; the rank joins with a count of 0 and returns rc), or independent
 * calls of at most 1 GiB each.
 */
int ferry__npy_open(MPI_Comm comm, int collective, MPI_Info info, int rank,
                    const char *path, const char *vname, int64_t file_size,
                    MPI_File *out, ferry__err *err);
int ferry__npy_read_range(MPI_File fh, int collective, int64_t offset,
                          int64_t nbytes, void *buf, int rc, const char *where,
                          ferry__err *err);

/**
 * The mix backend's record of one source (backends/mix.c), kept in the
 * first variable's record of the source's part of a mix manifest (the core
 * builds it in core/mix.c and reads it in ferry__mix_sources): the
 * normalised proportion, the exhaust rule (FERRY__EXHAUST_*), the source's
 * dataset string, the common names its variables are served as (the
 * source's variable i is common[i]) and its packed manifest
 * (ferry__manifest_pack).  pack: out->p malloc'd, 0 or FERRY_ENOMEM (then
 * out->p is NULL and out->len the bytes it could not have, for the
 * caller's out-of-memory message).
 * parse: path and common malloc'd (ferry__mix_record_free), sub borrowed
 * from b; FERRY_EFORMAT naming where when b is malformed.
 */
typedef struct ferry__mix_record {
  double proportion;
  int exhaust;
  char *path;
  int ncommon;
  char **common;
  void *sub;
  size_t sublen;
} ferry__mix_record;
int ferry__mix_record_pack(const ferry__mix_record *r, ferry__blob *out);
int ferry__mix_record_parse(const ferry__blob *b, ferry__mix_record *out,
                            const char *where, ferry__err *err);
void ferry__mix_record_free(ferry__mix_record *r);

#endif /* FERRY_BACKEND_H */
