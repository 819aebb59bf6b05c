/*
 * verify.h - private to `ferry verify` (cmd_verify.c: the run, its
 * options and report; verify_checks.c: the collective checks of an epoch's
 * batches, exactly-once and sampling): the state both share.
 */
#ifndef FERRY_TOOL_VERIFY_H
#define FERRY_TOOL_VERIFY_H

#include "gen_anndata.h"
#include "tool.h"

#define MSG_LEN 512
#define VERIFY_MAX_SPARSE 16 /* sparse matrices checked */

enum {
  CK_BATCHES,
  CK_ONCE,
  CK_CONTENT,
  CK_DETERMINISM,
  CK_ORDER,
  CK_MIXING,
  CK_SAMPLING,
  CK_TOKENS,
  CK_SPARSE,
  CK_HASHES,
  CK_COUNT
};
extern const char *const verify_check_names[CK_COUNT];
/* By severity: a check's summary is its worst result over the epochs. */
enum { RES_NONE = -1, RES_SKIP, RES_PASS, RES_WARN, RES_FAIL };
extern const char *const verify_res_names[4];

enum { TAIL_DROP, TAIL_PAD, TAIL_PARTIAL };

/* What every epoch needs to know, the same on every rank. */
typedef struct setup {
  int64_t n; /* samples in the dataset */
  int nvars;
  ferry_var_info *vars; /* [nvars] */
  int64_t batch_size;
  int64_t max_tokens; /* 0: batches of batch_size samples */
  int int32;          /* offsets_dtype=int32: offsets32 expected */
  int tail;
  int shuffled;          /* shuffle != none */
  int content;           /* the values encode the index */
  unsigned char *expect; /* scratch row for the content check */
  size_t expect_bytes;   /* its size: the longest sample of any variable */
  char tail_name[64], shuffle_name[64]; /* the options, as text */
  char why[1024];                       /* why content is (not) checked */
  ferry_sampling_info si;               /* weights, balance, mix        */
  int pack;           /* pack=concat: the tokens check (verify_pack.c)  */
  int pack_all;       /* every output selected, document_ids too        */
  int mask_first;     /* the option                                      */
  int pack_fit;       /* pack=first_fit: pieces of cut documents anywhere */
  int pack_mix;       /* a mix packed: the mix draws rows (not each once)  */
  int pack_restart;   /* ... and a source restarts: tokens may repeat      */
  ferry_pack_info pi; /* the packing (ferry_pack_stats)                */
  /* sparse matrices' rows (verify_sparse.c): the variables of each pair */
  int nsparse;
  int sparse_ix[VERIFY_MAX_SPARSE], sparse_dv[VERIFY_MAX_SPARSE];
  /* a file of ferry gen --anndata (verify_anndata.c): its parameters, the
   * variables checked (-1: not served), a setup failure (categories) */
  int adgen;
  adgen_params ad;
  int ad_ix, ad_dv, ad_codes, ad_counts, ad_dense;
  char ad_msg[MSG_LEN];
} setup;

/* One run of one epoch on this rank. */
typedef struct epoch_run {
  ferry_epoch_info info;
  int64_t num_batches; /* ferry_num_batches */
  int64_t received;    /* batches before FERRY_END */
  int64_t nhash, cap_hash;
  uint64_t *hash; /* [received] */
  int64_t *sizes; /* [received] */
  int64_t nids, cap_ids;
  int64_t *ids;    /* [nids] served ids in order */
  int64_t *padded; /* [nids] 0/1 */
  int64_t malformed;
  char malformed_msg[MSG_LEN];
  int64_t bad_values, checked;
  char content_msg[MSG_LEN];
  /* pack=concat (verify_pack.c): per document of the corpus, the
   * positions served (count, largest, sum of hashes), and the rows'
   * failures */
  int64_t *pk_cnt, *pk_max;
  uint64_t *pk_hash;
  int64_t pk_bad, pk_content_bad, pk_tokens;
  char pk_msg[MSG_LEN], pk_content_msg[MSG_LEN];
  /* sparse rows (verify_sparse.c): checked, values, failures */
  int64_t sp_rows, sp_values, sp_bad;
  char sp_msg[MSG_LEN];
} epoch_run;

/* Rank 0's tally and output. */
typedef struct report {
  int json;
  int worst[CK_COUNT];
  int counts[4];
  char **lines;
  int nlines, cap;
} report;

/* Rank 0 records one check's result for an epoch (a line of the report,
 * the check's worst result). */
void verify_result(report *rep, int check, int res, int64_t epoch,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Collective: the message of the lowest rank that has one, into out
 * (MSG_LEN bytes) on rank 0. */
void verify_first_message(const tool_ctx *ctx, int has, const char *msg,
                          char *out);
/* Collective: the sum, and the minimum and maximum, over the ranks. */
int64_t verify_sum_i64(int64_t v);
void verify_minmax_i64(int64_t v, int64_t *mn, int64_t *mx);

/* The checks (verify_checks.c), each collective. */
void verify_check_batches(const tool_ctx *ctx, report *rep, int64_t e,
                          const epoch_run *r);
void verify_check_once(tool_ctx *ctx, report *rep, const setup *su, int64_t e,
                       const epoch_run *r, const int64_t *prev, int64_t nprev,
                       int64_t **ids_out, int64_t **pad_out, int64_t *total_out,
                       int *gather_ok);
void verify_check_sampling(const ferry_loader *L, report *rep, const setup *su,
                           int64_t e, const int64_t *ids, const int64_t *pad,
                           int64_t total);

/* pack=concat (verify_pack.c): the setup (1 when the loader packs), a
 * batch's rows checked and counted (-1: out of memory), the epoch's check
 * (collective), the run's arrays freed. */
int verify_pack_setup(tool_ctx *ctx, ferry_loader *L, setup *su);
int verify_pack_batch(const setup *su, const ferry_batch *b, epoch_run *run);
void verify_check_tokens(const tool_ctx *ctx, report *rep, const setup *su,
                         int64_t e, epoch_run *r);
void verify_pack_free(epoch_run *r);
/* Sparse matrices' rows (verify_sparse.c): the pairs found (how many), a
 * batch's rows checked, the epoch's check (collective). */
int verify_sparse_setup(setup *su);
void verify_sparse_batch(const setup *su, const ferry_batch *b, epoch_run *run);
void verify_check_sparse(const tool_ctx *ctx, report *rep, const setup *su,
                         int64_t e, epoch_run *r);
/* A file of ferry gen --anndata (verify_anndata.c).  The probe, before
 * the loader opens it (rank 0 reads the root attribute with HDF5 while the
 * library does not hold the file): 1 and *p when the dataset is such a
 * file.  The setup (collective; found, su->ad: the probe's on rank 0): 1
 * when the check is on, -1 when the file is one for another cell count
 * (why in su->why), 0 otherwise.  Then a batch's cells checked against
 * the formula. */
int verify_anndata_probe(const tool_ctx *ctx, adgen_params *p);
int verify_anndata_setup(const tool_ctx *ctx, const ferry_loader *L, int found,
                         setup *su);
void verify_anndata_batch(const setup *su, const ferry_batch *b, int64_t epoch,
                          epoch_run *run);
/* The vars verify asks a packing loader for (all its outputs). */
#define VERIFY_PACK_VARS                                                       \
  "tokens,segment_ids,positions,loss_mask,cu_seqlens,document_ids"

/* --images (verify_images.c): every image of the decode= variables
 * decoded (ferry_image_verify), the first max_errors bad ones named.
 * Opens and closes its own loader.  COLLECTIVE.  Returns an exit status:
 * 0, TOOL_EXIT_VERIFY when an image is bad, or an error. */
#define VERIFY_MAX_ERRORS_DEFAULT "20"
int verify_images(tool_ctx *ctx, int json, int max_errors);

#endif /* FERRY_TOOL_VERIFY_H */
