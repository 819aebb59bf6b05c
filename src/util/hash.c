/*
 * hash.c - FNV-1a for fingerprints (manifest, options, state, metadata) and
 * the counter-based SplitMix64 generator the plan draws from.  Both are pure
 * and 64-bit integer only, so every platform, compiler and version computes
 * the same values (tests/unit/test_plan.c pins them).
 */
#include "config.h"
#include "util/util.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t ferry__fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t ferry__hash_words(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = (uint64_t)p[i] | (uint64_t)p[i + 1] << 8 |
                 (uint64_t)p[i + 2] << 16 | (uint64_t)p[i + 3] << 24 |
                 (uint64_t)p[i + 4] << 32 | (uint64_t)p[i + 5] << 40 |
                 (uint64_t)p[i + 6] << 48 | (uint64_t)p[i + 7] << 56;
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return ferry__fnv1a(h, p + i, len - i);
}

uint64_t ferry__rand64(uint64_t key, uint64_t counter) {
  return ferry__mix64(key + (counter + 1) * GOLDEN);
}

uint64_t ferry__rand_key(uint64_t seed, uint64_t stream, uint64_t a,
                         uint64_t b) {
  uint64_t k = ferry__mix64(seed + GOLDEN * (stream + 1));
  k = ferry__mix64(k ^ (a + 0x632be59bd9b4e019ULL));
  return ferry__mix64(k ^ (b + 0x85157af5ULL));
}
