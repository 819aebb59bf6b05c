/*
 * test_loader.c - the loader's promises over MPI, on the in-memory `mem`
 * backend so that only the pipeline is under test.  Run by
 * tests/loader/loader.sh with 1, 2, 3, 4 and 7 ranks under a hard timeout.
 *
 *  - every tail mode serves what it promises across ranks, with equal
 *    batch counts, for awkward N (prime, smaller than ranks x batch);
 *  - the served batches do not depend on threads or prefetch (timing);
 *  - every value equals the synthetic value of its sample index;
 *  - an injected read failure on one rank is the same error on every rank;
 *  - ranks with different options or datasets fail together, no hang;
 *  - a failing transform callback is FERRY_ECALLBACK on every rank;
 *  - ferry_close in the middle of an epoch, with batches held, is clean;
 *  - misuse: next before set_epoch, double release, holding every slot
 *    with held_memory=0 (test_held.c holds more).
 *
 * `test_loader global` runs the tails, determinism, read-failure and close
 * tests with shuffle=global (tests/sampling/global.sh);
 * `test_loader global 0.5` with exchange=0.5 too, and
 * `test_loader global 1 collective` with io=collective.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/gen.h"
#include "core/options.h"
#include "plan/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *shuffle_mode, *exchange_q, *io_mode; /* global [Q [io]] */

static ferry_options *opts_of(const char *const *kv) {
  ferry_options *o;
  ferry_options_create(&o);
  for (int i = 0; kv && kv[i]; i += 2)
    if (ferry_options_set(o, kv[i], kv[i + 1]))
      fprintf(stderr, "bad test option %s=%s\n", kv[i], kv[i + 1]);
  if (shuffle_mode && ferry_options_set(o, "shuffle", shuffle_mode))
    fprintf(stderr, "bad test option shuffle=%s\n", shuffle_mode);
  if (exchange_q && ferry_options_set(o, "exchange", exchange_q))
    fprintf(stderr, "bad test option exchange=%s\n", exchange_q);
  if (io_mode && ferry_options_set(o, "io", io_mode))
    fprintf(stderr, "bad test option io=%s\n", io_mode);
  return o;
}

/* Run one epoch; return a hash of everything served, fill counts on rank 0. */
static int run_epoch(ferry_loader *L, int64_t epoch, uint64_t *hash,
                     int64_t **ids_out, int64_t *nids_out, int64_t *npad_out) {
  *ids_out = NULL;
  *nids_out = *npad_out = 0;
  int rc = ferry_set_epoch(L, epoch);
  if (rc)
    return rc;
  int64_t nb = ferry_num_batches(L), got = 0, n = 0, cap = 1024, npad = 0;
  int64_t *ids = malloc((size_t)cap * sizeof *ids);
  uint64_t h = FERRY__FNV_INIT;
  ferry_batch *b;
  while ((rc = ferry_next(L, &b)) == 0) {
    CHECK(b->index == got, "batch %lld out of order", (long long)b->index);
    got++;
    for (int64_t i = 0; i < b->size; i++) {
      if (n == cap)
        ids = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
      ids[n++] = b->padded[i] ? -1 - b->sample_ids[i] : b->sample_ids[i];
      npad += b->padded[i];
    }
    h = ferry__fnv1a(h, b->sample_ids, (size_t)b->size * 8);
    for (int v = 0; v < b->nvars; v++) {
      const ferry_tensor *t = &b->vars[v];
      h = ferry__fnv1a(h, t->data, t->nbytes);
      size_t el = ferry_dtype_size(t->dtype), per = t->row_bytes / el;
      for (int64_t i = 0; i < b->size; i++)
        for (size_t k = 0; k < per; k++) {
          unsigned char want[8];
          ferry__gen_value(t->dtype, b->sample_ids[i], (int64_t)k, want);
          CHECK(memcmp((char *)t->data + (size_t)i * t->row_bytes + k * el,
                       want, el) == 0,
                "value of sample %lld element %zu of %s",
                (long long)b->sample_ids[i], k, t->name);
        }
    }
    ferry_release(L, b);
  }
  CHECK(rc == FERRY_END, "epoch ended with %d: %s", rc, ferry_last_error(L));
  CHECK(got == nb, "got %lld batches, promised %lld", (long long)got,
        (long long)nb);
  long long lo, hi, g = got;
  MPI_Allreduce(&g, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&g, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "batch counts differ across ranks: %lld..%lld", lo, hi);
  *hash = h;
  *ids_out = ids;
  *nids_out = n;
  *npad_out = npad;
  return rc == FERRY_END ? 0 : rc;
}

/* Gather every rank's served ids to rank 0 and check them against tail. */
static void check_served(ferry_loader *L, const char *tail, int64_t *ids,
                         int64_t n) {
  ferry_epoch_info info;
  CHECK(ferry_epoch_info_get(L, &info) == 0, "epoch info");
  int cnt = (int)n, *counts = NULL, *displ = NULL, total = 0;
  if (rank == 0) {
    counts = malloc((size_t)size * sizeof *counts);
    displ = malloc((size_t)size * sizeof *displ);
  }
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t *all = NULL;
  if (rank == 0) {
    for (int r = 0; r < size; r++) {
      displ[r] = total;
      total += counts[r];
    }
    all = malloc((size_t)(total ? total : 1) * sizeof *all);
  }
  MPI_Gatherv(ids, cnt, MPI_INT64_T, all, counts, displ, MPI_INT64_T, 0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    int64_t N = ferry_num_samples(L);
    int *seen = calloc((size_t)N, sizeof *seen);
    int64_t pads = 0, real = 0;
    for (int i = 0; i < total; i++) {
      int64_t id = all[i] < 0 ? -1 - all[i] : all[i];
      CHECK(id >= 0 && id < N, "id %lld out of range", (long long)id);
      if (id < 0 || id >= N)
        continue;
      if (all[i] < 0)
        pads++;
      else {
        seen[id]++;
        real++;
      }
    }
    int64_t once = 0;
    for (int64_t i = 0; i < N; i++) {
      CHECK(seen[i] <= 1, "tail=%s: sample %lld served %d times", tail,
            (long long)i, seen[i]);
      once += seen[i] == 1;
    }
    if (!strcmp(tail, "partial") || !strcmp(tail, "pad"))
      CHECK(once == info.epoch_samples, "tail=%s: %lld of %lld served", tail,
            (long long)once, (long long)info.epoch_samples);
    if (!strcmp(tail, "drop_last"))
      CHECK(real == info.epoch_samples - info.dropped_samples,
            "drop_last served %lld, expected %lld", (long long)real,
            (long long)(info.epoch_samples - info.dropped_samples));
    if (strcmp(tail, "pad"))
      CHECK(pads == 0, "tail=%s padded %lld", tail, (long long)pads);
    free(seen);
    free(all);
    free(counts);
    free(displ);
  }
}

static void test_tails(void) {
  static const char *const tails[] = {"partial", "pad", "drop_last"};
  static const char *const specs[] = {
      "mem:N=97,vars=x:float32:3,y:int64",
      "mem:N=5,vars=x:uint8",
      "mem:N=1000,vars=img:uint16:2x3,lbl:int32,f:bool",
  };
  for (int s = 0; s < 3; s++)
    for (int t = 0; t < 3; t++)
      for (int part = 0; part < 2; part++) {
        const char *kv[] = {"tail",
                            tails[t],
                            "batch_size",
                            s == 1 ? "2" : "8",
                            "chunk_samples",
                            "7",
                            "partition",
                            part ? "strided" : "contiguous",
                            "shuffle_buffer",
                            "2",
                            NULL};
        ferry_options *o = opts_of(kv);
        ferry_loader *L;
        int rc = ferry_open(MPI_COMM_WORLD, specs[s], o, &L);
        ferry_options_free(o);
        CHECK(rc == 0, "open %s: %s", specs[s], ferry_last_error(NULL));
        if (rc)
          continue;
        uint64_t h;
        int64_t *ids, n, np;
        rc = run_epoch(L, 1, &h, &ids, &n, &np);
        if (rc == FERRY_EINVAL && !strcmp(tails[t], "drop_last")) {
          /* batch larger than a rank's share: a named error everywhere */
          CHECK(strstr(ferry_last_error(L), "batch_size") != NULL, "msg %s",
                ferry_last_error(L));
        } else {
          CHECK(rc == 0, "%s tail=%s: %s", specs[s], tails[t],
                ferry_last_error(L));
          if (rc == 0)
            check_served(L, tails[t], ids, n);
          /* memory bounded by the configuration: the buffers held never
           * exceed the ring plus the read budget computed from the plan */
          ferry_memory_budget mb;
          ferry_stats st;
          CHECK(ferry_memory_budget_get(L, &mb) == 0 &&
                    ferry_stats_get(L, &st) == 0,
                "budget/stats");
          CHECK(st.peak_resident_bytes <= mb.ring_bytes + mb.read_bytes,
                "%s tail=%s: peak %zu bytes > ring %zu + reads %zu", specs[s],
                tails[t], st.peak_resident_bytes, mb.ring_bytes, mb.read_bytes);
          CHECK(mb.total_bytes == mb.ring_bytes + mb.read_bytes + mb.plan_bytes,
                "budget total");
          free(ids);
        }
        ferry_close(L);
      }
}

/* Same seed and epoch: same batches whatever threads/prefetch; other epoch
 * differs. */
static void test_determinism(void) {
  const char *spec = "mem:N=3001,vars=x:float64:5,y:int16";
  uint64_t ref = 0;
  static const char *const settings[][4] = {
      {"1", "1"}, {"4", "8"}, {"2", "2"}, {"3", "16"}};
  for (int k = 0; k < 4; k++) {
    const char *kv[] = {
        "threads", settings[k][0],  "prefetch", settings[k][1], "batch_size",
        "16",      "chunk_samples", "50",       "tail",         "pad",
        NULL};
    ferry_options *o = opts_of(kv);
    ferry_loader *L;
    int rc = ferry_open(MPI_COMM_WORLD, spec, o, &L);
    ferry_options_free(o);
    CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
    if (rc)
      return;
    uint64_t h, h2;
    int64_t *ids, n, np;
    rc = run_epoch(L, 3, &h, &ids, &n, &np);
    CHECK(rc == 0, "epoch: %s", ferry_last_error(L));
    free(ids);
    if (k == 0)
      ref = h;
    CHECK(h == ref, "threads=%s prefetch=%s changed the batches",
          settings[k][0], settings[k][1]);
    rc = run_epoch(L, 4, &h2, &ids, &n, &np);
    free(ids);
    CHECK(h2 != h, "epochs 3 and 4 served the same order");
    ferry_close(L);
  }
}

/* One rank fails a read: every rank gets FERRY_EIO at the same batch. */
static void test_read_failure(void) {
  char spec[128];
  /* a row inside the last rank's share (contiguous, no shuffle) */
  snprintf(spec, sizeof spec, "mem:N=400,vars=x:int32,fail_at=%d,fail_rank=%d",
           400 * (size - 1) / size + 10, size - 1);
  if (shuffle_mode) /* global: the row fails on whichever rank reads it */
    snprintf(spec, sizeof spec, "mem:N=400,vars=x:int32,fail_at=%d",
             400 * (size - 1) / size + 10);
  const char *kv[] = {"batch_size", "4", "chunk_samples", "10", "shuffle",
                      "none",       NULL};
  ferry_options *o = opts_of(kv);
  ferry_loader *L;
  int rc = ferry_open(MPI_COMM_WORLD, spec, o, &L);
  ferry_options_free(o);
  CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
  if (rc)
    return;
  rc = ferry_set_epoch(L, 0);
  CHECK(rc == 0, "set_epoch: %s", ferry_last_error(L));
  ferry_batch *b;
  long long batches = 0;
  while ((rc = ferry_next(L, &b)) == 0) {
    batches++;
    ferry_release(L, b);
  }
  CHECK(rc == FERRY_EIO, "expected FERRY_EIO, got %d: %s", rc,
        ferry_last_error(L));
  long long lo, hi;
  MPI_Allreduce(&batches, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&batches, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "ranks stopped at different batches (%lld..%lld)", lo, hi);
  char want[32];
  snprintf(want, sizeof want, "rank %d", size - 1);
  if (shuffle_mode)
    snprintf(want, sizeof want, "injected read failure");
  CHECK(strstr(ferry_last_error(L), want) != NULL,
        "message does not name the failing rank: %s", ferry_last_error(L));
  /* the same message on every rank */
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, ferry_last_error(L),
                            strlen(ferry_last_error(L))),
           hl, hh;
  MPI_Allreduce(&h, &hl, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hh, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(hl == hh, "messages differ across ranks");
  CHECK(ferry_next(L, &b) == FERRY_EIO, "the epoch stays failed");
  /* a new epoch after the failure works up to the failure again */
  rc = ferry_set_epoch(L, 1);
  CHECK(rc == 0, "set_epoch after failure: %s", ferry_last_error(L));
  ferry_close(L);
}

static void test_mismatch(void) {
  /* the last rank asks for another seed: all fail, naming the option */
  ferry_options *o;
  ferry_options_create(&o);
  if (size > 1 && rank == size - 1)
    ferry_options_set(o, "seed", "99");
  ferry_loader *L = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, "mem:N=50,vars=x:int8", o, &L);
  if (size > 1) {
    CHECK(rc == FERRY_EMISMATCH && L == NULL, "rc %d", rc);
    CHECK(strstr(ferry_last_error(NULL), "'seed'") != NULL, "msg: %s",
          ferry_last_error(NULL));
  } else {
    CHECK(rc == 0, "single rank open: %s", ferry_last_error(NULL));
    ferry_close(L);
  }
  /* another dataset on one rank */
  const char *spec =
      (size > 1 && rank == 0) ? "mem:N=51,vars=x:int8" : "mem:N=50,vars=x:int8";
  L = NULL;
  rc = ferry_open(MPI_COMM_WORLD, spec, o, &L);
  if (size > 1)
    CHECK(rc == FERRY_EMISMATCH && strstr(ferry_last_error(NULL), "dataset"),
          "rc %d msg %s", rc, ferry_last_error(NULL));
  ferry_close(L);
  /* different epochs passed to set_epoch */
  ferry_options_set(o, "seed", "0");
  rc = ferry_open(MPI_COMM_WORLD, "mem:N=50,vars=x:int8", o, &L);
  CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
  if (!rc) {
    rc = ferry_set_epoch(L, size > 1 && rank == 1 ? 7 : 6);
    if (size > 1)
      CHECK(rc == FERRY_EMISMATCH && strstr(ferry_last_error(L), "epoch"),
            "rc %d msg %s", rc, ferry_last_error(L));
    ferry_close(L);
  }
  ferry_options_free(o);
}

static int failing_transform(ferry_batch *b, void *user) {
  int *calls = user;
  __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
  /* scale the data of the first variable; fail on batch 3 of the last rank */
  if (b->index == 3 && rank == size - 1)
    return -1;
  return 0;
}

static void test_transform(void) {
  ferry_options *o;
  int calls = 0;
  ferry_options_create(&o);
  ferry_options_set(o, "batch_size", "5");
  ferry_options_set_transform(o, failing_transform, &calls);
  ferry_loader *L;
  int rc = ferry_open(MPI_COMM_WORLD, "mem:N=300,vars=x:int32", o, &L);
  ferry_options_free(o);
  CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
  if (rc)
    return;
  ferry_set_epoch(L, 0);
  ferry_batch *b;
  int n = 0;
  while ((rc = ferry_next(L, &b)) == 0) {
    n++;
    ferry_release(L, b);
  }
  CHECK(rc == FERRY_ECALLBACK, "rc %d: %s", rc, ferry_last_error(L));
  CHECK(n == 3, "failed after %d batches, expected 3", n);
  ferry_close(L); /* joins the workers: calls is final */
  CHECK(calls >= 4, "transform ran %d times", calls);
}

static void test_misuse_and_close(void) {
  ferry_options *o;
  ferry_options_create(&o);
  ferry_options_set(o, "prefetch", "2");
  ferry_options_set(o, "batch_size", "3");
  ferry_options_set(o, "held_memory", "0"); /* no slot beyond the ring */
  ferry_loader *L;
  int rc = ferry_open(MPI_COMM_WORLD, "mem:N=500,vars=x:float32:8", o, &L);
  ferry_options_free(o);
  CHECK(rc == 0, "open: %s", ferry_last_error(NULL));
  if (rc)
    return;
  ferry_batch *b, *b2, *b3;
  CHECK(ferry_next(L, &b) == FERRY_ESTATE, "next before set_epoch");
  CHECK(ferry_num_batches(L) == FERRY_ESTATE, "num_batches before epoch");
  CHECK(ferry_set_epoch(L, 0) == 0, "set_epoch");
  CHECK(ferry_next(L, &b) == 0 && ferry_next(L, &b2) == 0, "two batches");
  /* both prefetch slots held and held_memory=0: the third call is a clear
   * error, not a hang (tests/loader/test_held.c: with held_memory, no error) */
  rc = ferry_next(L, &b3);
  CHECK(rc == FERRY_EINVAL && strstr(ferry_last_error(L), "release") &&
            strstr(ferry_last_error(L), "held_memory"),
        "holding every slot: rc %d %s", rc, ferry_last_error(L));
  CHECK(ferry_release(L, b) == 0, "release");
  CHECK(ferry_release(L, b) == FERRY_EINVAL, "double release");
  /* a fresh epoch mid-way, then close mid-epoch with a batch held */
  CHECK(ferry_set_epoch(L, 1) == 0, "restart: %s", ferry_last_error(L));
  CHECK(ferry_next(L, &b) == 0, "next");
  CHECK(ferry_close(L) == 0, "close mid-epoch");
  CHECK(ferry_close(NULL) == 0, "close NULL");
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ft_set_rank(rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1)
    shuffle_mode = argv[1];
  if (argc > 2)
    exchange_q = argv[2];
  if (argc > 3)
    io_mode = argv[3];
  test_tails();
  test_determinism();
  test_read_failure();
  if (!shuffle_mode) {
    test_mismatch();
    test_transform();
  }
  test_misuse_and_close();
  int status = ft_mpi_summary("test_loader", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
