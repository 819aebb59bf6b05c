/*
 * loader/loader.h - private to src/loader/: the loader handle, the epoch
 * state and the ring slots, shared by the loader's files (one per stage):
 *
 *   open.c        ferry_open / ferry_close
 *   epoch.c       ferry_set_epoch: plan, checks, threads
 *   budget.c      the memory budget, at open and at each epoch
 *   fail.c        ferry__loader_fail, ferry_last_error: where an error
 *                 leaves the library
 *   pipeline.c    read-buffer pool, I/O thread, worker threads, the copy
 *                 of a batch to the device
 *   next.c        ferry_next / ferry_release and batch certification
 *   vote.c        the agreement every collective call starts with
 *   checkpoint.c  ferry_state_save / ferry_state_load
 *   inspect.c     accessors, NCCL attach
 *   io_choice.c   io=auto: map files on local file systems, read the others
 *   sampling.c    weighted, class-balanced and mixed sampling (the draws)
 *   weights.c     the per-sample weights and labels (weights.h)
 *   exchange.c    shuffle=global's exchange of a window's samples
 *                 (exchange.h)
 *   global_io.c   the I/O thread's loop for shuffle=global
 *   slots.c       the ring's slots, and the spare slots held batches get
 *   state.c       the checkpoint state (encode, decode, file) and the
 *                 checkpoint signal (state.h; no MPI)
 *   version.c     ferry_version, ferry_features, ferry_build_info
 *   cache.c       cache=node|cluster: the chunks kept in the nodes'
 *                 shared memory (cache.h)
 *
 * The dataset string becomes the manifest in the dataset layer
 * (dataset/dataset.h): open.c asks it to scan on rank 0 and share.
 * ferry_open (collective): rank 0 scans the dataset and broadcasts the
 * manifest; every rank checks that it was given the same dataset and options.
 * ferry_set_epoch (collective): rank 0 draws the permutation and broadcasts
 * it, every rank checks it (hash, generator probe), builds its own plan
 * (plan.c),
 * and the batch counts are checked equal; then the threads start:
 *
 *   I/O thread   reads the plan's extents window by window, never more than
 *                `prefetch` batches ahead of the consumer.  It alone calls
 *                the backend, because HDF5 and netCDF are not thread-safe.
 *                With io=collective every rank makes the same sequence of
 *                collective calls (empty reads where it has nothing), in
 *                rounds decided from every rank's plan.
 *   workers      (`threads` of them) assemble batch b into ring slot
 *                b % prefetch once its extents are loaded and the slot is
 *                free: one memcpy per run of consecutive rows, byte swap,
 *                transform; then free windows nobody needs any more.
 *   ferry_next   hands out batch b in plan order, so thread timing never
 *                changes the batches, and agrees on success with the other
 *                ranks (one MPI_Allreduce), so an error anywhere is the same
 *                error everywhere at the same batch, never a hang.
 *
 * Checkpoints: the all-reduce that certifies batches also carries the
 * checkpoint-signal flag (state.c), so ferry_checkpoint_requested turns true
 * on every rank at the same batch; ferry_state_save records how many batches
 * were handed out, and ferry_state_load restarts an epoch from there with
 * the plan of plan/resume.c's ferry__plan_resume -- the pipeline is the same.
 *
 * Locking: one mutex per epoch guards every field marked (L); three
 * condition variables wake the I/O thread (consumer moved), the workers
 * (data loaded or slot freed) and the consumer (batch ready).
 */
#ifndef FERRY_LOADER_H
#define FERRY_LOADER_H

#include "backends/backend.h"
#include "backends/toolkit.h"
#include "core/options.h"
#include "dataset/dataset.h"
#include "gpu/gpu.h"
#include "loader/exchange.h"
#include "loader/state.h"
#include "loader/weights.h"
#include "plan/draw.h"
#include "plan/global.h"
#include "plan/plan.h"
#include "util/agree.h"

#include <pthread.h>

/* Host ring slots: FREE -> BUSY (assembling) -> READY -> HELD -> FREE.
 * With device=cuda a host slot goes BUSY -> (copied) FREE, or with
 * keep_host PAIRED with the device slot until its batch is released;
 * device slots go FREE -> BUSY (copying) -> READY -> HELD -> (RELEASING,
 * while ferry_release records its events) -> FREE.  A HELD slot the
 * pipeline needs again is swapped out of the ring for a spare one
 * (slots.c): it stays HELD in L->held until released. */
enum {
  SLOT_FREE = 0,
  SLOT_BUSY,
  SLOT_READY,
  SLOT_HELD,
  SLOT_PAIRED,
  SLOT_RELEASING
};

/* Read buffers are reused through a small pool: freeing and allocating
 * megabytes per chunk makes glibc hand the heap top back to the kernel and
 * fault every page in again, which cost 10x in read throughput.  They come
 * from ferry__big_alloc, whose header (BUF_HDR bytes in front) holds the
 * capacity. */
enum { POOL_MAX = 256, BUF_HDR = FERRY__BIG_HDR };
/* Alignment of every host batch buffer (cudaHostAlloc gives pages). */
#define FERRY__BATCH_ALIGN 64

/* A ragged variable's lengths, from its offsets (ragged.c). */
typedef struct ferry__lenstat {
  int64_t min, max, total;
} ferry__lenstat;

typedef struct ring_slot {
  ferry_batch batch;
  ferry_tensor *tensors; /* [nvars]                              */
  unsigned char **bufs;  /* [nvars] batch_size * row_bytes each (a ragged
                          * variable: ragged_cap[v] * row_bytes) */
  int64_t **offs;        /* [nvars] a ragged variable's batch_size + 1
                          * offsets, NULL for a dense one         */
  int64_t *ids;
  uint8_t *padded;
  int state;    /* (L) SLOT_*                           */
  int64_t bidx; /* (L) batch held                       */
  int rc;       /* (L) assembly result                  */
  ferry__err err;
} ring_slot;

/* A batch the caller holds outside the rings (slots.c): its host slot, its
 * device slot (device=cuda), or both (keep_host). */
typedef struct ferry__held_batch {
  ring_slot *s;
  ferry__dslot *d;
} ferry__held_batch;

/* The slots beyond the rings that held batches were given (slots.c), all
 * (L) of the running epoch's mutex: held[] the batches swapped out of the
 * rings and not yet released, spare_s/spare_d the slots of those released
 * since, kept for the next swap (a loop that holds k batches allocates k
 * slots once).  nextra slots exist beyond the rings, at most max_extra
 * (held_memory / batch bytes); each holds a batch. */
typedef struct ferry__held {
  ferry__held_batch *held; /* [max_extra] */
  int64_t nheld;
  ring_slot **spare_s; /* [max_extra] */
  int64_t nspare_s;
  ferry__dslot **spare_d; /* [max_extra] */
  int64_t nspare_d;
  int64_t nextra, max_extra;
  int64_t cap; /* of each list */
  int noted;   /* the note of the first swap was printed */
} ferry__held;

/* io=collective: what a rank needs of another rank's reads -- per window
 * (round), the parts it reads and how many extents on each (its extents
 * are sorted by part): window j is pairs [first[j], first[j+1]).  16 bytes
 * per (window, part), not the rank's extents (issue 12). */
typedef struct ferry__round_reads {
  int64_t nwindows;
  int64_t *first; /* [nwindows + 1] */
  int64_t *part;  /* [pairs] */
  int64_t *count; /* [pairs] */
} ferry__round_reads;

typedef struct ferry__tok_cache ferry__tok_cache; /* tokens.c */

typedef struct epoch_state {
  ferry_loader *L;
  int64_t epoch;
  ferry__rank_plan plan;
  ferry__tok_cache *tokc; /* bucket_window: sorted buckets (tokens.c)  */
  ferry__pieces pieces;   /* computed on demand from L->chunks           */
  int64_t *perm;          /* [pieces.n]: the only O(chunks) array        */
  /* shuffle=global: the epoch's global plan (its pieces as an array, which
   * it borrows); ep->plan then has one extent per window, the window's
   * serve buffer, whose slots are its rows in order (pipeline.c) */
  ferry__global *glob;   /* the plan served: the last of gchain      */
  ferry__global *gchain; /* [ngchain]: a resumed epoch's plans, each the
                          * rest of its parent (ferry__global_resume)  */
  int ngchain;
  int64_t gbase, gskip; /* resumed: pipeline window k is global window
                         * k + gbase, served from position gskip (k = 0) */
  ferry__chunk *gpieces;
  /* Sampling (loader/sampling.c): the epoch's sequence of draws; ep->plan
   * is then a draw plan (plan/draw.h) */
  ferry__draw *draw;
  /* max_tokens with sampling resumed (sampling.c): the plan's deal starts
   * at draw_pos0 and skips the draw_nholes served positions draw_holes
   * (owned) */
  int64_t *draw_holes;
  int64_t draw_nholes, draw_pos0;
  ferry__draw_change *mixch; /* a mix's changes at resumes (owned) */
  int nmixch;
  ferry__exchange *xch; /* the I/O thread's, made by set_epoch */
  uint64_t checksum;
  /* collective I/O: every rank's reads */
  ferry__round_reads *all_reads; /* [size] or NULL; into all_reads_buf */
  int64_t *all_reads_buf;        /* every rank's packed reads (epoch.c) */
  int64_t nrounds;
  int64_t *round_admit; /* [nrounds] consumed count that admits it */

  pthread_mutex_t mu;
  pthread_cond_t cv_io, cv_work, cv_ready;
  int stop;                /* (L) */
  int64_t consumed;        /* (L) batches handed out */
  int64_t io_wake;         /* (L) the consumed count the I/O thread sleeps
                            * for: ferry_next wakes it only on reaching it
                            * (not on every batch: a context switch each) */
  int64_t loaded;          /* (L) extents loaded, in read order */
  int64_t next_assign;     /* (L) next batch for a worker */
  unsigned char **ext_buf; /* (L) [nextents] */
  /* (L) [nextents * nvars]: where extent e's rows of variable v are (in
   * ext_buf[e], or mapped); ext_map [nextents * nvars] with io=mmap */
  const unsigned char **ext_src;
  /* L->pack_comp set: the epoch's stream, for the workers (pack.c) */
  struct ferry__pack_fill *pfill;
  ferry__mapping *ext_map;
  int defer; /* I/O thread only: the backend's io_read may defer decodes
              * until io_wait (ferry__io_params.defer) */
  int64_t *win_remaining; /* (L) [nwindows] samples not assembled */
  /* (L) [nwindows]: window w's slots (served order), made by the I/O thread
   * when it admits the window and freed with its buffers (free_window), so
   * only the windows alive in the pipeline have them. */
  ferry__slot **win_slots;
  int io_rc; /* (L) */
  ferry__err io_err;
  int64_t rounds_started; /* (L) collective: rounds entered */
  int64_t round_target;   /* (L) collective: finish rounds < target on stop */
  int failed;             /* consumer side: agreed error of the epoch */
  int64_t certified;      /* consumer side: batches <= this are known
                             good on every rank */
  int64_t io_through;     /* (L) last batch whose data is all loaded */
  /* A resumed epoch (ferry_state_load): the steps served before, the index
   * of its first batch and the real samples served before it. */
  ferry__resume_step *steps; /* [nsteps], NULL for a fresh epoch */
  int nsteps;
  int64_t index_base;
  int64_t samples_before;
  int64_t early_at; /* consumer side: the batch at which the next vote is
                       posted early (next.c), -1: none */
  double cert_time; /* consumer side: last certification */
  int64_t cert_batch;
  int halted; /* a failed vote agreed round_target (vote.c) */

  pthread_t io_thread;
  pthread_t *workers;
  int nworkers, io_started;
} epoch_state;

struct ferry_loader {
  MPI_Comm comm;    /* main-thread collectives (a dup)         */
  MPI_Comm io_comm; /* I/O-thread collectives (a dup)          */
  MPI_Comm xcomm;   /* shuffle=global: the I/O thread's exchanges (a dup) */
  int rank, size;
  ferry_options *opts;
  ferry__manifest m;
  /* sparse=dense made on the device (sparse.c, decision 0056): the dense
   * view, whose variables the device batches and ferry_var_info show (m
   * keeps the pairs ragged, as the host batches carry them), dz[its
   * nvars] the host variables of each (the view's own table), and the
   * view's sample_mean and row_sized, which the plan's chunk size takes
   * as with the CPU view.  NULL otherwise. */
  ferry__manifest *dview;
  const ferry__densify_var *dz;
  size_t dview_mean, dview_sized;
  const ferry__backend *be;
  ferry__chunk_index chunks; /* chunk id -> part and row, O(parts)   */
  int64_t nchunks, chunk_samples;
  char chunk_why[256]; /* how chunk_samples was chosen (ferry_chunk_samples) */
  size_t row_total;    /* bytes of one sample, all variables read
                        * (those the workers make aside: pack.c) */
  size_t row_all;      /* bytes of one sample, every variable     */
  size_t row_sized;    /* the bytes that size chunks and draw blocks:
                        * row_total, and packed tokens the workers copy */
  size_t *var_prefix;  /* [nvars] bytes of vars before v in a row */
  /* Ragged variables (ragged.c): ragged is 1 when one is; ragged_cap[v]
   * the value rows a batch slot holds for ragged variable v (0: dense);
   * batch_bytes a slot's bytes, every variable and offsets included
   * (batch_size * row_total without ragged variables); sample_mean the
   * mean bytes of a sample and sample_bound the most bytes per sample of
   * any chunk (both row_total without ragged variables). */
  int ragged;
  int tok_var;  /* max_tokens: the ragged variable counted (tokens.c), or -1 */
  int *offs_of; /* [nvars] a ragged variable's group: the first ragged
                 * variable of the same lengths in every sample (itself
                 * when none before it); -1 dense (ragged.c) */
  int64_t *ragged_cap;
  ferry__lenstat *rstat; /* [nvars] a ragged variable's lengths: shortest,
                          * longest, all rows (one pass at open) */
  size_t batch_bytes, sample_mean, sample_bound;
  /* The slots as made now (slots.c): slot_cap[v] the value rows of ragged
   * variable v in every ring slot and spare (ragged_cap's bound at open
   * with pad=L, else the largest batch of the epoch set last, 0 before
   * one: ferry__ragged_epoch), slot_bytes a slot's bytes (batch_bytes
   * without ragged variables). */
  int64_t *slot_cap;
  size_t slot_bytes;
  size_t buf_quantum; /* ragged: read buffers are multiples of it (ragged.c) */
  /* pad (ragged.c): 0 none, 1 max (the batch's longest), 2 fixed (pad_len
   * rows, truncated or refused); pad_elem: a ragged variable's pad value,
   * one element ([nvars * 8], native order) */
  int pad;
  int64_t pad_len;
  unsigned char *pad_elem;
  /* pack=concat (pack.c): [nvars], 1 for a variable the workers make
   * (the boundary outputs, document_ids): no bytes in the read buffers,
   * so var_prefix and row_total leave it out; NULL otherwise */
  unsigned char *pack_comp;
#define FERRY__MAX_PAD_VARS 64 /* ragged.c refuses pad with more variables */
  int nthreads;     /* workers per epoch (the threads option, resolved) */
  ring_slot **ring; /* [nring]: position b % nring serves batch b */
  int64_t nring;
  ferry__held held; /* slots beyond the rings for held batches (slots.c) */
  int ring_pinned;  /* the ring's buffers come from cudaHostAlloc      */
  /* io=mmap: each (part, variable)'s rows mapped once for the loader's
   * life ([nparts * nvars], made by the I/O thread on first use, unmapped
   * at close), so later epochs copy from resident mappings without a page
   * fault; NULL when there are more than FERRY__MAX_MAPS of them (each
   * extent is then mapped and unmapped on its own) */
  ferry__mapping *maps;
  unsigned char **map_ready; /* [nparts * nvars]: per map, a byte per 2 MiB
                                populated (pipeline.c), or NULL */
  epoch_state *ep;
  struct ferry__cache *cache; /* cache=node|cluster (cache.c), or NULL */
  ferry_memory_budget budget;
  pthread_mutex_t stats_mu;
  ferry_stats stats;
  char errmsg[FERRY__MSG_MAX];
  pthread_mutex_t pool_mu; /* guards the read-buffer pool             */
  unsigned char *pool[POOL_MAX];
  int npool;
  size_t pool_bytes;      /* bytes in the pool                       */
  size_t out_bytes;       /* bytes of read buffers in use or in flight */
  int ckpt_sig;           /* signal number with a handler installed, 0 */
  int ckpt_agreed;        /* every rank saw the checkpoint request    */
  _Atomic int ckpt_asked; /* ferry_request_checkpoint on this rank    */
  int ckpt_warned;        /* said that the signal handler was replaced */
  /* The GPU stage (cuda.c): NULL when batches stay in host memory. */
  ferry__gpu *gpu;
  ferry__dslot **dring; /* [ndring] the device ring                */
  int64_t ndring;
  int local_rank, local_size;
  char dev_how[256];
  char io_how[512]; /* how rows are read and why (io_choice.c)       */
  /* The agreement every collective call starts with (vote.c).  peer_rc:
   * FERRY_EPEER once ranks were found in different calls or a rank did not
   * answer; the loader then makes no collective call any more.  vote_buf is
   * MPI's buffer of the vote; vote_pending: a timed-out vote still owns it
   * (and the communicators), so close leaks them rather than free them
   * under MPI. */
  int peer_rc;
  int vote_pending;
  int64_t *vote_buf; /* [2 * FERRY__VOTE_N] */
  /* A ferry_next vote posted early (next.c): early_pending while it is in
   * flight, so the ranks need not meet at the batch it certifies. */
  int early_pending;
  MPI_Request early_req;
  /* Sampling (loader/sampling.c): 0, FERRY__DRAW_WEIGHTED (weights or
   * balance) or FERRY__DRAW_MIX; the weights (read once, broadcast) or the
   * mix's sources (from the manifest) */
  int sampling;
  int64_t draw_block; /* rows of a sampling block (draw_block, resolved) */
  ferry__weights wts;
  ferry__draw_source *mix_src;
  int nmix;
  /* the mix's changes a state load hands to the epoch it begins */
  ferry__draw_change *pending_mixch;
  int npending_mixch;
};

/* ---- Shared between the loader's files ------------------------------- */

/* sampling.c: weights/balance/mix at ferry_open (collective, after the
 * open's agreement), the epoch's draw plan, and the loader's share freed */
int ferry__sampling_open(ferry_loader *L, ferry__err *err);

/* ---- Packed rows of a token corpus (pack.c) ---- */

/** With option pack: make L->m the packed view of the shared corpus
 *  manifest (which becomes L->m.inner); every rank, the same outcome.
 *  0 without pack. */
int ferry__pack_wrap(ferry_loader *L, ferry__err *err);
/** sparse=dense (loader/sparse.c): every rank, after the manifest is
 *  shared, L->m made a view whose sparse matrices are dense variables. */
int ferry__sparse_wrap(ferry_loader *L, ferry__err *err);
/** With the rows made on the device (L->dview), after ragged.c counted
 *  the rows: the CPU view's sample_mean and row_sized into L->dview_mean
 *  and L->dview_sized (the plan's chunk size and draw block take them, so
 *  the plan is the CPU view's).  No-op otherwise. */
void ferry__sparse_plan_basis(ferry_loader *L);
/** A device slot's bytes beyond the host batch's (whose CSR pairs it
 *  stages): the dense rows and the column maps made on the device; 0
 *  without L->dview. */
size_t ferry__sparse_device_extra(const ferry_loader *L);
/** 1 when m is such a view (L->be is then ferry__sparse_backend). */
int ferry__sparse_is(const ferry__manifest *m);
extern const ferry__backend ferry__sparse_backend;
/** decode= (loader/decode.c): every rank, after the manifest is shared,
 *  L->m made a view whose decoded bytes variables are dense pixels; 0
 *  without decode. */
int ferry__decode_wrap(ferry_loader *L, ferry__err *err);
/** 1 when m is such a view (L->be is then ferry__decode_backend). */
int ferry__decode_is(const ferry__manifest *m);
/** The inner variable whose bytes view variable var of a decode view
 *  decodes; -1 when m is no such view or var is not decoded (images.c). */
int ferry__decode_src(const ferry__manifest *m, int var);
/** ferry_stats' decode counters of m (0 when m is no decode= view).  Any
 *  thread. */
void ferry__decode_counts(const ferry__manifest *m, int64_t *images,
                          double *cpu_seconds);
extern const ferry__backend ferry__decode_backend;
/** The describe of the views' backends (pack, sparse): none is a part. */
int ferry__view_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err);
/** 1 when m is a packed view (L->be is then ferry__pack_backend). */
int ferry__pack_is(const ferry__manifest *m);
/** The corpus's token variable under the packed view m (of a mix: source
 *  p's, in its own manifest; else p = 0), or -1. */
int ferry__pack_token_var(const ferry__manifest *m, int64_t p);
/** The documents of a run of the packed view m (source p of a mix; else
 *  p = 0): pack_chunk, or its automatic value; -1 when m is no view. */
int64_t ferry__pack_run_docs(const ferry__manifest *m, int64_t p);
extern const ferry__backend ferry__pack_backend;
/** pack=concat without shuffle=global: L->pack_comp marks the variables
 *  the workers make; 0, or FERRY_ENOMEM. */
int ferry__pack_computed(ferry_loader *L, ferry__err *err);
/** At each epoch (pack_comp set): the epoch's stream for the workers. */
int ferry__pack_fill_open(ferry_loader *L, int64_t epoch,
                          struct ferry__pack_fill **out, ferry__err *err);
/** Rows [row, row + n) of part `part` (a mix's source; else 0) of
 *  computed variable v into dst (n * row_bytes): any worker thread,
 *  concurrently.  0 or a negative code, err set. */
int ferry__pack_fill_rows(struct ferry__pack_fill *pf, int v, int64_t part,
                          int64_t row, int64_t n, unsigned char *dst, int rank,
                          ferry__err *err);
void ferry__pack_fill_close(struct ferry__pack_fill *pf);
int ferry__sampling_epoch(ferry_loader *L, epoch_state *ep,
                          const ferry__plan_params *pp, ferry__err *err);
void ferry__sampling_free(ferry_loader *L);
/* A mix's sources (paths and sizes, not proportions): what a state with
 * another mix must share for mix_resume=new_mix; 0 when not a mix. */
uint64_t ferry__mix_sources_hash(const ferry_loader *L);
/* The changes a resume of st over this loader's mix starts with: st's, and
 * with a changed mix (newmix) this loader's proportions from the first
 * draw window after st's position.  0 or FERRY_ENOMEM. */
int ferry__mix_resume_changes(ferry_loader *L, const ferry__state *st,
                              int newmix, ferry__err *err);
/* ferry_plan_order under sampling: the order of rank of P in epoch. */
int ferry__sampling_order(const ferry_loader *L, int64_t epoch, int P, int rank,
                          int64_t **samples, int64_t **batch_start, int64_t *nb,
                          ferry__err *err);

/* vote.c: which collective call a rank is in (the order matters: the
 * lowest op wins the report of a mismatch, so the rank that left is named
 * rather than the ranks that stayed). */
enum {
  FERRY__VOTE_CLOSE = 1,
  FERRY__VOTE_SET_EPOCH,
  FERRY__VOTE_STATE_SAVE,
  FERRY__VOTE_STATE_LOAD,
  FERRY__VOTE_NEXT
};
#define FERRY__VOTE_N 5
typedef struct ferry__vote_out {
  int64_t through; /* FERRY__VOTE_NEXT: the lowest vouch-through index */
  int rank;        /* ... and the lowest rank that voted it            */
  int asked;       /* some rank asked for a checkpoint                 */
} ferry__vote_out;
/* COLLECTIVE over L->comm.  Every rank says which call it is in (op) and
 * for ferry_next how far it vouches (through) and whether a checkpoint was
 * asked.  Returns 0 when every rank is in the same call (out filled for
 * FERRY__VOTE_NEXT); FERRY_EPEER with err naming the rank that left, its
 * call and batch when ranks are in different calls (the running epoch is
 * then halted the same way on every rank), or naming what it waited for
 * when collective_timeout ran out.  Either way L->peer_rc is set. */
int ferry__vote(ferry_loader *L, int op, int64_t through, int asked,
                ferry__vote_out *out, ferry__err *err);
/* ferry_next's vote posted before it is needed (next.c): every rank posts
 * it at the same batch (agreed values only), and finishes it when it needs
 * the certification, or first thing in its next vote of any call.  Either
 * way the votes pair in the same order on every rank. */
int ferry__vote_early(ferry_loader *L, int64_t through, int asked,
                      ferry__err *err);
int ferry__vote_early_finish(ferry_loader *L, ferry__vote_out *out,
                             ferry__err *err);
/* The error a collective call returns once L->peer_rc is set. */
int ferry__peer_gone(ferry_loader *L, const char *call, ferry__err *err);

/* fail.c: the edge where an error leaves the library (loader message and
 * thread error formatted with the rank). */
int ferry__loader_fail(ferry_loader *L, const ferry__err *err);

/* iostage.c: what both I/O loops (pipeline.c, global_io.c) use. */
double ferry__now(void);
unsigned char *ferry__buf_get(ferry_loader *L, size_t bytes);
void ferry__buf_put(ferry_loader *L, unsigned char *p);
/* The I/O thread's hand-offs to the workers (ep->mu taken inside): rows of
 * extent e now in buf, or the first error of the epoch's reads. */
/* tokens.c: batches by a token budget (max_tokens, bucket_window). */
int ferry__tokens_open(ferry_loader *L, ferry__err *err);
/** Cut p (a computed plan of batch_size 1) into max_tokens batches, the
 *  same count on every rank (one MPI_Allreduce after agreeing on rc);
 *  with bucket_window, *cache (when cache is not NULL) gets what
 *  ferry__tokens_slots needs.  COLLECTIVE.  Returns the agreed rc. */
int ferry__tokens_plan(ferry_loader *L, ferry__rank_plan *p, int64_t epoch,
                       ferry__tok_cache **cache, int rc, ferry__err *err);
/** Positions [i0, i0 + n) of one batch of a bucketed plan: their slots. */
void ferry__tokens_slots(const ferry_loader *L, const ferry__rank_plan *p,
                         int64_t epoch, ferry__tok_cache *tc, int64_t i0,
                         int64_t n, ferry__slot *out);
void ferry__tok_cache_free(ferry__tok_cache *tc);
/** tc's window buffer made again for p (a sampling plan rebuilt by a
 *  resume); FERRY_ENOMEM. */
int ferry__tok_cache_fit(ferry__tok_cache *tc, const ferry__rank_plan *p);
size_t ferry__tok_cache_bytes(int64_t W);
/* tokens.c: the rest of an epoch of token batches after its first K
 * (the same ranks), ep->plan the whole epoch's plan, cut.  COLLECTIVE
 * only through what it calls: none. */
int ferry__tokens_tail(ferry_loader *L, epoch_state *ep,
                       const ferry__plan_params *pp, int64_t K,
                       ferry__err *err);
/** A bucketed max_tokens epoch saved after K batches over R0 ranks (its
 *  first step; pp: this epoch's plan parameters; draw: a sampling epoch's
 *  draws, whose old plans deal them as batches of 1 from base's position
 *  skipping its holes, else NULL and the plans are made from ps and
 *  perm, after the nprior steps of prior when there are): each old rank
 *  r's served
 *  positions as ends[r] (the end of the bucket holding its batch K) and
 *  the nholes[r] positions before it it did not serve (holes[r],
 *  malloc'd), for ferry__plan_resume.  Every old rank's plan and cut are
 *  made again here (two passes: the counts, then the layouts).  LOCAL:
 *  the same on every rank. */
int ferry__tokens_holes(ferry_loader *L, const ferry__pieces *ps,
                        const int64_t *perm, const ferry__draw *draw,
                        const ferry__draw_cut *base,
                        const ferry__resume_step *prior, int nprior,
                        const ferry__plan_params *pp, int R0, int64_t K,
                        int64_t *ends, int64_t *nholes, int64_t **holes,
                        ferry__err *err);
/* ragged.c */
int ferry__ragged_open(ferry_loader *L, ferry__err *err);
/** ferry_set_epoch: this rank's batches of the epoch planned in ep walked
 *  (their lengths only), and the slots made for the largest
 *  (ferry__ring_resize).  LOCAL (the caller agrees on rc).  Without
 *  ragged variables, or with pad=L, nothing to do. */
int ferry__ragged_epoch(ferry_loader *L, epoch_state *ep, ferry__err *err);
/** offsets_dtype=int32: every slot's rows fit (after max_tokens' cap). */
int ferry__ragged_int32_check(ferry_loader *L, ferry__err *err);
void ferry__ragged_bound(ferry_loader *L);
/** Bytes of extent x's buffer before variable v (v == nvars: all of it). */
size_t ferry__extent_var_off(const ferry_loader *L, const ferry__extent *x,
                             int v);
/** The read buffer of extent x: its bytes (at least 1), rounded up to
 *  buf_quantum with ragged variables so that the pool reuses buffers. */
size_t ferry__extent_buf_bytes(const ferry_loader *L, const ferry__extent *x);
void ferry__publish_rows(epoch_state *ep, int64_t e, unsigned char *buf,
                         int64_t rows);
void ferry__publish_error(epoch_state *ep, int rc, const ferry__err *err);
/* The path of part p, for messages. */
const char *ferry__part_path(const ferry_loader *L, int64_t p);
/* Collective rounds: wait until round j may start (its window admitted);
 * 1 to enter it (as a dummy, *dummy set, after a stop), 0 when the I/O
 * thread is done. */
int ferry__round_wait(epoch_state *ep, int64_t j, int *dummy);
void ferry__buf_drain(ferry_loader *L, size_t keep);
/* pipeline.c */
int64_t ferry__admit_of(const ferry__rank_plan *p, int64_t w);
void *ferry__io_main(void *arg);
/* global_io.c: the I/O thread's loop for shuffle=global. */
void ferry__io_global(epoch_state *ep, ferry__io *io);
void *ferry__worker_main(void *arg);
/* Assemble batch b into slot s on the calling thread (ep->mu held; it is
 * released while copying): the consumer works instead of sleeping. */
void ferry__assemble_unlocked(epoch_state *ep, ring_slot *s, int64_t b);

/* The most whole-variable mappings a loader keeps (vm.max_map_count is
 * 65530 by default; MPI and the application map too). */
#define FERRY__MAX_MAPS 16384

/* slots.c: the ring slots, and the slots beyond the rings that batches
 * the caller holds are given. */
int ferry__ring_alloc(ferry_loader *L, ferry__err *err);
void ferry__ring_free(ferry_loader *L);
/* The largest batch of an epoch (ferry__ragged_epoch): its index, samples
 * and ragged bytes, for messages. */
typedef struct ferry__ring_need {
  int64_t batch, samples;
  size_t bytes;
} ferry__ring_need;
/* ferry_set_epoch, every slot free (the last epoch stopped): the slots
 * made again for need[v] rows of each ragged variable -- unless the
 * present ones hold them with at most an eighth to spare -- the spares
 * dropped, NCCL's registrations moved to the new device slots.  0, or
 * FERRY_ENOMEM / FERRY_ENODEV naming the epoch's largest batch. */
int ferry__ring_resize(ferry_loader *L, const int64_t *need, int64_t epoch,
                       const ferry__ring_need *big, ferry__err *err);
/* The consumer (ferry_next, ep->mu held) needs the slot of batch b (host or
 * device) and finds it held by an earlier batch: swap every slot the caller
 * holds with a batch before b out of the rings for a spare one, so that
 * the pipeline goes on.  0 when done; FERRY_EINVAL past held_memory (the
 * message says how much is held and which option raises it) or
 * FERRY_ENOMEM, on this rank. */
int ferry__held_make_room(epoch_state *ep, int64_t b, ferry__err *err);
/* ferry_release (ep->mu held): 1 when batch was swapped out of the rings
 * and is held (*out its entry), 2 when it was and is released, 0 when
 * not; ferry__held_drop makes its slots spares. */
int ferry__held_find(const ferry_loader *L, const ferry_batch *batch,
                     ferry__held_batch *out);
void ferry__held_drop(ferry_loader *L, const ferry__held_batch *hb);
/* Epoch stop: the held batches become invalid, their slots spares. */
void ferry__held_reset(ferry_loader *L);
/* held_memory in whole batches of `batch` bytes: the most slots beyond
 * the rings. */
int64_t ferry__held_max(const ferry_loader *L, size_t batch);

/* io_choice.c: refuse what the cache cannot serve (cache.c, the same on
 * every rank), then resolve io=auto (rank 0 decides, every rank learns the
 * choice) into L->opts->io and say how in L->io_how.  COLLECTIVE. */
int ferry__io_resolve(ferry_loader *L, ferry__err *err);

/* epoch.c */
int ferry__epoch_stop(ferry_loader *L);
int ferry__epoch_begin(ferry_loader *L, int64_t epoch,
                       const ferry__resume_step *steps, int nsteps,
                       int64_t index_base, int64_t samples_before);
void ferry__plan_params_of(const ferry_loader *L, int64_t epoch,
                           ferry__plan_params *pp);
/* budget.c */
size_t ferry__cache_bound(const ferry_loader *L);
/* The memory budget (L->budget): estimated at open (ep NULL), exact once
 * the epoch is planned. */
void ferry__budget_compute(ferry_loader *L, const epoch_state *ep);

#endif /* FERRY_LOADER_H */
