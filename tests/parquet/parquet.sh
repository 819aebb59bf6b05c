#!/bin/sh
# parquet.sh - the parquet backend (src/backends/parquet) end to end.
# tests/parquet/make_parquet.mjs writes fixtures with the writers users have
# (nodejs-polars, @duckdb/node-api, hyparquet-writer, parquet-wasm; installed
# into tests/parquet/node_modules by tests/parquet/setup.sh, which
# "./bootstrap deps" runs): every codec each writer offers (uncompressed,
# snappy, gzip, zstd, lz4_raw), data pages v1 and v2, PLAIN, dictionary,
# DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT encodings, every integer width
# signed and unsigned, float16/32/64, bool, fixed-length list columns, a
# dictionary falling back to PLAIN pages mid-chunk (parquet-wasm), several
# row groups with a short last one, prime row counts, nulls served as the
# null_fill value (Polars, DuckDB page v2), large row groups
# read in pieces at page starts (offset index, page headers, a dictionary
# page read apart), and a directory of
# parts read as a directory, a glob and a list file.  Each variable is dumped
# with `ferry dump --row-hash` over 1 (in order), 2 and 3 ranks (shuffled)
# and every row is compared by tests/fixtures/dump_compare.py with the .npy
# written from the same values the writer was given.  Bad inputs (truncated
# file, bad magic at either end, footer length past the file, corrupt
# footer, a page size past its column chunk, a page that does not
# decompress to its stated size, nulls, a missing column,
# parts of different schemas, a null_fill the
# column's dtype cannot hold) fail on 1 and 3 ranks
# with status 1 and one message naming what is wrong, without hanging.
#
# Environment (set by "make check"): FERRY, RUN_MPI, FERRY_TEST_TMPDIR,
# top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77 skip (no node, or the
# writers are not installed: run tests/parquet/setup.sh).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init parquet
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* parquet' >/dev/null; then
  echo "SKIP: this ferry has no parquet backend"
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: no node (Node.js): the fixtures are written by npm packages (apt-get install nodejs npm; tests/parquet/setup.sh)"
  exit 77
fi
nm=$top_srcdir/tests/parquet/node_modules
for p in nodejs-polars @duckdb/node-api hyparquet-writer hyparquet parquet-wasm apache-arrow; do
  if test ! -d "$nm/$p"; then
    echo "SKIP: $p is not installed in $nm (run tests/parquet/setup.sh, which ./bootstrap deps runs)"
    exit 77
  fi
done
PY=/usr/bin/python3
if ! $PY -c 'import numpy' >/dev/null 2>&1; then
  echo "SKIP: $PY lacks numpy (dump_compare.py needs it)"
  exit 77
fi
fx=$tmp/fx
if node "$top_srcdir/tests/parquet/make_parquet.mjs" "$fx" >"$tmp/make.log" 2>&1; then
  echo "ok: make_parquet.mjs wrote the fixtures (`wc -l <"$fx/good.txt"` variables, `wc -l <"$fx/bad.txt"` bad inputs)"
else
  echo "FAIL: make_parquet.mjs did not write the fixtures"
  sed 's/^/    /' "$tmp/make.log"
  exit 1
fi

BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
tab=`printf '\t'`
i=0
while IFS=$tab read -r ds var ref label opts; do
  i=`expr $i + 1`
  np=`expr $i % 3 + 1`
  if test $np = 1; then
    dump_queue "" "$label:$var" 1 ordered "$ds" "$var" \
      "--shuffle none --shuffle-buffer 0 $opts" "$ref"
  else
    dump_queue "" "$label:$var" $np spread "$ds" "$var" \
      "--seed $i --shuffle chunks $opts" "$ref"
  fi
done <"$fx/good.txt"
# Chunks that cut row groups (reads through the one-row-group cache), and
# one read spanning many row groups (decoded on threads).
dump_queue "" "duckdb zstd V2 cut:arr" 3 spread "$fx/duckdb_zstd_V2.parquet" arr \
  "--seed 3 --chunk-samples 700 --shuffle block --block-size 5" "$fx/ref/duckdb_zstd_V2__arr.npy"
dump_queue "" "hyparquet whole:i64" 2 spread "$fx/hyparquet_SNAPPY_delta.parquet" i64 \
  "--seed 4 --chunk-samples 1201 --threads 3" "$fx/ref/hyparquet_SNAPPY_delta__i64.npy"
dump_queue "" "parts dir contiguous:x" 2 spread "$fx/parts" x \
  "--shuffle none --shuffle-buffer 0 --chunk-samples 37" "$fx/ref/parts__x.npy"
# A row group of many pages, decoded on 4 threads (each page into its
# place), whole and through the one-row-group cache.
while IFS=$tab read -r ds var ref label; do
  dump_queue "" "$label:$var threads" 2 spread "$ds" "$var" \
    "--seed 2 --threads 4" "$ref"
  dump_queue "" "$label:$var threads cut" 3 spread "$ds" "$var" \
    "--seed 3 --threads 4 --chunk-samples 5000" "$ref"
done <"$fx/big.txt"
# A saved manifest (the parquet records in hex) read back by every rank.
if "$FERRY" info "$fx/parts" --save-manifest "$tmp/parts.manifest.json" >/dev/null 2>&1; then
  dump_queue "" "parts dir saved manifest:x" 3 spread "$fx/parts" x \
    "--seed 8 --manifest $tmp/parts.manifest.json" "$fx/ref/parts__x.npy"
else
  echo "FAIL: ferry info --save-manifest on $fx/parts"
  fail=1
fi
dump_run
echo "checking $njobs dumps against the values the writers were given"
$PY "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the writers'"'"' values: /'
grep -v '^ok' "$tmp/compare.out"

# ferry info shows the schema, row groups, codecs, encodings and sizes, and
# the columns it skips.
if "$FERRY" info "$fx/duckdb_snappy_V1.parquet" >"$tmp/info.out" 2>&1 &&
   grep 'storage .*arr: parquet FLOAT list, 3 row groups.*SNAPPY' "$tmp/info.out" >/dev/null &&
   grep 'storage .*s: parquet BYTE_ARRAY (ragged bytes), 3 row groups' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info: `grep 'arr: parquet' "$tmp/info.out" | cut -c1-160`"
else
  echo "FAIL: ferry info should show the list column's row groups and codec and the string column as ragged bytes"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi

# Row groups of 2 MiB per column split into pieces of 16384 rows at page
# starts (their dumps above): found from the offset index, and from the
# page headers in the copies whose offset indexes are zeroed; the column
# whose pages are irregular (dictionary fallback) is read whole.
for c in "split_plain dl offset index" "split_plain_scan v page headers" \
         "split_dict dl offset index" "split_dict_scan dl page headers"; do
  set -- $c
  f=$1 v=$2
  shift 2
  if "$FERRY" info "$fx/$f.parquet" >"$tmp/info.out" 2>&1 &&
     grep "storage .*$v: parquet.*pieces of 16384 rows at page starts (from the $*)" "$tmp/info.out" >/dev/null; then
    echo "ok: ferry info $f: $v read in pieces of 16384 rows (from the $*)"
  else
    echo "FAIL: ferry info $f should show $v read in pieces of 16384 rows (from the $*)"
    sed 's/^/    /' "$tmp/info.out"
    fail=1
  fi
done
if grep "storage .* v: .*pieces" "$tmp/info.out" >/dev/null; then
  echo "FAIL: v of split_dict_scan.parquet (irregular pages) should be read in whole row groups"
  fail=1
fi

# The ARROW:schema hint: parquet-wasm's FixedSizeList<13> shown as such; a
# broken hint is a note (the column is still read, dumped above); the
# hints Polars and parquet-wasm write for other columns decode cleanly.
if "$FERRY" info "$fx/hint.parquet" 2>&1 | grep 'storage .*f: parquet FLOAT fixed_size_list<13> (from ARROW:schema)' >/dev/null &&
   "$FERRY" info "$fx/bad/hintbad.parquet" 2>&1 | grep 'notes .*the ARROW:schema hint is not read' >/dev/null; then
  echo "ok: ferry info shows fixed_size_list<13> (from ARROW:schema), and a broken hint as a note"
else
  echo "FAIL: ferry info should show f as fixed_size_list<13> (from ARROW:schema) and the broken hint as a note"
  "$FERRY" info "$fx/hint.parquet" 2>&1 | sed 's/^/    /'
  "$FERRY" info "$fx/bad/hintbad.parquet" 2>&1 | sed 's/^/    /'
  fail=1
fi
for f in polars_zstd polars_snappy wasm_zstd wasm_none split_plain; do
  if "$FERRY" info "$fx/$f.parquet" 2>&1 | grep 'hint is not read' >/dev/null; then
    echo "FAIL: $f.parquet: its ARROW:schema hint should decode"
    fail=1
  fi
done

# Bad inputs: status 1, one "ferry:" line holding every word, on 1 and 3
# ranks, run at once in two lanes.
bad_files() {
np=$1
while IFS=$tab read -r ds vars words opts; do
  vopt=
  test "$vars" != - && vopt="--vars $vars"
  # shellcheck disable=SC2086
  $RUN_MPI $np "$FERRY" dump "$ds" --epoch 0 --batch-size 5 $vopt $opts \
    >"$tmp/bad.$np.out" 2>"$tmp/bad.$np.err"
  st=$?
  n=`grep -c '^ferry' "$tmp/bad.$np.err"`
  why=
  test "$st" = 1 || why="status $st, not 1"
  test "$n" = 1 || why="$why; $n ferry messages, not 1"
  rest=$words
  while test -n "$rest"; do
    w=${rest%%|*}
    case $rest in *'|'*) rest=${rest#*|} ;; *) rest= ;; esac
    grep -i -F -e "$w" "$tmp/bad.$np.err" >/dev/null || why="$why; no '$w' in the message"
  done
  if test -z "$why"; then
    echo "ok: `basename "$ds"` ($vars) np=$np: `grep '^ferry' "$tmp/bad.$np.err" | cut -c1-240`"
  else
    echo "FAIL: `basename "$ds"` ($vars) np=$np: $why"
    sed 's/^/    /' "$tmp/bad.$np.err" | head -20
    fail=1
  fi
done <"$fx/bad.txt"
}
( ferry_lane_session; bad_files 1; exit $fail ) >"$tmp/lane.1" 2>&1 &
pid1=$!
( ferry_lane_session; bad_files 3; exit $fail ) >"$tmp/lane.3" 2>&1 &
pid3=$!
wait $pid1 || fail=1
wait $pid3 || fail=1
cat "$tmp/lane.1" "$tmp/lane.3"
exit $fail
