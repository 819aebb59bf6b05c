#!/usr/bin/env python3
"""mds_train.py - MosaicML Streaming's StreamingDataset + DataLoader replaced.

Before (MosaicML Streaming over MDS shards written by MDSWriter: the
samples decoded with PIL in the DataLoader's forked workers, the
transforms on each image; the shard download and cache machinery for a
dataset that already sits on the cluster's file system):

    from streaming import StreamingDataset
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize(MEAN, STD)])
    class Images(StreamingDataset):
        def __getitem__(self, i):
            s = super().__getitem__(i)          # {"image": PIL, "label": int}
            return tf(s["image"]), s["label"]
    ds = Images(local="mds_dataset/", shuffle=True, shuffle_seed=1,
                batch_size=64)
    dl = DataLoader(ds, batch_size=64, num_workers=8, drop_last=True)
    for epoch in range(epochs):
        for x, y in dl: ...

After (ferry reads the shards named in index.json by byte ranges, the
`jpeg` column's bytes decoded by libjpeg-turbo on ferry's threads and
cropped in C; every rank gets the same number of batches; resumable
from the position):

    dl = ferry.torch.loader("mds_dataset/", comm, vars="image,label",
                            decode="image", image_size=224, crop="random",
                            layout="chw", mean=..., std=...,
                            batch_size=64, seed=1)
    for epoch in range(epochs):
        dl.dataset.set_epoch(epoch)
        for b in dl: x, y = b["image"], b["label"] ...

Run:  mpirun -n 2 /usr/bin/python3 examples/mds_train.py mds_dataset/
      srun python3 examples/mds_train.py mds_dataset/ --epochs 2

DATASET is made here when it does not exist: MDS shards of a `jpeg`
column (Pillow) and an `int` label, as MDSWriter(columns={"image":
"jpeg", "label": "int"}, size_limit=...) writes them (the shard layout of
docs/images.md#mosaicml-mds; tests/mds/ checks ferry's reader against
Streaming's own writer).  tests/python/test_examples.sh runs it on 2
ranks.  Prints one summary line on rank 0.
"""

import argparse
import io
import json
import os
import struct
import sys

import numpy as np
import torch
from mpi4py import MPI

import ferry.torch

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CLASSES = 3


def write_mds(out, n, size_limit=1 << 16, seed=0):
    """MDS shards of {"image": jpeg, "label": int}: a shard is uint32
    samples, samples + 1 uint32 offsets, the configuration (JSON), then the
    samples (a uint32 size for the variable-size `image`, then the image's
    bytes and the label's 8); index.json lists the shards."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    colours = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200]])
    names, encs, sizes = ["image", "label"], ["jpeg", "int"], [None, 8]
    config = {"version": 2, "format": "mds", "compression": None,
              "hashes": [], "size_limit": size_limit, "column_names": names,
              "column_encodings": encs, "column_sizes": sizes}
    cfg = json.dumps(config, sort_keys=True).encode()
    os.makedirs(out)
    shards, cur = [], []

    def flush():
        offs = 4 + 4 * (len(cur) + 1) + len(cfg) + \
            np.cumsum([0] + [len(s) for s in cur])
        data = struct.pack("<I", len(cur)) + offs.astype("<u4").tobytes() + \
            cfg + b"".join(cur)
        name = "shard.%05d.mds" % len(shards)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        shards.append(dict(config, samples=len(cur), zip_data=None,
                           raw_data={"basename": name, "bytes": len(data),
                                     "hashes": {}}))
        cur.clear()

    used = 8 + len(cfg)
    for i in range(n):
        label = i % CLASSES
        h, w = int(rng.integers(48, 161)), int(rng.integers(48, 161))
        a = colours[label] + rng.integers(-60, 61, (h, w, 3))
        b = io.BytesIO()
        Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(
            b, "JPEG", quality=85)
        jpg = b.getvalue()
        s = struct.pack("<I", len(jpg)) + jpg + struct.pack("<q", label)
        if cur and used + len(s) + 4 > size_limit:
            flush()
            used = 8 + len(cfg)
        cur.append(s)
        used += len(s) + 4
    if cur:
        flush()
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"version": 2, "shards": shards}, f, sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", help="an MDS dataset (index.json + shards)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--make", type=int, default=120,
                    help="samples written when DATASET does not exist")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    if comm.rank == 0 and not os.path.exists(a.dataset):
        write_mds(a.dataset, a.make)
    comm.Barrier()
    dl = ferry.torch.loader(a.dataset, comm, vars="image,label",
                            decode="image", image_size=a.image_size,
                            crop="random", layout="chw",
                            mean=",".join(map(str, MEAN)),
                            std=",".join(map(str, STD)),
                            batch_size=a.batch_size, seed=1,
                            tail="drop_last")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(16, CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    S, seen, losses = a.image_size, 0, []
    for epoch in range(a.epochs):
        dl.dataset.set_epoch(epoch)
        total, nb = 0.0, 0
        for b in dl:
            x, y = b["image"], b["label"]
            assert x.dtype == torch.float32 and x.shape[1:] == (3, S, S)
            assert y.dtype == torch.int64
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():  # averaged over the ranks
                g = p.grad.numpy()
                comm.Allreduce(MPI.IN_PLACE, g, op=MPI.SUM)
                g /= comm.size
            opt.step()
            total += loss.item()
            nb += 1
            seen += y.numel()
        del b, x, y  # no tensor of a batch across set_epoch
        losses.append(total / max(nb, 1))
    seen = comm.allreduce(seen)
    batches = comm.allgather(len(dl.dataset))
    dl.dataset.close()
    if comm.rank == 0:
        print("mds_train.py: %d ranks, %d epochs, %d batches/rank (equal: "
              "%s), %d images of %dx%d, loss %.3f -> %.3f"
              % (comm.size, a.epochs, batches[0], len(set(batches)) == 1,
                 seen, S, S, losses[0], losses[-1]))
    if len(set(batches)) != 1:
        sys.exit("mds_train.py: ranks got different batch counts")


if __name__ == "__main__":
    main()
