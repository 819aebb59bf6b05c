/*
 * gpu_step.h - the emulated training step of `ferry bench --compute-ms` when
 * batches are delivered to the GPU (device=cuda): a kernel that keeps one
 * thread busy for a given time on the consumer's stream, so the step is
 * ordered after the batch's copy exactly as a real training kernel would be.
 *
 * The kernel lives in gpu_step.cu and needs nvcc; configure defines
 * HAVE_NVCC (config.h) when it found one.  Without it this header declares
 * nothing and `ferry bench` refuses --compute-ms with device batches.
 */
#ifndef FERRY_TOOL_GPU_STEP_H
#define FERRY_TOOL_GPU_STEP_H

#if defined(HAVE_NVCC) || defined(__CUDACC__)
#define FERRY_TOOL_GPU_STEP 1

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Launch, on STREAM (a cudaStream_t; NULL is the legacy default stream) of
 * the current device, one kernel of one thread that spins on the GPU's
 * global timer (%globaltimer, nanoseconds) until MS milliseconds have passed
 * since it started.  Returns the cudaError_t of the launch (cudaGetLastError
 * after it): 0 is cudaSuccess.  Does not wait for the kernel.
 */
int ferry_tool_gpu_spin(double ms, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* HAVE_NVCC || __CUDACC__ */
#endif /* FERRY_TOOL_GPU_STEP_H */
