#!/bin/sh
# image.sh - the image decode core (src/image/, docs/image-decode.md):
# image_check.py writes JPEGs and PNGs with Pillow in every mode the core
# decodes and compares test_image's pixels with Pillow's decode (full
# size: equal) and with torchvision's Resize + CenterCrop, Resize((h, w))
# and RandomResizedCrop + hflip on the PIL image (equal without DCT
# scaling; within mean 2.5 / max 64 with it); then test_image selftest on
# those files: the random crop's scale/ratio rule, seeds and threads,
# truncations and bit flips, absurd sizes, bad specs.  In the asan tier
# too.  Skips (77) without a build with TurboJPEG and libspng, or without
# a Python with numpy, Pillow and torchvision.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init image
prog="$top_builddir/tests/image/test_image"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" &&
  grep -q '^#define HAVE_SPNG 1' "$top_builddir/config.h" || {
  echo "SKIP: this build has no TurboJPEG or no libspng (configure --with-turbojpeg --with-spng)"
  exit 77
}
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
"$PYW" -c "import numpy, PIL, torchvision" >/dev/null 2>&1 || {
  echo "SKIP: python3-pil or python3-torchvision missing (./bootstrap deps installs them)"
  exit 77
}
"$PYW" "$top_srcdir/tests/image/image_check.py" "$prog" "$tmp/img" >"$tmp/check.out" 2>&1
status=$?
cat "$tmp/check.out"
if test $status -eq 0; then
  ok "image_check.py: pixels against Pillow and torchvision"
else
  failed "image_check.py (status $status)" /dev/null
fi
if "$prog" selftest "$tmp/img" >"$tmp/self.out" 2>&1; then
  ok "`tail -n 1 "$tmp/self.out"`"
else
  failed "test_image selftest" "$tmp/self.out"
fi
exit $fail
