/*
 * fstype.c - which file system a path is on, for io=auto.
 *
 * Why: mapping a file (io=mmap) copies rows straight from the page cache
 * into the batch, one copy instead of pread's two, and it is only sound
 * where the page cache is the file's: a local disk or tmpfs.  On a parallel
 * or network file system (Lustre, GPFS, BeeGFS, NFS, ...) a page fault is a
 * small synchronous request to a server where pread asks for a whole extent
 * at once, the client may drop or revoke cached pages under a lock another
 * node takes, and a server error on a mapped page is a SIGBUS; there ferry
 * keeps its reads.  statfs(2)'s f_type magic names the file system; the
 * table below is the rule (docs/options.md, docs/design/io.md).  A file system
 * the table does not know is read, not mapped: the safe side.
 */
#include "config.h"
#include "backends/backend.h"
#include "backends/toolkit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

typedef struct fs_kind {
  uint64_t magic;
  const char *name;
  int local; /* 1: local (mapped), 0: parallel or network (read) */
} fs_kind;

/* f_type magic numbers (linux/magic.h and the file systems' own headers). */
static const fs_kind kinds[] = {
    {0xEF53, "ext2/3/4", 1},     {0x58465342, "xfs", 1},
    {0x9123683E, "btrfs", 1},    {0x01021994, "tmpfs", 1},
    {0x858458F6, "ramfs", 1},    {0xF2F52010, "f2fs", 1},
    {0x2FC12FC1, "zfs", 1},      {0x794C7630, "overlayfs", 1},
    {0x73717368, "squashfs", 1}, {0xCA451A4E, "bcachefs", 1},
    {0x3153464A, "jfs", 1},      {0x52654973, "reiserfs", 1},
    {0x2011BAB0, "exfat", 1},    {0x4D44, "vfat", 1},
    {0x5346544E, "ntfs", 1},     {0x0BD00BD0, "lustre", 0},
    {0x47504653, "gpfs", 0},     {0x19830326, "beegfs", 0},
    {0x6969, "nfs", 0},          {0xFF534D42, "cifs", 0},
    {0xFE534D42, "smb2", 0},     {0x517B, "smb", 0},
    {0x00C36400, "ceph", 0},     {0xAAD7AAEA, "panfs", 0},
    {0x20030528, "orangefs", 0}, {0x5346414F, "afs", 0},
    {0x01021997, "9p", 0},       {0x65735546, "fuse", 0},
};

int ferry__fs_classify(uint64_t magic, const char **name) {
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (kinds[i].magic == magic) {
      *name = kinds[i].name;
      return kinds[i].local ? FERRY__FS_LOCAL : FERRY__FS_REMOTE;
    }
  *name = "unknown";
  return FERRY__FS_UNKNOWN;
}

int ferry__fs_of(const char *path, uint64_t *magic, ferry__err *err) {
  *magic = 0;
#ifdef __linux__
  struct statfs sf;
  if (statfs(path, &sf) != 0)
    return ferry__seterr(err, ferry__errno_code(errno),
                         "statfs failed: file %s: %s", path, strerror(errno));
  /* f_type is a signed word on some targets: keep its low 32 bits */
  *magic = (uint64_t)sf.f_type & UINT64_C(0xFFFFFFFF);
  return 0;
#else
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "no statfs(2) f_type on this system: file %s", path);
#endif
}
