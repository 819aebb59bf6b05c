#!/bin/sh
# mmap.sh - io=mmap (issue 12): on 1 to 3 ranks, every batch is
# byte-identical to io=independent's (`ferry dump --row-hash`), for a
# dataset of several variables, a big-endian one (swapped after the copy)
# and a directory of 300 parts; `ferry verify` passes; a backend without
# io_map (mem:) reads independently.  The truncation race is
# tests/python/mmap.sh's.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init mmap
"$FERRY" gen "$tmp/a" --samples 5003 --var x:float32:7 --var y:int64 --var b:bool >/dev/null &&
  "$FERRY" gen "$tmp/be" --samples 999 --var x:float64:3 --big-endian >/dev/null &&
  "$FERRY" gen "$tmp/p" --samples 3000 --var x:int16:5 --parts 300 >/dev/null ||
  { echo "FAIL: ferry gen"; exit 1; }
same() { # NP SPEC [options]
  np=$1 spec=$2
  shift 2
  $RUN_MPI $np "$FERRY" dump "$spec" --row-hash --tail partial "$@" --io independent >"$tmp/i" 2>&1
  $RUN_MPI $np "$FERRY" dump "$spec" --row-hash --tail partial "$@" --io mmap >"$tmp/m" 2>&1
  if test -s "$tmp/i" && grep -q fnv= "$tmp/i" && cmp -s "$tmp/i" "$tmp/m"; then
    echo "ok: io=mmap == io=independent: $spec on $np ranks $* (`wc -l <"$tmp/m"` samples)"
  else
    echo "FAIL: io=mmap differs from io=independent: $spec on $np ranks $*"
    diff "$tmp/i" "$tmp/m" | head -8 | sed 's/^/    /'
    fail=1
  fi
}
for np in 1 2 3; do
  same $np "$tmp/a" --var x --seed 5
  same $np "$tmp/a" --var b --seed 5 --shuffle block --block-size 17
done
same 2 "$tmp/be" --seed 1
same 2 "$tmp/p/part-*" --seed 2
same 2 'mem:N=777,vars=a:float32:3' --seed 3
if $RUN_MPI 2 "$FERRY" verify "$tmp/a" --io mmap --epochs 3 >"$tmp/v" 2>&1 &&
   grep -q '^ferry verify: PASS' "$tmp/v"; then
  echo "ok: verify --io mmap: `grep '^ferry verify: PASS' "$tmp/v"`"
else
  echo "FAIL: verify --io mmap"; sed 's/^/    /' "$tmp/v" | tail -10; fail=1
fi
exit $fail
