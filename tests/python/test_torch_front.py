"""test_torch_front.py DIR N - ferry.torch under mpirun (test_torch_front.sh
runs it on 1 to 3 ranks).  Exits non-zero with a message on the first
failed check.  Batches in host memory (device="cpu", so that the checks
read them with .numpy() on a GPU machine too); test_gpu.py is the GPU's."""
import warnings

import numpy as np
import torch
from helpers import (check, comm, dataset, gathered, rank, same_everywhere,
                     size)
from mpi4py import MPI
from torch.utils.data import DataLoader

import ferry
import ferry.torch as ft

d, n, X, Y = dataset()
warnings.filterwarnings("ignore", "This DataLoader will create")
OPTS = dict(batch_size=16, seed=3, chunk_samples=32, tail="partial",
            device="cpu")


def served(iterable, expect_len=None):
    """The real (not padded) global indices of one pass, values checked."""
    ids, nb = [], 0
    for b in iterable:
        idx = b["index"].numpy()
        check(b["x"].dtype == torch.float32 and b["y"].dtype == torch.int64,
              "dtypes")
        check(np.array_equal(b["x"].numpy(), X[idx]), "x values")
        check(np.array_equal(b["y"].numpy(), Y[idx]), "y values")
        check(b["padded"].dtype == torch.bool, "padded is a bool mask")
        ids.extend(int(i) for i, p in zip(idx, b["padded"]) if not p)
        nb += 1
    if expect_len is not None:
        check(nb == expect_len, "%d batches served, len() said %d"
              % (nb, expect_len))
    return ids


# Exactly once per epoch, directly and through DataLoader(batch_size=None);
# len() exact and equal on every rank; epochs differ; zero copy.
ds = ft.Dataset(d, comm, **OPTS)
check(ds.keys == ["x", "y"], "keys default to the loader's vars")
same_everywhere(len(ds), "len()")
first = served(ds, len(ds))
check(gathered(first) == list(range(n)), "epoch 0: not every sample once")
check(ds.epoch == 0, "epoch 0 after the first pass")
dl = DataLoader(ds, batch_size=None, num_workers=0)
ds.set_epoch(1)
second = served(dl, len(ds))
check(gathered(second) == list(range(n)), "epoch 1 via DataLoader")
check(comm.allreduce(int(first != second), op=MPI.SUM) > 0,
      "epochs 0 and 1 have the same order")
# An ended epoch goes on to the next one, like ferry.Loader.
third = served(ds)
check(ds.epoch == 2 and gathered(third) == list(range(n)),
      "iterating again after an ended epoch serves epoch 2")
# An early stop restarts the epoch; the same seed gives the same batches.
ds.set_epoch(2)
it = iter(ds)
next(it)
del it
again = served(ds)
check(again == third, "a pass stopped early restarts its epoch")
ds.set_epoch(0)
check(served(ds) == first, "set_epoch(0) gives epoch 0's batches again")

# Zero copy: the tensor is the batch buffer.
L = ds.loader
ds.set_epoch(0)
b = next(iter(ds))
check(b["x"].data_ptr() % 64 == 0, "64-byte aligned tensor")
check(L.held >= 1, "a held tensor keeps its batch's slot")
del b
check(L.held == 0, "dropping the tensors returns the slot")

# The ferry.torch.loader convenience, keys and transform.
dl2 = ft.loader(d, comm, keys=["y"], transform=lambda b: {"y2": b["y"] * 2,
                                                          "i": b["index"]},
                **OPTS)
out = next(iter(dl2))
check(sorted(out) == ["i", "y2"], "transform's dict is yielded")
check(torch.equal(out["y2"], torch.from_numpy(Y[out["i"].numpy()] * 2)),
      "transform sees the batch")
del out
dl2.dataset.close()

# tail="pad": every rank the same full batches, the padding marked.
with ft.Dataset(d, comm, batch_size=16, seed=3, chunk_samples=32,
                tail="pad", device="cpu") as pds:
    shapes = set()
    ids = []
    for b in pds:
        shapes.add(tuple(b["x"].shape))
        ids.extend(int(i) for i, p in zip(b["index"], b["padded"]) if not p)
    del b
    check(shapes == {(16, 16)}, "tail=pad: full batches only: %r" % shapes)
    check(gathered(ids) == list(range(n)), "tail=pad: every sample once")

# num_workers > 0 is refused, clearly, never duplicating data.
try:
    list(DataLoader(ds, batch_size=None, num_workers=2))
    check(False, "num_workers=2 was not refused")
except Exception as e:  # noqa: BLE001 - the worker's error, re-raised
    msg = str(e)
    check("num_workers=0" in msg and "ferry's own threads" in msg,
          "num_workers=2 refused with a clear message, got: %s" % msg[-300:])

# Mid-epoch resume: save after k batches, the rest once and only once.
ds.set_epoch(4)
k = len(ds) // 3
before = []
it = iter(ds)
for _ in range(k):
    b = next(it)
    before.extend(int(i) for i in b["index"])
del b
state = ds.state_dict()
states = comm.allgather(state)
check(all(s == states[0] for s in states), "state_dict differs across ranks")
after = served(it)
del it
ds.close()
r = ft.Dataset(d, comm, **OPTS)
r.load_state_dict(states[0])  # rank 0's copy, as a checkpoint holds it
resumed = served(r)
check(resumed == after, "the resumed run serves what the saved one had left")
check(gathered(before + resumed) == list(range(n)),
      "resume: every sample of the epoch exactly once")
check(r.epoch == 4, "resumed in the saved epoch")
r.close()

# A small model trains and its loss decreases (gradients averaged by MPI).
torch.manual_seed(0)
model = torch.nn.Linear(X.shape[1], int(Y.max()) + 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
tr = ft.Dataset(d, comm, batch_size=32, seed=7, chunk_samples=32,
                tail="drop_last", device="cpu")
losses = []
for epoch in range(4):
    tr.set_epoch(epoch)
    total, nb = 0.0, 0
    for b in tr:
        loss = torch.nn.functional.cross_entropy(model(b["x"]), b["y"])
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            g = p.grad.numpy()
            comm.Allreduce(MPI.IN_PLACE, g)
            g /= size
        opt.step()
        total += loss.item()
        nb += 1
    del b
    losses.append(comm.allreduce(total) / comm.allreduce(nb))
check(losses[-1] < 0.8 * losses[0], "loss did not decrease: %r" % losses)
tr.close()
if rank == 0:
    print("test_torch_front: %d ranks OK (loss %.3f -> %.3f)"
          % (size, losses[0], losses[-1]))
