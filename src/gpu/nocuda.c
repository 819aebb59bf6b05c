/*
 * nocuda.c - the GPU stage of a libferry built without CUDA headers
 * (configure found none, or --without-cuda): device=cuda is FERRY_ENOTSUP
 * saying how to get CUDA, device=auto and device=cpu deliver to host
 * memory, and nothing reaches a device.
 *
 * Why a file of its own: a build with CUDA headers loads the runtime at
 * run time (cuda.c, cudalib.c) and decides there whether a GPU is usable;
 * this file is what Makefile.am compiles instead when there are no headers
 * to build that stage with, and tests/unit/test_nocuda links it in any
 * build.
 */
#include "config.h"
#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
int ferry__gpu_visible(void) { return -1; }

void ferry__gpu_versions(int *runtime, int *driver, int *nccl) {
  *runtime = *driver = *nccl = -1;
}

const char *ferry__gpu_library_status(void) {
  return "CUDA runtime not loaded (this libferry was built without CUDA: "
         "configure --with-cuda=PREFIX); NCCL not loaded (built without "
         "CUDA)";
}

int ferry__gpu_open(const ferry_options *o, int rank, int local_rank,
                    ferry__gpu **out, char *how, size_t howlen,
                    ferry__err *err) {
  (void)local_rank;
  *out = NULL;
  if (o->device == FERRY__DEV_CUDA)
    return ferry__seterr_on(err, rank, FERRY_ENOTSUP,
                            "device=cuda: this libferry was built "
                            "without CUDA (configure --with-cuda=PREFIX); use "
                            "device=auto or device=cpu");
  snprintf(how, howlen, "host memory (%s)",
           o->device == FERRY__DEV_CPU ? "device=cpu"
                                       : "this libferry was built without "
                                         "CUDA");
  return 0;
}
void ferry__gpu_close(ferry__gpu *g) { (void)g; }
void ferry__gpu_info(const ferry__gpu *g, ferry_device_info *out) {
  (void)g;
  out->cuda = 0;
  out->ndevices = 0;
  out->nccl_attached = 0;
}
int ferry__gpu_sync(ferry__gpu *g, ferry__err *err) {
  (void)g;
  (void)err;
  return 0;
}
int ferry__gpu_host_alloc(int rank, size_t bytes, void **out, ferry__err *err) {
  (void)rank;
  *out = malloc(bytes ? bytes : 1);
  return *out ? 0
              : ferry__oom(err, -1, bytes ? bytes : 1, "a host batch buffer");
}
void ferry__gpu_host_free(void *p) { free(p); }
int ferry__gpu_nccl_comms(const ferry__gpu *g, void **out) {
  (void)g;
  (void)out;
  return 0;
}
void ferry__gpu_set_ring(ferry__gpu *g, ferry__dslot **ring, int64_t n) {
  (void)g;
  (void)ring;
  (void)n;
}
int ferry__dslot_init(ferry__gpu *g, ferry__dslot *d, const ferry__manifest *m,
                      const ferry__manifest *out, const ferry__densify_var *dz,
                      int64_t batch_size, const int64_t *ragged_cap, int rank,
                      ferry__err *err) {
  (void)g, (void)d, (void)m, (void)out, (void)dz, (void)batch_size,
      (void)ragged_cap;
  return ferry__seterr_on(err, rank, FERRY_EINTERNAL, "no CUDA");
}
void ferry__dslot_fini(ferry__dslot *d) { (void)d; }
int ferry__gpu_densify_ready(ferry__gpu *g, char *why, size_t whylen) {
  (void)g;
  snprintf(why, whylen, "this libferry was built without CUDA");
  return 0;
}
int ferry__dslot_copy(ferry__dslot *d, const ferry_batch *host, int host_data,
                      int rank, ferry__err *err) {
  (void)d, (void)host, (void)host_data;
  return ferry__seterr_on(err, rank, FERRY_EINTERNAL, "no CUDA");
}
int ferry__dslot_sync(ferry__dslot *d, double *seconds, int rank,
                      ferry__err *err) {
  (void)d, (void)seconds, (void)rank, (void)err;
  return 0;
}
int ferry__dslot_release(ferry__dslot *d, int rank, ferry__err *err) {
  (void)d, (void)rank, (void)err;
  return 0;
}
int ferry_batch_wait(const ferry_batch *batch, void *stream) {
  (void)batch, (void)stream;
  return ferry__seterr(NULL, FERRY_EINVAL,
                       "ferry_batch_wait: not a device batch (this libferry "
                       "was built without CUDA)");
}
int ferry_shard_wait(const ferry_batch *batch, int shard, void *stream) {
  (void)shard;
  return ferry_batch_wait(batch, stream);
}
int ferry__gpu_nccl_attach(ferry__gpu *g, void *comm, ferry__err *err) {
  (void)g, (void)comm;
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "ferry_attach_nccl: this libferry was built without "
                       "CUDA and NCCL");
}
int ferry__gpu_nccl_detach(ferry__gpu *g, ferry__err *err) {
  (void)g, (void)err;
  return 0;
}
