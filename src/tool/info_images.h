/*
 * info_images.h - private to `ferry info` (cmd_info.c): the image headers
 * a dataset opened with decode= shows (info_images.c).
 */
#ifndef FERRY_TOOL_INFO_IMAGES_H
#define FERRY_TOOL_INFO_IMAGES_H

#include "tool.h"

#define INFO_VARS 8 /* decoded variables summarised */
#define INFO_KEYS 8 /* distinct formats, channels, subsamplings counted */
#define INFO_PROBE_DEFAULT "256"

typedef struct info_count {
  char key[16];
  int64_t n;
} info_count;

/* One decoded variable's probed headers. */
typedef struct info_var_images {
  char name[64];
  int64_t width[3], height[3], bytes[3]; /* min, median, max of the good */
  info_count formats[INFO_KEYS], channels[INFO_KEYS], sampling[INFO_KEYS];
  int nformats, nchannels, nsampling;
  int64_t progressive; /* progressive JPEGs and interlaced PNGs */
  int64_t bad;         /* headers that could not be read */
  char first_bad[512]; /* the first one's message */
} info_var_images;

typedef struct info_images {
  int on; /* decode= set and --probe K > 0 */
  int64_t probe, samples, probed;
  uint64_t seed;
  int nvars;
  info_var_images vars[INFO_VARS];
} info_images;

/* Rank 0 (LOCAL): the headers of min(probe, N) samples of each decoded
 * variable, drawn from the seed option (all of them when N <= probe),
 * into out; nothing (out->on 0) without decode= or with probe 0.
 * Returns 0 or the library's error (a read failed). */
int info_images_probe(const tool_ctx *ctx, ferry_loader *L, int64_t probe,
                      info_images *out);
/* The text lines, and the JSON member ", \"images\": {...}". */
void info_images_text(const info_images *im);
void info_images_json(const info_images *im);

#endif /* FERRY_TOOL_INFO_IMAGES_H */
