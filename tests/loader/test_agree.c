/*
 * test_agree.c - the fused agreement ferry__agree_check (src/util/agree.c):
 * one MPI_Allreduce must answer both "did some rank fail?" and "are these
 * values equal on every rank?" exactly as ferry__agree followed by
 * ferry__agree_same did -- a failure wins over a mismatch, the lowest
 * failing rank's code and message reach every rank, the first differing
 * index and the minimum and maximum are the same everywhere -- for short
 * vectors (one round) and long ones (the three-round fallback).  Also
 * ferry__bcast_blob_rc: root's failure travels with the length.  Run on
 * several ranks by agree.sh.
 */
#include "config.h"
#include "util/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FERRY_TEST_MPI 1
#include "../ferry_test.h"

static void vec(uint64_t *v, int n, int rank, int differ_at) {
  for (int i = 0; i < n; i++)
    v[i] = (uint64_t)0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
  if (differ_at >= 0 && rank == 1)
    v[differ_at] ^= 1; /* rank 1 differs at differ_at */
}

static void case_lengths(int rank, int size, int n) {
  uint64_t *v = calloc((size_t)n, sizeof *v);
  uint64_t lo[128], hi[128];
  CHECK(v != NULL, "calloc");
  if (!v)
    return;
  ferry__err err = {0};
  int which = 7;
  vec(v, n, rank, -1);
  int rc = ferry__agree_check(MPI_COMM_WORLD, rank, 0, v, n, &which,
                              n <= 128 ? lo : NULL, n <= 128 ? hi : NULL, &err);
  CHECK(rc == 0 && which == -1, "n %d equal: rc %d which %d", n, rc, which);
  for (int i = 0; n <= 128 && i < n; i++)
    CHECK(lo[i] == v[i] && hi[i] == v[i], "n %d: lo/hi at %d", n, i);
  /* rank 1 differs at n-1 (at 0 too when n > 1: the first is named) */
  vec(v, n, rank, n - 1);
  if (n > 1 && rank == 1)
    v[0] += 5;
  rc = ferry__agree_check(MPI_COMM_WORLD, rank, 0, v, n, &which,
                          n <= 128 ? lo : NULL, n <= 128 ? hi : NULL, &err);
  if (size > 1) {
    CHECK(rc == FERRY_EMISMATCH && which == 0, "n %d differ: rc %d which %d", n,
          rc, which);
    if (n <= 128)
      CHECK(hi[0] - lo[0] == (n > 1 ? 5u : 1u), "n %d: lo %llu hi %llu", n,
            (unsigned long long)lo[0], (unsigned long long)hi[0]);
  } else
    CHECK(rc == 0, "n %d alone: rc %d", n, rc);
  /* ranks 1 and 2 fail, with different values too: rank 1's error wins */
  memset(&err, 0, sizeof err);
  int mine = 0;
  if (rank == 1 || rank == 2)
    mine = ferry__seterr_on(&err, rank, rank == 1 ? FERRY_EIO : FERRY_ENOMEM,
                            "rank-%d failure", rank);
  rc = ferry__agree_check(MPI_COMM_WORLD, rank, mine, v, n, &which, NULL, NULL,
                          &err);
  if (size > 1) {
    char text[FERRY__MSG_MAX];
    ferry__err_text(&err, text, sizeof text);
    CHECK(rc == FERRY_EIO && which == -1 && strstr(text, "rank-1 failure"),
          "n %d failure: rc %d which %d text %s", n, rc, which, text);
  }
  /* ferry__agree_same is the check alone */
  vec(v, n, rank, -1);
  rc = ferry__agree_same(MPI_COMM_WORLD, rank, v, n, &which, &err);
  CHECK(rc == 0 && which == -1, "n %d agree_same: rc %d", n, rc);
  free(v);
}

static void case_blob(int rank, int size) {
  ferry__err err = {0};
  char msg[] = "the blob";
  void *buf = rank == 0 ? msg : NULL;
  size_t len = rank == 0 ? sizeof msg : 0;
  int rc = ferry__bcast_blob_rc(MPI_COMM_WORLD, rank, 0, 0, &buf, &len,
                                "a blob", &err);
  CHECK(rc == 0 && len == sizeof msg && !strcmp(buf, msg), "blob: rc %d", rc);
  if (rank != 0)
    free(buf);
  /* root failed: every rank gets its error, nothing is allocated */
  buf = NULL;
  len = 0;
  int mine =
      rank == 0 ? ferry__seterr_on(&err, 0, FERRY_EFORMAT, "root failed") : 0;
  rc = ferry__bcast_blob_rc(MPI_COMM_WORLD, rank, 0, mine, &buf, &len, "a blob",
                            &err);
  CHECK(rc == FERRY_EFORMAT && buf == NULL && strstr(err.msg, "root failed"),
        "blob failure: rc %d msg %s (size %d)", rc, err.msg, size);
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  static const int lengths[] = {1, 8, 128, 129, 300};
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
    case_lengths(rank, size, lengths[i]);
  case_blob(rank, size);
  int rc = ft_mpi_summary("test_agree", MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
