/*
 * fuzz_npz.c - the .npz reader's zip parsing (backends/zip.c: end of
 * central directory, Zip64 records, central directory entries, local
 * headers, the members' .npy headers) on arbitrary bytes taken as a whole
 * archive.  The backend reads files, so the bytes go to an anonymous file
 * (memfd) that the npz backend's describe opens through /proc/self/fd.
 * It must describe the archive or refuse with a message; what it describes
 * must lie inside the file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "backends/backend.h"
#include "fuzz.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ferry__backend *b = ferry__backend_find("npz");
  if (!b)
    return 0; /* a build without the npz backend */
  int fd = memfd_create("ferry-fuzz-npz", 0);
  FUZZ_CHECK(fd >= 0);
  for (size_t done = 0; done < size;) {
    ssize_t w = write(fd, data + done, size - done);
    FUZZ_CHECK(w > 0);
    done += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ferry__part_desc d;
  ferry__err err;
  memset(&d, 0, sizeof d);
  memset(&err, 0, sizeof err);
  if (b->describe(path, NULL, &d, &err) == 0) {
    FUZZ_CHECK(d.nvars >= 1 && d.num_samples >= 0);
    for (int v = 0; v < d.nvars; v++)
      FUZZ_CHECK(d.data_offset[v] >= 0 && d.data_offset[v] <= (int64_t)size);
  } else {
    FUZZ_CHECK(err.code < 0 && err.msg[0]);
  }
  ferry__part_desc_free(&d);
  close(fd);
  return 0;
}
