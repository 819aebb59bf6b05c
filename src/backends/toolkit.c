/*
 * toolkit.c - what every backend shares, so that a format is one file: the
 * MPI-IO read helper (one call, its count checked, the ROMIO zero-byte
 * rule), a whole-buffer pread, an open that refuses what is not a regular
 * file instead of blocking on a FIFO, and the cache of open handles whose
 * "same sequence on every rank" rule keeps collective opens matched.
 */
#include "config.h"
#include "backends/toolkit.h"
#include "backends/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int ferry__mpi_read(MPI_File fh, int coll, MPI_Offset off, void *buf, int n,
                    const char *where, ferry__err *err) {
  MPI_Status st;
  int got = 0;
  const char *call = coll ? "MPI_File_read_at_all" : "MPI_File_read_at";
  int mrc = coll ? MPI_File_read_at_all(fh, off, buf, n, MPI_BYTE, &st)
                 : MPI_File_read_at(fh, off, buf, n, MPI_BYTE, &st);
  if (mrc == MPI_SUCCESS && n > 0) {
    call = "MPI_Get_count";
    mrc = MPI_Get_count(&st, MPI_BYTE, &got);
  }
  if (mrc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(mrc, s, &len) != MPI_SUCCESS)
      snprintf(s, sizeof s, "MPI error %d", mrc);
    return ferry__seterr(err, FERRY_EIO,
                         "%s failed: %s, offset %lld, %d bytes: %s", call,
                         where, (long long)off, n, s);
  }
  if (n > 0 && got != n)
    return ferry__seterr(err, FERRY_EIO,
                         "short read: %s, offset %lld: got %d of %d bytes",
                         where, (long long)off, got, n);
  return 0;
}

int ferry__pread_full(int fd, void *buf, size_t n, int64_t off, size_t *got) {
  size_t done = 0;
  while (done < n) {
    ssize_t r =
        pread(fd, (char *)buf + done, n - done, (off_t)off + (off_t)done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    done += (size_t)r;
  }
  *got = done;
  return 0;
}

/* preadv of iov[0..n) at off, short reads continued: 0, or -1 with errno
 * set (0 for the end of the file). */
static int preadv_full(int fd, struct iovec *iov, int n, int64_t off) {
  while (n > 0) {
    ssize_t r = preadv(fd, iov, n, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (r == 0)
        errno = 0;
      return -1;
    }
    off += r;
    while (n > 0 && (size_t)r >= iov->iov_len) {
      r -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + r;
      iov->iov_len -= (size_t)r;
    }
  }
  return 0;
}

int64_t ferry__entry_bytes(const ferry__manifest *m, const ferry__part *pt,
                           int var, int64_t i) {
  const int64_t *ro = pt->roff ? pt->roff[var] : NULL;
  int64_t rows = m->vars[var].ragged ? (ro ? ro[i + 1] - ro[i] : -1) : 1;
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  return rows < 0 || (rb && rows > INT64_MAX / rb) ? -1 : rows * rb;
}

int ferry__gather_entries(int fd, const ferry__manifest *m, int64_t part,
                          int var, const int64_t *pos, int64_t row,
                          int64_t nrows, unsigned char *buf,
                          unsigned char *scratch, int rank, ferry__err *err) {
  const ferry__part *pt = &m->parts[part];
  struct iovec iov[2 * FERRY__GATHER_RUN_MAX];
  unsigned char *d = buf;
  for (int64_t a = row; a < row + nrows;) {
    int n = 0;
    int64_t z = a, at = pos[a], want = 0, prev_end = pos[a];
    for (; z < row + nrows && z - a < FERRY__GATHER_RUN_MAX; z++) {
      int64_t len = ferry__entry_bytes(m, pt, var, z); /* checked */
      int64_t gap = pos[z] - prev_end;
      if (gap > FERRY__GATHER_GAP_MAX)
        break;
      if (gap > 0)
        iov[n++] = (struct iovec){scratch, (size_t)gap};
      if (len > 0)
        iov[n++] = (struct iovec){d, (size_t)len};
      d += len;
      want += gap + len;
      prev_end = pos[z] + len;
    }
    if (n > 0 && preadv_full(fd, iov, n, at) != 0)
      return errno ? ferry__seterr(err, ferry__errno_code(errno),
                                   "pread failed: file %s, variable %s, rank "
                                   "%d, offset %lld, %lld bytes: %s",
                                   pt->paths[var], m->vars[var].name, rank,
                                   (long long)at, (long long)want,
                                   strerror(errno))
                   : ferry__seterr(err, FERRY_EIO,
                                   "short read: file %s, variable %s, rank %d, "
                                   "offset %lld: fewer than %lld bytes (the "
                                   "file shrank after it was opened?)",
                                   pt->paths[var], m->vars[var].name, rank,
                                   (long long)at, (long long)want);
    a = z;
  }
  return 0;
}

int ferry__rec_blob(ferry__rec_w *w, ferry__blob *b) {
  void *p = NULL;
  int rc = ferry__rec_finish(w, &p, &b->len);
  b->p = p;
  return rc;
}

void ferry__handle_cache_init(ferry__handle_cache *c, size_t max, void *ctx,
                              ferry__handle_open_fn open,
                              ferry__handle_close_fn close) {
  memset(c, 0, sizeof *c);
  c->max = max > 0 ? max : 64;
  c->ctx = ctx;
  c->open = open;
  c->close = close;
}

/* Close the least recently used entries until at most keep remain.  The
 * last entry moves into the victim's place: the order stays a function of
 * the lookup sequence. */
static void evict_to(ferry__handle_cache *c, size_t keep) {
  while (c->n > keep && c->n > 0) {
    size_t victim = 0;
    for (size_t i = 1; i < c->n; i++)
      if (c->e[i].last_use < c->e[victim].last_use)
        victim = i;
    c->close(c->ctx, c->e[victim].handle);
    c->e[victim] = c->e[--c->n];
  }
}

int ferry__handle_get(ferry__handle_cache *c, int64_t part, int var, int rank,
                      void **out, ferry__err *err) {
  for (size_t i = 0; i < c->n; i++)
    if (c->e[i].part == part && c->e[i].var == var) {
      c->e[i].last_use = ++c->clock;
      *out = c->e[i].handle;
      return 0;
    }
  evict_to(c, c->max - 1);
  if (c->n == c->cap) {
    size_t ncap = c->cap ? 2 * c->cap : 16;
    ferry__handle_entry *ne = realloc(c->e, ncap * sizeof *ne);
    if (!ne)
      return ferry__oom(err, -1, ncap * sizeof *ne,
                        "the cache of %zu open files on rank %d (part %lld, "
                        "variable %d)",
                        ncap, rank, (long long)part, var);
    c->e = ne;
    c->cap = ncap;
  }
  void *h = NULL;
  int rc = c->open(c->ctx, part, var, &h, err);
  if (rc < 0)
    return rc;
  c->e[c->n++] = (ferry__handle_entry){part, var, h, ++c->clock};
  *out = h;
  return 0;
}

void ferry__handle_cache_free(ferry__handle_cache *c) {
  for (size_t i = 0; i < c->n; i++)
    c->close(c->ctx, c->e[i].handle);
  free(c->e);
  c->e = NULL;
  c->n = c->cap = 0;
}

int ferry__open_regular(const char *path, const char **kind) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    if (kind)
      *kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
              : S_ISDIR(st.st_mode)  ? "a directory"
              : S_ISSOCK(st.st_mode) ? "a socket"
                                     : "a device";
    close(fd);
    return -2;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

/* ---- Variable lists --------------------------------------------------- */

const char *ferry__next_name(const char **p, size_t *len) {
  const char *s = *p;
  while (*s == ' ' || *s == ',' || *s == '/')
    s++;
  if (!*s)
    return NULL;
  const char *e = s;
  while (*e && *e != ',')
    e++;
  *p = e;
  while (e > s && e[-1] == ' ')
    e--;
  *len = (size_t)(e - s);
  return s;
}

int ferry__name_listed(const char *list, const char *name) {
  size_t n, len;
  while (*name == '/')
    name++;
  n = strlen(name);
  for (const char *p = list ? list : "", *s;
       (s = ferry__next_name(&p, &len)) != NULL;)
    if (len == n && strncmp(s, name, n) == 0)
      return 1;
  return 0;
}

int ferry__has_suffix(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

char *ferry__dir_only_file(const char *dir,
                           int (*accept)(const char *dir, const char *name)) {
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char *found = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < 2;) {
    if (e->d_name[0] == '.' || !accept(dir, e->d_name))
      continue;
    if (++n == 1)
      found = ferry__join_path(dir, e->d_name);
  }
  closedir(d);
  if (n != 1) {
    free(found);
    return NULL;
  }
  return found;
}

/* ---- The process-wide lock of libraries that are not thread-safe ------ */

/* HDF5 (Debian's parallel build has no thread-safety) and netCDF-C share
 * one lock: netCDF-C may call HDF5, and two loaders of either kind may run
 * on different threads of one process (issue 11).  docs/design/backends.md,
 * "Many HDF5 loaders in one process", says why the collective form cannot
 * deadlock. */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

void ferry__lib_lock(void) { pthread_mutex_lock(&lib_mu); }
void ferry__lib_unlock(void) { pthread_mutex_unlock(&lib_mu); }
int ferry__lib_trylock(void) { return pthread_mutex_trylock(&lib_mu) == 0; }

/* ---- MPI errors ------------------------------------------------------- */

int ferry__mpi_fail(ferry__err *err, int code, int mpirc, const char *fmt,
                    ...) {
  char what[FERRY__MSG_MAX / 2], mpimsg[MPI_MAX_ERROR_STRING];
  int mlen = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (MPI_Error_string(mpirc, mpimsg, &mlen) != MPI_SUCCESS)
    snprintf(mpimsg, sizeof mpimsg, "MPI error %d", mpirc);
  return ferry__seterr(err, code, "%s: %s", what, mpimsg);
}

int ferry__mpi_open_code(int mpirc) {
  int cls = 0;
  if (MPI_Error_class(mpirc, &cls) != MPI_SUCCESS)
    return FERRY_EIO;
  return cls == MPI_ERR_NO_SUCH_FILE ? FERRY_ENOENT
         : cls == MPI_ERR_ACCESS     ? FERRY_EACCES
                                     : FERRY_EIO;
}
