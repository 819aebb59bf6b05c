/*
 * image/probe.c - what an image's headers say, without decoding it: the
 * format, the size, the components and (JPEG) the frame type, the sampling
 * factors and the Adobe marker that says whether CMYK is stored inverted
 * (TurboJPEG 2.1's API tells none of the three).  A JPEG's markers are
 * walked up to the first scan; a PNG's IHDR chunk is read.  Every length
 * is checked against what is left of the bytes.  The spec's defaults and
 * checks live here too.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "image/image.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int say(char *why, size_t wl, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int say(char *why, size_t wl, int code, const char *fmt, ...) {
  if (why && wl) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, wl, fmt, ap);
    va_end(ap);
  }
  return code;
}

static uint32_t be16(const unsigned char *p) {
  return (uint32_t)p[0] << 8 | (uint32_t)p[1];
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

static int check_sides(uint32_t w, uint32_t h, const char *what, char *why,
                       size_t wl) {
  if (w == 0 || h == 0)
    return say(why, wl, FERRY_EFORMAT, "%s: image of %ux%u pixels", what, w, h);
  if (w > FERRY__IMG_MAX_SIDE || h > FERRY__IMG_MAX_SIDE)
    return say(why, wl, FERRY_EFORMAT,
               "%s: image of %ux%u pixels: a side above %u is refused", what, w,
               h, FERRY__IMG_MAX_SIDE);
  return 0;
}

static void subsampling_name(ferry__img_info *o) {
  const char *s = "other";
  if (o->channels == 1)
    s = "gray";
  else if (o->h_samp == 1 && o->v_samp == 1)
    s = "4:4:4";
  else if (o->h_samp == 2 && o->v_samp == 1)
    s = "4:2:2";
  else if (o->h_samp == 2 && o->v_samp == 2)
    s = "4:2:0";
  else if (o->h_samp == 1 && o->v_samp == 2)
    s = "4:4:0";
  else if (o->h_samp == 4 && o->v_samp == 1)
    s = "4:1:1";
  snprintf(o->subsampling, sizeof o->subsampling, "%s", s);
}

static int is_sof(unsigned m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

static int probe_jpeg(const unsigned char *p, size_t n, ferry__img_info *o,
                      char *why, size_t wl) {
  size_t pos = 2;
  int have_sof = 0;
  o->format = FERRY__IMG_JPEG;
  o->adobe_transform = -1;
  for (;;) {
    if (pos >= n)
      return say(why, wl, FERRY_EFORMAT,
                 "JPEG: truncated at byte %zu, before the first scan", pos);
    if (p[pos] != 0xFF)
      return say(why, wl, FERRY_EFORMAT,
                 "JPEG: byte %zu is 0x%02x where a marker should start", pos,
                 p[pos]);
    while (pos < n && p[pos] == 0xFF)
      pos++;
    if (pos >= n)
      return say(why, wl, FERRY_EFORMAT, "JPEG: truncated inside a marker");
    unsigned m = p[pos++];
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7))
      continue; /* no length */
    if (m == 0xD8 || m == 0xD9 || m == 0x00)
      return say(why, wl, FERRY_EFORMAT,
                 "JPEG: marker 0x%02x at byte %zu before the first scan", m,
                 pos - 1);
    if (n - pos < 2)
      return say(why, wl, FERRY_EFORMAT,
                 "JPEG: truncated in the length of marker 0x%02x", m);
    size_t len = be16(p + pos);
    if (len < 2 || len > n - pos)
      return say(why, wl, FERRY_EFORMAT,
                 "JPEG: marker 0x%02x at byte %zu claims %zu bytes, %zu left",
                 m, pos - 1, len, n - pos);
    const unsigned char *seg = p + pos + 2;
    size_t sl = len - 2;
    if (is_sof(m)) {
      if (have_sof)
        return say(why, wl, FERRY_EFORMAT, "JPEG: two frame headers");
      if (sl < 6)
        return say(why, wl, FERRY_EFORMAT, "JPEG: frame header of %zu bytes",
                   sl);
      unsigned nf = seg[5];
      if (nf == 0 || sl != 6 + 3 * (size_t)nf)
        return say(why, wl, FERRY_EFORMAT,
                   "JPEG: frame header of %zu bytes for %u components", sl, nf);
      if (m == 0xC3 || m == 0xC7 || m == 0xCB || m == 0xCF)
        return say(why, wl, FERRY_ENOTSUP, "JPEG: lossless JPEG (SOF%u)",
                   m - 0xC0);
      o->bit_depth = seg[0];
      if (o->bit_depth != 8)
        return say(why, wl, o->bit_depth == 12 ? FERRY_ENOTSUP : FERRY_EFORMAT,
                   "JPEG: %d-bit samples (8-bit only)", o->bit_depth);
      o->height = be16(seg + 1);
      o->width = be16(seg + 3);
      if (o->height == 0)
        return say(why, wl, FERRY_EFORMAT,
                   "JPEG: height 0 (a DNL marker): not supported");
      if (nf != 1 && nf != 3 && nf != 4)
        return say(why, wl, FERRY_EFORMAT, "JPEG: %u components", nf);
      o->channels = (int)nf;
      o->cmyk = nf == 4;
      o->progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
      o->arithmetic = m >= 0xC9;
      int h0 = seg[7] >> 4, v0 = seg[7] & 15;
      if (h0 < 1 || h0 > 4 || v0 < 1 || v0 > 4)
        return say(why, wl, FERRY_EFORMAT, "JPEG: sampling factors %dx%d", h0,
                   v0);
      o->h_samp = 1;
      o->v_samp = 1;
      if (nf > 1) {
        int h1 = seg[10] >> 4, v1 = seg[10] & 15;
        if (h1 >= 1 && v1 >= 1 && h0 % h1 == 0 && v0 % v1 == 0) {
          o->h_samp = h0 / h1;
          o->v_samp = v0 / v1;
        } else {
          o->h_samp = 0;
          o->v_samp = 0;
        }
      }
      subsampling_name(o);
      have_sof = 1;
    } else if (m == 0xEE && sl >= 12 && memcmp(seg, "Adobe", 5) == 0) {
      o->adobe = 1;
      o->adobe_transform = seg[11];
    } else if (m == 0xDA) {
      if (!have_sof)
        return say(why, wl, FERRY_EFORMAT, "JPEG: a scan before the frame");
      return check_sides(o->width, o->height, "JPEG", why, wl);
    }
    pos += len;
  }
}

static int probe_png(const unsigned char *p, size_t n, ferry__img_info *o,
                     char *why, size_t wl) {
  o->format = FERRY__IMG_PNG;
  if (n < 8 + 8 + 13)
    return say(why, wl, FERRY_EFORMAT, "PNG: %zu bytes, truncated header", n);
  if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
    return say(why, wl, FERRY_EFORMAT, "PNG: the first chunk is not IHDR");
  const unsigned char *h = p + 16;
  uint32_t w = be32(h), hh = be32(h + 4);
  if (w > 0x7fffffffu || hh > 0x7fffffffu)
    return say(why, wl, FERRY_EFORMAT, "PNG: size %ux%u", w, hh);
  o->width = w;
  o->height = hh;
  o->bit_depth = h[8];
  o->png_color_type = h[9];
  o->png_interlaced = h[12] == 1;
  int d = o->bit_depth, ok;
  switch (o->png_color_type) {
  case 0:
    ok = d == 1 || d == 2 || d == 4 || d == 8 || d == 16;
    o->channels = 1;
    break;
  case 3:
    ok = d == 1 || d == 2 || d == 4 || d == 8;
    o->channels = 3;
    break;
  case 2:
  case 4:
  case 6:
    ok = d == 8 || d == 16;
    o->channels = o->png_color_type == 2 ? 3 : o->png_color_type == 4 ? 2 : 4;
    break;
  default:
    return say(why, wl, FERRY_EFORMAT, "PNG: color type %d", o->png_color_type);
  }
  if (!ok)
    return say(why, wl, FERRY_EFORMAT, "PNG: bit depth %d with color type %d",
               d, o->png_color_type);
  if (h[10] != 0 || h[11] != 0 || h[12] > 1)
    return say(why, wl, FERRY_EFORMAT,
               "PNG: compression %d, filter %d, interlace %d", h[10], h[11],
               h[12]);
  snprintf(o->subsampling, sizeof o->subsampling, "%s", "4:4:4");
  o->h_samp = o->v_samp = 1;
  o->adobe_transform = -1;
  return check_sides(w, hh, "PNG", why, wl);
}

int ferry__img_probe(const unsigned char *p, size_t n, ferry__img_info *out,
                     char *why, size_t wl) {
  if (!out || (!p && n))
    return say(why, wl, FERRY_EINVAL, "image probe: NULL argument");
  memset(out, 0, sizeof *out);
  if (why && wl)
    why[0] = '\0';
  static const unsigned char png_sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF)
    return probe_jpeg(p, n, out, why, wl);
  if (n >= 8 && memcmp(p, png_sig, 8) == 0)
    return probe_png(p, n, out, why, wl);
  return say(why, wl, FERRY_EFORMAT,
             "not a JPEG or PNG image (%zu bytes%s%02x %02x)", n,
             n >= 2 ? ", starting " : "", n >= 1 ? p[0] : 0, n >= 2 ? p[1] : 0);
}

void ferry__img_spec_init(ferry__img_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->height = spec->width = 224;
  spec->channels = 3;
  spec->layout = FERRY__IMG_HWC_U8;
  spec->resize = FERRY__IMG_RESIZE_NONE;
  spec->crop = FERRY__IMG_CROP_NONE;
  spec->scale_min = 0.08;
  spec->scale_max = 1.0;
  spec->ratio_min = 3.0 / 4.0;
  spec->ratio_max = 4.0 / 3.0;
  spec->flip = 1;
  for (int c = 0; c < 3; c++) {
    spec->mean[c] = 0.0f;
    spec->std[c] = 1.0f;
  }
  spec->dct_scale = 1;
  spec->max_pixels = FERRY__IMG_MAX_PIXELS;
  spec->crop_decode = 1;
}

int ferry__img_spec_check(const ferry__img_spec *s, char *why, size_t wl) {
  if (!s)
    return say(why, wl, FERRY_EINVAL, "image spec: NULL");
  if (s->height < 1 || s->width < 1 || s->height > FERRY__IMG_MAX_SIDE ||
      s->width > FERRY__IMG_MAX_SIDE)
    return say(why, wl, FERRY_EINVAL,
               "image spec: output %ux%u (each side 1 to %u)", s->width,
               s->height, FERRY__IMG_MAX_SIDE);
  if (s->channels != 1 && s->channels != 3)
    return say(why, wl, FERRY_EINVAL, "image spec: %d channels (1 or 3)",
               s->channels);
  if (s->layout != FERRY__IMG_HWC_U8 && s->layout != FERRY__IMG_CHW_F32)
    return say(why, wl, FERRY_EINVAL, "image spec: layout %d", s->layout);
  if (s->resize < FERRY__IMG_RESIZE_NONE || s->resize > FERRY__IMG_RESIZE_EXACT)
    return say(why, wl, FERRY_EINVAL, "image spec: resize %d", s->resize);
  if (s->crop < FERRY__IMG_CROP_NONE || s->crop > FERRY__IMG_CROP_RANDOM)
    return say(why, wl, FERRY_EINVAL, "image spec: crop %d", s->crop);
  if (s->resize == FERRY__IMG_RESIZE_SHORTER &&
      (s->resize_to < 1 || s->resize_to > FERRY__IMG_MAX_SIDE))
    return say(why, wl, FERRY_EINVAL, "image spec: resize to %u (1 to %u)",
               s->resize_to, FERRY__IMG_MAX_SIDE);
  if (s->resize == FERRY__IMG_RESIZE_SHORTER && s->crop == FERRY__IMG_CROP_NONE)
    return say(why, wl, FERRY_EINVAL,
               "image spec: resize to a shorter side needs a crop (the "
               "output's shape is fixed)");
  if (s->resize == FERRY__IMG_RESIZE_EXACT && s->crop != FERRY__IMG_CROP_NONE)
    return say(why, wl, FERRY_EINVAL,
               "image spec: an exact resize is the output: no crop");
  if (s->crop == FERRY__IMG_CROP_RANDOM && s->resize != FERRY__IMG_RESIZE_NONE)
    return say(why, wl, FERRY_EINVAL,
               "image spec: a random crop resizes its box: no resize");
  if (s->crop == FERRY__IMG_CROP_RANDOM &&
      !(s->scale_min > 0 && s->scale_min <= s->scale_max && s->scale_max <= 1 &&
        s->ratio_min > 0 && s->ratio_min <= s->ratio_max && s->ratio_max < 1e6))
    return say(why, wl, FERRY_EINVAL,
               "image spec: random crop scale (%g, %g), ratio (%g, %g)",
               s->scale_min, s->scale_max, s->ratio_min, s->ratio_max);
  for (int c = 0; c < s->channels; c++)
    if (!(s->std[c] > 0 || s->std[c] < 0) || s->mean[c] != s->mean[c])
      return say(why, wl, FERRY_EINVAL, "image spec: mean %g, std %g",
                 (double)s->mean[c], (double)s->std[c]);
  if (s->max_pixels < 1 || s->max_pixels > FERRY__IMG_MAX_PIXELS)
    return say(why, wl, FERRY_EINVAL, "image spec: max_pixels %llu (1 to %llu)",
               (unsigned long long)s->max_pixels,
               (unsigned long long)FERRY__IMG_MAX_PIXELS);
  return 0;
}
