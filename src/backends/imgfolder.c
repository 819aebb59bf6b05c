/*
 * imgfolder.c - image folders (docs/images.md, decision 0059): a directory
 * tree of .jpg, .jpeg and .png files (the suffix in any case), one sample
 * per file, read as torchvision's ImageFolder reads it.  The classes are
 * the top-level subdirectories in sorted order, a sample's label the index
 * of its class; beneath a class the files are found recursively (symbolic
 * links followed, as os.walk(followlinks=True)) and ordered as ImageFolder
 * orders them: the directories by their path, the files of a directory by
 * name.  A folder whose top level holds image files and no subdirectory is
 * flat: its files, in name order, without a label.
 *
 * Variables: `image`, the file's bytes (ragged uint8, as webdataset's
 * `jpg`: a decode= view decodes it), and `label` (int64), for a folder of
 * classes.  The whole tree is one part; rank 0 lists it at describe with
 * threads (`threads`, else 16: listing is bound by the file system's
 * latency, not by the CPU) and stats every image file, since the ragged
 * offsets (the files' sizes) are needed at open.  The image's record is the
 * per-sample location table of decision 0057 in a third kind: each sample
 * names a file of a list the record carries (paths relative to the root),
 * read whole from offset 0, its size the ragged step; the label's record is
 * the table's kind 2 (the values themselves).  A read of rows [row, row+n)
 * opens each file, checks that its size is still the listing's and reads
 * it whole into its place, on the decode pool's lanes (at most
 * max_open_files of them, one open file each).
 *
 * Refused, naming the path: a top level with image files and
 * subdirectories both (ImageFolder would ignore the files), a class
 * without an image (ImageFolder refuses it too), files with the other
 * extensions ImageFolder reads (.bmp, .ppm, .pgm, .tif, .tiff, .webp:
 * ferry's decode reads JPEG and PNG), an image file of 0 bytes, one that is
 * not a regular file or cannot be stat'ed (a broken link), a directory that
 * cannot be listed, a link loop.  Other files are ignored, as ImageFolder
 * ignores them.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* d_type, DT_* */
#endif

#include "backends/imgfolder.h"
#include "backends/toolkit.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMG_REC_VERSION 1
/* The location table's kinds (decision 0057; imgfolder.h): 2 values, 3
 * files. */
enum { LOC_VALUES = FERRY__IMG_LOC_VALUES, LOC_FILES = FERRY__IMG_LOC_FILES };
/* A path below the root: at most this many bytes. */
enum { REL_MAX = FERRY__IMG_REL_MAX };
/* Listing threads when the threads option is 0 (auto), and at most. */
enum { LIST_THREADS_AUTO = 16, LIST_THREADS_MAX = 64 };
/* Image files stat'ed per listing job. */
enum { STAT_BATCH = 256 };

static int has_suffix_ci(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && strcasecmp(s + n - k, suf) == 0;
}

/* A file this backend reads: .jpg, .jpeg, .png, in any case (the test
 * ImageFolder makes: the lower-cased name ends with the suffix). */
static int is_image_name(const char *s) {
  return has_suffix_ci(s, ".jpg") || has_suffix_ci(s, ".jpeg") ||
         has_suffix_ci(s, ".png");
}

/* ImageFolder's other IMG_EXTENSIONS: it reads them, ferry refuses them. */
static int is_other_image_name(const char *s) {
  static const char *const x[] = {".ppm",  ".bmp",  ".pgm", ".tif",
                                  ".tiff", ".webp", NULL};
  for (int i = 0; x[i]; i++)
    if (has_suffix_ci(s, x[i]))
      return 1;
  return 0;
}

static int is_dot(const char *n) {
  return n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0));
}

/* The entry's type, following links: 'd' directory, 'f' regular, 'o'
 * other, 0 when it cannot be stat'ed. */
static int entry_type(const char *dir, const struct dirent *e) {
  if (e->d_type == DT_DIR)
    return 'd';
  if (e->d_type == DT_REG)
    return 'f';
  if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
    return 'o';
  char *p = ferry__join_path(dir, e->d_name);
  struct stat st;
  int t = p && stat(p, &st) == 0 ? (S_ISDIR(st.st_mode)   ? 'd'
                                    : S_ISREG(st.st_mode) ? 'f'
                                                          : 'o')
                                 : 0;
  free(p);
  return t;
}

/* An image file somewhere below dir, looking at no more than *budget
 * entries. */
static int image_below(const char *dir, int depth, long *budget) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int found = 0;
  for (struct dirent *e; !found && *budget > 0 && (e = readdir(d));) {
    if (is_dot(e->d_name))
      continue;
    (*budget)--;
    int t = entry_type(dir, e);
    if (t == 'f' && is_image_name(e->d_name))
      found = 1;
    else if (t == 'd' && depth < 16) {
      char *sub = ferry__join_path(dir, e->d_name);
      found = sub && image_below(sub, depth + 1, budget);
      free(sub);
    }
  }
  closedir(d);
  return found;
}

/* A directory holding image files, or subdirectories with image files
 * below them (within the first 10,000 entries looked at).  The backends
 * before this one in the registry (a directory of .npy files, a Zarr
 * store, a directory of one shard) have declined it, and dataset/scan.c
 * never splits a directory of image files into parts. */
static int img_probe(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  long budget = 10000;
  return image_below(path, 0, &budget);
}

/* ---- The listing (rank 0, threads) ------------------------------------ */

/* An image file of a directory: its size, -1 not stat'ed yet, -2 a
 * directory named like an image. */
typedef struct ifile {
  char *name;
  int64_t size;
} ifile;

/* A directory of the tree: a class directory or one below it (or the root
 * of a flat folder), with its image files. */
typedef struct dnode {
  char *rel; /* the path below the root ("" for the root) */
  int cls;   /* the class index, -1: a flat folder */
  struct dnode *parent;
  dev_t dev;
  ino_t ino;
  ifile *f; /* image files, in readdir order until sorted */
  size_t n, cap;
  char *other; /* the least name of another ImageFolder extension */
  int64_t nother, nignored;
  ferry__err *err; /* the first error (lowest file, -1: the directory) */
  int64_t err_at;
} dnode;

typedef struct ljob {
  dnode *d;
  size_t a, b; /* b > a: stat files [a, b); else list d */
} ljob;

typedef struct walk {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const char *root;
  ljob *q;
  size_t nq, qcap, pending;
  dnode **nodes;
  size_t nnodes, ncap;
  size_t oom; /* bytes of a failed allocation, 0: none */
} walk;

static void node_free(dnode *d) {
  if (!d)
    return;
  for (size_t i = 0; i < d->n; i++)
    free(d->f[i].name);
  free(d->f);
  free(d->rel);
  free(d->other);
  free(d->err);
  free(d);
}

/* "root/rel/name" (rel or name may be empty), malloc'd. */
static char *full_path(const char *root, const char *rel, const char *name) {
  size_t n = strlen(root) + strlen(rel) + strlen(name) + 3;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s%s%s%s%s", root, *rel ? "/" : "", rel, *name ? "/" : "",
             name);
  return p;
}

/* Keep err as d's error when it comes before the one it has (at: the file,
 * -1 the directory itself).  Under w->mu. */
static void node_fail(walk *w, dnode *d, int64_t at, const ferry__err *e) {
  pthread_mutex_lock(&w->mu);
  if (!d->err) {
    if (!(d->err = malloc(sizeof *d->err)))
      w->oom = sizeof *d->err;
    else {
      *d->err = *e;
      d->err_at = at;
    }
  } else if (at < d->err_at) {
    *d->err = *e;
    d->err_at = at;
  }
  pthread_mutex_unlock(&w->mu);
}

static void fail_oom(walk *w, size_t bytes) {
  pthread_mutex_lock(&w->mu);
  if (!w->oom)
    w->oom = bytes ? bytes : 1;
  pthread_mutex_unlock(&w->mu);
}

/* Queue a job (under w->mu). */
static int push_job(walk *w, ljob j) {
  if (w->nq == w->qcap) {
    size_t cap = w->qcap ? 2 * w->qcap : 64;
    ljob *q = realloc(w->q, cap * sizeof *q);
    if (!q) {
      w->oom = cap * sizeof *q;
      return -1;
    }
    w->q = q;
    w->qcap = cap;
  }
  w->q[w->nq++] = j;
  w->pending++;
  pthread_cond_signal(&w->cv);
  return 0;
}

/* A new directory below parent (or the first ones, parent NULL), queued
 * to be listed. */
static void add_dir(walk *w, dnode *parent, char *rel, int cls) {
  dnode *d = calloc(1, sizeof *d);
  if (!d || !rel) {
    free(d);
    free(rel);
    fail_oom(w, sizeof *d + REL_MAX);
    return;
  }
  d->rel = rel;
  d->cls = cls;
  d->parent = parent;
  d->err_at = -1;
  pthread_mutex_lock(&w->mu);
  if (w->nnodes == w->ncap) {
    size_t cap = w->ncap ? 2 * w->ncap : 64;
    dnode **v = realloc(w->nodes, cap * sizeof *v);
    if (v) {
      w->nodes = v;
      w->ncap = cap;
    }
  }
  if (w->nnodes < w->ncap) {
    w->nodes[w->nnodes++] = d;
    push_job(w, (ljob){d, 0, 0});
  } else {
    w->oom = (w->ncap + 64) * sizeof(dnode *);
    node_free(d);
  }
  pthread_mutex_unlock(&w->mu);
}

static char *rel_join(const char *rel, const char *name) {
  size_t n = strlen(rel) + strlen(name) + 2;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s%s%s", rel, *rel ? "/" : "", name);
  return p;
}

static int add_name(dnode *d, const char *name) {
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 16;
    ifile *v = realloc(d->f, cap * sizeof *v);
    if (!v)
      return -1;
    d->f = v;
    d->cap = cap;
  }
  if (!(d->f[d->n].name = strdup(name)))
    return -1;
  d->f[d->n++].size = -1;
  return 0;
}

/* List directory d: its image files (stat'ed by the jobs queued here), its
 * subdirectories (queued), the names it ignores. */
static void list_dir(walk *w, dnode *d) {
  ferry__err e;
  char *path = full_path(w->root, d->rel, "");
  if (!path) {
    fail_oom(w, strlen(w->root) + strlen(d->rel) + 3);
    return;
  }
  DIR *dir = opendir(path);
  struct stat st;
  if (!dir || fstat(dirfd(dir), &st) != 0) {
    ferry__seterr(&e, ferry__errno_code(errno),
                  "image folder %s: cannot list directory %s: %s", w->root,
                  path, strerror(errno));
    node_fail(w, d, -1, &e);
    if (dir)
      closedir(dir);
    free(path);
    return;
  }
  d->dev = st.st_dev;
  d->ino = st.st_ino;
  for (const dnode *a = d->parent; a; a = a->parent)
    if (a->dev == d->dev && a->ino == d->ino) {
      ferry__seterr(&e, FERRY_EFORMAT,
                    "image folder %s: directory %s is its own ancestor %s/%s "
                    "(a loop of symbolic links): remove the link",
                    w->root, path, w->root, a->rel);
      node_fail(w, d, -1, &e);
      closedir(dir);
      free(path);
      return;
    }
  int bad = 0;
  errno = 0;
  for (struct dirent *de; !bad && (de = readdir(dir)) != NULL; errno = 0) {
    const char *n = de->d_name;
    if (is_dot(n))
      continue;
    if (strlen(d->rel) + strlen(n) + 1 > REL_MAX) {
      ferry__seterr(&e, FERRY_ENOTSUP,
                    "image folder %s: the path %s/%s is longer than %d bytes",
                    w->root, path, n, REL_MAX);
      node_fail(w, d, -1, &e);
      bad = 1;
      break;
    }
    if (is_image_name(n)) { /* its type and size: the stat jobs */
      bad = add_name(d, n) != 0;
      if (bad)
        fail_oom(w, strlen(n) + 64);
      continue;
    }
    int t = entry_type(path, de);
    if (t == 'd')
      add_dir(w, d, rel_join(d->rel, n), d->cls);
    else if (t == 'f' && is_other_image_name(n)) {
      d->nother++;
      if (!d->other || strcmp(n, d->other) < 0) {
        free(d->other);
        if (!(d->other = strdup(n)))
          fail_oom(w, strlen(n) + 1);
      }
    } else
      d->nignored++;
  }
  if (!bad && errno) {
    ferry__seterr(&e, ferry__errno_code(errno),
                  "image folder %s: reading directory %s: %s", w->root, path,
                  strerror(errno));
    node_fail(w, d, -1, &e);
  }
  closedir(dir);
  free(path);
  pthread_mutex_lock(&w->mu);
  for (size_t a = 0; !bad && a < d->n; a += STAT_BATCH)
    if (push_job(w,
                 (ljob){d, a, a + STAT_BATCH < d->n ? a + STAT_BATCH : d->n}))
      break;
  pthread_mutex_unlock(&w->mu);
}

/* Stat image files [a, b) of d: their sizes. */
static void stat_files(walk *w, dnode *d, size_t a, size_t b) {
  ferry__err e;
  for (size_t i = a; i < b; i++) {
    char *p = full_path(w->root, d->rel, d->f[i].name);
    struct stat st, ls;
    if (!p) {
      fail_oom(w, strlen(w->root) + REL_MAX + 3);
      return;
    }
    if (stat(p, &st) != 0) {
      int broken = errno == ENOENT && lstat(p, &ls) == 0 && S_ISLNK(ls.st_mode);
      ferry__seterr(&e, ferry__errno_code(errno),
                    "image folder %s: file %s: %s%s", w->root, p,
                    strerror(errno),
                    broken ? " (a symbolic link to nothing)" : "");
      node_fail(w, d, (int64_t)i, &e);
    } else if (S_ISDIR(st.st_mode)) {
      d->f[i].size = -2; /* a directory named like an image */
      add_dir(w, d, rel_join(d->rel, d->f[i].name), d->cls);
    } else if (!S_ISREG(st.st_mode)) {
      ferry__seterr(&e, FERRY_EFORMAT,
                    "image folder %s: file %s is not a regular file (a FIFO, "
                    "socket or device named like an image)",
                    w->root, p);
      node_fail(w, d, (int64_t)i, &e);
    } else if (st.st_size == 0) {
      ferry__seterr(&e, FERRY_EFORMAT,
                    "image folder %s: file %s is empty (0 bytes): not an "
                    "image; remove it",
                    w->root, p);
      node_fail(w, d, (int64_t)i, &e);
    } else
      d->f[i].size = (int64_t)st.st_size;
    free(p);
  }
}

static void *worker(void *arg) {
  walk *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->nq == 0 && w->pending > 0)
      pthread_cond_wait(&w->cv, &w->mu);
    if (w->nq == 0)
      break;
    ljob j = w->q[--w->nq];
    pthread_mutex_unlock(&w->mu);
    if (j.b > j.a)
      stat_files(w, j.d, j.a, j.b);
    else
      list_dir(w, j.d);
    pthread_mutex_lock(&w->mu);
    if (--w->pending == 0)
      pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Run the queued jobs, and those they queue, on nthreads threads (the
 * caller's one of them). */
static void walk_run(walk *w, int nthreads) {
  pthread_t th[LIST_THREADS_MAX];
  int started = 0;
  for (int t = 1; t < nthreads && t < LIST_THREADS_MAX; t++)
    if (pthread_create(&th[started], NULL, worker, w) == 0)
      started++;
  worker(w);
  for (int t = 0; t < started; t++)
    pthread_join(th[t], NULL);
}

static int cmp_node(const void *a, const void *b) {
  const dnode *x = *(dnode *const *)a, *y = *(dnode *const *)b;
  if (x->cls != y->cls)
    return x->cls < y->cls ? -1 : 1;
  return strcmp(x->rel, y->rel);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const ifile *)a)->name, ((const ifile *)b)->name);
}

/* ---- Describe ----------------------------------------------------------- */

/* The listing threads: the threads option when positive, else
 * LIST_THREADS_AUTO. */
static int list_threads(const ferry_options *opts) {
  char v[32];
  long t = 0;
  if (opts && ferry_options_get(opts, "threads", v, sizeof v) == 0)
    t = strtol(v, NULL, 10);
  if (t <= 0)
    t = LIST_THREADS_AUTO;
  return t > LIST_THREADS_MAX ? LIST_THREADS_MAX : (int)t;
}

/* The top level of root: its subdirectories (the classes, sorted) into
 * *classes, or none and *nimages image files (a flat folder). */
static int top_level(const char *root, char ***classes, size_t *nclasses,
                     size_t *nimages, ferry__err *err) {
  *classes = NULL;
  *nclasses = *nimages = 0;
  DIR *d = opendir(root);
  if (!d)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "image folder %s: cannot list it: %s", root,
                         strerror(errno));
  size_t cap = 0;
  int rc = 0;
  char first_image[256] = "";
  for (struct dirent *e; !rc && (e = readdir(d)) != NULL;) {
    if (is_dot(e->d_name))
      continue;
    int t = entry_type(root, e);
    if (t == 'd') {
      if (*nclasses == cap) {
        size_t nc = cap ? 2 * cap : 64;
        char **v = realloc(*classes, nc * sizeof *v);
        if (!v) {
          rc = ferry__oom(err, -1, nc * sizeof *v, "the classes of %s", root);
          break;
        }
        *classes = v;
        cap = nc;
      }
      if (!((*classes)[*nclasses] = strdup(e->d_name)))
        rc = ferry__oom(err, -1, strlen(e->d_name) + 1, "the classes of %s",
                        root);
      else
        (*nclasses)++;
    } else if (is_image_name(e->d_name) &&
               (!*first_image || strcmp(e->d_name, first_image) < 0)) {
      snprintf(first_image, sizeof first_image, "%s", e->d_name);
      (*nimages)++;
    } else if (is_image_name(e->d_name))
      (*nimages)++;
  }
  closedir(d);
  if (!rc && *nclasses && *nimages)
    rc = ferry__seterr(
        err, FERRY_EFORMAT,
        "image folder %s holds %zu image file(s) (%s, ...) beside "
        "%zu subdirector(ies): torchvision's ImageFolder would "
        "read the subdirectories as classes and ignore the "
        "files; move the files into a class directory, or "
        "name a folder of files only (read without labels)",
        root, *nimages, first_image, *nclasses);
  if (!rc && *nclasses)
    qsort(*classes, *nclasses, sizeof **classes, cmp_str);
  return rc;
}

/* The part's two records and offsets from the sorted listing. */
static int fill_desc(const char *root, dnode **nodes, size_t nnodes,
                     int labelled, int64_t n, int nthreads, int64_t ignored,
                     size_t nclasses, ferry__part_desc *out, ferry__err *err) {
  int nv = labelled ? 2 : 1;
  out->vars = calloc((size_t)nv, sizeof *out->vars);
  out->paths = calloc((size_t)nv, sizeof *out->paths);
  out->data_offset = calloc((size_t)nv, sizeof *out->data_offset);
  out->file_size = calloc((size_t)nv, sizeof *out->file_size);
  out->rec = calloc((size_t)nv, sizeof *out->rec);
  out->roff = calloc((size_t)nv, sizeof *out->roff);
  int64_t *labels = labelled ? malloc((size_t)(n ? n : 1) * 8) : NULL;
  int64_t *ro = malloc(((size_t)n + 1) * 8);
  int rc = 0;
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec || !out->roff || (labelled && !labels) || !ro) {
    free(labels);
    free(ro);
    return ferry__oom(err, -1, ((size_t)n + 1) * 16,
                      "the samples of image folder %s", root);
  }
  out->nvars = nv;
  out->num_samples = n;
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u8(&w, LOC_FILES);
  ferry__rec_put_u64(&w, (uint64_t)n);
  ferry__rec_put_u64(&w, (uint64_t)n);
  int64_t k = 0;
  ro[0] = 0;
  for (size_t i = 0; i < nnodes; i++)
    for (size_t f = 0; f < nodes[i]->n; f++) {
      if (nodes[i]->f[f].size < 0)
        continue;
      const char *rel = nodes[i]->rel, *name = nodes[i]->f[f].name;
      size_t a = strlen(rel), b = strlen(name);
      ferry__rec_put_u32(&w, (uint32_t)(a + (a ? 1 : 0) + b));
      ferry__rec_put(&w, rel, a);
      if (a)
        ferry__rec_put(&w, "/", 1);
      ferry__rec_put(&w, name, b);
      ro[k + 1] = ro[k] + nodes[i]->f[f].size;
      if (labels)
        labels[k] = nodes[i]->cls;
      k++;
    }
  for (int64_t i = 0; i < n; i++) /* one file per sample, in order */
    ferry__rec_put_u64(&w, (uint64_t)i);
  rc = ferry__rec_blob(&w, &out->rec[0]);
  out->roff[0] = ro;
  ro = NULL;
  if (!rc && labelled) {
    ferry__rec_w_init(&w);
    ferry__rec_put_u8(&w, LOC_VALUES);
    ferry__rec_put_u64(&w, (uint64_t)n);
    ferry__rec_put_u64s(&w, labels, (size_t)n);
    rc = ferry__rec_blob(&w, &out->rec[1]);
  }
  free(labels);
  for (int v = 0; !rc && v < nv; v++) {
    ferry__var *var = &out->vars[v];
    var->name = strdup(v ? "label" : "image");
    var->dtype = v ? FERRY_INT64 : FERRY_UINT8;
    var->ragged = v ? 0 : 1;
    var->row_bytes = v ? 8 : 1;
    var->storage = strdup(v ? "the index of the class directory in sorted "
                              "order (torchvision ImageFolder's rule)"
                            : "image files (.jpg, .jpeg, .png), each read "
                              "whole: the encoded bytes");
    out->paths[v] = strdup(root);
    out->data_offset[v] = 0;
    out->file_size[v] = v ? 0 : out->roff[0][n];
    if (!var->name || !var->storage || !out->paths[v])
      rc = FERRY_ENOMEM;
  }
  char notes[512];
  if (labelled)
    snprintf(notes, sizeof notes,
             "imagefolder %s: %lld images in %zu classes (ImageFolder's "
             "order), %lld other files ignored; listed with %d threads",
             root, (long long)n, nclasses, (long long)ignored, nthreads);
  else
    snprintf(notes, sizeof notes,
             "imagefolder %s: %lld images, a flat folder (no label), %lld "
             "other files ignored; listed with %d threads",
             root, (long long)n, (long long)ignored, nthreads);
  if (!rc && !(out->notes = strdup(notes)))
    rc = FERRY_ENOMEM;
  if (rc == FERRY_ENOMEM)
    return ferry__oom(err, -1, (size_t)n * 48,
                      "the location table of image folder %s", root);
  return rc;
}

/* After the walk: the first error in the listing's order, else the
 * refusals of the whole tree (other extensions, empty classes). */
static int check_tree(const char *root, dnode **nodes, size_t nnodes,
                      char **classes, size_t nclasses, int64_t *n,
                      int64_t *ignored, ferry__err *err) {
  for (size_t i = 0; i < nnodes; i++)
    if (nodes[i]->err) {
      *err = *nodes[i]->err;
      return err->code;
    }
  int64_t nother = 0;
  const dnode *other = NULL;
  for (size_t i = 0; i < nnodes; i++) {
    nother += nodes[i]->nother;
    if (nodes[i]->nother && !other)
      other = nodes[i];
    *ignored += nodes[i]->nignored;
  }
  if (nother)
    return ferry__seterr(
        err, FERRY_ENOTSUP,
        "image folder %s: %lld file(s) with another of ImageFolder's "
        "extensions "
        "(.bmp, .ppm, .pgm, .tif, .tiff, .webp), the first %s%s%s: ferry "
        "reads .jpg, .jpeg and .png (and would not serve the samples "
        "ImageFolder serves without them); convert them or move them out",
        root, (long long)nother, other->rel, *other->rel ? "/" : "",
        other->other ? other->other : "?");
  char *have = calloc(nclasses ? nclasses : 1, 1);
  if (!have)
    return ferry__oom(err, -1, nclasses, "the classes of %s", root);
  *n = 0;
  for (size_t i = 0; i < nnodes; i++)
    for (size_t f = 0; f < nodes[i]->n; f++)
      if (nodes[i]->f[f].size >= 0) {
        (*n)++;
        if (nodes[i]->cls >= 0)
          have[nodes[i]->cls] = 1;
      }
  char empty[600] = "";
  size_t nempty = 0, used = 0;
  for (size_t c = 0; c < nclasses; c++)
    if (!have[c] && nempty++ < 8 && used < sizeof empty)
      used += (size_t)snprintf(empty + used, sizeof empty - used, "%s%s",
                               nempty > 1 ? ", " : "", classes[c]);
  free(have);
  if (nempty)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "image folder %s: %zu class director%s without a "
                         ".jpg, .jpeg or .png file: %s%s (torchvision's "
                         "ImageFolder refuses them too: \"Found no valid "
                         "file for the classes\"); remove them",
                         root, nempty, nempty == 1 ? "y" : "ies", empty,
                         nempty > 8 ? ", ..." : "");
  if (*n == 0)
    return ferry__seterr(err, FERRY_EEMPTY,
                         "image folder %s holds no .jpg, .jpeg or .png file",
                         root);
  return 0;
}

static int img_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  char **classes = NULL;
  size_t nclasses = 0, nimages = 0;
  int64_t n = 0, ignored = 0;
  int nthreads = list_threads(opts);
  walk w;
  memset(&w, 0, sizeof w);
  w.root = path;
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  int rc = top_level(path, &classes, &nclasses, &nimages, err);
  if (rc)
    goto done;
  if (nclasses == 0)
    add_dir(&w, NULL, strdup(""), -1);
  for (size_t c = 0; c < nclasses; c++)
    add_dir(&w, NULL, strdup(classes[c]), (int)c);
  walk_run(&w, nthreads);
  for (size_t i = 0; !w.oom && i < w.nnodes; i++) /* names are unique */
    if (w.nodes[i]->n > 1) /* (a directory without files has no array) */
      qsort(w.nodes[i]->f, w.nodes[i]->n, sizeof *w.nodes[i]->f, cmp_file);
  if (w.oom) {
    rc = ferry__oom(err, -1, w.oom, "listing image folder %s", path);
    goto done;
  }
  if (w.nnodes > 1)
    qsort(w.nodes, w.nnodes, sizeof *w.nodes, cmp_node);
  rc =
      check_tree(path, w.nodes, w.nnodes, classes, nclasses, &n, &ignored, err);
  if (!rc)
    rc = fill_desc(path, w.nodes, w.nnodes, nclasses > 0, n, nthreads, ignored,
                   nclasses, out, err);
done:
  for (size_t i = 0; i < w.nnodes; i++)
    node_free(w.nodes[i]);
  free(w.nodes);
  free(w.q);
  for (size_t c = 0; c < nclasses; c++)
    free(classes[c]);
  free(classes);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.cv);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- Reads (I/O thread, and the pool's lanes) --------------------------- */

/* A variable's location table, decoded from its record on first use
 * (kind 0: not decoded yet). */
typedef ferry__img_loctab loctab;

struct ferry__io {
  ferry__io_base b;
  loctab *t;         /* [nparts * nvars] */
  ferry__pool *pool; /* min(threads, max_open_files) lanes, or NULL */
  int lanes;
};

/* A name of the list: below the root, no "." or ".." component, no empty
 * one, no NUL. */
static int name_ok(const unsigned char *p, uint32_t n) {
  if (n == 0 || n > REL_MAX || memchr(p, 0, n) || p[0] == '/' ||
      p[n - 1] == '/')
    return 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j < n && p[j] != '/')
      j++;
    if (j == i || (j - i == 1 && p[i] == '.') ||
        (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
      return 0;
    i = j + 1;
  }
  return 1;
}

int ferry__img_loctab_parse(const void *rec, size_t len, int ragged,
                            int64_t nsamples, ferry__img_loctab *t,
                            ferry__rec_r *r) {
  memset(t, 0, sizeof *t);
  ferry__rec_r_init(r, rec, len);
  int kind = (int)ferry__rec_get_u8(r);
  int64_t n = ferry__rec_get_nonneg(r, "bad sample count");
  if (!r->rc && kind != (ragged ? LOC_FILES : LOC_VALUES))
    ferry__rec_fail(r, "bad kind");
  if (!r->rc && n != nsamples)
    ferry__rec_fail(r, "not one entry per sample");
  if (!r->rc && kind == LOC_FILES) {
    t->nfiles = ferry__rec_get_nonneg(r, "bad file count");
    if (!r->rc && (uint64_t)t->nfiles > ferry__rec_left(r) / 5)
      ferry__rec_fail(r, "bad file count");
    size_t k = (size_t)(t->nfiles ? t->nfiles : 1);
    if (!r->rc &&
        (!(t->name_at = malloc(k * 8)) || !(t->name_len = malloc(k * 4))))
      ferry__rec_oom(r, k * 12, "the file names");
    for (int64_t i = 0; !r->rc && i < t->nfiles; i++) {
      uint32_t nlen = ferry__rec_get_len(r, "a name runs past the end");
      t->name_at[i] = (int64_t)r->pos;
      t->name_len[i] = nlen;
      const unsigned char *p = ferry__rec_take(r, nlen);
      if (p && !name_ok(p, nlen))
        ferry__rec_fail(r, "a file name outside the folder");
    }
  }
  if (!r->rc && (uint64_t)n > ferry__rec_left(r) / 8)
    ferry__rec_fail(r, "bad sample count");
  if (!r->rc && !(t->v = malloc((size_t)(n ? n : 1) * 8)))
    ferry__rec_oom(r, (size_t)n * 8, "the location table");
  if (!r->rc)
    ferry__rec_get_u64s(r, t->v, (size_t)n);
  for (int64_t i = 0; !r->rc && kind == LOC_FILES && i < n; i++)
    if (t->v[i] < 0 || t->v[i] >= t->nfiles)
      ferry__rec_fail(r, "a sample names no file of the list");
  if (!r->rc)
    ferry__rec_end(r, "bytes after the table");
  if (r->rc) {
    ferry__img_loctab_free(t);
    return r->rc;
  }
  t->kind = kind;
  return 0;
}

void ferry__img_loctab_free(ferry__img_loctab *t) {
  free(t->v);
  free(t->name_at);
  free(t->name_len);
  memset(t, 0, sizeof *t);
}

static int tab_get(ferry__io *io, int64_t part, int var, loctab **out,
                   ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  loctab *t = &io->t[part * m->nvars + var];
  *out = t;
  if (t->kind)
    return 0;
  const ferry__part *pt = &m->parts[part];
  ferry__rec_r r;
  if (ferry__img_loctab_parse(pt->rec ? pt->rec[var].p : NULL,
                              pt->rec ? pt->rec[var].len : 0,
                              m->vars[var].ragged, pt->num_samples, t, &r) == 0)
    return 0;
  if (r.rc == FERRY_ENOMEM)
    return ferry__oom(err, io->b.rank, r.want,
                      "the location table of image folder %s, variable %s",
                      pt->paths[var], m->vars[var].name);
  return ferry__seterr(
      err, FERRY_EFORMAT,
      "image folder %s, variable %s, rank %d: its record: %s at byte %zu",
      pt->paths[var], m->vars[var].name, io->b.rank, r.why ? r.why : "?", r.at);
}

static int img_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = NULL,
      .close = NULL,
      .no_collective = "io=collective with an image folder: its files are "
                       "read independently (io=auto or independent)",
  };
  void *v = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &v, err);
  ferry__io *io = v;
  if (!rc && !(io->t = calloc((size_t)(m->nparts * m->nvars), sizeof *io->t))) {
    rc =
        ferry__oom(err, p->rank, (size_t)(m->nparts * m->nvars) * sizeof *io->t,
                   "the location tables of dataset %s", m->spec);
    ferry__io_base_close(&io->b);
    free(io);
    io = NULL;
  }
  if (!rc) {
    int64_t lanes = p->threads > 1 ? p->threads : 1;
    if (p->max_open_files > 0 && lanes > p->max_open_files)
      lanes = p->max_open_files;
    io->pool = ferry__pool_new((int)lanes);
    io->lanes = ferry__pool_lanes(io->pool);
  }
  *out = io;
  return rc;
}

/* A run of samples one lane reads, each file whole into its place. */
typedef struct rjob {
  const ferry__io *io;
  const ferry__part *pt;
  const loctab *t;
  int var;
  int64_t a, b;
  unsigned char *dst; /* where sample a's bytes go */
} rjob;

static int read_files(void *arg, ferry__err *err) {
  const rjob *j = arg;
  const ferry__part *pt = j->pt;
  const char *root = pt->paths[j->var];
  const char *vname = j->io->b.m->vars[j->var].name;
  const int64_t *ro = pt->roff[j->var];
  const unsigned char *rec = pt->rec[j->var].p;
  int rank = j->io->b.rank;
  size_t rl = strlen(root);
  char *path = malloc(rl + REL_MAX + 2);
  if (!path)
    return ferry__oom(err, rank, rl + REL_MAX + 2, "a path of image folder %s",
                      root);
  unsigned char *d = j->dst;
  int rc = 0;
  for (int64_t i = j->a; !rc && i < j->b; i++) {
    int64_t f = j->t->v[i], want = ro[i + 1] - ro[i];
    memcpy(path, root, rl);
    path[rl] = '/';
    memcpy(path + rl + 1, rec + j->t->name_at[f], j->t->name_len[f]);
    path[rl + 1 + j->t->name_len[f]] = '\0';
    long long g = (long long)(pt->first_sample + i);
    const char *kind = NULL;
    int fd = ferry__open_regular(path, &kind);
    struct stat st;
    size_t got = 0;
    if (fd == -2)
      rc = ferry__seterr(err, FERRY_EIO,
                         "file %s (sample %lld), variable %s, rank %d: %s "
                         "now, not a regular file",
                         path, g, vname, rank, kind ? kind : "something else");
    else if (fd < 0)
      rc = ferry__seterr(err, ferry__errno_code(errno),
                         "open failed: file %s (sample %lld), variable %s, "
                         "rank %d: %s%s",
                         path, g, vname, rank, strerror(errno),
                         errno == ENOENT ? " (removed after the folder was "
                                           "listed? list it again)"
                                         : "");
    else if (fstat(fd, &st) != 0)
      rc = ferry__seterr(err, ferry__errno_code(errno),
                         "fstat failed: file %s, variable %s, rank %d: %s",
                         path, vname, rank, strerror(errno));
    else if ((int64_t)st.st_size != want)
      rc = ferry__seterr(err, FERRY_EIO,
                         "file %s (sample %lld), variable %s, rank %d: %lld "
                         "bytes where the listing found %lld: it changed "
                         "after the folder was listed (list it again, or "
                         "save the manifest again)",
                         path, g, vname, rank, (long long)st.st_size,
                         (long long)want);
    else if (ferry__pread_full(fd, d, (size_t)want, 0, &got) != 0)
      rc = ferry__seterr(err, ferry__errno_code(errno),
                         "pread failed: file %s, variable %s, rank %d, offset "
                         "0, %lld bytes: %s",
                         path, vname, rank, (long long)want, strerror(errno));
    else if ((int64_t)got != want)
      rc = ferry__seterr(err, FERRY_EIO,
                         "short read: file %s (sample %lld), variable %s, "
                         "rank %d: %zu of %lld bytes (the file shrank while "
                         "it was read)",
                         path, g, vname, rank, got, (long long)want);
    if (fd >= 0)
      close(fd);
    d += want;
  }
  free(path);
  return rc;
}

static int img_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (!rc)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  loctab *t = NULL;
  if (!rc && nrows > 0)
    rc = tab_get(io, part, var, &t, err);
  if (rc || nrows == 0)
    return rc;
  if (t->kind == LOC_VALUES) {
    memcpy(buf, t->v + row, (size_t)nrows * 8);
    return 0;
  }
  const ferry__part *pt = &m->parts[part];
  const int64_t *ro = pt->roff[var];
  /* about four runs a lane, so that a lane with large files does not
   * leave the others idle at the end */
  int64_t per = (nrows + 4 * io->lanes - 1) / (4 * io->lanes);
  int64_t njobs = (nrows + per - 1) / per;
  rjob *jobs = malloc((size_t)njobs * sizeof *jobs);
  if (!jobs)
    return ferry__oom(err, io->b.rank, (size_t)njobs * sizeof *jobs,
                      "the reads of image folder %s", pt->paths[var]);
  for (int64_t k = 0; k < njobs; k++) {
    int64_t a = row + k * per,
            b = a + per < row + nrows ? a + per : row + nrows;
    jobs[k] =
        (rjob){io, pt, t, var, a, b, (unsigned char *)buf + (ro[a] - ro[row])};
    rc = ferry__pool_submit(io->pool, read_files, &jobs[k], err);
    if (rc)
      break;
  }
  ferry__err werr;
  int wrc = ferry__pool_wait(io->pool, &werr);
  if (!rc && wrc && err)
    *err = werr;
  free(jobs);
  return rc ? rc : wrc;
}

static void img_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__pool_free(io->pool);
  for (int64_t i = 0; io->t && i < io->b.m->nparts * io->b.m->nvars; i++) {
    free(io->t[i].v);
    free(io->t[i].name_at);
    free(io->t[i].name_len);
  }
  free(io->t);
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_imgfolder = {
    .name = "imagefolder",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = IMG_REC_VERSION,
    .probe = img_probe,
    .accepts = "a directory of .jpg/.jpeg/.png files, or of class "
               "directories holding them (torchvision's ImageFolder)",
    .describe = img_describe,
    .io_open = img_io_open,
    .io_read = img_io_read,
    .io_close = img_io_close,
};
