/*
 * budget.c - the memory budget of a loader (L->budget, ferry bench's
 * report), computed in one place: estimated at ferry_open, exact at each
 * ferry_set_epoch once the plan is known (docs/design/memory.md).  Its own
 * file because open.c and epoch.c both compute it: in epoch.c it made the
 * two files call each other (issue 24).
 */
#include "config.h"
#include "loader/loader.h"

#include <stdlib.h>

/* Exact bound of the extent bytes resident at once under the admission rule:
 * at consumption c, windows with admit <= c + prefetch whose last batch >= c.
 */
/* The backend's decode caches (HDF5 chunk caches): every variable's
 * cache_bytes for each file it may keep open at once. */
size_t ferry__cache_bound(const ferry_loader *L) {
  int64_t files = L->opts->max_open_files > 0 ? L->opts->max_open_files : 64;
  if (files > L->m.nparts)
    files = L->m.nparts;
  size_t per_file = 0;
  for (int v = 0; v < L->m.nvars; v++)
    per_file += L->m.vars[v].cache_bytes;
  return per_file * (size_t)files;
}

/* The most rows resident at once: each window's samples plus extra rows
 * (shuffle=global: its receive staging, in the same buffer).  Window w is
 * resident from consumption from(w) (its admission less the lookahead)
 * through its last batch; both are non-decreasing in w, so the windows
 * still resident when w is admitted are the latest ones admitted before it,
 * and two cursors find the most at once in O(windows) time and no memory
 * (an array per batch used to be allocated here, and its failure went
 * unreported). */
static size_t read_bound_x(const ferry_loader *L, const ferry__rank_plan *p,
                           int64_t extra) {
  int64_t nb = p->num_batches, la = L->opts->prefetch;
  if (nb == 0)
    return 0;
  double run = 0, best = 0;
  int64_t e = 0, epos = 0;
  for (int64_t w = 0; w < p->nwindows; w++) {
    int64_t from =
        ferry__admit_of(p, w) - la < 0 ? 0 : ferry__admit_of(p, w) - la;
    for (; e < w; e++) { /* windows whose last batch is before from */
      int64_t last = ferry__plan_batch_of(p, epos + p->window_samples[e] - 1);
      if (last >= nb)
        last = nb - 1;
      if (last + 1 > from)
        break;
      run -= (double)(p->window_samples[e] + extra);
      epos += p->window_samples[e];
    }
    run += (double)(p->window_samples[w] + extra);
    if (run > best)
      best = run;
  }
  return (size_t)best;
}

/* The most samples resident at once (their rows and their slots). */
static size_t read_bound(const ferry_loader *L, const ferry__rank_plan *p) {
  return read_bound_x(L, p, 0);
}
/*
 * The memory budget, computed in one place: at open (ep NULL) the reads are
 * estimated as the lookahead plus two shuffle windows; once an epoch is
 * planned (ep) they are the exact bound of read_bound.  The plan's memory
 * (docs/design/plan.md, "The plan's memory"): the permutation (8 bytes per
 * piece), the pieces' and chunks' indexes (O(parts), or 8-16 bytes per kept
 * chunk with max_chunks/fraction), the rank's extents and runs (O(pieces of
 * the rank)), the pipeline's per-extent pointers, with io=collective every
 * rank's extents; a sampling plan also stores the slots (sample order) of
 * the windows alive at once -- the same count of samples as the reads --
 * while a plan with runs computes its order per batch (plan/order.c): no
 * per-sample array at all (issue 30).
 */
static size_t plan_static_bytes(const ferry_loader *L, const epoch_state *ep) {
  const ferry__rank_plan *p = &ep->plan;
  size_t bytes =
      ferry__plan_bytes(p) + (size_t)ep->pieces.n * sizeof(int64_t) +
      ep->pieces.bytes + (size_t)(L->m.nparts + 1) * sizeof(int64_t) +
      (size_t)p->nextents * (size_t)(1 + L->m.nvars) * sizeof(void *) +
      (size_t)p->nwindows * (sizeof(int64_t) + sizeof(void *));
  for (int r = 0; ep->all_reads && r < L->size; r++)
    bytes += (size_t)(2 + 2 * ep->all_reads[r].nwindows + 1 +
                      2 * ep->all_reads[r].first[ep->all_reads[r].nwindows]) *
             sizeof(int64_t);
  return bytes;
}

void ferry__budget_compute(ferry_loader *L, const epoch_state *ep) {
  ferry_memory_budget *b = &L->budget;
  /* B * row_total; with ragged variables, at open ragged.c's bound for
   * every epoch, once an epoch is planned its slots' (its largest batch) */
  b->batch_bytes = ep ? L->slot_bytes : L->batch_bytes;
  b->ring_bytes = b->batch_bytes * (size_t)L->opts->prefetch;
  b->cache_bytes = ferry__cache_bound(L);
  if (ep && ep->glob) {
    /* shuffle=global: the windows' buffers alive at once (read_bound, the
     * same admission rule), each its read items and its receive staging
     * (served from there: at most its served samples plus the most
     * received in a window), plus the send staging of the window being
     * exchanged, and with several variables the rows turned into columns
     * (docs/design/global-shuffle.md) */
    ferry__global_memory gm;
    ferry__global_memory_of(ep->glob, L->row_total, &gm);
    size_t samples = read_bound(L, &ep->plan);
    size_t rows = read_bound_x(L, &ep->plan, gm.recv_rows);
    b->read_bytes = rows * L->row_total + gm.send +
                    (L->m.nvars > 1 ? gm.read + gm.recv : 0);
    b->plan_bytes = plan_static_bytes(L, ep) + samples * sizeof(ferry__slot) +
                    2 * gm.tables +
                    (size_t)ep->pieces.n * (sizeof(ferry__chunk) + 8);
  } else if (ep) {
    size_t samples = read_bound(L, &ep->plan);
    b->read_bytes = samples * L->sample_bound; /* row_total unless ragged */
    b->plan_bytes = plan_static_bytes(L, ep);
    if (ep->draw) /* the windows' draws as slots (a plan with runs computes
                     its slots per batch: nothing per sample, issue 30), its
                     tables, and a window's draws while it is made */
      b->plan_bytes +=
          samples * sizeof(ferry__slot) + ep->draw->bytes +
          (size_t)(ep->plan.draw_nbw * ep->plan.draw_gb) * 3 * sizeof(int64_t);
  } else {
    /* The windows alive at once (read_bound's exact count, for windows of
     * k chunks): those meeting the batches consumed next and the
     * lookahead's, (la + 1) * B samples, plus the one read ahead --
     * ceil((la + 1) * B / W) + 2 windows of W samples, never more than a
     * rank's share.  (The old estimate, la + 2 batches and two windows,
     * fell 15% short with windows smaller than the lookahead.) */
    size_t P = (size_t)L->size, B = (size_t)L->opts->batch_size;
    size_t share = ((size_t)L->m.num_samples + P - 1) / P + B;
    size_t k =
        L->opts->shuffle_buffer > 0 ? (size_t)L->opts->shuffle_buffer : 1;
    size_t W = k * (size_t)L->chunk_samples,
           la1 = (size_t)L->opts->prefetch + 1;
    size_t rows = W ? ((la1 * B + W - 1) / W + 2) * W : share;
    if (rows > share)
      rows = share;
    if (L->sampling) {
      /* a draw window's share (its draws, a block of rows each at the
       * batches' cuts), two windows alive and the lookahead's batches */
      size_t blk = (size_t)L->draw_block, GB = B * P;
      size_t dw = L->opts->draw_window ? (size_t)L->opts->draw_window
                                       : 16 * blk * (k > 1 ? k : 1);
      size_t nbw = dw / GB > 1 ? dw / GB : 1;
      size_t N = (size_t)L->m.num_samples;
      rows = 2 * (nbw * B + 2 * nbw * blk);
      rows = (rows < 2 * N ? rows : 2 * N) + la1 * B;
    }
    b->read_bytes = rows * L->sample_bound;
    if (L->opts->shuffle == FERRY__SHUFFLE_GLOBAL) {
      /* and each window's receive staging (Q W rows, served from there)
       * and the send staging of the one being exchanged (Q W rows) */
      size_t xw = W < share ? W : share;
      b->read_bytes +=
          (size_t)(L->opts->exchange * (double)(rows + xw)) * L->row_total;
    }
    /* Before an epoch is planned, the plan for an even share: the
     * permutation (a piece per chunk, or per block), an extent, a run and
     * the pipeline's pointers per piece of the rank, the slots of the
     * windows alive at once -- not 0 (issue 11: ferry info said "plan 0 B"
     * for a plan of 32 bytes per sample). */
    size_t pieces = (size_t)L->nchunks;
    if (L->opts->shuffle == FERRY__SHUFFLE_BLOCK && L->opts->block_size > 0)
      pieces *= ((size_t)L->chunk_samples + (size_t)L->opts->block_size - 1) /
                (size_t)L->opts->block_size;
    size_t mine = (pieces + P - 1) / P + 2, windows = mine / k + 2;
    b->plan_bytes = pieces * sizeof(int64_t) +
                    (size_t)(L->m.nparts + 1) * sizeof(int64_t) +
                    mine * (sizeof(ferry__extent) + sizeof(ferry__seg) +
                            (size_t)(1 + L->m.nvars) * sizeof(void *)) +
                    windows * (6 * sizeof(int64_t) + sizeof(void *));
    /* the windows' stored orders: a sampling plan's and shuffle=global's
     * only; a plan with runs computes its order (plan/order.c, issue 30:
     * 32 B per sample of the windows alive was 1.5 GiB for chunks of 4 Mi
     * one-byte samples) */
    if (L->sampling || L->opts->shuffle == FERRY__SHUFFLE_GLOBAL)
      b->plan_bytes += rows * sizeof(ferry__slot);
  }
  b->plan_bytes += (size_t)L->wts.n * sizeof(float); /* the weights */
  b->index_bytes = 0; /* mapped offsets are the page cache's (roffmap.c) */
  for (int v = 0; !L->m.roff_map && v < L->m.nvars; v++)
    if (L->m.vars[v].ragged)
      b->index_bytes +=
          ((size_t)L->m.num_samples + (size_t)L->m.nparts) * sizeof(int64_t);
  b->total_bytes = b->ring_bytes + b->read_bytes + b->plan_bytes +
                   b->cache_bytes + b->index_bytes;
  b->pinned_bytes = L->gpu || L->opts->pin_memory ? b->ring_bytes : 0;
  if (L->gpu) {
    /* with sparse=dense made on the device, a slot stages the CSR rows
     * of the host batch and holds the dense rows too (decision 0056) */
    b->device_bytes = (size_t)L->opts->device_prefetch *
                      (b->batch_bytes + ferry__sparse_device_extra(L));
  }
  /* Held batches get slots beyond the rings (slots.c): a bound of its own,
   * on top of total_bytes (or device_bytes), spent only while the caller
   * holds batches -- in the total it would hide the bound of a loop that
   * holds none behind held_memory's default (docs/design/loader.md). */
  b->held_bytes = (size_t)ferry__held_max(L, b->batch_bytes) * b->batch_bytes;
}
