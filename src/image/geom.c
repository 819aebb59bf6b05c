/*
 * image/geom.c - where an output pixel comes from: torchvision's rules,
 * reproduced exactly so that a decode at full size gives torchvision's
 * pixels.  Resize(S) keeps the aspect: the shorter side becomes S, the
 * longer int(S * long / short).  CenterCrop's offset is Python's
 * round((size - crop) / 2), half to even, and pads with zeros where the
 * image is smaller.  RandomResizedCrop draws up to ten (area fraction,
 * log aspect) pairs uniformly from (scale, log ratio), keeps the first whose
 * rounded box fits, places it uniformly, else falls back to the central
 * crop clamped to the ratio range; the flip is one more draw.  The draws
 * come from util's counter-based generator keyed by the seed (stream
 * "img"), so a seed gives one geometry on every thread and platform.
 *
 * The JPEG DCT scale is chosen here too: the smallest M/8 (M = 1, 2, 4:
 * the scales with SIMD IDCTs) at which the box is still at least as large
 * as its resized size on both axes, so the bilinear filter only ever
 * shrinks; else the full size.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "image/image.h"
#include "util/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The generator's stream for image geometry: "img" in ASCII. */
#define IMG_STREAM 0x696d67ull

static double uniform(uint64_t key, uint64_t counter, double lo, double hi) {
  double u = (double)(ferry__rand64(key, counter) >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

/* A uniform integer in [0, n), n >= 1. */
static int64_t below(uint64_t key, uint64_t counter, int64_t n) {
  uint64_t r = ferry__rand64(key, counter);
  return (int64_t)(((unsigned __int128)r * (uint64_t)n) >> 64);
}

/* Python's round(): half to even (the default rounding mode). */
static int64_t round_even(double x) { return (int64_t)nearbyint(x); }

static void random_box(int64_t W, int64_t H, const ferry__img_spec *s,
                       uint64_t key, ferry__img_geom *g) {
  double area = (double)H * (double)W;
  double lr0 = log(s->ratio_min), lr1 = log(s->ratio_max);
  for (int a = 0; a < 10; a++) {
    double target =
        area * uniform(key, 4u * (unsigned)a, s->scale_min, s->scale_max);
    double aspect = exp(uniform(key, 4u * (unsigned)a + 1, lr0, lr1));
    int64_t w = round_even(sqrt(target * aspect));
    int64_t h = round_even(sqrt(target / aspect));
    if (w > 0 && w <= W && h > 0 && h <= H) {
      g->box_y = below(key, 4u * (unsigned)a + 2, H - h + 1);
      g->box_x = below(key, 4u * (unsigned)a + 3, W - w + 1);
      g->box_w = w;
      g->box_h = h;
      g->attempts = a + 1;
      return;
    }
  }
  double in_ratio = (double)W / (double)H;
  int64_t w = W, h = H;
  if (in_ratio < s->ratio_min)
    h = round_even((double)w / s->ratio_min);
  else if (in_ratio > s->ratio_max)
    w = round_even((double)h * s->ratio_max);
  if (h < 1)
    h = 1;
  if (w < 1)
    w = 1;
  g->box_w = w;
  g->box_h = h;
  g->box_y = (H - h) / 2;
  g->box_x = (W - w) / 2;
  g->attempts = 0;
}

static int64_t center_offset(int64_t have, int64_t want) {
  if (want > have)
    return -((want - have) / 2);
  return round_even((double)(have - want) / 2.0);
}

int ferry__img_plan(const ferry__img_info *info, const ferry__img_spec *s,
                    uint64_t seed, ferry__img_geom *g, char *why, size_t wl) {
  int rc = ferry__img_spec_check(s, why, wl);
  if (rc)
    return rc;
  if (!info || !g) {
    if (why && wl)
      snprintf(why, wl, "image plan: NULL argument");
    return FERRY_EINVAL;
  }
  memset(g, 0, sizeof *g);
  int64_t W = info->width, H = info->height;
  if (W < 1 || H < 1) {
    if (why && wl)
      snprintf(why, wl, "image plan: image of %lldx%lld pixels", (long long)W,
               (long long)H);
    return FERRY_EINVAL;
  }
  int64_t ow = s->width, oh = s->height;
  g->box_w = W;
  g->box_h = H;
  g->resized_w = W;
  g->resized_h = H;
  if (s->resize == FERRY__IMG_RESIZE_EXACT) {
    g->resized_w = ow;
    g->resized_h = oh;
  } else if (s->resize == FERRY__IMG_RESIZE_SHORTER) {
    int64_t S = s->resize_to;
    int64_t sh = W <= H ? W : H, lg = W <= H ? H : W;
    int64_t nl = (int64_t)((double)(S * lg) / (double)sh);
    if (nl < 1)
      nl = 1;
    g->resized_w = W <= H ? S : nl;
    g->resized_h = W <= H ? nl : S;
  }
  if (s->crop == FERRY__IMG_CROP_RANDOM) {
    uint64_t key = ferry__rand_key(seed, IMG_STREAM, 0, 0);
    random_box(W, H, s, key, g);
    g->resized_w = ow;
    g->resized_h = oh;
    g->flip = s->flip ? (ferry__rand64(key, 40) >> 63) != 0 : 0;
  } else if (s->crop == FERRY__IMG_CROP_CENTER) {
    g->off_x = center_offset(g->resized_w, ow);
    g->off_y = center_offset(g->resized_h, oh);
  } else if (g->resized_w != ow || g->resized_h != oh) {
    if (why && wl)
      snprintf(why, wl,
               "image of %lldx%lld pixels: the output is %lldx%lld, and the "
               "spec has neither resize nor crop",
               (long long)W, (long long)H, (long long)ow, (long long)oh);
    return FERRY_ESHAPE;
  }
  /* The DCT scale: the smallest M/8 of 1/8, 2/8 and 4/8 that keeps the
   * box at least as large as its resized size, else 8/8.  Only those have
   * libjpeg-turbo's SIMD IDCTs: 7/8, 6/8, 5/8 and 3/8 run plain C scaled
   * IDCTs and cost more than the full decode (docs/image-decode.md). */
  g->scale_num = 8;
  if (s->dct_scale && info->format == FERRY__IMG_JPEG) {
    static const int fast[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
      int m = fast[i];
      if (g->box_w * m >= 8 * g->resized_w &&
          g->box_h * m >= 8 * g->resized_h) {
        g->scale_num = m;
        break;
      }
    }
  }
  return 0;
}
