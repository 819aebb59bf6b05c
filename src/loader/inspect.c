/*
 * inspect.c - the local accessors of a loader (variables, parts, chunks, the
 * epoch, the memory budget, statistics) and the NCCL attach calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"
#include "backends/mixrec.h"
#include "dataset/mix.h"
#include "loader/cache.h"
#include "loader/loader.h"

#include <stdlib.h>
#include <string.h>

/* ---- Inspection -----------------------------------------------------------
 */

/* The variables the batches show: with sparse=dense made on the device
 * the dense view's (L->dview), whose variable i is the host's h. */
static const ferry__manifest *shown(const ferry_loader *L) {
  return L->dview ? L->dview : &L->m;
}

int ferry_num_vars(const ferry_loader *L) { return L ? shown(L)->nvars : 0; }

int ferry_var_info_get(const ferry_loader *L, int i, ferry_var_info *out) {
  if (!L || !out || i < 0 || i >= shown(L)->nvars)
    return FERRY_EINVAL;
  const ferry__var *v = &shown(L)->vars[i];
  int h = L->dz ? L->dz[i].src : i; /* the host variable (ragged ones) */
  memset(out, 0, sizeof *out);
  out->name = v->name;
  out->dtype = v->dtype;
  out->swapped = v->swapped;
  out->ndim = v->row_ndim + 1;
  out->shape[0] = L->m.num_samples;
  for (int d = 0; d < v->row_ndim && d + 1 < FERRY_MAX_DIMS; d++)
    out->shape[d + 1] = v->row_shape[d];
  out->row_bytes = v->row_bytes;
  out->chunk_rows = v->chunk_rows;
  out->cache_bytes = v->cache_bytes;
  out->width = v->width;
  out->categories = v->categories;
  for (const char *c = v->categories; c && *c; c++)
    out->ncategories += *c == '\n';
  out->ncategories += v->categories != NULL;
  out->storage = v->storage;
  out->ragged = v->ragged != 0;
  out->offsets_of = L->offs_of ? L->offs_of[h] : v->ragged ? h : -1;
  for (int k = 0; L->dz && out->offsets_of >= 0 && k < shown(L)->nvars; k++)
    if (L->dz[k].data < 0 && L->dz[k].src == out->offsets_of) {
      out->offsets_of = k; /* the view's numbering */
      break;
    }
  if (v->ragged && L->rstat) { /* counted once, at open (ragged.c) */
    out->min_len = L->rstat[h].min;
    out->max_len = L->rstat[h].max;
    out->total_rows = L->rstat[h].total;
    out->batch_rows = L->ragged_cap ? L->ragged_cap[h] : 0;
  }
  return 0;
}

const char *ferry_dataset_notes(const ferry_loader *L) {
  return L ? shown(L)->notes : NULL;
}

int64_t ferry_num_samples(const ferry_loader *L) {
  return L ? L->m.num_samples : 0;
}
int64_t ferry_num_parts(const ferry_loader *L) { return L ? L->m.nparts : 0; }
const char *ferry_part_path(const ferry_loader *L, int64_t part, int var) {
  if (!L || part < 0 || part >= L->m.nparts || var < 0 ||
      var >= shown(L)->nvars)
    return NULL;
  return shown(L)->parts[part].paths[var];
}
int ferry_mix_count(const ferry_loader *L) {
  return L && ferry__mix_of(&L->m) ? (int)L->m.nparts : 0;
}

int ferry_mix_source(const ferry_loader *L, int i, ferry_mix_info *out) {
  if (!out || i < 0 || i >= ferry_mix_count(L))
    return FERRY_EINVAL;
  /* a packed mix's parts are rows (L->m), its records the mix's */
  const ferry__part *pt = &L->m.parts[i], *mp = &ferry__mix_of(&L->m)->parts[i];
  ferry__mix_record r;
  ferry__manifest sub;
  ferry__err err = {0};
  int rc = ferry__mix_part_record(mp, &r, &err);
  if (rc < 0)
    return rc;
  rc = ferry__manifest_unpack(r.sub, r.sublen, &sub, &err);
  memset(out, 0, sizeof *out);
  if (rc == 0) {
    const ferry__backend *be = ferry__backend_find(sub.backend);
    out->backend = be ? be->name : "?";
    ferry__manifest_free(&sub);
  }
  out->path = mp->paths[0];
  out->exhaust = ferry__mix_exhaust_name(r.exhaust);
  out->first = pt->first_sample;
  out->samples = pt->num_samples;
  out->proportion = r.proportion;
  ferry__mix_record_free(&r);
  return rc;
}

const char *ferry_backend(const ferry_loader *L) {
  return L ? L->m.backend : NULL;
}
int64_t ferry_num_chunks(const ferry_loader *L) { return L ? L->nchunks : 0; }

int ferry_chunk_info_get(const ferry_loader *L, int64_t id,
                         ferry_chunk_info *out) {
  if (!L || !out || id < 0 || id >= L->nchunks)
    return FERRY_EINVAL;
  const ferry__chunk ch = ferry__chunk_get(&L->chunks, id), *c = &ch;
  *out = (ferry_chunk_info){id, c->part, c->global_first, c->count};
  return 0;
}

int ferry_epoch_info_get(const ferry_loader *L, ferry_epoch_info *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  const ferry__rank_plan *p = &L->ep->plan;
  *out = (ferry_epoch_info){L->ep->epoch, p->num_batches,  p->epoch_samples,
                            p->nslots,    p->padded,       p->dropped,
                            p->nextents,  L->ep->checksum, L->ep->index_base};
  return 0;
}

/* The chunk holding global sample g. */
static int64_t chunk_of(const ferry_loader *L, int64_t g) {
  return ferry__chunk_of_sample(&L->chunks, g);
}

int64_t ferry_chunk_samples(const ferry_loader *L, const char **why) {
  if (!L)
    return FERRY_EINVAL;
  if (why)
    *why = L->chunk_why;
  return L->chunk_samples;
}

/* The chunk of every sample in samples[0..n): chunks sorted by
 * global_first, so a binary search each. */
static int64_t *chunk_ids(const ferry__chunk *c, int64_t nc,
                          const int64_t *samples, int64_t n) {
  int64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
  for (int64_t i = 0; ids && i < n; i++) {
    int64_t lo = 0, hi = nc - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (c[mid].global_first <= samples[i])
        lo = mid;
      else
        hi = mid - 1;
    }
    ids[i] = lo;
  }
  return ids;
}

static int order_fail(int rc, const char *msg) {
  ferry__set_thread_error(msg);
  return rc;
}

int ferry_plan_order(const ferry_loader *L, int64_t epoch, int world_size,
                     int rank, int64_t **samples, int64_t **chunks,
                     int64_t **batch_start, int64_t *num_batches) {
  if (!L || !samples || !batch_start || !num_batches)
    return order_fail(FERRY_EINVAL, "ferry_plan_order: NULL argument");
  if (world_size < 1 || rank < 0 || rank >= world_size || epoch < 0)
    return order_fail(FERRY_EINVAL, "ferry_plan_order: needs world_size >= "
                                    "1, 0 <= rank < world_size, epoch >= 0");
  if (L->opts->max_tokens)
    return order_fail(FERRY_ENOTSUP,
                      "ferry_plan_order: max_tokens batches are cut at "
                      "ferry_set_epoch from every rank's batch count, not "
                      "from the plan alone");
  ferry__plan_params pp;
  ferry__plan_params_of(L, epoch, &pp);
  pp.world_size = world_size;
  int64_t cs = L->opts->chunk_samples;
  if (cs == 0)
    cs = ferry__auto_chunk_samples(L->dview ? L->dview : &L->m,
                                   L->dview ? L->dview_sized : L->row_sized,
                                   &pp, NULL, 0);
  ferry__chunk *c = NULL;
  int64_t nc = 0;
  ferry__err err = {0};
  int rc = ferry__chunks_make(&L->m, cs, &c, &nc);
  if (rc) /* at most a chunk per sample (and one) */
    ferry__oom(
        &err, -1, (size_t)(L->m.num_samples / cs + L->m.nparts + 1) * sizeof *c,
        "dataset %s: the chunks of %lld samples", L->m.spec, (long long)cs);
  else if (L->sampling)
    rc = ferry__sampling_order(L, epoch, world_size, rank, samples, batch_start,
                               num_batches, &err);
  else
    rc = ferry__plan_order(c, nc, &pp, L->opts->exchange, rank, samples,
                           batch_start, num_batches, &err);
  if (!rc && chunks) {
    int64_t n = (*batch_start)[*num_batches];
    *chunks = chunk_ids(c, nc, *samples, n);
    if (!*chunks) {
      free(*samples);
      free(*batch_start);
      *samples = *batch_start = NULL;
      rc = ferry__oom(&err, -1, (size_t)(n > 0 ? n : 1) * sizeof **chunks,
                      "dataset %s: the chunk ids of rank %d in epoch %lld",
                      L->m.spec, rank, (long long)epoch);
    }
  }
  free(c);
  if (rc) {
    char text[FERRY__MSG_MAX];
    ferry__err_text(&err, text, sizeof text);
    return order_fail(rc, text);
  }
  return 0;
}

/* shuffle=global: the runs this rank reads in the windows left to serve
 * (window by window, ferry__global_reads); the pipeline's extents are the
 * windows' serve buffers. */
static int global_chunks(const ferry_loader *L, ferry_chunk_info *out,
                         int64_t max, int64_t *count) {
  const epoch_state *ep = L->ep;
  int64_t n = 0;
  for (int64_t k = 0; k < ep->plan.nwindows; k++) {
    ferry__extent *ext = NULL;
    int64_t next = 0;
    ferry__err err = {0};
    int rc = ferry__global_reads(ep->glob, L->rank, k + ep->gbase, &ext, &next,
                                 &err);
    if (rc)
      return rc;
    for (int64_t e = 0; e < next; e++, n++)
      if (out && n < max)
        out[n] =
            (ferry_chunk_info){chunk_of(L, ext[e].global_first), ext[e].part,
                               ext[e].global_first, ext[e].count};
    free(ext);
  }
  *count = n;
  return 0;
}

int ferry_epoch_chunks(const ferry_loader *L, ferry_chunk_info *out,
                       int64_t max, int64_t *count) {
  if (!L || !count)
    return FERRY_EINVAL;
  if (!L->ep)
    return FERRY_ESTATE;
  const ferry__rank_plan *p = &L->ep->plan;
  if (L->ep->glob)
    return global_chunks(L, out, max, count);
  *count = p->nextents;
  for (int64_t e = 0; out && e < p->nextents && e < max; e++) {
    const ferry__extent *x = &p->extents[e];
    out[e] = (ferry_chunk_info){chunk_of(L, x->global_first), x->part,
                                x->global_first, x->count};
  }
  return 0;
}

int ferry_memory_budget_get(const ferry_loader *L, ferry_memory_budget *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  *out = L->budget;
  return 0;
}

int ferry_stats_get(const ferry_loader *L, ferry_stats *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  pthread_mutex_lock((pthread_mutex_t *)&L->stats_mu);
  *out = L->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&L->stats_mu);
  ferry__decode_counts(&L->m, &out->images_decoded, &out->decode_cpu_seconds);
  ferry__cache_stats(L->cache, out);
  return 0;
}

int ferry_cache_info_get(const ferry_loader *L, ferry_cache_info *out) {
  if (!L || !out)
    return FERRY_EINVAL;
  return ferry__cache_info(L->cache, out);
}

int ferry_manifest_save(const ferry_loader *L, const char *path) {
  if (!L || !path)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_manifest_save: NULL");
  ferry__err err = {0};
  /* a packed view saves its corpus's manifest: the index a job packs
   * from (loader/pack.c makes the view again from it and the options) */
  int rc =
      ferry__manifest_save_json(L->m.inner ? L->m.inner : &L->m, path, &err);
  if (rc)
    ferry__loader_fail((ferry_loader *)L, &err);
  return rc;
}

int ferry_rank(const ferry_loader *L) { return L ? L->rank : -1; }
int ferry_world_size(const ferry_loader *L) { return L ? L->size : 0; }

/* ---- Checkpoint and resume ---------------------------------------------- */

int ferry_checkpoint_requested(const ferry_loader *L) {
  return L ? L->ckpt_agreed : 0;
}

int ferry_request_checkpoint(ferry_loader *L) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_request_checkpoint: loader is NULL");
  L->ckpt_asked = 1;
  return 0;
}

/* ---- GPU delivery ----------------------------------------------------------
 */

int ferry_attach_nccl(ferry_loader *L, void *comm) {
  if (!L || !comm)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_attach_nccl: NULL argument");
  ferry__err err = {0};
  int rc;
  if (!L->gpu)
    rc = ferry__seterr_on(&err, L->rank, FERRY_ENOTSUP,
                          "ferry_attach_nccl: batches are delivered in "
                          "%s, not in device memory",
                          L->dev_how);
  else
    rc = ferry__gpu_nccl_attach(L->gpu, comm, &err);
  if (rc)
    ferry__loader_fail(L, &err);
  return rc;
}

int ferry_detach_nccl(ferry_loader *L) {
  if (!L)
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_detach_nccl: NULL");
  ferry__err err = {0};
  int rc = L->gpu ? ferry__gpu_nccl_detach(L->gpu, &err) : 0;
  if (rc)
    ferry__loader_fail(L, &err);
  return rc;
}

int ferry_device_info_get(const ferry_loader *L, ferry_device_info *out) {
  if (!L || !out)
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_device_info_get: NULL argument");
  memset(out, 0, sizeof *out);
  ferry__gpu_info(L->gpu, out);
  out->visible = ferry__gpu_visible();
  out->local_rank = L->local_rank;
  out->local_size = L->local_size;
  out->how = L->dev_how;
  return 0;
}
