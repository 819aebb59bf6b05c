/*
 * weights.c - the per-sample weights of weighted and class-balanced
 * sampling (loader/weights.h, docs/sampling.md "Weights and labels").
 *
 * Why this shape: the plan draws by one float32 weight per sample, so that
 * is all every rank holds (4 bytes a sample).  Rank 0 alone touches the
 * files: it scans the dataset again selecting only the weight (or label)
 * variable, so that every backend serves it through its ordinary vtable
 * (npy, npz, HDF5, Zarr, netCDF, Parquet), and reads it in pieces of a
 * bounded number of rows, converting and checking each value as it comes
 * (negative, NaN, infinite weights and float labels are refused naming the
 * sample).  Class-balanced weights are derived on rank 0 from an int64 copy
 * of the labels and a hash table of the classes: the weight of a sample is
 * its class's share of the draws over the class's count.  Then rank 0's
 * outcome travels once: a small summary (or rank 0's error, so every rank
 * returns the same code and words) and the weights themselves.
 */
#include "config.h"
#include "loader/weights.h"

#include "backends/backend.h"
#include "dataset/dataset.h"
#include "util/agree.h"
#include "util/dtype.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Rows read at once on rank 0 (at most 8 MiB of values). */
#define PIECE_ROWS ((int64_t)1 << 20)

/* What rank 0 reads: the option, its value and how messages name it. */
typedef struct source {
  const char *opt;  /* "weights" or "balance" */
  const char *name; /* the option's value */
  int is_file;      /* a .npy file of values rather than a variable */
  int rank;
  char label[512]; /* "variable 'w' of data/" or "file w.npy" */
  ferry_dtype dtype;
  /* where the values go: one of them */
  float *w;
  int64_t *lab;
} source;

static int is_set(const char *s) { return s && *s; }

static int names_npy_file(const char *name) {
  size_t n = strlen(name);
  struct stat st;
  return n > 4 && strcmp(name + n - 4, ".npy") == 0 && stat(name, &st) == 0 &&
         S_ISREG(st.st_mode);
}

static int oom(const source *s, size_t bytes, const char *what,
               ferry__err *err) {
  return ferry__oom(err, s->rank, bytes, "%s: %s of %s", s->opt, what,
                    s->label);
}

/* ---- Values ----------------------------------------------------------- */

/* Convert and check count values of the piece starting at sample first. */
static int take_piece(source *s, const unsigned char *buf, int64_t first,
                      int64_t count, ferry__err *err) {
  size_t el = ferry_dtype_size(s->dtype);
  for (int64_t i = 0; i < count; i++) {
    const unsigned char *p = buf + (size_t)i * el;
    int64_t at = first + i;
    if (s->lab) {
      if (ferry__dtype_as_int64(p, s->dtype, &s->lab[at]) < 0) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                                "balance: sample %lld of %s holds label %llu, "
                                "beyond the int64 range",
                                (long long)at, s->label, (unsigned long long)v);
      }
      continue;
    }
    double v = ferry__dtype_as_double(p, s->dtype);
    if (isnan(v) || isinf(v))
      return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                              "weights: sample %lld of %s is %g; weights must "
                              "be finite",
                              (long long)at, s->label, v);
    if (v < 0)
      return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                              "weights: sample %lld of %s is negative (%g); "
                              "weights must be >= 0",
                              (long long)at, s->label, v);
    if (v > (double)FLT_MAX)
      return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                              "weights: sample %lld of %s (%g) exceeds the "
                              "float32 range",
                              (long long)at, s->label, v);
    s->w[at] = v > 0 ? (float)v : 0.0f; /* -0.0 stored as 0.0 */
  }
  return 0;
}

/* ---- Reading one variable (rank 0) ------------------------------------- */

/* Scan the dataset (or the .npy file) again, selecting only s->name. */
static int scan_source(const ferry__manifest *m, const ferry_options *opts,
                       source *s, ferry_options **o2, ferry__manifest *m2,
                       ferry__err *err) {
  if (ferry_options_copy(opts, o2) != 0 ||
      ferry_options_set(*o2, "vars", s->is_file ? "" : s->name) != 0)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: cannot select variable '%s' of dataset %s "
                            "(%s)",
                            s->opt, s->name, m->spec ? m->spec : "?",
                            ferry_last_error(NULL));
  const char *spec = s->is_file ? s->name : m->spec;
  int rc =
      ferry__manifest_scan(spec, s->is_file ? NULL : s->name, *o2, m2, err);
  if (rc < 0) {
    /* the scan runs here, on this rank: its message carries no rank */
    char why[FERRY__MSG_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    return ferry__seterr_on(err, s->rank, rc, "%s: %s: %.900s", s->opt,
                            s->label, why);
  }
  return 0;
}

/* The scanned variable: one value per sample, as many samples as the
 * dataset, a dtype the option takes. */
static int check_source(const ferry__manifest *m, const ferry__manifest *m2,
                        source *s, ferry__err *err) {
  if (m2->nvars != 1)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: %s selects %d variables, not one", s->opt,
                            s->label, m2->nvars);
  const ferry__var *v = &m2->vars[0];
  s->dtype = v->dtype;
  if (v->ragged)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: %s is a ragged variable (samples of "
                            "different lengths); one value per sample is "
                            "needed",
                            s->opt, s->label);
  if (m2->num_samples != m->num_samples)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: %s holds %lld values, the dataset %s %lld "
                            "samples; one value per sample is needed",
                            s->opt, s->label, (long long)m2->num_samples,
                            m->spec ? m->spec : "", (long long)m->num_samples);
  if (v->row_ndim > 1 || (v->row_ndim == 1 && v->row_shape[0] != 1)) {
    char shape[256] = "";
    size_t k = 0;
    for (int d = 0; d < v->row_ndim && k < sizeof shape - 32; d++)
      k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld",
                            d ? ", " : "", (long long)v->row_shape[d]);
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: %s has rows of shape (%s%s); one value per "
                            "sample is needed (shape (N,) or (N, 1))",
                            s->opt, s->label, shape,
                            v->row_ndim == 1 ? "," : "");
  }
  int valid = (int)v->dtype >= 0 && v->dtype < FERRY_DTYPE_COUNT;
  if (s->lab && valid && !ferry__dtype_is_int(v->dtype))
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "balance: labels must be integers; %s is %s",
                            s->label, ferry_dtype_name(v->dtype));
  if ((int)v->dtype < 0 || v->dtype >= FERRY_DTYPE_COUNT)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL, "%s: %s: bad dtype",
                            s->opt, s->label);
  return 0;
}

/* Read every row of m2's one variable through its backend, piece by piece. */
static int read_rows(const ferry__manifest *m2, const ferry_options *o2,
                     source *s, ferry__err *err) {
  const ferry__backend *be = ferry__backend_find(m2->backend);
  if (!be)
    return ferry__seterr_on(err, s->rank, FERRY_EINTERNAL,
                            "%s: no backend '%s' for %s", s->opt,
                            m2->backend ? m2->backend : "?", s->label);
  const ferry__var *v = &m2->vars[0];
  int64_t piece = m2->num_samples < PIECE_ROWS ? m2->num_samples : PIECE_ROWS;
  unsigned char *buf = malloc((size_t)(piece > 0 ? piece : 1) * v->row_bytes);
  if (!buf)
    return oom(s, (size_t)(piece > 0 ? piece : 1) * v->row_bytes,
               "a read buffer", err);
  ferry__io_params p = {
      MPI_COMM_SELF, s->rank, 0, o2->max_open_files, o2, 0, 0, 0};
  ferry__io *io = NULL;
  int rc = be->io_open(&io, m2, &p, err);
  for (int64_t pt = 0; rc == 0 && pt < m2->nparts; pt++) {
    const ferry__part *part = &m2->parts[pt];
    for (int64_t row = 0; rc == 0 && row < part->num_samples; row += piece) {
      int64_t k =
          part->num_samples - row < piece ? part->num_samples - row : piece;
      rc = be->io_read(io, pt, 0, row, k, buf, err);
      if (rc == 0 && v->swapped)
        ferry__byteswap(buf, (size_t)k, ferry_dtype_size(v->dtype));
      if (rc == 0)
        rc = take_piece(s, buf, part->first_sample + row, k, err);
    }
  }
  if (io)
    be->io_close(io);
  free(buf);
  return rc;
}

/* Scan, check and read s->name into s->w or s->lab (n values). */
static int read_source(const ferry__manifest *m, const ferry_options *opts,
                       source *s, ferry__err *err) {
  ferry_options *o2 = NULL;
  ferry__manifest m2;
  memset(&m2, 0, sizeof m2);
  int rc = scan_source(m, opts, s, &o2, &m2, err);
  if (rc == 0)
    rc = check_source(m, &m2, s, err);
  if (rc == 0)
    rc = read_rows(&m2, o2, s, err);
  ferry__manifest_free(&m2);
  ferry_options_free(o2);
  return rc;
}

static void init_source(source *s, const char *opt, const char *name,
                        const ferry__manifest *m, int rank) {
  memset(s, 0, sizeof *s);
  s->opt = opt;
  s->name = name;
  s->rank = rank;
  s->is_file = names_npy_file(name);
  if (s->is_file)
    snprintf(s->label, sizeof s->label, "file %.400s", name);
  else
    snprintf(s->label, sizeof s->label, "variable '%.200s' of %.200s", name,
             m->spec ? m->spec : "the dataset");
}

/* ---- Classes (balance, rank 0) ----------------------------------------- */

/* Open addressing, keyed by label; count 0 marks an empty slot.  After the
 * class table is sorted, count holds the class's index + 1. */
typedef struct slot {
  int64_t label;
  int64_t count;
} slot;

typedef struct ctable {
  slot *s;
  size_t cap; /* a power of two, at least twice the classes */
  int64_t n;
} ctable;

static size_t slot_of(const ctable *t, int64_t label) {
  size_t i = (size_t)ferry__mix64((uint64_t)label) & (t->cap - 1);
  while (t->s[i].count && t->s[i].label != label)
    i = (i + 1) & (t->cap - 1);
  return i;
}

static int ct_grow(ctable *t) {
  size_t cap = t->cap ? 2 * t->cap : 1024;
  slot *ns = calloc(cap, sizeof *ns);
  if (!ns)
    return -1;
  ctable nt = {ns, cap, t->n};
  for (size_t i = 0; i < t->cap; i++)
    if (t->s[i].count)
      ns[slot_of(&nt, t->s[i].label)] = t->s[i];
  free(t->s);
  *t = nt;
  return 0;
}

/* Count every label into t. */
static int count_classes(const source *s, int64_t n, ctable *t,
                         ferry__err *err) {
  if (ct_grow(t) < 0)
    return oom(s, 1024 * sizeof *t->s, "the table of classes", err);
  for (int64_t i = 0; i < n; i++) {
    size_t k = slot_of(t, s->lab[i]);
    if (t->s[k].count) {
      t->s[k].count++;
      continue;
    }
    if (t->n >= FERRY__MAX_CLASSES)
      return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                              "balance: %s holds more than %lld classes "
                              "(sample %lld, label %lld is one too many)",
                              s->label, (long long)FERRY__MAX_CLASSES,
                              (long long)i, (long long)s->lab[i]);
    t->s[k].label = s->lab[i];
    t->s[k].count = 1;
    t->n++;
    if ((size_t)t->n * 2 >= t->cap && ct_grow(t) < 0)
      return oom(s, 2 * t->cap * sizeof *t->s, "the table of classes", err);
  }
  return 0;
}

static int cmp_class(const void *a, const void *b) {
  int64_t x = ((const ferry__class_share *)a)->label;
  int64_t y = ((const ferry__class_share *)b)->label;
  return (x > y) - (x < y);
}

static ferry__class_share *find_class(ferry__class_share *c, int64_t n,
                                      int64_t label) {
  ferry__class_share key = {label, 0, 0};
  return bsearch(&key, c, (size_t)n, sizeof *c, cmp_class);
}

/* One "LABEL:SHARE" item of balance_shares at *p into the class table. */
static int parse_share(const char **p, ferry__class_share *c, int64_t nc,
                       char *given, const source *s, ferry__err *err) {
  const char *start = *p, *q = start;
  char *end;
  errno = 0;
  long long label = strtoll(q, &end, 10);
  int bad = end == q || errno != 0;
  q = end;
  while (*q == ' ')
    q++;
  bad = bad || *q != ':';
  double share = 0;
  if (!bad) {
    q++;
    share = strtod(q, &end);
    bad = end == q;
    q = end;
    while (*q == ' ')
      q++;
    bad = bad || (*q != ',' && *q != '\0');
  }
  size_t len = strcspn(start, ",");
  if (bad)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "balance_shares: cannot parse '%.*s' (expected "
                            "LABEL:SHARE,LABEL:SHARE,...)",
                            (int)(len < 200 ? len : 200), start);
  if (isnan(share) || isinf(share) || share < 0)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "balance_shares: share '%.*s' of label %lld is not "
                            "a finite number >= 0",
                            (int)(len < 200 ? len : 200), start, label);
  ferry__class_share *k = find_class(c, nc, (int64_t)label);
  if (!k)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "balance_shares: label %lld is not present in %s "
                            "(%lld classes, labels %lld to %lld)",
                            label, s->label, (long long)nc,
                            (long long)c[0].label, (long long)c[nc - 1].label);
  if (given[k - c])
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "balance_shares: label %lld is given twice", label);
  given[k - c] = 1;
  k->share = share;
  *p = *q == ',' ? q + 1 : q;
  return 0;
}

/* Shares from balance_shares (empty: equal), normalised to sum 1. */
static int set_shares(const char *text, ferry__class_share *c, int64_t nc,
                      const source *s, ferry__err *err) {
  for (int64_t i = 0; i < nc; i++)
    c[i].share = is_set(text) ? 0.0 : 1.0;
  int rc = 0;
  if (is_set(text)) {
    char *given = calloc((size_t)nc, 1);
    if (!given)
      return oom(s, (size_t)nc, "the shares of the classes", err);
    const char *p = text;
    while (rc == 0 && *p) {
      while (*p == ' ')
        p++;
      rc = parse_share(&p, c, nc, given, s, err);
    }
    free(given);
  }
  double sum = 0;
  for (int64_t i = 0; rc == 0 && i < nc; i++)
    sum += c[i].share;
  if (rc == 0 && !(sum > 0))
    rc = ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                          "balance_shares: every class of %s has share 0 "
                          "(balance_shares=%.200s); no sample could be drawn",
                          s->label, text);
  if (rc == 0 && isinf(sum))
    rc = ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                          "balance_shares: the shares (%.200s) sum to more "
                          "than a double holds",
                          text);
  for (int64_t i = 0; rc == 0 && i < nc; i++)
    c[i].share /= sum;
  return rc;
}

float ferry__class_weight(const ferry__class_share *c) {
  return c->count > 0 ? (float)(c->share / (double)c->count) : 0.0f;
}

/* Labels (s->lab, n of them) to classes and class-balanced weights. */
static int balance_weights(source *s, int64_t n, const char *shares,
                           ferry__weights *out, ferry__err *err) {
  ctable t = {0};
  int rc = count_classes(s, n, &t, err);
  ferry__class_share *c = NULL;
  if (rc == 0 && !(c = calloc((size_t)t.n, sizeof *c)))
    rc = oom(s, (size_t)t.n * sizeof *c, "the classes", err);
  int64_t k = 0;
  for (size_t i = 0; rc == 0 && i < t.cap; i++)
    if (t.s[i].count) {
      c[k].label = t.s[i].label;
      c[k++].count = t.s[i].count;
    }
  if (rc == 0) {
    qsort(c, (size_t)t.n, sizeof *c, cmp_class);
    rc = set_shares(shares, c, t.n, s, err);
  }
  for (int64_t i = 0; rc == 0 && i < t.n; i++)
    t.s[slot_of(&t, c[i].label)].count = i + 1;
  for (int64_t i = 0; rc == 0 && i < n; i++)
    s->w[i] = ferry__class_weight(&c[t.s[slot_of(&t, s->lab[i])].count - 1]);
  free(t.s);
  if (rc < 0) {
    free(c);
    return rc;
  }
  out->classes = c;
  out->nclasses = t.n;
  return 0;
}

/* ---- Rank 0: the whole reading -------------------------------------- */

static int totals(const source *s, ferry__weights *out, ferry__err *err) {
  out->total = 0;
  out->nonzero = 0;
  for (int64_t i = 0; i < out->n; i++) {
    out->total += out->w[i];
    out->nonzero += out->w[i] > 0;
  }
  if (out->nonzero == 0)
    return ferry__seterr_on(err, s->rank, FERRY_EINVAL,
                            "%s: all %lld weights of %s are zero; no sample "
                            "could be drawn",
                            s->opt, (long long)out->n, s->label);
  return 0;
}

static uint64_t weights_hash(const ferry__weights *w) {
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, &w->n, sizeof w->n);
  h = ferry__fnv1a(h, w->w, (size_t)w->n * sizeof *w->w);
  for (int64_t i = 0; i < w->nclasses; i++) {
    h = ferry__fnv1a(h, &w->classes[i].label, sizeof w->classes[i].label);
    h = ferry__fnv1a(h, &w->classes[i].count, sizeof w->classes[i].count);
    h = ferry__fnv1a(h, &w->classes[i].share, sizeof w->classes[i].share);
  }
  return h;
}

static void describe(const source *s, int balance, const ferry_options *opts,
                     ferry__weights *out) {
  if (!balance) {
    snprintf(out->what, sizeof out->what, "weights: %.200s (%s)", s->label,
             ferry_dtype_name(s->dtype));
    return;
  }
  char shares[96];
  if (is_set(opts->balance_shares))
    snprintf(shares, sizeof shares, "shares %.80s", opts->balance_shares);
  else
    snprintf(shares, sizeof shares, "equal shares");
  snprintf(out->what, sizeof out->what,
           "balance: labels %.120s (%s, %lld %s, %s)", s->label,
           ferry_dtype_name(s->dtype), (long long)out->nclasses,
           out->nclasses == 1 ? "class" : "classes", shares);
}

static int load_root(const ferry__manifest *m, const ferry_options *opts,
                     int rank, ferry__weights *out, ferry__err *err) {
  int balance = is_set(opts->balance);
  source s;
  init_source(&s, balance ? "balance" : "weights",
              balance ? opts->balance : opts->weights, m, rank);
  out->n = m->num_samples;
  size_t n = (size_t)(out->n > 0 ? out->n : 1);
  if (out->n < 0 || n > SIZE_MAX / sizeof(int64_t))
    return ferry__seterr_on(err, rank, FERRY_EINVAL,
                            "%s: %lld samples are too many for this machine",
                            s.opt, (long long)out->n);
  out->w = malloc(n * sizeof *out->w);
  if (!out->w)
    return oom(&s, n * sizeof *out->w, "the weights", err);
  s.w = out->w;
  if (balance && !(s.lab = malloc(n * sizeof *s.lab)))
    return oom(&s, n * sizeof *s.lab, "the labels", err);
  int rc = read_source(m, opts, &s, err);
  if (rc == 0 && balance)
    rc = balance_weights(&s, out->n, opts->balance_shares, out, err);
  free(s.lab);
  s.lab = NULL;
  if (rc == 0)
    rc = totals(&s, out, err);
  if (rc == 0) {
    describe(&s, balance, opts, out);
    out->hash = weights_hash(out);
  }
  return rc;
}

/* ---- The collective ------------------------------------------------- */

/* The summary rank 0 sends, classes after it. */
typedef struct summary {
  int64_t n;
  double total;
  int64_t nonzero;
  int64_t nclasses;
  uint64_t hash;
  char what[256];
} summary;

static int options_check(const ferry_options *opts, ferry__err *err) {
  if (is_set(opts->weights) && is_set(opts->balance))
    return ferry__seterr(err, FERRY_EINVAL,
                         "the options weights=%.200s and balance=%.200s "
                         "cannot be combined: weights draws by per-sample "
                         "weights, balance by class; give one",
                         opts->weights, opts->balance);
  if (is_set(opts->balance_shares) && !is_set(opts->balance))
    return ferry__seterr(err, FERRY_EINVAL,
                         "the option balance_shares=%.200s needs balance "
                         "(the label variable)",
                         opts->balance_shares);
  return 0;
}

/* Rank 0's summary and classes into one buffer (NULL: out of memory). */
static void *pack_summary(const ferry__weights *w, size_t *len) {
  size_t cl = (size_t)w->nclasses * sizeof *w->classes;
  unsigned char *b = malloc(sizeof(summary) + cl);
  if (!b)
    return NULL;
  summary h;
  memset(&h, 0, sizeof h);
  h.n = w->n;
  h.total = w->total;
  h.nonzero = w->nonzero;
  h.nclasses = w->nclasses;
  h.hash = w->hash;
  memcpy(h.what, w->what, sizeof h.what);
  memcpy(b, &h, sizeof h);
  if (cl)
    memcpy(b + sizeof h, w->classes, cl);
  *len = sizeof h + cl;
  return b;
}

static int unpack_summary(const void *buf, size_t len, int rank,
                          ferry__weights *w, ferry__err *err) {
  summary h;
  if (len < sizeof h)
    return ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                            "the sampling weights' summary is short");
  memcpy(&h, buf, sizeof h);
  size_t cl = (size_t)h.nclasses * sizeof *w->classes;
  if (h.nclasses < 0 || h.nclasses > FERRY__MAX_CLASSES ||
      len != sizeof h + cl || h.n != w->n)
    return ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                            "the sampling weights' summary does not match "
                            "(%lld samples here, %lld on rank 0)",
                            (long long)w->n, (long long)h.n);
  if (cl && !(w->classes = malloc(cl)))
    return ferry__oom(err, rank, cl,
                      "the %lld classes of the sampling weights' summary",
                      (long long)h.nclasses);
  if (cl)
    memcpy(w->classes, (const unsigned char *)buf + sizeof h, cl);
  w->total = h.total;
  w->nonzero = h.nonzero;
  w->nclasses = h.nclasses;
  w->hash = h.hash;
  memcpy(w->what, h.what, sizeof w->what);
  w->what[sizeof w->what - 1] = '\0';
  return 0;
}

int ferry__weights_load(const ferry__manifest *m, const ferry_options *opts,
                        MPI_Comm comm, int rank, ferry__weights *out,
                        ferry__err *err) {
  memset(out, 0, sizeof *out);
  if (!opts || (!is_set(opts->weights) && !is_set(opts->balance) &&
                !is_set(opts->balance_shares)))
    return 0;
  int rc = options_check(opts, err);
  if (rc < 0)
    return rc; /* the same options on every rank: the same error */
  void *sum = NULL;
  size_t len = 0;
  if (rank == 0) {
    rc = load_root(m, opts, rank, out, err);
    if (rc == 0 && !(sum = pack_summary(out, &len)))
      rc = ferry__oom(err, rank,
                      sizeof(summary) +
                          (size_t)out->nclasses * sizeof *out->classes,
                      "the sampling weights' summary of dataset %s", m->spec);
  }
  out->n = m->num_samples;
  /* rank 0's failure reaches every rank here, in the length's round */
  rc = ferry__bcast_blob_rc(comm, rank, 0, rc, &sum, &len,
                            "the sampling weights' summary", err);
  if (rc == 0) {
    int mine = rank != 0 ? unpack_summary(sum, len, rank, out, err) : 0;
    rc = ferry__agree(comm, rank, mine, err);
  }
  free(sum);
  void *wb = rank == 0 ? (void *)out->w : NULL;
  size_t wlen = rank == 0 ? (size_t)out->n * sizeof *out->w : 0;
  if (rc == 0)
    rc = ferry__bcast_blob(comm, rank, 0, &wb, &wlen, "the sampling weights",
                           err);
  /* wlen is n * 4 on every rank: the summary's n was checked against
   * each rank's own above */
  if (rank != 0)
    out->w = wb; /* freed below on failure */
  if (rc < 0)
    ferry__weights_free(out);
  return rc;
}

void ferry__weights_free(ferry__weights *w) {
  if (!w)
    return;
  free(w->w);
  free(w->classes);
  memset(w, 0, sizeof *w);
}
