/*
 * tool.h - what the subcommands of the `ferry` program share.  The program is
 * a thin layer over the public API in ferry.h, in the way IOR's ior-main.c is
 * over IOR: it parses the command line, builds the loader options in the
 * documented order of precedence, calls the library, and prints.  Nothing in
 * here may be needed to use the library; the only logic of its own is
 * command-line handling and the bookkeeping `ferry verify` and `ferry bench`
 * do to check and measure what the library hands out.
 */
#ifndef FERRY_TOOL_H
#define FERRY_TOOL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* getopt_long, clock_nanosleep, strdup */
#endif

#include "ferry.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, documented in ferry(1). */
enum {
  TOOL_EXIT_OK = 0,
  TOOL_EXIT_ERROR = 1,    /* the library or the system failed */
  TOOL_EXIT_USAGE = 2,    /* bad command line */
  TOOL_EXIT_VERIFY = 3,   /* `ferry verify`: a promise did not hold */
  TOOL_EXIT_REQUEUE = 75, /* EX_TEMPFAIL: checkpointed on a signal, requeue
                             me (--state) */
  TOOL_CONTINUE = -1      /* internal: parsing done, run the command */
};

/* One of a subcommand's own options (the loader options come from the
 * library's table and are added by tool_parse). */
typedef struct tool_opt {
  const char *name;    /* long name without dashes: "samples"         */
  int has_arg;         /* 0: a flag; 1: takes a value                 */
  int id;              /* what the command sees in tool_arg.id        */
  const char *metavar; /* "N", "FILE"; NULL for a flag                */
  const char *help;    /* one sentence                                */
} tool_opt;

/* An occurrence of a subcommand option on the command line, in order. */
typedef struct tool_arg {
  int id;
  const char *value; /* NULL for a flag; points into argv */
} tool_arg;

typedef struct tool_ctx tool_ctx;

typedef struct tool_cmd {
  const char *name;        /* "gen"                                        */
  const char *args;        /* synopsis after the name                      */
  const char *summary;     /* one line for `ferry --help`                  */
  const char *description; /* paragraph for `ferry CMD --help`             */
  int loader_options;      /* 1: accepts the loader options and --config   */
  const tool_opt *opts;    /* terminated by an entry with name NULL        */
  int (*run)(tool_ctx *ctx);
} tool_cmd;

struct tool_ctx {
  int rank;
  int size;
  const tool_cmd *cmd;
  ferry_options *opts; /* loader options after precedence (or NULL)    */
  const char *target;  /* the positional argument: DATASET or DIR      */
  int nargs;
  tool_arg *args; /* the command's own options, in order          */
};

extern const tool_cmd tool_cmd_gen;
extern const tool_cmd tool_cmd_info;
extern const tool_cmd tool_cmd_plan;
extern const tool_cmd tool_cmd_dump;
extern const tool_cmd tool_cmd_bench;
extern const tool_cmd tool_cmd_verify;
extern const tool_cmd tool_cmd_quality;
extern const tool_cmd tool_cmd_index;

/* ---- Command line (common.c) -------------------------------------------- */

/**
 * Parse argv (argv[0] is the command name) for cmd with getopt_long over a
 * table built from the library's option table plus cmd's own options.
 * Fills ctx->target, ctx->args and, for commands taking loader options,
 * ctx->opts with defaults < --config FILE < FERRY_* environment < command
 * line.  Returns TOOL_CONTINUE, or an exit status: TOOL_EXIT_OK after
 * --help, TOOL_EXIT_USAGE for a bad command line, TOOL_EXIT_ERROR when the
 * config file or the environment holds a bad value.  Messages on rank 0.
 */
int tool_parse(tool_ctx *ctx, const tool_cmd *cmd, int argc, char **argv);
void tool_ctx_free(tool_ctx *ctx);

/** Help for one command (rank 0 prints, on stdout). */
void tool_print_cmd_help(const tool_ctx *ctx, const tool_cmd *cmd);
/** The loader options, one per line as in the man page. */
void tool_print_loader_options(FILE *f);

/** Parse a decimal integer in [min, max].  Returns 0 or -1. */
int tool_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/** Parse a number >= 0.  Returns 0 or -1. */
int tool_parse_double(const char *s, double *out);
/** Parse a byte size: "4096", "64K", "2GiB", "1.5MiB", "10MB" (K, KiB =
 *  1024; KB = 1000).  Returns 0 or -1. */
int tool_parse_size(const char *s, uint64_t *out);
/** "1.5 GiB" into buf. */
const char *tool_fmt_bytes(double bytes, char *buf, size_t len);

/* ---- Errors and agreement (common.c) ------------------------------------ */

/** "ferry: CMD: message" on stderr, rank 0 only. */
void tool_error(const tool_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** "ferry: CMD: rank R: message" on stderr, from the calling rank. */
void tool_rank_error(const tool_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** A usage error: message plus a pointer to --help.  Returns TOOL_EXIT_USAGE.
 */
int tool_usage_error(const tool_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 once tool_lib_error reported FERRY_EPEER (a rank gone or stuck past
 * collective_timeout): main() then ends the job with MPI_Abort instead of
 * waiting for every rank in its last collective. */
int tool_peer_lost(void);
/**
 * A library call failed with rc: print ferry_last_error(loader) on rank 0
 * and return TOOL_EXIT_ERROR.  Use it after collective calls only, where every
 * rank has the same rc and so takes the same path.
 */
int tool_lib_error(const tool_ctx *ctx, const ferry_loader *loader, int rc);
/**
 * A LOCAL call failed on this rank only, leaving the ranks unable to go on
 * together (a batch could not be released): print the message from this rank
 * and end the whole job with MPI_Abort.  The library never aborts; the tool
 * may, as the last resort against a hang.
 */
void tool_local_fatal(const tool_ctx *ctx, const ferry_loader *loader,
                      const char *what, int rc) __attribute__((noreturn));
/* Print a message from this rank (as tool_rank_error) and end the job
 * (MPI_Abort): for failures the ranks cannot get past together. */
void tool_rank_fatal(const tool_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Out of memory on this rank (a LOCAL failure, as tool_local_fatal):
 * "out of memory: BYTES bytes for WHAT" from this rank, then MPI_Abort. */
void tool_oom(const tool_ctx *ctx, size_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/** 1 on every rank when ok is true on every rank. */
int tool_all(int ok);

/** ferry_open over MPI_COMM_WORLD with ctx->opts.  Returns 0 or an exit status.
 */
int tool_open(tool_ctx *ctx, ferry_loader **out);
/** --save-manifest FILE: rank 0 saves L's manifest to path, every rank
 *  learns the result.  Returns 0 or an exit status (tool_lib_error). */
int tool_save_manifest(const tool_ctx *ctx, const ferry_loader *L,
                       const char *path);

/** The default of --max-memory (verify, quality): the most the command's
 *  own per-sample arrays may need before it refuses to start. */
#define TOOL_MAX_MEMORY_DEFAULT "4GiB"
/** Refuse up front (issue 30) when a command's per-sample arrays need more
 *  than limit bytes: per_sample bytes for each of the dataset's samples on
 *  rank 0 plus per_share for each sample of a rank's share.  Prints, on
 *  rank 0, the size needed, the limit and the options that change either,
 *  and returns TOOL_EXIT_ERROR; else 0.  Every rank decides the same (the
 *  same sample count, world size and options). */
int tool_memory_check(const tool_ctx *ctx, ferry_loader *L, const char *what,
                      double per_sample, double per_share, uint64_t limit);
/** Parse --max-memory's value into *out; returns 0 or a usage error. */
int tool_max_memory_arg(const tool_ctx *ctx, const char *value, uint64_t *out);
/**
 * For commands that read batch data on the host (dump, verify): in a build
 * with CUDA, device=auto becomes device=cpu, and device=cuda is a usage
 * error.  Returns TOOL_CONTINUE or TOOL_EXIT_USAGE.
 */
int tool_host_batches(tool_ctx *ctx);
/** Option NAME's current value as text (a static buffer per call site is not
 *  needed: writes into buf). */
const char *tool_option(const tool_ctx *ctx, const char *name, char *buf,
                        size_t len);

/* ---- Checkpoint and resume: --state FILE (common.c) -------------------- */

/**
 * Start the run: ferry_state_load(FILE) when it exists, else (FERRY_ENOENT
 * on every rank) ferry_set_epoch(0).  *epoch receives the epoch started and
 * *resumed 1 when it came from the file.  Rank 0 says which, unless quiet.
 * COLLECTIVE.  Returns 0 or an exit status.
 */
int tool_state_begin(tool_ctx *ctx, ferry_loader *L, const char *state,
                     int quiet, int64_t *epoch, int *resumed);
/**
 * ferry_state_save(FILE) and, unless quiet, a line on rank 0 naming the
 * epoch and the batches served (received: batches this run got in the
 * epoch).  COLLECTIVE.  Returns 0 or an exit status.
 */
int tool_state_save(tool_ctx *ctx, ferry_loader *L, const char *state,
                    int64_t received, int quiet);

/* ---- Gathering (common.c); COLLECTIVE over MPI_COMM_WORLD --------------- */

/**
 * Gather n int64 values of every rank on rank 0, in rank order.  On rank 0
 * *all receives the malloc'd concatenation and counts (if not NULL) the
 * per-rank counts (malloc'd, size entries).  Returns the total on every rank,
 * or -1 on every rank when it cannot be done (too many values for one
 * MPI_Gatherv, or out of memory).
 */
int64_t tool_gather_i64(const int64_t *send, int64_t n, int64_t **all,
                        int64_t **counts);

/* ---- Sample encoding of `ferry gen` (common.c) -------------------------- */

/**
 * The synthetic values, shared by gen (which writes them) and verify (which
 * checks them): element k of row i is (i + k) mod M(dtype), M = 2^7 int8,
 * 2^8 uint8, 2^15 int16, 2^16 uint16, 2^31 int32, 2^32 uint32, 2^62
 * int64/uint64, 2^11 float16, 2^24 float32, 2^53 float64, 2 bool.  Fills
 * nrows rows of row_elems elements starting at sample first, native order.
 */
void tool_fill_rows(ferry_dtype dtype, int64_t first, int64_t nrows,
                    int64_t row_elems, void *buf);
/** IEEE half from/to double. */
uint16_t tool_half_from_int(uint32_t n);
double tool_half_to_double(uint16_t h);
/** A bfloat16 (a float's upper 16 bits) as a double (exact). */
double tool_bfloat16_to_double(uint16_t b);
/** The element of dtype t at elem (native order) as a double; NaN for a
 *  dtype ferry does not serve (ferry quality's labels, ferry verify's
 *  values of a ferry gen --anndata file). */
double tool_value_as_double(ferry_dtype t, const void *elem);
/** Element 0 of a row, as a printable number ("%.17g" for floats, exact
 *  integers, 0/1 for bool). */
void tool_format_value(ferry_dtype dtype, const void *elem, char *buf,
                       size_t len);
/** A dtype by its NumPy name, or -1. */
int tool_dtype_from_name(const char *name);
/** 1 when this host stores integers little-endian. */
int tool_host_little(void);

/* ---- JSON output (common.c) --------------------------------------------- */

/** Write s as a JSON string (quotes and escapes included). */
void tool_json_string(FILE *f, const char *s);
/** Write a finite double as a JSON number (non-finite values as null). */
void tool_json_number(FILE *f, double v);

#endif /* FERRY_TOOL_H */
