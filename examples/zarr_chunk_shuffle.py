#!/usr/bin/env python3
"""zarr_chunk_shuffle.py - zarr-torch-dataset style chunk shuffle + buffer
over a Zarr store.

Before (a Zarr dataset that shuffles chunks, each worker reading whole
chunks into a shuffle buffer):

    ds = ZarrChunkDataset(zarr.open("train.zarr"), shuffle_chunks=True,
                          buffer_chunks=8)
    dl = DataLoader(ds, batch_size=256, num_workers=8)

After (the chunk permutation and the buffer are ferry's, shared between the
MPI ranks, read by its threads):

    ds = ferry.torch.Dataset("train.zarr", batch_size=256, shuffle="chunks",
                             shuffle_buffer=8, chunk_samples=256)

Run:  mpirun -n 2 /usr/bin/python3 examples/zarr_chunk_shuffle.py DATA.zarr
On Jean Zay: examples/slurm/jean-zay-zarr.sbatch.
"""

import os
import sys

from mpi4py import MPI

import ferry.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example.zarr"
    comm = MPI.COMM_WORLD
    make_data.ensure("zarr", data, comm)
    ds = ferry.torch.Dataset(data, comm, batch_size=128, seed=4,
                             shuffle="chunks", shuffle_buffer=8,
                             chunk_samples=256, tail="partial")
    ids = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        ids = []
        for b in ds:
            ids.extend(int(i) for i in b["index"])
        del b
    every = sorted(i for r in comm.allgather(ids) for i in r)
    n = ds.loader.num_samples
    nb = len(ds)
    ds.close()
    if comm.rank == 0:
        print("zarr_chunk_shuffle: %d ranks, %d batches/rank, %d of %d "
              "samples served once" % (comm.size, nb, len(set(every)), n))
    if every != list(range(n)):
        sys.exit("zarr_chunk_shuffle: not every sample exactly once")


if __name__ == "__main__":
    main()
