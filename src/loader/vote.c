/*
 * vote.c - the agreement every collective call of a loader starts with.
 *
 * Why: ferry_next is collective (it certifies batches with one all-reduce
 * per window), and so are ferry_close, ferry_set_epoch and the state calls.
 * A rank that leaves the loop early (`break` after 10 batches, then
 * ferry_close) used to return from ferry_close at once while the others
 * waited forever in ferry_next's all-reduce.  Now each of these calls
 * begins with the same small non-blocking all-reduce, in which every rank
 * says which call it is in.  Ranks in different calls find it out together
 * and all fail with FERRY_EPEER naming the rank that left, its call and
 * its batch; ranks in the same call go on as before (ferry_next's vote IS
 * its certification, so the common path costs no extra collective).  The
 * wait is bounded by the option collective_timeout, so a rank that never
 * arrives (killed, stuck) makes the others fail with a message instead of
 * waiting forever.
 *
 * One MPI_Iallreduce(MPI_MIN) of FERRY__VOTE_N int64 carries:
 *   [0] (op * size + rank) << 34 | batches consumed: the lowest call (close
 *       < set_epoch < state_save < state_load < next), its lowest rank and
 *       that rank's batch
 *   [1] -op: the highest call
 *   [2] ferry_next: (through + 1) * size + rank, the certification
 *   [3] -1 when a checkpoint was asked on some rank
 *   [4] -(rounds of collective I/O this rank may have entered): after a
 *       mismatch every rank's I/O thread finishes the same rounds, so no
 *       collective read is left waiting for a rank that stopped.
 */
#include "config.h"
#include "loader/loader.h"

#include <stdio.h>
#include <string.h>

#define BATCH_BITS 34
#define BATCH_MASK ((INT64_C(1) << BATCH_BITS) - 1)
/* Ranks below this pack their batch beside (op, rank) without overflow. */
#define PACK_MAX_SIZE (1 << 24)

static const char *op_name(int64_t op) {
  switch (op) {
  case FERRY__VOTE_CLOSE: return "ferry_close";
  case FERRY__VOTE_SET_EPOCH: return "ferry_set_epoch";
  case FERRY__VOTE_STATE_SAVE: return "ferry_state_save";
  case FERRY__VOTE_STATE_LOAD: return "ferry_state_load";
  case FERRY__VOTE_NEXT: return "ferry_next";
  default: return "a collective call";
  }
}

/* The rounds of collective I/O this rank's I/O thread may enter without
 * the consumer moving: those admitted by the batches consumed so far. */
static int64_t rounds_admitted(const ferry_loader *L, epoch_state *ep) {
  if (!ep || (L->opts->io != FERRY__IO_COLLECTIVE && !ep->glob) ||
      !ep->round_admit)
    return 0;
  int64_t la = L->opts->prefetch, a = 0;
  pthread_mutex_lock(&ep->mu);
  while (a < ep->nrounds && ep->round_admit[a] <= ep->consumed + la)
    a++;
  if (a < ep->rounds_started)
    a = ep->rounds_started;
  pthread_mutex_unlock(&ep->mu);
  return a;
}

/* Ranks are in different calls: stop the epoch the same way on every rank
 * (the I/O threads finish the first `rounds` collective rounds). */
static void halt_epoch(ferry_loader *L, int64_t rounds) {
  epoch_state *ep = L->ep;
  if (!ep)
    return;
  pthread_mutex_lock(&ep->mu);
  ep->stop = 1;
  ep->round_target = rounds;
  ep->halted = 1;
  pthread_cond_broadcast(&ep->cv_io);
  pthread_cond_broadcast(&ep->cv_work);
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_mutex_unlock(&ep->mu);
  ep->failed = FERRY_EPEER;
}

/* The message of a mismatch, made from agreed values only, so every rank
 * writes the same words. */
static int mismatch(ferry_loader *L, int root, int64_t lo, int64_t hi,
                    int64_t batch, ferry__err *err) {
  epoch_state *ep = L->ep;
  char where[160] = "", at[64] = "";
  if (ep && batch >= 0)
    snprintf(where, sizeof where, " after %lld batch%s of epoch %lld",
             (long long)batch, batch == 1 ? "" : "es", (long long)ep->epoch);
  if (ep && hi == FERRY__VOTE_NEXT)
    snprintf(at, sizeof at, " (for batch %lld)",
             (long long)(ep->certified + 1));
  return ferry__seterr_on(
      err, root, FERRY_EPEER,
      "called %s%s while other ranks called %s%s: every rank must make the "
      "same collective calls on a loader; to leave an epoch early, leave it "
      "at the same batch on every rank (then ferry_set_epoch or ferry_close "
      "on every rank)",
      op_name(lo), where, op_name(hi), at);
}

/* Post the vote (MPI's buffers are L->vote_buf: one vote at a time). */
static int vote_post(ferry_loader *L, int op, int64_t through, int asked,
                     MPI_Request *req, ferry__err *err) {
  epoch_state *ep = L->ep;
  int64_t *in = L->vote_buf, *res = L->vote_buf + FERRY__VOTE_N;
  int64_t who = (int64_t)op * L->size + L->rank;
  int64_t batch = ep ? ep->consumed : 0;
  if (batch > BATCH_MASK)
    batch = BATCH_MASK;
  int pack = L->size < PACK_MAX_SIZE;
  in[0] = pack ? (who << BATCH_BITS) | batch : who;
  in[1] = -(int64_t)op;
  in[2] =
      op == FERRY__VOTE_NEXT ? (through + 1) * L->size + L->rank : INT64_MAX;
  in[3] = asked ? -1 : 0;
  in[4] = -rounds_admitted(L, ep);
  if (MPI_Iallreduce(in, res, FERRY__VOTE_N, MPI_INT64_T, MPI_MIN, L->comm,
                     req) != MPI_SUCCESS)
    return ferry__seterr_on(err, L->rank, FERRY_EMPI,
                            "MPI_Iallreduce failed in %s", op_name(op));
  return 0;
}

/* Wait for a posted vote (bounded by collective_timeout) and read it. */
static int vote_finish(ferry_loader *L, int op, MPI_Request *req,
                       ferry__vote_out *out, ferry__err *err) {
  epoch_state *ep = L->ep;
  int64_t *res = L->vote_buf + FERRY__VOTE_N;
  int pack = L->size < PACK_MAX_SIZE;
  int w = ferry__coll_wait(req, (double)L->opts->collective_timeout);
  if (w < 0)
    return ferry__seterr_on(err, L->rank, FERRY_EMPI, "MPI_Test failed in %s",
                            op_name(op));
  if (w > 0) {
    L->peer_rc = FERRY_EPEER;
    L->vote_pending = 1;
    if (ep)
      ep->failed = FERRY_EPEER;
    char what[96] = "";
    if (ep)
      snprintf(what, sizeof what, " (epoch %lld, batch %lld)",
               (long long)ep->epoch,
               (long long)(op == FERRY__VOTE_NEXT ? ep->certified + 1
                                                  : ep->consumed));
    return ferry__seterr_on(
        err, L->rank, FERRY_EPEER,
        "no answer from the other %d rank%s within %lld s "
        "(collective_timeout) in %s%s: some rank stopped calling ferry on "
        "this loader (stuck, killed, or left the loop without ferry_close); "
        "the loader can only be closed now",
        L->size - 1, L->size == 2 ? "" : "s",
        (long long)L->opts->collective_timeout, op_name(op), what);
  }
  int64_t lo_who = pack ? res[0] >> BATCH_BITS : res[0];
  int64_t lo = lo_who / L->size, hi = -res[1];
  if (lo != hi) {
    L->peer_rc = FERRY_EPEER;
    halt_epoch(L, -res[4]);
    return mismatch(L, (int)(lo_who % L->size), lo, hi,
                    pack ? (res[0] & BATCH_MASK) : -1, err);
  }
  if (out && op == FERRY__VOTE_NEXT) {
    out->through = res[2] / L->size - 1;
    out->rank = (int)(res[2] % L->size);
    out->asked = res[3] < 0;
  }
  return 0;
}

int ferry__vote_early(ferry_loader *L, int64_t through, int asked,
                      ferry__err *err) {
  int rc = vote_post(L, FERRY__VOTE_NEXT, through, asked, &L->early_req, err);
  if (!rc)
    L->early_pending = 1;
  return rc;
}

int ferry__vote_early_finish(ferry_loader *L, ferry__vote_out *out,
                             ferry__err *err) {
  L->early_pending = 0;
  return vote_finish(L, FERRY__VOTE_NEXT, &L->early_req, out, err);
}

int ferry__vote(ferry_loader *L, int op, int64_t through, int asked,
                ferry__vote_out *out, ferry__err *err) {
  /* A ferry_next vote posted early is the one every rank made next: it is
   * finished first (another call's vote pairs with the ranks' next ones) */
  if (L->early_pending) {
    ferry__vote_out skip;
    int rc = ferry__vote_early_finish(L, &skip, err);
    if (rc)
      return rc;
    if (skip.asked)
      L->ckpt_agreed = 1;
    /* what it certified is agreed: the ranks' messages name the same batch */
    if (L->ep && skip.through > L->ep->certified)
      L->ep->certified = skip.through;
  }
  MPI_Request req;
  int rc = vote_post(L, op, through, asked, &req, err);
  return rc ? rc : vote_finish(L, op, &req, out, err);
}

int ferry__peer_gone(ferry_loader *L, const char *call, ferry__err *err) {
  return ferry__seterr_on(err, L->rank, FERRY_EPEER,
                          "%s: an earlier collective call on this loader "
                          "found that another rank left it or stopped "
                          "answering (see that call's error); the loader "
                          "can only be closed now",
                          call);
}
