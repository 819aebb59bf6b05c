/*
 * codec.h - the Zarr v2 (numcodecs) codecs ferry can decode, shared by the
 * NCZarr filter plugins (src/plugins/nczplugin.c, one shared object per
 * codec, loaded by netCDF-C) and by the zarr backend's own chunk reader
 * (src/backends/zarr/native.c).  Decoding only: ferry never writes Zarr.
 *
 * Each decoder checks what it decodes against what it was told to expect
 * and fails rather than hand back bytes it did not produce: a truncated or
 * corrupt chunk is an error, never data.
 */
#ifndef FERRY_CODEC_H
#define FERRY_CODEC_H

#include <stddef.h>

/* Codec kinds; the order is the one of ferry__codec_names. */
enum {
  FERRY__CODEC_NONE = -1,
  FERRY__CODEC_BLOSC = 0,
  FERRY__CODEC_ZLIB,
  FERRY__CODEC_GZIP,
  FERRY__CODEC_ZSTD,
  FERRY__CODEC_LZ4,
  FERRY__CODEC_SHUFFLE,
  FERRY__CODEC_COUNT
};

/* The HDF5 filter ids of ferry's NCZarr plugins.  They lie in HDF5's range
 * for unregistered filters on purpose: the byte formats of numcodecs' lz4 and
 * gzip differ from the registered HDF5 filters 32004 and 1, so reusing those
 * ids would let HDF5 (the hdf5 backend, in the same process, scans the same
 * HDF5_PLUGIN_PATH) decode an HDF5 file with the wrong format. */
#define FERRY__CODEC_H5ID_BASE 36608u

/** numcodecs id of a codec kind ("blosc"), or NULL. */
const char *ferry__codec_name(int kind);
/** Kind of a numcodecs id, or FERRY__CODEC_NONE when ferry does not know it. */
int ferry__codec_kind(const char *id);
/** 1 when this build decodes kind (its library was found by configure). */
int ferry__codec_available(int kind);

/**
 * Decode in[0..inlen) with codec kind.  param is the shuffle element size
 * (ignored by the others).  expect is the decoded size the caller knows
 * (the chunk's bytes), or 0 when unknown: the output then grows as needed.
 * On success *out is a malloc'd buffer of *outlen bytes (the caller frees)
 * and 0 is returned; otherwise -1 and why holds a short reason ("truncated
 * or corrupt blosc data"; out of memory names the bytes, in a per-thread
 * buffer valid until the thread's next decode).  Thread-safe.
 */
int ferry__codec_decode(int kind, unsigned param, const void *in, size_t inlen,
                        size_t expect, void **out, size_t *outlen,
                        const char **why);

/**
 * Decode in[0..inlen) with codec kind into out[0..outlen), outlen being the
 * decoded size the caller knows (the chunk's bytes, not 0): the size in the
 * codec's header, and the bytes actually decoded, must equal it.  Nothing
 * is allocated except by zstd and zlib's own contexts; out is not read.  On
 * failure -1, why set, and out holds unspecified bytes (never to be served).
 * in and out must not overlap.  Thread-safe.
 */
int ferry__codec_decode_into(int kind, unsigned param, const void *in,
                             size_t inlen, void *out, size_t outlen,
                             const char **why);

#endif /* FERRY_CODEC_H */
