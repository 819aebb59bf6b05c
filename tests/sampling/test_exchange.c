/*
 * test_exchange.c - the exchange of shuffle=global (src/loader/exchange.c)
 * without the pipeline: every rank builds its tables of each global window
 * (src/plan/global.c), fills a read buffer whose rows encode the global
 * index of the sample they hold, and exchanges; every served row must then
 * decode to the sample the table says, every sample be served once over
 * all ranks (or as the tail rule says), and the rows moved between ranks
 * be what the plan's counts say.  Window w+1 is in flight while window w
 * is checked, as the pipeline will overlap them.  A read failure injected
 * on the last rank must give every rank the same error (its code, its
 * message, its rank) without a hang, and the next exchange must work.
 * Run by tests/sampling/exchange.sh on 1, 2, 3, 4 and 7 ranks.
 */
#include "config.h"
#include "core/options.h"
#include "loader/exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

enum { ROW = 24 };
static int rank, size;

static void encode(unsigned char *row, int64_t s) {
  int64_t b = s * 1000003 + 17;
  memcpy(row, &s, 8);
  memcpy(row + 8, &b, 8);
  for (int k = 0; k < 8; k++)
    row[16 + k] = (unsigned char)(s * 7 + k);
}

static int decodes_to(const unsigned char *row, int64_t s) {
  unsigned char want[ROW];
  encode(want, s);
  return memcmp(row, want, ROW) == 0;
}

typedef struct xcase {
  int64_t N, nparts, chunk, B, K, block;
  int tail, shuffle;
  double Q;
  int64_t inject; /* window where the last rank's read fails, or -1 */
} xcase;

typedef struct xplan {
  ferry__chunk *chunks, *pieces;
  int64_t *perm, npieces;
  ferry__global g;
} xplan;

static void xplan_free(xplan *p) {
  free(p->chunks);
  free(p->pieces);
  free(p->perm);
  ferry__global_free(&p->g);
}

static int xplan_make(const xcase *t, xplan *p) {
  memset(p, 0, sizeof *p);
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.nparts = t->nparts;
  m.parts = calloc((size_t)t->nparts, sizeof *m.parts);
  REQUIRE(m.parts != NULL, "out of memory");
  int64_t first = 0;
  for (int64_t q = 0; q < t->nparts; q++) {
    m.parts[q].num_samples = t->N * (q + 1) / t->nparts - t->N * q / t->nparts;
    m.parts[q].first_sample = first;
    first += m.parts[q].num_samples;
  }
  m.num_samples = t->N;
  ferry__plan_params pp = {t->B,    77, t->shuffle, t->block, t->K, 0,
                           t->tail, 0,  1.0,        2,        size};
  int64_t nchunks = 0;
  ferry__err err = {0};
  REQUIRE(ferry__chunks_make(&m, t->chunk, &p->chunks, &nchunks) == 0,
          "chunks");
  free(m.parts);
  REQUIRE(
      ferry__plan_pieces(p->chunks, nchunks, &pp, &p->pieces, &p->npieces) == 0,
      "pieces");
  p->perm = malloc((size_t)p->npieces * sizeof *p->perm);
  REQUIRE(p->perm != NULL, "out of memory");
  ferry__plan_permutation(&pp, p->npieces, p->perm);
  REQUIRE(ferry__global_init(&p->g, p->pieces, p->npieces, p->perm, &pp, t->Q,
                             &err) == 0,
          "global_init: %s", err.msg);
  return 0;
}

/* Check window x's serve buffer; count what it serves. */
static void check_served(const ferry__global_window *x,
                         const unsigned char *serve, int *served,
                         int64_t *pads) {
  int64_t bad = 0;
  for (int64_t j = 0; j < x->nserve; j++) {
    bad += !decodes_to(serve + (size_t)j * ROW, x->serve_sample[j]);
    if (x->serve_padded[j])
      (*pads)++;
    else
      served[x->serve_sample[j]]++;
  }
  CHECK(bad == 0, "window %lld: %lld rows are not the planned samples",
        (long long)x->window, (long long)bad);
}

/* The injected failure: every rank must get the last rank's error. */
static void check_injected(int rc, const ferry__err *err, int64_t w) {
  CHECK(rc == FERRY_EIO, "injected failure: rc %d, not FERRY_EIO", rc);
  CHECK(err->has_rank && err->rank == size - 1,
        "injected failure: the error names rank %d, not %d",
        err->has_rank ? err->rank : -1, size - 1);
  char want[64];
  snprintf(want, sizeof want, "injected read failure in window %lld",
           (long long)w);
  CHECK(strstr(err->msg, want) != NULL, "injected failure: message '%s'",
        err->msg);
}

/* Build window w's table, fill its read buffer and start its exchange
 * into serve (retrying once after an injected failure). */
static int start_window(const xcase *t, const xplan *p, ferry__exchange *ex,
                        int64_t w, ferry__global_window *x,
                        unsigned char **read, size_t *read_cap,
                        unsigned char *serve) {
  ferry__err err = {0};
  REQUIRE(ferry__global_window_build(&p->g, rank, w, x, &err) == 0,
          "window %lld: %s", (long long)w, err.msg);
  size_t need = (size_t)(x->nread ? x->nread : 1) * ROW;
  if (need > *read_cap) {
    free(*read);
    *read = malloc(need);
    *read_cap = need;
    REQUIRE(*read != NULL, "out of memory");
  }
  for (int64_t i = 0; i < x->nread; i++)
    encode(*read + (size_t)i * ROW, x->read_sample[i]);
  if (w == t->inject) {
    int local = 0;
    if (rank == size - 1)
      local = ferry__seterr(&err, FERRY_EIO,
                            "injected read failure in window %lld at "
                            "offset %lld",
                            (long long)w, (long long)(w * 4096));
    int rc = ferry__exchange_start(ex, x, *read, serve, local, 30.0, &err);
    check_injected(rc, &err, w);
    memset(&err, 0, sizeof err);
  }
  int rc = ferry__exchange_start(ex, x, *read, serve, 0, 30.0, &err);
  REQUIRE(rc == 0, "start window %lld: %s", (long long)w, err.msg);
  return 0;
}

static int run_case(const xcase *t) {
  xplan p;
  if (xplan_make(t, &p))
    return 1;
  /* every rank computed the same plan */
  uint64_t h = ferry__global_checksum(&p.g), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "the ranks' plan checksums differ");
  ferry__exchange ex;
  ferry__err err = {0};
  REQUIRE(ferry__exchange_init(&ex, MPI_COMM_WORLD, ROW, &err) == 0, "init: %s",
          err.msg);
  int *served = calloc((size_t)t->N, sizeof *served);
  int *total = calloc((size_t)t->N, sizeof *total);
  size_t scap = (size_t)(p.g.per_rank + (int64_t)size * t->B + 1) * ROW;
  unsigned char *serve[2] = {malloc(scap), malloc(scap)}, *read = NULL;
  size_t read_cap = 0;
  ferry__global_window x[2];
  memset(x, 0, sizeof x);
  REQUIRE(served && total && serve[0] && serve[1], "out of memory");
  int64_t pads = 0, nserved = 0, moved = 0;
  if (start_window(t, &p, &ex, 0, &x[0], &read, &read_cap, serve[0]))
    return 1;
  for (int64_t w = 0; w < p.g.nwindows; w++) {
    ferry__global_window *cur = &x[w % 2];
    REQUIRE(ferry__exchange_finish(&ex, cur, serve[w % 2], 30.0, &err) == 0,
            "finish window %lld: %s", (long long)w, err.msg);
    if (w + 1 < p.g.nwindows &&
        start_window(t, &p, &ex, w + 1, &x[(w + 1) % 2], &read, &read_cap,
                     serve[(w + 1) % 2]))
      return 1;
    check_served(cur, serve[w % 2], served, &pads); /* while w+1 flies */
    nserved += cur->nserve;
    for (int64_t i = 0; i < cur->nread; i++)
      moved += cur->dest_rank[i] != rank;
  }
  CHECK(nserved == ferry__global_rank_samples(&p.g, rank),
        "rank serves %lld samples, plan %lld", (long long)nserved,
        (long long)ferry__global_rank_samples(&p.g, rank));
  CHECK(ex.bytes_sent >= moved * ROW, "sent %lld bytes for %lld moved rows",
        (long long)ex.bytes_sent, (long long)moved);
  MPI_Allreduce(served, total, (int)t->N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int64_t all_pads = 0, never = 0, twice = 0;
  MPI_Allreduce(&pads, &all_pads, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  for (int64_t s = 0; s < t->N; s++) {
    never += total[s] == 0;
    twice += total[s] > 1;
  }
  CHECK(twice == 0, "%lld samples served twice", (long long)twice);
  CHECK(never == p.g.dropped, "%lld samples never served, plan drops %lld",
        (long long)never, (long long)p.g.dropped);
  CHECK(all_pads == p.g.padded, "%lld pads, plan %lld", (long long)all_pads,
        (long long)p.g.padded);
  if (rank == 0)
    printf("N=%lld tail=%d Q=%g on %d ranks: %lld windows, %lld batches, "
           "rank 0 sent %lld bytes to others\n",
           (long long)t->N, t->tail, t->Q, size, (long long)p.g.nwindows,
           (long long)p.g.num_batches, (long long)ex.bytes_sent);
  ferry__global_window_free(&x[0]);
  ferry__global_window_free(&x[1]);
  ferry__exchange_free(&ex);
  free(serve[0]);
  free(serve[1]);
  free(read);
  free(served);
  free(total);
  xplan_free(&p);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ft_set_rank(rank);
  const xcase cases[] = {
      {1009, 2, 7, 4, 3, 0, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS, 1.0, 1},
      {5000, 3, 16, 8, 2, 0, FERRY__TAIL_PAD, FERRY__SHUFFLE_CHUNKS, 0.3, 2},
      {100, 1, 5, 3, 1, 0, FERRY__TAIL_DROP, FERRY__SHUFFLE_CHUNKS, 1.0, -1},
      {2, 1, 1, 2, 1, 0, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS, 1.0, -1},
      {3, 1, 1, 2, 0, 0, FERRY__TAIL_PAD, FERRY__SHUFFLE_CHUNKS, 0.5, 0},
      {777, 2, 40, 5, 2, 5, FERRY__TAIL_PAD, FERRY__SHUFFLE_BLOCK, 1.0, 3},
      {4099, 1, 64, 16, 1, 0, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS, 1e-9,
       -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (run_case(&cases[i]))
      break;
  int status = ft_mpi_summary("test_exchange", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
