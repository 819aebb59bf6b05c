/*
 * plan_sim.c - one rank's plan computed alone, as every rank computes its
 * own (issue 12): a dataset of N samples in one part (no file: the plan is
 * a pure function of the sample counts), chunk_samples C, WORLD simulated
 * ranks, the plan of rank R with ferry's defaults (batch 64, shuffle=chunks,
 * shuffle_buffer 4, contiguous, drop_last).  It times the steps every rank
 * takes at ferry_set_epoch -- the pieces, the permutation, the rank's plan
 * -- and then walks the rank's whole epoch window by window, as the
 * pipeline does (each window's sample order made, checksummed and freed),
 * and prints the peak RSS, the plan's bytes and the checksum.  Nothing here
 * is O(samples) in memory.
 *
 * With OLD_WORLD and SERVED, the plan is instead that of an elastic resume
 * (ferry__plan_resume, what ferry_state_load computes): the epoch started
 * on OLD_WORLD ranks, each served SERVED batches, and the rest is dealt
 * over WORLD ranks.
 *
 * usage: plan_sim N C WORLD R [OLD_WORLD SERVED]
 *        (built with: make tests/bench/plan_sim)
 */
#include "config.h"
#include "core/options.h"
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 5 && argc != 7) {
    fprintf(stderr,
            "usage: plan_sim N CHUNK_SAMPLES WORLD RANK [OLD_WORLD SERVED]\n");
    return 2;
  }
  int64_t N = strtoll(argv[1], NULL, 10), C = strtoll(argv[2], NULL, 10);
  int world = atoi(argv[3]), rank = atoi(argv[4]);
  ferry__resume_step step = {argc == 7 ? atoi(argv[5]) : 0,
                             argc == 7 ? strtoll(argv[6], NULL, 10) : 0, NULL,
                             NULL, NULL};
  if (N < 1 || C < 1 || world < 1 || rank < 0 || rank >= world ||
      (argc == 7 && (step.world_size < 1 || step.batches < 0))) {
    fprintf(stderr, "plan_sim: bad arguments\n");
    return 2;
  }
  ferry__part part;
  memset(&part, 0, sizeof part);
  part.num_samples = N;
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.nparts = 1;
  m.parts = &part;
  m.num_samples = N;
  ferry__plan_params pp = {64, 0,    FERRY__SHUFFLE_CHUNKS, 0, 4, 0, 0, 0, 1.0,
                           0,  world};
  double t0 = now();
  ferry__chunk_index ci;
  ferry__pieces ps;
  if (ferry__chunk_index_make(&m, C, &ci) ||
      ferry__pieces_make(&ci, &pp, &ps)) {
    fprintf(stderr, "plan_sim: out of memory\n");
    return 1;
  }
  int64_t *perm = malloc((size_t)ps.n * sizeof *perm);
  if (!perm) {
    fprintf(stderr, "plan_sim: out of memory for the permutation\n");
    return 1;
  }
  ferry__plan_permutation(&pp, ps.n, perm);
  double t1 = now();
  ferry__rank_plan p;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = argc == 7 ? ferry__plan_resume(&ps, perm, &pp, &step, 1, rank, &p,
                                          NULL, &err)
                     : ferry__plan_build(&ps, perm, &pp, rank, &p, &err);
  if (rc) {
    fprintf(stderr, "plan_sim: %s\n", err.msg);
    return 1;
  }
  double t2 = now();
  uint64_t sum = 0;
  if (ferry__rank_plan_checksum(&p, &sum)) {
    fprintf(stderr, "plan_sim: out of memory for a window\n");
    return 1;
  }
  double t3 = now();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (argc == 7)
    printf("plan_sim: resumed after %lld batches on %d ranks\n",
           (long long)step.batches, step.world_size);
  printf("plan_sim: N %lld, %lld chunks, rank %d of %d: %lld batches, %lld "
         "samples, %lld extents, %lld windows (largest %lld samples); "
         "permutation %.3f s, rank plan %.3f s, every window's order %.3f s; "
         "plan %zu bytes + permutation %zu bytes; peak RSS %.1f MiB; "
         "checksum %016llx\n",
         (long long)N, (long long)ci.nchunks, rank, world,
         (long long)p.num_batches, (long long)p.nslots, (long long)p.nextents,
         (long long)p.nwindows, (long long)ferry__plan_window_max(&p), t1 - t0,
         t2 - t1, t3 - t2, ferry__plan_bytes(&p), (size_t)ps.n * sizeof *perm,
         (double)ru.ru_maxrss / 1024.0, (unsigned long long)sum);
  ferry__rank_plan_free(&p);
  free(perm);
  ferry__pieces_free(&ps);
  ferry__chunk_index_free(&ci);
  return 0;
}
