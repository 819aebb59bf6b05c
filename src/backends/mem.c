/*
 * mem.c - the in-memory backend: the template for new formats and the data
 * source of the tests.  A dataset string such as
 *
 *     mem:N=1000,vars=x:float32:4,y:int64,fail_at=17,fail_rank=1
 *
 * describes N samples of synthetic variables (name:dtype[:d1xd2...]); no file
 * is touched.  Options: N (required, >= 0), vars (required; the names after
 * it up to the next key=value are further variables), fail_at=ROW (a read
 * of any range holding that row fails with FERRY_EIO, for error-path
 * tests) and fail_rank=R (only rank R's reads fail).
 *
 * Element k (C order within the row) of sample i of every variable holds
 * (i + k) mod M(dtype), written in native byte order:
 *
 *     int ferry__gen_value(ferry_dtype dtype, int64_t sample, int64_t k,
 *                          void *out);
 *
 * M is 2 for bool, 2^7 int8, 2^8 uint8, 2^15 int16, 2^16 uint16, 2^31 int32,
 * 2^32 uint32, 2^62 int64 and uint64, 2^11 float16 (IEEE half bits), 2^24
 * float32, 2^53 float64: every value is exact in its type.  `ferry gen`
 * writes the same values, so `ferry verify` can check every byte served.
 * ferry__gen_value returns 0, or FERRY_EINVAL for an invalid dtype.
 *
 * As a template: a backend is one file defining its own struct ferry__io
 * and one const ferry__backend filled with designated initializers.  probe
 * must be cheap and never fail loudly; describe (rank 0) fills a
 * ferry__part_desc and names the file in every error; io_open/io_read/
 * io_close run on the loader's I/O thread, read rows in stored byte order
 * and report a short read as FERRY_EIO, never as zeros.  Add the table
 * entry in backends/registry.c and the file to Makefile.am; the checklist
 * is docs/hacking.md, "Adding a backend".  This backend has no probe: its
 * scheme "mem" sends every "mem:..." dataset string to it.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "backends/gen.h"
#include "backends/toolkit.h"
#include "util/dtype.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Every modulus is a power of two, so unsigned wrap-around of sample + k
 * keeps the residue right even past 2^63. */
int ferry__gen_value(ferry_dtype dtype, int64_t sample, int64_t k, void *out) {
  const uint64_t v = (uint64_t)sample + (uint64_t)k;
  const uint64_t low62 = v & ((UINT64_C(1) << 62) - 1);
  union {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
  } x;
  switch (dtype) {
  case FERRY_BOOL: x.u8 = (uint8_t)(v & 1u); break;
  case FERRY_INT8: x.i8 = (int8_t)(v & 0x7fu); break;
  case FERRY_UINT8: x.u8 = (uint8_t)(v & 0xffu); break;
  case FERRY_INT16: x.i16 = (int16_t)(v & 0x7fffu); break;
  case FERRY_UINT16: x.u16 = (uint16_t)(v & 0xffffu); break;
  case FERRY_INT32: x.i32 = (int32_t)(v & 0x7fffffffu); break;
  case FERRY_UINT32: x.u32 = (uint32_t)(v & 0xffffffffu); break;
  case FERRY_INT64: x.i64 = (int64_t)low62; break;
  case FERRY_UINT64: x.u64 = low62; break;
  case FERRY_FLOAT16: x.u16 = ferry__half_of_int((uint32_t)(v & 0x7ffu)); break;
  case FERRY_FLOAT32: x.f32 = (float)(v & ((UINT64_C(1) << 24) - 1)); break;
  case FERRY_FLOAT64: x.f64 = (double)(v & ((UINT64_C(1) << 53) - 1)); break;
  case FERRY_BFLOAT16:
    x.u16 = ferry__bfloat16_of_float((float)(v & 0xffu));
    break;
  default: return FERRY_EINVAL;
  }
  memcpy(out, &x, ferry_dtype_size(dtype));
  return 0;
}

/* ---- Spec parsing ----------------------------------------------------- */

typedef struct mem_spec {
  int64_t n;
  int nvars;
  ferry__var *vars;
  int64_t fail_at; /* -1: never */
  int fail_rank;   /* -1: every rank */
} mem_spec;

static void spec_free(mem_spec *s) {
  for (int i = 0; i < s->nvars; i++)
    free(s->vars[i].name);
  free(s->vars);
  memset(s, 0, sizeof *s);
}

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  if (!*s || *s == '-' || *s == '+' || *s == ' ')
    return -1;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

static int bad(const char *spec, const char *token, const char *why,
               ferry__err *err) {
  return ferry__seterr(err, FERRY_EINVAL,
                       "mem dataset '%s': bad token '%s': %s", spec, token,
                       why);
}

/* "x:float32:4x3" -> one variable appended to s. */
static int parse_var(const char *spec, char *tok, mem_spec *s,
                     ferry__err *err) {
  char *name = tok, *type = strchr(tok, ':');
  if (!type || type == tok)
    return bad(spec, tok, "a variable is name:dtype[:d1xd2...]", err);
  *type++ = '\0';
  char *dims = strchr(type, ':');
  if (dims)
    *dims++ = '\0';
  ferry__var v;
  memset(&v, 0, sizeof v);
  if (ferry__dtype_from_name(type, &v.dtype) != 0) {
    type[-1] = ':';
    if (dims)
      dims[-1] = ':';
    return bad(spec, tok,
               "unknown dtype (bool, int8..int64, uint8..uint64, "
               "float16, float32, float64)",
               err);
  }
  int64_t row_bytes = (int64_t)ferry_dtype_size(v.dtype);
  if (dims) {
    char *p = dims;
    for (;;) {
      char *x = strchr(p, 'x');
      if (x)
        *x = '\0';
      int64_t d;
      int ok = parse_i64(p, &d) == 0 && d >= 1 &&
               v.row_ndim < FERRY_MAX_DIMS - 1 && row_bytes <= INT64_MAX / d;
      if (x)
        *x = 'x';
      if (!ok) {
        type[-1] = ':';
        dims[-1] = ':';
        return bad(spec, tok,
                   "row dimensions are integers >= 1 joined by "
                   "'x', at most 7 of them",
                   err);
      }
      v.row_shape[v.row_ndim++] = d;
      row_bytes *= d;
      if (!x)
        break;
      p = x + 1;
    }
  }
  v.row_bytes = (size_t)row_bytes;
  for (int i = 0; i < s->nvars; i++)
    if (strcmp(s->vars[i].name, name) == 0)
      return bad(spec, name, "variable named twice", err);
  size_t vbytes = (size_t)(s->nvars + 1) * sizeof(ferry__var);
  ferry__var *nv = realloc(s->vars, vbytes);
  if (!nv)
    return ferry__oom(err, -1, vbytes, "the variables of %s", spec);
  s->vars = nv;
  if (!(v.name = strdup(name)))
    return ferry__oom(err, -1, strlen(name) + 1,
                      "the name of variable %s of %s", name, spec);
  s->vars[s->nvars++] = v;
  return 0;
}

static int spec_parse(const char *spec, mem_spec *s, ferry__err *err) {
  memset(s, 0, sizeof *s);
  s->n = -1;
  s->fail_at = -1;
  s->fail_rank = -1;
  if (strncmp(spec, "mem:", 4) != 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "'%s' is not a mem dataset (no 'mem:' prefix)", spec);
  char *copy = strdup(spec + 4);
  if (!copy)
    return ferry__oom(err, -1, strlen(spec + 4) + 1, "a copy of %s", spec);
  int rc = 0, in_vars = 0;
  char *save = NULL;
  for (char *p = copy;; p = NULL) {
    /* strtok would skip empty tokens; an empty one is a mistake to report. */
    char *tok = p ? p : save;
    if (!tok)
      break;
    char *comma = strchr(tok, ',');
    save = comma ? comma + 1 : NULL;
    if (comma)
      *comma = '\0';
    if (!*tok) {
      rc = bad(spec, tok, "empty item", err);
      goto cleanup;
    }
    char *eq = strchr(tok, '=');
    if (!eq) {
      if (!in_vars) {
        rc = bad(spec, tok, "expected key=value (N, vars, fail_at, fail_rank)",
                 err);
        goto cleanup;
      }
      if ((rc = parse_var(spec, tok, s, err)) < 0)
        goto cleanup;
      continue;
    }
    *eq = '\0';
    const char *key = tok, *val = eq + 1;
    in_vars = 0;
    int64_t v = 0;
    if (strcmp(key, "N") == 0 || strcmp(key, "n") == 0) {
      if (parse_i64(val, &v) < 0) {
        *eq = '=';
        rc = bad(spec, tok, "N is an integer >= 0", err);
        goto cleanup;
      }
      s->n = v;
    } else if (strcmp(key, "vars") == 0) {
      in_vars = 1;
      if ((rc = parse_var(spec, eq + 1, s, err)) < 0)
        goto cleanup;
    } else if (strcmp(key, "fail_at") == 0) {
      if (parse_i64(val, &v) < 0) {
        *eq = '=';
        rc = bad(spec, tok, "fail_at is a row number >= 0", err);
        goto cleanup;
      }
      s->fail_at = v;
    } else if (strcmp(key, "fail_rank") == 0) {
      if (parse_i64(val, &v) < 0 || v > INT_MAX) {
        *eq = '=';
        rc = bad(spec, tok, "fail_rank is a rank >= 0", err);
        goto cleanup;
      }
      s->fail_rank = (int)v;
    } else {
      *eq = '=';
      rc = bad(spec, tok, "unknown key (N, vars, fail_at, fail_rank)", err);
      goto cleanup;
    }
  }
  if (s->n < 0)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "mem dataset '%s': N=<samples> is missing", spec);
  else if (s->nvars == 0)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "mem dataset '%s': vars=<name:dtype[:dims]>,... is "
                       "missing",
                       spec);
  for (int i = 0; rc == 0 && i < s->nvars; i++)
    if (s->n > INT64_MAX / (int64_t)s->vars[i].row_bytes)
      rc = ferry__seterr(err, FERRY_EINVAL,
                         "mem dataset '%s': N=%lld rows of variable %s "
                         "overflow 64-bit byte offsets",
                         spec, (long long)s->n, s->vars[i].name);
cleanup:
  free(copy);
  if (rc < 0)
    spec_free(s);
  return rc;
}

/* ---- The backend ------------------------------------------------------ */

static int mem_describe(const char *path, const ferry_options *opts,
                        ferry__part_desc *out, ferry__err *err) {
  (void)opts; /* mem has no option of its own */
  mem_spec s;
  memset(out, 0, sizeof *out);
  int rc = spec_parse(path, &s, err);
  if (rc < 0)
    return rc;
  out->nvars = s.nvars;
  out->vars = s.vars; /* ownership moves to out */
  out->num_samples = s.n;
  out->paths = calloc((size_t)s.nvars, sizeof *out->paths);
  out->data_offset = calloc((size_t)s.nvars, sizeof *out->data_offset);
  out->file_size = calloc((size_t)s.nvars, sizeof *out->file_size);
  if (!out->paths || !out->data_offset || !out->file_size) {
    rc = ferry__oom(err, -1,
                    (size_t)s.nvars *
                        (sizeof *out->paths + sizeof *out->data_offset +
                         sizeof *out->file_size),
                    "the description of %d variables of %s", s.nvars, path);
    goto cleanup;
  }
  for (int i = 0; i < s.nvars; i++)
    if (!(out->paths[i] = strdup(path))) {
      rc = ferry__oom(err, -1, strlen(path) + 1,
                      "the path of variable %s of %s", out->vars[i].name, path);
      goto cleanup;
    }
cleanup:
  if (rc < 0)
    ferry__part_desc_free(out);
  return rc;
}

/* Per part, only the failure injection is needed at read time. */
struct ferry__io {
  ferry__io_base b; /* manifest, rank (io_base.c); no file is opened */
  int64_t *fail_at; /* [nparts] */
  int *fail_rank;   /* [nparts] */
};

static void mem_io_close(ferry__io *io) {
  if (!io)
    return;
  ferry__io_base_close(&io->b);
  free(io->fail_at);
  free(io->fail_rank);
  free(io);
}

static int mem_io_open(ferry__io **out, const ferry__manifest *m,
                       const ferry__io_params *p, ferry__err *err) {
  static const ferry__io_base_spec spec = {.size = sizeof(ferry__io)};
  void *state = NULL;
  int rc = ferry__io_base_open(&spec, m, p, &state, err);
  *out = NULL;
  if (rc < 0)
    return rc;
  ferry__io *io = state;
  size_t n = m->nparts > 0 ? (size_t)m->nparts : 1;
  io->fail_at = calloc(n, sizeof *io->fail_at);
  io->fail_rank = calloc(n, sizeof *io->fail_rank);
  if (!io->fail_at || !io->fail_rank) {
    rc = ferry__oom(err, -1, n * (sizeof *io->fail_at + sizeof *io->fail_rank),
                    "the I/O state (dataset %s, rank %d)", m->spec, p->rank);
    goto cleanup;
  }
  for (int64_t i = 0; i < m->nparts; i++) {
    mem_spec s;
    if (m->nvars < 1 || (rc = spec_parse(m->parts[i].paths[0], &s, err)) < 0) {
      if (rc == 0)
        rc =
            ferry__seterr(err, FERRY_EINTERNAL, "mem manifest has no variable");
      goto cleanup;
    }
    io->fail_at[i] = s.fail_at;
    io->fail_rank[i] = s.fail_rank;
    spec_free(&s);
  }
cleanup:
  if (rc < 0) {
    mem_io_close(io);
    return rc;
  }
  *out = io;
  return 0;
}

static int mem_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                       int64_t nrows, void *buf, ferry__err *err) {
  const ferry__manifest *m = io->b.m;
  int rc0 = ferry__check_part_var(m, part, var, io->b.rank, err);
  if (rc0)
    return rc0;
  const ferry__part *pt = &m->parts[part];
  const ferry__var *v = &m->vars[var];
  if ((rc0 = ferry__check_rows(m, part, var, row, nrows, io->b.rank, err)))
    return rc0;
  int64_t f = io->fail_at[part];
  if (f >= row && f < row + nrows &&
      (io->fail_rank[part] < 0 || io->fail_rank[part] == io->b.rank))
    return ferry__seterr(err, FERRY_EIO,
                         "injected read failure (fail_at=%lld): file %s, "
                         "variable %s, rank %d, offset %lld (rows [%lld, "
                         "%lld))",
                         (long long)f, pt->paths[var], v->name, io->b.rank,
                         (long long)(f * (int64_t)v->row_bytes), (long long)row,
                         (long long)(row + nrows));
  size_t elsize = ferry_dtype_size(v->dtype);
  if (elsize == 0)
    return ferry__seterr(err, FERRY_EINTERNAL, "variable %s has dtype %d",
                         v->name, (int)v->dtype);
  int64_t per_row = (int64_t)(v->row_bytes / elsize);
  unsigned char *p = buf;
  for (int64_t i = 0; i < nrows; i++) {
    int64_t sample = pt->first_sample + row + i;
    for (int64_t k = 0; k < per_row; k++, p += elsize)
      ferry__gen_value(v->dtype, sample, k, p);
  }
  return 0;
}

/* Reads need no coordination, so io=collective is accepted (and lets tests
 * drive the collective schedule without files). */
const ferry__backend ferry__backend_mem = {
    .name = "mem",
    .version = 1,
    .caps = FERRY__CAP_COLLECTIVE | FERRY__CAP_NOT_FLAT,
    .scheme = "mem",
    .probe = NULL, /* reached through its scheme only */
    .describe = mem_describe,
    .io_open = mem_io_open,
    .io_read = mem_io_read,
    .io_close = mem_io_close,
};
