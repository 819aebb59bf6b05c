/* fakecuda.h - test hooks of the fake CUDA runtime + NCCL (fakecuda.c).
 *
 * libfakecuda.so is LD_PRELOADed by the GPU tests on machines without a GPU;
 * it exports the functions below besides the cudart/NCCL API.  Tests must
 * look them up at run time, never link them:
 *
 *   fakecuda_get_counters_fn get =
 *     (fakecuda_get_counters_fn)dlsym(RTLD_DEFAULT, "fakecuda_get_counters");
 *   if (get) { fakecuda_counters c; get(&c); ... }   // NULL: real CUDA
 *
 * so the same test builds and runs unchanged against the real libcudart.
 */
#ifndef FERRY_TESTS_FAKECUDA_H
#define FERRY_TESTS_FAKECUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* Process-wide totals since start-up (never reset). */
typedef struct fakecuda_counters {
  long host_allocs, host_frees;        /* cudaHostAlloc/MallocHost, FreeHost  */
  long device_allocs, device_frees;    /* cudaMalloc/Free + ncclMemAlloc/Free */
  long nccl_allocs, nccl_frees;        /* the ncclMemAlloc/ncclMemFree subset */
  long h2d_copies;                     /* host-to-device copies, any API/kind */
  long h2d_from_pageable;              /* ... source not pinned/registered    */
  long h2d_cross_device;               /* ... on a stream of another device   */
  long registrations, deregistrations; /* ncclCommRegister / Deregister     */
  long deregister_on_broken;           /* Deregister on a broken comm: a bug  */
  long live_device_allocs; /* device allocations not freed (+nccl) */
  long live_host_allocs;   /* pinned host allocations not freed   */
  long stream_creates, stream_destroys;
  long event_creates, event_destroys;
  long errors_returned; /* failing cuda/nccl calls (not NotReady) */
  long kernel_launches; /* cuLaunchKernel calls queued (ferry_densify) */
} fakecuda_counters;

void fakecuda_get_counters(fakecuda_counters *out);
/* Make ncclCommGetAsyncError(comm) (and collectives) report
 * ncclUnhandledCudaError from now on; comm is an ncclComm_t. */
void fakecuda_break_comm(void *comm);

typedef void (*fakecuda_get_counters_fn)(fakecuda_counters *out);
typedef void (*fakecuda_break_comm_fn)(void *comm);

#ifdef __cplusplus
}
#endif
#endif
