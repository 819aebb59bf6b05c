/*
 * cudalib.c - the CUDA runtime and NCCL, loaded at run time.
 *
 * Why: one libferry must serve the CPU-only and the GPU nodes of a cluster,
 * as Open MPI and UCX do with their CUDA support.  A libferry that linked
 * libcudart would not even load where the CUDA runtime is not installed,
 * and would tie every program to the runtime version of the build machine.
 * So configure only needs the headers (for the types), and the functions
 * the GPU stage calls are looked up here, once per process (pthread_once),
 * into a read-only table; when a library cannot be used, the reason
 * (dlerror's text) is kept for the messages of device=cuda and for
 * ferry__gpu_library_status.
 *
 * Where each library comes from, first that works:
 *   1. the path in FERRY_CUDART (FERRY_NCCL): that file only, or an error;
 *   2. the process already has it (dlsym(RTLD_DEFAULT) finds
 *      cudaRuntimeGetVersion, ncclGetVersion): the application linked or
 *      preloaded it (the fake runtime of tests/gpu), so ferry and the
 *      application share one runtime;
 *   3. the soname of the headers configure found (libcudart.so.13,
 *      libnccl.so.2; the dynamic loader's search path, libferry's RUNPATH),
 *      the same in configure's library directory, then the unversioned name.
 * Libraries are never closed: the CUDA runtime does not support unloading
 * while contexts live.
 */
#include "config.h"
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include "gpu/cudalib.h"
#include "gpu/gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FERRY_CUDART_SONAME
#define FERRY_CUDART_SONAME "libcudart.so"
#endif
#ifndef FERRY_CUDA_LIBDIR
#define FERRY_CUDA_LIBDIR ""
#endif
#ifndef FERRY_NCCL_SONAME
#define FERRY_NCCL_SONAME "libnccl.so.2"
#endif
#ifndef FERRY_NCCL_LIBDIR
#define FERRY_NCCL_LIBDIR ""
#endif

#define STR_(x) #x
#define STR(x) STR_(x) /* after macro expansion (the _ptsz variants) */

static ferry__cudalib lib;
static char status[2400];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Where a loaded symbol lives, for the status line. */
static void path_of(void *sym, const char *fallback, char *out, size_t len) {
  Dl_info di;
  if (sym && dladdr(sym, &di) && di.dli_fname && *di.dli_fname)
    snprintf(out, len, "%s", di.dli_fname);
  else
    snprintf(out, len, "%s", fallback);
}

/* Steps 1-3 of the header: 0 and *h (RTLD_DEFAULT is NULL on glibc), or
 * -1 with why filled. */
static int open_lib(const char *env, const char *probe, const char *soname,
                    const char *libdir, const char *plain, void **h, char *why,
                    size_t wlen) {
  const char *e = getenv(env);
  if (e && *e) {
    *h = dlopen(e, RTLD_NOW | RTLD_LOCAL);
    if (!*h) {
      const char *de = dlerror();
      snprintf(why, wlen, "%s: %s", env, de ? de : "dlopen failed");
      return -1;
    }
    return 0;
  }
  *h = RTLD_DEFAULT;
  if (dlsym(RTLD_DEFAULT, probe))
    return 0;
  char dirpath[600] = "";
  if (*libdir)
    snprintf(dirpath, sizeof dirpath, "%s/%s", libdir, soname);
  const char *cands[3] = {soname, dirpath, plain};
  char first[512] = "", tried[1024] = "";
  for (int i = 0; i < 3; i++) {
    if (!*cands[i] || (i == 2 && !strcmp(plain, soname)))
      continue;
    *h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
    if (*h)
      return 0;
    const char *de = dlerror();
    if (!*first)
      snprintf(first, sizeof first, "%s", de ? de : "dlopen failed");
    size_t n = strlen(tried);
    snprintf(tried + n, sizeof tried - n, "%s%s", n ? ", " : "", cands[i]);
  }
  snprintf(why, wlen, "tried %s (set %s=/path/to/library): %s", tried, env,
           first);
  return -1;
}

/* Resolve into the table; the first missing required function, or NULL. */
static const char *resolve_cudart(void *h) {
  const char *missing = NULL;
#define LOAD(f, required)                                                      \
  {                                                                            \
    void *p_ = dlsym(h, STR(f));                                               \
    memcpy(&lib.f, &p_, sizeof p_);                                            \
    if (!p_ && (required) && !missing)                                         \
      missing = STR(f);                                                        \
  }
  FERRY__CUDART_FNS(LOAD)
  return missing;
}

#if defined(HAVE_NCCL)
static const char *resolve_nccl(void *h) {
  const char *missing = NULL;
  FERRY__NCCL_FNS(LOAD)
  return missing;
}
#endif
#undef LOAD

static void load_cudart(void) {
  void *h = NULL;
  if (open_lib("FERRY_CUDART", "cudaRuntimeGetVersion", FERRY_CUDART_SONAME,
               FERRY_CUDA_LIBDIR, "libcudart.so", &h, lib.cuda_why,
               sizeof lib.cuda_why))
    return;
  void *probe = dlsym(h, "cudaRuntimeGetVersion");
  path_of(probe, FERRY_CUDART_SONAME, lib.cuda_path, sizeof lib.cuda_path);
  const char *missing = resolve_cudart(h);
  if (missing)
    snprintf(lib.cuda_why, sizeof lib.cuda_why,
             "%s has no %s (a CUDA runtime too old for this libferry?)",
             lib.cuda_path, missing);
  else
    lib.cuda = 1;
}

static void load_nccl(void) {
#if defined(HAVE_NCCL)
  if (!lib.cuda) {
    snprintf(lib.nccl_why, sizeof lib.nccl_why, "needs the CUDA runtime");
    return;
  }
  void *h = NULL;
  if (open_lib("FERRY_NCCL", "ncclGetVersion", FERRY_NCCL_SONAME,
               FERRY_NCCL_LIBDIR, "libnccl.so", &h, lib.nccl_why,
               sizeof lib.nccl_why))
    return;
  void *probe = dlsym(h, "ncclGetVersion");
  path_of(probe, FERRY_NCCL_SONAME, lib.nccl_path, sizeof lib.nccl_path);
  const char *missing = resolve_nccl(h);
  if (missing)
    snprintf(lib.nccl_why, sizeof lib.nccl_why,
             "%s has no %s (NCCL 2.19 or newer is needed)", lib.nccl_path,
             missing);
  else
    lib.nccl = 1;
#else
  snprintf(lib.nccl_why, sizeof lib.nccl_why,
           "this libferry was built without NCCL (configure --with-nccl)");
#endif
}

static void load_once(void) {
  load_cudart();
  load_nccl();
  char c[1100], n[1100];
  if (lib.cuda)
    snprintf(c, sizeof c, "CUDA runtime %s", lib.cuda_path);
  else
    snprintf(c, sizeof c, "CUDA runtime not loaded (%s)", lib.cuda_why);
  if (lib.nccl)
    snprintf(n, sizeof n, "NCCL %s", lib.nccl_path);
  else
    snprintf(n, sizeof n, "NCCL not loaded (%s)", lib.nccl_why);
  snprintf(status, sizeof status, "%s; %s", c, n);
}

const ferry__cudalib *ferry__cudalib_load(void) {
  pthread_once(&once, load_once);
  return &lib;
}

const char *ferry__gpu_library_status(void) {
  ferry__cudalib_load();
  return status;
}
