/*
 * global.c - the plan of shuffle=global, window by window.
 *
 * Why this shape: a uniform deal of all samples to ranks needs either random
 * reads (DistributedSampler) or moving samples between ranks.  Here ranks
 * keep today's large sequential reads -- global window w is the run
 * S[w*G, (w+1)*G) of the permuted sample sequence, rank q reads its
 * balanced q-th part -- and the samples of the window are then dealt to
 * ranks and serve positions by keyed permutations, so that one
 * MPI_Alltoallv per window moves them.  With exchange=Q only ceil(Q * read)
 * of a rank's samples enter the deal; the rest stay on the rank, mixed with
 * what it receives.
 *
 * Why point-wise permutations: a table of the deal of a global window holds
 * G = P * per_rank entries on every rank, 8 GiB at 1,024 ranks and 1 M
 * samples per rank window.  A keyed Feistel permutation evaluated one point
 * at a time (forward and inverse) lets a rank compute only its own sends
 * and receives, in memory proportional to its own window.
 *
 * Pure: the same inputs give the same tables on every rank and platform
 * (64-bit integer arithmetic only, apart from ceil(Q * read) in IEEE
 * double, which is exact and the same everywhere).
 */
#include "config.h"
#include "plan/global.h"
#include "core/options.h"

#include <stdlib.h>
#include <string.h>

/* ---- The keyed permutation ------------------------------------------------
 *
 * An unbalanced Feistel network on the b bits of n - 1 (2^b >= n > 2^(b-1),
 * so fewer than 2 walks on average): x is split into a high part of b/2
 * bits and a low part of b - b/2 bits, and the rounds alternately XOR the
 * low part with F(high) and the high part with F(low), F(h) =
 * rand64(key, h * 8 + round) cut to the part's width.  Each round is its
 * own inverse, so the inverse runs them backwards.  Values >= n are walked
 * through the network again until one lands inside [0, n), which keeps it
 * a bijection of [0, n). */

#define PRP_ROUNDS 6

typedef struct prp_shape {
  int hb;                   /* bits of the low part */
  uint64_t lmask, hmask, n; /* masks of the two parts */
} prp_shape;

static prp_shape prp_shape_of(int64_t n) {
  int b = 64 - __builtin_clzll((unsigned long long)(n - 1));
  int lb = b - b / 2;
  prp_shape s = {lb, ((uint64_t)1 << lb) - 1, ((uint64_t)1 << (b / 2)) - 1,
                 (uint64_t)n};
  return s;
}

/* ferry__rand64(key, half * 8 + round), inlined: the hot loop of a plan. */
static inline uint64_t prp_f(uint64_t key, int round, uint64_t half) {
  uint64_t z = key + (half * 8 + (uint64_t)round + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t prp_round(const prp_shape *s, uint64_t key, int i,
                                 uint64_t v) {
  uint64_t lo = v & s->lmask, hi = v >> s->hb;
  if (i % 2 == 0)
    lo ^= prp_f(key, i, hi) & s->lmask;
  else
    hi ^= prp_f(key, i, lo) & s->hmask;
  return (hi << s->hb) | lo;
}

int64_t ferry__prp(uint64_t key, int64_t n, int64_t x) {
  if (x < 0 || x >= n) /* a bug upstream: fail loudly, never walk forever */
    return -1;
  if (n == 1)
    return x;
  prp_shape s = prp_shape_of(n);
  uint64_t v = (uint64_t)x;
  do {
    for (int i = 0; i < PRP_ROUNDS; i++)
      v = prp_round(&s, key, i, v);
  } while (v >= s.n);
  return (int64_t)v;
}

int64_t ferry__prp_inv(uint64_t key, int64_t n, int64_t x) {
  if (x < 0 || x >= n) /* a bug upstream: fail loudly, never walk forever */
    return -1;
  if (n == 1)
    return x;
  prp_shape s = prp_shape_of(n);
  uint64_t v = (uint64_t)x;
  do {
    for (int i = PRP_ROUNDS - 1; i >= 0; i--)
      v = prp_round(&s, key, i, v);
  } while (v >= s.n);
  return (int64_t)v;
}

/* Many points at once, the same values as ferry__prp (inv: _inv) of
 * (key[i], n[i], x[i]) -- key and n one entry for all when !per.  One
 * evaluation is a chain of dependent multiplies, bound by their latency:
 * PRP_LANES chains interleaved keep the multiplier busy (about twice the
 * throughput of one at a time, which cost a quarter of a rank's CPU under
 * shuffle=global).  A lane that finishes (after its cycle walk) takes the
 * next point.  out may be x. */
enum { PRP_LANES = 4 };

static void prp_batch(int inv, const uint64_t *key, const int64_t *n, int per,
                      const int64_t *x, int64_t *out, int64_t cnt) {
  prp_shape s[PRP_LANES];
  uint64_t v[PRP_LANES] = {0}, k[PRP_LANES] = {0};
  int64_t at[PRP_LANES], next = 0;
  for (int l = 0; l < PRP_LANES; l++) {
    s[l] = prp_shape_of(2);
    at[l] = -1;
  }
  for (;;) {
    int live = 0;
    for (int l = 0; l < PRP_LANES; l++) {
      while (at[l] < 0 && next < cnt) {
        int64_t i = next++, nn = n[per ? i : 0];
        if (x[i] < 0 || x[i] >= nn || nn == 1) {
          out[i] = x[i] < 0 || x[i] >= nn ? -1 : x[i];
          continue;
        }
        at[l] = i;
        s[l] = prp_shape_of(nn);
        k[l] = key[per ? i : 0];
        v[l] = (uint64_t)x[i];
      }
      live += at[l] >= 0;
    }
    if (!live)
      return;
    for (int r = 0; r < PRP_ROUNDS; r++) {
      int i = inv ? PRP_ROUNDS - 1 - r : r;
      for (int l = 0; l < PRP_LANES; l++)
        v[l] = prp_round(&s[l], k[l], i, v[l]);
    }
    for (int l = 0; l < PRP_LANES; l++)
      if (at[l] >= 0 && v[l] < s[l].n) {
        out[at[l]] = (int64_t)v[l];
        at[l] = -1;
      }
  }
}

void ferry__prp_many(uint64_t key, int64_t n, const int64_t *x, int64_t *out,
                     int64_t cnt) {
  prp_batch(0, &key, &n, 0, x, out, cnt);
}

/* ---- The epoch's shape -------------------------------------------------- */

/* floor(n * q / P) without overflowing n * q. */
static int64_t bal_lo(int64_t n, int P, int q) {
  return (n / P) * q + (n % P) * q / P;
}

void ferry__global_free(ferry__global *g) {
  if (!g)
    return;
  free(g->start);
  free(g->fpre);
  memset(g, 0, sizeof *g);
}

/* The tail rule over the whole epoch: D, num_batches, dropped, padded. */
static int global_tail(ferry__global *g, int resumed, ferry__err *err) {
  const int64_t PB = (int64_t)g->P * g->B;
  if (g->B > INT64_MAX / g->P)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option 'batch_size': %lld batches of %d ranks "
                         "overflow",
                         (long long)g->B, g->P);
  if (g->tail == FERRY__TAIL_DROP) {
    g->num_batches = g->M / PB;
    if (g->num_batches == 0 && !resumed)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'batch_size': %lld is larger than the "
                           "smallest rank's share (%lld of %lld samples over "
                           "%d ranks) with tail=drop_last; use a smaller "
                           "batch_size or tail=pad or tail=partial",
                           (long long)g->B, (long long)(g->M / g->P),
                           (long long)g->M, g->P);
    g->D = g->num_batches * PB;
  } else {
    g->num_batches = (g->M + PB - 1) / PB;
    g->D = g->M;
    if (g->tail == FERRY__TAIL_PAD)
      g->padded = g->num_batches * PB - g->M;
  }
  g->dropped = g->M - g->D;
  return 0;
}

/* per_rank = K * largest piece; one window when that covers a rank's
 * share (or overflows); none when nothing is dealt. */
static void shape(ferry__global *g) {
  int64_t share = (g->D + g->P - 1) / g->P;
  if (g->D == 0) {
    g->per_rank = g->G = g->nwindows = 0;
  } else if (g->K > share / g->largest || g->K * g->largest >= share) {
    g->per_rank = share;
    g->G = g->D;
    g->nwindows = 1;
  } else {
    g->per_rank = g->K * g->largest;
    g->G = g->per_rank * g->P;
    g->nwindows = (g->D + g->G - 1) / g->G;
  }
}

int ferry__global_init(ferry__global *g, const ferry__chunk *pieces,
                       int64_t npieces, const int64_t *perm,
                       const ferry__plan_params *pp, double exchange,
                       ferry__err *err) {
  memset(g, 0, sizeof *g);
  if (pp->world_size < 1 || pp->batch_size < 1 || !(exchange > 0.0) ||
      exchange > 1.0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "global plan: bad world size %d, batch size %lld or "
                         "exchange %g (0 < exchange <= 1)",
                         pp->world_size, (long long)pp->batch_size, exchange);
  g->pieces = pieces;
  g->perm = perm;
  g->npieces = npieces;
  g->P = pp->world_size;
  g->B = pp->batch_size;
  g->tail = pp->tail;
  g->exchange = exchange;
  g->seed = pp->seed;
  g->epoch = pp->epoch;
  g->start = malloc((size_t)(npieces + 1) * sizeof *g->start);
  if (!g->start)
    return ferry__oom(err, -1, (size_t)(npieces + 1) * sizeof *g->start,
                      "the global plan's %lld pieces", (long long)npieces);
  int64_t largest = 1;
  g->start[0] = 0;
  for (int64_t i = 0; i < npieces; i++) {
    int64_t c = pieces[perm[i]].count;
    g->start[i + 1] = g->start[i] + c;
    if (c > largest)
      largest = c;
  }
  g->M = g->start[npieces];
  int rc = 0;
  if (g->M == 0)
    rc = ferry__seterr(err, FERRY_EEMPTY, "the epoch holds no sample");
  if (!rc)
    rc = global_tail(g, 0, err);
  if (rc) {
    ferry__global_free(g);
    return rc;
  }
  g->K = pp->shuffle_buffer > 0 ? pp->shuffle_buffer : 1;
  g->largest = largest;
  shape(g);
  return 0;
}

static int64_t sent_of(double Q, int64_t read) {
  if (read <= 0)
    return 0;
  double want = Q * (double)read;
  int64_t k = (int64_t)want;
  if ((double)k < want)
    k++;
  return k < 1 ? 1 : k > read ? read : k;
}

void ferry__global_counts_of(const ferry__global *g, int64_t w, int q,
                             ferry__global_counts *c) {
  c->first = w * g->G;
  c->n = g->D - c->first < g->G ? g->D - c->first : g->G;
  c->read_lo = bal_lo(c->n, g->P, q);
  c->read = bal_lo(c->n, g->P, q + 1) - c->read_lo;
  c->sent = sent_of(g->exchange, c->read);
  c->pads = 0;
  if (g->tail == FERRY__TAIL_PAD && w == g->nwindows - 1)
    c->pads = g->num_batches * g->B - ferry__global_serve_first(g, w) - c->read;
}

int64_t ferry__global_serve_first(const ferry__global *g, int64_t w) {
  return w * g->per_rank;
}

int64_t ferry__global_rank_samples(const ferry__global *g, int q) {
  if (g->nwindows == 0)
    return 0;
  ferry__global_counts c;
  ferry__global_counts_of(g, g->nwindows - 1, q, &c);
  return ferry__global_serve_first(g, g->nwindows - 1) + c.read + c.pads;
}

/* ---- Resuming ----------------------------------------------------------- */

void ferry__global_cut(const ferry__global *g, int64_t served, int64_t *w,
                       int64_t *off) {
  int64_t pos = served * g->B;
  *w = 0;
  *off = 0;
  if (g->nwindows == 0)
    return;
  *w = pos / g->per_rank;
  if (*w > g->nwindows - 1)
    *w = g->nwindows - 1;
  *off = pos - *w * g->per_rank;
}

int ferry__global_resume(ferry__global *ch, const ferry__global *pg,
                         int64_t served, int world_size, ferry__err *err) {
  memset(ch, 0, sizeof *ch);
  if (world_size < 1)
    return ferry__seterr(err, FERRY_EINVAL, "resume: world size %d",
                         world_size);
  if (served < 0 || served > pg->num_batches)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "resume: %lld batches served, but that part of the "
                         "epoch has %lld batches over %d ranks",
                         (long long)served, (long long)pg->num_batches, pg->P);
  ch->pieces = pg->pieces;
  ch->perm = pg->perm;
  ch->npieces = pg->npieces;
  ch->P = world_size;
  ch->B = pg->B;
  ch->tail = pg->tail;
  ch->exchange = pg->exchange;
  ch->epoch = pg->epoch;
  ch->K = pg->K;
  ch->largest = pg->largest;
  ch->parent = pg;
  ch->level = pg->level + 1;
  /* fresh permutations for the rest, the same on every rank */
  ch->seed =
      ferry__rand_key(pg->seed, FERRY__STREAM_GDEAL,
                      ~(uint64_t)0 - (uint64_t)ch->level, (uint64_t)served);
  ferry__global_cut(pg, served, &ch->cut_window, &ch->cut_off);
  ch->fpre = malloc((size_t)(pg->P + 1) * sizeof *ch->fpre);
  if (!ch->fpre)
    return ferry__oom(err, -1, (size_t)(pg->P + 1) * sizeof *ch->fpre,
                      "the resumed global plan's %d ranks", pg->P);
  ch->fpre[0] = 0;
  for (int r = 0; r < pg->P; r++) {
    ferry__global_counts c;
    ferry__global_counts_of(pg, ch->cut_window, r, &c);
    int64_t u = pg->nwindows ? c.read - ch->cut_off : 0;
    ch->fpre[r + 1] = ch->fpre[r] + (u > 0 ? u : 0);
  }
  ch->nF = ch->fpre[pg->P];
  int64_t rest = (ch->cut_window + 1) * pg->G;
  ch->rest_lo = rest < pg->D ? rest : pg->D;
  ch->M = ch->nF + pg->D - ch->rest_lo;
  int rc = global_tail(ch, 1, err);
  if (rc) {
    ferry__global_free(ch);
    return rc;
  }
  ch->dropped += pg->dropped;
  shape(ch);
  return 0;
}

/* ---- One window --------------------------------------------------------- */

static uint64_t key_deal(const ferry__global *g, int64_t w) {
  return ferry__rand_key(g->seed, FERRY__STREAM_GDEAL, (uint64_t)g->epoch,
                         (uint64_t)w);
}

static uint64_t key_rank(const ferry__global *g, int stream, int64_t w, int q) {
  uint64_t k = ferry__rand_key(g->seed, (uint64_t)stream, (uint64_t)g->epoch,
                               (uint64_t)w);
  return ferry__rand_key(k, (uint64_t)stream, (uint64_t)q, 0);
}

/* The window's counts for every rank: sent prefix xpre[P+1] and pad
 * prefix ppre[P+1] (pads of ranks before q). */
typedef struct wctx {
  const ferry__global *g;
  int64_t w;
  ferry__global_counts *cnt; /* [P] */
  int64_t *xpre, *ppre;      /* [P+1] */
  uint64_t kdeal;
  uint64_t *kkeep, *kserve; /* [P] keys of each rank's permutations */
  ferry__extent *ext;       /* scratch: one rank's extents */
  int64_t *extpre;          /* [cap+1] read items before each extent */
  int64_t next, extcap;
} wctx;

static int cmp_ext_pos(const void *a, const void *b) {
  const ferry__extent *x = a, *y = b;
  if (x->part != y->part)
    return (x->part > y->part) - (x->part < y->part);
  return (x->row > y->row) - (x->row < y->row);
}

static int wctx_init(wctx *c, const ferry__global *g, int64_t w);
static void wctx_free(wctx *c);
static void deal_src(const wctx *c, int r, int64_t j, int64_t *local, int *sr,
                     int64_t *si);
static int layout(wctx *c, int q);

/* Append e to c's extents.  0 or FERRY_ENOMEM. */
static int ext_push(wctx *c, ferry__extent e) {
  if (c->next == c->extcap) {
    int64_t cap = c->extcap ? 2 * c->extcap : 16;
    ferry__extent *v = realloc(c->ext, (size_t)cap * sizeof *v);
    if (!v)
      return FERRY_ENOMEM;
    c->ext = v;
    int64_t *p = realloc(c->extpre, (size_t)(cap + 1) * sizeof *p);
    if (!p)
      return FERRY_ENOMEM;
    c->extpre = p;
    c->extcap = cap;
  }
  c->ext[c->next++] = e;
  return 0;
}

/* The rows of S[a, a+len): runs of the permuted pieces. */
static int collect_pieces(const ferry__global *g, int64_t a, int64_t len,
                          wctx *out) {
  /* the piece holding position a: last i with start[i] <= a */
  int64_t lo = 0, hi = g->npieces - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (g->start[mid] <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  for (int64_t i = lo; len > 0; i++) {
    const ferry__chunk *pc = &g->pieces[g->perm[i]];
    int64_t off = a - g->start[i];
    int64_t take = pc->count - off < len ? pc->count - off : len;
    if (ext_push(out, (ferry__extent){pc->part, pc->row + off, take,
                                      pc->global_first + off, out->w}))
      return FERRY_ENOMEM;
    a += take;
    len -= take;
  }
  return 0;
}

typedef struct src_item {
  int q;
  int64_t i;
} src_item;

static int cmp_src_item(const void *a, const void *b) {
  const src_item *x = a, *y = b;
  if (x->q != y->q)
    return (x->q > y->q) - (x->q < y->q);
  return (x->i > y->i) - (x->i < y->i);
}

static int collect_seq(const ferry__global *g, int64_t a, int64_t len,
                       wctx *out);

/* The rows of F[a, a+len) of a resumed plan: each position is (old rank r,
 * old position j) of the parent's cut window; the parent's deal says which
 * rank read it, that rank's layout which row it is. */
static int collect_cut(const ferry__global *g, int64_t a, int64_t len,
                       wctx *out) {
  const ferry__global *pg = g->parent;
  src_item *v = malloc((size_t)(len > 0 ? len : 1) * sizeof *v);
  wctx pc;
  int rc = v ? wctx_init(&pc, pg, g->cut_window) : FERRY_ENOMEM;
  for (int64_t t = a; !rc && t < a + len; t++) {
    int r = (int)ferry__last_le(g->fpre, pg->P, t);
    int64_t j = g->cut_off + t - g->fpre[r], local, si;
    int sr;
    deal_src(&pc, r, j, &local, &sr, &si);
    v[t - a] = local >= 0 ? (src_item){r, local} : (src_item){sr, si};
  }
  if (!rc)
    qsort(v, (size_t)len, sizeof *v, cmp_src_item);
  for (int64_t k = 0; !rc && k < len; k++) {
    if (k == 0 || v[k].q != v[k - 1].q)
      rc = layout(&pc, v[k].q);
    if (rc)
      break;
    int64_t lo = 0, hi = pc.next - 1; /* the extent of item v[k].i */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (pc.extpre[mid] <= v[k].i)
        lo = mid;
      else
        hi = mid - 1;
    }
    const ferry__extent *e = &pc.ext[lo];
    int64_t off = v[k].i - pc.extpre[lo];
    rc = ext_push(out, (ferry__extent){e->part, e->row + off, 1,
                                       e->global_first + off, out->w});
  }
  if (v)
    wctx_free(&pc);
  free(v);
  return rc;
}

/* The rows of g's sample sequence [a, a+len), in any order. */
static int collect_seq(const ferry__global *g, int64_t a, int64_t len,
                       wctx *out) {
  if (len <= 0)
    return 0;
  if (!g->parent)
    return collect_pieces(g, a, len, out);
  int rc = 0;
  if (a < g->nF) {
    int64_t take = g->nF - a < len ? g->nF - a : len;
    rc = collect_cut(g, a, take, out);
    a += take;
    len -= take;
  }
  if (!rc && len > 0)
    rc = collect_seq(g->parent, g->rest_lo + (a - g->nF), len, out);
  return rc;
}

/* Rank q's extents in window w (sorted by position, adjacent ones merged)
 * into c->ext / c->next, with c->extpre.  Returns 0 or FERRY_ENOMEM. */
static int layout(wctx *c, int q) {
  const ferry__global_counts *k = &c->cnt[q];
  c->next = 0;
  if (k->read == 0)
    return 0;
  if (collect_seq(c->g, k->first + k->read_lo, k->read, c))
    return FERRY_ENOMEM;
  qsort(c->ext, (size_t)c->next, sizeof *c->ext, cmp_ext_pos);
  int64_t m = 0;
  for (int64_t i = 0; i < c->next; i++) {
    ferry__extent *last = m ? &c->ext[m - 1] : NULL;
    c->ext[i].window = c->w;
    if (last && last->part == c->ext[i].part &&
        last->row + last->count == c->ext[i].row)
      last->count += c->ext[i].count;
    else
      c->ext[m++] = c->ext[i];
  }
  c->next = m;
  c->extpre[0] = 0;
  for (int64_t i = 0; i < m; i++)
    c->extpre[i + 1] = c->extpre[i] + c->ext[i].count;
  return 0;
}

/* Global index of read item i of the rank whose layout is in c. */
static int64_t layout_sample(const wctx *c, int64_t i) {
  int64_t lo = 0, hi = c->next - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (c->extpre[mid] <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  return c->ext[lo].global_first + (i - c->extpre[lo]);
}

static int wctx_init(wctx *c, const ferry__global *g, int64_t w) {
  memset(c, 0, sizeof *c);
  c->g = g;
  c->w = w;
  c->cnt = malloc((size_t)g->P * sizeof *c->cnt);
  c->xpre = malloc((size_t)(g->P + 1) * sizeof *c->xpre);
  c->ppre = malloc((size_t)(g->P + 1) * sizeof *c->ppre);
  c->kkeep = malloc((size_t)g->P * sizeof *c->kkeep);
  c->kserve = malloc((size_t)g->P * sizeof *c->kserve);
  if (!c->cnt || !c->xpre || !c->ppre || !c->kkeep || !c->kserve)
    return FERRY_ENOMEM;
  c->xpre[0] = c->ppre[0] = 0;
  for (int q = 0; q < g->P; q++) {
    ferry__global_counts_of(g, w, q, &c->cnt[q]);
    c->xpre[q + 1] = c->xpre[q] + c->cnt[q].sent;
    c->ppre[q + 1] = c->ppre[q] + c->cnt[q].pads;
    c->kkeep[q] = key_rank(g, FERRY__STREAM_GKEEP, w, q);
    c->kserve[q] = key_rank(g, FERRY__STREAM_GSERVE, w, q);
  }
  c->kdeal = key_deal(g, w);
  return 0;
}

static void wctx_free(wctx *c) {
  free(c->cnt);
  free(c->xpre);
  free(c->ppre);
  free(c->kkeep);
  free(c->kserve);
  free(c->ext);
  free(c->extpre);
}

/* Where rank r's real serve position j comes from: *local = own read item
 * (or -1), else (*sr, *si) = sending rank and its read item. */
static void deal_src(const wctx *c, int r, int64_t j, int64_t *local, int *sr,
                     int64_t *si) {
  const ferry__global *g = c->g;
  const ferry__global_counts *k = &c->cnt[r];
  int64_t kept = k->read - k->sent;
  int64_t m = ferry__prp_inv(c->kserve[r], k->read, j);
  if (m < kept) {
    *local = ferry__prp_inv(c->kkeep[r], k->read, m);
    *sr = -1;
    *si = -1;
    return;
  }
  int64_t X = c->xpre[g->P];
  int64_t p = ferry__prp(c->kdeal, X, c->xpre[r] + m - kept);
  int q = (int)ferry__last_le(c->xpre, g->P, p);
  const ferry__global_counts *kq = &c->cnt[q];
  int64_t t = kq->read - kq->sent + p - c->xpre[q];
  *local = -1;
  *sr = q;
  *si = ferry__prp_inv(c->kkeep[q], kq->read, t);
}

/* Pad k of rank r repeats window item (ppre[r] + k) mod n: read by rank q,
 * its read item *si. */
static int pad_src(const wctx *c, int r, int64_t k, int64_t *si) {
  const ferry__global *g = c->g;
  int64_t n = c->cnt[0].n;
  int64_t item = (c->ppre[r] + k) % n;
  int lo = 0, hi = g->P - 1; /* last q with read_lo <= item: it reads it */
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (c->cnt[mid].read_lo <= item)
      lo = mid;
    else
      hi = mid - 1;
  }
  *si = item - c->cnt[lo].read_lo;
  return lo;
}

typedef struct sendent {
  int rank;
  int64_t pos, item;
} sendent;

static int cmp_sendent(const void *a, const void *b) {
  const sendent *x = a, *y = b;
  if (x->rank != y->rank)
    return (x->rank > y->rank) - (x->rank < y->rank);
  return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sort e[0..n) by (rank, pos): an LSD radix sort, 11 bits a pass, on the
 * key rank * span + pos, through tmp[0..n) (qsort cost a third of a
 * window's plan). */
static void sort_sends(sendent *e, sendent *tmp, int64_t n, int P) {
  uint64_t span = 1;
  for (int64_t i = 0; i < n; i++)
    if ((uint64_t)e[i].pos >= span)
      span = (uint64_t)e[i].pos + 1;
  if (n < 64 || span > UINT64_MAX / (uint64_t)P) {
    qsort(e, (size_t)n, sizeof *e, cmp_sendent);
    return;
  }
  int bits = 64 - __builtin_clzll((unsigned long long)((uint64_t)P * span));
  sendent *src = e, *dst = tmp;
  int64_t cnt[2049];
  for (int shift = 0; shift < bits; shift += 11) {
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < n; i++)
      cnt[(((uint64_t)src[i].rank * span + (uint64_t)src[i].pos) >> shift &
           2047) +
          1]++;
    for (int d = 0; d < 2048; d++)
      cnt[d + 1] += cnt[d];
    for (int64_t i = 0; i < n; i++)
      dst[cnt[((uint64_t)src[i].rank * span + (uint64_t)src[i].pos) >> shift &
              2047]++] = src[i];
    sendent *t = src;
    src = dst;
    dst = t;
  }
  if (src != e)
    memcpy(e, src, (size_t)n * sizeof *e);
}

void ferry__global_window_free(ferry__global_window *x) {
  if (!x)
    return;
  free(x->extents);
  free(x->read_sample);
  free(x->dest_rank);
  free(x->dest_pos);
  free(x->send_item);
  free(x->send_pos);
  free(x->sendcounts);
  free(x->sdispls);
  free(x->recvcounts);
  free(x->rdispls);
  free(x->serve_sample);
  free(x->serve_local);
  free(x->src_rank);
  free(x->src_off);
  free(x->serve_padded);
  free(x->scratch);
  memset(x, 0, sizeof *x);
}

static size_t n1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

/* Grow x->field to n entries (its old ones kept on failure). */
#define GROW(x, field, n)                                                      \
  do {                                                                         \
    void *q_ = realloc((x)->field, (size_t)(n) * sizeof *(x)->field);          \
    if (!q_)                                                                   \
      return FERRY_ENOMEM;                                                     \
    (x)->field = q_;                                                           \
  } while (0)

/* The table's arrays for nextents, nread, nserve and P, reusing what an
 * earlier build left; counts and pad flags zeroed. */
static int window_alloc(ferry__global_window *x, int P) {
  if (x->cap_ext < (int64_t)n1(x->nextents)) {
    GROW(x, extents, n1(x->nextents));
    x->cap_ext = (int64_t)n1(x->nextents);
  }
  if (x->cap_read < (int64_t)n1(x->nread)) {
    GROW(x, read_sample, n1(x->nread));
    GROW(x, dest_rank, n1(x->nread));
    GROW(x, dest_pos, n1(x->nread));
    x->cap_read = (int64_t)n1(x->nread);
  }
  if (x->cap_serve < (int64_t)n1(x->nserve)) {
    GROW(x, serve_sample, n1(x->nserve));
    GROW(x, serve_local, n1(x->nserve));
    GROW(x, src_rank, n1(x->nserve));
    GROW(x, src_off, n1(x->nserve));
    GROW(x, serve_padded, n1(x->nserve));
    x->cap_serve = (int64_t)n1(x->nserve);
  }
  if (x->cap_P < P) {
    GROW(x, sendcounts, P);
    GROW(x, sdispls, P);
    GROW(x, recvcounts, P);
    GROW(x, rdispls, P);
    x->cap_P = P;
  }
  memset(x->sendcounts, 0, (size_t)P * sizeof *x->sendcounts);
  memset(x->sdispls, 0, (size_t)P * sizeof *x->sdispls);
  memset(x->recvcounts, 0, (size_t)P * sizeof *x->recvcounts);
  memset(x->rdispls, 0, (size_t)P * sizeof *x->rdispls);
  memset(x->serve_padded, 0, n1(x->nserve));
  return 0;
}

/* The build's scratch, at least bytes. */
static void *scratch(ferry__global_window *x, size_t bytes) {
  if (x->scratch_bytes < bytes) {
    void *p = realloc(x->scratch, bytes);
    if (!p)
      return NULL;
    x->scratch = p;
    x->scratch_bytes = bytes;
  }
  return x->scratch;
}

/* Every read item's destination, deal_dest's values computed in three
 * batched stages (prp_batch): dest_rank[i] is -1 - rank for an item that
 * enters the deal (build_sends turns it back).  ENOMEM or 0. */
static int batch_dests(const wctx *c, ferry__global_window *x) {
  const ferry__global *g = c->g;
  const int r = x->rank;
  const ferry__global_counts *k = &c->cnt[r];
  int64_t nr = x->nread, kept = k->read - k->sent, X = c->xpre[g->P], nsl = 0;
  int64_t *a = scratch(x, 4 * n1(nr) * sizeof *a);
  if (!a)
    return FERRY_ENOMEM;
  int64_t *sl = a + n1(nr), *ns = sl + n1(nr);
  uint64_t *ks = (uint64_t *)(ns + n1(nr));
  for (int64_t i = 0; i < nr; i++)
    a[i] = i;
  prp_batch(0, &c->kkeep[r], &k->read, 0, a, a, nr);
  for (int64_t i = 0; i < nr; i++)
    if (a[i] >= kept)
      sl[nsl++] = c->xpre[r] + a[i] - kept;
  prp_batch(1, &c->kdeal, &X, 0, sl, sl, nsl);
  for (int64_t i = 0, u = 0; i < nr; i++) {
    int d = r;
    if (a[i] >= kept) {
      int64_t slot = sl[u++];
      d = (int)ferry__last_le(c->xpre, g->P, slot);
      a[i] = c->cnt[d].read - c->cnt[d].sent + slot - c->xpre[d];
      x->dest_rank[i] = -1 - d;
    } else {
      x->dest_rank[i] = d;
    }
    ks[i] = c->kserve[d];
    ns[i] = c->cnt[d].read;
  }
  prp_batch(0, ks, ns, 1, a, x->dest_pos, nr);
  return 0;
}

/* The sending side: every read item's destination, the pad copies other
 * ranks take from this one, sorted into the send buffer.  ENOMEM or 0. */
static int build_sends(const wctx *c, ferry__global_window *x) {
  const ferry__global *g = c->g;
  const int r = x->rank;
  int64_t npadsend = 0;
  int64_t n = c->cnt[0].n;
  /* pads this rank sends: window items it read, taken at ppre[P] slots */
  const ferry__global_counts *k = &c->cnt[r];
  int64_t tot = c->ppre[g->P];
  if (tot > 0 && k->read > 0)
    for (int64_t u = 0; u < tot; u++) {
      int64_t item = u % n;
      npadsend += item >= k->read_lo && item < k->read_lo + k->read;
    }
  int64_t cap = k->sent + npadsend;
  if (batch_dests(c, x))
    return FERRY_ENOMEM;
  sendent *e = scratch(x, 2 * n1(cap) * sizeof *e); /* and the sort's */
  if (!e)
    return FERRY_ENOMEM;
  int64_t ne = 0;
  for (int64_t i = 0; i < x->nread; i++)
    if (x->dest_rank[i] < 0) {
      x->dest_rank[i] = -1 - x->dest_rank[i];
      e[ne++] = (sendent){x->dest_rank[i], x->dest_pos[i], i};
    }
  for (int q = 0; q < g->P && npadsend > 0; q++)
    for (int64_t j = 0; j < c->cnt[q].pads; j++) {
      int64_t si;
      if (pad_src(c, q, j, &si) == r)
        e[ne++] = (sendent){q, c->cnt[q].read + j, si};
    }
  sort_sends(e, e + n1(cap), ne, g->P);
  x->nsend = ne;
  if (x->cap_send < (int64_t)n1(ne)) {
    GROW(x, send_item, n1(ne));
    GROW(x, send_pos, n1(ne));
    x->cap_send = (int64_t)n1(ne);
  }
  for (int64_t i = 0; i < ne; i++) {
    x->send_item[i] = e[i].item;
    x->send_pos[i] = e[i].pos;
    x->sendcounts[e[i].rank]++;
  }
  for (int q = 1; q < g->P; q++)
    x->sdispls[q] = x->sdispls[q - 1] + x->sendcounts[q - 1];
  return 0;
}

/* The sources of real serve positions j < read, deal_src's values
 * computed in batched stages (prp_batch): serve_local[j], src_rank[j] and
 * the source's read item in serve_sample[j].  ENOMEM or 0. */
static int batch_srcs(const wctx *c, ferry__global_window *x) {
  const ferry__global *g = c->g;
  const int r = x->rank;
  const ferry__global_counts *k = &c->cnt[r];
  int64_t nr = k->read, kept = k->read - k->sent, X = c->xpre[g->P];
  int64_t *a = scratch(x, 5 * n1(nr) * sizeof *a);
  if (!a)
    return FERRY_ENOMEM;
  int64_t *kl = a + n1(nr), *sl = kl + n1(nr), *ns = sl + n1(nr);
  uint64_t *ks = (uint64_t *)(ns + n1(nr));
  int64_t nk = 0, nsl = 0;
  for (int64_t j = 0; j < nr; j++)
    a[j] = j;
  prp_batch(1, &c->kserve[r], &k->read, 0, a, a, nr);
  for (int64_t j = 0; j < nr; j++)
    if (a[j] < kept)
      kl[nk++] = a[j];
    else
      sl[nsl++] = c->xpre[r] + a[j] - kept;
  prp_batch(1, &c->kkeep[r], &k->read, 0, kl, kl, nk);
  prp_batch(0, &c->kdeal, &X, 0, sl, sl, nsl);
  for (int64_t j = 0, u = 0, v = 0; j < nr; j++) {
    if (a[j] < kept) {
      x->serve_local[j] = kl[u++];
      x->src_rank[j] = -1;
      continue;
    }
    int64_t p = sl[v];
    int q = (int)ferry__last_le(c->xpre, g->P, p);
    x->serve_local[j] = -1;
    x->src_rank[j] = q;
    sl[v] = c->cnt[q].read - c->cnt[q].sent + p - c->xpre[q];
    ks[v] = c->kkeep[q];
    ns[v++] = c->cnt[q].read;
  }
  prp_batch(1, ks, ns, 1, sl, sl, nsl);
  for (int64_t j = 0, v = 0; j < nr; j++)
    x->serve_sample[j] = x->src_rank[j] >= 0 ? sl[v++] : -1;
  return 0;
}

/* The serving side: sources of every serve position, receive offsets and
 * counts, and the global index served (from each source's layout). */
static int build_serves(wctx *c, ferry__global_window *x) {
  const ferry__global *g = c->g;
  const int r = x->rank;
  const ferry__global_counts *k = &c->cnt[r];
  if (batch_srcs(c, x))
    return FERRY_ENOMEM;
  for (int64_t j = 0; j < x->nserve; j++) {
    int64_t local = -1, si = -1;
    int sr = -1;
    if (j < k->read) {
      local = x->serve_local[j];
      sr = x->src_rank[j];
      si = x->serve_sample[j];
    } else {
      sr = pad_src(c, r, j - k->read, &si);
      x->serve_padded[j] = 1;
    }
    x->serve_local[j] = local;
    x->src_rank[j] = sr;
    x->serve_sample[j] = local >= 0 ? x->read_sample[local] : si;
    x->src_off[j] = sr >= 0 ? x->recvcounts[sr]++ : -1;
  }
  for (int q = 1; q < g->P; q++)
    x->rdispls[q] = x->rdispls[q - 1] + x->recvcounts[q - 1];
  x->nrecv = x->rdispls[g->P - 1] + x->recvcounts[g->P - 1];
  /* serve_sample holds the source's read item: map it through the
   * source's layout, one source at a time (positions in receive order). */
  int64_t *ord = scratch(x, n1(x->nrecv) * sizeof *ord);
  if (!ord)
    return FERRY_ENOMEM;
  for (int64_t j = 0; j < x->nserve; j++)
    if (x->src_rank[j] >= 0)
      ord[x->rdispls[x->src_rank[j]] + x->src_off[j]] = j;
  int rc = 0;
  for (int q = 0; q < g->P && !rc; q++) {
    if (!x->recvcounts[q])
      continue;
    rc = layout(c, q);
    for (int64_t o = 0; !rc && o < x->recvcounts[q]; o++) {
      int64_t j = ord[x->rdispls[q] + o];
      x->serve_sample[j] = layout_sample(c, x->serve_sample[j]);
    }
  }
  return rc;
}

/* About what one rank's window table takes (an out-of-memory message): a
 * window's per_rank rows read, sent and served, and the counts of P ranks. */
static size_t window_bytes(const ferry__global *g) {
  const size_t row = sizeof(ferry__extent) + 2 * sizeof(int64_t) + sizeof(int) +
                     2 * sizeof(int64_t) + 3 * sizeof(int64_t) + sizeof(int) +
                     sizeof(uint8_t);
  return (size_t)(g->per_rank > 0 ? g->per_rank : 1) * row +
         (size_t)g->P * 4 * sizeof(int64_t);
}

int ferry__global_window_build(const ferry__global *g, int rank, int64_t w,
                               ferry__global_window *out, ferry__err *err) {
  if (rank < 0 || rank >= g->P || w < 0 || w >= g->nwindows)
    return ferry__seterr(err, FERRY_EINVAL,
                         "global plan: rank %d or window %lld out of range "
                         "(%d ranks, %lld windows)",
                         rank, (long long)w, g->P, (long long)g->nwindows);
  wctx c;
  int rc = wctx_init(&c, g, w);
  if (!rc)
    rc = layout(&c, rank);
  if (!rc) {
    out->window = w;
    out->rank = rank;
    out->P = g->P;
    out->serve_first = ferry__global_serve_first(g, w);
    out->nread = c.cnt[rank].read;
    out->npads = c.cnt[rank].pads;
    out->nserve = out->nread + out->npads;
    out->nextents = c.next;
    rc = window_alloc(out, g->P);
  }
  if (!rc) {
    if (c.next)
      memcpy(out->extents, c.ext, (size_t)c.next * sizeof *c.ext);
    for (int64_t i = 0; i < out->nread; i++)
      out->read_sample[i] = layout_sample(&c, i);
    rc = build_sends(&c, out);
  }
  if (!rc)
    rc = build_serves(&c, out);
  wctx_free(&c);
  if (rc) {
    ferry__global_window_free(out);
    return ferry__oom(err, -1, window_bytes(g),
                      "the global plan's window %lld of rank %d (%lld "
                      "samples per rank window)",
                      (long long)w, rank, (long long)g->per_rank);
  }
  return 0;
}

int ferry__global_reads(const ferry__global *g, int q, int64_t w,
                        ferry__extent **ext, int64_t *n, ferry__err *err) {
  *ext = NULL;
  *n = 0;
  if (q < 0 || q >= g->P || w < 0 || w >= g->nwindows)
    return ferry__seterr(err, FERRY_EINVAL,
                         "global plan: rank %d or window %lld out of range "
                         "(%d ranks, %lld windows)",
                         q, (long long)w, g->P, (long long)g->nwindows);
  wctx c;
  int rc = wctx_init(&c, g, w);
  if (!rc)
    rc = layout(&c, q);
  if (!rc) {
    *ext = c.ext ? c.ext : malloc(sizeof **ext);
    *n = c.next;
    if (*ext == c.ext)
      c.ext = NULL; /* handed over */
    else if (!*ext)
      rc = FERRY_ENOMEM;
  }
  wctx_free(&c);
  if (rc)
    return ferry__oom(
        err, -1, (size_t)(g->per_rank > 0 ? g->per_rank : 1) * sizeof **ext,
        "the global plan's reads of rank %d in window %lld", q, (long long)w);
  return 0;
}

/* ---- Memory ------------------------------------------------------------- */

static size_t sat_mul(int64_t rows, size_t bytes) {
  if (rows <= 0)
    return 0;
  return (uint64_t)rows > SIZE_MAX / bytes ? SIZE_MAX : (size_t)rows * bytes;
}

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* The most pieces a run of len samples of S touches (two pointers over
 * the pieces' starts); len itself for a resumed plan, whose reads of the
 * cut window are single rows. */
static int64_t max_pieces(const ferry__global *g, int64_t len) {
  if (g->parent || len <= 0)
    return len > 0 ? len : 0;
  int64_t best = 0;
  for (int64_t i = 0, j = 0; i < g->npieces; i++) {
    if (j < i)
      j = i;
    /* pieces i..j-1 start inside [start[i], start[i] + len) */
    while (j < g->npieces && g->start[j] < g->start[i] + len)
      j++;
    if (j - i + 1 > best)
      best = j - i + 1; /* and the one a run starting inside i-1 reaches */
  }
  return best < len ? best : len;
}

void ferry__global_memory_of(const ferry__global *g, size_t row_bytes,
                             ferry__global_memory *m) {
  memset(m, 0, sizeof *m);
  if (g->nwindows == 0)
    return;
  /* every full window is per_rank on every rank; the last one is looked at
   * rank by rank (its pads, and the pad copies a rank sends) */
  int64_t pads_all = 0, n_last = 0;
  for (int q = 0; q < g->P; q++) {
    ferry__global_counts c;
    ferry__global_counts_of(g, g->nwindows - 1, q, &c);
    pads_all += c.pads;
    n_last = c.n;
  }
  for (int q = 0; q < g->P; q++) {
    ferry__global_counts c;
    ferry__global_counts_of(g, g->nwindows - 1, q, &c);
    int64_t a = g->nwindows > 1 && g->per_rank > c.read ? g->per_rank : c.read;
    int64_t x =
        c.sent > sent_of(g->exchange, a) ? c.sent : sent_of(g->exchange, a);
    /* pad copies sent: the rank's items, each taken at most
     * ceil(pads / n) times */
    int64_t padsend = c.read * ((pads_all + n_last - 1) / n_last);
    if (padsend > pads_all)
      padsend = pads_all;
    if (a > m->read_rows)
      m->read_rows = a;
    if (x + padsend > m->send_rows)
      m->send_rows = x + padsend;
    if (x + c.pads > m->recv_rows)
      m->recv_rows = x + c.pads;
    if (a + c.pads > m->serve_rows)
      m->serve_rows = a + c.pads;
  }
  m->read = sat_mul(m->read_rows, row_bytes);
  m->send = sat_mul(m->send_rows, row_bytes);
  m->recv = sat_mul(m->recv_rows, row_bytes);
  m->serve = sat_mul(m->serve_rows, row_bytes);
  /* per read item: sample, dest rank, dest pos; per send: item, pos; per
   * serve position: sample, local, src rank, src off, padded; per rank:
   * four counts; extents: one per piece a rank window touches */
  size_t ext = sat_mul(max_pieces(g, m->read_rows), sizeof(ferry__extent));
  m->tables = sat_add(
      sat_add(sat_mul(m->read_rows, 20), sat_mul(m->send_rows, 16)),
      sat_add(sat_add(sat_mul(m->serve_rows, 29), sat_mul(g->P, 32)), ext));
  size_t one = sat_add(sat_add(m->read, m->send), sat_add(m->recv, m->serve));
  m->total = sat_add(sat_add(m->serve, one), sat_mul(2, m->tables));
}

/* ---- Checksums ---------------------------------------------------------- */

static uint64_t mix_in(uint64_t h, int64_t v) {
  return ferry__fnv1a(h, &v, sizeof v);
}

uint64_t ferry__global_checksum(const ferry__global *g) {
  uint64_t h = FERRY__FNV_INIT;
  int64_t head[] = {g->P,          g->B,       g->tail,     g->M,
                    g->D,          g->dropped, g->padded,   g->num_batches,
                    g->per_rank,   g->G,       g->nwindows, g->level,
                    g->cut_window, g->cut_off, g->nF,       g->rest_lo};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    h = mix_in(h, head[i]);
  h = ferry__fnv1a(h, &g->exchange, sizeof g->exchange);
  for (int64_t w = 0; w < g->nwindows; w++) {
    int64_t X = 0;
    for (int q = 0; q < g->P; q++) {
      ferry__global_counts c;
      ferry__global_counts_of(g, w, q, &c);
      X += c.sent;
      h = mix_in(h, c.read);
      h = mix_in(h, c.sent);
      h = mix_in(h, c.pads);
      if (c.read > 0) {
        h = mix_in(h, ferry__prp(key_rank(g, FERRY__STREAM_GKEEP, w, q), c.read,
                                 c.read - 1));
        h = mix_in(
            h, ferry__prp(key_rank(g, FERRY__STREAM_GSERVE, w, q), c.read, 0));
      }
    }
    h = mix_in(h, ferry__prp(key_deal(g, w), X, X / 2));
  }
  return h;
}

uint64_t ferry__global_window_checksum(const ferry__global_window *x) {
  uint64_t h = FERRY__FNV_INIT;
  h = mix_in(h, x->window);
  h = mix_in(h, x->nserve);
  for (int64_t j = 0; j < x->nserve; j++) {
    h = mix_in(h, x->serve_sample[j]);
    h = mix_in(h, x->src_rank[j]);
    h = mix_in(h, x->src_off[j]);
  }
  for (int64_t k = 0; k < x->nsend; k++)
    h = mix_in(h, x->send_item[k]);
  for (int q = 0; q < x->P; q++)
    h = mix_in(h, x->sendcounts[q]);
  return h;
}
