/*
 * cmd_gen.c - `ferry gen DIR`: write a synthetic dataset of .npy files whose
 * every element encodes its sample's index (element k of row i is
 * (i + k) mod M(dtype), see tool_fill_rows), so that `ferry verify` can check
 * that each served sample holds exactly the bytes of its index.  The files
 * are written in blocks of a few MiB, never whole; with --parts K the samples
 * are split into K contiguous shares DIR/part-00000 ... and rank r writes the
 * parts p with p % size == r.  Rank 0 writes DIR/FERRY_GEN last, so the
 * marker exists only for a complete dataset.  Uses no loader: it only needs
 * the dtype helpers of ferry.h.
 */
#include "gen_anndata.h"
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  OPT_SAMPLES = 1,
  OPT_SIZE,
  OPT_VAR,
  OPT_NPY_VERSION,
  OPT_PARTS,
  OPT_BIG_ENDIAN,
  OPT_FORMAT,
  OPT_MEAN_LEN,
  OPT_LEN_SIGMA,
  OPT_SEED,
  OPT_LEN_LIST,
  OPT_ANNDATA,
  OPT_GENES,
  OPT_DENSITY,
  OPT_DTYPE,
  OPT_CATEGORIES
};

static int run_gen(tool_ctx *ctx);

static const tool_opt gen_opts[] = {
    {"samples", 1, OPT_SAMPLES, "N",
     "Number of samples (rows of every variable)."},
    {"size", 1, OPT_SIZE, "SIZE",
     "Total size instead of --samples: N = SIZE / (bytes of one sample of "
     "all variables), at least 1.  Suffixes K, M, G, T (or KiB, MiB, GiB, "
     "TiB) are powers of 1024; KB, MB, GB, TB powers of 1000."},
    {"var", 1, OPT_VAR, "NAME:DTYPE[:SHAPE]",
     "A variable, repeatable; SHAPE is the row shape such as 256 or 3x32x32 "
     "(none: one element per sample).  DTYPE is a NumPy name: bool, int8, "
     "int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, "
     "float64.  Default: samples:float32:256 and targets:int64."},
    {"npy-version", 1, OPT_NPY_VERSION, "1|2|3",
     "Version of the .npy header to write.  Default: 1."},
    {"parts", 1, OPT_PARTS, "K",
     "Split the samples into K contiguous parts DIR/part-00000 ... (open them "
     "as the glob 'DIR/part-*').  Default: 1 (the files directly in DIR)."},
    {"big-endian", 0, OPT_BIG_ENDIAN, NULL,
     "Store multi-byte elements big-endian ('>' in the header)."},
    {"format", 1, OPT_FORMAT, "npy|megatron|anndata",
     "npy (default): .npy files.  anndata: the file DIR (FILE.h5ad), as "
     "--anndata.  megatron: a Megatron-LM indexed dataset "
     "DIR/corpus.bin + DIR/corpus.idx of N sequences (one document each) "
     "of one ragged variable, tokens (--var tokens:DTYPE picks its dtype: "
     "uint8, int8, int16, uint16, int32 (default), int64, float32, "
     "float64); token k of sequence i is (i + k) mod M, as for .npy."},
    {"mean-len", 1, OPT_MEAN_LEN, "L",
     "--format megatron: the mean sequence length.  Lengths are drawn "
     "log-normal with that mean (at least 1), from --seed and the "
     "sequence's index alone.  Default: 256."},
    {"len-sigma", 1, OPT_LEN_SIGMA, "S",
     "--format megatron: sigma of the lengths' log-normal (0: every "
     "sequence L long).  Default: 0.6."},
    {"seed", 1, OPT_SEED, "S",
     "--format megatron: the lengths' seed; --anndata: the values'.  "
     "Default: 0."},
    {"len-list", 1, OPT_LEN_LIST, "N1,N2,...",
     "--format megatron: sequence i is N(i mod k) tokens long (0 allowed: "
     "empty documents), instead of the log-normal: corpora of chosen "
     "lengths for the packing tests."},
    {"anndata", 0, OPT_ANNDATA, NULL,
     "Write one AnnData file FILE.h5ad (the positional argument) of "
     "--samples cells x --genes genes, laid out as anndata 0.8 writes it: "
     "a sparse CSR X, obs with a categorical cell_type (about 5% missing) "
     "and n_counts, var of gene names.  Needs a build with HDF5."},
    {"genes", 1, OPT_GENES, "G",
     "--anndata: the matrix's columns, 1 to 2^31-1 (required)."},
    {"density", 1, OPT_DENSITY, "D",
     "--anndata: the share of nonzero values, in (0, 1] (a cell's columns "
     "are a seeded skip sequence of mean gap about 1/D).  Default: 0.05."},
    {"dtype", 1, OPT_DTYPE, "float32|float64|int32",
     "--anndata: the dtype of X/data (values are integers 1..255).  "
     "Default: float32."},
    {"categories", 1, OPT_CATEGORIES, "K",
     "--anndata: the categories of obs/cell_type, 1 to 127.  Default: 8."},
    {NULL, 0, 0, NULL, NULL},
};

const tool_cmd tool_cmd_gen = {
    .name = "gen",
    .args = "DIR (--samples N | --size SIZE) [--var NAME:DTYPE[:SHAPE]]... "
            "[--npy-version 1|2|3] [--parts K] [--big-endian] "
            "[--format npy|megatron [--mean-len L] [--len-sigma S] "
            "[--seed S] [--len-list N1,N2,...]] | "
            "FILE.h5ad --anndata --samples N --genes G [--density D] "
            "[--dtype float32|float64|int32] [--categories K] [--seed S]",
    .summary = "write a synthetic .npy dataset whose values encode the index",
    .description =
        "Write a synthetic dataset into DIR (created if needed; refused if it "
        "holds anything but an earlier 'ferry gen' output, which is "
        "replaced): one NAME.npy file per variable, or K part directories.  "
        "Element k of row i is (i + k) mod M, M = 2^7 int8, 2^8 uint8, 2^15 "
        "int16, 2^16 uint16, 2^31 int32, 2^32 uint32, 2^62 int64 and uint64, "
        "2^11 float16, 2^24 float32, 2^53 float64, 2 bool.  DIR/FERRY_GEN "
        "records what was written; 'ferry verify' then checks the content.  "
        "With --anndata: one AnnData file instead, cell i's columns and "
        "values (integers 1..255) a function of --seed, i and the column, "
        "its parameters in the root attribute ferry-gen, so that 'ferry "
        "verify FILE.h5ad' checks every served cell's indices, data, code "
        "and n_counts (docs/singlecell.md).",
    .loader_options = 0,
    .opts = gen_opts,
    .run = run_gen,
};

#define GEN_MAX_VARS 64
#define GEN_BLOCK_BYTES ((size_t)4 << 20)

typedef struct gen_var {
  char name[128];
  ferry_dtype dtype;
  int row_ndim;
  int64_t row_shape[FERRY_MAX_DIMS];
  int64_t row_elems;
  size_t row_bytes;
} gen_var;

typedef struct gen_params {
  int nvars;
  gen_var vars[GEN_MAX_VARS];
  int64_t samples;
  int64_t parts;
  int npy_version;
  int big_endian;
  int megatron;    /* --format megatron */
  double mean_len; /* its lengths' log-normal: mean and sigma */
  double sigma;
  uint64_t seed;
  int nlist; /* --len-list: the lengths, cycled (0: log-normal) */
  int64_t list[64];
  int anndata;     /* --anndata: one .h5ad file (gen_anndata.c) */
  int ad_only;     /* an option of --anndata alone was given */
  adgen_params ad; /* its parameters */
} gen_params;

static int parse_var(const tool_ctx *ctx, const char *spec, gen_var *v) {
  char buf[512];
  if (strlen(spec) >= sizeof buf)
    return tool_usage_error(ctx, "--var '%.40s...' is too long", spec);
  strcpy(buf, spec);
  char *name = buf, *dtype = strchr(buf, ':'), *shape = NULL;
  if (dtype == NULL)
    return tool_usage_error(ctx, "--var '%s': expected NAME:DTYPE[:SHAPE]",
                            spec);
  *dtype++ = '\0';
  if ((shape = strchr(dtype, ':')) != NULL)
    *shape++ = '\0';
  if (name[0] == '\0' || strlen(name) >= sizeof v->name ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789_-.") != strlen(name) ||
      name[0] == '.')
    return tool_usage_error(ctx,
                            "--var '%s': bad variable name '%s' (letters, "
                            "digits, '_', '-', '.')",
                            spec, name);
  int d = tool_dtype_from_name(dtype);
  if (d < 0)
    return tool_usage_error(ctx, "--var '%s': unknown dtype '%s'", spec, dtype);
  if (d == FERRY_BFLOAT16) /* .npy has no bfloat16 */
    return tool_usage_error(ctx,
                            "--var '%s': a .npy file holds no bfloat16 "
                            "(NumPy has no such type)",
                            spec);
  memset(v, 0, sizeof *v);
  strcpy(v->name, name);
  v->dtype = (ferry_dtype)d;
  v->row_elems = 1;
  if (shape != NULL && shape[0] != '\0') {
    char *save = NULL;
    for (char *tok = strtok_r(shape, "x,", &save); tok;
         tok = strtok_r(NULL, "x,", &save)) {
      int64_t dim;
      if (v->row_ndim >= FERRY_MAX_DIMS - 1)
        return tool_usage_error(ctx, "--var '%s': at most %d row dimensions",
                                spec, FERRY_MAX_DIMS - 1);
      if (tool_parse_i64(tok, 0, INT64_C(1) << 40, &dim) != 0)
        return tool_usage_error(ctx, "--var '%s': bad dimension '%s'", spec,
                                tok);
      v->row_shape[v->row_ndim++] = dim;
      if (dim != 0 && v->row_elems > (INT64_C(1) << 40) / dim)
        return tool_usage_error(ctx, "--var '%s': row too large", spec);
      v->row_elems *= dim;
    }
  }
  v->row_bytes = (size_t)v->row_elems * ferry_dtype_size(v->dtype);
  return TOOL_CONTINUE;
}

/* --format megatron: one variable, tokens, of a dtype Megatron writes. */
static int megatron_params(const tool_ctx *ctx, gen_params *p) {
  if (p->nvars == 0) {
    parse_var(ctx, "tokens:int32", &p->vars[0]);
    p->nvars = 1;
  }
  const gen_var *v = &p->vars[0];
  ferry_dtype d = v->dtype;
  if (p->nvars != 1 || strcmp(v->name, "tokens") != 0 || v->row_ndim != 0)
    return tool_usage_error(ctx, "--format megatron writes one variable, "
                                 "tokens: give at most --var tokens:DTYPE");
  if (d == FERRY_BOOL || d == FERRY_UINT32 || d == FERRY_UINT64 ||
      d == FERRY_FLOAT16)
    return tool_usage_error(ctx,
                            "--format megatron: Megatron has no %s tokens "
                            "(uint8, int8, int16, uint16, int32, int64, "
                            "float32, float64)",
                            ferry_dtype_name(d));
  if (p->parts != 1 || p->big_endian || p->npy_version != 1)
    return tool_usage_error(ctx, "--format megatron writes one little-endian "
                                 "corpus: no --parts, --big-endian or "
                                 "--npy-version");
  return TOOL_CONTINUE;
}

/* --len-list N1,N2,...: up to 64 lengths from 0 to 2^31-1. */
static int parse_len_list(const tool_ctx *ctx, const char *val, gen_params *p) {
  const char *s = val;
  p->nlist = 0;
  while (*s) {
    char *end = NULL;
    long long x = strtoll(s, &end, 10);
    if (end == s || x < 0 || x > 2147483647 || p->nlist >= 64 ||
        (*end && *end != ','))
      return tool_usage_error(ctx,
                              "bad value '%s' for --len-list: expected up "
                              "to 64 comma-separated lengths from 0 to "
                              "2^31-1",
                              val);
    p->list[p->nlist++] = x;
    s = *end ? end + 1 : end;
  }
  if (!p->nlist)
    return tool_usage_error(ctx, "--len-list: no length given");
  return TOOL_CONTINUE;
}

/* An option of --anndata (--anndata itself, --genes, --density, --dtype,
 * --categories). */
static int parse_anndata_opt(const tool_ctx *ctx, int id, const char *val,
                             gen_params *p) {
  int64_t v;
  char *end = NULL;
  switch (id) {
  case OPT_ANNDATA: p->anndata = 1; return TOOL_CONTINUE;
  case OPT_GENES:
    if (tool_parse_i64(val, 1, INT32_MAX, &p->ad.genes) != 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --genes: expected an "
                              "integer from 1 to 2^31-1",
                              val);
    break;
  case OPT_DENSITY:
    p->ad.density = strtod(val, &end);
    if (!end || end == val || *end || !(p->ad.density > 0) || p->ad.density > 1)
      return tool_usage_error(ctx,
                              "bad value '%s' for --density: expected a "
                              "number in (0, 1], the share of nonzero "
                              "values",
                              val);
    break;
  case OPT_DTYPE:
    p->ad.dtype = (ferry_dtype)tool_dtype_from_name(val);
    if (strcmp(val, "float32") != 0 && strcmp(val, "float64") != 0 &&
        strcmp(val, "int32") != 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --dtype: expected "
                              "float32, float64 or int32",
                              val);
    break;
  case OPT_CATEGORIES:
    if (tool_parse_i64(val, 1, ADGEN_MAX_CATEGORIES, &v) != 0)
      return tool_usage_error(ctx,
                              "bad value '%s' for --categories: expected an "
                              "integer from 1 to %d (int8 codes)",
                              val, ADGEN_MAX_CATEGORIES);
    p->ad.categories = (int)v;
    break;
  default: return TOOL_CONTINUE;
  }
  p->ad_only = 1;
  return TOOL_CONTINUE;
}

/* --anndata: cells from --samples, --genes given, no option of the other
 * formats. */
static int anndata_params(const tool_ctx *ctx, gen_params *p, int have_samples,
                          int have_size) {
  if (!p->anndata)
    return tool_usage_error(ctx, "--genes, --density, --dtype and "
                                 "--categories are options of --anndata");
  if (p->megatron || p->nvars || p->parts != 1 || p->big_endian ||
      p->npy_version != 1 || p->nlist || have_size)
    return tool_usage_error(ctx, "--anndata writes one AnnData file: no "
                                 "--var, --parts, --big-endian, "
                                 "--npy-version, --len-list, --size or "
                                 "--format megatron");
  if (!have_samples || p->ad.genes < 1)
    return tool_usage_error(ctx, "--anndata needs --samples N (the cells) "
                                 "and --genes G");
  p->ad.cells = p->samples;
  p->ad.seed = p->seed;
  p->ad.span = adgen_span(p->ad.density);
  return TOOL_CONTINUE;
}

/* --format npy|megatron|anndata. */
static int parse_format(const tool_ctx *ctx, const char *val, gen_params *p) {
  if (strcmp(val, "npy") != 0 && strcmp(val, "megatron") != 0 &&
      strcmp(val, "anndata") != 0)
    return tool_usage_error(ctx,
                            "bad value '%s' for --format: expected npy, "
                            "megatron or anndata",
                            val);
  p->megatron = strcmp(val, "megatron") == 0;
  p->anndata = strcmp(val, "anndata") == 0;
  return TOOL_CONTINUE;
}

static void gen_defaults(gen_params *p) {
  memset(p, 0, sizeof *p);
  p->parts = 1;
  p->npy_version = 1;
  p->mean_len = 256;
  p->sigma = 0.6;
  p->ad.density = 0.05;
  p->ad.dtype = FERRY_FLOAT32;
  p->ad.categories = 8;
}

static int parse_gen(const tool_ctx *ctx, gen_params *p) {
  uint64_t size = 0;
  int have_samples = 0, have_size = 0, st_megatron;
  gen_defaults(p);
  for (int i = 0; i < ctx->nargs; i++) {
    const char *val = ctx->args[i].value;
    int st;
    switch (ctx->args[i].id) {
    case OPT_SAMPLES:
      if (tool_parse_i64(val, 1, INT64_C(1) << 62, &p->samples) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --samples: expected "
                                "an integer >= 1",
                                val);
      have_samples = 1;
      break;
    case OPT_SIZE:
      if (tool_parse_size(val, &size) != 0 || size == 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --size: expected a "
                                "size such as 4096, 64MiB or 2GiB",
                                val);
      have_size = 1;
      break;
    case OPT_VAR:
      if (p->nvars >= GEN_MAX_VARS)
        return tool_usage_error(ctx, "at most %d --var", GEN_MAX_VARS);
      if ((st = parse_var(ctx, val, &p->vars[p->nvars])) != TOOL_CONTINUE)
        return st;
      for (int j = 0; j < p->nvars; j++)
        if (strcmp(p->vars[j].name, p->vars[p->nvars].name) == 0)
          return tool_usage_error(ctx, "--var '%s' given twice",
                                  p->vars[j].name);
      p->nvars++;
      break;
    case OPT_NPY_VERSION: {
      int64_t v;
      if (tool_parse_i64(val, 1, 3, &v) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --npy-version: "
                                "expected 1, 2 or 3",
                                val);
      p->npy_version = (int)v;
      break;
    }
    case OPT_PARTS:
      if (tool_parse_i64(val, 1, 99999, &p->parts) != 0)
        return tool_usage_error(ctx,
                                "bad value '%s' for --parts: expected an "
                                "integer in [1, 99999]",
                                val);
      break;
    case OPT_BIG_ENDIAN: p->big_endian = 1; break;
    case OPT_FORMAT:
      if ((st = parse_format(ctx, val, p)) != TOOL_CONTINUE)
        return st;
      break;
    case OPT_MEAN_LEN:
    case OPT_LEN_SIGMA: {
      char *end = NULL;
      double x = strtod(val, &end);
      int mean = ctx->args[i].id == OPT_MEAN_LEN;
      if (!end || *end || !(x >= (mean ? 1 : 0)) || x > (mean ? 1e9 : 4))
        return tool_usage_error(ctx, "bad value '%s' for --%s: expected %s",
                                val, mean ? "mean-len" : "len-sigma",
                                mean ? "a number from 1 to 1e9"
                                     : "a number from 0 to 4");
      *(mean ? &p->mean_len : &p->sigma) = x;
      break;
    }
    case OPT_LEN_LIST:
      if ((st = parse_len_list(ctx, val, p)) != TOOL_CONTINUE)
        return st;
      break;
    case OPT_SEED: {
      int64_t v;
      if (tool_parse_i64(val, 0, INT64_MAX, &v) != 0)
        return tool_usage_error(ctx, "bad value '%s' for --seed", val);
      p->seed = (uint64_t)v;
      break;
    }
    default:
      if ((st = parse_anndata_opt(ctx, ctx->args[i].id, val, p)) !=
          TOOL_CONTINUE)
        return st;
    }
  }
  if (p->anndata || p->ad_only)
    return anndata_params(ctx, p, have_samples, have_size);
  if (p->megatron && (st_megatron = megatron_params(ctx, p)) != TOOL_CONTINUE)
    return st_megatron;
  if (p->nvars == 0) {
    parse_var(ctx, "samples:float32:256", &p->vars[0]);
    parse_var(ctx, "targets:int64", &p->vars[1]);
    p->nvars = 2;
  }
  if (have_samples == have_size)
    return tool_usage_error(ctx, "give exactly one of --samples N and "
                                 "--size SIZE");
  if (have_size) {
    uint64_t row = 0;
    for (int i = 0; i < p->nvars; i++)
      row += p->vars[i].row_bytes;
    if (p->megatron) /* a sequence: mean_len tokens on average */
      row = (uint64_t)(p->mean_len * (double)row);
    if (row == 0)
      return tool_usage_error(ctx, "--size needs variables with non-empty "
                                   "rows; use --samples");
    p->samples = (int64_t)(size / row);
    if (p->samples < 1)
      p->samples = 1;
  }
  if (p->parts > p->samples)
    return tool_usage_error(
        ctx, "--parts %" PRId64 " is more than the %" PRId64 " samples",
        p->parts, p->samples);
  return TOOL_CONTINUE;
}

/* ---- Files -------------------------------------------------------------- */

static int mkdir_p(const char *path) {
  char buf[4096];
  if (strlen(path) >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(buf, path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST)
    return -1;
  struct stat st;
  if (stat(buf, &st) != 0)
    return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Remove the *.npy files of dir, then dir itself when rmdir_too. */
static int remove_npy_files(const tool_ctx *ctx, const char *dir,
                            int rmdir_too) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    tool_error(ctx, "cannot open %s: %s", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (!ends_with(e->d_name, ".npy"))
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0) {
      tool_error(ctx, "cannot remove %s: %s", path, strerror(errno));
      rc = -1;
    }
  }
  closedir(d);
  if (rc == 0 && rmdir_too && rmdir(dir) != 0) {
    tool_error(ctx, "cannot remove %s: %s", dir, strerror(errno));
    rc = -1;
  }
  return rc;
}

/* Rank 0: make DIR ready.  A directory holding an earlier `ferry gen` output
 * (it has FERRY_GEN) is emptied of that output; any other non-empty
 * directory is refused, so gen never deletes what it did not write. */
static int prepare_dir(const tool_ctx *ctx, const gen_params *p) {
  const char *dir = ctx->target;
  char path[4096];
  if (mkdir_p(dir) != 0) {
    tool_error(ctx, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "%s/FERRY_GEN", dir);
  int previous = access(path, F_OK) == 0;
  DIR *d = opendir(dir);
  if (d == NULL) {
    tool_error(ctx, "cannot open %s: %s", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int nonempty = 0, rc = 0;
  while ((e = readdir(d)) != NULL && rc == 0) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    nonempty = 1;
    if (!previous)
      break;
    if (strncmp(e->d_name, "part-", 5) == 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      rc = remove_npy_files(ctx, path, 1);
    }
  }
  closedir(d);
  if (rc != 0)
    return -1;
  if (nonempty && !previous) {
    tool_error(ctx,
               "%s is not empty and holds no earlier 'ferry gen' output "
               "(FERRY_GEN); refusing to write there",
               dir);
    return -1;
  }
  if (previous) {
    if (remove_npy_files(ctx, dir, 0) != 0)
      return -1;
    static const char *const corpus[] = {"corpus.bin", "corpus.idx"};
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s/%s", dir, corpus[k]);
      if (unlink(path) != 0 && errno != ENOENT) {
        tool_error(ctx, "cannot remove %s: %s", path, strerror(errno));
        return -1;
      }
    }
    snprintf(path, sizeof path, "%s/FERRY_GEN", dir);
    if (unlink(path) != 0) {
      tool_error(ctx, "cannot remove %s: %s", path, strerror(errno));
      return -1;
    }
  }
  for (int64_t k = 0; p->parts > 1 && k < p->parts; k++) {
    snprintf(path, sizeof path, "%s/part-%05" PRId64, dir, k);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      tool_error(ctx, "cannot create %s: %s", path, strerror(errno));
      return -1;
    }
  }
  return 0;
}

/* The .npy header: magic, version, header length, then the dict padded with
 * spaces and a newline to a multiple of 64 bytes, as NumPy writes it. */
static int npy_header(const gen_params *p, const gen_var *v, int64_t rows,
                      unsigned char *out, size_t cap, size_t *len) {
  static const char kind[FERRY_DTYPE_COUNT] = {
      [FERRY_BOOL] = 'b',    [FERRY_INT8] = 'i',    [FERRY_INT16] = 'i',
      [FERRY_INT32] = 'i',   [FERRY_INT64] = 'i',   [FERRY_UINT8] = 'u',
      [FERRY_UINT16] = 'u',  [FERRY_UINT32] = 'u',  [FERRY_UINT64] = 'u',
      [FERRY_FLOAT16] = 'f', [FERRY_FLOAT32] = 'f', [FERRY_FLOAT64] = 'f'};
  size_t elsize = ferry_dtype_size(v->dtype);
  char shape[512], dict[1024];
  /* "(N,)" for one element per sample, "(N, 3, 4)" otherwise. */
  int n = snprintf(shape, sizeof shape, "%" PRId64 "%s", rows,
                   v->row_ndim ? "" : ",");
  for (int d = 0; d < v->row_ndim; d++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, ", %" PRId64,
                  v->row_shape[d]);
  int dn = snprintf(dict, sizeof dict,
                    "{'descr': '%c%c%zu', 'fortran_order': False, "
                    "'shape': (%s), }",
                    elsize == 1 ? '|' : (p->big_endian ? '>' : '<'),
                    kind[v->dtype], elsize, shape);
  size_t prefix = p->npy_version == 1 ? 10 : 12;
  size_t total = (prefix + (size_t)dn + 1 + 63) / 64 * 64;
  size_t hlen = total - prefix;
  if (total > cap || (p->npy_version == 1 && hlen > 65535))
    return -1;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)p->npy_version;
  out[7] = 0;
  for (size_t b = 0; b < prefix - 8; b++)
    out[8 + b] = (unsigned char)(hlen >> (8 * b));
  memcpy(out + prefix, dict, (size_t)dn);
  memset(out + prefix + dn, ' ', total - prefix - (size_t)dn - 1);
  out[total - 1] = '\n';
  *len = total;
  return 0;
}

static void swap_bytes(unsigned char *buf, size_t n, size_t elsize) {
  for (size_t i = 0; i < n; i++, buf += elsize)
    for (size_t a = 0, b = elsize - 1; a < b; a++, b--) {
      unsigned char t = buf[a];
      buf[a] = buf[b];
      buf[b] = t;
    }
}

/* Write rows [first, first+count) of variable v to path, in blocks. */
static int write_npy(const tool_ctx *ctx, const gen_params *p, const gen_var *v,
                     const char *path, int64_t first, int64_t count) {
  unsigned char header[4096];
  size_t hlen = 0;
  if (npy_header(p, v, count, header, sizeof header, &hlen) != 0) {
    tool_rank_error(ctx, "%s: header too long for .npy version %d", path,
                    p->npy_version);
    return -1;
  }
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    tool_rank_error(ctx, "cannot create %s: %s", path, strerror(errno));
    return -1;
  }
  size_t elsize = ferry_dtype_size(v->dtype);
  int swap = elsize > 1 && p->big_endian == tool_host_little();
  int64_t block = v->row_bytes ? (int64_t)(GEN_BLOCK_BYTES / v->row_bytes) : 0;
  if (block < 1)
    block = 1;
  unsigned char *buf =
      v->row_bytes ? malloc((size_t)block * v->row_bytes) : NULL;
  int rc = 0;
  if (v->row_bytes && buf == NULL) {
    tool_rank_error(ctx,
                    "%s: out of memory: %zu bytes for a block of %lld rows",
                    path, (size_t)block * v->row_bytes, (long long)block);
    rc = -1;
  } else if (fwrite(header, 1, hlen, f) != hlen) {
    tool_rank_error(ctx, "cannot write %s: %s", path, strerror(errno));
    rc = -1;
  }
  for (int64_t r = 0; rc == 0 && v->row_bytes && r < count; r += block) {
    int64_t nrows = count - r < block ? count - r : block;
    size_t nbytes = (size_t)nrows * v->row_bytes;
    tool_fill_rows(v->dtype, first + r, nrows, v->row_elems, buf);
    if (swap)
      swap_bytes(buf, nbytes / elsize, elsize);
    if (fwrite(buf, 1, nbytes, f) != nbytes) {
      tool_rank_error(ctx, "cannot write %s at offset %zu: %s", path,
                      hlen + (size_t)r * v->row_bytes, strerror(errno));
      rc = -1;
    }
  }
  free(buf);
  if (fclose(f) != 0 && rc == 0) {
    tool_rank_error(ctx, "cannot close %s: %s", path, strerror(errno));
    rc = -1;
  }
  return rc;
}

/* ---- --format megatron ----------------------------------------------------
 */

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
  x += UINT64_C(0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

/* Sequence i's length: log-normal with mean mean_len and sigma (Box-Muller
 * on two draws of (seed, i)), at least 1, at most 2^31 - 1: a function of
 * the seed and i alone. */
static int64_t gen_len(const gen_params *p, int64_t i) {
  if (p->nlist)
    return p->list[i % p->nlist];
  double x = p->mean_len;
  if (p->sigma > 0) {
    uint64_t a = mix64(p->seed ^ mix64((uint64_t)i * 2)),
             b = mix64(p->seed ^ mix64((uint64_t)i * 2 + 1));
    double u1 = ((double)(a >> 11) + 0.5) / 9007199254740992.0,
           u2 = (double)(b >> 11) / 9007199254740992.0;
    double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
    x = exp(log(p->mean_len) - p->sigma * p->sigma / 2 + p->sigma * z);
  }
  x = floor(x + 0.5);
  return x < 1 ? 1 : x > 2147483647.0 ? 2147483647 : (int64_t)x;
}

static void put_le(unsigned char *b, uint64_t v, int n) {
  for (int k = 0; k < n; k++)
    b[k] = (unsigned char)(v >> (8 * k));
}

/* Megatron's DType code of d (backends/megatron.c reads them). */
static int megatron_code(ferry_dtype d) {
  switch (d) {
  case FERRY_UINT8: return 1;
  case FERRY_INT8: return 2;
  case FERRY_INT16: return 3;
  case FERRY_INT32: return 4;
  case FERRY_INT64: return 5;
  case FERRY_FLOAT64: return 6;
  case FERRY_FLOAT32: return 7;
  case FERRY_UINT16: return 8;
  default: return 0;
  }
}

/* Rank 0: DIR/corpus.bin, then DIR/corpus.idx (lengths drawn again). */
static int write_megatron(const tool_ctx *ctx, const gen_params *p,
                          double *bytes) {
  const gen_var *v = &p->vars[0];
  size_t el = ferry_dtype_size(v->dtype);
  char path[4096];
  unsigned char *buf = malloc(GEN_BLOCK_BYTES + 64);
  if (!buf) {
    tool_error(ctx, "out of memory (%zu bytes)", GEN_BLOCK_BYTES);
    return -1;
  }
  int64_t cap = (int64_t)(GEN_BLOCK_BYTES / el), total = 0;
  snprintf(path, sizeof path, "%s/corpus.bin", ctx->target);
  FILE *f = fopen(path, "wb");
  int rc = f ? 0 : -1;
  size_t at = 0;
  for (int64_t i = 0; rc == 0 && i < p->samples; i++) {
    int64_t len = gen_len(p, i);
    for (int64_t k = 0; rc == 0 && k < len;) {
      int64_t n = len - k < cap - (int64_t)(at / el) ? len - k
                                                     : cap - (int64_t)(at / el);
      tool_fill_rows(v->dtype, i + k, 1, n, buf + at); /* (i + k) mod M */
      at += (size_t)n * el;
      k += n;
      if (at == (size_t)cap * el) {
        rc = fwrite(buf, 1, at, f) == at ? 0 : -1;
        at = 0;
      }
    }
    total += len;
  }
  if (rc == 0 && at)
    rc = fwrite(buf, 1, at, f) == at ? 0 : -1;
  if (f && fclose(f) != 0)
    rc = -1;
  if (rc == 0) { /* the index: header, lengths, pointers, documents */
    snprintf(path, sizeof path, "%s/corpus.idx", ctx->target);
    f = fopen(path, "wb");
    rc = f ? 0 : -1;
    unsigned char h[34];
    memcpy(h, "MMIDIDX\0\0", 9);
    put_le(h + 9, 1, 8);
    h[17] = (unsigned char)megatron_code(v->dtype);
    put_le(h + 18, (uint64_t)p->samples, 8);
    put_le(h + 26, (uint64_t)p->samples + 1, 8);
    rc = rc == 0 && fwrite(h, 1, sizeof h, f) == sizeof h ? 0 : -1;
    for (int pass = 0; rc == 0 && pass < 3; pass++) {
      int w = pass == 0 ? 4 : 8;
      int64_t ptr = 0, n = pass == 2 ? p->samples + 1 : p->samples;
      at = 0;
      for (int64_t i = 0; rc == 0 && i < n; i++) {
        int64_t len = pass < 2 ? gen_len(p, i) : 0;
        uint64_t x = pass == 0   ? (uint64_t)len
                     : pass == 1 ? (uint64_t)ptr
                                 : (uint64_t)i;
        ptr += len * (int64_t)el;
        put_le(buf + at, x, w);
        at += (size_t)w;
        if (at + 8 > GEN_BLOCK_BYTES) {
          rc = fwrite(buf, 1, at, f) == at ? 0 : -1;
          at = 0;
        }
      }
      if (rc == 0 && at)
        rc = fwrite(buf, 1, at, f) == at ? 0 : -1;
    }
    if (f && fclose(f) != 0)
      rc = -1;
  }
  if (rc != 0)
    tool_error(ctx, "cannot write %s: %s", path, strerror(errno));
  free(buf);
  *bytes = (double)total * (double)el;
  return rc;
}

static int write_marker(const tool_ctx *ctx, const gen_params *p) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/FERRY_GEN.tmp", ctx->target);
  snprintf(path, sizeof path, "%s/FERRY_GEN", ctx->target);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) {
    tool_error(ctx, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  fprintf(f, "{\n  \"generator\": \"ferry gen\",\n  \"version\": \"%s\",\n",
          ferry_version());
  fprintf(f, "  \"samples\": %" PRId64 ",\n  \"parts\": %" PRId64 ",\n",
          p->samples, p->parts);
  fprintf(f, "  \"npy_version\": %d,\n  \"byte_order\": \"%s\",\n",
          p->npy_version, p->big_endian ? "big" : "little");
  if (p->megatron && p->nlist) {
    fprintf(f, "  \"format\": \"megatron\",\n  \"files\": [\"corpus.bin\", "
               "\"corpus.idx\"],\n  \"lengths\": \"cycled:");
    for (int i = 0; i < p->nlist; i++)
      fprintf(f, "%s%lld", i ? "," : " ", (long long)p->list[i]);
    fprintf(f, "\",\n");
  } else if (p->megatron)
    fprintf(f,
            "  \"format\": \"megatron\",\n  \"files\": [\"corpus.bin\", "
            "\"corpus.idx\"],\n  \"lengths\": \"log-normal, mean %g, "
            "sigma %g, seed %llu\",\n",
            p->mean_len, p->sigma, (unsigned long long)p->seed);
  fprintf(f, "  \"encoding\": \"element k of row i = (i + k) mod M(dtype)\",\n"
             "  \"vars\": [");
  for (int i = 0; i < p->nvars; i++) {
    const gen_var *v = &p->vars[i];
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    tool_json_string(f, v->name);
    fprintf(f, ", \"dtype\": \"%s\", \"shape\": [", ferry_dtype_name(v->dtype));
    for (int d = 0; d < v->row_ndim; d++)
      fprintf(f, "%s%" PRId64, d ? ", " : "", v->row_shape[d]);
    fprintf(f, "], \"row_bytes\": %zu}", v->row_bytes);
  }
  fprintf(f, "\n  ]\n}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    tool_error(ctx, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* --anndata: rank 0 writes the file; every rank returns the same. */
static int run_gen_anndata(const tool_ctx *ctx, const adgen_params *ad) {
  double t0 = MPI_Wtime(), bytes = 0;
  int ok = ctx->rank == 0 ? adgen_write(ctx, ctx->target, ad, &bytes) == 0 : 1;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok)
    return TOOL_EXIT_ERROR;
  double secs = MPI_Wtime() - t0;
  if (ctx->rank == 0) {
    char b1[32], b2[32];
    printf("ferry gen: wrote %" PRId64 " cells x %" PRId64
           " genes, an AnnData file (CSR X of %s, density about %.3g, "
           "seed %" PRIu64 ", %d categories), %s, to %s in %.2f s (%s/s)\n",
           ad->cells, ad->genes, ferry_dtype_name(ad->dtype),
           2.0 / (double)(ad->span + 1), ad->seed, ad->categories,
           tool_fmt_bytes(bytes, b1, sizeof b1), ctx->target, secs,
           tool_fmt_bytes(secs > 0 ? bytes / secs : 0, b2, sizeof b2));
    fflush(stdout);
  }
  return TOOL_EXIT_OK;
}

static int run_gen(tool_ctx *ctx) {
  gen_params p;
  int st = parse_gen(ctx, &p);
  if (st != TOOL_CONTINUE)
    return st;

  if (p.anndata)
    return run_gen_anndata(ctx, &p.ad);
  double t0 = MPI_Wtime();
  int ok = ctx->rank == 0 ? prepare_dir(ctx, &p) == 0 : 1;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok)
    return TOOL_EXIT_ERROR;

  /* Part k holds samples [k*base + min(k, rem), ...): contiguous shares that
   * differ by at most one sample. */
  int64_t base = p.samples / p.parts, rem = p.samples % p.parts;
  double mbytes = 0;
  if (p.megatron && ctx->rank == 0)
    ok = write_megatron(ctx, &p, &mbytes) == 0;
  for (int64_t k = ctx->rank; ok && !p.megatron && k < p.parts;
       k += ctx->size) {
    int64_t first = k * base + (k < rem ? k : rem);
    int64_t count = base + (k < rem ? 1 : 0);
    for (int i = 0; ok && i < p.nvars; i++) {
      char path[4096];
      if (p.parts > 1)
        snprintf(path, sizeof path, "%s/part-%05" PRId64 "/%s.npy", ctx->target,
                 k, p.vars[i].name);
      else
        snprintf(path, sizeof path, "%s/%s.npy", ctx->target, p.vars[i].name);
      ok = write_npy(ctx, &p, &p.vars[i], path, first, count) == 0;
    }
  }
  if (!tool_all(ok)) {
    tool_error(ctx, "writing %s failed (see above)", ctx->target);
    return TOOL_EXIT_ERROR;
  }
  ok = ctx->rank == 0 ? write_marker(ctx, &p) == 0 : 1;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok)
    return TOOL_EXIT_ERROR;

  double secs = MPI_Wtime() - t0;
  if (ctx->rank == 0) {
    double bytes = mbytes;
    for (int i = 0; !p.megatron && i < p.nvars; i++)
      bytes += (double)p.vars[i].row_bytes * (double)p.samples;
    char b1[32], b2[32];
    if (p.megatron) {
      char how[96];
      if (p.nlist)
        snprintf(how, sizeof how, "%d lengths cycled", p.nlist);
      else
        snprintf(how, sizeof how, "log-normal, mean %g, sigma %g, seed %llu",
                 p.mean_len, p.sigma, (unsigned long long)p.seed);
      printf("ferry gen: wrote %" PRId64 " sequences of %s tokens (%s, "
             "lengths %s), a Megatron-LM indexed dataset, to %s/corpus.bin "
             "and .idx in %.2f s (%s/s)\n",
             p.samples, ferry_dtype_name(p.vars[0].dtype),
             tool_fmt_bytes(bytes, b1, sizeof b1), how, ctx->target, secs,
             tool_fmt_bytes(secs > 0 ? bytes / secs : 0, b2, sizeof b2));
      fflush(stdout);
      return TOOL_EXIT_OK;
    }
    printf("ferry gen: wrote %" PRId64 " samples, %s, %" PRId64
           " part%s, .npy v%d %s-endian, to %s in %.2f s (%s/s)\n",
           p.samples, tool_fmt_bytes(bytes, b1, sizeof b1), p.parts,
           p.parts == 1 ? "" : "s", p.npy_version,
           p.big_endian ? "big" : "little", ctx->target, secs,
           tool_fmt_bytes(secs > 0 ? bytes / secs : 0, b2, sizeof b2));
    for (int i = 0; i < p.nvars; i++) {
      const gen_var *v = &p.vars[i];
      printf("  %-16s %-8s (%" PRId64, v->name, ferry_dtype_name(v->dtype),
             p.samples);
      for (int d = 0; d < v->row_ndim; d++)
        printf(", %" PRId64, v->row_shape[d]);
      printf("%s)  %zu bytes/row\n", v->row_ndim ? "" : ",", v->row_bytes);
    }
    if (p.parts > 1)
      printf("  open it as '%s/part-*'\n", ctx->target);
    fflush(stdout);
  }
  return TOOL_EXIT_OK;
}
