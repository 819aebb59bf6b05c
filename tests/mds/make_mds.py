"""make_mds.py OUT - MosaicML Streaming MDS datasets for tests/mds/.

Written from the MDS format as MosaicML Streaming's MDSWriter writes it
(streaming/base/format/mds/writer.py, encodings.py and base/writer.py,
read for this; no code of theirs is used): a shard is uint32 num_samples,
num_samples + 1 uint32 offsets, the writer's configuration as JSON
(sort_keys), then the samples; a sample is a uint32 size per
variable-size column, then the columns' bytes in column order (columns
sorted by name).  A shard is flushed when the next sample would take it
past size_limit (counting 8 + the configuration per shard and 4 per
sample, as MDSWriter does).  index.json: {"version": 2, "shards": [...]}
with each shard's samples, raw_data, zip_data and the configuration.

OUT/good: every encoding ferry serves (and a pkl column, skipped) over
37 samples cut into shards of different sizes; OUT/zstd: the same samples
in zstd shards (the zstd program compresses them), the raw files removed
as Streaming's zip-only upload leaves them.  samples() gives what each
column should read as (tests/mds/mds_check.py imports it).

make_mds.py --dyn OUT: ndarray columns of dynamic shapes (tests/mds/
mds_dyn.sh): OUT/dyn, DYN_COLUMNS over 29 samples in several shards (the
dimensions after the first the same in every sample, or not; 1 to 8
dimensions; shape prefixes of uint8 and uint16); OUT/dynmix, a column
whose shards each have one inner shape but not the same one, and one
whose shards' first samples agree but not their later ones
(dyn_samples() and dynmix_samples() give what ferry serves).

make_mds.py --hashes OUT: shards with the digests Streaming's
MDSWriter(hashes=...) lists (tests/mds/mds_hashes.sh): OUT/hashed, raw
shards, and OUT/hashed_zstd, zstd shards, with blake2b, md5, sha1,
sha256 and xxh64 digests of every file; OUT/h_ALGO with fewer (HASH_SETS:
ferry compares the fastest it computes, so each of md5, sha1, sha256 is
the one compared somewhere; blake2b alone, none).  xxh64 is computed here
from the xxHash specification (Debian has no python3-xxhash), checked
against the xxHash project's sanity vectors first.
"""
import hashlib
import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
from decimal import Decimal

import numpy as np
from PIL import Image

N = 37

COLUMNS = {
    "b": "bytes", "s": "str", "j": "json", "img": "jpeg", "png": "png",
    "pil": "pil", "i": "int", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64", "i8": "int8", "i16": "int16",
    "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
    "f64": "float64", "si": "str_int", "sf": "str_float",
    "sd": "str_decimal", "af": "ndarray:float32:2,3",
    "ad": "ndarray:int16", "an": "ndarray", "p": "pkl",
}

SCALARS = {"uint8": "<u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
           "int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
           "float16": "<f2", "float32": "<f4", "float64": "<f8",
           "int": "<i8"}
ND_CODE = {"uint8": 8, "int8": 9, "uint16": 16, "int16": 17, "float16": 18,
           "uint32": 32, "int32": 33, "float32": 34, "uint64": 64,
           "int64": 65, "float64": 66}


def image(i, mode):
    a = (np.arange(6 * (5 + i % 4) * 3) * (i + 3) % 251).astype(np.uint8)
    im = Image.fromarray(a.reshape(6, 5 + i % 4, 3), "RGB")
    return im.convert(mode) if mode != "RGB" else im


def sample(i):
    """Sample i as the writer is given it."""
    r = np.random.default_rng(i)
    return {
        "b": bytes(r.integers(0, 256, i % 7 * 3, dtype=np.uint8)),
        "s": "s\u00e9%d" % i * (i % 3),
        "j": {"k": i, "v": [i, "x" * (i % 4)]},
        "img": image(i, "RGB"), "png": image(i, "L"), "pil": image(i, "RGB"),
        "i": -(1 << 40) + i, "u8": 250 + i % 6, "u16": 65000 + i,
        "u32": 4000000000 + i, "u64": (1 << 63) + i, "i8": -100 - i % 28,
        "i16": -30000 + i, "i32": -(1 << 30) - i, "i64": -(1 << 62) - i,
        "f16": 0.5 + i, "f32": 1.25 * i, "f64": 1e300 / (i + 1),
        "si": -(10 ** 17) * i + 7, "sf": i / 3.0 if i % 5 else float(-i),
        "sd": Decimal("1.%d" % i),
        "af": np.arange(6, dtype=np.float32).reshape(2, 3) + i,
        "ad": np.arange(1 + i % 5, dtype=np.int16).reshape(1, -1) * -i,
        "an": np.full((1 + i % 2, 300 if i % 3 == 0 else 2), i,
                      dtype=np.uint16),
        "p": {"i": i},
    }


def encode(enc, obj):
    """Streaming's encoding of obj (encodings.py), as bytes; bytes are
    stored as they are whatever the encoding (mds_encode does so)."""
    if enc == "bytes" or isinstance(obj, bytes):
        return obj
    if enc in ("str", "str_int", "str_float", "str_decimal"):
        return str(obj).encode("utf-8")
    if enc == "json":
        return json.dumps(obj).encode("utf-8")
    if enc in ("jpeg", "png"):
        out = io.BytesIO()
        obj.save(out, format=enc.upper())
        return out.getvalue()
    if enc == "pil":
        m = obj.mode.encode("utf-8")
        return struct.pack("<III", obj.size[0], obj.size[1], len(m)) + m + \
            obj.tobytes()
    if enc == "pkl":
        return pickle.dumps(obj)
    if enc in SCALARS:
        return np.array(obj, dtype=SCALARS[enc]).tobytes()
    if enc.startswith("ndarray"):
        parts = enc.split(":")[1:]
        out = b""
        if not parts:
            out += bytes([ND_CODE[obj.dtype.name]])
        if len(parts) < 2:
            m = max(obj.shape)
            sd = 0 if m < 256 else 1 if m < 65536 else 2 if m < 1 << 32 else 3
            out += bytes([(obj.ndim << 2) | sd])
            out += np.array(obj.shape, "<u%d" % (1 << sd)).tobytes()
        return out + obj.tobytes()
    raise ValueError(enc)


def served(enc, obj):
    """What ferry serves for obj: bytes for the byte encodings, the value
    for scalars and str_int/str_float, the array (flattened when its shape
    is per sample)."""
    if enc in SCALARS:
        return np.array(obj, dtype=SCALARS[enc])
    if enc == "str_int":
        return np.int64(obj)
    if enc == "str_float":
        return np.float64(obj)
    if enc.startswith("ndarray"):
        return obj if enc.count(":") == 2 else obj.reshape(-1)
    return np.frombuffer(encode(enc, obj), np.uint8)


def samples(n=N):
    return [{k: served(COLUMNS[k], v) for k, v in sample(i).items()
             if COLUMNS[k] != "pkl"} for i in range(n)]


DYN_N = 29
DYN_COLUMNS = {"k": "int", "t": "ndarray:float32", "n": "ndarray",
               "v": "ndarray:uint8", "w": "ndarray:int16",
               "h": "ndarray:uint16", "e": "ndarray:float64",
               "g": "ndarray:int8"}
# the columns whose dimensions after the first are the same in every
# sample (at most 6 of them): ferry keeps them as the rows' inner shape
DYN_INNER = {"t", "n", "h", "e"}


def dyn_sample(i):
    def arr(shape, dtype, scale=1):
        return ((np.arange(int(np.prod(shape))) * scale + i * 7) % 120 -
                20).astype(dtype).reshape(shape)
    return {
        "k": i,
        "t": arr((1 + i % 4, 3, 2), np.float32, 0.5),
        "n": arr((2 + i % 3, 5), np.int32, 1001),
        "v": arr((1 + i % 7,), np.uint8) + 20,
        "w": arr((2, 1 + i % 3), np.int16),
        "h": arr((1 + i % 2, 300), np.uint16) + 20,
        "e": arr((1 + i % 2, 2, 1, 1, 3, 1, 2), np.float64, 0.25),
        "g": arr((1 + i % 2, 1, 1, 1, 1, 1, 1, 2), np.int8),
    }


def dyn_served(k, a):
    if not isinstance(a, np.ndarray):
        return np.array(a, "<i8")
    return a if k in DYN_INNER else a.reshape(-1)


def dyn_samples(n=DYN_N):
    return [{k: dyn_served(k, v) for k, v in dyn_sample(i).items()}
            for i in range(n)]


def dynmix_sample(i):
    """x: rows of 3 in the first shard's samples (0-9), of 4 after; y: rows
    of 3 but in samples 5 and 15 (each shard's first sample agrees)."""
    return {"k": i,
            "x": np.full((1 + i % 3, 3 if i < 10 else 4), i - 5, np.int32),
            "y": np.full((1 + i % 3, 2 if i % 10 == 5 else 3), i, np.uint8)}


def dynmix_samples(n=20):
    return [{"k": np.array(s["k"], "<i8"), "x": s["x"].reshape(-1),
             "y": s["y"].reshape(-1)}
            for s in (dynmix_sample(i) for i in range(n))]


def column_at(path, i, name):
    """Where column name's bytes start in sample i of shard path."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack_from("<I", data)[0]
    offs = struct.unpack_from("<%dI" % (n + 1), data, 4)
    cfg = json.loads(data[4 + 4 * (n + 1):offs[0]])
    sizes = cfg["column_sizes"]
    nvar = sum(z is None for z in sizes)
    heads = struct.unpack_from("<%dI" % nvar, data, offs[i])
    at, k = offs[i] + 4 * nvar, 0
    for c, z in zip(cfg["column_names"], sizes):
        if c == name:
            return at
        if z is None:
            z, k = heads[k], k + 1
        at += z
    raise KeyError(name)


M64 = (1 << 64) - 1
XP1, XP2, XP3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
XP4, XP5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def xxh64(data, seed=0):
    """XXH64 of data as xxhash.xxh64(data).hexdigest() gives it."""
    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M64

    def rnd(acc, lane):
        return rotl((acc + lane * XP2) & M64, 31) * XP1 & M64

    def u(i, k):
        return int.from_bytes(data[i:i + k], "little")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + XP1 + XP2) & M64, (seed + XP2) & M64, seed,
             (seed - XP1) & M64]
        while i + 32 <= n:
            v = [rnd(v[k], u(i + 8 * k, 8)) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) +
             rotl(v[3], 18)) & M64
        for k in range(4):
            h = ((h ^ rnd(0, v[k])) * XP1 + XP4) & M64
    else:
        h = (seed + XP5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, u(i, 8)), 27) * XP1 + XP4) & M64
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (u(i, 4) * XP1 & M64), 23) * XP2 + XP3) & M64
        i += 4
    while i < n:
        h = rotl(h ^ (data[i] * XP5 & M64), 11) * XP1 & M64
        i += 1
    h = (h ^ (h >> 33)) * XP2 & M64
    h = (h ^ (h >> 29)) * XP3 & M64
    return "%016x" % (h ^ (h >> 32))


def xxh64_selfcheck():
    """The xxHash project's sanity vectors (cli/xsum_sanity_check.c)."""
    g, buf = 2654435761, bytearray()
    for _ in range(222):
        buf.append(g >> 56)
        g = g * 11400714785074694797 & M64
    for n, want in ((0, "ef46db3751d8e999"), (1, "e934a84adb052768"),
                    (4, "9136a0dca57457ee"), (14, "8282dcc4994e35c8"),
                    (222, "b641ae8cb691c174")):
        if xxh64(bytes(buf[:n])) != want:
            raise AssertionError("xxh64 of %d bytes" % n)


def digest(algo, data):
    """Streaming's get_hash(algo, data): hashlib's, or xxhash's xxh64."""
    return xxh64(data) if algo == "xxh64" else \
        hashlib.new(algo, data).hexdigest()


def fixed_size(enc):
    if enc in SCALARS:
        return np.dtype(SCALARS[enc]).itemsize
    p = enc.split(":")
    if p[0] == "ndarray" and len(p) == 3:
        return int(np.prod([int(d) for d in p[2].split(",")])) * \
            np.dtype(p[1]).itemsize
    return None


def write(out, columns, rows, size_limit, compression=None, per_shard=None,
          hashes=()):
    """A dataset of the given samples, as MDSWriter(columns=columns,
    out=out, size_limit=size_limit, compression=compression,
    hashes=hashes) writes it; per_shard (not MDSWriter's): also flush
    after so many samples."""
    os.makedirs(out)
    names = sorted(columns)
    encs = [columns[k] for k in names]
    sizes = [fixed_size(e) for e in encs]
    config = {"version": 2, "format": "mds", "compression": compression,
              "hashes": list(hashes), "size_limit": size_limit,
              "column_names": names, "column_encodings": encs,
              "column_sizes": sizes}
    cfg = json.dumps(config, sort_keys=True).encode("utf-8")
    shards, cur, cur_size = [], [], 8 + len(cfg)

    def flush():
        n = len(cur)
        offs = np.cumsum([0] + [len(s) for s in cur]) + 4 + 4 * (n + 1) + \
            len(cfg)
        data = struct.pack("<I", n) + offs.astype("<u4").tobytes() + cfg + \
            b"".join(cur)
        raw = "shard.%05d.mds" % len(shards)
        with open(os.path.join(out, raw), "wb") as f:
            f.write(data)
        entry = {"samples": n,
                 "raw_data": {"basename": raw, "bytes": len(data),
                              "hashes": {a: digest(a, data) for a in hashes}},
                 "zip_data": None}
        if compression:
            zname = raw + ".zstd"
            subprocess.run(["zstd", "-q", "-f", "-3", raw, "-o", zname],
                           cwd=out, check=True)
            with open(os.path.join(out, zname), "rb") as f:
                zdata = f.read()
            entry["zip_data"] = {
                "basename": zname,
                "hashes": {a: digest(a, zdata) for a in hashes},
                "bytes": len(zdata)}
            os.unlink(os.path.join(out, raw))
        entry.update(config)
        shards.append(entry)

    for row in rows:
        head, body = [], []
        for k, e, z in zip(names, encs, sizes):
            d = encode(e, row[k])
            if z is None:
                head.append(len(d))
            elif z != len(d):
                raise ValueError("column %s: %d bytes, not %d" % (k, len(d), z))
            body.append(d)
        s = np.array(head, "<u4").tobytes() + b"".join(body)
        if (size_limit and size_limit < cur_size + len(s) + 4) or \
                (per_shard and len(cur) == per_shard):
            flush()
            cur, cur_size = [], 8 + len(cfg)
        cur.append(s)
        cur_size += len(s) + 4
    if cur:
        flush()
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"version": 2, "shards": shards}, f, sort_keys=True)
    return shards


def main_dyn(out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    a = write(out + "/dyn", DYN_COLUMNS,
              [dyn_sample(i) for i in range(DYN_N)], 6000)
    b = write(out + "/dynmix",
              {"k": "int", "x": "ndarray:int32", "y": "ndarray:uint8"},
              [dynmix_sample(i) for i in range(20)], None, per_shard=10)
    print("make_mds.py --dyn: %d samples in %d shards (%s samples), "
          "dynmix: %d shards" % (DYN_N, len(a), ",".join(
              str(s["samples"]) for s in a), len(b)))


HASHES = ["blake2b", "md5", "sha1", "sha256", "xxh64"]
HASH_COLUMNS = {"k": "int", "b": "bytes", "a": "ndarray:float32:2,3"}
HASH_SETS = {"md5": ["md5", "sha256"], "sha1": ["blake2b", "sha1"],
             "sha256": ["sha256"], "blake2b": ["blake2b"]}


def hash_sample(i):
    return {"k": i, "b": bytes(range(i % 50, i % 50 + 40 + i % 9)),
            "a": np.arange(6, dtype=np.float32).reshape(2, 3) * i}


def main_hashes(out):
    xxh64_selfcheck()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rows = [hash_sample(i) for i in range(30)]
    a = write(out + "/hashed", HASH_COLUMNS, rows, 800, hashes=HASHES)
    write(out + "/hashed_zstd", HASH_COLUMNS, rows, 800, compression="zstd",
          hashes=HASHES)
    for name, hashes in HASH_SETS.items():
        write(out + "/h_" + name, HASH_COLUMNS, rows, 800, hashes=hashes)
    print("make_mds.py --hashes: 30 samples in %d shards, digests %s (raw and "
          "zstd)" % (len(a), ",".join(HASHES)))


def main():
    if sys.argv[1] == "--dyn":
        return main_dyn(sys.argv[2])
    if sys.argv[1] == "--hashes":
        return main_hashes(sys.argv[2])
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rows = [sample(i) for i in range(N)]
    a = write(out + "/good", COLUMNS, rows, 9000)
    b = write(out + "/zstd", COLUMNS, rows, 9000, compression="zstd")
    print("make_mds.py: %d samples in %d shards (%s samples), zstd: %d"
          % (N, len(a), ",".join(str(s["samples"]) for s in a), len(b)))


if __name__ == "__main__":
    main()
