/*
 * test_dump.c - many `ferry dump` runs in one MPI job.
 *
 *   test_dump JOBS
 *
 * The fixture tests (npy_fixtures.sh, hdf5.sh, zarr.sh, through
 * dump_queue/dump_run of tests/lib/common.sh) check dozens of arrays over
 * 1, 2 and 3 ranks.  One mpirun per array spent most of the suite's time
 * starting jobs; this program runs every job of the list JOBS in one
 * launch, each on the first NP ranks of the world (a sub-communicator),
 * and writes exactly what `ferry dump` would have: OUT (rank 0's "rank
 * batch global_index first_value [fnv=HEX]" lines), OUT.err (the error
 * message, else empty) and OUT.status (0, or 1 on a library error), which
 * tests/fixtures/dump_compare.py checks as before, and OUT.ranks (every
 * rank's status, 0 or 1, in rank order).  src/tool/cmd_dump.c is
 * the reference for the output; `ferry dump` itself stays covered by the
 * cli_*.sh tests and by the error cases of the fixture scripts.
 *
 * JOBS holds one job per line, fields separated by tabs:
 *
 *   OUT  NP  ENV  DATASET  VAR  ROW_HASH  OPTIONS
 *
 * ENV is "-" or space-separated NAME=VALUE set (setenv) for this job only,
 * before the options are read from the environment (FERRY_* variables, as
 * the tool does); ROW_HASH is 0 or 1 (--row-hash); OPTIONS are the tool's
 * loader options, "--name value" pairs, plus "--epoch E".  A job whose
 * library call fails writes its message and status 1 and the next job
 * runs: the library fails collectively, on every rank of the job.
 */
#include <ferry.h>

#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FIELDS = 7, MAX_WORDS = 64 };
enum { D_BATCH, D_SAMPLE, D_HAS, D_VALUE, D_HASH, D_LEN, D_FIELDS };

typedef struct job {
  char *out, *env, *dataset, *var, *opts;
  int np, row_hash;
} job;

/* Split s in place at sep; up to max pieces. */
static int split(char *s, char sep, char **v, int max) {
  int n = 0;
  while (n < max) {
    v[n++] = s;
    char *e = strchr(s, sep);
    if (!e)
      break;
    *e = '\0';
    s = e + 1;
  }
  return n;
}

static uint64_t fnv1a64(const unsigned char *p, size_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? m / 1024.0 / 16384.0
             : e == 31 ? (m ? NAN : INFINITY)
                       : (1.0 + m / 1024.0) * (double)(1LL << e) / 32768.0;
  return (h & 0x8000) ? -v : v;
}

/* As src/tool/common.c's tool_format_value. */
static void format_value(ferry_dtype t, const void *p, char *buf, size_t len) {
  switch (t) {
  case FERRY_BOOL: snprintf(buf, len, "%d", *(const uint8_t *)p != 0); break;
  case FERRY_INT8: snprintf(buf, len, "%" PRId8, *(const int8_t *)p); break;
  case FERRY_INT16: snprintf(buf, len, "%" PRId16, *(const int16_t *)p); break;
  case FERRY_INT32: snprintf(buf, len, "%" PRId32, *(const int32_t *)p); break;
  case FERRY_INT64: snprintf(buf, len, "%" PRId64, *(const int64_t *)p); break;
  case FERRY_UINT8: snprintf(buf, len, "%" PRIu8, *(const uint8_t *)p); break;
  case FERRY_UINT16:
    snprintf(buf, len, "%" PRIu16, *(const uint16_t *)p);
    break;
  case FERRY_UINT32:
    snprintf(buf, len, "%" PRIu32, *(const uint32_t *)p);
    break;
  case FERRY_UINT64:
    snprintf(buf, len, "%" PRIu64, *(const uint64_t *)p);
    break;
  case FERRY_FLOAT16:
    snprintf(buf, len, "%.17g", half_to_double(*(const uint16_t *)p));
    break;
  case FERRY_FLOAT32:
    snprintf(buf, len, "%.17g", (double)*(const float *)p);
    break;
  case FERRY_FLOAT64: snprintf(buf, len, "%.17g", *(const double *)p); break;
  default: snprintf(buf, len, "?"); break;
  }
}

static void write_text(const char *path, const char *suffix, const char *s) {
  char p[4096];
  snprintf(p, sizeof p, "%s%s", path, suffix);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(s, f);
    fclose(f);
  }
}

/* Options: the job's environment, then its "--name value" words. */
static int job_options(job *j, ferry_options **o, int64_t *epoch, char *msg,
                       size_t mlen) {
  char *w[MAX_WORDS];
  int n = *j->opts ? split(j->opts, ' ', w, MAX_WORDS) : 0;
  if (ferry_options_create(o) != 0 || ferry_options_from_env(*o) != 0) {
    snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(NULL));
    return -1;
  }
  if (strstr(ferry_features(), "cuda") &&
      ferry_options_set(*o, "device", "cpu") != 0)
    return -1;
  for (int i = 0; i < n; i++) {
    if (!*w[i])
      continue;
    if (strncmp(w[i], "--", 2) != 0 || i + 1 >= n) {
      snprintf(msg, mlen, "test_dump: bad option word '%s'\n", w[i]);
      return -1;
    }
    if (strcmp(w[i], "--epoch") == 0)
      *epoch = strtoll(w[i + 1], NULL, 10);
    else if (ferry_options_set(*o, w[i] + 2, w[i + 1]) != 0) {
      snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(NULL));
      return -1;
    }
    i++;
  }
  return 0;
}

/* Serve one epoch; rank 0 of comm writes the lines.  0 or a FERRY_E code
 * (msg set). */
static int run_job(job *j, MPI_Comm comm, char *msg, size_t mlen) {
  int rank, size, st = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ferry_options *o = NULL;
  ferry_loader *L = NULL;
  int64_t epoch = 0, *recs = NULL, nrecs = 0, cap = 0;
  if (job_options(j, &o, &epoch, msg, mlen) != 0) {
    ferry_options_free(o);
    return 1;
  }
  st = ferry_open(comm, j->dataset, o, &L);
  ferry_options_free(o);
  if (st != 0) {
    snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(NULL));
    return st;
  }
  int vi = -1;
  ferry_var_info vinfo;
  for (int i = 0; i < ferry_num_vars(L); i++)
    if (ferry_var_info_get(L, i, &vinfo) == 0 &&
        (!*j->var || strcmp(vinfo.name, j->var) == 0)) {
      vi = i;
      break;
    }
  size_t elsize = vi < 0 ? 0 : ferry_dtype_size(vinfo.dtype);
  if (vi < 0) {
    snprintf(msg, mlen, "ferry dump: error: %s has no variable '%s'\n",
             j->dataset, j->var);
    st = FERRY_EINVAL;
  } else if ((st = ferry_set_epoch(L, epoch)) != 0) {
    snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(L));
  }
  while (st == 0) {
    ferry_batch *b = NULL;
    int rc = ferry_next(L, &b);
    if (rc == FERRY_END)
      break;
    if (rc != 0) {
      snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(L));
      st = rc;
      break;
    }
    if (nrecs + b->size > cap) {
      cap = (nrecs + b->size) * 2 + 64;
      recs = realloc(recs, (size_t)cap * D_FIELDS * sizeof *recs);
      if (!recs)
        MPI_Abort(MPI_COMM_WORLD, 99); /* the test program's own memory */
    }
    const ferry_tensor *t = &b->vars[vi];
    for (int64_t k = 0; k < b->size; k++, nrecs++) {
      int64_t *r = recs + nrecs * D_FIELDS;
      /* a ragged sample: values offsets[k] to offsets[k+1] */
      /* pad: sample k is its lengths[k] rows of shape[1] (the rest pad) */
      size_t at = t->offsets   ? (size_t)t->offsets[k]
                  : t->lengths ? (size_t)k * (size_t)t->shape[1]
                               : (size_t)k;
      size_t bytes = t->offsets ? (size_t)(t->offsets[k + 1] - t->offsets[k]) *
                                      t->row_bytes
                     : t->lengths ? (size_t)t->lengths[k] * t->row_bytes
                                  : t->row_bytes;
      const unsigned char *row =
          (const unsigned char *)t->data + at * t->row_bytes;
      r[D_BATCH] = b->index;
      r[D_SAMPLE] = b->sample_ids[k];
      r[D_LEN] = t->offsets   ? t->offsets[k + 1] - t->offsets[k]
                 : t->lengths ? t->lengths[k]
                              : -1;
      r[D_HAS] = bytes >= elsize && elsize > 0;
      r[D_VALUE] = 0;
      if (r[D_HAS])
        memcpy(&r[D_VALUE], row, elsize);
      r[D_HASH] = j->row_hash ? (int64_t)fnv1a64(row, bytes) : 0;
    }
    if ((rc = ferry_release(L, b)) != 0) {
      snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(L));
      st = rc;
    }
  }
  if (st == 0) {
    int mine = (int)(nrecs * D_FIELDS), *counts = NULL, *displs = NULL;
    int64_t *all = NULL;
    if (rank == 0) {
      counts = calloc((size_t)size, sizeof *counts);
      displs = calloc((size_t)size, sizeof *displs);
    }
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    int total = 0;
    if (rank == 0) {
      for (int r = 0; r < size; r++) {
        displs[r] = total;
        total += counts[r];
      }
      all = malloc(((size_t)total + 1) * sizeof *all);
    }
    MPI_Gatherv(recs, mine, MPI_INT64_T, all, counts, displs, MPI_INT64_T, 0,
                comm);
    if (rank == 0) {
      FILE *f = fopen(j->out, "w");
      const int64_t *r = all;
      for (int rk = 0; f && rk < size; rk++)
        for (int k = 0; k < counts[rk] / D_FIELDS; k++, r += D_FIELDS) {
          char val[64] = "-";
          if (r[D_HAS])
            format_value(vinfo.dtype, &r[D_VALUE], val, sizeof val);
          fprintf(f, "%d %" PRId64 " %" PRId64 " %s", rk, r[D_BATCH],
                  r[D_SAMPLE], val);
          if (r[D_LEN] >= 0)
            fprintf(f, " len=%" PRId64, r[D_LEN]);
          if (j->row_hash)
            fprintf(f, " fnv=%016" PRIx64, (uint64_t)r[D_HASH]);
          fputc('\n', f);
        }
      if (f)
        fclose(f);
    }
    free(all);
    free(counts);
    free(displs);
  }
  free(recs);
  int rc = ferry_close(L);
  if (rc != 0 && st == 0) {
    snprintf(msg, mlen, "ferry dump: error: %s\n", ferry_last_error(NULL));
    st = rc;
  }
  return st;
}

/* Set (on) or unset the job's NAME=VALUE words. */
static void job_env(char *env, int on) {
  if (strcmp(env, "-") == 0 || !*env)
    return;
  char *copy = strdup(env), *w[MAX_WORDS];
  int n = copy ? split(copy, ' ', w, MAX_WORDS) : 0;
  for (int i = 0; i < n; i++) {
    char *eq = strchr(w[i], '=');
    if (!eq)
      continue;
    *eq = '\0';
    if (on)
      setenv(w[i], eq + 1, 1);
    else
      unsetenv(w[i]);
  }
  free(copy);
}

int main(int argc, char **argv) {
  int provided, wrank, wsize;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  FILE *f = argc == 2 ? fopen(argv[1], "r") : NULL;
  if (!f) {
    if (wrank == 0)
      fprintf(stderr, "usage: test_dump JOBS (a readable file)\n");
    MPI_Finalize();
    return 99;
  }
  /* comms[np]: the first np ranks of the world (MPI_COMM_NULL elsewhere). */
  MPI_Comm *comms = calloc((size_t)wsize + 1, sizeof *comms);
  for (int np = 1; comms && np <= wsize; np++)
    MPI_Comm_split(MPI_COMM_WORLD, wrank < np ? 0 : MPI_UNDEFINED, wrank,
                   &comms[np]);
  char line[8192];
  int njobs = 0, nfailed = 0;
  while (comms && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *v[MAX_FIELDS];
    if (!*line || split(line, '\t', v, MAX_FIELDS) != MAX_FIELDS)
      continue;
    job j = {v[0], v[2], v[3], v[4], v[6], atoi(v[1]), atoi(v[5])};
    if (j.np < 1 || j.np > wsize) {
      if (wrank == 0) {
        write_text(j.out, ".err", "test_dump: NP outside the world\n");
        write_text(j.out, ".status", "99\n");
      }
      continue;
    }
    njobs++;
    if (wrank >= j.np)
      continue;
    char msg[2048] = "";
    job_env(j.env, 1);
    int st = run_job(&j, comms[j.np], msg, sizeof msg);
    job_env(j.env, 0);
    /* Every rank's status, in rank order: a job that failed on some ranks
     * only is a bug the corpus test (tests/corpus) reports. */
    int mine = st != 0, *all = calloc((size_t)j.np, sizeof *all);
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, comms[j.np]);
    if (wrank == 0) {
      char ranks[4096] = "";
      size_t used = 0;
      for (int r = 0; all && r < j.np && used + 4 < sizeof ranks; r++)
        used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d",
                                 r ? " " : "", all[r]);
      write_text(j.out, ".err", msg);
      write_text(j.out, ".status", st ? "1\n" : "0\n");
      strcat(ranks, "\n");
      write_text(j.out, ".ranks", ranks);
    }
    free(all);
    nfailed += st != 0;
  }
  fclose(f);
  for (int np = 1; comms && np <= wsize; np++)
    if (comms[np] != MPI_COMM_NULL)
      MPI_Comm_free(&comms[np]);
  free(comms);
  if (wrank == 0)
    printf("test_dump: %d jobs, %d failed\n", njobs, nfailed);
  MPI_Finalize();
  return 0;
}
