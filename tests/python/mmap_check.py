"""mmap_check.py DIR - io="mmap": a file truncated while a loader maps it
gives a ferry error naming the file on every rank (each rank whose own
copy faulted names itself), never a SIGBUS that kills the process; before the truncation the batches hold the file's
values."""
import os

import numpy as np
from helpers import comm, dataset

import ferry

d, _, X, _ = dataset()
L = ferry.Loader(d, comm, io="mmap", batch_size=32, seed=2, prefetch=1,
                 vars="x")
it = iter(L)
b = next(it)
idx = np.asarray(b.indices).copy()
assert np.array_equal(np.asarray(b["x"]), X[idx]), "mapped values"
b.release()
del b
comm.Barrier()
if comm.rank == 0:
    # keep the header and a few rows: every later page is gone
    os.truncate(d + "/x.npy", 4096)
comm.Barrier()
err = None
try:
    for epoch in range(3):
        for b in it:
            b.release()
        L.set_epoch(epoch + 1)
        it = iter(L)
except ferry.Error as e:
    err = str(e)
assert err is not None, "reading a truncated mapped file raised nothing"
assert "x.npy" in err, "the error names the file: %s" % err
assert "changed while it was read" in err or "shorter" in err, err
errs = comm.allgather(err)
assert all(e and "x.npy" in e for e in errs), "every rank fails: %r" % errs
if comm.rank == 0:
    print("mmap_check: OK:", err)
