/*
 * arrow.c - Arrow IPC files: the stream format Hugging Face `datasets`
 * writes (`save_to_disk`: data-NNNNN-of-NNNNN.arrow) and the file format
 * (Feather v2, "ARROW1"), docs/ragged.md.  One part per file; its
 * top-level columns are the variables:
 *   - Int, FloatingPoint: dense, one element per sample;
 *   - FixedSizeList<numeric>: dense rows of listSize elements;
 *   - List / LargeList<numeric>: ragged (offsets of 32 / 64 bits);
 *   - Binary, Utf8, LargeBinary, LargeUtf8: ragged uint8.
 * Other columns (Bool, bit-packed; structs, nested lists, dictionaries,
 * dates, ...) are skipped with a note, a column holding nulls too.
 *
 * Rank 0 (describe) walks the messages: the Schema, then every
 * RecordBatch's metadata (its FieldNodes and Buffers), without reading a
 * body but for the offsets buffers of the ragged columns; every buffer is
 * checked to lie inside its body and the body inside the file, every
 * offsets buffer to start at 0 or more, never decrease and end inside its
 * values buffer.  A record batch is where its values are: the variable's
 * record (broadcast with the manifest) lists, per record batch, its rows,
 * the file position of its values and its first offset; reads cut at the
 * record batches' bounds.  Record batches are the storage chunks
 * (chunk_rows: the first one's rows).  Compressed bodies (a record
 * batch's BodyCompression: LZ4 frame or zstd, per buffer: its decoded
 * length as int64, -1 for a buffer left as it is, then the bytes): the
 * offsets buffers are decoded at describe, and a read decodes the values
 * buffer of each record batch it touches, then copies its rows (the
 * record then also names each batch's codec and buffer length).  Not
 * read: big-endian files, dictionary batches.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/arrow.h"
#include "codecs/codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Messages ---------------------------------------------------------- */

/* One record batch as describe keeps it, per served top-level field. */
typedef struct abatch {
  int64_t rows;
  int codec;     /* body compression: 0 none, FERRY__CODEC_LZ4_FRAME or
                  * FERRY__CODEC_ZSTD                                   */
  int64_t *pos;  /* [nfields of s] file position of the values, -1: none */
  int64_t *off0; /* [..] ragged: the first offset                      */
  int64_t *vlen; /* [..] bytes of the values buffer, as stored          */
} abatch;

typedef struct afile {
  const char *path;
  int fd;
  int64_t size;
  int compressed; /* a record batch is: the records' longer layout */
  aschema s;
  abatch *rb;
  int64_t nrb, caprb;
  int64_t **roff; /* [nfields] ragged: offsets over the file's rows  */
  int64_t *rcap;  /* [nfields] their capacity                        */
  int64_t rows;
} afile;

static int rd(afile *a, int64_t at, void *buf, size_t n, ferry__err *err) {
  size_t got = 0;
  if (at < 0 || at > a->size || (uint64_t)(a->size - at) < n)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: %zu bytes at offset %lld run past its end "
                         "(%lld bytes)",
                         a->path, n, (long long)at, (long long)a->size);
  if (ferry__pread_full(a->fd, buf, n, at, &got) != 0)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "read failed: file %s, offset %lld: %s", a->path,
                         (long long)at, strerror(errno));
  if (got != n)
    return ferry__seterr(err, FERRY_EIO,
                         "short read: file %s, offset %lld: got %zu of %zu",
                         a->path, (long long)at, got, n);
  return 0;
}

/* The message at *at: its metadata (malloc'd into *meta, *mlen bytes, the
 * flatbuffer) and its body's position and length; *at moves past it.
 * Returns 1 at the end of the stream, 0, or an error. */
static int read_message(afile *a, int64_t *at, unsigned char **meta,
                        uint32_t *mlen, int64_t *body, ferry__err *err) {
  unsigned char h[8];
  *meta = NULL;
  if (*at == a->size)
    return 1; /* a stream may end without its end marker */
  if (a->size - *at < 4)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a message runs past the end",
                         a->path, (long long)*at);
  int rc = rd(a, *at, h, a->size - *at >= 8 ? 8 : 4, err);
  if (rc)
    return rc;
  uint32_t first = ferry__le32_load(h);
  int64_t lenat = first == 0xFFFFFFFFu ? *at + 4 : *at;
  if (first == 0xFFFFFFFFu && a->size - *at < 8)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a message runs past the end",
                         a->path, (long long)*at);
  const unsigned char *l = first == 0xFFFFFFFFu ? h + 4 : h;
  uint32_t n = ferry__le32_load(l);
  if (n == 0)
    return 1; /* the end-of-stream marker */
  if ((int64_t)n > ARROW_MAX_META || (int64_t)n > a->size - lenat - 4)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a message's metadata of %u "
                         "bytes runs past the end of the file",
                         a->path, (long long)lenat, n);
  if (!(*meta = malloc(n)))
    return ferry__oom(err, -1, n, "a message of file %s", a->path);
  if ((rc = rd(a, lenat + 4, *meta, n, err))) {
    free(*meta);
    *meta = NULL;
    return rc;
  }
  *mlen = n;
  *body = lenat + 4 + n;
  ferry__fb b = {*meta, n};
  int64_t msg = ferry__fb_deref(&b, 0), blen = 0;
  if (msg < 0 || ferry__fb_scalar(&b, (size_t)msg, 3, 8, 0, &blen) < 0 ||
      blen < 0 || blen > a->size - *body) {
    free(*meta);
    *meta = NULL;
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: a message whose body (%lld "
                         "bytes) runs past the end of the file, or a bad "
                         "flatbuffer",
                         a->path, (long long)lenat, (long long)blen);
  }
  *at = *body + blen;
  return 0;
}

/* ---- Record batches ---------------------------------------------------- */

/* Buffer i of the record batch (flatbuffer b, vector at bufs, n of them),
 * as a file position and length inside the body [body, body+blen). */
static int buffer_at(const ferry__fb *b, int64_t bufs, uint32_t n, int i,
                     int64_t body, int64_t blen, int64_t *pos, int64_t *len) {
  int64_t o = 0, l = 0;
  if (i < 0 || (uint32_t)i >= n ||
      ferry__fb_i64(b, (size_t)bufs + 4 + 16 * (size_t)i, &o) < 0 ||
      ferry__fb_i64(b, (size_t)bufs + 12 + 16 * (size_t)i, &l) < 0 || o < 0 ||
      l < 0 || o > blen || l > blen - o)
    return -1;
  *pos = body + o;
  *len = l;
  return 0;
}

static int node_at(const ferry__fb *b, int64_t nodes, uint32_t n, int i,
                   int64_t *len, int64_t *nulls) {
  if (i < 0 || (uint32_t)i >= n ||
      ferry__fb_i64(b, (size_t)nodes + 4 + 16 * (size_t)i, len) < 0 ||
      ferry__fb_i64(b, (size_t)nodes + 12 + 16 * (size_t)i, nulls) < 0 ||
      *len < 0 || *nulls < 0)
    return -1;
  return 0;
}

/* A compressed buffer's decoded length: its int64 header, or (-1: left as
 * it is) its bytes after the header; an empty buffer has no header.
 * Bounded by what the codec can make of the bytes.  0, FERRY_EFORMAT, or
 * FERRY_ENOTSUP for a header that holds the buffer's own compressed length
 * (apache-arrow's JavaScript writer, up to 21 at least, writes that where
 * the format says the decoded length, and its reader ignores it). */
#define JS_PREFIX                                                              \
  "its length prefix is the compressed length, not the decoded one (the "      \
  "npm apache-arrow writer does this): rewrite the file with pyarrow or "      \
  "Arrow C++, or without compression"

static int decoded_len(int codec, const unsigned char h[8], int64_t len,
                       int64_t *out) {
  if (len == 0) {
    *out = 0;
    return 0;
  }
  if (len < 8)
    return FERRY_EFORMAT;
  int64_t u = (int64_t)ferry__le64_load(h);
  if (u == -1) {
    *out = len - 8;
    return 0;
  }
  if (u == len - 8)
    return FERRY_ENOTSUP;
  if (u < 0 || (uint64_t)u > ferry__codec_max_decoded(codec, (size_t)len - 8))
    return FERRY_EFORMAT;
  *out = u;
  return 0;
}

/* A buffer of a compressed batch decoded: *out (malloc'd, *outlen bytes).
 * in[len] is the buffer as stored; where names it in messages. */
static int decode_buffer(int codec, const unsigned char *in, int64_t len,
                         unsigned char **out, int64_t *outlen,
                         const char *where, ferry__err *err) {
  int64_t u = 0;
  const char *why = NULL;
  *out = NULL;
  int rc = decoded_len(codec, in, len, &u);
  if (rc == FERRY_ENOTSUP)
    return ferry__seterr(err, rc, "%s: a compressed buffer: %s", where,
                         JS_PREFIX);
  if (rc)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: a compressed buffer of %lld bytes says it "
                         "decodes to %lld",
                         where, (long long)len,
                         len >= 8 ? (long long)ferry__le64_load(in) : -1LL);
  if (len == 0) {
    *outlen = 0;
    return (*out = malloc(1)) ? 0 : FERRY_ENOMEM;
  }
  if (!(*out = malloc((size_t)(u ? u : 1))))
    return ferry__oom(err, -1, (size_t)u, "%s: a decoded buffer", where);
  *outlen = u;
  if ((int64_t)ferry__le64_load(in) == -1)
    memcpy(*out, in + 8, (size_t)u);
  else if (ferry__codec_decode_page(codec, in + 8, (size_t)len - 8, *out,
                                    (size_t)u, &why) < 0) {
    free(*out);
    *out = NULL;
    return ferry__seterr(err, FERRY_EFORMAT, "%s: %s (%s)", where,
                         why ? why : "cannot decode it",
                         ferry__codec_name(codec));
  }
  return 0;
}

static int grow_roff(afile *a, int f, int64_t need, ferry__err *err) {
  if (need <= a->rcap[f])
    return 0;
  int64_t cap = a->rcap[f] ? a->rcap[f] : 1024;
  while (cap < need)
    cap *= 2;
  int64_t *r = realloc(a->roff[f], (size_t)cap * sizeof *r);
  if (!r)
    return ferry__oom(err, -1, (size_t)cap * sizeof *r,
                      "the offsets of column %s of %s", a->s.f[f].name,
                      a->path);
  if (!a->rcap[f])
    r[0] = 0;
  a->roff[f] = r;
  a->rcap[f] = cap;
  return 0;
}

/* A ragged column's offsets buffer (rows + 1 of 4 or 8 bytes at opos)
 * appended to its file offsets; *off0 its first offset; checked against
 * the values' vlen bytes (item bytes each). */
static int take_offsets(afile *a, int f, int64_t rows, int64_t opos,
                        int64_t olen, int64_t vlen, size_t item, int64_t *off0,
                        int64_t r, int codec, ferry__err *err) {
  const afield *x = &a->s.f[f];
  int w = x->off64 ? 8 : 4;
  unsigned char *dec = NULL;
  if (codec) { /* the offsets decoded: then read from memory */
    unsigned char *raw = malloc((size_t)(olen ? olen : 1));
    char where[600];
    snprintf(where, sizeof where,
             "file %s, record batch %lld, column %s, offset %lld", a->path,
             (long long)r, x->name, (long long)opos);
    int rc = raw ? rd(a, opos, raw, (size_t)olen, err)
                 : ferry__oom(err, -1, (size_t)olen, "%s", where);
    if (!rc)
      rc = decode_buffer(codec, raw, olen, &dec, &olen, where, err);
    free(raw);
    if (rc)
      return rc;
  }
  if (olen / w < rows + 1) {
    free(dec);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld, column %s: an offsets "
                         "buffer of %lld bytes for %lld rows",
                         a->path, (long long)r, x->name, (long long)olen,
                         (long long)rows);
  }
  int rc = grow_roff(a, f, a->rows + rows + 1, err);
  unsigned char *buf = rc    ? NULL
                       : dec ? dec
                             : malloc((size_t)(rows + 1) * (size_t)w);
  if (!rc && !buf)
    rc = ferry__oom(err, -1, (size_t)(rows + 1) * (size_t)w,
                    "the offsets of column %s of %s", x->name, a->path);
  if (!rc && !dec)
    rc = rd(a, opos, buf, (size_t)(rows + 1) * (size_t)w, err);
  int64_t base = a->roff[f][a->rows], prev = 0;
  for (int64_t i = 0; !rc && i <= rows; i++) {
    const unsigned char *p = buf + i * w;
    int64_t o = w == 8 ? (int64_t)ferry__le64_load(p)
                       : (int64_t)(int32_t)ferry__le32_load(p);
    if (i == 0)
      *off0 = prev = o;
    if (o < prev || o < 0 || o > vlen / (int64_t)item)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld, column %s, offset "
                         "%lld: offset %lld of row %lld is %s",
                         a->path, (long long)r, x->name,
                         (long long)(opos + i * w), (long long)o, (long long)i,
                         o < prev ? "less than the one before it"
                                  : "outside its values buffer");
    a->roff[f][a->rows + i] = base + o - *off0;
    prev = o;
  }
  free(buf);
  return rc;
}

/* Column f of record batch r: where its values are.  bi: its first
 * buffer, ni: its node. */
static int take_column(afile *a, const ferry__fb *b, int64_t nodes, uint32_t nn,
                       int64_t bufs, uint32_t nb, int f, int ni, int bi,
                       int64_t body, int64_t blen, abatch *rb, int64_t r,
                       ferry__err *err) {
  afield *x = &a->s.f[f];
  int64_t len = 0, nulls = 0, clen = 0, cnulls = 0, pos, vlen, opos = 0,
          olen = 0;
  size_t item = ferry_dtype_size(x->dtype);
  int child =
      x->type == T_LIST || x->type == T_LARGE_LIST || x->type == T_FIXED_LIST;
  int vbuf = child ? bi + (x->type == T_FIXED_LIST ? 1 : 2) + 1
                   : bi + (x->kind == K_RAGGED ? 2 : 1);
  if (node_at(b, nodes, nn, ni, &len, &nulls) < 0 ||
      (child && node_at(b, nodes, nn, ni + 1, &clen, &cnulls) < 0) ||
      buffer_at(b, bufs, nb, vbuf, body, blen, &pos, &vlen) < 0 ||
      (x->kind == K_RAGGED &&
       buffer_at(b, bufs, nb, bi + 1, body, blen, &opos, &olen) < 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld, column %s: a node or "
                         "buffer outside the message or its body",
                         a->path, (long long)r, x->name);
  if (len != rb->rows)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld, column %s: %lld rows "
                         "in a batch of %lld",
                         a->path, (long long)r, x->name, (long long)len,
                         (long long)rb->rows);
  if (nulls || cnulls) {
    x->kind = K_SKIP; /* every batch's, from now on */
    x->why = "it holds nulls";
    return 0;
  }
  rb->pos[f] = pos;
  rb->vlen[f] = vlen;
  if (rb->codec) { /* the checks below are of the decoded values */
    unsigned char h[8] = {0};
    int rc = vlen >= 8 ? rd(a, pos, h, 8, err) : 0;
    int bad = rc ? 0 : decoded_len(rb->codec, h, vlen, &vlen);
    if (bad)
      rc = ferry__seterr(err, bad,
                         "file %s, record batch %lld, column %s, offset "
                         "%lld: a compressed values buffer of %lld bytes: %s",
                         a->path, (long long)r, x->name, (long long)pos,
                         (long long)rb->vlen[f],
                         bad == FERRY_ENOTSUP ? JS_PREFIX
                                              : "a bad decoded length");
    if (rc)
      return rc;
  }
  if (x->kind == K_DENSE) {
    int64_t row = (int64_t)item * (x->type == T_FIXED_LIST ? x->k : 1);
    if (vlen / row < rb->rows)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, record batch %lld, column %s: %lld bytes "
                           "of values for %lld rows of %lld bytes",
                           a->path, (long long)r, x->name, (long long)vlen,
                           (long long)rb->rows, (long long)row);
    return 0;
  }
  return take_offsets(a, f, rb->rows, opos, olen, vlen, item, &rb->off0[f], r,
                      rb->codec, err);
}

/* A RecordBatch message: its rows and, for each served column, where its
 * values are. */
static int take_batch(afile *a, const unsigned char *meta, uint32_t mlen,
                      int64_t body, ferry__err *err) {
  ferry__fb b = {meta, mlen};
  int64_t msg = ferry__fb_deref(&b, 0), h = -1, rows = -1, blen = -1,
          nodes = -1, bufs = -1, comp = -1;
  if (msg > 0 && (h = ferry__fb_ref(&b, (size_t)msg, 2)) > 0 &&
      ferry__fb_scalar(&b, (size_t)msg, 3, 8, 0, &blen) == 0 &&
      ferry__fb_scalar(&b, (size_t)h, 0, 8, 0, &rows) == 0) {
    nodes = ferry__fb_ref(&b, (size_t)h, 1);
    bufs = ferry__fb_ref(&b, (size_t)h, 2);
    comp = ferry__fb_field(&b, (size_t)h, 3);
  }
  uint32_t nn = 0, nb = 0;
  int64_t r = a->nrb;
  if (rows < 0 || nodes < 0 || bufs < 0 || comp < 0 ||
      (nodes > 0 && ferry__fb_vector(&b, (size_t)nodes, 16, &nn) < 0) ||
      (bufs > 0 && ferry__fb_vector(&b, (size_t)bufs, 16, &nb) < 0))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld (body at offset %lld): "
                         "a bad flatbuffer",
                         a->path, (long long)r, (long long)body);
  int codec = 0;
  if (comp > 0) { /* BodyCompression: codec (0 LZ4_FRAME, 1 ZSTD), method
                   * (0 BUFFER, the only one) */
    int64_t c = 0, m = 0, ct = ferry__fb_ref(&b, (size_t)h, 3);
    if (ct <= 0 || ferry__fb_scalar(&b, (size_t)ct, 0, 1, 0, &c) < 0 ||
        ferry__fb_scalar(&b, (size_t)ct, 1, 1, 0, &m) < 0 || c < 0 || c > 1 ||
        m != 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "file %s, record batch %lld: a body compression "
                           "of codec %lld, method %lld (Arrow has LZ4_FRAME "
                           "0 and ZSTD 1, method BUFFER 0)",
                           a->path, (long long)r, (long long)c, (long long)m);
    codec = c == 0 ? FERRY__CODEC_LZ4_FRAME : FERRY__CODEC_ZSTD;
    if (!ferry__codec_available(codec))
      return ferry__seterr(err, FERRY_ENOTSUP,
                           "file %s, record batch %lld: its buffers are "
                           "compressed with %s, which this ferry was built "
                           "without (install lib%s-dev and rebuild)",
                           a->path, (long long)r, c ? "zstd" : "LZ4 frame",
                           c ? "zstd" : "lz4");
    a->compressed = 1;
  }
  if ((int64_t)nn < a->s.n || rows > FERRY__MAX_SAMPLES - a->rows)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, record batch %lld: %u nodes for %d fields, "
                         "or %lld rows",
                         a->path, (long long)r, nn, a->s.n, (long long)rows);
  if (a->nrb == a->caprb) {
    int64_t cap = a->caprb ? 2 * a->caprb : 16;
    abatch *nr = realloc(a->rb, (size_t)cap * sizeof *nr);
    if (!nr)
      return ferry__oom(err, -1, (size_t)cap * sizeof *nr,
                        "the record batches of %s", a->path);
    a->rb = nr;
    a->caprb = cap;
  }
  abatch *rb = &a->rb[a->nrb];
  memset(rb, 0, sizeof *rb);
  rb->rows = rows;
  rb->codec = codec;
  rb->pos = calloc((size_t)a->s.n, sizeof *rb->pos);
  rb->off0 = calloc((size_t)a->s.n, sizeof *rb->off0);
  rb->vlen = calloc((size_t)a->s.n, sizeof *rb->vlen);
  a->nrb++;
  if (!rb->pos || !rb->off0 || !rb->vlen)
    return ferry__oom(err, -1, (size_t)a->s.n * 24, "record batch %lld of %s",
                      (long long)r, a->path);
  int rc = 0;
  for (int f = 0, bi = 0; !rc && f < a->s.n; bi += a->s.f[f].nbuf, f++)
    if (a->s.f[f].top && a->s.f[f].kind != K_SKIP)
      rc = take_column(a, &b, nodes, nn, bufs, nb, f, f, bi, body, blen, rb, r,
                       err);
  a->rows += rows;
  return rc;
}

static int has_ext(const char *s, const char *ext) {
  size_t a = strlen(s), b = strlen(ext);
  return a > b && strcmp(s + a - b, ext) == 0;
}

/* Names Arrow streams go by (a file of the file format is known by its
 * magic whatever its name). */
static int is_arrow_name(const char *s) {
  return has_ext(s, ".arrow") || has_ext(s, ".arrows") ||
         has_ext(s, ".feather") || has_ext(s, ".ipc") || has_ext(s, ".stream");
}

/* A Hugging Face save_to_disk of one shard: its data-00000-of-00001.arrow
 * beside state.json. */
static int arrow_in_dir(const char *dir, const char *name) {
  (void)dir;
  return is_arrow_name(name);
}

/* The file a part path names (itself, or a directory's one .arrow). */
static char *file_of(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return ferry__dir_only_file(path, arrow_in_dir);
  return strdup(path);
}

static int arrow_probe(const char *path) {
  char *f = file_of(path);
  int ok = 0;
  int fd = f ? ferry__open_regular(f, NULL) : -1;
  unsigned char h[6];
  size_t got = 0;
  if (fd >= 0) {
    ok = ferry__pread_full(fd, h, sizeof h, 0, &got) == 0 && got == 6 &&
         (memcmp(h, "ARROW1", 6) == 0 ||
          (is_arrow_name(f) && memcmp(h, "\xff\xff\xff\xff", 4) == 0));
    close(fd);
  }
  free(f);
  return ok;
}

static void afile_free(afile *a) {
  for (int64_t r = 0; r < a->nrb; r++) {
    free(a->rb[r].pos);
    free(a->rb[r].off0);
    free(a->rb[r].vlen);
  }
  free(a->rb);
  for (int f = 0; a->roff && f < a->s.n; f++)
    free(a->roff[f]);
  free(a->roff);
  free(a->rcap);
  ferry__arrow_schema_free(&a->s);
  if (a->fd >= 0)
    close(a->fd);
}

static int schema_arrays(afile *a, ferry__err *err) {
  if (!(a->roff = calloc((size_t)a->s.n + 1, sizeof *a->roff)) ||
      !(a->rcap = calloc((size_t)a->s.n + 1, sizeof *a->rcap)))
    return ferry__oom(err, -1, (size_t)a->s.n * 16, "the schema of %s",
                      a->path);
  return 0;
}

/* Walk the messages from *at (to limit): the schema (unless the file's
 * footer gave it: have_schema), then the batches. */
static int walk(afile *a, int64_t at, int64_t limit, int have_schema,
                ferry__err *err) {
  int rc = 0;
  while (!rc && at < limit) {
    unsigned char *meta = NULL;
    uint32_t mlen = 0;
    int64_t body = 0, start = at;
    rc = read_message(a, &at, &meta, &mlen, &body, err);
    if (rc == 1) {
      rc = 0;
      break;
    }
    if (rc)
      break;
    ferry__fb b = {meta, mlen};
    int64_t msg = ferry__fb_deref(&b, 0), ht = 0;
    const char *why = NULL;
    if (msg < 0 || ferry__fb_scalar(&b, (size_t)msg, 1, 1, 0, &ht) < 0)
      why = "a bad flatbuffer";
    else if ((uint8_t)ht == H_SCHEMA && !have_schema) {
      have_schema = 1;
      if (ferry__arrow_parse_schema(&b, ferry__fb_ref(&b, (size_t)msg, 2),
                                    &a->s, &why) == 0)
        rc = schema_arrays(a, err);
    } else if ((uint8_t)ht == H_SCHEMA) {
      /* a file's copy of its footer's schema (C++ and Java write one) */
    } else if ((uint8_t)ht == H_RECORD_BATCH && have_schema)
      rc = take_batch(a, meta, mlen, body, err);
    else if ((uint8_t)ht != H_DICTIONARY)
      why = have_schema ? "a message that is neither a record batch nor a "
                          "dictionary after the schema"
                        : "the first message is not a schema";
    if (why && !rc)
      rc = ferry__seterr(err, FERRY_EFORMAT, "file %s, offset %lld: %s",
                         a->path, (long long)start, why);
    free(meta);
  }
  if (!rc && !have_schema)
    rc = ferry__seterr(err, FERRY_EFORMAT, "file %s: no schema message",
                       a->path);
  return rc;
}

/* Where the messages are: a stream from 0, or a file's from 8 up to its
 * footer ("ARROW1", 2 bytes, messages, footer, int32 length, "ARROW1"). */
static int message_range(afile *a, int64_t *from, int64_t *to,
                         ferry__err *err) {
  unsigned char h[6], t[10];
  *from = 0;
  *to = a->size;
  if (a->size < 6 || rd(a, 0, h, 6, err))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: too short for an Arrow IPC file (%lld "
                         "bytes)",
                         a->path, (long long)a->size);
  if (memcmp(h, "ARROW1", 6) != 0)
    return 0; /* a stream: the schema is its first message */
  int rc = a->size >= 18 ? rd(a, a->size - 10, t, 10, err) : -1;
  uint32_t flen = rc ? 0 : ferry__le32_load(t);
  if (rc || memcmp(t + 4, "ARROW1", 6) != 0 || (int64_t)flen > a->size - 18)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: starts with ARROW1 but does not end with "
                         "a footer and ARROW1 (truncated?)",
                         a->path);
  *from = 8;
  *to = a->size - 10 - flen;
  /* the schema is the footer's (writers need not repeat it as a message) */
  unsigned char *foot = malloc(flen ? flen : 1);
  if (!foot)
    return ferry__oom(err, -1, flen, "the footer of %s", a->path);
  const char *why = NULL;
  rc = rd(a, *to, foot, flen, err);
  if (!rc) {
    ferry__fb b = {foot, flen};
    int64_t root = ferry__fb_deref(&b, 0);
    if (root < 0 ||
        ferry__arrow_parse_schema(&b, ferry__fb_ref(&b, (size_t)root, 1), &a->s,
                                  &why) < 0)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "file %s, offset %lld: its footer: %s", a->path,
                         (long long)*to, why ? why : "a bad flatbuffer");
  }
  free(foot);
  if (!rc)
    rc = schema_arrays(a, err);
  return rc ? rc : 1; /* 1: the schema is read */
}

/* Variable v's record: the record batches' rows, value positions and
 * first offsets. */
/* A file with a compressed record batch has the longer layout: the count
 * with its top bit set, and each batch's codec and values bytes too. */
#define REC_COMPRESSED (UINT64_C(1) << 63)

static int make_record(const afile *a, int f, ferry__blob *out) {
  ferry__rec_w w;
  ferry__rec_w_init(&w);
  ferry__rec_put_u64(&w,
                     (uint64_t)a->nrb | (a->compressed ? REC_COMPRESSED : 0));
  for (int64_t r = 0; r < a->nrb; r++) {
    ferry__rec_put_u64(&w, (uint64_t)a->rb[r].rows);
    ferry__rec_put_u64(&w, (uint64_t)a->rb[r].pos[f]);
    ferry__rec_put_u64(&w, (uint64_t)a->rb[r].off0[f]);
    if (a->compressed) {
      ferry__rec_put_u64(&w, (uint64_t)a->rb[r].codec);
      ferry__rec_put_u64(&w, (uint64_t)a->rb[r].vlen[f]);
    }
  }
  return ferry__rec_blob(&w, out);
}

/* The served columns into out; the skipped ones into its notes. */
static int fill_desc(afile *a, const char *file, ferry__part_desc *out,
                     ferry__err *err) {
  int n = 0;
  char notes[1024] = "";
  size_t used = 0;
  for (int f = 0; f < a->s.n; f++)
    if (a->s.f[f].top) {
      if (a->s.f[f].kind != K_SKIP)
        n++;
      else if (used < sizeof notes - 1)
        used += (size_t)snprintf(notes + used, sizeof notes - used,
                                 "%scolumn %s skipped: %s", used ? "; " : "",
                                 a->s.f[f].name, a->s.f[f].why);
    }
  if (n == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "file %s: no column ferry serves (numbers, fixed-size "
                         "lists of numbers, lists of numbers, binary, "
                         "strings)%s%s",
                         file, used ? ": " : "", notes);
  out->vars = calloc((size_t)n, sizeof *out->vars);
  out->paths = calloc((size_t)n, sizeof *out->paths);
  out->data_offset = calloc((size_t)n, sizeof *out->data_offset);
  out->file_size = calloc((size_t)n, sizeof *out->file_size);
  out->rec = calloc((size_t)n, sizeof *out->rec);
  out->roff = calloc((size_t)n, sizeof *out->roff);
  if (!out->vars || !out->paths || !out->data_offset || !out->file_size ||
      !out->rec || !out->roff || (used && !(out->notes = strdup(notes))))
    return ferry__oom(err, -1, (size_t)n * 64, "the columns of %s", file);
  out->nvars = n;
  out->num_samples = a->rows;
  for (int f = 0, v = 0; f < a->s.n; f++) {
    afield *x = &a->s.f[f];
    if (!x->top || x->kind == K_SKIP)
      continue;
    ferry__var *var = &out->vars[v];
    var->name = x->name;
    x->name = NULL;
    var->dtype = x->dtype;
    var->ragged = x->kind == K_RAGGED;
    var->row_ndim = x->type == T_FIXED_LIST ? 1 : 0;
    var->row_shape[0] = x->k;
    var->row_bytes = ferry_dtype_size(x->dtype) *
                     (size_t)(x->type == T_FIXED_LIST ? x->k : 1);
    var->chunk_rows = a->nrb > 1 ? a->rb[0].rows : 0;
    char st[200];
    snprintf(st, sizeof st, "arrow %s, %lld record batches",
             x->type == T_FIXED_LIST     ? "fixed-size list"
             : x->type == T_LIST         ? "list"
             : x->type == T_LARGE_LIST   ? "large list"
             : x->type == T_BINARY       ? "binary"
             : x->type == T_UTF8         ? "utf8"
             : x->type == T_LARGE_BINARY ? "large binary"
             : x->type == T_LARGE_UTF8   ? "large utf8"
                                         : ferry_dtype_name(x->dtype),
             (long long)a->nrb);
    out->paths[v] = strdup(file);
    var->storage = strdup(st);
    out->file_size[v] = a->size;
    if (var->ragged) {
      if (grow_roff(a, f, 1, err))
        return FERRY_ENOMEM;
      out->roff[v] = a->roff[f];
      a->roff[f] = NULL;
    }
    if (!var->name || !out->paths[v] || !var->storage ||
        make_record(a, f, &out->rec[v]) < 0)
      return ferry__oom(err, -1, 256 + (size_t)a->nrb * 24, "column %s of %s",
                        var->name ? var->name : "?", file);
    v++;
  }
  return 0;
}

static int arrow_describe(const char *path, const ferry_options *opts,
                          ferry__part_desc *out, ferry__err *err) {
  (void)opts;
  memset(out, 0, sizeof *out);
  afile a;
  memset(&a, 0, sizeof a);
  a.fd = -1;
  char *file = file_of(path);
  struct stat st;
  int rc = 0;
  if (!file)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: a directory without exactly one .arrow file",
                         path);
  a.path = file;
  if (stat(file, &st) != 0 || (a.fd = ferry__open_regular(file, NULL)) < 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), "open failed: %s: %s",
                       file, strerror(errno));
  a.size = rc ? 0 : (int64_t)st.st_size;
  int64_t from = 0, to = 0;
  int footer = 0;
  if (!rc && (rc = message_range(&a, &from, &to, err)) == 1) {
    footer = 1;
    rc = 0;
  }
  if (!rc)
    rc = walk(&a, from, to, footer, err);
  if (!rc)
    rc = fill_desc(&a, file, out, err);
  afile_free(&a);
  free(file);
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* ---- Reads (I/O thread) ----------------------------------------------- */

/* A variable's record batches, decoded from its record on first use. */
typedef struct atab {
  int64_t n;
  int64_t *first; /* [n+1] first row of each (the part's rows) */
  int64_t *pos, *off0;
  int64_t *codec, *clen; /* compressed files: each batch's codec (0 none)
                          * and values bytes as stored; NULL otherwise */
} atab;

struct ferry__io {
  ferry__io_base b;
  atab *t; /* [nparts * nvars] */
};

/* One descriptor per file (the part's), whatever the variable. */
static int cache_open(void *ctx, int64_t part, int var, void **handle,
                      ferry__err *err) {
  ferry__io *io = ctx;
  const ferry__part *pt = &io->b.m->parts[part];
  (void)var;
  return ferry__io_base_fd_open(&io->b, pt->paths[0], NULL, pt->file_size[0],
                                handle, err);
}

static void tab_free(atab *t) {
  free(t->first);
  free(t->pos);
  free(t->off0);
  free(t->codec);
  free(t->clen);
  memset(t, 0, sizeof *t);
}

/* The record of (part, var) decoded into *t: checked (rows adding up to
 * the part's, positions inside the file). */
static int tab_get(ferry__io *io, int64_t part, int var, atab **out,
                   ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  atab *t = &io->t[part * m->nvars + var];
  *out = t;
  if (t->first)
    return 0;
  const ferry__part *pt = &m->parts[part];
  ferry__rec_r r;
  ferry__rec_r_init(&r, pt->rec ? pt->rec[var].p : NULL,
                    pt->rec ? pt->rec[var].len : 0);
  uint64_t n0 = ferry__rec_get_u64(&r);
  int comp = (n0 & REC_COMPRESSED) != 0;
  int64_t n = (int64_t)(n0 & ~REC_COMPRESSED), each = comp ? 40 : 24;
  if (!r.rc && (uint64_t)n > ferry__rec_left(&r) / (uint64_t)each)
    ferry__rec_fail(&r, "bad record batch count");
  if (!r.rc) {
    t->first = calloc((size_t)n + 1, sizeof *t->first);
    t->pos = calloc((size_t)n + 1, sizeof *t->pos);
    t->off0 = calloc((size_t)n + 1, sizeof *t->off0);
    if (comp) {
      t->codec = calloc((size_t)n + 1, sizeof *t->codec);
      t->clen = calloc((size_t)n + 1, sizeof *t->clen);
    }
    if (!t->first || !t->pos || !t->off0 || (comp && (!t->codec || !t->clen)))
      ferry__rec_oom(&r, (size_t)(n + 1) * (size_t)each, "the record batches");
  }
  for (int64_t k = 0; !r.rc && k < n; k++) {
    int64_t rows = ferry__rec_get_nonneg(&r, "bad rows");
    t->pos[k] = ferry__rec_get_nonneg(&r, "bad position");
    t->off0[k] = ferry__rec_get_nonneg(&r, "bad offset");
    if (comp) {
      t->codec[k] = ferry__rec_get_nonneg(&r, "bad codec");
      t->clen[k] = ferry__rec_get_nonneg(&r, "bad buffer length");
      if (!r.rc && t->codec[k] != 0 && t->codec[k] != FERRY__CODEC_LZ4_FRAME &&
          t->codec[k] != FERRY__CODEC_ZSTD)
        ferry__rec_fail(&r, "bad codec");
      if (!r.rc && t->clen[k] > pt->file_size[var] - t->pos[k])
        ferry__rec_fail(&r, "a buffer past the part");
    }
    if (!r.rc && (rows > pt->num_samples - t->first[k] ||
                  t->pos[k] > pt->file_size[var]))
      ferry__rec_fail(&r, "record batches past the part");
    t->first[k + 1] = t->first[k] + rows;
  }
  if (!r.rc && t->first[n] != pt->num_samples)
    ferry__rec_fail(&r, "record batches do not add up to the part's rows");
  if (!r.rc)
    ferry__rec_end(&r, "bytes after the record batches");
  if (r.rc) {
    tab_free(t);
    return ferry__seterr(
        err, r.rc == FERRY_ENOMEM ? FERRY_ENOMEM : FERRY_EFORMAT,
        "file %s, variable %s, rank %d: its record: %s", pt->paths[var],
        m->vars[var].name, io->b.rank, r.why ? r.why : "?");
  }
  t->n = n;
  return 0;
}

static int arrow_io_open(ferry__io **out, const ferry__manifest *m,
                         const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {
      .size = sizeof(ferry__io),
      .open = cache_open,
      .close = ferry__io_base_fd_close,
      .no_collective = "io=collective with Arrow IPC files: their record "
                       "batches are read independently (io=auto or "
                       "independent)",
  };
  void *v = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &v, err);
  ferry__io *io = v;
  if (!rc && !(io->t = calloc((size_t)(m->nparts * m->nvars), sizeof *io->t))) {
    rc =
        ferry__oom(err, p->rank, (size_t)(m->nparts * m->nvars) * sizeof *io->t,
                   "the record batch tables of dataset %s", m->spec);
    ferry__io_base_close(&io->b);
    free(io);
    io = NULL;
  }
  *out = io;
  return rc;
}

/* n bytes at at (inside the file, as the record says) into buf. */
static int pread_at(ferry__io *io, int fd, int64_t part, int var, int64_t at,
                    void *buf, int64_t n, ferry__err *err) {
  const ferry__part *pt = &io->b.m->parts[part];
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where, "file %s, variable %s, rank %d", pt->paths[var],
           io->b.m->vars[var].name, io->b.rank);
  if (at < 0 || n < 0 || at > pt->file_size[var] || n > pt->file_size[var] - at)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: %lld bytes at offset %lld are past the end of "
                         "the file",
                         where, (long long)n, (long long)at);
  return ferry__pread_exact(fd, buf, n, at, where, err);
}

/* Bytes [at, at+n) of record batch k's decoded values into dst: the
 * stored buffer read and decoded (compressed bodies). */
static int read_decoded(ferry__io *io, int fd, int64_t part, int var,
                        const atab *t, int64_t k, int64_t at, void *dst,
                        int64_t n, ferry__err *err) {
  const ferry__part *pt = &io->b.m->parts[part];
  char where[FERRY__MSG_MAX / 2];
  snprintf(where, sizeof where,
           "file %s, variable %s, rank %d, record batch %lld, offset %lld",
           pt->paths[var], io->b.m->vars[var].name, io->b.rank, (long long)k,
           (long long)t->pos[k]);
  unsigned char *raw = malloc((size_t)(t->clen[k] ? t->clen[k] : 1)), *dec;
  int64_t dlen = 0;
  if (!raw)
    return ferry__oom(err, io->b.rank, (size_t)t->clen[k], "%s", where);
  int rc = pread_at(io, fd, part, var, t->pos[k], raw, t->clen[k], err);
  if (!rc)
    rc = decode_buffer((int)t->codec[k], raw, t->clen[k], &dec, &dlen, where,
                       err);
  free(raw);
  if (rc)
    return rc;
  if (at < 0 || n < 0 || at > dlen || n > dlen - at)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: %lld bytes at %lld past its %lld decoded bytes",
                       where, (long long)n, (long long)at, (long long)dlen);
  else
    memcpy(dst, dec + at, (size_t)n);
  free(dec);
  return rc;
}

static int arrow_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                         int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (!rc)
    rc = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err);
  atab *t = NULL;
  void *h = NULL;
  if (!rc && nrows > 0)
    rc = tab_get(io, part, var, &t, err);
  if (!rc && nrows > 0)
    rc = ferry__handle_get(&io->b.files, part, -1, io->b.rank, &h, err);
  if (rc || nrows == 0)
    return rc;
  const ferry__part *pt = &m->parts[part];
  const int64_t *ro = pt->roff ? pt->roff[var] : NULL;
  int64_t rb = (int64_t)m->vars[var].row_bytes;
  int64_t k = ferry__last_le(t->first, t->n, row);
  unsigned char *dst = buf;
  for (; !rc && k < t->n && t->first[k] < row + nrows; k++) {
    int64_t g = t->first[k];
    int64_t a = (row > g ? row : g) - g;
    int64_t z =
        (row + nrows < t->first[k + 1] ? row + nrows : t->first[k + 1]) - g;
    int64_t at, n;
    if (ro) {
      at = (t->off0[k] + ro[g + a] - ro[g]) * rb;
      n = (ro[g + z] - ro[g + a]) * rb;
    } else {
      at = a * rb;
      n = (z - a) * rb;
    }
    if (t->codec && t->codec[k]) /* the whole buffer, decoded */
      rc = read_decoded(io, *(int *)h, part, var, t, k, at, dst, n, err);
    else
      rc = pread_at(io, *(int *)h, part, var, t->pos[k] + at, dst, n, err);
    dst += n;
  }
  return rc;
}

static void arrow_io_close(ferry__io *io) {
  if (!io)
    return;
  for (int64_t i = 0; io->t && i < io->b.m->nparts * io->b.m->nvars; i++)
    tab_free(&io->t[i]);
  free(io->t);
  ferry__io_base_close(&io->b);
  free(io);
}

const ferry__backend ferry__backend_arrow = {
    .name = "arrow",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = ARROW_REC_VERSION,
    .probe = arrow_probe,
    .accepts = "an Arrow IPC file (ARROW1), an Arrow IPC stream named "
               ".arrow, .arrows, .stream, .ipc or .feather (Hugging Face "
               "save_to_disk shards), or a directory of one",
    .describe = arrow_describe,
    .io_open = arrow_io_open,
    .io_read = arrow_io_read,
    .io_close = arrow_io_close,
};
