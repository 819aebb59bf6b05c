/*
 * verify_sparse.c - `ferry verify` of a dataset whose variables hold a
 * sparse matrix's rows (an AnnData CSR matrix: M/indices and M/data,
 * ragged with a width; docs/singlecell.md): the check "sparse".
 *
 * Every served row of every matrix: its indices and values the same count
 * (the same offsets), its column indices strictly increasing (a CSR row:
 * sorted, no column twice) and inside [0, width).  A matrix served dense
 * (sparse=dense) has no pair left: nothing to check.  The readers refuse
 * a row that is not so as they read it (backends/anndata.c, decision
 * 0068); this checks the batches as served, after the pipeline.
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int verify_sparse_setup(setup *su) {
  su->nsparse = 0;
  for (int i = 0; i < su->nvars && su->nsparse < VERIFY_MAX_SPARSE; i++) {
    const ferry_var_info *x = &su->vars[i];
    size_t n = strlen(x->name);
    if (!x->ragged || x->width <= 0 || n < 8 ||
        strcmp(x->name + n - 8, "/indices") != 0)
      continue;
    for (int d = 0; d < su->nvars; d++) {
      const ferry_var_info *y = &su->vars[d];
      if (y->ragged && y->width == x->width && strlen(y->name) == n - 3 &&
          !strncmp(y->name, x->name, n - 8) &&
          !strcmp(y->name + n - 8, "/data")) {
        su->sparse_ix[su->nsparse] = i;
        su->sparse_dv[su->nsparse++] = d;
        break;
      }
    }
  }
  return su->nsparse;
}

static int64_t index_at(const ferry_tensor *t, int64_t k) {
  const void *p = t->data;
  switch (t->dtype) {
  case FERRY_INT8: return (int64_t)((const int8_t *)p)[k];
  case FERRY_UINT8: return ((const uint8_t *)p)[k];
  case FERRY_INT16: return ((const int16_t *)p)[k];
  case FERRY_UINT16: return ((const uint16_t *)p)[k];
  case FERRY_INT32: return ((const int32_t *)p)[k];
  case FERRY_UINT32: return ((const uint32_t *)p)[k];
  case FERRY_INT64: return ((const int64_t *)p)[k];
  case FERRY_UINT64: {
    uint64_t u = ((const uint64_t *)p)[k];
    return u > INT64_MAX ? -1 : (int64_t)u;
  }
  default: return -1;
  }
}

static void bad_row(epoch_run *run, const ferry_batch *b, const char *name,
                    int64_t j, const char *what) {
  if (run->sp_bad++ == 0)
    snprintf(run->sp_msg, MSG_LEN,
             "batch %" PRId64 " row %" PRId64 " (sample %" PRId64 ") of %s: %s",
             b->index, j, b->sample_ids[j], name, what);
}

void verify_sparse_batch(const setup *su, const ferry_batch *b,
                         epoch_run *run) {
  for (int s = 0; s < su->nsparse; s++) {
    const ferry_tensor *ti = &b->vars[su->sparse_ix[s]],
                       *td = &b->vars[su->sparse_dv[s]];
    const int64_t w = su->vars[su->sparse_ix[s]].width;
    if (!ti->offsets || !td->offsets || !ti->data) {
      bad_row(run, b, ti->name, 0, "not served as values and offsets");
      continue;
    }
    for (int64_t j = 0; j < b->size; j++) {
      int64_t a = ti->offsets[j], z = ti->offsets[j + 1];
      if (a != td->offsets[j] || z != td->offsets[j + 1]) {
        bad_row(run, b, ti->name, j, "indices and data of different counts");
        continue;
      }
      int64_t prev = -1;
      for (int64_t k = a; k < z; k++) {
        int64_t c = index_at(ti, k);
        if (c < 0 || c >= w) {
          bad_row(run, b, ti->name, j, "a column index outside the matrix");
          break;
        }
        if (c <= prev) {
          bad_row(run, b, ti->name, j,
                  "column indices not increasing (a CSR row is sorted, no "
                  "column twice)");
          break;
        }
        prev = c;
      }
      run->sp_rows++;
      run->sp_values += z - a;
    }
  }
}

void verify_check_sparse(const tool_ctx *ctx, report *rep, const setup *su,
                         int64_t e, epoch_run *r) {
  if (su->nsparse == 0)
    return;
  int64_t bad = verify_sum_i64(r->sp_bad), rows = verify_sum_i64(r->sp_rows),
          values = verify_sum_i64(r->sp_values);
  char msg[MSG_LEN];
  verify_first_message(ctx, r->sp_bad > 0, r->sp_msg, msg);
  if (ctx->rank != 0)
    return;
  if (bad)
    verify_result(rep, CK_SPARSE, RES_FAIL, e,
                  "%" PRId64 " sparse rows malformed; first: %s", bad, msg);
  else
    verify_result(rep, CK_SPARSE, RES_PASS, e,
                  "%" PRId64 " rows of %d sparse matri%s, %" PRId64
                  " values: column indices increasing and inside the "
                  "matrix, indices and data of the same counts",
                  rows, su->nsparse, su->nsparse > 1 ? "ces" : "x", values);
}
