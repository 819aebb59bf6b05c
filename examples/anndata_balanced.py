#!/usr/bin/env python3
"""anndata_balanced.py - class-balanced sampling over obs/cell_type of an
AnnData .h5ad (docs/singlecell.md, docs/sampling.md): a classifier of
imbalanced cell types that sees every type as often as the others.

Before (a WeightedRandomSampler with weights 1 / count(type), one random
cell per draw, read through a backed AnnData in forked workers):

    adata = anndata.read_h5ad(PATH, backed="r")
    codes = adata.obs["cell_type"].cat.codes.values
    w = 1.0 / np.bincount(codes[codes >= 0])[codes]
    w[codes < 0] = 0                    # no cell type: never drawn
    sampler = WeightedRandomSampler(w, num_samples=len(w))
    # and DistributedSampler cannot wrap it: each rank its own sampler

After (the weights made by ferry from the labels, the same draws on any
number of ranks, each rank reading blocks of cells):

    ds = ferry.torch.Dataset(PATH, vars="X/indices,X/data,"
                             "obs/cell_type/codes",
                             balance="obs/cell_type/codes",
                             balance_shares="0:1,1:1,2:1,3:1",
                             batch_size=64, sparse="dense",
                             sparse_dtype=torch.float32)

balance= makes every distinct label a class with the same expected share
of an epoch's draws (with replacement: a rare type's cells are drawn many
times).  Code -1, a cell without a type, is a label like the others, so
it would get a share of its own: balance_shares lists the K types (codes
0 to K-1, from the file's obs/cell_type/categories), which leaves -1 at
share 0, never drawn.

Without a PATH (or with one that does not exist) rank 0 writes a
synthetic .h5ad with anndata: 4040 cells, types T/B/NK/pDC at 70/20/8/2 %
of the typed cells, 40 cells without a type, each type expressing its own
genes.  A linear classifier is trained for 3 epochs, its gradients
averaged over the ranks.  Checks, every epoch: each type's share of the
cells served (all ranks) within TOL of 1/K (the file's own shares, 0.70
and 0.02, are far outside), no cell without a type served, the same
number of batches on every rank; at the end every type recognised (its
accuracy on the last epoch's cells at least 0.9).

Run:  mpirun -n 2 /usr/bin/python3 examples/anndata_balanced.py [PATH.h5ad]
"""

import os
import sys
import warnings

import h5py
import numpy as np
import torch
from mpi4py import MPI

import ferry.torch

warnings.filterwarnings("ignore")

TYPES = ["T", "B", "NK", "pDC"]
COUNTS = [2800, 800, 320, 80]  # 70 / 20 / 8 / 2 % of the typed cells
MISSING = 40  # cells without a type (code -1)
TOL = 0.03  # the most a type's share of an epoch may differ from 1/K


def make(path, comm, genes=200, seed=0):
    """Rank 0 writes a synthetic .h5ad with anndata (once)."""
    if comm.rank == 0 and not os.path.exists(path):
        import anndata
        import pandas as pd
        import scipy.sparse as sp
        rng = np.random.default_rng(seed)
        kind = rng.permutation(np.repeat(np.arange(-1, len(TYPES)),
                                         [MISSING] + COUNTS))
        n = len(kind)
        dense = rng.poisson(0.05, (n, genes)).astype(np.float32)
        for k in range(len(TYPES)):  # type k expresses genes [k*20, k*20+20)
            rows = kind == k
            dense[rows, k * 20:(k + 1) * 20] += rng.poisson(
                3.0, (rows.sum(), 20))
        names = np.array(TYPES, dtype=object)[np.maximum(kind, 0)]
        names[kind < 0] = None  # a missing value: code -1
        obs = pd.DataFrame({"cell_type": pd.Categorical(
            names, categories=TYPES)}, index=["c%d" % i for i in range(n)])
        a = anndata.AnnData(X=sp.csr_matrix(dense), obs=obs,
                            var=pd.DataFrame(index=["g%d" % j
                                                    for j in range(genes)]))
        a.write_h5ad(path)
    comm.Barrier()


def main():
    comm = MPI.COMM_WORLD
    path = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-types.h5ad"
    if not path.endswith(".h5ad"):
        path = path + ".h5ad"
    make(path, comm)
    stored = None  # the types' shares in the file (their codes 0 to K-1)
    if comm.rank == 0:
        with h5py.File(path, "r") as f:
            codes = f["obs/cell_type/codes"][:]
            k = len(f["obs/cell_type/categories"])
        stored = np.bincount(codes[codes >= 0], minlength=k) / (
            codes >= 0).sum()
    stored = comm.bcast(stored)
    k = len(stored)
    ds = ferry.torch.Dataset(path, comm, vars="X/indices,X/data,"
                             "obs/cell_type/codes",
                             balance="obs/cell_type/codes",
                             balance_shares=",".join("%d:1" % c
                                                     for c in range(k)),
                             batch_size=64, seed=3, sparse="dense",
                             sparse_dtype=torch.float32)
    names = ds.loader.categories("obs/cell_type/codes")
    ds_cells = ds.loader.num_samples
    genes = ds.loader.widths["X/indices"]
    torch.manual_seed(0)
    model = torch.nn.Linear(genes, k)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        ds.set_epoch(epoch)
        served = np.zeros(k + 1, dtype=np.int64)  # codes -1 .. k-1
        right = np.zeros(k, dtype=np.int64)
        batches = 0
        for b in ds:
            x = torch.log1p(b["X"])
            y = b["obs/cell_type/codes"].long()
            keep = ~b["padded"]
            served += np.bincount(y[keep].numpy() + 1, minlength=k + 1)
            keep &= y >= 0
            logits = model(x[keep])
            loss = torch.nn.functional.cross_entropy(logits, y[keep])
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():  # the ranks' mean gradient
                g = p.grad.numpy()
                comm.Allreduce(MPI.IN_PLACE, g)
                g /= comm.size
            opt.step()
            hit = (logits.argmax(1) == y[keep]).numpy()
            right += np.bincount(y[keep].numpy()[hit], minlength=k)
            batches += 1
            del b, x, y, keep
        comm.Allreduce(MPI.IN_PLACE, served)
        comm.Allreduce(MPI.IN_PLACE, right)
        counts = comm.allgather(batches)
        share = served[1:] / served.sum()
        if len(set(counts)) != 1 or counts[0] != len(ds):
            sys.exit("anndata_balanced: epoch %d: batches per rank %s "
                     "(len %d)" % (epoch, counts, len(ds)))
        if np.abs(share - 1.0 / k).max() > TOL:
            sys.exit("anndata_balanced: epoch %d: the types' shares %s, "
                     "expected %.3f +- %.2f each (the file's: %s)"
                     % (epoch, np.round(share, 3).tolist(), 1.0 / k, TOL,
                        np.round(stored, 3).tolist()))
        if served[0]:
            sys.exit("anndata_balanced: epoch %d: %d cells without a type "
                     "served (balance_shares gives code -1 none)"
                     % (epoch, served[0]))
        if comm.rank == 0:
            print("anndata_balanced: epoch %d: %s" % (epoch, ", ".join(
                "%s %.3f" % (names[c], share[c]) for c in range(k))))
    ds.close()
    accuracy = right / served[1:]
    if comm.rank == 0:
        print("anndata_balanced: %d ranks, %d cells x %d genes, %d batches "
              "a rank; the types' shares in the file %s, served %s (within "
              "%.2f of %.3f); last epoch accuracy per type %s"
              % (comm.size, ds_cells, genes, counts[0],
                 "/".join("%.3f" % s for s in stored),
                 "/".join("%.3f" % s for s in share), TOL, 1.0 / k,
                 "/".join("%.3f" % a for a in accuracy)))
    if accuracy.min() < 0.9:
        sys.exit("anndata_balanced: a type's accuracy %.3f, expected >= 0.9"
                 % accuracy.min())


if __name__ == "__main__":
    main()
