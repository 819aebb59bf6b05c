/*
 * ragged.c - ragged variables in the loader (docs/ragged.md): samples of
 * different lengths, whose offsets the manifest holds (ferry__part.roff,
 * read by rank 0 from the format's own index and broadcast).
 *
 * Every size is known before it is needed, so nothing grows at run time:
 * at ferry_open a batch of any epoch holds at most the batch_size longest
 * samples of the dataset (the bound ferry info and the budget print);
 * at ferry_set_epoch the epoch's batches are walked once (their lengths,
 * no payload) and the slots are made for the largest of them
 * (ferry__ragged_epoch, slots.c's ferry__ring_resize), so pinned and
 * device memory follow the epoch, not the dataset's longest samples.  An
 * extent's read buffer holds exactly its samples' values, and the budget
 * counts a window's reads at the most bytes per sample of any chunk (a
 * window is whole chunks).  The automatic chunk size uses the mean bytes
 * of a sample.  With device=cuda a slot holds the offsets, then the values
 * (FERRY__RAGGED_HEAD), on the host and on the device alike: one copy.
 * What is not wired for ragged variables yet is refused here with the
 * option to change: shuffle=global, io=collective outside Megatron
 * corpora, several devices per rank without pad.
 */
#include "config.h"
#include "loader/loader.h"

#include "util/dtype.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One pass over ragged variable v's lengths: the shortest, the longest,
 * the rows of all, and (k > 0) the sum of the k largest (a min-heap of
 * k) into *top.  The loader keeps the first three (ferry_var_info_get). */
static int scan_lengths(const ferry__manifest *m, int v, int64_t k,
                        ferry__lenstat *st, int64_t *top, ferry__err *err,
                        int rank) {
  int64_t *h = malloc((size_t)(k > 0 ? k : 1) * sizeof *h), n = 0;
  if (!h)
    return ferry__oom(err, rank, (size_t)k * sizeof *h,
                      "the %lld longest samples of variable %s", (long long)k,
                      m->vars[v].name);
  st->min = INT64_MAX;
  st->max = st->total = 0;
  for (int64_t p = 0; p < m->nparts; p++) {
    const int64_t *o = m->parts[p].roff[v];
    st->total += o[m->parts[p].num_samples];
    for (int64_t i = 0; i < m->parts[p].num_samples; i++) {
      ferry__manifest_trim_step(m, o, i);
      int64_t len = o[i + 1] - o[i];
      st->min = len < st->min ? len : st->min;
      st->max = len > st->max ? len : st->max;
      if (n < k) { /* sift up */
        int64_t j = n++;
        while (j > 0 && h[(j - 1) / 2] > len) {
          h[j] = h[(j - 1) / 2];
          j = (j - 1) / 2;
        }
        h[j] = len;
      } else if (k > 0 && len > h[0]) { /* replace the least, sift down */
        int64_t j = 0;
        for (;;) {
          int64_t c = 2 * j + 1;
          if (c >= n)
            break;
          if (c + 1 < n && h[c + 1] < h[c])
            c++;
          if (h[c] >= len)
            break;
          h[j] = h[c];
          j = c;
        }
        h[j] = len;
      }
    }
    ferry__manifest_trim(m, o, o + m->parts[p].num_samples + 1);
  }
  if (st->min == INT64_MAX)
    st->min = 0;
  int64_t sum = 0;
  for (int64_t i = 0; i < n; i++)
    sum += h[i];
  free(h);
  *top = sum;
  return 0;
}

static int refuse(ferry_loader *L, const char *what, ferry__err *err) {
  const char *name = "?";
  for (int v = 0; v < L->m.nvars; v++)
    if (L->m.vars[v].ragged) {
      name = L->m.vars[v].name;
      break;
    }
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "dataset %s: variable '%s' is ragged (samples of "
                       "different lengths), and %s",
                       L->m.spec, name, what);
}

/* The pad options: the mode, and each ragged variable's pad element. */
static int pad_open(ferry_loader *L, ferry__err *err) {
  const char *p = L->opts->pad;
  L->pad = !p || !*p || !strcmp(p, "none") ? 0 : !strcmp(p, "max") ? 1 : 2;
  L->pad_len = L->pad == 2 ? strtoll(p, NULL, 10) : 0; /* checked: >= 1 */
  if (!L->pad)
    return 0;
  if (L->m.nvars > FERRY__MAX_PAD_VARS)
    return refuse(L, "pad serves at most 64 variables: select fewer with vars",
                  err);
  if (!(L->pad_elem = calloc((size_t)L->m.nvars, 8)))
    return ferry__oom(err, L->rank, (size_t)L->m.nvars * 8,
                      "the pad values of dataset %s", L->m.spec);
  const char *text = L->opts->pad_value ? L->opts->pad_value : "0";
  for (int v = 0; v < L->m.nvars; v++) {
    const ferry__var *x = &L->m.vars[v];
    if (x->ragged &&
        ferry__value_of_text(text, x->dtype, L->pad_elem + 8 * v) < 0)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'pad_value': %s is not a value of "
                           "variable '%s' (%s) exactly",
                           text, x->name, ferry_dtype_name(x->dtype));
  }
  return 0;
}

/* With pad: the rows a slot holds (batch_size x the widest a batch gets:
 * pad_len, or the longest sample with pad=max); with pad=L and
 * truncate=no, a longer sample (the first) is refused here, on every rank
 * alike. */
static int pad_cap(ferry_loader *L, int v, int64_t *cap, ferry__err *err) {
  const ferry__manifest *m = &L->m;
  int64_t most = L->rstat[v].max;
  for (int64_t p = 0;
       L->pad == 2 && most > L->pad_len && !L->opts->truncate && p < m->nparts;
       p++) {
    const int64_t *o = m->parts[p].roff[v];
    for (int64_t i = 0; i < m->parts[p].num_samples;
         ferry__manifest_trim_step(m, o, ++i))
      if (o[i + 1] - o[i] > L->pad_len)
        return ferry__seterr(err, FERRY_EINVAL,
                             "dataset %s: sample %lld of variable '%s' has "
                             "%lld rows, more than pad=%lld (truncate=yes "
                             "cuts it)",
                             m->spec, (long long)(m->parts[p].first_sample + i),
                             m->vars[v].name, (long long)(o[i + 1] - o[i]),
                             (long long)L->pad_len);
  }
  int64_t w = L->pad == 2 ? L->pad_len : most;
  if (w > 0 && L->opts->batch_size > ((int64_t)1 << 40) / w)
    return ferry__seterr(err, FERRY_EINVAL,
                         "dataset %s: a padded batch of %lld samples of %lld "
                         "rows is too large",
                         m->spec, (long long)L->opts->batch_size, (long long)w);
  *cap = L->opts->batch_size * w;
  return 0;
}

/* Groups: each ragged variable's first ragged variable of the same
 * lengths in every sample of every part (the indices and data of a sparse
 * row, values and weights): their batches share one offsets array. */
static void find_groups(ferry_loader *L) {
  const ferry__manifest *m = &L->m;
  for (int v = 0; v < m->nvars; v++) {
    L->offs_of[v] = m->vars[v].ragged ? v : -1;
    for (int u = 0; u < v && L->offs_of[v] == v; u++) {
      if (!m->vars[u].ragged || L->offs_of[u] != u)
        continue;
      int same = 1;
      for (int64_t p = 0; same && p < m->nparts; p++)
        same = !memcmp(m->parts[p].roff[u], m->parts[p].roff[v],
                       ((size_t)m->parts[p].num_samples + 1) * sizeof(int64_t));
      if (same)
        L->offs_of[v] = u;
    }
  }
  ferry__manifest_trim(m, NULL, NULL);
}

/* offsets_dtype=int32: no batch may hold 2^31 rows or more of a ragged
 * variable (a slot holds at most ragged_cap rows: the check is once). */
int ferry__ragged_int32_check(ferry_loader *L, ferry__err *err) {
  if (!L->opts->offsets_dtype || !L->ragged)
    return 0;
  if (L->pad)
    return refuse(L,
                  "offsets_dtype=int32 applies to offsets, which pad "
                  "replaces with lengths: use one or the other",
                  err);
  for (int v = 0; v < L->m.nvars; v++)
    if (L->m.vars[v].ragged && L->ragged_cap[v] > INT32_MAX)
      return ferry__seterr(err, FERRY_EINVAL,
                           "option 'offsets_dtype': a batch of dataset %s "
                           "can hold %lld rows of variable '%s' (its "
                           "batch_size longest samples), more than int32 "
                           "offsets count: use offsets_dtype=int64, or a "
                           "smaller batch_size or max_tokens",
                           L->m.spec, (long long)L->ragged_cap[v],
                           L->m.vars[v].name);
  return 0;
}

int ferry__ragged_open(ferry_loader *L, ferry__err *err) {
  const ferry__manifest *m = &L->m;
  int64_t B = L->opts->batch_size;
  L->ragged = ferry__manifest_ragged(m);
  L->batch_bytes = (size_t)B * L->row_all; /* the workers' outputs too */
  L->sample_mean = L->row_sized;
  L->sample_bound = L->row_total;
  if (!L->ragged)
    return 0;
  if (L->opts->shuffle == FERRY__SHUFFLE_GLOBAL)
    return refuse(L,
                  "shuffle=global does not serve ragged variables yet: use "
                  "shuffle=chunks or block",
                  err);
  if (L->opts->io == FERRY__IO_COLLECTIVE &&
      !(L->be->caps & FERRY__CAP_COLLECTIVE_RAGGED))
    return refuse(L,
                  "io=collective does not serve them in this format (a "
                  "Megatron corpus's are): use io=independent or auto",
                  err);
  ferry_device_info di;
  memset(&di, 0, sizeof di);
  if (L->gpu)
    ferry__gpu_info(L->gpu, &di);
  int rc = pad_open(L, err);
  if (rc)
    return rc;
  if (L->gpu && di.ndevices > 1 && !L->pad) /* offsets do not split */
    return refuse(L,
                  "its batch (values and offsets) goes to one device: use "
                  "one device per rank (devices=auto or a single device), or "
                  "pad (pad=max or pad=L: each device gets its samples' "
                  "padded rows and lengths)",
                  err);
  L->ragged_cap = calloc((size_t)m->nvars, sizeof *L->ragged_cap);
  L->rstat = calloc((size_t)m->nvars, sizeof *L->rstat);
  L->offs_of = calloc((size_t)m->nvars, sizeof *L->offs_of);
  if (!L->ragged_cap || !L->rstat || !L->offs_of)
    return ferry__oom(err, L->rank,
                      (size_t)m->nvars * (sizeof *L->ragged_cap +
                                          sizeof *L->rstat + sizeof(int)),
                      "the ragged variables of dataset %s", m->spec);
  find_groups(L);
  size_t bytes = 0, mean = 0;
  for (int v = 0; v < m->nvars; v++) {
    const ferry__var *x = &m->vars[v];
    if (!x->ragged) {
      bytes += (size_t)B * x->row_bytes;
      mean += x->row_bytes;
      continue;
    }
    /* without pad a slot holds the B longest samples (their sum, in the
     * same pass); with pad, B x the width */
    rc = scan_lengths(m, v, L->pad ? 0 : B, &L->rstat[v], &L->ragged_cap[v],
                      err, L->rank);
    if (!rc && L->pad)
      rc = pad_cap(L, v, &L->ragged_cap[v], err);
    if (rc)
      return rc;
    int64_t rows = L->rstat[v].total;
    bytes += (size_t)L->ragged_cap[v] * x->row_bytes + FERRY__RAGGED_HEAD(B);
    mean +=
        (size_t)((double)rows / (double)(m->num_samples ? m->num_samples : 1) *
                 (double)x->row_bytes) +
        sizeof(int64_t);
  }
  L->batch_bytes = bytes;
  L->sample_mean = mean ? mean : 1;
  return 0;
}

/* After the chunks are made: the most bytes per sample of any chunk (every
 * variable), which bounds the bytes of any set of whole chunks. */
void ferry__ragged_bound(ferry_loader *L) {
  if (!L->ragged)
    return;
  size_t most = 1, cap = 1;
  for (int64_t c = 0; c < L->nchunks; c++) {
    ferry__chunk k = ferry__chunk_get(&L->chunks, c);
    ferry__extent x = {.part = k.part, .row = k.row, .count = k.count};
    size_t b = ferry__extent_var_off(L, &x, L->m.nvars);
    size_t per = k.count ? (b + (size_t)k.count - 1) / (size_t)k.count : 0;
    if (per > most)
      most = per;
    if (b > cap)
      cap = b;
    for (int v = 0; L->m.roff_map && v < L->m.nvars; v++)
      if (L->m.vars[v].ragged) { /* the two pages (and the kernel's
                                  * fault-around) this chunk touched */
        const int64_t *o = L->m.parts[k.part].roff[v];
        ferry__manifest_trim_near(&L->m, o + k.row);
        ferry__manifest_trim_near(&L->m, o + k.row + k.count);
      }
  }
  ferry__manifest_trim(&L->m, NULL, NULL);
  L->sample_bound = most;
  /* read buffers in 16 sizes up to the largest chunk's: the pool reuses a
   * buffer of the exact size only, and every extent of a ragged variable
   * has its own (a malloc and fresh pages per extent) */
  L->buf_quantum = cap / 16 > 4096 ? cap / 16 : 4096;
}

size_t ferry__extent_buf_bytes(const ferry_loader *L, const ferry__extent *x) {
  size_t b = ferry__extent_var_off(L, x, L->m.nvars);
  if (!L->ragged || !L->buf_quantum)
    return b ? b : 1;
  return (b + L->buf_quantum - 1) / L->buf_quantum * L->buf_quantum;
}

size_t ferry__extent_var_off(const ferry_loader *L, const ferry__extent *x,
                             int v) {
  if (!L->ragged)
    return (size_t)x->count *
           (v < L->m.nvars ? L->var_prefix[v] : L->row_total);
  const ferry__part *pt = &L->m.parts[x->part];
  size_t off = 0;
  for (int u = 0; u < v; u++)
    off += (size_t)ferry__part_rows(pt, u, x->row, x->count) *
           L->m.vars[u].row_bytes;
  return off;
}

/* ---- Slots sized per epoch ---------------------------------------------- */

enum { WALK_BLOCK = 256 };

/* Positions of this rank's plan in served order, a block at a time: a
 * bucketed plan's through its cache (tokens.c), a plan with runs computed,
 * a sampling plan's from its windows (one window held in wbuf). */
typedef struct walk {
  const ferry_loader *L;
  const epoch_state *ep;
  ferry__slot *wbuf;
  int64_t w; /* the window in wbuf, -1 none */
} walk;

/* Up to n slots from position i0 (inside one batch) into out: how many
 * (at least 1), or FERRY_ENOMEM. */
static int64_t walk_slots(walk *k, int64_t i0, int64_t n, ferry__slot *out) {
  const ferry__rank_plan *p = &k->ep->plan;
  if (p->bucket_pos) {
    ferry__tokens_slots(k->L, p, k->ep->epoch, k->ep->tokc, i0, n, out);
    return n;
  }
  if (ferry__plan_slots_computed(p))
    return ferry__plan_slots_get(p, i0, n, out) ? FERRY_ENOMEM : n;
  int64_t w = ferry__plan_window_of(p, i0);
  if (w != k->w) {
    if (ferry__plan_window_slots(p, w, k->wbuf))
      return FERRY_ENOMEM;
    k->w = w;
  }
  int64_t j0 = i0 - p->window_first_slot[w], left = p->window_samples[w] - j0;
  int64_t take = n < left ? n : left;
  memcpy(out, k->wbuf + j0, (size_t)take * sizeof *out);
  return take;
}

/* Batch [b0, b1)'s rows of each group's first variable into rows[]
 * (pad=max: its samples, or batch_size with several devices, times its
 * longest).  Returns 0 or FERRY_ENOMEM. */
static int batch_rows(walk *k, int64_t b0, int64_t b1, int full, int64_t *sum,
                      int64_t *most, int64_t *rows) {
  const ferry_loader *L = k->L;
  const ferry__rank_plan *p = &k->ep->plan;
  int nv = L->m.nvars;
  ferry__slot sl[WALK_BLOCK];
  for (int v = 0; v < nv; v++)
    sum[v] = most[v] = 0;
  for (int64_t i0 = b0; i0 < b1;) {
    int64_t want = b1 - i0 < WALK_BLOCK ? b1 - i0 : WALK_BLOCK;
    int64_t got = walk_slots(k, i0, want, sl);
    if (got <= 0)
      return FERRY_ENOMEM;
    for (int v = 0; v < nv; v++) {
      if (L->offs_of[v] != v)
        continue;
      for (int64_t j = 0; j < got; j++) {
        const ferry__extent *x = &p->extents[sl[j].extent];
        const int64_t *ro = L->m.parts[x->part].roff[v] + x->row + sl[j].row;
        int64_t len = ro[1] - ro[0];
        sum[v] += len;
        most[v] = len > most[v] ? len : most[v];
      }
    }
    i0 += got;
  }
  for (int v = 0; v < nv; v++)
    if (L->offs_of[v] == v)
      rows[v] =
          L->pad ? (full ? L->opts->batch_size : b1 - b0) * most[v] : sum[v];
  return 0;
}

/* One thread's share of the walk: batches [b0, b1), its window buffer
 * (a sampling plan's), its largest rows per variable and its largest
 * batch. */
typedef struct walk_job {
  walk k;
  int64_t b0, b1;
  int full, rc;
  int64_t *a; /* [4 nvars]: need, then batch_rows' scratch */
  ferry__ring_need best;
} walk_job;

static void *walk_main(void *arg) {
  walk_job *j = arg;
  const ferry_loader *L = j->k.L;
  const ferry__rank_plan *p = &j->k.ep->plan;
  int nv = L->m.nvars;
  int64_t *need = j->a, *sum = j->a + nv, *most = j->a + 2 * nv,
          *rows = j->a + 3 * nv;
  for (int64_t b = j->b0; !j->rc && b < j->b1; b++) {
    int64_t s0 = ferry__plan_batch_start(p, b),
            s1 = ferry__plan_batch_start(p, b + 1);
    j->rc = batch_rows(&j->k, s0, s1, j->full, sum, most, rows);
    size_t bytes = 0;
    for (int v = 0; !j->rc && v < nv; v++) {
      int g = L->offs_of[v];
      if (g < 0)
        continue;
      need[v] = rows[g] > need[v] ? rows[g] : need[v];
      bytes += (size_t)rows[g] * L->m.vars[v].row_bytes;
    }
    if (!j->rc && (j->best.batch < 0 || bytes > j->best.bytes))
      j->best = (ferry__ring_need){b, s1 - s0, bytes};
    if (((b - j->b0) & 255) == 255) /* mapped offsets: the pages read */
      ferry__manifest_trim(&L->m, NULL, NULL);
  }
  return NULL;
}

/* Threads for the walk: the loader's workers (not started yet), each
 * with 16 batches at least; a bucketed plan's slots come through one cache
 * of two buckets, so its walk stays on one thread. */
static int walk_threads(const ferry_loader *L, const ferry__rank_plan *p) {
  int64_t t = p->num_batches / 16 + 1;
  if (p->bucket_pos || t < 1)
    return 1;
  return t < L->nthreads ? (int)t : (L->nthreads > 0 ? L->nthreads : 1);
}

int ferry__ragged_epoch(ferry_loader *L, epoch_state *ep, ferry__err *err) {
  if (!L->ragged || L->pad == 2) /* pad=L: every batch is B x L rows */
    return 0;
  const ferry__rank_plan *p = &ep->plan;
  int nv = L->m.nvars, full = 0, T = walk_threads(L, p), started = 0;
  if (L->gpu) { /* several devices: each gets batch_size / ndev samples */
    ferry_device_info di;
    memset(&di, 0, sizeof di);
    ferry__gpu_info(L->gpu, &di);
    full = di.ndevices > 1;
  }
  int wbufs = !p->bucket_pos && !ferry__plan_slots_computed(p);
  int64_t wmax = wbufs ? ferry__plan_window_max(p) : 0;
  walk_job *jobs = calloc((size_t)T, sizeof *jobs);
  pthread_t *tid = calloc((size_t)T, sizeof *tid);
  int rc = jobs && tid ? 0 : FERRY_ENOMEM;
  for (int t = 0; !rc && t < T; t++) {
    walk_job *j = &jobs[t];
    *j = (walk_job){.k = {L, ep, NULL, -1},
                    .b0 = p->num_batches * t / T,
                    .b1 = p->num_batches * (t + 1) / T,
                    .full = full,
                    .best = {.batch = -1}};
    j->a = calloc(4 * (size_t)nv, sizeof *j->a);
    if (wbufs)
      j->k.wbuf = malloc((size_t)(wmax > 0 ? wmax : 1) * sizeof *j->k.wbuf);
    rc = !j->a || (wbufs && !j->k.wbuf) ? FERRY_ENOMEM : 0;
  }
  for (int t = 1; !rc && t < T; t++, started++) /* job 0 on this thread */
    if (pthread_create(&tid[t], NULL, walk_main, &jobs[t]) != 0)
      break;
  if (!rc)
    walk_main(&jobs[0]);
  for (int t = 1; t <= started; t++)
    pthread_join(tid[t], NULL);
  for (int t = started + 1; !rc && t < T; t++) /* threads not started */
    walk_main(&jobs[t]);
  ferry__manifest_trim(&L->m, NULL, NULL);
  ferry__ring_need best = {.batch = -1};
  for (int t = 0; !rc && t < T; t++) {
    rc = jobs[t].rc;
    for (int v = 0; v < nv; v++)
      if (jobs[t].a[v] > jobs[0].a[v])
        jobs[0].a[v] = jobs[t].a[v];
    if (jobs[t].best.batch >= 0 &&
        (best.batch < 0 || jobs[t].best.bytes > best.bytes))
      best = jobs[t].best;
  }
  if (!rc)
    rc = ferry__ring_resize(L, jobs[0].a, ep->epoch, &best, err);
  else
    rc = ferry__oom(err, L->rank,
                    (size_t)T * ((size_t)wmax * sizeof(ferry__slot) +
                                 4 * (size_t)nv * sizeof(int64_t)),
                    "dataset %s, epoch %lld: the lengths of the epoch's "
                    "batches (%d threads)",
                    L->m.spec, (long long)ep->epoch, T);
  for (int t = 0; jobs && t < T; t++) {
    free(jobs[t].a);
    free(jobs[t].k.wbuf);
  }
  free(jobs);
  free(tid);
  return rc;
}
