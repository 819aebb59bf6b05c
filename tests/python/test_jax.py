"""test_jax.py DIR N - ferry.jax: sharded and one-device iterators serve
every sample once with the right values."""
import sys

import numpy as np
from mpi4py import MPI

import ferry.jax

comm = MPI.COMM_WORLD
d, n = sys.argv[1], int(sys.argv[2])
X = np.load(d + "/x.npy")
for sharded in (True, False):
    it = ferry.jax.iterator(d, comm, sharded=sharded, batch_size=32,
                            tail="partial" if not sharded else "drop_last")
    ids = []
    for b in it:
        idx = np.asarray(b["index"])
        assert np.array_equal(np.asarray(b["x"]), X[idx]), "x values"
        ids.extend(int(i) for i in idx)
    # the last batch's arrays are views of ferry's buffers (zero copy on a
    # GPU): dropped before close, as docs/python.md says
    b = None
    every = sorted(i for r in comm.allgather(ids) for i in r)
    assert len(set(every)) == len(every), "no sample twice"
    if not sharded:
        assert every == list(range(n)), "every sample once"
    it.close()
if comm.rank == 0:
    print("test_jax: OK")
