#!/usr/bin/env python3
"""anndata_train.py - a cell-type classifier trained on an AnnData .h5ad
file read by ferry (docs/singlecell.md), replacing scDataset's
BlockShuffling + fetch_callback.

Before (scDataset over a backed AnnData: blocks of contiguous cells
shuffled, a callback that reads the batch's cells and densifies them, in
forked DataLoader workers):

    adata = anndata.read_h5ad(PATH, backed="r")
    ds = scDataset(adata, BlockShuffling(block_size=64), batch_size=64,
                   fetch_callback=lambda a, idx: (
                       torch.tensor(a.X[np.sort(idx)].toarray()),
                       torch.tensor(a.obs["cell_type"].cat.codes[idx])))
    dl = DataLoader(ds, batch_size=None, num_workers=8)

After (every MPI rank reads only its own blocks of cells, the sparse rows
densified into float32 by ferry.torch; the cell types' codes are a
variable like X):

    ds = ferry.torch.Dataset(PATH, vars="X/indices,X/data,"
                             "obs/cell_type/codes", shuffle="block",
                             block_size=64, batch_size=64, sparse="dense",
                             sparse_dtype=torch.float32)

Without a PATH the example writes one with anndata (3 cell types, each
expressing its own genes). It trains a linear classifier with gradients
averaged over the ranks (MPI), for a few epochs, and prints the accuracy.

Run:  mpirun -n 2 /usr/bin/python3 examples/anndata_train.py [PATH.h5ad]
"""

import os
import sys
import warnings

import numpy as np
import torch
from mpi4py import MPI

import ferry.torch

warnings.filterwarnings("ignore")


def make(path, comm, n=3000, genes=200, seed=0):
    """Rank 0 writes a synthetic .h5ad with anndata (once)."""
    if comm.rank == 0 and not os.path.exists(path):
        import anndata
        import pandas as pd
        import scipy.sparse as sp
        rng = np.random.default_rng(seed)
        kind = rng.integers(0, 3, n)
        dense = rng.poisson(0.05, (n, genes)).astype(np.float32)
        for k in range(3):  # type k expresses genes [k*20, k*20 + 20)
            rows = kind == k
            dense[rows, k * 20:(k + 1) * 20] += rng.poisson(
                3.0, (rows.sum(), 20))
        obs = pd.DataFrame({"cell_type": pd.Categorical(
            np.array(["B", "T", "NK"])[kind])},
            index=["c%d" % i for i in range(n)])
        a = anndata.AnnData(X=sp.csr_matrix(dense), obs=obs,
                            var=pd.DataFrame(index=["g%d" % j
                                                    for j in range(genes)]))
        a.write_h5ad(path)
    comm.Barrier()


def main():
    comm = MPI.COMM_WORLD
    path = sys.argv[1] if len(sys.argv) > 1 else "ferry-example.h5ad"
    if not path.endswith(".h5ad"):
        path = path + ".h5ad"
    make(path, comm)
    ds = ferry.torch.Dataset(path, comm, vars="X/indices,X/data,"
                             "obs/cell_type/codes", shuffle="block",
                             block_size=64, batch_size=64, seed=1,
                             tail="partial", sparse="dense",
                             sparse_dtype=torch.float32)
    genes = ds.loader.widths["X/indices"]
    torch.manual_seed(0)
    model = torch.nn.Linear(genes, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        ds.set_epoch(epoch)
        right = seen = 0
        for b in ds:
            x = torch.log1p(b["X"])
            y = b["obs/cell_type/codes"].long()
            keep = (y >= 0) & ~b["padded"]
            logits = model(x[keep])
            loss = torch.nn.functional.cross_entropy(logits, y[keep])
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():  # the ranks' mean gradient
                g = p.grad.numpy()
                comm.Allreduce(MPI.IN_PLACE, g)
                g /= comm.size
            opt.step()
            right += int((logits.argmax(1) == y[keep]).sum())
            seen += int(keep.sum())
            del b, x, y
        right, seen = comm.allreduce(right), comm.allreduce(seen)
    ds.close()
    if comm.rank == 0:
        print("anndata_train: %d ranks, %d cells x %d genes, epoch 3 "
              "accuracy %.3f" % (comm.size, seen, genes, right / seen))
    if right / seen < 0.9:
        sys.exit("anndata_train: accuracy %.3f, expected >= 0.9"
                 % (right / seen))


if __name__ == "__main__":
    main()
