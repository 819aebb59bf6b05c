/*
 * plan/resume.c - the rest of an epoch after a saved position
 * (ferry__plan_resume): the same world size cuts each rank's fresh plan
 * after the batches it served; another world size re-deals the unserved
 * samples as ranges of the old plans' windows.  Pure, like plan.c, whose
 * plans it builds and cuts.
 */
#include "config.h"
#include "core/options.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

/* ---- Resuming an epoch ---------------------------------------------------
 *
 * A saved position is a list of steps: the epoch's plan over steps[0]'s
 * world size, of which every rank served steps[0].batches batches; then the
 * rest over steps[1]'s world size, and so on.  The rest of the epoch after
 * the last step is recomputed here from scratch -- no sample list is ever
 * stored -- and dealt to the current ranks:
 *
 *   same world size   every rank keeps the rest of its own plan, in the same
 *                     order: the batches are exactly those an uninterrupted
 *                     run would have served (pads of tail=pad included);
 *   other world size  the unserved real samples (pads are repeats and are
 *                     dropped), in old-rank order then served order, are cut
 *                     into contiguous shares and the tail rule is applied
 *                     again for equal batch counts (drop_last drops at most
 *                     P*B-1 more samples, pad repeats the first ones).
 *
 * The reads are rebuilt window by window: a window is a run of samples that
 * came from one window of the original plan (so memory stays within the
 * original windows), its extents the runs of consecutive rows it needs; the
 * samples are only ever listed one window at a time (plan_from_items for the
 * window holding a cut, plan_from_ranges below for the elastic path). */

typedef struct item {
  int64_t sample, part, row, group;
  int padded;
} item;

static int cmp_item_pos(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->part != y->part)
    return (x->part > y->part) - (x->part < y->part);
  return (x->row > y->row) - (x->row < y->row);
}

/* Window w's extents from its items list[0..n) (tmp: n scratch items):
 * the distinct rows, sorted, runs merged, appended to ext from ne.  Returns
 * the new count. */
static int64_t window_extents(const item *list, int64_t n, item *tmp, int64_t w,
                              ferry__extent *ext, int64_t ne) {
  memcpy(tmp, list, (size_t)n * sizeof *tmp);
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_item_pos);
  const int64_t e0 = ne;
  for (int64_t k = 0; k < n; k++) {
    const item *t = &tmp[k];
    ferry__extent *last = ne > e0 ? &ext[ne - 1] : NULL;
    if (last && last->part == t->part && t->row < last->row + last->count)
      continue; /* a repeat (pad) of a row already read */
    if (last && last->part == t->part && last->row + last->count == t->row)
      last->count++;
    else
      ext[ne++] = (ferry__extent){t->part, t->row, 1, t->sample, w};
  }
  return ne;
}

/* The rank plan serving list[0..n) in order, num_batches nb of B.  Windows
 * break where the group changes.  want_slots 0: reads only. */
static int plan_from_items(const item *list, int64_t n, int64_t nb, int64_t B,
                           int want_slots, ferry__rank_plan *out,
                           ferry__err *err) {
  memset(out, 0, sizeof *out);
  item *tmp = NULL;
  int64_t nw = 0;
  for (int64_t i = 0; i < n; i++)
    if (i == 0 || list[i].group != list[i - 1].group)
      nw++;
  out->num_batches = nb;
  out->batch_size = B;
  out->nslots = n;
  out->nwindows = nw;
  out->window_first_extent = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_need = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_samples = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_first_slot = calloc((size_t)nw + 1, sizeof(int64_t));
  out->extents = malloc((size_t)(n ? n : 1) * sizeof *out->extents);
  tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
  if (!out->window_first_extent || !out->window_need || !out->window_samples ||
      !out->window_first_slot || !out->extents || !tmp)
    goto nomem;
  if (want_slots) { /* runs of the list (one window: at most a sample each) */
    out->segs = malloc((size_t)(n ? n : 1) * sizeof *out->segs);
    out->window_first_seg = calloc((size_t)nw + 1, sizeof(int64_t));
    if (!out->segs || !out->window_first_seg)
      goto nomem;
  }
  int64_t ne = 0, w = -1;
  for (int64_t i0 = 0; i0 < n;) {
    int64_t i1 = i0 + 1;
    while (i1 < n && list[i1].group == list[i0].group)
      i1++;
    w++;
    out->window_first_extent[w] = ne;
    out->window_need[w] = i0 / B;
    out->window_samples[w] = i1 - i0;
    out->window_first_slot[w] = i0;
    if (want_slots)
      out->window_first_seg[w] = out->nsegs;
    int64_t e0 = ne;
    ne = window_extents(list + i0, i1 - i0, tmp, w, out->extents, ne);
    if (want_slots)
      for (int64_t i = i0; i < i1; i++) {
        int64_t lo =
            ferry__extent_at(out->extents, e0, ne, list[i].part, list[i].row);
        int64_t off = list[i].row - out->extents[lo].row;
        ferry__seg *last = out->nsegs > out->window_first_seg[w]
                               ? &out->segs[out->nsegs - 1]
                               : NULL;
        if (last && last->extent == lo && last->off + last->count == off &&
            last->padded == list[i].padded)
          last->count++;
        else
          out->segs[out->nsegs++] =
              (ferry__seg){lo, off, 1, list[i].padded, i - i0};
      }
    for (int64_t i = i0; i < i1; i++)
      out->padded += list[i].padded != 0;
    i0 = i1;
  }
  out->nextents = ne;
  out->window_first_extent[nw] = ne;
  out->window_first_slot[nw] = n;
  if (want_slots)
    out->window_first_seg[nw] = out->nsegs;
  free(tmp);
  return 0;
nomem:
  free(tmp);
  ferry__rank_plan_free(out);
  return ferry__oom(err, -1,
                    ((size_t)nw + 1) * (want_slots ? 5 : 4) * sizeof(int64_t) +
                        (size_t)(n ? n : 1) *
                            (sizeof *out->extents + sizeof *tmp +
                             (want_slots ? sizeof *out->segs : 0)),
                    "the resumed plan of %lld samples in %lld windows",
                    (long long)n, (long long)nw);
}

/* Append p's extents [e0, e1) and runs [g0, g1) to q (arrays sized by the
 * caller), extent indexes shifted by de and windows by dw. */
static void append_reads(ferry__rank_plan *q, const ferry__rank_plan *p,
                         int64_t e0, int64_t e1, int64_t g0, int64_t g1,
                         int64_t de, int64_t dw) {
  for (int64_t e = e0; e < e1; e++) {
    q->extents[q->nextents] = p->extents[e];
    q->extents[q->nextents++].window += dw;
  }
  for (int64_t g = g0; q->segs && g < g1; g++) {
    q->segs[q->nsegs] = p->segs[g];
    q->segs[q->nsegs++].extent += de;
  }
}

/* The rest of p (a fresh plan, with runs) after its first K batches, as
 * the sample-list path below would build it: the window holding the cut
 * rebuilt from its unserved samples (plan_from_items), the later windows
 * as they are, still mixed with their own keys.  O(plan + one window). */
static int plan_cut(const ferry__rank_plan *p, int64_t K, int want_segs,
                    ferry__rank_plan *q, ferry__err *err) {
  const int64_t B = p->batch_size, nw = p->nwindows;
  const int64_t S = K * B < p->nslots ? K * B : p->nslots;
  int64_t w0 = S < p->nslots ? ferry__plan_window_of(p, S) : nw;
  int64_t skip = w0 < nw ? S - p->window_first_slot[w0] : 0;
  int64_t nrest = w0 < nw ? p->window_samples[w0] - skip : 0;
  ferry__slot *ws = malloc((size_t)(nrest + skip + 1) * sizeof *ws);
  item *list = malloc((size_t)(nrest + 1) * sizeof *list);
  ferry__rank_plan first = {0};
  int rc = 0;
  memset(q, 0, sizeof *q);
  if (!ws || !list) {
    rc = ferry__oom(err, -1,
                    (size_t)(nrest + skip + 1) * sizeof *ws +
                        (size_t)(nrest + 1) * sizeof *list,
                    "the resumed plan's window %lld of %lld samples",
                    (long long)w0, (long long)(nrest + skip));
    goto done;
  }
  if (w0 < nw)
    rc = ferry__plan_window_slots(p, w0, ws);
  if (rc) { /* a window of slices: its largest slice's order */
    rc = ferry__oom(err, -1, (size_t)(nrest + skip) * sizeof *ws,
                    "the order of the resumed plan's window %lld",
                    (long long)w0);
    goto done;
  }
  for (int64_t i = 0; i < nrest; i++) {
    const ferry__slot *sl = &ws[skip + i];
    const ferry__extent *x = &p->extents[sl->extent];
    list[i] = (item){sl->sample, x->part, x->row + sl->row, 0, sl->padded};
  }
  rc = plan_from_items(list, nrest, p->num_batches - K, B, 1, &first, err);
  if (rc)
    goto done;
  /* q: window 0 = first's, then p's windows w0+1 .. nw-1 */
  int64_t later = w0 < nw ? nw - w0 - 1 : 0;
  int64_t e1 = w0 < nw ? p->window_first_extent[w0 + 1] : p->nextents;
  int64_t g1 = w0 < nw ? p->window_first_seg[w0 + 1] : p->nsegs;
  int64_t nq = first.nwindows + later, ne = first.nextents + p->nextents - e1;
  int64_t ng = first.nsegs + p->nsegs - g1;
  q->extents = malloc((size_t)(ne + 1) * sizeof *q->extents);
  q->segs = malloc((size_t)(ng + 1) * sizeof *q->segs);
  q->window_first_extent = malloc((size_t)(nq + 1) * sizeof(int64_t));
  q->window_need = malloc((size_t)(nq + 1) * sizeof(int64_t));
  q->window_samples = malloc((size_t)(nq + 1) * sizeof(int64_t));
  q->window_first_slot = malloc((size_t)(nq + 1) * sizeof(int64_t));
  q->window_first_seg = malloc((size_t)(nq + 1) * sizeof(int64_t));
  if (!q->extents || !q->segs || !q->window_first_extent || !q->window_need ||
      !q->window_samples || !q->window_first_slot || !q->window_first_seg) {
    rc = ferry__oom(err, -1,
                    (size_t)(ne + 1) * sizeof *q->extents +
                        (size_t)(ng + 1) * sizeof *q->segs +
                        (size_t)(nq + 1) * 5 * sizeof(int64_t),
                    "the resumed plan's %lld extents and %lld runs in %lld "
                    "windows",
                    (long long)ne, (long long)ng, (long long)nq);
    goto done;
  }
  append_reads(q, &first, 0, first.nextents, 0, first.nsegs, 0, 0);
  append_reads(q, p, e1, p->nextents, g1, p->nsegs, first.nextents - e1,
               first.nwindows - w0 - 1);
  int64_t pos = 0;
  for (int64_t w = 0; w < nq; w++) {
    int64_t o = w - first.nwindows + w0 + 1; /* p's window (later ones) */
    int in_first = w < first.nwindows;
    q->window_first_extent[w] =
        in_first ? first.window_first_extent[w]
                 : p->window_first_extent[o] - e1 + first.nextents;
    q->window_first_seg[w] = in_first
                                 ? first.window_first_seg[w]
                                 : p->window_first_seg[o] - g1 + first.nsegs;
    q->window_samples[w] =
        in_first ? first.window_samples[w] : p->window_samples[o];
    q->window_first_slot[w] = pos;
    q->window_need[w] = pos / B;
    pos += q->window_samples[w];
  }
  q->window_first_extent[nq] = ne;
  q->window_first_seg[nq] = ng;
  q->window_first_slot[nq] = pos;
  q->nwindows = nq;
  q->num_batches = p->num_batches - K;
  q->epoch_samples = p->epoch_samples;
  q->dropped = p->dropped;
  q->nslots = pos;
  q->batch_size = B;
  q->padded = p->padded - (S - ferry__plan_real_before(p, S));
  q->mix_first = first.nwindows;
  q->mix_base = w0 + 1 - first.nwindows;
  q->nmixed = p->nmixed - q->mix_base > 0 ? p->nmixed - q->mix_base : 0;
  q->mix_key = p->mix_key;
  if (!want_segs) { /* reads only, as plan_from_items makes them */
    free(q->segs);
    free(q->window_first_seg);
    q->segs = NULL;
    q->window_first_seg = NULL;
    q->nsegs = 0;
  }
done:
  ferry__rank_plan_free(&first);
  free(ws);
  free(list);
  if (rc)
    ferry__rank_plan_free(q);
  return rc;
}

/* Every step kept the world size: each rank's plan is its fresh plan cut
 * after the batches served (out, and with all every rank's reads). */
static int resume_same_world(const ferry__pieces *ps, const int64_t *perm,
                             const ferry__plan_params *pp, int64_t served,
                             int rank, ferry__rank_plan *out,
                             ferry__rank_plan *all, ferry__err *err) {
  int rc = 0;
  for (int r = -1; r < pp->world_size && !rc; r++) {
    if ((r < 0 && !out) || (r >= 0 && !all))
      continue;
    ferry__rank_plan p = {0};
    rc = ferry__plan_build(ps, perm, pp, r < 0 ? rank : r, &p, err);
    if (!rc)
      rc = plan_cut(&p, served, r < 0, r < 0 ? out : &all[r], err);
    ferry__rank_plan_free(&p);
  }
  return rc;
}

/* plan_resume when every step kept the world size: the batches served are
 * checked against the plan's count step by step, then each plan is cut. */
static int resume_same(const ferry__pieces *ps, const int64_t *perm,
                       const ferry__plan_params *pp,
                       const ferry__resume_step *steps, int nsteps, int rank,
                       ferry__rank_plan *out, ferry__rank_plan *all,
                       ferry__err *err) {
  ferry__rank_plan p = {0};
  int rc = ferry__plan_build(ps, perm, pp, rank, &p, err);
  int64_t nb = p.num_batches, served = 0;
  ferry__rank_plan_free(&p);
  for (int s = 0; !rc && s < nsteps; s++) {
    if (steps[s].batches > nb - served)
      return ferry__seterr(
          err, FERRY_EFORMAT,
          "resume step %d: %lld batches served over %d ranks, but that "
          "part of the epoch has %lld batches over %d ranks",
          s, (long long)steps[s].batches, steps[s].world_size,
          (long long)(nb - served), pp->world_size);
    served += steps[s].batches;
  }
  if (!rc)
    rc = resume_same_world(ps, perm, pp, served, rank, out, all, err);
  if (rc) {
    if (out)
      ferry__rank_plan_free(out);
    for (int r = 0; all && r < pp->world_size; r++)
      ferry__rank_plan_free(&all[r]);
  }
  return rc;
}

/* ---- Elastic resume: the unserved samples as ranges ----------------------
 *
 * Over another world size the rest of the epoch is a sequence of ranges:
 * served slots [a, b) of window w of old rank r0's plan (the plan over
 * steps[0]'s world size), real or served as pads, with a group (windows of
 * the new plan break where it changes).  An old rank's unserved part is its
 * remaining windows, so ranges are O(windows) (O(chunks) at worst), never
 * O(samples); a share is found by prefix sums over ranges, and a window's
 * samples are made from its old windows one window at a time. */

typedef struct range {
  int r0, padded;
  int64_t w, a, b, group;
} range;

typedef struct rlist {
  range *v;
  int64_t n, cap;
} rlist;

static void rlists_free(rlist *l, int P) {
  for (int r = 0; l && r < P; r++)
    free(l[r].v);
  free(l);
}

static int range_push(rlist *l, range x) {
  if (x.b <= x.a)
    return 0;
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 16;
    range *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v)
      return FERRY_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
  return 0;
}

/* Drop the first n samples of l. */
static void rlist_drop(rlist *l, int64_t n) {
  int64_t i = 0;
  while (i < l->n && n > 0) {
    int64_t len = l->v[i].b - l->v[i].a;
    if (len <= n) {
      n -= len;
      i++;
    } else {
      l->v[i].a += n;
      n = 0;
    }
  }
  if (i == 0) /* nothing dropped whole (l->v may be NULL: no memmove) */
    return;
  memmove(l->v, l->v + i, (size_t)(l->n - i) * sizeof *l->v);
  l->n -= i;
}

/* Positions h[0..nh) of l (ascending, each below its length) as ranges of
 * one sample each, consecutive ones merged, into *out (which the caller
 * frees). */
static int rlist_holes(const rlist *l, const int64_t *h, int64_t nh,
                       rlist *out) {
  int64_t i = 0, at = 0; /* at: the first position of range i */
  int rc = 0;
  for (int64_t k = 0; k < nh && !rc; k++) {
    while (i < l->n && h[k] >= at + (l->v[i].b - l->v[i].a)) {
      at += l->v[i].b - l->v[i].a;
      i++;
    }
    if (i >= l->n)
      return FERRY_EINVAL;
    range x = l->v[i];
    x.a += h[k] - at;
    x.b = x.a + 1;
    range *last = out->n ? &out->v[out->n - 1] : NULL;
    if (last && last->r0 == x.r0 && last->w == x.w && last->b == x.a &&
        last->group == x.group && last->padded == x.padded)
      last->b++;
    else
      rc = range_push(out, x);
  }
  return rc;
}

/* Rank r's rest after step st: its holes (the positions before served[r]
 * it did not serve), then what follows served[r]. */
static int rlist_step(rlist *l, const ferry__resume_step *st, int r, int64_t K,
                      int64_t B) {
  rlist h = {0};
  int rc = 0;
  if (st->holes && st->nholes[r] > 0)
    rc = rlist_holes(l, st->holes[r], st->nholes[r], &h);
  if (rc) {
    free(h.v);
    return rc;
  }
  rlist_drop(l, st->served ? st->served[r] : K * B);
  for (int64_t i = 0; !rc && i < l->n; i++)
    rc = range_push(&h, l->v[i]);
  if (rc) {
    free(h.v);
    return rc;
  }
  free(l->v);
  *l = h;
  return 0;
}

/* Append positions [a, a+len) of R (pre: its ranges' first positions, then
 * its length n) to l, wrapping modulo n; padded: as pads of group g. */
static int rlist_slice(rlist *l, const rlist *R, const int64_t *pre, int64_t a,
                       int64_t len, int padded, int64_t g) {
  const int64_t n = pre[R->n];
  int rc = 0;
  while (len > 0 && !rc) {
    if (a >= n)
      a = 0;
    int64_t i = ferry__last_le(pre, R->n, a);
    range x = R->v[i];
    x.a += a - pre[i];
    int64_t take = x.b - x.a < len ? x.b - x.a : len;
    x.b = x.a + take;
    if (padded) {
      x.padded = 1;
      x.group = g;
    }
    rc = range_push(l, x);
    a += take;
    len -= take;
  }
  return rc;
}

/* Deal the unserved real samples of lists[0..P) over Pn ranks with the tail
 * rule: contiguous shares of their concatenation (old rank order, then
 * served order), pads repeating its first samples.  Replaces *lists (P
 * entries) by Pn new ones; *nb becomes the new batch count, *dropped grows
 * by the samples the new deal cannot serve. */
static int redeal(rlist **lists, int P, int Pn, int64_t B, int tail,
                  int64_t *nb, int64_t *dropped, int64_t *next_group) {
  rlist *old = *lists, R = {0};
  rlist *nl = calloc((size_t)Pn, sizeof *nl);
  int64_t *pre = NULL;
  int rc = nl ? 0 : FERRY_ENOMEM;
  for (int r = 0; r < P && !rc; r++) {
    for (int64_t i = 0; i < old[r].n && !rc; i++)
      if (!old[r].v[i].padded)
        rc = range_push(&R, old[r].v[i]);
    if (!rc) { /* not needed again: keep the peak near two lists, not three */
      free(old[r].v);
      old[r] = (rlist){0};
    }
  }
  if (!rc && !(pre = malloc((size_t)(R.n + 1) * sizeof *pre)))
    rc = FERRY_ENOMEM;
  int64_t n = 0;
  for (int64_t i = 0; !rc && i < R.n; i++) {
    pre[i] = n;
    n += R.v[i].b - R.v[i].a;
  }
  if (!rc)
    pre[R.n] = n;
  int64_t nbn = 0;
  if (n > 0) {
    int64_t smin = n / Pn, smax = (n + Pn - 1) / Pn;
    nbn = tail == FERRY__TAIL_DROP ? smin / B : (smax + B - 1) / B;
  }
  int64_t pad_before = 0, served = 0;
  for (int r = 0; r < Pn && !rc; r++) {
    int64_t lo = n * r / Pn, share = n * (r + 1) / Pn - lo;
    int64_t take = tail == FERRY__TAIL_DROP ? nbn * B : share;
    int64_t pads = tail == FERRY__TAIL_PAD && n > 0 ? nbn * B - share : 0;
    rc = rlist_slice(&nl[r], &R, pre, lo, take, 0, 0);
    served += take;
    int64_t g = (*next_group)++;
    if (!rc && pads > 0)
      rc = rlist_slice(&nl[r], &R, pre, pad_before % n, pads, 1, g);
    pad_before += pads;
  }
  free(R.v);
  free(pre);
  if (rc) {
    rlists_free(nl, Pn);
    return rc;
  }
  *dropped += n - served;
  rlists_free(old, P);
  *lists = nl;
  *nb = nbn;
  return 0;
}

/* The old plans (steps[0]'s world size), rebuilt one at a time as ranges
 * name them: a new rank's ranges come in old rank order (its pads may wrap
 * around once), so each is built about once per new plan. */
typedef struct old_plans {
  const ferry__pieces *ps;
  const int64_t *perm;
  ferry__plan_params pp;
  int r; /* the rank held in p, -1: none */
  ferry__rank_plan p;
  ferry__slot *slots; /* scratch: one window of p */
  int64_t cap;
} old_plans;

static int old_get(old_plans *o, int r, ferry__err *err) {
  if (o->r == r)
    return 0;
  ferry__rank_plan_free(&o->p);
  o->r = -1;
  int rc = ferry__plan_build(o->ps, o->perm, &o->pp, r, &o->p, err);
  if (!rc)
    o->r = r;
  return rc;
}

/* Grow *v (elements of size sz, capacity *cap) to hold need. */
static int grow(void **v, int64_t *cap, int64_t need, size_t sz) {
  if (need <= *cap)
    return 0;
  int64_t c = *cap ? *cap : 16;
  while (c < need)
    c *= 2;
  void *nv = realloc(*v, (size_t)c * sz);
  if (!nv)
    return FERRY_ENOMEM;
  *v = nv;
  *cap = c;
  return 0;
}

/* The state of plan_from_ranges: the plan it fills and its scratch. */
typedef struct rbuild {
  old_plans *o;
  ferry__rank_plan *out;
  int want_slices;
  item *items, *tmp;
  int64_t icap, tcap, ecap, rcap;
  int last_r0;
  int64_t last_w, last_run0, last_nruns;
} rbuild;

/* Append range x's samples to b->items from k on (the old window's served
 * order, stretch [a, b)) and, with slices, its slice.  Returns the new k or
 * a negative error. */
static int64_t range_items(rbuild *b, const range *x, int64_t k,
                           ferry__err *err) {
  old_plans *o = b->o;
  ferry__rank_plan *out = b->out;
  int rc = old_get(o, x->r0, err);
  if (rc)
    return rc;
  const ferry__rank_plan *p = &o->p;
  if (grow((void **)&o->slots, &o->cap, p->window_samples[x->w],
           sizeof *o->slots) ||
      grow((void **)&b->items, &b->icap, k + x->b - x->a, sizeof(item)) ||
      ferry__plan_window_slots(p, x->w, o->slots))
    return ferry__oom(err, -1,
                      (size_t)p->window_samples[x->w] * sizeof *o->slots +
                          (size_t)(k + x->b - x->a) * sizeof(item),
                      "the resumed plan's samples from window %lld of old "
                      "rank %d",
                      (long long)x->w, x->r0);
  for (int64_t j = x->a; j < x->b; j++) {
    const ferry__slot *s = &o->slots[j];
    const ferry__extent *e = &p->extents[s->extent];
    b->items[k++] =
        (item){s->sample, e->part, e->row + s->row, x->group, x->padded};
  }
  if (!b->want_slices)
    return k;
  if (x->r0 != b->last_r0 || x->w != b->last_w) { /* copy the window's runs */
    int64_t g0 = p->window_first_seg[x->w], g1 = p->window_first_seg[x->w + 1];
    if (grow((void **)&out->runs, &b->rcap, out->nruns + g1 - g0,
             sizeof *out->runs))
      return ferry__oom(
          err, -1, (size_t)(out->nruns + g1 - g0) * sizeof *out->runs,
          "the resumed plan's %lld runs", (long long)(out->nruns + g1 - g0));
    b->last_r0 = x->r0;
    b->last_w = x->w;
    b->last_run0 = out->nruns;
    b->last_nruns = g1 - g0;
    for (int64_t g = g0; g < g1; g++) {
      const ferry__seg *sg = &p->segs[g];
      const ferry__extent *e = &p->extents[sg->extent];
      out->runs[out->nruns++] = (ferry__run){
          e->part, e->row + sg->off, sg->count, e->global_first + sg->off};
    }
  }
  int mixed = x->w >= p->mix_first && x->w < p->nmixed;
  uint64_t key = mixed ? ferry__rand_key(p->mix_key, FERRY__STREAM_WINDOW,
                                         (uint64_t)(x->w + p->mix_base), 0)
                       : 0;
  out->slices[out->nslices++] = (ferry__slice){
      b->last_run0, b->last_nruns, x->a, x->b, key, mixed, x->padded};
  return k;
}

/* The rank plan serving the ranges l in order, num_batches nb of B, windows
 * breaking where the group changes (as plan_from_items would build it from
 * the samples, but with slices for runs).  want_slices 0: reads only.
 * O(ranges + extents + one window). */
static int plan_from_ranges(old_plans *o, const rlist *l, int64_t nb, int64_t B,
                            int want_slices, ferry__rank_plan *out,
                            ferry__err *err) {
  memset(out, 0, sizeof *out);
  rbuild b = {.o = o, .out = out, .want_slices = want_slices, .last_r0 = -1};
  int64_t nw = 0;
  for (int64_t i = 0; i < l->n; i++)
    nw += i == 0 || l->v[i].group != l->v[i - 1].group;
  out->num_batches = nb;
  out->batch_size = B;
  out->nwindows = nw;
  out->window_first_extent = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_need = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_samples = calloc((size_t)nw + 1, sizeof(int64_t));
  out->window_first_slot = calloc((size_t)nw + 1, sizeof(int64_t));
  int rc = 0;
  if (!out->window_first_extent || !out->window_need || !out->window_samples ||
      !out->window_first_slot)
    rc = ferry__oom(err, -1, ((size_t)nw + 1) * 4 * sizeof(int64_t),
                    "the resumed plan's %lld windows", (long long)nw);
  if (!rc && want_slices) {
    out->slices = malloc((size_t)(l->n + 1) * sizeof *out->slices);
    out->window_first_slice = calloc((size_t)nw + 1, sizeof(int64_t));
    if (!out->slices || !out->window_first_slice)
      rc = ferry__oom(err, -1,
                      (size_t)(l->n + 1) * sizeof *out->slices +
                          ((size_t)nw + 1) * sizeof(int64_t),
                      "the resumed plan's %lld slices", (long long)l->n);
  }
  int64_t pos = 0, w = -1;
  for (int64_t i0 = 0; i0 < l->n && !rc;) {
    int64_t i1 = i0 + 1, k = 0;
    while (i1 < l->n && l->v[i1].group == l->v[i0].group)
      i1++;
    w++;
    if (want_slices)
      out->window_first_slice[w] = out->nslices;
    for (int64_t i = i0; i < i1 && k >= 0; i++)
      k = range_items(&b, &l->v[i], k, err);
    if (k < 0) {
      rc = (int)k;
      break;
    }
    if (grow((void **)&b.tmp, &b.tcap, k, sizeof(item)) ||
        grow((void **)&out->extents, &b.ecap, out->nextents + k,
             sizeof *out->extents)) {
      rc =
          ferry__oom(err, -1,
                     (size_t)k * sizeof(item) +
                         (size_t)(out->nextents + k) * sizeof *out->extents,
                     "the resumed plan's extents of window %lld", (long long)w);
      break;
    }
    out->window_first_extent[w] = out->nextents;
    out->window_need[w] = pos / B;
    out->window_samples[w] = k;
    out->window_first_slot[w] = pos;
    out->nextents =
        window_extents(b.items, k, b.tmp, w, out->extents, out->nextents);
    for (int64_t i = 0; i < k; i++)
      out->padded += b.items[i].padded != 0;
    pos += k;
    i0 = i1;
  }
  if (!rc) {
    out->window_first_extent[nw] = out->nextents;
    out->window_first_slot[nw] = pos;
    out->nslots = pos;
    if (want_slices)
      out->window_first_slice[nw] = out->nslices;
  }
  free(b.items);
  free(b.tmp);
  if (rc)
    ferry__rank_plan_free(out);
  return rc;
}

/* plan_resume when a step changes the world size: the ranges of every old
 * rank (its windows), cut and dealt step by step, then out and all built
 * from them. */
static int resume_elastic(const ferry__pieces *ps, const int64_t *perm,
                          const ferry__plan_params *pp,
                          const ferry__resume_step *steps, int nsteps, int rank,
                          ferry__rank_plan *out, ferry__rank_plan *all,
                          ferry__err *err) {
  const int64_t B = pp->batch_size;
  int P = steps[0].world_size;
  old_plans o = {.ps = ps, .perm = perm, .pp = *pp, .r = -1};
  o.pp.world_size = P;
  rlist *lists = calloc((size_t)P, sizeof *lists);
  int rc = lists ? 0
                 : ferry__oom(err, -1, (size_t)P * sizeof *lists,
                              "the resumed plan's ranges of %d ranks", P);
  int64_t nb = 0, M = 0, dropped = 0, group = 0;
  for (int r = 0; r < P && !rc; r++) {
    rc = old_get(&o, r, err);
    const ferry__rank_plan *p = &o.p;
    for (int64_t w = 0; !rc && w < p->nwindows; w++) {
      int padded = p->window_samples[w] > 0 &&
                   p->segs[p->window_first_seg[w]].padded != 0;
      rc = range_push(
          &lists[r], (range){r, padded, w, 0, p->window_samples[w], group + w});
      if (rc)
        rc = ferry__oom(err, -1,
                        (size_t)(lists[r].cap ? 2 * lists[r].cap : 16) *
                            sizeof(range),
                        "the resumed plan's ranges of old rank %d", r);
    }
    if (!rc) {
      nb = p->num_batches;
      M = p->epoch_samples;
      dropped = p->dropped;
      group += p->nwindows;
    }
  }
  ferry__rank_plan_free(&o.p); /* rebuilt as the ranges name them */
  o.r = -1;
  for (int s = 0; s < nsteps && !rc; s++) {
    int64_t K = steps[s].batches;
    if (steps[s].world_size != P || K > nb) {
      rc =
          ferry__seterr(err, FERRY_EFORMAT,
                        "resume step %d: %lld batches served over %d ranks, "
                        "but that part of the epoch has %lld batches over "
                        "%d ranks",
                        s, (long long)K, steps[s].world_size, (long long)nb, P);
      break;
    }
    for (int r = 0; r < P && !rc; r++) {
      int64_t left = 0;
      for (int64_t i = 0; steps[s].served && i < lists[r].n; i++)
        left += lists[r].v[i].b - lists[r].v[i].a;
      if (steps[s].served && steps[s].served[r] > left)
        rc =
            ferry__seterr(err, FERRY_EFORMAT,
                          "resume step %d: rank %d served %lld samples of "
                          "the %lld it had left",
                          s, r, (long long)steps[s].served[r], (long long)left);
      if (!rc && rlist_step(&lists[r], &steps[s], r, K, B))
        rc = ferry__seterr(err, FERRY_EFORMAT,
                           "resume step %d: rank %d's unserved positions "
                           "are not inside what it had left",
                           s, r);
    }
    if (rc)
      break;
    nb -= K;
    if (steps[s].served) { /* ranks served different counts: the longest
                            * rest (batches of 1: max_tokens) */
      nb = 0;
      for (int r = 0; r < P; r++) {
        int64_t left = 0;
        for (int64_t i = 0; i < lists[r].n; i++)
          left += lists[r].v[i].b - lists[r].v[i].a;
        nb = left > nb ? left : nb;
      }
    }
    int Pn = s + 1 < nsteps ? steps[s + 1].world_size : pp->world_size;
    if (Pn != P) {
      int64_t nr = 0;
      for (int r = 0; r < P; r++)
        nr += lists[r].n;
      rc = redeal(&lists, P, Pn, B, pp->tail, &nb, &dropped, &group);
      if (rc)
        rc = ferry__oom(
            err, -1, (size_t)(nr + 1) * (2 * sizeof(range) + sizeof(int64_t)),
            "the resumed plan's %lld ranges dealt from %d to %d "
            "ranks",
            (long long)nr, P, Pn);
      else
        P = Pn;
    }
  }
  for (int r = 0; !all && !rc && r < P; r++)
    if (r != rank) { /* only this rank's ranges are needed */
      free(lists[r].v);
      lists[r] = (rlist){0};
    }
  for (int r = -1; r < P && !rc; r++) {
    if ((r < 0 && !out) || (r >= 0 && !all))
      continue;
    ferry__rank_plan *q = r < 0 ? out : &all[r];
    rc = plan_from_ranges(&o, &lists[r < 0 ? rank : r], nb, B, r < 0, q, err);
    if (!rc) {
      q->epoch_samples = M;
      q->dropped = dropped;
    }
  }
  if (rc) {
    if (out)
      ferry__rank_plan_free(out);
    for (int r = 0; all && r < pp->world_size; r++)
      ferry__rank_plan_free(&all[r]);
  }
  ferry__rank_plan_free(&o.p);
  free(o.slots);
  rlists_free(lists, P);
  return rc;
}

int ferry__plan_resume(const ferry__pieces *ps, const int64_t *perm,
                       const ferry__plan_params *pp,
                       const ferry__resume_step *steps, int nsteps, int rank,
                       ferry__rank_plan *out, ferry__rank_plan *all,
                       ferry__err *err) {
  if (out)
    memset(out, 0, sizeof *out);
  if (nsteps < 1 || !steps || pp->world_size < 1 || rank < 0 ||
      rank >= pp->world_size || pp->batch_size < 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "resume plan: bad steps, world size or rank");
  for (int s = 0; s < nsteps; s++) {
    if (steps[s].world_size < 1 || steps[s].batches < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "resume step %d: world size %d, %lld batches", s,
                           steps[s].world_size, (long long)steps[s].batches);
    for (int r = 0; steps[s].served && r < steps[s].world_size; r++)
      if (steps[s].served[r] < 0)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "resume step %d: rank %d served %lld", s, r,
                             (long long)steps[s].served[r]);
    for (int r = 0; steps[s].holes && r < steps[s].world_size; r++)
      for (int64_t k = 0; k < steps[s].nholes[r]; k++)
        if (!steps[s].served || steps[s].holes[r][k] < 0 ||
            steps[s].holes[r][k] >= steps[s].served[r] ||
            (k > 0 && steps[s].holes[r][k] <= steps[s].holes[r][k - 1]))
          return ferry__seterr(err, FERRY_EFORMAT,
                               "resume step %d: rank %d's unserved position "
                               "%lld",
                               s, r, (long long)steps[s].holes[r][k]);
    if (steps[s].served && pp->batch_size != 1)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "resume step %d: per-rank counts with batch_size "
                           "%lld (they are max_tokens')",
                           s, (long long)pp->batch_size);
  }
  int same = 1;
  for (int s = 0; s < nsteps; s++)
    same &= steps[s].world_size == pp->world_size && !steps[s].served;
  if (same) /* the common restart: no sample list (O(plan + window)) */
    return resume_same(ps, perm, pp, steps, nsteps, rank, out, all, err);
  return resume_elastic(ps, perm, pp, steps, nsteps, rank, out, all, err);
}
