#!/bin/sh
# retinanet.sh - MLPerf Storage's RetinaNet training workload, scaled to
# this machine (docs/performance.md, "MLPerf Storage RetinaNet", issue 28).
#
# usage: tests/bench/retinanet.sh BUILD_DIR WORK_DIR [FILES [RANKS...]]
#
# The workload (MLPerf Storage 2026): 1,170,301 JPEG files of about
# 315 KiB (OpenImages), batch 24 per accelerator, 47.55 ms of compute per
# step, pass mark AU >= 0.85 (compute time over wall time).  Scaled here:
# FILES (default 2,400) JPEGs of about 315 KiB (1024 x 768, photo-like:
# gradients, disks and noise, Pillow quality 90, 4:2:0) in an image folder
# of 8 class directories, written once into WORK_DIR/retina/train; the
# page cache warm (this machine has no parallel file system: the storage
# side of AU is the page cache, so what is measured is ferry's own cost).
# For each R of RANKS (default 1 2), `ferry bench` with batch 24,
# --compute-ms 47.55 (a sleep, as DLIO's emulated accelerator) and
# 2 epochs:
#   raw     vars=image,label: the JPEG bytes (what DLIO's reader hands
#           its emulated accelerator: MLPerf Storage does not decode);
#   decode  + decode=image, resize=shorter:800, crop=center,
#           image_size=800 (RetinaNet's 800-pixel side, fixed shape),
#           threads=2 per rank.
# Prints AU, images/s and the wait fraction per run; JSON lines in
# WORK_DIR/retina-results.jsonl.
set -eu
build=$(cd "$1" && pwd)
work=$2
files=${3:-2400}
shift 3 2>/dev/null || shift $#
ranks=${*:-1 2}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/retina-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
$py - "$work/retina/train" "$files" <<'PY'
import os, sys
import numpy as np
from PIL import Image
root, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:768, 0:1024].astype(np.float32)
done = 0
for i in range(n):
    d = os.path.join(root, "c%d" % (i % 8))
    p = os.path.join(d, "img%07d.jpg" % i)
    if os.path.exists(p):
        continue
    os.makedirs(d, exist_ok=True)
    a = np.empty((768, 1024, 3), np.float32)
    for c in range(3):
        fx, fy = rng.uniform(0.002, 0.02, 2)
        a[..., c] = 128 + 90 * np.sin(xx * fx + yy * fy + rng.uniform(0, 6))
    for _ in range(12):
        cx, cy, r = rng.uniform(0, 1024), rng.uniform(0, 768), rng.uniform(20, 200)
        m = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        a[m] = rng.uniform(0, 255, 3)
    a += rng.normal(0, 14, a.shape)
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(
        p + ".tmp.jpg", quality=90)
    os.rename(p + ".tmp.jpg", p)
PY
bytes=$(cat "$work"/retina/train/*/*.jpg | wc -c)
nf=$(ls "$work"/retina/train/*/*.jpg | wc -l)
echo "retinanet: $nf JPEGs, $((bytes / nf / 1024)) KiB on average"
for r in $ranks; do
  for how in raw decode; do
    extra=
    test $how = decode && extra="--decode image --resize shorter:800 --crop center --image-size 800 --threads 2"
    # shellcheck disable=SC2086
    mpirun --oversubscribe -n "$r" "$ferry" bench "$work/retina/train" \
      --vars image,label --batch-size 24 --compute-ms 47.55 --epochs 2 \
      --seed 1 $extra --json |
      $py -c "
import json, sys
d = json.load(sys.stdin)
d.update({'what': '$how', 'ranks': $r})
print(json.dumps(d))" >>"$out"
  done
done
$py - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("  ranks  what     AU     images/s  wait_frac")
for d in rows:
    print("  %5d  %-6s %6.3f %10.1f  %8.3f" % (
        d["ranks"], d["what"], d.get("au", 0), d.get("samples_per_s", 0),
        d.get("wait_fraction", d.get("wait_frac", 0))))
PY
