/*
 * info_images.c - what `ferry info DATASET --decode VARS` says about the
 * images: the headers of a seeded sample of them (ferry_image_probe, no
 * pixel decoded), summarised per decoded variable: formats, width and
 * height (min, median, max), channels, JPEG subsampling, progressive
 * (or interlaced) count, encoded bytes, and the images whose headers are
 * bad.  Rank 0 reads them; a few hundred headers cost a few hundred small
 * reads, so it is on by default with decode= (--probe 0 turns it off).
 * The sample is drawn from the seed option, so two runs probe the same
 * images.
 */
#include "info_images.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* k distinct samples of [0, n), sorted: all of them when k >= n, else
 * Floyd's draw keyed by seed.  NULL when out of memory. */
static int64_t *draw(int64_t n, int64_t k, uint64_t seed) {
  int64_t *s = malloc((size_t)(k > 0 ? k : 1) * sizeof *s);
  if (!s)
    return NULL;
  if (k >= n) {
    for (int64_t i = 0; i < n; i++)
      s[i] = i;
    return s;
  }
  int64_t m = 0;
  for (int64_t j = n - k; j < n; j++) {
    int64_t t = (int64_t)(mix64(seed ^ mix64((uint64_t)j)) % (uint64_t)(j + 1)),
            seen = 0;
    for (int64_t i = 0; i < m && !seen; i++) /* k is a few hundred */
      seen = s[i] == t;
    s[m++] = seen ? j : t;
  }
  qsort(s, (size_t)k, sizeof *s, cmp_i64);
  return s;
}

static void add_count(info_count *c, int *n, const char *key) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(c[i].key, key)) {
      c[i].n++;
      return;
    }
  if (*n < INFO_KEYS) {
    snprintf(c[*n].key, sizeof c[*n].key, "%s", key);
    c[(*n)++].n = 1;
  }
}

/* min, median, max of v[0, n) (sorted here). */
static void spread(int64_t *v, int64_t n, int64_t out[3]) {
  if (n == 0) {
    out[0] = out[1] = out[2] = 0;
    return;
  }
  qsort(v, (size_t)n, sizeof *v, cmp_i64);
  out[0] = v[0];
  out[1] = v[n / 2];
  out[2] = v[n - 1];
}

static void summarise(info_var_images *iv, const ferry_image_info *r, int64_t k,
                      int64_t *scratch) {
  int64_t *w = scratch, *h = scratch + k, *b = scratch + 2 * k, good = 0;
  for (int64_t i = 0; i < k; i++) {
    char key[16];
    if (r[i].status) {
      if (!iv->bad++)
        snprintf(iv->first_bad, sizeof iv->first_bad, "%s", r[i].message);
      continue;
    }
    w[good] = r[i].width;
    h[good] = r[i].height;
    b[good++] = r[i].bytes;
    add_count(iv->formats, &iv->nformats, r[i].format);
    snprintf(key, sizeof key, "%d", r[i].channels);
    add_count(iv->channels, &iv->nchannels, key);
    if (r[i].subsampling[0])
      add_count(iv->sampling, &iv->nsampling, r[i].subsampling);
    iv->progressive += r[i].progressive != 0;
  }
  spread(w, good, iv->width);
  spread(h, good, iv->height);
  spread(b, good, iv->bytes);
}

int info_images_probe(const tool_ctx *ctx, ferry_loader *L, int64_t probe,
                      info_images *out) {
  char decode[256], seedv[32];
  memset(out, 0, sizeof *out);
  out->probe = probe;
  if (!*tool_option(ctx, "decode", decode, sizeof decode) || probe <= 0)
    return 0;
  out->on = 1;
  out->samples = ferry_num_samples(L);
  out->seed = strtoull(tool_option(ctx, "seed", seedv, sizeof seedv), NULL, 0);
  int64_t k = probe < out->samples ? probe : out->samples;
  int64_t *s = draw(out->samples, k, out->seed);
  ferry_image_info *r = calloc((size_t)(k > 0 ? k : 1), sizeof *r);
  int64_t *scratch = malloc((size_t)(k > 0 ? 3 * k : 1) * sizeof *scratch);
  if (!s || !r || !scratch)
    tool_oom(ctx, (size_t)k * sizeof *r, "the probed images");
  out->probed = k;
  int rc = 0;
  for (int v = 0; rc == 0 && v < ferry_num_vars(L) && out->nvars < INFO_VARS;
       v++) {
    ferry_var_info vi;
    if (ferry_var_info_get(L, v, &vi) != 0)
      continue;
    /* a decoded variable is one of decode='s names */
    size_t len = strlen(vi.name);
    const char *p = decode;
    int named = 0;
    while (*p && !named) {
      const char *e = strchr(p, ',');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      named = n == len && !strncmp(p, vi.name, n);
      p = e ? e + 1 : p + n;
    }
    if (!named)
      continue;
    info_var_images *iv = &out->vars[out->nvars++];
    snprintf(iv->name, sizeof iv->name, "%s", vi.name);
    if ((rc = ferry_image_probe(L, v, s, k, r)) == 0)
      summarise(iv, r, k, scratch);
  }
  free(s);
  free(r);
  free(scratch);
  return rc;
}

static void counts_text(const info_count *c, int n) {
  for (int i = 0; i < n; i++)
    printf("%s%s %" PRId64, i ? ", " : "", c[i].key[0] ? c[i].key : "?",
           c[i].n);
}

void info_images_text(const info_images *im) {
  if (!im->on)
    return;
  printf("images         headers of %" PRId64 " of %" PRId64
         " samples (%s; --probe K)\n",
         im->probed, im->samples,
         im->probed < im->samples ? "drawn from the seed" : "all");
  for (int i = 0; i < im->nvars; i++) {
    const info_var_images *v = &im->vars[i];
    printf("  %-12s formats: ", v->name);
    counts_text(v->formats, v->nformats);
    printf("; bad headers %" PRId64 "\n", v->bad);
    printf("  %-12s width %" PRId64 " / %" PRId64 " / %" PRId64
           ", height %" PRId64 " / %" PRId64 " / %" PRId64
           " (min / median / max)\n",
           "", v->width[0], v->width[1], v->width[2], v->height[0],
           v->height[1], v->height[2]);
    printf("  %-12s bytes %" PRId64 " / %" PRId64 " / %" PRId64 "; channels: ",
           "", v->bytes[0], v->bytes[1], v->bytes[2]);
    counts_text(v->channels, v->nchannels);
    printf("\n  %-12s subsampling: ", "");
    counts_text(v->sampling, v->nsampling);
    if (!v->nsampling)
      printf("none (no JPEG)");
    printf("; progressive or interlaced %" PRId64 "\n", v->progressive);
    if (v->bad)
      printf("  %-12s first bad: %s\n", "", v->first_bad);
  }
}

static void counts_json(const char *name, const info_count *c, int n) {
  printf(", \"%s\": {", name);
  for (int i = 0; i < n; i++) {
    printf("%s", i ? ", " : "");
    tool_json_string(stdout, c[i].key);
    printf(": %" PRId64, c[i].n);
  }
  printf("}");
}

void info_images_json(const info_images *im) {
  if (!im->on)
    return;
  printf(", \"images\": {\"samples\": %" PRId64 ", \"probed\": %" PRId64
         ", \"seed\": %" PRIu64 ", \"vars\": [",
         im->samples, im->probed, im->seed);
  for (int i = 0; i < im->nvars; i++) {
    const info_var_images *v = &im->vars[i];
    printf("%s{\"name\": ", i ? ", " : "");
    tool_json_string(stdout, v->name);
    printf(", \"bad\": %" PRId64 ", \"progressive\": %" PRId64, v->bad,
           v->progressive);
    const char *names[3] = {"width", "height", "bytes"};
    const int64_t *vals[3] = {v->width, v->height, v->bytes};
    for (int j = 0; j < 3; j++)
      printf(", \"%s\": {\"min\": %" PRId64 ", \"median\": %" PRId64
             ", \"max\": %" PRId64 "}",
             names[j], vals[j][0], vals[j][1], vals[j][2]);
    counts_json("formats", v->formats, v->nformats);
    counts_json("channels", v->channels, v->nchannels);
    counts_json("subsampling", v->sampling, v->nsampling);
    printf(", \"first_bad\": ");
    if (v->bad)
      tool_json_string(stdout, v->first_bad);
    else
      printf("null");
    printf("}");
  }
  printf("]}");
}
