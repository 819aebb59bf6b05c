/*
 * manifest.c - the dataset manifest: what rank 0 learns about a dataset
 * before anything is read, and how it travels.
 *
 * ferry__manifest_scan turns the dataset string of ferry_open into parts
 * (a spec of a backend's scheme such as "mem:", an @list file, a glob with
 * ** for any number of directories, or one plain path), asks the backend of
 * its scheme, else the first backend whose probe accepts each part, to
 * describe it, checks that all parts agree on their
 * variables, and applies the user's selection of variables.  The result is
 * serialised into a flat, versioned, little-endian buffer for MPI_Bcast
 * (pack/unpack, which never trusts the buffer it is given), hashed for the
 * cross-rank and resume checks, and saved to or loaded from JSON so a later
 * run can skip the scan.  This file also holds the table of backends.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "core/manifest.h"
#include "core/mix.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Backends --------------------------------------------------------- */

void ferry__part_desc_free(ferry__part_desc *d) {
  if (!d)
    return;
  for (int i = 0; i < d->nvars; i++) {
    if (d->vars) {
      free(d->vars[i].name);
      free(d->vars[i].storage);
    }
    if (d->paths)
      free(d->paths[i]);
    if (d->rec)
      free(d->rec[i].p);
  }
  free(d->rec);
  free(d->vars);
  free(d->notes);
  free(d->paths);
  free(d->data_offset);
  free(d->file_size);
  memset(d, 0, sizeof *d);
}

void ferry__manifest_free(ferry__manifest *m) {
  if (!m)
    return;
  for (int64_t p = 0; m->parts && p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    for (int v = 0; pt->paths && v < m->nvars; v++)
      free(pt->paths[v]);
    for (int v = 0; pt->rec && v < m->nvars; v++)
      free(pt->rec[v].p);
    free(pt->rec);
    free(pt->paths);
    free(pt->data_offset);
    free(pt->file_size);
  }
  free(m->parts);
  for (int v = 0; m->vars && v < m->nvars; v++) {
    free(m->vars[v].name);
    free(m->vars[v].storage);
  }
  free(m->vars);
  free(m->backend);
  free(m->spec);
  free(m->notes);
  memset(m, 0, sizeof *m);
}

/* ---- Small helpers ---------------------------------------------------- */

typedef struct strvec {
  char **v;
  size_t n, cap;
} strvec;

static void sv_free(strvec *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* Takes ownership of str (freed on failure). */
static int sv_push(strvec *s, char *str) {
  if (!str)
    return -1;
  if (s->n == s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 16;
    char **nv = realloc(s->v, ncap * sizeof *nv);
    if (!nv) {
      free(str);
      return -1;
    }
    s->v = nv;
    s->cap = ncap;
  }
  s->v[s->n++] = str;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort byte-wise and drop repeats (a ** pattern can reach a path twice). */
static void sv_sort_unique(strvec *s) {
  if (s->n == 0)
    return;
  qsort(s->v, s->n, sizeof *s->v, cmp_str);
  size_t k = 1;
  for (size_t i = 1; i < s->n; i++) {
    if (strcmp(s->v[i], s->v[k - 1]) == 0)
      free(s->v[i]);
    else
      s->v[k++] = s->v[i];
  }
  s->n = k;
}

int ferry__check_part_var(const ferry__manifest *m, int64_t part, int var,
                          int rank, ferry__err *err) {
  if (part >= 0 && part < m->nparts && var >= 0 && var < m->nvars)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "read of part %lld variable %d on rank %d: no such "
                       "part or variable (the dataset has %lld parts, %d "
                       "variables)",
                       (long long)part, var, rank, (long long)m->nparts,
                       m->nvars);
}

int ferry__check_rows(const ferry__manifest *m, int64_t part, int var,
                      int64_t row, int64_t nrows, int rank, ferry__err *err) {
  const ferry__part *pt = &m->parts[part];
  if (row >= 0 && nrows >= 0 && row <= pt->num_samples &&
      nrows <= pt->num_samples - row)
    return 0;
  return ferry__seterr(err, FERRY_EINTERNAL,
                       "rows [%lld, %lld) are outside %s (variable %s, %lld "
                       "rows; rank %d)",
                       (long long)row, (long long)(row + nrows), pt->paths[var],
                       m->vars[var].name, (long long)pt->num_samples, rank);
}

/* What sv_push(s, a copy of a len-byte string) asks for: the copy, and
 * the list's growth when it is full (an out-of-memory message). */
static size_t sv_need(const strvec *s, size_t len) {
  return len + 1 +
         (s->n == s->cap ? (s->cap ? 2 * s->cap : 16) * sizeof(char *) : 0);
}

/* The bytes of ferry__join_path(a, b). */
static size_t join_need(const char *a, const char *b) {
  return strlen(a) + strlen(b) + 2;
}

static void format_shape(char *buf, size_t len, const int64_t *shape, int n) {
  size_t used = 0;
  used += (size_t)snprintf(buf, len, "(");
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                             (long long)shape[i]);
  if (used < len)
    snprintf(buf + used, len - used, n == 1 ? ",)" : ")");
}

/* ---- Glob ------------------------------------------------------------- */

/*
 * Matching goes one path component at a time with fnmatch(FNM_PATHNAME |
 * FNM_PERIOD), so '*' never crosses '/' nor matches a leading dot.  A
 * component that is exactly "**" matches zero or more directories; it
 * follows symbolic links to directories but never enters a directory that is
 * already on the current chain (a link loop), and skips hidden directories.
 */
#define GLOB_MAX_DEPTH 256

typedef struct dir_id {
  dev_t dev;
  ino_t ino;
} dir_id;

typedef struct glob_state {
  char **comps;
  size_t ncomps;
  strvec *out;
  dir_id chain[GLOB_MAX_DEPTH];
  int depth;
  const char *pattern;
  ferry__err *err;
} glob_state;

static int has_magic(const char *s) { return strpbrk(s, "*?[") != NULL; }

/* Names in dir (without . and ..), or an error for an unreadable one. */
static int read_dir(glob_state *g, const char *dir, strvec *names) {
  DIR *d = opendir(*dir ? dir : ".");
  if (!d) {
    if (errno == EACCES || errno == EPERM)
      return ferry__seterr(g->err, FERRY_EACCES,
                           "cannot read directory %s while matching '%s': %s",
                           *dir ? dir : ".", g->pattern, strerror(errno));
    return 0; /* missing or not a directory: simply no match */
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    size_t need = sv_need(names, strlen(e->d_name));
    if (sv_push(names, strdup(e->d_name)) < 0) {
      rc = ferry__oom(g->err, -1, need,
                      "the names in directory %s (matching '%s')",
                      *dir ? dir : ".", g->pattern);
      break;
    }
  }
  closedir(d);
  return rc;
}

static int on_chain(const glob_state *g, const struct stat *st) {
  for (int i = 0; i < g->depth; i++)
    if (g->chain[i].dev == st->st_dev && g->chain[i].ino == st->st_ino)
      return 1;
  return 0;
}

static int glob_rec(glob_state *g, size_t i, const char *base) {
  struct stat st;
  strvec names = {0};
  int rc = 0;
  if (i == g->ncomps) {
    size_t need = sv_need(g->out, strlen(base));
    if (*base && stat(base, &st) == 0 && sv_push(g->out, strdup(base)) < 0)
      return ferry__oom(g->err, -1, need, "the match %s of '%s'", base,
                        g->pattern);
    return 0;
  }
  const char *comp = g->comps[i];
  if (strcmp(comp, "**") == 0) {
    int pushed = 0;
    if (stat(*base ? base : ".", &st) != 0 || !S_ISDIR(st.st_mode))
      return 0;
    if (!on_chain(g, &st)) {
      if (g->depth == GLOB_MAX_DEPTH)
        return 0;
      g->chain[g->depth].dev = st.st_dev;
      g->chain[g->depth].ino = st.st_ino;
      g->depth++;
      pushed = 1;
    }
    if ((rc = glob_rec(g, i + 1, base)) < 0)
      goto cleanup;
    if ((rc = read_dir(g, base, &names)) < 0)
      goto cleanup;
    for (size_t k = 0; k < names.n; k++) {
      if (names.v[k][0] == '.')
        continue;
      char *sub = ferry__join_path(base, names.v[k]);
      if (!sub) {
        rc = ferry__oom(g->err, -1, join_need(base, names.v[k]),
                        "the path %s/%s (matching '%s')", base, names.v[k],
                        g->pattern);
        goto cleanup;
      }
      if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && !on_chain(g, &st))
        rc = glob_rec(g, i, sub);
      free(sub);
      if (rc < 0)
        goto cleanup;
    }
  cleanup:
    if (pushed)
      g->depth--;
    sv_free(&names);
    return rc;
  }
  if (!has_magic(comp)) {
    char *next = ferry__join_path(base, comp);
    if (!next)
      return ferry__oom(g->err, -1, join_need(base, comp),
                        "the path %s/%s (matching '%s')", base, comp,
                        g->pattern);
    rc = glob_rec(g, i + 1, next);
    free(next);
    return rc;
  }
  if ((rc = read_dir(g, base, &names)) < 0)
    return rc;
  for (size_t k = 0; k < names.n && rc == 0; k++) {
    if (fnmatch(comp, names.v[k], FNM_PATHNAME | FNM_PERIOD) != 0)
      continue;
    char *next = ferry__join_path(base, names.v[k]);
    if (!next) {
      rc = ferry__oom(g->err, -1, join_need(base, names.v[k]),
                      "the path %s/%s (matching '%s')", base, names.v[k],
                      g->pattern);
      break;
    }
    if (i + 1 == g->ncomps || (stat(next, &st) == 0 && S_ISDIR(st.st_mode)))
      rc = glob_rec(g, i + 1, next);
    free(next);
  }
  sv_free(&names);
  return rc;
}

static int glob_expand(const char *pattern, strvec *out, ferry__err *err) {
  glob_state *g = calloc(1, sizeof *g);
  char *copy = strdup(pattern);
  int rc = 0;
  if (!g || !copy) {
    rc = ferry__oom(err, -1, sizeof *g + strlen(pattern) + 1,
                    "matching the pattern '%s'", pattern);
    goto cleanup;
  }
  g->comps = calloc(strlen(pattern) + 1, sizeof *g->comps);
  if (!g->comps) {
    rc = ferry__oom(err, -1, (strlen(pattern) + 1) * sizeof *g->comps,
                    "the components of the pattern '%s'", pattern);
    goto cleanup;
  }
  g->out = out;
  g->pattern = pattern;
  g->err = err;
  /* Empty components ("a//b", a trailing '/') carry no meaning. */
  for (char *s = copy, *slash; s; s = slash ? slash + 1 : NULL) {
    slash = strchr(s, '/');
    if (slash)
      *slash = '\0';
    if (*s)
      g->comps[g->ncomps++] = s;
  }
  rc = glob_rec(g, 0, pattern[0] == '/' ? "/" : "");
  if (rc < 0)
    goto cleanup;
  sv_sort_unique(out);
  if (out->n == 0)
    rc = ferry__seterr(err, FERRY_ENOENT, "no file or directory matches '%s'",
                       pattern);
cleanup:
  if (g)
    free(g->comps);
  free(g);
  free(copy);
  return rc;
}

/* ---- Resolving the dataset string into parts -------------------------- */

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
                   s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* @FILE: one part per non-empty line that does not start with '#'; relative
 * paths are relative to the list file's directory (specs of a backend's
 * scheme, such as "mem:", are kept as they are).  Lines are not globbed. */
static int read_list(const char *list, strvec *out, ferry__err *err) {
  FILE *f = fopen(list, "r");
  if (!f)
    return ferry__seterr(err, ferry__errno_code(errno), "list file %s: %s",
                         list, strerror(errno));
  const char *slash = strrchr(list, '/');
  size_t dirlen = slash ? (size_t)(slash - list) + 1 : 0;
  char *line = NULL, *dir = NULL;
  size_t cap = 0;
  int rc = 0;
  if (!(dir = malloc(dirlen + 1))) {
    rc = ferry__oom(err, -1, dirlen + 1, "the directory of list file %s", list);
    goto cleanup;
  }
  memcpy(dir, list, dirlen);
  dir[dirlen] = '\0';
  errno = 0;
  while (getline(&line, &cap, f) >= 0) {
    char *s = trim(line);
    if (!*s || *s == '#')
      continue;
    int as_is = s[0] == '/' || !*dir || ferry__backend_for_scheme(s);
    size_t need = sv_need(out, as_is ? strlen(s) : join_need(dir, s) - 1);
    char *path = as_is ? strdup(s) : ferry__join_path(dir, s);
    if (sv_push(out, path) < 0) {
      rc = ferry__oom(err, -1, need, "the part %s of list file %s", s, list);
      goto cleanup;
    }
  }
  if (ferror(f)) {
    rc = ferry__seterr(err, FERRY_EIO, "list file %s: read failed: %s", list,
                       strerror(errno));
    goto cleanup;
  }
  if (out->n == 0)
    rc = ferry__seterr(err, FERRY_EEMPTY, "list file %s names no part", list);
cleanup:
  free(line);
  free(dir);
  fclose(f);
  return rc;
}

/* ---- Directories of parts -------------------------------------------- */

/* a and b with every run of digits taken out are the same name. */
static int same_but_digits(const char *a, const char *b) {
  for (;;) {
    while (*a >= '0' && *a <= '9')
      a++;
    while (*b >= '0' && *b <= '9')
      b++;
    if (*a != *b)
      return 0;
    if (!*a)
      return 1;
    a++;
    b++;
  }
}

static const char *ext_of(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && dot != name ? dot : "";
}

/* The rule for directories (issue 12: 10,000 shards in a directory were
 * read as 10,000 variables, and `ferry verify` passed).  Among a
 * directory's regular files (hidden ones and markers starting with '_',
 * such as Spark's _SUCCESS, left out) take those of the most common
 * extension; when there are at least FERRY__DIR_PARTS_MIN of them and
 * their names differ only in digits (part-00000.npy, part-00001.npy, ...:
 * what every writer of shards produces), the directory is a directory of
 * parts, read as those files in sorted order, as a glob would be; the
 * other files are ignored and named in the note.  A Zarr store (its
 * metadata files) is never one.  Returns 1 with the files in out and a
 * note in *note, 0 when the directory stays one part (its backend reads it
 * as a whole: the .npy files of a directory are then its variables). */
#define FERRY__DIR_PARTS_MIN 2
static int dir_files(const char *dir, strvec *names, int *store,
                     ferry__err *err) {
  DIR *d = opendir(dir);
  if (!d)
    return 0; /* the backend that reads it says why it cannot */
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    const char *n = e->d_name;
    if (strcmp(n, "zarr.json") == 0 || strcmp(n, ".zarray") == 0 ||
        strcmp(n, ".zgroup") == 0 || strcmp(n, ".zattrs") == 0)
      *store = 1;
    if (n[0] == '.' || n[0] == '_')
      continue;
    char *full = ferry__join_path(dir, n);
    struct stat st;
    size_t need = sv_need(names, strlen(n));
    if (!full)
      rc = ferry__oom(err, -1, join_need(dir, n), "the path %s/%s", dir, n);
    else if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
             sv_push(names, strdup(n)) < 0)
      rc = ferry__oom(err, -1, need, "the names in directory %s", dir);
    free(full);
  }
  closedir(d);
  return rc;
}

static int dir_parts(const char *dir, strvec *out, char **note,
                     ferry__err *err) {
  strvec names = {0};
  int store = 0, rc = dir_files(dir, &names, &store, err);
  sv_sort_unique(&names);
  /* the most common extension (of the first 16 distinct ones) */
  const char *ext = NULL, *exts[16];
  size_t best = 0, others = 0, first = 0, last = 0, cnt[16] = {0}, nx = 0;
  for (size_t i = 0; rc == 0 && i < names.n; i++) {
    const char *x = ext_of(names.v[i]);
    size_t k = 0;
    while (k < nx && strcmp(exts[k], x) != 0)
      k++;
    if (k == nx && nx < 16)
      exts[nx++] = x;
    if (k < nx && ++cnt[k] > best) {
      best = cnt[k];
      ext = exts[k];
    }
  }
  int looks = !store && rc == 0 && best >= FERRY__DIR_PARTS_MIN;
  for (size_t i = 0, seen = 0; looks && i < names.n; i++) {
    if (strcmp(ext_of(names.v[i]), ext) != 0) {
      others++;
      continue;
    }
    looks = seen == 0 || same_but_digits(names.v[first], names.v[i]);
    if (seen++ == 0)
      first = i;
    last = i;
  }
  if (looks) {
    char buf[640];
    snprintf(buf, sizeof buf,
             "directory %s: its %zu %s files (%s ... %s) differ only in "
             "digits: read as %zu parts, as the glob %s/*%s would be%s",
             dir, best, *ext ? ext : "extensionless", names.v[first],
             names.v[last], best, dir, ext,
             others ? " (other files ignored)" : "");
    for (size_t i = 0; rc == 0 && i < names.n; i++)
      if (strcmp(ext_of(names.v[i]), ext) == 0 &&
          sv_push(out, ferry__join_path(dir, names.v[i])) < 0)
        rc = ferry__oom(err, -1, sv_need(out, join_need(dir, names.v[i]) - 1),
                        "the part %s/%s", dir, names.v[i]);
    if (rc == 0 && !(*note = strdup(buf)))
      rc =
          ferry__oom(err, -1, strlen(buf) + 1, "the note on directory %s", dir);
    if (rc == 0)
      rc = 1;
  }
  sv_free(&names);
  return rc;
}

static int resolve(const char *spec, strvec *parts, char **note,
                   ferry__err *err) {
  /* A backend's scheme ("mem:") and URLs (file://STORE#mode=zarr,file) are
   * not file names: the backend that reads them says whether they exist. */
  const size_t need = sv_need(parts, strlen(spec));
  if (ferry__backend_for_scheme(spec) || strstr(spec, "://") != NULL)
    return sv_push(parts, strdup(spec)) < 0
               ? ferry__oom(err, -1, need, "dataset %s", spec)
               : 0;
  if (spec[0] == '@')
    return read_list(spec + 1, parts, err);
  struct stat st;
  if (has_magic(spec)) {
    int rc = glob_expand(spec, parts, err);
    /* A name that merely contains '[' or '?' is still reachable. */
    if (rc == FERRY_ENOENT && stat(spec, &st) == 0)
      return sv_push(parts, strdup(spec)) < 0
                 ? ferry__oom(err, -1, need, "dataset %s", spec)
                 : 0;
    return rc;
  }
  if (stat(spec, &st) != 0)
    return ferry__seterr(err, ferry__errno_code(errno), "dataset %s: %s", spec,
                         strerror(errno));
  if (note && S_ISDIR(st.st_mode)) {
    int rc = dir_parts(spec, parts, note, err);
    if (rc != 0)
      return rc < 0 ? rc : 0;
  }
  return sv_push(parts, strdup(spec)) < 0
             ? ferry__oom(err, -1, sv_need(parts, strlen(spec)), "dataset %s",
                          spec)
             : 0;
}

/* ---- Scan ------------------------------------------------------------- */

static int is_regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Part d (path) must hold the same variables as the manifest built from the
 * first part.  When both parts are single files of one variable the name is
 * not compared: a glob of part-*.npy is one variable cut into files, named
 * after the first file's stem. */
static int check_part(const ferry__manifest *m, const ferry__part_desc *d,
                      const char *path, ferry__err *err) {
  const char *first = m->parts[0].paths[0];
  if (d->nvars != m->nvars)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "part %s has %d variables but part %s has %d", path,
                         d->nvars, first, m->nvars);
  int ignore_names =
      m->nvars == 1 && is_regular_file(path) && is_regular_file(first);
  for (int v = 0; v < m->nvars; v++) {
    const ferry__var *a = &m->vars[v], *b = &d->vars[v];
    char sa[160], sb[160];
    if (!ignore_names && strcmp(a->name, b->name) != 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "part %s has variable '%s' where part %s has '%s'",
                           path, b->name, first, a->name);
    if (a->dtype != b->dtype)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "part %s: variable '%s' is %s but it is %s in "
                           "part %s",
                           path, a->name, ferry_dtype_name(b->dtype),
                           ferry_dtype_name(a->dtype), first);
    if (a->swapped != b->swapped)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "part %s: variable '%s' is stored %s-endian but "
                           "%s-endian in part %s",
                           path, a->name, b->swapped ? "non-native" : "native",
                           a->swapped ? "non-native" : "native", first);
    int same = a->row_ndim == b->row_ndim && a->row_bytes == b->row_bytes;
    for (int k = 0; same && k < a->row_ndim; k++)
      same = a->row_shape[k] == b->row_shape[k];
    if (!same) {
      format_shape(sa, sizeof sa, a->row_shape, a->row_ndim);
      format_shape(sb, sizeof sb, b->row_shape, b->row_ndim);
      return ferry__seterr(err, FERRY_ESHAPE,
                           "part %s: variable '%s' has rows of shape %s but "
                           "%s in part %s",
                           path, a->name, sb, sa, first);
    }
  }
  return 0;
}

typedef struct part_arrays {
  char **paths;
  int64_t *offset, *size;
  ferry__blob *rec;
} part_arrays;

/* The names of vars (comma-separated, a leading '/' ignored) as indices of
 * m's variables in sel[], in the order given; *nsel receives their number.
 * An unknown name lists the variables there are (and the notes on what was
 * skipped). */
static int parse_selection(const ferry__manifest *m, const char *vars,
                           char *copy, int *sel, int *nsel, ferry__err *err) {
  *nsel = 0;
  for (char *s = copy, *comma; s; s = comma ? comma + 1 : NULL) {
    comma = strchr(s, ',');
    if (comma)
      *comma = '\0';
    char *name = trim(s);
    while (*name == '/') /* HDF5 paths may be written "/group/x" */
      name++;
    if (!*name)
      return ferry__seterr(err, FERRY_EINVAL,
                           "vars '%s': an empty variable name", vars);
    int found = -1, also = -1; /* also: a second of that name */
    for (int v = 0; v < m->nvars && also < 0; v++)
      if (strcmp(m->vars[v].name, name) == 0)
        *(found < 0 ? &found : &also) = v;
    if (also >= 0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "vars '%s': variables %d and %d of dataset %s are "
                           "both named '%s'",
                           vars, found + 1, also + 1, m->spec, name);
    if (found < 0) {
      char have[FERRY__MSG_MAX / 2];
      size_t used = 0;
      have[0] = '\0';
      for (int v = 0; v < m->nvars && used < sizeof have; v++)
        used += (size_t)snprintf(have + used, sizeof have - used, "%s%s",
                                 v ? ", " : "", m->vars[v].name);
      return ferry__seterr(err, FERRY_EINVAL,
                           "variable '%s' not found; the dataset has: %s%s%s%s",
                           name, have, m->notes ? " (" : "",
                           m->notes ? m->notes : "", m->notes ? ")" : "");
    }
    for (int k = 0; k < *nsel; k++)
      if (sel[k] == found)
        return ferry__seterr(err, FERRY_EINVAL,
                             "variable '%s' is selected twice in vars '%s'",
                             name, vars);
    sel[(*nsel)++] = found;
  }
  return 0;
}

static int select_vars(ferry__manifest *m, const char *vars, ferry__err *err) {
  if (!vars || !*vars)
    return 0;
  int rc = 0, nsel = 0;
  char *copy = strdup(vars);
  int *sel = calloc(strlen(vars) + 1, sizeof *sel);
  int *keep = NULL;
  ferry__var *nv = NULL;
  part_arrays *na = NULL;
  if (!copy || !sel) {
    rc = ferry__oom(err, -1, (strlen(vars) + 1) * (1 + sizeof *sel),
                    "the selection vars '%s' of dataset %s", vars,
                    m->spec ? m->spec : "?");
    goto cleanup;
  }
  if ((rc = parse_selection(m, vars, copy, sel, &nsel, err)) < 0)
    goto cleanup;
  /* Allocate everything first so a failure leaves m as it was. */
  nv = calloc((size_t)nsel, sizeof *nv);
  keep = calloc((size_t)m->nvars, sizeof *keep);
  na = calloc((size_t)m->nparts + 1, sizeof *na);
  if (!nv || !keep || !na) {
    rc =
        ferry__oom(err, -1,
                   (size_t)nsel * sizeof *nv + (size_t)m->nvars * sizeof *keep +
                       ((size_t)m->nparts + 1) * sizeof *na,
                   "the %d selected variables of dataset %s", nsel,
                   m->spec ? m->spec : "?");
    goto cleanup;
  }
  for (int64_t p = 0; p < m->nparts; p++) {
    na[p].paths = calloc((size_t)nsel, sizeof *na[p].paths);
    na[p].offset = calloc((size_t)nsel, sizeof *na[p].offset);
    na[p].size = calloc((size_t)nsel, sizeof *na[p].size);
    if (!na[p].paths || !na[p].offset || !na[p].size) {
      rc = ferry__oom(
          err, -1,
          (size_t)nsel *
              (sizeof *na[p].paths + sizeof *na[p].offset + sizeof *na[p].size),
          "the %d selected variables of part %s", nsel, m->parts[p].paths[0]);
      goto cleanup;
    }
    if (m->parts[p].rec &&
        !(na[p].rec = calloc((size_t)nsel, sizeof *na[p].rec))) {
      rc = ferry__oom(err, -1, (size_t)nsel * sizeof *na[p].rec,
                      "the records of the %d selected variables of part %s",
                      nsel, m->parts[p].paths[0]);
      goto cleanup;
    }
  }
  for (int k = 0; k < nsel; k++) {
    keep[sel[k]] = 1;
    nv[k] = m->vars[sel[k]];
  }
  for (int v = 0; v < m->nvars; v++)
    if (!keep[v]) {
      free(m->vars[v].name);
      free(m->vars[v].storage);
    }
  /* A mix keeps its source's record in the first variable's slot: it
   * moves to the first variable selected. */
  int first_rec = m->backend && strcmp(m->backend, "mix") == 0;
  for (int64_t p = 0; p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    if (first_rec && pt->rec) {
      ferry__blob t = pt->rec[0];
      pt->rec[0] = pt->rec[sel[0]];
      pt->rec[sel[0]] = t;
    }
    for (int k = 0; k < nsel; k++) {
      na[p].paths[k] = pt->paths[sel[k]];
      na[p].offset[k] = pt->data_offset[sel[k]];
      na[p].size[k] = pt->file_size[sel[k]];
      if (pt->rec)
        na[p].rec[k] = pt->rec[sel[k]];
    }
    for (int v = 0; v < m->nvars; v++)
      if (!keep[v]) {
        free(pt->paths[v]);
        if (pt->rec)
          free(pt->rec[v].p);
      }
    free(pt->rec);
    pt->rec = na[p].rec;
    na[p].rec = NULL;
    free(pt->paths);
    free(pt->data_offset);
    free(pt->file_size);
    pt->paths = na[p].paths;
    pt->data_offset = na[p].offset;
    pt->file_size = na[p].size;
    na[p].paths = NULL;
    na[p].offset = NULL;
    na[p].size = NULL;
  }
  free(m->vars);
  m->vars = nv;
  m->nvars = nsel;
  nv = NULL;
cleanup:
  for (int64_t p = 0; na && p < m->nparts; p++) {
    free(na[p].paths);
    free(na[p].offset);
    free(na[p].size);
    free(na[p].rec);
  }
  free(na);
  free(keep);
  free(nv);
  free(sel);
  free(copy);
  return rc;
}

/* Describe every part into m (spec, parts, variables, backend, samples);
 * *disagree is set when a part's variables differ from the first's. */
static int scan_parts(const char *spec, const strvec *parts,
                      const ferry_options *opts, ferry__manifest *m,
                      int *disagree, ferry__err *err) {
  ferry__part_desc d;
  const ferry__backend *be = NULL;
  int64_t total = 0;
  int rc = 0;
  memset(&d, 0, sizeof d);
  if (!(m->spec = strdup(spec)) ||
      !(m->parts = calloc(parts->n, sizeof *m->parts))) {
    rc = ferry__oom(err, -1, strlen(spec) + 1 + parts->n * sizeof *m->parts,
                    "the %zu parts of dataset %s", parts->n, spec);
    goto cleanup;
  }
  m->nparts = (int64_t)parts->n; /* unfilled parts are zeroed: free is safe */
  for (size_t i = 0; i < parts->n; i++) {
    const char *path = parts->v[i];
    const ferry__backend *b = ferry__backend_for_scheme(path);
    for (int k = 0; !b && ferry__backends[k]; k++)
      if (ferry__backends[k]->probe && ferry__backends[k]->probe(path))
        b = ferry__backends[k];
    if (!b) {
      if (strstr(path, "://") != NULL)
        rc = ferry__seterr(err, FERRY_ENOTSUP,
                           "no backend of this build reads %s (URLs are "
                           "read by the zarr backend: "
                           "file://STORE#mode=zarr,file)",
                           path);
      else
        rc = ferry__sniff_unread(path, err);
      goto cleanup;
    }
    if (be && b != be) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "part %s is read by backend '%s' but part %s by '%s'",
                         path, b->name, parts->v[0], be->name);
      *disagree = 1;
      goto cleanup;
    }
    be = b;
    if ((rc = b->describe(path, opts, &d, err)) < 0) {
      if (rc == FERRY_ENOMEM && err && !strstr(err->msg, path)) {
        /* a parser's bare "out of memory": say which part it was reading */
        char what[FERRY__MSG_MAX];
        memcpy(what, err->msg, sizeof what);
        what[sizeof what - 1] = '\0';
        ferry__seterr(err, rc, "reading the metadata of part %s: %.700s", path,
                      what);
      }
      goto cleanup;
    }
    if (d.nvars < 1 || d.num_samples < 0) {
      rc = ferry__seterr(err, FERRY_EFORMAT, "part %s holds no variable", path);
      goto cleanup;
    }
    if (i == 0) {
      m->nvars = d.nvars;
      m->vars = d.vars;
      d.vars = NULL;
      m->notes = d.notes;
      d.notes = NULL;
    } else if ((rc = check_part(m, &d, path, err)) < 0) {
      *disagree = 1;
      goto cleanup;
    }
    ferry__part *pt = &m->parts[i];
    pt->num_samples = d.num_samples;
    pt->first_sample = total;
    pt->paths = d.paths;
    pt->data_offset = d.data_offset;
    pt->file_size = d.file_size;
    pt->rec = d.rec;
    d.rec = NULL;
    d.paths = NULL;
    d.data_offset = NULL;
    d.file_size = NULL;
    ferry__part_desc_free(&d);
    if (pt->num_samples > INT64_MAX - total) {
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "dataset %s: the sample count overflows 64 bits at "
                         "part %s",
                         spec, path);
      goto cleanup;
    }
    total += pt->num_samples;
  }
  m->num_samples = total;
  m->record_version = be ? be->record_version : 0;
  if (!(m->backend = strdup(be ? be->name : "none")))
    rc = ferry__oom(err, -1, strlen(be ? be->name : "none") + 1,
                    "the backend name of dataset %s", spec);
cleanup:
  ferry__part_desc_free(&d);
  return rc;
}

/* m->notes gains note ("; " between). */
static int add_note(ferry__manifest *m, const char *note, ferry__err *err) {
  size_t a = m->notes ? strlen(m->notes) : 0, b = strlen(note);
  char *n = malloc(a + b + 3);
  if (!n)
    return ferry__oom(err, -1, a + b + 3, "the notes of dataset %s",
                      m->spec ? m->spec : "?");
  snprintf(n, a + b + 3, "%s%s%s", m->notes ? m->notes : "", a ? "; " : "",
           note);
  free(m->notes);
  m->notes = n;
  return 0;
}

int ferry__manifest_scan(const char *spec, const char *vars,
                         const ferry_options *opts, ferry__manifest *m,
                         ferry__err *err) {
  strvec parts = {0};
  char *note = NULL;
  int rc = 0, disagree = 0;
  memset(m, 0, sizeof *m);
  char *mix = NULL;
  if (ferry__mix_dataset(spec, opts, &mix) < 0)
    return ferry__oom(err, -1, ferry__mix_dataset_bytes(spec, opts),
                      "the mix string of dataset %s", spec ? spec : "mix");
  if (mix) { /* several datasets as one (core/mix.c) */
    rc = ferry__mix_scan(mix, vars, opts, m, err);
    free(mix);
    return rc;
  }
  if (!spec || !*spec)
    return ferry__seterr(err, FERRY_EINVAL, "the dataset string is empty");
  if ((rc = resolve(spec, &parts, &note, err)) < 0)
    goto cleanup;
  rc = scan_parts(spec, &parts, opts, m, &disagree, err);
  if (rc < 0 && disagree && note) {
    /* Files named like parts that do not agree (different dtypes, shapes
     * or variables) are what they were before the rule: the directory's
     * variables. */
    ferry__manifest_free(m);
    memset(m, 0, sizeof *m);
    sv_free(&parts);
    free(note);
    note = NULL;
    rc = sv_push(&parts, strdup(spec)) < 0
             ? ferry__oom(err, -1, sv_need(&parts, strlen(spec)), "dataset %s",
                          spec)
             : 0;
    if (rc == 0)
      rc = scan_parts(spec, &parts, opts, m, &disagree, err);
  }
  if (rc < 0)
    goto cleanup;
  if (note && (rc = add_note(m, note, err)) < 0)
    goto cleanup;
  if (m->num_samples == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY, "dataset %s holds no sample", spec);
    goto cleanup;
  }
  if ((rc = select_vars(m, vars, err)) < 0 ||
      (rc = ferry__manifest_check_names(m, err)) < 0)
    goto cleanup;
  if ((rc = ferry__manifest_check_servable(m, spec, err)) < 0)
    goto cleanup;
  m->hash = ferry__manifest_hash(m);
cleanup:
  free(note);
  sv_free(&parts);
  if (rc < 0)
    ferry__manifest_free(m);
  return rc;
}

/* ---- Pack / unpack ---------------------------------------------------- */

/*
 * Layout (all integers little-endian):
 *   "FRYM"  u8 version=3  3 zero bytes  u64 total length
 *   str backend  str spec  str notes  u32 record_version  u32 nvars
 *   per variable: str name  u8 dtype  u8 swapped  u8 row_ndim  u8 0
 *                 i64 row_shape[row_ndim]  u64 row_bytes
 *                 i64 chunk_rows  u64 cache_bytes  str storage
 *   i64 nparts  i64 num_samples
 *   per part: i64 num_samples  i64 first_sample
 *             per variable: str path  i64 data_offset  i64 file_size
 *                           str record (the backend's bytes, may be empty)
 *   u64 FNV-1a of every byte before it
 * where str is u32 length + bytes (no NUL in a string; a record may hold
 * any byte).  The hash is FNV-1a over the same body with the spec left
 * empty (the spec is how the user spelled the dataset, the rest is what
 * identifies the data), led by HASH_VERSION; the record fields enter it
 * only when the backend keeps records, so the hash of a manifest without
 * records is the one ferry computed before records existed (checkpoints
 * taken then still resume).
 */
#define PACK_VERSION 3
#define HASH_VERSION 2
#define PACK_HEAD 16

typedef struct wbuf {
  unsigned char *p;
  size_t len, cap;
  int failed;
  int hash_only;
  uint64_t h;
} wbuf;

static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->hash_only) {
    w->h = ferry__fnv1a(w->h, src, n);
    w->len += n;
    return;
  }
  if (w->failed)
    return;
  if (n > w->cap - w->len) {
    size_t ncap = w->cap ? w->cap : 256;
    while (n > ncap - w->len) {
      if (ncap > SIZE_MAX / 2) {
        w->failed = 1;
        return;
      }
      ncap *= 2;
    }
    unsigned char *np = realloc(w->p, ncap);
    if (!np) {
      w->failed = 1;
      return;
    }
    w->p = np;
    w->cap = ncap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void w_u64(wbuf *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 8);
}

static void w_u32(wbuf *w, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 4);
}

static void w_u8(wbuf *w, unsigned v) {
  unsigned char b = (unsigned char)v;
  w_bytes(w, &b, 1);
}

static void w_str(wbuf *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n > UINT32_MAX) {
    w->failed = 1;
    return;
  }
  w_u32(w, (uint32_t)n);
  w_bytes(w, s ? s : "", n);
}

static void w_blob(wbuf *w, const ferry__blob *b) {
  size_t n = b ? b->len : 0;
  if (n > UINT32_MAX) {
    w->failed = 1;
    return;
  }
  w_u32(w, (uint32_t)n);
  if (n)
    w_bytes(w, b->p, n);
}

/* full: the whole body (pack); else the hash's (see the layout above). */
static void pack_body(wbuf *w, const ferry__manifest *m, int full) {
  int recs = full || m->record_version != 0;
  w_str(w, m->backend);
  w_str(w, full ? m->spec : "");
  w_str(w, m->notes);
  if (recs)
    w_u32(w, (uint32_t)m->record_version);
  w_u32(w, (uint32_t)m->nvars);
  for (int v = 0; v < m->nvars; v++) {
    const ferry__var *x = &m->vars[v];
    w_str(w, x->name);
    w_u8(w, (unsigned)x->dtype);
    w_u8(w, (unsigned)x->swapped);
    w_u8(w, (unsigned)x->row_ndim);
    w_u8(w, 0);
    for (int k = 0; k < x->row_ndim; k++)
      w_u64(w, (uint64_t)x->row_shape[k]);
    w_u64(w, (uint64_t)x->row_bytes);
    w_u64(w, (uint64_t)x->chunk_rows);
    w_u64(w, (uint64_t)x->cache_bytes);
    w_str(w, x->storage);
  }
  w_u64(w, (uint64_t)m->nparts);
  w_u64(w, (uint64_t)m->num_samples);
  for (int64_t p = 0; p < m->nparts; p++) {
    const ferry__part *pt = &m->parts[p];
    w_u64(w, (uint64_t)pt->num_samples);
    w_u64(w, (uint64_t)pt->first_sample);
    for (int v = 0; v < m->nvars; v++) {
      w_str(w, pt->paths[v]);
      w_u64(w, (uint64_t)pt->data_offset[v]);
      w_u64(w, (uint64_t)pt->file_size[v]);
      if (recs)
        w_blob(w, pt->rec ? &pt->rec[v] : NULL);
    }
  }
}

uint64_t ferry__manifest_hash(const ferry__manifest *m) {
  wbuf w;
  memset(&w, 0, sizeof w);
  w.hash_only = 1;
  w.h = FERRY__FNV_INIT;
  w_u8(&w, HASH_VERSION);
  pack_body(&w, m, 0);
  return w.h;
}

size_t ferry__manifest_packed_size(const ferry__manifest *m) {
  wbuf w;
  memset(&w, 0, sizeof w);
  w.hash_only = 1; /* counts the bytes, writes nothing */
  pack_body(&w, m, 1);
  return w.len + 16 + 8; /* the header, then the checksum */
}

int ferry__manifest_pack(const ferry__manifest *m, void **buf, size_t *len) {
  wbuf w;
  memset(&w, 0, sizeof w);
  *buf = NULL;
  *len = 0;
  w_bytes(&w, "FRYM", 4);
  w_u8(&w, PACK_VERSION);
  w_u8(&w, 0);
  w_u8(&w, 0);
  w_u8(&w, 0);
  w_u64(&w, 0); /* total length, filled in below */
  pack_body(&w, m, 1);
  w_u64(&w, 0); /* checksum, filled in below */
  if (w.failed) {
    free(w.p);
    return FERRY_ENOMEM;
  }
  uint64_t total = w.len;
  for (int i = 0; i < 8; i++)
    w.p[8 + i] = (unsigned char)(total >> (8 * i));
  uint64_t sum = ferry__fnv1a(FERRY__FNV_INIT, w.p, w.len - 8);
  for (size_t i = 0; i < 8; i++)
    w.p[w.len - 8 + i] = (unsigned char)(sum >> (8 * i));
  *buf = w.p;
  *len = w.len;
  return 0;
}

typedef struct rbuf {
  const unsigned char *p;
  size_t len, pos;
  const char *bad; /* what was wrong, NULL while all is well */
  size_t bad_pos;
  int oom;
  size_t oom_bytes; /* what the failed allocation asked for */
} rbuf;

static int r_fail(rbuf *r, const char *what) {
  if (!r->bad) {
    r->bad = what;
    r->bad_pos = r->pos;
  }
  return -1;
}

/* Out of memory for bytes bytes of what. */
static int r_oom(rbuf *r, size_t bytes, const char *what) {
  if (!r->bad) {
    r->oom = 1;
    r->oom_bytes = bytes;
  }
  return r_fail(r, what);
}

static int r_bytes(rbuf *r, void *dst, size_t n) {
  if (r->bad)
    return -1;
  if (n > r->len - r->pos)
    return r_fail(r, "buffer ends early");
  memcpy(dst, r->p + r->pos, n);
  r->pos += n;
  return 0;
}

static uint64_t r_u64(rbuf *r) {
  unsigned char b[8] = {0};
  uint64_t v = 0;
  r_bytes(r, b, 8);
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)b[i] << (8 * i);
  return v;
}

/* A signed count or size that must be >= 0. */
static int64_t r_nonneg(rbuf *r, const char *what) {
  uint64_t v = r_u64(r);
  if (v > (uint64_t)INT64_MAX) {
    r_fail(r, what);
    return 0;
  }
  return (int64_t)v;
}

static uint32_t r_u32(rbuf *r) {
  unsigned char b[4] = {0};
  r_bytes(r, b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

static unsigned r_u8(rbuf *r) {
  unsigned char b = 0;
  r_bytes(r, &b, 1);
  return b;
}

static char *r_str(rbuf *r) {
  uint32_t n = r_u32(r);
  if (r->bad)
    return NULL;
  if (n > r->len - r->pos) {
    r_fail(r, "string runs past the end");
    return NULL;
  }
  if (memchr(r->p + r->pos, 0, n)) {
    r_fail(r, "string holds a NUL byte");
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    r_oom(r, (size_t)n + 1, "a string");
    return NULL;
  }
  memcpy(s, r->p + r->pos, n);
  s[n] = '\0';
  r->pos += n;
  return s;
}

/* A record into *b; without b (no record version) it must be empty. */
static int r_blob(rbuf *r, ferry__blob *b) {
  uint32_t n = r_u32(r);
  if (r->bad)
    return -1;
  if (n > r->len - r->pos)
    return r_fail(r, "record runs past the end");
  if (n && !b)
    return r_fail(r, "a record but no record version");
  if (n && !(b->p = malloc(n)))
    return r_oom(r, n, "a record");
  if (n)
    memcpy(b->p, r->p + r->pos, n);
  if (b)
    b->len = n;
  r->pos += n;
  return 0;
}

static int unpack_body(rbuf *r, ferry__manifest *m) {
  if (!(m->backend = r_str(r)) || !(m->spec = r_str(r)) ||
      !(m->notes = r_str(r)))
    return -1;
  if (!*m->notes) {
    free(m->notes);
    m->notes = NULL;
  }
  uint32_t rv = r_u32(r);
  if (r->bad)
    return -1;
  if (rv > INT_MAX)
    return r_fail(r, "bad record version");
  m->record_version = (int)rv;
  uint32_t nvars = r_u32(r);
  if (r->bad)
    return -1;
  /* Each variable takes at least 17 bytes: never allocate more than the
   * buffer could describe. */
  if (nvars < 1 || nvars > INT_MAX || nvars > (r->len - r->pos) / 17)
    return r_fail(r, "bad variable count");
  if (!(m->vars = calloc(nvars, sizeof *m->vars)))
    return r_oom(r, nvars * sizeof *m->vars, "the variables");
  m->nvars = (int)nvars;
  for (int v = 0; v < m->nvars; v++) {
    ferry__var *x = &m->vars[v];
    if (!(x->name = r_str(r)))
      return -1;
    if (!*x->name)
      return r_fail(r, "empty variable name");
    for (int k = 0; k < v; k++)
      if (strcmp(m->vars[k].name, x->name) == 0)
        return r_fail(r, "variable named twice");
    unsigned dt = r_u8(r), sw = r_u8(r), nd = r_u8(r);
    r_u8(r);
    if (r->bad)
      return -1;
    if (dt >= FERRY_DTYPE_COUNT)
      return r_fail(r, "bad dtype");
    if (sw > 1)
      return r_fail(r, "bad swapped flag");
    if (nd > FERRY_MAX_DIMS - 1)
      return r_fail(r, "too many row dimensions");
    x->dtype = (ferry_dtype)dt;
    x->swapped = (int)sw;
    x->row_ndim = (int)nd;
    uint64_t bytes = ferry_dtype_size(x->dtype);
    for (unsigned k = 0; k < nd; k++) {
      int64_t d = r_nonneg(r, "bad row dimension");
      if (r->bad)
        return -1;
      if (d < 1 || bytes > (uint64_t)INT64_MAX / (uint64_t)d)
        return r_fail(r, "bad row dimension");
      x->row_shape[k] = d;
      bytes *= (uint64_t)d;
    }
    uint64_t rb = r_u64(r);
    if (r->bad)
      return -1;
    if (rb != bytes || rb == 0)
      return r_fail(r, "row size does not match dtype and shape");
    x->row_bytes = (size_t)rb;
    x->chunk_rows = r_nonneg(r, "bad storage chunk");
    uint64_t cb = r_u64(r);
    if (r->bad)
      return -1;
    if (cb > SIZE_MAX)
      return r_fail(r, "bad cache size");
    x->cache_bytes = (size_t)cb;
    if (!(x->storage = r_str(r)))
      return -1;
  }
  int64_t nparts = r_nonneg(r, "bad part count");
  int64_t total = r_nonneg(r, "bad sample count");
  if (r->bad)
    return -1;
  uint64_t per_part = 16 + (uint64_t)m->nvars * 24;
  if ((uint64_t)nparts > (r->len - r->pos) / per_part)
    return r_fail(r, "bad part count");
  if (nparts > 0 && !(m->parts = calloc((size_t)nparts, sizeof *m->parts)))
    return r_oom(r, (size_t)nparts * sizeof *m->parts, "the parts");
  m->nparts = nparts;
  int64_t sum = 0;
  for (int64_t p = 0; p < nparts; p++) {
    ferry__part *pt = &m->parts[p];
    pt->num_samples = r_nonneg(r, "bad part sample count");
    pt->first_sample = r_nonneg(r, "bad first sample");
    if (r->bad)
      return -1;
    if (pt->first_sample != sum || pt->num_samples > INT64_MAX - sum)
      return r_fail(r, "parts do not add up");
    sum += pt->num_samples;
    pt->paths = calloc((size_t)m->nvars, sizeof *pt->paths);
    pt->data_offset = calloc((size_t)m->nvars, sizeof *pt->data_offset);
    pt->file_size = calloc((size_t)m->nvars, sizeof *pt->file_size);
    if (!pt->paths || !pt->data_offset || !pt->file_size ||
        (m->record_version &&
         !(pt->rec = calloc((size_t)m->nvars, sizeof *pt->rec))))
      return r_oom(r,
                   (size_t)m->nvars *
                       (sizeof *pt->paths + sizeof *pt->data_offset +
                        sizeof *pt->file_size +
                        (m->record_version ? sizeof *pt->rec : 0)),
                   "a part's files");
    for (int v = 0; v < m->nvars; v++) {
      if (!(pt->paths[v] = r_str(r)))
        return -1;
      pt->data_offset[v] = r_nonneg(r, "bad data offset");
      pt->file_size[v] = r_nonneg(r, "bad file size");
      if (r_blob(r, pt->rec ? &pt->rec[v] : NULL) < 0)
        return -1;
    }
  }
  if (sum != total)
    return r_fail(r, "parts do not add up to the sample count");
  m->num_samples = total;
  return 0;
}

int ferry__manifest_unpack(const void *buf, size_t len, ferry__manifest *m,
                           ferry__err *err) {
  rbuf r;
  memset(&r, 0, sizeof r);
  memset(m, 0, sizeof *m);
  r.p = buf;
  r.len = buf ? len : 0;
  if (r.len < PACK_HEAD + 8 || memcmp(r.p, "FRYM", 4) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer of %zu bytes: not a ferry manifest",
                         len);
  if (r.p[4] != PACK_VERSION)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: version %u, this ferry reads %d",
                         r.p[4], PACK_VERSION);
  r.pos = 8;
  uint64_t total = r_u64(&r);
  if (total != len)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: holds %zu bytes but says %llu", len,
                         (unsigned long long)total);
  uint64_t sum = 0;
  for (size_t i = 0; i < 8; i++)
    sum |= (uint64_t)r.p[len - 8 + i] << (8 * i);
  if (sum != ferry__fnv1a(FERRY__FNV_INIT, r.p, len - 8))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer: checksum mismatch (corrupted)");
  r.len = len - 8; /* the body ends where the checksum starts */
  int rc = unpack_body(&r, m);
  if (rc == 0 && r.pos != r.len)
    rc = r_fail(&r, "unexpected bytes after the last part");
  if (rc < 0) {
    ferry__manifest_free(m);
    if (r.oom)
      return ferry__oom(err, -1, r.oom_bytes,
                        "%s of the manifest buffer (at byte %zu of %zu)",
                        r.bad ? r.bad : "?", r.bad_pos, len);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest buffer corrupt at byte %zu: %s", r.bad_pos,
                         r.bad ? r.bad : "?");
  }
  m->hash = ferry__manifest_hash(m);
  return 0;
}

/* ---- JSON ------------------------------------------------------------- */

/*
 * The saved manifest (written by ferry_manifest_save, read back with the
 * manifest option):
 *
 *   {"ferry_manifest": 1, "backend": "npy", "spec": "data/train",
 *    "num_samples": 97,
 *    "vars": [{"name": "x", "dtype": "float32", "swapped": false,
 *              "row_shape": [4]}],
 *    "parts": [{"num_samples": 97,
 *               "files": [{"path": "data/train/x.npy", "data_offset": 128,
 *                          "file_size": 1680}]}]}
 *
 * "files" lists one entry per variable, in the order of "vars".  A backend
 * that keeps records (the zarr backend) adds "record_version": N at the top
 * and "record": "HEX" (its bytes, two lowercase hex digits each) to each
 * file; a manifest whose record version is not the backend's is refused.
 * "num_samples" at the top is informational; loading recomputes it.
 */
/* o[key] = the bytes of b in lowercase hex; nonzero on failure. */
static int set_hex(json_t *o, const char *key, const ferry__blob *b) {
  static const char digit[] = "0123456789abcdef";
  if (b->len > (SIZE_MAX - 1) / 2)
    return -1;
  char *t = malloc(2 * b->len + 1);
  if (!t)
    return -1;
  for (size_t i = 0; i < b->len; i++) {
    t[2 * i] = digit[b->p[i] >> 4];
    t[2 * i + 1] = digit[b->p[i] & 15];
  }
  t[2 * b->len] = '\0';
  int rc = json_object_set_new(o, key, json_string(t));
  free(t);
  return rc;
}

/* The hex string s into b; -1 when it is not an even run of hex digits,
 * -2 out of memory. */
static int get_hex(const char *s, ferry__blob *b) {
  size_t n = strlen(s);
  if (n == 0 || n % 2)
    return -1;
  if (!(b->p = malloc(n / 2)))
    return -2;
  b->len = n / 2;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int x = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (x < 0)
      return -1; /* b is freed with the manifest */
    if (i % 2 == 0)
      b->p[i / 2] = (unsigned char)(x << 4);
    else
      b->p[i / 2] |= (unsigned char)x;
  }
  return 0;
}

int ferry__manifest_save_json(const ferry__manifest *m, const char *path,
                              ferry__err *err) {
  int bad = 0, rc = 0;
  char *text = NULL;
  FILE *f = NULL;
  json_t *root = json_object(), *vars = json_array(), *parts = json_array();
  bad |= !root || !vars || !parts;
  if (!bad) {
    bad |= json_object_set_new(root, "ferry_manifest", json_integer(1));
    bad |= json_object_set_new(root, "backend", json_string(m->backend));
    bad |= json_object_set_new(root, "spec", json_string(m->spec));
    if (m->notes)
      bad |= json_object_set_new(root, "notes", json_string(m->notes));
    bad |= json_object_set_new(root, "num_samples",
                               json_integer((json_int_t)m->num_samples));
    if (m->record_version)
      bad |= json_object_set_new(root, "record_version",
                                 json_integer(m->record_version));
  }
  for (int v = 0; !bad && v < m->nvars; v++) {
    const ferry__var *x = &m->vars[v];
    json_t *o = json_object(), *shape = json_array();
    bad |= !o || !shape;
    for (int k = 0; !bad && k < x->row_ndim; k++)
      bad |= json_array_append_new(shape,
                                   json_integer((json_int_t)x->row_shape[k]));
    if (!bad) {
      bad |= json_object_set_new(o, "name", json_string(x->name));
      bad |= json_object_set_new(o, "dtype",
                                 json_string(ferry_dtype_name(x->dtype)));
      bad |= json_object_set_new(o, "swapped", json_boolean(x->swapped));
      bad |= json_object_set_new(o, "row_shape", shape);
      shape = NULL;
      bad |= json_object_set_new(o, "chunk_rows",
                                 json_integer((json_int_t)x->chunk_rows));
      bad |= json_object_set_new(o, "cache_bytes",
                                 json_integer((json_int_t)x->cache_bytes));
      if (x->storage)
        bad |= json_object_set_new(o, "storage", json_string(x->storage));
      bad |= json_array_append_new(vars, o);
      o = NULL;
    }
    json_decref(o);
    json_decref(shape);
  }
  for (int64_t p = 0; !bad && p < m->nparts; p++) {
    const ferry__part *pt = &m->parts[p];
    json_t *o = json_object(), *files = json_array();
    bad |= !o || !files;
    for (int v = 0; !bad && v < m->nvars; v++) {
      json_t *fo = json_object();
      bad |= !fo;
      if (!bad) {
        bad |= json_object_set_new(fo, "path", json_string(pt->paths[v]));
        bad |= json_object_set_new(
            fo, "data_offset", json_integer((json_int_t)pt->data_offset[v]));
        bad |= json_object_set_new(fo, "file_size",
                                   json_integer((json_int_t)pt->file_size[v]));
        if (pt->rec && pt->rec[v].len)
          bad |= set_hex(fo, "record", &pt->rec[v]);
        bad |= json_array_append_new(files, fo);
      } else {
        json_decref(fo);
      }
    }
    if (!bad) {
      bad |= json_object_set_new(o, "num_samples",
                                 json_integer((json_int_t)pt->num_samples));
      bad |= json_object_set_new(o, "files", files);
      files = NULL;
      bad |= json_array_append_new(parts, o);
      o = NULL;
    }
    json_decref(o);
    json_decref(files);
  }
  if (!bad) {
    bad |= json_object_set_new(root, "vars", vars);
    vars = NULL;
    bad |= json_object_set_new(root, "parts", parts);
    parts = NULL;
  }
  /* Strings that are not UTF-8 (a path in another encoding) make
   * json_string return NULL too; say so rather than "out of memory". */
  if (bad || !(text = json_dumps(root, JSON_INDENT(2)))) {
    rc = ferry__seterr(err, FERRY_EIO,
                       "manifest %s: cannot encode the manifest as JSON "
                       "(out of memory, or a name or path is not UTF-8)",
                       path);
    goto cleanup;
  }
  if (!(f = fopen(path, "w"))) {
    rc = ferry__seterr(err,
                       errno == EACCES || errno == EPERM || errno == EROFS
                           ? FERRY_EACCES
                           : FERRY_EIO,
                       "manifest %s: cannot create: %s", path, strerror(errno));
    goto cleanup;
  }
  size_t n = strlen(text);
  int wrote = fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF;
  int closed = fclose(f) == 0;
  f = NULL;
  if (!wrote || !closed)
    rc = ferry__seterr(err, FERRY_EIO, "manifest %s: write failed: %s", path,
                       strerror(errno));
cleanup:
  free(text);
  json_decref(root);
  json_decref(vars);
  json_decref(parts);
  return rc;
}

static int missing(ferry__err *err, const char *file, const char *key) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "manifest %s: key '%s' is missing or invalid", file,
                       key);
}

/* An integer member >= min; FERRY_EFORMAT naming the key otherwise. */
static int get_int(json_t *o, const char *k, int64_t min, int64_t *out,
                   const char *file, const char *key, ferry__err *err) {
  json_t *v = json_object_get(o, k);
  if (!json_is_integer(v) || json_integer_value(v) < min)
    return missing(err, file, key);
  *out = (int64_t)json_integer_value(v);
  return 0;
}

/* The top level: format version, backend (compiled in, same record
 * version), spec, notes; the arrays of variables and parts are checked to
 * be arrays.  *be receives the backend. */
static int load_top(json_t *root, const char *path, ferry__manifest *m,
                    const ferry__backend **be, ferry__err *err) {
  int64_t version = 0, rv = 0;
  int rc;
  if (!json_is_object(root))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest %s: the top level is not a JSON object",
                         path);
  if ((rc = get_int(root, "ferry_manifest", 0, &version, path, "ferry_manifest",
                    err)) < 0)
    return rc;
  if (version != 1)
    return ferry__seterr(
        err, FERRY_ENOTSUP,
        "manifest %s: version %lld; this ferry reads version 1", path,
        (long long)version);
  json_t *jb = json_object_get(root, "backend");
  json_t *js = json_object_get(root, "spec");
  json_t *jv = json_object_get(root, "vars");
  json_t *jn = json_object_get(root, "notes"); /* optional */
  if (!json_is_string(jb))
    return missing(err, path, "backend");
  if (!json_is_string(js))
    return missing(err, path, "spec");
  if (jn && !json_is_string(jn))
    return missing(err, path, "notes");
  if (jn && !(m->notes = strdup(json_string_value(jn))))
    return ferry__oom(err, -1, strlen(json_string_value(jn)) + 1,
                      "the notes of manifest %s", path);
  if (!json_is_array(jv) || json_array_size(jv) < 1 ||
      json_array_size(jv) > INT_MAX)
    return missing(err, path, "vars");
  if (!json_is_array(json_object_get(root, "parts")))
    return missing(err, path, "parts");
  if (!(*be = ferry__backend_find(json_string_value(jb))))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "manifest %s: backend '%s' is not compiled into this "
                         "ferry",
                         path, json_string_value(jb));
  if (json_object_get(root, "record_version") &&
      (rc = get_int(root, "record_version", 0, &rv, path, "record_version",
                    err)) < 0)
    return rc;
  if (rv != (*be)->record_version)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "manifest %s: its %s records are version %lld but "
                         "this ferry's %s backend reads version %d (the "
                         "manifest was saved by another ferry): scan the "
                         "dataset again and save a new manifest",
                         path, (*be)->name, (long long)rv, (*be)->name,
                         (*be)->record_version);
  m->record_version = (int)rv;
  if (!(m->backend = strdup(json_string_value(jb))) ||
      !(m->spec = strdup(json_string_value(js))) ||
      !(m->vars = calloc(json_array_size(jv), sizeof *m->vars)))
    return ferry__oom(
        err, -1,
        strlen(json_string_value(jb)) + strlen(json_string_value(js)) + 2 +
            json_array_size(jv) * sizeof *m->vars,
        "the %zu variables of manifest %s", json_array_size(jv), path);
  m->nvars = (int)json_array_size(jv);
  return 0;
}

/* vars[v]: name (unique), dtype, byte order, row shape (its byte count
 * checked for overflow), and the optional storage layout. */
static int load_var(json_t *o, int v, const char *path, ferry__manifest *m,
                    ferry__err *err) {
  char key[128];
  ferry__var *x = &m->vars[v];
  json_t *jn = json_object_get(o, "name"), *jd = json_object_get(o, "dtype");
  json_t *jw = json_object_get(o, "swapped");
  json_t *jr = json_object_get(o, "row_shape");
  snprintf(key, sizeof key, "vars[%d].name", v);
  if (!json_is_string(jn) || !*json_string_value(jn))
    return missing(err, path, key);
  if (!(x->name = strdup(json_string_value(jn))))
    return ferry__oom(err, -1, strlen(json_string_value(jn)) + 1,
                      "%s of manifest %s", key, path);
  for (int k = 0; k < v; k++)
    if (strcmp(m->vars[k].name, x->name) == 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "manifest %s: variable '%s' is listed twice", path,
                           x->name);
  snprintf(key, sizeof key, "vars[%d].dtype", v);
  if (!json_is_string(jd) ||
      ferry__dtype_from_name(json_string_value(jd), &x->dtype) != 0)
    return missing(err, path, key);
  snprintf(key, sizeof key, "vars[%d].swapped", v);
  if (json_is_boolean(jw))
    x->swapped = json_is_true(jw);
  else if (json_is_integer(jw) &&
           (json_integer_value(jw) == 0 || json_integer_value(jw) == 1))
    x->swapped = (int)json_integer_value(jw);
  else
    return missing(err, path, key);
  snprintf(key, sizeof key, "vars[%d].row_shape", v);
  if (!json_is_array(jr) || json_array_size(jr) > FERRY_MAX_DIMS - 1)
    return missing(err, path, key);
  x->row_ndim = (int)json_array_size(jr);
  int64_t bytes = (int64_t)ferry_dtype_size(x->dtype);
  for (int k = 0; k < x->row_ndim; k++) {
    json_t *d = json_array_get(jr, (size_t)k);
    if (!json_is_integer(d) || json_integer_value(d) < 1 ||
        bytes > INT64_MAX / json_integer_value(d))
      return missing(err, path, key);
    x->row_shape[k] = (int64_t)json_integer_value(d);
    bytes *= x->row_shape[k];
  }
  x->row_bytes = (size_t)bytes;
  /* Storage layout: optional (manifests saved before it was recorded). */
  json_t *jc = json_object_get(o, "chunk_rows"),
         *jcache = json_object_get(o, "cache_bytes"),
         *jstore = json_object_get(o, "storage");
  if ((jc && (!json_is_integer(jc) || json_integer_value(jc) < 0)) ||
      (jcache &&
       (!json_is_integer(jcache) || json_integer_value(jcache) < 0)) ||
      (jstore && !json_is_string(jstore))) {
    snprintf(key, sizeof key, "vars[%d].chunk_rows/cache_bytes/storage", v);
    return missing(err, path, key);
  }
  x->chunk_rows = jc ? (int64_t)json_integer_value(jc) : 0;
  x->cache_bytes = jcache ? (size_t)json_integer_value(jcache) : 0;
  if (jstore && !(x->storage = strdup(json_string_value(jstore))))
    return ferry__oom(err, -1, strlen(json_string_value(jstore)) + 1,
                      "vars[%d].storage of manifest %s", v, path);
  return 0;
}

/* parts[p].files[v]: path, data offset, file size, the optional backend
 * record; with check_sizes, the rows must fit in the file. */
static int load_file(json_t *fo, size_t p, int v, const char *path,
                     ferry__manifest *m, int check_sizes, ferry__err *err) {
  char key[128];
  ferry__part *pt = &m->parts[p];
  json_t *jpath = json_object_get(fo, "path");
  int rc;
  snprintf(key, sizeof key, "parts[%zu].files[%d].path", p, v);
  if (!json_is_string(jpath))
    return missing(err, path, key);
  if (!(pt->paths[v] = strdup(json_string_value(jpath))))
    return ferry__oom(err, -1, strlen(json_string_value(jpath)) + 1,
                      "%s of manifest %s", key, path);
  snprintf(key, sizeof key, "parts[%zu].files[%d].data_offset", p, v);
  if ((rc = get_int(fo, "data_offset", 0, &pt->data_offset[v], path, key,
                    err)) < 0)
    return rc;
  snprintf(key, sizeof key, "parts[%zu].files[%d].file_size", p, v);
  if ((rc = get_int(fo, "file_size", 0, &pt->file_size[v], path, key, err)) < 0)
    return rc;
  json_t *jrec = json_object_get(fo, "record"); /* optional */
  snprintf(key, sizeof key, "parts[%zu].files[%d].record", p, v);
  int hx = 0;
  if (jrec && (!json_is_string(jrec) || !pt->rec ||
               (hx = get_hex(json_string_value(jrec), &pt->rec[v])) == -1))
    return missing(err, path, key);
  if (hx == -2)
    return ferry__oom(err, -1, strlen(json_string_value(jrec)) / 2,
                      "%s of manifest %s", key, path);
  /* num_samples * row_bytes fits: both bounded, checked as a quotient. */
  int64_t rb = (int64_t)m->vars[v].row_bytes;
  if (check_sizes &&
      (pt->num_samples > (INT64_MAX - pt->data_offset[v]) / rb ||
       pt->data_offset[v] + pt->num_samples * rb > pt->file_size[v]))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest %s: %s: %lld rows of %lld bytes at "
                         "offset %lld do not fit in its %lld bytes "
                         "(variable %s)",
                         path, pt->paths[v], (long long)pt->num_samples,
                         (long long)rb, (long long)pt->data_offset[v],
                         (long long)pt->file_size[v], m->vars[v].name);
  return 0;
}

/* parts[p]: its sample count (the running total checked for overflow in
 * *total) and one file per variable. */
static int load_part(json_t *o, size_t p, const char *path, ferry__manifest *m,
                     int check_sizes, int64_t *total, ferry__err *err) {
  char key[128];
  json_t *jf = json_object_get(o, "files");
  ferry__part *pt = &m->parts[p];
  int rc;
  snprintf(key, sizeof key, "parts[%zu].num_samples", p);
  if ((rc = get_int(o, "num_samples", 0, &pt->num_samples, path, key, err)) < 0)
    return rc;
  if (pt->num_samples > INT64_MAX - *total)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest %s: the sample count overflows at part %zu",
                         path, p);
  pt->first_sample = *total;
  *total += pt->num_samples;
  snprintf(key, sizeof key, "parts[%zu].files", p);
  if (!json_is_array(jf) || json_array_size(jf) != (size_t)m->nvars)
    return missing(err, path, key);
  pt->paths = calloc((size_t)m->nvars, sizeof *pt->paths);
  pt->data_offset = calloc((size_t)m->nvars, sizeof *pt->data_offset);
  pt->file_size = calloc((size_t)m->nvars, sizeof *pt->file_size);
  if (!pt->paths || !pt->data_offset || !pt->file_size ||
      (m->record_version &&
       !(pt->rec = calloc((size_t)m->nvars, sizeof *pt->rec))))
    return ferry__oom(err, -1,
                      (size_t)m->nvars *
                          (sizeof *pt->paths + sizeof *pt->data_offset +
                           sizeof *pt->file_size +
                           (m->record_version ? sizeof *pt->rec : 0)),
                      "the files of parts[%zu] of manifest %s", p, path);
  for (int v = 0; v < m->nvars; v++)
    if ((rc = load_file(json_array_get(jf, (size_t)v), p, v, path, m,
                        check_sizes, err)) < 0)
      return rc;
  return 0;
}

/* The parsed JSON of a saved manifest (path names it in errors) into m;
 * takes root. */
static int load_root(json_t *root, const char *path, const char *vars,
                     ferry__manifest *m, ferry__err *err) {
  const ferry__backend *be = NULL;
  int rc = 0;
  if ((rc = load_top(root, path, m, &be, err)) < 0)
    goto cleanup;
  json_t *jv = json_object_get(root, "vars");
  for (int v = 0; v < m->nvars; v++)
    if ((rc = load_var(json_array_get(jv, (size_t)v), v, path, m, err)) < 0)
      goto cleanup;
  json_t *jp = json_object_get(root, "parts");
  size_t nparts = json_array_size(jp);
  if (nparts > 0 && !(m->parts = calloc(nparts, sizeof *m->parts))) {
    rc = ferry__oom(err, -1, nparts * sizeof *m->parts,
                    "the %zu parts of manifest %s", nparts, path);
    goto cleanup;
  }
  m->nparts = (int64_t)nparts;
  int check_sizes = !(be->caps & FERRY__CAP_NOT_FLAT);
  int64_t total = 0;
  for (size_t p = 0; p < nparts; p++)
    if ((rc = load_part(json_array_get(jp, p), p, path, m, check_sizes, &total,
                        err)) < 0)
      goto cleanup;
  m->num_samples = total;
  if (total == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY,
                       "manifest %s: the dataset holds no sample", path);
    goto cleanup;
  }
  if ((rc = select_vars(m, vars, err)) < 0 ||
      (rc = ferry__manifest_check_servable(m, path, err)) < 0)
    goto cleanup;
  m->hash = ferry__manifest_hash(m);
cleanup:
  json_decref(root);
  if (rc < 0)
    ferry__manifest_free(m);
  return rc;
}

int ferry__manifest_load_json(const char *path, const char *vars,
                              ferry__manifest *m, ferry__err *err) {
  json_error_t je;
  memset(m, 0, sizeof *m);
  FILE *f = fopen(path, "r");
  if (!f)
    return ferry__seterr(err, ferry__errno_code(errno), "manifest %s: %s", path,
                         strerror(errno));
  json_t *root = json_loadf(f, 0, &je);
  fclose(f);
  if (!root)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest %s: invalid JSON at line %d, column %d: %s",
                         path, je.line, je.column, je.text);
  return load_root(root, path, vars, m, err);
}

int ferry__manifest_load_json_text(const char *text, size_t len,
                                   const char *path, const char *vars,
                                   ferry__manifest *m, ferry__err *err) {
  json_error_t je;
  memset(m, 0, sizeof *m);
  json_t *root = json_loadb(text, len, 0, &je);
  if (!root)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "manifest %s: invalid JSON at line %d, column %d: %s",
                         path, je.line, je.column, je.text);
  return load_root(root, path, vars, m, err);
}
