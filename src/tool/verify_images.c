/*
 * verify_images.c - `ferry verify DATASET --decode VARS --images`: check a
 * dataset's images before a job.  The library does the work
 * (ferry_image_verify: every image of the decode= variables decoded with
 * the loader's decode options, the ranks sharing the samples, the first
 * bad ones merged in sample order); this file prints what it found on
 * rank 0: one PASS/FAIL line, each bad image's file, variable, sample,
 * row and the decoder's message, and exits 3 when one is bad.  The report
 * is the same on any rank count.
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void print_text(const tool_ctx *ctx, const ferry_loader *L,
                       const char *decode, const ferry_image_report *r,
                       const ferry_image_info *f) {
  printf("ferry verify --images: %s, %d rank%s, decode=%s, %" PRId64
         " samples\n",
         ctx->target, ctx->size, ctx->size == 1 ? "" : "s", decode,
         ferry_num_samples(L));
  if (r->bad == 0)
    printf("PASS images       %" PRId64 " images decoded, all good\n",
           r->checked);
  else
    printf("FAIL images       %" PRId64 " of %" PRId64 " images bad, %" PRId64
           " good\n",
           r->bad, r->checked, r->checked - r->bad);
  for (int i = 0; i < r->nfaults; i++)
    printf("  bad: %s\n", f[i].message);
  if (r->bad > r->nfaults)
    printf("  ... %" PRId64 " more bad image%s not named (--max-errors)\n",
           r->bad - r->nfaults, r->bad - r->nfaults == 1 ? "" : "s");
}

static void print_json(const tool_ctx *ctx, const ferry_loader *L,
                       const char *decode, const ferry_image_report *r,
                       const ferry_image_info *f) {
  printf("{\"dataset\": ");
  tool_json_string(stdout, ctx->target);
  printf(", \"ranks\": %d, \"decode\": ", ctx->size);
  tool_json_string(stdout, decode);
  printf(", \"samples\": %" PRId64 ", \"images\": %" PRId64
         ", \"good\": %" PRId64 ", \"bad\": %" PRId64 ", \"result\": \"%s\""
         ", \"errors\": [",
         ferry_num_samples(L), r->checked, r->checked - r->bad, r->bad,
         r->bad ? "FAIL" : "PASS");
  for (int i = 0; i < r->nfaults; i++) {
    ferry_var_info v;
    const char *name = ferry_var_info_get(L, f[i].var, &v) == 0 ? v.name : "";
    printf("%s{\"file\": ", i ? ", " : "");
    tool_json_string(stdout, ferry_part_path(L, f[i].part, f[i].var));
    printf(", \"variable\": ");
    tool_json_string(stdout, name);
    printf(", \"sample\": %" PRId64 ", \"row\": %" PRId64
           ", \"bytes\": %" PRId64 ", \"error\": ",
           f[i].sample, f[i].row, f[i].bytes);
    tool_json_string(stdout, ferry_strerror(f[i].status));
    printf(", \"message\": ");
    tool_json_string(stdout, f[i].message);
    printf("}");
  }
  printf("]}\n");
}

int verify_images(tool_ctx *ctx, int json, int max_errors) {
  char decode[256];
  if (!*tool_option(ctx, "decode", decode, sizeof decode))
    return tool_usage_error(ctx, "--images checks the images of the decode "
                                 "option's variables: add --decode VARS "
                                 "(e.g. --decode jpg)");
  ferry_loader *L = NULL;
  int st = tool_open(ctx, &L);
  if (st != 0)
    return st;
  ferry_image_info *faults =
      max_errors ? calloc((size_t)max_errors, sizeof *faults) : NULL;
  if (max_errors && !faults)
    tool_oom(ctx, (size_t)max_errors * sizeof *faults, "the bad images");
  ferry_image_report r;
  int rc = ferry_image_verify(L, max_errors, &r, faults);
  if (rc != 0)
    st = tool_lib_error(ctx, L, rc);
  else {
    if (ctx->rank == 0) {
      if (json)
        print_json(ctx, L, decode, &r, faults);
      else
        print_text(ctx, L, decode, &r, faults);
      fflush(stdout);
    }
    st = r.bad ? TOOL_EXIT_VERIFY : TOOL_EXIT_OK;
  }
  free(faults);
  rc = ferry_close(L);
  if (rc != 0 && st == 0)
    st = tool_lib_error(ctx, NULL, rc);
  return st;
}
