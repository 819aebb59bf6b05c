/*
 * test_held.c - holding batches does not stop training (issue 30, item 2:
 * with prefetch=4 a loop that kept its first three batches failed at the
 * fifth with "all 4 prefetch batches are still held by the caller").  On
 * the mem backend, run by tests/loader/held.sh on 1 and 2 ranks:
 *
 *  - a loop holding 3, 8 and 64 batches (the first k kept to the end, or k
 *    at a time as gradient accumulation does) runs to the end of the epoch
 *    with the batches of a run that holds none, byte for byte, and every
 *    held batch keeps its values until released (with and without a
 *    transform callback, which certifies batches from their slots);
 *  - the slots given to held batches are reused: a second epoch that holds
 *    as many allocates nothing more (the budget's bound holds);
 *  - past held_memory ferry_next fails with FERRY_EINVAL at the batch the
 *    bound predicts, the message saying how many batches and bytes are held
 *    and that held_memory raises it; held_memory=0 is the old behaviour;
 *  - the memory budget counts held_bytes (held_memory in whole batches).
 *
 * held.sh checks the note printed the first time (once per loader).
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/gen.h"
#include "loader/loader.h" /* L->held: the slots given to held batches */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

#define DATASET "mem:N=1500,vars=x:float32:8,y:int64"
#define MAXB 512

static int rank;

static ferry_loader *open_with(const char *const *kv) {
  ferry_options *o;
  ferry_options_create(&o);
  ferry_options_set(o, "batch_size", "5");
  ferry_options_set(o, "seed", "7");
  ferry_options_set(o, "tail", "partial");
  for (int i = 0; kv && kv[i]; i += 2)
    if (ferry_options_set(o, kv[i], kv[i + 1]))
      fprintf(stderr, "bad test option %s=%s\n", kv[i], kv[i + 1]);
  ferry_loader *L = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, DATASET, o, &L);
  ferry_options_free(o);
  CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
  return rc ? NULL : L;
}

static uint64_t batch_hash(const ferry_batch *b) {
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, b->sample_ids,
                            (size_t)b->size * sizeof *b->sample_ids);
  for (int v = 0; v < b->nvars; v++)
    h = ferry__fnv1a(h, b->vars[v].data, b->vars[v].nbytes);
  return h;
}

/* Every value of b is the synthetic value of its sample. */
static int values_ok(const ferry_batch *b) {
  for (int v = 0; v < b->nvars; v++) {
    const ferry_tensor *t = &b->vars[v];
    size_t el = ferry_dtype_size(t->dtype), per = t->row_bytes / el;
    for (int64_t i = 0; i < b->size; i++)
      for (size_t k = 0; k < per; k++) {
        unsigned char want[8];
        ferry__gen_value(t->dtype, b->sample_ids[i], (int64_t)k, want);
        if (memcmp((const char *)t->data + (size_t)i * t->row_bytes + k * el,
                   want, el) != 0)
          return 0;
      }
  }
  return 1;
}

/* One epoch; hold: 0 none, k > 0 the first k batches to the end, k < 0
 * -k at a time (released together, as after one backward).  Fills
 * hash[index]; returns the batches served, -1 on an error. */
static int64_t run(ferry_loader *L, int64_t epoch, int hold, uint64_t *hash) {
  ferry_batch *held[MAXB], *b;
  int nheld = 0, rc;
  int64_t got = 0;
  if (ferry_set_epoch(L, epoch))
    return -1;
  while ((rc = ferry_next(L, &b)) == 0) {
    CHECK(b->index == got, "batch %lld out of order", (long long)b->index);
    CHECK(values_ok(b), "batch %lld: wrong values", (long long)b->index);
    if (got < MAXB)
      hash[got] = batch_hash(b);
    got++;
    if (hold == 0 || (hold > 0 && nheld >= hold) || nheld >= MAXB) {
      ferry_release(L, b);
      continue;
    }
    held[nheld++] = b;
    if (hold < 0 && nheld == -hold) { /* re-check them, then release all */
      for (int i = 0; i < nheld; i++) {
        CHECK(values_ok(held[i]) && batch_hash(held[i]) == hash[held[i]->index],
              "held batch %lld changed while held", (long long)held[i]->index);
        CHECK(ferry_release(L, held[i]) == 0, "release held: %s",
              ferry_last_error(NULL));
      }
      nheld = 0;
    }
  }
  CHECK(rc == FERRY_END, "epoch %lld holding %d ended with %d: %s",
        (long long)epoch, hold, rc, ferry_last_error(L));
  for (int i = nheld - 1; i >= 0; i--) { /* newest first: any order */
    CHECK(values_ok(held[i]) && batch_hash(held[i]) == hash[held[i]->index],
          "held batch %lld changed while held", (long long)held[i]->index);
    CHECK(ferry_release(L, held[i]) == 0, "release held %lld: %s",
          (long long)held[i]->index, ferry_last_error(NULL));
  }
  if (nheld > 0)
    CHECK(ferry_release(L, held[0]) == FERRY_EINVAL,
          "a held batch released twice accepted");
  return rc == FERRY_END ? got : -1;
}

static int transform_ok(ferry_batch *b, void *user) {
  (void)b;
  (void)user;
  return 0;
}

/* Holding 3, 8 and 64 batches: the same batches as holding none. */
static ferry_loader *open_transform(const char *const *kv) {
  ferry_options *o;
  ferry_options_create(&o);
  ferry_options_set(o, "batch_size", "5");
  ferry_options_set(o, "seed", "7");
  ferry_options_set(o, "tail", "partial");
  for (int i = 0; kv && kv[i]; i += 2)
    ferry_options_set(o, kv[i], kv[i + 1]);
  ferry_options_set_transform(o, transform_ok, NULL);
  ferry_loader *L = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, DATASET, o, &L);
  ferry_options_free(o);
  CHECK(rc == 0, "open with a transform: %s", ferry_last_error(NULL));
  return rc ? NULL : L;
}

/* Holding 3, 8 and 64 batches: the same batches as holding none. */
static void test_hold(const char *what, const char *const *kv, int transform) {
  static uint64_t want[MAXB], got[MAXB];
  static const int holds[] = {3, 8, 64, -3, -8, -64};
  ferry_loader *L = transform ? open_transform(kv) : open_with(kv);
  if (!L)
    return;
  int64_t n = run(L, 0, 0, want);
  CHECK(n > 64 + 8 && n <= MAXB, "%s: %lld batches", what, (long long)n);
  CHECK(L->held.nextra == 0, "%s: %lld slots added holding none", what,
        (long long)L->held.nextra);
  for (size_t h = 0; n > 0 && h < sizeof holds / sizeof holds[0]; h++) {
    memset(got, 0, sizeof got);
    int64_t m = run(L, 0, holds[h], got);
    CHECK(m == n, "%s, holding %d: %lld batches, want %lld", what, holds[h],
          (long long)m, (long long)n);
    CHECK(m == n && memcmp(got, want, (size_t)n * sizeof *got) == 0,
          "%s, holding %d: other batches than holding none", what, holds[h]);
  }
  /* the slots given to 64 held batches are spares now: again, no more */
  int64_t extra = L->held.nextra;
  CHECK(extra >= 64 - L->nring && extra <= 64, "%s: %lld slots for 64 held",
        what, (long long)extra);
  run(L, 1, 64, got);
  CHECK(L->held.nextra == extra && L->held.nheld == 0,
        "%s: a second epoch holding 64 added %lld slots (%lld held)", what,
        (long long)(L->held.nextra - extra), (long long)L->held.nheld);
  ferry_close(L);
}

/* Past held_memory: FERRY_EINVAL where the bound says, naming the amount. */
static void test_bound(void) {
  /* a batch: 5 x (8 x 4 + 8) = 200 bytes; 500 bytes hold 2 more batches */
  const char *kv[] = {"prefetch", "2", "held_memory", "500", NULL};
  ferry_loader *L = open_with(kv);
  if (!L)
    return;
  ferry_memory_budget mb;
  ferry_memory_budget_get(L, &mb);
  CHECK(mb.batch_bytes == 200 && mb.held_bytes == 400,
        "budget: batch %zu, held %zu (want 200, 400)", mb.batch_bytes,
        mb.held_bytes);
  CHECK(mb.total_bytes ==
            mb.ring_bytes + mb.read_bytes + mb.plan_bytes + mb.cache_bytes,
        "total %zu: held_bytes is a bound of its own", mb.total_bytes);
  ferry_batch *b[8];
  int rc = ferry_set_epoch(L, 0), n = 0;
  while (!rc && n < 8 && (rc = ferry_next(L, &b[n])) == 0)
    n++;
  CHECK(n == 4 && rc == FERRY_EINVAL,
        "holding every batch with prefetch=2 and 2 more: failed after %d "
        "(want 4) with %d",
        n, rc);
  const char *msg = ferry_last_error(L);
  CHECK(strstr(msg, "holds 4 batches of 200 B (800 B)") &&
            strstr(msg, "held_memory=500") &&
            strstr(msg, "raise held_memory") && strstr(msg, "release"),
        "the message: %s", msg);
  for (int i = 0; i < n; i++)
    CHECK(values_ok(b[i]), "held batch %d changed", i);
  ferry_close(L);

  /* held_memory=0: nothing beyond the ring, as before issue 30 */
  const char *kv0[] = {"prefetch", "2", "held_memory", "0", NULL};
  L = open_with(kv0);
  if (!L)
    return;
  ferry_memory_budget_get(L, &mb);
  CHECK(mb.held_bytes == 0, "held_memory=0: held_bytes %zu", mb.held_bytes);
  rc = ferry_set_epoch(L, 0);
  n = 0;
  while (!rc && n < 8 && (rc = ferry_next(L, &b[n])) == 0)
    n++;
  CHECK(n == 2 && rc == FERRY_EINVAL &&
            strstr(ferry_last_error(L), "holds 2 batches"),
        "held_memory=0: failed after %d with %d: %s", n, rc,
        ferry_last_error(L));
  ferry_close(L);
}

/* The default, in the option table and the budget. */
static void test_default(void) {
  ferry_options *o;
  char v[64];
  ferry_options_create(&o);
  ferry_options_get(o, "held_memory", v, sizeof v);
  CHECK(!strcmp(v, "1GiB"), "default held_memory %s", v);
  CHECK(ferry_options_set(o, "held_memory", "3M") == 0 &&
            ferry_options_get(o, "held_memory", v, sizeof v) == 0 &&
            !strcmp(v, "3MiB"),
        "held_memory=3M reads back as %s", v);
  CHECK(ferry_options_set(o, "held_memory", "2 GiB") == FERRY_EINVAL &&
            ferry_options_set(o, "held_memory", "-1") == FERRY_EINVAL &&
            ferry_options_set(o, "held_memory", "1X") == FERRY_EINVAL,
        "bad held_memory values accepted");
  ferry_options_free(o);
  ferry_loader *L = open_with(NULL);
  if (!L)
    return;
  ferry_memory_budget mb;
  ferry_memory_budget_get(L, &mb);
  /* 1 GiB of 200-byte batches, at most 2^20 slots (slots.c) */
  size_t want = ((size_t)1 << 30) / 200;
  if (want > ((size_t)1 << 20))
    want = (size_t)1 << 20;
  CHECK(mb.held_bytes == want * 200, "default budget: held %zu, want %zu",
        mb.held_bytes, want * 200);
  ferry_close(L);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ft_set_rank(rank);
  const char *host[] = {NULL};
  const char *one[] = {"prefetch", "1", "threads", "1", NULL};
  const char *deep[] = {"prefetch", "16", NULL};
  test_hold("prefetch=4", host, 0);
  test_hold("prefetch=1 threads=1", one, 0);
  test_hold("prefetch=16", deep, 0);
  test_hold("a transform", host, 1);
  test_bound();
  test_default();
  int status = ft_mpi_summary("test_held", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
