/*
 * main.c - entry of the `ferry` program: initialise MPI with
 * MPI_THREAD_MULTIPLE (the library reads from its own I/O thread), pick the
 * subcommand, and leave with the same exit status on every rank.  Each
 * subcommand lives in its own cmd_*.c file; the shared parsing and printing
 * is in common.c.  Works under mpirun/srun and as an MPI singleton.
 */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

static const tool_cmd *const commands[] = {
    &tool_cmd_gen,   &tool_cmd_info,   &tool_cmd_plan,    &tool_cmd_dump,
    &tool_cmd_bench, &tool_cmd_verify, &tool_cmd_quality, &tool_cmd_index,
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const tool_cmd *find_command(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0)
      return commands[i];
  return NULL;
}

static void print_help(const tool_ctx *ctx, FILE *f) {
  if (ctx->rank != 0)
    return;
  fprintf(f, "Usage: ferry COMMAND [options]\n"
             "       ferry help COMMAND | ferry COMMAND --help\n"
             "       ferry help options\n"
             "       ferry --version [--json]\n\n"
             "Tools over libferry, an MPI-native training-data loader.\n\n"
             "Commands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "  %-8s %s\n", "help",
          "show the help of a command, or "
          "'help options' for the loader options");
  fprintf(f, "\nRun under mpirun or srun, or alone as a single rank.  "
             "See ferry(1).\n");
  fflush(f);
}

/* The library's build report (ferry_build_info), sized by a first call. */
static char *build_info(int json) {
  int n = ferry_build_info(NULL, 0, json);
  char *s = n < 0 ? NULL : malloc((size_t)n + 1);
  if (s != NULL && ferry_build_info(s, (size_t)n + 1, json) < 0) {
    free(s);
    s = NULL;
  }
  return s;
}

/* ferry --version [--json]: the tool's and the library's versions, the
 * backends and features, then the libraries built against and found.  The
 * JSON form wraps the library's object: {"tool": VERSION, "libferry": {..}}. */
static int print_version(const tool_ctx *ctx, int json) {
  if (ctx->rank != 0)
    return TOOL_EXIT_OK;
  char *info = build_info(json);
  if (info == NULL) {
    fprintf(stderr, "ferry: --version: %s\n", ferry_last_error(NULL));
    return TOOL_EXIT_ERROR;
  }
  if (json) {
    printf("{\n  \"tool\": \"%s\",\n  \"libferry\": ", FERRY_VERSION_STRING);
    for (const char *c = info; *c; c++) { /* indented one level more */
      putchar(*c);
      if (*c == '\n')
        fputs("  ", stdout);
    }
    printf("\n}\n");
  } else {
    printf("ferry %s (libferry %s)\nbackends:", FERRY_VERSION_STRING,
           ferry_version());
    const char *b;
    for (int i = 0; (b = ferry_backend_name(i)) != NULL; i++)
      printf(" %s", b);
    printf("\nfeatures: %s\n\n%s", ferry_features(), info);
  }
  free(info);
  fflush(stdout);
  return TOOL_EXIT_OK;
}

static int help_command(tool_ctx *ctx, int argc, char **argv) {
  if (argc == 2) {
    print_help(ctx, stdout);
    return TOOL_EXIT_OK;
  }
  if (argc > 3)
    return tool_usage_error(ctx, "help takes one command name");
  if (strcmp(argv[2], "options") == 0) {
    if (ctx->rank == 0) {
      printf("Loader options (precedence: defaults < --config FILE < "
             "FERRY_* environment < command line):\n");
      tool_print_loader_options(stdout);
      fflush(stdout);
    }
    return TOOL_EXIT_OK;
  }
  const tool_cmd *cmd = find_command(argv[2]);
  if (cmd == NULL)
    return tool_usage_error(ctx, "unknown command '%s'", argv[2]);
  tool_print_cmd_help(ctx, cmd);
  return TOOL_EXIT_OK;
}

static int dispatch(tool_ctx *ctx, int argc, char **argv) {
  if (argc < 2) {
    print_help(ctx, stderr);
    return TOOL_EXIT_USAGE;
  }
  const char *a = argv[1];
  if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
    print_help(ctx, stdout);
    return TOOL_EXIT_OK;
  }
  if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
    int json = argc == 3 && strcmp(argv[2], "--json") == 0;
    if (argc > 2 + json)
      return tool_usage_error(ctx, "%s takes only --json", a);
    return print_version(ctx, json);
  }
  if (strcmp(a, "help") == 0)
    return help_command(ctx, argc, argv);
  const tool_cmd *cmd = find_command(a);
  if (cmd == NULL && a[0] == '-')
    return tool_usage_error(ctx, "unknown option '%s'", a);
  if (cmd == NULL)
    return tool_usage_error(ctx, "unknown command '%s'", a);
  int status = tool_parse(ctx, cmd, argc - 1, argv + 1);
  /* Parsing decides alike on every rank, except when it fails on one rank
   * only (out of memory building the options): then no rank may go on to
   * the collective calls of the command, or the others would wait for it. */
  if (!tool_all(status == TOOL_CONTINUE))
    return status == TOOL_CONTINUE ? TOOL_EXIT_ERROR : status;
  return cmd->run(ctx);
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  tool_ctx ctx = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

  int status = dispatch(&ctx, argc, argv);
  /* A rank gone or stuck (FERRY_EPEER, said above): the collective below
   * would wait for it for ever; the tool, not the library, ends the job. */
  if (tool_peer_lost()) {
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, status ? status : TOOL_EXIT_ERROR);
  }
  /* Every path agrees already; the maximum makes sure mpirun and srun see
   * one status whatever rank they report. */
  int agreed = status;
  MPI_Allreduce(&status, &agreed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  tool_ctx_free(&ctx);
  MPI_Finalize();
  return agreed;
}
