#!/bin/sh
# zarr.sh - the Zarr benchmark of docs/performance.md (issue 4).
#
# usage: tests/bench/zarr.sh BUILD_DIR WORK_DIR [SIZE [RUNS]]
#
# Three kinds of rows, all float32 rows of 256 values (1 KiB) like the
# .npy benchmark's, SIZE bytes each (default 512MiB), copied by zarr-python
# into stores of 1024-row (1 MiB) chunks:
#   synthetic  the rows of the .npy benchmark (`ferry gen`), 44:1 under
#              Blosc: stores uncompressed, Blosc, and one per codec
#   normal     np.random.default_rng(0).standard_normal, float32: about the
#              worst case for a compressor (1.07:1 under Blosc), like
#              trained weights or noisy measurements; one store per codec
#   pixels     integers 0..255 drawn uniformly, stored as float32, as image
#              data often is before normalisation: the low mantissa bytes
#              are zero, 2.6:1 under Blosc; a Blosc store
# Blosc is zarr-python's default compressor (lz4, level 5, byte shuffle).
# With the page cache warm it measures, RUNS times (default 3) and in the
# same run under the same load:
#   npy          mpirun -np 2 ferry bench DATA.npy (shuffle=chunks, buffer 4)
#   zarr-none    the same on the uncompressed synthetic store, both readers
#   DATA-blosc   the same on each Blosc store, both readers (2 ranks), the
#                synthetic one also on 1 rank
#   zarr-python  one process reading each Blosc store chunk by chunk
#                (a[i*1024:(i+1)*1024]), best of 3 passes: the per-rank
#                baseline
# then, per codec, RUNS times:
#   normal-CODEC ferry on 1 rank with each reader (decoded bytes/s), ferry
#                native on 2 ranks (per-rank samples/s), zarr-python
#   codec-CODEC  ferry on 1 rank with each reader on the synthetic stores
# Results: WORK_DIR/zarr-results.jsonl, and tables (medians and every run)
# on stdout.  Per-rank samples/s is the job's samples/s over the ranks (the
# slowest rank's time).
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-512MiB}
runs=${4:-3}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/zarr-results.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
FERRY_PLUGIN_DIR=${FERRY_PLUGIN_DIR:-$build/src/plugins/.libs}
export FERRY_PLUGIN_DIR
mpirun="mpirun --oversubscribe --bind-to none -x FERRY_PLUGIN_DIR -x FERRY_ZARR_READER"
codecs="none blosc blosc-zstd zlib gzip zstd lz4"

if ! test -f "$work/npy/samples.npy"; then
  rm -rf "$work/npy"
  "$ferry" gen "$work/npy" --size "$size" --var samples:float32:256 >/dev/null
fi
$py - "$work" <<'EOF'
import os, sys
import numpy as np, zarr
from numcodecs import Blosc, Zlib, GZip, Zstd, LZ4
work = sys.argv[1]
a = np.load(os.path.join(work, "npy", "samples.npy"), mmap_mode="r")
nrows, width = a.shape
codecs = {"none": None, "blosc": Blosc(), "blosc-zstd": Blosc(cname="zstd", clevel=3),
          "zlib": Zlib(level=1), "gzip": GZip(level=1), "zstd": Zstd(level=1),
          "lz4": LZ4()}

def rows(kind):
    """The rows of kind, in blocks of 65536; the same on every call."""
    rng = np.random.default_rng(0)
    for i in range(0, nrows, 65536):
        n = min(65536, nrows - i)
        if kind == "zarr":
            yield i, a[i:i + n]
        elif kind == "normal":
            yield i, rng.standard_normal((n, width), dtype=np.float32)
        else:
            yield i, rng.integers(0, 256, (n, width), dtype=np.uint8).astype(np.float32)

def store(kind, name, comp):
    path = os.path.join(work, "%s-%s" % (kind, name))
    if os.path.exists(os.path.join(path, "samples", ".zarray")):
        return
    g = zarr.open_group(path, mode="w")
    z = g.create_dataset("samples", shape=a.shape, dtype=np.float32,
                         chunks=(1024, width), compressor=comp)
    for i, block in rows(kind):
        z[i:i + len(block)] = block

for name, comp in codecs.items():
    store("zarr", name, comp)       # the synthetic rows
    store("normal", name, comp)
store("pixels", "blosc", Blosc())
EOF
for d in "$work"/npy "$work"/zarr-* "$work"/normal-* "$work"/pixels-*; do
  cat "$d"/samples* "$d"/samples/* > /dev/null 2>&1 || true
done

run() { # kind data ranks reader dataset extra...
  label=$1 data=$2 np=$3 reader=$4 ds=$5; shift 5
  j=$(FERRY_ZARR_READER=$reader $mpirun -np "$np" "$ferry" bench "$ds" --epochs 2 \
      --batch-size 1024 --shuffle chunks --shuffle-buffer 4 --seed 1 \
      --chunk-samples 1024 --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"data\":\"$data\",\"run\":$i,\"ranks\":$np,\"reader\":\"$reader\",\"ferry\":$j}" >> "$out"
  echo "$label $data np=$np reader=$reader: $(echo "$j" | $py -c 'import json,sys; j=json.load(sys.stdin); print("%.0f samples/s per rank, %.2f GB/s" % (j["samples_per_s"]/j["ranks"], j["bytes_per_s"]/1e9))')"
}
zp() { # kind data store: zarr-python, one process, chunk by chunk
  j=$($py - "$3" <<'EOF'
import sys, time, zarr
z = zarr.open_group(sys.argv[1], mode="r")["samples"]
c = z.chunks[0]
best = 0
for rep in range(3):
    t = time.perf_counter(); n = 0
    for i in range(0, z.shape[0], c):
        n += z[i:i + c].shape[0]
    best = max(best, n / (time.perf_counter() - t))
print('{"samples_per_s":%.1f,"bytes_per_s":%.1f}' % (best, best * z.dtype.itemsize * z.shape[1]))
EOF
)
  echo "{\"kind\":\"$1\",\"data\":\"$2\",\"run\":$i,\"zarr_python\":$j}" >> "$out"
  echo "$1 $2 zarr-python 1 process: $j"
}

echo "== load: $(cat /proc/loadavg)"
i=1
while test "$i" -le "$runs"; do
  echo "== run $i"
  run npy synthetic 2 auto "$work/npy/samples.npy"
  run zarr-none synthetic 2 auto "$work/zarr-none"
  run zarr-none synthetic 2 native "$work/zarr-none"
  for data in synthetic normal pixels; do
    s=$work/$(test $data = synthetic && echo zarr || echo $data)-blosc
    run blosc $data 2 auto "$s"
    run blosc $data 2 native "$s"
    test $data != synthetic || run blosc $data 1 auto "$s"
    zp blosc $data "$s"
  done
  i=$((i + 1))
done
echo "== codecs, load: $(cat /proc/loadavg)"
i=1
while test "$i" -le "$runs"; do
  echo "== run $i"
  for c in $codecs; do
    run "codec-$c" normal 1 auto "$work/normal-$c"
    run "codec-$c" normal 1 native "$work/normal-$c"
    run "codec-$c" normal 2 native "$work/normal-$c"
    zp "codec-$c" normal "$work/normal-$c"
    run "codec-$c" synthetic 1 auto "$work/zarr-$c"
    run "codec-$c" synthetic 1 native "$work/zarr-$c"
  done
  i=$((i + 1))
done
echo "== load: $(cat /proc/loadavg)"
du -sh "$work"/npy "$work"/zarr-* "$work"/normal-* "$work"/pixels-* | sed 's/^/size: /'

# Tables: every run, and per codec the median of the runs.
$py - "$out" <<'EOF'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
def get(kind, data, ranks=None, reader=None, zp=False, run=None):
    v = []
    for r in rs:
        if r["kind"] != kind or r["data"] != data or (run and r["run"] != run):
            continue
        if zp:
            if "zarr_python" in r: v.append(r["zarr_python"])
        elif "ferry" in r and r["ranks"] == ranks and r["reader"] == reader:
            v.append(r["ferry"])
    return v
def sps(j): return j["samples_per_s"] / j.get("ranks", 1)
def gbs(j): return j["bytes_per_s"] / 1e9
runs = sorted({r["run"] for r in rs})
print("\n| run | .npy GB/s | none netCDF GB/s (% npy) | none native GB/s (% npy) |")
for n in [x for x in runs if get("npy", "synthetic", 2, "auto", run=x)]:
    npy = gbs(get("npy", "synthetic", 2, "auto", run=n)[0])
    a = gbs(get("zarr-none", "synthetic", 2, "auto", run=n)[0])
    b = gbs(get("zarr-none", "synthetic", 2, "native", run=n)[0])
    print("| %d | %.2f | %.2f (%.0f%%) | %.2f (%.0f%%) |" % (n, npy, a, 100*a/npy, b, 100*b/npy))
for data in ("synthetic", "normal", "pixels"):
    print("\n%s, Blosc: per-rank samples/s (ratio to zarr-python)" % data)
    print("| run | 2 ranks netCDF | 2 ranks native | zarr-python 1 process |")
    for n in runs:
        z = get("blosc", data, zp=True, run=n)
        if not z: continue
        z = sps(z[0])
        a = sps(get("blosc", data, 2, "auto", run=n)[0])
        b = sps(get("blosc", data, 2, "native", run=n)[0])
        print("| %d | %.0f k (%.2f×) | %.0f k (%.2f×) | %.0f k |" % (n, a/1e3, a/z, b/1e3, b/z, z/1e3))
print("\nper codec, normal rows, medians of %d runs" % len(runs))
print("| codec | netCDF 1 rank GB/s | native 1 rank GB/s | zarr-python GB/s | native 2 ranks, per rank | zarr-python samples/s | ratio |")
for c in "none blosc blosc-zstd zlib gzip zstd lz4".split():
    k = "codec-" + c
    m = lambda v, f: statistics.median(f(x) for x in v) if v else float("nan")
    a = m(get(k, "normal", 1, "auto"), gbs); b = m(get(k, "normal", 1, "native"), gbs)
    zg = m(get(k, "normal", zp=True), gbs); zs = m(get(k, "normal", zp=True), sps)
    n2 = m(get(k, "normal", 2, "native"), sps)
    print("| %s | %.2f | %.2f | %.2f | %.0f k | %.0f k | %.2f× |" % (c, a, b, zg, n2/1e3, zs/1e3, n2/zs))
print("\nper codec, synthetic rows, medians")
print("| codec | netCDF 1 rank GB/s | native 1 rank GB/s |")
for c in "none blosc blosc-zstd zlib gzip zstd lz4".split():
    k = "codec-" + c
    m = lambda v: statistics.median(gbs(x) for x in v) if v else float("nan")
    print("| %s | %.2f | %.2f |" % (c, m(get(k, "synthetic", 1, "auto")), m(get(k, "synthetic", 1, "native"))))
EOF
