/*
 * hdf5_vlen.c - HDF5 variable-length datasets as ragged variables
 * (docs/ragged.md): a one-dimensional dataset of H5T_VLEN of an integer or
 * IEEE float32/64 base (h5py.vlen_dtype) is a ragged variable of that base
 * dtype, one of variable-length strings (h5py.string_dtype()) a ragged
 * uint8 variable (a sample is the string's bytes, without a NUL).
 *
 * Correct, not fast: HDF5 keeps no index of the lengths, so describe (rank
 * 0, at ferry_open) reads the whole dataset once in blocks to learn them,
 * and every read of rows goes through H5Dread into HDF5's own per-element
 * buffers (malloc'd by HDF5, freed by H5Treclaim), which are then copied
 * one after the other into the read buffer, each length checked against
 * the manifest's offsets.  Shared by hdf5_describe.c and hdf5.c.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/hdf5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ferry__h5_vlen_kind(hid_t ftype) {
  H5T_class_t c = H5Tget_class(ftype);
  if (c == H5T_VLEN)
    return 1;
  if (c == H5T_STRING && H5Tis_variable_str(ftype) > 0)
    return 2;
  return 0;
}

hid_t ferry__h5_vlen_mtype(hid_t ftype, int kind) {
  if (kind == 2) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 ||
                   H5Tset_cset(t, H5Tget_cset(ftype)) < 0)) {
      H5Tclose(t);
      return -1;
    }
    return t;
  }
  hid_t base = H5Tget_super(ftype), native = -1, t = -1;
  if (base >= 0)
    native = H5Tget_native_type(base, H5T_DIR_ASCEND);
  if (native >= 0)
    t = H5Tvlen_create(native);
  if (native >= 0)
    H5Tclose(native);
  if (base >= 0)
    H5Tclose(base);
  return t;
}

static void reclaim(hid_t mtype, hid_t ms, void *buf) {
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(mtype, ms, H5P_DEFAULT, buf);
#else
  H5Dvlen_reclaim(mtype, ms, H5P_DEFAULT, buf);
#endif
}

int ferry__h5_vlen_read(hid_t d, hid_t mtype, int kind, hid_t dxpl, int64_t row,
                        int64_t n, size_t elsize, int64_t *lens,
                        const int64_t *want, unsigned char *out, size_t cap,
                        char *why, size_t whylen) {
  if (n <= 0)
    return 0;
  hsize_t start = (hsize_t)row, count = (hsize_t)n;
  size_t each = kind == 2 ? sizeof(char *) : sizeof(hvl_t);
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
  void *buf = calloc((size_t)n, each);
  int rc = 0;
  if (fs < 0 || ms < 0 || !buf) {
    snprintf(why, whylen, "%s",
             buf ? "cannot make the selections" : "out of memory");
    rc = buf ? FERRY_EIO : FERRY_ENOMEM;
    goto out;
  }
  if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
      H5Dread(d, mtype, ms, fs, dxpl, buf) < 0) {
    char r[400];
    snprintf(why, whylen, "H5Dread of the variable-length rows failed%s",
             ferry__h5_reason(r, sizeof r));
    rc = FERRY_EIO;
    goto out;
  }
  size_t at = 0;
  for (int64_t i = 0; i < n && !rc; i++) {
    const void *p;
    size_t len;
    if (kind == 2) {
      const char *s = ((char **)buf)[i];
      p = s;
      len = s ? strlen(s) : 0;
    } else {
      const hvl_t *h = (const hvl_t *)buf + i;
      p = h->p;
      len = h->len;
      if (len > 0 && !p) {
        snprintf(why, whylen, "row %lld holds %zu elements and no data",
                 (long long)(row + i), len);
        rc = FERRY_EFORMAT;
        break;
      }
    }
    if (len > (size_t)INT64_MAX / 16 / (elsize ? elsize : 1)) {
      snprintf(why, whylen, "row %lld holds %zu elements", (long long)(row + i),
               len);
      rc = FERRY_EFORMAT;
      break;
    }
    if (lens)
      lens[i] = (int64_t)len;
    if (want && (int64_t)len != want[i]) {
      snprintf(why, whylen,
               "row %lld holds %zu elements where rank 0 counted %lld at open "
               "(the file changed?)",
               (long long)(row + i), len, (long long)want[i]);
      rc = FERRY_EFORMAT;
      break;
    }
    if (out) {
      size_t bytes = len * elsize;
      if (bytes > cap - at) {
        snprintf(why, whylen,
                 "rows [%lld, %lld) hold more than the %zu bytes "
                 "rank 0 counted",
                 (long long)row, (long long)(row + n), cap);
        rc = FERRY_EFORMAT;
        break;
      }
      if (bytes)
        memcpy(out + at, p, bytes);
      at += bytes;
    }
  }
  reclaim(mtype, ms, buf);
out:
  free(buf);
  if (ms >= 0)
    H5Sclose(ms);
  if (fs >= 0)
    H5Sclose(fs);
  return rc;
}
