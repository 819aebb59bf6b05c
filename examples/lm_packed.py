#!/usr/bin/env python3
"""lm_packed.py - a small causal transformer trained on packed rows of a
token corpus (pack=concat, docs/lm.md), with document-aware attention, and
resumed mid-epoch on another number of ranks.

Before (a per-rank packing loop after DistributedSampler: ranks get
different row counts and DDP hangs at the epoch's end; the packing buffer
must be checkpointed, and cannot be resumed on another rank count;
attention leaks across documents unless a mask is built by hand):

    buf = []
    for doc in shard_of_this_rank(corpus):
        buf.extend(doc)
        while len(buf) > L:
            yield buf[:L + 1]; buf = buf[L:]

After (the rows are planned from the documents' lengths, every rank gets
the same number of batches, the position is the whole resume state):

    ds = ferry.torch.Dataset(CORPUS, pack="concat", seq_len=L, overlap=1,
                             batch_size=8, seed=1)
    for b in ds:   # tokens [B, L+1], segment_ids/positions/loss_mask [B, L],
        ...        # cu_seqlens (varlen, int32) and max_seqlen

Attention here is torch's scaled_dot_product_attention with a block-diagonal
causal mask built from segment_ids (a token sees the earlier tokens of its
own document only); flash_attn_varlen_func would take cu_seqlens and
max_seqlen instead.

Run:  mpirun -n 2 python3 examples/lm_packed.py CORPUS [--steps K --save F]
      mpirun -n 3 python3 examples/lm_packed.py CORPUS --resume F
CORPUS (CORPUS/corpus.bin + .idx, a Megatron-LM indexed dataset) is written
if it does not exist.  --steps K stops after K batches and saves the loader
and model state to F; --resume F loads it and trains the rest of the epoch
(on any number of ranks).  --served FILE appends the row indices this run
served (rank 0, one per line).  Prints one summary line on rank 0.
"""

import os
import socket
import struct
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from mpi4py import MPI

import ferry.torch

VOCAB, L, D, HEADS = 64, 32, 64, 4


def write_corpus(path, docs=600, seed=0):
    """A Megatron-LM indexed dataset of `docs` documents (uint16 tokens):
    each document counts up from a random start, so it is learnable."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, 3 * L, size=docs).astype(np.int32)
    tokens = [((rng.integers(0, VOCAB) + np.arange(n)) % VOCAB)
              for n in lens]
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "corpus.bin"), "wb") as f:
        for t in tokens:
            f.write(t.astype("<u2").tobytes())
    ptr = np.concatenate([[0], np.cumsum(lens[:-1].astype(np.int64) * 2)])
    with open(os.path.join(path, "corpus.idx"), "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + bytes([8]))
        f.write(struct.pack("<QQ", docs, docs + 1))
        f.write(lens.astype("<i4").tobytes())
        f.write(ptr.astype("<i8").tobytes())
        f.write(np.arange(docs + 1, dtype="<i8").tobytes())


def attention(q, k, v, mask):
    """torch's scaled_dot_product_attention (PyTorch >= 2.0) with a boolean
    mask (True: attend); the same arithmetic written out on older torch
    (Debian 12's 1.13)."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, attn_mask=mask)
    s = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
    s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.qkv = torch.nn.Linear(D, 3 * D)
        self.out = torch.nn.Linear(D, D)
        self.ln2 = torch.nn.LayerNorm(D)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * D, D))

    def forward(self, x, mask):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, HEADS, D // HEADS).transpose(1, 2)
                   for t in (q, k, v))
        a = attention(q, k, v, mask)
        x = x + self.out(a.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, D)
        self.pos = torch.nn.Embedding(4 * L, D)
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.head = torch.nn.Linear(D, VOCAB)

    def forward(self, tokens, segment_ids, positions):
        # block-diagonal and causal: token i sees token j <= i of its own
        # document piece; a padding position sees itself (no empty row)
        seg = segment_ids
        T = seg.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        same = (seg[:, :, None] == seg[:, None, :]) & (seg[:, :, None] > 0)
        mask = (same & causal) | torch.eye(T, dtype=torch.bool)
        x = self.emb(tokens) + self.pos(positions.clamp(max=4 * L - 1))
        for b in self.blocks:
            x = b(x, mask[:, None])
        return self.head(x)


def init_process_group(comm):
    addr = port = None
    if comm.rank == 0:
        addr = socket.gethostname()
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    addr, port = comm.bcast((addr, port), root=0)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port),
                            rank=comm.rank, world_size=comm.size)


def arg(name, default=None):
    return (sys.argv[sys.argv.index(name) + 1] if name in sys.argv
            else default)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-corpus"
    steps, save, resume = int(arg("--steps", "0")), arg("--save"), \
        arg("--resume")
    served_file = arg("--served")
    comm = MPI.COMM_WORLD
    if comm.rank == 0 and not os.path.exists(os.path.join(data,
                                                          "corpus.idx")):
        write_corpus(data)
    comm.Barrier()
    init_process_group(comm)
    torch.manual_seed(0)
    ds = ferry.torch.Dataset(data, comm, pack="concat", seq_len=L, overlap=1,
                             batch_size=8, seed=1, tail="drop_last",
                             mask_first="yes", threads=1)
    model = torch.nn.parallel.DistributedDataParallel(TinyLM())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    if resume:
        state = torch.load(resume)
        ds.load_state_dict(state["loader"])
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
    else:
        ds.set_epoch(0)
    losses, served, n = [], [], 0
    for b in ds:
        tokens = b["tokens"].long()
        inputs, labels = tokens[:, :-1], tokens[:, 1:]
        logits = model(inputs, b["segment_ids"], b["positions"].long())
        w = b["loss_mask"].float()
        ce = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1),
                             reduction="none")
        loss = (ce * w.reshape(-1)).sum() / w.sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        served.extend(b["index"].tolist())
        assert b["cu_seqlens"][-1].item() == tokens.shape[0] * L
        n += 1
        if steps and n == steps:
            break
    del b
    state = ds.state_dict() if steps else None
    if save and comm.rank == 0:
        torch.save({"loader": state, "model": model.module.state_dict(),
                    "opt": opt.state_dict()}, save)
    rows = comm.gather(served, root=0)
    counts = comm.allgather(n)
    stats = ds.loader.pack_stats()
    ds.close()
    dist.destroy_process_group()
    if comm.rank == 0:
        rows = [r for part in rows for r in part]
        if served_file:
            with open(served_file, "a") as f:
                f.write("".join("%d\n" % r for r in rows))
        first = np.mean(losses[:5]) if losses else float("nan")
        last = np.mean(losses[-5:]) if losses else float("nan")
        print("lm_packed: %d ranks, %d batches/rank (equal: %s), %d rows "
              "(%d distinct) of %d, efficiency %.3f, loss %.3f -> %.3f%s"
              % (comm.size, counts[0], len(set(counts)) == 1, len(rows),
                 len(set(rows)), stats["rows"], stats["efficiency"], first,
                 last, ", saved" if save else ""))
        if not resume and not steps and not last < first:
            sys.exit("lm_packed: the loss did not decrease")


if __name__ == "__main__":
    main()
