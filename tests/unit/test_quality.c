/*
 * test_quality.c - the shuffle-quality measures of `ferry quality`
 * (src/tool/measures.c) on small orders whose values were worked out by
 * hand (the comments show the arithmetic), plus the ideal permutation: a
 * permutation of the same slots, reproducible from its seed, and with the
 * measures of a uniform permutation (displacement near 1/3, tau near 0).
 */
#include "../../src/tool/measures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

#define NEAR(x, want) (fabs((x) - (want)) < 1e-12)

/* N = 8, 2 ranks, batches of 2.  a: identity, rank 0 serves 0..3, rank 1
 * serves 4..7.  b: rank 0 serves 7 6 | 5 2, rank 1 serves 1 0 | 3 4. */
static const int64_t a_s[8] = {0, 1, 2, 3, 4, 5, 6, 7};
static const int64_t b_s[8] = {7, 6, 5, 2, 1, 0, 3, 4};
static const int64_t bst[5] = {0, 2, 4, 6, 8};
static const int brk[4] = {0, 0, 1, 1};

static int test_hand(void) {
  qm_order a = {8, a_s, 4, bst, brk}, b = {8, b_s, 4, bst, brk};
  double m, lo;
  /* chunks of 4 samples: chunk = s / 4 */
  int64_t ca[8], cb[8];
  for (int i = 0; i < 8; i++) {
    ca[i] = a_s[i] / 4;
    cb[i] = b_s[i] / 4;
  }
  REQUIRE(qm_chunks_per_batch(&a, ca, &m, &lo) == 0, "oom");
  CHECK(NEAR(m, 1) && NEAR(lo, 1), "a: one chunk a batch: %g %g", m, lo);
  /* b: {1,1} {1,0} {0,0} {0,1}: 1 2 1 2 */
  REQUIRE(qm_chunks_per_batch(&b, cb, &m, &lo) == 0, "oom");
  CHECK(NEAR(m, 1.5) && NEAR(lo, 1), "b: %g %g", m, lo);
  /* ranks: a 0..3 -> 0, 4..7 -> 1; b 7 6 5 2 -> 0, 1 0 3 4 -> 1: samples
   * 2 and 4 stay: 2/8 */
  REQUIRE(qm_rank_stay(&a, &b, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 0.25), "rank stay %g", m);
  REQUIRE(qm_rank_stay(&a, &a, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 1), "rank stay with itself %g", m);
  /* pairs of a: (0,1) both in b's batch 2, (6,7) both in b's batch 0,
   * (2,3) and (4,5) split: 2/4 */
  REQUIRE(qm_pair_again(&a, &b, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 0.5), "pair again %g", m);
  REQUIRE(qm_pair_again(&a, &a, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 1), "pair again with itself %g", m);
  /* displacement of b: |pos - s| = 5 3 1 3 3 3 5 7 for s = 0..7, sum 30,
   * / 8 samples / N 8 */
  REQUIRE(qm_displacement(&a, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 0), "identity displacement %g", m);
  REQUIRE(qm_displacement(&b, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 30.0 / 64), "b displacement %g", m);
  /* tau(a, b): b's positions in a's order 5 4 3 6 7 2 1 0: 21 discordant
   * of 28 pairs: (7 - 21) / 28 = -0.5 */
  REQUIRE(qm_kendall(&a, &b, 8, &m) == 0, "oom");
  CHECK(NEAR(m, -0.5), "tau %g", m);
  REQUIRE(qm_kendall(&a, &a, 8, &m) == 0, "oom");
  CHECK(NEAR(m, 1), "tau with itself %g", m);
  static const int64_t rev[8] = {7, 6, 5, 4, 3, 2, 1, 0};
  qm_order r = {8, rev, 4, bst, brk};
  REQUIRE(qm_kendall(&a, &r, 8, &m) == 0, "oom");
  CHECK(NEAR(m, -1), "tau reversed %g", m);
  /* labels 0 0 0 0 1 1 1 1: q = (1/2, 1/2); a's batches pure: ln 2 each;
   * b's: pure, mixed, pure, mixed: ln 2 / 2 */
  int32_t cls[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  REQUIRE(qm_label_kl(&a, cls, 8, 2, &m) == 0, "oom");
  CHECK(NEAR(m, log(2)), "KL a %g", m);
  REQUIRE(qm_label_kl(&b, cls, 8, 2, &m) == 0, "oom");
  CHECK(NEAR(m, log(2) / 2), "KL b %g", m);
  return 0;
}

/* Pads and missing samples: a sample's first slot counts; pairs and tau
 * use the samples served in both epochs. */
static int test_pads(void) {
  /* N = 4; a serves 0 1 | 2 0 (0 padded), b serves 3 2 | 1 0 */
  static const int64_t as[4] = {0, 1, 2, 0}, bs[4] = {3, 2, 1, 0};
  static const int64_t st[3] = {0, 2, 4};
  static const int rk[2] = {0, 0};
  qm_order a = {4, as, 2, st, rk}, b = {4, bs, 2, st, rk};
  double m;
  /* first slots of a: 0@0 1@1 2@2: displacement 0 */
  REQUIRE(qm_displacement(&a, 4, &m) == 0, "oom");
  CHECK(NEAR(m, 0), "pads: displacement %g", m);
  /* pairs of a among first slots: (0,1) only ((2,0): 0's slot 3 is a
   * repeat); in b, 0 and 1 share batch 1: 1/1 */
  REQUIRE(qm_pair_again(&a, &b, 4, &m) == 0, "oom");
  CHECK(NEAR(m, 1), "pads: pair again %g", m);
  /* tau over 0 1 2: b's positions 3 2 1: all discordant */
  REQUIRE(qm_kendall(&a, &b, 4, &m) == 0, "oom");
  CHECK(NEAR(m, -1), "pads: tau %g", m);
  /* nothing to measure: NaN */
  qm_order e = {0, as, 0, st, rk};
  REQUIRE(qm_kendall(&e, &e, 4, &m) == 0, "oom");
  CHECK(isnan(m), "empty tau is NaN");
  return 0;
}

/* The ideal order: a permutation of the slots' samples, the same for the
 * same seed, with the statistics of a uniform permutation. */
static int test_ideal(void) {
  enum { N = 4000, B = 40 };
  int64_t *id = malloc(N * sizeof *id), *p = malloc(N * sizeof *p),
          *q = malloc(N * sizeof *q), *st = malloc((N / B + 1) * sizeof *st);
  int *rk = calloc(N / B, sizeof *rk);
  REQUIRE(id && p && q && st && rk, "oom");
  for (int i = 0; i < N; i++)
    id[i] = i;
  for (int k = 0; k <= N / B; k++)
    st[k] = k * B;
  for (int k = 0; k < N / B; k++)
    rk[k] = k * 4 / (N / B); /* 4 ranks */
  qm_order a = {N, id, N / B, st, rk};
  qm_ideal(&a, 1, p);
  qm_ideal(&a, 1, q);
  CHECK(memcmp(p, q, N * sizeof *p) == 0, "same seed, same order");
  qm_ideal(&a, 2, q);
  CHECK(memcmp(p, q, N * sizeof *p) != 0, "another seed, another order");
  int64_t *seen = calloc(N, sizeof *seen);
  REQUIRE(seen, "oom");
  for (int i = 0; i < N; i++)
    seen[p[i]]++;
  int perm = 1;
  for (int i = 0; i < N; i++)
    perm &= seen[i] == 1;
  CHECK(perm, "a permutation");
  qm_order o = {N, p, N / B, st, rk}, o2 = {N, q, N / B, st, rk};
  double m;
  /* uniform: E|pos - s| / N = 1/3 (sd ~ 0.004 here), tau ~ 0 (sd ~ 0.01),
   * rank stay 1/4, pair again (B - 1) / (N - 1) ~ 0.01 */
  REQUIRE(qm_displacement(&o, N, &m) == 0, "oom");
  CHECK(fabs(m - 1.0 / 3) < 0.03, "ideal displacement %g", m);
  REQUIRE(qm_kendall(&o, &o2, N, &m) == 0, "oom");
  CHECK(fabs(m) < 0.06, "ideal tau %g", m);
  REQUIRE(qm_rank_stay(&o, &o2, N, &m) == 0, "oom");
  CHECK(fabs(m - 0.25) < 0.05, "ideal rank stay %g", m);
  REQUIRE(qm_pair_again(&o, &o2, N, &m) == 0, "oom");
  CHECK(m < 0.03, "ideal pair again %g", m);
  free(id);
  free(p);
  free(q);
  free(st);
  free(rk);
  free(seen);
  return 0;
}

int main(void) {
  int rc = test_hand() | test_pads() | test_ideal();
  if (rc && !ft_failures)
    ft_failures++;
  return ft_summary("test_quality");
}
