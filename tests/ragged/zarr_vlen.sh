#!/bin/sh
# zarr_vlen.sh - Zarr v2 variable-length arrays as ragged variables
# (src/backends/zarr/vlen.c, docs/ragged.md), stores written by zarr-python
# with numcodecs' object codecs (tests/fixtures/make_zarr_vlen.py:
# VLenArray('<i4') with zstd, VLenUTF8 with blosc, VLenBytes uncompressed,
# chunks of 64 rows with a partial last one, a dense int64 beside them):
#
#  - `ferry dump --row-hash` of each on 1 rank in order and on 2 and 3
#    ranks shuffled: every item's length and values those zarr-python
#    wrote (tests/fixtures/dump_compare.py, FILE.npz::ragged);
#  - `ferry info` shows the ragged variables; `ferry verify` on 3 ranks
#    (with max_tokens too);
#  - a Pickle-coded object array and a 2-D vlen array are skipped with the
#    reason; zarr_reader=netcdf refused for a vlen array; a chunk file
#    removed or cut refused naming it;
#  - Zarr v3 (tests/fixtures/make_zarr3_vlen.py, zarr-python 3's data types
#    "string" and "bytes" with its vlen-utf8 / vlen-bytes codecs, the
#    chunks framed by numcodecs itself): zstd, gzip + crc32c, an absent
#    chunk read as empty items, sharded with the index at the end and at
#    the start and an empty index entry; the strings read first by zarrita
#    (an independent v3 reader; not the index at the start, which it lacks)
#    and compared with what was written, then
#    dumped on 1 and 3 ranks and compared; ferry verify with max_tokens; a
#    bad crc32c, a string data_type with the bytes codec and a fill_value
#    that is not empty refused.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no zarr-python).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init zarr_vlen
if test -z "${PYTHON_NUMPY:-}" ||
   ! "$PYTHON_NUMPY" -c 'import zarr, numcodecs' 2>/dev/null; then
  echo "SKIP: no Python with zarr-python and numcodecs: the fixtures are written by them"
  exit 77
fi
mk() {
  "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_zarr_vlen.py" "$@" \
    >>"$tmp/make.log" 2>&1 || {
    failed "make_zarr_vlen.py $*" "$tmp/make.log"
    exit 1
  }
}
s=$tmp/v.zarr
mk "$s" --rows 400 --seed 4
mk "$tmp/odd.zarr" --odd

# ---- dumps against zarr-python's values ------------------------------------
BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
for v in tokens text blob; do
  dump_queue "" "$v ordered" 1 ordered "$s" $v \
    "--shuffle none --shuffle-buffer 0 --chunk-samples 64" "$s.$v.npz::ragged"
  dump_queue "" "$v shuffled" 2 spread "$s" $v \
    "--seed 4 --chunk-samples 64 --threads 3" "$s.$v.npz::ragged"
  dump_queue "" "$v block" 3 spread "$s" $v \
    "--seed 5 --shuffle block --block-size 9" "$s.$v.npz::ragged"
done
dump_queue "" "label beside them" 3 spread "$s" label "--seed 6" "$s.label.npy"
dump_run
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the values zarr-python wrote: /'
grep -v '^ok' "$tmp/compare.out"

# ---- ferry info, ferry verify -------------------------------------------------
if "$FERRY" info "$s" >"$tmp/info.out" 2>&1 &&
   grep '^  tokens  *int32  *little (400, \*)' "$tmp/info.out" >/dev/null &&
   grep '^  text  *uint8 .*(400, \*)' "$tmp/info.out" >/dev/null &&
   grep '^ragged  *blob: lengths 0 to 10 (mean ' "$tmp/info.out" >/dev/null &&
   grep 'tokens: chunks (64,), vlen-array + zstd(3)' "$tmp/info.out" >/dev/null; then
  ok "ferry info: `grep -c '^ragged' "$tmp/info.out"` ragged lines"
else
  failed "ferry info should show tokens, text and blob as ragged" "$tmp/info.out"
fi
expect_verify 3 "$s" --batch-size 16 --tail pad
expect_verify 3 "$s" --max-tokens 150 --batch-size 32 --tail partial --vars tokens,label

# ---- what is skipped or refused -----------------------------------------------
if "$FERRY" info "$tmp/odd.zarr" >"$tmp/odd.out" 2>&1 &&
   grep "pyobj: codec 'pickle' cannot be decoded" "$tmp/odd.out" >/dev/null &&
   grep 'grid: a variable-length array of more than one dimension' "$tmp/odd.out" >/dev/null; then
  ok "a Pickle object array and a 2-D vlen array skipped, with the reasons"
else
  failed "pyobj and grid should be skipped with their reasons" "$tmp/odd.out"
fi
if "$FERRY" --version | grep '^features:.* nczarr' >/dev/null; then
  expect_refusal -l "zarr_reader=netcdf" 1 "netCDF-C does not read" \
    "$FERRY" info "$s" --zarr-reader netcdf --vars tokens
fi
cp -r "$s" "$tmp/cut.zarr"
head -c 20 "$s/tokens/3" >"$tmp/cut.zarr/tokens/3"
expect_refusal -l "a cut chunk" -n "tokens/3" 1 "cannot decode it" \
  "$FERRY" info "$tmp/cut.zarr" --vars tokens
rm "$tmp/cut.zarr/tokens/3"
expect_refusal -l "a missing chunk" -n "tokens/3" 1 "every chunk must be written" \
  "$FERRY" info "$tmp/cut.zarr" --vars tokens

# ---- Zarr v3: string and bytes ------------------------------------------------
v3=$tmp/v3
mk3() {
  "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_zarr3_vlen.py" "$v3" \
    >>"$tmp/make.log" 2>&1 || {
    failed "make_zarr3_vlen.py" "$tmp/make.log"
    exit 1
  }
}
mk3
nm=${FERRY_ZARRITA_DIR:-$top_srcdir/tests/node/node_modules}
if command -v node >/dev/null 2>&1 && test -d "$nm/@zarrita/storage"; then
  # zarrita first: the stores are what zarr-python 3 writes and reads
  if node --input-type=module - "$nm" "$v3" >"$tmp/zr.json" 2>"$tmp/zr.err" <<'JS'
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const [nm, dir] = process.argv.slice(2);
const zarr = await import(pathToFileURL(join(nm, "zarrita/dist/src/index.js")).href);
const fs = (await import(pathToFileURL(join(nm, "@zarrita/storage/dist/src/fs.js")).href)).default;
const out = {};
for (const name of ["text", "shard"]) { // not shard_start: zarrita 0.7
  // reads a shard's index at its end only
  const arr = await zarr.open.v3(zarr.root(new fs(join(dir, name + ".zarr"))), { kind: "array" });
  out[name] = Array.from((await zarr.get(arr)).data);
}
console.log(JSON.stringify(out));
JS
  then
    if "$PYTHON_NUMPY" -c '
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sys.exit(0 if got and all(got[k] == want[k] for k in got) else 1)' "$tmp/zr.json" "$v3/strings.json"; then
      ok "zarrita reads the v3 string stores (zstd; sharded, index at the end) as written (the index at the start: ferry's dumps alone, zarrita 0.7 lacks it)"
    else
      failed "zarrita should read the v3 string stores as they were written" "$tmp/zr.json"
    fi
  else
    failed "zarrita could not read the v3 string stores" "$tmp/zr.err"
  fi
else
  echo "note: no node or zarrita ($nm): the v3 stores are checked by ferry's dumps alone"
fi
: >"$jobs"
njobs=0
for v in text blob shard shard_start; do
  dump_queue "" "v3 $v ordered" 1 ordered "$v3/$v.zarr" $v \
    "--shuffle none --shuffle-buffer 0" "$v3/$v.npz::ragged"
  dump_queue "" "v3 $v shuffled" 3 spread "$v3/$v.zarr" $v \
    "--seed 8 --threads 2" "$v3/$v.npz::ragged"
done
dump_run
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: v3 dumps equal to the values written: /'
grep -v '^ok' "$tmp/compare.out"
if "$FERRY" info "$v3/shard.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'shard: chunks (32,), vlen-utf8 + zstd(3) + crc32c, in shards of (128,)' "$tmp/info.out" >/dev/null; then
  ok "ferry info of a sharded v3 string array"
else
  failed "ferry info should show the sharded v3 string array's codecs" "$tmp/info.out"
fi
expect_verify 3 "$v3/shard.zarr" --max-tokens 200 --batch-size 32 --tail partial
cp -r "$v3/blob.zarr" "$tmp/badcrc.zarr"
"$PYTHON_NUMPY" -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-1] ^= 0xff
open(p, "wb").write(b)' "$tmp/badcrc.zarr/c/3"
expect_refusal -l "v3: a bad crc32c" -n "badcrc.zarr/c/3" 1 "crc32c" \
  "$FERRY" info "$tmp/badcrc.zarr"
for c in 'string|"vlen-utf8"|"bytes"|without a vlen-utf8' \
         'string|"fill_value": ""|"fill_value": "x"|fill_value is not empty'; do
  old=`echo "$c" | cut -d'|' -f2` new=`echo "$c" | cut -d'|' -f3` why=`echo "$c" | cut -d'|' -f4`
  rm -rf "$tmp/odd3.zarr"
  cp -r "$v3/text.zarr" "$tmp/odd3.zarr"
  sed "s/$old/$new/" "$v3/text.zarr/zarr.json" >"$tmp/odd3.zarr/zarr.json"
  expect_refusal -l "v3: $why" -n odd3.zarr 1 "$why" "$FERRY" info "$tmp/odd3.zarr"
done
exit $fail
