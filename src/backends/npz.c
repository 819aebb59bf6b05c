/*
 * npz.c - the NumPy .npz backend: a zip archive of .npy members
 * (numpy.savez, numpy.savez_compressed), each member NAME.npy a variable
 * NAME.  A glob or @list of .npz files (DLIO's datasets: one file per
 * sample or per few samples) is a dataset of parts, as for .npy files.
 *
 * The zip archive itself is read by zip.c (the central directory, Zip64,
 * each member's local header and data offset): methods 0 (stored) and 8
 * (deflate) are read, anything else refused by name.
 *
 * Stored members are read as byte ranges through MPI-IO (npy.c's open and
 * read, collective or not): data offset = member data offset + .npy header
 * length.  Deflated members cannot be entered in the middle: each open
 * deflated member keeps an inflate cursor (zlib state, compressed bytes read
 * with pread, 256 KiB at a time, on a descriptor of the archive) that moves
 * forward, plus checkpoints (inflateCopy of the state) every chunk_rows
 * rows, at most 64 per member.  The first read of an open member inflates it
 * whole, serving its rows on the way: that takes every checkpoint and checks
 * the member's length and CRC-32 before any of its rows is served, so a corrupt
 * member is an error, never data.  Later reads start from the nearest
 * checkpoint at or before their first row (or from the cursor when it is
 * closer); describe reports chunk_rows as the member's storage chunk, so the
 * plan's automatic chunks start on checkpoints and inflate nothing they do not
 * serve. Memory per open deflated member: 256 KiB of input, 64 KiB of scratch
 * plus about 40 KiB per checkpoint (reported as cache_bytes).
 *
 * Inflation runs on the decode pool (pool.c; `threads` lanes, NULL pool:
 * inline on the I/O thread, as before): a read through a member's cursor
 * is one job, at most one queued per cursor, so the members of several
 * parts (DLIO's one-sample files) inflate at once while each member's
 * first, verifying read stays serial.  A verified member's checkpoints are
 * read-only: a read that crosses checkpoints (or comes while its cursor is
 * queued) is cut at them into pieces, each inflated from its checkpoint by
 * a cursor of its own (64 KiB input, 64 KiB scratch, allocated while it
 * runs).  With ferry__io_params.defer, io_read returns with its jobs
 * queued and io_wait settles them; a handle the cache closes waits first.
 * Errors are the first job's in read order (pool.c), kept across waits.
 * Stored members are read by ranges and their CRC-32 is not checked (that
 * would read them whole).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/npy.h"
#include "backends/toolkit.h"
#include "backends/zip.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

/* .npy headers: numpy refuses above 10000 bytes; npy.c allows 1 MiB. */
#define NPY_HEAD_MAX (12 + ((size_t)1 << 20))
#define NPZ_REC_VERSION 1
#define NPZ_REC_LEN 56
#define NPZ_IN_BUF ((size_t)256 << 10)
#define NPZ_CKPT_MAX 64
#define NPZ_CKPT_MIN_BYTES ((int64_t)1 << 20)
/* Inflated bytes a read skips (per cursor), and a piece's own input buffer
 * (pieces run on up to `threads` lanes at once). */
#define NPZ_SCRATCH ((size_t)64 << 10)
#define NPZ_PIECE_IN ((size_t)64 << 10)
/* zlib's inflate state plus its 32 KiB window, for the cache_bytes bound. */
#define NPZ_CKPT_BYTES ((size_t)40 << 10)

/* ---- Members as .npy arrays (rank 0) ---------------------------------- */

/* Parse member m's .npy header (label: "ARCHIVE, member NAME"). */
static int member_header(const ferry__zip *za, const ferry__zip_member *m,
                         const char *label, ferry__npy_header *h,
                         ferry__err *err) {
  unsigned char pre[12];
  size_t got = 0, want;
  int rc = ferry__zip_member_head(za, m, pre, sizeof pre, &got, err);
  if (rc < 0)
    return rc;
  want = got;
  if (got >= 10 && memcmp(pre, "\x93NUMPY", 6) == 0) {
    if (pre[6] == 1)
      want = 10 + ferry__zip_le16(pre + 8);
    else if (got == 12 && (pre[6] == 2 || pre[6] == 3))
      want = 12 + (size_t)ferry__zip_le32(pre + 8);
    if (want > NPY_HEAD_MAX)
      want = 12; /* the parser names the bad length */
    if (want < got)
      want = got;
  }
  unsigned char *buf = malloc(want ? want : 1);
  if (!buf)
    return ferry__oom(err, -1, want ? want : 1, "the .npy header of %s", label);
  if ((rc = ferry__zip_member_head(za, m, buf, want, &got, err)) == 0)
    rc = ferry__npy_parse_header(buf, got, h, label, err);
  free(buf);
  return rc;
}

/* The record each variable carries in the manifest (little-endian):
 * u32 version, u32 method, u32 crc, u32 0, i64 data (the member's data
 * offset in the archive), csize, usize, hlen (the .npy header's length),
 * ck_rows (rows between checkpoints of a deflated member). */
typedef struct npz_rec {
  uint32_t method, crc;
  int64_t data, csize, usize, hlen, ck_rows;
} npz_rec;

static int rec_put(const npz_rec *r, ferry__blob *b) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u32(&w, NPZ_REC_VERSION);
  ferry__rec_put_u32(&w, r->method);
  ferry__rec_put_u32(&w, r->crc);
  ferry__rec_put_u32(&w, 0);
  ferry__rec_put_i64(&w, r->data);
  ferry__rec_put_i64(&w, r->csize);
  ferry__rec_put_i64(&w, r->usize);
  ferry__rec_put_i64(&w, r->hlen);
  ferry__rec_put_i64(&w, r->ck_rows);
  return ferry__rec_blob(&w, b);
}

/* The record of (part, var), checked against the variable and the file
 * size: the bounds describe checked, for a manifest loaded from disk. */
static int rec_get(const ferry__manifest *m, int64_t part, int var, npz_rec *r,
                   int rank, ferry__err *err) {
  const ferry__part *pt = &m->parts[part];
  const ferry__blob *b = pt->rec ? &pt->rec[var] : NULL;
  int64_t rb = (int64_t)m->vars[var].row_bytes, n = pt->num_samples;
  int ok = b && b->len == NPZ_REC_LEN;
  if (ok) { /* its length was checked: every get succeeds */
    ferry__rec_r rd;
    ferry__rec_r_init(&rd, b->p, b->len);
    ok = ferry__rec_get_u32(&rd) == NPZ_REC_VERSION;
    r->method = ferry__rec_get_u32(&rd);
    r->crc = ferry__rec_get_u32(&rd);
    (void)ferry__rec_get_u32(&rd); /* 0 */
    r->data = ferry__rec_get_i64(&rd);
    r->csize = ferry__rec_get_i64(&rd);
    r->usize = ferry__rec_get_i64(&rd);
    r->hlen = ferry__rec_get_i64(&rd);
    r->ck_rows = ferry__rec_get_i64(&rd);
  }
  if (ok) {
    int64_t fs = pt->file_size[var];
    ok = (r->method == 0 || r->method == 8) && r->data >= 0 && r->csize >= 0 &&
         r->usize >= 0 && r->hlen >= 0 && r->ck_rows >= 1 && r->data <= fs &&
         r->csize <= fs - r->data && r->hlen <= r->usize && rb > 0 &&
         n <= (r->usize - r->hlen) / rb &&
         (r->method == 8 || r->csize == r->usize) &&
         pt->data_offset[var] == (r->method == 0 ? r->data + r->hlen : r->data);
  }
  if (!ok)
    return ferry__seterr_on(err, rank, FERRY_EFORMAT,
                            "file %s, variable %s: the manifest's npz record "
                            "is missing or inconsistent (offset 0)",
                            pt->paths[var], m->vars[var].name);
  return 0;
}

static void fmt_bytes(char *buf, size_t cap, int64_t n) {
  if (n >= (int64_t)1 << 30)
    snprintf(buf, cap, "%.1f GiB", (double)n / (double)(1 << 30));
  else if (n >= (int64_t)1 << 20)
    snprintf(buf, cap, "%.1f MiB", (double)n / (double)(1 << 20));
  else if (n >= 1024)
    snprintf(buf, cap, "%.1f KiB", (double)n / 1024.0);
  else
    snprintf(buf, cap, "%lld B", (long long)n);
}

/* Rows between checkpoints of a deflated member of nrows rows of rb bytes:
 * at least 1 MiB of rows, at most NPZ_CKPT_MAX intervals. */
static int64_t ckpt_rows(int64_t nrows, int64_t rb) {
  int64_t bytes = nrows * rb; /* bounded: the npy parser checked it */
  int64_t every = bytes / NPZ_CKPT_MAX + (bytes % NPZ_CKPT_MAX != 0);
  if (every < NPZ_CKPT_MIN_BYTES)
    every = NPZ_CKPT_MIN_BYTES;
  int64_t rows = (every + rb - 1) / rb;
  return rows < 1 ? 1 : rows;
}

/* Variable i of out from member m; *nrows receives its first dimension. */
static int describe_member(const ferry__zip *za, const ferry__zip_member *m,
                           ferry__part_desc *out, int i, int64_t *nrows,
                           ferry__err *err) {
  char label[FERRY__MSG_MAX / 2];
  snprintf(label, sizeof label, "%s, member %s", za->path, m->name);
  ferry__npy_header h;
  int rc = member_header(za, m, label, &h, err);
  if (rc < 0)
    return rc;
  ferry__var *v = &out->vars[i];
  int64_t rb = (int64_t)ferry_dtype_size(h.dtype);
  for (int d = 1; d < h.ndim; d++)
    rb *= h.shape[d]; /* bounded: the parser checked the product */
  int64_t need = h.shape[0] * rb, have = m->usize - h.data_offset;
  if (need > have)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "truncated: %s holds %lld bytes of data, its .npy "
                         "header says %lld (offset %lld)",
                         label, (long long)(have < 0 ? 0 : have),
                         (long long)need, (long long)m->data);
  size_t nlen = strlen(m->name) - 4;
  if (!(v->name = malloc(nlen + 1)) || !(out->paths[i] = strdup(za->path)))
    return ferry__oom(err, -1, !v->name ? nlen + 1 : strlen(za->path) + 1,
                      "the name and path of %s", label);
  memcpy(v->name, m->name, nlen);
  v->name[nlen] = '\0';
  v->dtype = h.dtype;
  v->swapped = h.swapped;
  v->row_ndim = h.ndim - 1;
  for (int d = 1; d < h.ndim; d++)
    v->row_shape[d - 1] = h.shape[d];
  v->row_bytes = (size_t)rb;
  npz_rec r = {(uint32_t)m->method, m->crc, m->data, m->csize, m->usize,
               h.data_offset,       1};
  char s1[32], s2[32], st[256];
  fmt_bytes(s1, sizeof s1, m->usize);
  fmt_bytes(s2, sizeof s2, m->csize);
  if (m->method == 8 && rb > 0) {
    r.ck_rows = ckpt_rows(h.shape[0], rb);
    if (r.ck_rows > h.shape[0] && h.shape[0] > 0)
      r.ck_rows = h.shape[0]; /* one interval: no checkpoint */
    v->chunk_rows = r.ck_rows;
    int64_t nck = (h.shape[0] + r.ck_rows - 1) / r.ck_rows;
    v->cache_bytes = NPZ_IN_BUF + NPZ_SCRATCH + (size_t)nck * NPZ_CKPT_BYTES;
    snprintf(st, sizeof st,
             "member %s, deflate, %s -> %s, CRC-32 %08x, checkpoints every "
             "%lld rows",
             m->name, s1, s2, (unsigned)m->crc, (long long)r.ck_rows);
  } else {
    snprintf(st, sizeof st, "member %s, stored, %s at offset %lld", m->name, s1,
             (long long)m->data);
  }
  if (!(v->storage = strdup(st)) || rec_put(&r, &out->rec[i]) < 0)
    return ferry__oom(err, -1, !v->storage ? strlen(st) + 1 : NPZ_REC_LEN,
                      "the storage description and record of %s", label);
  out->data_offset[i] = m->method == 0 ? m->data + h.data_offset : m->data;
  out->file_size[i] = za->size;
  *nrows = h.shape[0];
  return 0;
}

static int describe_all(const ferry__zip *za, ferry__part_desc *out,
                        ferry__err *err) {
  size_t n = (size_t)za->n;
  out->vars = calloc(n, sizeof *out->vars);
  out->paths = calloc(n, sizeof *out->paths);
  out->data_offset = calloc(n, sizeof *out->data_offset);
  out->file_size = calloc(n, sizeof *out->file_size);
  out->rec = calloc(n, sizeof *out->rec);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec)
    return ferry__oom(err, -1,
                      n * (sizeof *out->vars + sizeof *out->paths +
                           sizeof *out->data_offset + sizeof *out->file_size +
                           sizeof *out->rec),
                      "the description of %zu members of %s", n, za->path);
  out->nvars = za->n;
  for (int i = 0; i < za->n; i++) {
    int64_t nrows = 0;
    int rc = describe_member(za, &za->m[i], out, i, &nrows, err);
    if (rc < 0)
      return rc;
    if (i == 0)
      out->num_samples = nrows;
    else if (nrows != out->num_samples)
      return ferry__seterr(err, FERRY_ESHAPE,
                           "%s: members '%s' (%lld samples) and '%s' (%lld "
                           "samples) differ in length (offset %lld)",
                           za->path, za->m[0].name, (long long)out->num_samples,
                           za->m[i].name, (long long)nrows,
                           (long long)za->m[i].lho);
  }
  return 0;
}

static int npz_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  (void)opts; /* npz has no option of its own */
  memset(out, 0, sizeof *out);
  ferry__zip za;
  memset(&za, 0, sizeof za);
  za.path = path;
  const char *kind = "";
  za.fd = ferry__open_regular(path, &kind);
  if (za.fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT, "%s: is %s, not a regular file",
                         path, kind);
  if (za.fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: cannot open: %s",
                         path, strerror(errno));
  struct stat st;
  int rc = 0;
  if (fstat(za.fd, &st) != 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), "%s: cannot stat: %s",
                       path, strerror(errno));
  za.size = (int64_t)st.st_size;
  if (rc == 0)
    rc = ferry__zip_read_members(&za, err);
  if (rc == 0)
    rc = describe_all(&za, out, err);
  close(za.fd);
  ferry__zip_free(&za);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* A regular file named *.npz, or a zip whose first member is a .npy. */
static int npz_probe(const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  size_t n = strlen(path);
  if (n > 4 && strcmp(path + n - 4, ".npz") == 0)
    return 1;
  int fd = ferry__open_regular(path, NULL);
  if (fd < 0)
    return 0;
  unsigned char h[FERRY__ZIP_LFH_LEN + 256];
  size_t got = 0;
  int ok = ferry__pread_full(fd, h, sizeof h, 0, &got) == 0 &&
           got >= FERRY__ZIP_LFH_LEN && memcmp(h, "PK\3\4", 4) == 0;
  close(fd);
  size_t nlen = ok ? ferry__zip_le16(h + 26) : 0;
  return ok && nlen > 4 && FERRY__ZIP_LFH_LEN + nlen <= got &&
         memcmp(h + FERRY__ZIP_LFH_LEN + nlen - 4, ".npy", 4) == 0;
}

/* ---- Reads (I/O thread; inflating on the decode pool) ------------------ */

#ifdef HAVE_ZLIB
/* A checkpoint: the inflate state as the cursor passed row j * ck_rows. */
typedef struct zckpt {
  int have;
  uint32_t crc;
  int64_t in; /* compressed bytes consumed */
  z_stream zs;
} zckpt;

/* An inflate cursor: the one of an open deflated member (keep: it takes
 * checkpoints until the member is verified), or a piece's, which shares
 * the member's checkpoints read-only and has its own state and buffers. */
typedef struct zcursor {
  npz_rec r;
  int64_t data_end; /* hlen + num_samples * row_bytes */
  int64_t every;    /* ck_rows * row_bytes */
  z_stream zs;
  int live, ended;
  int verified;    /* inflated whole once: length and CRC-32 checked */
  int keep;        /* takes checkpoints */
  int64_t out;     /* uncompressed bytes produced (member offset) */
  int64_t in_next; /* compressed offset of the next byte to read */
  uint32_t crc;    /* CRC-32 of the out bytes produced */
  int fd;          /* the archive (the handle's), read with pread */
  unsigned char *in;
  size_t in_cap;
  unsigned char *scratch; /* NPZ_SCRATCH: inflated bytes a read skips */
  zckpt *ck;              /* [nck]; ck[0] unused: the start */
  int64_t nck;
} zcursor;

static void cursor_free(zcursor *z) {
  if (!z)
    return;
  if (z->live)
    inflateEnd(&z->zs);
  for (int64_t j = 0; z->ck && j < z->nck; j++)
    if (z->ck[j].have)
      inflateEnd(&z->ck[j].zs);
  free(z->ck);
  free(z->in);
  free(z->scratch);
  free(z);
}
#else
typedef struct zcursor zcursor;
static void cursor_free(zcursor *z) { (void)z; }
#endif

typedef struct npz_handle {
  MPI_File fh;
  zcursor *z;        /* NULL for a stored member */
  int fd;            /* deflated: the archive, for the cursors' pread */
  uint64_t busy_gen; /* io->gen + 1 while a job on z is queued */
  uint64_t ref_gen;  /* io->gen + 1 while any job (a piece too) uses it */
  int verified;      /* z->verified, as the I/O thread last saw it */
} npz_handle;

/* A job on the pool: a read through a member's own cursor (z), or a piece
 * of a read through a cursor of its own (from checkpoint j). */
typedef struct npz_job {
  zcursor *z;
  int64_t rb, row, nrows;
  const zcursor *m; /* a piece: the member's cursor, for its checkpoints */
  int64_t j, from, to;
  unsigned char *buf;
  char where[FERRY__MSG_MAX / 2];
} npz_job;

struct ferry__io {
  ferry__io_base b; /* manifest, rank, mode, hints, files (io_base.c) */
  /* The decode pool (NULL: inflate inline, as with threads=1), the jobs
   * queued since the last wait, and the error of a wait no read reported
   * yet (a handle closed by the cache waits first). */
  ferry__pool *pool;
  int defer;
  npz_job **jobs;
  size_t njobs, cap;
  uint64_t gen; /* waits so far */
  int rc;
  ferry__err err;
};

/* Wait for the queued jobs; their first error (in queue order) is kept. */
static void park(ferry__io *io) {
  if (!io->njobs)
    return;
  ferry__err e;
  memset(&e, 0, sizeof e);
  int wrc = ferry__pool_wait(io->pool, &e);
  for (size_t i = 0; i < io->njobs; i++)
    free(io->jobs[i]);
  io->njobs = 0;
  io->gen++;
  if (wrc < 0 && io->rc == 0) {
    io->rc = wrc;
    io->err = e;
  }
}

/* Wait for the queued jobs: their first error, or one kept by an earlier
 * wait, wins over rc (a later read's). */
static int settle(ferry__io *io, int rc, ferry__err *err) {
  park(io);
  if (io->rc < 0) {
    *err = io->err;
    rc = io->rc;
    io->rc = 0;
  }
  return rc;
}

#ifdef HAVE_ZLIB
static int cursor_new(const ferry__manifest *m, int64_t part, int var,
                      const npz_rec *r, zcursor **out, size_t *want) {
  zcursor *z = calloc(1, sizeof *z);
  *want = sizeof *z;
  if (!z)
    return -1;
  z->r = *r;
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  z->data_end = r->hlen + m->parts[part].num_samples * rb;
  z->every = r->ck_rows * rb;
  z->nck = (m->parts[part].num_samples + r->ck_rows - 1) / r->ck_rows;
  z->keep = 1;
  z->fd = -1;
  /* no more input buffer than the member has (one-sample files) */
  z->in_cap = r->csize > 0 && r->csize < (int64_t)NPZ_IN_BUF ? (size_t)r->csize
                                                             : NPZ_IN_BUF;
  z->in = malloc(z->in_cap);
  z->scratch = malloc(NPZ_SCRATCH);
  z->ck = calloc((size_t)(z->nck ? z->nck : 1), sizeof *z->ck);
  if (!z->in || !z->scratch || !z->ck) {
    *want =
        z->in_cap + NPZ_SCRATCH + (size_t)(z->nck ? z->nck : 1) * sizeof *z->ck;
    cursor_free(z);
    return -1;
  }
  *out = z;
  return 0;
}
#endif

#ifdef HAVE_ZLIB
/* The archive's descriptor for a deflated member's cursors, checked to be
 * the size rank 0 saw. */
static int open_deflated(const ferry__io *io, const ferry__part *pt, int var,
                         npz_handle *h, ferry__err *err) {
  const char *path = pt->paths[var], *vname = io->b.m->vars[var].name;
  const char *kind = "";
  struct stat st;
  h->fd = ferry__open_regular(path, &kind);
  if (h->fd == -2)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s is %s, not a regular file (variable %s, "
                         "rank %d, offset 0)",
                         path, kind, vname, io->b.rank);
  if (h->fd < 0 || fstat(h->fd, &st) != 0) {
    int e = errno;
    return ferry__seterr(err, ferry__errno_code(e),
                         "cannot open file %s (variable %s, rank %d, offset "
                         "0): %s",
                         path, vname, io->b.rank, strerror(e));
  }
  if ((int64_t)st.st_size != pt->file_size[var])
    return ferry__seterr(err, FERRY_EMISMATCH,
                         "file %s is %lld bytes on rank %d but %lld bytes "
                         "when rank 0 scanned it (variable %s, offset 0)",
                         path, (long long)st.st_size, io->b.rank,
                         (long long)pt->file_size[var], vname);
  h->z->fd = h->fd;
  return 0;
}
#endif

static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  ferry__io *io = ctx;
  const ferry__part *pt = &io->b.m->parts[part];
  npz_rec r;
  /* The record is checked before the (possibly collective) open: it is
   * the same manifest on every rank, so every rank fails alike. */
  int rc = rec_get(io->b.m, part, var, &r, io->b.rank, err);
  if (rc < 0)
    return rc;
  npz_handle *h = calloc(1, sizeof *h);
  if (!h)
    return ferry__oom(
        err, -1, sizeof *h, "opening file %s (variable %s, rank %d)",
        io->b.m->parts[part].paths[var], io->b.m->vars[var].name, io->b.rank);
  h->fd = -1;
#ifdef HAVE_ZLIB
  size_t want = 0;
  if (r.method == 8 && cursor_new(io->b.m, part, var, &r, &h->z, &want) < 0) {
    free(h);
    return ferry__oom(err, -1, want,
                      "the inflate state on rank %d of file %s, variable %s",
                      io->b.rank, pt->paths[var], io->b.m->vars[var].name);
  }
#else
  if (r.method == 8) {
    free(h);
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "file %s, variable %s: the member is deflated and "
                         "this build of ferry has no zlib (offset %lld)",
                         pt->paths[var], io->b.m->vars[var].name,
                         (long long)r.data);
  }
#endif
  h->fh = MPI_FILE_NULL;
  /* A deflated member is read with pread only (from whichever thread
   * inflates it); an MPI-IO handle is opened for stored members, and for
   * every member with io=collective, where every rank opens alike. */
  if (!h->z || io->b.collective)
    rc = ferry__mpiio_open(io->b.comm, io->b.collective, io->b.info, io->b.rank,
                           pt->paths[var], io->b.m->vars[var].name,
                           pt->file_size[var], 0, &h->fh, err);
#ifdef HAVE_ZLIB
  if (rc == 0 && h->z) {
    rc = open_deflated(io, pt, var, h, err);
    if (io->b.collective) /* every rank closes the MPI-IO handle, or none */
      rc = ferry__agree(io->b.comm, io->b.rank, rc, err);
  }
#endif
  if (rc < 0) {
    if (h->fh != MPI_FILE_NULL)
      MPI_File_close(&h->fh);
    if (h->fd >= 0)
      close(h->fd);
    cursor_free(h->z);
    free(h);
    return rc;
  }
  *handle = h;
  return 0;
}

static void cache_close(void *ctx, void *handle) {
  ferry__io *io = ctx;
  npz_handle *h = handle;
  if (h->ref_gen == io->gen + 1)
    park(io); /* queued jobs use this handle's cursor or descriptor */
  if (h->fh != MPI_FILE_NULL)
    MPI_File_close(&h->fh);
  if (h->fd >= 0)
    close(h->fd);
  cursor_free(h->z);
  free(h);
}

static void npz_io_close(ferry__io *io) {
  if (!io)
    return;
  park(io);
  ferry__io_base_close(&io->b);
  ferry__pool_free(io->pool);
  free(io->jobs);
  free(io);
}

static int npz_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = cache_close,
      .hints = 1,
  };
  void *b = NULL;
  *out = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &b, err);
  if (rc < 0)
    return rc;
  ferry__io *io = b;
  io->defer = p->defer;
#ifdef HAVE_ZLIB
  /* A decode pool when some member is deflated (NULL: inflate inline). */
  int deflated = 0;
  for (int64_t k = 0; k < m->nparts && !deflated; k++)
    for (int v = 0; v < m->nvars && !deflated; v++) {
      npz_rec r;
      ferry__err e;
      deflated = rec_get(m, k, v, &r, p->rank, &e) == 0 && r.method == 8;
    }
  if (deflated)
    io->pool = ferry__pool_new(p->threads);
#endif
  *out = io;
  return 0;
}

#ifdef HAVE_ZLIB
/* The next compressed bytes of the member, through pread on the archive's
 * descriptor (any thread: each cursor has its own buffer). */
static int z_fill(zcursor *z, const char *where, ferry__err *err) {
  int64_t left = z->r.csize - z->in_next;
  if (left <= 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "truncated deflate data: %s, offset %lld: the "
                         "member's %lld compressed bytes end after %lld of "
                         "its %lld bytes",
                         where, (long long)(z->r.data + z->in_next),
                         (long long)z->r.csize, (long long)z->out,
                         (long long)z->r.usize);
  size_t n = left < (int64_t)z->in_cap ? (size_t)left : z->in_cap, got = 0;
  int64_t off = z->r.data + z->in_next;
  if (ferry__pread_full(z->fd, z->in, n, off, &got) != 0)
    return ferry__seterr(err, FERRY_EIO,
                         "read failed: %s, offset %lld, %zu bytes: %s", where,
                         (long long)off, n, strerror(errno));
  if (got != n)
    return ferry__seterr(err, FERRY_EIO,
                         "short read: %s, offset %lld: got %zu of %zu bytes",
                         where, (long long)off, got, n);
  z->zs.next_in = z->in;
  z->zs.avail_in = (uInt)n;
  z->in_next += (int64_t)n;
  return 0;
}

/* Start again at checkpoint j (0: the member's first byte). */
static int z_restart(zcursor *z, int64_t j, const char *where,
                     ferry__err *err) {
  if (z->live)
    inflateEnd(&z->zs);
  z->live = 0;
  memset(&z->zs, 0, sizeof z->zs);
  int zrc = j > 0 ? inflateCopy(&z->zs, &z->ck[j].zs)
                  : inflateInit2(&z->zs, -MAX_WBITS);
  if (zrc != Z_OK) /* zlib does not say how much it wanted (see above) */
    return ferry__seterr(err, FERRY_ENOMEM,
                         "zlib cannot start (out of memory?): %s, offset %lld",
                         where, (long long)z->r.data);
  z->live = 1;
  z->ended = 0;
  z->out = j > 0 ? z->r.hlen + j * z->every : 0;
  z->in_next = j > 0 ? z->ck[j].in : 0;
  z->crc = j > 0 ? z->ck[j].crc : (uint32_t)crc32(0L, Z_NULL, 0);
  z->zs.next_in = z->in;
  z->zs.avail_in = 0;
  return 0;
}

/* After an inflate step: keep a checkpoint when the cursor sits on one. */
static void z_keep(zcursor *z) {
  if (!z->keep || z->every <= 0 || z->out <= z->r.hlen ||
      (z->out - z->r.hlen) % z->every != 0)
    return;
  int64_t j = (z->out - z->r.hlen) / z->every;
  if (j <= 0 || j >= z->nck || z->ck[j].have)
    return;
  memset(&z->ck[j].zs, 0, sizeof z->ck[j].zs);
  if (inflateCopy(&z->ck[j].zs, &z->zs) != Z_OK)
    return; /* no checkpoint: later reads start further back, that is all */
  z->ck[j].have = 1;
  z->ck[j].crc = z->crc;
  z->ck[j].in = z->in_next - (int64_t)z->zs.avail_in;
}

/* Inflate until the cursor is at member offset target: into dst (which
 * holds member offsets from start on) or, when dst is NULL, into scratch.
 * Each step stops on the next checkpoint boundary so that it can be kept. */
static int z_advance(zcursor *z, int64_t target, unsigned char *dst,
                     int64_t start, const char *where, ferry__err *err) {
  while (z->out < target) {
    if (z->ended)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "corrupt deflate data: %s, offset %lld: the "
                           "stream ends after %lld bytes, the member is %lld",
                           where, (long long)(z->r.data + z->in_next),
                           (long long)z->out, (long long)z->r.usize);
    int64_t limit = target;
    if (z->every > 0) {
      int64_t j = z->out < z->r.hlen ? 1 : (z->out - z->r.hlen) / z->every + 1;
      int64_t b = z->r.hlen + j * z->every;
      if (j < z->nck && b < limit)
        limit = b;
    }
    int64_t n = limit - z->out;
    unsigned char *o = dst ? dst + (z->out - start) : z->scratch;
    int64_t cap = dst ? (int64_t)1 << 30 : (int64_t)NPZ_SCRATCH;
    if (n > cap)
      n = cap;
    int rc = 0;
    if (z->zs.avail_in == 0 && (rc = z_fill(z, where, err)) < 0)
      return rc;
    z->zs.next_out = o;
    z->zs.avail_out = (uInt)n;
    int zrc = inflate(&z->zs, Z_NO_FLUSH);
    int64_t made = n - (int64_t)z->zs.avail_out;
    z->crc = (uint32_t)crc32(z->crc, o, (uInt)made);
    z->out += made;
    if (zrc == Z_STREAM_END)
      z->ended = 1;
    else if (zrc != Z_OK && zrc != Z_BUF_ERROR)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "corrupt deflate data: %s, offset %lld: %s", where,
                           (long long)(z->r.data + z->in_next),
                           z->zs.msg ? z->zs.msg : "inflate failed");
    z_keep(z);
  }
  return 0;
}

/* The cursor reached the member's data end: inflate the rest, check that
 * the stream ends there and that the CRC-32 is the archive's. */
static int z_finish(zcursor *z, const char *where, ferry__err *err) {
  int rc = z_advance(z, z->r.usize, NULL, 0, where, err);
  for (int k = 0; rc == 0 && !z->ended; k++) {
    if (z->zs.avail_in == 0 && (rc = z_fill(z, where, err)) < 0)
      break;
    z->zs.next_out = z->scratch;
    z->zs.avail_out = 1;
    int zrc = inflate(&z->zs, Z_NO_FLUSH);
    if (z->zs.avail_out == 0)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "corrupt deflate data: %s, offset %lld: the stream "
                         "holds more than the member's %lld bytes",
                         where, (long long)(z->r.data + z->in_next),
                         (long long)z->r.usize);
    else if (zrc == Z_STREAM_END)
      z->ended = 1;
    else if (zrc != Z_OK && zrc != Z_BUF_ERROR)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "corrupt deflate data: %s, offset %lld: %s", where,
                         (long long)(z->r.data + z->in_next),
                         z->zs.msg ? z->zs.msg : "inflate failed");
  }
  if (rc == 0 && z->crc != z->r.crc)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "CRC-32 mismatch: %s, offset %lld: the member "
                       "inflates to CRC %08x, the archive says %08x",
                       where, (long long)z->r.data, (unsigned)z->crc,
                       (unsigned)z->r.crc);
  return rc;
}

/* Rows [row, row + nrows) of a deflated member into buf, through its own
 * cursor.  The first read of an open member inflates it whole (serving its
 * rows on the way), which takes every checkpoint and checks the length and
 * CRC-32 before any row of the member is served: a corrupt member is an
 * error, never data.  Runs inline or as one job (one at a time per
 * member). */
static int z_read(zcursor *z, int64_t rb, int64_t row, int64_t nrows,
                  unsigned char *buf, const char *where, ferry__err *err) {
  int64_t from = z->r.hlen + row * rb, to = from + nrows * rb;
  int64_t j = z->every > 0 ? (from - z->r.hlen) / z->every : 0;
  if (j >= z->nck)
    j = z->nck - 1;
  while (j > 0 && !z->ck[j].have)
    j--;
  if (!z->verified)
    j = 0;
  int64_t jpos = j > 0 ? z->r.hlen + j * z->every : 0;
  int rc = 0;
  if (!(z->live && !z->ended && z->out <= from && z->out >= jpos))
    rc = z_restart(z, j, where, err);
  if (rc == 0)
    rc = z_advance(z, from, NULL, 0, where, err);
  if (rc == 0)
    rc = z_advance(z, to, buf, from, where, err);
  if (rc == 0 && (to == z->data_end || !z->verified))
    rc = z_finish(z, where, err);
  if (rc == 0) {
    z->verified = 1;
    z->keep = 0; /* its checkpoints are now read by pieces */
  }
  if (rc < 0 && z->live) {
    inflateEnd(&z->zs); /* start afresh next time */
    z->live = 0;
  }
  return rc;
}

/* A piece of a read of a verified member: member bytes [from, to) into dst
 * from checkpoint j, through a cursor of its own (the member's checkpoints
 * are read, never written, once it is verified). */
static int z_piece(const npz_job *jb, ferry__err *err) {
  const zcursor *m = jb->m;
  zcursor c;
  memset(&c, 0, sizeof c);
  c.r = m->r;
  c.data_end = m->data_end;
  c.every = m->every;
  c.verified = 1;
  c.fd = m->fd;
  c.ck = m->ck;
  c.nck = m->nck;
  c.in_cap = NPZ_PIECE_IN;
  c.in = malloc(NPZ_PIECE_IN);
  c.scratch = malloc(NPZ_SCRATCH);
  int rc = 0;
  if (!c.in || !c.scratch)
    rc = ferry__oom(err, -1, NPZ_PIECE_IN + NPZ_SCRATCH,
                    "an inflate piece of %s", jb->where);
  if (rc == 0)
    rc = z_restart(&c, jb->j, jb->where, err);
  if (rc == 0)
    rc = z_advance(&c, jb->from, NULL, 0, jb->where, err);
  if (rc == 0)
    rc = z_advance(&c, jb->to, jb->buf, jb->from, jb->where, err);
  if (rc == 0 && jb->to == c.data_end)
    rc = z_finish(&c, jb->where, err);
  if (c.live)
    inflateEnd(&c.zs);
  free(c.in);
  free(c.scratch);
  return rc;
}

static int npz_job_run(void *arg, ferry__err *err) {
  const npz_job *jb = arg;
  return jb->z ? z_read(jb->z, jb->rb, jb->row, jb->nrows, jb->buf, jb->where,
                        err)
               : z_piece(jb, err);
}

/* Queue job (copied), or, when it cannot be queued, run it here after the
 * queued ones (out of memory: inline, still in order). */
static int queue(ferry__io *io, const npz_job *job, ferry__err *err) {
  npz_job *j = malloc(sizeof *j);
  if (j && io->njobs == io->cap) {
    size_t cap = io->cap ? 2 * io->cap : 16;
    npz_job **v = realloc(io->jobs, cap * sizeof *v);
    if (v) {
      io->jobs = v;
      io->cap = cap;
    }
  }
  if (!j || io->njobs == io->cap) {
    free(j);
    int rc = settle(io, 0, err);
    return rc < 0 ? rc : npz_job_run((void *)job, err);
  }
  *j = *job;
  io->jobs[io->njobs++] = j;
  return ferry__pool_submit(io->pool, npz_job_run, j, err);
}

/* A deflated read on the pool: through the member's own cursor (its first
 * read, which verifies it, or a read inside one checkpoint interval, which
 * may go on from where the cursor is), or cut at the checkpoints into
 * pieces inflated at once, each from its checkpoint.  One job at a time
 * uses a member's cursor: a read of a member whose cursor is queued goes
 * as pieces once the member is verified, else waits for the queue. */
static int z_read_par(ferry__io *io, npz_handle *h, int64_t rb, int64_t row,
                      int64_t nrows, unsigned char *buf, const char *where,
                      ferry__err *err) {
  zcursor *z = h->z;
  int rc = 0, busy = h->busy_gen == io->gen + 1;
  /* z->verified is read only while no job uses the cursor; h->verified
   * is this thread's copy. */
  if (busy && !h->verified && (rc = settle(io, 0, err)) < 0)
    return rc;
  busy = h->busy_gen == io->gen + 1;
  if (!busy)
    h->verified = z->verified;
  npz_job jb;
  memset(&jb, 0, sizeof jb);
  snprintf(jb.where, sizeof jb.where, "%s", where);
  int64_t from = z->r.hlen + row * rb, to = from + nrows * rb;
  /* The checkpoints strictly inside [from, to) cut the read. */
  int64_t j1 = z->every > 0 ? (from - z->r.hlen) / z->every + 1 : z->nck;
  int cut = 0;
  for (int64_t j = j1; h->verified && j < z->nck && !cut; j++)
    cut = z->r.hlen + j * z->every < to && z->ck[j].have;
  if (!cut && !busy) {
    jb.z = z;
    jb.rb = rb;
    jb.row = row;
    jb.nrows = nrows;
    jb.buf = buf;
    h->busy_gen = h->ref_gen = io->gen + 1;
    return queue(io, &jb, err);
  }
  jb.m = z;
  h->ref_gen = io->gen + 1;
  int64_t p = from, start = 0; /* start: the checkpoint p is reached from */
  for (int64_t j = 1; j < z->nck && z->r.hlen + j * z->every <= from; j++)
    if (z->ck[j].have)
      start = j;
  while (rc == 0 && p < to) {
    int64_t q = to, next = -1;
    for (int64_t j = start + 1; j < z->nck && next < 0; j++)
      if (z->ck[j].have && z->r.hlen + j * z->every > p &&
          z->r.hlen + j * z->every < to)
        next = j;
    if (next > 0)
      q = z->r.hlen + next * z->every;
    jb.j = start;
    jb.from = p;
    jb.to = q;
    jb.buf = buf + (p - from);
    rc = queue(io, &jb, err);
    p = q;
    start = next;
  }
  return rc;
}
#endif

static int npz_io_wait(ferry__io *io, ferry__err *err) {
  return settle(io, 0, err);
}

static int npz_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc)
    return rc;
  const ferry__part *pt = &m->parts[part];
  const char *path = pt->paths[var], *vname = m->vars[var].name;
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  void *hv = NULL;
  if ((rc = ferry__handle_get(&io->b.files, part, var, io->b.rank, &hv, err)) <
      0)
    return settle(io, rc, err);
  npz_handle *h = hv;
  /* Local checks after the (possibly collective) open, as in npy.c. */
  rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", path, vname,
           io->b.rank);
  if (h->z) {
#ifdef HAVE_ZLIB
    if (rc < 0 || nrows == 0)
      return settle(io, rc, err);
    if (!io->pool)
      return settle(io, z_read(h->z, rb, row, nrows, buf, where, err), err);
    rc = z_read_par(io, h, rb, row, nrows, buf, where, err);
    return io->defer && rc == 0 ? 0 : settle(io, rc, err);
#endif
  }
  int64_t offset = pt->data_offset[var], nbytes = 0;
  if (rc == 0) {
    offset += row * rb; /* bounded by the record rec_get checked */
    nbytes = nrows * rb;
    if (io->b.collective && nbytes > INT_MAX)
      rc = ferry__seterr(err, FERRY_ENOTSUP,
                         "collective read of %lld bytes from file %s "
                         "(variable %s, rank %d, offset %lld) exceeds the "
                         "2 GiB one MPI call can read; use a smaller "
                         "chunk_samples",
                         (long long)nbytes, path, vname, io->b.rank,
                         (long long)offset);
  }
  rc = ferry__mpiio_read_range(h->fh, io->b.collective, offset, nbytes, buf, rc,
                               where, err);
  return io->defer && rc == 0 ? 0 : settle(io, rc, err);
}

const ferry__backend ferry__backend_npz = {
    .name = "npz",
    .version = 1,
    /* NOT_FLAT: a deflated member's rows are not data_offset-based bytes of
     * the file; the npz records carry the bounds (rec_get). */
    .caps = FERRY__CAP_COLLECTIVE | FERRY__CAP_NOT_FLAT,
    .record_version = NPZ_REC_VERSION,
    .probe = npz_probe,
    .accepts = "a NumPy .npz archive",
    .describe = npz_describe,
    .io_open = npz_io_open,
    .io_read = npz_io_read,
    .io_close = npz_io_close,
    .io_wait = npz_io_wait,
};
