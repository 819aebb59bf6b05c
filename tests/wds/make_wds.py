#!/usr/bin/env python3
"""make_wds.py OUT - WebDataset tar shards written with Python's tarfile the
way WebDataset's TarWriter writes them (members KEY.EXT of mode 0o444, one
sample's members one after the other, extensions in sorted order), with the
references tests/wds/wds.sh and wds_check.py compare ferry with.

OUT/good/shard-00000K.tar, shards of very different sizes and formats:
  0  PAX (tarfile's default, TarWriter's): 37 samples, a key of 130
     characters and a non-ASCII key (PAX path records), a __meta__ member
     and a directory member (both skipped), one empty .json
  1  GNU: 23 samples, keys of 101 to 180 characters (././@LongLink 'L'
     members), one 300 KiB .jpg
  2  ustar: 11 samples, names of 120 characters split into prefix and name
  3  PAX: 1 sample
  4  PAX: 600 samples of small members, a global PAX header ('g') first
Samples are KEY.cls (an ASCII integer), KEY.jpg (random bytes: not decoded)
and KEY.json.

OUT/ref/: shard-00000K.jpg.npz and .json.npz (values + offsets, the
FILE.npz::ragged of tests/fixtures/dump_compare.py), shard-00000K.cls.npy,
and all.npz (jpg_values, jpg_offsets, json_values, json_offsets, cls over
every sample in dataset order) for wds_check.py.

OUT/bad/: shards ferry must refuse, one per line in OUT/bad/list.txt as
"FILE<TAB>WORDS" (WORDS '|'-separated, in the message).
"""
import gzip
import io
import json
import os
import sys
import tarfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fixtures"))
from ragged_ref import ragged_ref  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(28)


def member(tf, name, data, mtime=1700000000):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o444
    ti.mtime = mtime
    ti.uname = ti.gname = "bigdata"
    tf.addfile(ti, io.BytesIO(data))


def sample(key, i, big=False, empty_json=False):
    n = 300 * 1024 if big else int(rng.integers(0, 5000))
    jpg = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    cls = int(rng.integers(-5, 1000))
    js = b"" if empty_json else json.dumps({"key": key, "i": i}).encode()
    return {"cls": str(cls).encode(), "jpg": jpg, "json": js}


def write_shard(path, fmt, samples, extra=None, pax_headers=None):
    with tarfile.open(path, "w", format=fmt,
                      pax_headers=pax_headers or {}) as tf:
        if extra:
            extra(tf)
        for key, s in samples:
            for ext in sorted(s):
                member(tf, key + "." + ext, s[ext])


def keys(prefix, n, width=6):
    return ["%s%0*d" % (prefix, width, i) for i in range(n)]


good = os.path.join(out, "good")
ref = os.path.join(out, "ref")
bad = os.path.join(out, "bad")
for d in (good, ref, bad):
    os.makedirs(d, exist_ok=True)

shards = []
# 0: PAX, a long key, a non-ASCII key, a __meta__ and a directory member
k0 = keys("a/s", 37)
k0[5] = "a/" + "x" * 128
k0[9] = "a/caf\u00e9-%06d" % 9
s0 = [(k, sample(k, i, empty_json=(i == 3))) for i, k in enumerate(k0)]


def extra0(tf):
    member(tf, "__meta__", b"not a sample")
    d = tarfile.TarInfo("a")
    d.type = tarfile.DIRTYPE
    d.mode = 0o755
    tf.addfile(d)


shards.append(("shard-000000.tar", tarfile.PAX_FORMAT, s0, extra0, None))
# 1: GNU long names
k1 = ["b/" + ("k%03d" % i) * (25 + i * 2) for i in range(23)]
s1 = [(k, sample(k, i, big=(i == 7))) for i, k in enumerate(k1)]
shards.append(("shard-000001.tar", tarfile.GNU_FORMAT, s1, None, None))
# 2: ustar, names split into prefix and name
k2 = ["c/" + "d" * 60 + "/" + "e%04d" % i + "f" * 40 for i in range(11)]
s2 = [(k, sample(k, i)) for i, k in enumerate(k2)]
shards.append(("shard-000002.tar", tarfile.USTAR_FORMAT, s2, None, None))
# 3: one sample
shards.append(("shard-000003.tar", tarfile.PAX_FORMAT,
               [("d/only", sample("d/only", 0))], None, None))
# 4: 600 small samples, a global PAX header first
s4 = []
for i, k in enumerate(keys("e/", 600)):
    s4.append((k, {"cls": str(i % 10).encode(),
                   "jpg": bytes([i % 256]) * (i % 17),
                   "json": b"{}"}))
shards.append(("shard-000004.tar", tarfile.PAX_FORMAT, s4, None,
               {"comment": "ferry test"}))

all_jpg, all_json, all_cls = [], [], []
for name, fmt, samples, extra, gh in shards:
    write_shard(os.path.join(good, name), fmt, samples, extra, gh)
    jpg = [np.frombuffer(s["jpg"], np.uint8) for _, s in samples]
    js = [np.frombuffer(s["json"], np.uint8) for _, s in samples]
    cls = np.array([int(s["cls"]) for _, s in samples], np.int64)
    stem = os.path.join(ref, name[:-4])
    ragged_ref(stem + ".jpg.npz", jpg, np.uint8)
    ragged_ref(stem + ".json.npz", js, np.uint8)
    np.save(stem + ".cls.npy", cls)
    all_jpg += jpg
    all_json += js
    all_cls.append(cls)
lens = lambda xs: np.concatenate([[0], np.cumsum([len(x) for x in xs])])
np.savez(os.path.join(ref, "all.npz"),
         jpg_values=np.concatenate(all_jpg), jpg_offsets=lens(all_jpg),
         json_values=np.concatenate(all_json), json_offsets=lens(all_json),
         cls=np.concatenate(all_cls))

# ---- bad shards -------------------------------------------------------
lst = []


def bad_shard(name, members, words, fmt=tarfile.PAX_FORMAT):
    with tarfile.open(os.path.join(bad, name), "w", format=fmt) as tf:
        for n, data in members:
            member(tf, n, data)
    lst.append((name, words))


def m(key, *exts):
    return [(key + "." + e, b"7" if e == "cls" else b"bytes of " + key.encode())
            for e in exts]


bad_shard("nonadjacent.tar", m("a", "cls", "jpg") + m("b", "cls", "jpg") +
          m("a", "json"), "key 'a'|adjacent|offset 4096")
bad_shard("duplicate.tar", m("a", "cls", "jpg") + m("a", "jpg"),
          "second member|extension jpg|offset 2048")
bad_shard("missing.tar", m("a", "cls", "jpg") + m("b", "cls") +
          m("c", "cls", "jpg"), "sample 'b'|no member b.jpg|offset 2048")
bad_shard("noext.tar", m("a", "cls", "jpg") + [("README", b"hi")],
          "'README'|KEY.EXTENSION|no dot|offset 2048")
bad_shard("dotfirst.tar", m("a", "cls") + [("x/.hidden", b"hi")],
          "'x/.hidden'|starts with a dot|offset 1024")
bad_shard("badcls.tar", m("a", "cls", "jpg") + [("b.cls", b"seven"),
                                                ("b.jpg", b"x")],
          "b.cls|not an ASCII integer|offset 2048")
# a corrupt header checksum: the third member's name changed, sum kept
good0 = open(os.path.join(good, "shard-000003.tar"), "rb").read()
with tarfile.open(os.path.join(bad, "ok.tar"), "w",
                  format=tarfile.USTAR_FORMAT) as tf:
    for n, data in m("a", "cls", "jpg", "json") + m("b", "cls", "jpg", "json"):
        member(tf, n, data)
ok = bytearray(open(os.path.join(bad, "ok.tar"), "rb").read())
os.unlink(os.path.join(bad, "ok.tar"))
c = bytearray(ok)
c[2 * 1024 + 1] ^= 0x20  # member 3's header starts at 2048: its name
open(os.path.join(bad, "checksum.tar"), "wb").write(bytes(c))
lst.append(("checksum.tar", "checksum|offset 2048"))
# truncated in a payload, and at a member boundary (no end blocks)
open(os.path.join(bad, "truncated.tar"), "wb").write(bytes(ok[:4610]))
lst.append(("truncated.tar", "runs past the end|truncated|offset 4096"))
open(os.path.join(bad, "noend.tar"), "wb").write(bytes(ok[:3072]))
lst.append(("noend.tar", "end-of-archive|truncated|offset 3072"))
# gzip: by name and by bytes under a .tar name
open(os.path.join(bad, "shard.tar.gz"), "wb").write(gzip.compress(good0))
lst.append(("shard.tar.gz", "gzip|gzip -dc|offset 0"))
open(os.path.join(bad, "gzbytes.tar"), "wb").write(gzip.compress(good0))
lst.append(("gzbytes.tar", "gzip|gzip -dc|offset 0"))
# a base-256 size field where octal fits: valid (GNU writes it for > 8 GiB)
b256 = bytearray(ok)
h = 1024  # a.jpg's header
size = int(bytes(b256[h + 124:h + 136]).rstrip(b"\0 ").decode(), 8)
b256[h + 124:h + 136] = b"\x80" + size.to_bytes(11, "big")
b256[h + 148:h + 156] = b" " * 8
b256[h + 148:h + 156] = ("%06o\0 " % sum(b256[h:h + 512])).encode()
open(os.path.join(out, "base256.tar"), "wb").write(bytes(b256))
open(os.path.join(out, "base256-octal.tar"), "wb").write(bytes(ok))
with open(os.path.join(bad, "list.txt"), "w") as f:
    for name, words in lst:
        f.write("%s\t%s\n" % (os.path.join(bad, name), words))
print("make_wds.py: %d good shards, %d samples, %d bad shards"
      % (len(shards), sum(len(s[2]) for s in shards), len(lst)))
