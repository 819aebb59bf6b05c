/*
 * loader.c - the loader handle and its per-rank pipeline.
 *
 * ferry_open (collective): rank 0 scans the dataset and broadcasts the
 * manifest; every rank checks that it was given the same dataset and options.
 * ferry_set_epoch (collective): rank 0 draws the permutation and broadcasts
 * it, every rank recomputes and compares it, builds its own plan (plan.c),
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
 * the plan of plan.c's ferry__plan_resume -- the pipeline is the same.
 *
 * Locking: one mutex per epoch guards every field marked (L); three
 * condition variables wake the I/O thread (consumer moved), the workers
 * (data loaded or slot freed) and the consumer (batch ready).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "backends/backend.h"
#include "core/options.h"
#include "core/state.h"
#include "gpu/gpu.h"
#include "plan/plan.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Host ring slots: FREE -> BUSY (assembling) -> READY -> HELD -> FREE.
 * With device=cuda a host slot goes BUSY -> (copied) FREE, or with
 * keep_host PAIRED with the device slot until its batch is released;
 * device slots go FREE -> BUSY (copying) -> READY -> HELD -> FREE. */
enum { SLOT_FREE = 0, SLOT_BUSY, SLOT_READY, SLOT_HELD, SLOT_PAIRED };

/* Read buffers are reused through a small pool: freeing and allocating
 * megabytes per chunk makes glibc hand the heap top back to the kernel and
 * fault every page in again, which cost 10x in read throughput.  They come
 * from ferry__big_alloc, whose header (BUF_HDR bytes in front) holds the
 * capacity. */
enum { POOL_MAX = 256, BUF_HDR = FERRY__BIG_HDR };

typedef struct ring_slot {
  ferry_batch batch;
  ferry_tensor *tensors;   /* [nvars]                              */
  unsigned char **bufs;    /* [nvars] batch_size * row_bytes each  */
  int64_t *ids;
  uint8_t *padded;
  int state;               /* (L) SLOT_*                           */
  int64_t bidx;            /* (L) batch held                       */
  int rc;                  /* (L) assembly result                  */
  ferry__err err;
} ring_slot;

typedef struct epoch_state {
  ferry_loader *L;
  int64_t epoch;
  ferry__rank_plan plan;
  ferry__chunk *pieces;
  int64_t npieces;
  int64_t *perm;
  uint64_t checksum;
  /* collective I/O: every rank's reads */
  ferry__rank_plan *all_reads; /* [size] or NULL */
  int64_t nrounds;
  int64_t *round_admit;        /* [nrounds] consumed count that admits it */

  pthread_mutex_t mu;
  pthread_cond_t cv_io, cv_work, cv_ready;
  int stop;                    /* (L) */
  int64_t consumed;            /* (L) batches handed out */
  int64_t loaded;              /* (L) extents loaded, in read order */
  int64_t next_assign;         /* (L) next batch for a worker */
  unsigned char **ext_buf;     /* (L) [nextents] */
  int64_t *win_remaining;      /* (L) [nwindows] samples not assembled */
  int io_rc;                   /* (L) */
  ferry__err io_err;
  int64_t rounds_started;      /* (L) collective: rounds entered */
  int64_t round_target;        /* (L) collective: finish rounds < target on stop */
  int failed;                  /* consumer side: agreed error of the epoch */
  int64_t certified;           /* consumer side: batches <= this are known
                                  good on every rank */
  int64_t io_through;          /* (L) last batch whose data is all loaded */
  /* A resumed epoch (ferry_state_load): the steps served before, the index
   * of its first batch and the real samples served before it. */
  ferry__resume_step *steps;   /* [nsteps], NULL for a fresh epoch */
  int nsteps;
  int64_t index_base;
  int64_t samples_before;
  double cert_time;            /* consumer side: last certification */
  int64_t cert_batch;

  pthread_t io_thread;
  pthread_t *workers;
  int nworkers, io_started;
} epoch_state;

struct ferry_loader {
  MPI_Comm comm;      /* main-thread collectives (a dup)         */
  MPI_Comm io_comm;   /* I/O-thread collectives (a dup)          */
  int rank, size;
  ferry_options *opts;
  ferry__manifest m;
  const ferry__backend *be;
  ferry__chunk *chunks;
  int64_t nchunks, chunk_samples;
  size_t row_total;   /* bytes of one sample, all variables     */
  size_t *var_prefix; /* [nvars] bytes of vars before v in a row */
  int nthreads;       /* workers per epoch (the threads option, resolved) */
  ring_slot *ring;
  int64_t nring;
  ferry__slot *spare_slots;  /* the last epoch's slot array, reused     */
  int64_t spare_cap;
  epoch_state *ep;
  ferry_memory_budget budget;
  pthread_mutex_t stats_mu;
  ferry_stats stats;
  char errmsg[FERRY__MSG_MAX];
  pthread_mutex_t pool_mu;   /* guards the read-buffer pool             */
  unsigned char *pool[POOL_MAX];
  int npool;
  size_t pool_bytes;         /* bytes in the pool                       */
  size_t out_bytes;          /* bytes of read buffers in use or in flight */
  int ckpt_sig;              /* signal number with a handler installed, 0 */
  int ckpt_agreed;           /* every rank saw the checkpoint request    */
  /* The GPU stage (cuda.c): NULL when batches stay in host memory. */
  ferry__gpu *gpu;
  ferry__dslot *dring;       /* [ndring] the device ring                 */
  int64_t ndring;
  int local_rank, local_size;
  char dev_how[256];
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char *buf_get(ferry_loader *L, size_t bytes) {
  unsigned char *drop[POOL_MAX];
  int ndrop = 0;
  pthread_mutex_lock(&L->pool_mu);
  for (int i = 0; i < L->npool; i++) {
    unsigned char *p = L->pool[i];
    size_t cap = *(size_t *)(p - BUF_HDR);
    if (cap == bytes) { /* exact sizes only: a larger buffer would hold
                           memory the budget does not count */
      L->pool[i] = L->pool[--L->npool];
      L->pool_bytes -= cap;
      L->out_bytes += cap;
      pthread_mutex_unlock(&L->pool_mu);
      return p;
    }
  }
  /* A miss: make room within the read budget before allocating. */
  while (L->npool > 0 &&
         L->pool_bytes + L->out_bytes + bytes > L->budget.read_bytes) {
    unsigned char *p = L->pool[--L->npool];
    L->pool_bytes -= *(size_t *)(p - BUF_HDR);
    drop[ndrop++] = p;
  }
  L->out_bytes += bytes;
  pthread_mutex_unlock(&L->pool_mu);
  for (int i = 0; i < ndrop; i++)
    ferry__big_free(drop[i]);
  unsigned char *p = ferry__big_alloc(bytes);
  if (!p) {
    pthread_mutex_lock(&L->pool_mu);
    L->out_bytes -= bytes;
    pthread_mutex_unlock(&L->pool_mu);
  }
  return p;
}

/* Keep p for reuse while pooled plus in-use bytes stay within the read
 * budget; free it otherwise. */
static void buf_put(ferry_loader *L, unsigned char *p) {
  if (!p)
    return;
  size_t cap = *(size_t *)(p - BUF_HDR);
  pthread_mutex_lock(&L->pool_mu);
  L->out_bytes -= cap;
  if (L->npool < POOL_MAX &&
      L->pool_bytes + L->out_bytes + cap <= L->budget.read_bytes) {
    L->pool[L->npool++] = p;
    L->pool_bytes += cap;
    p = NULL;
  }
  pthread_mutex_unlock(&L->pool_mu);
  ferry__big_free(p);
}

static void pool_drain(ferry_loader *L, size_t keep) {
  pthread_mutex_lock(&L->pool_mu);
  while (L->npool > 0 && L->pool_bytes > keep) {
    unsigned char *p = L->pool[--L->npool];
    L->pool_bytes -= *(size_t *)(p - BUF_HDR);
    ferry__big_free(p);
  }
  pthread_mutex_unlock(&L->pool_mu);
}

/* Record the most buffer memory held at once: ring + read buffers in use
 * or in flight + pooled ones. */
static void note_resident(ferry_loader *L) {
  pthread_mutex_lock(&L->pool_mu);
  size_t total = L->budget.ring_bytes + L->out_bytes + L->pool_bytes;
  pthread_mutex_unlock(&L->pool_mu);
  pthread_mutex_lock(&L->stats_mu);
  if (total > L->stats.peak_resident_bytes)
    L->stats.peak_resident_bytes = total;
  pthread_mutex_unlock(&L->stats_mu);
}

/*
 * The agreement every collective step ends with (mpiFileUtils' alltrue, with
 * the reason attached): the lowest failing rank's code and message reach
 * every rank.  COLLECTIVE over comm.
 */
static int agree(MPI_Comm comm, int rank, int rc, ferry__err *err) {
  int in[2] = {rc < 0 ? 0 : 1, rank}, out[2];
  if (MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Allreduce failed", rank);
  if (out[0] == 1)
    return 0;
  struct {
    int code;
    char msg[FERRY__MSG_MAX];
  } m;
  if (rank == out[1]) {
    m.code = rc;
    if (strncmp(err->msg, "rank ", 5) == 0)
      snprintf(m.msg, sizeof m.msg, "%s", err->msg);
    else
      snprintf(m.msg, sizeof m.msg, "rank %d: %.1000s", rank, err->msg);
  }
  if (MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, out[1], comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Bcast failed", rank);
  return ferry__seterr(err, m.code, "%s", m.msg);
}

static int fail_loader(ferry_loader *L, const ferry__err *err) {
  snprintf(L->errmsg, sizeof L->errmsg, "%s", err->msg);
  ferry__set_thread_error(err->msg);
  return err->code;
}

/* ---- The I/O thread ---------------------------------------------------- */

/* Give window w's buffers back to the pool.  Called with ep->mu held (lock
 * order: ep->mu, then pool_mu); it allocates nothing, so it cannot fail. */
static void free_window(epoch_state *ep, int64_t w) {
  const ferry__rank_plan *p = &ep->plan;
  for (int64_t e = p->window_first_extent[w]; e < p->window_first_extent[w + 1];
       e++) {
    if (ep->ext_buf[e]) {
      buf_put(ep->L, ep->ext_buf[e]);
      ep->ext_buf[e] = NULL;
    }
  }
}

/* Read one extent (all variables) into a new buffer.  I/O thread only. */
static int read_extent(epoch_state *ep, ferry__io *io, const ferry__extent *x,
                       unsigned char **out, ferry__err *err) {
  ferry_loader *L = ep->L;
  size_t bytes = (size_t)x->count * L->row_total;
  unsigned char *buf = buf_get(L, bytes);
  if (!buf)
    return ferry__seterr(err, FERRY_ENOMEM,
                         "rank %d: out of memory for %zu bytes of part %lld",
                         L->rank, bytes, (long long)x->part);
  double t0 = now_s();
  for (int v = 0; v < L->m.nvars; v++) {
    int rc = L->be->io_read(io, x->part, v, x->row, x->count,
                            buf + (size_t)x->count * L->var_prefix[v], err);
    if (rc) {
      buf_put(L, buf);
      return rc;
    }
  }
  pthread_mutex_lock(&L->stats_mu);
  L->stats.bytes_read += (int64_t)bytes;
  L->stats.read_seconds += now_s() - t0;
  pthread_mutex_unlock(&L->stats_mu);
  *out = buf;
  return 0;
}

static void publish_extent(epoch_state *ep, int64_t e, unsigned char *buf) {
  pthread_mutex_lock(&ep->mu);
  ep->ext_buf[e] = buf;
  ep->loaded = e + 1;
  pthread_cond_broadcast(&ep->cv_work);
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_mutex_unlock(&ep->mu);
  note_resident(ep->L);
}

static void publish_error(epoch_state *ep, int rc, const ferry__err *err) {
  pthread_mutex_lock(&ep->mu);
  if (!ep->io_rc) {
    ep->io_rc = rc;
    ep->io_err = *err;
  }
  pthread_cond_broadcast(&ep->cv_work);
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_mutex_unlock(&ep->mu);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Double buffering: window w may be read once the consumer is within
 * `prefetch` batches of the first batch of window w-1, so one window is read
 * while the previous one is served.  admit_of(w) <= need(w): a batch never
 * waits for a window that is not admitted yet. */
static int64_t admit_of(const ferry__rank_plan *p, int64_t w) {
  return w > 0 ? p->window_need[w - 1] : 0;
}

/* Wait until `admit` batches are consumed (minus the lookahead) or stop.
 * Returns 1 to go on, 0 to stop. */
static int wait_admission(epoch_state *ep, int64_t admit) {
  int64_t la = ep->L->opts->prefetch;
  pthread_mutex_lock(&ep->mu);
  while (!ep->stop && admit > ep->consumed + la)
    pthread_cond_wait(&ep->cv_io, &ep->mu);
  int go = !ep->stop;
  pthread_mutex_unlock(&ep->mu);
  return go;
}

static void io_independent(epoch_state *ep, ferry__io *io) {
  const ferry__rank_plan *p = &ep->plan;
  ferry__err err = {0};
  for (int64_t w = 0; w < p->nwindows; w++) {
    if (!wait_admission(ep, admit_of(p, w)))
      return;
    for (int64_t e = p->window_first_extent[w];
         e < p->window_first_extent[w + 1]; e++) {
      unsigned char *buf = NULL;
      int rc = read_extent(ep, io, &p->extents[e], &buf, &err);
      if (rc) {
        publish_error(ep, rc, &err);
        return;
      }
      publish_extent(ep, e, buf);
      pthread_mutex_lock(&ep->mu);
      int stop = ep->stop;
      pthread_mutex_unlock(&ep->mu);
      if (stop)
        return;
    }
  }
}

/*
 * Collective rounds: in round j every rank reads its window j.  For each part
 * touched by any rank in the round (ascending), for each variable, every rank
 * makes max_r(extents of r on that part) read calls, empty where it has none,
 * so the collective calls always match.  After an error, or past a stop, a
 * rank keeps making the same calls with empty reads until the agreed round.
 */
static void io_collective(epoch_state *ep, ferry__io *io) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *all = ep->all_reads, *me = &ep->plan;
  ferry__err err = {0};
  int dummy = 0;
  int64_t *parts = NULL, nparts_cap = 0;
  for (int64_t j = 0; j < ep->nrounds; j++) {
    pthread_mutex_lock(&ep->mu);
    int64_t la = L->opts->prefetch;
    while (!ep->stop && ep->round_admit[j] > ep->consumed + la)
      pthread_cond_wait(&ep->cv_io, &ep->mu);
    if (ep->stop) {
      while (ep->round_target < 0)
        pthread_cond_wait(&ep->cv_io, &ep->mu);
      if (j >= ep->round_target) {
        pthread_mutex_unlock(&ep->mu);
        break;
      }
      dummy = 1;
    }
    ep->rounds_started = j + 1;
    pthread_mutex_unlock(&ep->mu);

    /* Parts touched in round j by any rank, ascending, without repeats. */
    int64_t np = 0;
    for (int r = 0; r < L->size; r++) {
      const ferry__rank_plan *p = &all[r];
      if (j >= p->nwindows)
        continue;
      for (int64_t e = p->window_first_extent[j];
           e < p->window_first_extent[j + 1]; e++) {
        if (np == nparts_cap) {
          nparts_cap = nparts_cap ? 2 * nparts_cap : 16;
          int64_t *t = realloc(parts, (size_t)nparts_cap * sizeof *t);
          if (!t) { /* cannot stay matched without memory: stop reading */
            ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory",
                          L->rank);
            publish_error(ep, FERRY_ENOMEM, &err);
            free(parts);
            return;
          }
          parts = t;
        }
        parts[np++] = p->extents[e].part;
      }
    }
    qsort(parts, (size_t)np, sizeof *parts, cmp_i64);
    int64_t u = 0;
    for (int64_t a = 0; a < np; a++)
      if (u == 0 || parts[u - 1] != parts[a])
        parts[u++] = parts[a];
    np = u;

    for (int64_t a = 0; a < np; a++) {
      int64_t part = parts[a], calls = 0;
      for (int r = 0; r < L->size; r++) {
        const ferry__rank_plan *p = &all[r];
        if (j >= p->nwindows)
          continue;
        int64_t c = 0;
        for (int64_t e = p->window_first_extent[j];
             e < p->window_first_extent[j + 1]; e++)
          c += p->extents[e].part == part;
        if (c > calls)
          calls = c;
      }
      /* my extents on this part in round j, in row order (plan order) */
      int64_t mine0 = -1, nmine = 0;
      if (j < me->nwindows)
        for (int64_t e = me->window_first_extent[j];
             e < me->window_first_extent[j + 1]; e++)
          if (me->extents[e].part == part) {
            if (mine0 < 0)
              mine0 = e;
            nmine++;
          }
      unsigned char **bufs = calloc((size_t)(nmine ? nmine : 1), sizeof *bufs);
      if (!bufs && !dummy) {
        ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
        publish_error(ep, FERRY_ENOMEM, &err);
        dummy = 1;
      }
      for (int64_t k = 0; k < nmine && !dummy; k++) {
        size_t bytes = (size_t)me->extents[mine0 + k].count * L->row_total;
        bufs[k] = buf_get(L, bytes);
        if (!bufs[k]) {
          ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory",
                        L->rank);
          publish_error(ep, FERRY_ENOMEM, &err);
          dummy = 1;
        }
      }
      double t0 = now_s();
      for (int v = 0; v < L->m.nvars; v++)
        for (int64_t k = 0; k < calls; k++) {
          int real = !dummy && k < nmine;
          const ferry__extent *x = real ? &me->extents[mine0 + k] : NULL;
          static unsigned char scratch[1];
          int rc = L->be->io_read(
              io, part, v, real ? x->row : 0, real ? x->count : 0,
              real ? bufs[k] + (size_t)x->count * L->var_prefix[v] : scratch,
              &err);
          if (rc && !dummy) {
            publish_error(ep, rc, &err);
            dummy = 1;
          }
        }
      if (!dummy) {
        int64_t bytes = 0;
        for (int64_t k = 0; k < nmine; k++) {
          bytes += me->extents[mine0 + k].count * (int64_t)L->row_total;
          publish_extent(ep, mine0 + k, bufs[k]);
        }
        pthread_mutex_lock(&L->stats_mu);
        L->stats.bytes_read += bytes;
        L->stats.read_seconds += now_s() - t0;
        pthread_mutex_unlock(&L->stats_mu);
      } else if (bufs) {
        for (int64_t k = 0; k < nmine; k++)
          buf_put(L, bufs[k]);
      }
      free(bufs);
    }
  }
  free(parts);
}

static void *io_main(void *arg) {
  epoch_state *ep = arg;
  ferry_loader *L = ep->L;
  ferry__io *io = NULL;
  ferry__err err = {0};
  ferry__io_params p = {L->io_comm, L->rank,
                        L->opts->io == FERRY__IO_COLLECTIVE,
                        L->opts->max_open_files, L->opts};
  int rc = L->be->io_open(&io, &L->m, &p, &err);
  if (rc) {
    publish_error(ep, rc, &err);
    return NULL;
  }
  if (p.collective)
    io_collective(ep, io);
  else
    io_independent(ep, io);
  L->be->io_close(io);
  return NULL;
}

/* ---- Workers ----------------------------------------------------------- */

static void assemble(epoch_state *ep, ring_slot *s, int64_t b) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  int64_t b0 = p->batch_start[b], b1 = p->batch_start[b + 1], n = b1 - b0;
  int64_t npad = 0;
  for (int64_t i = 0; i < n; i++) {
    s->ids[i] = p->slots[b0 + i].sample;
    s->padded[i] = p->slots[b0 + i].padded;
    npad += s->padded[i];
  }
  for (int v = 0; v < L->m.nvars; v++) {
    const ferry__var *var = &L->m.vars[v];
    size_t rb = var->row_bytes;
    unsigned char *dst = s->bufs[v];
    for (int64_t i = b0; i < b1;) {
      const ferry__slot *sl = &p->slots[i];
      const ferry__extent *x = &p->extents[sl->extent];
      const unsigned char *src = ep->ext_buf[sl->extent] +
                                 (size_t)x->count * L->var_prefix[v] +
                                 (size_t)sl->row * rb;
      int64_t run = 1;
      while (i + run < b1 && p->slots[i + run].extent == sl->extent &&
             p->slots[i + run].row == sl->row + run)
        run++;
      memcpy(dst + (size_t)(i - b0) * rb, src, (size_t)run * rb);
      i += run;
    }
    if (var->swapped) {
      size_t el = ferry_dtype_size(var->dtype);
      ferry__byteswap(dst, (size_t)n * rb / el, el);
    }
    ferry_tensor *t = &s->tensors[v];
    t->shape[0] = n;
    t->nbytes = (size_t)n * rb;
  }
  s->batch.epoch = ep->epoch;
  s->batch.index = ep->index_base + b;
  s->batch.size = n;
  s->batch.num_padded = npad;
  s->rc = 0;
  if (L->opts->transform &&
      L->opts->transform(&s->batch, L->opts->transform_user) != 0)
    s->rc = ferry__seterr(&s->err, FERRY_ECALLBACK,
                          "rank %d: transform callback failed on batch %lld "
                          "of epoch %lld",
                          L->rank, (long long)b, (long long)ep->epoch);
}

/* The device stage of batch b, with ep->mu held on entry and exit: wait
 * until device slot b % ndring is free for b (the application released
 * batch b - ndring), copy the assembled host slot into it without the lock,
 * and, unless keep_host, wait for the copy so the host slot can be reused
 * (on this worker: the consumer never waits for it).  A copy error is the
 * slot's result, certified like a failed read. */
static void copy_to_device(epoch_state *ep, ring_slot *s, int64_t b) {
  ferry_loader *L = ep->L;
  ferry__dslot *d = &L->dring[b % L->ndring];
  int keep = L->opts->keep_host;
  while (!ep->stop && !(d->state == SLOT_FREE && d->expect == b))
    pthread_cond_wait(&ep->cv_work, &ep->mu);
  if (ep->stop) {
    s->state = SLOT_FREE;
    return;
  }
  d->state = SLOT_BUSY;
  d->bidx = b;
  pthread_mutex_unlock(&ep->mu);
  int rc = s->rc;
  double secs = 0;
  if (rc)
    d->err = s->err;
  else
    rc = ferry__dslot_copy(d, &s->batch, keep, L->rank, &d->err);
  if (!rc && !keep)
    rc = ferry__dslot_sync(d, &secs, L->rank, &d->err);
  pthread_mutex_lock(&L->stats_mu);
  if (!rc)
    L->stats.h2d_bytes += (int64_t)((size_t)s->batch.size * L->row_total);
  L->stats.h2d_seconds += secs;
  pthread_mutex_unlock(&L->stats_mu);
  pthread_mutex_lock(&ep->mu);
  d->rc = rc;
  if (keep && !rc) {
    s->state = SLOT_PAIRED;
    d->host = (int)(s - L->ring);
  } else {
    s->state = SLOT_FREE;
    d->host = -1;
  }
  d->state = SLOT_READY;
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_cond_broadcast(&ep->cv_work);
}

/* Assemble batch b (already claimed: slot BUSY, next_assign past it) with
 * ep->mu held on entry and exit; the copy runs without the lock.  Then free
 * the windows nobody needs any more and publish the slot. */
static void assemble_unlocked(epoch_state *ep, ring_slot *s, int64_t b) {
  const ferry__rank_plan *p = &ep->plan;
  pthread_mutex_unlock(&ep->mu);
  assemble(ep, s, b);
  pthread_mutex_lock(&ep->mu);
  for (int64_t i = p->batch_start[b]; i < p->batch_start[b + 1]; i++) {
    int64_t w = p->extents[p->slots[i].extent].window;
    if (--ep->win_remaining[w] == 0)
      free_window(ep, w);
  }
  if (ep->L->gpu) {
    copy_to_device(ep, s, b);
    return;
  }
  s->state = SLOT_READY;
  pthread_cond_broadcast(&ep->cv_ready);
}

/* A worker allocates nothing: once a batch's data is loaded, assembling it
 * cannot fail (only a transform can), which is what lets ferry_next certify
 * batches from the I/O progress alone. */
static void *worker_main(void *arg) {
  epoch_state *ep = arg;
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  pthread_mutex_lock(&ep->mu);
  for (;;) {
    int64_t b = ep->next_assign;
    if (ep->stop || b >= p->num_batches)
      break;
    ring_slot *s = &L->ring[b % L->nring];
    int data_ok = ep->loaded >= p->batch_need[b];
    if (s->state != SLOT_FREE || (!data_ok && !ep->io_rc)) {
      pthread_cond_wait(&ep->cv_work, &ep->mu);
      continue;
    }
    ep->next_assign++;
    s->state = SLOT_BUSY;
    s->bidx = b;
    if (!data_ok) { /* the I/O failed before this batch's data */
      s->rc = ep->io_rc;
      s->err = ep->io_err;
      s->state = SLOT_READY;
      pthread_cond_broadcast(&ep->cv_ready);
      continue;
    }
    assemble_unlocked(ep, s, b);
  }
  pthread_mutex_unlock(&ep->mu);
  return NULL;
}

/* ---- Epoch lifetime ----------------------------------------------------- */

/* Stop the running epoch and free it.  COLLECTIVE (the collective I/O thread
 * must finish the rounds some rank has entered). */
static int epoch_stop(ferry_loader *L) {
  epoch_state *ep = L->ep;
  int rc = 0;
  if (!ep)
    return 0;
  L->ep = NULL;
  if (ep->io_started || ep->nworkers) {
    pthread_mutex_lock(&ep->mu);
    ep->stop = 1;
    int64_t started = ep->rounds_started;
    pthread_cond_broadcast(&ep->cv_io);
    pthread_cond_broadcast(&ep->cv_work);
    pthread_mutex_unlock(&ep->mu);
    if (L->opts->io == FERRY__IO_COLLECTIVE) {
      /* After stop no new round starts on its own; agree how far to go. */
      long long mine = started, target = 0;
      if (MPI_Allreduce(&mine, &target, 1, MPI_LONG_LONG, MPI_MAX, L->comm) !=
          MPI_SUCCESS)
        rc = FERRY_EMPI;
      pthread_mutex_lock(&ep->mu);
      ep->round_target = target;
      pthread_cond_broadcast(&ep->cv_io);
      pthread_mutex_unlock(&ep->mu);
    }
    if (ep->io_started)
      pthread_join(ep->io_thread, NULL);
    for (int i = 0; i < ep->nworkers; i++)
      pthread_join(ep->workers[i], NULL);
  }
  for (int64_t e = 0; ep->ext_buf && e < ep->plan.nextents; e++)
    buf_put(L, ep->ext_buf[e]);
  free(ep->ext_buf);
  free(ep->win_remaining);
  free(ep->workers);
  if (L->gpu) { /* copies still in flight read the host ring */
    ferry__err ignore;
    if (ferry__gpu_sync(L->gpu, &ignore) && !rc)
      rc = FERRY_ENODEV;
  }
  for (int64_t i = 0; i < L->nring; i++)
    L->ring[i].state = SLOT_FREE;
  for (int64_t i = 0; i < L->ndring; i++) {
    L->dring[i].state = SLOT_FREE;
    L->dring[i].expect = i;
    L->dring[i].host = -1;
  }
  if (ep->all_reads)
    for (int r = 0; r < L->size; r++)
      ferry__rank_plan_free(&ep->all_reads[r]);
  free(ep->all_reads);
  free(ep->round_admit);
  free(ep->steps);
  ferry__big_free(L->spare_slots);
  L->spare_slots = ep->plan.slots; /* the next epoch reuses it */
  L->spare_cap = ep->plan.slots_cap;
  ep->plan.slots = NULL;
  ferry__rank_plan_free(&ep->plan);
  free(ep->pieces);
  free(ep->perm);
  pthread_mutex_destroy(&ep->mu);
  pthread_cond_destroy(&ep->cv_io);
  pthread_cond_destroy(&ep->cv_work);
  pthread_cond_destroy(&ep->cv_ready);
  free(ep);
  return rc;
}

static void plan_params(const ferry_loader *L, int64_t epoch,
                        ferry__plan_params *pp) {
  const ferry_options *o = L->opts;
  *pp = (ferry__plan_params){o->batch_size, o->seed,       o->shuffle,
                             o->block_size, o->shuffle_buffer, o->partition,
                             o->tail,       o->max_chunks, o->fraction,
                             epoch,         L->size};
}

/* Exact bound of the extent bytes resident at once under the admission rule:
 * at consumption c, windows with admit <= c + prefetch whose last batch >= c. */
/* The backend's decode caches (HDF5 chunk caches): every variable's
 * cache_bytes for each file it may keep open at once. */
static size_t cache_bound(const ferry_loader *L) {
  int64_t files = L->opts->max_open_files > 0 ? L->opts->max_open_files : 64;
  if (files > L->m.nparts)
    files = L->m.nparts;
  size_t per_file = 0;
  for (int v = 0; v < L->m.nvars; v++)
    per_file += L->m.vars[v].cache_bytes;
  return per_file * (size_t)files;
}

static size_t read_bound(const ferry_loader *L, const ferry__rank_plan *p) {
  int64_t nb = p->num_batches, la = L->opts->prefetch;
  if (nb == 0)
    return 0;
  double *diff = calloc((size_t)nb + 1, sizeof *diff);
  if (!diff)
    return 0;
  int64_t pos = 0;
  for (int64_t w = 0; w < p->nwindows; w++) {
    int64_t last = (pos + p->window_samples[w] - 1) / L->opts->batch_size;
    pos += p->window_samples[w];
    int64_t from = admit_of(p, w) - la < 0 ? 0 : admit_of(p, w) - la;
    if (last >= nb)
      last = nb - 1;
    double bytes = (double)p->window_samples[w] * (double)L->row_total;
    diff[from] += bytes;
    diff[last + 1] -= bytes;
  }
  double run = 0, best = 0;
  for (int64_t c = 0; c < nb; c++) {
    run += diff[c];
    if (run > best)
      best = run;
  }
  free(diff);
  return (size_t)best;
}

/* Every rank's reads, and the consumed count that admits each round. */
static int plan_collective(epoch_state *ep, const ferry__plan_params *pp,
                           ferry__err *err) {
  ferry_loader *L = ep->L;
  ep->all_reads = calloc((size_t)L->size, sizeof *ep->all_reads);
  if (!ep->all_reads)
    return ferry__seterr(err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
  int64_t nr = 0;
  if (ep->nsteps) {
    int rc = ferry__plan_resume(ep->pieces, ep->npieces, ep->perm, pp,
                                ep->steps, ep->nsteps, L->rank, NULL,
                                ep->all_reads, err);
    if (rc)
      return rc;
  }
  for (int r = 0; r < L->size; r++) {
    int rc = ep->nsteps ? 0
                        : ferry__plan_reads(ep->pieces, ep->npieces, ep->perm,
                                            pp, r, &ep->all_reads[r], err);
    if (rc)
      return rc;
    if (ep->all_reads[r].nwindows > nr)
      nr = ep->all_reads[r].nwindows;
  }
  ep->nrounds = nr;
  ep->round_admit = malloc((size_t)(nr ? nr : 1) * sizeof(int64_t));
  if (!ep->round_admit)
    return ferry__seterr(err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
  for (int64_t j = 0; j < nr; j++) {
    int64_t g = INT64_MAX;
    for (int r = 0; r < L->size; r++)
      if (j < ep->all_reads[r].nwindows &&
          admit_of(&ep->all_reads[r], j) < g)
        g = admit_of(&ep->all_reads[r], j);
    ep->round_admit[j] = g;
  }
  /* suffix minimum: admission never decreases from one round to the next */
  for (int64_t j = nr - 2; j >= 0; j--)
    if (ep->round_admit[j + 1] < ep->round_admit[j])
      ep->round_admit[j] = ep->round_admit[j + 1];
  return 0;
}

/* Plan epoch `epoch` and start its pipeline: the whole epoch (nsteps 0), or
 * the rest of it after the steps of a saved state.  COLLECTIVE. */
static int epoch_begin(ferry_loader *L, int64_t epoch,
                       const ferry__resume_step *steps, int nsteps,
                       int64_t index_base, int64_t samples_before) {
  ferry__err err = {0};
  int rc = epoch_stop(L);
  if (rc)
    ferry__seterr(&err, rc, "rank %d: stopping the previous epoch failed",
                  L->rank);
  epoch_state *ep = calloc(1, sizeof *ep);
  if (!ep && !rc)
    rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
  if (epoch < 0 && !rc)
    rc = ferry__seterr(&err, FERRY_EINVAL, "epoch %lld is negative",
                       (long long)epoch);
  ferry__plan_params pp;
  plan_params(L, epoch, &pp);
  if (ep) {
    ep->L = L;
    ep->epoch = epoch;
    ep->round_target = -1;
    ep->certified = -1;
    ep->io_through = -1;
    pthread_mutex_init(&ep->mu, NULL);
    pthread_cond_init(&ep->cv_io, NULL);
    pthread_cond_init(&ep->cv_work, NULL);
    pthread_cond_init(&ep->cv_ready, NULL);
    ep->index_base = index_base;
    ep->samples_before = samples_before;
    if (nsteps > 0) {
      ep->steps = malloc((size_t)nsteps * sizeof *ep->steps);
      if (ep->steps) {
        memcpy(ep->steps, steps, (size_t)nsteps * sizeof *steps);
        ep->nsteps = nsteps;
      } else if (!rc)
        rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory",
                           L->rank);
    }
  }
  if (!rc) {
    rc = ferry__plan_pieces(L->chunks, L->nchunks, &pp, &ep->pieces,
                            &ep->npieces);
    if (rc)
      ferry__seterr(&err, rc, "rank %d: out of memory for the plan", L->rank);
  }
  /* The permutation: rank 0 draws it, everyone recomputes and compares. */
  int64_t np = ep && !rc ? ep->npieces : 0;
  rc = agree(L->comm, L->rank, rc, &err);
  if (!rc) {
    ep->perm = malloc((size_t)(np ? np : 1) * sizeof *ep->perm);
    int64_t *mine = malloc((size_t)(np ? np : 1) * sizeof *mine);
    if (!ep->perm || !mine)
      rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
    else
      ferry__plan_permutation(&pp, np, mine);
    rc = agree(L->comm, L->rank, rc, &err);
    if (!rc) {
      if (L->rank == 0)
        memcpy(ep->perm, mine, (size_t)np * sizeof *mine);
      if (MPI_Bcast(ep->perm, (int)np, MPI_INT64_T, 0, L->comm) != MPI_SUCCESS)
        rc = ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Bcast failed",
                           L->rank);
      /* Inputs and plan: seed, epoch, options, manifest, world size, and the
       * permutation itself, compared as min == max over ranks. */
      uint64_t v[7], lo[7], hi[7];
      v[0] = ferry__fnv1a(FERRY__FNV_INIT, &epoch, sizeof epoch);
      v[1] = ferry__fnv1a(FERRY__FNV_INIT, &L->opts->seed, sizeof L->opts->seed);
      v[2] = L->m.hash;
      v[3] = (uint64_t)L->size;
      v[4] = ferry__fnv1a(FERRY__FNV_INIT, ep->perm, (size_t)np * 8);
      v[5] = ferry__fnv1a(FERRY__FNV_INIT, mine, (size_t)np * 8);
      v[6] = (uint64_t)np;
      static const char *const what[7] = {
          "the epoch number", "option 'seed'", "the dataset manifest",
          "the world size", "the broadcast plan",
          "the permutation each rank computes (generator differs)",
          "the number of pieces"};
      if (!rc &&
          (MPI_Allreduce(v, lo, 7, MPI_UINT64_T, MPI_MIN, L->comm) ||
           MPI_Allreduce(v, hi, 7, MPI_UINT64_T, MPI_MAX, L->comm)))
        rc = ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Allreduce failed",
                           L->rank);
      for (int i = 0; !rc && i < 7; i++)
        if (lo[i] != hi[i] || (i == 5 && v[4] != v[5]))
          rc = ferry__seterr(&err, FERRY_EMISMATCH,
                             "ranks disagree on %s in epoch %lld", what[i],
                             (long long)epoch);
      if (!rc) {
        ep->checksum = ferry__fnv1a(v[4], v, sizeof v);
        ep->plan.slots = L->spare_slots;
        ep->plan.slots_cap = L->spare_cap;
        L->spare_slots = NULL;
        if (ep->nsteps)
          rc = ferry__plan_resume(ep->pieces, np, ep->perm, &pp, ep->steps,
                                  ep->nsteps, L->rank, &ep->plan, NULL, &err);
        else
          rc = ferry__plan_build(ep->pieces, np, ep->perm, &pp, L->rank,
                                 &ep->plan, &err);
      }
      if (!rc && L->opts->io == FERRY__IO_COLLECTIVE)
        rc = plan_collective(ep, &pp, &err);
    }
    free(mine);
  }
  rc = agree(L->comm, L->rank, rc, &err);
  /* Equal batch counts, checked before the first batch. */
  if (!rc) {
    long long nb = ep->plan.num_batches, lo, hi;
    if (MPI_Allreduce(&nb, &lo, 1, MPI_LONG_LONG, MPI_MIN, L->comm) ||
        MPI_Allreduce(&nb, &hi, 1, MPI_LONG_LONG, MPI_MAX, L->comm))
      rc = ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Allreduce failed",
                         L->rank);
    else if (lo != hi)
      rc = ferry__seterr(&err, FERRY_EINTERNAL,
                         "batch counts differ across ranks (%lld to %lld)", lo,
                         hi);
  }
  /* Start the threads. */
  if (!rc) {
    const ferry__rank_plan *p = &ep->plan;
    ep->ext_buf = calloc((size_t)p->nextents + 1, sizeof *ep->ext_buf);
    ep->win_remaining = calloc((size_t)p->nwindows + 1, sizeof(int64_t));
    ep->workers = calloc((size_t)L->nthreads, sizeof *ep->workers);
    if (!ep->ext_buf || !ep->win_remaining || !ep->workers)
      rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
    for (int64_t w = 0; !rc && w < p->nwindows; w++)
      ep->win_remaining[w] = p->window_samples[w];
    if (!rc) {
      L->budget.read_bytes = read_bound(L, p);
      L->budget.plan_bytes =
          (size_t)p->slots_cap * sizeof(ferry__slot) +
          (size_t)p->nextents * (sizeof(ferry__extent) + sizeof(void *)) +
          (size_t)(p->num_batches + 1) * 2 * sizeof(int64_t);
      L->budget.total_bytes = L->budget.ring_bytes + L->budget.read_bytes +
                              L->budget.plan_bytes + L->budget.cache_bytes;
      pool_drain(L, L->budget.read_bytes);
      L->ep = ep;
      if (pthread_create(&ep->io_thread, NULL, io_main, ep) == 0)
        ep->io_started = 1;
      else
        rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: cannot start the I/O "
                           "thread", L->rank);
      for (int i = 0; !rc && i < L->nthreads; i++) {
        if (pthread_create(&ep->workers[i], NULL, worker_main, ep) != 0) {
          rc = ferry__seterr(&err, FERRY_ENOMEM,
                             "rank %d: cannot start worker thread %d", L->rank,
                             i);
          break;
        }
        ep->nworkers++;
      }
    }
  }
  rc = agree(L->comm, L->rank, rc, &err);
  if (rc) {
    if (L->ep)
      epoch_stop(L);
    else if (ep) {
      L->ep = ep; /* let epoch_stop free it */
      epoch_stop(L);
    }
    return fail_loader(L, &err);
  }
  return 0;
}

int ferry_set_epoch(ferry_loader *L, int64_t epoch) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_set_epoch: loader is NULL");
  return epoch_begin(L, epoch, NULL, 0, 0, 0);
}

int64_t ferry_num_batches(const ferry_loader *L) {
  if (!L)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  return L->ep->plan.num_batches;
}

static int device_status(epoch_state *ep, int64_t b, int64_t *through,
                         int *rc, ferry__err *err);
static int held_error(ferry_loader *L, int64_t b, ferry__err *err);

/*
 * What this rank knows about batch b, with ep->mu held: 1 when decided, with
 * *through the last batch it can vouch for (>= b), or *through = b - 1 and
 * *rc, *err the failure at b; 0 when it must wait.  Without a transform a
 * batch is good once its data is loaded, so the I/O thread's progress (a
 * window ahead of the consumer) certifies many batches at once.
 */
static int local_status(epoch_state *ep, int64_t b, int64_t *through, int *rc,
                        ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  ring_slot *s = &L->ring[b % L->nring];
  if (L->gpu)
    return device_status(ep, b, through, rc, err);
  while (ep->io_through + 1 < p->num_batches &&
         p->batch_need[ep->io_through + 1] <= ep->loaded)
    ep->io_through++;
  *rc = 0;
  *through = b - 1;
  if (s->state == SLOT_HELD) {
    *rc = ferry__seterr(err, FERRY_EINVAL,
                        "rank %d: all %lld prefetch batches are still held by "
                        "the caller; ferry_release one before ferry_next",
                        L->rank, (long long)L->nring);
    return 1;
  }
  if (L->opts->transform) {
    if (s->state != SLOT_READY || s->bidx != b) {
      if (ep->io_rc && p->batch_need[b] > ep->loaded) {
        *rc = ep->io_rc;
        *err = ep->io_err;
        return 1;
      }
      return 0;
    }
    for (int64_t k = 0; k < L->nring; k++) {
      ring_slot *t = &L->ring[(b + k) % L->nring];
      if (t->state != SLOT_READY || t->bidx != b + k)
        break;
      if (t->rc) {
        if (k == 0) {
          *rc = t->rc;
          *err = t->err;
        }
        break;
      }
      *through = b + k;
    }
    if (*through > ep->io_through)
      *through = ep->io_through;
    return 1;
  }
  if (ep->io_through >= b) {
    *through = ep->io_through;
    return 1;
  }
  if (ep->io_rc) {
    *rc = ep->io_rc;
    *err = ep->io_err;
    return 1;
  }
  return 0;
}

/* The misuse of holding every slot: the device slot of b, or with
 * keep_host the host slot of b, still holds a batch handed out earlier. */
static int held_error(ferry_loader *L, int64_t b, ferry__err *err) {
  ferry__dslot *d = &L->dring[b % L->ndring];
  ring_slot *s = &L->ring[b % L->nring];
  if (d->state == SLOT_HELD)
    return ferry__seterr(err, FERRY_EINVAL,
                         "rank %d: all %lld device batches (device_prefetch) "
                         "are still held by the caller; ferry_release one "
                         "before ferry_next",
                         L->rank, (long long)L->ndring);
  if (s->state == SLOT_PAIRED && s->bidx != b) {
    for (int64_t i = 0; i < L->ndring; i++)
      if (L->dring[i].host == (int)(s - L->ring) &&
          L->dring[i].state == SLOT_HELD)
        return ferry__seterr(err, FERRY_EINVAL,
                             "rank %d: all %lld prefetch batches are still "
                             "held by the caller (keep_host=yes); "
                             "ferry_release one before ferry_next",
                             L->rank, (long long)L->nring);
  }
  return 0;
}

/* local_status for device delivery: a copy can fail, so a batch is vouched
 * for once it is on the device (or its copy failed), as with a transform. */
static int device_status(epoch_state *ep, int64_t b, int64_t *through,
                         int *rc, ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  *rc = 0;
  *through = b - 1;
  if ((*rc = held_error(L, b, err)) != 0)
    return 1;
  ferry__dslot *d = &L->dring[b % L->ndring];
  if (d->state != SLOT_READY || d->bidx != b) {
    if (ep->io_rc && p->batch_need[b] > ep->loaded) {
      *rc = ep->io_rc;
      *err = ep->io_err;
      return 1;
    }
    return 0;
  }
  for (int64_t k = 0; k < L->ndring && b + k < p->num_batches; k++) {
    ferry__dslot *t = &L->dring[(b + k) % L->ndring];
    if (t->state != SLOT_READY || t->bidx != b + k)
      break;
    if (t->rc) {
      if (k == 0) {
        *rc = t->rc;
        *err = t->err;
      }
      break;
    }
    *through = b + k;
  }
  return 1;
}

/* Agree how far every rank can vouch for: MINLOC of the local "through".
 * If some rank cannot vouch for b it failed there, and its error goes to
 * every rank.  COLLECTIVE over the loader's communicator. */
static int certify(ferry_loader *L, epoch_state *ep, int64_t b,
                   int64_t through, int rc, ferry__err *err) {
  /* One all-reduce carries both the lowest (through, rank) pair, packed as
   * (through + 1) * size + rank, and the checkpoint flag (as -flag, MIN). */
  int64_t in[2] = {(through + 1) * L->size + L->rank,
                   L->ckpt_sig && ferry__signal_pending() ? -1 : 0},
          res[2];
  struct {
    int64_t through;
    int rank;
  } out;
  if (MPI_Allreduce(in, res, 2, MPI_INT64_T, MPI_MIN, L->comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Allreduce failed",
                         L->rank);
  out.through = res[0] / L->size - 1;
  out.rank = (int)(res[0] % L->size);
  if (res[1] < 0)
    L->ckpt_agreed = 1;
  ep->cert_time = now_s();
  ep->cert_batch = b;
  if (out.through >= b) {
    ep->certified = out.through;
    return 0;
  }
  /* out.rank failed at b: it broadcasts its code and message. */
  struct {
    int code;
    char msg[FERRY__MSG_MAX];
  } m;
  if (L->rank == out.rank) {
    m.code = rc ? rc : FERRY_EINTERNAL;
    if (strncmp(err->msg, "rank ", 5) == 0)
      snprintf(m.msg, sizeof m.msg, "%s", err->msg);
    else
      snprintf(m.msg, sizeof m.msg, "rank %d: %.1000s", L->rank, err->msg);
  }
  if (MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, out.rank, L->comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Bcast failed",
                         L->rank);
  return ferry__seterr(err, m.code, "%s", m.msg);
}

static void count_batch(ferry_loader *L, const ferry_batch *batch,
                        double waited) {
  pthread_mutex_lock(&L->stats_mu);
  L->stats.batches++;
  L->stats.samples += batch->size;
  L->stats.bytes += (int64_t)((size_t)batch->size * L->row_total);
  L->stats.wait_seconds += waited;
  pthread_mutex_unlock(&L->stats_mu);
}

/* The end of ferry_next, with ep->mu held (released here): hand out batch
 * b from its slot (host or device ring), or fail with the wait's error rc
 * or the slot's own result. */
static int hand_out(ferry_loader *L, epoch_state *ep, int64_t b, int *state,
                    int slot_rc, const ferry__err *slot_err, int rc,
                    ferry__err *err, ferry_batch *batch, double t0,
                    ferry_batch **out) {
  if (!rc && slot_rc) { /* cannot happen once certified: a broken invariant */
    rc = slot_rc;
    *err = *slot_err;
  }
  if (!rc) {
    *state = SLOT_HELD;
    ep->consumed = b + 1;
    pthread_cond_broadcast(&ep->cv_io);
  }
  pthread_mutex_unlock(&ep->mu);
  if (rc)
    return fail_loader(L, err);
  count_batch(L, batch, now_s() - t0);
  *out = batch;
  return 0;
}

/* ferry_next's hand-out of certified batch b with device delivery: the
 * same as on the host, with the device slot as the batch. */
static int next_device(ferry_loader *L, epoch_state *ep, int64_t b,
                       double t0, ferry_batch **out) {
  ring_slot *s = &L->ring[b % L->nring];
  ferry__dslot *d = &L->dring[b % L->ndring];
  ferry__err err = {0};
  int rc = 0;
  pthread_mutex_lock(&ep->mu);
  if (ep->next_assign == b && s->state == SLOT_FREE &&
      d->state == SLOT_FREE && d->expect == b && !ep->stop &&
      ep->loaded >= ep->plan.batch_need[b]) {
    ep->next_assign++;
    s->state = SLOT_BUSY;
    s->bidx = b;
    assemble_unlocked(ep, s, b);
  }
  while (!(d->state == SLOT_READY && d->bidx == b)) {
    if ((rc = held_error(L, b, &err)) != 0)
      break;
    pthread_cond_wait(&ep->cv_ready, &ep->mu);
  }
  return hand_out(L, ep, b, &d->state, d->rc, &d->err, rc, &err, &d->batch,
                  t0, out);
}

/* ferry_release of a device batch: order the buffers' reuse after the
 * consumer's stream, and with keep_host free the host slot once the copy
 * from it is done. */
static int release_device(ferry_loader *L, epoch_state *ep, ferry__dslot *d) {
  ferry__err err = {0};
  pthread_mutex_lock(&ep->mu);
  int held = d->state == SLOT_HELD;
  pthread_mutex_unlock(&ep->mu);
  if (!held)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: batch released twice");
  int rc = ferry__dslot_release(d, L->rank, &err);
  double secs = 0;
  if (d->host >= 0) {
    int r2 = ferry__dslot_sync(d, &secs, L->rank, &err);
    if (!rc)
      rc = r2;
  }
  pthread_mutex_lock(&L->stats_mu);
  L->stats.h2d_seconds += secs;
  pthread_mutex_unlock(&L->stats_mu);
  pthread_mutex_lock(&ep->mu);
  d->state = SLOT_FREE;
  d->expect = d->bidx + L->ndring;
  if (d->host >= 0)
    L->ring[d->host].state = SLOT_FREE;
  d->host = -1;
  pthread_cond_broadcast(&ep->cv_work);
  pthread_mutex_unlock(&ep->mu);
  return rc ? ferry__seterr(NULL, rc, "%s", err.msg) : 0;
}

int ferry_next(ferry_loader *L, ferry_batch **out) {
  if (!L || !out)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_next: NULL argument");
  *out = NULL;
  epoch_state *ep = L->ep;
  if (!ep) {
    snprintf(L->errmsg, sizeof L->errmsg,
             "rank %d: ferry_next called before ferry_set_epoch", L->rank);
    ferry__set_thread_error(L->errmsg);
    return FERRY_ESTATE;
  }
  if (ep->failed)
    return ep->failed;
  int64_t b = ep->consumed; /* only this thread writes it */
  if (b >= ep->plan.num_batches)
    return FERRY_END;
  ring_slot *s = &L->ring[b % L->nring];
  ferry__err err = {0};
  int rc = 0;
  double t0 = now_s();
  if (b > ep->certified) {
    int64_t through;
    pthread_mutex_lock(&ep->mu);
    while (!local_status(ep, b, &through, &rc, &err))
      pthread_cond_wait(&ep->cv_ready, &ep->mu);
    pthread_mutex_unlock(&ep->mu);
    /* With a checkpoint signal, certify no more than about a quarter of a
     * second of batches at a time, so a signal is agreed on soon after it
     * arrives; the minimum over ranks keeps the decision common. */
    if (L->ckpt_sig && through > b) {
      double dt = now_s() - ep->cert_time;
      int64_t done = b - ep->cert_batch, ahead = 0;
      if (b > 0 && dt > 0 && done > 0)
        ahead = (int64_t)(0.25 * (double)done / dt);
      if (through > b + ahead)
        through = b + ahead;
    }
    rc = certify(L, ep, b, through, rc, &err);
    if (rc) {
      ep->failed = rc;
      return fail_loader(L, &err);
    }
  }
  /* Certified: every rank will hand out batch b; only wait for assembly.
   * Rather than sleep while no worker has started b, the calling thread
   * assembles it itself: it would idle anyway, and on busy cores the
   * sleep/wake handoff per batch costs more than the copy. */
  if (L->gpu)
    return next_device(L, ep, b, t0, out);
  pthread_mutex_lock(&ep->mu);
  if (ep->next_assign == b && s->state == SLOT_FREE && !ep->stop &&
      ep->loaded >= ep->plan.batch_need[b]) {
    ep->next_assign++;
    s->state = SLOT_BUSY;
    s->bidx = b;
    assemble_unlocked(ep, s, b);
  }
  while (!(s->state == SLOT_READY && s->bidx == b)) {
    if (s->state == SLOT_HELD) { /* the caller's misuse, on this rank only */
      rc = ferry__seterr(&err, FERRY_EINVAL,
                         "rank %d: all %lld prefetch batches are still held "
                         "by the caller; ferry_release one before ferry_next",
                         L->rank, (long long)L->nring);
      break;
    }
    pthread_cond_wait(&ep->cv_ready, &ep->mu);
  }
  return hand_out(L, ep, b, &s->state, s->rc, &s->err, rc, &err, &s->batch,
                  t0, out);
}

int ferry_release(ferry_loader *L, ferry_batch *batch) {
  if (!L || !batch)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_release: NULL argument");
  ring_slot *s = NULL;
  epoch_state *ep = L->ep;
  for (int64_t i = 0; ep && i < L->ndring; i++)
    if (&L->dring[i].batch == batch)
      return release_device(L, ep, &L->dring[i]);
  for (int64_t i = 0; i < L->nring; i++)
    if (&L->ring[i].batch == batch)
      s = &L->ring[i];
  if (!s || !ep)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: not a batch of this loader's epoch");
  pthread_mutex_lock(&ep->mu);
  int held = s->state == SLOT_HELD;
  if (held) {
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&ep->cv_work);
  }
  pthread_mutex_unlock(&ep->mu);
  if (!held)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: batch released twice");
  return 0;
}

/* ---- Open and close ------------------------------------------------------ */

static void ring_free(ferry_loader *L) {
  for (int64_t i = 0; L->ring && i < L->nring; i++) {
    ring_slot *s = &L->ring[i];
    for (int v = 0; s->bufs && v < L->m.nvars; v++)
      if (L->gpu)
        ferry__gpu_host_free(s->bufs[v]);
      else
        free(s->bufs[v]);
    free(s->bufs);
    free(s->tensors);
    free(s->ids);
    free(s->padded);
  }
  free(L->ring);
  L->ring = NULL;
  for (int64_t i = 0; L->dring && i < L->ndring; i++)
    ferry__dslot_fini(&L->dring[i]);
  free(L->dring);
  L->dring = NULL;
  L->ndring = 0;
}

static int ring_alloc(ferry_loader *L, ferry__err *err) {
  int64_t B = L->opts->batch_size;
  L->nring = L->opts->prefetch;
  L->ring = calloc((size_t)L->nring, sizeof *L->ring);
  if (!L->ring)
    goto nomem;
  for (int64_t i = 0; i < L->nring; i++) {
    ring_slot *s = &L->ring[i];
    int nv = L->m.nvars;
    s->bufs = calloc((size_t)nv, sizeof *s->bufs);
    s->tensors = calloc((size_t)nv, sizeof *s->tensors);
    s->ids = malloc((size_t)B * sizeof *s->ids);
    s->padded = malloc((size_t)B);
    if (!s->bufs || !s->tensors || !s->ids || !s->padded)
      goto nomem;
    for (int v = 0; v < nv; v++) {
      const ferry__var *var = &L->m.vars[v];
      size_t bytes = (size_t)B * var->row_bytes;
      if (L->gpu) { /* pinned once here, never per batch */
        void *p = NULL;
        int rc = ferry__gpu_host_alloc(L->gpu, bytes, &p, err);
        s->bufs[v] = p;
        if (rc)
          return rc;
      } else if (!(s->bufs[v] = malloc(bytes ? bytes : 1))) {
        goto nomem;
      }
      ferry_tensor *t = &s->tensors[v];
      t->name = var->name;
      t->dtype = var->dtype;
      t->ndim = var->row_ndim + 1;
      for (int d = 0; d < var->row_ndim; d++)
        t->shape[d + 1] = var->row_shape[d];
      t->data = s->bufs[v];
      t->row_bytes = var->row_bytes;
    }
    s->batch.sample_ids = s->ids;
    s->batch.padded = s->padded;
    s->batch.nvars = nv;
    s->batch.vars = s->tensors;
  }
  if (L->gpu) {
    L->ndring = L->opts->device_prefetch;
    L->dring = calloc((size_t)L->ndring, sizeof *L->dring);
    if (!L->dring)
      goto nomem;
    for (int64_t i = 0; i < L->ndring; i++) {
      int rc = ferry__dslot_init(L->gpu, &L->dring[i], &L->m, B, L->rank,
                                 err);
      L->dring[i].expect = i;
      if (rc)
        return rc;
    }
    ferry__gpu_set_ring(L->gpu, L->dring, L->ndring);
  }
  return 0;
nomem:
  return ferry__seterr(err, FERRY_ENOMEM,
                       "rank %d: out of memory for %lld batches of %lld "
                       "samples (prefetch x batch_size x %zu bytes)",
                       L->rank, (long long)L->opts->prefetch, (long long)B,
                       L->row_total);
}

static void loader_free(ferry_loader *L) {
  if (!L)
    return;
  if (L->ckpt_sig)
    ferry__signal_release(L->ckpt_sig);
  if (L->gpu) {
    ferry__err ignore;
    ferry__gpu_sync(L->gpu, &ignore);
  }
  ring_free(L);
  ferry__gpu_close(L->gpu);
  L->gpu = NULL;
  ferry__big_free(L->spare_slots);
  pool_drain(L, 0);
  pthread_mutex_destroy(&L->pool_mu);
  free(L->chunks);
  free(L->var_prefix);
  ferry__manifest_free(&L->m);
  ferry_options_free(L->opts);
  if (L->io_comm != MPI_COMM_NULL)
    MPI_Comm_free(&L->io_comm);
  if (L->comm != MPI_COMM_NULL)
    MPI_Comm_free(&L->comm);
  pthread_mutex_destroy(&L->stats_mu);
  free(L);
}

/* Rank 0 builds the manifest; everyone receives it.  COLLECTIVE. */
static int share_manifest(ferry_loader *L, const char *dataset,
                          ferry__err *err) {
  int rc = 0;
  void *buf = NULL;
  size_t len = 0;
  if (L->rank == 0) {
    if (L->opts->manifest) {
      rc = ferry__manifest_load_json(L->opts->manifest, L->opts->vars, &L->m,
                                     err);
      /* A manifest left in FERRY_MANIFEST must not silently serve another
       * dataset's data. */
      if (!rc && strcmp(L->m.spec ? L->m.spec : "", dataset) != 0)
        rc = ferry__seterr(err, FERRY_EMISMATCH,
                           "manifest %s describes dataset '%s', not '%s' "
                           "(save a manifest for this dataset with ferry "
                           "info --save-manifest, or unset the manifest "
                           "option)",
                           L->opts->manifest, L->m.spec ? L->m.spec : "",
                           dataset);
    } else
      rc = ferry__manifest_scan(dataset, L->opts->vars, L->opts, &L->m,
                                err);
    if (!rc)
      rc = ferry__manifest_pack(&L->m, &buf, &len);
    if (rc && !err->msg[0])
      ferry__seterr(err, rc, "rank 0: cannot build the manifest of %s",
                    dataset);
  }
  rc = agree(L->comm, L->rank, rc, err);
  if (rc)
    return rc;
  unsigned long long n = len;
  if (MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, L->comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "MPI_Bcast of the manifest failed");
  if (L->rank != 0) {
    buf = malloc(n ? n : 1);
    if (!buf)
      rc = ferry__seterr(err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
  }
  rc = agree(L->comm, L->rank, rc, err);
  if (!rc) {
    /* MPI counts are int: send in pieces of at most 1 GiB. */
    for (size_t off = 0; off < n && !rc; off += (size_t)1 << 30) {
      size_t c = n - off < ((size_t)1 << 30) ? n - off : (size_t)1 << 30;
      if (MPI_Bcast((char *)buf + off, (int)c, MPI_BYTE, 0, L->comm) !=
          MPI_SUCCESS)
        rc = ferry__seterr(err, FERRY_EMPI, "MPI_Bcast of the manifest failed");
    }
    if (!rc && L->rank != 0)
      rc = ferry__manifest_unpack(buf, n, &L->m, err);
    rc = agree(L->comm, L->rank, rc, err);
  }
  free(buf);
  return rc;
}

/*
 * threads=0: the CPUs this rank may run on, shared with the other ranks of
 * its node when the mask is the whole machine (an unbound launch), minus one
 * for the I/O thread; at least 1, at most 8.  COLLECTIVE (the node split).
 */
static int resolve_threads(ferry_loader *L, ferry__err *err) {
  if (L->opts->threads > 0) {
    L->nthreads = (int)L->opts->threads;
    return 0;
  }
  MPI_Comm node;
  int local = 1;
  if (MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank,
                          MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Comm_split_type failed",
                         L->rank);
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  long cpus = online > 0 ? online : 1;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
#endif
  if (cpus >= online && local > 1) /* unbound: the node is shared */
    cpus = cpus / local > 0 ? cpus / local : 1;
  long n = cpus - 1;
  L->nthreads = (int)(n < 1 ? 1 : n > 8 ? 8 : n);
  return 0;
}

/* Every rank must pass the same dataset and options.  COLLECTIVE. */
static int check_same_inputs(ferry_loader *L, const char *dataset,
                             ferry__err *err) {
  int n = ferry__option_count() + 1;
  uint64_t *v = malloc(3 * (size_t)n * sizeof *v);
  if (!v)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory");
  uint64_t *lo = v + n, *hi = v + 2 * n;
  v[0] = ferry__fnv1a(FERRY__FNV_INIT, dataset, strlen(dataset));
  for (int i = 1; i < n; i++)
    v[i] = ferry__option_hash(L->opts, i - 1);
  int rc = 0;
  if (MPI_Allreduce(v, lo, n, MPI_UINT64_T, MPI_MIN, L->comm) ||
      MPI_Allreduce(v, hi, n, MPI_UINT64_T, MPI_MAX, L->comm))
    rc = ferry__seterr(err, FERRY_EMPI, "MPI_Allreduce failed");
  for (int i = 0; !rc && i < n; i++)
    if (lo[i] != hi[i]) {
      if (i == 0)
        rc = ferry__seterr(err, FERRY_EMISMATCH,
                           "ranks were given different datasets (rank %d has "
                           "'%s')",
                           L->rank, dataset);
      else
        rc = ferry__seterr(err, FERRY_EMISMATCH,
                           "ranks were given different values of option '%s'",
                           ferry_option_info_get(i - 1)->name);
    }
  free(v);
  /* The message must be the same everywhere: rank 0's wording wins. */
  return agree(L->comm, L->rank, rc, err);
}

/* Where batches go: every rank decides (cuda.c), then they agree.  With
 * device=cuda a rank without a GPU fails every rank; with device=auto,
 * batches go to the GPU only if every rank has one, and rank 0 says once
 * per process why they stay in host memory.  COLLECTIVE. */
static int open_device(ferry_loader *L, ferry__err *err) {
  MPI_Comm node;
  int rc = 0;
  if (MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank,
                          MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI,
                         "rank %d: MPI_Comm_split_type failed", L->rank);
  MPI_Comm_rank(node, &L->local_rank);
  MPI_Comm_size(node, &L->local_size);
  MPI_Comm_free(&node);
  rc = ferry__gpu_open(L->opts, L->rank, L->local_rank, &L->gpu, L->dev_how,
                       sizeof L->dev_how, err);
  rc = agree(L->comm, L->rank, rc, err);
  if (rc)
    return rc;
  int mine = L->gpu != NULL, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, L->comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "rank %d: MPI_Allreduce failed",
                         L->rank);
  if (mine && !all) {
    ferry__gpu_close(L->gpu);
    L->gpu = NULL;
    snprintf(L->dev_how, sizeof L->dev_how,
             "host memory: device=auto and some rank has no usable GPU");
  }
  static int said;
  if (!all && L->opts->device == FERRY__DEV_AUTO && L->rank == 0 && !said &&
      ferry__gpu_visible() >= 0) {
    said = 1;
    fprintf(stderr, "ferry: note: batches stay in %s\n", L->dev_how);
  }
  return 0;
}

int ferry_open(MPI_Comm comm, const char *dataset, const ferry_options *opts,
               ferry_loader **out) {
  if (!out)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_open: out is NULL");
  *out = NULL;
  int inited = 0, finalized = 0, level = 0;
  MPI_Initialized(&inited);
  if (inited)
    MPI_Finalized(&finalized);
  if (!inited || finalized)
    return ferry__seterr(NULL, FERRY_EMPI,
                         "ferry_open: MPI is not initialised (call "
                         "MPI_Init_thread with MPI_THREAD_MULTIPLE first)");
  ferry__err err = {0};
  ferry_loader *L = calloc(1, sizeof *L);
  if (!L)
    return ferry__seterr(NULL, FERRY_ENOMEM, "ferry_open: out of memory");
  L->comm = L->io_comm = MPI_COMM_NULL;
  pthread_mutex_init(&L->stats_mu, NULL);
  pthread_mutex_init(&L->pool_mu, NULL);
  if (MPI_Comm_dup(comm, &L->comm) != MPI_SUCCESS) {
    loader_free(L);
    return ferry__seterr(NULL, FERRY_EMPI, "ferry_open: MPI_Comm_dup failed");
  }
  if (MPI_Comm_dup(comm, &L->io_comm) != MPI_SUCCESS) {
    loader_free(L);
    return ferry__seterr(NULL, FERRY_EMPI, "ferry_open: MPI_Comm_dup failed");
  }
  MPI_Comm_rank(L->comm, &L->rank);
  MPI_Comm_size(L->comm, &L->size);

  int rc = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    rc = ferry__seterr(&err, FERRY_EMPI,
                       "ferry needs MPI_THREAD_MULTIPLE (its I/O thread calls "
                       "MPI-IO): initialise MPI with MPI_Init_thread");
  else if (!dataset || !*dataset)
    rc = ferry__seterr(&err, FERRY_EINVAL, "ferry_open: no dataset given");
  else if (opts)
    rc = ferry_options_copy(opts, &L->opts);
  else
    rc = ferry_options_create(&L->opts);
  if (rc && !err.msg[0])
    ferry__seterr(&err, rc, "%s", ferry__thread_error());
  rc = agree(L->comm, L->rank, rc, &err);
  if (!rc)
    rc = check_same_inputs(L, dataset, &err);
  if (!rc)
    rc = share_manifest(L, dataset, &err);
  if (!rc) {
    L->be = ferry__backend_find(L->m.backend);
    L->var_prefix = calloc((size_t)L->m.nvars + 1, sizeof *L->var_prefix);
    if (!L->be)
      rc = ferry__seterr(&err, FERRY_ENOTSUP,
                         "rank %d: backend '%s' is not built in", L->rank,
                         L->m.backend);
    else if (!L->var_prefix)
      rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory",
                         L->rank);
    for (int v = 0; !rc && v < L->m.nvars; v++) {
      L->var_prefix[v] = L->row_total;
      L->row_total += L->m.vars[v].row_bytes;
    }
    if (!rc && L->opts->io == FERRY__IO_COLLECTIVE &&
        !(L->be->caps & FERRY__CAP_COLLECTIVE))
      rc = ferry__seterr(&err, FERRY_ENOTSUP,
                         "option 'io': backend '%s' has no collective reads",
                         L->be->name);
    if (!rc)
      rc = open_device(L, &err);
    if (!rc)
      rc = resolve_threads(L, &err);
    if (!rc) {
      L->chunk_samples = L->opts->chunk_samples;
      if (L->chunk_samples == 0)
        L->chunk_samples = ferry__auto_chunk_samples(&L->m, L->row_total);
      rc = ferry__chunks_make(&L->m, L->chunk_samples, &L->chunks,
                              &L->nchunks);
      if (rc)
        ferry__seterr(&err, rc, "rank %d: out of memory for chunks", L->rank);
    }
    if (!rc) {
      L->budget.batch_bytes = (size_t)L->opts->batch_size * L->row_total;
      L->budget.ring_bytes = L->budget.batch_bytes * (size_t)L->opts->prefetch;
      /* Until an epoch is planned, estimate the reads: the lookahead plus
       * two shuffle windows. */
      int64_t k = L->opts->shuffle_buffer > 0 ? L->opts->shuffle_buffer : 1;
      L->budget.read_bytes =
          ((size_t)(L->opts->prefetch + 2) * (size_t)L->opts->batch_size +
           2 * (size_t)k * (size_t)L->chunk_samples) *
          L->row_total;
      L->budget.cache_bytes = cache_bound(L);
      L->budget.total_bytes = L->budget.ring_bytes + L->budget.read_bytes +
                              L->budget.cache_bytes;
      if (L->gpu) {
        L->budget.pinned_bytes = L->budget.ring_bytes;
        L->budget.device_bytes =
            (size_t)L->opts->device_prefetch * L->budget.batch_bytes;
      }
      rc = ring_alloc(L, &err);
    }
    if (!rc && L->opts->checkpoint_signal != FERRY__SIG_NONE) {
      static const int signo[] = {0,       SIGUSR1, SIGUSR2, SIGTERM,
                                  SIGINT,  SIGHUP,  SIGXCPU};
      int sig = signo[L->opts->checkpoint_signal];
      rc = ferry__signal_install(sig, &err);
      if (!rc)
        L->ckpt_sig = sig;
    }
    rc = agree(L->comm, L->rank, rc, &err);
  }
  if (rc) {
    ferry__set_thread_error(err.msg);
    loader_free(L);
    ferry__set_thread_error(err.msg);
    return rc;
  }
  *out = L;
  return 0;
}

int ferry_close(ferry_loader *L) {
  if (!L)
    return 0;
  int rc = epoch_stop(L);
  loader_free(L);
  return rc;
}

/* ---- Inspection ----------------------------------------------------------- */

const char *ferry_last_error(const ferry_loader *L) {
  return L ? L->errmsg : ferry__thread_error();
}

int ferry_num_vars(const ferry_loader *L) { return L ? L->m.nvars : 0; }

int ferry_var_info_get(const ferry_loader *L, int i, ferry_var_info *out) {
  if (!L || !out || i < 0 || i >= L->m.nvars)
    return FERRY_EINVAL;
  const ferry__var *v = &L->m.vars[i];
  memset(out, 0, sizeof *out);
  out->name = v->name;
  out->dtype = v->dtype;
  out->swapped = v->swapped;
  out->ndim = v->row_ndim + 1;
  out->shape[0] = L->m.num_samples;
  for (int d = 0; d < v->row_ndim && d + 1 < FERRY_MAX_DIMS; d++)
    out->shape[d + 1] = v->row_shape[d];
  out->row_bytes = v->row_bytes;
  out->chunk_rows = v->chunk_rows;
  out->cache_bytes = v->cache_bytes;
  out->storage = v->storage;
  return 0;
}

const char *ferry_dataset_notes(const ferry_loader *L) {
  return L ? L->m.notes : NULL;
}

int64_t ferry_num_samples(const ferry_loader *L) {
  return L ? L->m.num_samples : 0;
}
int64_t ferry_num_parts(const ferry_loader *L) { return L ? L->m.nparts : 0; }
const char *ferry_part_path(const ferry_loader *L, int64_t part, int var) {
  if (!L || part < 0 || part >= L->m.nparts || var < 0 || var >= L->m.nvars)
    return NULL;
  return L->m.parts[part].paths[var];
}
const char *ferry_backend(const ferry_loader *L) {
  return L ? L->m.backend : NULL;
}
int64_t ferry_num_chunks(const ferry_loader *L) { return L ? L->nchunks : 0; }

int ferry_chunk_info_get(const ferry_loader *L, int64_t id,
                         ferry_chunk_info *out) {
  if (!L || !out || id < 0 || id >= L->nchunks)
    return FERRY_EINVAL;
  const ferry__chunk *c = &L->chunks[id];
  *out = (ferry_chunk_info){id, c->part, c->global_first, c->count};
  return 0;
}

int ferry_epoch_info_get(const ferry_loader *L, ferry_epoch_info *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  const ferry__rank_plan *p = &L->ep->plan;
  *out = (ferry_epoch_info){L->ep->epoch,  p->num_batches, p->epoch_samples,
                            p->nslots,     p->padded,      p->dropped,
                            p->nextents,   L->ep->checksum,
                            L->ep->index_base};
  return 0;
}

/* The chunk holding global sample g: chunks are sorted by global_first. */
static int64_t chunk_of(const ferry_loader *L, int64_t g) {
  int64_t lo = 0, hi = L->nchunks - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (L->chunks[mid].global_first <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int ferry_epoch_chunks(const ferry_loader *L, ferry_chunk_info *out,
                       int64_t max, int64_t *count) {
  if (!L || !count)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  const ferry__rank_plan *p = &L->ep->plan;
  *count = p->nextents;
  for (int64_t e = 0; out && e < p->nextents && e < max; e++) {
    const ferry__extent *x = &p->extents[e];
    out[e] = (ferry_chunk_info){chunk_of(L, x->global_first), x->part,
                                x->global_first, x->count};
  }
  return 0;
}

int ferry_memory_budget_get(const ferry_loader *L, ferry_memory_budget *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  *out = L->budget;
  return 0;
}

int ferry_stats_get(const ferry_loader *L, ferry_stats *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  pthread_mutex_lock((pthread_mutex_t *)&L->stats_mu);
  *out = L->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&L->stats_mu);
  return 0;
}

int ferry_manifest_save(const ferry_loader *L, const char *path) {
  if (!L || !path)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_manifest_save: NULL");
  ferry__err err = {0};
  int rc = ferry__manifest_save_json(&L->m, path, &err);
  if (rc)
    snprintf(((ferry_loader *)L)->errmsg, sizeof L->errmsg, "%s", err.msg);
  return rc;
}

int ferry_rank(const ferry_loader *L) { return L ? L->rank : -1; }
int ferry_world_size(const ferry_loader *L) { return L ? L->size : 0; }

/* ---- Checkpoint and resume ---------------------------------------------- */

int ferry_checkpoint_requested(const ferry_loader *L) {
  return L ? L->ckpt_agreed : 0;
}

/* The plan-shaping options as a state records them (chunk_samples
 * resolved, so that "auto" cannot silently mean another size later). */
static int state_options(const ferry_loader *L, ferry__state *st) {
  const char *const *names = ferry__state_plan_options();
  int n = 0;
  while (names[n])
    n++;
  st->opt_name = calloc((size_t)n, sizeof *st->opt_name);
  st->opt_value = calloc((size_t)n, sizeof *st->opt_value);
  if (!st->opt_name || !st->opt_value)
    return FERRY_ENOMEM;
  for (int i = 0; i < n; i++) {
    char buf[4096];
    if (strcmp(names[i], "chunk_samples") == 0)
      snprintf(buf, sizeof buf, "%lld", (long long)L->chunk_samples);
    else if (ferry_options_get(L->opts, names[i], buf, sizeof buf) != 0)
      return FERRY_EINTERNAL;
    st->opt_name[i] = strdup(names[i]);
    st->opt_value[i] = strdup(buf);
    st->nopts = i + 1;
    if (!st->opt_name[i] || !st->opt_value[i])
      return FERRY_ENOMEM;
  }
  return 0;
}

int ferry_state_save(ferry_loader *L, const char *path) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_save: loader is NULL");
  ferry__err err = {0};
  epoch_state *ep = L->ep;
  int rc = 0;
  if (!path || !*path)
    rc = ferry__seterr(&err, FERRY_EINVAL, "rank %d: ferry_state_save: no path",
                       L->rank);
  else if (!ep)
    rc = ferry__seterr(&err, FERRY_ESTATE,
                       "ferry_state_save before ferry_set_epoch or "
                       "ferry_state_load: there is no position to save");
  else if (ep->failed)
    rc = ferry__seterr(&err, FERRY_ESTATE,
                       "ferry_state_save after the epoch failed: the failed "
                       "batch was not served; save before it or restart the "
                       "epoch");
  rc = agree(L->comm, L->rank, rc, &err);
  long long pos = 0, lo = 0, hi = 0, served = 0, total = 0;
  if (!rc) {
    const ferry__rank_plan *p = &ep->plan;
    pos = ep->consumed;
    for (int64_t i = 0; i < p->batch_start[ep->consumed]; i++)
      served += !p->slots[i].padded;
    if (MPI_Allreduce(&pos, &lo, 1, MPI_LONG_LONG, MPI_MIN, L->comm) ||
        MPI_Allreduce(&pos, &hi, 1, MPI_LONG_LONG, MPI_MAX, L->comm) ||
        MPI_Allreduce(&served, &total, 1, MPI_LONG_LONG, MPI_SUM, L->comm))
      rc = ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Allreduce failed",
                         L->rank);
    else if (lo != hi)
      rc = ferry__seterr(&err, FERRY_EMISMATCH,
                         "ranks called ferry_state_save after different "
                         "numbers of batches (%lld to %lld in epoch %lld): "
                         "save at the same point on every rank",
                         lo, hi, (long long)ep->epoch);
  }
  /* Rank 0 writes it, after every rank reached this point (the agreement
   * above is the barrier). */
  if (!rc && L->rank == 0) {
    ferry__state st;
    memset(&st, 0, sizeof st);
    char *buf = NULL;
    size_t len = 0;
    st.dataset = L->m.spec;
    st.dataset_hash = L->m.hash;
    st.num_samples = L->m.num_samples;
    st.epoch = ep->epoch;
    st.world_size = L->size;
    st.batches = ep->index_base + ep->consumed;
    st.samples_served = ep->samples_before + total;
    st.steps = malloc(((size_t)ep->nsteps + 1) * sizeof *st.steps);
    rc = st.steps ? state_options(L, &st) : FERRY_ENOMEM;
    if (!rc) {
      memcpy(st.steps, ep->steps, (size_t)ep->nsteps * sizeof *st.steps);
      st.nsteps = ep->nsteps;
      if (st.nsteps && st.steps[st.nsteps - 1].world_size == L->size)
        st.steps[st.nsteps - 1].batches += ep->consumed;
      else
        st.steps[st.nsteps++] = (ferry__resume_step){L->size, ep->consumed};
      rc = ferry__state_encode(&st, &buf, &len, &err);
    } else
      ferry__seterr(&err, rc, "rank 0: out of memory for the state");
    if (!rc)
      rc = ferry__state_write_file(path, buf, len, &err);
    free(buf);
    st.dataset = NULL; /* borrowed */
    ferry__state_free(&st);
  }
  rc = agree(L->comm, L->rank, rc, &err);
  if (rc)
    return fail_loader(L, &err);
  L->ckpt_agreed = 0; /* the request is answered */
  ferry__signal_clear();
  return 0;
}

/* Does the decoded state belong to this loader?  The same answer on every
 * rank: the bytes and the loader's inputs are the same everywhere. */
static int state_check(const ferry_loader *L, const ferry__state *st,
                       const char *path, ferry__err *err) {
  if (st->dataset_hash != L->m.hash)
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "state file %s was saved for dataset '%s' (%lld "
                         "samples, manifest hash %016llx); this loader reads "
                         "'%s' (%lld samples, manifest hash %016llx)",
                         path, st->dataset, (long long)st->num_samples,
                         (unsigned long long)st->dataset_hash, L->m.spec,
                         (long long)L->m.num_samples,
                         (unsigned long long)L->m.hash);
  ferry__state mine;
  memset(&mine, 0, sizeof mine);
  int rc = state_options(L, &mine);
  if (rc) {
    ferry__state_free(&mine);
    return ferry__seterr(err, rc, "rank %d: out of memory", L->rank);
  }
  for (int i = 0; !rc && i < mine.nopts; i++) {
    const char *saved = NULL;
    for (int j = 0; j < st->nopts; j++)
      if (strcmp(st->opt_name[j], mine.opt_name[i]) == 0)
        saved = st->opt_value[j];
    if (!saved)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s does not record option '%s'", path,
                         mine.opt_name[i]);
    else if (strcmp(saved, mine.opt_value[i]) != 0)
      rc = ferry__seterr(err, FERRY_EMISMATCH,
                         "state file %s was saved with option '%s' = '%s', "
                         "this loader has '%s'; a resume must keep every "
                         "option that shapes the plan (batch_size, seed, "
                         "shuffle, block_size, shuffle_buffer, partition, "
                         "tail, chunk_samples, vars, max_chunks, fraction); "
                         "the number of ranks may change",
                         path, mine.opt_name[i], saved, mine.opt_value[i]);
  }
  ferry__state_free(&mine);
  return rc;
}

int ferry_state_load(ferry_loader *L, const char *path) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_load: loader is NULL");
  ferry__err err = {0};
  int rc = 0;
  char *buf = NULL;
  size_t len = 0;
  ferry__state st;
  memset(&st, 0, sizeof st);
  if (!path || !*path)
    rc = ferry__seterr(&err, FERRY_EINVAL, "rank %d: ferry_state_load: no path",
                       L->rank);
  else if (L->rank == 0)
    rc = ferry__state_read_file(path, &buf, &len, &err);
  rc = agree(L->comm, L->rank, rc, &err);
  if (!rc) {
    unsigned long long n = len;
    if (MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, L->comm) != MPI_SUCCESS)
      rc =
          ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Bcast failed", L->rank);
    else if (L->rank != 0 && !(buf = malloc(n ? n : 1)))
      rc = ferry__seterr(&err, FERRY_ENOMEM, "rank %d: out of memory", L->rank);
    len = n;
    rc = agree(L->comm, L->rank, rc, &err);
    if (!rc && MPI_Bcast(buf, (int)len, MPI_BYTE, 0, L->comm) != MPI_SUCCESS)
      rc =
          ferry__seterr(&err, FERRY_EMPI, "rank %d: MPI_Bcast failed", L->rank);
    if (!rc)
      rc = ferry__state_decode(buf, len, path, &st, &err);
    if (!rc)
      rc = state_check(L, &st, path, &err);
    rc = agree(L->comm, L->rank, rc, &err);
  }
  free(buf);
  if (rc) {
    ferry__state_free(&st);
    epoch_stop(L); /* collective, like the calls above */
    return fail_loader(L, &err);
  }
  rc = epoch_begin(L, st.epoch, st.steps, st.nsteps, st.batches,
                   st.samples_served);
  if (rc) {
    char msg[FERRY__MSG_MAX];
    snprintf(msg, sizeof msg, "state file %s: %.900s", path, L->errmsg);
    snprintf(L->errmsg, sizeof L->errmsg, "%s", msg);
    ferry__set_thread_error(L->errmsg);
  }
  ferry__state_free(&st);
  return rc;
}

/* ---- GPU delivery ---------------------------------------------------------- */

int ferry_attach_nccl(ferry_loader *L, void *comm) {
  if (!L || !comm)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_attach_nccl: NULL argument");
  ferry__err err = {0};
  int rc;
  if (!L->gpu)
    rc = ferry__seterr(&err, FERRY_ENOTSUP,
                       "rank %d: ferry_attach_nccl: batches are delivered in "
                       "%s, not in device memory",
                       L->rank, L->dev_how);
  else
    rc = ferry__gpu_nccl_attach(L->gpu, comm, &err);
  if (rc) {
    snprintf(L->errmsg, sizeof L->errmsg, "%s", err.msg);
    ferry__set_thread_error(err.msg);
  }
  return rc;
}

int ferry_detach_nccl(ferry_loader *L) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_detach_nccl: NULL");
  ferry__err err = {0};
  int rc = L->gpu ? ferry__gpu_nccl_detach(L->gpu, &err) : 0;
  if (rc) {
    snprintf(L->errmsg, sizeof L->errmsg, "%s", err.msg);
    ferry__set_thread_error(err.msg);
  }
  return rc;
}

int ferry_device_info_get(const ferry_loader *L, ferry_device_info *out) {
  if (!L || !out)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_device_info_get: NULL argument");
  memset(out, 0, sizeof *out);
  ferry__gpu_info(L->gpu, out);
  out->visible = ferry__gpu_visible();
  out->local_rank = L->local_rank;
  out->local_size = L->local_size;
  out->how = L->dev_how;
  return 0;
}
