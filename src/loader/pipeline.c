/*
 * pipeline.c - the per-rank pipeline of an epoch: the I/O thread
 * (independent and collective rounds; shuffle=global's loop is
 * global_io.c) and the worker threads that assemble batches into the ring
 * and copy them to the GPU; the read-buffer pool and the hand-offs both
 * I/O loops use are iostage.c.  Nothing here is collective on the loader's
 * communicator except the I/O thread's own collective reads on io_comm.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "loader/loader.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- The I/O thread ---------------------------------------------------- */

/* Give window w's buffers back to the pool.  Called with ep->mu held (lock
 * order: ep->mu, then pool_mu); it allocates nothing, so it cannot fail. */
static void free_window(epoch_state *ep, int64_t w) {
  const ferry__rank_plan *p = &ep->plan;
  for (int64_t e = p->window_first_extent[w]; e < p->window_first_extent[w + 1];
       e++) {
    if (ep->ext_buf[e]) {
      ferry__buf_put(ep->L, ep->ext_buf[e]);
      ep->ext_buf[e] = NULL;
    }
    for (int v = 0; ep->ext_map && v < ep->L->m.nvars; v++)
      ferry__unmap(&ep->ext_map[e * ep->L->m.nvars + v]);
  }
  free(ep->win_slots[w]);
  ep->win_slots[w] = NULL;
}

/* Window w's slots (its served order), made when the I/O thread admits the
 * window, before any of its extents is published: a worker that sees a
 * batch's data loaded sees the slots of every window the batch touches.
 * I/O thread only. */
static int make_window_slots(epoch_state *ep, int64_t w, ferry__err *err) {
  const ferry__rank_plan *p = &ep->plan;
  if (ferry__plan_slots_computed(p))
    return 0; /* the workers compute each batch's slots (plan/order.c) */
  int64_t n = p->window_samples[w];
  size_t bytes = (size_t)(n ? n : 1) * sizeof(ferry__slot);
  ferry__slot *s = malloc(bytes);
  if (!s)
    return ferry__oom(err, ep->L->rank, bytes,
                      "dataset %s: the sample order of window %lld (%lld "
                      "samples)",
                      ep->L->m.spec, (long long)w, (long long)n);
  if (ferry__plan_window_slots(p, w, s)) {
    free(s);
    /* at most the window's samples again: the order of one of the old
     * windows it was cut from, after a resume over another world size */
    return ferry__oom(err, ep->L->rank, bytes,
                      "dataset %s: the sample order of window %lld (the "
                      "order of the windows it was cut from, after a resume "
                      "over another world size)",
                      ep->L->m.spec, (long long)w);
  }
  pthread_mutex_lock(&ep->mu);
  ep->win_slots[w] = s;
  pthread_mutex_unlock(&ep->mu);
  return 0;
}

/* Whole-variable mappings are populated in regions of 2 MiB (a huge page),
 * each once per loader: MADV_POPULATE_READ over a range already mapped
 * still walks its page tables, a few percent of an epoch from page cache. */
enum { READY_SHIFT = 21 };

/* Fill the page tables of rows [row, row+n) of whole mapping i (variable
 * v) unless an earlier extent did.  I/O thread. */
static int populate_whole(ferry_loader *L, int64_t i, int v, int64_t row,
                          int64_t n, ferry__err *err) {
  const ferry__mapping *whole = &L->maps[i];
  if (!whole->base || n <= 0)
    return 0;
  size_t rb = L->m.vars[v].row_bytes;
  size_t lead = (size_t)(whole->data - (const unsigned char *)whole->base);
  size_t first = (lead + (size_t)row * rb) >> READY_SHIFT;
  size_t last = (lead + (size_t)(row + n) * rb - 1) >> READY_SHIFT;
  if (!L->map_ready) /* freed with the mappings (open.c) */
    L->map_ready = calloc((size_t)(L->m.nparts * L->m.nvars), sizeof(void *));
  unsigned char **ready = L->map_ready ? &L->map_ready[i] : NULL;
  if (ready && !*ready)
    *ready = calloc((whole->len >> READY_SHIFT) + 1, 1);
  for (size_t r = first; r <= last; r++) {
    if (ready && *ready && (*ready)[r])
      continue;
    size_t a = r << READY_SHIFT, z = a + ((size_t)1 << READY_SHIFT);
    z = z < whole->len ? z : whole->len;
    int rc = ferry__map_populate(whole, (const unsigned char *)whole->base + a,
                                 z - a, err);
    if (rc)
      return rc;
    if (ready && *ready)
      (*ready)[r] = 1;
  }
  return 0;
}

/* io=mmap: map extent e's rows of every variable into ep->ext_map (the
 * pipeline owns the mappings; free_window releases them).  I/O thread. */
static int map_extent(epoch_state *ep, ferry__io *io, int64_t e,
                      ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__extent *x = &ep->plan.extents[e];
  double t0 = ferry__now();
  for (int v = 0; v < L->m.nvars; v++) {
    ferry__mapping *to = &ep->ext_map[e * L->m.nvars + v];
    int rc = 0;
    /* rows of row_bytes: the samples' own, or a ragged variable's values
     * (the mapping of rows [row, row + count) starts at the first one's) */
    const int64_t *ro =
        L->m.vars[v].ragged ? L->m.parts[x->part].roff[v] : NULL;
    int64_t r0 = ro ? ro[x->row] : x->row;
    int64_t nr = ro ? ro[x->row + x->count] - ro[x->row] : x->count;
    if (L->maps) { /* the whole variable of the part, kept for later */
      ferry__mapping *whole = &L->maps[x->part * L->m.nvars + v];
      if (!whole->base)
        rc = L->be->io_map(io, x->part, v, 0, L->m.parts[x->part].num_samples,
                           whole, err);
      if (!rc) { /* borrowed: base stays NULL, free_window unmaps nothing */
        memset(to, 0, sizeof *to);
        to->data = whole->data + (size_t)r0 * L->m.vars[v].row_bytes;
        to->path = whole->path;
        /* the page faults here, not in the workers' copies */
        rc = populate_whole(L, x->part * L->m.nvars + v, v, r0, nr, err);
      }
    } else {
      rc = L->be->io_map(io, x->part, v, x->row, x->count, to, err);
      if (!rc)
        rc = ferry__map_populate(to, to->data,
                                 (size_t)nr * L->m.vars[v].row_bytes, err);
    }
    if (rc)
      return rc;
  }
  pthread_mutex_lock(&L->stats_mu);
  L->stats.bytes_read += x->count * (int64_t)L->row_total;
  L->stats.read_seconds += ferry__now() - t0;
  pthread_mutex_unlock(&L->stats_mu);
  return 0;
}

/* Read one extent (all variables) into a new buffer.  I/O thread only. */
static int read_extent(epoch_state *ep, ferry__io *io, const ferry__extent *x,
                       unsigned char **out, ferry__err *err) {
  ferry_loader *L = ep->L;
  size_t bytes = ferry__extent_var_off(L, x, L->m.nvars);
  unsigned char *buf = ferry__buf_get(L, ferry__extent_buf_bytes(L, x));
  if (!buf)
    return ferry__oom(err, L->rank, bytes,
                      "%lld rows of part %lld (%s) of dataset %s",
                      (long long)x->count, (long long)x->part,
                      ferry__part_path(L, x->part), L->m.spec);
  double t0 = ferry__now();
  for (int v = 0; v < L->m.nvars; v++) {
    int rc = L->be->io_read(io, x->part, v, x->row, x->count,
                            buf + ferry__extent_var_off(L, x, v), err);
    if (rc) {
      /* Deferred decodes of this buffer (and of the reads before) are
       * settled first; an earlier read's error is the one to report. */
      ferry__err early = {0};
      int wrc = ep->defer ? L->be->io_wait(io, &early) : 0;
      if (wrc < 0) {
        *err = early;
        rc = wrc;
      }
      ferry__buf_put(L, buf);
      return rc;
    }
  }
  pthread_mutex_lock(&L->stats_mu);
  L->stats.bytes_read += (int64_t)bytes;
  L->stats.read_seconds += ferry__now() - t0;
  pthread_mutex_unlock(&L->stats_mu);
  *out = buf;
  return 0;
}

static void publish_extent(epoch_state *ep, int64_t e, unsigned char *buf) {
  ferry__publish_rows(ep, e, buf, ep->plan.extents[e].count);
}

/* Double buffering: window w may be read once the consumer is within
 * `prefetch` batches of the first batch of window w-1, so one window is read
 * while the previous one is served.  ferry__admit_of(w) <= need(w): a batch
 * never waits for a window that is not admitted yet. */
int64_t ferry__admit_of(const ferry__rank_plan *p, int64_t w) {
  return w > 0 ? p->window_need[w - 1] : 0;
}

/* Wait until `admit` batches are consumed (minus the lookahead) or stop.
 * Returns 1 to go on, 0 to stop. */
static int wait_admission(epoch_state *ep, int64_t admit) {
  int64_t la = ep->L->opts->prefetch;
  pthread_mutex_lock(&ep->mu);
  while (!ep->stop && admit > ep->consumed + la) {
    ep->io_wake = admit - la;
    pthread_cond_wait(&ep->cv_io, &ep->mu);
  }
  ep->io_wake = 0;
  int go = !ep->stop;
  pthread_mutex_unlock(&ep->mu);
  return go;
}

/*
 * A backend with io_wait decodes on its pool (backends/pool.c): the extents
 * of a window are read in groups of up to `threads` (their decode jobs run
 * at once, across parts: DLIO's one-sample files), then waited for and
 * published in order.  The group's buffers belong to the window being read,
 * which the budget counts whole.  Without io_wait, groups of one.
 */
static int read_group(epoch_state *ep, ferry__io *io, int64_t e0, int64_t n,
                      unsigned char **bufs, ferry__err *err) {
  const ferry__rank_plan *p = &ep->plan;
  ferry_loader *L = ep->L;
  int rc = 0;
  int64_t k = 0;
  for (; k < n && rc == 0; k++)
    rc = ep->ext_map ? map_extent(ep, io, e0 + k, err)
                     : read_extent(ep, io, &p->extents[e0 + k], &bufs[k], err);
  if (rc == 0 && ep->defer) {
    double t0 = ferry__now();
    rc = L->be->io_wait(io, err);
    pthread_mutex_lock(&L->stats_mu);
    L->stats.read_seconds += ferry__now() - t0;
    pthread_mutex_unlock(&L->stats_mu);
  } else if (rc && ep->defer) {
    /* The group's decodes settle before its buffers go back (a failed
     * buf_get leaves them queued); an earlier read's error wins. */
    ferry__err early = {0};
    int wrc = L->be->io_wait(io, &early);
    if (wrc < 0) {
      *err = early;
      rc = wrc;
    }
  }
  if (rc)
    for (int64_t i = 0; i < k; i++)
      if (bufs[i])
        ferry__buf_put(L, bufs[i]);
  return rc;
}

static void io_independent(epoch_state *ep, ferry__io *io) {
  const ferry__rank_plan *p = &ep->plan;
  ferry__err err = {0};
  int64_t g = ep->defer && ep->L->nthreads > 1 ? ep->L->nthreads : 1;
  unsigned char *bufs[FERRY__POOL_MAX];
  if (g > FERRY__POOL_MAX)
    g = FERRY__POOL_MAX;
  for (int64_t w = 0; w < p->nwindows; w++) {
    if (!wait_admission(ep, ferry__admit_of(p, w)))
      return;
    int src = make_window_slots(ep, w, &err);
    if (src) {
      ferry__publish_error(ep, src, &err);
      return;
    }
    for (int64_t e = p->window_first_extent[w];
         e < p->window_first_extent[w + 1];) {
      int64_t n = p->window_first_extent[w + 1] - e < g
                      ? p->window_first_extent[w + 1] - e
                      : g;
      memset(bufs, 0, sizeof bufs);
      int rc = read_group(ep, io, e, n, bufs, &err);
      if (rc) {
        ferry__publish_error(ep, rc, &err);
        return;
      }
      for (int64_t i = 0; i < n; i++)
        publish_extent(ep, e + i, bufs[i]);
      e += n;
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
/* The parts touched in round j by any rank, ascending, without repeats,
 * into *parts (grown as needed).  Returns their number, or -1 when out of
 * memory. */
static int64_t round_parts(const epoch_state *ep, int64_t j, int64_t **parts,
                           int64_t *cap) {
  int64_t np = 0;
  for (int r = 0; r < ep->L->size; r++) {
    const ferry__round_reads *rr = &ep->all_reads[r];
    if (j >= rr->nwindows)
      continue;
    for (int64_t k = rr->first[j]; k < rr->first[j + 1]; k++) {
      if (np == *cap) {
        int64_t ncap = *cap ? 2 * *cap : 16;
        int64_t *t = realloc(*parts, (size_t)ncap * sizeof *t);
        if (!t)
          return -1;
        *parts = t;
        *cap = ncap;
      }
      (*parts)[np++] = rr->part[k];
    }
  }
  qsort(*parts, (size_t)np, sizeof **parts, ferry__cmp_i64);
  int64_t u = 0;
  for (int64_t a = 0; a < np; a++)
    if (u == 0 || (*parts)[u - 1] != (*parts)[a])
      (*parts)[u++] = (*parts)[a];
  return u;
}

/* The calls every rank makes on part in round j: the most extents any
 * rank reads from it. */
static int64_t round_calls(const epoch_state *ep, int64_t j, int64_t part) {
  int64_t calls = 0;
  for (int r = 0; r < ep->L->size; r++) {
    const ferry__round_reads *rr = &ep->all_reads[r];
    if (j >= rr->nwindows)
      continue;
    int64_t c = 0;
    for (int64_t k = rr->first[j]; k < rr->first[j + 1]; k++)
      c += rr->part[k] == part ? rr->count[k] : 0;
    if (c > calls)
      calls = c;
  }
  return calls;
}

/* Round j on one part: `calls` collective reads per variable, this rank's
 * extents on the part (in plan order) first, then empty reads.  The first
 * failure is published and turns the rest of the epoch into dummies, which
 * still make every call so the collectives stay matched. */
static void round_read_part(epoch_state *ep, ferry__io *io, int64_t j,
                            int64_t part, int64_t calls, int *dummy,
                            ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *me = &ep->plan;
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
  if (!bufs && !*dummy) {
    ferry__oom(err, L->rank, (size_t)(nmine ? nmine : 1) * sizeof *bufs,
               "the %lld reads of part %lld (%s) of dataset %s",
               (long long)nmine, (long long)part, ferry__part_path(L, part),
               L->m.spec);
    ferry__publish_error(ep, FERRY_ENOMEM, err);
    *dummy = 1;
  }
  for (int64_t k = 0; k < nmine && !*dummy; k++) {
    size_t bytes = ferry__extent_buf_bytes(L, &me->extents[mine0 + k]);
    bufs[k] = ferry__buf_get(L, bytes);
    if (!bufs[k]) {
      ferry__oom(err, L->rank, bytes,
                 "%lld rows of part %lld (%s) of dataset %s",
                 (long long)me->extents[mine0 + k].count, (long long)part,
                 ferry__part_path(L, part), L->m.spec);
      ferry__publish_error(ep, FERRY_ENOMEM, err);
      *dummy = 1;
    }
  }
  double t0 = ferry__now();
  for (int v = 0; v < L->m.nvars; v++)
    for (int64_t k = 0; k < calls; k++) {
      int real = !*dummy && k < nmine;
      const ferry__extent *x = real ? &me->extents[mine0 + k] : NULL;
      static unsigned char scratch[1];
      int rc = L->be->io_read(
          io, part, v, real ? x->row : 0, real ? x->count : 0,
          real ? bufs[k] + ferry__extent_var_off(L, x, v) : scratch, err);
      if (rc && !*dummy) {
        ferry__publish_error(ep, rc, err);
        *dummy = 1;
      }
    }
  if (!*dummy) {
    int64_t bytes = 0;
    for (int64_t k = 0; k < nmine; k++) {
      bytes += (int64_t)ferry__extent_var_off(L, &me->extents[mine0 + k],
                                              L->m.nvars);
      publish_extent(ep, mine0 + k, bufs[k]);
    }
    pthread_mutex_lock(&L->stats_mu);
    L->stats.bytes_read += bytes;
    L->stats.read_seconds += ferry__now() - t0;
    pthread_mutex_unlock(&L->stats_mu);
  } else if (bufs) {
    for (int64_t k = 0; k < nmine; k++)
      ferry__buf_put(L, bufs[k]);
  }
  free(bufs);
}

static void io_collective(epoch_state *ep, ferry__io *io) {
  ferry__err err = {0};
  int dummy = 0;
  int64_t *parts = NULL, cap = 0;
  for (int64_t j = 0; j < ep->nrounds && ferry__round_wait(ep, j, &dummy);
       j++) {
    int64_t np = round_parts(ep, j, &parts, &cap);
    if (np < 0) { /* cannot stay matched without memory: stop reading */
      ferry__oom(&err, ep->L->rank,
                 (size_t)(cap ? 2 * cap : 16) * sizeof *parts,
                 "the parts read in round %lld of dataset %s", (long long)j,
                 ep->L->m.spec);
      ferry__publish_error(ep, FERRY_ENOMEM, &err);
      break;
    }
    if (!dummy && j < ep->plan.nwindows) {
      int src = make_window_slots(ep, j, &err);
      if (src) { /* no data of this rank is published from now on */
        ferry__publish_error(ep, src, &err);
        dummy = 1;
      }
    }
    for (int64_t a = 0; a < np; a++)
      round_read_part(ep, io, j, parts[a], round_calls(ep, j, parts[a]), &dummy,
                      &err);
  }
  free(parts);
}

void *ferry__io_main(void *arg) {
  epoch_state *ep = arg;
  ferry_loader *L = ep->L;
  ferry__io *io = NULL;
  ferry__err err = {0};
  ferry__io_params p = {L->io_comm,
                        L->rank,
                        L->opts->io == FERRY__IO_COLLECTIVE,
                        L->opts->max_open_files,
                        L->opts,
                        L->nthreads,
                        0,
                        ep->epoch};
  /* Deferred decodes only in independent reads (a collective round's
   * reads are waited for one by one) and never with io=mmap. */
  p.defer = !p.collective && L->be->io_wait && !ep->ext_map;
  ep->defer = p.defer;
  int rc = L->be->io_open(&io, &L->m, &p, &err);
  if (rc) {
    ferry__publish_error(ep, rc, &err);
    return NULL;
  }
  if (ep->glob)
    ferry__io_global(ep, io);
  else if (p.collective)
    io_collective(ep, io);
  else
    io_independent(ep, io);
  L->be->io_close(io);
  return NULL;
}

/* ---- Workers ----------------------------------------------------------- */

/* Slots [i0, i0 + n) of the epoch into out: computed from the plan
 * (plan/order.c), or copied from the windows' stored orders (a sampling
 * plan, shuffle=global).  The range lies in the plan: it cannot fail. */
static void batch_slots(const epoch_state *ep, int64_t i0, int64_t n,
                        ferry__slot *out) {
  const ferry__rank_plan *p = &ep->plan;
  if (p->bucket_pos) { /* max_tokens with bucket_window (tokens.c) */
    ferry__tokens_slots(ep->L, p, ep->epoch, ep->tokc, i0, n, out);
    return;
  }
  if (ferry__plan_slots_computed(p)) {
    (void)ferry__plan_slots_get(p, i0, n, out);
    return;
  }
  const int64_t *first = p->window_first_slot;
  int64_t w = n > 0 ? ferry__plan_window_of(p, i0) : 0;
  for (int64_t k = 0; k < n; k++) {
    while (i0 + k >= first[w + 1])
      w++;
    out[k] = ep->win_slots[w][i0 + k - first[w]];
  }
}

/* Shuffled rows are scattered over a window's reads (or, with io=mmap,
 * over the page cache): each copy starts with cache misses the hardware
 * prefetcher cannot guess.  The row PREFETCH_AHEAD slots on is asked for
 * while this one is copied (its first PREFETCH_BYTES; the prefetcher
 * follows a longer row by itself).  A batch's slots are computed
 * SLOT_BLOCK at a time into the worker's stack (8 KiB). */
enum {
  PREFETCH_AHEAD = 2,
  PREFETCH_BYTES = 2048,
  CACHE_LINE = 64,
  SLOT_BLOCK = 256
};

static void prefetch_row(const epoch_state *ep, const ferry__slot *sl, int v,
                         size_t rb) {
  size_t at = (size_t)sl->extent * (size_t)ep->L->m.nvars + (size_t)v;
  const unsigned char *src = ep->ext_src[at] + (size_t)sl->row * rb;
  size_t n = rb < PREFETCH_BYTES ? rb : PREFETCH_BYTES;
  for (size_t off = 0; off < n; off += CACHE_LINE)
    __builtin_prefetch(src + off, 0, 0);
}

/* Rows of variable v for slots sl[0, n) into dst, one copy per run of
 * consecutive rows of an extent; a variable the workers make (pack.c,
 * L->pack_comp) made here instead, a run at a time. */
static int copy_rows(epoch_state *ep, ring_slot *s, const ferry__slot *sl,
                     int64_t n, int v, unsigned char *dst) {
  ferry_loader *L = ep->L;
  size_t rb = L->m.vars[v].row_bytes;
  const int made = L->pack_comp ? L->pack_comp[v] : 0;
  int rc = 0;
  for (int64_t i = 0; !rc && i < n;) {
    size_t at = (size_t)sl[i].extent * (size_t)L->m.nvars + (size_t)v;
    if (!made && i + PREFETCH_AHEAD < n)
      prefetch_row(ep, &sl[i + PREFETCH_AHEAD], v, rb);
    int64_t run = 1;
    while (i + run < n && sl[i + run].extent == sl[i].extent &&
           sl[i + run].row == sl[i].row + run)
      run++;
    if (made) {
      const ferry__extent *x = &ep->plan.extents[sl[i].extent];
      rc = ferry__pack_fill_rows(ep->pfill, v, x->part, x->row + sl[i].row, run,
                                 dst + (size_t)i * rb, L->rank, &s->err);
      i += run;
      continue;
    }
    const unsigned char *src = ep->ext_src[at] + (size_t)sl[i].row * rb;
    if (ep->ext_map)
      rc = ferry__mapped_copy(dst + (size_t)i * rb, src, (size_t)run * rb,
                              ep->ext_map[at].path, &s->err);
    else
      memcpy(dst + (size_t)i * rb, src, (size_t)run * rb);
    i += run;
  }
  if (!rc && made == 2) { /* packed tokens copied from the mapped corpus:
                           * the reads of this batch (pack.c) */
    pthread_mutex_lock(&L->stats_mu);
    L->stats.bytes_read += n * (int64_t)rb;
    pthread_mutex_unlock(&L->stats_mu);
  }
  return rc;
}

/* n bytes of a sample's values from its extent's (src_at) buffer, or with
 * io=mmap from its mapping (a file cut since its open is an error, not a
 * SIGBUS). */
static int ragged_copy(epoch_state *ep, ring_slot *s, size_t src_at,
                       unsigned char *dst, const unsigned char *src, size_t n) {
  if (ep->ext_map)
    return ferry__mapped_copy(dst, src, n, ep->ext_map[src_at].path, &s->err);
  memcpy(dst, src, n);
  return 0;
}

/* Samples sl[0, n) of ragged variable v, batch positions [at, at+n):
 * their values after those of the positions before (s->offs[v][at] is
 * set), their offsets, the longest into *max_len; one copy per run of
 * consecutive rows of an extent (their values are consecutive too: a
 * block of shuffle=block, a chunk's rows).  The slot holds slot_cap[v]
 * rows, the epoch's largest batch's (ragged.c), so a batch past it is a
 * bug, never a bigger allocation. */
static int copy_ragged(epoch_state *ep, ring_slot *s, const ferry__slot *sl,
                       int64_t n, int v, int64_t at, int64_t *max_len) {
  ferry_loader *L = ep->L;
  size_t rb = L->m.vars[v].row_bytes;
  int64_t *o = s->offs[v];
  for (int64_t i = 0; i < n;) {
    /* The samples' offsets and values are scattered over the part's
     * offsets and the window's reads: the offsets of the sample 4 on are
     * asked for, and the first values of the one 2 on (its offsets are
     * in cache by then). */
    if (i + 2 * PREFETCH_AHEAD < n) {
      const ferry__slot *f = &sl[i + 2 * PREFETCH_AHEAD];
      const ferry__extent *fx = &ep->plan.extents[f->extent];
      __builtin_prefetch(&L->m.parts[fx->part].roff[v][fx->row + f->row], 0, 0);
    }
    if (i + PREFETCH_AHEAD < n) {
      const ferry__slot *f = &sl[i + PREFETCH_AHEAD];
      const ferry__extent *fx = &ep->plan.extents[f->extent];
      const int64_t *fo = L->m.parts[fx->part].roff[v];
      size_t fa = (size_t)f->extent * (size_t)L->m.nvars + (size_t)v;
      const unsigned char *src =
          ep->ext_src[fa] + (size_t)(fo[fx->row + f->row] - fo[fx->row]) * rb;
      size_t nb =
          (size_t)(fo[fx->row + f->row + 1] - fo[fx->row + f->row]) * rb;
      for (size_t off = 0; off < nb && off < PREFETCH_BYTES; off += CACHE_LINE)
        __builtin_prefetch(src + off, 0, 0);
    }
    const ferry__extent *x = &ep->plan.extents[sl[i].extent];
    const int64_t *ro = L->m.parts[x->part].roff[v] + x->row;
    int64_t run = 1;
    while (i + run < n && sl[i + run].extent == sl[i].extent &&
           sl[i + run].row == sl[i].row + run)
      run++;
    for (int64_t j = 0; j < run; j++) {
      int64_t len = ro[sl[i].row + j + 1] - ro[sl[i].row + j];
      if (len > L->slot_cap[v] - o[at + i + j])
        return ferry__seterr_on(&s->err, L->rank, FERRY_EINTERNAL,
                                "variable %s: sample %lld (%lld rows) does "
                                "not fit the batch slot of %lld rows",
                                L->m.vars[v].name, (long long)sl[i + j].sample,
                                (long long)len, (long long)L->slot_cap[v]);
      o[at + i + j + 1] = o[at + i + j] + len;
      if (len > *max_len)
        *max_len = len;
    }
    int64_t first = ro[sl[i].row] - ro[0];
    size_t src_at = (size_t)sl[i].extent * (size_t)L->m.nvars + (size_t)v;
    int rc = ragged_copy(ep, s, src_at, s->bufs[v] + (size_t)o[at + i] * rb,
                         ep->ext_src[src_at] + (size_t)first * rb,
                         (size_t)(o[at + i + run] - o[at + i]) * rb);
    if (rc)
      return rc;
    i += run;
  }
  return 0;
}

/* With pad: the rows each sample of the batch gets (pad=max: the longest
 * of the batch, a pass over its slots first; pad=L: L). */
static int64_t pad_width(epoch_state *ep, int v, int64_t b0, int64_t b1) {
  ferry_loader *L = ep->L;
  if (L->pad == 2)
    return L->pad_len;
  int64_t w = 0;
  ferry__slot sl[SLOT_BLOCK];
  for (int64_t i0 = b0; i0 < b1; i0 += SLOT_BLOCK) {
    int64_t k = b1 - i0 < SLOT_BLOCK ? b1 - i0 : SLOT_BLOCK;
    batch_slots(ep, i0, k, sl);
    for (int64_t j = 0; j < k; j++) {
      const ferry__extent *x = &ep->plan.extents[sl[j].extent];
      const int64_t *ro = L->m.parts[x->part].roff[v] + x->row + sl[j].row;
      w = ro[1] - ro[0] > w ? ro[1] - ro[0] : w;
    }
  }
  return w;
}

/* pad: samples sl[0, n) of ragged variable v at batch positions [at,
 * at+n), each in its w rows (cut to w: ragged.c refused a longer one
 * unless truncate=yes), the rest pad_value; lengths into s->offs[v]. */
static int copy_padded(epoch_state *ep, ring_slot *s, const ferry__slot *sl,
                       int64_t n, int v, int64_t at, int64_t w,
                       ferry_tensor *t) {
  ferry_loader *L = ep->L;
  size_t rb = L->m.vars[v].row_bytes, el = ferry_dtype_size(L->m.vars[v].dtype);
  const unsigned char *pv = L->pad_elem + 8 * v;
  for (int64_t i = 0; i < n; i++) {
    const ferry__extent *x = &ep->plan.extents[sl[i].extent];
    const int64_t *ro = L->m.parts[x->part].roff[v];
    int64_t first = ro[x->row + sl[i].row] - ro[x->row];
    int64_t len = ro[x->row + sl[i].row + 1] - ro[x->row + sl[i].row];
    int64_t keep = len < w ? len : w;
    unsigned char *dst = s->bufs[v] + (size_t)(at + i) * (size_t)w * rb;
    size_t src_at = (size_t)sl[i].extent * (size_t)L->m.nvars + (size_t)v;
    int rc = ragged_copy(ep, s, src_at, dst,
                         ep->ext_src[src_at] + (size_t)first * rb,
                         (size_t)keep * rb);
    if (rc)
      return rc;
    if (L->m.vars[v].swapped)
      ferry__byteswap(dst, (size_t)keep * rb / el, el);
    for (size_t b = (size_t)keep * rb; b < (size_t)w * rb; b += el)
      memcpy(dst + b, pv, el);
    s->offs[v][at + i] = keep;
    t->nvalues += keep;
    t->max_len = keep > t->max_len ? keep : t->max_len;
  }
  return 0;
}

static void assemble(epoch_state *ep, ring_slot *s, int64_t b) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  int64_t b0 = ferry__plan_batch_start(p, b),
          b1 = ferry__plan_batch_start(p, b + 1), n = b1 - b0;
  int64_t npad = 0;
  int rc = 0;
  ferry__slot sl[SLOT_BLOCK];
  int64_t pw[FERRY__MAX_PAD_VARS] = {0}; /* pad: each variable's width */
  for (int v = 0; L->ragged && v < L->m.nvars; v++)
    if (s->offs[v]) {
      s->offs[v][0] = 0;
      s->tensors[v].max_len = 0;
      s->tensors[v].nvalues = 0;
      if (L->pad && v < FERRY__MAX_PAD_VARS &&
          (pw[v] = pad_width(ep, v, b0, b1)) > 0 &&
          n > L->slot_cap[v] / pw[v] && !rc)
        rc = ferry__seterr_on(&s->err, L->rank, FERRY_EINTERNAL,
                              "variable %s: batch %lld pads %lld samples to "
                              "%lld rows, more than its slot's %lld rows",
                              L->m.vars[v].name, (long long)b, (long long)n,
                              (long long)pw[v], (long long)L->slot_cap[v]);
    }
  for (int64_t i0 = b0; !rc && i0 < b1; i0 += SLOT_BLOCK) {
    int64_t k = b1 - i0 < SLOT_BLOCK ? b1 - i0 : SLOT_BLOCK;
    batch_slots(ep, i0, k, sl);
    for (int64_t j = 0; j < k; j++) {
      s->ids[i0 - b0 + j] = sl[j].sample;
      s->padded[i0 - b0 + j] = sl[j].padded;
      npad += sl[j].padded;
    }
    for (int v = 0; !rc && v < L->m.nvars; v++) {
      if (L->m.vars[v].ragged && L->pad)
        rc = copy_padded(ep, s, sl, k, v, i0 - b0, pw[v], &s->tensors[v]);
      else
        rc = L->m.vars[v].ragged
                 ? copy_ragged(ep, s, sl, k, v, i0 - b0, &s->tensors[v].max_len)
                 : copy_rows(ep, s, sl, k, v,
                             s->bufs[v] +
                                 (size_t)(i0 - b0) * L->m.vars[v].row_bytes);
    }
  }
  for (int v = 0; !rc && v < L->m.nvars; v++) {
    const ferry__var *var = &L->m.vars[v];
    size_t rb = var->row_bytes;
    int64_t rows = var->ragged ? (L->pad ? n * pw[v] : s->offs[v][n]) : n;
    if (var->swapped && !(var->ragged && L->pad)) { /* padded: swapped per
                                                       sample, before the pad */
      size_t el = ferry_dtype_size(var->dtype);
      ferry__byteswap(s->bufs[v], (size_t)rows * rb / el, el);
    }
    ferry_tensor *t = &s->tensors[v];
    t->shape[0] = rows;
    t->nbytes = (size_t)rows * rb;
    if (var->ragged && L->pad) { /* [n, W, inner...] */
      t->shape[0] = n;
      t->shape[1] = pw[v];
    } else if (var->ragged) {
      t->nvalues = rows;
      if (L->opts->offsets_dtype) { /* ragged.c checked they fit */
        int32_t *o32 =
            (int32_t *)(void *)((unsigned char *)s->offs[v] +
                                FERRY__RAGGED_OFF32(L->opts->batch_size));
        for (int64_t i = 0; i <= n; i++)
          o32[i] = (int32_t)s->offs[v][i];
      }
    }
  }
  s->batch.epoch = ep->epoch;
  s->batch.index = ep->index_base + b;
  s->batch.size = n;
  s->batch.num_padded = npad;
  if (rc) {
    s->err.has_rank = 1;
    s->err.rank = L->rank;
  }
  s->rc = rc;
  if (!rc && L->opts->transform &&
      L->opts->transform(&s->batch, L->opts->transform_user) != 0)
    s->rc = ferry__seterr_on(&s->err, L->rank, FERRY_ECALLBACK,
                             "transform callback failed on batch %lld "
                             "of epoch %lld",
                             (long long)b, (long long)ep->epoch);
}

/* The device stage of batch b, with ep->mu held on entry and exit: wait
 * until device slot b % ndring is free for b (the application released
 * batch b - ndring), copy the assembled host slot into it without the lock,
 * and, unless keep_host, wait for the copy so the host slot can be reused
 * (on this worker: the consumer never waits for it).  A copy error is the
 * slot's result, certified like a failed read. */
static void copy_to_device(epoch_state *ep, ring_slot *s, int64_t b) {
  ferry_loader *L = ep->L;
  ferry__dslot *d = L->dring[b % L->ndring];
  int keep = L->opts->keep_host;
  /* re-read after each wait: ferry_next may have swapped a slot the caller
   * still holds out of the ring for a free one (slots.c) */
  while (!ep->stop && !(d->state == SLOT_FREE && d->expect == b)) {
    pthread_cond_wait(&ep->cv_work, &ep->mu);
    d = L->dring[b % L->ndring];
  }
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
  if (!rc) { /* the bytes handed out (a ragged variable's values) */
    size_t bytes = L->ragged ? 0 : (size_t)s->batch.size * L->row_all;
    for (int v = 0; L->ragged && v < s->batch.nvars; v++)
      bytes += s->batch.vars[v].nbytes;
    L->stats.h2d_bytes += (int64_t)bytes;
  }
  L->stats.h2d_seconds += secs;
  pthread_mutex_unlock(&L->stats_mu);
  pthread_mutex_lock(&ep->mu);
  d->rc = rc;
  if (keep && !rc) {
    s->state = SLOT_PAIRED;
    d->host = (int)(b % L->nring);
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
void ferry__assemble_unlocked(epoch_state *ep, ring_slot *s, int64_t b) {
  const ferry__rank_plan *p = &ep->plan;
  pthread_mutex_unlock(&ep->mu);
  assemble(ep, s, b);
  pthread_mutex_lock(&ep->mu);
  int64_t b0 = ferry__plan_batch_start(p, b),
          b1 = ferry__plan_batch_start(p, b + 1);
  for (int64_t w = b0 < b1 ? ferry__plan_window_of(p, b0) : p->nwindows;
       w < p->nwindows && p->window_first_slot[w] < b1; w++) {
    int64_t lo = p->window_first_slot[w] > b0 ? p->window_first_slot[w] : b0;
    int64_t hi =
        p->window_first_slot[w + 1] < b1 ? p->window_first_slot[w + 1] : b1;
    ep->win_remaining[w] -= hi - lo;
    if (ep->win_remaining[w] == 0)
      free_window(ep, w);
  }
  if (ep->L->gpu) {
    copy_to_device(ep, s, b);
    return;
  }
  s->state = SLOT_READY;
  /* the consumer is woken with the mutex released (see publish_rows) */
  pthread_mutex_unlock(&ep->mu);
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_mutex_lock(&ep->mu);
}

/* A worker allocates nothing: once a batch's data is loaded, assembling it
 * cannot fail (only a transform can), which is what lets ferry_next certify
 * batches from the I/O progress alone. */
void *ferry__worker_main(void *arg) {
  epoch_state *ep = arg;
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  pthread_mutex_lock(&ep->mu);
  for (;;) {
    int64_t b = ep->next_assign;
    if (ep->stop || b >= p->num_batches)
      break;
    ring_slot *s = L->ring[b % L->nring];
    int data_ok = ep->loaded >= ferry__plan_batch_need(p, b);
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
    ferry__assemble_unlocked(ep, s, b);
  }
  pthread_mutex_unlock(&ep->mu);
  return NULL;
}
