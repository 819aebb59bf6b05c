"""anndata_check.py DIR - run under mpirun by anndata.sh: every cell that
ferry serves from DIR/a.h5ad (and old.h5ad, dense.h5ad, the AnnData Zarr
stores a.zarr (v2) and a3.zarr (v3, sharded)) compared with what anndata
itself reads (anndata.read_h5ad): nullable columns' values and masks, a
mid-epoch state saved on fewer ranks and resumed on all (.h5ad and Zarr
v3: every cell once, equal to anndata's), X's, the layer's and raw's
indices and data row by row, obs columns and categorical codes (-1 for
missing), obsm, also gzip-compressed and with indices and data chunked
differently; every cell once on the ranks, equal batch counts; the
matrices' widths and the categories of a categorical column (also through
a saved manifest, argv[2]); ferry.torch's
sparse="csr" (torch.sparse_csr_tensor) and "dense" rows.  Exits
non-zero with a message on the first failed check."""
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from helpers import check, comm, every_once  # noqa: E402

warnings.filterwarnings("ignore")
import anndata  # noqa: E402

import ferry  # noqa: E402

d = sys.argv[1]
a = anndata.read_h5ad(d + "/a.h5ad")
n = a.n_obs
mats = {"X": a.X, "layers/counts": a.layers["counts"], "raw/X": a.raw.X}
dense = {"obs/n_counts": a.obs["n_counts"].values,
         "obs/score": a.obs["score"].values,
         "obs/cell_type/codes": a.obs["cell_type"].cat.codes.values,
         "obsm/X_pca": a.obsm["X_pca"]}
names = [m + "/" + p for m in mats for p in ("indices", "data")] + list(dense)


def check_batch(path, b, mats, dense):
    """One batch against anndata's rows; its cells (Python ints)."""
    idx = np.from_dlpack(b.indices)
    for m, csr in mats.items():
        ri, rd = b[m + "/indices"], b[m + "/data"]
        vi, oi = np.from_dlpack(ri.values), np.from_dlpack(ri.offsets)
        vd, od = np.from_dlpack(rd.values), np.from_dlpack(rd.offsets)
        check(np.array_equal(oi, od), "%s: indices' and data's offsets "
              "differ" % m)
        for k, i in enumerate(idx):
            row = csr[int(i)]
            check(np.array_equal(vi[oi[k]:oi[k + 1]], row.indices) and
                  np.array_equal(vd[od[k]:od[k + 1]], row.data) and
                  vd.dtype == row.data.dtype,
                  "%s %s: cell %d differs from anndata's row" % (path, m, i))
    for v, want in dense.items():
        got = np.from_dlpack(b[v])
        check(np.array_equal(got, want[idx]),
              "%s %s: cells %r differ from anndata's" % (path, v, idx))
    return [int(i) for i in idx]


def run(path, mats, dense, **opts):
    L = ferry.Loader(path, vars=",".join(
        [m + "/" + p for m in mats for p in ("indices", "data")] +
        list(dense)), **opts)
    L.set_epoch(1)
    ids, nb = [], 0
    for b in L:
        nb += 1
        ids.extend(check_batch(path, b, mats, dense))
        del b
    L.close()
    counts = comm.allgather(nb)
    check(len(set(counts)) == 1, "batch counts per rank %r" % counts)
    every_once(ids, n, path)


run(d + "/a.h5ad", mats, dense, batch_size=7, seed=3, tail="partial")
# AnnData Zarr: v2 as anndata writes it, v3 with sharded matrices
for st in ("a.zarr", "a3.zarr"):
    run(d + "/" + st, mats, dense, batch_size=7, seed=3, tail="partial")
    run(d + "/" + st, {"X": a.X}, {}, batch_size=5, seed=4, tail="partial",
        shuffle="block", block_size=8, threads=2)
# resume: cells served on fewer ranks, the state saved mid-epoch, loaded on
# all of them; together every cell once, each equal to anndata's
import pickle  # noqa: E402

from mpi4py import MPI  # noqa: E402

for path in ("a.h5ad", "a3.zarr"):
    ropts = dict(vars="X/indices,X/data,obs/cell_type/codes", batch_size=8,
                 seed=12, tail="partial", shuffle="block", block_size=16,
                 chunk_samples=48)
    nfirst = max(1, comm.size - 1)
    first = comm.Split(0 if comm.rank < nfirst else MPI.UNDEFINED, comm.rank)
    before, state = [], os.path.join(d, "state.%d.%s.pkl" % (comm.size, path))
    if first != MPI.COMM_NULL:
        L = ferry.Loader(d + "/" + path, comm=first, **ropts)
        L.set_epoch(2)
        it = iter(L)
        for _ in range(4):
            b = next(it)
            before.extend(check_batch(path, b, {"X": a.X},
                                      {"obs/cell_type/codes":
                                       dense["obs/cell_type/codes"]}))
            del b
        del it
        sd = L.state_dict()
        if comm.rank == 0:
            with open(state, "wb") as f:
                pickle.dump(sd, f)
        L.close()
        first.Free()
    comm.Barrier()
    with open(state, "rb") as f:
        sd = pickle.load(f)
    L = ferry.Loader(d + "/" + path, **ropts)
    L.load_state_dict(sd)
    check(L.epoch == 2, "%s: resumed epoch %r" % (path, L.epoch))
    after, nb = [], 0
    for b in L:
        nb += 1
        after.extend(check_batch(path, b, {"X": a.X},
                                 {"obs/cell_type/codes":
                                  dense["obs/cell_type/codes"]}))
        del b
    L.close()
    check(len(set(comm.allgather(nb))) == 1, "%s: batch counts after the "
          "resume" % path)
    every_once(before + after, n, "%s: saved on %d ranks, resumed on %d"
               % (path, nfirst, comm.size))

# nullable columns: their values where the mask says present, and the mask
for path in ("a.h5ad", "a.zarr", "a3.zarr"):
    L = ferry.Loader(d + "/" + path, batch_size=16, tail="partial", seed=8,
                     vars="obs/umis/values,obs/umis/mask,obs/qc/values,"
                          "obs/qc/mask")
    L.set_epoch(0)
    for bt in L:
        idx = np.from_dlpack(bt.indices)
        for col in ("umis", "qc"):
            s = a.obs[col]
            # np.asarray: numpy < 1.25 has no DLPack bool
            mask = np.asarray(bt["obs/%s/mask" % col])
            vals = np.asarray(bt["obs/%s/values" % col])
            want = s.isna().values[idx]
            check(np.array_equal(mask.astype(bool), want),
                  "%s obs/%s/mask: cells %r" % (path, col, idx))
            ok = ~want
            check(np.array_equal(vals[ok], s.values[idx][ok].astype(
                vals.dtype)), "%s obs/%s/values: cells %r" % (path, col, idx))
        del bt, idx, mask, vals
    L.close()
run(d + "/a.h5ad", {"X": a.X}, {}, batch_size=5, seed=4, tail="partial",
    shuffle="block", block_size=8, io="independent", threads=2)
run(d + "/old.h5ad", {"X": a.X}, {}, batch_size=6, seed=5, tail="partial")
run(d + "/gzip.h5ad", mats, dense, batch_size=11, seed=6, tail="partial")
run(d + "/chunks.h5ad", {"X": a.X}, {}, batch_size=9, seed=7, tail="partial",
    shuffle="block", block_size=5)
b = anndata.read_h5ad(d + "/dense.h5ad")
L = ferry.Loader(d + "/dense.h5ad", vars="X,obs/score", batch_size=9,
                 tail="partial", seed=1)
L.set_epoch(0)
for bt in L:
    check_batch(d + "/dense.h5ad", bt, {}, {"X": b.X})
    del bt
L.close()
# the matrices' widths (n_vars), also through a saved manifest
L = ferry.Loader(d + "/a.h5ad", batch_size=4)
want = {"X/indices": a.n_vars, "X/data": a.n_vars,
        "layers/counts/indices": a.n_vars, "layers/counts/data": a.n_vars,
        "raw/X/indices": a.raw.n_vars, "raw/X/data": a.raw.n_vars}
cats = list(a.obs["cell_type"].cat.categories)
check(L.widths == want, "widths %r, want %r" % (L.widths, want))
check(L.categories("X/indices") == list(a.var_names) and
      L.categories("raw/X/indices") == list(a.raw.var_names),
      "the genes' names: %r" % (L.categories("X/indices")[:3],))
check(L.categories("obs/cell_type/codes") == cats and
      L.categories("obs/score") is None,
      "categories %r, want %r" % (L.categories("obs/cell_type/codes"), cats))
L.close()
for st in ("a.zarr", "a3.zarr"):  # the same from the Zarr stores
    L = ferry.Loader(d + "/" + st, batch_size=4)
    check(L.widths == want, "%s: widths %r, want %r" % (st, L.widths, want))
    check(L.categories("X/indices") == list(a.var_names) and
          L.categories("raw/X/indices") == list(a.raw.var_names) and
          L.categories("obs/cell_type/codes") == cats,
          "%s: the genes' and categories' names" % st)
    L.close()
if len(sys.argv) > 2:  # the manifest anndata.sh saved
    L = ferry.Loader(d + "/a.h5ad", manifest=sys.argv[2], batch_size=4)
    check(L.widths == want, "widths through the manifest %r" % (L.widths,))
    check(L.categories("obs/cell_type/codes") == cats,
          "categories through the manifest")
    L.close()

# ferry.torch: torch.sparse_csr_tensor rows, and dense ones in a dtype
import torch  # noqa: E402
import ferry.torch  # noqa: E402

# a nullable boolean column's mask and values are torch.bool tensors (torch
# < 2 has no DLPack bool: ferry.torch shares them through numpy)
ds = ferry.torch.Dataset(d + "/a3.zarr", vars="obs/qc/values,obs/qc/mask",
                         batch_size=16, tail="partial", seed=1)
ds.set_epoch(0)
for bt in ds:
    idx = bt["index"].numpy()
    check(bt["obs/qc/mask"].dtype == torch.bool and
          np.array_equal(bt["obs/qc/mask"].numpy(),
                         a.obs["qc"].isna().values[idx]),
          "ferry.torch: the mask of obs/qc, cells %r" % (idx,))
    del bt, idx
ds.close()

for mode, path in (("csr", "a.h5ad"), ("dense", "a.h5ad"),
                   ("csr", "a3.zarr")):
    ds = ferry.torch.Dataset(d + "/" + path, vars="X/indices,X/data,obs/score",
                             batch_size=8, tail="partial", seed=2,
                             sparse=mode,
                             sparse_dtype=torch.float16 if mode == "dense"
                             else None)
    ds.set_epoch(0)
    ids = []
    for bt in ds:
        X = bt["X"]
        idx = bt["index"].numpy().copy()
        check(X.layout == (torch.sparse_csr if mode == "csr"
                           else torch.strided) and
              tuple(X.shape) == (len(idx), a.n_vars) and
              "X/indices" not in bt, "sparse=%s: %r %r" % (mode, X.layout,
                                                        X.shape))
        got = (X.to_dense() if mode == "csr" else X.float()).numpy()
        ref = np.stack([a.X[int(i)].toarray()[0] for i in idx])
        check(np.allclose(got, ref,
                          atol=1e-2 if mode == "dense" else 0),
              "sparse=%s: cells %r differ from anndata's" % (mode, idx))
        check(mode == "csr" or X.dtype == torch.float16, "dense dtype")
        if mode == "csr":
            # made without torch's check (decision 0068), over the file's
            # own int32 indices (no copy); torch's check passes them
            check(X.col_indices().dtype == torch.int32 and
                  X.crow_indices().dtype == torch.int32,
                  "CSR index dtypes %r %r" % (X.crow_indices().dtype,
                                              X.col_indices().dtype))
            torch.sparse_csr_tensor(X.crow_indices(), X.col_indices(),
                                    X.values(), size=X.shape)
        ids.extend(int(i) for i in idx)
        del bt, X, got
    ds.close()
    every_once(ids, n, "ferry.torch sparse=%s %s" % (mode, path))

# sparse_rows(check=True) has torch check arrays from elsewhere: a row
# naming its columns out of order is refused; by default it is not
bad_ix = ferry.Ragged(torch.tensor([3, 1], dtype=torch.int32),
                      torch.tensor([0, 2], dtype=torch.int64), 2)
bad_dv = ferry.Ragged(torch.tensor([1.0, 2.0]),
                      torch.tensor([0, 2], dtype=torch.int64), 2)
try:
    ferry.torch.sparse_rows(bad_ix, bad_dv, 5, check=True)
    check(False, "sparse_rows(check=True) took a row out of order")
except RuntimeError as e:
    check("sorted" in str(e), "sparse_rows(check=True): %s" % e)
check(ferry.torch.sparse_rows(bad_ix, bad_dv, 5).shape == (1, 5),
      "sparse_rows without check")

# genes=: a subset of the columns by name, in that order
genes = ["g5", "g1", "g40", "g0"]
cols = [5, 1, 40, 0]
for mode in ("csr", "dense"):
    ds = ferry.torch.Dataset(d + "/a.h5ad", vars="X/indices,X/data",
                             batch_size=8, tail="partial", seed=3,
                             sparse=mode, genes=genes)
    ds.set_epoch(0)
    for bt in ds:
        X = bt["X"]
        idx = bt["index"].numpy().copy()
        got = (X.to_dense() if mode == "csr" else X).numpy()
        ref = np.stack([a.X[int(i)].toarray()[0][cols] for i in idx])
        check(got.shape == (len(idx), len(genes)) and
              np.array_equal(got, ref),
              "genes=, sparse=%s: cells %r differ" % (mode, idx))
        del bt, X, got
    ds.close()
try:
    ferry.torch.Dataset(d + "/a.h5ad", vars="X/indices,X/data",
                        batch_size=8, genes=["g1", "nope"]).close()
    check(False, "genes= with an unknown name accepted")
except ValueError as e:
    check("'nope' is not a column of X" in str(e), "genes=: %s" % e)

# sparse=dense in the library: dense rows of X in a dtype, genes kept
for dt, genes, cols in (("float32", "", list(range(a.n_vars))),
                        ("float16", "g5,g1,40,g0", [5, 1, 40, 0]),
                        ("same", "g3", [3])):
    L = ferry.Loader(d + "/a.h5ad", vars="X/indices,X/data,obs/score",
                     sparse="dense", sparse_dtype=dt, genes=genes,
                     batch_size=7, tail="partial", seed=4)
    check(L.vars == ["X", "obs/score"], "sparse=dense vars %r" % (L.vars,))
    L.set_epoch(0)
    ids = []
    for bt in L:
        idx = np.from_dlpack(bt.indices).copy()
        X = np.from_dlpack(bt["X"])
        ref = np.stack([a.X[int(i)].toarray()[0][cols] for i in idx])
        check(X.shape == (len(idx), len(cols)) and
              X.dtype == (np.float16 if dt == "float16" else np.float32) and
              np.allclose(X.astype(np.float64), ref, rtol=1e-3),
              "sparse=dense %s genes=%r: cells %r" % (dt, genes, idx))
        ids.extend(int(i) for i in idx)
        del bt, X
    L.close()
    every_once(ids, n, "sparse=dense " + dt)
# big-endian matrices (Zarr ">i4"/">f4", HDF5 the same): the CSR rows and
# sparse=dense (whose view reads the pair as stored and swaps it)
for path in ("be.zarr", "be.h5ad"):
    for sp in ("rows", "dense"):
        L = ferry.Loader(d + "/" + path, vars="X/indices,X/data", sparse=sp,
                         batch_size=16, tail="partial", seed=8)
        L.set_epoch(0)
        ids = []
        for bt in L:
            idx = np.from_dlpack(bt.indices).copy()
            ref = np.stack([a.X[int(i)].toarray()[0] for i in idx])
            if sp == "dense":
                got = np.from_dlpack(bt["X"]).copy()
            else:
                ix, dv = bt["X/indices"], bt["X/data"]
                off = np.from_dlpack(ix.offsets).copy()
                iv = np.from_dlpack(ix.values).copy()
                vv = np.from_dlpack(dv.values).copy()
                del ix, dv
                got = np.zeros_like(ref)
                for r in range(len(idx)):
                    got[r, iv[off[r]:off[r + 1]]] = vv[off[r]:off[r + 1]]
            check(np.array_equal(got, ref), "%s sparse=%s: cells %r differ "
                  "from anndata's" % (path, sp, idx))
            ids.extend(int(i) for i in idx)
            del bt, got
        L.close()
        every_once(ids, n, "%s sparse=%s" % (path, sp))

# bfloat16 dense rows: DLPack's bfloat (torch.bfloat16), each value
# rounded to nearest even as torch rounds a float32 (numpy has no bfloat16)
for path in ("a.h5ad", "a3.zarr"):
    L = ferry.Loader(d + "/" + path, vars="X/indices,X/data", sparse="dense",
                     sparse_dtype="bfloat16", genes="g5,g1,40",
                     batch_size=16, tail="partial", seed=6)
    L.set_epoch(0)
    ids = []
    for bt in L:
        x = torch.from_dlpack(bt["X"])
        idx = np.from_dlpack(bt.indices).copy()
        ref = torch.tensor(np.stack([a.X[int(i)].toarray()[0][[5, 1, 40]]
                                     for i in idx])).bfloat16()
        check(x.dtype == torch.bfloat16 and torch.equal(x, ref),
              "sparse_dtype=bfloat16 %s: cells %r" % (path, idx))
        ids.extend(int(i) for i in idx)
        del bt, x
    L.close()
    every_once(ids, n, "sparse=dense bfloat16 " + path)
for opts, words in ((dict(sparse="dense", genes="g1,nope",
                          vars="X/indices,X/data"),
                     "'nope' is not a column of X (57 columns, named by "
                     "var/_index)"),
                    (dict(sparse="dense", vars="obs/score"),
                     "serves no sparse matrix"),
                    (dict(sparse="dense", genes="g1"),
                     "option genes with 3 sparse matrices")):
    msg = ""
    try:
        ferry.Loader(d + "/a.h5ad", batch_size=4, **opts).close()
    except ferry.Error as e:
        msg = str(e)
    check(words in msg, "%r: %r, want %r" % (opts, msg, words))



def first_fault(path):
    """The words of ferry's refusal of the one non-canonical row of a
    fixture (decision 0068), found here from the file's own arrays."""
    if path.endswith(".zarr"):
        import zarr
        g = zarr.open_group(path, mode="r")
    else:
        import h5py
        g = h5py.File(path, "r")
    ip, ix = g["X/indptr"][:], g["X/indices"][:]
    for r in range(len(ip) - 1):
        row = ix[ip[r]:ip[r + 1]]
        for k in range(1, len(row)):
            if row[k] <= row[k - 1]:
                return ("cell %d names column %d after column %d: its column "
                        "indices must increase" % (r, row[k], row[k - 1]))
    return "no fault in " + path


# bad inputs: the same message on every rank
for f, words in [("unsorted.h5ad", first_fault(d + "/unsorted.h5ad")),
                 ("twice.h5ad", first_fault(d + "/twice.h5ad")),
                 ("unsorted.zarr", first_fault(d + "/unsorted.zarr")),
                 ("csc.h5ad", "X is a CSC matrix"),
                 ("csc.zarr", "X is a CSC matrix"),
                 ("bad_indptr.zarr", "indptr decreases (entry 8"),
                 ("bad_shape.zarr", "indptr has 302 entries, its 302 rows "
                  "need 303"),
                 ("bad_index.zarr", "column index 62 outside [0, 57)"),
                 ("noX.h5ad", "an AnnData file without X"),
                 ("bad_indptr.h5ad", "indptr decreases (entry 8"),
                 ("bad_len.h5ad", "data has 2049 values and indices 2048"),
                 ("bad_shape.h5ad", "indptr has 302 entries, its 302 rows "
                  "need 303"),
                 ("bad_index.h5ad", "column index 62 outside [0, 57)")]:
    msg = ""
    try:
        L = ferry.Loader(d + "/" + f, batch_size=4, vars="X/indices")
        L.set_epoch(0)
        for bt in L:
            del bt
        L.close()
    except ferry.Error as e:
        msg = str(e)
    check(words in msg, "%s: %r, want %r" % (f, msg, words))
    check(len(set(comm.allgather(msg))) == 1, "%s: the ranks' messages "
          "differ" % f)

if comm.rank == 0:
    print("ok: anndata_check: %d cells of X, the layer, raw and obs equal to "
          "anndata's, each once, on %d ranks" % (n, comm.size))
