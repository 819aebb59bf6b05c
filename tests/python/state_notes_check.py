"""state_notes_check.py DIR - run on 2 ranks by state_notes.sh: a state
taken mid-epoch over a directory of WebDataset shards resumes after a file
that is not a shard (README.txt) appears in the directory: the dataset's
notes then say "other files ignored", and the manifest hash (version 3,
core/manifest.c) leaves the notes out, so the state still belongs to the
dataset; the rest of the epoch is the rest of the uninterrupted run."""
import os
import sys

from helpers import check, index_batches, rank
from mpi4py import MPI

import ferry

d = sys.argv[1]
opts = dict(batch_size=8, seed=3, tail="partial", shuffle="block",
            block_size=8)


with ferry.Loader(d, **opts) as L:
    L.set_epoch(1)
    whole = index_batches(L)
with ferry.Loader(d, **opts) as L:
    L.set_epoch(1)
    head = index_batches(L, 4)
    sd = L.state_dict()
MPI.COMM_WORLD.Barrier()
if rank == 0:
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("not a shard\n")
MPI.COMM_WORLD.Barrier()
with ferry.Loader(d, **opts) as L:
    L.load_state_dict(sd)
    tail = index_batches(L)
check(len(whole) > 8, "%d batches" % len(whole))
check(head + tail == whole,
      "the state resumed after README.txt appeared: the rest of the epoch")
if rank == 0:
    print("state_notes_check.py: passed (%d batches)" % len(whole))
