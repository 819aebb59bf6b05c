"""python_bench.py DATA BATCH EPOCHS [MODE] - run on N ranks by python.sh:
the epochs through ferry from Python, timed like `ferry bench` times them
(set_epoch inside the timed loop, from a barrier to the end of the last
epoch); rank 0 prints one JSON line (the slowest rank's time, and the CPU
time of the training thread per batch, time.thread_time averaged over the
ranks: Python's work plus the batches ferry_next assembles on that thread
when no worker has started them).

MODE:
  dlpack   (default; the issue's pattern) for b in ferry.Loader: then
           torch.from_dlpack of every variable of every batch (b.items())
  dataset  ferry.torch.Dataset: one dict of torch tensors per batch (every
           variable, the global indices and the padding mask)
  iterate  for b in ferry.Loader: nothing else (the Batch objects only)
"""
import json
import sys
import time

import torch
from mpi4py import MPI

import ferry
import ferry.torch

comm = MPI.COMM_WORLD
data, bs, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "dlpack"
opts = dict(batch_size=bs, shuffle="chunks", shuffle_buffer=4)


def run_dlpack(L):
    samples = 0
    for b in L:
        ts = [torch.from_dlpack(a) for _, a in b.items()]
        samples += ts[0].shape[0]
        del ts, b
    return samples


def run_iterate(L):
    samples = 0
    for b in L:
        samples += b.size
    return samples


def run_dataset(ds):
    samples = 0
    for d in ds:
        samples += d["index"].shape[0]
        del d
    return samples


if mode == "dataset":
    ds = ferry.torch.Dataset(data, **opts)
    L, run = ds.loader, lambda _: run_dataset(ds)
else:
    ds = None
    L = ferry.Loader(data, **opts)
    run = run_dlpack if mode == "dlpack" else run_iterate
comm.Barrier()
c0, t0 = time.thread_time(), time.perf_counter()
samples = nb = 0
for e in range(epochs):
    (ds or L).set_epoch(e)
    nb += len(L)
    samples += run(L)
dt, cpu = time.perf_counter() - t0, time.thread_time() - c0
(ds or L).close()
dt = comm.allreduce(dt, op=MPI.MAX)
cpu = comm.allreduce(cpu) / comm.Get_size()
samples = comm.allreduce(samples)
if comm.Get_rank() == 0:
    print(json.dumps({"kind": "python", "mode": mode, "batch": bs,
                      "elapsed_s": dt, "samples": samples,
                      "samples_per_s": samples / dt,
                      "batches_per_rank": nb,
                      "cpu_us_per_batch": cpu / nb * 1e6}))
