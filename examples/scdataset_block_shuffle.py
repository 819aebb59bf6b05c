#!/usr/bin/env python3
"""scdataset_block_shuffle.py - scDataset-style block shuffle with a
per-batch fetch callback.

Before (scDataset over an AnnData-like store: blocks of contiguous cells
shuffled, a fetch_callback that turns the batch's indices into data):

    ds = scDataset(adata, BlockShuffling(block_size=64), batch_size=64,
                   fetch_callback=lambda adata, idx: (adata.X[idx],
                                                      labels[idx]))
    dl = DataLoader(ds, batch_size=None, num_workers=8)

After (ferry reads whole blocks through MPI-IO; the callback gets the
batch's tensors and global indices):

    ds = ferry.torch.Dataset(DATA, batch_size=64, shuffle="block",
                             block_size=64, vars="x",
                             transform=lambda b: (b["x"], labels[b["index"]]))

Run:  mpirun -n 2 /usr/bin/python3 examples/scdataset_block_shuffle.py DATA
"""

import os
import sys

import numpy as np
import torch
from mpi4py import MPI

import ferry.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-npy"
    comm = MPI.COMM_WORLD
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


if __name__ == "__main__":
    main()
