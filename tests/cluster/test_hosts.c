/*
 * test_hosts.c - what an MPI job over the simulated hosts of
 * tests/lib/hosts.sh must see for issue 29's node cache to be tested
 * honestly (tests/cluster/hosts.sh runs it over 3 hosts of 2 ranks):
 *
 *  - MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups exactly the ranks
 *    whose host name is the same, RANKS_PER_HOST of them, HOSTS groups,
 *    rank r on host ferry-h(r / RANKS_PER_HOST) (mpirun --map-by slot);
 *  - an allreduce over every rank and a large exchange between hosts (each
 *    rank sends MIB MiB to the rank of the same local rank on the next
 *    host) arrive intact;
 *  - a window of MPI_Win_allocate_shared on the node communicator (what
 *    the node cache will allocate), allocated and written by the node's
 *    first rank, is read by the others of its host, who write into it too;
 *  - /dev/shm: a file made there on one host is seen by the ranks of the
 *    others only with --shm shared (private: each host has its own);
 *  - the file system is shared: a file written by rank 0 under --dir is
 *    read by every rank on every host.
 *
 * With --loop SECONDS --ready FILE it then creates FILE and exchanges data
 * between hosts for SECONDS; the script cuts a host's link meanwhile, and
 * the job must fail (an MPI error), not end well and not hang.  Prints one
 * line per rank ("rank R host H node_size S node_ranks A,B") and ends with
 * the summary line of ferry_test.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FERRY_TEST_MPI 1
#include "../ferry_test.h"

enum { NAME_LEN = 64 };

struct opts {
  int hosts, ppn, mib, loop_s, shm_private;
  const char *dir, *ready;
};

struct job {
  int rank, size, local, local_size;
  MPI_Comm node;
  char (*names)[NAME_LEN]; /* every rank's host name, by world rank */
};

static uint64_t pattern(int rank, size_t i) {
  return ((uint64_t)(rank + 1) << 40) ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The node communicator and the host names; the groups against the names. */
static int check_nodes(struct job *j, const struct opts *o) {
  char me[NAME_LEN] = {0}, proc[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  REQUIRE(gethostname(me, NAME_LEN - 1) == 0, "gethostname: %s",
          strerror(errno));
  MPI_Get_processor_name(proc, &len);
  CHECK(strcmp(proc, me) == 0, "MPI_Get_processor_name %s, gethostname %s",
        proc, me);
  j->names = calloc((size_t)j->size, NAME_LEN);
  REQUIRE(j->names != NULL, "out of memory");
  MPI_Allgather(me, NAME_LEN, MPI_CHAR, j->names, NAME_LEN, MPI_CHAR,
                MPI_COMM_WORLD);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, j->rank,
                      MPI_INFO_NULL, &j->node);
  MPI_Comm_rank(j->node, &j->local);
  MPI_Comm_size(j->node, &j->local_size);
  int *members = calloc((size_t)j->local_size, sizeof *members);
  REQUIRE(members != NULL, "out of memory");
  MPI_Allgather(&j->rank, 1, MPI_INT, members, 1, MPI_INT, j->node);
  char line[512];
  int n =
      snprintf(line, sizeof line, "rank %d host %s node_size %d node_ranks ",
               j->rank, me, j->local_size);
  for (int i = 0; i < j->local_size && n < (int)sizeof line - 12; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, "%s%d", i ? "," : "",
                  members[i]);
  printf("%s\n", line);
  fflush(stdout);
  /* The node communicator holds exactly the ranks of my host name. */
  int same = 0, distinct = 0;
  for (int r = 0; r < j->size; r++) {
    if (strcmp(j->names[r], me) == 0)
      same++;
    int first = 1;
    for (int q = 0; q < r; q++)
      first = first && strcmp(j->names[q], j->names[r]) != 0;
    distinct += first;
  }
  CHECK(same == j->local_size,
        "%d ranks are on %s, the node communicator has %d", same, me,
        j->local_size);
  for (int i = 0; i < j->local_size; i++)
    CHECK(strcmp(j->names[members[i]], me) == 0,
          "node rank %d is world rank %d on %s, not %s", i, members[i],
          j->names[members[i]], me);
  free(members);
  if (o->hosts > 0)
    CHECK(distinct == o->hosts, "%d host names, not %d", distinct, o->hosts);
  if (o->ppn > 0) {
    char want[NAME_LEN];
    snprintf(want, sizeof want, "ferry-h%d", j->rank / o->ppn);
    CHECK(j->local_size == o->ppn, "node size %d, not %d", j->local_size,
          o->ppn);
    CHECK(strcmp(me, want) == 0, "rank %d on %s, not %s", j->rank, me, want);
  }
  return 0;
}

/* An allreduce over every rank and one over the node. */
static void check_allreduce(const struct job *j) {
  long mine = j->rank + 1, sum = 0, node_sum = 0, want = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(sum == (long)j->size * (j->size + 1) / 2, "allreduce sum %ld", sum);
  MPI_Allreduce(&mine, &node_sum, 1, MPI_LONG, MPI_SUM, j->node);
  for (int r = 0; r < j->size; r++)
    if (strcmp(j->names[r], j->names[j->rank]) == 0)
      want += r + 1;
  CHECK(node_sum == want, "node allreduce sum %ld, not %ld", node_sum, want);
}

/* MIB MiB to the same local rank of the next host, from the previous one. */
static int check_exchange(const struct job *j, int mib) {
  size_t n = (size_t)mib * 1024 * 1024 / sizeof(uint64_t);
  int to = (j->rank + j->local_size) % j->size;
  int from = (j->rank - j->local_size + j->size) % j->size;
  uint64_t *out = malloc(n * sizeof *out), *in = malloc(n * sizeof *in);
  REQUIRE(out != NULL && in != NULL, "out of memory (%d MiB)", mib);
  for (size_t i = 0; i < n; i++)
    out[i] = pattern(j->rank, i);
  memset(in, 0, n * sizeof *in);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  MPI_Sendrecv(out, (int)n, MPI_UINT64_T, to, 7, in, (int)n, MPI_UINT64_T, from,
               7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  double dt = now() - t0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += in[i] != pattern(from, i);
  CHECK(bad == 0, "%zu of %zu words from rank %d (%s) wrong", bad, n, from,
        j->names[from]);
  if (j->rank == 0)
    printf("exchange: %d MiB per rank, %s -> %s, %.3f s, %.0f MiB/s per rank\n",
           mib, j->names[j->rank], j->names[to], dt, dt > 0 ? mib / dt : 0.0);
  free(out);
  free(in);
  return 0;
}

/* The node's first rank allocates a shared window and writes a pattern of
 * its own world rank; every local rank writes its world rank into a slot;
 * each reads the others' writes through its own mapping. */
static int check_window(const struct job *j) {
  enum { WORDS = 1 << 17 }; /* 1 MiB of pattern */
  MPI_Aint bytes = j->local == 0 ? (MPI_Aint)(WORDS + j->local_size) * 8 : 0;
  uint64_t *mine = NULL, *base = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(bytes, 8, MPI_INFO_NULL, j->node, &mine, &win);
  MPI_Aint size = 0;
  int disp = 0;
  MPI_Win_shared_query(win, 0, &size, &disp, &base);
  REQUIRE(base != NULL && size == (MPI_Aint)(WORDS + j->local_size) * 8,
          "shared query: %ld bytes", (long)size);
  int leader = j->rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, j->node);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  if (j->local == 0)
    for (size_t i = 0; i < WORDS; i++)
      base[i] = pattern(leader, i);
  base[WORDS + j->local] = (uint64_t)j->rank;
  MPI_Win_sync(win);
  MPI_Barrier(j->node);
  MPI_Win_sync(win);
  size_t bad = 0;
  for (size_t i = 0; i < WORDS; i++)
    bad += base[i] != pattern(leader, i);
  CHECK(bad == 0, "%zu words of the window of rank %d wrong", bad, leader);
  int *members = calloc((size_t)j->local_size, sizeof *members);
  REQUIRE(members != NULL, "out of memory");
  MPI_Allgather(&j->rank, 1, MPI_INT, members, 1, MPI_INT, j->node);
  for (int i = 0; i < j->local_size; i++)
    CHECK(base[WORDS + i] == (uint64_t)members[i],
          "slot %d holds %llu, not rank %d", i,
          (unsigned long long)base[WORDS + i], members[i]);
  /* Every rank of another host saw its own leader's window, not ours. */
  int *leaders = calloc((size_t)j->size, sizeof *leaders);
  REQUIRE(leaders != NULL, "out of memory");
  MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < j->size; r++)
    CHECK((leaders[r] == leader) ==
              (strcmp(j->names[r], j->names[j->rank]) == 0),
          "rank %d (%s) shares the window of rank %d, I (%s) that of %d", r,
          j->names[r], leaders[r], j->names[j->rank], leader);
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(members);
  free(leaders);
  return 0;
}

/* Each host's first rank makes a file in /dev/shm; who sees whose? */
static int check_devshm(const struct job *j, int shm_private) {
  int tag = (int)getpid();
  char path[256];
  MPI_Bcast(&tag, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "/dev/shm/ferry-hosts.%d.%s", tag,
           j->names[j->rank]);
  if (j->local == 0) {
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < j->size; r += j->local_size) {
    snprintf(path, sizeof path, "/dev/shm/ferry-hosts.%d.%s", tag, j->names[r]);
    int seen = access(path, F_OK) == 0;
    int own = strcmp(j->names[r], j->names[j->rank]) == 0;
    CHECK(seen == (own || !shm_private),
          "%s: %s sees %s's /dev/shm file: %s (shm %s)", j->names[j->rank],
          j->names[j->rank], j->names[r], seen ? "yes" : "no",
          shm_private ? "private" : "shared");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (j->local == 0) {
    snprintf(path, sizeof path, "/dev/shm/ferry-hosts.%d.%s", tag,
             j->names[j->rank]);
    unlink(path);
  }
  return 0;
}

/* Rank 0 writes DIR/data; every rank on every host reads it back. */
static int check_files(const struct job *j, const char *dir) {
  enum { WORDS = 1 << 16 };
  char path[4096];
  uint64_t *buf = calloc(WORDS, sizeof *buf);
  REQUIRE(buf != NULL, "out of memory");
  snprintf(path, sizeof path, "%s/data", dir);
  int ok = 1;
  if (j->rank == 0) {
    for (size_t i = 0; i < WORDS; i++)
      buf[i] = pattern(0, i);
    FILE *f = fopen(path, "wb");
    ok = f != NULL && fwrite(buf, sizeof *buf, WORDS, f) == WORDS;
    ok = (f != NULL && fclose(f) == 0) && ok;
    CHECK(ok, "write %s: %s", path, strerror(errno));
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (ok) {
    memset(buf, 0, WORDS * sizeof *buf);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "%s cannot open %s: %s", j->names[j->rank], path,
          strerror(errno));
    size_t got = f ? fread(buf, sizeof *buf, WORDS, f) : 0;
    if (f)
      fclose(f);
    size_t bad = 0;
    for (size_t i = 0; i < WORDS; i++)
      bad += buf[i] != pattern(0, i);
    CHECK(got == WORDS && bad == 0, "%s read %zu words of %s, %zu wrong",
          j->names[j->rank], got, path, bad);
  }
  free(buf);
  return 0;
}

/* Exchange 1 MiB between hosts until rank 0 has seen SECONDS pass. */
static void loop(const struct job *j, int seconds, const char *ready) {
  enum { WORDS = 1 << 17 };
  static uint64_t out[WORDS], in[WORDS];
  int to = (j->rank + j->local_size) % j->size;
  int from = (j->rank - j->local_size + j->size) % j->size;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  if (j->rank == 0) {
    FILE *f = fopen(ready, "w");
    CHECK(f != NULL && fclose(f) == 0, "create %s: %s", ready, strerror(errno));
  }
  long iterations = 0;
  for (int done = 0; !done; iterations++) {
    MPI_Sendrecv(out, WORDS, MPI_UINT64_T, to, 8, in, WORDS, MPI_UINT64_T, from,
                 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    done = j->rank == 0 && now() - t0 >= seconds;
    MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  if (j->rank == 0)
    printf("loop: %ld exchanges in %d s, no error\n", iterations, seconds);
}

static int parse(int argc, char **argv, struct opts *o) {
  static const struct option longs[] = {{"hosts", required_argument, NULL, 'h'},
                                        {"ppn", required_argument, NULL, 'p'},
                                        {"mib", required_argument, NULL, 'm'},
                                        {"shm", required_argument, NULL, 's'},
                                        {"dir", required_argument, NULL, 'd'},
                                        {"loop", required_argument, NULL, 'l'},
                                        {"ready", required_argument, NULL, 'r'},
                                        {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
    case 'h': o->hosts = atoi(optarg); break;
    case 'p': o->ppn = atoi(optarg); break;
    case 'm': o->mib = atoi(optarg); break;
    case 's': o->shm_private = strcmp(optarg, "private") == 0; break;
    case 'd': o->dir = optarg; break;
    case 'l': o->loop_s = atoi(optarg); break;
    case 'r': o->ready = optarg; break;
    default: return -1;
    }
  }
  return optind == argc && o->mib > 0 && (o->loop_s == 0 || o->ready) ? 0 : -1;
}

int main(int argc, char **argv) {
  struct opts o = {.mib = 64, .shm_private = 1};
  struct job j = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &j.size);
  ft_set_rank(j.rank);
  if (parse(argc, argv, &o) != 0) {
    if (j.rank == 0)
      fprintf(stderr, "usage: test_hosts [--hosts N] [--ppn P] [--mib M] "
                      "[--shm private|shared]"
                      " [--dir DIR] [--loop SECONDS --ready FILE]\n");
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  if (check_nodes(&j, &o) == 0) {
    check_allreduce(&j);
    check_exchange(&j, o.mib);
    check_window(&j);
    check_devshm(&j, o.shm_private);
    if (o.dir)
      check_files(&j, o.dir);
    if (o.loop_s > 0)
      loop(&j, o.loop_s, o.ready);
  }
  int status = ft_mpi_summary("test_hosts", MPI_COMM_WORLD);
  if (j.node != MPI_COMM_NULL && j.node != 0)
    MPI_Comm_free(&j.node);
  free(j.names);
  MPI_Finalize();
  return status;
}
