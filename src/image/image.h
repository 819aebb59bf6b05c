/*
 * image/image.h - the image decode core (issue 28's decode stage, not yet
 * wired into the loader): encoded bytes in, a fixed-shape block of pixels
 * out.  JPEG through libjpeg-turbo's TurboJPEG API, PNG through libspng;
 * the resize is Pillow's bilinear filter with antialiasing, in C; the
 * crops are torchvision's (CenterCrop, RandomResizedCrop and a horizontal
 * flip), their random choices drawn from util's counter-based generator
 * keyed by a seed, so the same seed gives the same pixels on any thread.
 *
 * A pure layer: no MPI, no loader, no file; it uses util only.  Every
 * function is LOCAL and thread-safe on distinct scratch structs.
 * docs/image-decode.md is the manual.
 */
#ifndef FERRY_IMAGE_H
#define FERRY_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Sides above this and images of more pixels than spec.max_pixels (default
 * FERRY__IMG_MAX_PIXELS) are refused before anything is allocated. */
#define FERRY__IMG_MAX_SIDE 32768u
#define FERRY__IMG_MAX_PIXELS (1ull << 28)

typedef enum {
  FERRY__IMG_UNKNOWN = 0,
  FERRY__IMG_JPEG = 1,
  FERRY__IMG_PNG = 2
} ferry__img_format;

/** What the headers say (ferry__img_probe): no pixel is decoded. */
typedef struct ferry__img_info {
  int format;      /**< ferry__img_format */
  uint32_t width;  /**< pixels */
  uint32_t height; /**< pixels */
  int channels;    /**< components stored: JPEG 1, 3 or 4 (CMYK/YCCK);
                        PNG 1 gray, 2 gray+alpha, 3 RGB or palette,
                        4 RGBA */
  int bit_depth;   /**< JPEG 8 (12-bit JPEGs are refused); PNG 1-16 */
  /* JPEG */
  int progressive;     /**< SOF2 (or SOF6, SOF10, SOF14) */
  int arithmetic;      /**< arithmetic coding (SOF9-SOF15) */
  int cmyk;            /**< 4 components (CMYK or YCCK) */
  int adobe;           /**< an Adobe APP14 marker (CMYK stored inverted) */
  int adobe_transform; /**< its transform byte, -1 without the marker */
  int h_samp, v_samp;  /**< the first component's sampling factors over the
                            others' (2, 2: 4:2:0; 1, 1: 4:4:4) */
  char subsampling[8]; /**< "4:4:4", "4:2:2", "4:2:0", "4:4:0", "4:1:1",
                            "gray" or "other" */
  /* PNG */
  int png_color_type; /**< 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA */
  int png_interlaced; /**< Adam7 */
} ferry__img_info;

typedef enum {
  FERRY__IMG_RESIZE_NONE = 0,    /**< the image as it is */
  FERRY__IMG_RESIZE_SHORTER = 1, /**< shorter side to resize_to, the other
                                      int(resize_to * long / short), as
                                      torchvision's Resize(int) */
  FERRY__IMG_RESIZE_EXACT = 2    /**< the whole image to height x width */
} ferry__img_resize;

typedef enum {
  FERRY__IMG_CROP_NONE = 0,   /**< the (resized) image is the output */
  FERRY__IMG_CROP_CENTER = 1, /**< torchvision's CenterCrop (zero padding
                                   where the image is smaller) */
  FERRY__IMG_CROP_RANDOM = 2  /**< torchvision's RandomResizedCrop (scale,
                                   ratio) to height x width, then a
                                   horizontal flip with probability 1/2 */
} ferry__img_crop;

typedef enum {
  FERRY__IMG_HWC_U8 = 0, /**< [H][W][C] uint8 */
  FERRY__IMG_CHW_F32 = 1 /**< [C][H][W] float32, (v / 255 - mean) / std */
} ferry__img_layout;

/** What the caller wants out; ferry__img_spec_init fills the defaults. */
typedef struct ferry__img_spec {
  uint32_t height, width;      /**< output size, 1 .. FERRY__IMG_MAX_SIDE */
  int channels;                /**< 1 (gray) or 3 (RGB) */
  int layout;                  /**< ferry__img_layout */
  int resize;                  /**< ferry__img_resize */
  uint32_t resize_to;          /**< FERRY__IMG_RESIZE_SHORTER's side */
  int crop;                    /**< ferry__img_crop */
  double scale_min, scale_max; /**< random crop: the area fraction's range
                                    (0.08, 1) */
  double ratio_min, ratio_max; /**< random crop: the aspect's range (3/4,
                                    4/3) */
  int flip;                    /**< random crop: flip with probability 1/2
                                    (1, the default) or never (0) */
  float mean[3], std[3];       /**< FERRY__IMG_CHW_F32 (0 and 1) */
  int dct_scale;       /**< 1 (default): let JPEG decode at M/8 scale where the
                            resize needs fewer pixels; 0: decode at full size
                            (then the pixels equal Pillow's + torchvision's) */
  uint64_t max_pixels; /**< refuse larger images (FERRY__IMG_MAX_PIXELS) */
  int crop_decode;     /**< 1 (default): a JPEG whose output needs only part
                            of the image decodes only those rows and iMCU
                            columns (libjpeg API; the same pixels); 0: the
                            whole image (TurboJPEG) */
} ferry__img_spec;

/** The geometry of one decode (ferry__img_plan): a pure function of the
 *  image size, the spec and the seed. */
typedef struct ferry__img_geom {
  /* The region of the source image the output comes from, in source
   * pixels: a random crop's box, else the whole image. */
  int64_t box_x, box_y, box_w, box_h;
  /* The box is resized to resized_w x resized_h; output pixel (x, y) is
   * pixel (x + off_x, y + off_y) of that (zero outside it). */
  int64_t resized_w, resized_h;
  int64_t off_x, off_y;
  int flip;      /**< the output is mirrored left-right */
  int attempts;  /**< random crop: the draw that fitted (1-10), 0 for
                      the fallback (the central crop) */
  int scale_num; /**< JPEG DCT scaling num/8 (8: full size) */
} ferry__img_geom;

/** Per-thread scratch, owned by the caller and reused across images: the
 *  decoded pixels, the resize's intermediate rows and coefficients, the
 *  TurboJPEG handle.  Zero-initialise, or call ferry__img_scratch_init; free
 *  with ferry__img_scratch_free.  Buffers only grow, so steady state
 *  allocates nothing (but libspng's context, made per PNG). */
typedef struct ferry__img_scratch {
  void *tj;           /**< tjhandle, made at the first JPEG */
  void *jd;           /**< the libjpeg decompressor of the crop path */
  unsigned char *pix; /**< decoded pixels */
  size_t pix_cap;
  unsigned char *rows; /**< the horizontal pass's rows */
  size_t rows_cap;
  unsigned char *stage; /**< the output before flip and float conversion */
  size_t stage_cap;
  int32_t *kx, *ky; /**< fixed-point coefficients */
  size_t kx_cap, ky_cap;
  int32_t *bx, *by; /**< bounds: first source index and count */
  size_t bx_cap, by_cap;
  int32_t *acc; /**< the vertical pass's sums of one row */
  size_t acc_cap;
  double *kd; /**< one output's coefficients before rounding */
  size_t kd_cap;
  int16_t *kv; /**< the horizontal pass's weights as SIMD vectors */
  size_t kv_cap;
  int no_simd; /**< 1: the scalar passes only; 2: no AVX2 (SSSE3 only);
                * for tests and benchmarks */
} ferry__img_scratch;

void ferry__img_scratch_init(ferry__img_scratch *s);
void ferry__img_scratch_free(ferry__img_scratch *s);

/** The defaults: 224 x 224 x 3 HWC uint8, no resize, no crop, the random
 *  crop's scale (0.08, 1) and ratio (3/4, 4/3), flip on, mean 0, std 1,
 *  DCT scaling on, FERRY__IMG_MAX_PIXELS, the cropped JPEG decode on. */
void ferry__img_spec_init(ferry__img_spec *spec);

/** Checks a spec: 0 or FERRY_EINVAL with why. */
int ferry__img_spec_check(const ferry__img_spec *spec, char *why, size_t wl);

/**
 * Reads the headers of p[0, n): format, size, channels, sampling.  Bounded
 * by n; never decodes pixels.  Returns 0, FERRY_EFORMAT (not JPEG or PNG,
 * damaged or truncated headers, a side of 0 or above FERRY__IMG_MAX_SIDE),
 * FERRY_ENOTSUP (12-bit or lossless JPEG), FERRY_EINVAL (NULL); why (wl
 * bytes, may be NULL) says what.
 */
int ferry__img_probe(const unsigned char *p, size_t n, ferry__img_info *out,
                     char *why, size_t wl);

/**
 * The geometry of decoding an image of info's size with spec and seed
 * (crop box, resize, offsets, flip, the JPEG DCT scale).  Pure.  Returns 0,
 * FERRY_EINVAL (a bad spec) or FERRY_ESHAPE (an image that does not fit
 * the spec: a size other than the output with neither resize nor crop).
 */
int ferry__img_plan(const ferry__img_info *info, const ferry__img_spec *spec,
                    uint64_t seed, ferry__img_geom *g, char *why, size_t wl);

/**
 * Decodes p[0, n) into out, spec's fixed shape: height * width * channels
 * bytes (HWC uint8) or floats (CHW float32).  seed keys the random crop
 * and flip.  s is the caller's scratch (one per thread).  Returns 0,
 * FERRY_EFORMAT (corrupt or truncated image, absurd size), FERRY_ENOTSUP
 * (a format this build cannot decode, 12-bit or lossless JPEG),
 * FERRY_ESHAPE (the image does not fit a spec without resize or crop),
 * FERRY_EINVAL (bad spec or arguments), FERRY_ENOMEM; why says what.  Never
 * exits; reads nothing past p + n.
 */
int ferry__img_decode(const unsigned char *p, size_t n,
                      const ferry__img_spec *spec, uint64_t seed,
                      ferry__img_scratch *s, void *out, char *why, size_t wl);

/* ---- Inside the layer ---- */

/** The bilinear resample (resize.c): src (sw x sh x c bytes, stride sw * c)
 *  into dst (dw x dh x c), as g's resize and offsets say, with the box
 *  given in src pixels (bx, by, bw, bh as doubles: a DCT-scaled box is
 *  fractional) clamped to [lo, hi) on each axis.  flip mirrors the
 *  columns.  0 or FERRY_ENOMEM. */
typedef struct ferry__img_resample {
  double x0, y0, w, h;            /**< the box in src pixels */
  int64_t lo_x, hi_x, lo_y, hi_y; /**< the pixels the filter may read */
  int64_t out_w, out_h;           /**< the resized (virtual) image */
  int64_t off_x, off_y;           /**< the output's offset in it */
  int flip;
} ferry__img_resample;

int ferry__img_bilinear(const unsigned char *src, int64_t sw, int64_t sh, int c,
                        const ferry__img_resample *r, unsigned char *dst,
                        int64_t dw, int64_t dh, ferry__img_scratch *s,
                        char *why, size_t wl);

/** Grows *buf to at least bytes (never shrinks): 0 or FERRY_ENOMEM. */
int ferry__img_grow(void **buf, size_t *cap, size_t bytes);

#endif /* FERRY_IMAGE_H */
