#!/bin/sh
# mds_hashes.sh - the shard digests of an MDS index.json (raw_data.hashes,
# zip_data.hashes; src/backends/mds.c, src/util/digest.c; docs/images.md):
# datasets written by tests/mds/make_mds.py --hashes with blake2b, md5,
# sha1, sha256 and xxh64 digests of every file, raw and zstd shards, and
# with fewer (ferry compares one per file, the fastest it computes:
# xxh64, md5, sha1, sha256; the digests in the index are Python's hashlib
# and a Python XXH64).
#
#  - ferry verify checks them (mds_hashes=auto is check there) on 1 and 2
#    ranks: a PASS hashes line naming the algorithm compared (xxh64, md5,
#    sha1, sha256 in turn), those not compared and those not computed
#    (blake2b); SKIP when the index lists only blake2b; ferry info
#    --mds-hashes check says the same, and nothing without the option;
#  - a byte changed inside a sample (the shard still parses): a plain open
#    and ferry verify --mds-hashes ignore serve it (no hashing unless
#    asked); ferry verify refuses it naming the shard, the algorithm and
#    index.json, on 1 and 2 ranks, with each algorithm the one compared;
#    ferry.Loader(mds_hashes="check") on 2 ranks raises on every rank with
#    the shard named;
#  - zstd shards: the zip_data and the raw_data digest (of the decompressed
#    shard) changed in the index are each refused, naming which; a hashes
#    object that is not one of hex digests is refused at any open.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# FERRY_PYTHON, FERRY_TEST_TMPDIR, top_srcdir.  Exit 0 pass, 1 fail, 77
# skip (no Python package, Pillow or zstd program).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init mds_hashes
. "$top_srcdir/tests/python/common.sh"
need_module PIL "apt-get install python3-pil"
if ! command -v zstd >/dev/null 2>&1; then
  echo "SKIP: no zstd program (apt-get install zstd): it writes the zstd shards"
  exit 77
fi
fx=$tmp/fx
"$PY" "$top_srcdir/tests/mds/make_mds.py" --hashes "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_mds.py --hashes" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
checked='digests xxh64 of every shard match index.json (one algorithm per file, the fastest ferry computes. Not compared: md5, sha1, sha256. Not computed: blake2b)'

# ---- good digests --------------------------------------------------------
# verify_line DATASET NP LINE: ferry verify passes with LINE
verify_line() {
  $RUN_MPI $2 "$FERRY" verify "$fx/$1" --epochs 1 --batch-size 4 \
    >"$tmp/v.out" 2>&1 && grep -F "$3" "$tmp/v.out" >/dev/null &&
    grep '^ferry verify: PASS' "$tmp/v.out" >/dev/null &&
    ok "ferry verify $1 on $2 ranks: `grep '^[A-Z]* *hashes ' "$tmp/v.out" | cut -c1-90`" ||
    failed "ferry verify $1 on $2 ranks: no '$3'" "$tmp/v.out"
}
for np in 1 2; do
  verify_line hashed $np "PASS hashes       $checked"
  verify_line hashed_zstd $np "PASS hashes       $checked"
done
verify_line h_md5 2 "PASS hashes       digests md5 of every shard match index.json (one algorithm per file, the fastest ferry computes. Not compared: sha256)"
verify_line h_sha1 2 "PASS hashes       digests sha1 of every shard match index.json (one algorithm per file, the fastest ferry computes. Not computed: blake2b)"
verify_line h_sha256 2 "PASS hashes       digests sha256 of every shard match index.json (one algorithm per file, the fastest ferry computes)"
verify_line h_blake2b 2 "SKIP hashes       index.json lists no digest ferry computes (it lists blake2b, ferry computes md5, sha1, sha256, xxh64)"
"$FERRY" info "$fx/hashed_zstd" --mds-hashes check >"$tmp/info" 2>&1 &&
  grep -F "mds_hashes=check: $checked" "$tmp/info" >/dev/null &&
  ok "ferry info --mds-hashes check: the algorithms checked and not" ||
  failed "ferry info --mds-hashes check" "$tmp/info"
"$FERRY" info "$fx/hashed" >"$tmp/info0" 2>&1 && ! grep 'mds_hashes=check:' "$tmp/info0" >/dev/null &&
  ok "ferry info without the option: no digest checked" ||
  failed "ferry info without the option" "$tmp/info0"

# ---- damaged ---------------------------------------------------------------
# bad NAME FROM PYTHON: a copy of $fx/FROM as $tmp/NAME, changed by the
# statements (d: its path; m: make_mds; idx: its index, written back after)
bad() {
  rm -rf "$tmp/$1" && cp -r "$fx/$2" "$tmp/$1" &&
    "$PY" - "$tmp/$1" "$top_srcdir/tests/mds" <<EOF
import json, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import make_mds as m
idx = json.load(open(d + "/index.json"))
$3
json.dump(idx, open(d + "/index.json", "w"))
EOF
}
# a byte of column b of shard 2's sample 1 (bytes: the shard still parses)
flip="p = d + '/shard.00002.mds'
o = m.column_at(p, 1, 'b') + 3
data = bytearray(open(p, 'rb').read())
data[o] ^= 0x5a
open(p, 'wb').write(bytes(data))"
bad byte hashed "$flip"
for a in md5 sha1 sha256; do
  bad byte_$a h_$a "$flip"
done
bad zip hashed_zstd "idx['shards'][3]['zip_data']['hashes']['xxh64'] = '0' * 16"
bad raw hashed_zstd "idx['shards'][1]['raw_data']['hashes']['xxh64'] = 'ffffffffffffffff'"
bad nothex hashed "idx['shards'][4]['raw_data']['hashes']['md5'] = 'not hex'"

$RUN_MPI 2 "$FERRY" dump "$tmp/byte" --var b --epoch 0 --batch-size 4 >"$tmp/plain" 2>&1 &&
  $RUN_MPI 2 "$FERRY" verify "$tmp/byte" --epochs 1 --batch-size 4 \
    --mds-hashes ignore >"$tmp/ign" 2>&1 && ! grep '^PASS hashes' "$tmp/ign" >/dev/null &&
  grep 'summary:.* hashes SKIP' "$tmp/ign" >/dev/null &&
  ok "the changed byte: a plain open and verify --mds-hashes ignore serve it (nothing hashed)" ||
  failed "a plain open or verify --mds-hashes ignore of the changed shard" "$tmp/ign"
for np in 1 2; do
  expect_refusal -l "a changed byte, verify on $np ranks" -n "$tmp/byte/shard.00002.mds" 1 \
    "its xxh64 digest is|$tmp/byte/index.json|raw_data.hashes|damaged" \
    $RUN_MPI $np "$FERRY" verify "$tmp/byte" --epochs 1 --batch-size 4 || true
  expect_refusal -l "zip_data.hashes changed, verify on $np ranks" \
    -n "$tmp/zip/shard.00003.mds.zstd" 1 "its xxh64 digest is|says 0000000000|zip_data.hashes" \
    $RUN_MPI $np "$FERRY" verify "$tmp/zip" --epochs 1 --batch-size 4 || true
  expect_refusal -l "raw_data.hashes of a zstd shard changed, verify on $np ranks" \
    -n "$tmp/raw/shard.00001.mds.zstd" 1 "(decompressed): its xxh64 digest is|says ffffffffffffffff|raw_data.hashes" \
    $RUN_MPI $np "$FERRY" verify "$tmp/raw" --epochs 1 --batch-size 4 || true
  expect_refusal -l "a digest that is not hex, dump on $np ranks" -n "$tmp/nothex/index.json" 1 \
    "shard 4|raw_data.hashes is not an object" \
    $RUN_MPI $np "$FERRY" dump "$tmp/nothex" --var k --epoch 0 || true
done
for a in md5 sha1 sha256; do
  expect_refusal -l "a changed byte, $a compared, verify on 2 ranks" \
    -n "$tmp/byte_$a/shard.00002.mds" 1 "its $a digest is|raw_data.hashes" \
    $RUN_MPI 2 "$FERRY" verify "$tmp/byte_$a" --epochs 1 --batch-size 4 || true
done

# every rank of a Python job gets the error naming the shard
cat >"$tmp/open.py" <<'EOF'
import sys
import ferry
from mpi4py import MPI
r = MPI.COMM_WORLD.Get_rank()
with open("%s.%d" % (sys.argv[2], r), "w") as f:  # a file per rank: the
    try:                                          # lines do not interleave
        ferry.Loader(sys.argv[1], batch_size=4, mds_hashes="check").close()
        f.write("rank %d: opened\n" % r)
    except ferry.Error as e:
        f.write("rank %d: %s\n" % (r, e))
EOF
rm -f "$tmp/py.out".*
$RUN_MPI 2 "$PY" "$tmp/open.py" "$tmp/byte" "$tmp/py.out" >"$tmp/py.log" 2>&1
n=0
for r in 0 1; do
  grep "^rank $r: .*shard.00002.mds: its xxh64 digest is" "$tmp/py.out.$r" >/dev/null &&
    n=`expr $n + 1` || failed "ferry.Loader(mds_hashes='check') on rank $r" "$tmp/py.out.$r"
done
test $n = 2 && ok "ferry.Loader(mds_hashes='check') on 2 ranks: the shard named on each"
exit $fail
