/*
 * measures.h - how random a served order is (`ferry quality`): pure
 * functions over orders given as arrays, no MPI, no loader, so that
 * tests/unit/test_quality.c can check them on small orders computed by hand.
 */
#ifndef FERRY_TOOL_MEASURES_H
#define FERRY_TOOL_MEASURES_H

#include <stdint.h>

/**
 * One epoch's order over W ranks, rank-major: rank 0's slots in served
 * order, then rank 1's, and so on; a slot's index in sample[] is its
 * position.  Every sample index is in [0, N) of the call; a sample may
 * appear twice (tail=pad) or not at all (drop_last, a subset): the measures
 * use a sample's first slot.
 */
typedef struct qm_order {
  int64_t n;             /* slots                                  */
  const int64_t *sample; /* [n] global sample index of each slot   */
  int64_t nbatches;
  const int64_t *bstart; /* [nbatches + 1] slot offsets of batches */
  const int *brank;      /* [nbatches] the rank serving each batch  */
} qm_order;

/* Every function returns 0, or -1 when out of memory.  A measure with
 * nothing to measure (no batch, no pair, fewer than 2 samples) is NaN. */

/** Distinct values of chunk[] (one per slot) in each batch: mean, min. */
int qm_chunks_per_batch(const qm_order *o, const int64_t *chunk, double *mean,
                        double *min);
/** Of the samples served in both a and b, the fraction served by the same
 *  rank in both. */
int qm_rank_stay(const qm_order *a, const qm_order *b, int64_t N, double *out);
/** Of the pairs of distinct samples sharing a batch in a (both served in
 *  b), the fraction sharing a batch again in b.  Exact: O(n log B). */
int qm_pair_again(const qm_order *a, const qm_order *b, int64_t N, double *out);
/** Mean |position - sample index| / N over the samples served. */
int qm_displacement(const qm_order *a, int64_t N, double *out);
/** Kendall's tau between the positions in a and in b of the samples served
 *  in both (no ties): 1 - 4 * discordant / (m (m - 1)), the discordant
 *  pairs counted exactly by merge sort in O(m log m). */
int qm_kendall(const qm_order *a, const qm_order *b, int64_t N, double *out);
/** Mean over batches of KL(p_batch || q), natural log, where q is the
 *  distribution of cls[0..N) (class of each sample, in [0, ncls)) and
 *  p_batch that of the batch's slots. */
int qm_label_kl(const qm_order *a, const int32_t *cls, int64_t N, int ncls,
                double *out);
/** The ideal order of the same shape: out[] (n entries) receives a's
 *  samples in a uniform random permutation (Fisher-Yates, SplitMix64 from
 *  seed), to be used with a's batches and ranks. */
void qm_ideal(const qm_order *a, uint64_t seed, int64_t *out);

#endif /* FERRY_TOOL_MEASURES_H */
