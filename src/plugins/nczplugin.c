/*
 * nczplugin.c - one NCZarr filter plugin: the decoder of one numcodecs codec
 * (codec.c), wrapped the way netCDF-C loads codecs for Zarr stores.
 *
 * This file is compiled once per codec with FERRY_PLUGIN_KIND set (see
 * src/plugins/local.mk); each build is one shared object,
 * lib__nczferry_NAME.so, installed in $(pkglibdir)/plugins.  netCDF-C
 * (4.8 to 4.9.x) loads every shared object in the directories of
 * HDF5_PLUGIN_PATH when it first needs a filter (NCZ_load_all_plugins):
 * one library holds one filter, found through three entry points,
 *
 *   H5PLget_plugin_type()  -> H5PL_TYPE_FILTER
 *   H5PLget_plugin_info()  -> the HDF5 filter class (H5Z_class2_t): its id
 *                             and the function that decodes a chunk
 *   NCZ_get_codec_info()   -> the NCZarr codec class (NCZ_codec_t): the
 *                             numcodecs id ("blosc") and the conversions
 *                             between the .zarray JSON and the HDF5
 *                             parameters
 *
 * and netCDF matches a .zarray codec to the plugin by the numcodecs id.
 * Later netCDF-C versions only consider files whose names end in ".so",
 * hence the names.  The ids are private (codec.h says why).
 *
 * The structures are declared here with the layout of netCDF-C's
 * netcdf_filter_build.h and HDF5's H5Zpublic.h/H5PLextern.h: Debian's
 * netCDF-C 4.9.0 installs netcdf_filter_build.h without the
 * netcdf_filter_hdf5_build.h it includes, so the header cannot be used as
 * shipped, and the plugins must not need HDF5's headers either.
 *
 * Only decoding is provided; ferry never writes Zarr.  Everything but the
 * three entry points is hidden (-fvisibility=hidden): netCDF loads plugins
 * with RTLD_GLOBAL and unloads some of them again, so a plugin must never
 * bind to another plugin's copy of the codec functions.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "codecs/codec.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FERRY_PLUGIN_KIND
#error FERRY_PLUGIN_KIND must name the codec this plugin decodes
#endif

#define PLUGIN_EXPORT __attribute__((visibility("default")))

/* netCDF-C error codes the codec class may return (netcdf.h). */
#define PL_NC_NOERR 0
#define PL_NC_ENOMEM (-61)
#define PL_NC_EFILTER (-132)

/* ---- HDF5's filter ABI (H5Zpublic.h, H5PLextern.h) --------------------- */

typedef int64_t pl_hid_t; /* hid_t since HDF5 1.10 */
typedef enum { PL_H5PL_TYPE_ERROR = -1, PL_H5PL_TYPE_FILTER = 0 } pl_h5pl_type;
#define PL_H5Z_CLASS_T_VERS 1
#define PL_H5Z_FLAG_REVERSE 0x0100u

typedef struct pl_h5z_class2 {
  int version;
  int id;
  unsigned encoder_present;
  unsigned decoder_present;
  const char *name;
  int (*can_apply)(pl_hid_t dcpl, pl_hid_t type, pl_hid_t space);
  int (*set_local)(pl_hid_t dcpl, pl_hid_t type, pl_hid_t space);
  size_t (*filter)(unsigned flags, size_t cd_nelmts, const unsigned cd[],
                   size_t nbytes, size_t *buf_size, void **buf);
} pl_h5z_class2;

/* ---- netCDF-C's codec ABI (netcdf_filter_build.h) ---------------------- */

#define PL_NCZ_CODEC_CLASS_VER 1
#define PL_NCZ_CODEC_HDF5 1

typedef struct pl_ncz_codec {
  int version;
  int sort;
  const char *codecid;
  unsigned int hdf5id;
  void (*initialize)(void);
  void (*finalize)(void);
  int (*codec_to_hdf5)(const char *codec, size_t *nparamsp, unsigned **paramsp);
  int (*hdf5_to_codec)(size_t nparams, const unsigned *params, char **codecp);
  int (*modify_parameters)(int ncid, int varid, size_t *vnparamsp,
                           unsigned **vparamsp, size_t *wnparamsp,
                           unsigned **wparamsp);
} pl_ncz_codec;

/* ---- The filter ------------------------------------------------------- */

/* HDF5's convention: on success replace *buf (freed) by the output and
 * return its size; return 0 on failure, leaving *buf alone. */
static size_t pl_filter(unsigned flags, size_t cd_nelmts, const unsigned cd[],
                        size_t nbytes, size_t *buf_size, void **buf) {
  void *out = NULL;
  size_t outlen = 0;
  const char *why = NULL;
  if (!(flags & PL_H5Z_FLAG_REVERSE))
    return 0; /* decoding only */
  unsigned param = cd_nelmts > 0 ? cd[0] : 0;
  if (ferry__codec_decode(FERRY_PLUGIN_KIND, param, *buf, nbytes, 0, &out,
                          &outlen, &why) < 0)
    return 0;
  free(*buf);
  *buf = out;
  *buf_size = outlen;
  return outlen;
}

static const pl_h5z_class2 pl_class = {
    .version = PL_H5Z_CLASS_T_VERS,
    .id = (int)(FERRY__CODEC_H5ID_BASE + FERRY_PLUGIN_KIND),
    .encoder_present = 0,
    .decoder_present = 1,
    .name = "ferry numcodecs decoder",
    .can_apply = NULL,
    .set_local = NULL,
    .filter = pl_filter,
};

/* ---- JSON <-> HDF5 parameters ----------------------------------------- */

/* One parameter: the shuffle element size (numcodecs' default 4); the
 * other codecs decode from self-describing data and take none. */
static int pl_codec_to_hdf5(const char *codec, size_t *nparamsp,
                            unsigned **paramsp) {
  *nparamsp = 0;
  *paramsp = NULL;
  if (FERRY_PLUGIN_KIND != FERRY__CODEC_SHUFFLE)
    return PL_NC_NOERR;
  json_error_t jerr;
  json_t *j = json_loads(codec, 0, &jerr);
  json_t *es = j ? json_object_get(j, "elementsize") : NULL;
  json_int_t v = es ? json_integer_value(es) : 4;
  int ok = j && (!es || json_is_integer(es)) && v >= 0 && v <= 65535;
  json_decref(j);
  if (!ok)
    return PL_NC_EFILTER;
  unsigned *p = malloc(sizeof *p);
  if (!p)
    return PL_NC_ENOMEM;
  p[0] = (unsigned)v;
  *nparamsp = 1;
  *paramsp = p;
  return PL_NC_NOERR;
}

static int pl_hdf5_to_codec(size_t nparams, const unsigned *params,
                            char **codecp) {
  char text[96];
  if (FERRY_PLUGIN_KIND == FERRY__CODEC_SHUFFLE && nparams > 0)
    snprintf(text, sizeof text, "{\"id\": \"shuffle\", \"elementsize\": %u}",
             params[0]);
  else
    snprintf(text, sizeof text, "{\"id\": \"%s\"}",
             ferry__codec_name(FERRY_PLUGIN_KIND));
  *codecp = strdup(text);
  return *codecp ? PL_NC_NOERR : PL_NC_ENOMEM;
}

static const pl_ncz_codec pl_codec = {
    .version = PL_NCZ_CODEC_CLASS_VER,
    .sort = PL_NCZ_CODEC_HDF5,
    .codecid = NULL, /* set by NCZ_get_codec_info (a const table) */
    .hdf5id = FERRY__CODEC_H5ID_BASE + FERRY_PLUGIN_KIND,
    .initialize = NULL,
    .finalize = NULL,
    .codec_to_hdf5 = pl_codec_to_hdf5,
    .hdf5_to_codec = pl_hdf5_to_codec,
    .modify_parameters = NULL,
};

/* ---- Entry points ----------------------------------------------------- */

PLUGIN_EXPORT pl_h5pl_type H5PLget_plugin_type(void);
PLUGIN_EXPORT const void *H5PLget_plugin_info(void);
PLUGIN_EXPORT const void *NCZ_get_codec_info(void);

pl_h5pl_type H5PLget_plugin_type(void) { return PL_H5PL_TYPE_FILTER; }

const void *H5PLget_plugin_info(void) { return &pl_class; }

const void *NCZ_get_codec_info(void) {
  static pl_ncz_codec codec;
  if (!codec.codecid) {
    codec = pl_codec;
    codec.codecid = ferry__codec_name(FERRY_PLUGIN_KIND);
  }
  return &codec;
}
