#!/usr/bin/env python3
"""make_verify_wds.py OUT - WebDataset shards for decode_verify.sh
(`ferry verify --images`, `ferry info` with decode=), JPEGs written by
Pillow, members by Python's tarfile as WebDataset's TarWriter writes them.

OUT/clean/shard-00000K.tar (K = 0..2, 10 samples each, 30 in all):
  KEY.jpg and KEY.cls; sample g is (24 + 8 (g % 3)) x (32 + 8 (g % 5))
  (H x W), gray when g % 10 == 9, progressive when g % 6 == 5, 4:4:4 when
  g % 7 == 3 (else 4:2:0).  OUT/clean/expect.json: what `ferry info
  --json` must say of them ("images"), from these rules.
OUT/bad/: the same samples, but samples 7 and 8 (shard 0, rows 7 and 8:
  in one read) are JPEGs cut in their scan data (headers good, decode
  fails) and sample 23 (shard 2, row 3) is not an image at all (its
  headers fail).  OUT/bad/bad.txt: one line
  per bad image, "SHARD SAMPLE ROW".
"""
import io
import json
import os
import sys
import tarfile

import numpy as np
from PIL import Image

out = sys.argv[1]
rng = np.random.default_rng(28)
N, PER = 30, 10


def member(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o444
    ti.mtime = 1700000000
    tf.addfile(ti, io.BytesIO(data))


def spec(g):
    h, w = 24 + 8 * (g % 3), 32 + 8 * (g % 5)
    return h, w, g % 10 == 9, g % 6 == 5, g % 7 == 3


def jpeg(g):
    h, w, gray, prog, full = spec(g)
    a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    img = Image.fromarray(a, "RGB")
    if gray:
        img = img.convert("L")
    b = io.BytesIO()
    img.save(b, "JPEG", quality=90, progressive=prog,
             subsampling=0 if full else 2)
    return b.getvalue()


images = [jpeg(g) for g in range(N)]


def write(kind, bad):
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    lines = []
    for k in range(N // PER):
        path = os.path.join(d, "shard-%06d.tar" % k)
        with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
            for r in range(PER):
                g = k * PER + r
                data = images[g]
                if g in bad:
                    data = bad[g](data)
                    lines.append("%s %d %d" % (path, g, r))
                member(tf, "s%06d.cls" % g, str(g % 4).encode())
                member(tf, "s%06d.jpg" % g, data)
    return lines


def cut(data):  # headers and the first part of the scan: a truncated file
    sos = data.index(b"\xff\xda")
    return data[:sos + (len(data) - sos) // 3]


write("clean", {})
lines = write("bad", {7: cut, 8: cut, 23: lambda d: b"this is not an image\n" * 20})
with open(os.path.join(out, "bad", "bad.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")


def spread(v):
    v = sorted(v)
    return {"min": v[0], "median": v[len(v) // 2], "max": v[-1]}


def count(keys):
    c = {}
    for k in keys:
        c[k] = c.get(k, 0) + 1
    return c


specs = [spec(g) for g in range(N)]
expect = {
    "samples": N, "probed": N,
    "vars": [{
        "name": "jpg", "bad": 0,
        "progressive": sum(1 for s in specs if s[3]),
        "width": spread([s[1] for s in specs]),
        "height": spread([s[0] for s in specs]),
        "bytes": spread([len(b) for b in images]),
        "formats": {"jpeg": N},
        "channels": count("1" if s[2] else "3" for s in specs),
        "subsampling": count("gray" if s[2] else "4:4:4" if s[4] else "4:2:0"
                             for s in specs),
        "first_bad": None,
    }],
}
with open(os.path.join(out, "clean", "expect.json"), "w") as f:
    json.dump(expect, f)
print("make_verify_wds.py: %d samples in 3 shards, clean and with 3 bad "
      "images (%s)" % (N, "; ".join(lines)))
