#!/usr/bin/env python3
"""make_wds_npy.py OUT - WebDataset tar shards with .npy members, written
with Python's tarfile the way WebDataset's TarWriter writes them (its npy
encoder: numpy.lib.format.write_array into a BytesIO), and the references
tests/wds/npy.sh and npy_check.py compare ferry with (docs/images.md,
decision 0062).

OUT/good/shard-00000K.tar (K = 0, 1, 2: 9, 1 and 40 samples; PAX, GNU,
PAX), every sample holding:
  cls       an ASCII integer (the sample's index in the dataset)
  npy       float32 (3, 4)                  -> dense, rows (3, 4)
  seg.npy   int32 (n,), n in 0..9           -> ragged int32
  box.npy   float32 (n, 4), n in 0..5       -> ragged, rows of (4,)
  s.npy     float64 () (0-d)                -> dense scalars
  be.npy    >f8 (2, 3), big-endian          -> dense, swapped on read
  tail.npy  int16 (3,) in shards 0 and 2, (5,) in shard 1: every shard
            alone has one shape, all of them not -> ragged
  long.npy  uint8 (2,), a v2.0 header padded to 100,000 bytes (past the
            scan's read window: one extra read) in shard 0, normal in 1, 2
  txt       0 to 3,000 zero bytes (so some .npy payloads start where the
            scan's read window ends: the preamble read)

OUT/ref/: shard-00000K.EXT.npy (the dense variables, the arrays stacked),
shard-00000K.EXT.npz (values + offsets: the FILE.npz::ragged of
tests/fixtures/dump_compare.py), all.npz (every variable over every sample
in dataset order: EXT, or EXT_values and EXT_offsets) for npy_check.py.

OUT/bad/: shards ferry must refuse, one per line in OUT/bad/list.txt as
"FILE<TAB>WORDS" (WORDS '|'-separated, in the message); OUT/bad2/: two
shards whose arrays' dtypes differ (each alone is good).  OUT/miss.tar:
three samples, k1 without its seg.npy (uint16 (i + 1,)) and s.npy.
"""
import io
import os
import sys
import tarfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fixtures"))
from ragged_ref import ragged_ref  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(62)


def npy(a, allow_pickle=False):
    """A .npy file's bytes, as WebDataset's TarWriter encodes .npy."""
    b = io.BytesIO()
    np.lib.format.write_array(b, np.asanyarray(a), allow_pickle=allow_pickle)
    return b.getvalue()


def npy_long(a, total=100000):
    """A v2.0 .npy file of a whose header dict is padded with spaces to
    total bytes (numpy reads it: the dict ends at the header length)."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        a.dtype.str, a.shape)
    hl = total - 12
    head = d + " " * (hl - len(d) - 1) + "\n"
    return (b"\x93NUMPY\x02\x00" + hl.to_bytes(4, "little") +
            head.encode() + a.tobytes())


def member(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o444
    ti.mtime = 1700000000
    tf.addfile(ti, io.BytesIO(data))


def write_shard(path, fmt, samples):
    with tarfile.open(path, "w", format=fmt) as tf:
        for key, s in samples:
            for ext in sorted(s):
                member(tf, key + "." + ext, s[ext])


good = os.path.join(out, "good")
ref = os.path.join(out, "ref")
bad = os.path.join(out, "bad")
bad2 = os.path.join(out, "bad2")
for d in (good, ref, bad, bad2):
    os.makedirs(d, exist_ok=True)

DENSE = ("npy", "s.npy", "be.npy", "long.npy")
RAGGED = ("seg.npy", "box.npy", "tail.npy")
layout = [(9, tarfile.PAX_FORMAT), (1, tarfile.GNU_FORMAT),
          (40, tarfile.PAX_FORMAT)]
arrays = {v: [] for v in DENSE + RAGGED + ("cls",)}
g = 0
for k, (n, fmt) in enumerate(layout):
    samples, mine = [], {v: [] for v in arrays}
    for i in range(n):
        a = {
            "npy": rng.standard_normal((3, 4)).astype(np.float32),
            "seg.npy": rng.integers(-2**31, 2**31, int(rng.integers(0, 10)),
                                    dtype=np.int32),
            "box.npy": rng.standard_normal(
                (int(rng.integers(0, 6)), 4)).astype(np.float32),
            "s.npy": np.float64(rng.standard_normal()),
            "be.npy": rng.standard_normal((2, 3)).astype(">f8"),
            "tail.npy": rng.integers(-999, 999, 5 if k == 1 else 3,
                                     dtype=np.int16),
            "long.npy": np.array([g % 256, (7 * g) % 256], np.uint8),
            "cls": g,
        }
        s = {v: npy(a[v]) for v in DENSE + RAGGED}
        if k == 0:
            s["long.npy"] = npy_long(a["long.npy"])
            assert np.array_equal(np.load(io.BytesIO(s["long.npy"]),
                                          max_header_size=200000),
                                  a["long.npy"])
        s["cls"] = str(g).encode()
        # bytes of any length: members start at odd blocks too, so some
        # .npy payloads start where the scan's read window ends
        s["txt"] = bytes(int(rng.integers(0, 3000)))
        samples.append(("k%d/%05d" % (k, i), s))
        for v in arrays:
            mine[v].append(a[v])
        g += 1
    write_shard(os.path.join(good, "shard-%06d.tar" % k), fmt, samples)
    stem = os.path.join(ref, "shard-%06d" % k)
    for v in DENSE + ("cls",):
        np.save("%s.%s.npy" % (stem, v),
                np.array(mine[v], dtype=np.asarray(mine[v][0]).dtype))
    for v in RAGGED:
        ragged_ref("%s.%s.npz" % (stem, v), mine[v], mine[v][0].dtype)
    for v in arrays:
        arrays[v] += mine[v]
allz = {}
for v in DENSE + ("cls",):
    allz[v] = np.array(arrays[v])
for v in RAGGED:
    allz[v + "_values"] = np.concatenate(arrays[v])
    allz[v + "_offsets"] = np.concatenate(
        [[0], np.cumsum([len(x) for x in arrays[v]])]).astype(np.int64)
np.savez(os.path.join(ref, "all.npz"), **allz)

# ---- bad shards -------------------------------------------------------
lst = []


def bad_shard(name, arrays_, words, ext="npy"):
    """arrays_: one .npy file's bytes (or an array) per sample k0, k1..."""
    with tarfile.open(os.path.join(bad, name), "w") as tf:
        for i, a in enumerate(arrays_):
            member(tf, "k%d.cls" % i, b"%d" % i)
            member(tf, "k%d.%s" % (i, ext),
                   a if isinstance(a, bytes) else npy(a))
    lst.append((name, words))


f4 = np.zeros((2, 3), np.float32)
# member k1.npy's header at 3 * 1024 (k0.cls, k0.npy, k1.cls before it)
bad_shard("dtype.tar", [f4, f4.astype(np.float64), f4],
          "member k1.npy|offset 3072|float64|sample 'k0'|float32")
bad_shard("fortran.tar", [f4, np.asfortranarray(np.zeros((2, 3), np.float32))],
          "member k1.npy|offset 3072|Fortran order")
bad_shard("object.tar", [npy(np.array([1, "a"], dtype=object),
                             allow_pickle=True)],
          "member k0.npy|offset 1024|'|O'|Python objects")
bad_shard("shape.tar", [f4, np.zeros((2, 4), np.float32)],
          "member k1.npy|offset 3072|shape (2, 4)|sample 'k0'|shape (2, 3)")
bad_shard("ndim.tar", [np.zeros(3, np.int32), np.int32(4)],
          "member k1.npy|shape ()|shape (3,)")
bad_shard("emptyrow.tar", [np.zeros((2, 0), np.float32)],
          "member k0.npy|shape (2, 0)|no value")
# a header whose length runs past the member: refused, nothing past read
lie = bytearray(npy(f4))
lie[8:10] = (60000).to_bytes(2, "little")
bad_shard("header-lies.tar", [bytes(lie)],
          "member k0.npy|offset 1024|truncated .npy header|60000|"
          "only 152 present")
# a v2.0 header claiming 2 GiB: past the parser's limit
lie2 = bytearray(npy(f4))
lie2[6:8] = b"\x02\x00"
lie2 = lie2[:8] + (2**31).to_bytes(4, "little") + lie2[10:]
bad_shard("header-huge.tar", [bytes(lie2)],
          "member k0.npy|offset 1024|header length|exceeds")
# a shape whose values run past the member (the file cut short)
cut = npy(np.zeros(100, np.int32))[:-40]
bad_shard("values-past.tar", [cut],
          "member k0.npy|offset 1024|needs 400 bytes|holds 360|truncated")
# not a .npy file at all
bad_shard("notnpy.tar", [b"hello"], "member k0.npy|not a .npy file")
# seg.npy: the rule holds for extensions ending in .npy
bad_shard("seg-dtype.tar", [np.zeros(2, np.int32), np.zeros(3, np.int64)],
          "member k1.seg.npy|int64|sample 'k0'|int32", ext="seg.npy")
# two shards, each good alone, whose dtypes differ: the core's agreement
for k, dt in ((0, np.float32), (1, np.float64)):
    with tarfile.open(os.path.join(bad2, "shard-%06d.tar" % k), "w") as tf:
        for i in range(3):
            member(tf, "s%d_%d.npy" % (k, i), npy(np.zeros(2, dt)))
# missing=: sample k1 has no seg.npy and no s.npy
with tarfile.open(os.path.join(out, "miss.tar"), "w") as tf:
    for i in range(3):
        member(tf, "k%d.cls" % i, b"%d" % i)
        if i != 1:
            member(tf, "k%d.s.npy" % i, npy(np.float32(i)))
            member(tf, "k%d.seg.npy" % i, npy(np.arange(i + 1,
                                                         dtype=np.uint16)))
with open(os.path.join(bad, "list.txt"), "w") as f:
    for name, words in lst:
        f.write("%s\t%s\n" % (os.path.join(bad, name), words))
print("make_wds_npy.py: %d good shards, %d samples, %d bad shards"
      % (len(layout), g, len(lst)))
