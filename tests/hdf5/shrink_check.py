"""shrink_check.py FILE VARS: read FILE (io=independent, the default) on
every rank of COMM_WORLD; after the second batch rank 0 cuts the file to
a fifth of its size.  Every rank must then fail with ferry.IOFailure
naming a short read, the file, a dataset of VARS and the likely cause
(tests/hdf5/shrink.sh).  Rank 0 prints one line a rank (gathered: lines
that ranks print themselves can interleave in mpirun's output); exit 1
when the loader read on without an error or failed another way."""
import os
import sys

from mpi4py import MPI

import ferry

path, names = sys.argv[1], sys.argv[2]
comm = MPI.COMM_WORLD
loader = ferry.Loader(path, vars=names, batch_size=16, seed=0,
                      chunk_samples=32, prefetch=1, comm=comm)
n = 0
ok = False
try:
    for epoch in range(3):
        loader.set_epoch(epoch)
        for batch in loader:
            n += 1
            del batch
            if n == 2:
                comm.Barrier()
                if comm.rank == 0:
                    os.truncate(path, os.path.getsize(path) // 5)
                comm.Barrier()
    line = "rank %d: no error after %d batches" % (comm.rank, n)
except ferry.IOFailure as ex:
    msg = str(ex)
    want = ["short read: file %s, dataset /" % path,
            "(the file shrank after it was opened?)"]
    ok = all(w in msg for w in want) and \
        any("dataset /%s," % v in msg for v in names.split(","))
    line = ("rank %d: %s after %d batches: %s"
            % (comm.rank, "ok" if ok else "WRONG", n, msg))
except Exception as ex:  # noqa: BLE001 - any other failure is the test's
    line = ("rank %d: WRONG %s after %d batches: %s"
            % (comm.rank, type(ex).__name__, n, ex))
lines = comm.gather(line, root=0)
if comm.rank == 0:
    print("\n".join(lines), flush=True)
sys.exit(0 if ok else 1)
