/*
 * backends/mds.h - MosaicML Streaming's MDS format (docs/images.md, decision
 * 0060): the parsers of mds_format.c, kept apart from the backend (mds.c)
 * so that tests/fuzz/fuzz_mds.c can hand them arbitrary bytes.
 *
 * An MDS dataset is a directory: index.json (version 2) lists the shards,
 * each shard.NNNNN.mds (or shard.NNNNN.mds.zstd, compressed as a whole) is
 * uint32 num_samples, num_samples + 1 uint32 offsets (where each sample
 * starts, the last where the file ends), the shard's configuration as JSON
 * (column_names, column_encodings, column_sizes), then the samples.  A
 * sample is a uint32 size for each variable-size column, then every
 * column's bytes in column order.  All integers are little-endian.
 */
#ifndef FERRY_MDS_H
#define FERRY_MDS_H

#include "backends/backend.h"

#include <stddef.h>
#include <stdint.h>

/* How a column is served (ferry__mds_col.kind); 0: not served. */
enum {
  FERRY__MDS_BYTES = 1, /* ragged uint8: the column's bytes as stored */
  FERRY__MDS_SCALAR,    /* one value of a fixed-size dtype per sample */
  FERRY__MDS_ARRAY,     /* ndarray:DTYPE:SHAPE: a dense row of SHAPE */
  FERRY__MDS_DYNARRAY,  /* ndarray[:DTYPE]: ragged DTYPE, flattened */
  FERRY__MDS_STRINT,    /* str_int: int64 parsed at describe */
  FERRY__MDS_STRFLOAT   /* str_float: float64 parsed at describe */
};

/* Bounds on what a shard may state (a larger one is refused). */
#define FERRY__MDS_MAX_COLS 1024
#define FERRY__MDS_MAX_CONFIG (16 << 20)
#define FERRY__MDS_MAX_INDEX ((size_t)1 << 30)
/* A dynamic ndarray's dimensions after the first kept as a ragged row's
 * inner shape: at most this many (a padded batch is [B, W, inner...]). */
#define FERRY__MDS_MAX_INNER (FERRY_MAX_DIMS - 2)

typedef struct ferry__mds_col {
  char *name;        /* column_names[c] */
  char *enc;         /* column_encodings[c] */
  int kind;          /* FERRY__MDS_*; 0: skipped (why says why) */
  const char *why;   /* static: why the column is not served */
  ferry_dtype dtype; /* of the values */
  int64_t fixed;     /* bytes of a fixed-size column; -1: a size per sample */
  int ndim;          /* FERRY__MDS_ARRAY: its shape */
  int64_t shape[FERRY_MAX_DIMS];
  int dtype_byte;  /* FERRY__MDS_DYNARRAY: each value starts with its dtype */
  int dtype_known; /* FERRY__MDS_DYNARRAY with dtype_byte: seen a sample */
  /* FERRY__MDS_DYNARRAY (selected): every sample's number of dimensions
   * (0: no sample yet; samples of another number are refused), where the
   * first sample's value starts (its dtype byte or shape prefix), and
   * whether every sample's dimensions after the first equal inner[]
   * (dyn_ndim - 1 of them, at most FERRY__MDS_MAX_INNER; 0 otherwise). */
  int dyn_ndim;
  int64_t dyn_at;
  int inner_same;
  int64_t inner[FERRY_MAX_DIMS];
  int selected; /* tables built (vars lists it, or vars is empty) */
  int64_t *pos; /* [n]: where the values start in the shard, or the
                 * parsed value (STRINT: int64, STRFLOAT: float64 bits) */
  int64_t *len; /* [n]: bytes of the values (BYTES, DYNARRAY) */
} ferry__mds_col;

typedef struct ferry__mds_shard {
  int64_t n;      /* samples */
  int64_t size;   /* the (decompressed) shard's bytes */
  int64_t config; /* bytes of the JSON configuration */
  int ncols;
  ferry__mds_col *cols;
  int64_t skipped; /* columns not served */
} ferry__mds_shard;

/* Where a shard's bytes come from: read n bytes at off into buf, *got the
 * bytes read (fewer only at the end); 0, or an errno. */
typedef struct ferry__mds_src {
  int (*read)(void *ctx, int64_t off, void *buf, size_t n, size_t *got);
  void *ctx;
  int64_t size;     /* the shard's bytes (decompressed) */
  const char *path; /* for messages */
  const char *vars; /* the vars option (NULL: every column) */
} ferry__mds_src;

/* A shard held in memory (the fuzz harness, a decompressed shard). */
typedef struct ferry__mds_mem {
  const unsigned char *p;
  size_t n;
} ferry__mds_mem;
int ferry__mds_mem_read(void *ctx, int64_t off, void *buf, size_t n,
                        size_t *got);

/**
 * Read the shard's header, configuration and every sample's column sizes
 * (and the prefixes of dynamic ndarrays, the digits of str_int/str_float),
 * each length bounded by the sample's and the shard's end: *out holds a
 * table per selected column.  A column listed in src->vars that cannot be
 * served is refused; one not listed is skipped.  0, or FERRY_EFORMAT
 * (FERRY_ENOTSUP, FERRY_ENOMEM, FERRY_EIO) naming file, column, sample and
 * offset; *out is then empty.
 */
int ferry__mds_shard_scan(const ferry__mds_src *src, ferry__mds_shard *out,
                          ferry__err *err);
void ferry__mds_shard_free(ferry__mds_shard *s);

/* A digest index.json lists for a file: the algorithm as Streaming names
 * it ("sha1", "xxh64", ...) and its hex digest. */
typedef struct ferry__mds_hash {
  char *algo;
  char *hex;
} ferry__mds_hash;

/* Bounds on a file's digests (more are refused). */
#define FERRY__MDS_MAX_HASHES 32
#define FERRY__MDS_MAX_HEX 256

/* One shard of index.json. */
typedef struct ferry__mds_entry {
  char *raw;         /* raw_data.basename */
  char *zip;         /* zip_data.basename, NULL when none */
  char *compression; /* "zstd", "zstd:7", ...; NULL when none */
  int64_t raw_bytes, zip_bytes, samples;
  /* raw_data.hashes and zip_data.hashes: the digests of the raw and the
   * compressed file (none when the writer was given no hashes) */
  int nraw_hash, nzip_hash;
  ferry__mds_hash *raw_hash, *zip_hash;
} ferry__mds_entry;

typedef struct ferry__mds_index {
  int64_t n;
  ferry__mds_entry *e;
} ferry__mds_index;

/**
 * Parse index.json (text[0..len), path for messages): version 2, a list of
 * shards of format "mds", each with raw_data {basename, bytes} (a plain
 * file name: no '/', not "." or "..") and zip_data null or {basename,
 * bytes}, and samples; each file's hashes, when present, an object of at
 * most 32 algorithm names (1 to 32 bytes) to hex digests (1 to 256 hex
 * digits).  Returns 1 with *out filled, 0 when the text is not
 * a MosaicML Streaming index (no "shards" list: another tool's
 * index.json), or a negative code naming the file and the shard.
 */
int ferry__mds_index_parse(const char *text, size_t len, const char *path,
                           ferry__mds_index *out, ferry__err *err);
void ferry__mds_index_free(ferry__mds_index *x);

#endif /* FERRY_MDS_H */
