/*
 * cache.c - the node cache (cache=node|cluster, issue 29, decision 0063):
 * what a job reads from storage kept in the memory of its nodes, so that
 * later epochs read nothing from the parallel file system.
 *
 * The unit is the plan's chunk (plan/chunks.c: chunk_samples rows of one
 * part, all variables): every rank computes from the manifest alone, so
 * every rank the same, which chunks are cached, on which node (its owner)
 * and where in that node's region (place()).  The region is one POSIX
 * shared-memory file per node, made by the node's first rank, mapped by
 * every rank of the node and unlinked as soon as they all have it (a job
 * killed with SIGKILL leaves nothing in /dev/shm).  It holds a state word
 * per (cached chunk, variable) and the chunks' bytes as the backend's
 * io_read gives them (decoded: a Zarr or Parquet chunk is cached after
 * its codecs).  Under a view whose rows change with the epoch the cache
 * wraps the view's inner backend instead: decode= (the encoded bytes) and
 * pack= (the corpus's documents, in chunks of the corpus's own: the
 * corpus, or a packed mix's sources, as one flat corpus, flat_corpus()).
 *
 * The cache is a backend that wraps the loader's (L->be): io_read splits
 * the rows asked for at chunk boundaries; a piece of a chunk whose rows are
 * in the region is copied from there (this node's) or received from its
 * owner's node (cache=cluster: the owner node's first rank runs a server
 * thread that answers GET and PUT messages on the cache's own
 * communicators); the other pieces are read from storage in one read, and
 * each is then stored: in this node's region or sent to its owner (PUT).
 * A chunk arrives in pieces (the plan splits chunks between ranks at share
 * boundaries): each slot has a bitmap of the rows it holds, set after their
 * bytes are copied, and the piece that completes the chunk makes it VALID;
 * a piece whose rows are all marked is served before that.  Space is
 * reserved first (the pages populated with madvise, or fallocate), so a
 * full /dev/shm is a chunk left uncached, not SIGBUS.  Every epoch serves the
 * same bytes as without the cache: only where they come from changes.
 *
 * Why not MPI one-sided windows: Open MPI 4.1 has no one-sided component
 * for TCP with MPI_THREAD_MULTIPLE (osc/pt2pt refuses it), and ferry's I/O
 * thread needs that level; two-sided messages to a server thread work on
 * every transport.  Why a server thread polls (MPI_Test, then sleeps of up
 * to 1 ms) instead of blocking in MPI_Recv: Open MPI spins in a blocking
 * call, a core for nothing.
 */
#include "config.h"
#include "loader/cache.h"
#include "loader/loader.h"
#include "util/agree.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* A (cached chunk, variable)'s state word: rows arrive in pieces (a chunk
 * is split between ranks at share boundaries), each marked in the slot's
 * row bitmap; the rank whose piece completes the count makes it VALID.
 * FULL: /dev/shm had no room for it, never cached. */
enum { ST_EMPTY = 0, ST_VALID = 2, ST_FULL = 3 };

typedef struct slot_state {
  uint32_t state;
  uint32_t pad;
  int64_t rows; /* rows marked in the bitmap */
} slot_state;
enum { Q_STOP = 0, Q_GET = 1, Q_PUT = 2 };
enum { TAG_REQ = 1, TAG_REPLY0 = 16 };
#define REPLY_TAGS 16000
/* A page before the state: the region is never empty (a node owning no
 * chunk still maps one), and the state after it is page-aligned. */
#define HDR_BYTES 4096
#define SLOT_ALIGN 64
/* A piece moved in one message: MPI counts are int. */
#define PIECE_MAX ((int64_t)1 << 30)

struct ferry__cache {
  int mode; /* FERRY__CACHE_NODE or _CLUSTER */
  const ferry__backend *inner;
  const ferry__manifest *m;
  const ferry__chunk_index *ci;
  ferry__chunk_index own; /* pack=: the corpus's chunks (ci points here) */
  int nvars;
  /* pack=: m is flat, the parts of the corpus (of each source of a mix)
   * in one manifest of their token variable alone (flat_corpus); source
   * s's parts start at part0[s] there, its token variable is stv[s] in
   * its own manifest.  nsrc 0: no view, m is the loader's. */
  ferry__manifest flat;
  int64_t nsrc;
  const ferry__manifest **src;
  int64_t *part0;
  int *stv;
  int rank, size;
  MPI_Comm node;  /* the ranks of this node */
  MPI_Comm scomm; /* cluster: what servers receive (requests, PUT data) */
  MPI_Comm rcomm; /* cluster: what requesters receive (GET answers): two
                   * dups of the loader's, so that a rank's server and its
                   * I/O thread never match each other's messages */
  int node_id, nnodes, local_rank, local_size;
  int *leader;    /* [nnodes] the loader rank of each node's first rank */
  double timeout; /* seconds a request waits (collective_timeout) */
  int64_t nchunks;
  int32_t *owner;     /* [nchunks] the node holding chunk c, -1: none */
  int64_t *slot;      /* [nchunks] its slot in the owner's region, -1 */
  int64_t *off;       /* [nchunks] its first byte in the owner's data */
  int64_t nslots;     /* slots in this node's region */
  int64_t cap;        /* bytes per node, agreed */
  int64_t node_bytes; /* bytes of chunks owned by this node */
  int64_t total_bytes, cached_bytes, max_node_bytes;
  int64_t nchunks_cached;
  /* the region */
  int fd;
  unsigned char *base;
  size_t len;
  slot_state *state; /* [nslots * nvars] */
  uint64_t *bits;    /* [nslots * nvars * words]: the rows there */
  int64_t words;     /* bitmap words per slot: ceil(chunk_samples / 64) */
  long page;         /* the page size (populate) */
  unsigned char *data;
  /* the server (cluster, the node's first rank) */
  pthread_t server;
  int server_on;
  _Atomic unsigned seq;
  /* counters (any thread) */
  _Atomic int64_t c_local, c_remote, c_storage, c_sent, c_stored;
  char note[512];
};

struct ferry__io {
  ferry__cache *c;
  const ferry__backend *be; /* the backend under the cache */
  ferry__io *child;
  int64_t part0; /* its manifest's first part in c->m (pack=: flat) */
  int tv;        /* pack=: the variable cached (the tokens) in its
                  * manifest's numbering, variable 0 of flat; -1: all */
  uint64_t *bm;  /* a piece's bitmap of the rows there */
  size_t bm_len;
};

/* ---- Where each chunk goes --------------------------------------------- */

/* Bytes of rows [r0, r1) of variable v of part p as io_read gives them. */
static int64_t var_bytes(const ferry__manifest *m, int64_t p, int v, int64_t r0,
                         int64_t r1) {
  const ferry__var *x = &m->vars[v];
  const ferry__part *pt = &m->parts[p];
  if (x->ragged && pt->roff && pt->roff[v])
    return (pt->roff[v][r1] - pt->roff[v][r0]) * (int64_t)x->row_bytes;
  return (r1 - r0) * (int64_t)x->row_bytes;
}

/* Chunk id's bytes in a slot (each variable's padded to SLOT_ALIGN);
 * vmax (may be NULL): its largest variable's, raw (may be NULL): their
 * sum unpadded, as read. */
static int64_t chunk_bytes(const ferry__cache *c, int64_t id, int64_t *vmax,
                           int64_t *raw) {
  ferry__chunk k = ferry__chunk_get(c->ci, id);
  int64_t b = 0, mx = 0, r = 0;
  for (int v = 0; v < c->nvars; v++) {
    int64_t n = var_bytes(c->m, k.part, v, k.row, k.row + k.count);
    mx = n > mx ? n : mx;
    r += n;
    b += (n + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
  }
  if (vmax)
    *vmax = mx;
  if (raw)
    *raw = r;
  return b;
}

/* Every rank: the owner, slot and offset of every chunk.  Chunks are
 * visited in a scattered order (i * stride mod nchunks, stride coprime, the
 * same for a given dataset), so a partial cache holds chunks from all over
 * the dataset; cache=node: every node holds the same chunks, as many as
 * fit in cap; cache=cluster: the visit order is cut into nnodes runs of
 * about equal bytes, run n on node n, each up to cap. */
static int place(ferry__cache *c, ferry__err *err) {
  int64_t n = c->nchunks;
  c->owner = malloc((size_t)(n ? n : 1) * sizeof *c->owner);
  c->slot = malloc((size_t)(n ? n : 1) * sizeof *c->slot);
  c->off = malloc((size_t)(n ? n : 1) * sizeof *c->off);
  int64_t *used = calloc((size_t)c->nnodes, sizeof *used);
  int64_t *nslot = calloc((size_t)c->nnodes, sizeof *nslot);
  if (!c->owner || !c->slot || !c->off || !used || !nslot) {
    free(used);
    free(nslot);
    return ferry__oom(err, c->rank, (size_t)n * 20,
                      "cache: the placement of %" PRId64 " chunks", n);
  }
  int64_t padded = 0; /* the runs of cache=cluster are cut in these */
  c->total_bytes = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t raw = 0;
    padded += chunk_bytes(c, i, NULL, &raw);
    c->total_bytes += raw;
  }
  uint64_t stride = 1;
  if (n > 2) {
    stride = (c->m->hash | 1) % (uint64_t)n;
    if (stride == 0)
      stride = 1;
    while (ferry__gcd64(stride, (uint64_t)n) != 1)
      stride++;
  }
  int64_t cum = 0;
  c->cached_bytes = c->nchunks_cached = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t id = (int64_t)(((unsigned __int128)i * stride) % (uint64_t)n);
    int64_t vmax = 0, raw = 0, b = chunk_bytes(c, id, &vmax, &raw);
    int node = 0;
    if (c->mode == FERRY__CACHE_CLUSTER && padded > 0) {
      /* the node of the run the chunk's middle byte falls in */
      node = (int)(((unsigned __int128)(cum + b / 2) * (unsigned)c->nnodes) /
                   (uint64_t)padded);
      if (node >= c->nnodes)
        node = c->nnodes - 1;
    }
    cum += b;
    c->owner[id] = -1;
    c->slot[id] = c->off[id] = -1;
    if (vmax > PIECE_MAX || used[node] + b > c->cap)
      continue;
    c->owner[id] = node;
    c->slot[id] = nslot[node]++;
    c->off[id] = used[node];
    used[node] += b;
    c->cached_bytes += raw;
    c->nchunks_cached++;
  }
  c->nslots = nslot[c->mode == FERRY__CACHE_CLUSTER ? c->node_id : 0];
  c->node_bytes = used[c->mode == FERRY__CACHE_CLUSTER ? c->node_id : 0];
  c->max_node_bytes = 0;
  for (int k = 0; k < c->nnodes; k++)
    if (used[k] > c->max_node_bytes)
      c->max_node_bytes = used[k];
  if (c->mode == FERRY__CACHE_NODE) { /* every node holds them: its own */
    c->max_node_bytes = c->node_bytes;
    for (int64_t i = 0; i < n; i++)
      if (c->owner[i] == 0)
        c->owner[i] = c->node_id;
  }
  free(used);
  free(nslot);
  return 0;
}

/* ---- The node communicator and the region ------------------------------ */

/* FERRY_NODE_SIZE=N: every N consecutive ranks count as one node (a test
 * hook: several "nodes" on one machine).  0 when unset. */
static int node_size_env(void) {
  const char *s = getenv("FERRY_NODE_SIZE");
  if (!s || !*s)
    return 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (*end || v < 1 || v > INT_MAX)
    return -1;
  return (int)v;
}

static int mpi_fail(ferry__err *err, int rank, int mpirc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpirc, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof msg, "MPI error %d", mpirc);
  return ferry__seterr_on(err, rank, FERRY_EMPI, "cache: %s failed: %s", what,
                          msg);
}

static int split_nodes(ferry__cache *c, MPI_Comm comm, ferry__err *err) {
  int ns = node_size_env();
  uint64_t v = (uint64_t)(ns < 0 ? 0 : ns);
  int which = 0;
  int rc = ferry__agree_same(comm, c->rank, &v, 1, &which, err);
  if (rc == FERRY_EMISMATCH || ns < 0)
    return ferry__seterr_on(err, c->rank, FERRY_EINVAL,
                            "cache: FERRY_NODE_SIZE is '%s' here and not a "
                            "positive integer the same on every rank",
                            getenv("FERRY_NODE_SIZE"));
  if (rc)
    return rc;
  int mrc = ns > 0 ? MPI_Comm_split(comm, c->rank / ns, c->rank, &c->node)
                   : MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c->rank,
                                         MPI_INFO_NULL, &c->node);
  if (mrc != MPI_SUCCESS)
    return mpi_fail(err, c->rank, mrc, "MPI_Comm_split_type");
  MPI_Comm_rank(c->node, &c->local_rank);
  MPI_Comm_size(c->node, &c->local_size);
  /* node ids: the nodes numbered in the order of their first ranks */
  int *first = malloc((size_t)c->size * sizeof *first);
  if (!first)
    return ferry__oom(err, c->rank, (size_t)c->size * sizeof *first,
                      "cache: the nodes of %d ranks", c->size);
  int mine = c->rank;
  MPI_Bcast(&mine, 1, MPI_INT, 0, c->node);
  mrc = MPI_Allgather(&mine, 1, MPI_INT, first, 1, MPI_INT, comm);
  if (mrc != MPI_SUCCESS) {
    free(first);
    return mpi_fail(err, c->rank, mrc, "MPI_Allgather of the nodes");
  }
  c->nnodes = 0;
  for (int r = 0; r < c->size; r++)
    if (first[r] == r)
      c->nnodes++;
  c->leader = malloc((size_t)c->nnodes * sizeof *c->leader);
  if (!c->leader) {
    free(first);
    return ferry__oom(err, c->rank, (size_t)c->nnodes * sizeof *c->leader,
                      "cache: %d nodes", c->nnodes);
  }
  for (int r = 0, k = 0; r < c->size; r++)
    if (first[r] == r) {
      if (r == mine)
        c->node_id = k;
      c->leader[k++] = r;
    }
  free(first);
  return 0;
}

/* What this node can give the cache: min(/dev/shm free, MemAvailable)
 * (the node's first rank asks; the others say INT64_MAX). */
static int64_t node_room(int64_t *shm_free) {
  struct statvfs sv;
  int64_t shm = INT64_MAX, mem = INT64_MAX;
  if (statvfs("/dev/shm", &sv) == 0)
    shm = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    long long kb;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
        mem = (int64_t)kb * 1024;
    fclose(f);
  }
  *shm_free = shm;
  return shm < mem ? shm : mem;
}

/* The capacity every node uses: cache_bytes (0: half the room) cut to the
 * room of the node with the least, the same on every rank; a cut is said
 * on rank 0's stderr and in the note. */
static int agree_cap(ferry__cache *c, MPI_Comm comm, int64_t asked,
                     ferry__err *err) {
  int64_t shm = INT64_MAX, room = INT64_MAX;
  if (c->local_rank == 0)
    room = node_room(&shm);
  int64_t want = asked > 0 ? asked : room / 2;
  if (want > shm) /* more than /dev/shm holds: what it holds, less 1/16 */
    want = shm - shm / 16;
  if (c->local_rank != 0)
    want = INT64_MAX;
  int64_t lo = 0;
  int who = INT_MAX, least = INT_MAX; /* the lowest rank with the least */
  int mrc = MPI_Allreduce(&want, &lo, 1, MPI_INT64_T, MPI_MIN, comm);
  if (mrc != MPI_SUCCESS)
    return mpi_fail(err, c->rank, mrc, "MPI_Allreduce of the capacity");
  who = want == lo ? c->rank : INT_MAX;
  mrc = MPI_Allreduce(&who, &least, 1, MPI_INT, MPI_MIN, comm);
  if (mrc != MPI_SUCCESS)
    return mpi_fail(err, c->rank, mrc, "MPI_Allreduce of the capacity");
  c->cap = lo < 0 ? 0 : lo;
  if (asked > 0 && lo < asked) {
    snprintf(c->note, sizeof c->note,
             "cache_bytes=%" PRId64 " asked, but /dev/shm on the node of "
             "rank %d holds less: %" PRId64 " bytes per node",
             asked, least, c->cap);
    if (c->rank == 0)
      fprintf(stderr, "ferry: cache: %s\n", c->note);
  }
  return 0;
}

static size_t region_len(const ferry__cache *c) {
  size_t st = (size_t)c->nslots * (size_t)c->nvars *
              (sizeof(slot_state) + 2 * (size_t)c->words * sizeof(uint64_t));
  st = (st + HDR_BYTES - 1) / HDR_BYTES * HDR_BYTES;
  return HDR_BYTES + st + (size_t)c->node_bytes;
}

/* The node's first rank makes the region; the others map it; every rank
 * agrees; then the first rank unlinks it (also when a rank failed). */
static int make_region(ferry__cache *c, MPI_Comm comm, ferry__err *err) {
  char name[96] = "";
  int rc = 0;
  c->fd = -1;
  c->len = region_len(c);
  if (c->local_rank == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof name, "/ferry-cache-%ld-%lx-%d", (long)getpid(),
             ((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20)),
             c->node_id);
    c->fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (c->fd < 0)
      rc = ferry__seterr_on(err, c->rank, FERRY_EIO,
                            "cache: shm_open(/dev/shm%s): %s", name,
                            strerror(errno));
    else if (ftruncate(c->fd, (off_t)c->len) != 0)
      rc = ferry__seterr_on(err, c->rank, FERRY_EIO,
                            "cache: ftruncate(/dev/shm%s, %zu): %s", name,
                            c->len, strerror(errno));
    else if (fallocate(c->fd, 0, 0, (off_t)(c->len - (size_t)c->node_bytes)) !=
                 0 &&
             errno != EOPNOTSUPP)
      rc = ferry__seterr_on(
          err, c->rank, errno == ENOSPC ? FERRY_ENOMEM : FERRY_EIO,
          "cache: /dev/shm%s: no room for the cache's "
          "%zu bytes of state: %s",
          name, c->len - (size_t)c->node_bytes, strerror(errno));
  }
  int ok = rc == 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, c->node);
  if (ok) {
    MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, c->node);
    if (c->local_rank != 0) {
      c->fd = shm_open(name, O_RDWR, 0);
      if (c->fd < 0)
        rc = ferry__seterr_on(err, c->rank, FERRY_EIO,
                              "cache: shm_open(/dev/shm%s) of the node's "
                              "region: %s",
                              name, strerror(errno));
    }
    if (!rc) {
      void *p =
          mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
      if (p == MAP_FAILED)
        rc = ferry__seterr_on(err, c->rank, FERRY_EIO,
                              "cache: mmap of /dev/shm%s (%zu bytes): %s", name,
                              c->len, strerror(errno));
      else
        c->base = p;
    }
  } else if (c->local_rank != 0) {
    rc = ferry__seterr_on(err, c->rank, FERRY_EIO,
                          "cache: the node's first rank could not make "
                          "the region");
  }
  rc = ferry__agree(comm, c->rank, rc, err);
  if (c->local_rank == 0 && name[0] && c->fd >= 0)
    shm_unlink(name); /* every rank of the node has it (or gives up) */
  if (rc)
    return rc;
  c->state = (slot_state *)(c->base + HDR_BYTES);
  c->bits = (uint64_t *)(c->state + c->nslots * c->nvars);
  c->data = c->base + (c->len - (size_t)c->node_bytes);
  return 0;
}

/* ---- The server (cache=cluster) ---------------------------------------- */

static void nap(int *idle) {
  if (*idle < 64) {
    (*idle)++;
    sched_yield();
    return;
  }
  /* 10 us (plus the timer's slack, ~50 us) for the first ~0.1 s, then
   * 100 us: a request waits at most that long for an idle server */
  struct timespec ts = {0, *idle < 2000 ? 10000 : 100000};
  if (*idle < INT_MAX)
    (*idle)++;
  nanosleep(&ts, NULL);
}

/* Wait for req until deadline (<= 0: forever).  0, 1 timed out, or an MPI
 * error code. */
static int wait_req(MPI_Request *req, MPI_Status *st, double deadline) {
  int idle = 0;
  for (;;) {
    int done = 0;
    int mrc = MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS)
      return mrc;
    if (done)
      return 0;
    if (deadline > 0 && ferry__now() > deadline)
      return 1;
    nap(&idle);
  }
}

/* The deadline of a wait that starts now (0: none, collective_timeout=0). */
static double deadline(const ferry__cache *c) {
  return c->timeout > 0 ? ferry__now() + c->timeout : 0;
}

static slot_state *state_of(const ferry__cache *c, int64_t id, int v) {
  return &c->state[c->slot[id] * c->nvars + v];
}

/* A slot's two row bitmaps: the rows there (readers trust these), then
 * the rows claimed by a writer (set before the copy, so that each row is
 * written once: two ranks may read the same rows from storage, e.g. a
 * sample drawn twice with weights=). */
static uint64_t *bits_of(const ferry__cache *c, int64_t id, int v) {
  return c->bits + (c->slot[id] * c->nvars + v) * 2 * c->words;
}

/* Where variable v of chunk id starts in the owner's data. */
static int64_t var_off(const ferry__cache *c, int64_t id, int v) {
  ferry__chunk k = ferry__chunk_get(c->ci, id);
  int64_t o = c->off[id];
  for (int u = 0; u < v; u++) {
    int64_t n = var_bytes(c->m, k.part, u, k.row, k.row + k.count);
    o += (n + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
  }
  return o;
}

static uint64_t word_mask(int64_t w, int64_t a, int64_t b) {
  int64_t lo = a > w * 64 ? a - w * 64 : 0;
  int64_t hi = b < (w + 1) * 64 ? b - w * 64 : 64;
  uint64_t m = hi >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << hi) - 1;
  return m & ~((UINT64_C(1) << lo) - 1);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Bytes [pos, pos + n) of the region allocated and mapped writable in this
 * process in one call (MADV_POPULATE_WRITE): the copy into them then takes
 * no page fault, where a copy into fresh pages of a shared mapping takes
 * one per 4 KiB page (measured: 139,078 faults instead of 8,000 for 512 MiB
 * on 2 ranks, 35% of epoch 0's time).  A full /dev/shm is an error here
 * (EFAULT), not a SIGBUS later.  0, or -1 where it fails or the kernel has
 * no such advice (older than 5.14: fallocate then reserves the room). */
static int populate(const ferry__cache *c, off_t pos, int64_t n) {
  uintptr_t a = (uintptr_t)(c->base + pos), e = a + (uintptr_t)n;
  a -= a % (uintptr_t)c->page;
  return madvise((void *)a, e - a, MADV_POPULATE_WRITE) == 0 ? 0 : -1;
}

/* The bitmap of rows [a, b) of chunk id of variable v in this node's
 * region into bm (bit j: row a + j; ceil((b - a) / 64) words); returns 1
 * when any is there. */
static int rows_here(const ferry__cache *c, int64_t id, int v, int64_t a,
                     int64_t b, uint64_t *bm) {
  int64_t nw = (b - a + 63) / 64;
  slot_state *s = state_of(c, id, v);
  uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  memset(bm, st == ST_VALID ? 0xff : 0, (size_t)nw * sizeof *bm);
  if (st == ST_VALID)
    return 1;
  if (st == ST_FULL)
    return 0;
  const uint64_t *bits = bits_of(c, id, v);
  int any = 0;
  for (int64_t j = 0; j < b - a; j++) {
    int64_t i = a + j;
    if ((__atomic_load_n(&bits[i / 64], __ATOMIC_ACQUIRE) >> (i % 64)) & 1) {
      bm[j / 64] |= UINT64_C(1) << (j % 64);
      any = 1;
    }
  }
  return any;
}

/* Store rows [a, b) of chunk id (counted from its first row) of variable v,
 * their bytes at src, in this node's region: room reserved first (no room:
 * the slot is FULL, never cached), the rows no writer has claimed yet
 * claimed, copied, then marked there; the piece that completes the chunk
 * makes it VALID.  Any thread of any rank of the node. */
static void fill(ferry__cache *c, int64_t id, int v, int64_t a, int64_t b,
                 const void *src) {
  slot_state *s = state_of(c, id, v);
  uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if (st != ST_EMPTY || a >= b)
    return;
  ferry__chunk k = ferry__chunk_get(c->ci, id);
  int64_t at = var_off(c, id, v) + var_bytes(c->m, k.part, v, k.row, k.row + a);
  int64_t n = var_bytes(c->m, k.part, v, k.row + a, k.row + b);
  off_t pos = (off_t)(c->data - c->base) + (off_t)at;
  if (n > 0 && populate(c, pos, n) != 0 &&
      fallocate(c->fd, 0, pos, (off_t)n) != 0 && errno != EOPNOTSUPP) {
    __atomic_store_n(&s->state, ST_FULL, __ATOMIC_RELEASE);
    return;
  }
  /* claim the rows no one has, copy each run of them, then mark them */
  uint64_t *bits = bits_of(c, id, v), *claim = bits + c->words;
  const unsigned char *from = src;
  int64_t added = 0;
  for (int64_t w = a / 64; w <= (b - 1) / 64; w++) {
    uint64_t m = word_mask(w, a, b);
    uint64_t mine = m & ~__atomic_fetch_or(&claim[w], m, __ATOMIC_ACQ_REL);
    for (int64_t i = w * 64; mine && i < (w + 1) * 64;) {
      if (!((mine >> (i - w * 64)) & 1)) {
        i++;
        continue;
      }
      int64_t j = i;
      while (j < (w + 1) * 64 && ((mine >> (j - w * 64)) & 1))
        j++;
      int64_t off = var_bytes(c->m, k.part, v, k.row + a, k.row + i);
      int64_t len = var_bytes(c->m, k.part, v, k.row + i, k.row + j);
      memcpy(c->data + at + off, from + off, (size_t)len);
      c->c_stored += len;
      i = j;
    }
    __atomic_fetch_or(&bits[w], mine, __ATOMIC_ACQ_REL);
    added += __builtin_popcountll(mine);
  }
  if (added > 0 &&
      __atomic_add_fetch(&s->rows, added, __ATOMIC_ACQ_REL) == k.count)
    __atomic_store_n(&s->state, ST_VALID, __ATOMIC_RELEASE);
}

/* The bytes of rows [a, b) of chunk id of variable v, and where they start
 * in the chunk's variable. */
static int64_t piece_bytes(const ferry__cache *c, int64_t id, int v, int64_t a,
                           int64_t b, int64_t *at) {
  ferry__chunk k = ferry__chunk_get(c->ci, id);
  if (at)
    *at = var_bytes(c->m, k.part, v, k.row, k.row + a);
  return var_bytes(c->m, k.part, v, k.row + a, k.row + b);
}

/* A request's rows are a piece of a chunk this node owns. */
static int request_ok(const ferry__cache *c, int64_t id, int v, int64_t a,
                      int64_t b) {
  if (id < 0 || id >= c->nchunks || v < 0 || v >= c->nvars ||
      c->owner[id] != c->node_id || a < 0 || a >= b)
    return 0;
  ferry__chunk k = ferry__chunk_get(c->ci, id);
  return b <= k.count && piece_bytes(c, id, v, a, b, NULL) <= PIECE_MAX;
}

/* cache=cluster, on the node's first rank: GET answers rows [a, b) of a
 * chunk's variable when they are here (else an empty message); PUT stores
 * the rows that follow.  Until a STOP from its own rank (ferry__cache_close,
 * once every rank's reads are over). */
static void *server_main(void *arg) {
  ferry__cache *c = arg;
  unsigned char *scratch = NULL;
  size_t scratch_len = 0, bm_len = 0;
  uint64_t *bm = NULL;
  for (;;) {
    int64_t q[5];
    MPI_Request r;
    MPI_Status st;
    if (MPI_Irecv(q, 5, MPI_INT64_T, MPI_ANY_SOURCE, TAG_REQ, c->scomm, &r) !=
            MPI_SUCCESS ||
        wait_req(&r, &st, 0) != 0)
      break;
    int src = st.MPI_SOURCE, tag = (int)(q[0] >> 32);
    int64_t type = q[0] & 0xffffffff, id = q[1], a = q[3], b = q[4];
    int v = (int)q[2];
    if (type == Q_STOP)
      break;
    int ok = request_ok(c, id, v, a, b);
    int64_t at = 0, n = ok ? piece_bytes(c, id, v, a, b, &at) : 0;
    if (type == Q_GET) {
      /* the rows' bitmap (bit j: row a + j is here), then the piece's
       * bytes (those of rows not here are whatever the region holds: the
       * requester reads them from storage); when none is here, an empty
       * bitmap and no bytes */
      int64_t nw = ok ? (b - a + 63) / 64 : 0, any = 0;
      if ((size_t)nw > bm_len) {
        uint64_t *p = realloc(bm, (size_t)nw * sizeof *bm);
        if (p) {
          bm = p;
          bm_len = (size_t)nw;
        }
      }
      if ((size_t)nw > bm_len)
        nw = 0; /* no memory: say nothing is here */
      if (nw > 0)
        any = rows_here(c, id, v, a, b, bm);
      MPI_Request sr; /* none here: an empty bitmap, and no bytes */
      if (MPI_Isend(bm, any ? (int)nw : 0, MPI_UINT64_T, src, tag, c->rcomm,
                    &sr) != MPI_SUCCESS ||
          wait_req(&sr, NULL, deadline(c)) != 0 || !any)
        continue;
      if (MPI_Isend(c->data + var_off(c, id, v) + at, (int)n, MPI_BYTE, src,
                    tag, c->rcomm, &sr) == MPI_SUCCESS &&
          wait_req(&sr, NULL, deadline(c)) == 0)
        c->c_sent += n;
      continue;
    }
    /* PUT: the rows follow (a request this node cannot take is still
     * received, into the scratch buffer, and dropped) */
    if ((size_t)n > scratch_len || !scratch) {
      unsigned char *p = realloc(scratch, n > 0 ? (size_t)n : 1);
      if (p) {
        scratch = p;
        scratch_len = n > 0 ? (size_t)n : 1;
      }
    }
    int cnt = -1;
    MPI_Request rr;
    MPI_Status rs;
    if (scratch && (size_t)n <= scratch_len &&
        MPI_Irecv(scratch, (int)n, MPI_BYTE, src, tag, c->scomm, &rr) ==
            MPI_SUCCESS &&
        wait_req(&rr, &rs, deadline(c)) == 0)
      MPI_Get_count(&rs, MPI_BYTE, &cnt);
    if (ok && cnt == (int)n)
      fill(c, id, v, a, b, scratch);
  }
  free(scratch);
  free(bm);
  return NULL;
}

/* ---- Open and close ---------------------------------------------------- */

static void cache_free(ferry__cache *c) {
  if (!c)
    return;
  if (c->base)
    munmap(c->base, c->len);
  if (c->fd >= 0)
    close(c->fd);
  if (c->scomm != MPI_COMM_NULL)
    MPI_Comm_free(&c->scomm);
  if (c->rcomm != MPI_COMM_NULL)
    MPI_Comm_free(&c->rcomm);
  if (c->node != MPI_COMM_NULL)
    MPI_Comm_free(&c->node);
  free(c->leader);
  free(c->owner);
  free(c->slot);
  free(c->off);
  if (c->own.part_chunk)
    ferry__chunk_index_free(&c->own);
  free(c->flat.parts); /* the rest of flat points into the sources */
  free(c->src);
  free(c->part0);
  free(c->stv);
  free(c);
}

int ferry__cache_check(const ferry_loader *L, ferry__err *err) {
  const ferry_options *o = L->opts;
  if (o->cache == FERRY__CACHE_NONE) {
    if (o->cache_bytes != 0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'cache_bytes' applies only with cache=node "
                           "or cache=cluster (cache is 'none')");
    return 0;
  }
  const char *mode = o->cache == FERRY__CACHE_NODE ? "node" : "cluster";
  if (o->io == FERRY__IO_COLLECTIVE || o->io == FERRY__IO_MMAP)
    return ferry__seterr(err, FERRY_EINVAL,
                         "option 'cache' = '%s' with io=%s: the cache reads "
                         "independently (io=independent or auto); with "
                         "io=mmap the page cache is the cache already",
                         mode, o->io == FERRY__IO_MMAP ? "mmap" : "collective");
  return 0;
}

/* pack=: c->flat, one manifest of the corpus's parts (of every source's
 * in order, for a mix), each with the token variable alone (its arrays
 * point into the source's part at that variable: nothing is copied but
 * the part structs), so that the placement and the slots see one corpus
 * of one variable; c->m points to it.  The sources' tokens must have one
 * row size. */
static int flat_corpus(ferry__cache *c, const ferry__manifest *view,
                       ferry__err *err) {
  const int64_t S = view->srcs ? view->nsrcs : 1;
  int64_t np = 0, rows = 0;
  size_t rb0 = 0;
  c->nsrc = S;
  c->src = calloc((size_t)S, sizeof *c->src);
  c->part0 = calloc((size_t)S + 1, sizeof *c->part0);
  c->stv = calloc((size_t)S, sizeof *c->stv);
  if (!c->src || !c->part0 || !c->stv)
    return ferry__oom(err, c->rank, (size_t)S * 24, "cache: the sources of %s",
                      view->spec);
  for (int64_t s = 0; s < S; s++) {
    const ferry__manifest *m = view->srcs ? &view->srcs[s] : view->inner;
    int tv = ferry__pack_token_var(view, s);
    if (tv < 0 || tv >= m->nvars)
      return ferry__seterr_on(err, c->rank, FERRY_EINTERNAL,
                              "cache: source %" PRId64 " of %s names no "
                              "token variable",
                              s, view->spec);
    if (s == 0)
      rb0 = m->vars[tv].row_bytes;
    else if (m->vars[tv].row_bytes != rb0)
      return ferry__seterr_on(
          err, c->rank, FERRY_ENOTSUP,
          "cache: the sources of %s store tokens of different sizes (%s: "
          "%zu bytes, %s: %zu); the cache keeps one size",
          view->spec, view->srcs[0].spec, rb0, m->spec, m->vars[tv].row_bytes);
    c->src[s] = m;
    c->stv[s] = tv;
    c->part0[s] = np;
    np += m->nparts;
  }
  c->part0[S] = np;
  ferry__manifest *f = &c->flat;
  f->parts = calloc((size_t)(np ? np : 1), sizeof *f->parts);
  if (!f->parts)
    return ferry__oom(err, c->rank, (size_t)np * sizeof *f->parts,
                      "cache: the parts of %s", view->spec);
  for (int64_t s = 0; s < S; s++)
    for (int64_t q = 0; q < c->src[s]->nparts; q++) {
      const ferry__part *sp = &c->src[s]->parts[q];
      ferry__part *d = &f->parts[c->part0[s] + q];
      const int tv = c->stv[s];
      d->num_samples = sp->num_samples;
      d->first_sample = rows;
      d->paths = sp->paths ? sp->paths + tv : NULL;
      d->data_offset = sp->data_offset ? sp->data_offset + tv : NULL;
      d->file_size = sp->file_size ? sp->file_size + tv : NULL;
      d->rec = sp->rec ? sp->rec + tv : NULL;
      d->roff = sp->roff ? sp->roff + tv : NULL;
      rows += sp->num_samples;
    }
  f->backend = c->src[0]->backend;
  f->spec = view->srcs ? view->spec : view->inner->spec;
  f->nvars = 1;
  f->vars = &c->src[0]->vars[c->stv[0]];
  f->nparts = np;
  f->num_samples = rows;
  f->hash = view->inner->hash;
  c->m = f;
  c->nvars = 1;
  c->inner = ferry__backend_find(f->backend);
  return 0;
}

/* pack=: the cache's chunks are runs of the flat corpus's documents
 * (the view's rows are made anew each epoch), about
 * FERRY__AUTO_CHUNK_BYTES of tokens each (the automatic chunk rule over
 * the corpus), at least 64 of them where the corpus has that many
 * documents (cache=cluster spreads chunks over the nodes). */
static int corpus_chunks(ferry__cache *c, ferry__err *err) {
  const ferry__manifest *in = c->m;
  int64_t docs = in->num_samples, toks = 0;
  for (int64_t p = 0; p < in->nparts; p++) {
    const ferry__part *pt = &in->parts[p];
    if (pt->roff && pt->roff[0])
      toks += pt->roff[0][pt->num_samples];
  }
  size_t mean =
      docs > 0 ? (size_t)((toks / docs + 1) * (int64_t)in->vars[0].row_bytes)
               : 1;
  int64_t cs = ferry__auto_chunk_samples(in, mean, NULL, NULL, 0);
  if (cs < 1)
    cs = 1;
  if (docs / cs < FERRY__AUTO_MIN_CHUNKS)
    cs = docs / FERRY__AUTO_MIN_CHUNKS > 0 ? docs / FERRY__AUTO_MIN_CHUNKS : 1;
  if (ferry__chunk_index_make(in, cs, &c->own) != 0)
    return ferry__oom(err, c->rank, (size_t)(in->nparts + 1) * 8,
                      "cache: the chunk index of %s", in->spec);
  c->ci = &c->own;
  c->nchunks = c->own.nchunks;
  c->words = (cs + 63) / 64;
  return 0;
}

/* cache=cluster under pack=: the packed view reads a run of documents at
 * a time, and each run another node holds is one request to it; runs of
 * a few short documents (pack_chunk's automatic 1 or 2) make the exchange
 * slower than storage (performance.md, node cache: packed rows).  The
 * advice goes into the note (ferry info, bench, cache_info). */
static void note_runs(ferry__cache *c, const ferry__manifest *view) {
  int64_t run = ferry__pack_run_docs(view, 0), docs = c->m->num_samples;
  if (c->mode != FERRY__CACHE_CLUSTER || c->nnodes < 2 || run < 1 || docs < 1 ||
      c->total_bytes < 1)
    return;
  int64_t mean = c->total_bytes / docs > 0 ? c->total_bytes / docs : 1;
  if (run * mean >= ((int64_t)64 << 10))
    return;
  int64_t want = ((int64_t)64 << 10) / mean + 1;
  size_t n = strlen(c->note);
  snprintf(c->note + n, sizeof c->note - n,
           "%spack=: the packed rows read runs of %" PRId64
           " document%s (about %" PRId64 " bytes), one request each to the "
           "node that holds them; pack_chunk=%" PRId64 " would make "
           "requests of about 64 KiB (it is part of the plan: set it alike "
           "with and without the cache)",
           n ? "; " : "", run, run == 1 ? "" : "s", run * mean, want);
}

/* Every rank, the same decision: no cache after all (no room on some
 * node), said on rank 0's stderr; ferry_open goes on without it. */
static int without(ferry_loader *L, ferry__cache *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int without(ferry_loader *L, ferry__cache *c, const char *fmt, ...) {
  char why[FERRY__MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (L->rank == 0)
    fprintf(stderr, "ferry: cache: %s: running without the cache\n", why);
  ferry__cache_close(c);
  return 0;
}

int ferry__cache_open(ferry_loader *L, ferry__err *err) {
  if (L->opts->cache == FERRY__CACHE_NONE)
    return 0;
  ferry__cache *c = calloc(1, sizeof *c);
  int rc = c ? 0 : ferry__oom(err, L->rank, sizeof *c, "the cache");
  rc = ferry__agree(L->comm, L->rank, rc, err);
  if (rc) {
    free(c);
    return rc;
  }
  /* decode=: the encoded bytes under the view are cached (the pixels
   * change with the epoch's crops); pack=: the corpus's documents (the rows
   * change with the epoch's order).  The view reads them through the cache
   * (loader/decode.c and pack.c find it on their inner manifest). */
  const int packed = ferry__pack_is(&L->m) && L->m.inner;
  int below = (ferry__decode_is(&L->m) || packed) && L->m.inner;
  c->mode = L->opts->cache;
  c->m = below ? L->m.inner : &L->m;
  c->inner = below ? ferry__backend_find(L->m.inner->backend) : L->be;
  c->ci = &L->chunks;
  c->nvars = c->m->nvars;
  c->rank = L->rank;
  c->size = L->size;
  c->node = c->scomm = c->rcomm = MPI_COMM_NULL;
  c->fd = -1;
  c->nchunks = L->nchunks;
  c->words = (L->chunk_samples + 63) / 64;
  if (packed && !rc)
    rc = flat_corpus(c, &L->m, err);
  if (packed && !rc)
    rc = corpus_chunks(c, err);
  c->page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  c->timeout = (double)L->opts->collective_timeout;
  if (!c->inner) /* the manifest's backend is built in: open found it */
    rc = ferry__seterr(err, FERRY_EINTERNAL, "cache: no backend '%s'",
                       c->m->backend);
  if (!rc)
    rc = split_nodes(c, L->comm, err);
  if (!rc)
    rc = agree_cap(c, L->comm, L->opts->cache_bytes, err);
  if (!rc)
    rc = place(c, err);
  rc = ferry__agree(L->comm, L->rank, rc, err);
  if (!rc && packed)
    note_runs(c, &L->m);
  if (!rc && c->nchunks_cached == 0) /* the same on every rank */
    return without(L, c,
                   "no room for any chunk (the capacity of a node: "
                   "%" PRId64 " bytes)",
                   c->cap);
  if (!rc)
    rc = make_region(c, L->comm, err);
  if (rc == FERRY_ENOMEM) { /* agreed: /dev/shm filled since it was asked */
    char text[FERRY__MSG_MAX];
    ferry__err_text(err, text, sizeof text);
    memset(err, 0, sizeof *err);
    return without(L, c, "%s", text);
  }
  if (!rc && c->mode == FERRY__CACHE_CLUSTER) {
    int mrc = MPI_Comm_dup(L->comm, &c->scomm);
    if (mrc == MPI_SUCCESS)
      mrc = MPI_Comm_dup(L->comm, &c->rcomm);
    if (mrc != MPI_SUCCESS)
      rc = mpi_fail(err, c->rank, mrc, "MPI_Comm_dup");
    if (!rc && c->local_rank == 0) {
      if (pthread_create(&c->server, NULL, server_main, c) != 0)
        rc = ferry__seterr_on(err, c->rank, FERRY_ENOMEM,
                              "cache: cannot start the server thread");
      else
        c->server_on = 1;
    }
    rc = ferry__agree(L->comm, L->rank, rc, err);
  }
  if (rc) {
    ferry__cache_close(c);
    return rc;
  }
  L->cache = c;
  if (below) {
    L->m.inner->cache = c;
    for (int64_t s = 0; L->m.srcs && s < L->m.nsrcs; s++) /* a packed mix's */
      L->m.srcs[s].cache = c;
  } else {
    L->m.cache = c;
    L->be = &ferry__cache_backend;
  }
  return 0;
}

void ferry__cache_close(ferry__cache *c) {
  if (!c)
    return;
  if (c->server_on || c->scomm != MPI_COMM_NULL) {
    /* every rank's reads are over before a server stops */
    MPI_Request r;
    int done = MPI_Ibarrier(c->scomm, &r) == MPI_SUCCESS &&
               wait_req(&r, NULL, deadline(c)) == 0;
    if (c->server_on) {
      int64_t q[5] = {Q_STOP, 0, 0, 0, 0};
      if (done && MPI_Send(q, 5, MPI_INT64_T, c->rank, TAG_REQ, c->scomm) ==
                      MPI_SUCCESS)
        pthread_join(c->server, NULL);
      else
        return; /* a rank is gone: leave the server to the job's end */
    }
    if (!done)
      return;
  }
  cache_free(c);
}

/* ---- Reads ------------------------------------------------------------- */

static int cache_io_open(ferry__io **out, const ferry__manifest *m,
                         const ferry__io_params *p, ferry__err *err) {
  ferry__cache *c = m->cache;
  if (!c)
    return ferry__seterr(err, FERRY_EINTERNAL, "cache: io_open without one");
  ferry__io *io = calloc(1, sizeof *io);
  if (!io)
    return ferry__oom(err, p->rank, sizeof *io, "the cache's I/O state");
  io->c = c;
  io->be = c->inner;
  io->tv = -1;
  int found = c->nsrc == 0; /* pack=: m is a source of the flat corpus */
  for (int64_t s = 0; s < c->nsrc; s++)
    if (m == c->src[s]) {
      io->be = ferry__backend_find(m->backend);
      io->part0 = c->part0[s];
      io->tv = c->stv[s];
      found = 1;
    }
  if (!found) {
    free(io);
    return ferry__seterr_on(err, p->rank, FERRY_EINTERNAL,
                            "cache: io_open of %s, not a source of %s", m->spec,
                            c->m->spec);
  }
  if (!io->be) {
    free(io);
    return ferry__seterr_on(err, p->rank, FERRY_ENOTSUP,
                            "cache: backend '%s' of %s is not built in",
                            m->backend, m->spec);
  }
  ferry__io_params cp = *p;
  cp.defer = 0; /* a read is stored as soon as it returns */
  int rc = io->be->io_open(&io->child, m, &cp, err);
  if (rc) {
    free(io);
    return rc;
  }
  *out = io;
  return 0;
}

static void cache_io_close(ferry__io *io) {
  if (!io)
    return;
  io->be->io_close(io->child);
  free(io->bm);
  free(io);
}

/* GET rows [a, b) of chunk id (counted from its first row) of variable v
 * from its owner node: bm (ceil((b - a) / 64) words) receives the bitmap
 * of the rows it has, dst (n bytes) their bytes.  1 when any row came, 0
 * when none, or a negative code. */
static int remote_get(ferry__cache *c, int64_t id, int v, int64_t a, int64_t b,
                      int64_t n, void *dst, uint64_t *bm, ferry__err *err) {
  int node = c->owner[id], to = c->leader[node];
  int tag = TAG_REPLY0 + (int)(c->seq++ % REPLY_TAGS);
  int64_t q[5] = {Q_GET | ((int64_t)tag << 32), id, v, a, b};
  int nw = (int)((b - a + 63) / 64), cnt = 0;
  MPI_Request rr, sr;
  MPI_Status st;
  double dl = deadline(c);
  int mrc = MPI_Irecv(bm, nw, MPI_UINT64_T, to, tag, c->rcomm, &rr);
  if (mrc == MPI_SUCCESS)
    mrc = MPI_Isend(q, 5, MPI_INT64_T, to, TAG_REQ, c->scomm, &sr);
  if (mrc == MPI_SUCCESS && (mrc = wait_req(&sr, NULL, dl)) == 0)
    mrc = wait_req(&rr, &st, dl);
  if (mrc == MPI_SUCCESS) {
    MPI_Get_count(&st, MPI_UINT64_T, &cnt);
    if (cnt != nw) /* none here (or no memory there) */
      return 0;
    mrc = MPI_Irecv(dst, (int)n, MPI_BYTE, to, tag, c->rcomm, &rr);
    if (mrc == MPI_SUCCESS)
      mrc = wait_req(&rr, &st, dl);
  }
  if (mrc == 1) {
    ferry__chunk k = ferry__chunk_get(c->ci, id);
    return ferry__seterr_on(
        err, c->rank, FERRY_EPEER,
        "cache: no answer in %.0f s from node %d (rank %d) for rows %" PRId64
        "..%" PRId64 " of part %" PRId64 " (%s), variable %s",
        c->timeout, node, to, k.row + a, k.row + b, k.part,
        c->m->parts[k.part].paths[v], c->m->vars[v].name);
  }
  if (mrc != MPI_SUCCESS)
    return mpi_fail(err, c->rank, mrc, "a request to another node");
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  if (cnt != (int)n) {
    ferry__chunk k = ferry__chunk_get(c->ci, id);
    return ferry__seterr_on(
        err, c->rank, FERRY_EINTERNAL,
        "cache: node %d (rank %d) sent %d bytes for rows %" PRId64 "..%" PRId64
        " of part %" PRId64 " (%s), variable %s, not %" PRId64,
        node, to, cnt, k.row + a, k.row + b, k.part,
        c->m->parts[k.part].paths[v], c->m->vars[v].name, n);
  }
  return 1;
}

/* PUT rows [a, b) of chunk id of variable v (n bytes at src) to its owner
 * node.  Failures are not errors: the rows stay uncached there. */
static void remote_put(ferry__cache *c, int64_t id, int v, int64_t a, int64_t b,
                       int64_t n, const void *src) {
  int to = c->leader[c->owner[id]];
  int tag = TAG_REPLY0 + (int)(c->seq++ % REPLY_TAGS);
  int64_t q[5] = {Q_PUT | ((int64_t)tag << 32), id, v, a, b};
  double dl = deadline(c);
  MPI_Request r[2];
  if (MPI_Isend(q, 5, MPI_INT64_T, to, TAG_REQ, c->scomm, &r[0]) !=
          MPI_SUCCESS ||
      wait_req(&r[0], NULL, dl) != 0)
    return;
  if (MPI_Isend((void *)src, (int)n, MPI_BYTE, to, tag, c->scomm, &r[1]) ==
          MPI_SUCCESS &&
      wait_req(&r[1], NULL, dl) == 0)
    c->c_sent += n;
}

/* Rows [r0, r1) of part, read from storage into out: each chunk's piece
 * among them stored where the chunk lives (this node's region, or sent to
 * its owner node). */
static void store_run(ferry__cache *c, int64_t part, int var, int64_t r0,
                      int64_t r1, const unsigned char *out) {
  const ferry__manifest *m = c->m;
  const int64_t cs = c->ci->chunk_samples, n = m->parts[part].num_samples;
  for (int64_t q = r0; q < r1;) {
    int64_t k0 = q / cs * cs, k1 = k0 + cs < n ? k0 + cs : n;
    int64_t qe = k1 < r1 ? k1 : r1, id = c->ci->part_chunk[part] + q / cs;
    const unsigned char *src = out + var_bytes(m, part, var, r0, q);
    if (c->owner[id] == c->node_id)
      fill(c, id, var, q - k0, qe - k0, src);
    else if (c->owner[id] >= 0 && c->mode == FERRY__CACHE_CLUSTER &&
             var_bytes(m, part, var, q, qe) <= PIECE_MAX)
      remote_put(c, id, var, q - k0, qe - k0, var_bytes(m, part, var, q, qe),
                 src);
    q = qe;
  }
}

/* Rows [r0, r1) of part (c->m's numbering) from storage into out, then
 * stored (store_run); the read asks io's own manifest (its part, its
 * variable). */
static int read_run(ferry__io *io, int64_t part, int var, int64_t r0,
                    int64_t r1, unsigned char *out, ferry__err *err) {
  ferry__cache *c = io->c;
  int rc = io->be->io_read(io->child, part - io->part0,
                           io->tv >= 0 ? io->tv : var, r0, r1 - r0, out, err);
  if (rc)
    return rc;
  c->c_storage += var_bytes(c->m, part, var, r0, r1);
  store_run(c, part, var, r0, r1, out);
  return 0;
}

/* The I/O state's bitmap buffer, at least nw words. */
static uint64_t *bitmap(ferry__io *io, int64_t nw, ferry__err *err) {
  if ((size_t)nw > io->bm_len) {
    uint64_t *p = realloc(io->bm, (size_t)nw * sizeof *p);
    if (!p) {
      ferry__oom(err, io->c->rank, (size_t)nw * sizeof *p,
                 "cache: the bitmap of a chunk's rows");
      return NULL;
    }
    io->bm = p;
    io->bm_len = (size_t)nw;
  }
  return io->bm;
}

/* Each piece (the rows of one chunk asked for): the rows this node's
 * region holds are copied from there, those its owner node holds are
 * received from it (cache=cluster), and the others are read from storage,
 * with their neighbours in one read, then stored. */
static int cache_io_read(ferry__io *io, int64_t part, int var, int64_t row,
                         int64_t nrows, void *buf, ferry__err *err) {
  ferry__cache *c = io->c;
  if (io->tv >= 0 && var != io->tv) /* pack=: not the tokens, not cached */
    return io->be->io_read(io->child, part, var, row, nrows, buf, err);
  if (io->tv >= 0) { /* in flat's numbering */
    part += io->part0;
    var = 0;
  }
  const ferry__manifest *m = c->m;
  const int64_t cs = c->ci->chunk_samples, n = m->parts[part].num_samples;
  unsigned char *out = buf, *s_out = NULL;
  int64_t r = row, end = row + nrows, s_row = -1; /* the run [s_row, r) */
  while (r < end) {
    int64_t id = c->ci->part_chunk[part] + r / cs, k0 = r / cs * cs;
    int64_t k1 = k0 + cs < n ? k0 + cs : n, pe = k1 < end ? k1 : end;
    int64_t nb = var_bytes(m, part, var, r, pe), rc = 0;
    uint64_t *bm = bitmap(io, (pe - r + 63) / 64, err);
    if (!bm)
      return FERRY_ENOMEM;
    int local = c->owner[id] == c->node_id, any = 0;
    if (local)
      any = rows_here(c, id, var, r - k0, pe - k0, bm);
    else if (c->owner[id] >= 0 && c->mode == FERRY__CACHE_CLUSTER &&
             nb <= PIECE_MAX &&
             (any = remote_get(c, id, var, r - k0, pe - k0, nb, out, bm, err)) <
                 0)
      return any;
    /* the piece's runs of rows there and not there */
    for (int64_t x = r; x < pe;) {
      int there = any && ((bm[(x - r) / 64] >> ((x - r) % 64)) & 1);
      int64_t y = x + 1;
      while (y < pe &&
             there == (any && ((bm[(y - r) / 64] >> ((y - r) % 64)) & 1)))
        y++;
      unsigned char *o = out + var_bytes(m, part, var, r, x);
      if (!there) {
        if (s_row < 0) {
          s_row = x;
          s_out = o;
        }
      } else {
        if (s_row >= 0 && (rc = read_run(io, part, var, s_row, x, s_out, err)))
          return (int)rc;
        s_row = -1;
        int64_t nx = var_bytes(m, part, var, x, y);
        if (local) {
          memcpy(o,
                 c->data + var_off(c, id, var) + var_bytes(m, part, var, k0, x),
                 (size_t)nx);
          c->c_local += nx;
        } else {
          c->c_remote += nx;
        }
      }
      x = y;
    }
    out += nb;
    r = pe;
  }
  return s_row >= 0 ? read_run(io, part, var, s_row, r, s_out, err) : 0;
}

const ferry__backend ferry__cache_backend = {
    .name = "cache",
    .version = FERRY__BACKEND_VERSION,
    .caps = 0,
    .scheme = "ferry-cache",
    .describe = ferry__view_describe,
    .io_open = cache_io_open,
    .io_read = cache_io_read,
    .io_close = cache_io_close,
};

/* ---- What it holds and did --------------------------------------------- */

void ferry__cache_stats(const ferry__cache *c, ferry_stats *s) {
  if (!c)
    return;
  ferry__cache *w = (ferry__cache *)c;
  s->cache_local_bytes = w->c_local;
  s->cache_remote_bytes = w->c_remote;
  s->cache_sent_bytes = w->c_sent;
  s->cache_stored_bytes = w->c_stored;
  s->bytes_read = w->c_storage;
}

int ferry__cache_info(const ferry__cache *c, ferry_cache_info *out) {
  memset(out, 0, sizeof *out);
  if (!c)
    return 0;
  out->mode = c->mode;
  out->nodes = c->nnodes;
  out->node = c->node_id;
  out->node_ranks = c->local_size;
  out->capacity_bytes = c->cap;
  out->node_bytes = c->node_bytes;
  out->max_node_bytes = c->max_node_bytes;
  out->dataset_bytes = c->total_bytes;
  out->cached_bytes = c->cached_bytes;
  out->chunks = c->nchunks;
  out->cached_chunks = c->nchunks_cached;
  out->region_bytes = (int64_t)c->len;
  /* later epochs: what no node holds comes from storage; cluster: what a
   * rank reads of other nodes' chunks crosses the network, (nodes-1)/nodes
   * of the cached bytes on average */
  out->storage_bytes_per_epoch = c->total_bytes - c->cached_bytes;
  out->network_bytes_per_epoch =
      c->mode == FERRY__CACHE_CLUSTER && c->nnodes > 0
          ? c->cached_bytes / c->nnodes * (c->nnodes - 1)
          : 0;
  snprintf(out->note, sizeof out->note, "%s", c->note);
  return 0;
}
