#!/usr/bin/python3
"""The PyTorch user's alternative for HDF5 data, for docs/performance.md.

A map-style Dataset reads one row of an HDF5 dataset per __getitem__
through h5py (the file opened lazily in each worker process, as the h5py
documentation advises), a DistributedSampler gives this process its share,
and a DataLoader batches it.  It runs for a fixed time and prints one JSON
line: {"rank", "samples", "seconds"}.

usage: h5py_peer.py FILE.h5 DATASET RANK WORLD BATCH WORKERS SECONDS
"""
import json
import sys
import time

import h5py
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class H5Rows(Dataset):
    def __init__(self, path, name):
        self.path, self.name = path, name
        self.dset = None
        with h5py.File(path, "r") as f:
            self.n = f[name].shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.dset is None:  # opened in each worker process
            self.dset = h5py.File(self.path, "r")[self.name]
        return torch.from_numpy(self.dset[i])


def main():
    path, name, rank, world, batch, workers, seconds = sys.argv[1:8]
    rank, world, batch, workers = int(rank), int(world), int(batch), int(workers)
    seconds = float(seconds)
    ds = H5Rows(path, name)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank,
                                 shuffle=True, seed=0, drop_last=True)
    loader = DataLoader(ds, batch_size=batch, sampler=sampler,
                        num_workers=workers, drop_last=True)
    torch.set_num_threads(1)
    n = 0
    t0 = time.perf_counter()
    for b in loader:
        n += b.shape[0]
        if time.perf_counter() - t0 > seconds:
            break
    dt = time.perf_counter() - t0
    print(json.dumps({"rank": rank, "samples": n, "seconds": dt}))


if __name__ == "__main__":
    main()
