#!/usr/bin/python3
"""The PyTorch user's alternative to ferry, for docs/performance.md.

A map-style Dataset reads one row of a .npy file per __getitem__ (through
numpy's memmap, as such datasets usually do), a DistributedSampler gives
this process its share, and a DataLoader batches it.  It runs for a fixed
time and prints one JSON line: {"rank", "samples", "seconds"}.

usage: torch_peer.py FILE.npy RANK WORLD BATCH WORKERS SECONDS [WEIGHTS.npy]

With WEIGHTS.npy the sampler is PyTorch's WeightedRandomSampler (with
replacement, num_samples = rows / WORLD per process, seeded by RANK): the
weighted-sampling user's alternative (tests/bench/weighted.sh).
"""
import json
import sys
import time

import numpy as np
import torch
from torch.utils.data import (DataLoader, Dataset, DistributedSampler,
                              WeightedRandomSampler)


class NpyRows(Dataset):
    def __init__(self, path):
        self.path = path
        self.rows = None
        self.n = np.load(path, mmap_mode="r").shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.rows is None:  # opened in each worker process
            self.rows = np.load(self.path, mmap_mode="r")
        return torch.from_numpy(np.array(self.rows[i]))


def main():
    path, rank, world, batch, workers, seconds = sys.argv[1:7]
    rank, world, batch, workers = int(rank), int(world), int(batch), int(workers)
    seconds = float(seconds)
    ds = NpyRows(path)
    if len(sys.argv) > 7:  # weighted: PyTorch has no distributed form
        w = torch.from_numpy(np.load(sys.argv[7]).astype(np.float64))
        sampler = WeightedRandomSampler(w, num_samples=len(ds) // world,
                                        replacement=True,
                                        generator=torch.Generator().manual_seed(rank))
    else:
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
