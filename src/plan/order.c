/*
 * order.c - the served order of a rank's plan, computed slot by slot.
 *
 * A window mixes the samples of shuffle_buffer pieces.  Its order used to be
 * a Fisher-Yates shuffle of an array of 32-byte slots, one per sample of the
 * window, made when the window was admitted: with chunks of 4 Mi one-byte
 * samples that is 512 MiB a window, 1.5 GiB for the windows alive at once
 * (issue 30).  Instead, slot i of a window is the sample at position
 * ferry__order_at(i) of the window's unmixed order (its runs, in order), a
 * keyed bijection computed on demand: nothing per sample is stored, any
 * range of slots is computed from the plan alone (the pipeline computes a
 * batch's slots as it assembles it), and the order is still a pure function
 * of (pieces, options, seed, epoch, rank, window).
 *
 * The bijection is a balanced Feistel network of 4 rounds over 2h bits
 * (2^(2h) >= n, h >= 1), each round's function the SplitMix64 finaliser of
 * a round key xor the right half, walked along its cycles until the value
 * is below n ("cycle walking": a permutation of [0, 2^(2h)) restricted to
 * [0, n) by following each element's cycle is a permutation of [0, n)).
 * 2^(2h) < 4n, so a slot costs at most 4 network evaluations expected and
 * about 2 on average.  Four rounds of a pseudorandom function make a
 * pseudorandom permutation (Luby and Rackoff); `ferry quality` measures the
 * orders next to uniform ones (docs/shuffling.md).
 */
#include "config.h"
#include "plan/draw.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

enum { ROUNDS = 4, CHECK_BLOCK = 1024 };

void ferry__order_init(ferry__order *o, uint64_t n, uint64_t key) {
  unsigned bits = 0;
  while (bits < 64 && n > 1 && ((n - 1) >> bits) != 0)
    bits++;
  o->n = n;
  o->half = bits < 2 ? 1 : (bits + 1) / 2;
  for (int r = 0; r < ROUNDS; r++)
    o->key[r] = ferry__rand64(key, (uint64_t)r);
}

static uint64_t feistel(const ferry__order *o, uint64_t x) {
  const unsigned h = o->half;
  const uint64_t mask = (UINT64_C(1) << h) - 1;
  uint64_t l = x >> h, r = x & mask;
  for (int k = 0; k < ROUNDS; k++) {
    uint64_t t = l ^ (ferry__mix64(o->key[k] ^ r) & mask);
    l = r;
    r = t;
  }
  return (l << h) | r;
}

uint64_t ferry__order_at(const ferry__order *o, uint64_t i) {
  if (o->n <= 1)
    return i;
  uint64_t x = i;
  do
    x = feistel(o, x);
  while (x >= o->n);
  return x;
}

int64_t ferry__extent_at(const ferry__extent *x, int64_t e0, int64_t ne,
                         int64_t part, int64_t row) {
  int64_t lo = e0, hi = ne - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (x[mid].part < part || (x[mid].part == part && x[mid].row <= row))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int ferry__plan_slots_computed(const ferry__rank_plan *p) {
  return !p->draw && (p->window_first_seg || p->window_first_slice);
}

/* The run of segs [g0, g1) holding unmixed position pos (their pos
 * ascending): the hint when it holds it (the next slot of an unmixed
 * window), else a binary search. */
static int64_t seg_find(const ferry__seg *s, int64_t g0, int64_t g1,
                        int64_t pos, int64_t hint) {
  if (hint >= g0 && hint < g1 && s[hint].pos <= pos &&
      pos < s[hint].pos + s[hint].count)
    return hint;
  int64_t lo = g0, hi = g1 - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (s[mid].pos <= pos)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Slots [j0, j0 + n) of window w of a plan with runs: position j of the
 * unmixed order (the window's runs, in order) is mixed, in an own window,
 * by the order keyed by (seed, epoch, rank, window). */
static void seg_window_range(const ferry__rank_plan *p, int64_t w, int64_t j0,
                             int64_t n, ferry__slot *out) {
  const int64_t g0 = p->window_first_seg[w], g1 = p->window_first_seg[w + 1];
  const int mixed = w >= p->mix_first && w < p->nmixed;
  ferry__order o;
  if (mixed)
    ferry__order_init(&o, (uint64_t)p->window_samples[w],
                      ferry__rand_key(p->mix_key, FERRY__STREAM_WINDOW,
                                      (uint64_t)(w + p->mix_base), 0));
  int64_t g = g0;
  for (int64_t k = 0; k < n; k++) {
    int64_t pos =
        mixed ? (int64_t)ferry__order_at(&o, (uint64_t)(j0 + k)) : j0 + k;
    g = seg_find(p->segs, g0, g1, pos, g);
    const ferry__seg *s = &p->segs[g];
    int64_t row = s->off + (pos - s->pos);
    out[k] = (ferry__slot){p->extents[s->extent].global_first + row, s->extent,
                           row, (uint8_t)(s->padded != 0)};
  }
}

/* The run of a slice holding position pos of its old window's unmixed
 * order: a scan of the slice's runs from the hint run r (position *at), or
 * from the first when pos lies before it -- the old window's runs are its
 * pieces (about shuffle_buffer of them), so no prefix array is kept. */
static int64_t run_find(const ferry__rank_plan *p, const ferry__slice *sl,
                        int64_t pos, int64_t *r, int64_t *at) {
  if (pos < *at) {
    *r = 0;
    *at = 0;
  }
  while (*r + 1 < sl->nruns && *at + p->runs[sl->run0 + *r].count <= pos) {
    *at += p->runs[sl->run0 + *r].count;
    (*r)++;
  }
  return *r;
}

/* Slots [j0, j0 + n) of window w of slices (elastic resume): each slice is
 * a stretch [a, b) of an old window's served order, remade from the old
 * window's runs with its key, and mapped onto this plan's extents. */
static void slice_window_range(const ferry__rank_plan *p, int64_t w, int64_t j0,
                               int64_t n, ferry__slot *out) {
  const int64_t e0 = p->window_first_extent[w],
                ne = p->window_first_extent[w + 1];
  int64_t at = 0, k = 0; /* slot `at` of the window starts slice i */
  for (int64_t i = p->window_first_slice[w];
       i < p->window_first_slice[w + 1] && k < n; i++) {
    const ferry__slice *sl = &p->slices[i];
    int64_t len = sl->b - sl->a;
    if (at + len <= j0 + k) {
      at += len;
      continue;
    }
    int64_t total = 0, r = 0, rpos = 0;
    for (int64_t x = 0; x < sl->nruns; x++)
      total += p->runs[sl->run0 + x].count;
    ferry__order o;
    ferry__order_init(&o, (uint64_t)total, sl->key);
    for (; k < n && j0 + k < at + len; k++) {
      int64_t q = sl->a + (j0 + k - at);
      int64_t pos = sl->mixed ? (int64_t)ferry__order_at(&o, (uint64_t)q) : q;
      run_find(p, sl, pos, &r, &rpos);
      const ferry__run *run = &p->runs[sl->run0 + r];
      int64_t off = pos - rpos, row = run->row + off;
      int64_t e = ferry__extent_at(p->extents, e0, ne, run->part, row);
      out[k] =
          (ferry__slot){run->global_first + off, e, row - p->extents[e].row,
                        (uint8_t)(sl->padded != 0)};
    }
    at += len;
  }
}

int ferry__plan_slots_get(const ferry__rank_plan *p, int64_t i0, int64_t n,
                          ferry__slot *out) {
  if (!ferry__plan_slots_computed(p) || i0 < 0 || n < 0 || i0 > p->nslots ||
      n > p->nslots - i0)
    return FERRY_EINVAL;
  if (n == 0)
    return 0;
  int64_t w = ferry__plan_window_of(p, i0), k = 0;
  while (k < n) {
    int64_t j0 = i0 + k - p->window_first_slot[w];
    int64_t left = p->window_samples[w] - j0;
    int64_t take = n - k < left ? n - k : left;
    if (take > 0) {
      if (p->window_first_slice)
        slice_window_range(p, w, j0, take, out + k);
      else
        seg_window_range(p, w, j0, take, out + k);
      k += take;
    }
    w++;
  }
  return 0;
}

int ferry__plan_window_slots(const ferry__rank_plan *p, int64_t w,
                             ferry__slot *out) {
  if (p->draw)
    return ferry__draw_window_slots(p, w, out);
  return ferry__plan_slots_get(p, p->window_first_slot[w], p->window_samples[w],
                               out);
}

int ferry__plan_slots(const ferry__rank_plan *p, ferry__slot **out) {
  *out = malloc((size_t)(p->nslots ? p->nslots : 1) * sizeof **out);
  if (!*out)
    return FERRY_ENOMEM;
  for (int64_t w = 0; w < p->nwindows; w++)
    if (ferry__plan_window_slots(p, w, *out + p->window_first_slot[w])) {
      free(*out);
      *out = NULL;
      return FERRY_ENOMEM;
    }
  return 0;
}

/* The checksum's slot part: every slot's sample and pad mark in served
 * order, a block at a time (a sampling plan: a window at a time). */
static int checksum_slots(const ferry__rank_plan *p, uint64_t *h) {
  if (ferry__plan_slots_computed(p)) {
    ferry__slot buf[CHECK_BLOCK];
    for (int64_t i = 0; i < p->nslots; i += CHECK_BLOCK) {
      int64_t n = p->nslots - i < CHECK_BLOCK ? p->nslots - i : CHECK_BLOCK;
      int rc = ferry__plan_slots_get(p, i, n, buf);
      if (rc)
        return rc;
      for (int64_t j = 0; j < n; j++) {
        *h = ferry__fnv1a(*h, &buf[j].sample, sizeof buf[j].sample);
        *h = ferry__fnv1a(*h, &buf[j].padded, 1);
      }
    }
    return 0;
  }
  if (!p->draw)
    return 0; /* reads only: no order to hash */
  int64_t most = ferry__plan_window_max(p);
  ferry__slot *buf = malloc((size_t)(most ? most : 1) * sizeof *buf);
  if (!buf)
    return FERRY_ENOMEM;
  for (int64_t w = 0; w < p->nwindows; w++) {
    if (ferry__plan_window_slots(p, w, buf)) {
      free(buf);
      return FERRY_ENOMEM;
    }
    for (int64_t i = 0; i < p->window_samples[w]; i++) {
      *h = ferry__fnv1a(*h, &buf[i].sample, sizeof buf[i].sample);
      *h = ferry__fnv1a(*h, &buf[i].padded, 1);
    }
  }
  free(buf);
  return 0;
}

int ferry__rank_plan_checksum(const ferry__rank_plan *p, uint64_t *out) {
  uint64_t h = FERRY__FNV_INIT;
  h = ferry__fnv1a(h, &p->num_batches, sizeof p->num_batches);
  int rc = checksum_slots(p, &h);
  if (rc)
    return rc == FERRY_EINVAL ? FERRY_ENOMEM : rc;
  for (int64_t b = 0; b <= p->num_batches; b++) {
    int64_t s = ferry__plan_batch_start(p, b);
    h = ferry__fnv1a(h, &s, sizeof s);
  }
  *out = h;
  return 0;
}
