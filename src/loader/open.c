/*
 * open.c - ferry_open and ferry_close: the manifest from rank 0, the
 * cross-rank check of dataset and options, the thread count, the device
 * choice and the host and device rings.  Every step ends with ferry__agree,
 * so a failure on any rank is the same failure on all of them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "dataset/mix.h"
#include "loader/cache.h"
#include "loader/loader.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_global(ferry_loader *L, ferry__err *err);

/* ---- Open and close ------------------------------------------------------ */

static void loader_free(ferry_loader *L) {
  if (!L)
    return;
  if (L->ckpt_sig)
    ferry__signal_release(L->ckpt_sig);
  ferry__cache_close(L->cache); /* collective: every rank's reads are over */
  L->cache = NULL;
  if (L->gpu) {
    ferry__err ignore;
    ferry__gpu_sync(L->gpu, &ignore);
  }
  ferry__ring_free(L);
  for (int64_t i = 0; L->maps && i < L->m.nparts * L->m.nvars; i++) {
    ferry__unmap(&L->maps[i]);
    if (L->map_ready)
      free(L->map_ready[i]);
  }
  free(L->maps);
  free(L->map_ready);
  ferry__gpu_close(L->gpu);
  L->gpu = NULL;
  if (L->dview) {
    ferry__manifest_free(L->dview);
    free(L->dview);
    L->dview = NULL;
  }
  ferry__buf_drain(L, 0);
  pthread_mutex_destroy(&L->pool_mu);
  ferry__chunk_index_free(&L->chunks);
  ferry__sampling_free(L);
  free(L->var_prefix);
  free(L->ragged_cap);
  free(L->slot_cap);
  free(L->offs_of);
  free(L->rstat);
  free(L->pad_elem);
  free(L->pack_comp);
  ferry__manifest_free(&L->m);
  ferry_options_free(L->opts);
  free(L->vote_buf);
  if (L->io_comm != MPI_COMM_NULL)
    MPI_Comm_free(&L->io_comm);
  if (L->xcomm != MPI_COMM_NULL)
    MPI_Comm_free(&L->xcomm);
  if (L->comm != MPI_COMM_NULL)
    MPI_Comm_free(&L->comm);
  pthread_mutex_destroy(&L->stats_mu);
  free(L);
}

/* The backend, and the read buffers' layout: each variable's place in an
 * extent's rows (a variable the workers make, loader/pack.c, takes
 * none). */
static int open_layout(ferry_loader *L, ferry__err *err) {
  L->be = ferry__pack_is(&L->m)     ? &ferry__pack_backend
          : ferry__sparse_is(&L->m) ? &ferry__sparse_backend
          : ferry__decode_is(&L->m) ? &ferry__decode_backend
                                    : ferry__backend_find(L->m.backend);
  free(L->var_prefix); /* made again once io=auto is resolved (packed rows:
                        * with io=mmap the workers copy the tokens) */
  L->row_total = L->row_all = L->row_sized = 0;
  L->var_prefix = calloc((size_t)L->m.nvars + 1, sizeof *L->var_prefix);
  if (!L->be)
    return ferry__seterr_on(err, L->rank, FERRY_ENOTSUP,
                            "backend '%s' is not built in", L->m.backend);
  if (!L->var_prefix)
    return ferry__oom(err, L->rank,
                      ((size_t)L->m.nvars + 1) * sizeof *L->var_prefix,
                      "the %d variables of dataset %s", L->m.nvars, L->m.spec);
  int rc = ferry__pack_computed(L, err);
  for (int v = 0; !rc && v < L->m.nvars; v++) {
    L->var_prefix[v] = L->row_total;
    if (!(L->pack_comp && L->pack_comp[v]))
      L->row_total += L->m.vars[v].row_bytes;
    if (!(L->pack_comp && L->pack_comp[v] == 1))
      L->row_sized += L->m.vars[v].row_bytes;
    L->row_all += L->m.vars[v].row_bytes;
  }
  return rc;
}

/* Rank 0 builds the manifest (the parts described by every rank:
 * dataset/pscan.c) or loads a saved one; everyone receives it.
 * COLLECTIVE. */
static int share_manifest(ferry_loader *L, const char *dataset,
                          ferry__err *err) {
  int rc = 0;
  /* with pack, vars selects among the packed outputs (loader/pack.c): the
   * corpus gives its token variable, pack_var or all */
  const char *vars =
      L->opts->pack != FERRY__PACK_NONE ? L->opts->pack_var : L->opts->vars;
  if (!L->opts->manifest) /* every rank describes a share (dataset/pscan.c) */
    rc =
        ferry__manifest_scan_ranks(L->comm, dataset, vars, L->opts, &L->m, err);
  else if (L->rank == 0) {
    rc = ferry__manifest_load_json(L->opts->manifest, vars, &L->m, err);
    /* A manifest left in FERRY_MANIFEST must not silently serve another
     * dataset's data. */
    if (!rc && strcmp(L->m.spec ? L->m.spec : "", dataset) != 0)
      rc =
          ferry__seterr(err, FERRY_EMISMATCH,
                        "manifest %s describes dataset '%s', not '%s' "
                        "(save a manifest for this dataset with ferry "
                        "info --save-manifest, or unset the manifest "
                        "option)",
                        L->opts->manifest, L->m.spec ? L->m.spec : "", dataset);
  }
  /* every rank, rank 0 too, unpacks what rank 0 sends (dataset/share.c) */
  return ferry__manifest_share(L->comm, L->rank, rc, &L->m, dataset, err);
}

/*
 * threads=0: the CPUs this rank may run on, shared with the other ranks of
 * its node when the mask is the whole machine (an unbound launch), minus one
 * for the I/O thread; at least 1, at most 8.  Local: the node's size comes
 * from open_device's split.
 */
static int resolve_threads(ferry_loader *L, ferry__err *err) {
  if (L->opts->threads > 0) {
    L->nthreads = (int)L->opts->threads;
    return 0;
  }
  (void)err;
  int local = L->local_size > 0 ? L->local_size : 1; /* open_device's split */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  long cpus = online > 0 ? online : 1;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
#endif
  if (cpus >= online && local > 1) /* unbound: the node is shared */
    cpus = cpus / local > 0 ? cpus / local : 1;
  long n = cpus - 1;
  L->nthreads = (int)(n < 1 ? 1 : n > 8 ? 8 : n);
  return 0;
}

/* Every rank must pass the same dataset and options; rc is this rank's
 * result so far (its options copy), agreed on in the same round (one
 * MPI_Allreduce on success: ferry__agree_check).  COLLECTIVE. */
static int check_same_inputs(ferry_loader *L, const char *dataset, int rc,
                             ferry__err *err) {
  int n = ferry__option_count() + 1, which = -1;
  uint64_t *v = calloc((size_t)n, sizeof *v);
  if (!rc && !v)
    rc = ferry__oom(err, L->rank, (size_t)n * sizeof *v,
                    "the hashes of %d options (dataset %s)", n,
                    dataset ? dataset : "?");
  if (!rc) {
    v[0] = ferry__fnv1a(FERRY__FNV_INIT, dataset, strlen(dataset));
    for (int i = 1; i < n; i++)
      v[i] = ferry__option_hash(L->opts, i - 1);
  }
  rc = ferry__agree_check(L->comm, L->rank, rc, v, n, &which, NULL, NULL, err);
  free(v);
  if (rc != FERRY_EMISMATCH || which < 0) /* not a mismatch found here */
    return rc;
  if (which == 0)
    ferry__seterr(err, FERRY_EMISMATCH,
                  "ranks were given different datasets (rank %d has "
                  "'%s')",
                  L->rank, dataset);
  else
    ferry__seterr(err, FERRY_EMISMATCH,
                  "ranks were given different values of option '%s'",
                  ferry_option_info_get(which - 1)->name);
  /* Every rank saw the mismatch; the message must be the same everywhere:
   * rank 0's wording wins. */
  return ferry__agree_share(L->comm, L->rank, 0, rc, err);
}

/* Where batches go: every rank decides (cuda.c), then they agree.  With
 * device=cuda a rank without a GPU fails every rank; with device=auto,
 * batches go to the GPU only if every rank has one, and with verbose=1
 * rank 0 says once per process why they stay in host memory.  COLLECTIVE. */
static int open_device(ferry_loader *L, ferry__err *err) {
  MPI_Comm node;
  int rc = 0;
  if (MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank, MPI_INFO_NULL,
                          &node) != MPI_SUCCESS)
    return ferry__seterr_on(err, L->rank, FERRY_EMPI,
                            "MPI_Comm_split_type failed");
  MPI_Comm_rank(node, &L->local_rank);
  MPI_Comm_size(node, &L->local_size);
  MPI_Comm_free(&node);
  rc = ferry__gpu_open(L->opts, L->rank, L->local_rank, &L->gpu, L->dev_how,
                       sizeof L->dev_how, err);
  /* the outcome and "does every rank have a GPU?" in one round */
  uint64_t mine = L->gpu != NULL, lo = 0;
  int which = -1;
  rc = ferry__agree_check(L->comm, L->rank, rc, &mine, 1, &which, &lo, NULL,
                          err);
  if (rc && which < 0) /* a failure, not "some rank has no GPU" */
    return rc;
  int all = lo != 0;
  if (mine && !all) {
    ferry__gpu_close(L->gpu);
    L->gpu = NULL;
    snprintf(L->dev_how, sizeof L->dev_how,
             "host memory: device=auto and some rank has no usable GPU");
  }
  /* Silent by default (a CPU node is not news); verbose=1 says once per
   * process why device=auto stays on the host, verbose=2 says at every
   * open where batches go and which GPU libraries were loaded. */
  static int said;
  if (L->rank == 0 && L->opts->verbose >= 2) {
    fprintf(stderr, "ferry: note: batches %s %s\n", all ? "go to" : "stay in",
            L->dev_how);
    fprintf(stderr, "ferry: note: %s\n", ferry__gpu_library_status());
  } else if (!all && L->opts->device == FERRY__DEV_AUTO && L->rank == 0 &&
             !said && L->opts->verbose >= 1 && ferry__gpu_visible() >= 0) {
    said = 1;
    fprintf(stderr, "ferry: note: batches stay in %s\n", L->dev_how);
  }
  return 0;
}

/* The chunk size (chunk_samples, or the automatic rule and why) and the
 * chunk index.  LOCAL: the same on every rank but ENOMEM. */
static int make_chunks(ferry_loader *L, ferry__err *err) {
  L->chunk_samples = L->opts->chunk_samples;
  if (L->chunk_samples == 0) {
    ferry__plan_params pp;
    ferry__plan_params_of(L, 0, &pp);
    L->chunk_samples = ferry__auto_chunk_samples(
        L->dview ? L->dview : &L->m, L->dview ? L->dview_mean : L->sample_mean,
        &pp, L->chunk_why, sizeof L->chunk_why);
  } else {
    snprintf(L->chunk_why, sizeof L->chunk_why, "chunk_samples=%lld",
             (long long)L->chunk_samples);
  }
  int rc = ferry__chunk_index_make(&L->m, L->chunk_samples, &L->chunks);
  L->nchunks = L->chunks.nchunks;
  if (rc)
    ferry__oom(err, L->rank, (size_t)(L->m.nparts + 1) * sizeof(int64_t),
               "dataset %s: the chunk index of %lld parts", L->m.spec,
               (long long)L->m.nparts);
  return rc;
}

/* What ferry_open needs before it allocates anything: MPI initialised and
 * not finalised, and the backend registry sound (its tables are the same on
 * every rank: a local check).  0, or the error (set for ferry_last_error). */
static int open_preflight(void) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  if (inited)
    MPI_Finalized(&finalized);
  if (!inited || finalized)
    return ferry__seterr(NULL, FERRY_EMPI,
                         "ferry_open: MPI is not initialised (call "
                         "MPI_Init_thread with MPI_THREAD_MULTIPLE first)");
  ferry__err err = {0};
  if (ferry__backend_registry_check(&err) != 0)
    return ferry__seterr(NULL, err.code, "%s", err.msg);
  return 0;
}

/* Ragged variables (ragged.c), then the token budget that caps their
 * slots (tokens.c), then the check of int32 offsets against those caps. */
static int ragged_setup(ferry_loader *L, ferry__err *err) {
  int rc = ferry__ragged_open(L, err);
  if (!rc)
    rc = ferry__tokens_open(L, err);
  return rc ? rc : ferry__ragged_int32_check(L, err);
}

int ferry_open(MPI_Comm comm, const char *dataset, const ferry_options *opts,
               ferry_loader **out) {
  if (!out)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_open: out is NULL");
  *out = NULL;
  int level = 0, rc0 = open_preflight();
  if (rc0)
    return rc0;
  ferry__err err = {0};
  ferry_loader *L = calloc(1, sizeof *L);
  if (!L)
    return ferry__oom(NULL, -1, sizeof *L, "ferry_open's loader");
  L->comm = L->io_comm = L->xcomm = MPI_COMM_NULL;
  pthread_mutex_init(&L->stats_mu, NULL);
  pthread_mutex_init(&L->pool_mu, NULL);
  L->vote_buf = calloc(2 * FERRY__VOTE_N, sizeof *L->vote_buf);
  if (!L->vote_buf) {
    loader_free(L);
    return ferry__oom(NULL, -1, 2 * FERRY__VOTE_N * sizeof *L->vote_buf,
                      "ferry_open's votes");
  }
  if (MPI_Comm_dup(comm, &L->comm) != MPI_SUCCESS) {
    loader_free(L);
    return ferry__seterr(NULL, FERRY_EMPI, "ferry_open: MPI_Comm_dup failed");
  }
  if (MPI_Comm_dup(comm, &L->io_comm) != MPI_SUCCESS) {
    loader_free(L);
    return ferry__seterr(NULL, FERRY_EMPI, "ferry_open: MPI_Comm_dup failed");
  }
  MPI_Comm_rank(L->comm, &L->rank);
  MPI_Comm_size(L->comm, &L->size);

  int rc = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    rc = ferry__seterr(&err, FERRY_EMPI,
                       "ferry needs MPI_THREAD_MULTIPLE (its I/O thread calls "
                       "MPI-IO): initialise MPI with MPI_Init_thread");
  else if (opts)
    rc = ferry_options_copy(opts, &L->opts);
  else
    rc = ferry_options_create(&L->opts);
  if (rc && !err.msg[0])
    ferry__seterr(&err, rc, "%s", ferry__thread_error());
  /* the mix option names the dataset when none (or "mix") is given: the
   * mix string is the dataset string from here on (dataset/mix.c) */
  char *mix = NULL;
  if (!rc && ferry__mix_dataset(dataset, L->opts, &mix) < 0)
    rc = ferry__oom(&err, -1, ferry__mix_dataset_bytes(dataset, L->opts),
                    "the mix string of dataset %s", dataset ? dataset : "mix");
  if (mix)
    dataset = mix;
  if (!rc && (!dataset || !*dataset))
    rc = ferry__seterr(&err, FERRY_EINVAL, "ferry_open: no dataset given");
  rc = check_same_inputs(L, dataset, rc, &err);
  if (!rc)
    rc = share_manifest(L, dataset, &err);
  /* where batches go first: sparse=dense makes its rows on the device
   * when they go to one (sparse.c) */
  if (!rc)
    rc = open_device(L, &err);
  if (!rc)
    rc = ferry__pack_wrap(L, &err);
  if (!rc)
    rc = ferry__sparse_wrap(L, &err);
  if (!rc)
    rc = ferry__decode_wrap(L, &err);
  if (!rc) {
    rc = open_layout(L, &err);
    if (!rc)
      rc = check_global(L, &err);
    if (!rc)
      rc = ferry__io_resolve(L, &err);
    if (!rc && ferry__pack_is(&L->m))
      rc = open_layout(L, &err);
    if (!rc && L->opts->io == FERRY__IO_COLLECTIVE &&
        !(L->be->caps & FERRY__CAP_COLLECTIVE))
      rc = ferry__seterr(&err, FERRY_ENOTSUP,
                         "option 'io': backend '%s' has no collective reads",
                         L->be->name);
    if (!rc)
      rc = resolve_threads(L, &err);
    if (!rc)
      rc = ragged_setup(L, &err);
    if (!rc)
      ferry__sparse_plan_basis(L);
    if (!rc)
      rc = make_chunks(L, &err);
    if (!rc)
      ferry__ragged_bound(L);
    if (!rc) {
      ferry__budget_compute(L, NULL);
      rc = ferry__ring_alloc(L, &err);
    }
    if (!rc && L->opts->checkpoint_signal != FERRY__SIG_NONE) {
      static const int signo[] = {0,      SIGUSR1, SIGUSR2, SIGTERM,
                                  SIGINT, SIGHUP,  SIGXCPU};
      int sig = signo[L->opts->checkpoint_signal];
      rc = ferry__signal_install(sig, &err);
      if (!rc)
        L->ckpt_sig = sig;
    }
    rc = ferry__agree(L->comm, L->rank, rc, &err);
    if (!rc) /* collective: rank 0 reads the weights and broadcasts them */
      rc = ferry__agree(L->comm, L->rank, ferry__sampling_open(L, &err), &err);
    if (!rc) /* collective, agreed inside */
      rc = ferry__cache_open(L, &err);
    if (!rc && (L->sampling || L->cache)) /* weights, draws, the cache */
      ferry__budget_compute(L, NULL);
  }
  free(mix);
  if (rc) {
    char text[FERRY__MSG_MAX];
    ferry__err_text(&err, text, sizeof text);
    loader_free(L);
    ferry__set_thread_error(text);
    return rc;
  }
  *out = L;
  return 0;
}

/* shuffle=global and exchange: what the wiring supports (issue 16), and
 * the exchange's own communicator, used by the I/O thread only (a dup,
 * made here: MPI_Comm_dup is collective, and every rank has the same
 * options, checked above). */
static int check_global(ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  if (o->shuffle != FERRY__SHUFFLE_GLOBAL) {
    if (o->exchange != 1.0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'exchange' = %g applies only with "
                           "shuffle=global (shuffle is '%s')",
                           o->exchange,
                           o->shuffle == FERRY__SHUFFLE_NONE    ? "none"
                           : o->shuffle == FERRY__SHUFFLE_BLOCK ? "block"
                                                                : "chunks");
    return 0;
  }
  if (o->io == FERRY__IO_MMAP)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option 'io' = 'mmap' with shuffle=global: global "
                         "shuffle reads with io=independent or collective");
  if (L->row_total > (size_t)INT_MAX)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "shuffle=global: a sample of %zu bytes exceeds the "
                         "exchange's limit of %d bytes",
                         L->row_total, INT_MAX);
  if (MPI_Comm_dup(L->comm, &L->xcomm) != MPI_SUCCESS)
    return ferry__seterr_on(err, L->rank, FERRY_EMPI,
                            "ferry_open: MPI_Comm_dup failed");
  return 0;
}

/* After a vote that timed out, MPI still owns the vote's buffers and the
 * communicator, and the threads may be blocked in a collective read: stop
 * what can be stopped and leave the rest allocated (a job that lost a rank
 * is ending; freeing under MPI or joining a stuck thread would crash or
 * hang it). */
static void loader_abandon(ferry_loader *L) {
  epoch_state *ep = L->ep;
  if (ep) {
    pthread_mutex_lock(&ep->mu);
    ep->stop = 1;
    if (ep->round_target < 0)
      ep->round_target = 0;
    pthread_cond_broadcast(&ep->cv_io);
    pthread_cond_broadcast(&ep->cv_work);
    pthread_cond_broadcast(&ep->cv_ready);
    pthread_mutex_unlock(&ep->mu);
  }
  if (L->ckpt_sig)
    ferry__signal_release(L->ckpt_sig);
  L->ckpt_sig = 0;
}

/* COLLECTIVE: the close joins the loader's vote first, so a rank that
 * closes while the others still call ferry_next makes every rank fail with
 * FERRY_EPEER instead of leaving them waiting. */
int ferry_close(ferry_loader *L) {
  if (!L)
    return 0;
  ferry__err err = {0};
  int rc = 0;
  if (!L->peer_rc)
    rc = ferry__vote(L, FERRY__VOTE_CLOSE, 0, 0, NULL, &err);
  if (L->vote_pending) {
    loader_abandon(L);
  } else {
    int rc2 = ferry__epoch_stop(L);
    loader_free(L);
    if (!rc && rc2)
      return rc2;
  }
  if (rc) {
    char text[FERRY__MSG_MAX];
    ferry__err_text(&err, text, sizeof text);
    ferry__set_thread_error(text);
  }
  return rc;
}
