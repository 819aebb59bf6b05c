/*
 * mpiio.c - the toolkit's MPI-IO steps, one copy for every backend that
 * reads through MPI-IO (npy, npz, netCDF classic, Parquet): the reserved
 * hints a read-only loader gives, the open that checks the file is still
 * the size rank 0 saw (collectively, the ranks agreeing on the outcome
 * before any keeps the handle), and a read of any length.
 */
#include "config.h"
#include "backends/toolkit.h"

/* One independent MPI-IO call reads at most this much (a count is an int). */
#define MPIIO_READ_MAX ((int64_t)1 << 30)

MPI_Info ferry__mpiio_hints(int collective) {
  MPI_Info info = MPI_INFO_NULL;
  /* Reserved MPI hints: the files are only read; collective buffering lets
   * a few aggregators read large contiguous extents for everyone. */
  if (MPI_Info_create(&info) != MPI_SUCCESS)
    return MPI_INFO_NULL;
  MPI_Info_set(info, "access_style", "read_mostly");
  if (collective)
    MPI_Info_set(info, "collective_buffering", "true");
  return info;
}

/* Checks of a freshly opened handle: errors returned, size as rank 0 saw. */
static int check_opened(MPI_File fh, int rank, const char *path,
                        const char *vname, int64_t file_size, ferry__err *err) {
  MPI_Offset size = -1;
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  int mrc = MPI_File_get_size(fh, &size);
  if (mrc != MPI_SUCCESS)
    return vname ? ferry__mpi_fail(err, FERRY_EIO, mrc,
                                   "MPI_File_get_size failed: file %s, "
                                   "variable %s, rank %d, offset 0",
                                   path, vname, rank)
                 : ferry__mpi_fail(err, FERRY_EIO, mrc,
                                   "MPI_File_get_size failed: file %s, rank "
                                   "%d, offset 0",
                                   path, rank);
  if ((int64_t)size == file_size)
    return 0;
  return vname
             ? ferry__seterr(err, FERRY_EMISMATCH,
                             "file %s is %lld bytes on rank %d but %lld "
                             "bytes when rank 0 scanned it (variable %s, "
                             "offset 0)",
                             path, (long long)size, rank, (long long)file_size,
                             vname)
             : ferry__seterr(err, FERRY_EMISMATCH,
                             "file %s is %lld bytes on rank %d but %lld "
                             "bytes when rank 0 scanned it (offset 0)",
                             path, (long long)size, rank, (long long)file_size);
}

int ferry__mpiio_open(MPI_Comm comm, int collective, MPI_Info info, int rank,
                      const char *path, const char *vname, int64_t file_size,
                      int rc, MPI_File *out, ferry__err *err) {
  MPI_File fh = MPI_FILE_NULL;
  int code = rc, opened = 0;
  if (rc < 0 && !collective)
    return rc;
  /* With collective I/O a rank that already failed still joins the open,
   * which is collective, and the agreement below. */
  int mrc = MPI_File_open(collective ? comm : MPI_COMM_SELF, path,
                          MPI_MODE_RDONLY, info, &fh);
  if (rc < 0) {
    opened = mrc == MPI_SUCCESS;
  } else if (mrc != MPI_SUCCESS) {
    code = vname ? ferry__mpi_fail(err, ferry__mpi_open_code(mrc), mrc,
                                   "MPI_File_open failed: file %s, variable "
                                   "%s, rank %d, offset 0",
                                   path, vname, rank)
                 : ferry__mpi_fail(err, ferry__mpi_open_code(mrc), mrc,
                                   "MPI_File_open failed: file %s, rank %d, "
                                   "offset 0",
                                   path, rank);
  } else {
    opened = 1;
    code = check_opened(fh, rank, path, vname, file_size, err);
  }
  if (collective) {
    /* Every rank reports the lowest failing rank's reason (util/agree.c). */
    code = ferry__agree(comm, rank, code, err);
    if (code < 0) {
      /* Closing is collective: only when every rank holds the handle.  A
       * handle some ranks failed to open is left open (leaked) on purpose. */
      int all = 0;
      if (MPI_Allreduce(&opened, &all, 1, MPI_INT, MPI_MIN, comm) ==
              MPI_SUCCESS &&
          all == 1)
        MPI_File_close(&fh);
      return code;
    }
  } else if (code < 0) {
    if (opened)
      MPI_File_close(&fh);
    return code;
  }
  *out = fh;
  return 0;
}

int ferry__mpiio_read_range(MPI_File fh, int collective, int64_t offset,
                            int64_t nbytes, void *buf, int rc,
                            const char *where, ferry__err *err) {
  if (collective) {
    int rc2 =
        ferry__mpi_read(fh, 1, (MPI_Offset)offset, buf,
                        rc < 0 ? 0 : (int)nbytes, where, rc < 0 ? NULL : err);
    return rc == 0 ? rc2 : rc;
  }
  for (int64_t done = 0; rc == 0 && done < nbytes;) {
    int count =
        (int)(nbytes - done < MPIIO_READ_MAX ? nbytes - done : MPIIO_READ_MAX);
    rc = ferry__mpi_read(fh, 0, (MPI_Offset)(offset + done), (char *)buf + done,
                         count, where, err);
    done += count;
  }
  return rc;
}
