#!/bin/sh
# mds.sh BUILD_DIR WORK_DIR [SHARDS [ROUNDS]] - raw reads of MDS shards
# against dd of the same files (docs/performance.md, "MDS shards").
#
# Writes SHARDS (default 6) MDS shards of 500 samples with
# tests/mds/make_mds.py's writer: a `jpeg` column of random bytes of
# 60-160 KiB (stored as they are, as MDSWriter stores bytes) and an `int`
# label, then, in each of ROUNDS rounds (default 5), `dd bs=1M` of every
# shard 5 times and `ferry bench` on 1 rank (5 epochs, batch 64,
# io=independent) with vars=img and vars=img,label; prints the medians and
# their ratio to dd's.  Also the time of `ferry info` (rank 0 reads every
# sample's column sizes).
set -e
build=$1 work=$2 nshards=${3:-6} rounds=${4:-5}
ferry=$build/ferry
py=/usr/bin/python3
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
out=$work/results.jsonl
: >"$out"
test -f "$work/mds/index.json" || $py - "$top/tests/mds" "$work/mds" "$nshards" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_mds
rng = np.random.default_rng(1)
n = 500 * int(sys.argv[3])
rows = ({"img": rng.integers(0, 256, int(rng.integers(60 << 10, 160 << 10)),
                             dtype=np.uint8).tobytes(), "label": i}
        for i in range(n))
make_mds.write(sys.argv[2], {"img": "jpeg", "label": "int"}, rows, 1 << 26)
PY
bytes=$(cat "$work"/mds/*.mds | wc -c)
now() { $py -c 'import time; print(time.time())'; }
for run in $(seq "$rounds"); do
  t0=$(now)
  for e in 1 2 3 4 5; do
    for f in "$work"/mds/*.mds; do dd if="$f" of=/dev/null bs=1M 2>/dev/null; done
  done
  t1=$(now)
  $py -c "import json; print(json.dumps({'what': 'dd', 'bytes_per_s': 5 * $bytes / ($t1 - $t0)}))" >>"$out"
  for vars in img img,label; do
    "$ferry" bench "$work/mds" --vars $vars --batch-size 64 --io independent --epochs 5 --json |
      $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': 'ferry-$vars', 'bytes_per_s': d['bytes_per_s'], 'samples_per_s': d['samples_per_s']}))" >>"$out"
  done
  t0=$(now)
  "$ferry" info "$work/mds" >/dev/null
  t1=$(now)
  $py -c "import json; print(json.dumps({'what': 'info', 'seconds': $t1 - $t0}))" >>"$out"
done
$py - "$out" "$bytes" "$nshards" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k, f: statistics.median(r[f] for r in rows if r["what"] == k)
dd = med("dd", "bytes_per_s")
print("MDS raw shards, %s shards, %.0f MB, page cache:" % (sys.argv[3], int(sys.argv[2]) / 1e6))
print("  dd bs=1M                 %8.0f MB/s" % (dd / 1e6))
for v in ("img", "img,label"):
    b = med("ferry-" + v, "bytes_per_s")
    print("  ferry bench vars=%-9s %8.0f MB/s  %7.0f samples/s  %.2fx dd"
          % (v, b / 1e6, med("ferry-" + v, "samples_per_s"), b / dd))
print("  ferry info               %8.2f s" % med("info", "seconds"))
PY
