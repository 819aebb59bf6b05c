/*
 * scan.c - the dataset scan: what rank 0 learns about a dataset before
 * anything is read.
 *
 * ferry__manifest_scan turns the dataset string of ferry_open into parts
 * (a spec of a backend's scheme such as "mem:", an @list file, a glob with
 * ** for any number of directories, or one plain path), asks the backend of
 * its scheme, else the first backend whose probe accepts each part, to
 * describe it, checks that all parts agree on their variables, and applies
 * the user's selection of variables (ferry__manifest_select_vars, which the
 * JSON load re-applies).  A mix string goes to dataset/mix.c.  The result
 * is the manifest of core/manifest.h, packed and broadcast by
 * dataset/share.c.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "dataset/dataset.h"
#include "dataset/mix.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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
 * other files are ignored and named in the note.  Tar shards (.tar:
 * WebDataset) are parts whatever their names, a lone one too, and shards
 * that disagree are an error (*shards set), not the directory's
 * variables.  A Zarr store (its metadata files) is never one.  Returns 1 with
 * the files in out and a note in *note, 0 when the directory stays one part
 * (its backend reads it as a whole: the .npy files of a directory are then its
 * variables). */
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
    /* d_type spares a stat per file (a folder of a million images):
     * only links and file systems that leave it unknown need one */
    int reg = e->d_type == DT_REG,
        look = e->d_type == DT_LNK || e->d_type == DT_UNKNOWN;
    char *full = look ? ferry__join_path(dir, n) : NULL;
    struct stat st;
    size_t need = sv_need(names, strlen(n));
    if (look && !full)
      rc = ferry__oom(err, -1, join_need(dir, n), "the path %s/%s", dir, n);
    else if ((reg || (look && stat(full, &st) == 0 && S_ISREG(st.st_mode))) &&
             sv_push(names, strdup(n)) < 0)
      rc = ferry__oom(err, -1, need, "the names in directory %s", dir);
    free(full);
  }
  closedir(d);
  return rc;
}

static int dir_parts(const char *dir, strvec *out, char **note, int *shards,
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
  /* Tar shards (WebDataset) are parts whatever their names, one too. */
  int tar = !store && rc == 0 && best >= 1 && strcmp(ext, ".tar") == 0;
  /* Image files (img_0001.jpg, ...) are the samples of an image folder
   * (backends/imgfolder.c), which reads the directory whole: never parts. */
  int images = rc == 0 && best >= 1 &&
               (strcasecmp(ext, ".jpg") == 0 || strcasecmp(ext, ".jpeg") == 0 ||
                strcasecmp(ext, ".png") == 0);
  int looks =
      tar || (!store && !images && rc == 0 && best >= FERRY__DIR_PARTS_MIN);
  for (size_t i = 0, seen = 0; looks && i < names.n; i++) {
    if (strcmp(ext_of(names.v[i]), ext) != 0) {
      /* a shard's sidecar (SHARD.tar.idx) is no other file: ferry reads
       * it, and a mix's hash still holds its sources' notes (decision
       * 0067: a mixed state saved before `ferry index` resumes after it) */
      size_t nl = strlen(names.v[i]);
      others +=
          !(tar && nl > 8 && strcmp(names.v[i] + nl - 8, ".tar.idx") == 0);
      continue;
    }
    looks = tar || seen == 0 || same_but_digits(names.v[first], names.v[i]);
    if (seen++ == 0)
      first = i;
    last = i;
  }
  if (looks) {
    char buf[640];
    snprintf(buf, sizeof buf,
             "directory %s: its %zu %s files (%s ... %s)%s: read as %zu "
             "parts, as the glob %s/*%s would be%s",
             dir, best, *ext ? ext : "extensionless", names.v[first],
             names.v[last], tar ? " are tar shards" : " differ only in digits",
             best, dir, ext, others ? " (other files ignored)" : "");
    *shards = tar;
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

/* A dataset whose index lists its parts (a backend's expand: MDS's
 * index.json): 1 with the parts in out, in the index's order, and *shards
 * set (parts that disagree are an error), 0 when no backend expands spec. */
static int expand_parts(const char *spec, strvec *out, char **note, int *shards,
                        ferry__err *err) {
  for (int i = 0; ferry__backends[i]; i++) {
    if (!ferry__backends[i]->expand)
      continue;
    char **v = NULL;
    int64_t n = 0;
    int rc = ferry__backends[i]->expand(spec, &v, &n, note, err);
    for (int64_t k = 0; k < n; k++)
      if (rc == 1 && sv_push(out, v[k]) < 0) {
        rc = ferry__oom(err, -1, sv_need(out, strlen(spec)),
                        "the parts of dataset %s", spec);
        for (int64_t q = k + 1; q < n; q++)
          free(v[q]);
        break;
      } else if (rc != 1) {
        free(v[k]);
      }
    free(v);
    if (rc != 0) {
      *shards = 1;
      return rc;
    }
  }
  return 0;
}

static int resolve(const char *spec, strvec *parts, char **note, int *shards,
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
  if (note) {
    int rc = expand_parts(spec, parts, note, shards, err);
    if (rc != 0)
      return rc < 0 ? rc : 0;
  }
  if (note && S_ISDIR(st.st_mode)) {
    int rc = dir_parts(spec, parts, note, shards, err);
    if (rc != 0)
      return rc < 0 ? rc : 0;
  }
  return sv_push(parts, strdup(spec)) < 0
             ? ferry__oom(err, -1, sv_need(parts, strlen(spec)), "dataset %s",
                          spec)
             : 0;
}

int ferry__scan_resolve(const char *spec, char ***paths, size_t *n, char **note,
                        int *shards, ferry__err *err) {
  strvec parts = {0};
  *paths = NULL;
  *n = 0;
  *note = NULL;
  *shards = 0;
  if (!spec || !*spec)
    return ferry__seterr(err, FERRY_EINVAL, "the dataset string is empty");
  int rc = resolve(spec, &parts, note, shards, err);
  if (rc < 0) {
    sv_free(&parts);
    free(*note);
    *note = NULL;
    return rc;
  }
  *paths = parts.v;
  *n = parts.n;
  return 0;
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
    if (a->ragged != b->ragged)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "part %s: variable '%s' is %s but %s in part %s",
                           path, a->name, b->ragged ? "ragged" : "dense",
                           a->ragged ? "ragged" : "dense", first);
    if (a->swapped != b->swapped)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "part %s: variable '%s' is stored %s-endian but "
                           "%s-endian in part %s",
                           path, a->name, b->swapped ? "non-native" : "native",
                           a->swapped ? "non-native" : "native", first);
    if (a->width != b->width)
      return ferry__seterr(err, FERRY_ESHAPE,
                           "part %s: variable '%s' holds rows of a matrix of "
                           "%lld columns but of %lld in part %s",
                           path, a->name, (long long)b->width,
                           (long long)a->width, first);
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

int ferry__scan_agree(const ferry__manifest *m, const ferry__manifest *sub,
                      ferry__err *err) {
  const char *path = sub->parts[0].paths[0];
  if (strcmp(m->backend, sub->backend) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "part %s is read by backend '%s' but part %s by '%s'",
                         path, sub->backend, m->parts[0].paths[0], m->backend);
  ferry__part_desc d;
  memset(&d, 0, sizeof d);
  d.nvars = sub->nvars;
  d.vars = sub->vars;
  return check_part(m, &d, path, err);
}

typedef struct part_arrays {
  char **paths;
  int64_t *offset, *size;
  ferry__blob *rec;
  int64_t **roff;
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

/* Part pt keeps the selected variables sel[0..nsel) of its nvars, in
 * that order, in the arrays of na (allocated: nothing here fails). */
static void select_part(const ferry__manifest *m, ferry__part *pt,
                        part_arrays *na, const int *sel, int nsel,
                        const int *keep, int first_rec) {
  int nvars = m->nvars;
  if (first_rec && pt->rec) {
    ferry__blob t = pt->rec[0];
    pt->rec[0] = pt->rec[sel[0]];
    pt->rec[sel[0]] = t;
  }
  for (int k = 0; k < nsel; k++) {
    na->paths[k] = pt->paths[sel[k]];
    na->offset[k] = pt->data_offset[sel[k]];
    na->size[k] = pt->file_size[sel[k]];
    if (pt->rec)
      na->rec[k] = pt->rec[sel[k]];
    if (pt->roff)
      na->roff[k] = pt->roff[sel[k]];
  }
  for (int v = 0; v < nvars; v++)
    if (!keep[v]) {
      free(pt->paths[v]);
      if (pt->rec && !ferry__manifest_owns_rec(m, pt->rec[v].p))
        free(pt->rec[v].p);
      if (pt->roff && !ferry__manifest_owns_roff(m, pt->roff[v]))
        free(pt->roff[v]);
    }
  free(pt->rec);
  pt->rec = na->rec;
  na->rec = NULL;
  free(pt->roff);
  pt->roff = na->roff;
  na->roff = NULL;
  free(pt->paths);
  free(pt->data_offset);
  free(pt->file_size);
  pt->paths = na->paths;
  pt->data_offset = na->offset;
  pt->file_size = na->size;
  na->paths = NULL;
  na->offset = NULL;
  na->size = NULL;
}

int ferry__manifest_select_vars(ferry__manifest *m, const char *vars,
                                ferry__err *err) {
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
    if (m->parts[p].roff &&
        !(na[p].roff = calloc((size_t)nsel, sizeof *na[p].roff))) {
      rc = ferry__oom(err, -1, (size_t)nsel * sizeof *na[p].roff,
                      "the offsets of the %d selected variables of part %s",
                      nsel, m->parts[p].paths[0]);
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
      free(m->vars[v].categories);
    }
  /* A mix keeps its source's record in the first variable's slot: it
   * moves to the first variable selected. */
  int first_rec = ferry__mix_is_manifest(m);
  for (int64_t p = 0; p < m->nparts; p++)
    select_part(m, &m->parts[p], &na[p], sel, nsel, keep, first_rec);
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
    free(na[p].roff);
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
  return ferry__scan_describe(spec, parts->v, parts->n, opts, m, disagree, err);
}

int ferry__scan_describe(const char *spec, char *const *paths, size_t n,
                         const ferry_options *opts, ferry__manifest *m,
                         int *disagree, ferry__err *err) {
  const strvec list = {(char **)paths, n, n}, *parts = &list;
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
    pt->roff = d.roff;
    d.roff = NULL;
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

int ferry__scan_finish(const char *spec, const char *vars, const char *note,
                       ferry__manifest *m, ferry__err *err) {
  int rc;
  if (note && (rc = add_note(m, note, err)) < 0)
    return rc;
  if (m->num_samples == 0)
    return ferry__seterr(err, FERRY_EEMPTY, "dataset %s holds no sample", spec);
  const ferry__backend *be = ferry__backend_find(m->backend);
  if (be && be->finish && (rc = be->finish(m, err)) < 0)
    return rc;
  if ((rc = ferry__manifest_select_vars(m, vars, err)) < 0 ||
      (rc = ferry__manifest_check_names(m, err)) < 0 ||
      (rc = ferry__manifest_check_servable(m, spec, err)) < 0)
    return rc;
  m->hash = ferry__manifest_hash(m);
  return 0;
}

int ferry__manifest_scan(const char *spec, const char *vars,
                         const ferry_options *opts, ferry__manifest *m,
                         ferry__err *err) {
  strvec parts = {0};
  char *note = NULL;
  int rc = 0, disagree = 0, shards = 0;
  memset(m, 0, sizeof *m);
  /* Several datasets as one (dataset/mix.c).  The mix option became the
   * dataset string in ferry_open (ferry__mix_dataset), not here. */
  if (ferry__mix_is(spec))
    return ferry__mix_scan(spec, vars, opts, m, err);
  if (!spec || !*spec)
    return ferry__seterr(err, FERRY_EINVAL, "the dataset string is empty");
  if ((rc = resolve(spec, &parts, &note, &shards, err)) < 0)
    goto cleanup;
  rc = scan_parts(spec, &parts, opts, m, &disagree, err);
  if (rc < 0 && disagree && note && !shards) {
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
  if (rc == 0)
    rc = ferry__scan_finish(spec, vars, note, m, err);
cleanup:
  free(note);
  sv_free(&parts);
  if (rc < 0)
    ferry__manifest_free(m);
  return rc;
}
