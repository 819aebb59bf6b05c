/*
 * test_weights.c - the per-sample weights of weighted and class-balanced
 * sampling (src/loader/weights.c), run by weights.sh on 1 and 3 ranks.
 *
 * usage: test_weights JOBS
 * JOBS (written by tests/fixtures/make_weights.py) holds one case a line:
 * DATASET<TAB>EXPECT<TAB>NCLASSES<TAB>OPTIONS, OPTIONS being NAME=VALUE
 * separated by '|'.  EXPECT "=FILE" or "~FILE": ferry__weights_load
 * succeeds and every rank holds the float32 weights of FILE (raw, computed
 * by NumPy), bit for bit or within 1e-6 relative; the totals, the classes
 * (shares summing to 1, counts to n, each sample's weight share/count) and
 * the hash (recomputed here) agree, and are the same on every rank.
 * EXPECT "error:CODE:TEXT": every rank gets CODE ('*': any) and a message
 * holding TEXT, the same code and words on every rank (compared through
 * MPI), and no weights.  Each rank prints nothing but failures; rank 0
 * prints each case's one line (what, or the message).
 */
#include "config.h"
#include "core/options.h"
#include "dataset/dataset.h"
#include "loader/weights.h"
#include "util/agree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FERRY_TEST_MPI 1
#include "../ferry_test.h"

static int set_options(ferry_options *o, char *list) {
  for (char *save = NULL, *kv = strtok_r(list, "|", &save); kv;
       kv = strtok_r(NULL, "|", &save)) {
    char *eq = strchr(kv, '=');
    REQUIRE(eq != NULL, "option '%s' has no '='", kv);
    *eq = '\0';
    REQUIRE(ferry_options_set(o, kv, eq + 1) == 0, "option %s=%s: %s", kv,
            eq + 1, ferry_last_error(NULL));
  }
  return 0;
}

/* The same 64-bit values on every rank. */
static void same_everywhere(int rank, const uint64_t *v, int n,
                            const char *what) {
  ferry__err err = {0};
  int which = -1;
  int rc = ferry__agree_same(MPI_COMM_WORLD, rank, v, n, &which, &err);
  CHECK(rc == 0, "%s differs across ranks (value %d, rc %d)", what, which, rc);
}

static float *read_expect(const char *path, int64_t n) {
  float *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
  FILE *f = fopen(path, "rb");
  size_t got = f && e ? fread(e, sizeof *e, (size_t)n + 1, f) : 0;
  if (f)
    fclose(f);
  CHECK(got == (size_t)n, "%s: %zu values, expected %lld", path, got,
        (long long)n);
  if (got != (size_t)n) {
    free(e);
    return NULL;
  }
  return e;
}

static uint64_t my_hash(const ferry__weights *w) {
  uint64_t h = ferry__fnv1a(FERRY__FNV_INIT, &w->n, sizeof w->n);
  h = ferry__fnv1a(h, w->w, (size_t)w->n * sizeof(float));
  for (int64_t i = 0; i < w->nclasses; i++) {
    const ferry__class_share *c = &w->classes[i];
    h = ferry__fnv1a(h, &c->label, sizeof c->label);
    h = ferry__fnv1a(h, &c->count, sizeof c->count);
    h = ferry__fnv1a(h, &c->share, sizeof c->share);
  }
  return h;
}

static void check_classes(const ferry__weights *w, int64_t nclasses,
                          const char *line) {
  CHECK(w->nclasses == nclasses, "%s: %lld classes, expected %lld", line,
        (long long)w->nclasses, (long long)nclasses);
  if (!nclasses)
    return;
  double shares = 0;
  int64_t counts = 0;
  for (int64_t i = 0; w->classes && i < w->nclasses; i++) {
    const ferry__class_share *c = &w->classes[i];
    CHECK(i == 0 || c[-1].label < c->label, "%s: classes not sorted at %lld",
          line, (long long)i);
    CHECK(c->count > 0 && c->share >= 0, "%s: class %lld: count %lld share %g",
          line, (long long)c->label, (long long)c->count, c->share);
    shares += c->share;
    counts += c->count;
  }
  CHECK(fabs(shares - 1) < 1e-12, "%s: shares sum to %.17g", line, shares);
  CHECK(counts == w->n, "%s: counts sum to %lld of %lld", line,
        (long long)counts, (long long)w->n);
}

static void check_ok(int rank, const ferry__weights *w, const char *expect,
                     int64_t n, int64_t nclasses, const char *line) {
  float *e = read_expect(expect + 1, n);
  CHECK(w->n == n && w->w != NULL, "%s: n %lld (expected %lld), w %p", line,
        (long long)w->n, (long long)n, (const void *)w->w);
  if (!e || !w->w || w->n != n) {
    free(e);
    return;
  }
  int exact = expect[0] == '=', bad = 0;
  double total = 0;
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; i++) {
    total += e[i];
    nonzero += e[i] > 0;
    int same = exact ? memcmp(&w->w[i], &e[i], sizeof(float)) == 0
                     : fabs(w->w[i] - e[i]) <= 1e-6 * fabs(e[i]);
    if (!same && bad++ < 5)
      CHECK(0, "%s: sample %lld: %.9g, expected %.9g", line, (long long)i,
            (double)w->w[i], (double)e[i]);
  }
  CHECK(bad == 0, "%s: %d samples differ", line, bad);
  CHECK(w->nonzero == nonzero, "%s: nonzero %lld, expected %lld", line,
        (long long)w->nonzero, (long long)nonzero);
  CHECK(fabs(w->total - total) <= 1e-9 * total, "%s: total %.17g vs %.17g",
        line, w->total, total);
  check_classes(w, nclasses, line);
  CHECK(w->hash == my_hash(w), "%s: hash %llx, recomputed %llx", line,
        (unsigned long long)w->hash, (unsigned long long)my_hash(w));
  CHECK(strncmp(w->what, nclasses ? "balance: " : "weights: ", 9) == 0,
        "%s: what '%s'", line, w->what);
  uint64_t v[5] = {w->hash, (uint64_t)w->nonzero, (uint64_t)w->nclasses, 0,
                   ferry__fnv1a(FERRY__FNV_INIT, w->what, strlen(w->what))};
  memcpy(&v[3], &w->total, sizeof v[3]);
  same_everywhere(rank, v, 5, "hash, nonzero, classes, total or what");
  if (rank == 0)
    printf("ok: %s\n", w->what);
  free(e);
}

static void check_err(int rank, int rc, const ferry__err *err,
                      const ferry__weights *w, const char *expect,
                      const char *line) {
  char text[FERRY__MSG_MAX + 32];
  ferry__err_text(err, text, sizeof text);
  const char *spec = expect + strlen("error:");
  const char *colon = strchr(spec, ':');
  const char *want = colon ? colon + 1 : "";
  CHECK(rc < 0, "%s: rc %d, expected an error", line, rc);
  if (spec[0] != '*')
    CHECK(rc == atoi(spec), "%s: rc %d, expected %d (%s)", line, rc, atoi(spec),
          text);
  CHECK(strstr(text, want) != NULL, "%s: message '%s' lacks '%s'", line, text,
        want);
  CHECK(w->w == NULL && w->classes == NULL && w->n == 0,
        "%s: weights left after an error", line);
  uint64_t v[2] = {(uint64_t)(int64_t)rc,
                   ferry__fnv1a(FERRY__FNV_INIT, text, strlen(text))};
  same_everywhere(rank, v, 2, "the error's code or message");
  if (rank == 0)
    printf("error %d: %s\n", rc, text);
}

static void run_case(int rank, char *line) {
  line[strcspn(line, "\n")] = '\0';
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", line);
  char *save = NULL;
  char *ds = strtok_r(line, "\t", &save);
  char *expect = strtok_r(NULL, "\t", &save);
  char *ncl = strtok_r(NULL, "\t", &save);
  char *optlist = strtok_r(NULL, "", &save);
  CHECK(ds && expect && ncl && optlist, "bad job line '%s'", copy);
  if (!ds || !expect || !ncl || !optlist)
    return;
  ferry_options *o = NULL;
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  ferry__err err = {0};
  CHECK(ferry_options_create(&o) == 0, "options");
  if (!o || set_options(o, optlist) != 0) {
    ferry_options_free(o);
    return;
  }
  /* Every rank scans for itself (the loader broadcasts rank 0's). */
  int rc = ferry__manifest_scan(ds, o->vars, o, &m, &err);
  CHECK(rc == 0, "%s: scan: %s", copy, err.msg);
  ferry__weights w;
  memset(&w, 0xab, sizeof w);
  if (rc == 0) {
    rc = ferry__weights_load(&m, o, MPI_COMM_WORLD, rank, &w, &err);
    if (strncmp(expect, "error:", 6) == 0)
      check_err(rank, rc, &err, &w, expect, copy);
    else {
      CHECK(rc == 0, "%s: rc %d: %s", copy, rc, err.msg);
      if (rc == 0)
        check_ok(rank, &w, expect, m.num_samples, atoll(ncl), copy);
    }
    ferry__weights_free(&w);
  }
  ferry__manifest_free(&m);
  ferry_options_free(o);
}

/* No option set: nothing read, nothing sent, *out zeroed. */
static void case_none(int rank) {
  ferry_options *o = NULL;
  ferry__err err = {0};
  ferry__manifest m;
  memset(&m, 0, sizeof m);
  m.num_samples = 10;
  ferry__weights w;
  memset(&w, 0xab, sizeof w);
  CHECK(ferry_options_create(&o) == 0, "options");
  int rc = ferry__weights_load(&m, o, MPI_COMM_WORLD, rank, &w, &err);
  CHECK(rc == 0 && w.w == NULL && w.n == 0 && w.nclasses == 0 &&
            w.classes == NULL && w.hash == 0,
        "no option: rc %d", rc);
  ferry_options_free(o);
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ft_set_rank(rank);
  if (argc != 2) {
    fprintf(stderr, "usage: %s JOBS\n", argv[0]);
    MPI_Finalize();
    return FT_HARD_ERROR;
  }
  case_none(rank);
  FILE *f = fopen(argv[1], "r");
  CHECK(f != NULL, "cannot open %s", argv[1]);
  char line[4096];
  int cases = 0;
  while (f && fgets(line, sizeof line, f)) {
    run_case(rank, line);
    cases++;
  }
  if (f)
    fclose(f);
  CHECK(cases > 0, "no case in %s", argv[1]);
  int status = ft_mpi_summary("test_weights", MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
