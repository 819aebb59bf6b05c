/*
 * plan/draw.h - the plan of weighted, class-balanced and mixed sampling
 * (docs/sampling.md, docs/design/sampling.md): an epoch is a sequence of
 * D draws, defined once for all ranks -- a pure function of (blocks,
 * weights or sources, seed, epoch, options), never of the world size --
 * cut into global batches of B x P draws, of which each rank serves a
 * contiguous stretch.  No MPI, no I/O, no clock.
 *
 *   S(i), i in [0, D)   the i-th draw (a global sample index), made block
 *                       by block for locality: weighted -- each block's
 *                       count of the epoch's draws fixed by systematic
 *                       sampling over the blocks' weights (within one draw
 *                       of D W_b / W), cut into runs of about a block of
 *                       draws spread over the epoch, samples inside a
 *                       block drawn by their weights (plan/draw_weighted.c);
 *                       a mix -- each source's own order of its blocks, the
 *                       sources' draws interleaved by pieces.
 *   premix(x)           the draw served at position x: a full draw
 *                       window of m x GB0 draws (GB0 the epoch's first
 *                       global batch) is cut into GB0 strata of m draws, and
 *                       its k-th batch takes draw (k + shift_t) mod m of
 *                       stratum t for its t-th position -- a batch mixes
 *                       the whole window; the epoch's last, shorter window
 *                       is a keyed permutation (plan/global.h's ferry__prp).
 *   global batch g      positions [x0 + g GB, x0 + (g+1) GB); rank r serves
 *                       positions [rB, (r+1)B) of it, which come from the
 *                       r-th stretch of the window's strata: the same batch
 *                       for every P with the same GB, and a rank reads
 *                       mostly its own blocks, with no sort.
 */
#ifndef FERRY_PLAN_DRAW_H
#define FERRY_PLAN_DRAW_H

#include "plan/plan.h"

/* Generator streams of sampling (plan.h has 1..3, global.h 4..6). */
enum {
  FERRY__STREAM_DBLOCK = 7,   /* (seed, epoch, 0): systematic allocation  */
  FERRY__STREAM_DWITHIN = 8,  /* (seed, epoch, 0 or block): inside one    */
  FERRY__STREAM_DORDER = 9,   /* (seed, epoch, 0|1): the runs' order      */
  FERRY__STREAM_DWINDOW = 10, /* (seed, epoch, window): premix            */
  FERRY__STREAM_DSOURCE = 11, /* (seed, epoch, source, pass): its order   */
  FERRY__STREAM_DPIECE = 12   /* (seed, epoch, window): pieces' order     */
};

enum { FERRY__DRAW_WEIGHTED = 1, FERRY__DRAW_MIX = 2 };
enum { FERRY__XH_STOP = 0, FERRY__XH_RESTART, FERRY__XH_DROP };

/** One source of a mix: global samples [first, first + n). */
typedef struct ferry__draw_source {
  int64_t first, n;
  double proportion; /* > 0; normalised by ferry__draw_init */
  int exhaust;       /* FERRY__XH_*                            */
} ferry__draw_source;

/** A mix changed at a resume (mix_resume=new_mix): from draw `position`
 *  of the epoch on (a draw window's start), these proportions (n of them,
 *  one per source) and exhaustion rules (FERRY__XH_*). */
typedef struct ferry__draw_change {
  int64_t position;
  int n;
  double *proportion;
  int *exhaust;
} ferry__draw_change;

/** What the epoch's draws are made of (borrowed by ferry__draw_init). */
typedef struct ferry__draw_params {
  int mode;                 /* FERRY__DRAW_*                          */
  const ferry__manifest *m; /* the dataset                            */
  int64_t block;            /* samples per block (>= 1)               */
  uint64_t seed;
  int64_t epoch;
  int replacement;   /* weighted: with replacement              */
  int64_t num_draws; /* 0: the default                          */
  int64_t window;    /* draws per draw window, 0: auto          */
  const float *w;    /* weighted: [num_samples] >= 0            */
  int nsources;      /* mix                                     */
  const ferry__draw_source *sources;
  int mix_by_batch; /* mix: a draw window is one global batch   */
  int nchanges;     /* mix: changes at resumes, by position     */
  const ferry__draw_change *changes;
  int64_t global_batch; /* batch_size x the epoch's first world size: the
                         * draw window is a whole number of them */
  int64_t shuffle_buffer;
} ferry__draw_params;

/** A mix's counts in one draw window. */
typedef struct ferry__draw_win {
  int64_t first, len; /* positions [first, first + len)        */
} ferry__draw_win;

/** The epoch's sequence, the same on every rank. */
typedef struct ferry__draw {
  ferry__draw_params p;
  ferry__chunk_index blocks; /* chunk_samples = block              */
  int64_t D;                 /* draws in the epoch                  */
  int64_t window;            /* draws per draw window (last: less)  */
  /* weighted: each block's count of the epoch's draws (systematic over
   * the blocks' weights: within one draw of D W_b / W, or without
   * replacement of the expected count of successive sampling) cut into
   * runs of draws of one block; run q (in the epoch's order) is of block
   * run_blk[q] and holds draws [run_first[q], run_first[q + 1]).  With
   * replacement the runs (about a block of draws each) are in a keyed
   * random order; without, a block is one run, in the blocks' weighted
   * random order (Efraimidis-Spirakis), and gives its first draws in its
   * own weighted order. */
  double *bweight; /* [nblocks] total weight                 */
  double total;
  int64_t nruns;
  int64_t *run_blk, *run_first;
  double tau;      /* without replacement and D < the non-zero samples: a
                    * sample's inclusion is 1 - exp(-tau w); 0: every one */
  double expected; /* without replacement: the sum of the inclusions */
  /* mix: windows [nwin], counts [nwin * nsources] and the draws of each
   * source before each window [nwin * nsources] */
  ferry__draw_source *src;
  int64_t nwin;
  ferry__draw_win *win;
  int64_t *cnt, *cum;
  int64_t *src_block0; /* [nsources] first block of the source     */
  int64_t *src_nblocks;
  uint64_t kwithin; /* with replacement: the key of the in-block draws */
  int64_t gb;       /* global batch of the windows' strata (the epoch's
                     * first); window is a multiple of it */
  size_t bytes;
} ferry__draw;

/**
 * The epoch's sequence.  Returns 0, FERRY_EINVAL (err says why: no weight,
 * num_draws beyond the non-zero weights without replacement, a bad source,
 * an epoch too long), FERRY_ENOMEM.  O(blocks) memory (a mix: O(windows x
 * sources) too).
 */
int ferry__draw_init(ferry__draw *d, const ferry__draw_params *p,
                     ferry__err *err);
void ferry__draw_free(ferry__draw *d);

/** The draw window draw_init makes for p: a whole number of global
 *  batches, near draw_window (0: 16 x block x max(1, shuffle_buffer)). */
int64_t ferry__draw_window_size(const ferry__draw_params *p);

/** Scratch of the evaluation of draws (a cache of the last block, run and
 *  mix window); zeroed before use, freed with ferry__draw_ctx_free. */
typedef struct ferry__draw_ctx {
  int64_t blk; /* no replacement: cached block, -1: none */
  int64_t nrows;
  int64_t *rows; /* no replacement: the block's rows in drawn order */
  int64_t cap_rows;
  int64_t rep_b; /* with replacement: block of cum, -1: none */
  int64_t rep_first, rep_n;
  double *cum; /* [rep_n] the block's cumulative weights */
  int64_t cap_cum;
  int64_t oq;  /* weighted: cached run, -1: none */
  int64_t win; /* cached mix window, -1: none */
  int64_t npieces, cap_pieces;
  int64_t *piece_pos; /* [npieces + 1] premix offset of each piece */
  int64_t *piece_src, *piece_c;
} ferry__draw_ctx;
void ferry__draw_ctx_init(ferry__draw_ctx *c);
void ferry__draw_ctx_free(ferry__draw_ctx *c);

/** S(i): the global sample index of draw i (0 <= i < D), or a negative
 *  code (FERRY_ENOMEM). */
int64_t ferry__draw_sample(const ferry__draw *d, ferry__draw_ctx *c, int64_t i);
/** premix(x): the draw served at position x (0 <= x < D). */
int64_t ferry__draw_premix(const ferry__draw *d, int64_t x);

/**
 * One stretch of the epoch served by P ranks in global batches of gb
 * draws, from position pos0 (draws served before).  tail: FERRY__TAIL_*
 * (options.h's values, drop 0, pad 1, partial 2).
 */
typedef struct ferry__draw_cut {
  int64_t pos0, gb;
  int P;
  int tail;
  int64_t batch_size; /* gb / P */
  int64_t num_batches;
  int64_t last; /* positions of the last batch (gb unless partial) */
  /* Positions in [pos0, D) served before (ascending, nholes of them):
   * the stretch skips them -- its k-th position is the k-th of the others
   * (an elastic resume of max_tokens with sampling, loader/sampling.c).
   * Not owned. */
  const int64_t *holes;
  int64_t nholes;
} ferry__draw_cut;
/** Returns 0 or FERRY_EINVAL (gb not batch_size x P, pos0 beyond D). */
int ferry__draw_cut_make(const ferry__draw *d, int64_t pos0, int64_t B, int P,
                         int tail, ferry__draw_cut *out, ferry__err *err);
/** The same, skipping holes[0..nholes) (ascending, in [pos0, D); they
 *  must outlive every plan of the cut).  FERRY_EINVAL: holes out of
 *  order or range. */
int ferry__draw_cut_holes(const ferry__draw *d, int64_t pos0, int64_t B, int P,
                          int tail, const int64_t *holes, int64_t nholes,
                          ferry__draw_cut *out, ferry__err *err);
/** Position c of a stretch that starts at cut->pos0 and skips cut->holes
 *  (c >= pos0, counted without the holes) as a position of the epoch. */
int64_t ferry__draw_unhole(const ferry__draw_cut *cut, int64_t c);
/** The draw position of rank r's slot i of the cut (its batch i /
 *  batch_size): D and beyond for a pad. */
int64_t ferry__draw_slot_pos(const ferry__draw *d, const ferry__draw_cut *cut,
                             int r, int64_t i);

/**
 * Rank r's plan of the stretch: its reads (the blocks its draws need,
 * window by window) and the draws' order, computed again by
 * ferry__plan_window_slots.  d and cut must outlive out.  Returns 0,
 * FERRY_ENOMEM.
 */
int ferry__draw_plan(const ferry__draw *d, const ferry__draw_cut *cut, int rank,
                     ferry__rank_plan *out, ferry__err *err);

/**
 * The draws of global batch g of the stretch served by rank r (n of them,
 * into out[ cut->batch_size ] as premix positions, D + k for pad k) --
 * exposed for tests.  Returns the count or a negative
 * code.
 */
int64_t ferry__draw_batch(const ferry__draw *d, const ferry__draw_cut *cut,
                          int64_t g, int rank, int64_t *out);

/** Window w's slots of a draw plan (plan/order.c's ferry__plan_window_slots
 *  calls it). */
int ferry__draw_window_slots(const ferry__rank_plan *p, int64_t w,
                             ferry__slot *out);

/** Checksum of the sequence (its shape and probes of it): the same on
 *  every rank. */
uint64_t ferry__draw_checksum(const ferry__draw *d);

/**
 * What the blocking does to the requested per-sample distribution
 * (weighted): the total variation distance between the requested
 * per-sample expected draws and those of the plan -- 0 since issue 30:
 * a block's count of the epoch's draws is its expected one (to within a
 * draw, unbiased) and the samples inside it are drawn by their weights.
 */
double ferry__draw_blocking_tv(const ferry__draw *d);

/**
 * Weighted: the share of the epoch's draws that samples [first, first +
 * count) get in expectation -- with replacement their weights' share;
 * without, their share of the inclusion probabilities (every non-zero
 * sample once when D is the non-zero samples).  O(count).
 */
double ferry__draw_planned_share(const ferry__draw *d, int64_t first,
                                 int64_t count);

/* plan/draw_weighted.c, for draw.c: the weighted sequence's tables, S(i)
 * and the block draw i reads. */
int ferry__draw_weighted_init(ferry__draw *d, ferry__err *err);
int64_t ferry__draw_weighted_sample(const ferry__draw *d, ferry__draw_ctx *c,
                                    int64_t i);
int64_t ferry__draw_weighted_block(const ferry__draw *d, ferry__draw_ctx *c,
                                   int64_t i);

#endif /* FERRY_PLAN_DRAW_H */
