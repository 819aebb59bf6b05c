/*
 * describe.c - the parquet backend's probe and describe (rank 0): a part is
 * one .parquet file or a directory of them (its *.parquet files in strcmp
 * order, one schema); describe reads every footer once (meta.c), picks the
 * columns ferry can serve, checks the files agree, cuts the variables'
 * row groups (split.c) and leaves each variable's record (record.c), with
 * the storage text and cache bytes ferry info prints.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The bytes of a column's storage text (ferry info). */
#define PQ_STORAGE_LEN 640

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

int ferry__pq_probe(const char *path) {
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
  int ragged;      /* PQ_RAGGED_*: its rows' lengths read at open       */
  int verify;      /* a list of k values per row on average: its lengths
                    * read at open decide (all k: fixed, else ragged)    */
  int64_t *roff;   /* a ragged one's offsets, [rows + 1]                */
  int skip;        /* not served after all (the scan's note says why)   */
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
  /* null_fill: a null list or byte array served empty (null_empty), a
   * null element of a list as fill (when it is a value of its dtype) */
  int null_empty;
  char fill_text[128];
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

/* A BYTE_ARRAY column: ragged bytes (uint8), unless its logical type is
 * a number (decimal). */
static int byte_array_kind(const pq_col *col, ferry_dtype *dt,
                           const char **why) {
  if (col->converted == 6 /* DECIMAL, stored + 1 */ || col->logical == 5) {
    *why = "decimal byte arrays are not a ferry dtype";
    return PQ_FIXED;
  }
  *dt = FERRY_UINT8;
  return PQ_RAGGED_BYTES;
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
    int ragged = PQ_FIXED, verify = 0;
    if (col->nested)
      why = "nested columns (structs, maps, lists of groups) are not read";
    else if (col->type == PQ_BYTE_ARRAY && !col->is_list && !col->repeated_leaf)
      ragged = byte_array_kind(col, &dt, &why);
    else if (ferry__pq_col_dtype(col, &dt, &why) < 0)
      ;
    else if (col->repeated_leaf)
      ragged = PQ_RAGGED_LIST; /* a repeated primitive: a list */
    else if (col->is_list && hk > 0)
      k = list_len(f, i, hk, buf, sizeof buf, &why);
    else if (col->is_list && col->max_rep != 1)
      why = "lists of lists are not read";
    else if (col->is_list) { /* lengths read at open: ragged or k each */
      ragged = PQ_RAGGED_LIST;
      k = list_k(f, i);
      verify = k > 0;
    }
    if (why) {
      note(d, "column %s skipped: %s", col->name, why);
      continue;
    }
    cand *c = &d->c[d->nc++];
    c->col = i;
    c->dtype = dt;
    c->k = ragged && !verify ? 1 : k;
    c->from_hint = hk > 0;
    c->ragged = ragged;
    c->verify = verify;
    c->unsplit = ragged != PQ_FIXED; /* a ragged column is read whole */
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
    if (col->is_list && !c->ragged && list_k(f, c->col) != c->k)
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
  else if (c->ragged == PQ_RAGGED_BYTES)
    snprintf(list, sizeof list, " (ragged bytes)");
  else if (c->ragged)
    snprintf(list, sizeof list, " list (ragged)");
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
  for (int v = 0; v < nv && !out->roff; v++)
    if (d->c[v].roff && !(out->roff = calloc((size_t)nv, sizeof *out->roff)))
      return ferry__oom(err, -1, (size_t)nv * sizeof *out->roff,
                        "the offsets of %d columns of %s", nv, d->path);
  for (int v = 0; v < nv; v++) {
    if (d->c[v].roff) { /* the description owns them now */
      out->roff[v] = d->c[v].roff;
      d->c[v].roff = NULL;
    }
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
    x->row_ndim = col->is_list && !c->ragged ? 1 : 0;
    x->row_shape[0] = x->row_ndim ? c->k : 0;
    x->row_bytes = es * (size_t)c->k;
    x->ragged = c->ragged ? 2 : 0; /* values in pages: not bounded by files */
    x->chunk_rows = uniform_rows(r);
    x->storage = c->storage;
    c->storage = NULL;
    int64_t maxc = 0, maxr = 0, maxd = 0, maxu = 0;
    for (int64_t g = 0; g < r->nrg; g++) {
      const pq_rg_rec *rg = &r->rg[g];
      int64_t rows = c->roff ? c->roff[rg->first_row + rg->num_rows] -
                                   c->roff[rg->first_row]
                             : rg->num_rows; /* in rows of row_bytes */
      maxc = rg->size > maxc ? rg->size : maxc;
      maxu = rg->usize > maxu ? rg->usize : maxu;
      maxr = rows > maxr ? rows : maxr;
      maxd = rg->dict_size > maxd ? rg->dict_size : maxd;
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

/* The lengths of a ragged candidate's rows (every chunk decoded, rank 0):
 * its offsets; a list whose rows all hold k is fixed after all.  A column
 * that cannot be served as it is (a null without null_fill, a corrupt
 * page) is skipped with a note saying why; a read that fails is an
 * error. */
static int ragged_lengths(desc *d, cand *c, ferry__err *err) {
  const pq_col *col = &d->first.cols[c->col];
  const char *name = col->is_list ? col->top : col->name;
  ferry__err e;
  unsigned char fill[16];
  memset(&e, 0, sizeof e);
  if (!c->ragged)
    return 0;
  char nofill[200];
  int ok =
      d->null_empty && ferry__value_of_text(d->fill_text, c->dtype, fill) == 0;
  snprintf(nofill, sizeof nofill,
           "null_fill=%s is not a value of its dtype %s exactly", d->fill_text,
           ferry_dtype_name(c->dtype));
  int rc = ferry__pq_ragged_offsets(&c->rec, name, ok ? fill : NULL,
                                    d->null_empty && !ok ? nofill : NULL,
                                    d->null_empty, d->rows, &c->roff, &e);
  if (rc == FERRY_EIO || rc == FERRY_ENOMEM || rc == FERRY_EINTERNAL) {
    *err = e;
    return rc;
  }
  if (rc < 0) {
    note(d, "column %s skipped: %s", name, e.msg);
    c->skip = 1;
    return 0;
  }
  int same = c->verify;
  for (int64_t i = 0; same && i < d->rows; i++)
    same = c->roff[i + 1] - c->roff[i] == c->k;
  if (same) { /* every row holds k: a fixed list after all */
    free(c->roff);
    c->roff = NULL;
    c->ragged = c->rec.ragged = PQ_FIXED;
    return 0;
  }
  c->k = c->rec.k = 1;
  return 0;
}

/* The candidates not skipped, in order. */
static int drop_skipped(desc *d, ferry__err *err) {
  int n = 0;
  for (int v = 0; v < d->nc; v++) {
    cand *c = &d->c[v];
    if (!c->skip) {
      d->c[n++] = *c;
      continue;
    }
    for (int64_t g = 0; c->pg && g < c->npg; g++)
      ferry__pq_pages_free(&c->pg[g]);
    free(c->pg);
    free(c->roff);
    c->rec.fsize = NULL;
    ferry__pq_rec_free(&c->rec);
  }
  d->nc = n;
  if (n == 0)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: no column ferry can read (%s)", d->path,
                         d->notes ? d->notes : "the schema has no column");
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
    r->ragged = d->c[v].ragged;
    r->rep_def = col->max_def - col->elem_opt;
  }
  for (int v = 0; rc == 0 && v < d->nc; v++) {
    d->c[v].rec.files = files; /* borrowed for the scan */
    d->c[v].rec.nfiles = nfiles;
    rc = ragged_lengths(d, &d->c[v], err);
    d->c[v].rec.files = NULL;
    d->c[v].rec.nfiles = 0;
  }
  if (rc == 0)
    rc = drop_skipped(d, err);
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
    free(c->roff);
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
  if (opts &&
      ferry_options_get(opts, "null_fill", d.fill_text, sizeof d.fill_text) ==
          0 &&
      d.fill_text[0])
    d.null_empty = 1;
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
