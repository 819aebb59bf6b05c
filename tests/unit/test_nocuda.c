/*
 * test_nocuda.c - the GPU stage of a library built without CUDA:
 * src/gpu/nocuda.c, linked into this program in any build (its objects
 * come before libferry_core's, so they win over cuda.c's).
 * device=cuda is FERRY_ENOTSUP saying how to get CUDA; device=auto and
 * device=cpu deliver to host memory and say why; ferry_batch_wait refuses;
 * no versions and a library status that says why.
 */
#include "config.h"
#include "gpu/gpu.h"

#include "../ferry_test.h"

#include <string.h>

#include <stdio.h>

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
  ferry__gpu *g = (ferry__gpu *)1;
  char how[256] = "";
  ferry__err err = {0};
  int rc = open_with("cuda", &g, how, sizeof how, &err);
  CHECK(rc == FERRY_ENOTSUP, "device=cuda: %d, want FERRY_ENOTSUP", rc);
  CHECK(g == NULL, "device=cuda returned a GPU state");
  char text[FERRY__MSG_MAX];
  ferry__err_text(&err, text, sizeof text);
  CHECK(strncmp(text, "rank 3: ", 8) == 0 && strstr(text, "without CUDA") &&
            strstr(text, "--with-cuda"),
        "message: %s", text);
  rc = open_with("auto", &g, how, sizeof how, &err);
  CHECK(rc == 0 && g == NULL && strstr(how, "host memory") &&
            strstr(how, "without CUDA"),
        "device=auto: %d, how '%s'", rc, how);
  rc = open_with("cpu", &g, how, sizeof how, &err);
  CHECK(rc == 0 && g == NULL && strstr(how, "device=cpu"),
        "device=cpu: %d, how '%s'", rc, how);
  CHECK(ferry__gpu_visible() == -1, "visible %d", ferry__gpu_visible());
  ferry_batch b = {0};
  CHECK(ferry_batch_wait(&b, NULL) == FERRY_EINVAL, "batch_wait accepted");
  int vr = 0, vd = 0, vn = 0;
  ferry__gpu_versions(&vr, &vd, &vn);
  CHECK(vr == -1 && vd == -1 && vn == -1, "versions %d %d %d", vr, vd, vn);
  const char *st = ferry__gpu_library_status();
  CHECK(st && strstr(st, "CUDA runtime not loaded") &&
            strstr(st, "without CUDA"),
        "library status: %s", st ? st : "(null)");
  ferry_device_info di = {0};
  ferry__gpu_info(NULL, &di);
  CHECK(di.cuda == 0 && di.ndevices == 0, "info");
  return ft_summary("test_nocuda");
}
