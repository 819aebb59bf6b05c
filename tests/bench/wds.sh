#!/bin/sh
# wds.sh - the WebDataset shards benchmark of docs/performance.md
# ("WebDataset shards", issue 28).
#
# usage: tests/bench/wds.sh BUILD_DIR WORK_DIR [BIG_SHARDS [SCAN_SHARDS]]
#
# Writes (once), with Python's tarfile as WebDataset's TarWriter does:
#   WORK_DIR/big: BIG_SHARDS (default 8) shards of 500 samples, KEY.cls,
#     KEY.jpg (random bytes of 60 to 160 KiB: ImageNet-like sizes) and
#     KEY.json, about 55 MB a shard;
#   WORK_DIR/scan: SCAN_SHARDS (default 200) shards of 1,000 samples of
#     small members (KEY.cls, KEY.jpg of 1 KiB, KEY.json): 3,000 members a
#     shard.
# Then, in the same run:
#   raw bytes  the big shards read into the page cache, then alternated 5
#              times: `dd bs=1M` of every shard to /dev/null, 5 passes
#              (bytes/s of the files), and `ferry bench` on 1 rank, 5
#              epochs, with vars=jpg and vars=jpg,cls,json (bytes handed
#              out per second, no decode, shuffle=chunks, batch 64): the
#              ratio of the medians against dd (target >= 0.8); and
#              ferry bench of WORK_DIR/same.npy, the same bytes as dense
#              rows of 112 KiB (the flat .npy path, for scale)
#   index      `ferry info` of the scan shards (rank 0's header scan of
#              every shard: the open), 3 times, without sidecars and with
#              them (after `ferry index`), and Python's tarfile listing the
#              same shards (getmembers) for scale.
# Results go to WORK_DIR/wds-results.jsonl and a table on stdout.
set -eu
build=$(cd "$1" && pwd)
work=$2
big=${3:-8}
nscan=${4:-200}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/wds-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
$py - "$work" "$big" "$nscan" <<'PY'
import io, os, sys, tarfile
import numpy as np
work, big, nscan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1)
def shard(path, n, jpg_size):
    if os.path.exists(path):
        return
    with tarfile.open(path + ".tmp", "w") as tf:
        for i in range(n):
            key = "%08d" % i
            for ext, data in (("cls", b"%d" % (i % 1000)),
                              ("jpg", rng.bytes(jpg_size())),
                              ("json", b'{"key": "%s"}' % key.encode())):
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size, ti.mode, ti.uname, ti.gname = len(data), 0o444, "bigdata", "bigdata"
                tf.addfile(ti, io.BytesIO(data))
    os.rename(path + ".tmp", path)
for d in ("big", "scan"):
    os.makedirs(os.path.join(work, d), exist_ok=True)
for s in range(big):
    shard(os.path.join(work, "big", "shard-%06d.tar" % s), 500,
          lambda: int(rng.integers(60 << 10, 160 << 10)))
for s in range(nscan):
    shard(os.path.join(work, "scan", "shard-%06d.tar" % s), 1000, lambda: 1024)
PY
bigbytes=$(cat "$work"/big/*.tar | wc -c)
# the same bytes as a .npy of dense rows (the flat path, for scale)
test -f "$work/same.npy" || $py -c "
import numpy as np
n = $bigbytes // (112 << 10)
a = np.lib.format.open_memmap('$work/same.npy', mode='w+', dtype=np.uint8, shape=(n, 112 << 10))
a[:] = 7
a.flush()"
cat "$work/same.npy" >/dev/null
now() { $py -c 'import time; print(time.time())'; }
for run in 1 2 3 4 5; do
  t0=$(now)
  for e in 1 2 3 4 5; do
    for f in "$work"/big/*.tar; do dd if="$f" of=/dev/null bs=1M 2>/dev/null; done
  done
  t1=$(now)
  $py -c "import json; print(json.dumps({'what': 'dd', 'run': $run, 'bytes_per_s': 5 * $bigbytes / ($t1 - $t0)}))" >>"$out"
  for vars in jpg jpg,cls,json npy; do
    ds="$work/big --vars $vars"
    test $vars = npy && ds="$work/same.npy"
    "$ferry" bench $ds --batch-size 64 --io independent --epochs 5 --json |
      $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': 'ferry-$vars', 'run': $run, 'bytes_per_s': d['bytes_per_s'], 'samples_per_s': d['samples_per_s']}))" >>"$out"
  done
done
rm -f "$work"/scan/*.idx
for mode in none sidecar; do
  if test $mode = sidecar; then
    "$ferry" index "$work/scan" >/dev/null
  fi
  for run in 1 2 3; do
    t0=$(now)
    "$ferry" info "$work/scan" >/dev/null
    t1=$(now)
    $py -c "import json; print(json.dumps({'what': 'scan-$mode', 'run': $run, 'seconds': $t1 - $t0}))" >>"$out"
  done
done
t0=$(now)
"$ferry" --version >/dev/null
t1=$(now)
$py -c "import json; print(json.dumps({'what': 'ferry-start', 'run': 1, 'seconds': $t1 - $t0}))" >>"$out"
$py - "$work/scan" >>"$out" <<'PY'
import glob, json, sys, tarfile, time
t = time.time()
n = 0
for p in sorted(glob.glob(sys.argv[1] + "/*.tar")):
    with tarfile.open(p) as tf:
        n += len(tf.getmembers())
print(json.dumps({"what": "tarfile-scan", "run": 1, "seconds": time.time() - t, "members": n}))
PY
$py - "$out" "$bigbytes" "$big" "$nscan" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k, f: statistics.median(r[f] for r in rows if r["what"] == k)
dd = med("dd", "bytes_per_s")
print("raw bytes, %s shards, %.0f MB, page cache:" % (sys.argv[3], int(sys.argv[2]) / 1e6))
print("  dd bs=1M             %8.0f MB/s" % (dd / 1e6))
for v in ("jpg", "jpg,cls,json", "npy"):
    b = med("ferry-" + v, "bytes_per_s")
    print("  ferry bench vars=%-12s %8.0f MB/s  %7.0f samples/s  %.2fx dd"
          % (v, b / 1e6, med("ferry-" + v, "samples_per_s"), b / dd))
print("index scan, %s shards x 1000 samples (3000 members each):" % sys.argv[4])
for k in ("scan-none", "scan-sidecar", "ferry-start", "tarfile-scan"):
    print("  %-14s %6.2f s" % (k, med(k, "seconds")))
PY
