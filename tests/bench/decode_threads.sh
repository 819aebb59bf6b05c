#!/bin/sh
# decode_threads.sh - does `threads` scale decoding? (issue 14: the decode
# pool, src/backends/pool.c).  One rank, `ferry bench` with threads=1 and
# threads=2, page cache warm, the two runs of a round back to back; prints
# the served bytes/s of each and the ratio threads=2 / threads=1.
#
# usage: tests/bench/decode_threads.sh BUILD_DIR WORK_DIR [SIZE [RUNS]]
#
# Datasets (SIZE bytes of rows each, default 128MiB; written once into
# WORK_DIR): float32 rows of 256 values, a smooth signal plus noise rounded
# to 3 digits (real-data compressibility), as
#   npz-member   one numpy.savez_compressed archive (one deflated member,
#                inflate checkpoints every 4096 rows), chunk_samples 0
#                (automatic: the checkpoint intervals)
#   npz-files    DLIO's layout: one savez_compressed archive per sample of
#                64 rows x 256 (64 KiB), a glob of them, batch 16
#   blosc-lz4    Zarr v3, sharded: inner chunks of 1024 rows (blosc lz4,
#                byte shuffle) in shards of 65,536 rows
#   zstd         the same with zstd level 3
#   parquet-zstd a Parquet file written by DuckDB (tests/parquet/
#                node_modules; left out without them): a FLOAT[256] column
#                of the same kind of rows (sin(k/16) plus uniform noise,
#                rounded to 3 digits), zstd, row groups of 2048 rows, read
#                with chunk_samples 8192 (4 row groups a read: 4 jobs on
#                the pool; issue 15); PQ_CHUNK_SAMPLES (environment)
#                sets another (2048: one row group a read, the loader's
#                grouped reads: one job a read)
# DATASETS (environment) picks some of them (default: all five).
# shuffle=chunks, shuffle_buffer 4, 3 epochs (the first one of npz-member
# inflates the member whole on one lane: it checks the CRC-32 and takes the
# checkpoints).  RUNS rounds (default 3).  The machine may be shared: read
# the ratios, taken inside one round, not the absolute figures.
set -eu
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE [RUNS]]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE [RUNS]]}
size=${3:-128MiB}
runs=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
if test "$(cat "$work/made" 2>/dev/null)" != "$size"; then
  rm -rf "$work/data" "$work/files" "$work"/*.zarr "$work"/*.npz
  "$build/ferry" gen "$work/data" --size "$size" --var samples:float32:256 >/dev/null
  "$py" - "$work" "$here/../fixtures" <<'PY'
import os, sys
import numpy as np
work, fx = sys.argv[1:3]
sys.path.insert(0, fx)
from zarr3_writer import codec, write_array
n = np.load(os.path.join(work, "data", "samples.npy"), mmap_mode="r").shape[0]
rng = np.random.default_rng(0)
a = (np.sin(np.arange(256, dtype=np.float32) / 16)[None, :] +
     rng.normal(0, 0.1, (n, 256)).astype(np.float32)).round(3)
np.savez_compressed(os.path.join(work, "member.npz"), samples=a)
os.makedirs(os.path.join(work, "files"))
for i in range(n // 64):
    np.savez_compressed(os.path.join(work, "files", "s%06d.npz" % i),
                        x=a[i * 64:(i + 1) * 64][None])
inner = [1024, 256]
for name, cs in (
        ("blosc-lz4", [codec("bytes", endian="little"),
                       codec("blosc", cname="lz4", clevel=5, shuffle="shuffle",
                             typesize=4, blocksize=0)]),
        ("zstd", [codec("bytes", endian="little"), codec("zstd", level=3)])):
    write_array(os.path.join(work, name + ".zarr"), a, (65536, 256),
                [codec("sharding_indexed", chunk_shape=inner, codecs=cs,
                       index_codecs=[codec("bytes", endian="little"),
                                     codec("crc32c")],
                       index_location="end")], write_empty=True)
PY
  echo "$size" >"$work/made"
  rm -f "$work/pq-zstd.parquet"
fi
nm=$here/../parquet/node_modules
datasets=${DATASETS:-npz-member npz-files blosc-lz4 zstd parquet-zstd}
if test ! -d "$nm/@duckdb/node-api"; then
  datasets=$(echo "$datasets" | sed 's/parquet-zstd//')
elif test ! -f "$work/pq-zstd.parquet"; then
  rows=$("$py" -c 'import numpy as np, sys; print(np.load(sys.argv[1], mmap_mode="r").shape[0])' "$work/data/samples.npy")
  (cd "$here/../parquet" && node -e '
const { DuckDBInstance } = require("@duckdb/node-api");
(async () => {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  await c.run("SELECT setseed(0.5)");
  await c.run(`COPY (SELECT list_transform(range(256), k -> round(sin(k / 16.0) + (random() - 0.5) * 0.35, 3)::FLOAT)::FLOAT[256] AS samples
    FROM range(${process.argv[1]}) t(i)) TO '"'"'${process.argv[2]}'"'"'
    (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)`);
})();' "$rows" "$work/pq-zstd.parquet")
fi

bench() { # dataset threads [options]
  d=$1
  t=$2
  shift 2
  "$build/ferry" bench "$d" --epochs 3 --shuffle chunks --shuffle-buffer 4 \
    --seed 1 --threads "$t" --json "$@" | grep -o '"bytes_per_s": [0-9.e+]*' |
    head -n 1 | sed 's/.*: //'
}

for r in $(seq 1 "$runs"); do
  for name in $datasets; do
    case $name in
    parquet-zstd) set -- "$work/pq-zstd.parquet" --batch-size 1024 --chunk-samples "${PQ_CHUNK_SAMPLES:-8192}" ;;
    npz-member) set -- "$work/member.npz" --batch-size 1024 ;;
    npz-files) set -- "$work/files/*.npz" --batch-size 16 ;;
    *) set -- "$work/$name.zarr" --batch-size 1024 ;;
    esac
    cat "$work"/*.npz "$work"/files/*.npz >/dev/null 2>&1 || true
    find "$work"/*.zarr "$work"/*.parquet -type f -exec cat {} + >/dev/null 2>&1 || true
    d=$1
    shift
    b1=$(bench "$d" 1 "$@")
    b2=$(bench "$d" 2 "$@")
    echo "round $r $name: threads=1 $(awk -v b="$b1" 'BEGIN {printf "%.0f MB/s", b / 1e6}'), threads=2 $(awk -v b="$b2" 'BEGIN {printf "%.0f MB/s", b / 1e6}'), 2/1 $(awk -v a="$b1" -v b="$b2" 'BEGIN {printf "%.2f", b / a}')"
  done
done
