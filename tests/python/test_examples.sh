#!/bin/sh
# test_examples.sh - the examples/ scripts whose libraries exist, on 2 ranks,
# over data they make themselves; each prints one summary line.
. "$top_srcdir/tests/python/common.sh"
status=0
run() { # run SCRIPT DATA [ARGS...]
  r_script=$1 r_data=$2
  shift 2
  $RUN_MPI 2 "$PY" "$top_srcdir/examples/$r_script" "$tmp/$r_data" "$@" \
    >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  if test $rc -ne 0; then echo "FAIL: examples/$r_script (status $rc)"; status=1; fi
}
run ddp_distributed_sampler.py npy
run scdataset_block_shuffle.py npy
run zarr_chunk_shuffle.py store.zarr
# packed rows (pack=concat): trained on 2 ranks; then 7 batches on 2 ranks,
# saved, and the rest of the epoch on 3: no row twice, all but the tail
run lm_packed.py corpus
$RUN_MPI 2 "$PY" "$top_srcdir/examples/lm_packed.py" "$tmp/corpus" --steps 7 \
  --save "$tmp/lm.pt" --served "$tmp/served" >"$tmp/out" 2>&1 &&
  $RUN_MPI 3 "$PY" "$top_srcdir/examples/lm_packed.py" "$tmp/corpus" \
    --resume "$tmp/lm.pt" --served "$tmp/served" >>"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
total=`wc -l <"$tmp/served" 2>/dev/null || echo 0`
twice=`sort -n "$tmp/served" 2>/dev/null | uniq -d | wc -l`
rows=`sed -n 's/.* of \([0-9]*\), efficiency.*/\1/p' "$tmp/out" | head -1`
if test $rc -eq 0 && test "$twice" -eq 0 && test -n "$rows" &&
   test "$total" -gt `expr $rows - 24`; then
  echo "ok: lm_packed.py saved on 2 ranks, resumed on 3: $total rows of $rows, none twice"
else
  echo "FAIL: lm_packed.py resumed on 3 ranks: status $rc, $total rows of ${rows:-?}, $twice twice"
  status=1
fi
# WebDataset shards decoded by ferry (decode=jpg, crop=random) where this
# build decodes JPEGs and Pillow writes them: trained on 2 ranks with
# float32 chw batches normalised by ferry, then with uint8 hwc batches
# normalised by torch; the same losses (the same pixels, the same values)
if grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" &&
   "$PY" -c "import PIL" >/dev/null 2>&1; then
  run webdataset_decode.py wds
  chw=`sed -n 's/.*(float32 chw), \(loss .*\)/\1/p' "$tmp/out"`
  run webdataset_decode.py wds --hwc
  hwc=`sed -n 's/.*normalised on [a-z]*), \(loss .*\)/\1/p' "$tmp/out"`
  if test -n "$chw" && test "$chw" = "$hwc"; then
    echo "ok: webdataset_decode.py: layout=chw and hwc + normalise() give the same $chw"
  else
    echo "FAIL: webdataset_decode.py: chw '$chw', hwc '$hwc'"
    status=1
  fi
else
  echo "note: examples/webdataset_decode.py not run: no TurboJPEG in this build or no Pillow for $PY"
fi
# An image folder (the example makes a tree of 96 JPEGs and PNGs in 3
# classes) decoded by ferry, random crops normalised in C: 2 epochs on 2
# ranks serve every image once an epoch, every class seen
if grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" &&
   grep -q '^#define HAVE_SPNG 1' "$top_builddir/config.h" &&
   "$PY" -c "import PIL" >/dev/null 2>&1; then
  run imagefolder_train.py imf/train --epochs 2 --batch-size 16 --image-size 64
  if grep -q "^imagefolder_train.py: 2 ranks, 2 epochs, 192 images, 3 classes seen" "$tmp/out"; then
    echo "ok: imagefolder_train.py: `cat "$tmp/out"`"
  else
    echo "FAIL: imagefolder_train.py: not 192 images of 3 classes in 2 epochs"
    status=1
  fi
else
  echo "note: examples/imagefolder_train.py not run: no TurboJPEG or libspng in this build or no Pillow for $PY"
fi
# MosaicML MDS shards (the example writes 120 samples of a jpeg and an int
# column in MDSWriter's layout) decoded by ferry: 2 epochs on 2 ranks, 3
# batches of 16 a rank each (tail drop_last: 120 // 32), equal counts
if grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" &&
   "$PY" -c "import PIL" >/dev/null 2>&1; then
  run mds_train.py mds
  if grep -q "^mds_train.py: 2 ranks, 2 epochs, 3 batches/rank (equal: True), 192 images of 64x64" "$tmp/out"; then
    echo "ok: mds_train.py: `cat "$tmp/out"`"
  else
    echo "FAIL: mds_train.py: not 3 equal batches a rank, 192 images in 2 epochs"
    status=1
  fi
else
  echo "note: examples/mds_train.py not run: no TurboJPEG in this build or no Pillow for $PY"
fi
# the AnnData examples (docs/singlecell.md) where anndata is installed: a
# cell-type classifier; the block shuffle over an .h5ad, its rows checked
# against anndata's; class-balanced sampling over obs/cell_type (70/20/8/2 %
# in the file, each type 1/4 of an epoch's cells served)
if "$PY" -c "import anndata, scipy, h5py" >/dev/null 2>&1; then
  run anndata_train.py cells
  run scdataset_block_shuffle.py blocks.h5ad
  run anndata_balanced.py types.h5ad
else
  echo "note: examples/anndata_train.py, anndata_balanced.py and scdataset_block_shuffle.py over an .h5ad not run: no anndata, scipy or h5py for $PY"
fi
# the Lightning and JAX examples where their framework is installed (the GPU
# machine of tests/gpu/device.sh has both)
if "$PY" -c "import lightning" >/dev/null 2>&1 || "$PY" -c "import pytorch_lightning" >/dev/null 2>&1; then
  run lightning_datamodule.py parts
else
  echo "note: examples/lightning_datamodule.py not run: no Lightning for $PY"
fi
if "$PY" -c "import jax" >/dev/null 2>&1; then
  run jax_pmap.py npy2
else
  echo "note: examples/jax_pmap.py not run: no JAX for $PY"
fi
exit $status
