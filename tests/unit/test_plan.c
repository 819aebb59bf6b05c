/*
 * test_plan.c - the epoch plan as pure functions, without MPI or files.
 *
 * 1. Golden values pin the generator and the permutation: they were computed
 *    by an independent Python implementation of the documented algorithm
 *    (docs/design/plan.md), so a change of compiler, platform or code that
 *    alters the order fails here.
 * 2. For many (parts, N, world size, batch size, tail, partition, shuffle,
 *    shuffle_buffer, subset) combinations, including N prime and N smaller
 *    than world size x batch size, every rank's plan is built and checked:
 *    equal batch counts, exactly-once (partial), at-most-once with the
 *    documented count (drop_last), full coverage plus marked repeats (pad),
 *    every slot inside its extent and its extent loaded before its batch,
 *    determinism, and different epochs giving different orders.
 * 3. Resume (ferry__plan_resume): for (N, tail, partition, shuffle, B, the
 *    world sizes of the save and of one or two resumes, 4 -> 3, 4 -> 5, 1 ->
 *    7, 2 -> 19 ranks (more ranks than samples left), the batches served at
 * each step: none, one, half, all but one, all), the samples served before a
 * save and after it are the epoch exactly once (drop_last: at most once, the
 * rest counted as dropped); the same world size continues every rank's own plan
 * slot for slot; batch counts are equal and every slot lies in an extent loaded
 *    before its batch.
 */
#include "config.h"
#include "core/options.h"
#include "plan/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ferry_test.h"

/* Every check here is a REQUIRE: a failed one ends its test function (the
 * later checks of a broken plan would only repeat the same failure). */

static int test_golden(void) {
  uint64_t k = ferry__rand_key(42, FERRY__STREAM_CHUNKS, 0, 0);
  REQUIRE(k == 0xd2a199274f67c14bULL, "key %" PRIx64, k);
  REQUIRE(ferry__rand64(k, 0) == 0x242e3c57b9603011ULL, "rand64 0");
  REQUIRE(ferry__rand64(k, 1) == 0x95ed7b8afb2bdcf2ULL, "rand64 1");
  REQUIRE(ferry__rand64(k, 2) == 0x14c401ed04a2e774ULL, "rand64 2");
  static const int64_t e0[10] = {7, 8, 1, 6, 2, 0, 3, 4, 9, 5};
  static const int64_t e1[10] = {1, 0, 9, 2, 4, 6, 7, 3, 5, 8};
  static const int64_t s7[20] = {5, 0, 11, 15, 13, 2,  10, 4, 12, 19,
                                 7, 9, 3,  14, 16, 18, 1,  8, 6,  17};
  int64_t perm[20];
  ferry__plan_params pp = {.seed = 42, .shuffle = FERRY__SHUFFLE_CHUNKS};
  ferry__plan_permutation(&pp, 10, perm);
  REQUIRE(memcmp(perm, e0, sizeof e0) == 0, "seed 42 epoch 0");
  pp.epoch = 1;
  ferry__plan_permutation(&pp, 10, perm);
  REQUIRE(memcmp(perm, e1, sizeof e1) == 0, "seed 42 epoch 1");
  pp.seed = 7;
  pp.epoch = 3;
  ferry__plan_permutation(&pp, 20, perm);
  REQUIRE(memcmp(perm, s7, sizeof s7) == 0, "seed 7 epoch 3");
  pp.shuffle = FERRY__SHUFFLE_NONE;
  ferry__plan_permutation(&pp, 20, perm);
  for (int i = 0; i < 20; i++)
    REQUIRE(perm[i] == i, "shuffle=none is the identity");
  return 0;
}

/* A manifest of nparts parts with the given sample counts (no files). */
static void fake_manifest(ferry__manifest *m, int64_t nparts,
                          const int64_t *counts) {
  memset(m, 0, sizeof *m);
  m->nparts = nparts;
  m->parts = calloc((size_t)nparts, sizeof *m->parts);
  int64_t g = 0;
  for (int64_t p = 0; p < nparts; p++) {
    m->parts[p].num_samples = counts[p];
    m->parts[p].first_sample = g;
    g += counts[p];
  }
  m->num_samples = g;
}

typedef struct combo {
  int64_t nparts, per_part, chunk, B;
  int P, tail, partition, shuffle;
  int64_t K, block, max_chunks;
  double fraction;
} combo;

static int check_combo(const combo *c, int64_t epoch, uint64_t *sum_out) {
  int64_t counts[16];
  for (int64_t p = 0; p < c->nparts; p++)
    counts[p] = c->per_part + p % 3; /* unequal parts */
  ferry__manifest m;
  fake_manifest(&m, c->nparts, counts);
  ferry__chunk *chunks, *pieces;
  int64_t nchunks, npieces;
  ferry__plan_params pp = {c->B,        1234,         c->shuffle, c->block,
                           c->K,        c->partition, c->tail,    c->max_chunks,
                           c->fraction, epoch,        c->P};
  REQUIRE(ferry__chunks_make(&m, c->chunk, &chunks, &nchunks) == 0, "chunks");
  REQUIRE(ferry__plan_pieces(chunks, nchunks, &pp, &pieces, &npieces) == 0,
          "pieces");
  int64_t M = 0;
  for (int64_t i = 0; i < npieces; i++)
    M += pieces[i].count;
  int64_t *perm = malloc((size_t)npieces * sizeof *perm);
  ferry__plan_permutation(&pp, npieces, perm);
  int64_t N = m.num_samples;
  int *seen = calloc((size_t)N, sizeof *seen);
  int *seen_pad = calloc((size_t)N, sizeof *seen_pad);
  uint8_t *in_epoch = calloc((size_t)N, 1);
  for (int64_t i = 0; i < npieces; i++)
    for (int64_t j = 0; j < pieces[i].count; j++)
      in_epoch[pieces[i].global_first + j] = 1;
  int64_t nb = -1, served = 0, padded = 0, dropped = -1;
  uint64_t sum = FERRY__FNV_INIT;
  int rc_all = 0;
  for (int r = 0; r < c->P; r++) {
    ferry__rank_plan p = {0}, p2 = {0};
    ferry__err err = {0};
    ferry__pieces ps;
    ferry__pieces_wrap(&ps, pieces, npieces);
    int rc = ferry__plan_build(&ps, perm, &pp, r, &p, &err);
    if (c->tail == FERRY__TAIL_DROP && rc == FERRY_EINVAL) {
      /* only legal when some rank's share is below one batch */
      REQUIRE(M / c->P < c->B + c->nparts * 3 + c->chunk + c->block,
              "unexpected EINVAL: %s", err.msg);
      REQUIRE(strstr(err.msg, "batch_size") != NULL,
              "message names the option");
      rc_all = 1;
      break;
    }
    REQUIRE(rc == 0, "plan_build rank %d: %s", r, err.msg);
    REQUIRE(ferry__plan_build(&ps, perm, &pp, r, &p2, &err) == 0, "rebuild");
    uint64_t h1 = 0, h2 = 1;
    REQUIRE(ferry__rank_plan_checksum(&p, &h1) == 0 &&
                ferry__rank_plan_checksum(&p2, &h2) == 0 && h1 == h2,
            "same inputs, same plan");
    ferry__rank_plan_free(&p2);
    /* the served order, materialised here only (the loader makes one
     * window's at a time) */
    ferry__slot *slots = NULL;
    REQUIRE(ferry__plan_slots(&p, &slots) == 0, "slots");
    if (nb < 0)
      nb = p.num_batches;
    REQUIRE(p.num_batches == nb, "rank %d has %lld batches, rank 0 %lld", r,
            (long long)p.num_batches, (long long)nb);
    if (dropped < 0)
      dropped = p.dropped;
    REQUIRE(p.dropped == dropped, "dropped agrees");
    REQUIRE(p.epoch_samples == M, "epoch_samples");
    REQUIRE(ferry__plan_batch_start(&p, 0) == 0 &&
                ferry__plan_batch_start(&p, nb) == p.nslots,
            "batch bounds");
    for (int64_t b = 0; b < nb; b++) {
      int64_t sz =
          ferry__plan_batch_start(&p, b + 1) - ferry__plan_batch_start(&p, b);
      if (c->tail == FERRY__TAIL_PARTIAL)
        REQUIRE(sz >= 0 && sz <= c->B, "partial batch size %lld",
                (long long)sz);
      else
        REQUIRE(sz == c->B, "batch %lld has %lld samples", (long long)b,
                (long long)sz);
      for (int64_t i = ferry__plan_batch_start(&p, b);
           i < ferry__plan_batch_start(&p, b + 1); i++)
        REQUIRE(slots[i].extent < ferry__plan_batch_need(&p, b),
                "batch needs its extent");
    }
    for (int64_t i = 0; i < p.nslots; i++) {
      const ferry__slot *s = &slots[i];
      REQUIRE(s->sample >= 0 && s->sample < N, "sample in range");
      REQUIRE(in_epoch[s->sample], "sample %lld not in the epoch subset",
              (long long)s->sample);
      const ferry__extent *x = &p.extents[s->extent];
      REQUIRE(s->row >= 0 && s->row < x->count, "row inside extent");
      REQUIRE(x->global_first + s->row == s->sample,
              "slot maps to its sample (%lld + %lld != %lld)",
              (long long)x->global_first, (long long)s->row,
              (long long)s->sample);
      REQUIRE(m.parts[x->part].first_sample + x->row == x->global_first,
              "extent global index");
      REQUIRE(x->row + x->count <= m.parts[x->part].num_samples,
              "extent within its part");
      /* the window of a slot is loaded no later than its batch */
      int64_t b = i / c->B;
      REQUIRE(p.window_need[x->window] <= b, "window needed before use");
      if (s->padded) {
        seen_pad[s->sample]++;
        padded++;
      } else
        seen[s->sample]++;
      sum = ferry__fnv1a(sum, &s->sample, sizeof s->sample);
    }
    REQUIRE(
        p.padded ==
            (c->tail == FERRY__TAIL_PAD ? p.nslots - (p.nslots - p.padded) : 0),
        "padded count");
    served += p.nslots;
    free(slots);
    ferry__rank_plan_free(&p);
  }
  if (!rc_all) {
    for (int64_t g = 0; g < N; g++) {
      if (!in_epoch[g])
        REQUIRE(seen[g] == 0 && seen_pad[g] == 0, "outside subset served");
      else if (c->tail == FERRY__TAIL_DROP)
        REQUIRE(seen[g] <= 1, "sample %lld served %d times", (long long)g,
                seen[g]);
      else
        REQUIRE(seen[g] == 1, "sample %lld served %d times (tail %d)",
                (long long)g, seen[g], c->tail);
    }
    if (c->tail == FERRY__TAIL_DROP) {
      REQUIRE(served == M - dropped && served == nb * c->B * c->P,
              "drop_last count");
      REQUIRE(padded == 0, "no pads");
    } else if (c->tail == FERRY__TAIL_PAD) {
      REQUIRE(served == nb * c->B * c->P, "pad count");
      REQUIRE(padded == served - M, "pads are the difference");
      for (int64_t g = 0; padded <= M && g < N; g++)
        REQUIRE(seen_pad[g] <= 1, "pad sample %lld repeated %d times",
                (long long)g, seen_pad[g]);
      REQUIRE(nb == ((M + c->P - 1) / c->P + c->B - 1) / c->B ||
                  c->partition == FERRY__PART_STRIDED,
              "pad batches");
    } else {
      REQUIRE(served == M && padded == 0, "partial serves exactly M");
    }
  }
  *sum_out = sum;
  free(seen);
  free(seen_pad);
  free(in_epoch);
  free(perm);
  free(pieces);
  free(chunks);
  ferry__manifest_free(&m);
  return 0;
}

static int test_combos(void) {
  static const int64_t Ns[][2] = {{1, 97},   {1, 1},  {1, 5}, {3, 41},
                                  {1, 1000}, {5, 13}, {2, 64}};
  static const int Ps[] = {1, 2, 3, 4, 7};
  static const int64_t Bs[] = {1, 3, 8, 32};
  static const int64_t chunks[] = {1, 7, 64};
  int ncombos = 0;
  for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
    for (size_t pi = 0; pi < sizeof Ps / sizeof Ps[0]; pi++)
      for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++)
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++)
          for (int tail = 0; tail < 3; tail++)
            for (int part = 0; part < 2; part++)
              for (int sh = 0; sh < 3; sh++)
                for (int sub = 0; sub < 2; sub++) {
                  combo c = {Ns[ni][0],
                             Ns[ni][1],
                             chunks[ci],
                             Bs[bi],
                             Ps[pi],
                             tail,
                             part,
                             sh,
                             (int64_t)(sh ? 1 + (int)(ci + bi) % 3 : 0),
                             5,
                             sub ? 3 : 0,
                             sub ? 0.5 : 1.0};
                  uint64_t s0, s1, s2;
                  if (check_combo(&c, 0, &s0) || check_combo(&c, 0, &s1) ||
                      check_combo(&c, 1, &s2)) {
                    fprintf(stderr,
                            "  in combo parts=%lld per_part=%lld chunk=%lld "
                            "B=%lld P=%d tail=%d partition=%d shuffle=%d "
                            "subset=%d\n",
                            (long long)c.nparts, (long long)c.per_part,
                            (long long)c.chunk, (long long)c.B, c.P, tail, part,
                            sh, sub);
                    return 1;
                  }
                  REQUIRE(s0 == s1, "same epoch, same order");
                  ncombos++;
                }
  printf("checked %d combinations\n", ncombos);
  return 0;
}

/* A large shuffled epoch must differ between epochs and seeds. */
static int test_epochs_differ(void) {
  combo c = {1,
             1000,
             10,
             8,
             2,
             FERRY__TAIL_PARTIAL,
             FERRY__PART_CONTIGUOUS,
             FERRY__SHUFFLE_CHUNKS,
             2,
             5,
             0,
             1.0};
  uint64_t a, b;
  if (check_combo(&c, 0, &a) || check_combo(&c, 1, &b))
    return 1;
  REQUIRE(a != b, "epochs 0 and 1 give the same order");
  c.shuffle = FERRY__SHUFFLE_NONE;
  if (check_combo(&c, 0, &a) || check_combo(&c, 1, &b))
    return 1;
  REQUIRE(a == b, "shuffle=none must not depend on the epoch");
  return 0;
}

/* The subset is drawn from the seed alone: identical in every epoch. */
static int test_subset_stable(void) {
  int64_t counts[1] = {100};
  ferry__manifest m;
  fake_manifest(&m, 1, counts);
  ferry__chunk *chunks, *p0, *p1;
  int64_t nc, n0, n1;
  ferry__plan_params pp = {.batch_size = 4,
                           .seed = 9,
                           .shuffle = 1,
                           .max_chunks = 4,
                           .fraction = 1.0,
                           .world_size = 1};
  REQUIRE(ferry__chunks_make(&m, 10, &chunks, &nc) == 0 && nc == 10, "chunks");
  REQUIRE(ferry__plan_pieces(chunks, nc, &pp, &p0, &n0) == 0 && n0 == 4, "4");
  pp.epoch = 5;
  REQUIRE(ferry__plan_pieces(chunks, nc, &pp, &p1, &n1) == 0 && n1 == 4, "4");
  REQUIRE(memcmp(p0, p1, (size_t)n0 * sizeof *p0) == 0, "subset stable");
  for (int64_t i = 1; i < n0; i++)
    REQUIRE(p0[i - 1].global_first < p0[i].global_first, "sorted");
  pp.fraction = 0.25;
  pp.max_chunks = 0;
  free(p1);
  REQUIRE(ferry__plan_pieces(chunks, nc, &pp, &p1, &n1) == 0 && n1 == 3,
          "ceil(0.25 * 10) = 3, got %lld", (long long)n1);
  free(p0);
  free(p1);
  free(chunks);
  ferry__manifest_free(&m);
  return 0;
}

/* drop_last with batch_size above a rank's share is a named error. */
static int test_drop_last_too_big(void) {
  int64_t counts[1] = {10};
  ferry__manifest m;
  fake_manifest(&m, 1, counts);
  ferry__chunk *chunks;
  int64_t nc;
  REQUIRE(ferry__chunks_make(&m, 2, &chunks, &nc) == 0, "chunks");
  int64_t perm[5] = {0, 1, 2, 3, 4};
  ferry__plan_params pp = {.batch_size = 6,
                           .tail = FERRY__TAIL_DROP,
                           .fraction = 1.0,
                           .world_size = 2};
  ferry__rank_plan p = {0};
  ferry__err err = {0};
  ferry__pieces ps;
  ferry__pieces_wrap(&ps, chunks, nc);
  int rc = ferry__plan_build(&ps, perm, &pp, 0, &p, &err);
  REQUIRE(rc == FERRY_EINVAL, "rc %d", rc);
  REQUIRE(strstr(err.msg, "'batch_size'") && strstr(err.msg, "drop_last"),
          "message: %s", err.msg);
  pp.batch_size = 0;
  rc = ferry__plan_build(&ps, perm, &pp, 0, &p, &err);
  REQUIRE(rc == FERRY_EINVAL, "batch_size 0 rc %d", rc);
  free(chunks);
  ferry__manifest_free(&m);
  return 0;
}

/* chunk_samples=0: about 1 MiB, a multiple of every variable's storage
 * chunk rows (their lcm, or the largest when the lcm is too big). */
static int test_auto_chunk(void) {
  ferry__var vars[3];
  memset(vars, 0, sizeof vars);
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.vars = vars;
  m.nvars = 1;
  /* no storage chunks: 1 MiB of rows */
  REQUIRE(ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0) == 1024,
          "plain 1 KiB rows");
  REQUIRE(ferry__auto_chunk_samples(&m, 3 << 20, NULL, NULL, 0) == 1,
          "rows above 1 MiB");
  REQUIRE(ferry__auto_chunk_samples(&m, 0, NULL, NULL, 0) == 1 << 20,
          "empty rows");
  /* one chunked variable: nearest multiple, at least one chunk */
  vars[0].chunk_rows = 1000;
  REQUIRE(ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0) == 1000,
          "1024 -> 1000");
  vars[0].chunk_rows = 700;
  REQUIRE(ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0) == 700,
          "1024 -> 700 (nearest)");
  vars[0].chunk_rows = 600;
  REQUIRE(ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0) == 1200,
          "1024 -> 1200 (nearest)");
  vars[0].chunk_rows = 100000;
  REQUIRE(ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0) == 100000,
          "one big chunk");
  vars[0].chunk_rows = 7;
  int64_t c = ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0);
  REQUIRE(c % 7 == 0 && c >= 1017 && c <= 1031, "multiple of 7 near 1024: %lld",
          (long long)c);
  /* two variables: the lcm */
  m.nvars = 3;
  vars[0].chunk_rows = 6;
  vars[1].chunk_rows = 0; /* contiguous: no constraint */
  vars[2].chunk_rows = 10;
  c = ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0);
  REQUIRE(c % 30 == 0 && c >= 1000 && c <= 1050, "lcm 30: %lld", (long long)c);
  /* lcm above 64 x the largest: the largest alone */
  vars[0].chunk_rows = 1009;
  vars[2].chunk_rows = 1013;
  c = ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0);
  REQUIRE(c == 1013, "coprime big chunks -> largest: %lld", (long long)c);
  /* overflow of the lcm is caught */
  vars[0].chunk_rows = INT64_MAX / 2 - 1;
  vars[2].chunk_rows = INT64_MAX / 3;
  c = ferry__auto_chunk_samples(&m, 1024, NULL, NULL, 0);
  REQUIRE(c == INT64_MAX / 2 - 1, "huge chunks: %lld", (long long)c);
  return 0;
}

/* chunk_samples=0 with a shuffle: at least max(64, 8 x ranks x
 * shuffle_buffer) chunks when the dataset has that many storage chunks'
 * worth of rows, whole storage chunks, never below one row. */
static int test_auto_chunk_count(void) {
  ferry__var vars[1];
  memset(vars, 0, sizeof vars);
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.vars = vars;
  m.nvars = 1;
  ferry__plan_params pp = {
      .shuffle = FERRY__SHUFFLE_CHUNKS, .shuffle_buffer = 4, .world_size = 3};
  char why[256];
  /* the case: 50,021 rows of 40 bytes, 3 ranks: 2 chunks before */
  m.num_samples = 50021;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, NULL, NULL, 0) == 26214,
          "old rule: 1 MiB of rows");
  int64_t c = ferry__auto_chunk_samples(&m, 40, &pp, why, sizeof why);
  REQUIRE(c == 50021 / 96, "3 ranks x 4: 96 chunks: %lld", (long long)c);
  REQUIRE(strstr(why, "96 chunks") != NULL, "why: %s", why);
  /* the rule depends on every input the same way on every rank */
  pp.world_size = 1;
  pp.shuffle_buffer = 1;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 50021 / 64,
          "at least 64 chunks");
  pp.shuffle_buffer = 16;
  pp.world_size = 4;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 50021 / 512,
          "8 x 4 x 16 = 512 chunks");
  /* shuffle=none: reads only, the old rule */
  pp.shuffle = FERRY__SHUFFLE_NONE;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, why, sizeof why) == 26214,
          "shuffle=none keeps 1 MiB");
  REQUIRE(strstr(why, "KiB") != NULL, "why: %s", why);
  pp.shuffle = FERRY__SHUFFLE_BLOCK;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 50021 / 512,
          "shuffle=block cuts as chunks");
  /* a large dataset keeps its 1 MiB chunks */
  m.num_samples = 100000000;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 26214,
          "large dataset: 1 MiB");
  /* storage chunks: whole ones; one each when there are too few */
  vars[0].chunk_rows = 100;
  m.num_samples = 50021;
  pp.world_size = 1;
  pp.shuffle_buffer = 4; /* 64 chunks: 781 rows -> 700 */
  c = ferry__auto_chunk_samples(&m, 40, &pp, why, sizeof why);
  REQUIRE(c == 700, "whole storage chunks: %lld", (long long)c);
  REQUIRE(strstr(why, "storage") != NULL, "why: %s", why);
  vars[0].chunk_rows = 1000; /* 51 storage chunks < 64: one each */
  c = ferry__auto_chunk_samples(&m, 40, &pp, why, sizeof why);
  REQUIRE(c == 1000, "one storage chunk each: %lld", (long long)c);
  /* tiny dataset: one row each, never below */
  vars[0].chunk_rows = 0;
  m.num_samples = 10;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 1, "1 row");
  /* no overflow with huge options */
  pp.shuffle_buffer = INT64_MAX / 2;
  pp.world_size = 1 << 30;
  m.num_samples = 50021;
  REQUIRE(ferry__auto_chunk_samples(&m, 40, &pp, NULL, 0) == 1,
          "huge window: 1 row");
  return 0;
}

/* ---- Resume: exactly once over the interrupted and the resumed parts ----- */

/* Every rank's plan for the part of the epoch after steps[0..nsteps) over P
 * ranks (nsteps 0: the original plan). */
static int level_plans(const ferry__pieces *ps, const int64_t *perm,
                       const ferry__plan_params *pp0,
                       const ferry__resume_step *steps, int nsteps, int P,
                       ferry__rank_plan *plans) {
  ferry__plan_params pp = *pp0;
  pp.world_size = P;
  for (int r = 0; r < P; r++) {
    ferry__err err = {0};
    memset(&plans[r], 0, sizeof plans[r]);
    int rc = nsteps ? ferry__plan_resume(ps, perm, &pp, steps, nsteps, r,
                                         &plans[r], NULL, &err)
                    : ferry__plan_build(ps, perm, &pp, r, &plans[r], &err);
    REQUIRE(rc == 0, "level plan rank %d of %d: %s", r, P, err.msg);
  }
  /* the reads-only variant (collective I/O) agrees with each rank's plan */
  if (nsteps) {
    ferry__rank_plan *all = calloc((size_t)P, sizeof *all);
    ferry__err err = {0};
    REQUIRE(ferry__plan_resume(ps, perm, &pp, steps, nsteps, 0, NULL, all,
                               &err) == 0,
            "reads of every rank: %s", err.msg);
    for (int r = 0; r < P; r++) {
      REQUIRE(all[r].nextents == plans[r].nextents &&
                  all[r].nwindows == plans[r].nwindows &&
                  all[r].num_batches == plans[r].num_batches,
              "reads of rank %d differ from its plan", r);
      ferry__rank_plan_free(&all[r]);
    }
    free(all);
  }
  return 0;
}

/* Checks of one plan's structure: batch sizes, slots inside extents, the
 * data of each batch loaded before it. */
static int check_structure(const ferry__rank_plan *p, const ferry__manifest *m,
                           int64_t B, int tail) {
  ferry__slot *slots = NULL;
  REQUIRE(ferry__plan_slots(p, &slots) == 0, "slots");
  REQUIRE(ferry__plan_batch_start(p, 0) == 0 &&
              ferry__plan_batch_start(p, p->num_batches) == p->nslots,
          "batch bounds %lld..%lld of %lld slots",
          (long long)ferry__plan_batch_start(p, 0),
          (long long)ferry__plan_batch_start(p, p->num_batches),
          (long long)p->nslots);
  int64_t pads = 0;
  for (int64_t b = 0; b < p->num_batches; b++) {
    int64_t sz =
        ferry__plan_batch_start(p, b + 1) - ferry__plan_batch_start(p, b);
    if (tail == FERRY__TAIL_PARTIAL)
      REQUIRE(sz >= 0 && sz <= B, "partial batch of %lld", (long long)sz);
    else
      REQUIRE(sz == B, "batch %lld has %lld samples, B %lld", (long long)b,
              (long long)sz, (long long)B);
    for (int64_t i = ferry__plan_batch_start(p, b);
         i < ferry__plan_batch_start(p, b + 1); i++) {
      const ferry__slot *s = &slots[i];
      REQUIRE(s->extent >= 0 && s->extent < ferry__plan_batch_need(p, b),
              "batch %lld needs extent %lld", (long long)b,
              (long long)s->extent);
      const ferry__extent *x = &p->extents[s->extent];
      REQUIRE(s->row >= 0 && s->row < x->count, "row inside extent");
      REQUIRE(x->global_first + s->row == s->sample, "slot maps to its sample");
      REQUIRE(m->parts[x->part].first_sample + x->row == x->global_first &&
                  x->row + x->count <= m->parts[x->part].num_samples,
              "extent inside its part");
      REQUIRE(p->window_need[x->window] <= b, "window needed before use");
      pads += s->padded;
    }
  }
  REQUIRE(pads == p->padded, "padded count %lld, flags %lld",
          (long long)p->padded, (long long)pads);
  REQUIRE(tail == FERRY__TAIL_PAD || pads == 0, "pads only with tail=pad");
  int64_t tot = 0;
  for (int64_t w = 0; w < p->nwindows; w++)
    tot += p->window_samples[w];
  REQUIRE(tot == p->nslots, "windows cover the slots");
  free(slots);
  return 0;
}

typedef struct resume_case {
  int64_t nparts, per_part, chunk, B;
  int tail, partition, shuffle;
  int64_t sbuf;
  int nsteps; /* steps before the final world size */
  int P[3];   /* world sizes: steps, then the final one */
  int K[2];   /* served per step: 0 none, 1 one batch, 2 half, 3 all but
                 one, 4 all */
} resume_case;

/* The most ranks a resume case uses (test_resume's worlds go up to 19). */
enum { MAX_WORLD = 32 };

static int check_resume(const resume_case *c) {
  int64_t counts[16];
  for (int64_t p = 0; p < c->nparts; p++)
    counts[p] = c->per_part + p % 3;
  ferry__manifest m;
  fake_manifest(&m, c->nparts, counts);
  ferry__chunk *chunks, *pieces;
  int64_t nchunks, np;
  ferry__plan_params pp = {c->B,    99, c->shuffle, 5, c->sbuf, c->partition,
                           c->tail, 0,  1.0,        3, c->P[0]};
  REQUIRE(ferry__chunks_make(&m, c->chunk, &chunks, &nchunks) == 0, "chunks");
  REQUIRE(ferry__plan_pieces(chunks, nchunks, &pp, &pieces, &np) == 0,
          "pieces");
  int64_t *perm = malloc((size_t)np * sizeof *perm);
  ferry__plan_permutation(&pp, np, perm);
  ferry__pieces ps;
  ferry__pieces_wrap(&ps, pieces, np);
  int64_t N = m.num_samples;
  int *served = calloc((size_t)N, sizeof *served);
  int64_t nserved = 0, M = 0, dropped0 = 0;
  ferry__resume_step steps[2];
  /* The original plan and every intermediate step: mark what they served. */
  for (int s = 0; s < c->nsteps; s++) {
    int P = c->P[s];
    ferry__rank_plan plans[MAX_WORLD];
    ferry__err err = {0};
    ferry__plan_params p0 = pp;
    p0.world_size = P;
    if (s == 0) {
      ferry__rank_plan t = {0};
      if (ferry__plan_build(&ps, perm, &p0, 0, &t, &err) ==
          FERRY_EINVAL) { /* drop_last with too few samples: not resumable */
        free(perm), free(pieces), free(chunks), free(served);
        ferry__manifest_free(&m);
        return 0;
      }
      M = t.epoch_samples;
      dropped0 = t.dropped;
      ferry__rank_plan_free(&t);
    }
    if (level_plans(&ps, perm, &pp, steps, s, P, plans))
      return 1;
    int64_t nb = plans[0].num_batches;
    int64_t K = c->K[s] == 0   ? 0
                : c->K[s] == 1 ? (nb > 0)
                : c->K[s] == 2 ? nb / 2
                : c->K[s] == 3 ? (nb > 0 ? nb - 1 : 0)
                               : nb;
    ferry__slot *pslots[MAX_WORLD];
    for (int r = 0; r < P; r++) {
      REQUIRE(plans[r].num_batches == nb, "equal batches at step %d", s);
      if (check_structure(&plans[r], &m, c->B, c->tail))
        return 1;
      REQUIRE(ferry__plan_slots(&plans[r], &pslots[r]) == 0, "slots");
      for (int64_t i = 0; i < ferry__plan_batch_start(&plans[r], K); i++) {
        const ferry__slot *sl = &pslots[r][i];
        if (sl->padded)
          continue;
        REQUIRE(served[sl->sample] == 0, "step %d rank %d serves %lld again", s,
                r, (long long)sl->sample);
        served[sl->sample] = 1;
        nserved++;
      }
    }
    steps[s] = (ferry__resume_step){P, K, NULL, NULL, NULL};
    /* Same world size next: the resumed ranks continue their own plans. */
    int Pn = c->P[s + 1];
    ferry__rank_plan next[MAX_WORLD];
    if (level_plans(&ps, perm, &pp, steps, s + 1, Pn, next))
      return 1;
    for (int r = 0; r < Pn; r++) {
      if (Pn == P) {
        int64_t cut = ferry__plan_batch_start(&plans[r], K);
        REQUIRE(next[r].nslots == plans[r].nslots - cut &&
                    next[r].num_batches == nb - K,
                "same world size: rank %d continues its plan", r);
        ferry__slot *ns = NULL;
        REQUIRE(ferry__plan_slots(&next[r], &ns) == 0, "slots");
        for (int64_t i = 0; i < next[r].nslots; i++)
          REQUIRE(ns[i].sample == pslots[r][cut + i].sample &&
                      ns[i].padded == pslots[r][cut + i].padded,
                  "same world size: slot %lld of rank %d", (long long)i, r);
        free(ns);
      }
      ferry__rank_plan_free(&next[r]);
    }
    for (int r = 0; r < P; r++) {
      free(pslots[r]);
      ferry__rank_plan_free(&plans[r]);
    }
  }
  /* The final part over P[nsteps] ranks: the rest, once. */
  int Pn = c->P[c->nsteps];
  ferry__rank_plan fin[32];
  if (level_plans(&ps, perm, &pp, steps, c->nsteps, Pn, fin))
    return 1;
  int64_t nrest = 0;
  for (int r = 0; r < Pn; r++) {
    REQUIRE(fin[r].num_batches == fin[0].num_batches, "final batches equal");
    REQUIRE(fin[r].epoch_samples == M, "epoch_samples kept");
    REQUIRE(fin[r].dropped == fin[0].dropped, "dropped agrees");
    if (check_structure(&fin[r], &m, c->B, c->tail))
      return 1;
    ferry__slot *fs = NULL;
    REQUIRE(ferry__plan_slots(&fin[r], &fs) == 0, "slots");
    for (int64_t i = 0; i < fin[r].nslots; i++) {
      const ferry__slot *sl = &fs[i];
      if (sl->padded)
        continue; /* a repeat; check_structure checked its flag */
      REQUIRE(served[sl->sample] == 0,
              "resumed rank %d of %d serves %lld again (served before: %d)", r,
              Pn, (long long)sl->sample, served[sl->sample]);
      served[sl->sample] = 2;
      nrest++;
    }
    free(fs);
  }
  int64_t dropped = fin[0].dropped;
  REQUIRE(nserved + nrest + dropped == M,
          "served %lld + resumed %lld + dropped %lld != %lld samples",
          (long long)nserved, (long long)nrest, (long long)dropped,
          (long long)M);
  if (c->tail != FERRY__TAIL_DROP)
    REQUIRE(dropped == 0, "nothing dropped with tail %d", c->tail);
  else
    REQUIRE(dropped >= dropped0 &&
                dropped - dropped0 < (int64_t)Pn * c->B * (c->nsteps) +
                                         (dropped0 ? 0 : 1) +
                                         (int64_t)c->B * 64,
            "drop_last drops at most P*B-1 more per change");
  for (int r = 0; r < Pn; r++)
    ferry__rank_plan_free(&fin[r]);
  free(perm);
  free(pieces);
  free(chunks);
  free(served);
  ferry__manifest_free(&m);
  return 0;
}

static int test_resume(void) {
  static const int64_t Bs[] = {1, 8};
  static const int Ps[][3] = {{4, 3, 0}, {4, 5, 0}, {3, 3, 0},
                              {1, 7, 0}, {5, 2, 0}, {2, 19, 0},
                              {4, 3, 4}, {3, 3, 2}, {2, 5, 5}};
  static const int Ks[][2] = {{0, 4}, {1, 1}, {2, 2}, {3, 1}, {4, 0}};
  int64_t n = 0;
  for (int tail = 0; tail < 3; tail++)
    for (int part = 0; part < 2; part++)
      for (int sh = 0; sh < 3; sh++)
        for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++)
          for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
              for (int64_t per = 5; per <= 41; per += 36) {
                resume_case c = {3,
                                 per,
                                 7,
                                 Bs[bi],
                                 tail,
                                 part,
                                 sh,
                                 (int64_t)(sh == 0 ? 0 : 2),
                                 Ps[pi][2] ? 2 : 1,
                                 {Ps[pi][0], Ps[pi][1], Ps[pi][2]},
                                 {Ks[ki][0], Ks[ki][1]}};
                if (check_resume(&c)) {
                  fprintf(stderr,
                          "  in resume case: parts 3 x %lld, chunk 7, B %lld, "
                          "tail %d, partition %d, shuffle %d, worlds %d %d "
                          "%d, K codes %d %d\n",
                          (long long)per, (long long)c.B, tail, part, sh,
                          c.P[0], c.P[1], c.P[2], c.K[0], c.K[1]);
                  return 1;
                }
                n++;
              }
  printf("resume: %lld cases exactly once over the interrupted and resumed "
         "parts\n",
         (long long)n);
  return 0;
}

/* ---- The plan in O(window) memory (issue 12) ------------------------------
 */

/* Chunks and pieces computed on demand equal the arrays of chunks_make and
 * plan_pieces, for parts of unequal and zero length, every subset and block
 * option. */
static int test_pieces_on_demand(void) {
  static const int64_t layouts[][6] = {{5, 97, 0, 13, 1, 40},
                                       {3, 0, 7, 0, 0, 0},
                                       {1, 1000, 0, 0, 0, 0},
                                       {5, 1, 2, 3, 0, 64}};
  static const int64_t chunk_sizes[] = {1, 3, 10, 64, 5000};
  int n = 0;
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
    for (size_t ci = 0; ci < sizeof chunk_sizes / sizeof chunk_sizes[0]; ci++)
      for (int sh = 0; sh < 3; sh++)
        for (int sub = 0; sub < 3; sub++)
          for (int64_t bs = 1; bs <= 7; bs += 3) {
            ferry__manifest m;
            fake_manifest(&m, layouts[l][0], layouts[l] + 1);
            ferry__plan_params pp = {.batch_size = 1,
                                     .seed = 77,
                                     .shuffle = sh,
                                     .block_size = bs,
                                     .max_chunks = sub == 1 ? 3 : 0,
                                     .fraction = sub == 2 ? 0.3 : 1.0,
                                     .world_size = 1};
            ferry__chunk *chunks = NULL, *pieces = NULL;
            int64_t nc = 0, np = 0;
            ferry__chunk_index ci_ = {0};
            ferry__pieces ps = {0};
            REQUIRE(ferry__chunks_make(&m, chunk_sizes[ci], &chunks, &nc) == 0,
                    "chunks: layout %zu, chunk_samples %lld", l,
                    (long long)chunk_sizes[ci]);
            REQUIRE(ferry__plan_pieces(chunks, nc, &pp, &pieces, &np) == 0,
                    "pieces");
            REQUIRE(ferry__chunk_index_make(&m, chunk_sizes[ci], &ci_) == 0,
                    "chunk index");
            REQUIRE(ferry__pieces_make(&ci_, &pp, &ps) == 0, "pieces index");
            REQUIRE(ci_.nchunks == nc && ps.n == np,
                    "%lld chunks, %lld pieces on demand; arrays %lld, %lld",
                    (long long)ci_.nchunks, (long long)ps.n, (long long)nc,
                    (long long)np);
            for (int64_t i = 0; i < nc; i++) {
              ferry__chunk c = ferry__chunk_get(&ci_, i);
              REQUIRE(memcmp(&c, &chunks[i], sizeof c) == 0,
                      "chunk %lld of layout %zu", (long long)i, l);
              for (int64_t g = c.global_first; g < c.global_first + c.count;
                   g++)
                REQUIRE(ferry__chunk_of_sample(&ci_, g) == i,
                        "sample %lld in chunk %lld", (long long)g,
                        (long long)i);
            }
            for (int64_t i = 0; i < np; i++) {
              ferry__chunk c = ferry__piece(&ps, i);
              REQUIRE(memcmp(&c, &pieces[i], sizeof c) == 0,
                      "piece %lld of layout %zu, chunk %lld, shuffle %d, "
                      "subset %d, block %lld",
                      (long long)i, l, (long long)chunk_sizes[ci], sh, sub,
                      (long long)bs);
            }
            /* the index is O(parts), the subset 8-16 bytes per kept chunk */
            REQUIRE(ps.bytes <= (size_t)(ps.nkept + m.nparts + 1) * 16,
                    "pieces hold %zu bytes", ps.bytes);
            ferry__pieces_free(&ps);
            ferry__chunk_index_free(&ci_);
            free(pieces);
            free(chunks);
            ferry__manifest_free(&m);
            n++;
          }
  printf("checked %d on-demand chunk and piece layouts\n", n);
  return 0;
}

/* The plan of a rank holds no per-sample array: for a fixed number of
 * chunks its size is the same (to 1%) for N, 10 N and 100 N samples, for
 * the rank's plan and for a rank's plan among 4,096, and so are the slices
 * and runs of an elastic resume's plan. */
static int test_plan_memory(void) {
  static const int worlds[] = {4, 4096};
  size_t first_sl[sizeof worlds / sizeof worlds[0]] = {0};
  for (size_t wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
    size_t first = 0;
    for (int64_t scale = 1; scale <= 100; scale *= 10) {
      int64_t counts[3] = {40000 * scale, 30000 * scale, 30000 * scale};
      ferry__manifest m;
      fake_manifest(&m, 3, counts);
      ferry__chunk_index ci = {0};
      ferry__pieces ps = {0};
      ferry__plan_params pp = {.batch_size = 32,
                               .seed = 5,
                               .shuffle = FERRY__SHUFFLE_CHUNKS,
                               .shuffle_buffer = 4,
                               .tail = FERRY__TAIL_PAD,
                               .fraction = 1.0,
                               .epoch = 1,
                               .world_size = worlds[wi]};
      REQUIRE(ferry__chunk_index_make(&m, 10 * scale, &ci) == 0 &&
                  ferry__pieces_make(&ci, &pp, &ps) == 0 && ps.n == 10000,
              "10,000 chunks at scale %lld", (long long)scale);
      int64_t *perm = malloc((size_t)ps.n * sizeof *perm);
      REQUIRE(perm, "out of memory");
      ferry__plan_permutation(&pp, ps.n, perm);
      ferry__rank_plan p = {0};
      ferry__err err = {0};
      int r = worlds[wi] - 1;
      REQUIRE(ferry__plan_build(&ps, perm, &pp, r, &p, &err) == 0, "%s",
              err.msg);
      size_t bytes = ferry__plan_bytes(&p) + ps.bytes;
      if (scale == 1)
        first = bytes;
      /* equal but for a few runs more or fewer where pads wrap */
      REQUIRE(bytes + first / 100 + 256 >= first &&
                  bytes <= first + first / 100 + 256,
              "rank %d of %d: plan of %zu bytes for %lld samples, %zu for "
              "%lld",
              r, worlds[wi], bytes, (long long)m.num_samples, first,
              (long long)(m.num_samples / scale));
      /* per piece of the rank, nothing per sample */
      REQUIRE(bytes <= (size_t)(p.nextents + p.nsegs + p.nwindows + 1) * 128,
              "%zu bytes for %lld extents", bytes, (long long)p.nextents);
      /* the served order of one window, on demand, is the window's size */
      REQUIRE(ferry__plan_window_max(&p) <= 4 * 10 * scale + p.batch_size,
              "window of %lld samples", (long long)ferry__plan_window_max(&p));
      ferry__rank_plan_free(&p);
      /* elastic resume (saved on one rank more after 3 batches each, 0 on
       * 4,097 ranks, which serve one batch of 32 at the smallest scale): its
       * slices and runs are per window, not per sample, and its extents
       * per piece plus the windows cut at the shares' ends */
      ferry__resume_step step = {worlds[wi] + 1, worlds[wi] < 100 ? 3 : 0, NULL,
                                 NULL, NULL};
      REQUIRE(ferry__plan_resume(&ps, perm, &pp, &step, 1, r, &p, NULL, &err) ==
                  0,
              "elastic: %s", err.msg);
      size_t sl = (size_t)p.nslices * sizeof(ferry__slice) +
                  (size_t)p.nruns * sizeof(ferry__run);
      if (scale == 1)
        first_sl[wi] = sl;
      REQUIRE(!p.segs && sl + first_sl[wi] / 100 + 256 >= first_sl[wi] &&
                  sl <= first_sl[wi] + first_sl[wi] / 100 + 256,
              "elastic rank %d of %d: %zu bytes of slices and runs for %lld "
              "samples, %zu for %lld",
              r, worlds[wi], sl, (long long)m.num_samples, first_sl[wi],
              (long long)(m.num_samples / scale));
      REQUIRE(p.nextents <= ps.n / worlds[wi] + 2 +
                                (worlds[wi] + 3) * (4 * 10 * scale + 32),
              "elastic: %lld extents", (long long)p.nextents);
      ferry__rank_plan_free(&p);
      free(perm);
      ferry__pieces_free(&ps);
      ferry__chunk_index_free(&ci);
      ferry__manifest_free(&m);
    }
  }
  return 0;
}

/* Resume steps with holes (a bucketed max_tokens epoch: loader/tokens.c):
 * a plan of batch_size 1 over 3 ranks, each old rank having served a
 * prefix of its order except some positions inside it (every third, a
 * run of two, across windows); dealt over 2 and 5 ranks, the rest is
 * exactly those holes and everything after the prefixes, each once.  A
 * hole at or past its rank's prefix, or out of order, is refused. */
static int test_resume_holes(void) {
  int64_t counts[4] = {37, 41, 29, 33};
  ferry__manifest m;
  fake_manifest(&m, 4, counts);
  ferry__chunk *chunks, *pieces;
  int64_t nchunks, np;
  ferry__plan_params pp = {
      1, 7, FERRY__SHUFFLE_BLOCK, 5, 2, 0, FERRY__TAIL_PARTIAL, 0, 1.0, 2, 3};
  REQUIRE(ferry__chunks_make(&m, 6, &chunks, &nchunks) == 0, "chunks");
  REQUIRE(ferry__plan_pieces(chunks, nchunks, &pp, &pieces, &np) == 0,
          "pieces");
  int64_t *perm = malloc((size_t)np * sizeof *perm);
  ferry__plan_permutation(&pp, np, perm);
  ferry__pieces ps;
  ferry__pieces_wrap(&ps, pieces, np);
  int64_t N = m.num_samples, served[3], nh[3], *holes[3];
  int *want = calloc((size_t)N, sizeof *want); /* 1: to serve again */
  for (int r = 0; r < 3; r++) {
    ferry__rank_plan p;
    ferry__err err = {0};
    REQUIRE(ferry__plan_build(&ps, perm, &pp, r, &p, &err) == 0, "%s", err.msg);
    ferry__slot *sl = NULL;
    REQUIRE(ferry__plan_slots(&p, &sl) == 0, "slots");
    served[r] = p.nslots * 2 / 3 + r; /* inside a later window */
    holes[r] = malloc((size_t)served[r] * sizeof **holes);
    nh[r] = 0;
    for (int64_t i = 0; i < p.nslots; i++) {
      int hole = i < served[r] &&
                 (i % 3 == 1 || i == served[r] - 2 || i == served[r] - 1);
      if (hole)
        holes[r][nh[r]++] = i;
      if (hole || i >= served[r])
        want[sl[i].sample] = 1;
    }
    free(sl);
    ferry__rank_plan_free(&p);
  }
  ferry__resume_step st = {3, 1, served, nh, holes};
  static const int worlds[] = {2, 5};
  for (int wi = 0; wi < 2; wi++) {
    int P = worlds[wi];
    int *got = calloc((size_t)N, sizeof *got);
    ferry__rank_plan plans[5];
    REQUIRE(level_plans(&ps, perm, &pp, &st, 1, P, plans) == 0, "plans");
    for (int r = 0; r < P; r++) {
      ferry__slot *sl = NULL;
      REQUIRE(ferry__plan_slots(&plans[r], &sl) == 0, "slots");
      for (int64_t i = 0; i < plans[r].nslots; i++)
        if (!sl[i].padded)
          got[sl[i].sample]++;
      free(sl);
      ferry__rank_plan_free(&plans[r]);
    }
    for (int64_t k = 0; k < N; k++)
      REQUIRE(got[k] == want[k],
              "over %d ranks: sample %lld served %d times, "
              "wanted %d",
              P, (long long)k, got[k], want[k]);
    free(got);
  }
  /* a hole at its rank's prefix end, and one out of order: refused */
  ferry__rank_plan p;
  ferry__err err = {0};
  int64_t keep = holes[1][0];
  holes[1][0] = served[1];
  REQUIRE(ferry__plan_resume(&ps, perm, &pp, &st, 1, 0, &p, NULL, &err) ==
                  FERRY_EFORMAT &&
              strstr(err.msg, "unserved position"),
          "a hole past the prefix: %s", err.msg);
  holes[1][0] = keep;
  if (nh[2] > 1) {
    int64_t t = holes[2][0];
    holes[2][0] = holes[2][1];
    holes[2][1] = t;
    err = (ferry__err){0};
    REQUIRE(ferry__plan_resume(&ps, perm, &pp, &st, 1, 0, &p, NULL, &err) ==
                FERRY_EFORMAT,
            "holes out of order accepted");
  }
  for (int r = 0; r < 3; r++)
    free(holes[r]);
  free(want);
  free(perm);
  free(pieces);
  free(chunks);
  ferry__manifest_free(&m);
  return 0;
}

int main(void) {
  int rc = test_golden() | test_combos() | test_epochs_differ() |
           test_subset_stable() | test_drop_last_too_big() | test_auto_chunk() |
           test_auto_chunk_count() | test_resume() | test_pieces_on_demand() |
           test_plan_memory() | test_resume_holes();
  if (rc && !ft_failures) /* a function gave up without a failed check */
    ft_failures++;
  return ft_summary("test_plan");
}
