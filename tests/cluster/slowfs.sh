#!/bin/sh
# slowfs.sh - the slow file system of tests/lib/slowfs.sh (issue 29: a
# shared parallel file system's bandwidth, on one machine) caps what it
# says it caps, counts what it says it counts, and leaves nothing behind.
# At a cap of 50 MB/s:
#
#  - a 64 MiB file, written and evicted (no page left in the page cache),
#    read cold by dd under slowfs_run: at about the cap (below 2x, above
#    half of it), and the cgroup's counter of the loop device says 64 MiB;
#  - read again, warm: far faster (over 4x the cap), nothing from the device;
#  - /proc/PID/io read_bytes counts the cold read (64 MiB, within 1 MiB)
#    and not the warm one (skipped, saying so, where the kernel counts no
#    block reads: some containers);
#  - the same file read cold outside the cgroup: not capped (a note only:
#    the disk's speed is not the test's);
#  - slowfs_down leaves no mount, loop device, cgroup or file of the
#    harness, and a second slowfs_down does nothing;
#  - a shell killed with SIGKILL while a process of its cgroup holds the
#    mount busy leaves nothing either, once its watcher has seen it go.
#
# Skips (77) where the file system cannot be made: not root, no loop
# device, no cgroup v1 blkio controller, no mount (tests/lib/slowfs.sh
# says why).  About 4 s.
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/slowfs.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0
. "$top_srcdir/tests/lib/check.sh"
. "$top_srcdir/tests/lib/slowfs.sh"
fail=0
rate=50
mib=64
size=$((mib * 1048576))

# rate_of FILE: the MB/s (10^6 bytes) of a slowfs_measure line.
rate_of() {
  sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$1" | awk -v b=$size '{ printf "%.1f", b / 1e6 / ($1 > 0 ? $1 : 1e-6) }'
}
# field FILE NAME: a field of a slowfs_measure line.
field() {
  sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"
}
# between X LO HI: LO <= X <= HI (decimals).
between() {
  awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'
}

slowfs_up "$tmp/pfs" $rate
# The trap: also the shell of the SIGKILL check below, if it runs: killed,
# its watcher takes its file system (in $tmp) down before $tmp goes.
kpid=
killed=
trap 'if test -n "$kpid"; then
    test -n "$killed" || kill -KILL $kpid 2>/dev/null
    n=0
    while test -n "$(findmnt -rn -M "$tmp/killed/pfs" 2>/dev/null)" && test $n -lt 50; do
      sleep 0.1
      n=$((n + 1))
    done
  fi
  slowfs_down
  rm -rf --one-file-system "$tmp"' 0
dir=$slowfs_dir loop=$slowfs_loop cg=$slowfs_cg state=$slowfs_state
img=$state/image

dd if=/dev/urandom of="$tmp/pfs/data" bs=1048576 count=$mib status=none ||
  failed "dd could not write $mib MiB into $tmp/pfs"
if slowfs_evict "$tmp/pfs" 2>"$tmp/evict.err"; then
  ok "slowfs_evict: $(command -v fincore >/dev/null && fincore -n -o PAGES "$tmp/pfs/data" | tr -d ' ' || echo '?') pages of the file cached"
else
  failed "slowfs_evict left pages cached" "$tmp/evict.err"
fi

# Cold: capped.
slowfs_measure "$tmp/cold" dd if="$tmp/pfs/data" of=/dev/null bs=1048576 2>"$tmp/cold.err" ||
  failed "the cold read failed" "$tmp/cold.err"
cold=$(rate_of "$tmp/cold")
if between "$cold" $((rate / 2)) $((rate * 2)); then
  ok "cold read of $mib MiB: $cold MB/s at a cap of $rate MB/s ($(cat "$tmp/cold"))"
else
  failed "cold read of $mib MiB: $cold MB/s, not within [$((rate / 2)), $((rate * 2))] ($(cat "$tmp/cold"))"
fi
devb=$(field "$tmp/cold" device_bytes)
if between "$devb" $size $((size + 1048576)); then
  ok "the cgroup read $devb bytes from $loop for the cold read"
else
  failed "the cgroup read $devb bytes from $loop for a cold read of $size"
fi

# Warm: from the page cache.
slowfs_measure "$tmp/warm" dd if="$tmp/pfs/data" of=/dev/null bs=1048576 2>"$tmp/warm.err" ||
  failed "the warm read failed" "$tmp/warm.err"
warm=$(rate_of "$tmp/warm")
if between "$warm" $((rate * 4)) 1e12 && test "$(field "$tmp/warm" device_bytes)" -lt 1048576; then
  ok "warm read: $warm MB/s ($(cat "$tmp/warm"))"
else
  failed "warm read: $warm MB/s, not over $((rate * 4)), or read from the device ($(cat "$tmp/warm"))"
fi

# read_bytes of /proc/PID/io.
coldr=$(field "$tmp/cold" read_bytes)
warmr=$(field "$tmp/warm" read_bytes)
if test "$coldr" = 0; then
  echo "SKIP: read_bytes of /proc/PID/io is 0 for a cold read of $size bytes: this kernel counts no block reads per process here (a container?)"
elif between "$coldr" $size $((size + 1048576)) && test "$warmr" -lt 1048576; then
  ok "/proc/PID/io read_bytes: $coldr for the cold read, $warmr for the warm one"
else
  failed "/proc/PID/io read_bytes: $coldr for the cold read of $size, $warmr for the warm one"
fi
# slowfs_read_bytes of a process that is running.
slowfs_evict "$tmp/pfs"
# (slowfs_run in the background is a subshell that waits for the command:
# the shell that reads says its own pid.)
rm -f "$tmp/job.pid"
slowfs_run sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
  dd if="$0" of=/dev/null bs=1048576 count=8 status=none; sleep 5' \
  "$tmp/pfs/data" "$tmp/job.pid" 2>/dev/null &
job=$!
n=0
rb=
while test $n -lt 50; do
  test -s "$tmp/job.pid" && rb=$(slowfs_read_bytes "$(cat "$tmp/job.pid")")
  test "${rb:-0}" -gt 0 && break
  sleep 0.1
  n=$((n + 1))
done
kill "$(cat "$tmp/job.pid")" 2>/dev/null
wait $job 2>/dev/null
if test "$coldr" = 0 || test "${rb:-0}" -ge 1048576; then
  ok "slowfs_read_bytes of a running shell that read 8 MiB: ${rb:-unreadable}"
else
  failed "slowfs_read_bytes of a running shell that read 8 MiB: '${rb:-}'"
fi

# Outside the cgroup: not capped (the disk's speed: a note).
slowfs_evict "$tmp/pfs"
t0=$(date +%s.%N)
dd if="$tmp/pfs/data" of=/dev/null bs=1048576 status=none
t1=$(date +%s.%N)
echo "note: cold read outside the cgroup: $(echo "$t0 $t1" | awk -v b=$size '{ printf "%.1f", b / 1e6 / ($2 - $1) }') MB/s (not capped)"

# Down: nothing left, and twice is fine.
slowfs_down
slowfs_down
# left DIR LOOP IMG CG STATE: what of a slow file system is left.
left() {
  test -n "$(findmnt -rn -M "$1" 2>/dev/null)" && echo "mount at $1"
  case $(cat "/sys/block/${2#/dev/}/loop/backing_file" 2>/dev/null) in
    "$3"*) echo "loop device $2 on $3" ;;
  esac
  test -d "$4" && echo "cgroup $4"
  test -e "$5" && echo "directory $5"
}
left "$dir" "$loop" "$img" "$cg" "$state" >"$tmp/left"
if test ! -s "$tmp/left"; then
  ok "slowfs_down left no mount, loop device, cgroup or file ($loop, $cg)"
else
  failed "slowfs_down left something behind" "$tmp/left"
fi

# SIGKILL: the watcher takes it down.
cat >"$tmp/killed.sh" <<EOF
tmp=$tmp/killed
mkdir -p "\$tmp"
. "$top_srcdir/tests/lib/slowfs.sh"
slowfs_up "\$tmp/pfs" $rate >/dev/null
echo "\$slowfs_dir \$slowfs_loop \$slowfs_state/image \$slowfs_cg \$slowfs_state" >"$tmp/killed.vars"
slowfs_run sh -c 'echo \$\$ >"\$1.tmp" && mv "\$1.tmp" "\$1" && cd "\$0" && exec sleep 60' \
  "\$slowfs_dir" "$tmp/killed.sleep" &
while :; do sleep 0.2; done
EOF
sh "$tmp/killed.sh" </dev/null >"$tmp/killed.out" 2>&1 &
kpid=$!
n=0
while test ! -s "$tmp/killed.sleep" && test $n -lt 100; do
  sleep 0.1
  n=$((n + 1))
done
if test -s "$tmp/killed.sleep"; then
  sleep 0.3
  read -r kdir kloop kimg kcg kstate <"$tmp/killed.vars"
  kill -KILL $kpid
  wait $kpid 2>/dev/null
  killed=yes
  n=0
  while left "$kdir" "$kloop" "$kimg" "$kcg" "$kstate" >"$tmp/kleft" && test -s "$tmp/kleft" &&
    test $n -lt 100; do
    sleep 0.1
    n=$((n + 1))
  done
  # (The reader, killed, is an orphan: a zombie until init reaps it.)
  case $(ps -o stat= -p "$(cat "$tmp/killed.sleep")" 2>/dev/null) in
    ''|Z*) ;;
    *) echo "the reader $(cat "$tmp/killed.sleep") still runs" >>"$tmp/kleft" ;;
  esac
  if test ! -s "$tmp/kleft"; then
    ok "a shell killed with SIGKILL, its mount busy: nothing left $((n / 10)).$((n % 10)) s later"
  else
    failed "a shell killed with SIGKILL left something behind" "$tmp/kleft"
  fi
else
  kill -KILL $kpid 2>/dev/null
  wait $kpid 2>/dev/null
  if grep '^SKIP' "$tmp/killed.out" >/dev/null; then
    failed "the killed shell skipped where this one did not" "$tmp/killed.out"
  else
    failed "the shell to kill did not start its reader" "$tmp/killed.out"
  fi
fi
exit $fail
