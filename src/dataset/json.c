/*
 * json.c - a manifest saved to and loaded from JSON (the manifest option,
 * ferry info --json), so a later run can skip the scan.  Loading names the
 * backend (its record version, whether its parts are flat files), checks
 * what a scan checks and re-applies the vars selection (dataset/scan.c).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/toolkit.h"
#include "dataset/dataset.h"
#include "util/record.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
 * Records of RECS_FILE_MIN bytes and more go to a binary file beside the
 * manifest instead (decision 0066), PATH.recs, named at the top by
 * "records": {"file": "NAME.recs", "count": WORDS, "version": 1, "hash":
 * "HEX"} (FERRY__RECS_MAGIC, core/manifest.h); each file's entry then has
 * "record_at": BYTE (from the end of the file's 16-byte header) and
 * "record_bytes": N.
 * "num_samples" at the top is informational; loading recomputes it.
 *
 * Ragged variables (docs/ragged.md) carry "ragged": 1 or 2 in "vars", and
 * their offsets go to a binary file beside the manifest, PATH.roff, named
 * at the top by "offsets": {"file": "NAME.roff", "count": N, "version":
 * 2, "hash": "HEX"}: "FRYO", a version byte (2), three zero bytes, N as
 * u64, the N offsets (int64), part after part and in each part the ragged
 * variables in the order of "vars" (num_samples + 1 each), all
 * little-endian, then the checksum of everything before it (u64):
 * ferry__hash_words (version 2, 2026-11-28: a 10^8-sequence file is
 * checked in a third of FNV-1a's time), FNV-1a in version 1 ("fnv1a": HEX
 * in the JSON, no "version"), which loads still.  Loading checks the size,
 * the checksum (the file's and the JSON's), N, and every array as the
 * manifest's broadcast is checked (from 0, never decreasing, within the
 * file when the values lie in one).
 */
#define ROFF_MAGIC FERRY__ROFF_MAGIC
#define ROFF_HEAD FERRY__ROFF_HEAD
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

/* A side file of the manifest at path: PATH.roff (the offsets), PATH.recs
 * (the records), by ext (4 characters); malloc'd. */
static char *side_path(const char *path, const char *ext) {
  size_t n = strlen(path);
  char *p = malloc(n + 6);
  if (p)
    snprintf(p, n + 6, "%s.%.4s", path, ext);
  return p;
}

/* The offsets' file's checksum of n bytes, continuing from h: version 2
 * word by word, version 1 FNV-1a. */
static uint64_t roff_sum(int version, uint64_t h, const void *p, size_t n) {
  return version == 2 ? ferry__hash_words(h, p, n) : ferry__fnv1a(h, p, n);
}

/* Write n offsets (little-endian) to f, folding them into *h (version 2:
 * blocks of whole words, so the fold is the whole file's). */
static int put_offsets(FILE *f, const int64_t *o, int64_t n, uint64_t *h) {
  unsigned char buf[8 * 512] = {0};
  for (int64_t i = 0; i < n;) {
    int64_t k = n - i < 512 ? n - i : 512;
    for (int64_t j = 0; j < k; j++)
      ferry__le64_store(buf + 8 * j, (uint64_t)o[i + j]);
    if (fwrite(buf, 8, (size_t)k, f) != (size_t)k)
      return -1;
    *h = roff_sum(2, *h, buf, (size_t)k * 8);
    i += k;
  }
  return 0;
}

/* root[key] = {"file": the base name of rp, "count", "version", "hash":
 * h in hex}: how the JSON names a side file; nonzero on failure. */
static int side_json(json_t *root, const char *key, const char *rp,
                     int64_t count, int version, uint64_t h) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  const char *base = strrchr(rp, '/') ? strrchr(rp, '/') + 1 : rp;
  json_t *o = json_object();
  return !o || json_object_set_new(o, "file", json_string(base)) ||
         json_object_set_new(o, "count", json_integer((json_int_t)count)) ||
         json_object_set_new(o, "version", json_integer(version)) ||
         json_object_set_new(o, "hash", json_string(hex)) ||
         json_object_set_new(root, key, o);
}

/* A side file being written beside the manifest: PATH.EXT.PID.tmp, renamed
 * over PATH.EXT when whole, so that a job mapping the old one (core/
 * roffmap.c) keeps it. */
typedef struct side_out {
  char *rp;       /* PATH.EXT */
  char tmp[4096]; /* the file written */
  FILE *f;
  const char *what; /* "offsets' file", "records' file" */
} side_out;

static int side_create(side_out *so, const char *path, const char *ext,
                       const char *what, ferry__err *err) {
  so->rp = side_path(path, ext);
  so->f = NULL;
  so->what = what;
  if (so->rp && snprintf(so->tmp, sizeof so->tmp, "%s.%ld.tmp", so->rp,
                         (long)getpid()) < (int)sizeof so->tmp)
    so->f = fopen(so->tmp, "wb");
  if (so->f)
    return 0;
  int rc = so->rp ? ferry__seterr(err, FERRY_EIO,
                                  "manifest %s: cannot create its %s %s: %s",
                                  path, what, so->rp, strerror(errno))
                  : ferry__oom(err, -1, strlen(path) + 6, "a path");
  free(so->rp);
  return rc;
}

/* The checksum h after what was written (bad: a write failed), the file
 * closed and renamed, and named in root[key] with its count of 8-byte words
 * and version; 0 or the error. */
static int side_finish(side_out *so, int bad, uint64_t h, json_t *root,
                       const char *key, int64_t count, int version,
                       const char *path, ferry__err *err) {
  unsigned char sum[8];
  ferry__le64_store(sum, h);
  bad |= !bad && fwrite(sum, 1, 8, so->f) != 8;
  bad |= fclose(so->f) != 0;
  bad |= !bad && rename(so->tmp, so->rp) != 0;
  if (bad)
    unlink(so->tmp);
  bad |= !bad && side_json(root, key, so->rp, count, version, h);
  int rc = bad ? ferry__seterr(err, FERRY_EIO,
                               "manifest %s: cannot write its %s %s: %s", path,
                               so->what, so->rp, errno ? strerror(errno) : "?")
               : 0;
  free(so->rp);
  return rc;
}

/* The ragged variables' offsets to PATH.roff, named in root["offsets"]. */
static int save_roff(const ferry__manifest *m, const char *path, json_t *root,
                     ferry__err *err) {
  int64_t count = 0;
  for (int64_t p = 0; p < m->nparts; p++)
    for (int v = 0; v < m->nvars; v++)
      count += m->vars[v].ragged ? m->parts[p].num_samples + 1 : 0;
  side_out so;
  int rc = side_create(&so, path, "roff", "offsets' file", err);
  if (rc)
    return rc;
  FILE *f = so.f;
  unsigned char head[ROFF_HEAD] = ROFF_MAGIC "\2";
  ferry__le64_store(head + 8, (uint64_t)count);
  uint64_t h = roff_sum(2, FERRY__FNV_INIT, head, sizeof head);
  int bad = fwrite(head, 1, sizeof head, f) != sizeof head;
  for (int64_t p = 0; !bad && p < m->nparts; p++)
    for (int v = 0; !bad && v < m->nvars; v++)
      if (m->vars[v].ragged)
        bad = put_offsets(f, m->parts[p].roff[v], m->parts[p].num_samples + 1,
                          &h) < 0;
  return side_finish(&so, bad, h, root, "offsets", count, 2, path, err);
}

/* ---- The records' file (decision 0066) --------------------------------- */

/* Records of a manifest whose records take at least this many bytes go to
 * PATH.recs (FERRY__RECS_MAGIC, core/manifest.h) instead of the JSON's
 * hex: a WebDataset manifest of 10^6 samples holds 24 MB of records, which
 * as hex were most of the time of a job's start (docs/performance.md,
 * "WebDataset shards"). */
#define RECS_FILE_MIN ((size_t)64 << 10)

/* The bytes record b takes in the records' file: its length rounded up to
 * a whole number of 8-byte words. */
static size_t rec_words_bytes(const ferry__blob *b) {
  return (b->len + 7) / 8 * 8;
}

/* The records' bytes m would put in the records' file; 0 when they stay
 * in the JSON (fewer than RECS_FILE_MIN). */
static size_t recs_file_bytes(const ferry__manifest *m) {
  size_t n = 0;
  for (int64_t p = 0; m->record_version && p < m->nparts; p++)
    for (int v = 0; m->parts[p].rec && v < m->nvars; v++)
      if (m->parts[p].rec[v].len)
        n += rec_words_bytes(&m->parts[p].rec[v]);
  return n >= RECS_FILE_MIN ? n : 0;
}

/* A staging buffer for the records' file: whole words hashed and written. */
typedef struct recs_out {
  FILE *f;
  uint64_t h;
  unsigned char buf[1 << 16];
  size_t used;
  int bad;
} recs_out;

static void recs_flush(recs_out *o) {
  if (!o->bad && o->used && fwrite(o->buf, 1, o->used, o->f) != o->used)
    o->bad = 1;
  o->h = ferry__hash_words(o->h, o->buf, o->used);
  o->used = 0;
}

/* n bytes of p, then zeros to a whole word. */
static void recs_put(recs_out *o, const unsigned char *p, size_t n) {
  size_t whole = n / 8 * 8;
  if (whole >= sizeof o->buf) { /* a large record: its words directly */
    recs_flush(o);
    if (!o->bad && fwrite(p, 1, whole, o->f) != whole)
      o->bad = 1;
    o->h = ferry__hash_words(o->h, p, whole);
    p += whole;
    n -= whole;
  }
  size_t padded = (n + 7) / 8 * 8;
  if (o->used + padded > sizeof o->buf)
    recs_flush(o);
  memcpy(o->buf + o->used, p, n);
  memset(o->buf + o->used + n, 0, padded - n);
  o->used += padded;
}

/* The records (bytes of them: recs_file_bytes) to PATH.recs, named in
 * root["records"]; each file's entry then says where its record lies
 * (save_json: "record_at", "record_bytes"). */
static int save_recs(const ferry__manifest *m, size_t bytes, const char *path,
                     json_t *root, ferry__err *err) {
  recs_out *o = calloc(1, sizeof *o);
  if (!o)
    return ferry__oom(err, -1, sizeof *o, "the records' file");
  side_out so;
  int rc = side_create(&so, path, "recs", "records' file", err);
  if (rc) {
    free(o);
    return rc;
  }
  o->f = so.f;
  unsigned char head[ROFF_HEAD] = FERRY__RECS_MAGIC "\1";
  ferry__le64_store(head + 8, (uint64_t)(bytes / 8));
  o->h = FERRY__FNV_INIT;
  recs_put(o, head, sizeof head);
  for (int64_t p = 0; p < m->nparts; p++)
    for (int v = 0; m->parts[p].rec && v < m->nvars; v++)
      if (m->parts[p].rec[v].len)
        recs_put(o, m->parts[p].rec[v].p, m->parts[p].rec[v].len);
  recs_flush(o);
  rc = side_finish(&so, o->bad, o->h, root, "records", (int64_t)(bytes / 8), 1,
                   path, err);
  free(o);
  return rc;
}

/* Variable x as the manifest's JSON object; NULL when out of memory. */
static json_t *var_json(const ferry__var *x) {
  int bad = 0;
  json_t *o = json_object(), *shape = json_array();
  bad |= !o || !shape;
  for (int k = 0; !bad && k < x->row_ndim; k++)
    bad |=
        json_array_append_new(shape, json_integer((json_int_t)x->row_shape[k]));
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
    if (x->width)
      bad |=
          json_object_set_new(o, "width", json_integer((json_int_t)x->width));
    if (x->categories)
      bad |= json_object_set_new(o, "categories", json_string(x->categories));
    if (x->storage)
      bad |= json_object_set_new(o, "storage", json_string(x->storage));
    if (x->ragged)
      bad |= json_object_set_new(o, "ragged", json_integer(x->ragged));
  }
  json_decref(shape);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
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
    json_t *o = var_json(&m->vars[v]);
    bad |= !o || json_array_append_new(vars, o);
  }
  size_t recs = bad ? 0 : recs_file_bytes(m), rec_at = 0;
  if (recs && (rc = save_recs(m, recs, path, root, err)) < 0)
    goto cleanup;
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
        if (pt->rec && pt->rec[v].len && recs) { /* in PATH.recs */
          bad |= json_object_set_new(fo, "record_at",
                                     json_integer((json_int_t)rec_at));
          bad |= json_object_set_new(fo, "record_bytes",
                                     json_integer((json_int_t)pt->rec[v].len));
          rec_at += rec_words_bytes(&pt->rec[v]);
        } else if (pt->rec && pt->rec[v].len)
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
  if (!bad && ferry__manifest_ragged(m) &&
      (rc = save_roff(m, path, root, err)) < 0)
    goto cleanup;
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
  json_t *jwd = json_object_get(o, "width"); /* optional: a sparse row's */
  snprintf(key, sizeof key, "vars[%d].width", v);
  if (jwd && (!json_is_integer(jwd) || json_integer_value(jwd) < 1))
    return missing(err, path, key);
  x->width = jwd ? (int64_t)json_integer_value(jwd) : 0;
  json_t *jcat = json_object_get(o, "categories"); /* optional */
  snprintf(key, sizeof key, "vars[%d].categories", v);
  if (jcat && !json_is_string(jcat))
    return missing(err, path, key);
  if (jcat && !(x->categories = strdup(json_string_value(jcat))))
    return ferry__oom(err, -1, strlen(json_string_value(jcat)) + 1,
                      "the categories of variable %d of %s", v, path);
  /* optional: 1 or 2; row_shape is then the inner shape (a WebDataset
   * npy variable's rows of (4,): docs/ragged.md) */
  json_t *jrg = json_object_get(o, "ragged");
  snprintf(key, sizeof key, "vars[%d].ragged", v);
  if (jrg && (!json_is_integer(jrg) || json_integer_value(jrg) < 1 ||
              json_integer_value(jrg) > 2))
    return missing(err, path, key);
  x->ragged = jrg ? (int)json_integer_value(jrg) : 0;
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
  json_t *jat = json_object_get(fo, "record_at"); /* in PATH.recs */
  if (jat) {
    int64_t at = 0, n = 0;
    snprintf(key, sizeof key, "parts[%zu].files[%d].record_at", p, v);
    if (!m->rec_map || !pt->rec || json_object_get(fo, "record") ||
        (rc = get_int(fo, "record_at", 0, &at, path, key, err)) < 0)
      return rc < 0 ? rc : missing(err, path, key);
    snprintf(key, sizeof key, "parts[%zu].files[%d].record_bytes", p, v);
    if ((rc = get_int(fo, "record_bytes", 1, &n, path, key, err)) < 0)
      return rc;
    int64_t body = m->rec_map->count * 8;
    if (at > body || n > body - at || n > (int64_t)UINT32_MAX)
      return ferry__seterr(
          err, FERRY_EFORMAT,
          "manifest %s: parts[%zu].files[%d]: its record (%lld "
          "bytes at %lld) lies outside the records' file %s "
          "(%lld bytes)",
          path, p, v, (long long)n, (long long)at, m->rec_map->path,
          (long long)body);
    pt->rec[v].p = (unsigned char *)m->rec_map->addr + ROFF_HEAD + at;
    pt->rec[v].len = (size_t)n;
  }
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
  if (check_sizes && !m->vars[v].ragged && /* ragged: by its offsets */
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

/* The 16 hex digits of s as *v; -1 when s is not that. */
static int hex64(const char *s, uint64_t *v) {
  char *end = NULL;
  *v = strtoull(s, &end, 16);
  return strlen(s) != 16 || !end || *end ? -1 : 0;
}

/* The path of a side file the manifest at path names (name, beside it
 * unless absolute) into *out (malloc'd). */
static int beside(const char *path, const char *name, char **out,
                  ferry__err *err) {
  const char *slash = strrchr(path, '/');
  size_t dl = name[0] == '/' || !slash ? 0 : (size_t)(slash - path) + 1;
  if (!(*out = malloc(dl + strlen(name) + 1)))
    return ferry__oom(err, -1, dl + strlen(name) + 1, "a path");
  memcpy(*out, path, dl);
  strcpy(*out + dl, name);
  return 0;
}

/* The offsets' file named by root["offsets"] (beside the manifest at
 * path, unless it names a directory): its bytes, whole, into *buf. */
/* The offsets' file named by root["offsets"] (beside the manifest at
 * path, unless it names a directory) into *rp (malloc'd), its count. */
/* Its version (*version: 1 or 2) and checksum (*sum) too. */
static int roff_named(json_t *root, const char *path, int64_t *count, char **rp,
                      int *version, uint64_t *sum, ferry__err *err) {
  json_t *o = json_object_get(root, "offsets");
  json_t *jf = json_object_get(o, "file");
  json_t *jv = json_object_get(o, "version");
  *version = jv ? (int)json_integer_value(jv) : 1;
  json_t *js = json_object_get(o, *version == 2 ? "hash" : "fnv1a");
  if (!json_is_object(o) || !json_is_string(jf) || !*json_string_value(jf) ||
      get_int(o, "count", 0, count, path, "offsets.count", err) < 0 ||
      (jv && (!json_is_integer(jv) || *version != 2)) || !json_is_string(js))
    return missing(err, path, "offsets");
  if (hex64(json_string_value(js), sum) < 0)
    return missing(err, path, "offsets");
  return beside(path, json_string_value(jf), rp, err);
}

static int read_roff(json_t *root, const char *path, unsigned char **buf,
                     size_t *len, int64_t *count, char **rp, int *version,
                     uint64_t *sum, ferry__err *err) {
  int rc = roff_named(root, path, count, rp, version, sum, err);
  if (rc)
    return rc;
  FILE *f = fopen(*rp, "rb");
  if (!f)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "manifest %s: its offsets' file %s: %s (it is saved "
                         "beside the manifest: copy both)",
                         path, *rp, strerror(errno));
  *len = ROFF_HEAD + 8 * (size_t)(*count < INT64_MAX / 16 ? *count : 0) + 8;
  if (*count >= INT64_MAX / 16 || !(*buf = malloc(*len)))
    rc = *count >= INT64_MAX / 16
             ? ferry__seterr(err, FERRY_EFORMAT,
                             "manifest %s: bad offsets.count", path)
             : ferry__oom(err, -1, *len, "the offsets of manifest %s", path);
  else if (fread(*buf, 1, *len, f) != *len || fgetc(f) != EOF)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "manifest %s: its offsets' file %s is not the %zu bytes "
                       "of %lld offsets (saved with another manifest?)",
                       path, *rp, *len, (long long)*count);
  fclose(f);
  return rc;
}

/* The mismatch of an offsets' file and its manifest. */
static int roff_mismatch(const char *path, const char *rp, int64_t count,
                         int64_t want, ferry__err *err) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "manifest %s: its offsets' file %s does not match it "
                       "(header, %lld offsets for %lld, or checksum): saved "
                       "with another manifest, or corrupt",
                       path, rp, (long long)count, (long long)want);
}

/* The ragged variables' offsets in the parts, one after the other from
 * the file's (mapped) offsets, each checked. */
static int roff_point(ferry__manifest *m, const char *path, const char *rp,
                      ferry__err *err) {
  int64_t at = 0;
  for (int64_t p = 0; p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    if (!(pt->roff = calloc((size_t)m->nvars, sizeof *pt->roff)))
      return ferry__oom(err, -1, (size_t)m->nvars * sizeof *pt->roff,
                        "the offsets of manifest %s", path);
    for (int v = 0; v < m->nvars; v++) {
      if (!m->vars[v].ragged)
        continue;
      pt->roff[v] = (int64_t *)ferry__roff_map_at(m->roff_map, at);
      at += pt->num_samples + 1;
      const char *why = ferry__manifest_roff_check(m, pt, v, pt->roff[v]);
      if (why)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "manifest %s: offsets' file %s: %s (part %lld, "
                             "variable %s)",
                             path, rp, why, (long long)p, m->vars[v].name);
    }
  }
  return 0;
}

/* Every ragged variable's offsets mapped from the manifest's offsets'
 * file (core/roffmap.c): every byte checked against the checksum here, on
 * rank 0, a step at a time so that the pages read leave the rank again;
 * the other ranks map the same file when they unpack the broadcast. */
static int map_roff(json_t *root, const char *path, ferry__manifest *m,
                    int64_t want, ferry__err *err) {
  int64_t count = 0;
  char *rp = NULL;
  int version = 0;
  uint64_t sum = 0;
  int rc = roff_named(root, path, &count, &rp, &version, &sum, err);
  if (rc == 0 && count != want)
    rc = roff_mismatch(path, rp, count, want, err);
  char *full =
      rc == 0 ? realpath(rp, NULL) : NULL; /* the ranks' cwd may
                                            * differ: the path they map */
  if (rc == 0)
    rc = ferry__roff_map_open(full ? full : rp, version, count, sum,
                              &m->roff_map, err);
  free(full);
  uint64_t h = 0;
  if (rc == 0 && /* every byte, and each block's hash for the other ranks'
                  * checks (ferry__roff_map_verify) */
      ferry__side_map_check(m->roff_map, version == 1, &h) != 0)
    rc = ferry__oom(err, -1, (size_t)ferry__roff_map_nblocks(m->roff_map) * 8,
                    "the block hashes of %s", rp);
  if (rc == 0 && h != sum)
    rc = roff_mismatch(path, rp, count, want, err);
  if (rc == 0)
    rc = roff_point(m, path, rp, err);
  free(rp);
  return rc;
}

/* The offsets' file read whole into the parts' own arrays (a big-endian
 * host). */
static int read_roff_whole(json_t *root, const char *path, ferry__manifest *m,
                           ferry__err *err) {
  unsigned char *buf = NULL;
  size_t len = 0;
  int64_t count = 0, want = 0;
  char *rp = NULL;
  int version = 0;
  uint64_t sum = 0;
  int rc = read_roff(root, path, &buf, &len, &count, &rp, &version, &sum, err);
  for (int64_t p = 0; p < m->nparts; p++)
    for (int v = 0; v < m->nvars; v++)
      want += m->vars[v].ragged ? m->parts[p].num_samples + 1 : 0;
  uint64_t h = rc ? 0 : roff_sum(version, FERRY__FNV_INIT, buf, len - 8);
  if (!rc && (memcmp(buf, ROFF_MAGIC, 4) != 0 || buf[4] != version ||
              memcmp(buf + 5, "\0\0\0", 3) != 0 ||
              ferry__le64_load(buf + 8) != (uint64_t)count || count != want ||
              ferry__le64_load(buf + len - 8) != h || h != sum))
    rc = roff_mismatch(path, rp, count, want, err);
  const unsigned char *at = buf + ROFF_HEAD;
  for (int64_t p = 0; !rc && p < m->nparts; p++) {
    ferry__part *pt = &m->parts[p];
    if (!(pt->roff = calloc((size_t)m->nvars, sizeof *pt->roff)))
      rc = ferry__oom(err, -1, (size_t)m->nvars * sizeof *pt->roff,
                      "the offsets of manifest %s", path);
    for (int v = 0; !rc && v < m->nvars; v++) {
      if (!m->vars[v].ragged)
        continue;
      int64_t n = pt->num_samples + 1;
      if (!(pt->roff[v] = malloc((size_t)n * sizeof(int64_t)))) {
        rc = ferry__oom(err, -1, (size_t)n * 8, "the offsets of manifest %s",
                        path);
        break;
      }
      for (int64_t i = 0; i < n; i++, at += 8)
        pt->roff[v][i] = (int64_t)ferry__le64_load(at);
      const char *why = ferry__manifest_roff_bad(m, pt, v, pt->roff[v]);
      if (why)
        rc = ferry__seterr(err, FERRY_EFORMAT,
                           "manifest %s: offsets' file %s: %s (part %lld, "
                           "variable %s)",
                           path, rp, why, (long long)p, m->vars[v].name);
    }
  }
  free(buf);
  free(rp);
  return rc;
}

/* Every ragged variable's offsets from the manifest's offsets' file:
 * mapped where the host's integers are the file's, else read. */
static int load_roff(json_t *root, const char *path, ferry__manifest *m,
                     ferry__err *err) {
  int64_t want = 0;
  for (int64_t p = 0; p < m->nparts; p++)
    for (int v = 0; v < m->nvars; v++)
      want += m->vars[v].ragged ? m->parts[p].num_samples + 1 : 0;
  if (ferry__roff_map_supported())
    return map_roff(root, path, m, want, err);
  return read_roff_whole(root, path, m, err);
}

/* The records' file named by root["records"] (decision 0066), when there
 * is one: mapped, every byte checked against its checksum here, on rank 0,
 * with each block's hash for the other ranks' checks (they map the same
 * file when they unpack the broadcast: ferry__roff_map_verify). */
static int load_recs(json_t *root, const char *path, ferry__manifest *m,
                     ferry__err *err) {
  json_t *o = json_object_get(root, "records");
  if (!o)
    return 0;
  json_t *jf = json_object_get(o, "file"), *jv = json_object_get(o, "version"),
         *js = json_object_get(o, "hash");
  int64_t count = 0;
  if (!json_is_object(o) || !json_is_string(jf) || !*json_string_value(jf) ||
      !json_is_integer(jv) || json_integer_value(jv) != 1 ||
      !json_is_string(js) || !m->record_version ||
      get_int(o, "count", 1, &count, path, "records.count", err) < 0)
    return missing(err, path, "records");
  uint64_t sum = 0;
  char *rp = NULL;
  if (hex64(json_string_value(js), &sum) < 0)
    return missing(err, path, "records");
  int rc = beside(path, json_string_value(jf), &rp, err);
  if (rc < 0)
    return rc;
  char *full = realpath(rp, NULL); /* the ranks' cwd may differ */
  rc = ferry__side_map_open(full ? full : rp, FERRY__RECS_MAGIC,
                            "records' file", 1, count, sum, &m->rec_map, err);
  free(full);
  uint64_t h = 0;
  if (rc == 0 && ferry__side_map_check(m->rec_map, 0, &h) != 0)
    rc = ferry__oom(err, -1, (size_t)ferry__roff_map_nblocks(m->rec_map) * 8,
                    "the block hashes of %s", rp);
  if (rc == 0 && h != sum)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "manifest %s: its records' file %s does not match "
                       "its checksum: changed since it was saved, or "
                       "corrupt (save the manifest again)",
                       path, rp);
  free(rp);
  return rc;
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
  if ((rc = load_recs(root, path, m, err)) < 0)
    goto cleanup;
  int check_sizes = !(be->caps & FERRY__CAP_NOT_FLAT);
  int64_t total = 0;
  for (size_t p = 0; p < nparts; p++)
    if ((rc = load_part(json_array_get(jp, p), p, path, m, check_sizes, &total,
                        err)) < 0)
      goto cleanup;
  m->num_samples = total;
  if (ferry__manifest_ragged(m) && (rc = load_roff(root, path, m, err)) < 0)
    goto cleanup;
  if (total == 0) {
    rc = ferry__seterr(err, FERRY_EEMPTY,
                       "manifest %s: the dataset holds no sample", path);
    goto cleanup;
  }
  if ((rc = ferry__manifest_select_vars(m, vars, err)) < 0 ||
      (rc = ferry__manifest_check_servable(m, path, err)) < 0)
    goto cleanup;
  m->hash = ferry__manifest_hash(m);
cleanup:
  json_decref(root);
  if (rc < 0)
    ferry__manifest_free(m);
  return rc;
}

/* A saved manifest larger than this is refused (a million-sample
 * WebDataset manifest is about 60 MB; its offsets are in PATH.roff). */
#define MANIFEST_JSON_MAX (INT64_C(1) << 34)

int ferry__manifest_load_json(const char *path, const char *vars,
                              ferry__manifest *m, ferry__err *err) {
  memset(m, 0, sizeof *m);
  /* Read whole, then parsed from memory: jansson's json_loadf takes the
   * file a getc at a time, more than half of an open with a saved
   * manifest of a million samples (performance.md, "WebDataset shards"). */
  const char *kind = NULL;
  int fd = ferry__open_regular(path, &kind);
  if (fd == -2)
    return ferry__seterr(err, FERRY_EINVAL, "manifest %s: %s, not a file", path,
                         kind ? kind : "not a regular file");
  if (fd < 0)
    return ferry__seterr(err, ferry__errno_code(errno), "manifest %s: %s", path,
                         strerror(errno));
  struct stat st;
  char *text = NULL;
  size_t got = 0;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = ferry__seterr(err, ferry__errno_code(errno), "manifest %s: %s", path,
                       strerror(errno));
  else if ((int64_t)st.st_size > MANIFEST_JSON_MAX)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "manifest %s: %lld bytes, more than a manifest holds "
                       "(%lld)",
                       path, (long long)st.st_size,
                       (long long)MANIFEST_JSON_MAX);
  else if (!(text = malloc((size_t)st.st_size + 1)))
    rc = ferry__oom(err, -1, (size_t)st.st_size + 1, "manifest %s", path);
  else if (ferry__pread_full(fd, text, (size_t)st.st_size, 0, &got) < 0 ||
           got != (size_t)st.st_size)
    rc =
        ferry__seterr(err, FERRY_EIO, "manifest %s: read %zu of its %lld bytes",
                      path, got, (long long)st.st_size);
  close(fd);
  if (rc == 0)
    rc = ferry__manifest_load_json_text(text, got, path, vars, m, err);
  free(text);
  return rc;
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
