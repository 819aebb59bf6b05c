"""recs_map_check.py SHARDS MANIFEST - run on 2 ranks by recs_map.sh:
WebDataset shards opened by a scan (the location tables broadcast and
held) and through a saved manifest whose records are in MANIFEST.recs
(mapped, decision 0066) serve the same batches; a state taken mid-epoch
with one resumes with the other, both ways (the dataset hash is the same
whether the records are held or mapped), and the rest of the epoch is
the rest of the uninterrupted run."""
import sys

import numpy as np
from helpers import check, rank, resumed_both_ways

import ferry

shards, manifest = sys.argv[1], sys.argv[2]
opts = dict(batch_size=32, seed=9, tail="partial", shuffle="block",
            block_size=16)


def batches(L, k=None):
    """(indices, cls, jpg bytes' digests) of the next k batches (all)."""
    out = []
    for b in L:
        with b:
            r = b["jpg"]
            off = np.from_dlpack(r.offsets).astype(np.int64)
            val = np.from_dlpack(r.values)
            jpg = tuple(bytes(val[off[i]:off[i + 1]]).hex()
                        for i in range(len(off) - 1))
            out.append((tuple(int(i) for i in np.from_dlpack(b.indices)),
                        tuple(int(c) for c in np.from_dlpack(b["cls"])),
                        jpg))
        if k is not None and len(out) == k:
            break
    return out


def loader(mapped):
    return ferry.Loader(shards, manifest=manifest if mapped else "", **opts)


runs = {}
for mapped in (False, True):
    with loader(mapped) as L:
        L.set_epoch(1)
        runs[mapped] = batches(L)
check(runs[False] == runs[True],
      "the same batches with the records held and mapped")
check(len(runs[False]) > 20, "%d batches" % len(runs[False]))

resumed_both_ways(loader, batches, runs[False], 7, 1,
                  ("scanned", "mapped"))
if rank == 0:
    print("recs_map_check.py: passed (%d batches)" % len(runs[False]))
