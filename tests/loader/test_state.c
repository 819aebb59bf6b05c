/*
 * test_state.c - checkpoint and exact resume over MPI, on the mem backend.
 * Run by tests/loader/state.sh with 5 ranks; sub-communicators of 3, 4 and 5
 * ranks stand for jobs of different sizes, so one launch covers a save by 4
 * ranks and resumes by 3, 4 and 5.
 *
 *  - resume serves exactly the samples not served before the save, for
 *    every tail mode, shuffle and partition, io=collective, a save at the
 *    first and after the last batch; with the same number of ranks the
 *    batches are those of the uninterrupted run, with another the batch
 *    counts are equal; the next epoch runs normally afterwards;
 *  - ferry_state_save_buffer gives the file's bytes on every rank, and
 *    ferry_state_load_buffer of rank 0's bytes resumes 3 and 5 ranks;
 *  - a checkpoint signal raised on one rank (or on two at different
 *    batches) is seen by every rank after the same batch;
 *  - a corrupt, truncated, future-version or foreign state file, another
 *    dataset, another batch_size, a missing file: the same clear error on
 *    every rank, and the loader stays usable;
 *  - a state whose dataset hash is the version 2 manifest hash (saved
 *    before 2026-11-29, decision 0067) resumes as the state it copies; a
 *    hash that is neither is another dataset.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/gen.h"
#include "core/options.h"
#include "loader/loader.h"
#include "loader/state.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

static int rank, size;
static const char *dir;
/* resume_case: saved over save_P ranks, resumed over pmin..pmax;
 * `test_state DIR global` (tests/sampling/global.sh): shuffle=global, saved by
 * 3 ranks, resumed by 2, 3 and 4 */
static int save_P = 4, pmin = 3, pmax = 5;

typedef struct idvec {
  int64_t *v;
  int64_t n, cap;
} idvec;

static void push(idvec *x, int64_t id) {
  if (x->n == x->cap) {
    x->cap = x->cap ? 2 * x->cap : 1024;
    x->v = realloc(x->v, (size_t)x->cap * sizeof *x->v);
  }
  x->v[x->n++] = id;
}

static ferry_options *opts_of(const char *const *kv) {
  ferry_options *o;
  ferry_options_create(&o);
  for (int i = 0; kv && kv[i]; i += 2)
    if (ferry_options_set(o, kv[i], kv[i + 1]))
      fprintf(stderr, "bad test option %s=%s\n", kv[i], kv[i + 1]);
  return o;
}

/* A communicator of the first n ranks (MPI_COMM_NULL on the others). */
static MPI_Comm first(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &c);
  return c;
}

/* Serve up to stop batches (-1: to the end).  seq gets every id (pads as
 * -1 - id), real the unpadded ones.  Returns the batches served. */
static int64_t serve(ferry_loader *L, int64_t stop, idvec *seq, idvec *real) {
  ferry_batch *b;
  int64_t got = 0, base = 0;
  ferry_epoch_info info;
  if (ferry_epoch_info_get(L, &info) == 0)
    base = info.first_batch;
  int rc = 0;
  while ((stop < 0 || got < stop) && (rc = ferry_next(L, &b)) == 0) {
    CHECK(b->index == base + got, "batch index %lld, expected %lld",
          (long long)b->index, (long long)(base + got));
    for (int64_t i = 0; i < b->size; i++) {
      if (seq)
        push(seq, b->padded[i] ? -1 - b->sample_ids[i] : b->sample_ids[i]);
      if (real && !b->padded[i])
        push(real, b->sample_ids[i]);
      unsigned char want[8];
      ferry__gen_value(b->vars[0].dtype, b->sample_ids[i], 0, want);
      CHECK(memcmp((char *)b->vars[0].data + (size_t)i * b->vars[0].row_bytes,
                   want, ferry_dtype_size(b->vars[0].dtype)) == 0,
            "value of sample %lld", (long long)b->sample_ids[i]);
    }
    ferry_release(L, b);
    got++;
  }
  CHECK(rc == 0 || rc == FERRY_END, "ferry_next: %s", ferry_last_error(L));
  return got;
}

/* Gather every world rank's ids on rank 0 (others contribute theirs, maybe
 * none).  Returns the count on rank 0. */
static int64_t gather(const idvec *x, int64_t **all) {
  int n = (int)x->n, *counts = NULL, *displs = NULL, total = 0;
  if (rank == 0) {
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
  }
  MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; r++) {
      displs[r] = total;
      total += counts[r];
    }
  *all = rank == 0 ? malloc((size_t)(total ? total : 1) * sizeof **all) : NULL;
  MPI_Gatherv(x->v, n, MPI_INT64_T, *all, counts, displs, MPI_INT64_T, 0,
              MPI_COMM_WORLD);
  free(counts);
  free(displs);
  return total;
}

/* One configuration: 4 ranks save after K batches of epoch 2; 3, 4 and 5
 * ranks resume; served + resumed must be the epoch, once. */
static void resume_case(const char *spec, const char *const *kv, int64_t K,
                        int64_t N, int drop_last) {
  char path[4096];
  snprintf(path, sizeof path, "%s/state-%s-%lld", dir, kv[1], (long long)K);
  ferry_options *o = opts_of(kv);
  MPI_Comm c4 = first(save_P);
  idvec ref = {0}, served = {0};
  int64_t nb_full = 0;
  void *mem = NULL;
  size_t mem_len = 0;
  if (c4 != MPI_COMM_NULL) {
    ferry_loader *L;
    CHECK(ferry_open(c4, spec, o, &L) == 0, "open: %s", ferry_last_error(NULL));
    /* the uninterrupted epoch, for the same-world-size comparison */
    CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
    nb_full = ferry_num_batches(L);
    serve(L, -1, &ref, NULL);
    CHECK(ferry_set_epoch(L, 2) == 0, "set_epoch: %s", ferry_last_error(L));
    int64_t k = K < 0 ? nb_full : K;
    CHECK(serve(L, k, NULL, &served) == k, "served %lld batches", (long long)k);
    int rc = ferry_state_save(L, path);
    CHECK(rc == 0, "save: %s", ferry_last_error(L));
    /* the in-memory form: the file's bytes, on every rank */
    rc = ferry_state_save_buffer(L, &mem, &mem_len);
    CHECK(rc == 0 && mem, "save_buffer: %s", ferry_last_error(L));
    if (rank == 0 && mem) {
      FILE *f = fopen(path, "rb");
      char *fb = malloc(mem_len + 1);
      size_t got = f && fb ? fread(fb, 1, mem_len + 1, f) : 0;
      CHECK(got == mem_len && memcmp(fb, mem, mem_len) == 0,
            "save_buffer: %zu bytes differ from the %zu of the file", mem_len,
            got);
      free(fb);
      if (f)
        fclose(f);
    }
    unsigned long long l0 = mem_len, lmin = 0, lmax = 0;
    MPI_Allreduce(&l0, &lmin, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, c4);
    MPI_Allreduce(&l0, &lmax, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, c4);
    CHECK(lmin == lmax, "save_buffer lengths differ across ranks");
    if (rank != 0) { /* the loads below use rank 0's bytes only */
      free(mem);
      mem = NULL;
      mem_len = 0;
    }
    ferry_close(L);
    MPI_Comm_free(&c4);
  }
  MPI_Bcast(&nb_full, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  int64_t *all_served = NULL;
  int64_t nserved = gather(&served, &all_served);
  for (int P = pmin; P <= pmax && P <= size; P++) {
    MPI_Comm c = first(P);
    idvec seq = {0}, rest = {0}, next = {0};
    int64_t nb = -1, dropped = 0;
    if (c != MPI_COMM_NULL) {
      ferry_loader *L;
      CHECK(ferry_open(c, spec, o, &L) == 0, "open: %s",
            ferry_last_error(NULL));
      /* 4 ranks load the file, 3 and 5 the buffer (rank 0's only) */
      int rc = P == save_P ? ferry_state_load(L, path)
                           : ferry_state_load_buffer(L, mem, mem_len);
      CHECK(rc == 0, "load%s on %d ranks: %s", P == save_P ? "" : "_buffer", P,
            ferry_last_error(L));
      ferry_epoch_info info;
      memset(&info, 0, sizeof info);
      ferry_epoch_info_get(L, &info);
      CHECK(info.epoch == 2 && info.first_batch == (K < 0 ? nb_full : K),
            "resumed epoch %lld at batch %lld", (long long)info.epoch,
            (long long)info.first_batch);
      nb = ferry_num_batches(L);
      dropped = info.dropped_samples;
      CHECK(serve(L, -1, &seq, &rest) == nb, "batches of the resumed epoch");
      if (P == save_P) { /* the batches the uninterrupted run serves */
        int64_t cut = ref.n - seq.n;
        CHECK(cut >= 0 && (seq.n == 0 || /* memcmp's NULL: UBSan */
                           memcmp(seq.v, ref.v + cut,
                                  (size_t)seq.n * sizeof *seq.v) == 0),
              "same world size: %lld ids differ from the uninterrupted run",
              (long long)seq.n);
      }
      /* the next epoch is a normal one over the new world size */
      CHECK(ferry_set_epoch(L, 3) == 0, "set_epoch after resume: %s",
            ferry_last_error(L));
      serve(L, -1, NULL, &next);
      ferry_close(L);
      MPI_Comm_free(&c);
    }
    long long nbl = nb, lo, hi;
    MPI_Allreduce(&nbl, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    nbl = nb < 0 ? lo : nb;
    MPI_Allreduce(&nbl, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi || lo < 0, "batch counts %lld..%lld", lo, hi);
    int64_t *all_rest = NULL, *all_next = NULL;
    int64_t nrest = gather(&rest, &all_rest);
    int64_t nnext = gather(&next, &all_next);
    if (rank == 0) {
      unsigned char *seen = calloc((size_t)N, 1);
      int64_t dups = 0, distinct = 0;
      for (int64_t i = 0; i < nserved + nrest; i++) {
        int64_t id = i < nserved ? all_served[i] : all_rest[i - nserved];
        if (id < 0 || id >= N || seen[id]++)
          dups++;
        else
          distinct++;
      }
      CHECK(dups == 0,
            "%s K=%lld P=%d: %lld samples served twice or out of "
            "range",
            kv[1], (long long)K, P, (long long)dups);
      CHECK(distinct + dropped == N,
            "%s K=%lld P=%d: %lld served before + %lld after + %lld dropped "
            "!= %lld",
            kv[1], (long long)K, P, (long long)nserved, (long long)nrest,
            (long long)dropped, (long long)N);
      CHECK(drop_last || dropped == 0, "dropped %lld", (long long)dropped);
      if (!drop_last) {
        memset(seen, 0, (size_t)N);
        int64_t d2 = 0;
        for (int64_t i = 0; i < nnext; i++)
          d2 += all_next[i] >= 0 && all_next[i] < N && !seen[all_next[i]]++;
        CHECK(d2 == N && nnext == N, "next epoch: %lld distinct of %lld",
              (long long)d2, (long long)nnext);
      }
      free(seen);
    }
    free(all_rest);
    free(all_next);
    free(seq.v);
    free(rest.v);
    free(next.v);
  }
  free(all_served);
  free(mem);
  free(ref.v);
  free(served.v);
  ferry_options_free(o);
}

/* A framework's own handler for the checkpoint signal, installed after
 * ferry_open (as Lightning does when training starts). */
static volatile sig_atomic_t framework_got;
static void framework_handler(int sig) {
  (void)sig;
  framework_got = 1;
}

/* A signal on one rank (or two, at different batches): every rank sees the
 * request after the same batch.  second 2: a framework replaced ferry's
 * handler after ferry_open and asks with ferry_request_checkpoint instead
 * (issue 11); ferry notices the replaced handler. */
static void signal_case(int second) {
  MPI_Comm c = first(4);
  if (c == MPI_COMM_NULL)
    return;
  static const char *const kv[] = {"batch_size",    "4",  "tail", "partial",
                                   "chunk_samples", "64", NULL};
  ferry_options *o = opts_of(kv);
  ferry_loader *L;
  CHECK(ferry_open(c, "mem:N=40000,vars=x:int32:3", o, &L) == 0, "open: %s",
        ferry_last_error(NULL));
  CHECK(ferry_set_epoch(L, 0) == 0, "set_epoch");
  CHECK(ferry_checkpoint_requested(L) == 0, "no request before a signal");
  struct sigaction ours;
  sigaction(SIGUSR1, NULL, &ours);
  if (second == 2) {
    CHECK(ferry__signal_ours(SIGUSR1), "ferry's handler is installed");
    signal(SIGUSR1, framework_handler);
    CHECK(!ferry__signal_ours(SIGUSR1), "a replaced handler is noticed");
  }
  ferry_batch *b;
  int64_t stop = -1, got = 0;
  while (ferry_next(L, &b) == 0) {
    int64_t idx = b->index;
    ferry_release(L, b);
    got++;
    if (rank == 2 && idx == 5)
      raise(SIGUSR1);
    if (second == 1 && rank == 0 && idx == 9)
      raise(SIGUSR1);
    if (second == 2 && framework_got) {
      framework_got = 0;
      CHECK(ferry_request_checkpoint(L) == 0, "request_checkpoint");
    }
    if (ferry_checkpoint_requested(L)) {
      stop = idx;
      break;
    }
  }
  long long s = stop, lo, hi;
  MPI_Allreduce(&s, &lo, 1, MPI_LONG_LONG, MPI_MIN, c);
  MPI_Allreduce(&s, &hi, 1, MPI_LONG_LONG, MPI_MAX, c);
  CHECK(lo == hi && lo >= 5, "ranks stopped at batches %lld..%lld", lo, hi);
  char path[4096];
  snprintf(path, sizeof path, "%s/signal-state", dir);
  CHECK(ferry_state_save(L, path) == 0, "save: %s", ferry_last_error(L));
  CHECK(ferry_checkpoint_requested(L) == 0, "the save answers the request");
  if (rank == 0)
    printf("signal%s: every rank stopped after batch %lld\n",
           second == 2   ? " to a framework, ferry_request_checkpoint"
           : second == 1 ? " on two ranks"
                         : "",
           lo);
  if (second == 2)
    sigaction(SIGUSR1, &ours, NULL); /* ferry_close restores the rest */
  ferry_close(L);
  ferry_options_free(o);
  MPI_Comm_free(&c);
}

/* rc and message must be the same on every rank of c. */
static void same_error(MPI_Comm c, int rc, int want, const char *msg,
                       const char *needle, const char *what) {
  long long v[2] = {rc,
                    (long long)ferry__fnv1a(FERRY__FNV_INIT, msg, strlen(msg))},
            lo[2], hi[2];
  MPI_Allreduce(v, lo, 2, MPI_LONG_LONG, MPI_MIN, c);
  MPI_Allreduce(v, hi, 2, MPI_LONG_LONG, MPI_MAX, c);
  CHECK(rc == want, "%s: rc %d (%s), expected %d: %s", what, rc,
        ferry_strerror(rc), want, msg);
  CHECK(lo[0] == hi[0] && lo[1] == hi[1], "%s: ranks differ", what);
  CHECK(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg,
        needle);
  if (rank == 0)
    printf("bad state (%s): %s\n", what, msg);
}

static void write_file(const char *path, const char *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(buf, 1, len, f);
    fclose(f);
  }
}

static void bad_states(void) {
  MPI_Comm c = first(4);
  if (c == MPI_COMM_NULL)
    return;
  static const char *const kv[] = {"batch_size", "8", "tail", "partial", NULL};
  static const char *const kv2[] = {"batch_size", "16", "tail", "partial",
                                    NULL};
  ferry_options *o = opts_of(kv), *o2 = opts_of(kv2);
  char good[4096], p[4200];
  snprintf(good, sizeof good, "%s/good-state", dir);
  ferry_loader *L;
  CHECK(ferry_open(c, "mem:N=1000,vars=x:int32:3", o, &L) == 0, "open");
  int rc = ferry_state_save(L, good);
  same_error(c, rc, FERRY_ESTATE, ferry_last_error(L), "ferry_set_epoch",
             "save before an epoch");
  CHECK(ferry_set_epoch(L, 1) == 0, "set_epoch");
  serve(L, 3, NULL, NULL);
  CHECK(ferry_state_save(L, good) == 0, "save: %s", ferry_last_error(L));
  char *buf = NULL;
  size_t len = 0;
  if (rank == 0) {
    ferry__err err = {0};
    CHECK(ferry__state_read_file(good, &buf, &len, &err) == 0, "read");
    char *t = malloc(len + 16);
    /* corrupt: one digit of the body changed */
    memcpy(t, buf, len);
    char *d = strstr(t, "\"epoch\":1");
    if (d)
      d[8] = '2';
    snprintf(p, sizeof p, "%s/corrupt", dir);
    write_file(p, t, len);
    snprintf(p, sizeof p, "%s/truncated", dir);
    write_file(p, buf, len / 2);
    memcpy(t, buf, len);
    t[12] = '9'; /* "FERRY-STATE 9 ..." */
    snprintf(p, sizeof p, "%s/future", dir);
    write_file(p, t, len);
    snprintf(p, sizeof p, "%s/foreign", dir);
    write_file(p, "{\"hello\": 1}\n", 13);
    snprintf(p, sizeof p, "%s/empty", dir);
    write_file(p, "", 0);
    free(t);
  }
  MPI_Barrier(c);
  static const struct {
    const char *file, *needle, *what;
    int want;
  } bad[] = {
      {"corrupt", "checksum", "corrupt", FERRY_EFORMAT},
      {"truncated", "truncated", "truncated", FERRY_EFORMAT},
      {"future", "newer", "future version", FERRY_ENOTSUP},
      {"foreign", "not a ferry state", "not a state file", FERRY_EFORMAT},
      {"empty", "not a ferry state", "empty file", FERRY_EFORMAT},
      {"missing", "cannot open", "missing file", FERRY_ENOENT}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, bad[i].file);
    rc = ferry_state_load(L, p);
    same_error(c, rc, bad[i].want, ferry_last_error(L), bad[i].needle,
               bad[i].what);
    CHECK(ferry_set_epoch(L, 0) == 0, "usable after a bad state: %s",
          ferry_last_error(L));
  }
  ferry_close(L);
  /* another batch_size */
  CHECK(ferry_open(c, "mem:N=1000,vars=x:int32:3", o2, &L) == 0, "open");
  rc = ferry_state_load(L, good);
  same_error(c, rc, FERRY_EMISMATCH, ferry_last_error(L), "'batch_size'",
             "other options");
  ferry_close(L);
  /* another dataset */
  CHECK(ferry_open(c, "mem:N=1001,vars=x:int32:3", o, &L) == 0, "open");
  rc = ferry_state_load(L, good);
  same_error(c, rc, FERRY_EMISMATCH, ferry_last_error(L), "dataset",
             "other dataset");
  ferry_close(L);
  /* other threads and prefetch are fine */
  static const char *const kv3[] = {"batch_size", "8",       "tail",
                                    "partial",    "threads", "3",
                                    "prefetch",   "2",       NULL};
  ferry_options *o3 = opts_of(kv3);
  CHECK(ferry_open(c, "mem:N=1000,vars=x:int32:3", o3, &L) == 0, "open");
  CHECK(ferry_state_load(L, good) == 0, "threads/prefetch may change: %s",
        ferry_last_error(L));
  ferry_close(L);
  ferry_options_free(o3);
  /* a state saved before hash version 3 (decision 0067) holds the version 2
   * manifest hash: accepted, and it resumes as the state it copies; a hash
   * that is neither is another dataset */
  CHECK(ferry_open(c, "mem:N=1000,vars=x:int32:3", o, &L) == 0, "open");
  if (rank == 0 && buf) {
    static const char *const names[] = {"v2-state", "other-hash"};
    for (int k = 0; k < 2; k++) {
      ferry__state st;
      ferry__err err = {0};
      char *out = NULL;
      size_t olen = 0;
      CHECK(ferry__state_decode(buf, len, good, &st, &err) == 0, "decode: %s",
            err.msg);
      st.dataset_hash = ferry__manifest_hash_v2(&L->m) ^ (uint64_t)k;
      CHECK(st.dataset_hash != L->m.hash, "the two hashes are equal");
      CHECK(ferry__state_encode(&st, &out, &olen, &err) == 0, "encode: %s",
            err.msg);
      snprintf(p, sizeof p, "%s/%s", dir, names[k]);
      if (out)
        write_file(p, out, olen);
      free(out);
      ferry__state_free(&st);
    }
  }
  MPI_Barrier(c);
  CHECK(ferry_state_load(L, good) == 0, "the state: %s", ferry_last_error(L));
  int64_t rest = serve(L, -1, NULL, NULL);
  snprintf(p, sizeof p, "%s/v2-state", dir);
  CHECK(ferry_state_load(L, p) == 0, "a state with the version 2 hash: %s",
        ferry_last_error(L));
  int64_t rest2 = serve(L, -1, NULL, NULL);
  CHECK(rest > 0 && rest2 == rest,
        "the version 2 state resumed %lld batches, the state %lld",
        (long long)rest2, (long long)rest);
  snprintf(p, sizeof p, "%s/other-hash", dir);
  rc = ferry_state_load(L, p);
  same_error(c, rc, FERRY_EMISMATCH, ferry_last_error(L), "dataset",
             "neither hash");
  ferry_close(L);
  free(buf);
  ferry_options_free(o);
  ferry_options_free(o2);
  MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ft_set_rank(rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  dir = argc > 1 ? argv[1] : ".";
  if (size < 4) {
    if (rank == 0)
      printf("SKIP: test_state needs at least 4 ranks\n");
    MPI_Finalize();
    return 77;
  }
  static const char *const partial[] = {
      "tail", "partial", "batch_size", "7", "chunk_samples", "50", NULL};
  static const char *const pad[] = {
      "tail",          "pad",        "batch_size", "8",         "shuffle",
      "block",         "block_size", "16",         "partition", "strided",
      "chunk_samples", "40",         NULL};
  static const char *const drop[] = {
      "tail", "drop_last",      "batch_size", "16", "chunk_samples",
      "64",   "shuffle_buffer", "2",          NULL};
  static const char *const coll[] = {
      "tail",       "partial",       "batch_size", "5", "io",
      "collective", "chunk_samples", "30",         NULL};
  static const char *const nosh[] = {"tail",    "pad",  "batch_size",    "9",
                                     "shuffle", "none", "chunk_samples", "100",
                                     NULL};
  if (argc > 2 && !strcmp(argv[2], "global")) {
    static const char *const gpart[] = {
        "tail",          "partial", "batch_size",     "7", "shuffle", "global",
        "chunk_samples", "20",      "shuffle_buffer", "2", NULL};
    static const char *const gpad[] = {"tail",
                                       "pad",
                                       "batch_size",
                                       "8",
                                       "shuffle",
                                       "global",
                                       "chunk_samples",
                                       "30",
                                       "shuffle_buffer",
                                       "1",
                                       "exchange",
                                       "0.5",
                                       NULL};
    static const char *const gdrop[] = {"tail",
                                        "drop_last",
                                        "batch_size",
                                        "16",
                                        "shuffle",
                                        "global",
                                        "chunk_samples",
                                        "25",
                                        "shuffle_buffer",
                                        "2",
                                        "io",
                                        "collective",
                                        NULL};
    save_P = 3;
    pmin = 2;
    pmax = 4;
    resume_case("mem:N=1009,vars=x:int32:3", gpart, 10, 1009, 0);
    resume_case("mem:N=1009,vars=x:int32:3", gpart, 0, 1009, 0);
    resume_case("mem:N=1009,vars=x:int32:3", gpart, -1, 1009, 0);
    resume_case("mem:N=997,vars=x:int32:3", gpad, 7, 997, 0);
    resume_case("mem:N=1000,vars=x:int32:3", gdrop, 3, 1000, 1);
    int status = ft_mpi_summary("test_state global", MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
  }
  /* chunk_samples=0 on a small dataset depends on the world size (4 ranks:
   * 2003 / 128 = 15 rows, 3: 20, 5: 12): the resumed loaders keep the
   * saved size, so the rest of the epoch is exactly the unserved samples */
  static const char *const autocs[] = {
      "tail", "partial", "batch_size", "7", "chunk_samples", "0", NULL};
  resume_case("mem:N=2003,vars=x:int32:3", autocs, 10, 2003, 0);
  resume_case("mem:N=1009,vars=x:int32:3", partial, 10, 1009, 0);
  resume_case("mem:N=1009,vars=x:int32:3", partial, 0, 1009, 0);
  resume_case("mem:N=1009,vars=x:int32:3", partial, -1, 1009,
              0); /* after the last batch */
  resume_case("mem:N=997,vars=x:int32:3", pad, 5, 997, 0);
  resume_case("mem:N=1000,vars=x:int32:3", drop, 3, 1000, 1);
  resume_case("mem:N=500,vars=x:int32:3", coll, 20, 500, 0);
  resume_case("mem:N=333,vars=x:int32:3", nosh, 2, 333, 0);
  signal_case(0);
  signal_case(1);
  signal_case(2);
  bad_states();
  int status = ft_mpi_summary("test_state", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
