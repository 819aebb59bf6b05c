"""held_check.py DIR N - run under mpirun by held.sh.  Holding batches does
not stop training (issue 30, item 2): with the default prefetch=4 a loop
that kept the targets of its first three batches failed at the fifth with
"ferry.InvalidArgument: all 4 prefetch batches are still held by the
caller", where a PyTorch DataLoader never fails.  Exits non-zero with a
message on the first failed check."""
import numpy as np
import torch
from helpers import check, dataset, rank

import ferry

d, n, X, Y = dataset()


def reference(L, epoch):
    """Each batch's indices and targets, copied, holding nothing."""
    L.set_epoch(epoch)
    out = []
    for b in L:
        out.append((np.from_dlpack(b.indices).copy(),
                    torch.from_dlpack(b["y"]).clone()))
    return out


def hold_first(L, epoch, k, ref):
    """Keep the targets of the first k batches (for logging, a metric) to
    the end of the epoch: every batch as holding none, the kept ones
    intact."""
    L.set_epoch(epoch)
    kept = []
    i = -1
    for i, b in enumerate(L):
        idx = np.from_dlpack(b.indices)
        y = torch.from_dlpack(b["y"])
        check(np.array_equal(idx, ref[i][0]) and torch.equal(y, ref[i][1]),
              "holding %d: batch %d differs from holding none" % (k, i))
        check(np.array_equal(y.numpy(), Y[idx]), "batch %d: y values" % i)
        if len(kept) < k:
            kept.append((i, y))
    check(i + 1 == len(ref), "holding %d: %d batches of %d" % (k, i + 1,
                                                               len(ref)))
    del b, y, idx  # the last batch
    check(L.held == len(kept), "held %d, kept %d" % (L.held, len(kept)))
    for j, y in kept:
        check(torch.equal(y, ref[j][1]), "kept batch %d changed" % j)
    del kept


def accumulate(L, epoch, k, ref):
    """Gradient accumulation: k micro-batches' inputs stay alive until one
    backward, then all go."""
    L.set_epoch(epoch)
    w = torch.zeros(3, requires_grad=True)
    inputs, i, total = [], -1, 0.0
    for i, b in enumerate(L):
        x = torch.from_dlpack(b["x"])
        check(torch.equal(torch.from_dlpack(b["y"]), ref[i][1]),
              "accumulating %d: batch %d differs" % (k, i))
        inputs.append(x)
        total = total + (x * w).sum()  # autograd keeps x until backward
        if len(inputs) == k:
            total.backward()
            for xx, j in zip(inputs, range(i - k + 1, i + 1)):
                check(np.array_equal(xx.numpy(), X[ref[j][0]]),
                      "micro-batch %d changed before backward" % j)
            inputs, total = [], 0.0
    check(i + 1 == len(ref), "accumulating %d: %d batches" % (k, i + 1))
    del inputs, total, x, b


with ferry.Loader(d, batch_size=4, seed=3, tail="partial",
                  chunk_samples=64) as L:
    mb = L.memory_budget()
    check(mb["held_bytes"] == (1 << 30) // mb["batch_bytes"] * mb[
        "batch_bytes"] or mb["held_bytes"] == (1 << 20) * mb["batch_bytes"],
          "the default held_memory=1GiB in the budget: %r" % mb)
    ref = reference(L, 0)
    check(len(ref) > 64 + 8, "%d batches" % len(ref))
    for k in (3, 8, 64):
        hold_first(L, 0, k, ref)
        accumulate(L, 0, k, ref)
    check(L.held == 0, "held %d at the end" % L.held)

# Past held_memory: ferry.InvalidArgument naming the amount and the option.
# A batch: 4 x (3 x 4 + 8) = 80 bytes; 400 bytes give 5 more slots.
with ferry.Loader(d, batch_size=4, seed=3, tail="partial", chunk_samples=64,
                  prefetch=4, held_memory="400") as L:
    check(L.memory_budget()["held_bytes"] == 400,
          "held_bytes %r" % L.memory_budget())
    kept, err = [], None
    try:
        for b in L:
            kept.append(torch.from_dlpack(b["y"]))
    except ferry.InvalidArgument as e:
        err = str(e)
    check(err is not None, "holding every batch past held_memory: no error")
    # ferry_next(4) swaps the 4 ring slots out (4 more), ferry_next(8) the
    # slot of batch 4 (5 more), ferry_next(9) finds no room for batch 5's
    check(len(kept) == 9, "failed after %d batches, want 9" % len(kept))
    for want in ("holds 9 batches of 80 B (720 B)", "held_memory=400",
                 "raise held_memory", "batches are held by ferry.Batch"):
        check(want in err, "the message lacks %r: %s" % (want, err))
    del kept, b
if rank == 0:
    print("held_check: ok", flush=True)
