"""test_jax.py DIR N - ferry.jax: sharded and one-device iterators serve
every sample once with the right values; a ragged variable padded to
static shapes; packed rows (pack=concat) as static arrays, every token
once; AnnData cells densified (sparse=dense, genes=) as static arrays."""
import os

import numpy as np
from helpers import comm, dataset, gathered

import ferry.jax

d, n, X, _ = dataset()
for sharded in (True, False):
    it = ferry.jax.iterator(d, comm, sharded=sharded, batch_size=32,
                            tail="partial" if not sharded else "drop_last")
    ids = []
    for b in it:
        idx = np.asarray(b["index"])
        assert np.array_equal(np.asarray(b["x"]), X[idx]), "x values"
        ids.extend(int(i) for i in idx)
    # the last batch's arrays are views of ferry's buffers (zero copy on a
    # GPU): dropped before close, as docs/python.md says
    b = None
    every = gathered(ids)
    assert len(set(every)) == len(every), "no sample twice"
    if not sharded:
        assert every == list(range(n)), "every sample once"
    it.close()
# A ragged variable (a Megatron corpus, FERRY_TEST_MEGATRON): static shapes
# with pad=L, lengths and segment ids beside it; refused without pad.
meg = os.environ.get("FERRY_TEST_MEGATRON")
if meg:
    with np.load(meg + ".seq.npz") as z:
        V, O = z["values"], z["offsets"]
    W = 24
    for sharded in (False, True):
        it = ferry.jax.iterator(meg + ".idx", comm, sharded=sharded,
                                batch_size=8, pad=W, truncate="yes",
                                tail="partial" if not sharded else "pad")
        ids = []
        for b in it:
            x = np.asarray(b["tokens"])
            lens = np.asarray(b["tokens_lengths"])
            seg = np.asarray(b["tokens_segment_ids"])
            idx = np.asarray(b["index"])
            pad = np.asarray(b["padded"])
            assert x.shape == (len(idx), W) and seg.shape == x.shape, x.shape
            assert lens.dtype == np.int32 and seg.dtype == np.int32
            for k, i in enumerate(idx):
                n = min(O[i + 1] - O[i], W)
                assert lens[k] == n and seg[k].sum() == n and \
                    (seg[k, :n] == 1).all(), (i, lens[k], n)
                assert np.array_equal(x[k, :n], V[O[i]:O[i] + n]), i
            ids.extend(int(i) for i, p in zip(idx, pad) if not p)
        b = None
        x = lens = seg = None
        it.close()
        every = gathered(ids)
        assert every == list(range(len(O) - 1)), "ragged: every sample once"
    try:
        it = ferry.jax.iterator(meg + ".idx", comm, sharded=False, batch_size=8)
        next(iter(it))
        raise AssertionError("a ragged variable without pad was not refused")
    except ValueError as e:
        assert "pad=L" in str(e), e
    it.close()
    # Packed rows (pack=concat, docs/lm.md): static shapes, every output an
    # array of the row's shape; the tokens of a row the corpus's, told by
    # its document_ids and positions; every token once over the ranks
    L = 16
    T = int(O[-1])
    seen = np.zeros(T, dtype=np.int64)
    it = ferry.jax.iterator(meg + ".idx", comm, sharded=False, batch_size=4,
                            pack="concat", seq_len=L, overlap=1,
                            tail="partial",
                            vars="tokens,segment_ids,positions,loss_mask,"
                                 "cu_seqlens,document_ids")
    for b in it:
        tok = np.asarray(b["tokens"])
        seg = np.asarray(b["segment_ids"])
        pos = np.asarray(b["positions"])
        doc = np.asarray(b["document_ids"])
        cu = np.asarray(b["cu_seqlens"])
        B = tok.shape[0]
        assert tok.shape == (B, L + 1) and seg.shape == (B, L) and \
            cu.shape == (B, L + 1) and np.asarray(b["loss_mask"]).shape == \
            (B, L), (tok.shape, seg.shape, cu.shape)
        for r in range(B):
            for i in range(L):
                if doc[r, i] >= 0:
                    x = O[doc[r, i]] + pos[r, i]
                    assert tok[r, i] == V[x], (r, i)
                    seen[x] += 1
        b = None
        tok = seg = pos = doc = cu = None
    it.close()
    total = np.zeros_like(seen)
    comm.Allreduce(seen, total)
    assert total.max() == 1 and total.sum() >= T - 1, "packed: every token once"
# AnnData (docs/singlecell.md, FERRY_TEST_ANNDATA: a ferry gen --anndata
# file): sparse=dense gives static [B, n_genes] arrays, each row the CSR
# row ferry.Loader serves (densified here with numpy), every cell once;
# with genes= the kept columns in that order.
ad = os.environ.get("FERRY_TEST_ANNDATA")
if ad:
    from mpi4py import MPI
    ref = {}  # every cell's dense row, read by this rank alone
    L = ferry.Loader(ad, MPI.COMM_SELF, vars="X/indices,X/data",
                     batch_size=16, tail="partial", seed=1)
    G = L.widths["X/indices"]
    L.set_epoch(0)
    for b in L:
        ix, dt = b["X/indices"], b["X/data"]
        vi, oi = np.from_dlpack(ix.values), np.from_dlpack(ix.offsets)
        vd = np.from_dlpack(dt.values)
        for k, i in enumerate(np.from_dlpack(b.indices)):
            row = np.zeros(G, np.float32)
            row[vi[oi[k]:oi[k + 1]]] = vd[oi[k]:oi[k + 1]]
            ref[int(i)] = row
        b = ix = dt = vi = oi = vd = None
    L.close()
    for genes, cols in (("", list(range(G))), ("gene7,gene2,0", [7, 2, 0])):
        it = ferry.jax.iterator(ad, comm, sharded=False, batch_size=16,
                                tail="partial", seed=2,
                                vars="X/indices,X/data", sparse="dense",
                                sparse_dtype="float32", genes=genes)
        ids = []
        for b in it:
            x = np.asarray(b["X"])
            idx = np.asarray(b["index"])
            assert x.shape == (len(idx), len(cols)) and x.dtype == \
                np.float32, (x.shape, x.dtype)
            for k, i in enumerate(idx):
                assert np.array_equal(x[k], ref[int(i)][cols]), (genes, i)
            ids.extend(int(i) for i in idx)
            b = x = None
        it.close()
        assert sorted(gathered(ids)) == sorted(ref), "every cell once"
if comm.rank == 0:
    print("test_jax: OK")
