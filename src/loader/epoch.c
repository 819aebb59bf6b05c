/*
 * epoch.c - ferry_set_epoch as a sequence of named steps: stop the previous
 * epoch, set up the new one, the permutation (rank 0 draws it, every rank
 * checks it), the rank's plan, equal batch counts, the memory
 * budget (budget.c), the threads.  Each step is followed by ferry__agree.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "loader/loader.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Epoch lifetime ----------------------------------------------------- */

/* Stop the running epoch and free it.  COLLECTIVE (the collective I/O thread
 * must finish the rounds some rank has entered). */
int ferry__epoch_stop(ferry_loader *L) {
  epoch_state *ep = L->ep;
  int rc = 0;
  if (!ep)
    return 0;
  L->ep = NULL;
  if (ep->io_started || ep->nworkers) {
    pthread_mutex_lock(&ep->mu);
    ep->stop = 1;
    int64_t started = ep->rounds_started;
    pthread_cond_broadcast(&ep->cv_io);
    pthread_cond_broadcast(&ep->cv_work);
    pthread_mutex_unlock(&ep->mu);
    if ((L->opts->io == FERRY__IO_COLLECTIVE || ep->glob) && !ep->halted) {
      /* After stop no new round starts on its own; agree how far to go. */
      long long mine = started, target = 0;
      if (MPI_Allreduce(&mine, &target, 1, MPI_LONG_LONG, MPI_MAX, L->comm) !=
          MPI_SUCCESS)
        rc = FERRY_EMPI;
      pthread_mutex_lock(&ep->mu);
      ep->round_target = target;
      pthread_cond_broadcast(&ep->cv_io);
      pthread_mutex_unlock(&ep->mu);
    }
    if (ep->io_started)
      pthread_join(ep->io_thread, NULL);
    for (int i = 0; i < ep->nworkers; i++)
      pthread_join(ep->workers[i], NULL);
  }
  for (int64_t e = 0; ep->ext_buf && e < ep->plan.nextents; e++)
    ferry__buf_put(L, ep->ext_buf[e]);
  for (int64_t w = 0; ep->win_slots && w < ep->plan.nwindows; w++)
    free(ep->win_slots[w]);
  free(ep->win_slots);
  free(ep->ext_buf);
  size_t nmaps = (size_t)ep->plan.nextents * (size_t)L->m.nvars;
  for (size_t i = 0; ep->ext_map && i < nmaps; i++)
    ferry__unmap(&ep->ext_map[i]);
  free(ep->ext_map);
  ferry__pack_fill_close(ep->pfill);
  ep->pfill = NULL;
  free((void *)ep->ext_src);
  free(ep->win_remaining);
  free(ep->workers);
  if (L->gpu) { /* copies still in flight read the host ring */
    ferry__err ignore;
    if (ferry__gpu_sync(L->gpu, &ignore) && !rc)
      rc = FERRY_ENODEV;
  }
  /* a ring resized for ragged batches (ferry__ring_resize) that ran out
   * of memory has NULL slots after the last one made */
  for (int64_t i = 0; i < L->nring; i++)
    if (L->ring[i])
      L->ring[i]->state = SLOT_FREE;
  for (int64_t i = 0; i < L->ndring; i++) {
    if (!L->dring[i])
      continue;
    L->dring[i]->state = SLOT_FREE;
    L->dring[i]->expect = i;
    L->dring[i]->host = -1;
  }
  ferry__held_reset(L);
  free(ep->all_reads); /* its arrays point into all_reads_buf */
  free(ep->all_reads_buf);
  free(ep->round_admit);
  for (int s = 0; ep->steps && s < ep->nsteps; s++)
    free(ep->steps[s].served);
  free(ep->steps);
  ferry__rank_plan_free(&ep->plan);
  ferry__tok_cache_free(ep->tokc);
  if (ep->draw) { /* after the plan, which points to it */
    ferry__draw_free(ep->draw);
    free(ep->draw);
  }
  free(ep->draw_holes);
  ferry__mix_changes_free(ep->mixch, ep->nmixch);
  if (ep->xch) {
    ferry__exchange_free(ep->xch);
    free(ep->xch);
  }
  for (int i = ep->ngchain - 1; i >= 0; i--) /* children before parents */
    ferry__global_free(&ep->gchain[i]);
  free(ep->gchain);
  free(ep->gpieces);
  ferry__pieces_free(&ep->pieces);
  free(ep->perm);
  pthread_mutex_destroy(&ep->mu);
  pthread_cond_destroy(&ep->cv_io);
  pthread_cond_destroy(&ep->cv_work);
  pthread_cond_destroy(&ep->cv_ready);
  free(ep);
  return rc;
}

void ferry__plan_params_of(const ferry_loader *L, int64_t epoch,
                           ferry__plan_params *pp) {
  const ferry_options *o = L->opts;
  *pp = (ferry__plan_params){
      o->batch_size,     o->seed,      o->shuffle, o->block_size,
      o->shuffle_buffer, o->partition, o->tail,    o->max_chunks,
      o->fraction,       epoch,        L->size};
  if (o->max_tokens) /* samples first, cut by tokens after (tokens.c) */
    pp->batch_size = 1;
}

/* This rank's reads, as the other ranks' collective I/O needs them, packed
 * in one array of int64: [nwindows, pairs, first[nwindows + 1],
 * part[pairs], count[pairs], admit[nwindows]] (admit: the consumed count
 * that admits each window, ferry__admit_of).  *out is malloc'ed. */
static int pack_round_reads(const ferry_loader *L, const ferry__rank_plan *p,
                            int64_t **out, int64_t *len, ferry__err *err) {
  int64_t nw = p->nwindows, pairs = 0;
  for (int64_t e = 0; e < p->nextents; e++)
    pairs += e == 0 || p->extents[e].window != p->extents[e - 1].window ||
             p->extents[e].part != p->extents[e - 1].part;
  *len = 2 + (nw + 1) + 2 * pairs + nw;
  int64_t *a = malloc((size_t)*len * sizeof *a);
  if (!a)
    return ferry__oom(err, L->rank, (size_t)*len * sizeof *a,
                      "the reads of rank %d (io=collective: %lld windows, "
                      "%lld runs of a part)",
                      L->rank, (long long)nw, (long long)pairs);
  int64_t *first = a + 2, *part = first + nw + 1, *count = part + pairs,
          *admit = count + pairs, k = 0;
  a[0] = nw;
  a[1] = pairs;
  for (int64_t w = 0; w < nw; w++) {
    first[w] = k;
    admit[w] = ferry__admit_of(p, w);
    for (int64_t e = p->window_first_extent[w];
         e < p->window_first_extent[w + 1]; e++) {
      if (k > first[w] && part[k - 1] == p->extents[e].part) {
        count[k - 1]++;
        continue;
      }
      part[k] = p->extents[e].part;
      count[k++] = 1;
    }
  }
  first[nw] = k;
  *out = a;
  return 0;
}

/* Every rank's reads (ep->all_reads, pointing into ep->all_reads_buf) and
 * the consumed count that admits each round.  Each rank packs the summary
 * of its own plan and an all-gather gives every rank all of them: no rank
 * builds another rank's plan (it did: O(chunks) time on every rank, and one
 * other rank's whole plan in memory at a time).  COLLECTIVE. */
static int plan_collective(epoch_state *ep, ferry__err *err) {
  ferry_loader *L = ep->L;
  int64_t *mine = NULL, len = 0;
  int rc = pack_round_reads(L, &ep->plan, &mine, &len, err);
  int64_t *lens = NULL, total = 0;
  int *counts = NULL, *displs = NULL;
  if (!rc) {
    lens = malloc((size_t)L->size * sizeof *lens);
    counts = malloc((size_t)L->size * sizeof *counts);
    displs = malloc((size_t)L->size * sizeof *displs);
    ep->all_reads = calloc((size_t)L->size, sizeof *ep->all_reads);
    if (!lens || !counts || !displs || !ep->all_reads)
      rc = ferry__oom(err, L->rank,
                      (size_t)L->size * (sizeof *lens + 2 * sizeof(int) +
                                         sizeof *ep->all_reads),
                      "the other ranks' reads (io=collective, %d ranks)",
                      L->size);
  }
  if ((rc = ferry__agree(L->comm, L->rank, rc, err)) != 0)
    goto out;
  if (MPI_Allgather(&len, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, L->comm) !=
      MPI_SUCCESS) {
    rc = ferry__seterr_on(err, L->rank, FERRY_EMPI,
                          "MPI_Allgather failed sharing the sizes of the "
                          "ranks' reads (io=collective)");
    goto out;
  }
  for (int r = 0; r < L->size; r++)
    total += lens[r];
  if (total > INT_MAX) { /* the same sizes on every rank: all refuse */
    rc = ferry__seterr_on(
        err, L->rank, FERRY_ENOTSUP,
        "the ranks' reads of one epoch take %lld numbers, more than one "
        "MPI all-gather carries (io=collective): use io=independent or a "
        "larger chunk_samples",
        (long long)total);
    goto out;
  }
  ep->all_reads_buf = malloc((size_t)(total ? total : 1) * sizeof(int64_t));
  rc = ep->all_reads_buf
           ? 0
           : ferry__oom(err, L->rank, (size_t)total * sizeof(int64_t),
                        "the %d ranks' reads (io=collective)", L->size);
  if ((rc = ferry__agree(L->comm, L->rank, rc, err)) != 0)
    goto out;
  for (int r = 0, at = 0; r < L->size; r++) {
    counts[r] = (int)lens[r];
    displs[r] = at;
    at += counts[r];
  }
  if (MPI_Allgatherv(mine, (int)len, MPI_INT64_T, ep->all_reads_buf, counts,
                     displs, MPI_INT64_T, L->comm) != MPI_SUCCESS) {
    rc = ferry__seterr_on(err, L->rank, FERRY_EMPI,
                          "MPI_Allgatherv failed sharing the ranks' reads "
                          "(io=collective)");
    goto out;
  }
  /* Unpack (made by pack_round_reads on every rank: trusted); round j is
   * admitted when the first rank could admit its window j, and admission
   * never decreases from one round to the next (suffix minimum). */
  int64_t nrounds = 0;
  for (int r = 0; r < L->size; r++) {
    int64_t *a = ep->all_reads_buf + displs[r];
    if (a[0] > nrounds)
      nrounds = a[0];
  }
  int64_t *t = realloc(ep->round_admit,
                       (size_t)(nrounds ? nrounds : 1) * sizeof(int64_t));
  rc = t ? 0
         : ferry__oom(err, L->rank, (size_t)nrounds * sizeof(int64_t),
                      "the admissions of %lld rounds (io=collective)",
                      (long long)nrounds);
  if ((rc = ferry__agree(L->comm, L->rank, rc, err)) != 0)
    goto out;
  ep->round_admit = t;
  ep->nrounds = nrounds;
  for (int64_t j = 0; j < nrounds; j++)
    t[j] = INT64_MAX;
  for (int r = 0; r < L->size; r++) {
    int64_t *a = ep->all_reads_buf + displs[r], nw = a[0], pairs = a[1];
    ferry__round_reads *rr = &ep->all_reads[r];
    rr->nwindows = nw;
    rr->first = a + 2;
    rr->part = rr->first + nw + 1;
    rr->count = rr->part + pairs;
    const int64_t *admit = rr->count + pairs;
    for (int64_t j = 0; j < nw; j++)
      if (admit[j] < t[j])
        t[j] = admit[j];
  }
  for (int64_t j = nrounds - 2; j >= 0; j--)
    if (t[j + 1] < t[j])
      t[j] = t[j + 1];
out:
  free(mine);
  free(lens);
  free(counts);
  free(displs);
  return rc; /* the set_epoch step that called adds the dataset and epoch */
}

/* Step 1: a fresh epoch state (the previous epoch is stopped first). */
static int epoch_new(ferry_loader *L, int64_t epoch,
                     const ferry__resume_step *steps, int nsteps,
                     int64_t index_base, int64_t samples_before,
                     epoch_state **out, ferry__err *err) {
  int rc = ferry__epoch_stop(L);
  if (rc)
    ferry__seterr_on(err, L->rank, rc, "stopping the previous epoch failed");
  epoch_state *ep = calloc(1, sizeof *ep);
  *out = ep;
  if (!ep && !rc)
    rc = ferry__oom(err, L->rank, sizeof *ep,
                    "dataset %s: the state of epoch %lld", L->m.spec,
                    (long long)epoch);
  if (epoch < 0 && !rc)
    rc = ferry__seterr(err, FERRY_EINVAL, "epoch %lld is negative",
                       (long long)epoch);
  if (!ep)
    return rc;
  ep->L = L;
  ep->epoch = epoch;
  ep->round_target = -1;
  ep->certified = -1;
  ep->early_at = -1;
  ep->io_through = -1;
  pthread_mutex_init(&ep->mu, NULL);
  pthread_cond_init(&ep->cv_io, NULL);
  pthread_cond_init(&ep->cv_work, NULL);
  pthread_cond_init(&ep->cv_ready, NULL);
  ep->index_base = index_base;
  ep->samples_before = samples_before;
  if (nsteps > 0) {
    ep->steps = malloc((size_t)nsteps * sizeof *ep->steps);
    if (ep->steps) {
      memcpy(ep->steps, steps, (size_t)nsteps * sizeof *steps);
      ep->nsteps = nsteps;
      for (int s = 0; s < nsteps; s++) { /* the counts: own copies */
        size_t b = (size_t)steps[s].world_size * sizeof(int64_t);
        ep->steps[s].served = steps[s].served ? malloc(b) : NULL;
        if (ep->steps[s].served)
          memcpy(ep->steps[s].served, steps[s].served, b);
        else if (steps[s].served && !rc)
          rc = ferry__oom(err, L->rank, b, "the counts of resume step %d", s);
      }
    } else if (!rc)
      rc = ferry__oom(err, L->rank, (size_t)nsteps * sizeof *ep->steps,
                      "dataset %s: the %d resume steps of epoch %lld",
                      L->m.spec, nsteps, (long long)epoch);
  }
  return rc;
}

/* MPI_Bcast of n int64 from rank 0, in pieces (MPI counts are int). */
static int bcast_i64(int64_t *v, int64_t n, MPI_Comm comm) {
  for (int64_t at = 0; at < n; at += (int64_t)1 << 27) {
    int64_t k = n - at < ((int64_t)1 << 27) ? n - at : (int64_t)1 << 27;
    if (MPI_Bcast(v + at, (int)k, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
      return 1;
  }
  return 0;
}

/* What every rank's generator says for these inputs, cheaply: the hash of
 * the permutation of the first min(n, 4096) pieces (the same stream key
 * and draws as the full one) and of draws bounded by n.  Ranks running
 * another generator (another ferry, a miscompiled one) disagree on it. */
static uint64_t generator_probe(const ferry__plan_params *pp, int64_t n) {
  int64_t small[4096];
  int64_t k = n < 4096 ? n : 4096;
  ferry__plan_permutation(pp, k, small);
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, small, (size_t)k * sizeof *small);
  uint64_t key =
      ferry__rand_key(pp->seed, FERRY__STREAM_CHUNKS, (uint64_t)pp->epoch, 0);
  for (uint64_t i = 0; i < 16; i++) {
    uint64_t r = ferry__rand64(key, i) % (uint64_t)(n > 0 ? n : 1);
    h = ferry__fnv1a(h, &r, sizeof r);
  }
  return h;
}

/* Step 2a, local: room for the permutation and, on rank 0, its draw and
 * its hash in the extra last element (so that one broadcast carries both).
 * Agreed on with step 1's result. */
static int epoch_perm_draw(ferry_loader *L, epoch_state *ep,
                           const ferry__plan_params *pp, ferry__err *err) {
  int64_t np = ep->pieces.n;
  size_t bytes = (size_t)(np + 1) * sizeof *ep->perm;
  ep->perm = malloc(bytes);
  if (!ep->perm)
    return ferry__oom(err, L->rank, bytes,
                      "dataset %s: the permutation of epoch %lld (%lld "
                      "pieces)",
                      L->m.spec, (long long)ep->epoch, (long long)np);
  ep->perm[np] = 0;
  if (L->rank == 0) {
    ferry__plan_permutation(pp, np, ep->perm);
    /* rank 0 hashes it: the other ranks receive its very bytes (hashing 8
     * bytes per piece on every rank cost as much as the broadcast) */
    ep->perm[np] = (int64_t)ferry__fnv1a(FERRY__FNV_INIT, ep->perm,
                                         (size_t)np * sizeof *ep->perm);
  }
  return 0;
}

/* Step 2b: rank 0's permutation (and its hash) is broadcast; every rank
 * checks the inputs, the hash and its own generator on a probe
 * (generator_probe) -- min == max over ranks, one MPI_Allreduce.  Every
 * rank used to draw the whole permutation too: with 10^6 chunks and 64
 * ranks sharing two cores that alone cost seconds
 * (docs/decisions/0001-generator-probe.md).
 * COLLECTIVE. */
static int epoch_permutation(ferry_loader *L, epoch_state *ep,
                             const ferry__plan_params *pp, ferry__err *err) {
  int64_t np = ep->pieces.n, epoch = ep->epoch;
  int rc = 0;
  uint64_t v[8];
  if (bcast_i64(ep->perm, np + 1, L->comm))
    rc = ferry__seterr_on(err, L->rank, FERRY_EMPI, "MPI_Bcast failed");
  v[4] = (uint64_t)ep->perm[np];
  v[0] = ferry__fnv1a(FERRY__FNV_INIT, &epoch, sizeof epoch);
  v[1] = ferry__fnv1a(FERRY__FNV_INIT, &L->opts->seed, sizeof L->opts->seed);
  v[2] = L->m.hash;
  v[3] = (uint64_t)L->size;
  v[5] = generator_probe(pp, np);
  v[6] = (uint64_t)np;
  v[7] = 0;
  static const char *const what[8] = {
      "the epoch number",
      "option 'seed'",
      "the dataset manifest",
      "the world size",
      "the broadcast plan",
      "the permutation each rank computes (generator differs)",
      "the number of pieces",
      "the permutation each rank computes (generator differs)"};
  int which = -1;
  rc = ferry__agree_check(L->comm, L->rank, rc, v, 8, &which, NULL, NULL, err);
  if (rc == FERRY_EMISMATCH && which >= 0)
    rc = ferry__seterr(err, FERRY_EMISMATCH,
                       "ranks disagree on %s in epoch %lld", what[which],
                       (long long)epoch);
  if (!rc) { /* the value of earlier versions, whose v[5] was the rank's
              * own permutation's hash (equal to v[4] on success) */
    v[5] = v[4];
    ep->checksum = ferry__fnv1a(v[4], v, 7 * sizeof *v);
  }
  return rc;
}

/* shuffle=global, a resumed epoch: the plans of its steps, each the rest
 * of its parent over the next world size (steps of the same world size
 * continue one plan); *served: the batches every rank already served of
 * the last plan, whose world size is this loader's. */
static int global_chain(ferry_loader *L, epoch_state *ep,
                        const ferry__plan_params *pp, int64_t *served,
                        ferry__err *err) {
  ep->gchain = calloc((size_t)ep->nsteps + 1, sizeof *ep->gchain);
  if (!ep->gchain) /* epoch_plan's caller adds the dataset and epoch */
    return ferry__oom(err, L->rank,
                      ((size_t)ep->nsteps + 1) * sizeof *ep->gchain,
                      "the global plans of %d resume steps", ep->nsteps);
  ferry__plan_params p0 = *pp;
  if (ep->nsteps)
    p0.world_size = ep->steps[0].world_size;
  int rc = ferry__global_init(&ep->gchain[0], ep->gpieces, ep->pieces.n,
                              ep->perm, &p0, L->opts->exchange, err);
  if (rc)
    return rc;
  ep->ngchain = 1;
  *served = 0;
  for (int i = 0; i < ep->nsteps; i++) {
    const ferry__global *cur = &ep->gchain[ep->ngchain - 1];
    *served += ep->steps[i].batches;
    if (*served > cur->num_batches)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "the state says %lld batches were served over "
                           "%d ranks; that epoch has %lld",
                           (long long)*served, cur->P,
                           (long long)cur->num_batches);
    int next = i + 1 < ep->nsteps ? ep->steps[i + 1].world_size : L->size;
    if (next == cur->P)
      continue;
    rc =
        ferry__global_resume(&ep->gchain[ep->ngchain], cur, *served, next, err);
    if (rc)
      return rc;
    ep->ngchain++;
    *served = 0;
  }
  return 0;
}

/* shuffle=global (docs/design/global-shuffle.md): the epoch's global
 * plan, and this rank's plan as the pipeline sees it -- one extent per
 * global window, the window's serve buffer (what the exchange leaves on
 * this rank, its rows in serve order), so that the workers assemble
 * batches as they do for any plan.  The windows' tables are built by the
 * I/O thread when it admits them.  A resumed epoch starts at the window
 * of the cut (ferry__global_cut), served from its position there. */
static int global_plan(ferry_loader *L, epoch_state *ep,
                       const ferry__plan_params *pp, ferry__err *err) {
  int64_t n = ep->pieces.n, served = 0;
  ep->gpieces = malloc((size_t)(n ? n : 1) * sizeof *ep->gpieces);
  if (!ep->gpieces) /* epoch_plan's caller adds the dataset and epoch */
    return ferry__oom(err, L->rank, (size_t)(n ? n : 1) * sizeof *ep->gpieces,
                      "the %lld pieces of the global plan", (long long)n);
  for (int64_t i = 0; i < n; i++)
    ep->gpieces[i] = ferry__piece(&ep->pieces, i);
  int rc = global_chain(L, ep, pp, &served, err);
  if (rc)
    return rc;
  const ferry__global *g = ep->glob = &ep->gchain[ep->ngchain - 1];
  int64_t w0 = g->nwindows, off = 0, B = pp->batch_size;
  if (served < g->num_batches)
    ferry__global_cut(g, served, &w0, &off);
  ep->gbase = w0;
  ep->gskip = off;
  ferry__rank_plan *p = &ep->plan;
  int64_t nw = g->nwindows - w0;
  memset(p, 0, sizeof *p);
  p->extents = calloc((size_t)nw + 1, sizeof *p->extents);
  p->window_first_extent = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_need = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_samples = calloc((size_t)nw + 1, sizeof(int64_t));
  p->window_first_slot = calloc((size_t)nw + 1, sizeof(int64_t));
  if (!p->extents || !p->window_first_extent || !p->window_need ||
      !p->window_samples || !p->window_first_slot)
    return ferry__oom(err, L->rank,
                      ((size_t)nw + 1) *
                          (sizeof *p->extents + 4 * sizeof(int64_t)),
                      "the %lld windows of the global plan", (long long)nw);
  p->num_batches = g->num_batches - served;
  p->epoch_samples = g->M;
  p->dropped = g->dropped;
  p->batch_size = B;
  p->nextents = p->nwindows = nw;
  for (int64_t k = 0; k < nw; k++) {
    ferry__global_counts c;
    ferry__global_counts_of(g, k + w0, L->rank, &c);
    int64_t skip = k ? 0 : off, all = c.read + c.pads;
    int64_t mine = all > skip ? all - skip : 0;
    int64_t first = k ? ferry__global_serve_first(g, k + w0) - served * B : 0;
    p->window_samples[k] = mine;
    p->window_first_slot[k] = first;
    p->window_first_extent[k] = k;
    p->window_need[k] = first / B;
    p->extents[k] = (ferry__extent){-1, 0, all, -1, k};
    p->padded += c.pads < mine ? c.pads : mine;
    p->nslots += mine;
  }
  p->window_first_extent[nw] = nw;
  p->window_first_slot[nw] = p->nslots;
  return 0;
}

/* shuffle=global: every rank's global plan has the same checksum (the
 * epoch's shape, every window's counts, probes of the permutations), and
 * the exchange of the I/O thread is ready.  COLLECTIVE. */
static int global_check(ferry_loader *L, epoch_state *ep, ferry__err *err) {
  uint64_t v = ferry__global_checksum(ep->glob);
  v = ferry__fnv1a(v, &ep->gbase, sizeof ep->gbase);
  v = ferry__fnv1a(v, &ep->gskip, sizeof ep->gskip);
  int which = -1;
  int rc = ferry__agree_same(L->comm, L->rank, &v, 1, &which, err);
  if (rc == FERRY_EMISMATCH)
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "ranks disagree on the global shuffle plan of "
                         "epoch %lld",
                         (long long)ep->epoch);
  if (rc)
    return rc;
  ep->checksum = ferry__fnv1a(ep->checksum, &v, sizeof v);
  ep->xch = calloc(1, sizeof *ep->xch);
  if (!ep->xch)
    rc = ferry__oom(err, L->rank, sizeof *ep->xch,
                    "the exchange of the global plan");
  else if ((rc = ferry__exchange_init(ep->xch, L->xcomm, L->row_total, err))) {
    free(ep->xch);
    ep->xch = NULL;
  }
  if (!rc) { /* the I/O thread's rounds: one exchange per window */
    ep->nrounds = ep->plan.nwindows;
    ep->round_admit = malloc((size_t)(ep->nrounds + 1) * sizeof(int64_t));
    if (!ep->round_admit)
      rc = ferry__oom(err, L->rank, (size_t)(ep->nrounds + 1) * sizeof(int64_t),
                      "the admissions of the global plan's %lld windows",
                      (long long)ep->nrounds);
    for (int64_t w = 0; !rc && w < ep->nrounds; w++)
      ep->round_admit[w] = ferry__admit_of(&ep->plan, w);
  }
  return ferry__agree(L->comm, L->rank, rc, err);
}

/* A bucketed epoch saved after batches over other numbers of ranks: what
 * each rank of each step served, found step by step -- every rank's plan
 * of the step (the epoch's, or the rest after the steps before it, dealt)
 * and cut made again (ferry__tokens_holes) -- and the rest dealt over this
 * run's ranks.  The steps' served positions and holes are made here (the
 * state holds counts only).  LOCAL: the same on every rank. */
static int bucket_holes_resume(ferry_loader *L, epoch_state *ep,
                               const ferry__plan_params *pp, ferry__err *err) {
  int n = ep->nsteps, rc = 0;
  ferry__resume_step *st = calloc((size_t)n, sizeof *st);
  if (!st)
    return ferry__oom(err, L->rank, (size_t)n * sizeof *st,
                      "the %d steps of a resumed epoch", n);
  for (int s = 0; !rc && s < n; s++) {
    int R = ep->steps[s].world_size;
    st[s] = (ferry__resume_step){R, ep->steps[s].batches, NULL, NULL, NULL};
    st[s].served = calloc((size_t)R, sizeof(int64_t));
    st[s].nholes = calloc((size_t)R, sizeof(int64_t));
    st[s].holes = calloc((size_t)R, sizeof(int64_t *));
    if (!st[s].served || !st[s].nholes || !st[s].holes)
      rc = ferry__oom(err, L->rank, (size_t)R * 24,
                      "the served positions of %d ranks", R);
    if (!rc)
      rc = ferry__tokens_holes(L, &ep->pieces, ep->perm, NULL, NULL, st, s, pp,
                               R, st[s].batches, st[s].served, st[s].nholes,
                               st[s].holes, err);
  }
  if (!rc)
    rc = ferry__plan_resume(&ep->pieces, ep->perm, pp, st, n, L->rank,
                            &ep->plan, NULL, err);
  for (int s = 0; s < n; s++) {
    for (int r = 0; st[s].holes && r < st[s].world_size; r++)
      free(st[s].holes[r]);
    free(st[s].holes);
    free(st[s].nholes);
    free(st[s].served);
  }
  free(st);
  return rc;
}

/* Step 3 with max_tokens: the plan of batch_size 1 cut by tokens
 * (tokens.c).  A resumed epoch: the whole epoch's batches are cut again
 * (the same on every rank as when it was saved), the samples of the first
 * K are served ones, and the rest of the plan after them keeps the rest of
 * those batches: exactly the uninterrupted run's.  Over another number of
 * ranks, the state holds each old rank's served positions per step
 * (checkpoint.c): plan_resume drops them from the old ranks' orders and
 * deals the rest over this run's ranks (as batches of 1), which is then cut
 * again.  A bucketed epoch over the same ranks: the plan's rest from the
 * start of the bucket of batch K, whose first batches are kept as its
 * head (tokens_tail); over other ranks (a bucket's first batches are not
 * a prefix of its slots, so no count says what each rank served) every
 * old rank's plan and cut are made again to find what it served, step
 * after step (bucket_holes_resume).  COLLECTIVE. */
static int tokens_plan(ferry_loader *L, epoch_state *ep,
                       const ferry__plan_params *pp, ferry__err *err) {
  int64_t K = 0;
  int rc = 0, same = 1;
  for (int s = 0; s < ep->nsteps; s++) {
    K += ep->steps[s].batches;
    same &= ep->steps[s].world_size == L->size;
  }
  for (int s = 0; !same && !rc && s < ep->nsteps; s++)
    if (!ep->steps[s].served)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "max_tokens: epoch %lld was saved over %d ranks "
                         "without each rank's count (a ferry before 0.1 of "
                         "2026-11-28?); resume it over %d ranks, or at the "
                         "next epoch",
                         (long long)pp->epoch, ep->steps[s].world_size,
                         ep->steps[s].world_size);
  int holes = !same && K > 0 && L->opts->bucket_window;
  if (!same) { /* another number of ranks: the rest, dealt, then cut */
    if (!rc && holes)
      rc = bucket_holes_resume(L, ep, pp, err);
    else if (!rc)
      rc = ferry__plan_resume(&ep->pieces, ep->perm, pp, ep->steps, ep->nsteps,
                              L->rank, &ep->plan, NULL, err);
    return ferry__tokens_plan(L, &ep->plan, pp->epoch, &ep->tokc, rc, err);
  }
  if (!rc)
    rc = ferry__plan_build(&ep->pieces, ep->perm, pp, L->rank, &ep->plan, err);
  int W = L->opts->bucket_window > 0;
  rc = ferry__tokens_plan(L, &ep->plan, pp->epoch, K && !W ? NULL : &ep->tokc,
                          rc, err);
  if (rc || K == 0)
    return rc;
  return ferry__tokens_tail(L, ep, pp, K, err);
}

/* Step 3: this rank's plan (fresh, or the rest of a resumed epoch), and
 * with io=collective every rank's reads.  The slot array of the last epoch
 * is reused: fresh memory costs a page fault per 4 KiB. */
static int epoch_plan(ferry_loader *L, epoch_state *ep,
                      const ferry__plan_params *pp, ferry__err *err) {
  int rc = 0;
  if (L->opts->shuffle == FERRY__SHUFFLE_GLOBAL)
    rc = global_plan(L, ep, pp, err);
  else if (L->opts->max_tokens) /* collective */
    rc = tokens_plan(L, ep, pp, err);
  else if (ep->nsteps)
    rc = ferry__plan_resume(&ep->pieces, ep->perm, pp, ep->steps, ep->nsteps,
                            L->rank, &ep->plan, NULL, err);
  else
    rc = ferry__plan_build(&ep->pieces, ep->perm, pp, L->rank, &ep->plan, err);
  if (!rc && L->opts->shuffle != FERRY__SHUFFLE_GLOBAL &&
      L->opts->io == FERRY__IO_COLLECTIVE)
    rc = plan_collective(ep, err);
  if (rc == FERRY_ENOMEM) { /* the plan's own message has the size; the
                             * rank that failed (global_plan agrees) */
    char what[FERRY__MSG_MAX];
    memcpy(what, err->msg, sizeof what);
    what[sizeof what - 1] = '\0';
    ferry__seterr_on(err, err->has_rank ? err->rank : L->rank, rc,
                     "dataset %s, epoch %lld: %.900s", L->m.spec,
                     (long long)pp->epoch, what);
  }
  return rc;
}

/* Step 4: the plan's outcome and equal batch counts on every rank, in one
 * round, before the first batch.  COLLECTIVE. */
static int epoch_check_counts(ferry_loader *L, epoch_state *ep, int rc,
                              ferry__err *err) {
  uint64_t nb = rc ? 0 : (uint64_t)ep->plan.num_batches, lo, hi;
  int which = -1;
  rc = ferry__agree_check(L->comm, L->rank, rc, &nb, 1, &which, &lo, &hi, err);
  if (rc == FERRY_EMISMATCH && which >= 0) /* not an error agreed on */
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "batch counts differ across ranks (%lld to %lld)",
                         (long long)lo, (long long)hi);
  return rc;
}

/* Step 5: the epoch's buffers, the memory budget, the I/O thread and the
 * workers. */
static int epoch_start(ferry_loader *L, epoch_state *ep, ferry__err *err) {
  const ferry__rank_plan *p = &ep->plan;
  size_t nsrc = (size_t)p->nextents * (size_t)L->m.nvars + 1;
  ep->ext_buf = calloc((size_t)p->nextents + 1, sizeof *ep->ext_buf);
  ep->ext_src = calloc(nsrc, sizeof *ep->ext_src);
  if (L->opts->io == FERRY__IO_MMAP && L->be->io_map) {
    ep->ext_map = calloc(nsrc, sizeof *ep->ext_map);
    int64_t nmaps = L->m.nparts * L->m.nvars;
    if (!L->maps && nmaps <= FERRY__MAX_MAPS)
      L->maps = calloc((size_t)nmaps, sizeof *L->maps);
  }
  if (L->pack_comp) { /* the epoch's stream, for the workers (pack.c) */
    int rc = ferry__pack_fill_open(L, ep->epoch, &ep->pfill, err);
    if (rc)
      return rc;
  }
  ep->win_remaining = calloc((size_t)p->nwindows + 1, sizeof(int64_t));
  ep->win_slots = calloc((size_t)p->nwindows + 1, sizeof *ep->win_slots);
  ep->workers = calloc((size_t)L->nthreads, sizeof *ep->workers);
  if (!ep->ext_buf || !ep->ext_src || !ep->win_remaining || !ep->win_slots ||
      !ep->workers ||
      (L->opts->io == FERRY__IO_MMAP && L->be->io_map && !ep->ext_map))
    return ferry__oom(err, L->rank,
                      ((size_t)p->nextents + 1) * sizeof *ep->ext_buf +
                          nsrc *
                              (sizeof *ep->ext_src +
                               (L->opts->io == FERRY__IO_MMAP && L->be->io_map
                                    ? sizeof *ep->ext_map
                                    : 0)) +
                          ((size_t)p->nwindows + 1) *
                              (sizeof(int64_t) + sizeof *ep->win_slots) +
                          (size_t)L->nthreads * sizeof *ep->workers,
                      "dataset %s: the epoch's %lld extents", L->m.spec,
                      (long long)p->nextents);
  for (int64_t w = 0; w < p->nwindows; w++)
    ep->win_remaining[w] = p->window_samples[w];
  /* a bucketed epoch resumed in a bucket: its positions before the first
   * batch were served before (tokens_tail), inside the first window */
  if (p->nwindows > 0 && p->tok_start && p->tok_start[0] > 0)
    ep->win_remaining[0] -= p->tok_start[0];
  ferry__budget_compute(L, ep);
  ferry__buf_drain(L, L->budget.read_bytes);
  L->ep = ep;
  if (pthread_create(&ep->io_thread, NULL, ferry__io_main, ep) != 0)
    return ferry__seterr_on(err, L->rank, FERRY_ENOMEM,
                            "cannot start the I/O thread");
  ep->io_started = 1;
  for (int i = 0; i < L->nthreads; i++) {
    if (pthread_create(&ep->workers[i], NULL, ferry__worker_main, ep) != 0)
      return ferry__seterr_on(err, L->rank, FERRY_ENOMEM,
                              "cannot start worker thread %d", i);
    ep->nworkers++;
  }
  return 0;
}

/* ferry_set_epoch and ferry_state_load: the steps above, each agreed on by
 * every rank before the next.  COLLECTIVE. */
int ferry__epoch_begin(ferry_loader *L, int64_t epoch,
                       const ferry__resume_step *steps, int nsteps,
                       int64_t index_base, int64_t samples_before) {
  ferry__err err = {0};
  epoch_state *ep = NULL;
  ferry__plan_params pp;
  ferry__plan_params_of(L, epoch, &pp);
  int rc =
      epoch_new(L, epoch, steps, nsteps, index_base, samples_before, &ep, &err);
  if (L->sampling) { /* weights, balance, mix: a sequence of draws */
    rc = ferry__agree(L->comm, L->rank, rc, &err);
    if (!rc)
      rc = epoch_check_counts(L, ep, ferry__sampling_epoch(L, ep, &pp, &err),
                              &err);
  } else if (!rc) {
    rc = ferry__pieces_make(&L->chunks, &pp, &ep->pieces);
    if (rc)
      ferry__oom(&err, L->rank, (size_t)L->nchunks * 2 * sizeof(int64_t),
                 "dataset %s: the pieces of epoch %lld (%lld chunks)",
                 L->m.spec, (long long)epoch, (long long)L->nchunks);
  }
  if (!L->sampling) {
    if (!rc)
      rc = epoch_perm_draw(L, ep, &pp, &err);
    rc = ferry__agree(L->comm, L->rank, rc, &err);
    if (!rc) {
      rc = epoch_permutation(L, ep, &pp, &err);
      if (!rc)
        rc = epoch_plan(L, ep, &pp, &err);
      rc = epoch_check_counts(L, ep, rc, &err);
    }
  }
  if (!rc && ep->glob)
    rc = global_check(L, ep, &err);
  if (!rc) /* ragged: the slots made for the epoch's largest batch */
    rc = ferry__ragged_epoch(L, ep, &err);
  if (!rc)
    rc = epoch_start(L, ep, &err);
  rc = ferry__agree(L->comm, L->rank, rc, &err);
  if (rc) {
    if (!L->ep)
      L->ep = ep; /* let epoch_stop free it (NULL: nothing to free) */
    ferry__epoch_stop(L);
    return ferry__loader_fail(L, &err);
  }
  /* the mapped offsets the plan read (the corpus under packed rows too) */
  ferry__manifest_trim(&L->m, NULL, NULL);
  return 0;
}

int ferry_set_epoch(ferry_loader *L, int64_t epoch) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_set_epoch: loader is NULL");
  ferry__err err = {0};
  int rc = L->peer_rc ? ferry__peer_gone(L, "ferry_set_epoch", &err)
                      : ferry__vote(L, FERRY__VOTE_SET_EPOCH, 0, 0, NULL, &err);
  if (rc)
    return ferry__loader_fail(L, &err);
  return ferry__epoch_begin(L, epoch, NULL, 0, 0, 0);
}

int64_t ferry_num_batches(const ferry_loader *L) {
  if (!L)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  return L->ep->plan.num_batches;
}
