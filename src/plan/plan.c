/*
 * plan.c - the epoch plan as pure functions.  Given the chunks of a dataset,
 * the options, the seed, the epoch and the world size, it says which rows
 * each rank reads (extents, grouped in windows) and in which order it serves
 * them (slots, cut into batches).  No MPI, no I/O, no clock: the same inputs
 * give the same plan on every rank, compiler and platform, which is what lets
 * rank 0 draw the permutation, broadcast it, and every rank check it.
 *
 * The generator is SplitMix64 used as a counter-based PRNG: value n of
 * stream k is mix64(k + (n + 1) * golden).  Bounded draws use rejection so
 * Fisher-Yates is unbiased and never depends on floating point.
 *
 * Steps: chunks -> subset (max_chunks/fraction, drawn from the seed alone so
 * every epoch uses the same subset) -> pieces (chunks, or blocks of
 * block_size with shuffle=block) -> permutation of pieces (seed, epoch) ->
 * the global sample sequence S -> partition (contiguous: rank r takes S
 * [rM/P, (r+1)M/P); strided: rank r takes pieces r, r+P, ..., then the
 * ranks dealt more than that balanced count hand their surplus to the ranks
 * dealt less, so both partitions give every rank its balanced share) -> tail
 * (drop_last truncates every rank to the same whole number of batches before
 * anything is read; pad appends repeats of S's first samples, rank r taking
 * the ones after ranks < r; partial keeps short or empty last batches) ->
 * windows of shuffle_buffer pieces whose samples are mixed (seed, epoch,
 * rank, window) -> extents: a window's pieces sorted by position and merged
 * when adjacent, so one read serves several pieces.
 */
#include "config.h"
#include "plan/plan.h"
#include "core/options.h"
#include "plan/draw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9e3779b97f4a7c15ULL

/* Uniform in [0, bound) by rejection: exact, integer-only. */
static uint64_t bounded(uint64_t key, uint64_t *counter, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = ferry__rand64(key, (*counter)++);
    if (r >= threshold)
      return r % bound;
  }
}

/* Fisher-Yates, i from n-1 down to 1, j uniform in [0, i].  The draws do
 * not depend on the array, so they are made AHEAD steps early and perm[j]
 * is prefetched: the swaps of a large permutation are cache misses, and
 * hiding them makes it about twice as fast -- with the very same draws, in
 * the same order, so the same permutation. */
void ferry__shuffle(int64_t *perm, int64_t n, uint64_t key) {
  enum { AHEAD = 16 };
  uint64_t counter = 0;
  int64_t js[AHEAD];
  int64_t steps = n > 1 ? n - 1 : 0; /* step t swaps i = n-1-t */
  for (int64_t t = 0; t < steps && t < AHEAD; t++) {
    js[t] = (int64_t)bounded(key, &counter, (uint64_t)(n - t));
    __builtin_prefetch(&perm[js[t]], 1);
  }
  for (int64_t t = 0; t < steps; t++) {
    int64_t i = n - 1 - t, j = js[t % AHEAD];
    if (t + AHEAD < steps) {
      int64_t k = (int64_t)bounded(key, &counter, (uint64_t)(n - t - AHEAD));
      js[t % AHEAD] = k;
      __builtin_prefetch(&perm[k], 1);
    }
    int64_t x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The storage alignment of the variables: the lcm of their storage chunk
 * rows (the largest when that exceeds FERRY__ALIGN_MAX times the largest or
 * overflows), 0 when no variable is chunked. */
static int64_t storage_align(const ferry__manifest *m) {
  int64_t align = 0, largest = 0;
  for (int v = 0; v < m->nvars; v++) {
    int64_t c = m->vars[v].chunk_rows;
    if (c <= 0)
      continue;
    if (c > largest)
      largest = c;
    if (align == 0) {
      align = c;
      continue;
    }
    int64_t g = gcd64(align, c);
    /* align / g * c, unless it overflows or grows past the cap */
    if (align / g > INT64_MAX / c || align / g * c > FERRY__ALIGN_MAX * largest)
      align = -1;
    else if (align > 0)
      align = align / g * c;
  }
  return align < 0 ? largest : align;
}

int64_t ferry__auto_chunk_samples(const ferry__manifest *m, size_t row_total,
                                  const ferry__plan_params *pp, char *why,
                                  size_t why_len) {
  int64_t base =
      (int64_t)(FERRY__AUTO_CHUNK_BYTES / (row_total ? row_total : 1));
  if (base < 1)
    base = 1;
  int64_t align = storage_align(m);
  if (align > 0) {
    int64_t k = (base + align / 2) / align; /* nearest multiple */
    if (k < 1)
      k = 1;
    base = k > INT64_MAX / align ? align : k * align;
  }
  if (why && why_len)
    snprintf(why, why_len, "auto: about %d KiB of rows%s%lld rows",
             (int)(FERRY__AUTO_CHUNK_BYTES >> 10),
             align > 0 ? ", whole storage chunks: " : ": ", (long long)base);
  if (!pp || pp->shuffle == FERRY__SHUFFLE_NONE || m->num_samples <= 0)
    return base;
  /* Enough chunks for every rank's shuffle window to mix several. */
  int64_t sb = pp->shuffle_buffer > 1 ? pp->shuffle_buffer : 1;
  int64_t ws = pp->world_size > 1 ? pp->world_size : 1;
  int64_t target = FERRY__AUTO_MIN_CHUNKS;
  if (sb > INT64_MAX / 8 / ws)
    target = INT64_MAX;
  else if (8 * ws * sb > target)
    target = 8 * ws * sb;
  int64_t n = m->num_samples;
  if (n / base >= target)
    return base;
  int64_t cs = n / target, unit = align > 0 ? align : 1;
  cs = cs / unit * unit;
  if (cs < unit)
    cs = unit; /* fewer storage chunks than target: one each, never cut */
  if (cs >= base)
    return base;
  if (why && why_len)
    snprintf(why, why_len,
             "auto: %lld samples / %lld chunks (max(%d, 8 x %lld ranks x "
             "shuffle_buffer %lld))%s: %lld rows",
             (long long)n, (long long)target, FERRY__AUTO_MIN_CHUNKS,
             (long long)ws, (long long)sb,
             align > 0 ? (cs == align ? ", at least one storage chunk"
                                      : ", whole storage chunks")
                       : "",
             (long long)cs);
  return cs;
}

int ferry__chunks_make(const ferry__manifest *m, int64_t chunk_samples,
                       ferry__chunk **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  if (chunk_samples < 1)
    return FERRY_EINVAL;
  int64_t total = 0;
  for (int64_t p = 0; p < m->nparts; p++)
    total += (m->parts[p].num_samples + chunk_samples - 1) / chunk_samples;
  ferry__chunk *c = malloc((size_t)(total ? total : 1) * sizeof *c);
  if (!c)
    return FERRY_ENOMEM;
  int64_t k = 0;
  for (int64_t p = 0; p < m->nparts; p++) {
    const ferry__part *part = &m->parts[p];
    for (int64_t row = 0; row < part->num_samples; row += chunk_samples) {
      int64_t cnt = part->num_samples - row;
      if (cnt > chunk_samples)
        cnt = chunk_samples;
      c[k++] = (ferry__chunk){p, row, cnt, part->first_sample + row};
    }
  }
  *out = c;
  *n = k;
  return 0;
}

int64_t ferry__last_le(const int64_t *v, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (v[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

int ferry__chunk_index_make(const ferry__manifest *m, int64_t chunk_samples,
                            ferry__chunk_index *out) {
  memset(out, 0, sizeof *out);
  if (chunk_samples < 1)
    return FERRY_EINVAL;
  out->part_chunk = malloc((size_t)(m->nparts + 1) * sizeof *out->part_chunk);
  if (!out->part_chunk)
    return FERRY_ENOMEM;
  out->m = m;
  out->chunk_samples = chunk_samples;
  out->part_chunk[0] = 0;
  for (int64_t p = 0; p < m->nparts; p++)
    out->part_chunk[p + 1] =
        out->part_chunk[p] + ceil_div(m->parts[p].num_samples, chunk_samples);
  out->nchunks = out->part_chunk[m->nparts];
  return 0;
}

void ferry__chunk_index_free(ferry__chunk_index *ci) {
  if (!ci)
    return;
  free(ci->part_chunk);
  memset(ci, 0, sizeof *ci);
}

ferry__chunk ferry__chunk_get(const ferry__chunk_index *ci, int64_t id) {
  /* the part p with part_chunk[p] <= id < part_chunk[p+1] (empty parts
   * share their value with the next part, and the last of equals wins) */
  int64_t p = ferry__last_le(ci->part_chunk, ci->m->nparts, id);
  const ferry__part *part = &ci->m->parts[p];
  int64_t row = (id - ci->part_chunk[p]) * ci->chunk_samples;
  int64_t cnt = part->num_samples - row;
  if (cnt > ci->chunk_samples)
    cnt = ci->chunk_samples;
  return (ferry__chunk){p, row, cnt, part->first_sample + row};
}

int64_t ferry__chunk_of_sample(const ferry__chunk_index *ci, int64_t g) {
  const ferry__manifest *m = ci->m;
  int64_t lo = 0, hi = m->nparts - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (m->parts[mid].first_sample <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  return ci->part_chunk[lo] +
         (g - m->parts[lo].first_sample) / ci->chunk_samples;
}

/* The chunks kept by max_chunks/fraction: ceil(fraction * nchunks) in IEEE
 * double (the same everywhere), at most max_chunks. */
static int64_t kept_count(int64_t nchunks, const ferry__plan_params *pp) {
  int64_t keep = nchunks;
  if (pp->max_chunks > 0 && pp->max_chunks < keep)
    keep = pp->max_chunks;
  if (pp->fraction < 1.0) {
    double want = pp->fraction * (double)nchunks;
    int64_t k = (int64_t)want;
    if ((double)k < want)
      k++;
    if (k < 1)
      k = 1;
    if (k < keep)
      keep = k;
  }
  return keep;
}

int ferry__plan_pieces(const ferry__chunk *chunks, int64_t nchunks,
                       const ferry__plan_params *pp, ferry__chunk **out,
                       int64_t *n) {
  *out = NULL;
  *n = 0;
  int64_t keep = kept_count(nchunks, pp);
  int64_t *sel = malloc((size_t)(nchunks ? nchunks : 1) * sizeof *sel);
  if (!sel)
    return FERRY_ENOMEM;
  for (int64_t i = 0; i < nchunks; i++)
    sel[i] = i;
  if (keep < nchunks) {
    ferry__shuffle(sel, nchunks,
                   ferry__rand_key(pp->seed, FERRY__STREAM_SUBSET, 0, 0));
    qsort(sel, (size_t)keep, sizeof *sel, ferry__cmp_i64);
  }
  int64_t bs = pp->shuffle == FERRY__SHUFFLE_BLOCK ? pp->block_size : 0;
  int64_t total = 0;
  for (int64_t i = 0; i < keep; i++)
    total += bs ? (chunks[sel[i]].count + bs - 1) / bs : 1;
  ferry__chunk *pc = malloc((size_t)(total ? total : 1) * sizeof *pc);
  if (!pc) {
    free(sel);
    return FERRY_ENOMEM;
  }
  int64_t k = 0;
  for (int64_t i = 0; i < keep; i++) {
    const ferry__chunk *c = &chunks[sel[i]];
    if (!bs) {
      pc[k++] = *c;
      continue;
    }
    for (int64_t off = 0; off < c->count; off += bs) {
      int64_t cnt = c->count - off < bs ? c->count - off : bs;
      pc[k++] =
          (ferry__chunk){c->part, c->row + off, cnt, c->global_first + off};
    }
  }
  free(sel);
  *out = pc;
  *n = k;
  return 0;
}

int ferry__pieces_make(const ferry__chunk_index *ci,
                       const ferry__plan_params *pp, ferry__pieces *out) {
  memset(out, 0, sizeof *out);
  out->ci = ci;
  int64_t nchunks = ci->nchunks, keep = kept_count(nchunks, pp);
  if (keep < nchunks) {
    /* the subset: a Fisher-Yates of every chunk id (transient, 8 bytes per
     * chunk), of which the first `keep` are kept, sorted */
    int64_t *sel = malloc((size_t)nchunks * sizeof *sel);
    if (!sel)
      return FERRY_ENOMEM;
    for (int64_t i = 0; i < nchunks; i++)
      sel[i] = i;
    ferry__shuffle(sel, nchunks,
                   ferry__rand_key(pp->seed, FERRY__STREAM_SUBSET, 0, 0));
    qsort(sel, (size_t)keep, sizeof *sel, ferry__cmp_i64);
    int64_t *k = realloc(sel, (size_t)(keep ? keep : 1) * sizeof *k);
    out->kept = k ? k : sel;
    out->nkept = keep;
    out->bytes += (size_t)keep * sizeof *k;
  }
  int64_t bs = pp->shuffle == FERRY__SHUFFLE_BLOCK ? pp->block_size : 0;
  if (out->kept)
    for (int64_t i = 0; i < out->nkept; i++)
      out->samples += ferry__chunk_get(ci, out->kept[i]).count;
  else
    for (int64_t p = 0; p < ci->m->nparts; p++)
      out->samples += ci->m->parts[p].num_samples;
  if (bs <= 0) {
    out->n = out->kept ? out->nkept : nchunks;
    return 0;
  }
  out->block = bs;
  out->per_chunk = ceil_div(ci->chunk_samples, bs);
  int64_t nfp = out->kept ? out->nkept : ci->m->nparts;
  out->first_piece = malloc((size_t)(nfp + 1) * sizeof *out->first_piece);
  if (!out->first_piece) {
    ferry__pieces_free(out);
    return FERRY_ENOMEM;
  }
  out->bytes += (size_t)(nfp + 1) * sizeof *out->first_piece;
  out->first_piece[0] = 0;
  for (int64_t i = 0; i < nfp; i++) {
    int64_t n;
    if (out->kept) {
      n = ceil_div(ferry__chunk_get(ci, out->kept[i]).count, bs);
    } else {
      int64_t rows = ci->m->parts[i].num_samples;
      n = rows / ci->chunk_samples * out->per_chunk +
          ceil_div(rows % ci->chunk_samples, bs);
    }
    out->first_piece[i + 1] = out->first_piece[i] + n;
  }
  out->n = out->first_piece[nfp];
  return 0;
}

void ferry__pieces_wrap(ferry__pieces *out, const ferry__chunk *array,
                        int64_t n) {
  memset(out, 0, sizeof *out);
  out->array = array;
  out->n = n;
  for (int64_t i = 0; i < n; i++)
    out->samples += array[i].count;
}

void ferry__pieces_free(ferry__pieces *ps) {
  if (!ps)
    return;
  free(ps->kept);
  free(ps->first_piece);
  memset(ps, 0, sizeof *ps);
}

ferry__chunk ferry__piece(const ferry__pieces *ps, int64_t i) {
  if (ps->array)
    return ps->array[i];
  if (!ps->block)
    return ferry__chunk_get(ps->ci, ps->kept ? ps->kept[i] : i);
  const int64_t bs = ps->block;
  if (ps->kept) {
    int64_t j = ferry__last_le(ps->first_piece, ps->nkept, i);
    ferry__chunk c = ferry__chunk_get(ps->ci, ps->kept[j]);
    int64_t off = (i - ps->first_piece[j]) * bs;
    int64_t cnt = c.count - off < bs ? c.count - off : bs;
    return (ferry__chunk){c.part, c.row + off, cnt, c.global_first + off};
  }
  const ferry__manifest *m = ps->ci->m;
  const int64_t cs = ps->ci->chunk_samples;
  int64_t p = ferry__last_le(ps->first_piece, m->nparts, i);
  int64_t k = i - ps->first_piece[p];
  int64_t row = k / ps->per_chunk * cs + k % ps->per_chunk * bs;
  int64_t end = (k / ps->per_chunk + 1) * cs;
  if (end > m->parts[p].num_samples)
    end = m->parts[p].num_samples;
  int64_t cnt = end - row < bs ? end - row : bs;
  return (ferry__chunk){p, row, cnt, m->parts[p].first_sample + row};
}

void ferry__plan_permutation(const ferry__plan_params *pp, int64_t npieces,
                             int64_t *perm) {
  for (int64_t i = 0; i < npieces; i++)
    perm[i] = i;
  if (pp->shuffle != FERRY__SHUFFLE_NONE)
    ferry__shuffle(perm, npieces,
                   ferry__rand_key(pp->seed, FERRY__STREAM_CHUNKS,
                                   (uint64_t)pp->epoch, 0));
}

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
  return b * p->batch_size < p->nslots ? b * p->batch_size : p->nslots;
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
         (size_t)(p->nwindows + 1) * per_window;
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
    for (int r = 0; r < P; r++)
      rlist_drop(&lists[r], K * B);
    nb -= K;
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
  for (int s = 0; s < nsteps; s++)
    if (steps[s].world_size < 1 || steps[s].batches < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "resume step %d: world size %d, %lld batches", s,
                           steps[s].world_size, (long long)steps[s].batches);
  int same = 1;
  for (int s = 0; s < nsteps; s++)
    same &= steps[s].world_size == pp->world_size;
  if (same) /* the common restart: no sample list (O(plan + window)) */
    return resume_same(ps, perm, pp, steps, nsteps, rank, out, all, err);
  return resume_elastic(ps, perm, pp, steps, nsteps, rank, out, all, err);
}
