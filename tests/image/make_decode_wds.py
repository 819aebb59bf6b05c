#!/usr/bin/env python3
"""make_decode_wds.py OUT - WebDataset shards of real JPEGs and PNGs
(written by Pillow, members by Python's tarfile as WebDataset's TarWriter
writes them) and the pixels decode= must serve, for decode_loader.sh.

OUT/same/shard-00000K.tar (K = 0..2; 5, 13 and 22 samples): KEY.cls, a
  48 x 64 (H x W) RGB JPEG KEY.jpg (quality 90, 4:2:0) and a 48 x 64 PNG
  KEY.png (RGB or gray, alternating).
  OUT/ref/same.jpg.K.npy, same.png.K.npy: Pillow's pixels ([n, 48, 64, 3]
  uint8, convert("RGB")), same.cls.K.npy the labels.
  OUT/ref/center.jpg.K.npy: torchvision's Resize(40) + CenterCrop(32) of
  Pillow's decode ([n, 32, 32, 3]): what decode= gives with dct_scale=0.
OUT/mixed/shard-00000K.tar (K = 0..1; 17 and 9 samples): JPEGs of sizes
  from 60 x 45 to 640 x 480 (some gray), for the random crops.
OUT/corrupt/shard-00000K.tar (K = 0..3, 6 samples each): sample 4 of shard
  2 (global index 16) is a JPEG cut in its scan data; OUT/corrupt/bad.txt
  names its shard.
"""
import io
import os
import sys
import tarfile

import numpy as np
from PIL import Image

out = sys.argv[1]
rng = np.random.default_rng(58)


def member(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o444
    ti.mtime = 1700000000
    tf.addfile(ti, io.BytesIO(data))


def picture(h, w, gray=False):
    """A smooth picture with some noise: like a photograph to the codec."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)),
                     ((x + y) * 255 // max(w + h - 2, 1))], axis=-1)
    a = base + rng.integers(-40, 41, (h, w, 3))
    a = np.clip(a, 0, 255).astype(np.uint8)
    img = Image.fromarray(a, "RGB")
    return img.convert("L") if gray else img


def jpeg(img, quality=90):
    b = io.BytesIO()
    img.save(b, "JPEG", quality=quality)
    return b.getvalue()


def png(img):
    b = io.BytesIO()
    img.save(b, "PNG")
    return b.getvalue()


def pixels(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


os.makedirs(os.path.join(out, "ref"), exist_ok=True)
ref = os.path.join(out, "ref")

# ---- same: every image 48 x 64 ----------------------------------------
os.makedirs(os.path.join(out, "same"), exist_ok=True)
try:
    import torch  # noqa: F401
    from torchvision.transforms import functional as TF
except ImportError:  # the center references need torchvision
    TF = None
g = 0
for k, n in enumerate([5, 13, 22]):
    jp, pn, cl, cen = [], [], [], []
    with tarfile.open(os.path.join(out, "same", "shard-%06d.tar" % k), "w",
                      format=tarfile.PAX_FORMAT) as tf:
        for i in range(n):
            key = "s%05d" % g
            img = picture(48, 64)
            j = jpeg(img)
            p = png(img.convert("L") if g % 2 else img)
            c = int(rng.integers(0, 1000))
            member(tf, key + ".cls", str(c).encode())
            member(tf, key + ".jpg", j)
            member(tf, key + ".png", p)
            jp.append(pixels(j))
            pn.append(pixels(p))
            cl.append(c)
            if TF is not None:
                im = Image.open(io.BytesIO(j)).convert("RGB")
                im = TF.center_crop(TF.resize(im, 40), 32)
                cen.append(np.asarray(im))
            g += 1
    np.save(os.path.join(ref, "same.jpg.%d.npy" % k), np.stack(jp))
    np.save(os.path.join(ref, "same.png.%d.npy" % k), np.stack(pn))
    np.save(os.path.join(ref, "same.cls.%d.npy" % k), np.array(cl, np.int64))
    if cen:
        np.save(os.path.join(ref, "center.jpg.%d.npy" % k), np.stack(cen))

# ---- mixed sizes -------------------------------------------------------
os.makedirs(os.path.join(out, "mixed"), exist_ok=True)
sizes = [(45, 60), (480, 640), (300, 200), (96, 128), (375, 500), (64, 64),
         (200, 300), (150, 100)]
g = 0
for k, n in enumerate([17, 9]):
    with tarfile.open(os.path.join(out, "mixed", "shard-%06d.tar" % k), "w",
                      format=tarfile.PAX_FORMAT) as tf:
        for i in range(n):
            key = "m%05d" % g
            h, w = sizes[g % len(sizes)]
            member(tf, key + ".cls", str(g).encode())
            member(tf, key + ".jpg", jpeg(picture(h, w, gray=g % 5 == 3)))
            g += 1

# ---- corrupt: one JPEG cut in its scan ---------------------------------
os.makedirs(os.path.join(out, "corrupt"), exist_ok=True)
g = 0
for k in range(4):
    name = os.path.join(out, "corrupt", "shard-%06d.tar" % k)
    with tarfile.open(name, "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(6):
            key = "c%05d" % g
            j = jpeg(picture(40, 56))
            if g == 16:
                j = j[:len(j) // 2]
                with open(os.path.join(out, "corrupt", "bad.txt"), "w") as f:
                    f.write(name + "\n")
            member(tf, key + ".cls", str(g).encode())
            member(tf, key + ".jpg", j)
            g += 1
print("make_decode_wds: same 40, mixed 26, corrupt 24 samples")
