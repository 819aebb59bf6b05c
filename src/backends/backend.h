/*
 * backends/backend.h - the backend contract: what a backend implements (the
 * vtable below, checked by ferry__backend_check) and what the core sees of
 * it (the registry).  A backend also uses the shared I/O toolkit
 * (backends/toolkit.h), and a large one keeps its private declarations in
 * its own header (backends/npy.h, classic.h, mixrec.h, gen.h; zarr/zarr.h,
 * parquet/parquet.h).  It includes nothing above it (tests/style/layers.sh)
 * beyond the manifest types of core/; the dataset layer (describe, on
 * rank 0) and the loader (the reads) reach a backend only through its
 * vtable, found in the registry (backends/registry.c).
 */
#ifndef FERRY_BACKEND_H
#define FERRY_BACKEND_H

#include "core/manifest.h"
#include "util/agree.h"

#include <mpi.h>

/* The version of this contract: a table with another .version is refused
 * by ferry__backend_check.  Change it with the vtable's meaning. */
#define FERRY__BACKEND_VERSION 1

/* Capabilities a backend declares; each is read by the core (a flag
 * nothing reads is not declared: the one "io calls may come from any
 * thread" was removed, since the loader calls from its one I/O thread). */
enum {
  FERRY__CAP_COLLECTIVE = 1u << 0, /* io=collective is meaningful
                                    * (loader/open.c refuses it otherwise) */
  /* data_offset and file_size do not bound the rows (synthetic, chunked or
   * compressed data): loading a saved manifest skips the check that
   * data_offset + num_samples * row_bytes <= file_size (dataset/json.c). */
  FERRY__CAP_NOT_FLAT = 1u << 2,
  /* io=collective reads ragged variables too (their values' spans as one
   * MPI-IO read each, a 0-row read joining; loader/ragged.c refuses
   * io=collective for a ragged dataset otherwise) */
  FERRY__CAP_COLLECTIVE_RAGGED = 1u << 3,
  FERRY__CAP_ALL =
      FERRY__CAP_COLLECTIVE | FERRY__CAP_NOT_FLAT | FERRY__CAP_COLLECTIVE_RAGGED
};

/** What describe() reports of one part (one file or one directory). */
typedef struct ferry__part_desc {
  int nvars;
  ferry__var *vars;     /* [nvars], names set                          */
  char **paths;         /* [nvars]                                      */
  int64_t *data_offset; /* [nvars]                                      */
  int64_t *file_size;   /* [nvars]                                      */
  ferry__blob *rec;     /* [nvars] the backend's records, or NULL       */
  int64_t **roff;       /* [nvars] or NULL: a ragged variable's offsets
                         * (ferry__part.roff; var.ragged set), malloc'd
                         * num_samples + 1, NULL for a dense one       */
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
  int threads;   /* the loader's worker threads (the `threads` option, 0
                  * resolved): the lanes of the backend's decode pool;
                  * 0 or 1: decode inline */
  int defer;     /* 1: the caller calls io_wait (when the backend has one)
                  * before it reads, frees or reuses a buffer it gave io_read;
                  * io_read may then return with decode jobs still running */
  int64_t epoch; /* the epoch being read (a virtual dataset's rows depend
                  * on it: loader/pack.c); 0 outside an epoch */
} ferry__io_params;

typedef struct ferry__backend {
  const char *name;
  int version;   /* FERRY__BACKEND_VERSION */
  unsigned caps; /* FERRY__CAP_* */
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
  /**
   * May be NULL.  Rank 0, at the scan of a plain dataset path (not a glob,
   * an @list or a scheme): 1 when path is a dataset whose own index lists
   * its parts (MDS: a directory holding index.json, or that file), with
   * *parts their paths in the index's order (*nparts of them; the array
   * and each path malloc'd, the caller frees) and *note what was done
   * (malloc'd); 0 when path is no such dataset; a negative code naming
   * the file when it is one but broken (a listed part missing).
   */
  int (*expand)(const char *path, char ***parts, int64_t *nparts, char **note,
                ferry__err *err);
  /** Rank 0: describe one part.  Errors name the file.  opts (NULL:
   *  defaults) carries the backend's own options, read by name with
   *  ferry_options_get; the core never interprets them. */
  int (*describe)(const char *path, const ferry_options *opts,
                  ferry__part_desc *out, ferry__err *err);
  /**
   * May be NULL.  Rank 0, once every part of a scan is described and the
   * parts agree (ferry__scan_finish, after the serial or the shared scan),
   * before the variables are selected: settles what depends on all the
   * parts (the webdataset backend makes an npy variable dense when every
   * sample of every shard has one shape).  It may change a variable's
   * shape, row_bytes and ragged flag and free its parts' offsets (a
   * scan's are malloc'd, never mapped); the parts must still agree.  0, or
   * a negative code.  Not run on a saved manifest: it holds the result.
   */
  int (*finish)(ferry__manifest *m, ferry__err *err);
  /** Create I/O state.  Runs on the I/O thread. */
  int (*io_open)(ferry__io **io, const ferry__manifest *m,
                 const ferry__io_params *p, ferry__err *err);
  /**
   * Read rows [row, row+nrows) of variable var of part into buf (nrows *
   * row_bytes bytes, stored byte order; a ragged variable: the samples'
   * values one after the other, (roff[row+nrows] - roff[row]) * row_bytes
   * bytes, ferry__part.roff).  With collective set, every rank
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

/**
 * The contract, checked for every table of the registry (by
 * tests/unit/test_registry and, once per process, by
 * ferry__backend_registry_check, which ferry_open calls): version is
 * FERRY__BACKEND_VERSION; name is set and unique; describe, io_open,
 * io_read and io_close are set; a probe or a scheme (a backend must be
 * reachable), and accepts with a probe; caps within FERRY__CAP_ALL.
 * 0, or FERRY_EINTERNAL with err naming the backend and the broken rule.
 */
int ferry__backend_check(const ferry__backend *b, ferry__err *err);
/** ferry__backend_check over the registry, and names unique; the result of
 *  the first call is kept (the tables are const). */
int ferry__backend_registry_check(ferry__err *err);

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

#endif /* FERRY_BACKEND_H */
