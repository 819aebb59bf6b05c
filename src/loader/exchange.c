/*
 * exchange.c - moving one global window's samples to the ranks that serve
 * them (shuffle=global).
 *
 * Why one MPI_Ialltoallv per window: the plan (plan/global.c) makes every
 * rank send and receive about the same number of rows, so one all-to-all
 * with a contiguous row datatype moves a window in one collective, and the
 * non-blocking form lets the pipeline serve window w while w+1 is in
 * flight.  Why agree first: a rank whose read failed must not leave the
 * others waiting in the all-to-all, so every rank's outcome is reduced
 * (bounded by collective_timeout) before anything is posted, and every rank
 * returns the same error.  Two forms: ferry__exchange_start copies kept
 * samples to a serve buffer and finish unpacks the received ones into it
 * (the read buffer is free as soon as the exchange is posted);
 * ferry__exchange_start_into receives straight into the caller's buffer and
 * copies nothing, so that the pipeline serves kept samples from the read
 * buffer and received ones from where they landed: two passes over the
 * data fewer (docs/performance.md "Global shuffle"); nor does it move what
 * a rank sends itself (1/P of the deal), which is served from the read
 * buffer too.
 */
#include "config.h"
#include "loader/exchange.h"
#include "util/agree.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int mpi_err(ferry__err *err, int rank, int mpirc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpirc, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof msg, "MPI error %d", mpirc);
  return ferry__seterr_on(err, rank, FERRY_EMPI, "%s failed: %s", what, msg);
}

int ferry__exchange_init(ferry__exchange *x, MPI_Comm comm, size_t row_bytes,
                         ferry__err *err) {
  memset(x, 0, sizeof *x);
  x->comm = comm;
  x->req = MPI_REQUEST_NULL;
  int rc = MPI_Comm_rank(comm, &x->rank);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(comm, &x->size);
  if (rc != MPI_SUCCESS)
    return mpi_err(err, 0, rc, "exchange: MPI_Comm_rank/size");
  if (row_bytes < 1 || row_bytes > INT_MAX)
    return ferry__seterr(err, FERRY_EINVAL,
                         "exchange: a sample of %zu bytes (1 to %d)", row_bytes,
                         INT_MAX);
  x->row_bytes = row_bytes;
  x->counts = calloc(4 * (size_t)x->size + 4, sizeof *x->counts);
  if (!x->counts)
    return ferry__oom(err, -1, (4 * (size_t)x->size + 4) * sizeof *x->counts,
                      "exchange: the counts of %d ranks", x->size);
  rc = MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &x->row);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&x->row);
  if (rc != MPI_SUCCESS) {
    free(x->counts);
    x->counts = NULL;
    return mpi_err(err, x->rank, rc, "exchange: MPI_Type_contiguous");
  }
  x->have_row = 1;
  return 0;
}

void ferry__exchange_free(ferry__exchange *x) {
  if (!x)
    return;
  if (!x->pending && !x->abandoned) {
    ferry__big_free(x->send);
    ferry__big_free(x->recv);
    free(x->counts);
  }
  if (x->have_row)
    MPI_Type_free(&x->row);
  memset(x, 0, sizeof *x);
}

/* A staging buffer of at least rows rows; 0 or FERRY_ENOMEM. */
static int grow(unsigned char **buf, size_t *cap, int64_t rows, size_t rb) {
  if (rows < 0 || (uint64_t)rows > SIZE_MAX / rb)
    return FERRY_ENOMEM;
  size_t want = (size_t)rows * rb;
  if (want <= *cap && *buf)
    return 0;
  ferry__big_free(*buf);
  *cap = 0;
  *buf = ferry__big_alloc(want ? want : 1);
  if (!*buf)
    return FERRY_ENOMEM;
  *cap = want;
  return 0;
}

/* Counts, staging and packing: this rank's part before the agreement. */
static int prepare(ferry__exchange *x, const ferry__global_window *win,
                   const void *read, void *serve, ferry__err *err) {
  const size_t rb = x->row_bytes;
  if (win->P != x->size)
    return ferry__seterr_on(err, x->rank, FERRY_EINTERNAL,
                            "exchange: a table of %d ranks on %d ranks", win->P,
                            x->size);
  if (win->nsend > INT_MAX || win->nrecv > INT_MAX)
    return ferry__seterr_on(err, x->rank, FERRY_ENOTSUP,
                            "exchange: window %lld sends %lld and receives "
                            "%lld samples, more than MPI's int counts; lower "
                            "shuffle_buffer or chunk_samples",
                            (long long)win->window, (long long)win->nsend,
                            (long long)win->nrecv);
  int sent = grow(&x->send, &x->send_cap, win->nsend, rb);
  if (sent || (!x->into && grow(&x->recv, &x->recv_cap, win->nrecv, rb)))
    return ferry__oom(err, x->rank,
                      (size_t)(sent ? win->nsend : win->nrecv) * rb,
                      "exchange: the %s staging of window %lld (%lld + %lld "
                      "samples of %zu bytes)",
                      sent ? "send" : "receive", (long long)win->window,
                      (long long)win->nsend, (long long)win->nrecv, rb);
  int *sc = x->counts, *sd = sc + x->size, *rc = sd + x->size,
      *rd = rc + x->size;
  for (int q = 0; q < x->size; q++) {
    sc[q] = (int)win->sendcounts[q];
    sd[q] = (int)win->sdispls[q];
    rc[q] = (int)win->recvcounts[q];
    rd[q] = (int)win->rdispls[q];
    if (q != x->rank) {
      x->bytes_sent += win->sendcounts[q] * (int64_t)rb;
      x->bytes_received += win->recvcounts[q] * (int64_t)rb;
    }
  }
  /* start_into: the rank's own group stays where it was read */
  int64_t self0 = win->sdispls[x->rank], self1 = self0;
  if (x->into) {
    self1 = self0 + win->sendcounts[x->rank];
    sc[x->rank] = rc[x->rank] = 0;
  }
  const unsigned char *in = read;
  unsigned char *out = serve;
  for (int64_t k = 0; k < win->nsend; k++)
    if (k < self0 || k >= self1)
      memcpy(x->send + (size_t)k * rb, in + (size_t)win->send_item[k] * rb, rb);
  for (int64_t j = 0; out && j < win->nserve; j++)
    if (win->serve_local[j] >= 0)
      memcpy(out + (size_t)j * rb, in + (size_t)win->serve_local[j] * rb, rb);
  return 0;
}

/* Every rank's outcome, bounded by timeout: 0, the lowest failing rank's
 * code and message, FERRY_EPEER or FERRY_EMPI. */
static int agree_timed(ferry__exchange *x, int rc, double timeout,
                       int64_t window, ferry__err *err) {
  /* in and out live with the counts: a request that timed out may still
   * write them, so they are never on the stack nor freed then */
  int *in = x->counts + 4 * x->size, *out = in + 2;
  in[0] = rc < 0 ? 0 : 1;
  in[1] = x->rank;
  MPI_Request req;
  int mrc = MPI_Iallreduce(in, out, 1, MPI_2INT, MPI_MINLOC, x->comm, &req);
  if (mrc != MPI_SUCCESS)
    return mpi_err(err, x->rank, mrc, "exchange: MPI_Iallreduce");
  int w = ferry__coll_wait(&req, timeout);
  if (w < 0)
    return ferry__seterr_on(err, x->rank, FERRY_EMPI,
                            "exchange: MPI_Test failed");
  if (w > 0) {
    x->abandoned = 1;
    return ferry__seterr_on(err, x->rank, FERRY_EPEER,
                            "no answer from the other ranks within %g s "
                            "(collective_timeout) before the exchange of "
                            "window %lld",
                            timeout, (long long)window);
  }
  if (out[0] == 1)
    return 0;
  return ferry__agree_share(x->comm, x->rank, out[1], rc, err);
}

/* Both forms: serve NULL copies nothing (the caller serves kept samples
 * from read), into non-NULL receives there rather than in x->recv. */
static int start(ferry__exchange *x, const ferry__global_window *win,
                 const void *read, void *serve, unsigned char *into,
                 int local_rc, double timeout, ferry__err *err) {
  if (x->abandoned)
    return ferry__seterr_on(err, x->rank, FERRY_EPEER,
                            "exchange: an earlier exchange timed out");
  if (x->pending)
    return ferry__seterr_on(err, x->rank, FERRY_ESTATE,
                            "exchange: window %lld is still in flight",
                            (long long)x->window);
  x->into = into;
  int rc = local_rc;
  if (!rc)
    rc = prepare(x, win, read, serve, err);
  rc = agree_timed(x, rc, timeout, win->window, err);
  if (rc)
    return rc;
  int *sc = x->counts, *sd = sc + x->size, *rcv = sd + x->size,
      *rd = rcv + x->size;
  int mrc = MPI_Ialltoallv(x->send, sc, sd, x->row, into ? into : x->recv, rcv,
                           rd, x->row, x->comm, &x->req);
  if (mrc != MPI_SUCCESS)
    return mpi_err(err, x->rank, mrc, "exchange: MPI_Ialltoallv");
  x->pending = 1;
  x->window = win->window;
  return 0;
}

int ferry__exchange_start(ferry__exchange *x, const ferry__global_window *win,
                          const void *read, void *serve, int local_rc,
                          double timeout, ferry__err *err) {
  return start(x, win, read, serve, NULL, local_rc, timeout, err);
}

int ferry__exchange_start_into(ferry__exchange *x,
                               const ferry__global_window *win,
                               const void *read, void *recv, int local_rc,
                               double timeout, ferry__err *err) {
  return start(x, win, read, NULL, recv, local_rc, timeout, err);
}

int ferry__exchange_finish(ferry__exchange *x, const ferry__global_window *win,
                           void *serve, double timeout, ferry__err *err) {
  if (!x->pending)
    return ferry__seterr_on(err, x->rank, FERRY_ESTATE,
                            "exchange: no exchange in flight");
  if (win->window != x->window)
    return ferry__seterr_on(err, x->rank, FERRY_EINTERNAL,
                            "exchange: finishing window %lld with the table "
                            "of window %lld",
                            (long long)x->window, (long long)win->window);
  int w = ferry__coll_wait(&x->req, timeout);
  if (w < 0)
    return ferry__seterr_on(err, x->rank, FERRY_EMPI,
                            "exchange: MPI_Test failed");
  if (w > 0) {
    x->abandoned = 1; /* the staging stays with MPI's pending request */
    return ferry__seterr_on(err, x->rank, FERRY_EPEER,
                            "no answer from the other ranks within %g s "
                            "(collective_timeout) in the exchange of window "
                            "%lld",
                            timeout, (long long)x->window);
  }
  x->pending = 0;
  const size_t rb = x->row_bytes;
  unsigned char *out = serve;
  if (!out || x->into)
    return 0; /* ferry__exchange_start_into: nothing to unpack */
  for (int64_t j = 0; j < win->nserve; j++) {
    if (win->serve_local[j] >= 0)
      continue;
    int64_t at = win->rdispls[win->src_rank[j]] + win->src_off[j];
    memcpy(out + (size_t)j * rb, x->recv + (size_t)at * rb, rb);
  }
  return 0;
}
