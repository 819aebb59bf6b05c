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
};

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

static uint64_t bucket_key(const ferry_loader *L, int64_t epoch, int64_t k) {
  uint64_t base = ferry__rand_key(L->opts->seed, TOK_STREAM_BUCKET,
                                  (uint64_t)epoch, (uint64_t)L->rank);
  return ferry__rand64(base, (uint64_t)k);
}

/* Bucket k's slots (plan order) into tmp and its sorted order into recs. */
static void bucket_sort(const ferry_loader *L, const ferry__rank_plan *p,
                        int64_t epoch, int64_t k, ferry__slot *tmp, rec *recs) {
  int64_t P0 = p->bucket_pos[k], m = p->bucket_pos[k + 1] - P0;
  uint64_t key = bucket_key(L, epoch, k + p->bucket_base);
  (void)ferry__plan_slots_get(p, P0, m, tmp);
  for (int64_t i = 0; i < m; i++)
    recs[i] =
        (rec){slot_len(L, p, &tmp[i]), ferry__rand64(key ^ 1, (uint64_t)i), i};
  qsort(recs, (size_t)m, sizeof *recs, cmp_rec);
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

/* This rank's batches, unpermuted, into l. */
static int cut_rank(const ferry_loader *L, ferry__rank_plan *p, int64_t epoch,
                    tlist *l, ferry__tok_cache *tc) {
  cutter c = {L->opts->max_tokens, L->opts->batch_size, 0, 0, 0, 0};
  int rc = 0;
  if (!p->bucket_pos) {
    ferry__slot sl[TOK_BLOCK / 8];
    const int64_t blk = (int64_t)(sizeof sl / sizeof sl[0]);
    for (int64_t i0 = 0; !rc && i0 < p->nslots; i0 += blk) {
      int64_t n = p->nslots - i0 < blk ? p->nslots - i0 : blk;
      (void)ferry__plan_slots_get(p, i0, n, sl);
      for (int64_t j = 0; !rc && j < n; j++)
        rc = cut_add(&c, l, slot_len(L, p, &sl[j]));
      if (((i0 / blk) & 63) == 63) /* mapped offsets: what this read */
        ferry__manifest_trim(&L->m, NULL, NULL);
    }
    return rc ? rc : cut_end(&c, l);
  }
  for (int64_t k = 0; !rc && k < p->nbuckets; k++) {
    bucket_sort(L, p, epoch, k, tc->tmp, tc->recs);
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
                   const tlist *l, int64_t C) {
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
      ferry__shuffle(perm, m, bucket_key(L, epoch, k));
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

static int tok_cache_new(ferry__tok_cache **out, int64_t W) {
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
      !tc->pre)
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
  free(tc);
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
  if (!rc && !ferry__plan_slots_computed(p))
    rc = ferry__seterr(err, FERRY_EINTERNAL,
                       "max_tokens: the plan's slots are not computed");
  if (!rc && W > 0 && (make_buckets(p, W) || tok_cache_new(&tc, W)))
    rc = ferry__oom(err, L->rank, ferry__tok_cache_bytes(W),
                    "dataset %s: the buckets of bucket_window=%lld", L->m.spec,
                    (long long)W);
  if (!rc && cut_rank(L, p, epoch, &l, tc))
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
  if (!rc && (split_to(&l, C) || lay_out(L, p, epoch, &l, C)))
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
  bucket_sort(L, p, epoch, k, tc->tmp, tc->recs);
  for (int64_t j = 0; j < m; j++)
    tc->perm[j] = j;
  ferry__shuffle(tc->perm, m, bucket_key(L, epoch, k + p->bucket_base));
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
  if ((o->weights && *o->weights) || (o->balance && *o->balance) ||
      (o->mix && *o->mix))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "option 'max_tokens' does not cut sampled epochs "
                         "(weights, balance, mix) yet: use batch_size");
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
