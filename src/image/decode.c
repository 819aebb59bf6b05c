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
#if defined(HAVE_TURBOJPEG) && defined(HAVE_LIBJPEG)
#include <jerror.h>
#include <jpeglib.h>
#include <setjmp.h>
static void jd_free(void *jd);
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
#if defined(HAVE_TURBOJPEG) && defined(HAVE_LIBJPEG)
  jd_free(s->jd);
#endif
  free(s->pix);
  free(s->rows);
  free(s->stage);
  free(s->kx);
  free(s->ky);
  free(s->bx);
  free(s->by);
  free(s->kd);
  free(s->kv);
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

#ifdef HAVE_TURBOJPEG
/* The scale TurboJPEG decodes at when asked for the plan's num/8: the first
 * of its factors (largest first) whose size fits, which may be another
 * with the same size on a tiny image; both paths decode at that one, and
 * coordinates map by it. */
static tjscalingfactor jpeg_factor(int w, int h, int num) {
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
  return got;
}

/* The pixel format a JPEG is decoded to: CMYK for 4 components (converted
 * after), RGB for colour (a colour JPEG asked for one channel is decoded
 * to RGB and made gray as Pillow's convert("L") makes it: the luma plane
 * itself differs from that by up to 10 levels where colours clip), gray
 * for gray asked for gray. */
static int jpeg_pixel_format(const ferry__img_info *info, int c) {
  int to_luma = c == 1 && info->channels == 3;
  return info->cmyk ? TJPF_CMYK : c == 3 || to_luma ? TJPF_RGB : TJPF_GRAY;
}

/* The decoded rows to the requested channels, in place. */
static void jpeg_convert(const ferry__img_info *info, int c, unsigned char *px,
                         size_t n) {
  if (info->cmyk)
    from_cmyk(px, n, c, info->adobe);
  else if (c == 1 && info->channels == 3)
    from_rgb(px, n);
}
#endif /* HAVE_TURBOJPEG */

/* The whole image at the scale tjscalingfactor got (TurboJPEG), into
 * s->pix: w x h pixels. */
static int decode_jpeg(const unsigned char *p, size_t n,
                       const ferry__img_info *info, int num, int c,
                       ferry__img_scratch *s, char *why, size_t wl) {
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
  tjscalingfactor got = jpeg_factor(w, h, num);
  int want_w = TJSCALED(w, got), want_h = TJSCALED(h, got);
  int pf = jpeg_pixel_format(info, c);
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
  jpeg_convert(info, c, s->pix, (size_t)want_w * (size_t)want_h);
  return 0;
#else
  (void)p;
  (void)n;
  (void)info;
  (void)num;
  (void)c;
  (void)s;
  snprintf(why, wl,
           "JPEG: this build has no TurboJPEG (configure --with-turbojpeg)");
  return FERRY_ENOTSUP;
#endif
}

#if defined(HAVE_TURBOJPEG) && defined(HAVE_LIBJPEG)
/*
 * The crop path: libjpeg's API on the same library, decoding only the
 * region the resize reads.  jpeg_skip_scanlines passes over the rows above
 * it (entropy decoding only, and the iMCU row it starts in),
 * jpeg_crop_scanline limits the IDCT, upsampling and colour conversion to
 * the iMCU columns covering it, and the decode stops after its last row
 * (the entropy data below it is never decoded).  The rows and columns are
 * the full decode's pixels but at the crop's left and right edges, which
 * fancy upsampling (and a progressive file's block smoothing) treats as
 * the image's edges: the region is widened by a margin of iMCU columns
 * so that those edges lie outside what the resize reads.  Errors and
 * warnings longjmp back here with libjpeg's message (nothing is printed,
 * nothing exits), as TurboJPEG's STOPONWARNING and LIMITSCANS do.
 */
typedef struct jd_state {
  struct jpeg_decompress_struct d;
  struct jpeg_error_mgr err;
  struct jpeg_progress_mgr prog;
  jmp_buf jb;
  int nomem;
  char msg[JMSG_LENGTH_MAX];
} jd_state;

static void jd_error_exit(j_common_ptr ci) {
  jd_state *st = (jd_state *)ci->client_data;
  (*ci->err->format_message)(ci, st->msg);
  st->nomem = ci->err->msg_code == JERR_OUT_OF_MEMORY;
  longjmp(st->jb, 1);
}

/* Level -1 is a warning (corrupt or truncated data): an error here. */
static void jd_emit_message(j_common_ptr ci, int level) {
  if (level < 0)
    jd_error_exit(ci);
}

static void jd_output_message(j_common_ptr ci) { (void)ci; }

/* TurboJPEG's TJFLAG_LIMITSCANS: at most 500 scans. */
static void jd_progress(j_common_ptr ci) {
  jd_state *st = (jd_state *)ci->client_data;
  if (st->d.input_scan_number > 500) {
    snprintf(st->msg, sizeof st->msg,
             "Progressive JPEG image has more than 500 scans");
    st->nomem = 0;
    longjmp(st->jb, 1);
  }
}

static void jd_free(void *jd) {
  jd_state *st = (jd_state *)jd;
  if (!st)
    return;
  jpeg_destroy_decompress(&st->d);
  free(st);
}

/*
 * Whether the stream, walked segment by segment from its start and through
 * each scan's entropy data, reaches an EOI marker: what stands for
 * libjpeg's "premature end of data" when the decode stops before the last
 * row, so that a truncated JPEG is refused whatever the crop.
 */
static int jpeg_reaches_eoi(const unsigned char *p, size_t n) {
  size_t i = 2;
  int in_scan = 0;
  while (i + 1 < n) {
    if (in_scan) {
      const unsigned char *f =
          (const unsigned char *)memchr(p + i, 0xFF, n - i);
      if (!f)
        return 0;
      i = (size_t)(f - p);
      if (i + 1 >= n)
        return 0;
      unsigned m = p[i + 1];
      if (m == 0x00 || (m >= 0xD0 && m <= 0xD7)) {
        i += 2;
        continue;
      }
      if (m == 0xFF) {
        i++;
        continue;
      }
      in_scan = 0;
    }
    if (p[i] != 0xFF)
      return 0;
    unsigned m = p[i + 1];
    if (m == 0xFF) {
      i++;
      continue;
    }
    if (m == 0xD9)
      return 1;
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
      i += 2;
      continue;
    }
    if (i + 4 > n)
      return 0;
    size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
    if (len < 2)
      return 0;
    i += 2 + len;
    if (m == 0xDA)
      in_scan = 1;
  }
  return 0;
}

/* Whether the crop path has been shown to give the full decode's pixels
 * for this kind of JPEG (tests/image/test_image.c, crop_vs_full): Huffman
 * coded, baseline or progressive, gray, CMYK or the common samplings. */
static int jpeg_crop_ok(const ferry__img_info *info) {
  if (info->arithmetic)
    return 0;
  static const char *const ok[] = {"4:4:4", "4:2:2", "4:2:0",
                                   "4:4:0", "4:1:1", "gray"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(info->subsampling, ok[i]) == 0)
      return 1;
  return 0;
}

/*
 * Decodes the part of the image at scale got that covers [x0, x1) x
 * [y0, y1) of the full decode (the resize's reads) into s->pix: *ox, *oy
 * its origin, *ow x *oh its size.  Every pixel of [x0, x1) x [y0, y1)
 * equals the full decode's.
 */
/* The scratch's decompressor, made at the first crop. */
static jd_state *jd_get(ferry__img_scratch *s, char *why, size_t wl) {
  if (s->jd)
    return (jd_state *)s->jd;
  jd_state *st = (jd_state *)calloc(1, sizeof *st);
  if (!st) {
    snprintf(why, wl, "JPEG: out of memory for a decompressor");
    return NULL;
  }
  st->d.err = jpeg_std_error(&st->err);
  st->err.error_exit = jd_error_exit;
  st->err.emit_message = jd_emit_message;
  st->err.output_message = jd_output_message;
  st->d.client_data = st;
  if (setjmp(st->jb)) {
    snprintf(why, wl, "JPEG: %s", st->msg);
    free(st);
    return NULL;
  }
  jpeg_create_decompress(&st->d);
  st->d.client_data = st;
  st->prog.progress_monitor = jd_progress;
  s->jd = st;
  return st;
}

static int region_body(jd_state *st, const unsigned char *p, size_t n,
                       const ferry__img_info *info, tjscalingfactor got, int c,
                       int64_t x0, int64_t x1, int64_t y0, int64_t y1,
                       ferry__img_scratch *s, int64_t *ox, int64_t *oy,
                       int64_t *ow, int64_t *oh, char *why, size_t wl) {
  struct jpeg_decompress_struct *d = &st->d;
  d->progress = &st->prog;
  jpeg_mem_src(d, p, (unsigned long)n);
  if (jpeg_read_header(d, TRUE) != JPEG_HEADER_OK) {
    jpeg_abort_decompress(d);
    snprintf(why, wl, "JPEG: no image in the stream");
    return FERRY_EFORMAT;
  }
  if (d->image_width != info->width || d->image_height != info->height) {
    jpeg_abort_decompress(d);
    snprintf(why, wl, "JPEG: the frame says %ux%u, the decoder %ux%u",
             info->width, info->height, (unsigned)d->image_width,
             (unsigned)d->image_height);
    return FERRY_EFORMAT;
  }
  int pf = jpeg_pixel_format(info, c);
  d->out_color_space = pf == TJPF_CMYK  ? JCS_CMYK
                       : pf == TJPF_RGB ? JCS_EXT_RGB
                                        : JCS_GRAYSCALE;
  d->scale_num = (unsigned)got.num;
  d->scale_denom = (unsigned)got.denom;
  d->dct_method = JDCT_ISLOW;
  d->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(d);
  int64_t fw = d->output_width, fh = d->output_height;
  if (fw != TJSCALED((int)info->width, got) ||
      fh != TJSCALED((int)info->height, got) || x0 < 0 || x1 > fw || x0 >= x1 ||
      y0 < 0 || y1 > fh || y0 >= y1) {
    jpeg_abort_decompress(d);
    snprintf(why, wl,
             "JPEG: a %lldx%lld decode for the region [%lld, %lld) x [%lld, "
             "%lld)",
             (long long)fw, (long long)fh, (long long)x0, (long long)x1,
             (long long)y0, (long long)y1);
    return FERRY_EINTERNAL;
  }
  /* The margin: one iMCU column each side (fancy upsampling reads one
   * chroma sample past the region), three in a progressive file (its
   * block smoothing reads DC values up to two blocks away). */
  int64_t imcu = (int64_t)d->max_h_samp_factor * d->min_DCT_scaled_size;
  int64_t margin = imcu * (d->progressive_mode ? 3 : 1);
  int64_t xa = x0 - margin < 0 ? 0 : x0 - margin;
  int64_t xb = x1 + margin > fw ? fw : x1 + margin;
  JDIMENSION xoff = (JDIMENSION)xa, cw = (JDIMENSION)(xb - xa);
  if (cw < (JDIMENSION)fw)
    jpeg_crop_scanline(d, &xoff, &cw);
  else
    xoff = 0;
  if ((int64_t)d->output_width != (int64_t)cw || (int64_t)xoff > xa ||
      (int64_t)xoff + (int64_t)cw < xb) {
    jpeg_abort_decompress(d);
    snprintf(why, wl, "JPEG: the crop [%lld, %lld) became %u + %u",
             (long long)xa, (long long)xb, (unsigned)xoff, (unsigned)cw);
    return FERRY_EINTERNAL;
  }
  if (y0 > 0 && jpeg_skip_scanlines(d, (JDIMENSION)y0) != (JDIMENSION)y0) {
    jpeg_abort_decompress(d);
    snprintf(why, wl, "JPEG: cannot skip %lld rows", (long long)y0);
    return FERRY_EFORMAT;
  }
  size_t px = (size_t)d->output_components;
  size_t stride = (size_t)cw * px, rows = (size_t)(y1 - y0);
  if (ferry__img_grow((void **)&s->pix, &s->pix_cap, stride * rows)) {
    jpeg_abort_decompress(d);
    snprintf(why, wl, "JPEG: out of memory for %zu bytes of pixels",
             stride * rows);
    return FERRY_ENOMEM;
  }
  while ((int64_t)d->output_scanline < y1) {
    JSAMPROW rp[16];
    size_t at = (size_t)((int64_t)d->output_scanline - y0);
    JDIMENSION k = 0;
    while (k < 16 && at + k < rows) {
      rp[k] = s->pix + (at + k) * stride;
      k++;
    }
    if (jpeg_read_scanlines(d, rp, k) == 0) {
      jpeg_abort_decompress(d);
      snprintf(why, wl, "JPEG: no rows at row %u",
               (unsigned)d->output_scanline);
      return FERRY_EFORMAT;
    }
  }
  if ((int64_t)d->output_scanline < fh) {
    /* Stopped early: the rest of the entropy data is not decoded, but a
     * truncated stream is refused as the full decode refuses it. */
    jpeg_abort_decompress(d);
    if (!jpeg_reaches_eoi(p, n)) {
      snprintf(why, wl, "JPEG: premature end of data (no EOI marker)");
      return FERRY_EFORMAT;
    }
  } else {
    jpeg_finish_decompress(d);
  }
  jpeg_convert(info, c, s->pix, (size_t)cw * rows);
  *ox = (int64_t)xoff;
  *oy = y0;
  *ow = (int64_t)cw;
  *oh = (int64_t)rows;
  return 0;
}
/*
 * Decodes the part of the image at scale got that covers [x0, x1) x
 * [y0, y1) of the full decode (the resize's reads) into s->pix: *ox, *oy
 * its origin, *ow x *oh its size.  Every pixel of [x0, x1) x [y0, y1)
 * equals the full decode's.  libjpeg's errors land at the setjmp here;
 * the work is in region_body, so nothing here lives across the longjmp
 * but the scratch.
 */
static int decode_jpeg_region(const unsigned char *p, size_t n,
                              const ferry__img_info *info, tjscalingfactor got,
                              int c, int64_t x0, int64_t x1, int64_t y0,
                              int64_t y1, ferry__img_scratch *s, int64_t *ox,
                              int64_t *oy, int64_t *ow, int64_t *oh, char *why,
                              size_t wl) {
#if SIZE_MAX > ULONG_MAX
  if (n > ULONG_MAX) {
    snprintf(why, wl, "JPEG: %zu bytes", n);
    return FERRY_EFORMAT;
  }
#endif
  jd_state *st = jd_get(s, why, wl);
  if (!st)
    return FERRY_ENOMEM;
  if (setjmp(st->jb)) {
    jd_state *e = (jd_state *)s->jd;
    jpeg_abort_decompress(&e->d);
    snprintf(why, wl, "JPEG: %s", e->msg);
    return e->nomem ? FERRY_ENOMEM : FERRY_EFORMAT;
  }
  return region_body(st, p, n, info, got, c, x0, x1, y0, y1, s, ox, oy, ow, oh,
                     why, wl);
}
#endif /* HAVE_TURBOJPEG && HAVE_LIBJPEG */

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

/* The plan's box in the pixels of a dw x dh decode at scale fx, fy, and
 * the pixels the filter may read. */
static void resample_of(const ferry__img_geom *g, double fx, double fy,
                        int64_t dw, int64_t dh, ferry__img_resample *r) {
  r->x0 = (double)g->box_x * fx;
  r->y0 = (double)g->box_y * fy;
  r->w = (double)g->box_w * fx;
  r->h = (double)g->box_h * fy;
  r->lo_x = (int64_t)floor(r->x0);
  r->lo_y = (int64_t)floor(r->y0);
  r->hi_x = (int64_t)ceil(r->x0 + r->w);
  r->hi_y = (int64_t)ceil(r->y0 + r->h);
  if (r->hi_x > dw)
    r->hi_x = dw;
  if (r->hi_y > dh)
    r->hi_y = dh;
  if (r->lo_x >= r->hi_x)
    r->lo_x = r->hi_x - 1;
  if (r->lo_y >= r->hi_y)
    r->lo_y = r->hi_y - 1;
  r->out_w = g->resized_w;
  r->out_h = g->resized_h;
  r->off_x = g->off_x;
  r->off_y = g->off_y;
  r->flip = g->flip;
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
#ifdef HAVE_TURBOJPEG
  tjscalingfactor got = {1, 1};
  if (info.format == FERRY__IMG_JPEG) {
    got = jpeg_factor((int)info.width, (int)info.height, g.scale_num);
    dw = TJSCALED((int)info.width, got);
    dh = TJSCALED((int)info.height, got);
    fx = (double)got.num / (double)got.denom;
    fy = fx;
  }
#endif

  ferry__img_resample r;
  resample_of(&g, fx, fy, dw, dh, &r);

  if (info.format == FERRY__IMG_JPEG) {
#if defined(HAVE_TURBOJPEG) && defined(HAVE_LIBJPEG)
    if (spec->crop_decode && jpeg_crop_ok(&info) &&
        (r.lo_x > 0 || r.hi_x < dw || r.lo_y > 0 || r.hi_y < dh)) {
      /* Only the region: the box moves by the region's origin (whole
       * pixels, so the filter's coordinates stay exact). */
      int64_t ox, oy;
      rc = decode_jpeg_region(p, n, &info, got, c, r.lo_x, r.hi_x, r.lo_y,
                              r.hi_y, s, &ox, &oy, &dw, &dh, why, wl);
      if (rc)
        return rc;
      r.x0 -= (double)ox;
      r.lo_x -= ox;
      r.hi_x -= ox;
      r.y0 -= (double)oy;
      r.lo_y -= oy;
      r.hi_y -= oy;
    } else
#endif
      rc = decode_jpeg(p, n, &info, g.scale_num, c, s, why, wl);
  } else {
    rc = decode_png(p, n, &info, c, s, why, wl);
  }
  if (rc)
    return rc;

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
