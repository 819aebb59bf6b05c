/*
 * toolkit.c - what every backend shares: the MPI-IO read helper (one call,
 * its count checked, the ROMIO zero-byte rule), whole-buffer pread.
 */
#include "config.h"
#include "backends/backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ferry__mpi_read(MPI_File fh, int coll, MPI_Offset off, void *buf, int n,
                    const char *where, ferry__err *err) {
  MPI_Status st;
  int got = 0;
  const char *call = coll ? "MPI_File_read_at_all" : "MPI_File_read_at";
  int mrc = coll ? MPI_File_read_at_all(fh, off, buf, n, MPI_BYTE, &st)
                 : MPI_File_read_at(fh, off, buf, n, MPI_BYTE, &st);
  if (mrc == MPI_SUCCESS && n > 0) {
    call = "MPI_Get_count";
    mrc = MPI_Get_count(&st, MPI_BYTE, &got);
  }
  if (mrc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(mrc, s, &len) != MPI_SUCCESS)
      snprintf(s, sizeof s, "MPI error %d", mrc);
    return ferry__seterr(err, FERRY_EIO,
                         "%s failed: %s, offset %lld, %d bytes: %s", call,
                         where, (long long)off, n, s);
  }
  if (n > 0 && got != n)
    return ferry__seterr(err, FERRY_EIO,
                         "short read: %s, offset %lld: got %d of %d bytes",
                         where, (long long)off, got, n);
  return 0;
}

