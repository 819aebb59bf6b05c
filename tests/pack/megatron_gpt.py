#!/usr/bin/env python3
"""megatron_gpt.py - ferry's packed rows against Megatron-LM's GPTDataset
samples (docs/lm.md, "Megatron-LM's GPTDataset"; issue 26).

Usage (mpirun -n 1; a Megatron-LM checkout is not shipped with ferry):

    /usr/bin/python3 tests/pack/megatron_gpt.py MEGATRON_LM PREFIX L [BUILD]

MEGATRON_LM: a Megatron-LM source tree (its megatron/core/datasets/
helpers.cpp is compiled here with pybind11 into BUILD, default
/tmp/ferry-megatron-helpers); PREFIX: a Megatron indexed dataset
(PREFIX.bin/.idx); L: the sequence length.

Megatron's side: the sample index of its GPTDataset built by its own
compiled helper, helpers.build_sample_idx_int64(sizes, document_index, L,
1 epoch, tokens, drop_last_partial_sequence=True,
add_extra_token_to_sequence=1), with document_index = 0, 1, ..., D-1
(shuffling off: the documents in stored order, one epoch) and no shuffle
index; sample i read as GPTDataset._query_document_sample_shuffle_indices
reads it (restated below: the documents from sample_idx[i] to
sample_idx[i+1], the first from its offset, the last up to its offset + 1;
L + 1 tokens).

ferry's side: ferry.Loader(PREFIX.idx, pack="concat", seq_len=L,
overlap=1, shuffle="none", tail="drop_last", batch_size=1, vars="tokens"):
row i.

Prints the sample counts, the first row that differs (or "every row
equal"), and the time of each index build; exit 1 when they differ.
"""
import os
import subprocess
import sys
import sysconfig
import time

import numpy as np

import ferry


def build_helpers(megatron, build):
    src = os.path.join(megatron, "megatron", "core", "datasets",
                       "helpers.cpp")
    os.makedirs(build, exist_ok=True)
    ext = sysconfig.get_config_var("EXT_SUFFIX")
    out = os.path.join(build, "helpers_cpp" + ext)
    if not os.path.exists(out):
        inc = subprocess.check_output(
            [sys.executable, "-m", "pybind11", "--includes"], text=True)
        cmd = ("c++ -O3 -Wall -shared -std=c++17 -fPIC %s %s -o %s"
               % (inc.strip(), src, out))
        subprocess.check_call(cmd, shell=True)
    sys.path.insert(0, build)
    import helpers_cpp
    return helpers_cpp


def read_index(prefix):
    """sizes (int32) of the sequences and the tokens' dtype, Megatron's way
    (numpy.frombuffer of the .idx at its offsets)."""
    with open(prefix + ".idx", "rb") as f:
        b = f.read()
    assert b[:9] == b"MMIDIDX\x00\x00", "not a Megatron index"
    code = b[17]
    dt = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
          6: np.float64, 7: np.float32, 8: np.uint16}[code]
    S = int(np.frombuffer(b, np.uint64, 1, 18)[0])
    sizes = np.frombuffer(b, np.int32, S, 34).copy()
    ptrs = np.frombuffer(b, np.int64, S, 34 + 4 * S)
    return sizes, ptrs, dt


def main():
    megatron, prefix, L = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for ext in (".idx", ".bin"):   # PREFIX, PREFIX.idx or PREFIX.bin
        if prefix.endswith(ext):
            prefix = prefix[:-len(ext)]
    build = sys.argv[4] if len(sys.argv) > 4 else "/tmp/ferry-megatron-helpers"
    helpers = build_helpers(megatron, build)
    sizes, ptrs, dt = read_index(prefix)
    data = np.memmap(prefix + ".bin", dtype=dt, mode="r")
    start = ptrs // np.dtype(dt).itemsize
    D = len(sizes)
    doc_index = np.arange(D, dtype=np.int32)
    tokens = int(sizes.astype(np.int64).sum())
    t0 = time.perf_counter()
    sample_idx = helpers.build_sample_idx_int64(sizes, doc_index, L, 1,
                                                tokens, True, 1)
    t_megatron = time.perf_counter() - t0

    def megatron_sample(i):
        b, bo = sample_idx[i]
        e, eo = sample_idx[i + 1]
        parts = []
        for d in range(b, e + 1):
            off = bo if d == b else 0
            end = eo + 1 if d == e else sizes[doc_index[d]]
            s = start[doc_index[d]]
            parts.append(data[s + off:s + end])
        return np.concatenate(parts)

    t0 = time.perf_counter()
    ld = ferry.Loader(prefix + ".idx", pack="concat", seq_len=L, overlap=1,
                      shuffle="none", tail="drop_last", batch_size=1,
                      vars="tokens", threads=1)
    ld.set_epoch(0)
    t_ferry = time.perf_counter() - t0
    n_meg = len(sample_idx) - 1
    print("megatron_gpt: %d documents, %d tokens, seq_len %d: Megatron's "
          "GPTDataset %d samples (build_sample_idx %.3f s), ferry %d rows "
          "(open + set_epoch %.3f s)"
          % (D, tokens, L, n_meg, t_megatron, ld.num_samples, t_ferry))
    bad = None
    n = 0
    for b in ld:
        i = int(np.from_dlpack(b.indices)[0])
        got = np.from_dlpack(b["tokens"])[0]
        want = megatron_sample(i)
        if len(want) != L + 1 or not np.array_equal(got, want):
            bad = (i, got[:8], want[:8])
            break
        n += 1
        del b, got
    ld.close()
    if bad is None and n == n_meg:
        print("megatron_gpt: every row equal (%d rows of %d tokens)"
              % (n, L + 1))
        return 0
    print("megatron_gpt: DIFFER: %s after %d equal rows, %d rows vs %d "
          "samples" % (bad, n, ld.num_samples if False else n, n_meg))
    return 1


if __name__ == "__main__":
    sys.exit(main())
