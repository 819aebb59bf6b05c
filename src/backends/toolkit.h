/*
 * backends/toolkit.h - the shared I/O toolkit every backend may use: the
 * file system of a path, mappings (io=mmap), MPI-IO reads and opens, POSIX
 * reads, the process-wide lock of non-thread-safe libraries, the cache of
 * open handles, the I/O base every io_open starts from and the decode pool
 * (toolkit.c, fstype.c, mapped.c, mpiio.c, io_base.c, pool.c). docs/hacking.md,
 * "Helpers a backend may use".
 */
#ifndef FERRY_TOOLKIT_H
#define FERRY_TOOLKIT_H

#include "backends/backend.h"
#include "util/record.h"

/**
 * A backend's per-variable record (toolkit.c): hand the bytes of writer w
 * (util/record.h) to blob b.  0, or FERRY_ENOMEM with b->p NULL and b->len
 * the bytes it could not have (for the caller's out-of-memory message).
 */
int ferry__rec_blob(ferry__rec_w *w, ferry__blob *b);

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

/* ---- A dataset given as its directory (toolkit.c) ----
 * ferry__has_suffix: 1 when s ends with suf (s may be suf itself).
 * ferry__dir_only_file: DIR/NAME of the one entry of directory dir that
 * accept(dir, name) takes (names starting with '.' never), malloc'd; NULL
 * when none, several, or dir cannot be read.  The backends whose part may
 * be a directory holding one file of theirs (arrow: a Hugging Face shard;
 * megatron: PREFIX.idx beside PREFIX.bin; webdataset: one shard). */
int ferry__has_suffix(const char *s, const char *suf);
char *ferry__dir_only_file(const char *dir,
                           int (*accept)(const char *dir, const char *name));

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
 * The MPI-IO steps of every backend that reads through MPI-IO (mpiio.c).
 * ferry__mpiio_hints: a new MPI_Info with the read-only hints (and
 * collective buffering when collective), or MPI_INFO_NULL; the caller
 * frees it.  ferry__mpiio_open opens path (collectively over comm when
 * collective, the outcome agreed on every rank) and checks that it still
 * is file_size bytes, as rank 0 saw it; vname (NULL: none) names the
 * variable in messages; rc < 0 is a local failure found before (its
 * message already in err): the rank still joins a collective open and the
 * agreement, and every call returns the lowest failing rank's error.
 * ferry__mpiio_read_range reads nbytes at offset:
 * one collective call (rc < 0: a local failure found before; the rank
 * joins with a count of 0 and returns rc), or independent calls of at
 * most 1 GiB each.
 */
MPI_Info ferry__mpiio_hints(int collective);
int ferry__mpiio_open(MPI_Comm comm, int collective, MPI_Info info, int rank,
                      const char *path, const char *vname, int64_t file_size,
                      int rc, MPI_File *out, ferry__err *err);
int ferry__mpiio_read_range(MPI_File fh, int collective, int64_t offset,
                            int64_t nbytes, void *buf, int rc,
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

/* ---- Per-sample location tables (decision 0057: WebDataset, MDS) ---- */

/** A run of entries read by one preadv: at most this many, no two more
 *  than FERRY__GATHER_GAP_MAX bytes apart (the scratch buffer's size,
 *  which takes the bytes between them; IOV_MAX is at least 1024). */
#define FERRY__GATHER_RUN_MAX 500
#define FERRY__GATHER_GAP_MAX (64 << 10)

/** Bytes of entry i of variable var of part pt: its rows (the ragged
 *  offsets' step, 1 for a dense variable) times row_bytes; -1 when they
 *  cannot be (no offsets, an overflow). */
int64_t ferry__entry_bytes(const ferry__manifest *m, const ferry__part *pt,
                           int var, int64_t i);

/**
 * Entries [row, row+nrows) of variable var of part, at byte offsets
 * pos[] of fd (increasing, not overlapping, each inside the file: the
 * caller checked its table), into buf one after the other: each run one
 * preadv whose vectors put every entry in its place and the bytes between
 * them in scratch (FERRY__GATHER_GAP_MAX bytes).  0, or the errno's code
 * (FERRY_EIO for a short read) naming file, variable, rank, offset.  I/O
 * thread.
 */
int ferry__gather_entries(int fd, const ferry__manifest *m, int64_t part,
                          int var, const int64_t *pos, int64_t row,
                          int64_t nrows, unsigned char *buf,
                          unsigned char *scratch, int rank, ferry__err *err);

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

/**
 * The I/O base (io_base.c): what every backend's io_open fills alike.
 * A backend's struct ferry__io starts with a ferry__io_base (the first
 * member, so the handle cache's ctx, the base, is the whole state).
 */
typedef struct ferry__io_base {
  const ferry__manifest *m;  /* owned by the loader, outlives the state */
  MPI_Comm comm;             /* the I/O communicator (io_params) */
  int rank;                  /* this rank in comm */
  int collective;            /* io=collective */
  MPI_Info info;             /* MPI-IO hints; MPI_INFO_NULL: none */
  ferry__handle_cache files; /* the open files */
} ferry__io_base;

/** What a backend's io_open asks of ferry__io_base_open. */
typedef struct ferry__io_base_spec {
  size_t size;                /* sizeof the backend's struct ferry__io */
  ferry__handle_open_fn open; /* the handle cache's callbacks */
  ferry__handle_close_fn close;
  int hints; /* 1: create the MPI-IO hints (ferry__mpiio_hints) */
  /* NULL: io=collective is served; else it is refused with FERRY_ENOTSUP
   * and this text, " (rank N)" appended */
  const char *no_collective;
} ferry__io_base_spec;

/**
 * Allocate (zeroed) s->size bytes of I/O state for manifest m and fill its
 * base from p; *out receives it (NULL on error).  Returns 0, FERRY_ENOTSUP
 * (io=collective refused), FERRY_ENOMEM ("the I/O state (dataset D, rank
 * R)").  Local; the I/O thread.  ferry__io_base_close closes the cached
 * handles (collectively when opened so) and frees the hints, not the
 * state itself: the backend frees its own members, then the state.
 */
int ferry__io_base_open(const ferry__io_base_spec *s, const ferry__manifest *m,
                        const ferry__io_params *p, void **out, ferry__err *err);
void ferry__io_base_close(ferry__io_base *b);

/**
 * A handle cache entry that is one MPI_File: ferry__io_base_mpi_open opens
 * path through ferry__mpiio_open with the base's communicator, mode and
 * hints (vname NULL: a file of every variable); collective with
 * io=collective, a failed allocation included.  ferry__io_base_mpi_close
 * is the matching close callback.
 */
int ferry__io_base_mpi_open(const ferry__io_base *b, const char *path,
                            const char *vname, int64_t file_size, void **handle,
                            ferry__err *err);
void ferry__io_base_mpi_close(void *ctx, void *handle);
/**
 * A handle cache entry that is one POSIX descriptor (an int, malloc'd):
 * ferry__io_base_fd_open opens path with ferry__open_regular and checks
 * that it is still file_size bytes, as rank 0 saw it (FERRY_EMISMATCH);
 * messages name file, variable (vname, NULL: "-") and rank.
 * ferry__io_base_fd_close is the matching close callback.  Independent
 * reads only (megatron, arrow).
 */
int ferry__io_base_fd_open(const ferry__io_base *b, const char *path,
                           const char *vname, int64_t file_size, void **handle,
                           ferry__err *err);
void ferry__io_base_fd_close(void *ctx, void *handle);
/**
 * The handle cache's callbacks of a backend whose every (part, variable)
 * is one file (npy, megatron): the part's path of the variable opened as
 * one MPI_File with io=collective (every rank together), else one
 * descriptor.  ctx is the backend's io, which starts with its
 * ferry__io_base.
 */
int ferry__io_base_var_open(void *ctx, int64_t part, int var, void **handle,
                            ferry__err *err);
void ferry__io_base_var_close(void *ctx, void *handle);
/** pread exactly n bytes at off into buf: 0, or the errno's code / FERRY_EIO
 *  ("short read") naming where ("file F, variable V, rank R"). */
int ferry__pread_exact(int fd, void *buf, int64_t n, int64_t off,
                       const char *where, ferry__err *err);

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

#endif /* FERRY_TOOLKIT_H */
