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

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The record ------------------------------------------------------- */

/*
 * Layout (little-endian): u64 proportion (IEEE double bits)  u32 exhaust
 * str path  u32 ncommon  ncommon x str  u64 sublen  sublen bytes (the
 * packed manifest), where str is u32 length + bytes (no NUL).  A change of
 * layout or meaning bumps record_version below.
 */
typedef struct wb {
  unsigned char *p;
  size_t len, cap;
  int failed;
  size_t want; /* failed: the bytes it could not have (SIZE_MAX: too many) */
} wb;

static void put(wb *w, const void *src, size_t n) {
  if (w->failed)
    return;
  if (n > w->cap - w->len) {
    size_t ncap = w->cap ? w->cap : 256;
    while (n > ncap - w->len) {
      if (ncap > SIZE_MAX / 2) {
        w->failed = 1;
        w->want = SIZE_MAX;
        return;
      }
      ncap *= 2;
    }
    unsigned char *np = realloc(w->p, ncap);
    if (!np) {
      w->failed = 1;
      w->want = ncap;
      return;
    }
    w->p = np;
    w->cap = ncap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void put_u64(wb *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  put(w, b, 8);
}

static void put_u32(wb *w, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  put(w, b, 4);
}

static void put_str(wb *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n > UINT32_MAX) {
    w->failed = 1;
    w->want = n;
    return;
  }
  put_u32(w, (uint32_t)n);
  put(w, s ? s : "", n);
}

int ferry__mix_record_pack(const ferry__mix_record *r, ferry__blob *out) {
  wb w;
  uint64_t bits;
  memset(&w, 0, sizeof w);
  memcpy(&bits, &r->proportion, sizeof bits);
  put_u64(&w, bits);
  put_u32(&w, (uint32_t)r->exhaust);
  put_str(&w, r->path);
  put_u32(&w, (uint32_t)r->ncommon);
  for (int i = 0; i < r->ncommon; i++)
    put_str(&w, r->common[i]);
  put_u64(&w, (uint64_t)r->sublen);
  put(&w, r->sub, r->sublen);
  if (w.failed) {
    free(w.p);
    out->p = NULL;
    out->len = w.want; /* for the caller's message */
    return FERRY_ENOMEM;
  }
  out->p = w.p;
  out->len = w.len;
  return 0;
}

typedef struct rb {
  const unsigned char *p;
  size_t len, pos;
  int bad;     /* 1 corrupt, 2 out of memory */
  size_t want; /* bad == 2: the bytes that could not be had */
} rb;

static uint64_t get_u(rb *r, int n) {
  uint64_t v = 0;
  if (r->bad || (size_t)n > r->len - r->pos) {
    r->bad = 1;
    return 0;
  }
  for (int i = 0; i < n; i++)
    v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
  r->pos += (size_t)n;
  return v;
}

static char *get_str(rb *r) {
  uint64_t n = get_u(r, 4);
  if (r->bad || n > r->len - r->pos || memchr(r->p + r->pos, 0, n)) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    r->bad = 2;
    r->want = (size_t)n + 1;
    return NULL;
  }
  memcpy(s, r->p + r->pos, (size_t)n);
  s[n] = '\0';
  r->pos += (size_t)n;
  return s;
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
  rb r = {b ? b->p : NULL, b ? b->len : 0, 0, 0, 0};
  memset(out, 0, sizeof *out);
  uint64_t bits = get_u(&r, 8);
  memcpy(&out->proportion, &bits, sizeof bits);
  uint64_t ex = get_u(&r, 4);
  out->exhaust = (int)(ex & 0xff);
  if (!r.bad &&
      (ex > 2 /* FERRY__EXHAUST_DROP */ || !isfinite(out->proportion) ||
       !(out->proportion > 0) || out->proportion > 1))
    r.bad = 1;
  if (!r.bad)
    out->path = get_str(&r);
  uint64_t nc = get_u(&r, 4);
  /* every name takes at least 4 bytes: bounded by the record */
  if (!r.bad && (nc < 1 || nc > INT_MAX || nc > (r.len - r.pos) / 4))
    r.bad = 1;
  if (!r.bad && !(out->common = calloc((size_t)nc, sizeof *out->common))) {
    r.bad = 2;
    r.want = (size_t)nc * sizeof *out->common;
  }
  for (uint64_t i = 0; !r.bad && i < nc; i++) {
    out->common[i] = get_str(&r);
    out->ncommon = (int)i + 1;
  }
  uint64_t sl = get_u(&r, 8);
  if (!r.bad && sl != r.len - r.pos)
    r.bad = 1;
  if (!r.bad) {
    out->sub = (void *)(r.p + r.pos);
    out->sublen = (size_t)sl;
    return 0;
  }
  ferry__mix_record_free(out);
  if (r.bad == 2)
    return ferry__oom(err, -1, r.want, "the mix record of %s", where);
  return ferry__seterr(err, FERRY_EFORMAT,
                       "mix source %s: its record (%zu bytes) is corrupt",
                       where, b ? b->len : 0);
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

/* Source s from its record: the manifest, its backend, the variables. */
static int src_load(ferry__io *io, int64_t s, ferry__err *err) {
  const ferry__manifest *m = io->m;
  const ferry__part *pt = &m->parts[s];
  mix_src *x = &io->src[s];
  ferry__mix_record r;
  int rc = pt->rec ? ferry__mix_record_parse(&pt->rec[0], &r, pt->paths[0], err)
                   : ferry__seterr(err, FERRY_EFORMAT,
                                   "mix source %s: no record", pt->paths[0]);
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
    if (sv->swapped) {
      size_t el = ferry_dtype_size(sv->dtype);
      ferry__byteswap(dst, (size_t)cnt * sv->row_bytes / el, el);
    }
    dst += (size_t)cnt * sv->row_bytes;
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
