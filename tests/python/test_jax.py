"""test_jax.py DIR N - ferry.jax: sharded and one-device iterators serve
every sample once with the right values."""
import numpy as np
from helpers import comm, dataset, gathered

import ferry.jax

d, n, X, _ = dataset()
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
    every = gathered(ids)
    assert len(set(every)) == len(every), "no sample twice"
    if not sharded:
        assert every == list(range(n)), "every sample once"
    it.close()
if comm.rank == 0:
    print("test_jax: OK")
