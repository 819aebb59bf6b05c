/*
 * plan.c - the epoch plan as pure functions.  Given the pieces of a dataset
 * and their permutation (plan/chunks.c), the options, the seed, the epoch
 * and the world size, it says which rows each rank reads (extents, grouped
 * in windows) and in which order it serves them (slots, cut into batches).
 * No MPI, no I/O, no clock: the same inputs give the same plan on every
 * rank, compiler and platform, which is what lets rank 0 draw the
 * permutation, broadcast it, and every rank check it.
 *
 * Steps: chunks -> subset (max_chunks/fraction, drawn from the seed alone so
 * every epoch uses the same subset) -> pieces (chunks, or blocks of
 * block_size with shuffle=block) -> permutation of pieces (seed, epoch)
 * (those three in plan/chunks.c) -> the global sample sequence S ->
 * partition (contiguous: rank r takes S
 * [rM/P, (r+1)M/P); strided: rank r takes pieces r, r+P, ..., then the
 * ranks dealt more than that balanced count hand their surplus to the ranks
 * dealt less, so both partitions give every rank its balanced share) -> tail
 * (drop_last truncates every rank to the same whole number of batches before
 * anything is read; pad appends repeats of S's first samples, rank r taking
 * the ones after ranks < r; partial keeps short or empty last batches) ->
 * windows of shuffle_buffer pieces whose samples are mixed (seed, epoch,
 * rank, window) -> extents: a window's pieces sorted by position and merged
 * when adjacent, so one read serves several pieces.  A window's served
 * order is computed slot by slot (plan/order.c); resuming an epoch cuts or
 * re-deals these plans (plan/resume.c).
 */
#include "config.h"
#include "plan/plan.h"
#include "core/options.h"

#include <stdlib.h>
#include <string.h>

/* A run of samples of one piece, before windows and extents. */
typedef struct segment {
  int64_t part, row, count, global_first, padded;
} segment;

typedef struct seglist {
  segment *v;
  int64_t n, cap;
} seglist;

static int seg_push(seglist *l, segment s) {
  if (s.count <= 0)
    return 0;
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 64;
    segment *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v)
      return FERRY_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

static segment seg_of(const ferry__chunk *pc, int64_t off, int64_t count) {
  return (segment){pc->part, pc->row + off, count, pc->global_first + off, 0};
}

/* Append positions [a, a+len) of the sequence S (pieces in perm order) as
 * segments; positions wrap modulo M.  The piece holding a is found by a
 * scan of the pieces' counts (O(pieces) time, no prefix-sum array). */
static int push_range(seglist *l, const ferry__pieces *ps, const int64_t *perm,
                      int64_t M, int64_t a, int64_t len, int padded) {
  int64_t i = 0, pos = 0; /* piece i (perm order) starts at position pos */
  a %= M;
  while (len > 0) {
    if (a >= M) { /* wrap: start over at S's first piece */
      a = 0;
      i = 0;
      pos = 0;
    }
    ferry__chunk pc = ferry__piece(ps, perm[i]);
    while (pos + pc.count <= a) {
      pos += pc.count;
      pc = ferry__piece(ps, perm[++i]);
    }
    int64_t off = a - pos;
    int64_t take = pc.count - off < len ? pc.count - off : len;
    segment s = seg_of(&pc, off, take);
    s.padded = padded;
    int rc = seg_push(l, s);
    if (rc)
      return rc;
    a += take;
    len -= take;
  }
  return 0;
}

static int cmp_seg_pos(const void *a, const void *b) {
  const segment *x = *(segment *const *)a, *y = *(segment *const *)b;
  if (x->part != y->part)
    return (x->part > y->part) - (x->part < y->part);
  return (x->row > y->row) - (x->row < y->row);
}

void ferry__rank_plan_free(ferry__rank_plan *p) {
  if (!p)
    return;
  free(p->extents);
  free(p->window_first_extent);
  free(p->window_need);
  free(p->window_samples);
  free(p->window_first_slot);
  free(p->window_first_seg);
  free(p->segs);
  free(p->slices);
  free(p->window_first_slice);
  free(p->runs);
  free(p->tok_start ? p->tok_start - p->tok_skip : NULL);
  free(p->bucket_pos);
  free(p->bucket_batch);
  memset(p, 0, sizeof *p);
}

/* Rank r's balanced share of M samples over P ranks: [rM/P, (r+1)M/P). */
static int64_t balanced_share(int64_t M, int P, int r) {
  return M * (r + 1) / P - M * r / P;
}

/* The working state of one build: its inputs and the segment lists and
 * scratch arrays the steps below hand to each other. */
typedef struct build_ctx {
  const ferry__pieces *ps;
  int64_t np;
  const int64_t *perm;
  const ferry__plan_params *pp;
  int rank;
  int64_t M;          /* samples in the epoch                         */
  int64_t n_me;       /* this rank's share                            */
  int64_t serve_own;  /* of which it serves                           */
  int64_t pad_before; /* pads taken by ranks < rank (tail=pad)        */
  int64_t *dealt;     /* strided: [P] samples dealt to each rank       */
  seglist own, pad;   /* this rank's segments in served order         */
  int64_t K, nown_w;  /* segments per window, windows of own segments */
  int mix;            /* windows are shuffled                          */
  int64_t *seg_extent, *seg_off; /* [own.n + pad.n] where each segment lies */
} build_ctx;

/* Step 1: every rank's share and the tail rule: batches per rank, what
 * this rank serves of its own share, how many pads ranks before it take. */
static int plan_tail(build_ctx *c, ferry__rank_plan *out, ferry__err *err) {
  const int P = c->pp->world_size;
  const int64_t B = c->pp->batch_size, M = c->M;
  int64_t nmin = INT64_MAX, nmax = 0;
  int64_t *shares = malloc((size_t)P * sizeof *shares);
  if (!shares)
    return ferry__oom(err, -1, (size_t)P * sizeof *shares,
                      "the plan's shares of %d ranks", P);
  /* Both partitions give every rank its balanced share (to one sample), so
   * the tail rule drops or pads fewer than P * B samples.  Strided deals
   * whole pieces round-robin first (dealt[]) and then evens the shares out
   * (plan_segments), or with few or unequal pieces a rank would get up to a
   * piece more than another, and the tail would pay for it on every rank. */
  if (c->pp->partition == FERRY__PART_STRIDED) {
    c->dealt = calloc((size_t)P, sizeof *c->dealt);
    if (!c->dealt) {
      free(shares);
      return ferry__oom(err, -1, (size_t)P * sizeof *c->dealt,
                        "the plan's strided deal over %d ranks", P);
    }
    for (int64_t i = 0; i < c->np; i++)
      c->dealt[i % P] += ferry__piece(c->ps, c->perm[i]).count;
  }
  for (int r = 0; r < P; r++)
    shares[r] = balanced_share(M, P, r);
  for (int r = 0; r < P; r++) {
    if (shares[r] < nmin)
      nmin = shares[r];
    if (shares[r] > nmax)
      nmax = shares[r];
  }
  c->n_me = shares[c->rank];
  int64_t nb;
  if (c->pp->tail == FERRY__TAIL_DROP) {
    nb = nmin / B;
    if (nb == 0) {
      free(shares);
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'batch_size': %lld is larger than the "
                           "smallest rank's share (%lld of %lld samples over "
                           "%d ranks) with tail=drop_last; use a smaller "
                           "batch_size or tail=pad or tail=partial",
                           (long long)B, (long long)nmin, (long long)M, P);
    }
    c->serve_own = nb * B;
    out->dropped = M - (int64_t)P * nb * B;
  } else {
    nb = (nmax + B - 1) / B;
    c->serve_own = c->n_me;
    if (c->pp->tail == FERRY__TAIL_PAD)
      for (int r = 0; r < c->rank; r++)
        c->pad_before += nb * B - shares[r];
  }
  free(shares);
  out->num_batches = nb;
  out->epoch_samples = M;
  return 0;
}

/* Strided, a rank dealt fewer samples than its balanced share: it takes
 * `left` samples from the surplus of the ranks dealt more.  The surplus is
 * the tail of each such rank's dealt pieces (beyond its balanced share),
 * ranks in ascending order; the short ranks take consecutive stretches of
 * it in ascending order, so no sample is taken twice.  O(pieces). */
static int strided_borrow(build_ctx *c, int64_t left) {
  const int P = c->pp->world_size;
  int64_t skip = 0; /* surplus taken by short ranks before this one */
  for (int r = 0; r < c->rank; r++) {
    int64_t want = balanced_share(c->M, P, r);
    if (c->dealt[r] < want)
      skip += want - c->dealt[r];
  }
  int rc = 0;
  for (int q = 0; q < P && left > 0 && !rc; q++) {
    int64_t keep = balanced_share(c->M, P, q); /* q's own samples */
    if (c->dealt[q] <= keep)
      continue;
    for (int64_t i = q; i < c->np && left > 0 && !rc; i += P) {
      const ferry__chunk piece = ferry__piece(c->ps, c->perm[i]), *pc = &piece;
      int64_t off = keep < pc->count ? keep : pc->count;
      keep -= off;
      int64_t avail = pc->count - off;
      int64_t s = skip < avail ? skip : avail;
      skip -= s;
      off += s;
      avail -= s;
      int64_t take = avail < left ? avail : left;
      rc = seg_push(&c->own, seg_of(pc, off, take));
      left -= take;
    }
  }
  return rc;
}

/* Step 2: this rank's segments in served order, truncated to serve_own,
 * then its pads.  Returns 0 or FERRY_ENOMEM. */
static int plan_segments(build_ctx *c, ferry__rank_plan *out) {
  const int P = c->pp->world_size;
  const int64_t B = c->pp->batch_size, nb = out->num_batches;
  int64_t left = c->serve_own;
  int rc = 0;
  if (c->pp->partition == FERRY__PART_CONTIGUOUS) {
    int64_t lo = c->M * c->rank / P;
    rc = push_range(&c->own, c->ps, c->perm, c->M, lo,
                    left < c->n_me ? left : c->n_me, 0);
  } else {
    for (int64_t i = c->rank; i < c->np && left > 0 && !rc; i += P) {
      const ferry__chunk pc = ferry__piece(c->ps, c->perm[i]);
      int64_t take = pc.count < left ? pc.count : left;
      rc = seg_push(&c->own, seg_of(&pc, 0, take));
      left -= take;
    }
    if (!rc && left > 0)
      rc = strided_borrow(c, left);
  }
  if (!rc && c->pp->tail == FERRY__TAIL_PAD && nb * B > c->n_me) {
    rc = push_range(&c->pad, c->ps, c->perm, c->M, c->pad_before % c->M,
                    nb * B - c->n_me, 1);
    out->padded = nb * B - c->n_me;
  }
  return rc;
}

/* The segments of window w: base[s0..s1), the first at index gbase of the
 * rank's segments (own, then pad). */
static void window_segments(const build_ctx *c, int64_t w, segment **base,
                            int64_t *s0, int64_t *s1, int64_t *gbase) {
  if (w < c->nown_w) {
    *s0 = w * c->K;
    *s1 = *s0 + c->K < c->own.n ? *s0 + c->K : c->own.n;
    *base = c->own.v;
    *gbase = 0;
  } else {
    *s0 = 0;
    *s1 = c->pad.n;
    *base = c->pad.v;
    *gbase = c->own.n;
  }
}

/* Step 3: windows (K own segments each, 1 with no mixing, then one pad
 * window) and their extents: per window, segments sorted by position,
 * adjacent ones merged.  Returns 0 or FERRY_ENOMEM. */
static int plan_extents(build_ctx *c, ferry__rank_plan *out) {
  c->mix = c->pp->shuffle != FERRY__SHUFFLE_NONE && c->pp->shuffle_buffer > 0;
  c->K = c->mix ? c->pp->shuffle_buffer : 1;
  c->nown_w = (c->own.n + c->K - 1) / c->K;
  int64_t nw = c->nown_w + (c->pad.n > 0);
  int64_t nseg = c->own.n + c->pad.n, n1 = nseg ? nseg : 1;
  out->nwindows = nw;
  out->window_first_extent = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_need = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_samples = calloc((size_t)nw + 1, sizeof(int64_t));
  segment **order = malloc((size_t)n1 * sizeof *order);
  c->seg_extent = malloc((size_t)n1 * sizeof *c->seg_extent);
  c->seg_off = malloc((size_t)n1 * sizeof *c->seg_off);
  out->extents = malloc((size_t)n1 * sizeof *out->extents);
  if (!out->window_first_extent || !out->window_need || !out->window_samples ||
      !order || !c->seg_extent || !c->seg_off || !out->extents) {
    free(order);
    return FERRY_ENOMEM;
  }
  int64_t ne = 0;
  for (int64_t w = 0; w < nw; w++) {
    int64_t s0, s1, gbase;
    segment *base;
    window_segments(c, w, &base, &s0, &s1, &gbase);
    int64_t cnt = s1 - s0;
    for (int64_t i = 0; i < cnt; i++)
      order[i] = &base[s0 + i];
    qsort(order, (size_t)cnt, sizeof *order, cmp_seg_pos);
    out->window_first_extent[w] = ne;
    for (int64_t i = 0; i < cnt; i++) {
      segment *s = order[i];
      ferry__extent *last =
          ne > out->window_first_extent[w] ? &out->extents[ne - 1] : NULL;
      int64_t gi = (s - base) + gbase;
      if (last && last->part == s->part && last->row + last->count == s->row) {
        c->seg_extent[gi] = ne - 1;
        c->seg_off[gi] = last->count;
        last->count += s->count;
      } else {
        out->extents[ne] =
            (ferry__extent){s->part, s->row, s->count, s->global_first, w};
        c->seg_extent[gi] = ne;
        c->seg_off[gi] = 0;
        ne++;
      }
      out->window_samples[w] += s->count;
    }
  }
  free(order);
  out->window_first_extent[nw] = ne;
  out->nextents = ne;
  out->nslots = c->serve_own + out->padded;
  return 0;
}

/* Step 4: the first batch using each window, the slot index of each window,
 * and the runs the rank serves from (own, then pad segments, as extent and
 * offset) -- the served order of a window is made from them on demand.
 * Returns 0 or FERRY_ENOMEM. */
static int plan_windows(const build_ctx *c, ferry__rank_plan *out) {
  const int64_t B = c->pp->batch_size, nw = out->nwindows;
  out->batch_size = B;
  out->window_first_slot = malloc((size_t)(nw + 1) * sizeof(int64_t));
  if (!out->window_first_slot)
    return FERRY_ENOMEM;
  int64_t pos = 0;
  for (int64_t w = 0; w < nw; w++) {
    out->window_need[w] = pos / B;
    out->window_first_slot[w] = pos;
    pos += out->window_samples[w];
  }
  out->window_first_slot[nw] = pos;
  int64_t nseg = c->own.n + c->pad.n;
  out->segs = malloc((size_t)(nseg ? nseg : 1) * sizeof *out->segs);
  out->window_first_seg = malloc((size_t)(nw + 1) * sizeof(int64_t));
  if (!out->segs || !out->window_first_seg)
    return FERRY_ENOMEM;
  for (int64_t w = 0; w < nw; w++)
    out->window_first_seg[w] = w < c->nown_w ? w * c->K : c->own.n;
  out->window_first_seg[nw] = nseg;
  for (int64_t w = 0, g = 0; w < nw; w++)
    for (int64_t at = 0; g < out->window_first_seg[w + 1]; g++) {
      const segment *sg = g < c->own.n ? &c->own.v[g] : &c->pad.v[g - c->own.n];
      out->segs[g] = (ferry__seg){c->seg_extent[g], c->seg_off[g], sg->count,
                                  sg->padded, at};
      at += sg->count;
    }
  out->nsegs = nseg;
  out->nmixed = c->mix ? c->nown_w : 0;
  out->mix_key = ferry__rand_key(c->pp->seed, FERRY__STREAM_WINDOW,
                                 (uint64_t)c->pp->epoch, (uint64_t)c->rank);
  return 0;
}

int64_t ferry__plan_batch_start(const ferry__rank_plan *p, int64_t b) {
  if (p->tok_start)
    return p->tok_start[b < 0 ? 0 : b > p->num_batches ? p->num_batches : b];
  return b * p->batch_size < p->nslots ? b * p->batch_size : p->nslots;
}

void ferry__plan_set_starts(ferry__rank_plan *p, int64_t *starts, int64_t n,
                            int64_t batch_size) {
  free(p->tok_start ? p->tok_start - p->tok_skip : NULL);
  p->tok_start = starts;
  p->tok_skip = 0;
  p->num_batches = n;
  p->batch_size = batch_size;
  for (int64_t w = 0; w < p->nwindows; w++)
    p->window_need[w] = ferry__plan_batch_of(p, p->window_first_slot[w]);
}

int64_t ferry__plan_batch_of(const ferry__rank_plan *p, int64_t i) {
  if (p->tok_start) /* the last batch starting at or before i (the empty
                     * batches at the end start at nslots) */
    return ferry__last_le(p->tok_start, p->num_batches, i);
  return i / p->batch_size;
}

int64_t ferry__plan_window_of(const ferry__rank_plan *p, int64_t i) {
  return ferry__last_le(p->window_first_slot, p->nwindows, i);
}

int64_t ferry__plan_batch_need(const ferry__rank_plan *p, int64_t b) {
  int64_t b1 = ferry__plan_batch_start(p, b + 1);
  if (b < 0 || b >= p->num_batches || ferry__plan_batch_start(p, b) >= b1)
    return 0; /* an empty batch needs nothing */
  return p->window_first_extent[ferry__plan_window_of(p, b1 - 1) + 1];
}

int64_t ferry__plan_window_max(const ferry__rank_plan *p) {
  int64_t most = 0;
  for (int64_t w = 0; w < p->nwindows; w++)
    if (p->window_samples[w] > most)
      most = p->window_samples[w];
  return most;
}

int64_t ferry__plan_real_before(const ferry__rank_plan *p, int64_t n) {
  int64_t real = 0;
  if (p->window_first_slice) { /* slices: each all pad or all real */
    for (int64_t w = 0; w < p->nwindows && p->window_first_slot[w] < n; w++) {
      int64_t left = n - p->window_first_slot[w];
      for (int64_t i = p->window_first_slice[w];
           i < p->window_first_slice[w + 1] && left > 0; i++) {
        int64_t len = p->slices[i].b - p->slices[i].a;
        int64_t t = len < left ? len : left;
        real += p->slices[i].padded ? 0 : t;
        left -= t;
      }
    }
    return real;
  }
  if (!p->window_first_seg) { /* no runs (shuffle=global's plan, made by
                                 the loader): its pads come last */
    int64_t nreal = p->nslots - p->padded;
    return n < nreal ? n : nreal;
  }
  for (int64_t w = 0; w < p->nwindows && p->window_first_slot[w] < n; w++) {
    int64_t left = n - p->window_first_slot[w];
    if (w >= p->mix_first && w < p->nmixed) { /* own samples: no pad */
      real += left < p->window_samples[w] ? left : p->window_samples[w];
      continue;
    }
    for (int64_t g = p->window_first_seg[w];
         g < p->window_first_seg[w + 1] && left > 0; g++) {
      int64_t t = p->segs[g].count < left ? p->segs[g].count : left;
      real += p->segs[g].padded ? 0 : t;
      left -= t;
    }
  }
  return real;
}

size_t ferry__plan_bytes(const ferry__rank_plan *p) {
  size_t per_window = 4 * sizeof(int64_t) + (p->segs ? sizeof(int64_t) : 0) +
                      (p->slices ? sizeof(int64_t) : 0);
  return (size_t)p->nextents * sizeof(ferry__extent) +
         (size_t)p->nslices * sizeof(ferry__slice) +
         (size_t)p->nruns * sizeof(ferry__run) +
         (size_t)p->nsegs * sizeof(ferry__seg) +
         (size_t)(p->nwindows + 1) * per_window +
         (p->tok_start ? (size_t)(p->num_batches + 1) * sizeof(int64_t) : 0) +
         (p->bucket_pos ? (size_t)(p->nbuckets + 1) * 2 * sizeof(int64_t) : 0);
}

/* One rank's plan: the steps above in order. */
static int build(const ferry__pieces *ps, const int64_t *perm,
                 const ferry__plan_params *pp, int rank, ferry__rank_plan *out,
                 ferry__err *err) {
  memset(out, 0, sizeof *out);
  const int64_t np = ps->n;
  build_ctx c = {.ps = ps, .np = np, .perm = perm, .pp = pp, .rank = rank};
  int rc = 0;
  if (pp->world_size < 1 || rank < 0 || rank >= pp->world_size ||
      pp->batch_size < 1) {
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "plan: bad world size %d, rank %d or batch size %lld",
                       pp->world_size, rank, (long long)pp->batch_size);
    goto cleanup;
  }
  c.M = ps->samples; /* a permutation keeps the sum */
  if (c.M == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY, "the epoch holds no sample");
    goto cleanup;
  }
  rc = plan_tail(&c, out, err);
  if (!rc && (plan_segments(&c, out) || plan_extents(&c, out) ||
              plan_windows(&c, out)))
    rc = ferry__oom(err, -1,
                    (size_t)(np / pp->world_size + 1) *
                        (sizeof(segment) + sizeof(ferry__extent) +
                         sizeof(ferry__seg) + 2 * sizeof(int64_t)),
                    "the plan's extents and runs of rank %d (about %lld of "
                    "the epoch's %lld pieces)",
                    rank, (long long)(np / pp->world_size + 1), (long long)np);
cleanup:
  free(c.dealt);
  free(c.own.v);
  free(c.pad.v);
  free(c.seg_extent);
  free(c.seg_off);
  if (rc)
    ferry__rank_plan_free(out);
  return rc;
}

int ferry__plan_build(const ferry__pieces *ps, const int64_t *perm,
                      const ferry__plan_params *pp, int rank,
                      ferry__rank_plan *out, ferry__err *err) {
  return build(ps, perm, pp, rank, out, err);
}
