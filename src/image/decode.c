/*
 * image/decode.c - one image from bytes to the spec's fixed shape: probe,
 * plan (geom.c), decode into the scratch's pixels with the requested
 * channels, resize the plan's box into the output (resize.c), convert to
 * float CHW when asked.
 *
 * JPEG: TurboJPEG's tjDecompress2 (libjpeg-turbo 2.x, the API Debian 12
 * ships; tj3 functions arrive with 3.0), the slow accurate integer IDCT
 * and fancy upsampling (its defaults, and Pillow's: the same library gives
 * the same pixels), stopping at the first warning (a truncated or corrupt
 * stream is an error, not grey rows) and limiting progressive scans.  The
 * DCT scale the plan chose is passed as the decoded size; colour and
 * grayscale JPEGs are decoded straight to RGB or gray (a colour JPEG
 * asked for gray: RGB, then Pillow's L), CMYK/YCCK ones to CMYK and
 * converted as Pillow converts them (inverted where an Adobe marker says
 * so).  TurboJPEG reports errors through its return codes and
 * tjGetErrorStr2, never stderr.
 *
 * PNG: libspng, decoded to RGBA8 (palette expanded, 16-bit samples to
 * their high byte, low bit depths scaled), then to the requested channels:
 * alpha dropped, gray replicated, RGB to gray with Pillow's L = (19595 R +
 * 38470 G + 7471 B + 2^15) >> 16; the chunks after the pixels are read
 * to IEND (CRCs checked), so a truncated file is refused.  libspng 0.7 has no
 * way to reset a context, so one is made per PNG (its only allocations per
 * image).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "image/image.h"
#include "util/util.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif
#ifdef HAVE_SPNG
#include <spng.h>
#endif

void ferry__img_scratch_init(ferry__img_scratch *s) { memset(s, 0, sizeof *s); }

void ferry__img_scratch_free(ferry__img_scratch *s) {
  if (!s)
    return;
#ifdef HAVE_TURBOJPEG
  if (s->tj)
    tjDestroy((tjhandle)s->tj);
#endif
  free(s->pix);
  free(s->rows);
  free(s->stage);
  free(s->kx);
  free(s->ky);
  free(s->bx);
  free(s->by);
  free(s->kd);
  free(s->acc);
  memset(s, 0, sizeof *s);
}

#if defined(HAVE_TURBOJPEG) || defined(HAVE_SPNG)
static unsigned char luma(const unsigned char *rgb) {
  return (unsigned char)((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u +
                          0x8000u) >>
                         16);
}

#ifdef HAVE_TURBOJPEG
/* Pillow's CMYK to RGB (libImaging/Convert.c, cmyk2rgb). */
static unsigned char cmyk_channel(unsigned v, unsigned nk) {
  unsigned t = v * nk + 128;
  int r = (int)nk - (int)(((t >> 8) + t) >> 8);
  return (unsigned char)(r < 0 ? 0 : r > 255 ? 255 : r);
}

/* In place: n pixels of 4 bytes to c bytes each (front to back, so the
 * writes never pass the reads). */
static void from_cmyk(unsigned char *px, size_t n, int c, int inverted) {
  for (size_t i = 0; i < n; i++) {
    unsigned char q[4], rgb[3];
    for (int j = 0; j < 4; j++)
      q[j] = (unsigned char)(inverted ? 255 - px[4 * i + (size_t)j]
                                      : px[4 * i + (size_t)j]);
    unsigned nk = 255u - q[3];
    for (int j = 0; j < 3; j++)
      rgb[j] = cmyk_channel(q[j], nk);
    if (c == 3)
      memcpy(px + 3 * i, rgb, 3);
    else
      px[i] = luma(rgb);
  }
}
#endif /* HAVE_TURBOJPEG */

#ifdef HAVE_SPNG
static void from_rgba(unsigned char *px, size_t n, int c, int gray_source) {
  if (c == 3) {
    for (size_t i = 0; i < n; i++) {
      unsigned char t[3] = {px[4 * i], px[4 * i + 1], px[4 * i + 2]};
      memcpy(px + 3 * i, t, 3);
    }
  } else {
    for (size_t i = 0; i < n; i++)
      px[i] = (unsigned char)(gray_source ? px[4 * i] : luma(px + 4 * i));
  }
}
#endif /* HAVE_SPNG */

#ifdef HAVE_TURBOJPEG
/* In place: n RGB pixels to Pillow's L. */
static void from_rgb(unsigned char *px, size_t n) {
  for (size_t i = 0; i < n; i++)
    px[i] = luma(px + 3 * i);
}
#endif /* HAVE_TURBOJPEG */
#endif /* HAVE_TURBOJPEG || HAVE_SPNG */

static int decode_jpeg(const unsigned char *p, size_t n,
                       const ferry__img_info *info, int num, int c,
                       ferry__img_scratch *s, int64_t *dw, int64_t *dh,
                       double *fx, double *fy, char *why, size_t wl) {
#ifdef HAVE_TURBOJPEG
  if (!s->tj) {
    s->tj = tjInitDecompress();
    if (!s->tj) {
      snprintf(why, wl, "JPEG: tjInitDecompress: %s", tjGetErrorStr2(NULL));
      return FERRY_ENOMEM;
    }
  }
  tjhandle tj = (tjhandle)s->tj;
  int w, h, sub, cs;
#if SIZE_MAX > ULONG_MAX
  if (n > ULONG_MAX) {
    snprintf(why, wl, "JPEG: %zu bytes", n);
    return FERRY_EFORMAT;
  }
#endif
  if (tjDecompressHeader3(tj, p, (unsigned long)n, &w, &h, &sub, &cs) != 0) {
    snprintf(why, wl, "JPEG: %s", tjGetErrorStr2(tj));
    return FERRY_EFORMAT;
  }
  if ((uint32_t)w != info->width || (uint32_t)h != info->height) {
    snprintf(why, wl, "JPEG: the frame says %ux%u, the decoder %dx%d",
             info->width, info->height, w, h);
    return FERRY_EFORMAT;
  }
  /* The size asked for is the plan's num/8; TurboJPEG takes the first of
   * its factors (largest first) that fits, which may be another with the
   * same size on a tiny image: map coordinates by the one it takes. */
  tjscalingfactor want = {num, 8}, got = want;
  int want_w = TJSCALED(w, want), want_h = TJSCALED(h, want);
  int nsf = 0;
  tjscalingfactor *sf = tjGetScalingFactors(&nsf);
  for (int i = 0; sf && i < nsf; i++) {
    if (TJSCALED(w, sf[i]) <= want_w && TJSCALED(h, sf[i]) <= want_h) {
      got = sf[i];
      break;
    }
  }
  /* A colour JPEG asked for one channel is decoded to RGB and made gray
   * as Pillow's convert("L") makes it: the luma plane itself differs from
   * that by up to 10 levels where colours clip. */
  int to_luma = c == 1 && info->channels == 3;
  int pf = info->cmyk ? TJPF_CMYK : c == 3 || to_luma ? TJPF_RGB : TJPF_GRAY;
  size_t bytes = (size_t)want_w * (size_t)want_h * (size_t)tjPixelSize[pf];
  if (ferry__img_grow((void **)&s->pix, &s->pix_cap, bytes)) {
    snprintf(why, wl, "JPEG: out of memory for %zu bytes of pixels", bytes);
    return FERRY_ENOMEM;
  }
  if (tjDecompress2(tj, p, (unsigned long)n, s->pix, want_w, 0, want_h, pf,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    snprintf(why, wl, "JPEG: %s", tjGetErrorStr2(tj));
    return FERRY_EFORMAT;
  }
  if (info->cmyk)
    from_cmyk(s->pix, (size_t)want_w * (size_t)want_h, c, info->adobe);
  else if (to_luma)
    from_rgb(s->pix, (size_t)want_w * (size_t)want_h);
  *dw = want_w;
  *dh = want_h;
  *fx = (double)got.num / (double)got.denom;
  *fy = *fx;
  return 0;
#else
  (void)p;
  (void)n;
  (void)info;
  (void)num;
  (void)c;
  (void)s;
  (void)dw;
  (void)dh;
  (void)fx;
  (void)fy;
  snprintf(why, wl,
           "JPEG: this build has no TurboJPEG (configure --with-turbojpeg)");
  return FERRY_ENOTSUP;
#endif
}

static int decode_png(const unsigned char *p, size_t n,
                      const ferry__img_info *info, int c, ferry__img_scratch *s,
                      char *why, size_t wl) {
#ifdef HAVE_SPNG
  int rc = FERRY_EFORMAT, e;
  spng_ctx *ctx = spng_ctx_new(0);
  if (!ctx) {
    snprintf(why, wl, "PNG: out of memory for a libspng context");
    return FERRY_ENOMEM;
  }
  struct spng_ihdr ih;
  size_t bytes = 0;
  if ((e = spng_set_image_limits(ctx, FERRY__IMG_MAX_SIDE,
                                 FERRY__IMG_MAX_SIDE)) != 0 ||
      (e = spng_set_chunk_limits(ctx, 1u << 26, 1u << 26)) != 0 ||
      (e = spng_set_png_buffer(ctx, p, n)) != 0 ||
      (e = spng_get_ihdr(ctx, &ih)) != 0) {
    snprintf(why, wl, "PNG: %s", spng_strerror(e));
    goto cleanup;
  }
  if (ih.width != info->width || ih.height != info->height) {
    snprintf(why, wl, "PNG: IHDR says %ux%u, the decoder %ux%u", info->width,
             info->height, ih.width, ih.height);
    goto cleanup;
  }
  if ((e = spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &bytes)) != 0) {
    snprintf(why, wl, "PNG: %s", spng_strerror(e));
    goto cleanup;
  }
  if (bytes != (size_t)ih.width * ih.height * 4u) {
    snprintf(why, wl, "PNG: %zu decoded bytes for %ux%u pixels", bytes,
             ih.width, ih.height);
    goto cleanup;
  }
  if (ferry__img_grow((void **)&s->pix, &s->pix_cap, bytes)) {
    snprintf(why, wl, "PNG: out of memory for %zu bytes of pixels", bytes);
    rc = FERRY_ENOMEM;
    goto cleanup;
  }
  /* The chunks after the pixels too, to IEND: a file cut inside the last
   * IDAT's CRC or after it is refused, as a cut anywhere else. */
  if ((e = spng_decode_image(ctx, s->pix, bytes, SPNG_FMT_RGBA8, 0)) != 0 ||
      (e = spng_decode_chunks(ctx)) != 0) {
    snprintf(why, wl, "PNG: %s", spng_strerror(e));
    goto cleanup;
  }
  from_rgba(s->pix, (size_t)ih.width * ih.height, c,
            ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE ||
                ih.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA);
  rc = 0;
cleanup:
  spng_ctx_free(ctx);
  return rc;
#else
  (void)p;
  (void)n;
  (void)info;
  (void)c;
  (void)s;
  snprintf(why, wl, "PNG: this build has no libspng (configure --with-spng)");
  return FERRY_ENOTSUP;
#endif
}

int ferry__img_decode(const unsigned char *p, size_t n,
                      const ferry__img_spec *spec, uint64_t seed,
                      ferry__img_scratch *s, void *out, char *why, size_t wl) {
  char scratch_why[8];
  if (!why || wl == 0) {
    why = scratch_why;
    wl = sizeof scratch_why;
  }
  why[0] = '\0';
  if (!s || !out || (!p && n)) {
    snprintf(why, wl, "image decode: NULL argument");
    return FERRY_EINVAL;
  }
  ferry__img_info info;
  ferry__img_geom g;
  int rc = ferry__img_spec_check(spec, why, wl);
  if (rc == 0)
    rc = ferry__img_probe(p, n, &info, why, wl);
  if (rc)
    return rc;
  uint64_t pixels = (uint64_t)info.width * info.height;
  if (pixels > spec->max_pixels) {
    snprintf(why, wl, "image of %ux%u pixels: more than %llu pixels",
             info.width, info.height, (unsigned long long)spec->max_pixels);
    return FERRY_EFORMAT;
  }
  rc = ferry__img_plan(&info, spec, seed, &g, why, wl);
  if (rc)
    return rc;
  int c = spec->channels;
  int64_t dw = info.width, dh = info.height;
  double fx = 1.0, fy = 1.0;
  if (info.format == FERRY__IMG_JPEG)
    rc = decode_jpeg(p, n, &info, g.scale_num, c, s, &dw, &dh, &fx, &fy, why,
                     wl);
  else
    rc = decode_png(p, n, &info, c, s, why, wl);
  if (rc)
    return rc;

  ferry__img_resample r;
  r.x0 = (double)g.box_x * fx;
  r.y0 = (double)g.box_y * fy;
  r.w = (double)g.box_w * fx;
  r.h = (double)g.box_h * fy;
  r.lo_x = (int64_t)floor(r.x0);
  r.lo_y = (int64_t)floor(r.y0);
  r.hi_x = (int64_t)ceil(r.x0 + r.w);
  r.hi_y = (int64_t)ceil(r.y0 + r.h);
  if (r.hi_x > dw)
    r.hi_x = dw;
  if (r.hi_y > dh)
    r.hi_y = dh;
  if (r.lo_x >= r.hi_x)
    r.lo_x = r.hi_x - 1;
  if (r.lo_y >= r.hi_y)
    r.lo_y = r.hi_y - 1;
  r.out_w = g.resized_w;
  r.out_h = g.resized_h;
  r.off_x = g.off_x;
  r.off_y = g.off_y;
  r.flip = g.flip;

  int64_t ow = spec->width, oh = spec->height;
  size_t plane = (size_t)ow * (size_t)oh, nbytes = plane * (size_t)c;
  unsigned char *dst = (unsigned char *)out;
  if (spec->layout == FERRY__IMG_CHW_F32) {
    if (ferry__img_grow((void **)&s->stage, &s->stage_cap, nbytes)) {
      snprintf(why, wl, "image decode: out of memory for %zu bytes", nbytes);
      return FERRY_ENOMEM;
    }
    dst = s->stage;
  }
  rc = ferry__img_bilinear(s->pix, dw, dh, c, &r, dst, ow, oh, s, why, wl);
  if (rc)
    return rc;
  if (spec->layout == FERRY__IMG_CHW_F32) {
    /* A table per channel of the 256 values, each computed as torchvision
     * computes it (v / 255, minus mean, over std, in float32). */
    float lut[256];
    float *f = (float *)out;
    for (int ch = 0; ch < c; ch++) {
      float mean = spec->mean[ch], sd = spec->std[ch];
      for (int v = 0; v < 256; v++)
        lut[v] = ((float)v / 255.0f - mean) / sd;
      float *fo = f + (size_t)ch * plane;
      const unsigned char *in = dst + ch;
      for (size_t i = 0; i < plane; i++)
        fo[i] = lut[in[i * (size_t)c]];
    }
  }
  return 0;
}
