/*
 * core/options.h - the option record behind ferry_options and its enums
 * (core/options.c holds the one option table).
 */
#ifndef FERRY_OPTIONS_H
#define FERRY_OPTIONS_H

#include "util/util.h"

enum {
  FERRY__SHUFFLE_NONE = 0,
  FERRY__SHUFFLE_CHUNKS,
  FERRY__SHUFFLE_BLOCK,
  FERRY__SHUFFLE_GLOBAL
};
enum { FERRY__PART_CONTIGUOUS = 0, FERRY__PART_STRIDED };
enum { FERRY__TAIL_DROP = 0, FERRY__TAIL_PAD, FERRY__TAIL_PARTIAL };
enum {
  FERRY__IO_INDEPENDENT = 0,
  FERRY__IO_COLLECTIVE,
  FERRY__IO_MMAP,
  FERRY__IO_AUTO /* resolved at ferry_open (loader/io_choice.c) */
};
enum { FERRY__MIX_BY_EPOCH = 0, FERRY__MIX_BY_BATCH };
enum { FERRY__EXHAUST_STOP = 0, FERRY__EXHAUST_RESTART, FERRY__EXHAUST_DROP };
enum { FERRY__MIX_RESUME_REFUSE = 0, FERRY__MIX_RESUME_NEW };
enum { FERRY__SCAN_RANKS = 0, FERRY__SCAN_RANK0 };
enum {
  FERRY__PACK_NONE = 0,
  FERRY__PACK_CONCAT,
  FERRY__PACK_FIRST_FIT,
  FERRY__PACK_BEST_FIT
};
enum { FERRY__OVERFLOW_SPLIT = 0, FERRY__OVERFLOW_DROP };
enum {
  FERRY__SPARSE_DT_FLOAT32 = 0,
  FERRY__SPARSE_DT_FLOAT16,
  FERRY__SPARSE_DT_FLOAT64,
  FERRY__SPARSE_DT_SAME,
  FERRY__SPARSE_DT_BFLOAT16
};
enum { FERRY__DEV_AUTO = 0, FERRY__DEV_CPU, FERRY__DEV_CUDA };
enum { FERRY__CACHE_NONE = 0, FERRY__CACHE_NODE, FERRY__CACHE_CLUSTER };
/* decode=: the crop and the layout (the image core's enums' values) */
enum { FERRY__CROP_NONE = 0, FERRY__CROP_CENTER, FERRY__CROP_RANDOM };
enum { FERRY__LAYOUT_HWC = 0, FERRY__LAYOUT_CHW };
enum {
  FERRY__SIG_NONE = 0,
  FERRY__SIG_USR1,
  FERRY__SIG_USR2,
  FERRY__SIG_TERM,
  FERRY__SIG_INT,
  FERRY__SIG_HUP,
  FERRY__SIG_XCPU
};

struct ferry_options {
  int64_t batch_size;
  uint64_t seed;
  int shuffle;
  int64_t block_size;
  int64_t shuffle_buffer;
  int partition;
  int tail;
  int64_t chunk_samples; /* 0: auto (about FERRY__AUTO_CHUNK_BYTES per chunk) */
  char *vars;            /* comma-separated names, NULL or "": all          */
  int io;
  int64_t prefetch;
  int64_t held_memory; /* bytes for held batches beyond the rings */
  int64_t threads;
  int64_t max_chunks; /* 0: all */
  double fraction;    /* (0, 1] */
  double exchange;    /* (0, 1]: shuffle=global's exchanged fraction */
  /* Sampling (plan/draw.c, docs/sampling.md) */
  char *weights;        /* variable name or path of a .npy; "": none      */
  int replacement;      /* weighted draws with replacement (yes)         */
  int64_t num_draws;    /* draws per epoch, 0: the default               */
  char *balance;        /* label variable; "": none                      */
  char *balance_shares; /* "LABEL:SHARE,..."; "": equal shares          */
  char *mix;            /* "PATH=P,..." or "@FILE"; "": no mix          */
  int mix_by;           /* FERRY__MIX_BY_*                              */
  int mix_exhaust;      /* FERRY__EXHAUST_*: default for the sources    */
  int mix_resume;       /* FERRY__MIX_RESUME_*                          */
  int64_t draw_window;  /* draws mixed together, 0: auto                */
  int64_t draw_block;   /* rows of a sampling block, 0: auto            */
  int device;
  char *devices;           /* "auto", "all" or "0,1" (validated)             */
  int64_t device_prefetch; /* device ring depth                              */
  int keep_host;
  int pin_memory; /* host batches from pinned memory (cudaHostAlloc)       */
  char *manifest; /* path of a saved manifest, NULL: scan          */
  int64_t max_open_files;
  int zarr_reader;       /* index into zarr_reader_names; only the zarr
                          * backend gives it a meaning (it reads it by
                          * name, with ferry_options_get)               */
  int megatron_sample;   /* index into megatron_sample_names (the megatron
                          * backend reads it by name)                  */
  int tar_index;         /* index into tar_index_names (the webdataset
                          * backend reads it by name)                  */
  int mds_hashes;        /* index into mds_hashes_names (the mds backend
                          * reads it by name; ferry verify makes auto
                          * check)                                     */
  int scan;              /* FERRY__SCAN_*: who describes the parts      */
  char *missing;         /* EXT=VALUE,...: the webdataset backend's defaults
                          * for missing members (read by name)         */
  int64_t max_tokens;    /* ragged: rows of a batch, 0: batch_size (tokens.c) */
  int64_t bucket_window; /* max_tokens: samples sorted by length together  */
  int pack;              /* FERRY__PACK_*: packed rows (loader/pack.c)     */
  int64_t seq_len;       /* pack: tokens of a row                          */
  int64_t overlap;       /* pack: 0, or 1 (a row also holds the next's first) */
  int64_t pack_chunk;    /* pack: documents shuffled together, 0: auto     */
  int mask_first;        /* pack: loss_mask 0 on a document's first token  */
  char *pack_var;        /* pack: the corpus's token variable, "": its one */
  int64_t pack_window;   /* first_fit: documents packed together          */
  int overflow;          /* first_fit: FERRY__OVERFLOW_*                   */
  int sparse;            /* 0 rows (M/indices + M/data), 1 dense (sparse.c) */
  int sparse_dtype;      /* sparse=dense: FERRY__SPARSE_DT_*               */
  char *genes;           /* sparse=dense: the columns kept, or ""          */
  /* decode= (loader/decode.c, docs/images.md): image bytes served as
   * fixed-shape pixels; the strings are checked when set and parsed at
   * ferry_open with the ferry__opt_* parsers below */
  char *decode;          /* the bytes variables decoded, ","-separated, or "" */
  char *image_size;      /* "S" or "HxW"                                    */
  char *resize;          /* "none", "shorter:N" or "exact"                  */
  int crop;              /* FERRY__CROP_*                                   */
  char *crop_scale;      /* "LO:HI", random crop's area fraction            */
  char *crop_ratio;      /* "LO:HI", random crop's aspect                   */
  int flip;              /* random crop: flip with probability 1/2          */
  int layout;            /* FERRY__LAYOUT_*                                 */
  char *mean, *std;      /* "a,b,c" (layout=chw), or ""                     */
  int64_t channels;      /* 1 or 3                                          */
  int dct_scale;         /* JPEG decoded at M/8 scale where it may          */
  int offsets_dtype;     /* 0 int64, 1 int32 too (ragged.c)               */
  char *pad;             /* ragged variables: "none", "max" or L (ragged.c) */
  int truncate;          /* pad=L: cut longer samples (1) or refuse (0)  */
  char *pad_value;       /* the padding rows' value, a number            */
  char *null_fill;       /* value for nulls; NULL or "": refused (the
                          * parquet backend reads it by name)          */
  int checkpoint_signal; /* FERRY__SIG_* */
  int64_t verbose;       /* 0 silent, 1 notes, 2 also the GPU libraries    */
  int64_t collective_timeout; /* seconds in an agreement; 0: forever     */
  int cache;                  /* FERRY__CACHE_* (loader/cache.c)         */
  int64_t cache_bytes;        /* per node; 0: auto                      */
  ferry_transform_fn transform;
  void *transform_user;
};

/* 1 MiB: shuffle windows (shuffle_buffer chunks, double-buffered) then stay
 * in cache, which doubled throughput from page cache; parallel file systems
 * with large stripes want chunk_samples raised. */
#define FERRY__AUTO_CHUNK_BYTES ((size_t)1 << 20)

/** Number of options in the table (ferry_option_info_get). */
int ferry__option_count(void);
/** 64-bit hash of option i's canonical value (for the cross-rank check). */
uint64_t ferry__option_hash(const ferry_options *opts, int i);

/* decode='s values (options.c checks them when set with these; the
 * loader's decode view parses them again at ferry_open).  Each returns 0,
 * or -1 for a malformed value. */
/** image_size: "S" (S x S) or "HxW", sides 1 .. 32768. */
int ferry__opt_image_size(const char *v, int64_t *h, int64_t *w);
/** resize: "none" (*mode 0), "shorter:N" (1, *n = N in 1 .. 32768) or
 *  "exact" (2). */
int ferry__opt_resize(const char *v, int *mode, int64_t *n);
/** crop_scale, crop_ratio: "LO:HI", finite, 0 < LO <= HI. */
int ferry__opt_range(const char *v, double *lo, double *hi);
/** mean, std: 1 or 3 finite numbers, ","-separated: their count, or -1
 *  (out holds up to 3). */
int ferry__opt_floats(const char *v, double out[3]);

#endif /* FERRY_OPTIONS_H */
