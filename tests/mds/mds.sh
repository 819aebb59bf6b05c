#!/bin/sh
# mds.sh - MosaicML Streaming MDS datasets end to end (src/backends/mds.c,
# mds_format.c; docs/images.md, decision 0060), written by
# tests/mds/make_mds.py as Streaming's MDSWriter writes them (its raw
# shards and index.json were checked byte for byte against MDSWriter's
# own output: tests/mds/real_writer.py), 37 samples in 8 shards.
#
#  - ferry.Loader (tests/mds/mds_check.py) on 1 to 4 ranks: every column of
#    every encoding ferry serves equal to what the writer was given, raw
#    and zstd shards, every sample once, equal batch counts; with
#    MDS_STREAMING_SRC set (a checkout of mosaicml/streaming), the same on
#    a dataset written by Streaming's MDSWriter itself;
#  - ferry verify on 1 and 3 ranks; ferry info names the columns skipped;
#  - refusals, one message naming the file (and the column, sample and
#    offset where there is one): index.json not JSON, of another version,
#    of another streaming format; a shard missing, truncated (against
#    raw_data.bytes, and with the index rewritten: against its
#    offsets), longer than its last offset, an offset past the end, a
#    sample's column size past the sample (inside the shard), a pkl
#    column selected, a gzip-compressed shard, a corrupt zstd shard; on
#    3 ranks too.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# FERRY_PYTHON, FERRY_TEST_TMPDIR, top_srcdir.  Exit 0 pass, 1 fail, 77
# skip (no Python package, or no Pillow or zstd program).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init mds
. "$top_srcdir/tests/python/common.sh"
need_module PIL "apt-get install python3-pil"
if ! command -v zstd >/dev/null 2>&1; then
  echo "SKIP: no zstd program (apt-get install zstd): it writes the zstd shards"
  exit 77
fi
fx=$tmp/fx
"$PY" "$top_srcdir/tests/mds/make_mds.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_mds.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
if test -n "${MDS_STREAMING_SRC:-}"; then
  "$PY" "$top_srcdir/tests/mds/real_writer.py" "$MDS_STREAMING_SRC" \
    "$fx/real" >"$tmp/real.log" 2>&1 || failed "real_writer.py" "$tmp/real.log"
  ok "`tail -1 "$tmp/real.log"`"
fi

# ---- values, exactly once ---------------------------------------------
PYTHONPATH=$pydir:$PYTHONPATH
export PYTHONPATH
for np in 1 2 3 4; do
  $RUN_MPI $np "$PY" "$top_srcdir/tests/mds/mds_check.py" "$fx" \
    >"$tmp/check.out" 2>&1 && grep "passed" "$tmp/check.out" >/dev/null &&
    ok "`grep passed "$tmp/check.out"`" ||
    failed "mds_check.py on $np ranks" "$tmp/check.out"
done
for np in 1 3; do
  expect_verify $np "$fx/good" --batch-size 4
  expect_verify $np "$fx/zstd" --batch-size 4 --vars img,an,si
done
"$FERRY" info "$fx/good" >"$tmp/info" 2>&1 &&
  grep '^parts  *8' "$tmp/info" >/dev/null &&
  grep '^samples  *37' "$tmp/info" >/dev/null &&
  grep 'column p (pkl) skipped: pickle' "$tmp/info" >/dev/null &&
  ok "ferry info: 8 parts, 37 samples, the pkl column skipped" ||
  failed "ferry info" "$tmp/info"

# ---- refusals -----------------------------------------------------------
# bad NAME FROM PYTHON: a copy of FROM (good or zstd) as $tmp/NAME, changed
# by the Python statements (d: its directory; idx: its index, rewritten
# after)
bad() {
  rm -rf "$tmp/$1" && cp -r "$fx/$2" "$tmp/$1" && "$PY" - "$tmp/$1" <<EOF
import json, os, struct, sys
d = sys.argv[1]
with open(d + "/index.json") as f:
    idx = json.load(f)
def patch(name, off, data):
    with open(d + "/" + name, "r+b") as f:
        f.seek(off)
        f.write(data)
$3
with open(d + "/index.json", "w") as f:
    json.dump(idx, f)
EOF
}
refused() { # refused NAME NP WORDS [ferry options]
  n=$1 np=$2 w=$3
  shift 3
  expect_refusal -l "$n on $np ranks" 1 "$w" $RUN_MPI $np "$FERRY" verify \
    "$tmp/$n" --epochs 1 "$@" || true
}
bad pkl good "pass"
bad notjson good "pass"
printf '{"version": 2, "shards": [' >"$tmp/notjson/index.json"
bad version good "idx['version'] = 3"
bad xsv good "idx['shards'][1]['format'] = 'xsv'"
bad missing good "os.unlink(d + '/shard.00002.mds')"
bad short good "os.truncate(d + '/shard.00001.mds', 300)"
bad short2 good "os.truncate(d + '/shard.00001.mds', 3000)
idx['shards'][1]['raw_data']['bytes'] = 3000"
bad long good "open(d + '/shard.00001.mds', 'ab').write(b'x' * 10)
idx['shards'][1]['raw_data']['bytes'] += 10"
bad offset good "patch('shard.00000.mds', 4 + 4 * 2, struct.pack('<I', 0x7fffff00))"
bad colsize good "n, o, o1 = struct.unpack('<III', open(d + '/shard.00003.mds', 'rb').read(12))
patch('shard.00003.mds', o, struct.pack('<I', o1 - o))"
bad gz zstd "idx['shards'][0]['compression'] = 'gz'"
bad zcorrupt zstd "patch('shard.00004.mds.zstd', 20, b'\\xff' * 40)"
for np in 1 3; do
  refused notjson $np "index.json|not JSON"
  refused version $np "index.json|version is not 2"
  refused xsv $np "shard 1|format \"xsv\"|mds shards only"
  refused missing $np "shard 2|shard.00002.mds|not there"
  refused short $np "shard.00001.mds|300 bytes|raw_data.bytes"
  refused short2 $np "shard.00001.mds|offset 12|past the end|3000 bytes"
  refused long $np "shard.00001.mds|last offset|not the shard's size"
  refused offset $np "shard.00000.mds|offset 12|past the end"
  refused colsize $np "shard.00003.mds|sample 0|column ad|where the sample has"
  refused gz $np "shard.00000.mds.zstd|compressed with gz|decompress"
  refused zcorrupt $np "shard.00004.mds.zstd|zstd"
  refused pkl $np "column p|pkl|pickle" --vars img,p
done
exit $fail
