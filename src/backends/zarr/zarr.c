/*
 * zarr.c - the Zarr backend: Zarr v2 and v3 stores (sharded v3 arrays
 * too) on a file system, as zarr-python and xarray write them, read by
 * ferry's own chunk reader or (v2, on request) through netCDF-C's NCZarr.  This
 * file is the vtable (probe, the record, io_open/io_read/io_close and the
 * dispatch to a reader); meta.c and v3.c parse metadata, store.c walks
 * stores, describe.c describes them, native.c is the native reader, netcdf.c
 * the NCZarr reader (only in builds with netCDF-C; zarr.h holds what they
 * share).  Without netCDF-C the backend is still built: every store is read
 * natively and zarr_reader=netcdf is FERRY_ENOTSUP.
 *
 * A part is one store: a directory holding .zgroup or a group's zarr.json
 * (a group; its arrays, and those of its sub-groups, are the variables,
 * named by their path "samples", "sub/x") or .zarray or an array's
 * zarr.json (a store that is one array, named after the directory).  As with
 * HDF5 the arrays whose first dimension is the longest are the variables;
 * shorter ones (coordinates of another axis) are skipped.
 *
 * Rank 0 describes a store from its JSON metadata alone (jansson), before
 * netCDF-C sees it: netCDF-C 4.9.0 crashes (SIGSEGV in nc_open) on a store
 * holding a bool array, returns Fortran-ordered arrays transposed without
 * error, and older versions hand back compressed bytes as data when a codec
 * plugin is missing (Unidata/netcdf-c#2449, #2234).  So describe refuses,
 * with FERRY_ENOTSUP naming array, reason and fix, every variable whose
 * dtype ferry cannot hold (complex, datetime, object, strings, structured),
 * that is Fortran-ordered, or compressed with a codec ferry does not decode.
 *
 * Reads.  Each rank opens the store itself (NCZarr has no MPI-IO) on the
 * loader's I/O thread, checks that every variable's .zarray is the one rank
 * 0 described (its size in the manifest's file_size, its hash in the
 * backend's record, ZREC in zarr.h), and reads rows with one of two
 * readers, chosen by rank 0 (option zarr_reader) and kept in the same
 * record:
 *
 *   netcdf  (zarr_reader=netcdf, v2 only)
 * nc_open("file://STORE#mode=zarr,file") and nc_get_vara; compressed chunks are
 * decoded by ferry's NCZarr plugins (src/plugins), which netCDF-C finds through
 *           HDF5_PLUGIN_PATH (set_plugin_path below).  After the open every
 *           variable's filter chain, as netCDF-C reports it
 *           (nc_inq_var_filter_ids), must have as many codecs as its
 *           .zarray, or nothing is read.  Its chunk cache is bounded with
 *           nc_set_var_chunk_cache and counted in cache_bytes.
 *   native  (the default) ferry's own chunk reader with the same decoders
 *           (codec.c), for every store, Zarr v3 and sharded arrays too
 *           (each rank reads and keeps the indexes of the shards it
 *           reads, then only the inner chunks' byte ranges).  A chunk a read
 * covers whole is decoded (or read, uncompressed) straight into the read
 * buffer, on `threads` decode lanes (native.c, pool.c), reads returning
 * with their chunks queued when the loader defers (z_io_wait settles);
 * other chunks through a band of rows kept per variable.  Its buffers
 * are allocated once per open store, never per chunk, and counted in
 * cache_bytes (native_cache_bytes, each lane's too).
 *
 * Missing chunk files.  zarr-python does not write a chunk whose values all
 * equal the fill value (write_empty_chunks=False, its default) and reads a
 * missing chunk as the fill value; ferry does the same when the array has a
 * fill_value.  When fill_value is null zarr-python returns uninitialised
 * memory, so ferry refuses the read (FERRY_EFORMAT naming the chunk file).
 * Both readers check, before reading, that every chunk file they will touch
 * exists or may be absent and, without a compressor, has the chunk's exact
 * size; decoders check the decoded size.  A value that was not decoded is
 * never served.
 *
 * netCDF-C is not thread-safe: every netCDF call (netcdf.c) holds
 * the library lock it shares with HDF5, so no two loaders of one process
 * call netCDF-C or HDF5 at once.  caps is
 * FERRY__CAP_NOT_FLAT only: no collective I/O (io=collective is refused by
 * ferry_open), io_* calls come from the loader's single I/O thread, and
 * file_size is the .zarray's size, not the data's.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/anndata.h"
#include "backends/zarr/zarr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Probe ------------------------------------------------------------ */

static int z_probe(const char *path) {
  struct stat st;
  if (!path)
    return 0;
  if (strncmp(path, "file://", 7) == 0)
    return strstr(path, "#mode=") != NULL && (strstr(path, "zarr") != NULL);
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  return ferry__zarr_exists_in(path, ".zgroup", 0) ||
         ferry__zarr_exists_in(path, ".zarray", 0) ||
         ferry__zarr_exists_in(path, "zarr.json", 0) ||
         ferry__zarr_exists_in(path, ".zattrs", 0) ||
         (n > 5 && strncmp(path + n - 5, ".zarr", 5) == 0);
}

/* ---- The record ------------------------------------------------------- */

int ferry__zarr_rec_put(ferry__blob *b, int reader, uint64_t hash) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u8(&w, (unsigned)reader);
  ferry__rec_put_u64(&w, hash);
  return ferry__rec_blob(&w, b);
}

/* Variable v's record in part pt; FERRY_EFORMAT naming the store when it
 * is missing or malformed (a manifest another ferry saved). */
int ferry__zarr_rec_get(const ferry__manifest *m, const ferry__part *pt, int v,
                        int rank, int *reader, uint64_t *hash,
                        ferry__err *err) {
  const ferry__blob *b = pt->rec ? &pt->rec[v] : NULL;
  if (m->record_version != ZREC_VERSION || !b || b->len != ZREC_LEN ||
      b->p[0] > ZREC_NETCDF)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "store %s, array %s: the manifest's zarr record is "
                         "missing or malformed (version %d, %zu bytes; rank "
                         "%d): scan the dataset again",
                         pt->paths[v], m->vars[v].name, m->record_version,
                         b ? b->len : 0, rank);
  ferry__rec_r rd;
  ferry__rec_r_init(&rd, b->p, b->len);
  *reader = (int)ferry__rec_get_u8(&rd);
  *hash = ferry__rec_get_u64(&rd);
  return 0; /* the length was checked: every get succeeded */
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

static void part_close(ferry__io *io, zpart *p) {
  for (int v = 0; p->v && v < io->b.m->nvars; v++)
    ferry__zarr_var_free(&p->v[v]);
  free(p->v);
#ifdef HAVE_NCZARR
  ferry__zarr_nc_close(p);
#endif
  free(p->store);
  free(p);
}

/* Variable v of part pt in store: its record (*reader), its array
 * directory, and its .zarray, which must be the one rank 0 described. */
static int var_open(ferry__io *io, const ferry__part *pt, const char *store,
                    int root_array, int v, zvar *zv, int *reader,
                    ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  const ferry__var *mv = &m->vars[v];
  uint64_t hash = 0;
  int rc;
  zv->band = -1;
  zv->shard_fd = -1;
  zv->dec = &io->dec;
  if ((rc = ferry__zarr_rec_get(m, pt, v, io->b.rank, reader, &hash, err)) < 0)
    return rc;
  if (!(zv->adir = ferry__zarr_array_dir(store, mv->name, root_array)))
    return ferry__oom(
        err, -1, strlen(store) + (root_array ? 0 : strlen(mv->name) + 1) + 1,
        "the path of array %s (store %s, rank %d)", mv->name, store,
        io->b.rank);
  if ((rc = ferry__zarr_parse_zarray(zv->adir, mv->name, &zv->z, err)) < 0) {
    char msg[FERRY__MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return ferry__seterr(err, rc, "store %s on rank %d (offset 0): %s", store,
                         io->b.rank, msg);
  }
  /* an AnnData matrix's indices or data: a value per entry, not per row */
  int64_t rows = mv->ragged && !zv->z.vlen && pt->roff && pt->roff[v]
                     ? pt->roff[v][pt->num_samples]
                     : pt->num_samples;
  if (zv->z.hash != hash || zv->z.meta_size != pt->file_size[v] ||
      zv->z.shape[0] != rows)
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "store %s, array %s: its .zarray on rank %d differs "
                         "from the one rank 0 described (%lld against %lld "
                         "bytes; offset 0)",
                         store, mv->name, io->b.rank,
                         (long long)zv->z.meta_size,
                         (long long)pt->file_size[v]);
  return 0;
}

/* Open part: check every variable's .zarray against the manifest, then
 * open the store with netCDF-C when that is its reader. */
static int part_open(ferry__io *io, int64_t part, zpart **out,
                     ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  const ferry__part *pt = &m->parts[part];
  const char *spec = pt->paths[0];
  int rc = 0;
  zpart *p = calloc(1, sizeof *p);
  char *store = ferry__zarr_store_dir(spec);
  if (!p || !store || !(p->v = calloc((size_t)m->nvars, sizeof *p->v))) {
    size_t want = !p       ? sizeof *p
                  : !store ? strlen(spec) + 1
                           : (size_t)m->nvars * sizeof *p->v;
    free(store);
    if (p)
      free(p->v);
    free(p);
    return ferry__oom(err, -1, want, "opening store %s (%d arrays, rank %d)",
                      spec, m->nvars, io->b.rank);
  }
  p->part = part;
  p->ncid = -1;
  int root_array = ferry__zarr_root_is_array(store), reader = ZREC_NATIVE;
  for (int v = 0; v < m->nvars; v++)
    p->v[v].shard_fd = -1;
  for (int v = 0; v < m->nvars && rc == 0; v++)
    rc = var_open(io, pt, store, root_array, v, &p->v[v], &reader, err);
  if (rc == 0 && reader == ZREC_NETCDF)
#ifdef HAVE_NCZARR
    rc = ferry__zarr_nc_open(p, m, store, io->b.rank, err);
#else
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "store %s: the manifest names the netcdf reader, but "
                       "this ferry was built without netCDF-C (NCZarr) "
                       "(rank %d)",
                       store, io->b.rank);
#endif
  p->store = store;
  if (rc < 0) {
    part_close(io, p);
    return rc;
  }
  *out = p;
  return 0;
}

/* The handle cache's callbacks (backends/toolkit.c): one zpart per store
 * part, its arrays opened on first use. */
static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  (void)var;
  zpart *p = NULL;
  int rc = part_open(ctx, part, &p, err);
  if (rc < 0)
    return rc;
  *handle = p;
  return 0;
}

static void cache_close(void *ctx, void *handle) { part_close(ctx, handle); }

static int acquire(ferry__io *io, int64_t part, zpart **out, ferry__err *err) {
  void *h = NULL;
  int rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err);
  if (rc < 0)
    return rc;
  *out = h;
  return 0;
}

static void z_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__io_base_close(&io->b); /* closes the open stores */
  ferry__pool_free(io->dec.pool);
  free(io);
}

static int z_io_open(ferry__io **out, const ferry__manifest *m,
                     const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = cache_close,
      .no_collective = "the zarr backend has no collective reads",
  };
  void *state = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &state, err);
  *out = NULL;
  if (rc < 0)
    return rc;
  ferry__io *io = state;
  /* Decode lanes: the loader's threads, no more than describe counted in
   * cache_bytes (the threads option it was given). */
  io->dec.pool = ferry__pool_new(p->threads);
  io->dec.nlanes = ferry__pool_lanes(io->dec.pool);
  if (io->dec.nlanes > ferry__pool_lanes_for(p->opts))
    io->dec.nlanes = ferry__pool_lanes_for(p->opts);
  io->dec.defer = p->defer;
  *out = io;
  return 0;
}

static int z_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                     int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc)
    return rc;
  const ferry__part *pt = &m->parts[part];
  const ferry__var *v = &m->vars[var];
  if ((rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err)))
    return rc;
  if (nrows == 0)
    return 0;
  zpart *p = NULL;
  if ((rc = acquire(io, part, &p, err)) < 0)
    return rc;
  if (v->ragged && p->v[var].z.vlen) /* variable-length (vlen.c), native */
    return ferry__zarr_vlen_read(&p->v[var], p->store, v->name, io->b.rank, row,
                                 nrows, v->row_bytes, pt->roff[var], buf, err);
  const int64_t r0 = row, n0 = nrows;
  if (v->ragged) { /* an AnnData CSR matrix: its rows' values, a run */
    const int64_t *o = pt->roff[var];
    int64_t e0 = o[row];
    nrows = o[row + nrows] - e0;
    row = e0;
  }
#ifdef HAVE_NCZARR
  if (p->ncid >= 0 && !v->ragged)
    rc = ferry__zarr_nc_read(&p->v[var], p->store, v->name, io->b.rank, row,
                             nrows, v->row_bytes, buf, err);
  else
#endif
    rc = ferry__zarr_native_read(&p->v[var], p->store, v->name, io->b.rank, row,
                                 nrows, v->row_bytes, buf, err);
  if (rc < 0 || !ferry__anndata_checks(v))
    return rc;
  /* a matrix's indices or a column's codes, checked once decoded */
  if ((rc = ferry__zarr_settle(&io->dec, rc, err)) < 0)
    return rc;
  return ferry__anndata_values_ok(v, pt, var, p->store, "array", io->b.rank, r0,
                                  n0, buf, err);
}

/* Deferred reads (ferry__io_params.defer): settle the queued chunks. */
static int z_io_wait(ferry__io *io, ferry__err *err) {
  return ferry__zarr_settle(&io->dec, 0, err);
}

const ferry__backend ferry__backend_zarr = {
    .name = "zarr",
    .version = 1,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = ZREC_VERSION,
    .probe = z_probe,
    .accepts = "a Zarr store: a directory with .zarray, .zgroup, "
               ".zattrs or zarr.json, or named *.zarr",
    .describe = ferry__zarr_describe,
    .io_open = z_io_open,
    .io_read = z_io_read,
    .io_close = z_io_close,
    .io_wait = z_io_wait,
};
