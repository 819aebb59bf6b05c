/*
 * loader/images.c - the images of decode= checked before a job (issue 28,
 * docs/images.md "Checking images"): ferry_image_probe reads the headers
 * of chosen samples (`ferry info` shows the image sizes from them), and
 * ferry_image_verify decodes every image and reports each one that fails.
 *
 * The loader stops at the first corrupt image (decision 0058): right for
 * training, where a silent substitute would be garbage, but a user
 * cleaning a dataset wants every bad image named at once.  So the check is
 * a pass of its own over the same decode view: each rank reads a share of
 * the samples through the view's backend (the loader's decode options,
 * its decode pool), a block of rows at a time; a block that fails is read
 * again row by row, and every row that fails with an image error
 * (corrupt, unsupported, a shape crop=none cannot serve) is a fault, the
 * loader's message kept.  Other errors (a failed read) end the check.
 * Faults are merged in sample order, so the report is the same on any
 * rank count.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"
#include "image/image.h"
#include "loader/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A verify block's decoded rows: at most this many bytes of output. */
#define BLOCK_BYTES ((size_t)16 << 20)
#define BLOCK_ROWS 256

/* The part holding global sample g (parts are in sample order). */
static int64_t part_of(const ferry__manifest *m, int64_t g) {
  int64_t lo = 0, hi = m->nparts - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (m->parts[mid].first_sample <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* The loader's decode view, or an error naming what is missing. */
static int need_view(const ferry_loader *L, const char *fn, ferry__err *err) {
  if (!ferry__decode_is(&L->m))
    return ferry__seterr(err, FERRY_EINVAL,
                         "%s: the loader of %s has no decode option (set "
                         "decode=VAR to the variables holding images)",
                         fn, L->m.spec ? L->m.spec : "?");
  return 0;
}

/* An image error (the image's fault) rather than the check's. */
static int image_error(int rc) {
  return rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP || rc == FERRY_ESHAPE;
}

/* Where sample g's image of view variable var is. */
static void locate(const ferry__manifest *in, int src, int var, int64_t g,
                   ferry_image_info *o) {
  memset(o, 0, sizeof *o);
  o->sample = g;
  o->part = part_of(in, g);
  o->row = g - in->parts[o->part].first_sample;
  o->var = var;
  const int64_t *off = in->parts[o->part].roff[src];
  o->bytes = off[o->row + 1] - off[o->row];
}

/* src into dst[n], cut at n - 1 bytes. */
static void copy_msg(char *dst, size_t n, const char *src) {
  size_t k = strnlen(src, n - 1);
  memcpy(dst, src, k);
  dst[k] = 0;
}

static void headers_into(const ferry__img_info *h, ferry_image_info *o) {
  snprintf(o->format, sizeof o->format, "%s",
           h->format == FERRY__IMG_JPEG  ? "jpeg"
           : h->format == FERRY__IMG_PNG ? "png"
                                         : "");
  o->width = h->width;
  o->height = h->height;
  o->channels = h->channels;
  o->bit_depth = h->bit_depth;
  o->progressive =
      h->format == FERRY__IMG_PNG ? h->png_interlaced : h->progressive;
  if (h->format == FERRY__IMG_JPEG)
    snprintf(o->subsampling, sizeof o->subsampling, "%s", h->subsampling);
}

int ferry_image_probe(ferry_loader *L, int var, const int64_t *samples,
                      int64_t n, ferry_image_info *out) {
  if (!L || n < 0 || (n > 0 && (!samples || !out)))
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_image_probe: NULL");
  ferry__err err = {0};
  ferry__io *io = NULL;
  const ferry__backend *be = NULL;
  unsigned char *buf = NULL;
  size_t cap = 0;
  int rc = need_view(L, "ferry_image_probe", &err);
  const ferry__manifest *in = L->m.inner;
  const int src = rc ? -1 : ferry__decode_src(&L->m, var);
  if (!rc && src < 0)
    rc = ferry__seterr(&err, FERRY_EINVAL,
                       "ferry_image_probe: variable %d of %s is not decoded "
                       "(the decode option names the images)",
                       var, L->m.spec);
  for (int64_t i = 0; !rc && i < n; i++)
    if (samples[i] < 0 || samples[i] >= in->num_samples)
      rc = ferry__seterr(&err, FERRY_EINVAL,
                         "ferry_image_probe: sample %lld out of [0, %lld)",
                         (long long)samples[i], (long long)in->num_samples);
  if (!rc && !(be = ferry__backend_find(in->backend)))
    rc = ferry__seterr(&err, FERRY_EINTERNAL, "ferry_image_probe: no backend");
  if (!rc && n > 0) {
    ferry__io_params p = {MPI_COMM_SELF, L->rank, 0, L->opts->max_open_files,
                          L->opts,       1,       0, 0};
    rc = be->io_open(&io, in, &p, &err);
  }
  for (int64_t i = 0; !rc && i < n; i++) {
    ferry_image_info *o = &out[i];
    locate(in, src, var, samples[i], o);
    const ferry__part *pt = &in->parts[o->part];
    if (o->bytes < 0 || (uint64_t)o->bytes > (uint64_t)pt->file_size[src]) {
      rc = ferry__seterr_on(&err, L->rank, FERRY_EFORMAT,
                            "ferry_image_probe: file %s, variable %s: sample "
                            "%lld has %lld bytes",
                            pt->paths[src], in->vars[src].name,
                            (long long)o->sample, (long long)o->bytes);
      break;
    }
    if ((size_t)o->bytes + 1 > cap) {
      unsigned char *b = realloc(buf, (size_t)o->bytes + 1);
      if (!b) {
        rc = ferry__oom(&err, L->rank, (size_t)o->bytes + 1,
                        "the bytes of an image");
        break;
      }
      buf = b;
      cap = (size_t)o->bytes + 1;
    }
    if ((rc = be->io_read(io, o->part, src, o->row, 1, buf, &err)))
      break;
    ferry__img_info h;
    char why[256] = "";
    int prc = ferry__img_probe(buf, (size_t)o->bytes, &h, why, sizeof why);
    if (prc) {
      char msg[1024];
      o->status = prc;
      snprintf(msg, sizeof msg,
               "decode: file %s, variable %s, sample %lld (row %lld of the "
               "file, %lld bytes): %s",
               pt->paths[src], in->vars[src].name, (long long)o->sample,
               (long long)o->row, (long long)o->bytes, why);
      copy_msg(o->message, sizeof o->message, msg);
    } else
      headers_into(&h, o);
  }
  if (io)
    be->io_close(io);
  free(buf);
  if (rc)
    ferry__loader_fail(L, &err);
  return rc;
}

/* ---- ferry_image_verify ------------------------------------------------ */

/* This rank's faults, sorted by (sample, variable), at most max kept. */
typedef struct faults {
  ferry_image_info *f;
  int n, max;
  ferry_image_info *blk; /* a block's faults before sorting */
  int64_t nblk, blk_cap;
} faults;

static int by_sample(const void *a, const void *b) {
  const ferry_image_info *x = a, *y = b;
  if (x->sample != y->sample)
    return x->sample < y->sample ? -1 : 1;
  return (x->var > y->var) - (x->var < y->var);
}

/* Read rows [row, row + k) of view variable var of part through the
 * decode view; when they fail with an image error, again row by row,
 * each failing row a fault of the block.  *checked and *bad count. */
static int verify_rows(ferry_loader *L, ferry__io *io, int64_t part, int var,
                       int src, int64_t row, int64_t k, unsigned char *out,
                       faults *fs, int64_t *checked, int64_t *bad,
                       ferry__err *err) {
  const ferry__backend *be = &ferry__decode_backend;
  const ferry__manifest *in = L->m.inner;
  ferry__err e = {0};
  int rc = be->io_read(io, part, var, row, k, out, &e);
  if (!rc) {
    *checked += k;
    return 0;
  }
  if (!image_error(rc)) {
    *err = e;
    return rc;
  }
  for (int64_t j = 0; j < k; j++) {
    ferry__err e1 = {0};
    rc = be->io_read(io, part, var, row + j, 1, out, &e1);
    ++*checked;
    if (!rc)
      continue;
    if (!image_error(rc)) {
      *err = e1;
      return rc;
    }
    ++*bad;
    if (fs->nblk < fs->blk_cap) { /* the block holds all it can fail */
      ferry_image_info *o = &fs->blk[fs->nblk++];
      locate(in, src, var, in->parts[part].first_sample + row + j, o);
      o->status = rc;
      copy_msg(o->message, sizeof o->message, e1.msg);
    }
  }
  return 0;
}

/* This rank's share [lo, hi) of the samples, every decoded variable. */
static int verify_share(ferry_loader *L, int64_t lo, int64_t hi, faults *fs,
                        int64_t *checked, int64_t *bad, ferry__err *err) {
  const ferry__manifest *m = &L->m, *in = m->inner;
  size_t row_max = 1;
  int ndec = 0;
  for (int v = 0; v < m->nvars; v++)
    if (ferry__decode_src(m, v) >= 0) {
      ndec++;
      if (m->vars[v].row_bytes > row_max)
        row_max = m->vars[v].row_bytes;
    }
  int64_t block = (int64_t)(BLOCK_BYTES / row_max);
  block = block < 1 ? 1 : block > BLOCK_ROWS ? BLOCK_ROWS : block;
  if (lo >= hi || ndec == 0)
    return 0;
  unsigned char *out = malloc((size_t)block * row_max);
  fs->blk_cap = block * ndec;
  fs->blk = malloc((size_t)fs->blk_cap * sizeof *fs->blk);
  if (!out || !fs->blk) {
    free(out);
    return ferry__oom(err, L->rank, (size_t)block * row_max,
                      "the decoded rows of a verify block");
  }
  ferry__io *io = NULL;
  ferry__io_params p = {MPI_COMM_SELF,
                        L->rank,
                        0,
                        L->opts->max_open_files,
                        L->opts,
                        L->nthreads > 0 ? L->nthreads
                                        : ferry__pool_lanes_for(L->opts),
                        0,
                        0};
  int rc = ferry__decode_backend.io_open(&io, m, &p, err);
  for (int64_t g = lo; !rc && g < hi;) {
    const int64_t part = part_of(in, g);
    const ferry__part *pt = &in->parts[part];
    const int64_t row = g - pt->first_sample;
    int64_t k = pt->num_samples - row;
    if (k > hi - g)
      k = hi - g;
    if (k > block)
      k = block;
    fs->nblk = 0;
    for (int v = 0; !rc && v < m->nvars; v++) {
      int src = ferry__decode_src(m, v);
      if (src >= 0)
        rc = verify_rows(L, io, part, v, src, row, k, out, fs, checked, bad,
                         err);
    }
    if (fs->nblk > 1)
      qsort(fs->blk, (size_t)fs->nblk, sizeof *fs->blk, by_sample);
    for (int64_t i = 0; i < fs->nblk && fs->n < fs->max; i++)
      fs->f[fs->n++] = fs->blk[i];
    g += k;
  }
  if (io)
    ferry__decode_backend.io_close(io);
  free(out);
  return rc;
}

/* Every rank's first faults in rank order (= sample order), the first
 * max of them into all[0, *total) on every rank.  COLLECTIVE. */
static int merge_faults(MPI_Comm comm, int rank, int size, const faults *fs,
                        ferry_image_info *all, int *total, ferry__err *err) {
  long long mine = fs->n, before = 0;
  int rc = MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, comm);
  if (rank == 0)
    before = 0;
  long long room = fs->max - before;
  int take = room <= 0 ? 0 : (int)(room < mine ? room : mine);
  int *counts = malloc((size_t)size * sizeof *counts);
  int *displs = malloc((size_t)size * sizeof *displs);
  MPI_Datatype rec = MPI_DATATYPE_NULL;
  int ok = counts && displs;
  int all_ok = 0;
  if (rc == MPI_SUCCESS)
    rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
  if (rc != MPI_SUCCESS || !all_ok) {
    free(counts);
    free(displs);
    return rc != MPI_SUCCESS
               ? ferry__seterr(err, FERRY_EMPI,
                               "ferry_image_verify: MPI failed")
               : ferry__seterr(err, FERRY_ENOMEM,
                               "ferry_image_verify: out of memory for %d "
                               "ranks' fault counts",
                               size);
  }
  rc = MPI_Allgather(&take, 1, MPI_INT, counts, 1, MPI_INT, comm);
  int sum = 0;
  for (int r = 0; r < size; r++) {
    displs[r] = sum;
    sum += counts[r];
  }
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_contiguous((int)sizeof(ferry_image_info), MPI_BYTE, &rec);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&rec);
  if (rc == MPI_SUCCESS)
    rc = MPI_Allgatherv(fs->f, take, rec, all, counts, displs, rec, comm);
  if (rec != MPI_DATATYPE_NULL)
    MPI_Type_free(&rec);
  free(counts);
  free(displs);
  *total = sum;
  if (rc != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI,
                         "ferry_image_verify: gathering the faults failed");
  return 0;
}

int ferry_image_verify(ferry_loader *L, int max_faults,
                       ferry_image_report *report,
                       ferry_image_info *faults_out) {
  if (!L || !report || max_faults < 0 || (max_faults > 0 && !faults_out))
    return ferry__seterr(NULL, FERRY_EINVAL, "ferry_image_verify: NULL");
  memset(report, 0, sizeof *report);
  ferry__err err = {0};
  int rc = need_view(L, "ferry_image_verify", &err);
  if (rc) { /* the same on every rank: the view is made from the options */
    ferry__loader_fail(L, &err);
    return rc;
  }
  MPI_Comm comm;
  if (MPI_Comm_dup(L->comm, &comm) != MPI_SUCCESS)
    return ferry__seterr(NULL, FERRY_EMPI,
                         "ferry_image_verify: MPI_Comm_dup failed");
  const int64_t n = L->m.inner->num_samples;
  const int64_t lo = (int64_t)((double)n * L->rank / L->size);
  const int64_t hi = L->rank + 1 == L->size
                         ? n
                         : (int64_t)((double)n * (L->rank + 1) / L->size);
  faults fs = {0};
  fs.max = max_faults;
  fs.f = max_faults ? malloc((size_t)max_faults * sizeof *fs.f) : NULL;
  int64_t counts[2] = {0, 0}, sums[2] = {0, 0};
  if (max_faults && !fs.f)
    rc = ferry__oom(&err, L->rank, (size_t)max_faults * sizeof *fs.f,
                    "the image faults");
  if (!rc)
    rc = verify_share(L, lo, hi, &fs, &counts[0], &counts[1], &err);
  rc = ferry__agree(comm, L->rank, rc, &err);
  if (!rc &&
      MPI_Allreduce(counts, sums, 2, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
    rc = ferry__seterr(&err, FERRY_EMPI,
                       "ferry_image_verify: summing the counts failed");
  int total = 0;
  if (!rc)
    rc = merge_faults(comm, L->rank, L->size, &fs, faults_out, &total, &err);
  if (!rc) {
    report->checked = sums[0];
    report->bad = sums[1];
    report->nfaults = total;
  } else
    ferry__loader_fail(L, &err);
  free(fs.f);
  free(fs.blk);
  MPI_Comm_free(&comm);
  return rc;
}
