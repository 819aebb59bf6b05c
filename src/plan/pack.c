/*
 * plan/pack.c - packed rows of a token corpus (plan/pack.h): the stream
 * of an epoch, a row's spans and its document-boundary outputs.
 *
 * Memory: two arrays of nchunks + 1 (the chunks' order and the stream
 * position where each starts), whatever the documents: a row is found by a
 * binary search over the chunks, a document inside a chunk by one over its
 * offsets, so nothing per document or per row is held.
 */
#include "config.h"
#include "plan/pack.h"
#include "core/options.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

void ferry__pack_free(ferry__pack *pk) {
  free(pk->order);
  free(pk->start);
  memset(pk, 0, sizeof *pk);
}

int ferry__pack_make(ferry__pack *pk, const int64_t *chunk_tokens,
                     int64_t nchunks, int64_t L, int overlap, int tail,
                     uint64_t key, ferry__err *err) {
  memset(pk, 0, sizeof *pk);
  if (L < 1 || (overlap != 0 && overlap != 1) || nchunks < 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "packing: seq_len %lld and overlap %d (seq_len >= "
                         "1, overlap 0 or 1)",
                         (long long)L, overlap);
  pk->L = L;
  pk->overlap = overlap;
  pk->nchunks = nchunks;
  pk->order = malloc((size_t)(nchunks ? nchunks : 1) * sizeof *pk->order);
  pk->start = malloc((size_t)(nchunks + 1) * sizeof *pk->start);
  if (!pk->order || !pk->start) {
    ferry__pack_free(pk);
    return ferry__oom(err, -1, (size_t)(2 * nchunks + 1) * sizeof(int64_t),
                      "packing: the order of %lld chunks", (long long)nchunks);
  }
  for (int64_t k = 0; k < nchunks; k++)
    pk->order[k] = k;
  if (key)
    ferry__shuffle(pk->order, nchunks, key);
  pk->start[0] = 0;
  for (int64_t k = 0; k < nchunks; k++) {
    int64_t t = chunk_tokens[pk->order[k]];
    if (t < 0 || t > INT64_MAX / 2 - pk->start[k]) {
      int64_t c = pk->order[k];
      ferry__pack_free(pk);
      return ferry__seterr(err, FERRY_EINVAL,
                           "packing: chunk %lld has %lld tokens (negative, "
                           "or the corpus's sum overflows)",
                           (long long)c, (long long)t);
    }
    pk->start[k + 1] = pk->start[k] + t;
  }
  int64_t T = pk->start[nchunks];
  pk->tokens = T;
  pk->full = T > overlap ? (T - overlap) / L : 0;
  int64_t left = T - pk->full * L; /* tokens no full row starts */
  pk->rows = pk->full + (tail != FERRY__TAIL_DROP && left > overlap);
  return 0;
}

/* The ordered chunk holding stream position x (0 <= x < T): the last k
 * with start[k] <= x, skipping chunks without tokens. */
static int64_t chunk_at(const ferry__pack *pk, int64_t x) {
  return ferry__last_le(pk->start, pk->nchunks, x);
}

int64_t ferry__pack_spans(const ferry__pack *pk, int64_t r,
                          ferry__pack_span *out, int64_t max) {
  if (r < 0 || r >= pk->rows)
    return -1;
  int64_t x = r * pk->L, end = x + pk->L + pk->overlap, n = 0;
  if (end > pk->tokens)
    end = pk->tokens; /* the last row of tail pad or partial */
  for (int64_t k = x < end ? chunk_at(pk, x) : pk->nchunks; x < end; k++) {
    int64_t a = pk->start[k], b = pk->start[k + 1];
    if (b <= x)
      continue; /* a chunk without tokens */
    int64_t stop = b < end ? b : end;
    if (n < max)
      out[n] = (ferry__pack_span){pk->order[k], x - a, stop - x, x - r * pk->L};
    n++;
    x = stop;
  }
  return n;
}

/* The first document of o[0..nd] whose tokens end after offset t. */
static int64_t doc_at(const int64_t *o, int64_t nd, int64_t t) {
  int64_t lo = 0, hi = nd - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (o[mid + 1] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int ferry__pack_bounds(const ferry__pack *pk, const ferry__pack_span *sp,
                       int64_t nsp, ferry__pack_docs_fn docs, void *ctx,
                       int mask_first, int32_t *ws, int32_t *wp, int32_t *seg,
                       int32_t *pos, uint8_t *mask, int32_t *cu) {
  const int64_t L = pk->L, W = L + pk->overlap;
  int64_t at = 0;
  int32_t s = 0;
  for (int64_t j = 0; j < nsp && at < W; j++) {
    int64_t nd = 0;
    const int64_t *o = docs(ctx, sp[j].chunk, &nd);
    if (!o || nd < 1 || sp[j].at != at || sp[j].first < 0 || sp[j].count < 0)
      return FERRY_EINVAL;
    int64_t t = o[0] + sp[j].first, end = t + sp[j].count;
    if (o[nd] < end)
      return FERRY_EINVAL;
    for (int64_t d = doc_at(o, nd, t); t < end && at < W; d++) {
      if (d >= nd || o[d + 1] < o[d])
        return FERRY_EINVAL;
      int64_t stop = o[d + 1] < end ? o[d + 1] : end;
      if (stop <= t)
        continue; /* an empty document */
      s++;
      for (; t < stop && at < W; t++, at++) {
        ws[at] = s;
        wp[at] = (int32_t)(t - o[d]);
      }
    }
  }
  for (int64_t i = at; i < W; i++)
    ws[i] = wp[i] = 0;
  if (seg)
    memcpy(seg, ws, (size_t)L * sizeof *seg);
  if (pos)
    memcpy(pos, wp, (size_t)L * sizeof *pos);
  if (mask)
    for (int64_t i = 0; i < L; i++)
      mask[i] = ws[i] && i + 1 < W && ws[i + 1] &&
                !(mask_first && ws[i + 1] != ws[i]);
  if (cu) {
    int64_t n = 1;
    cu[0] = 0;
    for (int64_t i = 1; i < L; i++)
      if (ws[i] != ws[i - 1])
        cu[n++] = (int32_t)i;
    while (n <= L)
      cu[n++] = (int32_t)L;
  }
  return 0;
}

int64_t ferry__pack_split(const ferry__pack *pk, ferry__pack_docs_fn docs,
                          void *ctx) {
  int64_t n = 0;
  for (int64_t k = 0; k < pk->nchunks; k++) {
    int64_t nd = 0, x = pk->start[k];
    const int64_t *o = docs(ctx, pk->order[k], &nd);
    for (int64_t d = 0; o && d < nd; d++) {
      int64_t a = x + o[d] - o[0], b = x + o[d + 1] - o[0];
      n += b > a && a / pk->L != (b - 1) / pk->L;
    }
  }
  return n;
}

int64_t ferry__pack_fit(const int64_t *len, int64_t n, int64_t L,
                        int64_t *bin_of, int64_t *tree) {
  if (n <= 0)
    return 0;
  /* a heap-ordered tree over m leaves (m: the power of two at or above
   * n), each node the most room of its leaves */
  int64_t m = 1;
  while (m < n)
    m <<= 1;
  for (int64_t i = 0; i < m; i++)
    tree[m + i] = i < n ? L : -1; /* every possible row, empty: room L */
  for (int64_t i = m - 1; i >= 1; i--)
    tree[i] = tree[2 * i] > tree[2 * i + 1] ? tree[2 * i] : tree[2 * i + 1];
  int64_t rows = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t x = 1; /* the leftmost leaf with room >= len[k]: an empty row
                    * has L, so one is always found */
    while (x < m)
      x = tree[2 * x] >= len[k] ? 2 * x : 2 * x + 1;
    int64_t b = x - m;
    bin_of[k] = b;
    rows = b + 1 > rows ? b + 1 : rows;
    tree[x] -= len[k];
    for (x >>= 1; x >= 1; x >>= 1)
      tree[x] = tree[2 * x] > tree[2 * x + 1] ? tree[2 * x] : tree[2 * x + 1];
  }
  return rows;
}

/* Fenwick tree over rooms 0..size-1 (f[1..size]): add, prefix sum, and the
 * smallest room whose prefix sum exceeds k (-1: none). */
static void fw_add(int64_t *f, int64_t size, int64_t i, int64_t d) {
  for (i++; i <= size; i += i & -i)
    f[i] += d;
}

static int64_t fw_sum(const int64_t *f, int64_t i) {
  int64_t s = 0;
  for (i++; i > 0; i -= i & -i)
    s += f[i];
  return s;
}

static int64_t fw_find(const int64_t *f, int64_t size, int64_t k) {
  int64_t pos = 0, step = 1;
  while (step * 2 <= size)
    step *= 2;
  for (; step; step >>= 1)
    if (pos + step <= size && f[pos + step] <= k) {
      pos += step;
      k -= f[pos];
    }
  return pos < size ? pos : -1;
}

int64_t ferry__pack_best_fit(const int64_t *len, int64_t n, int64_t L,
                             int64_t *bin_of, int64_t *scratch) {
  const int64_t size = L + 1; /* rooms 0..L */
  int64_t *f = scratch, *head = f + L + 2, *next = head + L + 2,
          *room = next + n;
  for (int64_t i = 0; i <= size; i++)
    f[i] = 0;
  for (int64_t c = 0; c <= L; c++)
    head[c] = -1;
  int64_t rows = 0;
  for (int64_t k = 0; k < n; k++) {
    /* the least room >= len[k] any row has: past the rows of less room */
    int64_t c = fw_find(f, size, fw_sum(f, len[k] - 1)), b;
    if (c < 0) {
      b = rows++;
      room[b] = L;
    } else { /* the last row to reach room c leaves it */
      b = head[c];
      head[c] = next[b];
      fw_add(f, size, c, -1);
    }
    bin_of[k] = b;
    room[b] -= len[k];
    next[b] = head[room[b]];
    head[room[b]] = b;
    fw_add(f, size, room[b], 1);
  }
  return rows;
}
