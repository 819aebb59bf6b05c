/*
 * dataset/mix.h - several datasets read as one (docs/sampling.md, "Mixing
 * datasets: the specification"): the mix specification, the scan that
 * builds one manifest whose parts are the sources, and the accessor the
 * sampling plan reads the sources through (dataset/mix.c).  The reads go
 * through the "mix" backend (backends/mixread.c).
 */
#ifndef FERRY_MIX_H
#define FERRY_MIX_H

#include "dataset/dataset.h"

/** The most sources a mix may have. */
#define FERRY__MIX_MAX_SOURCES 1024

/** One source of a mix, as the specification gives it. */
typedef struct ferry__mix_spec_source {
  char *path;        /* the dataset string (relative to a mix file's dir) */
  double proportion; /* normalised: the sources' sum to 1                 */
  int exhaust;       /* FERRY__EXHAUST_*                                  */
  char *map;         /* "COMMON:NAME,..." or NULL                         */
} ferry__mix_spec_source;

typedef struct ferry__mix_spec {
  int n;
  ferry__mix_spec_source *src;
} ferry__mix_spec;

/** Whether a dataset string is a mix ("mix:LIST" or "mix:@FILE"), and
 *  whether a manifest is a mix's (its backend is "mix"): the one place
 *  each is decided (issue 24; the loader, the scan, the selection of
 *  variables, the sampling plan and ferry info all ask here). */
int ferry__mix_is(const char *dataset);
int ferry__mix_is_manifest(const ferry__manifest *m);

/** The mix whose sources m's parts are: m itself when it is a mix's
 *  manifest; m->inner when m is a virtual dataset over a mix with one part
 *  per source (loader/pack.c: a mix's packed rows, each source's rows one
 *  part); else NULL.  The sampling plan draws from m's parts in the
 *  proportions and rules of that mix's records. */
const ferry__manifest *ferry__mix_of(const ferry__manifest *m);

/** The mix string that dataset (and the mix option) name: "mix:LIST" or
 *  "mix:@FILE" as given, or "mix:" + opts->mix when dataset is NULL, ""
 *  or "mix" and the option is set; NULL when this is no mix (*out NULL,
 *  returns 0).  Returns 0 or FERRY_ENOMEM; *out malloc'd. */
int ferry__mix_dataset(const char *dataset, const ferry_options *opts,
                       char **out);
/** The bytes ferry__mix_dataset allocates for dataset and opts (an
 *  out-of-memory message). */
size_t ferry__mix_dataset_bytes(const char *dataset, const ferry_options *opts);

/** Parse a mix string ("mix:LIST" or "mix:@FILE"); default_exhaust is the
 *  rule of sources that name none.  FERRY_EINVAL naming the file and line
 *  or the list item. */
int ferry__mix_parse(const char *mix, int default_exhaust, ferry__mix_spec *out,
                     ferry__err *err);
void ferry__mix_spec_free(ferry__mix_spec *s);

/** Rank 0: the manifest of the mix string spec (ferry__mix_is(spec)):
 *  every source scanned with the requested common variables vars (NULL or
 *  "": the first source's), checked to agree, one part per source.
 *  Called by ferry__manifest_scan. */
int ferry__mix_scan(const char *spec, const char *vars,
                    const ferry_options *opts, ferry__manifest *m,
                    ferry__err *err);

typedef struct ferry__mix_source {
  int64_t first, n;  /* the source's samples: [first, first + n) of m     */
  double proportion; /* normalised requested proportion                  */
  int exhaust;       /* FERRY__EXHAUST_*                                 */
  const char *path;  /* borrowed from m                                  */
} ferry__mix_source;

/** m's sources (one per part) when ferry__mix_of(m): *out malloc'd
 *  [*n]; else *n = 0, *out NULL.  Returns 0, FERRY_EFORMAT (a bad record),
 *  FERRY_ENOMEM. */
int ferry__mix_sources(const ferry__manifest *m, ferry__mix_source **out,
                       int *n, ferry__err *err);

/** The name of an exhaust rule ("stop", "restart", "drop"). */
const char *ferry__mix_exhaust_name(int exhaust);

#endif /* FERRY_MIX_H */
