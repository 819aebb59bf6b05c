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
#              trained weights or noisy measurements: a Blosc store, and
#              one store per codec of the first quarter of the rows (the
#              page cache of the development VM holds about 4 GiB: all the
#              stores must fit in it, or the reads measure the disk)
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
#                baseline; and its codec alone (numcodecs decoding each
#                chunk file, read into memory beforehand, into one reused
#                array), an upper bound for zarr-python
# then, per codec, RUNS times:
#   normalq-CODEC ferry on 1 rank with each reader (decoded bytes/s), ferry
#                native on 2 ranks (per-rank samples/s), zarr-python
#   codec-CODEC  ferry on 1 rank with each reader on the synthetic stores
# Results: WORK_DIR/zarr-results.jsonl, and tables (medians and every run)
# on stdout.  Per-rank samples/s is the job's samples/s over the ranks (the
# slowest rank's time).  Each measurement also records the CPU seconds it
# used (ferry: user + system of mpirun and its ranks, start-up included;
# Python: the process's, Blosc's threads included): samples per CPU second
# depend much less than samples/s on the share of a loaded machine a job
# gets.
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

def rows(kind, total):
    """The first total rows of kind, in blocks of 65536; the same rows on
    every call."""
    rng = np.random.default_rng(0)
    for i in range(0, total, 65536):
        n = min(65536, total - i)
        if kind == "zarr":
            yield i, a[i:i + n]
        elif kind == "normal":
            yield i, rng.standard_normal((n, width), dtype=np.float32)
        else:
            yield i, rng.integers(0, 256, (n, width), dtype=np.uint8).astype(np.float32)

def store(kind, name, comp, total=nrows, prefix=None):
    path = os.path.join(work, "%s-%s" % (prefix or kind, name))
    if os.path.exists(os.path.join(path, "samples", ".zarray")):
        return
    g = zarr.open_group(path, mode="w")
    z = g.create_dataset("samples", shape=(total, width), dtype=np.float32,
                         chunks=(1024, width), compressor=comp)
    for i, block in rows(kind, total):
        z[i:i + len(block)] = block

for name, comp in codecs.items():
    store("zarr", name, comp)       # the synthetic rows
    store("normal", name, comp, nrows // 4, "normalq")
store("normal", "blosc", Blosc())
store("pixels", "blosc", Blosc())
EOF
warm() { # dataset: read it into the page cache
  cat "$1"/samples* "$1"/samples/* > /dev/null 2>&1 || true
}

run() { # kind data ranks reader dataset extra...
  label=$1 data=$2 np=$3 reader=$4 ds=$5; shift 5
  j=$(FERRY_ZARR_READER=$reader /usr/bin/time -f '%U %S' -o "$work/cpu.txt" \
      $mpirun -np "$np" "$ferry" bench "$ds" --epochs 2 \
      --batch-size 1024 --shuffle chunks --shuffle-buffer 4 --seed 1 \
      --chunk-samples 1024 --json "$@" | tail -1)
  cpu=$(tail -1 "$work/cpu.txt" | awk '{print $1 + $2}')
  echo "{\"kind\":\"$label\",\"data\":\"$data\",\"run\":$i,\"ranks\":$np,\"reader\":\"$reader\",\"cpu_s\":$cpu,\"ferry\":$j}" >> "$out"
  echo "$label $data np=$np reader=$reader: $(echo "$j" | $py -c 'import json,sys; j=json.load(sys.stdin); c=float(sys.argv[1]); print("%.0f samples/s per rank, %.2f GB/s, %.0f samples per CPU s" % (j["samples_per_s"]/j["ranks"], j["bytes_per_s"]/1e9, j["samples"]/c))' "$cpu")"
}
zp() { # kind data store: zarr-python, one process, chunk by chunk
  j=$($py - "$3" <<'EOF'
import os, sys, time
import numpy as np, zarr
path = sys.argv[1]
z = zarr.open_group(path, mode="r")["samples"]
c = z.chunks[0]
row = z.dtype.itemsize * z.shape[1]
def passes(one):
    """Best of 3 passes in samples/s, and samples per CPU second of all 3."""
    best, n, cpu = 0, 0, time.process_time()
    for rep in range(3):
        t = time.perf_counter()
        k = one()
        best = max(best, k / (time.perf_counter() - t))
        n += k
    return best, n / (time.process_time() - cpu)
def read():
    n = 0
    for i in range(0, z.shape[0], c):
        n += z[i:i + c].shape[0]
    return n
# zarr-python's codec alone: every chunk file, read into memory first,
# decoded into one reused array (no file reads, no allocation).
files = [open(os.path.join(path, "samples", "%d.0" % i), "rb").read()
         for i in range(z.shape[0] // c)]
out = np.empty(z.chunks, dtype=z.dtype)
def decode():
    for b in files:
        if z.compressor is None:
            out[...] = np.frombuffer(b, dtype=z.dtype).reshape(z.chunks)
        else:
            z.compressor.decode(b, out=out)
    return len(files) * c
r, rc = passes(read)
d, dc = passes(decode)
print('{"samples_per_s":%.1f,"bytes_per_s":%.1f,"samples_per_cpu_s":%.1f,'
      '"decode_samples_per_s":%.1f,"decode_bytes_per_s":%.1f,'
      '"decode_samples_per_cpu_s":%.1f}' % (r, r * row, rc, d, d * row, dc))
EOF
)
  echo "{\"kind\":\"$1\",\"data\":\"$2\",\"run\":$i,\"zarr_python\":$j}" >> "$out"
  echo "$1 $2 zarr-python 1 process: $j"
}

echo "== load: $(cat /proc/loadavg)"
i=1
while test "$i" -le "$runs"; do
  echo "== run $i"
  warm "$work/npy"
  run npy synthetic 2 auto "$work/npy/samples.npy"
  warm "$work/zarr-none"
  run zarr-none synthetic 2 auto "$work/zarr-none"
  run zarr-none synthetic 2 native "$work/zarr-none"
  for data in synthetic normal pixels; do
    s=$work/$(test $data = synthetic && echo zarr || echo $data)-blosc
    warm "$s"
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
    warm "$work/normalq-$c"
    run "codec-$c" normal 1 auto "$work/normalq-$c"
    run "codec-$c" normal 1 native "$work/normalq-$c"
    run "codec-$c" normal 2 native "$work/normalq-$c"
    zp "codec-$c" normal "$work/normalq-$c"
    warm "$work/zarr-$c"
    run "codec-$c" synthetic 1 auto "$work/zarr-$c"
    run "codec-$c" synthetic 1 native "$work/zarr-$c"
  done
  i=$((i + 1))
done
echo "== load: $(cat /proc/loadavg)"
du -sh "$work"/npy "$work"/zarr-* "$work"/normal-* "$work"/normalq-* \
  "$work"/pixels-* | sed 's/^/size: /'

# Tables: every run, and per codec the median of the runs.
$py - "$out" <<'EOF'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
nan = float("nan")
def recs(kind, data, ranks=None, reader=None, zp=False, run=None):
    v = []
    for r in rs:
        if r["kind"] != kind or r["data"] != data or (run and r["run"] != run):
            continue
        if zp:
            if "zarr_python" in r: v.append(r)
        elif "ferry" in r and r["ranks"] == ranks and r["reader"] == reader:
            v.append(r)
    return v
def sps(r): return r["ferry"]["samples_per_s"] / r["ranks"]
def gbs(r): return r["ferry"]["bytes_per_s"] / 1e9
def cps(r): return r["ferry"]["samples"] / r["cpu_s"] if r.get("cpu_s") else nan
def zp(r, key, scale=1): return r["zarr_python"].get(key, nan) / scale
def med(v, f): return statistics.median(f(x) for x in v) if v else nan
runs = sorted({r["run"] for r in rs})
print("\n| run | .npy GB/s | none netCDF GB/s (% npy) | none native GB/s (% npy) |")
for n in [x for x in runs if recs("npy", "synthetic", 2, "auto", run=x)]:
    npy = gbs(recs("npy", "synthetic", 2, "auto", run=n)[0])
    a = gbs(recs("zarr-none", "synthetic", 2, "auto", run=n)[0])
    b = gbs(recs("zarr-none", "synthetic", 2, "native", run=n)[0])
    print("| %d | %.2f | %.2f (%.0f%%) | %.2f (%.0f%%) |" % (n, npy, a, 100*a/npy, b, 100*b/npy))
for data in ("synthetic", "normal", "pixels"):
    print("\n%s, Blosc: per-rank samples/s (ratio of ferry to zarr-python)" % data)
    print("| run | netCDF, 2 ranks | native, 2 ranks | zarr-python, 1 process | numcodecs decode only | per CPU s: native | zarr-python | decode only |")
    for n in runs:
        z = recs("blosc", data, zp=True, run=n)
        if not z: continue
        z = z[0]
        a = recs("blosc", data, 2, "auto", run=n)[0]
        b = recs("blosc", data, 2, "native", run=n)[0]
        zs, zd = zp(z, "samples_per_s"), zp(z, "decode_samples_per_s")
        zc, zdc = zp(z, "samples_per_cpu_s"), zp(z, "decode_samples_per_cpu_s")
        print("| %d | %.0f k (%.2f×) | %.0f k (%.2f×) | %.0f k | %.0f k (%.2f×) | %.0f k | %.0f k (%.2f×) | %.0f k (%.2f×) |" % (
            n, sps(a)/1e3, sps(a)/zs, sps(b)/1e3, sps(b)/zs, zs/1e3, zd/1e3, sps(b)/zd,
            cps(b)/1e3, zc/1e3, cps(b)/zc, zdc/1e3, cps(b)/zdc))
print("\nper codec, normal rows (first quarter), medians of %d runs" % len(runs))
print("| codec | netCDF 1 rank GB/s | native 1 rank GB/s | zarr-python GB/s | numcodecs decode only GB/s | native 2 ranks, per rank | zarr-python | ratio | per CPU s: native 2 ranks | zarr-python | ratio |")
for c in "none blosc blosc-zstd zlib gzip zstd lz4".split():
    k = "codec-" + c
    a = med(recs(k, "normal", 1, "auto"), gbs); b = med(recs(k, "normal", 1, "native"), gbs)
    zv = recs(k, "normal", zp=True)
    zg = med(zv, lambda r: zp(r, "bytes_per_s", 1e9)); zs = med(zv, lambda r: zp(r, "samples_per_s"))
    zdg = med(zv, lambda r: zp(r, "decode_bytes_per_s", 1e9)); zc = med(zv, lambda r: zp(r, "samples_per_cpu_s"))
    n2v = recs(k, "normal", 2, "native")
    n2 = med(n2v, sps); n2c = med(n2v, cps)
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.0f k | %.0f k | %.2f× | %.0f k | %.0f k | %.2f× |" % (
        c, a, b, zg, zdg, n2/1e3, zs/1e3, n2/zs, n2c/1e3, zc/1e3, n2c/zc))
print("\nper codec, synthetic rows, medians")
print("| codec | netCDF 1 rank GB/s | native 1 rank GB/s |")
for c in "none blosc blosc-zstd zlib gzip zstd lz4".split():
    k = "codec-" + c
    print("| %s | %.2f | %.2f |" % (c, med(recs(k, "synthetic", 1, "auto"), gbs), med(recs(k, "synthetic", 1, "native"), gbs)))
EOF
