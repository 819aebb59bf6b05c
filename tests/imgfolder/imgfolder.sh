#!/bin/sh
# imgfolder.sh - image folders end to end (src/backends/imgfolder.c,
# docs/images.md, decision 0059), written by tests/imgfolder/make_tree.py
# with Pillow and checked against torchvision's ImageFolder(root).samples:
#
#  - `ferry dump --row-hash` of the folder of classes on 1 (in storage
#    order), 2, 3 and 4 ranks (shuffled; threads 1, 2, 4; max_open_files
#    1): every sample's image bytes (ragged uint8) are those of
#    ImageFolder's file of that index and its label ImageFolder's, every
#    sample exactly once (tests/imgfolder/check_dump.py); the flat folder
#    (img_0000.jpg ...: names that differ only in digits) without labels;
#  - the listing on 1 thread and on 8 gives the same samples;
#  - ferry verify on 1 to 4 ranks (exactly once, equal batch counts);
#  - ferry info: the backend, samples, variables, classes;
#  - the listing rule on 30 random trees (8 under a sanitizer) (tests/imgfolder/order_check.py);
#  - a saved manifest serves the samples of a listing, on 2 ranks;
#  - after the listing (through a saved manifest): a file removed,
#    truncated, grown: refused naming the file, on 1 and 3 ranks; records
#    edited to name a file outside the folder, a file past the list, or
#    cut short: refused;
#  - bad trees refused naming the path: an empty directory, a class
#    without an image, an empty (0-byte) image, a .bmp, images beside
#    class directories, a broken symbolic link, a link loop, a FIFO named
#    like an image.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR, top_srcdir.  Python: /usr/bin/python3 unless
# PYTHON_NUMPY is set; the test skips (77) without Pillow and torchvision.
# Exit 0 pass, 1 fail, 77 skip.

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init imgfolder
PY=${PYTHON_NUMPY:-/usr/bin/python3}
if ! "$PY" -c 'import PIL, torchvision' >/dev/null 2>&1; then
  echo "SKIP: $PY cannot import PIL and torchvision (python3-pil, python3-torchvision): the writer and the reference"
  exit 77
fi
if ! "$FERRY" --version | grep '^backends:.* imagefolder' >/dev/null; then
  echo "FAIL: ferry --version does not list the imagefolder backend"
  exit 1
fi
fx=$tmp/fx
"$PY" "$top_srcdir/tests/imgfolder/make_tree.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_tree.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
c=$fx/classes
check=$top_srcdir/tests/imgfolder/check_dump.py
common="--epoch 0 --tail partial --batch-size 5"

# dump_pair NP LABEL OPTIONS...: the image and label dumps of $c on NP
# ranks, checked against ImageFolder's samples.
dump_pair() {
  d_np=$1 d_label=$2
  shift 2
  for v in image label; do
    $RUN_MPI $d_np "$FERRY" dump "$c" --var $v --row-hash $common "$@" \
      >"$tmp/$d_label.$v" 2>"$tmp/$d_label.$v.err" ||
      { failed "$d_label: ferry dump --var $v" "$tmp/$d_label.$v.err"; return; }
    test -s "$tmp/$d_label.$v.err" &&
      { failed "$d_label: ferry dump --var $v wrote to stderr" "$tmp/$d_label.$v.err"; return; }
  done
  # the label dump carries no fnv: drop it
  sed 's/ fnv=.*//' "$tmp/$d_label.label" >"$tmp/$d_label.lab"
  if "$PY" "$check" "$fx/samples.txt" $d_np 5 "$tmp/$d_label.image" \
       "$tmp/$d_label.lab" >"$tmp/$d_label.check" 2>&1; then
    ok "$d_label: `cat "$tmp/$d_label.check"`"
  else
    failed "$d_label" "$tmp/$d_label.check"
  fi
}
dump_pair 1 ordered --shuffle none --shuffle-buffer 0
# storage order is ImageFolder's: index g is line g
if test "`awk '{print $3}' "$tmp/ordered.image" | tr '\n' ' '`" = \
   "`awk '{printf "%d ", NR - 1}' "$fx/samples.txt"`"; then
  ok "storage order: sample g is ImageFolder's samples[g]"
else
  failed "the storage order is not 0..N-1" "$tmp/ordered.image"
fi
dump_pair 2 np2 --seed 2 --threads 2
dump_pair 3 np3 --seed 3 --threads 4 --shuffle block --block-size 3
dump_pair 4 np4 --seed 4 --threads 4 --max-open-files 1

# the flat folder: image only
$RUN_MPI 2 "$FERRY" dump "$fx/flat" --var image --row-hash $common --seed 1 \
  --threads 3 >"$tmp/flat.image" 2>"$tmp/flat.err" ||
  failed "ferry dump of the flat folder" "$tmp/flat.err"
if "$PY" "$check" "$fx/flat.txt" 2 5 "$tmp/flat.image" >"$tmp/flat.check" 2>&1; then
  ok "flat folder: `cat "$tmp/flat.check"`"
else
  failed "flat folder" "$tmp/flat.check"
fi
expect_refusal -l "a flat folder has no label" 1 "label|not found|image" \
  "$FERRY" dump "$fx/flat" --var label --epoch 0

# the listing on 1 thread and on 8: the same samples in the same order
for t in 1 8; do
  "$FERRY" dump "$c" --var image --row-hash $common --seed 9 --threads $t \
    >"$tmp/threads.$t" 2>&1 || failed "ferry dump --threads $t" "$tmp/threads.$t"
done
if test -s "$tmp/threads.1" && cmp -s "$tmp/threads.1" "$tmp/threads.8"; then
  ok "listing and reading on 1 thread and on 8: the same samples"
else
  failed "threads 1 and 8 differ" "$tmp/threads.8"
fi

# ---- ferry verify, ferry info ----------------------------------------------
for np in 1 2 3 4; do
  expect_verify $np "$c" --batch-size 7 --seed $np --threads 2
done
n=`wc -l <"$fx/samples.txt" | tr -d ' '`
if "$FERRY" info "$c" >"$tmp/info.out" 2>&1 &&
   grep '^backend *imagefolder$' "$tmp/info.out" >/dev/null &&
   grep "^samples *$n\$" "$tmp/info.out" >/dev/null &&
   grep '^parts *1$' "$tmp/info.out" >/dev/null &&
   grep 'image .*uint8' "$tmp/info.out" >/dev/null &&
   grep 'label .*int64' "$tmp/info.out" >/dev/null &&
   grep "$n images in 5 classes" "$tmp/info.out" >/dev/null; then
  ok "ferry info: one part, $n samples in 5 classes, image uint8 and label int64"
else
  failed "ferry info of the classes" "$tmp/info.out"
fi

# ---- the listing rule on random trees ----------------------------------------
mkdir -p "$tmp/trees"
trees=30 # 8 in a sanitizer's tree: each is two runs of ferry
test -z "${FERRY_SANITIZE-}" || trees=8
if "$PY" "$top_srcdir/tests/imgfolder/order_check.py" "$FERRY" "$tmp/trees" \
     $trees >"$tmp/order.out" 2>&1; then
  ok "order_check.py: `grep -c '^ok' "$tmp/order.out"` random trees listed as ImageFolder lists them (`grep -c refused "$tmp/order.out"` refused by both)"
else
  failed "order_check.py" "$tmp/order.out"
fi

# ---- a saved manifest, and files changed after it -----------------------------
cp -RL "$c" "$tmp/sm" # links followed: the fixture stays as it is
"$FERRY" info "$tmp/sm" --save-manifest "$tmp/m.json" >"$tmp/sm.out" 2>&1 ||
  failed "ferry info --save-manifest" "$tmp/sm.out"
for how in scan manifest; do
  m=
  test $how = manifest && m="--manifest $tmp/m.json"
  $RUN_MPI 2 "$FERRY" dump "$tmp/sm" $m --var image --row-hash $common \
    --seed 3 >"$tmp/sm.$how" 2>&1 || failed "dump by $how" "$tmp/sm.$how"
done
if test -s "$tmp/sm.scan" && cmp -s "$tmp/sm.scan" "$tmp/sm.manifest"; then
  ok "a saved manifest serves the samples of a listing, on 2 ranks"
else
  failed "a saved manifest's samples differ from a listing's" "$tmp/sm.manifest"
fi
# saved records edited: a name outside the folder, a sample naming no
# file of the list, a table cut short: refused naming the variable
"$PY" - "$tmp/m.json" "$tmp/bad" <<'PY' || failed "editing the manifest"
import json, sys
def edit(how, out):
    m = json.load(open(sys.argv[1]))
    f = m["parts"][0]["files"][0]  # image: kind 3, samples, files, names...
    r = bytearray.fromhex(f["record"])
    assert r[0] == 3
    if how == "outside":
        n = int.from_bytes(r[17:21], "little")  # the first name's length
        r[21:21 + n] = b"../" + r[24:21 + n]  # as long: the offsets stay
    elif how == "index":  # the last sample's file: past the list
        r[-8:] = (10 ** 6).to_bytes(8, "little")
    else:
        del r[-5:]
    f["record"] = r.hex()
    json.dump(m, open(out, "w"))
for how in ("outside", "index", "short"):
    edit(how, sys.argv[2] + "-" + how + ".json")
PY
for how in "outside:outside the folder" "index:names no file" "short:bad sample count"; do
  cp "$tmp/m.json.roff" "$tmp/bad-${how%%:*}.json.roff"
  expect_refusal -l "a saved record edited (${how%%:*})" \
    -n "$tmp/sm" 1 "variable image|its record|${how#*:}" \
    "$FERRY" dump "$tmp/sm" --manifest "$tmp/bad-${how%%:*}.json" --var image \
    --epoch 0 --tail partial
done
orig() { # orig G: the file of ImageFolder's sample G
  sed -n "`expr $1 + 1`p" "$fx/samples.txt" | cut -f1
}
copy() { # copy G: the same file in the copy $tmp/sm
  orig $1 | sed "s|^$c|$tmp/sm|"
}
gone=`copy 5` short=`copy 40` grown=`copy 77`
rm "$gone"
for np in 1 3; do
  expect_refusal -l "a file removed after the listing, np=$np" -n "$gone" 1 \
    "open failed|No such file|removed after" \
    $RUN_MPI $np "$FERRY" dump "$tmp/sm" --manifest "$tmp/m.json" --var image \
    $common
done
cp "`orig 5`" "$gone"
head -c 10 "`orig 40`" >"$short"
for np in 1 3; do
  expect_refusal -l "a file truncated after the listing, np=$np" -n "$short" 1 \
    "10 bytes where the listing found|changed after" \
    $RUN_MPI $np "$FERRY" dump "$tmp/sm" --manifest "$tmp/m.json" --var image \
    $common
done
cp "`orig 40`" "$short"
printf 'x' >>"$grown"
expect_refusal -l "a file grown after the listing" -n "$grown" 1 \
  "bytes where the listing found|changed after" \
  $RUN_MPI 2 "$FERRY" dump "$tmp/sm" --manifest "$tmp/m.json" --var image \
  $common

# ---- bad trees -------------------------------------------------------------------
b=$tmp/bad
mkdir -p "$b/empty" "$b/noimg/a" "$b/noimg/b" "$b/zero/a" "$b/bmp/a" \
  "$b/beside/a" "$b/broken/a" "$b/loop/a/in" "$b/fifo/a"
one=`sed -n 1p "$fx/samples.txt" | cut -f1`
cp "$one" "$b/noimg/a/1.jpg" && echo text >"$b/noimg/b/notes.txt"
cp "$one" "$b/zero/a/1.jpg" && : >"$b/zero/a/2.jpg"
cp "$one" "$b/bmp/a/1.jpg" && cp "$one" "$b/bmp/a/2.BMP"
cp "$one" "$b/beside/a/1.jpg" && cp "$one" "$b/beside/top.jpg"
cp "$one" "$b/broken/a/1.jpg" && ln -s "$b/nothing.jpg" "$b/broken/a/2.jpg"
cp "$one" "$b/loop/a/1.jpg" && ln -s .. "$b/loop/a/in/up"
cp "$one" "$b/fifo/a/1.jpg" && mkfifo "$b/fifo/a/2.jpg"
tab=`printf '\t'`
cat >"$tmp/bad.txt" <<EOF
$b/empty${tab}$b/empty${tab}is empty
$b/noimg${tab}$b/noimg${tab}class directory without|b|Found no valid file
$b/zero${tab}$b/zero/a/2.jpg${tab}empty (0 bytes)
$b/bmp${tab}a/2.BMP${tab}.bmp|ferry reads .jpg
$b/beside${tab}$b/beside${tab}top.jpg|beside|ImageFolder
$b/broken${tab}$b/broken/a/2.jpg${tab}symbolic link to nothing
$b/loop${tab}$b/loop${tab}loop of symbolic links
$b/fifo${tab}$b/fifo/a/2.jpg${tab}not a regular file
EOF
while IFS=$tab read -r dir name words; do
  for np in 1 3; do
    expect_refusal -l "`basename "$dir"` np=$np" -n "$name" 1 "$words" \
      $RUN_MPI $np "$FERRY" dump "$dir" --epoch 0 --batch-size 5
  done
done <"$tmp/bad.txt"
exit $fail
