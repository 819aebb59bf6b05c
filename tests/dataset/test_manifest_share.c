/*
 * test_manifest_share.c - the manifest broadcast of ferry_open
 * (src/dataset/share.c) gives one outcome on every rank, and the same
 * on one rank as on several.  Issue 30: a Parquet file with two columns
 * named `column` was served on one rank; on two, rank 1 refused the
 * broadcast manifest ("manifest buffer corrupt at byte 436: variable named
 * twice") while rank 0 had accepted it.  Cases, each run by
 * manifest_share.sh on 1, 2 and 3 ranks:
 *
 *  - a good manifest: every rank holds it (the same hash);
 *  - rank 0 holds a manifest with two variables of one name (made past
 *    the scan, which now refuses it): every rank, rank 0 included and on
 *    one rank too, returns FERRY_EFORMAT with rank 0's message;
 *  - rank 0 failed to build its manifest: its error on every rank;
 *  - the broadcast bytes reach the last rank damaged: its unpack fails, and
 *    every rank returns its error, naming it (ferry__manifest_unpack_agree).
 */
#include "config.h"
#include "dataset/dataset.h"
#include "util/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FERRY_TEST_MPI 1
#include "../ferry_test.h"

#define SPEC "mem:N=50,vars=x:float32:3,y:int64"

/* The same (code, message, rank) on every rank? */
static int same_everywhere(int rc, const ferry__err *err, int rank) {
  uint64_t v[3] = {(uint64_t)(int64_t)rc,
                   ferry__fnv1a(FERRY__FNV_INIT, err->msg, strlen(err->msg)),
                   (uint64_t)(err->has_rank ? err->rank : -1)};
  int which = -1;
  ferry__err e2 = {0};
  return ferry__agree_same(MPI_COMM_WORLD, rank, v, 3, &which, &e2) == 0;
}

/* Rank 0 scans SPEC into m (the others leave m empty); 0 or the error. */
static int build(int rank, ferry__manifest *m, ferry__err *err) {
  memset(m, 0, sizeof *m);
  return rank == 0 ? ferry__manifest_scan(SPEC, NULL, NULL, m, err) : 0;
}

static void case_good(int rank) {
  ferry__manifest m;
  ferry__err err = {0};
  int rc = build(rank, &m, &err);
  rc = ferry__manifest_share(MPI_COMM_WORLD, rank, rc, &m, SPEC, &err);
  CHECK(rc == 0, "good manifest: %d %s", rc, err.msg);
  if (rc == 0) {
    int which = -1;
    CHECK(m.nvars == 2 && m.num_samples == 50 &&
              ferry__agree_same(MPI_COMM_WORLD, rank, &m.hash, 1, &which,
                                &err) == 0,
          "good manifest: %d vars, %lld samples, hashes differ", m.nvars,
          (long long)m.num_samples);
  }
  ferry__manifest_free(&m);
}

static void case_named_twice(int rank) {
  ferry__manifest m;
  ferry__err err = {0};
  int rc = build(rank, &m, &err);
  if (rank == 0 && rc == 0) { /* y becomes a second x, past the scan */
    free(m.vars[1].name);
    m.vars[1].name = strdup("x");
    m.hash = ferry__manifest_hash(&m);
    CHECK(ferry__manifest_check_names(&m, &err) == FERRY_EFORMAT &&
              strstr(err.msg, "variables 1 and 2 of 2") &&
              strstr(err.msg, "both named 'x'"),
          "check_names: %s", err.msg);
    memset(&err, 0, sizeof err);
  }
  rc = ferry__manifest_share(MPI_COMM_WORLD, rank, rc, &m, SPEC, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "variable named twice") &&
            err.has_rank && err.rank == 0,
        "two variables named x: %d %s (rank %d)", rc, err.msg,
        err.has_rank ? err.rank : -1);
  CHECK(same_everywhere(rc, &err, rank), "two variables named x: outcomes "
                                         "differ between ranks");
  ferry__manifest_free(&m);
}

static void case_root_failed(int rank) {
  ferry__manifest m;
  ferry__err err = {0};
  memset(&m, 0, sizeof m);
  int rc = rank == 0 ? ferry__seterr(&err, FERRY_EIO, "cannot read /x/y") : 0;
  rc = ferry__manifest_share(MPI_COMM_WORLD, rank, rc, &m, SPEC, &err);
  CHECK(rc == FERRY_EIO && strcmp(err.msg, "cannot read /x/y") == 0,
        "rank 0 failed: %d %s", rc, err.msg);
  CHECK(same_everywhere(rc, &err, rank), "rank 0 failed: outcomes differ");
  ferry__manifest_free(&m);
}

static void case_one_rank_damaged(int rank, int size) {
  ferry__manifest m;
  ferry__err err = {0};
  void *buf = NULL;
  size_t len = 0;
  int rc = build(rank, &m, &err);
  if (rank == 0 && rc == 0)
    rc = ferry__manifest_pack(&m, &buf, &len);
  rc = ferry__bcast_blob_rc(MPI_COMM_WORLD, rank, 0, rc, &buf, &len,
                            "the manifest", &err);
  CHECK(rc == 0, "broadcast: %d %s", rc, err.msg);
  if (rc != 0) { /* agreed: every rank returns here */
    ferry__manifest_free(&m);
    return;
  }
  if (rank == size - 1) /* this rank's copy arrived damaged */
    ((unsigned char *)buf)[len / 2] ^= 0x40;
  rc = ferry__manifest_unpack_agree(MPI_COMM_WORLD, rank, buf, len, &m, &err);
  CHECK(rc == FERRY_EFORMAT && strstr(err.msg, "checksum mismatch") &&
            err.has_rank && err.rank == size - 1,
        "rank %d's copy damaged: %d %s (rank %d)", size - 1, rc, err.msg,
        err.has_rank ? err.rank : -1);
  CHECK(same_everywhere(rc, &err, rank), "one rank damaged: outcomes differ");
  free(buf);
  ferry__manifest_free(&m);
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  case_good(rank);
  case_named_twice(rank);
  case_root_failed(rank);
  case_one_rank_damaged(rank, size);
  int rc = ft_mpi_summary("test_manifest_share", MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
