/*
 * test_two_loaders.c TRAIN VAL IO MODE - two loaders over HDF5 files in one
 * process (a training and a validation loader, as every Lightning script
 * has), each with its own I/O thread calling HDF5 at the same time as the
 * other's.  Run by tests/hdf5/hdf5_two.sh on 1 to 3 ranks with IO
 * independent or collective.  MODE interleave: one thread alternates
 * ferry_next between the loaders; MODE threads: each loader is iterated by
 * its own thread (ferry_next of different loaders from different threads).
 * Three epochs each; every value is checked against the formula the
 * fixture writer used (x[i] = (i + off, i + off + 0.5, -(i + off)), y[i] =
 * 7 * (i + off), off 0 for TRAIN and 100000 for VAL) and every sample is
 * served exactly once per epoch over the ranks (tail=partial).
 */
#include "config.h"
#include "ferry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;

typedef struct side {
  const char *path;
  int64_t off;
  ferry_loader *L;
  int64_t n;
  int *seen;
  long bad;
  int rc;
  int64_t epoch;
} side;

static int open_side(side *s, const char *io, int64_t chunk) {
  ferry_options *o = NULL;
  char cs[32];
  snprintf(cs, sizeof cs, "%lld", (long long)chunk);
  ferry_options_create(&o);
  ferry_options_set(o, "batch_size", "5");
  ferry_options_set(o, "chunk_samples", cs);
  ferry_options_set(o, "shuffle_buffer", "2");
  ferry_options_set(o, "tail", "partial");
  ferry_options_set(o, "prefetch", "2");
  ferry_options_set(o, "io", io);
  ferry_options_set(o, "vars", "x,y");
  ferry_options_set(o, "checkpoint_signal", "none");
  int rc = ferry_open(MPI_COMM_WORLD, s->path, o, &s->L);
  ferry_options_free(o);
  if (rc) {
    fprintf(stderr, "rank %d: ferry_open %s: %s\n", rank, s->path,
            ferry_last_error(NULL));
    return rc;
  }
  s->n = ferry_num_samples(s->L);
  s->seen = calloc((size_t)s->n, sizeof *s->seen);
  return s->seen ? 0 : FERRY_ENOMEM;
}

/* Check one batch: values from the formula, ids counted. */
static void check_batch(side *s, const ferry_batch *b) {
  const float *x = b->vars[0].data;
  const int64_t *y = b->vars[1].data;
  for (int64_t k = 0; k < b->size; k++) {
    int64_t i = b->sample_ids[k], v = i + s->off;
    if (i < 0 || i >= s->n) {
      s->bad++;
      continue;
    }
    s->seen[i]++;
    if (x[3 * k] != (float)v || x[3 * k + 1] != (float)v + 0.5f ||
        x[3 * k + 2] != -(float)v || y[k] != 7 * v)
      s->bad++;
  }
}

/* One step of side s: 1 when a batch was taken, 0 at the end, <0 error. */
static int step(side *s) {
  ferry_batch *b;
  int rc = ferry_next(s->L, &b);
  if (rc == FERRY_END)
    return 0;
  if (rc)
    return rc;
  check_batch(s, b);
  ferry_release(s->L, b);
  return 1;
}

static void *run_side(void *arg) {
  side *s = arg;
  int r;
  while ((r = step(s)) > 0)
    ;
  s->rc = r;
  return NULL;
}

/* Every sample exactly once over the ranks, then clear. */
static int check_epoch(side *s, const char *what) {
  int *all = calloc((size_t)s->n, sizeof *all);
  REQUIRE(all, "out of memory");
  MPI_Allreduce(s->seen, all, (int)s->n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int64_t wrong = 0;
  for (int64_t i = 0; i < s->n; i++)
    wrong += all[i] != 1;
  free(all);
  CHECK(wrong == 0, "%s epoch %lld: %lld samples not served exactly once", what,
        (long long)s->epoch, (long long)wrong);
  CHECK(s->bad == 0, "%s epoch %lld: %ld wrong values", what,
        (long long)s->epoch, s->bad);
  memset(s->seen, 0, (size_t)s->n * sizeof *s->seen);
  s->bad = 0;
  return 0;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  if (argc != 5) {
    if (rank == 0)
      fprintf(stderr, "usage: test_two_loaders TRAIN VAL IO MODE\n");
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  side tr = {argv[1], 0, NULL, 0, NULL, 0, 0, 0};
  side va = {argv[2], 100000, NULL, 0, NULL, 0, 0, 0};
  const char *io = argv[3];
  int threads = !strcmp(argv[4], "threads");
  int ok = open_side(&tr, io, 16) == 0 && open_side(&va, io, 7) == 0;
  CHECK(ok, "both loaders open");
  for (int64_t e = 0; ok && e < 3; e++) {
    tr.epoch = va.epoch = e;
    CHECK(ferry_set_epoch(tr.L, e) == 0 && ferry_set_epoch(va.L, e) == 0,
          "set_epoch %lld: %s %s", (long long)e, ferry_last_error(tr.L),
          ferry_last_error(va.L));
    if (threads) {
      pthread_t t1, t2;
      pthread_create(&t1, NULL, run_side, &tr);
      pthread_create(&t2, NULL, run_side, &va);
      pthread_join(t1, NULL);
      pthread_join(t2, NULL);
    } else {
      int a = 1, b = 1;
      while (a > 0 || b > 0) {
        if (a > 0)
          a = step(&tr);
        if (b > 0)
          b = step(&va);
      }
      tr.rc = a;
      va.rc = b;
    }
    CHECK(tr.rc == 0, "train: %d %s", tr.rc, ferry_last_error(tr.L));
    CHECK(va.rc == 0, "val: %d %s", va.rc, ferry_last_error(va.L));
    check_epoch(&tr, "train");
    check_epoch(&va, "val");
  }
  CHECK(ferry_close(tr.L) == 0 && ferry_close(va.L) == 0, "close");
  free(tr.seen);
  free(va.seen);
  int rc = ft_mpi_summary("test_two_loaders", MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
