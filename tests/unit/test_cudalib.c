/*
 * test_cudalib.c - the GPU stage of a CUDA build when the CUDA runtime
 * cannot be loaded (src/gpu/cudalib.c): FERRY_CUDART and FERRY_NCCL name
 * files that do not exist, so the table stays empty whatever this machine
 * has.  No versions (-1), a status naming the path and dlerror's reason, no
 * visible device; device=cuda is FERRY_ENODEV saying which library could
 * not be loaded and why, device=auto is host memory saying why, device=cpu
 * never looks.  One scenario per process: the table is loaded once.
 */
#include "config.h"
#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

#define BAD_CUDART "/nonexistent/ferry-test/libcudart.so.99"
#define BAD_NCCL "/nonexistent/ferry-test/libnccl.so.99"

static int open_with(const char *device, ferry__gpu **g, char *how, size_t len,
                     ferry__err *err) {
  ferry_options *o = NULL;
  if (ferry_options_create(&o) || ferry_options_set(o, "device", device))
    return -100;
  int rc = ferry__gpu_open(o, 3, 1, g, how, len, err);
  ferry_options_free(o);
  return rc;
}

int main(void) {
  setenv("FERRY_CUDART", BAD_CUDART, 1);
  setenv("FERRY_NCCL", BAD_NCCL, 1);
  ferry__gpu *g = (ferry__gpu *)1;
  char how[256] = "";
  ferry__err err = {0};
  /* device=cpu first: it must not need the runtime at all. */
  int rc = open_with("cpu", &g, how, sizeof how, &err);
  CHECK(rc == 0 && g == NULL && strstr(how, "device=cpu"),
        "device=cpu: %d, how '%s'", rc, how);

  int vr = 0, vd = 0, vn = 0;
  ferry__gpu_versions(&vr, &vd, &vn);
  CHECK(vr == -1 && vd == -1 && vn == -1, "versions %d %d %d", vr, vd, vn);
  const char *st = ferry__gpu_library_status();
  CHECK(st && strstr(st, "CUDA runtime not loaded (FERRY_CUDART: ") &&
            strstr(st, BAD_CUDART) && strstr(st, "No such file"),
        "status: %s", st ? st : "(null)");
  CHECK(st && strstr(st, "NCCL not loaded ("), "status: %s",
        st ? st : "(null)");
  CHECK(ferry__gpu_visible() == 0, "visible %d", ferry__gpu_visible());

  rc = open_with("cuda", &g, how, sizeof how, &err);
  CHECK(rc == FERRY_ENODEV && g == NULL, "device=cuda: %d", rc);
  char text[FERRY__MSG_MAX];
  ferry__err_text(&err, text, sizeof text);
  CHECK(strstr(text, "rank 3: device=cuda but the CUDA runtime could not "
                     "be loaded: FERRY_CUDART: ") &&
            strstr(text, BAD_CUDART) && strstr(text, "device=auto"),
        "message: %s", text);
  g = (ferry__gpu *)1;
  rc = open_with("auto", &g, how, sizeof how, &err);
  CHECK(rc == 0 && g == NULL &&
            strstr(how, "host memory: device=auto found no usable GPU (no "
                        "CUDA runtime: FERRY_CUDART: "),
        "device=auto: %d, how '%s'", rc, how);
  ferry_batch b = {0};
  CHECK(ferry_batch_wait(&b, NULL) == FERRY_EINVAL, "batch_wait accepted");
  return ft_summary("test_cudalib");
}
