"""loader_check.py DIR N - run under mpirun by loader.sh (any number of
ranks).  Exits non-zero with a message on the first failed check."""
import gc
import threading
import warnings

import numpy as np
import torch
from helpers import (check, comm, dataset, every_once, rank, same_everywhere,
                     size)

import ferry

d, n, X, Y = dataset()


def epoch_ids(loader, epoch):
    loader.set_epoch(epoch)
    ids = []
    for b in loader:
        idx = np.from_dlpack(b.indices)
        pad = np.from_dlpack(b.padded)
        x, tx = b["x"], torch.from_dlpack(b["x"])
        y = torch.from_dlpack(b["y"])
        check(tx.data_ptr() == x.ptr and x.ptr % 64 == 0,
              "zero-copy and 64-byte alignment")
        check(np.array_equal(np.from_dlpack(x), X[idx]), "x values (numpy)")
        check(np.array_equal(tx.numpy(), X[idx]), "x values (torch)")
        check(np.array_equal(y.numpy(), Y[idx]), "y values")
        check(np.asarray(x).__array_interface__["data"][0] == x.ptr,
              "__array_interface__ is a view")
        check(b.num_padded == int(pad.sum()) and b.size == len(idx),
              "size and pads")
        ids.extend(int(i) for i, p in zip(idx, pad) if not p)
    return ids


with ferry.Loader(d, batch_size=16, seed=5, tail="partial",
                  chunk_samples=64, prefetch=4) as L:
    check(L.rank == rank and L.world_size == size, "rank and world size")
    check(L.num_samples == n and L.vars == ["x", "y"], "num_samples, vars")
    check(L.device == "cpu" and L.checkpoint_requested() is False,
          "device, checkpoint_requested")
    check(L.memory_budget()["total_bytes"] > 0, "memory_budget()")
    same_everywhere(len(L), "len()")
    for e in (0, 1):
        ids = epoch_ids(L, e)
        every_once(ids, n, "epoch %d" % e)
    st = L.stats()
    check(st["batches"] == 2 * len(L) and st["samples"] >= len(ids),
          "stats(): %r" % st)
    # the same batches for the same seed: a second loader
    with ferry.Loader(d, batch_size=16, seed=5, tail="partial",
                      chunk_samples=64) as L2:
        check(epoch_ids(L2, 1) == ids, "same seed, other batches")
    # cache="node": the same batches; epoch 1 from the node's memory
    with ferry.Loader(d, batch_size=16, seed=5, tail="partial",
                      chunk_samples=64, cache="node") as L3:
        ci = L3.cache_info()
        check(ci["mode"] == "node" and ci["nodes"] >= 1 and
              ci["dataset_bytes"] == n * (X[0].nbytes + Y[0].nbytes) and
              ci["cached_bytes"] == ci["dataset_bytes"] and
              ci["storage_bytes_per_epoch"] == 0, "cache_info(): %r" % ci)
        check(L.cache_info() is None, "cache_info() without a cache")
        every_once(epoch_ids(L3, 0), n, "cache=node epoch 0")
        s0 = L3.stats()
        check(epoch_ids(L3, 1) == ids, "cache=node: other batches")
        s1 = L3.stats()
        got = comm.allreduce(s1["cache_local_bytes"] - s0["cache_local_bytes"])
        read = comm.allreduce(s1["bytes_read"] - s0["bytes_read"])
        check(read == 0 and got == n * (X[0].nbytes + Y[0].nbytes),
              "cache=node epoch 1: %d bytes from storage, %d from the cache"
              % (read, got))

    # tensors held across steps keep their values until dropped
    L.set_epoch(2)
    held = []
    for b in L:
        t = torch.from_dlpack(b["x"])
        held.append((t, t.clone()))
        if len(held) > 2:
            held.pop(0)
        for t, c in held:
            check(torch.equal(t, c), "a held tensor changed")
    check(L.held == 2, "held %d, expected 2" % L.held)
    try:
        L.set_epoch(3)
        check(False, "set_epoch with live tensors accepted")
    except ferry.StateError as e:
        check("2 batch(es)" in str(e) and e.code == -9, "StateError text")
    del held, t, c
    gc.collect()
    check(L.held == 0, "held %d after dropping the tensors" % L.held)

    # the deleter called on another thread
    L.set_epoch(3)
    it = iter(L)
    b = next(it)
    box = [torch.from_dlpack(b["y"])]
    b.release()
    check(L.held == 1, "the tensor holds the slot")
    th = threading.Thread(target=box.pop)
    th.start()
    th.join()
    check(L.held == 0, "deleter on a thread did not release")
    for b in it:
        pass

    # the DLPack keywords
    L.set_epoch(4)
    b = next(iter(L))
    a = b["x"]
    check(a.__dlpack_device__() == (1, 0), "__dlpack_device__")
    check("dltensor_versioned" in repr(a.__dlpack__(max_version=(1, 0))),
          "versioned capsule")
    check('"dltensor"' in repr(a.__dlpack__(stream=None, max_version=(0, 8))),
          "legacy capsule")
    for kw in ({"copy": True}, {"dl_device": (2, 0)}):
        try:
            a.__dlpack__(**kw)
            check(False, "%r accepted" % kw)
        except BufferError:
            pass
    check(a.shape == (16, 3) and a.dtype == "<f4" and a.nbytes == 192,
          "shape, dtype, nbytes")
    for args, kw in (((1,), {}), ((), {"strem": 1}),
                     ((), {"copy": None, "stream": None, "bogus": 0})):
        try:
            a.__dlpack__(*args, **kw)
            check(False, "__dlpack__(*%r, **%r) accepted" % (args, kw))
        except TypeError:
            pass
    check(a.__dlpack__(copy=False, dl_device=(1, 0)) is not None,
          "copy=False, dl_device=(1, 0)")
    # batch.items() / keys() / b[i]: the loader's names, the same Arrays
    check([k for k, _ in b.items()] == ["x", "y"] == b.keys() == b.vars,
          "items(), keys(), vars")
    check(b[0].ptr == a.ptr and b[-1].ptr == b["y"].ptr, "b[i]")
    # Batch.to_dict, the one-call path of ferry.torch: values, zero copy,
    # the keys asked for, the indices and the mask, capsules through fn
    idx = np.from_dlpack(b.indices).copy()
    dd = b.to_dict()
    check(list(dd) == ["x", "y"] and dd["x"].ptr == a.ptr, "to_dict()")
    td = b.to_dict(torch.from_dlpack, ["y", "x"], index_key="i",
                   padded_key="p")
    check(list(td) == ["y", "x", "i", "p"], "to_dict keys %r" % list(td))
    check(td["x"].data_ptr() == a.ptr and
          np.array_equal(td["x"].numpy(), X[idx]) and
          np.array_equal(td["y"].numpy(), Y[idx]) and
          np.array_equal(td["i"].numpy(), idx) and
          td["p"].dtype == torch.uint8 and int(td["p"].sum()) == b.num_padded,
          "to_dict(torch.from_dlpack, ...) values")
    cd = b.to_dict(torch.utils.dlpack.from_dlpack, ("x",), capsule=True,
                   index_key="i")
    check(cd["x"].data_ptr() == a.ptr and
          np.array_equal(cd["i"].numpy(), idx), "to_dict(capsule=True)")
    caps = b.to_dict(None, [1], capsule=True)
    check(list(caps) == [1] and '"dltensor"' in repr(caps[1]),
          "to_dict(None, capsule=True) gives capsules: %r" % caps)
    for args, kw, exc in ((("x",), {}, TypeError),
                          ((None, ["z"]), {}, KeyError),
                          ((None, [5]), {}, IndexError),
                          ((None, None, "i"), {}, TypeError),
                          ((None, "x"), {}, TypeError),
                          ((), {"capsules": True}, TypeError)):
        try:
            b.to_dict(*args, **kw)
            check(False, "to_dict(*%r, **%r) accepted" % (args, kw))
        except exc:
            pass
    held_before = L.held
    b.release()
    del a, dd, caps
    check(L.held == held_before, "the to_dict tensors hold the slot")
    del td, cd
    gc.collect()
    check(L.held == 0, "the slot returned with the last to_dict tensor")
    # a converter that releases the batch: an error, not a crash
    b = next(iter(L))
    try:
        b.to_dict(lambda x: b.release() or x, index_key="i")
        check(False, "to_dict went on after its fn released the batch")
    except ferry.StateError:
        pass
    for b in L:
        pass

# an mpi4py sub-communicator
sub = comm.Split(rank % 2, rank)
with ferry.Loader(d, comm=sub, batch_size=10, tail="partial") as L:
    check(L.world_size == sub.Get_size() and L.rank == sub.Get_rank(),
          "sub-communicator")
    ids = [int(i) for b in L for i in np.from_dlpack(b.indices)]
    every_once(ids, n, "sub-communicator epoch", sub)
sub.Free()

# a small torch model trained on the batches (loss goes down; the tensors
# are views, the model's inputs are made from them without a copy)
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
with ferry.Loader(d, batch_size=32, seed=1, tail="drop_last") as L:
    for e in range(3):
        L.set_epoch(e)
        total = 0.0
        for b in L:
            x = torch.from_dlpack(b["x"]) / n
            y = torch.from_dlpack(b["y"]).to(torch.float32) / (7 * n)
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
        losses.append(comm.allreduce(total))
check(losses[2] < losses[0], "training loss did not go down: %r" % losses)

# KeyboardInterrupt in the loop: the with block ends without hanging; a
# tensor still alive keeps the memory (a ResourceWarning says so)
L = ferry.Loader(d, batch_size=8)
try:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with L:
            for b in L:
                t = torch.from_dlpack(b["x"])
                idx = np.from_dlpack(b.indices).copy()
                raise KeyboardInterrupt
except KeyboardInterrupt:
    pass
check(L.closed and any(issubclass(x.category, ResourceWarning) for x in w),
      "KeyboardInterrupt: closed with a ResourceWarning")
check(b.released and np.array_equal(t.numpy(), X[idx]),
      "the tensor kept after KeyboardInterrupt still holds its batch")
# A framework that owns the checkpoint signal asks with
# request_checkpoint() on one rank (issue 11): every rank sees
# checkpoint_requested() after the same batch, and a save answers it.
with ferry.Loader(d, batch_size=4, tail="partial", chunk_samples=16,
                  checkpoint_signal="none") as L:
    L.set_epoch(0)
    stop = -1
    for b in L:
        i = b.index
        b.release()
        if rank == size - 1 and i == 2:
            L.request_checkpoint()
        if L.checkpoint_requested():
            stop = i
            break
    stops = comm.allgather(stop)
    check(len(set(stops)) == 1 and stops[0] >= 2,
          "request_checkpoint: ranks stopped at %r" % stops)
    L.state_dict()
    check(not L.checkpoint_requested(), "a save answers the request")
comm.Barrier()
if rank == 0:
    print("loader_check.py: %d ranks passed" % size)
