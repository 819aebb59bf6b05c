#!/bin/sh
# zarr3.sh - the Zarr v3 (sharded) benchmark of docs/performance.md
# (issue 14): the rows of the .npy benchmark (tests/bench/npy.sh: 1 KiB rows
# of float32, 2 ranks, shuffle=chunks, shuffle_buffer=4, batch 1024) read
# from the same data stored as
#   npy        the .npy file of `ferry gen`
#   v3-64m     Zarr v3, uncompressed, sharded: inner chunks of 1024 rows
#              (1 MiB), shards of 65536 rows (64 MiB), index at the end
#   v3-1g      the same with shards of 1048576 rows (1 GiB)
#   v2         Zarr v2 (zarr-python 2.13), uncompressed, chunks of 1024
#              rows, read by ferry's default reader (native)
# in the same run, interleaved, 3 times each, 2 epochs a run.  Reports
# bytes/s of each against .npy's and the peak RSS of the ranks (the
# maximum over ranks, from `ferry bench --json`).
#
# usage: tests/bench/zarr3.sh BUILD_DIR WORK_DIR [SIZE]   (SIZE: 1GiB)
# The v3 stores are written by tests/fixtures/zarr3_writer.py.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-1GiB}
here=$(cd "$(dirname "$0")" && pwd)
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/results.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"

data="$work/data"
if ! test -f "$data/samples.npy"; then
  rm -rf "$data"
  "$ferry" gen "$data" --size "$size" --var samples:float32:256
fi
$py - "$data/samples.npy" "$work" "$here/../fixtures" <<'EOF'
import os, sys
import numpy as np
npy, work, fx = sys.argv[1:4]
sys.path.insert(0, fx)
from zarr3_writer import codec, write_array
a = np.load(npy, mmap_mode="r")
inner = 1024
for name, shard_rows in (("v3-64m.zarr", 65536), ("v3-1g.zarr", 1048576)):
    p = os.path.join(work, name)
    if os.path.exists(os.path.join(p, "zarr.json")):
        continue
    # one shard at a time: the writer holds one shard in memory
    write_array(p, a, (shard_rows,) + a.shape[1:],
                [codec("sharding_indexed", chunk_shape=[inner] + list(a.shape[1:]),
                       codecs=[codec("bytes", endian="little")],
                       index_codecs=[codec("bytes", endian="little"),
                                     codec("crc32c")],
                       index_location="end")], write_empty=True)
p = os.path.join(work, "v2.zarr")
if not os.path.exists(os.path.join(p, ".zarray")):
    import zarr
    z = zarr.open_array(p, mode="w", shape=a.shape, chunks=(inner,) + a.shape[1:],
                        dtype=a.dtype, compressor=None)
    step = 65536
    for i in range(0, a.shape[0], step):
        z[i:i + step] = a[i:i + step]
EOF

# The page cache is warmed for each copy of the data just before its run:
# the four copies (4 GiB at the default size) need not fit in the cache
# together (this VM keeps about 4 GiB, shared with other sessions).
run_ferry() { # label dataset
  label=$1 ds=$2
  if test -d "$ds"; then
    find "$ds" -type f -exec cat {} + > /dev/null
  else
    cat "$ds" > /dev/null
  fi
  j=$($mpirun -np 2 "$ferry" bench "$ds" --epochs 2 --batch-size 1024 \
      --shuffle chunks --shuffle-buffer 4 --seed 1 --json | tail -1)
  echo "{\"kind\":\"$label\",\"ferry\":$j}" >> "$out"
  echo "$label: $(echo "$j" | $py -c 'import json,sys; j=json.load(sys.stdin); print("%.2f GB/s, peak RSS %.0f MiB" % (j["bytes_per_s"]/1e9, j["peak_rss_bytes"]/2**20))')"
}

for i in 1 2 3; do
  run_ferry npy "$data/samples.npy"
  run_ferry v3-64m "$work/v3-64m.zarr"
  run_ferry v3-1g "$work/v3-1g.zarr"
  run_ferry v2 "$work/v2.zarr"
done

$py - "$out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
best, rss = {}, {}
for r in rows:
    k = r["kind"]
    best[k] = max(best.get(k, 0), r["ferry"]["bytes_per_s"])
    rss[k] = max(rss.get(k, 0), r["ferry"]["peak_rss_bytes"])
print("%-8s %10s %8s %14s" % ("data", "GB/s", "x npy", "peak RSS MiB"))
for k in ("npy", "v3-64m", "v3-1g", "v2"):
    print("%-8s %10.2f %8.2f %14.0f" % (k, best[k] / 1e9, best[k] / best["npy"],
                                         rss[k] / 2**20))
EOF
