/*
 * plan/draw.c - weighted, class-balanced and mixed sampling as pure
 * functions (plan/draw.h).  Why this shape:
 *
 * - The epoch is ONE sequence of draws for all ranks, so a global batch
 *   (B x P draws) is the same whatever P is: the promise of equal gradients
 *   when a job is resumed on another number of ranks, and an elastic resume
 *   is then just "continue at the position served so far".
 * - Draws come block by block (draw_block consecutive rows), so reads stay
 *   long: weighted, a block's share of the epoch's draws is fixed by
 *   systematic sampling and cut into runs of about a block of draws
 *   (plan/draw_weighted.c: an epoch is then a weighted sample in itself,
 *   issue 30); a mix, each source's blocks in a keyed order.  A draw
 *   window (draw_window draws) is then permuted so a batch mixes many
 *   blocks, and each global batch is cut among ranks by premix position:
 *   rank r serves the r-th stretch, i.e. mostly the blocks of "its" part
 *   of the window, and reads little more than it serves.
 * - Nothing per sample is stored but the weights (4 bytes, read once by
 *   rank 0 and broadcast): the blocks' weights and runs are O(blocks); a
 *   mix's per-window counts O(windows x sources).
 */
#include "config.h"
#include "plan/draw.h"
#include "plan/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXTENT_BLOCKS 16
#define MAX_WINDOWS (INT64_C(1) << 24)

static uint64_t below(uint64_t r, uint64_t n) { /* [0, n), bias < 2^-40 */
  return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

/* Sort v[0..n) of non-negative values: LSD radix, 11 bits a pass, as many
 * passes as the largest value needs (a window's block ids: two passes up
 * to 4 million blocks); tmp holds n.  qsort's comparator calls cost a
 * fifth of the plan. */
static void radix_sort(int64_t *v, int64_t *tmp, int64_t n) {
  int64_t most = 0;
  for (int64_t i = 0; i < n; i++)
    most = v[i] > most ? v[i] : most;
  int64_t *src = v, *dst = tmp;
  for (int shift = 0; shift < 63 && (most >> shift) > 0; shift += 11) {
    int64_t count[2049] = {0};
    for (int64_t i = 0; i < n; i++)
      count[((src[i] >> shift) & 2047) + 1]++;
    for (int k = 0; k < 2048; k++)
      count[k + 1] += count[k];
    for (int64_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 2047]++] = src[i];
    int64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v)
    memcpy(v, src, (size_t)n * sizeof *v);
}

/* ---- Mix ----------------------------------------------------------------- */

/* Where source s's c-th draw lies: pass c / n (restart), each pass its
 * own order of the source's blocks (a keyed permutation; its one short
 * block, the last, wherever the permutation puts it): the pass's key, the
 * block's place q in that order, the draw's offset in the block and the
 * block's length there (so its run ends at draw c - off + len). */
typedef struct source_pos {
  uint64_t key;
  int64_t q, off, len;
} source_pos;

static source_pos source_at(const ferry__draw *d, int s, int64_t c) {
  const ferry__draw_source *src = &d->src[s];
  const int64_t nblk = d->src_nblocks[s], B = d->p.block;
  int64_t pass = c / src->n, r = c % src->n;
  source_pos at = {0, 0, 0, B};
  at.key =
      ferry__rand_key(d->p.seed, FERRY__STREAM_DSOURCE, (uint64_t)d->p.epoch,
                      ((uint64_t)s << 32) ^ (uint64_t)pass);
  int64_t ls = src->n - (nblk - 1) * B; /* the short block's rows */
  int64_t qs = ferry__prp_inv(at.key, nblk, nblk - 1);
  if (r < qs * B) {
    at.q = r / B;
    at.off = r % B;
  } else if (r < qs * B + ls) {
    at.q = qs;
    at.off = r - qs * B;
    at.len = ls;
  } else {
    int64_t t = r - qs * B - ls;
    at.q = qs + 1 + t / B;
    at.off = t % B;
  }
  return at;
}

/* Source s's c-th draw: the sample. */
static int64_t source_draw(const ferry__draw *d, int s, int64_t c) {
  source_pos at = source_at(d, s, c);
  int64_t blk = d->src_block0[s] + ferry__prp(at.key, d->src_nblocks[s], at.q);
  return ferry__chunk_get(&d->blocks, blk).global_first + at.off;
}

/* The end of the run of source s's draws from its c-th on that
 * source_draw takes from one block, at most e: the next block's first
 * draw (after the pass's short block, block starts are not multiples of
 * B; the pass's last block ends with the pass), or e. */
static int64_t block_run_end(const ferry__draw *d, int s, int64_t c,
                             int64_t e) {
  source_pos at = source_at(d, s, c);
  int64_t end = c - at.off + at.len;
  return end < e ? end : e;
}

/* Window w's pieces (runs of one source's draws from one block), in
 * their drawn order: piece_pos[k] is the premix offset of the k-th.  A
 * piece is one block's (block_run_end), so a rank whose stretch holds it
 * reads that block alone: cut at multiples of B instead, every piece
 * after a pass's short block took the ends of two blocks, read by two
 * ranks (a mix on 4 ranks read 1.86x its bytes). */
static int mix_pieces(const ferry__draw *d, ferry__draw_ctx *c, int64_t w) {
  if (c->win == w)
    return 0;
  const int S = d->p.nsources;
  int64_t n = 0;
  for (int s = 0; s < S; s++) {
    int64_t a = d->cum[w * S + s], e = a + d->cnt[w * S + s];
    while (a < e) {
      a = block_run_end(d, s, a, e);
      n++;
    }
  }
  if (c->cap_pieces < n + 1) {
    free(c->piece_pos);
    free(c->piece_src);
    free(c->piece_c);
    c->piece_pos = malloc((size_t)(n + 1) * sizeof *c->piece_pos);
    c->piece_src = malloc((size_t)(n + 1) * sizeof *c->piece_src);
    c->piece_c = malloc((size_t)(n + 1) * sizeof *c->piece_c);
    c->cap_pieces = n + 1;
    if (!c->piece_pos || !c->piece_src || !c->piece_c) {
      c->cap_pieces = 0;
      c->win = -1;
      return FERRY_ENOMEM;
    }
  }
  /* piece k (by source, then position) goes to slot prp(k) */
  uint64_t key = ferry__rand_key(d->p.seed, FERRY__STREAM_DPIECE,
                                 (uint64_t)d->p.epoch, (uint64_t)w);
  int64_t k = 0;
  for (int s = 0; s < S; s++) {
    int64_t a = d->cum[w * S + s], e = a + d->cnt[w * S + s];
    while (a < e) {
      int64_t stop = block_run_end(d, s, a, e);
      int64_t slot = ferry__prp(key, n, k++);
      c->piece_src[slot] = s;
      c->piece_c[slot] = a;
      c->piece_pos[slot] = stop - a; /* length, made offsets below */
      a = stop;
    }
  }
  int64_t at = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t len = c->piece_pos[j];
    c->piece_pos[j] = at;
    at += len;
  }
  c->piece_pos[n] = at;
  c->npieces = n;
  c->win = w;
  return 0;
}

static int64_t win_of(const ferry__draw *d, int64_t x) {
  int64_t lo = 0, hi = d->nwin - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (d->win[mid].first <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int64_t mix_sample(const ferry__draw *d, ferry__draw_ctx *c, int64_t i) {
  int64_t w = win_of(d, i);
  int rc = mix_pieces(d, c, w);
  if (rc)
    return rc;
  int64_t off = i - d->win[w].first;
  int64_t k = ferry__last_le(c->piece_pos, c->npieces + 1, off);
  if (k >= c->npieces)
    k = c->npieces - 1;
  int s = (int)c->piece_src[k];
  return source_draw(d, s, c->piece_c[k] + off - c->piece_pos[k]);
}

/* The draws owed to each active source in a window of len: carried
 * largest-remainder apportionment (the cumulative count of every source
 * stays within one draw of len x its share). */
static void apportion(int S, const double *q, double *owed, int64_t len,
                      int64_t *n) {
  int64_t given = 0;
  for (int s = 0; s < S; s++) {
    owed[s] += (double)len * q[s];
    n[s] = q[s] > 0 ? (int64_t)floor(owed[s]) : 0;
    if (n[s] < 0)
      n[s] = 0;
    given += n[s];
  }
  while (given < len) { /* the largest fractional parts take the rest */
    int best = -1;
    double most = -1;
    for (int s = 0; s < S; s++)
      if (q[s] > 0 && owed[s] - (double)n[s] > most) {
        most = owed[s] - (double)n[s];
        best = s;
      }
    if (best < 0)
      break;
    n[best]++;
    given++;
  }
  for (int s = 0; s < S; s++)
    owed[s] -= (double)n[s];
}

typedef struct mix_state {
  int S;
  double *q, *owed;
  int64_t *n, *used;
  int *active;
} mix_state;

static void renormalise(const ferry__draw *d, mix_state *ms) {
  double sum = 0;
  for (int s = 0; s < ms->S; s++)
    sum += ms->active[s] ? d->src[s].proportion : 0;
  for (int s = 0; s < ms->S; s++) {
    ms->q[s] = ms->active[s] && sum > 0 ? d->src[s].proportion / sum : 0;
    ms->owed[s] = 0;
  }
}

/* One window's counts after the exhaustion rules: a stop source that runs
 * out shortens the window (every count scaled) and ends the epoch; a drop
 * source gives what it lacks to the others that can take it.  Returns the
 * window's length; *end set when the epoch ends after it. */
static int64_t window_counts(const ferry__draw *d, mix_state *ms, int64_t len,
                             int *end) {
  const int S = ms->S;
  apportion(S, ms->q, ms->owed, len, ms->n);
  double f = 1.0;
  for (int s = 0; s < S; s++) {
    int64_t left = d->src[s].n - ms->used[s];
    if (d->src[s].exhaust == FERRY__XH_STOP && ms->n[s] > left) {
      double g = (double)left / (double)ms->n[s];
      f = g < f ? g : f;
      *end = 1;
    }
  }
  if (*end) {
    int64_t total = 0;
    for (int s = 0; s < S; s++) {
      int64_t left = d->src[s].n - ms->used[s];
      ms->n[s] = (int64_t)floor((double)ms->n[s] * f);
      if (d->src[s].exhaust != FERRY__XH_RESTART && ms->n[s] > left)
        ms->n[s] = left;
      total += ms->n[s];
    }
    return total;
  }
  int64_t short_by = 0;
  for (int s = 0; s < S; s++) {
    int64_t left = d->src[s].n - ms->used[s];
    if (d->src[s].exhaust == FERRY__XH_DROP && ms->n[s] >= left) {
      short_by += ms->n[s] - left;
      ms->n[s] = left;
      ms->active[s] = 0; /* leaves after this window */
    }
  }
  while (short_by > 0) { /* the others take it, in turn, if they can */
    int took = 0;
    for (int s = 0; s < S && short_by > 0; s++) {
      int64_t room = d->src[s].exhaust == FERRY__XH_RESTART
                         ? short_by
                         : d->src[s].n - ms->used[s] - ms->n[s];
      if (!ms->active[s] || room <= 0)
        continue;
      ms->n[s]++;
      short_by--;
      took = 1;
    }
    if (!took)
      break;
  }
  return len - short_by;
}

static int mix_grow(ferry__draw *d, int64_t *cap) {
  int64_t c = *cap ? 2 * *cap : 64;
  const int S = d->p.nsources;
  ferry__draw_win *w = realloc(d->win, (size_t)c * sizeof *w);
  if (w)
    d->win = w;
  int64_t *a = realloc(d->cnt, (size_t)(c * S) * sizeof *a);
  if (a)
    d->cnt = a;
  int64_t *b = realloc(d->cum, (size_t)(c * S) * sizeof *b);
  if (b)
    d->cum = b;
  if (!w || !a || !b)
    return FERRY_ENOMEM;
  *cap = c;
  return 0;
}

/* A change of the mix at a resume: the new proportions (normalised) and
 * rules from here on; a source that left stays out. */
static void apply_change(ferry__draw *d, mix_state *ms,
                         const ferry__draw_change *c) {
  double sum = 0;
  for (int s = 0; s < ms->S && s < c->n; s++)
    sum += c->proportion[s];
  for (int s = 0; s < ms->S && s < c->n && sum > 0; s++) {
    d->src[s].proportion = c->proportion[s] / sum;
    d->src[s].exhaust = c->exhaust[s];
  }
  renormalise(d, ms);
}

/* Default epoch length: num_draws; else a mix of restart sources only
 * serves their total; else it runs until a stop source runs out or every
 * drop source did. */
static int mix_table(ferry__draw *d, mix_state *ms, ferry__err *err) {
  const int S = ms->S;
  int all_restart = 1;
  int64_t total = 0;
  for (int s = 0; s < S; s++) {
    all_restart &= d->src[s].exhaust == FERRY__XH_RESTART;
    total += d->src[s].n;
  }
  int64_t limit =
      d->p.num_draws ? d->p.num_draws : (all_restart ? total : INT64_MAX / 4);
  int64_t x = 0, cap = 0;
  int end = 0;
  renormalise(d, ms);
  int ch = 0;
  while (x < limit && !end) {
    while (ch < d->p.nchanges && d->p.changes[ch].position <= x)
      apply_change(d, ms, &d->p.changes[ch++]);
    int any = 0; /* a source that can still run out keeps the epoch going */
    for (int s = 0; s < S; s++)
      any |= ms->active[s] && (d->src[s].exhaust != FERRY__XH_RESTART ||
                               d->p.num_draws || all_restart);
    if (!any)
      break;
    if (d->nwin >= MAX_WINDOWS)
      return ferry__seterr(err, FERRY_EINVAL,
                           "mix: the epoch would take more than %lld draw "
                           "windows of %lld draws (set num_draws, or give "
                           "the sources larger proportions)",
                           (long long)MAX_WINDOWS, (long long)d->window);
    if (d->nwin == cap && mix_grow(d, &cap))
      return ferry__oom(err, -1,
                        (size_t)(cap ? 2 * cap : 64) *
                            (sizeof *d->win + 2 * (size_t)S * sizeof(int64_t)),
                        "mix: the table of %lld draw windows of %d sources",
                        (long long)(cap ? 2 * cap : 64), S);
    int64_t want = limit - x < d->window ? limit - x : d->window;
    int was[1024];
    for (int s = 0; s < S && s < 1024; s++)
      was[s] = ms->active[s];
    int64_t len = window_counts(d, ms, want, &end);
    for (int s = 0; s < S; s++) {
      d->cum[d->nwin * S + s] = ms->used[s];
      d->cnt[d->nwin * S + s] = ms->n[s];
      ms->used[s] += ms->n[s];
    }
    d->win[d->nwin++] = (ferry__draw_win){x, len};
    x += len;
    int changed = 0;
    for (int s = 0; s < S && s < 1024; s++)
      changed |= was[s] != ms->active[s];
    if (changed)
      renormalise(d, ms);
    if (len == 0)
      break;
  }
  d->D = x;
  if (d->D == 0)
    return ferry__seterr(err, FERRY_EEMPTY, "mix: the epoch holds no draw");
  return 0;
}

static int mix_init(ferry__draw *d, ferry__err *err) {
  const int S = d->p.nsources;
  if (S < 1 || S > 1024)
    return ferry__seterr(err, FERRY_EINVAL, "mix: %d sources (1 to 1024)", S);
  d->src = malloc((size_t)S * sizeof *d->src);
  d->src_block0 = malloc((size_t)S * sizeof *d->src_block0);
  d->src_nblocks = malloc((size_t)S * sizeof *d->src_nblocks);
  mix_state ms = {S,
                  calloc((size_t)S, sizeof(double)),
                  calloc((size_t)S, sizeof(double)),
                  calloc((size_t)S, sizeof(int64_t)),
                  calloc((size_t)S, sizeof(int64_t)),
                  calloc((size_t)S, sizeof(int))};
  int rc = (!d->src || !d->src_block0 || !d->src_nblocks || !ms.q || !ms.owed ||
            !ms.n || !ms.used || !ms.active)
               ? ferry__oom(err, -1,
                            (size_t)S *
                                (sizeof *d->src + sizeof *d->src_block0 +
                                 sizeof *d->src_nblocks + 2 * sizeof(double) +
                                 2 * sizeof(int64_t) + sizeof(int)),
                            "mix: the tables of %d sources", S)
               : 0;
  double sum = 0;
  for (int s = 0; !rc && s < S; s++) {
    d->src[s] = d->p.sources[s];
    const ferry__draw_source *x = &d->src[s];
    if (x->n < 1 || x->first < 0 || x->first + x->n > d->p.m->num_samples ||
        !(x->proportion > 0) || !isfinite(x->proportion))
      rc =
          ferry__seterr(err, FERRY_EINVAL,
                        "mix: source %d holds %lld samples at %lld with "
                        "proportion %g",
                        s, (long long)x->n, (long long)x->first, x->proportion);
    else {
      d->src_block0[s] = ferry__chunk_of_sample(&d->blocks, x->first);
      d->src_nblocks[s] =
          ferry__chunk_of_sample(&d->blocks, x->first + x->n - 1) -
          d->src_block0[s] + 1;
      if (ferry__chunk_get(&d->blocks, d->src_block0[s]).global_first !=
              x->first ||
          d->src_nblocks[s] != (x->n + d->p.block - 1) / d->p.block)
        rc = ferry__seterr(err, FERRY_EINTERNAL,
                           "mix: source %d is not one part of the manifest", s);
      sum += x->proportion;
      ms.active[s] = 1;
    }
  }
  for (int s = 0; !rc && s < S; s++)
    d->src[s].proportion /= sum;
  if (!rc)
    rc = mix_table(d, &ms, err);
  free(ms.q);
  free(ms.owed);
  free(ms.n);
  free(ms.used);
  free(ms.active);
  d->bytes += (size_t)d->nwin *
              (sizeof(ferry__draw_win) + 2 * (size_t)S * sizeof(int64_t));
  return rc;
}

/* ---- The sequence -------------------------------------------------------- */

int64_t ferry__draw_window_size(const ferry__draw_params *p) {
  /* a whole number of global batches (the epoch's first): its strata */
  int64_t gb = p->global_batch > 0 ? p->global_batch : 1;
  int64_t want =
      p->window
          ? p->window
          : 16 * p->block * (p->shuffle_buffer > 1 ? p->shuffle_buffer : 1);
  if (p->mode == FERRY__DRAW_MIX && p->mix_by_batch)
    want = gb;
  return (want + gb / 2) / gb > 1 ? (want + gb / 2) / gb * gb : gb;
}

int ferry__draw_init(ferry__draw *d, const ferry__draw_params *p,
                     ferry__err *err) {
  memset(d, 0, sizeof *d);
  d->p = *p;
  if (p->block < 1 || !p->m || p->m->num_samples < 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "sampling: block_size %lld or an empty dataset",
                         (long long)p->block);
  int rc = ferry__chunk_index_make(p->m, p->block, &d->blocks);
  if (rc)
    return ferry__oom(err, -1, (size_t)(p->m->nparts + 1) * sizeof(int64_t),
                      "sampling: the blocks of %lld parts",
                      (long long)p->m->nparts);
  d->gb = p->global_batch > 0 ? p->global_batch : 1;
  d->window = ferry__draw_window_size(p);
  if (p->mode == FERRY__DRAW_WEIGHTED && p->w)
    rc = ferry__draw_weighted_init(d, err);
  else if (p->mode == FERRY__DRAW_MIX && p->sources)
    rc = mix_init(d, err);
  else
    rc = ferry__seterr(err, FERRY_EINVAL, "sampling: no weights or sources");
  if (!rc && d->D < 1)
    rc = ferry__seterr(err, FERRY_EEMPTY, "sampling: the epoch holds no draw");
  d->bytes += (size_t)d->blocks.nchunks * 2 * sizeof(int64_t);
  if (rc)
    ferry__draw_free(d);
  return rc;
}

void ferry__draw_free(ferry__draw *d) {
  if (!d)
    return;
  ferry__chunk_index_free(&d->blocks);
  free(d->bweight);
  free(d->run_blk);
  free(d->run_first);
  free(d->src);
  free(d->win);
  free(d->cnt);
  free(d->cum);
  free(d->src_block0);
  free(d->src_nblocks);
  memset(d, 0, sizeof *d);
}

void ferry__draw_ctx_init(ferry__draw_ctx *c) {
  memset(c, 0, sizeof *c);
  c->blk = -1;
  c->win = -1;
  c->rep_b = -1;
  c->oq = -1;
}

void ferry__draw_ctx_free(ferry__draw_ctx *c) {
  free(c->rows);
  free(c->cum);
  free(c->piece_pos);
  free(c->piece_src);
  free(c->piece_c);
  ferry__draw_ctx_init(c);
}

int64_t ferry__draw_sample(const ferry__draw *d, ferry__draw_ctx *c,
                           int64_t i) {
  if (d->p.mode == FERRY__DRAW_MIX)
    return mix_sample(d, c, i);
  return ferry__draw_weighted_sample(d, c, i);
}

/* The draw window holding position x (< D): its index, first position
 * and length. */
static int64_t window_at(const ferry__draw *d, int64_t x, int64_t *first,
                         int64_t *len) {
  int64_t w;
  if (d->p.mode == FERRY__DRAW_MIX) {
    w = win_of(d, x);
    *first = d->win[w].first;
    *len = d->win[w].len;
  } else {
    w = x / d->window;
    *first = w * d->window;
    *len = d->D - *first < d->window ? d->D - *first : d->window;
  }
  return w;
}

/* A window of len draws, m = ceil(len / gb) batches of gb positions (the
 * last one short when gb does not divide len), is cut in gb strata of
 * consecutive draws: the first r0 = len - (m - 1) x gb of m draws, the
 * others of m - 1.  The window's k-th batch takes one draw of each
 * stratum it has a position for: stratum t's draw (k + shift_t) mod its
 * size, shift_t drawn for the stratum.  Every batch mixes draws of the
 * whole window, and the t-th position of every batch comes from stratum t
 * -- so a stretch of a batch's positions (a rank's share, for any number
 * of ranks) reads a stretch of the window's draws.  One generator value
 * per position (a keyed permutation per stratum cost three times as much,
 * and the plan is made on every rank for every epoch).  A window of one
 * batch or less is permuted whole.  The short window (the epoch's last,
 * or the whole epoch of a small dataset) is stratified too: permuted
 * whole, it gave every rank draws from all its blocks, so every rank read
 * them all (3x the bytes on 3 ranks for an epoch of one window). */
static int64_t premix_in(const ferry__draw *d, int64_t first, int64_t len,
                         uint64_t key, int64_t x) {
  const int64_t off = x - first, gb = d->gb;
  if (len <= gb)
    return first + ferry__prp(key, len, off);
  const int64_t m = (len + gb - 1) / gb, r0 = len - (m - 1) * gb;
  const int64_t k = off / gb, t = off % gb;
  const int64_t size = t < r0 ? m : m - 1;
  const int64_t start = t < r0 ? t * m : r0 * m + (t - r0) * (m - 1);
  int64_t shift =
      (int64_t)below(ferry__rand64(key, (uint64_t)t), (uint64_t)size);
  return first + start + (k + shift) % size;
}

static uint64_t window_key(const ferry__draw *d, int64_t w) {
  return ferry__rand_key(d->p.seed, FERRY__STREAM_DWINDOW, (uint64_t)d->p.epoch,
                         (uint64_t)w);
}

int64_t ferry__draw_premix(const ferry__draw *d, int64_t x) {
  int64_t first, len;
  int64_t w = window_at(d, x, &first, &len);
  return premix_in(d, first, len, window_key(d, w), x);
}

/* ---- Batches and the rank plan ------------------------------------------- */

int ferry__draw_cut_make(const ferry__draw *d, int64_t pos0, int64_t B, int P,
                         int tail, ferry__draw_cut *out, ferry__err *err) {
  return ferry__draw_cut_holes(d, pos0, B, P, tail, NULL, 0, out, err);
}

int ferry__draw_cut_holes(const ferry__draw *d, int64_t pos0, int64_t B, int P,
                          int tail, const int64_t *holes, int64_t nholes,
                          ferry__draw_cut *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  if (P < 1 || B < 1 || pos0 < 0 || pos0 > d->D || nholes < 0 ||
      nholes > d->D - pos0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "sampling: bad world size %d, batch size %lld or "
                         "position %lld of %lld draws",
                         P, (long long)B, (long long)pos0, (long long)d->D);
  for (int64_t k = 0; k < nholes; k++)
    if (holes[k] < pos0 || holes[k] >= d->D || (k && holes[k] <= holes[k - 1]))
      return ferry__seterr(err, FERRY_EINVAL,
                           "sampling: served position %lld (the %lld-th) out "
                           "of order or outside [%lld, %lld)",
                           (long long)holes[k], (long long)k, (long long)pos0,
                           (long long)d->D);
  const int64_t gb = B * P, R = d->D - pos0 - nholes;
  *out = (ferry__draw_cut){pos0, gb, P, tail, B, 0, gb, holes, nholes};
  if (tail == 0) { /* drop_last */
    out->num_batches = R / gb;
    if (out->num_batches == 0 && R > 0 && pos0 == 0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "batch_size %lld x %d ranks is more than the "
                           "epoch's %lld draws with tail=drop_last",
                           (long long)B, P, (long long)d->D);
  } else {
    out->num_batches = (R + gb - 1) / gb;
    if (tail == 2 && out->num_batches) /* partial */
      out->last = R - (out->num_batches - 1) * gb;
  }
  return 0;
}

/* Batch g's positions of rank r -- the r-th stretch of the global batch
 * -- mapped to their draws (premix; pads: themselves, D and beyond) into
 * out.  Returns the count. */
/* Position c of the stretch without its holes (c >= pos0) as a position
 * of the epoch: c plus the holes at or before the result (the first j
 * with holes[j] - j > c: holes[j] - j never decreases).  Positions past
 * the draws (pads) move by all the holes, so they stay past D. */
int64_t ferry__draw_unhole(const ferry__draw_cut *cut, int64_t c) {
  int64_t lo = 0, hi = cut->nholes;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (cut->holes[mid] - mid > c)
      hi = mid;
    else
      lo = mid + 1;
  }
  return c + lo;
}

static int64_t batch_slice(const ferry__draw *d, const ferry__draw_cut *cut,
                           int64_t g, int r, int64_t *out) {
  const int64_t x0 = cut->pos0 + g * cut->gb;
  const int64_t n = g == cut->num_batches - 1 ? cut->last : cut->gb;
  const int64_t a = n * r / cut->P, b = n * (r + 1) / cut->P;
  int64_t first = 0, len = 0;
  uint64_t key = 0;
  for (int64_t c = x0 + a; c < x0 + b; c++) {
    int64_t x = cut->nholes ? ferry__draw_unhole(cut, c) : c;
    if (x >= d->D) {
      out[c - x0 - a] = x;
      continue;
    }
    if (x >= first + len || x < first) /* the window's key, once */
      key = window_key(d, window_at(d, x, &first, &len));
    out[c - x0 - a] = premix_in(d, first, len, key, x);
  }
  return b - a;
}

int64_t ferry__draw_slot_pos(const ferry__draw *d, const ferry__draw_cut *cut,
                             int r, int64_t i) {
  (void)d;
  const int64_t B = cut->batch_size, g = i / B;
  const int64_t n = g == cut->num_batches - 1 ? cut->last : cut->gb;
  const int64_t c = cut->pos0 + g * cut->gb + n * r / cut->P + i % B;
  return cut->nholes ? ferry__draw_unhole(cut, c) : c;
}

int64_t ferry__draw_batch(const ferry__draw *d, const ferry__draw_cut *cut,
                          int64_t g, int rank, int64_t *out) {
  return batch_slice(d, cut, g, rank, out);
}

/* The sample of premix position i (pads repeat the epoch's first draws). */
static int64_t sample_of(const ferry__draw *d, ferry__draw_ctx *c, int64_t i) {
  return ferry__draw_sample(d, c, i < d->D ? i : (i - d->D) % d->D);
}

typedef struct plan_ctx {
  const ferry__draw *d;
  const ferry__draw_cut *cut;
  int rank;
  ferry__draw_ctx dc;
  int64_t *pos, *blk;
  /* the window's positions in order: a bitmap, its words' prefix counts,
   * and the samples of the positions in that order */
  uint64_t *bits;
  int64_t *before, *val;
  int64_t cap_words, cap_val;
} plan_ctx;

static void plan_ctx_free(plan_ctx *pc) {
  ferry__draw_ctx_free(&pc->dc);
  free(pc->pos);
  free(pc->blk);
  free(pc->bits);
  free(pc->before);
  free(pc->val);
}

/* The samples of the n positions pos[] into out[], evaluated in position
 * order (consecutive draws of one block follow each other, so the draw
 * context's caches hit), then put back in pos[]'s order. */
/* The block draw i reads: weighted, the block of its run (no draw inside
 * it is needed to plan the reads); a mix, its sample's block. */
static int64_t block_of(const ferry__draw *d, ferry__draw_ctx *c, int64_t i) {
  if (i >= d->D)
    i = (i - d->D) % d->D;
  if (d->p.mode == FERRY__DRAW_WEIGHTED)
    return ferry__draw_weighted_block(d, c, i);
  int64_t s = ferry__draw_sample(d, c, i);
  return s < 0 ? s : ferry__chunk_of_sample(&d->blocks, s);
}

static int samples_in_order(plan_ctx *pc, const int64_t *pos, int64_t n,
                            int64_t *out, int blocks) {
  if (n == 0)
    return 0;
  int64_t lo = pos[0], hi = pos[0];
  for (int64_t t = 1; t < n; t++) {
    lo = pos[t] < lo ? pos[t] : lo;
    hi = pos[t] > hi ? pos[t] : hi;
  }
  const int64_t words = (hi - lo) / 64 + 1;
  if (words > pc->cap_words) {
    free(pc->bits);
    free(pc->before);
    pc->bits = malloc((size_t)words * sizeof *pc->bits);
    pc->before = malloc((size_t)words * sizeof *pc->before);
    pc->cap_words = pc->bits && pc->before ? words : 0;
  }
  if (n > pc->cap_val) {
    free(pc->val);
    pc->val = malloc((size_t)n * sizeof *pc->val);
    pc->cap_val = pc->val ? n : 0;
  }
  if (!pc->cap_words || !pc->cap_val)
    return FERRY_ENOMEM;
  memset(pc->bits, 0, (size_t)words * sizeof *pc->bits);
  for (int64_t t = 0; t < n; t++) {
    uint64_t bit = (uint64_t)(pos[t] - lo);
    pc->bits[bit >> 6] |= UINT64_C(1) << (bit & 63);
  }
  int64_t k = 0;
  for (int64_t w = 0; w < words; w++) {
    pc->before[w] = k;
    for (uint64_t v = pc->bits[w]; v; v &= v - 1) {
      int64_t i = lo + w * 64 + __builtin_ctzll(v);
      int64_t s =
          blocks ? block_of(pc->d, &pc->dc, i) : sample_of(pc->d, &pc->dc, i);
      if (s < 0)
        return (int)s;
      pc->val[k++] = s;
    }
  }
  for (int64_t t = 0; t < n; t++) {
    uint64_t bit = (uint64_t)(pos[t] - lo);
    uint64_t below_bits =
        pc->bits[bit >> 6] & ((UINT64_C(1) << (bit & 63)) - 1);
    out[t] = pc->val[pc->before[bit >> 6] + __builtin_popcountll(below_bits)];
  }
  return 0;
}

/* Rank window k's draws: their samples into pc->blk (as block ids when
 * blocks), premix positions into pc->pos.  Returns the count or < 0. */
static int64_t window_draws(plan_ctx *pc, const ferry__rank_plan *p, int64_t k,
                            int blocks) {
  int64_t n = 0;
  int64_t g1 = (k + 1) * p->draw_nbw;
  if (g1 > p->draw_nb)
    g1 = p->draw_nb;
  for (int64_t g = k * p->draw_nbw; g < g1; g++) {
    n += batch_slice(pc->d, pc->cut, g, pc->rank, pc->pos + n);
  }
  int rc = samples_in_order(pc, pc->pos, n, pc->blk, blocks);
  return rc ? rc : n;
}

static int plan_grow(ferry__rank_plan *p, int64_t *cap, int64_t need) {
  if (need <= *cap)
    return 0;
  int64_t c = *cap * 2 > need ? *cap * 2 : need + 64;
  ferry__extent *e = realloc(p->extents, (size_t)c * sizeof *e);
  if (!e)
    return FERRY_ENOMEM;
  p->extents = e;
  *cap = c;
  return 0;
}

/* Window k's extents: its distinct blocks, adjacent ones of a part merged
 * (at most MAX_EXTENT_BLOCKS in one read). */
static int window_extents(plan_ctx *pc, ferry__rank_plan *p, int64_t k,
                          int64_t n, int64_t *cap) {
  radix_sort(pc->blk, pc->pos, n); /* pos is free once blk is made */
  int64_t prev = -1, merged = 0;
  for (int64_t t = 0; t < n; t++) {
    if (pc->blk[t] == prev)
      continue;
    ferry__chunk c = ferry__chunk_get(&pc->d->blocks, pc->blk[t]);
    ferry__extent *last = p->nextents ? &p->extents[p->nextents - 1] : NULL;
    if (last && last->window == k && prev == pc->blk[t] - 1 &&
        last->part == c.part && last->row + last->count == c.row &&
        merged < MAX_EXTENT_BLOCKS) {
      last->count += c.count;
      merged++;
    } else {
      if (plan_grow(p, cap, p->nextents + 1))
        return FERRY_ENOMEM;
      p->extents[p->nextents++] =
          (ferry__extent){c.part, c.row, c.count, c.global_first, k};
      merged = 1;
    }
    prev = pc->blk[t];
  }
  return 0;
}

static int plan_alloc(ferry__rank_plan *p, int64_t nw) {
  p->window_first_extent = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_need = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_samples = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_first_slot = calloc((size_t)nw + 1, sizeof(int64_t));
  return (!p->window_first_extent || !p->window_need || !p->window_samples ||
          !p->window_first_slot)
             ? FERRY_ENOMEM
             : 0;
}

static int64_t rank_pads(const ferry__draw *d, const ferry__draw_cut *cut,
                         int r) {
  if (!cut->num_batches)
    return 0;
  int64_t g = cut->num_batches - 1, x0 = cut->pos0 + g * cut->gb;
  int64_t n = cut->last, real = d->D - cut->nholes - x0;
  real = real < 0 ? 0 : (real > n ? n : real);
  int64_t a = n * r / cut->P, b = n * (r + 1) / cut->P;
  int64_t lo = a > real ? a : real;
  return b > lo ? b - lo : 0;
}

int ferry__draw_plan(const ferry__draw *d, const ferry__draw_cut *cut, int rank,
                     ferry__rank_plan *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  ferry__rank_plan *p = out;
  p->draw = d;
  p->draw_pos0 = cut->pos0;
  p->draw_gb = cut->gb;
  p->draw_last = cut->last;
  p->draw_P = cut->P;
  p->draw_rank = rank;
  p->draw_holes = cut->holes;
  p->draw_nholes = cut->nholes;
  p->batch_size = cut->batch_size;
  p->num_batches = cut->num_batches;
  p->draw_nb = cut->num_batches;
  p->draw_nbw = d->window / cut->gb > 1 ? d->window / cut->gb : 1;
  p->epoch_samples = d->D;
  int64_t served =
      cut->num_batches ? (cut->num_batches - 1) * cut->gb + cut->last : 0;
  int64_t left = d->D - cut->pos0 - cut->nholes - served;
  p->dropped = left > 0 ? left : 0;
  const int64_t nw = (p->draw_nb + p->draw_nbw - 1) / p->draw_nbw;
  p->nwindows = nw;
  plan_ctx pc = {.d = d, .cut = cut, .rank = rank};
  ferry__draw_ctx_init(&pc.dc);
  const int64_t most = p->draw_nbw * cut->gb + 1;
  pc.pos = malloc((size_t)most * sizeof *pc.pos);
  pc.blk = malloc((size_t)most * sizeof *pc.blk);
  int64_t cap = 0;
  int rc = (!pc.pos || !pc.blk || plan_alloc(p, nw)) ? FERRY_ENOMEM : 0;
  for (int64_t k = 0; !rc && k < nw; k++) {
    int64_t n = window_draws(&pc, p, k, 1);
    if (n < 0) {
      rc = (int)n;
      break;
    }
    p->window_first_extent[k] = p->nextents;
    p->window_need[k] = k * p->draw_nbw;
    p->window_samples[k] = n;
    p->window_first_slot[k + 1] = p->window_first_slot[k] + n;
    rc = window_extents(&pc, p, k, n, &cap);
  }
  if (!rc) {
    p->window_first_extent[nw] = p->nextents;
    p->nslots = p->window_first_slot[nw];
    p->padded = rank_pads(d, cut, rank);
  }
  plan_ctx_free(&pc);
  if (rc) {
    ferry__rank_plan_free(p);
    /* the window buffers, the window tables and the extents so far */
    return ferry__oom(err, -1,
                      (size_t)most * (sizeof *pc.pos + sizeof *pc.blk) +
                          ((size_t)nw + 1) * 4 * sizeof(int64_t) +
                          (size_t)cap * sizeof *p->extents,
                      "sampling: the plan of rank %d (%lld draw windows)", rank,
                      (long long)nw);
  }
  return 0;
}

int ferry__draw_window_slots(const ferry__rank_plan *p, int64_t w,
                             ferry__slot *out) {
  const ferry__draw *d = p->draw;
  ferry__draw_cut cut = {p->draw_pos0,  p->draw_gb, p->draw_P,    0,
                         p->batch_size, p->draw_nb, p->draw_last, p->draw_holes,
                         p->draw_nholes};
  plan_ctx pc = {.d = d, .cut = &cut, .rank = p->draw_rank};
  ferry__draw_ctx_init(&pc.dc);
  const int64_t most = p->draw_nbw * p->draw_gb + 1;
  pc.pos = malloc((size_t)most * sizeof *pc.pos);
  pc.blk = malloc((size_t)most * sizeof *pc.blk);
  int64_t n = (!pc.pos || !pc.blk) ? FERRY_ENOMEM : window_draws(&pc, p, w, 0);
  const int64_t e0 = p->window_first_extent[w],
                ne = p->window_first_extent[w + 1];
  for (int64_t t = 0; t < n; t++) {
    int64_t s = pc.blk[t], lo = e0, hi = ne - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (p->extents[mid].global_first <= s)
        lo = mid;
      else
        hi = mid - 1;
    }
    out[t] = (ferry__slot){s, lo, s - p->extents[lo].global_first,
                           (uint8_t)(pc.pos[t] >= d->D)};
  }
  plan_ctx_free(&pc);
  return n < 0 ? (int)n : 0;
}

uint64_t ferry__draw_checksum(const ferry__draw *d) {
  uint64_t h = FERRY__FNV_INIT;
  h = ferry__fnv1a(h, &d->D, sizeof d->D);
  h = ferry__fnv1a(h, &d->window, sizeof d->window);
  h = ferry__fnv1a(h, &d->total, sizeof d->total);
  h = ferry__fnv1a(h, &d->nruns, sizeof d->nruns);
  if (d->nwin) {
    h = ferry__fnv1a(h, d->win, (size_t)d->nwin * sizeof *d->win);
    h = ferry__fnv1a(h, d->cnt,
                     (size_t)(d->nwin * d->p.nsources) * sizeof *d->cnt);
  }
  ferry__draw_ctx c;
  ferry__draw_ctx_init(&c);
  for (int k = 0; k < 16; k++) { /* probes of the sequence */
    int64_t i = (int64_t)((uint64_t)d->D * (uint64_t)k / 16);
    int64_t s = ferry__draw_sample(d, &c, i);
    h = ferry__fnv1a(h, &s, sizeof s);
  }
  ferry__draw_ctx_free(&c);
  return h;
}
