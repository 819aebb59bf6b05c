/*
 * backends/hdf5.h - private to the HDF5 backend's two files: hdf5.c (the
 * vtable, probe, the reads) and hdf5_describe.c (describe, rank 0).  What
 * they share: the library lock and HDF5's error stack.
 */
#ifndef FERRY_BACKENDS_HDF5_H
#define FERRY_BACKENDS_HDF5_H

#include "backends/backend.h"
#include "backends/toolkit.h"

#include <hdf5.h>

/* The toolkit's library lock (backends/toolkit.c), shared with netCDF-C's
 * callers: every HDF5 call runs under it.  A local section: no call
 * inside waits for another process (hdf5.c's h5_lock_all is the
 * collective form). */
static inline void ferry__h5_lock(void) { ferry__lib_lock(); }
static inline void ferry__h5_unlock(void) { ferry__lib_unlock(); }

/** HDF5 prints nothing on a failure: ferry reports it (ferry__h5_reason). */
void ferry__h5_quiet_errors(void);
/** HDF5's own reason for the last failure, from its error stack, into
 *  buf[len] (": HDF5 says: ...", or "" when the stack is empty); the
 *  stack is cleared.  Returns buf. */
const char *ferry__h5_reason(char *buf, size_t len);

/* Variable-length datasets (hdf5_vlen.c): kind 1 a sequence of a numeric
 * base (H5T_VLEN), 2 a variable-length string, 0 neither. */
int ferry__h5_vlen_kind(hid_t ftype);
/** The memory type that reads a variable-length file type of that kind. */
hid_t ferry__h5_vlen_mtype(hid_t ftype, int kind);
/** Rows [row, row+n) of dataset d: each row's element count into lens (when
 *  not NULL), checked against want (when not NULL), and the elements of
 *  all, one row after the other, into out[cap] (when not NULL).  Returns
 *  0 or a FERRY_E* code with why set (row numbers, HDF5's reason). */
int ferry__h5_vlen_read(hid_t d, hid_t mtype, int kind, hid_t dxpl, int64_t row,
                        int64_t n, size_t elsize, int64_t *lens,
                        const int64_t *want, unsigned char *out, size_t cap,
                        char *why, size_t whylen);

/** The vtable's describe (hdf5_describe.c): rank 0, a local section. */
int ferry__h5_describe(const char *path, const ferry_options *opts,
                       ferry__part_desc *out, ferry__err *err);

#endif /* FERRY_BACKENDS_HDF5_H */
