"""fake_gpu_check.py DIR N - the Python front's device batches under the fake
CUDA runtime (tests/gpu/fakecuda.c, preloaded by fake_gpu.sh): its "device
memory" is host memory and its streams copy on threads after random delays,
so an Array read before its copies were waited for shows wrong values.
Checks, on every batch of an epoch: device="cuda" Arrays say they live on
the rank's CUDA device (__dlpack_device__, __cuda_array_interface__) and hold the
file's values once the interface was taken (it orders the legacy default
stream after the copies); devices="all" over 2 devices exports one shard
per device (batch.shards, batch.shard_info) holding samples [first,
first+size) of the batch, each waited for on its own; batch[name] on a
split batch is a clear ValueError; every sample is served once;
pin_memory="yes" gives pinned host batches (memory_budget's pinned_bytes)
with the file's values.  With FERRY_TEST_H5AD (an AnnData file with a CSR
X): sparse="dense" with device="cuda" (the rows made on the device by
ferry's kernel, decision 0056) gives a dense X on the device, the loader's
vars show X dense, and every batch equals device="cpu"'s, float32 and
float16 with genes=."""
import ctypes
import os

import numpy as np
from helpers import check, comm, dataset, every_once, rank

import ferry

d, n, X, Y = dataset()


def host_copy(arr, like):
    """The bytes behind a (fake) device Array, as numpy, after the wait."""
    cai = arr.__cuda_array_interface__
    check(cai["stream"] == 1, "interface names the legacy stream")
    ptr, nbytes = cai["data"][0], arr.nbytes
    raw = ctypes.string_at(ptr, nbytes) if nbytes else b""
    return np.frombuffer(raw, dtype=like.dtype).reshape(tuple(cai["shape"]))


# One device per rank: whole-batch Arrays on the rank's device (local rank
# modulo the 2 fake devices: ranks of one node spread over its GPUs).
mine = rank % 2
L = ferry.Loader(d, comm, device="cuda", batch_size=16, seed=5, device_prefetch=1, keep_host="yes",
                 chunk_samples=32, tail="partial")
ids = []
for b in L:
    idx = np.asarray(b.indices).copy()
    x, y = b["x"], b["y"]
    check(x.device == "cuda" and x.__dlpack_device__() == (2, mine),
          "x on CUDA device %d, got %r" % (mine, x.__dlpack_device__()))
    check(b.shards is not None and len(b.shards) == 1, "one shard")
    check(b.shard_info == [(mine, 0, len(idx))], "shard_info %r" % b.shard_info)
    check(np.array_equal(host_copy(x, X), X[idx]), "x values, batch %d" % b.index)
    check(np.array_equal(host_copy(y, Y), Y[idx]), "y values, batch %d" % b.index)
    ids.extend(int(i) for i in idx)
    # Batch.to_dict on a device batch: Arrays on the device, capsules made
    # visible on the stream asked for; the indices stay on the host
    dd = b.to_dict(None, index_key="i")
    check(dd["x"].__dlpack_device__() == (2, mine) and
          dd["i"].__dlpack_device__() == (1, 0) and
          np.array_equal(host_copy(dd["y"], Y), Y[idx]), "to_dict on CUDA")
    cd = b.to_dict(None, ["x"], capsule=True, stream=2)
    check('"dltensor"' in repr(cd["x"]), "to_dict(capsule=True) on CUDA")
    del x, y, dd, cd
    b.release()
every_once(ids, n, "one device per rank")
L.close()

# Two devices per rank: one shard each, batch[name] refused.
L = ferry.Loader(d, comm, device="cuda", devices="all", batch_size=16, device_prefetch=1, keep_host="yes",
                 seed=6, chunk_samples=32, tail="partial")
ids = []
for b in L:
    idx = np.asarray(b.indices).copy()
    info = b.shard_info
    check(len(info) == 2 and [i[0] for i in info] == [0, 1],
          "two shards on devices 0 and 1: %r" % (info,))
    check(sum(i[2] for i in info) == len(idx), "shards cover the batch")
    try:
        b["x"]
        check(False, "batch['x'] on a split batch did not raise")
    except ValueError as e:
        check("batch.shards" in str(e), "the ValueError says what to use")
    for k, (dev, first, size) in enumerate(info):
        sh = b.shards[k]
        check(sorted(sh) == ["x", "y"], "shard keys %r" % sorted(sh))
        check(sh["x"].__dlpack_device__() == (2, dev), "shard %d device" % k)
        check(sh["x"].shape[0] == size, "shard %d rows" % k)
        part = idx[first:first + size]
        check(np.array_equal(host_copy(sh["x"], X), X[part]),
              "shard %d x values, batch %d" % (k, b.index))
        check(np.array_equal(host_copy(sh["y"], Y), Y[part]),
              "shard %d y values" % k)
    ids.extend(int(i) for i in idx)
    del sh
    b.release()
every_once(ids, n, "two devices per rank")
L.close()
# Host batches from pinned memory (pin_memory="yes"): counted as pinned,
# values right; the default is pageable.
for pin, want in (("yes", True), ("no", False)):
    L = ferry.Loader(d, comm, device="cpu", pin_memory=pin, batch_size=16,
                     seed=7)
    check((L.memory_budget()["pinned_bytes"] > 0) == want,
          "pin_memory=%s: pinned_bytes %d" % (pin, L.memory_budget()["pinned_bytes"]))
    for b in L:
        idx = np.asarray(b.indices)
        check(b["x"].device == "cpu", "pinned host batch is CPU memory")
        check(np.array_equal(np.asarray(b["x"]), X[idx]), "pinned x values")
        del idx
        b.release()
    L.close()


# A ragged variable on the device: values and offsets both in device
# memory (one copy), equal to the writer's; max_len known on the host.
meg = __import__("os").environ.get("FERRY_TEST_MEGATRON")
if meg:
    with np.load(meg + ".seq.npz") as z:
        V, O = z["values"], z["offsets"]
    # devices="auto" after the devices="all" loader above, which left its
    # device 0 current: still the local rank's device, not device 0 (it
    # took ferry's leftover for the application's choice)
    L = ferry.Loader(meg + ".idx", comm, device="cuda", batch_size=6, seed=2,
                     device_prefetch=2, tail="partial")
    ids = []
    for b in L:
        idx = np.asarray(b.indices).copy()
        r = b["tokens"]
        check(isinstance(r, ferry.Ragged), "ragged on CUDA: %r" % (r,))
        check(r.values.__dlpack_device__() == (2, mine) and
              r.offsets.__dlpack_device__() == (2, mine),
              "values and offsets on CUDA device %d: %r, %r" % (
                  mine, r.values.__dlpack_device__(),
                  r.offsets.__dlpack_device__()))
        o = host_copy(r.offsets, np.zeros(0, dtype=np.int64))
        v = host_copy(r.values, V)
        lens = np.diff(o)
        check(o[0] == 0 and len(o) == len(idx) + 1 and r.nvalues == o[-1] and
              r.max_len == (int(lens.max()) if len(lens) else 0),
              "device offsets %r, max_len %d" % (o, r.max_len))
        for k, i in enumerate(idx):
            check(np.array_equal(v[o[k]:o[k + 1]], V[O[i]:O[i + 1]]),
                  "sample %d on the device differs from the writer's" % i)
        ids.extend(int(i) for i in idx)
        del r, v, o
        b.release()
    every_once(ids, len(O) - 1, "ragged on CUDA")
    L.close()
    # offsets_dtype="int32": the device offsets are the int32 copy
    L = ferry.Loader(meg + ".idx", comm, device="cuda", batch_size=5, seed=3,
                     device_prefetch=1, tail="partial", offsets_dtype="int32")
    ids = []
    for b in L:
        idx = np.asarray(b.indices).copy()
        r = b["tokens"]
        check(r.offsets.__dlpack_device__() == (2, mine),
              "int32 offsets on CUDA device %d" % mine)
        o = host_copy(r.offsets, np.zeros(0, dtype=np.int32))
        v = host_copy(r.values, V)
        check(o.dtype == np.int32 and o[0] == 0 and len(o) == len(idx) + 1,
              "device int32 offsets %r" % (o,))
        for k, i in enumerate(idx):
            check(np.array_equal(v[o[k]:o[k + 1]], V[O[i]:O[i + 1]]),
                  "int32: sample %d on the device" % i)
        ids.extend(int(i) for i in idx)
        del r, v, o
        b.release()
    every_once(ids, len(O) - 1, "int32 offsets on CUDA")
    L.close()
    # pad="max": the padded values and the lengths on the device, one copy
    L = ferry.Loader(meg + ".idx", comm, device="cuda", batch_size=6, seed=4,
                     device_prefetch=1, tail="partial", pad="max",
                     pad_value="-1")
    ids = []
    for b in L:
        idx = np.asarray(b.indices).copy()
        x, ln = b["tokens"], b.lengths("tokens")
        check(x.__dlpack_device__() == (2, mine) and
              ln.__dlpack_device__() == (2, mine),
              "pad: values and lengths on CUDA device %d" % mine)
        lens = host_copy(ln, np.zeros(0, dtype=np.int64))
        xv = host_copy(x, V)
        width = int(lens.max()) if len(lens) else 0
        check(xv.size == len(idx) * width, "pad: %d values for %d x %d" % (
            xv.size, len(idx), width))
        xv = xv.reshape(len(idx), width) if width else xv
        for k, i in enumerate(idx):
            n = O[i + 1] - O[i]
            check(lens[k] == n and np.array_equal(xv[k, :n], V[O[i]:O[i + 1]])
                  and (xv[k, n:] == -1).all(),
                  "pad: sample %d on the device differs" % i)
        ids.extend(int(i) for i in idx)
        del x, ln, xv
        b.release()
    every_once(ids, len(O) - 1, "pad on CUDA")
    L.close()
    # pad over two devices (devices="all"): each shard its samples' padded
    # rows (batch.shards[i]["tokens"], [size, W]); the lengths on the host
    L = ferry.Loader(meg + ".idx", comm, device="cuda", devices="all",
                     batch_size=6, seed=4, device_prefetch=1,
                     tail="partial", pad="max", pad_value="-1")
    ids = []
    for b in L:
        idx = np.asarray(b.indices).copy()
        ln = b.lengths("tokens")
        check(ln.__dlpack_device__()[0] == 1, "pad on 2 devices: host lengths")
        lens = np.from_dlpack(ln).copy()
        for k, (dev, first, size) in enumerate(b.shard_info):
            x = b.shards[k]["tokens"]
            check(x.__dlpack_device__() == (2, dev) and x.shape[0] == size,
                  "pad: shard %d on device %d, %d rows" % (k, dev, size))
            xv = host_copy(x, V)
            width = xv.size // size if size else 0
            xv = xv.reshape(size, width) if size else xv
            for j in range(size):
                i, n = idx[first + j], lens[first + j]
                check(n == O[i + 1] - O[i] and
                      np.array_equal(xv[j, :n], V[O[i]:O[i + 1]]) and
                      (xv[j, n:] == -1).all(),
                      "pad: sample %d in shard %d differs" % (i, k))
            del x, xv
        ids.extend(int(i) for i in idx)
        del ln
        b.release()
    every_once(ids, len(O) - 1, "pad over two devices")
    L.close()
h5ad = os.environ.get("FERRY_TEST_H5AD")
if h5ad:
    for opts in ({}, {"sparse_dtype": "float16", "genes": "g5,g0,40,g56"}):
        common = dict(sparse="dense", vars="X/indices,X/data", batch_size=16,
                      seed=3, tail="partial", **opts)
        H = ferry.Loader(h5ad, comm, device="cpu", **common)
        want = [(np.asarray(b.indices).copy(), np.from_dlpack(b["X"]).copy())
                for b in H]
        H.close()
        L = ferry.Loader(h5ad, comm, device="cuda", device_prefetch=2, **common)
        check(list(L.vars) == ["X"], "sparse=dense on the device: vars %r" %
              (list(L.vars),))
        k = 0
        for b in L:
            x = b["X"]
            check(x.__dlpack_device__() == (2, rank % 2),
                  "sparse=dense: X on the device")
            check(k < len(want), "more device batches than host batches")
            if k < len(want):
                idx, ref = want[k]
                got = host_copy(x, ref)
                check(np.array_equal(np.asarray(b.indices), idx) and
                      got.tobytes() == ref.tobytes(),
                      "sparse=dense %r: batch %d differs from device=cpu's" %
                      (opts, b.index))
            k += 1
            del x
            b.release()
        check(k == len(want), "sparse=dense %r: %d device batches, %d host" %
              (opts, k, len(want)))
        L.close()
        if rank == 0:
            print("sparse=dense on the device %r: %d batches equal" %
                  (opts, k), flush=True)
if rank == 0:
    print("fake_gpu_check: OK", flush=True)
