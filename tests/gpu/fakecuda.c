/* fakecuda.c - fake CUDA runtime + NCCL for GPU-less CI, used by LD_PRELOAD.
 *
 * Why: CI machines have the CUDA/NCCL headers and libraries but no GPU, so
 * ferry's device path would only ever see cudaErrorNoDevice.  Preloading
 * this library (it defines the cudart and NCCL symbols itself, interposing
 * over the versioned ones of libcudart.so.13 / libnccl.so.2, and never calls
 * them) lets that path run for real.  "Device memory" is host memory kept in
 * a table, and every created stream is a worker thread that executes its
 * queue in order after a random delay, so host code that forgets to
 * synchronise reads stale or wrong data, exactly as on a GPU -- often more.
 *
 * Build: gcc -shared -fPIC -I$CUDA/include fakecuda.c -o libfakecuda.so \
 *        -lpthread
 *
 * Environment (read once, at the first call):
 *   FAKECUDA_DEVICES=N        devices (default 1; 0: cudaErrorNoDevice)
 *   FAKECUDA_DEVICE_MEM=B     bytes per device for cudaMalloc (default 16 GiB)
 *   FAKECUDA_DELAY_US=U       a stream sleeps 0..U us before each copy (200)
 *   FAKECUDA_SEED=S           seed of those delays (default: the pid)
 *   FAKECUDA_FAIL_MEMCPY_AT=N the N-th cudaMemcpyAsync (1-based) fails with
 *                             cudaErrorLaunchFailure and enqueues nothing
 *   FAKECUDA_FAIL_LAUNCH_AT=N the N-th cuLaunchKernel (1-based) fails with
 *                             CUDA_ERROR_LAUNCH_FAILED and enqueues nothing
 *   FAKECUDA_FAIL_HOSTALLOC=1 cudaHostAlloc/cudaMallocHost fail: out of memory
 *   FAKECUDA_FAIL_RANK=R      the failures only where the rank is R (from
 *                             OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK; else
 * 0)
 *
 * Semantics worth knowing:
 *   - The NULL / cudaStreamLegacy stream runs operations synchronously in the
 *     caller, after waiting for every blocking (not cudaStreamNonBlocking)
 *     stream of the current device to drain; cudaStreamPerThread runs them
 *     synchronously without that wait.
 *   - cudaMemcpyAsync H2D from pageable memory snapshots the source at the
 *     call (as CUDA documents); D2H into pageable memory stays asynchronous
 *     (stricter than CUDA, which completes it before returning).
 *   - cudaFree/cudaFreeHost wait for every stream, then fill the memory with
 *     0xDB; fresh cudaMalloc memory is filled with 0xCD.
 *   - A thread has a current context (driver cuCtxGetCurrent, obtained via
 *     cudaGetDriverEntryPointByVersion) only after cudaSetDevice or
 *     cudaFree(NULL) on that thread; other calls do not create one.
 *   - NCCL: communicators of one rank only; ncclAllReduce is a D2D copy.
 *   - Kernels: ferry's own only (src/gpu/densify.h).  The driver's
 *     cuModuleLoadData accepts an image that defines ferry_densify,
 *     cuModuleGetFunction finds it, and cuLaunchKernel queues a plain C
 *     loop of that kernel's contract, written here from the contract and
 *     not from ferry's code, on the stream's worker after what was queued
 *     before it (with the same random delay as a copy); its pointers must
 *     be device memory.
 * Not modelled: other kernels, graphs, memory pools, managed memory, peer
 * access, cudaStreamPerThread as a separate queue, per-thread-default-stream
 * (_ptsz) entry points, the driver API beyond cuCtxGetCurrent and the module
 * and launch functions above, multi-rank NCCL, sticky errors, any performance
 * behaviour.  A cudart function not defined here still resolves to the real
 * libcudart, which fails without a driver (cudaErrorInsufficientDriver, 35):
 * add it here. Test hooks: fakecuda.h (counters, fakecuda_break_comm).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/gpu/densify.h"
#include "fakecuda.h"

#define MAXDEV 64
#define ALIGN 256

/* ---- state ------------------------------------------------------------ */

enum rkind { R_DEV, R_PINNED, R_HOSTREG };
struct region { /* a registered address range */
  char *base;
  size_t size, charged; /* charged: bytes counted against the device */
  enum rkind kind;
  int dev, nccl;
  struct region *next;
};

/* The arguments of ferry_densify (src/gpu/densify.h), copied at launch. */
struct densify_args {
  const int64_t *off;
  const void *idx, *val;
  int idx_dt, val_dt, out_dt;
  int64_t nrows, width, kept;
  const int64_t *map;
  void *out;
};

enum okind { OP_COPY, OP_RECORD, OP_WAIT, OP_KERNEL };
struct op { /* one queued stream operation */
  enum okind kind;
  struct densify_args k; /* OP_KERNEL */
  void *dst, *staging;   /* staging: owned snapshot of a pageable src */
  const void *src;
  size_t n;
  struct CUevent_st *ev; /* OP_RECORD, OP_WAIT: event and generation */
  unsigned long gen;
  struct op *next;
};

struct CUstream_st { /* cudaStream_t */
  int dev, stop;
  unsigned flags, rng;
  struct op *head, *tail; /* head stays queued until it has run */
  pthread_t thr;
  struct CUstream_st *next;
};

struct CUevent_st {    /* cudaEvent_t */
  int dev, refs, dead; /* refs: queued ops naming the event */
  unsigned flags;
  unsigned long rec, done; /* latest recorded / completed generation */
  struct timespec t;
  struct CUevent_st *next;
};

struct reg {
  void *buf;
  size_t size;
  struct reg *next;
};
struct ncclComm {
  int dev, broken;
  struct reg *regs;
  struct ncclComm *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER; /* any state change */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct {
  int ndev, fail_hostalloc, fail_here;
  size_t mem;
  unsigned delay_us, seed;
  long fail_memcpy_at, fail_launch_at;
} cfg;
static long launch_calls;
static size_t used[MAXDEV];
static long memcpy_calls;
static unsigned nstreams;
static struct region *regions;
static struct CUstream_st *streams;
static struct CUevent_st *events;
static struct ncclComm *comms;
static fakecuda_counters cnt;
static char fake_ctx[MAXDEV];
static _Thread_local int tl_dev, tl_ctx;
static _Thread_local cudaError_t tl_err;

#define COUNT(f) __atomic_add_fetch(&cnt.f, 1, __ATOMIC_RELAXED)
#define UNCOUNT(f) __atomic_sub_fetch(&cnt.f, 1, __ATOMIC_RELAXED)
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)
#define WAIT() pthread_cond_wait(&cv, &mu)
#define WAKE() pthread_cond_broadcast(&cv)
#define IS_SYNC(s)                                                             \
  ((s) == NULL || (s) == cudaStreamLegacy || (s) == cudaStreamPerThread)
#define NEED_DEV()                                                             \
  do {                                                                         \
    init();                                                                    \
    if (!cfg.ndev)                                                             \
      return ret(cudaErrorNoDevice);                                           \
  } while (0)
/* Define find_NAME (the live object x, or NULL) and unlink_NAME over a
 * singly linked list. */
#define LIST_FIND(type, name, list)                                            \
  static type *find_##name(const void *x) {                                    \
    for (type *p = list; p; p = p->next)                                       \
      if (p == x)                                                              \
        return p;                                                              \
    return NULL;                                                               \
  }
#define LIST_UNLINK(type, name, list)                                          \
  static void unlink_##name(type *x) {                                         \
    type **pp = &list;                                                         \
    while (*pp != x)                                                           \
      pp = &(*pp)->next;                                                       \
    *pp = x->next;                                                             \
  }
#define LIST_OPS(type, name, list)                                             \
  LIST_FIND(type, name, list) LIST_UNLINK(type, name, list)
/* Return ret(call), call made under the global lock. */
#define LOCKED(call)                                                           \
  do {                                                                         \
    LOCK();                                                                    \
    cudaError_t e_ = (call);                                                   \
    UNLOCK();                                                                  \
    return ret(e_);                                                            \
  } while (0)

/* ---- configuration and errors ----------------------------------------- */

static long long env_ll(const char *name, long long def) {
  const char *s = getenv(name);
  char *end;
  if (!s || !*s)
    return def;
  long long v = strtoll(s, &end, 0);
  return *end ? def : v;
}

static int my_rank(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i]))
      return atoi(getenv(vars[i]));
  return 0;
}

static void init_once(void) {
  long long n = env_ll("FAKECUDA_DEVICES", 1);
  long long mem = env_ll("FAKECUDA_DEVICE_MEM", 16LL << 30);
  long long delay = env_ll("FAKECUDA_DELAY_US", 200);
  cfg.ndev = n < 0 ? 0 : n > MAXDEV ? MAXDEV : (int)n;
  cfg.mem = mem < 0 ? 0 : (size_t)mem;
  cfg.delay_us = delay < 0 ? 0 : (unsigned)delay;
  cfg.seed = (unsigned)env_ll("FAKECUDA_SEED", getpid());
  cfg.fail_memcpy_at = env_ll("FAKECUDA_FAIL_MEMCPY_AT", 0);
  cfg.fail_launch_at = env_ll("FAKECUDA_FAIL_LAUNCH_AT", 0);
  cfg.fail_hostalloc = env_ll("FAKECUDA_FAIL_HOSTALLOC", 0) != 0;
  cfg.fail_here = !getenv("FAKECUDA_FAIL_RANK") ||
                  env_ll("FAKECUDA_FAIL_RANK", -1) == my_rank();
}

static void init(void) { pthread_once(&once, init_once); }

/* Every cudart entry point returns through here: failures become the
 * thread's last error and are counted.  NotReady is not a failure. */
static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) {
    tl_err = e;
    COUNT(errors_returned);
  }
  return e;
}

static ncclResult_t nret(ncclResult_t r) {
  if (r != ncclSuccess)
    COUNT(errors_returned);
  return r;
}

#define E(code, text)                                                          \
  { code, #code, text }
static const struct {
  cudaError_t e;
  const char *name, *text;
} errtab[] = {
    E(cudaSuccess, "no error"),
    E(cudaErrorInvalidValue, "invalid argument"),
    E(cudaErrorMemoryAllocation, "out of memory"),
    E(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    E(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    E(cudaErrorInvalidDevice, "invalid device ordinal"),
    E(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    E(cudaErrorSymbolNotFound, "named symbol not found"),
    E(cudaErrorNotReady, "device not ready"),
    E(cudaErrorHostMemoryAlreadyRegistered,
      "part or all of the requested memory range is already mapped"),
    E(cudaErrorHostMemoryNotRegistered,
      "pointer does not correspond to a registered memory region"),
    E(cudaErrorLaunchFailure, "unspecified launch failure"),
};
#undef E

static int errindex(cudaError_t e) {
  for (size_t i = 0; i < sizeof errtab / sizeof *errtab; i++)
    if (errtab[i].e == e)
      return (int)i;
  return -1;
}

const char *cudaGetErrorString(cudaError_t e) {
  int i = errindex(e);
  return i < 0 ? "unrecognized error code" : errtab[i].text;
}

const char *cudaGetErrorName(cudaError_t e) {
  int i = errindex(e);
  return i < 0 ? "unrecognized error code" : errtab[i].name;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = tl_err;
  tl_err = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return tl_err; }

cudaError_t cudaRuntimeGetVersion(int *v) {
  if (!v)
    return ret(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) { return cudaRuntimeGetVersion(v); }

/* ---- devices and contexts --------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return ret(cudaErrorInvalidValue);
  init();
  *count = cfg.ndev;
  return cfg.ndev ? cudaSuccess : ret(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int d) {
  NEED_DEV();
  if (d < 0 || d >= cfg.ndev)
    return ret(cudaErrorInvalidDevice);
  tl_dev = d;
  tl_ctx = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d) {
  if (!d)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  *d = tl_dev;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int d) {
  if (!buf || len <= 0)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  if (d < 0 || d >= cfg.ndev)
    return ret(cudaErrorInvalidDevice);
  snprintf(buf, (size_t)len, "0000:%02x:00.0", 0x10 + d);
  return cudaSuccess;
}

/* Driver API entry points handed out by cudaGetDriverEntryPoint*.
 * CUresult values: 0 success, 1 invalid value. */
static int fake_cuCtxGetCurrent(void **pctx) {
  if (!pctx)
    return 1;
  *pctx = tl_ctx ? &fake_ctx[tl_dev] : NULL;
  return 0;
}

/* ferry's kernel through the driver API (defined after the streams). */
static int fake_cuModuleLoadData(void **mod, const void *image);
static int fake_cuModuleGetFunction(void **fn, void *mod, const char *name);
static int fake_cuModuleUnload(void *mod);
static int fake_cuGetErrorString(int r, const char **s);
static int fake_cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz,
                               unsigned shared, void *stream, void **params,
                               void **extra);

/* Note the CUDA 13 argument order: version before flags. */
cudaError_t
cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                 unsigned int version, unsigned long long flags,
                                 enum cudaDriverEntryPointQueryResult *status) {
  void *f = NULL;
  (void)version;
  (void)flags;
  if (!symbol || !fn)
    return ret(cudaErrorInvalidValue);
  if (!strcmp(symbol, "cuCtxGetCurrent"))
    f = (void *)fake_cuCtxGetCurrent;
  else if (!strcmp(symbol, "cuModuleLoadData"))
    f = (void *)fake_cuModuleLoadData;
  else if (!strcmp(symbol, "cuModuleGetFunction"))
    f = (void *)fake_cuModuleGetFunction;
  else if (!strcmp(symbol, "cuModuleUnload"))
    f = (void *)fake_cuModuleUnload;
  else if (!strcmp(symbol, "cuLaunchKernel"))
    f = (void *)fake_cuLaunchKernel;
  else if (!strcmp(symbol, "cuGetErrorString"))
    f = (void *)fake_cuGetErrorString;
  *fn = f;
  if (status)
    *status =
        f ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return f ? cudaSuccess : ret(cudaErrorSymbolNotFound);
}

/* ---- the region table ------------------------------------------------- */

LIST_UNLINK(struct region, region, regions)
LIST_OPS(struct CUstream_st, stream, streams)
LIST_OPS(struct CUevent_st, event, events)
LIST_OPS(struct ncclComm, comm, comms)

static struct region *region_of(const void *p) {
  const char *c = p;
  for (struct region *r = regions; r; r = r->next)
    if (c >= r->base && c < r->base + r->size)
      return r;
  return NULL;
}

/* The region starting exactly at p, of the given kind, or NULL. */
static struct region *region_at(const void *p, enum rkind kind) {
  struct region *r = region_of(p);
  return r && r->base == p && r->kind == kind ? r : NULL;
}

static struct region *add_region(void *base, size_t size, enum rkind kind) {
  struct region *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  *r = (struct region){base, size, size, kind, tl_dev, 0, regions};
  regions = r;
  return r;
}

enum loc { LOC_HOST, LOC_PINNED, LOC_DEV, LOC_BAD };

/* Where [p, p+n) lies; LOC_BAD: starts in device memory but runs past it. */
static enum loc locate(const void *p, size_t n, int *dev) {
  struct region *r = region_of(p);
  if (!r)
    return LOC_HOST;
  if (n > (size_t)(r->base + r->size - (const char *)p))
    return r->kind == R_DEV ? LOC_BAD : LOC_HOST;
  *dev = r->dev;
  return r->kind == R_DEV ? LOC_DEV : LOC_PINNED;
}

/* ---- streams ---------------------------------------------------------- */

/* Locked: wait until the streams of dev (-1: all; only the blocking ones
 * if asked) have empty queues. */
static void drain(int dev, int blocking_only) {
  for (;;) {
    int busy = 0;
    for (struct CUstream_st *s = streams; s && !busy; s = s->next)
      busy = s->head && (dev < 0 || s->dev == dev) &&
             !(blocking_only && (s->flags & cudaStreamNonBlocking));
    if (!busy)
      return;
    WAIT();
  }
}

/* ---- ferry_densify, from its contract (src/gpu/densify.h) -------------- */

static size_t dt_size(int dt) {
  static const size_t sz[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
  return dt >= 0 && dt < 12 ? sz[dt] : 0;
}

static double value_at(const void *p, int64_t k, int dt) {
  switch (dt) {
  case FERRY__KDT_BOOL: return ((const uint8_t *)p)[k] != 0;
  case FERRY__KDT_INT8: return ((const int8_t *)p)[k];
  case FERRY__KDT_INT16: return ((const int16_t *)p)[k];
  case FERRY__KDT_INT32: return ((const int32_t *)p)[k];
  case FERRY__KDT_INT64: return (double)((const int64_t *)p)[k];
  case FERRY__KDT_UINT8: return ((const uint8_t *)p)[k];
  case FERRY__KDT_UINT16: return ((const uint16_t *)p)[k];
  case FERRY__KDT_UINT32: return ((const uint32_t *)p)[k];
  case FERRY__KDT_UINT64: return (double)((const uint64_t *)p)[k];
  case FERRY__KDT_FLOAT16: return (double)((const _Float16 *)p)[k];
  case FERRY__KDT_FLOAT32: return ((const float *)p)[k];
  default: return ((const double *)p)[k];
  }
}

/* Locked, on the stream's worker: every row zeroed, then each value put
 * at its column's place, converted. */
static void run_densify(const struct densify_args *a) {
  size_t es = dt_size(a->out_dt), vs = dt_size(a->val_dt);
  for (int64_t r = 0; r < a->nrows; r++) {
    unsigned char *row = (unsigned char *)a->out + (size_t)(r * a->kept) * es;
    memset(row, 0, (size_t)a->kept * es);
    for (int64_t k = a->off[r] - a->off[0]; k < a->off[r + 1] - a->off[0];
         k++) {
      int64_t col = a->idx_dt == FERRY__KDT_INT32
                        ? ((const int32_t *)a->idx)[k]
                        : ((const int64_t *)a->idx)[k];
      if (col < 0 || col >= a->width)
        continue;
      int64_t place = a->map ? a->map[col] : col;
      if (place < 0)
        continue;
      unsigned char *dst = row + (size_t)place * es;
      if (a->out_dt == a->val_dt) {
        memcpy(dst, (const unsigned char *)a->val + (size_t)k * vs, es);
      } else if (a->out_dt == FERRY__KDT_FLOAT64) {
        double d = value_at(a->val, k, a->val_dt);
        memcpy(dst, &d, 8);
      } else if (a->out_dt == FERRY__KDT_FLOAT32) {
        float f = (float)value_at(a->val, k, a->val_dt);
        memcpy(dst, &f, 4);
      } else {
        _Float16 h = (_Float16)(float)value_at(a->val, k, a->val_dt);
        memcpy(dst, &h, 2);
      }
    }
  }
}

/* Locked: run o now; a worker does this for its head, a synchronous stream
 * in the caller. */
static void run_op(struct op *o) {
  switch (o->kind) {
  case OP_COPY: memmove(o->dst, o->staging ? o->staging : o->src, o->n); break;
  case OP_KERNEL: run_densify(&o->k); break;
  case OP_WAIT:
    while (o->ev->done < o->gen)
      WAIT();
    break;
  case OP_RECORD:
    if (o->gen > o->ev->done) {
      o->ev->done = o->gen;
      clock_gettime(CLOCK_MONOTONIC, &o->ev->t);
    }
    break;
  }
  free(o->staging);
  o->staging = NULL;
}

static void random_delay(struct CUstream_st *s) {
  if (!cfg.delay_us)
    return;
  s->rng ^= s->rng << 13; /* xorshift32 */
  s->rng ^= s->rng >> 17;
  s->rng ^= s->rng << 5;
  unsigned us = s->rng % (cfg.delay_us + 1);
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static void *worker(void *arg) {
  struct CUstream_st *s = arg;
  LOCK();
  for (;;) {
    while (!s->head && !s->stop)
      WAIT();
    struct op *o = s->head;
    if (!o)
      break;
    if (o->kind == OP_COPY || o->kind == OP_KERNEL) {
      UNLOCK();
      random_delay(s);
      LOCK();
    }
    run_op(o);
    if (o->ev && --o->ev->refs == 0 && o->ev->dead)
      free(o->ev);
    if (!(s->head = o->next))
      s->tail = NULL;
    free(o);
    WAKE();
  }
  UNLOCK();
  return NULL;
}

/* Locked: the device of stream s (the current one for synchronous). */
static cudaError_t stream_dev(cudaStream_t s, int *dev) {
  if (!IS_SYNC(s) && !find_stream(s))
    return cudaErrorInvalidResourceHandle;
  *dev = IS_SYNC(s) ? tl_dev : s->dev;
  return cudaSuccess;
}

/* Locked: queue o on s, or run it now on a synchronous stream. */
static cudaError_t submit(cudaStream_t s, struct op o) {
  if (IS_SYNC(s)) {
    if (s != cudaStreamPerThread)
      drain(tl_dev, 1);
    run_op(&o);
    return cudaSuccess;
  }
  struct op *q = malloc(sizeof *q);
  if (!q) {
    free(o.staging);
    return cudaErrorMemoryAllocation;
  }
  *q = o;
  q->next = NULL;
  if (q->ev)
    q->ev->refs++;
  if (s->tail)
    s->tail->next = q;
  else
    s->head = q;
  s->tail = q;
  WAKE();
  return cudaSuccess;
}

/* ---- ferry's kernel (driver API) -------------------------------------- */

/* The module of ferry's kernel: a token, its function another. */
static char fake_module, fake_function;

static int fake_cuModuleLoadData(void **mod, const void *image) {
  if (!mod || !image)
    return 1;
  if (!strstr(image, ".entry " FERRY__DENSIFY_KERNEL))
    return 200; /* CUDA_ERROR_INVALID_IMAGE */
  *mod = &fake_module;
  return 0;
}

static int fake_cuModuleGetFunction(void **fn, void *mod, const char *name) {
  if (!fn || mod != &fake_module || !name)
    return 1;
  if (strcmp(name, FERRY__DENSIFY_KERNEL) != 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  *fn = &fake_function;
  return 0;
}

static int fake_cuModuleUnload(void *mod) {
  return mod == &fake_module ? 0 : 1;
}

static int fake_cuGetErrorString(int r, const char **s) {
  if (!s)
    return 1;
  *s = r == 0     ? "no error"
       : r == 1   ? "invalid argument"
       : r == 200 ? "device kernel image is invalid"
       : r == 500 ? "named symbol not found"
       : r == 719 ? "unspecified launch failure"
                  : NULL;
  return *s ? 0 : 1;
}

/* Locked: queue the kernel's loop on s, its arguments copied now. */
static int launch(cudaStream_t s, void **p) {
  struct op o = {.kind = OP_KERNEL};
  memcpy(&o.k.off, p[0], sizeof o.k.off);
  memcpy(&o.k.idx, p[1], sizeof o.k.idx);
  memcpy(&o.k.idx_dt, p[2], sizeof o.k.idx_dt);
  memcpy(&o.k.val, p[3], sizeof o.k.val);
  memcpy(&o.k.val_dt, p[4], sizeof o.k.val_dt);
  memcpy(&o.k.nrows, p[5], sizeof o.k.nrows);
  memcpy(&o.k.width, p[6], sizeof o.k.width);
  memcpy(&o.k.map, p[7], sizeof o.k.map);
  memcpy(&o.k.kept, p[8], sizeof o.k.kept);
  memcpy(&o.k.out, p[9], sizeof o.k.out);
  memcpy(&o.k.out_dt, p[10], sizeof o.k.out_dt);
  int dev = -1, d2 = -1;
  if (stream_dev(s, &dev) != cudaSuccess)
    return 400; /* CUDA_ERROR_INVALID_HANDLE */
  size_t es = dt_size(o.k.out_dt);
  if (o.k.nrows < 0 || !es || !dt_size(o.k.val_dt) ||
      (o.k.idx_dt != FERRY__KDT_INT32 && o.k.idx_dt != FERRY__KDT_INT64) ||
      locate(o.k.off, (size_t)(o.k.nrows + 1) * 8, &d2) != LOC_DEV ||
      locate(o.k.out, (size_t)(o.k.nrows * o.k.kept) * es, &d2) != LOC_DEV ||
      d2 != dev || (o.k.map && locate(o.k.map, 8, &d2) != LOC_DEV))
    return 1;
  COUNT(kernel_launches);
  return submit(s, o) == cudaSuccess ? 0 : 2;
}

static int fake_cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz,
                               unsigned shared, void *stream, void **params,
                               void **extra) {
  (void)shared;
  init();
  if (fn != &fake_function || !params || extra || !gx || !gy || !gz || !bx ||
      !by || !bz)
    return 1;
  long call = __atomic_add_fetch(&launch_calls, 1, __ATOMIC_RELAXED);
  if (cfg.fail_here && call == cfg.fail_launch_at)
    return 719; /* CUDA_ERROR_LAUNCH_FAILED */
  LOCK();
  int r = launch((cudaStream_t)stream, params);
  UNLOCK();
  return r;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned int flags) {
  if (!ps)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s)
    return ret(cudaErrorMemoryAllocation);
  *s = (struct CUstream_st){.dev = tl_dev, .flags = flags};
  LOCK();
  s->rng = (cfg.seed ^ (++nstreams * 2654435761u)) | 1;
  int err = pthread_create(&s->thr, NULL, worker, s);
  if (!err) {
    s->next = streams;
    streams = *ps = s;
  }
  UNLOCK();
  if (err)
    free(s);
  else
    COUNT(stream_creates);
  return ret(err ? cudaErrorMemoryAllocation : cudaSuccess);
}

cudaError_t cudaStreamCreate(cudaStream_t *ps) {
  return cudaStreamCreateWithFlags(ps, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  init();
  LOCK();
  if (IS_SYNC(s) || !find_stream(s)) {
    UNLOCK();
    return ret(cudaErrorInvalidResourceHandle);
  }
  unlink_stream(s); /* no new work from here on */
  while (s->head)
    WAIT();
  s->stop = 1;
  WAKE();
  UNLOCK();
  pthread_join(s->thr, NULL);
  free(s);
  COUNT(stream_destroys);
  return cudaSuccess;
}

static cudaError_t stream_sync(cudaStream_t s, int wait) {
  if (IS_SYNC(s))
    return cudaSuccess; /* its work ran in the callers */
  if (!find_stream(s))
    return cudaErrorInvalidResourceHandle;
  while (wait && s->head)
    WAIT();
  return s->head ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  NEED_DEV();
  LOCKED(stream_sync(s, 1));
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  NEED_DEV();
  LOCKED(stream_sync(s, 0));
}

cudaError_t cudaDeviceSynchronize(void) {
  NEED_DEV();
  LOCK();
  drain(tl_dev, 0);
  UNLOCK();
  return cudaSuccess;
}

/* ---- events ----------------------------------------------------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned int flags) {
  if (!pe)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  struct CUevent_st *ev = calloc(1, sizeof *ev);
  if (!ev)
    return ret(cudaErrorMemoryAllocation);
  *ev = (struct CUevent_st){.dev = tl_dev, .flags = flags};
  LOCK();
  ev->next = events;
  events = *pe = ev;
  UNLOCK();
  COUNT(event_creates);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *pe) {
  return cudaEventCreateWithFlags(pe, cudaEventDefault);
}

static cudaError_t event_destroy(cudaEvent_t e) {
  if (!find_event(e))
    return cudaErrorInvalidResourceHandle;
  unlink_event(e);
  if (e->refs)
    e->dead = 1; /* the last queued op naming it frees it */
  else
    free(e);
  COUNT(event_destroys);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  init();
  LOCKED(event_destroy(e));
}

static cudaError_t event_record(cudaEvent_t e, cudaStream_t s) {
  int sdev;
  cudaError_t err = stream_dev(s, &sdev);
  if (err)
    return err;
  if (!find_event(e) || e->dev != sdev)
    return cudaErrorInvalidResourceHandle;
  err = submit(s, (struct op){.kind = OP_RECORD, .ev = e, .gen = e->rec + 1});
  if (!err)
    e->rec++;
  return err;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  NEED_DEV();
  LOCKED(event_record(e, s));
}

/* Waits for the generation recorded now; a never-recorded event is a no-op. */
static cudaError_t stream_wait(cudaStream_t s, cudaEvent_t e) {
  int sdev;
  cudaError_t err = stream_dev(s, &sdev);
  if (err)
    return err;
  if (!find_event(e))
    return cudaErrorInvalidResourceHandle;
  if (e->done >= e->rec)
    return cudaSuccess;
  return submit(s, (struct op){.kind = OP_WAIT, .ev = e, .gen = e->rec});
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                unsigned int flags) {
  (void)flags;
  NEED_DEV();
  LOCKED(stream_wait(s, e));
}

static cudaError_t event_sync(cudaEvent_t e, int wait) {
  if (!find_event(e))
    return cudaErrorInvalidResourceHandle;
  unsigned long gen = e->rec;
  while (wait && e->done < gen)
    WAIT();
  return e->done < gen ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  init();
  LOCKED(event_sync(e, 0));
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  init();
  LOCKED(event_sync(e, 1));
}

static cudaError_t elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) {
  if (!find_event(a) || !find_event(b) || !a->rec || !b->rec ||
      ((a->flags | b->flags) & cudaEventDisableTiming))
    return cudaErrorInvalidResourceHandle;
  if (a->done < a->rec || b->done < b->rec)
    return cudaErrorNotReady;
  *ms = (float)((double)(b->t.tv_sec - a->t.tv_sec) * 1e3 +
                (double)(b->t.tv_nsec - a->t.tv_nsec) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms)
    return ret(cudaErrorInvalidValue);
  init();
  LOCKED(elapsed(ms, a, b));
}

/* ---- memory ----------------------------------------------------------- */

static size_t round_up(size_t n) {
  size_t r = (n + ALIGN - 1) / ALIGN * ALIGN;
  return r < n ? 0 : r;
}

/* Locked: n bytes of memory of the current device, filled with garbage. */
static cudaError_t dev_alloc(void **p, size_t n, int nccl) {
  size_t sz = round_up(n), d = (size_t)tl_dev;
  *p = NULL;
  if (!sz || used[d] > cfg.mem || sz > cfg.mem - used[d])
    return cudaErrorMemoryAllocation;
  void *m = aligned_alloc(ALIGN, sz);
  struct region *r = m ? add_region(m, n, R_DEV) : NULL;
  if (!r) {
    free(m);
    return cudaErrorMemoryAllocation;
  }
  memset(m, 0xCD, sz);
  r->nccl = nccl;
  used[d] += r->charged = sz;
  COUNT(device_allocs);
  COUNT(live_device_allocs);
  if (nccl)
    COUNT(nccl_allocs);
  *p = m;
  return cudaSuccess;
}

/* Locked: CUDA frees synchronise, so wait for every stream, then poison. */
static cudaError_t dev_free(void *p, int nccl) {
  drain(-1, 0);
  struct region *r = region_at(p, R_DEV);
  if (!r || r->nccl != nccl)
    return cudaErrorInvalidValue;
  unlink_region(r);
  used[r->dev] -= r->charged;
  memset(r->base, 0xDB, r->charged);
  free(r->base);
  free(r);
  COUNT(device_frees);
  UNCOUNT(live_device_allocs);
  if (nccl)
    COUNT(nccl_frees);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) {
  if (!p)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  *p = NULL;
  if (!n)
    return cudaSuccess;
  LOCKED(dev_alloc(p, n, 0));
}

cudaError_t cudaFree(void *p) {
  NEED_DEV();
  if (!p) { /* the "create the context" idiom */
    tl_ctx = 1;
    return cudaSuccess;
  }
  LOCKED(dev_free(p, 0));
}

static cudaError_t host_alloc(void **p, size_t n) {
  size_t sz = round_up(n);
  void *m = sz ? aligned_alloc(ALIGN, sz) : NULL;
  if (!m || !add_region(m, sz, R_PINNED)) {
    free(m);
    return cudaErrorMemoryAllocation;
  }
  COUNT(host_allocs);
  COUNT(live_host_allocs);
  *p = m;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags) {
  (void)flags;
  if (!p)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  *p = NULL;
  if (cfg.fail_hostalloc && cfg.fail_here)
    return ret(cudaErrorMemoryAllocation);
  if (!n)
    return cudaSuccess;
  LOCKED(host_alloc(p, n));
}

cudaError_t cudaMallocHost(void **p, size_t n) {
  return cudaHostAlloc(p, n, cudaHostAllocDefault);
}

static cudaError_t host_free(void *p) {
  drain(-1, 0);
  struct region *r = region_at(p, R_PINNED);
  if (!r)
    return cudaErrorInvalidValue;
  unlink_region(r);
  memset(r->base, 0xDB, r->size);
  free(r->base);
  free(r);
  COUNT(host_frees);
  UNCOUNT(live_host_allocs);
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
  NEED_DEV();
  if (!p)
    return cudaSuccess;
  LOCKED(host_free(p));
}

static cudaError_t host_register(void *p, size_t n) {
  for (struct region *r = regions; r; r = r->next)
    if ((char *)p < r->base + r->size && r->base < (char *)p + n)
      return cudaErrorHostMemoryAlreadyRegistered;
  return add_region(p, n, R_HOSTREG) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaHostRegister(void *p, size_t n, unsigned int flags) {
  (void)flags;
  if (!p || !n)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  LOCKED(host_register(p, n));
}

static cudaError_t host_unregister(void *p) {
  struct region *r = region_at(p, R_HOSTREG);
  if (!r)
    return cudaErrorHostMemoryNotRegistered;
  unlink_region(r);
  free(r);
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p) {
  NEED_DEV();
  LOCKED(host_unregister(p));
}

static cudaError_t attributes(struct cudaPointerAttributes *a, const void *p) {
  struct region *r = region_of(p);
  memset(a, 0, sizeof *a);
  a->type = !r                 ? cudaMemoryTypeUnregistered
            : r->kind == R_DEV ? cudaMemoryTypeDevice
                               : cudaMemoryTypeHost;
  a->device = r ? r->dev : -2;
  a->devicePointer = r ? (void *)p : NULL;
  a->hostPointer = !r || r->kind != R_DEV ? (void *)p : NULL;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p) {
  if (!a)
    return ret(cudaErrorInvalidValue);
  NEED_DEV();
  LOCKED(attributes(a, p));
}

/* ---- copies ----------------------------------------------------------- */

static cudaError_t check_kind(enum cudaMemcpyKind k, enum loc dl, enum loc sl) {
  if (dl == LOC_BAD || sl == LOC_BAD)
    return cudaErrorInvalidValue;
  int dd = dl == LOC_DEV, sd = sl == LOC_DEV, ok;
  switch (k) {
  case cudaMemcpyHostToHost: ok = !dd && !sd; break;
  case cudaMemcpyHostToDevice: ok = dd && !sd; break;
  case cudaMemcpyDeviceToHost: ok = !dd && sd; break;
  case cudaMemcpyDeviceToDevice: ok = dd && sd; break;
  case cudaMemcpyDefault: ok = 1; break;
  default: return cudaErrorInvalidMemcpyDirection;
  }
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}

/* Locked: validate, count and submit a copy. */
static cudaError_t copy(void *dst, const void *src, size_t n,
                        enum cudaMemcpyKind kind, cudaStream_t s) {
  int sdev, ddev = -1, xdev = -1;
  cudaError_t e = stream_dev(s, &sdev);
  if (e || !n)
    return e;
  if (!dst || !src)
    return cudaErrorInvalidValue;
  enum loc dl = locate(dst, n, &ddev), sl = locate(src, n, &xdev);
  if ((e = check_kind(kind, dl, sl)))
    return e;
  struct op o = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};
  if (dl == LOC_DEV && sl != LOC_DEV) {
    COUNT(h2d_copies);
    if (sdev != ddev)
      COUNT(h2d_cross_device);
    if (sl != LOC_PINNED)
      COUNT(h2d_from_pageable);
    if (sl != LOC_PINNED && !IS_SYNC(s)) { /* CUDA stages it at the call */
      if (!(o.staging = malloc(n)))
        return cudaErrorMemoryAllocation;
      memcpy(o.staging, src, n);
    }
  }
  return submit(s, o);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t s) {
  NEED_DEV();
  long call = __atomic_add_fetch(&memcpy_calls, 1, __ATOMIC_RELAXED);
  if (cfg.fail_here && call == cfg.fail_memcpy_at)
    return ret(cudaErrorLaunchFailure);
  LOCKED(copy(dst, src, n, kind, s));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind) {
  NEED_DEV();
  LOCKED(copy(dst, src, n, kind, NULL));
}

/* ---- NCCL (one rank per communicator) --------------------------------- */

/* Return nret(call), call made under the lock on a live communicator. */
#define WITH_COMM(c, call)                                                     \
  do {                                                                         \
    ncclResult_t r_ = ncclInvalidArgument;                                     \
    LOCK();                                                                    \
    if (find_comm(c))                                                          \
      r_ = (call);                                                             \
    UNLOCK();                                                                  \
    return nret(r_);                                                           \
  } while (0)

ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return nret(ncclInvalidArgument);
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error";
  case ncclSystemError: return "unhandled system error";
  case ncclInternalError: return "internal error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  case ncclRemoteError: return "remote process exited or network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm) { return (void)comm, ""; }

ncclResult_t ncclMemAlloc(void **p, size_t n) {
  if (!p || !n)
    return nret(ncclInvalidArgument);
  init();
  if (!cfg.ndev)
    return nret(ncclUnhandledCudaError);
  LOCK();
  cudaError_t e = dev_alloc(p, n, 1);
  UNLOCK();
  return nret(e ? ncclUnhandledCudaError : ncclSuccess);
}

ncclResult_t ncclMemFree(void *p) {
  if (!p)
    return ncclSuccess;
  init();
  LOCK();
  cudaError_t e = dev_free(p, 1); /* cudaMalloc memory is refused */
  UNLOCK();
  return nret(e ? ncclInvalidArgument : ncclSuccess);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id)
    return nret(ncclInvalidArgument);
  memset(id, 0, sizeof *id);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *pc, int nranks, ncclUniqueId id,
                              int rank) {
  (void)id;
  if (!pc)
    return nret(ncclInvalidArgument);
  if (nranks != 1)
    return nret(ncclInvalidUsage);
  if (rank != 0)
    return nret(ncclInvalidArgument);
  init();
  if (!cfg.ndev)
    return nret(ncclUnhandledCudaError);
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c)
    return nret(ncclSystemError);
  c->dev = tl_dev;
  LOCK();
  c->next = comms;
  comms = *pc = c;
  UNLOCK();
  return ncclSuccess;
}

/* Locked: NCCL drops whatever is still registered. */
static ncclResult_t comm_free(ncclComm_t c) {
  unlink_comm(c);
  while (c->regs) {
    struct reg *r = c->regs;
    c->regs = r->next;
    free(r);
  }
  free(c);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) { WITH_COMM(c, comm_free(c)); }
ncclResult_t ncclCommAbort(ncclComm_t c) { WITH_COMM(c, comm_free(c)); }

ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *dev) {
  if (!dev)
    return nret(ncclInvalidArgument);
  WITH_COMM(c, (*dev = c->dev, ncclSuccess));
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *res) {
  if (!res)
    return nret(ncclInvalidArgument);
  WITH_COMM(c, (*res = c->broken ? ncclUnhandledCudaError : ncclSuccess,
                ncclSuccess));
}

/* Locked: [p, p+n) is device memory of c's device. */
static int on_comm_dev(ncclComm_t c, const void *p, size_t n) {
  int dev = -1;
  return p && locate(p, n ? n : 1, &dev) == LOC_DEV && dev == c->dev;
}

static ncclResult_t do_register(ncclComm_t c, void *buf, size_t n,
                                void **handle) {
  if (!handle || !on_comm_dev(c, buf, n))
    return ncclInvalidArgument;
  struct reg *r = malloc(sizeof *r);
  if (!r)
    return ncclSystemError;
  *r = (struct reg){buf, n, c->regs};
  c->regs = *handle = r;
  COUNT(registrations);
  return ncclSuccess;
}

ncclResult_t ncclCommRegister(const ncclComm_t c, void *buf, size_t n,
                              void **handle) {
  WITH_COMM(c, do_register(c, buf, n, handle));
}

static ncclResult_t do_deregister(ncclComm_t c, void *handle) {
  if (c->broken)
    COUNT(deregister_on_broken); /* may hang on real NCCL */
  struct reg **pp = &c->regs;
  while (*pp && *pp != handle)
    pp = &(*pp)->next;
  if (!*pp)
    return ncclInvalidArgument;
  struct reg *r = *pp;
  *pp = r->next;
  free(r);
  COUNT(deregistrations);
  return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t c, void *handle) {
  WITH_COMM(c, do_deregister(c, handle));
}

static size_t type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2: return 1;
  case ncclFloat16:
  case ncclBfloat16: return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32: return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64: return 8;
  default: return 0;
  }
}

/* Locked: with one rank, an all-reduce is a device-to-device copy. */
static ncclResult_t allreduce(const void *send, void *recv, size_t bytes,
                              ncclComm_t c, cudaStream_t s) {
  int sdev;
  if (c->broken)
    return ncclUnhandledCudaError;
  if (!bytes)
    return ncclSuccess;
  if (!on_comm_dev(c, send, bytes) || !on_comm_dev(c, recv, bytes))
    return ncclInvalidArgument;
  if (stream_dev(s, &sdev))
    return ncclUnhandledCudaError;
  struct op o = {.kind = OP_COPY, .dst = recv, .src = send, .n = bytes};
  return submit(s, o) ? ncclSystemError : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
  size_t sz = type_size(type);
  /* only the built-in ops: the fake has no ncclRedOpCreate* */
  if (!sz || (int)op < 0 || (int)op >= (int)ncclNumOps || count > SIZE_MAX / sz)
    return nret(ncclInvalidArgument);
  WITH_COMM(c, allreduce(send, recv, count * sz, c, s));
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

/* ---- test hooks (fakecuda.h) ------------------------------------------ */

void fakecuda_get_counters(fakecuda_counters *out) {
  const long *in = (const long *)&cnt;
  long *o = (long *)out;
  for (size_t i = 0; i < sizeof cnt / sizeof(long); i++)
    o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

void fakecuda_break_comm(void *comm) {
  LOCK();
  struct ncclComm *c = find_comm(comm);
  if (c)
    c->broken = 1;
  UNLOCK();
}
