/*
 * digest.c - MD5, SHA-1, SHA-256 and XXH64 (util/digest.h), from RFC 1321,
 * FIPS 180-4 and the xxHash specification.  Plain portable C: bytes are
 * assembled into words explicitly, so the host's byte order does not
 * matter.  Checked against the specifications' test vectors and Python's
 * hashlib (tests/unit/test_digest.c, tests/mds/mds_hashes.sh).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "util/digest.h"

#include <string.h>

static const char *const names[FERRY__DIG_COUNT] = {"md5", "sha1", "sha256",
                                                    "xxh64"};

int ferry__digest_algo(const char *name) {
  for (int a = 0; name && a < FERRY__DIG_COUNT; a++)
    if (strcmp(name, names[a]) == 0)
      return a;
  return -1;
}

const char *ferry__digest_name(int algo) {
  return algo >= 0 && algo < FERRY__DIG_COUNT ? names[algo] : "?";
}

static uint32_t rol32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t ror32(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }
static uint64_t rol64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}
static uint64_t le64(const unsigned char *p) {
  return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- MD5 (RFC 1321) ---------------------------------------------------- */

static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
static const int md5_s[16] = {7, 12, 17, 22, 5, 9,  14, 20,
                              4, 11, 16, 23, 6, 10, 15, 21};

static void md5_block(uint32_t *h, const unsigned char *p) {
  uint32_t m[16], a = h[0], b = h[1], c = h[2], d = h[3];
  for (int i = 0; i < 16; i++)
    m[i] = le32(p + 4 * i);
  for (int i = 0; i < 64; i++) {
    uint32_t f;
    int g;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) & 15;
    }
    uint32_t t = d;
    d = c;
    c = b;
    b += rol32(a + f + md5_k[i] + m[g], md5_s[(i >> 4) * 4 + (i & 3)]);
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
}

/* ---- SHA-1 and SHA-256 (FIPS 180-4) ------------------------------------ */

static void sha1_block(uint32_t *h, const unsigned char *p) {
  uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 16; i++)
    w[i] = be32(p + 4 * i);
  for (int i = 16; i < 80; i++)
    w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    uint32_t t = rol32(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rol32(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static void sha256_block(uint32_t *h, const unsigned char *p) {
  uint32_t w[64], s[8];
  for (int i = 0; i < 16; i++)
    w[i] = be32(p + 4 * i);
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(s, h, sizeof s);
  for (int i = 0; i < 64; i++) {
    uint32_t e = s[4], a = s[0];
    uint32_t t1 = s[7] + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) +
                  ((e & s[5]) ^ (~e & s[6])) + sha256_k[i] + w[i];
    uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) +
                  ((a & s[1]) ^ (a & s[2]) ^ (s[1] & s[2]));
    memmove(s + 1, s, 7 * sizeof *s);
    s[4] += t1;
    s[0] = t1 + t2;
  }
  for (int i = 0; i < 8; i++)
    h[i] += s[i];
}

/* ---- XXH64 (xxHash specification, seed 0) ------------------------------ */

#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL

static uint64_t xxh_round(uint64_t acc, uint64_t lane) {
  acc += lane * P64_2;
  return rol64(acc, 31) * P64_1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t v) {
  acc ^= xxh_round(0, v);
  return acc * P64_1 + P64_4;
}

static void xxh_stripe(uint64_t *v, const unsigned char *p) {
  for (int k = 0; k < 4; k++)
    v[k] = xxh_round(v[k], le64(p + 8 * k));
}

static uint64_t xxh_final(ferry__digest *d) {
  const uint64_t *v = d->v;
  uint64_t h;
  if (d->len >= 32) {
    h = rol64(v[0], 1) + rol64(v[1], 7) + rol64(v[2], 12) + rol64(v[3], 18);
    for (int k = 0; k < 4; k++)
      h = xxh_merge(h, v[k]);
  } else {
    h = d->seed + P64_5;
  }
  h += d->len;
  const unsigned char *p = d->buf;
  size_t n = d->nbuf;
  for (; n >= 8; p += 8, n -= 8)
    h = rol64(h ^ xxh_round(0, le64(p)), 27) * P64_1 + P64_4;
  if (n >= 4) {
    h = rol64(h ^ (uint64_t)le32(p) * P64_1, 23) * P64_2 + P64_3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; p++, n--)
    h = rol64(h ^ *p * P64_5, 11) * P64_1;
  h ^= h >> 33;
  h *= P64_2;
  h ^= h >> 29;
  h *= P64_3;
  h ^= h >> 32;
  return h;
}

/* ---- The common frame ------------------------------------------------- */

void ferry__digest_init(ferry__digest *d, int algo) {
  static const uint32_t md5_h[4] = {0x67452301, 0xefcdab89, 0x98badcfe,
                                    0x10325476};
  static const uint32_t sha1_h[5] = {0x67452301, 0xefcdab89, 0x98badcfe,
                                     0x10325476, 0xc3d2e1f0};
  static const uint32_t sha256_h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                       0xa54ff53a, 0x510e527f, 0x9b05688c,
                                       0x1f83d9ab, 0x5be0cd19};
  memset(d, 0, sizeof *d);
  d->algo = algo;
  if (algo == FERRY__DIG_MD5)
    memcpy(d->h, md5_h, sizeof md5_h);
  else if (algo == FERRY__DIG_SHA1)
    memcpy(d->h, sha1_h, sizeof sha1_h);
  else if (algo == FERRY__DIG_SHA256)
    memcpy(d->h, sha256_h, sizeof sha256_h);
  else {
    d->v[0] = d->seed + P64_1 + P64_2;
    d->v[1] = d->seed + P64_2;
    d->v[2] = d->seed;
    d->v[3] = d->seed - P64_1;
  }
}

/* The algorithm's block (xxh64: a stripe) and its size. */
static size_t block_size(int algo) {
  return algo == FERRY__DIG_XXH64 ? 32 : 64;
}

static void block(ferry__digest *d, const unsigned char *p) {
  if (d->algo == FERRY__DIG_MD5)
    md5_block(d->h, p);
  else if (d->algo == FERRY__DIG_SHA1)
    sha1_block(d->h, p);
  else if (d->algo == FERRY__DIG_SHA256)
    sha256_block(d->h, p);
  else
    xxh_stripe(d->v, p);
}

void ferry__digest_update(ferry__digest *d, const void *src, size_t n) {
  const unsigned char *p = src;
  size_t bs = block_size(d->algo);
  d->len += n;
  if (d->nbuf) {
    size_t k = bs - d->nbuf < n ? bs - d->nbuf : n;
    memcpy(d->buf + d->nbuf, p, k);
    d->nbuf += k;
    p += k;
    n -= k;
    if (d->nbuf < bs)
      return;
    block(d, d->buf);
    d->nbuf = 0;
  }
  for (; n >= bs; p += bs, n -= bs)
    block(d, p);
  memcpy(d->buf, p, n);
  d->nbuf = n;
}

size_t ferry__digest_hex(ferry__digest *d, char *hex) {
  static const char digits[] = "0123456789abcdef";
  unsigned char out[32];
  size_t nout;
  if (d->algo == FERRY__DIG_XXH64) {
    uint64_t h = xxh_final(d); /* canonical form: big-endian */
    for (int k = 0; k < 8; k++)
      out[k] = (unsigned char)(h >> (56 - 8 * k));
    nout = 8;
  } else {
    /* padding: 0x80, zeros, the length in bits in the last 8 bytes
     * (MD5 little-endian, SHA big-endian) */
    uint64_t bits = d->len * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (d->nbuf < 56 ? 56 : 120) - d->nbuf;
    for (int k = 0; k < 8; k++)
      pad[npad + (size_t)k] =
          (unsigned char)(d->algo == FERRY__DIG_MD5 ? bits >> (8 * k)
                                                    : bits >> (56 - 8 * k));
    uint64_t len = d->len;
    ferry__digest_update(d, pad, npad + 8);
    d->len = len;
    int words = d->algo == FERRY__DIG_MD5    ? 4
                : d->algo == FERRY__DIG_SHA1 ? 5
                                             : 8;
    for (int w = 0; w < words; w++)
      for (int k = 0; k < 4; k++)
        out[4 * w + k] = (unsigned char)(d->algo == FERRY__DIG_MD5
                                             ? d->h[w] >> (8 * k)
                                             : d->h[w] >> (24 - 8 * k));
    nout = (size_t)words * 4;
  }
  for (size_t i = 0; i < nout; i++) {
    hex[2 * i] = digits[out[i] >> 4];
    hex[2 * i + 1] = digits[out[i] & 15];
  }
  hex[2 * nout] = '\0';
  return 2 * nout;
}
