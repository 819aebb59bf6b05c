/*
 * eacces.c - an LD_PRELOAD shim for tests/hdf5/hdf5.sh: on the one MPI rank
 * named by FERRY_TEST_EACCES_RANK, opening a path that ends with
 * FERRY_TEST_EACCES_PATH fails with EACCES, as if that rank's node lacked
 * the permission; every other open goes through.  Root ignores file
 * permissions, and CI runs as root, so a chmod cannot make one rank fail
 * while the others succeed.  The rank comes from the launcher's environment
 * (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID).
 *
 * Build: cc -shared -fPIC -o eacces.so eacces.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int denied(const char *path) {
  const char *want = getenv("FERRY_TEST_EACCES_PATH");
  const char *rank = getenv("FERRY_TEST_EACCES_RANK");
  const char *mine = getenv("OMPI_COMM_WORLD_RANK");
  if (!mine)
    mine = getenv("PMI_RANK");
  if (!mine)
    mine = getenv("PMIX_RANK");
  if (!mine)
    mine = getenv("SLURM_PROCID");
  if (!want || !rank || !mine || !path || strcmp(rank, mine) != 0)
    return 0;
  size_t n = strlen(path), w = strlen(want);
  return n >= w && strcmp(path + n - w, want) == 0;
}

#define SHIM(name)                                                             \
  int name(const char *path, int flags, ...) {                                 \
    static int (*real)(const char *, int, ...);                                \
    mode_t mode = 0;                                                           \
    if (flags & (O_CREAT | O_TMPFILE)) {                                       \
      va_list ap;                                                              \
      va_start(ap, flags);                                                     \
      mode = (mode_t)va_arg(ap, int);                                          \
      va_end(ap);                                                              \
    }                                                                          \
    if (denied(path)) {                                                        \
      errno = EACCES;                                                          \
      return -1;                                                               \
    }                                                                          \
    if (!real)                                                                 \
      real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);         \
    return real(path, flags, mode);                                            \
  }
SHIM(open)
SHIM(open64)
