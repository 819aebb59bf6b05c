/*
 * verify_pack.c - `ferry verify` of a loader opened with pack=concat
 * (docs/lm.md): the check "tokens".
 *
 * Every served row (its tokens, segment_ids, positions, loss_mask,
 * cu_seqlens and document_ids, which verify asks for) is checked against
 * itself: a piece of segment_ids is one run of one document (positions
 * counting up by one; a new piece starts a document, except the row's
 * first), padding (segment 0, document -1) only at the end; loss_mask and
 * cu_seqlens as docs/lm.md defines them (the last position's mask with
 * overlap=1 aside: it depends on the next row).  For a corpus written by
 * `ferry gen --format megatron`, token k of document i must be i + k
 * (mod M).  Then over the epoch: each document's served positions are 0,
 * 1, ..., m once each (a count, the largest position and a sum of hashed
 * positions per document, reduced over the ranks: 24 bytes per document
 * on each rank), and the tokens served are the corpus's, but for the
 * packing's dropped tail (tail=partial and pad; drop_last drops whole
 * rows: the documents are checked for repeats only).  A mix draws rows
 * (the sampling check counts them): no token twice, unless a source
 * restarts.
 */
#include "verify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The outputs of pack, in this order (verify asks for all of them). */
enum { O_TOK, O_SEG, O_POS, O_MASK, O_CU, O_DOC, O_N };
static const char *const out_names[O_N] = {"tokens",     "segment_ids",
                                           "positions",  "loss_mask",
                                           "cu_seqlens", "document_ids"};

static const ferry_tensor *var_of(const ferry_batch *b, const char *name) {
  for (int v = 0; v < b->nvars; v++)
    if (!strcmp(b->vars[v].name, name))
      return &b->vars[v];
  return NULL;
}

static uint64_t pos_hash(int64_t p) {
  uint64_t z = (uint64_t)p + UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

int verify_pack_setup(tool_ctx *ctx, ferry_loader *L, setup *su) {
  if (ferry_pack_stats(L, 0, &su->pi) != 0)
    return 0;
  su->pack = 1;
  int have = 0;
  for (int v = 0; v < su->nvars; v++)
    for (int k = 0; k < O_N; k++)
      have += !strcmp(su->vars[v].name, out_names[k]);
  su->pack_all = have == O_N;
  char buf[64];
  su->mask_first =
      !strcmp(tool_option(ctx, "mask_first", buf, sizeof buf), "yes");
  tool_option(ctx, "pack", buf, sizeof buf);
  su->pack_fit = !strcmp(buf, "first_fit") || !strcmp(buf, "best_fit");
  su->pack_mix = ferry_mix_count(L) > 0;
  for (int i = 0; i < ferry_mix_count(L); i++) {
    ferry_mix_info x;
    if (ferry_mix_source(L, i, &x) == 0 && !strcmp(x.exhaust, "restart"))
      su->pack_restart = 1;
  }
  return 1;
}

static void bad_row(epoch_run *run, const ferry_batch *b, int64_t j,
                    const char *what, int64_t at) {
  if (run->pk_bad++ == 0)
    snprintf(run->pk_msg, MSG_LEN,
             "batch %" PRId64 " row %" PRId64 " (sample %" PRId64
             "): %s at position %" PRId64,
             b->index, j, b->sample_ids[j], what, at);
}

/* One row's outputs against themselves, and its documents' positions
 * counted. */
static void check_row(const setup *su, const ferry_batch *b,
                      const ferry_tensor *const *t, int64_t j, epoch_run *run) {
  const int64_t L = su->pi.seq_len;
  const ferry_tensor *tt = t[O_TOK];
  const int32_t *seg = (const int32_t *)t[O_SEG]->data + j * L,
                *pos = (const int32_t *)t[O_POS]->data + j * L,
                *cu = (const int32_t *)t[O_CU]->data + j * (L + 1);
  const uint8_t *mask = (const uint8_t *)t[O_MASK]->data + j * L;
  const int64_t *doc = (const int64_t *)t[O_DOC]->data + j * L;
  const unsigned char *tok =
      (const unsigned char *)tt->data + (size_t)j * tt->row_bytes;
  const size_t el = ferry_dtype_size(tt->dtype);
  int64_t have = 0;
  while (have < L && seg[have])
    have++;
  for (int64_t i = 0; i < L; i++) {
    if (i >= have) {
      if (seg[i] || pos[i] || doc[i] != -1 || mask[i]) {
        bad_row(run, b, j, "padding with a document", i);
        return;
      }
      continue;
    }
    if (doc[i] < 0 || doc[i] >= su->pi.documents || pos[i] < 0) {
      bad_row(run, b, j, "a document index out of range", i);
      return;
    }
    /* a new piece inside a row starts a document (first_fit: or is a
     * piece of a longer one, cut every seq_len) */
    if (i == 0 ? seg[0] != 1
        : seg[i] == seg[i - 1]
            ? doc[i] != doc[i - 1] || pos[i] != pos[i - 1] + 1
            : seg[i] != seg[i - 1] + 1 ||
                  (su->pack_fit ? pos[i] % L != 0 : pos[i] != 0)) {
      bad_row(run, b, j, "segment_ids disagree with the documents", i);
      return;
    }
    int nreal = i + 1 < have, nfirst = nreal && seg[i + 1] != seg[i];
    if (i + 1 < L || !su->pi.overlap) {
      int want = nreal && !(su->mask_first && nfirst);
      if (mask[i] != want) {
        bad_row(run, b, j, "loss_mask", i);
        return;
      }
    }
    if (su->content) { /* element k of document d is (d + k) mod M:
                        * element 0 of row d + k */
      unsigned char want[8];
      tool_fill_rows(tt->dtype, doc[i] + pos[i], 1, 1, want);
      if (memcmp(tok + (size_t)i * el, want, el) != 0 &&
          run->pk_content_bad++ == 0)
        snprintf(run->pk_content_msg, MSG_LEN,
                 "batch %" PRId64 " row %" PRId64 " position %" PRId64
                 ": token %" PRId32 " of document %" PRId64
                 " differs from what ferry gen wrote",
                 b->index, j, i, pos[i], doc[i]);
    }
  }
  int64_t k = 1;
  int cu_ok = cu[0] == 0;
  for (int64_t i = 1; i < L; i++)
    if (seg[i] != seg[i - 1])
      cu_ok &= cu[k++] == i;
  for (; k <= L; k++)
    cu_ok &= cu[k] == L;
  if (!cu_ok) {
    bad_row(run, b, j, "cu_seqlens disagrees with segment_ids", 0);
    return;
  }
  for (int64_t i = 0; i < have; i++) {
    int64_t d = doc[i];
    run->pk_cnt[d]++;
    run->pk_hash[d] += pos_hash(pos[i]);
    if (pos[i] > run->pk_max[d])
      run->pk_max[d] = pos[i];
  }
  run->pk_tokens += have;
}

int verify_pack_batch(const setup *su, const ferry_batch *b, epoch_run *run) {
  if (!su->pack_all)
    return 0;
  if (!run->pk_cnt) {
    size_t n = (size_t)(su->pi.documents ? su->pi.documents : 1);
    run->pk_cnt = calloc(n, sizeof *run->pk_cnt);
    run->pk_max = malloc(n * sizeof *run->pk_max);
    run->pk_hash = calloc(n, sizeof *run->pk_hash);
    if (!run->pk_cnt || !run->pk_max || !run->pk_hash)
      return -1;
    for (size_t i = 0; i < n; i++)
      run->pk_max[i] = -1;
  }
  const ferry_tensor *t[O_N]; /* looked up once a batch */
  for (int k = 0; k < O_N; k++)
    if (!(t[k] = var_of(b, out_names[k]))) {
      if (run->pk_bad++ == 0)
        snprintf(run->pk_msg, MSG_LEN,
                 "batch %" PRId64 ": no variable '%s' in the batch", b->index,
                 out_names[k]);
      return 0;
    }
  for (int64_t j = 0; j < b->size; j++)
    if (!b->padded[j]) /* a repeat (tail=pad) was served once already */
      check_row(su, b, t, j, run);
  return 0;
}

void verify_pack_free(epoch_run *r) {
  free(r->pk_cnt);
  free(r->pk_max);
  free(r->pk_hash);
}

/* The tokens check of epoch e.  COLLECTIVE. */
void verify_check_tokens(const tool_ctx *ctx, report *rep, const setup *su,
                         int64_t e, epoch_run *r) {
  if (!su->pack)
    return;
  if (!su->pack_all) {
    if (ctx->rank == 0)
      verify_result(rep, CK_TOKENS, RES_SKIP, e,
                    "vars does not select every output of pack (tokens, "
                    "segment_ids, positions, loss_mask, cu_seqlens, "
                    "document_ids)");
    return;
  }
  const int64_t D = su->pi.documents;
  int64_t *cnt = NULL, *mx = NULL;
  uint64_t *h = NULL;
  if (ctx->rank == 0) {
    cnt = calloc((size_t)(D ? D : 1), sizeof *cnt);
    mx = calloc((size_t)(D ? D : 1), sizeof *mx);
    h = calloc((size_t)(D ? D : 1), sizeof *h);
    if (!cnt || !mx || !h)
      tool_oom(ctx, (size_t)D * 24, "the documents' counts of %s", ctx->target);
  }
  int have = r->pk_cnt != NULL, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int64_t *zc = NULL, *zm = NULL;
  uint64_t *zh = NULL;
  if (!have) { /* a rank that served no row */
    zc = calloc((size_t)(D ? D : 1), sizeof *zc);
    zm = malloc((size_t)(D ? D : 1) * sizeof *zm);
    zh = calloc((size_t)(D ? D : 1), sizeof *zh);
    if (!zc || !zm || !zh)
      tool_oom(ctx, (size_t)D * 24, "the documents' counts of %s", ctx->target);
    for (int64_t i = 0; i < D; i++)
      zm[i] = -1;
  }
  /* in pieces: MPI counts are int */
  const int64_t step = (int64_t)1 << 24;
  for (int64_t a = 0; a < D; a += step) {
    int n = (int)(D - a < step ? D - a : step);
    MPI_Reduce((have ? r->pk_cnt : zc) + a, cnt ? cnt + a : NULL, n,
               MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce((have ? r->pk_max : zm) + a, mx ? mx + a : NULL, n, MPI_INT64_T,
               MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce((have ? r->pk_hash : zh) + a, h ? h + a : NULL, n, MPI_UINT64_T,
               MPI_SUM, 0, MPI_COMM_WORLD);
  }
  free(zc);
  free(zm);
  free(zh);
  (void)all;
  int64_t bad = verify_sum_i64(r->pk_bad),
          cbad = verify_sum_i64(r->pk_content_bad),
          tokens = verify_sum_i64(r->pk_tokens);
  char msg[MSG_LEN], cmsg[MSG_LEN];
  verify_first_message(ctx, r->pk_bad > 0, r->pk_msg, msg);
  verify_first_message(ctx, r->pk_content_bad > 0, r->pk_content_msg, cmsg);
  if (ctx->rank != 0)
    return;
  int64_t docs_bad = -1, nb = 0;
  for (int64_t d = 0; d < D; d++) {
    if (!cnt[d])
      continue;
    uint64_t want = 0;
    for (int64_t p = 0; p <= mx[d]; p++)
      want += pos_hash(p);
    int ok = su->pack_restart ? 1
             : su->tail == TAIL_DROP || su->pack_mix
                 ? cnt[d] <= mx[d] + 1
                 : cnt[d] == mx[d] + 1 && h[d] == want;
    if (!ok && nb++ == 0)
      docs_bad = d;
  }
  int64_t expect = su->pi.tokens - su->pi.dropped;
  int count_ok = su->pack_restart                        ? 1
                 : su->tail == TAIL_DROP || su->pack_mix ? tokens <= expect
                                                         : tokens == expect;
  if (bad)
    verify_result(rep, CK_TOKENS, RES_FAIL, e,
                  "%" PRId64 " rows disagree with their own tokens; first: %s",
                  bad, msg);
  else if (cbad)
    verify_result(rep, CK_TOKENS, RES_FAIL, e,
                  "%" PRId64 " tokens differ from the corpus; first: %s", cbad,
                  cmsg);
  else if (nb)
    verify_result(rep, CK_TOKENS, RES_FAIL, e,
                  "%" PRId64 " documents' tokens not served once each (first: "
                  "document %" PRId64 ", %" PRId64
                  " tokens up to position %" PRId64 ")",
                  nb, docs_bad, cnt[docs_bad], mx[docs_bad]);
  else if (!count_ok)
    verify_result(rep, CK_TOKENS, RES_FAIL, e,
                  "%" PRId64 " tokens served, the corpus has %" PRId64
                  " (%" PRId64 " dropped by the packing's tail)",
                  tokens, su->pi.tokens, su->pi.dropped);
  else
    verify_result(
        rep, CK_TOKENS, RES_PASS, e,
        "%" PRId64 " tokens of %" PRId64 " documents in %" PRId64
        " rows, %s; segment_ids, positions, loss_mask, cu_seqlens "
        "and document_ids agree with them%s",
        tokens, su->pi.documents, su->pi.rows,
        su->pack_restart ? "a mix's draws (a source restarts: tokens repeat)"
        : su->pack_mix   ? "a mix's draws, no token twice"
        : su->tail == TAIL_DROP ? "each once (tail=drop_last: rows dropped)"
                                : "each once",
        su->content ? "; every token is ferry gen's" : "");
  free(cnt);
  free(mx);
  free(h);
}
