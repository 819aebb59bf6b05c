/*
 * pscan.c - the scan shared out over the ranks (scan=ranks, the default):
 * a dataset of many parts (1,000 WebDataset shards whose tar headers must
 * all be read, thousands of HDF5 files) is described by every rank, each a
 * contiguous share of the parts, instead of by rank 0 alone.
 *
 * Rank 0 resolves the dataset string into parts (one glob, one listing:
 * every rank must see the same parts) and broadcasts their paths.  Each
 * rank describes its share with the backends' describe, as the serial scan
 * does (ferry__scan_describe), and packs what it found as a manifest of
 * those parts (core/manifest.c's pack: the same bytes the broadcast
 * carries).  Rank 0 gathers every rank's status; when all succeeded it
 * receives the shares in rank order, checks that each agrees with the
 * first part, appends their parts and finishes the manifest
 * (ferry__scan_finish): the manifest is the serial scan's, part for part,
 * so its hash is too.  Any failure -- a part that cannot be described, a
 * share that disagrees, memory -- and rank 0 scans again alone, so the
 * error users see is the serial scan's, word for word (a failing scan
 * costs the serial time; a working one the slowest share's).
 *
 * Collective over the loader's communicator; the message sizes are bounded
 * by int (a share packing to more than 2 GiB is scanned serially).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/backend.h"
#include "core/options.h"
#include "dataset/dataset.h"
#include "dataset/mix.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define PSCAN_TAG 0x5ca

/* Rank 0's decision, broadcast: scan alone, or the paths of n parts in
 * bytes bytes (NUL-terminated strings one after the other). */
enum { SCAN_ALONE = 0, SCAN_SHARED = 1 };

/* Whether spec can be shared out at all (before resolving it). */
static int shareable(const char *spec, const ferry_options *opts, int size) {
  return size > 1 && spec && *spec && !ferry__mix_is(spec) &&
         !ferry__backend_for_scheme(spec) && !strstr(spec, "://") &&
         (!opts || opts->scan == FERRY__SCAN_RANKS);
}

static void free_paths(char **paths, size_t n) {
  for (size_t i = 0; paths && i < n; i++)
    free(paths[i]);
  free(paths);
}

/* Rank 0: parts' paths joined, or NULL (scan alone) when they are fewer
 * than two, too many bytes, or the resolve failed (the serial scan then
 * says why). */
static char *join_parts(const char *spec, int64_t *n_out, int64_t *bytes_out,
                        char **note, int *shards) {
  char **paths = NULL;
  size_t n = 0, bytes = 0;
  ferry__err e;
  memset(&e, 0, sizeof e);
  if (ferry__scan_resolve(spec, &paths, &n, note, shards, &e) < 0)
    return NULL;
  for (size_t i = 0; i < n; i++)
    bytes += strlen(paths[i]) + 1;
  char *joined = n >= 2 && bytes < INT_MAX / 2 ? malloc(bytes) : NULL;
  size_t at = 0;
  for (size_t i = 0; joined && i < n; i++) {
    size_t k = strlen(paths[i]) + 1;
    memcpy(joined + at, paths[i], k);
    at += k;
  }
  free_paths(paths, n);
  *n_out = (int64_t)n;
  *bytes_out = (int64_t)bytes;
  if (!joined) {
    free(*note);
    *note = NULL;
  }
  return joined;
}

/* The n paths inside joined (bytes long): an array of pointers into it. */
static char **split_parts(const char *joined, int64_t n, int64_t bytes) {
  char **v = n > 0 ? malloc((size_t)n * sizeof *v) : NULL;
  int64_t at = 0;
  for (int64_t i = 0; v && i < n; i++) {
    const void *end =
        at < bytes ? memchr(joined + at, '\0', (size_t)(bytes - at)) : NULL;
    if (!end) { /* only a broken broadcast gets here */
      free(v);
      return NULL;
    }
    v[i] = (char *)joined + at;
    at = (const char *)end - joined + 1;
  }
  return v;
}

/* Rank 0: sub's parts appended to m (sub left without parts). */
static int append_parts(ferry__manifest *m, ferry__manifest *sub,
                        ferry__err *err) {
  int rc = ferry__scan_agree(m, sub, err);
  if (rc < 0)
    return rc;
  if (sub->num_samples > INT64_MAX - m->num_samples)
    return ferry__seterr(err, FERRY_EFORMAT, "the sample count overflows");
  ferry__part *np =
      realloc(m->parts, (size_t)(m->nparts + sub->nparts) * sizeof *np);
  if (!np)
    return ferry__oom(err, -1, (size_t)(m->nparts + sub->nparts) * sizeof *np,
                      "the parts of dataset %s", m->spec);
  m->parts = np;
  for (int64_t p = 0; p < sub->nparts; p++) {
    np[m->nparts + p] = sub->parts[p];
    np[m->nparts + p].first_sample += m->num_samples;
  }
  m->nparts += sub->nparts;
  m->num_samples += sub->num_samples;
  free(sub->parts);
  sub->parts = NULL;
  sub->nparts = 0;
  return 0;
}

/* Rank 0: receive the shares of ranks 1..k-1 into bufs (allocated before
 * the go, lens[r] bytes each) and append them to m; every share is
 * received, whatever fails, so no rank is left in a send.  0, or the first
 * failure (m then incomplete). */
static int gather_shares(MPI_Comm comm, int k, void **bufs, const int64_t *st,
                         ferry__manifest *m, ferry__err *err) {
  int rc = 0;
  for (int r = 1; r < k; r++)
    if (MPI_Recv(bufs[r], (int)st[2 * r + 1], MPI_BYTE, r, PSCAN_TAG, comm,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS &&
        rc == 0)
      rc = ferry__seterr(err, FERRY_EIO,
                         "receiving rank %d's share of the "
                         "scan",
                         r);
  for (int r = 1; rc == 0 && r < k; r++) {
    ferry__manifest sub;
    if ((rc = ferry__manifest_unpack(bufs[r], (size_t)st[2 * r + 1], &sub,
                                     err)) == 0) {
      rc = append_parts(m, &sub, err);
      ferry__manifest_free(&sub);
    }
    free(bufs[r]);
    bufs[r] = NULL;
  }
  return rc;
}

/* Rank 0: a buffer for each share of ranks 1..k-1, or NULL (all freed). */
static void **share_buffers(int k, const int64_t *st) {
  void **bufs = calloc((size_t)k, sizeof *bufs);
  for (int r = 1; bufs && r < k; r++)
    if (!(bufs[r] = malloc(st[2 * r + 1] > 0 ? (size_t)st[2 * r + 1] : 1))) {
      for (int q = 1; q < r; q++)
        free(bufs[q]);
      free(bufs);
      return NULL;
    }
  return bufs;
}

int ferry__manifest_scan_ranks(MPI_Comm comm, const char *spec,
                               const char *vars, const ferry_options *opts,
                               ferry__manifest *m, ferry__err *err) {
  int rank = 0, size = 1, shards = 0, disagree = 0;
  char *joined = NULL, *note = NULL;
  char **paths = NULL;
  void *packed = NULL;
  size_t plen = 0;
  int64_t *st = NULL;
  ferry__manifest sub;
  ferry__err mine;
  memset(m, 0, sizeof *m);
  memset(&sub, 0, sizeof sub);
  memset(&mine, 0, sizeof mine);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* hdr: {SCAN_ALONE or SCAN_SHARED, parts, bytes of their paths} */
  int64_t hdr[3] = {SCAN_ALONE, 0, 0};
  if (rank == 0 && shareable(spec, opts, size) &&
      (joined = join_parts(spec, &hdr[1], &hdr[2], &note, &shards)))
    hdr[0] = SCAN_SHARED;
  MPI_Bcast(hdr, 3, MPI_INT64_T, 0, comm);
  if (hdr[0] != SCAN_SHARED)
    return rank == 0 ? ferry__manifest_scan(spec, vars, opts, m, err) : 0;
  /* From here every rank goes through every collective below. */
  int alloc_ok = 1;
  if (rank != 0 && !(joined = malloc((size_t)hdr[2])))
    alloc_ok = 0;
  int all_ok = 0;
  MPI_Allreduce(&alloc_ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
  if (!all_ok) { /* a rank without the memory: rank 0 scans alone */
    free(joined);
    free(note);
    return rank == 0 ? ferry__manifest_scan(spec, vars, opts, m, err) : 0;
  }
  MPI_Bcast(joined, (int)hdr[2], MPI_BYTE, 0, comm);
  int64_t n = hdr[1];
  int k = n < size ? (int)n : size; /* ranks with a share */
  /* This rank's share: a status {0 or a code, packed bytes}. */
  int64_t my[2] = {0, 0};
  if (rank < k) {
    int64_t lo = n * rank / k, hi = n * (rank + 1) / k;
    int rc;
    if (!(paths = split_parts(joined, n, hdr[2])))
      rc = ferry__oom(&mine, -1, (size_t)n * sizeof *paths, "the parts");
    else
      rc = ferry__scan_describe(spec, paths + lo, (size_t)(hi - lo), opts, &sub,
                                &disagree, &mine);
    if (rc == 0 && rank != 0) {
      if (ferry__manifest_pack(&sub, &packed, &plen) < 0 || plen > INT_MAX)
        rc = FERRY_ENOMEM;
      ferry__manifest_free(&sub);
      memset(&sub, 0, sizeof sub);
    }
    my[0] = rc;
    my[1] = (int64_t)plen;
  }
  if (rank == 0 && !(st = malloc((size_t)size * 2 * sizeof *st)))
    my[0] = FERRY_ENOMEM; /* rank 0's own failure: nobody sends */
  int64_t dummy[2];
  MPI_Gather(my, 2, MPI_INT64_T, st ? st : dummy, 2, MPI_INT64_T, 0, comm);
  int go = 1;
  void **bufs = NULL;
  if (rank == 0) {
    go = st != NULL;
    for (int r = 0; go && r < k; r++)
      go = st[2 * r] == 0;
    if (go && !(bufs = share_buffers(k, st)))
      go = 0;
  }
  MPI_Bcast(&go, 1, MPI_INT, 0, comm);
  int rc = 0;
  if (go && rank != 0 && rank < k)
    MPI_Send(packed, (int)plen, MPI_BYTE, 0, PSCAN_TAG, comm);
  if (rank == 0) {
    if (go) {
      *m = sub; /* rank 0's share: the first parts */
      memset(&sub, 0, sizeof sub);
      rc = gather_shares(comm, k, bufs, st, m, &mine);
      if (rc == 0)
        rc = ferry__scan_finish(spec, vars, note, m, err);
    }
    for (int r = 1; bufs && r < k; r++)
      free(bufs[r]);
    free(bufs);
    if (!go || rc < 0) { /* the serial scan says why, word for word */
      ferry__manifest_free(m);
      rc = ferry__manifest_scan(spec, vars, opts, m, err);
    }
  }
  ferry__manifest_free(&sub);
  free(packed);
  free(paths);
  free(joined);
  free(note);
  free(st);
  return rc;
}
