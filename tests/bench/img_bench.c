/*
 * img_bench.c - images/s of the image decode core on one thread
 * (tests/bench/decode.sh runs it beside torchvision's PIL pipeline):
 *
 *   img_bench MODE LAYOUT ROUNDS FILE...
 *
 * MODE random (RandomResizedCrop(224) + flip, the seed the image's number)
 * or center (Resize(256) + CenterCrop(224)); LAYOUT u8 (HWC uint8) or f32
 * (CHW float32 with ImageNet's mean and std).  Each round reads every file
 * (open, read into a reused buffer: what an ImageFolder loader does) and
 * decodes it into one reused output with one reused scratch.  Prints
 * "images N seconds S cpu C images/s R images/cpu-s Q": the wall and the
 * process CPU time of the rounds after a first, untimed one (per core:
 * images per CPU second, which a machine shared with other jobs disturbs
 * less than the wall time).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "image/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int read_file(const char *path, unsigned char **buf, size_t *cap,
                     size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  *n = 0;
  for (;;) {
    if (*n == *cap) {
      size_t nc = *cap ? 2 * *cap : 1 << 20;
      unsigned char *nb = realloc(*buf, nc);
      if (!nb) {
        fclose(f);
        return -1;
      }
      *buf = nb;
      *cap = nc;
    }
    size_t r = fread(*buf + *n, 1, *cap - *n, f);
    *n += r;
    if (r == 0)
      break;
  }
  return fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: img_bench random|center u8|f32 ROUNDS FILE...\n");
    return 2;
  }
  ferry__img_spec spec;
  ferry__img_spec_init(&spec);
  if (strcmp(argv[1], "random") == 0) {
    spec.crop = FERRY__IMG_CROP_RANDOM;
  } else {
    spec.resize = FERRY__IMG_RESIZE_SHORTER;
    spec.resize_to = 256;
    spec.crop = FERRY__IMG_CROP_CENTER;
  }
  if (strcmp(argv[2], "f32") == 0) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f};
    static const float sd[3] = {0.229f, 0.224f, 0.225f};
    spec.layout = FERRY__IMG_CHW_F32;
    memcpy(spec.mean, mean, sizeof mean);
    memcpy(spec.std, sd, sizeof sd);
  }
  if (getenv("FERRY_IMG_NO_DCT"))
    spec.dct_scale = 0;
  if (getenv("FERRY_IMG_NO_CROP"))
    spec.crop_decode = 0;
  int rounds = atoi(argv[3]);
  int nfiles = argc - 4;
  void *out = malloc(224 * 224 * 3 * 4);
  unsigned char *buf = NULL;
  size_t cap = 0, n = 0;
  ferry__img_scratch s;
  ferry__img_scratch_init(&s);
  if (getenv("FERRY_IMG_NO_SIMD"))
    s.no_simd = 1;
  else if (getenv("FERRY_IMG_NO_AVX2"))
    s.no_simd = 2;
  char why[256];
  double t0 = 0, c0 = 0;
  long done = 0;
  for (int r = 0; r <= rounds; r++) {
    if (r == 1) {
      t0 = now(CLOCK_MONOTONIC);
      c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    }
    for (int i = 0; i < nfiles; i++) {
      if (read_file(argv[4 + i], &buf, &cap, &n) != 0) {
        fprintf(stderr, "img_bench: cannot read %s\n", argv[4 + i]);
        return 1;
      }
      int rc = ferry__img_decode(buf, n, &spec,
                                 (uint64_t)r * (uint64_t)nfiles + (uint64_t)i,
                                 &s, out, why, sizeof why);
      if (rc) {
        fprintf(stderr, "img_bench: %s: %s\n", argv[4 + i], why);
        return 1;
      }
      if (r > 0)
        done++;
    }
  }
  double dt = now(CLOCK_MONOTONIC) - t0;
  double dc = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
  printf("images %ld seconds %.3f cpu %.3f images/s %.1f images/cpu-s %.1f\n",
         done, dt, dc, (double)done / dt, (double)done / dc);
  ferry__img_scratch_free(&s);
  free(buf);
  free(out);
  return 0;
}
