/*
 * plan/plan.h - the epoch plan: a pure function of (chunks, options, seed,
 * epoch, world size).  No MPI, no I/O, no clock.  Its files, lowest first:
 *   plan/chunks.c   chunks, chunk index, subset, pieces, their permutation
 *   plan/plan.c     one rank's plan (extents, windows, runs), its accessors
 *   plan/order.c    a window's served order, slot by slot; checksums
 *   plan/resume.c   the rest of an epoch after a saved position
 *   plan/served.c  the served order for ferry quality
 * Sampling (plan/draw.h) and shuffle=global (plan/global.h) build on them.
 */
#ifndef FERRY_PLAN_H
#define FERRY_PLAN_H

#include "core/manifest.h"

/** Fisher-Yates shuffle of perm[0..n) with stream key; unbiased (rejection). */
void ferry__shuffle(int64_t *perm, int64_t n, uint64_t key);

/**
 * A keyed bijection of [0, n) computed one index at a time (plan/order.c):
 * a 4-round balanced Feistel network over the smallest even number of bits
 * holding n - 1 (round function: the SplitMix64 finaliser of a round key
 * xor the right half), walked along its cycle until the value falls in
 * [0, n) -- at most 4n / n = 4 network evaluations expected, 2 on average.
 * A window's served order is slot i -> unmixed position ferry__order_at(i),
 * so no window stores a per-sample order (issue 30).  Pure.
 */
typedef struct ferry__order {
  uint64_t n;
  unsigned half; /* bits of each half */
  uint64_t key[4];
} ferry__order;
void ferry__order_init(ferry__order *o, uint64_t n, uint64_t key);
uint64_t ferry__order_at(const ferry__order *o, uint64_t i);

enum {
  FERRY__STREAM_CHUNKS = 1, /* (seed, epoch): permutation of pieces     */
  FERRY__STREAM_WINDOW = 2, /* (seed, epoch, rank, window): sample mix  */
  FERRY__STREAM_SUBSET = 3  /* (seed): chunks kept by max_chunks/fraction */
};

/** A contiguous run of samples of one part.  Chunks never cross parts. */
typedef struct ferry__chunk {
  int64_t part;
  int64_t row; /* first row inside the part         */
  int64_t count;
  int64_t global_first; /* global index of the first sample  */
} ferry__chunk;

/** The plan's inputs besides the manifest. */
typedef struct ferry__plan_params {
  int64_t batch_size;
  uint64_t seed;
  int shuffle;
  int64_t block_size;
  int64_t shuffle_buffer;
  int partition;
  int tail;
  int64_t max_chunks;
  double fraction;
  int64_t epoch;
  int world_size;
} ferry__plan_params;

/**
 * chunk_samples=0 (auto): about FERRY__AUTO_CHUNK_BYTES of rows, rounded to
 * a multiple of the storage chunk rows of the variables (their least common
 * multiple; the largest when that exceeds FERRY__ALIGN_MAX times the
 * largest), so that every plan chunk reads whole storage chunks.  Never
 * below one storage chunk, never below 1.  Then, unless pp is NULL or
 * shuffles nothing, the dataset is cut into at least T = max(
 * FERRY__AUTO_MIN_CHUNKS, 8 x world_size x shuffle_buffer) chunks: the
 * rows are num_samples / T, rounded down to whole storage chunks, and
 * one storage chunk each when the dataset holds fewer than T of them.
 * A pure function of the manifest, row_total and pp (shuffle,
 * shuffle_buffer, world_size): every rank decides the same.  why (may be
 * NULL) receives one line saying which rule decided.
 */
int64_t ferry__auto_chunk_samples(const ferry__manifest *m, size_t row_total,
                                  const ferry__plan_params *pp, char *why,
                                  size_t why_len);
#define FERRY__AUTO_MIN_CHUNKS 64
#define FERRY__ALIGN_MAX 64

/** Split parts into chunks of at most chunk_samples rows (malloc'd array;
 *  tests and tools only: the loader computes chunks on demand). */
int ferry__chunks_make(const ferry__manifest *m, int64_t chunk_samples,
                       ferry__chunk **out, int64_t *n);

/**
 * The chunks of a manifest without storing them: part_chunk[p] is the
 * number of chunks before part p ([nparts + 1], O(parts) memory).  Chunk id
 * -> (part, row) is a binary search over it.
 */
typedef struct ferry__chunk_index {
  const ferry__manifest *m;
  int64_t chunk_samples;
  int64_t nchunks;
  int64_t *part_chunk; /* [nparts + 1] */
} ferry__chunk_index;
/** Returns 0, FERRY_EINVAL (chunk_samples < 1), FERRY_ENOMEM. */
int ferry__chunk_index_make(const ferry__manifest *m, int64_t chunk_samples,
                            ferry__chunk_index *out);
void ferry__chunk_index_free(ferry__chunk_index *ci);
/** Chunk id (0 <= id < nchunks), as ferry__chunks_make would list it. */
ferry__chunk ferry__chunk_get(const ferry__chunk_index *ci, int64_t id);
/** The chunk holding global sample g (0 <= g < num_samples). */
int64_t ferry__chunk_of_sample(const ferry__chunk_index *ci, int64_t g);

/**
 * The pieces an epoch permutes: the chunks kept by max_chunks/fraction (a
 * subset drawn with the seed only, the same every epoch), split into blocks
 * of block_size with shuffle=block.  Sorted by global index.  Computed on
 * demand (ferry__piece): without a subset nothing is stored but O(parts)
 * prefix sums; with a subset, the kept chunk ids (8 bytes per kept chunk)
 * and with blocks too their prefix sums (8 more).  `array` instead holds
 * explicit pieces (ferry__pieces_wrap: tests).
 */
typedef struct ferry__pieces {
  int64_t n;                 /* pieces                              */
  int64_t samples;           /* in all pieces: the epoch's M        */
  const ferry__chunk *array; /* explicit pieces, or NULL            */
  const ferry__chunk_index *ci;
  int64_t *kept; /* [nkept] chunk ids ascending, NULL: every chunk */
  int64_t nkept;
  int64_t block;        /* > 0: blocks of this many samples     */
  int64_t per_chunk;    /* blocks of a whole chunk              */
  int64_t *first_piece; /* blocks: [nparts + 1] or [nkept + 1]  */
  size_t bytes;         /* allocated                            */
} ferry__pieces;
/** Returns 0 or FERRY_ENOMEM. */
int ferry__pieces_make(const ferry__chunk_index *ci,
                       const ferry__plan_params *pp, ferry__pieces *out);
/** Explicit pieces (not copied, not freed). */
void ferry__pieces_wrap(ferry__pieces *out, const ferry__chunk *array,
                        int64_t n);
void ferry__pieces_free(ferry__pieces *ps);
/** Piece i (0 <= i < n). */
ferry__chunk ferry__piece(const ferry__pieces *ps, int64_t i);

/** The same pieces as an array (tests).  Returns 0 or FERRY_ENOMEM. */
int ferry__plan_pieces(const ferry__chunk *chunks, int64_t nchunks,
                       const ferry__plan_params *pp, ferry__chunk **out,
                       int64_t *n);
/** The order of the pieces this epoch (identity for shuffle=none).
 *  perm has npieces entries.  Rank 0 draws it; others check it. */
void ferry__plan_permutation(const ferry__plan_params *pp, int64_t npieces,
                             int64_t *perm);

/** One run of rows read with one call: part rows [row, row+count). */
typedef struct ferry__extent {
  int64_t part;
  int64_t row;
  int64_t count;
  int64_t global_first;
  int64_t window; /* window it belongs to                        */
} ferry__extent;

/** One served sample (materialised one window at a time). */
typedef struct ferry__slot {
  int64_t sample; /* global index                                */
  int64_t extent; /* extent holding it                           */
  int64_t row;    /* row inside the extent                       */
  uint8_t padded;
} ferry__slot;

/** A run of served samples: rows [off, off+count) of one extent, served in
 *  this order (before the window's mixing). */
typedef struct ferry__seg {
  int64_t extent;
  int64_t off;
  int64_t count;
  int64_t padded;
  int64_t pos; /* its first sample's place in the window's unmixed order */
} ferry__seg;

/** One run of rows of an old plan's window, in its unmixed order (elastic
 *  resume: the served order of the window is remade from its runs). */
typedef struct ferry__run {
  int64_t part, row, count, global_first;
} ferry__run;

/** Served slots [a, b) of an old plan's window (runs [run0, run0+nruns) of
 *  the plan's runs, mixed with key when mixed); padded: served as pads. */
typedef struct ferry__slice {
  int64_t run0, nruns;
  int64_t a, b;
  uint64_t key;
  int mixed, padded;
} ferry__slice;

/**
 * One rank's plan for one epoch, O(pieces of the rank) memory: its reads
 * (extents, grouped in windows) and the runs (segs) its samples come from;
 * the served order of window w (its slots) is computed on demand by
 * ferry__plan_window_slots, so no per-sample array exists for the epoch.
 * Batch b is slots [ferry__plan_batch_start(b), ferry__plan_batch_start(b+1)).
 */
typedef struct ferry__rank_plan {
  int64_t num_batches;   /* equal on every rank                  */
  int64_t epoch_samples; /* samples in the epoch (all ranks)     */
  int64_t dropped;       /* samples no rank serves (all ranks)   */
  int64_t nslots;        /* samples this rank serves             */
  int64_t batch_size;
  int64_t nextents;
  ferry__extent *extents; /* [nextents] in read order, by window  */
  int64_t nwindows;
  int64_t *window_first_extent; /* [nwindows+1]                         */
  int64_t *window_need;         /* [nwindows] first batch using window  */
  int64_t *window_samples;      /* [nwindows] slots served from window  */
  int64_t *window_first_slot;   /* [nwindows+1] slot index of each window */
  int64_t *window_first_seg;    /* [nwindows+1] (NULL: reads only)      */
  int64_t nsegs;
  ferry__seg *segs;          /* [nsegs] in served order (NULL: reads only) */
  int64_t mix_first, nmixed; /* windows [mix_first, nmixed) are mixed */
  int64_t mix_base; /* window w's key is that of window w + mix_base  */
  uint64_t mix_key; /* (seed, epoch, rank): window w's key derives from it */
  int64_t padded;
  /* Elastic resume (plan_resume over another world size): window w serves
   * slices [window_first_slice[w], window_first_slice[w+1]) in order, each
   * a stretch of an old window's served order; segs are then NULL. */
  int64_t nslices;
  ferry__slice *slices;
  int64_t *window_first_slice; /* [nwindows+1] or NULL */
  int64_t nruns;
  ferry__run *runs; /* [nruns] the old windows' runs */
  /* Sampling (plan/draw.c): the slots of window w are global batches
   * [w * draw_nbw, ...) of the stretch from position draw_pos0, remade by
   * ferry__draw_window_slots; segs are then NULL and pads come last. */
  const struct ferry__draw *draw;
  int64_t draw_pos0, draw_gb, draw_last, draw_nbw;
  int64_t draw_nb; /* the stretch's global batches (num_batches until
                    * max_tokens cuts the plan into its own batches) */
  int draw_P, draw_rank;
  const int64_t *draw_holes; /* the cut's holes (not owned), draw_nholes */
  int64_t draw_nholes;
  /* Token budgets (max_tokens, loader/tokens.c): batch b is served
   * positions [tok_start[b], tok_start[b+1]) (num_batches + 1 entries;
   * NULL: batches of batch_size).  With bucket_window, bucket k is
   * positions [bucket_pos[k], bucket_pos[k+1]) (inside one window), its
   * batches [bucket_batch[k], bucket_batch[k+1]), and its positions serve
   * its slots sorted by length, cut and shuffled (tokens.c); NULL: a
   * position serves the slot of that index. */
  int64_t *tok_start;
  int64_t nbuckets;
  int64_t *bucket_pos, *bucket_batch; /* [nbuckets + 1] */
  /* A bucketed epoch resumed in a bucket's middle (loader/epoch.c): bucket
   * k's draws are those of bucket k + bucket_base of the whole epoch, and
   * tok_start[-tok_skip .. -1] are the batches of bucket 0 served before
   * (their sizes place the rest; bucket_batch[0] is -tok_skip); the
   * positions before tok_start[0] were served then. */
  int64_t bucket_base, tok_skip;
} ferry__rank_plan;

/**
 * Build rank's plan from the pieces and their permutation.  Pure: the same
 * inputs give the same plan on every platform.  out is overwritten (not
 * freed).  Returns 0, FERRY_ENOMEM (err names the bytes), FERRY_EEMPTY (no
 * sample), FERRY_EINVAL (batch_size > a rank's share with tail=drop_last;
 * err names it).
 */
int ferry__plan_build(const ferry__pieces *ps, const int64_t *perm,
                      const ferry__plan_params *pp, int rank,
                      ferry__rank_plan *out, ferry__err *err);
void ferry__rank_plan_free(ferry__rank_plan *p);

/** Slot index of batch b's first sample (b = num_batches: nslots). */
int64_t ferry__plan_batch_start(const ferry__rank_plan *p, int64_t b);
/** Extents (read order) that must be loaded before batch b is assembled:
 *  up to the last extent of the last window it touches. */
int64_t ferry__plan_batch_need(const ferry__rank_plan *p, int64_t b);
/** Make p's batches the n given by starts (n + 1 positions, malloc'd; p
 *  takes it and frees its own), of at most batch_size samples each (the
 *  slot capacity), and each window's first batch from them (max_tokens,
 *  loader/tokens.c). */
void ferry__plan_set_starts(ferry__rank_plan *p, int64_t *starts, int64_t n,
                            int64_t batch_size);
/** The batch serving position i (0 <= i < nslots). */
int64_t ferry__plan_batch_of(const ferry__rank_plan *p, int64_t i);
/** The window holding slot i (0 <= i < nslots). */
int64_t ferry__plan_window_of(const ferry__rank_plan *p, int64_t i);
/** Window w's slots in served order into out[window_samples[w]].  Returns
 *  0, FERRY_EINVAL (a plan without runs, slices or draws), or a sampling
 *  plan's codes (ferry__draw_window_slots). */
int ferry__plan_window_slots(const ferry__rank_plan *p, int64_t w,
                             ferry__slot *out);
/** 1 when slot i of p is computed from the plan alone (a plan with runs or
 *  slices, plan/order.c): ferry__plan_slots_get then serves any range and
 *  no window's order is ever stored; 0 for a sampling plan or the
 *  loader's shuffle=global plan (their windows' orders are arrays). */
int ferry__plan_slots_computed(const ferry__rank_plan *p);
/** Slots [i0, i0 + n) of a computed plan (0 <= i0, i0 + n <= nslots) into
 *  out[n], in served order, without materialising any window: O(1) memory
 *  (an elastic window's slot scans its slice's runs).  Returns 0 or
 *  FERRY_EINVAL (a plan that is not computed, a range outside it). */
int ferry__plan_slots_get(const ferry__rank_plan *p, int64_t i0, int64_t n,
                          ferry__slot *out);
/** The extent of x[e0, ne) holding (part, row) (extents sorted by part and
 *  row, e0 < ne): a binary search. */
int64_t ferry__extent_at(const ferry__extent *x, int64_t e0, int64_t ne,
                         int64_t part, int64_t row);
/** The most samples of any window. */
int64_t ferry__plan_window_max(const ferry__rank_plan *p);
/** Every slot (tests, tools; nslots entries malloc'd).  0 or FERRY_ENOMEM. */
int ferry__plan_slots(const ferry__rank_plan *p, ferry__slot **out);
/** Real (not padded) samples among the first n slots (a plan without
 *  runs or slices: its padded slots are its last ones). */
int64_t ferry__plan_real_before(const ferry__rank_plan *p, int64_t n);
/** Bytes the plan holds. */
size_t ferry__plan_bytes(const ferry__rank_plan *p);

/** One stretch of an epoch: world_size ranks each served `batches` batches. */
typedef struct ferry__resume_step {
  int world_size;
  int64_t batches;
  /* [world_size] the positions each rank served in the step, or NULL:
   * batches x batch_size each (max_tokens batches differ in size between
   * ranks: loader/tokens.c).  Owned by whoever made the array. */
  int64_t *served;
  /* [world_size] or NULL (with served only): positions before served[r]
   * that rank r did NOT serve (ascending; nholes[r] of them), served
   * again after the step -- a bucketed max_tokens epoch, whose bucket's
   * batches are served in a shuffled order (loader/tokens.c). */
  int64_t *nholes;
  int64_t **holes;
} ferry__resume_step;

/**
 * The rest of an epoch after steps[0..nsteps), over pp->world_size ranks
 * (pp->epoch, seed, options as when it started): steps[0] is the epoch's
 * original plan over steps[0].world_size ranks, of which every rank served
 * steps[0].batches; the rest was then served over steps[1].world_size
 * ranks, and so on.  When a step keeps the world size, every rank keeps the
 * rest of its own plan (the very batches an uninterrupted run serves); when
 * it changes, the unserved real samples (old rank order, then served order;
 * pads dropped) are cut into contiguous shares and the tail rule is applied
 * again; the unserved samples are then held as ranges of old windows' served
 * orders (O(windows) memory, never a per-sample list), and out's windows are
 * slices of old windows.  Pure.  out (rank's plan with slots) and all
 * ([pp->world_size] zeroed plans receiving every rank's reads, for collective
 * I/O) may each be NULL.  A served count beyond a step's batches is
 * FERRY_EFORMAT (a state that does not belong to these inputs).  Returns 0,
 * FERRY_ENOMEM, FERRY_EINVAL, FERRY_EFORMAT.
 */
int ferry__plan_resume(const ferry__pieces *ps, const int64_t *perm,
                       const ferry__plan_params *pp,
                       const ferry__resume_step *steps, int nsteps, int rank,
                       ferry__rank_plan *out, ferry__rank_plan *all,
                       ferry__err *err);
/** Checksum of a rank's plan (slots and batch boundaries), computed in
 *  blocks of slots (O(1) memory; O(window) for a sampling plan).  Returns
 *  0 or FERRY_ENOMEM. */
int ferry__rank_plan_checksum(const ferry__rank_plan *p, uint64_t *out);
/**
 * The served order of rank (of pp->world_size) in epoch pp->epoch over
 * these chunks (plan/served.c): *samples the global sample index of every
 * slot in served order (pads included), *batch_start the *nbatches + 1 slot
 * offsets of the batches; both malloc'd.  Pure.  Returns the codes of
 * ferry__plan_build.
 */
int ferry__plan_order(const ferry__chunk *chunks, int64_t nchunks,
                      const ferry__plan_params *pp, double exchange, int rank,
                      int64_t **samples, int64_t **batch_start,
                      int64_t *nbatches, ferry__err *err);

#endif /* FERRY_PLAN_H */
