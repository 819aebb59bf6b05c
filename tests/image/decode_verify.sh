#!/bin/sh
# decode_verify.sh - the images of decode= checked before a job
# (src/loader/images.c, src/tool/verify_images.c, info_images.c;
# docs/images.md "Checking images"), over the shards of
# tests/image/make_verify_wds.py (30 JPEGs in 3 shards; in bad/, samples 7
# and 8 cut in their scan data, sample 23 not an image):
#
#  - ferry verify --images on 1 and 3 ranks (threads 1 and 3): the 3 bad
#    images named (shard, variable, sample, row, the decoder's message) in
#    sample order, two of them in one read, "3 of 30 images bad", status 3,
#    the report the same on both rank counts; --max-errors 1 names the
#    first and counts the others;
#    --json; the clean shards: PASS, status 0; without decode=: a usage
#    error (2);
#  - ferry info with decode=: formats, sizes (min/median/max), bytes,
#    channels, subsampling and progressive count of all 30 headers equal to
#    what the writer made (expect.json); in bad/, the one image whose
#    headers fail counted and named, the cut ones not (headers only);
#    --probe 8 twice: 8 headers, the same seeded draw; --probe 0: none.
#
# Skips (77) without TurboJPEG, or a Python with NumPy and Pillow.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init decode_verify
grep -q '^#define HAVE_TURBOJPEG 1' "$top_builddir/config.h" || {
  echo "SKIP: this build has no TurboJPEG"
  exit 77
}
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
"$PYW" -c "import numpy, PIL" >/dev/null 2>&1 || {
  echo "SKIP: python3-pil or python3-numpy missing (./bootstrap deps installs them)"
  exit 77
}
fx=$tmp/fx
"$PYW" "$top_srcdir/tests/image/make_verify_wds.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_verify_wds.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
s0=$fx/bad/shard-000000.tar
s2=$fx/bad/shard-000002.tar
line7="  bad: decode: file $s0, variable jpg, sample 7 (row 7 of the file,"
line8="  bad: decode: file $s0, variable jpg, sample 8 (row 8 of the file,"
line23="  bad: decode: file $s2, variable jpg, sample 23 (row 3 of the file,"

# ---- ferry verify --images ----------------------------------------------
for run in "1 1" "3 3" "3 1"; do
  np=${run% *} th=${run#* }
  $RUN_MPI $np "$FERRY" verify "$fx/bad" --decode jpg --images \
    --threads $th >"$tmp/v.$np.$th" 2>"$tmp/v.$np.$th.err"
  st=$?
  why=
  test $st = 3 || why="status $st, not 3"
  grep '^FAIL images  *3 of 30 images bad, 27 good$' "$tmp/v.$np.$th" >/dev/null ||
    why="$why; no '3 of 30 images bad'"
  grep -F -e "$line7" "$tmp/v.$np.$th" | grep 'Premature end of JPEG' >/dev/null ||
    why="$why; sample 7 (shard 0, row 7, premature end) not named"
  grep -F -e "$line8" "$tmp/v.$np.$th" | grep 'Premature end of JPEG' >/dev/null ||
    why="$why; sample 8 (shard 0, row 8, premature end) not named"
  grep -F -e "$line23" "$tmp/v.$np.$th" | grep 'not a JPEG or PNG' >/dev/null ||
    why="$why; sample 23 (shard 2, row 3, not an image) not named"
  test "`grep -c '^  bad: ' "$tmp/v.$np.$th"`" = 3 || why="$why; not 3 bad lines"
  # in sample order
  test "`grep '^  bad: ' "$tmp/v.$np.$th" | sed -n 's/.*, sample \([0-9]*\) .*/\1/p' | tr '\n' ' '`" = "7 8 23 " ||
    why="$why; not in sample order"
  if test -z "$why"; then
    ok "verify --images on $np ranks, threads $th: 3 bad images named, status 3"
  else
    failed "verify --images on $np ranks, threads $th: ${why#; }" "$tmp/v.$np.$th"
    cat "$tmp/v.$np.$th.err"
  fi
done
# the report does not depend on the rank count (but its first line)
if sed 1d "$tmp/v.1.1" >"$tmp/a" && sed 1d "$tmp/v.3.3" >"$tmp/b" &&
   cmp -s "$tmp/a" "$tmp/b"; then
  ok "verify --images: the same report on 1 and 3 ranks"
else
  failed "verify --images: 1 and 3 ranks differ" "$tmp/b"
fi
$RUN_MPI 3 "$FERRY" verify "$fx/bad" --decode jpg --images --max-errors 1 \
  >"$tmp/m1" 2>&1
st=$?
if test $st = 3 && test "`grep -c '^  bad: ' "$tmp/m1"`" = 1 &&
   grep -F -e "$line7" "$tmp/m1" >/dev/null &&
   grep '^  \.\.\. 2 more bad images not named' "$tmp/m1" >/dev/null; then
  ok "verify --images --max-errors 1: the first named, the others counted"
else
  failed "verify --images --max-errors 1 (status $st)" "$tmp/m1"
fi
$RUN_MPI 3 "$FERRY" verify "$fx/bad" --decode jpg --images --json >"$tmp/j" 2>/dev/null
st=$?
if test $st = 3 && "$PYW" - "$tmp/j" "$s0" "$s2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
e = j["errors"]
assert (j["images"], j["good"], j["bad"], j["result"]) == (30, 27, 3, "FAIL"), j
assert [(x["file"], x["variable"], x["sample"], x["row"]) for x in e] == \
    [(sys.argv[2], "jpg", 7, 7), (sys.argv[2], "jpg", 8, 8),
     (sys.argv[3], "jpg", 23, 3)], e
assert e[0]["bytes"] > 0 and "Premature end" in e[0]["message"], e
EOF
then
  ok "verify --images --json: counts, files, samples and rows"
else
  failed "verify --images --json (status $st)" "$tmp/j"
fi
for np in 1 3; do
  $RUN_MPI $np "$FERRY" verify "$fx/clean" --decode jpg --images --threads 2 \
    >"$tmp/c" 2>&1
  st=$?
  if test $st = 0 && grep '^PASS images  *30 images decoded, all good$' "$tmp/c" >/dev/null; then
    ok "verify --images on clean shards, $np ranks: PASS, status 0"
  else
    failed "verify --images on clean shards, $np ranks (status $st)" "$tmp/c"
  fi
done
expect_refusal -l "verify --images without decode=" 2 "--images|--decode" \
  "$FERRY" verify "$fx/clean" --images

# ---- ferry info with decode= --------------------------------------------
"$FERRY" info "$fx/clean" --decode jpg --json >"$tmp/i" 2>&1
if "$PYW" - "$tmp/i" "$fx/clean/expect.json" <<'EOF'
import json, sys
got = json.load(open(sys.argv[1]))["images"]
want = json.load(open(sys.argv[2]))
for k in want:
    assert got[k] == want[k], (k, got[k], want[k])
EOF
then
  ok "info with decode=: the 30 headers' summary equals the writer's"
else
  failed "info with decode=: the summary differs from expect.json" "$tmp/i"
fi
"$FERRY" info "$fx/bad" --decode jpg >"$tmp/ib" 2>&1
if grep '^  jpg  *formats: jpeg 29; bad headers 1$' "$tmp/ib" >/dev/null &&
   grep -F -e "first bad: decode: file $s2, variable jpg, sample 23" "$tmp/ib" >/dev/null; then
  ok "info with decode= in bad/: the image without headers named, the cut ones not"
else
  failed "info with decode= in bad/" "$tmp/ib"
fi
$RUN_MPI 2 "$FERRY" info "$fx/clean" --decode jpg --probe 8 --seed 5 --json >"$tmp/p1" 2>&1 &&
  "$FERRY" info "$fx/clean" --decode jpg --probe 8 --seed 5 --json >"$tmp/p2" 2>&1
st=$?
if test $st = 0 && "$PYW" - "$tmp/p1" "$tmp/p2" <<'EOF'
import json, sys
a, b = (json.load(open(p))["images"] for p in sys.argv[1:3])
assert a == b, (a, b)
assert a["probed"] == 8 and a["samples"] == 30, a
assert sum(a["vars"][0]["formats"].values()) == 8, a
EOF
then
  ok "info --probe 8: 8 headers, the same draw on 2 ranks and 1"
else
  failed "info --probe 8 (status $st)" "$tmp/p1"
fi
"$FERRY" info "$fx/clean" --decode jpg --probe 0 >"$tmp/p0" 2>&1
if test $? = 0 && ! grep '^images' "$tmp/p0" >/dev/null; then
  ok "info --probe 0: no headers read"
else
  failed "info --probe 0 still probes" "$tmp/p0"
fi
exit $fail
