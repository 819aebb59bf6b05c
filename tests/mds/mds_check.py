"""mds_check.py OUT - run under mpirun by mds.sh and mds_dyn.sh: the MDS
datasets of tests/mds/make_mds.py (OUT/good: raw shards, OUT/zstd: zstd
shards, OUT/real when mds.sh made one with Streaming's own MDSWriter;
OUT/dyn and OUT/dynmix: ndarrays of dynamic shapes, from make_mds.py
--dyn) through ferry.Loader: every column of every sample equal to what
the writer was given (make_mds.samples(): bytes for the byte encodings,
the value for the scalars and str_int/str_float, the array for ndarray:
its fixed shape; with a dynamic shape, rows of its dimensions after the
first when every sample has the same ones, else flattened), of its dtype
and shape, every sample exactly once, the same batch count on every
rank."""
import os
import sys

import numpy as np
from helpers import check, every_once, same_everywhere, size

import ferry

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_mds  # noqa: E402

out = sys.argv[1]
WANT = {"good": make_mds.samples, "zstd": make_mds.samples,
        "real": make_mds.samples, "dyn": make_mds.dyn_samples,
        "dynmix": make_mds.dynmix_samples}


def check_batch(b, name, want):
    idx = [int(i) for i in np.from_dlpack(b.indices)]
    for var in want[0]:
        got = b[var]
        if isinstance(got, ferry.Ragged):
            v, o = np.from_dlpack(got.values), np.from_dlpack(got.offsets)
            rows = [v[o[k]:o[k + 1]] for k in range(len(idx))]
        else:
            rows = list(np.from_dlpack(got))
        check(len(rows) == len(idx), "%s %s: %d rows for %d samples"
              % (name, var, len(rows), len(idx)))
        for k, i in enumerate(idx):
            w, g = np.asarray(want[i][var]), np.asarray(rows[k])
            check(g.dtype == w.dtype and g.shape == w.shape and
                  np.array_equal(g, w, equal_nan=True),
                  "%s sample %d column %s: %s %r %r, written %s %r %r"
                  % (name, i, var, g.dtype, g.shape, g.ravel().tolist()[:8],
                     w.dtype, w.shape, w.ravel().tolist()[:8]))
    return idx


done = []
for name in ("good", "zstd", "real", "dyn", "dynmix"):
    d = os.path.join(out, name)
    if not os.path.isdir(d):
        continue
    want = WANT[name]()
    N = len(want)
    done.append("%s: %d samples, %d columns" % (name, N, len(want[0])))
    for opts in (dict(batch_size=4, seed=3, tail="partial", threads=2),
                 dict(batch_size=5, shuffle="none", tail="partial")):
        with ferry.Loader(d, **opts) as L:
            L.set_epoch(1)
            same_everywhere(len(L), "the batch count of %s" % name)
            ids, nb = [], 0
            for b in L:
                with b:
                    ids += check_batch(b, name, want)
                nb += 1
            check(nb == len(L), "%s: served %d batches, len() %d"
                  % (name, nb, len(L)))
            every_once(ids, N, "%s on %d ranks" % (name, size))
if int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")) == 0:
    print("mds_check.py on %d ranks: passed (%s)" % (size, "; ".join(done)))
