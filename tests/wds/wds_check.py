"""wds_check.py OUT STATEFILE - run under mpirun by wds_python.sh: the
WebDataset shards of tests/wds/make_wds.py (OUT/good) through ferry.Loader:
every sample's .jpg and .json bytes (a ferry.Ragged of uint8) and its .cls
(int64) equal to what the writer wrote (OUT/ref/all.npz), every sample
once, the same batch count on every rank; then a resume: the first two
ranks (or the one) serve 3 batches of epoch 1 and save the state, every
rank loads it and serves the rest: together every sample exactly once."""
import pickle
import sys

import numpy as np
from helpers import check, comm, every_once, rank, same_everywhere, size
from mpi4py import MPI

import ferry

out, path = sys.argv[1], sys.argv[2]
d = out + "/good"
with np.load(out + "/ref/all.npz") as z:
    ref = {k: z[k] for k in z.files}
N = len(ref["cls"])


def want(var, i):
    v, o = ref[var + "_values"], ref[var + "_offsets"]
    return v[o[i]:o[i + 1]]


def check_batch(b):
    idx = np.from_dlpack(b.indices)
    cls = np.from_dlpack(b["cls"])
    check(cls.dtype == np.int64 and cls.shape == (len(idx),),
          "cls is %s %r" % (cls.dtype, cls.shape))
    for var in ("jpg", "json"):
        r = b[var]
        check(isinstance(r, ferry.Ragged), "batch[%r] is %r" % (var, r))
        v, o = np.from_dlpack(r.values), np.from_dlpack(r.offsets)
        check(v.dtype == np.uint8, "%s values are %s" % (var, v.dtype))
        for k, i in enumerate(idx):
            check(np.array_equal(v[o[k]:o[k + 1]], want(var, i)),
                  "sample %d: its .%s bytes differ from the writer's"
                  % (i, var))
    for k, i in enumerate(idx):
        check(cls[k] == ref["cls"][i], "sample %d: cls %d, written %d"
              % (i, cls[k], ref["cls"][i]))
    return [int(i) for i in idx]


opts = dict(batch_size=6, seed=7, tail="partial", chunk_samples=5,
            threads=2)
with ferry.Loader(d, **opts) as L:
    L.set_epoch(0)
    same_everywhere(len(L), "the batch count")
    ids, nb = [], 0
    for b in L:
        with b:
            ids += check_batch(b)
        nb += 1
    check(nb == len(L), "served %d batches, len() %d" % (nb, len(L)))
    every_once(ids, N, "epoch 0 on %d ranks" % size)

# resume: saved by the first min(2, size) ranks, loaded by every rank
k = min(2, size)
first = comm.Split(0 if rank < k else MPI.UNDEFINED, rank)
before = []
if first != MPI.COMM_NULL:
    with ferry.Loader(d, comm=first, **opts) as L:
        L.set_epoch(1)
        it = iter(L)
        for _ in range(3):
            with next(it) as b:
                before += check_batch(b)
        sd = L.state_dict()
        if rank == 0:
            with open(path, "wb") as f:
                pickle.dump(sd, f)
    first.Free()
comm.Barrier()
with open(path, "rb") as f:
    sd = pickle.load(f)
after = []
with ferry.Loader(d, **opts) as L:
    L.load_state_dict(sd)
    check(L.epoch == 1, "resumed epoch %r" % L.epoch)
    same_everywhere(len(L), "len() after resume")
    for b in L:
        with b:
            after += check_batch(b)
every_once(before + after, N, "saved on %d + resumed on %d" % (k, size))
if rank == 0:
    print("wds_check.py on %d ranks: passed (%d samples)" % (size, N))
