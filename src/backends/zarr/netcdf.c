/*
 * netcdf.c - the zarr backend's NCZarr reader, built only with netCDF-C
 * (HAVE_NCZARR): nc_open("file://STORE#mode=zarr,file") and nc_get_vara;
 * compressed chunks are decoded by ferry's NCZarr plugins (src/plugins),
 * which netCDF-C finds through HDF5_PLUGIN_PATH (set_plugin_path below).
 * After the open every variable's filter chain, as netCDF-C reports it
 * (nc_inq_var_filter_ids), must have as many codecs as its .zarray, or
 * nothing is read.  Its chunk cache is bounded with nc_set_var_chunk_cache
 * and counted in cache_bytes.
 *
 * netCDF-C is not thread-safe: every netCDF call of this file holds
 * the library lock (backends/toolkit.c) it shares with HDF5, so no two
 * loaders of one process, of either backend, call them at once.  An
 * application that calls netCDF-C itself from another thread while ferry
 * reads is not protected.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/zarr.h"

#include <errno.h>
#include <limits.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FERRY_PLUGIN_DIR
#define FERRY_PLUGIN_DIR ""
#endif
#ifndef FERRY_BUILD_PLUGIN_DIR
#define FERRY_BUILD_PLUGIN_DIR ""
#endif
/* The plugin every ferry build has: how the plugin directory is recognised. */
#define Z_PLUGIN_PROBE "lib__nczferry_shuffle.so"

/* ---- netCDF-C's plugin path ------------------------------------------- */

static char plugin_dir[PATH_MAX];
static int plugin_path_done;

static int dir_has_plugins(const char *dir) {
  return dir && *dir && ferry__zarr_exists_in(dir, Z_PLUGIN_PROBE, 0);
}

/*
 * Before the first nc_open of the process: prepend ferry's plugin directory
 * to HDF5_PLUGIN_PATH (netCDF-C reads it once, when it first needs a
 * filter).  The directory is $FERRY_PLUGIN_DIR, else the installed one,
 * else the build tree's (make check before make install).  Entries of the
 * user's HDF5_PLUGIN_PATH that are not directories are dropped: netCDF-C
 * 4.9.0 gives up loading every plugin when one entry does not exist.
 * Called with the library lock held.
 */
static void set_plugin_path(void) {
  if (plugin_path_done)
    return;
  plugin_path_done = 1;
  const char *env = getenv("FERRY_PLUGIN_DIR");
  const char *dir = env && *env                         ? env
                    : dir_has_plugins(FERRY_PLUGIN_DIR) ? FERRY_PLUGIN_DIR
                    : dir_has_plugins(FERRY_BUILD_PLUGIN_DIR)
                        ? FERRY_BUILD_PLUGIN_DIR
                        : FERRY_PLUGIN_DIR;
  snprintf(plugin_dir, sizeof plugin_dir, "%s", dir);
  const char *old = getenv("HDF5_PLUGIN_PATH");
  size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
  char *path = malloc(n), *copy = old ? strdup(old) : NULL;
  if (!path || (old && !copy)) {
    free(path);
    free(copy);
    return;
  }
  size_t used = 0;
  struct stat st;
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
    used += (size_t)snprintf(path, n, "%s", dir);
  for (char *s = copy, *save = NULL, *tok;
       s && (tok = strtok_r(s, ":;", &save)); s = NULL)
    if (strcmp(tok, dir) != 0 && stat(tok, &st) == 0 && S_ISDIR(st.st_mode))
      used +=
          (size_t)snprintf(path + used, n - used, "%s%s", used ? ":" : "", tok);
  if (used)
    setenv("HDF5_PLUGIN_PATH", path, 1);
  free(path);
  free(copy);
}

/* "file:///ABS/STORE#mode=zarr,file", malloc'd; NULL with errno. */
static char *netcdf_url(const char *store) {
  char *real = realpath(store, NULL), *url = NULL;
  if (!real)
    return NULL;
  size_t n = strlen(real) + 32;
  if ((url = malloc(n)))
    snprintf(url, n, "file://%s#mode=zarr,file", real);
  free(real);
  return url;
}

/* Find variable mv of the open store (zv's gid and varid) and check that
 * netCDF-C sees it with the dimensions its .zarray gives. */
static int nc_find_var(zvar *zv, int ncid, const ferry__var *mv,
                       const char *store, int rank, ferry__err *err) {
  char grp[PATH_MAX] = "/";
  const char *slash = strrchr(mv->name, '/');
  const char *leaf = slash ? slash + 1 : mv->name;
  if (slash)
    snprintf(grp, sizeof grp, "/%.*s", (int)(slash - mv->name), mv->name);
  int nd = 0, dimids[NC_MAX_VAR_DIMS];
  int nrc = slash ? nc_inq_grp_full_ncid(ncid, grp, &zv->gid)
                  : (zv->gid = ncid, NC_NOERR);
  if (nrc == NC_NOERR)
    nrc = nc_inq_varid(zv->gid, leaf, &zv->varid);
  if (nrc == NC_NOERR)
    nrc = nc_inq_varndims(zv->gid, zv->varid, &nd);
  if (nrc == NC_NOERR && nd == zv->z.ndim && nd <= NC_MAX_VAR_DIMS)
    nrc = nc_inq_vardimid(zv->gid, zv->varid, dimids);
  if (nrc != NC_NOERR || nd != zv->z.ndim)
    return ferry__seterr(err, FERRY_EIO,
                         "store %s, array %s: netCDF-C does not see it as "
                         "the .zarray describes it on rank %d: %s",
                         store, mv->name, rank,
                         nrc ? nc_strerror(nrc) : "other dimensions");
  for (int d = 0; d < nd; d++) {
    size_t len = 0;
    if (nc_inq_dimlen(zv->gid, dimids[d], &len) != NC_NOERR ||
        (int64_t)len != zv->z.shape[d])
      return ferry__seterr(err, FERRY_EIO,
                           "store %s, array %s: netCDF-C gives dimension "
                           "%d another length than .zarray (rank %d)",
                           store, mv->name, d, rank);
  }
  return 0;
}

/* The codec chain netCDF-C will apply must be the whole chain, or it would
 * hand out undecoded bytes (netCDF-C before 4.9 did). */
static int nc_check_codecs(const zvar *zv, const ferry__var *mv,
                           const char *store, int rank, ferry__err *err) {
  unsigned ids[Z_MAX_CODECS];
  int missing = 0;
  size_t nf = 0;
  int nrc = nc_inq_var_filter_ids(zv->gid, zv->varid, &nf, NULL);
  if (nrc == NC_NOERR && nf <= Z_MAX_CODECS)
    nrc = nc_inq_var_filter_ids(zv->gid, zv->varid, &nf, ids);
  /* netCDF-C 4.9.0 lists a codec whose plugin it did not find as an
   * "incomplete" filter and fails only when a chunk is read. */
  for (size_t f = 0; nrc == NC_NOERR && f < nf && f < Z_MAX_CODECS; f++)
    missing += nc_inq_filter_avail(zv->gid, ids[f]) != NC_NOERR;
  if (nrc != NC_NOERR || (int)nf != zv->z.ncodecs || missing)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s, array %s: netCDF-C can apply %zu of its "
                         "%d codecs (%s) on rank %d: it did not load "
                         "ferry's codec plugins from '%s' (set "
                         "FERRY_PLUGIN_DIR to the directory holding "
                         "lib__nczferry_*.so, or zarr_reader=native)",
                         store, mv->name,
                         nrc == NC_NOERR ? nf - (size_t)missing : 0,
                         zv->z.ncodecs, zv->z.codecs_text, rank, plugin_dir);
  return 0;
}

/* A bounded chunk cache: two bands of chunks, so an extent that shares a
 * storage chunk with the previous one does not decode it again.
 * describe() counted the same size in cache_bytes. */
static int nc_bound_cache(const zvar *zv, const ferry__var *mv,
                          const char *store, int rank, ferry__err *err) {
  size_t bytes = zv->z.chunk_bytes * (size_t)zv->z.across * 2;
  size_t nelems = (size_t)zv->z.across * 2 + 1;
  int nrc = nc_set_var_chunk_cache(zv->gid, zv->varid, bytes, nelems, 1.0f);
  if (nrc != NC_NOERR)
    return ferry__seterr(err, FERRY_EIO,
                         "store %s, array %s: nc_set_var_chunk_cache "
                         "failed on rank %d: %s",
                         store, mv->name, rank, nc_strerror(nrc));
  return 0;
}

int ferry__zarr_nc_open(zpart *p, const ferry__manifest *m, const char *store,
                        int rank, ferry__err *err) {
  char *url = netcdf_url(store);
  if (!url)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "store %s on rank %d: cannot resolve its path: %s",
                         store, rank, strerror(errno));
  int rc = 0;
  ferry__lib_lock();
  set_plugin_path();
  int nrc = nc_open(url, NC_NOWRITE, &p->ncid);
  if (nrc != NC_NOERR) {
    p->ncid = -1;
    rc = ferry__seterr(
        err, FERRY_EIO, "nc_open(%s) failed on rank %d: %s%s (offset 0)", url,
        rank, nc_strerror(nrc),
        nrc == NC_ENOFILTER ? "; netCDF-C found no codec plugin: set "
                              "FERRY_PLUGIN_DIR to the directory of "
                              "lib__nczferry_*.so"
                            : "");
  }
  for (int v = 0; v < m->nvars && rc == 0; v++) {
    zvar *zv = &p->v[v];
    const ferry__var *mv = &m->vars[v];
    if ((rc = nc_find_var(zv, p->ncid, mv, store, rank, err)) == 0 &&
        (rc = nc_check_codecs(zv, mv, store, rank, err)) == 0)
      rc = nc_bound_cache(zv, mv, store, rank, err);
  }
  ferry__lib_unlock();
  free(url);
  return rc;
}

void ferry__zarr_nc_close(zpart *p) {
  if (p->ncid >= 0) {
    ferry__lib_lock();
    nc_close(p->ncid);
    ferry__lib_unlock();
    p->ncid = -1;
  }
}

/* netCDF reader: check the chunk files the read touches, then one
 * nc_get_vara in stored byte order. */
int ferry__zarr_nc_read(zvar *zv, const char *store, const char *vname,
                        int rank, int64_t row, int64_t nrows, size_t row_bytes,
                        void *buf, ferry__err *err) {
  const zmeta *z = &zv->z;
  int64_t idx[Z_MAX_DIMS] = {0};
  for (int64_t ci = row / z->chunks[0]; ci * z->chunks[0] < row + nrows; ci++) {
    idx[0] = ci;
    for (int64_t a = 0; a < z->across; a++) {
      int64_t rest = a;
      for (int d = z->ndim - 1; d >= 1; d--) {
        int64_t nd = zarr_nchunks(z, d);
        idx[d] = rest % nd;
        rest /= nd;
      }
      char *cp = ferry__zarr_chunk_path(zv->adir, z, idx);
      off_t size = 0;
      if (!cp)
        return ferry__oom(
            err, -1, ferry__zarr_chunk_path_bytes(zv->adir, z, idx),
            "a chunk path (store %s, array %s, rank %d)", store, vname, rank);
      int rc = ferry__zarr_check_chunk(
          zv, cp, store, vname, rank,
          ci * z->chunks[0] > row ? ci * z->chunks[0] : row, err, &size);
      free(cp);
      if (rc < 0)
        return rc;
    }
  }
  size_t start[Z_MAX_DIMS] = {0}, count[Z_MAX_DIMS];
  start[0] = (size_t)row;
  count[0] = (size_t)nrows;
  for (int d = 1; d < z->ndim; d++)
    count[d] = (size_t)z->shape[d];
  ferry__lib_lock();
  int nrc = nc_get_vara(zv->gid, zv->varid, start, count, buf);
  ferry__lib_unlock();
  /* netCDF-C does not say which chunk failed: decode the same rows with
   * ferry's own reader, whose error names the chunk file.  The buffer's
   * contents do not matter any more: the read fails either way. */
  if (nrc != NC_NOERR &&
      ferry__zarr_native_read(zv, store, vname, rank, row, nrows, row_bytes,
                              buf, err) < 0)
    return err ? err->code : FERRY_EIO;
  if (nrc != NC_NOERR)
    return ferry__seterr(err, nrc == NC_EFILTER ? FERRY_EFORMAT : FERRY_EIO,
                         "nc_get_vara failed: store %s, array %s, rank %d, "
                         "rows [%lld, %lld): %s%s",
                         store, vname, rank, (long long)row,
                         (long long)(row + nrows), nc_strerror(nrc),
                         nrc == NC_EFILTER ? " (a chunk is truncated or "
                                             "corrupt)"
                                           : "");
  return 0;
}
