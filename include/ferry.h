/*
 * ferry.h - the public interface of libferry, an MPI-native training-data
 * loader.  This header is the manual: every function is documented here with
 * its parameters, its return value, the FERRY_E* codes it can return, its
 * thread safety, and whether it is COLLECTIVE over the loader's communicator
 * (every rank of the communicator must call it, in the same order, and every
 * rank gets the same return code) or LOCAL (a rank may call it alone).
 *
 * Conventions
 *  - Fallible functions return int: 0 on success, a negative FERRY_E* code on
 *    failure.  ferry_next() may also return the positive FERRY_END.
 *  - The detailed message of the last failure (file, variable, rank, offset)
 *    is ferry_last_error(loader), or ferry_last_error(NULL) for calls that
 *    have no loader (ferry_open, ferry_options_*).
 *  - Handles are opaque.  ferry_close(NULL) and ferry_options_free(NULL) are
 *    no-ops.  Nothing half-built is returned after an error.
 *  - The library never calls exit, abort or MPI_Abort.
 *  - MPI must be initialised with MPI_Init_thread(..., MPI_THREAD_MULTIPLE):
 *    the pipeline reads through MPI-IO from its own I/O thread.
 */
#ifndef FERRY_H
#define FERRY_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FERRY_BUILDING) && defined(__GNUC__)
#define FERRY_API __attribute__((visibility("default")))
#else
#define FERRY_API
#endif

/* ---- Version ---------------------------------------------------------- */

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"
/** MAJOR*10000 + MINOR*100 + PATCH, comparable with FERRY_VERSION_NUMBER. */
#define FERRY_VERSION_NUMBER                                                   \
  (FERRY_VERSION_MAJOR * 10000 + FERRY_VERSION_MINOR * 100 +                   \
   FERRY_VERSION_PATCH)

/** Version string of the library actually linked ("0.1.0").  LOCAL,
 * thread-safe. */
FERRY_API const char *ferry_version(void);
/** Version number of the library actually linked (see FERRY_VERSION_NUMBER).
 * LOCAL. */
FERRY_API int ferry_version_number(void);

/**
 * Name of the i-th storage backend compiled into this library ("npy",
 * "hdf5" with parallel HDF5, "netcdf-classic", "zarr", "parquet", "mem"),
 * or NULL when i is out of range.
 * LOCAL, thread-safe.
 */
FERRY_API const char *ferry_backend_name(int i);

/**
 * Features compiled in, as a space-separated list ("mpiio hdf5 zarr cuda
 * nccl"); the static string is owned by the library.  LOCAL, thread-safe.
 */
FERRY_API const char *ferry_features(void);

/**
 * The build report: for each library ferry uses (MPI, HDF5, netCDF-C,
 * jansson, blosc, zstd, lz4, zlib, CUDA runtime and driver, NCCL), the
 * version it was compiled against and the version found at run time, as the
 * library itself reports it (MPI_Get_library_version, H5get_libversion,
 * nc_inq_libvers, ...).  What `ferry --version` prints.
 *
 * @param buf   where the report is written, NUL-terminated and cut to
 *              len - 1 bytes; may be NULL when len is 0 (to get the length)
 * @param len   size of buf in bytes
 * @param json  0: a text table, a header line then one line per library:
 *              name, built against ("not built" when left out of this
 *              build), found at run time ("not found"; "-" when not built;
 *              the first line only of a multi-line MPI string).
 *              1: one JSON object {"version", "backends": [...],
 *              "features": [...], "libraries": {KEY: {"name", "built",
 *              "found"}}}, KEY one of mpi, hdf5, netcdf, jansson, blosc,
 *              zstd, lz4, zlib, cuda_runtime, cuda_driver, nccl; null for
 *              not built or not found
 * @return the length of the whole report (without the NUL; when it is len
 *         or more, the report was cut: call again with a larger buffer);
 *         FERRY_EINVAL (buf NULL with len > 0), FERRY_ENOMEM.
 *
 * LOCAL.  May be called before MPI_Init and after MPI_Finalize.  Thread-safe,
 * except that it calls H5get_libversion: with an HDF5 built without thread
 * safety, do not call it while another thread makes HDF5 calls (a loader
 * reading HDF5 files).
 */
FERRY_API int ferry_build_info(char *buf, size_t len, int json);

/* ---- Errors ----------------------------------------------------------- */

/** Return codes.  Stable: values are never reused or renumbered. */
typedef enum ferry_error {
  FERRY_OK = 0,
  FERRY_END = 1,         /**< ferry_next(): the epoch has no more batches */
  FERRY_EINVAL = -1,     /**< bad argument, unknown option or bad value   */
  FERRY_ENOMEM = -2,     /**< out of memory                               */
  FERRY_EIO = -3,        /**< a read failed or returned fewer bytes       */
  FERRY_ENOENT = -4,     /**< file or directory not found                 */
  FERRY_EFORMAT = -5,    /**< not a valid file: bad magic, corrupt header */
  FERRY_ENOTSUP = -6,    /**< valid but unsupported (dtype, order, build) */
  FERRY_EMISMATCH = -7,  /**< ranks disagree (options, dataset, plan)     */
  FERRY_EMPI = -8,       /**< an MPI call failed or MPI is unusable       */
  FERRY_ESTATE = -9,     /**< call out of order (ferry_next before epoch) */
  FERRY_ESHAPE = -10,    /**< variables of different lengths or shapes    */
  FERRY_EEMPTY = -11,    /**< dataset or epoch holds no sample            */
  FERRY_ECALLBACK = -12, /**< the user's transform callback failed        */
  FERRY_EACCES = -13,    /**< permission denied                           */
  FERRY_ENODEV = -14,    /**< no usable accelerator for device=cuda       */
  FERRY_EINTERNAL = -15, /**< a broken invariant inside ferry (a bug)     */
  FERRY_EPEER = -16      /**< another rank left a collective call (called
                              ferry_close or another collective while this
                              one was in ferry_next) or did not answer
                              within collective_timeout seconds          */
} ferry_error;

typedef struct ferry_loader ferry_loader;

/** Short static description of a code ("I/O error").  LOCAL, thread-safe. */
FERRY_API const char *ferry_strerror(int code);

/**
 * Detailed message of the last failure: for a loader, the last failure of a
 * call on that loader (identical on every rank for collective calls); for
 * NULL, the last failure of any ferry call on the calling thread (use it after
 * ferry_open or ferry_options_set failed).  Never NULL; "" when there was no
 * failure.  Valid until the next ferry call on the same loader / thread.
 * LOCAL.
 */
FERRY_API const char *ferry_last_error(const ferry_loader *loader);

/* ---- Data types ------------------------------------------------------- */

/** Element types.  Batches always hold native byte order. */
typedef enum ferry_dtype {
  FERRY_BOOL = 0,
  FERRY_INT8,
  FERRY_INT16,
  FERRY_INT32,
  FERRY_INT64,
  FERRY_UINT8,
  FERRY_UINT16,
  FERRY_UINT32,
  FERRY_UINT64,
  FERRY_FLOAT16,
  FERRY_FLOAT32,
  FERRY_FLOAT64,
  FERRY_BFLOAT16, /* bfloat16: a float32's upper 16 bits (sparse=dense's
                   * sparse_dtype=bfloat16) */
  FERRY_DTYPE_COUNT
} ferry_dtype;

/** Size in bytes of one element (0 for an invalid dtype).  LOCAL. */
FERRY_API size_t ferry_dtype_size(ferry_dtype dtype);
/** NumPy-style name ("float32", "int64", "bool"); "?" if invalid.  LOCAL. */
FERRY_API const char *ferry_dtype_name(ferry_dtype dtype);

#define FERRY_MAX_DIMS 8
/** Most devices one rank may drive (devices=all or a list). */
#define FERRY_MAX_DEVICES 16

/* ---- Options ---------------------------------------------------------- */

/**
 * Loader options.  Every option has a documented default and can be set by
 * name from a string, so the C API, the ferry tool (--batch-size 256),
 * environment variables (FERRY_BATCH_SIZE=256) and config files
 * (batch_size = 256) share one vocabulary.  See ferry_option_info().
 */
typedef struct ferry_options ferry_options;

/** Description of one option, for help texts and tools. */
typedef struct ferry_option_info {
  const char *name; /**< "batch_size"                                  */
  const char *default_value; /**< "64" */
  const char *values; /**< "none|chunks|block", "integer >= 1", ...     */
  const char *help;   /**< one sentence                                  */
} ferry_option_info;

/**
 * The i-th option's description, or NULL when i is out of range.  The table is
 * static and owned by the library.  LOCAL, thread-safe.
 */
FERRY_API const ferry_option_info *ferry_option_info_get(int i);

/** Create options holding every default.  *out is NULL on failure.
 *  Returns 0 or FERRY_EINVAL (out NULL), FERRY_ENOMEM.  LOCAL. */
FERRY_API int ferry_options_create(ferry_options **out);
/** Free options (NULL is a no-op).  LOCAL. */
FERRY_API void ferry_options_free(ferry_options *opts);
/** Deep copy.  Returns 0, FERRY_EINVAL, FERRY_ENOMEM.  LOCAL. */
FERRY_API int ferry_options_copy(const ferry_options *src, ferry_options **out);

/**
 * Set option NAME (underscores or dashes: "batch_size" == "batch-size") from
 * the string VALUE.  The value is validated now; on failure the options are
 * unchanged and ferry_last_error(NULL) names the option and the bad value.
 * Returns 0 or FERRY_EINVAL (unknown option, bad value).  LOCAL.
 */
FERRY_API int ferry_options_set(ferry_options *opts, const char *name,
                                const char *value);

/**
 * Write option NAME's current value, as ferry_options_set would accept it,
 * into buf (NUL-terminated, truncated to len).  Returns 0 or FERRY_EINVAL.
 * LOCAL.
 */
FERRY_API int ferry_options_get(const ferry_options *opts, const char *name,
                                char *buf, size_t len);

/**
 * Apply every FERRY_<OPTION> environment variable (FERRY_BATCH_SIZE, ...).
 * Returns 0 or FERRY_EINVAL naming the variable.  LOCAL.
 */
FERRY_API int ferry_options_from_env(ferry_options *opts);

/**
 * Apply a config file: one "name = value" per line, '#' starts a comment,
 * blank lines ignored.  Returns 0, FERRY_ENOENT, FERRY_EINVAL (naming file,
 * line and option).  LOCAL.
 */
FERRY_API int ferry_options_load(ferry_options *opts, const char *path);

/** A batch handed out by ferry_next(); see below. */
typedef struct ferry_batch ferry_batch;

/**
 * Optional transform run on a pipeline worker thread after a batch has been
 * assembled and before it is handed out.  It may change the data in place
 * (same dtype and shape).  It runs concurrently on several batches, so it must
 * be thread-safe.  Return 0 on success; any other value fails the batch with
 * FERRY_ECALLBACK, reported by ferry_next on every rank.
 */
typedef int (*ferry_transform_fn)(ferry_batch *batch, void *user_data);

/** Install (or with fn NULL remove) the transform.  Returns 0 or FERRY_EINVAL.
 * LOCAL. */
FERRY_API int ferry_options_set_transform(ferry_options *opts,
                                          ferry_transform_fn fn,
                                          void *user_data);

/* ---- Loader ----------------------------------------------------------- */

/**
 * Open DATASET for loading over COMM.  COLLECTIVE over comm.
 *
 * dataset: a directory of .npy files (one variable each), a single .npy file,
 *          a NumPy .npz archive (one variable per NAME.npy member), an
 *          HDF5 file, a netCDF classic file (CDF-1, CDF-2, CDF-5), a
 *          Zarr v2 or v3 store (a directory), a Parquet file or a
 *          directory of .parquet files, a WebDataset tar shard (or a
 *          directory of them), an image folder (class directories of
 *          .jpg, .jpeg and .png files, read as torchvision's ImageFolder
 *          reads them: docs/images.md), a glob such as
 *          data/train/part-*.npy (a path component that is exactly two
 *          stars matches any number of directories), '@list.txt' (one part
 *          per line), or a spec of a backend's scheme such as
 *          'mem:N=1000,vars=x:float32:4' (synthetic data, no file; see
 *          docs/user-guide.md).  Each part is read by the first backend
 *          that recognises it.  Parts are concatenated along
 *          the sample dimension: glob matches in byte-wise path order, list
 *          files in their own order.  Only rank 0 scans and reads metadata;
 *          it broadcasts the manifest.
 * opts:    options (copied; the caller keeps ownership), or NULL for defaults.
 * comm:    duplicated internally; the caller may free its handle afterwards.
 * out:     the new loader, or NULL on failure.
 *
 * Every rank returns the same code.  Returns 0, FERRY_EINVAL, FERRY_ENOENT,
 * FERRY_EACCES, FERRY_EFORMAT, FERRY_ENOTSUP, FERRY_ESHAPE, FERRY_EEMPTY,
 * FERRY_EMISMATCH (ranks passed different datasets or options), FERRY_EMPI
 * (MPI not initialised with MPI_THREAD_MULTIPLE), FERRY_ENOMEM, FERRY_ENODEV.
 */
FERRY_API int ferry_open(MPI_Comm comm, const char *dataset,
                         const ferry_options *opts, ferry_loader **out);

/**
 * Stop the pipeline and free everything.  COLLECTIVE.  Legal at any point,
 * including in the middle of an epoch with batches still held (they become
 * invalid; with device=cuda the loader's copies are finished first, and the
 * application's work on held device batches must be finished too).  NULL is a
 * no-op (and is not collective).
 *
 * Collective means every rank calls it at the same point of the loader's
 * collective calls.  To stop an epoch early, stop it at the same batch on
 * every rank, then call ferry_close (or ferry_set_epoch) on every rank.  A
 * rank that calls ferry_close while the others still call ferry_next (it
 * left the loop alone: `break` on one rank) is detected, never a hang: the
 * close joins the agreement the others' ferry_next makes, and every rank
 * gets FERRY_EPEER with the same message naming the rank that left, its
 * call and how many batches it had taken, e.g. "rank 0: called ferry_close
 * after 10 batches of epoch 0 while other ranks called ferry_next (for
 * batch 12): ...": here from ferry_close (read it with
 * ferry_last_error(NULL): the loader is freed), on the other ranks from
 * ferry_next.  Their own ferry_close then frees the loader without
 * communicating and returns 0.  (If the others had already been certified
 * to the end of the epoch, they take their remaining batches, and the
 * mismatch shows at their next collective call; their ferry_close matches
 * the early one and every rank returns 0.)  The wait for the other ranks
 * is bounded by the option collective_timeout (FERRY_EPEER naming what it
 * waited for); after a timeout the loader's memory, threads and
 * communicators are left allocated rather than freed under MPI.
 *
 * Returns 0, FERRY_EPEER, FERRY_EMPI.
 */
FERRY_API int ferry_close(ferry_loader *loader);

/**
 * Plan epoch EPOCH (>= 0) and start its pipeline.  COLLECTIVE.  Rank 0 draws
 * the seeded permutation and broadcasts it; every rank verifies a checksum of
 * the plan and of its inputs (manifest, options, seed, epoch, world size) and
 * the per-rank batch count.  An epoch still running is stopped first.
 * Returns 0, FERRY_EINVAL (batch_size larger than a rank's share with
 * tail=drop_last), FERRY_EEMPTY, FERRY_EMISMATCH, FERRY_ENOMEM, FERRY_EMPI,
 * FERRY_EPEER (another rank is in another collective call, or did not
 * answer: see ferry_close).
 */
FERRY_API int ferry_set_epoch(ferry_loader *loader, int64_t epoch);

/** Batches every rank gets this epoch (the same on all ranks; after
 *  ferry_state_load, the batches left), or a negative code before
 *  ferry_set_epoch.  LOCAL. */
FERRY_API int64_t ferry_num_batches(const ferry_loader *loader);

/**
 * One variable of a batch.  A dense variable holds batch->size rows:
 * shape[0] == batch->size.  A ragged variable (samples of different
 * lengths, docs/ragged.md) holds its samples' values one after the other:
 * shape[0] == nvalues (the sum of the lengths), shape[1..] the inner
 * shape, and sample i of the batch is values [offsets[i], offsets[i+1]).
 * With the pad option a ragged variable is padded instead: shape [size, W,
 * inner...], sample i's first lengths[i] rows, then pad_value.
 */
typedef struct ferry_tensor {
  const char *name;              /**< variable name ("samples")              */
  ferry_dtype dtype;             /**< element type, native byte order         */
  int ndim;                      /**< dimensions including the first one     */
  int64_t shape[FERRY_MAX_DIMS]; /**< shape[0] == batch->size (dense) or
                                      nvalues (ragged)                       */
  void *data;                    /**< C-order data in host memory, owned by
                                      the loader; with device=cuda the pinned
                                      host copy when keep_host=yes, else NULL */
  size_t nbytes;                 /**< bytes of the batch of this variable    */
  size_t row_bytes;              /**< bytes of one sample                    */
  void *device_data;             /**< device=cuda with one device: the batch
                                      in device memory (== shards[0].data[v]);
                                      NULL otherwise                         */
  const int64_t *offsets; /**< ragged: [batch->size + 1], offsets[0] == 0,
                               in rows of the inner shape, in host memory
                               (device=cuda too); NULL: dense             */
  const int64_t *device_offsets; /**< ragged with device=cuda: the same
                               offsets in device memory, copied with the
                               values in one transfer; else NULL          */
  int64_t nvalues;          /**< ragged: offsets[batch->size]; dense: 0     */
  int64_t max_len;          /**< ragged: the longest sample of the batch    */
  const int64_t *lengths;   /**< ragged with the pad option: [batch->size]
                                 rows of each sample (offsets is then NULL,
                                 shape [size, W, inner...], rows past a
                                 sample's length hold pad_value)          */
  const int32_t *offsets32; /**< ragged with offsets_dtype=int32, on the
                               host: the offsets as int32 (FlashAttention's
                               cu_seqlens); NULL otherwise and on device
                               batches                                   */
  const int32_t *device_offsets32; /**< the same in device memory (device=
                               cuda), carried by the batch's one copy    */
  const int64_t *device_lengths;   /**< pad with device=cuda: lengths in device
                                 memory, carried by the batch's one copy
                                 with the padded values (lengths stays the
                                 host's); NULL otherwise                   */
} ferry_tensor;

/**
 * One device's share of a batch (device=cuda).  With one device there is one
 * shard holding the whole batch; with devices=all or a list, shard i holds
 * samples [first, first + size) of the batch on device i of the list
 * (batch_size / devices samples each; the last, partial batch of
 * tail=partial fills them in order).
 */
typedef struct ferry_shard {
  int device;           /**< CUDA device ordinal                    */
  int64_t first;        /**< batch index of its first sample        */
  int64_t size;         /**< samples in it (may be 0)               */
  void *const *data;    /**< [nvars] device pointers, C order (a
                             ragged variable: its values)          */
  void *event;          /**< cudaEvent_t recorded on the loader's
                             stream after the copies: wait on it
                             (ferry_batch_wait) before reading     */
  void *const *lengths; /**< [nvars] a padded ragged variable (pad):
                          the shard's samples' lengths (int64) in
                          device memory; NULL entries otherwise */
} ferry_shard;

/** A batch: B samples of one rank.  Owned by the loader until released. */
struct ferry_batch {
  int64_t epoch; /**< epoch this batch belongs to            */
  int64_t index; /**< 0-based position in this rank's epoch  */
  int64_t size; /**< samples here (<= batch_size; may be 0 with tail=partial) */
  const int64_t *sample_ids; /**< [size] global sample indices           */
  const uint8_t
      *padded;        /**< [size] 1 where the sample repeats one (tail=pad) */
  int64_t num_padded; /**< count of padded samples                */
  int nvars;          /**< number of variables                    */
  ferry_tensor *vars; /**< [nvars], in the dataset's variable order */
  int nshards;        /**< device=cuda: shards (one per device);
                           0 when batches stay in host memory     */
  const ferry_shard *shards; /**< [nshards] or NULL                      */
};

/**
 * Hand out the next batch of this rank's epoch, in plan order: the same
 * batches for the same seed and epoch whatever the thread timing.  Blocks only
 * while the batch is not ready (the wait is counted in ferry_stats).
 *
 * COLLECTIVE: every rank calls it the same number of times (they all get
 * ferry_num_batches() batches).  Before handing a batch out, the ranks
 * certify it with one small MPI_Allreduce that covers every batch all ranks
 * have already read (usually many at once), so a failed read or callback on
 * any rank makes every rank return the same error at the same batch, never
 * a hang.  The call after the last batch returns FERRY_END without
 * communicating.  The same agreement finds a rank that left the loop
 * (ferry_close, ferry_set_epoch or a state call on one rank while the others
 * call ferry_next: FERRY_EPEER on every rank, naming it; see ferry_close)
 * and a rank that does not answer within collective_timeout seconds
 * (FERRY_EPEER: killed, stuck, or gone without a call).
 *
 * Batches handed out stay valid until ferry_release, in any number: when
 * the slot of the batch to assemble next (prefetch slots, device_prefetch
 * with device=cuda) still holds a batch the caller has not released, that
 * batch keeps its buffers and the pipeline takes a new slot, as long as the
 * slots added stay within held_memory (in whole batches; the first time a
 * loader does this it prints one note on stderr).  Nothing is allocated
 * while batches are released before their slot's next turn.
 *
 * Returns 0 (*out set), FERRY_END (*out NULL), FERRY_ESTATE (no epoch set),
 * FERRY_EINVAL (the caller holds so many batches that the slot needed is
 * held and held_memory allows no more: release one, or raise held_memory;
 * the message says how many batches and bytes are held; with
 * held_memory=0, as soon as the slot needed is held),
 * FERRY_EIO, FERRY_EFORMAT, FERRY_EMISMATCH, FERRY_ECALLBACK, FERRY_ENOMEM,
 * FERRY_EPEER.  After an error the epoch is over: call ferry_set_epoch or
 * ferry_close (after FERRY_EPEER only ferry_close: every other collective
 * call then fails with FERRY_EPEER at once, without communicating).
 */
FERRY_API int ferry_next(ferry_loader *loader, ferry_batch **out);

/**
 * Give a batch's buffers back to the pipeline.  LOCAL.  The batch must not be
 * used afterwards.  Batches may be released in any order, and at any time
 * before the next ferry_set_epoch, ferry_state_load or ferry_close (which
 * make the batches still held invalid).  Thread-safe
 * against ferry_next: it may be called from any thread (a DLPack deleter)
 * while another thread waits in ferry_next; not concurrently with
 * ferry_set_epoch, ferry_state_load or ferry_close on the same loader.
 * Returns 0 or FERRY_EINVAL (not a batch of this loader, or released twice).
 */
FERRY_API int ferry_release(ferry_loader *loader, ferry_batch *batch);

/* ---- GPU delivery (device=cuda) ---------------------------------------- */

/**
 * Make the application's CUDA stream (a cudaStream_t; NULL is the legacy
 * default stream) wait until every shard of the batch is on its device:
 * cudaStreamWaitEvent on each shard's event, no host synchronisation.
 * The stream is remembered per shard: ferry_release records an event on it
 * and the next copy into those device buffers waits for that event on the
 * GPU, so work queued on the stream before the release may still read the
 * batch.  Work on other streams must be ordered into this one (or finished)
 * before the release.  LOCAL.  Returns 0, FERRY_EINVAL (not a handed-out
 * batch, or a host batch), FERRY_ENODEV (a CUDA call failed; the message
 * names it).
 */
FERRY_API int ferry_batch_wait(const ferry_batch *batch, void *stream);

/** The same for shard i alone (one stream per device with devices=all).
 *  LOCAL.  Returns 0, FERRY_EINVAL, FERRY_ENODEV. */
FERRY_API int ferry_shard_wait(const ferry_batch *batch, int shard,
                               void *stream);

/**
 * Register the loader's device batch buffers on the device of COMM (an
 * ncclComm_t) with ncclCommRegister, so batches enter NCCL collectives on
 * that communicator zero-copy; the buffers come from ncclMemAlloc when the
 * library has NCCL.  Call it once per communicator (with devices=all, once
 * per device's communicator).  ferry_close (or ferry_detach_nccl)
 * deregisters them -- unless the communicator reports an error
 * (ncclCommGetAsyncError), when the registrations are left to the
 * application's ncclCommAbort and nothing blocks.  LOCAL.  Returns 0,
 * FERRY_EINVAL (NULL, or no device buffer on the communicator's device),
 * FERRY_ENOTSUP (built without NCCL, or device batches are not in use),
 * FERRY_ENODEV (an NCCL call failed; the message names it and the NCCL
 * error).
 */
FERRY_API int ferry_attach_nccl(ferry_loader *loader, void *nccl_comm);
/** Deregister from every attached communicator now (before the
 *  application destroys one).  LOCAL.  Returns 0 or FERRY_ENODEV. */
FERRY_API int ferry_detach_nccl(ferry_loader *loader);

/** Where this rank's batches go. */
typedef struct ferry_device_info {
  int cuda;                       /**< 1: device memory, 0: host memory       */
  int ndevices;                   /**< devices this rank drives (0 on host)   */
  int devices[FERRY_MAX_DEVICES]; /**< their CUDA ordinals                  */
  int visible;                    /**< CUDA devices visible to the process
                                       (-1 when CUDA is not built in)         */
  int local_rank, local_size;     /**< index and ranks on this node
                                       (MPI_COMM_TYPE_SHARED)                 */
  int nccl_attached;              /**< communicators registered               */
  const char *how;                /**< how it was chosen, or why batches stay
                                       on the host (owned by the loader)      */
} ferry_device_info;

/** Describe this rank's delivery.  Returns 0 or FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_device_info_get(const ferry_loader *loader,
                                    ferry_device_info *out);

/* ---- Checkpoint and resume -------------------------------------------- */

/**
 * Save how far the current epoch got to PATH.  COLLECTIVE.  Call it between
 * two ferry_next calls, at the same point on every rank (the ranks check
 * that they all handed out the same number of batches).
 *
 * What counts as served: every batch ferry_next has returned on this loader
 * before the call, whether or not it was released -- so save after the
 * training step on the last batch is done (and with the model checkpoint
 * that includes it).  A resume serves exactly the other samples of the
 * epoch.
 *
 * The state holds no sample list (the plan is recomputed on load): the
 * dataset's manifest hash, the options that shape the plan, the seed, the
 * epoch, the batches served and the world size (and those of earlier
 * resumes of this epoch): a few hundred bytes.  Rank 0 writes it, after
 * every rank has reached the call, to PATH.tmp.PID and renames it over PATH,
 * so PATH always holds a complete state.  Format: a header line
 * "FERRY-STATE <version> <checksum> <length>" and a JSON body; see
 * docs/user-guide.md.  A successful save also clears the checkpoint request
 * (ferry_checkpoint_requested returns 0 until the next signal).
 *
 * Returns 0, FERRY_EINVAL (path NULL or empty), FERRY_ESTATE (no epoch, or
 * the epoch failed), FERRY_EMISMATCH (ranks are at different batches),
 * FERRY_ENOENT/FERRY_EACCES/FERRY_EIO (writing PATH), FERRY_ENOMEM,
 * FERRY_EMPI; the same code and message on every rank.
 */
FERRY_API int ferry_state_save(ferry_loader *loader, const char *path);

/**
 * Resume from a state saved by ferry_state_save: instead of
 * ferry_set_epoch, set the saved epoch and start it at the saved position.
 * COLLECTIVE.  Rank 0 reads PATH and broadcasts it; every rank validates it.
 *
 * The ranks then serve exactly the samples of that epoch not served before
 * the save -- nothing repeated, nothing skipped:
 *  - with the same number of ranks, every rank continues its own plan: the
 *    batches are exactly those the interrupted run would have served next;
 *  - with another number of ranks (elastic), the unserved samples are dealt
 *    again into equal batch counts under the same tail rule: tail=partial
 *    and tail=pad serve every remaining sample once (pad adds marked
 *    repeats); tail=drop_last may drop up to ranks * batch_size - 1 more
 *    (counted in ferry_epoch_info.dropped_samples).
 * ferry_num_batches() is then the batches left; batch->index and
 * ferry_epoch_info.first_batch continue from the saved position.  When the
 * resumed epoch ends (FERRY_END), call ferry_set_epoch(epoch + 1) as usual;
 * ferry_epoch_info_get gives the epoch.  A state saved after the last batch
 * resumes an epoch with no batch left.
 *
 * The options that shape the plan (batch_size, seed, shuffle, block_size,
 * shuffle_buffer, partition, tail, chunk_samples, vars, max_chunks,
 * fraction) must be the same as when the state was saved; threads,
 * prefetch, io, device and the number of ranks may differ.
 *
 * Returns 0, FERRY_ENOENT (no such file: start with ferry_set_epoch
 * instead), FERRY_EACCES, FERRY_EIO, FERRY_EFORMAT (not a state file,
 * truncated, checksum mismatch, malformed), FERRY_ENOTSUP (written by a
 * newer ferry: a higher format version), FERRY_EMISMATCH (another dataset,
 * or another value of a plan option: the message names it and both
 * values), FERRY_EINVAL, FERRY_ENOMEM, FERRY_EMPI; the same code and
 * message on every rank.  On failure no epoch is set.
 */
FERRY_API int ferry_state_load(ferry_loader *loader, const char *path);

/**
 * The in-memory form of ferry_state_save: the same bytes the file would
 * hold (header line and JSON body), handed to every rank, so that the state
 * can go into an application's own checkpoint (a PyTorch, Lightning or
 * Orbax one).  COLLECTIVE, at the same point on every rank, as
 * ferry_state_save; the same bytes on every rank.
 *
 * @param buf  receives a malloc'd buffer of *len bytes (not NUL-terminated);
 *             the caller frees it with free().  NULL on failure.
 * @param len  receives its length
 *
 * Returns 0, FERRY_EINVAL (buf or len NULL), FERRY_ESTATE, FERRY_EMISMATCH,
 * FERRY_ENOMEM, FERRY_EMPI, as ferry_state_save; the same code and message
 * on every rank.  A success clears the checkpoint request.
 */
FERRY_API int ferry_state_save_buffer(ferry_loader *loader, void **buf,
                                      size_t *len);

/**
 * The in-memory form of ferry_state_load: resume from the LEN bytes at BUF,
 * as ferry_state_save_buffer returned them or as read from a state file.
 * COLLECTIVE.  Rank 0's bytes are broadcast and used; the other ranks' buf
 * and len are ignored (they may pass NULL, 0), so a state that only rank 0
 * kept still resumes every rank.  Messages name the state "(buffer)".
 * Returns the codes of ferry_state_load but FERRY_ENOENT, FERRY_EACCES and
 * FERRY_EIO (FERRY_EINVAL: buf NULL on rank 0); the same on every rank.
 */
FERRY_API int ferry_state_load_buffer(ferry_loader *loader, const void *buf,
                                      size_t len);

/**
 * 1 when a checkpoint was requested, 0 otherwise.  LOCAL, and yet the same
 * on every rank after the same ferry_next call: when the checkpoint_signal
 * option names a signal (default USR1, as `sbatch --signal=B:USR1@120`
 * sends), ferry_open installs a handler (sigaction, SA_RESTART) that only
 * sets a flag, and ferry_next folds the flag into its certification
 * all-reduce, so the request becomes visible on every rank when the same
 * batch is handed out, even if the signal reached the ranks at different
 * times.  With a handler installed, ferry_next certifies at most about a
 * quarter of a second of batches ahead, so a request is seen within about
 * that time (or one batch, if batches are slower).  Check it after the
 * training step on each batch; when it is 1, call ferry_state_save and
 * exit (the ferry tool exits 75, EX_TEMPFAIL, "checkpointed, requeue me").
 * It stays 1 until a ferry_state_save succeeds.  A handler installed
 * before ferry_open is chained (called after the flag is set) unless it is
 * SIG_DFL or SIG_IGN; ferry_close restores it.  Signals are per process:
 * with several loaders, all see the request.
 */
FERRY_API int ferry_checkpoint_requested(const ferry_loader *loader);

/**
 * Ask for the agreed checkpoint, as the checkpoint signal does: for a
 * framework that owns the signal (Lightning installs its own SIGUSR1
 * handler when training starts) and calls this from its handler or its
 * loop.  The request is folded into ferry_next's next certification, so
 * ferry_checkpoint_requested turns 1 on every rank at the same batch (a
 * request on any one rank is enough).  It stays until a ferry_state_save
 * succeeds.  LOCAL; async-signal-safe and thread-safe (it sets one atomic
 * flag).  Returns 0, or FERRY_EINVAL for a NULL loader.
 *
 * When checkpoint_signal names a signal and another handler replaced
 * ferry's after ferry_open, rank 0 prints one warning per loader
 * ("ferry: warning: another handler replaced ferry's for signal N ...").
 */
FERRY_API int ferry_request_checkpoint(ferry_loader *loader);

/* ---- Dataset and plan inspection (LOCAL after ferry_open) ------------- */

/** Description of one variable of the dataset. */
typedef struct ferry_var_info {
  const char *name;              /**< "samples"                             */
  ferry_dtype dtype;             /**< element type once loaded (native)     */
  int swapped;                   /**< 1 when stored in the other byte order */
  int ndim;                      /**< dimensions of the whole variable      */
  int64_t shape[FERRY_MAX_DIMS]; /**< shape[0] = N, the number of samples   */
  size_t row_bytes;              /**< bytes of one sample                   */
  int64_t chunk_rows; /**< storage chunk along the sample dimension (HDF5,
                         Zarr), 0: not chunked */
  size_t cache_bytes; /**< decode cache kept per open file for it (in the memory
                         budget) */
  const char
      *storage; /**< layout for people: "chunks (1024, 256), shuffle+gzip(1),
                   ratio 3.10:1"; NULL if the backend says nothing */
  int ragged;   /**< 1: samples of different lengths (docs/ragged.md): ndim
                     and shape[1..] are then the inner shape, row_bytes one
                     inner row, and the lengths are below               */
  int64_t min_len, max_len; /**< ragged: shortest and longest sample      */
  int64_t total_rows;       /**< ragged: rows of all samples (the values) */
  int64_t batch_rows;       /**< ragged: the most rows a batch slot can need
                               (the batch_size longest samples, or max_tokens:
                               no batch of any epoch needs more); each epoch's
                               slots hold its largest batch (made at
                               ferry_set_epoch, docs/ragged.md)               */
  int offsets_of;           /**< ragged: the variable whose offsets this one's
                               batches share (its lengths are that one's in
                               every sample: a "group", docs/ragged.md), its
                               own index when none before it has them; -1
                               for a dense variable                         */
  int64_t width; /**< ragged: the columns of the sparse matrix whose rows it
                      holds (an AnnData CSR matrix's indices or data:
                      n_vars, docs/singlecell.md); 0: none               */
  const char *categories; /**< a categorical variable's names: code k is the
                               k-th of these '\n'-joined names (an AnnData
                               obs column's codes); NULL: none           */
  int64_t ncategories;    /**< how many names categories holds            */
} ferry_var_info;

/** Number of variables selected.  LOCAL. */
FERRY_API int ferry_num_vars(const ferry_loader *loader);
/** Describe variable i (strings owned by the loader).  Returns 0 or
 * FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_var_info_get(const ferry_loader *loader, int i,
                                 ferry_var_info *out);
/** Total samples N in the dataset (before subsetting).  LOCAL. */
FERRY_API int64_t ferry_num_samples(const ferry_loader *loader);
/** Number of parts (files or directories) of the dataset.  LOCAL. */
FERRY_API int64_t ferry_num_parts(const ferry_loader *loader);
/** Path of part i of variable var (owned by the loader), NULL if out of range.
 * LOCAL. */
FERRY_API const char *ferry_part_path(const ferry_loader *loader, int64_t part,
                                      int var);
/** One source of a mix (a dataset opened as "mix:LIST" or "mix:@FILE",
 *  or with the mix option; docs/sampling.md): strings owned by the
 *  loader. */
typedef struct ferry_mix_info {
  const char *path;    /**< the source's dataset string                  */
  const char *backend; /**< the backend that reads it ("npy", "hdf5")    */
  const char *exhaust; /**< what happens when it runs out: "stop",
                        *   "restart" or "drop"                          */
  int64_t first;       /**< its first sample in the mix's sample order   */
  int64_t samples;     /**< its samples                                  */
  double proportion;   /**< requested proportion, normalised to sum 1    */
} ferry_mix_info;
/** Number of sources of a mix, 0 when the dataset is not a mix.  LOCAL. */
FERRY_API int ferry_mix_count(const ferry_loader *loader);
/** Describe source i of a mix.  Returns 0, FERRY_EINVAL (no such source),
 *  FERRY_EFORMAT (a corrupt manifest record).  LOCAL. */
FERRY_API int ferry_mix_source(const ferry_loader *loader, int i,
                               ferry_mix_info *out);
/** The packing of a loader opened with pack=concat (docs/lm.md): the
 *  figures of one epoch's rows, before the tail rule across ranks. */
typedef struct ferry_pack_info {
  int64_t seq_len;   /**< L: the inputs of a row                          */
  int overlap;       /**< 1: a row also holds the next row's first token  */
  int64_t documents; /**< documents of the corpus (empty ones too)        */
  int64_t tokens;    /**< the corpus's tokens                             */
  int64_t rows;      /**< rows of an epoch (the loader's samples)         */
  int64_t padding;   /**< padding positions among the rows' inputs        */
  int64_t dropped;   /**< tokens no row has as an input (the tail)        */
  double efficiency; /**< non-padding fraction of the rows' inputs        */
  int64_t split;     /**< documents cut by a row boundary in the epoch    */
  int64_t runs;      /**< runs of documents shuffled (pack_chunk each)    */
  int64_t run_docs;  /**< documents of a run (the last of a part fewer)   */
} ferry_pack_info;
/** The packing of epoch `epoch` (split depends on it: a walk over the
 *  documents, O(documents)).  Returns 0, FERRY_EINVAL when the loader does
 *  not pack, FERRY_ENOMEM.  LOCAL. */
FERRY_API int ferry_pack_stats(const ferry_loader *loader, int64_t epoch,
                               ferry_pack_info *out);
/** What the backend chose as variables and what it skipped, and why
 *  ("chose samples, group/targets (97 rows); skipped /meta/classes (5 rows
 *  where the sample dimension has 97)"), or NULL when it has nothing to say
 *  (owned by the loader).  LOCAL. */
FERRY_API const char *ferry_dataset_notes(const ferry_loader *loader);
/** How rows are read and why: the mode io resolved to, then the reason in
 *  parentheses ("mmap (io=auto: data/x.npy is on ext2/3/4, f_type 0xef53,
 *  a local file system)", "independent (set by io=independent)"); owned
 *  by the loader.  LOCAL. */
FERRY_API const char *ferry_io_choice(const ferry_loader *loader);
/** Name of the backend serving this dataset ("npy").  LOCAL. */
FERRY_API const char *ferry_backend(const ferry_loader *loader);

/** One chunk: a contiguous run of samples of one part, the unit of reading. */
typedef struct ferry_chunk_info {
  int64_t id;           /**< chunk number, 0..num_chunks-1, in storage order */
  int64_t part;         /**< part holding it                                 */
  int64_t first_sample; /**< global index of its first sample                */
  int64_t num_samples;  /**< samples in it                                   */
} ferry_chunk_info;

/** Number of chunks of the dataset (before subsetting).  LOCAL. */
FERRY_API int64_t ferry_num_chunks(const ferry_loader *loader);
/** Describe chunk id.  Returns 0 or FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_chunk_info_get(const ferry_loader *loader, int64_t id,
                                   ferry_chunk_info *out);

/** What this rank's plan for the current epoch holds. */
typedef struct ferry_epoch_info {
  int64_t epoch;
  int64_t num_batches;     /**< batches per rank (equal on every rank)       */
  int64_t epoch_samples;   /**< samples in the epoch after max_chunks/fraction,
                              all ranks */
  int64_t served_samples;  /**< samples this rank serves, pads included     */
  int64_t padded_samples;  /**< of which repeats (tail=pad)                 */
  int64_t dropped_samples; /**< samples of the epoch no rank serves (drop_last),
                              all ranks */
  int64_t num_chunks;      /**< chunks (or pieces of chunks) this rank reads */
  uint64_t plan_checksum;  /**< checksum all ranks verified                 */
  int64_t first_batch;     /**< index of the first batch: 0, or after
                                ferry_state_load the batches every rank
                                served before the checkpoint              */
} ferry_epoch_info;

/** Describe the current epoch on this rank.  Returns 0 or FERRY_ESTATE.  LOCAL.
 */
FERRY_API int ferry_epoch_info_get(const ferry_loader *loader,
                                   ferry_epoch_info *out);

/**
 * This rank's reads for the current epoch, in plan order: up to max entries
 * of (chunk id, first sample, count) -- a chunk may be split between ranks,
 * or read in blocks with shuffle=block (with shuffle=global: the reads of
 * the global windows left to serve; the samples served come from every
 * rank's reads).  *count receives the total number of entries.  Returns 0,
 * FERRY_ESTATE or FERRY_ENOMEM.  LOCAL.
 */
FERRY_API int ferry_epoch_chunks(const ferry_loader *loader,
                                 ferry_chunk_info *out, int64_t max,
                                 int64_t *count);

/**
 * The samples per chunk this loader cuts (the chunk_samples option, resolved
 * when 0), and in *why (may be NULL; owned by the loader) one line saying
 * which rule chose it.  LOCAL.  Returns FERRY_EINVAL for a NULL loader.
 */
FERRY_API int64_t ferry_chunk_samples(const ferry_loader *loader,
                                      const char **why);

/**
 * The order a job with this loader's dataset and options over world_size
 * ranks serves on rank `rank` in epoch `epoch`, computed from the plan alone
 * (nothing is read; the plan is a pure function of the dataset, the
 * options, the seed, the epoch, the world size and the rank, so one process
 * can ask for every rank of any world size).  chunk_samples=0 is resolved
 * for world_size, as such a job would.
 *
 * @param samples      receives a malloc'd array: the global sample index of
 *                     every sample served, in order (pads included)
 * @param chunks       (may be NULL) receives a malloc'd array: the chunk
 *                     holding each of them, in such a job's numbering
 * @param batch_start  receives a malloc'd array of *num_batches + 1 offsets
 *                     into samples: batch b is [batch_start[b],
 *                     batch_start[b+1])
 * The caller frees the arrays with free().  LOCAL.  Returns 0, FERRY_EINVAL
 * (a NULL argument, world_size < 1, rank outside [0, world_size), epoch < 0,
 * or a plan the options refuse, as ferry_set_epoch would),
 * FERRY_EEMPTY, FERRY_ENOMEM; the message is ferry_last_error(NULL).
 */
FERRY_API int ferry_plan_order(const ferry_loader *loader, int64_t epoch,
                               int world_size, int rank, int64_t **samples,
                               int64_t **chunks, int64_t **batch_start,
                               int64_t *num_batches);

/**
 * Sampling (docs/sampling.md): weighted (the weights option), class-balanced
 * (balance) or a mix of datasets (mix).  An epoch is then a sequence of
 * draws, the same for every world size; each global batch (batch_size x
 * ranks draws) is cut among the ranks.
 */
typedef struct ferry_sampling_info {
  int mode;           /**< 0 none, 1 weighted (weights or balance), 2 a mix */
  int replacement;    /**< weighted: draws with replacement                 */
  int64_t draws;      /**< draws of the current epoch (0 before set_epoch)  */
  int64_t block;      /**< rows of a sampling block (the unit of reading) */
  int64_t nonzero;    /**< weighted: samples of non-zero weight             */
  int64_t nclasses;   /**< balance: classes present                         */
  int64_t ngroups;    /**< groups ferry_sampling_group describes            */
  double blocking_tv; /**< total variation distance between the requested
                         per-sample expected draws and the plan's: 0 (since
                         issue 30 a block's count of an epoch's draws is
                         its expected one and samples inside it are drawn
                         by weight; kept for compatibility) */
  char what[256];     /**< one line: where the weights or the mix come from */
} ferry_sampling_info;

/** The loader's sampling.  LOCAL.  Returns 0 or FERRY_EINVAL. */
FERRY_API int ferry_sampling_info_get(const ferry_loader *loader,
                                      ferry_sampling_info *out);

/**
 * Group g (0 <= g < ngroups) of the samples, for reports of requested vs
 * observed shares: global indices [*first, *first + *count) (weighted: ten
 * equal ranges of the dataset; a mix: its sources), *requested the share of
 * the draws asked for (the weights' sum over the group / their total; a
 * mix's normalised proportion), *planned the share the current epoch's
 * draws give it (a mix after its exhaustion rules; weighted with
 * replacement: the requested one; without: the group's share of the
 * inclusion probabilities of the epoch's draws -- its non-zero samples over
 * all in a full epoch).  LOCAL, after ferry_set_epoch.  Returns 0,
 * FERRY_EINVAL, FERRY_ESTATE (no epoch yet).
 */
FERRY_API int ferry_sampling_group(const ferry_loader *loader, int64_t g,
                                   int64_t *first, int64_t *count,
                                   double *requested, double *planned);

/** Memory the loader may use, by component, known at ferry_open/set_epoch
 * (with ragged variables, batch_bytes and what follows from it are the
 * bound over every epoch after ferry_open, and the epoch's own slots after
 * ferry_set_epoch). */
typedef struct ferry_memory_budget {
  size_t batch_bytes;  /**< one batch of every variable                     */
  size_t ring_bytes;   /**< prefetch * batch_bytes (the ready-batch ring)   */
  size_t read_bytes;   /**< chunk buffers resident at once (shuffle buffer and
                          reads in flight) */
  size_t plan_bytes;   /**< the epoch plan (sample order) on this rank      */
  size_t cache_bytes;  /**< the backend's decode caches: each variable's
                          cache_bytes times the files open at once */
  size_t total_bytes;  /**< the sum: the bound on host memory               */
  size_t pinned_bytes; /**< of which page-locked (the ring, device=cuda)    */
  size_t
      device_bytes;  /**< device memory, all devices: device_prefetch batches */
  size_t held_bytes; /**< on top of total_bytes (device=cuda: of
                          device_bytes, and with keep_host of both): the
                          most memory for batches the caller holds longer
                          than the ring lasts, held_memory in whole batches;
                          used only while it does (see ferry_next) */
  size_t index_bytes; /**< in total_bytes: the offsets of ragged variables
                           (8 bytes per sample of each), held on every rank
                           for the loader's life; 0 when they are mapped
                           from a saved manifest's offsets' file, whose
                           pages are the page cache's (docs/ragged.md) */
} ferry_memory_budget;

/** The memory bound of this loader.  Returns 0 or FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_memory_budget_get(const ferry_loader *loader,
                                      ferry_memory_budget *out);

/** Counters since ferry_open. */
typedef struct ferry_stats {
  int64_t batches;     /**< batches handed out                          */
  int64_t samples;     /**< samples handed out                          */
  int64_t bytes;       /**< bytes handed out (all variables)            */
  int64_t bytes_read;  /**< bytes read from storage                     */
  double wait_seconds; /**< time ferry_next spent waiting for data      */
  double read_seconds; /**< time the I/O thread spent in reads          */
  size_t
      peak_resident_bytes; /**< most buffer bytes held at once (ring + reads) */
  int64_t h2d_bytes;       /**< bytes copied to devices (device=cuda)       */
  double h2d_seconds;      /**< GPU time of those copies (CUDA events), summed
                                over copies that completed                  */
  int64_t exchange_bytes;  /**< shuffle=global: bytes this rank sent to
                                other ranks in the exchanges              */
  double exchange_seconds; /**< shuffle=global: time the I/O thread spent
                                exchanging (start to finish)            */
  int64_t images_decoded;  /**< decode=: images decoded (every epoch, every
                                decode= variable)                     */
  double decode_cpu_seconds;  /**< decode=: CPU time of the threads while they
                                   decoded those images (their thread CPU
                                   clocks, summed): over the process's CPU
                                   time, decode's share of it            */
  int64_t cache_local_bytes;  /**< cache=node|cluster: bytes served from
                                   this node's cache (bytes_read is then
                                   what came from storage only)          */
  int64_t cache_remote_bytes; /**< cache=cluster: bytes received from other
                                   nodes' caches                          */
  int64_t cache_sent_bytes;   /**< cache=cluster: bytes sent to other nodes
                                   (answers of this rank's server, and
                                   chunks read here stored on their
                                   owners)                                */
  int64_t cache_stored_bytes; /**< bytes this rank stored in a node's cache
                                   (its own node's, or received by its
                                   server)                                */
} ferry_stats;

/** Read the counters.  Returns 0 or FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_stats_get(const ferry_loader *loader, ferry_stats *out);

/** The node cache (options cache, cache_bytes; docs/cache.md): where the
 *  chunks are kept and what an epoch is expected to move once the cache is
 *  filled.  All zeros with cache=none. */
typedef struct ferry_cache_info {
  int mode;       /**< 0 none, 1 node, 2 cluster                         */
  int nodes;      /**< nodes of the job (FERRY_NODE_SIZE: simulated)     */
  int node;       /**< this rank's node, 0..nodes-1                      */
  int node_ranks; /**< ranks on this node                                */
  int64_t capacity_bytes; /**< what each node may give (agreed)          */
  int64_t node_bytes;     /**< chunk bytes this node's region holds when
                               full (cache=cluster: the chunks it owns)  */
  int64_t max_node_bytes; /**< the largest node_bytes of any node        */
  int64_t region_bytes;   /**< this node's shared-memory region, state
                               included                                  */
  int64_t dataset_bytes;  /**< bytes of every chunk, as read             */
  int64_t cached_bytes;   /**< of them, cached (on some node)            */
  int64_t chunks, cached_chunks;
  int64_t storage_bytes_per_epoch; /**< once filled: read from storage
                                        per epoch, all ranks             */
  int64_t network_bytes_per_epoch; /**< once filled: moved between nodes
                                        per epoch, all ranks (about
                                        (nodes-1)/nodes of the cached)   */
  char note[512]; /**< why the capacity is less than asked, and advice
                       (pack= with cache=cluster: pack_chunk), or ""  */
} ferry_cache_info;

/** What the cache holds (see ferry_cache_info).  Returns 0 or
 *  FERRY_EINVAL.  LOCAL. */
FERRY_API int ferry_cache_info_get(const ferry_loader *loader,
                                   ferry_cache_info *out);

/**
 * Write the manifest (parts, variables, shapes, sizes) as JSON to path so
 * the `manifest` option can skip the scan next time.  LOCAL: call it on one
 * rank.  Returns 0, FERRY_EIO, FERRY_EACCES.
 */
FERRY_API int ferry_manifest_save(const ferry_loader *loader, const char *path);

/** Rank of this process in the loader's communicator, and its size.  LOCAL. */
FERRY_API int ferry_rank(const ferry_loader *loader);
FERRY_API int ferry_world_size(const ferry_loader *loader);

/* ---- Images of decode= (docs/images.md, "Checking images") ---------- */

/** One image of a decode= variable: where it is, what its headers say,
 *  and whether it could be read (no pointers: records travel between
 *  ranks as bytes). */
typedef struct ferry_image_info {
  int64_t sample;    /**< global sample index                                */
  int64_t part;      /**< its part (file or shard): ferry_part_path(part, 0)  */
  int64_t row;       /**< its row in the part (a WebDataset shard: the n-th
                          sample of the tar, in member order)                 */
  int var;           /**< the decoded variable (ferry_var_info_get)          */
  int64_t bytes;     /**< the encoded image's bytes                          */
  int status;        /**< 0: good; else the FERRY_E* code the loader would
                          fail with (FERRY_EFORMAT: corrupt or truncated,
                          FERRY_ENOTSUP: 12-bit or lossless JPEG, a format
                          this build cannot decode, FERRY_ESHAPE: a size
                          crop=none cannot serve)                            */
  char message[512]; /**< status != 0: "decode: file F, variable V, sample
                          S (row R of the file, B bytes): the decoder's
                          message", the loader's message without the rank  */
  /* the headers (when they could be read; zeros otherwise) */
  char format[8];      /**< "jpeg", "png", "" when unknown              */
  int64_t width;       /**< pixels                                       */
  int64_t height;      /**< pixels                                       */
  int channels;        /**< components stored: JPEG 1, 3 or 4 (CMYK);
                            PNG 1 gray, 2 gray+alpha, 3 RGB or palette,
                            4 RGBA                                       */
  int bit_depth;       /**< JPEG 8; PNG 1-16                             */
  int progressive;     /**< a progressive JPEG, or an interlaced PNG     */
  char subsampling[8]; /**< JPEG "4:4:4", "4:2:2", "4:2:0", "4:4:0",
                            "4:1:1", "gray", "other"; PNG ""              */
} ferry_image_info;

/**
 * Read the headers of the images of `var` (a variable named by the decode
 * option, index as for ferry_var_info_get) in samples samples[0, n)
 * (global indices, any order): out[i] describes samples[i].  No pixel is
 * decoded: each sample's bytes are read and its JPEG or PNG headers
 * parsed (format, size, channels, sampling), bounded by its bytes.  A
 * sample whose headers cannot be read is out[i].status != 0 with the
 * message, not a failure of the call.  LOCAL (the rank reads on its own:
 * `ferry info` probes a sample of the images on rank 0); not thread-safe
 * with other calls on the same loader.  Returns 0, FERRY_EINVAL (no
 * decode option, var not decoded, a sample out of range, NULL), FERRY_EIO
 * (a read failed), FERRY_ENOMEM; the message in ferry_last_error.
 */
FERRY_API int ferry_image_probe(ferry_loader *loader, int var,
                                const int64_t *samples, int64_t n,
                                ferry_image_info *out);

/** What ferry_image_verify found, the same on every rank. */
typedef struct ferry_image_report {
  int64_t checked; /**< images decoded: samples x decoded variables   */
  int64_t bad;     /**< of them, images the loader would fail on      */
  int nfaults;     /**< records written to faults: min(bad, max_faults) */
} ferry_image_report;

/**
 * Decode every image of every decode= variable of the dataset, as the
 * loader would serve it (its decode options; a random crop as epoch 0
 * draws it; the `threads` lanes of the decode pool), and report every
 * one that fails instead of stopping at the first.  Each rank decodes a
 * contiguous share of the samples (sample order); the counts are summed
 * and the first max_faults bad images in (sample, variable) order are
 * given to every rank in faults[0, report->nfaults), so the report does
 * not depend on the rank count.  Run it before a job (`ferry verify
 * --images`); it costs one decode per image, spread over the ranks.
 * COLLECTIVE over the loader's communicator; call it outside an epoch's
 * batches (before ferry_set_epoch or after FERRY_END).  faults may be
 * NULL when max_faults is 0.  Returns 0 (bad images are in the report,
 * not an error) on every rank, or the same error on every rank:
 * FERRY_EINVAL (no decode option, NULL), FERRY_EIO (a read failed),
 * FERRY_ENOMEM, FERRY_EMPI; the message in ferry_last_error.
 */
FERRY_API int ferry_image_verify(ferry_loader *loader, int max_faults,
                                 ferry_image_report *report,
                                 ferry_image_info *faults);

#ifdef __cplusplus
}
#endif
#endif /* FERRY_H */
