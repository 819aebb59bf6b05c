/*
 * test_pack.c - packed rows of a token corpus (plan/pack.c), against a
 * stream built token by token here: a hand-checked corpus (rows, spans,
 * segment ids, positions, masks, cu_seqlens written out), then random
 * corpora of documents of 0, 1, L-1, L, L+1 and 10 L tokens in random
 * chunks, many seeds, overlap 0 and 1, every tail rule: each row's spans
 * are the stream's tokens [r L, r L + L + overlap) in order, every token
 * lies in exactly one row (overlap 0; all of them but fewer than L + 1
 * with tail=drop_last), and each row's boundary outputs are the stream's.
 */
#include "config.h"
#include "../ferry_test.h"
#include "core/options.h"
#include "plan/pack.h"

#include <stdlib.h>
#include <string.h>

/* A corpus: nch chunks, each docs[c][0..nd[c]] offsets of its documents. */
typedef struct corpus {
  int64_t nch;
  int64_t *nd;
  int64_t **off;
  int64_t *tokens;
} corpus;

static const int64_t *docs_of(void *ctx, int64_t chunk, int64_t *ndocs) {
  const corpus *c = ctx;
  *ndocs = c->nd[chunk];
  return c->off[chunk];
}

static void corpus_free(corpus *c) {
  for (int64_t k = 0; k < c->nch; k++)
    free(c->off[k]);
  free(c->off);
  free(c->nd);
  free(c->tokens);
}

static corpus corpus_of(int64_t nch, const int64_t *ndocs,
                        const int64_t *lens) {
  corpus c = {nch, calloc((size_t)nch, sizeof(int64_t)),
              calloc((size_t)nch, sizeof(int64_t *)),
              calloc((size_t)nch, sizeof(int64_t))};
  int64_t d = 0;
  for (int64_t k = 0; k < nch; k++) {
    c.nd[k] = ndocs[k];
    /* offsets in their own origin (7 k), as a part's are for a chunk
     * that starts inside it */
    c.off[k] = calloc((size_t)ndocs[k] + 1, sizeof(int64_t));
    c.off[k][0] = 7 * k;
    for (int64_t i = 0; i < ndocs[k]; i++, d++)
      c.off[k][i + 1] = c.off[k][i] + lens[d];
    c.tokens[k] = c.off[k][ndocs[k]] - c.off[k][0];
  }
  return c;
}

/* The stream token by token: chunk, token in chunk, document (global
 * count in stream order), index in the document, document start. */
typedef struct tok {
  int64_t chunk, t, doc, in, first;
} tok;

static tok *stream_of(const corpus *c, const ferry__pack *pk) {
  tok *s = malloc((size_t)(pk->tokens + 1) * sizeof *s);
  int64_t n = 0, doc = 0;
  for (int64_t k = 0; k < pk->nchunks; k++) {
    int64_t ch = pk->order[k];
    const int64_t *o = c->off[ch];
    for (int64_t d = 0; d < c->nd[ch]; d++, doc++)
      for (int64_t t = o[d]; t < o[d + 1]; t++)
        s[n++] = (tok){ch, t - o[0], doc, t - o[d], t == o[d]};
  }
  return s;
}

/* Row r of pk against the stream s: spans, then boundary outputs. */
static void check_row(const corpus *c, const ferry__pack *pk, const tok *s,
                      int64_t r, int mask_first, int64_t *covered) {
  const int64_t L = pk->L, W = L + pk->overlap;
  ferry__pack_span sp[64];
  int64_t n = ferry__pack_spans(pk, r, sp, 64), got = 0;
  REQUIRE_V(n >= 0 && n <= 64, "row %lld: %lld spans", (long long)r,
            (long long)n);
  for (int64_t j = 0; j < n; j++) {
    CHECK(sp[j].at == got && sp[j].count > 0, "row %lld span %lld at %lld",
          (long long)r, (long long)j, (long long)sp[j].at);
    for (int64_t i = 0; i < sp[j].count; i++) {
      int64_t x = r * L + got + i;
      if (x >= pk->tokens || s[x].chunk != sp[j].chunk ||
          s[x].t != sp[j].first + i) {
        CHECK(0, "row %lld position %lld: not the stream's token", (long long)r,
              (long long)(got + i));
        return;
      }
      if (got + i < L)
        covered[x]++;
    }
    got += sp[j].count;
  }
  int64_t want = pk->tokens - r * L < W ? pk->tokens - r * L : W;
  CHECK(got == want, "row %lld: %lld tokens, the stream has %lld", (long long)r,
        (long long)got, (long long)want);
  int32_t ws[65], wp[65], seg[64], pos[64], cu[65];
  uint8_t mask[64];
  REQUIRE_V(ferry__pack_bounds(pk, sp, n, docs_of, (void *)c, mask_first, ws,
                               wp, seg, pos, mask, cu) == 0,
            "row %lld: bounds", (long long)r);
  /* the stream's: a piece per document met, 0 for padding */
  int32_t wseg[65] = {0}, s_ = 0;
  for (int64_t i = 0; i < got; i++) {
    int64_t x = r * L + i;
    if (i == 0 || s[x].doc != s[x - 1].doc)
      s_++;
    wseg[i] = s_;
  }
  int64_t bad = -1, wcu[66], nw = 1;
  wcu[0] = 0;
  for (int64_t i = 0; i < L; i++) {
    int64_t x = r * L + i;
    int real = i < got, next = i + 1 < got;
    int wmask = real && next && !(mask_first && s[x + 1].first);
    if (i > 0 && wseg[i] != wseg[i - 1])
      wcu[nw++] = i;
    if (seg[i] != wseg[i] || pos[i] != (real ? s[x].in : 0) || mask[i] != wmask)
      bad = i;
  }
  while (nw <= L)
    wcu[nw++] = L;
  for (int64_t i = 0; i <= L; i++)
    if (cu[i] != wcu[i])
      bad = 1000 + i;
  CHECK(bad < 0, "row %lld: boundary outputs differ from the stream's at %lld",
        (long long)r, (long long)bad);
}

/* The written-out case: chunks {3, 0+2}, {5}, {} and {1, 4}: documents of
 * 3, 0, 2 | 5 | - | 1, 4 tokens; stored order; L = 4. */
static void test_golden(void) {
  const int64_t nd[4] = {3, 1, 0, 2}, lens[6] = {3, 0, 2, 5, 1, 4};
  corpus c = corpus_of(4, nd, lens);
  ferry__pack pk;
  ferry__err err = {0};
  REQUIRE_V(
      ferry__pack_make(&pk, c.tokens, 4, 4, 0, FERRY__TAIL_PAD, 0, &err) == 0,
      "make: %s", err.msg);
  CHECK(pk.tokens == 15 && pk.full == 3 && pk.rows == 4,
        "15 tokens: %lld, full rows %lld, rows %lld", (long long)pk.tokens,
        (long long)pk.full, (long long)pk.rows);
  /* row 1: tokens 4..8: chunk 0's 4 (the 2-document's second), chunk 1's
   * 0..2 */
  ferry__pack_span sp[8];
  int64_t n = ferry__pack_spans(&pk, 1, sp, 8);
  CHECK(n == 2 && sp[0].chunk == 0 && sp[0].first == 4 && sp[0].count == 1 &&
            sp[1].chunk == 1 && sp[1].first == 0 && sp[1].count == 3 &&
            sp[1].at == 1,
        "row 1: %lld spans", (long long)n);
  int32_t ws[5], wp[5], seg[4], pos[4], cu[5];
  uint8_t mask[4];
  /* mask_first: position 0 predicts the 5-document's first token (0),
   * 1 and 2 predict its 2nd and 3rd (1), 3 the token of row 2 (0: no
   * overlap) */
  ferry__pack_bounds(&pk, sp, n, docs_of, &c, 1, ws, wp, seg, pos, mask, cu);
  CHECK(seg[0] == 1 && seg[1] == 2 && seg[3] == 2 && pos[0] == 1 &&
            pos[1] == 0 && pos[3] == 2 && mask[0] == 0 && mask[1] == 1 &&
            mask[2] == 1 && mask[3] == 0 && cu[0] == 0 && cu[1] == 1 &&
            cu[2] == 4 && cu[3] == 4 && cu[4] == 4,
        "row 1's boundary outputs");
  /* row 3, the last: tokens 12..14 (the 4-document's 2nd to 4th: chunk
   * 3's tokens 2..4) and one of padding */
  n = ferry__pack_spans(&pk, 3, sp, 8);
  ferry__pack_bounds(&pk, sp, n, docs_of, &c, 0, ws, wp, seg, pos, mask, cu);
  CHECK(n == 1 && sp[0].chunk == 3 && sp[0].first == 2 && sp[0].count == 3 &&
            seg[0] == 1 && seg[2] == 1 && seg[3] == 0 && pos[0] == 1 &&
            pos[2] == 3 && mask[1] == 1 && mask[2] == 0 && mask[3] == 0 &&
            cu[1] == 3 && cu[2] == 4 && cu[4] == 4,
        "row 3 (padded): %lld spans", (long long)n);
  CHECK(ferry__pack_spans(&pk, 4, sp, 8) == -1, "row 4 exists");
  ferry__pack_free(&pk);
  REQUIRE_V(
      ferry__pack_make(&pk, c.tokens, 4, 4, 1, FERRY__TAIL_DROP, 0, &err) == 0,
      "make: %s", err.msg);
  CHECK(pk.full == 3 && pk.rows == 3, "overlap 1, drop: %lld rows",
        (long long)pk.rows);
  n = ferry__pack_spans(&pk, 2, sp, 8); /* tokens 8..12: chunk 1's 3..4,
                                         * chunk 3's 0..2 */
  CHECK(n == 2 && sp[0].chunk == 1 && sp[0].count == 2 && sp[1].chunk == 3 &&
            sp[1].first == 0 && sp[1].count == 3 && sp[1].at == 2,
        "row 2: %lld spans", (long long)n);
  ferry__pack_free(&pk);
  const int64_t neg[2] = {4, -1};
  CHECK(ferry__pack_make(&pk, neg, 2, 4, 0, 0, 0, &err) == FERRY_EINVAL &&
            strstr(err.msg, "chunk 1"),
        "a negative length: %s", err.msg);
  corpus_free(&c);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random corpora: every row against the stream, every token once. */
static void test_random(void) {
  for (uint64_t seed = 1; seed <= 60; seed++) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL;
    const int64_t L = 1 + (int64_t)(rnd(&s) % 9);
    const int64_t kinds[6] = {0, 1, L - 1, L, L + 1, 10 * L};
    int64_t nch = 1 + (int64_t)(rnd(&s) % 12), nd[12], lens[12 * 6], d = 0;
    for (int64_t k = 0; k < nch; k++) {
      nd[k] = (int64_t)(rnd(&s) % 6);
      for (int64_t i = 0; i < nd[k]; i++)
        lens[d++] = kinds[rnd(&s) % 6];
    }
    corpus c = corpus_of(nch, nd, lens);
    for (int variant = 0; variant < 6; variant++) {
      int overlap = variant & 1, tail = variant / 2;
      ferry__pack pk;
      ferry__err err = {0};
      if (ferry__pack_make(&pk, c.tokens, nch, L, overlap, tail, rnd(&s),
                           &err)) {
        CHECK(0, "seed %llu: make: %s", (unsigned long long)seed, err.msg);
        continue;
      }
      tok *st = stream_of(&c, &pk);
      int64_t *cov = calloc((size_t)pk.tokens + 1, sizeof *cov);
      for (int64_t r = 0; r < pk.rows; r++)
        check_row(&c, &pk, st, r, (int)(seed & 1), cov);
      int64_t once = 0, more = 0;
      for (int64_t x = 0; x < pk.tokens; x++) {
        once += cov[x] == 1;
        more += cov[x] > 1;
      }
      int64_t lost = pk.tokens - once;
      /* the documents split: those whose first and last tokens lie in two
       * rows (L apart in the stream) */
      int64_t split = 0;
      for (int64_t x = 0; x < pk.tokens; x++)
        if (x + 1 == pk.tokens || st[x + 1].doc != st[x].doc) {
          int64_t first = x - st[x].in; /* the document's first token */
          split += first / L != x / L;
        }
      CHECK(ferry__pack_split(&pk, docs_of, &c) == split,
            "seed %llu: %lld documents split, the stream says %lld",
            (unsigned long long)seed,
            (long long)ferry__pack_split(&pk, docs_of, &c), (long long)split);
      CHECK(more == 0 &&
                (tail == FERRY__TAIL_DROP ? lost < L + 1 : lost <= overlap),
            "seed %llu L %lld overlap %d tail %d: %lld tokens, %lld in no "
            "row, %lld in two",
            (unsigned long long)seed, (long long)L, overlap, tail,
            (long long)pk.tokens, (long long)lost, (long long)more);
      free(cov);
      free(st);
      ferry__pack_free(&pk);
    }
    corpus_free(&c);
  }
}

/* First fit against the quadratic definition: each item into the first
 * row (in opening order) with room, a new row when none has. */
static void test_fit(void) {
  const int64_t hand[7] = {5, 3, 8, 2, 4, 1, 7}; /* L = 8 */
  int64_t bin[64], tree[128];
  int64_t rows = ferry__pack_fit(hand, 7, 8, bin, tree);
  /* 5 -> r0 (3 left), 3 -> r0 (0), 8 -> r1, 2 -> r2 (6), 4 -> r2 (2),
   * 1 -> r2 (1), 7 -> r3 */
  CHECK(rows == 4 && bin[0] == 0 && bin[1] == 0 && bin[2] == 1 && bin[3] == 2 &&
            bin[4] == 2 && bin[5] == 2 && bin[6] == 3,
        "first fit of 5 3 8 2 4 1 7 into 8: %lld rows", (long long)rows);
  for (uint64_t seed = 1; seed <= 200; seed++) {
    uint64_t s = seed * 0x2545F4914F6CDD1DULL;
    int64_t L = 1 + (int64_t)(rnd(&s) % 20), n = (int64_t)(rnd(&s) % 60);
    int64_t len[64], want[64], room[64], nrows = 0;
    for (int64_t i = 0; i < n; i++)
      len[i] = 1 + (int64_t)(rnd(&s) % (uint64_t)L);
    for (int64_t i = 0; i < n; i++) {
      int64_t b = 0;
      while (b < nrows && room[b] < len[i])
        b++;
      if (b == nrows)
        room[nrows++] = L;
      room[b] -= len[i];
      want[i] = b;
    }
    rows = ferry__pack_fit(len, n, L, bin, tree);
    int same = rows == nrows;
    for (int64_t i = 0; same && i < n; i++)
      same = bin[i] == want[i];
    CHECK(same,
          "seed %llu: first fit of %lld items into %lld: %lld rows, "
          "the definition %lld",
          (unsigned long long)seed, (long long)n, (long long)L, (long long)rows,
          (long long)nrows);
  }
}

/* Best fit against the quadratic definition: the row with the least room
 * that holds the item, among equal rooms the last to reach it. */
static void test_best_fit(void) {
  /* L = 10: 6 -> r0 (4 left), 7 -> r1 (3), 3 -> r1 (3 is the least room
   * that holds it; first fit would take r0) */
  const int64_t hand[3] = {6, 7, 3};
  int64_t bin[64], scratch[2 * (21 + 2) + 2 * 64];
  int64_t rows = ferry__pack_best_fit(hand, 3, 10, bin, scratch);
  CHECK(rows == 2 && bin[0] == 0 && bin[1] == 1 && bin[2] == 1,
        "best fit of 6 7 3 into 10: %lld rows, the 3 in row %lld",
        (long long)rows, (long long)bin[2]);
  for (uint64_t seed = 1; seed <= 300; seed++) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL;
    int64_t L = 1 + (int64_t)(rnd(&s) % 20), n = (int64_t)(rnd(&s) % 60);
    int64_t len[64], want[64], room[64], stamp[64], nrows = 0;
    for (int64_t i = 0; i < n; i++)
      len[i] = 1 + (int64_t)(rnd(&s) % (uint64_t)L);
    for (int64_t i = 0; i < n; i++) {
      int64_t b = -1;
      for (int64_t r = 0; r < nrows; r++)
        if (room[r] >= len[i] && (b < 0 || room[r] < room[b] ||
                                  (room[r] == room[b] && stamp[r] > stamp[b])))
          b = r;
      if (b < 0) {
        b = nrows++;
        room[b] = L;
      }
      room[b] -= len[i];
      stamp[b] = i;
      want[i] = b;
    }
    rows = ferry__pack_best_fit(len, n, L, bin, scratch);
    int same = rows == nrows;
    for (int64_t i = 0; same && i < n; i++)
      same = bin[i] == want[i];
    CHECK(same,
          "seed %llu: best fit of %lld items into %lld: %lld rows, "
          "the definition %lld",
          (unsigned long long)seed, (long long)n, (long long)L, (long long)rows,
          (long long)nrows);
  }
}

int main(void) {
  test_golden();
  test_random();
  test_fit();
  test_best_fit();
  return ft_summary("test_pack");
}
