/*
 * iostage.c - the I/O stage's steps that both of its loops use, the
 * pipeline's (pipeline.c: independent and collective rounds) and
 * shuffle=global's (global_io.c): the read-buffer pool within the read
 * budget, the hand-offs of loaded rows and of the first error to the
 * workers, the admission of a collective round, and the clock.  Kept
 * apart so that the calls go one way: pipeline.c calls global_io.c, both
 * call this file, and it calls neither.
 */
#include "config.h"
#include "loader/loader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double ferry__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

unsigned char *ferry__buf_get(ferry_loader *L, size_t bytes) {
  unsigned char *drop[POOL_MAX];
  int ndrop = 0;
  pthread_mutex_lock(&L->pool_mu);
  for (int i = 0; i < L->npool; i++) {
    unsigned char *p = L->pool[i];
    size_t cap = *(size_t *)(p - BUF_HDR);
    if (cap == bytes) { /* exact sizes only: a larger buffer would hold
                           memory the budget does not count */
      L->pool[i] = L->pool[--L->npool];
      L->pool_bytes -= cap;
      L->out_bytes += cap;
      pthread_mutex_unlock(&L->pool_mu);
      return p;
    }
  }
  /* A miss: make room within the read budget before allocating. */
  while (L->npool > 0 &&
         L->pool_bytes + L->out_bytes + bytes > L->budget.read_bytes) {
    unsigned char *p = L->pool[--L->npool];
    L->pool_bytes -= *(size_t *)(p - BUF_HDR);
    drop[ndrop++] = p;
  }
  L->out_bytes += bytes;
  pthread_mutex_unlock(&L->pool_mu);
  for (int i = 0; i < ndrop; i++)
    ferry__big_free(drop[i]);
  unsigned char *p = ferry__big_alloc(bytes);
  if (!p) {
    pthread_mutex_lock(&L->pool_mu);
    L->out_bytes -= bytes;
    pthread_mutex_unlock(&L->pool_mu);
  }
  return p;
}

/* Keep p for reuse while pooled plus in-use bytes stay within the read
 * budget; free it otherwise. */
void ferry__buf_put(ferry_loader *L, unsigned char *p) {
  if (!p)
    return;
  size_t cap = *(size_t *)(p - BUF_HDR);
  pthread_mutex_lock(&L->pool_mu);
  L->out_bytes -= cap;
  if (L->npool < POOL_MAX &&
      L->pool_bytes + L->out_bytes + cap <= L->budget.read_bytes) {
    L->pool[L->npool++] = p;
    L->pool_bytes += cap;
    p = NULL;
  }
  pthread_mutex_unlock(&L->pool_mu);
  ferry__big_free(p);
}

void ferry__buf_drain(ferry_loader *L, size_t keep) {
  pthread_mutex_lock(&L->pool_mu);
  while (L->npool > 0 && L->pool_bytes > keep) {
    unsigned char *p = L->pool[--L->npool];
    L->pool_bytes -= *(size_t *)(p - BUF_HDR);
    ferry__big_free(p);
  }
  pthread_mutex_unlock(&L->pool_mu);
}

/* Record the most buffer memory held at once: ring + read buffers in use
 * or in flight + pooled ones. */
static void note_resident(ferry_loader *L) {
  pthread_mutex_lock(&L->pool_mu);
  size_t total = L->budget.ring_bytes + L->out_bytes + L->pool_bytes;
  pthread_mutex_unlock(&L->pool_mu);
  pthread_mutex_lock(&L->stats_mu);
  if (total > L->stats.peak_resident_bytes)
    L->stats.peak_resident_bytes = total;
  pthread_mutex_unlock(&L->stats_mu);
}

/* Part p's file (its first variable's), for messages. */
const char *ferry__part_path(const ferry_loader *L, int64_t p) {
  const ferry__part *pt = &L->m.parts[p];
  return L->m.nvars > 0 && pt->paths && pt->paths[0] ? pt->paths[0] : "?";
}

/* Extent e is loaded: in buf (its variables one after the other, rows rows
 * each), or, with buf NULL, in ep->ext_map. */
void ferry__publish_rows(epoch_state *ep, int64_t e, unsigned char *buf,
                         int64_t rows) {
  ferry_loader *L = ep->L;
  pthread_mutex_lock(&ep->mu);
  ep->ext_buf[e] = buf;
  for (int v = 0; v < L->m.nvars; v++)
    ep->ext_src[e * L->m.nvars + v] =
        !buf        ? ep->ext_map[e * L->m.nvars + v].data
        : L->ragged ? buf + ferry__extent_var_off(L, &ep->plan.extents[e], v)
                    : buf + (size_t)rows * L->var_prefix[v];
  ep->loaded = e + 1;
  pthread_mutex_unlock(&ep->mu);
  /* woken after the unlock: a thread woken on this core would otherwise
   * preempt this one only to block on the mutex it still holds */
  pthread_cond_broadcast(&ep->cv_work);
  pthread_cond_broadcast(&ep->cv_ready);
  note_resident(ep->L);
}

void ferry__publish_error(epoch_state *ep, int rc, const ferry__err *err) {
  pthread_mutex_lock(&ep->mu);
  if (!ep->io_rc) {
    ep->io_rc = rc;
    ep->io_err = *err;
  }
  pthread_cond_broadcast(&ep->cv_work);
  pthread_cond_broadcast(&ep->cv_ready);
  pthread_mutex_unlock(&ep->mu);
}

/* Wait until round j is admitted.  After a stop, every rank finishes the
 * rounds some rank entered (as dummies: empty reads).  Returns 0 when the
 * I/O thread is done. */
int ferry__round_wait(epoch_state *ep, int64_t j, int *dummy) {
  pthread_mutex_lock(&ep->mu);
  int64_t la = ep->L->opts->prefetch;
  while (!ep->stop && ep->round_admit[j] > ep->consumed + la) {
    ep->io_wake = ep->round_admit[j] - la;
    pthread_cond_wait(&ep->cv_io, &ep->mu);
  }
  ep->io_wake = 0;
  if (ep->stop) {
    while (ep->round_target < 0)
      pthread_cond_wait(&ep->cv_io, &ep->mu);
    if (j >= ep->round_target) {
      pthread_mutex_unlock(&ep->mu);
      return 0;
    }
    *dummy = 1;
  }
  ep->rounds_started = j + 1;
  pthread_mutex_unlock(&ep->mu);
  return 1;
}
