/*
 * test_mix_errors.c - a bad mix fails the same way on every rank: for each
 * dataset string given, ferry_open on MPI_COMM_WORLD must fail on every
 * rank with the same code and the same message (compared across ranks
 * here; the tool prints only rank 0's), holding the text given after the
 * dataset.  Usage: test_mix_errors DATASET TEXT [DATASET TEXT]...  Run by
 * tests/sampling/mix.sh on 1 and 3 ranks.
 */
#include "config.h"
#include "ferry.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FERRY_TEST_MPI 1
#include "../ferry_test.h"

enum { MSG = 1024 };

static void one(const char *dataset, const char *text, int rank, int size) {
  ferry_loader *L = NULL;
  char mine[MSG], *all = NULL;
  int rc = ferry_open(MPI_COMM_WORLD, dataset, NULL, &L);
  memset(mine, 0, sizeof mine);
  snprintf(mine, sizeof mine, "%d %s", rc, rc ? ferry_last_error(NULL) : "");
  if (L)
    ferry_close(L);
  if (rank == 0 && !(all = malloc((size_t)size * MSG)))
    exit(99);
  MPI_Gather(mine, MSG, MPI_CHAR, all, MSG, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0)
    return;
  CHECK(rc < 0, "%s: ferry_open succeeded", dataset);
  CHECK(strstr(mine, text) != NULL, "%s: message '%s' lacks '%s'", dataset,
        mine, text);
  for (int r = 1; r < size; r++)
    CHECK(strcmp(all + (size_t)r * MSG, mine) == 0,
          "%s: rank %d says '%s', rank 0 '%s'", dataset, r,
          all + (size_t)r * MSG, mine);
  printf("ok: %d ranks: %s\n", size, mine);
  free(all);
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  for (int i = 1; i + 1 < argc; i += 2)
    one(argv[i], argv[i + 1], rank, size);
  int st = ft_mpi_summary("test_mix_errors", MPI_COMM_WORLD);
  MPI_Finalize();
  return st;
}
