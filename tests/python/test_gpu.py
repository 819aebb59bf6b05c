"""test_gpu.py DIR N - the Python front on a real GPU (test_gpu.sh):
ferry.torch with device="cuda" serves CUDA tensors on the rank's GPU whose
values are the file's, every sample once per epoch, ordered with work on
torch's current stream (a kernel queued right after reading the batch sees
the data); a non-default torch stream too; the same batches as device="cpu"
for the same seed; ferry.jax on the GPU through DLPack.  Prints the rates of
device="cuda" and of device="cpu" + .cuda() (not a check: a report)."""
import os
import time

import numpy as np
import torch
from helpers import check, comm, dataset, every_once, rank, size
from mpi4py import MPI

import ferry
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

# A ragged variable (tokens of a Megatron corpus) on the GPU: values and
# offsets CUDA tensors of the rank's device, equal to the writer's; padded()
# and nested() on the device; the same batches as device="cpu".
meg = os.environ.get("FERRY_TEST_MEGATRON")
if meg:
    with np.load(meg + ".seq.npz") as z:
        V, O = z["values"], z["offsets"]
    ROPTS = dict(batch_size=8, seed=4, tail="partial", device_prefetch=2)
    ds = ft.Dataset(meg + ".idx", comm, device="cuda", **ROPTS)
    ids, rorder = [], []
    for b in ds:
        r = b["tokens"]
        check(r.values.is_cuda and r.offsets.is_cuda and
              r.values.device.index == gpu and r.offsets.device.index == gpu,
              "ragged values/offsets on cuda:%d: %s %s" % (
                  gpu, r.values.device, r.offsets.device))
        idx = b["index"].cpu().numpy().copy()
        o = r.offsets.cpu().numpy().copy()
        v = r.values.cpu().numpy().copy()
        lens = np.diff(o)
        check(o[0] == 0 and len(o) == len(idx) + 1 and int(r.nvalues) == o[-1]
              and int(r.max_len) == (int(lens.max()) if len(lens) else 0),
              "device offsets %r, nvalues %d, max_len %d" % (
                  o, r.nvalues, r.max_len))
        for k, i in enumerate(idx):
            check(np.array_equal(v[o[k]:o[k + 1]], V[O[i]:O[i + 1]]),
                  "ragged sample %d on the GPU differs from the writer's" % i)
        x, ln = ft.padded(r, pad_value=7)
        check(x.is_cuda and tuple(x.shape) == (len(idx), int(r.max_len)),
              "padded on the GPU: %s %s" % (x.device, tuple(x.shape)))
        xh = x.cpu().numpy().copy()
        for k, i in enumerate(idx):
            L = O[i + 1] - O[i]
            check(int(ln[k]) == L and np.array_equal(xh[k, :L], V[O[i]:O[i + 1]])
                  and (xh[k, L:] == 7).all(), "padded row %d" % k)
        nt = ft.nested(r)
        check(nt.is_cuda, "nested tensor on the GPU")
        ids.extend(int(i) for i in idx)
        rorder.append(idx)
        del b, r, x, ln, nt
    every_once(ids, len(O) - 1, "ragged on cuda")
    ds.close()
    host = ft.Dataset(meg + ".idx", comm, device="cpu", **ROPTS)
    horder = [b["index"].numpy().copy() for b in host]
    host.close()
    check(len(horder) == len(rorder) and
          all(np.array_equal(a, b) for a, b in zip(horder, rorder)),
          "ragged: device=cuda and device=cpu serve different batches")
    if rank == 0:
        print("ragged on the GPU: ok (%d batches on rank 0)" % len(rorder),
              flush=True)

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
    try:
        it.close()
    except ferry.StateError as e:
        # what still holds the batch?  collect cycles, then close again,
        # and say which it was (the check fails either way)
        import gc
        gc.collect()
        try:
            it.close()
            again = "closed after gc.collect()"
        except ferry.StateError:
            again = "still held after gc.collect()"
        check(False, "jax: close with the last batch dropped: %s (%s)" % (e, again))
    every_once(ids, n, "jax")
    if rank == 0:
        print("jax on the GPU: ok", flush=True)
if rank == 0:
    print("test_gpu: OK", flush=True)
