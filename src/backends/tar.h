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
enum { FERRY__TAR_BYTES = 0, FERRY__TAR_INT = 1 };

/** One extension of a shard: a variable. */
typedef struct ferry__tar_var {
  char *ext;    /* lower-cased */
  int kind;     /* FERRY__TAR_BYTES or FERRY__TAR_INT */
  int64_t *pos; /* [n] bytes: the payload's offset; int: the value   */
  int64_t *len; /* [n] the payload's bytes; -1: the sample has none  */
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
 * only.  cls, cls2, index and id hold ASCII integers (FERRY__TAR_INT).
 * Refused (FERRY_EFORMAT, naming the source, member and offset): a name
 * whose base name has no dot, starts with one or ends with one; a key seen
 * before and not adjacent; a sample with an extension twice; a sample
 * without a member of a (selected) extension another sample has, unless
 * missing (comma-separated EXT=VALUE, NULL: none) gives that extension a
 * value: an integer for the integer extensions, nothing (EXT=: an empty
 * sample) for a bytes extension, any other VALUE FERRY_EINVAL; an integer
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
