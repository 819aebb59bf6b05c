"""python_overhead.py [REPEATS] - the per-batch cost of the Python layer,
without I/O: one process (ferry initialises MPI), the mem: backend, batches
of 4 samples of float32[1], so that the loader itself costs well under a
microsecond per batch.  Prints, in microseconds, the CPU time of the
training thread (time.thread_time: what the Python layer takes from the
cores the loader's threads need; unlike wall time it hardly moves with the
load of a shared machine), median of REPEATS passes (default 7) and the
fastest, and the wall time per batch beside it:

  per batch, iterating an epoch of 50,000 batches:
    iterate             for b in loader (ferry_next with the GIL released,
                        the Batch object, its release)
    + items             b.items()
    + torch.from_dlpack [torch.from_dlpack(a) for _, a in b.items()] (the
                        pattern of tests/bench/python_bench.py), the tensors
                        dropped before the next batch
    ferry.torch         ferry.torch.Dataset: a dict of tensors per batch
                        (the variable, the indices, the bool pad mask)
  per call, on one batch held:
    __dlpack_device__, __dlpack__ (capsule made and freed), b["x"],
    torch._C._from_dlpack(capsule) (torch's converter alone) and
    torch.from_dlpack(array) (with its Python-side checks)

Run with PYTHONPATH=BUILD/python /usr/bin/python3 tests/bench/python_overhead.py
"""
import statistics
import sys
import time
import timeit

import torch

import ferry
import ferry.torch

repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
N, B = 200000, 4
spec = "mem:N=%d,vars=x:float32:1" % N
L = ferry.Loader(spec, batch_size=B, shuffle="none")
ds = ferry.torch.Dataset(spec, batch_size=B, shuffle="none")


def iterate():
    for b in L:
        pass


def items():
    for b in L:
        b.items()


def dlpack():
    for b in L:
        ts = [torch.from_dlpack(a) for _, a in b.items()]
        del ts, b


def dataset():
    for d in ds:
        del d


loops = [("iterate", iterate, L), ("+ items", items, L),
         ("+ torch.from_dlpack", dlpack, L), ("ferry.torch", dataset, ds)]
cpu = {name: [] for name, _, _ in loops}
wall = {name: [] for name, _, _ in loops}
for r in range(repeats):
    for name, fn, obj in loops:
        obj.set_epoch(r)
        nb = len(L)
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        cpu[name].append((time.thread_time() - c0) / nb * 1e6)
        wall[name].append((time.perf_counter() - t0) / nb * 1e6)
print("per batch (us of CPU, median / fastest of %d epochs of %d batches; "
      "wall median):" % (repeats, N // B))
for name, _, _ in loops:
    print("  %-22s %6.2f / %6.2f   wall %6.2f"
          % (name, statistics.median(cpu[name]), min(cpu[name]),
             statistics.median(wall[name])))
L.set_epoch(0)
b = next(iter(L))
a = b["x"]
env = dict(a=a, b=b, torch=torch, fd=getattr(torch._C, "_from_dlpack", None))
calls = ["a.__dlpack_device__()", "a.__dlpack__()", "b['x']",
         "torch.from_dlpack(a)"]
if env["fd"] is not None:
    calls.insert(3, "fd(a.__dlpack__())")
print("per call (us of CPU, median / fastest of %d runs of 20,000):"
      % repeats)
for stmt in calls:
    t = [x / 20000 * 1e6 for x in
         timeit.repeat(stmt, globals=env, number=20000, repeat=repeats,
                       timer=time.thread_time)]
    print("  %-22s %6.3f / %6.3f" % (stmt.replace("fd(", "_from_dlpack("),
                                     statistics.median(t), min(t)))
del a, b, env
L.close()
ds.close()
