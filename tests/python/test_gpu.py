"""test_gpu.py DIR N - the Python front on a real GPU (test_gpu.sh):
ferry.torch with device="cuda" serves CUDA tensors on the rank's GPU whose
values are the file's, every sample once per epoch, ordered with work on
torch's current stream (a kernel queued right after reading the batch sees
the data); a non-default torch stream too; the same batches as device="cpu"
for the same seed; ferry.jax on the GPU through DLPack.  Prints the rates of
device="cuda" and of device="cpu" + .cuda() (not a check: a report)."""
import time

import numpy as np
import torch
from helpers import check, comm, dataset, every_once, rank, size
from mpi4py import MPI

import ferry.torch as ft

d, n, X, Y = dataset()
OPTS = dict(batch_size=64, seed=11, chunk_samples=32, tail="partial")


gpu = rank % torch.cuda.device_count()
torch.cuda.set_device(gpu)


def one_epoch(ds, stream=None):
    ids, order = [], []
    ctx = torch.cuda.stream(stream) if stream is not None else None
    if ctx:
        ctx.__enter__()
    for b in ds:
        x, y = b["x"], b["y"]
        check(x.is_cuda and x.device.index == gpu,
              "x on cuda:%d, got %s" % (gpu, x.device))
        # a kernel on the current stream, right after the batch: it must
        # see the copied bytes (ferry orders its copy before this stream)
        s = (x.double() * 2).sum(dim=tuple(range(1, x.dim())))
        idx = b["index"].cpu().numpy()
        want = 2 * X[idx].astype(np.float64).reshape(len(idx), -1).sum(1)
        check(np.allclose(s.cpu().numpy(), want), "x sums on the GPU")
        check(np.array_equal(y.cpu().numpy(), Y[idx]), "y values")
        ids.extend(int(i) for i in idx)
        order.append(idx.copy())
        del b, x, y, s
    if ctx:
        ctx.__exit__(None, None, None)
    return ids, order


ds = ft.Dataset(d, comm, device="cuda", **OPTS)
ids, order_cuda = one_epoch(ds)
every_once(ids, n, "epoch 0 on cuda")
ids, _ = one_epoch(ds, torch.cuda.Stream())
every_once(ids, n, "epoch 1 on a side stream")
ds.close()

host = ft.Dataset(d, comm, device="cpu", **OPTS)
order_cpu = [b["index"].numpy().copy() for b in host]
host.close()
check(len(order_cpu) == len(order_cuda) and
      all(np.array_equal(a, b) for a, b in zip(order_cpu, order_cuda)),
      "device=cuda and device=cpu serve different batches for one seed")


def rate(device, epochs=3):
    ds = ft.Dataset(d, comm, device=device, batch_size=256, seed=1,
                    chunk_samples=256)
    comm.Barrier()
    t = time.perf_counter()
    nb = 0
    for _ in range(epochs):
        for b in ds:
            x = b["x"] if device == "cuda" else b["x"].cuda(non_blocking=True)
            x.sum()
            nb += 1
            del b, x
    torch.cuda.synchronize()
    dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
    ds.close()
    return nb * 256 * size / dt


r_cuda, r_cpu = rate("cuda"), rate("cpu")
if rank == 0:
    print("rate: device=cuda %.0f samples/s, device=cpu+.cuda() %.0f samples/s "
          "(%.2fx)" % (r_cuda, r_cpu, r_cuda / r_cpu), flush=True)

try:
    import jax
    import ferry.jax as fj
except ImportError:
    jax = None
if jax is not None and any(dv.platform == "gpu" for dv in jax.local_devices()):
    it = fj.iterator(d, comm, sharded=False, batch_size=32, tail="partial")
    ids = []
    for b in it:
        idx = np.asarray(b["index"])
        check(list(b["x"].devices())[0].platform == "gpu", "jax x on the GPU")
        check(np.array_equal(np.asarray(b["x"]), X[idx]), "jax x values")
        ids.extend(int(i) for i in idx)
    b = None  # views of ferry's device buffers: dropped before close
    it.close()
    every_once(ids, n, "jax")
    if rank == 0:
        print("jax on the GPU: ok", flush=True)
if rank == 0:
    print("test_gpu: OK", flush=True)
