#!/bin/sh
# io_auto.sh - io=auto (issue 12): on tmpfs (/dev/shm) it maps (io=mmap),
# on the test's own directory it does what the rule of docs/options.md says
# for that file system's statfs f_type (`stat -f -c %t`), a backend that
# cannot map reads, and io=independent/collective given by option or by
# FERRY_IO are kept and said so; `ferry info` (text and JSON) and `ferry
# bench` say which mode and why; batches with io=auto are byte-identical
# to io=independent's on 2 ranks.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init io_auto
shm=
if test -d /dev/shm && test -w /dev/shm &&
   test "`stat -f -c %T /dev/shm 2>/dev/null`" = tmpfs; then
  shm=`mktemp -d /dev/shm/ferry-io-auto.XXXXXX` || shm=
  trap 'rm -rf "$tmp" ${shm:+"$shm"}' 0
fi
"$FERRY" gen "$tmp/d" --samples 3001 --var x:float32:5 --var y:int16 >/dev/null ||
  { echo "FAIL: ferry gen"; exit 1; }
info_io() { # NP SPEC [options]: the io line of ferry info
  np=$1 spec=$2
  shift 2
  $RUN_MPI $np "$FERRY" info "$spec" "$@" 2>&1 | sed -n 's/^io  *//p'
}
expect() { # LABEL TEXT PATTERN
  case $2 in
    $3) echo "ok: $1: $2" ;;
    *) echo "FAIL: $1: '$2' does not match '$3'"; fail=1 ;;
  esac
}
# tmpfs: mapped
if test -n "$shm"; then
  "$FERRY" gen "$shm/d" --samples 3001 --var x:float32:5 --var y:int16 >/dev/null ||
    { echo "FAIL: ferry gen in $shm"; exit 1; }
  expect "tmpfs, io=auto" "`info_io 2 "$shm/d" --io auto`" \
    "mmap (io=auto: $shm/d/x.npy is on tmpfs, f_type 0x1021994, a local file system*"
  expect "tmpfs, --io independent" "`info_io 1 "$shm/d" --io independent`" \
    "independent (set by io=independent)"
  expect "tmpfs, FERRY_IO=collective" "`FERRY_IO=collective info_io 2 "$shm/d"`" \
    "collective (set by io=collective)"
  expect "tmpfs, io=auto, bench" \
    "`$RUN_MPI 2 "$FERRY" bench "$shm/d" --io auto 2>&1 | grep '^read:'`" \
    "read: * from storage (*); io mmap (io=auto: $shm/d/x.npy is on tmpfs*"
  $RUN_MPI 2 "$FERRY" info "$shm/d" --io auto --json >"$tmp/json" 2>&1
  if grep -q '"io": "mmap (io=auto: ' "$tmp/json"; then
    echo "ok: ferry info --json has the io choice"
  else
    echo "FAIL: ferry info --json: no io choice"; sed 's/^/    /' "$tmp/json" | head -5; fail=1
  fi
  for np in 1 2; do
    $RUN_MPI $np "$FERRY" dump "$shm/d" --row-hash --tail partial --seed 4 --io independent >"$tmp/i" 2>&1
    $RUN_MPI $np "$FERRY" dump "$shm/d" --row-hash --tail partial --seed 4 --io auto >"$tmp/a" 2>&1
    if grep -q fnv= "$tmp/i" && cmp -s "$tmp/i" "$tmp/a"; then
      echo "ok: io=auto == io=independent on $np ranks (`wc -l <"$tmp/a"` samples)"
    else
      echo "FAIL: io=auto differs from io=independent on $np ranks"; fail=1
    fi
  done
else
  echo "note: no writable tmpfs at /dev/shm: the tmpfs checks are skipped"
fi
# The test's own directory (a local disk here; whatever it is on CI): the
# rule's answer for its f_type.
magic=`stat -f -c %t "$tmp/d/x.npy" 2>/dev/null`
case $magic in
  ef53|58465342|9123683e|1021994|858458f6|f2f52010|2fc12fc1|794c7630|73717368|ca451a4e|3153464a|52654973|2011bab0|4d44|5346544e)
    want="mmap (io=auto: $tmp/d/x.npy is on *, f_type 0x$magic, a local file system*" ;;
  '') want="* (io=auto: *" ;;
  *) want="independent (io=auto: $tmp/d/x.npy is on *, f_type 0x$magic, *" ;;
esac
expect "$tmp (`stat -f -c %T "$tmp" 2>/dev/null`), io=auto" "`info_io 2 "$tmp/d" --io auto`" "$want"
expect "$tmp, io=mmap" "`info_io 1 "$tmp/d" --io mmap`" "mmap (set by io=mmap)"
expect "$tmp, default" "`info_io 1 "$tmp/d"`" "independent (set by io=independent)"
# A backend that cannot map reads, even when asked to map.
expect "mem:, io=auto" "`info_io 1 'mem:N=50,vars=a:float32:3' --io auto`" \
  "independent (io=auto: backend mem reads, it cannot map)"
expect "mem:, io=mmap" "`info_io 1 'mem:N=50,vars=a:float32:3' --io mmap`" \
  "independent (io=mmap, but backend mem cannot map: it reads)"
# A wrong value names the choices.
out=`$RUN_MPI 1 "$FERRY" info "$tmp/d" --io fastest 2>&1`
expect "--io fastest" "$out" "*bad value 'fastest'*auto*"
exit $fail
