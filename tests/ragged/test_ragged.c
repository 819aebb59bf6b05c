/*
 * test_ragged.c - the promises of ferry for a ragged variable (a Megatron
 * indexed dataset written by tests/fixtures/make_megatron.py), over MPI:
 *
 *   test_ragged PREFIX DIR     (7 ranks; tests/ragged/megatron.sh)
 *
 * The test reads PREFIX.idx and PREFIX.bin itself (the layout of
 * make_megatron.py's docstring) for the reference: every sequence's
 * FNV-1a hash and length.  Then, over sub-communicators of 1, 2, 3, 4 and
 * 7 ranks and several option sets (tail partial, pad and drop_last;
 * shuffle chunks, block and none; megatron_sample sequence and document):
 *
 *  - every batch's offsets start at 0, never decrease, end at nvalues =
 *    shape[0], nbytes = nvalues * row_bytes, max_len is the longest;
 *  - every sample's values hash as the reference says;
 *  - every sample once per epoch (tail=partial), or as tail promises
 *    (pad: the repeats marked padded; drop_last: fewer than ranks x
 *    batch_size dropped), and the same batch count on every rank;
 *  - the same seed gives the same batches with threads=1 and threads=4;
 *  - a checkpoint after k batches on 4 ranks resumes on 2, 3, 4 and 7
 *    ranks: the samples served before and after are the epoch, once, and
 *    on 4 ranks the batches are those of the uninterrupted run;
 *  - max_tokens (with and without bucket_window, tail partial, pad and
 *    drop_last): every batch within the token budget and batch_size, the
 *    checks above, and a resume on the same 4 ranks serving the batches of
 *    the uninterrupted run, on 2, 3 and 7 ranks the rest of the epoch once
 *    with equal counts; mid-epoch with buckets too (at a bucket's start
 *    and inside buckets of several batches: on the same 4 ranks exactly,
 *    on 2, 3 and 7 every sample once), and a bucketed epoch saved again
 *    in its middle after such a resume refused on every rank; a budget
 *    below the longest sample refused at ferry_open on every rank, naming
 *    it;
 *  - max_tokens with weighted sampling (a weights file the test writes),
 *    with and without buckets: every batch within the budget, saved after
 *    K batches on 4 ranks and resumed there the uninterrupted run's
 *    batches, resumed on 3 ranks refused on every rank.
 */
#include <ferry.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *prefix, *dir;
/* The reference, sequence by sequence, and document by document. */
static int64_t nseq, ndoc, *seq_len, *doc_len, *seq_ptr;
static uint64_t *seq_hash, *doc_hash;
static unsigned char *bin; /* the .bin, for the padded checks */
static int item;
static int64_t cur_T, cur_B; /* max_tokens case: the budget, batch_size */
static int64_t longest;      /* the longest sequence */
static int64_t empties;      /* empty batches served (take) */
static int64_t most_rows;    /* the most value rows of a batch served (take) */

typedef struct rec { /* one served sample */
  int64_t id, batch;
  uint64_t hash;
  int padded;
} rec;
typedef struct recs {
  rec *v;
  int64_t n, cap;
} recs;

static void push(recs *x, rec r) {
  if (x->n == x->cap) {
    x->cap = x->cap ? 2 * x->cap : 1024;
    x->v = realloc(x->v, (size_t)x->cap * sizeof *x->v);
  }
  x->v[x->n++] = r;
}

static uint64_t fnv(const unsigned char *p, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

static int64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return n == 4 ? (int64_t)(int32_t)v : (int64_t)v;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*len + 1);
  if (b && fread(b, 1, *len, f) != *len) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* Every sequence's and document's length and hash, from the files. */
static int reference(void) {
  char p[4096];
  size_t ilen = 0, blen = 0;
  snprintf(p, sizeof p, "%s.idx", prefix);
  unsigned char *idx = slurp(p, &ilen);
  snprintf(p, sizeof p, "%s.bin", prefix);
  bin = slurp(p, &blen);
  if (!idx || !bin || ilen < 34)
    return -1;
  static const int size_of[9] = {0, 1, 1, 2, 4, 8, 8, 4, 2};
  item = idx[17] <= 8 ? size_of[idx[17]] : 0;
  nseq = le(idx + 18, 8);
  int64_t nd = le(idx + 26, 8);
  ndoc = nd - 1;
  seq_len = calloc((size_t)nseq + 1, sizeof *seq_len);
  seq_hash = calloc((size_t)nseq + 1, sizeof *seq_hash);
  seq_ptr = calloc((size_t)nseq + 1, sizeof *seq_ptr);
  doc_len = calloc((size_t)nd, sizeof *doc_len);
  doc_hash = calloc((size_t)nd, sizeof *doc_hash);
  for (int64_t i = 0; i < nseq; i++) {
    seq_len[i] = le(idx + 34 + i * 4, 4);
    int64_t ptr = le(idx + 34 + nseq * 4 + i * 8, 8);
    seq_ptr[i] = ptr;
    seq_hash[i] = fnv(bin + ptr, (size_t)(seq_len[i] * item));
    longest = seq_len[i] > longest ? seq_len[i] : longest;
  }
  const unsigned char *di = idx + 34 + nseq * 12;
  for (int64_t d = 0; d < ndoc; d++) {
    int64_t a = le(di + d * 8, 8), b = le(di + (d + 1) * 8, 8);
    int64_t ptr = a < nseq ? le(idx + 34 + nseq * 4 + a * 8, 8) : 0;
    for (int64_t s = a; s < b; s++)
      doc_len[d] += seq_len[s];
    doc_hash[d] = fnv(bin + ptr, (size_t)(doc_len[d] * item));
  }
  free(idx);
  return 0; /* bin stays: the padded checks read prefixes of it */
}

static MPI_Comm first(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c);
  return c;
}

static ferry_options *opts_of(const char *const *kv, const char *threads) {
  ferry_options *o;
  ferry_options_create(&o);
  for (int i = 0; kv && kv[i]; i += 2)
    if (ferry_options_set(o, kv[i], kv[i + 1]))
      fprintf(stderr, "bad test option %s=%s\n", kv[i], kv[i + 1]);
  if (threads)
    ferry_options_set(o, "threads", threads);
  return o;
}

/* One batch's layout, and its samples' hashes onto out. */
static void take(const ferry_batch *b, int docs, recs *out) {
  const ferry_tensor *t = &b->vars[0];
  const int64_t *o = t->offsets;
  if (!o) {
    CHECK(0, "variable %s has no offsets", t->name);
    return;
  }
  int64_t most = 0;
  CHECK(o[0] == 0, "batch %lld: offsets[0] = %lld", (long long)b->index,
        (long long)o[0]);
  for (int64_t i = 0; i < b->size; i++) {
    int64_t len = o[i + 1] - o[i];
    CHECK(len >= 0, "batch %lld: offsets decrease at %lld", (long long)b->index,
          (long long)i);
    most = len > most ? len : most;
    int64_t id = b->sample_ids[i];
    uint64_t h =
        fnv((const unsigned char *)t->data + (size_t)o[i] * t->row_bytes,
            (size_t)len * t->row_bytes);
    int64_t want_len = docs ? doc_len[id] : seq_len[id];
    uint64_t want_h = docs ? doc_hash[id] : seq_hash[id];
    CHECK(len == want_len && h == want_h,
          "sample %lld: %lld values hashing %016llx, the files say %lld, "
          "%016llx",
          (long long)id, (long long)len, (unsigned long long)h,
          (long long)want_len, (unsigned long long)want_h);
    push(out, (rec){id, b->index, h, b->padded[i]});
  }
  empties += b->size == 0;
  most_rows = t->nvalues > most_rows ? t->nvalues : most_rows;
  CHECK(cur_T == 0 || (t->nvalues <= cur_T && b->size <= cur_B),
        "batch %lld: %lld samples of %lld rows, max_tokens %lld, batch_size "
        "%lld",
        (long long)b->index, (long long)b->size, (long long)t->nvalues,
        (long long)cur_T, (long long)cur_B);
  CHECK(
      t->nvalues == o[b->size] && t->shape[0] == t->nvalues &&
          t->nbytes == (size_t)t->nvalues * t->row_bytes && t->max_len == most,
      "batch %lld: nvalues %lld shape[0] %lld nbytes %zu max_len %lld; "
      "offsets end at %lld, longest %lld",
      (long long)b->index, (long long)t->nvalues, (long long)t->shape[0],
      t->nbytes, (long long)t->max_len, (long long)o[b->size], (long long)most);
}

/* Serve up to stop batches (-1: all); returns the batches served. */
static int64_t serve(ferry_loader *L, int64_t stop, int docs, recs *out) {
  ferry_batch *b;
  int64_t got = 0;
  int rc = 0;
  while ((stop < 0 || got < stop) && (rc = ferry_next(L, &b)) == 0) {
    take(b, docs, out);
    ferry_release(L, b);
    got++;
  }
  CHECK(rc == 0 || rc == FERRY_END, "ferry_next: %s", ferry_last_error(L));
  return got;
}

/* The slots are made at ferry_set_epoch for the epoch's largest batch:
 * rows_now, the value rows of its slots (from the budget: at open a slot
 * holds batch_rows, the bound over every epoch), is exactly `most`, the
 * most rows a batch of this rank served (a fresh loader's first epoch),
 * and a slot's bytes went down by the rows it did not need. */
static void check_slot_rows(ferry_loader *L, const ferry_memory_budget *at_open,
                            int64_t most, const char *what) {
  ferry_var_info vi;
  ferry_memory_budget now;
  if (ferry_var_info_get(L, 0, &vi) || ferry_memory_budget_get(L, &now)) {
    CHECK(0, "%s: var info or budget: %s", what, ferry_last_error(L));
    return;
  }
  size_t rb = vi.row_bytes;
  int64_t less = (int64_t)(at_open->batch_bytes - now.batch_bytes);
  int64_t rows = vi.batch_rows - (rb ? less / (int64_t)rb : 0);
  CHECK(at_open->batch_bytes >= now.batch_bytes && rows == most &&
            now.ring_bytes % now.batch_bytes == 0,
        "%s: the slots hold %lld rows (a bound of %lld at open, budget %zu -> "
        "%zu bytes); the largest batch served has %lld",
        what, (long long)rows, (long long)vi.batch_rows, at_open->batch_bytes,
        now.batch_bytes, (long long)most);
  /* held_memory (1 GiB by default) in whole batches of the budget's size
   * (at most 2^20 of them), at open and now */
  size_t g = (size_t)1 << 30, n0 = g / at_open->batch_bytes,
         n1 = g / now.batch_bytes;
  n0 = n0 < ((size_t)1 << 20) ? n0 : ((size_t)1 << 20);
  n1 = n1 < ((size_t)1 << 20) ? n1 : ((size_t)1 << 20);
  CHECK(at_open->held_bytes == n0 * at_open->batch_bytes &&
            now.held_bytes == n1 * now.batch_bytes,
        "%s: held bytes %zu at open (batches of %zu), %zu now (of %zu)", what,
        at_open->held_bytes, at_open->batch_bytes, now.held_bytes,
        now.batch_bytes);
}

/* The ids of every rank of c on its rank 0 (sorted, padded ones apart). */
static int64_t gather_ids(MPI_Comm c, const recs *x, int64_t **ids,
                          int64_t *npad) {
  int me, n = 0, cr = 0;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &cr);
  int64_t *mine = malloc((size_t)(x->n + 1) * sizeof *mine);
  int64_t pads = 0;
  for (int64_t i = 0; i < x->n; i++)
    if (x->v[i].padded)
      pads++;
    else
      mine[n++] = x->v[i].id;
  int *counts = calloc((size_t)cr, sizeof *counts),
      *displs = calloc((size_t)cr, sizeof *displs), total = 0;
  MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, c);
  for (int r = 0; r < cr; r++) {
    displs[r] = total;
    total += counts[r];
  }
  *ids = malloc((size_t)(total + 1) * sizeof **ids);
  MPI_Gatherv(mine, n, MPI_INT64_T, *ids, counts, displs, MPI_INT64_T, 0, c);
  MPI_Reduce(&pads, npad, 1, MPI_INT64_T, MPI_SUM, 0, c);
  free(mine);
  free(counts);
  free(displs);
  return me == 0 ? total : 0;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* On c's rank 0: ids hold each of 0..N-1 at most once, and all of them
 * but fewer than `dropped_max`. */
static void check_once(const char *what, int64_t *ids, int64_t n, int64_t N,
                       int64_t dropped_max) {
  qsort(ids, (size_t)n, sizeof *ids, cmp64);
  int64_t dup = 0;
  for (int64_t i = 1; i < n; i++)
    dup += ids[i] == ids[i - 1];
  CHECK(dup == 0 && n <= N && N - n <= dropped_max,
        "%s: %lld ids served for %lld samples, %lld repeated (at most %lld "
        "may be dropped)",
        what, (long long)n, (long long)N, (long long)dup,
        (long long)dropped_max);
}

/* One option set over P ranks: layout, values, exactly-once, equal batch
 * counts, and the same batches with threads=1 and threads=4. */
static void epoch_case(const char *label, const char *const *kv, int P,
                       int docs) {
  MPI_Comm c = first(P);
  if (c == MPI_COMM_NULL)
    return;
  char spec[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  recs a = {0}, b = {0};
  int64_t nb[2] = {0, 0};
  cur_T = cur_B = 0;
  for (int i = 0; kv[i]; i += 2) {
    if (!strcmp(kv[i], "max_tokens"))
      cur_T = atoll(kv[i + 1]);
    if (!strcmp(kv[i], "batch_size"))
      cur_B = atoll(kv[i + 1]);
  }
  const char *thr[2] = {"1", "4"};
  for (int k = 0; k < 2; k++) {
    ferry_options *o = opts_of(kv, thr[k]);
    ferry_loader *L = NULL;
    int rc = ferry_open(c, spec, o, &L);
    CHECK(rc == 0, "%s: open on %d ranks: %s", label, P,
          ferry_last_error(NULL));
    if (rc == 0) {
      ferry_memory_budget at_open;
      ferry_memory_budget_get(L, &at_open);
      CHECK(ferry_set_epoch(L, 1) == 0, "%s: set_epoch: %s", label,
            ferry_last_error(L));
      nb[k] = ferry_num_batches(L);
      empties = 0;
      most_rows = 0;
      int64_t had = (k ? &b : &a)->n;
      CHECK(serve(L, -1, docs, k ? &b : &a) == nb[k], "%s: batches served",
            label);
      check_slot_rows(L, &at_open, most_rows, label);
      /* max_tokens: a rank's batches are split until the counts agree;
       * only a rank with fewer samples than batches gets empty ones */
      CHECK(cur_T == 0 || empties == 0 || (k ? &b : &a)->n - had < nb[k],
            "%s on %d ranks: %lld empty batches of %lld for %lld samples",
            label, P, (long long)empties, (long long)nb[k],
            (long long)((k ? &b : &a)->n - had));
      ferry_close(L);
    }
    ferry_options_free(o);
  }
  CHECK(a.n == b.n, "%s: %lld samples with threads=1, %lld with threads=4",
        label, (long long)a.n, (long long)b.n);
  for (int64_t i = 0; i < a.n && i < b.n; i++)
    if (a.v[i].id != b.v[i].id || a.v[i].batch != b.v[i].batch) {
      CHECK(0,
            "%s: threads=4 serves sample %lld in batch %lld where "
            "threads=1 serves %lld in %lld",
            label, (long long)b.v[i].id, (long long)b.v[i].batch,
            (long long)a.v[i].id, (long long)a.v[i].batch);
      break;
    }
  int64_t lo = 0, hi = 0;
  MPI_Allreduce(&nb[0], &lo, 1, MPI_INT64_T, MPI_MIN, c);
  MPI_Allreduce(&nb[0], &hi, 1, MPI_INT64_T, MPI_MAX, c);
  CHECK(lo == hi, "%s: batch counts from %lld to %lld over %d ranks", label,
        (long long)lo, (long long)hi, P);
  int64_t *ids = NULL, npad = 0;
  int64_t n = gather_ids(c, &a, &ids, &npad);
  int me;
  MPI_Comm_rank(c, &me);
  if (me == 0) {
    int64_t N = docs ? ndoc : nseq, B = 0;
    for (int i = 0; kv[i]; i += 2)
      if (!strcmp(kv[i], "batch_size"))
        B = atoll(kv[i + 1]);
    int drop = 0;
    for (int i = 0; kv[i]; i += 2)
      drop |= !strcmp(kv[i], "tail") && !strcmp(kv[i + 1], "drop_last");
    char what[256];
    snprintf(what, sizeof what, "%s on %d ranks", label, P);
    check_once(what, ids, n, N, drop ? (int64_t)P * B : 1);
    CHECK(drop || n == N, "%s: %lld of %lld samples served", what, (long long)n,
          (long long)N);
  }
  free(ids);
  free(a.v);
  free(b.v);
  cur_T = 0;
  MPI_Comm_free(&c);
}

/* The epoch served by `before` (world ranks 0..3) and `after` (0..P-1):
 * every sample once, checked on rank 0 (collective over max(P, 4)). */
static void check_split_once(const recs *before, const recs *after, int P,
                             const char *what) {
  recs both = {0};
  for (int64_t i = 0; i < after->n; i++)
    push(&both, after->v[i]);
  for (int64_t i = 0; i < before->n; i++)
    push(&both, before->v[i]);
  MPI_Comm all = first(P > 4 ? P : 4);
  if (all != MPI_COMM_NULL) {
    int64_t *ids = NULL, npad = 0;
    int64_t n = gather_ids(all, &both, &ids, &npad);
    if (rank == 0) {
      check_once(what, ids, n, nseq, 1);
      CHECK(n == nseq, "%s: %lld of %lld samples", what, (long long)n,
            (long long)nseq);
    }
    free(ids);
    MPI_Comm_free(&all);
  }
  free(both.v);
}

/* On world ranks 0..3: epoch 2 whole into ref, then its first K batches
 * into before and a state saved at path. */
static void save_on_4(const char *spec, ferry_options *o, int64_t K,
                      const char *path, recs *ref, recs *before) {
  MPI_Comm c4 = first(4);
  if (c4 != MPI_COMM_NULL) {
    ferry_loader *L = NULL;
    CHECK(ferry_open(c4, spec, o, &L) == 0, "open: %s", ferry_last_error(NULL));
    if (L) {
      CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
      serve(L, -1, 0, ref);
      CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
      CHECK(serve(L, K, 0, before) == K, "served %lld batches", (long long)K);
      CHECK(ferry_state_save(L, path) == 0, "save: %s", ferry_last_error(L));
      ferry_close(L);
    }
    MPI_Comm_free(&c4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* On communicator c: the state at path loaded, the rest of its epoch
 * served into out. */
static void load_serve(MPI_Comm c, const char *spec, ferry_options *o,
                       const char *path, recs *out) {
  ferry_loader *L = NULL;
  CHECK(ferry_open(c, spec, o, &L) == 0, "open: %s", ferry_last_error(NULL));
  if (!L)
    return;
  int rc = ferry_state_load(L, path);
  CHECK(rc == 0, "load on %d ranks: %s", ferry_world_size(L),
        ferry_last_error(L));
  if (rc == 0)
    serve(L, -1, 0, out);
  ferry_close(L);
}

static int64_t opt_of(const char *const *kv, const char *name) {
  for (int i = 0; kv[i]; i += 2)
    if (!strcmp(kv[i], name))
      return atoll(kv[i + 1]);
  return 0;
}
static int64_t T_of(const char *const *kv) { return opt_of(kv, "max_tokens"); }
static int64_t B_of(const char *const *kv) { return opt_of(kv, "batch_size"); }

/* max_tokens (label: the case): saved after K batches by 4 ranks; resumed
 * by the same 4 the rest is the uninterrupted run's batches (ids and batch
 * indices) and the epoch is served once; resumed by 2, 3 and 7 the epoch
 * is served once with equal batch counts (bucketed epochs too: what each
 * old rank served is made again from its plan and cut). */
static void tok_resume_case(const char *label, const char *const *kv,
                            int64_t K) {
  char spec[4096], path[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  snprintf(path, sizeof path, "%s/tok-state-%s-%lld", dir, label, (long long)K);
  ferry_options *o = opts_of(kv, NULL);
  recs ref = {0}, before = {0}, after = {0};
  save_on_4(spec, o, K, path, &ref, &before);
  static const int others[] = {2, 3, 7};
  for (size_t w = 0; w < sizeof others / sizeof *others; w++) {
    int P = others[w];
    if (P > size)
      continue;
    /* over P ranks: the rest of the epoch, dealt and cut again */
    MPI_Comm c = first(P);
    recs got = {0};
    if (c != MPI_COMM_NULL) {
      ferry_loader *L = NULL;
      CHECK(ferry_open(c, spec, o, &L) == 0, "open: %s",
            ferry_last_error(NULL));
      if (L) {
        int rc = ferry_state_load(L, path);
        int lo = 0, hi = 0;
        MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, c);
        MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, c);
        CHECK(rc == 0 && lo == hi,
              "%s: max_tokens state of 4 ranks loaded on %d: rc %d (%d..%d): "
              "%s",
              label, P, rc, lo, hi, ferry_last_error(L));
        int64_t nb = ferry_num_batches(L), lo2 = 0, hi2 = 0;
        MPI_Allreduce(&nb, &lo2, 1, MPI_INT64_T, MPI_MIN, c);
        MPI_Allreduce(&nb, &hi2, 1, MPI_INT64_T, MPI_MAX, c);
        CHECK(lo2 == hi2, "%s: resumed on %d ranks: %lld to %lld batches",
              label, P, (long long)lo2, (long long)hi2);
        cur_T = T_of(kv);
        cur_B = B_of(kv);
        if (rc == 0)
          serve(L, -1, 0, &got);
        cur_T = 0;
        ferry_close(L);
      }
      MPI_Comm_free(&c);
    }
    char what[128]; /* before (4 ranks) and after (P): the epoch, once */
    snprintf(what, sizeof what,
             "%s: max_tokens resume after %lld batches of 4 ranks on %d", label,
             (long long)K, P);
    check_split_once(&before, &got, P, what);
    free(got.v);
  }
  MPI_Comm c4 = first(4);
  if (c4 != MPI_COMM_NULL) {
    load_serve(c4, spec, o, path, &after);
    {
      CHECK(before.n + after.n == ref.n,
            "max_tokens, 4 ranks: %lld + %lld samples, the uninterrupted "
            "run %lld",
            (long long)before.n, (long long)after.n, (long long)ref.n);
      for (int64_t i = 0; i < after.n && before.n + i < ref.n; i++)
        if (after.v[i].id != ref.v[before.n + i].id ||
            after.v[i].batch != ref.v[before.n + i].batch) {
          CHECK(0,
                "max_tokens, 4 ranks: resumed sample %lld (batch %lld) "
                "differs from the uninterrupted run's %lld (batch %lld)",
                (long long)after.v[i].id, (long long)after.v[i].batch,
                (long long)ref.v[before.n + i].id,
                (long long)ref.v[before.n + i].batch);
          break;
        }
    }
    MPI_Comm_free(&c4);
  }
  {
    char what[128];
    snprintf(what, sizeof what,
             "%s: max_tokens resume after %lld batches on 4 ranks", label,
             (long long)K);
    check_split_once(&before, &after, 4, what);
  }
  free(ref.v);
  free(before.v);
  free(after.v);
  ferry_options_free(o);
}

/* DIR/w.npy: a float32 weight per sequence, (i mod 3) + 0.5 (rank 0). */
static void write_weights(const char *path) {
  if (rank == 0) {
    FILE *f = fopen(path, "wb");
    char head[128];
    int n = snprintf(head, sizeof head,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(%lld,), }",
                     (long long)nseq);
    while ((n + 11) % 64)
      head[n++] = ' ';
    head[n - 1] = '\n';
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(n & 255),
                             (unsigned char)(n >> 8)};
    int ok = f && fwrite(pre, 1, 10, f) == 10 &&
             fwrite(head, 1, (size_t)n, f) == (size_t)n;
    for (int64_t i = 0; ok && i < nseq; i++) {
      float w = (float)(i % 3) + 0.5f;
      ok = fwrite(&w, 4, 1, f) == 1;
    }
    CHECK(ok && f && fclose(f) == 0, "writing %s", path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* max_tokens with weighted sampling: every batch within the budget, the
 * same batches on 1 and 3 ranks' reruns (epoch_case's checks without
 * exactly-once: draws repeat); saved after K batches on 4 ranks and
 * resumed there, the rest is the uninterrupted run's batches; resumed on
 * 3 ranks, refused with FERRY_ENOTSUP on every rank. */
/* On rank 0 of the world: the ids of x (over c1) and y (over c2) together
 * are those of ref (over c4) as multisets (weights draw with replacement:
 * a sample may come twice, a draw once), none padded. */
static void same_draws(MPI_Comm c4, const recs *ref, MPI_Comm c1, const recs *x,
                       MPI_Comm c2, const recs *y, const char *what) {
  int64_t *r_ids = NULL, *x_ids = NULL, *y_ids = NULL, rp = 0, xp = 0, yp = 0;
  int64_t nr = 0, nx = 0, ny = 0;
  if (c4 != MPI_COMM_NULL)
    nr = gather_ids(c4, ref, &r_ids, &rp);
  if (c1 != MPI_COMM_NULL)
    nx = gather_ids(c1, x, &x_ids, &xp);
  if (c2 != MPI_COMM_NULL)
    ny = gather_ids(c2, y, &y_ids, &yp);
  if (rank == 0) {
    int64_t *xy = malloc((size_t)(nx + ny + 1) * sizeof *xy);
    memcpy(xy, x_ids, (size_t)nx * sizeof *xy);
    memcpy(xy + nx, y_ids, (size_t)ny * sizeof *xy);
    qsort(xy, (size_t)(nx + ny), sizeof *xy, cmp64);
    qsort(r_ids, (size_t)nr, sizeof *r_ids, cmp64);
    int same = nx + ny == nr && nx > 0;
    for (int64_t i = 0; same && i < nr; i++)
      same = xy[i] == r_ids[i];
    CHECK(same && rp + xp + yp == 0,
          "%s: %lld + %lld draws (%lld padded), not the uninterrupted run's "
          "%lld",
          what, (long long)nx, (long long)ny, (long long)(xp + yp),
          (long long)nr);
    free(xy);
  }
  free(r_ids);
  free(x_ids);
  free(y_ids);
}

/* Load the state at path on c and serve up to stop batches of the rest
 * (-1: all) into out; with again, save there after them and serve the
 * rest into more.  The batch counts must agree over c. */
static void hop(MPI_Comm c, const char *spec, ferry_options *o,
                const char *path, int64_t stop, const char *again, recs *out,
                recs *more) {
  ferry_loader *L = NULL;
  CHECK(ferry_open(c, spec, o, &L) == 0, "open: %s", ferry_last_error(NULL));
  int rc = L ? ferry_state_load(L, path) : -1;
  CHECK(rc == 0, "%s loaded on %d ranks: %s", path, L ? ferry_world_size(L) : 0,
        L ? ferry_last_error(L) : "");
  int64_t nb = 0, got = 0;
  if (rc == 0) {
    nb = ferry_num_batches(L);
    got = serve(L, stop, 0, out);
    if (again) {
      CHECK(ferry_state_save(L, again) == 0, "save: %s", ferry_last_error(L));
      got += serve(L, -1, 0, more);
    }
    CHECK(stop >= 0 && !again ? got <= stop : got == nb,
          "%lld batches served of %lld", (long long)got, (long long)nb);
  }
  if (L)
    ferry_close(L);
  int64_t lo = 0, hi = 0;
  int P = 0;
  MPI_Comm_size(c, &P);
  MPI_Allreduce(&nb, &lo, 1, MPI_INT64_T, MPI_MIN, c);
  MPI_Allreduce(&nb, &hi, 1, MPI_INT64_T, MPI_MAX, c);
  CHECK(lo == hi, "%s on %d ranks: batch counts %lld..%lld", path, P,
        (long long)lo, (long long)hi);
}

/* The state of 4 ranks (ref: their uninterrupted epoch, before: what they
 * served until it was saved) resumed over P ranks (a1: its first batch,
 * then saved again; a2: the rest): the draws before, a1 and a2 are the
 * uninterrupted run's.  That second state resumed over 4 ranks (two
 * elastic steps): before, a1 and the rest again the uninterrupted run's;
 * and over P ranks (the last step's): the rest exactly a2. */
static void sampled_elastic_check(const char *spec, ferry_options *o,
                                  const char *path, int P, const recs *ref,
                                  const recs *before, int64_t K) {
  recs a1 = {0}, a2 = {0}, h2 = {0}, s2 = {0}, ba1 = {0};
  MPI_Comm c = first(P), c4 = first(4);
  char again[4200], what[128];
  snprintf(again, sizeof again, "%.4090s.hop%d", path, P);
  if (c != MPI_COMM_NULL)
    hop(c, spec, o, path, 1, again, &a1, &a2);
  snprintf(what, sizeof what,
           "sampled max_tokens saved on 4 after %lld batches, on %d after 1",
           (long long)K, P);
  /* before + a1 on one side: gathered over the world's first 4 and P */
  if (c != MPI_COMM_NULL) { /* a1 and a2 together, per rank */
    for (int64_t i = 0; i < a1.n; i++)
      push(&ba1, a1.v[i]);
    for (int64_t i = 0; i < a2.n; i++)
      push(&ba1, a2.v[i]);
  }
  same_draws(c4, ref, c4, before, c, &ba1, what);
  MPI_Barrier(MPI_COMM_WORLD);
  if (c4 != MPI_COMM_NULL)
    hop(c4, spec, o, again, -1, NULL, &h2, NULL);
  if (c != MPI_COMM_NULL) { /* before's rest is a1 + h2 now */
    ba1.n = 0;
    for (int64_t i = 0; i < a1.n; i++)
      push(&ba1, a1.v[i]);
  }
  recs bh = {0}; /* before and h2 (both over the first 4) */
  for (int64_t i = 0; c4 != MPI_COMM_NULL && i < before->n; i++)
    push(&bh, before->v[i]);
  for (int64_t i = 0; i < h2.n; i++)
    push(&bh, h2.v[i]);
  snprintf(what, sizeof what, "... and then resumed on 4 (two elastic steps)");
  same_draws(c4, ref, c4, &bh, c, &ba1, what);
  MPI_Barrier(MPI_COMM_WORLD);
  if (c != MPI_COMM_NULL) {
    hop(c, spec, o, again, -1, NULL, &s2, NULL);
    int64_t bad = s2.n == a2.n ? -1 : 0;
    for (int64_t i = 0; bad < 0 && i < a2.n; i++)
      if (s2.v[i].id != a2.v[i].id || s2.v[i].batch != a2.v[i].batch)
        bad = i;
    CHECK(bad < 0,
          "the state saved on %d ranks after an elastic resume, resumed on "
          "%d: %lld draws where the run went on with %lld (first difference "
          "%lld)",
          P, P, (long long)s2.n, (long long)a2.n, (long long)bad);
  }
  free(a1.v);
  free(a2.v);
  free(h2.v);
  free(s2.v);
  free(ba1.v);
  free(bh.v);
  if (c != MPI_COMM_NULL)
    MPI_Comm_free(&c);
  if (c4 != MPI_COMM_NULL)
    MPI_Comm_free(&c4);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A bucketed epoch saved on 4 ranks after a batch, resumed on 3 and saved
 * after another (two steps), then resumed on 2, 3 and 4: every sample
 * once, what the 4 served, then the 3, then the last run together. */
static void tok_elastic_twice(const char *const *kv) {
  char spec[4096], path[4096], path2[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  snprintf(path, sizeof path, "%s/tok-twice-1", dir);
  snprintf(path2, sizeof path2, "%s/tok-twice-2", dir);
  ferry_options *o = opts_of(kv, NULL);
  recs ref = {0}, before = {0}, m1 = {0}, m2 = {0};
  save_on_4(spec, o, 1, path, &ref, &before);
  if (size >= 4) {
    MPI_Comm c3 = first(3), c4 = first(4);
    if (c3 != MPI_COMM_NULL)
      hop(c3, spec, o, path, 1, path2, &m1, &m2);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int P = 2; P <= 4; P++) {
      MPI_Comm c = first(P);
      recs rest = {0}, both = {0};
      if (c != MPI_COMM_NULL)
        hop(c, spec, o, path2, -1, NULL, &rest, NULL);
      for (int64_t i = 0; c4 != MPI_COMM_NULL && i < m1.n; i++)
        push(&both, m1.v[i]);
      for (int64_t i = 0; i < rest.n; i++)
        push(&both, rest.v[i]);
      char what[128];
      snprintf(what, sizeof what,
               "a bucketed epoch saved on 4, then on 3, resumed on %d", P);
      recs bb = {0}; /* before and what followed, over the first 4 */
      for (int64_t i = 0; c4 != MPI_COMM_NULL && i < before.n; i++)
        push(&bb, before.v[i]);
      same_draws(c4, &ref, c4, &bb, c4, &both, what);
      free(rest.v);
      free(both.v);
      free(bb.v);
      if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    if (c3 != MPI_COMM_NULL)
      MPI_Comm_free(&c3);
    if (c4 != MPI_COMM_NULL)
      MPI_Comm_free(&c4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(ref.v);
  free(before.v);
  free(m1.v);
  free(m2.v);
  ferry_options_free(o);
}

static void tok_sampled_case(const char *const *kv, int64_t K) {
  char spec[4096], path[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  snprintf(path, sizeof path, "%s/tok-sampled-%lld", dir, (long long)K);
  ferry_options *o = opts_of(kv, NULL);
  recs ref = {0}, before = {0}, after = {0};
  cur_T = T_of(kv);
  cur_B = B_of(kv);
  save_on_4(spec, o, K, path, &ref, &before);
  /* over other numbers of ranks: the draws not served, each once */
  static const int others[] = {2, 3, 7};
  for (size_t w = 0; w < sizeof others / sizeof *others; w++)
    if (others[w] <= size)
      sampled_elastic_check(spec, o, path, others[w], &ref, &before, K);
  MPI_Comm c4 = first(4);
  if (c4 != MPI_COMM_NULL) {
    load_serve(c4, spec, o, path, &after);
    CHECK(before.n > 0 && before.n + after.n == ref.n,
          "sampled max_tokens, 4 ranks: %lld + %lld draws, the "
          "uninterrupted run %lld",
          (long long)before.n, (long long)after.n, (long long)ref.n);
    int64_t bad = -1;
    for (int64_t i = 0; i < before.n && i < ref.n && bad < 0; i++)
      if (before.v[i].id != ref.v[i].id || before.v[i].batch != ref.v[i].batch)
        bad = i;
    for (int64_t i = 0; i < after.n && before.n + i < ref.n && bad < 0; i++)
      if (after.v[i].id != ref.v[before.n + i].id ||
          after.v[i].batch != ref.v[before.n + i].batch)
        bad = before.n + i;
    CHECK(bad < 0,
          "sampled max_tokens, 4 ranks: draw %lld of the run saved after "
          "%lld batches and resumed differs from the uninterrupted run",
          (long long)bad, (long long)K);
    MPI_Comm_free(&c4);
  }
  cur_T = 0;
  free(ref.v);
  free(before.v);
  free(after.v);
  ferry_options_free(o);
}

/* A budget below the longest sample: ferry_open fails on every rank with
 * FERRY_EINVAL, naming max_tokens and the sample's length. */
static void tok_refused(int P) {
  MPI_Comm c = first(P);
  if (c == MPI_COMM_NULL)
    return;
  char spec[4096], T[32], want[64];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  snprintf(T, sizeof T, "%lld", (long long)(longest - 1));
  snprintf(want, sizeof want, "has %lld rows", (long long)longest);
  const char *const kv[] = {"max_tokens", T, NULL};
  ferry_options *o = opts_of(kv, NULL);
  ferry_loader *L = NULL;
  int rc = ferry_open(c, spec, o, &L), lo = 0, hi = 0;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, c);
  const char *msg = ferry_last_error(NULL);
  CHECK(rc == FERRY_EINVAL && lo == hi && strstr(msg, "max_tokens") &&
            (longest < 2 || strstr(msg, want)),
        "max_tokens=%s below the longest sample (%lld) on %d ranks: rc %d "
        "(%d..%d): %s",
        T, (long long)longest, P, rc, lo, hi, msg);
  if (L)
    ferry_close(L);
  ferry_options_free(o);
  MPI_Comm_free(&c);
}

/* pad (int32 tokens, pad_value -7): width (pad=max: the batch's longest;
 * pad=L: L), lengths (cut to L with truncate=yes), the kept tokens, the
 * pad rows; every sample once, equal batch counts.  With pad=L,
 * truncate=no and a longer sample: the same refusal on every rank. */
static void pad_case(const char *pad, const char *truncate, int P) {
  MPI_Comm c = first(P);
  if (c == MPI_COMM_NULL)
    return;
  char spec[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  const char *kv[] = {
      "tail", "partial",  "batch_size", "5",         "seed", "4", "pad",
      pad,    "truncate", truncate,     "pad_value", "-7",   NULL};
  ferry_options *o = opts_of(kv, NULL);
  ferry_loader *L = NULL;
  int64_t fixed = strcmp(pad, "max") ? atoll(pad) : 0;
  int rc = ferry_open(c, spec, o, &L), lo = 0, hi = 0;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, c);
  if (fixed && fixed < longest && !strcmp(truncate, "no")) {
    CHECK(lo == FERRY_EINVAL && hi == FERRY_EINVAL &&
              strstr(ferry_last_error(NULL), "more than pad="),
          "pad=%s truncate=no with a longer sample: rc %d..%d, '%s'", pad, lo,
          hi, ferry_last_error(NULL));
    ferry_options_free(o);
    MPI_Comm_free(&c);
    return;
  }
  CHECK(rc == 0, "pad=%s open: %s", pad, ferry_last_error(NULL));
  recs got = {0};
  int64_t nb = 0, padded_rows = 0;
  ferry_memory_budget at_open;
  if (L)
    ferry_memory_budget_get(L, &at_open);
  if (L && ferry_set_epoch(L, 0) == 0) {
    nb = ferry_num_batches(L);
    ferry_batch *b;
    while (ferry_next(L, &b) == 0) {
      const ferry_tensor *t = &b->vars[0];
      int64_t w = b->size ? t->shape[1] : 0, most = 0;
      padded_rows = b->size * w > padded_rows ? b->size * w : padded_rows;
      CHECK(
          t->lengths && !t->offsets && t->ndim == 2 && t->shape[0] == b->size &&
              t->nbytes == (size_t)(b->size * w) * t->row_bytes,
          "pad=%s batch %lld: shape (%lld, %lld), %zu bytes", pad,
          (long long)b->index, (long long)t->shape[0], (long long)w, t->nbytes);
      for (int64_t i = 0; t->lengths && i < b->size; i++) {
        int64_t id = b->sample_ids[i], want = seq_len[id];
        if (fixed && want > fixed)
          want = fixed;
        most = want > most ? want : most;
        const int32_t *row = (const int32_t *)t->data + i * w;
        CHECK(t->lengths[i] == want &&
                  !memcmp(row, bin + seq_ptr[id], (size_t)want * 4),
              "pad=%s sample %lld: length %lld (want %lld) or tokens differ",
              pad, (long long)id, (long long)t->lengths[i], (long long)want);
        for (int64_t k = want; k < w; k++)
          if (row[k] != -7) {
            CHECK(0, "pad=%s sample %lld row %lld: %d, not the pad -7", pad,
                  (long long)id, (long long)k, row[k]);
            break;
          }
        push(&got, (rec){id, b->index, 0, b->padded[i]});
      }
      CHECK(w == (fixed ? fixed : most) && t->max_len == most,
            "pad=%s batch %lld: width %lld, max_len %lld, longest %lld", pad,
            (long long)b->index, (long long)w, (long long)t->max_len,
            (long long)most);
      ferry_release(L, b);
    }
    /* pad=max: slots of the epoch's most samples x width; pad=L: the
     * bound, batch_size x L, made at open */
    check_slot_rows(L, &at_open,
                    fixed
                        ? opt_of((const char *const *)kv, "batch_size") * fixed
                        : padded_rows,
                    pad);
  }
  int64_t nlo = 0, nhi = 0;
  MPI_Allreduce(&nb, &nlo, 1, MPI_INT64_T, MPI_MIN, c);
  MPI_Allreduce(&nb, &nhi, 1, MPI_INT64_T, MPI_MAX, c);
  CHECK(nlo == nhi, "pad=%s: batch counts %lld..%lld", pad, (long long)nlo,
        (long long)nhi);
  int64_t *ids = NULL, npad = 0, n = gather_ids(c, &got, &ids, &npad);
  int me;
  MPI_Comm_rank(c, &me);
  if (me == 0) {
    char what[64];
    snprintf(what, sizeof what, "pad=%s on %d ranks", pad, P);
    check_once(what, ids, n, nseq, 1);
    CHECK(n == nseq, "%s: %lld of %lld", what, (long long)n, (long long)nseq);
  }
  free(ids);
  free(got.v);
  if (L)
    ferry_close(L);
  ferry_options_free(o);
  MPI_Comm_free(&c);
}

/* Saved after K batches by 4 ranks, resumed by 2, 3, 4 and 7. */
static void resume_case(const char *const *kv, int64_t K) {
  char spec[4096], path[4096];
  snprintf(spec, sizeof spec, "%s.idx", prefix);
  snprintf(path, sizeof path, "%s/state-%lld", dir, (long long)K);
  ferry_options *o = opts_of(kv, NULL);
  recs ref = {0}, before = {0};
  save_on_4(spec, o, K, path, &ref, &before);
  static const int worlds[] = {2, 3, 4, 7};
  for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
    int P = worlds[w];
    if (P > size)
      continue;
    MPI_Comm c = first(P);
    recs after = {0};
    if (c != MPI_COMM_NULL) {
      ferry_loader *L = NULL;
      CHECK(ferry_open(c, spec, o, &L) == 0, "open: %s",
            ferry_last_error(NULL));
      if (L) {
        CHECK(ferry_state_load(L, path) == 0, "load on %d ranks: %s", P,
              ferry_last_error(L));
        serve(L, -1, 0, &after);
        ferry_close(L);
      }
      MPI_Comm_free(&c);
    }
    if (P == 4) { /* each rank: the same batches as the uninterrupted run */
      CHECK(before.n + after.n == ref.n,
            "4 ranks: %lld + %lld samples, the uninterrupted run %lld",
            (long long)before.n, (long long)after.n, (long long)ref.n);
      for (int64_t i = 0; i < after.n && before.n + i < ref.n; i++)
        if (after.v[i].id != ref.v[before.n + i].id) {
          CHECK(0,
                "4 ranks: resumed sample %lld differs from the "
                "uninterrupted run's %lld",
                (long long)after.v[i].id, (long long)ref.v[before.n + i].id);
          break;
        }
    }
    /* before (world ranks 0..3) and after (ranks 0..P-1): the epoch, once */
    char what[128];
    snprintf(what, sizeof what, "resume after %lld batches on %d ranks",
             (long long)K, P);
    check_split_once(&before, &after, P, what);
    free(after.v);
  }
  free(ref.v);
  free(before.v);
  ferry_options_free(o);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  if (argc < 3) {
    if (rank == 0)
      fprintf(stderr, "usage: test_ragged PREFIX DIR\n");
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  prefix = argv[1];
  dir = argv[2];
  if (reference() < 0) {
    if (rank == 0)
      fprintf(stderr, "test_ragged: cannot read %s.idx/.bin\n", prefix);
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  static const char *const partial[] = {
      "tail", "partial", "batch_size", "7", "chunk_samples", "11", NULL};
  static const char *const pad[] = {"tail",          "pad",   "batch_size", "8",
                                    "shuffle",       "block", "block_size", "5",
                                    "chunk_samples", "20",    NULL};
  static const char *const drop[] = {
      "tail", "drop_last",      "batch_size", "6", "chunk_samples",
      "9",    "shuffle_buffer", "2",          NULL};
  static const char *const nosh[] = {
      "tail", "partial",       "batch_size", "5", "shuffle",
      "none", "chunk_samples", "13",         NULL};
  /* a batch a sample: several hundred batches a rank, so the slots'
   * walk at ferry_set_epoch runs on 4 threads with threads=4 */
  static const char *const single[] = {"tail", "partial", "batch_size",    "1",
                                       "seed", "9",       "chunk_samples", "7",
                                       NULL};
  static const char *const docs[] = {
      "tail",          "partial", "batch_size",      "4",        "seed", "3",
      "chunk_samples", "6",       "megatron_sample", "document", NULL};
  /* token budgets: 3x and 8x the longest sequence */
  char t3[32], t8[32];
  snprintf(t3, sizeof t3, "%lld", (long long)(3 * (longest ? longest : 1)));
  snprintf(t8, sizeof t8, "%lld", (long long)(8 * (longest ? longest : 1)));
  const char *const tok[] = {"tail",       "partial", "batch_size",    "16",
                             "max_tokens", t3,        "chunk_samples", "11",
                             NULL};
  const char *const tokb[] = {"tail",       "pad", "batch_size",    "12",
                              "max_tokens", t8,    "bucket_window", "9",
                              "seed",       "5",   "chunk_samples", "8",
                              NULL};
  const char *const tokd[] = {
      "tail",    "drop_last", "batch_size", "5", "max_tokens",    t3,
      "shuffle", "block",     "block_size", "4", "bucket_window", "64",
      NULL};
  static const int worlds[] = {1, 2, 3, 4, 7};
  for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
    if (worlds[w] > size)
      continue;
    epoch_case("max_tokens", tok, worlds[w], 0);
    epoch_case("max_tokens bucketed", tokb, worlds[w], 0);
    epoch_case("max_tokens drop_last", tokd, worlds[w], 0);
    epoch_case("partial", partial, worlds[w], 0);
    epoch_case("batch_size=1", single, worlds[w], 0);
    epoch_case("pad", pad, worlds[w], 0);
    epoch_case("drop_last", drop, worlds[w], 0);
    epoch_case("shuffle=none", nosh, worlds[w], 0);
    epoch_case("documents", docs, worlds[w], 1);
  }
  if (item == 4) { /* the padded checks read int32 tokens */
    pad_case("max", "no", 3);
    pad_case("16", "yes", 2);
    pad_case("16", "no", 3);
    pad_case("100000", "no", 1);
  }
  resume_case(partial, 3);
  resume_case(pad, 1);
  tok_resume_case("tok", tok, 2);
  /* buckets of several batches each: resumes inside a bucket */
  const char *const tokm[] = {"tail",       "partial", "batch_size",    "3",
                              "max_tokens", t3,        "bucket_window", "16",
                              "seed",       "5",       "chunk_samples", "8",
                              NULL};
  tok_resume_case("tokb", tokb, 1);
  tok_resume_case("tokm", tokm, 1);
  tok_resume_case("tokm", tokm, 4);
  tok_elastic_twice(tokm);
  char wpath[4096];
  snprintf(wpath, sizeof wpath, "%s/w.npy", dir);
  write_weights(wpath);
  const char *const toks[] = {"tail",       "partial", "batch_size", "16",
                              "max_tokens", t3,        "weights",    wpath,
                              "seed",       "7",       NULL};
  const char *const toksb[] = {"tail",       "partial", "batch_size",    "6",
                               "max_tokens", t8,        "weights",       wpath,
                               "seed",       "8",       "bucket_window", "12",
                               NULL};
  /* a budget that binds: the old ranks' first batches hold different
   * counts, so the elastic resume skips served draws past the first one
   * some rank did not serve (holes of plan/draw.c's cut) */
  char t1[32];
  snprintf(t1, sizeof t1, "%lld", (long long)(longest ? longest : 1));
  const char *const tokst[] = {"tail",       "partial", "batch_size", "64",
                               "max_tokens", t1,        "weights",    wpath,
                               "seed",       "11",      NULL};
  tok_sampled_case(toks, 1);
  tok_sampled_case(tokst, 2);
  tok_sampled_case(toksb, 1);
  tok_refused(1);
  tok_refused(3);
  int status = ft_mpi_summary("test_ragged", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
