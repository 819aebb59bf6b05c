/*
 * test_global.c - the plan of shuffle=global (src/plan/global.c).
 *
 * What users are promised and what is checked here, counting from the
 * tables (served samples, sends, receives), not from the plan's counters:
 *  - every sample exactly once per epoch (tail=partial), or as the tail
 *    rule says (drop_last drops, pad repeats, fewer than ranks x batch);
 *    every rank the same number of batches;
 *  - the exchange adds up: what rank q sends to r at offset o is what r
 *    serves at the position it expects from q at o, and every read sample
 *    is served where its destination says;
 *  - the deal is uniform: over many seeds, a sample's destination rank is
 *    independent of the rank that read it, and its position in the epoch
 *    is uniform -- chi-square statistics against tolerances that a
 *    non-uniform deal fails (checked: exchange near 0, and the chunk
 *    shuffle of plan.c, fail them);
 *  - exchange=Q moves about Q (P-1)/P of a rank's samples, Q near 0 almost
 *    none;
 *  - the same inputs give the same tables.
 */
#include "config.h"
#include "core/options.h"
#include "plan/global.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

/* ---- The keyed permutation ----------------------------------------------- */

static int test_prp(void) {
  for (int64_t n = 1; n <= 300; n++) {
    uint64_t key = ferry__rand_key(7, 99, (uint64_t)n, 0);
    unsigned char *hit = calloc((size_t)n, 1);
    REQUIRE(hit != NULL, "out of memory");
    int ok = 1;
    for (int64_t x = 0; x < n; x++) {
      int64_t y = ferry__prp(key, n, x);
      if (y < 0 || y >= n || hit[y] || ferry__prp_inv(key, n, y) != x)
        ok = 0;
      else
        hit[y] = 1;
    }
    CHECK(ok, "prp is not a bijection of [0, %lld) with its inverse",
          (long long)n);
    free(hit);
  }
  const int64_t big[] = {1000003, (int64_t)1 << 40, INT64_MAX / 3};
  for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
    int ok = 1;
    for (int64_t x = 0; x < 2000; x++) {
      int64_t v = x * 7919 % big[b];
      int64_t y = ferry__prp(11, big[b], v);
      ok &= y >= 0 && y < big[b] && ferry__prp_inv(11, big[b], y) == v;
    }
    CHECK(ok, "prp inverse on n = %lld", (long long)big[b]);
  }
  /* Golden values of an independent Python model of
   * docs/design/global-shuffle.md's description (key = rand_key(2026, 4, 3,
   * 7)): {n, x, prp, prp_inv}.
   * A change here changes every global order: a breaking change. */
  static const int64_t gold[][4] = {
      {2LL, 0LL, 0LL, 0LL},
      {3LL, 2LL, 0LL, 1LL},
      {10LL, 7LL, 8LL, 9LL},
      {1000LL, 999LL, 240LL, 556LL},
      {1000003LL, 12345LL, 232457LL, 609608LL},
      {1099511627776LL, 987654321LL, 56619319984LL, 176375080587LL},
      {4611686018427387909LL, 2305843009213693952LL, 2882116033494126429LL,
       3170166602337796635LL}};
  uint64_t key = ferry__rand_key(2026, 4, 3, 7);
  CHECK(key == 0xab9a54d1fee6490fULL, "rand_key: %llx",
        (unsigned long long)key);
  for (size_t i = 0; i < sizeof gold / sizeof gold[0]; i++) {
    int64_t y = ferry__prp(key, gold[i][0], gold[i][1]);
    int64_t z = ferry__prp_inv(key, gold[i][0], gold[i][1]);
    CHECK(y == gold[i][2] && z == gold[i][3],
          "prp(n=%lld, x=%lld) = %lld, inverse %lld; the model says %lld, %lld",
          (long long)gold[i][0], (long long)gold[i][1], (long long)y,
          (long long)z, (long long)gold[i][2], (long long)gold[i][3]);
  }
  return 0;
}

/* ---- One configuration, every rank and window ---------------------------- */

typedef struct gcase {
  int64_t N, nparts, chunk, B, K, block;
  int P, tail, shuffle;
  double Q;
  uint64_t seed;
  int64_t epoch;
} gcase;

typedef struct gplan {
  ferry__chunk *chunks, *pieces;
  int64_t *perm, npieces;
  ferry__global g;
  ferry__global_window *win; /* [nwindows * P], rank-major inside a window */
} gplan;

static void describe(const gcase *t) {
  fprintf(stderr,
          "  in case N=%lld parts=%lld chunk=%lld B=%lld K=%lld P=%d tail=%d "
          "shuffle=%d Q=%g seed=%llu\n",
          (long long)t->N, (long long)t->nparts, (long long)t->chunk,
          (long long)t->B, (long long)t->K, t->P, t->tail, t->shuffle, t->Q,
          (unsigned long long)t->seed);
}

static void gplan_free(gplan *p) {
  for (int64_t i = 0; p->win && i < p->g.nwindows * p->g.P; i++)
    ferry__global_window_free(&p->win[i]);
  free(p->win);
  free(p->chunks);
  free(p->pieces);
  free(p->perm);
  ferry__global_free(&p->g);
  memset(p, 0, sizeof *p);
}

/* Every rank's table of every window of p->g. */
static int gplan_windows(gplan *p, ferry__err *err) {
  const int P = p->g.P;
  int rc = 0;
  p->win = calloc((size_t)(p->g.nwindows * P + 1), sizeof *p->win);
  if (!p->win)
    rc = FERRY_ENOMEM;
  for (int64_t w = 0; !rc && w < p->g.nwindows; w++)
    for (int r = 0; !rc && r < P; r++)
      rc = ferry__global_window_build(&p->g, r, w, &p->win[w * P + r], err);
  return rc;
}

/* Build the plan of t; returns the plan's status (0, or the refusal). */
static int gplan_make(const gcase *t, gplan *p, ferry__err *err) {
  memset(p, 0, sizeof *p);
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.nparts = t->nparts;
  m.parts = calloc((size_t)t->nparts, sizeof *m.parts);
  if (!m.parts)
    return FERRY_ENOMEM;
  int64_t first = 0;
  for (int64_t q = 0; q < t->nparts; q++) {
    m.parts[q].num_samples = t->N * (q + 1) / t->nparts - t->N * q / t->nparts;
    m.parts[q].first_sample = first;
    first += m.parts[q].num_samples;
  }
  m.num_samples = t->N;
  ferry__plan_params pp = {t->B,    t->seed, t->shuffle, t->block, t->K, 0,
                           t->tail, 0,       1.0,        t->epoch, t->P};
  int64_t nchunks = 0;
  int rc = ferry__chunks_make(&m, t->chunk, &p->chunks, &nchunks);
  free(m.parts);
  if (!rc)
    rc = ferry__plan_pieces(p->chunks, nchunks, &pp, &p->pieces, &p->npieces);
  if (!rc) {
    p->perm = malloc((size_t)(p->npieces ? p->npieces : 1) * sizeof *p->perm);
    if (!p->perm)
      rc = FERRY_ENOMEM;
  }
  if (!rc) {
    ferry__plan_permutation(&pp, p->npieces, p->perm);
    rc = ferry__global_init(&p->g, p->pieces, p->npieces, p->perm, &pp, t->Q,
                            err);
  }
  if (!rc)
    rc = gplan_windows(p, err);
  if (rc && rc != FERRY_EINVAL && rc != FERRY_EEMPTY)
    gplan_free(p);
  return rc;
}

static ferry__global_window *win_of(const gplan *p, int64_t w, int r) {
  return &p->win[w * p->g.P + r];
}

/* The exchange of window w adds up, for every pair of ranks. */
static int check_exchange(const gplan *p, int64_t w) {
  const int P = p->g.P;
  int ok = 1;
  for (int r = 0; r < P && ok; r++) {
    const ferry__global_window *x = win_of(p, w, r);
    int64_t local = 0, nonlocal = 0;
    for (int64_t j = 0; j < x->nserve && ok; j++) {
      if (x->serve_local[j] >= 0) {
        int64_t i = x->serve_local[j];
        ok &= x->read_sample[i] == x->serve_sample[j] && x->dest_rank[i] == r &&
              x->dest_pos[i] == j;
        local++;
        continue;
      }
      nonlocal++;
      int q = x->src_rank[j];
      const ferry__global_window *s = win_of(p, w, q);
      ok &= q >= 0 && q < P && x->src_off[j] < s->sendcounts[r];
      if (!ok)
        break;
      int64_t k = s->sdispls[r] + x->src_off[j];
      ok &= s->send_pos[k] == j &&
            s->read_sample[s->send_item[k]] == x->serve_sample[j];
      ok &= x->serve_padded[j] == (j >= x->nread);
    }
    for (int q = 0; q < P && ok; q++)
      ok &= win_of(p, w, q)->sendcounts[r] == x->recvcounts[q];
    ok &= nonlocal == x->nrecv && local + nonlocal == x->nserve;
    /* every read item lands where its destination says */
    for (int64_t i = 0; i < x->nread && ok; i++) {
      const ferry__global_window *d = win_of(p, w, x->dest_rank[i]);
      ok &= x->dest_pos[i] < d->nread &&
            d->serve_sample[x->dest_pos[i]] == x->read_sample[i];
    }
    /* any rank's reads, as that rank's table has them */
    ferry__extent *ext = NULL;
    int64_t next = 0;
    ferry__err err = {0};
    ok &= ferry__global_reads(&p->g, r, w, &ext, &next, &err) == 0 &&
          next == x->nextents &&
          (next == 0 || !memcmp(ext, x->extents, (size_t)next * sizeof *ext));
    free(ext);
    /* read items follow the extents */
    int64_t i = 0;
    for (int64_t e = 0; e < x->nextents && ok; e++)
      for (int64_t k = 0; k < x->extents[e].count && ok; k++, i++)
        ok &= x->read_sample[i] == x->extents[e].global_first + k;
    ok &= i == x->nread;
  }
  CHECK(ok, "the exchange of window %lld does not add up", (long long)w);
  return ok;
}

/* ferry__global_memory_of bounds every window of every rank. */
static void check_memory(const gplan *p) {
  ferry__global_memory m;
  ferry__global_memory_of(&p->g, 24, &m);
  int ok = 1;
  for (int64_t i = 0; i < p->g.nwindows * p->g.P; i++) {
    const ferry__global_window *x = &p->win[i];
    size_t tables = (size_t)x->nread * 20 + (size_t)x->nsend * 16 +
                    (size_t)x->nserve * 29 + (size_t)p->g.P * 32 +
                    (size_t)x->nextents * sizeof(ferry__extent);
    ok &= x->nread <= m.read_rows && x->nsend <= m.send_rows &&
          x->nrecv <= m.recv_rows && x->nserve <= m.serve_rows &&
          tables <= m.tables;
  }
  ok &= m.total == 2 * m.serve + m.read + m.send + m.recv + 2 * m.tables;
  CHECK(ok,
        "the memory bound (%lld %lld %lld %lld rows, %zu table bytes) "
        "is exceeded",
        (long long)m.read_rows, (long long)m.send_rows, (long long)m.recv_rows,
        (long long)m.serve_rows, m.tables);
}

/* Exactly once / the tail rule, equal batch counts, and the exchange. */
static int check_case(const gcase *t) {
  gplan p;
  ferry__err err = {0};
  int rc = gplan_make(t, &p, &err);
  if (rc == FERRY_EINVAL && t->tail == FERRY__TAIL_DROP) {
    CHECK(t->N / t->P < t->B, "drop_last refused: %s", err.msg);
    gplan_free(&p);
    return 0;
  }
  if (rc) {
    CHECK(rc == 0, "plan failed: %d %s", rc, err.msg);
    describe(t);
    return 1;
  }
  const int P = t->P;
  const int64_t PB = (int64_t)P * t->B, nb = p.g.num_batches;
  int *seen = calloc((size_t)t->N, sizeof *seen);
  int *read = calloc((size_t)t->N, sizeof *read);
  REQUIRE(seen && read, "out of memory");
  int fail = ft_failures;
  int64_t pads = 0, maxserved = 0;
  for (int r = 0; r < P; r++) {
    int64_t served = 0;
    for (int64_t w = 0; w < p.g.nwindows; w++) {
      const ferry__global_window *x = win_of(&p, w, r);
      CHECK(x->serve_first == served, "window %lld starts at %lld, not %lld",
            (long long)w, (long long)x->serve_first, (long long)served);
      for (int64_t i = 0; i < x->nread; i++)
        read[x->read_sample[i]]++;
      for (int64_t j = 0; j < x->nserve; j++) {
        if (x->serve_padded[j])
          pads++;
        else
          seen[x->serve_sample[j]]++;
      }
      served += x->nserve;
    }
    CHECK(served == ferry__global_rank_samples(&p.g, r), "rank %d count", r);
    if (t->tail != FERRY__TAIL_PARTIAL)
      CHECK(served == nb * t->B,
            "rank %d serves %lld, not %lld batches of %lld", r,
            (long long)served, (long long)nb, (long long)t->B);
    else
      CHECK((served + t->B - 1) / t->B <= nb, "rank %d: more batches", r);
    if (served > maxserved)
      maxserved = served;
  }
  CHECK((maxserved + t->B - 1) / t->B == nb, "batch count %lld, longest %lld",
        (long long)nb, (long long)maxserved);
  int64_t once = 0, never = 0, bad = 0;
  for (int64_t s = 0; s < t->N; s++) {
    once += seen[s] == 1;
    never += seen[s] == 0;
    bad += seen[s] > 1 || seen[s] != read[s];
  }
  CHECK(bad == 0, "%lld samples served twice or not as read", (long long)bad);
  if (t->tail == FERRY__TAIL_DROP)
    CHECK(never == p.g.dropped && never < PB, "dropped %lld (plan %lld)",
          (long long)never, (long long)p.g.dropped);
  else
    CHECK(never == 0, "%lld samples never served", (long long)never);
  if (t->tail == FERRY__TAIL_PAD)
    CHECK(pads == p.g.padded && pads < PB, "pads %lld (plan %lld)",
          (long long)pads, (long long)p.g.padded);
  else
    CHECK(pads == 0, "pads %lld without tail=pad", (long long)pads);
  for (int64_t w = 0; w < p.g.nwindows; w++)
    if (!check_exchange(&p, w))
      break;
  check_memory(&p);
  if (ft_failures != fail)
    describe(t);
  free(seen);
  free(read);
  gplan_free(&p);
  return 0;
}

static int test_exactly_once(void) {
  const int64_t Ns[] = {1, 2, 7, 13, 97, 101, 1000, 1009, 4099};
  const int Ps[] = {1, 2, 3, 4, 5, 6, 7, 64};
  const int64_t Bs[] = {1, 3, 8, 32};
  const int64_t Ks[] = {0, 1, 4};
  const int64_t chunks[] = {1, 5, 64};
  const double Qs[] = {1.0, 0.5, 1e-9};
  int64_t ncase = 0;
  for (size_t a = 0; a < sizeof Ns / sizeof Ns[0]; a++)
    for (size_t b = 0; b < sizeof Ps / sizeof Ps[0]; b++)
      for (size_t c = 0; c < sizeof Bs / sizeof Bs[0]; c++)
        for (int tail = 0; tail < 3; tail++) {
          /* the other parameters vary with the case number */
          int64_t k = ncase++;
          gcase t = {Ns[a],
                     1 + k % 3,
                     chunks[k % 3],
                     Bs[c],
                     Ks[(k / 3) % 3],
                     (k % 2) ? 3 : 0,
                     Ps[b],
                     tail,
                     (k % 2) ? FERRY__SHUFFLE_BLOCK : FERRY__SHUFFLE_CHUNKS,
                     Qs[(k / 9) % 3],
                     (uint64_t)(k * 31 + 5),
                     k % 4};
          if (t.nparts > t.N)
            t.nparts = t.N;
          if (t.N * t.P > 300000 && t.chunk == 1)
            t.chunk = 5; /* keep the run short */
          if (check_case(&t))
            return 1;
        }
  printf("exactly once: %lld cases\n", (long long)ncase);
  return 0;
}

/* ---- Uniformity over seeds ----------------------------------------------- */

enum { U_N = 240, U_P = 4, U_SEEDS = 2000, U_BUCKETS = 6 };

/* Per (seed, sample): the rank that read it, the rank serving it, and its
 * serve index in that rank's epoch. */
typedef struct deal_stats {
  int64_t *rank_count;     /* [U_N * U_P] destination rank of each sample  */
  int64_t *pos_count;      /* [U_N * U_BUCKETS] epoch position bucket       */
  int64_t joint[U_P][U_P]; /* read rank x destination rank               */
  int64_t moved, total;
} deal_stats;

static int stats_init(deal_stats *s) {
  memset(s, 0, sizeof *s);
  s->rank_count = calloc((size_t)U_N * U_P, sizeof *s->rank_count);
  s->pos_count = calloc((size_t)U_N * U_BUCKETS, sizeof *s->pos_count);
  return s->rank_count && s->pos_count ? 0 : FERRY_ENOMEM;
}

static void stats_free(deal_stats *s) {
  free(s->rank_count);
  free(s->pos_count);
}

static void stats_add(deal_stats *s, int64_t sample, int rd, int dst,
                      int64_t pos, int64_t rank_total) {
  s->rank_count[sample * U_P + dst]++;
  s->pos_count[sample * U_BUCKETS + pos * U_BUCKETS / rank_total]++;
  s->joint[rd][dst]++;
  s->moved += rd != dst;
  s->total++;
}

/* Chi-square of counts[rows][cols] against a uniform expectation per row;
 * returns (stat - df) / sqrt(2 df): about N(0, 1) for a uniform deal. */
static double chi_z(const int64_t *counts, int64_t rows, int cols) {
  double stat = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t tot = 0;
    for (int c = 0; c < cols; c++)
      tot += counts[i * cols + c];
    double e = (double)tot / cols;
    for (int c = 0; c < cols; c++) {
      double d = (double)counts[i * cols + c] - e;
      stat += d * d / e;
    }
  }
  double df = (double)rows * (cols - 1);
  return (stat - df) / sqrt(2 * df);
}

static int collect_global(double Q, deal_stats *s) {
  for (uint64_t seed = 0; seed < U_SEEDS; seed++) {
    gcase t = {
        U_N, 1,    4, 5, 2, 0, U_P, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS,
        Q,   seed, 1};
    gplan p;
    ferry__err err = {0};
    REQUIRE(gplan_make(&t, &p, &err) == 0, "plan: %s", err.msg);
    for (int64_t w = 0; w < p.g.nwindows; w++)
      for (int r = 0; r < U_P; r++) {
        const ferry__global_window *x = win_of(&p, w, r);
        for (int64_t i = 0; i < x->nread; i++)
          stats_add(s, x->read_sample[i], r, x->dest_rank[i],
                    x->serve_first + x->dest_pos[i],
                    ferry__global_rank_samples(&p.g, x->dest_rank[i]));
      }
    gplan_free(&p);
  }
  return 0;
}

/* The chunk shuffle of plan.c on the same data: reads and serves on the
 * same rank, in chunk order inside a rank (shuffle_buffer 0). */
static int collect_chunks(deal_stats *s) {
  for (uint64_t seed = 0; seed < U_SEEDS; seed++) {
    gcase t = {
        U_N, 1,    4, 5, 0, 0, U_P, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS,
        1.0, seed, 1};
    gplan p;
    ferry__err err = {0};
    REQUIRE(gplan_make(&t, &p, &err) == 0, "plan: %s", err.msg);
    ferry__plan_params pp = {
        5, seed, FERRY__SHUFFLE_CHUNKS, 0, 0, 0, FERRY__TAIL_PARTIAL, 0, 1.0,
        1, U_P};
    ferry__pieces ps;
    ferry__pieces_wrap(&ps, p.pieces, p.npieces);
    for (int r = 0; r < U_P; r++) {
      ferry__rank_plan rp;
      ferry__slot *slots = NULL;
      memset(&rp, 0, sizeof rp);
      REQUIRE(ferry__plan_build(&ps, p.perm, &pp, r, &rp, &err) == 0,
              "plan_build: %s", err.msg);
      REQUIRE(ferry__plan_slots(&rp, &slots) == 0, "out of memory");
      for (int64_t j = 0; j < rp.nslots; j++)
        stats_add(s, slots[j].sample, r, r, j, rp.nslots);
      free(slots);
      ferry__rank_plan_free(&rp);
    }
    gplan_free(&p);
  }
  return 0;
}

static int test_uniform(void) {
  deal_stats g1, geps, ch;
  REQUIRE(!stats_init(&g1) && !stats_init(&geps) && !stats_init(&ch),
          "out of memory");
  if (collect_global(1.0, &g1) || collect_global(1e-9, &geps) ||
      collect_chunks(&ch))
    return 1;
  /* Six standard deviations: a uniform deal fails by chance about once in
   * 10^9 runs; the controls below are tens to thousands of sd away. */
  const double tol = 6.0;
  double z_rank = chi_z(g1.rank_count, U_N, U_P);
  double z_pos = chi_z(g1.pos_count, U_N, U_BUCKETS);
  double z_joint = chi_z(&g1.joint[0][0], 1, U_P * U_P);
  printf("uniform (Q=1): z rank %.2f, z position %.2f, z read x dest %.2f, "
         "moved %.4f\n",
         z_rank, z_pos, z_joint, (double)g1.moved / (double)g1.total);
  CHECK(fabs(z_rank) < tol, "destination rank per sample: z = %.2f", z_rank);
  CHECK(fabs(z_pos) < tol, "epoch position per sample: z = %.2f", z_pos);
  CHECK(fabs(z_joint) < tol, "read rank x destination rank: z = %.2f", z_joint);
  /* The controls: without exchange the destination is the reading rank;
   * the chunk shuffle also keeps a sample's offset in its chunk. */
  double e_joint = chi_z(&geps.joint[0][0], 1, U_P * U_P);
  double c_joint = chi_z(&ch.joint[0][0], 1, U_P * U_P);
  double c_pos = chi_z(ch.pos_count, U_N, U_BUCKETS);
  printf("controls: Q=1e-9 z read x dest %.1f; chunks z read x dest %.1f, "
         "z position %.1f\n",
         e_joint, c_joint, c_pos);
  CHECK(e_joint > tol, "Q=1e-9 passes the independence test: z = %.2f",
        e_joint);
  CHECK(c_joint > tol && c_pos > tol,
        "the chunk shuffle passes the uniformity tests: z = %.2f, %.2f",
        c_joint, c_pos);
  stats_free(&g1);
  stats_free(&geps);
  stats_free(&ch);
  return 0;
}

/* ---- exchange=Q ---------------------------------------------------------- */

static int moved_fraction(double Q, int P, double *frac, int64_t *sent_bound) {
  int64_t moved = 0, total = 0;
  *sent_bound = 0;
  for (uint64_t seed = 0; seed < 50; seed++) {
    gcase t = {
        5000, 2,    16, 8, 4, 0, P, FERRY__TAIL_PARTIAL, FERRY__SHUFFLE_CHUNKS,
        Q,    seed, 0};
    gplan p;
    ferry__err err = {0};
    REQUIRE(gplan_make(&t, &p, &err) == 0, "plan: %s", err.msg);
    for (int64_t w = 0; w < p.g.nwindows; w++)
      for (int r = 0; r < P; r++) {
        const ferry__global_window *x = win_of(&p, w, r);
        ferry__global_counts c;
        ferry__global_counts_of(&p.g, w, r, &c);
        *sent_bound += c.sent;
        int64_t local = 0;
        for (int64_t i = 0; i < x->nread; i++) {
          moved += x->dest_rank[i] != r;
          local += x->serve_local[i] >= 0;
        }
        CHECK(local == c.read - c.sent, "kept %lld, not %lld", (long long)local,
              (long long)(c.read - c.sent));
        total += x->nread;
      }
    gplan_free(&p);
  }
  *frac = (double)moved / (double)total;
  CHECK(moved <= *sent_bound, "%lld samples moved, only %lld sent",
        (long long)moved, (long long)*sent_bound);
  return 0;
}

static int test_exchange_q(void) {
  const int Ps[] = {2, 4, 7};
  for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++) {
    int P = Ps[i];
    double f1, fh, fe;
    int64_t s1, sh, se;
    if (moved_fraction(1.0, P, &f1, &s1) || moved_fraction(0.5, P, &fh, &sh) ||
        moved_fraction(1e-9, P, &fe, &se))
      return 1;
    double want = (double)(P - 1) / P;
    /* 250,000 samples per run: binomial sd below 0.001 */
    printf("exchange, %d ranks: moved Q=1 %.4f (want %.4f), Q=0.5 %.4f, "
           "Q=1e-9 %.5f\n",
           P, f1, want, fh, fe);
    CHECK(fabs(f1 - want) < 0.01, "Q=1 moves %.4f, not about %.4f", f1, want);
    CHECK(fabs(fh - want / 2) < 0.01, "Q=0.5 moves %.4f, not about %.4f", fh,
          want / 2);
    CHECK(fe < 0.02, "Q=1e-9 moves %.4f (%lld sent)", fe, (long long)se);
  }
  return 0;
}

/* ---- Elastic resume --------------------------------------------------------
 *
 * An epoch served over Ps[0] ranks up to cut[0] batches, then resumed over
 * Ps[1] ranks up to cut[1] batches of that plan, and so on; the last plan
 * is served to its end.  Over all of it every sample at most once, never
 * served exactly the dropped ones (none with tail=partial), equal batch
 * counts in every plan, the exchange of every window of every plan adds
 * up. */

enum { MAX_LEVELS = 4 };

static int resume_case(const gcase *t, const int *Ps, const int *quarter,
                       int nlev) {
  gplan lv[MAX_LEVELS];
  memset(lv, 0, sizeof lv);
  ferry__err err = {0};
  gcase t0 = *t;
  t0.P = Ps[0];
  int rc = gplan_make(&t0, &lv[0], &err);
  if (rc == FERRY_EINVAL && t->tail == FERRY__TAIL_DROP) {
    gplan_free(&lv[0]);
    return 0; /* batch larger than a share: test_exactly_once covers it */
  }
  REQUIRE(rc == 0, "plan: %s", err.msg);
  int64_t cut[MAX_LEVELS];
  int *seen = calloc((size_t)t->N, sizeof *seen);
  REQUIRE(seen != NULL, "out of memory");
  int fail = ft_failures;
  int64_t pads = 0, padded = 0;
  for (int L = 0; L < nlev; L++) {
    if (L > 0) {
      rc =
          ferry__global_resume(&lv[L].g, &lv[L - 1].g, cut[L - 1], Ps[L], &err);
      if (!rc)
        rc = gplan_windows(&lv[L], &err);
      REQUIRE(rc == 0, "resume level %d: %s", L, err.msg);
    }
    const ferry__global *g = &lv[L].g;
    cut[L] = L + 1 < nlev ? g->num_batches * quarter[L] / 4 : g->num_batches;
    padded += g->padded;
    for (int64_t w = 0; w < g->nwindows; w++)
      if (!check_exchange(&lv[L], w))
        break;
    check_memory(&lv[L]);
    for (int r = 0; r < g->P; r++) {
      int64_t n = ferry__global_rank_samples(g, r);
      if (t->tail != FERRY__TAIL_PARTIAL)
        CHECK(n == g->num_batches * t->B, "level %d rank %d: %lld samples", L,
              r, (long long)n);
      else
        CHECK((n + t->B - 1) / t->B <= g->num_batches, "level %d rank %d", L,
              r);
      for (int64_t w = 0; w < g->nwindows; w++) {
        const ferry__global_window *x = win_of(&lv[L], w, r);
        for (int64_t j = 0; j < x->nserve; j++) {
          if (x->serve_first + j >= cut[L] * t->B)
            break;
          if (x->serve_padded[j])
            pads++;
          else
            seen[x->serve_sample[j]]++;
        }
      }
    }
  }
  int64_t never = 0, twice = 0;
  for (int64_t s = 0; s < t->N; s++) {
    never += seen[s] == 0;
    twice += seen[s] > 1;
  }
  const ferry__global *last = &lv[nlev - 1].g;
  CHECK(twice == 0, "%lld samples served twice", (long long)twice);
  CHECK(never == last->dropped, "%lld samples never served, %lld dropped",
        (long long)never, (long long)last->dropped);
  if (t->tail == FERRY__TAIL_PARTIAL)
    CHECK(never == 0, "tail=partial left %lld samples", (long long)never);
  CHECK(pads <= padded, "%lld pads served, plans pad %lld", (long long)pads,
        (long long)padded);
  if (ft_failures != fail) {
    describe(t);
    for (int L = 0; L < nlev; L++)
      fprintf(stderr, "  level %d: %d ranks, cut %lld of %lld batches\n", L,
              Ps[L], (long long)cut[L], (long long)lv[L].g.num_batches);
  }
  for (int L = nlev - 1; L >= 0; L--)
    gplan_free(&lv[L]);
  free(seen);
  return 0;
}

static int test_resume(void) {
  static const int chains[][MAX_LEVELS] = {
      {3, 2}, {3, 4}, {1, 7}, {7, 3, 5}, {4, 2, 4, 3}, {2, 3}, {64, 5}};
  static const int nlevs[] = {2, 2, 2, 3, 4, 2, 2};
  const int64_t Ns[] = {13, 97, 1009, 4099};
  const double Qs[] = {1.0, 0.5};
  int64_t ncase = 0;
  for (size_t c = 0; c < sizeof nlevs / sizeof nlevs[0]; c++)
    for (size_t a = 0; a < sizeof Ns / sizeof Ns[0]; a++)
      for (int tail = 0; tail < 3; tail++)
        for (size_t q = 0; q < 2; q++) {
          int64_t k = ncase++;
          gcase t = {Ns[a],        1 + k % 2,   5 + 2 * (k % 3),
                     1 + k % 4,    k % 3,       0,
                     chains[c][0], tail,        FERRY__SHUFFLE_CHUNKS,
                     Qs[q],        (uint64_t)k, 1};
          int quarter[MAX_LEVELS] = {(int)(k % 5), (int)((k + 2) % 5),
                                     (int)((k + 1) % 5), 2};
          if (resume_case(&t, chains[c], quarter, nlevs[c]))
            return 1;
        }
  printf("resume: %lld cases\n", (long long)ncase);
  return 0;
}

/* ---- Determinism --------------------------------------------------------- */

static uint64_t plan_hash(const gcase *t) {
  gplan p;
  ferry__err err = {0};
  if (gplan_make(t, &p, &err))
    return 0;
  uint64_t h = ferry__global_checksum(&p.g);
  for (int64_t i = 0; i < p.g.nwindows * p.g.P; i++) {
    uint64_t x = ferry__global_window_checksum(&p.win[i]);
    h = ferry__fnv1a(h, &x, sizeof x);
  }
  gplan_free(&p);
  return h;
}

static int test_determinism(void) {
  gcase t = {1009, 3,  7, 4, 3, 0, 5, FERRY__TAIL_PAD, FERRY__SHUFFLE_CHUNKS,
             0.7,  42, 2};
  uint64_t a = plan_hash(&t), b = plan_hash(&t);
  CHECK(a != 0 && a == b, "the same inputs give different plans");
  gcase u = t;
  u.seed = 43;
  CHECK(plan_hash(&u) != a, "another seed gives the same plan");
  u = t;
  u.epoch = 3;
  CHECK(plan_hash(&u) != a, "another epoch gives the same plan");
  u = t;
  u.Q = 0.6;
  CHECK(plan_hash(&u) != a, "another exchange gives the same plan");
  /* A window's table does not depend on which windows were built before. */
  gplan p;
  ferry__err err = {0};
  REQUIRE(gplan_make(&t, &p, &err) == 0, "plan: %s", err.msg);
  ferry__global_window x;
  memset(&x, 0, sizeof x);
  int64_t w = p.g.nwindows - 1;
  REQUIRE(ferry__global_window_build(&p.g, 2, w, &x, &err) == 0, "%s", err.msg);
  CHECK(ferry__global_window_checksum(&x) ==
            ferry__global_window_checksum(win_of(&p, w, 2)),
        "window rebuilt alone differs");
  /* Nor on the memory an earlier table leaves (reused, larger or smaller),
   * in any order of windows. */
  int same = 1;
  for (int64_t k = 0; k < 2 * p.g.nwindows; k++) {
    int64_t v = k < p.g.nwindows ? k : 2 * p.g.nwindows - 1 - k;
    REQUIRE(ferry__global_window_build(&p.g, 3, v, &x, &err) == 0, "%s",
            err.msg);
    same &= ferry__global_window_checksum(&x) ==
            ferry__global_window_checksum(win_of(&p, v, 3));
  }
  CHECK(same, "a table built on an earlier one's memory differs");
  ferry__global_window_free(&x);
  gplan_free(&p);
  return 0;
}

int main(void) {
  test_prp();
  test_exactly_once();
  test_uniform();
  test_exchange_q();
  test_resume();
  test_determinism();
  return ft_summary("test_global");
}
