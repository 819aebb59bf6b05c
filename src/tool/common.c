/*
 * common.c - the pieces every `ferry` subcommand shares: turning the
 * library's option table into a getopt_long table, building the loader
 * options in the order of precedence (defaults < --config FILE < FERRY_*
 * environment < command line), printing errors once (rank 0) with the exit
 * statuses of ferry(1), parsing numbers and sizes, gathering per-rank records
 * on rank 0, and the value encoding of synthetic datasets that `gen` writes
 * and `verify` checks.
 */
#include "tool.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* getopt ids: loader option i is TOOL_ID_LOADER + i; a command's own option
 * with index j is TOOL_ID_CMD + j.  Both above any character getopt uses. */
enum {
  TOOL_ID_HELP = 'h',
  TOOL_ID_CONFIG = 0x1000,
  TOOL_ID_LOADER = 0x2000,
  TOOL_ID_CMD = 0x4000
};

/* ---- Messages ----------------------------------------------------------- */

static void vmessage(const tool_ctx *ctx, int with_rank, const char *fmt,
                     va_list ap) {
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (with_rank)
    fprintf(stderr, "ferry: %s: rank %d: %s\n",
            ctx->cmd ? ctx->cmd->name : "main", ctx->rank, msg);
  else if (ctx->cmd)
    fprintf(stderr, "ferry: %s: %s\n", ctx->cmd->name, msg);
  else
    fprintf(stderr, "ferry: %s\n", msg);
  fflush(stderr);
}

void tool_error(const tool_ctx *ctx, const char *fmt, ...) {
  if (ctx->rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vmessage(ctx, 0, fmt, ap);
  va_end(ap);
}

void tool_rank_error(const tool_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(ctx, 1, fmt, ap);
  va_end(ap);
}

int tool_usage_error(const tool_ctx *ctx, const char *fmt, ...) {
  if (ctx->rank == 0) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(ctx, 0, fmt, ap);
    va_end(ap);
    if (ctx->cmd)
      fprintf(stderr, "Try 'ferry %s --help'.\n", ctx->cmd->name);
    else
      fprintf(stderr, "Try 'ferry --help'.\n");
  }
  return TOOL_EXIT_USAGE;
}

/* Set when a library call said FERRY_EPEER: a rank is gone or stuck, so
 * main() must not wait for it in its last collective. */
static int peer_lost;

int tool_peer_lost(void) { return peer_lost; }

int tool_lib_error(const tool_ctx *ctx, const ferry_loader *loader, int rc) {
  const char *msg = ferry_last_error(loader);
  if (msg == NULL || msg[0] == '\0')
    msg = ferry_strerror(rc);
  tool_error(ctx, "%s", msg);
  if (rc == FERRY_EPEER) {
    /* main() aborts the job: rank 0 may be the rank gone, or be killed
     * by another rank's abort before it prints, so every rank says it */
    if (ctx->rank != 0) { /* the message names its rank already */
      fprintf(stderr, "ferry: %s: %s\n", ctx->cmd ? ctx->cmd->name : "main",
              msg);
      fflush(stderr);
    }
    peer_lost = 1;
  }
  return TOOL_EXIT_ERROR;
}

void tool_local_fatal(const tool_ctx *ctx, const ferry_loader *loader,
                      const char *what, int rc) {
  const char *msg = ferry_last_error(loader);
  if (msg == NULL || msg[0] == '\0')
    msg = ferry_strerror(rc);
  tool_rank_fatal(ctx, "%s: %s", what, msg);
}

void tool_rank_fatal(const tool_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(ctx, 1, fmt, ap);
  va_end(ap);
  MPI_Abort(MPI_COMM_WORLD, TOOL_EXIT_ERROR);
  exit(TOOL_EXIT_ERROR); /* MPI_Abort does not return */
}

void tool_oom(const tool_ctx *ctx, size_t bytes, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  tool_rank_fatal(ctx, "out of memory: %zu bytes for %s", bytes, what);
}

int tool_all(int ok) {
  int in = ok ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return out;
}

int tool_save_manifest(const tool_ctx *ctx, const ferry_loader *L,
                       const char *path) {
  int rc = ctx->rank == 0 ? ferry_manifest_save(L, path) : 0;
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc != 0 ? tool_lib_error(ctx, L, rc) : 0;
}

int tool_open(tool_ctx *ctx, ferry_loader **out) {
  int rc = ferry_open(MPI_COMM_WORLD, ctx->target, ctx->opts, out);
  if (rc != 0)
    return tool_lib_error(ctx, NULL, rc);
  return 0;
}

int tool_memory_check(const tool_ctx *ctx, ferry_loader *L, const char *what,
                      double per_sample, double per_share, uint64_t limit) {
  double n = (double)ferry_num_samples(L), P = ctx->size > 0 ? ctx->size : 1;
  /* the epoch's samples with max_chunks/fraction: at most the kept chunks
   * of chunk_samples each (the bound the advice below relies on) */
  char buf[64];
  double kept = (double)ferry_num_chunks(L), frac = 1;
  int64_t maxc = 0;
  if (tool_parse_i64(tool_option(ctx, "max_chunks", buf, sizeof buf), 1,
                     INT64_MAX, &maxc) == 0 &&
      (double)maxc < kept)
    kept = (double)maxc;
  if (tool_parse_double(tool_option(ctx, "fraction", buf, sizeof buf), &frac) ==
          0 &&
      frac < 1 && ceil(frac * (double)ferry_num_chunks(L)) < kept)
    kept = ceil(frac * (double)ferry_num_chunks(L));
  double cs = (double)ferry_chunk_samples(L, NULL);
  if (cs > 0 && kept * cs < n)
    n = kept * cs;
  double need = n * per_sample + ceil(n / P) * per_share;
  if (need <= (double)limit)
    return 0;
  char a[32], b[32];
  tool_error(ctx,
             "%s %s needs about %s on rank 0 for up to %.0f samples (%s), more "
             "than --max-memory %s: check a subset (--max-chunks N, "
             "--fraction F) or raise --max-memory",
             ctx->cmd->name, ctx->target, tool_fmt_bytes(need, a, sizeof a), n,
             what, tool_fmt_bytes((double)limit, b, sizeof b));
  return TOOL_EXIT_ERROR;
}

int tool_max_memory_arg(const tool_ctx *ctx, const char *value, uint64_t *out) {
  if (tool_parse_size(value, out) != 0)
    return tool_usage_error(ctx,
                            "bad value '%s' for --max-memory: expected a "
                            "size (4GiB, 512M, 1e9)",
                            value);
  return 0;
}

int tool_host_batches(tool_ctx *ctx) {
  char dev[64];
  if (strstr(ferry_features(), "cuda") == NULL)
    return TOOL_CONTINUE;
  tool_option(ctx, "device", dev, sizeof dev);
  if (strcmp(dev, "cuda") == 0)
    return tool_usage_error(ctx,
                            "%s reads the batches on the host: it needs "
                            "--device cpu (or auto)",
                            ctx->cmd->name);
  if (strcmp(dev, "auto") == 0 &&
      ferry_options_set(ctx->opts, "device", "cpu") != 0)
    return tool_usage_error(ctx, "%s", ferry_last_error(NULL));
  return TOOL_CONTINUE;
}

const char *tool_option(const tool_ctx *ctx, const char *name, char *buf,
                        size_t len) {
  if (ctx->opts == NULL || ferry_options_get(ctx->opts, name, buf, len) != 0)
    snprintf(buf, len, "?");
  return buf;
}

/* ---- Numbers ------------------------------------------------------------ */

int tool_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
    return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max)
    return -1;
  *out = (int64_t)v;
  return 0;
}

int tool_parse_double(const char *s, double *out) {
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
    return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
    return -1;
  *out = v;
  return 0;
}

int tool_parse_size(const char *s, uint64_t *out) {
  if (s == NULL || !isdigit((unsigned char)*s))
    return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || !isfinite(v) || v < 0)
    return -1;
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {
      {"", 1.0},
      {"B", 1.0},
      {"K", 1024.0},
      {"KiB", 1024.0},
      {"KB", 1e3},
      {"M", 1048576.0},
      {"MiB", 1048576.0},
      {"MB", 1e6},
      {"G", 1073741824.0},
      {"GiB", 1073741824.0},
      {"GB", 1e9},
      {"T", 1099511627776.0},
      {"TiB", 1099511627776.0},
      {"TB", 1e12},
  };
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix) != 0)
      continue;
    double bytes = v * units[i].scale;
    if (bytes >= 9.2e18)
      return -1;
    *out = (uint64_t)(bytes + 0.5);
    return 0;
  }
  return -1;
}

const char *tool_fmt_bytes(double bytes, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, len, "%.0f B", bytes);
  else
    snprintf(buf, len, "%.1f %s", bytes, unit[u]);
  return buf;
}

/* ---- Help --------------------------------------------------------------- */

static void print_wrapped(FILE *f, const char *indent, const char *text) {
  /* Greedy wrap at 79 columns; the texts are plain sentences. */
  size_t width = 79 - strlen(indent), col = 0;
  const char *p = text;
  fputs(indent, f);
  while (*p) {
    while (*p == ' ')
      p++;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    size_t n = (size_t)(p - w);
    if (n == 0)
      break;
    if (col > 0 && col + 1 + n > width) {
      fprintf(f, "\n%s", indent);
      col = 0;
    }
    if (col > 0) {
      fputc(' ', f);
      col++;
    }
    fwrite(w, 1, n, f);
    col += n;
  }
  fputc('\n', f);
}

static void dashed(const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s", name);
  for (char *c = buf; *c; c++)
    if (*c == '_')
      *c = '-';
}

void tool_print_loader_options(FILE *f) {
  const ferry_option_info *info;
  for (int i = 0; (info = ferry_option_info_get(i)) != NULL; i++) {
    char name[128], text[1024];
    dashed(info->name, name, sizeof name);
    fprintf(f, "  --%s VALUE\n", name);
    snprintf(text, sizeof text, "%s Default: %s. Values: %s.", info->help,
             info->default_value[0] ? info->default_value : "(empty)",
             info->values);
    print_wrapped(f, "      ", text);
  }
}

void tool_print_cmd_help(const tool_ctx *ctx, const tool_cmd *cmd) {
  if (ctx->rank != 0)
    return;
  FILE *f = stdout;
  fprintf(f, "Usage: ferry %s %s\n\n", cmd->name, cmd->args);
  print_wrapped(f, "", cmd->description);
  fprintf(f, "\nOptions:\n");
  for (const tool_opt *o = cmd->opts; o && o->name; o++) {
    char head[128];
    snprintf(head, sizeof head, "--%s%s%s", o->name, o->has_arg ? " " : "",
             o->has_arg ? o->metavar : "");
    fprintf(f, "  %s\n", head);
    print_wrapped(f, "      ", o->help);
  }
  fprintf(f, "  -h, --help\n      Show this help and exit.\n");
  if (cmd->loader_options) {
    fprintf(f, "\nLoader options (precedence: defaults < --config FILE < "
               "FERRY_* environment < command line):\n");
    fprintf(f, "  --config FILE\n");
    print_wrapped(f, "      ",
                  "Read loader options from FILE: one 'name = value' per "
                  "line, '#' starts a comment.");
    tool_print_loader_options(f);
  }
  fflush(f);
}

/* ---- Parsing ------------------------------------------------------------ */

typedef struct loader_setting {
  int index;         /* in the library's option table */
  const char *value; /* points into argv */
} loader_setting;

/* The argv element naming the option getopt_long just returned: with a
 * separate value the option is one element before it. */
static const char *option_token(char **argv, int optind_now) {
  if (optarg != NULL && optind_now >= 2 && argv[optind_now - 1] == optarg)
    return argv[optind_now - 2];
  return argv[optind_now - 1];
}

/* The name part of "--name" or "--name=value" into buf. */
static void token_name(const char *tok, char *buf, size_t len) {
  const char *s = tok + 2;
  size_t n = strcspn(s, "=");
  if (n >= len)
    n = len - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
}

/* Unknown or abbreviated option: name it, and suggest a full name when it
 * is the prefix of exactly one.  Abbreviations are refused so that a name
 * means the same thing on every command and in every release. */
static int unknown_option(const tool_ctx *ctx, const struct option *lo,
                          const char *tok) {
  if (strncmp(tok, "--", 2) != 0)
    return tool_usage_error(ctx, "unknown option '%s'", tok);
  char name[256];
  token_name(tok, name, sizeof name);
  const struct option *match = NULL;
  int nmatch = 0;
  for (const struct option *o = lo; o->name; o++) {
    if (strcmp(o->name, name) == 0) {
      if (strchr(tok, '=') && o->has_arg == no_argument)
        return tool_usage_error(ctx, "option '--%s' takes no value", name);
      if (o->has_arg == required_argument)
        return tool_usage_error(ctx, "option '--%s' needs a value", name);
    }
    if (name[0] && strncmp(o->name, name, strlen(name)) == 0) {
      match = o;
      nmatch++;
    }
  }
  if (nmatch == 1)
    return tool_usage_error(ctx, "unknown option '--%s' (did you mean '--%s'?)",
                            name, match->name);
  return tool_usage_error(ctx, "unknown option '--%s'", name);
}

/* A failure that may be this rank's alone (out of memory): said by every
 * rank it happened on, with its rank; others as tool_lib_error (rank 0). */
static int options_error(const tool_ctx *ctx, int rc) {
  if (rc != FERRY_ENOMEM || ctx->size < 2)
    return tool_lib_error(ctx, NULL, rc);
  const char *msg = ferry_last_error(NULL);
  fprintf(stderr, "ferry: %s: rank %d: %s\n",
          ctx->cmd ? ctx->cmd->name : "main", ctx->rank,
          msg && msg[0] ? msg : ferry_strerror(rc));
  fflush(stderr);
  return TOOL_EXIT_ERROR;
}

static int build_options(tool_ctx *ctx, const char *config,
                         const loader_setting *set, int nset) {
  int rc = ferry_options_create(&ctx->opts);
  if (rc != 0)
    return options_error(ctx, rc);
  if (config != NULL && (rc = ferry_options_load(ctx->opts, config)) != 0)
    return options_error(ctx, rc);
  if ((rc = ferry_options_from_env(ctx->opts)) != 0)
    return options_error(ctx, rc);
  for (int i = 0; i < nset; i++) {
    const ferry_option_info *info = ferry_option_info_get(set[i].index);
    rc = ferry_options_set(ctx->opts, info->name, set[i].value);
    if (rc != 0) {
      const char *msg = ferry_last_error(NULL);
      char name[128];
      dashed(info->name, name, sizeof name);
      if (msg == NULL || msg[0] == '\0')
        return tool_usage_error(ctx, "bad value '%s' for --%s", set[i].value,
                                name);
      return tool_usage_error(ctx, "%s", msg);
    }
  }
  return TOOL_CONTINUE;
}

/* The getopt_long table lo (nloader + ncmd + 3 entries): the loader
 * options (names[i] keeps option i's dashed name), --config, the command's
 * own options, --help, the end.  Returns TOOL_CONTINUE, or TOOL_EXIT_ERROR
 * when out of memory. */
static int option_table(const tool_ctx *ctx, const tool_cmd *cmd, int nloader,
                        int ncmd, struct option *lo, char **names) {
  int n = 0;
  for (int i = 0; i < nloader; i++) {
    char buf[128];
    dashed(ferry_option_info_get(i)->name, buf, sizeof buf);
    if ((names[i] = strdup(buf)) == NULL) {
      tool_error(ctx, "out of memory: %zu bytes for option --%s",
                 strlen(buf) + 1, buf);
      return TOOL_EXIT_ERROR;
    }
    lo[n++] =
        (struct option){names[i], required_argument, NULL, TOOL_ID_LOADER + i};
  }
  if (cmd->loader_options)
    lo[n++] =
        (struct option){"config", required_argument, NULL, TOOL_ID_CONFIG};
  for (int j = 0; j < ncmd; j++)
    lo[n++] =
        (struct option){cmd->opts[j].name,
                        cmd->opts[j].has_arg ? required_argument : no_argument,
                        NULL, TOOL_ID_CMD + j};
  lo[n++] = (struct option){"help", no_argument, NULL, TOOL_ID_HELP};
  lo[n] = (struct option){NULL, 0, NULL, 0};
  return TOOL_CONTINUE;
}

/* What getopt_long found besides the command's own options. */
typedef struct scanned {
  loader_setting *set; /* [argc + 1] loader options, in order */
  int nset;
  const char *config; /* --config FILE */
  int help;           /* --help */
} scanned;

/* The options of argv by the table lo: loader settings and --config into
 * sc, the command's own options onto ctx->args.  Returns TOOL_CONTINUE or
 * TOOL_EXIT_USAGE after a message. */
static int scan_options(tool_ctx *ctx, const tool_cmd *cmd, int argc,
                        char **argv, const struct option *lo, int nloader,
                        int ncmd, scanned *sc) {
  opterr = 0; /* we name bad options ourselves, once, on rank 0 */
  optind = 1;
  int c, longindex;
  while ((longindex = -1, c = getopt_long(argc, argv, ":h", lo, &longindex)) !=
         -1) {
    if (c == '?') {
      const char *tok = argv[optind - 1];
      if (optopt > 0 && optopt < 128 && strncmp(tok, "--", 2) != 0)
        return tool_usage_error(ctx, "unknown option '-%c'", optopt);
      return unknown_option(ctx, lo, tok);
    }
    if (c == ':') {
      const char *tok = argv[optind - 1];
      if (strncmp(tok, "--", 2) == 0) {
        char name[256];
        token_name(tok, name, sizeof name);
        return tool_usage_error(ctx, "option '--%s' needs a value", name);
      }
      return tool_usage_error(ctx, "option '-%c' needs a value", optopt);
    }
    if (longindex >= 0) {
      char name[256];
      const char *tok = option_token(argv, optind);
      token_name(tok, name, sizeof name);
      if (strcmp(name, lo[longindex].name) != 0)
        return unknown_option(ctx, lo, tok);
    }
    if (c == TOOL_ID_HELP) {
      sc->help = 1;
    } else if (c == TOOL_ID_CONFIG) {
      sc->config = optarg;
    } else if (c >= TOOL_ID_LOADER && c < TOOL_ID_LOADER + nloader) {
      sc->set[sc->nset++] = (loader_setting){c - TOOL_ID_LOADER, optarg};
    } else if (c >= TOOL_ID_CMD && c < TOOL_ID_CMD + ncmd) {
      ctx->args[ctx->nargs++] =
          (tool_arg){cmd->opts[c - TOOL_ID_CMD].id, optarg};
    }
  }
  return TOOL_CONTINUE;
}

int tool_parse(tool_ctx *ctx, const tool_cmd *cmd, int argc, char **argv) {
  int nloader = 0, ncmd = 0;
  ctx->cmd = cmd;
  if (cmd->loader_options)
    while (ferry_option_info_get(nloader) != NULL)
      nloader++;
  while (cmd->opts && cmd->opts[ncmd].name)
    ncmd++;

  int ntab = nloader + ncmd + 3, status = TOOL_CONTINUE;
  struct option *lo = calloc((size_t)ntab, sizeof *lo);
  char **names = calloc((size_t)nloader + 1, sizeof *names);
  scanned sc = {calloc((size_t)argc + 1, sizeof *sc.set), 0, NULL, 0};
  ctx->args = calloc((size_t)argc + 1, sizeof *ctx->args);
  if (!lo || !names || !sc.set || !ctx->args) {
    tool_error(ctx, "out of memory: %zu bytes for the table of %d options",
               (size_t)ntab * sizeof *lo +
                   ((size_t)nloader + 1) * sizeof *names +
                   ((size_t)argc + 1) * (sizeof *sc.set + sizeof *ctx->args),
               ntab);
    status = TOOL_EXIT_ERROR;
    goto cleanup;
  }
  if ((status = option_table(ctx, cmd, nloader, ncmd, lo, names)) !=
          TOOL_CONTINUE ||
      (status = scan_options(ctx, cmd, argc, argv, lo, nloader, ncmd, &sc)) !=
          TOOL_CONTINUE)
    goto cleanup;
  if (sc.help) {
    tool_print_cmd_help(ctx, cmd);
    status = TOOL_EXIT_OK;
    goto cleanup;
  }
  if (optind >= argc) {
    status =
        tool_usage_error(ctx, "missing %s",
                         strncmp(cmd->args, "DIR", 3) == 0 ? "DIR" : "DATASET");
    goto cleanup;
  }
  if (optind + 1 < argc) {
    status =
        tool_usage_error(ctx, "unexpected argument '%s'", argv[optind + 1]);
    goto cleanup;
  }
  ctx->target = argv[optind];
  if (cmd->loader_options)
    status = build_options(ctx, sc.config, sc.set, sc.nset);

cleanup:
  for (int i = 0; names && i < nloader; i++)
    free(names[i]);
  free(names);
  free(lo);
  free(sc.set);
  return status;
}

void tool_ctx_free(tool_ctx *ctx) {
  ferry_options_free(ctx->opts);
  ctx->opts = NULL;
  free(ctx->args);
  ctx->args = NULL;
  ctx->nargs = 0;
}

/* ---- Gathering ---------------------------------------------------------- */

int64_t tool_gather_i64(const int64_t *send, int64_t n, int64_t **all,
                        int64_t **counts) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t total = 0;
  MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (all)
    *all = NULL;
  if (counts)
    *counts = NULL;
  if (total > INT_MAX) /* one MPI_Gatherv counts in int */
    return -1;
  int mine = (int)n, ok = 1;
  int *rc = NULL, *displ = NULL;
  int64_t *buf = NULL, *cnt = NULL;
  if (rank == 0) {
    rc = malloc((size_t)size * sizeof *rc);
    displ = malloc((size_t)size * sizeof *displ);
    buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *buf);
    cnt = malloc((size_t)size * sizeof *cnt);
    ok = rc && displ && buf && cnt;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    free(rc);
    free(displ);
    free(buf);
    free(cnt);
    return -1;
  }
  MPI_Gather(&mine, 1, MPI_INT, rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int d = 0;
    for (int r = 0; r < size; r++) {
      displ[r] = d;
      d += rc[r];
      cnt[r] = rc[r];
    }
  }
  MPI_Gatherv(send, mine, MPI_INT64_T, buf, rc, displ, MPI_INT64_T, 0,
              MPI_COMM_WORLD);
  free(rc);
  free(displ);
  if (rank == 0) {
    if (all)
      *all = buf;
    else
      free(buf);
    if (counts)
      *counts = cnt;
    else
      free(cnt);
  }
  return total;
}

/* ---- The synthetic encoding --------------------------------------------- */

uint16_t tool_half_from_int(uint32_t n) {
  /* Exact for n < 2048: at most 11 significant bits fit the 10-bit mantissa
   * plus the implicit one. */
  if (n == 0)
    return 0;
  int e = 31 - __builtin_clz(n);
  uint32_t mant = (n << (10 - e)) & 0x3ffu;
  return (uint16_t)(((uint32_t)(e + 15) << 10) | mant);
}

/* 2^x for the small x a half needs, without libm. */
static double pow2(int x) {
  double v = 1.0;
  for (; x > 0; x--)
    v *= 2.0;
  for (; x < 0; x++)
    v *= 0.5;
  return v;
}

double tool_bfloat16_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

double tool_half_to_double(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0)
    v = (double)m * pow2(-24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = (double)(m + 1024) * pow2(e - 25);
  return sign ? -v : v;
}

#define FILL(T, expr)                                                          \
  do {                                                                         \
    T *out = (T *)buf; /* NOLINT(bugprone-macro-parentheses): T is a type */   \
    for (int64_t r = 0; r < nrows; r++)                                        \
      for (int64_t k = 0; k < row_elems; k++) {                                \
        uint64_t v = (uint64_t)(first + r) + (uint64_t)k;                      \
        *out++ = (expr);                                                       \
      }                                                                        \
  } while (0)

void tool_fill_rows(ferry_dtype dtype, int64_t first, int64_t nrows,
                    int64_t row_elems, void *buf) {
  switch (dtype) {
  case FERRY_BOOL: FILL(uint8_t, (uint8_t)(v & 1u)); break;
  case FERRY_INT8: FILL(int8_t, (int8_t)(v & 0x7fu)); break;
  case FERRY_UINT8: FILL(uint8_t, (uint8_t)(v & 0xffu)); break;
  case FERRY_INT16: FILL(int16_t, (int16_t)(v & 0x7fffu)); break;
  case FERRY_UINT16: FILL(uint16_t, (uint16_t)(v & 0xffffu)); break;
  case FERRY_INT32: FILL(int32_t, (int32_t)(v & 0x7fffffffu)); break;
  case FERRY_UINT32: FILL(uint32_t, (uint32_t)(v & 0xffffffffu)); break;
  case FERRY_INT64:
    FILL(int64_t, (int64_t)(v & ((UINT64_C(1) << 62) - 1)));
    break;
  case FERRY_UINT64: FILL(uint64_t, v & ((UINT64_C(1) << 62) - 1)); break;
  case FERRY_FLOAT16:
    FILL(uint16_t, tool_half_from_int((uint32_t)(v & 0x7ffu)));
    break;
  case FERRY_FLOAT32: FILL(float, (float)(v & 0xffffffu)); break;
  case FERRY_FLOAT64:
    FILL(double, (double)(v & ((UINT64_C(1) << 53) - 1)));
    break;
  default: break;
  }
}

double tool_value_as_double(ferry_dtype t, const void *elem) {
  const unsigned char *p = elem;
  switch (t) {
  case FERRY_INT8: return (double)*(const int8_t *)p;
  case FERRY_UINT8: return (double)*p;
  case FERRY_BOOL: return (double)(*p != 0);
  case FERRY_INT16: {
    int16_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_UINT16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_INT32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_UINT32: {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_INT64: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_UINT64: {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_FLOAT16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return tool_half_to_double(v);
  }
  case FERRY_FLOAT32: {
    float v;
    memcpy(&v, p, sizeof v);
    return (double)v;
  }
  case FERRY_FLOAT64: {
    double v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  case FERRY_BFLOAT16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return tool_bfloat16_to_double(v);
  }
  default: return NAN;
  }
}

void tool_format_value(ferry_dtype dtype, const void *elem, char *buf,
                       size_t len) {
  switch (dtype) {
  case FERRY_BOOL: {
    uint8_t v;
    memcpy(&v, elem, 1);
    snprintf(buf, len, "%d", v != 0);
    break;
  }
#define INT_CASE(D, T, F)                                                      \
  case D: {                                                                    \
    T v;                                                                       \
    memcpy(&v, elem, sizeof v);                                                \
    snprintf(buf, len, "%" F, v);                                              \
    break;                                                                     \
  }
    INT_CASE(FERRY_INT8, int8_t, PRId8)
    INT_CASE(FERRY_INT16, int16_t, PRId16)
    INT_CASE(FERRY_INT32, int32_t, PRId32)
    INT_CASE(FERRY_INT64, int64_t, PRId64)
    INT_CASE(FERRY_UINT8, uint8_t, PRIu8)
    INT_CASE(FERRY_UINT16, uint16_t, PRIu16)
    INT_CASE(FERRY_UINT32, uint32_t, PRIu32)
    INT_CASE(FERRY_UINT64, uint64_t, PRIu64)
#undef INT_CASE
  case FERRY_FLOAT16: {
    uint16_t h;
    memcpy(&h, elem, 2);
    snprintf(buf, len, "%.17g", tool_half_to_double(h));
    break;
  }
  case FERRY_FLOAT32: {
    float v;
    memcpy(&v, elem, 4);
    snprintf(buf, len, "%.17g", (double)v);
    break;
  }
  case FERRY_FLOAT64: {
    double v;
    memcpy(&v, elem, 8);
    snprintf(buf, len, "%.17g", v);
    break;
  }
  case FERRY_BFLOAT16: {
    uint16_t b;
    memcpy(&b, elem, 2);
    snprintf(buf, len, "%.9g", tool_bfloat16_to_double(b));
    break;
  }
  default: snprintf(buf, len, "?"); break;
  }
}

int tool_dtype_from_name(const char *name) {
  for (int d = 0; d < FERRY_DTYPE_COUNT; d++)
    if (strcmp(ferry_dtype_name((ferry_dtype)d), name) == 0)
      return d;
  return -1;
}

int tool_host_little(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* ---- JSON --------------------------------------------------------------- */

void tool_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\t': fputs("\\t", f); break;
    case '\r': fputs("\\r", f); break;
    default:
      if (*p < 0x20)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

void tool_json_number(FILE *f, double v) {
  if (!isfinite(v))
    fputs("null", f);
  else
    fprintf(f, "%.9g", v);
}

/* ---- Checkpoint and resume: --state FILE -------------------------------- */

int tool_state_begin(tool_ctx *ctx, ferry_loader *L, const char *state,
                     int quiet, int64_t *epoch, int *resumed) {
  *epoch = 0;
  *resumed = 0;
  int rc = ferry_state_load(L, state);
  if (rc == FERRY_ENOENT) { /* the same on every rank: rank 0 looked */
    if (ctx->rank == 0 && !quiet) {
      printf("ferry %s: no state file %s: starting at epoch 0\n",
             ctx->cmd->name, state);
      fflush(stdout);
    }
    rc = ferry_set_epoch(L, 0);
    return rc ? tool_lib_error(ctx, L, rc) : 0;
  }
  if (rc != 0)
    return tool_lib_error(ctx, L, rc);
  ferry_epoch_info info;
  if ((rc = ferry_epoch_info_get(L, &info)) != 0)
    tool_local_fatal(ctx, L, "ferry_epoch_info_get", rc);
  *epoch = info.epoch;
  *resumed = 1;
  if (ctx->rank == 0 && !quiet) {
    printf("ferry %s: resumed from %s: epoch %" PRId64 " after batch %" PRId64
           ", %" PRId64 " batches left on each of %d ranks\n",
           ctx->cmd->name, state, info.epoch, info.first_batch,
           info.num_batches, ctx->size);
    fflush(stdout);
  }
  return 0;
}

int tool_state_save(tool_ctx *ctx, ferry_loader *L, const char *state,
                    int64_t received, int quiet) {
  int rc = ferry_state_save(L, state);
  if (rc != 0)
    return tool_lib_error(ctx, L, rc);
  ferry_epoch_info info;
  if (ferry_epoch_info_get(L, &info) != 0)
    return 0; /* saved; only the message is missing */
  if (ctx->rank == 0 && !quiet) {
    printf("ferry %s: checkpoint saved to %s: epoch %" PRId64 ", %" PRId64
           " batches served on each of %d ranks\n",
           ctx->cmd->name, state, info.epoch, info.first_batch + received,
           ctx->size);
    fflush(stdout);
  }
  return 0;
}
