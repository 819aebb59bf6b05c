"""npy_check.py OUT - run under mpirun by npy_python.sh: the WebDataset
shards of tests/wds/make_wds_npy.py (OUT/good) through ferry.Loader: the
dense .npy variables NumPy arrays of shape [B, ...] (npy float32 [B, 3, 4],
s.npy float64 [B], be.npy float64 [B, 2, 3] in native order, long.npy
uint8 [B, 2]), the ragged ones ferry.Ragged (seg.npy int32 values [n],
box.npy float32 values [n, 4], tail.npy int16), every sample equal to what
the writer wrote (OUT/ref/all.npz), every sample once, the same batch count
on every rank."""
import sys

import numpy as np
from helpers import check, every_once, same_everywhere, size

import ferry

out = sys.argv[1]
with np.load(out + "/ref/all.npz") as z:
    ref = {k: z[k] for k in z.files}
N = len(ref["cls"])
DENSE = {"npy": (np.float32, (3, 4)), "s.npy": (np.float64, ()),
         "be.npy": (np.float64, (2, 3)), "long.npy": (np.uint8, (2,))}
RAGGED = {"seg.npy": (np.int32, ()), "box.npy": (np.float32, (4,)),
          "tail.npy": (np.int16, ())}


def check_batch(b):
    idx = np.from_dlpack(b.indices)
    for var, (dt, shape) in DENSE.items():
        a = np.from_dlpack(b[var])
        check(a.dtype == dt and a.shape == (len(idx),) + shape,
              "%s is %s %r, want %s %r" % (var, a.dtype, a.shape,
                                           np.dtype(dt), shape))
        check(a.dtype.isnative, "%s is not in native order" % var)
        check(np.array_equal(a, ref[var][idx]),
              "%s: the batch's arrays differ from the writer's" % var)
    for var, (dt, inner) in RAGGED.items():
        r = b[var]
        check(isinstance(r, ferry.Ragged), "batch[%r] is %r" % (var, r))
        v, o = np.from_dlpack(r.values), np.from_dlpack(r.offsets)
        check(v.dtype == dt and v.shape[1:] == inner,
              "%s values are %s %r" % (var, v.dtype, v.shape))
        rv, ro = ref[var + "_values"], ref[var + "_offsets"]
        for k, i in enumerate(idx):
            check(np.array_equal(v[o[k]:o[k + 1]], rv[ro[i]:ro[i + 1]]),
                  "sample %d: its %s differs from the writer's" % (i, var))
    cls = np.from_dlpack(b["cls"])
    check(np.array_equal(cls, idx), "cls is not the sample's index")
    return [int(i) for i in idx]


with ferry.Loader(out + "/good", batch_size=6, seed=7, tail="partial",
                  chunk_samples=4, threads=2) as L:
    L.set_epoch(0)
    same_everywhere(len(L), "the batch count")
    ids, nb = [], 0
    for b in L:
        with b:
            ids += check_batch(b)
        nb += 1
    check(nb == len(L), "served %d batches, len() %d" % (nb, len(L)))
    every_once(ids, N, "epoch 0 on %d ranks" % size)
print("npy_check.py: ok on %d ranks" % size)
