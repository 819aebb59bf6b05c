#!/usr/bin/env python3
"""scdataset_block_shuffle.py - scDataset's BlockShuffling + fetch_callback
over an AnnData .h5ad, replaced by ferry (docs/singlecell.md).

Before (scDataset over a backed AnnData: blocks of block_size contiguous
cells shuffled, a fetch_callback that reads the batch's cells -- sorted,
as h5py wants -- densifies them and looks up their labels, in forked
DataLoader workers):

    adata = anndata.read_h5ad(PATH, backed="r")
    codes = adata.obs["cell_type"].cat.codes.values

    def fetch_callback(adata, idx):
        idx = np.sort(idx)
        return (torch.tensor(adata.X[idx].toarray()),
                torch.tensor(codes[idx]), torch.tensor(idx))

    ds = scDataset(adata, BlockShuffling(block_size=64), batch_size=64,
                   fetch_callback=fetch_callback)
    dl = DataLoader(ds, batch_size=None, num_workers=8)

After (every MPI rank reads only its own blocks of cells, one contiguous
read of X/indices and of X/data per chunk; the CSR rows densified to
float32 by ferry.torch; the cell types' codes are a variable like X; the
callback gets the batch's tensors and the cells' global indices):

    ds = ferry.torch.Dataset(PATH, vars="X/indices,X/data,"
                             "obs/cell_type/codes", shuffle="block",
                             block_size=64, shuffle_buffer=4,
                             chunk_samples=1024, batch_size=64,
                             tail="partial", sparse="dense",
                             sparse_dtype=torch.float32,
                             transform=lambda b: (b["X"],
                                                  b["obs/cell_type/codes"],
                                                  b["index"]))

Without a PATH (or with one that does not exist) rank 0 writes a synthetic
.h5ad with anndata (a scipy CSR X, obs/cell_type categorical).  Checks,
over two epochs on every rank: every cell served exactly once an epoch
across the ranks (the indices all-gathered), the same number of batches
on every rank, each batch's cells from few blocks (the block shuffle: the
shuffle_buffer blocks of a window, two windows' where a batch straddles
them), another order in epoch 1 than in epoch 0, and the served rows
and codes equal to what anndata reads (backed="r") for those cells: all
of them on a small file, a sample of the batches on a large one.

With a PATH that does not end in .h5ad the example reads the dense .npy
dataset of make_data.py (x, y) instead, the labels looked up in memory by
the batch's indices (the first version of this example; kept for the
tests without anndata).

Run:  mpirun -n 2 /usr/bin/python3 examples/scdataset_block_shuffle.py [P]
      (P: an .h5ad, by default ferry-example-blocks.h5ad; or a .npy DIR)
"""

import os
import sys
import warnings

import numpy as np
import torch
from mpi4py import MPI

import ferry.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402

warnings.filterwarnings("ignore")

BLOCK = 64
BUFFER = 4  # shuffle_buffer: blocks whose cells a rank mixes together
CHUNK = 1024  # cells a read: 16 blocks (the automatic size of a small file
#               is below a block)


def make_h5ad(path, comm, n=3001, genes=300, seed=0):
    """Rank 0 writes a synthetic .h5ad with anndata (once): n cells (not a
    multiple of the global batch: the tail is served too), about 5 % of
    the genes expressed in a cell, 4 cell types."""
    if comm.rank == 0 and not os.path.exists(path):
        import anndata
        import pandas as pd
        import scipy.sparse as sp
        rng = np.random.default_rng(seed)
        x = sp.random(n, genes, density=0.05, format="csr",
                      random_state=seed, dtype=np.float32)
        x.data = np.round(x.data * 10 + 1)  # counts 1..11
        kind = rng.integers(0, 4, n)
        obs = pd.DataFrame({"cell_type": pd.Categorical(
            np.array(["B", "T", "NK", "Mono"])[kind])},
            index=["c%d" % i for i in range(n)])
        a = anndata.AnnData(X=x, obs=obs, var=pd.DataFrame(
            index=["g%d" % j for j in range(genes)]))
        a.write_h5ad(path)
    comm.Barrier()


def run_h5ad(path, comm):
    make_h5ad(path, comm)

    def fetch(b):  # scDataset's fetch_callback: the batch for the model
        return b["X"], b["obs/cell_type/codes"].long(), b["index"]

    ds = ferry.torch.Dataset(path, comm, vars="X/indices,X/data,"
                             "obs/cell_type/codes", shuffle="block",
                             block_size=BLOCK, shuffle_buffer=BUFFER,
                             chunk_samples=CHUNK, batch_size=64, seed=2,
                             tail="partial",
                             sparse="dense", sparse_dtype=torch.float32,
                             transform=fetch)
    n = ds.loader.num_samples
    genes = ds.loader.widths["X/indices"]
    # the batches whose rows are compared with anndata's: all on a small
    # file, about 16 a rank on a large one
    stride = max(1, len(ds) // 16) if n * genes > 2 ** 24 else 1
    orders, kept = [], []
    worst = 0  # the most blocks one batch's cells came from
    for epoch in range(2):
        ds.set_epoch(epoch)
        served, batches = [], 0
        for x, y, idx in ds:
            assert x.shape == (len(idx), genes) and x.dtype == torch.float32
            assert y.shape == idx.shape
            i = idx.numpy().copy()
            served.append(i)
            worst = max(worst, len(np.unique(i // BLOCK)))
            if epoch == 0 and batches % stride == 0:
                kept.append((i, x.clone(), y.clone()))
            batches += 1
        del x, y, idx
        order = np.concatenate(served)
        counts = comm.allgather(batches)
        every = np.concatenate(comm.allgather(order))
        if len(set(counts)) != 1:
            sys.exit("scdataset_block_shuffle: batches per rank differ: %s"
                     % counts)
        if not np.array_equal(np.sort(every), np.arange(n)):
            sys.exit("scdataset_block_shuffle: epoch %d: not every cell "
                     "once (%d served of %d, %d distinct)"
                     % (epoch, len(every), n, len(np.unique(every))))
        orders.append(order)
    ds.close()
    # a block shuffle: a batch of 64 cells draws on the BUFFER blocks of a
    # window, two windows where it straddles them; shuffle="chunks" over
    # the same reads gives about 24, a uniform shuffle about 50
    if worst > 2 * BUFFER:
        sys.exit("scdataset_block_shuffle: a batch's cells came from %d "
                 "blocks of %d; a block shuffle with shuffle_buffer=%d "
                 "gives at most %d" % (worst, BLOCK, BUFFER, 2 * BUFFER))
    if np.array_equal(orders[0], orders[1]):
        sys.exit("scdataset_block_shuffle: epoch 1 served the cells in "
                 "epoch 0's order")
    # what anndata reads for the same cells (backed: from the file)
    import anndata
    a = anndata.read_h5ad(path, backed="r")
    codes = np.asarray(a.obs["cell_type"].cat.codes)
    checked = 0
    for i, x, y in kept:
        s = np.argsort(i)
        want = a.X[i[s]]
        want = want.toarray() if hasattr(want, "toarray") else np.asarray(want)
        diff = (x.numpy()[s] != want.astype(np.float32)).any(1)
        if diff.any():
            bad = i[s][np.flatnonzero(diff)[0]]
            sys.exit("scdataset_block_shuffle: cell %d's row differs from "
                     "anndata's adata.X[%d]" % (bad, bad))
        if not np.array_equal(y.numpy(), codes[i]):
            sys.exit("scdataset_block_shuffle: cell types differ from "
                     "anndata's obs['cell_type'].cat.codes")
        checked += len(i)
    a.file.close()
    checked = comm.allreduce(checked)
    if comm.rank == 0:
        print("scdataset_block_shuffle: %d ranks, %s: %d cells x %d genes, "
              "every cell once in each of 2 epochs, %d batches a rank, "
              "at most %d blocks a batch, %d rows equal to anndata's"
              % (comm.size, os.path.basename(path), n, genes, counts[0],
                 worst, checked))


def run_npy(data, comm):
    make_data.ensure("npy", data, comm)
    # Per-sample metadata held in memory (AnnData's obs), looked up by the
    # batch's global indices: the fetch callback.
    labels = torch.from_numpy(np.load(os.path.join(data, "y.npy")))

    def fetch(b):
        return b["x"], labels[b["index"]]

    ds = ferry.torch.Dataset(data, comm, batch_size=64, seed=2,
                             shuffle="block", block_size=64,
                             shuffle_buffer=8, tail="partial", vars="x",
                             keys=["x"], transform=fetch)
    seen = 0
    for x, y in ds:
        assert x.shape[0] == y.shape[0]
        seen += x.shape[0]
    del x, y
    total = comm.allreduce(seen)
    n = ds.loader.num_samples
    ds.close()
    if comm.rank == 0:
        print("scdataset_block_shuffle: %d ranks, %d of %d samples served"
              % (comm.size, total, n))
    if total != n:
        sys.exit("scdataset_block_shuffle: not every sample once")


def main():
    comm = MPI.COMM_WORLD
    path = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-blocks.h5ad"
    if path.endswith(".h5ad"):
        run_h5ad(path, comm)
    else:
        run_npy(path, comm)


if __name__ == "__main__":
    main()
