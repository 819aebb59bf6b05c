#!/usr/bin/env python3
"""ddp_distributed_sampler.py - DataLoader + DistributedSampler replaced.

Before (the usual DDP recipe; one process per GPU, forked workers each
reading the file, ranks with unequal batch counts near the tail, the epoch
restarted from zero on resume):

    ds = MyH5Dataset("train.h5")                  # __getitem__ reads 1 row
    sampler = DistributedSampler(ds, shuffle=True, seed=1)
    dl = DataLoader(ds, batch_size=256, sampler=sampler, num_workers=8,
                    pin_memory=True, drop_last=True)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in dl: ...

After (ferry's threads read whole chunks through MPI-IO; every rank gets the
same number of batches; tensors are views of ferry's pinned buffers):

    dl = ferry.torch.loader(DATA, batch_size=256, seed=1, vars="x,y")
    for epoch in range(epochs):
        dl.dataset.set_epoch(epoch)
        for b in dl: x, y = b["x"], b["y"] ...

Run:  mpirun -n 2 /usr/bin/python3 examples/ddp_distributed_sampler.py DATA
      srun python3 examples/ddp_distributed_sampler.py DATA
DATA (a directory of x.npy, y.npy; an HDF5 file works too) is made by
make_data.py if it does not exist.  The model is trained with
torch.distributed (gloo) DistributedDataParallel, the process group set up
from MPI (no torchrun).  Prints one summary line on rank 0.
"""

import os
import socket
import sys

import torch
import torch.distributed as dist
from mpi4py import MPI

import ferry.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402


def init_process_group(comm):
    """torch.distributed over gloo, rendezvous address from rank 0 by MPI."""
    addr = port = None
    if comm.rank == 0:
        addr = socket.gethostname()
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    addr, port = comm.bcast((addr, port), root=0)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port),
                            rank=comm.rank, world_size=comm.size)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-npy"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    comm = MPI.COMM_WORLD
    make_data.ensure("npy", data, comm)
    init_process_group(comm)
    torch.manual_seed(0)

    dl = ferry.torch.loader(data, comm, batch_size=64, seed=1,
                            shuffle="chunks", tail="drop_last", vars="x,y",
                            chunk_samples=128)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(make_data.FEATURES, make_data.CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses, seen = [], 0
    for epoch in range(epochs):
        dl.dataset.set_epoch(epoch)
        total, nb, expected = 0.0, 0, len(dl.dataset)
        for b in dl:
            loss = torch.nn.functional.cross_entropy(model(b["x"]), b["y"])
            opt.zero_grad()
            loss.backward()   # DDP all-reduces the gradients here
            opt.step()
            total += loss.item()
            nb += 1
            seen += b["index"].numel()
        del b   # ferry's next set_epoch needs the last batch's tensors gone
        assert nb == expected, "len() must be the batches served"
        losses.append(total / max(nb, 1))
    seen = comm.allreduce(seen)
    batches = comm.allgather(len(dl.dataset))
    dl.dataset.close()
    dist.destroy_process_group()
    if comm.rank == 0:
        print("ddp_distributed_sampler: %d ranks, %d epochs, %d batches/rank "
              "(equal: %s), %d samples, loss %.3f -> %.3f"
              % (comm.size, epochs, batches[0], len(set(batches)) == 1, seen,
                 losses[0], losses[-1]))
    if not losses[-1] < losses[0]:
        sys.exit("ddp_distributed_sampler: the loss did not decrease")


if __name__ == "__main__":
    main()
