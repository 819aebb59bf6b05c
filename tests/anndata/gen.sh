#!/bin/sh
# gen.sh - `ferry gen --anndata` (issue 27, docs/singlecell.md, "Synthetic
# files") and ferry verify's content check of what it serves from one:
#  - a small file (400 cells x 2000 genes) in each data dtype: ferry info
#    reads it as AnnData cells; ferry verify on 2 ranks passes, its content
#    check over every cell (ragged X, and sparse=dense);
#  - gen_check.py: anndata's read_h5ad gives the shape, and the formula,
#    computed again in Python, gives every column and value of the first
#    300 cells, the codes, categories, n_counts and names; the attributes
#    are anndata 0.8's (variable-length UTF-8 strings);
#  - one value of X, one code, then a category's name changed with h5py:
#    ferry verify fails naming the cell (the category);
#  - bad arguments refused with the reason (--genes 0, --density 2, ...), a
#    missing directory named, an existing file ferry did not write not
#    replaced.
# Skips (77) in a build without HDF5; the Python part skips (77, after the
# tool's part) without a Python with anndata and h5py.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init anndata_gen
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
status=0
f=$tmp/g.h5ad
"$FERRY" gen "$f" --anndata --samples 400 --genes 2000 --seed 7 \
  --density 0.05 --categories 6 >"$tmp/gen.out" 2>&1
if grep 'built without HDF5' "$tmp/gen.out" >/dev/null; then
  echo "SKIP: `cat "$tmp/gen.out"`"
  exit 77
fi
if grep '^ferry gen: wrote 400 cells x 2000 genes, an AnnData file' "$tmp/gen.out" >/dev/null; then
  echo "ok: `cat "$tmp/gen.out"`"
else
  echo "FAIL: ferry gen --anndata"
  cat "$tmp/gen.out"
  exit 1
fi
"$FERRY" info "$f" >"$tmp/info" 2>&1
if grep '^samples  *400$' "$tmp/info" >/dev/null &&
   grep '^sparse  *X/indices: rows of a matrix of 400 x 2000' "$tmp/info" >/dev/null &&
   grep '^categories  *obs/cell_type/codes: 6 (type0, type1, type2, type3, type4, type5); code -1: missing' "$tmp/info" >/dev/null &&
   grep '^  obs/n_counts  *float32' "$tmp/info" >/dev/null &&
   grep '^storage  *X/data: contiguous' "$tmp/info" >/dev/null; then
  echo "ok: ferry info: 400 cells, X's rows, the categories, n_counts, contiguous"
else
  echo "FAIL: ferry info of a ferry gen --anndata file"
  cat "$tmp/info"
  status=1
fi
verify_pass() { # NAME FILE OPTIONS...: ferry verify on 2 ranks passes
  name=$1 file=$2
  shift 2
  $RUN_MPI 2 "$FERRY" verify "$file" --epochs 1 "$@" >"$tmp/v.$name" 2>&1
  if grep '^PASS content .*cells checked: ' "$tmp/v.$name" >/dev/null &&
     grep '^ferry verify: PASS' "$tmp/v.$name" >/dev/null; then
    echo "ok: $name: `grep '^PASS content' "$tmp/v.$name"`"
  else
    echo "FAIL: ferry verify $name"
    cat "$tmp/v.$name"
    status=1
  fi
}
verify_pass float32 "$f" --batch-size 7 --tail partial --shuffle block --block-size 8
grep 'epoch 0: 400 cells checked: X/indices, X/data, obs/cell_type/codes, obs/n_counts' "$tmp/v.float32" >/dev/null || {
  echo "FAIL: the content check did not cover every cell and variable"
  status=1
}
verify_pass dense "$f" --sparse dense --batch-size 5 --tail partial
grep 'cells checked: X (dense)' "$tmp/v.dense" >/dev/null || {
  echo "FAIL: sparse=dense: the dense rows not checked"
  status=1
}
for dt in float64 int32; do
  "$FERRY" gen "$tmp/$dt.h5ad" --anndata --samples 150 --genes 300 --seed 1 \
    --density 0.3 --dtype $dt >/dev/null 2>&1 || {
    echo "FAIL: ferry gen --anndata --dtype $dt"
    status=1
  }
  verify_pass $dt "$tmp/$dt.h5ad" --batch-size 4 --tail partial
done

# bad arguments, an existing file ferry did not write
refused() { # NAME WORDS ARGS...
  name=$1 words=$2
  shift 2
  if "$FERRY" gen "$tmp/bad.h5ad" "$@" >"$tmp/bad.$name" 2>&1; then
    echo "FAIL: $name accepted"
    status=1
  elif grep "$words" "$tmp/bad.$name" >/dev/null && test ! -e "$tmp/bad.h5ad"; then
    echo "ok: $name: `head -1 "$tmp/bad.$name"`"
  else
    echo "FAIL: $name: want '$words'"
    cat "$tmp/bad.$name"
    status=1
  fi
}
refused genes0 "bad value '0' for --genes" --anndata --samples 5 --genes 0
refused density2 "bad value '2' for --density: expected a number in (0, 1]" --anndata --samples 5 --genes 5 --density 2
refused dtype "bad value 'int8' for --dtype" --anndata --samples 5 --genes 5 --dtype int8
refused nogenes "needs --samples N (the cells) and --genes G" --anndata --samples 5
refused parts "no --var, --parts" --anndata --samples 5 --genes 5 --parts 2
refused noanndata "options of --anndata" --samples 5 --genes 5
"$FERRY" gen "$tmp/no/such/dir.h5ad" --anndata --samples 5 --genes 5 >"$tmp/nodir" 2>&1
if grep "cannot create .*/no/such/dir.h5ad.tmp: No such file or directory" "$tmp/nodir" >/dev/null; then
  echo "ok: `cat "$tmp/nodir"`"
else
  echo "FAIL: a file in a missing directory"
  cat "$tmp/nodir"
  status=1
fi
echo "not hdf5" >"$tmp/other.h5ad"
if "$FERRY" gen "$tmp/other.h5ad" --anndata --samples 5 --genes 5 >"$tmp/other" 2>&1 ||
   ! grep "exists and was not written by 'ferry gen --anndata'" "$tmp/other" >/dev/null ||
   test "`cat "$tmp/other.h5ad"`" != "not hdf5"; then
  echo "FAIL: a file ferry did not write was replaced"
  cat "$tmp/other"
  status=1
else
  echo "ok: `cat "$tmp/other"`"
fi

# the Python part: anndata reads it; h5py changes it
"$PYW" -c "import anndata, h5py" >/dev/null 2>&1 || {
  echo "SKIP: python3-anndata or python3-h5py missing (./bootstrap deps installs them): the file not read by anndata, the corruption not tested"
  test $status = 0 && exit 77
  exit $status
}
if "$PYW" "$top_srcdir/tests/anndata/gen_check.py" "$f" 400 2000 0.05 7 float32 6 >"$tmp/check" 2>&1; then
  cat "$tmp/check"
else
  echo "FAIL: gen_check.py"
  cat "$tmp/check"
  status=1
fi
for dt in float64 int32; do
  "$PYW" "$top_srcdir/tests/anndata/gen_check.py" "$tmp/$dt.h5ad" 150 300 0.3 1 $dt 8 >"$tmp/check.$dt" 2>&1 || {
    echo "FAIL: gen_check.py --dtype $dt"
    cat "$tmp/check.$dt"
    status=1
  }
done
corrupt() { # NAME WORDS PYTHON: the file changed, then verify must fail
  name=$1 words=$2
  cp "$f" "$tmp/$name.h5ad"
  "$PYW" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); $3" "$tmp/$name.h5ad"
  $RUN_MPI 2 "$FERRY" verify "$tmp/$name.h5ad" --epochs 1 --batch-size 7 \
    --tail partial >"$tmp/v.$name" 2>&1
  if grep "^FAIL content .*$words" "$tmp/v.$name" >/dev/null &&
     grep '^ferry verify: FAIL' "$tmp/v.$name" >/dev/null; then
    echo "ok: $name: `grep '^FAIL content' "$tmp/v.$name"`"
  else
    echo "FAIL: ferry verify missed $name: want '$words'"
    cat "$tmp/v.$name"
    status=1
  fi
}
# cell 123's second value plus one, and cell 45's code changed
corrupt value "cell 123: value 1 of its row of X: expected column" \
  "p = f['X/indptr'][123]; d = f['X/data']; d[p + 1] = d[p + 1] + 1"
corrupt code "cell 45: obs/cell_type/codes: expected" \
  "c = f['obs/cell_type/codes']; c[45] = (c[45] + 2) % 6"
corrupt category "obs/cell_type/codes: category 2 is 'typeX', expected 'type2'" \
  "f['obs/cell_type/categories'][2] = 'typeX'"
exit $status
