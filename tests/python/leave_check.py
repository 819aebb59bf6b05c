"""leave_check.py DIR - run on 3 ranks by leave.sh: a training loop that
breaks out of the epoch on rank 0 only (``for batch in loader: ... break``),
then leaves the ``with`` block, which closes the loader on rank 0 while
ranks 1 and 2 are still iterating.  Rank 0's close and the other ranks'
iteration raise ferry.PeerError naming rank 0, ferry_close and batch 10;
nobody hangs (leave.sh runs it under a hard timeout).  Then every rank
breaks at the same batch: a normal early stop, no error.  Then an exception
on one rank inside `with` leaves it at once (the loader is abandoned, not
closed collectively)."""
import sys

from helpers import check, comm, rank, same_everywhere

import ferry

d = sys.argv[1]


opts = dict(batch_size=4, chunk_samples=8, shuffle_buffer=1, prefetch=2,
            checkpoint_signal="none")
seen = 0
err = None
try:
    with ferry.Loader(d, **opts) as loader:
        for i, batch in enumerate(loader):
            seen += 1
            if rank == 0 and i == 9:
                break
except ferry.PeerError as e:
    err = e
check(err is not None, "no PeerError after %d batches" % seen)
msg = str(err)
check(err.code == -16, "code %r" % err.code)
check("rank 0:" in msg and "called ferry_close after 10 batches of epoch 0"
      in msg, "message %r" % msg)
if rank != 0:
    check(seen >= 10 and "other ranks called ferry_next (for batch %d)"
          % seen in msg, "rank %d stopped after %d batches: %r"
          % (rank, seen, msg))
same_everywhere(msg, "the message")

# Every rank leaves the loop at the same batch: nothing to report.
with ferry.Loader(d, **opts) as loader:
    for i, batch in enumerate(loader):
        if i == 9:
            break
    del batch
    loader.set_epoch(1)  # every rank starts the next epoch together
    n = sum(1 for _ in loader)
    check(n == len(loader), "next epoch: %d of %d batches" % (n, len(loader)))
# An exception on one rank inside `with` (a failed training step) while the
# others wait in a collective of their own (the gradient all-reduce, here a
# barrier that the failed rank joins once its exception is handled): the
# `with` is left at once, abandoning the loader, not after a collective
# close that would wait collective_timeout (20 s) for ranks stuck elsewhere.
import time  # noqa: E402
t0 = time.monotonic()
try:
    with ferry.Loader(d, collective_timeout=20, **opts) as loader:
        for i, batch in enumerate(loader):
            if i == 3:
                if rank == 1:
                    raise RuntimeError("training step failed")
                comm.Barrier()  # the others' all-reduce
                raise RuntimeError("a peer failed")
except RuntimeError:
    pass
if rank == 1:
    comm.Barrier()  # rank 1 reaches the all-reduce after its failure
dt = time.monotonic() - t0
check(dt < 10, "leaving `with` on an exception took %.1f s" % dt)
check(loader.closed, "the abandoned loader counts as closed")
if rank == 0:
    print("leave_check.py: passed")
