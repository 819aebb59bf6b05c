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
#    removed or cut refused naming it.
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
exit $fail
