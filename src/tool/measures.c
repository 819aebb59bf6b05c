/*
 * measures.c - the shuffle-quality measures of `ferry quality` (measures.h).
 * Kept apart from the command so they are pure and unit-tested
 * (tests/unit/test_quality.c), and so they see orders only as arrays: how
 * an order is obtained from the plan is the library's business
 * (ferry_plan_order, src/plan/served.c).  Everything exact: pair
 * co-occurrence groups each batch's members by their next-epoch batch
 * (a sort per batch), Kendall's tau counts inversions by merge sort.
 */
#include "measures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* first[s]: the first slot of sample s in o, or -1. */
static int64_t *first_slots(const qm_order *o, int64_t N) {
  int64_t *first = malloc((size_t)(N > 0 ? N : 1) * sizeof *first);
  if (!first)
    return NULL;
  for (int64_t s = 0; s < N; s++)
    first[s] = -1;
  for (int64_t i = 0; i < o->n; i++) {
    int64_t s = o->sample[i];
    if (s >= 0 && s < N && first[s] < 0)
      first[s] = i;
  }
  return first;
}

/* batch_of[i]: the batch of slot i. */
static int64_t *slot_batches(const qm_order *o) {
  int64_t *b = malloc((size_t)(o->n > 0 ? o->n : 1) * sizeof *b);
  if (!b)
    return NULL;
  for (int64_t k = 0; k < o->nbatches; k++)
    for (int64_t i = o->bstart[k]; i < o->bstart[k + 1]; i++)
      b[i] = k;
  return b;
}

static int64_t max_batch(const qm_order *o) {
  int64_t m = 0;
  for (int64_t k = 0; k < o->nbatches; k++)
    if (o->bstart[k + 1] - o->bstart[k] > m)
      m = o->bstart[k + 1] - o->bstart[k];
  return m;
}

int qm_chunks_per_batch(const qm_order *o, const int64_t *chunk, double *mean,
                        double *min) {
  *mean = *min = NAN;
  int64_t *tmp = malloc((size_t)(max_batch(o) + 1) * sizeof *tmp);
  if (!tmp)
    return -1;
  double sum = 0, lo = INFINITY;
  int64_t counted = 0;
  for (int64_t k = 0; k < o->nbatches; k++) {
    int64_t m = o->bstart[k + 1] - o->bstart[k];
    if (m == 0)
      continue;
    memcpy(tmp, chunk + o->bstart[k], (size_t)m * sizeof *tmp);
    qsort(tmp, (size_t)m, sizeof *tmp, cmp_i64);
    int64_t d = 1;
    for (int64_t i = 1; i < m; i++)
      d += tmp[i] != tmp[i - 1];
    sum += (double)d;
    if ((double)d < lo)
      lo = (double)d;
    counted++;
  }
  free(tmp);
  if (counted) {
    *mean = sum / (double)counted;
    *min = lo;
  }
  return 0;
}

int qm_rank_stay(const qm_order *a, const qm_order *b, int64_t N, double *out) {
  *out = NAN;
  int64_t *fa = first_slots(a, N), *fb = first_slots(b, N);
  int64_t *ba = slot_batches(a), *bb = slot_batches(b);
  int rc = fa && fb && ba && bb ? 0 : -1;
  int64_t both = 0, same = 0;
  for (int64_t s = 0; !rc && s < N; s++) {
    if (fa[s] < 0 || fb[s] < 0)
      continue;
    both++;
    same += a->brank[ba[fa[s]]] == b->brank[bb[fb[s]]];
  }
  if (!rc && both)
    *out = (double)same / (double)both;
  free(fa);
  free(fb);
  free(ba);
  free(bb);
  return rc;
}

int qm_pair_again(const qm_order *a, const qm_order *b, int64_t N,
                  double *out) {
  *out = NAN;
  int64_t *fa = first_slots(a, N), *fb = first_slots(b, N);
  int64_t *bb = slot_batches(b);
  int64_t *keys = malloc((size_t)(max_batch(a) + 1) * sizeof *keys);
  int rc = fa && fb && bb && keys ? 0 : -1;
  double pairs = 0, again = 0;
  for (int64_t k = 0; !rc && k < a->nbatches; k++) {
    int64_t m = 0;
    for (int64_t i = a->bstart[k]; i < a->bstart[k + 1]; i++) {
      int64_t s = a->sample[i];
      if (s >= 0 && s < N && fa[s] == i && fb[s] >= 0)
        keys[m++] = bb[fb[s]];
    }
    pairs += (double)m * (double)(m - 1) / 2;
    qsort(keys, (size_t)m, sizeof *keys, cmp_i64);
    for (int64_t i = 0, j; i < m; i = j) {
      for (j = i; j < m && keys[j] == keys[i]; j++)
        ;
      again += (double)(j - i) * (double)(j - i - 1) / 2;
    }
  }
  if (!rc && pairs > 0)
    *out = again / pairs;
  free(fa);
  free(fb);
  free(bb);
  free(keys);
  return rc;
}

int qm_displacement(const qm_order *a, int64_t N, double *out) {
  *out = NAN;
  int64_t *fa = first_slots(a, N);
  if (!fa)
    return -1;
  double sum = 0;
  int64_t m = 0;
  for (int64_t s = 0; s < N; s++)
    if (fa[s] >= 0) {
      sum += fabs((double)(fa[s] - s));
      m++;
    }
  if (m && N > 0)
    *out = sum / (double)m / (double)N;
  free(fa);
  return 0;
}

/* Inversions of v[0..n) (sorted on return), tmp of n entries. */
static double inversions(int64_t *v, int64_t *tmp, int64_t n) {
  if (n < 2)
    return 0;
  int64_t h = n / 2;
  double inv = inversions(v, tmp, h) + inversions(v + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) {
    if (v[j] < v[i]) {
      inv += (double)(h - i); /* v[j] is below every v[i..h) */
      tmp[k++] = v[j++];
    } else {
      tmp[k++] = v[i++];
    }
  }
  while (i < h)
    tmp[k++] = v[i++];
  while (j < n)
    tmp[k++] = v[j++];
  memcpy(v, tmp, (size_t)n * sizeof *v);
  return inv;
}

int qm_kendall(const qm_order *a, const qm_order *b, int64_t N, double *out) {
  *out = NAN;
  int64_t *fb = first_slots(b, N), *fa = first_slots(a, N);
  int64_t *v = malloc((size_t)(a->n > 0 ? a->n : 1) * sizeof *v);
  int64_t *tmp = malloc((size_t)(a->n > 0 ? a->n : 1) * sizeof *tmp);
  int rc = fa && fb && v && tmp ? 0 : -1;
  int64_t m = 0;
  for (int64_t i = 0; !rc && i < a->n; i++) {
    int64_t s = a->sample[i];
    if (s >= 0 && s < N && fa[s] == i && fb[s] >= 0)
      v[m++] = fb[s]; /* b's positions in a's order */
  }
  if (!rc && m >= 2) {
    double inv = inversions(v, tmp, m);
    *out = 1 - 4 * inv / ((double)m * (double)(m - 1));
  }
  free(fa);
  free(fb);
  free(v);
  free(tmp);
  return rc;
}

int qm_label_kl(const qm_order *a, const int32_t *cls, int64_t N, int ncls,
                double *out) {
  *out = NAN;
  if (ncls < 1)
    return 0;
  double *q = calloc((size_t)ncls, sizeof *q);
  double *p = calloc((size_t)ncls, sizeof *p);
  int rc = q && p ? 0 : -1;
  for (int64_t s = 0; !rc && s < N; s++)
    q[cls[s]] += 1.0 / (double)N;
  double sum = 0;
  int64_t counted = 0;
  for (int64_t k = 0; !rc && k < a->nbatches; k++) {
    int64_t m = a->bstart[k + 1] - a->bstart[k];
    if (m == 0)
      continue;
    memset(p, 0, (size_t)ncls * sizeof *p);
    for (int64_t i = a->bstart[k]; i < a->bstart[k + 1]; i++)
      if (a->sample[i] >= 0 && a->sample[i] < N)
        p[cls[a->sample[i]]] += 1.0 / (double)m;
    double kl = 0;
    for (int c = 0; c < ncls; c++)
      if (p[c] > 0)
        kl += p[c] * log(p[c] / q[c]);
    sum += kl;
    counted++;
  }
  if (!rc && counted)
    *out = sum / (double)counted;
  free(q);
  free(p);
  return rc;
}

/* SplitMix64: the n-th value from seed. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void qm_ideal(const qm_order *a, uint64_t seed, int64_t *out) {
  memcpy(out, a->sample, (size_t)a->n * sizeof *out);
  uint64_t state = seed;
  for (int64_t i = a->n - 1; i > 0; i--) {
    uint64_t bound = (uint64_t)i + 1, r;
    uint64_t threshold = (0 - bound) % bound; /* unbiased: rejection */
    do
      r = mix(state++);
    while (r < threshold);
    int64_t j = (int64_t)(r % bound);
    int64_t t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
}
