/*
 * limits.c - what a scanned (or loaded) manifest must satisfy before ferry
 * serves it, checked on rank 0 before the broadcast so that every rank
 * fails with the same message.  Sizes come from metadata (a Zarr shape, an
 * HDF5 dimension, a saved manifest), and issue 30 found a Zarr array whose
 * shape claimed 2^62 rows: ferry info then ran for ever, looping over its
 * 2^44 chunks.  A dataset of more than FERRY__MAX_SAMPLES samples, or of
 * more than FERRY__MAX_DATASET_BYTES bytes, is refused here, naming the
 * count and the limit; below them every loop over chunks (2^48 samples are
 * at most 2^48 chunks, 2^28 with the automatic chunk size of 1-byte rows)
 * ends, and no product of samples and row bytes overflows 64 bits.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "dataset/dataset.h"

/* A variable of empty rows (shape (N, 0)) would make a batch of no bytes,
 * and every rank must decide the same (issue 11: such a dataset opened on 1
 * rank and failed on 2 with "manifest buffer corrupt"). */
static int check_nonempty_rows(const ferry__manifest *m, const char *spec,
                               ferry__err *err) {
  for (int v = 0; v < m->nvars; v++)
    if (m->vars[v].row_bytes == 0)
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "dataset %s: variable '%s' has empty rows (a "
                           "dimension after the first is 0); select other "
                           "variables with vars",
                           spec, m->vars[v].name);
  return 0;
}

/* The sample count and the dataset's bytes (every selected variable). */
static int check_size(const ferry__manifest *m, const char *spec,
                      ferry__err *err) {
  if (m->num_samples > FERRY__MAX_SAMPLES)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "dataset %s: %lld samples, more than ferry serves "
                         "(2^48 = %lld); a count this large usually comes "
                         "from corrupt metadata (a Zarr shape, an HDF5 "
                         "dimension)",
                         spec, (long long)m->num_samples,
                         (long long)FERRY__MAX_SAMPLES);
  size_t row = 0;
  for (int v = 0; v < m->nvars; v++)
    if (__builtin_add_overflow(row, m->vars[v].row_bytes, &row))
      row = SIZE_MAX;
  if (row > (size_t)(FERRY__MAX_DATASET_BYTES / m->num_samples))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "dataset %s: %lld samples of %zu bytes, more than "
                         "the 2^60 bytes (1 EiB) ferry serves; a size this "
                         "large usually comes from corrupt metadata",
                         spec, (long long)m->num_samples, row);
  return 0;
}

int ferry__manifest_check_servable(const ferry__manifest *m, const char *spec,
                                   ferry__err *err) {
  int rc = check_nonempty_rows(m, spec, err);
  return rc < 0 || m->num_samples == 0 ? rc : check_size(m, spec, err);
}
