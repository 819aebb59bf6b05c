/*
 * loader/exchange.h - one global window's samples moved to the ranks that
 * serve them (shuffle=global, docs/design/global-shuffle.md): pack from
 * the read buffer, MPI_Ialltoallv, unpack into the window's serve buffer
 * (ferry__exchange_start), or receive straight into the caller's buffer
 * with no copy of kept samples (ferry__exchange_start_into, what the
 * pipeline uses), from the tables of plan/global.h.  No plan, no file: the
 * pipeline reads, this moves.
 */
#ifndef FERRY_LOADER_EXCHANGE_H
#define FERRY_LOADER_EXCHANGE_H

#include "plan/global.h"

/**
 * Staging buffers and the request of one exchange in flight.  comm must be
 * a communicator of its own (an MPI_Comm_dup of the loader's), used by one
 * thread: the exchange's collectives must not interleave with others.
 */
typedef struct ferry__exchange {
  MPI_Comm comm;
  int rank, size;
  size_t row_bytes;
  MPI_Datatype row;
  int have_row;
  unsigned char *send, *recv; /* staging (ferry__big_alloc)           */
  unsigned char *into;        /* the caller's receive buffer, or NULL */
  size_t send_cap, recv_cap;  /* bytes                                */
  int *counts; /* [4 * size + 4]: sc, sd, rc, rd, agreement     */
  MPI_Request req;
  int pending;   /* an MPI_Ialltoallv in flight              */
  int abandoned; /* it timed out: its buffers are MPI's now  */
  int64_t window;
  int64_t bytes_sent, bytes_received; /* over the object's life (rows
                                       * to other ranks only)          */
} ferry__exchange;

/** LOCAL.  row_bytes: bytes of one sample in the buffers (<= INT_MAX).
 *  Returns 0, FERRY_EINVAL, FERRY_ENOMEM, FERRY_EMPI. */
int ferry__exchange_init(ferry__exchange *x, MPI_Comm comm, size_t row_bytes,
                         ferry__err *err);
/** LOCAL.  After an exchange that timed out, its buffers are left to MPI
 *  (leaked), never freed under a pending request. */
void ferry__exchange_free(ferry__exchange *x);

/**
 * COLLECTIVE over comm.  Start the exchange of win (this rank's table):
 * local_rc is this rank's outcome of reading the window (0, or a negative
 * code with err set); kept samples are copied from read to serve at once,
 * the sent ones packed, so read may be reused when this returns.  Every
 * rank first agrees on every rank's outcome: any failure (local_rc, out of
 * memory for the staging, counts beyond MPI's int) gives every rank the
 * lowest failing rank's code and message and starts nothing.  No answer
 * within timeout seconds (0: forever) is FERRY_EPEER.  Returns 0,
 * FERRY_EPEER, FERRY_EMPI, or the agreed code.
 */
int ferry__exchange_start(ferry__exchange *x, const ferry__global_window *win,
                          const void *read, void *serve, int local_rc,
                          double timeout, ferry__err *err);

/**
 * COLLECTIVE over comm.  ferry__exchange_start without copies: the received
 * samples land in recv (the caller's, at least win->nrecv rows; offset
 * rdispls[src_rank[j]] + src_off[j] is served at position j), kept samples
 * are served by the caller from read (serve_local), and so are those this
 * rank sends itself (src_rank[j] == rank: read item send_item[sdispls[rank]
 * + src_off[j]]), which are neither packed nor moved (their part of recv
 * stays unwritten).  read is not written; recv belongs to MPI until _finish
 * returns 0 (after FERRY_EPEER, forever: the caller must never free it).
 */
int ferry__exchange_start_into(ferry__exchange *x,
                               const ferry__global_window *win,
                               const void *read, void *recv, int local_rc,
                               double timeout, ferry__err *err);

/**
 * Waits for the exchange started last (timeout seconds, 0: forever) and
 * unpacks the received samples into serve (position j at j * row_bytes;
 * the same serve buffer and table as the start).  Returns 0, FERRY_EPEER
 * (no answer in time: the exchange is abandoned), FERRY_EMPI, FERRY_ESTATE
 * (nothing started).  After ferry__exchange_start_into, serve is unused
 * (may be NULL).
 */
int ferry__exchange_finish(ferry__exchange *x, const ferry__global_window *win,
                           void *serve, double timeout, ferry__err *err);

#endif /* FERRY_LOADER_EXCHANGE_H */
