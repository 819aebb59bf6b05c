/*
 * loader/sampling.c - weighted, class-balanced and mixed sampling in the
 * loader (docs/sampling.md).  At ferry_open: which mode the options and the
 * manifest ask for, the combinations refused (each the same error on every
 * rank: the options and the manifest are already agreed), and the weights,
 * read once by rank 0 and broadcast (loader/weights.c), or the mix's
 * sources, which travel in the manifest (dataset/mix.c).  At each epoch: the
 * epoch's sequence of draws (plan/draw.c, a pure function every rank
 * computes, checked equal by checksum) and this rank's plan of the stretch
 * left to serve -- after a checkpoint, from the position the ranks of every
 * earlier step reached, whatever their number: the sequence does not
 * depend on it.  The pipeline then reads and assembles the plan as any
 * other (its windows' slots come from ferry__draw_window_slots).
 */
#include "config.h"
#include "dataset/mix.h"
#include "loader/loader.h"

#include <stdlib.h>
#include <string.h>

#define FERRY__DRAW_BLOCK_BYTES ((size_t)256 << 10)

static int refuse(const ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  const char *what = L->sampling == FERRY__DRAW_MIX ? "a mix"
                     : (o->balance && *o->balance)  ? "balance"
                                                    : "weights";
  if (o->weights && *o->weights && o->balance && *o->balance)
    return ferry__seterr(err, FERRY_EINVAL,
                         "options 'weights' and 'balance' exclude each other "
                         "(balance makes the weights from the labels)");
  if (L->sampling == FERRY__DRAW_MIX &&
      ((o->weights && *o->weights) || (o->balance && *o->balance)))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "a mix with weights or balance is not supported: "
                         "mix sources are drawn uniformly, in proportion");
  if (o->shuffle == FERRY__SHUFFLE_GLOBAL)
    return ferry__seterr(err, FERRY_EINVAL,
                         "%s with shuffle=global: sampling draws its own "
                         "order (use shuffle=chunks, the default)",
                         what);
  if (o->io == FERRY__IO_COLLECTIVE)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s with io=collective: sampling reads with "
                         "io=independent, mmap or auto",
                         what);
  if (o->max_chunks || o->fraction != 1.0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "%s with max_chunks or fraction: use num_draws to "
                         "serve fewer draws",
                         what);
  return 0;
}

static int mode_of(const ferry_loader *L) {
  const ferry_options *o = L->opts;
  if (ferry__mix_of(&L->m))
    return FERRY__DRAW_MIX;
  if ((o->weights && *o->weights) || (o->balance && *o->balance))
    return FERRY__DRAW_WEIGHTED;
  return 0;
}

int ferry__sampling_open(ferry_loader *L, ferry__err *err) {
  L->sampling = mode_of(L);
  const ferry_options *o = L->opts;
  if (!L->sampling) {
    if (o->num_draws || !o->replacement || o->draw_window || o->draw_block ||
        (o->balance_shares && *o->balance_shares))
      return ferry__seterr(err, FERRY_EINVAL,
                           "options num_draws, replacement, draw_window, "
                           "draw_block and balance_shares apply with weights, "
                           "balance or a mix only");
    return 0;
  }
  int rc = refuse(L, err);
  if (rc)
    return rc;
  /* long reads: at least 256 KiB of rows (64 KiB reads of a cold file
   * ran at a tenth of 256 KiB ones on the development VM) */
  /* a sample's mean bytes: a ragged variable's values counted (ragged.c) */
  size_t per = L->dview         ? L->dview_mean
               : L->sample_mean ? L->sample_mean
                                : L->row_sized;
  int64_t least =
      (int64_t)((FERRY__DRAW_BLOCK_BYTES + per - 1) / (per ? per : 1));
  L->draw_block = o->draw_block           ? o->draw_block
                  : o->block_size > least ? o->block_size
                                          : least;
  if (L->sampling == FERRY__DRAW_WEIGHTED)
    return ferry__weights_load(&L->m, o, L->comm, L->rank, &L->wts, err);
  ferry__mix_source *ms = NULL;
  int n = 0;
  rc = ferry__mix_sources(&L->m, &ms, &n, err);
  if (!rc && n > 0) {
    L->mix_src = calloc((size_t)n, sizeof *L->mix_src);
    if (!L->mix_src)
      rc = ferry__oom(err, L->rank, (size_t)n * sizeof *L->mix_src,
                      "dataset %s: the %d sources of the mix", L->m.spec, n);
    for (int i = 0; !rc && i < n; i++)
      L->mix_src[i] = (ferry__draw_source){ms[i].first, ms[i].n,
                                           ms[i].proportion, ms[i].exhaust};
    L->nmix = rc ? 0 : n;
  }
  free(ms);
  return rc;
}

void ferry__sampling_free(ferry_loader *L) {
  ferry__mix_changes_free(L->pending_mixch, L->npending_mixch);
  L->pending_mixch = NULL;
  L->npending_mixch = 0;
  ferry__weights_free(&L->wts);
  free(L->mix_src);
  L->mix_src = NULL;
  L->nmix = 0;
}

/* The draw parameters of epoch, the strata's global batch that of
 * first_world ranks (the epoch's first step). */
static ferry__draw_params draw_params_of(const ferry_loader *L, int64_t epoch,
                                         int first_world) {
  const ferry_options *o = L->opts;
  return (ferry__draw_params){
      .mode = L->sampling,
      .m = &L->m,
      .block = L->draw_block,
      .seed = o->seed,
      .epoch = epoch,
      .replacement = o->replacement,
      .num_draws = o->num_draws,
      .window = o->draw_window,
      .w = L->wts.w,
      .nsources = L->nmix,
      .sources = L->mix_src,
      .mix_by_batch = o->mix_by == FERRY__MIX_BY_BATCH,
      .global_batch = (o->max_tokens ? 1 : o->batch_size) * first_world,
      .shuffle_buffer = o->shuffle_buffer};
}

/* The draws served before this stretch: every earlier step's batches on
 * every rank of it. */
static int64_t served_before(const epoch_state *ep, int64_t B) {
  int64_t pos = 0;
  for (int i = 0; i < ep->nsteps; i++)
    pos += ep->steps[i].batches * ep->steps[i].world_size * B;
  return pos;
}

/* Every rank's sequence has the same checksum (inputs, generator).
 * COLLECTIVE. */
static int draw_check(ferry_loader *L, epoch_state *ep, int rc,
                      ferry__err *err) {
  uint64_t v[2] = {rc ? 0 : ferry__draw_checksum(ep->draw), L->wts.hash};
  int which = -1;
  rc = ferry__agree_check(L->comm, L->rank, rc, v, 2, &which, NULL, NULL, err);
  if (rc == FERRY_EMISMATCH && which >= 0)
    rc = ferry__seterr(
        err, FERRY_EMISMATCH, "ranks disagree on the %s of epoch %lld",
        which ? "sampling weights" : "sequence of draws", (long long)ep->epoch);
  if (!rc)
    ep->checksum = v[0];
  return rc;
}

/* The dataset and epoch before a plan's own message. */
static void name_epoch(const ferry_loader *L, int64_t epoch, int rc,
                       ferry__err *err) {
  char what[FERRY__MSG_MAX];
  memcpy(what, err->msg, sizeof what);
  what[sizeof what - 1] = '\0';
  ferry__seterr_on(err, L->rank, rc, "dataset %s, epoch %lld: %.900s",
                   L->m.spec, (long long)epoch, what);
}

/* Old rank r's served slots after an epoch saved over R0 ranks: [0,
 * ends[r]) but the nh[r] of hs[r] (bucketed), as draw positions of the old
 * cut at or after pos0, appended to *out (*n of them, *cap room). */
static int served_positions(const ferry__draw *d, const ferry__draw_cut *old,
                            int r, int64_t from, int64_t end, const int64_t *h,
                            int64_t nh, int64_t pos0, int64_t **out, int64_t *n,
                            int64_t *cap) {
  for (int64_t i = from, k = 0; i < end; i++) {
    while (k < nh && h[k] < i)
      k++;
    if (k < nh && h[k] == i)
      continue;
    int64_t x = ferry__draw_slot_pos(d, old, r, i);
    if (x < pos0 || x >= d->D) /* below: served by all; past D: a pad */
      continue;
    if (*n == *cap) {
      int64_t c = *cap ? 2 * *cap : 1024;
      int64_t *v = realloc(*out, (size_t)c * sizeof *v);
      if (!v)
        return FERRY_ENOMEM;
      *out = v;
      *cap = c;
    }
    (*out)[(*n)++] = x;
  }
  return 0;
}

/* Old rank r's first slot not served: its first hole, or its end. */
static int64_t first_unserved(const int64_t *ends, const int64_t *nh,
                              int64_t *const *hs, int r) {
  return nh[r] ? hs[r][0] : ends[r];
}

/* One step of a max_tokens epoch with sampling folded into the served
 * set: the step dealt the draws of `old` (from old->pos0, skipping its
 * holes) over old->P ranks, and rank r served its slots [0, ends[r]) but
 * hs[r].  Out: *pos0, the first position some rank of the step did not
 * serve (every one before it is served), and *holes, the served ones
 * after it (the old holes there and the step's), sorted, malloc'd. */
static int fold_step(const ferry_loader *L, const ferry__draw *d,
                     const ferry__draw_cut *old, const int64_t *ends,
                     const int64_t *nh, int64_t *const *hs, int64_t *pos0,
                     int64_t **holes, int64_t *nholes, ferry__err *err) {
  const int R = old->P;
  int rc = 0;
  for (int r = 0; !rc && r < R; r++) { /* a state's counts, bounded */
    int64_t nb = old->num_batches, n = old->last;
    int64_t mine = nb ? nb - 1 + (n * (r + 1) / R > n * r / R) : 0;
    if (ends[r] < 0 || ends[r] > mine)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "max_tokens: the state says rank %d of %d served "
                         "%lld draws of its step, which deals it %lld",
                         r, R, (long long)ends[r], (long long)mine);
  }
  int64_t u = INT64_MAX, p0 = d->D, n = 0, cap = 0;
  for (int r = 0; !rc && r < R; r++) {
    int64_t ur = first_unserved(ends, nh, hs, r);
    u = ur < u ? ur : u;
    int64_t x = ferry__draw_slot_pos(d, old, r, ur);
    if (ur < old->num_batches && x < p0)
      p0 = x;
  }
  *holes = NULL;
  for (int r = 0; !rc && r < R; r++)
    if (served_positions(d, old, r, u, ends[r], hs[r], nh[r], p0, holes, &n,
                         &cap))
      rc = FERRY_ENOMEM;
  for (int64_t k = 0; !rc && k < old->nholes; k++) /* the earlier steps' */
    if (old->holes[k] >= p0) {
      if (n == cap) {
        int64_t c = cap ? 2 * cap : 1024;
        int64_t *v = realloc(*holes, (size_t)c * sizeof *v);
        if (!v) {
          rc = FERRY_ENOMEM;
          break;
        }
        *holes = v;
        cap = c;
      }
      (*holes)[n++] = old->holes[k];
    }
  if (rc == FERRY_ENOMEM)
    rc = ferry__oom(err, L->rank, (size_t)cap * 2 * sizeof(int64_t),
                    "the draws %d ranks served", R);
  if (!rc && n > 1) /* (qsort of NULL, 0 is undefined) */
    qsort(*holes, (size_t)n, sizeof(int64_t), ferry__cmp_i64);
  *pos0 = p0;
  *nholes = n;
  return rc;
}

/* Step s of ep->steps: each rank's served slots of `cut` (the step's
 * deal) -- the state's counts, or with buckets (whose batches are not a
 * prefix) each rank's plan and cut made again (ferry__tokens_holes). */
static int step_served(ferry_loader *L, epoch_state *ep,
                       const ferry__plan_params *pp, int s,
                       const ferry__draw_cut *cut, int64_t *ends, int64_t *nh,
                       int64_t **hs, ferry__err *err) {
  const ferry__resume_step *st = &ep->steps[s];
  if (L->opts->bucket_window)
    return ferry__tokens_holes(L, NULL, NULL, ep->draw, cut, NULL, 0, pp,
                               st->world_size, st->batches, ends, nh, hs, err);
  if (!st->served)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "max_tokens: epoch %lld was saved over %d ranks "
                         "without each rank's count",
                         (long long)pp->epoch, st->world_size);
  for (int r = 0; r < st->world_size; r++)
    ends[r] = st->served[r];
  return 0;
}

/* The draws served by steps [0, n) of a max_tokens epoch with sampling,
 * folded one step at a time: *pos0 and ep->draw_holes (draw_nholes), the
 * base of the next deal (every position before pos0 served, and the
 * holes after it).  LOCAL: the same on every rank. */
static int fold_steps(ferry_loader *L, epoch_state *ep,
                      const ferry__plan_params *pp, int n, ferry__err *err) {
  int rc = 0;
  ep->draw_pos0 = 0;
  for (int s = 0; !rc && s < n; s++) {
    int R = ep->steps[s].world_size;
    ferry__draw_cut cut;
    rc = ferry__draw_cut_holes(ep->draw, ep->draw_pos0, 1, R, L->opts->tail,
                               ep->draw_holes, ep->draw_nholes, &cut, err);
    int64_t *ends = calloc((size_t)R, sizeof *ends);
    int64_t *nh = calloc((size_t)R, sizeof *nh);
    int64_t **hs = calloc((size_t)R, sizeof *hs), *holes = NULL, nholes = 0;
    if (!rc && (!ends || !nh || !hs))
      rc = ferry__oom(err, L->rank, (size_t)R * 24,
                      "the served draws of %d ranks", R);
    if (!rc)
      rc = step_served(L, ep, pp, s, &cut, ends, nh, hs, err);
    int64_t pos0 = 0;
    if (!rc)
      rc = fold_step(L, ep->draw, &cut, ends, nh, hs, &pos0, &holes, &nholes,
                     err);
    if (!rc) {
      free(ep->draw_holes);
      ep->draw_holes = holes;
      ep->draw_nholes = nholes;
      ep->draw_pos0 = pos0;
    } else {
      free(holes); /* a failed fold's partial list */
    }
    for (int r = 0; hs && r < R; r++)
      free(hs[r]);
    free(hs);
    free(nh);
    free(ends);
  }
  return rc;
}

/* max_tokens: the epoch's draws dealt as batches of 1 (rank r serves
 * draw g x world + r), cut into token batches on every rank
 * (ferry__tokens_plan).  A resumed epoch: the steps saved over other
 * numbers of ranks folded into the draws served (fold_steps), the rest
 * dealt over this run's ranks skipping the served ones (plan/draw.c's cut
 * with holes); when the last step was over this run's number of ranks,
 * its deal is made and cut again and served from its batch K on
 * (ferry__tokens_tail), exactly as it would have gone on.  COLLECTIVE. */
static int sampling_tokens(ferry_loader *L, epoch_state *ep,
                           const ferry__plan_params *pp, int rc,
                           ferry__err *err) {
  int n = ep->nsteps;
  int same = n > 0 && ep->steps[n - 1].world_size == L->size;
  int64_t K = same ? ep->steps[n - 1].batches : 0;
  if (!rc)
    rc = fold_steps(L, ep, pp, same ? n - 1 : n, err);
  ferry__draw_cut cut;
  if (!rc)
    rc = ferry__draw_cut_holes(ep->draw, ep->draw_pos0, 1, L->size,
                               L->opts->tail, ep->draw_holes, ep->draw_nholes,
                               &cut, err);
  if (!rc)
    rc = ferry__draw_plan(ep->draw, &cut, L->rank, &ep->plan, err);
  if (rc && rc != FERRY_EMISMATCH && rc != FERRY_ENOTSUP)
    name_epoch(L, pp->epoch, rc, err);
  rc = draw_check(L, ep, rc, err);
  int W = L->opts->bucket_window > 0;
  rc = ferry__tokens_plan(L, &ep->plan, pp->epoch, K && !W ? NULL : &ep->tokc,
                          rc, err);
  if (rc || K == 0)
    return rc;
  return ferry__tokens_tail(L, ep, pp, K, err); /* epoch_check_counts agrees */
}

int ferry__sampling_epoch(ferry_loader *L, epoch_state *ep,
                          const ferry__plan_params *pp, ferry__err *err) {
  int first_world = ep->nsteps ? ep->steps[0].world_size : L->size;
  const ferry_options *o = L->opts;
  ferry__draw_params dp = draw_params_of(L, pp->epoch, first_world);
  ep->mixch = L->pending_mixch; /* a state load's (else none) */
  ep->nmixch = L->npending_mixch;
  L->pending_mixch = NULL;
  L->npending_mixch = 0;
  dp.nchanges = ep->nmixch;
  dp.changes = ep->mixch;
  int rc = 0;
  ep->draw = calloc(1, sizeof *ep->draw);
  if (!ep->draw) /* the message gains the dataset and epoch below */
    rc = ferry__oom(err, L->rank, sizeof *ep->draw, "the sampling tables");
  if (!rc)
    rc = ferry__draw_init(ep->draw, &dp, err);
  ferry__draw_cut cut;
  if (o->max_tokens) /* draws of batch_size 1, cut by tokens (below) */
    return sampling_tokens(L, ep, pp, rc, err);
  if (!rc)
    rc = ferry__draw_cut_make(ep->draw, served_before(ep, o->batch_size),
                              o->batch_size, L->size, o->tail, &cut, err);
  if (!rc)
    rc = ferry__draw_plan(ep->draw, &cut, L->rank, &ep->plan, err);
  if (rc && rc != FERRY_EMISMATCH) {
    char what[FERRY__MSG_MAX];
    memcpy(what, err->msg, sizeof what);
    what[sizeof what - 1] = '\0';
    ferry__seterr_on(err, L->rank, rc, "dataset %s, epoch %lld: %.900s",
                     L->m.spec, (long long)pp->epoch, what);
  }
  return draw_check(L, ep, rc, err);
}

/* ---- Accessors ----------------------------------------------------------- */

enum { WEIGHT_GROUPS = 10 };

/* The blocks' effect on the per-sample shares: none since issue 30 (a
 * block's count of the draws is its expected one, the samples inside it
 * are drawn by weight); kept for ferry_sampling_info. */
static double blocking_tv(const ferry_loader *L) {
  return L->ep && L->ep->draw ? ferry__draw_blocking_tv(L->ep->draw) : 0;
}

int ferry_sampling_info_get(const ferry_loader *L, ferry_sampling_info *out) {
  if (!L || !out)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_sampling_info_get: NULL");
  memset(out, 0, sizeof *out);
  out->mode = L->sampling;
  if (!L->sampling)
    return 0;
  out->replacement = L->opts->replacement;
  out->block = L->draw_block;
  out->draws = L->ep && L->ep->draw ? L->ep->draw->D : L->opts->num_draws;
  if (!out->draws && L->sampling == FERRY__DRAW_WEIGHTED)
    out->draws = L->opts->replacement ? L->m.num_samples : L->wts.nonzero;
  if (L->sampling == FERRY__DRAW_WEIGHTED) {
    out->nonzero = L->wts.nonzero;
    out->nclasses = L->wts.nclasses;
    out->ngroups =
        L->m.num_samples < WEIGHT_GROUPS ? L->m.num_samples : WEIGHT_GROUPS;
    out->blocking_tv = blocking_tv(L);
    snprintf(out->what, sizeof out->what, "%s", L->wts.what);
  } else {
    out->ngroups = L->nmix;
    snprintf(out->what, sizeof out->what, "a mix of %d sources", L->nmix);
  }
  return 0;
}

static void weight_group(const ferry_loader *L, int64_t g, int64_t *first,
                         int64_t *count, double *requested, double *planned) {
  const int64_t N = L->m.num_samples, k = N < WEIGHT_GROUPS ? N : WEIGHT_GROUPS;
  int64_t a = N * g / k, b = N * (g + 1) / k;
  double s = 0;
  for (int64_t i = a; i < b; i++)
    s += (double)L->wts.w[i];
  *first = a;
  *count = b - a;
  *requested = s / L->wts.total;
  /* without replacement: the group's share of the inclusions of the
   * epoch's D draws (every non-zero sample once in a full epoch) */
  *planned = L->opts->replacement
                 ? *requested
                 : ferry__draw_planned_share(L->ep->draw, a, b - a);
}

int ferry_sampling_group(const ferry_loader *L, int64_t g, int64_t *first,
                         int64_t *count, double *requested, double *planned) {
  if (!L || !first || !count || !requested || !planned)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_sampling_group: NULL");
  ferry_sampling_info info;
  ferry_sampling_info_get(L, &info);
  if (g < 0 || g >= info.ngroups)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_sampling_group: group %lld of %lld",
                         (long long)g, (long long)info.ngroups);
  if (!L->ep || !L->ep->draw)
    return ferry__seterr(NULL, FERRY_ESTATE,
                         "ferry_sampling_group: call ferry_set_epoch first");
  if (L->sampling == FERRY__DRAW_WEIGHTED) {
    weight_group(L, g, first, count, requested, planned);
    return 0;
  }
  const ferry__draw *d = L->ep->draw;
  int64_t got = 0;
  for (int64_t w = 0; w < d->nwin; w++)
    got += d->cnt[w * d->p.nsources + g];
  *first = d->src[g].first;
  *count = d->src[g].n;
  *requested = d->src[g].proportion;
  *planned = (double)got / (double)d->D;
  return 0;
}

int ferry__sampling_order(const ferry_loader *L, int64_t epoch, int P, int rank,
                          int64_t **samples, int64_t **batch_start, int64_t *nb,
                          ferry__err *err) {
  const ferry_options *o = L->opts;
  ferry__draw d;
  ferry__draw_params dp = draw_params_of(L, epoch, P);
  int rc = ferry__draw_init(&d, &dp, err);
  if (rc)
    return rc;
  ferry__draw_cut cut;
  ferry__rank_plan p = {0};
  ferry__slot *sl = NULL;
  rc = ferry__draw_cut_make(&d, 0, o->batch_size, P, o->tail, &cut, err);
  if (!rc)
    rc = ferry__draw_plan(&d, &cut, rank, &p, err);
  if (!rc) {
    *nb = p.num_batches;
    *samples = malloc((size_t)(p.nslots + 1) * sizeof **samples);
    *batch_start = malloc((size_t)(p.num_batches + 1) * sizeof **batch_start);
    if (!*samples || !*batch_start || ferry__plan_slots(&p, &sl))
      rc = ferry__oom(err, -1,
                      (size_t)(p.nslots + 1) * (sizeof **samples + sizeof *sl) +
                          (size_t)(p.num_batches + 1) * sizeof **batch_start,
                      "dataset %s: the order of rank %d in epoch %lld (%lld "
                      "samples)",
                      L->m.spec, rank, (long long)epoch, (long long)p.nslots);
    for (int64_t i = 0; !rc && i < p.nslots; i++)
      (*samples)[i] = sl[i].sample;
    for (int64_t b = 0; !rc && b <= p.num_batches; b++)
      (*batch_start)[b] = ferry__plan_batch_start(&p, b);
    free(sl);
    ferry__rank_plan_free(&p);
  }
  if (rc) {
    free(*samples);
    free(*batch_start);
    *samples = *batch_start = NULL;
  }
  ferry__draw_free(&d);
  return rc;
}

/* ---- A mix across resumes ------------------------------------------------ */

uint64_t ferry__mix_sources_hash(const ferry_loader *L) {
  if (L->sampling != FERRY__DRAW_MIX)
    return 0;
  uint64_t h = FERRY__FNV_INIT;
  h = ferry__fnv1a(h, &L->m.nparts, sizeof L->m.nparts);
  for (int64_t p = 0; p < L->m.nparts; p++) {
    const ferry__part *pt = &L->m.parts[p];
    h = ferry__fnv1a(h, &pt->num_samples, sizeof pt->num_samples);
    if (L->m.nvars > 0 && pt->paths && pt->paths[0])
      h = ferry__fnv1a(h, pt->paths[0], strlen(pt->paths[0]));
  }
  return h ? h : 1;
}

static int change_copy(ferry__draw_change *dst, const ferry__draw_change *src) {
  *dst = (ferry__draw_change){src->position, src->n, NULL, NULL};
  dst->proportion = malloc((size_t)src->n * sizeof *dst->proportion);
  dst->exhaust = malloc((size_t)src->n * sizeof *dst->exhaust);
  if (!dst->proportion || !dst->exhaust)
    return FERRY_ENOMEM;
  memcpy(dst->proportion, src->proportion,
         (size_t)src->n * sizeof *dst->proportion);
  memcpy(dst->exhaust, src->exhaust, (size_t)src->n * sizeof *dst->exhaust);
  return 0;
}

int ferry__mix_resume_changes(ferry_loader *L, const ferry__state *st,
                              int newmix, ferry__err *err) {
  ferry__mix_changes_free(L->pending_mixch, L->npending_mixch);
  L->pending_mixch = NULL;
  L->npending_mixch = 0;
  int n = st->nmix_changes + (newmix ? 1 : 0), rc = 0;
  if (n == 0)
    return 0;
  ferry__draw_change *c = calloc((size_t)n, sizeof *c);
  if (!c)
    return ferry__oom(err, L->rank, (size_t)n * sizeof *c,
                      "dataset %s: the %d changes of the mix", L->m.spec, n);
  int k = 0;
  size_t need = 0; /* what failed */
  for (; !rc && k < st->nmix_changes; k++) {
    rc = change_copy(&c[k], &st->mix_changes[k]);
    need = (size_t)st->mix_changes[k].n *
           (sizeof *c->proportion + sizeof *c->exhaust);
  }
  if (!rc && newmix) {
    /* from the first draw window at or after the saved position: the
     * windows before it are the saved run's, so nothing repeats */
    const ferry_options *o = L->opts;
    int64_t pos = 0;
    for (int i = 0; i < st->nsteps; i++)
      pos += st->steps[i].batches * st->steps[i].world_size * o->batch_size;
    ferry__draw_params dp = draw_params_of(L, 0, st->steps[0].world_size);
    int64_t W = ferry__draw_window_size(&dp);
    ferry__draw_change one = {(pos + W - 1) / W * W, L->nmix, NULL, NULL};
    one.proportion = malloc((size_t)L->nmix * sizeof *one.proportion);
    one.exhaust = malloc((size_t)L->nmix * sizeof *one.exhaust);
    if (one.proportion && one.exhaust)
      for (int s = 0; s < L->nmix; s++) {
        one.proportion[s] = L->mix_src[s].proportion;
        one.exhaust[s] = L->mix_src[s].exhaust;
      }
    else
      rc = FERRY_ENOMEM;
    need = (size_t)L->nmix * (sizeof *one.proportion + sizeof *one.exhaust);
    c[k++] = one;
  }
  if (rc) {
    ferry__mix_changes_free(c, k);
    return ferry__oom(err, L->rank, need,
                      "dataset %s: a change of the mix's %d sources", L->m.spec,
                      L->nmix);
  }
  L->pending_mixch = c;
  L->npending_mixch = n;
  return 0;
}
