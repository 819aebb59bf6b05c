/*
 * test_mix.c - the mix specification, scan, record and reads
 * (src/dataset/mix.c, src/backends/mixread.c) on in-memory sources ("mem:").
 *
 * Checks: a mix file of two mem sources (one an @list of three parts) scans
 * into one part per source with prefix-sum first samples; proportions are
 * normalised, rules kept (ferry__mix_sources); the manifest hash changes
 * with a proportion or a rule and survives pack/unpack and a JSON save and
 * load (also with a vars selection that drops the first variable); the
 * mix backend reads a source's rows across its own part boundaries with
 * the values the mem backend makes; map= serves a source's variable under
 * the common name; bad specifications (no source, 1025 sources, a nested
 * mix, a bad proportion, an unknown key, a bad map) are refused naming the
 * item or line.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/backend.h"
#include "core/options.h"
#include "dataset/mix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

static char dir[512];

static void put(const char *name, const char *text) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    perror(p);
    exit(1);
  }
}

static int scan(const char *file, const char *vars, ferry__manifest *m,
                ferry__err *err) {
  char spec[700];
  snprintf(spec, sizeof spec, "mix:@%s/%s", dir, file);
  return ferry__manifest_scan(spec, vars, NULL, m, err);
}

static int check_reads(const ferry__manifest *m) {
  const ferry__backend *be = ferry__backend_find("mix");
  REQUIRE(be != NULL, "no mix backend");
  ferry__io_params p;
  memset(&p, 0, sizeof p);
  p.comm = MPI_COMM_NULL;
  ferry__io *io = NULL;
  ferry__err err = {0};
  int rc = be->io_open(&io, m, &p, &err);
  REQUIRE(rc == 0, "io_open: %s", err.msg);
  /* source 1 (the @list of parts of 4, 5 and 6 rows): rows 2..12 cross
   * both part boundaries; mem's value of row r of variable y is r. */
  int64_t buf[11];
  rc = be->io_read(io, 1, 1, 2, 11, buf, &err);
  CHECK(rc == 0, "io_read: %s", err.msg);
  for (int i = 0; rc == 0 && i < 11; i++)
    CHECK(buf[i] == 2 + i, "row %d of source 1 is %lld", 2 + i,
          (long long)buf[i]);
  /* source 0, variable x (float32 rows of 2): row 3 is (3, 4) */
  float xf[2];
  rc = be->io_read(io, 0, 0, 3, 1, xf, &err);
  CHECK(rc == 0 && xf[0] == 3.0f && xf[1] == 4.0f, "x row 3: %g %g (%s)",
        (double)xf[0], (double)xf[1], err.msg);
  rc = be->io_read(io, 0, 0, 7, 1, xf, &err);
  CHECK(rc < 0, "a row past the source was read");
  be->io_close(io);
  return 0;
}

static int check_good(void) {
  ferry__manifest m, m2, m3, u;
  ferry__err err = {0};
  put("parts.list", "mem:N=4,vars=y:int64,x:float32:2\n"
                    "mem:N=5,vars=y:int64,x:float32:2\n"
                    "mem:N=6,vars=y:int64,x:float32:2\n");
  put("good.mix", "# two sources\n\n"
                  "mem:N=7,vars=x:float32:2,y:int64 1\n"
                  "@parts.list 3 exhaust=restart\n");
  put("p2.mix", "mem:N=7,vars=x:float32:2,y:int64 1\n"
                "@parts.list 2 exhaust=restart\n");
  put("r2.mix", "mem:N=7,vars=x:float32:2,y:int64 1\n"
                "@parts.list 3 exhaust=drop\n");
  int rc = scan("good.mix", NULL, &m, &err);
  REQUIRE(rc == 0, "scan: %s", err.msg);
  CHECK(strcmp(m.backend, "mix") == 0, "backend %s", m.backend);
  CHECK(m.nparts == 2 && m.num_samples == 22, "%lld parts, %lld samples",
        (long long)m.nparts, (long long)m.num_samples);
  CHECK(m.parts[1].first_sample == 7, "source 1 starts at %lld",
        (long long)m.parts[1].first_sample);
  CHECK(m.nvars == 2 && strcmp(m.vars[0].name, "x") == 0 &&
            strcmp(m.vars[1].name, "y") == 0,
        "variables");
  ferry__mix_source *s = NULL;
  int n = 0;
  rc = ferry__mix_sources(&m, &s, &n, &err);
  REQUIRE(rc == 0 && n == 2, "mix_sources: %d %s", rc, err.msg);
  CHECK(fabs(s[0].proportion - 0.25) < 1e-12 &&
            fabs(s[1].proportion - 0.75) < 1e-12,
        "proportions %g %g", s[0].proportion, s[1].proportion);
  CHECK(s[0].exhaust == FERRY__EXHAUST_STOP &&
            s[1].exhaust == FERRY__EXHAUST_RESTART,
        "rules %d %d", s[0].exhaust, s[1].exhaust);
  CHECK(s[1].first == 7 && s[1].n == 15, "source 1: %lld + %lld",
        (long long)s[1].first, (long long)s[1].n);
  free(s);
  rc = scan("p2.mix", NULL, &m2, &err);
  REQUIRE(rc == 0, "scan p2: %s", err.msg);
  CHECK(m2.hash != m.hash, "a changed proportion kept the hash");
  ferry__manifest_free(&m2);
  rc = scan("r2.mix", NULL, &m3, &err);
  REQUIRE(rc == 0, "scan r2: %s", err.msg);
  CHECK(m3.hash != m.hash, "a changed rule kept the hash");
  ferry__manifest_free(&m3);
  /* pack/unpack and JSON keep the hash */
  void *buf = NULL;
  size_t len = 0;
  REQUIRE(ferry__manifest_pack(&m, &buf, &len) == 0, "pack");
  rc = ferry__manifest_unpack(buf, len, &u, &err);
  free(buf);
  REQUIRE(rc == 0, "unpack: %s", err.msg);
  CHECK(u.hash == m.hash, "unpack changed the hash");
  ferry__manifest_free(&u);
  char json[700];
  snprintf(json, sizeof json, "%s/saved.json", dir);
  REQUIRE(ferry__manifest_save_json(&m, json, &err) == 0, "save: %s", err.msg);
  rc = ferry__manifest_load_json(json, NULL, &u, &err);
  REQUIRE(rc == 0, "load: %s", err.msg);
  CHECK(u.hash == m.hash, "save/load changed the hash");
  ferry__manifest_free(&u);
  rc = ferry__manifest_load_json(json, "y", &u, &err);
  REQUIRE(rc == 0, "load vars=y: %s", err.msg);
  rc = ferry__mix_sources(&u, &s, &n, &err);
  CHECK(rc == 0 && n == 2, "sources after vars=y: %s", err.msg);
  free(s);
  const ferry__backend *be = ferry__backend_find("mix");
  ferry__io *io = NULL;
  ferry__io_params p;
  memset(&p, 0, sizeof p);
  p.comm = MPI_COMM_NULL;
  rc = be->io_open(&io, &u, &p, &err);
  CHECK(rc == 0, "io_open after vars=y: %s", err.msg);
  int64_t y[3] = {0};
  if (rc == 0) {
    rc = be->io_read(io, 1, 0, 3, 3, y, &err);
    CHECK(rc == 0 && y[0] == 3 && y[2] == 5, "y after vars=y: %lld %lld (%s)",
          (long long)y[0], (long long)y[2], err.msg);
    be->io_close(io);
  }
  ferry__manifest_free(&u);
  check_reads(&m);
  ferry__manifest_free(&m);
  /* map=: the source's z is served as y */
  put("map.mix", "mem:N=7,vars=x:float32:2,y:int64 1\n"
                 "mem:N=3,vars=x:float32:2,z:int64 1 map=y:z\n");
  rc = scan("map.mix", "y", &m, &err);
  CHECK(rc == 0 && m.nvars == 1 && strcmp(m.vars[0].name, "y") == 0, "map: %s",
        err.msg);
  if (rc == 0)
    ferry__manifest_free(&m);
  return 0;
}

/* spec must be refused with FERRY_EINVAL (or code) and text in the msg. */
static void refused(const char *spec, int code, const char *text) {
  ferry__manifest m;
  ferry__err err = {0};
  int rc = ferry__manifest_scan(spec, NULL, NULL, &m, &err);
  CHECK(rc == code && strstr(err.msg, text) != NULL,
        "%.80s: rc %d, message '%s' (want %d, '%s')", spec, rc, err.msg, code,
        text);
  if (rc == 0)
    ferry__manifest_free(&m);
}

static void check_bad(void) {
  char spec[800];
  refused("mix:", FERRY_EINVAL, "names no source");
  refused("mix:a=0", FERRY_EINVAL, "mix list item 'a=0': the proportion");
  refused("mix:a=1,b=inf", FERRY_EINVAL, "list item 'b=inf'");
  refused("mix:a=1,mix:b=1", FERRY_EINVAL, "nested mix");
  refused("mix:a=1,b", FERRY_EINVAL, "no '=PROPORTION'");
  put("key.mix", "mem:N=3,vars=x:int8 1 color=red\n");
  snprintf(spec, sizeof spec, "mix:@%s/key.mix", dir);
  refused(spec, FERRY_EINVAL, "line 1: unknown or repeated key");
  put("map.mix", "mem:N=3,vars=x:int8 1 map=x\n");
  snprintf(spec, sizeof spec, "mix:@%s/map.mix", dir);
  refused(spec, FERRY_EINVAL, "line 1: a map entry is not COMMON:NAME");
  put("empty.mix", "# nothing\n\n");
  snprintf(spec, sizeof spec, "mix:@%s/empty.mix", dir);
  refused(spec, FERRY_EINVAL, "names no source");
  put("dt.mix", "mem:N=3,vars=x:int8 1\nmem:N=3,vars=x:int16 1\n");
  snprintf(spec, sizeof spec, "mix:@%s/dt.mix", dir);
  refused(spec, FERRY_EINVAL,
          "mix: variable 'x' is int8 () in mem:N=3,vars=x:int8 "
          "but int16 () in mem:N=3,vars=x:int16");
  /* 1025 sources: refused before any is scanned */
  size_t cap = 1025 * 8 + 8;
  char *big = malloc(cap);
  if (!big)
    exit(1);
  size_t at = (size_t)snprintf(big, cap, "mix:");
  for (int i = 0; i < 1025; i++)
    at += (size_t)snprintf(big + at, cap - at, "%sa=1", i ? "," : "");
  refused(big, FERRY_EINVAL, "more than 1024 sources");
  free(big);
  /* a mix as a part of an @list */
  put("nest.list", "mix:a=1\n");
  snprintf(spec, sizeof spec, "@%s/nest.list", dir);
  refused(spec, FERRY_EINVAL, "a mix cannot be a part");
}

int main(void) {
  const char *base = getenv("FERRY_TEST_TMPDIR");
  snprintf(dir, sizeof dir, "%s/test_mix.XXXXXX",
           base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror(dir);
    return 1;
  }
  check_good();
  check_bad();
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return ft_summary("test_mix");
}
