#!/bin/sh
# drop_slowfs.sh [OWN_IMAGE] - in a new mount namespace (a copy of the
# machine's), unmount lazily the copies of the slow file systems of other
# tests running at the same time (tests/lib/slowfs.sh: ext4 on a loop
# device whose image lies in a ferry-slowfs.PID.XXXXXX directory).  A copy
# would keep that loop device attached after its test took its file system
# down, until this namespace ends (tests/cluster/slowfs.sh checks that
# nothing is left).  OWN_IMAGE, the caller's own slowfs image, stays.
# Used by tests/lib/hosts.sh (each host's namespace) and tests/cache/cache.sh
# (its private /dev/shm).  Always exits 0.
own=${1:-/nonexistent}
for f in /sys/block/loop*/loop/backing_file; do
  b=$(cat "$f" 2>/dev/null) || continue
  case $b in
    "$own"*) continue ;;
    */ferry-slowfs.*/image*) ;;
    *) continue ;;
  esac
  d=${f#/sys/block/}
  d=/dev/${d%%/*}
  for t in $(findmnt -rn -S "$d" -o TARGET 2>/dev/null); do
    umount -l "$t" 2>/dev/null
  done
done
exit 0
