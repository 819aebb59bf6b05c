#!/bin/sh
# imgfolder_python.sh - image folders in Python (docs/images.md;
# tests/imgfolder/loader_check.py on 1, 2 and 3 ranks): the folders of
# tests/imgfolder/make_tree.py through ferry.Loader, every sample's image
# bytes and label equal to torchvision's ImageFolder's, every sample once,
# equal batch counts.
. "$top_srcdir/tests/python/common.sh"
need_module torchvision "apt-get install python3-torchvision: the reference"
need_module PIL "apt-get install python3-pil: the images' writer"
"$PY" "$top_srcdir/tests/imgfolder/make_tree.py" "$tmp/fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_tree.py"
  cat "$tmp/make.out"
  exit 1
}
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
status=0
for np in 1 2 3; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/imgfolder/loader_check.py" "$tmp/fx" \
    >"$tmp/out" 2>&1 || { echo "FAIL: loader_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
