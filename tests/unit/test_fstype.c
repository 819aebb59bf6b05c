/*
 * test_fstype.c - io=auto's rule (backends/fstype.c): the statfs(2) f_type
 * magic numbers of the documented table classify as local (mapped) or
 * parallel/network (read), an unknown one is read, and the f_type of this
 * machine's /dev/shm (tmpfs) and of the test's own directory come back
 * from ferry__fs_of as `stat -f` reports them (tests/loader/io_auto.sh checks
 * the choice the loader makes from them).
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"

#include <string.h>
#include <unistd.h>

#include "../ferry_test.h"

typedef struct want {
  uint64_t magic;
  const char *name;
  int kind;
} want;

/* The table of docs/options.md (io=auto), written out again on purpose: a
 * change of the rule must change both. */
static const want table[] = {
    {0xEF53, "ext2/3/4", FERRY__FS_LOCAL},
    {0x58465342, "xfs", FERRY__FS_LOCAL},
    {0x9123683E, "btrfs", FERRY__FS_LOCAL},
    {0x01021994, "tmpfs", FERRY__FS_LOCAL},
    {0x2FC12FC1, "zfs", FERRY__FS_LOCAL},
    {0x794C7630, "overlayfs", FERRY__FS_LOCAL},
    {0x0BD00BD0, "lustre", FERRY__FS_REMOTE},
    {0x47504653, "gpfs", FERRY__FS_REMOTE},
    {0x19830326, "beegfs", FERRY__FS_REMOTE},
    {0x6969, "nfs", FERRY__FS_REMOTE},
    {0xFF534D42, "cifs", FERRY__FS_REMOTE},
    {0x00C36400, "ceph", FERRY__FS_REMOTE},
    {0x65735546, "fuse", FERRY__FS_REMOTE},
    {0x12345678, "unknown", FERRY__FS_UNKNOWN},
    {0, "unknown", FERRY__FS_UNKNOWN},
};

static void test_table(void) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const char *name = NULL;
    int kind = ferry__fs_classify(table[i].magic, &name);
    CHECK(kind == table[i].kind, "f_type 0x%llx: kind %d, expected %d",
          (unsigned long long)table[i].magic, kind, table[i].kind);
    CHECK(name && strcmp(name, table[i].name) == 0,
          "f_type 0x%llx: name %s, expected %s",
          (unsigned long long)table[i].magic, name ? name : "(null)",
          table[i].name);
  }
}

/* What ferry__fs_of says of path, against the magic `stat -f -c %t` gives
 * (coreutils); /dev/shm must classify as local. */
static void test_path(const char *path) {
  if (access(path, R_OK) != 0)
    return;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "stat -f -c %%t '%s' 2>/dev/null", path);
  FILE *f = popen(cmd, "r");
  unsigned long long want_magic = 0;
  int got = f ? fscanf(f, "%llx", &want_magic) : 0;
  if (f)
    pclose(f);
  if (got != 1) /* no stat(1): nothing to compare with */
    return;
  uint64_t magic = 0;
  ferry__err err = {0};
  CHECK(ferry__fs_of(path, &magic, &err) == 0, "statfs %s: %s", path, err.msg);
  CHECK(magic == (want_magic & 0xFFFFFFFFull),
        "%s: f_type 0x%llx, stat -f says 0x%llx", path,
        (unsigned long long)magic, want_magic);
  const char *name = NULL;
  if (strcmp(path, "/dev/shm") == 0)
    CHECK(ferry__fs_classify(magic, &name) == FERRY__FS_LOCAL,
          "/dev/shm (f_type 0x%llx, %s) is not local",
          (unsigned long long)magic, name);
}

static void test_missing(void) {
  uint64_t magic = 1;
  ferry__err err = {0};
  int rc = ferry__fs_of("/nonexistent/ferry/x.npy", &magic, &err);
  CHECK(rc < 0, "statfs of a missing file succeeded");
  CHECK(strstr(err.msg, "/nonexistent/ferry/x.npy") != NULL,
        "the error names the file: %s", err.msg);
}

int main(void) {
  test_table();
  test_path("/dev/shm");
  test_path(".");
  test_missing();
  return ft_summary("test_fstype");
}
