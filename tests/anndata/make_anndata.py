"""make_anndata.py DIR - the AnnData fixtures of tests/anndata/anndata.sh,
written by anndata itself (Debian's python3-anndata, scipy sparse):

  a.h5ad     CSR X of float32 (int64 indptr), a CSR layer of float64
             (int32 indptr), raw with a CSR X of int32 values, obs with an
             int64 and a float64 column, a categorical with missing values
             (code -1), a string column, a nullable integer and a nullable
             boolean column (values + mask), obsm X_pca (n_obs x 5)
  a.zarr     the same as an AnnData Zarr store (v2, blosc), by anndata
  a3.zarr    a.zarr rewritten as Zarr v3 (zarr_to_v3.py), the sparse
             matrices' indices and data sharded
  csc.zarr, bad_indptr.zarr, bad_index.zarr, bad_shape.zarr,
  bad_codes.zarr, unsorted.zarr: bad Zarr
             stores (a CSC X; zarr-python edits of a copy of a.zarr)
  gzip.h5ad  the same, every dataset gzip-compressed (anndata's option)
  chunks.h5ad X alone, its data chunked by 97 values and gzip-compressed,
             its indices by 256 and not compressed
  dense.h5ad a dense X (float64)
  csc.h5ad   a CSC X (refused)
  old.h5ad   X in the older h5sparse layout (h5sparse_format "csr",
             h5sparse_shape; written with h5py as anndata < 0.7 did)
  noX.h5ad, bad_indptr.h5ad, bad_len.h5ad, bad_shape.h5ad,
  bad_index.h5ad, bad_codes.h5ad: bad inputs (h5py edits of a copy of
             a.h5ad: no X, an indptr that decreases, indices shorter than
             data, a shape of one more cell, a column index past n_vars,
             a categorical code past its categories)
  be.zarr, be.h5ad: a.zarr and a.h5ad with X's indices and data
             big-endian (">i4", ">f4")
  unsorted.h5ad, twice.h5ad: a row whose column indices are out of
             order, one naming a column twice (non-canonical CSR rows,
             refused at the read: decision 0068)
"""
import os
import shutil
import subprocess
import sys
import warnings

import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp

warnings.filterwarnings("ignore")
import anndata  # noqa: E402

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(1)
n, g = 301, 57
X = sp.random(n, g, density=0.12, format="csr", dtype=np.float32,
              random_state=2)
X[5] = 0  # a cell with no values
X.eliminate_zeros()
X.indptr = X.indptr.astype(np.int64)
cats = rng.choice(["B", "T", "NK", None], n)
nullable = rng.integers(0, 50, n).astype(object)
nullable[rng.random(n) < 0.2] = None
flags = (rng.random(n) < 0.5).astype(object)
flags[rng.random(n) < 0.1] = None
obs = pd.DataFrame({"n_counts": rng.integers(0, 1000, n).astype(np.int64),
                    "score": rng.random(n),
                    "cell_type": pd.Categorical(cats),
                    "donor": ["d%d" % (i % 3) for i in range(n)],
                    "barcode": ["bc%05d" % i for i in range(n)],  # strings
                    "umis": pd.array(nullable, dtype="Int32"),
                    "qc": pd.array(flags, dtype="boolean")},
                   index=["c%d" % i for i in range(n)])
var = pd.DataFrame(index=["g%d" % j for j in range(g)])
a = anndata.AnnData(X=X, obs=obs, var=var)
a.obsm["X_pca"] = rng.random((n, 5)).astype(np.float32)
layer = sp.random(n, g, density=0.2, format="csr", dtype=np.float64,
                  random_state=3)
layer.indptr = layer.indptr.astype(np.int32)
a.layers["counts"] = layer
raw = anndata.AnnData(X=sp.random(n, g + 3, density=0.1, format="csr",
                                  dtype=np.float32, random_state=4)
                      .astype(np.int32), obs=obs[[]],
                      var=pd.DataFrame(index=["r%d" % j for j in range(g + 3)]))
a.raw = raw
a.write_h5ad(os.path.join(d, "a.h5ad"))
a.write_h5ad(os.path.join(d, "gzip.h5ad"), compression="gzip")
a.write_zarr(os.path.join(d, "a.zarr"))
# the same as Zarr v3, sparse matrices sharded (the tests' own v3 writer)
subprocess.check_call([sys.executable,
                       os.path.join(os.path.dirname(os.path.abspath(
                           __file__)), "zarr_to_v3.py"),
                       os.path.join(d, "a.zarr"), os.path.join(d, "a3.zarr")])
# indices and data chunked differently (annbatch writes such files)
with h5py.File(os.path.join(d, "chunks.h5ad"), "w") as f:
    f.attrs["encoding-type"] = "anndata"
    f.attrs["encoding-version"] = "0.1.0"
    gx = f.create_group("X")
    gx.attrs["encoding-type"] = "csr_matrix"
    gx.attrs["encoding-version"] = "0.1.0"
    gx.attrs["shape"] = np.array([n, g])
    gx.create_dataset("data", data=X.data, chunks=(97,), compression="gzip")
    gx.create_dataset("indices", data=X.indices, chunks=(256,))
    gx["indptr"] = X.indptr

b = anndata.AnnData(X=rng.random((n, g)), obs=obs[["score"]], var=var)
b.write_h5ad(os.path.join(d, "dense.h5ad"))

c = a.copy()
c.X = c.X.tocsc()
c.write_h5ad(os.path.join(d, "csc.h5ad"))
c.write_zarr(os.path.join(d, "csc.zarr"))

# the older layout: X a group with h5sparse_format / h5sparse_shape
with h5py.File(os.path.join(d, "old.h5ad"), "w") as f:
    gx = f.create_group("X")
    gx.attrs["h5sparse_format"] = "csr"
    gx.attrs["h5sparse_shape"] = np.array([n, g])
    gx["data"] = X.data
    gx["indices"] = X.indices
    gx["indptr"] = X.indptr

for name, edit in [("noX", "noX"), ("bad_indptr", "indptr"),
                   ("bad_codes", "codes"),
                   ("bad_len", "len"), ("bad_shape", "shape"),
                   ("bad_index", "index"), ("unsorted", "unsorted"),
                   ("twice", "twice")]:
    p = os.path.join(d, name + ".h5ad")
    shutil.copy(os.path.join(d, "a.h5ad"), p)
    with h5py.File(p, "r+") as f:
        if edit == "noX":
            del f["X"]
        elif edit == "indptr":
            ip = f["X/indptr"][:]
            ip[7], ip[8] = ip[8] + 1, ip[7]
            f["X/indptr"][:] = ip
        elif edit == "shape":
            f["X"].attrs["shape"] = np.array([n + 1, g])
        elif edit == "codes":  # a code past the 3 categories
            c = f["obs/cell_type/codes"][:]
            c[12] = 7
            f["obs/cell_type/codes"][:] = c
        elif edit == "unsorted":  # a non-canonical row: columns out of order
            ix = f["X/indices"][:]
            ip = f["X/indptr"][:]
            r = next(i for i in range(n) if ip[i + 1] - ip[i] >= 2)
            ix[ip[r]], ix[ip[r] + 1] = ix[ip[r] + 1], ix[ip[r]]
            f["X/indices"][:] = ix
        elif edit == "twice":  # a non-canonical row: a column twice
            ix = f["X/indices"][:]
            ip = f["X/indptr"][:]
            r = next(i for i in range(50, n) if ip[i + 1] - ip[i] >= 3)
            ix[ip[r] + 2] = ix[ip[r] + 1]
            f["X/indices"][:] = ix
        elif edit == "index":
            ix = f["X/indices"][:]
            ix[100] = g + 5  # outside [0, n_vars)
            f["X/indices"][:] = ix
        else:
            ix = f["X/indices"][:]
            del f["X/indices"]
            f["X/indices"] = ix[:-1]
# bad Zarr stores: zarr-python edits of copies of a.zarr
import zarr  # noqa: E402

for name in ("bad_indptr", "bad_index", "bad_shape", "bad_codes",
             "unsorted"):
    p = os.path.join(d, name + ".zarr")
    shutil.copytree(os.path.join(d, "a.zarr"), p)
    z = zarr.open_group(p, mode="r+")
    if name == "bad_indptr":
        ip = z["X/indptr"][:]
        ip[7], ip[8] = ip[8] + 1, ip[7]
        z["X/indptr"][:] = ip
    elif name == "bad_index":
        ix = z["X/indices"][:]
        ix[100] = g + 5
        z["X/indices"][:] = ix
    elif name == "unsorted":  # columns out of order in a late row
        ix = z["X/indices"][:]
        ip = z["X/indptr"][:]
        r = next(i for i in range(n - 1, 0, -1) if ip[i + 1] - ip[i] >= 2)
        ix[ip[r]], ix[ip[r] + 1] = ix[ip[r] + 1], ix[ip[r]]
        z["X/indices"][:] = ix
    elif name == "bad_codes":
        c = z["obs/cell_type/codes"][:]
        c[12] = 7
        z["obs/cell_type/codes"][:] = c
    else:
        z["X"].attrs["shape"] = [n + 1, g]
# big-endian matrices (zarr-python and h5py write what they are given):
# X's indices ">i4" and data ">f4" in a copy of a.zarr and of a.h5ad
import h5py  # noqa: E402

shutil.copytree(os.path.join(d, "a.zarr"), os.path.join(d, "be.zarr"))
z = zarr.open_group(os.path.join(d, "be.zarr"), mode="r+")
for k, dt in (("X/indices", ">i4"), ("X/data", ">f4")):
    v, at = z[k][:], dict(z[k].attrs)
    del z[k]
    z.create_dataset(k, data=v.astype(dt), dtype=dt, chunks=(1000,))
    z[k].attrs.update(at)
shutil.copy(os.path.join(d, "a.h5ad"), os.path.join(d, "be.h5ad"))
with h5py.File(os.path.join(d, "be.h5ad"), "r+") as f:
    for k, dt in (("X/indices", ">i4"), ("X/data", ">f4")):
        v = f[k][:]
        del f[k]
        f.create_dataset(k, data=v.astype(dt))
print("make_anndata: %d cells x %d genes, %d values in X" % (n, g, X.nnz))
