#!/bin/sh
# cli_commands.sh - the ferry tool's commands end to end on 1 to 4 ranks:
# `verify` passes on `gen` data for every tail and on mem: data, fails with
# status 3 when one value of a file is changed, and a library error exits 1
# with one message (rank 0's); `dump` prints every served sample once, in
# rank order, with the value of its index, and the same text twice;
# `plan`, `bench` and `info` print valid output and `info --save-manifest`
# writes a manifest the `manifest` option reads.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip (no ferry program).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init cli_commands

# expect STATUS TEXT COMMAND...: as in cli_args.sh; stdout kept in $tmp/out.
expect() {
  want=$1 text=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  got=$?
  if test "$got" != "$want"; then
    echo "FAIL: $* -> exit $got, expected $want"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -30
    fail=1
    return 1
  elif test -n "$text" && ! cat "$tmp/out" "$tmp/err" | grep -F -e "$text" >/dev/null; then
    echo "FAIL: $* -> output lacks '$text'"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -30
    fail=1
    return 1
  fi
  echo "ok: $*"
  return 0
}
bad() {
  echo "FAIL: $*"
  fail=1
}

d=$tmp/gen
glob="$d/part-*"
common='--chunk-samples 100 --batch-size 16'
expect 0 'wrote 1500 samples' $RUN_MPI 2 "$FERRY" gen "$d" --samples 1500 --parts 3

# ---- verify --------------------------------------------------------------
for np in 1 2 3 4; do
  expect 0 'ferry verify: PASS' $RUN_MPI $np "$FERRY" verify "$glob" $common --tail pad
  grep -F 'PASS content' "$tmp/out" >/dev/null || bad "verify np=$np did not check the content"
done
expect 0 'ferry verify: PASS' $RUN_MPI 3 "$FERRY" verify "$glob" $common --tail partial --shuffle block --partition strided --epochs 3
expect 0 '"result": "pass"' $RUN_MPI 2 "$FERRY" verify "$glob" $common --tail drop_last --shuffle-buffer 0 --json
expect 0 'PASS content' $RUN_MPI 3 "$FERRY" verify 'mem:N=500,vars=a:float16:3,b:uint8' --batch-size 8 --tail partial
# A part of a generated dataset is served with other indices: no content check.
expect 0 'SKIP content' "$FERRY" verify "$d/part-00001" --batch-size 16 --epochs 1

# One changed value fails the content check with status 3.
f=$d/part-00000/targets.npy
hlen=`od -An -tu2 -j8 -N2 "$f" | tr -d ' '`
printf '\377\377\377\377\377\377\377\377' |
  dd of="$f" bs=1 seek=`expr 10 + $hlen + 5 \* 8` conv=notrunc 2>/dev/null
expect 3 'FAIL content' $RUN_MPI 2 "$FERRY" verify "$glob" $common --tail partial --epochs 1
grep -F "sample 5 variable 'targets'" "$tmp/out" >/dev/null || bad "verify did not name the changed sample"

# A library error: status 1 on every rank, the message printed once.  One
# chunk of 300 samples, so that rank 1 reads the middle third, sample 150
# included (the automatic chunk_samples cuts a small dataset into many
# chunks, and rank 1 might not be dealt the one holding sample 150).
expect 1 'injected read failure' $RUN_MPI 3 "$FERRY" verify 'mem:N=300,vars=x:int8,fail_at=150,fail_rank=1' --batch-size 8 --chunk-samples 300
n=`grep -c '^ferry: verify:' "$tmp/err"`
test "$n" = 1 || bad "the library error was printed $n times, not once"

# ---- dump ----------------------------------------------------------------
m='mem:N=999,vars=x:int16:2,y:float64'
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --tail partial --var y --epoch 2
cp "$tmp/out" "$tmp/dump3a"
test `wc -l <"$tmp/dump3a"` = 999 || bad "dump printed `wc -l <"$tmp/dump3a"` lines, not 999"
awk '$3 != $4 { print "value " $4 " for sample " $3; exit 1 }' "$tmp/dump3a" || bad "dump values do not encode the index"
awk '$1 < r { exit 1 } { r = $1 }' "$tmp/dump3a" || bad "dump is not in rank order"
awk '{ print $3 }' "$tmp/dump3a" | sort -n | uniq >"$tmp/ids3"
awk 'BEGIN { for (i = 0; i < 999; i++) print i }' >"$tmp/all"
cmp -s "$tmp/ids3" "$tmp/all" || bad "dump on 3 ranks does not serve every sample once"
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --tail partial --var y --epoch 2
cmp -s "$tmp/out" "$tmp/dump3a" || bad "dump of the same epoch differs between runs"
# --output FILE: the same lines in FILE (rank 0 writes it), nothing on
# standard output; '-' is standard output; a file that cannot be opened or
# written fails every rank with one message.
rm -f "$tmp/dump3o"
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --tail partial --var y --epoch 2 --output "$tmp/dump3o"
cmp -s "$tmp/dump3o" "$tmp/dump3a" || bad "dump --output FILE differs from dump's standard output"
test -s "$tmp/out" && bad "dump --output FILE also printed on standard output"
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --tail partial --var y --epoch 2 --output -
cmp -s "$tmp/out" "$tmp/dump3a" || bad "dump --output - differs from dump's standard output"
expect 1 "cannot open --output $tmp/no/such/dir: No such file or directory" \
  $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --output "$tmp/no/such/dir"
test `grep -c "cannot open --output" "$tmp/err"` = 1 || bad "dump --output: not one message"
if test -w /dev/full; then
  expect 1 "cannot write to /dev/full: No space left on device" \
    $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --output /dev/full
fi
# --var accepts a leading '/' as --vars does (issue 11: "--vars /labels" was
# accepted but "dump --var /labels" said there is no such variable).
expect 0 '' $RUN_MPI 3 "$FERRY" dump "$m" --batch-size 10 --tail partial --var /y --epoch 2
cmp -s "$tmp/out" "$tmp/dump3a" || bad "dump --var /y differs from --var y"
expect 0 '' "$FERRY" dump "$m" --batch-size 10 --tail partial --var x
awk '{ print $3 }' "$tmp/out" | sort -n >"$tmp/ids1"
cmp -s "$tmp/ids1" "$tmp/all" || bad "dump on 1 rank does not serve every sample once"
# --var outside the selection is added to it (issue 30): the library then
# names the variable missing and the dataset's own
expect 1 "variable 'z' not found; the dataset has: x, y" "$FERRY" dump "$m" --var z

# ---- plan, bench, info ---------------------------------------------------
expect 0 'rank 3:' $RUN_MPI 4 "$FERRY" plan "$glob" $common --epoch 5
expect 0 '"per_rank"' $RUN_MPI 2 "$FERRY" plan "$glob" $common --json
grep -F '"rank": 1' "$tmp/out" >/dev/null || bad "plan --json lacks rank 1"
expect 0 'AU' $RUN_MPI 2 "$FERRY" bench "$glob" $common --epochs 2 --compute-ms 1
expect 0 '' $RUN_MPI 2 "$FERRY" bench "$glob" $common --json --compute-ms 0.5 --compute-mode spin
for k in samples_per_s bytes_per_s wait_fraction au peak_rss_bytes \
         batches_per_rank budget_bytes ranks epochs batch_size elapsed_s; do
  grep -F "\"$k\": " "$tmp/out" >/dev/null || bad "bench --json lacks $k"
done
test `grep -c . "$tmp/out"` = 1 || bad "bench --json printed more than one line"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ranks"] == 2 and d["samples_per_s"] > 0 and 0 < d["au"] <= 1, d' "$tmp/out" ||
    bad "bench --json is not the expected JSON"
fi
expect 0 'memory budget' $RUN_MPI 2 "$FERRY" info "$glob" --save-manifest "$tmp/manifest.json"
# The budget counts the plan before any epoch is planned (issue 11: it
# printed "plan 0 B" for a plan of about 32 bytes per sample).
grep -E 'plan [1-9][0-9.]* (B|KiB|MiB|GiB)' "$tmp/out" >/dev/null ||
  bad "ferry info's budget does not count the plan: `grep -i budget "$tmp/out"`"
test -s "$tmp/manifest.json" || bad "info --save-manifest wrote nothing"
expect 0 '"samples": 1500' "$FERRY" info "$glob" --manifest "$tmp/manifest.json" --json

exit $fail
