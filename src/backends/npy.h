/*
 * backends/npy.h - the npy backend's header parser and MPI-IO steps (npy.c),
 * shared with the npz backend (whose stored members are .npy files), the
 * tests and the fuzz harness.
 */
#ifndef FERRY_NPY_H
#define FERRY_NPY_H

#include "backends/backend.h"

/** Parse a NumPy .npy header from the first len bytes of a file. */
typedef struct ferry__npy_header {
  int major, minor;
  ferry_dtype dtype;
  int swapped;
  int ndim;
  int64_t shape[FERRY_MAX_DIMS];
  int64_t data_offset;
} ferry__npy_header;
int ferry__npy_parse_header(const unsigned char *buf, size_t len,
                            ferry__npy_header *h, const char *path,
                            ferry__err *err);

/**
 * The npy backend's MPI-IO steps, shared with the npz backend (whose stored
 * members are read exactly like .npy files).  ferry__npy_open opens path
 * (collectively over comm when collective, the outcome agreed on every
 * rank) and checks that it still is file_size bytes, as rank 0 saw it;
 * vname names the variable in messages.  ferry__npy_read_range reads
 * nbytes at offset: one collective call (rc < 0: a local failure found
 * before; the rank joins with a count of 0 and returns rc), or independent
 * calls of at most 1 GiB each.
 */
int ferry__npy_open(MPI_Comm comm, int collective, MPI_Info info, int rank,
                    const char *path, const char *vname, int64_t file_size,
                    MPI_File *out, ferry__err *err);
int ferry__npy_read_range(MPI_File fh, int collective, int64_t offset,
                          int64_t nbytes, void *buf, int rc, const char *where,
                          ferry__err *err);

#endif /* FERRY_NPY_H */
