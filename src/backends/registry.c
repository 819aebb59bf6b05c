/*
 * registry.c - the backends compiled into this build, in probe order: the
 * first whose probe() accepts a part reads it, unless the part starts with
 * a backend's scheme ("mem:"), which names its backend outright.  Adding a
 * format is one line here (and one in the build); the core never names a
 * backend.
 */
#include "config.h"
#include "backends/backend.h"

#include <string.h>

/* Each backend file exports one table; this is the only place that names
 * them.  A new format adds its line to each list. */
extern const ferry__backend ferry__backend_npy;
extern const ferry__backend ferry__backend_npz;
#ifdef HAVE_HDF5
extern const ferry__backend ferry__backend_hdf5;
#endif
extern const ferry__backend ferry__backend_classic;
extern const ferry__backend ferry__backend_zarr;
extern const ferry__backend ferry__backend_parquet;
extern const ferry__backend ferry__backend_mem;
extern const ferry__backend ferry__backend_mix;

const ferry__backend *const ferry__backends[] = {
    &ferry__backend_npy,
    &ferry__backend_npz,
#ifdef HAVE_HDF5
    &ferry__backend_hdf5,
#endif
    &ferry__backend_classic,
    &ferry__backend_zarr,
    &ferry__backend_parquet,
    &ferry__backend_mem,
    /* a mix of datasets: reached by its scheme, built by core/mix.c */
    &ferry__backend_mix,
    NULL,
};

const ferry__backend *ferry__backend_find(const char *name) {
  for (int i = 0; name && ferry__backends[i]; i++)
    if (strcmp(ferry__backends[i]->name, name) == 0)
      return ferry__backends[i];
  return NULL;
}

const ferry__backend *ferry__backend_for_scheme(const char *spec) {
  for (int i = 0; spec && ferry__backends[i]; i++) {
    const char *s = ferry__backends[i]->scheme;
    size_t n = s ? strlen(s) : 0;
    if (n && strncmp(spec, s, n) == 0 && spec[n] == ':')
      return ferry__backends[i];
  }
  return NULL;
}

const char *ferry_backend_name(int i) {
  if (i < 0)
    return NULL;
  for (int k = 0; ferry__backends[k]; k++)
    if (k == i)
      return ferry__backends[k]->name;
  return NULL;
}
