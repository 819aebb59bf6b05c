/*
 * util/digest.h - the file digests ferry can check (util/digest.c): MD5
 * (RFC 1321), SHA-1 (FIPS 180-4), SHA-256 (FIPS 180-4) and XXH64 (the
 * xxHash specification, seed 0), written from their specifications
 * because ferry links no hashing library.  Used to check the digests a
 * MosaicML Streaming index lists for its shards (backends/mds.c,
 * mds_hashes=check); digests are not a defence against an attacker here,
 * only against damaged or rewritten files.
 *
 *   ferry__digest d;
 *   ferry__digest_init(&d, FERRY__DIG_SHA1);
 *   ferry__digest_update(&d, buf, n);        (any number of times)
 *   char hex[FERRY__DIG_HEX_MAX];
 *   ferry__digest_hex(&d, hex);              ("a9993e36..." as Python's
 *                                             hashlib/xxhash hexdigest())
 */
#ifndef FERRY_DIGEST_H
#define FERRY_DIGEST_H

#include <stddef.h>
#include <stdint.h>

enum {
  FERRY__DIG_MD5 = 0,
  FERRY__DIG_SHA1,
  FERRY__DIG_SHA256,
  FERRY__DIG_XXH64,
  FERRY__DIG_COUNT
};

/* A digest's hex form and its NUL: SHA-256's 64 hex digits are the most. */
#define FERRY__DIG_HEX_MAX 65

/* The names, as Python's hashlib and xxhash call them, comma-separated:
 * for messages naming what ferry checks. */
#define FERRY__DIG_NAMES "md5, sha1, sha256, xxh64"

typedef struct ferry__digest {
  int algo;
  uint64_t len;          /* bytes hashed so far */
  unsigned char buf[64]; /* a block not yet full (xxh64: 32-byte stripes) */
  size_t nbuf;
  uint32_t h[8];       /* MD5: 4 words, SHA-1: 5, SHA-256: 8 */
  uint64_t v[4], seed; /* XXH64's accumulators */
} ferry__digest;

/** FERRY__DIG_* of name ("sha1", ...), or -1 when ferry cannot compute it. */
int ferry__digest_algo(const char *name);
/** The name of algo (FERRY__DIG_*). */
const char *ferry__digest_name(int algo);
void ferry__digest_init(ferry__digest *d, int algo);
void ferry__digest_update(ferry__digest *d, const void *p, size_t n);
/** Finish: the digest as lower-case hex into hex (FERRY__DIG_HEX_MAX bytes
 *  at least), NUL-terminated; returns its length.  d is spent. */
size_t ferry__digest_hex(ferry__digest *d, char *hex);

#endif /* FERRY_DIGEST_H */
