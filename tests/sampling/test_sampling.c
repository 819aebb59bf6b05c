/*
 * test_sampling.c - weighted sampling through the whole loader (issue 17),
 * on the mem backend with a weights .npy written here.  Run by
 * tests/sampling/sampling.sh with 7 ranks; sub-communicators of 1, 2, 3, 4 and
 * 7 ranks stand for jobs of different sizes.
 *
 *  - a fixed global batch (84) gives the same global batches (as multisets
 *    of sample ids) on 1, 2, 3, 4 and 7 ranks, with and without
 *    replacement; every value is the sample's; zero weights never served;
 *    without replacement every non-zero sample exactly once;
 *  - threads=1/prefetch=1 and threads=4/prefetch=8 serve the same batches;
 *  - checkpoint after 5 batches on 3 ranks, resume on 2: the draws served
 *    (real, not pads) are exactly those of the uninterrupted run, with and
 *    without replacement; the next epoch then runs;
 *  - the refusals of ferry_open: weights with shuffle=global, with
 *    io=collective, weights and balance together, num_draws without a
 *    sampling option.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/gen.h"
#include "core/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *dir;
static char wpath[4096];
enum { N = 3000, GB = 84 };
static float wts[N];

typedef struct idvec {
  int64_t *v;
  int64_t n, cap;
} idvec;

static void push(idvec *x, int64_t id) {
  if (x->n == x->cap) {
    x->cap = x->cap ? 2 * x->cap : 1024;
    x->v = realloc(x->v, (size_t)x->cap * sizeof *x->v);
  }
  x->v[x->n++] = id;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* A float32 .npy of the weights (rank 0 writes it). */
static void write_weights(void) {
  for (int i = 0; i < N; i++)
    wts[i] = (i % 11 == 3) ? 0.0f : (float)(1 + (i * 7) % 5);
  if (rank)
    return;
  snprintf(wpath, sizeof wpath, "%s/w.npy", dir);
  FILE *f = fopen(wpath, "wb");
  char hdr[118];
  int n =
      snprintf(hdr, sizeof hdr,
               "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", N);
  memset(hdr + n, ' ', sizeof hdr - (size_t)n);
  hdr[sizeof hdr - 1] = '\n';
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0};
  fwrite(pre, 1, 10, f);
  fwrite(hdr, 1, sizeof hdr, f);
  fwrite(wts, sizeof(float), N, f);
  fclose(f);
}

static MPI_Comm first(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c);
  return c;
}

static ferry_options *opts_of(const char *const *kv, int64_t B) {
  ferry_options *o;
  ferry_options_create(&o);
  char b[32];
  snprintf(b, sizeof b, "%lld", (long long)B);
  ferry_options_set(o, "batch_size", b);
  ferry_options_set(o, "weights", wpath);
  ferry_options_set(o, "seed", "5");
  ferry_options_set(o, "draw_block", "16");
  ferry_options_set(o, "threads", "2");
  for (int i = 0; kv && kv[i]; i += 2)
    if (ferry_options_set(o, kv[i], kv[i + 1]))
      fprintf(stderr, "bad test option %s=%s\n", kv[i], kv[i + 1]);
  return o;
}

/* Serve up to stop batches (-1: all): ids into seq (pads as -1 - id), the
 * values checked. */
static int64_t serve(ferry_loader *L, int64_t stop, idvec *seq) {
  ferry_batch *b;
  int64_t got = 0;
  int rc = 0;
  while ((stop < 0 || got < stop) && (rc = ferry_next(L, &b)) == 0) {
    for (int64_t i = 0; i < b->size; i++) {
      int64_t id = b->sample_ids[i];
      push(seq, b->padded[i] ? -1 - id : id);
      unsigned char want[8];
      ferry__gen_value(b->vars[0].dtype, id, 0, want);
      CHECK(memcmp((char *)b->vars[0].data + (size_t)i * b->vars[0].row_bytes,
                   want, ferry_dtype_size(b->vars[0].dtype)) == 0,
            "value of sample %lld", (long long)id);
      CHECK(id >= 0 && id < N && wts[id] > 0, "sample %lld of weight %g",
            (long long)id, id >= 0 && id < N ? (double)wts[id] : -1.0);
    }
    ferry_release(L, b);
    got++;
  }
  CHECK(rc == 0 || rc == FERRY_END, "ferry_next: %s", ferry_last_error(L));
  return got;
}

/* Gather every world rank's ids on rank 0, rank after rank. */
static int64_t gather(const idvec *x, int64_t **all, int **counts_out) {
  int n = (int)x->n, *counts = calloc((size_t)size, sizeof *counts),
      *displs = calloc((size_t)size, sizeof *displs), total = 0;
  MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size; r++) {
    displs[r] = total;
    total += counts[r];
  }
  *all = malloc((size_t)(total ? total : 1) * sizeof **all);
  MPI_Allgatherv(x->v, n, MPI_INT64_T, *all, counts, displs, MPI_INT64_T,
                 MPI_COMM_WORLD);
  free(displs);
  *counts_out = counts;
  return total;
}

/* The epoch's global batches over P ranks, each sorted: out[g * GB ...]. */
static int64_t global_batches(int P, const char *const *kv, int64_t **out) {
  MPI_Comm c = first(P);
  idvec seq = {0};
  int64_t nb = 0;
  if (c != MPI_COMM_NULL) {
    ferry_options *o = opts_of(kv, GB / P);
    ferry_loader *L = NULL;
    int rc = ferry_open(c, "mem:N=3000,vars=x:float32:2", o, &L);
    CHECK(rc == 0, "open on %d ranks: %s", P, ferry_last_error(NULL));
    if (!rc) {
      CHECK(ferry_set_epoch(L, 1) == 0, "set_epoch: %s", ferry_last_error(L));
      nb = serve(L, -1, &seq);
      CHECK(nb == ferry_num_batches(L), "served %lld of %lld", (long long)nb,
            (long long)ferry_num_batches(L));
      ferry_close(L);
    }
    ferry_options_free(o);
    MPI_Comm_free(&c);
  }
  MPI_Bcast(&nb, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  int64_t *all;
  int *counts;
  gather(&seq, &all, &counts);
  *out = malloc((size_t)(nb * GB + 1) * sizeof **out);
  int64_t at = 0, B = GB / P;
  for (int r = 0; r < P; r++) {
    CHECK(counts[r] == nb * B, "rank %d of %d served %d ids, not %lld", r, P,
          counts[r], (long long)(nb * B));
    for (int64_t g = 0; g < nb && counts[r] == nb * B; g++)
      memcpy(*out + g * GB + r * B, all + at + g * B, (size_t)B * sizeof **out);
    at += counts[r];
  }
  for (int64_t g = 0; g < nb; g++)
    qsort(*out + g * GB, GB, sizeof **out, cmp64);
  free(all);
  free(counts);
  free(seq.v);
  return nb;
}

static void ranks_case(const char *rep) {
  const char *kv[] = {"replacement", rep, NULL};
  int64_t *ref = NULL;
  int64_t nb = global_batches(1, kv, &ref);
  CHECK(nb > 10, "replacement=%s: %lld batches", rep, (long long)nb);
  if (!strcmp(rep, "no")) { /* every non-zero sample once (drop_last) */
    int64_t nz = 0, *seen = calloc(N, sizeof *seen);
    for (int i = 0; i < N; i++)
      nz += wts[i] > 0;
    CHECK(nb == nz / GB, "%lld batches of %lld non-zero", (long long)nb,
          (long long)nz);
    for (int64_t i = 0; i < nb * GB; i++)
      seen[ref[i]]++;
    for (int i = 0; i < N; i++)
      CHECK(seen[i] <= 1, "sample %d served %lld times", i, (long long)seen[i]);
    free(seen);
  }
  const int Ps[4] = {2, 3, 4, 7};
  for (int k = 0; k < 4; k++) {
    if (Ps[k] > size)
      continue;
    int64_t *got = NULL;
    int64_t n = global_batches(Ps[k], kv, &got);
    CHECK(n == nb, "%d ranks: %lld batches, 1 rank: %lld", Ps[k], (long long)n,
          (long long)nb);
    for (int64_t g = 0; g < n && g < nb; g++)
      CHECK(!memcmp(ref + g * GB, got + g * GB, GB * sizeof *got),
            "replacement=%s: global batch %lld differs on %d ranks", rep,
            (long long)g, Ps[k]);
    free(got);
  }
  free(ref);
}

/* The same batches whatever the threads and prefetch. */
static void timing_case(void) {
  MPI_Comm c = first(3);
  if (c == MPI_COMM_NULL)
    return;
  idvec a = {0}, b = {0};
  const char *kv1[] = {"threads", "1", "prefetch", "1", NULL};
  const char *kv2[] = {"threads", "4", "prefetch", "8", NULL};
  const char *const *kvs[2] = {kv1, kv2};
  idvec *dst[2] = {&a, &b};
  for (int k = 0; k < 2; k++) {
    ferry_options *o = opts_of(kvs[k], 16);
    ferry_loader *L = NULL;
    if (ferry_open(c, "mem:N=3000,vars=x:float32:2", o, &L) == 0) {
      ferry_set_epoch(L, 3);
      serve(L, -1, dst[k]);
      ferry_close(L);
    } else
      CHECK(0, "open: %s", ferry_last_error(NULL));
    ferry_options_free(o);
  }
  CHECK(a.n == b.n && a.n > 0 && !memcmp(a.v, b.v, (size_t)a.n * 8),
        "threads/prefetch changed the batches (%lld vs %lld ids)",
        (long long)a.n, (long long)b.n);
  free(a.v);
  free(b.v);
  MPI_Comm_free(&c);
}

/* Real ids served by the ranks of c over the epoch: the first `stop`
 * batches then a save (stop >= 0), or a load then the rest. */
static void run_part(MPI_Comm c, const char *const *kv, const char *state,
                     int64_t stop, idvec *real) {
  ferry_options *o = opts_of(kv, 8);
  ferry_loader *L = NULL;
  if (ferry_open(c, "mem:N=3000,vars=x:float32:2", o, &L)) {
    CHECK(0, "open: %s", ferry_last_error(NULL));
    ferry_options_free(o);
    return;
  }
  idvec seq = {0};
  if (stop >= 0 || !state) {
    CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
    serve(L, stop, &seq);
    if (state)
      CHECK(ferry_state_save(L, state) == 0, "save: %s", ferry_last_error(L));
  } else {
    CHECK(ferry_state_load(L, state) == 0, "load: %s", ferry_last_error(L));
    serve(L, -1, &seq);
    idvec next = {0}; /* and the next epoch runs */
    CHECK(ferry_set_epoch(L, 3) == 0, "next epoch: %s", ferry_last_error(L));
    CHECK(serve(L, -1, &next) == ferry_num_batches(L), "next epoch");
    free(next.v);
  }
  for (int64_t i = 0; i < seq.n; i++)
    if (seq.v[i] >= 0)
      push(real, seq.v[i]);
  free(seq.v);
  ferry_close(L);
  ferry_options_free(o);
}

static void resume_case(const char *rep, const char *tail) {
  const char *kv[] = {"replacement", rep, "tail", tail, NULL};
  char state[4096];
  snprintf(state, sizeof state, "%s/state-%s-%s", dir, rep, tail);
  idvec ref = {0}, got = {0};
  MPI_Comm c3 = first(3), c2 = first(2);
  if (c3 != MPI_COMM_NULL) {
    run_part(c3, kv, NULL, -1, &ref);
    run_part(c3, kv, state, 5, &got);
  }
  if (c2 != MPI_COMM_NULL)
    run_part(c2, kv, state, -1, &got);
  int64_t *a, *b;
  int *ca, *cb;
  int64_t na = gather(&ref, &a, &ca), nb = gather(&got, &b, &cb);
  qsort(a, (size_t)na, sizeof *a, cmp64);
  qsort(b, (size_t)nb, sizeof *b, cmp64);
  CHECK(na == nb && na > 0 && !memcmp(a, b, (size_t)na * sizeof *a),
        "replacement=%s tail=%s: 3 ranks then 2 served %lld draws, the "
        "uninterrupted run %lld (or other ones)",
        rep, tail, (long long)nb, (long long)na);
  free(a);
  free(b);
  free(ca);
  free(cb);
  free(ref.v);
  free(got.v);
  if (c3 != MPI_COMM_NULL)
    MPI_Comm_free(&c3);
  if (c2 != MPI_COMM_NULL)
    MPI_Comm_free(&c2);
}

static void refusal(const char *const *kv, const char *what) {
  ferry_options *o = opts_of(kv, 8);
  ferry_loader *L = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, "mem:N=3000,vars=x:float32:2", o, &L);
  const char *msg = ferry_last_error(NULL);
  CHECK(rc != 0 && strstr(msg, what), "expected an error naming '%s': %d %s",
        what, rc, msg);
  if (!rc)
    ferry_close(L);
  ferry_options_free(o);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  dir = argc > 1 ? argv[1] : ".";
  snprintf(wpath, sizeof wpath, "%s/w.npy", dir);
  write_weights();
  MPI_Barrier(MPI_COMM_WORLD);
  ranks_case("yes");
  ranks_case("no");
  timing_case();
  resume_case("yes", "pad");
  resume_case("no", "partial");
  const char *g[] = {"shuffle", "global", NULL};
  refusal(g, "shuffle=global");
  const char *c[] = {"io", "collective", NULL};
  refusal(c, "io=collective");
  const char *wb[] = {"balance", "x", NULL};
  refusal(wb, "exclude each other");
  const char *nd[] = {"weights", "", "num_draws", "5", NULL};
  refusal(nd, "apply with weights");
  int rc = ft_mpi_summary("test_sampling", MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
