/*
 * served.c - the one place that reads a served order out of the plan for
 * tools that study it (`ferry quality`, the chunk-mixing warning of `ferry
 * verify`): for rank r of W ranks in epoch e, the global sample index of
 * every slot, cut into batches.  The plan is a pure function of the chunks,
 * the options, the seed, the epoch, the world size and the rank, so one
 * process can ask it for every rank of any world size without MPI or I/O.
 * Keeping this a single small adapter means a change of the plan's
 * internals (a new shuffle mode, a plan kept as a window at a time) has
 * one function to update here and none in the measures.
 */
#include "config.h"
#include "core/options.h"
#include "plan/global.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

/* shuffle=global: the rank's serve order, window by window (the global
 * plan's tables), cut into batches of batch_size (the last one short). */
static int global_order(const ferry__chunk *pieces, int64_t npieces,
                        const int64_t *perm, const ferry__plan_params *pp,
                        double exchange, int rank, int64_t **samples,
                        int64_t **batch_start, int64_t *nbatches,
                        ferry__err *err) {
  ferry__global g;
  ferry__global_window win;
  memset(&g, 0, sizeof g);
  memset(&win, 0, sizeof win);
  int64_t *s = NULL, *b = NULL, n = 0, cap = 16;
  int rc = ferry__global_init(&g, pieces, npieces, perm, pp, exchange, err);
  if (!rc && !(s = malloc((size_t)cap * sizeof *s)))
    rc = ferry__oom(err, -1, (size_t)cap * sizeof *s, "the order of rank %d",
                    rank);
  for (int64_t w = 0; !rc && w < g.nwindows; w++) {
    rc = ferry__global_window_build(&g, rank, w, &win, err);
    if (!rc && n + win.nserve > cap) {
      int64_t nc = 2 * (n + win.nserve) + 16;
      int64_t *t = realloc(s, (size_t)nc * sizeof *s);
      if (!t)
        rc = ferry__oom(err, -1, (size_t)nc * sizeof *s, "the order of rank %d",
                        rank);
      else {
        s = t;
        cap = nc;
      }
    }
    for (int64_t j = 0; !rc && j < win.nserve; j++)
      s[n++] = win.serve_sample[j];
  }
  int64_t nb = g.num_batches, B = pp->batch_size;
  if (!rc && !(b = malloc((size_t)(nb + 1) * sizeof *b)))
    rc = ferry__oom(err, -1, (size_t)(nb + 1) * sizeof *b,
                    "the %lld batches of rank %d", (long long)nb, rank);
  for (int64_t i = 0; !rc && i <= nb; i++)
    b[i] = i * B < n ? i * B : n;
  ferry__global_window_free(&win);
  ferry__global_free(&g);
  if (rc) {
    free(s);
    free(b);
    return rc;
  }
  *samples = s;
  *batch_start = b;
  *nbatches = nb;
  return 0;
}

int ferry__plan_order(const ferry__chunk *chunks, int64_t nchunks,
                      const ferry__plan_params *pp, double exchange, int rank,
                      int64_t **samples, int64_t **batch_start,
                      int64_t *nbatches, ferry__err *err) {
  *samples = NULL;
  *batch_start = NULL;
  *nbatches = 0;
  ferry__chunk *pieces = NULL;
  int64_t npieces = 0, *perm = NULL;
  ferry__rank_plan plan;
  memset(&plan, 0, sizeof plan);
  int rc = ferry__plan_pieces(chunks, nchunks, pp, &pieces, &npieces);
  if (rc) /* the selection, then the pieces: at least a chunk each */
    ferry__oom(err, -1,
               (size_t)(nchunks ? nchunks : 1) *
                   (sizeof(int64_t) + sizeof *pieces),
               "the pieces of %lld chunks", (long long)nchunks);
  if (!rc) {
    perm = malloc((size_t)(npieces > 0 ? npieces : 1) * sizeof *perm);
    if (!perm)
      rc = ferry__oom(err, -1,
                      (size_t)(npieces > 0 ? npieces : 1) * sizeof *perm,
                      "the permutation of %lld pieces", (long long)npieces);
  }
  if (!rc && pp->shuffle == FERRY__SHUFFLE_GLOBAL) {
    ferry__plan_permutation(pp, npieces, perm);
    rc = global_order(pieces, npieces, perm, pp, exchange, rank, samples,
                      batch_start, nbatches, err);
    free(pieces);
    free(perm);
    return rc;
  }
  if (!rc) {
    ferry__pieces ps;
    ferry__pieces_wrap(&ps, pieces, npieces);
    ferry__plan_permutation(pp, npieces, perm);
    rc = ferry__plan_build(&ps, perm, pp, rank, &plan, err);
  }
  int64_t *s = NULL, *b = NULL;
  ferry__slot *slots = NULL;
  if (!rc && ferry__plan_slots(&plan, &slots))
    rc = ferry__oom(
        err, -1, (size_t)(plan.nslots ? plan.nslots : 1) * sizeof *slots,
        "the order of rank %d (%lld samples)", rank, (long long)plan.nslots);
  if (!rc) {
    s = malloc((size_t)(plan.nslots > 0 ? plan.nslots : 1) * sizeof *s);
    b = malloc((size_t)(plan.num_batches + 1) * sizeof *b);
    if (!s || !b)
      rc = ferry__oom(err, -1,
                      (size_t)(plan.nslots > 0 ? plan.nslots : 1) * sizeof *s +
                          (size_t)(plan.num_batches + 1) * sizeof *b,
                      "the order of rank %d (%lld samples)", rank,
                      (long long)plan.nslots);
  }
  if (!rc) {
    for (int64_t i = 0; i < plan.nslots; i++)
      s[i] = slots[i].sample;
    for (int64_t i = 0; i <= plan.num_batches; i++)
      b[i] = ferry__plan_batch_start(&plan, i);
    *samples = s;
    *batch_start = b;
    *nbatches = plan.num_batches;
    s = b = NULL;
  }
  free(s);
  free(b);
  free(slots);
  free(pieces);
  free(perm);
  ferry__rank_plan_free(&plan);
  return rc;
}
