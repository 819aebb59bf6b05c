#!/usr/bin/env python3
"""image_check.py PROG DIR - the image decode core against Pillow and
torchvision (tests/image/image.sh runs it).

Writes photo-like images with Pillow into DIR in every mode the core
decodes (JPEG: RGB 4:2:0, 4:2:2, 4:4:4, progressive, odd sizes, grayscale,
CMYK; PNG: RGB, RGBA, L, LA, P, P with transparency, 16-bit gray, 16-bit
RGB written by hand) and compares what PROG (test_image) decodes with:

- full size (no resize): Pillow's decode, convert("RGB") / convert("L"):
  equal, pixel for pixel (Debian's Pillow decodes JPEG with the same
  libjpeg-turbo as TurboJPEG, same IDCT and upsampling); 16-bit PNGs: the
  high byte of Pillow's 16-bit values;
- Resize(256) + CenterCrop(224), Resize((224, 224)) and a random crop
  (RandomResizedCrop's box from PROG box, F.resized_crop, hflip) of
  torchvision 0.14 on the PIL image: equal without DCT scaling; with it
  (JPEG decoded at M/8) within mean |d| < 2 and max |d| < 48 (levels of
  255), and the measured values are printed;
- the float layout against ToTensor + Normalize: within 1e-6.

Prints "ok: ..." / "FAIL: ..." lines; exits 1 on any failure.
"""
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
from PIL import Image

import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F

torch.set_num_threads(1)
PROG, DIR = sys.argv[1], sys.argv[2]
os.makedirs(DIR, exist_ok=True)
failed = 0


def ok(msg):
    print("ok: " + msg)


def fail(msg):
    global failed
    failed = 1
    print("FAIL: " + msg)


def photo(w, h, seed):
    """Gradients, shapes and noise: JPEG has edges, smooth parts and
    texture to code."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 17.0 + seed) * np.cos(y / 23.0)
    g = 255 * x / max(w - 1, 1)
    b = 255 * y / max(h - 1, 1)
    img = np.stack([r, g, b], -1)
    cx, cy = w * 0.6, h * 0.4
    disk = (x - cx) ** 2 + (y - cy) ** 2 < (min(w, h) / 4) ** 2
    img[disk] = [240, 30, 60]
    img[int(h * 0.7):int(h * 0.8), int(w * 0.1):int(w * 0.5)] = [10, 200, 40]
    img += rng.normal(0, 12, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def png16(path, arr, color_type):
    """A 16-bit PNG (Pillow writes no 16-bit RGB): filter 0 rows, zlib."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\0" + arr[i].astype(">u2").tobytes() for i in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(
            ">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, color_type,
                                           0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(chunk(b"IEND", b""))


def write_images():
    big = photo(500, 375, 1)
    small = photo(160, 120, 2)
    files = {}

    def jpeg(name, im, **kw):
        p = os.path.join(DIR, name)
        im.save(p, "JPEG", quality=90, **kw)
        files[name] = p

    def png(name, im, **kw):
        p = os.path.join(DIR, name)
        im.save(p, "PNG", **kw)
        files[name] = p

    jpeg("rgb420.jpg", big, subsampling=2)
    jpeg("rgb422.jpg", small, subsampling=1)
    jpeg("rgb444.jpg", small, subsampling=0)
    jpeg("prog.jpg", big, subsampling=2, progressive=True)
    jpeg("odd.jpg", photo(333, 251, 3), subsampling=2)
    jpeg("portrait.jpg", photo(375, 500, 4), subsampling=2)
    # Large enough for DCT scaling at 224 (a side >= 448: decoded at 4/8).
    jpeg("big.jpg", photo(1000, 750, 7), subsampling=2)
    tiny = photo(64, 48, 6)
    jpeg("tiny420.jpg", tiny, subsampling=2)
    jpeg("tinyprog.jpg", tiny, subsampling=2, progressive=True)
    png("tiny.png", tiny)
    jpeg("gray.jpg", small.convert("L"))
    jpeg("cmyk.jpg", small.convert("CMYK"))
    png("rgb.png", small)
    png("rgba.png", Image.merge("RGBA", small.split() + (small.split()[0],)))
    png("l.png", small.convert("L"))
    png("la.png", Image.merge("LA", (small.convert("L"), small.split()[1])))
    png("p.png", small.quantize(64))
    pt = small.quantize(16)
    png("p_trns.png", pt, transparency=3)
    rng = np.random.default_rng(5)
    g16 = (np.asarray(small.convert("L"), np.uint16) * 257 +
           rng.integers(0, 256, (120, 160))).astype(np.uint16)
    png16(os.path.join(DIR, "gray16.png"), g16, 0)
    files["gray16.png"] = os.path.join(DIR, "gray16.png")
    rgb16 = (np.asarray(small, np.uint16) * 257 +
             rng.integers(0, 256, (120, 160, 3))).astype(np.uint16)
    png16(os.path.join(DIR, "rgb16.png"), rgb16, 2)
    files["rgb16.png"] = os.path.join(DIR, "rgb16.png")
    return files


def run(args):
    return subprocess.run([PROG] + [str(a) for a in args],
                          capture_output=True, text=True)


def decode(path, h, w, c, layout="u8", resize="none", crop="none", seed=0,
           dct=0):
    out = os.path.join(DIR, "out.raw")
    r = run(["decode", path, out, h, w, c, layout, resize, crop, seed, dct])
    if r.returncode != 0:
        return None, (r.stdout + r.stderr).strip()
    if layout == "f32":
        return np.fromfile(out, np.float32).reshape(c, h, w), None
    a = np.fromfile(out, np.uint8).reshape(h, w, c)
    return a, None


def reference(path, c):
    """Pillow's pixels: convert("RGB") / convert("L"); a 16-bit gray PNG,
    which Pillow opens as 32-bit integers, by its values' high byte."""
    im = Image.open(path)
    w, h = im.size
    if im.mode in ("I", "I;16", "I;16B"):
        g = (np.asarray(im, np.int64) >> 8).astype(np.uint8)
        return np.repeat(g[..., None], c, axis=2)
    return np.asarray(im.convert("RGB" if c == 3 else "L")).reshape(h, w, c)


def diff(a, b):
    d = np.abs(a.astype(np.int64) - b.astype(np.int64))
    return d.mean(), d.max()


def check_probe(files):
    want = {
        "rgb420.jpg": "width=500 height=375 channels=3 bit_depth=8 "
                      "progressive=0 cmyk=0 adobe=0 subsampling=4:2:0",
        "rgb422.jpg": "subsampling=4:2:2",
        "rgb444.jpg": "subsampling=4:4:4",
        "prog.jpg": "progressive=1",
        "gray.jpg": "channels=1 bit_depth=8 progressive=0 cmyk=0 adobe=0 "
                    "subsampling=gray",
        "cmyk.jpg": "channels=4 bit_depth=8 progressive=0 cmyk=1 adobe=1",
        "rgba.png": "format=png width=160 height=120 channels=4 bit_depth=8",
        "p.png": "channels=3 bit_depth=8",
        "gray16.png": "channels=1 bit_depth=16",
        "rgb16.png": "channels=3 bit_depth=16",
    }
    for name, words in want.items():
        r = run(["probe", files[name]])
        got = r.stdout.split()
        missing = [wd for wd in words.split() if wd not in got]
        if r.returncode or missing:
            fail(f"probe {name}: {r.stdout.strip()} (missing {missing})")
        else:
            ok(f"probe {name}: {words}")
    for name, ct in (("p.png", 3), ("la.png", 4), ("l.png", 0)):
        r = run(["probe", files[name]])
        if f"color_type={ct}" not in r.stdout.split():
            fail(f"probe {name}: color type {r.stdout.strip()}")


def check_full(files):
    for name, path in sorted(files.items()):
        im = Image.open(path)
        w, h = im.size
        for c in (3, 1):
            ref = reference(path, c)
            got, err = decode(path, h, w, c)
            if got is None:
                fail(f"{name} C={c} full size: {err}")
                continue
            mean, mx = diff(got, ref)
            if mx == 0:
                ok(f"{name} C={c} full size: equal to Pillow's decode "
                   f"({w}x{h})")
            else:
                fail(f"{name} C={c} full size: mean {mean:.3f}, max {mx} "
                     f"against Pillow")


def tv_center(path):
    im = Image.open(path).convert("RGB")
    return np.asarray(T.CenterCrop(224)(T.Resize(256)(im)))


def check_resized(files):
    tol_mean, tol_max = 2, 48
    for name in ("rgb420.jpg", "prog.jpg", "odd.jpg", "portrait.jpg",
                 "big.jpg", "rgb444.jpg", "cmyk.jpg", "rgb.png", "p.png"):
        path = files[name]
        ref = tv_center(path)
        for dct in (0, 1):
            got, err = decode(path, 224, 224, 3, resize=256, crop="center",
                              dct=dct)
            if got is None:
                fail(f"{name} Resize(256)+CenterCrop(224) dct={dct}: {err}")
                continue
            mean, mx = diff(got, ref)
            exact = dct == 0 or not name.endswith(".jpg")
            if exact and mx == 0:
                ok(f"{name} Resize(256)+CenterCrop(224): equal to "
                   f"torchvision's" + (" (full-size decode)" if dct == 0
                                      else ""))
            elif not exact and mean < tol_mean and mx < tol_max:
                ok(f"{name} Resize(256)+CenterCrop(224), DCT scaling allowed: "
                   f"mean |d| {mean:.3f}, max {mx} (tolerance {tol_mean}, "
                   f"{tol_max})")
            else:
                fail(f"{name} Resize(256)+CenterCrop(224) dct={dct}: mean "
                     f"{mean:.3f}, max {mx}")
    # Resize((224, 224)): the whole image, aspect not kept.
    path = files["rgb420.jpg"]
    ref = np.asarray(T.Resize((224, 224))(Image.open(path).convert("RGB")))
    got, err = decode(path, 224, 224, 3, resize="exact")
    if got is not None and diff(got, ref)[1] == 0:
        ok("rgb420.jpg Resize((224, 224)): equal to torchvision's")
    else:
        fail(f"rgb420.jpg Resize((224, 224)): {err or diff(got, ref)}")
    # A small image enlarged: Resize(256) of 160x120 then CenterCrop(224),
    # and CenterCrop(200) of 160x120 with no resize (zero padding).
    path = files["rgb444.jpg"]
    got, err = decode(path, 224, 224, 3, resize=256, crop="center", dct=1)
    ref = tv_center(path)
    if got is not None and diff(got, ref)[1] == 0:
        ok("rgb444.jpg (160x120) enlarged: equal to torchvision's")
    else:
        fail(f"rgb444.jpg enlarged: {err or diff(got, ref)}")
    # Odd margins (43 and 81 pixels): torchvision pads the smaller half on
    # the left and the top.
    got, err = decode(path, 201, 203, 3, crop="center")
    ref = np.asarray(T.CenterCrop((201, 203))(Image.open(path).convert(
        "RGB")))
    if got is not None and diff(got, ref)[1] == 0:
        ok("rgb444.jpg CenterCrop((201, 203)) of 160x120: torchvision's "
           "zero padding")
    else:
        fail(f"rgb444.jpg CenterCrop((201, 203)): {err or diff(got, ref)}")
    # And an odd margin inside the image: CenterCrop((119, 157)).
    got, err = decode(path, 119, 157, 3, crop="center")
    ref = np.asarray(T.CenterCrop((119, 157))(Image.open(path).convert(
        "RGB")))
    if got is not None and diff(got, ref)[1] == 0:
        ok("rgb444.jpg CenterCrop((119, 157)) of 160x120: equal")
    else:
        fail(f"rgb444.jpg CenterCrop((119, 157)): {err or diff(got, ref)}")


def check_random(files):
    worst = (0.0, 0)
    exact = 0
    n = 0
    scaled = 0
    for name in ("rgb420.jpg", "portrait.jpg", "big.jpg", "rgb.png"):
        path = files[name]
        im = Image.open(path).convert("RGB")
        for seed in range(12):
            r = run(["box", im.size[0], im.size[1], seed])
            kv = dict(t.split("=") for t in r.stdout.split())
            x, y, w, h = (int(kv[k]) for k in "xywh")
            scaled += kv["scale"] != "8/8"
            ref = F.resized_crop(im, y, x, h, w, [224, 224])
            if kv["flip"] == "1":
                ref = F.hflip(ref)
            ref = np.asarray(ref)
            for dct in (0, 1):
                got, err = decode(path, 224, 224, 3, crop="random",
                                  seed=seed, dct=dct)
                if got is None:
                    fail(f"{name} random crop seed {seed}: {err}")
                    continue
                mean, mx = diff(got, ref)
                n += 1
                if dct == 0 or name.endswith(".png"):
                    exact += mx == 0
                    if mx != 0:
                        fail(f"{name} seed {seed}: box {x},{y} {w}x{h}: "
                             f"mean {mean:.3f} max {mx} without DCT scaling")
                else:
                    worst = (max(worst[0], mean), max(worst[1], mx))
                    exact += 1
    if scaled == 0:
        fail("random crops: none decoded at a DCT scale")
    if worst[0] < 2 and worst[1] < 48:
        ok(f"random crops ({n} decodes, {scaled} boxes at a DCT scale): "
           f"equal to torchvision's resized_crop + hflip at full size; "
           f"DCT-scaled worst mean |d| {worst[0]:.3f}, max {worst[1]}")
    else:
        fail(f"random crops, DCT-scaled: worst mean {worst[0]:.3f}, max "
             f"{worst[1]}")
    # The same seed, the same pixels; other seeds differ.
    a, _ = decode(files["rgb420.jpg"], 224, 224, 3, crop="random", seed=7,
                  dct=1)
    b, _ = decode(files["rgb420.jpg"], 224, 224, 3, crop="random", seed=7,
                  dct=1)
    c, _ = decode(files["rgb420.jpg"], 224, 224, 3, crop="random", seed=8,
                  dct=1)
    if a is not None and np.array_equal(a, b) and not np.array_equal(a, c):
        ok("random crop: seed 7 twice the same pixels, seed 8 others")
    else:
        fail("random crop: seeds")


def check_float(files):
    path = files["rgb420.jpg"]
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                    T.Normalize(mean, std)])
    ref = tf(Image.open(path).convert("RGB")).numpy()
    got, err = decode(path, 224, 224, 3, layout="f32", resize=256,
                      crop="center")
    if got is None:
        fail(f"float layout: {err}")
        return
    d = float(np.abs(got - ref).max())
    if d <= 1e-6:
        ok(f"CHW float32, ToTensor + Normalize: max |d| {d:.2e}")
    else:
        fail(f"CHW float32: max |d| {d}")


def main():
    files = write_images()
    check_probe(files)
    check_full(files)
    check_resized(files)
    check_random(files)
    check_float(files)
    return failed


if __name__ == "__main__":
    sys.exit(main())
