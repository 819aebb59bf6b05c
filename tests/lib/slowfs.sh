# slowfs.sh - storage that behaves like a shared parallel file system, on
# this one machine, for the tests and benchmarks of the node cache (issue
# 29): a file system whose reads, for data not in the page cache, are
# capped at a bandwidth shared by every process reading it, and counters
# of what a process really read from storage.  Source it (after
# lib/common.sh or lib/check.sh, which set $tmp), then:
#
#   slowfs_up "$tmp/pfs" 50      # ext4 at $tmp/pfs, reads capped at 50 MB/s;
#                                # skips (exit 77) where it cannot be made
#   cp data "$tmp/pfs/"          # writes are not capped
#   slowfs_evict "$tmp/pfs"      # drop its files from the page cache
#   slowfs_run $RUN_MPI 4 "$prog"            # run capped (children too)
#   slowfs_measure "$tmp/m" dd if=... of=/dev/null  # run capped and count:
#                                # "wall_s=1.34 read_bytes=N device_bytes=N"
#   slowfs_read_bytes PID        # read_bytes of /proc/PID/io
#   slowfs_device_bytes          # bytes read from the device by slowfs_run
#   slowfs_down                  # remove it all (idempotent; the trap
#                                # calls it on every exit too)
#
# How (tests/README.md, "Slow storage on one machine", says why this and
# not device-mapper or FUSE):
#   device     a sparse image file (SLOWFS_SIZE) in a directory of the
#              harness's own, ferry-slowfs.PID.XXXXXX under
#              $FERRY_TEST_TMPDIR (else $TMPDIR, /tmp), attached to a loop
#              device with direct I/O (losetup --direct-io=on): the loop
#              reads its image with O_DIRECT, so the image's data is not
#              also in the page cache under the file system's
#   file system ext4 without a journal, mounted noatime at DIR; right after
#              the mount the loop device is detached lazily (autoclear):
#              it goes away by itself when the file system is unmounted
#   the cap    a cgroup v1 blkio cgroup of its own, ferry-slowfs.PID, with
#              blkio.throttle.read_bps_device "MAJ:MIN RATE" for the loop
#              device (RATE_MB * 1,000,000 bytes a second).  Only the
#              processes in that cgroup are capped: slowfs_run puts a
#              command there, and everything it starts (mpirun, its
#              daemons and ranks, also on the simulated hosts of
#              lib/hosts.sh, which enter namespaces but not cgroups)
#              inherits it.  They share the one cap, as the nodes of a
#              cluster share the bandwidth of a parallel file system.  A
#              process outside it (the test's shell) reads at the disk's
#              speed.  Reads of cached pages never reach the device, so a
#              warm read is not capped; writes are not capped.
#   counting   read_bytes of /proc/PID/io: the bytes a process caused to
#              be read from any block device (readahead included; cached
#              pages not), its reaped children's added when it waits for
#              them.  On this machine's kernel (6.18, a Firecracker VM) it
#              counts reads from the loop device: a cold 64 MiB dd counts
#              64 MiB, a warm one 0 (tests/cluster/slowfs.sh checks it and
#              skips that check where the kernel counts nothing).  The
#              cgroup's blkio.throttle.io_service_bytes gives the bytes read
#              from the loop device alone, by every process of the cgroup.
#
# Clean-up.  slowfs_up sets a trap (replacing common.sh's, which only
# removes $tmp) that calls slowfs_down on any exit and on the signals a
# timeout sends, then removes $tmp.  slowfs_down kills the processes left
# in the cgroup (the test's, started by slowfs_run), unmounts DIR (lazily
# if still busy), detaches the loop device if it still backs the image,
# removes the cgroup and the harness's directory.  It does that from a
# script written into the harness's directory, which a watcher process
# (started by slowfs_up in a session of its own, so a signal to the
# test's process group does not reach it) also runs within a second of
# the test's shell ending: a test killed with SIGKILL (no trap runs) so
# leaves nothing, once that second has passed.  Only if the watcher is
# killed too do the mount, the loop device (it detaches when the mount
# goes), the cgroup and the directory stay, until the next slowfs_up on
# the machine, which takes down those of shells that no longer run
# (the same $FERRY_TEST_TMPDIR).  DIR is not removed (it is the caller's;
# under $tmp the trap removes it after the unmount).
#
# With lib/hosts.sh: call slowfs_up before hosts_up (the hosts' mount
# namespaces are copies made at hosts_up, private: a mount made later is
# not seen there), then slowfs_trap, which sets the trap again to take
# both down (hosts_up replaces it).  A host's copy of the mount keeps the
# loop device until hosts_down; it then detaches by itself.
#
# Settings (environment):
#   SLOWFS_SIZE   the image's size (truncate's syntax; default 1G): sparse,
#                 it takes on disk what is written (ext4's tables 17 MB)
#   SLOWFS_DIO    on (default) or off: direct I/O of the loop device.  The
#                 cap holds either way (it is on the loop device, above the
#                 image), but off the image's data is cached twice
#
# Needs: root, losetup, mkfs.ext4, mount, umount, findmnt, truncate,
# setsid (util-linux, e2fsprogs, coreutils), a loop device, the cgroup v1
# blkio controller with throttling (CONFIG_BLK_DEV_THROTTLING); cgroup v2's
# io.max would do the same on a machine with only cgroup v2, not written.
# slowfs_up skips the test (exit 77, saying why) where one is missing;
# once it is up, anything that goes wrong is a failure.

slowfs_dir=
slowfs_loop=
slowfs_dev=
slowfs_cg=
slowfs_state=
slowfs_rate=

# slowfs_skip WHY: skip the calling test.
slowfs_skip() {
  echo "SKIP: slow file system: $*"
  slowfs_down
  exit 77
}

# slowfs_fail WHAT: slowfs_up could not make WHAT: fail the test.
slowfs_fail() {
  echo "FAIL: slow file system: $1"
  test -n "$slowfs_state" && test -s "$slowfs_state/err" &&
    sed 's/^/    /' "$slowfs_state/err" | head -5
  slowfs_down
  exit 1
}

# slowfs_tmpbase: where the harness's directories go.
slowfs_tmpbase() {
  echo "${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}"
}

# slowfs_blkio: the mount point of the cgroup v1 blkio hierarchy, if any.
slowfs_blkio() {
  awk '$3 == "cgroup" && $4 ~ /(^|,)blkio(,|$)/ { print $2; exit }' /proc/mounts
}

# slowfs_sweep: take down what an earlier test killed with its watcher
# left: directories ferry-slowfs.PID.*, PID no longer running.
slowfs_sweep() {
  for w_dir in "$(slowfs_tmpbase)"/ferry-slowfs.*.*; do
    test -f "$w_dir/down" || continue
    w_pid=${w_dir##*/ferry-slowfs.}
    w_pid=${w_pid%%.*}
    case $w_pid in ''|*[!0-9]*) continue ;; esac
    kill -0 "$w_pid" 2>/dev/null || sh "$w_dir/down"
  done
}

# slowfs_write_down: write $slowfs_state/down, the script that takes it
# all down from what $slowfs_state/vars says has been made so far.
slowfs_write_down() {
  cat >"$slowfs_state/down" <<'EOF'
#!/bin/sh
# Written by tests/lib/slowfs.sh: take down its slow file system (run by
# slowfs_down, by the watcher when the test's shell is gone, or by the
# next slowfs_up's sweep).  Idempotent.
state=$(cd "$(dirname "$0")" && pwd) || exit 0
dir= loop= img= cg=
test -f "$state/vars" && . "$state/vars"
# The processes left in the cgroup: the test's, started by slowfs_run.
if test -n "$cg" && test -d "$cg"; then
  # (cgroup.procs reads as a size of 0: test -s cannot tell.)
  i=0
  while p=$(cat "$cg/cgroup.procs" 2>/dev/null) && test -n "$p" && test $i -lt 50; do
    kill -KILL $p 2>/dev/null
    sleep 0.1
    i=$((i + 1))
  done
fi
# The mount, if DIR is still the loop device's.
if test -n "$dir" && test -n "$loop"; then
  n=0
  while test "$(findmnt -rn -o SOURCE -M "$dir" 2>/dev/null | tail -1)" = "$loop" &&
    test $n -lt 4; do
    umount "$dir" 2>/dev/null || umount -l "$dir" 2>/dev/null
    n=$((n + 1))
  done
fi
# The loop device, if it still backs our image (it detaches by itself at
# the unmount; a later test may have attached the device to its own image).
if test -n "$loop" && test -n "$img"; then
  b=$(cat "/sys/block/${loop#/dev/}/loop/backing_file" 2>/dev/null)
  case $b in
    "$img"|"$img (deleted)") losetup -d "$loop" 2>/dev/null ;;
  esac
fi
if test -n "$cg" && test -d "$cg"; then
  i=0
  until rmdir "$cg" 2>/dev/null || test $i -ge 50; do
    sleep 0.1
    i=$((i + 1))
  done
fi
rm -rf "$state"
EOF
}

# slowfs_up DIR RATE_MB: make the file system at DIR (made if missing),
# its reads from the device capped at RATE_MB MB/s (10^6 bytes) for the
# processes slowfs_run starts.  Skips the test (77) where it cannot; on
# another failure says why, removes what it made and exits 1.
slowfs_up() {
  case $#/$2 in
    2/*[!0-9]*|2/|2/0*) echo "slowfs_up: RATE_MB is a whole number of MB/s, not '$2'" >&2; exit 99 ;;
    2/*) ;;
    *) echo "slowfs_up DIR RATE_MB" >&2; exit 99 ;;
  esac
  test -z "$slowfs_state" || { echo "slowfs_up: already up at $slowfs_dir" >&2; exit 99; }
  test "$(id -u)" = 0 || slowfs_skip "not root (loop devices, mounts and cgroups need it)"
  for u_cmd in losetup mkfs.ext4 mount umount findmnt truncate setsid; do
    command -v "$u_cmd" >/dev/null 2>&1 ||
      slowfs_skip "no $u_cmd (Debian: util-linux, mount, e2fsprogs, coreutils)"
  done
  u_blkio=$(slowfs_blkio)
  if test -z "$u_blkio" || test ! -f "$u_blkio/blkio.throttle.read_bps_device"; then
    slowfs_skip "no cgroup v1 blkio controller with throttling (cgroup v2's io.max is not supported)"
  fi
  test -e /dev/loop-control || slowfs_skip "no /dev/loop-control (no loop devices)"
  mkdir -p "$1" && slowfs_dir=$(cd "$1" && pwd -P) || exit 1
  slowfs_rate=$2
  slowfs_sweep
  slowfs_state=$(mktemp -d "$(slowfs_tmpbase)/ferry-slowfs.$$.XXXXXX") || exit 1
  slowfs_write_down
  slowfs_trap
  # The watcher: takes it down once this shell is gone (a SIGKILL runs no
  # trap); in a session of its own, and holding nothing open of the test's.
  (
    cd / && exec setsid sh -c 'while kill -0 '$$' 2>/dev/null && test -f "$0/down"; do
        sleep 1
      done
      test -f "$0/down" && exec sh "$0/down"' "$slowfs_state" \
      </dev/null >/dev/null 2>&1 &
  )

  u_img=$slowfs_state/image
  truncate -s "${SLOWFS_SIZE:-1G}" "$u_img" 2>"$slowfs_state/err" || slowfs_fail "the image"
  echo "img='$u_img'" >>"$slowfs_state/vars"
  u_dio=--direct-io=on
  test "${SLOWFS_DIO:-on}" = off && u_dio=
  # shellcheck disable=SC2086
  slowfs_loop=$(losetup $u_dio -f --show "$u_img" 2>"$slowfs_state/err") ||
    slowfs_skip "no loop device ($(head -1 "$slowfs_state/err"))"
  echo "loop='$slowfs_loop'" >>"$slowfs_state/vars"
  slowfs_dev=$(cat "/sys/block/${slowfs_loop#/dev/}/dev") || slowfs_fail "$slowfs_loop has no MAJ:MIN"
  mkfs.ext4 -q -F -O ^has_journal -E nodiscard,lazy_itable_init=0 -m 0 \
    "$slowfs_loop" >"$slowfs_state/err" 2>&1 || slowfs_fail "mkfs.ext4 $slowfs_loop"
  echo "dir='$slowfs_dir'" >>"$slowfs_state/vars"
  mount -o noatime "$slowfs_loop" "$slowfs_dir" 2>"$slowfs_state/err" ||
    slowfs_skip "cannot mount $slowfs_loop ($(head -1 "$slowfs_state/err"))"
  # Detach now: the device stays while mounted and goes at the unmount.
  losetup -d "$slowfs_loop" 2>"$slowfs_state/err" || slowfs_fail "losetup -d $slowfs_loop"

  slowfs_cg=$u_blkio/ferry-slowfs.$$
  mkdir "$slowfs_cg" 2>"$slowfs_state/err" ||
    slowfs_skip "cannot make the cgroup $slowfs_cg ($(head -1 "$slowfs_state/err"))"
  echo "cg='$slowfs_cg'" >>"$slowfs_state/vars"
  echo "$slowfs_dev $((slowfs_rate * 1000000))" \
    >"$slowfs_cg/blkio.throttle.read_bps_device" 2>"$slowfs_state/err" ||
    slowfs_skip "the blkio cgroup refuses a read cap on $slowfs_dev ($(head -1 "$slowfs_state/err"))"
  grep "^$slowfs_dev $((slowfs_rate * 1000000))\$" \
    "$slowfs_cg/blkio.throttle.read_bps_device" >/dev/null ||
    slowfs_fail "the read cap on $slowfs_dev is not set"
  echo "slowfs: $slowfs_dir: ext4 on $slowfs_loop ($slowfs_dev, direct I/O $(cat "/sys/block/${slowfs_loop#/dev/}/loop/dio" 2>/dev/null)), reads capped at $slowfs_rate MB/s in $slowfs_cg"
}

# slowfs_trap: the trap slowfs_up sets (again, after hosts_up replaced
# it): hosts_down (when lib/hosts.sh is up), slowfs_down, remove $tmp but
# no file system mounted in it.
slowfs_trap() {
  # (--one-file-system: were a mount left in $tmp, rm must not empty it.)
  trap 'test -n "${hosts_id:-}" && hosts_down; slowfs_down; rm -rf --one-file-system "${tmp:-}"' 0
  trap 'exit 143' TERM
  trap 'exit 130' INT
  trap 'exit 129' HUP
}

# slowfs_run COMMAND...: run COMMAND in the capped cgroup (its children
# too); its exit status.
slowfs_run() {
  test -n "$slowfs_cg" || { echo "slowfs_run: slowfs_up first" >&2; return 99; }
  sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$slowfs_cg" "$@"
}

# slowfs_measure FILE COMMAND...: slowfs_run COMMAND and write to FILE one
# line "wall_s=S read_bytes=N device_bytes=N": its wall time, the bytes it
# and the children it waited for read from storage (/proc/PID/io of the
# shell that ran it), the bytes the cgroup read from the loop device
# meanwhile (also those of other slowfs_run commands running at the time).
# The exit status is COMMAND's.
slowfs_measure() {
  m_out=$1
  shift
  m_dev0=$(slowfs_device_bytes)
  slowfs_run sh -c 't0=$(date +%s.%N)
    r0=$(sed -n "s/^read_bytes: //p" /proc/$$/io)
    "$@"
    st=$?
    t1=$(date +%s.%N)
    r1=$(sed -n "s/^read_bytes: //p" /proc/$$/io)
    echo "$t0 $t1 $r0 $r1" >"$0"
    exit $st' "$m_out.tmp" "$@"
  m_st=$?
  m_dev1=$(slowfs_device_bytes)
  read -r m_t0 m_t1 m_r0 m_r1 <"$m_out.tmp"
  rm -f "$m_out.tmp"
  echo "wall_s=$(echo "$m_t1 - $m_t0" | awk '{ printf "%.3f", $1 - $3 }') read_bytes=$((m_r1 - m_r0)) device_bytes=$((m_dev1 - m_dev0))" >"$m_out"
  return $m_st
}

# slowfs_read_bytes PID: print read_bytes of /proc/PID/io (the bytes PID,
# and the children it has waited for, read from block devices); status 1
# where it cannot be read (PID gone, or not ours).
slowfs_read_bytes() {
  r_v=$(sed -n 's/^read_bytes: //p' "/proc/$1/io" 2>/dev/null)
  test -n "$r_v" || return 1
  echo "$r_v"
}

# slowfs_device_bytes: print the bytes read from the loop device by the
# processes of the cgroup since slowfs_up.
slowfs_device_bytes() {
  test -n "$slowfs_cg" || { echo 0; return 1; }
  d_v=$(sed -n "s/^$slowfs_dev Read //p" "$slowfs_cg/blkio.throttle.io_service_bytes" 2>/dev/null)
  echo "${d_v:-0}"
}

# slowfs_evict PATH...: drop the files (a directory: every file under it)
# from the page cache, so the next read goes to the capped device: written
# back (sync), then fadvise DONTNEED (dd iflag=nocache).  Metadata
# (inodes, directories) stays cached.  With fincore (util-linux), checks
# that nothing is left, else tries once more after the machine-wide
# drop_caches; status 1, saying which, when pages stay.
slowfs_evict() {
  find "$@" -type f >"$slowfs_state/evict" || return 1
  e_st=0
  while IFS= read -r e_f; do
    sync "$e_f" && dd if="$e_f" iflag=nocache count=0 status=none || e_st=1
  done <"$slowfs_state/evict"
  command -v fincore >/dev/null 2>&1 || return $e_st
  e_left=0
  while IFS= read -r e_f; do
    e_p=$(fincore -n -o PAGES "$e_f" 2>/dev/null | tr -d ' ')
    test "${e_p:-0}" = 0 && continue
    sync && echo 1 >/proc/sys/vm/drop_caches 2>/dev/null
    e_p=$(fincore -n -o PAGES "$e_f" 2>/dev/null | tr -d ' ')
    test "${e_p:-0}" = 0 && continue
    echo "slowfs_evict: $e_f: $e_p pages stay in the page cache" >&2
    e_left=1
  done <"$slowfs_state/evict"
  test $e_left = 0 && return $e_st
  return 1
}

# slowfs_down: take it all down (slowfs_state/down, above).  Idempotent;
# safe before slowfs_up.
slowfs_down() {
  test -n "$slowfs_state" || return 0
  test -f "$slowfs_state/down" && sh "$slowfs_state/down"
  rm -rf "$slowfs_state"
  slowfs_state=
  slowfs_dir=
  slowfs_loop=
  slowfs_dev=
  slowfs_cg=
}
