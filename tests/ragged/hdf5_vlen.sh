#!/bin/sh
# hdf5_vlen.sh - HDF5 variable-length datasets as ragged variables
# (src/backends/hdf5_vlen.c, docs/ragged.md), files written by h5py
# (tests/fixtures/make_h5_vlen.py: vlen int32 chunked with gzip, vlen
# float64, variable-length UTF-8 strings, a dense int64 beside them):
#
#  - `ferry dump --row-hash` of each on 1 rank in order and 2 and 3 ranks
#    shuffled: every sample's length and values those h5py wrote
#    (tests/fixtures/dump_compare.py, FILE.npz::ragged);
#  - `ferry info` shows the three ragged variables and their lengths;
#  - `ferry verify` on 3 ranks (batches, exactly once, determinism), with
#    max_tokens and offsets_dtype=int32 too; tokens and mask (the same
#    lengths) share one offsets array (info says so, verify checks it);
#  - a 2-D vlen dataset and a vlen of a compound are skipped with the
#    reason (vars naming one is refused), io=collective refused for ragged
#    variables, a truncated file refused with HDF5's reason.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no hdf5 backend, no h5py).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init hdf5_vlen
if ! "$FERRY" --version | grep '^backends:.* hdf5' >/dev/null; then
  echo "SKIP: ferry was built without HDF5"
  exit 77
fi
if test -z "${PYTHON_NUMPY:-}" || ! "$PYTHON_NUMPY" -c 'import h5py' 2>/dev/null; then
  echo "SKIP: no Python with NumPy and h5py: the fixtures are written by h5py"
  exit 77
fi
mk() {
  "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_h5_vlen.py" "$@" \
    >>"$tmp/make.log" 2>&1 || {
    failed "make_h5_vlen.py $*" "$tmp/make.log"
    exit 1
  }
}
f=$tmp/v.h5
mk "$f" --rows 500 --seed 3
mk "$tmp/odd.h5" --odd

# ---- dumps against h5py's values -------------------------------------------
BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
for v in tokens mask feat text; do
  dump_queue "" "$v ordered" 1 ordered "$f" $v \
    "--shuffle none --shuffle-buffer 0 --chunk-samples 64" "$f.$v.npz::ragged"
  dump_queue "" "$v shuffled" 2 spread "$f" $v \
    "--seed 4 --chunk-samples 50 --threads 3" "$f.$v.npz::ragged"
  dump_queue "" "$v block" 3 spread "$f" $v \
    "--seed 5 --shuffle block --block-size 9" "$f.$v.npz::ragged"
done
dump_queue "" "label beside them" 3 spread "$f" label "--seed 6" "$f.label.npy"
dump_run
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the values h5py wrote: /'
grep -v '^ok' "$tmp/compare.out"

# ---- ferry info -------------------------------------------------------------
if "$FERRY" info "$f" >"$tmp/info.out" 2>&1 &&
   grep '^  tokens  *int32  *little (500, \*)' "$tmp/info.out" >/dev/null &&
   grep '^  text  *uint8 .*(500, \*)' "$tmp/info.out" >/dev/null &&
   grep '^ragged  *feat: lengths 0 to 4 (mean 2.0), 1000 rows of 8 bytes' "$tmp/info.out" >/dev/null &&
   grep '^ragged  *tokens: lengths 0 to' "$tmp/info.out" >/dev/null &&
   grep "^ragged  *tokens: the lengths of mask in every sample: its batches share mask's offsets" "$tmp/info.out" >/dev/null; then
  ok "ferry info: `grep -c '^ragged' "$tmp/info.out"` ragged lines, tokens grouped with mask"
else
  failed "ferry info should show tokens, feat and text as ragged" "$tmp/info.out"
fi

# ---- ferry verify -------------------------------------------------------------
# (verify also checks that tokens and mask share one offsets array, and
# with offsets_dtype=int32 that the int32 copy is there and equal)
expect_verify 3 "$f" --batch-size 16 --tail pad
expect_verify 3 "$f" --max-tokens 200 --batch-size 32 --tail partial --vars tokens,label
expect_verify 3 "$f" --batch-size 24 --offsets-dtype int32 --tail partial

# ---- what is skipped or refused -----------------------------------------------
if "$FERRY" info "$tmp/odd.h5" >"$tmp/odd.out" 2>&1 &&
   grep 'skipped .*/cplx (a compound type' "$tmp/odd.out" >/dev/null &&
   grep '/grid (a variable-length type in more than one dimension' "$tmp/odd.out" >/dev/null; then
  ok "a 2-D vlen and a vlen of a compound skipped, with the reason"
else
  failed "grid and cplx should be skipped with their reasons" "$tmp/odd.out"
fi
expect_refusal -l "vars=grid" 1 "variable 'grid' not found" \
  "$FERRY" info "$tmp/odd.h5" --vars grid
expect_refusal -l "io=collective" 1 "io=collective does not serve them" \
  $RUN_MPI 2 "$FERRY" info "$f" --io collective
head -c 3000 "$f" >"$tmp/cut.h5"
expect_refusal -l "a truncated file" -n "$tmp/cut.h5" 1 \
  "HDF5 cannot open the file" "$FERRY" info "$tmp/cut.h5"
exit $fail
