#!/usr/bin/env python3
"""order_check.py FERRY OUT [TREES] - the listing rule against ImageFolder's on
random trees (tests/imgfolder/imgfolder.sh).

Each of TREES trees (30 by default; seeded) has 1 to 6 class directories and random
subdirectories, names drawn from characters whose byte order matters
('-', '.', '/' neighbours, digits, capitals, '_', ' ', '~', a two-byte
UTF-8 letter), files with suffixes of every case (.jpg, .JPEG, .Png, ...)
and ones ImageFolder ignores (.txt, .jpg.txt, no suffix), and hidden
names; the files are not images (ImageFolder(root).samples only lists):
each holds its own path, so a sample's bytes say which file it is.  For
each tree `ferry dump --var image --row-hash` and `--var label`, in
storage order, must give ImageFolder's samples: the same files in the same
order with the same labels, or, where ImageFolder refuses the tree (a
class without an image), a refusal naming the class.  Prints one line per
tree, exits 1 when one differs.
"""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))
from rowhash import fnv1a64  # noqa: E402
from torchvision.datasets import ImageFolder  # noqa: E402

ferry, out = sys.argv[1], sys.argv[2]
trees = int(sys.argv[3]) if len(sys.argv) > 3 else 30
CH = "aB-._09 ~\u00e9Zz"
SUF = [".jpg", ".JPG", ".jpeg", ".JPEG", ".png", ".Png", ".txt", ".jpg.txt",
       ""]


def name(rng):
    while True:
        n = "".join(rng.choice(CH) for _ in range(rng.randint(1, 4)))
        if n not in (".", ".."):
            return n


def build(root, rng):
    os.makedirs(root)
    k = 0
    for _ in range(rng.randint(1, 6)):
        cls = os.path.join(root, name(rng))
        dirs = [cls]
        os.makedirs(cls, exist_ok=True)
        for _ in range(rng.randint(0, 6)):
            d = os.path.join(rng.choice(dirs), name(rng))
            if not os.path.exists(d):
                os.makedirs(d)
                dirs.append(d)
        # most classes hold an image; a few none (ImageFolder refuses)
        sure = rng.random() < 0.97
        for i in range(rng.randint(1, 10)):
            suf = ".jpg" if sure and i == 0 else rng.choice(SUF)
            p = os.path.join(rng.choice(dirs), name(rng) + suf)
            if not os.path.exists(p):
                with open(p, "w") as f:
                    f.write("%s %d" % (p, k))
                k += 1


def dump(root, var):
    r = subprocess.run(
        [ferry, "dump", root, "--var", var, "--row-hash", "--epoch", "0",
         "--shuffle", "none", "--shuffle-buffer", "0", "--tail", "partial",
         "--batch-size", "1000", "--threads", "3"],
        capture_output=True, text=True)
    return r.returncode, r.stdout.split("\n")[:-1], r.stderr


bad = 0
for seed in range(trees):
    rng = random.Random(seed)
    root = os.path.join(out, "tree%02d" % seed)
    build(root, rng)
    try:
        ref = ImageFolder(root).samples
    except FileNotFoundError as e:
        ref = e
    rc, lines, err = dump(root, "image")
    if isinstance(ref, Exception):
        why = None if rc == 1 and ("without a .jpg" in err or
                                   "nothing ferry reads" in err) \
            else "ImageFolder refuses it (%s), ferry: status %d %s" % (
                ref, rc, err.strip())
        n = 0
    else:
        n = len(ref)
        why = None
        if rc != 0:
            why = "ferry status %d: %s" % (rc, err.strip())
        elif len(lines) != n:
            why = "%d samples, ImageFolder %d" % (len(lines), n)
        else:
            lrc, labels, lerr = dump(root, "label")
            for g, (line, lab) in enumerate(zip(lines, labels)):
                f = line.split()
                data = open(ref[g][0], "rb").read()
                if int(f[2]) != g or f[5] != "fnv=%016x" % fnv1a64(data):
                    why = "sample %d is not %s" % (g, ref[g][0])
                    break
                if lab.split()[3] != str(ref[g][1]):
                    why = "sample %d: label %s, ImageFolder %d" % (
                        g, lab.split()[3], ref[g][1])
                    break
    if why:
        print("FAIL: tree %d: %s" % (seed, why))
        bad = 1
    else:
        print("ok: tree %d: %s" % (seed, "%d samples in ImageFolder's order"
                                   % n if n else "refused, as ImageFolder"))
sys.exit(bad)
