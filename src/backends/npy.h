/*
 * backends/npy.h - the npy backend's header parser (npy.c), shared with the
 * npz backend (whose stored members are .npy files), the tests and the
 * fuzz harness.
 */
#ifndef FERRY_NPY_H
#define FERRY_NPY_H

#include "backends/backend.h"

/** Parse a NumPy .npy header from the first len bytes of a file (0-d
 *  arrays refused: a variable needs a sample dimension). */
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
/** As ferry__npy_parse_header, but a 0-d array (shape (), ndim 0) is
 *  accepted: one sample's array, not a variable (a WebDataset shard's
 *  KEY.npy member, tar.c).  label names the bytes in messages. */
int ferry__npy_parse_array_header(const unsigned char *buf, size_t len,
                                  ferry__npy_header *h, const char *label,
                                  ferry__err *err);

#endif /* FERRY_NPY_H */
