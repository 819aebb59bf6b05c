#!/bin/sh
# parquet_pool.sh - the parquet backend's reads of several row groups at
# once decoded as jobs on the decode pool (src/backends/pool.c, issue 15):
# the same `ferry dump --row-hash` with threads=1 (every row group decoded
# inline) and threads=4 (one job per row group or piece, on 4 lanes), on
# 1 and 2 ranks, with chunks of many row groups, on fixtures of
# tests/parquet/make_parquet.mjs: zstd (DuckDB page v2, parquet-wasm, and
# large row groups split in pieces at page starts) and snappy
# (hyparquet-writer, PLAIN and DELTA), and a directory of three files
# (the loader's grouped, deferred reads across parts).  Every run's rows are checked
# against the values the writer was given (tests/fixtures/dump_compare.py)
# and the threads=4 output must equal the threads=1 output byte for byte.
# Then a snappy file whose column i32 has a bad page in row groups 1 and 3
# (tests/parquet/bad_groups.mjs): each run fails with status 1 and rank
# 0's message, naming row group 1, is the same with threads=1 and
# threads=4.
#
# Reads of one row group: hyparquet_big.parquet (one row group of 300007
# rows, 1.2 MB in 12 pages) read whole (the default plan) and in reads of
# 50000 rows (chunk_samples), whose pages are decoded as runs of pages on
# the pool; the same checks.  Then a copy whose pages 3 and 7 are bad: the
# message names page 3's offset, the same with threads=1 and threads=4.
#
# Bugs it pins: a row group decoded into the wrong place of the read
# buffer; a scratch shared by two jobs at once; an error that depends on
# which thread failed first.
#
# Environment (set by "make check"): FERRY, RUN_MPI, FERRY_TEST_TMPDIR,
# top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77 skip (no node, or the
# writers are not installed: run tests/parquet/setup.sh).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init parquet_pool
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
if node "$top_srcdir/tests/parquet/make_parquet.mjs" "$fx" >"$tmp/make.log" 2>&1 &&
   node "$top_srcdir/tests/parquet/bad_groups.mjs" "$fx/hyparquet_SNAPPY_plain.parquet" \
     "$fx/bad_groups.parquet" i32 1 3 >>"$tmp/make.log" 2>&1 &&
   node "$top_srcdir/tests/parquet/bad_groups.mjs" "$fx/hyparquet_big.parquet" \
     "$fx/bad_pages.parquet" big 0:3 0:7 >"$tmp/bad_pages.txt" 2>>"$tmp/make.log"; then
  echo "ok: fixtures written"
else
  echo "FAIL: make_parquet.mjs or bad_groups.mjs did not write the fixtures"
  sed 's/^/    /' "$tmp/make.log"
  exit 1
fi

BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
pairs=
# pair LABEL NP DATASET VAR "OPTIONS" NPY: the same dump with threads=1 and
# threads=4, both checked against the writer's values; compared later.
pair() {
  p_label=$1 p_np=$2 p_ds=$3 p_var=$4 p_opts=$5 p_ref=$6
  dump_queue "" "$p_label threads=1" "$p_np" spread "$p_ds" "$p_var" "$p_opts --threads 1" "$p_ref"
  p_one=$njobs
  dump_queue "" "$p_label threads=4" "$p_np" spread "$p_ds" "$p_var" "$p_opts --threads 4" "$p_ref"
  pairs="$pairs $p_one:$njobs:`echo "$p_label" | tr ' ' '_'`_np=$p_np"
}
tab=`printf '\t'`
for np in 1 2; do
  # chunk_samples: several row groups (pieces) per read
  while IFS=$tab read -r ds var ref label opts; do
    case $label in
    duckdb_zstd_V2) cs=4096 ;;
    wasm_zstd) cs=1000 ;;
    hyparquet_SNAPPY_plain | hyparquet_SNAPPY_delta) cs=1000 ;;
    split_plain) cs=65536 ;;
    parts_dir) cs=100 ;; # deferred reads across the files of a directory
    *) continue ;;
    esac
    case $var in
    i8 | i64 | f32 | arr | v | dl | x) ;;
    *) continue ;;
    esac
    pair "$label:$var chunk_samples=$cs" $np "$ds" "$var" \
      "--seed $np --shuffle chunks --chunk-samples $cs $opts" "$ref"
  done <"$fx/good.txt"
  # one row group: read whole, and in reads of part of it
  while IFS=$tab read -r ds var ref label opts; do
    test "$label" = hyparquet_big || continue
    pair "$label:$var" $np "$ds" "$var" "--seed $np --shuffle chunks $opts" "$ref"
    pair "$label:$var chunk_samples=50000" $np "$ds" "$var" \
      "--seed $np --shuffle chunks --chunk-samples 50000 $opts" "$ref"
  done <"$fx/big.txt"
done
dump_run
echo "checking $njobs dumps against the values the writers were given"
$PY "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the writers'"'"' values: /'
grep -v '^ok' "$tmp/compare.out"
for p in $pairs; do
  a=${p%%:*}
  rest=${p#*:}
  b=${rest%%:*}
  label=${rest#*:}
  if test -s "$tmp/dump.$a" && cmp -s "$tmp/dump.$a" "$tmp/dump.$b"; then
    echo "ok: $label: threads=4 serves the same rows as threads=1 (`wc -l <"$tmp/dump.$a"` lines)"
  else
    echo "FAIL: $label: threads=4 and threads=1 differ"
    diff "$tmp/dump.$a" "$tmp/dump.$b" | head -5 | sed 's/^/    /'
    fail=1
  fi
done

# ---- a bad page in row groups 1 and 3: row group 1's error, both ways ----
for np in 1 2; do
  for t in 1 4; do
    $RUN_MPI $np "$FERRY" dump "$fx/bad_groups.parquet" --var i32 --epoch 0 \
      --batch-size 5 --shuffle none --chunk-samples 1000 --threads $t \
      >"$tmp/e$t.out" 2>"$tmp/e$t.err"
    echo $? >"$tmp/e$t.st"
  done
  m1=`grep '^ferry:' "$tmp/e1.err" | sed 's/rank [0-9]*/rank N/g' | sort -u`
  m4=`grep '^ferry:' "$tmp/e4.err" | sed 's/rank [0-9]*/rank N/g' | sort -u`
  what="np=$np bad_groups.parquet"
  if test "`cat "$tmp/e1.st"`" != 1 || test "`cat "$tmp/e4.st"`" != 1; then
    echo "FAIL: $what: exit status (threads=1: `cat "$tmp/e1.st"`, threads=4: `cat "$tmp/e4.st"`), want 1"
    sed 's/^/    /' "$tmp/e4.err" | head -5
    fail=1
  elif grep -l -e 'Sanitizer' -e 'runtime error' "$tmp/e1.err" "$tmp/e4.err" >/dev/null; then
    echo "FAIL: $what: a sanitizer reported (sanitizer build)"
    grep -h -A5 -e 'Sanitizer' -e 'runtime error' "$tmp/e1.err" "$tmp/e4.err" | head -12 | sed 's/^/    /'
    fail=1
  elif ! printf '%s\n' "$m1" | grep 'row group 1 .*stated size' >/dev/null; then
    echo "FAIL: $what: the message should name row group 1 and the stated size"
    sed 's/^/    /' "$tmp/e1.err" | head -5
    fail=1
  elif test "$m1" != "$m4"; then
    echo "FAIL: $what: threads=1 and threads=4 report different errors"
    printf '    threads=1: %s\n    threads=4: %s\n' "$m1" "$m4"
    fail=1
  else
    echo "ok: $what: `printf '%s' "$m1" | sed "s|$fx|FX|g" | head -1`"
  fi
done
# ---- bad pages 3 and 7 of one row group: page 3's error, both ways ----
off3=`sed -n 's/^0:3 //p' "$tmp/bad_pages.txt"`
for np in 1 2; do
  for cs in 0 50000; do
    csopt=
    test $cs = 0 || csopt="--chunk-samples $cs"
    for t in 1 4; do
      $RUN_MPI $np "$FERRY" dump "$fx/bad_pages.parquet" --var big --epoch 0 \
        --batch-size 5 --shuffle none $csopt --threads $t \
        >"$tmp/p$t.out" 2>"$tmp/p$t.err"
      echo $? >"$tmp/p$t.st"
    done
    m1=`grep '^ferry:' "$tmp/p1.err" | sed 's/rank [0-9]*/rank N/g' | sort -u`
    m4=`grep '^ferry:' "$tmp/p4.err" | sed 's/rank [0-9]*/rank N/g' | sort -u`
    what="np=$np chunk_samples=$cs bad_pages.parquet"
    if test "`cat "$tmp/p1.st"`" != 1 || test "`cat "$tmp/p4.st"`" != 1; then
      echo "FAIL: $what: exit status (threads=1: `cat "$tmp/p1.st"`, threads=4: `cat "$tmp/p4.st"`), want 1"
      sed 's/^/    /' "$tmp/p4.err" | head -5
      fail=1
    elif grep -l -e 'Sanitizer' -e 'runtime error' "$tmp/p1.err" "$tmp/p4.err" >/dev/null; then
      echo "FAIL: $what: a sanitizer reported (sanitizer build)"
      grep -h -A5 -e 'Sanitizer' -e 'runtime error' "$tmp/p1.err" "$tmp/p4.err" | head -12 | sed 's/^/    /'
      fail=1
    elif test -z "$off3" ||
         ! printf '%s\n' "$m1" | grep "row group 0 (page at offset $off3).*stated size" >/dev/null; then
      echo "FAIL: $what: the message should name page 3 (offset $off3) and the stated size"
      sed 's/^/    /' "$tmp/p1.err" | head -5
      fail=1
    elif test "$m1" != "$m4"; then
      echo "FAIL: $what: threads=1 and threads=4 report different errors"
      printf '    threads=1: %s\n    threads=4: %s\n' "$m1" "$m4"
      fail=1
    else
      echo "ok: $what: `printf '%s' "$m1" | sed "s|$fx|FX|g" | head -1`"
    fi
  done
done
exit $fail
