#!/bin/sh
# anndata.sh - AnnData .h5ad files read as cells (issue 27,
# docs/singlecell.md): fixtures written by anndata itself
# (make_anndata.py), then
#  - anndata_check.py on 1, 2 and 3 ranks: every served cell's CSR rows (X,
#    a layer, raw), obs columns, categorical codes and obsm equal to
#    anndata's, each cell once, equal batch counts; the older h5sparse
#    layout; a dense X;
#  - ferry info names the matrices' variables and why the rest is skipped;
#  - bad inputs refused by ferry dump on 2 ranks, and in anndata_check.py
#    with the same message on every rank: a CSC X, a file without X, an
#    indptr that decreases, indices and data of different lengths.
# Skips (77) without Python, numpy, h5py or anndata.
. "$top_srcdir/tests/python/common.sh"
"$PY" -c "import anndata, scipy, h5py" >/dev/null 2>&1 || {
  echo "SKIP: python3-anndata, python3-scipy or python3-h5py missing (./bootstrap deps installs them)"
  exit 77
}
fx=$tmp/fx
"$PY" "$top_srcdir/tests/anndata/make_anndata.py" "$fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_anndata.py"
  cat "$tmp/make.out"
  exit 1
}
"$FERRY" info "$fx/a.h5ad" --save-manifest "$tmp/m.json" >/dev/null 2>&1 || {
  echo "FAIL: ferry info --save-manifest of an AnnData file"
  exit 1
}
status=0
for np in 1 2 3; do
  if $RUN_MPI $np "$PY" "$top_srcdir/tests/anndata/anndata_check.py" "$fx" "$tmp/m.json" \
       >"$tmp/check.$np" 2>&1; then
    tail -1 "$tmp/check.$np"
  else
    echo "FAIL: anndata_check.py on $np ranks"
    cat "$tmp/check.$np"
    status=1
  fi
done
"$FERRY" info "$fx/a.h5ad" >"$tmp/info" 2>&1
if grep '^samples  *301$' "$tmp/info" >/dev/null &&
   grep '^  X/indices  ' "$tmp/info" >/dev/null &&
   grep '^  raw/X/data  ' "$tmp/info" >/dev/null &&
   grep 'skipped /X/indptr (the row pointers of a CSR matrix' "$tmp/info" >/dev/null &&
   grep "/obs/donor/categories (the categories of a categorical column" "$tmp/info" >/dev/null &&
   grep '^sparse  *X/indices: rows of a matrix of 301 x 57' "$tmp/info" >/dev/null &&
   grep '^categories  *obs/cell_type/codes: 3 (B, NK, T); code -1: missing' "$tmp/info" >/dev/null; then
  echo "ok: ferry info: 301 cells, the CSR variables and their matrices, the categories, the skipped datasets named"
else
  echo "FAIL: ferry info of an AnnData file"
  cat "$tmp/info"
  status=1
fi
refused() { # NAME FILE WORDS
  $RUN_MPI 2 "$FERRY" dump "$fx/$2" --vars X/indices,X/data >"$tmp/$1" 2>&1
  if grep "$3" "$tmp/$1" >/dev/null; then
    echo "ok: $1: `grep "$3" "$tmp/$1" | head -1`"
  else
    echo "FAIL: $1: want '$3'"
    cat "$tmp/$1"
    status=1
  fi
}
refused csc csc.h5ad "X is a CSC matrix"
refused noX noX.h5ad "an AnnData file without X"
refused indptr bad_indptr.h5ad "indptr decreases (entry 8"
refused length bad_len.h5ad "data has .* values and indices"
exit $status
