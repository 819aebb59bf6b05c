"""python_bench.py DATA BATCH EPOCHS - run on N ranks by python.sh: the
epochs through ferry.Loader, torch.from_dlpack of every variable of every
batch; rank 0 prints one JSON line (the slowest rank's time)."""
import json
import sys
import time

import torch
from mpi4py import MPI

import ferry

comm = MPI.COMM_WORLD
data, bs, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with ferry.Loader(data, batch_size=bs, shuffle="chunks",
                  shuffle_buffer=4) as L:
    L.set_epoch(0)
    nb = len(L)
    comm.Barrier()
    t0 = time.perf_counter()
    samples = 0
    for e in range(epochs):
        L.set_epoch(e)
        for b in L:
            ts = [torch.from_dlpack(a) for _, a in b.items()]
            samples += ts[0].shape[0]
            del ts, b
    dt = time.perf_counter() - t0
dt = comm.allreduce(dt, op=MPI.MAX)
samples = comm.allreduce(samples)
if comm.Get_rank() == 0:
    print(json.dumps({"kind": "python", "batch": bs, "elapsed_s": dt,
                      "samples": samples, "samples_per_s": samples / dt,
                      "batches_per_rank": nb * epochs}))
