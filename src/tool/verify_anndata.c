/*
 * verify_anndata.c - the content check of `ferry verify` on a file `ferry
 * gen --anndata` wrote (its root attribute ferry-gen, gen_anndata.h): every
 * served cell's row of X (its column indices and values, ragged, or its
 * dense row with sparse=dense), its obs/cell_type code and its n_counts
 * equal the formula of its index; the categories' names too.  Any other
 * file is left to the usual content decision (cmd_verify.c).
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int verify_anndata_probe(const tool_ctx *ctx, adgen_params *p) {
  struct stat st;
  char no[256];
  memset(p, 0, sizeof *p);
  if (ctx->rank != 0 || strncmp(ctx->target, "mem:", 4) == 0 ||
      stat(ctx->target, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  return adgen_read_params(ctx->target, p, no, sizeof no);
}

/* Rank 0: on (1) when the probed file is one dataset (not a mix) of as
 * many cells as the loader serves; -1 when it is for another count. */
static int find_params(const ferry_loader *L, int found, adgen_params *p,
                       char *why, size_t len) {
  if (!found || ferry_mix_count(L) > 0)
    return 0; /* not ferry's: the usual decision says why */
  if (p->cells != ferry_num_samples(L)) {
    snprintf(why, len,
             "written by 'ferry gen --anndata' for %" PRId64
             " cells, the loader serves %" PRId64,
             p->cells, ferry_num_samples(L));
    return -1;
  }
  return 1;
}

static int var_named(const setup *su, const char *name) {
  for (int v = 0; v < su->nvars; v++)
    if (strcmp(su->vars[v].name, name) == 0)
      return v;
  return -1;
}

/* The categories' names the loader gives against type0 .. typeK-1: the
 * first that differs into su->ad_msg. */
static void check_categories(setup *su) {
  const ferry_var_info *vi = &su->vars[su->ad_codes];
  const char *at = vi->categories ? vi->categories : "";
  if (vi->ncategories != su->ad.categories) {
    snprintf(su->ad_msg, sizeof su->ad_msg,
             "obs/cell_type/codes has %" PRId64 " categories, expected %d",
             vi->ncategories, su->ad.categories);
    return;
  }
  for (int k = 0; k < su->ad.categories; k++) {
    char want[16];
    size_t n = strcspn(at, "\n");
    snprintf(want, sizeof want, "type%d", k);
    if (n != strlen(want) || strncmp(at, want, n) != 0) {
      snprintf(su->ad_msg, sizeof su->ad_msg,
               "obs/cell_type/codes: category %d is '%.*s', expected '%s'", k,
               (int)(n < 64 ? n : 64), at, want);
      return;
    }
    at += n + (at[n] != '\0');
  }
}

int verify_anndata_setup(const tool_ctx *ctx, const ferry_loader *L, int found,
                         setup *su) {
  int on = 0;
  if (ctx->rank == 0)
    on = find_params(L, found, &su->ad, su->why, sizeof su->why);
  MPI_Bcast(&on, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&su->ad, (int)sizeof su->ad, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (on <= 0)
    return on;
  su->adgen = 1;
  su->ad_ix = var_named(su, "X/indices");
  su->ad_dv = var_named(su, "X/data");
  su->ad_codes = var_named(su, "obs/cell_type/codes");
  su->ad_counts = var_named(su, "obs/n_counts");
  su->ad_dense = var_named(su, "X");
  /* dense rows of a subset of the genes (genes=): not the formula's row */
  if (su->ad_dense >= 0 && (su->vars[su->ad_dense].ndim != 2 ||
                            su->vars[su->ad_dense].shape[1] != su->ad.genes))
    su->ad_dense = -1;
  if (su->ad_ix >= 0 && !su->vars[su->ad_ix].ragged)
    su->ad_ix = -1;
  if (su->ad_dv >= 0 && !su->vars[su->ad_dv].ragged)
    su->ad_dv = -1;
  su->ad_msg[0] = '\0';
  if (su->ad_codes >= 0)
    check_categories(su);
  char what[256] = "";
  size_t w = 0;
  const int idx[] = {su->ad_ix, su->ad_dv, su->ad_dense, su->ad_codes,
                     su->ad_counts};
  for (int k = 0; k < 5; k++)
    if (idx[k] >= 0)
      w += (size_t)snprintf(what + w, w < sizeof what ? sizeof what - w : 0,
                            "%s%s%s", w ? ", " : "", su->vars[idx[k]].name,
                            idx[k] == su->ad_dense ? " (dense)" : "");
  snprintf(su->why, sizeof su->why,
           "%s%s as written by 'ferry gen --anndata' (seed %" PRIu64
           ", %" PRId64 " genes, %s)",
           w ? what
             : "none of the generated variables served (a dense X of "
               "a genes= subset is not checked)",
           w ? " hold the values of their cell" : ";", su->ad.seed,
           su->ad.genes, ferry_dtype_name(su->ad.dtype));
  return 1;
}

/* Element k of a tensor's data as a double. */
static double num_at(const ferry_tensor *t, int64_t k) {
  return tool_value_as_double(t->dtype,
                              (const unsigned char *)t->data +
                                  (size_t)k * ferry_dtype_size(t->dtype));
}

static void bad(epoch_run *run, const ferry_batch *b, int64_t epoch, int64_t id,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void bad(epoch_run *run, const ferry_batch *b, int64_t epoch, int64_t id,
                const char *fmt, ...) {
  if (run->bad_values++ > 0)
    return;
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(run->content_msg, MSG_LEN,
           "epoch %" PRId64 " batch %" PRId64 " cell %" PRId64 ": %s", epoch,
           b->index, id, what);
}

/* Row j (cell id) of the ragged pair: ix and dv may be NULL (not
 * selected).  Returns 1 when it differs (reported). */
static int check_row(const setup *su, const ferry_tensor *ix,
                     const ferry_tensor *dv, const ferry_batch *b, int64_t j,
                     int64_t epoch, epoch_run *run) {
  const adgen_params *p = &su->ad;
  const ferry_tensor *t = ix ? ix : dv;
  int64_t id = b->sample_ids[j], a = t->offsets[j], z = t->offsets[j + 1];
  uint64_t h = adgen_cell(p, id), s = 0;
  int64_t c = adgen_next(p, h, s, -1), k = a;
  for (; k < z && c < p->genes; k++, c = adgen_next(p, h, ++s, c)) {
    double gi = ix ? num_at(ix, k) : (double)c,
           gv = dv ? num_at(dv, k) : adgen_value(h, c);
    if (gi != (double)c || gv != adgen_value(h, c)) {
      bad(run, b, epoch, id,
          "value %" PRId64 " of its row of X: expected column %" PRId64
          " = %d, got column %.17g = %.17g",
          k - a, c, adgen_value(h, c), gi, gv);
      return 1;
    }
  }
  if (k < z || c < p->genes) {
    int64_t want = (int64_t)s;
    while (c < p->genes)
      c = adgen_next(p, h, (uint64_t)++want, c);
    bad(run, b, epoch, id,
        "its row of X has %" PRId64 " values, expected %" PRId64, z - a, want);
    return 1;
  }
  return 0;
}

/* Row j of the dense X (sparse=dense, every gene). */
static int check_dense(const setup *su, const ferry_tensor *x,
                       const ferry_batch *b, int64_t j, int64_t epoch,
                       epoch_run *run) {
  const adgen_params *p = &su->ad;
  int64_t id = b->sample_ids[j];
  uint64_t h = adgen_cell(p, id), s = 0;
  int64_t c = adgen_next(p, h, s, -1);
  for (int64_t col = 0; col < p->genes; col++) {
    int want = col == c ? adgen_value(h, c) : 0;
    double got = num_at(x, j * p->genes + col);
    if (got != want) {
      bad(run, b, epoch, id,
          "column %" PRId64 " of its dense row of X: expected %d, got %.17g",
          col, want, got);
      return 1;
    }
    if (col == c)
      c = adgen_next(p, h, ++s, c);
  }
  return 0;
}

/* Cell hash h's n_counts, as the writer stores it (float32 of the sum). */
static float row_sum(const adgen_params *p, uint64_t h) {
  int64_t sum = 0;
  uint64_t s = 0;
  for (int64_t c = adgen_next(p, h, s, -1); c < p->genes;
       c = adgen_next(p, h, ++s, c))
    sum += adgen_value(h, c);
  return (float)sum;
}

static void check_obs(const setup *su, const ferry_batch *b, int64_t j,
                      int64_t epoch, epoch_run *run) {
  int64_t id = b->sample_ids[j];
  uint64_t h = adgen_cell(&su->ad, id);
  if (su->ad_codes >= 0) {
    double got = num_at(&b->vars[su->ad_codes], j);
    int want = adgen_code(&su->ad, h);
    if (got != want)
      bad(run, b, epoch, id, "obs/cell_type/codes: expected %d, got %.17g",
          want, got);
  }
  if (su->ad_counts >= 0) {
    double got = num_at(&b->vars[su->ad_counts], j);
    float want = row_sum(&su->ad, h);
    if (got != (double)want)
      bad(run, b, epoch, id, "obs/n_counts: expected %.9g, got %.17g",
          (double)want, got);
  }
}

void verify_anndata_batch(const setup *su, const ferry_batch *b, int64_t epoch,
                          epoch_run *run) {
  const ferry_tensor *ix = su->ad_ix >= 0 ? &b->vars[su->ad_ix] : NULL,
                     *dv = su->ad_dv >= 0 ? &b->vars[su->ad_dv] : NULL,
                     *dx = su->ad_dense >= 0 ? &b->vars[su->ad_dense] : NULL;
  if ((ix && (!ix->offsets || !ix->data)) ||
      (dv && (!dv->offsets || !dv->data)) || (dx && !dx->data)) {
    if (b->size > 0) /* the layout checks report it */
      bad(run, b, epoch, b->sample_ids[0], "X not served as expected");
    return;
  }
  for (int64_t j = 0; j < b->size; j++) {
    int64_t id = b->sample_ids[j];
    if (id < 0 || id >= su->n)
      continue; /* exactly-once reports it */
    run->checked++;
    if ((ix || dv) && check_row(su, ix, dv, b, j, epoch, run))
      continue;
    if (dx && check_dense(su, dx, b, j, epoch, run))
      continue;
    check_obs(su, b, j, epoch, run);
  }
}
