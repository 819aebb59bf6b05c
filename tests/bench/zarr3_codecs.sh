#!/bin/sh
# zarr3_codecs.sh - decode rates of Zarr v3 sharded stores (issue 14): the
# .npy benchmark's row shape (float32[256], a smooth signal plus noise
# rounded to 3 digits: real-data compressibility), SIZE (default 256MiB),
# written as v3 sharded arrays (inner chunks of 1024 rows, shards of 65,536)
# uncompressed, blosc-lz4 (byte shuffle) and zstd (level 3); `ferry bench`
# on 2 ranks, shuffle=chunks, 2 epochs, threads=1 and threads=2; prints the
# decoded bytes/s per rank of each and the ratio threads=2 / threads=1.
#
# usage: tests/bench/zarr3_codecs.sh BUILD_DIR WORK_DIR [SIZE]
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}
size=${3:-256MiB}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work"
work=$(cd "$work" && pwd)
if test "`cat "$work/made" 2>/dev/null`" != "$size"; then
  rm -rf "$work"/data "$work"/*.zarr
  "$build/ferry" gen "$work/data" --size "$size" --var samples:float32:256 >/dev/null
  "$py" - "$work" "$here/../fixtures" <<'PY'
import os, sys
import numpy as np
work, fx = sys.argv[1:3]
sys.path.insert(0, fx)
from zarr3_writer import codec, write_array
n = np.load(os.path.join(work, "data", "samples.npy"), mmap_mode="r").shape[0]
# measurement-like values (a smooth signal plus noise, 3 significant
# digits): compressible about as real float data is, unlike ferry gen's
# arithmetic pattern
rng = np.random.default_rng(0)
a = (np.sin(np.arange(256, dtype=np.float32) / 16)[None, :] +
     rng.normal(0, 0.1, (n, 256)).astype(np.float32)).round(3)
inner = [1024] + list(a.shape[1:])
for name, inner_codecs in (
        ("none", [codec("bytes", endian="little")]),
        ("blosc-lz4", [codec("bytes", endian="little"),
                       codec("blosc", cname="lz4", clevel=5, shuffle="shuffle",
                             typesize=4, blocksize=0)]),
        ("zstd", [codec("bytes", endian="little"), codec("zstd", level=3)])):
    write_array(os.path.join(work, name + ".zarr"), a, (65536,) + a.shape[1:],
                [codec("sharding_indexed", chunk_shape=inner,
                       codecs=inner_codecs,
                       index_codecs=[codec("bytes", endian="little"),
                                     codec("crc32c")],
                       index_location="end")], write_empty=True)
PY
  echo "$size" >"$work/made"
fi
for store in none blosc-lz4 zstd; do
  find "$work/$store.zarr" -type f -exec cat {} + >/dev/null
  stored=$(du -sb "$work/$store.zarr" | cut -f1)
  line="$store (stored $(awk -v b="$stored" 'BEGIN {printf "%.0f MiB", b / 1048576}')):"
  for t in 1 2; do
    bps=$(mpirun --oversubscribe -np 2 "$build/ferry" bench "$work/$store.zarr" \
            --epochs 2 --batch-size 1024 --shuffle chunks --shuffle-buffer 4 \
            --threads $t --json | grep -o '"bytes_per_s": [0-9.e+]*' | head -n 1 |
          sed 's/.*: //')
    eval "r$t=$bps"
    line="$line threads=$t $(awk -v b="$bps" 'BEGIN {printf "%.0f MB/s per rank", b / 2 / 1e6}');"
  done
  echo "$line threads 2/1: $(awk -v a="$r1" -v b="$r2" 'BEGIN {printf "%.2f", b / a}')"
done
