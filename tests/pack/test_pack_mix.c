/*
 * test_pack_mix.c - packed rows of a mix of token corpora (src/loader/
 * pack.c, docs/lm.md "Mixing corpora", decision 0053), over MPI:
 *
 *   test_pack_mix A B STATEDIR     (7 ranks; tests/pack/pack.sh)
 *
 * A and B are corpora written by `ferry gen --format megatron` (int32
 * tokens: token k of document i is i + k).  A loader opened on
 * "mix:A=p,B=1-p" with pack=... packs each source into its own rows and
 * draws rows from the sources in their proportions.  Over sub-communicators
 * of 1 to 7 ranks and option sets (concat with and without overlap,
 * first_fit, best_fit; exhaust stop and restart; mix_by epoch and batch;
 * io mmap and independent), every served row is gathered on rank 0 and
 * checked:
 *
 *  - a row holds the documents of one source, and its sample index lies in
 *    that source's rows (A's first, then B's); each token is the one ferry
 *    gen wrote at that position of that document; segment_ids, positions,
 *    loss_mask and cu_seqlens agree with the tokens (docs/lm.md);
 *  - a row is, output for output, the row of that index of its source
 *    packed alone (a loader on the source alone, the same options): the
 *    mix changes which rows are drawn, never what a row holds;
 *  - each source's share of the rows: within one row of its proportion
 *    over the epoch (mix_by=epoch), within one row in every global batch
 *    (mix_by=batch); exhaust=stop serves no row twice; restart serves
 *    num_draws rows;
 *  - the same number of batches on every rank, and the same rows on 1, 3
 *    and 7 ranks;
 *  - a state saved after K batches on 4 ranks, loaded on 2, 3 and 7: the
 *    rows served before and after are those of the uninterrupted run;
 *  - a source without a row of seq_len is refused on every rank, naming
 *    the source.
 */
#include <ferry.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *dirA, *dirB, *sdir;
static char spec[8400];
static int64_t ndocA, ndocB;

/* The document count of a ferry gen megatron corpus (its .idx header). */
static int64_t doc_count(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/corpus.idx", dir);
  FILE *f = fopen(path, "rb");
  unsigned char h[34];
  int64_t S = 0;
  if (!f)
    return -1;
  if (fread(h, 1, 34, f) != 34 || memcmp(h, "MMIDIDX\0\0", 9) || h[17] != 4)
    S = -1;
  else
    for (int k = 7; k >= 0; k--)
      S = S * 256 + h[18 + k];
  fclose(f);
  return S;
}

typedef struct mcase {
  int64_t L, B;
  int overlap;
  const char *tail, *seed, *exhaust, *mix_by, *num_draws, *io;
  int fit;   /* 0 concat, 1 first_fit, 2 best_fit */
  double pA; /* A's proportion */
} mcase;

static ferry_options *opts_of(const mcase *c, int mixed, int64_t B) {
  ferry_options *o = NULL;
  char Ls[32], Bs[32], ov[8];
  snprintf(Ls, sizeof Ls, "%lld", (long long)c->L);
  snprintf(Bs, sizeof Bs, "%lld", (long long)B);
  snprintf(ov, sizeof ov, "%d", c->overlap);
  ferry_options_create(&o);
  int rc = ferry_options_set(o, "pack",
                             c->fit == 2   ? "best_fit"
                             : c->fit == 1 ? "first_fit"
                                           : "concat") |
           ferry_options_set(o, "pack_window", "16") |
           ferry_options_set(o, "seq_len", Ls) |
           ferry_options_set(o, "batch_size", Bs) |
           ferry_options_set(o, "overlap", ov) |
           ferry_options_set(o, "tail", c->tail) |
           ferry_options_set(o, "seed", c->seed) |
           ferry_options_set(o, "chunk_samples", "3") |
           ferry_options_set(o, "threads", "2") |
           ferry_options_set(o, "vars",
                             "tokens,segment_ids,positions,loss_mask,"
                             "cu_seqlens,document_ids") |
           ferry_options_set(o, "io", c->io);
  if (mixed)
    rc |= ferry_options_set(o, "mix_exhaust", c->exhaust) |
          ferry_options_set(o, "mix_by", c->mix_by) |
          ferry_options_set(o, "num_draws", c->num_draws);
  CHECK(rc == 0, "options");
  return o;
}

/* A served row: index, padded flag, global batch, and W + 5L + 1 words:
 * tokens[W], segment_ids, positions, loss_mask, document_ids (each [L]),
 * cu_seqlens[L+1]. */
typedef struct rows {
  int64_t n, cap, words;
  int64_t *id, *batch;
  int *padded;
  int32_t *w;
} rows;

static void rows_push(rows *r, int64_t id, int64_t batch, int padded,
                      const int32_t *w) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->id = realloc(r->id, (size_t)r->cap * sizeof *r->id);
    r->batch = realloc(r->batch, (size_t)r->cap * sizeof *r->batch);
    r->padded = realloc(r->padded, (size_t)r->cap * sizeof *r->padded);
    r->w = realloc(r->w, (size_t)(r->cap * r->words) * sizeof *r->w);
  }
  r->id[r->n] = id;
  r->batch[r->n] = batch;
  r->padded[r->n] = padded;
  memcpy(r->w + r->n * r->words, w, (size_t)r->words * sizeof *w);
  r->n++;
}

static void rows_free(rows *r) {
  free(r->id);
  free(r->batch);
  free(r->padded);
  free(r->w);
  memset(r, 0, sizeof *r);
}

static int64_t words_of(const mcase *c) {
  return c->L + c->overlap + 5 * c->L + 1;
}

static const ferry_tensor *var_of(const ferry_batch *b, const char *name) {
  for (int v = 0; v < b->nvars; v++)
    if (!strcmp(b->vars[v].name, name))
      return &b->vars[v];
  return NULL;
}

static void take(const ferry_batch *b, const mcase *c, rows *out) {
  const int64_t L = c->L, W = L + c->overlap;
  const ferry_tensor *t = var_of(b, "tokens"), *s = var_of(b, "segment_ids"),
                     *p = var_of(b, "positions"), *m = var_of(b, "loss_mask"),
                     *d = var_of(b, "document_ids"),
                     *u = var_of(b, "cu_seqlens");
  if (!t || !s || !p || !m || !d || !u || t->dtype != FERRY_INT32 ||
      t->shape[1] != W || d->dtype != FERRY_INT64) {
    CHECK(0, "batch %lld: the outputs' names, dtypes or shapes",
          (long long)b->index);
    return;
  }
  int32_t *w = malloc((size_t)out->words * sizeof *w);
  for (int64_t i = 0; i < b->size; i++) {
    memcpy(w, (const int32_t *)t->data + i * W, (size_t)W * 4);
    memcpy(w + W, (const int32_t *)s->data + i * L, (size_t)L * 4);
    memcpy(w + W + L, (const int32_t *)p->data + i * L, (size_t)L * 4);
    for (int64_t k = 0; k < L; k++) {
      w[W + 2 * L + k] = ((const uint8_t *)m->data)[i * L + k];
      w[W + 3 * L + k] = (int32_t)((const int64_t *)d->data)[i * L + k];
    }
    memcpy(w + W + 4 * L, (const int32_t *)u->data + i * (L + 1),
           (size_t)(L + 1) * 4);
    rows_push(out, b->sample_ids[i], b->index, b->padded[i], w);
  }
  free(w);
}

static int64_t serve(ferry_loader *L, int64_t stop, const mcase *c, rows *out) {
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
    if (r == me) {
      if (me == 0)
        for (int64_t i = 0; i < mine->n; i++)
          rows_push(all, mine->id[i], mine->batch[i], mine->padded[i],
                    mine->w + i * mine->words);
      else {
        MPI_Send(mine->id, n, MPI_INT64_T, 0, 1, c);
        MPI_Send(mine->batch, n, MPI_INT64_T, 0, 2, c);
        MPI_Send(mine->padded, n, MPI_INT, 0, 3, c);
        MPI_Send(mine->w, (int)(n * mine->words), MPI_INT32_T, 0, 4, c);
      }
    } else if (me == 0) {
      int k = cnt[r];
      int64_t *id = malloc((size_t)(k ? k : 1) * 8);
      int64_t *bt = malloc((size_t)(k ? k : 1) * 8);
      int *pd = malloc((size_t)(k ? k : 1) * sizeof *pd);
      int32_t *w = malloc((size_t)(k ? k : 1) * (size_t)mine->words * 4);
      MPI_Recv(id, k, MPI_INT64_T, r, 1, c, MPI_STATUS_IGNORE);
      MPI_Recv(bt, k, MPI_INT64_T, r, 2, c, MPI_STATUS_IGNORE);
      MPI_Recv(pd, k, MPI_INT, r, 3, c, MPI_STATUS_IGNORE);
      MPI_Recv(w, (int)(k * mine->words), MPI_INT32_T, r, 4, c,
               MPI_STATUS_IGNORE);
      for (int i = 0; i < k; i++)
        rows_push(all, id[i], bt[i], pd[i], w + i * mine->words);
      free(id);
      free(bt);
      free(pd);
      free(w);
    }
  }
  free(cnt);
}

static MPI_Comm first(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c);
  return c;
}

/* Epoch `epoch` of c on P ranks of dataset ds (mixed: the mix's options
 * too) with batch size B; the rows gathered on rank 0 into all; returns
 * the loader's sample count (every rank of the world). */
static int64_t run_epoch(const mcase *c, const char *ds, int mixed, int P,
                         int64_t B, int64_t epoch, rows *all) {
  MPI_Comm cm = first(P);
  int64_t ns = 0;
  if (cm != MPI_COMM_NULL) {
    ferry_options *o = opts_of(c, mixed, B);
    ferry_loader *L = NULL;
    rows mine = {0};
    mine.words = all->words;
    CHECK(ferry_open(cm, ds, o, &L) == 0, "open %s on %d: %s", ds, P,
          ferry_last_error(NULL));
    if (L) {
      ns = ferry_num_samples(L);
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
  MPI_Bcast(&ns, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return ns;
}

/* Rank 0: row i of a against itself and the corpora (its source: *src). */
static int row_ok(const mcase *c, const rows *a, int64_t i, int *src) {
  const int64_t L = c->L, W = L + c->overlap;
  const int32_t *w = a->w + i * a->words, *tok = w, *seg = w + W,
                *pos = w + W + L, *mask = w + W + 2 * L, *doc = w + W + 3 * L,
                *cu = w + W + 4 * L;
  int64_t have = 0;
  while (have < L && seg[have])
    have++;
  if (have == 0)
    return 0;
  *src = doc[0] >= ndocA;
  const int64_t d0 = *src ? ndocA : 0, n = *src ? ndocB : ndocA;
  for (int64_t k = 0; k < L; k++) {
    if (k >= have) {
      if (seg[k] || pos[k] || doc[k] != -1 || mask[k] || tok[k] != 0)
        return 0;
      continue;
    }
    if (doc[k] < d0 || doc[k] >= d0 + n) /* one source a row */
      return 0;
    if (tok[k] != doc[k] - d0 + pos[k]) /* what ferry gen wrote */
      return 0;
    if (k > 0 &&
        (seg[k] == seg[k - 1] ? doc[k] != doc[k - 1] || pos[k] != pos[k - 1] + 1
                              : seg[k] != seg[k - 1] + 1 ||
                                    (c->fit ? pos[k] % L != 0 : pos[k] != 0)))
      return 0;
    if ((k + 1 < L || !c->overlap) && mask[k] != (k + 1 < have))
      return 0;
  }
  int64_t k = 1;
  if (cu[0] != 0)
    return 0;
  for (int64_t j = 1; j < L; j++)
    if (seg[j] != seg[j - 1] && cu[k++] != j)
      return 0;
  for (; k <= L; k++)
    if (cu[k] != L)
      return 0;
  return 1;
}

/* Rank 0: a's rows (a mix's epoch on P ranks) against the corpora, the
 * sources packed alone (alone[s]: their rows by index, rowsA: A's row
 * count) and the mix's shares. */
static void check_mix(const char *what, const mcase *c, const rows *a,
                      int64_t G, const rows *alone, int64_t rowsA,
                      int64_t rowsAll) {
  int64_t bad = 0, wrong_src = 0, differ = 0, cnt[2] = {0, 0}, served = 0;
  char *seen = calloc((size_t)rowsAll + 1, 1);
  int64_t twice = 0;
  const int64_t L = c->L;
  for (int64_t i = 0; i < a->n; i++) {
    if (a->padded[i])
      continue;
    int s = 0;
    if (!row_ok(c, a, i, &s)) {
      if (bad++ == 0)
        fprintf(stderr, "%s: row %lld (sample %lld) is not well formed\n", what,
                (long long)i, (long long)a->id[i]);
      continue;
    }
    served++;
    cnt[s]++;
    int64_t id = a->id[i];
    if (id < 0 || id >= rowsAll || (id >= rowsA) != s) {
      wrong_src++;
      continue;
    }
    twice += seen[id]++ > 0;
    /* the source's own row of that index: every output, the document
     * index taken from the source's numbering */
    const rows *al = &alone[s];
    int64_t r = id - (s ? rowsA : 0), j = 0;
    while (j < al->n && al->id[j] != r)
      j++;
    if (j == al->n) {
      differ++;
      continue;
    }
    const int32_t *x = a->w + i * a->words, *y = al->w + j * al->words;
    const int64_t W = L + c->overlap;
    for (int64_t k = 0; k < a->words; k++) {
      int32_t xv = x[k];
      if (k >= W + 3 * L && k < W + 4 * L && xv >= 0 && s)
        xv -= (int32_t)ndocA;
      if (xv != y[k]) {
        differ++;
        break;
      }
    }
  }
  CHECK(bad == 0, "%s: %lld rows malformed", what, (long long)bad);
  CHECK(wrong_src == 0, "%s: %lld rows' index outside their source's rows",
        what, (long long)wrong_src);
  CHECK(differ == 0, "%s: %lld rows differ from their source's own", what,
        (long long)differ);
  if (!strcmp(c->exhaust, "stop"))
    CHECK(twice == 0, "%s: %lld rows served twice (exhaust=stop)", what,
          (long long)twice);
  else
    CHECK(served == atoll(c->num_draws), "%s: %lld rows served, num_draws %s",
          what, (long long)served, c->num_draws);
  /* the shares */
  if (!strcmp(c->mix_by, "epoch")) {
    double want = c->pA * (double)served;
    CHECK(cnt[0] >= want - 1.0 && cnt[0] <= want + 1.0,
          "%s: %lld of %lld rows from A, the proportion %.2f gives %.1f", what,
          (long long)cnt[0], (long long)served, c->pA, want);
  } else { /* every global batch: its share to the nearest row */
    int64_t maxb = 0;
    for (int64_t i = 0; i < a->n; i++)
      maxb = a->batch[i] > maxb ? a->batch[i] : maxb;
    int64_t *ga = calloc((size_t)maxb + 1, 8),
            *gn = calloc((size_t)maxb + 1, 8);
    for (int64_t i = 0; i < a->n; i++)
      if (!a->padded[i]) {
        gn[a->batch[i]]++;
        ga[a->batch[i]] += a->w[i * a->words + L + c->overlap + 3 * L] < ndocA;
      }
    int64_t off = 0;
    for (int64_t b = 0; b <= maxb; b++)
      if (gn[b] == G) {
        double want = c->pA * (double)gn[b];
        off += ga[b] < want - 1.0 || ga[b] > want + 1.0;
      }
    CHECK(off == 0, "%s: %lld global batches off their shares (mix_by=batch)",
          what, (long long)off);
    free(ga);
    free(gn);
  }
  CHECK(cnt[0] > 0 && cnt[1] > 0, "%s: rows from A %lld, from B %lld", what,
        (long long)cnt[0], (long long)cnt[1]);
  free(seen);
}

/* Rank 0: a and b hold the same rows (index and content), as multisets. */
static int cmp_row(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}
static void same_rows(const char *what, const rows *a, const rows *b) {
  int64_t na = 0, nb = 0;
  int64_t(*ka)[2] = malloc((size_t)(a->n + 1) * sizeof *ka);
  int64_t(*kb)[2] = malloc((size_t)(b->n + 1) * sizeof *kb);
  for (int64_t i = 0; i < a->n; i++)
    if (!a->padded[i])
      ka[na][0] = a->id[i], ka[na++][1] = i;
  for (int64_t i = 0; i < b->n; i++)
    if (!b->padded[i])
      kb[nb][0] = b->id[i], kb[nb++][1] = i;
  qsort(ka, (size_t)na, sizeof *ka, cmp_row);
  qsort(kb, (size_t)nb, sizeof *kb, cmp_row);
  int64_t diff = na != nb;
  for (int64_t i = 0; !diff && i < na; i++)
    diff += ka[i][0] != kb[i][0] ||
            memcmp(a->w + ka[i][1] * a->words, b->w + kb[i][1] * b->words,
                   (size_t)a->words * 4) != 0;
  CHECK(diff == 0, "%s: %lld and %lld rows, %lld differ", what, (long long)na,
        (long long)nb, (long long)diff);
  free(ka);
  free(kb);
}

static void mix_case(const char *label, const mcase *c) {
  static const int Ps[] = {1, 3, 7};
  rows alone[2] = {{0}, {0}}, ref = {0};
  alone[0].words = alone[1].words = ref.words = words_of(c);
  /* each source alone, one rank, batches of 1: every row by index */
  int64_t rowsA = run_epoch(c, dirA, 0, 1, 1, 1, &alone[0]);
  int64_t rowsB = run_epoch(c, dirB, 0, 1, 1, 1, &alone[1]);
  for (size_t k = 0; k < sizeof Ps / sizeof Ps[0]; k++) {
    if (Ps[k] > size)
      continue;
    rows all = {0};
    all.words = words_of(c);
    /* the global batch of 7 ranks when P divides it: the same batches */
    const int64_t G = 7 * c->B, B = G % Ps[k] == 0 ? G / Ps[k] : c->B;
    int64_t ns = run_epoch(c, spec, 1, Ps[k], B, 1, &all);
    if (rank == 0) {
      char what[256];
      snprintf(what, sizeof what, "%s on %d ranks", label, Ps[k]);
      CHECK(ns == rowsA + rowsB, "%s: %lld rows, the sources have %lld + %lld",
            what, (long long)ns, (long long)rowsA, (long long)rowsB);
      check_mix(what, c, &all, B * Ps[k], alone, rowsA, rowsA + rowsB);
      /* the same global batch on 1, 3 and 7 ranks: the same rows */
      if (k == 0)
        ref = all;
      else {
        if (B * Ps[k] == G)
          same_rows(what, &all, &ref);
        rows_free(&all);
      }
    } else
      rows_free(&all);
  }
  rows_free(&ref);
  rows_free(&alone[0]);
  rows_free(&alone[1]);
}

/* Saved after K batches on 4 ranks, resumed on 2, 3 and 7: the rows before
 * and after are the uninterrupted run's (on 4 ranks). */
static void resume_case(const mcase *c, int64_t K) {
  char path[4200];
  snprintf(path, sizeof path, "%s/packmix.state", sdir);
  rows ref = {0}, before = {0};
  ref.words = before.words = words_of(c);
  run_epoch(c, spec, 1, 4, c->B, 2, &ref);
  MPI_Comm c4 = first(4);
  ferry_options *o4 = opts_of(c, 1, c->B);
  if (c4 != MPI_COMM_NULL) {
    ferry_loader *L = NULL;
    rows mine = {0};
    mine.words = words_of(c);
    CHECK(ferry_open(c4, spec, o4, &L) == 0, "open: %s",
          ferry_last_error(NULL));
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
  ferry_options_free(o4);
  MPI_Barrier(MPI_COMM_WORLD);
  static const int Ps[] = {2, 3, 7};
  for (size_t k = 0; k < sizeof Ps / sizeof Ps[0]; k++) {
    if (Ps[k] > size)
      continue;
    const int64_t B = c->B; /* a resume keeps the batch size */
    MPI_Comm cm = first(Ps[k]);
    rows after = {0};
    after.words = words_of(c);
    if (cm != MPI_COMM_NULL) {
      ferry_options *o = opts_of(c, 1, B);
      ferry_loader *L = NULL;
      rows mine = {0};
      mine.words = words_of(c);
      CHECK(ferry_open(cm, spec, o, &L) == 0, "open: %s",
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
      ferry_options_free(o);
      MPI_Comm_free(&cm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      char what[160];
      snprintf(what, sizeof what,
               "mix resumed: saved on 4 after %lld, resumed on %d (batch "
               "%lld)",
               (long long)K, Ps[k], (long long)B);
      rows both = {0};
      both.words = words_of(c);
      for (int64_t i = 0; i < before.n; i++)
        rows_push(&both, before.id[i], 0, before.padded[i],
                  before.w + i * before.words);
      for (int64_t i = 0; i < after.n; i++)
        rows_push(&both, after.id[i], 0, after.padded[i],
                  after.w + i * after.words);
      same_rows(what, &both, &ref);
      rows_free(&both);
    }
    rows_free(&after);
  }
  rows_free(&ref);
  rows_free(&before);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  if (argc < 4 ||
      (dirA = argv[1], dirB = argv[2], sdir = argv[3],
       (ndocA = doc_count(dirA)) < 1 || (ndocB = doc_count(dirB)) < 1)) {
    if (rank == 0)
      fprintf(stderr, "usage: test_pack_mix A B STATEDIR (A, B: ferry gen "
                      "--format megatron corpora, int32)\n");
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  snprintf(spec, sizeof spec, "mix:%s=0.7,%s=0.3", dirA, dirB);
  const mcase cases[] = {
      {8, 4, 0, "partial", "1", "stop", "epoch", "0", "auto", 0, 0.7},
      {8, 3, 1, "partial", "2", "restart", "epoch", "600", "independent", 0,
       0.7},
      {9, 2, 0, "drop_last", "3", "stop", "batch", "0", "independent", 0, 0.7},
      {7, 5, 1, "pad", "4", "restart", "batch", "500", "mmap", 0, 0.7},
      {8, 4, 0, "partial", "5", "stop", "epoch", "0", "auto", 1, 0.7},
      {16, 2, 0, "partial", "6", "restart", "batch", "300", "independent", 2,
       0.7},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char label[160];
    const mcase *c = &cases[k];
    snprintf(label, sizeof label,
             "mix %s L=%lld overlap=%d tail=%s exhaust=%s mix_by=%s io=%s",
             c->fit == 2 ? "best_fit"
             : c->fit    ? "first_fit"
                         : "concat",
             (long long)c->L, c->overlap, c->tail, c->exhaust, c->mix_by,
             c->io);
    mix_case(label, c);
  }
  resume_case(&cases[0], 5);
  resume_case(&cases[1], 7);
  resume_case(&cases[4], 4);
  /* a source without a row of seq_len: refused on every rank, named */
  {
    MPI_Comm c3 = first(3);
    if (c3 != MPI_COMM_NULL) {
      ferry_options *o = NULL;
      ferry_options_create(&o);
      ferry_options_set(o, "pack", "concat");
      ferry_options_set(o, "seq_len", "100000");
      ferry_options_set(o, "tail", "drop_last");
      ferry_loader *L = NULL;
      int rc = ferry_open(c3, spec, o, &L), lo, hi;
      MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, c3);
      MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, c3);
      const char *msg = ferry_last_error(NULL);
      CHECK(rc < 0 && lo == hi && strstr(msg, "no row of seq_len") &&
                strstr(msg, dirA),
            "a source without a row: rc %d (ranks %d..%d), '%s'", rc, lo, hi,
            msg);
      if (L)
        ferry_close(L);
      ferry_options_free(o);
      MPI_Comm_free(&c3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int rc = ft_summary("test_pack_mix");
  MPI_Finalize();
  return rc;
}
