/*
 * io_choice.c - io=auto: map files on local file systems, read the others.
 *
 * Why: io=mmap (one copy, page cache -> batch) is the fastest way to serve
 * a file whose page cache is local; on parallel and network file systems
 * large independent reads are what the client is built for (see
 * backends/fstype.c for the rule and the table).  Rank 0 asks statfs(2)
 * about the dataset's files -- one call per directory, at most
 * MAX_STATFS of them, because statfs on a parallel file system may ask
 * every server -- and broadcasts the choice with the sentence that explains
 * it, so every rank reads the same way and `ferry info`/`bench` can say
 * why.  io=auto never picks collective reads: they are kept for those who
 * ask for them.  The resolved mode replaces "auto" in the loader's own copy
 * of the options, so the pipeline sees a concrete mode.
 */
#include "config.h"
#include "loader/cache.h"
#include "loader/loader.h"

#include <stdio.h>
#include <string.h>

enum { MAX_STATFS = 256 };

static const char *mode_name(int io) {
  switch (io) {
  case FERRY__IO_COLLECTIVE: return "collective";
  case FERRY__IO_MMAP: return "mmap";
  default: return "independent";
  }
}

/* 1 when a and b are in the same directory (the same text before the last
 * slash). */
static int same_dir(const char *a, const char *b) {
  const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
  size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
  return la == lb && strncmp(a, b, la) == 0;
}

/* Rank 0's choice for io=auto into *io and how[n]. */
static void choose(const ferry_loader *L, int *io, char *how, size_t n) {
  *io = FERRY__IO_INDEPENDENT;
  /* packed rows: the corpus's files and backend decide (loader/pack.c
   * maps them with io=mmap and copies the rows' spans); a packed mix: each
   * source's, every one of which must map */
  const int pack = ferry__pack_is(&L->m);
  const ferry__manifest *ms = pack && L->m.srcs ? L->m.srcs
                              : pack            ? L->m.inner
                                                : &L->m;
  const int64_t nm = pack && L->m.srcs ? L->m.nsrcs : 1;
  for (int64_t k = 0; k < nm; k++) {
    const ferry__backend *be =
        pack ? ferry__backend_find(ms[k].backend) : L->be;
    if (!be || !be->io_map) {
      snprintf(how, n, "independent (io=auto: backend %s reads, it cannot map)",
               be ? be->name : ms[k].backend);
      return;
    }
  }
  const char *first = NULL, *prev = NULL, *name = "unknown";
  uint64_t magic = 0;
  int asked = 0;
  for (int64_t k = 0; k < nm; k++) {
    const ferry__manifest *m = &ms[k];
    for (int64_t p = 0; p < m->nparts; p++)
      for (int v = 0; v < m->nvars; v++) {
        const char *path = m->parts[p].paths[v];
        if (!path || (prev && same_dir(prev, path)))
          continue;
        prev = path;
        if (asked++ == MAX_STATFS)
          goto done; /* the rest is taken to be where the first ones are */
        ferry__err err = {0};
        if (ferry__fs_of(path, &magic, &err) != 0) {
          snprintf(how, n, "independent (io=auto: %.440s)", err.msg);
          return;
        }
        int kind = ferry__fs_classify(magic, &name);
        if (kind != FERRY__FS_LOCAL) {
          snprintf(how, n,
                   "independent (io=auto: %.300s is on %s, f_type 0x%llx, "
                   "%s)",
                   path, name, (unsigned long long)magic,
                   kind == FERRY__FS_REMOTE
                       ? "a parallel or network file system"
                       : "a file system ferry does not know: read, not "
                         "mapped");
          return;
        }
        if (!first)
          first = path;
      }
  }
done:
  if (!first) {
    snprintf(how, n, "independent (io=auto: no file to map)");
    return;
  }
  *io = FERRY__IO_MMAP;
  snprintf(how, n,
           "mmap (io=auto: %.300s is on %s, f_type 0x%llx, a local file "
           "system%s)",
           first, name, (unsigned long long)magic,
           asked > 1 ? ", as are the other directories" : "");
}

int ferry__io_resolve(ferry_loader *L, ferry__err *err) {
  int io = L->opts->io;
  int rc = ferry__cache_check(L, err); /* what the cache refuses */
  if (rc)
    return rc;
  if (io != FERRY__IO_AUTO) {
    if (io == FERRY__IO_MMAP && !L->be->io_map && !ferry__pack_is(&L->m))
      snprintf(L->io_how, sizeof L->io_how,
               "independent (io=mmap, but backend %s cannot map: it reads)",
               L->be->name);
    else
      snprintf(L->io_how, sizeof L->io_how, "%s (set by io=%s)", mode_name(io),
               mode_name(io));
    return 0;
  }
  if (L->opts->cache != FERRY__CACHE_NONE) { /* the cache reads */
    L->opts->io = FERRY__IO_INDEPENDENT;
    snprintf(L->io_how, sizeof L->io_how,
             "independent (io=auto: cache=%s keeps what it reads)",
             L->opts->cache == FERRY__CACHE_NODE ? "node" : "cluster");
    return 0;
  }
  if (L->opts->shuffle == FERRY__SHUFFLE_GLOBAL) { /* mmap is refused there */
    L->opts->io = FERRY__IO_INDEPENDENT;
    snprintf(L->io_how, sizeof L->io_how,
             "independent (io=auto: shuffle=global reads its windows, then "
             "exchanges them)");
    return 0;
  }
  struct {
    int io;
    char how[sizeof L->io_how];
  } msg;
  memset(&msg, 0, sizeof msg);
  if (L->rank == 0)
    choose(L, &msg.io, msg.how, sizeof msg.how);
  if (MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, L->comm) != MPI_SUCCESS)
    return ferry__seterr_on(err, L->rank, FERRY_EMPI,
                            "MPI_Bcast of the io=auto choice failed");
  msg.how[sizeof msg.how - 1] = '\0';
  L->opts->io =
      msg.io == FERRY__IO_MMAP ? FERRY__IO_MMAP : FERRY__IO_INDEPENDENT;
  memcpy(L->io_how, msg.how, sizeof L->io_how);
  return 0;
}

const char *ferry_io_choice(const ferry_loader *L) {
  return L && L->io_how[0] ? L->io_how : NULL;
}
