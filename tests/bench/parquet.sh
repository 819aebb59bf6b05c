#!/bin/sh
# parquet.sh - the Parquet benchmark of docs/performance.md (issue 15).
#
# usage: tests/bench/parquet.sh BUILD_DIR WORK_DIR [SIZE [RUNS]]
#
# The .npy benchmark's rows (`ferry gen`: float32 x 256 per sample, SIZE
# bytes, default 256MiB) and the same rows written by DuckDB
# (tests/parquet/node_modules, tests/parquet/setup.sh) as one Parquet file
# per codec, a FLOAT[256] column (a 3-level list of 256 elements per row:
# DuckDB's fixed-size array), row groups of 2048 rows (2 MiB), data page
# v1, PLAIN: uncompressed, snappy and zstd; and uncompressed again with row
# groups of 16384 rows (16 MiB), by DuckDB (which writes each 16 MiB column
# chunk as one page: nothing to split it at) and by parquet-wasm (the Rust
# parquet crate, from an Arrow FixedSizeList<float32, 256> column: pages
# of 1 MiB and an offset index, so ferry reads the row groups in pieces of
# 1024 rows).  With the page cache warm, RUNS times (default 3), in the
# same loop iteration:
#   npy            mpirun -np 2 ferry bench DATA.npy (shuffle=chunks)
#   parquet-CODEC  the same on each Parquet file (2 ranks)
#   none-16k       the same on DuckDB's file of 16384-row groups
#   wasm-16k       the same on parquet-wasm's file of 16384-row groups
#   noindex        the same on a copy of it without offset indexes (ferry
#                  reads the page headers instead)
#   threads-T      ferry on 1 rank, zstd file, decode threads T = 1, 2, 4
#   polars         nodejs-polars reading the whole file (readParquet) in one
#                  process, uncompressed and zstd: the Polars engine's
#                  decoded bytes/s
# and then, once, the MLPerf Storage / DLIO Parquet layout: 128 files of
# 400 samples, 32 uncompressed FLOAT columns each (PLAIN, page v1, written
# by DuckDB), read as a directory on 2 ranks with `ferry bench
# --compute-ms 2 --batch-size 64 --shuffle chunks`: AU and samples/s.
# Results: WORK_DIR/parquet-results.txt and the table on stdout.  FERRY, if
# set, is the ferry program to run instead of BUILD_DIR/ferry.
#
# PARQUET_BENCH=split measures only the large row groups, RUNS times, each
# line in the same iteration, 8 epochs each (EPOCHS): npy, wasm-16k,
# noindex, none-16k and the 2 MiB row groups (pq-none), 2 ranks; no
# Polars, threads or MLPerf layout.
#
# PARQUET_BENCH=codec FERRY_BASE=OTHER/ferry compares two builds' page
# decoders (decision 0042: libsnappy for the hand-written snappy), RUNS
# times, the two programs alternated in each iteration (which goes first
# alternates from one iteration to the next): the snappy file on
# 2 ranks, then on 1 rank with 1 decode thread (where decoding is most of
# the time), and the zstd file on 1 rank, 1 thread, as the control (its
# decoder is the same in both).
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-256MiB}
runs=${4:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
ferry=${FERRY:-$build/ferry}
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/parquet-results.txt"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"
if ! test -f "$work/npy/samples.npy"; then
  rm -rf "$work/npy"
  "$ferry" gen "$work/npy" --size "$size" --var samples:float32:256 >/dev/null
fi
rows=$(/usr/bin/python3 -c "import numpy as np; print(np.load('$work/npy/samples.npy', mmap_mode='r').shape[0])")
for codec in uncompressed snappy zstd uncompressed-16k; do
  f="$work/pq-$codec.parquet"
  test -f "$f" && continue
  rg=2048
  case $codec in *-16k) rg=16384 ;; esac
  (cd "$src/tests/parquet" && node -e '
const { DuckDBInstance } = require("@duckdb/node-api");
(async () => {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  // element k of row i: (i + k) mod 2^24, as ferry gen writes it
  await c.run(`COPY (SELECT list_transform(range(256), k -> ((i + k) % 16777216)::FLOAT)::FLOAT[256] AS samples
    FROM range(${process.argv[1]}) t(i)) TO '"'"'${process.argv[2]}'"'"'
    (FORMAT parquet, COMPRESSION ${process.argv[3]}, ROW_GROUP_SIZE ${process.argv[4]})`);
})();' "$rows" "$f" "${codec%-16k}" "$rg")
done
f="$work/pq-wasm-16k.parquet"
if ! test -f "$f"; then
  (cd "$src/tests/parquet" && node -e '
const arrow = require("apache-arrow");
const pw = require("parquet-wasm");
const fs = require("fs");
const rows = Number(process.argv[1]), k = 256;
const vals = new Float32Array(rows * k);
for (let i = 0; i < rows; i++) for (let j = 0; j < k; j++) vals[i * k + j] = (i + j) % 16777216;
const flat = arrow.makeData({ type: new arrow.Float32(), length: rows * k, data: vals });
const type = new arrow.FixedSizeList(k, new arrow.Field("item", new arrow.Float32(), false));
const col = arrow.makeVector(arrow.makeData({ type, length: rows, nullCount: 0, child: flat }));
const ipc = arrow.tableToIPC(new arrow.Table({ samples: col }), "stream");
const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.UNCOMPRESSED)
  .setMaxRowGroupSize(16384).setDictionaryEnabled(false).build();
fs.writeFileSync(process.argv[2], pw.writeParquet(pw.Table.fromIPCStream(ipc), props));' "$rows" "$f")
fi
# the same file with its offset indexes zeroed: ferry finds the pages by
# reading their headers
f="$work/pq-wasm-16k-noindex.parquet"
if ! test -f "$f"; then
  (cd "$src/tests/parquet" && node --input-type=module -e '
import fs from "node:fs";
const { parquetMetadata } = await import("hyparquet");
const buf = fs.readFileSync(process.argv[1]);
const md = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
for (const g of md.row_groups) for (const c of g.columns)
  if (c.offset_index_offset !== undefined)
    buf.fill(0, Number(c.offset_index_offset), Number(c.offset_index_offset) + Number(c.offset_index_length));
fs.writeFileSync(process.argv[2], buf);' "$work/pq-wasm-16k.parquet" "$f")
fi
# the same values: first rows compared once
"$ferry" dump "$work/pq-zstd.parquet" --shuffle none --batch-size 4 --row-hash 2>/dev/null | head -3 >"$work/a.txt"
"$ferry" dump "$work/npy/samples.npy" --shuffle none --batch-size 4 --row-hash 2>/dev/null | head -3 >"$work/b.txt"
cmp -s "$work/a.txt" "$work/b.txt" || { echo "parquet.sh: the Parquet rows differ from the .npy rows"; exit 1; }
"$ferry" dump "$work/pq-wasm-16k.parquet" --shuffle none --batch-size 4 --row-hash 2>/dev/null | head -3 >"$work/a.txt"
cmp -s "$work/a.txt" "$work/b.txt" || { echo "parquet.sh: the parquet-wasm rows differ from the .npy rows"; exit 1; }

bench() { # np dataset extra...: bytes/s
  np=$1 ds=$2
  shift 2
  $mpirun -np "$np" "$ferry" bench "$ds" --epochs "${EPOCHS:-2}" --batch-size 1024 \
    --shuffle chunks --seed 1 --json "$@" | tail -1 |
    /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.3f" % (j["bytes_per_s"] / 1e9))'
}
polars() { # file: decoded GB/s of readParquet, best of 3
  (cd "$src/tests/parquet" && node -e '
const pl = require("nodejs-polars");
let best = 1e9;
for (let r = 0; r < 3; r++) {
  const t = process.hrtime.bigint();
  const df = pl.readParquet(process.argv[1], { columns: ["samples"] });
  const s = Number(process.hrtime.bigint() - t) / 1e9;
  if (df.height !== Number(process.argv[2])) throw new Error("rows");
  best = Math.min(best, s);
}
console.log((Number(process.argv[2]) * 1024 / best / 1e9).toFixed(3));' "$1" "$rows")
}
if test "${PARQUET_BENCH:-}" = split; then
  EPOCHS=${EPOCHS:-8}
  echo "run npy wasm-16k noindex none-16k pq-none (GB/s, 2 ranks, $EPOCHS epochs)" | tee -a "$out"
  for i in $(seq 1 "$runs"); do
    line=$i
    for s in npy/samples.npy pq-wasm-16k.parquet pq-wasm-16k-noindex.parquet \
      pq-uncompressed-16k.parquet pq-uncompressed.parquet; do
      cat "$work/$s" >/dev/null
      line="$line $(bench 2 "$work/$s")"
    done
    echo "$line" | tee -a "$out"
  done
  exit 0
fi
if test "${PARQUET_BENCH:-}" = codec; then
  base=${FERRY_BASE:?PARQUET_BENCH=codec needs FERRY_BASE, the other ferry}
  echo "run | snappy 2 ranks: new base | snappy 1 rank 1 thread: new base | zstd 1 rank 1 thread: new base (GB/s)" | tee -a "$out"
  for i in $(seq 1 "$runs"); do
    cat "$work"/pq-snappy.parquet "$work"/pq-zstd.parquet >/dev/null
    line="$i |"
    for args in "2 $work/pq-snappy.parquet" "1 $work/pq-snappy.parquet --threads 1" \
      "1 $work/pq-zstd.parquet --threads 1"; do
      # shellcheck disable=SC2086 # args: np, file, options
      # the order alternates too: odd runs new first, even runs base first
      if test $((i % 2)) = 1; then
        a=$(bench $args)
        b=$(ferry=$base bench $args)
      else
        b=$(ferry=$base bench $args)
        a=$(bench $args)
      fi
      line="$line $a $b |"
    done
    echo "$line" | tee -a "$out"
  done
  exit 0
fi
echo "rows $rows, $(ls -l "$work"/pq-*.parquet | awk '{printf "%s=%s ", $NF, $5}')" | tee -a "$out"
echo "run npy pq-none pq-snappy pq-zstd none-16k wasm-16k noindex | 1rank-zstd threads=1 2 4 | polars-none polars-zstd (GB/s)" | tee -a "$out"
for i in $(seq 1 "$runs"); do
  cat "$work"/npy/samples.npy "$work"/pq-*.parquet >/dev/null
  n=$(bench 2 "$work/npy/samples.npy")
  u=$(bench 2 "$work/pq-uncompressed.parquet")
  s=$(bench 2 "$work/pq-snappy.parquet")
  z=$(bench 2 "$work/pq-zstd.parquet")
  b=$(bench 2 "$work/pq-uncompressed-16k.parquet")
  w=$(bench 2 "$work/pq-wasm-16k.parquet")
  x=$(bench 2 "$work/pq-wasm-16k-noindex.parquet")
  t1=$(bench 1 "$work/pq-zstd.parquet" --threads 1)
  t2=$(bench 1 "$work/pq-zstd.parquet" --threads 2)
  t4=$(bench 1 "$work/pq-zstd.parquet" --threads 4)
  pu=$(polars "$work/pq-uncompressed.parquet" 2>/dev/null || echo -)
  pz=$(polars "$work/pq-zstd.parquet" 2>/dev/null || echo -)
  echo "$i $n $u $s $z $b $w $x | $t1 $t2 $t4 | $pu $pz" | tee -a "$out"
done

# MLPerf Storage layout: many small files of uncompressed float32 columns
if ! test -f "$work/mlperf/part-00127.parquet"; then
  mkdir -p "$work/mlperf"
  (cd "$src/tests/parquet" && node -e '
const { DuckDBInstance } = require("@duckdb/node-api");
(async () => {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  const cols = Array.from({ length: 32 }, (_, k) => `((i + ${k}) % 16777216)::FLOAT AS c${k}`).join(", ");
  for (let f = 0; f < 128; f++)
    await c.run(`COPY (SELECT ${cols} FROM range(${f * 400}, ${(f + 1) * 400}) t(i))
      TO '"'"'${process.argv[1]}/part-${String(f).padStart(5, "0")}.parquet'"'"'
      (FORMAT parquet, COMPRESSION uncompressed)`);
})();' "$work/mlperf")
fi
cat "$work"/mlperf/*.parquet >/dev/null
j=$($mpirun -np 2 "$ferry" bench "$work/mlperf" --epochs 2 --batch-size 64 \
  --shuffle chunks --seed 1 --compute-ms 2 --json | tail -1)
echo "mlperf layout (128 files x 400 samples x 32 float32 columns, 2 ranks, compute 2 ms per batch of 64): $(echo "$j" |
  /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("AU %.3f, %.0f samples/s, wait fraction %.3f" % (j["au"], j["samples_per_s"], j["wait_fraction"]))')" | tee -a "$out"
