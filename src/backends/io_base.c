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

#include <stdlib.h>

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
