/* The C example of README.md and docs/user-guide.md, built and run by
 * `make check` (tests/cli/example.sh runs it over 3 ranks).
 * Usage: mpirun -np 4 ./example DATASET */
#include <ferry.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  ferry_options *opts;
  ferry_options_create(&opts);
  ferry_options_set(opts, "batch_size", "32");
  ferry_options_set(opts, "seed", "42");
  ferry_options_set(opts, "tail", "partial"); /* every sample exactly once */
  ferry_options_from_env(opts);               /* FERRY_BATCH_SIZE=... wins */

  ferry_loader *loader;
  int rc =
      ferry_open(MPI_COMM_WORLD, argc > 1 ? argv[1] : "data", opts, &loader);
  ferry_options_free(opts);
  if (rc) { /* the same code and message on every rank */
    if (rank == 0)
      fprintf(stderr, "ferry_open: %s\n", ferry_last_error(NULL));
    MPI_Finalize();
    return 1;
  }

  long long seen = 0;
  for (int epoch = 0; epoch < 2 && rc >= 0; epoch++) {
    rc = ferry_set_epoch(loader, epoch);
    ferry_batch *batch;
    while (rc == 0 && (rc = ferry_next(loader, &batch)) == 0) {
      const ferry_tensor *x = &batch->vars[0]; /* e.g. "samples" */
      /* train_step(x->data, x->shape, batch->size) ... */
      seen += batch->size - batch->num_padded;
      (void)x;
      ferry_release(loader, batch);
    }
    if (rc == FERRY_END)
      rc = 0;
  }
  if (rc < 0 && rank == 0)
    fprintf(stderr, "ferry: %s\n", ferry_last_error(loader));

  long long total = 0;
  MPI_Reduce(&seen, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0 && rc == 0)
    printf("served %lld samples in 2 epochs of %lld\n", total,
           (long long)ferry_num_samples(loader));
  ferry_close(loader);
  MPI_Finalize();
  return rc < 0 ? 1 : 0;
}
