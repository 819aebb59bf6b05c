/*
 * backends/tar.h - the tar member scan and the WebDataset sample index of
 * tar.c, shared with the unit tests and the fuzz harness (fuzz_tar.c): both
 * are pure functions over a byte source (a shard's descriptor, or a buffer
 * in memory), so the harness needs no file and no MPI.
 */
#ifndef FERRY_TAR_H
#define FERRY_TAR_H

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

/** Where the bytes come from: read n bytes at off into buf, *got the bytes
 *  read (fewer only at the end); 0, or an errno value.  size bounds every
 *  length read from the bytes; path names them in messages. */
typedef struct ferry__tar_src {
  int (*read)(void *ctx, int64_t off, void *buf, size_t n, size_t *got);
  void *ctx;
  int64_t size;
  const char *path;
} ferry__tar_src;

/** A ferry__tar_src over n bytes in memory (ctx: a ferry__tar_mem). */
typedef struct ferry__tar_mem {
  const unsigned char *p;
  size_t n;
} ferry__tar_mem;
int ferry__tar_mem_read(void *ctx, int64_t off, void *buf, size_t n,
                        size_t *got);

/* The longest member name kept (a PAX path or GNU long name may be longer:
 * refused), and the largest PAX or long-name payload read. */
enum { FERRY__TAR_NAME_MAX = 4096, FERRY__TAR_EXT_MAX = 1 << 20 };

/** One regular member, as the scan hands it over. */
typedef struct ferry__tar_member {
  const char *name; /* not NUL-terminated: name_len bytes */
  size_t name_len;
  int64_t header; /* its first header block (its PAX header's or GNU long
                   * name's when one precedes it; Python's TarInfo.offset) */
  int64_t data;   /* its payload */
  int64_t size;   /* the payload's bytes (inside the source: checked) */
  /* the payload's first head_len bytes (fewer than size when the scan's
   * read window ends first; 0: none), valid during the call only */
  const unsigned char *head;
  size_t head_len;
} ferry__tar_member;

typedef int (*ferry__tar_member_fn)(void *ctx, const ferry__tar_member *mb,
                                    ferry__err *err);

/**
 * Walk the headers of a tar archive (ustar, GNU and PAX), reading headers
 * only (payloads skipped by offset, but for PAX and long-name payloads):
 * checksum verified, sizes octal or base-256, PAX "path" and "size", GNU
 * 'L' long names; fn is called for each regular member (type '0', '\0' or
 * '7'); other members are counted in *skipped.  *end receives the offset
 * of the end-of-archive block.  0, or FERRY_EFORMAT / FERRY_EIO naming the
 * source, the member and the offset (fn's error passed on).
 */
int ferry__tar_scan(const ferry__tar_src *s, ferry__tar_member_fn fn, void *ctx,
                    int64_t *skipped, int64_t *end, ferry__err *err);

/* What a variable's payloads are. */
enum { FERRY__TAR_BYTES = 0, FERRY__TAR_INT = 1, FERRY__TAR_NPY = 2 };

/** One extension of a shard: a variable. */
typedef struct ferry__tar_var {
  char *ext;    /* lower-cased */
  int kind;     /* FERRY__TAR_BYTES, FERRY__TAR_INT or FERRY__TAR_NPY */
  int64_t *pos; /* [n] bytes: the payload's offset; int: the value;
                 * npy: the offset of the array's values (after its .npy
                 * header) */
  int64_t *len; /* [n] the payload's bytes (npy: the values' bytes, from
                 * the shape); -1: the sample has none */
  /* FERRY__TAR_NPY: what every sample's array holds, from the first
   * sample's header (npy_first; -1: none yet) and checked against every
   * other's: the dtype, byte order (swapped: not the host's), and shape;
   * the samples' shapes differ in their first dimension only, so sample
   * i holds len[i] / npy_row_bytes rows of npy_shape[1..npy_ndim) */
  ferry_dtype npy_dtype;
  int npy_swapped, npy_ndim;
  int64_t npy_shape[FERRY_MAX_DIMS];
  int64_t npy_row_bytes; /* one row after the first dimension (ndim 0: the
                          * element), > 0 */
  int64_t npy_first;
} ferry__tar_var;

/** A shard's samples (ferry__tar_index_build). */
typedef struct ferry__tar_index {
  int64_t n;      /* samples */
  int64_t *start; /* [n] the header offset of each sample's first member */
  int64_t end;    /* the end-of-archive block's offset */
  int nvars;
  ferry__tar_var *vars;
  int64_t skipped; /* members skipped: not regular files, or __*__ */
  int64_t ignored; /* members of extensions not selected */
  int64_t members; /* members served */
  /* building state (tar.c) */
  int64_t cap;
  char *keys; /* every key, NUL-terminated, one after the other */
  size_t keys_len, keys_cap;
  int64_t *keyat; /* [n] offset of sample i's key in keys */
  int64_t *slots; /* hash set of keys: sample index + 1, 0 empty */
  int64_t nslots;
  const char *select; /* comma-separated extensions, or NULL: all */
  const ferry__tar_src *src;
} ferry__tar_index;

/**
 * The WebDataset samples of a tar archive: a sample is the run of
 * consecutive members whose names share a key (the name up to the first
 * dot of its base name); the rest of the name, lower-cased, is the
 * extension, a variable.  Members named __*__ are skipped.  select
 * (comma-separated, NULL or "": every extension) keeps those extensions
 * only.  cls, cls2, index and id hold ASCII integers (FERRY__TAR_INT);
 * npy and every extension ending in .npy (seg.npy) a .npy file
 * (FERRY__TAR_NPY), its header parsed (ferry__npy_parse_array_header,
 * bounded by the member): the arrays of a variable have one dtype and byte
 * order, and shapes that differ in the first dimension only; fortran
 * order, object dtypes, a header past the member, values past it, an empty
 * row (a 0 in a dimension after the first) refused.
 * Refused (FERRY_EFORMAT, naming the source, member and offset): a name
 * whose base name has no dot, starts with one or ends with one; a key seen
 * before and not adjacent; a sample with an extension twice; a sample
 * without a member of a (selected) extension another sample has, unless
 * missing (comma-separated EXT=VALUE, NULL: none) gives that extension a
 * value: an integer for the integer extensions, nothing (EXT=: an empty
 * sample) for a bytes extension, and for an npy extension whose arrays
 * have a first dimension (0 rows), any other VALUE FERRY_EINVAL; an integer
 * member that is not one.  Frees *x on error.
 */
int ferry__tar_index_build(const ferry__tar_src *s, const char *select,
                           const char *missing, ferry__tar_index *x,
                           ferry__err *err);
void ferry__tar_index_free(ferry__tar_index *x);

/**
 * A sidecar SHARD.idx (Megatron-Energon's layout: one little-endian
 * uint64 per sample, the header offset of its first member, then the
 * offset where the members end) checked against x: 0 when it matches,
 * 1 when it does not (*why says how), or a negative code when it cannot
 * be read.
 */
int ferry__tar_sidecar_check(const unsigned char *p, size_t n,
                             const ferry__tar_index *x, char *why,
                             size_t why_len);

#endif /* FERRY_TAR_H */
