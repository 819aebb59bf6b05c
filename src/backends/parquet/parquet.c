/*
 * parquet.c - the parquet backend's vtable and its reads: io_open,
 * io_read, io_wait and io_close over the record every rank gets in the
 * manifest (record.c); probe and describe (rank 0) are describe.c.
 *
 * A part is one .parquet file or a directory of them (its *.parquet files
 * in strcmp order, one schema).  A read of rows [row, row+nrows) reads the
 * byte range of the selected column's chunk in each row group it touches
 * with MPI-IO (independent: MPI_COMM_SELF) and decodes it (pages.c).  A row
 * group the read covers whole is decoded straight into the read buffer;
 * one it covers in part is decoded into a one-row-group buffer kept per
 * variable, so the next read of the same row group copies from it.  The
 * plan aligns its chunks on row groups (chunk_rows is the row-group size
 * when all but the last row group of a part have it), so with the default
 * plan every read covers whole row groups.  When one read covers several
 * row groups their chunks are read first, then decoded as one job per row
 * group on the I/O state's persistent decode pool (pool.c; `threads`
 * lanes, the I/O thread among them), each job with a scratch of its own
 * taken off a free stack; the first failing row group's error is returned,
 * as serially.  A read of one row group (or of part of one) has its data
 * pages decoded as runs of pages on the same pool (pages.c), with the I/O
 * thread's own scratch (the last) holding the dictionary and the others
 * taken off the same stack.  Memory is bounded by the read's own rows plus
 * the compressed bytes of its chunks plus one decoded row group per
 * variable (cache_bytes) plus one scratch per lane, plus the I/O thread's.
 *
 * With io_params.defer (the loader reads up to `threads` extents, then
 * calls io_wait) a read of whole row groups leaves its jobs running, one a
 * row group, decoding their pages inline: its buffers (compressed chunks,
 * copies of dictionary pages) and the record they were read with stay
 * until io_wait (pq_settle); a partial read decodes on the I/O thread.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/parquet/parquet.h"
#include "util/dtype.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Reads --------------------------------------------------------------- */

typedef struct var_state {
  int64_t rec_part; /* part whose record is parsed into rec, -1: none */
  pq_rec rec;
  int64_t cache_part, cache_rg; /* decoded row group held in cache     */
  unsigned char *cache;
  size_t cache_cap;
  /* the dictionary page of the pieces read last (split row groups) */
  int64_t dict_part, dict_off;
  int32_t dict_file;
  unsigned char *dict;
  size_t dict_cap;
  int has_fill; /* null_fill given: nulls are served as fill */
  unsigned char fill[8];
  char nofill[200]; /* null_fill given but not of this dtype: why */
} var_state;

struct ferry__io {
  ferry__io_base b;     /* manifest, rank; files: key (part, file index)
                         * (io_base.c) */
  var_state *vs;        /* [nvars] */
  pq_scratch *scratch;  /* [nscratch] */
  unsigned char **cbuf; /* [nscratch] compressed chunk buffers */
  size_t *ccap;
  ferry__pool *pool;     /* decodes row groups or pages (NULL: inline) */
  int nscratch;          /* scratch[] entries: one a lane, plus one */
  pthread_mutex_t slock; /* guards sfree */
  pq_scratch **sfree;    /* [nscratch] scratches no job holds */
  int nfree;
  int64_t cur_part; /* for the handle cache's open callback */
  var_state *cur_vs;
  int defer;            /* io_params.defer: io_wait settles the jobs */
  struct pool *pending; /* deferred reads whose jobs may still run */
  struct retired *old;  /* records they use, replaced since */
};

/* A record replaced (get_rec, another part) while deferred jobs use it. */
typedef struct retired {
  pq_rec rec;
  struct retired *next;
} retired;

static void settle_free(ferry__io *io);
static int pq_settle(ferry__io *io, ferry__err *err);

typedef struct pq_fh {
  MPI_File fh;
} pq_fh;

static int open_cb(void *ctx, int64_t part, int fi, void **handle,
                   ferry__err *err) {
  ferry__io *io = ctx;
  const pq_rec *r = &io->cur_vs->rec;
  const char *path = r->files[fi];
  pq_fh *h = malloc(sizeof *h);
  MPI_Offset size = -1;
  (void)part;
  if (!h)
    return ferry__oom(err, -1, sizeof *h, "opening file %s (rank %d)", path,
                      io->b.rank);
  int mrc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                          &h->fh);
  if (mrc != MPI_SUCCESS) {
    free(h);
    return ferry__seterr(err, FERRY_EIO,
                         "MPI_File_open failed: file %s, rank %d, offset 0",
                         path, io->b.rank);
  }
  MPI_File_set_errhandler(h->fh, MPI_ERRORS_RETURN);
  if (MPI_File_get_size(h->fh, &size) != MPI_SUCCESS ||
      (int64_t)size != r->fsize[fi]) {
    MPI_File_close(&h->fh);
    free(h);
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "file %s is %lld bytes on rank %d but %lld bytes "
                         "when rank 0 scanned it (offset 0)",
                         path, (long long)size, io->b.rank,
                         (long long)r->fsize[fi]);
  }
  *handle = h;
  return 0;
}

static void close_cb(void *ctx, void *handle) {
  (void)ctx;
  pq_fh *h = handle;
  MPI_File_close(&h->fh);
  free(h);
}

static void pq_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__pool_free(io->pool); /* no job runs past here */
  settle_free(io);
  ferry__io_base_close(&io->b);
  for (int v = 0; io->vs && v < io->b.m->nvars; v++) {
    ferry__pq_rec_free(&io->vs[v].rec);
    free(io->vs[v].cache);
    free(io->vs[v].dict);
  }
  for (int t = 0; t < io->nscratch; t++) {
    if (io->scratch)
      ferry__pq_scratch_free(&io->scratch[t]);
    if (io->cbuf)
      free(io->cbuf[t]);
  }
  if (io->sfree)
    pthread_mutex_destroy(&io->slock);
  free(io->sfree);
  free(io->scratch);
  free(io->cbuf);
  free(io->ccap);
  free(io->vs);
  free(io);
}

/* The null_fill text as one value of dtype (native byte order), exactly;
 * -1 when it does not fit. */

/* null_fill per variable; where the value does not fit the variable's
 * dtype, why (a null read there is then refused, saying so). */
static void fill_values(ferry__io *io, const ferry_options *opts) {
  char text[128] = "";
  if (!opts || ferry_options_get(opts, "null_fill", text, sizeof text) != 0 ||
      !text[0])
    return;
  for (int v = 0; v < io->b.m->nvars; v++) {
    const ferry__var *x = &io->b.m->vars[v];
    var_state *vs = &io->vs[v];
    if (ferry__value_of_text(text, x->dtype, vs->fill) == 0)
      vs->has_fill = 1;
    else
      snprintf(vs->nofill, sizeof vs->nofill,
               "null_fill=%s is not a value of its dtype %s exactly", text,
               ferry_dtype_name(x->dtype));
  }
}

static int pq_io_open(ferry__io **out, const ferry__manifest *m,
                      const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = open_cb,
      .close = close_cb,
      .no_collective = "the parquet backend reads column chunks "
                       "independently: io=collective is not supported",
  };
  void *b = NULL;
  *out = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &b, err);
  if (rc < 0)
    return rc;
  ferry__io *io = b;
  io->defer = p->defer;
  io->vs = calloc((size_t)(m->nvars ? m->nvars : 1), sizeof *io->vs);
  io->pool = ferry__pool_new(p->threads);
  int lanes = ferry__pool_lanes(io->pool);
  io->nscratch = lanes + 1; /* a lane each, plus a chunk's scan */
  io->scratch = calloc((size_t)io->nscratch, sizeof *io->scratch);
  io->cbuf = calloc((size_t)io->nscratch, sizeof *io->cbuf);
  io->ccap = calloc((size_t)io->nscratch, sizeof *io->ccap);
  io->sfree = calloc((size_t)io->nscratch, sizeof *io->sfree);
  if (io->sfree && pthread_mutex_init(&io->slock, NULL) != 0) {
    free(io->sfree);
    io->sfree = NULL;
  }
  if (!io->vs || !io->scratch || !io->cbuf || !io->ccap || !io->sfree) {
    size_t ns = (size_t)io->nscratch;
    size_t want = (size_t)(m->nvars ? m->nvars : 1) * sizeof *io->vs +
                  ns * (sizeof *io->scratch + sizeof *io->cbuf +
                        sizeof *io->ccap + sizeof *io->sfree);
    pq_io_close(io);
    return ferry__oom(err, -1, want,
                      "the I/O state of %lld variables and %d decode threads "
                      "(dataset %s, rank %d)",
                      (long long)m->nvars, lanes, m->spec, p->rank);
  }
  for (int t = 0; t + 1 < io->nscratch; t++) /* the last: the I/O thread's */
    io->sfree[io->nfree++] = &io->scratch[t];
  for (int v = 0; v < m->nvars; v++)
    io->vs[v].rec_part = io->vs[v].cache_part = io->vs[v].dict_part = -1;
  fill_values(io, p->opts);
  *out = io;
  return 0;
}

/* The record of (part, var), parsed once per part. */
static int get_rec(ferry__io *io, int64_t part, int var, ferry__err *err) {
  var_state *vs = &io->vs[var];
  if (vs->rec_part == part)
    return 0;
  retired *old = io->pending && vs->rec_part >= 0 ? malloc(sizeof *old) : NULL;
  if (old) { /* deferred jobs may read it still: freed by io_wait */
    old->rec = vs->rec;
    old->next = io->old;
    io->old = old;
    memset(&vs->rec, 0, sizeof vs->rec);
  } else if (io->pending && vs->rec_part >= 0) {
    int rc = pq_settle(io, err); /* out of memory: settle them first */
    if (rc < 0)
      return rc;
  }
  ferry__pq_rec_free(&vs->rec);
  vs->rec_part = -1;
  const ferry__part *pt = &io->b.m->parts[part];
  char where[512];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           io->b.m->vars[var].name, io->b.rank);
  if (!pt->rec || io->b.m->record_version != PQ_REC_VERSION)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the manifest has no parquet record", where);
  int rc = ferry__pq_rec_get(&pt->rec[var], &vs->rec, where, err);
  if (rc < 0)
    return rc;
  if (vs->rec.k * (int64_t)ferry_dtype_size((ferry_dtype)vs->rec.dtype) !=
      (int64_t)io->b.m->vars[var].row_bytes)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the parquet record disagrees with the "
                         "variable's row size",
                         where);
  vs->rec_part = part;
  return 0;
}

/* size bytes at off of file fi into dst (what: for the message). */
static int read_range(ferry__io *io, int64_t part, int var, int64_t g,
                      int64_t off, int64_t size, unsigned char *dst,
                      ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &vs->rec.rg[g];
  void *h;
  io->cur_vs = vs;
  int rc = ferry__handle_get(&io->b.files, part, rg->file, io->b.rank, &h, err);
  if (rc < 0)
    return rc;
  char where[512];
  snprintf(where, sizeof where, "file %s, variable %s, row group %lld, rank %d",
           vs->rec.files[rg->file], io->b.m->vars[var].name, (long long)rg->rgi,
           io->b.rank);
  for (size_t done = 0; done < (size_t)size;) {
    size_t n =
        (size_t)size - done < (1u << 30) ? (size_t)size - done : (1u << 30);
    rc = ferry__mpi_read(((pq_fh *)h)->fh, 0, (MPI_Offset)(off + (int64_t)done),
                         dst + done, (int)n, where, err);
    if (rc < 0)
      return rc;
    done += n;
  }
  return 0;
}

/* Read the column chunk (or piece) of row group g into buffer t. */
static int read_chunk(ferry__io *io, int64_t part, int var, int64_t g, int t,
                      ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &vs->rec.rg[g];
  size_t need = (size_t)rg->size;
  if (need > io->ccap[t]) {
    unsigned char *nb = realloc(io->cbuf[t], need);
    if (!nb)
      return ferry__oom(
          err, -1, need, "a column chunk: file %s, variable %s, rank %d",
          vs->rec.files[rg->file], io->b.m->vars[var].name, io->b.rank);
    io->cbuf[t] = nb;
    io->ccap[t] = need;
  }
  return read_range(io, part, var, g, rg->offset, rg->size, io->cbuf[t], err);
}

/* The dictionary page of piece g (a split row group's), in the variable's
 * one-dictionary cache: read unless it holds it already.  *out: NULL when
 * the piece needs none. */
static int get_dict(ferry__io *io, int64_t part, int var, int64_t g,
                    const unsigned char **out, ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &vs->rec.rg[g];
  *out = NULL;
  if (rg->dict_size == 0)
    return 0;
  if (vs->dict_part != part || vs->dict_file != rg->file ||
      vs->dict_off != rg->dict_offset) {
    vs->dict_part = -1;
    if ((size_t)rg->dict_size > vs->dict_cap) {
      unsigned char *nb = realloc(vs->dict, (size_t)rg->dict_size);
      if (!nb)
        return ferry__oom(err, -1, (size_t)rg->dict_size,
                          "a dictionary page: file %s, variable %s, rank %d",
                          vs->rec.files[rg->file], io->b.m->vars[var].name,
                          io->b.rank);
      vs->dict = nb;
      vs->dict_cap = (size_t)rg->dict_size;
    }
    int rc = read_range(io, part, var, g, rg->dict_offset, rg->dict_size,
                        vs->dict, err);
    if (rc < 0)
      return rc;
    vs->dict_part = part;
    vs->dict_file = rg->file;
    vs->dict_off = rg->dict_offset;
  }
  *out = vs->dict;
  return 0;
}

/* The file row of piece g's first row, and the rows of its row group
 * before it. */
static int64_t rows_before(const pq_rec *r, int64_t g, int64_t *in_rg) {
  int64_t a = g, b = g;
  while (a > 0 && r->rg[a - 1].file == r->rg[g].file)
    a--;
  while (b > 0 && r->rg[b - 1].file == r->rg[g].file &&
         r->rg[b - 1].rgi == r->rg[g].rgi)
    b--;
  *in_rg = r->rg[g].first_row - r->rg[b].first_row;
  return r->rg[g].first_row - r->rg[a].first_row;
}

/* The offsets of variable var of part (NULL: not ragged). */
static const int64_t *offsets(const ferry__io *io, int64_t part, int var) {
  const ferry__part *pt = &io->b.m->parts[part];
  return pt->roff ? pt->roff[var] : NULL;
}

/* The bytes of rows [a, b) of a variable with offsets roff (NULL: rows of
 * rb bytes). */
static size_t span(const int64_t *roff, size_t rb, int64_t a, int64_t b) {
  return (size_t)(roff ? roff[b] - roff[a] : b - a) * rb;
}

static int decode_one(ferry__io *io, const pq_rec *r, int var, int64_t g,
                      const unsigned char *chunk, const unsigned char *dict,
                      const int64_t *roff, unsigned char *out, pq_scratch *s,
                      const pq_lanes *ln, ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &r->rg[g];
  int64_t in_rg = 0, row0 = rows_before(r, g, &in_rg);
  if (!ferry__pq_codec_available(rg->codec))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "file %s, column %s, row group %lld, rank %d: codec "
                         "%s (%d) is not supported by this build",
                         r->files[rg->file], io->b.m->vars[var].name,
                         (long long)rg->rgi, io->b.rank,
                         ferry__pq_codec_name(rg->codec), rg->codec);
  pq_job j = {.rec = r,
              .rg = rg,
              .chunk = chunk,
              .dict = dict,
              .out = out,
              .file = r->files[rg->file],
              .var = io->b.m->vars[var].name,
              .rank = io->b.rank,
              .rgi = rg->rgi,
              .row0 = row0,
              .in_rg = in_rg,
              .fill = vs->has_fill ? vs->fill : NULL,
              .nofill = vs->nofill[0] ? vs->nofill : NULL,
              .roff = roff ? roff + rg->first_row : NULL,
              .null_empty = vs->has_fill || vs->nofill[0]};
  return r->ragged ? ferry__pq_decode_ragged(&j, s, err)
                   : ferry__pq_decode_chunk(&j, s, ln, err);
}

/* Decoding of row groups whose chunks are already read: one job per row
 * group (piece) on the decode pool; each takes a scratch off the I/O
 * state's free stack (at most one per lane is in use at once). */
typedef struct pool {
  ferry__io *io;
  int var;
  int64_t g0, n;
  const unsigned char **chunks; /* [n], into own[] */
  const unsigned char **dicts;  /* [n], NULL: none */
  unsigned char **own;          /* [n] buffers read (runs, dictionaries) */
  unsigned char *out;           /* row group g0's first row */
  const int64_t *roff;          /* the part's offsets, NULL: not ragged */
  pq_rec rec;          /* the record they were read with (a shallow copy: its
                        * arrays outlive the jobs, vs->rec's or retired) */
  struct rg_job *jobs; /* [n] */
  struct pool *next;   /* deferred: another read's */
} pool;

typedef struct rg_job {
  pool *p;
  int64_t i;
} rg_job;

static void pool_free_one(pool *p) {
  for (int64_t i = 0; p->own && i < 2 * p->n; i++)
    free(p->own[i]);
  free(p->own);
  free(p->jobs);
  free(p->chunks);
  free(p->dicts);
  free(p);
}

/* The deferred reads' buffers and retired records (no job runs). */
static void settle_free(ferry__io *io) {
  while (io->pending) {
    pool *p = io->pending;
    io->pending = p->next;
    pool_free_one(p);
  }
  while (io->old) {
    retired *o = io->old;
    io->old = o->next;
    ferry__pq_rec_free(&o->rec);
    free(o);
  }
}

/* Wait for the deferred reads' jobs: the first failing one's error (in
 * submission order: the reads' order, then row-group order). */
static int pq_settle(ferry__io *io, ferry__err *err) {
  ferry__err e;
  memset(&e, 0, sizeof e);
  int rc = io->pending ? ferry__pool_wait(io->pool, &e) : 0;
  settle_free(io);
  if (rc < 0)
    *err = e;
  return rc;
}

static int pq_io_wait(ferry__io *io, ferry__err *err) {
  return pq_settle(io, err);
}

static pq_scratch *scratch_take(ferry__io *io) {
  pq_scratch *s = NULL;
  pthread_mutex_lock(&io->slock);
  if (io->nfree > 0)
    s = io->sfree[--io->nfree];
  pthread_mutex_unlock(&io->slock);
  return s;
}

static void scratch_give(ferry__io *io, pq_scratch *s) {
  pthread_mutex_lock(&io->slock);
  io->sfree[io->nfree++] = s;
  pthread_mutex_unlock(&io->slock);
}

static pq_scratch *lane_take(void *ctx) { return scratch_take(ctx); }
static void lane_give(void *ctx, pq_scratch *s) { scratch_give(ctx, s); }

/* One row group on the I/O thread: its pages as jobs on the pool (no
 * other job is pending), with the I/O thread's own scratch for the scan. */
static int decode_lanes(ferry__io *io, int var, int64_t g,
                        const unsigned char *dict, const int64_t *roff,
                        unsigned char *out, ferry__err *err) {
  pq_lanes ln = {io->pool, lane_take, lane_give, io};
  return decode_one(io, &io->vs[var].rec, var, g, io->cbuf[0], dict, roff, out,
                    &io->scratch[io->nscratch - 1], io->pending ? NULL : &ln,
                    err); /* jobs of deferred reads pending: inline */
}

static int rg_job_run(void *arg, ferry__err *err) {
  rg_job *j = arg;
  pool *p = j->p;
  ferry__io *io = p->io;
  const pq_rec *r = &p->rec;
  size_t rb = io->b.m->vars[p->var].row_bytes;
  int64_t g = p->g0 + j->i;
  unsigned char *o =
      p->out + span(p->roff, rb, r->rg[p->g0].first_row, r->rg[g].first_row);
  pq_scratch own, *s = scratch_take(io);
  memset(&own, 0, sizeof own);
  int rc = decode_one(io, r, p->var, g, p->chunks[j->i], p->dicts[j->i],
                      p->roff, o, s ? s : &own, NULL, err); /* pages inline */
  if (s)
    scratch_give(io, s);
  else
    ferry__pq_scratch_free(&own);
  return rc;
}

/* Read the chunks of row groups (pieces) [g0, g0 + p->n): a run of
 * adjacent ones in one read; the dictionary pages they need (a copy of
 * each but the last, which stays in the variable's cache). */
static int read_groups(ferry__io *io, int64_t part, int var, pool *p, int keep,
                       ferry__err *err) {
  const pq_rec *r = &io->vs[var].rec;
  int64_t g0 = p->g0, n = p->n, nown = 0;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < n;) {
    const pq_rg_rec *a = &r->rg[g0 + i];
    int64_t j = i + 1, end = a->offset + a->size;
    while (j < n && r->rg[g0 + j].file == a->file &&
           r->rg[g0 + j].offset == end &&
           r->rg[g0 + j].size <= (int64_t)1 << 40 &&
           end - a->offset <= ((int64_t)1 << 30)) {
      end += r->rg[g0 + j].size;
      j++;
    }
    unsigned char *b = malloc((size_t)(end - a->offset) + 1);
    if (!b)
      return ferry__oom(err, -1, (size_t)(end - a->offset) + 1,
                        "column chunks (file %s, dataset %s, variable %s, "
                        "rank %d)",
                        r->files[a->file], io->b.m->spec,
                        io->b.m->vars[var].name, io->b.rank);
    p->own[nown++] = b;
    rc = read_range(io, part, var, g0 + i, a->offset, end - a->offset, b, err);
    for (; i < j; i++)
      p->chunks[i] = b + (r->rg[g0 + i].offset - a->offset);
  }
  int64_t last = -1; /* the last piece that needs a dictionary */
  for (int64_t i = 0; i < n; i++)
    if (r->rg[g0 + i].dict_size > 0)
      last = i;
  for (int64_t i = 0; rc == 0 && i < n; i++) {
    const pq_rg_rec *a = &r->rg[g0 + i];
    if (a->dict_size == 0)
      continue;
    if (i > 0 && p->dicts[i - 1] && r->rg[g0 + i - 1].file == a->file &&
        r->rg[g0 + i - 1].dict_offset == a->dict_offset) {
      p->dicts[i] = p->dicts[i - 1];
      continue;
    }
    const unsigned char *d;
    rc = get_dict(io, part, var, g0 + i, &d, err);
    int later = 0; /* another dictionary after this one in this read */
    for (int64_t k = i + 1; rc == 0 && k <= last; k++)
      later |= r->rg[g0 + k].dict_size > 0 &&
               (r->rg[g0 + k].file != a->file ||
                r->rg[g0 + k].dict_offset != a->dict_offset);
    if (rc == 0 && (later || keep)) { /* keep: the cache may change */
      unsigned char *c = malloc((size_t)a->dict_size);
      if (!c)
        return ferry__oom(err, -1, (size_t)a->dict_size,
                          "a dictionary page (file %s, dataset %s, variable "
                          "%s, rank %d)",
                          r->files[a->file], io->b.m->spec,
                          io->b.m->vars[var].name, io->b.rank);
      memcpy(c, d, (size_t)a->dict_size);
      p->own[nown++] = c;
      d = c;
    }
    p->dicts[i] = d;
  }
  return rc;
}

/* One job per row group on the pool, then wait (unless deferring): the
 * first failing row group's error (in row-group order), as serially. */
static int decode_pool(ferry__io *io, pool *p, int defer, ferry__err *err) {
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < p->n; i++) {
    p->jobs[i].p = p;
    p->jobs[i].i = i;
    rc = ferry__pool_submit(io->pool, rg_job_run, &p->jobs[i], err);
  }
  if (defer)
    return rc; /* io_wait reports an earlier job's error first */
  ferry__err e;
  memset(&e, 0, sizeof e);
  int wrc = ferry__pool_wait(io->pool, &e);
  if (wrc < 0) { /* an earlier job's error comes first */
    *err = e;
    return wrc;
  }
  return rc;
}

/* Read, then decode, the whole row groups [g0, g1) into out.  With
 * deferred reads (io_params.defer and a pool) every row group is a job,
 * left running for io_wait, with the buffers it reads from kept until
 * then. */
static int whole_groups(ferry__io *io, int64_t part, int var, int64_t g0,
                        int64_t g1, unsigned char *out, ferry__err *err) {
  int64_t n = g1 - g0;
  int defer = io->defer && io->pool;
  const int64_t *roff = offsets(io, part, var);
  const pq_rec *r = &io->vs[var].rec;
  size_t rb = io->b.m->vars[var].row_bytes;
  if (n <= 0)
    return 0;
  if (!defer && (n == 1 || ferry__pool_lanes(io->pool) == 1)) {
    for (int64_t g = g0; g < g1; g++) {
      const unsigned char *d = NULL;
      int rc = read_chunk(io, part, var, g, 0, err);
      if (rc == 0)
        rc = get_dict(io, part, var, g, &d, err);
      if (rc == 0)
        rc = decode_lanes(
            io, var, g, d, roff,
            out + span(roff, rb, r->rg[g0].first_row, r->rg[g].first_row), err);
      if (rc < 0)
        return rc;
    }
    return 0;
  }
  pool *p = calloc(1, sizeof *p);
  if (p) {
    p->io = io;
    p->var = var;
    p->g0 = g0;
    p->n = n;
    p->out = out;
    p->roff = roff;
    p->rec = io->vs[var].rec;
    p->chunks = calloc((size_t)n, sizeof *p->chunks);
    p->dicts = calloc((size_t)n, sizeof *p->dicts);
    p->own = calloc((size_t)n * 2, sizeof *p->own);
    p->jobs = calloc((size_t)n, sizeof *p->jobs);
  }
  int rc =
      p && p->chunks && p->dicts && p->own && p->jobs
          ? read_groups(io, part, var, p, defer, err)
          : ferry__oom(err, -1,
                       !p ? sizeof *p
                          : (size_t)n * (sizeof *p->chunks + sizeof *p->dicts +
                                         2 * sizeof *p->own + sizeof *p->jobs),
                       "%lld row groups' jobs (dataset %s, variable %s, "
                       "rank %d)",
                       (long long)n, io->b.m->spec, io->b.m->vars[var].name,
                       io->b.rank);
  if (rc == 0)
    rc = decode_pool(io, p, defer, err);
  if (p && defer) { /* its jobs may run: freed by io_wait */
    p->next = io->pending;
    io->pending = p;
  } else if (p) {
    pool_free_one(p);
  }
  return rc;
}

/* Rows [a, b) of row group g (part-relative rows) into dst, through the
 * variable's one-row-group cache. */
static int partial_group(ferry__io *io, int64_t part, int var, int64_t g,
                         int64_t a, int64_t b, unsigned char *dst,
                         ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &vs->rec.rg[g];
  size_t rb = io->b.m->vars[var].row_bytes;
  const int64_t *roff = offsets(io, part, var);
  if (vs->cache_part != part || vs->cache_rg != g) {
    size_t need = span(roff, rb, rg->first_row, rg->first_row + rg->num_rows);
    vs->cache_part = -1;
    if (need > vs->cache_cap) {
      unsigned char *nb = realloc(vs->cache, need);
      if (!nb)
        return ferry__oom(err, -1, need,
                          "a decoded row group (row group %lld of file %s, "
                          "variable %s, rank %d)",
                          (long long)rg->rgi, vs->rec.files[rg->file],
                          io->b.m->vars[var].name, io->b.rank);
      vs->cache = nb;
      vs->cache_cap = need;
    }
    const unsigned char *d = NULL;
    int rc = read_chunk(io, part, var, g, 0, err);
    if (rc == 0)
      rc = get_dict(io, part, var, g, &d, err);
    if (rc == 0)
      rc = decode_lanes(io, var, g, d, roff, vs->cache, err);
    if (rc < 0)
      return rc;
    vs->cache_part = part;
    vs->cache_rg = g;
  }
  if (span(roff, rb, a, b) > 0)
    memcpy(dst, vs->cache + span(roff, rb, rg->first_row, a),
           span(roff, rb, a, b));
  return 0;
}

static int pq_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                      int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc == 0)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  if (rc == 0)
    rc = get_rec(io, part, var, err);
  if (rc < 0 || nrows == 0)
    return rc;
  const pq_rec *r = &io->vs[var].rec;
  size_t rb = m->vars[var].row_bytes;
  int64_t end = row + nrows, lo = 0, hi = r->nrg;
  while (hi - lo > 1) { /* last row group starting at or before row */
    int64_t mid = lo + (hi - lo) / 2;
    if (r->rg[mid].first_row <= row)
      lo = mid;
    else
      hi = mid;
  }
  unsigned char *out = buf;
  int64_t g = lo;
  while (row < end && g < r->nrg) {
    const pq_rg_rec *rg = &r->rg[g];
    int64_t a = row, b = rg->first_row + rg->num_rows < end
                             ? rg->first_row + rg->num_rows
                             : end;
    if (a == rg->first_row && b == rg->first_row + rg->num_rows) {
      int64_t g1 = g + 1; /* whole row groups [g, g1) */
      while (g1 < r->nrg && r->rg[g1].first_row + r->rg[g1].num_rows <= end)
        g1++;
      b = r->rg[g1 - 1].first_row + r->rg[g1 - 1].num_rows;
      rc = whole_groups(io, part, var, g, g1, out, err);
      g = g1;
    } else {
      rc = b > a ? partial_group(io, part, var, g, a, b, out, err) : 0;
      g++;
    }
    if (rc < 0)
      return rc;
    out += span(offsets(io, part, var), rb, a, b);
    row = b;
  }
  if (row < end)
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "rows past the last row group: file %s, variable "
                         "%s, rank %d",
                         m->parts[part].paths[var], m->vars[var].name,
                         io->b.rank);
  return 0;
}

const ferry__backend ferry__backend_parquet = {
    .name = "parquet",
    .version = 1,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = PQ_REC_VERSION,
    .scheme = NULL,
    .probe = ferry__pq_probe,
    .accepts = "a .parquet file (PAR1 magic) or a directory of them",
    .describe = ferry__pq_describe,
    .io_open = pq_io_open,
    .io_read = pq_io_read,
    .io_close = pq_io_close,
    .io_wait = pq_io_wait,
};
