/*
 * pool.c - the decode pool a backend keeps in its I/O state: threads - 1
 * persistent threads plus the I/O thread itself, which decodes too while it
 * waits.  The I/O thread reads compressed bytes (MPI-IO and pread stay on
 * it, or in jobs that own their file descriptor); decoding (inflate, blosc,
 * zstd, checksums), which is CPU-bound and on a parallel file system often
 * slower than the read, is what the `threads` option scales.
 *
 * Why one pool and not threads per read (parquet.c's whole_groups creates
 * and joins its threads in every io_read): creating threads per read costs
 * tens of microseconds a read, thousands of reads an epoch with small
 * chunks, and a pthread_create that fails halfway leaves each caller to
 * handle it.  Here a failure at creation leaves fewer threads (none: every
 * job runs inline, as with threads=1); a job that cannot be queued (out of
 * memory) runs inline after the queued ones; nothing exits or aborts.
 *
 * Errors are deterministic: jobs are numbered in submission order, the
 * error kept is the one of the lowest-numbered failing job, and a job
 * numbered after a known failure is skipped, so the result of a wait is the
 * error a serial run of the same jobs would return first, whatever the
 * threads' timing.  Every shared field is under the one mutex (TSan clean);
 * jobs write only to memory their submitter gave them alone.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include "backends/backend.h"
#include "backends/toolkit.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct pool_job {
  ferry__job_fn fn;
  void *arg;
} pool_job;

struct ferry__pool {
  pthread_mutex_t mu;
  pthread_cond_t cv_work; /* a job was queued, or quit */
  pthread_cond_t cv_done; /* a job finished */
  pthread_t *th;
  int nthreads; /* started */
  int quit;
  pool_job *jobs;
  size_t njobs, cap, next, done;
  size_t bad; /* lowest failing job, SIZE_MAX: none */
  int rc;
  ferry__err err;
};

/* Take the next job (under p->mu): its index, or SIZE_MAX when none. */
static size_t take(ferry__pool *p) {
  while (p->next < p->njobs && p->next > p->bad) {
    p->next++; /* after a failure: skipped, as a serial run would */
    p->done++;
  }
  if (p->next < p->njobs)
    return p->next++;
  if (p->done == p->njobs)
    pthread_cond_broadcast(&p->cv_done);
  return SIZE_MAX;
}

/* Run job i (p->mu held on entry and on return, released while it runs). */
static void run(ferry__pool *p, size_t i) {
  pool_job j = p->jobs[i];
  pthread_mutex_unlock(&p->mu);
  ferry__err e;
  memset(&e, 0, sizeof e);
  int rc = j.fn(j.arg, &e);
  pthread_mutex_lock(&p->mu);
  if (rc < 0 && i < p->bad) {
    p->bad = i;
    p->rc = rc;
    p->err = e;
  }
  p->done++;
  if (p->done == p->njobs)
    pthread_cond_broadcast(&p->cv_done);
}

static void *worker(void *arg) {
  ferry__pool *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->quit) {
    size_t i = take(p);
    if (i == SIZE_MAX)
      pthread_cond_wait(&p->cv_work, &p->mu);
    else
      run(p, i);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

ferry__pool *ferry__pool_new(int threads) {
  if (threads > FERRY__POOL_MAX)
    threads = FERRY__POOL_MAX;
  if (threads <= 1)
    return NULL;
  ferry__pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  if (!(p->th = calloc((size_t)threads - 1, sizeof *p->th))) {
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv_work, NULL);
  pthread_cond_init(&p->cv_done, NULL);
  p->bad = SIZE_MAX;
  for (int t = 0; t < threads - 1; t++) {
    if (pthread_create(&p->th[t], NULL, worker, p) != 0)
      break;
    p->nthreads++;
  }
  if (p->nthreads == 0) {
    ferry__pool_free(p);
    return NULL;
  }
  return p;
}

int ferry__pool_lanes(const ferry__pool *p) { return p ? p->nthreads + 1 : 1; }

int ferry__pool_submit(ferry__pool *p, ferry__job_fn fn, void *arg,
                       ferry__err *err) {
  if (!p)
    return fn(arg, err);
  pthread_mutex_lock(&p->mu);
  if (p->njobs == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    pool_job *j =
        cap < SIZE_MAX / sizeof *j ? realloc(p->jobs, cap * sizeof *j) : NULL;
    if (!j) {
      /* Out of memory: settle the queued jobs, then run this one here. */
      pthread_mutex_unlock(&p->mu);
      int rc = ferry__pool_wait(p, err);
      return rc < 0 ? rc : fn(arg, err);
    }
    p->jobs = j;
    p->cap = cap;
  }
  p->jobs[p->njobs].fn = fn;
  p->jobs[p->njobs].arg = arg;
  p->njobs++;
  pthread_cond_signal(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

int ferry__pool_pending(ferry__pool *p) {
  if (!p)
    return 0;
  pthread_mutex_lock(&p->mu);
  int n = p->njobs > p->done;
  pthread_mutex_unlock(&p->mu);
  return n;
}

int ferry__pool_wait(ferry__pool *p, ferry__err *err) {
  if (!p)
    return 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    size_t i = take(p); /* the caller decodes too */
    if (i != SIZE_MAX) {
      run(p, i);
      continue;
    }
    if (p->done == p->njobs)
      break;
    pthread_cond_wait(&p->cv_done, &p->mu);
  }
  int rc = p->rc;
  if (rc < 0 && err)
    *err = p->err;
  p->njobs = p->next = p->done = 0;
  p->bad = SIZE_MAX;
  p->rc = 0;
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void ferry__pool_free(ferry__pool *p) {
  if (!p)
    return;
  ferry__pool_wait(p, NULL);
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->cv_work);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nthreads; t++)
    pthread_join(p->th[t], NULL);
  pthread_cond_destroy(&p->cv_done);
  pthread_cond_destroy(&p->cv_work);
  pthread_mutex_destroy(&p->mu);
  free(p->th);
  free(p->jobs);
  free(p);
}

int ferry__pool_lanes_for(const ferry_options *opts) {
  char buf[32] = "";
  long th = 0;
  if (opts && ferry_options_get(opts, "threads", buf, sizeof buf) == 0)
    th = strtol(buf, NULL, 10);
  if (th > 0)
    return th > FERRY__POOL_MAX ? FERRY__POOL_MAX : (int)th;
  /* threads=0 resolves (loader/open.c) to the CPUs this process may run
   * on, shared with the other ranks of its node, minus one, at most 8:
   * this process's CPUs minus one bound it. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
#endif
  cpus -= 1;
  return cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
}
