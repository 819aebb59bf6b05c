/*
 * util/util.h - the bottom layer: error records and messages, hashing and
 * the generator, byte order, dtype names, large buffers, paths.  Depends on
 * nothing but ferry.h and libc; every other layer may use it.  Names use the
 * ferry__ prefix and are never installed.
 */
#ifndef FERRY_UTIL_H
#define FERRY_UTIL_H

#include "ferry.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FERRY__MSG_MAX 1024

/* ---- Errors (error.c) ---- */

/**
 * A failure: code plus a message naming file, variable and offset.  The rank
 * the failure happened on is kept beside the message (has_rank, rank) and
 * formatted once, where the error leaves the library (ferry__err_text):
 * "rank 3: short read: ...".  Zero-initialised means "no error, no rank".
 */
typedef struct ferry__err {
  int code;
  int has_rank;
  int rank;
  char msg[FERRY__MSG_MAX];
} ferry__err;

/** Record code and a printf-style message in err (may be NULL); returns code.
 *  Clears the rank.  Also copies the message to the calling thread's
 *  last-error buffer. */
int ferry__seterr(ferry__err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** The same, for a failure that happened on rank: the message says what and
 *  where, never "rank N:" itself. */
int ferry__seterr_on(ferry__err *err, int rank, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** Out of memory (FERRY_ENOMEM), the message naming the size and what the
 *  memory was for: "out of memory: 1280000128 bytes for <what>", where what
 *  (printf-style) names the dataset, file or variable.  rank < 0: no rank
 *  (as ferry__seterr), else as ferry__seterr_on.  Returns FERRY_ENOMEM. */
int ferry__oom(ferry__err *err, int rank, size_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** The message as the user sees it: "rank R: msg" when the rank is known. */
void ferry__err_text(const ferry__err *err, char *out, size_t len);
/** Set the calling thread's last-error message (ferry_last_error(NULL)). */
void ferry__set_thread_error(const char *msg);
/** The calling thread's last-error message. */
const char *ferry__thread_error(void);
/** The FERRY_E* code for an errno value (ENOENT -> FERRY_ENOENT, ...). */
int ferry__errno_code(int e);

/** dtype from its ferry_dtype_name() ("float32"); 0 or FERRY_EINVAL. */
int ferry__dtype_from_name(const char *name, ferry_dtype *out);

/* ---- Hashing and the generator (hash.c) ---- */

/** FNV-1a 64 of len bytes, continuing from h (start with FERRY__FNV_INIT). */
#define FERRY__FNV_INIT 0xcbf29ce484222325ULL
/** Largest i in [0, n) with v[i] <= x (v ascending, v[0] <= x), by
 *  bisection (bytes.c): the plan's chunk, piece and window lookups, a
 *  record batch of an Arrow file. */
int64_t ferry__last_le(const int64_t *v, int64_t n, int64_t x);
/** qsort comparator of int64_t values, ascending (bytes.c). */
int ferry__cmp_i64(const void *a, const void *b);
uint64_t ferry__fnv1a(uint64_t h, const void *data, size_t len);
/* A hash of len bytes folded into h a 64-bit little-endian word at a time
 * (the tail by FNV-1a): for large arrays (a ragged variable's offsets, the
 * packed manifest's checksum), several times faster than FNV-1a's byte
 * steps.  The same value on every host. */
uint64_t ferry__hash_words(uint64_t h, const void *data, size_t len);
/** The greatest common divisor of a and b (b = 0: a). */
static inline uint64_t ferry__gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
/** SplitMix64 finaliser: a bijective 64-bit mix.  Inline: the window
 *  order (plan/order.c) calls it about eight times per sample served; as
 *  a call into hash.c it cost 3 % more instructions in an uncompressed
 *  Parquet epoch (callgrind; docs/performance.md, "refactor check"). */
static inline uint64_t ferry__mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/** Counter-based generator: the counter-th 64-bit value of stream key. */
uint64_t ferry__rand64(uint64_t key, uint64_t counter);
/** Key for (seed, stream, a, b): independent streams of the generator. */
uint64_t ferry__rand_key(uint64_t seed, uint64_t stream, uint64_t a,
                         uint64_t b);

/* ---- Bytes and paths (bytes.c) ---- */

/** Swap the bytes of n elements of size elsize in place. */
void ferry__byteswap(void *buf, size_t n, size_t elsize);

/** "dir/name" (one slash between), malloc'd; NULL when out of memory. */
char *ferry__join_path(const char *dir, const char *name);

/* ---- Large buffers (alloc.c) ---- */

/**
 * Large buffers (read buffers, the plan's slots): mmap with MAP_POPULATE
 * where available, so the kernel fills the page tables in one call -- about
 * 4x cheaper than a fault per 4 KiB page on first touch, which dominated the
 * first epoch.  The usable size is stored in the FERRY__BIG_HDR bytes in
 * front of the returned pointer (ferry__big_size).  NULL on failure.
 */
#define FERRY__BIG_HDR 64
void *ferry__big_alloc(size_t bytes);
void ferry__big_free(void *p);
size_t ferry__big_size(const void *p);

#endif /* FERRY_UTIL_H */
