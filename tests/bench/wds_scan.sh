#!/bin/sh
# wds_scan.sh - the index benchmark of docs/performance.md ("WebDataset
# shards", issue 28: 1,000 shards x 1,000 samples scanned in < 2 s on 4
# ranks; the fast path in < 0.2 s).
#
# usage: tests/bench/wds_scan.sh BUILD_DIR WORK_DIR [SHARDS [RANKS...]]
#
# Writes (once) WORK_DIR/scan: SHARDS (default 1000) shards of 1,000
# samples, KEY.cls, KEY.jpg (1 KiB) and KEY.json, written with Python's
# tarfile as WebDataset's TarWriter writes them (3,000 members, 3.6 MB a
# shard).  Then, page cache warm, 3 times each, in the same run:
#   start      `mpirun -n R ferry --version`: the tool and MPI starting;
#   rank0      `mpirun -n R ferry info --scan rank0`: rank 0 reads every
#              shard's headers (the scan before parallel describe);
#   ranks      `mpirun -n R ferry info` (scan=ranks): each rank its share;
#   manifest   `mpirun -n R ferry info --manifest m.json` (saved once with
#              --save-manifest): no scan, rank 0 loads the JSON and the
#              mapped offsets, every rank receives them;
# for each R of RANKS (default 1 2 4).  The scan's own time is a line's
# seconds minus start's.  Results in WORK_DIR/scan-results.jsonl, a table
# on stdout.
set -eu
build=$(cd "$1" && pwd)
work=$2
nshards=${3:-1000}
shift 3 2>/dev/null || shift $#
ranks=${*:-1 2 4}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work/scan"
work=$(cd "$work" && pwd)
out="$work/scan-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
$py - "$work/scan" "$nshards" <<'PY'
import io, os, sys, tarfile
d, n = sys.argv[1], int(sys.argv[2])
body = bytes(range(256)) * 4
for s in range(n):
    path = os.path.join(d, "shard-%06d.tar" % s)
    if os.path.exists(path):
        continue
    with tarfile.open(path + ".tmp", "w") as tf:
        for i in range(1000):
            key = "%08d" % i
            for ext, data in (("cls", b"%d" % (i % 1000)), ("jpg", body),
                              ("json", b'{"key": "%s"}' % key.encode())):
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size, ti.mode = len(data), 0o444
                ti.uname = ti.gname = "bigdata"
                tf.addfile(ti, io.BytesIO(data))
    os.rename(path + ".tmp", path)
PY
rm -f "$work"/scan/*.idx
cat "$work"/scan/*.tar >/dev/null
"$ferry" info "$work/scan" --save-manifest "$work/scan.json" >/dev/null
now() { $py -c 'import time; print(time.time())'; }
timed() { # WHAT R COMMAND...: one line of out
  what=$1 r=$2
  shift 2
  t0=$(now)
  mpirun --oversubscribe -n "$r" "$@" >/dev/null
  t1=$(now)
  $py -c "import json; print(json.dumps({'what': '$what', 'ranks': $r, 'seconds': $t1 - $t0}))" >>"$out"
}
for run in 1 2 3; do
  for r in $ranks; do
    timed start "$r" "$ferry" --version
    timed rank0 "$r" "$ferry" info "$work/scan" --scan rank0
    timed ranks "$r" "$ferry" info "$work/scan"
    timed manifest "$r" "$ferry" info "$work/scan" --manifest "$work/scan.json"
  done
done
$py - "$out" "$nshards" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rs = sorted({r["ranks"] for r in rows})
med = lambda w, r: statistics.median(x["seconds"] for x in rows
                                     if x["what"] == w and x["ranks"] == r)
print("index, %s shards x 1000 samples (3000 members each), medians of 3:"
      % sys.argv[2])
print("  ranks   start   rank0 (scan)    ranks (scan)    manifest (load)")
for r in rs:
    s = med("start", r)
    print("  %5d %6.2f s %6.2f s (%5.2f) %6.2f s (%5.2f) %6.2f s (%5.2f)"
          % (r, s, med("rank0", r), med("rank0", r) - s, med("ranks", r),
             med("ranks", r) - s, med("manifest", r), med("manifest", r) - s))
PY
