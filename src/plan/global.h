/*
 * plan/global.h - the plan of shuffle=global (docs/design/global-shuffle.md):
 * which rows each rank reads in each global window, where each
 * read sample goes (rank, position in that rank's serve order of the
 * window), where each served sample comes from (rank, offset in what that
 * rank sends it), and the send/receive counts of the MPI_Alltoallv that
 * moves them.  A pure function of (pieces, permutation, options, exchange,
 * world size, rank, window): no MPI, no I/O, no clock; memory O(the rank's
 * window + world size), computed window by window on demand.
 */
#ifndef FERRY_PLAN_GLOBAL_H
#define FERRY_PLAN_GLOBAL_H

#include "plan/plan.h"

/* Generator streams of the global deal (plan.h's enum has 1..3). */
enum {
  FERRY__STREAM_GDEAL = 4, /* (seed, epoch, window): pool -> open slots  */
  FERRY__STREAM_GKEEP = 5, /* (seed, epoch, window, rank): kept / sent   */
  FERRY__STREAM_GSERVE = 6 /* (seed, epoch, window, rank): serve order   */
};

/**
 * A keyed pseudo-random permutation of [0, n), evaluated point by point in
 * O(1) expected time and no memory: a six-round Feistel network over the
 * smallest even number of bits covering n, cycle-walked into [0, n).
 * x outside [0, n) gives -1.
 */
int64_t ferry__prp(uint64_t key, int64_t n, int64_t x);
/** ferry__prp(key, n, x[i]) into out[i] for cnt points (out may be x),
 *  four evaluations interleaved: about twice the throughput. */
void ferry__prp_many(uint64_t key, int64_t n, const int64_t *x, int64_t *out,
                     int64_t cnt);
/** The inverse of ferry__prp: ferry__prp_inv(k, n, ferry__prp(k, n, x)) == x.
 */
int64_t ferry__prp_inv(uint64_t key, int64_t n, int64_t x);

/**
 * The shape of one epoch under shuffle=global, the same on every rank:
 * O(pieces) for the positions of the pieces in the sample sequence S, the
 * rest scalars.  pieces and perm are borrowed (they must outlive it).
 */
typedef struct ferry__global {
  const ferry__chunk *pieces;
  const int64_t *perm;
  int64_t npieces;
  int64_t *start; /* [npieces+1] position in S of each permuted piece */
  int P;
  int64_t B;
  int tail;
  double exchange; /* Q in (0, 1]                                      */
  uint64_t seed;
  int64_t epoch;
  int64_t M;           /* samples in the epoch                          */
  int64_t D;           /* of which dealt: M, or P*nb*B with drop_last    */
  int64_t dropped;     /* M - D                                          */
  int64_t num_batches; /* equal on every rank                            */
  int64_t per_rank;    /* samples a rank reads in a full window          */
  int64_t G;           /* samples of a full window (P * per_rank)        */
  int64_t nwindows;
  int64_t padded; /* pads over all ranks (tail=pad)                        */
  int64_t K, largest; /* per_rank = K * largest piece, or a rank's share   */
  /* A resumed epoch (ferry__global_resume): the samples not served by
   * parent, in the order F (the cut window's unserved real samples, by old
   * rank then old position) then parent's sequence from rest_lo on. */
  const struct ferry__global *parent; /* NULL: the epoch's sequence S   */
  int level;                          /* resumes so far                 */
  int64_t cut_window, cut_off;        /* parent's window of the cut, and
                                       * the position served up to in it */
  int64_t *fpre;                      /* [parent->P + 1] F per old rank  */
  int64_t nF, rest_lo;
} ferry__global;

/**
 * The epoch's shape.  Global windows are consecutive runs of G samples of
 * S (the last one shorter); rank q reads the balanced q-th part of each.
 * G = P * max(shuffle_buffer, 1) * (the largest piece).  Returns 0,
 * FERRY_EINVAL (bad world size, batch size or exchange; batch_size larger
 * than a rank's share with tail=drop_last), FERRY_EEMPTY, FERRY_ENOMEM.
 */
int ferry__global_init(ferry__global *g, const ferry__chunk *pieces,
                       int64_t npieces, const int64_t *perm,
                       const ferry__plan_params *pp, double exchange,
                       ferry__err *err);
void ferry__global_free(ferry__global *g);

/**
 * The rest of an epoch after every rank of parent served `served` batches,
 * over world_size ranks (another world size than parent's; with the same
 * one every rank simply continues parent's order).  The unserved real
 * samples (parent's pads dropped) are, in order, those of the cut window
 * (ferry__global_cut) by old rank then old position, then parent's sequence
 * after that window; they are dealt in global windows as an epoch is, with
 * fresh keys, and the tail rule applied again to their count (drop_last
 * may leave no batch).  Chains: a resumed plan may be resumed again.
 * parent must outlive child.  Memory O(parent's world size).  Returns 0,
 * FERRY_EINVAL (world size), FERRY_EFORMAT (served beyond parent's
 * batches), FERRY_ENOMEM.
 */
int ferry__global_resume(ferry__global *child, const ferry__global *parent,
                         int64_t served, int world_size, ferry__err *err);
/** Where `served` batches end on every rank: window *w, position *off. */
void ferry__global_cut(const ferry__global *g, int64_t served, int64_t *w,
                       int64_t *off);

/** Rank q's counts in window w. */
typedef struct ferry__global_counts {
  int64_t n;       /* samples of the window (all ranks)                */
  int64_t first;   /* position in S of the window's first sample       */
  int64_t read_lo; /* q reads S[first + read_lo, first + read_lo + read) */
  int64_t read;    /* samples q reads, = real samples q serves          */
  int64_t sent;    /* of which enter the global deal (ceil(Q * read))   */
  int64_t pads;    /* repeats q serves after them (last window, pad)    */
} ferry__global_counts;
void ferry__global_counts_of(const ferry__global *g, int64_t w, int q,
                             ferry__global_counts *c);
/** Rank q's served samples over the epoch (real + pads). */
int64_t ferry__global_rank_samples(const ferry__global *g, int q);
/** Serve index (in the rank's epoch order) of window w's first sample. */
int64_t ferry__global_serve_first(const ferry__global *g, int64_t w);

/**
 * Rank q's reads in window w (any rank's: what collective I/O needs to know
 * of the others): *ext (malloc'd, *n entries, sorted by position, merged),
 * the extents of ferry__global_window_build.  Returns 0, FERRY_EINVAL,
 * FERRY_ENOMEM.
 */
int ferry__global_reads(const ferry__global *g, int q, int64_t w,
                        ferry__extent **ext, int64_t *n, ferry__err *err);

/**
 * One rank's table for one window.  Read items are numbered in read-buffer
 * order: the extents, sorted by (part, row) and merged, rows concatenated.
 * Serve positions are the rank's order of the window (pads last).  The send
 * buffer is grouped by destination rank (sdispls), each group sorted by
 * destination position; a receiver finds the sample it serves at position j
 * from rank src_rank[j] at recv offset rdispls[src_rank[j]] + src_off[j].
 */
typedef struct ferry__global_window {
  int64_t window;
  int rank;
  int P;
  int64_t serve_first; /* serve index of position 0 in the epoch   */
  int64_t nread;       /* read items                                */
  int64_t nserve;      /* serve positions (real, then pads)        */
  int64_t npads;
  int64_t nextents;
  ferry__extent *extents; /* [nextents] read order                    */
  int64_t *read_sample;   /* [nread] global index of read item i      */
  int *dest_rank;         /* [nread] where item i is served (real deal) */
  int64_t *dest_pos;      /* [nread] position there                    */
  int64_t nsend;          /* entries of the send buffer                */
  int64_t *send_item;     /* [nsend] read item packed at send slot k   */
  int64_t *send_pos;      /* [nsend] its position at the destination   */
  int64_t nrecv;
  int64_t *sendcounts, *sdispls, *recvcounts, *rdispls; /* [P] samples */
  int64_t *serve_sample; /* [nserve] global index served at j         */
  int64_t *serve_local;  /* [nserve] own read item, or -1: received   */
  int *src_rank;         /* [nserve] rank sending it, -1 when local   */
  int64_t *src_off;      /* [nserve] offset in that rank's send to us */
  uint8_t *serve_padded; /* [nserve]                                   */
  /* allocated entries, reused by the next build (fresh memory costs a
   * page fault per 4 KiB), and scratch of the build */
  int64_t cap_ext, cap_read, cap_serve, cap_send, cap_P;
  void *scratch;
  size_t scratch_bytes;
} ferry__global_window;

/**
 * Rank's table of window w (out zeroed or holding an earlier table, whose
 * memory is reused).  Memory O(read + serve + sends + P); time O((read +
 * serve) * PRP + pads + P * pieces of a window * log).  Returns 0,
 * FERRY_EINVAL (rank or window out of range), FERRY_ENOMEM.
 */
int ferry__global_window_build(const ferry__global *g, int rank, int64_t w,
                               ferry__global_window *out, ferry__err *err);
void ferry__global_window_free(ferry__global_window *x);

/**
 * The most memory one rank holds for shuffle=global at any time, by part,
 * bytes (docs/design/global-shuffle.md, "Memory"): window w being served
 * while w+1 is read and exchanged.  An upper bound over every rank and
 * window, the same on every rank; O(P).
 */
typedef struct ferry__global_memory {
  int64_t read_rows, send_rows, recv_rows, serve_rows; /* one window, max */
  size_t read, send, recv, serve; /* bytes of one window's buffers    */
  size_t tables;                  /* bytes of one window's table      */
  size_t total; /* serve + (read + send + recv + serve) + 2 tables        */
} ferry__global_memory;
void ferry__global_memory_of(const ferry__global *g, size_t row_bytes,
                             ferry__global_memory *m);

/** Checksum of the epoch's shape, every window's counts and probes of its
 *  permutations: the same on every rank (rank-independent, O(nwindows *
 *  P)), for the cross-rank check. */
uint64_t ferry__global_checksum(const ferry__global *g);
/** Checksum of one rank's window table (served samples, sources, sends). */
uint64_t ferry__global_window_checksum(const ferry__global_window *x);

#endif /* FERRY_PLAN_GLOBAL_H */
