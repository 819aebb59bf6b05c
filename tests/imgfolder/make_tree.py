#!/usr/bin/env python3
"""Write the image folders of tests/imgfolder/ with Pillow.

Usage: /usr/bin/python3 make_tree.py DIR

DIR/classes: a folder of classes as torchvision's ImageFolder reads it,
built to tell its order from the orders one could take it for:
  - classes "cat", "dog", "dog-x" and ".hidden" (ImageFolder's
    os.scandir keeps hidden directories: a class, sorted first), and "emu",
    a symbolic link to a directory outside the tree (followed);
  - below a class, directories whose sorted paths differ from a
    depth-first walk ("cat/sub", "cat/sub-1", "cat/sub/deep": '-' sorts
    before '/'), a directory named like an image ("dog/odd.jpg/"), a
    symbolic link to a file;
  - suffixes .JPEG, .jpg, .Jpg, .jpeg, .png, .PNG; names whose case
    changes their order ("B.jpg" before "a.jpg"); files ImageFolder
    ignores (.txt, a name without suffix, .npy) and a README.txt at the top;
  - JPEGs and PNGs of random sizes, a few of about 100 KiB.
DIR/flat: 40 images named img_0000.jpg ... (names that differ only in
digits, which a directory of shards would have) and two PNGs: no label.
DIR/samples.txt and DIR/flat.txt: ImageFolder's samples (path TAB label),
or the sorted files of the flat folder (path TAB -1).
"""
import os
import sys

import numpy as np
from PIL import Image

rng = np.random.default_rng(28)


def img(path, fmt, big=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    h, w = (200, 180) if big else (int(rng.integers(4, 48)), int(rng.integers(4, 48)))
    a = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    Image.fromarray(a).save(path, format=fmt)


def main():
    out = sys.argv[1]
    c = os.path.join(out, "classes")
    os.makedirs(c)
    k = 0
    for cls in ("cat", "dog", "dog-x", ".hidden"):
        for i in range(24):
            ext = (".JPEG", ".jpg", ".Jpg", ".jpeg", ".png", ".PNG")[i % 6]
            fmt = "PNG" if ext.lower() == ".png" else "JPEG"
            img(os.path.join(c, cls, "%02d%s" % (i, ext)), fmt, big=(k % 17 == 3))
            k += 1
    img(os.path.join(c, "cat", "B.jpg"), "JPEG")
    img(os.path.join(c, "cat", "a.jpg"), "JPEG")
    img(os.path.join(c, "cat", "sub", "x.png"), "PNG")
    img(os.path.join(c, "cat", "sub-1", "y.png"), "PNG")
    img(os.path.join(c, "cat", "sub", "deep", "z.jpg"), "JPEG")
    img(os.path.join(c, "dog", "odd.jpg", "inner.jpg"), "JPEG")
    for name in ("notes.txt", "NOSUFFIX", "arr.npy"):
        with open(os.path.join(c, "cat", name), "wb") as f:
            f.write(b"not an image")
    with open(os.path.join(c, "README.txt"), "w") as f:
        f.write("classes\n")
    os.symlink(os.path.join("..", "cat", "00.JPEG"),
               os.path.join(c, "dog-x", "sub", "link.jpg")
               if os.path.isdir(os.path.join(c, "dog-x", "sub"))
               else os.path.join(c, "dog-x", "link.jpg"))
    outside = os.path.join(out, "outside", "emu")
    for i in range(7):
        img(os.path.join(outside, "e%d.jpg" % i), "JPEG", big=(i == 2))
    os.symlink(os.path.abspath(outside), os.path.join(c, "emu"))

    flat = os.path.join(out, "flat")
    for i in range(40):
        img(os.path.join(flat, "img_%04d.jpg" % i), "JPEG", big=(i == 7))
    img(os.path.join(flat, "extra_a.png"), "PNG")
    img(os.path.join(flat, "extra_b.PNG"), "PNG")
    with open(os.path.join(flat, "labels.csv"), "w") as f:
        f.write("ignored\n")

    from torchvision.datasets import ImageFolder
    samples = ImageFolder(c).samples
    with open(os.path.join(out, "samples.txt"), "w") as f:
        for p, label in samples:
            f.write("%s\t%d\n" % (p, label))
    names = sorted(n for n in os.listdir(flat)
                   if n.lower().endswith((".jpg", ".jpeg", ".png")))
    with open(os.path.join(out, "flat.txt"), "w") as f:
        for n in names:
            f.write("%s\t-1\n" % os.path.join(flat, n))
    print("wrote %d samples in %d classes, and a flat folder of %d images"
          % (len(samples), len({l for _, l in samples}), len(names)))


main()
