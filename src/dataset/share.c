/*
 * dataset/share.c - the manifest every rank holds is one every rank
 * accepts.  Rank 0 builds the manifest (scan or saved JSON) and the others
 * unpack the packed copy it broadcasts, with the checks of
 * ferry__manifest_unpack.  Two things kept those in step, and issue 30
 * found both missing: a Parquet file with two columns named `column` was
 * served by one rank and refused by two ("manifest buffer corrupt at byte
 * 436: variable named twice", on rank 1 only, while rank 0 had accepted
 * it).  So:
 *
 *  - rank 0's scan refuses what unpack would refuse, with a message that
 *    says why in the user's terms (ferry__manifest_check_names: two
 *    variables of one name, an empty name), before anything is broadcast;
 *  - every rank, rank 0 included, unpacks the broadcast bytes and the ranks
 *    agree on the result (ferry__manifest_unpack_agree): whatever one
 *    rank's unpack refuses -- a rule scan does not know yet, memory on one
 *    rank -- fails every rank with that rank's message, and on one rank as
 *    on many.  Rank 0 unpacks into a scratch copy while the others unpack
 *    theirs, so it adds no round and, for more than one rank, no time.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "dataset/dataset.h"
#include "util/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a, b, c" of m's variables in buf (cut short with "..." when long). */
static void list_names(const ferry__manifest *m, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int v = 0; v < m->nvars && used + 4 < len; v++) {
    int n = snprintf(buf + used, len - used, "%s%s", v ? ", " : "",
                     m->vars[v].name ? m->vars[v].name : "");
    used = n < 0 || (size_t)n >= len - used ? len : used + (size_t)n;
  }
  if (used >= len)
    snprintf(buf + len - 4, 4, "...");
}

int ferry__manifest_check_names(const ferry__manifest *m, ferry__err *err) {
  const char *spec = m->spec ? m->spec : "?";
  char names[400];
  for (int v = 0; v < m->nvars; v++) {
    const char *name = m->vars[v].name ? m->vars[v].name : "";
    const char *path =
        m->nparts > 0 && m->parts[0].paths ? m->parts[0].paths[v] : spec;
    char in[FERRY__MSG_MAX / 2] = ""; /* the part, when it is not spec */
    if (strcmp(path, spec) != 0)
      snprintf(in, sizeof in, " (in %s)", path);
    int other = -1;
    for (int k = 0; k < v && other < 0; k++)
      if (strcmp(m->vars[k].name ? m->vars[k].name : "", name) == 0)
        other = k;
    if (*name && other < 0)
      continue;
    list_names(m, names, sizeof names);
    if (!*name)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "dataset %s: variable %d of %d%s has an empty "
                           "name; ferry tells variables apart by name: select "
                           "the others with vars (the variables: %s)",
                           spec, v + 1, m->nvars, in, names);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "dataset %s: variables %d and %d of %d%s are both "
                         "named '%s'; ferry tells variables apart by name, so "
                         "it serves neither: select the others with vars (the "
                         "variables: %s)",
                         spec, other + 1, v + 1, m->nvars, in, name, names);
  }
  return 0;
}

int ferry__manifest_unpack_agree(MPI_Comm comm, int rank, const void *buf,
                                 size_t len, ferry__manifest *m,
                                 ferry__err *err) {
  ferry__manifest scratch;
  memset(&scratch, 0, sizeof scratch);
  ferry__manifest *into = rank == 0 ? &scratch : m;
  /* mapped offsets: rank 0 read every byte of their file when it loaded
   * the manifest (dataset/json.c); each other rank checks its share of
   * the file's blocks against rank 0's hashes, not the whole file */
  int size = 1;
  MPI_Comm_size(comm, &size);
  int rc = ferry__manifest_unpack_ex(buf, len, 1, into, err);
  if (rc == 0 && rank != 0 && into->roff_map && into->roff_map->deferred)
    rc = ferry__roff_map_verify(into->roff_map, rank, size, err);
  /* mapped records (decision 0066) the same way; the manifest hash is then
   * rank 0's, which covers their bytes */
  if (rc == 0 && rank != 0 && into->rec_map && into->rec_map->deferred)
    rc = ferry__roff_map_verify(into->rec_map, rank, size, err);
  if (rc == 0 && rank == 0) {
    /* what rank 0 serves must be what the others unpacked */
    if (scratch.hash != m->hash)
      rc = ferry__seterr(err, FERRY_EINTERNAL,
                         "dataset %s: the manifest's hash changed in packing "
                         "(%016llx, unpacked %016llx)",
                         m->spec ? m->spec : "?", (unsigned long long)m->hash,
                         (unsigned long long)scratch.hash);
    ferry__manifest_free(&scratch);
  }
  return ferry__agree(comm, rank, rc, err);
}

int ferry__manifest_share(MPI_Comm comm, int rank, int rc, ferry__manifest *m,
                          const char *dataset, ferry__err *err) {
  void *buf = NULL;
  size_t len = 0;
  if (rank == 0 && rc == 0 &&
      (rc = ferry__manifest_pack(m, &buf, &len)) == FERRY_ENOMEM)
    ferry__oom(err, 0, ferry__manifest_packed_size(m),
               "the packed manifest of dataset %s", dataset);
  if (rank == 0 && rc && !err->msg[0])
    ferry__seterr_on(err, 0, rc, "cannot build the manifest of %s", dataset);
  /* only rank 0 worked so far: its result travels with the length */
  rc = ferry__bcast_blob_rc(comm, rank, 0, rc, &buf, &len, "the manifest", err);
  if (rc == 0)
    rc = ferry__manifest_unpack_agree(comm, rank, buf, len, m, err);
  free(buf);
  return rc;
}
