#!/bin/sh
# mds_dyn.sh - MDS ndarray columns of dynamic shapes (src/backends/mds.c,
# mds_format.c; docs/images.md), written by tests/mds/make_mds.py --dyn as
# Streaming's NDArray encoding stores them (with MDS_STREAMING_SRC set, a
# checkout of mosaicml/streaming, its own MDSWriter writes the same bytes:
# tests/mds/real_writer.py --dyn).
#
#  - ferry.Loader (tests/mds/mds_check.py) on 1 and 2 ranks: every value
#    equal to NumPy's array, as rows of the dimensions after the first
#    where every sample of every shard has the same ones (1 to 6 of them,
#    shape prefixes of uint8 and uint16, a dtype byte or not), flattened
#    where they differ (in a shard, or only between shards) or are 7;
#    ferry info's shapes; ferry verify on 2 ranks;
#  - refusals naming shard, sample, column and the value's offset (the
#    offset computed here from the shard): samples of another number of
#    dimensions in one shard and between shards; a damaged shape prefix
#    (a dimension changed, 0, too large; the number of dimensions 0 or
#    changed), on 1 and 2 ranks.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# FERRY_PYTHON, FERRY_TEST_TMPDIR, top_srcdir.  Exit 0 pass, 1 fail, 77
# skip (no Python package or Pillow).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init mds_dyn
. "$top_srcdir/tests/python/common.sh"
need_module PIL "apt-get install python3-pil"
fx=$tmp/fx
"$PY" "$top_srcdir/tests/mds/make_mds.py" --dyn "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_mds.py --dyn" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
if test -n "${MDS_STREAMING_SRC:-}"; then
  "$PY" "$top_srcdir/tests/mds/real_writer.py" --dyn "$MDS_STREAMING_SRC" \
    "$fx/real_dyn" >"$tmp/real.log" 2>&1 && ok "`tail -1 "$tmp/real.log"`" ||
    failed "real_writer.py --dyn" "$tmp/real.log"
  rm -rf "$fx/real_dyn"
fi

# ---- values ------------------------------------------------------------
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
for np in 1 2; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/mds/mds_check.py" "$fx" \
    >"$tmp/check.out" 2>&1 &&
    grep "passed (dyn: 29 samples, 8 columns; dynmix: 20 samples, 3 columns)" \
    "$tmp/check.out" >/dev/null &&
    ok "`grep passed "$tmp/check.out"`" ||
    failed "mds_check.py on $np ranks" "$tmp/check.out"
done
"$FERRY" info "$fx/dyn" >"$tmp/info" 2>&1
for want in ' t  *float32 .*(29, \*, 3, 2) ' ' n  *int32 .*(29, \*, 5) ' \
  ' h  *uint16 .*(29, \*, 300) ' ' e  *float64 .*(29, \*, 2, 1, 1, 3, 1, 2) ' \
  ' g  *int8 .*(29, \*) ' ' w  *int16 .*(29, \*) ' ' v  *uint8 .*(29, \*) ' \
  't: MDS column, encoding ndarray:float32: each sample.s array as rows of shape (3, 2)' \
  'w: MDS column, encoding ndarray:int16: each sample.s array flattened'; do
  grep -e "$want" "$tmp/info" >/dev/null || failed "ferry info: no '$want'" "$tmp/info"
done
"$FERRY" info "$fx/dynmix" >"$tmp/infomix" 2>&1 &&
  grep ' x  *int32 .*(20, \*) ' "$tmp/infomix" >/dev/null &&
  grep ' y  *uint8 .*(20, \*) ' "$tmp/infomix" >/dev/null &&
  ok "ferry info: rows of the inner shape (3, 2), (5), (300), 6 dimensions; flat for 7, for differing shapes, for shards that differ" ||
  failed "ferry info of dynmix" "$tmp/infomix"
expect_verify 2 "$fx/dyn" --batch-size 4

# ---- saved manifests, the scan shared by ranks ---------------------------
"$FERRY" info "$fx/dyn" --scan rank0 --save-manifest "$tmp/m1.json" \
  >"$tmp/m1.out" 2>&1 || failed "ferry info --save-manifest" "$tmp/m1.out"
$RUN_MPI 2 "$FERRY" info "$fx/dyn" --save-manifest "$tmp/m2.json" \
  >"$tmp/m2.out" 2>&1 || failed "ferry info on 2 ranks" "$tmp/m2.out"
sed 's/m1.json.roff/X/' "$tmp/m1.json" >"$tmp/m1.sed"
sed 's/m2.json.roff/X/' "$tmp/m2.json" >"$tmp/m2.sed"
cmp -s "$tmp/m1.sed" "$tmp/m2.sed" && cmp -s "$tmp/m1.json.roff" "$tmp/m2.json.roff" &&
  grep '"record_version": *2' "$tmp/m1.json" >/dev/null &&
  ok "the scan shared by 2 ranks: rank 0's manifest, byte for byte (records version 2)" ||
  failed "the scan shared by 2 ranks: another manifest" "$tmp/m2.json"
for how in scan manifest; do
  m=
  test $how = manifest && m="--manifest $tmp/m1.json"
  $RUN_MPI 2 "$FERRY" dump "$fx/dyn" $m --var t --epoch 0 --row-hash \
    --tail partial --seed 3 >"$tmp/d.$how" 2>&1 || failed "dump t by $how" "$tmp/d.$how"
done
test -s "$tmp/d.scan" && cmp -s "$tmp/d.scan" "$tmp/d.manifest" &&
  ok "a saved manifest serves t's samples as the scan does, on 2 ranks" ||
  failed "a saved manifest's t differs from the scan's" "$tmp/d.manifest"
sed 's/"record_version": *2/"record_version": 1/' "$tmp/m1.json" >"$tmp/v1.json"
cp "$tmp/m1.json.roff" "$tmp/v1.json.roff"
expect_refusal -l "a manifest saved with records of version 1" -n "$tmp/v1.json" 1 \
  "version 1|reads version 2|scan the dataset again" \
  "$FERRY" dump "$fx/dyn" --manifest "$tmp/v1.json" --var t --epoch 0

# ---- refusals -----------------------------------------------------------
# bad NAME PYTHON: $tmp/NAME made by the Python statements (d: its path;
# m: make_mds; at(shard, i, col): where column col of sample i starts;
# patch(shard, off, bytes); the offset to expect written with want(off))
bad() {
  rm -rf "$tmp/$1" && "$PY" - "$tmp/$1" "$fx" "$top_srcdir/tests/mds" <<EOF
import os, shutil, sys
d, fx = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import numpy as np
import make_mds as m
def at(shard, i, col):
    return m.column_at(d + "/" + shard, i, col)
def patch(shard, off, data):
    with open(d + "/" + shard, "r+b") as f:
        f.seek(off)
        f.write(data)
def want(off):
    open(d + ".want", "w").write(str(off))
$2
EOF
}
refused() { # refused NAME NP WORDS: WORDS and the offset of NAME.want
  n=$1 np=$2 w=$3
  expect_refusal -l "$n on $np ranks" 1 "$w|offset `cat "$tmp/$n.want"`:" \
    $RUN_MPI $np "$FERRY" verify "$tmp/$n" --epochs 1 || true
}
bad ndim "rows = [{'x': np.zeros((2, 3) if i != 3 else (2, 3, 1), np.int32)}
        for i in range(6)]
m.write(d, {'x': 'ndarray:int32'}, rows, None)
want(at('shard.00000.mds', 3, 'x'))"
bad ndim2 "rows = [{'x': np.zeros((2, 3) if i < 4 else (2, 3, 1), np.int32)}
        for i in range(8)]
m.write(d, {'x': 'ndarray:int32'}, rows, None, per_shard=4)
want(at('shard.00001.mds', 0, 'x'))"
# column t of shard 2's sample 1: ndarray:float32 of shape (k, 3, 2), its
# prefix one byte (3 << 2: uint8 dimensions), then the three dimensions
bad dim "shutil.copytree(fx + '/dyn', d)
o = at('shard.00002.mds', 1, 't')
patch('shard.00002.mds', o + 2, b'\\x04')
want(o)"
bad dim0 "shutil.copytree(fx + '/dyn', d)
o = at('shard.00002.mds', 1, 't')
patch('shard.00002.mds', o + 1, b'\\x00')
want(o)"
bad ndim0 "shutil.copytree(fx + '/dyn', d)
o = at('shard.00002.mds', 1, 't')
patch('shard.00002.mds', o, b'\\x00')
want(o)"
bad ndim4 "shutil.copytree(fx + '/dyn', d)
o = at('shard.00002.mds', 1, 't')
patch('shard.00002.mds', o, bytes([4 << 2]))
want(o)"
# column h, uint16 dimensions: the second one 65535
bad huge "shutil.copytree(fx + '/dyn', d)
o = at('shard.00003.mds', 2, 'h')
patch('shard.00003.mds', o + 3, b'\\xff\\xff')
want(o)"
for np in 1 2; do
  refused ndim $np "shard.00000.mds|sample 3|column x|3 dimensions where the shard's sample 0 has 2"
  refused ndim2 $np "shard.00001.mds|sample 0|column x|3 dimensions where shard|shard.00000.mds's have 2"
  refused dim $np "shard.00002.mds|sample 1|column t|not its shape's size"
  refused dim0 $np "shard.00002.mds|sample 1|column t|does not fit its bytes"
  refused ndim0 $np "shard.00002.mds|sample 1|column t|0 dimensions"
  refused ndim4 $np "shard.00002.mds|sample 1|column t|4 dimensions where the shard's sample 0 has 3"
  refused huge $np "shard.00003.mds|sample 2|column h|does not fit its bytes"
done
exit $fail
