/*
 * test_device.c - the GPU stage (device=cuda), checked against the host.
 *
 *   test_device CHECK DATASET [OPTION=VALUE]...
 *
 * CHECK is one of
 *   values    every batch on the device (each shard, copied back) equals
 *             the batch a device=cpu loader with the same options serves,
 *             sample ids included, for two epochs; up to device_prefetch-1
 *             batches (FERRY_TEST_HOLD: that many, beyond the ring too) are
 *             held and re-checked just before their release (a buffer
 *             overwritten while held fails); pointers are device
 *             memory of the shard's device; keep_host data equals too;
 *             h2d_bytes counts every byte handed out.
 *   teardown  close mid-epoch with batches held and copies in flight.
 *   misuse    holding every device slot (held_memory=0: no slot beyond
 *             the ring), double release, host batches
 *             given to ferry_batch_wait: the errors the API promises.
 *   nccl      ferry_attach_nccl registers the ring on a one-rank
 *             communicator per rank, a batch enters ncclAllReduce and
 *             comes out equal, detach and close deregister (never on a
 *             communicator that reported an error).
 *   expect-error CODE  ferry_open or the epoch must fail with FERRY_E<CODE>
 *             (e.g. NODEV) on every rank with the same message.
 *
 * Without a usable CUDA device (cudaGetDeviceCount fails) it exits 77 and
 * says why, except expect-error, which needs none.  Under the fake CUDA
 * runtime of tests/gpu/fakecuda.c (LD_PRELOAD) it also checks the fake's
 * counters: no copy from pageable memory, pinned buffers allocated once at
 * open, nothing left allocated after ferry_close.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <ferry.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_NCCL_TEST
#include <nccl.h>
#endif

#include "fakecuda.h"

#include "../ferry_test.h"

static int rank;

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    ft_checks++;                                                               \
    if (e_ != cudaSuccess) {                                                   \
      ft_fail_at(__FILE__, __LINE__, #call);                                   \
      fprintf(stderr, "%s\n", cudaGetErrorString(e_));                         \
      goto out;                                                                \
    }                                                                          \
  } while (0)

static int fake_counters(fakecuda_counters *c) {
  void (*get)(fakecuda_counters *) = (void (*)(fakecuda_counters *))dlsym(
      RTLD_DEFAULT, "fakecuda_get_counters");
  if (!get)
    return 0;
  get(c);
  return 1;
}

static ferry_options *make_opts(int argc, char **argv, const char *device) {
  ferry_options *o = NULL;
  if (ferry_options_create(&o))
    return NULL;
  for (int i = 0; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq)
      continue;
    *eq = '\0';
    if (ferry_options_set(o, argv[i], eq + 1)) {
      fprintf(stderr, "rank %d: %s\n", rank, ferry_last_error(NULL));
      *eq = '=';
      ferry_options_free(o);
      return NULL;
    }
    *eq = '=';
  }
  if (device && ferry_options_set(o, "device", device)) {
    ferry_options_free(o);
    return NULL;
  }
  return o;
}

static int64_t opt_int(const ferry_options *o, const char *name) {
  char buf[64];
  ferry_options_get(o, name, buf, sizeof buf);
  return strtoll(buf, NULL, 10);
}

/* A host batch kept as the reference: the device=cpu loader runs first and
 * is closed before the device loader opens, because HDF5 is not
 * thread-safe and two loaders' I/O threads must not call it at once. */
typedef struct ref_batch {
  ferry_batch b;
  ferry_tensor vars[16];
} ref_batch;

static ref_batch *collect(const char *dataset, ferry_options *o, int epochs,
                          int64_t *n) {
  ferry_loader *H = NULL;
  ref_batch *refs = NULL;
  *n = 0;
  if (ferry_open(MPI_COMM_WORLD, dataset, o, &H)) {
    CHECK(0, "ferry_open (host): %s", ferry_last_error(NULL));
    return NULL;
  }
  for (int e = 0; e < epochs; e++) {
    CHECK(ferry_set_epoch(H, e) == 0, "set_epoch host: %s",
          ferry_last_error(H));
    ferry_batch *h;
    while (ferry_next(H, &h) == 0) {
      ref_batch *r = realloc(refs, (size_t)(*n + 1) * sizeof *refs);
      if (!r || h->nvars > 16)
        break;
      refs = r;
      r = &refs[(*n)++];
      r->b = *h;
      int64_t *ids = malloc((size_t)h->size * 8 + 1);
      uint8_t *pad = malloc((size_t)h->size + 1);
      memcpy(ids, h->sample_ids, (size_t)h->size * 8);
      memcpy(pad, h->padded, (size_t)h->size);
      r->b.sample_ids = ids;
      r->b.padded = pad;
      for (int v = 0; v < h->nvars; v++) {
        r->vars[v] = h->vars[v];
        r->vars[v].data = malloc(h->vars[v].nbytes + 1);
        memcpy(r->vars[v].data, h->vars[v].data, h->vars[v].nbytes);
        if (h->vars[v].offsets) { /* a ragged variable's offsets too */
          int64_t *off = malloc(((size_t)h->size + 1) * sizeof *off);
          memcpy(off, h->vars[v].offsets, ((size_t)h->size + 1) * sizeof *off);
          r->vars[v].offsets = off;
        }
        if (h->vars[v].lengths) { /* pad: the lengths */
          int64_t *len = malloc((size_t)h->size * sizeof *len + 1);
          memcpy(len, h->vars[v].lengths, (size_t)h->size * sizeof *len);
          r->vars[v].lengths = len;
        }
      }
      ferry_release(H, h);
    }
  }
  ferry_close(H);
  for (int64_t i = 0; i < *n; i++) /* after the last realloc */
    refs[i].b.vars = refs[i].vars;
  return refs;
}

static void free_refs(ref_batch *refs, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    free((void *)refs[i].b.sample_ids);
    free((void *)refs[i].b.padded);
    for (int v = 0; v < refs[i].b.nvars; v++) {
      free(refs[i].vars[v].data);
      free((void *)refs[i].vars[v].offsets);
      free((void *)refs[i].vars[v].lengths);
    }
  }
  free(refs);
}

/* A ragged variable of a device batch (one device): its host offsets,
 * its device offsets (the start of its region) and its values
 * (device_data, shards[0].data[v]) equal the host loader's. */
static void compare_ragged(const ferry_batch *d, const ferry_batch *h, int v,
                           cudaStream_t st) {
  const ferry_tensor *t = &d->vars[v], *w = &h->vars[v];
  size_t no = ((size_t)d->size + 1) * sizeof(int64_t);
  CHECK(d->nshards == 1 && t->offsets && t->device_offsets &&
            t->device_data == d->shards[0].data[v] &&
            d->shards[0].lengths[v] == NULL && t->nvalues == w->nvalues &&
            t->max_len == w->max_len && t->nbytes == w->nbytes &&
            t->shape[0] == w->shape[0],
        "batch %lld var %s: the ragged layout differs from the host's "
        "(nvalues %lld/%lld, max_len %lld/%lld)",
        (long long)d->index, t->name, (long long)t->nvalues,
        (long long)w->nvalues, (long long)t->max_len, (long long)w->max_len);
  if (!t->offsets || !t->device_offsets || t->nbytes != w->nbytes)
    return;
  CHECK(!memcmp(t->offsets, w->offsets, no),
        "batch %lld var %s: host offsets differ", (long long)d->index, t->name);
  unsigned char *buf = malloc(no + t->nbytes + 1);
  if (!buf)
    return;
  if (cudaMemcpyAsync(buf, t->device_offsets, no, cudaMemcpyDeviceToHost, st) !=
          cudaSuccess ||
      (t->nbytes &&
       cudaMemcpyAsync(buf + no, t->device_data, t->nbytes,
                       cudaMemcpyDeviceToHost, st) != cudaSuccess) ||
      cudaStreamSynchronize(st) != cudaSuccess)
    CHECK(0, "copying batch %lld var %s back failed", (long long)d->index,
          t->name);
  else
    CHECK(!memcmp(buf, w->offsets, no) && !memcmp(buf + no, w->data, t->nbytes),
          "epoch %lld batch %lld var %s: device offsets or values differ "
          "from the host loader's",
          (long long)d->epoch, (long long)d->index, t->name);
  free(buf);
}

/* A padded ragged variable of a device batch (pad=...): its shape, host
 * lengths, device lengths and padded values equal the host loader's; on
 * several devices (devices=all) each shard's (padded_shard). */
static void padded_shard(const ferry_batch *d, const ferry_batch *h, int v,
                         int i, cudaStream_t st) {
  const ferry_tensor *t = &d->vars[v], *w = &h->vars[v];
  const ferry_shard *sh = &d->shards[i];
  size_t each = h->size ? w->nbytes / (size_t)h->size : 0;
  size_t nl = (size_t)sh->size * sizeof(int64_t), nb = (size_t)sh->size * each;
  CHECK(t->lengths && !t->device_lengths && !t->device_data && !t->offsets &&
            sh->lengths[v] && sh->data[v] && t->shape[1] == w->shape[1] &&
            t->nbytes == w->nbytes,
        "batch %lld var %s shard %d: the padded layout on %d devices",
        (long long)d->index, t->name, i, d->nshards);
  if (!sh->lengths[v] || !sh->data[v] || t->nbytes != w->nbytes)
    return;
  unsigned char *buf = malloc(nl + nb + 1);
  if (!buf)
    return;
  if (cudaMemcpyAsync(buf, sh->lengths[v], nl, cudaMemcpyDeviceToHost, st) !=
          cudaSuccess ||
      (nb && cudaMemcpyAsync(buf + nl, sh->data[v], nb, cudaMemcpyDeviceToHost,
                             st) != cudaSuccess) ||
      cudaStreamSynchronize(st) != cudaSuccess)
    CHECK(0, "copying batch %lld var %s shard %d back failed",
          (long long)d->index, t->name, i);
  else
    CHECK(!memcmp(buf, w->lengths + sh->first, nl) &&
              !memcmp(buf + nl,
                      (const unsigned char *)w->data + (size_t)sh->first * each,
                      nb),
          "epoch %lld batch %lld var %s shard %d (device %d): lengths or "
          "padded rows differ from the host loader's",
          (long long)d->epoch, (long long)d->index, t->name, i, sh->device);
  free(buf);
}

static void compare_padded(const ferry_batch *d, const ferry_batch *h, int v,
                           cudaStream_t st) {
  const ferry_tensor *t = &d->vars[v], *w = &h->vars[v];
  size_t nl = (size_t)d->size * sizeof(int64_t);
  CHECK(d->nshards == 1 && t->lengths && t->device_lengths && !t->offsets &&
            !t->device_offsets &&
            (const void *)t->device_lengths == d->shards[0].lengths[v] &&
            t->device_data == d->shards[0].data[v] && t->ndim == w->ndim &&
            t->shape[1] == w->shape[1] && t->nbytes == w->nbytes &&
            t->max_len == w->max_len,
        "batch %lld var %s: the padded layout differs from the host's "
        "(width %lld/%lld, %zu/%zu bytes)",
        (long long)d->index, t->name, (long long)t->shape[1],
        (long long)w->shape[1], t->nbytes, w->nbytes);
  if (!t->lengths || !t->device_lengths || t->nbytes != w->nbytes)
    return;
  CHECK(!memcmp(t->lengths, w->lengths, nl),
        "batch %lld var %s: host lengths differ", (long long)d->index, t->name);
  unsigned char *buf = malloc(nl + t->nbytes + 1);
  if (!buf)
    return;
  if (cudaMemcpyAsync(buf, t->device_lengths, nl, cudaMemcpyDeviceToHost, st) !=
          cudaSuccess ||
      (t->nbytes &&
       cudaMemcpyAsync(buf + nl, t->device_data, t->nbytes,
                       cudaMemcpyDeviceToHost, st) != cudaSuccess) ||
      cudaStreamSynchronize(st) != cudaSuccess)
    CHECK(0, "copying batch %lld var %s back failed", (long long)d->index,
          t->name);
  else
    CHECK(!memcmp(buf, w->lengths, nl) && !memcmp(buf + nl, w->data, t->nbytes),
          "epoch %lld batch %lld var %s: device lengths or padded values "
          "differ from the host loader's",
          (long long)d->epoch, (long long)d->index, t->name);
  free(buf);
}

/* Copy every shard of a device batch back and compare with the host batch
 * (same epoch and index) and, with keep_host, the pinned host copy. */
static void compare(const ferry_batch *d, const ferry_batch *h,
                    cudaStream_t *streams, int keep_host) {
  CHECK(d->size == h->size && d->index == h->index && d->epoch == h->epoch,
        "batch %lld/%lld size %lld vs host %lld/%lld size %lld",
        (long long)d->epoch, (long long)d->index, (long long)d->size,
        (long long)h->epoch, (long long)h->index, (long long)h->size);
  if (d->size != h->size)
    return;
  CHECK(!memcmp(d->sample_ids, h->sample_ids, (size_t)d->size * 8) &&
            !memcmp(d->padded, h->padded, (size_t)d->size),
        "batch %lld: sample ids differ from the host loader's",
        (long long)d->index);
  int64_t covered = 0;
  for (int i = 0; i < d->nshards; i++) {
    const ferry_shard *sh = &d->shards[i];
    CHECK(sh->first == covered, "shard %d starts at %lld, not %lld", i,
          (long long)sh->first, (long long)covered);
    covered += sh->size;
    CUDA_OK(cudaSetDevice(sh->device));
    for (int v = 0; v < d->nvars; v++) {
      const ferry_tensor *t = &d->vars[v];
      size_t n = (size_t)sh->size * t->row_bytes;
      if (h->vars[v].offsets) { /* ragged: its own checks */
        compare_ragged(d, h, v, streams[i]);
        continue;
      }
      if (h->vars[v].lengths) { /* padded ragged: its own checks */
        if (d->nshards > 1)
          padded_shard(d, h, v, i, streams[i]);
        else
          compare_padded(d, h, v, streams[i]);
        continue;
      }
      struct cudaPointerAttributes pa;
      CUDA_OK(cudaPointerGetAttributes(&pa, sh->data[v]));
      CHECK(pa.type == cudaMemoryTypeDevice && pa.device == sh->device,
            "shard %d var %s: not device memory of device %d", i, t->name,
            sh->device);
      if (d->nshards == 1)
        CHECK(t->device_data == sh->data[v], "device_data != shards[0]");
      else
        CHECK(t->device_data == NULL, "device_data set with %d shards",
              d->nshards);
      if (!n)
        continue;
      unsigned char *buf = malloc(n);
      CHECK(buf != NULL, "out of memory");
      if (!buf)
        return;
      CUDA_OK(cudaMemcpyAsync(buf, sh->data[v], n, cudaMemcpyDeviceToHost,
                              streams[i]));
      CUDA_OK(cudaStreamSynchronize(streams[i]));
      const unsigned char *want = (const unsigned char *)h->vars[v].data +
                                  (size_t)sh->first * t->row_bytes;
      CHECK(!memcmp(buf, want, n),
            "epoch %lld batch %lld shard %d (device %d) var %s: device data "
            "differs from the host loader's",
            (long long)d->epoch, (long long)d->index, i, sh->device, t->name);
      if (keep_host)
        CHECK(t->data && !memcmp((const unsigned char *)t->data +
                                     (size_t)sh->first * t->row_bytes,
                                 want, n),
              "batch %lld var %s: keep_host data differs", (long long)d->index,
              t->name);
      free(buf);
    }
  }
  CHECK(covered == d->size, "shards cover %lld of %lld samples",
        (long long)covered, (long long)d->size);
  for (int v = 0; !keep_host && v < d->nvars; v++)
    CHECK(d->vars[v].data == NULL, "keep_host=no but var %s has host data",
          d->vars[v].name);
out:;
}

/* The bytes of one sample of variable v in a shard of device batch d (h:
 * the host loader's): a dense row, or a padded ragged sample's padded
 * rows. */
static size_t shard_row_bytes(const ferry_batch *d, const ferry_batch *h,
                              int v) {
  if (h->vars[v].lengths)
    return h->size ? h->vars[v].nbytes / (size_t)h->size : 0;
  return d->vars[v].row_bytes;
}

/* Release a batch while a copy of it is still queued on the consumer's
 * streams: ferry_release must make the reuse of its buffers wait for that
 * work (the event it records), so the copy still reads this batch. */
static void release_checked(ferry_loader *D, const ferry_batch *d,
                            const ferry_batch *h, cudaStream_t *streams) {
  unsigned char *bufs[FERRY_MAX_DEVICES][16] = {{0}};
  for (int i = 0; i < d->nshards; i++) {
    const ferry_shard *sh = &d->shards[i];
    cudaSetDevice(sh->device);
    for (int v = 0; v < d->nvars && v < 16; v++) {
      /* a ragged variable on one device: all its values; else the
       * shard's rows (a padded one's: size x its padded row) */
      int rg = (d->vars[v].offsets || d->vars[v].lengths) && d->nshards == 1;
      const void *src = rg ? d->vars[v].device_data : sh->data[v];
      size_t n =
          rg ? d->vars[v].nbytes : (size_t)sh->size * shard_row_bytes(d, h, v);
      bufs[i][v] = malloc(n + 1);
      if (n && cudaMemcpyAsync(bufs[i][v], src, n, cudaMemcpyDeviceToHost,
                               streams[i]) != cudaSuccess)
        CHECK(0, "cudaMemcpyAsync D2H before release");
    }
  }
  CHECK(ferry_release(D, (ferry_batch *)d) == 0, "release: %s",
        ferry_last_error(NULL));
  for (int i = 0; i < d->nshards; i++) {
    const ferry_shard *sh = &d->shards[i];
    cudaSetDevice(sh->device);
    CHECK(cudaStreamSynchronize(streams[i]) == cudaSuccess, "sync");
    for (int v = 0; v < d->nvars && v < 16; v++) {
      int rg = (h->vars[v].offsets || h->vars[v].lengths) && d->nshards == 1;
      size_t each = shard_row_bytes(d, h, v);
      size_t n = rg ? h->vars[v].nbytes : (size_t)sh->size * each;
      CHECK(!memcmp(bufs[i][v],
                    (const unsigned char *)h->vars[v].data +
                        (rg ? 0 : (size_t)sh->first * each),
                    n),
            "batch %lld shard %d var %s: overwritten before the work queued "
            "before ferry_release ran",
            (long long)h->index, i, d->vars[v].name);
      free(bufs[i][v]);
    }
  }
}

/* The most batches check_values holds (FERRY_TEST_HOLD). */
#define MAX_HOLD 128

static int check_values(ferry_loader *D, const ref_batch *refs, int64_t nrefs,
                        int64_t hold, int64_t depth) {
  cudaStream_t streams[FERRY_MAX_DEVICES] = {0};
  ferry_device_info di;
  fakecuda_counters c0, c1;
  int fake = fake_counters(&c0);
  int64_t bytes = 0, k = 0;
  CHECK(ferry_device_info_get(D, &di) == 0 && di.cuda == 1 && di.ndevices > 0,
        "device info: cuda=%d ndevices=%d (%s)", di.cuda, di.ndevices,
        di.how ? di.how : "");
  for (int i = 0; i < di.ndevices; i++) {
    CUDA_OK(cudaSetDevice(di.devices[i]));
    CUDA_OK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  const ferry_batch *held[MAX_HOLD + 1];
  const ferry_batch *href[MAX_HOLD + 1];
  int nheld = 0;
  long next_allocs = 0; /* pinned or device allocations inside ferry_next */
  for (int64_t epoch = 0; epoch < 2; epoch++) {
    CHECK(ferry_set_epoch(D, epoch) == 0, "set_epoch: %s", ferry_last_error(D));
    /* ferry_set_epoch may make the slots (ragged: for the epoch's largest
     * batch); the batches then allocate nothing */
    fakecuda_counters e0, e1;
    if (fake)
      fake_counters(&e0);
    for (;;) {
      ferry_batch *d = NULL;
      int rd = ferry_next(D, &d);
      if (rd == FERRY_END)
        break;
      CHECK(rd == 0, "ferry_next: %d (%s)", rd, ferry_last_error(D));
      CHECK(k < nrefs, "more device batches than host batches");
      if (rd || k >= nrefs)
        break;
      const ferry_batch *h = &refs[k++].b;
      CHECK(d->nshards == di.ndevices, "nshards %d", d->nshards);
      for (int i = 0; i < d->nshards; i++)
        CHECK(ferry_shard_wait(d, i, streams[i]) == 0, "shard_wait: %s",
              ferry_last_error(NULL));
      compare(d, h, streams, d->vars[0].data != NULL);
      for (int v = 0; v < d->nvars; v++)
        bytes += (int64_t)d->vars[v].nbytes;
      held[nheld] = d;
      href[nheld++] = h;
      if (nheld > hold) { /* re-check the oldest, then release it */
        compare(held[0], href[0], streams, held[0]->vars[0].data != NULL);
        release_checked(D, held[0], href[0], streams);
        memmove(held, held + 1, (size_t)(nheld - 1) * sizeof *held);
        memmove(href, href + 1, (size_t)(nheld - 1) * sizeof *href);
        nheld--;
      }
    }
    if (fake) {
      fake_counters(&e1);
      next_allocs +=
          e1.host_allocs - e0.host_allocs + e1.device_allocs - e0.device_allocs;
    }
    while (nheld > 0) {
      compare(held[0], href[0], streams, held[0]->vars[0].data != NULL);
      ferry_release(D, (ferry_batch *)held[0]);
      memmove(held, held + 1, (size_t)(nheld - 1) * sizeof *held);
      memmove(href, href + 1, (size_t)(nheld - 1) * sizeof *href);
      nheld--;
    }
  }
  CHECK(k == nrefs, "%lld device batches, %lld host batches", (long long)k,
        (long long)nrefs);
  ferry_stats st;
  ferry_stats_get(D, &st);
  /* sparse=dense made on the device: the CSR rows go over (their bytes
   * printed against the dense rows handed out; ferry's kernel ran under
   * the fake) */
  const char *notes = ferry_dataset_notes(D);
  int dense_dev = notes && strstr(notes, "by ferry's kernel");
  if (dense_dev) {
    CHECK(st.h2d_bytes > 0,
          "sparse=dense on the device: h2d_bytes %lld, dense handed out %lld",
          (long long)st.h2d_bytes, (long long)bytes);
    printf("rank %d: sparse=dense on the device: h2d_bytes %lld for %lld "
           "bytes of batches handed out (%.1f%%)\n",
           rank, (long long)st.h2d_bytes, (long long)bytes,
           bytes ? 100.0 * (double)st.h2d_bytes / (double)bytes : 0.0);
  } else {
    CHECK(st.h2d_bytes == bytes, "h2d_bytes %lld, handed out %lld",
          (long long)st.h2d_bytes, (long long)bytes);
  }
  CHECK(st.h2d_seconds > 0, "h2d_seconds %g", st.h2d_seconds);
  if (fake) {
    fake_counters(&c1);
    if (dense_dev)
      CHECK(c1.kernel_launches > c0.kernel_launches,
            "sparse=dense on the device: no kernel launched");
    CHECK(c1.h2d_from_pageable == c0.h2d_from_pageable,
          "%ld copies from pageable host memory",
          c1.h2d_from_pageable - c0.h2d_from_pageable);
    /* holding more than the ring gives held batches pinned slots of their
     * own (slots.c), within held_memory */
    CHECK(next_allocs == 0 || hold >= depth,
          "%ld pinned or device allocations in ferry_next (want 0: made at "
          "open or ferry_set_epoch)",
          next_allocs);
    CHECK(c1.h2d_cross_device == c0.h2d_cross_device,
          "%ld copies on another device's stream",
          c1.h2d_cross_device - c0.h2d_cross_device);
  }
out:
  for (int i = 0; i < di.ndevices; i++)
    if (streams[i])
      cudaStreamDestroy(streams[i]);
  return ft_failures;
}

static void check_misuse(ferry_loader *D, ferry_loader *H) {
  int64_t depth = -1;
  ferry_batch *b[64], *x = NULL;
  cudaStream_t st = NULL;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK(ferry_set_epoch(D, 0) == 0, "set_epoch: %s", ferry_last_error(D));
  CHECK(ferry_set_epoch(H, 0) == 0, "set_epoch host");
  ferry_memory_budget mb;
  ferry_memory_budget_get(D, &mb);
  depth = (int64_t)(mb.device_bytes / (mb.batch_bytes ? mb.batch_bytes : 1));
  CHECK(depth >= 1 && depth < 64, "device ring depth %lld", (long long)depth);
  CHECK(mb.pinned_bytes == mb.ring_bytes, "pinned %zu, ring %zu",
        mb.pinned_bytes, mb.ring_bytes);
  for (int64_t i = 0; i < depth; i++)
    CHECK(ferry_next(D, &b[i]) == 0, "next %lld: %s", (long long)i,
          ferry_last_error(D));
  int rc = ferry_next(D, &x);
  CHECK(rc == FERRY_EINVAL && strstr(ferry_last_error(D), "device batches") &&
            strstr(ferry_last_error(D), "held_memory=0"),
        "ferry_next with every device slot held: %d (%s), want FERRY_EINVAL",
        rc, ferry_last_error(D));
  CHECK(ferry_batch_wait(b[0], st) == 0, "wait: %s", ferry_last_error(NULL));
  CHECK(ferry_release(D, b[0]) == 0, "release");
  CHECK(ferry_release(D, b[0]) == FERRY_EINVAL, "double release accepted");
  ferry_batch *h = NULL;
  CHECK(ferry_next(H, &h) == 0, "host next");
  CHECK(ferry_batch_wait(h, st) == FERRY_EINVAL, "wait on a host batch");
  CHECK(ferry_shard_wait(b[1], 99, st) == FERRY_EINVAL, "shard 99 accepted");
  CHECK(ferry_attach_nccl(H, (void *)1) == FERRY_ENOTSUP,
        "attach_nccl on a host loader: %s", ferry_last_error(H));
  /* The epoch is over after the misuse error: close with batches held. */
out:
  if (st)
    cudaStreamDestroy(st);
}

static void check_teardown(ferry_loader *D) {
  ferry_batch *b = NULL;
  cudaStream_t st = NULL;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK(ferry_set_epoch(D, 0) == 0, "set_epoch: %s", ferry_last_error(D));
  for (int i = 0; i < 2; i++) {
    CHECK(ferry_next(D, &b) == 0, "next: %s", ferry_last_error(D));
    if (b)
      ferry_batch_wait(b, st);
  }
  /* a new epoch while batches are held and copies are running */
  CHECK(ferry_set_epoch(D, 1) == 0, "set_epoch 1: %s", ferry_last_error(D));
  CHECK(ferry_next(D, &b) == 0, "next: %s", ferry_last_error(D));
  CUDA_OK(cudaStreamSynchronize(st));
out:
  if (st)
    cudaStreamDestroy(st);
}

#ifdef HAVE_NCCL_TEST
static void check_nccl(ferry_loader *D, ferry_loader *H) {
  ncclComm_t comm = NULL;
  ncclUniqueId id;
  cudaStream_t st = NULL;
  void *recv = NULL;
  unsigned char *back = NULL;
  ferry_device_info di;
  fakecuda_counters c0, c1;
  int fake = fake_counters(&c0);
  ferry_device_info_get(D, &di);
  CUDA_OK(cudaSetDevice(di.devices[0]));
  CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
  CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess, "ncclCommInitRank");
  if (!comm)
    goto out;
  CHECK(ferry_attach_nccl(D, comm) == 0, "attach: %s", ferry_last_error(D));
  CHECK(ferry_attach_nccl(D, comm) == FERRY_EINVAL, "attached twice");
  ferry_device_info_get(D, &di);
  CHECK(di.nccl_attached == 1, "nccl_attached %d", di.nccl_attached);
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  ferry_var_info vi;
  int ragged = ferry_var_info_get(D, 0, &vi) == 0 && vi.ragged;
  fakecuda_counters e0, e1;
  fake_counters(&e0);
  CHECK(ferry_set_epoch(D, 0) == 0 && ferry_set_epoch(H, 0) == 0, "epochs");
  /* ragged: ferry_set_epoch made the device slots for the epoch's largest
   * batch; the communicator stays attached, registered on the new ones */
  ferry_device_info_get(D, &di);
  CHECK(di.nccl_attached == 1, "nccl_attached %d after set_epoch",
        di.nccl_attached);
  if (fake && ragged) {
    fake_counters(&e1);
    CHECK(e1.deregistrations - e0.deregistrations > 0 &&
              e1.registrations - e0.registrations ==
                  e1.deregistrations - e0.deregistrations,
          "set_epoch of a ragged dataset: %ld registrations, %ld "
          "deregistrations (want the ring's again)",
          e1.registrations - e0.registrations,
          e1.deregistrations - e0.deregistrations);
  }
  ferry_batch *d = NULL, *h = NULL;
  CHECK(ferry_next(D, &d) == 0 && ferry_next(H, &h) == 0, "next");
  if (!d || !h)
    goto out;
  size_t n = ragged ? d->vars[0].nbytes /* the values */
                    : (size_t)d->shards[0].size * d->vars[0].row_bytes;
  CUDA_OK(cudaMalloc(&recv, n ? n : 1));
  back = malloc(n ? n : 1);
  CHECK(ferry_batch_wait(d, st) == 0, "wait");
  CHECK(ncclAllReduce(d->shards[0].data[0], recv, n, ncclUint8, ncclMax, comm,
                      st) == ncclSuccess,
        "ncclAllReduce on a batch buffer");
  CUDA_OK(cudaMemcpyAsync(back, recv, n, cudaMemcpyDeviceToHost, st));
  CUDA_OK(cudaStreamSynchronize(st));
  CHECK(!memcmp(back, h->vars[0].data, n),
        "a batch through ncclAllReduce (one rank, max) differs");
  ferry_release(D, d);
  ferry_release(H, h);
  CHECK(ferry_detach_nccl(D) == 0, "detach: %s", ferry_last_error(D));
  if (fake) {
    fake_counters(&c1);
    CHECK(c1.registrations - c0.registrations ==
                  c1.deregistrations - c0.deregistrations &&
              c1.registrations > c0.registrations,
          "registered %ld, deregistered %ld",
          c1.registrations - c0.registrations,
          c1.deregistrations - c0.deregistrations);
    /* A communicator that failed: close must not call into it. */
    void (*brk)(void *) =
        (void (*)(void *))dlsym(RTLD_DEFAULT, "fakecuda_break_comm");
    CHECK(ferry_attach_nccl(D, comm) == 0, "attach again: %s",
          ferry_last_error(D));
    if (brk)
      brk(comm);
  }
out:
  free(back);
  if (recv)
    cudaFree(recv);
  if (st)
    cudaStreamDestroy(st);
  /* the loader is closed by main before the communicator is aborted */
  (void)comm;
  if (comm) {
    ferry_close(D);
    if (fake) {
      fake_counters(&c1);
      CHECK(c1.deregister_on_broken == c0.deregister_on_broken,
            "ferry_close deregistered on a failed communicator");
    }
    ncclCommAbort(comm);
  }
}
#endif

static int code_of(const char *name) {
  static const struct {
    const char *n;
    int c;
  } t[] = {{"INVAL", FERRY_EINVAL},
           {"NOTSUP", FERRY_ENOTSUP},
           {"NODEV", FERRY_ENODEV},
           {"NOMEM", FERRY_ENOMEM},
           {"MISMATCH", FERRY_EMISMATCH}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(name, t[i].n))
      return t[i].c;
  return 0;
}

/* The same code and message on every rank. */
static void same_everywhere(int rc, const char *msg) {
  char mine[1024], first[1024];
  snprintf(mine, sizeof mine, "%d %s", rc, msg);
  memcpy(first, mine, sizeof first);
  MPI_Bcast(first, sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = !strcmp(first, mine), all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  CHECK(all, "ranks got different errors; mine: %s", mine);
}

static void expect_error(int want, const char *dataset, int argc, char **argv) {
  ferry_options *o = make_opts(argc, argv, NULL);
  ferry_loader *L = NULL;
  int rc = o ? ferry_open(MPI_COMM_WORLD, dataset, o, &L) : FERRY_EINVAL;
  const char *msg = ferry_last_error(NULL);
  if (rc == 0) { /* a failure during the epoch: a failed copy */
    ferry_batch *b;
    rc = ferry_set_epoch(L, 0);
    while (!rc && (rc = ferry_next(L, &b)) == 0)
      ferry_release(L, b);
    msg = ferry_last_error(L);
  }
  if (rank == 0)
    printf("error %d: %s\n", rc, msg);
  CHECK(rc == want, "got %d (%s), want %d", rc, msg, want);
  same_everywhere(rc, msg);
  ferry_close(L);
  ferry_options_free(o);
}

int main(int argc, char **argv) {
  int provided;
  ferry_options *od = NULL, *oh = NULL;
  ferry_loader *D = NULL, *H = NULL;
  fakecuda_counters c0, c1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ft_set_rank(rank);
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s values|teardown|misuse|nccl|expect-error CODE "
            "DATASET [OPTION=VALUE]...\n",
            argv[0]);
    MPI_Finalize();
    return 99;
  }
  const char *check = argv[1];
  if (!strcmp(check, "expect-error")) {
    expect_error(code_of(argv[2]), argv[3], argc - 4, argv + 4);
    goto done;
  }
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  int have = e == cudaSuccess && ndev > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0)
      printf("SKIP: no usable CUDA device (cudaGetDeviceCount: %s)\n",
             e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    MPI_Finalize();
    return 77;
  }
  const char *dataset = argv[2];
  od = make_opts(argc - 3, argv + 3, "cuda");
  oh = make_opts(argc - 3, argv + 3, "cpu");
  int fake = fake_counters(&c0);
  CHECK(od && oh, "bad options");
  if (!od || !oh)
    goto done;
  if (!strcmp(check, "values")) {
    /* FERRY_TEST_HOLD=N holds N batches, more than the device ring holds
     * (issue 30: held batches get slots of their own, held_memory) */
    int64_t depth = opt_int(od, "device_prefetch"), hold = depth - 1, nrefs = 0;
    if (getenv("FERRY_TEST_HOLD"))
      hold = atoll(getenv("FERRY_TEST_HOLD"));
    ref_batch *refs = collect(dataset, oh, 2, &nrefs);
    if (ferry_open(MPI_COMM_WORLD, dataset, od, &D)) {
      CHECK(0, "ferry_open: %s", ferry_last_error(NULL));
      free_refs(refs, nrefs);
      goto done;
    }
    check_values(D, refs, nrefs, hold < MAX_HOLD ? hold : MAX_HOLD, depth);
    free_refs(refs, nrefs);
  } else if (ferry_open(MPI_COMM_WORLD, dataset, od, &D) ||
             ferry_open(MPI_COMM_WORLD, dataset, oh, &H)) {
    CHECK(0, "ferry_open: %s", ferry_last_error(NULL));
    goto done;
  } else if (!strcmp(check, "misuse")) {
    check_misuse(D, H);
  } else if (!strcmp(check, "teardown")) {
    check_teardown(D);
  } else if (!strcmp(check, "nccl")) {
#ifdef HAVE_NCCL_TEST
    check_nccl(D, H);
    D = NULL; /* closed there, before the communicator is aborted */
#else
    if (rank == 0)
      printf("SKIP: nccl: this test was built without NCCL\n");
    ferry_close(D);
    ferry_close(H);
    MPI_Finalize();
    return 77;
#endif
  } else {
    CHECK(0, "unknown check '%s'", check);
  }
  CHECK(ferry_close(D) == 0, "ferry_close: %s", ferry_last_error(NULL));
  ferry_close(H);
  if (fake) {
    fake_counters(&c1);
    CHECK(c1.live_device_allocs == c0.live_device_allocs &&
              c1.live_host_allocs == c0.live_host_allocs,
          "after ferry_close: %ld device and %ld pinned allocations left",
          c1.live_device_allocs - c0.live_device_allocs,
          c1.live_host_allocs - c0.live_host_allocs);
    CHECK(c1.stream_creates - c0.stream_creates ==
              c1.stream_destroys - c0.stream_destroys,
          "streams created %ld, destroyed %ld",
          c1.stream_creates - c0.stream_creates,
          c1.stream_destroys - c0.stream_destroys);
  }
done:
  ferry_options_free(od);
  ferry_options_free(oh);
  {
    char name[64];
    snprintf(name, sizeof name, "test_device %s", check);
    int status = ft_mpi_summary(name, MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
  }
}
