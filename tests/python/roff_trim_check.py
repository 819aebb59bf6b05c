"""roff_trim_check.py IDX MANIFEST - run by roff_trim.sh on 1 and 2 ranks:
a whole epoch of the corpus through its saved manifest, as ragged samples
and as packed rows; then the resident part of the mapped offsets'
file (MANIFEST.roff) must be under 3 MiB on every rank (the file is 8 MB:
an epoch touches all of it)."""
import os
import sys

from helpers import check, rank

import ferry

idx, manifest = sys.argv[1], sys.argv[2]
roff = os.path.realpath(manifest + ".roff")


def resident_kib(path):
    """(mapped, KiB): whether path is mapped in this process, and the Rss
    of its mappings."""
    kib, inside, found = 0, False, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:
                inside = line.rstrip("\n").endswith(path)
                found = found or inside
            elif inside and line.startswith("Rss:"):
                kib += int(head[1])
    return found, kib


for name, opts in (("ragged", dict(shuffle="block", block_size=64)),
                   ("pack=concat", dict(pack="concat", seq_len=64))):
    L = ferry.Loader(idx, manifest=manifest, batch_size=64, tail="partial",
                     seed=7, **opts)
    L.set_epoch(0)
    n = 0
    for b in L:
        with b:
            n += b.size
    found, kib = resident_kib(roff)
    check(found, "%s: %s is not mapped (the loader should map the saved "
          "manifest's offsets)" % (name, roff))
    check(n > 0 and kib < 3 * 1024,
          "%s: %d KiB of %s resident after an epoch of %d samples (under "
          "3 MiB wanted)" % (name, kib, roff, n))
    if rank == 0:
        print("ok: %s: %d KiB of the 8 MB offsets' file resident after "
              "an epoch (%d rows on rank 0)" % (name, kib, n))
    L.close()
