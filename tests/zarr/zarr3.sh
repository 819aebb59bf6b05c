#!/bin/sh
# zarr3.sh - Zarr v3 stores (src/backends/zarr, the native reader) end to
# end.  Debian's zarr-python (2.13) cannot write v3, so the stores are
# written by the test's own writer (tests/fixtures/zarr3_writer.py,
# make_zarr3.py: groups with and without consolidated metadata, bool,
# integers, float16/32/64, bytes little and big endian, gzip, zstd, blosc,
# crc32c, transpose, "default" and "v2" chunk keys with both separators,
# missing chunks read as fill values (NaN, -Infinity, 42), sharding with the
# index at the end and at the start, with and without its crc32c, an empty
# inner chunk, a missing shard, inner chunks split along dimension 1).
# Each store is first read by zarrita (npm, a Zarr v3 implementation
# independent of ferry and of the writer; tests/fixtures/zarrita_read.mjs)
# and must equal what was written, except what zarrita cannot read (float16
# without Float16Array in node 20; a shard index at the start): those are
# round-tripped only.  Then `ferry dump --row-hash` over 1, 2 and 3 ranks
# must serve every row exactly once and byte for byte
# (tests/fixtures/dump_compare.py).  Bad inputs (corrupt zarr.json, an
# unknown codec, a shard index pointing outside the shard or failing its
# crc32c, a truncated shard, an inner chunk failing its crc32c, a chunk
# decoding to the wrong size, siblings of different lengths selected
# together) fail on 1 and 3 ranks with status 1 and one message naming the
# store and what is wrong, without hanging.
#
# zarrita is looked for in $FERRY_ZARRITA_DIR, else tests/node/node_modules
# (./bootstrap deps installs it there with npm).
#
# Environment (set by "make check"): FERRY, RUN_MPI, FERRY_TEST_TMPDIR,
# top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77 skip (no zarr backend,
# no numpy/numcodecs, no node or zarrita).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init zarr3
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* zarr' >/dev/null; then
  echo "SKIP: this ferry has no zarr backend"
  exit 77
fi
PY=/usr/bin/python3
if ! $PY -c 'import numcodecs, numpy' >/dev/null 2>&1; then
  echo "SKIP: $PY lacks numpy or numcodecs (apt-get install python3-numpy python3-numcodecs): the fixtures' compressors"
  exit 77
fi
nm=${FERRY_ZARRITA_DIR:-$top_srcdir/tests/node/node_modules}
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: no node (apt-get install nodejs npm, then ./bootstrap deps): zarrita checks the v3 fixtures"
  exit 77
fi
if test ! -f "$nm/zarrita/package.json" || test ! -d "$nm/@zarrita/storage"; then
  echo "SKIP: zarrita is not installed in $nm (./bootstrap deps runs npm install --prefix tests/node zarrita): it checks the v3 fixtures"
  exit 77
fi
fx=$tmp/fx
if $PY "$top_srcdir/tests/fixtures/make_zarr3.py" "$fx" >"$tmp/make.log" 2>&1 &&
   test -f "$fx/good.txt" && test -f "$fx/bad.txt"; then
  echo "ok: make_zarr3.py wrote the fixtures (`wc -l <"$fx/good.txt"` arrays, `wc -l <"$fx/bad.txt"` bad stores)"
else
  echo "FAIL: make_zarr3.py did not write the fixtures"
  sed 's/^/    /' "$tmp/make.log"
  exit 1
fi

# zarrita first: the fixtures are what the specification says.
mkdir -p "$tmp/zr" || exit 1
if node "$top_srcdir/tests/fixtures/zarrita_read.mjs" "$nm" "$fx/arrays.txt" "$tmp/zr" >"$tmp/zr.log" 2>&1 &&
   $PY "$top_srcdir/tests/fixtures/zarrita_compare.py" "$fx/arrays.txt" "$tmp/zr" \
     "v3cons.zarr:b,v3shard.zarr:g" >"$tmp/zc.log" 2>&1; then
  cat "$tmp/zc.log"
else
  cat "$tmp/zr.log" "$tmp/zc.log"
  echo "FAIL: zarrita does not read the fixtures as they were written"
  exit 1
fi

BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
tab=`printf '\t'`
while IFS=$tab read -r store var ref; do
  base=`basename "$store"`
  for np in 1 2 3; do
    flags=ordered
    test "$np" -gt 1 && flags=spread
    dump_queue "" "$base:$var" "$np" "$flags" "$store" "$var" \
      "--shuffle none --shuffle-buffer 0 --chunk-samples 10" "$ref"
  done
done <"$fx/good.txt"
# Shuffled, plan chunks splitting inner chunks, and whole runs of inner
# chunks (coalesced reads of an uncompressed shard).
dump_queue "" "v3shard.zarr:u shuffled" 3 spread "$fx/v3shard.zarr" u \
  "--seed 5 --chunk-samples 3 --shuffle block --block-size 4" \
  "$fx/ref/v3shard_zarr__u.npy"
dump_queue "" "v3shard.zarr:g chunks" 2 spread "$fx/v3shard.zarr" g \
  "--seed 7 --chunk-samples 16 --shuffle chunks" "$fx/ref/v3shard_zarr__g.npy"
dump_queue "" "v3root.zarr runs of inner chunks" 2 spread "$fx/v3root.zarr" v3root \
  "--seed 3 --chunk-samples 32 --shuffle chunks" "$fx/ref/v3root_zarr__v3root.npy"
dump_queue "" "v3shard.zarr:t split" 2 spread "$fx/v3shard.zarr" t \
  "--seed 9 --chunk-samples 4" "$fx/ref/v3shard_zarr__t.npy"
dump_run
echo "checking $njobs dumps against the written values"
$PY "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# ferry info: the shard layout, the notes, and consolidated metadata read.
if "$FERRY" info "$fx/v3shard.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'in shards of (40, 6) with the index at the end' "$tmp/info.out" >/dev/null &&
   grep 'in shards of (64,) with the index at the start' "$tmp/info.out" >/dev/null &&
   grep 'reader native' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info v3shard.zarr names the shards and the index location"
else
  echo "FAIL: ferry info v3shard.zarr"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi
if "$FERRY" info "$fx/v3group.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'skipped coord (5 rows' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info v3group.zarr skips the coordinate"
else
  echo "FAIL: ferry info v3group.zarr should skip coord"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi
# xarray-style: a 1-D coordinate of another dimension as long as the
# sample dimension is not a variable, and the notes say why.
if "$FERRY" info "$fx/xr.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'chose temp, time (97 rows along time)' "$tmp/info.out" >/dev/null &&
   grep 'lat (a coordinate of dimension lat, not of the sample dimension)' "$tmp/info.out" >/dev/null &&
   grep 'lon (5 rows' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info xr.zarr: `grep notes "$tmp/info.out"`"
else
  echo "FAIL: ferry info xr.zarr should choose temp and time along time and skip lat and lon"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi
# Consolidated metadata is what rank 0 reads: an array directory whose
# zarr.json is gone is still described from it, and every rank's check of
# the array's own zarr.json then fails clearly.
cp -r "$fx/v3cons.zarr" "$tmp/stale.zarr" && rm "$tmp/stale.zarr/b/zarr.json"
if "$FERRY" info "$tmp/stale.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'chose a, b, c' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info reads consolidated metadata"
else
  echo "FAIL: ferry info should describe stale.zarr from its consolidated metadata"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi
if $RUN_MPI 2 "$FERRY" dump "$tmp/stale.zarr" --epoch 0 --batch-size 5 >"$tmp/st.out" 2>"$tmp/st.err"; then
  echo "FAIL: a store whose array metadata is gone was served"
  fail=1
elif grep -F 'stale.zarr' "$tmp/st.err" | grep -F '.zarray' >/dev/null ||
     grep -F 'stale.zarr' "$tmp/st.err" | grep -F 'missing' >/dev/null; then
  echo "ok: missing array metadata beside consolidated metadata: `grep '^ferry' "$tmp/st.err" | head -1 | cut -c1-200`"
else
  echo "FAIL: missing b/zarr.json should be named"
  sed 's/^/    /' "$tmp/st.err"
  fail=1
fi

# Bad inputs: status 1, one "ferry:" line naming the store (or, for a
# selection, the variable) and holding every word, on 1 and 3 ranks at
# once (bad_stores in tests/lib/common.sh; most of each job is MPI start-up
# time, so the two lanes take the time of one).
bad_list=$fx/bad.txt
in_lanes bad_stores 1 3
exit $fail
