/*
 * fuzz_classic.c - the netCDF classic header parser (ferry__cdf_parse,
 * backends/classic.c) on arbitrary bytes taken as the whole file: the
 * header of a CDF-1, CDF-2 or CDF-5 file.  It must accept, ask for more
 * bytes (1: never here, the input is the whole file) or refuse with a
 * message; what it accepts must summarise sanely.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/backend.h"
#include "backends/classic.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ferry__cdf *h = NULL;
  ferry__err err;
  memset(&err, 0, sizeof err);
  int rc = ferry__cdf_parse(data, size, (int64_t)size, "fuzz.nc", &h, &err);
  if (rc < 0) {
    FUZZ_CHECK(err.code < 0 && err.msg[0] && h == NULL);
    return 0;
  }
  /* the whole file was given: "read more" is impossible */
  FUZZ_CHECK(rc == 0 && h != NULL);
  int version = 0, nvars = -1;
  int64_t numrecs = -1, recsize = -1;
  ferry__cdf_summary(h, &version, &nvars, &numrecs, &recsize);
  FUZZ_CHECK(version == 1 || version == 2 || version == 5);
  FUZZ_CHECK(nvars >= 0 && numrecs >= 0 && recsize >= 0);
  ferry__cdf_free(h);
  return 0;
}
