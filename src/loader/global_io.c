/*
 * global_io.c - the I/O thread's loop for shuffle=global: each global
 * window's reads, the exchange of its samples to the ranks that serve them
 * (exchange.c), and the rows published to the workers.  Split out of
 * pipeline.c, whose I/O thread calls ferry__io_global.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include "loader/loader.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * One round per global window, on every rank (the exchange is collective
 * on L->xcomm, which only this thread uses): build the window's table, read
 * its extents into a read buffer (rows of all variables, row_total bytes a
 * sample), start the exchange (which first agrees on every rank's read
 * outcome, so a failed read is every rank's error and nobody waits for an
 * all-to-all that never comes), wait for it, and publish the serve buffer
 * as the window's one extent.  Admission is the same rule as for any plan
 * (window w+1 is read and exchanged while window w is served), and stops
 * use the collective rounds' protocol: after a stop or an error a rank
 * keeps entering the rounds some rank entered, as dummies whose failed
 * outcome every rank sees, so the exchanges always match. */

/* Window w's served order: rows of its one buffer, the read items (kept
 * samples and those the rank deals itself, served where they were read)
 * then the receive staging (the others, served where MPI put them): no
 * serve buffer, no unpacking. */
static int make_global_slots(epoch_state *ep, int64_t w,
                             const ferry__global_window *win, ferry__err *err) {
  int64_t skip = w ? 0 : ep->gskip; /* a resumed epoch's first window */
  int64_t n = win->nserve > skip ? win->nserve - skip : 0;
  size_t bytes = (size_t)(n ? n : 1) * sizeof(ferry__slot);
  ferry__slot *s = malloc(bytes);
  if (!s)
    return ferry__oom(err, ep->L->rank, bytes,
                      "dataset %s: the sample order of global window %lld",
                      ep->L->m.spec, (long long)w);
  for (int64_t j = 0; j < n; j++) {
    int64_t k = skip + j, row = win->serve_local[k];
    int src = win->src_rank[k];
    if (row < 0 && src == win->rank) /* sent to itself: never moved */
      row = win->send_item[win->sdispls[src] + win->src_off[k]];
    else if (row < 0)
      row = win->nread + win->rdispls[src] + win->src_off[k];
    s[j] = (ferry__slot){win->serve_sample[k], w, row, win->serve_padded[k]};
  }
  pthread_mutex_lock(&ep->mu);
  ep->win_slots[w] = s;
  pthread_mutex_unlock(&ep->mu);
  return 0;
}

/* The window's extents, in order, into read: row i of the buffer is read
 * item i, its variables side by side (what the exchange moves). */
static int global_read(epoch_state *ep, ferry__io *io,
                       const ferry__global_window *win, unsigned char *read,
                       ferry__err *err) {
  ferry_loader *L = ep->L;
  unsigned char *tmp = NULL;
  size_t tcap = 0;
  int64_t at = 0;
  int rc = 0;
  double t0 = ferry__now();
  for (int64_t e = 0; !rc && e < win->nextents; e++) {
    const ferry__extent *x = &win->extents[e];
    unsigned char *dst = read + (size_t)at * L->row_total;
    if (L->m.nvars == 1) {
      rc = L->be->io_read(io, x->part, 0, x->row, x->count, dst, err);
    } else {
      size_t bytes = (size_t)x->count * L->row_total;
      if (bytes > tcap) {
        free(tmp);
        tmp = malloc(bytes);
        tcap = tmp ? bytes : 0;
        if (!tmp)
          rc = ferry__oom(err, L->rank, bytes,
                          "%lld rows of part %lld (%s) of dataset %s",
                          (long long)x->count, (long long)x->part,
                          ferry__part_path(L, x->part), L->m.spec);
      }
      for (int v = 0; !rc && v < L->m.nvars; v++)
        rc = L->be->io_read(io, x->part, v, x->row, x->count,
                            tmp + (size_t)x->count * L->var_prefix[v], err);
      for (int v = 0; !rc && v < L->m.nvars; v++) {
        size_t rb = L->m.vars[v].row_bytes;
        const unsigned char *src = tmp + (size_t)x->count * L->var_prefix[v];
        for (int64_t i = 0; i < x->count; i++)
          memcpy(dst + (size_t)i * L->row_total + L->var_prefix[v],
                 src + (size_t)i * rb, rb);
      }
    }
    at += x->count;
  }
  free(tmp);
  if (!rc) {
    pthread_mutex_lock(&L->stats_mu);
    L->stats.bytes_read += at * (int64_t)L->row_total;
    L->stats.read_seconds += ferry__now() - t0;
    pthread_mutex_unlock(&L->stats_mu);
  }
  return rc;
}

/* Rows (variables side by side) into columns (each variable's rows one
 * after the other), the layout of an extent's buffer. */
static void rows_to_columns(const ferry_loader *L, const unsigned char *rows,
                            unsigned char *cols, int64_t n) {
  for (int v = 0; v < L->m.nvars; v++) {
    size_t rb = L->m.vars[v].row_bytes;
    unsigned char *dst = cols + (size_t)n * L->var_prefix[v];
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)i * rb,
             rows + (size_t)i * L->row_total + L->var_prefix[v], rb);
  }
}

/* Window w up to the start of its exchange: table (unless built), slots,
 * buffer, reads.
 * The buffer holds the read items, then room for the received samples.
 * Returns this rank's outcome (the exchange agrees on everyone's). */
static int global_prepare(epoch_state *ep, ferry__io *io, int64_t w,
                          ferry__global_window *win, int built,
                          unsigned char **read, ferry__err *err) {
  ferry_loader *L = ep->L;
  int rc = built ? 0
                 : ferry__global_window_build(ep->glob, L->rank, w + ep->gbase,
                                              win, err);
  if (!rc)
    rc = make_global_slots(ep, w, win, err);
  if (rc)
    return rc;
  int64_t rows = win->nread + win->nrecv;
  size_t rbytes = (size_t)(rows ? rows : 1) * L->row_total;
  *read = ferry__buf_get(L, rbytes);
  if (!*read)
    return ferry__oom(err, L->rank, rbytes,
                      "the %lld rows of global window %lld of dataset %s",
                      (long long)rows, (long long)w, L->m.spec);
  if (L->opts->io == FERRY__IO_COLLECTIVE)
    return 0; /* global_read_collective, which every rank calls */
  return global_read(ep, io, win, *read, err);
}

/* io=collective: every rank's reads of global window gw, and the parts
 * they touch, ascending and unique (*parts, *nparts).  Returns 0 or
 * FERRY_ENOMEM. */
static int global_all_reads(epoch_state *ep, int64_t gw, ferry__extent **ext,
                            int64_t *n, int64_t **parts, int64_t *nparts,
                            ferry__err *err) {
  int P = ep->L->size;
  int64_t total = 0;
  for (int q = 0; q < P; q++) {
    int rc = ferry__global_reads(ep->glob, q, gw, &ext[q], &n[q], err);
    if (rc)
      return rc;
    total += n[q];
  }
  *parts = malloc((size_t)(total ? total : 1) * sizeof **parts);
  if (!*parts)
    return ferry__oom(err, ep->L->rank,
                      (size_t)(total ? total : 1) * sizeof **parts,
                      "dataset %s: the %lld reads of global window %lld",
                      ep->L->m.spec, (long long)total, (long long)gw);
  int64_t k = 0;
  for (int q = 0; q < P; q++)
    for (int64_t e = 0; e < n[q]; e++)
      (*parts)[k++] = ext[q][e].part;
  qsort(*parts, (size_t)k, sizeof **parts, ferry__cmp_i64);
  int64_t u = 0;
  for (int64_t a = 0; a < k; a++)
    if (u == 0 || (*parts)[u - 1] != (*parts)[a])
      (*parts)[u++] = (*parts)[a];
  *nparts = u;
  return 0;
}

/* io=collective, one part of global window: calls collective reads per
 * variable (the most extents any rank reads from the part), this rank's
 * extents on it first (into tmp, per extent its variables one after the
 * other, then interleaved into read), then empty reads.  With *failed set
 * every call is an empty one, so the collectives stay matched. */
static void global_read_part(epoch_state *ep, ferry__io *io,
                             const ferry__extent *mine, int64_t nmine,
                             const int64_t *at, int64_t part, int64_t calls,
                             unsigned char *read, int *failed,
                             ferry__err *err) {
  ferry_loader *L = ep->L;
  static unsigned char scratch[1];
  int64_t rows = 0, k0 = -1, nk = 0;
  for (int64_t e = 0; e < nmine; e++)
    if (mine[e].part == part) {
      if (k0 < 0)
        k0 = e;
      nk++;
      rows += mine[e].count;
    }
  unsigned char *tmp = NULL;
  if (!*failed && nk > 0 && L->m.nvars > 1) {
    tmp = malloc((size_t)rows * L->row_total);
    if (!tmp) {
      ferry__oom(err, L->rank, (size_t)rows * L->row_total,
                 "%lld rows of part %lld (%s) of dataset %s", (long long)rows,
                 (long long)part, ferry__part_path(L, part), L->m.spec);
      *failed = FERRY_ENOMEM;
    }
  }
  for (int v = 0; v < L->m.nvars; v++) {
    size_t toff = 0;
    for (int64_t k = 0; k < calls; k++) {
      int64_t row = 0, count = 0;
      unsigned char *dst = scratch;
      if (k < nk) {
        const ferry__extent *x = &mine[k0 + k];
        if (!*failed) {
          row = x->row;
          count = x->count;
          dst = L->m.nvars == 1
                    ? read + (size_t)at[k0 + k] * L->row_total
                    : tmp + toff + (size_t)x->count * L->var_prefix[v];
        }
        toff += (size_t)x->count * L->row_total;
      }
      int rc = L->be->io_read(io, part, v, row, count, dst, err);
      if (rc && !*failed)
        *failed = rc;
    }
  }
  for (int64_t k = 0; tmp && !*failed && k < nk; k++) {
    const ferry__extent *x = &mine[k0 + k];
    const unsigned char *src = tmp;
    for (int64_t j = 0; j < k; j++)
      src += (size_t)mine[k0 + j].count * L->row_total;
    for (int v = 0; v < L->m.nvars; v++) {
      size_t rb = L->m.vars[v].row_bytes;
      const unsigned char *sv = src + (size_t)x->count * L->var_prefix[v];
      for (int64_t i = 0; i < x->count; i++)
        memcpy(read + (size_t)(at[k0 + k] + i) * L->row_total +
                   L->var_prefix[v],
               sv + (size_t)i * rb, rb);
    }
  }
  free(tmp);
}

/* io=collective: global window gw (pipeline window w) read with matched
 * collective calls on every rank, dummies and failed ranks included (they
 * read nothing).  Returns this rank's outcome: local_rc, or the first
 * failure. */
static int global_read_collective(epoch_state *ep, ferry__io *io, int64_t gw,
                                  unsigned char *read, int local_rc,
                                  ferry__err *err) {
  ferry_loader *L = ep->L;
  int P = L->size, failed = local_rc;
  ferry__extent **ext = calloc((size_t)P, sizeof *ext);
  int64_t *n = calloc((size_t)P, sizeof *n), *parts = NULL, nparts = 0;
  int rc = ext && n ? global_all_reads(ep, gw, ext, n, &parts, &nparts, err)
                    : FERRY_ENOMEM;
  if (rc && !failed && (!ext || !n)) /* else err names what failed */
    ferry__oom(err, L->rank, (size_t)P * (sizeof *ext + sizeof *n),
               "dataset %s: the reads of global window %lld by %d ranks",
               L->m.spec, (long long)gw, P);
  else if (rc && !failed && !strstr(err->msg, L->m.spec)) {
    char what[FERRY__MSG_MAX];
    memcpy(what, err->msg, sizeof what);
    what[sizeof what - 1] = '\0';
    ferry__seterr_on(err, L->rank, FERRY_ENOMEM, "dataset %s: %.900s",
                     L->m.spec, what);
  }
  if (rc) /* cannot stay matched without memory: stop reading */
    failed = failed ? failed : FERRY_ENOMEM;
  const ferry__extent *mine = rc ? NULL : ext[L->rank];
  int64_t nmine = rc ? 0 : n[L->rank];
  int64_t *at = rc ? NULL : malloc((size_t)(nmine + 1) * sizeof *at);
  if (!rc && !at && !failed) {
    failed = ferry__oom(err, L->rank, (size_t)(nmine + 1) * sizeof *at,
                        "dataset %s: the %lld reads of rank %d in global "
                        "window %lld",
                        L->m.spec, (long long)nmine, L->rank, (long long)gw);
    nmine = 0; /* still every call, empty */
  }
  for (int64_t e = 0, a = 0; at && e < nmine; a += mine[e].count, e++)
    at[e] = a;
  double t0 = ferry__now();
  for (int64_t i = 0; !rc && i < nparts; i++) {
    int64_t calls = 0;
    for (int q = 0; q < P; q++) {
      int64_t c = 0;
      for (int64_t e = 0; e < n[q]; e++)
        c += ext[q][e].part == parts[i];
      calls = c > calls ? c : calls;
    }
    global_read_part(ep, io, mine, nmine, at, parts[i], calls, read, &failed,
                     err);
  }
  if (!failed) {
    int64_t rows = 0;
    for (int64_t e = 0; e < nmine; e++)
      rows += mine[e].count;
    pthread_mutex_lock(&L->stats_mu);
    L->stats.bytes_read += rows * (int64_t)L->row_total;
    L->stats.read_seconds += ferry__now() - t0;
    pthread_mutex_unlock(&L->stats_mu);
  }
  for (int q = 0; ext && q < P; q++)
    free(ext[q]);
  free(ext);
  free(n);
  free(parts);
  free(at);
  return failed;
}

/* The exchange's cost, for ferry_stats. */
static void global_note(ferry_loader *L, const ferry__exchange *x,
                        int64_t sent0, double t0) {
  pthread_mutex_lock(&L->stats_mu);
  L->stats.exchange_bytes += x->bytes_sent - sent0;
  L->stats.exchange_seconds += ferry__now() - t0;
  pthread_mutex_unlock(&L->stats_mu);
}

void ferry__io_global(epoch_state *ep, ferry__io *io) {
  ferry_loader *L = ep->L;
  ferry__err err = {0};
  ferry__global_window wins[2]; /* window w's table is wins[w % 2] */
  memset(wins, 0, sizeof wins);
  int64_t built[2] = {-1, -1};
  int dummy = 0;
  double tmo = (double)L->opts->collective_timeout;
  for (int64_t w = 0; w < ep->nrounds && ferry__round_wait(ep, w, &dummy);
       w++) {
    unsigned char *buf = NULL;
    ferry__global_window *win = &wins[w % 2];
    int lrc = FERRY_ESTATE;
    if (!dummy)
      lrc = global_prepare(ep, io, w, win, built[w % 2] == w, &buf, &err);
    else
      ferry__seterr_on(&err, L->rank, lrc, "the epoch was stopped");
    built[w % 2] = -1;
    if (L->opts->io == FERRY__IO_COLLECTIVE)
      lrc = global_read_collective(ep, io, w + ep->gbase, buf, lrc, &err);
    int64_t sent0 = ep->xch->bytes_sent, rows = win->nread + win->nrecv;
    double t0 = ferry__now();
    unsigned char *recv = buf ? buf + (size_t)win->nread * L->row_total : NULL;
    int rc =
        ferry__exchange_start_into(ep->xch, win, buf, recv, lrc, tmo, &err);
    /* the next window's table while this one is in flight: CPU work in
     * place of waiting for the slowest rank in MPI_Test (a failure here is
     * left for global_prepare to meet and report); not exchange time */
    if (!rc && w + 1 < ep->nrounds) {
      ferry__err e2 = {0};
      double tb = ferry__now();
      if (!ferry__global_window_build(ep->glob, L->rank, w + 1 + ep->gbase,
                                      &wins[(w + 1) % 2], &e2))
        built[(w + 1) % 2] = w + 1;
      t0 += ferry__now() - tb;
    }
    if (!rc)
      rc = ferry__exchange_finish(ep->xch, win, NULL, tmo, &err);
    if (!rc)
      global_note(L, ep->xch, sent0, t0);
    if (!rc && L->m.nvars > 1) {
      unsigned char *cols =
          ferry__buf_get(L, (size_t)(rows ? rows : 1) * L->row_total);
      if (!cols)
        rc = ferry__oom(&err, L->rank, (size_t)(rows ? rows : 1) * L->row_total,
                        "the columns of global window %lld of dataset %s",
                        (long long)w, L->m.spec);
      else
        rows_to_columns(L, buf, cols, rows);
      ferry__buf_put(L, buf);
      buf = cols;
    }
    if (rc) {
      if (!ep->xch->abandoned) /* else MPI may still write into it */
        ferry__buf_put(L, buf);
      if (!dummy)
        ferry__publish_error(ep, rc, &err);
      dummy = 1;
      if (rc == FERRY_EPEER || rc == FERRY_EMPI)
        break; /* the exchange is gone: no later round can match */
      continue;
    }
    ferry__publish_rows(ep, w, buf, rows);
  }
  ferry__global_window_free(&wins[0]);
  ferry__global_window_free(&wins[1]);
}
