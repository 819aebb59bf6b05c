"""ragged_check.py PREFIX - run under mpirun by ragged.sh: a ragged
variable through ferry.Loader and ferry.torch, checked against the values
make_megatron.py drew (PREFIX.seq.npz).  Exits non-zero with a message on
the first failed check."""
import sys

import numpy as np
import torch
import helpers
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
# offsets_dtype="int32": the offsets as int32 (cu_seqlens), equal; padded
# works on them
L = ferry.Loader(prefix + ".idx", batch_size=7, seed=8, tail="partial",
                 offsets_dtype="int32")
ids = []
for b in L:
    r = b["tokens"]
    o = np.from_dlpack(r.offsets)
    v = np.from_dlpack(r.values)
    idx = np.asarray(b.indices).tolist()
    check(o.dtype == np.int32 and len(o) == len(idx) + 1 and o[0] == 0,
          "int32 offsets: %r %r" % (o.dtype, o))
    for k, i in enumerate(idx):
        check(np.array_equal(v[o[k]:o[k + 1]], want(i)), "int32: sample %d" % i)
    ids.extend(idx)
    del r, o, v
    b.release()
every_once(ids, N, "offsets_dtype=int32")
L.close()
ds = ferry.torch.Dataset(prefix + ".idx", batch_size=9, seed=8,
                         tail="partial", offsets_dtype="int32")
for b in ds:
    r = b["tokens"]
    check(r.offsets.dtype == torch.int32, "torch offsets %r" % r.offsets.dtype)
    x, n = ferry.torch.padded(r)
    idx = b["index"].tolist()
    check(all(np.array_equal(x[k, :n[k]].numpy(), want(i))
              for k, i in enumerate(idx)), "padded over int32 offsets")
    parts = ferry.torch.nested(r).unbind()
    check(all(np.array_equal(p.numpy(), want(i)) for p, i in zip(parts, idx)),
          "nested over int32 offsets")
    del b, r, x, n, parts
ds.close()

# max_tokens with buckets and pad=max: batches within the budget, the
# same count on every rank, every sample once; state_dict after 2 batches
# and load_state_dict on a fresh loader serve the uninterrupted run's rest
T = 4 * int(np.diff(offsets).max())
TOPTS = dict(batch_size=32, max_tokens=T, bucket_window=16, seed=6,
             tail="partial")
ds = ferry.torch.Dataset(prefix + ".idx", pad="max", pad_value=-1, **TOPTS)
ids, nb, pad_rows, rows = [], 0, 0, 0
for b in ds:
    x = b["tokens"]
    n = b["tokens_lengths"] if "tokens_lengths" in b else None
    idx = b["index"].tolist()
    check(x.dim() == 2 and x.shape[0] == len(idx) <= 32, "padded %r" % (x.shape,))
    lens = [len(want(i)) for i in idx]
    check(sum(lens) <= T, "batch of %d tokens over max_tokens=%d" % (sum(lens), T))
    check(not lens or x.shape[1] == max(lens), "width %d, longest %d" % (
        x.shape[1], max(lens) if lens else 0))
    rows += sum(lens)
    pad_rows += x.shape[0] * x.shape[1] - sum(lens)
    ids.extend(idx)
    nb += 1
    del b, x
every_once(ids, N, "max_tokens")
counts = helpers.comm.allgather(nb)
check(len(set(counts)) == 1 and nb == len(ds),
      "max_tokens batch counts %r, len %d" % (counts, len(ds)))
ds.close()

ds = ferry.torch.Dataset(prefix + ".idx", **dict(TOPTS, bucket_window=0))
ds.set_epoch(3)
ref = [b["index"].tolist() for b in ds]
ds.set_epoch(3)
it = iter(ds)
first = [next(it)["index"].tolist() for _ in range(min(2, len(ref)))]
state = ds.state_dict()
it.close()  # the suspended iteration holds the last batch
ds.close()
ds = ferry.torch.Dataset(prefix + ".idx", **dict(TOPTS, bucket_window=0))
ds.load_state_dict(state)
rest = [b["index"].tolist() for b in ds]
check(first + rest == ref, "max_tokens resume: %d + %d batches, the "
      "uninterrupted run %d" % (len(first), len(rest), len(ref)))
ds.close()
if rank == 0:
    print("ok: ragged_check.py on %d ranks: %d samples through ferry.Loader "
          "and ferry.torch (padded, nested); max_tokens=%d with buckets: "
          "%d batches, padding %.1f%%" % (size, N, T, nb,
                                          100.0 * pad_rows / max(1, rows + pad_rows)))
