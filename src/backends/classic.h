/*
 * backends/classic.h - the netCDF classic header parser (classic.c), for the
 * tests and the fuzz harness.
 */
#ifndef FERRY_CLASSIC_H
#define FERRY_CLASSIC_H

#include "backends/backend.h"

/**
 * Parse a netCDF classic header (CDF-1, CDF-2, CDF-5) from the first len
 * bytes of a file of file_size bytes (classic.c).  0 with *out set (free
 * with ferry__cdf_free); 1 when the header runs past the len bytes given
 * but not past the file (read more and call again); a negative FERRY_E*
 * naming path, the field and its offset when the header is malformed.
 */
typedef struct ferry__cdf ferry__cdf;
int ferry__cdf_parse(const unsigned char *buf, size_t len, int64_t file_size,
                     const char *path, ferry__cdf **out, ferry__err *err);
void ferry__cdf_free(ferry__cdf *h);
void ferry__cdf_summary(const ferry__cdf *h, int *version, int *nvars,
                        int64_t *numrecs, int64_t *recsize);

#endif /* FERRY_CLASSIC_H */
