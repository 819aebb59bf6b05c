/*
 * fuzz_image.c - the image decode core (ferry__img_decode, src/image/) on
 * arbitrary bytes: JPEG through TurboJPEG, PNG through libspng, then the
 * plan, the resize and the layouts.  The first 8 bytes choose the spec,
 * the rest is the image:
 *   byte 0: bit 0 channels (1 or 3), bit 1 float CHW, bits 2-3 crop (none,
 *           center, random, random), bits 4-5 resize (none, shorter,
 *           exact), bit 6 DCT scaling, bit 7 flip
 *   byte 1: output height 1-64, byte 2: width 1-64, byte 3: shorter side
 *           1-256, bytes 4-7: the seed
 * Images above 2^20 pixels are refused by the spec (max_pixels), so an
 * input stays fast.  Whatever it accepts fills the output; whatever it
 * refuses has a negative code and a message.  A damaged stream must be an
 * error, never a crash, an over-read (ASan) or a leak.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuzz.h"
#include "image/image.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  ferry__img_spec spec;
  ferry__img_spec_init(&spec);
  uint8_t b0 = data[0];
  spec.channels = (b0 & 1) ? 3 : 1;
  spec.layout = (b0 & 2) ? FERRY__IMG_CHW_F32 : FERRY__IMG_HWC_U8;
  int crop = (b0 >> 2) & 3;
  spec.crop = crop == 3 ? FERRY__IMG_CROP_RANDOM : crop;
  int resize = (b0 >> 4) & 3;
  spec.resize = resize == 3 ? FERRY__IMG_RESIZE_NONE : resize;
  spec.dct_scale = (b0 >> 6) & 1;
  spec.flip = (b0 >> 7) & 1;
  spec.height = 1u + data[1] % 64u;
  spec.width = 1u + data[2] % 64u;
  spec.resize_to = 1u + data[3];
  spec.max_pixels = 1u << 20;
  for (int c = 0; c < 3; c++) {
    spec.mean[c] = 0.5f;
    spec.std[c] = 0.25f;
  }
  uint64_t seed = (uint64_t)data[4] | (uint64_t)data[5] << 8 |
                  (uint64_t)data[6] << 16 | (uint64_t)data[7] << 24;
  size_t n = size - 8;
  unsigned char *img = (unsigned char *)fuzz_copy(data + 8, n);
  size_t el = spec.layout == FERRY__IMG_CHW_F32 ? 4 : 1;
  size_t bytes = (size_t)spec.height * spec.width * (size_t)spec.channels * el;
  unsigned char *out = malloc(bytes);
  FUZZ_CHECK(out != NULL);
  ferry__img_scratch s;
  ferry__img_scratch_init(&s);
  char why[256];
  why[0] = '\0';
  int rc = ferry__img_decode(img, n, &spec, seed, &s, out, why, sizeof why);
  if (rc != 0) {
    FUZZ_CHECK(rc < 0 && why[0] != '\0');
  } else {
    /* Every output byte written (ASan/MSan would see a read of garbage
     * only with MSan; sum them so the compiler keeps the reads). */
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++)
      sum += out[i];
    (void)sum;
    ferry__img_info info;
    FUZZ_CHECK(ferry__img_probe(img, n, &info, NULL, 0) == 0);
    FUZZ_CHECK((uint64_t)info.width * info.height <= spec.max_pixels);
  }
  ferry__img_scratch_free(&s);
  free(out);
  free(img);
  return 0;
}
