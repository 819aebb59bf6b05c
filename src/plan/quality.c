/*
 * quality.c - the one place that reads a served order out of the plan for
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
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

int ferry__plan_order(const ferry__chunk *chunks, int64_t nchunks,
                      const ferry__plan_params *pp, int rank, int64_t **samples,
                      int64_t **batch_start, int64_t *nbatches,
                      ferry__err *err) {
  *samples = NULL;
  *batch_start = NULL;
  *nbatches = 0;
  ferry__chunk *pieces = NULL;
  int64_t npieces = 0, *perm = NULL;
  ferry__rank_plan plan;
  memset(&plan, 0, sizeof plan);
  int rc = ferry__plan_pieces(chunks, nchunks, pp, &pieces, &npieces);
  if (!rc) {
    perm = malloc((size_t)(npieces > 0 ? npieces : 1) * sizeof *perm);
    rc = perm ? 0 : FERRY_ENOMEM;
  }
  if (rc)
    ferry__seterr(err, rc, "out of memory for the plan");
  if (!rc) {
    ferry__pieces ps;
    ferry__pieces_wrap(&ps, pieces, npieces);
    ferry__plan_permutation(pp, npieces, perm);
    rc = ferry__plan_build(&ps, perm, pp, rank, &plan, err);
  }
  int64_t *s = NULL, *b = NULL;
  ferry__slot *slots = NULL;
  if (!rc && ferry__plan_slots(&plan, &slots))
    rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory for the order");
  if (!rc) {
    s = malloc((size_t)(plan.nslots > 0 ? plan.nslots : 1) * sizeof *s);
    b = malloc((size_t)(plan.num_batches + 1) * sizeof *b);
    if (!s || !b)
      rc = ferry__seterr(err, FERRY_ENOMEM, "out of memory for the order");
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
