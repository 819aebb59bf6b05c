/*
 * registry.c - the backends compiled into this build, in probe order: the
 * first whose probe() accepts a part reads it, unless the part starts with
 * a backend's scheme ("mem:"), which names its backend outright.  Adding a
 * format is one line here (and one in the build); the core never names a
 * backend.
 */
#include "config.h"
#include "backends/backend.h"

#include <pthread.h>
#include <stdlib.h>
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
extern const ferry__backend ferry__backend_megatron;
extern const ferry__backend ferry__backend_arrow;
extern const ferry__backend ferry__backend_wds;
extern const ferry__backend ferry__backend_mds;
extern const ferry__backend ferry__backend_imgfolder;
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
    &ferry__backend_megatron,
    &ferry__backend_arrow,
    &ferry__backend_wds,
    &ferry__backend_mds,
    /* after every backend that may read a directory: image folders */
    &ferry__backend_imgfolder,
    &ferry__backend_mem,
    /* a mix of datasets: reached by its scheme, built by dataset/mix.c */
    &ferry__backend_mix,
    NULL,
};

int ferry__backend_check(const ferry__backend *b, ferry__err *err) {
  const char *name = b && b->name && b->name[0] ? b->name : "(unnamed)";
  const char *why = NULL;
  if (!b || !b->name || !b->name[0])
    why = "it has no name";
  else if (b->version != FERRY__BACKEND_VERSION)
    why = "its version is not this contract's (FERRY__BACKEND_VERSION)";
  else if (!b->describe || !b->io_open || !b->io_read || !b->io_close)
    why = "describe, io_open, io_read and io_close are mandatory";
  else if (!b->probe && !(b->scheme && b->scheme[0]))
    why = "it has neither a probe nor a scheme: no dataset reaches it";
  else if (b->probe && !b->accepts)
    why = "it has a probe but does not say what it accepts";
  else if (b->caps & ~(unsigned)FERRY__CAP_ALL)
    why = "it declares a capability the core does not know";
  if (!why)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "backend %s breaks the backend contract: %s "
                       "(src/backends/backend.h)",
                       name, why);
}

static pthread_once_t checked_once = PTHREAD_ONCE_INIT;
static int checked_rc;
static ferry__err checked_err;

static void check_all(void) {
  for (int i = 0; ferry__backends[i] && !checked_rc; i++) {
    checked_rc = ferry__backend_check(ferry__backends[i], &checked_err);
    for (int j = 0; j < i && !checked_rc; j++)
      if (strcmp(ferry__backends[j]->name, ferry__backends[i]->name) == 0)
        checked_rc = ferry__seterr(&checked_err, FERRY_EINTERNAL,
                                   "two backends are named %s",
                                   ferry__backends[i]->name);
  }
}

int ferry__backend_registry_check(ferry__err *err) {
  pthread_once(&checked_once, check_all);
  if (checked_rc && err)
    *err = checked_err;
  return checked_rc;
}

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

/* A describe()'s result, freed by the scan (dataset/scan.c) and by the
 * backends on their error paths. */
void ferry__part_desc_free(ferry__part_desc *d) {
  if (!d)
    return;
  for (int i = 0; i < d->nvars; i++) {
    if (d->vars) {
      free(d->vars[i].name);
      free(d->vars[i].storage);
      free(d->vars[i].categories);
    }
    if (d->paths)
      free(d->paths[i]);
    if (d->rec)
      free(d->rec[i].p);
    if (d->roff)
      free(d->roff[i]);
  }
  free(d->rec);
  free(d->roff);
  free(d->vars);
  free(d->notes);
  free(d->paths);
  free(d->data_offset);
  free(d->file_size);
  memset(d, 0, sizeof *d);
}
