#!/bin/sh
# imgfolder.sh - the image-folder benchmark of docs/performance.md ("Image
# folders", issue 28).
#
# usage: tests/bench/imgfolder.sh BUILD_DIR WORK_DIR [FILES [BIG_FILES]]
#
# Writes (once):
#   WORK_DIR/small: FILES (default 100,000) files of 1 to 4 KiB of random
#     bytes named CLASS/NNNNNNN.JPEG in 100 class directories (the listing
#     neither opens nor decodes them: their bytes do not matter);
#   WORK_DIR/big: BIG_FILES (default 4,000) files of 60 to 160 KiB
#     (ImageNet-like sizes) in 10 class directories.
# Then, in the same run:
#   listing  `ferry info WORK_DIR/small` (rank 0 lists the tree and stats
#            every file: the open) with threads=1, 2, 4, 8, 16, 3 times
#            each in turn; `ferry --version` (the tool and MPI starting,
#            subtracted); torchvision's ImageFolder(WORK_DIR/small)
#            (os.walk, no stat; timed after torchvision's import) for
#            scale, 3 times; `ferry info --manifest` of the listing saved
#            with --save-manifest (the listing skipped), 3 times;
#   reads    WORK_DIR/big read into the page cache, then alternated 5
#            times: `cat` of every file to /dev/null (xargs, 5 passes),
#            and `ferry bench` (1 rank, 5 epochs, batch 64, vars=image,
#            threads 1 and 4): the ratio of the medians against cat.
# Results go to WORK_DIR/imgfolder-results.jsonl and a table on stdout.
set -eu
build=$(cd "$1" && pwd)
work=$2
nsmall=${3:-100000}
nbig=${4:-4000}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/imgfolder-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
$py - "$work" "$nsmall" "$nbig" <<'PY'
import os, sys
import numpy as np
work, nsmall, nbig = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1)
def tree(d, n, classes, lo, hi):
    if os.path.exists(d):
        return
    os.makedirs(d + ".tmp")
    for i in range(n):
        c = os.path.join(d + ".tmp", "n%08d" % (i % classes))
        os.makedirs(c, exist_ok=True)
        with open(os.path.join(c, "%07d.JPEG" % i), "wb") as f:
            f.write(rng.bytes(int(rng.integers(lo, hi))))
    os.rename(d + ".tmp", d)
tree(os.path.join(work, "small"), nsmall, 100, 1 << 10, 4 << 10)
tree(os.path.join(work, "big"), nbig, 10, 60 << 10, 160 << 10)
PY
now() { $py -c 'import time; print(time.time())'; }
rec() { # rec WHAT RUN KEY VALUE
  echo "{\"what\": \"$1\", \"run\": $2, \"$3\": $4}" >>"$out"
}
for run in 1 2 3; do
  for t in 1 2 4 8 16; do
    t0=$(now)
    "$ferry" info "$work/small" --threads $t >/dev/null
    t1=$(now)
    rec "list-$t" $run seconds "$($py -c "print($t1 - $t0)")"
  done
  t0=$(now)
  "$ferry" --version >/dev/null
  t1=$(now)
  rec ferry-start $run seconds "$($py -c "print($t1 - $t0)")"
  $py -c "
import time
from torchvision.datasets import ImageFolder
t = time.time()
ImageFolder('$work/small')
print('{\"what\": \"imagefolder\", \"run\": $run, \"seconds\": %r}' % (time.time() - t))" >>"$out"
  test $run = 1 && "$ferry" info "$work/small" --save-manifest "$work/m.json" >/dev/null
  t0=$(now)
  "$ferry" info "$work/small" --manifest "$work/m.json" >/dev/null
  t1=$(now)
  rec manifest $run seconds "$($py -c "print($t1 - $t0)")"
done
mbytes=$(cat "$work/m.json" "$work/m.json.roff" | wc -c)
bigbytes=$(find "$work/big" -type f -print0 | xargs -0 cat | wc -c)
for run in 1 2 3 4 5; do
  t0=$(now)
  for e in 1 2 3 4 5; do
    find "$work/big" -type f -print0 | xargs -0 cat >/dev/null
  done
  t1=$(now)
  rec cat $run bytes_per_s "$($py -c "print(5 * $bigbytes / ($t1 - $t0))")"
  for t in 1 4; do
    "$ferry" bench "$work/big" --vars image --batch-size 64 --epochs 5 \
      --threads $t --json |
      $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': 'ferry-$t', 'run': $run, 'bytes_per_s': d['bytes_per_s'], 'samples_per_s': d['samples_per_s']}))" >>"$out"
  done
done
$py - "$out" "$nsmall" "$bigbytes" "$nbig" "$mbytes" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k, f: statistics.median(r[f] for r in rows if r["what"] == k)
start = med("ferry-start", "seconds")
print("listing %s files (page cache), medians of 3:" % sys.argv[2])
one = med("list-1", "seconds") - start
for t in (1, 2, 4, 8, 16):
    s = med("list-%d" % t, "seconds")
    print("  ferry info --threads %-3d %6.2f s  (%.2f s past the start, "
          "%.2fx threads=1)" % (t, s, s - start, one / (s - start)))
print("  ferry --version          %6.2f s" % start)
print("  ImageFolder(root)         %6.2f s  (its listing alone: os.walk, "
      "no stat; torchvision imported before)" % med("imagefolder", "seconds"))
print("  ferry info --manifest    %6.2f s  (the saved listing: %.1f MB with "
      "its .roff)" % (med("manifest", "seconds"), int(sys.argv[5]) / 1e6))
cat = med("cat", "bytes_per_s")
print("raw reads, %s files, %.0f MB, page cache, medians of 5:"
      % (sys.argv[4], int(sys.argv[3]) / 1e6))
print("  cat (xargs)              %8.0f MB/s" % (cat / 1e6))
for t in (1, 4):
    b = med("ferry-%d" % t, "bytes_per_s")
    print("  ferry bench --threads %d  %8.0f MB/s  %7.0f files/s  %.2fx cat"
          % (t, b / 1e6, med("ferry-%d" % t, "samples_per_s"), b / cat))
PY
