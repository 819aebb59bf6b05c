"""roff_map_check.py IDX MANIFEST - run on 2 ranks by roff_map.sh: a
Megatron corpus opened by a scan (its offsets broadcast and held) and
through its saved manifest (the offsets mapped from MANIFEST.roff,
core/roffmap.c) serve the same batches; a state taken mid-epoch with one
resumes with the other, both ways (the dataset hash is the same whether
the offsets are held or mapped), and the rest of the epoch is the rest of
the uninterrupted run; the mapped loader's memory budget counts no
offsets, the scanned one's counts 8 bytes per sample."""
import sys

import numpy as np
from helpers import check, rank, resumed_both_ways

import ferry

idx, manifest = sys.argv[1], sys.argv[2]
opts = dict(batch_size=16, seed=5, tail="partial", shuffle="block",
            block_size=32)


def batches(L, k=None):
    """The (indices, lengths, token sums) of the next k batches (all)."""
    out = []
    for b in L:
        with b:
            r = b["tokens"]
            off = np.from_dlpack(r.offsets).astype(np.int64)
            val = np.from_dlpack(r.values).astype(np.int64)
            sums = [int(val[off[i]:off[i + 1]].sum())
                    for i in range(len(off) - 1)]
            out.append((tuple(int(i) for i in np.from_dlpack(b.indices)),
                        tuple(int(x) for x in np.diff(off)), tuple(sums)))
        if k is not None and len(out) == k:
            break
    return out


def loader(mapped):
    return ferry.Loader(idx, manifest=manifest if mapped else "", **opts)


runs = {}
for mapped in (False, True):
    with loader(mapped) as L:
        budget = L.memory_budget()["index_bytes"]
        if mapped:
            check(budget == 0, "mapped offsets in the budget: %d" % budget)
        else:
            check(budget >= 8 * L.num_samples,
                  "held offsets in the budget: %d" % budget)
        L.set_epoch(2)
        runs[mapped] = batches(L)
check(runs[False] == runs[True],
      "the same batches with the offsets held and mapped")
check(len(runs[False]) > 8, "%d batches" % len(runs[False]))

resumed_both_ways(loader, batches, runs[False], 5, 2,
                  ("scanned", "mapped"))
if rank == 0:
    print("roff_map_check.py: passed (%d batches)" % len(runs[False]))
