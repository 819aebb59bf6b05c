/*
 * fuzz_anndata.c - the AnnData interpreter (backends/anndata.c,
 * ferry__anndata_prepare) over stores made of fuzz bytes: the arrays a
 * backend would list (names from AnnData's layout and a few that are not,
 * their dimensions and length, string or not, readable or not), the
 * attributes it would answer (encoding-type, h5sparse_format, _index,
 * shape), the indptr it would read (valid, or any integers, or a failed
 * read) and the names of a string array (none, a count of them, or one a
 * row).  Input: byte 0 the arrays, 5 bytes each; 18 attribute bytes;
 * the shapes (1 + 4 bytes each, 6); X exists; the indptr mode; the names
 * mode; the rest behind indptr and names (tests/fuzz/README.md).
 *
 * What it promises when it says AnnData (1): a number of cells within
 * FERRY__AD_CELLS_MAX; each CSR array with offsets from 0, never
 * decreasing, ending at its values, as many as the cells, and a width;
 * names of a matrix's indices one a column.  An error is a FERRY_E* code
 * with a message.  Not AnnData (0): nothing made.  Leaks are findings.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/anndata.h"
#include "fuzz.h"

#include <string.h>

static const char *const NAMES[] = {
    "X",
    "X/indptr",
    "X/indices",
    "X/data",
    "layers/L/indptr",
    "layers/L/indices",
    "layers/L/data",
    "raw/X/indptr",
    "raw/X/indices",
    "raw/X/data",
    "obs/_index",
    "obs/c/codes",
    "obs/c/categories",
    "obs/n",
    "obsm/e",
    "var/_index",
    "raw/var/_index",
    "uns/u",
    "layers/D",
    "obs/s/values",
    "obs/s/mask",
    "layers//indptr",
    "obs/codes",
    "X/indptr/indptr",
};
#define NNAMES (int)(sizeof NAMES / sizeof NAMES[0])

static const char *const OBJS[] = {".",     "X",   "layers/L",
                                   "raw/X", "var", "raw/var"};
#define NOBJS 6
static const char *const ATTRS[] = {"encoding-type", "h5sparse_format",
                                    "_index"};
#define NATTRS 3
static const char *const TEXTS[] = {"",    "anndata",    "csr_matrix", "csr",
                                    "csc", "csc_matrix", "_index",     "dict"};
static const char *const SHAPED[] = {"X", "layers/L", "raw/X"};
/* Lengths and shapes past what a store holds.  An array's length stays
 * below 2^16 + 1 otherwise: the indptr of n cells is allocated (8(n + 1)
 * bytes, as a real store's would be), beyond libFuzzer's malloc limit. */
static const int64_t SPECIAL[] = {-1, INT64_MAX, INT64_MIN,
                                  ((int64_t)1 << 40) + 1};
static const int64_t SPECIAL_LEN[] = {-1, INT64_MAX, INT64_MIN, 0};

/* The bytes still to read: 0 once they run out. */
typedef struct src {
  const uint8_t *p;
  size_t n, at;
} src;

static unsigned byte(src *s) { return s->at < s->n ? s->p[s->at++] : 0u; }

static int64_t small(src *s) {
  unsigned lo = byte(s);
  return (int64_t)(lo | byte(s) << 8);
}

typedef struct fake {
  ferry__ad_array a[32];
  int n;
  unsigned text[NOBJS][NATTRS];
  int has_shape[3][2];
  int64_t shape[3][2][2];
  int x_exists;
  unsigned ints_mode, names_mode;
  src rest; /* the bytes behind indptr and names */
} fake;

static int obj_index(const char *obj) {
  for (int i = 0; i < NOBJS; i++)
    if (!strcmp(OBJS[i], obj))
      return i;
  return -1;
}

static void f_text(void *ctx, const char *obj, const char *name, char *buf,
                   size_t len) {
  fake *f = ctx;
  int o = obj_index(obj);
  buf[0] = '\0';
  for (int k = 0; o >= 0 && k < NATTRS; k++)
    if (!strcmp(ATTRS[k], name))
      snprintf(buf, len, "%s", TEXTS[f->text[o][k] % 8]);
}

static int f_ints(void *ctx, const char *obj, const char *name, int64_t *out,
                  int n) {
  fake *f = ctx;
  int k = !strcmp(name, "shape") ? 0 : !strcmp(name, "h5sparse_shape") ? 1 : -1;
  for (int g = 0; g < 3 && k >= 0 && n == 2; g++)
    if (!strcmp(SHAPED[g], obj) && f->has_shape[g][k]) {
      out[0] = f->shape[g][k][0];
      out[1] = f->shape[g][k][1];
      return 0;
    }
  return -1;
}

static int f_exists(void *ctx, const char *obj) {
  fake *f = ctx;
  size_t len = strlen(obj);
  if (!strcmp(obj, "X") && f->x_exists)
    return 1;
  for (int i = 0; i < f->n; i++)
    if (!strncmp(f->a[i].name, obj, len) &&
        (f->a[i].name[len] == '\0' || f->a[i].name[len] == '/'))
      return 1;
  return 0;
}

static int64_t length_of(const fake *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->a[i].name, name))
      return f->a[i].dims0;
  return 0;
}

static int f_read_ints(void *ctx, const char *name, int64_t *out, int64_t n,
                       ferry__err *err) {
  fake *f = ctx;
  FUZZ_CHECK(n >= 1);
  if (f->ints_mode % 3 == 2)
    return ferry__seterr(err, FERRY_EIO, "fuzz: the read of %s failed", name);
  if (f->ints_mode % 3 == 0) { /* valid: from 0 to the values' count */
    char data[64];
    size_t len = strlen(name);
    FUZZ_CHECK(len >= 7 && len - 7 + 6 < sizeof data);
    snprintf(data, sizeof data, "%.*sdata", (int)(len - 6), name);
    int64_t nnz = length_of(f, data);
    if (nnz < 0 || nnz > ((int64_t)1 << 40)) /* the harness's own arithmetic */
      nnz = 0; /* (then the indptr does not end at the values' count)    */
    for (int64_t i = 0; i < n; i++)
      out[i] = n > 1 ? nnz * i / (n - 1) : 0;
    return 0;
  }
  src r = f->rest;
  for (int64_t i = 0; i < n; i++) { /* any integers, the bytes cycled */
    if (r.at >= r.n)
      r.at = 0;
    out[i] = (int64_t)(int8_t)byte(&r) + (i ? out[i - 1] : 0);
  }
  return 0;
}

static char *f_names(void *ctx, const char *name) {
  fake *f = ctx;
  int64_t k = f->names_mode % 3 == 0   ? 0
              : f->names_mode % 3 == 1 ? (int64_t)(f->names_mode >> 2)
                                       : length_of(f, name);
  if (k <= 0 || k > 4096)
    return NULL;
  const char *s[4096];
  size_t lens[4096];
  for (int64_t i = 0; i < k; i++) {
    s[i] = "gene";
    lens[i] = f->rest.n && f->rest.p[(size_t)i % f->rest.n] == '\n' ? 0 : 4;
  }
  return ferry__anndata_join(s, lens, k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fake f;
  src s = {data, size, 0};
  memset(&f, 0, sizeof f);
  f.n = (int)(byte(&s) % 32);
  for (int i = 0; i < f.n; i++) {
    ferry__ad_array *x = &f.a[i];
    x->name = NAMES[byte(&s) % NNAMES];
    x->ndims = (int)(byte(&s) % 4) - 1;
    x->dims0 = small(&s);
    unsigned flags = byte(&s);
    x->is_string = flags & 1;
    x->unreadable = (flags >> 1) & 1;
    if (flags & 4)
      x->dims0 = SPECIAL_LEN[x->dims0 % 4];
  }
  for (int o = 0; o < NOBJS; o++)
    for (int k = 0; k < NATTRS; k++)
      f.text[o][k] = byte(&s);
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 2; k++) {
      unsigned b = byte(&s);
      f.has_shape[g][k] = b & 1;
      f.shape[g][k][0] = b & 2 ? SPECIAL[b >> 2 & 3] : small(&s);
      f.shape[g][k][1] = small(&s) - (b & 16 ? 40000 : 0);
    }
  f.x_exists = (int)(byte(&s) & 1);
  f.ints_mode = byte(&s);
  f.names_mode = byte(&s);
  f.rest = (src){data + s.at, size - s.at, 0};

  const ferry__ad_ops ops = {&f,       f_text,      f_ints,
                             f_exists, f_read_ints, f_names};
  ferry__err err;
  memset(&err, 0, sizeof err);
  int64_t n_obs = -7;
  int rc = ferry__anndata_prepare(&ops, "fuzz.h5ad", f.a, f.n, &n_obs, &err);
  FUZZ_CHECK(rc == 0 || rc == 1 || rc == FERRY_EFORMAT || rc == FERRY_ENOTSUP ||
             rc == FERRY_EIO || rc == FERRY_ENOMEM);
  if (rc < 0)
    FUZZ_CHECK(err.msg[0] != '\0');
  for (int i = 0; i < f.n; i++) {
    const ferry__ad_array *x = &f.a[i];
    if (rc == 0)
      FUZZ_CHECK(!x->csr && !x->roff && !x->cats && !x->why);
    if (rc != 1 || !x->csr)
      continue;
    FUZZ_CHECK(n_obs >= 0 && n_obs <= FERRY__AD_CELLS_MAX);
    FUZZ_CHECK(x->roff && x->dims0 == n_obs && x->width >= 0 && x->ndims == 1 &&
               !x->why);
    FUZZ_CHECK(x->roff[0] == 0 && x->roff[n_obs] == x->nnz);
    for (int64_t r = 0; r < n_obs; r++)
      FUZZ_CHECK(x->roff[r] <= x->roff[r + 1]);
    if (x->cats) {
      int64_t k = 1;
      for (const char *c = x->cats; *c; c++)
        k += *c == '\n';
      FUZZ_CHECK(k == x->width);
    }
  }
  for (int i = 0; i < f.n; i++) {
    free(f.a[i].roff);
    free(f.a[i].cats);
  }
  return 0;
}
