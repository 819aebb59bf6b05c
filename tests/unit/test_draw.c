/*
 * test_draw.c - weighted, balanced and mixed sampling (plan/draw.c,
 * plan/draw_weighted.c): every block's count of an epoch's draws within
 * one draw of its weight's share (issue 30: systematic, not drawn block by
 * block), the draws inside blocks within chi-square bounds computed here
 * (a wrong in-block draw fails them by far), zero weights never drawn,
 * without replacement every non-zero sample once, a mix's counts and
 * exhaustion rules, the same global batches on 1-4 and 7 ranks, and an
 * epoch resumed on 3 then 2 ranks serving every draw exactly once.
 */
#include "config.h"
#include "../ferry_test.h"
#include "plan/draw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void fake_manifest(ferry__manifest *m, int64_t nparts,
                          const int64_t *counts) {
  memset(m, 0, sizeof *m);
  m->nparts = nparts;
  m->parts = calloc((size_t)nparts, sizeof *m->parts);
  int64_t g = 0;
  for (int64_t p = 0; p < nparts; p++) {
    m->parts[p].num_samples = counts[p];
    m->parts[p].first_sample = g;
    g += counts[p];
  }
  m->num_samples = g;
}

/* Chi-square bound: mean df, sd sqrt(2 df); 6 sd is never crossed by a
 * right implementation (p < 1e-8) and always by a wrong one here. */
static double chi_bound(double df) { return df + 6.0 * sqrt(2.0 * df) + 10; }

static float *weights_of(int64_t n, unsigned seed) {
  float *w = malloc((size_t)n * sizeof *w);
  for (int64_t i = 0; i < n; i++) {
    unsigned x = (unsigned)i * 2654435761u + seed;
    x ^= x >> 13;
    w[i] = (x % 7 == 0) ? 0.0f : (float)(1 + x % 10);
  }
  return w;
}

static ferry__draw_params wparams(const ferry__manifest *m, const float *w,
                                  int64_t block, uint64_t seed, int rep,
                                  int64_t draws) {
  ferry__draw_params p = {0};
  p.mode = FERRY__DRAW_WEIGHTED;
  p.m = m;
  p.block = block;
  p.seed = seed;
  p.epoch = 1;
  p.replacement = rep;
  p.num_draws = draws;
  p.w = w;
  p.shuffle_buffer = 4;
  return p;
}

/* With replacement: each block gets its share of the draws to within one
 * draw (issue 30: the block draws of the old design gave a chi-square's
 * spread) and, given the block, samples by their weight (chi-square summed
 * over blocks); zero weights never drawn. */
static int test_weighted_rep(void) {
  int64_t counts[3] = {50, 70, 37};
  ferry__manifest m;
  fake_manifest(&m, 3, counts);
  float *w = weights_of(m.num_samples, 7);
  const int64_t block = 8, D = 8 * 20000;
  ferry__draw d;
  ferry__err err = {0};
  ferry__draw_params p = wparams(&m, w, block, 42, 1, D);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  CHECK(d.D == D, "D %lld", (long long)d.D);
  int64_t *cnt = calloc((size_t)m.num_samples, sizeof *cnt);
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  for (int64_t i = 0; i < D; i++) {
    int64_t s = ferry__draw_sample(&d, &c, i);
    REQUIRE(s >= 0 && s < m.num_samples, "sample %lld", (long long)s);
    cnt[s]++;
  }
  double chi_s = 0, df_s = 0;
  for (int64_t b = 0; b < d.blocks.nchunks; b++) {
    ferry__chunk ch = ferry__chunk_get(&d.blocks, b);
    double W = 0;
    int64_t n = 0, nz = 0;
    for (int64_t r = 0; r < ch.count; r++) {
      W += w[ch.global_first + r];
      n += cnt[ch.global_first + r];
      nz += w[ch.global_first + r] > 0;
    }
    if (W <= 0) {
      CHECK(n == 0, "a block of zero weight drawn %lld times", (long long)n);
      continue;
    }
    double e = (double)D * W / d.total;
    CHECK(fabs((double)n - e) < 1.0 + 1e-6,
          "block %lld: %lld draws, its weight's share %.3f", (long long)b,
          (long long)n, e);
    for (int64_t r = 0; r < ch.count && n > 0; r++) {
      double ws = w[ch.global_first + r];
      if (ws <= 0) {
        CHECK(cnt[ch.global_first + r] == 0, "zero weight drawn");
        continue;
      }
      double es = (double)n * ws / W;
      double o = (double)cnt[ch.global_first + r];
      chi_s += (o - es) * (o - es) / es;
    }
    df_s += (double)(nz - 1);
  }
  CHECK(chi_s < chi_bound(df_s), "in blocks: chi2 %.1f, df %.0f", chi_s, df_s);
  CHECK(ferry__draw_blocking_tv(&d) == 0, "with replacement the blocking "
                                          "keeps the distribution");
  ferry__draw_ctx_free(&c);
  ferry__draw_free(&d);
  /* a single non-zero weight: every draw is it */
  for (int64_t i = 0; i < m.num_samples; i++)
    w[i] = i == 93 ? 0.5f : 0.0f;
  p = wparams(&m, w, block, 3, 1, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  ferry__draw_ctx_init(&c);
  for (int64_t i = 0; i < d.D; i++)
    CHECK(ferry__draw_sample(&d, &c, i) == 93, "draw %lld", (long long)i);
  ferry__draw_ctx_free(&c);
  ferry__draw_free(&d);
  free(cnt);
  free(w);
  free(m.parts);
  return 0;
}

/* Without replacement: every non-zero sample exactly once; the first block
 * drawn follows the blocks' weights over many seeds; bad num_draws. */
static int test_weighted_norep(void) {
  int64_t counts[2] = {64, 29};
  ferry__manifest m;
  fake_manifest(&m, 2, counts);
  float *w = weights_of(m.num_samples, 11);
  ferry__err err = {0};
  ferry__draw d;
  ferry__draw_ctx c;
  ferry__draw_params p = wparams(&m, w, 4, 9, 0, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  int64_t nz = 0;
  for (int64_t i = 0; i < m.num_samples; i++)
    nz += w[i] > 0;
  CHECK(d.D == nz, "D %lld, non-zero %lld", (long long)d.D, (long long)nz);
  int64_t *cnt = calloc((size_t)m.num_samples, sizeof *cnt);
  ferry__draw_ctx_init(&c);
  for (int64_t i = 0; i < d.D; i++)
    cnt[ferry__draw_sample(&d, &c, i)]++;
  for (int64_t i = 0; i < m.num_samples; i++)
    CHECK(cnt[i] == (w[i] > 0), "sample %lld drawn %lld times (weight %g)",
          (long long)i, (long long)cnt[i], (double)w[i]);
  ferry__draw_ctx_free(&c);
  const int64_t nb = d.blocks.nchunks;
  double *bw = calloc((size_t)nb, sizeof *bw);
  for (int64_t b = 0; b < nb; b++)
    bw[b] = d.bweight[b];
  double total = d.total;
  ferry__draw_free(&d);
  const int seeds = 6000;
  int64_t *first = calloc((size_t)nb, sizeof *first);
  for (int s = 0; s < seeds; s++) {
    p.seed = (uint64_t)s * 7919;
    REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
    first[d.run_blk[0]]++;
    ferry__draw_free(&d);
  }
  double chi = 0, df = -1;
  for (int64_t b = 0; b < nb; b++)
    if (bw[b] > 0) {
      double e = seeds * bw[b] / total;
      chi += ((double)first[b] - e) * ((double)first[b] - e) / e;
      df += 1;
    } else
      CHECK(first[b] == 0, "a zero block drawn first");
  CHECK(chi < chi_bound(df), "first block: chi2 %.1f df %.0f", chi, df);
  p.num_draws = nz + 1;
  CHECK(ferry__draw_init(&d, &p, &err) == FERRY_EINVAL &&
            strstr(err.msg, "non-zero weight"),
        "too many draws without replacement: %s", err.msg);
  free(first);
  free(bw);
  free(cnt);
  free(w);
  free(m.parts);
  return 0;
}

/* Class-balanced weights (share / count): every class about 1/C of the
 * draws, also a class of one sample. */
static int test_balanced(void) {
  int64_t counts[1] = {1001};
  ferry__manifest m;
  fake_manifest(&m, 1, counts);
  float *w = malloc(1001 * sizeof *w);
  int label[1001];
  int64_t ccount[4] = {0};
  for (int i = 0; i < 1001; i++) {
    label[i] = i == 500 ? 3 : (i % 10 < 8 ? 0 : (i % 10 == 8 ? 1 : 2));
    ccount[label[i]]++;
  }
  for (int i = 0; i < 1001; i++)
    w[i] = (float)(0.25 / (double)ccount[label[i]]);
  ferry__err err = {0};
  ferry__draw d;
  ferry__draw_params p = wparams(&m, w, 4, 5, 1, 200000);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  int64_t got[4] = {0};
  for (int64_t i = 0; i < d.D; i++)
    got[label[ferry__draw_sample(&d, &c, i)]]++;
  for (int k = 0; k < 4; k++) {
    double share = (double)got[k] / (double)d.D;
    double sd = sqrt(4 * 0.25 * 0.75 / (double)d.D);
    CHECK(fabs(share - 0.25) < 6 * sd, "class %d: share %.4f of 0.25", k,
          share);
  }
  ferry__draw_ctx_free(&c);
  ferry__draw_free(&d);
  free(w);
  free(m.parts);
  return 0;
}

static ferry__draw_params mparams(const ferry__manifest *m,
                                  const ferry__draw_source *src, int n,
                                  int64_t draws) {
  ferry__draw_params p = {0};
  p.mode = FERRY__DRAW_MIX;
  p.m = m;
  p.block = 4;
  p.seed = 1;
  p.epoch = 2;
  p.num_draws = draws;
  p.nsources = n;
  p.sources = src;
  p.window = 64;
  return p;
}

/* The draws of each source: counts[s], and per-sample counts in per[]. */
static void mix_count(const ferry__draw *d, int64_t *per, int64_t *src_cnt,
                      int64_t lo, int64_t hi) {
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  for (int64_t i = lo; i < hi; i++) {
    int64_t s = ferry__draw_sample(d, &c, i);
    per[s]++;
    src_cnt[s < d->src[0].n ? 0 : 1]++;
  }
  ferry__draw_ctx_free(&c);
}

static int test_mix(void) {
  int64_t counts[2] = {1000, 10};
  ferry__manifest m;
  fake_manifest(&m, 2, counts);
  ferry__draw_source src[2] = {{0, 1000, 1, FERRY__XH_RESTART},
                               {1000, 10, 1, FERRY__XH_RESTART}};
  ferry__err err = {0};
  ferry__draw d;
  int64_t per[1010], sc[2];
  /* restart: the default epoch is the sources' total; proportions within
   * one draw at every window; the small source cycles whole passes */
  ferry__draw_params p = mparams(&m, src, 2, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  CHECK(d.D == 1010, "D %lld", (long long)d.D);
  for (int64_t w = 0; w < d.nwin; w++) {
    int64_t end = d.win[w].first + d.win[w].len;
    CHECK(llabs(d.cum[w * 2 + 1] + d.cnt[w * 2 + 1] - end / 2) <= 1,
          "window %lld: %lld of %lld", (long long)w,
          (long long)(d.cum[w * 2 + 1] + d.cnt[w * 2 + 1]), (long long)end);
  }
  memset(per, 0, sizeof per);
  memset(sc, 0, sizeof sc);
  mix_count(&d, per, sc, 0, d.D);
  CHECK(llabs(sc[1] - 505) <= 1, "small source drawn %lld", (long long)sc[1]);
  int64_t passes = sc[1] / 10;
  for (int i = 1000; i < 1010; i++)
    CHECK(per[i] >= passes && per[i] <= passes + 1,
          "sample %d drawn %lld times in %lld passes", i, (long long)per[i],
          (long long)passes);
  for (int i = 0; i < 1000; i++)
    CHECK(per[i] <= 1, "big source: sample %d twice in one pass", i);
  ferry__draw_free(&d);
  /* stop: the epoch ends when the small source runs out (about 20 draws),
   * no sample twice */
  src[0].exhaust = src[1].exhaust = FERRY__XH_STOP;
  p = mparams(&m, src, 2, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  CHECK(d.D >= 18 && d.D <= 21, "stop: D %lld", (long long)d.D);
  memset(per, 0, sizeof per);
  memset(sc, 0, sizeof sc);
  mix_count(&d, per, sc, 0, d.D);
  CHECK(sc[1] >= 9 && sc[1] <= 10, "stop: small source %lld", (long long)sc[1]);
  for (int i = 0; i < 1010; i++)
    CHECK(per[i] <= 1, "stop: sample %d twice", i);
  ferry__draw_free(&d);
  /* drop: the small one leaves, the big one takes its share: every sample
   * exactly once */
  src[0].exhaust = src[1].exhaust = FERRY__XH_DROP;
  p = mparams(&m, src, 2, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  CHECK(d.D == 1010, "drop: D %lld", (long long)d.D);
  memset(per, 0, sizeof per);
  memset(sc, 0, sizeof sc);
  mix_count(&d, per, sc, 0, d.D);
  for (int i = 0; i < 1010; i++)
    CHECK(per[i] == 1, "drop: sample %d drawn %lld times", i,
          (long long)per[i]);
  ferry__draw_free(&d);
  /* mix_by=batch: every global batch of 20 holds 10 +- 1 of each */
  src[0].exhaust = src[1].exhaust = FERRY__XH_RESTART;
  p = mparams(&m, src, 2, 400);
  p.mix_by_batch = 1;
  p.global_batch = 20;
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  for (int64_t g = 0; g < 20; g++) {
    memset(sc, 0, sizeof sc);
    memset(per, 0, sizeof per);
    mix_count(&d, per, sc, g * 20, g * 20 + 20);
    CHECK(sc[0] == 10 && sc[1] == 10, "batch %lld: %lld + %lld", (long long)g,
          (long long)sc[0], (long long)sc[1]);
  }
  ferry__draw_free(&d);
  /* a proportion of zero, a source out of the dataset */
  src[1].proportion = 0;
  p = mparams(&m, src, 2, 0);
  CHECK(ferry__draw_init(&d, &p, &err) == FERRY_EINVAL, "proportion 0");
  free(m.parts);
  return 0;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The same global batches on 1, 2, 3, 4 and 7 ranks (global batch 84), the
 * rank plans' slots are those draws, and their extents hold them. */
static int test_ranks(void) {
  int64_t counts[3] = {700, 333, 2000};
  ferry__manifest m;
  fake_manifest(&m, 3, counts);
  float *w = weights_of(m.num_samples, 5);
  ferry__err err = {0};
  ferry__draw d;
  ferry__draw_params p = wparams(&m, w, 16, 77, 1, 0);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  const int Ps[5] = {1, 2, 3, 4, 7};
  const int64_t GB = 84;
  int64_t nb = d.D / GB;
  int64_t *ref = malloc((size_t)(nb * GB) * sizeof *ref);
  int64_t *got = malloc((size_t)(nb * GB) * sizeof *got);
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  for (int k = 0; k < 5; k++) {
    int P = Ps[k];
    ferry__draw_cut cut;
    REQUIRE(ferry__draw_cut_make(&d, 0, GB / P, P, 0, &cut, &err) == 0,
            "cut: %s", err.msg);
    CHECK(cut.num_batches == nb, "P=%d: %lld batches", P,
          (long long)cut.num_batches);
    int64_t *dst = k ? got : ref;
    for (int r = 0; r < P; r++) {
      ferry__rank_plan rp;
      REQUIRE(ferry__draw_plan(&d, &cut, r, &rp, &err) == 0, "plan: %s",
              err.msg);
      CHECK(rp.num_batches == nb && rp.nslots == nb * (GB / P),
            "P=%d rank %d: %lld batches, %lld slots", P, r,
            (long long)rp.num_batches, (long long)rp.nslots);
      ferry__slot *sl = NULL;
      REQUIRE(ferry__plan_slots(&rp, &sl) == 0, "slots");
      for (int64_t i = 0; i < rp.nslots; i++) {
        const ferry__extent *e = &rp.extents[sl[i].extent];
        CHECK(sl[i].sample == e->global_first + sl[i].row &&
                  sl[i].row < e->count,
              "slot %lld outside its extent", (long long)i);
        int64_t g = i / (GB / P), t = i % (GB / P);
        dst[g * GB + r * (GB / P) + t] = sl[i].sample;
      }
      free(sl);
      ferry__rank_plan_free(&rp);
    }
    for (int64_t g = 0; g < nb; g++) /* a global batch as a multiset */
      qsort(dst + g * GB, (size_t)GB, sizeof *dst, cmp64);
    for (int64_t g = 0; k && g < nb; g++)
      CHECK(!memcmp(ref + g * GB, got + g * GB, (size_t)GB * sizeof *got),
            "P=%d: global batch %lld differs from one rank's", P, (long long)g);
  }
  ferry__draw_ctx_free(&c);
  free(ref);
  free(got);
  ferry__draw_free(&d);
  free(w);
  free(m.parts);
  return 0;
}

/* Two parts of counts[] samples, weights_of(seed), weighted draws without
 * replacement (blocks of 8, windows of 12): the set-up of the resume
 * tests.  Returns ferry__draw_init's code. */
static int two_parts_drawn(const int64_t counts[2], unsigned seed,
                           ferry__manifest *m, float **w, ferry__draw *d,
                           ferry__err *err) {
  fake_manifest(m, 2, counts);
  *w = weights_of(m->num_samples, seed);
  ferry__draw_params p = wparams(m, *w, 8, 12, 0, 0);
  return ferry__draw_init(d, &p, err);
}

/* 3 ranks serve 5 batches of 4, then 2 ranks serve the rest (tail=pad): the
 * premix positions served are every draw of the epoch exactly once, pads
 * after them. */
static int test_resume(void) {
  int64_t counts[2] = {300, 211};
  ferry__manifest m;
  float *w;
  ferry__err err = {0};
  ferry__draw d;
  REQUIRE(two_parts_drawn(counts, 3, &m, &w, &d, &err) == 0, "init: %s",
          err.msg);
  int64_t *seen = calloc((size_t)d.D, sizeof *seen);
  int64_t buf[64];
  ferry__draw_cut a, b;
  REQUIRE(ferry__draw_cut_make(&d, 0, 4, 3, 1, &a, &err) == 0, "cut");
  for (int64_t g = 0; g < 5; g++)
    for (int r = 0; r < 3; r++) {
      int64_t n = ferry__draw_batch(&d, &a, g, r, buf);
      for (int64_t t = 0; t < n; t++)
        if (buf[t] < d.D)
          seen[buf[t]]++;
    }
  REQUIRE(ferry__draw_cut_make(&d, 5 * 12, 4, 2, 1, &b, &err) == 0, "cut");
  int64_t pads = 0;
  for (int64_t g = 0; g < b.num_batches; g++)
    for (int r = 0; r < 2; r++) {
      int64_t n = ferry__draw_batch(&d, &b, g, r, buf);
      CHECK(n == 4, "resumed batch %lld rank %d: %lld", (long long)g, r,
            (long long)n);
      for (int64_t t = 0; t < n; t++) {
        if (buf[t] >= d.D)
          pads++;
        else
          seen[buf[t]]++;
      }
    }
  for (int64_t i = 0; i < d.D; i++)
    CHECK(seen[i] == 1, "draw %lld served %lld times", (long long)i,
          (long long)seen[i]);
  CHECK(pads == b.num_batches * 8 - (d.D - 60), "pads %lld", (long long)pads);
  free(seen);
  ferry__draw_free(&d);
  free(w);
  free(m.parts);
  return 0;
}

/* 4 ranks serve draws as batches of 1, each a different count (a token
 * budget's cut); 3 ranks serve the rest through a cut with holes (the
 * positions past the first one not served that some rank served): every
 * draw once, and ferry__draw_slot_pos names each rank's positions. */
static int test_holes(void) {
  int64_t counts[2] = {150, 111};
  ferry__manifest m;
  float *w;
  ferry__err err = {0};
  ferry__draw d;
  REQUIRE(two_parts_drawn(counts, 5, &m, &w, &d, &err) == 0, "init: %s",
          err.msg);
  int64_t *seen = calloc((size_t)d.D, sizeof *seen), buf[8];
  int64_t *holes = malloc((size_t)d.D * sizeof *holes), nh = 0;
  static const int64_t served[4] = {7, 3, 12, 5};
  ferry__draw_cut a, b;
  REQUIRE(ferry__draw_cut_make(&d, 0, 1, 4, 2, &a, &err) == 0, "cut");
  int64_t pos0 = INT64_MAX;
  for (int r = 0; r < 4; r++) {
    int64_t x = ferry__draw_slot_pos(&d, &a, r, served[r]);
    pos0 = x < pos0 ? x : pos0;
  }
  for (int r = 0; r < 4; r++)
    for (int64_t g = 0; g < served[r]; g++) {
      int64_t x = ferry__draw_slot_pos(&d, &a, r, g);
      CHECK(ferry__draw_batch(&d, &a, g, r, buf) == 1 &&
                buf[0] == ferry__draw_premix(&d, x),
            "rank %d slot %lld: position %lld", r, (long long)g, (long long)x);
      seen[buf[0]]++;
      if (x >= pos0)
        holes[nh++] = x;
    }
  for (int64_t i = 1; i < nh; i++) /* insertion sort: a handful */
    for (int64_t j = i; j > 0 && holes[j] < holes[j - 1]; j--) {
      int64_t t = holes[j];
      holes[j] = holes[j - 1];
      holes[j - 1] = t;
    }
  CHECK(nh > 0 && pos0 == 4 * 3 + 1, "pos0 %lld, %lld holes", (long long)pos0,
        (long long)nh);
  REQUIRE(ferry__draw_cut_holes(&d, pos0, 1, 3, 2, holes, nh, &b, &err) == 0,
          "cut with holes: %s", err.msg);
  CHECK(b.num_batches == (d.D - pos0 - nh + 2) / 3, "%lld batches",
        (long long)b.num_batches);
  for (int64_t g = 0; g < b.num_batches; g++)
    for (int r = 0; r < 3; r++) {
      int64_t n = ferry__draw_batch(&d, &b, g, r, buf);
      for (int64_t t = 0; t < n; t++) {
        CHECK(buf[t] ==
                  ferry__draw_premix(&d, ferry__draw_slot_pos(&d, &b, r, g)),
              "resumed rank %d batch %lld", r, (long long)g);
        if (buf[t] < d.D)
          seen[buf[t]]++;
      }
    }
  int64_t bad = 0;
  for (int64_t i = 0; i < d.D; i++)
    bad += seen[i] != 1;
  CHECK(bad == 0, "%lld draws not served exactly once", (long long)bad);
  int64_t back[2] = {holes[0], holes[0]}; /* out of order: refused */
  CHECK(ferry__draw_cut_holes(&d, pos0, 1, 3, 2, back, 2, &b, &err) ==
            FERRY_EINVAL,
        "holes out of order accepted");
  free(seen);
  free(holes);
  ferry__draw_free(&d);
  free(w);
  free(m.parts);
  return 0;
}

/* num_draws far beyond the samples: the runs of draws stay O(blocks) (at
 * most max(4 x blocks, 2^20) plus one a block), not one per draw_block
 * draws, and the blocks still get their shares to within a run. */
static int test_many_draws(void) {
  int64_t counts[1] = {1000};
  ferry__manifest m;
  fake_manifest(&m, 1, counts);
  float *w = weights_of(m.num_samples, 13);
  const int64_t D = INT64_C(1) << 25; /* 2^22 runs of 8 without the cap */
  ferry__draw d;
  ferry__err err = {0};
  ferry__draw_params p = wparams(&m, w, 8, 5, 1, D);
  REQUIRE(ferry__draw_init(&d, &p, &err) == 0, "init: %s", err.msg);
  CHECK(d.D == D && d.nruns <= (INT64_C(1) << 20) + d.blocks.nchunks,
        "%lld runs for %lld draws of %lld blocks", (long long)d.nruns,
        (long long)D, (long long)d.blocks.nchunks);
  CHECK(d.bytes < ((size_t)64 << 20), "tables of %zu bytes", d.bytes);
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  int64_t bad = 0;
  for (int64_t i = 0; i < D; i += 4099) {
    int64_t s = ferry__draw_sample(&d, &c, i);
    bad += s < 0 || s >= m.num_samples || !(w[s] > 0);
  }
  CHECK(bad == 0, "%lld draws outside the dataset or of zero weight",
        (long long)bad);
  ferry__draw_ctx_free(&c);
  ferry__draw_free(&d);
  free(w);
  free(m.parts);
  return 0;
}

int main(void) {
  test_weighted_rep();
  test_many_draws();
  test_weighted_norep();
  test_balanced();
  test_mix();
  test_ranks();
  test_resume();
  test_holes();
  return ft_summary("test_draw");
}
