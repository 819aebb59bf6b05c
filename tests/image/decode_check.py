"""decode_check.py OUT STATEFILE - run under mpirun by decode_loader.sh: the
shards of tests/image/make_decode_wds.py through ferry.Loader and
ferry.torch with decode= (docs/images.md, "Decode"):

- full size, no resize or crop, dct_scale=0: every sample's pixels equal
  Pillow's decode of its member (JPEG and PNG), cls beside them; every
  sample once, the same batch count on every rank;
- ferry.torch: {"jpg": uint8 [B, H, W, 3], "cls": int64 [B]};
- resize=shorter:S + crop=center of images of many sizes: equal to
  torchvision's Resize(S) + CenterCrop on Pillow's decode with
  dct_scale=0, within docs/image-decode.md's tolerance (mean |d| <= 2,
  max 48) with DCT scaling;
- crop=random: the same pixels per sample with threads=1 and threads=4
  (and any rank count: the per-sample seed), other pixels in another
  epoch, float32 chw normalised from the same crops;
- a resume mid-epoch (saved on 1 or 2 ranks, resumed on all) serves the
  remaining samples with the pixels of an uninterrupted run;
- a corrupt JPEG: every rank raises, with the same message naming the
  shard, the variable, the sample and the rank."""
import pickle
import sys

import numpy as np
import torch
from helpers import check, comm, every_once, rank, same_everywhere, size
from mpi4py import MPI
from PIL import Image
from torchvision.transforms import functional as TF

import ferry
import ferry.torch as ftorch

out, path = sys.argv[1], sys.argv[2]
ref = out + "/ref/"
same = out + "/same/shard-*.tar"


def cat(name):
    return np.concatenate([np.load(ref + "%s.%d.npy" % (name, k))
                           for k in range(3)])


# ---- full size: Pillow's pixels ------------------------------------------
jpg, png, cls = cat("same.jpg"), cat("same.png"), cat("same.cls")
N = len(cls)
full = dict(vars="jpg,png,cls", decode="jpg,png", image_size="48x64",
            crop="none", dct_scale=0, batch_size=4, seed=5, tail="partial",
            threads=3)
with ferry.Loader(same, **full) as L:
    same_everywhere(len(L), "the batch count")
    ids, nb = [], 0
    for b in L:
        with b:
            idx = np.from_dlpack(b.indices)
            for var, want in (("jpg", jpg), ("png", png)):
                a = np.from_dlpack(b[var])
                check(a.dtype == np.uint8 and a.shape == (len(idx), 48, 64, 3),
                      "%s is %s %r" % (var, a.dtype, a.shape))
                for k, i in enumerate(idx):
                    check(np.array_equal(a[k], want[i]),
                          "sample %d: %s pixels differ from Pillow's" % (i, var))
            c = np.from_dlpack(b["cls"])
            check(np.array_equal(c, cls[idx]), "cls differs")
            ids += [int(i) for i in idx]
            del a, c, idx  # nothing viewing the batch outlives it
        nb += 1
    check(nb == len(L), "served %d batches, len() %d" % (nb, len(L)))
    every_once(ids, N, "full-size decode on %d ranks" % size)

# ---- ferry.torch --------------------------------------------------------
ds = ftorch.Dataset(out + "/same", vars="jpg,cls", decode="jpg",
                    image_size=40, crop="random", batch_size=3, seed=2)
n = 0
for d in ds:
    check(set(d) >= {"jpg", "cls"}, "keys %r" % sorted(d))
    check(d["jpg"].dtype == torch.uint8 and tuple(d["jpg"].shape) == (3, 40,
                                                                      40, 3),
          "jpg is %s %r" % (d["jpg"].dtype, tuple(d["jpg"].shape)))
    check(d["cls"].dtype == torch.int64 and tuple(d["cls"].shape) == (3,),
          "cls is %s %r" % (d["cls"].dtype, tuple(d["cls"].shape)))
    check(torch.equal(d["cls"], torch.from_numpy(cls[d["index"].numpy()])),
          "ferry.torch: cls beside the pixels differ")
    n += 1
    del d
check(n == len(ds) and n > 0, "ferry.torch served %d of %d" % (n, len(ds)))
ds.close()

# ---- center crop of many sizes vs torchvision ---------------------------
mixed = out + "/mixed"
raw = {}
with ferry.Loader(mixed, vars="jpg", batch_size=5, tail="partial") as L:
    for b in L:
        with b:
            r = b["jpg"]
            v, o = np.from_dlpack(r.values), np.from_dlpack(r.offsets)
            for k, i in enumerate(np.from_dlpack(b.indices)):
                raw[int(i)] = bytes(v[o[k]:o[k + 1]])
            del r, v, o
raw = {k: v for r in comm.allgather(raw) for k, v in r.items()}
M = len(raw)


def torchvision_center(i, s, c):
    import io
    im = Image.open(io.BytesIO(raw[i])).convert("RGB")
    return np.asarray(TF.center_crop(TF.resize(im, s), c)).astype(np.int32)


def pixels(opts):
    """{global index: pixels} of epoch 0 (or opts' epoch), every rank's."""
    got = {}
    epoch = opts.pop("epoch", 0)
    with ferry.Loader(mixed, vars="jpg,cls", **opts) as L:
        L.set_epoch(epoch)
        for b in L:
            with b:
                a = np.from_dlpack(b["jpg"])
                c = np.from_dlpack(b["cls"])
                for k, i in enumerate(np.from_dlpack(b.indices)):
                    check(c[k] == i, "cls %d beside sample %d" % (c[k], i))
                    got[int(i)] = a[k].copy()
                del a, c
    return {k: v for r in comm.allgather(got) for k, v in r.items()}


for dct in (0, 1):
    got = pixels(dict(decode="jpg", image_size=56, resize="shorter:64",
                      crop="center", dct_scale=dct, batch_size=4,
                      tail="partial", threads=2))
    check(len(got) == M, "center: %d of %d samples" % (len(got), M))
    worst_mean = worst = 0
    for i in range(M):
        d = np.abs(got[i].astype(np.int32) - torchvision_center(i, 64, 56))
        if dct == 0:
            check(d.max() == 0, "sample %d: dct_scale=0 center crop differs "
                  "from torchvision's (max %d)" % (i, d.max()))
        worst_mean = max(worst_mean, d.mean())
        worst = max(worst, d.max())
    check(worst_mean <= 2 and worst <= 48, "dct_scale=1: mean |d| %.2f, max "
          "%d against torchvision (allowed 2, 48)" % (worst_mean, worst))
    if rank == 0:
        print("center crop, dct_scale=%d: worst mean |d| %.3f, max %d"
              % (dct, worst_mean, worst))

# ---- random crops: threads, epochs, layout ------------------------------
rnd = dict(decode="jpg", image_size=32, crop="random", seed=11, batch_size=3,
           tail="partial")
one = pixels(dict(rnd, threads=1))
four = pixels(dict(rnd, threads=4, chunk_samples=2))
check(len(one) == M and all(np.array_equal(one[i], four[i])
                            for i in range(M)),
      "random crop: threads=1 and threads=4 give other pixels")
other = pixels(dict(rnd, threads=4, epoch=1))
ndiff = sum(not np.array_equal(one[i], other[i]) for i in range(M))
check(ndiff >= M - 1, "random crop: epoch 1 repeats epoch 0's crop of %d of "
      "%d samples" % (M - ndiff, M))
seed2 = pixels(dict(rnd, threads=2, seed=12))
check(sum(not np.array_equal(one[i], seed2[i]) for i in range(M)) >= M - 1,
      "random crop: another seed repeats the crops")
mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
chw = pixels(dict(rnd, threads=3, layout="chw", mean="0.485,0.456,0.406",
                  std="0.229,0.224,0.225"))
for i in range(M):
    want = ((one[i].astype(np.float32) / 255 - np.float32(mean)) /
            np.float32(std)).transpose(2, 0, 1)
    check(chw[i].dtype == np.float32 and chw[i].shape == (3, 32, 32) and
          np.abs(chw[i] - want).max() < 1e-5,
          "sample %d: chw float32 is not the uint8 crop normalised" % i)

# ---- resume mid-epoch ---------------------------------------------------
k = min(2, size)
first = comm.Split(0 if rank < k else MPI.UNDEFINED, rank)
ropts = dict(rnd, threads=2, chunk_samples=2, batch_size=2)
before = {}
if first != MPI.COMM_NULL:
    with ferry.Loader(mixed, comm=first, vars="jpg,cls", **ropts) as L:
        L.set_epoch(1)
        it = iter(L)
        for _ in range(2):
            with next(it) as b:
                a = np.from_dlpack(b["jpg"])
                for j, i in enumerate(np.from_dlpack(b.indices)):
                    before[int(i)] = a[j].copy()
                del a
        sd = L.state_dict()
        if rank == 0:
            with open(path, "wb") as f:
                pickle.dump(sd, f)
    first.Free()
comm.Barrier()
with open(path, "rb") as f:
    sd = pickle.load(f)
after = {}
with ferry.Loader(mixed, vars="jpg,cls", **ropts) as L:
    L.load_state_dict(sd)
    check(L.epoch == 1, "resumed epoch %r" % L.epoch)
    for b in L:
        with b:
            a = np.from_dlpack(b["jpg"])
            for j, i in enumerate(np.from_dlpack(b.indices)):
                after[int(i)] = a[j].copy()
            del a
every_once(list(before) + list(after), M,
           "saved on %d + resumed on %d" % (k, size))
allb = {i: v for r in comm.allgather(before) for i, v in r.items()}
alla = {i: v for r in comm.allgather(after) for i, v in r.items()}
check(all(np.array_equal(v, other[i]) for i, v in list(allb.items()) +
          list(alla.items())),
      "resumed epoch 1: pixels differ from an uninterrupted epoch 1")

# ---- a corrupt JPEG: the same error on every rank -----------------------
msg = None
try:
    with ferry.Loader(out + "/corrupt", vars="jpg,cls", decode="jpg",
                      image_size=32, batch_size=2, threads=2) as L:
        for b in L:
            b.release()
except ferry.Error as e:
    msg = str(e)
check(msg is not None, "the corrupt JPEG was served")
same_everywhere(msg, "the corrupt JPEG's error")
bad = open(out + "/corrupt/bad.txt").read().strip()
for w in (bad, "variable jpg", "sample 16", "rank "):
    check(w in msg, "the error %r does not name %r" % (msg, w))
if rank == 0:
    print("decode_check.py on %d ranks: passed (%d + %d samples); corrupt: %s"
          % (size, N, M, msg))
