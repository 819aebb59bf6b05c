#!/bin/sh
# anndata.sh - AnnData .h5ad files and Zarr stores (v2, v3 sharded) read
# as cells (issue 27, docs/singlecell.md): fixtures written by anndata
# itself (make_anndata.py; v3 by zarr_to_v3.py), then
#  - anndata_check.py on 1, 2 and 3 ranks: every served cell's CSR rows (X,
#    a layer, raw), obs columns, categorical codes and obsm equal to
#    anndata's, each cell once, equal batch counts; the older h5sparse
#    layout; a dense X;
#  - ferry info names the matrices' variables and why the rest is skipped;
#  - bad inputs refused by ferry dump on 2 ranks, and in anndata_check.py
#    with the same message on every rank: a CSC X, a file without X, an
#    indptr that decreases, indices and data of different lengths, a
#    shape that disagrees, a column index outside the matrix, a row
#    whose columns are out of order or named twice (.h5ad and Zarr);
#  - ferry verify and ferry info over the Zarr stores.
# The ferry tool's part runs in every build (the ASan tier too); the
# Python part where the extension is built.  Skips (77) without a Python
# with numpy, h5py and anndata to write the fixtures.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init anndata
PYW=${PYTHON_NUMPY:-/usr/bin/python3}
"$PYW" -c "import anndata, scipy, h5py" >/dev/null 2>&1 || {
  echo "SKIP: python3-anndata, python3-scipy or python3-h5py missing (./bootstrap deps installs them)"
  exit 77
}
fx=$tmp/fx
"$PYW" "$top_srcdir/tests/anndata/make_anndata.py" "$fx" >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_anndata.py"
  cat "$tmp/make.out"
  exit 1
}
"$FERRY" info "$fx/a.h5ad" --save-manifest "$tmp/m.json" >/dev/null 2>&1 || {
  echo "FAIL: ferry info --save-manifest of an AnnData file"
  exit 1
}
status=0
if test -n "${FERRY_PYTHON:-}" && test -n "${FERRY_PY_EXT:-}" &&
   test -f "$FERRY_PYTHONPATH/ferry/_ferry$FERRY_PY_EXT" &&
   "$FERRY_PYTHON" -c "import anndata, torch, mpi4py" >/dev/null 2>&1; then
  for np in 1 2 3; do
    if PYTHONPATH=$FERRY_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH} \
       PYTHONDONTWRITEBYTECODE=1 $RUN_MPI $np "$FERRY_PYTHON" \
         "$top_srcdir/tests/anndata/anndata_check.py" "$fx" "$tmp/m.json" \
         >"$tmp/check.$np" 2>&1; then
      tail -1 "$tmp/check.$np"
    else
      echo "FAIL: anndata_check.py on $np ranks"
      cat "$tmp/check.$np"
      status=1
    fi
  done
else
  echo "note: anndata_check.py not run: the Python extension is not built here (or its Python lacks anndata, torch, mpi4py)"
fi
# every cell once, equal batches, the same rows on 1 and 3 ranks (the tool)
$RUN_MPI 3 "$FERRY" verify "$fx/a.h5ad" \
  --vars X/indices,X/data,layers/counts/indices,layers/counts/data,raw/X/indices,raw/X/data,obs/score \
  --batch-size 7 --tail partial --shuffle block --block-size 8 \
  >"$tmp/verify" 2>&1
if grep '^PASS exactly-once' "$tmp/verify" >/dev/null &&
   grep '^ferry verify: PASS' "$tmp/verify" >/dev/null; then
  echo "ok: ferry verify on 3 ranks: `grep '^PASS exactly-once' "$tmp/verify" | head -1`"
else
  echo "FAIL: ferry verify of an AnnData file"
  cat "$tmp/verify"
  status=1
fi
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
# sparse=dense in the library, through the tool (the ASan tier runs it)
$RUN_MPI 2 "$FERRY" verify "$fx/a.h5ad" --vars X/indices,X/data,obs/score \
  --sparse dense --genes g5,g1,40 --sparse-dtype float16 --batch-size 5 \
  --tail partial >"$tmp/verify.dense" 2>&1
if grep '^PASS exactly-once' "$tmp/verify.dense" >/dev/null &&
   grep '^ferry verify: PASS' "$tmp/verify.dense" >/dev/null; then
  echo "ok: ferry verify --sparse dense --genes: `grep '^PASS exactly-once' "$tmp/verify.dense" | head -1`"
else
  echo "FAIL: ferry verify --sparse dense"
  cat "$tmp/verify.dense"
  status=1
fi
# ferry verify's sparse check: every CSR row sorted, inside the matrix
if grep '^PASS sparse .*rows of 3 sparse matrices' "$tmp/verify" >/dev/null; then
  echo "ok: `grep '^PASS sparse' "$tmp/verify" | head -1`"
else
  echo "FAIL: ferry verify's sparse check"
  cat "$tmp/verify"
  status=1
fi
# AnnData Zarr stores: v2 (anndata's own) and v3 with sharded matrices
for st in a.zarr a3.zarr; do
  $RUN_MPI 3 "$FERRY" verify "$fx/$st" \
    --vars X/indices,X/data,raw/X/indices,raw/X/data,obs/umis/values,obs/umis/mask \
    --batch-size 7 --tail partial --shuffle block --block-size 8 \
    >"$tmp/verify.$st" 2>&1
  if grep '^PASS exactly-once' "$tmp/verify.$st" >/dev/null &&
     grep '^PASS sparse .*rows of 2 sparse matrices' "$tmp/verify.$st" >/dev/null &&
     grep '^ferry verify: PASS' "$tmp/verify.$st" >/dev/null; then
    echo "ok: ferry verify $st on 3 ranks: `grep '^PASS sparse' "$tmp/verify.$st" | head -1`"
  else
    echo "FAIL: ferry verify of AnnData Zarr store $st"
    cat "$tmp/verify.$st"
    status=1
  fi
done
"$FERRY" info "$fx/a3.zarr" >"$tmp/info3" 2>&1
if grep '^samples  *301$' "$tmp/info3" >/dev/null &&
   grep '^sparse  *X/indices: rows of a matrix of 301 x 57' "$tmp/info3" >/dev/null &&
   grep '^categories  *obs/cell_type/codes: 3 (B, NK, T); code -1: missing' "$tmp/info3" >/dev/null &&
   grep '^storage  *X/indices: .*in shards of' "$tmp/info3" >/dev/null &&
   grep 'skipped X/indptr (the row pointers of a CSR matrix' "$tmp/info3" >/dev/null; then
  echo "ok: ferry info of a Zarr v3 AnnData store: 301 cells, sharded CSR rows, the categories"
else
  echo "FAIL: ferry info of a Zarr v3 AnnData store"
  cat "$tmp/info3"
  status=1
fi
# a string column named in vars: refused, saying why (h5ad and Zarr)
for st in a.h5ad a3.zarr; do
  $RUN_MPI 2 "$FERRY" dump "$fx/$st" --vars X/indices,obs/barcode \
    >"$tmp/string.$st" 2>&1
  if grep "variable 'obs/barcode' not found.*obs/barcode (a string column (not served: make it categorical))" "$tmp/string.$st" >/dev/null; then
    echo "ok: a string column in vars ($st): refused, saying why"
  else
    echo "FAIL: a string column in vars ($st)"
    cat "$tmp/string.$st"
    status=1
  fi
done
# a categorical code past the categories: refused at the read, naming the
# cell, on every rank (.h5ad and Zarr)
for st in bad_codes.h5ad bad_codes.zarr; do
  $RUN_MPI 2 "$FERRY" dump "$fx/$st" --vars obs/cell_type/codes \
    --batch-size 4 --shuffle none >"$tmp/codes.$st" 2>&1
  if grep "/obs/cell_type/codes, rank 0, offset 12: code 7 of cell 12 outside \[-1, 3)" "$tmp/codes.$st" >/dev/null; then
    echo "ok: codes $st: `grep 'code 7 of cell 12' "$tmp/codes.$st" | head -1`"
  else
    echo "FAIL: a code past the categories ($st)"
    cat "$tmp/codes.$st"
    status=1
  fi
done
refused csc.zarr csc.zarr "X is a CSC matrix"
refused indptr.zarr bad_indptr.zarr "indptr decreases (entry 8"
refused shape.zarr bad_shape.zarr "indptr has 302 entries, its 302 rows need 303"
refused index.zarr bad_index.zarr "array /X/indices, rank ., offset 400: column index 62 outside \[0, 57)"
refused csc csc.h5ad "X is a CSC matrix"
refused noX noX.h5ad "an AnnData file without X"
refused indptr bad_indptr.h5ad "indptr decreases (entry 8"
refused length bad_len.h5ad "data has .* values and indices"
refused index bad_index.h5ad "column index 62 outside \[0, 57)"
# a non-canonical row (two columns out of order, a column twice): refused
# at the read (decision 0068; on every rank: anndata_check.py)
refused unsorted.h5ad unsorted.h5ad "offset 4: cell 0 names column [0-9]* after column [0-9]*: its column indices must increase"
refused unsorted.zarr unsorted.zarr "offset [0-9]*: cell [0-9]* names column [0-9]* after column [0-9]*: its column indices must increase"
refused twice.h5ad twice.h5ad "cell 50 names column \([0-9]*\) after column \\1:"
exit $status
