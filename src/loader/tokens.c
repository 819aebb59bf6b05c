/*
 * tokens.c - batches cut by a token budget (max_tokens, docs/ragged.md).
 *
 * With max_tokens=T the epoch's plan is made as for batch_size=1 (so the
 * tail rule repeats or drops fewer than one sample per rank), and each rank
 * then cuts its served order into batches of at most T rows of the token
 * variable (the first ragged variable) and at most batch_size samples, a
 * sample never split (ferry_open refused one longer than T).  The batch
 * counts differ between ranks: one MPI_Allreduce gives the largest, C, and
 * every other rank splits its batches of the most samples in halves until
 * it has C too (halves of a batch within budget are within budget); a rank
 * with fewer samples than C ends with empty batches.  Equal counts are then
 * checked like every plan's (epoch.c).
 *
 * bucket_window=W: the served positions of a window of the plan are cut
 * into buckets of W; a bucket's samples are sorted by length (ties broken
 * by a seeded draw), cut into batches in that order, and the bucket's
 * batches are shuffled (seeded by seed, epoch, rank and bucket), so a
 * batch holds samples of similar lengths (little padding with pad=max)
 * while batches of different lengths stay mixed.  A bucket never crosses
 * a window, so a batch's reads are those of its window as without
 * buckets.  The sorted order of a bucket is not stored: the planning pass
 * sorts each bucket once to cut its batches (O(W) memory), and the workers
 * sort a bucket again when its first batch is assembled, into one of two
 * cached buckets (ferry__tokens_slots).
 *
 * Memory: the batch starts (num_batches + 1) and two numbers per bucket;
 * with buckets, two buckets of slots and the sort's scratch (W entries).
 */
#include "config.h"
#include "dataset/mix.h"
#include "loader/loader.h"

#include "util/agree.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { TOK_BLOCK = 4096, TOK_STREAM_BUCKET = 4 };

/* One bucket's sort: a sample's length, its draw, its index in the bucket. */
typedef struct rec {
  int64_t len;
  uint64_t tie;
  int64_t i;
} rec;

/* An unpermuted batch: off samples into its bucket's sorted order (the
 * served order without buckets), n samples. */
typedef struct tbatch {
  int64_t bucket, off, n;
} tbatch;

struct ferry__tok_cache {
  pthread_mutex_t mu;
  int64_t W;
  int64_t k[2];    /* the bucket each entry holds, -1: none */
  int64_t used[2]; /* last use (a counter): the older is replaced */
  int64_t clock;
  ferry__slot *sl[2];  /* [W] each: the bucket's slots in served order */
  ferry__slot *tmp;    /* [W] scratch: the bucket's slots in plan order */
  rec *recs;           /* [W] */
  int64_t *perm, *pre; /* [W] */
  ferry__slot *wbuf;   /* a sampling plan's: a window's slots (range_slots) */
};

/* Slots [i0, i0 + n) of p into out: computed (plan/order.c), or a
 * sampling plan's (weights, balance, a mix) from each window holding them,
 * computed whole into wbuf (of the plan's largest window).  The range lies
 * in the plan: only a window's memory can fail (FERRY_ENOMEM). */
static int range_slots(const ferry__rank_plan *p, int64_t i0, int64_t n,
                       ferry__slot *out, ferry__slot *wbuf) {
  if (ferry__plan_slots_computed(p))
    return ferry__plan_slots_get(p, i0, n, out);
  int64_t w = n > 0 ? ferry__plan_window_of(p, i0) : 0;
  for (int64_t k = 0; k < n; w++) {
    int64_t j0 = i0 + k - p->window_first_slot[w];
    int64_t left = p->window_samples[w] - j0;
    int64_t take = n - k < left ? n - k : left;
    if (take <= 0)
      continue;
    if (ferry__plan_window_slots(p, w, wbuf))
      return FERRY_ENOMEM;
    memcpy(out + k, wbuf + j0, (size_t)take * sizeof *out);
    k += take;
  }
  return 0;
}

/* The window buffer range_slots needs for p: NULL (and 0) when its slots
 * are computed; -1 out of memory. */
static int wbuf_new(const ferry__rank_plan *p, ferry__slot **out) {
  *out = NULL;
  if (ferry__plan_slots_computed(p))
    return 0;
  int64_t most = ferry__plan_window_max(p);
  *out = malloc((size_t)(most > 0 ? most : 1) * sizeof **out);
  return *out ? 0 : -1;
}

static int64_t slot_len(const ferry_loader *L, const ferry__rank_plan *p,
                        const ferry__slot *s) {
  const ferry__extent *x = &p->extents[s->extent];
  const int64_t *ro = L->m.parts[x->part].roff[L->tok_var] + x->row + s->row;
  return ro[1] - ro[0];
}

static int cmp_rec(const void *a, const void *b) {
  const rec *x = a, *y = b;
  if (x->len != y->len)
    return (x->len > y->len) - (x->len < y->len);
  if (x->tie != y->tie)
    return (x->tie > y->tie) - (x->tie < y->tie);
  return (x->i > y->i) - (x->i < y->i);
}

/* Bucket k's key on rank r (its sort's ties, its batches' order). */
static uint64_t bucket_key(const ferry_loader *L, int64_t epoch, int r,
                           int64_t k) {
  uint64_t base = ferry__rand_key(L->opts->seed, TOK_STREAM_BUCKET,
                                  (uint64_t)epoch, (uint64_t)r);
  return ferry__rand64(base, (uint64_t)k);
}

/* Bucket k's slots (plan order) into tmp and its sorted order into recs. */
static int bucket_sort(const ferry_loader *L, const ferry__rank_plan *p,
                       int64_t epoch, int r, int64_t k, ferry__tok_cache *tc) {
  ferry__slot *tmp = tc->tmp;
  rec *recs = tc->recs;
  int64_t P0 = p->bucket_pos[k], m = p->bucket_pos[k + 1] - P0;
  uint64_t key = bucket_key(L, epoch, r, k + p->bucket_base);
  if (range_slots(p, P0, m, tmp, tc->wbuf))
    return FERRY_ENOMEM;
  for (int64_t i = 0; i < m; i++)
    recs[i] =
        (rec){slot_len(L, p, &tmp[i]), ferry__rand64(key ^ 1, (uint64_t)i), i};
  qsort(recs, (size_t)m, sizeof *recs, cmp_rec);
  return 0;
}

typedef struct tlist {
  tbatch *v;
  int64_t n, cap;
} tlist;

static int tpush(tlist *l, tbatch b) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 1024;
    tbatch *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v)
      return FERRY_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = b;
  return 0;
}

/* The greedy cut of one run of lengths (bucket k, from offset 0). */
typedef struct cutter {
  int64_t T, B, n, tok, off, bucket;
} cutter;

static int cut_add(cutter *c, tlist *l, int64_t len) {
  int rc = 0;
  if (c->n > 0 && (c->n == c->B || c->tok + len > c->T)) {
    rc = tpush(l, (tbatch){c->bucket, c->off, c->n});
    c->off += c->n;
    c->n = c->tok = 0;
  }
  c->n++;
  c->tok += len;
  return rc;
}

static int cut_end(cutter *c, tlist *l) {
  int rc = c->n ? tpush(l, (tbatch){c->bucket, c->off, c->n}) : 0;
  c->off += c->n;
  c->n = c->tok = 0;
  return rc;
}

/* Buckets: every window's positions in runs of W. */
static int make_buckets(ferry__rank_plan *p, int64_t W) {
  int64_t nb = 0;
  for (int64_t w = 0; w < p->nwindows; w++) {
    int64_t a = p->window_first_slot[w], e = p->window_first_slot[w + 1];
    nb += (e - a + W - 1) / W;
  }
  p->bucket_pos = malloc((size_t)(nb + 1) * sizeof(int64_t));
  p->bucket_batch = calloc((size_t)nb + 1, sizeof(int64_t));
  if (!p->bucket_pos || !p->bucket_batch)
    return FERRY_ENOMEM;
  int64_t k = 0;
  for (int64_t w = 0; w < p->nwindows; w++)
    for (int64_t a = p->window_first_slot[w]; a < p->window_first_slot[w + 1];
         a += W)
      p->bucket_pos[k++] = a;
  p->bucket_pos[nb] = p->nslots;
  p->nbuckets = nb;
  return 0;
}

/* Rank r's batches, unpermuted, into l. */
static int cut_rank(const ferry_loader *L, ferry__rank_plan *p, int64_t epoch,
                    int r, tlist *l, ferry__tok_cache *tc) {
  cutter c = {L->opts->max_tokens, L->opts->batch_size, 0, 0, 0, 0};
  int rc = 0;
  if (!p->bucket_pos) {
    ferry__slot sl[TOK_BLOCK / 8], *wbuf = NULL;
    const int64_t blk = (int64_t)(sizeof sl / sizeof sl[0]);
    if (wbuf_new(p, &wbuf))
      return FERRY_ENOMEM;
    for (int64_t w = 0; !rc && w < p->nwindows; w++) {
      /* a sampling plan's window computed once, a plan's by blocks */
      int64_t f = p->window_first_slot[w], m = p->window_samples[w];
      if (wbuf && ferry__plan_window_slots(p, w, wbuf))
        rc = FERRY_ENOMEM;
      for (int64_t j0 = 0; !rc && j0 < m; j0 += blk) {
        int64_t n = m - j0 < blk ? m - j0 : blk;
        const ferry__slot *at = wbuf ? wbuf + j0 : sl;
        if (!wbuf)
          (void)ferry__plan_slots_get(p, f + j0, n, sl);
        for (int64_t j = 0; !rc && j < n; j++)
          rc = cut_add(&c, l, slot_len(L, p, &at[j]));
        if ((((f + j0) / blk) & 63) == 63) /* mapped offsets: what this read */
          ferry__manifest_trim(&L->m, NULL, NULL);
      }
    }
    free(wbuf);
    return rc ? rc : cut_end(&c, l);
  }
  for (int64_t k = 0; !rc && k < p->nbuckets; k++) {
    if ((rc = bucket_sort(L, p, epoch, r, k, tc)) != 0)
      break;
    c.bucket = k;
    c.off = 0;
    int64_t m = p->bucket_pos[k + 1] - p->bucket_pos[k];
    for (int64_t i = 0; !rc && i < m; i++)
      rc = cut_add(&c, l, tc->recs[i].len);
    if (!rc)
      rc = cut_end(&c, l);
    if ((k & 63) == 63) /* mapped offsets: what the buckets read */
      ferry__manifest_trim(&L->m, NULL, NULL);
  }
  return rc;
}

/* Split the batches of the most samples in halves until there are C (a
 * max-heap of batch indices by size, then index); then order them by
 * bucket and offset again. */
static int cmp_tb(const void *a, const void *b) {
  const tbatch *x = a, *y = b;
  if (x->bucket != y->bucket)
    return (x->bucket > y->bucket) - (x->bucket < y->bucket);
  return (x->off > y->off) - (x->off < y->off);
}

static int heap_less(const tlist *l, int64_t a, int64_t b) {
  /* a before b in the max-heap: more samples, then the earlier batch */
  if (l->v[a].n != l->v[b].n)
    return l->v[a].n > l->v[b].n;
  return a < b;
}

static void sift_down(const tlist *l, int64_t *h, int64_t n, int64_t j) {
  for (;;) {
    int64_t c = 2 * j + 1;
    if (c >= n)
      return;
    if (c + 1 < n && heap_less(l, h[c + 1], h[c]))
      c++;
    if (!heap_less(l, h[c], h[j]))
      return;
    int64_t t = h[c];
    h[c] = h[j];
    h[j] = t;
    j = c;
  }
}

static void sift_up(const tlist *l, int64_t *h, int64_t j) {
  while (j > 0 && heap_less(l, h[j], h[(j - 1) / 2])) {
    int64_t t = h[j];
    h[j] = h[(j - 1) / 2];
    h[(j - 1) / 2] = t;
    j = (j - 1) / 2;
  }
}

static int split_to(tlist *l, int64_t C) {
  int64_t n0 = l->n;
  if (n0 >= C)
    return 0;
  int64_t *h = malloc((size_t)C * sizeof *h), hn = 0;
  if (!h)
    return FERRY_ENOMEM;
  for (int64_t i = 0; i < n0; i++) {
    h[hn++] = i;
    sift_up(l, h, hn - 1);
  }
  int rc = 0;
  while (!rc && l->n < C && hn > 0 && l->v[h[0]].n >= 2) {
    int64_t i = h[0];
    tbatch b = l->v[i];
    int64_t keep = (b.n + 1) / 2;
    l->v[i].n = keep;
    rc = tpush(l, (tbatch){b.bucket, b.off + keep, b.n - keep});
    if (rc)
      break;
    sift_down(l, h, hn, 0);
    h[hn++] = l->n - 1;
    sift_up(l, h, hn - 1);
  }
  free(h);
  if (rc)
    return rc;
  qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_tb);
  return 0;
}

/* The batches' served starts from the unpermuted list: each bucket's
 * batches in a seeded order; empty batches (a rank with fewer samples than
 * C) last.  Also each window's first batch (what admits its reads). */
static int lay_out(const ferry_loader *L, ferry__rank_plan *p, int64_t epoch,
                   int r, const tlist *l, int64_t C) {
  int64_t *ts = malloc((size_t)(C + 1) * sizeof *ts);
  int64_t *perm = NULL;
  if (!ts)
    return FERRY_ENOMEM;
  int64_t b = 0, pos = 0;
  if (!p->bucket_pos) {
    for (int64_t i = 0; i < l->n; i++) {
      ts[b++] = pos;
      pos += l->v[i].n;
    }
  } else {
    int64_t most = 0;
    for (int64_t i = 0, run = 0; i < l->n; i++) {
      run = i > 0 && l->v[i].bucket == l->v[i - 1].bucket ? run + 1 : 1;
      most = run > most ? run : most;
    }
    perm = malloc((size_t)(most ? most : 1) * sizeof *perm);
    if (!perm) {
      free(ts);
      return FERRY_ENOMEM;
    }
    int64_t i = 0;
    for (int64_t k = 0; k < p->nbuckets; k++) {
      int64_t i1 = i;
      while (i1 < l->n && l->v[i1].bucket == k)
        i1++;
      int64_t m = i1 - i;
      p->bucket_batch[k] = b;
      for (int64_t j = 0; j < m; j++)
        perm[j] = j;
      ferry__shuffle(perm, m, bucket_key(L, epoch, r, k));
      for (int64_t j = 0; j < m; j++) {
        ts[b++] = pos;
        pos += l->v[i + perm[j]].n;
      }
      i = i1;
    }
    p->bucket_batch[p->nbuckets] = b;
    free(perm);
  }
  while (b < C)
    ts[b++] = pos;
  ts[C] = pos;
  ferry__plan_set_starts(p, ts, C, L->opts->batch_size);
  return 0;
}

static int tok_cache_new(ferry__tok_cache **out, const ferry__rank_plan *p,
                         int64_t W) {
  ferry__tok_cache *tc = calloc(1, sizeof *tc);
  if (!tc)
    return FERRY_ENOMEM;
  *out = tc;
  pthread_mutex_init(&tc->mu, NULL);
  tc->W = W;
  tc->k[0] = tc->k[1] = -1;
  size_t w = (size_t)(W > 0 ? W : 1);
  tc->sl[0] = malloc(w * sizeof(ferry__slot));
  tc->sl[1] = malloc(w * sizeof(ferry__slot));
  tc->tmp = malloc(w * sizeof(ferry__slot));
  tc->recs = malloc(w * sizeof(rec));
  tc->perm = malloc(w * sizeof(int64_t));
  tc->pre = malloc(w * sizeof(int64_t));
  if (!tc->sl[0] || !tc->sl[1] || !tc->tmp || !tc->recs || !tc->perm ||
      !tc->pre || wbuf_new(p, &tc->wbuf))
    return FERRY_ENOMEM;
  return 0;
}

void ferry__tok_cache_free(ferry__tok_cache *tc) {
  if (!tc)
    return;
  pthread_mutex_destroy(&tc->mu);
  free(tc->sl[0]);
  free(tc->sl[1]);
  free(tc->tmp);
  free(tc->recs);
  free(tc->perm);
  free(tc->pre);
  free(tc->wbuf);
  free(tc);
}

int ferry__tok_cache_fit(ferry__tok_cache *tc, const ferry__rank_plan *p) {
  if (!tc)
    return 0;
  free(tc->wbuf);
  tc->k[0] = tc->k[1] = -1; /* the buckets' slots are the new plan's */
  return wbuf_new(p, &tc->wbuf) ? FERRY_ENOMEM : 0;
}

size_t ferry__tok_cache_bytes(int64_t W) {
  return (size_t)(W > 0 ? W : 0) *
         (3 * sizeof(ferry__slot) + sizeof(rec) + 2 * sizeof(int64_t));
}

int ferry__tokens_plan(ferry_loader *L, ferry__rank_plan *p, int64_t epoch,
                       ferry__tok_cache **cache, int rc, ferry__err *err) {
  int64_t W = L->opts->bucket_window;
  tlist l = {0};
  ferry__tok_cache *tc = NULL;
  if (!rc && !ferry__plan_slots_computed(p) && !p->draw)
    rc = ferry__seterr(err, FERRY_EINTERNAL,
                       "max_tokens: the plan's slots are not computed");
  if (!rc && W > 0 && (make_buckets(p, W) || tok_cache_new(&tc, p, W)))
    rc = ferry__oom(err, L->rank, ferry__tok_cache_bytes(W),
                    "dataset %s: the buckets of bucket_window=%lld", L->m.spec,
                    (long long)W);
  if (!rc && cut_rank(L, p, epoch, L->rank, &l, tc))
    rc = ferry__oom(err, L->rank, (size_t)l.cap * 2 * sizeof(tbatch),
                    "dataset %s: the max_tokens batches of rank %d in epoch "
                    "%lld",
                    L->m.spec, L->rank, (long long)epoch);
  ferry__manifest_trim(&L->m, NULL, NULL); /* the pass over its lengths */
  rc = ferry__agree(L->comm, L->rank, rc, err);
  long long mine = l.n, C = 0;
  if (!rc && MPI_Allreduce(&mine, &C, 1, MPI_LONG_LONG, MPI_MAX, L->comm) !=
                 MPI_SUCCESS)
    rc =
        ferry__seterr_on(err, L->rank, FERRY_EMPI,
                         "MPI_Allreduce of the max_tokens batch counts failed");
  if (!rc && (split_to(&l, C) || lay_out(L, p, epoch, L->rank, &l, C)))
    rc = ferry__oom(err, L->rank, (size_t)C * 3 * sizeof(tbatch),
                    "dataset %s: the %lld max_tokens batches of epoch %lld",
                    L->m.spec, C, (long long)epoch);
  free(l.v);
  if (rc || !cache) {
    ferry__tok_cache_free(tc);
    tc = NULL;
  }
  if (cache)
    *cache = tc;
  return rc; /* epoch_check_counts agrees on it */
}

/* Bucket k into cache entry e: the bucket's slots in served order. */
static void fill_entry(const ferry_loader *L, const ferry__rank_plan *p,
                       int64_t epoch, ferry__tok_cache *tc, int e, int64_t k) {
  int64_t P0 = p->bucket_pos[k];
  int64_t b0 = p->bucket_batch[k], m = p->bucket_batch[k + 1] - b0;
  (void)bucket_sort(L, p, epoch, L->rank, k, tc); /* its buffer is there */
  for (int64_t j = 0; j < m; j++)
    tc->perm[j] = j;
  ferry__shuffle(tc->perm, m,
                 bucket_key(L, epoch, L->rank, k + p->bucket_base));
  /* served batch j is unpermuted batch perm[j]: its size gives the
   * unpermuted sizes, their sums where each starts in the sorted order */
  for (int64_t j = 0; j < m; j++)
    tc->pre[tc->perm[j]] = p->tok_start[b0 + j + 1] - p->tok_start[b0 + j];
  for (int64_t j = 0, at = 0; j < m; j++) {
    int64_t n = tc->pre[j];
    tc->pre[j] = at;
    at += n;
  }
  for (int64_t j = 0; j < m; j++) {
    int64_t from = tc->pre[tc->perm[j]], to = p->tok_start[b0 + j] - P0;
    int64_t n = p->tok_start[b0 + j + 1] - p->tok_start[b0 + j];
    for (int64_t i = 0; i < n; i++)
      tc->sl[e][to + i] = tc->tmp[tc->recs[from + i].i];
  }
  tc->k[e] = k;
}

void ferry__tokens_slots(const ferry_loader *L, const ferry__rank_plan *p,
                         int64_t epoch, ferry__tok_cache *tc, int64_t i0,
                         int64_t n, ferry__slot *out) {
  if (n <= 0)
    return;
  int64_t k = ferry__last_le(p->bucket_pos, p->nbuckets, i0);
  pthread_mutex_lock(&tc->mu);
  int e = tc->k[0] == k ? 0 : tc->k[1] == k ? 1 : -1;
  if (e < 0) {
    e = tc->used[0] <= tc->used[1] ? 0 : 1;
    fill_entry(L, p, epoch, tc, e, k);
  }
  tc->used[e] = ++tc->clock;
  memcpy(out, tc->sl[e] + (i0 - p->bucket_pos[k]), (size_t)n * sizeof *out);
  pthread_mutex_unlock(&tc->mu);
}

static int64_t count_over(const ferry__manifest *m, int v, int64_t T) {
  int64_t n = 0;
  for (int64_t q = 0; q < m->nparts; q++)
    for (int64_t i = 0; i < m->parts[q].num_samples; i++) {
      n += m->parts[q].roff[v][i + 1] - m->parts[q].roff[v][i] > T;
      ferry__manifest_trim_step(m, m->parts[q].roff[v], i);
    }
  return n;
}

int ferry__tokens_open(ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  const ferry__manifest *m = &L->m;
  L->tok_var = -1;
  if (!o->max_tokens) {
    if (o->bucket_window)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'bucket_window' applies with max_tokens "
                           "only (it sorts samples by length to cut token "
                           "batches)");
    return 0;
  }
  if (((o->mix && *o->mix) || ferry__mix_is_manifest(m)) &&
      o->mix_by == FERRY__MIX_BY_BATCH)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option 'max_tokens' with mix_by=batch: a token "
                         "batch has no fixed number of draws to hold the "
                         "proportions; use mix_by=epoch");
  for (int v = 0; v < m->nvars && L->tok_var < 0; v++)
    if (m->vars[v].ragged)
      L->tok_var = v;
  if (L->tok_var < 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option 'max_tokens': dataset %s has no ragged "
                         "variable (max_tokens counts the rows of the first "
                         "one; docs/ragged.md)",
                         m->spec);
  int v = L->tok_var;
  int64_t T = o->max_tokens;
  if (L->rstat[v].max > T) {
    for (int64_t q = 0; q < m->nparts; q++) {
      const int64_t *ro = m->parts[q].roff[v];
      for (int64_t i = 0; i < m->parts[q].num_samples;
           ferry__manifest_trim_step(m, ro, ++i))
        if (ro[i + 1] - ro[i] > T)
          return ferry__seterr(
              err, FERRY_EINVAL,
              "option 'max_tokens': sample %lld of dataset %s (row %lld of "
              "%s) has %lld rows of variable '%s', more than max_tokens=%lld "
              "(%lld samples are; the longest has %lld): raise max_tokens "
              "or cut the samples",
              (long long)(m->parts[q].first_sample + i), m->spec, (long long)i,
              m->parts[q].paths[v], (long long)(ro[i + 1] - ro[i]),
              m->vars[v].name, (long long)T, (long long)count_over(m, v, T),
              (long long)L->rstat[v].max);
    }
  }
  if (!L->pad && L->ragged_cap[v] > T) { /* a batch holds at most T rows */
    L->batch_bytes -= (size_t)(L->ragged_cap[v] - T) * m->vars[v].row_bytes;
    L->ragged_cap[v] = T;
  }
  return 0;
}

/* The rest of an epoch of token batches after its first K batches (same
 * ranks; the whole epoch's plan, cut, in ep->plan): the plan from position
 * P on (plan_from: plan_resume drops the prefix, as for any resume, or a
 * sampling plan is cut from there), batch K its
 * first batch.  Without buckets P is batch K's start.  With buckets it is
 * the start of the bucket k holding batch K: the buckets are those of the
 * epoch from k, and the batches of bucket k before K are kept below
 * tok_start (tok_skip) so that its sorted order is placed as the whole
 * epoch's. */
/* This rank's plan from its position P on: a plan's rest (plan_resume),
 * or a sampling plan's, whose rank r serves draw g x world + r of the
 * epoch's sequence (batch_size 1): the cut from global batch P. */
static int plan_from(ferry_loader *L, epoch_state *ep,
                     const ferry__plan_params *pp, int64_t P,
                     ferry__rank_plan *p, ferry__err *err) {
  if (!ep->draw) {
    ferry__resume_step one = {L->size, P, NULL, NULL, NULL};
    return ferry__plan_resume(&ep->pieces, ep->perm, pp, &one, 1, L->rank, p,
                              NULL, err);
  }
  /* the deal's position P x world on (it starts at draw_pos0 and skips
   * the holes: sampling.c); a rank that served all its draws is past the
   * sequence's end: nothing is left for it (its last global batch may be a
   * partial one) */
  const ferry__draw *d = ep->draw;
  ferry__draw_cut base = {.pos0 = ep->draw_pos0,
                          .holes = ep->draw_holes,
                          .nholes = ep->draw_nholes};
  int64_t c = ep->draw_pos0 + P * L->size;
  int64_t pos0 =
      c < d->D - ep->draw_nholes ? ferry__draw_unhole(&base, c) : d->D;
  int64_t h = 0; /* the holes from pos0 on */
  while (h < ep->draw_nholes && ep->draw_holes[h] < pos0)
    h++;
  ferry__draw_cut cut;
  int rc = ferry__draw_cut_holes(d, pos0, 1, L->size, L->opts->tail,
                                 ep->draw_holes ? ep->draw_holes + h : NULL,
                                 ep->draw_nholes - h, &cut, err);
  if (!rc)
    rc = ferry__draw_plan(ep->draw, &cut, L->rank, p, err);
  if (!rc)
    rc = ferry__tok_cache_fit(ep->tokc, p);
  return rc;
}

int ferry__tokens_tail(ferry_loader *L, epoch_state *ep,
                       const ferry__plan_params *pp, int64_t K,
                       ferry__err *err) {
  ferry__rank_plan *p = &ep->plan;
  int64_t C = p->num_batches, nb = p->nbuckets;
  if (K > C) /* the same count on every rank: all fail */
    return ferry__seterr(err, FERRY_EFORMAT,
                         "max_tokens: the state says %lld batches of epoch "
                         "%lld were served, but it has %lld",
                         (long long)K, (long long)pp->epoch, (long long)C);
  int64_t *ts = p->tok_start, *bp = p->bucket_pos, *bb = p->bucket_batch;
  int64_t k = bp ? ferry__last_le(bb, nb + 1, K) : nb;
  int inside = bp && k < nb; /* batch K in bucket k, not after them all */
  int64_t P = inside ? bp[k] : ts[K], K0 = inside ? bb[k] : K;
  int64_t skip = K - K0;
  p->tok_start = p->bucket_pos = p->bucket_batch = NULL;
  ferry__rank_plan_free(p);
  int rc = plan_from(L, ep, pp, P, p, err);
  int64_t *nbp = NULL, *nbb = NULL;
  if (!rc && bp &&
      (!(nbp = malloc((size_t)(nb - k + 1) * sizeof *nbp)) ||
       !(nbb = malloc((size_t)(nb - k + 1) * sizeof *nbb))))
    rc = ferry__oom(err, L->rank, (size_t)(nb - k + 1) * 16,
                    "the buckets of a resumed epoch");
  if (!rc) {
    for (int64_t i = 0; bp && i <= nb - k; i++) {
      nbp[i] = bp[k + i] - P;
      nbb[i] = bb[k + i] - K;
    }
    p->nbuckets = bp ? nb - k : 0;
    p->bucket_pos = nbp;
    p->bucket_batch = nbb;
    p->bucket_base = bp ? k : 0;
    nbp = nbb = NULL;
    /* batches K0 .. C of the epoch, from position P: skip of them before
     * tok_start[0] */
    memmove(ts, ts + K0, (size_t)(C - K0 + 1) * sizeof *ts);
    for (int64_t b = 0; b <= C - K0; b++)
      ts[b] -= P;
    ferry__plan_set_starts(p, ts + skip, C - K, L->opts->batch_size);
    p->tok_skip = skip;
    ts = NULL;
  }
  free(nbp);
  free(nbb);
  free(ts);
  free(bp);
  free(bb);
  return rc;
}

/* Old rank r's plan over pp0's world size (batch_size 1), its buckets and
 * its unpermuted cut into *l, with the cache that sorted them. */
static int old_cut(const ferry_loader *L, const ferry__pieces *ps,
                   const int64_t *perm, const ferry__draw *draw,
                   const ferry__draw_cut *base, const ferry__resume_step *prior,
                   int nprior, const ferry__plan_params *pp0, int r,
                   ferry__rank_plan *p, tlist *l, ferry__tok_cache **tc,
                   ferry__err *err) {
  int64_t W = L->opts->bucket_window;
  int rc;
  if (draw) { /* a sampling plan: the draws dealt as batches of 1 */
    ferry__draw_cut cut;
    rc = ferry__draw_cut_holes(draw, base->pos0, 1, pp0->world_size,
                               L->opts->tail, base->holes, base->nholes, &cut,
                               err);
    if (!rc)
      rc = ferry__draw_plan(draw, &cut, r, p, err);
  } else if (nprior) { /* a step after others: their rest, dealt */
    rc = ferry__plan_resume(ps, perm, pp0, prior, nprior, r, p, NULL, err);
  } else {
    rc = ferry__plan_build(ps, perm, pp0, r, p, err);
  }
  if (!rc && (make_buckets(p, W) || tok_cache_new(tc, p, W) ||
              cut_rank(L, p, pp0->epoch, r, l, *tc)))
    rc = ferry__oom(err, L->rank, ferry__tok_cache_bytes(W),
                    "dataset %s: the max_tokens batches of old rank %d in "
                    "epoch %lld",
                    L->m.spec, r, (long long)pp0->epoch);
  return rc;
}

/* Old rank r's served set after K batches of its layout (p, l, tc: its
 * plan, cut and cache): the end of the bucket holding batch K in *end and
 * the positions before it not served in *holes (*nh of them). */
static int old_holes(const ferry_loader *L, ferry__rank_plan *p, const tlist *l,
                     ferry__tok_cache *tc, int64_t epoch, int r, int64_t K,
                     int64_t *end, int64_t *nh, int64_t **holes) {
  const int64_t nb = p->nbuckets, *bb = p->bucket_batch, *bp = p->bucket_pos;
  *nh = 0;
  *holes = NULL;
  if (K >= bb[nb]) { /* every bucket served */
    *end = p->nslots;
    return 0;
  }
  int64_t k = ferry__last_le(bb, nb + 1, K), j = K - bb[k];
  int64_t m = bp[k + 1] - bp[k], i0 = 0, nbk = bb[k + 1] - bb[k];
  while (i0 < l->n && l->v[i0].bucket < k)
    i0++;
  int rc = bucket_sort(L, p, epoch, r, k, tc);
  unsigned char *done = calloc((size_t)(m ? m : 1), 1);
  int64_t *perm = malloc((size_t)(nbk ? nbk : 1) * sizeof *perm);
  *holes = malloc((size_t)(m ? m : 1) * sizeof **holes);
  if (rc || !done || !perm || !*holes) {
    free(done);
    free(perm);
    free(*holes);
    *holes = NULL;
    return FERRY_ENOMEM;
  }
  for (int64_t t = 0; t < nbk; t++) /* lay_out's order of the bucket */
    perm[t] = t;
  ferry__shuffle(perm, nbk, bucket_key(L, epoch, r, k));
  for (int64_t t = 0; t < j; t++) { /* served batch t: unpermuted perm[t] */
    const tbatch *u = &l->v[i0 + perm[t]];
    for (int64_t i = u->off; i < u->off + u->n; i++)
      done[tc->recs[i].i] = 1;
  }
  for (int64_t i = 0; i < m; i++)
    if (!done[i])
      (*holes)[(*nh)++] = bp[k] + i;
  *end = bp[k + 1];
  free(done);
  free(perm);
  return 0;
}

int ferry__tokens_holes(ferry_loader *L, const ferry__pieces *ps,
                        const int64_t *perm, const ferry__draw *draw,
                        const ferry__draw_cut *base,
                        const ferry__resume_step *prior, int nprior,
                        const ferry__plan_params *pp, int R0, int64_t K,
                        int64_t *ends, int64_t *nholes, int64_t **holes,
                        ferry__err *err) {
  ferry__plan_params pp0 = *pp;
  pp0.world_size = R0;
  int64_t C = 0;
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int r = 0; r < R0 && !rc; r++) {
      ferry__rank_plan p;
      memset(&p, 0, sizeof p);
      tlist l = {0};
      ferry__tok_cache *tc = NULL;
      rc = old_cut(L, ps, perm, draw, base, prior, nprior, &pp0, r, &p, &l, &tc,
                   err);
      if (!rc && pass == 0)
        C = l.n > C ? l.n : C;
      if (!rc && pass == 1 &&
          (split_to(&l, C) || lay_out(L, &p, pp0.epoch, r, &l, C) ||
           old_holes(L, &p, &l, tc, pp0.epoch, r, K, &ends[r], &nholes[r],
                     &holes[r])))
        rc = ferry__oom(err, L->rank, (size_t)C * 3 * sizeof(tbatch),
                        "dataset %s: the max_tokens batches of old rank %d "
                        "in epoch %lld",
                        L->m.spec, r, (long long)pp0.epoch);
      free(l.v);
      ferry__tok_cache_free(tc);
      ferry__rank_plan_free(&p);
    }
  ferry__manifest_trim(&L->m, NULL, NULL);
  return rc;
}
