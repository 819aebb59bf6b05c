#!/usr/bin/env python3
"""imagefolder_train.py - ImageFolder + RandomResizedCrop + DataLoader replaced.

Before (torchvision's recipe: every file opened and decoded by PIL in
forked workers, the label the index of the class directory):

    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder("train/", transform=tf)
    sampler = DistributedSampler(ds, shuffle=True, seed=1)
    dl = DataLoader(ds, batch_size=64, sampler=sampler, num_workers=8,
                    pin_memory=True, drop_last=True)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in dl: ...

After (rank 0 lists the folder once, in ImageFolder's order and with its
labels; ferry's threads read the files and decode them with TurboJPEG and
libspng into fixed-size batches; every rank gets the same number of
batches):

    dl = ferry.torch.loader("train/", comm, batch_size=64, seed=1,
                            vars="image,label", decode="image",
                            image_size=224, crop="random", layout="chw",
                            mean="0.485,0.456,0.406", std="0.229,0.224,0.225")
    for epoch in range(epochs):
        dl.dataset.set_epoch(epoch)
        for b in dl: x, y = b["image"], b["label"] ...

Run:  mpirun -n 2 /usr/bin/python3 examples/imagefolder_train.py train/
      srun python3 examples/imagefolder_train.py train/ --epochs 2

ROOT is made here when it does not exist: a small ImageFolder tree of
synthetic JPEGs and PNGs (3 classes, whose colour tells the class; --make
N images).  tests/python/test_examples.sh runs it on 2 ranks; the folder
itself (samples, labels, order against ImageFolder's) is tested by
tests/imgfolder/.
Prints one summary line on rank 0.
"""

import argparse
import os

import torch
from mpi4py import MPI

import ferry.torch

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def make_tree(root, n, seed=0):
    """An ImageFolder tree: root/CLASS/NAME.jpg or .png (Pillow), images of
    several sizes, each mostly its class's colour with noise."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    colours = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200]])
    for i in range(n):
        c = i % len(colours)
        d = os.path.join(root, "class_%d" % c)
        os.makedirs(d, exist_ok=True)
        h, w = int(rng.integers(64, 200)), int(rng.integers(64, 200))
        a = colours[c] + rng.normal(0, 30, (h, w, 3))
        im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
        ext = "png" if i % 5 == 0 else "jpg"
        im.save(os.path.join(d, "img_%05d.%s" % (i, ext)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="a folder of class directories of images")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=0,
                    help="stop each epoch after this many batches (0: all)")
    ap.add_argument("--make", type=int, default=96,
                    help="images of the tree made when ROOT does not exist")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    if comm.rank == 0 and not os.path.exists(a.root):
        make_tree(a.root, a.make)
    comm.Barrier()
    dl = ferry.torch.loader(a.root, comm, batch_size=a.batch_size, seed=1,
                            vars="image,label", decode="image",
                            image_size=a.image_size, crop="random",
                            layout="chw", mean=",".join(map(str, MEAN)),
                            std=",".join(map(str, STD)))
    nclasses, loss = 0, torch.tensor(float("nan"))
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 7, stride=4), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(16, 1000))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen = 0
    for epoch in range(a.epochs):
        dl.dataset.set_epoch(epoch)
        for step, b in enumerate(dl):
            x, y = b["image"], b["label"]  # float32 [B,3,S,S], int64 [B]
            nclasses = max(nclasses, int(y.max()) + 1)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            # gradients averaged over the ranks, as DDP would
            for p in model.parameters():
                g = p.grad.numpy()
                comm.Allreduce(MPI.IN_PLACE, g, op=MPI.SUM)
                g /= comm.size
            opt.step()
            seen += len(y)
            del x, y, b
            if a.steps and step + 1 >= a.steps:
                break
    seen = comm.allreduce(seen)
    nclasses = comm.allreduce(nclasses, op=MPI.MAX)
    if comm.rank == 0:
        print("imagefolder_train.py: %d ranks, %d epochs, %d images, %d "
              "classes seen, last loss %.3f"
              % (comm.size, a.epochs, seen, nclasses, float(loss)))


if __name__ == "__main__":
    main()
