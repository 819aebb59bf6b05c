/*
 * mapped.c - io=mmap: rows copied from the page cache into the batch.
 *
 * Why: with reads, every byte is copied twice (page cache -> read buffer by
 * the kernel, read buffer -> batch by the assembly), and two copies capped
 * ferry near 55% of `dd` on the .npy benchmark (issue 12).  A backend that
 * can map its rows (io_map) lets the assembly copy them from the mapping:
 * one copy.  Each file's rows are mapped once (without MAP_POPULATE: each
 * rank touches only its share), and the I/O thread fills the page tables of
 * an extent's rows before the workers copy them (ferry__map_populate,
 * MADV_POPULATE_READ), so the workers take no page faults; mapping the
 * whole 2 GiB file with MAP_POPULATE on every rank held the first batch up
 * for 0.15 s.
 *
 * A mapped file that shrinks under a reader delivers SIGBUS on the next
 * touch of a page past its new end.  The library must never let that kill
 * the application: copies from mappings run under a guard (sigsetjmp, a
 * thread-local pointer) and a SIGBUS handler, installed once, jumps back
 * into the guarded copy, which returns FERRY_EIO naming the file.  A fault
 * outside a guarded copy is passed on to the handler that was installed
 * before (or the default action), so the application's own handling keeps
 * working; an application that installs its own SIGBUS handler after
 * ferry's first mapped copy takes the signal itself (docs/options.md).
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* volatile: the stores around the copy must happen where they are written
 * (the compiler may otherwise drop guard = &here, overwritten after a
 * memcpy that it knows does not read it). */
static _Thread_local sigjmp_buf *volatile guard;
static struct sigaction previous;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static int install_errno;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  if (guard)
    siglongjmp(*guard, 1);
  /* not a guarded copy: what was there before ferry */
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, si, uc);
      return;
    }
  } else if (previous.sa_handler == SIG_IGN) {
    return;
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler) {
    previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, &previous) != 0)
    install_errno = errno ? errno : EINVAL;
}

int ferry__map_range(int fd, const char *path, int64_t off, size_t n,
                     ferry__mapping *out, ferry__err *err) {
  static const unsigned char none[1];
  memset(out, 0, sizeof *out);
  out->path = path;
  out->data = none;
  if (n == 0)
    return 0;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    page = 4096;
  int64_t start = off - off % page;
  size_t len = n + (size_t)(off - start);
  /* Not MAP_POPULATE: a whole variable is mapped once and each rank
   * touches its own share; ferry__map_populate fills the page tables of an
   * extent's rows on the I/O thread when they are about to be copied. */
  void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)start);
  if (p == MAP_FAILED)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "mmap failed: file %s, offset %lld, %zu bytes: %s",
                         path, (long long)off, n, strerror(errno));
  out->base = p;
  out->len = len;
  out->data = (const unsigned char *)p + (off - start);
  return 0;
}

int ferry__map_populate(const ferry__mapping *m, const void *data, size_t n,
                        ferry__err *err) {
  if (!m || !m->path || n == 0)
    return 0;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    page = 4096;
  uintptr_t a = (uintptr_t)data, start = a - a % (uintptr_t)page;
  size_t len = n + (size_t)(a - start);
#ifdef MADV_POPULATE_READ
  if (madvise((void *)start, len, MADV_POPULATE_READ) == 0)
    return 0;
  if (errno == EFAULT || errno == EIO) /* SIGBUS territory: the file shrank */
    return ferry__seterr(err, FERRY_EIO,
                         "file %s changed while it was read: it is shorter "
                         "than when it was mapped (io=mmap: %s)",
                         m->path, strerror(errno));
    /* EINVAL: a kernel before 5.14; the copies take the page faults */
#else
  (void)err;
#endif
  (void)madvise((void *)start, len, MADV_WILLNEED);
  return 0;
}

void ferry__unmap(ferry__mapping *m) {
  if (m && m->base)
    munmap(m->base, m->len);
  if (m) {
    m->base = NULL;
    m->len = 0;
  }
}

int ferry__mapped_copy(void *dst, const void *src, size_t n, const char *path,
                       ferry__err *err) {
  pthread_once(&installed, install);
  if (install_errno)
    return ferry__seterr(err, FERRY_EIO,
                         "io=mmap: cannot install the SIGBUS guard (%s): "
                         "file %s is not read",
                         strerror(install_errno), path ? path : "?");
  /* The signal mask is not saved (savemask 0): saving it costs a system
   * call per copy, and copies are often one row.  The handler left SIGBUS
   * blocked when it jumped back, so the rare error path unblocks it. */
  sigjmp_buf here;
  if (sigsetjmp(here, 0)) {
    guard = NULL;
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
    return ferry__seterr(err, FERRY_EIO,
                         "file %s changed while it was read: it is shorter "
                         "than when it was mapped (SIGBUS while copying its "
                         "rows with io=mmap)",
                         path ? path : "?");
  }
  guard = &here;
  __asm__ volatile("" ::: "memory");
  memcpy(dst, src, n);
  __asm__ volatile("" ::: "memory");
  guard = NULL;
  return 0;
}
