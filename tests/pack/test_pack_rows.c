/*
 * test_pack_rows.c - pack=concat through the loader (src/loader/pack.c,
 * docs/lm.md), over MPI:
 *
 *   test_pack_rows DIR STATEDIR     (7 ranks; tests/pack/pack.sh)
 *
 * DIR holds a corpus written by `ferry gen --format megatron` (int32
 * tokens): token k of document i is i + k, so a served token and its
 * `positions` entry name the document it came from.  The test reads
 * DIR/corpus.idx for the documents' lengths, then, over sub-communicators
 * of 1 to 7 ranks and option sets (seq_len around the corpus's lengths,
 * overlap 0 and 1, every tail, shuffle chunks and none, mask_first,
 * pack_chunk), gathers every served row on rank 0 and checks:
 *
 *  - every row's outputs agree with its tokens: a piece of segment_ids is
 *    one run of one document (positions counting up by one, a new piece
 *    starting a document), padding (segment 0) only at the end, tokens 0
 *    there; loss_mask and cu_seqlens as docs/lm.md defines them; with
 *    overlap, the row's last token is the next row's first;
 *  - every token of every document in exactly one row (tail=partial and
 *    pad, pad's repeated rows aside; drop_last: all but fewer than
 *    ranks x batch_size rows and one row's tokens);
 *  - the same number of batches on every rank;
 *  - with shuffle=none on one rank, the rows are the corpus's tokens in
 *    stored order cut every seq_len (the golden case);
 *  - the same seed gives the same rows (by row index) on 1, 3 and 7 ranks
 *    and with 1 and 4 threads; another epoch another order;
 *  - a state saved after K batches on 4 ranks, loaded on 2, 3, 4 and 7:
 *    the rows served before and after are the epoch's, each once, and
 *    each row's content is the uninterrupted run's row of that index;
 *  - a ragged variable of floats, a corpus with no row of seq_len, and
 *    pack with max_tokens are refused on every rank.
 */
#include <ferry.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *dir, *sdir;
static int64_t ndoc, *dlen, *doff, T;

static int reference(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/corpus.idx", dir);
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  unsigned char h[34];
  int64_t S = 0;
  if (fread(h, 1, 34, f) != 34 || memcmp(h, "MMIDIDX\0\0", 9) || h[17] != 4) {
    fclose(f);
    return -1;
  }
  for (int k = 7; k >= 0; k--)
    S = S * 256 + h[18 + k];
  ndoc = S;
  dlen = calloc((size_t)S + 1, sizeof *dlen);
  doff = calloc((size_t)S + 1, sizeof *doff);
  for (int64_t i = 0; i < S; i++) {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) {
      fclose(f);
      return -1;
    }
    dlen[i] = (int64_t)b[0] | (int64_t)b[1] << 8 | (int64_t)b[2] << 16 |
              (int64_t)b[3] << 24;
    doff[i + 1] = doff[i] + dlen[i];
  }
  fclose(f);
  T = doff[S];
  return 0;
}

/* One case's options. */
typedef struct pcase {
  int64_t L, B;
  int overlap, mask_first;
  const char *tail, *shuffle, *seed, *chunk, *threads;
  const char *io; /* NULL: auto (mmap here); independent: the reads of
                   * whole documents and cut ones (loader/pack.c) */
  int fit;        /* 1 pack=first_fit, 2 best_fit (overlap 0); 0 concat */
  const char *window, *overflow; /* first_fit's options (NULL: default) */
} pcase;

static ferry_options *opts_of(const pcase *c) {
  ferry_options *o = NULL;
  char Ls[32], Bs[32], ov[8];
  snprintf(Ls, sizeof Ls, "%lld", (long long)c->L);
  snprintf(Bs, sizeof Bs, "%lld", (long long)c->B);
  snprintf(ov, sizeof ov, "%d", c->overlap);
  ferry_options_create(&o);
  int rc =
      ferry_options_set(o, "pack",
                        c->fit == 2   ? "best_fit"
                        : c->fit == 1 ? "first_fit"
                                      : "concat") |
      ferry_options_set(o, "pack_window", c->window ? c->window : "1024") |
      ferry_options_set(o, "overflow", c->overflow ? c->overflow : "split") |
      ferry_options_set(o, "seq_len", Ls) |
      ferry_options_set(o, "batch_size", Bs) |
      ferry_options_set(o, "overlap", ov) |
      ferry_options_set(o, "mask_first", c->mask_first ? "yes" : "no") |
      ferry_options_set(o, "tail", c->tail) |
      ferry_options_set(o, "shuffle", c->shuffle) |
      ferry_options_set(o, "seed", c->seed) |
      ferry_options_set(o, "pack_chunk", c->chunk) |
      ferry_options_set(o, "threads", c->threads) |
      ferry_options_set(o, "chunk_samples", "3") |
      ferry_options_set(o, "shuffle_buffer", "2") |
      ferry_options_set(o, "io", c->io ? c->io : "auto");
  CHECK(rc == 0, "options");
  return o;
}

/* A served row: its index, padded flag, and W + 4L + 1 int32 words:
 * tokens[W], segment_ids[L], positions[L], loss_mask[L], cu_seqlens[L+1]. */
typedef struct rows {
  int64_t n, cap, words;
  int64_t *id;
  int *padded;
  int32_t *w;
} rows;

static void rows_push(rows *r, int64_t id, int padded, const int32_t *w) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->id = realloc(r->id, (size_t)r->cap * sizeof *r->id);
    r->padded = realloc(r->padded, (size_t)r->cap * sizeof *r->padded);
    r->w = realloc(r->w, (size_t)(r->cap * r->words) * sizeof *r->w);
  }
  r->id[r->n] = id;
  r->padded[r->n] = padded;
  memcpy(r->w + r->n * r->words, w, (size_t)r->words * sizeof *w);
  r->n++;
}

static void rows_free(rows *r) {
  free(r->id);
  free(r->padded);
  free(r->w);
  memset(r, 0, sizeof *r);
}

static const ferry_tensor *var_of(const ferry_batch *b, const char *name) {
  for (int v = 0; v < b->nvars; v++)
    if (!strcmp(b->vars[v].name, name))
      return &b->vars[v];
  return NULL;
}

static void take(const ferry_batch *b, const pcase *c, rows *out) {
  const int64_t L = c->L, W = L + c->overlap;
  const ferry_tensor *t = var_of(b, "tokens"), *s = var_of(b, "segment_ids"),
                     *p = var_of(b, "positions"), *m = var_of(b, "loss_mask"),
                     *u = var_of(b, "cu_seqlens");
  if (!t || !s || !p || !m || !u || t->dtype != FERRY_INT32 ||
      t->shape[1] != W || s->shape[1] != L || u->shape[1] != L + 1 ||
      m->dtype != FERRY_UINT8) {
    CHECK(0, "batch %lld: the outputs' names, dtypes or shapes",
          (long long)b->index);
    return;
  }
  int32_t *w = malloc((size_t)out->words * sizeof *w);
  for (int64_t i = 0; i < b->size; i++) {
    memcpy(w, (const int32_t *)t->data + i * W, (size_t)W * 4);
    memcpy(w + W, (const int32_t *)s->data + i * L, (size_t)L * 4);
    memcpy(w + W + L, (const int32_t *)p->data + i * L, (size_t)L * 4);
    for (int64_t k = 0; k < L; k++)
      w[W + 2 * L + k] = ((const uint8_t *)m->data)[i * L + k];
    memcpy(w + W + 3 * L, (const int32_t *)u->data + i * (L + 1),
           (size_t)(L + 1) * 4);
    rows_push(out, b->sample_ids[i], b->padded[i], w);
  }
  free(w);
}

/* Serve up to stop batches (-1: all); returns the batches served. */
static int64_t serve(ferry_loader *L, int64_t stop, const pcase *c, rows *out) {
  ferry_batch *b;
  int64_t got = 0;
  int rc = 0;
  while ((stop < 0 || got < stop) && (rc = ferry_next(L, &b)) == 0) {
    take(b, c, out);
    ferry_release(L, b);
    got++;
  }
  CHECK(rc == 0 || rc == FERRY_END, "ferry_next: %s", ferry_last_error(L));
  return got;
}

/* Every rank's rows to rank 0 of c (appended to all). */
static void gather(MPI_Comm c, const rows *mine, rows *all) {
  int P, me;
  MPI_Comm_size(c, &P);
  MPI_Comm_rank(c, &me);
  int n = (int)mine->n, *cnt = calloc((size_t)P, sizeof *cnt);
  MPI_Gather(&n, 1, MPI_INT, cnt, 1, MPI_INT, 0, c);
  for (int r = 0; r < P; r++) {
    rows tmp = {0};
    tmp.words = mine->words;
    if (r == me) {
      if (me == 0)
        for (int64_t i = 0; i < mine->n; i++)
          rows_push(all, mine->id[i], mine->padded[i],
                    mine->w + i * mine->words);
      else {
        MPI_Send(mine->id, n, MPI_INT64_T, 0, 1, c);
        MPI_Send(mine->padded, n, MPI_INT, 0, 2, c);
        MPI_Send(mine->w, (int)(n * mine->words), MPI_INT32_T, 0, 3, c);
      }
    } else if (me == 0) {
      int k = cnt[r];
      tmp.id = malloc((size_t)(k ? k : 1) * sizeof *tmp.id);
      tmp.padded = malloc((size_t)(k ? k : 1) * sizeof *tmp.padded);
      tmp.w = malloc((size_t)(k ? k : 1) * (size_t)mine->words * 4);
      MPI_Recv(tmp.id, k, MPI_INT64_T, r, 1, c, MPI_STATUS_IGNORE);
      MPI_Recv(tmp.padded, k, MPI_INT, r, 2, c, MPI_STATUS_IGNORE);
      MPI_Recv(tmp.w, (int)(k * mine->words), MPI_INT32_T, r, 3, c,
               MPI_STATUS_IGNORE);
      for (int i = 0; i < k; i++)
        rows_push(all, tmp.id[i], tmp.padded[i], tmp.w + i * mine->words);
      free(tmp.id);
      free(tmp.padded);
      free(tmp.w);
    }
  }
  free(cnt);
}

/* Rank 0: each row's outputs against its tokens; every token once. */
static void check_rows(const char *what, const pcase *c, const rows *a,
                       int64_t P) {
  const int64_t L = c->L, W = L + c->overlap, nw = a->words;
  int tail_drop = !strcmp(c->tail, "drop_last");
  int64_t maxid = -1, bad = 0;
  for (int64_t i = 0; i < a->n; i++)
    maxid = a->id[i] > maxid ? a->id[i] : maxid;
  /* rows by index (a repeat of tail=pad aside) */
  const int32_t **by = calloc((size_t)maxid + 2, sizeof *by);
  int64_t *cover = calloc((size_t)T + 1, sizeof *cover);
  for (int64_t i = 0; i < a->n; i++) {
    if (a->padded[i])
      continue;
    if (by[a->id[i]]) {
      CHECK(0, "%s: row %lld served twice", what, (long long)a->id[i]);
      continue;
    }
    by[a->id[i]] = a->w + i * nw;
  }
  for (int64_t r = 0; r <= maxid && bad < 5; r++) {
    const int32_t *w = by[r];
    if (!w)
      continue;
    const int32_t *tok = w, *seg = w + W, *pos = w + W + L,
                  *mask = w + W + 2 * L, *cu = w + W + 3 * L;
    /* the row's real tokens: up to the first padding position; the
     * overlap token is real when the next row exists with a token */
    int64_t have = 0, doc[1 << 12];
    while (have < L && seg[have])
      have++;
    int64_t err_at = -1;
    for (int64_t i = 0; i < L; i++) {
      if (i < have) {
        doc[i] = (int64_t)tok[i] - pos[i];
        if (doc[i] < 0 || doc[i] >= ndoc || pos[i] < 0 ||
            pos[i] >= dlen[doc[i]])
          err_at = i;
        else if (i > 0 && seg[i] == seg[i - 1] &&
                 (doc[i] != doc[i - 1] || pos[i] != pos[i - 1] + 1))
          err_at = i;
        else if (i > 0 && seg[i] != seg[i - 1] &&
                 (seg[i] != seg[i - 1] + 1 ||
                  (c->fit ? pos[i] % L != 0 : pos[i] != 0)))
          err_at = i;
        else if (i == 0 && seg[0] != 1)
          err_at = i;
        else
          cover[doff[doc[i]] + pos[i]]++;
      } else if (seg[i] || pos[i] || tok[i] || mask[i])
        err_at = i; /* padding: all zeros */
    }
    /* the token after position L - 1 (overlap: the row's own; else none) */
    int next_real = 0, next_first = 0;
    if (c->overlap && by[r + 1]) {
      const int32_t *nx = by[r + 1];
      next_real = nx[W] != 0; /* its first segment */
      next_first = next_real && nx[W + L] == 0;
      if (next_real && tok[L] != nx[0])
        err_at = 2000; /* the overlap token is the next row's first */
    } else if (c->overlap && have == L && tok[L] != 0) {
      /* the last row's overlap token: the stream's last */
      next_real = 1;
      next_first = 0; /* unknown: the mask is checked below only when */
    }
    for (int64_t i = 0; i < L; i++) {
      int nreal = i + 1 < have || (i + 1 == L && next_real);
      int nfirst = i + 1 < have ? seg[i + 1] != seg[i] : next_first;
      if (i + 1 == L && c->overlap && !by[r + 1] && next_real)
        continue; /* the epoch's last row: its overlap token's position
                   * is not served */
      int want = i < have && nreal && !(c->mask_first && nfirst);
      if (mask[i] != want)
        err_at = 1000 + i;
    }
    int64_t k = 1;
    if (cu[0] != 0)
      err_at = 3000;
    for (int64_t i = 1; i < L; i++)
      if (seg[i] != seg[i - 1] && cu[k++] != i)
        err_at = 3000 + i;
    for (; k <= L; k++)
      if (cu[k] != L)
        err_at = 4000 + k;
    if (err_at >= 0) {
      bad++;
      CHECK(0, "%s: row %lld disagrees with its tokens at %lld", what,
            (long long)r, (long long)err_at);
    }
  }
  int64_t lost = 0, twice = 0;
  for (int64_t x = 0; x < T; x++) {
    lost += cover[x] == 0;
    twice += cover[x] > 1;
  }
  /* with overlap, the stream's last token may be a label only; first_fit
   * drops whole documents longer than L with overflow=drop, exactly */
  int64_t allow = tail_drop ? (P * c->B) * L + L + c->overlap : c->overlap;
  if (c->fit) {
    int64_t drop = 0;
    for (int64_t d = 0; c->overflow && !strcmp(c->overflow, "drop") && d < ndoc;
         d++)
      drop += dlen[d] > L ? dlen[d] : 0;
    allow = tail_drop ? drop + (P * c->B) * L : drop;
    CHECK(tail_drop || lost == drop,
          "%s: %lld tokens in no row, overflow=drop drops %lld", what,
          (long long)lost, (long long)drop);
  }
  CHECK(twice == 0 && lost <= allow,
        "%s: %lld tokens, %lld in no row (at most %lld), %lld in two", what,
        (long long)T, (long long)lost, (long long)allow, (long long)twice);
  free(by);
  free(cover);
}

static MPI_Comm first(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c);
  return c;
}

/* An epoch of c on P ranks; the rows gathered on rank 0 into all. */
static void run_epoch(const pcase *c, int P, int64_t epoch, rows *all) {
  MPI_Comm cm = first(P);
  if (cm != MPI_COMM_NULL) {
    ferry_options *o = opts_of(c);
    ferry_loader *L = NULL;
    rows mine = {0};
    mine.words = all->words;
    CHECK(ferry_open(cm, dir, o, &L) == 0, "open on %d: %s", P,
          ferry_last_error(NULL));
    if (L) {
      CHECK(ferry_set_epoch(L, epoch) == 0, "set_epoch: %s",
            ferry_last_error(L));
      int64_t nb = serve(L, -1, c, &mine), lo, hi;
      MPI_Allreduce(&nb, &lo, 1, MPI_INT64_T, MPI_MIN, cm);
      MPI_Allreduce(&nb, &hi, 1, MPI_INT64_T, MPI_MAX, cm);
      CHECK(lo == hi, "%d ranks: batch counts from %lld to %lld", P,
            (long long)lo, (long long)hi);
      ferry_close(L);
    }
    gather(cm, &mine, all);
    rows_free(&mine);
    ferry_options_free(o);
    MPI_Comm_free(&cm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static int64_t words_of(const pcase *c) {
  return c->L + c->overlap + 4 * c->L + 1;
}

/* Rank 0: every row of a (repeats aside) is b's row of that index. */
static void same_rows(const char *what, const rows *a, const rows *b) {
  int64_t maxid = 0, diff = 0;
  for (int64_t j = 0; j < b->n; j++)
    maxid = b->id[j] > maxid ? b->id[j] : maxid;
  int64_t *at = malloc((size_t)(maxid + 1) * sizeof *at);
  for (int64_t j = 0; j <= maxid; j++)
    at[j] = -1;
  for (int64_t j = 0; j < b->n; j++)
    if (!b->padded[j])
      at[b->id[j]] = j;
  for (int64_t i = 0; i < a->n; i++) {
    if (a->padded[i])
      continue;
    int64_t j = a->id[i] <= maxid ? at[a->id[i]] : -1;
    diff += j < 0 || memcmp(a->w + i * a->words, b->w + j * b->words,
                            (size_t)a->words * 4) != 0;
  }
  free(at);
  CHECK(diff == 0, "%s: %lld of %lld rows differ or are missing", what,
        (long long)diff, (long long)a->n);
}

static void epoch_case(const char *label, const pcase *c) {
  static const int Ps[] = {1, 2, 3, 5, 7};
  rows ref = {0};
  ref.words = words_of(c);
  for (size_t k = 0; k < sizeof Ps / sizeof Ps[0]; k++) {
    if (Ps[k] > size)
      continue;
    rows all = {0};
    all.words = words_of(c);
    run_epoch(c, Ps[k], 1, &all);
    if (rank == 0) {
      char what[256];
      snprintf(what, sizeof what, "%s on %d ranks", label, Ps[k]);
      check_rows(what, c, &all, Ps[k]);
      if (k == 0)
        ref = all;
      else {
        if (strcmp(c->tail, "drop_last"))
          same_rows(what, &all, &ref);
        rows_free(&all);
      }
    } else
      rows_free(&all);
  }
  rows_free(&ref);
}

/* shuffle=none, one rank: row r is the stream's tokens [r L, r L + W). */
static void golden(void) {
  pcase c = {8, 4,    1,   0, "partial", "none", "0", "1", "1", "independent",
             0, NULL, NULL};
  rows all = {0};
  all.words = words_of(&c);
  run_epoch(&c, 1, 0, &all);
  if (rank == 0) {
    int64_t bad = -1;
    for (int64_t i = 0; i < all.n; i++) {
      const int32_t *tok = all.w + i * all.words;
      int64_t r = all.id[i];
      for (int64_t k = 0; k < c.L + 1; k++) {
        int64_t x = r * c.L + k, d = 0;
        if (x >= T) {
          if (tok[k])
            bad = r;
          continue;
        }
        while (doff[d + 1] <= x)
          d++;
        if (tok[k] != d + (x - doff[d]))
          bad = r;
      }
    }
    CHECK(bad < 0 && all.n == (T - 1 + c.L - 1) / c.L,
          "shuffle=none: %lld rows (want %lld), row %lld differs from the "
          "corpus cut every 8",
          (long long)all.n, (long long)((T - 1 + c.L - 1) / c.L),
          (long long)bad);
  }
  rows_free(&all);
}

/* first_fit, shuffle=none, windows of 8 documents of 0, 1, 7, 8, 9, 80,
 * 3, 5 tokens, L = 8: each window's items 1 7 8 8+1 8x10 3 5 pack into 15
 * rows; row 3 is document 4's last token and document 6, then padding. */
static void golden_fit(void) {
  pcase c = {8, 5, 0, 0, "partial", "none", "0", "1", "1", NULL, 1, "8", NULL};
  rows all = {0};
  all.words = words_of(&c);
  run_epoch(&c, 1, 0, &all);
  if (rank == 0) {
    const int32_t *r3 = NULL;
    for (int64_t i = 0; i < all.n; i++)
      if (all.id[i] == 3)
        r3 = all.w + i * all.words;
    static const int32_t want[8] = {12, 6, 7, 8, 0, 0, 0, 0};
    CHECK(all.n == ndoc / 8 * 15 && r3 && !memcmp(r3, want, sizeof want),
          "first_fit: %lld rows (want %lld), row 3 %s", (long long)all.n,
          (long long)(ndoc / 8 * 15), r3 ? "differs" : "missing");
    check_rows("first_fit golden", &c, &all, 1);
  }
  rows_free(&all);
}

/* Saved after K batches on 4 ranks, loaded on P: the rows before and
 * after are the epoch's, each once, each the uninterrupted run's. */
static void resume_case(const pcase *c, int64_t K) {
  char path[4200];
  snprintf(path, sizeof path, "%s/pack.state", sdir);
  rows ref = {0}, before = {0};
  ref.words = before.words = words_of(c);
  run_epoch(c, 1, 2, &ref);
  MPI_Comm c4 = first(4);
  ferry_options *o = opts_of(c);
  if (c4 != MPI_COMM_NULL) {
    ferry_loader *L = NULL;
    rows mine = {0};
    mine.words = words_of(c);
    CHECK(ferry_open(c4, dir, o, &L) == 0, "open: %s", ferry_last_error(NULL));
    if (L) {
      CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
      CHECK(serve(L, K, c, &mine) == K, "served %lld batches", (long long)K);
      CHECK(ferry_state_save(L, path) == 0, "save: %s", ferry_last_error(L));
      ferry_close(L);
    }
    gather(c4, &mine, &before);
    rows_free(&mine);
    MPI_Comm_free(&c4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  static const int Ps[] = {2, 3, 4, 7};
  for (size_t k = 0; k < sizeof Ps / sizeof Ps[0]; k++) {
    if (Ps[k] > size)
      continue;
    MPI_Comm cm = first(Ps[k]);
    rows after = {0};
    after.words = words_of(c);
    if (cm != MPI_COMM_NULL) {
      ferry_loader *L = NULL;
      rows mine = {0};
      mine.words = words_of(c);
      CHECK(ferry_open(cm, dir, o, &L) == 0, "open: %s",
            ferry_last_error(NULL));
      if (L) {
        int rc = ferry_state_load(L, path);
        CHECK(rc == 0, "load on %d ranks: %s", Ps[k], ferry_last_error(L));
        if (rc == 0)
          serve(L, -1, c, &mine);
        ferry_close(L);
      }
      gather(cm, &mine, &after);
      rows_free(&mine);
      MPI_Comm_free(&cm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      char what[128];
      snprintf(what, sizeof what, "saved on 4 after %lld, resumed on %d",
               (long long)K, Ps[k]);
      rows both = {0};
      both.words = words_of(c);
      for (int64_t i = 0; i < before.n; i++)
        rows_push(&both, before.id[i], before.padded[i],
                  before.w + i * before.words);
      for (int64_t i = 0; i < after.n; i++)
        rows_push(&both, after.id[i], after.padded[i],
                  after.w + i * after.words);
      check_rows(what, c, &both, 7);
      same_rows(what, &both, &ref);
      rows_free(&both);
    }
    rows_free(&after);
  }
  ferry_options_free(o);
  rows_free(&ref);
  rows_free(&before);
}

/* One refusal, the same code on every rank of 3. */
static void refused(const char *spec, const char *k1, const char *v1,
                    const char *words) {
  MPI_Comm c3 = first(3);
  if (c3 == MPI_COMM_NULL) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  ferry_options *o = NULL;
  ferry_options_create(&o);
  ferry_options_set(o, "pack", "concat");
  ferry_options_set(o, "seq_len", "8");
  if (k1)
    ferry_options_set(o, k1, v1);
  ferry_loader *L = NULL;
  int rc = ferry_open(c3, spec, o, &L), lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, c3);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, c3);
  const char *msg = ferry_last_error(NULL);
  CHECK(rc < 0 && lo == hi && strstr(msg, words),
        "%s with %s=%s: rc %d (ranks %d..%d), '%s' (want '%s')", spec,
        k1 ? k1 : "-", v1 ? v1 : "-", rc, lo, hi, msg, words);
  if (L)
    ferry_close(L);
  ferry_options_free(o);
  MPI_Comm_free(&c3);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  if (argc < 4 || (dir = argv[1], sdir = argv[2], reference() < 0)) {
    if (rank == 0)
      fprintf(stderr, "usage: test_pack_rows CORPUS STATEDIR FLOATCORPUS "
                      "(CORPUS: ferry gen --format megatron, int32)\n");
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  golden();
  golden_fit();
  /* the corpus's lengths cycle 0, 1, 7, 8, 9, 80, 3, 5 (pack.sh) */
  const pcase cases[] = {
      {8, 4, 0, 0, "partial", "chunks", "1", "1", "2", NULL, 0, NULL, NULL},
      {8, 3, 1, 1, "partial", "chunks", "2", "3", "1", "independent", 0, NULL,
       NULL},
      {7, 5, 1, 0, "pad", "chunks", "3", "0", "4", NULL, 0, NULL, NULL},
      {9, 2, 0, 1, "drop_last", "chunks", "4", "2", "2", "independent", 0, NULL,
       NULL},
      {1, 16, 0, 0, "partial", "chunks", "5", "1", "2", "independent", 0, NULL,
       NULL},
      {80, 2, 1, 0, "partial", "block", "6", "1", "2", NULL, 0, NULL, NULL},
      {81, 1, 0, 1, "pad", "none", "7", "5", "1", "independent", 0, NULL, NULL},
      {5, 3, 1, 0, "partial", "chunks", "8", "4", "2", "independent", 0, NULL,
       NULL},
      /* first_fit: windows of 8, 64, 1024 documents, split and drop */
      {8, 4, 0, 0, "partial", "chunks", "9", "1", "2", NULL, 1, "8", NULL},
      {9, 3, 0, 1, "pad", "chunks", "10", "3", "4", "independent", 1, "64",
       "drop"},
      {16, 2, 0, 1, "drop_last", "block", "11", "1", "2", NULL, 1, NULL, NULL},
      {81, 2, 0, 0, "partial", "chunks", "12", "2", "1", "independent", 1, "5",
       "drop"},
      /* best_fit */
      {8, 4, 0, 1, "partial", "chunks", "13", "2", "2", NULL, 2, "16", NULL},
      {9, 3, 0, 0, "pad", "block", "14", "1", "1", "independent", 2, "64",
       "drop"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char label[128];
    snprintf(label, sizeof label,
             "%s L=%lld overlap=%d tail=%s shuffle=%s io=%s",
             cases[k].fit == 2 ? "best_fit"
             : cases[k].fit    ? "first_fit"
                               : "concat",
             (long long)cases[k].L, cases[k].overlap, cases[k].tail,
             cases[k].shuffle, cases[k].io ? cases[k].io : "auto");
    epoch_case(label, &cases[k]);
  }
  /* threads and epochs: the same seed the same rows, another epoch other */
  {
    pcase a = {8,   4,   1,    0, "partial", "chunks", "11",
               "1", "1", NULL, 0, NULL,      NULL},
          b = a;
    b.threads = "4";
    rows ra = {0}, rb = {0}, re = {0};
    ra.words = rb.words = re.words = words_of(&a);
    run_epoch(&a, 3, 1, &ra);
    run_epoch(&b, 3, 1, &rb);
    run_epoch(&a, 3, 2, &re);
    if (rank == 0) {
      same_rows("threads=1 and 4", &ra, &rb);
      /* by row index: the documents' order differs, not only the rows' */
      int64_t moved = 0;
      for (int64_t i = 0; i < ra.n; i++)
        for (int64_t j = 0; j < re.n; j++)
          if (re.id[j] == ra.id[i]) {
            moved += memcmp(ra.w + i * ra.words, re.w + j * re.words,
                            (size_t)ra.words * 4) != 0;
            break;
          }
      CHECK(moved > ra.n / 2, "epochs 1 and 2: only %lld of %lld rows differ",
            (long long)moved, (long long)ra.n);
    }
    rows_free(&ra);
    rows_free(&rb);
    rows_free(&re);
  }
  const pcase rs[] = {
      {8, 3, 1, 1, "partial", "chunks", "21", "1", "2", NULL, 0, NULL, NULL},
      {9, 2, 0, 0, "pad", "chunks", "22", "2", "2", "independent", 0, NULL,
       NULL},
  };
  resume_case(&rs[0], 3);
  resume_case(&rs[1], 5);
  {
    pcase f = {8,   3,   0,    1, "partial", "chunks", "23",
               "1", "2", NULL, 1, "16",      NULL};
    resume_case(&f, 4);
    /* first_fit's rows are made once per seed: epochs 1 and 2 serve the
     * same rows (by index), in another order */
    rows r1 = {0}, r2 = {0};
    r1.words = r2.words = words_of(&f);
    run_epoch(&f, 2, 1, &r1);
    run_epoch(&f, 2, 2, &r2);
    if (rank == 0)
      same_rows("first_fit: epochs 1 and 2", &r1, &r2);
    rows_free(&r1);
    rows_free(&r2);
  }
  refused(argv[3], NULL, NULL, "ragged integer variable");
  refused(dir, "max_tokens", "64", "max_tokens");
  refused(dir, "seq_len", "100000000", "no row of seq_len");
  int rc = ft_summary("test_pack_rows");
  MPI_Finalize();
  return rc;
}
