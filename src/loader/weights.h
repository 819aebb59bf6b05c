/*
 * loader/weights.h - the per-sample weights that weighted and class-balanced
 * sampling draw by (the `weights`, `balance` and `balance_shares` options;
 * docs/sampling.md, "Weights and labels"): read once at open on rank 0,
 * checked, broadcast as float32 to every rank.
 */
#ifndef FERRY_WEIGHTS_H
#define FERRY_WEIGHTS_H

#include "core/manifest.h"
#include "core/options.h"

#include <mpi.h>

/* Most classes `balance` accepts. */
#define FERRY__MAX_CLASSES ((int64_t)1 << 24)

typedef struct ferry__class_share {
  int64_t label; /* the label value */
  int64_t count; /* samples holding it */
  double share;  /* requested share of the draws, normalised: sum 1 */
} ferry__class_share;

typedef struct ferry__weights {
  int64_t n;        /* samples (= m->num_samples) */
  float *w;         /* [n], finite, >= 0; NULL when no sampling option is set */
  double total;     /* sum of w (double accumulation) */
  int64_t nonzero;  /* samples with w > 0 (>= 1, else an error) */
  int64_t nclasses; /* balance: classes present; 0 otherwise */
  ferry__class_share *classes; /* [nclasses] sorted by label, or NULL */
  uint64_t hash;  /* FNV-1a (util/util.h's ferry__fnv1a) of n, w's bytes and
                   * the classes: the same on every rank, recorded in
                   * checkpoints */
  char what[256]; /* one line for ferry info and messages, e.g. "weights:
                   * variable 'w' of data/ (float32)", "weights: file w.npy
                   * (float64)", "balance: labels 'y' (12 classes, equal
                   * shares)" */
} ferry__weights;

/* Collective over comm (every rank calls it with the same m and opts).  No
 * weights/balance option set: returns 0 with *out zeroed.  Rank 0 reads and
 * checks; the weights (float32, broadcast in pieces of at most 2^30 bytes)
 * or rank 0's error code and message are broadcast, so every rank returns
 * the same code with the same message.  On failure *out is zeroed. */
int ferry__weights_load(const ferry__manifest *m, const ferry_options *opts,
                        MPI_Comm comm, int rank, ferry__weights *out,
                        ferry__err *err);
void ferry__weights_free(ferry__weights *w);
/* For balance: the share each class gets of the draws and the weight of
 * one of its samples is share/count; exposed for tests. */
float ferry__class_weight(const ferry__class_share *c);

#endif /* FERRY_WEIGHTS_H */
