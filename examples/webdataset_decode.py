#!/usr/bin/env python3
"""webdataset_decode.py - WebDataset + PIL decode + DataLoader replaced.

Before (WebDataset's recipe; forked workers decode with PIL, the shards
split between ranks and workers by name, so ranks can get different batch
counts and DDP hangs at the end of an epoch; no mid-epoch resume):

    import webdataset as wds
    from torchvision import transforms as T
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                    T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = (wds.WebDataset(urls, shardshuffle=True, nodesplitter=wds.split_by_node)
          .shuffle(1000).decode("pil").to_tuple("jpg", "cls")
          .map_tuple(tf, lambda c: c))
    dl = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=8)
    for x, y in dl: ...        # x float32 [64, 3, 224, 224], y int64 [64]

After (ferry reads the tar shards by byte ranges, decodes the JPEGs with
libjpeg-turbo on its threads, crops and normalises in C; every rank gets
the same number of batches; the same seed gives the same pixels):

    dl = ferry.torch.loader("shards/", comm, vars="jpg,cls", decode="jpg",
                            image_size=224, crop="random", layout="chw",
                            mean="0.485,0.456,0.406", std="0.229,0.224,0.225",
                            batch_size=64, seed=1)
    for epoch in range(epochs):
        dl.dataset.set_epoch(epoch)
        for b in dl: x, y = b["jpg"], b["cls"] ...   # the same shapes

crop="random" is RandomResizedCrop(image_size) (scale 0.08-1, ratio 3/4-4/3)
+ RandomHorizontalFlip; layout="chw" with mean/std is ToTensor + Normalize:
float32 [B, 3, H, W], what a torchvision model takes.  Training on GPUs,
--hwc serves uint8 [B, H, W, 3] instead (4 times fewer bytes per batch to
copy to the device) and normalises there (normalise() below): the same
values.  Check the shards first: `ferry verify SHARDS --decode jpg --images`
names every image that would stop the job (docs/images.md).

Run:  mpirun -n 2 /usr/bin/python3 examples/webdataset_decode.py SHARDS
      srun python3 examples/webdataset_decode.py SHARDS
SHARDS (a directory of shard-*.tar of KEY.jpg + KEY.cls) is made here when
it does not exist: synthetic photographs whose colour tells the class.  A
small CNN is trained with torch.distributed (gloo) DDP, the process group
set up from MPI (no torchrun).  Prints one summary line on rank 0.
"""

import argparse
import io
import os
import socket
import sys
import tarfile

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

import ferry.torch

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CLASSES = 4


def make_shards(path, shards=4, per_shard=48, seed=0):
    """WebDataset shards as its TarWriter writes them (KEY.cls, KEY.jpg,
    consecutive members of a plain tar): JPEGs by Pillow, of several sizes,
    each mostly one of CLASSES colours with noise."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    colours = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200],
                        [200, 200, 40]])
    os.makedirs(path, exist_ok=True)
    for s in range(shards):
        with tarfile.open(os.path.join(path, "shard-%06d.tar" % s), "w") as tf:
            for i in range(per_shard):
                key = "%06d" % (s * per_shard + i)
                label = int(rng.integers(CLASSES))
                h, w = int(rng.integers(48, 161)), int(rng.integers(48, 161))
                a = colours[label] + rng.integers(-60, 61, (h, w, 3))
                b = io.BytesIO()
                Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(
                    b, "JPEG", quality=85)
                for name, data in ((key + ".cls", str(label).encode()),
                                   (key + ".jpg", b.getvalue())):
                    ti = tarfile.TarInfo(name)
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))


def init_process_group(comm):
    """torch.distributed over gloo, rendezvous address from rank 0 by MPI."""
    addr = port = None
    if comm.rank == 0:
        addr = socket.gethostname()
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    addr, port = comm.bcast((addr, port), root=0)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port),
                            rank=comm.rank, world_size=comm.size)


def normalise(x, device):
    """uint8 [B, H, W, 3] -> float32 [B, 3, H, W], (x / 255 - mean) / std on
    the device: ToTensor + Normalize after the copy (--hwc)."""
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    x = x.to(device, non_blocking=True).permute(0, 3, 1, 2).float()
    return (x / 255 - mean) / std


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shards", nargs="?", default="ferry-example-wds")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--image-size", type=int, default=64,
                    help="the crop's side (224 for ImageNet models)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--hwc", action="store_true",
                    help="uint8 HWC batches, normalised on the device")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    if comm.rank == 0 and not os.path.exists(args.shards):
        make_shards(args.shards)
    comm.Barrier()
    init_process_group(comm)
    torch.manual_seed(0)
    device = torch.device("cuda", torch.cuda.current_device()) \
        if torch.cuda.is_available() else torch.device("cpu")

    pixels = (dict(layout="hwc") if args.hwc else
              dict(layout="chw", mean=",".join(map(str, MEAN)),
                   std=",".join(map(str, STD))))
    dl = ferry.torch.loader(args.shards, comm, vars="jpg,cls", decode="jpg",
                            image_size=args.image_size, crop="random",
                            batch_size=args.batch_size, seed=1,
                            tail="drop_last", device="cpu", **pixels)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(16, CLASSES)).to(device)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses, seen = [], 0
    S = args.image_size
    for epoch in range(args.epochs):
        dl.dataset.set_epoch(epoch)
        total, nb = 0.0, 0
        for b in dl:
            x, y = b["jpg"], b["cls"]
            if args.hwc:
                assert x.dtype == torch.uint8 and x.shape[1:] == (S, S, 3)
                x = normalise(x, device)
            else:
                assert x.dtype == torch.float32 and x.shape[1:] == (3, S, S)
                x = x.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x),
                                                     y.to(device))
            opt.zero_grad()
            loss.backward()   # DDP all-reduces the gradients here
            opt.step()
            total += loss.item()
            nb += 1
            seen += y.numel()
        del b, x, y   # ferry's next set_epoch needs the batch's tensors gone
        assert nb == len(dl.dataset), "len() must be the batches served"
        losses.append(total / max(nb, 1))
    seen = comm.allreduce(seen)
    batches = comm.allgather(len(dl.dataset))
    dl.dataset.close()
    dist.destroy_process_group()
    if comm.rank == 0:
        print("webdataset_decode: %d ranks, %d epochs, %d batches/rank "
              "(equal: %s), %d images of %dx%d (%s), loss %.3f -> %.3f"
              % (comm.size, args.epochs, batches[0], len(set(batches)) == 1,
                 seen, S, S, "uint8 hwc, normalised on %s" % device.type
                 if args.hwc else "float32 chw", losses[0], losses[-1]))
    if len(set(batches)) != 1:
        sys.exit("webdataset_decode: ranks got different batch counts")
    if not losses[-1] < losses[0]:
        sys.exit("webdataset_decode: the loss did not decrease")


if __name__ == "__main__":
    main()
