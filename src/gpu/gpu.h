/*
 * gpu/gpu.h - the GPU stage: devices, streams, the device ring, NCCL
 * (gpu/cuda.c over gpu/cudalib.c, which loads the CUDA runtime and NCCL at
 * run time; gpu/nocuda.c in a build without CUDA headers).
 */
#ifndef FERRY_GPU_H
#define FERRY_GPU_H

#include "core/manifest.h"
#include "core/options.h"

/** Per-loader CUDA state: the devices, one non-blocking stream each, the
 *  attached NCCL communicators.  Opaque outside cuda.c. */
typedef struct ferry__gpu ferry__gpu;

#define FERRY__DSLOT_MAGIC 0x66657272796473ULL /* "ferryds" */

/**
 * One slot of the device ring: a batch's buffers on every device of the
 * rank, the events of its copies, and the ferry_batch handed out for it.
 * State fields marked (L) are guarded by the epoch mutex of the loader
 * (src/loader/loader.h); the CUDA fields are used by one thread at a time (the
 * worker that copies, then the consumer that waits and releases).
 */
/* A ragged variable's slot (host and device alike): its batch_size + 1
 * offsets as int64, then (at FERRY__RAGGED_OFF32) as int32 for
 * offsets_dtype=int32, padded to 256 bytes, then its values, so that one
 * copy carries all (docs/ragged.md). */
#define FERRY__RAGGED_HEAD(B)                                                  \
  ((((size_t)(B) + 1) * (sizeof(int64_t) + sizeof(int32_t)) + 255) / 256 * 256)
#define FERRY__RAGGED_OFF32(B) (((size_t)(B) + 1) * sizeof(int64_t))

/** sparse=dense on the device (decision 0056): variable k of a device
 *  batch whose host batch keeps the CSR pairs ragged.  The same fields as
 *  the CPU view's (src/loader/sparse.c), which owns them. */
typedef struct ferry__densify_var {
  int src;       /* the host variable: as it is, or the pair's indices   */
  int data;      /* the pair's values (host variable); -1: src as it is  */
  int64_t width; /* the matrix's columns                                 */
  int64_t kept;  /* the dense row's columns                              */
  int64_t *map;  /* [width] column -> place, -1 dropped; NULL: all       */
} ferry__densify_var;

typedef struct ferry__dslot {
  ferry_batch batch; /* handed out; must stay the first member  */
  uint64_t magic;    /* FERRY__DSLOT_MAGIC                      */
  ferry__gpu *gpu;
  ferry_tensor *tensors; /* [nvars]                                 */
  ferry_shard shards[FERRY_MAX_DEVICES];
  void **ptrs;  /* [nshards * nvars] device pointers       */
  void **sdata; /* [nshards * nvars] the shards' data: ptrs, or after the
                 * head of a ragged variable's region (its values)      */
  void **slens; /* [nshards * nvars] pad: the shards' device lengths (the
                 * head of a padded ragged variable's region), or NULL  */
  void *mem[FERRY_MAX_DEVICES]; /* one allocation per shard                */
  size_t mem_bytes[FERRY_MAX_DEVICES];
  int64_t per; /* samples per shard: batch_size / devices */
  void *ev_start[FERRY_MAX_DEVICES], *ev_done[FERRY_MAX_DEVICES];
  void *ev_release[FERRY_MAX_DEVICES]; /* recorded on the consumer's stream */
  void *consumer[FERRY_MAX_DEVICES];   /* stream of the last ferry_*_wait  */
  int has_consumer[FERRY_MAX_DEVICES];
  int release_pending[FERRY_MAX_DEVICES]; /* next copy waits on ev_release */
  int timing_pending; /* copies whose time is not counted yet   */
  int64_t *ids;
  uint8_t *padded;
  const ferry__densify_var *dz; /* [nvars] sparse=dense on the device: the
                                 * host variables of each, or NULL   */
  void **zbuf;     /* (dz) [3 * nvars] a dense variable's device staging: the
                    * pair's offsets and indices (a ragged region), its
                    * values, its column map (NULL: all)                   */
  int64_t **hoffs; /* [nvars] a ragged variable's offsets (host copy), or
                    * NULL; its device region starts with them too
                    * (FERRY__RAGGED_HEAD)                               */
  int state;       /* (L) SLOT_* of src/loader/loader.h      */
  int64_t bidx;    /* (L) batch held                          */
  int64_t expect;  /* (L) the batch it serves next            */
  int host;        /* (L) keep_host: paired host ring slot, -1 */
  int rc;          /* (L) copy result                         */
  ferry__err err;
} ferry__dslot;

/**
 * Decide where batches go.  LOCAL (the loader's open.c agrees on the result).
 * *out is NULL for host delivery, with how saying why (device=cpu; device=auto
 * and no usable GPU; built without CUDA); else how says which devices and why.
 * FERRY_ENOTSUP: device=cuda in a build without CUDA; FERRY_ENODEV:
 * device=cuda without a usable GPU (no device, or the CUDA runtime could
 * not be loaded: the message names it and why), or a devices list naming
 * an absent one;
 * FERRY_EINVAL: batch_size not divisible by the number of devices.
 */
int ferry__gpu_open(const ferry_options *o, int rank, int local_rank,
                    ferry__gpu **out, char *how, size_t howlen,
                    ferry__err *err);
/** Finish every copy, deregister NCCL (unless the communicator failed),
 *  destroy the streams.  NULL is a no-op. */
void ferry__gpu_close(ferry__gpu *g);
/** Visible CUDA devices (-1 when not built in, 0 when none usable or the
 *  runtime could not be loaded). */
int ferry__gpu_visible(void);
/** Versions found at run time (CUDA runtime, driver, NCCL; as their
 *  version calls return them, e.g. 12040), -1 for each one absent. */
void ferry__gpu_versions(int *runtime, int *driver, int *nccl);
/** One line saying where the CUDA runtime and NCCL were loaded from, or
 *  why not (dlerror's text; "built without CUDA"), e.g. "CUDA runtime
 *  /usr/local/cuda/lib64/libcudart.so.13; NCCL not loaded (...)".  Loads
 *  them on the first call (once per process); the string is static. */
const char *ferry__gpu_library_status(void);
/** Fill the device part of a ferry_device_info (ndevices, devices,
 *  nccl_attached); host delivery leaves them 0. */
void ferry__gpu_info(const ferry__gpu *g, ferry_device_info *out);
/** Wait for every copy on the loader's streams (epoch stop, close). */
int ferry__gpu_sync(ferry__gpu *g, ferry__err *err);
/** Pinned host memory (cudaHostAlloc), freed with ferry__gpu_host_free.
 *  rank names the caller in errors; the CUDA runtime must be loaded
 *  (ferry__gpu_open, or ferry__gpu_visible() > 0). */
int ferry__gpu_host_alloc(int rank, size_t bytes, void **out, ferry__err *err);
void ferry__gpu_host_free(void *p);
/** Tell g which ring to register with NCCL (after the slots are built):
 *  the array of slot pointers, read at ferry_attach_nccl. */
void ferry__gpu_set_ring(ferry__gpu *g, ferry__dslot **ring, int64_t n);
/** Build one slot for batches of batch_size samples (device memory per
 *  shard, events); ragged_cap (NULL: no ragged variable) gives a ragged
 *  variable's value rows (one device only), by variable of m; fini frees
 *  what init built (also after a failed init).  With sparse=dense on the
 *  device, out is the device batch's variables (the dense view) and
 *  dz[out->nvars] says which host variables (of m) make each; both stay
 *  alive with the slot.  NULL, NULL: the host batch's variables. */
int ferry__dslot_init(ferry__gpu *g, ferry__dslot *d, const ferry__manifest *m,
                      const ferry__manifest *out, const ferry__densify_var *dz,
                      int64_t batch_size, const int64_t *ragged_cap, int rank,
                      ferry__err *err);
/** Whether g can densify CSR rows on its device (sparse=dense, decision
 *  0056): ferry's kernel is built in (nvcc at build time), the runtime
 *  hands out the driver's module functions, and the kernel loads on every
 *  device of g (loaded once per g, unloaded at ferry__gpu_close).  1, or
 *  0 with why filled.  LOCAL (the caller agrees). */
int ferry__gpu_densify_ready(ferry__gpu *g, char *why, size_t whylen);
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
/** The communicators attached now, into out[FERRY__GPU_MAX_COMMS]: their
 *  count (0 without NCCL).  A loader that makes its device slots again
 *  detaches them and attaches them again on the new slots. */
#define FERRY__GPU_MAX_COMMS 8
int ferry__gpu_nccl_comms(const ferry__gpu *g, void **out);

#endif /* FERRY_GPU_H */
