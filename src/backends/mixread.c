/*
 * mixread.c - the mix backend: several datasets read as one (docs/sampling.md,
 * "Mixing datasets: the specification").
 *
 * Why a backend: the loader reads a part's rows through its backend, and a
 * mix's parts are whole datasets of other formats.  Each part of a mix
 * manifest (built by dataset/mix.c, never by describe: a backend describes
 * one part, a mix is many datasets) is one source; its first record holds
 * the source's own packed manifest.  io_read maps the source's rows onto
 * the parts of that manifest and asks the source's own backend for them,
 * so every format reads as it does alone, with the source's variable names
 * translated by the common names the record lists.  Sources are opened on
 * first read (a mix of many sources opens only those read), never
 * collectively (the loader refuses io=collective for a backend without
 * the capability), and a source stored in the other byte order is swapped
 * here, so the mix manifest says native order for every variable.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/mixrec.h"
#include "backends/toolkit.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The record ------------------------------------------------------- */

/*
 * Layout (little-endian): u64 proportion (IEEE double bits)  u32 exhaust
 * str path  u32 ncommon  ncommon x str  u64 sublen  sublen bytes (the
 * packed manifest), where str is u32 length + bytes (no NUL), written and
 * read with util/record.h (tests/unit/test_record pins the bytes).  A
 * change of layout or meaning bumps record_version below.
 */
int ferry__mix_record_pack(const ferry__mix_record *r, ferry__blob *out) {
  ferry__rec_w w;
  uint64_t bits;
  ferry__rec_w_init(&w);
  memcpy(&bits, &r->proportion, sizeof bits);
  ferry__rec_put_u64(&w, bits);
  ferry__rec_put_u32(&w, (uint32_t)r->exhaust);
  ferry__rec_put_str(&w, r->path);
  ferry__rec_put_u32(&w, (uint32_t)r->ncommon);
  for (int i = 0; i < r->ncommon; i++)
    ferry__rec_put_str(&w, r->common[i]);
  ferry__rec_put_u64(&w, (uint64_t)r->sublen);
  ferry__rec_put(&w, r->sub, r->sublen);
  return ferry__rec_blob(&w, out);
}

void ferry__mix_record_free(ferry__mix_record *r) {
  if (!r)
    return;
  for (int i = 0; r->common && i < r->ncommon; i++)
    free(r->common[i]);
  free(r->common);
  free(r->path);
  memset(r, 0, sizeof *r);
}

int ferry__mix_record_parse(const ferry__blob *b, ferry__mix_record *out,
                            const char *where, ferry__err *err) {
  ferry__rec_r r;
  ferry__rec_r_init(&r, b ? b->p : NULL, b ? b->len : 0);
  memset(out, 0, sizeof *out);
  uint64_t bits = ferry__rec_get_u64(&r);
  memcpy(&out->proportion, &bits, sizeof bits);
  uint32_t ex = ferry__rec_get_u32(&r);
  out->exhaust = (int)(ex & 0xff);
  if (ex > 2 /* FERRY__EXHAUST_DROP */)
    ferry__rec_fail(&r, "bad exhaust rule");
  if (!isfinite(out->proportion) || !(out->proportion > 0) ||
      out->proportion > 1)
    ferry__rec_fail(&r, "bad proportion");
  if (!r.rc)
    out->path = ferry__rec_get_str(&r);
  uint32_t nc = ferry__rec_get_u32(&r);
  /* every name takes at least 4 bytes: bounded by the record */
  if (nc < 1 || nc > INT_MAX || nc > ferry__rec_left(&r) / 4)
    ferry__rec_fail(&r, "bad name count");
  if (!r.rc && !(out->common = calloc(nc, sizeof *out->common)))
    ferry__rec_oom(&r, (size_t)nc * sizeof *out->common, "the names");
  for (uint32_t i = 0; !r.rc && i < nc; i++) {
    out->common[i] = ferry__rec_get_str(&r);
    out->ncommon = (int)i + 1;
  }
  uint64_t sl = ferry__rec_get_u64(&r);
  if (sl != ferry__rec_left(&r))
    ferry__rec_fail(&r, "the packed manifest's length is not the rest");
  if (!r.rc) {
    out->sub = (void *)ferry__rec_take(&r, (size_t)sl);
    out->sublen = (size_t)sl;
    return 0;
  }
  ferry__mix_record_free(out);
  if (r.rc == FERRY_ENOMEM)
    return ferry__oom(err, -1, r.want, "%s of the mix record of %s", r.why,
                      where);
  return ferry__seterr(err, FERRY_EFORMAT,
                       "mix source %s: its record (%zu bytes) is corrupt at "
                       "byte %zu: %s",
                       where, b ? b->len : 0, r.at, r.why);
}

/* ---- The backend ------------------------------------------------------ */

static int mix_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  (void)opts;
  (void)out;
  return ferry__seterr(err, FERRY_EINVAL,
                       "%s: a mix cannot be a part of another dataset (a mix "
                       "inside a mix or an @list); open it as the dataset",
                       path);
}

typedef struct mix_src {
  ferry__manifest sub; /* the source's own manifest                  */
  const ferry__backend *be;
  ferry__io *io; /* opened on first read                        */
  int opened;
  int defer;   /* the child was opened with defer             */
  int *var_of; /* [m->nvars] the source's variable for each  */
} mix_src;

struct ferry__io {
  const ferry__manifest *m; /* owned by the loader, outlives this state */
  ferry__io_params p;       /* the children's parameters                */
  mix_src *src;             /* [m->nparts] */
};

static void mix_io_close(ferry__io *io) {
  if (!io)
    return;
  for (int64_t s = 0; io->src && s < io->m->nparts; s++) {
    mix_src *x = &io->src[s];
    if (x->io)
      x->be->io_close(x->io);
    free(x->var_of);
    ferry__manifest_free(&x->sub);
  }
  free(io->src);
  free(io);
}

/* An error of source s, kept with the source named before it. */
static int wrap(ferry__io *io, int64_t s, int rc, ferry__err *err) {
  if (!err)
    return rc;
  char what[FERRY__MSG_MAX];
  int has_rank = err->has_rank, rank = err->rank;
  memcpy(what, err->msg, sizeof what);
  what[sizeof what - 1] = '\0';
  ferry__seterr(err, rc, "mix source %lld (%.300s): %.600s", (long long)s,
                io->m->parts[s].paths[0], what);
  err->has_rank = has_rank;
  err->rank = rank;
  return rc;
}

int ferry__mix_part_record(const ferry__part *pt, ferry__mix_record *out,
                           ferry__err *err) {
  memset(out, 0, sizeof *out);
  return pt->rec ? ferry__mix_record_parse(&pt->rec[0], out, pt->paths[0], err)
                 : ferry__seterr(err, FERRY_EFORMAT, "mix source %s: no record",
                                 pt->paths[0]);
}

/* Source s from its record: the manifest, its backend, the variables. */
static int src_load(ferry__io *io, int64_t s, ferry__err *err) {
  const ferry__manifest *m = io->m;
  const ferry__part *pt = &m->parts[s];
  mix_src *x = &io->src[s];
  ferry__mix_record r;
  int rc = ferry__mix_part_record(pt, &r, err);
  if (rc < 0)
    return rc;
  if ((rc = ferry__manifest_unpack(r.sub, r.sublen, &x->sub, err)) < 0)
    goto cleanup;
  x->be = ferry__backend_find(x->sub.backend);
  if (!x->be || x->be->io_open == NULL || strcmp(x->be->name, "mix") == 0) {
    rc = ferry__seterr(err, FERRY_ENOTSUP, "backend '%s' is not built in",
                       x->sub.backend);
    goto cleanup;
  }
  if (x->sub.record_version != x->be->record_version ||
      x->sub.num_samples != pt->num_samples || r.ncommon != x->sub.nvars) {
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "its record does not match this ferry's %s backend "
                       "or the manifest (scan the mix again)",
                       x->be->name);
    goto cleanup;
  }
  if (!(x->var_of = calloc((size_t)m->nvars, sizeof *x->var_of))) {
    rc = ferry__oom(err, -1, (size_t)m->nvars * sizeof *x->var_of,
                    "the variable map of mix source %s (dataset %s)",
                    pt->paths[0], m->spec);
    goto cleanup;
  }
  for (int v = 0; v < m->nvars; v++) {
    int k = 0;
    while (k < r.ncommon && strcmp(r.common[k], m->vars[v].name) != 0)
      k++;
    if (k == r.ncommon || x->sub.vars[k].dtype != m->vars[v].dtype ||
        x->sub.vars[k].row_bytes != m->vars[v].row_bytes) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "variable '%s' is not in its record as the manifest "
                         "says",
                         m->vars[v].name);
      goto cleanup;
    }
    x->var_of[v] = k;
  }
cleanup:
  ferry__mix_record_free(&r);
  return rc;
}

static int mix_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  ferry__io *io = calloc(1, sizeof *io);
  if (!io || !(io->src = calloc((size_t)m->nparts, sizeof *io->src))) {
    size_t want = io ? (size_t)m->nparts * sizeof *io->src : sizeof *io;
    free(io);
    return ferry__oom(err, -1, want, "the I/O state (dataset %s, rank %d)",
                      m->spec, p->rank);
  }
  io->m = m;
  io->p = *p;
  io->p.collective = 0;
  /* the bound on open files and the decode lanes are shared out */
  int64_t n = m->nparts > 0 ? m->nparts : 1;
  int64_t files = p->max_open_files > 0 ? p->max_open_files : 64;
  io->p.max_open_files = files / n > 0 ? files / n : 1;
  if (n > 4 && p->threads > 1)
    io->p.threads =
        (int)(4 * (int64_t)p->threads / n > 0 ? 4 * (int64_t)p->threads / n
                                              : 1);
  for (int64_t s = 0; s < m->nparts; s++) {
    int rc = src_load(io, s, err);
    if (rc < 0) {
      wrap(io, s, rc, err);
      mix_io_close(io);
      return rc;
    }
  }
  *out = io;
  return 0;
}

/* Source s's child I/O state, opened on first use. */
static int src_open(ferry__io *io, int64_t s, ferry__err *err) {
  mix_src *x = &io->src[s];
  if (x->opened)
    return 0;
  ferry__io_params cp = io->p;
  int swapped = 0;
  for (int v = 0; v < io->m->nvars; v++)
    swapped |= x->sub.vars[x->var_of[v]].swapped;
  /* rows to swap are swapped after the child's read: no deferred decode */
  cp.defer = io->p.defer && !swapped;
  int rc = x->be->io_open(&x->io, &x->sub, &cp, err);
  if (rc < 0)
    return wrap(io, s, rc, err);
  x->opened = 1;
  x->defer = cp.defer;
  return 0;
}

/* The part of the source's manifest that holds row (row < its samples). */
static int64_t sub_part(const ferry__manifest *sub, int64_t row) {
  int64_t lo = 0, hi = sub->nparts - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (sub->parts[mid].first_sample <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int mix_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->m;
  int rc;
  if ((rc = ferry__check_part_var(m, part, var, io->p.rank, err)) < 0 ||
      (rc = ferry__check_rows(m, part, var, row, nrows, io->p.rank, err)) < 0)
    return rc;
  if (nrows == 0)
    return 0;
  if ((rc = src_open(io, part, err)) < 0)
    return rc;
  mix_src *x = &io->src[part];
  int k = x->var_of[var];
  const ferry__var *sv = &x->sub.vars[k];
  unsigned char *dst = buf;
  while (nrows > 0) {
    int64_t sp = sub_part(&x->sub, row);
    const ferry__part *pt = &x->sub.parts[sp];
    int64_t at = row - pt->first_sample;
    int64_t cnt = pt->num_samples - at < nrows ? pt->num_samples - at : nrows;
    if (cnt <= 0)
      return ferry__seterr_on(err, io->p.rank, FERRY_EINTERNAL,
                              "mix source %lld (%s): row %lld is in no part",
                              (long long)part, m->parts[part].paths[0],
                              (long long)row);
    if ((rc = x->be->io_read(x->io, sp, k, at, cnt, dst, err)) < 0)
      return wrap(io, part, rc, err);
    size_t bytes =
        (size_t)(sv->ragged ? pt->roff[k][at + cnt] - pt->roff[k][at] : cnt) *
        sv->row_bytes;
    if (sv->swapped) {
      size_t el = ferry_dtype_size(sv->dtype);
      ferry__byteswap(dst, bytes / el, el);
    }
    dst += bytes;
    row += cnt;
    nrows -= cnt;
  }
  return 0;
}

static int mix_io_wait(ferry__io *io, ferry__err *err) {
  int first = 0;
  for (int64_t s = 0; s < io->m->nparts; s++) {
    mix_src *x = &io->src[s];
    if (!x->io || !x->defer || !x->be->io_wait)
      continue;
    ferry__err e = {0};
    int rc = x->be->io_wait(x->io, &e);
    if (rc < 0 && first == 0) {
      first = rc;
      if (err)
        *err = e;
      wrap(io, s, rc, err);
    }
  }
  return first;
}

const ferry__backend ferry__backend_mix = {
    .name = "mix",
    .version = 1,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = 1,
    .scheme = "mix",
    .probe = NULL, /* reached through its scheme, built by dataset/mix.c */
    .accepts = "mix:LIST or mix:@FILE (several datasets read as one)",
    .describe = mix_describe,
    .io_open = mix_io_open,
    .io_read = mix_io_read,
    .io_close = mix_io_close,
    .io_map = NULL, /* a mix reads: its sources map in no common way */
    .io_wait = mix_io_wait,
};
