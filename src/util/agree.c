/*
 * agree.c - the same error on every rank, and the other small collectives
 * every layer needs (util/agree.h).
 *
 * Why one place: a collective step that fails on one rank must fail on all
 * of them, with the same code and the same words, or ranks diverge into
 * different collectives and hang.  The pattern (mpiFileUtils' alltrue, with
 * the reason attached) is an MPI_Allreduce(MINLOC) that finds the lowest
 * failing rank, then an MPI_Bcast of its code, rank and message.
 */
#include "config.h"
#include "util/agree.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What travels when a rank's error is shared. */
typedef struct wire_err {
  int code;
  int has_rank;
  int rank;
  char msg[FERRY__MSG_MAX];
} wire_err;

static int mpi_fail(ferry__err *err, int rank, const char *call) {
  return ferry__seterr_on(err, rank, FERRY_EMPI, "%s failed", call);
}

int ferry__agree_share(MPI_Comm comm, int rank, int root, int rc,
                       ferry__err *err) {
  wire_err w;
  memset(&w, 0, sizeof w);
  if (rank == root) {
    w.code = rc < 0 ? rc : FERRY_EINTERNAL;
    snprintf(w.msg, sizeof w.msg, "%s", err->msg);
    w.has_rank = err->has_rank;
    w.rank = err->rank;
    /* A message that does not say where it happened gets the rank. */
    if (!w.has_rank && strncmp(w.msg, "rank ", 5) != 0) {
      w.has_rank = 1;
      w.rank = rank;
    }
  }
  if (MPI_Bcast(&w, (int)sizeof w, MPI_BYTE, root, comm) != MPI_SUCCESS)
    return mpi_fail(err, rank, "MPI_Bcast");
  w.msg[sizeof w.msg - 1] = '\0';
  if (w.has_rank)
    return ferry__seterr_on(err, w.rank, w.code, "%s", w.msg);
  return ferry__seterr(err, w.code, "%s", w.msg);
}

int ferry__agree(MPI_Comm comm, int rank, int rc, ferry__err *err) {
  int in[2] = {rc < 0 ? 0 : 1, rank}, out[2];
  if (MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm) != MPI_SUCCESS)
    return mpi_fail(err, rank, "MPI_Allreduce");
  if (out[0] == 1)
    return 0;
  return ferry__agree_share(comm, rank, out[1], rc, err);
}

/* The general case of ferry__agree_check: three rounds (allocation, min,
 * max), for long vectors only. */
static int agree_same_long(MPI_Comm comm, int rank, const uint64_t *v, int n,
                           int *which, ferry__err *err) {
  *which = -1;
  uint64_t *lo = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *lo);
  int rc = lo ? 0 : FERRY_ENOMEM;
  /* Every rank takes part in the reductions even when its malloc failed,
   * so the calls stay matched; the failure is agreed on below. */
  int ok[2] = {lo != NULL, 0};
  if (MPI_Allreduce(&ok[0], &ok[1], 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    rc = mpi_fail(err, rank, "MPI_Allreduce");
  else if (!ok[1]) /* here, or on another rank */
    rc = ferry__oom(err, rank, 2 * (size_t)(n > 0 ? n : 1) * sizeof *lo,
                    "comparing %d values across ranks", n);
  else {
    uint64_t *hi = lo + n;
    if (MPI_Allreduce(v, lo, n, MPI_UINT64_T, MPI_MIN, comm) != MPI_SUCCESS ||
        MPI_Allreduce(v, hi, n, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
      rc = mpi_fail(err, rank, "MPI_Allreduce");
    for (int i = 0; !rc && i < n; i++)
      if (lo[i] != hi[i]) {
        *which = i;
        rc = FERRY_EMISMATCH;
      }
  }
  free(lo);
  return rc;
}

/*
 * One round for both questions, "did some rank fail?" and "are the values
 * the same everywhere?": a single MPI_Allreduce(MIN) of
 * [failing rank or UINT64_MAX, v..., ~v...] (the minimum of ~v is the
 * complement of the maximum of v).  On 64 processes sharing two cores each
 * round costs milliseconds of scheduling, so ferry_open and ferry_set_epoch
 * fuse their agreements here (docs/performance.md, plan-scale).
 */
#define AGREE_SHORT 128

int ferry__agree_check(MPI_Comm comm, int rank, int rc, const uint64_t *v,
                       int n, int *which, uint64_t *lo, uint64_t *hi,
                       ferry__err *err) {
  *which = -1;
  if (n > AGREE_SHORT) {
    rc = ferry__agree(comm, rank, rc, err);
    return rc ? rc : agree_same_long(comm, rank, v, n, which, err);
  }
  uint64_t in[2 * AGREE_SHORT + 1], out[2 * AGREE_SHORT + 1];
  in[0] = rc < 0 ? (uint64_t)rank : UINT64_MAX;
  for (int i = 0; i < n; i++) {
    in[1 + i] = rc < 0 ? 0 : v[i];
    in[1 + n + i] = rc < 0 ? 0 : ~v[i];
  }
  if (MPI_Allreduce(in, out, 2 * n + 1, MPI_UINT64_T, MPI_MIN, comm) !=
      MPI_SUCCESS)
    return mpi_fail(err, rank, "MPI_Allreduce");
  if (out[0] != UINT64_MAX)
    return ferry__agree_share(comm, rank, (int)out[0], rc, err);
  int bad = 0;
  for (int i = 0; i < n; i++) {
    if (lo)
      lo[i] = out[1 + i];
    if (hi)
      hi[i] = ~out[1 + n + i];
    if (!bad && out[1 + i] != ~out[1 + n + i]) {
      *which = i;
      bad = 1;
    }
  }
  return bad ? FERRY_EMISMATCH : 0;
}

int ferry__agree_same(MPI_Comm comm, int rank, const uint64_t *v, int n,
                      int *which, ferry__err *err) {
  return ferry__agree_check(comm, rank, 0, v, n, which, NULL, NULL, err);
}

int ferry__bcast_blob(MPI_Comm comm, int rank, int root, void **buf,
                      size_t *len, const char *what, ferry__err *err) {
  return ferry__bcast_blob_rc(comm, rank, root, 0, buf, len, what, err);
}

/* root's failure travels as the length ULLONG_MAX: the round that sends
 * the length is the agreement too. */
int ferry__bcast_blob_rc(MPI_Comm comm, int rank, int root, int root_rc,
                         void **buf, size_t *len, const char *what,
                         ferry__err *err) {
  unsigned long long n = rank != root ? 0 : root_rc < 0 ? ULLONG_MAX : *len;
  int rc = 0;
  if (MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, comm) != MPI_SUCCESS)
    return ferry__seterr(err, FERRY_EMPI, "MPI_Bcast of %s failed", what);
  if (n == ULLONG_MAX)
    return ferry__agree_share(comm, rank, root, root_rc, err);
  if (rank != root) {
    *buf = malloc(n ? n : 1);
    *len = (size_t)n;
    if (!*buf)
      rc = ferry__oom(err, rank, (size_t)(n ? n : 1), "%s", what);
  }
  rc = ferry__agree(comm, rank, rc, err);
  const size_t piece = (size_t)1 << 30;
  for (size_t off = 0; !rc && off < n; off += piece) {
    size_t c = n - off < piece ? n - off : piece;
    if (MPI_Bcast((char *)*buf + off, (int)c, MPI_BYTE, root, comm) !=
        MPI_SUCCESS)
      rc = ferry__seterr(err, FERRY_EMPI, "MPI_Bcast of %s failed", what);
  }
  return rc;
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ferry__coll_wait(MPI_Request *req, double timeout) {
  int done = 0;
  if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return FERRY_EMPI;
  double t0 = done ? 0 : mono_now();
  while (!done) {
    double dt = mono_now() - t0;
    if (timeout > 0 && dt >= timeout)
      return 1;
    if (dt > 0.01) {
      struct timespec pause = {0, 100000};
      nanosleep(&pause, NULL);
    } else if (dt > 0.0002) {
      sched_yield();
    }
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return FERRY_EMPI;
  }
  return 0;
}
