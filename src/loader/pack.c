/*
 * loader/pack.c - pack=concat (issue 26, docs/lm.md, decision 0051): the
 * rows of seq_len tokens cut from a token corpus are the samples of a
 * virtual dataset, so the plan shuffles, deals, pads and resumes them as
 * any dataset's samples.
 *
 * ferry__pack_wrap runs on every rank once the corpus's manifest is shared
 * (a pure function of that manifest and the options, which every rank
 * checked equal): it moves the corpus's manifest to m.inner and makes m the
 * virtual one -- backend "pack", one part of `rows` samples, the outputs
 * as dense variables:
 *
 *   tokens       [L + overlap]  the corpus's dtype (and byte order)
 *   segment_ids  [L]  int32     1, 2, ... per document piece; 0 padding
 *   positions    [L]  int32     index in the document
 *   loss_mask    [L]  uint8     1 where position i predicts token i + 1
 *   cu_seqlens   [L + 1] int32  the row's piece bounds, padded with L
 *   document_ids [L]  int64     the corpus's document index; -1 padding
 *                               (only when vars names it: ferry verify)
 *
 * (plan/pack.h defines each), selected by `vars`.  Every variable's record
 * holds the packing's parameters and the corpus manifest's hash, so the
 * virtual manifest's hash -- in the plan's certificate and the checkpoint
 * -- changes with any of them.  The manifest is never packed or sent.
 *
 * ferry__pack_backend reads it: io_open (per epoch, io_params.epoch) makes
 * the epoch's stream (plan/pack.c: the corpus's runs of pack_chunk
 * documents in a seeded order) and opens the corpus's own backend; io_read
 * of tokens reads the stream's range of the rows asked for -- whole
 * documents straight into the rows, a document cut by the range's ends
 * through a scratch buffer -- and spreads it into rows of L + overlap;
 * the boundary variables are computed from the corpus's offsets, no read.
 */
#include "config.h"
#include "plan/pack.h"
#include "backends/backend.h"
#include "backends/mixrec.h"
#include "backends/toolkit.h"
#include "core/options.h"
#include "dataset/dataset.h"
#include "dataset/mix.h"
#include "loader/cache.h"
#include "loader/loader.h"
#include "util/dtype.h"
#include "util/record.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { K_TOKENS = 0, K_SEG, K_POS, K_MASK, K_CU, K_DOC, K_N };
static const char *const out_names[K_N] = {"tokens",     "segment_ids",
                                           "positions",  "loss_mask",
                                           "cu_seqlens", "document_ids"};
/* the outputs without vars: document_ids only when asked for */
#define PACK_DEFAULT_VARS "tokens,segment_ids,positions,loss_mask,cu_seqlens"

/* io=mmap: the mapped corpus's pages are dropped from the resident set
 * after this many bytes were copied from them. */
#define PACK_DROP_BYTES ((size_t)32 << 20)

/* pack=first_fit or best_fit: whole documents into rows. */
#define FIT_MODE(m)                                                            \
  ((m) == FERRY__PACK_FIRST_FIT || (m) == FERRY__PACK_BEST_FIT)
/* best_fit keeps a count per possible room (0..seq_len): at most this. */
#define PACK_BEST_MAX_L ((int64_t)1 << 20)

/* Auto pack_chunk: runs of documents kept below this count (a corpus, or
 * each source of a mix of up to 4); a mix of more sources shares out
 * PACK_MAX_MIX_CHUNKS among them. */
#define PACK_MAX_CHUNKS ((int64_t)1 << 18)
#define PACK_MAX_MIX_CHUNKS ((int64_t)1 << 20)

/* The record (every variable's): these words, then the variable's kind. */
enum {
  R_VERSION = 0,
  R_L,
  R_OVERLAP,
  R_TAIL,
  R_MASK_FIRST,
  R_VAR,
  R_CHUNK_DOCS,
  R_NCHUNKS,
  R_TOKENS,
  R_ROWS,
  R_INNER_HASH,
  R_MODE,     /* FERRY__PACK_CONCAT or FIRST_FIT                       */
  R_WINDOW,   /* first_fit: documents of a window                       */
  R_OVERFLOW, /* first_fit: FERRY__OVERFLOW_*                           */
  R_NWIN,     /* first_fit: windows (their rows follow the words)       */
  R_DROPPED,  /* first_fit: tokens of the documents dropped             */
  R_SPLIT,    /* first_fit: documents cut into pieces                   */
  R_KIND,
  R_N
};
#define PACK_RECORD_VERSION 2

/* The words of variable v's record in part p of the view m (the first
 * R_N of it): 0, or the reader's failure (a record too short). */
static int rec_words(const ferry__manifest *m, int64_t p, int v, int64_t w[R_N],
                     ferry__rec_r *r) {
  ferry__rec_r_init(r, m->parts[p].rec[v].p, m->parts[p].rec[v].len);
  ferry__rec_get_u64s(r, w, R_N);
  return r->rc;
}

/* A packed variable of this kind the workers make straight into the batch
 * (pack=concat, not shuffle=global: the epoch's stream is read-only while
 * they run): the boundary outputs, and with io=mmap over a corpus whose
 * backend maps (maps) the tokens too, copied once from the mapped corpus
 * into the batch; the I/O thread reads the others. */
static int made_by_workers(int64_t mode, int64_t kind, const ferry_options *o,
                           int maps) {
  return mode == FERRY__PACK_CONCAT && o &&
         o->shuffle != FERRY__SHUFFLE_GLOBAL &&
         (kind != K_TOKENS || (o->io == FERRY__IO_MMAP && maps));
}

/* 1 when the corpus of the view m (every source of a mix) is read by a
 * backend that maps. */
static int corpus_maps(const ferry__manifest *m) {
  const int64_t n = m->srcs ? m->nsrcs : 1;
  for (int64_t i = 0; i < n; i++) {
    const ferry__manifest *in = m->srcs ? &m->srcs[i] : m->inner;
    const ferry__backend *be = in ? ferry__backend_find(in->backend) : NULL;
    if (!be || !be->io_map)
      return 0;
  }
  return 1;
}

/* ---- The virtual manifest (every rank) ------------------------------- */

/* The corpus's token variable: pack_var, or its only ragged one. */
static int token_var(const ferry__manifest *in, const char *want,
                     ferry__err *err) {
  int found = -1, nragged = 0;
  for (int v = 0; v < in->nvars; v++) {
    if (in->vars[v].ragged)
      nragged++;
    if (want && *want ? !strcmp(in->vars[v].name, want)
                      : in->vars[v].ragged && found < 0)
      found = v;
  }
  if (want && *want && found < 0)
    return ferry__seterr(err, FERRY_EINVAL,
                         "pack: dataset %s has no variable '%s' (option "
                         "pack_var)",
                         in->spec, want);
  if (!(want && *want) && nragged != 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "pack: dataset %s has %d ragged variables; packing "
                         "needs one token variable (name it with pack_var)",
                         in->spec, nragged);
  const ferry__var *x = &in->vars[found];
  if (!x->ragged || x->row_ndim != 0 || !ferry__dtype_is_int(x->dtype))
    return ferry__seterr(err, FERRY_EINVAL,
                         "pack: variable '%s' of dataset %s is %s %s with "
                         "%d inner dimensions; packing needs a ragged "
                         "integer variable of one token per value (a token "
                         "corpus: Megatron .bin/.idx, an Arrow or Parquet "
                         "list column)",
                         x->name, in->spec, x->ragged ? "ragged" : "dense",
                         ferry_dtype_name(x->dtype), x->row_ndim);
  return found;
}

/* What packing cannot serve with: refused at ferry_open, on every rank. */
static int check_options(const ferry_options *o, const ferry__manifest *in,
                         ferry__err *err) {
  const char *what = NULL;
  if (o->weights && *o->weights)
    what = "weights";
  else if (o->balance && *o->balance)
    what = "balance";
  else if (o->num_draws && !ferry__mix_is_manifest(in))
    what = "num_draws";
  else if (o->max_tokens)
    what = "max_tokens";
  else if (o->pad && *o->pad && strcmp(o->pad, "none") != 0)
    what = "pad";
  else if (o->pack == FERRY__PACK_BEST_FIT && o->seq_len > PACK_BEST_MAX_L)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "pack=best_fit with seq_len %lld (dataset %s): at "
                         "most 2^20 (a count per possible room); use "
                         "first_fit",
                         (long long)o->seq_len, in->spec);
  else if (FIT_MODE(o->pack) && o->overlap)
    return ferry__seterr(
        err, FERRY_EINVAL,
        "pack=%s with overlap=1 (dataset %s): a row "
        "holds whole documents, not the stream's next "
        "token; take the labels inside the row "
        "(tokens[:, 1:]) or use pack=concat",
        o->pack == FERRY__PACK_BEST_FIT ? "best_fit" : "first_fit", in->spec);
  if (what)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "pack with option '%s' (dataset %s): packed "
                         "rows are dense samples of seq_len tokens; %s",
                         what, in->spec,
                         !strcmp(what, "pad") || !strcmp(what, "max_tokens")
                             ? "rows need no padding or token budget"
                             : "sampled packing is not built yet");
  return 0;
}

/* The chunks of the corpus: runs of cd documents of one part. */
static int64_t count_chunks(const ferry__manifest *in, int64_t cd) {
  int64_t n = 0;
  for (int64_t p = 0; p < in->nparts; p++)
    n += (in->parts[p].num_samples + cd - 1) / cd;
  return n;
}

/* Documents per run of the corpus in, one of nsrc sources (1: a corpus
 * alone): pack_chunk, or auto (0): one document while that keeps the runs
 * below the bound, as many as keep them there beyond. */
static int64_t run_docs(const ferry__manifest *in, const ferry_options *o,
                        int64_t nsrc) {
  if (o->pack_chunk)
    return o->pack_chunk;
  int64_t lim = nsrc > 4 ? PACK_MAX_MIX_CHUNKS / nsrc : PACK_MAX_CHUNKS;
  int64_t N = in->num_samples;
  return N <= lim ? 1 : (N + lim - 1) / lim;
}

static void free_virtual(ferry__manifest *vm) {
  vm->inner = NULL; /* never the caller's */
  ferry__manifest_free(vm);
}

/* The view's aux (ferry__manifest.aux): for each of n sources (1: a
 * corpus alone), the tokens of each of its nch runs of documents, made
 * once at open (run_tokens) so that no epoch's stream reads the offsets
 * again. */
typedef struct pack_runs {
  int64_t n;
  int64_t *nch;
  int64_t **tok;
} pack_runs;

static void runs_free(void *p) {
  pack_runs *pr = p;
  for (int64_t i = 0; pr && pr->tok && i < pr->n; i++)
    free(pr->tok[i]);
  if (pr) {
    free(pr->tok);
    free(pr->nch);
  }
  free(pr);
}

/* pack=first_fit: what the fit of every window gave (fit_all). */
typedef struct fit_info {
  int64_t nwin;
  int64_t *row0; /* [nwin + 1] the first row of each window */
  int64_t dropped, split;
} fit_info;

static int64_t corpus_tokens(const ferry__manifest *in, int tv) {
  int64_t T = 0;
  for (int64_t p = 0; p < in->nparts; p++) {
    const ferry__part *pt = &in->parts[p];
    T += pt->roff[tv][pt->num_samples];
  }
  return T;
}

/* The record's words that the options and the corpus decide (not ROWS,
 * NWIN, DROPPED, SPLIT, KIND): the view's (make_virtual) and those
 * first_fit's packing at open reads (fit_all). */
static void base_words(const ferry__manifest *in, const ferry_options *o,
                       int tv, int64_t cd, int64_t w[R_N]) {
  memset(w, 0, R_N * sizeof *w);
  w[R_VERSION] = PACK_RECORD_VERSION;
  w[R_L] = o->seq_len;
  w[R_OVERLAP] = o->overlap;
  w[R_TAIL] = o->tail;
  w[R_MASK_FIRST] = o->mask_first;
  w[R_VAR] = tv;
  w[R_CHUNK_DOCS] = cd;
  w[R_NCHUNKS] = count_chunks(in, cd);
  w[R_TOKENS] = corpus_tokens(in, tv);
  w[R_INNER_HASH] = (int64_t)in->hash;
  w[R_MODE] = o->pack;
  w[R_WINDOW] = o->pack_window;
  w[R_OVERFLOW] = o->overflow;
}

/* The view of the corpus in (one part of its rows) into vm; hash: the
 * record's R_INNER_HASH (the corpus's, or the whole mix's). */
static int make_virtual(const ferry__manifest *in, const ferry_options *o,
                        int tv, int64_t cd_in, const fit_info *fi,
                        uint64_t hash, ferry__manifest *vm, ferry__err *err) {
  const ferry__var *x = &in->vars[tv];
  const int64_t L = o->seq_len, ov = o->overlap;
  int64_t words[R_N];
  base_words(in, o, tv, cd_in, words);
  words[R_INNER_HASH] = (int64_t)hash;
  const int64_t cd = words[R_CHUNK_DOCS], T = words[R_TOKENS];
  int64_t full = T > ov ? (T - ov) / L : 0, left = T - full * L;
  int64_t rows = fi ? fi->row0[fi->nwin]
                    : full + (o->tail != FERRY__TAIL_DROP && left > ov);
  if (rows < 1)
    return ferry__seterr(err, FERRY_EINVAL,
                         "pack: dataset %s holds %lld tokens in '%s': no row "
                         "of seq_len %lld%s (tail=%s)",
                         in->spec, (long long)T, x->name, (long long)L,
                         ov ? " + 1" : "",
                         o->tail == FERRY__TAIL_DROP ? "drop_last" : "pad");
  memset(vm, 0, sizeof *vm);
  vm->backend = strdup("pack");
  vm->spec = strdup(in->spec);
  vm->nvars = K_N;
  vm->vars = calloc(K_N, sizeof *vm->vars);
  vm->nparts = 1;
  vm->parts = calloc(1, sizeof *vm->parts);
  vm->num_samples = rows;
  vm->record_version = PACK_RECORD_VERSION;
  int rc = 0;
  if (!vm->backend || !vm->spec || !vm->vars || !vm->parts)
    rc = FERRY_ENOMEM;
  ferry__part *pt = vm->parts;
  if (!rc) {
    pt->num_samples = rows;
    pt->paths = calloc(K_N, sizeof *pt->paths);
    pt->data_offset = calloc(K_N, sizeof *pt->data_offset);
    pt->file_size = calloc(K_N, sizeof *pt->file_size);
    pt->rec = calloc(K_N, sizeof *pt->rec);
    if (!pt->paths || !pt->data_offset || !pt->file_size || !pt->rec)
      rc = FERRY_ENOMEM;
  }
  words[R_ROWS] = rows;
  words[R_NWIN] = fi ? fi->nwin : 0;
  words[R_DROPPED] = fi ? fi->dropped : 0;
  words[R_SPLIT] = fi ? fi->split : 0;
  for (int k = 0; !rc && k < K_N; k++) {
    ferry__var *v = &vm->vars[k];
    v->name = strdup(out_names[k]);
    v->row_ndim = 1;
    v->dtype = k == K_TOKENS ? x->dtype
               : k == K_MASK ? FERRY_UINT8
               : k == K_DOC  ? FERRY_INT64
                             : FERRY_INT32;
    v->swapped = k == K_TOKENS ? x->swapped : 0;
    v->row_shape[0] = k == K_TOKENS ? L + ov : k == K_CU ? L + 1 : L;
    v->row_bytes = (size_t)v->row_shape[0] * ferry_dtype_size(v->dtype);
    pt->paths[k] = strdup(in->spec);
    words[R_KIND] = k;
    ferry__rec_w w;
    ferry__rec_w_init(&w);
    ferry__rec_put_u64s(&w, words, R_N);
    if (fi)
      ferry__rec_put_u64s(&w, fi->row0, (size_t)fi->nwin + 1);
    void *b = NULL;
    size_t n = 0;
    if (!v->name || !pt->paths[k] || ferry__rec_finish(&w, &b, &n) < 0)
      rc = FERRY_ENOMEM;
    pt->rec[k].p = b;
    pt->rec[k].len = n;
  }
  char notes[512];
  if (fi)
    snprintf(notes, sizeof notes,
             "packed (pack=%s): %lld documents of '%s', %lld tokens, "
             "in %lld rows of seq_len %lld, %s over %lld windows of "
             "%lld documents; longer documents %s: %lld %s",
             o->pack == FERRY__PACK_BEST_FIT ? "best_fit" : "first_fit",
             (long long)in->num_samples, x->name, (long long)T, (long long)rows,
             (long long)L,
             o->pack == FERRY__PACK_BEST_FIT ? "best fit" : "first fit",
             (long long)fi->nwin, (long long)o->pack_window,
             o->overflow == FERRY__OVERFLOW_DROP ? "dropped" : "split",
             (long long)(o->overflow == FERRY__OVERFLOW_DROP ? fi->dropped
                                                             : fi->split),
             o->overflow == FERRY__OVERFLOW_DROP ? "tokens" : "documents");
  else
    snprintf(notes, sizeof notes,
             "packed (pack=concat): %lld documents of '%s', %lld tokens, in "
             "%lld rows of seq_len %lld%s; %lld runs of %lld documents "
             "shuffled",
             (long long)in->num_samples, x->name, (long long)T, (long long)rows,
             (long long)L, ov ? " + 1 (overlap)" : "",
             (long long)words[R_NCHUNKS], (long long)cd);
  if (!rc && !(vm->notes = strdup(notes)))
    rc = FERRY_ENOMEM;
  if (rc) {
    free_virtual(vm);
    return ferry__oom(err, -1, (size_t)K_N * 256,
                      "the packed view of dataset %s", in->spec);
  }
  return 0;
}

static int fit_all(ferry_loader *L, const ferry__manifest *in, int tv,
                   int64_t cd, const int64_t *runs, fit_info *fi,
                   ferry__err *err);

/* Source p of the mix: its own manifest, unpacked from its record into
 * out, and the index there of the mix's variable tv (*stv). */
static int src_unpack(const ferry__manifest *mix, int64_t p, int tv,
                      ferry__manifest *out, int *stv, ferry__err *err) {
  const ferry__part *pt = &mix->parts[p];
  ferry__mix_record r;
  int rc = ferry__mix_part_record(pt, &r, err);
  if (rc < 0)
    return rc;
  rc = ferry__manifest_unpack(r.sub, r.sublen, out, err);
  int k = 0;
  while (k < r.ncommon && strcmp(r.common[k], mix->vars[tv].name) != 0)
    k++;
  if (!rc && (k >= r.ncommon || k >= out->nvars))
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "pack: mix source %lld (%s): variable '%s' is not in "
                       "its record",
                       (long long)p, pt->paths[0], mix->vars[tv].name);
  *stv = k;
  ferry__mix_record_free(&r);
  return rc;
}

/* The views one[0..S) (one part each: the rows of each source) made one
 * view of S parts into vm; one[]'s parts and variables move there. */
static int merge_views(const ferry__manifest *mix, int tv, ferry__manifest *one,
                       int64_t S, ferry__manifest *vm, ferry__err *err) {
  memset(vm, 0, sizeof *vm);
  vm->backend = strdup("pack");
  vm->spec = strdup(mix->spec);
  vm->parts = calloc((size_t)S, sizeof *vm->parts);
  vm->record_version = PACK_RECORD_VERSION;
  int64_t rows = 0, docs = 0;
  for (int64_t p = 0; vm->parts && p < S; p++) {
    vm->parts[p] = one[p].parts[0];
    memset(&one[p].parts[0], 0, sizeof one[p].parts[0]);
    vm->parts[p].first_sample = rows;
    rows += vm->parts[p].num_samples;
    docs += mix->parts[p].num_samples;
    vm->nparts = p + 1;
  }
  vm->num_samples = rows;
  vm->vars = one[0].vars; /* every source's alike (the mix checked) */
  vm->nvars = one[0].nvars;
  one[0].vars = NULL;
  one[0].nvars = 0;
  /* the sources' readers give native byte order (mixread.c's rule) */
  for (int k = 0; k < vm->nvars; k++)
    vm->vars[k].swapped = 0;
  char notes[512];
  snprintf(notes, sizeof notes,
           "packed: a mix of %lld sources, %lld documents of '%s', each "
           "source packed into its own rows (%lld in all); the mix draws "
           "rows in its proportions",
           (long long)S, (long long)docs, mix->vars[tv].name, (long long)rows);
  if (!vm->backend || !vm->spec || !vm->parts || !vm->vars ||
      !(vm->notes = strdup(notes))) {
    free_virtual(vm);
    return ferry__oom(err, -1, (size_t)S * sizeof *vm->parts,
                      "the packed view of %s", mix->spec);
  }
  return 0;
}

/* The tokens of each of the nch runs of cd documents of in (token
 * variable tv) into *out (malloc'd [nch]): the ranks share the runs (rank
 * r counts the r-th slice), an all-gather gives every rank all of them, so
 * no rank reads the offsets whole (10^8 documents: 800 MB of offsets, 2^18
 * runs).  COLLECTIVE over L->comm. */
static int run_tokens(ferry_loader *L, const ferry__manifest *in, int tv,
                      int64_t cd, int64_t nch, int64_t **out, ferry__err *err) {
  const int P = L->size, me = L->rank;
  const int split = P > 1 && nch < INT_MAX; /* MPI counts are int */
  int64_t *tok = malloc((size_t)(nch ? nch : 1) * sizeof *tok);
  int *cnt = malloc((size_t)P * sizeof *cnt), *dsp = malloc((size_t)P * 4);
  int rc = 0;
  if (!tok || !cnt || !dsp)
    rc = ferry__oom(err, me, (size_t)nch * 8 + (size_t)P * 8,
                    "the runs of documents of %s", in->spec);
  const int64_t lo = split ? nch * me / P : 0;
  const int64_t hi = split ? nch * (me + 1) / P : nch;
  for (int64_t q = 0, c = 0; !rc && q < in->nparts && c < hi; q++) {
    const ferry__part *pt = &in->parts[q];
    const int64_t pc = (pt->num_samples + cd - 1) / cd;
    const int64_t j0 = lo > c ? lo - c : 0, j1 = hi - c < pc ? hi - c : pc;
    const int64_t *off = pt->roff[tv];
    for (int64_t j = j0, kept = j0 * cd; j < j1; j++) {
      int64_t d = j * cd,
              e = d + cd < pt->num_samples ? d + cd : pt->num_samples;
      tok[c + j] = off[e] - off[d];
      if (e - kept >= FERRY__TRIM_STEP || j + 1 == j1) { /* pages go */
        ferry__manifest_trim(in, off + kept, off + e);
        kept = e;
      }
    }
    c += pc;
  }
  rc = ferry__agree(L->comm, me, rc, err);
  if (!rc && split) {
    for (int r = 0; r < P; r++) {
      dsp[r] = (int)(nch * r / P);
      cnt[r] = (int)(nch * (r + 1) / P) - dsp[r];
    }
    if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, tok, cnt, dsp,
                       MPI_INT64_T, L->comm) != MPI_SUCCESS)
      rc = ferry__seterr_on(err, me, FERRY_EMPI,
                            "pack: the all-gather of the runs' tokens of %s "
                            "failed",
                            in->spec);
  }
  free(cnt);
  free(dsp);
  if (rc) {
    free(tok);
    return rc;
  }
  *out = tok;
  return 0;
}

/* Sources in[0..S) (a corpus alone, or a mix's), each one's token
 * variable stv[p]: the tokens of its runs (into pr), first_fit's packing,
 * its view into one[p] (hash: the records' R_INNER_HASH).  COLLECTIVE over
 * L->comm: every step's outcome agreed. */
static int pack_sources(ferry_loader *L, const ferry__manifest *in,
                        const int *stv, int64_t S, uint64_t hash,
                        ferry__manifest *one, pack_runs *pr, ferry__err *err) {
  const ferry_options *o = L->opts;
  int rc = 0;
  for (int64_t p = 0; !rc && p < S; p++) {
    const int64_t cd = run_docs(&in[p], o, S), nch = count_chunks(&in[p], cd);
    pr->nch[p] = nch;
    rc = run_tokens(L, &in[p], stv[p], cd, nch, &pr->tok[p], err);
    fit_info fi = {0};
    if (!rc && FIT_MODE(o->pack))
      rc = fit_all(L, &in[p], stv[p], cd, pr->tok[p], &fi, err);
    if (!rc)
      rc = ferry__agree(L->comm, L->rank,
                        make_virtual(&in[p], o, stv[p], cd,
                                     FIT_MODE(o->pack) ? &fi : NULL, hash,
                                     &one[p], err),
                        err);
    free(fi.row0);
  }
  return rc;
}

int ferry__pack_wrap(ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  if (o->pack == FERRY__PACK_NONE)
    return 0;
  int rc = check_options(o, &L->m, err);
  if (rc)
    return rc;
  int tv = token_var(&L->m, o->pack_var, err);
  if (tv < 0)
    return tv;
  /* a mix: each source unpacked from its record and packed alone, the
   * rows of source p part p of the view (decision 0053) */
  const int mixed = ferry__mix_is_manifest(&L->m);
  const int64_t S = mixed ? L->m.nparts : 1;
  ferry__manifest vm, *srcs = mixed ? calloc((size_t)S, sizeof *srcs) : NULL;
  ferry__manifest *one = calloc((size_t)S, sizeof *one);
  int *stv = calloc((size_t)S, sizeof *stv);
  pack_runs *pr = calloc(1, sizeof *pr);
  if (pr) {
    pr->n = S;
    pr->nch = calloc((size_t)S, sizeof *pr->nch);
    pr->tok = calloc((size_t)S, sizeof *pr->tok);
  }
  if ((mixed && !srcs) || !one || !stv || !pr || !pr->nch || !pr->tok)
    rc = ferry__oom(err, L->rank, (size_t)S * (2 * sizeof *one + 32),
                    "the packed view of %s", L->m.spec);
  for (int64_t p = 0; !rc && mixed && p < S; p++)
    rc = src_unpack(&L->m, p, tv, &srcs[p], &stv[p], err);
  if (!mixed && stv)
    stv[0] = tv;
  rc = ferry__agree(L->comm, L->rank, rc, err); /* before the rounds */
  if (!rc)
    rc = pack_sources(L, mixed ? srcs : &L->m, stv, S, L->m.hash, one, pr, err);
  if (!rc && mixed)
    rc = merge_views(&L->m, tv, one, S, &vm, err);
  else if (!rc) {
    vm = one[0];
    memset(&one[0], 0, sizeof one[0]);
  }
  for (int64_t p = 0; one && p < S; p++)
    if (one[p].backend)
      free_virtual(&one[p]);
  free(one);
  free(stv);
  if (rc) {
    runs_free(pr);
    for (int64_t p = 0; srcs && p < S; p++)
      ferry__manifest_free(&srcs[p]);
    free(srcs);
    return rc;
  }
  vm.aux = pr;
  vm.aux_free = runs_free;
  vm.srcs = srcs;
  vm.nsrcs = srcs ? S : 0;
  if ((rc = ferry__manifest_select_vars(
           &vm, o->vars && *o->vars ? o->vars : PACK_DEFAULT_VARS, err)) < 0) {
    free_virtual(&vm);
    return rc;
  }
  ferry__manifest *in = malloc(sizeof *in);
  if (!in) {
    free_virtual(&vm);
    return ferry__oom(err, L->rank, sizeof *in, "the packed view of %s",
                      L->m.spec);
  }
  *in = L->m;
  vm.inner = in;
  vm.hash = ferry__manifest_hash(&vm);
  L->m = vm;
  return 0;
}

int ferry__pack_is(const ferry__manifest *m) {
  return m && m->backend && !strcmp(m->backend, "pack") && m->inner;
}

/* Part p's record words (var 0's) into w; 0, or -1. */
static int part_words(const ferry__manifest *m, int64_t p, int64_t w[R_N]) {
  ferry__rec_r r;
  if (!ferry__pack_is(m) || m->nvars < 1 || p < 0 || p >= m->nparts)
    return -1;
  return rec_words(m, p, 0, w, &r) ? -1 : 0;
}

int ferry__pack_token_var(const ferry__manifest *m, int64_t p) {
  int64_t w[R_N];
  if (part_words(m, p, w) || w[R_VAR] < 0 || w[R_VAR] > INT_MAX)
    return -1;
  return (int)w[R_VAR];
}

int64_t ferry__pack_run_docs(const ferry__manifest *m, int64_t p) {
  int64_t w[R_N];
  return part_words(m, p, w) || w[R_CHUNK_DOCS] < 1 ? -1 : w[R_CHUNK_DOCS];
}

/* ---- The backend ------------------------------------------------------ */

struct ferry__io {
  const ferry__manifest *m, *in; /* the virtual manifest, the corpus     */
  const ferry__backend *be;      /* the corpus's backend                 */
  ferry__io *child;
  int rank;
  int64_t w[R_N];       /* the record's words                           */
  int kind[K_N];        /* each virtual variable's output               */
  int tv;               /* the corpus's token variable                  */
  size_t esize;         /* bytes of a token                             */
  unsigned char pad[8]; /* a padding token, stored byte order         */
  int64_t *chunk0;      /* [nparts + 1] first chunk of each part         */
  ferry__pack pk;
  ferry__pack_span *sp; /* [L + overlap + 1]                          */
  int32_t *ws, *wp;     /* [L + overlap + 1] each                   */
  unsigned char *tmp;
  size_t tmpcap;
  /* io=mmap and a corpus backend that maps: each part's tokens mapped
   * whole on first use, the rows' spans copied from there */
  int map;
  ferry__mapping *maps; /* [nparts] */
  size_t copied;        /* bytes copied from the mappings since their
                         * pages were last dropped */
  /* The boundary outputs of the rows last asked for, every selected kind
   * made in one pass (the loader reads an extent's variables one after
   * the other): rows [c_row, c_row + c_n) */
  int64_t c_row, c_n;
  unsigned char *cache[K_N];
  size_t ccap[K_N];
  /* pack=first_fit: the windows' first rows (nwin + 1), the documents
   * before each ordered run (nchunks + 1), and the last window packed:
   * its items (a document or a piece of one: run, first token there,
   * tokens) grouped by row */
  int64_t *row0, *dstart;
  int64_t fw; /* the window in the arrays below, -1: none */
  int64_t nit, capit, nbin;
  ferry__pack_span *it;                        /* [nit] (at unused) */
  int64_t *len, *bin, *tree, *bstart, *border; /* per item / row */
  int64_t *best;             /* best_fit's scratch: 2 (L + 2) + 2 capit words */
  int64_t *dscratch;         /* [L]: a row's document_ids */
  const ferry_options *opts; /* the loader's (io_open's params)        */
  /* A source of a mix: its first document in the mix's numbering (the
   * document_ids), and whether its tokens are stored swapped (the view
   * says native order: they are swapped here) */
  int64_t doc0;
  int swap;
  /* The view of a mix (m->srcs): a reader per source, made on first read
   * of its part, over subm[p] (the view's part p alone) and srcs[p] */
  int64_t nsub;
  ferry__io **sub;
  ferry__manifest *subm;
  ferry__io_params prm;
  /* The tokens of each run of documents (NCHUNKS), made once at open
   * (run_tokens; the view's aux, source src's) */
  int64_t src;
  const int64_t *runs;
};

static void pack_io_close(ferry__io *io);

/* Everything io holds (not io itself). */
static void io_release(ferry__io *io) {
  for (int64_t p = 0; io->sub && p < io->nsub; p++)
    pack_io_close(io->sub[p]);
  free(io->sub);
  free(io->subm);
  for (int64_t p = 0; io->maps && p < io->in->nparts; p++)
    ferry__unmap(&io->maps[p]);
  free(io->maps);
  for (int k = 0; k < K_N; k++)
    free(io->cache[k]);
  if (io->child)
    io->be->io_close(io->child);
  ferry__pack_free(&io->pk);
  free(io->row0);
  free(io->dstart);
  free(io->it);
  free(io->len);
  free(io->bin);
  free(io->tree);
  free(io->bstart);
  free(io->border);
  free(io->best);
  free(io->dscratch);
  free(io->chunk0);
  free(io->sp);
  free(io->ws);
  free(io->wp);
  free(io->tmp);
}

static void pack_io_close(ferry__io *io) {
  if (!io)
    return;
  io_release(io);
  free(io);
}

/* Chunk c: its part and its first document there. */
static int64_t chunk_part(const ferry__io *io, int64_t c, int64_t *d0) {
  int64_t p = ferry__last_le(io->chunk0, io->in->nparts, c);
  *d0 = (c - io->chunk0[p]) * io->w[R_CHUNK_DOCS];
  return p;
}

static const int64_t *chunk_docs(void *ctx, int64_t c, int64_t *nd) {
  const ferry__io *io = ctx;
  int64_t d0, p = chunk_part(io, c, &d0);
  const ferry__part *pt = &io->in->parts[p];
  int64_t n = pt->num_samples - d0;
  *nd = n < io->w[R_CHUNK_DOCS] ? n : io->w[R_CHUNK_DOCS];
  return pt->roff[io->tv] + d0;
}

/* The runs of documents and the epoch's stream on io (io->in, tv, the
 * runs' token counts (io->runs) and the words L, OVERLAP, TAIL, CHUNK_DOCS,
 * NCHUNKS, TOKENS, MODE set; no file opened): concat draws the runs' order from
 * (seed, epoch), first_fit from the seed alone (its rows are the same every
 * epoch). */
static int stream_init(ferry__io *io, const ferry_options *o, int64_t epoch,
                       ferry__err *err) {
  const ferry__manifest *in = io->in;
  const int rank = io->rank;
  const int64_t L = io->w[R_L], W = L + io->w[R_OVERLAP];
  int rc = 0;
  io->fw = -1;
  io->esize = in->vars[io->tv].row_bytes;
  io->chunk0 = malloc((size_t)(in->nparts + 1) * sizeof *io->chunk0);
  io->sp = malloc((size_t)(W + 1) * sizeof *io->sp);
  io->ws = malloc((size_t)(W + 1) * sizeof *io->ws);
  io->wp = malloc((size_t)(W + 1) * sizeof *io->wp);
  int64_t nch = io->w[R_NCHUNKS];
  if (!io->chunk0 || !io->sp || !io->ws || !io->wp)
    rc = ferry__oom(err, rank, (size_t)(in->nparts + 1) * 8 + (size_t)W * 24,
                    "the packed reader of %s", in->spec);
  else if (!io->runs) /* every view has them (run_tokens at open) */
    rc = ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                          "pack: %s: the runs' token counts are missing",
                          in->spec);
  const int64_t cd = io->w[R_CHUNK_DOCS];
  for (int64_t q = 0, c = 0; !rc && q <= in->nparts; q++) {
    io->chunk0[q] = c;
    if (q < in->nparts) /* the runs of this part */
      c += (in->parts[q].num_samples + cd - 1) / cd;
  }
  if (!rc && io->chunk0[in->nparts] != nch)
    rc = ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                          "pack: %s: %lld runs of documents, the view says "
                          "%lld",
                          in->spec, (long long)io->chunk0[in->nparts],
                          (long long)nch);
  const int fit = FIT_MODE(io->w[R_MODE]);
  if (!rc) {
    uint64_t key = 0;
    if (o && o->shuffle != FERRY__SHUFFLE_NONE) {
      key = fit ? ferry__rand_key(o->seed, FERRY__STREAM_PACK, UINT64_MAX, 1)
                : ferry__rand_key(o->seed, FERRY__STREAM_PACK, (uint64_t)epoch,
                                  0);
      key += !key;
    }
    rc = ferry__pack_make(&io->pk, io->runs, nch, L, (int)io->w[R_OVERLAP],
                          (int)io->w[R_TAIL], key, err);
    if (!rc && io->pk.tokens != io->w[R_TOKENS])
      rc = ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                            "pack: %s: the stream holds %lld tokens, the "
                            "view says %lld",
                            in->spec, (long long)io->pk.tokens,
                            (long long)io->w[R_TOKENS]);
  }
  if (!rc && fit) { /* the documents before each ordered run */
    if (!(io->dstart = malloc((size_t)(nch + 1) * sizeof *io->dstart)))
      return ferry__oom(err, rank, (size_t)(nch + 1) * 8, "the runs of %s",
                        in->spec);
    io->dstart[0] = 0;
    for (int64_t k = 0; k < nch; k++) {
      int64_t nd;
      (void)chunk_docs(io, io->pk.order[k], &nd);
      io->dstart[k + 1] = io->dstart[k] + nd;
    }
  }
  return rc;
}

/* The view's record on io, then its stream (stream_init): io_open's
 * first part, and ferry_pack_stats'. */
static int view_init(ferry__io *io, const ferry__manifest *m,
                     const ferry__manifest *in, int rank,
                     const ferry_options *o, int64_t epoch, ferry__err *err) {
  io->m = m;
  io->in = in;
  io->rank = rank;
  int rc = 0;
  for (int v = 0; v < m->nvars && !rc; v++) {
    ferry__rec_r r;
    int64_t w[R_N];
    int fit = !rec_words(m, 0, v, w, &r) && FIT_MODE(w[R_MODE]);
    int64_t nwin = fit ? w[R_NWIN] : -1;
    if (fit && (nwin < 1 || (uint64_t)nwin >= ferry__rec_left(&r) / 8))
      ferry__rec_fail(&r, "bad window count");
    if (fit && !r.rc && v == 0) {
      if (!(io->row0 = malloc((size_t)(nwin + 1) * sizeof *io->row0)))
        return ferry__oom(err, rank, (size_t)(nwin + 1) * 8,
                          "the windows of %s", m->spec);
      ferry__rec_get_u64s(&r, io->row0, (size_t)nwin + 1);
    } else if (fit && !r.rc)
      (void)ferry__rec_take(&r, (size_t)(nwin + 1) * 8);
    if (ferry__rec_end(&r, "bytes past the end") || !io->in ||
        w[R_VERSION] != PACK_RECORD_VERSION || w[R_KIND] < 0 ||
        w[R_KIND] >= K_N)
      rc = ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                            "pack: the packed view of %s is corrupt", m->spec);
    else {
      if (v == 0)
        memcpy(io->w, w, sizeof w);
      io->kind[v] = (int)w[R_KIND];
    }
  }
  if (rc)
    return rc;
  io->tv = (int)io->w[R_VAR];
  const pack_runs *pr = m->aux;
  if (pr && io->src < pr->n && pr->nch[io->src] == io->w[R_NCHUNKS])
    io->runs = pr->tok[io->src];
  rc = stream_init(io, o, epoch, err);
  if (!rc && io->w[R_MODE] == FERRY__PACK_CONCAT &&
      io->pk.rows != m->num_samples)
    rc = ferry__seterr_on(err, rank, FERRY_EINTERNAL,
                          "pack: %s: the stream holds %lld rows, the view "
                          "says %lld",
                          m->spec, (long long)io->pk.rows,
                          (long long)m->num_samples);
  return rc;
}

/* ---- pack=first_fit: windows of documents packed whole ---------------- */

static int grow_items(ferry__io *io, int64_t need, ferry__err *err) {
  if (need <= io->capit)
    return 0;
  int64_t cap = 2 * need + 64, m = 1;
  while (m < cap)
    m <<= 1;
  ferry__pack_span *it = realloc(io->it, (size_t)cap * sizeof *it);
  if (it)
    io->it = it;
  int64_t *a = it ? realloc(io->len, (size_t)cap * 8) : NULL;
  if (a)
    io->len = a;
  int64_t *b = a ? realloc(io->bin, (size_t)cap * 8) : NULL;
  if (b)
    io->bin = b;
  int64_t *t = b ? realloc(io->tree, (size_t)(2 * m) * 8) : NULL;
  if (t)
    io->tree = t;
  int64_t *bs = t ? realloc(io->bstart, (size_t)(cap + 1) * 8) : NULL;
  if (bs)
    io->bstart = bs;
  int64_t *bo = bs ? realloc(io->border, (size_t)cap * 8) : NULL;
  if (bo)
    io->border = bo;
  int64_t *be = NULL;
  if (bo && io->w[R_MODE] == FERRY__PACK_BEST_FIT &&
      (be = realloc(io->best, (size_t)(2 * (io->w[R_L] + 2) + 2 * cap) * 8)))
    io->best = be;
  if (!bo || (io->w[R_MODE] == FERRY__PACK_BEST_FIT && !be))
    return ferry__oom(err, io->rank, (size_t)cap * 48 + (size_t)m * 16,
                      "the items of a window of %s", io->in->spec);
  io->capit = cap;
  return 0;
}

/* Window w's items (its documents in stream order, empty ones skipped, one
 * longer than L cut into pieces of L or dropped), packed first fit and
 * grouped by row; *dropped and *split count what overflow did. */
static int window_pack(ferry__io *io, int64_t w, int64_t *dropped,
                       int64_t *split, ferry__err *err) {
  const int64_t L = io->w[R_L], Wd = io->w[R_WINDOW], N = io->in->num_samples;
  const int64_t lo = w * Wd, hi = lo + Wd < N ? lo + Wd : N;
  const int64_t nch = io->w[R_NCHUNKS];
  io->fw = -1;
  io->nit = 0;
  int64_t k = lo < hi ? ferry__last_le(io->dstart, nch, lo) : 0;
  for (int64_t pos = lo; pos < hi; pos++) {
    while (io->dstart[k + 1] <= pos)
      k++;
    int64_t c = io->pk.order[k], nd;
    const int64_t *o = chunk_docs(io, c, &nd);
    int64_t j = pos - io->dstart[k], len = o[j + 1] - o[j], first = o[j] - o[0];
    if (len <= 0)
      continue;
    if (len > L && io->w[R_OVERFLOW] == FERRY__OVERFLOW_DROP) {
      *dropped += len;
      continue;
    }
    *split += len > L;
    for (int64_t off = 0; off < len; off += L) {
      int rc = grow_items(io, io->nit + 1, err);
      if (rc)
        return rc;
      int64_t n = len - off < L ? len - off : L;
      io->it[io->nit] = (ferry__pack_span){c, first + off, n, 0};
      io->len[io->nit++] = n;
    }
  }
  int rc = grow_items(io, io->nit + 1, err);
  if (rc)
    return rc;
  io->nbin = io->w[R_MODE] == FERRY__PACK_BEST_FIT
                 ? ferry__pack_best_fit(io->len, io->nit, L, io->bin, io->best)
                 : ferry__pack_fit(io->len, io->nit, L, io->bin, io->tree);
  /* the items of each row, in their order (a counting sort) */
  for (int64_t b = 0; b <= io->nbin; b++)
    io->bstart[b] = 0;
  for (int64_t i = 0; i < io->nit; i++)
    io->bstart[io->bin[i] + 1]++;
  for (int64_t b = 0; b < io->nbin; b++)
    io->bstart[b + 1] += io->bstart[b];
  for (int64_t i = 0; i < io->nit; i++)
    io->border[io->bstart[io->bin[i]]++] = i;
  for (int64_t b = io->nbin; b > 0; b--)
    io->bstart[b] = io->bstart[b - 1];
  io->bstart[0] = 0;
  io->fw = w;
  return 0;
}

/* Row r's spans into sp (room for max; contiguous from position 0):
 * concat cuts the stream, first_fit gives the row's items.  The span
 * count, or -1 (a failure: err set for the internal ones). */
static int64_t row_spans(ferry__io *io, int64_t r, ferry__pack_span *sp,
                         int64_t max, ferry__err *err) {
  if (!FIT_MODE(io->w[R_MODE]))
    return ferry__pack_spans(&io->pk, r, sp, max);
  const int64_t nwin = io->w[R_NWIN];
  if (r < 0 || r >= io->row0[nwin])
    return -1;
  int64_t w = ferry__last_le(io->row0, nwin, r), dropped = 0, split = 0;
  if (io->fw != w && window_pack(io, w, &dropped, &split, err) != 0)
    return -1;
  int64_t b = r - io->row0[w];
  if (b >= io->nbin) {
    ferry__seterr_on(err, io->rank, FERRY_EINTERNAL,
                     "pack: window %lld of %s packs into %lld rows, the view "
                     "says %lld",
                     (long long)w, io->in->spec, (long long)io->nbin,
                     (long long)(io->row0[w + 1] - io->row0[w]));
    return -1;
  }
  int64_t n = 0, at = 0;
  for (int64_t q = io->bstart[b]; q < io->bstart[b + 1] && n < max; q++) {
    sp[n] = io->it[io->border[q]];
    sp[n++].at = at;
    at += io->it[io->border[q]].count;
  }
  return n;
}

/* m's part p alone (a view of a mix: source p's rows) into out, which
 * borrows m's part: never freed. */
static void shallow(const ferry__manifest *m, int64_t p, ferry__manifest *out) {
  *out = *m;
  out->nparts = 1;
  out->parts = &m->parts[p];
  out->num_samples = m->parts[p].num_samples;
  out->inner = NULL;
  out->srcs = NULL;
  out->nsrcs = 0;
  out->roff_map = NULL;
  out->rec_map = NULL;
}

/* io's readers of a mix's sources (io->m->srcs): the arrays, each view
 * part alone in subm. */
static int subs_alloc(ferry__io *io, const ferry__manifest *m, int rank,
                      ferry__err *err) {
  io->m = m;
  io->in = m->inner;
  io->rank = rank;
  io->nsub = m->nparts;
  io->sub = calloc((size_t)m->nparts, sizeof *io->sub);
  io->subm = calloc((size_t)m->nparts, sizeof *io->subm);
  if (!io->sub || !io->subm || m->nsrcs != m->nparts)
    return ferry__oom(err, rank, (size_t)m->nparts * (sizeof *io->subm + 8),
                      "the packed readers of the %lld sources of %s",
                      (long long)m->nparts, m->spec);
  for (int64_t p = 0; p < m->nparts; p++)
    shallow(m, p, &io->subm[p]);
  return 0;
}

/* Source p's reader (sub-reader of the view of a mix) on s: its view and
 * stream (view_init), its document numbering and byte order. */
static int sub_init(ferry__io *io, int64_t p, ferry__io *s, ferry__err *err) {
  s->src = p;
  int rc = view_init(s, &io->subm[p], &io->m->srcs[p], io->rank, io->opts,
                     io->prm.epoch, err);
  if (!rc) {
    s->doc0 = io->in->parts[p].first_sample;
    s->swap = io->m->srcs[p].vars[s->tv].swapped;
  }
  return rc;
}

static int io_setup(ferry__io *io, const ferry__manifest *m,
                    const ferry__manifest *in, const ferry__io_params *p,
                    ferry__err *err);

/* Source p's reader, opened on first use. */
static int sub_get(ferry__io *io, int64_t p, ferry__io **out, ferry__err *err) {
  if (!io->sub[p]) {
    ferry__io *s = calloc(1, sizeof *s);
    if (!s)
      return ferry__oom(err, io->rank, sizeof *s, "the packed reader of %s",
                        io->m->srcs[p].spec);
    int rc = sub_init(io, p, s, err);
    if (!rc)
      rc = io_setup(s, NULL, NULL, &io->prm, err);
    if (rc) {
      pack_io_close(s);
      return rc;
    }
    io->sub[p] = s;
  }
  *out = io->sub[p];
  return 0;
}

static int pack_io_open(ferry__io **out, const ferry__manifest *m,
                        const ferry__io_params *p, ferry__err *err) {
  *out = NULL;
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__oom(err, p->rank, sizeof *io, "the packed reader of %s",
                      m->spec);
  int rc;
  if (m->srcs) { /* a mix: a reader per source, on first read */
    io->opts = p->opts;
    io->prm = *p;
    /* the bound on open files shared out (mixread.c's rule) */
    int64_t files = p->max_open_files > 0 ? p->max_open_files : 64;
    io->prm.max_open_files = files / m->nparts > 0 ? files / m->nparts : 1;
    rc = subs_alloc(io, m, p->rank, err);
  } else
    rc = io_setup(io, m, m->inner, p, err);
  if (rc) {
    pack_io_close(io);
    return rc;
  }
  *out = io;
  return 0;
}

/* io's record, stream (view_init, unless m is NULL: done), the corpus's
 * backend opened. */
static int io_setup(ferry__io *io, const ferry__manifest *m,
                    const ferry__manifest *in, const ferry__io_params *p,
                    ferry__err *err) {
  int rc = m ? view_init(io, m, in, p->rank, p->opts, p->epoch, err) : 0;
  in = io->in;
  io->opts = p->opts;
  if (!rc && !(io->be = ferry__backend_find(in->backend)))
    rc = ferry__seterr_on(err, p->rank, FERRY_ENOTSUP,
                          "pack: backend '%s' of %s is not built in",
                          in->backend, in->spec);
  /* cache=: the corpus's documents come through the node cache (cache.c,
   * which wraps the corpus's backend; never with io=mmap) */
  if (!rc && in->cache)
    io->be = &ferry__cache_backend;
  if (!rc && p->opts && p->opts->pad_value && *p->opts->pad_value &&
      ferry__value_of_text(p->opts->pad_value, in->vars[io->tv].dtype,
                           io->pad) < 0)
    rc = ferry__seterr_on(
        err, p->rank, FERRY_EINVAL, "pack: pad_value '%s' is not a %s",
        p->opts->pad_value, ferry_dtype_name(in->vars[io->tv].dtype));
  if (!rc && in->vars[io->tv].swapped)
    for (size_t i = 0; i < io->esize / 2; i++) {
      unsigned char t = io->pad[i];
      io->pad[i] = io->pad[io->esize - 1 - i];
      io->pad[io->esize - 1 - i] = t;
    }
  if (!rc && p->opts && p->opts->io == FERRY__IO_MMAP && io->be->io_map) {
    io->map = 1;
    if (!(io->maps = calloc((size_t)in->nparts, sizeof *io->maps)))
      rc = ferry__oom(err, p->rank, (size_t)in->nparts * sizeof *io->maps,
                      "the mappings of %s", in->spec);
  }
  if (!rc) {
    ferry__io_params cp = *p;
    cp.defer = 0;
    cp.collective = 0;
    rc = io->be->io_open(&io->child, in, &cp, err);
  }
  return rc;
}

static int grow_tmp(ferry__io *io, size_t n, ferry__err *err) {
  if (n <= io->tmpcap)
    return 0;
  unsigned char *t = realloc(io->tmp, n);
  if (!t)
    return ferry__oom(err, io->rank, n, "a document of %s", io->in->spec);
  io->tmp = t;
  io->tmpcap = n;
  return 0;
}

/* Read chunk c's tokens [s0, s1) (from its first token) to dst: the
 * documents inside whole, each end's document cut through tmp. */
static int read_chunk_range(ferry__io *io, int64_t c, int64_t s0, int64_t s1,
                            unsigned char *dst, ferry__err *err) {
  int64_t d0, p = chunk_part(io, c, &d0), nd;
  const int64_t *o = chunk_docs(io, c, &nd);
  const int64_t a = o[0] + s0, b = o[0] + s1; /* in the part's offsets */
  const size_t es = io->esize;
  int rc = 0;
  if (io->map) { /* the part mapped whole: one copy, no read */
    ferry__mapping *mp = &io->maps[p];
    const ferry__part *pt = &io->in->parts[p];
    if (!mp->base && (rc = io->be->io_map(io->child, p, io->tv, 0,
                                          pt->num_samples, mp, err)) != 0)
      return rc;
    rc = ferry__mapped_copy(dst, mp->data + (size_t)a * es,
                            (size_t)(b - a) * es, mp->path, err);
    /* the pages copied stay in the rank's resident set until dropped:
     * every PACK_DROP_BYTES, every mapping's (the page cache keeps them) */
    if ((io->copied += (size_t)(b - a) * es) >= PACK_DROP_BYTES) {
      for (int64_t q = 0; q < io->in->nparts; q++)
        if (io->maps[q].base)
          (void)posix_madvise(io->maps[q].base, io->maps[q].len,
                              POSIX_MADV_DONTNEED);
      io->copied = 0;
    }
    return rc;
  }
  /* da: the document holding a; db: the first starting at or after b */
  int64_t da = ferry__last_le(o, nd, a), db = da;
  while (db < nd && o[db] < b)
    db++;
  if (o[da] < a) { /* cut at the front */
    int64_t n = o[da + 1] - o[da], from = a - o[da];
    int64_t to = (o[da + 1] < b ? o[da + 1] : b) - o[da];
    if ((rc = grow_tmp(io, (size_t)n * es, err)) ||
        (rc = io->be->io_read(io->child, p, io->tv, d0 + da, 1, io->tmp, err)))
      return rc;
    memcpy(dst, io->tmp + (size_t)from * es, (size_t)(to - from) * es);
    dst += (size_t)(to - from) * es;
    da++;
  }
  if (da >= db)
    return 0;
  int cut_end = o[db] > b;
  int64_t whole = db - da - cut_end;
  if (whole > 0) {
    if ((rc = io->be->io_read(io->child, p, io->tv, d0 + da, whole, dst, err)))
      return rc;
    dst += (size_t)(o[da + whole] - o[da]) * es;
  }
  if (cut_end) {
    int64_t d = db - 1, n = o[d + 1] - o[d];
    if ((rc = grow_tmp(io, (size_t)n * es, err)) ||
        (rc = io->be->io_read(io->child, p, io->tv, d0 + d, 1, io->tmp, err)))
      return rc;
    memcpy(dst, io->tmp, (size_t)(b - o[d]) * es);
  }
  return 0;
}

static int read_tokens(ferry__io *io, int64_t row, int64_t n,
                       unsigned char *buf, ferry__err *err) {
  const ferry__pack *pk = &io->pk;
  const int64_t L = pk->L, W = L + pk->overlap;
  const size_t es = io->esize;
  if (FIT_MODE(io->w[R_MODE])) { /* row by row: its items */
    for (int64_t j = 0; j < n; j++) {
      unsigned char *dst = buf + (size_t)(j * W) * es;
      int64_t nsp = row_spans(io, row + j, io->sp, W + 1, err), have = 0;
      if (nsp < 0)
        return err->msg[0]
                   ? err->code
                   : ferry__seterr_on(err, io->rank, FERRY_EINTERNAL,
                                      "pack: row %lld of %s has no "
                                      "spans",
                                      (long long)(row + j), io->m->spec);
      for (int64_t q = 0; q < nsp; q++) {
        const ferry__pack_span *s = &io->sp[q];
        int rc = read_chunk_range(io, s->chunk, s->first, s->first + s->count,
                                  dst + (size_t)s->at * es, err);
        if (rc)
          return rc;
        have = s->at + s->count;
      }
      for (int64_t i = have; i < W; i++)
        memcpy(dst + (size_t)i * es, io->pad, es);
    }
    return 0;
  }
  int64_t x = row * L, x1 = (row + n) * L + pk->overlap;
  if (x1 > pk->tokens)
    x1 = pk->tokens;
  const int64_t have = x1 - x;
  unsigned char *dst = buf;
  for (int64_t k = ferry__last_le(pk->start, pk->nchunks, x); x < x1; k++) {
    int64_t a = pk->start[k], b = pk->start[k + 1];
    if (b <= x)
      continue; /* a run without tokens */
    int64_t stop = b < x1 ? b : x1;
    int rc = read_chunk_range(io, pk->order[k], x - a, stop - a, dst, err);
    if (rc)
      return rc;
    dst += (size_t)(stop - x) * es;
    x = stop;
  }
  /* the stream's range is buf's first `have` tokens: spread it into rows
   * of W (the last row first: each moves up, past what is left to move) */
  for (int64_t j = n - 1; j >= 0; j--) {
    int64_t from = j * L, cnt = have - from < W ? have - from : W;
    if (cnt < 0)
      cnt = 0;
    if (pk->overlap && cnt > 0)
      memmove(buf + (size_t)(j * W) * es, buf + (size_t)from * es,
              (size_t)cnt * es);
    for (int64_t i = cnt; i < W; i++)
      memcpy(buf + (size_t)(j * W + i) * es, io->pad, es);
  }
  return 0;
}

/* The document_ids of a row's spans sp[0..nsp) into out[0..L): the
 * corpus's index of each input's document (its part's first sample + the
 * document's index there), -1 for padding.  Reads io only (any thread). */
static void span_docs(const ferry__io *io, const ferry__pack_span *sp,
                      int64_t nsp, int64_t L, int64_t *out) {
  int64_t at = 0;
  for (int64_t q = 0; q < nsp && at < L; q++) {
    int64_t d0, p = chunk_part(io, sp[q].chunk, &d0), nd;
    const int64_t *o = chunk_docs((void *)io, sp[q].chunk, &nd);
    int64_t t = o[0] + sp[q].first, end = t + sp[q].count;
    int64_t base = io->doc0 + io->in->parts[p].first_sample + d0;
    for (int64_t d = ferry__last_le(o, nd, t); t < end && at < L; d++)
      for (; t < o[d + 1] && t < end && at < L; t++)
        out[at++] = base + d;
  }
  while (at < L)
    out[at++] = -1;
}

/* Row r's document_ids: the corpus's index of each input's document
 * (its part's first sample + the document's index there), -1 padding. */
static int row_docs(ferry__io *io, int64_t r, int64_t *out, ferry__err *err) {
  const ferry__pack *pk = &io->pk;
  int64_t nsp = row_spans(io, r, io->sp, pk->L + pk->overlap + 1, err);
  if (nsp < 0)
    return err->msg[0] ? err->code
                       : ferry__seterr_on(err, io->rank, FERRY_EINTERNAL,
                                          "pack: row %lld of %s has no spans",
                                          (long long)r, io->m->spec);
  span_docs(io, io->sp, nsp, pk->L, out);
  return 0;
}

/* Rows [row, row + n)'s boundary outputs, each kind k with to[k] set
 * (its rows one after the other), in one pass per row. */
static int bounds_rows(ferry__io *io, int64_t row, int64_t n,
                       unsigned char *const *to, ferry__err *err) {
  const ferry__pack *pk = &io->pk;
  const int64_t L = pk->L, W = L + pk->overlap;
  for (int64_t j = 0; j < n; j++) {
    int64_t nsp = row_spans(io, row + j, io->sp, W + 1, err);
    if (nsp < 0 && err->msg[0])
      return err->code;
    int32_t *seg = to[K_SEG] ? (int32_t *)(void *)to[K_SEG] + j * L : NULL;
    int32_t *pos = to[K_POS] ? (int32_t *)(void *)to[K_POS] + j * L : NULL;
    uint8_t *mask = to[K_MASK] ? to[K_MASK] + j * L : NULL;
    int32_t *cu = to[K_CU] ? (int32_t *)(void *)to[K_CU] + j * (L + 1) : NULL;
    if (nsp < 0 || nsp > W + 1 ||
        ferry__pack_bounds(pk, io->sp, nsp, chunk_docs, io,
                           (int)io->w[R_MASK_FIRST], io->ws, io->wp, seg, pos,
                           mask, cu))
      return ferry__seterr_on(err, io->rank, FERRY_EINTERNAL,
                              "pack: row %lld of %s: its spans disagree with "
                              "the corpus's offsets",
                              (long long)(row + j), io->m->spec);
  }
  return 0;
}

static int pack_io_read_at(ferry__io *io, int64_t part, int var, int64_t row,
                           int64_t nrows, void *buf, ferry__err *err);

/* After a read or a fill of rows [row, row + n) on io: the corpus's
 * mapped offsets dropped when the rows cross a multiple of 256 (each drop
 * makes the next look-ups fault their folios in again). */
static void trim_rows(const ferry__io *io, int64_t row, int64_t n) {
  if (row / 256 != (row + n) / 256)
    ferry__manifest_trim(io->in, NULL, NULL);
}

/* A read, then the pages of the corpus's mapped offsets it looked up
 * dropped from the rank's resident set: a touch maps the page cache's
 * whole folio (1.6 MiB a touch on average, measured on Linux 6.18), so
 * the offsets of the runs a rank's rows visit would otherwise stay mapped
 * until the next trim (100 MiB after 1,000 batches at 10^8 documents).
 * madvise over a mapping with little mapped: 1-6 us. */
static int pack_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                        int64_t nrows, void *buf, ferry__err *err) {
  int rc = pack_io_read_at(io, part, var, row, nrows, buf, err);
  if (rc) /* a failed read: at once */
    ferry__manifest_trim(io->in, NULL, NULL);
  else
    trim_rows(io, row, nrows);
  return rc;
}

static int pack_io_read_at(ferry__io *io, int64_t part, int var, int64_t row,
                           int64_t nrows, void *buf, ferry__err *err) {
  int rc = ferry__check_part_var(io->m, part, var, io->rank, err);
  if (!rc)
    rc = ferry__check_rows(io->m, part, var, row, nrows, io->rank, err);
  if (rc || nrows == 0)
    return rc;
  if (io->sub) { /* a mix: part is a source's rows */
    ferry__io *s = NULL;
    if ((rc = sub_get(io, part, &s, err)) ||
        (rc = pack_io_read_at(s, 0, var, row, nrows, buf, err)))
      return rc;
    if (s->swap && s->kind[var] == K_TOKENS)
      ferry__byteswap(buf, (size_t)(nrows * (s->pk.L + s->pk.overlap)),
                      s->esize);
    return 0;
  }
  const int kind = io->kind[var];
  if (kind == K_TOKENS &&
      !made_by_workers(io->w[R_MODE], kind, io->opts, io->be && io->be->io_map))
    return read_tokens(io, row, nrows, buf, err);
  if (made_by_workers(io->w[R_MODE], kind, io->opts, io->be && io->be->io_map))
    return 0;          /* the workers make it; it has no bytes in buf */
  if (kind == K_DOC) { /* buf's place for the variable may be unaligned:
                        * each row made in io's scratch, then copied */
    const size_t rbd = (size_t)io->pk.L * sizeof(int64_t);
    if (!io->dscratch && !(io->dscratch = malloc(rbd)))
      return ferry__oom(err, io->rank, rbd, "a row's document_ids of %s",
                        io->m->spec);
    for (int64_t j = 0; j < nrows && !rc; j++)
      if (!(rc = row_docs(io, row + j, io->dscratch, err)))
        memcpy((unsigned char *)buf + (size_t)j * rbd, io->dscratch, rbd);
    return rc;
  }
  const size_t rb = io->m->vars[var].row_bytes;
  if (io->c_n == nrows && io->c_row == row && io->cache[kind]) {
    memcpy(buf, io->cache[kind], (size_t)nrows * rb);
    return 0;
  }
  /* every selected boundary kind of these rows into the cache, bounded
   * (more than 64 MiB of rows: this kind alone, straight into buf) */
  size_t all = 0;
  for (int v = 0; v < io->m->nvars; v++)
    if (io->kind[v] != K_TOKENS && io->kind[v] != K_DOC)
      all += io->m->vars[v].row_bytes;
  int cached = all * (size_t)nrows <= ((size_t)64 << 20);
  unsigned char *to[K_N] = {0};
  io->c_n = 0;
  for (int v = 0; cached && v < io->m->nvars; v++) {
    int k = io->kind[v];
    size_t n = (size_t)nrows * io->m->vars[v].row_bytes;
    if (k == K_TOKENS || k == K_DOC)
      continue;
    if (n > io->ccap[k]) {
      unsigned char *c = realloc(io->cache[k], n);
      if (!c)
        return ferry__oom(err, io->rank, n, "the boundary outputs of %s",
                          io->m->spec);
      io->cache[k] = c;
      io->ccap[k] = n;
    }
    to[k] = io->cache[k];
  }
  if (!cached) { /* this kind alone, in blocks of 8 MiB through its cache
                  * (buf's place for the variable may be unaligned) */
    int64_t per = ((int64_t)8 << 20) / (int64_t)rb;
    per = per < 1 ? 1 : per;
    size_t need = (size_t)per * rb;
    if (need > io->ccap[kind]) {
      unsigned char *c = realloc(io->cache[kind], need);
      if (!c)
        return ferry__oom(err, io->rank, need, "the boundary outputs of %s",
                          io->m->spec);
      io->cache[kind] = c;
      io->ccap[kind] = need;
    }
    to[kind] = io->cache[kind];
    for (int64_t j0 = 0; j0 < nrows; j0 += per) {
      int64_t n = nrows - j0 < per ? nrows - j0 : per;
      int rc3 = bounds_rows(io, row + j0, n, to, err);
      if (rc3)
        return rc3;
      memcpy((unsigned char *)buf + (size_t)j0 * rb, io->cache[kind],
             (size_t)n * rb);
    }
    return 0;
  }
  int rc2 = bounds_rows(io, row, nrows, to, err);
  if (rc2)
    return rc2;
  io->c_row = row;
  io->c_n = nrows;
  memcpy(buf, io->cache[kind], (size_t)nrows * rb);
  return 0;
}

int ferry__view_describe(const char *path, const ferry_options *opts,
                         ferry__part_desc *out, ferry__err *err) {
  (void)opts;
  (void)out;
  return ferry__seterr(err, FERRY_EINVAL,
                       "%s: a view (made by option pack or sparse) is never "
                       "a part of a dataset",
                       path);
}

const ferry__backend ferry__pack_backend = {
    .name = "pack",
    .version = FERRY__BACKEND_VERSION,
    .caps = FERRY__CAP_NOT_FLAT,
    .record_version = PACK_RECORD_VERSION,
    .describe = ferry__view_describe,
    .io_open = pack_io_open,
    .io_read = pack_io_read,
    .io_close = pack_io_close,
};

/* pack=first_fit at ferry_open: every window packed once (the ranks share
 * them: rank r packs windows r, r + P, ...), each window's rows, the
 * tokens dropped and the documents split summed over the ranks.
 * COLLECTIVE over L->comm: one outcome on every rank. */
static int fit_all(ferry_loader *L, const ferry__manifest *in, int tv,
                   int64_t cd, const int64_t *runs, fit_info *fi,
                   ferry__err *err) {
  const ferry_options *o = L->opts;
  const int64_t N = in->num_samples, Wd = o->pack_window;
  fi->nwin = N > 0 ? (N + Wd - 1) / Wd : 1;
  int rc = 0;
  ferry__io *io = NULL;
  if (fi->nwin > INT_MAX)
    rc = ferry__seterr(err, FERRY_EINVAL,
                       "pack=first_fit: %lld windows of %lld documents in %s "
                       "(at most 2^31 - 1: raise pack_window)",
                       (long long)fi->nwin, (long long)Wd, in->spec);
  else if (!(fi->row0 = calloc((size_t)fi->nwin + 1, sizeof *fi->row0)) ||
           !(io = calloc(1, sizeof *io)))
    rc = ferry__oom(err, L->rank, ((size_t)fi->nwin + 1) * 8 + sizeof *io,
                    "the windows of %s", in->spec);
  if (!rc) {
    io->in = in;
    io->tv = tv;
    io->rank = L->rank;
    base_words(in, o, tv, cd, io->w);
    io->runs = runs;
    rc = stream_init(io, o, 0, err);
  }
  int64_t sums[2] = {0, 0}; /* tokens dropped, documents split */
  for (int64_t w = L->rank; !rc && w < fi->nwin && N > 0; w += L->size)
    if (!(rc = window_pack(io, w, &sums[0], &sums[1], err)))
      fi->row0[w + 1] = io->nbin;
  pack_io_close(io);
  rc = ferry__agree(L->comm, L->rank, rc, err);
  if (!rc && (MPI_Allreduce(MPI_IN_PLACE, fi->row0 + 1, (int)fi->nwin,
                            MPI_INT64_T, MPI_SUM, L->comm) != MPI_SUCCESS ||
              MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_INT64_T, MPI_SUM,
                            L->comm) != MPI_SUCCESS))
    rc = ferry__seterr_on(err, L->rank, FERRY_EMPI,
                          "pack=first_fit: the all-reduce of the windows' "
                          "rows failed");
  if (rc) {
    free(fi->row0);
    fi->row0 = NULL;
    return rc;
  }
  for (int64_t w = 0; w < fi->nwin; w++)
    fi->row0[w + 1] += fi->row0[w];
  fi->dropped = sums[0];
  fi->split = sums[1];
  return 0;
}

/* The figures of io's rows (one view part) added to out; *inputs: the
 * tokens they hold. */
static void stats_add(ferry__io *io, ferry_pack_info *out, int64_t *inputs) {
  const ferry__pack *pk = &io->pk;
  int64_t in = pk->rows * pk->L < pk->tokens ? pk->rows * pk->L : pk->tokens;
  int64_t rows = pk->rows, dropped = pk->tokens - in, split;
  if (FIT_MODE(io->w[R_MODE])) {
    /* whole documents: the tokens dropped by overflow=drop, the rest in
     * rows padded to L */
    in = pk->tokens - io->w[R_DROPPED];
    rows = io->w[R_ROWS];
    dropped = io->w[R_DROPPED];
    split = io->w[R_SPLIT];
  } else
    split = ferry__pack_split(pk, chunk_docs, io);
  out->seq_len = pk->L;
  out->overlap = pk->overlap;
  out->documents += io->in->num_samples;
  out->tokens += pk->tokens;
  out->rows += rows;
  out->padding += rows * pk->L - in;
  out->dropped += dropped;
  out->split += split;
  out->runs += pk->nchunks;
  if (io->w[R_CHUNK_DOCS] > out->run_docs)
    out->run_docs = io->w[R_CHUNK_DOCS];
  *inputs += in;
}

int ferry_pack_stats(const ferry_loader *L, int64_t epoch,
                     ferry_pack_info *out) {
  if (!L || !out || !ferry__pack_is(&L->m))
    return ferry__seterr(NULL, FERRY_EINVAL,
                         "ferry_pack_stats: the loader does not pack (option "
                         "pack)");
  ferry__io *io = calloc(1, sizeof *io);
  ferry__err err = {0};
  int64_t inputs = 0;
  memset(out, 0, sizeof *out);
  int rc =
      io ? 0 : ferry__oom(&err, L->rank, sizeof *io, "the packing's figures");
  if (!rc && L->m.srcs) { /* a mix: each source's rows */
    io->opts = L->opts;
    io->prm.epoch = epoch;
    rc = subs_alloc(io, &L->m, L->rank, &err);
    for (int64_t p = 0; !rc && p < io->nsub; p++) {
      ferry__io s = {0};
      if (!(rc = sub_init(io, p, &s, &err)))
        stats_add(&s, out, &inputs);
      io_release(&s);
    }
  } else if (!rc && !(rc = view_init(io, &L->m, L->m.inner, L->rank, L->opts,
                                     epoch, &err)))
    stats_add(io, out, &inputs);
  if (!rc)
    out->efficiency =
        out->rows ? (double)inputs / ((double)out->rows * (double)out->seq_len)
                  : 0;
  pack_io_close(io);
  if (rc)
    ferry__loader_fail((ferry_loader *)L, &err);
  return rc;
}

/* ---- concat: the variables the workers make ---------------------------- */

/* The epoch's stream (view_init), read by every worker: nothing in it
 * changes once made. */
struct ferry__pack_fill {
  ferry__io io;
};

static int fill_tokens(ferry__io *io, int64_t row, int64_t n,
                       unsigned char *dst, ferry__pack_span *sp,
                       ferry__err *err);

/* io (its view and stream made) ready for the workers' copies of tokens:
 * the corpus's backend opened (io_setup) and every part's tokens mapped
 * now, on the caller's thread, so the workers only read. */
static int map_all(ferry__io *io, const ferry__io_params *prm,
                   ferry__err *err) {
  int rc = io_setup(io, NULL, NULL, prm, err);
  if (!rc && !io->map)
    rc = ferry__seterr_on(err, io->rank, FERRY_EINTERNAL,
                          "pack: %s: the workers copy the tokens, but the "
                          "corpus is not mapped",
                          io->in->spec);
  for (int64_t p = 0; !rc && p < io->in->nparts; p++)
    rc = io->be->io_map(io->child, p, io->tv, 0, io->in->parts[p].num_samples,
                        &io->maps[p], err);
  return rc;
}

int ferry__pack_computed(ferry_loader *L, ferry__err *err) {
  free(L->pack_comp); /* made again once io=auto is resolved (open.c) */
  L->pack_comp = NULL;
  if (!ferry__pack_is(&L->m))
    return 0;
  const int maps = corpus_maps(&L->m);
  unsigned char *c = calloc((size_t)L->m.nvars, 1);
  if (!c)
    return ferry__oom(err, L->rank, (size_t)L->m.nvars,
                      "the packed variables of %s", L->m.spec);
  int any = 0;
  for (int v = 0; v < L->m.nvars; v++) {
    ferry__rec_r r;
    int64_t w[R_N];
    /* 2: the tokens, copied from the corpus (their bytes are reads) */
    c[v] = !rec_words(&L->m, 0, v, w, &r) &&
                   made_by_workers(w[R_MODE], w[R_KIND], L->opts, maps)
               ? (unsigned char)(w[R_KIND] == K_TOKENS ? 2 : 1)
               : 0;
    any |= c[v];
  }
  if (!any) {
    free(c);
    return 0;
  }
  L->pack_comp = c;
  return 0;
}

void ferry__pack_fill_close(struct ferry__pack_fill *pf) {
  if (!pf)
    return;
  io_release(&pf->io);
  free(pf);
}

int ferry__pack_fill_open(ferry_loader *L, int64_t epoch,
                          struct ferry__pack_fill **out, ferry__err *err) {
  *out = NULL;
  struct ferry__pack_fill *pf = calloc(1, sizeof *pf);
  if (!pf)
    return ferry__oom(err, L->rank, sizeof *pf, "the packed rows of %s",
                      L->m.spec);
  int rc;
  if (L->m.srcs) { /* a mix: every source's stream (the workers read any) */
    pf->io.opts = L->opts;
    pf->io.prm.epoch = epoch;
    rc = subs_alloc(&pf->io, &L->m, L->rank, err);
    for (int64_t p = 0; !rc && p < pf->io.nsub; p++) {
      if (!(pf->io.sub[p] = calloc(1, sizeof *pf->io.sub[p])))
        rc = ferry__oom(err, L->rank, sizeof *pf->io.sub[p],
                        "the packed rows of %s", L->m.srcs[p].spec);
      else
        rc = sub_init(&pf->io, p, pf->io.sub[p], err);
    }
  } else
    rc = view_init(&pf->io, &L->m, L->m.inner, L->rank, L->opts, epoch, err);
  int tokens = 0; /* the workers copy the tokens: the corpus mapped */
  for (int v = 0; L->pack_comp && v < L->m.nvars; v++)
    tokens |= L->pack_comp[v] == 2;
  ferry__io_params prm = {L->io_comm, L->rank, 0, L->opts->max_open_files,
                          L->opts,    1,       0, epoch};
  for (int64_t p = 0; !rc && tokens && p < (pf->io.sub ? pf->io.nsub : 1); p++)
    rc = map_all(pf->io.sub ? pf->io.sub[p] : &pf->io, &prm, err);
  if (rc) {
    ferry__pack_fill_close(pf);
    return rc;
  }
  *out = pf;
  return 0;
}

/* Rows [row, row + n) of tokens into dst (rows of L + overlap) from the
 * mapped corpus (map_all): each row's spans copied, padding after, the
 * rows swapped when a mix's source is stored swapped.  Any worker,
 * concurrently: io is read-only but for the count of bytes copied. */
static int fill_tokens(ferry__io *io, int64_t row, int64_t n,
                       unsigned char *dst, ferry__pack_span *sp,
                       ferry__err *err) {
  const int64_t L = io->pk.L, W = L + io->pk.overlap;
  const size_t es = io->esize;
  size_t bytes = 0;
  for (int64_t j = 0; j < n; j++) {
    unsigned char *d = dst + (size_t)(j * W) * es;
    int64_t nsp = ferry__pack_spans(&io->pk, row + j, sp, W + 1), have = 0;
    if (nsp < 0 || nsp > W + 1)
      return FERRY_EINTERNAL;
    for (int64_t q = 0; q < nsp; q++) {
      int64_t d0, p = chunk_part(io, sp[q].chunk, &d0), nd;
      const int64_t *o = chunk_docs(io, sp[q].chunk, &nd);
      const ferry__mapping *mp = &io->maps[p];
      int rc = ferry__mapped_copy(d + (size_t)sp[q].at * es,
                                  mp->data + (size_t)(o[0] + sp[q].first) * es,
                                  (size_t)sp[q].count * es, mp->path, err);
      if (rc)
        return rc;
      have = sp[q].at + sp[q].count;
    }
    for (int64_t i = have; i < W; i++)
      memcpy(d + (size_t)i * es, io->pad, es);
    bytes += (size_t)have * es;
  }
  if (io->swap)
    ferry__byteswap(dst, (size_t)(n * W), es);
  /* the pages copied leave the rank's resident set every PACK_DROP_BYTES
   * (the page cache keeps them) */
  size_t was = __atomic_fetch_add(&io->copied, bytes, __ATOMIC_RELAXED);
  if (was / PACK_DROP_BYTES != (was + bytes) / PACK_DROP_BYTES)
    for (int64_t q = 0; q < io->in->nparts; q++)
      if (io->maps[q].base)
        (void)posix_madvise(io->maps[q].base, io->maps[q].len,
                            POSIX_MADV_DONTNEED);
  return 0;
}

int ferry__pack_fill_rows(struct ferry__pack_fill *pf, int v, int64_t part,
                          int64_t row, int64_t n, unsigned char *dst, int rank,
                          ferry__err *err) {
  ferry__io *io = pf->io.sub ? pf->io.sub[part] : &pf->io;
  const int64_t rows = n;
  const ferry__pack *pk = &io->pk;
  const int64_t L = pk->L, W = L + pk->overlap;
  const int kind = io->kind[v];
  const size_t rb = io->m->vars[v].row_bytes;
  /* this thread's scratch; the row's outputs made there (aligned) and
   * copied: dst is the batch's, aligned, but one call serves many rows */
  ferry__pack_span *sp = malloc((size_t)(W + 1) * sizeof *sp);
  int32_t *ws = malloc((size_t)(W + 1) * 2 * sizeof *ws);
  int rc = 0;
  if (!sp || !ws)
    rc = ferry__oom(err, rank, (size_t)(W + 1) * (sizeof *sp + 8),
                    "the boundary outputs of a row of %s", io->m->spec);
  if (!rc && kind == K_TOKENS) {
    rc = fill_tokens(io, row, n, dst, sp, err);
    n = 0; /* done */
  }
  for (int64_t j = 0; !rc && j < n; j++) {
    unsigned char *d = dst + (size_t)j * rb;
    int64_t nsp = ferry__pack_spans(pk, row + j, sp, W + 1);
    if (nsp < 0 || nsp > W + 1) {
      rc = FERRY_EINTERNAL;
      break;
    }
    if (kind == K_DOC) {
      span_docs(io, sp, nsp, L, (int64_t *)(void *)d);
      continue;
    }
    if (ferry__pack_bounds(pk, sp, nsp, chunk_docs, io,
                           (int)io->w[R_MASK_FIRST], ws, ws + W + 1,
                           kind == K_SEG ? (int32_t *)(void *)d : NULL,
                           kind == K_POS ? (int32_t *)(void *)d : NULL,
                           kind == K_MASK ? d : NULL,
                           kind == K_CU ? (int32_t *)(void *)d : NULL))
      rc = FERRY_EINTERNAL;
  }
  free(sp);
  free(ws);
  trim_rows(io, row, rows); /* as pack_io_read */
  if (rc == FERRY_EINTERNAL)
    ferry__seterr_on(err, rank, rc,
                     "pack: rows %lld.. of %s: the spans disagree with the "
                     "corpus's offsets",
                     (long long)row, io->m->spec);
  return rc;
}
