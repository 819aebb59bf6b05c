/*
 * megatron.c - Megatron-LM / NeMo indexed datasets: PREFIX.idx + PREFIX.bin,
 * the pre-tokenised corpora megatron/core/datasets/indexed_dataset.py
 * writes (docs/ragged.md, "Megatron-LM indexed datasets").  One ragged
 * variable, "tokens": a sample is one sequence of the index (or, with
 * megatron_sample=document, the sequences of one document).
 *
 * The index, all little-endian:
 *   "MMIDIDX\0\0"  u64 version (1)  u8 dtype code
 *   u64 S (sequences)  u64 D (document indices, one more than documents)
 *   i32 lengths[S]  i64 pointers[S] (byte offset of each sequence in .bin)
 *   i64 document_indices[D] (0, then the sequence index ending each
 *   document, the last S)  [i8 modes[S]: multimodal datasets only]
 * dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64,
 * 7 float32, 8 uint16.
 *
 * Rank 0 reads the index once (describe): every length and pointer is
 * checked (no negative length, each sequence right after the one before,
 * the last one inside .bin), and the offsets of the samples go into the
 * manifest, broadcast with it; the .bin is then a flat array of tokens
 * read like a .npy (pread from a cache of descriptors).  Nothing read from
 * the index is trusted before it is checked, and a count is checked
 * against the index's size before anything is allocated for it.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/toolkit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEG_MAGIC "MMIDIDX\0\0"
enum { MEG_MAGIC_LEN = 9, MEG_HEAD = 34, MEG_BLOCK = 1 << 16 };

/* Megatron's DType codes, 1..8, as ferry dtypes. */
static int dtype_of_code(unsigned code, ferry_dtype *out) {
  static const ferry_dtype map[9] = {
      FERRY_DTYPE_COUNT, FERRY_UINT8,   FERRY_INT8,    FERRY_INT16, FERRY_INT32,
      FERRY_INT64,       FERRY_FLOAT64, FERRY_FLOAT32, FERRY_UINT16};
  if (code < 1 || code > 8)
    return -1;
  *out = map[code];
  return 0;
}

static char *with_suffix(const char *prefix, const char *suf);

/* PREFIX.idx in directory dir with its PREFIX.bin beside it. */
static int idx_with_bin(const char *dir, const char *name) {
  if (!ferry__has_suffix(name, ".idx"))
    return 0;
  char *p = ferry__join_path(dir, name);
  char *bin = NULL;
  struct stat st;
  if (p) {
    p[strlen(p) - 4] = '\0';
    bin = with_suffix(p, ".bin");
  }
  int yes = bin && stat(bin, &st) == 0 && S_ISREG(st.st_mode);
  free(p);
  free(bin);
  return yes;
}

/* DIR/PREFIX when directory dir holds exactly one PREFIX.idx with its
 * PREFIX.bin (what `ferry gen --format megatron` writes), else NULL. */
static char *dir_prefix(const char *dir) {
  char *found = ferry__dir_only_file(dir, idx_with_bin);
  if (found)
    found[strlen(found) - 4] = '\0';
  return found;
}

/* PREFIX of PREFIX.idx or PREFIX.bin, or of the one pair in a directory
 * (malloc'd), or NULL. */
static char *prefix_of(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return dir_prefix(path);
  if (!ferry__has_suffix(path, ".idx") && !ferry__has_suffix(path, ".bin"))
    return NULL;
  size_t n = strlen(path) - 4;
  char *p = malloc(n + 5);
  if (p) {
    memcpy(p, path, n);
    p[n] = '\0';
  }
  return p;
}

static char *with_suffix(const char *prefix, const char *suf) {
  size_t n = strlen(prefix);
  char *p = malloc(n + strlen(suf) + 1);
  if (p) {
    memcpy(p, prefix, n);
    strcpy(p + n, suf);
  }
  return p;
}

/* PREFIX.idx or PREFIX.bin, with both files there, or a directory of one
 * such pair (describe then says
 * what is wrong with an index that is not one Megatron wrote; a lone
 * index is named by sniff.c from its magic). */
static int megatron_probe(const char *path) {
  char *prefix = prefix_of(path);
  if (!prefix)
    return 0;
  char *idx = with_suffix(prefix, ".idx"), *bin = with_suffix(prefix, ".bin");
  struct stat a, b;
  int ok = idx && bin && stat(bin, &b) == 0 && S_ISREG(b.st_mode) &&
           stat(idx, &a) == 0 && S_ISREG(a.st_mode);
  free(prefix);
  free(idx);
  free(bin);
  return ok;
}

/* What describe reads of an index. */
typedef struct meg_index {
  const char *idx, *bin; /* paths, for messages */
  int fd;
  int64_t idx_size, bin_size;
  unsigned code;
  ferry_dtype dtype;
  size_t item;
  uint64_t nseq, ndoc;
  int multimodal;
} meg_index;

static int64_t le64(const unsigned char *p) {
  return (int64_t)ferry__le64_load(p);
}

/* The header and the sizes: S and D bounded by the index's size. */
static int read_header(meg_index *x, ferry__err *err) {
  unsigned char h[MEG_HEAD];
  size_t got = 0;
  if (ferry__pread_full(x->fd, h, sizeof h, 0, &got) != 0)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "read failed: file %s, offset 0: %s", x->idx,
                         strerror(errno));
  if (got < sizeof h || memcmp(h, MEG_MAGIC, MEG_MAGIC_LEN) != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: not a Megatron index (%s; it starts "
                         "with \"MMIDIDX\\0\\0\" and is at least %d bytes)",
                         x->idx, got < sizeof h ? "too short" : "bad magic",
                         MEG_HEAD);
  uint64_t version = ferry__le64_load(h + 9);
  if (version != 1)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset 9: index version %llu; ferry "
                         "reads version 1",
                         x->idx, (unsigned long long)version);
  x->code = h[17];
  if (dtype_of_code(x->code, &x->dtype) < 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset 17: dtype code %u is not one "
                         "Megatron writes (1 to 8)",
                         x->idx, x->code);
  x->item = ferry_dtype_size(x->dtype);
  x->nseq = ferry__le64_load(h + 18);
  x->ndoc = ferry__le64_load(h + 26);
  uint64_t room = (uint64_t)(x->idx_size - MEG_HEAD);
  if (x->nseq > room / 12 || x->ndoc > (room - x->nseq * 12) / 8)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: the header says %llu sequences and %llu "
                         "document indices, more than the index's %lld "
                         "bytes hold",
                         x->idx, (unsigned long long)x->nseq,
                         (unsigned long long)x->ndoc, (long long)x->idx_size);
  uint64_t want = MEG_HEAD + x->nseq * 12 + x->ndoc * 8;
  if ((uint64_t)x->idx_size == want + x->nseq && x->nseq > 0)
    x->multimodal = 1; /* the modes follow; ferry does not serve them */
  else if ((uint64_t)x->idx_size != want)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: %lld bytes, but %llu sequences and %llu "
                         "document indices make %llu (or %llu with modes)",
                         x->idx, (long long)x->idx_size,
                         (unsigned long long)x->nseq,
                         (unsigned long long)x->ndoc, (unsigned long long)want,
                         (unsigned long long)(want + x->nseq));
  return 0;
}

/* n little-endian values of size w (4 or 8) at off, in blocks, into out
 * (int64). */
static int read_array(const meg_index *x, int64_t off, uint64_t n, int w,
                      int64_t *out, ferry__err *err) {
  unsigned char *b = malloc((size_t)MEG_BLOCK * (size_t)w);
  if (!b)
    return ferry__oom(err, -1, (size_t)MEG_BLOCK * (size_t)w,
                      "reading index %s", x->idx);
  int rc = 0;
  for (uint64_t i = 0; rc == 0 && i < n; i += MEG_BLOCK) {
    uint64_t k = n - i < MEG_BLOCK ? n - i : MEG_BLOCK;
    size_t got = 0, want = (size_t)k * (size_t)w;
    int64_t at = off + (int64_t)(i * (uint64_t)w);
    if (ferry__pread_full(x->fd, b, want, at, &got) != 0)
      rc = ferry__seterr(err, ferry__errno_code(errno),
                         "read failed: file %s, offset %lld: %s", x->idx,
                         (long long)at, strerror(errno));
    else if (got != want)
      rc = ferry__seterr(err, FERRY_EIO,
                         "short read: file %s, offset %lld: got %zu of %zu "
                         "bytes",
                         x->idx, (long long)at, got, want);
    for (uint64_t j = 0; rc == 0 && j < k; j++)
      out[i + j] =
          w == 4 ? (int32_t)ferry__le32_load(b + j * 4) : le64(b + j * 8);
  }
  free(b);
  return rc;
}

/* Lengths and pointers checked; roff[i] = the first token of sequence i
 * (roff[S] = all tokens); *first = pointers[0]. */
static int check_sequences(const meg_index *x, const int64_t *len,
                           const int64_t *ptr, int64_t *roff, int64_t *first,
                           ferry__err *err) {
  int64_t lens_at = MEG_HEAD, ptrs_at = MEG_HEAD + (int64_t)x->nseq * 4;
  *first = x->nseq ? ptr[0] : 0;
  if (*first < 0 || *first > x->bin_size)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: sequence 0 starts at byte "
                         "%lld, outside %s (%lld bytes)",
                         x->idx, (long long)ptrs_at, (long long)*first, x->bin,
                         (long long)x->bin_size);
  int64_t room = (x->bin_size - *first) / (int64_t)x->item, at = 0;
  roff[0] = 0;
  for (uint64_t i = 0; i < x->nseq; i++) {
    if (len[i] < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, offset %lld: sequence %llu has length "
                           "%lld",
                           x->idx, (long long)(lens_at + (int64_t)i * 4),
                           (unsigned long long)i, (long long)len[i]);
    if (ptr[i] != *first + at * (int64_t)x->item)
      return ferry__seterr(
          err, FERRY_EFORMAT,
          "file %s, offset %lld: sequence %llu starts at byte %lld of %s, "
          "but the sequences before it end at %lld (ferry reads indexes "
          "whose sequences follow one another, as Megatron writes them)",
          x->idx, (long long)(ptrs_at + (int64_t)i * 8), (unsigned long long)i,
          (long long)ptr[i], x->bin,
          (long long)(*first + at * (int64_t)x->item));
    if (len[i] > room - at)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s: sequence %llu (%lld tokens at byte "
                           "%lld) runs past the end of %s (%lld bytes)",
                           x->idx, (unsigned long long)i, (long long)len[i],
                           (long long)ptr[i], x->bin, (long long)x->bin_size);
    at += len[i];
    roff[i + 1] = at;
  }
  return 0;
}

/* megatron_sample=document: the offsets of the documents, from the
 * document indices (0, ..., S, never decreasing) and the sequences'
 * offsets roff (S + 1 of them), into *out (D of them). */
static int documents(const meg_index *x, const int64_t *doc,
                     const int64_t *roff, int64_t **out, ferry__err *err) {
  int64_t at = MEG_HEAD + (int64_t)x->nseq * 12;
  if (x->ndoc < 1 || doc[0] != 0 || doc[x->ndoc - 1] != (int64_t)x->nseq)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: the document indices must "
                         "run from 0 to the sequence count %llu (there are "
                         "%llu, from %lld to %lld)",
                         x->idx, (long long)at, (unsigned long long)x->nseq,
                         (unsigned long long)x->ndoc,
                         x->ndoc ? (long long)doc[0] : -1LL,
                         x->ndoc ? (long long)doc[x->ndoc - 1] : -1LL);
  for (uint64_t d = 1; d < x->ndoc; d++)
    if (doc[d] < doc[d - 1])
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, offset %lld: document index %llu (%lld) "
                           "is less than the one before it (%lld)",
                           x->idx, (long long)(at + (int64_t)d * 8),
                           (unsigned long long)d, (long long)doc[d],
                           (long long)doc[d - 1]);
  int64_t *o = malloc((size_t)x->ndoc * sizeof *o);
  if (!o)
    return ferry__oom(err, -1, (size_t)x->ndoc * sizeof *o,
                      "the %llu documents of index %s",
                      (unsigned long long)x->ndoc, x->idx);
  for (uint64_t d = 0; d < x->ndoc; d++)
    o[d] = roff[doc[d]]; /* doc[d] in [0, S]: checked above */
  *out = o;
  return 0;
}

static int want_documents(const ferry_options *opts) {
  char v[32];
  return opts && ferry_options_get(opts, "megatron_sample", v, sizeof v) == 0 &&
         strcmp(v, "document") == 0;
}

/* The index's arrays, checked, into the part's offsets. */
static int read_index(meg_index *x, int docs, int64_t **roff_out,
                      int64_t *first, ferry__err *err) {
  size_t n = (size_t)x->nseq;
  int64_t *len = malloc((n ? n : 1) * sizeof *len);
  int64_t *ptr = malloc((n ? n : 1) * sizeof *ptr);
  int64_t *roff = malloc((n + 1) * sizeof *roff);
  int64_t *doc = docs ? malloc(((size_t)x->ndoc + 1) * sizeof *doc) : NULL;
  int rc = 0;
  if (!len || !ptr || !roff || (docs && !doc))
    rc = ferry__oom(err, -1, (3 * n + (docs ? (size_t)x->ndoc : 0)) * 8,
                    "the %zu sequences of index %s", n, x->idx);
  if (rc == 0)
    rc = read_array(x, MEG_HEAD, x->nseq, 4, len, err);
  if (rc == 0)
    rc = read_array(x, MEG_HEAD + (int64_t)n * 4, x->nseq, 8, ptr, err);
  if (rc == 0)
    rc = check_sequences(x, len, ptr, roff, first, err);
  if (rc == 0 && docs)
    rc = read_array(x, MEG_HEAD + (int64_t)n * 12, x->ndoc, 8, doc, err);
  if (rc == 0 && docs) {
    int64_t *d = NULL;
    rc = documents(x, doc, roff, &d, err);
    if (rc == 0) {
      free(roff);
      roff = d;
    }
  }
  free(len);
  free(ptr);
  free(doc);
  if (rc < 0)
    free(roff);
  else
    *roff_out = roff;
  return rc;
}

static int file_size_of(const char *path, int64_t *out, ferry__err *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return ferry__seterr(err, ferry__errno_code(errno), "%s: %s", path,
                         strerror(errno));
  if (!S_ISREG(st.st_mode))
    return ferry__seterr(err, FERRY_EFORMAT, "%s is not a regular file", path);
  *out = (int64_t)st.st_size;
  return 0;
}

static int alloc_desc(ferry__part_desc *out, const char *path,
                      ferry__err *err) {
  out->vars = calloc(1, sizeof *out->vars);
  out->paths = calloc(1, sizeof *out->paths);
  out->data_offset = calloc(1, sizeof *out->data_offset);
  out->file_size = calloc(1, sizeof *out->file_size);
  out->roff = calloc(1, sizeof *out->roff);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->roff || !(out->vars[0].name = strdup("tokens")))
    return ferry__oom(err, -1, 64, "the description of %s", path);
  out->nvars = 1;
  return 0;
}

static int megatron_describe(const char *path, const ferry_options *opts,
                             ferry__part_desc *out, ferry__err *err) {
  memset(out, 0, sizeof *out);
  meg_index x = {0};
  char *prefix = prefix_of(path), *idx = NULL, *bin = NULL;
  int docs = want_documents(opts), rc = 0;
  x.fd = -1;
  if (!prefix || !(idx = with_suffix(prefix, ".idx")) ||
      !(bin = with_suffix(prefix, ".bin"))) {
    rc = prefix ? ferry__oom(err, -1, 2 * strlen(path) + 10, "the paths of %s",
                             path)
                : ferry__seterr(err, FERRY_EFORMAT,
                                "%s: a Megatron dataset is PREFIX.idx or "
                                "PREFIX.bin",
                                path);
    goto done;
  }
  x.idx = idx;
  x.bin = bin;
  if ((rc = file_size_of(idx, &x.idx_size, err)) < 0 ||
      (rc = file_size_of(bin, &x.bin_size, err)) < 0)
    goto done;
  if ((x.fd = ferry__open_regular(idx, NULL)) < 0) {
    rc = ferry__seterr(err, ferry__errno_code(errno), "open failed: %s: %s",
                       idx, strerror(errno));
    goto done;
  }
  int64_t first = 0;
  if ((rc = read_header(&x, err)) < 0 || (rc = alloc_desc(out, path, err)) < 0)
    goto done;
  if ((rc = read_index(&x, docs, &out->roff[0], &first, err)) < 0)
    goto done;
  ferry__var *v = &out->vars[0];
  v->dtype = x.dtype;
  v->row_ndim = 0;
  v->row_bytes = x.item;
  v->ragged = 1;
  out->num_samples = docs ? (int64_t)x.ndoc - 1 : (int64_t)x.nseq;
  out->paths[0] = bin;
  bin = NULL;
  out->data_offset[0] = first;
  out->file_size[0] = x.bin_size;
  char s[256];
  snprintf(s, sizeof s,
           "megatron index %s: %llu sequences in %llu documents, %s%s", idx,
           (unsigned long long)x.nseq,
           (unsigned long long)(x.ndoc ? x.ndoc - 1 : 0),
           docs ? "a sample is a document" : "a sample is a sequence",
           x.multimodal ? " (multimodal: the modes are not served)" : "");
  if (!(v->storage = strdup(s)))
    rc = ferry__oom(err, -1, strlen(s) + 1, "the description of %s", path);
done:
  if (x.fd >= 0)
    close(x.fd);
  free(prefix);
  free(idx);
  free(bin);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

/* The .bin files in the toolkit's handle cache (a descriptor, or with
 * io=collective an MPI_File: ferry__io_base_var_open);
 * a ragged read is one pread of the samples' tokens, which follow one
 * another in the file. */
struct ferry__io {
  ferry__io_base b;
};

static int megatron_io_open(ferry__io **out, const ferry__manifest *m,
                            const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = ferry__io_base_var_open,
      .close = ferry__io_base_var_close,
      .hints = 1,
  };
  void *io = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &io, err);
  *out = io;
  return rc;
}

/* The byte range in the .bin of the values of rows [row, row+nrows) of
 * var of part (checked), and its file's descriptor when nbytes > 0. */
static int values_span(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, int64_t *off, int64_t *nbytes, void **h,
                       ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc == 0)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  if (rc)
    return rc;
  const ferry__part *pt = &m->parts[part];
  if (!pt->roff || !pt->roff[var])
    return ferry__seterr(err, FERRY_EINTERNAL,
                         "file %s (rank %d): no offsets for ragged variable %s",
                         pt->paths[var], io->b.rank, m->vars[var].name);
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  *off = pt->data_offset[var] + pt->roff[var][row] * rb;
  *nbytes = (pt->roff[var][row + nrows] - pt->roff[var][row]) * rb;
  *h = NULL;
  if (*nbytes == 0)
    return 0;
  return ferry__handle_get(&io->b.files, part, var, io->b.rank, h, err);
}

/* io=collective: every rank makes the same calls (the loader's rounds,
 * empty reads included), so the open and the read are made whatever this
 * rank's own checks say; a rank that cannot read joins with 0 bytes. */
static int read_collective(ferry__io *io, int64_t part, int var, int64_t row,
                           int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc)
    return rc; /* a caller bug: the same on every rank */
  const ferry__part *pt = &m->parts[part];
  void *h = NULL;
  rc = ferry__handle_get(&io->b.files, part, var, io->b.rank, &h, err);
  if (rc < 0)
    return rc;
  int64_t off = 0, nbytes = 0;
  void *unused = NULL;
  if (nrows > 0)
    rc = values_span(io, part, var, row, nrows, &off, &nbytes, &unused, err);
  if (rc == 0 && nbytes > INT_MAX)
    rc = ferry__seterr(err, FERRY_ENOTSUP,
                       "collective read of %lld bytes from file %s (variable "
                       "%s, rank %d, offset %lld) exceeds the 2 GiB one MPI "
                       "call can read; use a smaller chunk_samples",
                       (long long)nbytes, pt->paths[var], m->vars[var].name,
                       io->b.rank, (long long)off);
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           m->vars[var].name, io->b.rank);
  return ferry__mpiio_read_range(*(MPI_File *)h, 1, rc ? 0 : off,
                                 rc ? 0 : nbytes, buf, rc, where, err);
}

static int megatron_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                            int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  if (io->b.collective)
    return read_collective(io, part, var, row, nrows, buf, err);
  const ferry__part *pt = &m->parts[part];
  int64_t off = 0, nbytes = 0;
  void *h = NULL;
  int rc = values_span(io, part, var, row, nrows, &off, &nbytes, &h, err);
  if (rc < 0 || nbytes == 0)
    return rc;
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           m->vars[var].name, io->b.rank);
  return ferry__pread_exact(*(int *)h, buf, nbytes, off, where, err);
}

/* io=mmap: the values of rows [row, row+nrows) mapped from the .bin (the
 * loader's I/O is then independent). */
static int megatron_io_map(ferry__io *io, int64_t part, int var, int64_t row,
                           int64_t nrows, ferry__mapping *out,
                           ferry__err *err) {
  const ferry__part *pt = &io->b.m->parts[part];
  int64_t off = 0, nbytes = 0;
  void *h = NULL;
  memset(out, 0, sizeof *out);
  if (io->b.collective)
    return ferry__seterr(err, FERRY_EINVAL,
                         "io=mmap with files opened for collective I/O");
  int rc = values_span(io, part, var, row, nrows, &off, &nbytes, &h, err);
  if (rc < 0)
    return rc;
  return ferry__map_range(h ? *(int *)h : -1, pt->paths[var], off,
                          (size_t)nbytes, out, err);
}

static void megatron_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_megatron = {
    .name = "megatron",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_COLLECTIVE | FERRY__CAP_COLLECTIVE_RAGGED,
    .probe = megatron_probe,
    .accepts = "a Megatron-LM indexed dataset (PREFIX.idx with PREFIX.bin, "
               "or a directory of one such pair)",
    .describe = megatron_describe,
    .io_open = megatron_io_open,
    .io_read = megatron_io_read,
    .io_map = megatron_io_map,
    .io_close = megatron_io_close,
};
