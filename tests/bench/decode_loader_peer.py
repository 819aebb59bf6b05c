#!/usr/bin/env python3
"""decode_loader_peer.py - the torchvision side of tests/bench/decode_loader.sh.

  shards JPEG_DIR OUT_DIR PER_SHARD: the JPEGs as WebDataset shards
      (KEY.jpg, KEY.cls), PER_SHARD samples each, for ferry.
  run JPEG_DIR WORKERS BATCH EPOCHS: a torch DataLoader over a map-style
      Dataset of the same files (open, PIL decode, convert RGB,
      RandomResizedCrop(224) + RandomHorizontalFlip, PILToTensor), WORKERS
      worker processes, shuffled; prints images/s over the epochs after the
      first (the workers' start-up left out).
"""
import io
import os
import sys
import tarfile
import time

import torch
from PIL import Image
from torchvision import transforms as T


def shards(src, out, per):
    os.makedirs(out, exist_ok=True)
    files = sorted(f for f in os.listdir(src) if f.endswith(".jpg"))
    for s in range(0, len(files), per):
        with tarfile.open(os.path.join(out, "shard-%06d.tar" % (s // per)),
                          "w") as tf:
            for i, f in enumerate(files[s:s + per], s):
                for ext, data in (("cls", str(i % 10).encode()),
                                  ("jpg", open(os.path.join(src, f),
                                               "rb").read())):
                    ti = tarfile.TarInfo("%06d.%s" % (i, ext))
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))


class Files(torch.utils.data.Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d)
                            if f.endswith(".jpg"))
        self.t = T.Compose([T.RandomResizedCrop(224),
                            T.RandomHorizontalFlip(), T.PILToTensor()])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.t(img), i % 10


def run(d, workers, batch, epochs):
    torch.set_num_threads(1)
    ds = Files(d)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True,
                                     num_workers=workers, drop_last=True,
                                     persistent_workers=workers > 0)
    n, t0 = 0, None
    for e in range(epochs + 1):
        if e == 1:
            t0 = time.perf_counter()
        for x, y in dl:
            if e > 0:
                n += x.shape[0]
    dt = time.perf_counter() - t0
    print("torchvision: %.1f images/s (%d images, %.2f s, %d workers)"
          % (n / dt, n, dt, workers))


if __name__ == "__main__":
    if sys.argv[1] == "shards":
        shards(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
            int(sys.argv[5]))
