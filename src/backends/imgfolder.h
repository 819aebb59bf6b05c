/*
 * backends/imgfolder.h - the record reader of the image folder backend
 * (imgfolder.c, decision 0059), kept apart so that tests/fuzz/
 * fuzz_imgfolder.c can hand it arbitrary bytes: records come from rank 0
 * and from saved manifest files (hex), so nothing in them is trusted.
 *
 * The image variable's record is the location table of decision 0057 in
 * its kind 3 (LOC_FILES): u8 kind 3, u64 n (the samples), u64 nfiles, then
 * nfiles names (u32 length, the bytes: a path below the folder's root,
 * '/'-separated, no empty, "." or ".." component, no NUL, at most 4095
 * bytes), then n u64: the file of each sample, an index into the names.
 * The label's record is kind 2 (LOC_VALUES): u8 2, u64 n, n int64 labels.
 * All little-endian (util/record.h).
 */
#ifndef FERRY_IMGFOLDER_H
#define FERRY_IMGFOLDER_H

#include "util/record.h"

#include <stddef.h>
#include <stdint.h>

/* The location table's kinds used here (decision 0057). */
enum { FERRY__IMG_LOC_VALUES = 2, FERRY__IMG_LOC_FILES = 3 };
/* A path below the root: at most this many bytes. */
#define FERRY__IMG_REL_MAX 4095

/* A variable's location table, decoded from its record. */
typedef struct ferry__img_loctab {
  int kind;           /* FERRY__IMG_LOC_*; 0: not decoded */
  int64_t *v;         /* [n] values, or each sample's file */
  int64_t nfiles;     /* LOC_FILES: the names in the record */
  int64_t *name_at;   /* [nfiles] offset of each name's bytes in the record */
  uint32_t *name_len; /* [nfiles] */
} ferry__img_loctab;

/**
 * Decode the len bytes at rec: kind 3 when ragged (the image variable),
 * else kind 2, of nsamples entries.  0 with *t filled (free it with
 * ferry__img_loctab_free; the names stay in rec); else *r says why
 * (r->rc FERRY_EFORMAT: r->why at byte r->at; FERRY_ENOMEM: r->want
 * bytes) and *t is empty.
 */
int ferry__img_loctab_parse(const void *rec, size_t len, int ragged,
                            int64_t nsamples, ferry__img_loctab *t,
                            ferry__rec_r *r);
void ferry__img_loctab_free(ferry__img_loctab *t);

#endif /* FERRY_IMGFOLDER_H */
