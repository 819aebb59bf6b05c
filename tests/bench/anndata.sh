#!/bin/sh
# anndata.sh - the benchmark of AnnData files (docs/singlecell.md,
# docs/performance.md "AnnData", issue 27).
#
# usage: tests/bench/anndata.sh BUILD_DIR WORK_DIR [CELLS [GENES [DENSITY]]]
#
# Writes (once) WORK_DIR/cells.h5ad: an AnnData file of CELLS (default
# 150,000) cells x GENES (20,000) genes, a CSR X of float32 values and
# int32 column indices at DENSITY (0.05): 150 million values, 1.2 GB of
# non-zeros (values and indices); its obs and var written by anndata, X by
# h5py in blocks of cells (anndata would hold the whole matrix); with
# WRITER=ferry in the environment, by `ferry gen --anndata` instead (the
# same layout and size, values 1..255, written in C: much faster for a
# big file; docs/singlecell.md, "Synthetic files").  Then, in
# one process each (per-rank throughput), batches of 64 cells in blocks of
# 64 shuffled (scDataset's BlockShuffling), three rounds alternated, for
# about 10 s each:
#   scdataset: anndata backed="r", each batch's indices sorted, X[idx]
#              then .toarray() (the scDataset pattern, done with anndata)
#   ferry_dense: ferry.torch, sparse="dense" float32 (the same dense rows)
#   ferry_csr: ferry.torch, sparse="csr" (torch.sparse_csr_tensor)
#   ferry_bench: ferry bench of X/indices and X/data (the C loader alone),
#              cells/s and MiB/s
#   ferry_bench_npy: ferry bench of a dense .npy holding as many bytes
#              (float32 rows, WORK_DIR/dense_same_bytes.npy): MiB/s, to
#              compare the sparse rows' bytes/s with the dense path's
#   ferry_bench_dense: the same with sparse=dense (float32 rows made by the
#              library; chunks of 4096 cells)
# Prints cells/s for each.  The file is read from the page cache (it is
# read once before).
set -eu
build=$(cd "$1" && pwd)
work=$2
cells=${3:-150000}
genes=${4:-20000}
density=${5:-0.05}
writer=${WRITER:-python}
mkdir -p "$work"
f=$work/cells.h5ad
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
if test ! -f "$f" && test "$writer" = ferry; then
  "$build/ferry" gen "$f" --anndata --samples "$cells" --genes "$genes" \
    --density "$density" --seed 1 --categories 3
elif test ! -f "$f"; then
  /usr/bin/python3 - "$f" "$cells" "$genes" "$density" <<'PY'
import sys, warnings
warnings.filterwarnings("ignore")
import anndata, h5py, numpy as np, pandas as pd, scipy.sparse as sp
f, n, g, dens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rng = np.random.default_rng(1)
a = anndata.AnnData(X=sp.csr_matrix((n, g), dtype=np.float32),
                    obs=pd.DataFrame({"cell_type": pd.Categorical(
                        rng.choice(["B", "T", "NK"], n))},
                        index=["c%d" % i for i in range(n)]),
                    var=pd.DataFrame(index=["g%d" % j for j in range(g)]))
a.write_h5ad(f)
per = rng.binomial(g, dens, n).astype(np.int64)
indptr = np.zeros(n + 1, np.int64)
np.cumsum(per, out=indptr[1:])
nnz = int(indptr[-1])
with h5py.File(f, "r+") as h:
    del h["X"]
    x = h.create_group("X")
    x.attrs["encoding-type"] = "csr_matrix"
    x.attrs["encoding-version"] = "0.1.0"
    x.attrs["shape"] = np.array([n, g])
    x["indptr"] = indptr
    d = x.create_dataset("data", (nnz,), np.float32)
    ix = x.create_dataset("indices", (nnz,), np.int32)
    B = 4096
    for c0 in range(0, n, B):
        c1 = min(n, c0 + B)
        cols = [np.sort(rng.choice(g, int(per[i]), replace=False)) for i in range(c0, c1)]
        ix[indptr[c0]:indptr[c1]] = np.concatenate(cols).astype(np.int32)
        d[indptr[c0]:indptr[c1]] = rng.poisson(2.0, indptr[c1] - indptr[c0]).astype(np.float32) + 1
print("anndata bench file: %d cells x %d genes, %d values (%.2f GB of values and indices)"
      % (n, g, nnz, nnz * 8 / 1e9))
PY
fi
# The dense .npy path of the same bytes: float32 rows of K columns, K
# such that the file holds as many bytes as X's values and indices (the
# issue's "sparse CSR output at >= 0.8x the bytes/s of the dense .npy
# path"), written once with numpy in blocks.
npy=$work/dense_same_bytes.npy
if test ! -f "$npy"; then
  /usr/bin/python3 - "$f" "$npy" <<'PY'
import sys
import h5py, numpy as np
with h5py.File(sys.argv[1], "r") as h:
    n = h["X"].attrs["shape"][0]
    nnz = h["X/data"].shape[0]
    vb = h["X/data"].dtype.itemsize + h["X/indices"].dtype.itemsize
k = max(1, int(round(nnz * vb / 4 / n)))
m = np.lib.format.open_memmap(sys.argv[2], "w+", np.float32, (n, k))
for c0 in range(0, n, 8192):
    m[c0:c0 + 8192] = np.arange(c0, min(n, c0 + 8192), dtype=np.float32)[:, None]
m.flush()
print("dense .npy of the same bytes: %d x %d float32 (%.2f GB)" % (n, k, n * k * 4 / 1e9))
PY
fi
cat "$f" "$npy" >/dev/null
peer() { # MODE: cells/s of one process for about 10 s
  /usr/bin/python3 - "$f" "$1" <<'PY'
import sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
f, mode = sys.argv[1], sys.argv[2]
B = 64
t0 = time.perf_counter()
cells = 0
if mode == "scdataset":
    import anndata
    a = anndata.read_h5ad(f, backed="r")
    n = a.n_obs
    rng = np.random.default_rng(0)
    blocks = rng.permutation((n + B - 1) // B)
    for blk in blocks:
        idx = np.arange(blk * B, min(n, blk * B + B))
        x = a.X[np.sort(idx)].toarray()
        cells += x.shape[0]
        if time.perf_counter() - t0 > 10:
            break
else:
    import torch, ferry.torch
    ds = ferry.torch.Dataset(f, vars="X/indices,X/data", shuffle="block",
                             block_size=B, batch_size=B, seed=0,
                             tail="partial", sparse=mode[6:],
                             sparse_dtype=torch.float32)
    for e in range(1000):
        ds.set_epoch(e)
        for b in ds:
            x = b["X"]
            cells += x.shape[0]
            del b, x
            if time.perf_counter() - t0 > 10:
                break
        if time.perf_counter() - t0 > 10:
            break
    ds.close()
t = time.perf_counter() - t0
print("%s %.0f cells/s (%d cells in %.1f s)" % (mode, cells / t, cells, t))
PY
}
for round in 1 2 3; do
  peer scdataset
  peer ferry_dense
  peer ferry_csr
  "$build/ferry" bench "$f" --vars X/indices,X/data --shuffle block \
    --block-size 64 --batch-size 64 --epochs 2 2>&1 |
    sed -n 's/^total: \([0-9.]*\) samples\/s, \([0-9.]* [KMG]iB\)\/s.*/ferry_bench \1 cells\/s, \2\/s/p'
  "$build/ferry" bench "$npy" --shuffle block --block-size 64 \
    --batch-size 64 --epochs 2 2>&1 |
    sed -n 's/^total: \([0-9.]*\) samples\/s, \([0-9.]* [KMG]iB\)\/s.*/ferry_bench_npy \1 rows\/s, \2\/s/p'
  "$build/ferry" bench "$f" --vars X/indices,X/data --shuffle block \
    --block-size 64 --batch-size 64 --epochs 1 --sparse dense \
    --chunk-samples 4096 2>&1 |
    sed -n 's/^total: \([0-9.]*\) samples\/s.*/ferry_bench_dense \1 cells\/s/p'
done
