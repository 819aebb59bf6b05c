/*
 * next.c - ferry_next and ferry_release: hand out batch b in plan order and
 * certify it with the other ranks (one all-reduce per window of batches),
 * so an error anywhere is the same error everywhere at the same batch.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "loader/loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_status(epoch_state *ep, int64_t b, int room, int64_t *through,
                         int *rc, ferry__err *err);
static int held_check(epoch_state *ep, int64_t b, int room, ferry__err *err);

/*
 * What this rank knows about batch b, with ep->mu held: 1 when decided, with
 * *through the last batch it can vouch for (>= b), or *through = b - 1 and
 * *rc, *err the failure at b; 0 when it must wait.  Without a transform a
 * batch is good once its data is loaded, so the I/O thread's progress (a
 * window ahead of the consumer) certifies many batches at once.  room: the
 * consumer is at b, so a slot the caller still holds with an earlier batch
 * is swapped out of the ring (slots.c); else (a vote posted early) b is
 * not vouched for while it is held.
 */
static int local_status(epoch_state *ep, int64_t b, int room, int64_t *through,
                        int *rc, ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  if (L->gpu)
    return device_status(ep, b, room, through, rc, err);
  while (ep->io_through + 1 < p->num_batches &&
         ferry__plan_batch_need(p, ep->io_through + 1) <= ep->loaded)
    ep->io_through++;
  *rc = 0;
  *through = b - 1;
  if ((*rc = held_check(ep, b, room, err)) != 0 ||
      L->ring[b % L->nring]->state == SLOT_HELD)
    return 1;
  const ring_slot *s = L->ring[b % L->nring];
  if (L->opts->transform) {
    if (s->state != SLOT_READY || s->bidx != b) {
      if (ep->io_rc && ferry__plan_batch_need(p, b) > ep->loaded) {
        *rc = ep->io_rc;
        *err = ep->io_err;
        return 1;
      }
      return 0;
    }
    for (int64_t k = 0; k < L->nring; k++) {
      ring_slot *t = L->ring[(b + k) % L->nring];
      if (t->state != SLOT_READY || t->bidx != b + k)
        break;
      if (t->rc) {
        if (k == 0) {
          *rc = t->rc;
          *err = t->err;
        }
        break;
      }
      *through = b + k;
    }
    if (*through > ep->io_through)
      *through = ep->io_through;
    return 1;
  }
  if (ep->io_through >= b) {
    *through = ep->io_through;
    return 1;
  }
  if (ep->io_rc) {
    *rc = ep->io_rc;
    *err = ep->io_err;
    return 1;
  }
  return 0;
}

/* Whether a batch handed out earlier and still held by the caller keeps
 * batch b from its slot (the host slot of b; with device=cuda the device
 * slot of b, or with keep_host the device slot paired with b's host slot).
 * With room (the consumer is at b) such slots are swapped out of the rings
 * (slots.c), and the error is the bound of held_memory reached; without,
 * 0 (the caller may release it before it reaches b).  ep->mu held. */
static int held_check(epoch_state *ep, int64_t b, int room, ferry__err *err) {
  ferry_loader *L = ep->L;
  const ring_slot *s = L->ring[b % L->nring];
  int held;
  if (L->gpu) {
    const ferry__dslot *d = L->dring[b % L->ndring];
    held = (d->state == SLOT_HELD && d->bidx < b) ||
           (s->state == SLOT_PAIRED && s->bidx != b);
  } else {
    held = s->state == SLOT_HELD && s->bidx < b;
  }
  if (!held || !room)
    return 0;
  return ferry__held_make_room(ep, b, err);
}

/* local_status for device delivery: a copy can fail, so a batch is vouched
 * for once it is on the device (or its copy failed), as with a transform. */
static int device_status(epoch_state *ep, int64_t b, int room, int64_t *through,
                         int *rc, ferry__err *err) {
  ferry_loader *L = ep->L;
  const ferry__rank_plan *p = &ep->plan;
  *rc = 0;
  *through = b - 1;
  if ((*rc = held_check(ep, b, room, err)) != 0 ||
      L->dring[b % L->ndring]->state == SLOT_HELD)
    return 1;
  ferry__dslot *d = L->dring[b % L->ndring];
  if (d->state != SLOT_READY || d->bidx != b) {
    if (ep->io_rc && ferry__plan_batch_need(p, b) > ep->loaded) {
      *rc = ep->io_rc;
      *err = ep->io_err;
      return 1;
    }
    return 0;
  }
  for (int64_t k = 0; k < L->ndring && b + k < p->num_batches; k++) {
    ferry__dslot *t = L->dring[(b + k) % L->ndring];
    if (t->state != SLOT_READY || t->bidx != b + k)
      break;
    if (t->rc) {
      if (k == 0) {
        *rc = t->rc;
        *err = t->err;
      }
      break;
    }
    *through = b + k;
  }
  return 1;
}

/* A framework (Lightning, for one) may install its own handler for the
 * checkpoint signal after ferry_open: the signal then never reaches ferry
 * and the job runs into its time limit.  Checked at each certification;
 * rank 0 says it once per loader, with the way out. */
static void warn_if_replaced(ferry_loader *L) {
  if (!L->ckpt_sig || L->ckpt_warned || ferry__signal_ours(L->ckpt_sig))
    return;
  L->ckpt_warned = 1;
  if (L->rank == 0)
    fprintf(stderr,
            "ferry: warning: another handler replaced ferry's for signal %d "
            "(checkpoint_signal) after ferry_open: the signal no longer "
            "reaches ferry; have the framework call "
            "ferry_request_checkpoint (Python: loader.request_checkpoint()) "
            "when it gets the signal\n",
            L->ckpt_sig);
}

/* With a checkpoint signal, certify no more than about a quarter of a
 * second of batches at a time from batch b, so a signal is agreed on soon
 * after it arrives; the minimum over ranks keeps the decision common. */
static int64_t cap_through(ferry_loader *L, epoch_state *ep, int64_t b,
                           int64_t through) {
  if (L->ckpt_sig && through > b) {
    double dt = ferry__now() - ep->cert_time;
    int64_t done = b - ep->cert_batch, ahead = 0;
    if (b > 0 && dt > 0 && done > 0)
      ahead = (int64_t)(0.25 * (double)done / dt);
    if (through > b + ahead)
      through = b + ahead;
  }
  return through;
}

/* A vote's result for batch b (agreed values only, so every rank decides
 * alike): 1 when it certifies b (and maybe more), 0 when some rank could
 * not vouch for b.  When certified batches remain, the next vote is posted
 * early, three quarters of the way through them (ep->early_at): by the time a
 * rank needs it, the other ranks have usually posted theirs, so ranks no longer
 * meet at every window.  Not with collective rounds (io=collective,
 * shuffle=global): a vote carries the rounds a rank may have entered, which
 * must be current when the ranks disagree. */
static int certified_by(ferry_loader *L, epoch_state *ep, int64_t b,
                        const ferry__vote_out *out) {
  if (out->asked)
    L->ckpt_agreed = 1;
  if (out->through < b)
    return 0;
  ep->cert_time = ferry__now();
  ep->cert_batch = b;
  ep->certified = out->through;
  ep->early_at = -1;
  if (!ep->round_admit && ep->certified - b >= 2 &&
      ep->certified + 1 < ep->plan.num_batches)
    ep->early_at = b + 3 * (ep->certified - b + 1) / 4;
  return 1;
}

/* At batch ep->early_at (ferry_next, b certified): post the vote for the
 * batches after ep->certified with what this rank can vouch for now,
 * without waiting. */
static int vote_early(ferry_loader *L, epoch_state *ep, ferry__err *err) {
  int64_t t = ep->certified + 1, through;
  int rc = 0;
  ferry__err lerr = {0};
  pthread_mutex_lock(&ep->mu);
  if (!local_status(ep, t, 0, &through, &rc, &lerr))
    through = t - 1;
  pthread_mutex_unlock(&ep->mu);
  if (rc) /* a failure is reported by the vote at t, made in full */
    through = t - 1;
  int asked = L->ckpt_asked || (L->ckpt_sig && ferry__signal_pending());
  return ferry__vote_early(L, cap_through(L, ep, t, through), asked, err);
}

/* Agree how far every rank can vouch for: the lowest local "through" and
 * its rank.  If some rank cannot vouch for b it failed there, and its error
 * goes to every rank.  The all-reduce is the loader's vote (vote.c): it
 * also carries the checkpoint flag, and finds a rank that left the loop
 * (ferry_close) or stopped answering.  COLLECTIVE over the loader's
 * communicator. */
static int certify(ferry_loader *L, epoch_state *ep, int64_t b, int64_t through,
                   int rc, ferry__err *err) {
  int asked = L->ckpt_asked || (L->ckpt_sig && ferry__signal_pending());
  warn_if_replaced(L);
  ferry__vote_out out;
  ferry__err verr = {0};
  int vrc = ferry__vote(L, FERRY__VOTE_NEXT, through, asked, &out, &verr);
  if (vrc) {
    *err = verr;
    return vrc;
  }
  if (certified_by(L, ep, b, &out))
    return 0;
  /* out.rank failed at b: it broadcasts its code and message. */
  return ferry__agree_share(L->comm, L->rank, out.rank, rc, err);
}

static void count_batch(ferry_loader *L, const ferry_batch *batch,
                        double waited) {
  pthread_mutex_lock(&L->stats_mu);
  L->stats.batches++;
  L->stats.samples += batch->size;
  size_t bytes = (size_t)batch->size * L->row_total;
  if (L->ragged || L->pack_comp) { /* the values served, not rows of
                                    * row_total (the read rows' bytes) */
    bytes = 0;
    for (int v = 0; v < batch->nvars; v++)
      bytes += batch->vars[v].nbytes;
  }
  L->stats.bytes += (int64_t)bytes;
  L->stats.wait_seconds += waited;
  pthread_mutex_unlock(&L->stats_mu);
}

/* The end of ferry_next, with ep->mu held (released here): hand out batch
 * b from its slot (host or device ring), or fail with the wait's error rc
 * or the slot's own result. */
static int hand_out(ferry_loader *L, epoch_state *ep, int64_t b, int *state,
                    int slot_rc, const ferry__err *slot_err, int rc,
                    ferry__err *err, ferry_batch *batch, double t0,
                    ferry_batch **out) {
  if (!rc && slot_rc) { /* cannot happen once certified: a broken invariant */
    rc = slot_rc;
    *err = *slot_err;
  }
  if (!rc) {
    *state = SLOT_HELD;
    ep->consumed = b + 1;
    if (ep->consumed >= ep->io_wake)
      pthread_cond_broadcast(&ep->cv_io);
  }
  pthread_mutex_unlock(&ep->mu);
  if (rc)
    return ferry__loader_fail(L, err);
  count_batch(L, batch, ferry__now() - t0);
  *out = batch;
  return 0;
}

/* ferry_next's hand-out of certified batch b with device delivery: the
 * same as on the host, with the device slot as the batch. */
static int next_device(ferry_loader *L, epoch_state *ep, int64_t b, double t0,
                       ferry_batch **out) {
  ring_slot *s = L->ring[b % L->nring];
  ferry__dslot *d = L->dring[b % L->ndring];
  ferry__err err = {0};
  int rc = 0;
  pthread_mutex_lock(&ep->mu);
  if (ep->next_assign == b && s->state == SLOT_FREE && d->state == SLOT_FREE &&
      d->expect == b && !ep->stop &&
      ep->loaded >= ferry__plan_batch_need(&ep->plan, b)) {
    ep->next_assign++;
    s->state = SLOT_BUSY;
    s->bidx = b;
    ferry__assemble_unlocked(ep, s, b);
  }
  while (!(d->state == SLOT_READY && d->bidx == b)) {
    if ((rc = held_check(ep, b, 1, &err)) != 0)
      break;
    d = L->dring[b % L->ndring]; /* swapped, maybe */
    if (!(d->state == SLOT_READY && d->bidx == b))
      pthread_cond_wait(&ep->cv_ready, &ep->mu);
  }
  return hand_out(L, ep, b, &d->state, d->rc, &d->err, rc, &err, &d->batch, t0,
                  out);
}

/* ferry_release of a device batch d, entered with ep->mu held (hb: its
 * entry when it was swapped out of the ring, else NULL): order the
 * buffers' reuse after the consumer's stream, and with keep_host free the
 * host slot once the copy from it is done.  RELEASING keeps ferry_next from
 * swapping d out meanwhile. */
static int release_device(ferry_loader *L, epoch_state *ep, ferry__dslot *d,
                          const ferry__held_batch *hb) {
  ferry__err err = {0};
  int held = d->state == SLOT_HELD;
  if (held)
    d->state = SLOT_RELEASING;
  pthread_mutex_unlock(&ep->mu);
  if (!held)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: batch released twice");
  int rc = ferry__dslot_release(d, L->rank, &err);
  double secs = 0;
  if (d->host >= 0 || (hb && hb->s)) {
    int r2 = ferry__dslot_sync(d, &secs, L->rank, &err);
    if (!rc)
      rc = r2;
  }
  pthread_mutex_lock(&L->stats_mu);
  L->stats.h2d_seconds += secs;
  pthread_mutex_unlock(&L->stats_mu);
  pthread_mutex_lock(&ep->mu);
  if (hb) {
    ferry__held_drop(L, hb);
  } else {
    d->state = SLOT_FREE;
    d->expect = d->bidx + L->ndring;
    if (d->host >= 0)
      L->ring[d->host]->state = SLOT_FREE;
    d->host = -1;
  }
  pthread_cond_broadcast(&ep->cv_work);
  pthread_mutex_unlock(&ep->mu);
  if (rc) {
    char text[FERRY__MSG_MAX];
    ferry__err_text(&err, text, sizeof text);
    ferry__set_thread_error(text);
  }
  return rc;
}

/* While a worker assembles batch b, the consumer assembles the next batch
 * nobody has claimed (its data loaded, its slot free) rather than sleep:
 * with a rank's threads sharing one core, a sleep and a wake-up per batch
 * cost more than the copy.  ep->mu held.  Returns 1 if it assembled one. */
static int help_assemble(epoch_state *ep) {
  ferry_loader *L = ep->L;
  int64_t c = ep->next_assign;
  if (ep->stop || c >= ep->plan.num_batches ||
      ep->loaded < ferry__plan_batch_need(&ep->plan, c))
    return 0;
  ring_slot *t = L->ring[c % L->nring];
  if (t->state != SLOT_FREE)
    return 0;
  ep->next_assign++;
  t->state = SLOT_BUSY;
  t->bidx = c;
  ferry__assemble_unlocked(ep, t, c);
  return 1;
}

int ferry_next(ferry_loader *L, ferry_batch **out) {
  if (!L || !out)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_next: NULL argument");
  *out = NULL;
  epoch_state *ep = L->ep;
  if (!ep) {
    ferry__err err = {0};
    ferry__seterr_on(&err, L->rank, FERRY_ESTATE,
                     "ferry_next called before ferry_set_epoch");
    return ferry__loader_fail(L, &err);
  }
  if (ep->failed)
    return ep->failed;
  int64_t b = ep->consumed;        /* only this thread writes it */
  if (b >= ep->plan.num_batches) { /* and the mapped offsets' pages go */
    ferry__manifest_trim(&L->m, NULL, NULL);
    return FERRY_END;
  }
  /* a mapped manifest's offsets read since: dropped (with a view's, the
   * dataset's under it; packed rows' reader also drops them every 256
   * rows, pack.c).  Every 256 batches: each trim makes the next look-ups
   * fault their pages in again (every 16 cost 10% of a loader of tiny
   * batches, 64 samples of 2 tokens) */
  if ((b & 255) == 255)
    ferry__manifest_trim(&L->m, NULL, NULL);
  ring_slot *s = L->ring[b % L->nring];
  ferry__err err = {0};
  int rc = 0;
  double t0 = ferry__now();
  if (b > ep->certified && L->early_pending) {
    /* the vote posted early: if every rank could vouch for b then, no wait
     * for the slowest rank here; else the full vote below */
    ferry__vote_out eo;
    rc = ferry__vote_early_finish(L, &eo, &err);
    if (rc) {
      ep->failed = rc;
      return ferry__loader_fail(L, &err);
    }
    certified_by(L, ep, b, &eo);
  }
  if (b > ep->certified) {
    int64_t through;
    pthread_mutex_lock(&ep->mu);
    while (!local_status(ep, b, 1, &through, &rc, &err))
      pthread_cond_wait(&ep->cv_ready, &ep->mu);
    pthread_mutex_unlock(&ep->mu);
    rc = certify(L, ep, b, cap_through(L, ep, b, through), rc, &err);
    if (rc) {
      ep->failed = rc;
      return ferry__loader_fail(L, &err);
    }
  }
  if (b == ep->early_at && !L->early_pending) {
    rc = vote_early(L, ep, &err);
    if (rc) {
      ep->failed = rc;
      return ferry__loader_fail(L, &err);
    }
  }
  /* Certified: every rank will hand out batch b; only wait for assembly.
   * Rather than sleep while b (or, once a worker has b, the next unclaimed
   * batch) waits for a thread, the calling thread assembles it itself
   * (help_assemble): it would idle anyway, and on busy cores the sleep/wake
   * handoff per batch costs more than the copy. */
  if (L->gpu)
    return next_device(L, ep, b, t0, out);
  pthread_mutex_lock(&ep->mu);
  s = L->ring[b % L->nring];
  while (!(s->state == SLOT_READY && s->bidx == b)) {
    if (s->state == SLOT_HELD) { /* still held by the caller, from b - nring */
      if ((rc = held_check(ep, b, 1, &err)) != 0)
        break; /* held_memory reached: the caller's misuse, on this rank */
      s = L->ring[b % L->nring];
      continue;
    }
    if (!help_assemble(ep))
      pthread_cond_wait(&ep->cv_ready, &ep->mu);
  }
  return hand_out(L, ep, b, &s->state, s->rc, &s->err, rc, &err, &s->batch, t0,
                  out);
}

/* The slots move between the rings and L->held under ep->mu (slots.c), so
 * the batch is looked up with it held. */
int ferry_release(ferry_loader *L, ferry_batch *batch) {
  if (!L || !batch)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_release: NULL argument");
  epoch_state *ep = L->ep;
  if (!ep)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: not a batch of this loader's epoch");
  ring_slot *s = NULL;
  ferry__held_batch hb = {0};
  int where = 0;
  pthread_mutex_lock(&ep->mu);
  for (int64_t i = 0; i < L->ndring; i++)
    if (&L->dring[i]->batch == batch)
      return release_device(L, ep, L->dring[i], NULL);
  for (int64_t i = 0; i < L->nring && !s; i++)
    if (&L->ring[i]->batch == batch)
      s = L->ring[i];
  if (!s && (where = ferry__held_find(L, batch, &hb)) == 1) {
    if (hb.d)
      return release_device(L, ep, hb.d, &hb);
    s = hb.s;
  }
  int held = s && s->state == SLOT_HELD;
  if (held && s != hb.s)
    s->state = SLOT_FREE;
  else if (held)
    ferry__held_drop(L, &hb);
  pthread_mutex_unlock(&ep->mu);
  if (held) /* after the unlock: the woken worker does not block on it */
    pthread_cond_broadcast(&ep->cv_work);
  if (!s && where != 2)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: not a batch of this loader's epoch");
  if (!held)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_release: batch released twice");
  return 0;
}
