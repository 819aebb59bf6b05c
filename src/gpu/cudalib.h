/*
 * gpu/cudalib.h - the CUDA runtime and NCCL, reached through a table of
 * function pointers that gpu/cudalib.c fills at run time (dlopen), so that
 * libferry has no link-time dependency on them.  Only gpu/cuda.c includes
 * this header; it needs the CUDA (and NCCL) headers for the types.
 */
#ifndef FERRY_GPU_CUDALIB_H
#define FERRY_GPU_CUDALIB_H

#include <cuda_runtime_api.h>
#if defined(HAVE_NCCL)
#include <nccl.h>
#endif

/* X(function, required): every runtime function the library calls.  A
 * missing required one makes the runtime unusable; an optional one is
 * NULL (cudaGetDriverEntryPointByVersion is new in CUDA 12.5). */
#define FERRY__CUDART_FNS(X)                                                   \
  X(cudaRuntimeGetVersion, 1)                                                  \
  X(cudaDriverGetVersion, 1)                                                   \
  X(cudaGetDeviceCount, 1)                                                     \
  X(cudaGetDevice, 1)                                                          \
  X(cudaSetDevice, 1)                                                          \
  X(cudaGetErrorString, 1)                                                     \
  X(cudaGetErrorName, 1)                                                       \
  X(cudaGetLastError, 1)                                                       \
  X(cudaStreamCreateWithFlags, 1)                                              \
  X(cudaStreamDestroy, 1)                                                      \
  X(cudaStreamSynchronize, 1)                                                  \
  X(cudaStreamWaitEvent, 1)                                                    \
  X(cudaEventCreateWithFlags, 1)                                               \
  X(cudaEventDestroy, 1)                                                       \
  X(cudaEventRecord, 1)                                                        \
  X(cudaEventSynchronize, 1)                                                   \
  X(cudaEventElapsedTime, 1)                                                   \
  X(cudaHostAlloc, 1)                                                          \
  X(cudaFreeHost, 1)                                                           \
  X(cudaMalloc, 1)                                                             \
  X(cudaFree, 1)                                                               \
  X(cudaMemcpyAsync, 1)                                                        \
  X(cudaGetDriverEntryPointByVersion, 0)

#if defined(HAVE_NCCL)
#define FERRY__NCCL_FNS(X)                                                     \
  X(ncclGetVersion, 1)                                                         \
  X(ncclGetErrorString, 1)                                                     \
  X(ncclMemAlloc, 1)                                                           \
  X(ncclMemFree, 1)                                                            \
  X(ncclCommCuDevice, 1)                                                       \
  X(ncclCommGetAsyncError, 1)                                                  \
  X(ncclCommRegister, 1)                                                       \
  X(ncclCommDeregister, 1)
#else
#define FERRY__NCCL_FNS(X)
#endif

/** The loaded libraries.  Filled once per process (ferry__cudalib_load);
 *  read-only afterwards, so any thread may call through it. */
typedef struct ferry__cudalib {
  int cuda;            /* 1: every required runtime function resolved */
  int nccl;            /* 1: the same for NCCL (needs cuda)           */
  char cuda_path[512]; /* where the runtime came from                 */
  char nccl_path[512];
  char cuda_why[768]; /* why not, when cuda == 0 (dlerror's text)    */
  char nccl_why[768];
#define FERRY__CUDALIB_MEMBER(f, required) __typeof__(f) *f;
  FERRY__CUDART_FNS(FERRY__CUDALIB_MEMBER)
  FERRY__NCCL_FNS(FERRY__CUDALIB_MEMBER)
#undef FERRY__CUDALIB_MEMBER
} ferry__cudalib;

/** The table, loaded on the first call (pthread_once); never NULL.  Look
 *  at ->cuda and ->nccl before calling through it. */
const ferry__cudalib *ferry__cudalib_load(void);

#endif /* FERRY_GPU_CUDALIB_H */
