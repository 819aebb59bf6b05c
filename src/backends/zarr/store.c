/*
 * store.c - the layout of a Zarr store on disk: whether a metadata file
 * exists, the store's directory, an array's directory and chunk file
 * paths, an array's metadata read from its directory (.zarray parsed by
 * meta.c, zarr.json by v3.c), and the walk of a store's groups (v2 .zgroup
 * trees, v3 zarr.json trees, consolidated metadata) that lists its arrays with
 * their parsed metadata for describe (describe.c).  Rank 0, but for the chunk
 * paths the readers use.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zarr/meta.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define Z_MAX_DEPTH 32

/* ---- Store layout ----------------------------------------------------- */

/* A metadata "file" that exists as a FIFO, socket or device counts as
 * present: reading it then refuses it by name (ferry__open_regular) rather
 * than calling it missing. */
int ferry__zarr_exists_in(const char *dir, const char *name, int want_dir) {
  /* No allocation: a path that could not be allocated used to read as
   * "absent" (tests/loader/oom.sh), which may pick another layout. */
  struct stat st;
  int dfd = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return 0;
  int yes = fstatat(dfd, name, &st, 0) == 0 &&
            (want_dir ? S_ISDIR(st.st_mode) : !S_ISDIR(st.st_mode));
  close(dfd);
  return yes;
}

/* The store directory of a dataset string: a directory, or
 * file://PATH#mode=... (the path part, decoded no further). */
char *ferry__zarr_store_dir(const char *spec) {
  if (strncmp(spec, "file://", 7) == 0) {
    const char *p = spec + 7, *hash = strchr(p, '#');
    size_t n = hash ? (size_t)(hash - p) : strlen(p);
    char *s = malloc(n + 1);
    if (s) {
      memcpy(s, p, n);
      s[n] = '\0';
    }
    return s;
  }
  return strdup(spec);
}

static int is_chunk_name(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!(*s >= '0' && *s <= '9') && *s != '.')
      return 0;
  return 1;
}

/* Append array name (its directory dir); its metadata is parsed from dir,
 * or from meta (a v3 array's object of consolidated metadata) when given. */
static size_t add_array_meta(zarr_walk *w, const char *dir, const char *name,
                             json_t *meta) {
  if (w->n == w->cap) {
    int ncap = w->cap ? 2 * w->cap : 16;
    zarr_array *na = realloc(w->a, (size_t)ncap * sizeof *na);
    if (!na)
      return (size_t)ncap * sizeof *na;
    w->a = na;
    w->cap = ncap;
  }
  zarr_array *x = &w->a[w->n];
  memset(x, 0, sizeof *x);
  if (!(x->name = strdup(name)))
    return strlen(name) + 1;
  w->n++;
  if (meta) {
    char *p = ferry__join_path(dir, "zarr.json");
    if (!p)
      return strlen(dir) + 11;
    x->ok = ferry__zarr_parse_v3(meta, p, name, &x->z, &x->err) == 0;
    free(p);
  } else {
    x->ok = ferry__zarr_parse_zarray(dir, name, &x->z, &x->err) == 0;
  }
  if (x->ok && !x->z.v3 && ferry__zarr_exists_in(dir, ".zattrs", 0)) {
    /* xarray's _ARRAY_DIMENSIONS; a .zattrs that cannot be read only
     * loses the name. */
    char *p = ferry__join_path(dir, ".zattrs");
    ferry__err e;
    memset(&e, 0, sizeof e);
    json_t *j = p ? ferry__zarr_load_json(p, "", &e) : NULL;
    json_t *ad = j ? json_object_get(j, "_ARRAY_DIMENSIONS") : NULL;
    if (json_is_array(ad) && json_is_string(json_array_get(ad, 0)))
      snprintf(x->z.dim0, sizeof x->z.dim0, "%s",
               json_string_value(json_array_get(ad, 0)));
    json_decref(j);
    free(p);
  }
  return 0;
}

static size_t add_array(zarr_walk *w, const char *dir, const char *name) {
  return add_array_meta(w, dir, name, NULL);
}

/* node_type of dir/zarr.json: 1 array, 2 group, 0 unreadable or corrupt
 * (then read as an array, whose parse reports why).  Memory that runs out
 * here is not taken for an answer (tests/loader/oom.sh): the path needs no
 * allocation, and a zarr.json that cannot be held is 1, so the array's own
 * parse reads it again and reports what it finds (out of memory included),
 * never "the array has no zarr.json". */
static int v3_node_type(const char *dir) {
  char p[PATH_MAX];
  int n = snprintf(p, sizeof p, "%s/zarr.json", dir[0] ? dir : ".");
  if (n < 0 || (size_t)n >= sizeof p)
    return 0;
  ferry__err e;
  memset(&e, 0, sizeof e);
  json_t *j = ferry__zarr_load_json(p, "", &e);
  if (!j && e.code == FERRY_ENOMEM)
    return 1;
  json_t *nt = j ? json_object_get(j, "node_type") : NULL;
  int t = json_is_string(nt) && strcmp(json_string_value(nt), "group") == 0 ? 2
          : json_is_string(nt) && strcmp(json_string_value(nt), "array") == 0
              ? 1
              : 0;
  json_decref(j);
  return t;
}

/* Visit the group at dir (its path inside the store: prefix). */
static int walk_group(zarr_walk *w, const char *store, const char *dir,
                      const char *prefix, int depth, ferry__err *err) {
  DIR *d = opendir(dir);
  int rc = 0;
  if (!d)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "store %s: cannot list %s: %s", store, dir,
                         strerror(errno));
  if (depth > Z_MAX_DEPTH) {
    closedir(d);
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "store %s: groups nested deeper than %d", store,
                         Z_MAX_DEPTH);
  }
  /* Sorted names: the variable order is the same on every file system. */
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (nn == cap) {
      size_t ncap = cap ? 2 * cap : 32;
      char **nv = realloc(names, ncap * sizeof *nv);
      if (!nv) {
        rc = ferry__oom(err, -1, ncap * sizeof *nv,
                        "the list of %zu names in %s (store %s)", ncap, dir,
                        store);
        goto cleanup;
      }
      names = nv;
      cap = ncap;
    }
    if (!(names[nn] = strdup(e->d_name))) {
      rc = ferry__oom(err, -1, strlen(e->d_name) + 1,
                      "the name %s in %s (store %s)", e->d_name, dir, store);
      goto cleanup;
    }
    nn++;
  }
  for (size_t i = 1; i < nn; i++)
    for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
      char *t = names[k];
      names[k] = names[k - 1];
      names[k - 1] = t;
    }
  for (size_t i = 0; i < nn && rc == 0; i++) {
    char *sub = ferry__join_path(dir, names[i]);
    char *rel = *prefix ? ferry__join_path(prefix, names[i]) : strdup(names[i]);
    struct stat st;
    size_t want = 0;
    if (!sub || !rel) {
      rc = ferry__oom(
          err, -1, (!sub ? strlen(dir) : strlen(prefix)) + strlen(names[i]) + 2,
          "the path of %s in %s (store %s)", names[i], dir, store);
    } else if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (ferry__zarr_exists_in(sub, ".zarray", 0)) {
        if ((want = add_array(w, sub, rel)) != 0)
          rc = ferry__oom(err, -1, want, "array %s of store %s", rel, store);
      } else if (ferry__zarr_exists_in(sub, ".zgroup", 0)) {
        rc = walk_group(w, store, sub, rel, depth + 1, err);
      } else if (ferry__zarr_exists_in(sub, "zarr.json", 0)) {
        if (v3_node_type(sub) == 2)
          rc = walk_group(w, store, sub, rel, depth + 1, err);
        else if ((want = add_array(w, sub, rel)) != 0)
          rc = ferry__oom(err, -1, want, "array %s of store %s", rel, store);
      } else {
        /* Chunk files without metadata: an array whose .zarray is lost. */
        DIR *sd = opendir(sub);
        struct dirent *se;
        int chunks = 0;
        while (sd && !chunks && (se = readdir(sd)) != NULL)
          chunks = se->d_name[0] != '.' && is_chunk_name(se->d_name);
        if (sd)
          closedir(sd);
        if (chunks)
          rc = ferry__seterr(err, FERRY_EFORMAT,
                             "store %s: %s/.zarray is missing: %s holds "
                             "chunk files but no array metadata (not "
                             "written completely?)",
                             store, rel, rel);
      }
    }
    free(sub);
    free(rel);
  }
cleanup:
  for (size_t i = 0; i < nn; i++)
    free(names[i]);
  free(names);
  closedir(d);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The arrays of a v3 group's consolidated metadata (sorted by path), when
 * it has some: 1 when they were used, 0 when there are none. */
static int walk_consolidated(zarr_walk *w, const char *store, json_t *root,
                             ferry__err *err) {
  json_t *cm = json_object_get(root, "consolidated_metadata");
  json_t *md = json_is_object(cm) ? json_object_get(cm, "metadata") : NULL;
  if (!json_is_object(md))
    return 0;
  size_t n = json_object_size(md), k = 0;
  const char **keys = calloc(n ? n : 1, sizeof *keys);
  const char *key;
  json_t *val;
  int rc = 1;
  if (!keys)
    return ferry__oom(err, -1, (n ? n : 1) * sizeof *keys,
                      "the %zu consolidated metadata keys of store %s", n,
                      store);
  json_object_foreach(md, key, val) keys[k++] = key;
  qsort(keys, k, sizeof *keys, cmp_str);
  for (size_t i = 0; i < k && rc == 1; i++) {
    json_t *a = json_object_get(md, keys[i]);
    json_t *nt = json_is_object(a) ? json_object_get(a, "node_type") : NULL;
    if (json_is_string(nt) && strcmp(json_string_value(nt), "group") == 0)
      continue;
    char *dir = ferry__join_path(store, keys[i]);
    size_t want = !dir ? strlen(store) + strlen(keys[i]) + 2
                       : add_array_meta(w, dir, keys[i], a);
    if (want)
      rc = ferry__oom(err, -1, want, "array %s of store %s", keys[i], store);
    free(dir);
  }
  free(keys);
  return rc;
}

/* A Zarr v3 store (zarr.json at its root): one array, or a group whose
 * arrays come from its consolidated metadata (one read) or its tree. */
static int walk_v3(const char *store, zarr_walk *w, ferry__err *err) {
  char *zj = ferry__join_path(store, "zarr.json");
  if (!zj)
    return ferry__oom(err, -1, strlen(store) + 11, "the path of %s/zarr.json",
                      store);
  json_t *j = ferry__zarr_load_json(zj, "not a Zarr v3 node", err);
  json_t *nt = j ? json_object_get(j, "node_type") : NULL;
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (json_is_string(json_object_get(j, "zarr_format")))
    rc =
        ferry__seterr(err, FERRY_ENOTSUP, /* zarr_implementations' .zr3 */
                      "%s: zarr_format \"%.200s\" is a draft of Zarr v3 "
                      "older than its 1.0 (meta/ and data/ trees), which "
                      "ferry does not read; rewrite the store with a Zarr "
                      "v3 writer (zarr-python 3, zarrita, zarrs)",
                      zj, json_string_value(json_object_get(j, "zarr_format")));
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 3 ||
           !json_is_string(nt) ||
           (strcmp(json_string_value(nt), "array") != 0 &&
            strcmp(json_string_value(nt), "group") != 0))
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: corrupt metadata: zarr_format must be 3 and "
                       "node_type \"array\" or \"group\"",
                       zj);
  else if (strcmp(json_string_value(nt), "group") == 0) {
    rc = walk_consolidated(w, store, j, err);
    if (rc == 0)
      rc = walk_group(w, store, store, "", 0, err);
    else if (rc == 1)
      rc = 0;
  } else {
    rc = 1; /* a root array */
  }
  json_decref(j);
  free(zj);
  return rc;
}

/* Add the store itself as its one array, named after the directory. */
static int add_root_array(const char *store, zarr_walk *w, ferry__err *err) {
  const char *base = strrchr(store, '/');
  char *stem = strdup(base && base[1] ? base + 1 : store);
  if (!stem)
    return ferry__oom(err, -1, strlen(base && base[1] ? base + 1 : store) + 1,
                      "the array name of store %s", store);
  char *slash = strchr(stem, '/');
  if (slash)
    *slash = '\0';
  size_t n = strlen(stem);
  if (n > 5 && strcmp(stem + n - 5, ".zarr") == 0)
    stem[n - 5] = '\0';
  size_t want = add_array(w, store, stem);
  int rc =
      want ? ferry__oom(err, -1, want, "the root array of store %s", store) : 0;
  free(stem);
  w->root_array = 1;
  return rc;
}

int ferry__zarr_root_is_array(const char *store) {
  if (ferry__zarr_exists_in(store, ".zarray", 0))
    return 1;
  return !ferry__zarr_exists_in(store, ".zgroup", 0) &&
         ferry__zarr_exists_in(store, "zarr.json", 0) &&
         v3_node_type(store) == 1;
}

/* Check the text of a .zgroup (len bytes read from path). */
int ferry__zarr_parse_zgroup_text(const char *text, size_t len,
                                  const char *path, ferry__err *err) {
  json_t *j = ferry__zarr_json_text(text, len, path, err);
  int rc = 0;
  if (!j)
    rc = err ? err->code : FERRY_EFORMAT;
  else if (!json_is_integer(json_object_get(j, "zarr_format")) ||
           json_integer_value(json_object_get(j, "zarr_format")) != 2)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: zarr_format is not 2 (a .zgroup is Zarr v2 "
                       "metadata)",
                       path);
  json_decref(j);
  return rc;
}

/* Walk the store: its arrays, or the store itself when it is one array. */
int ferry__zarr_walk_store(const char *store, zarr_walk *w, ferry__err *err) {
  memset(w, 0, sizeof *w);
  if (!ferry__zarr_exists_in(store, ".zarray", 0) &&
      !ferry__zarr_exists_in(store, ".zgroup", 0) &&
      ferry__zarr_exists_in(store, "zarr.json", 0)) {
    int rc = walk_v3(store, w, err);
    return rc == 1 ? add_root_array(store, w, err) : rc;
  }
  if (ferry__zarr_exists_in(store, ".zarray", 0))
    return add_root_array(store, w, err);
  if (!ferry__zarr_exists_in(store, ".zgroup", 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s is not a Zarr store: it holds neither "
                         ".zgroup, .zarray nor zarr.json",
                         store);
  char *zg = ferry__join_path(store, ".zgroup");
  if (!zg)
    return ferry__oom(err, -1, strlen(store) + 9, "the path of %s/.zgroup",
                      store);
  size_t len = 0;
  char *text = ferry__zarr_read_meta(zg, "not a Zarr group", &len, err);
  int rc = text ? ferry__zarr_parse_zgroup_text(text, len, zg, err)
                : (err ? err->code : FERRY_EFORMAT);
  free(text);
  free(zg);
  if (rc == 0)
    rc = walk_group(w, store, store, "", 0, err);
  return rc;
}

void ferry__zarr_walk_free(zarr_walk *w) {
  for (int i = 0; i < w->n; i++)
    free(w->a[i].name);
  free(w->a);
  memset(w, 0, sizeof *w);
}

/* Path of the chunk file of chunk index idx (ndim entries). */
#define Z_KEY_MAX (Z_MAX_DIMS * 21 + 3)

/* The chunk key of idx in key[Z_KEY_MAX]; returns its length. */
static size_t chunk_key(const zmeta *z, const int64_t *idx, char *key) {
  const char *sep = z->sep == '/' ? "/" : ".";
  size_t used = 0;
  if (z->key_c)
    used += (size_t)snprintf(key, Z_KEY_MAX, "c");
  else if (z->ndim == 0)
    used += (size_t)snprintf(key, Z_KEY_MAX, "0");
  for (int d = 0; d < z->ndim; d++) {
    int64_t i = z->sharded ? idx[d] / z->per_shard[d] : idx[d];
    used += (size_t)snprintf(key + used, Z_KEY_MAX - used, "%s%lld",
                             d || z->key_c ? sep : "", (long long)i);
  }
  return used;
}

char *ferry__zarr_chunk_path(const char *adir, const zmeta *z,
                             const int64_t *idx) {
  char key[Z_KEY_MAX];
  chunk_key(z, idx, key);
  return ferry__join_path(adir, key);
}

size_t ferry__zarr_chunk_path_bytes(const char *adir, const zmeta *z,
                                    const int64_t *idx) {
  char key[Z_KEY_MAX];
  size_t a = strlen(adir);
  return a + (size_t)(a > 0 && adir[a - 1] != '/') + chunk_key(z, idx, key) + 1;
}

char *ferry__zarr_array_dir(const char *store, const char *name,
                            int root_array) {
  return root_array ? strdup(store) : ferry__join_path(store, name);
}

/* A v2 array without dimension_separator whose chunks are nested
 * directories (zarr-python's NestedDirectoryStore, fixture/nested_legacy):
 * the first chunk key is a directory, not a file.  Its chunks are read with
 * '/' rather than served as fill values. */
static void detect_nested(const char *adir, const char *text, zmeta *z) {
  if (z->sep != '.' || z->ndim < 2 || strstr(text, "dimension_separator"))
    return;
  int64_t idx[Z_MAX_DIMS] = {0};
  char *first = ferry__zarr_chunk_path(adir, z, idx);
  struct stat st;
  if (first && stat(first, &st) != 0) {
    char *dir = ferry__join_path(adir, "0");
    if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      z->sep = '/';
      z->nested_legacy = 1;
    }
    free(dir);
  }
  free(first);
}

/* Parse ARRAYDIR/.zarray (or ARRAYDIR/zarr.json, Zarr v3) into z.  Errors
 * name the store and the array. */
int ferry__zarr_parse_zarray(const char *adir, const char *label, zmeta *z,
                             ferry__err *err) {
  int v3 = !ferry__zarr_exists_in(adir, ".zarray", 0) &&
           ferry__zarr_exists_in(adir, "zarr.json", 0);
  char *path = ferry__join_path(adir, v3 ? "zarr.json" : ".zarray");
  memset(z, 0, sizeof *z);
  if (!path)
    return ferry__oom(err, -1, strlen(adir) + 11,
                      "the metadata path of array %s (%s)", label, adir);
  size_t len = 0;
  char *text =
      ferry__zarr_read_meta(path,
                            "the array has no .zarray (v2) nor zarr.json (v3) "
                            "(not written completely, or not a Zarr array)",
                            &len, err);
  int rc = !text ? (err ? err->code : FERRY_EFORMAT)
           : v3  ? ferry__zarr_parse_v3_text(text, len, path, label, z, err)
                : ferry__zarr_parse_zarray_text(text, len, path, label, z, err);
  if (rc == 0 && !v3)
    detect_nested(adir, text, z);
  free(text);
  free(path);
  return rc;
}
