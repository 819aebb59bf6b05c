"""loader_check.py OUT - run under mpirun by imgfolder_python.sh: the image
folders of tests/imgfolder/make_tree.py through ferry.Loader, checked
against torchvision's ImageFolder(OUT/classes).samples, computed here on
every rank: every sample's `image` (a ferry.Ragged of uint8) holds the
bytes of ImageFolder's file of that index and its `label` (int64)
ImageFolder's label; every sample once over the ranks, the same batch
count on every rank; the flat folder (OUT/flat) has `image` only."""
import os
import sys

import numpy as np
from helpers import check, every_once, same_everywhere, size, rank
from torchvision.datasets import ImageFolder

import ferry

out = sys.argv[1]
samples = ImageFolder(os.path.join(out, "classes")).samples
flat = [l.split("\t")[0] for l in open(os.path.join(out, "flat.txt"))]


def check_batch(b, files, labels):
    """The batch's samples against ImageFolder's: their indices."""
    idx = np.from_dlpack(b.indices)
    r = b["image"]
    check(isinstance(r, ferry.Ragged), "image is %r" % (r,))
    v, o = np.from_dlpack(r.values), np.from_dlpack(r.offsets)
    check(v.dtype == np.uint8, "image values are %s" % v.dtype)
    for k, i in enumerate(idx):
        check(v[o[k]:o[k + 1]].tobytes() == open(files[i], "rb").read(),
              "sample %d: its bytes are not those of %s" % (i, files[i]))
    if labels is None:
        try:
            b["label"]
            check(False, "a flat folder's batch has a label")
        except KeyError:
            pass
    else:
        lab = np.from_dlpack(b["label"])
        check(lab.dtype == np.int64, "label is %s" % lab.dtype)
        for k, i in enumerate(idx):
            check(lab[k] == labels[i], "sample %d (%s): label %d, "
                  "ImageFolder's %d" % (i, files[i], lab[k], labels[i]))
    return [int(i) for i in idx]


def run(root, files, labels):
    with ferry.Loader(root, batch_size=4, seed=11, tail="partial",
                      threads=2) as L:
        L.set_epoch(0)
        same_everywhere(len(L), "the batch count of %s" % root)
        ids = []
        for b in L:
            with b:
                ids += check_batch(b, files, labels)
        every_once(ids, len(files), "%s on %d ranks" % (root, size))


run(os.path.join(out, "classes"), [p for p, _ in samples],
    [l for _, l in samples])
run(os.path.join(out, "flat"), flat, None)
if rank == 0:
    print("loader_check.py on %d ranks: passed (%d + %d samples, "
          "ImageFolder's order and labels)" % (size, len(samples), len(flat)))
