#!/usr/bin/python3
"""The torchvision side of tests/bench/decode.sh.

  decode_peer.py make DIR COUNT     COUNT photo-like 500x375 JPEGs, quality 90
  decode_peer.py run MODE LAYOUT ROUNDS FILE...

run: ImageFolder's default loader (open the file, Image.open, convert("RGB"))
then MODE random (RandomResizedCrop(224) + RandomHorizontalFlip) or center
(Resize(256) + CenterCrop(224)), then LAYOUT u8 (PILToTensor) or f32
(ToTensor + Normalize with ImageNet's mean and std); one process, torch on
one thread (a DataLoader with num_workers=0 runs the same code per
sample).  A first round untimed; prints "images N seconds S cpu C
images/s R images/cpu-s Q" (wall and process CPU time, as img_bench).
"""
import os
import sys
import time

import numpy as np
from PIL import Image


def make(d, count):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    h, w = 375, 500
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    for i in range(count):
        p = os.path.join(d, f"img{i:04d}.jpg")
        if os.path.exists(p):
            continue
        a, b, c = rng.uniform(5, 40, 3)
        img = np.stack([
            128 + 100 * np.sin(x / a + i) * np.cos(y / b),
            255 * (x / w) * (0.5 + 0.5 * np.sin(y / c)),
            255 * (y / h),
        ], -1)
        for _ in range(6):
            cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(10, 90)
            img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.uniform(0, 255, 3)
        img += rng.normal(0, 27, img.shape)
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(
            p, "JPEG", quality=90)


def run(mode, layout, rounds, files):
    import torch
    import torchvision.transforms as T
    torch.set_num_threads(1)
    if mode == "random":
        tf = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    else:
        tf = [T.Resize(256), T.CenterCrop(224)]
    if layout == "f32":
        tf += [T.ToTensor(), T.Normalize([0.485, 0.456, 0.406],
                                         [0.229, 0.224, 0.225])]
    else:
        tf += [T.PILToTensor()]
    tf = T.Compose(tf)

    def loader(path):
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")

    t0 = c0 = 0.0
    n = 0
    for r in range(rounds + 1):
        if r == 1:
            t0 = time.perf_counter()
            c0 = time.process_time()
        for p in files:
            tf(loader(p))
            if r:
                n += 1
    dt = time.perf_counter() - t0
    dc = time.process_time() - c0
    print(f"images {n} seconds {dt:.3f} cpu {dc:.3f} images/s {n / dt:.1f} "
          f"images/cpu-s {n / dc:.1f}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
