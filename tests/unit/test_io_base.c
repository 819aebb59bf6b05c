/*
 * test_io_base.c - the I/O base every file backend's io_open starts from
 * (backends/io_base.c; issue 24, "one io_open base"): the refusal of
 * io=collective keeps each backend's message (Parquet's, through its
 * vtable), the base is filled from io_params with the handle cache's
 * context the whole state, the hints exist only when asked for, close
 * closes every cached handle, and the one-MPI_File handle checks the size
 * rank 0 saw.
 */
#include "config.h"
#include "backends/toolkit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

/* A backend's state: the base first, then its own members. */
typedef struct test_io {
  ferry__io_base b;
  char tail[64];
} test_io;

static int opens, closes;
static void *seen_ctx;

static int fake_open(void *ctx, int64_t part, int var, void **handle,
                     ferry__err *err) {
  (void)part;
  (void)var;
  (void)err;
  seen_ctx = ctx;
  opens++;
  *handle = malloc(1);
  return *handle ? 0 : FERRY_ENOMEM;
}

static void fake_close(void *ctx, void *handle) {
  (void)ctx;
  closes++;
  free(handle);
}

static ferry__io_params params(int collective, int rank) {
  ferry__io_params p;
  memset(&p, 0, sizeof p);
  p.comm = MPI_COMM_SELF;
  p.rank = rank;
  p.collective = collective;
  p.max_open_files = 2;
  return p;
}

/* The refusal a backend without collective reads gives: its own words,
 * the rank appended, nothing allocated. */
static void refusal(const ferry__manifest *m) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(test_io),
      .open = fake_open,
      .close = fake_close,
      .no_collective = "the test backend has no collective reads",
  };
  ferry__io_params p = params(1, 3);
  ferry__err err = {0};
  void *io = &err; /* must come back NULL */
  int rc = ferry__io_base_open(&spec, m, &p, &io, &err);
  CHECK(rc == FERRY_ENOTSUP, "io=collective refused: rc %d", rc);
  CHECK(io == NULL, "a refused open leaves *out NULL");
  CHECK(strcmp(err.msg, "the test backend has no collective reads (rank 3)") ==
            0,
        "message: %s", err.msg);
}

/* A state that cannot be allocated: FERRY_ENOMEM, the size and the words
 * every backend used ("the I/O state (dataset D, rank R)"), nothing left
 * (tests/loader/oom.sh's stride may step over this allocation). */
static void no_memory(const ferry__manifest *m) {
  static const ferry__io_base_spec spec = {
      .size = SIZE_MAX / 2,
      .open = fake_open,
      .close = fake_close,
      .hints = 1,
  };
  ferry__io_params p = params(0, 4);
  ferry__err err = {0};
  void *io = &err;
  int rc = ferry__io_base_open(&spec, m, &p, &io, &err);
  char want[200];
  snprintf(want, sizeof want,
           "out of memory: %zu bytes for the I/O state (dataset test.dataset, "
           "rank 4)",
           (size_t)(SIZE_MAX / 2));
  CHECK(rc == FERRY_ENOMEM && io == NULL, "no memory: rc %d", rc);
  CHECK(strstr(err.msg, want) != NULL, "message: %s", err.msg);
}

/* Parquet's vtable, through the base: the message it gave before. */
static void parquet_refusal(const ferry__manifest *m) {
  const ferry__backend *be = NULL;
  for (int i = 0; ferry__backends[i]; i++)
    if (strcmp(ferry__backends[i]->name, "parquet") == 0)
      be = ferry__backends[i];
  if (!be) {
    printf("note: no parquet backend in this build: its refusal not checked\n");
    return;
  }
  ferry__io_params p = params(1, 0);
  ferry__err err = {0};
  ferry__io *io = NULL;
  int rc = be->io_open(&io, m, &p, &err);
  CHECK(rc == FERRY_ENOTSUP && io == NULL, "parquet io=collective: rc %d", rc);
  CHECK(strcmp(err.msg, "the parquet backend reads column chunks "
                        "independently: io=collective is not supported "
                        "(rank 0)") == 0,
        "message: %s", err.msg);
}

/* Filled from io_params; the cache's context is the whole state; close
 * closes every handle and frees the hints. */
static void filled(const ferry__manifest *m, int hints) {
  ferry__io_base_spec spec = {
      .size = sizeof(test_io),
      .open = fake_open,
      .close = fake_close,
      .hints = hints,
  };
  ferry__io_params p = params(0, 5);
  ferry__err err = {0};
  void *out = NULL;
  int rc = ferry__io_base_open(&spec, m, &p, &out, &err);
  CHECK(rc == 0 && out != NULL, "open: %d %s", rc, err.msg);
  if (!out)
    return;
  test_io *io = out;
  CHECK(io->b.m == m && io->b.rank == 5 && io->b.collective == 0 &&
            io->b.comm == MPI_COMM_SELF,
        "the base holds the manifest, rank, mode and communicator");
  CHECK((io->b.info != MPI_INFO_NULL) == hints, "hints %d: info %s", hints,
        io->b.info != MPI_INFO_NULL ? "created" : "none");
  CHECK(io->tail[0] == 0 && io->tail[63] == 0, "the state is zeroed");
  opens = closes = 0;
  void *h = NULL;
  for (int part = 0; part < 3; part++) /* the third evicts the first */
    rc |= ferry__handle_get(&io->b.files, part, 0, 5, &h, &err);
  CHECK(rc == 0 && opens == 3 && closes == 1,
        "max_open_files 2: 3 opens, 1 eviction (rc %d, %d, %d)", rc, opens,
        closes);
  CHECK(seen_ctx == out, "the cache's context is the whole state");
  ferry__io_base_close(&io->b);
  CHECK(closes == 3, "close closes the 2 cached handles (%d closes)", closes);
  CHECK(io->b.info == MPI_INFO_NULL, "close frees the hints");
  free(io);
}

/* The one-MPI_File handle: the size rank 0 saw is checked, by name. */
static void mpi_handle(const ferry__manifest *m, const char *path) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(test_io),
      .open = fake_open,
      .close = ferry__io_base_mpi_close,
      .hints = 1,
  };
  ferry__io_params p = params(0, 0);
  ferry__err err = {0};
  void *out = NULL;
  if (ferry__io_base_open(&spec, m, &p, &out, &err) != 0) {
    CHECK(0, "open: %s", err.msg);
    return;
  }
  test_io *io = out;
  void *h = NULL;
  int rc = ferry__io_base_mpi_open(&io->b, path, "x", 16, &h, &err);
  CHECK(rc == 0 && h != NULL, "a 16-byte file opens: %d %s", rc, err.msg);
  if (rc == 0)
    ferry__io_base_mpi_close(io, h);
  h = NULL;
  rc = ferry__io_base_mpi_open(&io->b, path, "x", 17, &h, &err);
  CHECK(rc == FERRY_EMISMATCH && h == NULL, "17 bytes expected: rc %d", rc);
  CHECK(strstr(err.msg, path) && strstr(err.msg, "variable x") &&
            strstr(err.msg, "when rank 0 scanned it"),
        "message: %s", err.msg);
  ferry__io_base_close(&io->b);
  free(io);
}

int main(int argc, char **argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "SKIP: MPI_Init failed\n");
    return 77;
  }
  const char *scratch = getenv("FERRY_TEST_TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/test_io_base-XXXXXX",
           scratch && *scratch ? scratch : "/tmp");
  int fd = mkstemp(path);
  REQUIRE(fd >= 0 && write(fd, "0123456789abcdef", 16) == 16,
          "a scratch file in %s", path);
  close(fd);
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.spec = (char *)"test.dataset";
  refusal(&m);
  no_memory(&m);
  parquet_refusal(&m);
  filled(&m, 0);
  filled(&m, 1);
  mpi_handle(&m, path);
  unlink(path);
  int rc = ft_summary("test_io_base");
  MPI_Finalize();
  return rc;
}
