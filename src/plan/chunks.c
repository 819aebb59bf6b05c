/*
 * plan/chunks.c - the plan's inputs: a dataset cut into chunks (chunk
 * index, auto chunk size), the subset max_chunks/fraction keeps (drawn from
 * the seed alone, so every epoch uses the same subset), the pieces an epoch
 * permutes (chunks, or blocks of block_size with shuffle=block) and their
 * permutation.  The lowest file of plan/: the rank's plan (plan.c), resume
 * (resume.c) and sampling (draw.c) all build on it, and it calls none of
 * them.  Pure: no MPI, no I/O, no clock.
 *
 * The generator is SplitMix64 used as a counter-based PRNG: value n of
 * stream k is mix64(k + (n + 1) * golden).  Bounded draws use rejection so
 * Fisher-Yates is unbiased and never depends on floating point.
 */
#include "config.h"
#include "core/options.h"
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int64_t g = (int64_t)ferry__gcd64((uint64_t)align, (uint64_t)c);
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
