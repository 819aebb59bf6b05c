/*
 * loader/decode.c - decode= (issue 28, docs/images.md "Decode"): encoded
 * images served as fixed-shape pixels.  A bytes variable (ragged uint8: a
 * WebDataset jpg or png member per sample) named by decode= becomes, once
 * the manifest is shared, a dense variable of [H, W, C] uint8 or
 * [C, H, W] float32 in a virtual dataset over the shared manifest, made by
 * every rank as sparse=dense's is (decision 0054; here 0058): the other
 * variables pass through.  The view's backend reads a decoded variable's
 * bytes for rows [row, row + n) through the dataset's own backend (one
 * read of the ragged range) and decodes each sample with the image core
 * (src/image) into its row of the caller's buffer.
 *
 * Decoding runs on a decode pool (backends/pool.c) of `threads` lanes, one
 * job a sample; with ferry__io_params.defer the jobs are left running and
 * io_wait settles them, so the `threads` extents of a group decode at
 * once.  A job takes a scratch (TurboJPEG handle, pixel and resize
 * buffers) from a free list of one per lane and gives it back, so no two
 * running jobs share one.  The random crop and flip are keyed by
 * (seed, epoch, the sample's global index) alone: the same seed gives the
 * same pixels whatever the threads' timing, another epoch another crop.
 *
 * A corrupt image is an error naming the shard, the variable, the sample
 * (global index and row in its shard) and the rank; the pool keeps the
 * first failing sample's error in sample order, and the loader's vote
 * gives every rank the same one.  The dense rows are the view's
 * variables, so read buffers, batches and the budget hold their size.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"
#include "core/options.h"
#include "image/image.h"
#include "loader/cache.h"
#include "loader/loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The generator's stream of the per-sample decode keys: "dec". */
#define DECODE_STREAM 0x646563ull

/* The view's own data (ferry__manifest.aux): per view variable, its inner
 * variable and whether it is decoded; the spec and the seed. */
typedef struct dview {
  int n;
  int *src;     /* [n] inner variable */
  int *decoded; /* [n] 1: pixels from src's bytes */
  ferry__img_spec spec;
  uint64_t seed;
  /* ferry_stats' images_decoded and decode_cpu_seconds: added by the
   * decode jobs of every epoch (any lane), read by ferry_stats_get */
  _Atomic int64_t images, cpu_ns;
} dview;

static void dview_free(void *p) {
  dview *d = p;
  if (d) {
    free(d->src);
    free(d->decoded);
  }
  free(d);
}

int ferry__decode_is(const ferry__manifest *m) {
  return m && m->backend && !strcmp(m->backend, "decode") && m->inner;
}

/* Whether name is one of the ","-separated names of list. */
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == n && !memcmp(p, name, n))
      return 1;
    p = e ? e + 1 : p + k;
  }
  return 0;
}

/* The options into spec; bad values and combinations refused naming the
 * option.  Local, the same on every rank (the options are checked equal). */
static int spec_of(const ferry_options *o, ferry__img_spec *s,
                   ferry__err *err) {
  ferry__img_spec_init(s);
  int64_t h = 0, w = 0, to = 0;
  int mode = 0;
  double f[3];
  if (ferry__opt_image_size(o->image_size ? o->image_size : "224", &h, &w))
    return ferry__seterr(err, FERRY_EINVAL, "option image_size: bad value");
  if (ferry__opt_resize(o->resize, &mode, &to))
    return ferry__seterr(err, FERRY_EINVAL, "option resize: bad value");
  s->height = (uint32_t)h;
  s->width = (uint32_t)w;
  s->resize = mode == 1   ? FERRY__IMG_RESIZE_SHORTER
              : mode == 2 ? FERRY__IMG_RESIZE_EXACT
                          : FERRY__IMG_RESIZE_NONE;
  s->resize_to = (uint32_t)to;
  s->crop = o->crop == FERRY__CROP_RANDOM   ? FERRY__IMG_CROP_RANDOM
            : o->crop == FERRY__CROP_CENTER ? FERRY__IMG_CROP_CENTER
                                            : FERRY__IMG_CROP_NONE;
  if (o->channels != 1 && o->channels != 3)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option channels = %lld: 3 (RGB) or 1 (gray)",
                         (long long)o->channels);
  s->channels = (int)o->channels;
  s->layout =
      o->layout == FERRY__LAYOUT_CHW ? FERRY__IMG_CHW_F32 : FERRY__IMG_HWC_U8;
  s->flip = o->flip;
  s->dct_scale = o->dct_scale;
  if (ferry__opt_range(o->crop_scale, &s->scale_min, &s->scale_max) ||
      s->scale_max > 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option crop_scale = '%s': LO:HI with 0 < LO <= HI "
                         "<= 1 (area fractions)",
                         o->crop_scale ? o->crop_scale : "");
  if (ferry__opt_range(o->crop_ratio, &s->ratio_min, &s->ratio_max))
    return ferry__seterr(err, FERRY_EINVAL, "option crop_ratio: bad value");
  if (s->crop == FERRY__IMG_CROP_RANDOM && s->resize != FERRY__IMG_RESIZE_NONE)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option resize = '%s' with crop=random: the random "
                         "crop resizes its own box to image_size (resize "
                         "applies with crop=center or crop=none)",
                         o->resize);
  if (s->crop == FERRY__IMG_CROP_NONE && s->resize == FERRY__IMG_RESIZE_SHORTER)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option resize = '%s' with crop=none: the shorter "
                         "side's resize keeps the aspect, so the output has "
                         "no fixed shape (add crop=center, or resize=exact)",
                         o->resize);
  const char *names[2] = {"mean", "std"};
  const char *vals[2] = {o->mean, o->std};
  for (int k = 0; k < 2; k++) {
    if (!vals[k] || !*vals[k])
      continue;
    if (s->layout != FERRY__IMG_CHW_F32)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option %s with layout=hwc: uint8 pixels are not "
                           "normalised (layout=chw serves float32 (v / 255 - "
                           "mean) / std)",
                           names[k]);
    int n = ferry__opt_floats(vals[k], f);
    if (n != 1 && n != s->channels)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option %s = '%s': %d value%s for channels=%d "
                           "(one, or one per channel)",
                           names[k], vals[k], n, n == 1 ? "" : "s",
                           s->channels);
    for (int c = 0; c < 3; c++) {
      float v = (float)f[n == 1 ? 0 : c];
      if (k == 0)
        s->mean[c] = v;
      else
        s->std[c] = v;
    }
  }
  char why[256] = "";
  if (ferry__img_spec_check(s, why, sizeof why))
    return ferry__seterr(err, FERRY_EINVAL, "option decode: %s", why);
  return 0;
}

static void view_free(ferry__manifest *vm) {
  vm->inner = NULL;
  ferry__manifest_free(vm);
}

/* Variable k of the view (vars and every part's fields) from inner
 * variable i: a copy, or (decoded) the dense pixels. */
static int view_var(const ferry__manifest *in, ferry__manifest *vm, int k,
                    int i, int decoded, const ferry__img_spec *s) {
  const ferry__var *x = &in->vars[i];
  ferry__var *v = &vm->vars[k];
  if (decoded) {
    char storage[320];
    int chw = s->layout == FERRY__IMG_CHW_F32;
    v->name = strdup(x->name);
    v->dtype = chw ? FERRY_FLOAT32 : FERRY_UINT8;
    v->row_ndim = 3;
    const int64_t h = s->height, w = s->width, c = s->channels;
    v->row_shape[0] = chw ? c : h;
    v->row_shape[1] = chw ? h : w;
    v->row_shape[2] = chw ? w : c;
    v->row_bytes = (size_t)s->height * s->width * (size_t)s->channels *
                   (chw ? sizeof(float) : 1);
    /* every choice that changes the pixels is in the storage string, so
     * the manifest hash (the plan's certificate, checkpoints) has it */
    snprintf(storage, sizeof storage,
             "pixels decoded from the bytes of %s (decode=): %ux%u, "
             "%d channel%s, %s, resize %d:%u, crop %d, scale %.17g:%.17g, "
             "ratio %.17g:%.17g, flip %d, dct %d, mean %g,%g,%g, std %g,%g,%g",
             x->name, s->height, s->width, s->channels,
             s->channels > 1 ? "s" : "", chw ? "chw float32" : "hwc uint8",
             s->resize, s->resize_to, s->crop, s->scale_min, s->scale_max,
             s->ratio_min, s->ratio_max, s->flip, s->dct_scale,
             (double)s->mean[0], (double)s->mean[1], (double)s->mean[2],
             (double)s->std[0], (double)s->std[1], (double)s->std[2]);
    v->storage = strdup(storage);
  } else {
    *v = *x;
    v->name = strdup(x->name);
    v->storage = x->storage ? strdup(x->storage) : NULL;
    v->categories = x->categories ? strdup(x->categories) : NULL;
  }
  if (!v->name || (!v->storage && (decoded || x->storage)) ||
      (!v->categories && !decoded && x->categories))
    return FERRY_ENOMEM;
  for (int64_t p = 0; p < in->nparts; p++) {
    const ferry__part *a = &in->parts[p];
    ferry__part *b = &vm->parts[p];
    if (!(b->paths[k] = strdup(a->paths[i])))
      return FERRY_ENOMEM;
    b->data_offset[k] = a->data_offset[i];
    b->file_size[k] = a->file_size[i];
    if (!decoded && x->ragged) { /* a passthrough ragged variable: its
                                  * offsets, copied (the view owns them) */
      size_t bytes = ((size_t)a->num_samples + 1) * sizeof(int64_t);
      if (!b->roff && !(b->roff = calloc((size_t)vm->nvars, sizeof *b->roff)))
        return FERRY_ENOMEM;
      if (!(b->roff[k] = malloc(bytes)))
        return FERRY_ENOMEM;
      memcpy(b->roff[k], a->roff[i], bytes);
    }
  }
  return 0;
}

/* decode='s names checked against the dataset: each one of its ragged
 * uint8 variables of one byte a row. */
static int check_names(const ferry__manifest *in, const char *list,
                       ferry__err *err) {
  char name[256];
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    snprintf(name, sizeof name, "%.*s", (int)(k < 255 ? k : 255), p);
    p = e ? e + 1 : p + k;
    int found = -1;
    for (int i = 0; i < in->nvars && found < 0; i++)
      if (!strcmp(in->vars[i].name, name))
        found = i;
    if (!*name)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option decode = '%s': an empty name", list);
    if (found < 0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option decode: '%s' is not a variable of dataset "
                           "%s (or not selected by vars)",
                           name, in->spec);
    const ferry__var *x = &in->vars[found];
    if (!x->ragged || x->dtype != FERRY_UINT8 || x->row_bytes != 1)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option decode: variable %s of dataset %s is %s%s, "
                           "not the bytes of encoded images (a ragged uint8)",
                           name, in->spec, x->ragged ? "ragged " : "",
                           ferry_dtype_name(x->dtype));
  }
  return 0;
}

int ferry__decode_wrap(ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  const ferry__manifest *in = &L->m;
  if (!o->decode || !*o->decode)
    return 0;
  if (in->inner || o->pack != FERRY__PACK_NONE || o->sparse)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option decode with %s: images are decoded from a "
                         "dataset's own bytes variables",
                         o->pack != FERRY__PACK_NONE ? "pack"
                         : o->sparse                 ? "sparse=dense"
                                                     : "a view");
  ferry__img_spec spec;
  int rc = spec_of(o, &spec, err);
  if (!rc)
    rc = check_names(in, o->decode, err);
  if (rc)
    return rc;
  const int nv = in->nvars;
  ferry__manifest vm;
  memset(&vm, 0, sizeof vm);
  dview *dv = calloc(1, sizeof *dv);
  if (dv) {
    dv->src = calloc((size_t)nv, sizeof *dv->src);
    dv->decoded = calloc((size_t)nv, sizeof *dv->decoded);
  }
  vm.backend = strdup("decode");
  vm.spec = in->spec ? strdup(in->spec) : NULL;
  vm.vars = calloc((size_t)nv, sizeof *vm.vars);
  vm.parts = calloc((size_t)in->nparts, sizeof *vm.parts);
  if (!dv || !dv->src || !dv->decoded || !vm.backend || !vm.spec || !vm.vars ||
      !vm.parts)
    rc = FERRY_ENOMEM;
  else {
    dv->n = nv;
    dv->spec = spec;
    dv->seed = o->seed;
    vm.nvars = nv;
    vm.nparts = in->nparts;
    vm.num_samples = in->num_samples;
  }
  for (int64_t p = 0; !rc && p < in->nparts; p++) {
    ferry__part *b = &vm.parts[p];
    b->num_samples = in->parts[p].num_samples;
    b->first_sample = in->parts[p].first_sample;
    b->paths = calloc((size_t)nv, sizeof *b->paths);
    b->data_offset = calloc((size_t)nv, sizeof *b->data_offset);
    b->file_size = calloc((size_t)nv, sizeof *b->file_size);
    if (!b->paths || !b->data_offset || !b->file_size)
      rc = FERRY_ENOMEM;
  }
  int ndec = 0;
  for (int i = 0; !rc && i < nv; i++) {
    dv->src[i] = i;
    dv->decoded[i] = listed(o->decode, in->vars[i].name);
    ndec += dv->decoded[i];
    rc = view_var(in, &vm, i, i, dv->decoded[i], &spec);
  }
  char notes[256];
  snprintf(notes, sizeof notes,
           "decode=%.80s: %d bytes variable%s served as %ux%u %s pixels",
           o->decode, ndec, ndec > 1 ? "s" : "", spec.height, spec.width,
           spec.layout == FERRY__IMG_CHW_F32 ? "float32 chw" : "uint8 hwc");
  ferry__manifest *inner = rc ? NULL : malloc(sizeof *inner);
  if (!rc && inner && !(vm.notes = strdup(notes)))
    rc = FERRY_ENOMEM;
  if (rc || !inner) {
    free(inner);
    dview_free(dv);
    view_free(&vm);
    return ferry__oom(err, L->rank, (size_t)nv * 512, "the decode view of %s",
                      in->spec);
  }
  *inner = L->m;
  vm.inner = inner;
  vm.aux = dv;
  vm.aux_free = dview_free;
  vm.hash = ferry__manifest_hash(&vm);
  L->m = vm;
  return 0;
}

/* ---- The backend ------------------------------------------------------ */

/* One sample's decode: a pool job. */
typedef struct djob {
  ferry__io *io;
  const unsigned char *p; /* its bytes */
  size_t n;
  void *out;         /* its row */
  int64_t part, row; /* row in its part */
  int var;
} djob;

/* One io_read of a decoded variable: its bytes and its jobs, kept until
 * the jobs are settled (io_wait), then reused. */
typedef struct dread {
  unsigned char *bytes;
  size_t bcap;
  djob *jobs;
  size_t jcap;
} dread;

struct ferry__io {
  const ferry__manifest *m, *in;
  const dview *dv;
  const ferry__backend *be;
  ferry__io *child;
  int rank, defer;
  int64_t epoch;
  ferry__pool *pool;
  /* the scratches, one a lane, and the free list of their indices */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ferry__img_scratch *scr;
  int *free_ix, nfree, nscr;
  /* the reads since the last io_wait (each with its own bytes) */
  dread *rd;
  int nrd, rdcap;
};

static void decode_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__pool_free(io->pool); /* waits for the jobs first */
  if (io->child)
    io->be->io_close(io->child);
  for (int i = 0; i < io->nscr; i++)
    ferry__img_scratch_free(&io->scr[i]);
  for (int i = 0; i < io->rdcap; i++) {
    free(io->rd[i].bytes);
    free(io->rd[i].jobs);
  }
  if (io->scr) {
    pthread_cond_destroy(&io->cv);
    pthread_mutex_destroy(&io->mu);
  }
  free(io->rd);
  free(io->scr);
  free(io->free_ix);
  free(io);
}

static int decode_io_open(ferry__io **out, const ferry__manifest *m,
                          const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__oom(err, p->rank, sizeof *io, "the decode reader of %s",
                      m->spec);
  io->m = m;
  io->in = m->inner;
  io->dv = m->aux;
  io->rank = p->rank;
  io->epoch = p->epoch;
  io->pool = ferry__pool_new(p->threads);
  io->defer = p->defer && io->pool;
  io->nscr = ferry__pool_lanes(io->pool);
  int rc = 0;
  /* cache=: the encoded bytes come through the node cache (cache.c) */
  if (io->in && io->in->cache)
    io->be = &ferry__cache_backend;
  else if (io->in)
    io->be = ferry__backend_find(io->in->backend);
  if (!io->in || !io->dv || !io->be)
    rc = ferry__seterr_on(err, p->rank, FERRY_EINTERNAL,
                          "decode: the view of %s has no dataset under it",
                          m->spec);
  if (!rc) {
    io->scr = calloc((size_t)io->nscr, sizeof *io->scr);
    io->free_ix = calloc((size_t)io->nscr, sizeof *io->free_ix);
    if (!io->scr || !io->free_ix)
      rc = ferry__oom(err, p->rank, (size_t)io->nscr * sizeof *io->scr,
                      "the decode scratches of %s", m->spec);
    else {
      pthread_mutex_init(&io->mu, NULL);
      pthread_cond_init(&io->cv, NULL);
      for (int i = 0; i < io->nscr; i++) {
        ferry__img_scratch_init(&io->scr[i]);
        io->free_ix[i] = i;
      }
      io->nfree = io->nscr;
    }
  }
  if (!rc) {
    ferry__io_params cp = *p;
    cp.defer = 0;
    cp.collective = 0;
    rc = io->be->io_open(&io->child, io->in, &cp, err);
  }
  if (rc) {
    decode_io_close(io);
    return rc;
  }
  *out = io;
  return 0;
}

/* A lane's scratch, held by one job at a time: at most `lanes` jobs run
 * at once (the pool's threads and the I/O thread), so one is free. */
static int scratch_take(ferry__io *io) {
  pthread_mutex_lock(&io->mu);
  while (io->nfree == 0)
    pthread_cond_wait(&io->cv, &io->mu);
  int i = io->free_ix[--io->nfree];
  pthread_mutex_unlock(&io->mu);
  return i;
}

static void scratch_give(ferry__io *io, int i) {
  pthread_mutex_lock(&io->mu);
  io->free_ix[io->nfree++] = i;
  pthread_cond_signal(&io->cv);
  pthread_mutex_unlock(&io->mu);
}

static int decode_one(void *arg, ferry__err *err) {
  djob *j = arg;
  ferry__io *io = j->io;
  const ferry__part *pt = &io->in->parts[j->part];
  const int src = io->dv->src[j->var];
  const int64_t g = pt->first_sample + j->row;
  uint64_t seed = ferry__rand_key(io->dv->seed, DECODE_STREAM,
                                  (uint64_t)io->epoch, (uint64_t)g);
  char why[256] = "";
  int s = scratch_take(io);
  struct timespec t0, t1;
  int timed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0) == 0;
  int rc = ferry__img_decode(j->p, j->n, &io->dv->spec, seed, &io->scr[s],
                             j->out, why, sizeof why);
  dview *counts = (dview *)io->dv; /* its counters only: atomics */
  if (timed && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1) == 0)
    counts->cpu_ns += (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 +
                      (t1.tv_nsec - t0.tv_nsec);
  counts->images += 1;
  scratch_give(io, s);
  if (rc)
    return ferry__seterr_on(err, io->rank, rc,
                            "decode: file %s, variable %s, sample %lld (row "
                            "%lld of the file, %zu bytes): %s",
                            pt->paths[src], io->in->vars[src].name,
                            (long long)g, (long long)j->row, j->n, why);
  return 0;
}

/* The read record for the next io_read (grown; its buffers reused). */
static dread *next_read(ferry__io *io, size_t bytes, int64_t n,
                        ferry__err *err) {
  if (io->nrd == io->rdcap) {
    int cap = io->rdcap ? 2 * io->rdcap : 4;
    dread *t = realloc(io->rd, (size_t)cap * sizeof *t);
    if (!t) {
      ferry__oom(err, io->rank, (size_t)cap * sizeof *t, "the decode reads");
      return NULL;
    }
    memset(t + io->rdcap, 0, (size_t)(cap - io->rdcap) * sizeof *t);
    io->rd = t;
    io->rdcap = cap;
  }
  dread *r = &io->rd[io->nrd];
  if (bytes + 1 > r->bcap) {
    unsigned char *b = realloc(r->bytes, bytes + 1);
    if (!b) {
      ferry__oom(err, io->rank, bytes + 1, "the image bytes of a read");
      return NULL;
    }
    r->bytes = b;
    r->bcap = bytes + 1;
  }
  if ((size_t)n > r->jcap) {
    djob *j = realloc(r->jobs, (size_t)n * sizeof *j);
    if (!j) {
      ferry__oom(err, io->rank, (size_t)n * sizeof *j, "the decode jobs");
      return NULL;
    }
    r->jobs = j;
    r->jcap = (size_t)n;
  }
  io->nrd++;
  return r;
}

static int decode_io_wait(ferry__io *io, ferry__err *err) {
  int rc = ferry__pool_wait(io->pool, err);
  io->nrd = 0;
  return rc;
}

static int decode_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                          int64_t nrows, void *buf, ferry__err *err) {
  int rc = ferry__check_part_var(io->m, part, var, io->rank, err);
  if (!rc)
    rc = ferry__check_rows(io->m, part, var, row, nrows, io->rank, err);
  if (rc || nrows == 0)
    return rc;
  const int src = io->dv->src[var];
  if (!io->dv->decoded[var]) /* as it is */
    return io->be->io_read(io->child, part, src, row, nrows, buf, err);
  const ferry__part *pt = &io->in->parts[part];
  const int64_t *o = pt->roff[src];
  const int64_t bytes = o[row + nrows] - o[row];
  if (bytes < 0)
    return ferry__seterr_on(err, io->rank, FERRY_EFORMAT,
                            "decode: file %s, variable %s: offsets decrease "
                            "in rows [%lld, %lld)",
                            pt->paths[src], io->in->vars[src].name,
                            (long long)row, (long long)(row + nrows));
  dread *r = next_read(io, (size_t)bytes, nrows, err);
  if (!r)
    return FERRY_ENOMEM;
  if ((rc = io->be->io_read(io->child, part, src, row, nrows, r->bytes, err)))
    return rc;
  const size_t rb = io->m->vars[var].row_bytes;
  for (int64_t k = 0; k < nrows && !rc; k++) {
    djob *j = &r->jobs[k];
    j->io = io;
    j->p = r->bytes + (o[row + k] - o[row]);
    j->n = (size_t)(o[row + k + 1] - o[row + k]);
    j->out = (unsigned char *)buf + (size_t)k * rb;
    j->part = part;
    j->row = row + k;
    j->var = var;
    rc = ferry__pool_submit(io->pool, decode_one, j, err);
  }
  if (io->defer && !rc)
    return 0; /* io_wait settles the jobs */
  ferry__err early = {0};
  int wrc = decode_io_wait(io, &early);
  if (wrc < 0) { /* an earlier job's error comes first */
    *err = early;
    return wrc;
  }
  return rc;
}

const ferry__backend ferry__decode_backend = {
    .name = "decode",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = 0,
    .describe = ferry__view_describe,
    .io_open = decode_io_open,
    .io_read = decode_io_read,
    .io_close = decode_io_close,
    .io_wait = decode_io_wait,
};

/* ---- For ferry_image_probe and ferry_image_verify (loader/images.c) ---- */

int ferry__decode_src(const ferry__manifest *m, int var) {
  if (!ferry__decode_is(m) || var < 0)
    return -1;
  const dview *d = m->aux;
  if (!d || var >= d->n || !d->decoded[var])
    return -1;
  return d->src[var];
}

void ferry__decode_counts(const ferry__manifest *m, int64_t *images,
                          double *cpu_seconds) {
  dview *d = ferry__decode_is(m) ? m->aux : NULL;
  *images = d ? d->images : 0;
  *cpu_seconds = d ? (double)d->cpu_ns * 1e-9 : 0;
}
