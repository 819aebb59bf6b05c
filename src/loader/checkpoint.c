/*
 * checkpoint.c - ferry_state_save and ferry_state_load: the state records
 * how many batches every rank was handed, and a load restarts the epoch
 * from there with ferry__plan_resume's plan (plan/resume.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "loader/loader.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The plan-shaping options as a state records them (chunk_samples
 * resolved, so that "auto" cannot silently mean another size later).
 * FERRY_ENOMEM with err set (rank: as the caller reports), or
 * FERRY_EINTERNAL with err untouched. */
static int state_options(const ferry_loader *L, ferry__state *st, int rank,
                         ferry__err *err) {
  const char *const *names = ferry__state_plan_options();
  int n = 0;
  while (names[n])
    n++;
  st->opt_name = calloc((size_t)n, sizeof *st->opt_name);
  st->opt_value = calloc((size_t)n, sizeof *st->opt_value);
  if (!st->opt_name || !st->opt_value)
    return ferry__oom(
        err, rank, (size_t)n * (sizeof *st->opt_name + sizeof *st->opt_value),
        "the %d options of the state of dataset %s", n, L->m.spec);
  for (int i = 0; i < n; i++) {
    char buf[4096];
    if (strcmp(names[i], "chunk_samples") == 0)
      snprintf(buf, sizeof buf, "%lld", (long long)L->chunk_samples);
    else if (ferry_options_get(L->opts, names[i], buf, sizeof buf) != 0)
      return FERRY_EINTERNAL;
    st->opt_name[i] = strdup(names[i]);
    st->opt_value[i] = strdup(buf);
    st->nopts = i + 1;
    if (!st->opt_name[i] || !st->opt_value[i])
      return ferry__oom(err, rank, strlen(names[i]) + strlen(buf) + 2,
                        "option '%s' of the state of dataset %s", names[i],
                        L->m.spec);
  }
  return 0;
}

/* Rank 0's encoding of the position: the epoch, the batches every rank was
 * handed (pos each), total samples served and the resume steps. */
static int state_encode_pos(ferry_loader *L, long long pos, long long total,
                            const int64_t *served, char **buf, size_t *len,
                            ferry__err *err) {
  epoch_state *ep = L->ep;
  ferry__state st;
  memset(&st, 0, sizeof st);
  st.dataset = L->m.spec;
  st.dataset_hash = L->m.hash;
  st.num_samples = L->m.num_samples;
  st.epoch = ep->epoch;
  st.world_size = L->size;
  st.batches = ep->index_base + pos;
  st.samples_served = ep->samples_before + total;
  st.steps = malloc(((size_t)ep->nsteps + 1) * sizeof *st.steps);
  int rc = st.steps ? state_options(L, &st, -1, err)
                    : ferry__oom(err, -1,
                                 ((size_t)ep->nsteps + 1) * sizeof *st.steps,
                                 "the %d resume steps of the state of dataset "
                                 "%s on rank 0",
                                 ep->nsteps + 1, L->m.spec);
  if (!rc) {
    if (ep->nsteps) /* a fresh epoch has no step yet (and steps NULL) */
      memcpy(st.steps, ep->steps, (size_t)ep->nsteps * sizeof *st.steps);
    st.nsteps = ep->nsteps;
    for (int s = 0; s < st.nsteps; s++) /* borrowed: copied below */
      st.steps[s].served = NULL;
    if (st.nsteps && st.steps[st.nsteps - 1].world_size == L->size)
      st.steps[st.nsteps - 1].batches += pos;
    else
      st.steps[st.nsteps++] =
          (ferry__resume_step){L->size, pos, NULL, NULL, NULL};
    /* max_tokens: every rank's served positions, per step (own copies, the
     * last step's with this run's added) */
    for (int s = 0; served && !rc && s < st.nsteps; s++) {
      int P = st.steps[s].world_size;
      const int64_t *was = s < ep->nsteps ? ep->steps[s].served : NULL;
      int64_t *sv = calloc((size_t)P, sizeof *sv);
      if (!sv) {
        rc = ferry__oom(err, -1, (size_t)P * sizeof *sv,
                        "the counts of %d ranks in the state of dataset %s", P,
                        L->m.spec);
        break;
      }
      for (int r = 0; r < P; r++)
        sv[r] = (was ? was[r] : 0) + (s == st.nsteps - 1 ? served[r] : 0);
      st.steps[s].served = sv;
    }
    /* a mix: the proportions in effect from draw 0 on, and any change
     * since, so that a resume with another mix can remake this epoch */
    ferry__draw_change first = {0, L->nmix, NULL, NULL};
    st.mix_sources = ferry__mix_sources_hash(L);
    st.mix_changes = ep->mixch; /* borrowed */
    st.nmix_changes = ep->nmixch;
    if (L->nmix && !ep->nmixch) {
      first.proportion = malloc((size_t)L->nmix * sizeof(double));
      first.exhaust = malloc((size_t)L->nmix * sizeof(int));
      for (int i = 0; first.proportion && first.exhaust && i < L->nmix; i++) {
        first.proportion[i] = L->mix_src[i].proportion;
        first.exhaust[i] = L->mix_src[i].exhaust;
      }
      st.mix_changes = &first;
      st.nmix_changes = 1;
      if (!first.proportion || !first.exhaust)
        rc = ferry__oom(err, -1,
                        (size_t)L->nmix * (sizeof(double) + sizeof(int)),
                        "the mix of %d sources in the state of dataset %s on "
                        "rank 0",
                        L->nmix, L->m.spec);
    }
    if (!rc)
      rc = ferry__state_encode(&st, buf, len, err);
    free(first.proportion);
    free(first.exhaust);
  } else if (rc != FERRY_ENOMEM) /* err names the bytes of an ENOMEM */
    ferry__seterr(err, rc,
                  "rank 0: cannot read the plan-shaping options for the "
                  "state of dataset %s",
                  L->m.spec);
  st.mix_changes = NULL;
  st.nmix_changes = 0;
  st.dataset = NULL; /* borrowed */
  ferry__state_free(&st);
  return rc;
}

/* Broadcast rank 0's bytes (*buf, *len) to every rank; the others get a
 * malloc'd copy (util/agree.c).  COLLECTIVE; agreed. */
static int bcast_bytes(ferry_loader *L, char **buf, size_t *len,
                       ferry__err *err) {
  void *p = *buf;
  int rc = ferry__bcast_blob(L->comm, L->rank, 0, &p, len, "the state", err);
  *buf = p;
  return ferry__agree(L->comm, L->rank, rc, err);
}

/* The save, to a file (path) or to memory (out, outlen: every rank gets
 * the bytes). */
static int state_save(ferry_loader *L, const char *what, const char *path,
                      char **out, size_t *outlen) {
  ferry__err err = {0};
  epoch_state *ep = L->ep;
  int rc = 0;
  if (out)
    *out = NULL, *outlen = 0;
  rc = L->peer_rc ? ferry__peer_gone(L, what, &err)
                  : ferry__vote(L, FERRY__VOTE_STATE_SAVE, 0, 0, NULL, &err);
  if (rc)
    return ferry__loader_fail(L, &err);
  if (!path && !out)
    rc = ferry__seterr_on(&err, L->rank, FERRY_EINVAL, "%s: no %s", what,
                          outlen ? "buffer" : "path");
  else if (!ep)
    rc = ferry__seterr(&err, FERRY_ESTATE,
                       "%s before ferry_set_epoch or "
                       "ferry_state_load: there is no position to save",
                       what);
  else if (ep->failed)
    rc = ferry__seterr(&err, FERRY_ESTATE,
                       "%s after the epoch failed: the failed "
                       "batch was not served; save before it or restart the "
                       "epoch",
                       what);
  rc = ferry__agree(L->comm, L->rank, rc, &err);
  long long pos = 0, lo = 0, hi = 0, served = 0, total = 0;
  if (!rc) {
    const ferry__rank_plan *p = &ep->plan;
    pos = ep->consumed;
    served =
        ferry__plan_real_before(p, ferry__plan_batch_start(p, ep->consumed)) -
        ferry__plan_real_before(
            p,
            ferry__plan_batch_start(p, 0)); /* a
                                             * bucketed epoch resumed in a
                                             * bucket: its head served before */
    if (MPI_Allreduce(&pos, &lo, 1, MPI_LONG_LONG, MPI_MIN, L->comm) ||
        MPI_Allreduce(&pos, &hi, 1, MPI_LONG_LONG, MPI_MAX, L->comm) ||
        MPI_Allreduce(&served, &total, 1, MPI_LONG_LONG, MPI_SUM, L->comm))
      rc = ferry__seterr_on(&err, L->rank, FERRY_EMPI, "MPI_Allreduce failed");
    else if (lo != hi)
      rc = ferry__seterr(&err, FERRY_EMISMATCH,
                         "ranks called %s after different "
                         "numbers of batches (%lld to %lld in epoch %lld): "
                         "save at the same point on every rank",
                         what, lo, hi, (long long)ep->epoch);
  }
  /* Rank 0 encodes (and writes), after every rank reached this point (the
   * agreement above is the barrier). */
  char *buf = NULL;
  size_t len = 0;
  /* max_tokens: each rank's served positions (batches differ in size) */
  int64_t *served_all = NULL;
  if (!rc && L->opts->max_tokens) {
    int64_t mine = ferry__plan_batch_start(&ep->plan, ep->consumed);
    if (L->rank == 0 &&
        !(served_all = malloc((size_t)L->size * sizeof *served_all)))
      rc = ferry__oom(&err, 0, (size_t)L->size * sizeof *served_all,
                      "the counts of %d ranks", L->size);
    rc = ferry__agree(L->comm, L->rank, rc, &err);
    if (!rc && MPI_Gather(&mine, 1, MPI_INT64_T, served_all, 1, MPI_INT64_T, 0,
                          L->comm) != MPI_SUCCESS)
      rc = ferry__seterr_on(&err, L->rank, FERRY_EMPI, "MPI_Gather failed");
  }
  if (!rc && L->rank == 0) {
    rc = state_encode_pos(L, pos, total, served_all, &buf, &len, &err);
    if (!rc && path)
      rc = ferry__state_write_file(path, buf, len, &err);
  }
  free(served_all);
  rc = ferry__agree(L->comm, L->rank, rc, &err);
  if (!rc && out)
    rc = bcast_bytes(L, &buf, &len, &err);
  if (rc) {
    free(buf);
    return ferry__loader_fail(L, &err);
  }
  if (out)
    *out = buf, *outlen = len;
  else
    free(buf);
  L->ckpt_agreed = 0; /* the request is answered */
  L->ckpt_asked = 0;
  ferry__signal_clear();
  return 0;
}

int ferry_state_save(ferry_loader *L, const char *path) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_save: loader is NULL");
  return state_save(L, "ferry_state_save", path && *path ? path : NULL, NULL,
                    NULL);
}

int ferry_state_save_buffer(ferry_loader *L, void **buf, size_t *len) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_save_buffer: loader is NULL");
  if (!buf || !len) /* every rank passes the same kind of argument */
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_save_buffer: buf or len is NULL");
  char *out = NULL;
  int rc = state_save(L, "ferry_state_save_buffer", NULL, &out, len);
  *buf = out;
  return rc;
}

/* chunk_samples=0 (auto) depends on the world size (plan.h): a state saved
 * on another number of ranks resolved it to another size, which this loader
 * adopts (*adopt) so that the resumed plan cuts the same chunks.  1 when
 * option NAME's saved value is such a size. */
static int auto_chunks(const ferry_loader *L, const char *name,
                       const char *saved, int64_t *adopt) {
  if (strcmp(name, "chunk_samples") != 0 || L->opts->chunk_samples != 0)
    return 0;
  char *end = NULL;
  long long v = strtoll(saved, &end, 10);
  if (end == saved || *end != '\0' || v < 1)
    return 0;
  *adopt = (int64_t)v;
  return 1;
}

/* Cut the chunks again with the chunk_samples a state recorded (see
 * auto_chunks).  LOCAL; the same result on every rank but ENOMEM. */
static int adopt_chunks(ferry_loader *L, int64_t cs, ferry__err *err) {
  ferry__chunk_index ci;
  int rc = ferry__chunk_index_make(&L->m, cs, &ci);
  if (rc)
    return ferry__oom(err, L->rank, (size_t)(L->m.nparts + 1) * sizeof(int64_t),
                      "dataset %s: the chunk index of %lld parts", L->m.spec,
                      (long long)L->m.nparts);
  ferry__chunk_index_free(&L->chunks);
  L->chunks = ci;
  L->nchunks = ci.nchunks;
  L->chunk_samples = cs;
  snprintf(L->chunk_why, sizeof L->chunk_why,
           "auto, kept from the state loaded: %lld rows", (long long)cs);
  ferry__budget_compute(L, NULL);
  return 0;
}

/* Does the decoded state belong to this loader?  The same answer on every
 * rank: the bytes and the loader's inputs are the same everywhere. */
static int state_check(const ferry_loader *L, const ferry__state *st,
                       const char *path, int64_t *adopt, int *newmix,
                       ferry__err *err) {
  *newmix = 0;
  uint64_t sources = ferry__mix_sources_hash(L);
  /* a state saved before hash version 3 (the notes in the hash) holds the
   * version 2 hash of the same data (core/manifest.c) */
  int same = st->dataset_hash == L->m.hash ||
             st->dataset_hash == ferry__manifest_hash_v2(&L->m);
  if (!same && sources &&
      st->mix_sources == sources) { /* the same sources, another mix */
    if (L->opts->mix_resume != FERRY__MIX_RESUME_NEW)
      return ferry__seterr(err, FERRY_EMISMATCH,
                           "state file %s was saved with other proportions "
                           "or exhaustion rules for the same mix sources; "
                           "resume with the saved mix, or set "
                           "mix_resume=new_mix to apply this loader's from "
                           "the saved position on (the change is recorded "
                           "in the next state)",
                           path);
    *newmix = 1;
  } else if (!same)
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "state file %s was saved for dataset '%s' (%lld "
                         "samples, manifest hash %016llx); this loader reads "
                         "'%s' (%lld samples, manifest hash %016llx)",
                         path, st->dataset, (long long)st->num_samples,
                         (unsigned long long)st->dataset_hash, L->m.spec,
                         (long long)L->m.num_samples,
                         (unsigned long long)L->m.hash);
  ferry__state mine;
  memset(&mine, 0, sizeof mine);
  int rc = state_options(L, &mine, L->rank, err);
  if (rc) {
    ferry__state_free(&mine);
    return rc == FERRY_ENOMEM
               ? rc
               : ferry__seterr_on(err, L->rank, rc,
                                  "cannot read the plan-shaping options of "
                                  "dataset %s",
                                  L->m.spec);
  }
  for (int i = 0; !rc && i < mine.nopts; i++) {
    const char *saved = NULL;
    for (int j = 0; j < st->nopts; j++)
      if (strcmp(st->opt_name[j], mine.opt_name[i]) == 0)
        saved = st->opt_value[j];
    if (!saved && !strcmp(mine.opt_name[i], "exchange") &&
        !strcmp(mine.opt_value[i], "1"))
      continue; /* saved before the option existed: its default then */
    if (!saved &&
        (!strcmp(mine.opt_name[i], "max_tokens") ||
         !strcmp(mine.opt_name[i], "bucket_window")) &&
        !strcmp(mine.opt_value[i], "0"))
      continue; /* the same: saved before max_tokens existed */
    if (*newmix && !strcmp(mine.opt_name[i], "mix_exhaust"))
      continue; /* part of the new mix */
    if (!saved)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s does not record option '%s'", path,
                         mine.opt_name[i]);
    else if (strcmp(saved, mine.opt_value[i]) != 0 &&
             !auto_chunks(L, mine.opt_name[i], saved, adopt))
      rc = ferry__seterr(err, FERRY_EMISMATCH,
                         "state file %s was saved with option '%s' = '%s', "
                         "this loader has '%s'; a resume must keep every "
                         "option that shapes the plan (batch_size, seed, "
                         "shuffle, block_size, shuffle_buffer, partition, "
                         "tail, chunk_samples, vars, max_chunks, fraction, "
                         "exchange, max_tokens, bucket_window); "
                         "the number of ranks may change",
                         path, mine.opt_name[i], saved, mine.opt_value[i]);
  }
  ferry__state_free(&mine);
  return rc;
}

/* The load of rank 0's bytes (buf, len; owned here, freed), NAME the file
 * or "buffer" for messages.  COLLECTIVE. */
static int state_load(ferry_loader *L, const char *name, char *buf, size_t len,
                      int rc, ferry__err *err) {
  ferry__state st;
  memset(&st, 0, sizeof st);
  int64_t adopt = 0;
  int vrc = L->peer_rc
                ? ferry__peer_gone(L, "ferry_state_load", err)
                : ferry__vote(L, FERRY__VOTE_STATE_LOAD, 0, 0, NULL, err);
  if (vrc) {
    free(buf);
    return ferry__loader_fail(L, err);
  }
  rc = ferry__agree(L->comm, L->rank, rc, err);
  if (!rc) {
    rc = bcast_bytes(L, &buf, &len, err);
    if (!rc)
      rc = ferry__state_decode(buf, len, name, &st, err);
    int newmix = 0;
    if (!rc)
      rc = state_check(L, &st, name, &adopt, &newmix, err);
    if (!rc && L->sampling == FERRY__DRAW_MIX)
      rc = ferry__mix_resume_changes(L, &st, newmix, err);
    if (!rc && adopt > 0 && adopt != L->chunk_samples)
      rc = adopt_chunks(L, adopt, err);
    rc = ferry__agree(L->comm, L->rank, rc, err);
  }
  free(buf);
  if (rc) {
    ferry__state_free(&st);
    ferry__epoch_stop(L); /* collective, like the calls above */
    return ferry__loader_fail(L, err);
  }
  rc = ferry__epoch_begin(L, st.epoch, st.steps, st.nsteps, st.batches,
                          st.samples_served);
  if (rc) {
    char msg[FERRY__MSG_MAX];
    snprintf(msg, sizeof msg, "state file %s: %.900s", name, L->errmsg);
    snprintf(L->errmsg, sizeof L->errmsg, "%s", msg);
    ferry__set_thread_error(L->errmsg);
  }
  ferry__state_free(&st);
  return rc;
}

int ferry_state_load(ferry_loader *L, const char *path) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_load: loader is NULL");
  ferry__err err = {0};
  int rc = 0;
  char *buf = NULL;
  size_t len = 0;
  if (!path || !*path)
    rc = ferry__seterr_on(&err, L->rank, FERRY_EINVAL,
                          "ferry_state_load: no path");
  else if (L->rank == 0)
    rc = ferry__state_read_file(path, &buf, &len, &err);
  return state_load(L, path ? path : "", buf, len, rc, &err);
}

int ferry_state_load_buffer(ferry_loader *L, const void *buf, size_t len) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_state_load_buffer: loader is NULL");
  ferry__err err = {0};
  int rc = 0;
  char *copy = NULL;
  if (L->rank == 0) {
    if (!buf)
      rc = ferry__seterr_on(&err, L->rank, FERRY_EINVAL,
                            "ferry_state_load_buffer: buf is NULL on rank 0");
    else if (!(copy = malloc(len ? len : 1)))
      rc = ferry__oom(&err, L->rank, len ? len : 1,
                      "a copy of the state buffer (dataset %s)", L->m.spec);
    else
      memcpy(copy, buf, len);
  }
  return state_load(L, "(buffer)", copy, rc ? 0 : len, rc, &err);
}
