/*
 * state.c - the checkpoint file and the checkpoint signal, without MPI.
 *
 * A state file says how far an epoch got, not which samples were served: the
 * plan is a pure function (plan.c), so the dataset's manifest hash, the
 * options that shape the plan, the epoch and the list of (world size,
 * batches served) steps are enough to recompute everything, and saving costs
 * a few hundred bytes whatever the dataset's size.  Format:
 *
 *   FERRY-STATE <version> <fnv1a-64 of the body, 16 hex> <body bytes>\n
 *   <body: one JSON object, keys sorted>\n
 *
 * The header makes a truncated file (length), a damaged one (checksum), a
 * file of another kind (magic) and one from a newer ferry (version) four
 * distinct, clear errors before the JSON is even parsed.  Files are written
 * under a temporary name and renamed, so a crash never leaves half a state.
 *
 * The signal handler only sets a volatile sig_atomic_t; the loader turns it
 * into a decision all ranks share inside ferry_next's certification
 * all-reduce (src/loader/next.c and vote.c), so every rank stops at the same
 * batch.
 */
#include "config.h"
#include "loader/state.h"
#include "core/options.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "FERRY-STATE"
#define MAX_STATE_BYTES (1 << 20)

/* The options whose values shape the plan; the others (threads, prefetch,
 * io, device, manifest, max_open_files, checkpoint_signal, verbose) may
 * change. */
static const char *const plan_options[] = {
    "batch_size",     "seed",        "shuffle",       "block_size",
    "shuffle_buffer", "partition",   "tail",          "chunk_samples",
    "vars",           "max_chunks",  "fraction",      "exchange",
    "weights",        "replacement", "num_draws",     "balance",
    "balance_shares", "mix_by",      "mix_exhaust",   "draw_window",
    "draw_block",     "max_tokens",  "bucket_window", NULL};

const char *const *ferry__state_plan_options(void) { return plan_options; }

void ferry__mix_changes_free(ferry__draw_change *c, int n) {
  for (int i = 0; c && i < n; i++) {
    free(c[i].proportion);
    free(c[i].exhaust);
  }
  free(c);
}

void ferry__state_free(ferry__state *s) {
  if (!s)
    return;
  free(s->dataset);
  free(s->library);
  for (int i = 0; i < s->nopts; i++) {
    free(s->opt_name[i]);
    free(s->opt_value[i]);
  }
  free(s->opt_name);
  free(s->opt_value);
  for (int i = 0; s->steps && i < s->nsteps; i++)
    free(s->steps[i].served);
  free(s->steps);
  ferry__mix_changes_free(s->mix_changes, s->nmix_changes);
  memset(s, 0, sizeof *s);
}

uint64_t ferry__state_options_hash(const ferry__state *s) {
  uint64_t h = FERRY__FNV_INIT;
  for (int i = 0; i < s->nopts; i++) {
    h = ferry__fnv1a(h, s->opt_name[i], strlen(s->opt_name[i]) + 1);
    h = ferry__fnv1a(h, s->opt_value[i], strlen(s->opt_value[i]) + 1);
  }
  return h;
}

static json_t *hex64(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%016" PRIx64, v);
  return json_string(b);
}

/* "mix": {"sources_hash": HEX, "changes": [[position, [p...], [rule...]]]}
 * (NULL on out of memory: the caller's set fails). */
static json_t *encode_mix(const ferry__state *s) {
  json_t *m = json_object(), *ch = json_array();
  int bad = !m || !ch;
  for (int i = 0; !bad && i < s->nmix_changes; i++) {
    const ferry__draw_change *c = &s->mix_changes[i];
    json_t *p = json_array(), *e = json_array();
    bad |= !p || !e;
    for (int k = 0; !bad && k < c->n; k++) {
      bad |= json_array_append_new(p, json_real(c->proportion[k]));
      bad |= json_array_append_new(e, json_integer(c->exhaust[k]));
    }
    json_t *one =
        bad ? NULL : json_pack("[IOO]", (json_int_t)c->position, p, e);
    json_decref(p);
    json_decref(e);
    bad |= !one || json_array_append_new(ch, one);
  }
  if (!bad) {
    bad |= json_object_set_new(m, "sources_hash", hex64(s->mix_sources));
    bad |= json_object_set(m, "changes", ch);
  }
  json_decref(ch);
  if (bad) {
    json_decref(m);
    return NULL;
  }
  return m;
}

/* About the bytes of s's JSON body (an out-of-memory message; jansson's
 * own objects take a few times more while it is built). */
static size_t body_bytes(const ferry__state *s) {
  size_t n =
      512 + (s->dataset ? strlen(s->dataset) : 0) + (size_t)s->nsteps * 32;
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].served)
      n += (size_t)s->steps[i].world_size * 21;
  for (int i = 0; i < s->nopts; i++)
    n += strlen(s->opt_name[i]) + strlen(s->opt_value[i]) + 8;
  for (int i = 0; i < s->nmix_changes; i++)
    n += 32 + (size_t)s->mix_changes[i].n * 32;
  return n;
}

int ferry__state_encode(const ferry__state *s, char **out, size_t *len,
                        ferry__err *err) {
  *out = NULL;
  *len = 0;
  json_t *root = json_object(), *opts = json_object(), *steps = json_array();
  int bad = !root || !opts || !steps;
  if (!bad) {
    bad |= json_object_set_new(root, "dataset", json_string(s->dataset));
    bad |= json_object_set_new(root, "dataset_hash", hex64(s->dataset_hash));
    bad |= json_object_set_new(root, "num_samples",
                               json_integer((json_int_t)s->num_samples));
    for (int i = 0; i < s->nopts; i++)
      bad |= json_object_set_new(opts, s->opt_name[i],
                                 json_string(s->opt_value[i]));
    bad |= json_object_set(root, "options", opts);
    bad |= json_object_set_new(root, "options_hash",
                               hex64(ferry__state_options_hash(s)));
    bad |= json_object_set_new(root, "epoch", json_integer(s->epoch));
    bad |= json_object_set_new(root, "world_size", json_integer(s->world_size));
    bad |= json_object_set_new(root, "batches_served",
                               json_integer((json_int_t)s->batches));
    bad |= json_object_set_new(root, "samples_served",
                               json_integer((json_int_t)s->samples_served));
    for (int i = 0; i < s->nsteps; i++) {
      json_t *st = json_pack("[iI]", s->steps[i].world_size,
                             (json_int_t)s->steps[i].batches);
      if (st && s->steps[i].served) { /* max_tokens: each rank's count */
        json_t *sv = json_array();
        for (int r = 0; sv && r < s->steps[i].world_size; r++)
          bad |= json_array_append_new(
              sv, json_integer((json_int_t)s->steps[i].served[r]));
        bad |= !sv || json_array_append_new(st, sv);
      }
      bad |= !st || json_array_append_new(steps, st);
    }
    bad |= json_object_set(root, "steps", steps);
    if (s->mix_sources)
      bad |= json_object_set_new(root, "mix", encode_mix(s));
    bad |= json_object_set_new(root, "library", json_string(ferry_version()));
  }
  char *body = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(opts);
  json_decref(steps);
  json_decref(root);
  if (!body)
    return ferry__oom(err, -1, body_bytes(s), "the state of dataset %s",
                      s->dataset ? s->dataset : "?");
  size_t blen = strlen(body);
  uint64_t sum = ferry__fnv1a(FERRY__FNV_INIT, body, blen);
  char head[128];
  int hl = snprintf(head, sizeof head, MAGIC " %d %016" PRIx64 " %zu\n",
                    FERRY__STATE_VERSION, sum, blen);
  char *buf = malloc((size_t)hl + blen + 2);
  if (!buf) {
    free(body);
    return ferry__oom(err, -1, (size_t)hl + blen + 2, "the state of dataset %s",
                      s->dataset ? s->dataset : "?");
  }
  memcpy(buf, head, (size_t)hl);
  memcpy(buf + hl, body, blen);
  buf[(size_t)hl + blen] = '\n';
  buf[(size_t)hl + blen + 1] = '\0';
  free(body);
  *out = buf;
  *len = (size_t)hl + blen + 1;
  return 0;
}

static int hex_field(json_t *root, const char *key, uint64_t *v) {
  const char *s = json_string_value(json_object_get(root, key));
  char *end;
  if (!s || !*s)
    return -1;
  errno = 0;
  *v = strtoull(s, &end, 16);
  return errno || *end ? -1 : 0;
}

/* The header line: magic, version, checksum and length, then the checks
 * that need only them.  *body and *blen locate the JSON body. */
static int decode_header(const char *buf, size_t len, const char *path,
                         int *version, const char **body,
                         unsigned long long *blen, ferry__err *err) {
  size_t ml = strlen(MAGIC);
  if (len < ml || memcmp(buf, MAGIC, ml) != 0 || (len > ml && buf[ml] != ' '))
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s: not a ferry state file (it does not "
                         "start with '" MAGIC "')",
                         path);
  const char *nl = memchr(buf, '\n', len < 256 ? len : 256);
  uint64_t sum = 0;
  char head[256];
  *version = -1;
  if (nl) {
    memcpy(head, buf, (size_t)(nl - buf));
    head[nl - buf] = '\0';
  }
  if (!nl ||
      sscanf(head, MAGIC " %d %" SCNx64 " %llu", version, &sum, blen) != 3)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s: damaged header (truncated or "
                         "overwritten)",
                         path);
  if (*version > FERRY__STATE_VERSION || *version < 1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "state file %s has format version %d; this libferry "
                         "(%s) reads version %d: it was written by a newer "
                         "ferry",
                         path, *version, ferry_version(), FERRY__STATE_VERSION);
  *body = nl + 1;
  size_t have = len - (size_t)(*body - buf);
  /* blen comes from the file: compared with what is there before it is
   * added to or used as an index (a huge length must not wrap). */
  if (*blen >= have || (*body)[*blen] != '\n')
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s is truncated: its header announces "
                         "%llu bytes of state, %zu follow",
                         path, *blen,
                         have ? have - ((*body)[have - 1] == '\n') : 0);
  uint64_t got = ferry__fnv1a(FERRY__FNV_INIT, *body, (size_t)*blen);
  if (got != sum)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s is corrupt: checksum %016" PRIx64
                         " of its contents, %016" PRIx64 " in its header",
                         path, got, sum);
  return 0;
}

/* The "steps" array: [[world_size, batches], ...]; with max_tokens a
 * step has a third member, each rank's served positions [world_size]. */
static int decode_steps(json_t *steps, const char *path, ferry__state *s,
                        ferry__err *err) {
  for (int i = 0; i < s->nsteps; i++) {
    json_t *st = json_array_get(steps, (size_t)i);
    json_t *a = json_array_get(st, 0), *b = json_array_get(st, 1);
    json_t *c = json_array_get(st, 2);
    size_t n = json_array_size(st);
    if (!json_is_array(st) || (n != 2 && n != 3) || !json_is_integer(a) ||
        !json_is_integer(b) || json_integer_value(a) < 1 ||
        json_integer_value(a) > INT32_MAX || json_integer_value(b) < 0 ||
        (n == 3 && (!json_is_array(c) ||
                    json_array_size(c) != (size_t)json_integer_value(a))))
      return ferry__seterr(err, FERRY_EFORMAT, "state file %s: bad step %d",
                           path, i);
    s->steps[i].world_size = (int)json_integer_value(a);
    s->steps[i].batches = json_integer_value(b);
    if (n == 2)
      continue;
    int64_t *sv = malloc(json_array_size(c) * sizeof *sv);
    if (!sv)
      return ferry__oom(err, -1, json_array_size(c) * sizeof *sv,
                        "state file %s: step %d's counts", path, i);
    s->steps[i].served = sv;
    for (size_t r = 0; r < json_array_size(c); r++) {
      json_t *x = json_array_get(c, r);
      if (!json_is_integer(x) || json_integer_value(x) < 0)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "state file %s: bad count of rank %zu in step %d",
                             path, r, i);
      sv[r] = json_integer_value(x);
    }
  }
  return 0;
}

/* The "options" object, names and canonical values.  Sorted keys on write,
 * the same order back (jansson keeps insertion order, and the body was
 * dumped sorted). */
static int decode_options(json_t *opts, const char *path, ferry__state *s,
                          ferry__err *err) {
  const char *key;
  json_t *val;
  json_object_foreach(opts, key, val) {
    const char *v = json_string_value(val);
    if (!v)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "state file %s: option '%s' is not a string", path,
                           key);
    s->opt_name[s->nopts] = strdup(key);
    s->opt_value[s->nopts] = strdup(v);
    s->nopts++;
    if (!s->opt_name[s->nopts - 1] || !s->opt_value[s->nopts - 1])
      return ferry__oom(err, -1, strlen(key) + strlen(v) + 2,
                        "state file %s: option '%s'", path, key);
  }
  return 0;
}

/* The JSON body's fields into s. */
/* The optional "mix" object (encode_mix), bounded: at most 4096 changes
 * of at most 1024 sources, positions >= 0, finite proportions > 0, rules
 * 0..2. */
static int decode_mix(json_t *m, const char *path, ferry__state *s,
                      ferry__err *err) {
  json_t *ch = json_object_get(m, "changes");
  if (!json_is_object(m) || hex_field(m, "sources_hash", &s->mix_sources) ||
      !json_is_array(ch) || json_array_size(ch) > 4096)
    return ferry__seterr(err, FERRY_EFORMAT, "state file %s: a bad 'mix'",
                         path);
  size_t n = json_array_size(ch);
  s->mix_changes = calloc(n + 1, sizeof *s->mix_changes);
  if (!s->mix_changes)
    return ferry__oom(err, -1, (n + 1) * sizeof *s->mix_changes,
                      "state file %s: %zu mix changes", path, n);
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(ch, i), *pos = json_array_get(c, 0),
           *p = json_array_get(c, 1), *e = json_array_get(c, 2);
    size_t k = json_array_size(p);
    if (!json_is_array(c) || !json_is_integer(pos) || !json_is_array(p) ||
        !json_is_array(e) || k < 1 || k > 1024 || json_array_size(e) != k ||
        json_integer_value(pos) < 0)
      return ferry__seterr(err, FERRY_EFORMAT,
                           "state file %s: mix change %zu is malformed", path,
                           i);
    ferry__draw_change *d = &s->mix_changes[s->nmix_changes++];
    d->position = json_integer_value(pos);
    d->n = (int)k;
    d->proportion = calloc(k, sizeof *d->proportion);
    d->exhaust = calloc(k, sizeof *d->exhaust);
    if (!d->proportion || !d->exhaust)
      return ferry__oom(err, -1,
                        k * (sizeof *d->proportion + sizeof *d->exhaust),
                        "state file %s: mix change %zu", path, i);
    for (size_t j = 0; j < k; j++) {
      json_t *pj = json_array_get(p, j), *ej = json_array_get(e, j);
      d->proportion[j] = json_number_value(pj);
      json_int_t r = json_integer_value(ej);
      if (!json_is_number(pj) || !(d->proportion[j] > 0) ||
          !isfinite(d->proportion[j]) || !json_is_integer(ej) || r < 0 || r > 2)
        return ferry__seterr(err, FERRY_EFORMAT,
                             "state file %s: mix change %zu, source %zu: a "
                             "bad proportion or rule",
                             path, i, j);
      d->exhaust[j] = (int)r;
    }
  }
  return 0;
}

static int decode_body(json_t *root, const char *path, int version,
                       ferry__state *s, ferry__err *err) {
  s->version = version;
  json_t *opts = json_object_get(root, "options");
  json_t *steps = json_object_get(root, "steps");
  const char *ds = json_string_value(json_object_get(root, "dataset"));
  const char *lib = json_string_value(json_object_get(root, "library"));
  json_t *ep = json_object_get(root, "epoch"),
         *ws = json_object_get(root, "world_size"),
         *bs = json_object_get(root, "batches_served"),
         *ss = json_object_get(root, "samples_served"),
         *ns = json_object_get(root, "num_samples");
  uint64_t oh = 0;
  if (!json_is_object(opts) || !json_is_array(steps) || !ds ||
      !json_is_integer(ep) || !json_is_integer(ws) || !json_is_integer(bs) ||
      !json_is_integer(ss) || !json_is_integer(ns) ||
      hex_field(root, "dataset_hash", &s->dataset_hash) ||
      hex_field(root, "options_hash", &oh) || json_array_size(steps) < 1 ||
      json_array_size(steps) > 1 << 16 || json_object_size(opts) > 256)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s: a field is missing or has the wrong "
                         "type",
                         path);
  s->dataset = strdup(ds);
  s->library = strdup(lib ? lib : "?");
  s->epoch = json_integer_value(ep);
  s->world_size = (int)json_integer_value(ws);
  s->batches = json_integer_value(bs);
  s->samples_served = json_integer_value(ss);
  s->num_samples = json_integer_value(ns);
  s->nsteps = (int)json_array_size(steps);
  s->steps = calloc((size_t)s->nsteps, sizeof *s->steps);
  size_t no = json_object_size(opts);
  s->opt_name = calloc(no + 1, sizeof *s->opt_name);
  s->opt_value = calloc(no + 1, sizeof *s->opt_value);
  if (!s->dataset || !s->library || !s->steps || !s->opt_name || !s->opt_value)
    return ferry__oom(err, -1,
                      strlen(ds) + strlen(lib ? lib : "?") + 2 +
                          (size_t)s->nsteps * sizeof *s->steps +
                          (no + 1) *
                              (sizeof *s->opt_name + sizeof *s->opt_value),
                      "state file %s (dataset %s)", path, ds);
  int rc = decode_steps(steps, path, s, err);
  if (!rc)
    rc = decode_options(opts, path, s, err);
  if (!rc && json_object_get(root, "mix"))
    rc = decode_mix(json_object_get(root, "mix"), path, s, err);
  if (!rc && (s->epoch < 0 || s->world_size < 1 || s->batches < 0))
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "state file %s: negative epoch or position", path);
  return rc;
}

int ferry__state_decode(const char *buf, size_t len, const char *path,
                        ferry__state *s, ferry__err *err) {
  memset(s, 0, sizeof *s);
  int version = -1;
  const char *body = NULL;
  unsigned long long blen = 0;
  int rc = decode_header(buf, len, path, &version, &body, &blen, err);
  if (rc)
    return rc;
  json_error_t je;
  json_t *root = json_loadb(body, (size_t)blen, 0, &je);
  if (!root || !json_is_object(root))
    rc = ferry__seterr(err, FERRY_EFORMAT, "state file %s: bad JSON: %s", path,
                       root ? "not an object" : je.text);
  else
    rc = decode_body(root, path, version, s, err);
  json_decref(root);
  if (rc)
    ferry__state_free(s);
  return rc;
}

int ferry__state_read_file(const char *path, char **out, size_t *len,
                           ferry__err *err) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return ferry__seterr(err, ferry__errno_code(e),
                         "state file %s: cannot open: %s", path, strerror(e));
  }
  char *buf = malloc(MAX_STATE_BYTES + 1);
  if (!buf) {
    fclose(f);
    return ferry__oom(err, -1, (size_t)MAX_STATE_BYTES + 1, "state file %s",
                      path);
  }
  size_t n = fread(buf, 1, MAX_STATE_BYTES + 1, f);
  int rerr = ferror(f);
  fclose(f);
  if (rerr) {
    free(buf);
    return ferry__seterr(err, FERRY_EIO, "state file %s: read error", path);
  }
  if (n > MAX_STATE_BYTES) {
    free(buf);
    return ferry__seterr(err, FERRY_EFORMAT,
                         "state file %s: larger than %d bytes: not a ferry "
                         "state file",
                         path, MAX_STATE_BYTES);
  }
  *out = buf;
  *len = n;
  return 0;
}

int ferry__state_write_file(const char *path, const char *buf, size_t len,
                            ferry__err *err) {
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 64);
  if (!tmp)
    return ferry__oom(err, -1, pl + 64, "the temporary name of state file %s",
                      path);
  snprintf(tmp, pl + 64, "%s.tmp.%ld", path, (long)getpid());
  int rc = 0;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    int e = errno;
    rc = ferry__seterr(err, ferry__errno_code(e),
                       "state file %s: cannot create %s: %s", path, tmp,
                       strerror(e));
    free(tmp);
    return rc;
  }
  size_t done = 0;
  while (done < len && !rc) {
    ssize_t w = write(fd, buf + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      rc =
          ferry__seterr(err, FERRY_EIO, "state file %s: write to %s failed: %s",
                        path, tmp, strerror(errno));
    else
      done += (size_t)w;
  }
  if (!rc && fsync(fd) != 0)
    rc = ferry__seterr(err, FERRY_EIO, "state file %s: fsync of %s failed: %s",
                       path, tmp, strerror(errno));
  if (close(fd) != 0 && !rc)
    rc = ferry__seterr(err, FERRY_EIO, "state file %s: close of %s failed: %s",
                       path, tmp, strerror(errno));
  if (!rc && rename(tmp, path) != 0) {
    int e = errno;
    rc = ferry__seterr(err, ferry__errno_code(e),
                       "state file %s: rename from %s failed: %s", path, tmp,
                       strerror(e));
  }
  if (rc)
    unlink(tmp);
  else {
    /* the rename is durable once the directory is synced */
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (dir) {
      if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
      int dfd = open(slash ? dir : ".", O_RDONLY);
      if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
      }
      free(dir);
    }
  }
  free(tmp);
  return rc;
}

/* ---- The checkpoint signal -------------------------------------------- */

static volatile sig_atomic_t pending;
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static int sig_refs[65];
static struct sigaction sig_prev[65];

static void on_signal(int sig, siginfo_t *info, void *ctx) {
  pending = 1;
  /* Chain to a handler installed before ours (never to SIG_DFL, which for
   * SIGUSR1 would end the process the checkpoint is meant to save). */
  if (sig > 0 && sig < 65) {
    const struct sigaction *p = &sig_prev[sig];
    if (p->sa_flags & SA_SIGINFO) {
      if (p->sa_sigaction)
        p->sa_sigaction(sig, info, ctx);
    } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN &&
               p->sa_handler)
      p->sa_handler(sig);
  }
}

int ferry__signal_install(int sig, ferry__err *err) {
  if (sig <= 0 || sig >= 65)
    return 0;
  int rc = 0;
  pthread_mutex_lock(&sig_mu);
  if (sig_refs[sig]++ == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &sig_prev[sig]) != 0) {
      sig_refs[sig]--;
      rc = ferry__seterr(err, FERRY_EINVAL,
                         "option 'checkpoint_signal': cannot install a "
                         "handler for signal %d: %s",
                         sig, strerror(errno));
    }
  }
  pthread_mutex_unlock(&sig_mu);
  return rc;
}

void ferry__signal_release(int sig) {
  if (sig <= 0 || sig >= 65)
    return;
  pthread_mutex_lock(&sig_mu);
  if (sig_refs[sig] > 0 && --sig_refs[sig] == 0)
    sigaction(sig, &sig_prev[sig], NULL);
  pthread_mutex_unlock(&sig_mu);
}

int ferry__signal_pending(void) { return pending != 0; }

int ferry__signal_ours(int sig) {
  struct sigaction cur;
  if (sig <= 0 || sig >= 65 || sigaction(sig, NULL, &cur) != 0)
    return 1; /* cannot tell: do not warn */
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal;
}

void ferry__signal_clear(void) { pending = 0; }
