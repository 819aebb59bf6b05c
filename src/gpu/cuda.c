/*
 * cuda.c - the GPU stage: where batches go (device=auto|cpu|cuda, devices),
 * the device ring's buffers and copies, ferry_batch_wait, NCCL
 * registration.  The loader (src/loader/) owns the ring's states and threads;
 * every CUDA and NCCL call of the library is in this file.
 *
 * The copy of batch b, on the worker thread that assembled it into a pinned
 * host slot (ferry__dslot_copy):
 *
 *   per shard (one per device):  cudaSetDevice
 *     cudaStreamWaitEvent(stream, ev_release)  if the slot's previous batch
 *                                              was released after a
 *                                              ferry_batch_wait
 *     cudaEventRecord(ev_start, stream)
 *     cudaMemcpyAsync(var v) ...               one per variable
 *     cudaEventRecord(ev_done, stream)         the shard's event
 *
 * The consumer's stream waits on ev_done (ferry_batch_wait, no host
 * synchronisation); ferry_release records ev_release on that stream, so the
 * next copy into the buffers waits, on the GPU, for the work the
 * application queued before releasing.  The host slot is reused once
 * ev_done completed (ferry__dslot_sync on the worker, or at release with
 * keep_host).
 *
 * Threads: ferry__gpu_open/close, ferry__dslot_init/fini and the NCCL
 * functions run on the application's thread inside ferry_open/ferry_close
 * and ferry_attach_nccl; ferry__dslot_copy and ferry__dslot_sync on a
 * worker (or the consumer when it assembles a batch itself);
 * ferry_batch_wait and ferry__dslot_release on the consumer.  The CUDA
 * runtime is thread-safe; the current device is per thread, so every
 * function sets it before its calls.
 *
 * Every call goes through the table of cudalib.c (rt.cudaSetDevice...),
 * which loads the CUDA runtime and NCCL at run time: libferry does not link
 * them.  Without a loadable runtime, or without a device, device=auto is
 * host memory and device=cuda is FERRY_ENODEV saying why; without NCCL at
 * run time, device memory comes from cudaMalloc and ferry_attach_nccl is
 * FERRY_ENOTSUP.  A build without CUDA headers compiles nocuda.c instead.
 */
#include "config.h"
#include "gpu/cudalib.h"
#include "gpu/densify.h"
#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The loaded table; set by the first ferry__cudalib_load.  Every function
 * below that calls through it runs after ferry__gpu_open found the runtime
 * usable (a ferry__gpu or a slot exists), or loads it itself. */
#define rt (*ferry__cudalib_load())

#define ALIGN_DEV ((size_t)256)

enum { MAX_COMMS = FERRY__GPU_MAX_COMMS };

typedef struct nccl_reg {
  void *comm; /* ncclComm_t                              */
  int device;
  int64_t n; /* handles (slot x shard on that device)   */
  void **handles;
} nccl_reg;

/* The driver API functions of the densify kernel (decision 0056), from
 * cudaGetDriverEntryPointByVersion: CUresult is an int, the handles are
 * pointers (cuda.h's types, without linking the driver). */
typedef int (*cu_module_load_data_fn)(void **module, const void *image);
typedef int (*cu_module_get_function_fn)(void **fn, void *module,
                                         const char *name);
typedef int (*cu_launch_kernel_fn)(void *fn, unsigned gx, unsigned gy,
                                   unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, void *stream,
                                   void **params, void **extra);
typedef int (*cu_module_unload_fn)(void *module);
typedef int (*cu_get_error_string_fn)(int result, const char **str);

#if defined(HAVE_NVCC)
extern const char ferry__densify_ptx[]; /* src/gpu/densify_ptx.c */
#endif

_Static_assert(FERRY__KDT_FLOAT16 == FERRY_FLOAT16 &&
                   FERRY__KDT_FLOAT32 == FERRY_FLOAT32 &&
                   FERRY__KDT_FLOAT64 == FERRY_FLOAT64 &&
                   FERRY__KDT_INT64 == FERRY_INT64 &&
                   FERRY__KDT_UINT64 == FERRY_UINT64 &&
                   FERRY__KDT_BOOL == FERRY_BOOL,
               "gpu/densify.h's dtype codes are ferry_dtype's");

struct ferry__gpu {
  int rank;     /* for messages */
  int dz_state; /* densify kernel: 0 not loaded, 1 loaded, -1 failed */
  void *dz_mod[FERRY_MAX_DEVICES], *dz_fn[FERRY_MAX_DEVICES];
  cu_launch_kernel_fn launch;
  cu_module_unload_fn unload;
  cu_get_error_string_fn cu_error;
  char dz_why[512]; /* why the kernel could not be loaded */
  int ndev;
  int dev[FERRY_MAX_DEVICES];
  cudaStream_t stream[FERRY_MAX_DEVICES];
  ferry__dslot **ring; /* the loader's device ring (slot pointers) */
  int64_t nring;
  int ncomms;
  nccl_reg comms[MAX_COMMS];
};

static int cuda_fail(ferry__err *err, int rank, const char *what,
                     cudaError_t e) {
  return ferry__seterr_on(err, rank, FERRY_ENODEV, "%s failed: %s (%s)", what,
                          rt.cudaGetErrorString(e), rt.cudaGetErrorName(e));
}

#define CU(call, what)                                                         \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return cuda_fail(err, rank, what, e_);                                   \
  } while (0)

int ferry__gpu_visible(void) {
  int n = 0;
  if (!rt.cuda)
    return 0;
  if (rt.cudaGetDeviceCount(&n) != cudaSuccess) {
    rt.cudaGetLastError();
    return 0;
  }
  return n;
}

void ferry__gpu_versions(int *runtime, int *driver, int *nccl) {
  *runtime = *driver = *nccl = -1;
  if (!rt.cuda)
    return;
  if (rt.cudaRuntimeGetVersion(runtime) != cudaSuccess)
    *runtime = -1;
  if (rt.cudaDriverGetVersion(driver) != cudaSuccess || *driver <= 0)
    *driver = -1; /* 0: no driver installed */
  rt.cudaGetLastError();
#if defined(HAVE_NCCL)
  if (rt.nccl && rt.ncclGetVersion(nccl) != ncclSuccess)
    *nccl = -1;
#endif
}

/* The device an earlier loader of this thread left current when the
 * application had not chosen one (-1: none): it is ferry's choice, not
 * the application's, and devices=auto does not take it for one (a
 * devices=all loader left device 0 current, and every rank's next
 * devices=auto loader took device 0). */
static __thread int ferry_left_current = -1;

/* 1 when the calling thread has a current CUDA context: the application
 * chose its device (cudaSetDevice, or any runtime call that created the
 * context).  cuCtxGetCurrent is reached through the runtime, so libferry
 * does not load the driver library itself; a runtime older than 12.5 has
 * no cudaGetDriverEntryPointByVersion, and then the choice is ferry's. */
static int app_chose_device(void) {
  typedef int (*ctx_get_fn)(void **);
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (!rt.cudaGetDriverEntryPointByVersion)
    return 0;
  if (rt.cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000,
                                          cudaEnableDefault,
                                          &q) != cudaSuccess ||
      !fn || q != cudaDriverEntryPointSuccess) {
    rt.cudaGetLastError();
    return 0;
  }
  void *ctx = NULL;
  return ((ctx_get_fn)fn)(&ctx) == 0 && ctx != NULL;
}

/* ---- The densify kernel (sparse=dense on the device, decision 0056) ---- */

#if defined(HAVE_NVCC)
/* A driver function through the runtime (libferry loads no driver
 * library itself), or NULL. */
static void *driver_fn(const char *name) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (rt.cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault,
                                          &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    rt.cudaGetLastError();
    return NULL;
  }
  return fn;
}

static const char *cu_why(const ferry__gpu *g, int r) {
  const char *s = NULL;
  return g->cu_error && !g->cu_error(r, &s) && s ? s : "unknown error";
}

/* Load the kernel on every device of g: 0, or -1 with why. */
static int densify_load(ferry__gpu *g, char *why, size_t whylen) {
  cu_module_load_data_fn load;
  cu_module_get_function_fn get;
  void *p[5] = {driver_fn("cuModuleLoadData"), driver_fn("cuModuleGetFunction"),
                driver_fn("cuLaunchKernel"), driver_fn("cuModuleUnload"),
                driver_fn("cuGetErrorString")};
  if (!p[0] || !p[1] || !p[2] || !p[3]) {
    snprintf(why, whylen,
             "the CUDA runtime %s does not hand out the driver's "
             "cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel and "
             "cuModuleUnload",
             rt.cuda_path);
    return -1;
  }
  memcpy(&load, &p[0], sizeof load);
  memcpy(&get, &p[1], sizeof get);
  memcpy(&g->launch, &p[2], sizeof g->launch);
  memcpy(&g->unload, &p[3], sizeof g->unload);
  memcpy(&g->cu_error, &p[4], sizeof g->cu_error);
  for (int i = 0; i < g->ndev; i++) {
    cudaError_t e = rt.cudaSetDevice(g->dev[i]);
    if (e == cudaSuccess)
      e = rt.cudaFree(NULL); /* the device's context, current */
    if (e != cudaSuccess) {
      snprintf(why, whylen, "device %d: %s", g->dev[i],
               rt.cudaGetErrorString(e));
      rt.cudaGetLastError();
      return -1;
    }
    int r = load(&g->dz_mod[i], ferry__densify_ptx);
    if (r) {
      g->dz_mod[i] = NULL;
      snprintf(why, whylen,
               "cuModuleLoadData of its PTX (CUDA %d, compute_80) on device "
               "%d failed: %s (CUresult %d; a driver older than that CUDA?)",
               CUDART_VERSION, g->dev[i], cu_why(g, r), r);
      return -1;
    }
    if ((r = get(&g->dz_fn[i], g->dz_mod[i], FERRY__DENSIFY_KERNEL))) {
      snprintf(why, whylen, "cuModuleGetFunction(%s) on device %d: %s",
               FERRY__DENSIFY_KERNEL, g->dev[i], cu_why(g, r));
      return -1;
    }
  }
  return 0;
}
#endif

int ferry__gpu_densify_ready(ferry__gpu *g, char *why, size_t whylen) {
  if (g->dz_state) {
    if (g->dz_state < 0)
      snprintf(why, whylen, "%s", g->dz_why);
    return g->dz_state > 0;
  }
  g->dz_state = -1;
#if defined(HAVE_NVCC)
  if (!rt.cudaGetDriverEntryPointByVersion) {
    snprintf(why, whylen,
             "the CUDA runtime %s has no cudaGetDriverEntryPointByVersion "
             "(CUDA 12.5 or newer)",
             rt.cuda_path);
  } else {
    int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
    int rc = densify_load(g, why, whylen);
    if (had)
      rt.cudaSetDevice(prev);
    if (!rc) {
      g->dz_state = 1;
      return 1;
    }
    for (int i = 0; i < g->ndev; i++)
      if (g->dz_mod[i]) {
        rt.cudaSetDevice(g->dev[i]);
        g->unload(g->dz_mod[i]);
        g->dz_mod[i] = NULL;
      }
    if (had)
      rt.cudaSetDevice(prev);
  }
#else
  snprintf(why, whylen,
           "this libferry was built without nvcc (the kernel is compiled "
           "at build time)");
#endif
  snprintf(g->dz_why, sizeof g->dz_why, "%s", why);
  return 0;
}

/* The devices option into ordinals; FERRY_ENODEV names an absent one. */
static int parse_devices(const char *spec, int visible, int local_rank,
                         int rank, ferry__gpu *g, char *how, size_t howlen,
                         ferry__err *err) {
  if (!spec || !*spec || !strcmp(spec, "auto")) {
    int d;
    if (app_chose_device() && rt.cudaGetDevice(&d) == cudaSuccess &&
        d != ferry_left_current) {
      snprintf(how, howlen, "device %d (the application's current device)", d);
    } else {
      d = local_rank % visible;
      snprintf(how, howlen,
               "device %d (local rank %d modulo %d visible device%s)", d,
               local_rank, visible, visible == 1 ? "" : "s");
    }
    g->ndev = 1;
    g->dev[0] = d;
    return 0;
  }
  if (!strcmp(spec, "all")) {
    g->ndev = visible < FERRY_MAX_DEVICES ? visible : FERRY_MAX_DEVICES;
    for (int i = 0; i < g->ndev; i++)
      g->dev[i] = i;
    snprintf(how, howlen, "devices 0-%d (devices=all)", g->ndev - 1);
    return 0;
  }
  const char *p = spec;
  g->ndev = 0;
  while (*p && g->ndev < FERRY_MAX_DEVICES) {
    char *end;
    long d = strtol(p, &end, 10);
    if (end == p)
      break;
    if (d < 0 || d >= visible)
      return ferry__seterr_on(err, rank, FERRY_ENODEV,
                              "option 'devices': device %ld is not "
                              "visible (%d device%s: 0-%d; check "
                              "CUDA_VISIBLE_DEVICES)",
                              d, visible, visible == 1 ? "" : "s", visible - 1);
    g->dev[g->ndev++] = (int)d;
    p = *end == ',' ? end + 1 : end;
  }
  snprintf(how, howlen, "devices %s (devices option)", spec);
  return 0;
}

int ferry__gpu_open(const ferry_options *o, int rank, int local_rank,
                    ferry__gpu **out, char *how, size_t howlen,
                    ferry__err *err) {
  *out = NULL;
  if (o->device == FERRY__DEV_CPU) {
    snprintf(how, howlen, "host memory (device=cpu)");
    return 0;
  }
  if (!rt.cuda) {
    if (o->device == FERRY__DEV_CUDA)
      return ferry__seterr_on(err, rank, FERRY_ENODEV,
                              "device=cuda but the CUDA runtime could "
                              "not be loaded: %s (use device=auto to fall back "
                              "to host memory)",
                              rt.cuda_why);
    snprintf(how, howlen,
             "host memory: device=auto found no usable GPU (no CUDA "
             "runtime: %s)",
             rt.cuda_why);
    return 0;
  }
  int visible = 0;
  cudaError_t e = rt.cudaGetDeviceCount(&visible);
  if (e != cudaSuccess || visible <= 0) {
    const char *why =
        e != cudaSuccess ? rt.cudaGetErrorString(e) : "no device is visible";
    rt.cudaGetLastError();
    if (o->device == FERRY__DEV_CUDA)
      return ferry__seterr_on(err, rank, FERRY_ENODEV,
                              "device=cuda but no usable GPU: "
                              "cudaGetDeviceCount: %s (use device=auto to fall "
                              "back to host memory)",
                              why);
    snprintf(how, howlen,
             "host memory: device=auto found no usable GPU "
             "(cudaGetDeviceCount: %s)",
             why);
    return 0;
  }
  ferry__gpu *g = calloc(1, sizeof *g);
  if (!g)
    return ferry__oom(err, rank, sizeof *g, "the GPU state (devices '%s')",
                      o->devices ? o->devices : "");
  g->rank = rank;
  int rc =
      parse_devices(o->devices, visible, local_rank, rank, g, how, howlen, err);
  if (!rc && o->batch_size % g->ndev != 0)
    rc = ferry__seterr_on(err, rank, FERRY_EINVAL,
                          "batch_size %lld does not split evenly over "
                          "%d devices (devices=%s): use a multiple of %d",
                          (long long)o->batch_size, g->ndev,
                          o->devices ? o->devices : "auto", g->ndev);
  /* Streams are created on each device; the first device stays current
   * on this thread (the application's choice, or ours when it had none:
   * remembered, so that a later devices=auto does not take it for the
   * application's). */
  int cur = -1, app = app_chose_device() &&
                      rt.cudaGetDevice(&cur) == cudaSuccess &&
                      cur != ferry_left_current;
  for (int i = g->ndev - 1; !rc && i >= 0; i--) {
    cudaError_t ce = rt.cudaSetDevice(g->dev[i]);
    if (ce == cudaSuccess)
      ce = rt.cudaStreamCreateWithFlags(&g->stream[i], cudaStreamNonBlocking);
    if (ce != cudaSuccess) {
      g->stream[i] = NULL;
      rc = cuda_fail(err, rank, "creating the loader's stream", ce);
    }
  }
  if (rc) {
    ferry__gpu_close(g);
    return rc;
  }
  if (!app)
    ferry_left_current = g->dev[0];
  *out = g;
  return 0;
}

void ferry__gpu_info(const ferry__gpu *g, ferry_device_info *out) {
  out->cuda = g != NULL;
  out->ndevices = g ? g->ndev : 0;
  for (int i = 0; g && i < g->ndev; i++)
    out->devices[i] = g->dev[i];
  out->nccl_attached = g ? g->ncomms : 0;
}

static int gpu_sync_on(ferry__gpu *g, ferry__err *err) {
  int rank = g ? g->rank : -1, rc = 0;
  for (int i = 0; g && i < g->ndev; i++) {
    if (!g->stream[i])
      continue;
    cudaError_t e = rt.cudaSetDevice(g->dev[i]);
    if (e == cudaSuccess)
      e = rt.cudaStreamSynchronize(g->stream[i]);
    if (e != cudaSuccess && !rc)
      rc = cuda_fail(err, rank, "cudaStreamSynchronize", e);
  }
  return rc;
}

/* The caller's current device is left as it was. */
int ferry__gpu_sync(ferry__gpu *g, ferry__err *err) {
  int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
  int rc = gpu_sync_on(g, err);
  if (had)
    rt.cudaSetDevice(prev);
  return rc;
}

int ferry__gpu_host_alloc(int rank, size_t bytes, void **out, ferry__err *err) {
  *out = NULL;
  CU(rt.cudaHostAlloc(out, bytes ? bytes : 1, cudaHostAllocPortable),
     "cudaHostAlloc (pinned batch buffer)");
  return 0;
}

void ferry__gpu_host_free(void *p) {
  if (p)
    rt.cudaFreeHost(p);
}

int ferry__gpu_nccl_comms(const ferry__gpu *g, void **out) {
  for (int k = 0; g && k < g->ncomms; k++)
    out[k] = g->comms[k].comm;
  return g ? g->ncomms : 0;
}

void ferry__gpu_set_ring(ferry__gpu *g, ferry__dslot **ring, int64_t n) {
  if (g) {
    g->ring = ring;
    g->nring = n;
  }
}

/* Device batch memory: from NCCL when it was loaded, so that
 * ferry_attach_nccl can register it for zero-copy collectives (the choice
 * is made once per process, so a buffer is freed by its allocator).
 * dev_alloc returns NULL or the library's error string. */
#if defined(HAVE_NCCL)
#define USE_NCCL (rt.nccl)
#else
#define USE_NCCL 0
#endif
#define DEV_ALLOC (USE_NCCL ? "ncclMemAlloc" : "cudaMalloc")
static const char *dev_alloc(void **p, size_t n) {
#if defined(HAVE_NCCL)
  if (USE_NCCL) {
    ncclResult_t r = rt.ncclMemAlloc(p, n);
    return r == ncclSuccess ? NULL : rt.ncclGetErrorString(r);
  }
#endif
  cudaError_t e = rt.cudaMalloc(p, n);
  return e == cudaSuccess ? NULL : rt.cudaGetErrorString(e);
}
static void dev_free(void *p) {
#if defined(HAVE_NCCL)
  if (USE_NCCL) {
    rt.ncclMemFree(p);
    return;
  }
#endif
  rt.cudaFree(p);
}

static size_t align_dev(size_t b) {
  return (b + ALIGN_DEV - 1) / ALIGN_DEV * ALIGN_DEV;
}

/* Bytes of variable v in a shard of per samples: a dense one's rows, a
 * ragged one's offsets (or lengths) then its values: cap rows on one
 * device; on ndev, a padded one's share of them (cap is then batch_size x
 * the width, and batch_size splits evenly). */
static size_t var_bytes(const ferry__manifest *m, int v, int64_t per,
                        const int64_t *cap, int ndev) {
  const ferry__var *x = &m->vars[v];
  size_t b = x->ragged && cap
                 ? FERRY__RAGGED_HEAD(per) +
                       (size_t)((cap[v] + ndev - 1) / ndev) * x->row_bytes
                 : (size_t)per * x->row_bytes;
  return align_dev(b);
}

/* Densified on the device (dz): the staging of the CSR pair of device
 * variable k: [0] its offsets and indices (a ragged region, as the host
 * slot holds it), [1] its values, [2] its column map. */
static size_t zbuf_bytes(const ferry__manifest *m, const ferry__densify_var *z,
                         int64_t per, const int64_t *cap, int i) {
  switch (i) {
  case 0:
    return align_dev(FERRY__RAGGED_HEAD(per) + (size_t)(cap ? cap[z->src] : 0) *
                                                   m->vars[z->src].row_bytes);
  case 1:
    return align_dev((size_t)(cap ? cap[z->data] : 0) *
                     m->vars[z->data].row_bytes);
  default: return z->map ? align_dev((size_t)z->width * sizeof(int64_t)) : 0;
  }
}

/* Device variable v's bytes in a shard (with dz: a passthrough one's, or
 * a dense one's rows and the staging of its pair). */
static size_t dvar_bytes(const ferry__dslot *d, const ferry__manifest *m,
                         const ferry__manifest *out, int v, int64_t per,
                         const int64_t *cap, int ndev) {
  if (!d->dz)
    return var_bytes(m, v, per, cap, ndev);
  const ferry__densify_var *z = &d->dz[v];
  if (z->data < 0)
    return var_bytes(m, z->src, per, cap, ndev);
  size_t b = align_dev((size_t)per * out->vars[v].row_bytes);
  for (int i = 0; i < 3; i++)
    b += zbuf_bytes(m, z, per, cap, i);
  return b;
}

/* Is device variable v a ragged one (as the host batch has it)? */
static int dvar_ragged(const ferry__dslot *d, const ferry__manifest *m, int v) {
  if (!d->dz)
    return m->vars[v].ragged;
  return d->dz[v].data < 0 && m->vars[d->dz[v].src].ragged;
}

/* The column maps of the dense variables to the device (shard 0, the only
 * one): through a pinned buffer (a copy from pageable memory would stage
 * it), then waited for. */
static int upload_maps(ferry__dslot *d, int nv, int rank, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  for (int v = 0; v < nv; v++) {
    const ferry__densify_var *z = &d->dz[v];
    if (z->data < 0 || !z->map)
      continue;
    size_t n = (size_t)z->width * sizeof *z->map;
    void *pin = NULL;
    CU(rt.cudaHostAlloc(&pin, n, cudaHostAllocPortable),
       "cudaHostAlloc (a column map of sparse=dense)");
    memcpy(pin, z->map, n);
    cudaError_t e = rt.cudaMemcpyAsync(d->zbuf[3 * v + 2], pin, n,
                                       cudaMemcpyHostToDevice, g->stream[0]);
    if (e == cudaSuccess)
      e = rt.cudaStreamSynchronize(g->stream[0]);
    rt.cudaFreeHost(pin);
    if (e != cudaSuccess)
      return cuda_fail(err, rank, "copying a column map of sparse=dense", e);
  }
  return 0;
}

static int dslot_init_on(ferry__gpu *g, ferry__dslot *d,
                         const ferry__manifest *m, const ferry__manifest *out,
                         const ferry__densify_var *dz, int64_t batch_size,
                         const int64_t *cap, int rank, ferry__err *err) {
  if (!out)
    out = m;
  int nv = out->nvars;
  d->magic = FERRY__DSLOT_MAGIC;
  d->gpu = g;
  d->host = -1;
  d->dz = dz;
  if (dz && (g->ndev != 1 || g->dz_state != 1))
    return ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                            "sparse=dense on %d devices, or without the "
                            "densify kernel loaded",
                            g->ndev);
  d->tensors = calloc((size_t)nv, sizeof *d->tensors);
  d->ptrs = calloc((size_t)nv * (size_t)g->ndev, sizeof *d->ptrs);
  d->sdata = calloc((size_t)nv * (size_t)g->ndev, sizeof *d->sdata);
  d->slens = calloc((size_t)nv * (size_t)g->ndev, sizeof *d->slens);
  d->ids = malloc((size_t)batch_size * sizeof *d->ids);
  d->padded = malloc((size_t)batch_size);
  if (dz)
    d->zbuf = calloc(3 * (size_t)nv, sizeof *d->zbuf);
  if (!d->tensors || !d->ptrs || !d->sdata || !d->slens || !d->ids ||
      !d->padded || (dz && !d->zbuf))
    return ferry__oom(err, rank,
                      (size_t)nv * sizeof *d->tensors +
                          (size_t)nv * (size_t)g->ndev * 3 * sizeof *d->ptrs +
                          (size_t)batch_size * (sizeof *d->ids + 1),
                      "a device batch slot (%d variables of dataset %s)", nv,
                      m->spec ? m->spec : "?");
  int64_t per = batch_size / g->ndev;
  d->per = per;
  if (cap) { /* the host copies of the ragged variables' offsets (with
              * several devices: padded ones' lengths only; the loader
              * refuses the rest) */
    if (!(d->hoffs = calloc((size_t)nv, sizeof *d->hoffs)))
      return ferry__oom(err, rank, (size_t)nv * sizeof *d->hoffs,
                        "a device batch slot");
    for (int v = 0; v < nv; v++)
      if (dvar_ragged(d, m, v) &&
          !(d->hoffs[v] = malloc(((size_t)batch_size + 1) * sizeof(int64_t))))
        return ferry__oom(err, rank, ((size_t)batch_size + 1) * 8,
                          "the offsets of a device batch slot");
  }
  for (int i = 0; i < g->ndev; i++) {
    size_t bytes = 0;
    for (int v = 0; v < nv; v++)
      bytes += dvar_bytes(d, m, out, v, per, cap, g->ndev);
    CU(rt.cudaSetDevice(g->dev[i]), "cudaSetDevice");
    const char *why = dev_alloc(&d->mem[i], bytes ? bytes : ALIGN_DEV);
    if (why) {
      d->mem[i] = NULL;
      return ferry__seterr_on(err, rank, FERRY_ENODEV,
                              "%s of %zu bytes on device %d failed: %s "
                              "(lower device_prefetch or batch_size)",
                              DEV_ALLOC, bytes, g->dev[i], why);
    }
    d->mem_bytes[i] = bytes ? bytes : ALIGN_DEV;
    size_t off = 0;
    for (int v = 0; v < nv; v++) {
      size_t k = (size_t)i * (size_t)nv + (size_t)v;
      d->ptrs[k] = (unsigned char *)d->mem[i] + off;
      d->sdata[k] = (unsigned char *)d->ptrs[k] +
                    (dvar_ragged(d, m, v) && cap ? FERRY__RAGGED_HEAD(per) : 0);
      if (dz && dz[v].data >= 0) { /* the dense rows, then the staging */
        size_t z = off + align_dev((size_t)per * out->vars[v].row_bytes);
        for (int j = 0; j < 3; j++) {
          size_t zb = zbuf_bytes(m, &dz[v], per, cap, j);
          d->zbuf[3 * v + j] = zb ? (unsigned char *)d->mem[i] + z : NULL;
          z += zb;
        }
      }
      off += dvar_bytes(d, m, out, v, per, cap, g->ndev);
    }
    CU(rt.cudaEventCreateWithFlags((cudaEvent_t *)&d->ev_start[i],
                                   cudaEventDefault),
       "cudaEventCreate");
    CU(rt.cudaEventCreateWithFlags((cudaEvent_t *)&d->ev_done[i],
                                   cudaEventDefault),
       "cudaEventCreate");
    CU(rt.cudaEventCreateWithFlags((cudaEvent_t *)&d->ev_release[i],
                                   cudaEventDisableTiming),
       "cudaEventCreate");
    ferry_shard *sh = &d->shards[i];
    sh->device = g->dev[i];
    sh->data = &d->sdata[(size_t)i * (size_t)nv];
    sh->lengths = &d->slens[(size_t)i * (size_t)nv];
    sh->event = d->ev_done[i];
  }
  if (dz) {
    int rc = upload_maps(d, nv, rank, err);
    if (rc)
      return rc;
  }
  for (int v = 0; v < nv; v++) {
    const ferry__var *var = &out->vars[v];
    ferry_tensor *t = &d->tensors[v];
    t->name = var->name;
    t->dtype = var->dtype;
    t->ndim = var->row_ndim + 1;
    for (int k = 0; k < var->row_ndim; k++)
      t->shape[k + 1] = var->row_shape[k];
    t->row_bytes = var->row_bytes;
  }
  d->batch.sample_ids = d->ids;
  d->batch.padded = d->padded;
  d->batch.nvars = nv;
  d->batch.vars = d->tensors;
  d->batch.nshards = g->ndev;
  d->batch.shards = d->shards;
  return 0;
}

/* The caller's current device is left as it was. */
int ferry__dslot_init(ferry__gpu *g, ferry__dslot *d, const ferry__manifest *m,
                      const ferry__manifest *out, const ferry__densify_var *dz,
                      int64_t batch_size, const int64_t *ragged_cap, int rank,
                      ferry__err *err) {
  int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
  int rc = dslot_init_on(g, d, m, out, dz, batch_size, ragged_cap, rank, err);
  if (had)
    rt.cudaSetDevice(prev);
  return rc;
}

void ferry__dslot_fini(ferry__dslot *d) {
  ferry__gpu *g = d->gpu;
  int prev = -1, had = g && rt.cudaGetDevice(&prev) == cudaSuccess;
  for (int i = 0; g && i < g->ndev; i++) {
    rt.cudaSetDevice(g->dev[i]);
    if (d->ev_start[i])
      rt.cudaEventDestroy(d->ev_start[i]);
    if (d->ev_done[i])
      rt.cudaEventDestroy(d->ev_done[i]);
    if (d->ev_release[i])
      rt.cudaEventDestroy(d->ev_release[i]);
    if (d->mem[i])
      dev_free(d->mem[i]);
  }
  if (had)
    rt.cudaSetDevice(prev);
  for (int v = 0; d->hoffs && v < d->batch.nvars; v++)
    free(d->hoffs[v]);
  free(d->hoffs);
  free(d->zbuf);
  free(d->tensors);
  free(d->ptrs);
  free(d->sdata);
  free(d->slens);
  free(d->ids);
  free(d->padded);
  memset(d, 0, sizeof *d);
}

/* The host variable behind device variable v. */
static int host_var(const ferry__dslot *d, int v) {
  return d->dz ? d->dz[v].src : v;
}

/* The pair's column indices of a host batch, checked on the host before
 * the kernel runs (the CPU view refuses the same ones). */
static int check_columns(const ferry__dslot *d, const ferry_tensor *ix,
                         const ferry__densify_var *z, const ferry_batch *host,
                         int rank, ferry__err *err) {
  const unsigned char *p = ix->data;
  size_t es = ferry_dtype_size(ix->dtype);
  for (int64_t r = 0; r < host->size; r++)
    for (int64_t k = ix->offsets[r]; k < ix->offsets[r + 1]; k++) {
      const unsigned char *e = p + (size_t)(k - ix->offsets[0]) * es;
      int64_t c; /* int32 or int64 (the loader's condition) */
      if (es == 4) {
        int32_t c32;
        memcpy(&c32, e, 4);
        c = c32;
      } else {
        memcpy(&c, e, 8);
      }
      if (c < 0 || c >= z->width)
        return ferry__seterr_on(
            err, rank, FERRY_EFORMAT,
            "sparse=dense on device %d: variable %s, sample %lld of batch "
            "%lld: column index %lld outside [0, %lld)",
            d->gpu->dev[0], ix->name, (long long)host->sample_ids[r],
            (long long)host->index, (long long)c, (long long)z->width);
    }
  return 0;
}

/* Dense variable v of the slot from the host batch's pair: the offsets
 * and indices in one copy, the values in another, then ferry's kernel
 * scatters them into the slot's rows, all on stream st (one device). */
static int densify_on(ferry__dslot *d, int v, const ferry_batch *host,
                      cudaStream_t st, int rank, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  const ferry__densify_var *z = &d->dz[v];
  const ferry_tensor *ix = &host->vars[z->src], *dv = &host->vars[z->data];
  int rc = check_columns(d, ix, z, host, rank, err);
  if (rc)
    return rc;
  size_t head = FERRY__RAGGED_HEAD(d->per);
  const unsigned char *src = (const unsigned char *)ix->data - head;
  cudaError_t e = rt.cudaMemcpyAsync(d->zbuf[3 * v], src, head + ix->nbytes,
                                     cudaMemcpyHostToDevice, st);
  if (e == cudaSuccess && dv->nbytes)
    e = rt.cudaMemcpyAsync(d->zbuf[3 * v + 1], dv->data, dv->nbytes,
                           cudaMemcpyHostToDevice, st);
  if (e != cudaSuccess)
    return ferry__seterr_on(err, rank, FERRY_ENODEV,
                            "cudaMemcpyAsync of variables '%s' and '%s' of "
                            "batch %lld to device %d failed: %s",
                            ix->name, dv->name, (long long)host->index,
                            g->dev[0], rt.cudaGetErrorString(e));
  const int64_t *off = d->zbuf[3 * v];
  const void *idx = (const unsigned char *)d->zbuf[3 * v] + head;
  const void *val = d->zbuf[3 * v + 1];
  const int64_t *map = d->zbuf[3 * v + 2];
  int idt = (int)ix->dtype, vdt = (int)dv->dtype,
      odt = (int)d->tensors[v].dtype;
  int64_t nrows = host->size, width = z->width, kept = z->kept;
  void *out = d->ptrs[v];
  void *args[FERRY__DENSIFY_NARGS] = {&off,   &idx, &idt,  &val, &vdt, &nrows,
                                      &width, &map, &kept, &out, &odt};
  if (!nrows)
    return 0;
  unsigned grid = nrows < FERRY__DENSIFY_GRID_MAX
                      ? (unsigned)nrows
                      : (unsigned)FERRY__DENSIFY_GRID_MAX;
  int r = g->launch(g->dz_fn[0], grid, 1, 1, FERRY__DENSIFY_THREADS, 1, 1, 0,
                    st, args, NULL);
  if (r) {
    const char *s = NULL;
    if (!g->cu_error || g->cu_error(r, &s) || !s)
      s = "unknown error";
    return ferry__seterr_on(err, rank, FERRY_ENODEV,
                            "launching ferry's densify kernel (sparse=dense) "
                            "for variable '%s' of batch %lld on device %d "
                            "failed: %s (CUresult %d)",
                            d->tensors[v].name, (long long)host->index,
                            g->dev[0], s, r);
  }
  return 0;
}

/* The device batch's metadata from the host batch's (ids, sizes, shapes,
 * a ragged variable's host offsets and device pointers). */
static int copy_meta(ferry__dslot *d, const ferry_batch *host, int host_data,
                     int rank, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  int nv = d->batch.nvars;
  int64_t n = host->size, per = d->per; /* a short batch fills in order */
  memcpy(d->ids, host->sample_ids, (size_t)n * sizeof *d->ids);
  memcpy(d->padded, host->padded, (size_t)n);
  d->batch.epoch = host->epoch;
  d->batch.index = host->index;
  d->batch.size = n;
  d->batch.num_padded = host->num_padded;
  for (int v = 0; v < nv; v++) {
    ferry_tensor *t = &d->tensors[v];
    if (d->dz && d->dz[v].data >= 0) { /* dense rows made on the device */
      t->shape[0] = n;
      t->nbytes = (size_t)n * t->row_bytes;
      t->data = NULL;
      t->device_data = d->ptrs[v];
      continue;
    }
    const ferry_tensor *h = &host->vars[host_var(d, v)];
    t->shape[0] = h->shape[0]; /* n, or a ragged variable's values */
    t->nbytes = h->nbytes;
    t->data = host_data ? h->data : NULL;
    t->device_data = g->ndev == 1 ? d->ptrs[v] : NULL;
    if (h->lengths) { /* pad: [n, W, inner...] after the lengths, as the
                       * host slot holds them; on several devices each
                       * shard's share of both */
      t->ndim = h->ndim;
      memcpy(t->shape, h->shape, sizeof t->shape);
      memcpy(d->hoffs[v], h->lengths, (size_t)n * sizeof(int64_t));
      t->lengths = d->hoffs[v];
      t->device_lengths = g->ndev == 1 ? d->ptrs[v] : NULL;
      t->device_data = g->ndev == 1 ? d->sdata[v] : NULL;
      t->max_len = h->max_len;
    }
    for (int i = 0; i < g->ndev; i++)
      d->slens[(size_t)i * (size_t)nv + (size_t)v] =
          h->lengths ? d->ptrs[(size_t)i * (size_t)nv + (size_t)v] : NULL;
    if (h->offsets && g->ndev != 1) /* the loader refuses it at open */
      return ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                              "variable '%s': a ragged batch without pad on "
                              "%d devices",
                              h->name, g->ndev);
    if (h->offsets) { /* one device */
      size_t head = FERRY__RAGGED_HEAD(per);
      memcpy(d->hoffs[v], h->offsets, ((size_t)n + 1) * sizeof(int64_t));
      t->offsets = d->hoffs[v];
      t->device_offsets = d->ptrs[v];
      t->device_offsets32 =
          h->offsets32
              ? (const int32_t *)(const void *)((const unsigned char *)
                                                    d->ptrs[v] +
                                                FERRY__RAGGED_OFF32(per))
              : NULL;
      t->device_data = (unsigned char *)d->ptrs[v] + head;
      t->nvalues = h->nvalues;
      t->max_len = h->max_len;
      for (int u = 0; u < v; u++) /* a group (host pointers equal): one */
        if ((!d->dz || d->dz[u].data < 0) &&
            host->vars[host_var(d, u)].offsets == h->offsets) {
          t->offsets = d->tensors[u].offsets;
          t->device_offsets = d->tensors[u].device_offsets;
          t->device_offsets32 = d->tensors[u].device_offsets32;
          break;
        }
    }
  }
  return 0;
}

static int dslot_copy_on(ferry__dslot *d, const ferry_batch *host,
                         int host_data, int rank, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  int nv = d->batch.nvars;
  int64_t n = host->size, per = d->per; /* a short batch fills in order */
  int rc0 = copy_meta(d, host, host_data, rank, err);
  if (rc0)
    return rc0;
  int64_t first = 0;
  for (int i = 0; i < g->ndev; i++) {
    ferry_shard *sh = &d->shards[i];
    int64_t take = n - first < per ? n - first : per;
    if (take < 0)
      take = 0;
    sh->first = first;
    sh->size = take;
    CU(rt.cudaSetDevice(g->dev[i]), "cudaSetDevice");
    cudaStream_t st = g->stream[i];
    if (d->release_pending[i]) {
      CU(rt.cudaStreamWaitEvent(st, d->ev_release[i], 0),
         "cudaStreamWaitEvent (release of the slot's previous batch)");
      d->release_pending[i] = 0;
    }
    CU(rt.cudaEventRecord(d->ev_start[i], st), "cudaEventRecord");
    for (int v = 0; v < nv && take > 0; v++) {
      if (d->dz && d->dz[v].data >= 0) { /* one device (dslot_init) */
        int rc = densify_on(d, v, host, st, rank, err);
        if (rc)
          return rc;
        continue;
      }
      const ferry_tensor *h = &host->vars[host_var(d, v)];
      size_t rb = h->row_bytes, bytes = (size_t)take * rb;
      const unsigned char *src =
          (const unsigned char *)h->data + (size_t)first * rb;
      void *dst = d->ptrs[(size_t)i * (size_t)nv + (size_t)v];
      cudaError_t e = cudaSuccess;
      if (h->lengths && g->ndev > 1) { /* this shard's lengths, then its
                                        * padded rows */
        size_t each = n ? h->nbytes / (size_t)n : 0;
        e = rt.cudaMemcpyAsync(dst, h->lengths + first,
                               (size_t)take * sizeof(int64_t),
                               cudaMemcpyHostToDevice, st);
        src = (const unsigned char *)h->data + (size_t)first * each;
        bytes = (size_t)take * each;
        dst = d->sdata[(size_t)i * (size_t)nv + (size_t)v];
      } else if (h->offsets || h->lengths) { /* offsets (or lengths) and
                                              * values: one copy */
        size_t head = FERRY__RAGGED_HEAD(per);
        src = (const unsigned char *)h->data - head;
        bytes = head + h->nbytes;
      }
      if (e == cudaSuccess && bytes)
        e = rt.cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st);
      if (e != cudaSuccess)
        return ferry__seterr_on(
            err, rank, FERRY_ENODEV,
            "cudaMemcpyAsync of variable '%s' of "
            "batch %lld (%zu bytes) to device %d failed: %s",
            h->name, (long long)host->index, bytes, g->dev[i],
            rt.cudaGetErrorString(e));
    }
    CU(rt.cudaEventRecord(d->ev_done[i], st), "cudaEventRecord");
    first += take;
  }
  d->timing_pending = 1;
  return 0;
}

/* The caller's current device is left as it was. */
int ferry__dslot_copy(ferry__dslot *d, const ferry_batch *host, int host_data,
                      int rank, ferry__err *err) {
  int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
  int rc = dslot_copy_on(d, host, host_data, rank, err);
  if (had)
    rt.cudaSetDevice(prev);
  return rc;
}

int ferry__dslot_sync(ferry__dslot *d, double *seconds, int rank,
                      ferry__err *err) {
  ferry__gpu *g = d->gpu;
  float total = 0;
  for (int i = 0; i < g->ndev; i++) {
    CU(rt.cudaEventSynchronize(d->ev_done[i]), "cudaEventSynchronize (copy)");
    float ms = 0;
    if (d->timing_pending &&
        rt.cudaEventElapsedTime(&ms, d->ev_start[i], d->ev_done[i]) ==
            cudaSuccess)
      total += ms;
    else
      rt.cudaGetLastError();
  }
  if (d->timing_pending && seconds)
    *seconds += total / 1000.0;
  d->timing_pending = 0;
  return 0;
}

static int dslot_release_on(ferry__dslot *d, int rank, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  int rc = 0;
  for (int i = 0; i < g->ndev; i++) {
    if (!d->has_consumer[i])
      continue;
    d->has_consumer[i] = 0;
    cudaStream_t st = (cudaStream_t)d->consumer[i];
    cudaError_t e = rt.cudaSetDevice(g->dev[i]);
    if (e == cudaSuccess)
      e = rt.cudaEventRecord(d->ev_release[i], st);
    if (e == cudaSuccess) {
      d->release_pending[i] = 1;
      continue;
    }
    /* Without the event, reuse is only safe once the stream is idle. */
    if (!rc)
      rc = cuda_fail(err, rank,
                     "cudaEventRecord on the stream given to "
                     "ferry_batch_wait (at ferry_release)",
                     e);
    rt.cudaStreamSynchronize(st);
  }
  return rc;
}

/* The caller's current device is left as it was. */
int ferry__dslot_release(ferry__dslot *d, int rank, ferry__err *err) {
  int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
  int rc = dslot_release_on(d, rank, err);
  if (had)
    rt.cudaSetDevice(prev);
  return rc;
}

static ferry__dslot *dslot_of(const ferry_batch *batch) {
  if (!batch || batch->nshards <= 0)
    return NULL;
  ferry__dslot *d = (ferry__dslot *)(void *)batch;
  return d->magic == FERRY__DSLOT_MAGIC ? d : NULL;
}

static int shard_wait(ferry__dslot *d, int i, void *stream, ferry__err *err) {
  ferry__gpu *g = d->gpu;
  int rank = g->rank;
  CU(rt.cudaSetDevice(g->dev[i]), "cudaSetDevice");
  CU(rt.cudaStreamWaitEvent((cudaStream_t)stream, d->ev_done[i], 0),
     "cudaStreamWaitEvent (ferry_batch_wait)");
  d->consumer[i] = stream;
  d->has_consumer[i] = 1;
  return 0;
}

int ferry_batch_wait(const ferry_batch *batch, void *stream) {
  ferry__dslot *d = dslot_of(batch);
  if (!d)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_batch_wait: not a device batch (batches are "
                         "in host memory, or NULL)");
  ferry__err err = {0};
  int prev = -1;
  rt.cudaGetDevice(&prev);
  for (int i = 0; i < d->gpu->ndev; i++) {
    int rc = shard_wait(d, i, stream, &err);
    if (rc) {
      rt.cudaSetDevice(prev);
      return ferry__seterr(NULL, rc, "%s", err.msg);
    }
  }
  rt.cudaSetDevice(prev);
  return 0;
}

int ferry_shard_wait(const ferry_batch *batch, int shard, void *stream) {
  ferry__dslot *d = dslot_of(batch);
  if (!d || shard < 0 || shard >= d->gpu->ndev)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_shard_wait: not a device batch, or shard %d "
                         "out of range",
                         shard);
  ferry__err err = {0};
  int prev = -1;
  rt.cudaGetDevice(&prev);
  int rc = shard_wait(d, shard, stream, &err);
  rt.cudaSetDevice(prev);
  return rc ? ferry__seterr(NULL, rc, "%s", err.msg) : 0;
}

/* ---- NCCL ------------------------------------------------------------- */

#if defined(HAVE_NCCL)
static int shard_of(const ferry__gpu *g, int device) {
  for (int i = 0; i < g->ndev; i++)
    if (g->dev[i] == device)
      return i;
  return -1;
}

static int nccl_fail(ferry__err *err, const char *what, ncclResult_t r) {
  return ferry__seterr(err, FERRY_ENODEV, "%s failed: %s", what,
                       rt.ncclGetErrorString(r));
}

/* Deregister every handle of one communicator, unless it reports an
 * error: then its registrations go with the application's ncclCommAbort,
 * and calling into a failed communicator could block. */
static int nccl_detach_one(nccl_reg *r, ferry__err *err) {
  int rc = 0;
  ncclResult_t async = ncclSuccess;
  ncclResult_t q = rt.ncclCommGetAsyncError((ncclComm_t)r->comm, &async);
  if (q == ncclSuccess && async == ncclSuccess) {
    for (int64_t k = 0; k < r->n; k++) {
      if (!r->handles[k])
        continue;
      ncclResult_t nr =
          rt.ncclCommDeregister((ncclComm_t)r->comm, r->handles[k]);
      if (nr != ncclSuccess && !rc)
        rc = nccl_fail(err, "ncclCommDeregister", nr);
    }
  }
  free(r->handles);
  memset(r, 0, sizeof *r);
  return rc;
}

int ferry__gpu_nccl_attach(ferry__gpu *g, void *comm, ferry__err *err) {
  int dev = -1;
  if (!rt.nccl)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "ferry_attach_nccl: NCCL could not be loaded: %s",
                         rt.nccl_why);
  ncclResult_t nr = rt.ncclCommCuDevice((ncclComm_t)comm, &dev);
  if (nr != ncclSuccess)
    return nccl_fail(err, "ncclCommCuDevice", nr);
  int i = shard_of(g, dev);
  if (i < 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "ferry_attach_nccl: the communicator is on device "
                         "%d, where this loader has no buffer",
                         dev);
  if (g->ncomms == MAX_COMMS)
    return ferry__seterr(err, FERRY_EINVAL,
                         "ferry_attach_nccl: at most %d communicators",
                         MAX_COMMS);
  for (int k = 0; k < g->ncomms; k++)
    if (g->comms[k].comm == comm)
      return ferry__seterr(err, FERRY_EINVAL,
                           "ferry_attach_nccl: communicator already attached");
  nccl_reg *r = &g->comms[g->ncomms];
  r->handles = calloc((size_t)g->nring, sizeof *r->handles);
  if (!r->handles)
    return ferry__oom(err, -1, (size_t)g->nring * sizeof *r->handles,
                      "ferry_attach_nccl's handles of %lld device batches",
                      (long long)g->nring);
  r->comm = comm;
  r->device = dev;
  r->n = g->nring;
  int prev = -1;
  rt.cudaGetDevice(&prev);
  rt.cudaSetDevice(dev);
  int rc = 0;
  for (int64_t k = 0; k < g->nring && !rc; k++) {
    ferry__dslot *d = g->ring[k];
    nr = rt.ncclCommRegister((ncclComm_t)comm, d->mem[i], d->mem_bytes[i],
                             &r->handles[k]);
    if (nr != ncclSuccess) {
      r->handles[k] = NULL;
      rc = nccl_fail(err, "ncclCommRegister", nr);
    }
  }
  rt.cudaSetDevice(prev);
  if (rc) {
    ferry__err ignore;
    nccl_detach_one(r, &ignore);
    return rc;
  }
  g->ncomms++;
  return 0;
}

int ferry__gpu_nccl_detach(ferry__gpu *g, ferry__err *err) {
  int rc = 0;
  for (int k = 0; g && k < g->ncomms; k++) {
    int r = nccl_detach_one(&g->comms[k], err);
    if (r && !rc)
      rc = r;
  }
  if (g)
    g->ncomms = 0;
  return rc;
}
#else
int ferry__gpu_nccl_attach(ferry__gpu *g, void *comm, ferry__err *err) {
  (void)g;
  (void)comm;
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "ferry_attach_nccl: this libferry was built without "
                       "NCCL (configure --with-nccl)");
}
int ferry__gpu_nccl_detach(ferry__gpu *g, ferry__err *err) {
  (void)g;
  (void)err;
  return 0;
}
#endif

void ferry__gpu_close(ferry__gpu *g) {
  if (!g)
    return;
  ferry__err ignore;
  int prev = -1, had = rt.cudaGetDevice(&prev) == cudaSuccess;
  ferry__gpu_sync(g, &ignore);
  ferry__gpu_nccl_detach(g, &ignore);
  for (int i = 0; i < g->ndev; i++) {
    if (g->stream[i]) {
      rt.cudaSetDevice(g->dev[i]);
      rt.cudaStreamDestroy(g->stream[i]);
    }
    if (g->dz_mod[i]) {
      rt.cudaSetDevice(g->dev[i]);
      g->unload(g->dz_mod[i]);
    }
  }
  if (had)
    rt.cudaSetDevice(prev);
  free(g);
}
