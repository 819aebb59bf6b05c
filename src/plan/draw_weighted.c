/*
 * plan/draw_weighted.c - the draws of weighted and class-balanced sampling
 * (plan/draw.h, docs/sampling.md "How draws are made").  Why this shape
 * (issue 30):
 *
 * - An epoch must be a weighted sample in itself, not only on average over
 *   epochs.  Drawing whole blocks by their weight (the design before issue
 *   30) makes an epoch of a few hundred block draws a sample of a few
 *   hundred: on 40,000 rows in blocks of 13,108 the share of a class asked
 *   at 0.75 came out 0.49..0.91.  So the epoch's D draws are dealt to the
 *   blocks by systematic sampling over their weights -- one uniform offset
 *   u, block b (in a keyed random order) gets floor(C_b + W_b D/W + u) -
 *   floor(C_b + u) draws, C_b the scaled weight before it: within one draw
 *   of D W_b / W and exactly that in expectation -- and only the samples
 *   inside a block are drawn at random, by their weights.  A class's count
 *   then varies no more than binomially (the law of total variance: the
 *   blocks' counts are fixed), plus at most a draw per block.
 * - Reads stay long: a block's draws are cut into runs of one to two
 *   blocks' worth of draws (a block of fewer draws is one shorter run),
 *   the runs put in a keyed random order over the epoch, and the draw
 *   window premixes them (draw.c).  Each run reads its block once; an
 *   epoch reads every block of non-zero count at least once -- about the
 *   dataset, like shuffle=chunks, when num_draws is near the samples.  The
 *   price: an epoch much shorter than the dataset (num_draws << N) reads
 *   every block for its few draws (up to block / (D / blocks) times the
 *   bytes served); a coarser unit than a draw would bring back the block
 *   draws' variance (docs/sampling.md "Trade-off").
 * - Without replacement the same allocation uses each sample's inclusion
 *   probability in successive (Efraimidis-Spirakis) sampling of D draws,
 *   1 - exp(-tau w), summed per block; a block gives the first draws of
 *   its own weighted order, and the blocks follow each other in a
 *   weighted random order (heavy ones early).
 * - Pure functions of (weights, seed, epoch, D, block): no world size, no
 *   thread; O(blocks) tables (16 bytes a run, 8 a block).
 */
#include "config.h"
#include "plan/draw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double unit(uint64_t r) { /* (0, 1] */
  return ((double)(r >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

typedef struct keyed {
  double k;
  int64_t id;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->k != y->k)
    return x->k < y->k ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* A block's rows by key: insertion sort for a block's few rows (qsort's
 * comparator calls were a quarter of the plan without replacement). */
static void sort_keyed(keyed *v, int64_t n) {
  if (n > 256) {
    qsort(v, (size_t)n, sizeof *v, cmp_keyed);
    return;
  }
  for (int64_t i = 1; i < n; i++) {
    keyed x = v[i];
    int64_t j = i;
    while (j > 0 &&
           (v[j - 1].k > x.k || (v[j - 1].k == x.k && v[j - 1].id > x.id))) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

/* Efraimidis-Spirakis: item i of weight w_i gets key -log(u_i) / w_i; the
 * items in ascending key order are a weighted draw without replacement. */
static double es_key(uint64_t key, int64_t id, double wt) {
  return -log(unit(ferry__rand64(key, (uint64_t)id))) / wt;
}

/* Systematic sampling: D draws dealt to the nb blocks by val[] (>= 0, sum
 * total > 0), the blocks in a keyed random order (so neighbours' counts
 * are not tied from epoch to epoch); out[b] is floor or ceil of D val[b] /
 * total, exactly that in expectation, and the counts sum to D.  perm:
 * scratch of nb. */
static void systematic(const double *val, double total, int64_t nb, int64_t D,
                       uint64_t key, int64_t *perm, int64_t *out) {
  for (int64_t b = 0; b < nb; b++)
    perm[b] = b;
  ferry__shuffle(perm, nb, key);
  const double u = 1.0 - unit(ferry__rand64(key, UINT64_C(1) << 63)); /*[0,1)*/
  const double scale = (double)D / total;
  double cum = 0;
  int64_t prev = 0;
  for (int64_t q = 0; q < nb; q++) {
    int64_t b = perm[q];
    cum += val[b];
    int64_t at = q == nb - 1 ? D : (int64_t)floor(cum * scale + u);
    at = at < prev ? prev : (at > D ? D : at);
    out[b] = at - prev;
    prev = at;
  }
}

/* The samples of non-zero weight of block c. */
static int64_t block_nonzero(const ferry__draw *d, ferry__chunk c) {
  int64_t nz = 0;
  for (int64_t r = 0; r < c.count; r++)
    nz += d->p.w[c.global_first + r] > 0;
  return nz;
}

/* ---- With replacement ---------------------------------------------------- */

/* Runs: block b's cnt[b] draws in max(1, cnt[b] / L) runs of equal
 * length (one to two L's worth: a count just over L is one read, not two),
 * the runs in a keyed random order over the epoch.  L is the block, or
 * longer when num_draws is so large that the runs would outnumber
 * max(4 x blocks, 2^20): the tables stay O(blocks) whatever num_draws. */
static int runs_make(ferry__draw *d, const int64_t *cnt, int64_t nb,
                     ferry__err *err) {
  const int64_t most = 4 * nb > (INT64_C(1) << 20) ? 4 * nb : INT64_C(1) << 20;
  const int64_t B = d->D / most + 1 > d->p.block ? d->D / most + 1 : d->p.block;
  int64_t P = 0;
  for (int64_t b = 0; b < nb; b++)
    P += cnt[b] > 0 ? (cnt[b] / B > 1 ? cnt[b] / B : 1) : 0;
  d->nruns = P;
  d->run_blk = malloc((size_t)(P ? P : 1) * sizeof *d->run_blk);
  d->run_first = malloc((size_t)(P + 1) * sizeof *d->run_first);
  int64_t *perm = malloc((size_t)(P ? P : 1) * sizeof *perm);
  int64_t *len = malloc((size_t)(P ? P : 1) * sizeof *len);
  int64_t *blk = malloc((size_t)(P ? P : 1) * sizeof *blk);
  int rc = 0;
  if (!d->run_blk || !d->run_first || !perm || !len || !blk)
    rc = ferry__oom(err, -1, (size_t)(P + 1) * 5 * sizeof(int64_t),
                    "weighted sampling: the %lld runs of draws of %lld "
                    "blocks",
                    (long long)P, (long long)nb);
  for (int64_t b = 0, k = 0; !rc && b < nb; b++) {
    int64_t n = cnt[b] > 0 ? (cnt[b] / B > 1 ? cnt[b] / B : 1) : 0;
    for (int64_t t = 0; t < n; t++, k++) {
      blk[k] = b;
      len[k] = cnt[b] * (t + 1) / n - cnt[b] * t / n;
      perm[k] = k;
    }
  }
  if (!rc) {
    ferry__shuffle(perm, P,
                   ferry__rand_key(d->p.seed, FERRY__STREAM_DORDER,
                                   (uint64_t)d->p.epoch, 1));
    int64_t at = 0;
    for (int64_t q = 0; q < P; q++) {
      d->run_blk[q] = blk[perm[q]];
      d->run_first[q] = at;
      at += len[perm[q]];
    }
    d->run_first[P] = at;
    d->bytes += (size_t)(2 * P + 1) * sizeof(int64_t);
  }
  free(perm);
  free(len);
  free(blk);
  return rc;
}

static int rep_init(ferry__draw *d, ferry__err *err) {
  const int64_t nb = d->blocks.nchunks;
  d->D = d->p.num_draws ? d->p.num_draws : d->p.m->num_samples;
  d->kwithin = ferry__rand_key(d->p.seed, FERRY__STREAM_DWITHIN,
                               (uint64_t)d->p.epoch, 0);
  int64_t *cnt = malloc((size_t)nb * sizeof *cnt);
  int64_t *perm = malloc((size_t)nb * sizeof *perm);
  int rc = 0;
  if (!cnt || !perm)
    rc = ferry__oom(err, -1, (size_t)nb * 2 * sizeof *cnt,
                    "weighted sampling: the draws of %lld blocks",
                    (long long)nb);
  if (!rc) {
    systematic(d->bweight, d->total, nb, d->D,
               ferry__rand_key(d->p.seed, FERRY__STREAM_DBLOCK,
                               (uint64_t)d->p.epoch, 0),
               perm, cnt);
    rc = runs_make(d, cnt, nb, err);
  }
  free(cnt);
  free(perm);
  return rc;
}

/* ---- Without replacement ------------------------------------------------- */

/* tau with sum_i (1 - exp(-tau w_i)) = D over the non-zero weights (the
 * expected inclusions of successive sampling of D draws), by Newton's
 * method from D / W (below the root; the sum is concave, so the iterates
 * rise to it) on a histogram of the weights by their top 16 bits (mean
 * weight per bucket: the allocation is rescaled to D anyway). */
static int tau_solve(ferry__draw *d, int64_t D, ferry__err *err) {
  enum { NH = 1 << 15 };
  int64_t *hn = calloc(NH, sizeof *hn);
  double *hw = calloc(NH, sizeof *hw);
  if (!hn || !hw) {
    free(hn);
    free(hw);
    return ferry__oom(err, -1, NH * (sizeof *hn + sizeof *hw),
                      "weighted sampling: the histogram of the weights");
  }
  for (int64_t i = 0; i < d->p.m->num_samples; i++) {
    float x = d->p.w[i];
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if (x > 0) {
      hn[(bits >> 16) & (NH - 1)]++;
      hw[(bits >> 16) & (NH - 1)] += (double)x;
    }
  }
  double tau = (double)D / d->total;
  for (int it = 0; it < 200; it++) {
    double f = 0, df = 0;
    for (int h = 0; h < NH; h++)
      if (hn[h]) {
        double m = hw[h] / (double)hn[h], e = exp(-tau * m);
        f += (double)hn[h] * -expm1(-tau * m);
        df += hw[h] * e;
      }
    if (!((double)D - f > 1e-9 * (double)D) || !(df > 0))
      break;
    tau += ((double)D - f) / df;
  }
  free(hn);
  free(hw);
  d->tau = tau;
  return 0;
}

/* Block b's expected draws without replacement (its inclusions' sum). */
static double block_inclusion(const ferry__draw *d, ferry__chunk c) {
  double s = 0;
  for (int64_t r = 0; r < c.count; r++) {
    double x = (double)d->p.w[c.global_first + r];
    s += x > 0 ? (d->tau > 0 ? -expm1(-d->tau * x) : 1.0) : 0.0;
  }
  return s;
}

/* cnt[b] of the D draws to block b by its expected inclusions, never more
 * than its non-zero samples (rounding up near saturation: the excess goes,
 * a draw each, to the blocks with room, in block order). */
static int norep_counts(ferry__draw *d, int64_t D, int64_t Z, int64_t *cnt,
                        ferry__err *err) {
  const int64_t nb = d->blocks.nchunks;
  int64_t *nz = malloc((size_t)nb * sizeof *nz);
  int64_t *perm = malloc((size_t)nb * sizeof *perm);
  double *e = calloc((size_t)(nb ? nb : 1), sizeof *e);
  int rc = (!nz || !perm || !e)
               ? ferry__oom(err, -1, (size_t)nb * 3 * sizeof(double),
                            "weighted sampling: the draws of %lld blocks",
                            (long long)nb)
               : 0;
  if (!rc && D < Z)
    rc = tau_solve(d, D, err);
  d->expected = 0;
  for (int64_t b = 0; !rc && b < nb; b++) {
    ferry__chunk c = ferry__chunk_get(&d->blocks, b);
    nz[b] = block_nonzero(d, c);
    e[b] = D < Z ? block_inclusion(d, c) : (double)nz[b];
    d->expected += e[b];
  }
  if (!rc && D < Z) {
    systematic(e, d->expected, nb, D,
               ferry__rand_key(d->p.seed, FERRY__STREAM_DBLOCK,
                               (uint64_t)d->p.epoch, 0),
               perm, cnt);
    int64_t excess = 0;
    for (int64_t b = 0; b < nb; b++)
      if (cnt[b] > nz[b]) {
        excess += cnt[b] - nz[b];
        cnt[b] = nz[b];
      }
    for (int64_t b = 0; excess > 0; b = (b + 1) % nb)
      if (cnt[b] < nz[b]) {
        cnt[b]++;
        excess--;
      }
  } else if (!rc)
    memcpy(cnt, nz, (size_t)nb * sizeof *cnt);
  free(nz);
  free(perm);
  free(e);
  return rc;
}

/* The blocks of non-zero count in a weighted random order (Efraimidis-
 * Spirakis keys on their weights), a run each. */
static int norep_order(ferry__draw *d, const int64_t *cnt, ferry__err *err) {
  const int64_t nb = d->blocks.nchunks;
  keyed *k = malloc((size_t)(nb ? nb : 1) * sizeof *k);
  if (!k)
    return ferry__oom(err, -1, (size_t)(nb ? nb : 1) * sizeof *k,
                      "weighted sampling: the order of %lld blocks",
                      (long long)nb);
  uint64_t key =
      ferry__rand_key(d->p.seed, FERRY__STREAM_DORDER, (uint64_t)d->p.epoch, 0);
  int64_t n = 0;
  for (int64_t b = 0; b < nb; b++)
    if (cnt[b] > 0)
      k[n++] = (keyed){es_key(key, b, d->bweight[b]), b};
  qsort(k, (size_t)n, sizeof *k, cmp_keyed);
  d->nruns = n;
  d->run_blk = malloc((size_t)(n ? n : 1) * sizeof *d->run_blk);
  d->run_first = malloc((size_t)(n + 1) * sizeof *d->run_first);
  if (!d->run_blk || !d->run_first) {
    free(k);
    return ferry__oom(err, -1, (size_t)(2 * n + 1) * sizeof(int64_t),
                      "weighted sampling: the order of %lld blocks",
                      (long long)n);
  }
  int64_t at = 0;
  for (int64_t q = 0; q < n; q++) {
    d->run_blk[q] = k[q].id;
    d->run_first[q] = at;
    at += cnt[k[q].id];
  }
  d->run_first[n] = at;
  d->bytes += (size_t)(2 * n + 1) * sizeof(int64_t);
  free(k);
  return 0;
}

static int norep_init(ferry__draw *d, ferry__err *err) {
  const int64_t nb = d->blocks.nchunks;
  int64_t Z = 0;
  for (int64_t i = 0; i < d->p.m->num_samples; i++)
    Z += d->p.w[i] > 0;
  if (d->p.num_draws > Z)
    return ferry__seterr(err, FERRY_EINVAL,
                         "num_draws=%lld without replacement, but only %lld "
                         "samples have a non-zero weight",
                         (long long)d->p.num_draws, (long long)Z);
  d->D = d->p.num_draws ? d->p.num_draws : Z;
  int64_t *cnt = malloc((size_t)nb * sizeof *cnt);
  if (!cnt)
    return ferry__oom(err, -1, (size_t)nb * sizeof *cnt,
                      "weighted sampling: the draws of %lld blocks",
                      (long long)nb);
  int rc = norep_counts(d, d->D, Z, cnt, err);
  if (!rc)
    rc = norep_order(d, cnt, err);
  free(cnt);
  return rc;
}

int ferry__draw_weighted_init(ferry__draw *d, ferry__err *err) {
  int64_t nb = d->blocks.nchunks;
  d->bweight = calloc((size_t)(nb ? nb : 1), sizeof *d->bweight);
  if (!d->bweight)
    return ferry__oom(err, -1, (size_t)(nb ? nb : 1) * sizeof *d->bweight,
                      "weighted sampling: the weights of %lld blocks",
                      (long long)nb);
  d->total = 0;
  for (int64_t b = 0; b < nb; b++) {
    ferry__chunk c = ferry__chunk_get(&d->blocks, b);
    double s = 0;
    for (int64_t r = 0; r < c.count; r++)
      s += (double)d->p.w[c.global_first + r];
    d->bweight[b] = s;
    d->total += s;
  }
  if (!(d->total > 0) || !isfinite(d->total))
    return ferry__seterr(err, FERRY_EINVAL,
                         "weighted sampling: the weights sum to %g (every "
                         "weight zero, or their sum overflows)",
                         d->total);
  d->bytes += (size_t)nb * sizeof(double);
  return d->p.replacement ? rep_init(d, err) : norep_init(d, err);
}

/* ---- The draws ----------------------------------------------------------- */

/* The run of draw i (the last one cached: draws are evaluated in order, so
 * most fall in it). */
static int64_t run_of(const ferry__draw *d, ferry__draw_ctx *c, int64_t i) {
  if (c->oq >= 0 && i >= d->run_first[c->oq] && i < d->run_first[c->oq + 1])
    return c->oq;
  int64_t q = ferry__last_le(d->run_first, d->nruns + 1, i);
  while (q > 0 && q >= d->nruns)
    q--;
  while (q + 1 < d->nruns && d->run_first[q + 1] <= i) /* empty runs */
    q++;
  c->oq = q;
  return q;
}

int64_t ferry__draw_weighted_block(const ferry__draw *d, ferry__draw_ctx *c,
                                   int64_t i) {
  return d->run_blk[run_of(d, c, i)];
}

/* With replacement: draw i of block b picks a row by weight, a binary
 * search in the block's cumulative weights (cached: a run's draws are
 * evaluated one after the other), its uniform keyed by i alone. */
static int64_t weighted_rep(const ferry__draw *d, ferry__draw_ctx *c,
                            int64_t i) {
  const int64_t b = ferry__draw_weighted_block(d, c, i);
  if (c->rep_b != b) {
    ferry__chunk ch = ferry__chunk_get(&d->blocks, b);
    if (c->cap_cum < ch.count) {
      free(c->cum);
      c->cum = malloc((size_t)ch.count * sizeof *c->cum);
      c->cap_cum = c->cum ? ch.count : 0;
      if (!c->cum) {
        c->rep_b = -1;
        return FERRY_ENOMEM;
      }
    }
    double acc = 0;
    for (int64_t r = 0; r < ch.count; r++)
      c->cum[r] = acc += (double)d->p.w[ch.global_first + r];
    c->rep_first = ch.global_first;
    c->rep_n = ch.count;
    c->rep_b = b;
  }
  double target = (1.0 - unit(ferry__rand64(d->kwithin, (uint64_t)i))) *
                  c->cum[c->rep_n - 1];
  /* the first row with cum > target: a branch-free binary search (the
   * branches of a plain one mispredict half the time) */
  const double *at = c->cum;
  for (int64_t len = c->rep_n; len > 1;) {
    int64_t half = len / 2;
    at += (int64_t)(at[half - 1] <= target) * half;
    len -= half;
  }
  int64_t lo = at - c->cum;
  while (lo > 0 && !(d->p.w[c->rep_first + lo] > 0)) /* never a zero */
    lo--;
  return c->rep_first + lo;
}

/* Block b's non-zero rows in their own weighted order into c->rows. */
static int block_rows(const ferry__draw *d, ferry__draw_ctx *c, int64_t b) {
  ferry__chunk ch = ferry__chunk_get(&d->blocks, b);
  if (c->cap_rows < ch.count) {
    free(c->rows);
    c->rows = malloc((size_t)ch.count * 2 * sizeof *c->rows);
    c->cap_rows = c->rows ? ch.count * 2 : 0;
    if (!c->rows) {
      c->blk = -1;
      return FERRY_ENOMEM;
    }
  }
  keyed *kk = malloc((size_t)ch.count * sizeof *kk);
  if (!kk) {
    c->blk = -1;
    return FERRY_ENOMEM;
  }
  uint64_t key = ferry__rand_key(d->p.seed, FERRY__STREAM_DWITHIN,
                                 (uint64_t)d->p.epoch, (uint64_t)b + 1);
  int64_t n = 0;
  for (int64_t r = 0; r < ch.count; r++) {
    double wt = (double)d->p.w[ch.global_first + r];
    if (wt > 0)
      kk[n++] = (keyed){es_key(key, r, wt), ch.global_first + r};
  }
  sort_keyed(kk, n);
  for (int64_t r = 0; r < n; r++)
    c->rows[r] = kk[r].id;
  free(kk);
  c->nrows = n;
  c->blk = b;
  return 0;
}

/* Without replacement: the k-th draw of a block's run is the k-th of its
 * rows in their weighted order. */
static int64_t weighted_norep(const ferry__draw *d, ferry__draw_ctx *c,
                              int64_t i) {
  int64_t q = run_of(d, c, i);
  int64_t b = d->run_blk[q], k = i - d->run_first[q];
  if (c->blk != b) {
    int rc = block_rows(d, c, b);
    if (rc)
      return rc;
  }
  return k < c->nrows ? c->rows[k] : c->rows[c->nrows - 1];
}

int64_t ferry__draw_weighted_sample(const ferry__draw *d, ferry__draw_ctx *c,
                                    int64_t i) {
  return d->p.replacement ? weighted_rep(d, c, i) : weighted_norep(d, c, i);
}

double ferry__draw_blocking_tv(const ferry__draw *d) {
  (void)d;
  return 0;
}

double ferry__draw_planned_share(const ferry__draw *d, int64_t first,
                                 int64_t count) {
  if (d->p.mode != FERRY__DRAW_WEIGHTED || !(d->total > 0))
    return 0;
  double s = 0;
  for (int64_t i = first; i < first + count; i++) {
    double x = (double)d->p.w[i];
    if (d->p.replacement)
      s += x;
    else
      s += x > 0 ? (d->tau > 0 ? -expm1(-d->tau * x) : 1.0) : 0.0;
  }
  double all = d->p.replacement ? d->total : d->expected;
  return all > 0 ? s / all : 0;
}
