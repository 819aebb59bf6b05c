#!/bin/sh
# real.sh - WebDataset's own test shard (tests/corpus/files/webdataset/
# sample.tgz, from the webdataset repository: SOURCES.md): 90 samples of
# KEY.cls + KEY.png (28 x 28 grayscale PNGs, MNIST-like), gzip-compressed
# as WebDataset ships it.  The corpus (corpus.sh) checks that ferry refuses
# the .tgz with how to decompress it and serves its other shards byte for
# byte; here the shard is decompressed as that message says (gzip -dc) and
# read as a training job would:
#
#  - decode=png at full size, 1 channel: every sample's pixels equal to
#    Pillow's decode, in storage order on 1 rank and shuffled on 3, every
#    sample once; 3 channels equal to Pillow's convert("RGB");
#  - cls equal to the integers of the members, aligned with the pixels.
#
# Skips (77) without libspng, or a Python with NumPy and Pillow.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init wds_real
grep -q '^#define HAVE_SPNG 1' "$top_builddir/config.h" || {
  echo "SKIP: this build has no libspng (PNG decode)"
  exit 77
}
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
"$PYW" -c "import numpy, PIL" >/dev/null 2>&1 || {
  echo "SKIP: no Python with NumPy and Pillow (the references)"
  exit 77
}
mkdir "$tmp/s" "$tmp/ref"
gzip -dc "$top_srcdir/tests/corpus/files/webdataset/sample.tgz" \
  >"$tmp/s/sample.tar" || {
  echo "FAIL: gzip -dc of the corpus' sample.tgz"
  exit 1
}
"$PYW" - "$tmp/s/sample.tar" "$tmp/ref" >"$tmp/ref.log" 2>&1 <<'PY' || {
import io, os, sys, tarfile
import numpy as np
from PIL import Image
shard, ref = sys.argv[1], sys.argv[2]
png, cls, last = [], [], None
with tarfile.open(shard) as tf:
    for ti in tf:
        if not ti.isreg():
            continue
        key, ext = ti.name.split(".", 1)
        data = tf.extractfile(ti).read()
        if ext == "png":
            png.append(data)
        elif ext == "cls":
            cls.append(int(data))
assert len(png) == len(cls) == 90, (len(png), len(cls))
ims = [Image.open(io.BytesIO(b)) for b in png]
g = np.stack([np.asarray(im.convert("L")) for im in ims])[..., None]
rgb = np.stack([np.asarray(im.convert("RGB")) for im in ims])
np.save(os.path.join(ref, "png1.npy"), g)
np.save(os.path.join(ref, "png3.npy"), rgb)
np.save(os.path.join(ref, "cls.npy"), np.array(cls, dtype=np.int64))
print("sample.tar: %d samples, PNGs %s, classes %s" % (
    len(png), sorted({im.size for im in ims}), sorted(set(cls))))
PY
  failed "the references" "$tmp/ref.log"
  exit 1
}
ok "`cat "$tmp/ref.log"`"
BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash --vars png,cls --decode png --image-size 28 --crop none"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
ds=$tmp/s/sample.tar
dump_queue "" png1-ordered 1 ordered "$ds" png \
  "--channels 1 --shuffle none --shuffle-buffer 0" "$tmp/ref/png1.npy"
dump_queue "" png1-3 3 spread "$ds" png "--channels 1 --seed 2 --threads 2" \
  "$tmp/ref/png1.npy"
dump_queue "" cls-3 3 "spread,plan=png1-3 np=3" "$ds" cls \
  "--channels 1 --seed 2 --threads 2" "$tmp/ref/cls.npy"
dump_queue "" png3-2 2 spread "$ds" png "--channels 3 --seed 3" \
  "$tmp/ref/png3.npy"
dump_run
"$PYW" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" >"$tmp/cmp.out" 2>&1 ||
  fail=1
cat "$tmp/cmp.out"
exit $fail
