"""ragged_check.py PREFIX - run under mpirun by ragged.sh: a ragged
variable through ferry.Loader and ferry.torch, checked against the values
make_megatron.py drew (PREFIX.seq.npz).  Exits non-zero with a message on
the first failed check."""
import sys

import numpy as np
import torch
from helpers import check, every_once, rank, size

import ferry
import ferry.torch

prefix = sys.argv[1]
with np.load(prefix + ".seq.npz") as z:
    values, offsets = z["values"], z["offsets"]
N = len(offsets) - 1


def want(i):
    return values[offsets[i]:offsets[i + 1]]


# ferry.Loader: a Ragged of two Arrays, zero-copy
L = ferry.Loader(prefix + ".idx", batch_size=5, seed=3, tail="partial")
L.set_epoch(0)
ids = []
for b in L:
    r = b["tokens"]
    check(isinstance(r, ferry.Ragged), "batch['tokens'] is %r" % (r,))
    idx = np.from_dlpack(b.indices)
    v, o = np.from_dlpack(r.values), np.from_dlpack(r.offsets)
    check(o.dtype == np.int64 and o[0] == 0 and len(o) == len(idx) + 1,
          "offsets %r for %d samples" % (o, len(idx)))
    check(len(r) == len(idx) and r.nvalues == o[-1] == v.shape[0],
          "len %d, nvalues %d, offsets end at %d" % (len(r), r.nvalues, o[-1]))
    lens = np.diff(o)
    longest = int(lens.max()) if len(lens) else 0
    check(r.max_len == longest, "max_len %d, longest %d" % (r.max_len, longest))
    check(np.array_equal(np.asarray(r.lengths()), lens), "lengths()")
    for k, i in enumerate(idx):
        check(np.array_equal(v[o[k]:o[k + 1]], want(i)),
              "sample %d: tokens differ from the writer's" % i)
        check(np.array_equal(np.asarray(r[k]), want(i)), "r[%d]" % k)
    d = b.to_dict()
    check(isinstance(d["tokens"], ferry.Ragged), "to_dict()['tokens']")
    ids.extend(int(i) for i in idx)
    del r, v, o, d, b, idx
every_once(ids, N, "ferry.Loader")
L.close()

# ferry.torch: tensors, padded and nested
ds = ferry.torch.Dataset(prefix + ".idx", batch_size=6, seed=4,
                         tail="partial", shuffle="block", block_size=4)
ds.set_epoch(1)
ids = []
for b in ds:
    r = b["tokens"]
    check(isinstance(r.values, torch.Tensor) and
          isinstance(r.offsets, torch.Tensor), "ferry.torch: tensors")
    idx = b["index"].tolist()
    x, n = ferry.torch.padded(r, pad_value=-7)
    check(tuple(x.shape) == (len(idx), r.max_len), "padded shape %r" % (x.shape,))
    for k, i in enumerate(idx):
        check(int(n[k]) == len(want(i)), "padded length of %d" % i)
        check(np.array_equal(x[k, :n[k]].numpy(), want(i)),
              "padded sample %d" % i)
        check(bool((x[k, n[k]:] == -7).all()), "pad value of sample %d" % i)
    if r.max_len > 2:  # a fixed length: cut with truncate, else refused
        y, m = ferry.torch.padded(r, length=2, truncate=True)
        check(tuple(y.shape) == (len(idx), 2) and int(m.max()) <= 2,
              "truncated to 2: %r %r" % (tuple(y.shape), m))
        try:
            ferry.torch.padded(r, length=2)
            check(False, "length=2 without truncate was not refused")
        except ValueError as e:
            check("truncate" in str(e), "the refusal: %s" % e)
    nt = ferry.torch.nested(r)
    parts = nt.unbind()
    check(len(parts) == len(idx) and
          all(np.array_equal(p.numpy(), want(i)) for p, i in zip(parts, idx)),
          "nested")
    ids.extend(idx)
    del r, b, x, n, nt, parts
every_once(ids, N, "ferry.torch")
ds.close()
if rank == 0:
    print("ok: ragged_check.py on %d ranks: %d samples through ferry.Loader "
          "and ferry.torch (padded, nested)" % (size, N))
