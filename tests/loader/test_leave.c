/*
 * test_leave.c - a rank that leaves the loop early, and a rank that stops
 * answering.  Run by tests/loader/leave.sh on 3 ranks under a hard timeout, so
 * a hang fails the test.  On the mem backend (io=independent and
 * io=collective):
 *
 *  - rank 0 breaks after 10 batches and calls ferry_close while ranks 1, 2
 *    keep calling ferry_next: their ferry_next returns FERRY_EPEER naming
 *    rank 0, ferry_close and batch 10; rank 0's ferry_close returns the same
 *    error (ferry_last_error(NULL)); the other ranks' ferry_close is clean;
 *  - rank 0 breaks and calls ferry_set_epoch instead: the same error on
 *    every rank, in ferry_next and ferry_set_epoch; every later collective
 *    call fails at once (FERRY_EPEER) without communicating;
 *  - every rank breaks at batch 10 and calls ferry_set_epoch, then
 *    ferry_close: a normal early stop, the next epoch is complete;
 *  - every rank breaks at batch 10 and calls ferry_close: 0 everywhere;
 *  - collective_timeout=2 and rank 1 sleeps 6 s between two batches: ranks
 *    0 and 2 fail in ferry_next with FERRY_EPEER "no answer ... within 2 s"
 *    in about 2 s, rank 1 fails the same way at its next agreement, and
 *    every ferry_close returns.
 */
#include "config.h"
#include "ferry.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ferry_test.h"

static int rank, size;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Many windows, few batches certified ahead: the others are still far from
 * the end of the epoch when rank 0 leaves. */
static ferry_loader *open_loader_sb(const char *io, const char *timeout,
                                    const char *sb) {
  ferry_options *o = NULL;
  ferry_options_create(&o);
  ferry_options_set(o, "batch_size", "4");
  ferry_options_set(o, "chunk_samples", "8");
  ferry_options_set(o, "shuffle_buffer", sb);
  ferry_options_set(o, "prefetch", "2");
  ferry_options_set(o, "io", io);
  ferry_options_set(o, "checkpoint_signal", "none");
  if (timeout)
    ferry_options_set(o, "collective_timeout", timeout);
  ferry_loader *L = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, "mem:N=6000,vars=x:float32:4", o, &L);
  ferry_options_free(o);
  if (rc) {
    fprintf(stderr, "rank %d: ferry_open: %s\n", rank, ferry_last_error(NULL));
    return NULL;
  }
  return L;
}

static ferry_loader *open_loader(const char *io, const char *timeout) {
  return open_loader_sb(io, timeout, "1");
}

/* Take n batches (all of them when n < 0); returns the last ferry_next code
 * (0 after n batches, FERRY_END, or an error). */
static int take(ferry_loader *L, int64_t n, int64_t *got) {
  ferry_batch *b;
  int rc = 0;
  *got = 0;
  while (n < 0 || *got < n) {
    rc = ferry_next(L, &b);
    if (rc)
      return rc;
    ferry_release(L, b);
    (*got)++;
  }
  return 0;
}

/* Rank 0 leaves after k batches with ferry_close (how = 0) or
 * ferry_set_epoch (how = 1); windows of sb chunks (2 sb batches).  With
 * large windows ferry_next's vote is posted early (loader/next.c), so
 * rank 0 may leave with a vote in flight: the same outcome is expected. */
static int case_one_leaves_at(const char *io, int how, const char *sb,
                              int64_t k) {
  ferry_loader *L = open_loader_sb(io, NULL, sb);
  char after[64];
  snprintf(after, sizeof after, "after %lld batches of epoch 0", (long long)k);
  REQUIRE(L, "open");
  REQUIRE(ferry_set_epoch(L, 0) == 0, "set_epoch: %s", ferry_last_error(L));
  int64_t got = 0;
  if (rank == 0) {
    REQUIRE(take(L, k, &got) == 0, "%lld batches", (long long)k);
    if (how == 0) {
      int rc = ferry_close(L);
      const char *msg = ferry_last_error(NULL);
      CHECK(rc == FERRY_EPEER, "rank 0's ferry_close returned %d", rc);
      CHECK(strstr(msg, "rank 0:") && strstr(msg, "called ferry_close") &&
                strstr(msg, after) &&
                strstr(msg, "other ranks called ferry_next"),
            "rank 0's close message: %s", msg);
      return 0;
    }
    int rc = ferry_set_epoch(L, 1);
    CHECK(rc == FERRY_EPEER, "rank 0's ferry_set_epoch returned %d", rc);
    CHECK(strstr(ferry_last_error(L), "called ferry_set_epoch") &&
              strstr(ferry_last_error(L), after),
          "rank 0's message: %s", ferry_last_error(L));
  } else {
    int rc = take(L, -1, &got);
    const char *msg = ferry_last_error(L);
    CHECK(rc == FERRY_EPEER,
          "rank %d: ferry_next returned %d after %lld "
          "batches: %s",
          rank, rc, (long long)got, msg);
    CHECK(got >= k && got < ferry_num_batches(L),
          "rank %d failed at batch "
          "%lld of %lld",
          rank, (long long)got, (long long)ferry_num_batches(L));
    CHECK(strstr(msg, "rank 0:") &&
              strstr(msg, how ? "called ferry_set_epoch"
                              : "called "
                                "ferry_close") &&
              strstr(msg, after),
          "rank %d's message: %s", rank, msg);
    char expect[64];
    snprintf(expect, sizeof expect, "(for batch %lld)", (long long)got);
    CHECK(strstr(msg, expect) != NULL, "rank %d: message without %s: %s", rank,
          expect, msg);
    /* The epoch is over; a second call says so without communicating. */
    ferry_batch *b;
    CHECK(ferry_next(L, &b) == FERRY_EPEER, "ferry_next again");
  }
  /* Every later collective fails at once, on every rank still open. */
  CHECK(ferry_set_epoch(L, 2) == FERRY_EPEER, "set_epoch after the mismatch");
  CHECK(ferry_state_save_buffer(L, &(void *){NULL}, &(size_t){0}) ==
            FERRY_EPEER,
        "state_save after the mismatch");
  CHECK(ferry_close(L) == 0, "rank %d: close after the mismatch: %s", rank,
        ferry_last_error(NULL));
  return 0;
}

static int case_one_leaves(const char *io, int how) {
  return case_one_leaves_at(io, how, "1", 10);
}

/* Every rank stops at batch 10 together: a normal early stop. */
static int case_all_leave(const char *io, int then_close) {
  ferry_loader *L = open_loader(io, NULL);
  REQUIRE(L, "open");
  REQUIRE(ferry_set_epoch(L, 0) == 0, "set_epoch: %s", ferry_last_error(L));
  int64_t got = 0;
  REQUIRE(take(L, 10, &got) == 0, "10 batches");
  if (!then_close) {
    REQUIRE(ferry_set_epoch(L, 1) == 0, "set_epoch after an early stop: %s",
            ferry_last_error(L));
    int rc = take(L, -1, &got);
    CHECK(rc == FERRY_END && got == ferry_num_batches(L),
          "the next epoch: rc %d after %lld of %lld batches: %s", rc,
          (long long)got, (long long)ferry_num_batches(L), ferry_last_error(L));
  }
  int rc = ferry_close(L);
  CHECK(rc == 0, "close after every rank stopped: %d %s", rc,
        ferry_last_error(NULL));
  return 0;
}

/* Rank 1 stops answering for 6 s; collective_timeout=2. */
static int case_timeout(const char *io) {
  ferry_loader *L = open_loader(io, "2");
  REQUIRE(L, "open");
  REQUIRE(ferry_set_epoch(L, 0) == 0, "set_epoch: %s", ferry_last_error(L));
  int64_t got = 0;
  REQUIRE(take(L, 5, &got) == 0, "5 batches");
  if (rank == 1)
    sleep(6);
  double t0 = now();
  int rc = take(L, -1, &got);
  double dt = now() - t0;
  const char *msg = ferry_last_error(L);
  CHECK(rc == FERRY_EPEER, "rank %d: ferry_next returned %d: %s", rank, rc,
        msg);
  CHECK(strstr(msg, "no answer from the other 2 ranks within 2 s "
                    "(collective_timeout) in ferry_next") != NULL,
        "rank %d's message: %s", rank, msg);
  if (rank != 1)
    CHECK(dt > 1.5 && dt < 5, "rank %d waited %.1f s", rank, dt);
  CHECK(ferry_close(L) == 0, "close after a timeout");
  return 0;
}

/* Rank 1 is killed (SIGKILL) after 5 batches; collective_timeout=3.  What
 * the others see depends on the MPI library: Open MPI's launcher normally
 * kills the whole job (leave.sh checks that it ends, and says so); when it
 * lets the others run on (mpirun --enable-recovery), their ferry_next
 * fails with FERRY_EPEER after 3 s, and rank 0 prints "survivor: ..." for
 * leave.sh to check. */
static int case_kill(void) {
  ferry_loader *L = open_loader("independent", "3");
  REQUIRE(L, "open");
  REQUIRE(ferry_set_epoch(L, 0) == 0, "set_epoch: %s", ferry_last_error(L));
  int64_t got = 0;
  REQUIRE(take(L, 5, &got) == 0, "5 batches");
  if (rank == 1) {
    fflush(stdout);
    raise(SIGKILL);
  }
  double t0 = now();
  int rc = take(L, -1, &got);
  double dt = now() - t0;
  printf("survivor: rank %d: ferry_next returned %d after %.1f s: %s\n", rank,
         rc, dt, ferry_last_error(L));
  fflush(stdout);
  CHECK(rc == FERRY_EPEER, "rank %d: %d", rank, rc);
  ferry_close(L);
  return 0;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  const char *which = argc > 1 ? argv[1] : "all";
  if (!strcmp(which, "kill")) {
    case_kill();
    /* No summary: it would need the killed rank. */
    printf("rank %d: %s\n", rank, ft_failures ? "FAIL" : "ok");
    fflush(stdout);
    _exit(ft_failures ? 1 : 0); /* MPI_Finalize would wait for rank 1 */
  }
  static const char *const ios[] = {"independent", "collective"};
  for (int i = 0; i < 2; i++) {
    const char *io = ios[i];
    if (!strcmp(which, "all") || !strcmp(which, "leave")) {
      if (case_one_leaves(io, 0) || case_one_leaves(io, 1) ||
          case_all_leave(io, 0) || case_all_leave(io, 1))
        ft_failures++;
      /* windows of 16 batches: rank 0 leaves before, inside and after the
       * stretch where the next vote is already posted */
      static const int64_t at[] = {3, 9, 13, 14, 15, 21, 29, 30, 44};
      for (size_t j = 0; j < sizeof at / sizeof at[0]; j++)
        if (case_one_leaves_at(io, (int)(j % 2), "8", at[j]))
          ft_failures++;
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0)
        printf("io=%s: leaving cases done\n", io);
    }
    if (!strcmp(which, "all") || !strcmp(which, "timeout")) {
      if (case_timeout(io))
        ft_failures++;
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0)
        printf("io=%s: timeout case done\n", io);
    }
  }
  int rc = ft_mpi_summary("test_leave", MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
