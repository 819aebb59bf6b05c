#!/bin/sh
# classic.sh - the netCDF classic benchmark of docs/performance.md (issue 14).
#
# usage: tests/bench/classic.sh BUILD_DIR WORK_DIR [SIZE]
#
# Uses (or writes) the .npy benchmark's dataset, WORK_DIR/data (SIZE,
# default 2GiB, of 1 KiB float32 rows), copies it with python3-netcdf4 into
# WORK_DIR/nc/fixed.nc (CDF-5, samples(n, 256) a fixed-size variable: rows
# contiguous) and WORK_DIR/nc/record.nc (CDF-5, samples(t, 256) and
# labels(t) int32 record variables along the unlimited t: records of 1028
# bytes, each variable's rows strided by the record), checks both with
# ferry verify (every element served), warms the page cache,
# then measures in the same run, interleaved, RUNS (default 3) runs each
# (ferry bench, 2 ranks, shuffle=chunks, shuffle_buffer=4, batch 1024, 2
# epochs), io=independent:
#   npy           the .npy file
#   fixed         fixed.nc (bytes/s against npy: the target is >= 0.8x)
#   record        record.nc, both record variables (the span buffer reads
#                 each record once for both)
#   record_one    record.nc, vars=samples only (the labels are read and
#                 dropped: 1028 bytes read per 1024 served)
# and npy, fixed and record (both variables) again with io=collective.
# Results go to WORK_DIR/nc-results.jsonl and a table on stdout.  Every line is a ratio of runs made together; the
# machine this ran on is shared and noisy.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-2GiB}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work/nc"
work=$(cd "$work" && pwd)
out="$work/nc-results.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"

if ! test -f "$work/data/samples.npy"; then
  rm -rf "$work/data"
  "$ferry" gen "$work/data" --size "$size" --var samples:float32:256
fi
npy="$work/data/samples.npy"
fixed="$work/nc/fixed.nc"
record="$work/nc/record.nc"
if ! test -f "$fixed" || ! test -f "$record"; then
  echo "== writing $fixed and $record with netCDF4"
  $py - "$npy" "$fixed" "$record" <<'PY'
import sys
import netCDF4
import numpy as np
a = np.load(sys.argv[1], mmap_mode="r")
step = 1 << 16
with netCDF4.Dataset(sys.argv[2] + ".tmp", "w",
                     format="NETCDF3_64BIT_DATA") as ds:
    ds.set_fill_off()
    ds.createDimension("n", a.shape[0])
    ds.createDimension("k", a.shape[1])
    v = ds.createVariable("samples", "f4", ("n", "k"))
    for i in range(0, a.shape[0], step):
        v[i:i + step] = a[i:i + step]
with netCDF4.Dataset(sys.argv[3] + ".tmp", "w",
                     format="NETCDF3_64BIT_DATA") as ds:
    ds.set_fill_off()
    ds.createDimension("t", None)
    ds.createDimension("k", a.shape[1])
    v = ds.createVariable("samples", "f4", ("t", "k"))
    lab = ds.createVariable("labels", "i4", ("t",))
    for i in range(0, a.shape[0], step):
        n = min(step, a.shape[0] - i)
        v[i:i + n] = a[i:i + n]
        lab[i:i + n] = np.arange(i, i + n, dtype=np.int32)
PY
  mv "$fixed.tmp" "$fixed"
  mv "$record.tmp" "$record"
fi
# The copies hold ferry gen's values: ferry verify checks every element
# served (with large chunks, record variables go through the span buffer
# in pieces, or row by row with io=collective).
cp "$work/data/FERRY_GEN" "$work/nc/FERRY_GEN"
for io in independent collective; do
  $mpirun -np 2 "$ferry" verify "$record" --vars samples --io "$io" \
    --chunk-samples 65536 --batch-size 1024 --epochs 1 --tail partial |
    grep -E '^(PASS content|ferry verify)'
done
$mpirun -np 2 "$ferry" verify "$fixed" --batch-size 1024 --epochs 1 \
  --tail partial | grep -E '^(PASS content|ferry verify)'
cat "$npy" "$fixed" "$record" > /dev/null   # page cache warm
"$ferry" info "$record" | grep -E '^(storage|notes)'

bench() { # label dataset extra-options...
  label=$1 ds=$2
  shift 2
  j=$($mpirun -np 2 "$ferry" bench "$ds" --epochs 2 --batch-size 1024 \
      --shuffle chunks --shuffle-buffer 4 --seed 1 --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"ferry\":$j}" >> "$out"
  echo "$label: $(echo "$j" | $py -c 'import json,sys; j=json.load(sys.stdin); print("%.2f GB/s, %.0f samples/s" % (j["bytes_per_s"]/1e9, j["samples_per_s"]))')"
}

runs=${RUNS:-3}
echo "== npy against netCDF classic (interleaved, $runs runs each)"
i=0
while test "$i" -lt "$runs"; do
  i=$((i + 1))
  bench npy "$work/data" --io independent
  bench fixed "$fixed" --io independent
  bench record "$record" --io independent
  bench record_one "$record" --io independent --vars samples
  bench npy_coll "$work/data" --io collective
  bench fixed_coll "$fixed" --io collective
  bench record_coll "$record" --io collective
done

$py - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def runs(kind):
    return [r["ferry"] for r in rows if r["kind"] == kind]
n = runs("npy")
nc = runs("npy_coll")
print()
print("| measure | %s |" % " | ".join("run %d" % (i + 1) for i in range(len(n))))
print("|---|%s" % ("---|" * len(n)))
print("| `.npy`, io=independent | %s |" % " | ".join("%.2f GB/s" % (f["bytes_per_s"] / 1e9) for f in n))
print("| `.npy`, io=collective | %s |" % " | ".join("%.2f GB/s" % (f["bytes_per_s"] / 1e9) for f in nc))
for k, base, what in (("fixed", n, "fixed-size variable"),
                      ("record", n, "record variables (samples + labels)"),
                      ("record_one", n, "record variable samples alone"),
                      ("fixed_coll", nc, "fixed-size variable, io=collective"),
                      ("record_coll", nc, "record variables, io=collective")):
    print("| netCDF %s / `.npy` | %s |" % (what, " | ".join(
        "%.2f" % (b["bytes_per_s"] / a["bytes_per_s"])
        for a, b in zip(base, runs(k)))))
PY
