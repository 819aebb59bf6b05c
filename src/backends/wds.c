/*
 * wds.c - WebDataset tar shards (docs/images.md): one part per shard
 * (SHARD.tar; a glob, an @list or a directory of them make the dataset),
 * a sample the run of consecutive members sharing a key, each extension a
 * variable (tar.c groups them).  Bytes variables are ragged uint8, one
 * member's payload per sample; cls, cls2, index and id are int64, parsed
 * from their ASCII payloads at describe.
 *
 * Rank 0 scans the shard's headers (tar.c: payloads skipped) and leaves,
 * per variable, a record (the per-sample location table of decision 0057:
 * each sample's payload offset in the shard, or its integer value); the
 * payloads' sizes are the ragged offsets, so the core sizes batches from
 * them.  A read of rows [row, row+n) of a bytes variable gathers the
 * members' payloads, which lie between headers and other members: a run of
 * members less than 64 KiB apart is one preadv, each payload landing in
 * its place in the caller's buffer and the bytes between them in a
 * scratch buffer; a member far from the next is read alone.  Integer
 * variables read nothing.
 *
 * Sidecars: SHARD.tar.idx in Megatron-Energon's layout (a uint64 per
 * sample, the offset of its first header, then the offset where the
 * members end) is checked against the headers (tar_index=auto; a stale one
 * is refused), or written (tar_index=write, `ferry index`).  It cannot
 * spare the header scan: it holds no member sizes, which the loader needs
 * at open.  Compressed shards (.tar.gz, .tgz, or gzip, zstd, bzip2 or xz
 * bytes) are refused with how to convert them.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/tar.h"
#include "backends/toolkit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 2: kind 4 (npy arrays), and npy members no longer bytes (decision
 * 0062): a manifest saved before is refused, not served as it was. */
#define WDS_REC_VERSION 2
/* The record's kinds (the location table's, decision 0057): 1, a bytes
 * member's payload offset; 2, an integer member's value; 4, an npy
 * member's values' offset (after its header; 0062).  3 is the image
 * folders'. */
enum { LOC_OFFSETS = 1, LOC_VALUES = 2, LOC_ARRAYS = 4 };

static int is_compressed_name(const char *s) {
  return ferry__has_suffix(s, ".tar.gz") || ferry__has_suffix(s, ".tgz");
}

/* A shard's name in a directory of one shard: .tar, .tar.gz, .tgz. */
static int shard_name(const char *dir, const char *name) {
  (void)dir;
  return ferry__has_suffix(name, ".tar") || is_compressed_name(name);
}

/* The shard a part names (a file, or a directory of one shard). */
static char *shard_of(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return NULL;
  if (S_ISDIR(st.st_mode))
    return ferry__dir_only_file(path, shard_name);
  return S_ISREG(st.st_mode) ? strdup(path) : NULL;
}

/* A .tar, .tar.gz or .tgz file, a file with the ustar magic at 257, or a
 * directory of one such file. */
static int wds_probe(const char *path) {
  char *f = shard_of(path);
  if (!f)
    return 0;
  int ok = ferry__has_suffix(f, ".tar") || is_compressed_name(f);
  if (!ok) {
    int fd = ferry__open_regular(f, NULL);
    unsigned char m[6];
    size_t got = 0;
    ok = fd >= 0 && ferry__pread_full(fd, m, sizeof m, 257, &got) == 0 &&
         got == sizeof m && memcmp(m, "ustar", 5) == 0 &&
         (m[5] == '\0' || m[5] == ' ');
    if (fd >= 0)
      close(fd);
  }
  free(f);
  return ok;
}

static int fd_read(void *ctx, int64_t off, void *buf, size_t n, size_t *got) {
  return ferry__pread_full(*(int *)ctx, buf, n, off, got) != 0 ? errno : 0;
}

/* gzip, zstd, bzip2 or xz bytes (or a compressed name): refused. */
static int refuse_compressed(const char *file, int fd, ferry__err *err) {
  unsigned char m[6] = {0};
  size_t got = 0;
  if (ferry__pread_full(fd, m, sizeof m, 0, &got) != 0)
    got = 0;
  const char *kind = NULL;
  if (got >= 2 && m[0] == 0x1f && m[1] == 0x8b)
    kind = "gzip";
  else if (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f &&
           m[3] == 0xfd)
    kind = "zstd";
  else if (got >= 3 && memcmp(m, "BZh", 3) == 0)
    kind = "bzip2";
  else if (got >= 6 && memcmp(m,
                              "\xfd"
                              "7zXZ\0",
                              6) == 0)
    kind = "xz";
  else if (is_compressed_name(file))
    kind = "gzip (by its name)";
  if (!kind)
    return 0;
  return ferry__seterr(
      err, FERRY_ENOTSUP,
      "file %s, offset 0: a %s-compressed tar shard; ferry reads "
      "uncompressed shards by byte ranges: decompress it once (for gzip: "
      "gzip -dc %s > SHARD.tar; WebDataset reads .tar shards as well) and "
      "name the .tar",
      file, kind, file);
}

/* String option name (vars=, missing=) into *out, NULL when empty. */
static int string_option(const ferry_options *opts, const char *name,
                         const char *file, char **out, ferry__err *err) {
  *out = NULL;
  if (!opts)
    return 0;
  char *v = malloc(65536);
  if (!v)
    return ferry__oom(err, -1, 65536, "the %s option, reading shard %s", name,
                      file);
  if (ferry_options_get(opts, name, v, 65536) != 0 || !*v)
    free(v);
  else
    *out = v;
  return 0;
}

static int tar_index_mode(const ferry_options *opts) {
  char v[16];
  if (!opts || ferry_options_get(opts, "tar_index", v, sizeof v) != 0)
    return 0;
  return !strcmp(v, "ignore") ? 1 : !strcmp(v, "write") ? 2 : 0;
}

/* SHARD.idx, as Energon's TarIndexWriter writes it: via a temporary file
 * renamed over the old one. */
static int sidecar_write(const char *file, const ferry__tar_index *x,
                         ferry__err *err) {
  size_t n = strlen(file);
  char *path = malloc(n + 9), *tmp = malloc(n + 9);
  unsigned char *b = malloc(((size_t)x->n + 1) * 8);
  int rc = 0;
  if (!path || !tmp || !b)
    rc = ferry__oom(err, -1, ((size_t)x->n + 1) * 8 + 2 * n,
                    "the sidecar of %s", file);
  if (!rc) {
    snprintf(path, n + 9, "%s.idx", file);
    snprintf(tmp, n + 9, "%s.idx.tm", file);
    for (int64_t i = 0; i <= x->n; i++)
      ferry__le64_store(b + 8 * i, (uint64_t)(i < x->n ? x->start[i] : x->end));
    FILE *f = fopen(tmp, "wb");
    size_t want = ((size_t)x->n + 1) * 8;
    int bad = !f || fwrite(b, 1, want, f) != want;
    if (f && fclose(f) != 0)
      bad = 1;
    if (bad || rename(tmp, path) != 0) {
      rc = ferry__seterr(err, ferry__errno_code(errno),
                         "writing the sidecar %s of shard %s: %s", path, file,
                         strerror(errno));
      unlink(tmp);
    }
  }
  free(path);
  free(tmp);
  free(b);
  return rc;
}

/* SHARD.idx when there is one: 0 when it matches the headers (*seen set),
 * FERRY_EFORMAT when stale. */
static int sidecar_check(const char *file, const ferry__tar_index *x, int *seen,
                         ferry__err *err) {
  size_t n = strlen(file);
  char *path = malloc(n + 5);
  if (!path)
    return ferry__oom(err, -1, n + 5, "the sidecar of %s", file);
  snprintf(path, n + 5, "%s.idx", file);
  struct stat st;
  int rc = 0, fd = -1;
  *seen = 0;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    free(path);
    return 0;
  }
  *seen = 1;
  char why[160] = "";
  int stale = (uint64_t)st.st_size != ((uint64_t)x->n + 1) * 8;
  if (stale)
    snprintf(why, sizeof why, "%lld bytes where %lld samples make %lld",
             (long long)st.st_size, (long long)x->n, ((long long)x->n + 1) * 8);
  unsigned char *b = stale ? NULL : malloc((size_t)st.st_size);
  size_t got = 0;
  if (!stale && !b)
    rc = ferry__oom(err, -1, (size_t)st.st_size, "sidecar %s", path);
  else if (!stale &&
           ((fd = ferry__open_regular(path, NULL)) < 0 ||
            ferry__pread_full(fd, b, (size_t)st.st_size, 0, &got) != 0 ||
            got != (size_t)st.st_size))
    rc = ferry__seterr(err, FERRY_EIO, "reading sidecar %s: %s", path,
                       got ? "short read" : strerror(errno));
  else if (!stale)
    stale = ferry__tar_sidecar_check(b, got, x, why, sizeof why);
  if (!rc && stale)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "sidecar %s does not match shard %s (%s): the shard "
                       "changed after it was indexed; rewrite it with "
                       "`ferry index %s`, or remove it, or set "
                       "tar_index=ignore",
                       path, file, why, file);
  if (fd >= 0)
    close(fd);
  free(b);
  free(path);
  return rc;
}

/* Variable t of x as the part's variable v: its record and offsets.  An
 * npy variable of arrays with a first dimension is ragged here (rows: the
 * first dimension's slices), whatever the shapes: wds_finish makes it
 * dense once every shard is seen, when every sample has one shape. */
static int fill_var(const ferry__tar_index *x, const ferry__tar_var *t, int v,
                    const char *file, int64_t size, ferry__part_desc *out,
                    ferry__err *err) {
  ferry__var *var = &out->vars[v];
  int bytes = t->kind == FERRY__TAR_BYTES, npy = t->kind == FERRY__TAR_NPY;
  int64_t rb = npy ? t->npy_row_bytes : bytes ? 1 : 8;
  var->name = strdup(t->ext);
  var->dtype = npy ? t->npy_dtype : bytes ? FERRY_UINT8 : FERRY_INT64;
  var->swapped = npy && t->npy_swapped;
  var->ragged = bytes || (npy && t->npy_ndim > 0);
  var->row_ndim = npy && t->npy_ndim > 0 ? t->npy_ndim - 1 : 0;
  for (int d = 0; d < var->row_ndim; d++)
    var->row_shape[d] = t->npy_shape[d + 1];
  var->row_bytes = (size_t)rb;
  char st[160];
  snprintf(st, sizeof st, "tar members *.%s: %s", t->ext,
           npy     ? "NumPy arrays (.npy; the values read, not the headers)"
           : bytes ? "bytes"
                   : "ASCII integers");
  var->storage = strdup(st);
  out->paths[v] = strdup(file);
  out->data_offset[v] = 0;
  out->file_size[v] = size;
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u8(&w, npy ? LOC_ARRAYS : bytes ? LOC_OFFSETS : LOC_VALUES);
  ferry__rec_put_u64(&w, (uint64_t)x->n);
  ferry__rec_put_u64s(&w, t->pos, (size_t)x->n);
  int rc = ferry__rec_blob(&w, &out->rec[v]);
  if (var->ragged && !rc && (out->roff[v] = malloc(((size_t)x->n + 1) * 8))) {
    out->roff[v][0] = 0;
    for (int64_t i = 0; i < x->n; i++)
      out->roff[v][i + 1] = out->roff[v][i] + t->len[i] / rb;
  }
  if (rc || !var->name || !var->storage || !out->paths[v] ||
      (var->ragged && !out->roff[v]))
    return ferry__oom(err, -1, ((size_t)x->n + 1) * 16,
                      "variable %s of shard %s", t->ext, file);
  return 0;
}

static int fill_desc(const ferry__tar_index *x, const char *file, int64_t size,
                     ferry__part_desc *out, ferry__err *err) {
  int n = x->nvars;
  out->vars = calloc((size_t)n, sizeof *out->vars);
  out->paths = calloc((size_t)n, sizeof *out->paths);
  out->data_offset = calloc((size_t)n, sizeof *out->data_offset);
  out->file_size = calloc((size_t)n, sizeof *out->file_size);
  out->rec = calloc((size_t)n, sizeof *out->rec);
  out->roff = calloc((size_t)n, sizeof *out->roff);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec || !out->roff)
    return ferry__oom(err, -1, (size_t)n * 80, "the variables of shard %s",
                      file);
  out->nvars = n;
  out->num_samples = x->n;
  /* the variables in the order of their names, whatever the order of a
   * shard's first sample: every shard must give the same list */
  const ferry__tar_var *sorted[1024];
  for (int v = 0; v < n; v++) {
    int k = v;
    for (; k > 0 && strcmp(sorted[k - 1]->ext, x->vars[v].ext) > 0; k--)
      sorted[k] = sorted[k - 1];
    sorted[k] = &x->vars[v];
  }
  for (int v = 0; v < n; v++) {
    int rc = fill_var(x, sorted[v], v, file, size, out, err);
    if (rc)
      return rc;
  }
  /* nothing of the sidecar's here: whether one was checked or written
   * says nothing of the data, and a mix's hash still holds its sources'
   * notes (decision 0067: a mixed state saved before `ferry index` resumes
   * after it) */
  char notes[512];
  snprintf(notes, sizeof notes,
           "webdataset, first shard %s: %lld samples, %lld members served, "
           "%lld skipped (not regular files, or __*__), %lld of extensions "
           "not selected",
           file, (long long)x->n, (long long)x->members, (long long)x->skipped,
           (long long)x->ignored);
  if (!(out->notes = strdup(notes)))
    return ferry__oom(err, -1, strlen(notes) + 1, "the notes of shard %s",
                      file);
  return 0;
}

static int wds_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  char *file = shard_of(path), *sel = NULL, *missing = NULL;
  ferry__tar_index x;
  memset(&x, 0, sizeof x);
  int fd = -1, rc = 0, seen = 0, mode = tar_index_mode(opts);
  struct stat st;
  if (!file) {
    struct stat ps;
    if (stat(path, &ps) == 0 && S_ISREG(ps.st_mode))
      return ferry__oom(err, -1, strlen(path) + 1, "the path of shard %s",
                        path);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: a tar shard, or a directory of exactly one",
                         path);
  }
  if ((fd = ferry__open_regular(file, NULL)) < 0 || fstat(fd, &st) != 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno), "open failed: %s: %s",
                       file, strerror(errno));
    goto done;
  }
  if ((rc = refuse_compressed(file, fd, err)) < 0)
    goto done;
  if ((rc = string_option(opts, "vars", file, &sel, err)) < 0 ||
      (rc = string_option(opts, "missing", file, &missing, err)) < 0)
    goto done;
  ferry__tar_src src = {
      .read = fd_read, .ctx = &fd, .size = (int64_t)st.st_size, .path = file};
  if ((rc = ferry__tar_index_build(&src, sel, missing, &x, err)) < 0)
    goto done;
  if (mode == 2)
    rc = sidecar_write(file, &x, err);
  else if (mode == 0)
    rc = sidecar_check(file, &x, &seen, err);
  if (!rc)
    rc = fill_desc(&x, file, (int64_t)st.st_size, out, err);
done:
  if (fd >= 0)
    close(fd);
  ferry__tar_index_free(&x);
  free(sel);
  free(missing);
  free(file);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* The kind of variable v's location table in part p (its record's first
 * byte), 0 when it has none. */
static int loc_kind(const ferry__manifest *m, int64_t p, int v) {
  const ferry__blob *b = m->parts[p].rec ? &m->parts[p].rec[v] : NULL;
  return b && b->len > 0 ? ((const unsigned char *)b->p)[0] : 0;
}

/* Rank 0, every shard described and agreeing: an npy variable whose
 * samples, in every shard, have the same number of rows k (one shape) is
 * made dense, its row the whole array ([k, rows...]); the record stays
 * (an entry's bytes are row_bytes, or the ragged step times row_bytes). */
static int wds_finish(ferry__manifest *m, ferry__err *err) {
  (void)err;
  for (int v = 0; v < m->nvars; v++) {
    ferry__var *var = &m->vars[v];
    if (!var->ragged || m->nparts == 0 || loc_kind(m, 0, v) != LOC_ARRAYS ||
        var->row_ndim + 1 >= FERRY_MAX_DIMS) /* a row has at most 7 */
      continue;
    int64_t k = -1;
    int same = 1;
    for (int64_t p = 0; same && p < m->nparts; p++) {
      const ferry__part *pt = &m->parts[p];
      const int64_t *ro = pt->roff ? pt->roff[v] : NULL;
      same = ro != NULL && loc_kind(m, p, v) == LOC_ARRAYS;
      for (int64_t i = 0; same && i < pt->num_samples; i++) {
        if (k < 0)
          k = ro[i + 1] - ro[i];
        same = ro[i + 1] - ro[i] == k;
      }
    }
    if (!same || k <= 0 || (size_t)k > SIZE_MAX / var->row_bytes)
      continue;
    memmove(var->row_shape + 1, var->row_shape,
            (size_t)var->row_ndim * sizeof *var->row_shape);
    var->row_shape[0] = k;
    var->row_ndim++;
    var->row_bytes *= (size_t)k;
    var->ragged = 0;
    for (int64_t p = 0; p < m->nparts; p++) {
      free(m->parts[p].roff[v]);
      m->parts[p].roff[v] = NULL;
    }
  }
  return 0;
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

/* A variable's location table, decoded from its record on first use. */
typedef struct loctab {
  int kind;     /* LOC_OFFSETS, LOC_VALUES or LOC_ARRAYS; 0: not decoded */
  int64_t *pos; /* [n] payload (or array values) offsets, or values */
} loctab;

/* The bytes of sample i of variable var: its rows (the ragged step, or
 * one) times row_bytes; -1 when they would overflow. */

/* A run of members is one preadv (ferry__gather_entries, backends'
 * toolkit): each member's payload lands in its place in the batch buffer,
 * the bytes between them (headers, other members) in a scratch buffer of
 * FERRY__GATHER_GAP_MAX bytes, which bounds a gap. */

struct ferry__io {
  ferry__io_base b;
  loctab *t;              /* [nparts * nvars] */
  unsigned char *scratch; /* FERRY__GATHER_GAP_MAX bytes: what lies between
                           * members */
};

/* One descriptor per shard, whatever the variable. */
static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  ferry__io *io = ctx;
  const ferry__part *pt = &io->b.m->parts[part];
  (void)var;
  return ferry__io_base_fd_open(&io->b, pt->paths[0], NULL, pt->file_size[0],
                                handle, err);
}

/* The table of (part, var), checked: as many entries as samples, every
 * payload inside the shard, in increasing order, none overlapping. */
static int tab_get(ferry__io *io, int64_t part, int var, loctab **out,
                   ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  loctab *t = &io->t[part * m->nvars + var];
  *out = t;
  if (t->kind)
    return 0;
  const ferry__part *pt = &m->parts[part];
  const ferry__var *x = &m->vars[var];
  ferry__rec_r r;
  ferry__rec_r_init(&r, pt->rec ? pt->rec[var].p : NULL,
                    pt->rec ? pt->rec[var].len : 0);
  int kind = (int)ferry__rec_get_u8(&r);
  int64_t n = ferry__rec_get_nonneg(&r, "bad sample count");
  /* the kind the variable's layout allows: bytes are ragged uint8,
   * integers dense int64 values; arrays either */
  if (!r.rc && !(kind == LOC_ARRAYS ||
                 (kind == LOC_OFFSETS && x->ragged && x->row_bytes == 1) ||
                 (kind == LOC_VALUES && !x->ragged && x->dtype == FERRY_INT64 &&
                  x->row_bytes == 8 && !x->swapped)))
    ferry__rec_fail(&r, "bad kind");
  if (!r.rc && n != pt->num_samples)
    ferry__rec_fail(&r, "not one entry per sample");
  if (!r.rc && (uint64_t)n > ferry__rec_left(&r) / 8)
    ferry__rec_fail(&r, "bad sample count");
  if (!r.rc && !(t->pos = malloc((size_t)(n ? n : 1) * 8)))
    ferry__rec_oom(&r, (size_t)n * 8, "the location table");
  if (!r.rc)
    ferry__rec_get_u64s(&r, t->pos, (size_t)n);
  for (int64_t i = 0, end = 0; !r.rc && kind != LOC_VALUES && i < n; i++) {
    int64_t len = ferry__entry_bytes(m, pt, var, i);
    if (len < 0 || t->pos[i] < end || t->pos[i] > pt->file_size[var] - len)
      ferry__rec_fail(&r, "a member outside the shard or out of order");
    end = t->pos[i] + len;
  }
  if (!r.rc)
    ferry__rec_end(&r, "bytes after the table");
  if (r.rc) {
    free(t->pos);
    t->pos = NULL;
    if (r.rc == FERRY_ENOMEM)
      return ferry__oom(err, io->b.rank, r.want,
                        "the location table of file %s, variable %s",
                        pt->paths[var], m->vars[var].name);
    return ferry__seterr(
        err, FERRY_EFORMAT,
        "file %s, variable %s, rank %d: its record: %s at byte %zu",
        pt->paths[var], m->vars[var].name, io->b.rank, r.why ? r.why : "?",
        r.at);
  }
  t->kind = kind;
  return 0;
}

static int wds_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = ferry__io_base_fd_close,
      .no_collective = "io=collective with WebDataset shards: their members "
                       "are read independently (io=auto or independent)",
  };
  void *v = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &v, err);
  ferry__io *io = v;
  if (!rc &&
      (!(io->t = calloc((size_t)(m->nparts * m->nvars), sizeof *io->t)) ||
       !(io->scratch = malloc(FERRY__GATHER_GAP_MAX)))) {
    rc =
        ferry__oom(err, p->rank, (size_t)(m->nparts * m->nvars) * sizeof *io->t,
                   "the location tables of dataset %s", m->spec);
    ferry__io_base_close(&io->b);
    free(io->t);
    free(io);
    io = NULL;
  }
  *out = io;
  return rc;
}

static int wds_io_read(ferry__io *io, int64_t part, int var, int64_t row,
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
    memcpy(buf, t->pos + row, (size_t)nrows * 8);
    return 0;
  }
  const ferry__part *pt = &m->parts[part];
  if (m->vars[var].ragged && pt->roff[var][row + nrows] == pt->roff[var][row])
    return 0;
  void *h = NULL;
  rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err);
  if (rc)
    return rc;
  return ferry__gather_entries(*(int *)h, m, part, var, t->pos, row, nrows, buf,
                               io->scratch, io->b.rank, err);
}

static void wds_io_close(ferry__io *io) {
  if (!io)
    return;
  for (int64_t i = 0; io->t && i < io->b.m->nparts * io->b.m->nvars; i++)
    free(io->t[i].pos);
  free(io->t);
  free(io->scratch);
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_wds = {
    .name = "webdataset",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = WDS_REC_VERSION,
    .probe = wds_probe,
    .accepts = "a WebDataset tar shard (.tar, or a file with the ustar "
               "magic; .tar.gz and .tgz to refuse them by name), or a "
               "directory of one",
    .describe = wds_describe,
    .finish = wds_finish,
    .io_open = wds_io_open,
    .io_read = wds_io_read,
    .io_close = wds_io_close,
};
