/*
 * io_base.c - the part of io_open and io_close that every file backend
 * did alike (npy, npz, netCDF classic, HDF5, Parquet): allocate the
 * backend's I/O state, copy the manifest and the open parameters into its
 * base, start the handle cache, create the MPI-IO hints, refuse
 * io=collective where the backend cannot do it; and the MPI-IO handle the
 * cache holds for npy and classic.  One copy, so an open that fails frees
 * what it took in one place, and a new backend starts from it
 * (docs/hacking.md, "The I/O base").
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/toolkit.h"

/* Local (the I/O thread): nothing in it is collective, so a failure here
 * needs no agreement; the loader agrees on io_open's result. */
int ferry__io_base_open(const ferry__io_base_spec *s, const ferry__manifest *m,
                        const ferry__io_params *p, void **out,
                        ferry__err *err) {
  int rc = 0;
  ferry__io_base *b = NULL;
  *out = NULL;
  if (p->collective && s->no_collective) {
    rc = ferry__seterr(err, FERRY_ENOTSUP, "%s (rank %d)", s->no_collective,
                       p->rank);
    goto cleanup;
  }
  b = calloc(1, s->size);
  if (!b) {
    rc = ferry__oom(err, -1, s->size, "the I/O state (dataset %s, rank %d)",
                    m->spec, p->rank);
    goto cleanup;
  }
  b->m = m;
  b->comm = p->comm;
  b->rank = p->rank;
  b->collective = p->collective;
  b->info = MPI_INFO_NULL;
  /* The cache's callbacks get the whole state: the base is its first
   * member, so b is the backend's struct ferry__io. */
  ferry__handle_cache_init(&b->files, (size_t)p->max_open_files, b, s->open,
                           s->close);
  if (s->hints)
    b->info = ferry__mpiio_hints(b->collective);
  *out = b;
cleanup:
  return rc;
}

void ferry__io_base_close(ferry__io_base *b) {
  if (!b)
    return;
  ferry__handle_cache_free(&b->files);
  if (b->info != MPI_INFO_NULL)
    MPI_Info_free(&b->info);
}

/* Collective with io=collective: a rank whose allocation failed still
 * joins the open (its failure passed in as rc), so every rank returns the
 * lowest failing rank's error together. */
int ferry__io_base_mpi_open(const ferry__io_base *b, const char *path,
                            const char *vname, int64_t file_size, void **handle,
                            ferry__err *err) {
  MPI_File *fh = malloc(sizeof *fh);
  MPI_File opened = MPI_FILE_NULL;
  int rc = 0;
  if (!fh) {
    if (vname)
      rc = ferry__oom(err, -1, sizeof *fh,
                      "opening file %s (variable %s, rank %d)", path, vname,
                      b->rank);
    else
      rc = ferry__oom(err, -1, sizeof *fh, "opening file %s (rank %d)", path,
                      b->rank);
  }
  rc = ferry__mpiio_open(b->comm, b->collective, b->info, b->rank, path, vname,
                         file_size, rc, &opened, err);
  if (rc < 0)
    goto cleanup;
  *fh = opened;
  *handle = fh;
  fh = NULL;
cleanup:
  free(fh);
  return rc;
}

void ferry__io_base_mpi_close(void *ctx, void *handle) {
  (void)ctx;
  MPI_File_close((MPI_File *)handle);
  free(handle);
}

int ferry__io_base_fd_open(const ferry__io_base *b, const char *path,
                           const char *vname, int64_t file_size, void **handle,
                           ferry__err *err) {
  int *fd = malloc(sizeof *fd);
  if (!fd)
    return ferry__oom(err, -1, sizeof *fd,
                      "opening file %s (variable %s, rank %d)", path,
                      vname ? vname : "-", b->rank);
  const char *kind = "not a regular file";
  struct stat st;
  int rc = 0;
  *fd = ferry__open_regular(path, &kind);
  if (*fd == -2)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "file %s (variable %s, rank %d) is %s, not a regular "
                       "file",
                       path, vname ? vname : "-", b->rank, kind);
  else if (*fd < 0)
    rc = ferry__seterr(err, ferry__errno_code(errno),
                       "open failed: file %s, variable %s, rank %d, offset "
                       "0: %s",
                       path, vname ? vname : "-", b->rank, strerror(errno));
  else if (fstat(*fd, &st) != 0 || (int64_t)st.st_size != file_size)
    rc =
        ferry__seterr(err, FERRY_EMISMATCH,
                      "file %s is %lld bytes on rank %d but %lld bytes when "
                      "rank 0 scanned it (variable %s, offset 0)",
                      path, fstat(*fd, &st) == 0 ? (long long)st.st_size : -1LL,
                      b->rank, (long long)file_size, vname ? vname : "-");
  if (rc < 0) {
    if (*fd >= 0)
      close(*fd);
    free(fd);
    return rc;
  }
  *handle = fd;
  return 0;
}

void ferry__io_base_fd_close(void *ctx, void *handle) {
  (void)ctx;
  close(*(int *)handle);
  free(handle);
}

int ferry__pread_exact(int fd, void *buf, int64_t n, int64_t off,
                       const char *where, ferry__err *err) {
  size_t got = 0;
  if (n <= 0)
    return 0;
  if (ferry__pread_full(fd, buf, (size_t)n, off, &got) != 0)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "pread failed: %s, offset %lld, %lld bytes: %s", where,
                         (long long)off, (long long)n, strerror(errno));
  if ((int64_t)got != n)
    return ferry__seterr(err, FERRY_EIO,
                         "short read: %s, offset %lld: got %zu of %lld bytes "
                         "(the file shrank after it was opened?)",
                         where, (long long)off, got, (long long)n);
  return 0;
}

int ferry__io_base_var_open(void *ctx, int64_t part, int var, void **handle,
                            ferry__err *err) {
  const ferry__io_base *b = ctx; /* the backend's io starts with its base */
  const ferry__part *pt = &b->m->parts[part];
  if (b->collective)
    return ferry__io_base_mpi_open(b, pt->paths[var], b->m->vars[var].name,
                                   pt->file_size[var], handle, err);
  return ferry__io_base_fd_open(b, pt->paths[var], b->m->vars[var].name,
                                pt->file_size[var], handle, err);
}

void ferry__io_base_var_close(void *ctx, void *handle) {
  const ferry__io_base *b = ctx;
  if (b->collective)
    ferry__io_base_mpi_close(ctx, handle);
  else
    ferry__io_base_fd_close(ctx, handle);
}
