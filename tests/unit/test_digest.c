/*
 * test_digest.c - the digests of src/util/digest.c against their
 * specifications' test vectors: MD5 (RFC 1321's suite), SHA-1 and SHA-256
 * (FIPS 180-4's "abc", the 448-bit message, a million 'a'; the empty
 * message; each value also Python hashlib's), XXH64 with seed 0 on the
 * xxHash project's sanity buffer (cli/xsum_sanity_check.c: lengths 0, 1,
 * 4, 14 and 222, which take every branch: stripes, 8-, 4- and 1-byte
 * tails).  Every algorithm gives the same digest whatever the pieces the
 * bytes are handed in (every piece size from 1 to 70 over 1,000 bytes), and
 * the names are Python's (hashlib, xxhash); one ferry cannot compute is -1.
 *
 * Exit status: 0 pass, 1 fail (each failure is printed).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "util/digest.h"

#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static void hex_of(int algo, const void *p, size_t n, char *hex) {
  ferry__digest d;
  ferry__digest_init(&d, algo);
  ferry__digest_update(&d, p, n);
  ferry__digest_hex(&d, hex);
}

static void check_vec(int algo, const char *msg, size_t n, const char *want) {
  char hex[FERRY__DIG_HEX_MAX];
  hex_of(algo, msg, n, hex);
  CHECK(strcmp(hex, want) == 0, "%s of %zu bytes (\"%.20s\"): %s, not %s",
        ferry__digest_name(algo), n, msg, hex, want);
}

/* The xxHash sanity check's buffer (XSUM_fillTestBuffer). */
static void xsum_buffer(unsigned char *b, size_t n) {
  uint64_t g = 2654435761U;
  for (size_t i = 0; i < n; i++) {
    b[i] = (unsigned char)(g >> 56);
    g *= 11400714785074694797ULL;
  }
}

int main(void) {
  static const char q448[] =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  static const struct {
    int algo;
    const char *e, *abc, *q, *mil;
  } v[] = {
      {FERRY__DIG_MD5, "d41d8cd98f00b204e9800998ecf8427e",
       "900150983cd24fb0d6963f7d28e17f72", "8215ef0796a20bcaaae116d3876c664a",
       "7707d6ae4e027c70eea2a935c2296f21"},
      {FERRY__DIG_SHA1, "da39a3ee5e6b4b0d3255bfef95601890afd80709",
       "a9993e364706816aba3e25717850c26c9cd0d89d",
       "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
       "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
      {FERRY__DIG_SHA256,
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  char *mil = malloc(1000000);
  REQUIRE(mil != NULL, "1 MB");
  memset(mil, 'a', 1000000);
  for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
    check_vec(v[k].algo, "", 0, v[k].e);
    check_vec(v[k].algo, "abc", 3, v[k].abc);
    check_vec(v[k].algo, q448, strlen(q448), v[k].q);
    check_vec(v[k].algo, mil, 1000000, v[k].mil);
  }
  /* RFC 1321's other messages */
  check_vec(FERRY__DIG_MD5, "message digest", 14,
            "f96b697d7cb7938d525a2f31aaf161d0");
  check_vec(FERRY__DIG_MD5,
            "1234567890123456789012345678901234567890123456789012345678901234"
            "5678901234567890",
            80, "57edf4a22be3c955ac49da2e2107b67a");
  free(mil);

  /* XXH64, seed 0, on the sanity buffer */
  static const struct {
    size_t n;
    const char *want;
  } x[] = {{0, "ef46db3751d8e999"},
           {1, "e934a84adb052768"},
           {4, "9136a0dca57457ee"},
           {14, "8282dcc4994e35c8"},
           {222, "b641ae8cb691c174"}};
  unsigned char sb[222];
  xsum_buffer(sb, sizeof sb);
  for (size_t k = 0; k < sizeof x / sizeof *x; k++)
    check_vec(FERRY__DIG_XXH64, (const char *)sb, x[k].n, x[k].want);

  /* pieces of every size give the one-shot digest */
  unsigned char buf[1000];
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = (unsigned char)(i * 131 + 7);
  for (int a = 0; a < FERRY__DIG_COUNT; a++) {
    char whole[FERRY__DIG_HEX_MAX], part[FERRY__DIG_HEX_MAX];
    hex_of(a, buf, sizeof buf, whole);
    for (size_t step = 1; step <= 70; step++) {
      ferry__digest d;
      ferry__digest_init(&d, a);
      for (size_t at = 0; at < sizeof buf; at += step)
        ferry__digest_update(&d, buf + at,
                             sizeof buf - at < step ? sizeof buf - at : step);
      ferry__digest_hex(&d, part);
      CHECK(strcmp(whole, part) == 0, "%s in pieces of %zu: %s, not %s",
            ferry__digest_name(a), step, part, whole);
    }
  }

  /* names */
  static const char *const names[] = {"md5", "sha1", "sha256", "xxh64"};
  for (int a = 0; a < FERRY__DIG_COUNT; a++) {
    CHECK(ferry__digest_algo(names[a]) == a, "the algorithm of %s", names[a]);
    CHECK(strcmp(ferry__digest_name(a), names[a]) == 0, "the name of %d", a);
  }
  CHECK(ferry__digest_algo("xxh3_64") == -1, "xxh3_64 is not computed");
  CHECK(ferry__digest_algo("SHA1") == -1, "names are Python's, lower case");
  CHECK(ferry__digest_algo(NULL) == -1, "no name");
  return ft_summary("test_digest");
}
