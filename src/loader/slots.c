/*
 * slots.c - the ring slots, and the slots beyond the rings that batches the
 * caller holds are given.
 *
 * Batch b is assembled into host position b % prefetch (and, with
 * device=cuda, copied into device position b % device_prefetch).  A caller
 * that keeps batches -- for logging, a validation metric, gradient
 * accumulation (autograd keeps a micro-batch's inputs alive until the one
 * backward) -- used to stop the pipeline once it held the position ferry_next
 * needed next ("all 4 prefetch batches are still held").  Now, when
 * ferry_next needs a position whose slot the caller still holds, that slot
 * leaves the ring: it stays valid in L->held until ferry_release, and the
 * position gets a spare slot (one released earlier, or a new one) while
 * held_memory allows.  So nothing changes while nothing is held long: the
 * same ring, the same code path, no allocation; and once a slot is swapped
 * the pipeline never waits for the caller.  A loop that holds k batches at a
 * time allocates k slots once and then reuses them.  (A new slot is not
 * registered with NCCL: ferry_attach_nccl registers the ring's slots of the
 * moment.)
 */
#include "config.h"
#include "loader/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most slots beyond the rings, whatever held_memory says: the lists
 * of held batches stay small. */
#define HELD_MAX_SLOTS (INT64_C(1) << 20)

/* ---- Slots ------------------------------------------------------------- */

/* Host batch buffers are FERRY__BATCH_ALIGN-byte aligned: JAX and other
 * DLPack consumers copy a less-aligned buffer instead of viewing it.
 * aligned_alloc wants a multiple of the alignment (and at least one). */
static size_t batch_alloc_size(size_t bytes) {
  size_t a = FERRY__BATCH_ALIGN;
  return bytes ? (bytes + a - 1) / a * a : a;
}

static void host_slot_free(ferry_loader *L, ring_slot *s) {
  if (!s)
    return;
  for (int v = 0; s->bufs && v < L->m.nvars; v++) {
    /* a ragged variable's one allocation starts with its offsets */
    void *base = s->offs && s->offs[v] ? (void *)s->offs[v] : s->bufs[v];
    if (L->ring_pinned)
      ferry__gpu_host_free(base);
    else
      free(base);
  }
  free(s->offs);
  free(s->bufs);
  free(s->tensors);
  free(s->ids);
  free(s->padded);
  free(s);
}

/* One host slot: a buffer per variable (pinned with device=cuda or
 * pin_memory, once, never per batch) and the batch that describes them.
 * On ENOMEM *want is the allocation that failed. */
static int host_slot_new(ferry_loader *L, ring_slot **out, size_t *want,
                         ferry__err *err) {
  int64_t B = L->opts->batch_size;
  int nv = L->m.nvars;
  ring_slot *s = calloc(1, sizeof *s);
  *out = NULL;
  *want = sizeof *s;
  if (!s)
    return FERRY_ENOMEM;
  s->bufs = calloc((size_t)nv, sizeof *s->bufs);
  s->tensors = calloc((size_t)nv, sizeof *s->tensors);
  s->ids = malloc((size_t)B * sizeof *s->ids);
  s->padded = malloc((size_t)B);
  *want = (size_t)nv * (sizeof *s->bufs + sizeof *s->tensors) +
          (size_t)B * (sizeof *s->ids + 1);
  if (!s->bufs || !s->tensors || !s->ids || !s->padded)
    goto fail;
  if (L->ragged && !(s->offs = calloc((size_t)nv, sizeof *s->offs))) {
    *want = (size_t)nv * sizeof *s->offs;
    goto fail;
  }
  for (int v = 0; v < nv; v++) {
    const ferry__var *var = &L->m.vars[v];
    /* a ragged variable: its offsets, then its values, in one allocation
     * (one copy to the device carries both) */
    size_t head = var->ragged ? FERRY__RAGGED_HEAD(B) : 0;
    size_t bytes =
        head + (size_t)(var->ragged ? L->slot_cap[v] : B) * var->row_bytes;
    unsigned char *p = NULL;
    if (L->ring_pinned) {
      int rc = ferry__gpu_host_alloc(L->rank, bytes, (void **)&p, err);
      if (rc) { /* err says why */
        *want = 0;
        host_slot_free(L, s);
        return rc;
      }
    } else if (!(p = aligned_alloc(FERRY__BATCH_ALIGN,
                                   batch_alloc_size(bytes)))) {
      *want = batch_alloc_size(bytes);
      goto fail;
    }
    s->bufs[v] = p + head;
    if (var->ragged)
      s->offs[v] = (int64_t *)(void *)p;
    ferry_tensor *t = &s->tensors[v];
    t->name = var->name;
    t->dtype = var->dtype;
    t->ndim = var->row_ndim + 1;
    for (int d = 0; d < var->row_ndim; d++)
      t->shape[d + 1] = var->row_shape[d];
    t->data = s->bufs[v];
    t->row_bytes = var->row_bytes;
    t->offsets = var->ragged && !L->pad ? s->offs[v] : NULL;
    if (t->offsets && L->opts->offsets_dtype)
      t->offsets32 =
          (const int32_t *)(const void *)((const unsigned char *)s->offs[v] +
                                          FERRY__RAGGED_OFF32(B));
    if (var->ragged && L->pad) { /* [size, W, inner...] and the lengths */
      t->lengths = s->offs[v];
      t->ndim = var->row_ndim + 2;
      for (int d = 0; d < var->row_ndim; d++)
        t->shape[d + 2] = var->row_shape[d];
    }
  }
  for (int v = 0; L->offs_of && v < nv; v++) { /* groups: one offsets */
    int g = L->offs_of[v];
    if (g >= 0 && g != v && s->tensors[v].offsets) {
      s->tensors[v].offsets = s->tensors[g].offsets;
      s->tensors[v].offsets32 = s->tensors[g].offsets32;
    }
  }
  s->batch.sample_ids = s->ids;
  s->batch.padded = s->padded;
  s->batch.nvars = nv;
  s->batch.vars = s->tensors;
  *out = s;
  return 0;
fail:
  host_slot_free(L, s);
  return FERRY_ENOMEM;
}

static void dev_slot_free(ferry__dslot *d) {
  if (!d)
    return;
  ferry__dslot_fini(d);
  free(d);
}

static int dev_slot_new(ferry_loader *L, ferry__dslot **out, ferry__err *err) {
  ferry__dslot *d = calloc(1, sizeof *d);
  *out = NULL;
  if (!d)
    return ferry__oom(err, L->rank, sizeof *d, "a device batch slot");
  int rc = ferry__dslot_init(L->gpu, d, &L->m, L->dview, L->dz,
                             L->opts->batch_size, L->slot_cap, L->rank, err);
  if (rc) {
    dev_slot_free(d);
    return rc;
  }
  d->host = -1;
  *out = d;
  return 0;
}

/* A slot's bytes for L->slot_cap (every variable, offsets included). */
static size_t slot_bytes_of(const ferry_loader *L) {
  int64_t B = L->opts->batch_size;
  size_t bytes = 0;
  for (int v = 0; v < L->m.nvars; v++) {
    const ferry__var *x = &L->m.vars[v];
    bytes += x->ragged
                 ? FERRY__RAGGED_HEAD(B) + (size_t)L->slot_cap[v] * x->row_bytes
                 : (size_t)B * x->row_bytes;
  }
  return bytes;
}

/* The slots' sizes before the first epoch: a ragged variable's rows wait
 * for ferry_set_epoch (0 rows: its offsets only), but with pad=L, where
 * every batch has B x L rows. */
static int slot_caps_init(ferry_loader *L, ferry__err *err) {
  L->slot_bytes = L->batch_bytes;
  if (!L->ragged)
    return 0;
  if (!L->slot_cap &&
      !(L->slot_cap = calloc((size_t)L->m.nvars, sizeof *L->slot_cap)))
    return ferry__oom(err, L->rank, (size_t)L->m.nvars * sizeof *L->slot_cap,
                      "the slot sizes of dataset %s", L->m.spec);
  for (int v = 0; v < L->m.nvars; v++)
    L->slot_cap[v] = L->pad == 2 ? L->ragged_cap[v] : 0;
  L->slot_bytes = slot_bytes_of(L);
  return 0;
}

int ferry__ring_alloc(ferry_loader *L, ferry__err *err) {
  int64_t B = L->opts->batch_size;
  int rc0 = slot_caps_init(L, err);
  if (rc0)
    return rc0;
  L->ring_pinned = L->gpu != NULL || L->opts->pin_memory;
  if (!L->gpu && L->opts->pin_memory && ferry__gpu_visible() < 1)
    return ferry__seterr_on(
        err, L->rank, FERRY_ENODEV,
        "pin_memory=yes needs a CUDA runtime and a device to pin host "
        "batches: %s%s",
        ferry__gpu_visible() < 0 ? "this library was built without CUDA"
                                 : "no usable CUDA device; ",
        ferry__gpu_visible() < 0 ? "" : ferry__gpu_library_status());
  L->held.max_extra = ferry__held_max(L, L->slot_bytes);
  L->nring = L->opts->prefetch;
  size_t want = (size_t)L->nring * sizeof *L->ring; /* what failed */
  L->ring = calloc((size_t)L->nring, sizeof *L->ring);
  if (!L->ring)
    goto nomem;
  for (int64_t i = 0; i < L->nring; i++) {
    int rc = host_slot_new(L, &L->ring[i], &want, err);
    if (rc == FERRY_ENOMEM && want)
      goto nomem;
    if (rc)
      return rc;
  }
  if (L->gpu) {
    L->ndring = L->opts->device_prefetch;
    L->dring = calloc((size_t)L->ndring, sizeof *L->dring);
    want = (size_t)L->ndring * sizeof *L->dring;
    if (!L->dring)
      goto nomem;
    for (int64_t i = 0; i < L->ndring; i++) {
      int rc = dev_slot_new(L, &L->dring[i], err);
      if (rc)
        return rc;
      L->dring[i]->expect = i;
    }
    ferry__gpu_set_ring(L->gpu, L->dring, L->ndring);
  }
  return 0;
nomem:
  return ferry__oom(err, L->rank, want,
                    "dataset %s: the ring of %lld batches of %lld samples "
                    "(prefetch x batch_size x %zu bytes)",
                    L->m.spec, (long long)L->opts->prefetch, (long long)B,
                    L->row_total);
}

/* The spare slots dropped (their batches were released, or made invalid
 * by the last epoch's stop): slots of another size are no use. */
static void spares_free(ferry_loader *L) {
  ferry__held *h = &L->held;
  for (int64_t i = 0; i < h->nspare_s; i++)
    host_slot_free(L, h->spare_s[i]);
  for (int64_t i = 0; i < h->nspare_d; i++)
    dev_slot_free(h->spare_d[i]);
  h->nextra -= h->nspare_s + h->nspare_d;
  h->nspare_s = h->nspare_d = 0;
}

/* Whether the slots made hold need[v] rows of each ragged variable with
 * at most an eighth to spare (so a run of epochs of about the same
 * largest batch makes its slots once). */
static int slots_fit(const ferry_loader *L, const int64_t *need) {
  for (int64_t i = 0; i < L->nring; i++)
    if (!L->ring[i])
      return 0;
  for (int64_t i = 0; i < L->ndring; i++)
    if (!L->dring[i])
      return 0;
  for (int v = 0; v < L->m.nvars; v++)
    if (L->m.vars[v].ragged &&
        (L->slot_cap[v] < need[v] || L->slot_cap[v] - need[v] > need[v] / 8))
      return 0;
  return 1;
}

int ferry__ring_resize(ferry_loader *L, const int64_t *need, int64_t epoch,
                       const ferry__ring_need *big, ferry__err *err) {
  if (slots_fit(L, need))
    return 0;
  void *comms[FERRY__GPU_MAX_COMMS];
  int nc = L->gpu ? ferry__gpu_nccl_comms(L->gpu, comms) : 0;
  ferry__err ignore = {0};
  if (nc) /* their registrations name the slots about to go */
    ferry__gpu_nccl_detach(L->gpu, &ignore);
  spares_free(L);
  for (int64_t i = 0; i < L->nring; i++) {
    host_slot_free(L, L->ring[i]);
    L->ring[i] = NULL;
  }
  for (int64_t i = 0; i < L->ndring; i++) {
    dev_slot_free(L->dring[i]);
    L->dring[i] = NULL;
  }
  for (int v = 0; v < L->m.nvars; v++)
    L->slot_cap[v] = L->m.vars[v].ragged ? need[v] : 0;
  L->slot_bytes = slot_bytes_of(L);
  L->held.max_extra = ferry__held_max(L, L->slot_bytes);
  size_t want = 0;
  int rc = 0;
  for (int64_t i = 0; !rc && i < L->nring; i++)
    rc = host_slot_new(L, &L->ring[i], &want, err);
  for (int64_t i = 0; !rc && i < L->ndring; i++)
    if (!(rc = dev_slot_new(L, &L->dring[i], err)))
      L->dring[i]->expect = i;
  if (!rc && L->gpu)
    ferry__gpu_set_ring(L->gpu, L->dring, L->ndring);
  for (int k = 0; !rc && k < nc; k++) /* registered again, on the new ones */
    rc = ferry__gpu_nccl_attach(L->gpu, comms[k], err);
  if (rc == FERRY_ENOMEM && want)
    ferry__seterr(err, rc, "out of memory (%zu bytes)", want);
  if (!rc)
    return 0;
  char what[FERRY__MSG_MAX];
  memcpy(what, err->msg, sizeof what);
  what[sizeof what - 1] = '\0';
  return ferry__seterr_on(
      err, L->rank, rc,
      "dataset %s, epoch %lld: the slots for its largest batch on this rank "
      "(batch %lld: %lld samples, %zu bytes of ragged values; %lld host "
      "slots%s%lld device) could not be made: %.700s; lower batch_size or "
      "prefetch, or set max_tokens",
      L->m.spec, (long long)epoch, (long long)big->batch,
      (long long)big->samples, big->bytes, (long long)L->nring,
      L->ring_pinned ? " pinned, " : ", ", (long long)L->ndring, what);
}

void ferry__ring_free(ferry_loader *L) {
  ferry__held *h = &L->held;
  for (int64_t i = 0; L->ring && i < L->nring; i++)
    host_slot_free(L, L->ring[i]);
  free(L->ring);
  L->ring = NULL;
  for (int64_t i = 0; L->dring && i < L->ndring; i++)
    dev_slot_free(L->dring[i]);
  free(L->dring);
  L->dring = NULL;
  L->ndring = 0;
  for (int64_t i = 0; i < h->nheld; i++) {
    host_slot_free(L, h->held[i].s);
    dev_slot_free(h->held[i].d);
  }
  for (int64_t i = 0; i < h->nspare_s; i++)
    host_slot_free(L, h->spare_s[i]);
  for (int64_t i = 0; i < h->nspare_d; i++)
    dev_slot_free(h->spare_d[i]);
  free(h->held);
  free(h->spare_s);
  free(h->spare_d);
  memset(h, 0, sizeof *h);
}

/* ---- Held batches ------------------------------------------------------ */

int64_t ferry__held_max(const ferry_loader *L, size_t batch) {
  int64_t n = (int64_t)((size_t)L->opts->held_memory / (batch ? batch : 1));
  return n < HELD_MAX_SLOTS ? n : HELD_MAX_SLOTS;
}

/* Room in the lists for one more slot beyond the rings (each list holds at
 * most nextra: every slot beyond the rings is held or spare). */
static int held_grow(ferry_loader *L, ferry__err *err) {
  ferry__held *h = &L->held;
  if (h->nextra < h->cap)
    return 0;
  int64_t cap = h->cap ? 2 * h->cap : 8;
  ferry__held_batch *held = realloc(h->held, (size_t)cap * sizeof *held);
  if (held)
    h->held = held;
  ring_slot **ss = realloc(h->spare_s, (size_t)cap * sizeof *ss);
  if (ss)
    h->spare_s = ss;
  ferry__dslot **sd = realloc(h->spare_d, (size_t)cap * sizeof *sd);
  if (sd)
    h->spare_d = sd;
  if (!held || !ss || !sd)
    return ferry__oom(err, L->rank, (size_t)cap * sizeof *held,
                      "the list of %lld batches held by the caller",
                      (long long)cap);
  h->cap = cap;
  return 0;
}

/* Batches the caller holds now: in the ring and swapped out of it. */
static int64_t held_count(const ferry_loader *L) {
  int64_t n = L->held.nheld;
  if (L->gpu) {
    for (int64_t i = 0; i < L->ndring; i++)
      n += L->dring[i]->state == SLOT_HELD;
  } else {
    for (int64_t i = 0; i < L->nring; i++)
      n += L->ring[i]->state == SLOT_HELD;
  }
  return n;
}

/* bytes as "96 B", "1.5 KiB", "12.0 MiB", "3.2 GiB" */
static void fmt_bytes(char *buf, size_t len, double x) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && x >= 1024)
    x /= 1024, u++;
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
}

/* The bound reached: how much is held, and which option raises it. */
static int held_full(ferry_loader *L, int64_t b, ferry__err *err) {
  char lim[64], one[32], all[32];
  ferry_options_get(L->opts, "held_memory", lim, sizeof lim);
  int64_t n = held_count(L);
  double bytes = (double)L->slot_bytes;
  fmt_bytes(one, sizeof one, bytes);
  fmt_bytes(all, sizeof all, (double)n * bytes);
  return ferry__seterr_on(
      err, L->rank, FERRY_EINVAL,
      "the caller holds %lld %s of %s (%s) and ferry_next needs the slot of "
      "one for batch %lld: beyond the ring of %s=%lld, held_memory=%s allows "
      "%lld more; release one before ferry_next, or raise held_memory",
      (long long)n, L->gpu ? "device batches" : "batches", one, all,
      (long long)b, L->gpu ? "device_prefetch" : "prefetch",
      (long long)(L->gpu ? L->ndring : L->nring), lim,
      (long long)L->held.max_extra);
}

/* Once per loader, on the rank where it happens: memory grows. */
static void held_note(ferry_loader *L, int64_t held_b) {
  ferry__held *h = &L->held;
  if (h->noted)
    return;
  h->noted = 1;
  char lim[64];
  ferry_options_get(L->opts, "held_memory", lim, sizeof lim);
  fprintf(stderr,
          "ferry: note: rank %d: the caller still holds batch %lld when "
          "ferry_next needs its slot (%s=%lld): each batch held that long "
          "now gets a new slot, up to held_memory=%s (%lld batches) more; "
          "past that ferry_next fails\n",
          L->rank, (long long)held_b, L->gpu ? "device_prefetch" : "prefetch",
          (long long)(L->gpu ? L->ndring : L->nring), lim,
          (long long)h->max_extra);
}

/* A spare host slot, or a new one while the bound allows. */
static int take_host(ferry_loader *L, int64_t b, ring_slot **out,
                     ferry__err *err) {
  ferry__held *h = &L->held;
  if (h->nspare_s > 0) {
    *out = h->spare_s[--h->nspare_s];
    return 0;
  }
  if (h->nextra >= h->max_extra)
    return held_full(L, b, err);
  size_t want = 0;
  int rc = held_grow(L, err);
  if (!rc)
    rc = host_slot_new(L, out, &want, err);
  if (rc == FERRY_ENOMEM && want)
    rc = ferry__oom(err, L->rank, want,
                    "a slot for batch %lld (the caller holds %lld batches)",
                    (long long)b, (long long)held_count(L));
  if (!rc)
    h->nextra++;
  return rc;
}

static int take_device(ferry_loader *L, int64_t b, ferry__dslot **out,
                       ferry__err *err) {
  ferry__held *h = &L->held;
  if (h->nspare_d > 0) {
    *out = h->spare_d[--h->nspare_d];
    return 0;
  }
  if (h->nextra >= h->max_extra)
    return held_full(L, b, err);
  int rc = held_grow(L, err);
  if (!rc)
    rc = dev_slot_new(L, out, err);
  if (!rc)
    h->nextra++;
  return rc;
}

/* Host position i leaves the ring for L->held; a free slot takes it. */
static int swap_host(ferry_loader *L, int64_t i, int64_t b, ferry__err *err) {
  ring_slot *fresh;
  int rc = take_host(L, b, &fresh, err);
  if (rc)
    return rc;
  held_note(L, L->ring[i]->bidx);
  ferry__held *h = &L->held;
  h->held[h->nheld++] = (ferry__held_batch){L->ring[i], NULL};
  fresh->state = SLOT_FREE;
  L->ring[i] = fresh;
  return 0;
}

/* Device position j leaves the ring (with keep_host, with its paired host
 * slot): a free slot takes each. */
static int swap_device(ferry_loader *L, int64_t j, int64_t b, ferry__err *err) {
  ferry__held *h = &L->held;
  ferry__dslot *d = L->dring[j], *fd = NULL;
  ring_slot *fs = NULL;
  int rc = take_device(L, b, &fd, err);
  if (!rc && d->host >= 0 && (rc = take_host(L, b, &fs, err)) != 0)
    h->spare_d[h->nspare_d++] = fd; /* back, for the next try */
  if (rc)
    return rc;
  held_note(L, d->bidx);
  ring_slot *paired = NULL;
  if (d->host >= 0) {
    paired = L->ring[d->host];
    fs->state = SLOT_FREE;
    L->ring[d->host] = fs;
  }
  h->held[h->nheld++] = (ferry__held_batch){paired, d};
  fd->state = SLOT_FREE;
  fd->host = -1;
  fd->expect = d->bidx + L->ndring;
  d->host = -1;
  L->dring[j] = fd;
  return 0;
}

/* The device position whose slot keeps ferry_next from batch b: b's own,
 * or with keep_host the one paired with b's host slot; -1 when none. */
static int64_t device_blocker(const ferry_loader *L, int64_t b) {
  int64_t j = b % L->ndring;
  if (L->dring[j]->state == SLOT_HELD && L->dring[j]->bidx < b)
    return j;
  const ring_slot *s = L->ring[b % L->nring];
  if (s->state == SLOT_PAIRED && s->bidx != b)
    for (int64_t i = 0; i < L->ndring; i++)
      if (L->dring[i]->host == (int)(b % L->nring) &&
          L->dring[i]->state == SLOT_HELD)
        return i;
  return -1;
}

int ferry__held_make_room(epoch_state *ep, int64_t b, ferry__err *err) {
  ferry_loader *L = ep->L;
  int rc = 0;
  if (L->gpu) {
    int64_t j = device_blocker(L, b);
    if (j >= 0)
      rc = swap_device(L, j, b, err);
    /* the other slots held since: the workers need them next */
    for (int64_t i = 0; !rc && i < L->ndring; i++)
      if (L->dring[i]->state == SLOT_HELD && L->dring[i]->bidx < b &&
          swap_device(L, i, b, &(ferry__err){0}))
        break;
  } else {
    int64_t j = b % L->nring;
    if (L->ring[j]->state == SLOT_HELD && L->ring[j]->bidx < b)
      rc = swap_host(L, j, b, err);
    for (int64_t i = 0; !rc && i < L->nring; i++)
      if (L->ring[i]->state == SLOT_HELD && L->ring[i]->bidx < b &&
          swap_host(L, i, b, &(ferry__err){0}))
        break;
  }
  if (!rc)
    pthread_cond_broadcast(&ep->cv_work);
  return rc;
}

int ferry__held_find(const ferry_loader *L, const ferry_batch *batch,
                     ferry__held_batch *out) {
  const ferry__held *h = &L->held;
  for (int64_t i = 0; i < h->nheld; i++) {
    const ferry__held_batch *e = &h->held[i];
    if ((e->d && &e->d->batch == batch) || (!e->d && &e->s->batch == batch)) {
      *out = *e;
      return 1;
    }
  }
  for (int64_t i = 0; i < h->nspare_s; i++)
    if (&h->spare_s[i]->batch == batch)
      return 2;
  for (int64_t i = 0; i < h->nspare_d; i++)
    if (&h->spare_d[i]->batch == batch)
      return 2;
  return 0;
}

void ferry__held_drop(ferry_loader *L, const ferry__held_batch *hb) {
  ferry__held *h = &L->held;
  for (int64_t i = 0; i < h->nheld; i++)
    if (h->held[i].s == hb->s && h->held[i].d == hb->d) {
      h->held[i] = h->held[--h->nheld];
      break;
    }
  if (hb->s) {
    hb->s->state = SLOT_FREE;
    h->spare_s[h->nspare_s++] = hb->s;
  }
  if (hb->d) {
    hb->d->state = SLOT_FREE;
    hb->d->host = -1;
    h->spare_d[h->nspare_d++] = hb->d;
  }
}

void ferry__held_reset(ferry_loader *L) {
  while (L->held.nheld > 0) {
    ferry__held_batch hb = L->held.held[0];
    ferry__held_drop(L, &hb);
  }
}
