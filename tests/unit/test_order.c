/*
 * test_order.c - the served order computed per slot (plan/order.c, issue
 * 30: a window's order was an array of 32-byte slots, 1.5 GiB of plan for
 * chunks of 4 Mi one-byte samples).
 *
 * 1. Golden values of ferry__order_at, from an independent Python
 *    implementation of the documented network (docs/design/plan.md, "The
 *    window's order is computed, not stored"): a change of the order fails
 *    here.
 * 2. ferry__order_at is a bijection of [0, n) for every n up to 300 and a
 *    few larger ones, with several keys.
 * 3. ferry__plan_slots_get over any range equals the windows' orders (the
 *    plans of several ranks, tails and shuffle buffers; a resumed plan).
 * 4. A plan of 2,147,483,700 one-byte samples in 513 chunks of 4 Mi on 2
 *    ranks holds a few KiB, and its slots -- the last one included -- are
 *    computed without the process's peak memory growing by 64 MiB.
 */
#include "config.h"
#include "../ferry_test.h"
#include "core/options.h"
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_golden(void) {
  static const uint64_t g10[10] = {1, 0, 3, 5, 9, 2, 8, 7, 6, 4};
  ferry__order o;
  ferry__order_init(&o, 10, 42);
  for (uint64_t i = 0; i < 10; i++)
    CHECK(ferry__order_at(&o, i) == g10[i], "n 10 key 42: at(%llu) = %llu",
          (unsigned long long)i, (unsigned long long)ferry__order_at(&o, i));
  static const uint64_t in[5] = {0, 1, 2, 500000, 1000002},
                        out[5] = {421183, 541663, 609464, 513368, 977870};
  ferry__order_init(&o, 1000003, 0x0123456789abcdefULL);
  for (int i = 0; i < 5; i++)
    CHECK(ferry__order_at(&o, in[i]) == out[i], "n 1000003: at(%llu)",
          (unsigned long long)in[i]);
  static const uint64_t hin[3] = {0, 1, 2147483699},
                        hout[3] = {99792646, 101098612, 577394423};
  ferry__order_init(&o, 2147483700, 7);
  for (int i = 0; i < 3; i++)
    CHECK(ferry__order_at(&o, hin[i]) == hout[i], "n 2147483700: at(%llu)",
          (unsigned long long)hin[i]);
  return 0;
}

static int test_bijection(void) {
  uint8_t *seen = malloc(65537);
  REQUIRE(seen, "out of memory");
  for (uint64_t n = 0; n <= 65537; n = n < 300     ? n + 1
                                       : n == 300  ? 4099
                                       : n == 4099 ? 65536
                                                   : n + 1) {
    for (uint64_t key = 0; key < 3; key++) {
      ferry__order o;
      ferry__order_init(&o, n, key * 0x9e3779b97f4a7c15ULL);
      memset(seen, 0, (size_t)n + 1);
      int ok = 1, ident = n > 8;
      for (uint64_t i = 0; i < n; i++) {
        uint64_t x = ferry__order_at(&o, i);
        if (x >= n || seen[x])
          ok = 0;
        else
          seen[x] = 1;
        ident = ident && x == i;
      }
      CHECK(ok, "n %llu key %llu: not a bijection of [0, n)",
            (unsigned long long)n, (unsigned long long)key);
      CHECK(!ident, "n %llu: the identity", (unsigned long long)n);
    }
  }
  free(seen);
  return 0;
}

/* p's slots by ranges of a few lengths equal its windows' orders. */
static int ranges_match(const ferry__rank_plan *p, const char *what) {
  ferry__slot *all = NULL, *part = NULL;
  REQUIRE(ferry__plan_slots(p, &all) == 0, "%s: slots", what);
  part = malloc((size_t)(p->nslots + 1) * sizeof *part);
  REQUIRE(part, "out of memory");
  static const int64_t lens[] = {1, 7, 64, 1000};
  for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
    for (int64_t i = 0; i < p->nslots; i += lens[l]) {
      int64_t n = p->nslots - i < lens[l] ? p->nslots - i : lens[l];
      CHECK(ferry__plan_slots_get(p, i, n, part) == 0, "%s: get", what);
      int same = 1; /* field by field: a slot has padding bytes */
      for (int64_t j = 0; j < n; j++)
        same = same && part[j].sample == all[i + j].sample &&
               part[j].extent == all[i + j].extent &&
               part[j].row == all[i + j].row &&
               part[j].padded == all[i + j].padded;
      CHECK(same, "%s: slots [%lld, %lld) differ", what, (long long)i,
            (long long)(i + n));
    }
  CHECK(ferry__plan_slots_get(p, p->nslots, 1, part) == FERRY_EINVAL,
        "%s: a range past the end is refused", what);
  free(all);
  free(part);
  return 0;
}

static int test_ranges(void) {
  static const int tails[] = {FERRY__TAIL_PARTIAL, FERRY__TAIL_PAD,
                              FERRY__TAIL_DROP};
  for (int t = 0; t < 3; t++)
    for (int64_t K = 0; K <= 5; K += 5) {
      enum { NC = 37 };
      ferry__chunk chunks[NC];
      for (int64_t i = 0, g = 0; i < NC; i++) {
        chunks[i] = (ferry__chunk){i % 2, g / 2, 50 + i % 7, g};
        g += chunks[i].count;
      }
      ferry__plan_params pp = {.batch_size = 16,
                               .seed = 9,
                               .shuffle = FERRY__SHUFFLE_CHUNKS,
                               .shuffle_buffer = K,
                               .tail = tails[t],
                               .fraction = 1.0,
                               .epoch = 2,
                               .world_size = 3};
      int64_t perm[NC];
      ferry__plan_permutation(&pp, NC, perm);
      ferry__pieces ps;
      ferry__pieces_wrap(&ps, chunks, NC);
      for (int r = 0; r < 3; r++) {
        char what[64];
        snprintf(what, sizeof what, "tail %d K %lld rank %d", tails[t],
                 (long long)K, r);
        ferry__rank_plan p = {0}, q = {0};
        ferry__err err = {0};
        REQUIRE(ferry__plan_build(&ps, perm, &pp, r, &p, &err) == 0, "%s: %s",
                what, err.msg);
        ranges_match(&p, what);
        /* resumed after 3 batches on 3 ranks, then on 2 (elastic) */
        ferry__resume_step steps[1] = {{3, 3, NULL, NULL, NULL}};
        REQUIRE(ferry__plan_resume(&ps, perm, &pp, steps, 1, r, &q, NULL,
                                   &err) == 0,
                "%s: resume: %s", what, err.msg);
        ranges_match(&q, "resumed");
        ferry__rank_plan_free(&q);
        ferry__plan_params p2 = pp;
        p2.world_size = 2;
        if (r < 2 && ferry__plan_resume(&ps, perm, &p2, steps, 1, r, &q, NULL,
                                        &err) == 0)
          ranges_match(&q, "elastic");
        ferry__rank_plan_free(&q);
        ferry__rank_plan_free(&p);
      }
    }
  return 0;
}

/* The process's peak resident memory (VmHWM), in KiB; -1 if unknown. */
static long peak_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib;
}

static int test_huge(void) {
  enum { NC = 513 };
  const int64_t N = 2147483700, C = 4194304;
  ferry__chunk *chunks = malloc(NC * sizeof *chunks);
  REQUIRE(chunks, "out of memory");
  for (int64_t i = 0; i < NC; i++)
    chunks[i] = (ferry__chunk){0, i * C, i + 1 < NC ? C : N - i * C, i * C};
  ferry__plan_params pp = {.batch_size = 7,
                           .seed = 0,
                           .shuffle = FERRY__SHUFFLE_CHUNKS,
                           .shuffle_buffer = 4,
                           .tail = FERRY__TAIL_PARTIAL,
                           .fraction = 1.0,
                           .world_size = 2};
  int64_t perm[NC];
  ferry__plan_permutation(&pp, NC, perm);
  ferry__pieces ps;
  ferry__pieces_wrap(&ps, chunks, NC);
  long before = peak_kib();
  for (int r = 0; r < 2; r++) {
    ferry__rank_plan p = {0};
    ferry__err err = {0};
    REQUIRE(ferry__plan_build(&ps, perm, &pp, r, &p, &err) == 0, "%s", err.msg);
    CHECK(p.nslots == N / 2, "rank %d serves half: %lld", r,
          (long long)p.nslots);
    CHECK(ferry__plan_bytes(&p) < 64 * 1024,
          "rank %d: a plan of %zu bytes for %lld samples", r,
          ferry__plan_bytes(&p), (long long)p.nslots);
    ferry__slot s[1000];
    int64_t at[3] = {0, p.nslots / 2, p.nslots - 1000};
    for (int k = 0; k < 3; k++) {
      REQUIRE(ferry__plan_slots_get(&p, at[k], 1000, s) == 0, "get");
      for (int j = 0; j < 1000; j++) {
        const ferry__extent *x = &p.extents[s[j].extent];
        CHECK(s[j].sample >= 0 && s[j].sample < N && s[j].row >= 0 &&
                  s[j].row < x->count &&
                  s[j].sample == x->global_first + s[j].row,
              "rank %d slot %lld: sample %lld outside its extent", r,
              (long long)(at[k] + j), (long long)s[j].sample);
      }
    }
    ferry__rank_plan_free(&p);
  }
  long after = peak_kib();
  if (before >= 0 && after >= 0)
    CHECK(after - before < 64 * 1024,
          "peak memory grew by %ld KiB planning 2^31 samples", after - before);
  free(chunks);
  return 0;
}

int main(void) {
  test_golden();
  test_bijection();
  test_ranges();
  test_huge();
  return ft_summary("test_order");
}
