/*
 * failmalloc.c - an LD_PRELOAD shim for tests/loader/oom.sh: makes ferry's own
 * allocations fail as if memory had run out, so that its out-of-memory
 * paths run without exhausting the machine.
 *
 * Only allocations made directly by code in a file whose name contains one
 * of FAILMALLOC_WHO's comma-separated substrings (default "libferry") can
 * fail -- the caller's address is looked up with dladdr -- so MPI, HDF5,
 * the codecs and libc keep working: the test is about ferry's handling.
 *
 *   FAILMALLOC_MIN=B   only allocations of at least B bytes count (default 0)
 *   FAILMALLOC_NTH=N   the N-th counted allocation fails (default 1); with
 *                      FAILMALLOC_ALL=1 every counted one from the N-th on
 *   FAILMALLOC_LOG=1   say on stderr which size failed, and at exit how
 *                      many allocations were counted
 *   FAILMALLOC_BT=1    ... and the call stack of the failed allocation
 *   FAILMALLOC_RANK=R  fail only in the process whose OMPI_COMM_WORLD_RANK
 *                      (or PMI_RANK) is R: one rank runs out of memory
 *
 * malloc, calloc, realloc, aligned_alloc, posix_memalign and anonymous mmap
 * (ferry__big_alloc) are covered; the real ones are glibc's __libc_*
 * entry points and the mmap system call, so no dlsym is needed at start-up.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static int inited;
static size_t min_bytes;
static long nth = 1;
static int fail_all, log_fail, log_bt;
static char who[256] = "libferry";
static long counted;
static int not_me; /* FAILMALLOC_RANK names another process */

static void report(void) {
  char line[96];
  int len = snprintf(line, sizeof line, "failmalloc: %ld allocations counted\n",
                     counted);
  if (len > 0 && write(2, line, (size_t)len) < 0)
    return;
}

static void init(void) {
  const char *s;
  if ((s = getenv("FAILMALLOC_MIN")) != NULL)
    min_bytes = (size_t)strtoull(s, NULL, 10);
  if ((s = getenv("FAILMALLOC_NTH")) != NULL)
    nth = strtol(s, NULL, 10);
  if ((s = getenv("FAILMALLOC_ALL")) != NULL)
    fail_all = *s == '1';
  if ((s = getenv("FAILMALLOC_LOG")) != NULL)
    log_fail = *s == '1';
  if ((s = getenv("FAILMALLOC_BT")) != NULL)
    log_bt = *s == '1';
  if ((s = getenv("FAILMALLOC_WHO")) != NULL && strlen(s) < sizeof who)
    strcpy(who, s);
  if ((s = getenv("FAILMALLOC_RANK")) != NULL) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
      r = getenv("PMI_RANK");
    not_me = !r || strcmp(r, s) != 0;
  }
  if (log_fail)
    atexit(report);
  inited = 1;
}

/* Is the code at address ret in one of the files named by FAILMALLOC_WHO? */
static int from_watched(const void *ret) {
  Dl_info info;
  if (!dladdr(ret, &info) || !info.dli_fname)
    return 0;
  const char *p = who;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n && memmem(info.dli_fname, strlen(info.dli_fname), p, n))
      return 1;
    p += n + (e != NULL);
  }
  return 0;
}

/* Should this allocation of n bytes, called from ret, fail? */
static int should_fail(size_t n, const void *ret) {
  if (!inited)
    init();
  if (not_me || n < min_bytes || !from_watched(ret))
    return 0;
  long k = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
  if (k < nth || (k > nth && !fail_all))
    return 0;
  if (log_fail) {
    char line[96];
    int len = snprintf(line, sizeof line,
                       "failmalloc: allocation %ld of %zu bytes fails\n", k, n);
    if (len > 0 && write(2, line, (size_t)len) < 0)
      return 1;
  }
  if (log_bt) {
    void *frames[24];
    backtrace_symbols_fd(frames, backtrace(frames, 24), 2);
  }
  return 1;
}

void *malloc(size_t n) {
  if (should_fail(n, __builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(n);
}

void *calloc(size_t k, size_t n) {
  if (should_fail(k * n, __builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n) {
  if (should_fail(n, __builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n) {
  if (should_fail(n, __builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  if (should_fail(n, __builtin_return_address(0)))
    return ENOMEM;
  void *p = __libc_memalign(align, n);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if ((flags & MAP_ANONYMOUS) &&
      should_fail(len, __builtin_return_address(0))) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return MAP_FAILED;
  }
  return (void *)r;
}
