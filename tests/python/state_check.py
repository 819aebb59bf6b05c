"""state_check.py DIR N STATEFILE - run on 3 ranks by state.sh: the first 2
ranks serve K batches of epoch 1 and take state_dict() (the same bytes on
both; pickled by rank 0); all 3 ranks load it and serve the rest: together
every sample of the epoch exactly once."""
import pickle
import sys

import numpy as np
from helpers import check, comm, every_once, rank, same_everywhere
from mpi4py import MPI

import ferry

d, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opts = dict(batch_size=8, seed=11, tail="partial", shuffle="block",
            block_size=16, chunk_samples=50)


first = comm.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
before = []
if first != MPI.COMM_NULL:
    with ferry.Loader(d, comm=first, **opts) as L:
        L.set_epoch(1)
        it = iter(L)
        for _ in range(5):
            with next(it) as b:
                before += [int(i) for i in np.from_dlpack(b.indices)]
        sd = L.state_dict()
        check(sd["format"] == "ferry-state" and sd["version"] == 1,
              "state_dict keys")
        same_everywhere(sd["state"], "the state bytes", first)
        if rank == 0:
            with open(path, "wb") as f:
                pickle.dump(sd, f)
    first.Free()
comm.Barrier()
with open(path, "rb") as f:
    sd = pickle.load(f)
after = []
with ferry.Loader(d, **opts) as L:
    L.load_state_dict(sd if rank != 1 else sd["state"])  # dict or bytes
    check(L.epoch == 1, "resumed epoch %r" % L.epoch)
    same_everywhere(len(L), "len() after resume")
    after = [int(i) for b in L for i in np.from_dlpack(b.indices)]
    try:
        L.load_state_dict({"format": "something else"})
        check(False, "a foreign dict accepted")
    except ferry.FormatError:
        pass
every_once(before + after, n, "saved on 2 + resumed on 3")
if rank == 0:
    print("state_check.py: passed")
