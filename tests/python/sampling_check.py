"""sampling_check.py TMP - run on 3 ranks by sampling.sh (TMP/data: 600
samples of make_npy.py, TMP/small: 40)."""
import sys

import numpy as np
from helpers import check, comm, index_batches, rank
from mpi4py import MPI

import ferry

tmp = sys.argv[1]
data = tmp + "/data"


if rank == 0:
    w = np.ones(600, np.float32)
    w[300:] = 3.0
    w[::5] = 0.0
    np.save(tmp + "/w.npy", w)
    bad = w.copy()
    bad[17] = -1.0
    np.save(tmp + "/bad.npy", bad)
    lab = np.zeros(600, np.int32)
    lab[500:590] = 1
    lab[590:] = 2
    np.save(data + "/label.npy", lab)
comm.Barrier()
W = np.load(tmp + "/w.npy")
opts = dict(weights=tmp + "/w.npy", seed=3, draw_block=8, vars="x,y")


def serve(c, batch, epoch, stop=None, **extra):
    """ids of every batch served on c's ranks, gathered on c's rank 0."""
    out = []
    with ferry.Loader(data, comm=c, batch_size=batch, **opts, **extra) as L:
        L.set_epoch(epoch)
        for k, b in enumerate(L):
            with b:
                ids = np.from_dlpack(b.indices).astype(np.int64)
                x0 = np.array(np.from_dlpack(b["x"])[:, 0])
                check(np.array_equal(x0, ids.astype(np.float32)),
                      "values are the samples'")
                check((W[ids] > 0).all(), "a zero weight served")
                out.append(ids.tolist())
    return c.gather(out, root=0)


# the same global batches on 1 rank (batch 12) and 3 ranks (batch 4)
one = comm.Split(0 if rank == 0 else MPI.UNDEFINED, rank)
ref = serve(one, 12, 2)[0] if one != MPI.COMM_NULL else None
got = serve(comm, 4, 2)
if rank == 0:
    check(len(got[0]) == len(ref) and len(ref) > 10, "batch counts")
    for g, b in enumerate(ref):
        mine = sorted(sum((got[r][g] for r in range(3)), []))
        check(mine == sorted(b), "global batch %d differs" % g)
    print("ok: 3 ranks serve the global batches of one rank", flush=True)

# state_dict on 3 ranks after 5 batches, load_state_dict on 2: the draws
# of the uninterrupted 3-rank run (tail=pad; pads aside)
def real_ids(L, stop=None):
    ids = []
    for k, b in enumerate(L):
        with b:
            i = np.from_dlpack(b.indices).astype(np.int64)
            p = np.from_dlpack(b.padded).astype(bool)  # copies (astype)
            ids += i[~p].tolist()
        if stop is not None and k + 1 == stop:
            break
    return ids


with ferry.Loader(data, batch_size=4, tail="pad", **opts) as L:
    L.set_epoch(1)
    full = comm.gather(real_ids(L), root=0)
with ferry.Loader(data, batch_size=4, tail="pad", **opts) as L:
    L.set_epoch(1)
    part = real_ids(L, stop=5)
    sd = L.state_dict()
two = comm.Split(0 if rank < 2 else MPI.UNDEFINED, rank)
rest = []
if two != MPI.COMM_NULL:
    with ferry.Loader(data, comm=two, batch_size=4, tail="pad", **opts) as L:
        L.load_state_dict(sd)
        rest = real_ids(L)
parts = comm.gather(part + rest, root=0)
if rank == 0:
    a = sorted(sum(full, []))
    b = sorted(sum(parts, []))
    check(a == b, "3 then 2 ranks served %d draws, the uninterrupted run %d"
          % (len(b), len(a)))
    print("ok: resumed on 2 ranks, the draws of the uninterrupted run",
          flush=True)

# balance: classes of 500, 90 and 10 samples, a third of the draws each
with ferry.Loader(data, batch_size=20, balance="label", vars="x",
                  num_draws=30000, draw_block=2, seed=1) as L:
    L.set_epoch(0)
    ids = real_ids(L)
allids = comm.gather(ids, root=0)
if rank == 0:
    lab = np.load(data + "/label.npy")
    ids = np.array(sum(allids, []))
    for c in range(3):
        share = (lab[ids] == c).mean()
        check(abs(share - 1 / 3) < 0.03, "class %d share %.3f" % (c, share))
    print("ok: balance gives every class a third", flush=True)

# a mix dataset string, 0.75 / 0.25, restart
with ferry.Loader("mix:%s=0.75,%s/small=0.25" % (data, tmp), batch_size=8,
                  vars="x", mix_exhaust="restart", num_draws=2400,
                  seed=2) as L:
    L.set_epoch(0)
    ids = real_ids(L)
allids = comm.gather(ids, root=0)
if rank == 0:
    ids = np.array(sum(allids, []))
    share = (ids >= 600).mean()
    check(len(ids) == 2400 and abs(share - 0.25) < 0.01,
          "mix: %d draws, share %.3f" % (len(ids), share))
    print("ok: a mix serves its proportions", flush=True)

# a mix resumed with other proportions: refused without mix_resume=new_mix;
# with it, the batches up to the next draw window (504 draws: 16 x 8 x 4
# rounded to global batches of 24) are the saved mix's very batches, then
# the new proportions apply; a state saved after the change resumes that
# changed sequence exactly
old = "mix:%s=0.75,%s/small=0.25" % (data, tmp)
new = "mix:%s=0.5,%s/small=0.5" % (data, tmp)
mopts = dict(batch_size=8, vars="x", mix_exhaust="restart", num_draws=2400,
             seed=2, draw_block=8)


with ferry.Loader(old, **mopts) as L:
    L.set_epoch(4)
    ref = index_batches(L)
with ferry.Loader(old, **mopts) as L:
    L.set_epoch(4)
    index_batches(L, 5)
    sd = L.state_dict()
msg = None
try:
    with ferry.Loader(new, **mopts) as L:
        L.load_state_dict(sd)
except ferry.Error as e:
    msg = str(e)
check(msg is not None and "mix_resume=new_mix" in msg,
      "another mix without mix_resume: %r" % msg)
with ferry.Loader(new, mix_resume="new_mix", **mopts) as L:
    L.load_state_dict(sd)
    rest = index_batches(L, 10)
    sd2 = L.state_dict()
    rest += index_batches(L)
check(rest[:16] == ref[5:21], "the saved mix's batches up to the change")
got = comm.gather(sum(rest[16:], []), root=0)
if rank == 0:
    ids = np.array(sum(got, []))
    share = (ids >= 600).mean()
    check(abs(share - 0.5) < 0.02, "the new mix's share %.3f" % share)
    print("ok: a changed mix applies from the next draw window (share %.3f)"
          % share, flush=True)
with ferry.Loader(new, **mopts) as L:
    L.load_state_dict(sd2)
    again = index_batches(L)
check(again == rest[10:], "a state saved after the change resumes it")
if rank == 0:
    print("ok: the change is recorded in the state", flush=True)

# a negative weight: the same ferry.Error on every rank
msg = None
try:
    ferry.Loader(data, weights=tmp + "/bad.npy", batch_size=4)
except ferry.Error as e:
    msg = str(e)
msgs = comm.allgather(msg)
check(msgs[0] is not None and "negative" in msgs[0] and len(set(msgs)) == 1,
      "bad weights: %r" % (msgs,))
if rank == 0:
    print("ok: a negative weight is one error on every rank: %s" % msgs[0],
          flush=True)
