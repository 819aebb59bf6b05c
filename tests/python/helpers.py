"""helpers.py - what the Python checks of tests/python share: the MPI world,
the failing check, the dataset the shell test made, and the exactly-once
and same-on-every-rank comparisons.  The *_check.py and test_*.py scripts
import it (`from helpers import ...`; Python puts the script's folder first
on sys.path), right where they imported mpi4py, before ferry.

- comm, rank, size: MPI.COMM_WORLD and this process's place in it.
- check(cond, what): on failure print "rank R/S: FAIL: what" and abort the
  whole MPI job.  A plain assert would end one rank while the others wait
  in the next collective until run-mpi.sh's timeout: the log would say
  "timed out" instead of what failed.
- dataset(): the script's arguments DIR [N] and the arrays x.npy and
  y.npy of DIR (tests/python/make_npy.py or examples/make_data.py npy
  wrote them): (d, n, X, Y), n None without N, Y None without y.npy.
- gathered(ids, c): every rank's ids of c, sorted, on every rank.
- every_once(ids, n, what, c): those ids are 0 .. n-1, each once.
- same_everywhere(value, what, c): value (an error message, a length, a
  state) is equal on every rank of c.
- index_batches(L, k=None): the sample indices (lists of ints) of L's next
  k batches (all with None).
- resumed_both_ways(loader, batches, whole, k, epoch, names): a state taken
  after k batches of epoch with loader(False) resumes with loader(True), and
  the other way, each time giving the rest of whole (the run's batches);
  names say the two loaders in the failure's words.
"""
import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def check(cond, what):
    if not cond:
        print("rank %d/%d: FAIL: %s" % (rank, size, what), flush=True)
        comm.Abort(1)


def dataset():
    d = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else None
    X = np.load(os.path.join(d, "x.npy"))
    y = os.path.join(d, "y.npy")
    Y = np.load(y) if os.path.exists(y) else None
    return d, n, X, Y


def gathered(ids, c=comm):
    return sorted(i for r in c.allgather(ids) for i in r)


def every_once(ids, n, what, c=comm):
    every = gathered(ids, c)
    check(every == list(range(n)), "%s: not every sample once (%d of %d, "
          "%d distinct)" % (what, len(every), n, len(set(every))))


def same_everywhere(value, what, c=comm):
    values = c.allgather(value)
    check(all(v == values[0] for v in values),
          "%s: not the same on every rank: %r" % (what, values))


def index_batches(L, k=None):
    out = []
    for b in L:
        with b:
            out.append(np.from_dlpack(b.indices).astype(np.int64).tolist())
        if k is not None and len(out) == k:
            break
    return out


def resumed_both_ways(loader, batches, whole, k, epoch, names):
    for first in (False, True):
        with loader(first) as L:
            L.set_epoch(epoch)
            head = batches(L, k)
            sd = L.state_dict()
        with loader(not first) as L:
            L.load_state_dict(sd)
            tail = batches(L)
        check(head + tail == whole,
              "a state of the %s loader resumed by the %s one" %
              (names[first], names[not first]))
