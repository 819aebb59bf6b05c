/*
 * mix.c - several datasets read as one loader's dataset.
 *
 * Why here and not in a backend's describe: a backend describes one part,
 * and a mix is many datasets, each with its own parts, its own backend and
 * its own variable names.  So the core parses the mix specification
 * ("mix:LIST" or "mix:@FILE", docs/sampling.md), scans every source with
 * ferry__manifest_scan as if it were opened alone (asking each for the
 * common variables under its own names, in the common order), checks that
 * the sources agree on dtype and row shape, and builds one manifest whose
 * parts are the sources.  Each part's first record carries the source's
 * packed manifest, proportion, exhaust rule and path (backends/mixread.c
 * defines the record and reads the sources through their own backends), so
 * the manifest that rank 0 broadcasts, hashes and saves holds everything:
 * a changed proportion or rule changes the hash.  The sampling plan reads
 * the sources through ferry__mix_sources.
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
#include "core/options.h"
#include "dataset/mix.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ferry__mix_exhaust_name(int exhaust) {
  switch (exhaust) {
  case FERRY__EXHAUST_RESTART: return "restart";
  case FERRY__EXHAUST_DROP: return "drop";
  default: return "stop";
  }
}

int ferry__mix_is(const char *dataset) {
  return dataset && strncmp(dataset, "mix:", 4) == 0;
}

int ferry__mix_is_manifest(const ferry__manifest *m) {
  return m && m->backend && strcmp(m->backend, "mix") == 0;
}

const ferry__manifest *ferry__mix_of(const ferry__manifest *m) {
  if (ferry__mix_is_manifest(m))
    return m;
  if (m && m->inner && ferry__mix_is_manifest(m->inner) &&
      m->inner->nparts == m->nparts)
    return m->inner;
  return NULL;
}

size_t ferry__mix_dataset_bytes(const char *dataset,
                                const ferry_options *opts) {
  if (ferry__mix_is(dataset))
    return strlen(dataset) + 1;
  return opts && opts->mix ? strlen(opts->mix) + 5 : 0;
}

int ferry__mix_dataset(const char *dataset, const ferry_options *opts,
                       char **out) {
  *out = NULL;
  if (ferry__mix_is(dataset))
    return (*out = strdup(dataset)) ? 0 : FERRY_ENOMEM;
  int plain = !dataset || !*dataset || strcmp(dataset, "mix") == 0;
  if (!plain || !opts || !opts->mix || !*opts->mix)
    return 0;
  size_t n = strlen(opts->mix) + 5;
  if (!(*out = malloc(n)))
    return FERRY_ENOMEM;
  snprintf(*out, n, "mix:%s", opts->mix);
  return 0;
}

void ferry__mix_spec_free(ferry__mix_spec *s) {
  if (!s)
    return;
  for (int i = 0; s->src && i < s->n; i++) {
    free(s->src[i].path);
    free(s->src[i].map);
  }
  free(s->src);
  memset(s, 0, sizeof *s);
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
                   s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* Where an error is: "mix file F, line L" or "mix list item 'ITEM'". */
typedef struct where {
  const char *file;
  long line;
  const char *item;
} where;

static int bad(ferry__err *err, const where *w, const char *what,
               const char *val) {
  if (w->file)
    return ferry__seterr(err, FERRY_EINVAL,
                         "mix file %s, line %ld: %s '%.300s'", w->file, w->line,
                         what, val);
  return ferry__seterr(err, FERRY_EINVAL, "mix list item '%.300s': %s '%.300s'",
                       w->item, what, val);
}

/* A "COMMON:NAME,..." map: every pair has both names, no name twice. */
static int check_map(const char *map, const where *w, ferry__err *err) {
  const char *p = map;
  size_t len = 0;
  const char *pairs[FERRY__MIX_MAX_SOURCES];
  size_t plen[FERRY__MIX_MAX_SOURCES];
  int np = 0;
  if (!*map)
    return bad(err, w, "an empty map", map);
  for (const char *s = ferry__next_name(&p, &len); s;
       s = ferry__next_name(&p, &len)) {
    const char *colon = memchr(s, ':', len);
    if (!colon || colon == s || colon == s + len - 1 ||
        memchr(colon + 1, ':', (size_t)(s + len - colon - 1)))
      return bad(err, w, "a map entry is not COMMON:NAME in", map);
    for (int k = 0; k < np; k++) {
      size_t ck =
          (size_t)((const char *)memchr(pairs[k], ':', plen[k]) - pairs[k]);
      if (ck == (size_t)(colon - s) && memcmp(pairs[k], s, ck) == 0)
        return bad(err, w, "a common name is mapped twice in", map);
    }
    if (np == FERRY__MIX_MAX_SOURCES)
      return bad(err, w, "too many map entries in", map);
    pairs[np] = s;
    plen[np++] = len;
  }
  return np ? 0 : bad(err, w, "an empty map", map);
}

static int parse_proportion(const char *s, double *out, const where *w,
                            ferry__err *err) {
  char *end = NULL;
  errno = 0;
  double p = *s ? strtod(s, &end) : 0.0;
  if (!*s || !end || *end || errno || !isfinite(p) || !(p > 0.0))
    return bad(err, w, "the proportion is not a positive finite number:", s);
  *out = p;
  return 0;
}

static int parse_exhaust(const char *s, int *out, const where *w,
                         ferry__err *err) {
  if (strcmp(s, "stop") == 0)
    *out = FERRY__EXHAUST_STOP;
  else if (strcmp(s, "restart") == 0)
    *out = FERRY__EXHAUST_RESTART;
  else if (strcmp(s, "drop") == 0)
    *out = FERRY__EXHAUST_DROP;
  else
    return bad(err, w, "exhaust is not stop, restart or drop:", s);
  return 0;
}

/* A source's path may be any dataset string but a mix. */
static int check_path(const char *path, const where *w, ferry__err *err) {
  if (!*path)
    return bad(err, w, "an empty path", path);
  if (ferry__mix_is(path) || strcmp(path, "mix") == 0)
    return bad(err, w, "a mix cannot be a source of a mix (nested mix):", path);
  return 0;
}

/* Room for one more source in s. */
static int grow(ferry__mix_spec *s, const where *w, ferry__err *err) {
  if (s->n == FERRY__MIX_MAX_SOURCES)
    return bad(err, w, "more than 1024 sources; the limit is reached at",
               w->file ? "this line" : w->item);
  ferry__mix_spec_source *n = realloc(s->src, (size_t)(s->n + 1) * sizeof *n);
  if (!n)
    return ferry__oom(err, -1, (size_t)(s->n + 1) * sizeof *n,
                      "mix: the table of %d sources", s->n + 1);
  s->src = n;
  memset(&s->src[s->n], 0, sizeof *n);
  return 0;
}

/* LIST: "PATH=PROPORTION,..." split at the last '=' of each item. */
static int parse_list(const char *list, int dflt, ferry__mix_spec *s,
                      ferry__err *err) {
  char *copy = strdup(list);
  int rc = 0;
  if (!copy)
    return ferry__oom(err, -1, strlen(list) + 1, "the mix list '%s'", list);
  for (char *it = copy, *comma; it && rc == 0; it = comma ? comma + 1 : NULL) {
    comma = strchr(it, ',');
    if (comma)
      *comma = '\0';
    char *item = trim(it), shown[320];
    snprintf(shown, sizeof shown, "%s", item);
    where w = {NULL, 0, shown};
    char *eq = strrchr(item, '=');
    if (!eq) {
      rc = bad(err, &w, "no '=PROPORTION' after the path in", item);
      break;
    }
    *eq = '\0';
    char *path = trim(item), *prop = trim(eq + 1);
    double p = 0;
    if ((rc = check_path(path, &w, err)) < 0 ||
        (rc = parse_proportion(prop, &p, &w, err)) < 0 ||
        (rc = grow(s, &w, err)) < 0)
      break;
    ferry__mix_spec_source *x = &s->src[s->n];
    x->proportion = p;
    x->exhaust = dflt;
    if (!(x->path = strdup(path)))
      rc = ferry__oom(err, -1, strlen(path) + 1, "the path of mix source %s",
                      path);
    else
      s->n++;
  }
  free(copy);
  return rc;
}

/* Relative paths of a mix file are relative to its directory (a backend's
 * scheme and URLs are kept as they are). */
static char *source_path(const char *dir, const char *path) {
  if (path[0] == '/' || !*dir || ferry__backend_for_scheme(path) ||
      strstr(path, "://"))
    return strdup(path);
  if (path[0] == '@') { /* an @list: the list file is what is relative */
    char *j = ferry__join_path(dir, path + 1);
    char *r = j ? malloc(strlen(j) + 2) : NULL;
    if (r)
      snprintf(r, strlen(j) + 2, "@%s", j);
    free(j);
    return r;
  }
  return ferry__join_path(dir, path);
}

/* One line of a mix file: PATH PROPORTION [exhaust=RULE] [map=...]. */
static int parse_line(char *line, const char *dir, int dflt, ferry__mix_spec *s,
                      const where *w, ferry__err *err) {
  char *tok[8];
  int nt = 0;
  for (char *t = strtok(line, " \t"); t; t = strtok(NULL, " \t")) {
    if (nt == 8)
      return bad(err, w, "too many fields in the line, at", t);
    tok[nt++] = t;
  }
  if (nt < 2)
    return bad(err, w,
               "expected 'PATH PROPORTION [exhaust=stop|restart|drop] "
               "[map=COMMON:NAME,...]', got",
               tok[0]);
  double p = 0;
  int exhaust = dflt, rc, seen_ex = 0, seen_map = 0;
  const char *map = NULL;
  if ((rc = check_path(tok[0], w, err)) < 0 ||
      (rc = parse_proportion(tok[1], &p, w, err)) < 0)
    return rc;
  for (int i = 2; i < nt; i++) {
    if (strncmp(tok[i], "exhaust=", 8) == 0 && !seen_ex++) {
      if ((rc = parse_exhaust(tok[i] + 8, &exhaust, w, err)) < 0)
        return rc;
    } else if (strncmp(tok[i], "map=", 4) == 0 && !seen_map++) {
      map = tok[i] + 4;
      if ((rc = check_map(map, w, err)) < 0)
        return rc;
    } else {
      return bad(err, w,
                 "unknown or repeated key (exhaust= and map= are "
                 "known):",
                 tok[i]);
    }
  }
  if ((rc = grow(s, w, err)) < 0)
    return rc;
  ferry__mix_spec_source *x = &s->src[s->n];
  x->proportion = p;
  x->exhaust = exhaust;
  if (!(x->path = source_path(dir, tok[0])) || (map && !(x->map = strdup(map))))
    return ferry__oom(
        err, -1, /* freed with s: n counts it below */
        strlen(dir) + strlen(tok[0]) + 3 + (map ? strlen(map) + 1 : 0),
        "mix source %s of mix file %s", tok[0], w->file ? w->file : "?");
  s->n++;
  return 0;
}

static int parse_file(const char *file, int dflt, ferry__mix_spec *s,
                      ferry__err *err) {
  FILE *f = fopen(file, "r");
  if (!f)
    return ferry__seterr(err, ferry__errno_code(errno), "mix file %s: %s", file,
                         strerror(errno));
  const char *slash = strrchr(file, '/');
  size_t dirlen = slash ? (size_t)(slash - file) + 1 : 0;
  char *line = NULL, *dir = malloc(dirlen + 1);
  size_t cap = 0;
  int rc = 0;
  long lineno = 0;
  if (!dir) {
    fclose(f);
    return ferry__oom(err, -1, dirlen + 1, "the directory of mix file %s",
                      file);
  }
  memcpy(dir, file, dirlen);
  dir[dirlen] = '\0';
  errno = 0;
  while (rc == 0 && getline(&line, &cap, f) >= 0) {
    lineno++;
    char *t = trim(line);
    if (!*t || *t == '#')
      continue;
    where w = {file, lineno, NULL};
    rc = parse_line(t, dir, dflt, s, &w, err);
  }
  if (rc == 0 && ferror(f))
    rc = ferry__seterr(err, FERRY_EIO, "mix file %s: read failed: %s", file,
                       strerror(errno));
  if (rc == 0 && s->n == 0)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "mix file %s names no source (one 'PATH PROPORTION' "
                       "per line)",
                       file);
  free(line);
  free(dir);
  fclose(f);
  return rc;
}

int ferry__mix_parse(const char *mix, int default_exhaust, ferry__mix_spec *out,
                     ferry__err *err) {
  memset(out, 0, sizeof *out);
  const char *body = ferry__mix_is(mix) ? mix + 4 : mix ? mix : "";
  int rc;
  if (body[0] == '@')
    rc = parse_file(body + 1, default_exhaust, out, err);
  else if (!*body)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "mix '%s' names no source (give PATH=PROPORTION,... "
                       "or @FILE)",
                       mix ? mix : "");
  else
    rc = parse_list(body, default_exhaust, out, err);
  if (rc == 0 && out->n == 0)
    rc = ferry__seterr(err, FERRY_EINVAL, "mix '%s' names no source",
                       mix ? mix : "");
  double sum = 0;
  for (int i = 0; rc == 0 && i < out->n; i++)
    sum += out->src[i].proportion;
  if (rc == 0 && !isfinite(sum))
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "mix '%s': the proportions' sum is not finite",
                       mix ? mix : "");
  for (int i = 0; rc == 0 && i < out->n; i++)
    out->src[i].proportion /= sum;
  if (rc < 0)
    ferry__mix_spec_free(out);
  return rc;
}

/* ---- Names ----------------------------------------------------------- */

/* In map ("COMMON:NAME,..."), the entry whose COMMON (side 0) or NAME
 * (side 1) is name[0..n): the other side into o and olen; 1 found, 0 not. */
static int map_lookup(const char *map, int side, const char *name, size_t n,
                      const char **o, size_t *olen) {
  const char *p = map;
  size_t len = 0;
  for (const char *s = map ? ferry__next_name(&p, &len) : NULL; s;
       s = ferry__next_name(&p, &len)) {
    const char *colon = memchr(s, ':', len);
    if (!colon)
      continue;
    size_t a = (size_t)(colon - s), b = len - a - 1;
    const char *key = side ? colon + 1 : s, *val = side ? s : colon + 1;
    size_t klen = side ? b : a, vlen = side ? a : b;
    if (klen == n && memcmp(key, name, n) == 0) {
      *o = val;
      *olen = vlen;
      return 1;
    }
  }
  return 0;
}

/* Append name[0..n) to a comma-separated list in *buf (realloc'd). */
static int list_add(char **buf, size_t *len, const char *name, size_t n) {
  char *nb = realloc(*buf, *len + n + 2);
  if (!nb)
    return -1;
  if (*len)
    nb[(*len)++] = ',';
  memcpy(nb + *len, name, n);
  *len += n;
  nb[*len] = '\0';
  *buf = nb;
  return 0;
}

/* The common names served by source 0 (its variables, mapped; a variable
 * whose own name another variable is mapped onto is hidden) as a list. */
static int commons_of(const ferry__manifest *sub, const char *map, char **out) {
  size_t len = 0;
  *out = NULL;
  for (int v = 0; v < sub->nvars; v++) {
    const char *name = sub->vars[v].name, *c = name, *o;
    size_t n = strlen(name), clen = n, olen;
    if (map_lookup(map, 1, name, n, &o, &olen)) {
      c = o;
      clen = olen;
    } else if (map_lookup(map, 0, name, n, &o, &olen)) {
      continue; /* shadowed by the variable mapped onto its name */
    }
    if (list_add(out, &len, c, clen) < 0)
      return FERRY_ENOMEM;
  }
  return 0;
}

/* The common list translated into the source's own names. */
static int source_names(const char *commons, const char *map, char **out) {
  const char *p = commons;
  size_t len = 0, n = 0, olen;
  *out = NULL;
  for (const char *s = ferry__next_name(&p, &n); s;
       s = ferry__next_name(&p, &n)) {
    const char *o;
    if (map_lookup(map, 0, s, n, &o, &olen)) {
      s = o;
      n = olen;
    }
    if (list_add(out, &len, s, n) < 0)
      return FERRY_ENOMEM;
  }
  return 0;
}

/* ---- Scan ------------------------------------------------------------ */

static void shape_text(char *buf, size_t len, const ferry__var *v) {
  size_t used = (size_t)snprintf(buf, len, "(");
  for (int i = 0; i < v->row_ndim && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                             (long long)v->row_shape[i]);
  if (used < len)
    snprintf(buf + used, len - used, v->row_ndim == 1 ? ",)" : ")");
}

/* Source s's variables must be source 0's, in dtype and row shape. */
static int check_source(const ferry__manifest *a, const char *pa,
                        const ferry__manifest *b, const char *pb, char **names,
                        ferry__err *err) {
  for (int v = 0; v < a->nvars; v++) {
    const ferry__var *x = &a->vars[v], *y = &b->vars[v];
    if (!x->ragged != !y->ragged)
      return ferry__seterr(err, FERRY_EINVAL,
                           "mix: variable '%s' is ragged in %s but of one "
                           "length in %s: the sources of a mix must agree",
                           names[v], x->ragged ? pa : pb, x->ragged ? pb : pa);
    int same = x->dtype == y->dtype && x->row_ndim == y->row_ndim;
    for (int k = 0; same && k < x->row_ndim; k++)
      same = x->row_shape[k] == y->row_shape[k];
    if (same)
      continue;
    char sa[160], sb[160];
    shape_text(sa, sizeof sa, x);
    shape_text(sb, sizeof sb, y);
    return ferry__seterr(err, FERRY_EINVAL,
                         "mix: variable '%s' is %s %s in %s but %s %s in %s",
                         names[v], ferry_dtype_name(x->dtype), sa, pa,
                         ferry_dtype_name(y->dtype), sb, pb);
  }
  return 0;
}

/* Scan source i with the source's names of the common list; errors say
 * which source. */
static int scan_source(const ferry__mix_spec_source *src, int i,
                       const char *commons, const ferry_options *opts,
                       ferry__manifest *sub, ferry__err *err) {
  char *names = NULL;
  int rc = commons ? source_names(commons, src->map, &names) : 0;
  if (rc < 0) /* about the list of names, grown name by name */
    return ferry__oom(err, -1,
                      strlen(commons) + 1 + (src->map ? strlen(src->map) : 0),
                      "the variable names of mix source %d (%s)", i, src->path);
  rc = ferry__manifest_scan(src->path, names, opts, sub, err);
  free(names);
  if (rc < 0 && err) {
    char what[FERRY__MSG_MAX];
    memcpy(what, err->msg, sizeof what);
    what[sizeof what - 1] = '\0';
    ferry__seterr(err, rc, "mix source %d (%.300s): %.600s", i, src->path,
                  what);
  }
  return rc;
}

/* The names of commons as an array [n] (pointers into a copy *buf). */
static int split_names(const char *commons, char ***names, int *n, char **buf) {
  *buf = strdup(commons);
  *names = calloc(strlen(commons) + 1, sizeof **names);
  *n = 0;
  if (!*buf || !*names)
    return FERRY_ENOMEM;
  for (char *s = *buf, *c; s; s = c ? c + 1 : NULL) {
    c = strchr(s, ',');
    if (c)
      *c = '\0';
    while (*s == '/' || *s == ' ')
      s++;
    (*names)[(*n)++] = s;
  }
  return 0;
}

/* The combined manifest's variables: the common names, source 0's layout. */
static int build_vars(ferry__manifest *m, const ferry__manifest *subs, int ns,
                      char **names, int nnames, ferry__err *err) {
  char storage[64];
  snprintf(storage, sizeof storage, "mix of %d source%s", ns,
           ns == 1 ? "" : "s");
  if (!(m->vars = calloc((size_t)nnames, sizeof *m->vars)))
    return ferry__oom(err, -1, (size_t)nnames * sizeof *m->vars,
                      "the %d variables of a mix of %d sources", nnames, ns);
  m->nvars = nnames;
  for (int v = 0; v < nnames; v++) {
    ferry__var *x = &m->vars[v];
    const ferry__var *y = &subs[0].vars[v];
    *x = *y;
    x->swapped = 0; /* the mix backend swaps a source's rows itself */
    if (x->ragged)  /* its values are the sources': not bounded by a file */
      x->ragged = 2;
    x->cache_bytes = 0;
    x->width = subs[0].vars[v].width;
    for (int s = 0; s < ns; s++)
      if (subs[s].vars[v].cache_bytes > x->cache_bytes)
        x->cache_bytes = subs[s].vars[v].cache_bytes;
    x->name = strdup(names[v]);
    x->storage = strdup(storage);
    if (!x->name || !x->storage)
      return ferry__oom(err, -1, strlen(names[v]) + strlen(storage) + 2,
                        "variable %s of a mix of %d sources", names[v], ns);
  }
  return 0;
}

/* A ragged variable's offsets in the part of a source: its parts' one
 * after the other (the mix backend reads them so). */
static int mix_offsets(const ferry__manifest *m, ferry__part *pt,
                       const ferry__manifest *sub, ferry__err *err) {
  if (!ferry__manifest_ragged(m))
    return 0;
  if (!(pt->roff = calloc((size_t)m->nvars, sizeof *pt->roff)))
    return ferry__oom(err, -1, (size_t)m->nvars * sizeof *pt->roff,
                      "the offsets of a mix source");
  for (int v = 0; v < m->nvars; v++) {
    if (!m->vars[v].ragged)
      continue;
    int64_t *o = malloc(((size_t)pt->num_samples + 1) * sizeof *o), i = 0;
    if (!o)
      return ferry__oom(err, -1, ((size_t)pt->num_samples + 1) * sizeof *o,
                        "the offsets of variable %s of a mix source",
                        m->vars[v].name);
    pt->roff[v] = o;
    o[0] = 0;
    for (int64_t q = 0; q < sub->nparts; q++) {
      const int64_t *so = sub->parts[q].roff[v];
      for (int64_t j = 0; j < sub->parts[q].num_samples; j++, i++)
        o[i + 1] = o[i] + (so[j + 1] - so[j]);
    }
  }
  return 0;
}

static int build_parts(ferry__manifest *m, const ferry__mix_spec *spec,
                       const ferry__manifest *subs, char **names,
                       ferry__err *err) {
  if (!(m->parts = calloc((size_t)spec->n, sizeof *m->parts)))
    return ferry__oom(err, -1, (size_t)spec->n * sizeof *m->parts,
                      "the parts of a mix of %d sources", spec->n);
  m->nparts = spec->n;
  int64_t total = 0;
  for (int s = 0; s < spec->n; s++) {
    ferry__part *pt = &m->parts[s];
    const ferry__mix_spec_source *src = &spec->src[s];
    pt->paths = calloc((size_t)m->nvars, sizeof *pt->paths);
    pt->data_offset = calloc((size_t)m->nvars, sizeof *pt->data_offset);
    pt->file_size = calloc((size_t)m->nvars, sizeof *pt->file_size);
    pt->rec = calloc((size_t)m->nvars, sizeof *pt->rec);
    if (!pt->paths || !pt->data_offset || !pt->file_size || !pt->rec)
      return ferry__oom(
          err, -1,
          (size_t)m->nvars * (sizeof *pt->paths + sizeof *pt->data_offset +
                              sizeof *pt->file_size + sizeof *pt->rec),
          "the %d variables of mix source %d (%s)", m->nvars, s, src->path);
    for (int v = 0; v < m->nvars; v++)
      if (!(pt->paths[v] = strdup(src->path)))
        return ferry__oom(err, -1, strlen(src->path) + 1,
                          "the path of mix source %d (%s)", s, src->path);
    if (subs[s].num_samples > INT64_MAX - total)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "mix: the sample count overflows 64 bits at "
                           "source %s",
                           src->path);
    pt->num_samples = subs[s].num_samples;
    pt->first_sample = total;
    total += pt->num_samples;
    int rc = mix_offsets(m, pt, &subs[s], err);
    if (rc < 0)
      return rc;
    ferry__mix_record r;
    memset(&r, 0, sizeof r);
    r.proportion = src->proportion;
    r.exhaust = src->exhaust;
    r.path = src->path;
    r.ncommon = m->nvars;
    r.common = names;
    rc = ferry__manifest_pack(&subs[s], &r.sub, &r.sublen);
    if (rc == 0)
      rc = ferry__mix_record_pack(&r, &pt->rec[0]);
    free(r.sub);
    if (rc < 0) /* the packed manifest, then the record that holds it */
      return ferry__oom(err, -1, 2 * ferry__manifest_packed_size(&subs[s]),
                        "the record of mix source %d (%s)", s, src->path);
  }
  m->num_samples = total;
  return 0;
}

int ferry__mix_scan(const char *spec, const char *vars,
                    const ferry_options *opts, ferry__manifest *m,
                    ferry__err *err) {
  ferry__mix_spec sp;
  ferry__manifest *subs = NULL;
  char *commons = NULL, *namebuf = NULL, **names = NULL;
  int nnames = 0, rc;
  memset(m, 0, sizeof *m);
  int dflt = opts ? opts->mix_exhaust : FERRY__EXHAUST_STOP;
  if ((rc = ferry__mix_parse(spec, dflt, &sp, err)) < 0)
    return rc;
  if (!(subs = calloc((size_t)sp.n, sizeof *subs))) {
    rc = ferry__oom(err, -1, (size_t)sp.n * sizeof *subs,
                    "the manifests of the %d sources of %s", sp.n, spec);
    goto cleanup;
  }
  if (vars && *vars && !(commons = strdup(vars))) {
    rc = ferry__oom(err, -1, strlen(vars) + 1, "the variables '%s' of %s", vars,
                    spec);
    goto cleanup;
  }
  /* Source 0 first: without vars, its variables (mapped) are the common
   * ones; scanned again by name when the map hid one of them. */
  if ((rc = scan_source(&sp.src[0], 0, commons, opts, &subs[0], err)) < 0)
    goto cleanup;
  if (!commons) {
    if (commons_of(&subs[0], sp.src[0].map, &commons) < 0 || !commons) {
      rc = commons ? ferry__oom(err, -1, strlen(commons) + 1,
                                "the variable names of mix source 0 (%s)",
                                sp.src[0].path)
                   : ferry__seterr(err, FERRY_EINVAL,
                                   "mix source 0 (%s): its map hides every "
                                   "variable",
                                   sp.src[0].path);
      goto cleanup;
    }
    int hid = 0;
    for (const char *c = commons; *c; c++)
      hid += *c == ',';
    if (hid + 1 != subs[0].nvars) {
      ferry__manifest_free(&subs[0]);
      if ((rc = scan_source(&sp.src[0], 0, commons, opts, &subs[0], err)) < 0)
        goto cleanup;
    }
  }
  if ((rc = split_names(commons, &names, &nnames, &namebuf)) < 0) {
    rc = ferry__oom(err, -1, (strlen(commons) + 1) * (1 + sizeof *names),
                    "the common variables of %s", spec);
    goto cleanup;
  }
  if (nnames != subs[0].nvars) {
    rc = ferry__seterr(err, FERRY_EINTERNAL,
                       "mix: source 0 serves %d variables for %d names",
                       subs[0].nvars, nnames);
    goto cleanup;
  }
  for (int s = 1; s < sp.n; s++) {
    if ((rc = scan_source(&sp.src[s], s, commons, opts, &subs[s], err)) < 0)
      goto cleanup;
    if ((rc = check_source(&subs[0], sp.src[0].path, &subs[s], sp.src[s].path,
                           names, err)) < 0)
      goto cleanup;
  }
  const ferry__backend *be = ferry__backend_find("mix");
  if (!(m->backend = strdup("mix")) || !(m->spec = strdup(spec))) {
    rc = ferry__oom(err, -1, sizeof "mix" + strlen(spec) + 1, "dataset %s",
                    spec);
    goto cleanup;
  }
  m->record_version = be ? be->record_version : 1;
  if ((rc = build_vars(m, subs, sp.n, names, nnames, err)) < 0 ||
      (rc = build_parts(m, &sp, subs, names, err)) < 0)
    goto cleanup;
  m->hash = ferry__manifest_hash(m);
cleanup:
  for (int s = 0; subs && s < sp.n; s++)
    ferry__manifest_free(&subs[s]);
  free(subs);
  free(names);
  free(namebuf);
  free(commons);
  ferry__mix_spec_free(&sp);
  if (rc < 0)
    ferry__manifest_free(m);
  return rc;
}

/* ---- The sampling plan's view ---------------------------------------- */

int ferry__mix_sources(const ferry__manifest *m, ferry__mix_source **out,
                       int *n, ferry__err *err) {
  *out = NULL;
  *n = 0;
  const ferry__manifest *mix = ferry__mix_of(m);
  if (!mix)
    return 0;
  if (m->nparts < 1 || m->nparts > FERRY__MIX_MAX_SOURCES)
    return ferry__seterr(err, FERRY_EFORMAT, "mix: %lld sources",
                         (long long)m->nparts);
  ferry__mix_source *s = calloc((size_t)m->nparts, sizeof *s);
  if (!s)
    return ferry__oom(err, -1, (size_t)m->nparts * sizeof *s,
                      "the %lld sources of dataset %s", (long long)m->nparts,
                      m->spec ? m->spec : "mix");
  for (int64_t p = 0; p < m->nparts; p++) {
    const ferry__part *pt = &m->parts[p], *mp = &mix->parts[p];
    ferry__mix_record r;
    int rc = ferry__mix_part_record(mp, &r, err);
    if (rc < 0) {
      free(s);
      return rc;
    }
    s[p].first = pt->first_sample;
    s[p].n = pt->num_samples;
    s[p].proportion = r.proportion;
    s[p].exhaust = r.exhaust;
    s[p].path = mp->paths[0];
    ferry__mix_record_free(&r);
  }
  *out = s;
  *n = (int)m->nparts;
  return 0;
}
