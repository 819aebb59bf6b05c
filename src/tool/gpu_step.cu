/*
 * gpu_step.cu - the GPU step kernel of `ferry bench --compute-ms` with device
 * batches (see gpu_step.h).  One thread reads the GPU's global nanosecond
 * timer until the step's duration has passed: the step takes the same time
 * whatever the GPU, uses no memory bandwidth (the batch copies of the loader
 * run beside it at full speed) and occupies the stream as a training kernel
 * would, so the next step cannot start before this one ends.
 */
#include "gpu_step.h"

#include <cuda_runtime.h>

static __device__ __forceinline__ unsigned long long globaltimer_ns(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

static __global__ void ferry_tool_spin_kernel(unsigned long long ns) {
  const unsigned long long t0 = globaltimer_ns();
  while (globaltimer_ns() - t0 < ns)
    ;
}

extern "C" int ferry_tool_gpu_spin(double ms, void *stream) {
  if (!(ms > 0))
    return (int)cudaSuccess;
  double ns = ms * 1e6;
  if (ns > 1.8e19) /* beyond unsigned long long: spin "forever" */
    ns = 1.8e19;
  (void)cudaGetLastError(); /* report this launch's error, not an old one */
  ferry_tool_spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(
      (unsigned long long)ns);
  return (int)cudaGetLastError();
}
