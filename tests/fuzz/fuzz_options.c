/*
 * fuzz_options.c - the loader options' config file (ferry_options_load,
 * core/options.c: "name = value" lines, '#' comments, every value checked
 * by its option's parser) on arbitrary bytes.  ferry_options_load reads a
 * path, so the bytes go to an anonymous file (memfd) named through
 * /proc/self/fd.  What loads must read back: every option's value is
 * printable again (ferry_options_get) and sets itself.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* memfd_create */
#endif

#include "core/options.h"
#include "fuzz.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* An anonymous file holding data; its path into path.  -1 on failure. */
static int anon_file(const uint8_t *data, size_t size, char *path, size_t cap) {
  int fd = memfd_create("ferry-fuzz-config", 0);
  if (fd < 0)
    return -1;
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)w;
  }
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = anon_file(data, size, path, sizeof path);
  if (fd < 0)
    return 0; /* no memfd here: nothing to test */
  ferry_options *o = NULL;
  FUZZ_CHECK(ferry_options_create(&o) == 0);
  if (ferry_options_load(o, path) == 0) {
    for (int i = 0; i < ferry__option_count(); i++) {
      const ferry_option_info *info = ferry_option_info_get(i);
      char buf[4096];
      FUZZ_CHECK(info != NULL);
      FUZZ_CHECK(ferry_options_get(o, info->name, buf, sizeof buf) == 0);
      FUZZ_CHECK(ferry_options_set(o, info->name, buf) == 0);
    }
  }
  ferry_options_free(o);
  close(fd);
  return 0;
}
