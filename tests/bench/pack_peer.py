#!/usr/bin/env python3
"""pack_peer.py PREFIX L B SECONDS - the per-rank Python packing loop that
ferry's pack=concat replaces (tests/bench/pack.sh, docs/performance.md
"Packed rows"): each MPI process takes its contiguous share of the
documents (DistributedSampler's split), visits them in a seeded order,
reads each from a numpy.memmap of PREFIX.bin at its pointer (the
Megatron-LM way), appends it to a buffer, and cuts rows of L + 1 tokens
every L (the overlap of the shifted labels) into batches of B rows
(numpy.stack), for SECONDS seconds or one pass.  Rank 0 prints the tokens
per second of all processes (L tokens per row)."""
import sys
import time

import numpy as np
from mpi4py import MPI


def main():
    prefix, L, B, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        float(sys.argv[4])
    comm = MPI.COMM_WORLD
    with open(prefix + ".idx", "rb") as f:
        b = f.read()
    code = b[17]
    dt = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
          8: np.uint16}[code]
    S = int(np.frombuffer(b, np.uint64, 1, 18)[0])
    sizes = np.frombuffer(b, np.int32, S, 34)
    ptrs = np.frombuffer(b, np.int64, S, 34 + 4 * S)
    data = np.memmap(prefix + ".bin", dtype=dt, mode="r")
    lo, hi = comm.rank * S // comm.size, (comm.rank + 1) * S // comm.size
    order = np.random.default_rng(comm.rank).permutation(np.arange(lo, hi))
    es = np.dtype(dt).itemsize
    comm.Barrier()
    t0 = time.perf_counter()
    buf = np.empty(0, dtype=dt)
    rows, tokens = [], 0
    for d in order:
        s = int(ptrs[d]) // es
        buf = np.concatenate([buf, data[s:s + int(sizes[d])]])
        while len(buf) > L:
            rows.append(buf[:L + 1])
            buf = buf[L:]
            if len(rows) == B:
                batch = np.stack(rows)
                tokens += batch.shape[0] * L
                rows = []
        if time.perf_counter() - t0 > secs:
            break
    t = time.perf_counter() - t0
    total = comm.reduce(tokens, root=0)
    slowest = comm.reduce(t, op=MPI.MAX, root=0)
    if comm.rank == 0:
        print("pack_peer: %d processes, %.1f tokens per second (numpy.memmap "
              "per document, rows of %d + 1 tokens, batches of %d), %.1f s"
              % (comm.size, total / slowest, L, B, slowest))


if __name__ == "__main__":
    main()
