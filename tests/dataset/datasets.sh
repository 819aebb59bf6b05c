#!/bin/sh
# datasets.sh - datasets of several parts, verified exactly-once by
# `ferry verify` (exit 0: equal batch counts, every sample once as the tail
# promises, the content of every element, identical reruns) over 1 to 7 ranks:
# a glob of `ferry gen --parts 5` parts, an @list naming them in another order
# (`ferry dump` shows the samples follow the list's order), a manifest saved
# by `ferry info --save-manifest` (the same dump with and without it), a '**'
# glob over nested directories, io=collective, max_open_files=1, every tail
# with both partitions, and shuffle=block with a shuffle buffer of 3.
#
# Bugs it pins: parts concatenated in the wrong order or at the wrong offset
# (the list's order ignored, globs not in byte-wise order); a sample lost or
# served twice where a chunk or a rank's share crosses a part boundary; a
# manifest that changes what is served; '**' matching only one level, or not
# zero; collective reads deadlocking or misplacing data when ranks read
# different parts; a file closed while still needed when only one may be open
# (max_open_files=1); the tail or partition rules breaking exactly-once.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip (no ferry program).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init datasets

# expect STATUS TEXT COMMAND...: COMMAND exits STATUS and its stdout or
# stderr holds TEXT (a fixed string; empty: anything); stdout is kept in
# $tmp/out.
expect() {
  want=$1 text=$2
  shift 2
  what=`printf '%s' "$*" |
    sed -e "s|$RUN_MPI |np=|" -e "s|$FERRY|ferry|" -e "s|$tmp/||g"`
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  got=$?
  if test "$got" != "$want"; then
    echo "FAIL: $what -> exit $got, expected $want"
    cat "$tmp/out" "$tmp/err" | grep -v '^PASS' | sed 's/^/    /' | head -20
    fail=1
    return 1
  elif test -n "$text" &&
       ! cat "$tmp/out" "$tmp/err" | grep -F -e "$text" >/dev/null; then
    echo "FAIL: $what -> output lacks '$text'"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -20
    fail=1
    return 1
  fi
  echo "ok: $what"
  return 0
}
bad() {
  echo "FAIL: $*"
  fail=1
}
# verify NP ARGS...: `ferry verify ARGS` on NP ranks passes, content included.
verify() {
  np=$1
  shift
  expect 0 'ferry verify: PASS' $RUN_MPI "$np" "$FERRY" verify "$@" &&
    if ! grep -F 'PASS content' "$tmp/out" >/dev/null; then
      bad "verify np=$np $*: the content was not checked:" \
        "`grep content "$tmp/out" | head -1`"
    fi
}
# once N FILE: the dump FILE serves every index 0..N-1 exactly once, and the
# first value of each sample (variable x of `ferry gen`) is its index.
once() {
  awk '$3 != $4 { print "    sample " $3 " holds " $4; exit 1 }' "$2" ||
    return 1
  awk '{ print $3 }' "$2" | sort -n >"$tmp/ids"
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) print i }' >"$tmp/all"
  cmp -s "$tmp/ids" "$tmp/all"
}

N=1009
d=$tmp/gen
glob="$d/part-*"
# Chunks of 37 samples: they never line up with the parts of 201-202.
common='--chunk-samples 37 --batch-size 16'
expect 0 "wrote $N samples" "$FERRY" gen "$d" --samples $N --parts 5 \
  --var x:float32:4 --var y:int64 || exit 1

# ---- a glob --------------------------------------------------------------
for np in 1 3 7; do
  verify $np "$glob" $common --tail partial
done

# ---- an @list, in another order than the glob -----------------------------
# No two neighbours of the list are neighbours on disk, so each part shows
# as its own run of consecutive values.
printf '%s\n' '# parts in a shuffled order' part-00004 part-00002 part-00000 \
  part-00003 part-00001 >"$d/list.txt"
for np in 1 3 7; do
  expect 0 'ferry verify: PASS' $RUN_MPI $np "$FERRY" verify "@$d/list.txt" $common --tail partial
done
# In storage order (shuffle=none) the values of x run part by part in the
# list's order: part 4's values first, then part 2's, ...
if expect 0 '' "$FERRY" dump "@$d/list.txt" --var x --tail partial \
     --shuffle none --shuffle-buffer 0 $common; then
  # runs: "first_value length" of each run of consecutive values, in
  # dump order; one run per part.
  awk '{ v = $4 + 0
         if (NR > 1 && v != last + 1) { print start, len; len = 0 }
         if (len == 0) start = v
         len++; last = v }
       END { if (NR) print start, len }' "$tmp/out" >"$tmp/runs"
  # Sorted by first value the runs must tile 0..N-1; a run's place in that
  # order is its part number, and the list named parts 4 2 0 3 1.
  sort -n "$tmp/runs" >"$tmp/runs.sorted"
  got=`awk -v n=$N 'BEGIN { ns = 0 }
      NR == FNR { part[$1] = FNR - 1; if ($1 != ns) gap = 1; ns = $1 + $2; next }
      { printf "%s ", part[$1] }
      END { if (gap || ns != n) printf "(not tiling 0..%d)", n - 1 }' \
      "$tmp/runs.sorted" "$tmp/runs"`
  if test "$got" != "4 2 0 3 1 "; then
    bad "dump of the @list is not in the list's part order: parts $got(runs: `tr '\n' ';' <"$tmp/runs"`)"
  else
    echo "ok: dump of the @list serves parts in the list's order: $got"
  fi
fi

# ---- a manifest ----------------------------------------------------------
m=$tmp/manifest.json
expect 0 'memory budget' $RUN_MPI 2 "$FERRY" info "$glob" --save-manifest "$m"
test -s "$m" || bad "info --save-manifest wrote no manifest"
for np in 1 3 7; do
  verify $np "$glob" $common --tail pad --manifest "$m"
done
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$glob" --var x $common --tail partial --epoch 1 &&
  cp "$tmp/out" "$tmp/dump.scan"
once $N "$tmp/dump.scan" || bad "dump of the glob does not serve every sample once with its value"
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$glob" --var x $common --tail partial --epoch 1 --manifest "$m" &&
  if cmp -s "$tmp/out" "$tmp/dump.scan"; then
    echo "ok: the dump with --manifest equals the dump without"
  else
    bad "the dump with --manifest differs from the dump without"
  fi
expect 0 '' env FERRY_MANIFEST="$m" $RUN_MPI 3 "$FERRY" dump "$glob" --var x $common --tail partial --epoch 1 &&
  if cmp -s "$tmp/out" "$tmp/dump.scan"; then
    echo "ok: the dump with FERRY_MANIFEST equals the dump without"
  else
    bad "the dump with FERRY_MANIFEST differs from the dump without"
  fi

# ---- '**' over nested directories ----------------------------------------
# The same five parts at depths 1, 2 and 0 under nest/, in the same
# byte-wise order ('a' < 'b' < 'p'), so the values still encode the index.
n=$tmp/nest
mkdir -p "$n/a" "$n/b/c" &&
  cp -R "$d/part-00000" "$d/part-00001" "$n/a/" &&
  cp -R "$d/part-00002" "$d/part-00003" "$n/b/c/" &&
  cp -R "$d/part-00004" "$n/" &&
  cp "$d/FERRY_GEN" "$n/" || exit 1
expect 0 '"parts": 5' "$FERRY" info "$n/**/part-*" --json
want="\"part_paths\": [\"$n/a/part-00000/x.npy\", \"$n/a/part-00001/x.npy\", \"$n/b/c/part-00002/x.npy\", \"$n/b/c/part-00003/x.npy\", \"$n/part-00004/x.npy\"]"
grep -F "$want" "$tmp/out" >/dev/null ||
  bad "the '**' glob does not match the 5 nested parts in byte-wise order: `grep -o '"part_paths": [^]]*]' "$tmp/out" | sed "s|$tmp/||g"`"
verify 3 "$n/**/part-*" $common --tail partial
expect 0 '' $RUN_MPI 2 "$FERRY" dump "$n/**/part-*" --var x $common --tail partial &&
  { once $N "$tmp/out" || bad "dump of the '**' glob does not serve every sample once with its value"; }

# ---- collective reads, one open file -------------------------------------
for np in 3 4; do
  verify $np "$glob" $common --tail partial --io collective
done
verify 4 "$glob" $common --tail pad --io collective --shuffle block --block-size 50 --epochs 1
verify 1 "$glob" $common --tail partial --max-open-files 1
verify 3 "$glob" $common --tail pad --max-open-files 1 --shuffle-buffer 5 --partition strided

# ---- every tail with both partitions -------------------------------------
for partition in contiguous strided; do
  for tail in drop_last pad partial; do
    verify 3 "$glob" $common --tail $tail --partition $partition
  done
done
# And the samples themselves, seen from outside verify.
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$glob" --var x $common --tail partial --partition strided &&
  { once $N "$tmp/out" || bad "tail=partial partition=strided does not serve every sample once"; }

# ---- shuffle=block with a shuffle buffer of 3 ----------------------------
verify 3 "$glob" $common --shuffle block --block-size 20 --shuffle-buffer 3 --tail partial --epochs 3
verify 2 "$glob" --chunk-samples 64 --batch-size 10 --shuffle block --block-size 7 --shuffle-buffer 3 --tail drop_last

exit $fail
