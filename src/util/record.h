/*
 * util/record.h - one writer and one reader of flat binary records: the
 * packed manifest rank 0 broadcasts (core/manifest.c) and every record a
 * backend keeps per variable: a mix source's (backends/mixread.c), a
 * parquet variable's (backends/parquet/record.c), npz, netCDF classic and
 * zarr (npz.c, classic.c, zarr/zarr.c).  These bytes travel over MPI, are saved
 * in manifest JSON files and hashed into the plan certificate and state files,
 * so the reader never trusts them: every length it reads is bounded by the
 * bytes that remain, and a short or corrupt record is a negative FERRY_E*
 * code with the offset and what was wrong, never a read past the end.
 *
 * Layout rules: fixed-width integers little-endian (big-endian only where
 * a writer or reader sets big_endian, for a format that has always been in
 * the host's order: the parquet record), a string or blob is a u32 length
 * then its bytes (a string: no NUL inside, none stored after it).
 *
 * Errors are sticky on both sides, so a user writes or reads a whole
 * record and checks once: after the first failure every put and get is a
 * no-op (a get returns 0 or NULL), ferry__rec_finish reports the writer's
 * failure, r->rc the reader's.
 */
#ifndef FERRY_RECORD_H
#define FERRY_RECORD_H

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Writer ---- */

typedef struct ferry__rec_w {
  unsigned char *p; /* the bytes so far (NULL in hash-only mode)        */
  size_t len, cap;  /* len: bytes put (hash-only mode: hashed)          */
  int rc;           /* 0, or the first failure (FERRY_ENOMEM)           */
  size_t want;      /* rc: the bytes it could not have (SIZE_MAX: more
                     * than size_t holds; a string's length over 4 GiB) */
  int hash_only;    /* keep no bytes, only h and len                    */
  uint64_t h;       /* hash-only mode: FNV-1a of every byte put         */
  int big_endian;   /* fixed-width integers big-endian (parquet record) */
  /* NULL: realloc; the tests set one that fails (tests/unit/test_record) */
  void *(*realloc_fn)(void *, size_t);
} ferry__rec_w;

/** An empty writer that keeps its bytes (zero-filling the struct is the
 *  same). */
void ferry__rec_w_init(ferry__rec_w *w);
/** An empty writer that keeps no bytes: h is the FNV-1a of every byte put,
 *  starting from h0 (FERRY__FNV_INIT: the same value as ferry__fnv1a of the
 *  whole record), len counts them.  Allocates nothing. */
void ferry__rec_w_init_hash(ferry__rec_w *w, uint64_t h0);

/** Append n bytes (src may be NULL when n is 0). */
void ferry__rec_put(ferry__rec_w *w, const void *src, size_t n);
void ferry__rec_put_u8(ferry__rec_w *w, unsigned v);
void ferry__rec_put_u32(ferry__rec_w *w, uint32_t v);
void ferry__rec_put_u64(ferry__rec_w *w, uint64_t v);
/** n int64 as put_u64 writes them (a little-endian writer: one copy on a
 *  little-endian host); in hash-only mode folded into h by
 *  ferry__hash_words over their little-endian bytes, not FNV-1a (a large
 *  array: a ragged variable's offsets). */
void ferry__rec_put_u64s(ferry__rec_w *w, const int64_t *v, size_t n);
/** Two's complement, as put_u32/put_u64 of the same bits. */
void ferry__rec_put_i32(ferry__rec_w *w, int32_t v);
void ferry__rec_put_i64(ferry__rec_w *w, int64_t v);
/** u32 length, then the bytes of s without its NUL (NULL: ""). */
void ferry__rec_put_str(ferry__rec_w *w, const char *s);
/** u32 length n, then n bytes of p (p may be NULL when n is 0). */
void ferry__rec_put_blob(ferry__rec_w *w, const void *p, size_t n);

/**
 * Hand over the bytes: 0, *buf malloc'd (the caller frees it; NULL when
 * nothing was put) and *len its length; or the writer's failure
 * (FERRY_ENOMEM) with *buf NULL and *len the bytes it could not have (for
 * the caller's out-of-memory message).  The writer is empty afterwards.
 * Not for a hash-only writer (read its h and len).
 */
int ferry__rec_finish(ferry__rec_w *w, void **buf, size_t *len);
/** Drop the bytes (after an error of the caller's own). */
void ferry__rec_w_free(ferry__rec_w *w);

/* ---- Reader ---- */

typedef struct ferry__rec_r {
  const unsigned char *p;
  size_t len, pos;
  int rc;          /* 0, or the first failure: FERRY_EFORMAT, FERRY_ENOMEM */
  const char *why; /* rc: what was wrong ("buffer ends early")             */
  size_t at;       /* rc: the offset it was found at                       */
  size_t want;     /* FERRY_ENOMEM: the bytes that could not be had        */
  int big_endian;  /* fixed-width integers big-endian (parquet record)     */
  /* NULL: realloc; the tests set one that fails (tests/unit/test_record) */
  void *(*realloc_fn)(void *, size_t);
} ferry__rec_r;

/** A reader of the len bytes at p (p NULL: none). */
void ferry__rec_r_init(ferry__rec_r *r, const void *p, size_t len);
/** The bytes not read yet (0 after a failure). */
size_t ferry__rec_left(const ferry__rec_r *r);

/** Record a corrupt record: FERRY_EFORMAT with why (a string constant) at
 *  the current offset, unless a failure came first; returns r->rc. */
int ferry__rec_fail(ferry__rec_r *r, const char *why);
/** Record an allocation of bytes bytes for why that failed (FERRY_ENOMEM),
 *  unless a failure came first; returns r->rc. */
int ferry__rec_oom(ferry__rec_r *r, size_t bytes, const char *why);
/** r->rc, after failing with why when bytes are left over. */
int ferry__rec_end(ferry__rec_r *r, const char *why);

/** Copy n bytes to dst (zeros on failure: "buffer ends early"). */
int ferry__rec_get(ferry__rec_r *r, void *dst, size_t n);
/** The next n bytes in place (NULL on failure: "buffer ends early"). */
const void *ferry__rec_take(ferry__rec_r *r, size_t n);
unsigned ferry__rec_get_u8(ferry__rec_r *r);
uint32_t ferry__rec_get_u32(ferry__rec_r *r);
uint64_t ferry__rec_get_u64(ferry__rec_r *r);
/** n u64 into out (little-endian in the record): one bounds check, then a
 *  copy (the record's order on this host) or a conversion. */
void ferry__rec_get_u64s(ferry__rec_r *r, int64_t *out, size_t n);
int32_t ferry__rec_get_i32(ferry__rec_r *r);
int64_t ferry__rec_get_i64(ferry__rec_r *r);
/** A u64 that must be a non-negative int64_t (a count, size or offset);
 *  else fails with why. */
int64_t ferry__rec_get_nonneg(ferry__rec_r *r, const char *why);
/** A u32 length that must fit in the bytes left; else fails with why. */
uint32_t ferry__rec_get_len(ferry__rec_r *r, const char *why);
/** A string as put_str wrote it, malloc'd and NUL-terminated (NULL on
 *  failure: "string runs past the end", "string holds a NUL byte", or out
 *  of memory). */
char *ferry__rec_get_str(ferry__rec_r *r);
/** A blob as put_blob wrote it, in place: its bytes (non-NULL, even when
 *  *n is 0) and *n; NULL on failure ("blob runs past the end"). */
const void *ferry__rec_get_blob(ferry__rec_r *r, size_t *n);

/* ---- Fixed places (a header's length, a trailing checksum) ---- */

/** The 4 (8) bytes at p as a little-endian u32 (u64), and the reverse. */
uint32_t ferry__le32_load(const unsigned char *p);
uint64_t ferry__le64_load(const unsigned char *p);
void ferry__le64_store(unsigned char *p, uint64_t v);

#endif /* FERRY_RECORD_H */
