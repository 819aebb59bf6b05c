/*
 * verify_checks.c - the collective checks of `ferry verify` on one epoch's
 * run (cmd_verify.c runs the epochs and prints the report): equal batch
 * counts and well-formed batches, every sample exactly once as the tail
 * option promises (the ids gathered on rank 0), and with weights, balance
 * or a mix the observed shares of the draws against the requested ones.
 */
#include "verify.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void verify_check_batches(const tool_ctx *ctx, report *rep, int64_t e,
                          const epoch_run *r) {
  int64_t nb_min, nb_max, rc_min, rc_max, bad;
  verify_minmax_i64(r->num_batches, &nb_min, &nb_max);
  verify_minmax_i64(r->received, &rc_min, &rc_max);
  bad = verify_sum_i64(r->malformed);
  char msg[MSG_LEN];
  verify_first_message(ctx, r->malformed > 0, r->malformed_msg, msg);
  if (ctx->rank != 0)
    return;
  if (nb_min == nb_max && rc_min == rc_max && nb_min == rc_min && bad == 0)
    verify_result(rep, CK_BATCHES, RES_PASS, e,
                  "%" PRId64 " batches on every rank, "
                  "all well-formed",
                  nb_min);
  else
    verify_result(rep, CK_BATCHES, RES_FAIL, e,
                  "ferry_num_batches %" PRId64 "..%" PRId64
                  ", received %" PRId64 "..%" PRId64 " over the ranks, %" PRId64
                  " malformed%s%s",
                  nb_min, nb_max, rc_min, rc_max, bad, msg[0] ? ": " : "", msg);
}

/* What rank 0 finds in the gathered ids of an epoch. */
typedef struct once_tally {
  int64_t oor, dups, distinct, padded, pad_new;
  int64_t first_oor, first_dup, first_pad_new, first_missing;
} once_tally;

/* Rank 0: count the ids of an epoch: the nprev ids served by earlier runs
 * of it (--state) first, then this run's total ids (pad: padding flags).
 * es: the epoch's samples (the first missing id is looked for when it is
 * the whole dataset).  Returns 0, or -1 when out of memory. */
static int once_count(const setup *su, const int64_t *ids, const int64_t *pad,
                      int64_t total, const int64_t *prev, int64_t nprev,
                      int64_t es, once_tally *c) {
  unsigned char *seen = calloc((size_t)(su->n > 0 ? su->n : 1), 1);
  if (seen == NULL)
    return -1;
  memset(c, 0, sizeof *c);
  c->first_dup = c->first_pad_new = c->first_missing = -1;
  for (int64_t i = -nprev; i < total; i++) {
    if (i >= 0 && pad[i])
      continue;
    int64_t id = i < 0 ? prev[nprev + i] : ids[i];
    if (id < 0 || id >= su->n) {
      if (c->oor++ == 0)
        c->first_oor = id;
    } else if (seen[id]) {
      if (c->dups++ == 0)
        c->first_dup = id;
    } else {
      seen[id] = 1;
      c->distinct++;
    }
  }
  for (int64_t i = 0; i < total; i++) {
    if (!pad[i])
      continue;
    int64_t id = ids[i];
    c->padded++;
    if (id < 0 || id >= su->n) {
      if (c->oor++ == 0)
        c->first_oor = id;
    } else if (!seen[id] && c->pad_new++ == 0) {
      c->first_pad_new = id;
    }
  }
  if (es == su->n)
    for (int64_t id = 0; id < su->n && c->first_missing < 0; id++)
      if (!seen[id])
        c->first_missing = id;
  free(seen);
  return 0;
}

/* What breaks the tail option's promise, as "; reason" pieces in why
 * (empty when it holds). */
static void once_why(const setup *su, const once_tally *c, int64_t es,
                     int64_t dropped, char *why, size_t len) {
  int64_t want = su->tail == TAIL_DROP ? es - dropped : es;
  size_t w = 0;
  why[0] = '\0';
#define WHY(...)                                                               \
  w += (size_t)snprintf(why + w, w < len ? len - w : 0, __VA_ARGS__)
  if (c->oor)
    WHY("; %" PRId64 " ids outside [0, %" PRId64 ") (first %" PRId64 ")",
        c->oor, su->n, c->first_oor);
  if (c->dups)
    WHY("; %" PRId64 " samples served more than once (first %" PRId64 ")",
        c->dups, c->first_dup);
  if (su->tail != TAIL_PAD && c->padded)
    WHY("; %" PRId64 " padded samples with tail=%s", c->padded,
        su->tail == TAIL_DROP ? "drop_last" : "partial");
  if (su->tail == TAIL_PAD && c->pad_new)
    WHY("; %" PRId64 " padded samples repeat nothing served (first %" PRId64
        ")",
        c->pad_new, c->first_pad_new);
  if (su->tail != TAIL_DROP && dropped)
    WHY("; %" PRId64 " samples dropped with tail=%s", dropped,
        su->tail == TAIL_PAD ? "pad" : "partial");
  if (c->distinct != want) {
    WHY("; %" PRId64 " distinct samples served, expected %" PRId64, c->distinct,
        want);
    if (c->first_missing >= 0)
      WHY(" (first missing %" PRId64 ")", c->first_missing);
  }
#undef WHY
}

/* Exactly-once for epoch e: the ranks agree on the epoch, their counts
 * match their epoch info, and the ids gathered on rank 0 (*ids_out,
 * *pad_out: *total_out of them, *gather_ok) cover it as the tail option
 * promises.  COLLECTIVE. */
void verify_check_once(tool_ctx *ctx, report *rep, const setup *su, int64_t e,
                       const epoch_run *r, const int64_t *prev, int64_t nprev,
                       int64_t **ids_out, int64_t **pad_out, int64_t *total_out,
                       int *gather_ok) {
  int64_t es_min, es_max, dr_min, dr_max;
  verify_minmax_i64(r->info.epoch_samples, &es_min, &es_max);
  verify_minmax_i64(r->info.dropped_samples, &dr_min, &dr_max);
  int64_t pads = 0;
  for (int64_t i = 0; i < r->nids; i++)
    pads += r->padded[i];
  char local[MSG_LEN] = "";
  if (r->nids != r->info.served_samples || pads != r->info.padded_samples)
    snprintf(local, sizeof local,
             "rank %d received %" PRId64 " samples (%" PRId64
             " padded), its epoch info says %" PRId64 " (%" PRId64 ")",
             ctx->rank, r->nids, pads, r->info.served_samples,
             r->info.padded_samples);
  char msg[MSG_LEN];
  verify_first_message(ctx, local[0] != '\0', local, msg);

  int64_t *ids = NULL, *pad = NULL;
  int64_t total = tool_gather_i64(r->ids, r->nids, &ids, NULL);
  int64_t total2 = tool_gather_i64(r->padded, r->nids, &pad, NULL);
  *gather_ok = total >= 0 && total2 >= 0;
  *ids_out = ids;
  *pad_out = pad;
  *total_out = total;
  int64_t want = 0; /* how many there were (the same outcome on every rank) */
  if (!*gather_ok)
    MPI_Allreduce(&r->nids, &want, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (ctx->rank != 0)
    return;
  if (!*gather_ok) {
    verify_result(
        rep, CK_ONCE, RES_FAIL, e,
        "cannot gather the %" PRId64 " sample ids on rank 0 (more than "
        "one MPI_Gatherv holds, or out of memory: %zu bytes for them and "
        "their pad flags)",
        want, (size_t)want * 2 * sizeof(int64_t));
    return;
  }
  if (su->si.mode) {
    verify_result(rep, CK_ONCE, RES_SKIP, e,
                  "sampling serves draws, not each sample once (the sampling "
                  "check)");
    return;
  }
  if (es_min != es_max || dr_min != dr_max) {
    verify_result(rep, CK_ONCE, RES_FAIL, e,
                  "ranks disagree on the epoch: "
                  "epoch_samples %" PRId64 "..%" PRId64 ", dropped %" PRId64
                  "..%" PRId64,
                  es_min, es_max, dr_min, dr_max);
    return;
  }
  if (msg[0] != '\0') {
    verify_result(rep, CK_ONCE, RES_FAIL, e, "%s", msg);
    return;
  }
  once_tally c;
  if (once_count(su, ids, pad, total, prev, nprev, es_min, &c) != 0) {
    verify_result(rep, CK_ONCE, RES_FAIL, e,
                  "out of memory: %zu bytes for the %" PRId64
                  " samples of dataset "
                  "%s on rank 0",
                  (size_t)(su->n > 0 ? su->n : 1), su->n, ctx->target);
    return;
  }
  int64_t es = es_min, dropped = dr_min;
  char why[MSG_LEN];
  once_why(su, &c, es, dropped, why, sizeof why);
  if (why[0] == '\0' && nprev > 0)
    verify_result(
        rep, CK_ONCE, RES_PASS, e,
        "%" PRId64 " of %" PRId64 " samples served once each over the "
        "runs of this epoch (%" PRId64 " before the checkpoint, %" PRId64
        " after it; %" PRId64 " padded repeats, %" PRId64 " dropped)",
        c.distinct, es, nprev, c.distinct - nprev, c.padded, dropped);
  else if (why[0] == '\0')
    verify_result(rep, CK_ONCE, RES_PASS, e,
                  "%" PRId64 " of %" PRId64 " samples "
                  "served once each (%" PRId64 " padded repeats, %" PRId64
                  " dropped)",
                  c.distinct, es, c.padded, dropped);
  else
    verify_result(rep, CK_ONCE, RES_FAIL, e, "%s", why + 2);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sampling, rank 0, over the epoch's real draws (ids, pad: total): none
 * outside the dataset; without replacement none twice; each group's
 * observed share of the draws within a tolerance of what the plan asks:
 * weighted, 6 standard deviations of as many INDEPENDENT draws (issue 30:
 * an epoch is a weighted sample in itself; the old bound allowed draw_block
 * times the variance, and epochs far off passed) plus the draws the tail
 * dropped; a mix, the draws the tail dropped. */
void verify_check_sampling(const ferry_loader *L, report *rep, const setup *su,
                           int64_t e, const int64_t *ids, const int64_t *pad,
                           int64_t total) {
  int64_t *real = malloc((size_t)(total ? total : 1) * sizeof *real), n = 0;
  if (!real) {
    verify_result(rep, CK_SAMPLING, RES_FAIL, e,
                  "out of memory: %zu bytes for the %" PRId64
                  " draws on rank 0",
                  (size_t)(total ? total : 1) * sizeof *real, total);
    return;
  }
  for (int64_t i = 0; i < total; i++)
    if (!pad[i])
      real[n++] = ids[i];
  qsort(real, (size_t)n, sizeof *real, cmp_i64);
  int64_t twice = 0;
  for (int64_t i = 1; i < n; i++)
    twice += real[i] == real[i - 1];
  char msg[2 * MSG_LEN] = "", part[160];
  int bad = n == 0 || real[0] < 0 || real[n - 1] >= su->n ||
            (su->si.mode == 1 && !su->si.replacement && twice);
  if (bad)
    snprintf(msg, sizeof msg,
             "%" PRId64 " draws, ids %" PRId64 "..%" PRId64 ", %" PRId64
             " repeats; ",
             n, n ? real[0] : -1, n ? real[n - 1] : -1, twice);
  ferry_sampling_info si;
  ferry_sampling_info_get(L, &si);
  int64_t at = 0;
  for (int64_t g = 0; g < si.ngroups; g++) {
    int64_t first, count, obs = 0;
    double req, plan;
    if (ferry_sampling_group(L, g, &first, &count, &req, &plan))
      break;
    while (at < n && real[at] < first)
      at++;
    while (at < n && real[at] < first + count)
      at++, obs++;
    double o = n ? (double)obs / (double)n : 0;
    double dropped = ((double)(si.draws - n) + 2) / (double)n;
    double tol = si.mode == 2
                     ? dropped
                     : 6 * sqrt(plan * (1 - plan) / (double)n) + dropped;
    int off = fabs(o - plan) > tol;
    bad |= off;
    char planned[48] = "";
    if (fabs(plan - req) > 1e-9)
      snprintf(planned, sizeof planned, " planned %.4f", plan);
    snprintf(part, sizeof part,
             "%s[%" PRId64 ",%" PRId64 ") requested %.4f%s observed %.4f%s",
             g ? "; " : "", first, first + count, req, planned, o,
             off ? " (off)" : "");
    if (strlen(msg) + strlen(part) < sizeof msg)
      strcat(msg, part);
  }
  verify_result(rep, CK_SAMPLING, bad ? RES_FAIL : RES_PASS, e,
                "%" PRId64 " draws of %s: %s", n, si.what, msg);
  free(real);
}
