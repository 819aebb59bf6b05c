/*
 * util/agree.h - the collective toolkit: "the same outcome on every rank",
 * written once.  Every step that can fail on one rank before (or instead
 * of) a collective ends with ferry__agree; every cross-rank consistency check
 * is ferry__agree_same (ferry__agree_check: both in one round); every
 * broadcast of a variable-size buffer is
 * ferry__bcast_blob.  All functions here are COLLECTIVE over comm: every
 * rank calls them in the same order.
 */
#ifndef FERRY_AGREE_H
#define FERRY_AGREE_H

#include "util/util.h"

/**
 * Agree on the outcome of a local step.  rc is this rank's result (0, or a
 * negative code with err set).  Returns 0 on every rank when every rank
 * succeeded; otherwise the lowest failing rank's code, and err holds its
 * message and rank (ferry__err_text formats "rank R: ...") on every rank.
 */
int ferry__agree(MPI_Comm comm, int rank, int rc, ferry__err *err);

/**
 * Every rank takes root's error: root's rc (FERRY_EINTERNAL when root has
 * none) and message, with root's rank attached.  For callers that already
 * agreed on which rank failed (ferry_next's certification).  Returns the
 * code.
 */
int ferry__agree_share(MPI_Comm comm, int rank, int root, int rc,
                       ferry__err *err);

/**
 * Check that v[0..n) holds the same values on every rank.  Returns 0, or
 * FERRY_EMISMATCH with *which = the first index that differs (err is not
 * set: the caller names what differs, then agrees on the message), or
 * FERRY_EMPI with err set.
 */
int ferry__agree_same(MPI_Comm comm, int rank, const uint64_t *v, int n,
                      int *which, ferry__err *err);

/**
 * ferry__agree and ferry__agree_same in one collective round (one
 * MPI_Allreduce when n <= 128): returns the lowest failing rank's error on
 * every rank as ferry__agree does when some rank's rc < 0 (v is then not
 * compared); otherwise 0, or FERRY_EMISMATCH with *which = the first index
 * that differs (err not set).  lo and hi, when not NULL, receive the minimum
 * and maximum of each value over ranks (n <= 128 only).
 */
int ferry__agree_check(MPI_Comm comm, int rank, int rc, const uint64_t *v,
                       int n, int *which, uint64_t *lo, uint64_t *hi,
                       ferry__err *err);

/**
 * Broadcast root's *len bytes at *buf; the other ranks receive a malloc'd
 * copy in *buf (theirs must be NULL) and its length in *len.  Sent in
 * pieces of at most 1 GiB (MPI counts are int).  Failures (out of memory on
 * one rank, MPI errors) are agreed: the same code on every rank.  what
 * names the buffer in messages ("the manifest").
 */
int ferry__bcast_blob(MPI_Comm comm, int rank, int root, void **buf,
                      size_t *len, const char *what, ferry__err *err);

/**
 * ferry__bcast_blob with root's result root_rc (0, or a negative code with
 * err set on root): when it failed every rank returns root's error (as
 * ferry__agree would), in the same round as the length.
 */
int ferry__bcast_blob_rc(MPI_Comm comm, int rank, int root, int root_rc,
                         void **buf, size_t *len, const char *what,
                         ferry__err *err);

/**
 * Wait for a non-blocking collective (MPI_Iallreduce ...) at most timeout
 * seconds (0: forever), polling with MPI_Test: spinning first, then
 * yielding, then sleeping 100 us between tests, so a quick collective
 * costs what the blocking call costs and a long wait leaves the CPU to the
 * pipeline's threads.  Returns 0 when it completed, 1 when the time ran out
 * (the request is still pending: its buffers must stay allocated and it
 * must never be waited on again), or FERRY_EMPI.  LOCAL.
 */
int ferry__coll_wait(MPI_Request *req, double timeout);

#endif /* FERRY_AGREE_H */
