#!/usr/bin/python3
"""The Megatron-LM user's way to read a pre-tokenised corpus, for
docs/performance.md (tests/bench/megatron.sh).

One process per rank: the index PREFIX.idx read as Megatron's _IndexReader
reads it (numpy.frombuffer over a memmap of the file), PREFIX.bin memory
mapped, and each sample read the way IndexedDataset.get reads it
(numpy.frombuffer of the memmap at the sequence's pointer, its length's
tokens); this rank's share of a seeded permutation (every WORLD-th
sample, as DistributedSampler deals them) is batched BATCH at a time into
values + offsets (numpy.concatenate, numpy.cumsum), what a ragged batch of
ferry holds.  It runs for SECONDS and prints one JSON line: {"rank",
"samples", "tokens", "seconds"}.

usage: megatron_peer.py PREFIX RANK WORLD BATCH SECONDS
"""
import json
import struct
import sys
import time

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
          6: np.float64, 7: np.float32, 8: np.uint16}


def main():
    prefix, rank, world, batch, seconds = sys.argv[1:6]
    rank, world, batch, seconds = int(rank), int(world), int(batch), float(seconds)
    idx = np.memmap(prefix + ".idx", mode="r", order="C")
    buf = memoryview(idx)
    code = struct.unpack("<B", bytes(buf[17:18]))[0]
    s, _ = struct.unpack("<QQ", bytes(buf[18:34]))
    dtype = DTYPES[code]
    lengths = np.frombuffer(buf, dtype=np.int32, count=s, offset=34)
    pointers = np.frombuffer(buf, dtype=np.int64, count=s,
                             offset=34 + lengths.nbytes)
    data = np.memmap(prefix + ".bin", mode="r", order="C")
    order = np.random.default_rng(0).permutation(s)[rank::world]
    n = tokens = 0
    t0 = time.perf_counter()
    for b0 in range(0, len(order) - batch + 1, batch):
        seqs = [np.frombuffer(data, dtype=dtype, count=int(lengths[i]),
                              offset=int(pointers[i]))
                for i in order[b0:b0 + batch]]
        values = np.concatenate(seqs)
        offsets = np.zeros(batch + 1, dtype=np.int64)
        np.cumsum([len(q) for q in seqs], out=offsets[1:])
        n += batch
        tokens += len(values)
        if time.perf_counter() - t0 > seconds:
            break
    dt = time.perf_counter() - t0
    print(json.dumps({"rank": rank, "samples": n, "tokens": tokens,
                      "seconds": dt}))


if __name__ == "__main__":
    main()
