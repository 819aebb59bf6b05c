#!/bin/sh
# parquet.sh - ragged Parquet columns (src/backends/parquet/ragged.c,
# docs/ragged.md) written by nodejs-polars, @duckdb/node-api,
# hyparquet-writer and parquet-wasm (tests/ragged/make_parquet_ragged.mjs):
# LIST columns of int32 and float32 of varying length (empty lists among
# them; Polars, DuckDB, hyparquet-writer's 3-level list of optional
# elements, parquet-wasm), strings and binary (PLAIN, dictionary,
# DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY; pages v1 and v2; uncompressed,
# snappy, zstd; several row groups), a list whose rows all hold 4 elements
# (a fixed (N, 4) variable), and nulls (null lists, null elements, null
# strings) served per null_fill.  Every column is dumped with `ferry dump
# --row-hash` on 1 rank in storage order and on 2 and 3 ranks shuffled,
# and every sample (its length and all its values) compared with what the
# writer was given (tests/fixtures/dump_compare.py).  Then: ferry info's
# ragged lines, ferry verify with max_tokens on 3 ranks, a saved manifest
# (its offsets' file) serving the samples of a scan, the nulls refused
# without null_fill, and a corrupt byte-array length refused, one message
# on 1 and 3 ranks.
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY,
# FERRY_TEST_TMPDIR, top_srcdir, top_builddir.  Exit 0 pass, 1 fail, 77
# skip (no node, or the writers are not installed: tests/parquet/setup.sh).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init parquet_ragged
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the references are checked with NumPy"
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: no node (Node.js): the fixtures are written by npm packages (tests/parquet/setup.sh)"
  exit 77
fi
nm=$top_srcdir/tests/parquet/node_modules
for p in nodejs-polars @duckdb/node-api hyparquet-writer parquet-wasm apache-arrow; do
  if test ! -d "$nm/$p"; then
    echo "SKIP: $p is not installed in $nm (run tests/parquet/setup.sh, which ./bootstrap deps runs)"
    exit 77
  fi
done
fx=$tmp/fx
if node "$top_srcdir/tests/ragged/make_parquet_ragged.mjs" "$fx" >"$tmp/make.log" 2>&1; then
  ok "`cat "$tmp/make.log"`"
else
  failed "make_parquet_ragged.mjs did not write the fixtures" "$tmp/make.log"
  exit 1
fi
# The writer's values as NumPy files: a ragged column an .npz of values and
# offsets (dump_compare.py's FILE.npz::ragged), a fixed one a .npy.
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/refs_from_json.py" "$fx/ref" ||
  { failed "the references did not convert"; exit 1; }

BATCH=11
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
tab=`printf '\t'`
i=0
while IFS=$tab read -r ds col r opts; do
  i=`expr $i + 1`
  base=${r%.json}
  if test -f "$base.npz"; then ref="$base.npz::ragged"; else ref="$base.npy"; fi
  label="`basename "$ds"`:$col"
  dump_queue "" "$label ordered" 1 ordered "$ds" "$col" \
    "--shuffle none --shuffle-buffer 0 $opts" "$ref"
  np=`expr 2 + $i % 2`
  dump_queue "" "$label shuffled" $np spread "$ds" "$col" \
    "--seed $i --chunk-samples 97 --threads 3 $opts" "$ref"
done <"$fx/good.txt"
dump_run
echo "checking $njobs dumps against the values the writers were given"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the writers'"'"' values: /'
grep -v '^ok' "$tmp/compare.out"

# ---- ferry info ---------------------------------------------------------------
if "$FERRY" info "$fx/duckdb_zstd_V2.parquet" >"$tmp/info.out" 2>&1 &&
   grep '^  ids  *int32  *little (5003, \*)' "$tmp/info.out" >/dev/null &&
   grep '^  text  *uint8  .*(5003, \*)' "$tmp/info.out" >/dev/null &&
   grep '^ragged  *ids: lengths 0 to 12 (mean 6.0)' "$tmp/info.out" >/dev/null &&
   grep 'storage  *text: parquet BYTE_ARRAY (ragged bytes), 3 row groups' "$tmp/info.out" >/dev/null; then
  ok "ferry info of DuckDB's file: ids and text ragged, their lengths and storage"
else
  failed "ferry info should show the ragged columns of DuckDB's file" "$tmp/info.out"
fi
if "$FERRY" info "$fx/polars_zstd.parquet" >"$tmp/info.out" 2>&1 &&
   grep '^  four  *float32  *little (5003, 4)' "$tmp/info.out" >/dev/null; then
  ok "ferry info: a list whose rows all hold 4 elements is a fixed (5003, 4) variable"
else
  failed "ferry info should show Polars' four as (5003, 4)" "$tmp/info.out"
fi

# ---- the promises over a ragged Parquet column: max_tokens on 3 ranks ---------
expect_verify 3 "$fx/duckdb_snappy_V1.parquet" --vars ids,text \
  --max-tokens 200 --bucket-window 8 --batch-size 64

# ---- a saved manifest: the open's pass over every chunk skipped ---------------
ds=$fx/duckdb_zstd_V2.parquet
if "$FERRY" info "$ds" --save-manifest "$tmp/pm.json" >"$tmp/pm.out" 2>&1 &&
   "$FERRY" dump "$ds" --vars ids,text --row-hash --shuffle none >"$tmp/pm.scan" 2>&1 &&
   "$FERRY" dump "$ds" --manifest "$tmp/pm.json" --vars ids,text --row-hash \
     --shuffle none >"$tmp/pm.saved" 2>&1 &&
   test -s "$tmp/pm.scan" && cmp -s "$tmp/pm.scan" "$tmp/pm.saved"; then
  ok "a saved manifest of ragged Parquet columns serves the samples of a scan (`wc -l <"$tmp/pm.saved"` rows)"
else
  failed "a saved manifest of ragged Parquet columns should serve the samples of a scan" "$tmp/pm.saved"
fi

# ---- nulls without null_fill, a corrupt length ---------------------------------
"$PYTHON_NUMPY" - "$fx" <<'PY' || { failed "the corrupt file was not written"; exit 1; }
import os, sys
d = sys.argv[1]
b = open(os.path.join(d, "hyparquet_PLAIN_UNCOMPRESSED.parquet"), "rb").read()
one = b"\x04\x00\x00\x00s1:x"        # the second string, PLAIN: its length
assert b.count(one) == 1
open(os.path.join(d, "bad_length.parquet"), "wb").write(
    b.replace(one, b"\x00\xff\xff\x7fs1:x"))
PY
bad() {
  np=$1
  run="$RUN_MPI $np"
  test "$np" = 1 && run=
  expect_refusal -l "null element np=$np" -n polars_nulls.parquet 1 \
    "column ids|row 3|null element|null_fill" \
    $run "$FERRY" dump "$fx/polars_nulls.parquet" --vars ids
  expect_refusal -l "null_fill not of the dtype np=$np" -n polars_nulls.parquet 1 \
    "column ids|row 3|null_fill=1.5|int32" \
    $run "$FERRY" dump "$fx/polars_nulls.parquet" --vars ids --null-fill 1.5
  expect_refusal -l "null list np=$np" -n polars_nulls.parquet 1 \
    "column nl|row 4|null list|null_fill" \
    $run "$FERRY" dump "$fx/polars_nulls.parquet" --vars nl
  expect_refusal -l "null string np=$np" -n polars_nulls.parquet 1 \
    "column text|row 5|null value|null_fill" \
    $run "$FERRY" dump "$fx/polars_nulls.parquet" --vars text
  expect_refusal -l "corrupt length np=$np" -n bad_length.parquet 1 \
    "text|row 1|PLAIN byte array runs past its page" \
    $run "$FERRY" dump "$fx/bad_length.parquet" --vars text
}
in_lanes bad 1 3
exit $fail
