/*
 * codec.h - every decompressor ferry has, in one place for every backend:
 * the Zarr v2 (numcodecs) codecs, used by the NCZarr filter plugins
 * (src/plugins/nczplugin.c, one shared object per codec, loaded by
 * netCDF-C) and by the zarr backend's own chunk reader
 * (src/backends/zarr/native.c), and the page codecs of Parquet
 * (src/backends/parquet/pages.c): snappy (libsnappy), gzip of several
 * members, bare and Hadoop-framed LZ4.  Decoding only: ferry never writes.
 *
 * Each decoder checks what it decodes against what it was told to expect
 * and fails rather than hand back bytes it did not produce: a truncated or
 * corrupt chunk or page is an error, never data.
 */
#ifndef FERRY_CODEC_H
#define FERRY_CODEC_H

#include <stddef.h>

/* Codec kinds; the order is the one of ferry__codec_names.  The kinds
 * before FERRY__CODEC_NUMCODECS are numcodecs ids (what a .zarray names,
 * and what ferry__codec_kind finds); those after are the formats of
 * Parquet pages, named for messages only, so that a Zarr store cannot ask
 * for them. */
enum {
  FERRY__CODEC_NONE = -1,
  FERRY__CODEC_BLOSC = 0,
  FERRY__CODEC_ZLIB,
  FERRY__CODEC_GZIP,
  FERRY__CODEC_ZSTD,
  FERRY__CODEC_LZ4,
  FERRY__CODEC_SHUFFLE,
  FERRY__CODEC_NUMCODECS,
  /* snappy's raw format (a varint decoded size, then elements) */
  FERRY__CODEC_SNAPPY = FERRY__CODEC_NUMCODECS,
  /* one LZ4 block, no header: the caller knows the decoded size */
  FERRY__CODEC_LZ4_RAW,
  /* Hadoop's LZ4 frames (big-endian sizes, then a block) or one bare block */
  FERRY__CODEC_LZ4_HADOOP,
  /* the LZ4 frame format (lz4frame.h: magic, frame descriptor, blocks),
   * Arrow IPC's LZ4_FRAME body compression */
  FERRY__CODEC_LZ4_FRAME,
  FERRY__CODEC_COUNT
};

/* The HDF5 filter ids of ferry's NCZarr plugins.  They lie in HDF5's range
 * for unregistered filters on purpose: the byte formats of numcodecs' lz4 and
 * gzip differ from the registered HDF5 filters 32004 and 1, so reusing those
 * ids would let HDF5 (the hdf5 backend, in the same process, scans the same
 * HDF5_PLUGIN_PATH) decode an HDF5 file with the wrong format. */
#define FERRY__CODEC_H5ID_BASE 36608u

/** Name of a codec kind (the numcodecs id, "blosc"; "snappy" ...), or NULL. */
const char *ferry__codec_name(int kind);
/** Kind of a numcodecs id, or FERRY__CODEC_NONE when ferry does not know it
 * (the Parquet-only kinds are not numcodecs ids: NONE for them too). */
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

/**
 * Decode a Parquet page: in[0..inlen) with codec kind into exactly
 * out[0..outlen), outlen being the page header's uncompressed size (0
 * allowed: an empty page).  The kinds and their Parquet formats:
 *   FERRY__CODEC_SNAPPY      snappy's raw format (libsnappy)
 *   FERRY__CODEC_GZIP        gzip members one after another (RFC 1952
 *                            allows several; Arrow and parquet-mr read them),
 *                            or a zlib stream
 *   FERRY__CODEC_ZSTD        Zstandard frames
 *   FERRY__CODEC_LZ4_RAW     one bare LZ4 block
 *   FERRY__CODEC_LZ4_HADOOP  Hadoop's LZ4 frames when they fit exactly,
 *                            else one bare block (Parquet's legacy LZ4)
 * Any other kind fails.  Bytes past what decodes to outlen are not read
 * (as Arrow does).  0, or -1 with why set to a static reason that names
 * the codec ("gzip data does not decompress to the page's stated size");
 * out then holds unspecified bytes, never to be served.  Thread-safe.
 */
int ferry__codec_decode_page(int kind, const void *in, size_t inlen, void *out,
                             size_t outlen, const char **why);

/**
 * The most bytes inlen stored bytes of codec kind can decode to: the
 * format's largest expansion (deflate 1032:1, zstd 32768:1, snappy 22:1,
 * LZ4 256:1), plus a little; SIZE_MAX for shuffle, blosc and an unknown
 * kind (their decoders check their own headers).  Lets a caller judge a
 * size stated in a file before it allocates a buffer of that size.
 */
size_t ferry__codec_max_decoded(int kind, size_t inlen);

#endif /* FERRY_CODEC_H */
