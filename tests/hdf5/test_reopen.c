/* test_reopen.c - after a failed open, the process can still open and read
 * another dataset (tests/hdf5/reopen.sh runs it with every libferry
 * allocation of the first open failing in turn).  A failure path that
 * leaves a process-wide resource held -- the HDF5/netCDF library lock
 * taken by the hdf5 backend's io_open, returned from after a failed
 * calloc -- makes the second open block for ever: the script's timeout
 * then fails the test.
 *
 * Usage: test_reopen FIRST SECOND
 *   opens FIRST and reads one epoch (either may fail: the shim makes them),
 *   closes it, then opens SECOND and reads one epoch, which must succeed;
 *   prints "second: N samples" and exits 0, else 1.
 * Linked against libferry.la (public API only), so the shim sees the
 * allocations of libferry.so. */
#include <ferry.h>
#include <mpi.h>
#include <stdio.h>

static int epoch(const char *path, long long *served) {
  ferry_options *opts;
  ferry_loader *L = NULL;
  ferry_batch *b;
  *served = 0;
  if (ferry_options_create(&opts) != 0) {
    fprintf(stderr, "options for %s: out of memory\n", path);
    return FERRY_ENOMEM;
  }
  ferry_options_set(opts, "batch_size", "16");
  ferry_options_set(opts, "tail", "partial");
  int rc = ferry_open(MPI_COMM_WORLD, path, opts, &L);
  ferry_options_free(opts);
  if (rc != 0) {
    fprintf(stderr, "open %s: %s\n", path, ferry_last_error(NULL));
    return rc;
  }
  rc = ferry_set_epoch(L, 0);
  while (rc == 0 && (rc = ferry_next(L, &b)) == 0) {
    *served += b->size - b->num_padded;
    ferry_release(L, b);
  }
  if (rc == FERRY_END)
    rc = 0;
  if (rc != 0)
    fprintf(stderr, "read %s: %s\n", path, ferry_last_error(L));
  ferry_close(L);
  return rc;
}

int main(int argc, char **argv) {
  int provided;
  long long n;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (argc != 3) {
    fprintf(stderr, "usage: test_reopen FIRST SECOND\n");
    MPI_Finalize();
    return 2;
  }
  int first = epoch(argv[1], &n);
  printf("first: rc %d\n", first);
  int rc = epoch(argv[2], &n);
  if (rc == 0)
    printf("second: %lld samples\n", n);
  MPI_Finalize();
  return rc == 0 ? 0 : 1;
}
