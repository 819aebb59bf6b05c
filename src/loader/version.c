/*
 * version.c - what this libferry is: its version, its compiled-in features,
 * and the build report of ferry_build_info(): for each library ferry uses
 * (MPI, HDF5, netCDF-C, jansson, the Zarr codecs' libraries, CUDA, NCCL) the
 * version its headers had when ferry was compiled and the version the
 * library reports at run time.
 *
 * Why both: on a cluster the two differ more often than one would hope (a
 * module loaded at build time, another at run time; an LD_LIBRARY_PATH left
 * over), and "which MPI did it really call" is the first question of every
 * support ticket.  The run-time side asks each library itself
 * (MPI_Get_library_version, H5get_libversion, nc_inq_libvers, ...), never a
 * file on disk.  This is the one util/ file that looks up the layers: it
 * asks the GPU stage (ferry__gpu_versions) and the backend registry
 * (ferry_backend_name) what they found.
 */
#include "config.h"
#include "gpu/gpu.h"
#include "util/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_HDF5
#include <hdf5.h>
#endif
#ifdef HAVE_NETCDF
#include <netcdf.h>
#include <netcdf_meta.h>
#endif
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif
/* Only the version macros are wanted from the CUDA and NCCL headers; a build
 * that loads CUDA at run time may not have them, hence __has_include. */
#if defined(HAVE_CUDA) && defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#endif
#endif
#if defined(HAVE_NCCL) && defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#endif
#endif

const char *ferry_version(void) { return FERRY_VERSION_STRING; }

int ferry_version_number(void) { return FERRY_VERSION_NUMBER; }

const char *ferry_features(void) {
  /* Only what this library can do: a dependency configure found does not
   * count until the backend or stage using it is compiled in.  "cuda" and
   * "nccl" say the GPU stage is built; the libraries themselves are loaded
   * at run time (gpu/cudalib.c), so whether they are usable on this node
   * is ferry__gpu_library_status's answer. */
  return "mpiio"
#ifdef HAVE_HDF5
         " hdf5"
#endif
         " zarr" /* always: its native reader needs jansson only */
#ifdef HAVE_NCZARR
         " nczarr" /* zarr_reader=netcdf is available */
#endif
#ifdef HAVE_CUDA
         " cuda"
#ifdef HAVE_NCCL
         " nccl"
#endif
#endif
      ;
}

/* ---- The build report ---------------------------------------------------- */

#define NOT_BUILT "not built"

/* One library: its name in the table, its key in the JSON, the version
 * compiled against (NULL: not built in) and the one found (NULL: none). */
typedef struct lib_row {
  const char *name, *key;
  char built[96];
  char found[MPI_MAX_LIBRARY_VERSION_STRING + 32];
  int has_built, has_found;
} lib_row;

enum {
  ROW_MPI,
  ROW_HDF5,
  ROW_NETCDF,
  ROW_JANSSON,
  ROW_BLOSC,
  ROW_ZSTD,
  ROW_LZ4,
  ROW_ZLIB,
  ROW_CUDART,
  ROW_CUDADRV,
  ROW_NCCL,
  NROWS
};

static void set(char *dst, size_t len, int *flag, const char *s) {
  if (s == NULL)
    return;
  snprintf(dst, len, "%s", s);
  /* One line each: trailing blanks and newlines go (MPICH's and netCDF's
   * strings end with them). */
  size_t n = strlen(dst);
  while (n > 0 && (dst[n - 1] == '\n' || dst[n - 1] == ' ' ||
                   dst[n - 1] == '\t' || dst[n - 1] == '$'))
    dst[--n] = '\0';
  *flag = 1;
}
#define BUILT(r, s) set((r)->built, sizeof(r)->built, &(r)->has_built, (s))
#define FOUND(r, s) set((r)->found, sizeof(r)->found, &(r)->has_found, (s))

/* CUDA's 12040 is "12.4"; NCCL's 21803 (2.9 and later) or 2708 is "2.18.3"
 * or "2.7.8". */
static void cuda_string(char *buf, size_t len, int v) {
  snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}
static void nccl_string(char *buf, size_t len, int v) {
  if (v >= 10000)
    snprintf(buf, len, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  else
    snprintf(buf, len, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
}

static void mpi_row(lib_row *r) {
  char b[96];
#if defined(OMPI_MAJOR_VERSION)
  snprintf(b, sizeof b, "Open MPI %d.%d.%d (MPI %d.%d)", OMPI_MAJOR_VERSION,
           OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, MPI_VERSION,
           MPI_SUBVERSION);
#elif defined(MPICH_VERSION)
  snprintf(b, sizeof b, "MPICH %s (MPI %d.%d)", MPICH_VERSION, MPI_VERSION,
           MPI_SUBVERSION);
#else
  snprintf(b, sizeof b, "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
#endif
  BUILT(r, b);
  /* Both calls may be made before MPI_Init and after MPI_Finalize. */
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int n = 0, major = 0, minor = 0;
  if (MPI_Get_library_version(lib, &n) == MPI_SUCCESS &&
      MPI_Get_version(&major, &minor) == MPI_SUCCESS) {
    /* MPICH's string spans lines: "(MPI x.y)" goes after the first, which
     * is all the table shows. */
    char *rest = strchr(lib, '\n');
    if (rest != NULL)
      *rest++ = '\0';
    char f[sizeof r->found];
    snprintf(f, sizeof f, "%s (MPI %d.%d)%s%s", lib, major, minor,
             rest ? "\n" : "", rest ? rest : "");
    FOUND(r, f);
  }
}

static void hdf5_netcdf_rows(lib_row *h, lib_row *nc) {
  char b[96];
#ifdef HAVE_HDF5
  snprintf(b, sizeof b, "%d.%d.%d", H5_VERS_MAJOR, H5_VERS_MINOR,
           H5_VERS_RELEASE);
  BUILT(h, b);
  unsigned maj = 0, min = 0, rel = 0;
  if (H5get_libversion(&maj, &min, &rel) >= 0) {
    snprintf(b, sizeof b, "%u.%u.%u", maj, min, rel);
    FOUND(h, b);
  }
#else
  (void)h;
#endif
#ifdef HAVE_NETCDF
  BUILT(nc, NC_VERSION);
  FOUND(nc, nc_inq_libvers());
#else
  (void)nc;
#endif
  (void)b;
}

static void codec_rows(lib_row *rows) {
#ifdef HAVE_BLOSC
  BUILT(&rows[ROW_BLOSC], BLOSC_VERSION_STRING);
  FOUND(&rows[ROW_BLOSC], blosc_get_version_string());
#endif
#ifdef HAVE_ZSTD
  BUILT(&rows[ROW_ZSTD], ZSTD_VERSION_STRING);
  FOUND(&rows[ROW_ZSTD], ZSTD_versionString());
#endif
#ifdef HAVE_LZ4
  BUILT(&rows[ROW_LZ4], LZ4_VERSION_STRING);
  FOUND(&rows[ROW_LZ4], LZ4_versionString());
#endif
#ifdef HAVE_ZLIB
  BUILT(&rows[ROW_ZLIB], ZLIB_VERSION);
  FOUND(&rows[ROW_ZLIB], zlibVersion());
#endif
  (void)rows;
}

static void gpu_rows(lib_row *rows) {
  char b[32];
#ifdef HAVE_CUDA
#ifdef CUDART_VERSION
  cuda_string(b, sizeof b, CUDART_VERSION);
  BUILT(&rows[ROW_CUDART], b);
#else
  BUILT(&rows[ROW_CUDART], "yes");
#endif
  /* The driver must support at least the runtime compiled against. */
  BUILT(&rows[ROW_CUDADRV], ">= runtime");
#endif
#ifdef HAVE_NCCL
#ifdef NCCL_VERSION_CODE
  nccl_string(b, sizeof b, NCCL_VERSION_CODE);
  BUILT(&rows[ROW_NCCL], b);
#else
  BUILT(&rows[ROW_NCCL], "yes");
#endif
#endif
  int rt = -1, drv = -1, nccl = -1;
  ferry__gpu_versions(&rt, &drv, &nccl);
  if (rt > 0) {
    cuda_string(b, sizeof b, rt);
    FOUND(&rows[ROW_CUDART], b);
  }
  if (drv > 0) {
    cuda_string(b, sizeof b, drv);
    FOUND(&rows[ROW_CUDADRV], b);
  }
  if (nccl > 0) {
    nccl_string(b, sizeof b, nccl);
    FOUND(&rows[ROW_NCCL], b);
  }
}

static void collect(lib_row *rows) {
  static const char *const names[NROWS][2] = {
      [ROW_MPI] = {"MPI", "mpi"},
      [ROW_HDF5] = {"HDF5", "hdf5"},
      [ROW_NETCDF] = {"netCDF-C", "netcdf"},
      [ROW_JANSSON] = {"jansson", "jansson"},
      [ROW_BLOSC] = {"blosc", "blosc"},
      [ROW_ZSTD] = {"zstd", "zstd"},
      [ROW_LZ4] = {"lz4", "lz4"},
      [ROW_ZLIB] = {"zlib", "zlib"},
      [ROW_CUDART] = {"CUDA runtime", "cuda_runtime"},
      [ROW_CUDADRV] = {"CUDA driver", "cuda_driver"},
      [ROW_NCCL] = {"NCCL", "nccl"},
  };
  memset(rows, 0, NROWS * sizeof *rows);
  for (int i = 0; i < NROWS; i++) {
    rows[i].name = names[i][0];
    rows[i].key = names[i][1];
  }
  mpi_row(&rows[ROW_MPI]);
  hdf5_netcdf_rows(&rows[ROW_HDF5], &rows[ROW_NETCDF]);
  BUILT(&rows[ROW_JANSSON], JANSSON_VERSION);
#if JANSSON_VERSION_HEX >= 0x020d00 /* jansson_version_str: 2.13 */
  FOUND(&rows[ROW_JANSSON], jansson_version_str());
#endif
  codec_rows(rows);
  gpu_rows(rows);
}

/* The text table: a header, then one line per library.  A multi-line
 * run-time string (MPICH's) shows its first line only. */
static char *text_report(const lib_row *rows) {
  size_t cap = 512 + NROWS * (sizeof rows[0].built + sizeof rows[0].found);
  char *out = malloc(cap);
  if (out == NULL)
    return NULL;
  size_t n = (size_t)snprintf(out, cap, "%-14s %-26s %s\n", "library",
                              "built against", "found at run time");
  for (int i = 0; i < NROWS && n < cap; i++) {
    const lib_row *r = &rows[i];
    const char *found = r->has_found   ? r->found
                        : r->has_built ? "not found"
                                       : "-";
    int flen = (int)strcspn(found, "\n");
    n += (size_t)snprintf(out + n, cap - n, "%-14s %-26s %.*s\n", r->name,
                          r->has_built ? r->built : NOT_BUILT, flen, found);
  }
  return out;
}

static json_t *str_or_null(int has, const char *s) {
  return has ? json_string(s) : json_null();
}

/* The JSON object: version, backends, features, then libraries: {key:
 * {"name", "built", "found"}} with null for "not built" and "not found". */
static char *json_report(const lib_row *rows) {
  json_t *o = json_object(), *backends = json_array(), *features = json_array(),
         *libs = json_object();
  if (o == NULL || backends == NULL || features == NULL || libs == NULL) {
    json_decref(o), json_decref(backends), json_decref(features);
    json_decref(libs);
    return NULL;
  }
  int bad = json_object_set_new(o, "version", json_string(ferry_version()));
  const char *b;
  for (int i = 0; (b = ferry_backend_name(i)) != NULL; i++)
    bad |= json_array_append_new(backends, json_string(b));
  char feat[128];
  snprintf(feat, sizeof feat, "%s", ferry_features());
  char *save = NULL;
  for (char *t = strtok_r(feat, " ", &save); t; t = strtok_r(NULL, " ", &save))
    bad |= json_array_append_new(features, json_string(t));
  for (int i = 0; i < NROWS; i++) {
    const lib_row *r = &rows[i];
    json_t *l = json_object();
    if (l == NULL) {
      bad = 1;
      continue;
    }
    bad |= json_object_set_new(l, "name", json_string(r->name));
    bad |= json_object_set_new(l, "built", str_or_null(r->has_built, r->built));
    bad |= json_object_set_new(l, "found", str_or_null(r->has_found, r->found));
    bad |= json_object_set_new(libs, r->key, l);
  }
  bad |= json_object_set_new(o, "backends", backends);
  bad |= json_object_set_new(o, "features", features);
  bad |= json_object_set_new(o, "libraries", libs);
  char *s = bad ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}

int ferry_build_info(char *buf, size_t len, int json) {
  if (buf == NULL && len > 0)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_build_info: buf is NULL but len is %zu", len);
  lib_row *rows = calloc(NROWS, sizeof *rows);
  if (rows == NULL)
    return ferry__oom(NULL, -1, NROWS * sizeof *rows,
                      "ferry_build_info's %d libraries", (int)NROWS);
  collect(rows);
  char *s = json ? json_report(rows) : text_report(rows);
  free(rows);
  if (s == NULL) /* the text report's buffer (jansson's: about as much) */
    return ferry__oom(
        NULL, -1, 512 + NROWS * (sizeof rows[0].built + sizeof rows[0].found),
        "ferry_build_info's report");
  size_t n = strlen(s);
  if (len > 0)
    snprintf(buf, len, "%s", s);
  free(s);
  return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}
