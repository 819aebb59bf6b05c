/*
 * test_image.c - the image decode core (src/image/), driven by image.sh and
 * image_check.py, which write the images with Pillow and compare pixels
 * with Pillow's and torchvision's:
 *
 *   test_image probe FILE            prints the header's facts, key=value
 *   test_image decode FILE OUT H W C LAYOUT RESIZE CROP SEED DCT
 *                                    writes the output's bytes to OUT;
 *                                    LAYOUT u8|f32 (f32: ImageNet's mean
 *                                    and std), RESIZE none|exact|S (the
 *                                    shorter side), CROP none|center|random;
 *                                    a refusal prints "refused CODE: why"
 *                                    and exits 2
 *   test_image box W H SEED          the random crop's geometry
 *   test_image selftest DIR          the checks below, on DIR's images
 *
 * selftest: the random crop's rule (the box inside the image, its area and
 * aspect inside scale and ratio up to the rounding, the fallback central)
 * over 20,000 seeds and several image shapes; its draws cover the range;
 * same seed, same pixels, on 4 threads at once too; other seeds differ;
 * spec refusals; every truncation of a JPEG and of a PNG (but inside
 * IEND's CRC) refused with a message; bit flips never crash (ASan in the asan
 * tier); absurd sizes refused before any allocation; not an image refused;
 * the resize's SIMD pass gives the scalar's bytes (check_simd_same).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "../ferry_test.h"
#include "image/image.h"
#include "util/util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_LIBJPEG
#include <jpeglib.h>
#endif

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 65536;
      unsigned char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0)
      break;
  }
  fclose(f);
  *n = len;
  return buf;
}

static int parse_spec(char **a, ferry__img_spec *s, uint64_t *seed) {
  ferry__img_spec_init(s);
  s->height = (uint32_t)strtoul(a[0], NULL, 10);
  s->width = (uint32_t)strtoul(a[1], NULL, 10);
  s->channels = atoi(a[2]);
  if (strcmp(a[3], "f32") == 0) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f};
    static const float sd[3] = {0.229f, 0.224f, 0.225f};
    s->layout = FERRY__IMG_CHW_F32;
    memcpy(s->mean, mean, sizeof mean);
    memcpy(s->std, sd, sizeof sd);
  } else if (strcmp(a[3], "u8") != 0) {
    return -1;
  }
  if (strcmp(a[4], "none") == 0)
    s->resize = FERRY__IMG_RESIZE_NONE;
  else if (strcmp(a[4], "exact") == 0)
    s->resize = FERRY__IMG_RESIZE_EXACT;
  else {
    s->resize = FERRY__IMG_RESIZE_SHORTER;
    s->resize_to = (uint32_t)strtoul(a[4], NULL, 10);
  }
  if (strcmp(a[5], "none") == 0)
    s->crop = FERRY__IMG_CROP_NONE;
  else if (strcmp(a[5], "center") == 0)
    s->crop = FERRY__IMG_CROP_CENTER;
  else if (strcmp(a[5], "random") == 0)
    s->crop = FERRY__IMG_CROP_RANDOM;
  else
    return -1;
  *seed = strtoull(a[6], NULL, 10);
  s->dct_scale = atoi(a[7]);
  if (getenv("FERRY_IMG_NO_CROP"))
    s->crop_decode = 0;
  return 0;
}

static int cmd_decode(int argc, char **argv) {
  if (argc != 12) {
    fprintf(stderr, "usage: test_image decode FILE OUT H W C LAYOUT RESIZE "
                    "CROP SEED DCT\n");
    return 99;
  }
  ferry__img_spec spec;
  uint64_t seed;
  if (parse_spec(argv + 4, &spec, &seed) != 0) {
    fprintf(stderr, "test_image: bad spec\n");
    return 99;
  }
  size_t n;
  unsigned char *p = slurp(argv[2], &n);
  if (!p) {
    fprintf(stderr, "test_image: cannot read %s\n", argv[2]);
    return 99;
  }
  size_t el = spec.layout == FERRY__IMG_CHW_F32 ? 4 : 1;
  size_t bytes = (size_t)spec.height * spec.width * (size_t)spec.channels * el;
  void *out = malloc(bytes);
  ferry__img_scratch s;
  ferry__img_scratch_init(&s);
  char why[256];
  int rc = out ? ferry__img_decode(p, n, &spec, seed, &s, out, why, sizeof why)
               : FERRY_ENOMEM;
  int status = 0;
  if (rc != 0) {
    printf("refused %s: %s\n", ferry_strerror(rc), why);
    status = 2;
  } else {
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(out, 1, bytes, f) != bytes)
      status = 99;
    if (f && fclose(f) != 0)
      status = 99;
  }
  ferry__img_scratch_free(&s);
  free(out);
  free(p);
  return status;
}

static int cmd_probe(const char *path) {
  size_t n;
  unsigned char *p = slurp(path, &n);
  if (!p)
    return 99;
  ferry__img_info in;
  char why[256];
  int rc = ferry__img_probe(p, n, &in, why, sizeof why);
  free(p);
  if (rc) {
    printf("refused %s: %s\n", ferry_strerror(rc), why);
    return 2;
  }
  printf("format=%s width=%u height=%u channels=%d bit_depth=%d "
         "progressive=%d cmyk=%d adobe=%d subsampling=%s color_type=%d "
         "interlaced=%d\n",
         in.format == FERRY__IMG_JPEG ? "jpeg" : "png", in.width, in.height,
         in.channels, in.bit_depth, in.progressive, in.cmyk, in.adobe,
         in.subsampling, in.png_color_type, in.png_interlaced);
  return 0;
}

static int cmd_box(int argc, char **argv) {
  if (argc != 5)
    return 99;
  ferry__img_info in;
  memset(&in, 0, sizeof in);
  in.format = FERRY__IMG_JPEG;
  in.width = (uint32_t)strtoul(argv[2], NULL, 10);
  in.height = (uint32_t)strtoul(argv[3], NULL, 10);
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.crop = FERRY__IMG_CROP_RANDOM;
  ferry__img_geom g;
  char why[256];
  int rc = ferry__img_plan(&in, &s, strtoull(argv[4], NULL, 10), &g, why,
                           sizeof why);
  if (rc) {
    printf("refused %s\n", why);
    return 2;
  }
  printf("x=%lld y=%lld w=%lld h=%lld flip=%d attempts=%d scale=%d/8\n",
         (long long)g.box_x, (long long)g.box_y, (long long)g.box_w,
         (long long)g.box_h, g.flip, g.attempts, g.scale_num);
  return 0;
}

/* ---- selftest ---- */

/* The random crop's rule, over many seeds on one image shape. */
static void check_rule(uint32_t W, uint32_t H, int cover) {
  ferry__img_info in;
  memset(&in, 0, sizeof in);
  in.format = FERRY__IMG_JPEG;
  in.width = W;
  in.height = H;
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.crop = FERRY__IMG_CROP_RANDOM;
  int bad = 0, fallbacks = 0, flips = 0, small = 0, large = 0, tall = 0,
      wide = 0, left = 0, right = 0;
  const int N = 20000;
  for (int seed = 0; seed < N; seed++) {
    ferry__img_geom g;
    char why[256];
    if (ferry__img_plan(&in, &s, (uint64_t)seed, &g, why, sizeof why) != 0) {
      bad++;
      continue;
    }
    int inside = g.box_x >= 0 && g.box_y >= 0 && g.box_w >= 1 && g.box_h >= 1 &&
                 g.box_x + g.box_w <= W && g.box_y + g.box_h <= H;
    double area = (double)g.box_w * (double)g.box_h / ((double)W * H);
    double ratio = (double)g.box_w / (double)g.box_h;
    /* Rounding each side to an integer moves the area and the ratio by at
     * most half a pixel per side. */
    double dw = 0.5 / (double)g.box_w, dh = 0.5 / (double)g.box_h;
    double slack = (1 + dw) * (1 + dh) - 1;
    int ok;
    if (g.attempts > 0) {
      ok = area >= 0.08 * (1 - slack) - 1e-12 && area <= 1 + 1e-12 &&
           ratio >= 0.75 * (1 - dw - dh) - 1e-12 &&
           ratio <= 4.0 / 3.0 * (1 + dw + dh) / (1 - dw - dh) + 1e-12;
    } else {
      fallbacks++;
      ok = g.box_x == (W - g.box_w) / 2 && g.box_y == (H - g.box_h) / 2;
    }
    if (!inside || !ok || g.resized_w != 224 || g.resized_h != 224) {
      if (bad++ < 5)
        fprintf(stderr,
                "  %ux%u seed %d: box %lld,%lld %lldx%lld attempts %d area "
                "%.4f ratio %.4f\n",
                W, H, seed, (long long)g.box_x, (long long)g.box_y,
                (long long)g.box_w, (long long)g.box_h, g.attempts, area,
                ratio);
    }
    flips += g.flip;
    small += area < 0.2;
    large += area > 0.9;
    tall += ratio < 0.8;
    wide += ratio > 1.25;
    left += g.box_x == 0;
    right += g.box_x + g.box_w == W;
  }
  CHECK(bad == 0, "%ux%u: %d of %d random crops break the rule", W, H, bad, N);
  /* The draws cover their range: about half the crops flipped, areas and
   * aspects at both ends, boxes at both edges. */
  CHECK(flips > N * 45 / 100 && flips < N * 55 / 100, "%ux%u: %d flips of %d",
        W, H, flips, N);
  if (cover) {
    CHECK(small > N / 20 && large > N / 200 && tall > N / 20 && wide > N / 20,
          "%ux%u: small %d, large %d, tall %d, wide %d of %d", W, H, small,
          large, tall, wide, N);
    CHECK(left > 0 && right > 0, "%ux%u: %d boxes at the left, %d at the right",
          W, H, left, right);
    CHECK(fallbacks < N / 100, "%ux%u: %d fallbacks of %d", W, H, fallbacks, N);
  } else {
    /* Too thin for any draw to fit: the central crop clamped to the ratio
     * range, every time. */
    CHECK(fallbacks == N, "%ux%u: %d fallbacks of %d", W, H, fallbacks, N);
  }
}

struct job {
  const unsigned char *p;
  size_t n;
  const ferry__img_spec *spec;
  uint64_t seed0;
  int count;
  unsigned char *out; /* count outputs */
  size_t bytes;
  int rc;
};

static void *run_job(void *arg) {
  struct job *j = arg;
  ferry__img_scratch s;
  ferry__img_scratch_init(&s);
  j->rc = 0;
  for (int i = 0; i < j->count && j->rc == 0; i++)
    j->rc = ferry__img_decode(j->p, j->n, j->spec, j->seed0 + (uint64_t)i, &s,
                              j->out + (size_t)i * j->bytes, NULL, 0);
  ferry__img_scratch_free(&s);
  return NULL;
}

static void check_determinism(const unsigned char *p, size_t n) {
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.crop = FERRY__IMG_CROP_RANDOM;
  size_t bytes = 224 * 224 * 3;
  enum { K = 8, T = 4 };
  unsigned char *one = malloc(K * bytes), *many = malloc(T * K * bytes);
  REQUIRE_V(one && many, "out of memory");
  struct job j1 = {p, n, &s, 100, K, one, bytes, 0};
  run_job(&j1);
  CHECK(j1.rc == 0, "random crops of rgb420.jpg: %s", ferry_strerror(j1.rc));
  /* Four threads, each decoding the same seeds with its own scratch, at
   * once: the same pixels as one thread. */
  pthread_t th[T];
  struct job jt[T];
  for (int t = 0; t < T; t++) {
    jt[t] =
        (struct job){p, n, &s, 100, K, many + (size_t)t * K * bytes, bytes, 0};
    CHECK(pthread_create(&th[t], NULL, run_job, &jt[t]) == 0, "thread");
  }
  for (int t = 0; t < T; t++) {
    pthread_join(th[t], NULL);
    CHECK(jt[t].rc == 0, "thread %d: %s", t, ferry_strerror(jt[t].rc));
    CHECK(memcmp(one, jt[t].out, K * bytes) == 0,
          "thread %d: other pixels than one thread for the same seeds", t);
  }
  /* Other seeds, other pixels (every pair of the K). */
  int same = 0;
  for (int a = 0; a < K; a++)
    for (int b = a + 1; b < K; b++)
      same +=
          memcmp(one + (size_t)a * bytes, one + (size_t)b * bytes, bytes) == 0;
  CHECK(same == 0, "%d pairs of different seeds gave the same pixels", same);
  /* The flip: seed with flip, the same seed without it mirrors it. */
  ferry__img_info in;
  ferry__img_geom g;
  CHECK(ferry__img_probe(p, n, &in, NULL, 0) == 0, "probe");
  uint64_t fs = 0;
  for (fs = 0; fs < 64; fs++) {
    CHECK(ferry__img_plan(&in, &s, fs, &g, NULL, 0) == 0, "plan");
    if (g.flip)
      break;
  }
  ferry__img_spec nf = s;
  nf.flip = 0;
  unsigned char *a = malloc(bytes), *b = malloc(bytes);
  ferry__img_scratch sc;
  ferry__img_scratch_init(&sc);
  if (a && b && ferry__img_decode(p, n, &s, fs, &sc, a, NULL, 0) == 0 &&
      ferry__img_decode(p, n, &nf, fs, &sc, b, NULL, 0) == 0) {
    int mirrored = 1;
    for (int y = 0; y < 224 && mirrored; y++)
      for (int x = 0; x < 224 && mirrored; x++)
        mirrored = memcmp(a + ((size_t)y * 224 + (size_t)x) * 3,
                          b + ((size_t)y * 224 + 223 - (size_t)x) * 3, 3) == 0;
    CHECK(mirrored, "seed %llu: the flipped crop is not the mirror",
          (unsigned long long)fs);
  } else {
    CHECK(0, "flip decode failed");
  }
  ferry__img_scratch_free(&sc);
  free(a);
  free(b);
  free(one);
  free(many);
}

/* Every truncation refused, every refusal with a message; bit flips: any
 * outcome but a crash. */
static void check_damage(const char *name, const unsigned char *p, size_t n,
                         size_t must_fail_below, int small_crops) {
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.resize = FERRY__IMG_RESIZE_SHORTER;
  s.resize_to = 32;
  s.crop = FERRY__IMG_CROP_CENTER;
  s.height = s.width = 24;
  if (small_crops) {
    /* Random boxes of 1-10 % of the image, a new one per length (the seed
     * is the length): a JPEG's cropped decode stops after the box's last
     * row, and must still refuse a truncation below it. */
    s.resize = FERRY__IMG_RESIZE_NONE;
    s.crop = FERRY__IMG_CROP_RANDOM;
    s.scale_min = 0.01;
    s.scale_max = 0.1;
  }
  unsigned char out[24 * 24 * 3];
  ferry__img_scratch sc;
  ferry__img_scratch_init(&sc);
  char why[256];
  int rc = ferry__img_decode(p, n, &s, 1, &sc, out, why, sizeof why);
  CHECK(rc == 0, "%s whole: %s", name, why);
  int accepted = 0, silent = 0;
  for (size_t len = 0; len < must_fail_below; len++) {
    unsigned char *cut = malloc(len ? len : 1); /* ASan sees past len */
    if (!cut)
      break;
    memcpy(cut, p, len);
    why[0] = '\0';
    rc = ferry__img_decode(cut, len, &s, small_crops ? (uint64_t)len : 1, &sc,
                           out, why, sizeof why);
    if (rc == 0) {
      if (accepted++ < 3)
        fprintf(stderr, "  %s cut to %zu of %zu bytes: accepted\n", name, len,
                n);
    } else if (rc != FERRY_EFORMAT || !why[0]) {
      if (silent++ < 3)
        fprintf(stderr, "  %s cut to %zu: %s, \"%s\"\n", name, len,
                ferry_strerror(rc), why);
    }
    free(cut);
  }
  CHECK(accepted == 0, "%s: %d truncations accepted", name, accepted);
  CHECK(silent == 0, "%s: %d truncations not FERRY_EFORMAT with a message",
        name, silent);
  unsigned char *m = malloc(n);
  REQUIRE_V(m != NULL, "out of memory");
  int refused = 0;
  uint64_t r = 12345;
  for (int i = 0; i < 3000; i++) {
    memcpy(m, p, n);
    for (int k = 0; k < 1 + i % 4; k++) {
      r = ferry__mix64(r + 1);
      m[r % n] = (unsigned char)(m[r % n] ^ (1u << ((r >> 32) % 8)));
    }
    why[0] = '\0';
    rc = ferry__img_decode(m, n, &s, (uint64_t)i, &sc, out, why, sizeof why);
    if (rc != 0) {
      refused++;
      CHECK(why[0] != '\0', "%s flip %d: refused without a message", name, i);
    }
  }
  CHECK(refused > 0, "%s: no bit flip refused", name);
  free(m);
  ferry__img_scratch_free(&sc);
}

static void check_refusals(const unsigned char *jpg, size_t jn) {
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.height = 8;
  s.width = 8;
  s.crop = FERRY__IMG_CROP_CENTER;
  unsigned char out[8 * 8 * 3];
  ferry__img_scratch sc;
  ferry__img_scratch_init(&sc);
  char why[256];
  /* Not an image. */
  const unsigned char text[] = "hello, world";
  CHECK(ferry__img_decode(text, sizeof text, &s, 0, &sc, out, why,
                          sizeof why) == FERRY_EFORMAT &&
            strstr(why, "not a JPEG or PNG"),
        "text: %s", why);
  CHECK(ferry__img_decode(text, 0, &s, 0, &sc, out, why, sizeof why) ==
            FERRY_EFORMAT,
        "empty: %s", why);
  /* A PNG header claiming 40000 x 10 and one of 30000 x 30000 (2^29.7
   * pixels): refused from the header, before any allocation. */
  unsigned char png[33] = {137, 80,  78,  71,  13,  10, 26, 10,   0,    0, 0,
                           13,  'I', 'H', 'D', 'R', 0,  0,  0x9c, 0x40, 0, 0,
                           0,   10,  8,   2,   0,   0,  0,  0,    0,    0, 0};
  CHECK(ferry__img_decode(png, sizeof png, &s, 0, &sc, out, why, sizeof why) ==
                FERRY_EFORMAT &&
            strstr(why, "above 32768"),
        "40000-wide PNG: %s", why);
  png[18] = 0x75;
  png[19] = 0x30;
  png[22] = 0x75;
  png[23] = 0x30;
  CHECK(ferry__img_decode(png, sizeof png, &s, 0, &sc, out, why, sizeof why) ==
                FERRY_EFORMAT &&
            strstr(why, "more than 268435456 pixels"),
        "30000x30000 PNG: %s", why);
  CHECK(sc.pix_cap == 0, "a refused header allocated %zu bytes", sc.pix_cap);
  /* The same with a JPEG's frame header patched. */
  unsigned char *j = malloc(jn);
  REQUIRE_V(j != NULL, "out of memory");
  memcpy(j, jpg, jn);
  size_t sof = 0;
  for (size_t i = 2; i + 9 < jn; i++)
    if (j[i] == 0xFF && (j[i + 1] == 0xC0 || j[i + 1] == 0xC2)) {
      sof = i;
      break;
    }
  REQUIRE_V(sof > 0, "no SOF in the JPEG");
  j[sof + 5] = 0xFF; /* height 65xxx */
  CHECK(ferry__img_decode(j, jn, &s, 0, &sc, out, why, sizeof why) ==
                FERRY_EFORMAT &&
            strstr(why, "above 32768"),
        "JPEG 65k high: %s", why);
  j[sof + 5] = 0x7F;
  j[sof + 7] = 0x7F; /* 32xxx x 32xxx */
  CHECK(ferry__img_decode(j, jn, &s, 0, &sc, out, why, sizeof why) ==
                FERRY_EFORMAT &&
            strstr(why, "more than"),
        "JPEG 32k x 32k: %s", why);
  j[sof + 5] = 0;
  j[sof + 6] = 0; /* height 0 */
  CHECK(ferry__img_decode(j, jn, &s, 0, &sc, out, why, sizeof why) ==
            FERRY_EFORMAT,
        "JPEG height 0: %s", why);
  free(j);
  /* max_pixels of the spec. */
  ferry__img_spec small = s;
  small.max_pixels = 1000;
  CHECK(ferry__img_decode(jpg, jn, &small, 0, &sc, out, why, sizeof why) ==
                FERRY_EFORMAT &&
            strstr(why, "more than 1000 pixels"),
        "max_pixels: %s", why);
  /* Specs. */
  ferry__img_spec bad = s;
  bad.channels = 2;
  CHECK(ferry__img_decode(jpg, jn, &bad, 0, &sc, out, why, sizeof why) ==
            FERRY_EINVAL,
        "2 channels: %s", why);
  bad = s;
  bad.crop = FERRY__IMG_CROP_NONE;
  CHECK(ferry__img_decode(jpg, jn, &bad, 0, &sc, out, why, sizeof why) ==
                FERRY_ESHAPE &&
            strstr(why, "neither resize nor crop"),
        "no resize, no crop, another size: %s", why);
  bad = s;
  bad.resize = FERRY__IMG_RESIZE_SHORTER;
  bad.resize_to = 10;
  bad.crop = FERRY__IMG_CROP_NONE;
  CHECK(ferry__img_decode(jpg, jn, &bad, 0, &sc, out, why, sizeof why) ==
            FERRY_EINVAL,
        "shorter side without a crop: %s", why);
  bad = s;
  bad.crop = FERRY__IMG_CROP_RANDOM;
  bad.scale_min = 0;
  CHECK(ferry__img_decode(jpg, jn, &bad, 0, &sc, out, why, sizeof why) ==
            FERRY_EINVAL,
        "scale 0: %s", why);
  bad = s;
  bad.layout = FERRY__IMG_CHW_F32;
  bad.std[1] = 0;
  CHECK(ferry__img_decode(jpg, jn, &bad, 0, &sc, out, why, sizeof why) ==
            FERRY_EINVAL,
        "std 0: %s", why);
  ferry__img_scratch_free(&sc);
}

/* The scratch is reused: a second image of the same size allocates
 * nothing (the buffers' capacities do not move). */
static void check_reuse(const unsigned char *p, size_t n) {
  ferry__img_spec s;
  ferry__img_spec_init(&s);
  s.resize = FERRY__IMG_RESIZE_SHORTER;
  s.resize_to = 256;
  s.crop = FERRY__IMG_CROP_CENTER;
  unsigned char *out = malloc(224 * 224 * 3);
  REQUIRE_V(out != NULL, "out of memory");
  ferry__img_scratch sc;
  ferry__img_scratch_init(&sc);
  CHECK(ferry__img_decode(p, n, &s, 0, &sc, out, NULL, 0) == 0, "decode");
  ferry__img_scratch before = sc;
  for (int i = 0; i < 5; i++)
    CHECK(ferry__img_decode(p, n, &s, (uint64_t)i, &sc, out, NULL, 0) == 0,
          "decode %d", i);
  CHECK(sc.pix == before.pix && sc.pix_cap == before.pix_cap &&
            sc.rows == before.rows && sc.kx == before.kx &&
            sc.ky == before.ky && sc.tj == before.tj,
        "the scratch moved on the same image");
  ferry__img_scratch_free(&sc);
  free(out);
}

#ifdef HAVE_LIBJPEG
/* A photo-like JPEG written with libjpeg's compressor, in the kinds Pillow
 * 9.4 cannot write: sampling h0 x v0 of the first component (colour) or
 * gray (comps 1), progressive, a restart interval of restart MCUs,
 * arithmetic coding.  *out is malloc'd (jpeg_mem_dest). */
static int write_jpeg(int w, int h, int comps, int h0, int v0, int prog,
                      unsigned restart, int arith, unsigned char **out,
                      unsigned long *len) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr err;
  ci.err = jpeg_std_error(&err); /* exits on error: a test program's */
  jpeg_create_compress(&ci);
  *out = NULL;
  *len = 0;
  jpeg_mem_dest(&ci, out, len);
  ci.image_width = (JDIMENSION)w;
  ci.image_height = (JDIMENSION)h;
  ci.input_components = comps;
  ci.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, 90, TRUE);
  if (comps == 3) {
    ci.comp_info[0].h_samp_factor = h0;
    ci.comp_info[0].v_samp_factor = v0;
  }
  if (prog)
    jpeg_simple_progression(&ci);
  ci.restart_interval = restart;
  ci.arith_code = arith ? TRUE : FALSE;
  jpeg_start_compress(&ci, TRUE);
  unsigned char *row = malloc((size_t)w * (size_t)comps);
  if (!row)
    return -1;
  uint64_t r = 99;
  while (ci.next_scanline < ci.image_height) {
    int y = (int)ci.next_scanline;
    for (int x = 0; x < w; x++)
      for (int k = 0; k < comps; k++) {
        r = ferry__mix64(r + 1);
        int v = (x * (k + 1) * 255) / w / 2 + (y * (3 - k) * 255) / h / 3 +
                ((x / 23 + y / 17) % 2) * 40 + (int)(r % 24);
        row[(size_t)x * (size_t)comps + (size_t)k] = (unsigned char)(v & 255);
      }
    JSAMPROW rp = row;
    jpeg_write_scanlines(&ci, &rp, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  free(row);
  return 0;
}
#endif

/*
 * The cropped JPEG decode (libjpeg API: rows skipped, iMCU columns cropped,
 * the decode stopped after the box) gives the very pixels of the full
 * decode (TurboJPEG): random crops of several size ranges, upscaled and
 * downscaled, flipped, at DCT scales and not, 1 and 3 channels, on
 * Pillow's JPEGs (4:2:0, 4:2:2, 4:4:4, progressive, odd sizes, gray, CMYK,
 * DCT-scaled) and libjpeg's (4:4:0, 4:1:1, restart markers, progressive
 * 4:2:2 and gray, arithmetic coding, which is decoded whole).
 */
static void crop_vs_full_one(const char *name, const unsigned char *p, size_t n,
                             int decodes) {
  static const double ranges[3][2] = {{0.08, 1.0}, {0.001, 0.02}, {0.3, 0.6}};
  static const uint32_t sizes[3] = {224, 31, 64};
  unsigned char *a = malloc(224 * 224 * 3), *b = malloc(224 * 224 * 3);
  REQUIRE_V(a && b, "out of memory");
  ferry__img_scratch sa, sb;
  ferry__img_scratch_init(&sa);
  ferry__img_scratch_init(&sb);
  char why[256];
  int differ = 0, failed = 0;
  for (int i = 0; i < decodes; i++) {
    ferry__img_spec s;
    ferry__img_spec_init(&s);
    s.crop = FERRY__IMG_CROP_RANDOM;
    s.scale_min = ranges[i % 3][0];
    s.scale_max = ranges[i % 3][1];
    s.height = sizes[(i / 3) % 3];
    s.width = sizes[(i / 9) % 3];
    s.channels = (i / 27) % 2 ? 1 : 3;
    s.dct_scale = (i / 54) % 2;
    size_t bytes = (size_t)s.height * s.width * (size_t)s.channels;
    int ra = ferry__img_decode(p, n, &s, (uint64_t)i, &sa, a, why, sizeof why);
    if (ra != 0 && failed++ < 3)
      fprintf(stderr, "  %s seed %d: cropped decode refused: %s\n", name, i,
              why);
    s.crop_decode = 0;
    int rb = ferry__img_decode(p, n, &s, (uint64_t)i, &sb, b, why, sizeof why);
    if (rb != 0 && failed++ < 3)
      fprintf(stderr, "  %s seed %d: full decode refused: %s\n", name, i, why);
    if (ra == 0 && rb == 0 && memcmp(a, b, bytes) != 0) {
      if (differ++ < 3) {
        size_t k = 0;
        while (k < bytes && a[k] == b[k])
          k++;
        fprintf(stderr,
                "  %s seed %d (%ux%u, C=%d, dct %d): byte %zu: cropped %u, "
                "full %u\n",
                name, i, s.width, s.height, s.channels, s.dct_scale, k, a[k],
                b[k]);
      }
    }
  }
  CHECK(failed == 0 && differ == 0,
        "%s: %d of %d cropped decodes differ from the full decode, %d "
        "refused",
        name, differ, decodes, failed);
  ferry__img_scratch_free(&sa);
  ferry__img_scratch_free(&sb);
  free(a);
  free(b);
}

static void check_crop_vs_full(const char *dir) {
  static const char *const pillow[] = {
      "rgb420.jpg",   "rgb422.jpg",   "rgb444.jpg", "prog.jpg",
      "odd.jpg",      "portrait.jpg", "big.jpg",    "tiny420.jpg",
      "tinyprog.jpg", "gray.jpg",     "cmyk.jpg"};
  char path[4096];
  for (size_t i = 0; i < sizeof pillow / sizeof pillow[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, pillow[i]);
    size_t n;
    unsigned char *p = slurp(path, &n);
    REQUIRE_V(p != NULL, "cannot read %s", path);
    crop_vs_full_one(pillow[i], p, n, 108);
    free(p);
  }
#ifdef HAVE_LIBJPEG
  static const struct {
    const char *name;
    int w, h, comps, h0, v0, prog;
    unsigned restart;
    int arith;
  } kinds[] = {
      {"libjpeg 4:4:0", 301, 227, 3, 1, 2, 0, 0, 0},
      {"libjpeg 4:1:1", 301, 227, 3, 4, 1, 0, 0, 0},
      {"libjpeg 4:2:0 restart 3", 301, 227, 3, 2, 2, 0, 3, 0},
      {"libjpeg 4:2:2 restart 1", 250, 190, 3, 2, 1, 0, 1, 0},
      {"libjpeg 4:2:2 progressive", 301, 227, 3, 2, 1, 1, 0, 0},
      {"libjpeg 4:4:0 progressive", 301, 227, 3, 1, 2, 1, 0, 0},
      {"libjpeg 4:4:4 progressive restart 2", 203, 170, 3, 1, 1, 1, 2, 0},
      {"libjpeg gray progressive", 301, 227, 1, 1, 1, 1, 0, 0},
      {"libjpeg gray restart 5", 301, 227, 1, 1, 1, 0, 5, 0},
      {"libjpeg 4:2:0 arithmetic", 301, 227, 3, 2, 2, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    unsigned char *p;
    unsigned long n;
    REQUIRE_V(write_jpeg(kinds[i].w, kinds[i].h, kinds[i].comps, kinds[i].h0,
                         kinds[i].v0, kinds[i].prog, kinds[i].restart,
                         kinds[i].arith, &p, &n) == 0,
              "writing %s", kinds[i].name);
    crop_vs_full_one(kinds[i].name, p, n, 108);
    free(p);
    /* Truncations refused on the cropped path too (restart markers and
     * progressive scans included), on a smaller image of the kind. */
    if (i == 2 || i == 4) {
      REQUIRE_V(write_jpeg(72, 56, kinds[i].comps, kinds[i].h0, kinds[i].v0,
                           kinds[i].prog, kinds[i].restart, kinds[i].arith, &p,
                           &n) == 0,
                "writing %s", kinds[i].name);
      check_damage(kinds[i].name, p, n, n, 1);
      free(p);
    }
  }
#endif
}

/* The resize's SIMD horizontal passes (resize.c, AVX2 and SSSE3 where the
 * CPU has them) give the scalar loops' bytes: random images, boxes (fractional,
 * at the image's edges and last row, whose loads the SIMD pass leaves to the
 * scalar loop), reductions up to 12x (13+ taps) and enlargements, flips,
 * CenterCrop-like padding; exact-sized source buffers, so an over-read
 * past the image is an ASan error in the asan tier. */
static void check_simd_same(void) {
  uint64_t st = 0x9e3779b97f4a7c15ULL;
  int differ = 0, runs = 0;
  for (int it = 0; it < 400 && !differ; it++) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t sw = 1 + (int64_t)((st >> 33) % 700),
            sh = 1 + (int64_t)((st >> 13) % 500);
    size_t n = (size_t)sw * (size_t)sh * 3;
    unsigned char *src = malloc(n);
    if (!src) {
      CHECK(0, "memory");
      return;
    }
    for (size_t i = 0; i < n; i++) {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      src[i] = (unsigned char)(st >> 56);
    }
    ferry__img_resample r;
    memset(&r, 0, sizeof r);
    double fx = (double)((st >> 20) % 1000) / 1000.0,
           fy = (double)((st >> 30) % 1000) / 1000.0;
    r.w = 1.0 + fx * (double)(sw - 1);
    r.h = 1.0 + fy * (double)(sh - 1);
    r.x0 = ((double)sw - r.w) * (double)((st >> 40) % 101) / 100.0;
    r.y0 = ((double)sh - r.h) * (double)((st >> 47) % 101) / 100.0;
    r.lo_x = (int64_t)r.x0;
    r.hi_x = (int64_t)ceil(r.x0 + r.w);
    r.lo_y = (int64_t)r.y0;
    r.hi_y = (int64_t)ceil(r.y0 + r.h);
    if ((st >> 7) & 1) { /* the filter may read the whole image */
      r.lo_x = r.lo_y = 0;
      r.hi_x = sw;
      r.hi_y = sh;
    }
    if (r.hi_x > sw)
      r.hi_x = sw;
    if (r.hi_y > sh)
      r.hi_y = sh;
    int64_t dw = 1 + (int64_t)((st >> 3) % 300),
            dh = 1 + (int64_t)((st >> 11) % 300);
    r.out_w = dw + (int64_t)((st >> 17) % 3);
    r.out_h = dh + (int64_t)((st >> 19) % 3);
    r.off_x = (int64_t)((st >> 23) % 5) - 2;
    r.off_y = (int64_t)((st >> 25) % 5) - 2;
    r.flip = (int)((st >> 29) & 1);
    size_t ob = (size_t)(dw * dh * 3);
    unsigned char *out[3] = {malloc(ob), malloc(ob), malloc(ob)};
    int rc[3] = {0, 0, 0};
    char why[200] = "";
    /* AVX2 where the CPU has it, SSSE3 only, scalar only */
    for (int k = 0; k < 3; k++) {
      ferry__img_scratch sc;
      ferry__img_scratch_init(&sc);
      sc.no_simd = k == 0 ? 0 : k == 1 ? 2 : 1;
      rc[k] = out[k] ? ferry__img_bilinear(src, sw, sh, 3, &r, out[k], dw, dh,
                                           &sc, why, sizeof why)
                     : FERRY_ENOMEM;
      ferry__img_scratch_free(&sc);
    }
    CHECK(rc[0] == rc[2] && rc[1] == rc[2],
          "resize %lldx%lld -> %lldx%lld: rc %d, %d and %d (%s)", (long long)sw,
          (long long)sh, (long long)dw, (long long)dh, rc[0], rc[1], rc[2],
          why);
    if (rc[0] == 0 && rc[1] == 0 && rc[2] == 0) {
      runs++;
      for (int k = 0; k < 2 && !differ; k++)
        if (memcmp(out[k], out[2], ob) != 0) {
          differ = 1;
          CHECK(0,
                "resize %lldx%lld box %.2f,%.2f %.2fx%.2f -> %lldx%lld flip "
                "%d: the %s pass differs from the scalar",
                (long long)sw, (long long)sh, r.x0, r.y0, r.w, r.h,
                (long long)dw, (long long)dh, r.flip,
                k == 0 ? "AVX2" : "SSSE3");
        }
    }
    for (int k = 0; k < 3; k++)
      free(out[k]);
    free(src);
  }
  CHECK(runs > 300, "only %d resizes ran", runs);
}

static int cmd_selftest(const char *dir) {
  check_rule(500, 375, 1);
  check_rule(375, 500, 1);
  check_rule(224, 224, 1);
  check_rule(3000, 100, 0);
  check_rule(100, 3000, 0);
  check_simd_same();
  char path[4096];
  const char *names[4] = {"rgb420.jpg", "tiny420.jpg", "tinyprog.jpg",
                          "tiny.png"};
  unsigned char *img[4];
  size_t len[4];
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    img[i] = slurp(path, &len[i]);
    REQUIRE(img[i] != NULL, "cannot read %s", path);
  }
  check_determinism(img[0], len[0]);
  check_refusals(img[0], len[0]);
  check_reuse(img[0], len[0]);
  check_damage(names[1], img[1], len[1], len[1], 0);
  check_damage(names[2], img[2], len[2], len[2], 0);
  check_damage(names[1], img[1], len[1], len[1], 1);
  check_damage(names[2], img[2], len[2], len[2], 1);
  /* libspng reads IEND without its CRC: a PNG cut inside its last 4 bytes
   * is accepted (every pixel and every CRC before are there). */
  check_damage(names[3], img[3], len[3], len[3] - 4, 0);
  check_crop_vs_full(dir);
  for (int i = 0; i < 4; i++)
    free(img[i]);
  return ft_summary("test_image");
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "decode") == 0)
    return cmd_decode(argc, argv);
  if (argc == 3 && strcmp(argv[1], "probe") == 0)
    return cmd_probe(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "box") == 0)
    return cmd_box(argc, argv);
  if (argc == 3 && strcmp(argv[1], "selftest") == 0)
    return cmd_selftest(argv[2]);
  fprintf(stderr, "usage: test_image probe|decode|box|selftest ...\n");
  return 99;
}
