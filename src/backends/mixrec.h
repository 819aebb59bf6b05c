/*
 * backends/mixrec.h - the mix backend's record of one source (mixread.c), built
 * and read by the dataset's mix (dataset/mix.c).
 */
#ifndef FERRY_MIXREC_H
#define FERRY_MIXREC_H

#include "backends/backend.h"

/**
 * The mix backend's record of one source (backends/mixread.c), kept in the
 * first variable's record of the source's part of a mix manifest (the core
 * builds it in dataset/mix.c and reads it in ferry__mix_sources): the
 * normalised proportion, the exhaust rule (FERRY__EXHAUST_*), the source's
 * dataset string, the common names its variables are served as (the
 * source's variable i is common[i]) and its packed manifest
 * (ferry__manifest_pack).  pack: out->p malloc'd, 0 or FERRY_ENOMEM (then
 * out->p is NULL and out->len the bytes it could not have, for the
 * caller's out-of-memory message).
 * parse: path and common malloc'd (ferry__mix_record_free), sub borrowed
 * from b; FERRY_EFORMAT naming where when b is malformed.
 */
typedef struct ferry__mix_record {
  double proportion;
  int exhaust;
  char *path;
  int ncommon;
  char **common;
  void *sub;
  size_t sublen;
} ferry__mix_record;
int ferry__mix_record_pack(const ferry__mix_record *r, ferry__blob *out);
int ferry__mix_record_parse(const ferry__blob *b, ferry__mix_record *out,
                            const char *where, ferry__err *err);
void ferry__mix_record_free(ferry__mix_record *r);
/** A mix manifest's part pt (a source): its record (rec[0]) parsed into
 *  out, or FERRY_EFORMAT naming the source when it has none. */
int ferry__mix_part_record(const ferry__part *pt, ferry__mix_record *out,
                           ferry__err *err);

#endif /* FERRY_MIXREC_H */
