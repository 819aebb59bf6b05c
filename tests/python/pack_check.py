"""pack_check.py PREFIX - run under mpirun by pack.sh: packed rows
(pack=concat, docs/lm.md) through ferry.Loader and ferry.torch over a
uint16 Megatron corpus written by make_megatron.py (PREFIX.doc.npz holds
its documents).  Checks: every row's tokens are the corpus's documents
concatenated in some order and cut every seq_len (each row's pieces, told
by positions and document_ids, hold their document's tokens), every token
once over the ranks; ferry.torch widens the uint16 tokens to int32 (torch
< 2.3 has no uint16), gives cu_seqlens in the varlen layout with
max_seqlen, equal to ferry.torch.varlen of the per-row bounds; pack_stats
is the corpus's.  Exits non-zero with a message on the first failed
check."""
import sys

import numpy as np
import torch
from helpers import check, comm, rank

import ferry
import ferry.torch

prefix = sys.argv[1]
with np.load(prefix + ".seq.npz") as z:
    values, offsets = z["values"], z["offsets"]
N, T = len(offsets) - 1, int(offsets[-1])
L = 16
opts = dict(pack="concat", seq_len=L, batch_size=4, seed=5, tail="partial",
            overlap=1, vars="tokens,segment_ids,positions,loss_mask,"
            "cu_seqlens,document_ids")

# ferry.Loader: the raw outputs, every token once
Ld = ferry.Loader(prefix + ".idx", **opts)
st = Ld.pack_stats()
check(st is not None and st["tokens"] == T and st["documents"] == N and
      st["seq_len"] == L and st["overlap"] == 1, "pack_stats %r" % (st,))
check(ferry.Loader(prefix + ".idx", batch_size=4).pack_stats() is None,
      "pack_stats of a loader that does not pack")
Ld.set_epoch(0)
seen = np.zeros(T, dtype=np.int64)
for b in Ld:
    tok = np.from_dlpack(b["tokens"])
    pos = np.from_dlpack(b["positions"])
    doc = np.from_dlpack(b["document_ids"])
    check(tok.dtype == values.dtype and tok.shape[1] == L + 1,
          "tokens %s %r" % (tok.dtype, tok.shape))
    for r in range(tok.shape[0]):
        for i in range(L):
            d = doc[r, i]
            if d < 0:
                continue
            x = offsets[d] + pos[r, i]
            check(tok[r, i] == values[x], "row %d position %d: token %d, "
                  "the corpus has %d" % (r, i, tok[r, i], values[x]))
            seen[x] += 1
    del tok, pos, doc, b
Ld.close()
total = np.zeros_like(seen)
comm.Allreduce(seen, total)
check(total.max() == 1 and total.sum() >= T - 1,
      "tokens served: %d of %d, most %d times" % (total.sum(), T, total.max()))

# ferry.torch: widened tokens, varlen cu_seqlens
ds = ferry.torch.Dataset(prefix + ".idx", **opts)
ds.set_epoch(0)
for b in ds:
    t, cu = b["tokens"], b["cu_seqlens"]
    check(t.dtype == torch.int32 or (hasattr(torch, "uint16") and
                                     t.dtype == torch.uint16),
          "tokens dtype %s" % t.dtype)
    B = t.shape[0]
    check(cu.dtype == torch.int32 and cu.dim() == 1 and int(cu[0]) == 0 and
          int(cu[-1]) == B * L and bool((cu[1:] > cu[:-1]).all()),
          "cu_seqlens %r" % cu)
    seg = b["segment_ids"]
    # a piece boundary wherever segment_ids changes, rows end at b * L
    want = [0]
    for r in range(B):
        for i in range(1, L):
            if seg[r, i] != seg[r, i - 1]:
                want.append(r * L + i)
        want.append((r + 1) * L)
    check(cu.tolist() == want, "cu_seqlens %r, want %r" % (cu.tolist(), want))
    lens = cu[1:] - cu[:-1]
    check(b["max_seqlen"] == int(lens.max()), "max_seqlen")
    del t, cu, seg, b
ds.close()
# a mix of two corpora (docs/lm.md "Mixing corpora"): each row one
# source's, its tokens that source's; the shares of rows in proportion
mixed = ""
if len(sys.argv) > 2:
    prefix2 = sys.argv[2]
    with np.load(prefix2 + ".seq.npz") as z:
        values2, offsets2 = z["values"], z["offsets"]
    spec = "mix:%s.idx=0.75,%s.idx=0.25" % (prefix, prefix2)
    draws = 96
    mo = dict(opts, mix_exhaust="restart", num_draws=draws)
    ds = ferry.torch.Dataset(spec, **mo)
    ds.set_epoch(1)
    rows = [0, 0]
    for b in ds:
        tok, pos = b["tokens"], b["positions"]
        doc = b["document_ids"]
        for r in range(tok.shape[0]):
            if bool(b["padded"][r]):
                continue
            d = doc[r][doc[r] >= 0]
            src = int(d[0] >= N)
            check(bool(((d >= N) == bool(src)).all()),
                  "a row holds documents of both sources: %r" % d.tolist())
            rows[src] += 1
            vals, offs, d0 = ((values2, offsets2, N) if src else
                              (values, offsets, 0))
            for i in range(L):
                if doc[r, i] < 0:
                    continue
                x = offs[int(doc[r, i]) - d0] + int(pos[r, i])
                check(int(tok[r, i]) == int(vals[x]),
                      "mix row %d position %d: token %d, source %d has %d"
                      % (r, i, int(tok[r, i]), src, int(vals[x])))
        del tok, pos, doc, b
    ds.close()
    total = np.zeros(2, dtype=np.int64)
    comm.Allreduce(np.array(rows, dtype=np.int64), total)
    check(total.sum() == draws and abs(total[0] - 0.75 * draws) <= 1,
          "mix: rows per source %r of %d draws (0.75, 0.25)"
          % (total.tolist(), draws))
    mixed = "; a mix: %d and %d rows of the two corpora" % tuple(total)

if rank == 0:
    print("ok: pack_check: %d tokens of %d documents once, varlen cu_seqlens%s"
          % (T, N, mixed))
