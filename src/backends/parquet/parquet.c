/*
 * parquet.c - the parquet backend's vtable: probe, describe (rank 0 reads
 * every footer once; meta.c), the per-variable record that carries what
 * every rank needs to read (files and their sizes, row groups with their
 * first row, column chunk offset and sizes, codec, physical type, levels,
 * list length), and the reads.
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
#include "core/options.h"
#include "util/dtype.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The bytes of a column's storage text (ferry info). */
#define PQ_STORAGE_LEN 640

/* ---- Record ---------------------------------------------------------------
 */

typedef struct wbuf {
  unsigned char *p;
  size_t n, cap;
  int bad;
  size_t want; /* bad: the bytes that could not be had */
} wbuf;

static void w_bytes(wbuf *w, const void *p, size_t n) {
  if (w->bad)
    return;
  if (w->n + n > w->cap) {
    size_t c = w->cap ? w->cap * 2 : 256;
    while (c < w->n + n)
      c *= 2;
    unsigned char *q = realloc(w->p, c);
    if (!q) {
      w->bad = 1;
      w->want = c;
      return;
    }
    w->p = q;
    w->cap = c;
  }
  memcpy(w->p + w->n, p, n);
  w->n += n;
}
static void w_i64(wbuf *w, int64_t v) { w_bytes(w, &v, 8); }
static void w_i32(wbuf *w, int32_t v) { w_bytes(w, &v, 4); }

int ferry__pq_rec_put(const pq_rec *r, ferry__blob *b) {
  wbuf w = {0};
  w_i32(&w, (int32_t)PQ_REC_MAGIC);
  int32_t hdr[6] = {r->type,    r->type_length, r->dtype,
                    r->max_def, r->max_rep,     r->is_list};
  w_bytes(&w, hdr, sizeof hdr);
  w_i64(&w, r->k);
  w_i32(&w, r->nfiles);
  for (int32_t i = 0; i < r->nfiles; i++) {
    int32_t n = (int32_t)strlen(r->files[i]);
    w_i32(&w, n);
    w_bytes(&w, r->files[i], (size_t)n);
    w_i64(&w, r->fsize[i]);
  }
  w_i64(&w, r->nrg);
  for (int64_t i = 0; i < r->nrg; i++) {
    const pq_rg_rec *g = &r->rg[i];
    int64_t v[6] = {g->first_row, g->num_rows, g->offset,
                    g->size,      g->usize,    g->num_values};
    w_bytes(&w, v, sizeof v);
    w_i32(&w, g->file);
    w_i32(&w, g->codec);
    int64_t x[3] = {g->rgi, g->dict_offset, g->dict_size};
    w_bytes(&w, x, sizeof x);
  }
  if (w.bad) {
    free(w.p);
    b->p = NULL;
    b->len = w.want; /* for the caller's message */
    return FERRY_ENOMEM;
  }
  b->p = w.p;
  b->len = w.n;
  return 0;
}

typedef struct rbuf {
  const unsigned char *p;
  size_t n, at;
  int bad;
  size_t oom; /* out of memory: the bytes that could not be had */
} rbuf;

static void r_bytes(rbuf *r, void *out, size_t n) {
  if (r->bad || n > r->n - r->at) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  memcpy(out, r->p + r->at, n);
  r->at += n;
}
static int64_t r_i64(rbuf *r) {
  int64_t v;
  r_bytes(r, &v, 8);
  return v;
}
static int32_t r_i32(rbuf *r) {
  int32_t v;
  r_bytes(r, &v, 4);
  return v;
}

void ferry__pq_rec_free(pq_rec *r) {
  for (int32_t i = 0; r->files && i < r->nfiles; i++)
    free(r->files[i]);
  free(r->files);
  free(r->fsize);
  free(r->rg);
  memset(r, 0, sizeof *r);
}

static int rec_files(rbuf *b, pq_rec *r) {
  r->nfiles = r_i32(b);
  if (b->bad || r->nfiles < 1 || (size_t)r->nfiles > b->n)
    return -1;
  r->files = calloc((size_t)r->nfiles, sizeof *r->files);
  r->fsize = calloc((size_t)r->nfiles, sizeof *r->fsize);
  if (!r->files || !r->fsize) {
    b->oom = (size_t)r->nfiles * (sizeof *r->files + sizeof *r->fsize);
    return -1;
  }
  for (int32_t i = 0; i < r->nfiles; i++) {
    int32_t n = r_i32(b);
    if (b->bad || n < 0 || (size_t)n > b->n - b->at)
      return -1;
    if (!(r->files[i] = malloc((size_t)n + 1))) {
      b->oom = (size_t)n + 1;
      return -1;
    }
    r_bytes(b, r->files[i], (size_t)n);
    r->files[i][n] = '\0';
    r->fsize[i] = r_i64(b);
  }
  return b->bad ? -1 : 0;
}

int ferry__pq_rec_get(const ferry__blob *blob, pq_rec *r, const char *where,
                      ferry__err *err) {
  rbuf b = {blob->p, blob->len, 0, 0, 0};
  memset(r, 0, sizeof *r);
  int ok = (uint32_t)r_i32(&b) == PQ_REC_MAGIC;
  int32_t hdr[6];
  r_bytes(&b, hdr, sizeof hdr);
  r->type = hdr[0];
  r->type_length = hdr[1];
  r->dtype = hdr[2];
  r->max_def = hdr[3];
  r->max_rep = hdr[4];
  r->is_list = hdr[5];
  r->k = r_i64(&b);
  ok = ok && !b.bad && r->k >= 1 && rec_files(&b, r) == 0;
  r->nrg = ok ? r_i64(&b) : 0;
  ok = ok && !b.bad && r->nrg >= 0 && (uint64_t)r->nrg <= b.n / 80;
  if (ok && !(r->rg = calloc((size_t)(r->nrg ? r->nrg : 1), sizeof *r->rg))) {
    ok = 0;
    b.oom = (size_t)(r->nrg ? r->nrg : 1) * sizeof *r->rg;
  }
  for (int64_t i = 0; ok && i < r->nrg; i++) {
    pq_rg_rec *g = &r->rg[i];
    int64_t v[6];
    r_bytes(&b, v, sizeof v);
    g->first_row = v[0];
    g->num_rows = v[1];
    g->offset = v[2];
    g->size = v[3];
    g->usize = v[4];
    g->num_values = v[5];
    g->file = r_i32(&b);
    g->codec = r_i32(&b);
    int64_t x[3];
    r_bytes(&b, x, sizeof x);
    g->rgi = x[0];
    g->dict_offset = x[1];
    g->dict_size = x[2];
    ok = !b.bad && g->file >= 0 && g->file < r->nfiles && g->size >= 0 &&
         g->offset >= 0 && g->num_rows >= 0 && g->rgi >= 0 &&
         g->dict_offset >= 0 && g->dict_size >= 0 &&
         g->dict_size <= (int64_t)PQ_MAX_DICT &&
         (i == 0 ||
          g->first_row == r->rg[i - 1].first_row + r->rg[i - 1].num_rows);
  }
  if (b.oom) {
    ferry__pq_rec_free(r);
    return ferry__oom(err, -1, b.oom, "the parquet record of %s", where);
  }
  if (!ok || b.at != b.n) {
    ferry__pq_rec_free(r);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the manifest's parquet record is corrupt", where);
  }
  return 0;
}

/* ---- Describe ------------------------------------------------------------ */

static int has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n > m && strcmp(s + n - m, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.parquet regular files of dir, sorted; *n may be 0. */
static int list_dir(const char *dir, char ***out, int *n, ferry__err *err) {
  DIR *d = opendir(dir);
  char **v = NULL;
  int cnt = 0, cap = 0, rc = 0;
  *out = NULL;
  *n = 0;
  if (!d)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", dir,
                         strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (!has_suffix(e->d_name, ".parquet") || e->d_name[0] == '.')
      continue;
    char *p = ferry__join_path(dir, e->d_name);
    if (!p) {
      rc = ferry__oom(err, -1, strlen(dir) + strlen(e->d_name) + 2,
                      "the path of %s in directory %s", e->d_name, dir);
      break;
    }
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(p);
      continue;
    }
    if (cnt == cap) {
      cap = cap ? cap * 2 : 16;
      char **nv = cnt < 10000000 ? realloc(v, (size_t)cap * sizeof *v) : NULL;
      if (!nv) {
        free(p);
        rc = ferry__oom(err, -1, (size_t)cap * sizeof *v,
                        "the list of %d files in directory %s%s", cap, dir,
                        cnt < 10000000 ? ""
                                       : " (too many files: ferry lists at "
                                         "most 10000000)");
        break;
      }
      v = nv;
    }
    v[cnt++] = p;
  }
  closedir(d);
  if (rc < 0) {
    for (int i = 0; i < cnt; i++)
      free(v[i]);
    free(v);
    return rc;
  }
  if (cnt)
    qsort(v, (size_t)cnt, sizeof *v, cmp_str);
  *out = v;
  *n = cnt;
  return 0;
}

static int probe(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 0;
  if (S_ISDIR(st.st_mode)) {
    char **v;
    int n;
    ferry__err e;
    memset(&e, 0, sizeof e);
    if (list_dir(path, &v, &n, &e) < 0)
      return 0;
    for (int i = 0; i < n; i++)
      free(v[i]);
    free(v);
    return n > 0;
  }
  if (!S_ISREG(st.st_mode))
    return 0;
  if (has_suffix(path, ".parquet") || has_suffix(path, ".parq"))
    return 1;
  int fd = ferry__open_regular(path, NULL);
  unsigned char m[4];
  size_t got = 0;
  if (fd < 0)
    return 0;
  int ok = ferry__pread_full(fd, m, 4, 0, &got) == 0 && got == 4 &&
           memcmp(m, "PAR1", 4) == 0;
  close(fd);
  return ok;
}

/* One candidate variable of the first file: its column and what it is. */
typedef struct cand {
  int col; /* leaf index                */
  ferry_dtype dtype;
  int64_t k;
  pq_rec rec;
  /* for ferry info */
  uint32_t encodings, codecs;
  int64_t csize, usize;
  /* pages of the row groups larger than the chunk target, [rec.nrg] */
  pq_pages *pg;
  int64_t npg;
  char *storage;
  int from_hint;   /* k is the ARROW:schema FixedSizeList size */
  int unsplit;     /* a large chunk of this column did not split: no more page
                    * lookups for it */
  int64_t split_q; /* rows per piece, 0: row groups whole */
  int split_index; /* pieces found by the OffsetIndex (1) or a scan (0) */
} cand;

/* k of a list column from one file: values per row, the same in every
 * row group; -1 when they differ. */
static int64_t list_k(const pq_file *f, int col) {
  int64_t k = 0;
  for (int64_t g = 0; g < f->nrg; g++) {
    const pq_chunk *c = &f->rg[g].chunks[col];
    int64_t r = f->rg[g].num_rows;
    if (r == 0)
      continue;
    if (c->num_values % r != 0 || (k && c->num_values / r != k))
      return -1;
    k = c->num_values / r;
  }
  return k ? k : -1;
}

typedef struct desc {
  const char *path;    /* the part */
  int64_t scan_budget; /* page headers rank 0 may still read in this part */
  char *notes;
  size_t notes_len;
  cand *c;
  int nc;
  pq_file first;
  const char *first_file;
  int64_t rows;
  int lanes; /* decode lanes counted in cache_bytes (pool.c) */
} desc;

static void note(desc *d, const char *fmt, const char *a, const char *b) {
  char line[512];
  int n = snprintf(line, sizeof line, fmt, a, b);
  if (n < 0)
    return;
  size_t add = strlen(line) + 2;
  char *p = realloc(d->notes, d->notes_len + add + 1);
  if (!p)
    return;
  if (d->notes_len) {
    memcpy(p + d->notes_len, "; ", 2);
    d->notes_len += 2;
  }
  memcpy(p + d->notes_len, line, strlen(line) + 1);
  d->notes_len += strlen(line);
  d->notes = p;
}

/* Decide which columns of the first file are variables. */
/* The row length of list column i: from the values per row of every row
 * group, checked against the ARROW:schema hint's FixedSizeList size hk
 * when there is one (0: none).  *why (in buf) when it is not read. */
static int64_t list_len(const pq_file *f, int i, int64_t hk, char *buf,
                        size_t len, const char **why) {
  const pq_col *col = &f->cols[i];
  int64_t k = col->max_rep == 1 ? list_k(f, i) : -1;
  if (col->max_rep != 1)
    *why = "lists of lists are not read";
  else if (hk > 0 && k != hk) {
    if (k > 0)
      snprintf(buf, len,
               "its rows hold %lld elements, not the %lld of its ARROW:schema "
               "type fixed_size_list<%lld>",
               (long long)k, (long long)hk, (long long)hk);
    else
      snprintf(buf, len,
               "its rows do not all hold the %lld elements of its "
               "ARROW:schema type fixed_size_list<%lld> (the values per row "
               "differ between row groups)",
               (long long)hk, (long long)hk);
    *why = buf;
  } else if (k < 1)
    *why = "its lists are not all of one length (the values per row differ "
           "between row groups)";
  return k;
}

/* The FixedSizeList sizes of the first file's ARROW:schema, when it has a
 * readable one (a note says why not). */
static int read_hint(desc *d, pq_arrow_hint *h) {
  const char *why = NULL;
  if (!d->first.arrow_schema)
    return 0;
  if (ferry__pq_arrow_hint_parse(d->first.arrow_schema,
                                 d->first.arrow_schema_len, h, &why) == 0)
    return 1;
  note(d, "the ARROW:schema hint is not read (%s)%s", why, "");
  return 0;
}

/* Decide which columns of the first file are variables. */
static int pick_columns(desc *d, ferry__err *err) {
  const pq_file *f = &d->first;
  pq_arrow_hint h;
  memset(&h, 0, sizeof h);
  int hint = read_hint(d, &h);
  if (!(d->c = calloc((size_t)(f->ncols ? f->ncols : 1), sizeof *d->c))) {
    ferry__pq_arrow_hint_free(&h);
    return ferry__oom(err, -1, (size_t)(f->ncols ? f->ncols : 1) * sizeof *d->c,
                      "the %d columns of %s", f->ncols, d->first_file);
  }
  for (int i = 0; i < f->ncols; i++) {
    const pq_col *col = &f->cols[i];
    const char *why = NULL;
    char buf[240];
    ferry_dtype dt;
    int64_t k = 1, hk = hint && col->is_list
                            ? ferry__pq_arrow_hint_k(&h, col->top)
                            : 0;
    if (col->nested || col->repeated_leaf)
      why = "nested columns (structs, maps, lists of groups) are not read";
    else if (ferry__pq_col_dtype(col, &dt, &why) < 0)
      ;
    else if (col->is_list)
      k = list_len(f, i, hk, buf, sizeof buf, &why);
    if (why) {
      note(d, "column %s skipped: %s", col->name, why);
      continue;
    }
    cand *c = &d->c[d->nc++];
    c->col = i;
    c->dtype = dt;
    c->k = k;
    c->from_hint = hk > 0;
  }
  ferry__pq_arrow_hint_free(&h);
  if (d->nc == 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: no column ferry can read (%s)", d->path,
                         d->notes ? d->notes : "the schema has no column");
  return 0;
}

/* Same columns as the first file, or an error naming file and column. */
static int same_schema(const desc *d, const pq_file *f, const char *file,
                       ferry__err *err) {
  const pq_file *a = &d->first;
  for (int i = 0; i < a->ncols || i < f->ncols; i++) {
    const pq_col *x = i < a->ncols ? &a->cols[i] : NULL;
    const pq_col *y = i < f->ncols ? &f->cols[i] : NULL;
    if (!x || !y || strcmp(x->name, y->name) != 0 || x->type != y->type ||
        x->max_def != y->max_def || x->max_rep != y->max_rep ||
        x->converted != y->converted || x->logical != y->logical ||
        x->int_bits != y->int_bits)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "%s: column %d is %s (%s) where %s has %s (%s): "
                           "the files of a dataset must share one schema",
                           file, i, y ? y->name : "missing",
                           y ? ferry__pq_type_name(y->type) : "-",
                           d->first_file, x ? x->name : "nothing",
                           x ? ferry__pq_type_name(x->type) : "-");
  }
  return 0;
}

/* Check the chunks of file f (index fi) for every candidate and append its
 * row groups to their records. */
static int add_file(desc *d, const pq_file *f, int fi, const char *file,
                    int *fd, ferry__err *err) {
  for (int v = 0; v < d->nc; v++) {
    cand *c = &d->c[v];
    const pq_col *col = &f->cols[c->col];
    pq_rec *r = &c->rec;
    if (col->is_list && list_k(f, c->col) != c->k)
      return ferry__seterr(err, FERRY_ESHAPE,
                           "%s: list column %s does not hold %lld values per "
                           "row in every row group, as %s does",
                           file, col->top, (long long)c->k, d->first_file);
    int rc = ferry__pq_check_chunks(f, c->col, file, err);
    if (rc < 0)
      return rc;
    size_t ngroups = (size_t)(r->nrg + f->nrg + 1);
    pq_rg_rec *ng = realloc(r->rg, ngroups * sizeof *ng);
    if (ng)
      r->rg = ng;
    pq_pages *np = ng ? realloc(c->pg, ngroups * sizeof *np) : NULL;
    if (!np)
      return ferry__oom(err, -1, ngroups * (ng ? sizeof *np : sizeof *ng),
                        "the row groups of column %s (%s)", col->name, file);
    c->pg = np;
    for (int64_t g = 0; g < f->nrg; g++) {
      const pq_chunk *ch = &f->rg[g].chunks[c->col];
      pq_rg_rec *o = &r->rg[r->nrg++];
      o->first_row =
          d->rows + (g ? o[-1].first_row + o[-1].num_rows - d->rows : 0);
      o->num_rows = f->rg[g].num_rows;
      o->offset = ch->offset;
      o->size = ch->size;
      o->usize = ch->usize;
      o->num_values = ch->num_values;
      o->file = fi;
      o->codec = ch->codec;
      o->rgi = g;
      o->dict_offset = o->dict_size = 0;
      memset(&c->pg[r->nrg - 1], 0, sizeof *c->pg);
      c->npg = r->nrg;
      if (fd && !c->unsplit &&
          (size_t)o->num_rows * ferry_dtype_size(c->dtype) * (size_t)c->k >
              FERRY__AUTO_CHUNK_BYTES) {
        if (*fd == -1 && (*fd = ferry__open_regular(file, NULL)) < 0)
          *fd = -2; /* not again: the chunks are read whole */
        if (*fd >= 0 &&
            ferry__pq_chunk_pages(*fd, ch, o->num_rows, c->k,
                                  &c->pg[r->nrg - 1], &d->scan_budget) < 0)
          return ferry__seterr(err, FERRY_ENOMEM, /* never: see parquet.h */
                               "out of memory");
        /* a chunk of one page (or none found): its writer's other chunks
         * of this column will not split either; stop looking */
        c->unsplit = c->pg[r->nrg - 1].n <= 1;
      }
      c->encodings |= ch->encodings;
      if (ch->codec >= 0 && ch->codec < 32)
        c->codecs |= 1u << ch->codec;
      c->csize += ch->size;
      c->usize += ch->usize;
    }
  }
  d->rows += f->num_rows;
  return 0;
}

static void fmt_bytes(char *b, size_t n, double v) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    i++;
  }
  snprintf(b, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static char *storage_text(const cand *c, int nfiles) {
  char codecs[160] = "", encs[256] = "", a[32], b[32];
  size_t n;
  for (int i = 0; i < 32; i++) {
    if (c->codecs & (1u << i)) {
      n = strlen(codecs);
      snprintf(codecs + n, sizeof codecs - n, "%s%s%s", n ? "+" : "",
               ferry__pq_codec_name(i),
               ferry__pq_codec_available(i) ? "" : " (no decoder)");
    }
    if (c->encodings & (1u << i)) {
      n = strlen(encs);
      snprintf(encs + n, sizeof encs - n, "%s%s", n ? "+" : "",
               ferry__pq_encoding_name(i));
    }
  }
  fmt_bytes(a, sizeof a, (double)c->csize);
  fmt_bytes(b, sizeof b, (double)c->usize);
  int64_t minr = INT64_MAX, maxr = 0;
  for (int64_t g = 0; g < c->rec.nrg; g++) {
    int64_t r = c->rec.rg[g].num_rows;
    minr = r < minr ? r : minr;
    maxr = r > maxr ? r : maxr;
  }
  char *s = malloc(PQ_STORAGE_LEN), list[80] = "";
  if (c->rec.is_list && c->from_hint)
    snprintf(list, sizeof list, " fixed_size_list<%lld> (from ARROW:schema)",
             (long long)c->k);
  else if (c->rec.is_list)
    snprintf(list, sizeof list, " list");
  if (s)
    snprintf(s, PQ_STORAGE_LEN,
             "parquet %s%s, %lld row groups of %lld..%lld rows in %d file%s, "
             "%s, %s, %s stored, %s uncompressed",
             ferry__pq_type_name(c->rec.type), list, (long long)c->rec.nrg,
             (long long)(c->rec.nrg ? minr : 0), (long long)maxr, nfiles,
             nfiles == 1 ? "" : "s", codecs[0] ? codecs : "-",
             encs[0] ? encs : "-", a, b);
  return s;
}

/* chunk_rows: the size of every row group but the last, when they agree. */
static int64_t uniform_rows(const pq_rec *r) {
  if (r->nrg == 0)
    return 0;
  int64_t n = r->rg[0].num_rows;
  for (int64_t g = 1; g + 1 < r->nrg; g++)
    if (r->rg[g].num_rows != n)
      return 0;
  if (r->nrg > 1 && r->rg[r->nrg - 1].num_rows > n)
    return 0;
  return n;
}

/* ferry info's storage text (of the row groups), then the row groups
 * larger than the chunk target split into pieces at page starts. */
static int split_var(cand *c, const char *name, int nfiles, ferry__err *err) {
  char *s = storage_text(c, nfiles);
  if (!s)
    return ferry__oom(err, -1, PQ_STORAGE_LEN,
                      "the storage description of column %s", name);
  c->storage = s;
  size_t rb = ferry_dtype_size(c->dtype) * (size_t)c->k;
  int64_t q = ferry__pq_split_rows(&c->rec, c->pg, rb, FERRY__AUTO_CHUNK_BYTES);
  if (q <= 0)
    return 0;
  int index = 1;
  for (int64_t g = 0; g < c->rec.nrg; g++)
    if (c->pg[g].n > 0 && !c->pg[g].from_index)
      index = 0;
  if (ferry__pq_split_apply(&c->rec, c->pg, q) < 0)
    return ferry__oom(err, -1, ferry__pq_split_bytes(&c->rec, c->pg, q),
                      "the pieces of %lld rows of column %s", (long long)q,
                      name);
  size_t n = strlen(s) + 200;
  char *t = realloc(s, n);
  if (!t)
    return ferry__oom(err, -1, n, "the storage description of column %s", name);
  c->storage = t;
  snprintf(t + strlen(t), n - strlen(t),
           "; large row groups read in pieces of %lld rows at page starts "
           "(from the %s)",
           (long long)q, index ? "offset index" : "page headers");
  return 0;
}

static int fill_out(desc *d, char **files, int nfiles, ferry__part_desc *out,
                    ferry__err *err) {
  int nv = d->nc;
  out->nvars = nv;
  out->vars = calloc((size_t)nv, sizeof *out->vars);
  out->paths = calloc((size_t)nv, sizeof *out->paths);
  out->data_offset = calloc((size_t)nv, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nv, sizeof *out->file_size);
  out->rec = calloc((size_t)nv, sizeof *out->rec);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec)
    return ferry__oom(err, -1,
                      (size_t)nv * (sizeof *out->vars + sizeof *out->paths +
                                    sizeof *out->data_offset +
                                    sizeof *out->file_size + sizeof *out->rec),
                      "the description of %d columns of %s", nv, d->path);
  out->num_samples = d->rows;
  for (int v = 0; v < nv; v++) {
    cand *c = &d->c[v];
    const pq_col *col = &d->first.cols[c->col];
    ferry__var *x = &out->vars[v];
    pq_rec *r = &c->rec;
    size_t es = ferry_dtype_size(c->dtype);
    r->files = files; /* borrowed for ferry__pq_rec_put */
    r->nfiles = nfiles;
    x->name = strdup(col->is_list ? col->top : col->name);
    x->dtype = c->dtype;
    x->swapped = (*(const uint16_t *)"\1\0") != 1; /* big-endian host */
    x->row_ndim = col->is_list ? 1 : 0;
    x->row_shape[0] = c->k;
    x->row_bytes = es * (size_t)c->k;
    x->chunk_rows = uniform_rows(r);
    x->storage = c->storage;
    c->storage = NULL;
    int64_t maxc = 0, maxr = 0, maxd = 0, maxu = 0;
    for (int64_t g = 0; g < r->nrg; g++) {
      maxc = r->rg[g].size > maxc ? r->rg[g].size : maxc;
      maxu = r->rg[g].usize > maxu ? r->rg[g].usize : maxu;
      maxr = r->rg[g].num_rows > maxr ? r->rg[g].num_rows : maxr;
      maxd = r->rg[g].dict_size > maxd ? r->rg[g].dict_size : maxd;
    }
    x->cache_bytes = (size_t)maxc + (size_t)maxr * x->row_bytes + (size_t)maxd;
    /* Each further decode lane holds a scratch of its own: a page
     * decompressed and a dictionary decoded, each within a chunk's
     * uncompressed bytes. */
    if (d->lanes > 1) {
      size_t cap = SIZE_MAX / 4, lane = (size_t)maxu;
      size_t room = x->cache_bytes < cap
                        ? (cap - x->cache_bytes) / (size_t)(d->lanes - 1) / 2
                        : 0;
      x->cache_bytes = lane > room
                           ? cap /* past any budget: refused there */
                           : x->cache_bytes + (size_t)(d->lanes - 1) * 2 * lane;
    }
    out->paths[v] = strdup(d->path);
    out->file_size[v] = nfiles == 1 ? r->fsize[0] : 0;
    int rc = ferry__pq_rec_put(r, &out->rec[v]);
    r->files = NULL;
    r->nfiles = 0;
    if (rc < 0 || !x->name || !x->storage || !out->paths[v])
      return ferry__oom(err, -1,
                        rc < 0 ? out->rec[v].len /* what the record wanted */
                        : !x->name
                            ? strlen(col->is_list ? col->top : col->name) + 1
                        : !x->storage ? PQ_STORAGE_LEN
                                      : strlen(d->path) + 1,
                        "the description of column %s of %s",
                        col->is_list ? col->top : col->name, d->path);
  }
  return 0;
}

static int describe_files(desc *d, char **files, int nfiles,
                          ferry__part_desc *out, ferry__err *err) {
  int rc = 0;
  int64_t *fsize = calloc((size_t)nfiles, sizeof *fsize);
  if (!fsize)
    return ferry__oom(err, -1, (size_t)nfiles * sizeof *fsize,
                      "the sizes of %d files of %s", nfiles, d->path);
  d->first_file = files[0];
  d->scan_budget = PQ_SCAN_BUDGET; /* for the whole part */
  for (int i = 0; rc == 0 && i < nfiles; i++) {
    pq_file f;
    memset(&f, 0, sizeof f);
    pq_file *fp = i == 0 ? &d->first : &f;
    if ((rc = ferry__pq_file_read(files[i], fp, err)) < 0)
      break;
    fsize[i] = fp->size;
    if (i == 0)
      rc = pick_columns(d, err);
    else
      rc = same_schema(d, fp, files[i], err);
    int fd = -1;
    if (rc == 0)
      rc = add_file(d, fp, i, files[i], &fd, err);
    if (fd >= 0)
      close(fd);
    if (i > 0)
      ferry__pq_file_free(&f);
  }
  for (int v = 0; rc == 0 && v < d->nc; v++) {
    d->c[v].rec.fsize = fsize;
    pq_rec *r = &d->c[v].rec;
    const pq_col *col = &d->first.cols[d->c[v].col];
    r->type = col->type;
    r->type_length = col->type_length;
    r->dtype = (int32_t)d->c[v].dtype;
    r->max_def = col->max_def;
    r->max_rep = col->max_rep;
    r->is_list = col->is_list;
    r->k = d->c[v].k;
  }
  for (int v = 0; rc == 0 && v < d->nc; v++)
    rc = split_var(&d->c[v], d->first.cols[d->c[v].col].name, nfiles, err);
  if (rc == 0)
    rc = fill_out(d, files, nfiles, out, err);
  for (int v = 0; v < d->nc; v++) {
    cand *c = &d->c[v];
    for (int64_t g = 0; c->pg && g < c->npg; g++)
      ferry__pq_pages_free(&c->pg[g]);
    free(c->pg);
    free(c->storage);
    c->rec.fsize = NULL;
    ferry__pq_rec_free(&c->rec);
  }
  free(fsize);
  return rc;
}

int ferry__pq_describe(const char *path, const ferry_options *opts,
                       ferry__part_desc *out, ferry__err *err) {
  desc d;
  struct stat st;
  char **files = NULL, *one[1];
  int nfiles = 0, rc = 0;
  memset(&d, 0, sizeof d);
  memset(out, 0, sizeof *out);
  d.path = path;
  d.lanes = ferry__pool_lanes_for(opts);
  if (stat(path, &st) != 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                         strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    if ((rc = list_dir(path, &files, &nfiles, err)) < 0)
      return rc;
    if (nfiles == 0)
      return ferry__seterr(err, FERRY_EEMPTY,
                           "directory %s holds no .parquet file", path);
  } else {
    one[0] = (char *)(uintptr_t)path;
  }
  rc = describe_files(&d, files ? files : one, files ? nfiles : 1, out, err);
  if (rc == 0 && d.first.created_by)
    note(&d, "written by %s%s", d.first.created_by, "");
  if (rc == 0) {
    out->notes = d.notes;
    d.notes = NULL;
  } else {
    ferry__part_desc_free(out);
  }
  for (int i = 0; i < nfiles; i++)
    free(files[i]);
  free(files);
  free(d.notes);
  free(d.c);
  ferry__pq_file_free(&d.first);
  return rc;
}

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
  const ferry__manifest *m;
  int rank;
  ferry__handle_cache files; /* key (part, file index) */
  var_state *vs;             /* [nvars] */
  pq_scratch *scratch;       /* [nscratch] */
  unsigned char **cbuf;      /* [nscratch] compressed chunk buffers */
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
                      io->rank);
  int mrc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                          &h->fh);
  if (mrc != MPI_SUCCESS) {
    free(h);
    return ferry__seterr(err, FERRY_EIO,
                         "MPI_File_open failed: file %s, rank %d, offset 0",
                         path, io->rank);
  }
  MPI_File_set_errhandler(h->fh, MPI_ERRORS_RETURN);
  if (MPI_File_get_size(h->fh, &size) != MPI_SUCCESS ||
      (int64_t)size != r->fsize[fi]) {
    MPI_File_close(&h->fh);
    free(h);
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "file %s is %lld bytes on rank %d but %lld bytes "
                         "when rank 0 scanned it (offset 0)",
                         path, (long long)size, io->rank,
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
  ferry__handle_cache_free(&io->files);
  for (int v = 0; io->vs && v < io->m->nvars; v++) {
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
static int fill_value(const char *text, ferry_dtype dt, unsigned char *out) {
  char *end = NULL;
  double x = strtod(text, &end);
  if (end == text || *end)
    return -1;
  int64_t i = (int64_t)x;
  int whole = x == floor(x) && x >= -9.2e18 && x <= 1.8e19;
  switch (dt) {
  case FERRY_FLOAT64: memcpy(out, &x, 8); return 0;
  case FERRY_FLOAT32: {
    float f = (float)x;
    memcpy(out, &f, 4);
    return (double)f == x ? 0 : -1;
  }
  case FERRY_FLOAT16: {
    int32_t h = ferry__half_of_double(x);
    uint16_t v = (uint16_t)h;
    memcpy(out, &v, 2);
    return h < 0 ? -1 : 0;
  }
  case FERRY_BOOL: out[0] = x == 1; return x == 0 || x == 1 ? 0 : -1;
  default: break;
  }
  if (!whole)
    return -1;
  int64_t lo = 0;
  uint64_t hi = 0;
  size_t n = ferry_dtype_size(dt);
  int sgn = dt == FERRY_INT8 || dt == FERRY_INT16 || dt == FERRY_INT32 ||
            dt == FERRY_INT64;
  if (n == 0 || n > 8)
    return -1;
  if (sgn) {
    lo = n == 8 ? INT64_MIN : -((int64_t)1 << (8 * n - 1));
    hi = n == 8 ? (uint64_t)INT64_MAX : ((uint64_t)1 << (8 * n - 1)) - 1;
    if (x < (double)lo || x > (double)hi || x >= 9.2e18)
      return -1;
  } else {
    hi = n == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * n)) - 1;
    if (x < 0 || x > (double)hi || x >= 1.8e19)
      return -1;
  }
  uint64_t u = sgn ? (uint64_t)i : (uint64_t)x;
  for (size_t b = 0; b < n; b++) /* native order: the host's bytes */
    out[b] = (unsigned char)(u >> (8 * b));
  if (*(const unsigned char *)&(uint16_t){1} == 0) /* big-endian host */
    for (size_t b = 0; b < n / 2; b++) {
      unsigned char t = out[b];
      out[b] = out[n - 1 - b];
      out[n - 1 - b] = t;
    }
  return 0;
}

/* null_fill per variable; where the value does not fit the variable's
 * dtype, why (a null read there is then refused, saying so). */
static void fill_values(ferry__io *io, const ferry_options *opts) {
  char text[128] = "";
  if (!opts || ferry_options_get(opts, "null_fill", text, sizeof text) != 0 ||
      !text[0])
    return;
  for (int v = 0; v < io->m->nvars; v++) {
    const ferry__var *x = &io->m->vars[v];
    var_state *vs = &io->vs[v];
    if (fill_value(text, x->dtype, vs->fill) == 0)
      vs->has_fill = 1;
    else
      snprintf(vs->nofill, sizeof vs->nofill,
               "null_fill=%s is not a value of its dtype %s exactly", text,
               ferry_dtype_name(x->dtype));
  }
}

static int pq_io_open(ferry__io **out, const ferry__manifest *m,
                      const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  if (p->collective)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "the parquet backend reads column chunks "
                         "independently: io=collective is not supported "
                         "(rank %d)",
                         p->rank);
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__oom(err, -1, sizeof *io,
                      "the I/O state (dataset %s, rank %d)", m->spec, p->rank);
  io->m = m;
  io->rank = p->rank;
  io->defer = p->defer;
  ferry__handle_cache_init(&io->files, (size_t)p->max_open_files, io, open_cb,
                           close_cb);
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
  const ferry__part *pt = &io->m->parts[part];
  char where[512];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           io->m->vars[var].name, io->rank);
  if (!pt->rec || io->m->record_version != 2)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the manifest has no parquet record", where);
  int rc = ferry__pq_rec_get(&pt->rec[var], &vs->rec, where, err);
  if (rc < 0)
    return rc;
  if (vs->rec.k * (int64_t)ferry_dtype_size((ferry_dtype)vs->rec.dtype) !=
      (int64_t)io->m->vars[var].row_bytes)
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
  int rc = ferry__handle_get(&io->files, part, rg->file, io->rank, &h, err);
  if (rc < 0)
    return rc;
  char where[512];
  snprintf(where, sizeof where, "file %s, variable %s, row group %lld, rank %d",
           vs->rec.files[rg->file], io->m->vars[var].name, (long long)rg->rgi,
           io->rank);
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
          vs->rec.files[rg->file], io->m->vars[var].name, io->rank);
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
                          vs->rec.files[rg->file], io->m->vars[var].name,
                          io->rank);
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

static int decode_one(ferry__io *io, const pq_rec *r, int var, int64_t g,
                      const unsigned char *chunk, const unsigned char *dict,
                      unsigned char *out, pq_scratch *s, const pq_lanes *ln,
                      ferry__err *err) {
  var_state *vs = &io->vs[var];
  const pq_rg_rec *rg = &r->rg[g];
  int64_t in_rg = 0, row0 = rows_before(r, g, &in_rg);
  if (!ferry__pq_codec_available(rg->codec))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "file %s, column %s, row group %lld, rank %d: codec "
                         "%s (%d) is not supported by this build",
                         r->files[rg->file], io->m->vars[var].name,
                         (long long)rg->rgi, io->rank,
                         ferry__pq_codec_name(rg->codec), rg->codec);
  pq_job j = {.rec = r,
              .rg = rg,
              .chunk = chunk,
              .dict = dict,
              .out = out,
              .file = r->files[rg->file],
              .var = io->m->vars[var].name,
              .rank = io->rank,
              .rgi = rg->rgi,
              .row0 = row0,
              .in_rg = in_rg,
              .fill = vs->has_fill ? vs->fill : NULL,
              .nofill = vs->nofill[0] ? vs->nofill : NULL};
  return ferry__pq_decode_chunk(&j, s, ln, err);
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
                        const unsigned char *dict, unsigned char *out,
                        ferry__err *err) {
  pq_lanes ln = {io->pool, lane_take, lane_give, io};
  return decode_one(io, &io->vs[var].rec, var, g, io->cbuf[0], dict, out,
                    &io->scratch[io->nscratch - 1], io->pending ? NULL : &ln,
                    err); /* jobs of deferred reads pending: inline */
}

static int rg_job_run(void *arg, ferry__err *err) {
  rg_job *j = arg;
  pool *p = j->p;
  ferry__io *io = p->io;
  const pq_rec *r = &p->rec;
  size_t rb = io->m->vars[p->var].row_bytes;
  int64_t g = p->g0 + j->i;
  unsigned char *o =
      p->out + (size_t)(r->rg[g].first_row - r->rg[p->g0].first_row) * rb;
  pq_scratch own, *s = scratch_take(io);
  memset(&own, 0, sizeof own);
  int rc = decode_one(io, r, p->var, g, p->chunks[j->i], p->dicts[j->i], o,
                      s ? s : &own, NULL, err); /* its pages inline */
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
                        r->files[a->file], io->m->spec, io->m->vars[var].name,
                        io->rank);
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
                          r->files[a->file], io->m->spec, io->m->vars[var].name,
                          io->rank);
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
  if (n <= 0)
    return 0;
  if (!defer && (n == 1 || ferry__pool_lanes(io->pool) == 1)) {
    for (int64_t g = g0; g < g1; g++) {
      const unsigned char *d = NULL;
      int rc = read_chunk(io, part, var, g, 0, err);
      if (rc == 0)
        rc = get_dict(io, part, var, g, &d, err);
      if (rc == 0)
        rc = decode_lanes(io, var, g, d,
                          out + (size_t)(io->vs[var].rec.rg[g].first_row -
                                         io->vs[var].rec.rg[g0].first_row) *
                                    io->m->vars[var].row_bytes,
                          err);
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
                       (long long)n, io->m->spec, io->m->vars[var].name,
                       io->rank);
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
  size_t rb = io->m->vars[var].row_bytes;
  if (vs->cache_part != part || vs->cache_rg != g) {
    size_t need = (size_t)rg->num_rows * rb;
    vs->cache_part = -1;
    if (need > vs->cache_cap) {
      unsigned char *nb = realloc(vs->cache, need);
      if (!nb)
        return ferry__oom(err, -1, need,
                          "a decoded row group (row group %lld of file %s, "
                          "variable %s, rank %d)",
                          (long long)rg->rgi, vs->rec.files[rg->file],
                          io->m->vars[var].name, io->rank);
      vs->cache = nb;
      vs->cache_cap = need;
    }
    const unsigned char *d = NULL;
    int rc = read_chunk(io, part, var, g, 0, err);
    if (rc == 0)
      rc = get_dict(io, part, var, g, &d, err);
    if (rc == 0)
      rc = decode_lanes(io, var, g, d, vs->cache, err);
    if (rc < 0)
      return rc;
    vs->cache_part = part;
    vs->cache_rg = g;
  }
  memcpy(dst, vs->cache + (size_t)(a - rg->first_row) * rb,
         (size_t)(b - a) * rb);
  return 0;
}

static int pq_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                      int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->m;
  int rc = ferry__check_part_var(m, part, var, io->rank, err);
  if (rc == 0)
    rc = ferry__check_rows(m, part, var, row, nrows, io->rank, err);
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
    out += (size_t)(b - a) * rb;
    row = b;
  }
  if (row < end)
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "rows past the last row group: file %s, variable "
                         "%s, rank %d",
                         m->parts[part].paths[var], m->vars[var].name,
                         io->rank);
  return 0;
}

const ferry__backend ferry__backend_parquet = {
    .name = "parquet",
    .version = 1,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = 2,
    .scheme = NULL,
    .probe = probe,
    .accepts = "a .parquet file (PAR1 magic) or a directory of them",
    .describe = ferry__pq_describe,
    .io_open = pq_io_open,
    .io_read = pq_io_read,
    .io_close = pq_io_close,
    .io_wait = pq_io_wait,
};
