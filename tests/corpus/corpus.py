#!/usr/bin/env python3
"""The real-file corpus: every file or store of tests/corpus/files is served
with the values its reference reader gives, or refused with one line naming
it and a reason -- never a crash, a hang or different values.

Usage: /usr/bin/python3 corpus.py [--update] [ENTRY...]

Run by tests/corpus/corpus.sh (make check), which sets the environment:
FERRY (the tool), TEST_DUMP (tests/lib/test_dump), RUN_MPI, FERRY_TEST_TMPDIR.

An entry is a regular file under files/, or a directory that is a Zarr store
(it holds .zarray, .zgroup, .zattrs or zarr.json, or is named *.zarr); a
store is not looked into further.  A store is checked twice: as it is read
by default (zarr_reader=auto: netCDF-C where it can) and with ferry's own
chunk reader (the case "ENTRY|zarr_reader=native").  For every case:

1. `ferry info --json ENTRY` runs alone (one rank) under a timeout.  Its exit
   status must be 0 (served) or 1 (ferry's error status: refused); anything
   else is a crash, the timeout a hang.  A refusal is one line on stderr,
   naming the entry (its file name) and a reason: not empty, not "Success".
2. Every served variable is dumped (`--row-hash`, tail=partial) on 1 and on 2
   ranks; a refused entry is opened on 2 ranks too.  All the jobs run in one
   MPI job of tests/lib/test_dump (starting mpirun costs seconds); when that
   job crashes or hangs, each entry left is run again in an MPI job of its
   own, so that the report names the entry.  Every rank of a job must end
   with the same status.  A served variable must give every index exactly
   once, and each row's bytes (FNV-1a hash) must equal those of the reference
   reader -- numpy for .npy/.npz, h5py for HDF5 and netCDF-4, netCDF4 for
   netCDF classic, zarr-python 2 for Zarr v2, a small reader of this file
   (numcodecs) for the simplest Zarr v3 arrays, the npm hyparquet package
   for Parquet (parquet_read.mjs; a NaN's bits are not compared:
   JavaScript keeps neither its sign nor its payload), Python's tarfile
   grouped by WebDataset's rules for tar shards -- and the 1-rank
   and 2-rank runs must agree with each other whatever the reference.
3. The outcome is compared with expect.txt: "ENTRY<TAB>served<TAB>BACKEND" or
   "ENTRY<TAB>refused[<TAB>REASON SUBSTRING]".  A served entry now refused,
   a refusal for another reason, and a refused entry now served (even with
   the right values) fail, so that expect.txt stays true; `corpus.sh
   --update` rewrites it from this run (keeping the reason substrings that
   still match).  An entry served without a reference reader able to check
   it ("unchecked") counts as served.

Prints one line per entry ("ok: ..." or "FAIL: ...") and a summary; exits 0,
1 on a failure, 77 when numpy is missing.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: %s has no numpy (apt-get install python3-numpy)" %
          sys.executable)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
# hyparquet (npm), the Parquet reference reader: tests/parquet/setup.sh
# installs it; without node or it, Parquet entries are "unchecked".
PARQUET_NM = os.path.join(HERE, "..", "parquet", "node_modules")
if not (os.path.isdir(os.path.join(PARQUET_NM, "hyparquet")) and
        any(os.access(os.path.join(p, "node"), os.X_OK)
            for p in os.environ.get("PATH", "").split(os.pathsep))):
    PARQUET_NM = None
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from rowhash import fnv1a64, row_hashes  # noqa: E402 (after numpy)
FILES = os.path.join(HERE, "files")
EXPECT = os.path.join(HERE, "expect.txt")
ZARR_MARKS = (".zarray", ".zgroup", ".zattrs", "zarr.json")
INFO_TIMEOUT = int(os.environ.get("FERRY_CORPUS_INFO_TIMEOUT", "60"))
INFO_WORKERS = 2
INFO_RETRY = threading.Lock()
# Seconds for the MPI job of all dumps, and for each entry's own job after a
# crash or hang of that one.
DUMP_TIMEOUT = int(os.environ.get("FERRY_CORPUS_DUMP_TIMEOUT", "300"))
ENTRY_TIMEOUT = int(os.environ.get("FERRY_CORPUS_ENTRY_TIMEOUT", "60"))
# What --update records as the reason of a new refusal: the first of these
# found in the message (messages get reworded; these words should stay).
REASONS = ("Fortran", "0-d", "Python objects", "compound type",
           "string type", "string dtype", "variable-length", "opaque type",
           "bitfield type", "enum type", "array type", "unknown type",
           "a scalar", "it is empty", "a netCDF dimension without data",
           "plugin is not available", "codec '", "Zarr v3",
           "not a Zarr v2 store", "holds no array", "cannot open the file",
           "no dataset ferry can serve", "HDF4", "CDF-5", "CDF-2", "CDF-1",
           "gzip", "zip archive", "no backend reads",
           # the second corpus (Parquet, Zarr v3, .npz, netCDF classic)
           "differ in length", "no PAR1 magic", "corrupt Parquet footer",
           "without nulls", "byte arrays", "logical type", "nested columns",
           "encrypted", "corrupt netCDF classic header",
           "no variable ferry can serve", "holds no sample", "BROTLI",
           "draft of Zarr v3", "N5", "transpose", "data_type", "corrupt",
           "truncated")
DUMP_OPTS = "--batch-size 5 --tail partial"


# ---------------------------------------------------------------- entries

def is_store(path):
    return path.endswith(".zarr") or any(
        os.path.exists(os.path.join(path, m)) for m in ZARR_MARKS)


def entries():
    out = []
    for root, dirs, files in os.walk(FILES):
        dirs.sort()
        for d in list(dirs):
            p = os.path.join(root, d)
            if is_store(p):
                out.append(os.path.relpath(p, FILES))
                dirs.remove(d)
        for f in sorted(files):
            out.append(os.path.relpath(os.path.join(root, f), FILES))
    return sorted(out)


def read_expect():
    exp = {}
    if not os.path.exists(EXPECT):
        return exp
    with open(EXPECT) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            exp[fields[0]] = fields[1:]
    return exp


# ---------------------------------------------------------- reference data

def kind_of(path):
    """'npy', 'npz', 'hdf5', 'netcdf3', 'zarr2', 'zarr3', 'parquet' (when
    node and hyparquet are there to read it), 'wds' (a tar archive) or
    None."""
    if os.path.isdir(path):
        if any(os.path.exists(os.path.join(path, m))
               for m in (".zarray", ".zgroup")):
            return "zarr2"
        if os.path.exists(os.path.join(path, "zarr.json")):
            return "zarr3"
        return None
    with open(path, "rb") as f:
        head = f.read(8)
        if head.startswith(b"\x93NUMPY"):
            return "npy"
        if head.startswith(b"PK\x03\x04") and path.endswith(".npz"):
            return "npz"
        if head[:3] == b"CDF" and head[3:4] in (b"\x01", b"\x02", b"\x05"):
            return "netcdf3"
        if head[:4] == b"PAR1" and PARQUET_NM:
            return "parquet"
        f.seek(257)
        if f.read(5) == b"ustar":
            return "wds"
        # The HDF5 signature is at 0, 512, 1024, 2048, ...
        off = 0
        size = os.path.getsize(path)
        while off + 8 <= size:
            f.seek(off)
            if f.read(8) == b"\x89HDF\r\n\x1a\n":
                return "hdf5"
            off = 512 if off == 0 else off * 2
    return None


class Reference:
    """The reference reader's view of one entry: get(name) -> ndarray, or
    raises; 'who' names the reader."""

    def __init__(self, path):
        self.path = path
        self.kind = kind_of(path)
        self.who = {"npy": "numpy", "npz": "numpy", "hdf5": "h5py",
                    "netcdf3": "netCDF4", "zarr2": "zarr-python",
                    "zarr3": "corpus.py's Zarr v3 reader",
                    "parquet": "hyparquet (npm)",
                    "wds": "tarfile (WebDataset's grouping)"
                    }.get(self.kind)
        self.error = None if self.who else "no reference reader for it"
        self.names, self.cache = [], None

    def get(self, name, nvars, var=None):
        k = self.kind
        if k == "parquet":
            if self.cache is None:  # every served column in one node run
                self.cache = read_parquet(self.path, self.names or [name])
            return parquet_values(self.cache[name], var)
        if k == "npy":
            return np.load(self.path, allow_pickle=False)
        if k == "npz":
            with np.load(self.path, allow_pickle=False) as z:
                return z[name]
        if k == "hdf5":
            import h5py
            with h5py.File(self.path, "r") as f:
                a = np.asarray(f[name][()])
                base = h5py.check_vlen_dtype(f[name].dtype)
                if a.dtype.kind == "O" and isinstance(base, np.dtype) and \
                        base.byteorder not in "=|" and \
                        base.newbyteorder("=") != base:
                    # h5py (3.8) hands the items of a vlen of a non-native
                    # byte order back unconverted and labelled native
                    # (pytables/vlunicode_endian.h5's vlunicode_big): read
                    # their bytes in the declared order
                    for i, x in enumerate(a.reshape(-1)):
                        a.reshape(-1)[i] = np.frombuffer(
                            np.ascontiguousarray(x).tobytes(), dtype=base)
                return unsigned(a, f[name].attrs.get("_Unsigned"))
        if k == "netcdf3":
            import netCDF4
            with netCDF4.Dataset(self.path) as d:
                v = d.variables[name]
                v.set_auto_maskandscale(False)
                v.set_auto_chartostring(False)
                return unsigned(np.asarray(v[...]),
                                getattr(v, "_Unsigned", None))
        if k == "zarr2":
            import zarr
            store = self.path
            if nested_layout(self.path):
                # chunks in nested directories (0/0) with no
                # dimension_separator in the metadata (zarr-python's own
                # fixture/nested_legacy): zarr-python reads them only
                # through a nested store; a plain open serves fill values
                store = zarr.storage.NestedDirectoryStore(self.path)
            z = zarr.open(store, mode="r")
            if isinstance(z, zarr.Array):
                return z[...]
            return z[name][...]
        if k == "zarr3":
            return read_zarr3(self.path, name, nvars)
        if k == "wds":
            return read_wds(self.path, name)
        raise ValueError(self.error)


WDS_INTS = ("cls", "cls2", "index", "id")


def read_wds(path, name):
    """Variable name of a WebDataset shard as WebDataset groups it: the
    consecutive regular members sharing a key (the name up to the first
    dot of the base name) are a sample, the rest of the name (lower-case)
    the extension; __*__ members skipped.  int64 for the integer
    extensions, else an object array of each member's bytes."""
    import tarfile
    samples, last = [], None
    with tarfile.open(path) as tf:
        for ti in tf:
            base = os.path.basename(ti.name)
            if not ti.isreg() or (base.startswith("__") and
                                  base.endswith("__")):
                continue
            d = ti.name.rfind("/") + 1
            dot = ti.name.find(".", d)
            key, ext = ti.name[:dot], ti.name[dot + 1:].lower()
            if key != last:
                samples.append({})
                last = key
            samples[-1][ext] = tf.extractfile(ti).read()
    if name in WDS_INTS:
        return np.array([int(x[name]) for x in samples], dtype=np.int64)
    a = np.empty(len(samples), dtype=object)
    for i, x in enumerate(samples):
        a[i] = x[name]
    return a


def read_parquet(path, names):
    """The columns names of a Parquet file as hyparquet reads them
    (tests/corpus/parquet_read.mjs): {name: [value per row]}."""
    out = subprocess.run(
        ["node", os.path.join(HERE, "parquet_read.mjs"), PARQUET_NM, path,
         ",".join(names)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise ValueError((out.stderr or "?").strip().splitlines()[-1][:200])
    return json.loads(out.stdout)


def parquet_values(vals, var):
    """hyparquet's values of one column as ferry serves it (var: its entry
    of ferry info --json): an array, or an object array of items (bytes,
    or arrays of the dtype) for a ragged variable."""
    import base64
    dt = np.dtype(var["dtype"])

    def one(x):
        if x is None:
            raise ValueError("a null")
        if isinstance(x, str):  # a 64-bit integer, or a non-finite float
            return float(x) if x in ("NaN", "Infinity", "-Infinity", "-0") \
                else int(x)
        return x
    if var.get("ragged"):
        out = np.empty(len(vals), dtype=object)
        for i, x in enumerate(vals):
            if isinstance(x, dict):
                out[i] = base64.b64decode(x["b64"])
            elif x is None:
                raise ValueError("a null")
            else:
                out[i] = np.array([one(y) for y in x], dtype=dt)
        return out
    return np.array([[one(y) for y in x] if isinstance(x, list) else one(x)
                     for x in vals], dtype=dt)


def nested_layout(path):
    """A v2 array store whose first chunk key is a directory."""
    import json
    import os
    meta = os.path.join(path, ".zarray")
    if not os.path.isfile(meta):
        return False
    with open(meta) as f:
        if json.load(f).get("dimension_separator"):
            return False
    return os.path.isdir(os.path.join(path, "0"))


class Flagged(np.ndarray):
    """An array of signed integers marked _Unsigned = "true" (netCDF's
    convention: they hold unsigned values); a reader may serve them signed
    or unsigned, the bytes are the same."""


def unsigned(a, flag):
    if isinstance(flag, bytes):
        flag = flag.decode(errors="replace")
    if str(flag).lower() == "true" and a.dtype.kind == "i":
        return a.view(Flagged)
    return a


def zarr3_chain(codecs):
    """A v3 codec chain -> (transpose order, endian, bytes codecs, the
    sharding_indexed configuration or None)."""
    import numcodecs
    order, endian, bytes_codecs, shard = None, "<", [], None
    for c in codecs:
        n, conf = c["name"], c.get("configuration", {})
        if n == "transpose":
            order = tuple(conf["order"])
        elif n == "bytes":
            endian = ">" if conf.get("endian") == "big" else "<"
        elif n in ("vlen-utf8", "vlen-bytes"):  # zarr-python 3's strings
            endian = numcodecs.VLenUTF8() if n == "vlen-utf8" \
                else numcodecs.VLenBytes()
        elif n == "sharding_indexed" and not bytes_codecs:
            shard = conf
        elif n == "gzip":
            bytes_codecs.append(numcodecs.GZip(conf.get("level", 1)))
        elif n == "zstd":
            bytes_codecs.append(numcodecs.Zstd(conf.get("level", 0)))
        elif n == "blosc":
            bytes_codecs.append(numcodecs.Blosc())
        elif n == "crc32c":
            bytes_codecs.append("crc32c")
        else:
            raise ValueError("codec %s" % n)
    return order, endian, bytes_codecs, shard


def zarr3_decode(data, chain, cshape, dtype):
    """One chunk's stored bytes -> an array of cshape."""
    order, endian, bytes_codecs, _ = chain
    for c in reversed(bytes_codecs):
        data = data[:-4] if c == "crc32c" else c.decode(data)
    inner = cshape if order is None else tuple(cshape[i] for i in order)
    if not isinstance(endian, str):  # a vlen codec: an object array
        return np.asarray(endian.decode(bytes(data)),
                          dtype=object).reshape(inner)
    a = np.frombuffer(bytes(data), dtype=dtype.newbyteorder(endian))
    a = a.reshape(inner)
    return a if order is None else a.transpose(np.argsort(order))


def zarr3_place(out, a, origin, cshape):
    """Chunk a (of cshape) at origin of out, clipped to out's shape."""
    sl = tuple(slice(o, min(o + c, s))
               for o, c, s in zip(origin, cshape, out.shape))
    if all(x.stop > x.start for x in sl):
        out[sl] = a[tuple(slice(0, x.stop - x.start) for x in sl)]


def zarr3_shard(out, data, origin, sshape, conf, dtype):
    """The inner chunks of one shard file (sharding_indexed) into out."""
    ishape = tuple(conf["chunk_shape"])
    inner = zarr3_chain(conf["codecs"])
    ix = zarr3_chain(conf.get("index_codecs", [{"name": "bytes"}]))
    per = [s // i for s, i in zip(sshape, ishape)]
    n = int(np.prod(per))
    size = 16 * n + (4 if "crc32c" in ix[2] else 0)
    at = 0 if conf.get("index_location", "end") == "start" else len(data) - size
    index = np.frombuffer(data[at:at + 16 * n],
                          dtype=np.dtype("u8").newbyteorder(ix[1]))
    for k, idx in enumerate(np.ndindex(*per)):
        off, nb = int(index[2 * k]), int(index[2 * k + 1])
        if off == 2**64 - 1 and nb == 2**64 - 1:
            continue
        a = zarr3_decode(data[off:off + nb], inner, ishape, dtype)
        zarr3_place(out, a, [o + i * c for o, i, c in
                             zip(origin, idx, ishape)], ishape)


def read_zarr3(store, name, nvars):
    """The simplest Zarr v3 arrays: regular grid, default or v2 chunk keys,
    codecs transpose, bytes, gzip, zstd, blosc, crc32c, and
    sharding_indexed of them; the string and bytes data types of
    zarr-python 3 with vlen-utf8 / vlen-bytes (numcodecs' decoders).  Anything else raises (the entry is then only
    checked for consistency)."""
    path = store
    if not os.path.exists(os.path.join(path, "zarr.json")):
        raise ValueError("no zarr.json")
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    if meta.get("node_type") == "group":
        path = os.path.join(store, *name.split("/"))
        with open(os.path.join(path, "zarr.json")) as f:
            meta = json.load(f)
    if meta.get("node_type") != "array":
        raise ValueError("not an array")
    shape = tuple(meta["shape"])
    vlen = {"string": "", "bytes": b"", "variable_length_bytes": b""}
    dtype = np.dtype(object if meta["data_type"] in vlen else
                     {"bool": "?"}.get(meta["data_type"], meta["data_type"]))
    grid = meta["chunk_grid"]
    if grid["name"] != "regular":
        raise ValueError("chunk grid %s" % grid["name"])
    cshape = tuple(grid["configuration"]["chunk_shape"])
    keys = meta["chunk_key_encoding"]
    sep = keys.get("configuration", {}).get("separator",
                                            "/" if keys["name"] == "default"
                                            else ".")
    fill = meta.get("fill_value")
    fill = {"NaN": np.nan, "Infinity": np.inf,
            "-Infinity": -np.inf}.get(fill, fill)
    if meta["data_type"] in vlen:  # an absent chunk: empty items
        fill = vlen[meta["data_type"]]
    out = np.full(shape, fill if fill is not None else 0, dtype=dtype)
    chain = zarr3_chain(meta["codecs"])
    nchunks = [-(-s // c) for s, c in zip(shape, cshape)]
    for idx in np.ndindex(*nchunks):
        if keys["name"] == "default":
            key = sep.join(["c"] + [str(i) for i in idx])
        else:
            key = sep.join(str(i) for i in idx) or "0"
        p = os.path.join(path, *key.split("/"))
        if not os.path.exists(p):
            continue
        with open(p, "rb") as f:
            data = f.read()
        origin = [i * c for i, c in zip(idx, cshape)]
        if chain[3] is not None:
            zarr3_shard(out, data, origin, cshape, chain[3], dtype)
        else:
            zarr3_place(out, zarr3_decode(data, chain, cshape, dtype), origin,
                        cshape)
    return out


# ------------------------------------------------------------ ferry runs

def message_problem(text, entry):
    """Why a refusal message is not one clean line naming the entry, or
    None."""
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return "refused without a message"
    if len(lines) != 1:
        return "the refusal is %d lines, not one: %r" % (len(lines),
                                                         text[:300])
    line = lines[0]
    base = os.path.basename(entry.rstrip("/"))
    if base not in line:
        return "the refusal does not name %s: %r" % (base, line[:300])
    if "Success" in line:
        return "the refusal gives 'Success' as a reason: %r" % line[:300]
    tail = line[line.rfind(base) + len(base):].strip(" :.'\"")
    if len(tail) < 8 and len(line.replace(base, "")) < 40:
        return "the refusal gives no reason: %r" % line[:300]
    return None


def case_path(case):
    """A case is an entry, or "ENTRY|name=value" for an entry read with a
    loader option (FERRY_NAME=value) set."""
    return case.split("|")[0]


def case_env(case):
    """The FERRY_* variables of a case, as test_dump's ENV field."""
    if "|" not in case:
        return "-"
    name, value = case.split("|", 1)[1].split("=", 1)
    return "FERRY_%s=%s" % (name.upper(), value)


def ferry_info(case):
    """ferry info, once more alone when it ran past the limit: on this
    shared machine a start-up of Open MPI's singleton was seen to stall for a
    minute under heavy load; a hang that happens again is a failure."""
    r = ferry_info_once(case)
    if r.get("fail", "").startswith("hang"):
        with INFO_RETRY:
            r = ferry_info_once(case)
        r["note"] = "ferry info ran past %ds once; ran again: %s" % (
            INFO_TIMEOUT, "hung again" if r.get("fail") else "ended")
    return r


def ferry_info_once(case):
    entry = case_path(case)
    cmd = [os.environ["FERRY"], "info", "--json", entry]
    env = dict(os.environ)
    if case_env(case) != "-":
        env.update([case_env(case).split("=", 1)])
    # An isolated singleton (no orted: 0.07 s instead of 0.36 s a run, most
    # of this test's time) in a session directory of its own: isolated
    # singletons share one (jf.0), which the first to end removes under
    # the others running at once.
    sess = tempfile.mkdtemp(prefix="ferry-info.")
    env["OMPI_MCA_orte_tmpdir_base"] = sess
    env["OMPI_MCA_ess_singleton_isolated"] = "1"
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=FILES, stdin=subprocess.DEVNULL, env=env,
                           capture_output=True, timeout=INFO_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"fail": "hang: ferry info ran past %ds" % INFO_TIMEOUT}
    finally:
        shutil.rmtree(sess, ignore_errors=True)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    r = {"rc": p.returncode, "err": err, "secs": time.time() - t0}
    if p.returncode == 0:
        try:
            r["info"] = json.loads(out)
        except ValueError:
            r["fail"] = "ferry info --json printed no JSON: %r" % out[:300]
    elif p.returncode == 1:
        why = message_problem(err, entry)
        if why:
            r["fail"] = "ferry info: " + why
    else:
        r["fail"] = "crash: ferry info exit status %d: %s" % (
            p.returncode, err.strip()[-500:])
    return r


def build_backends():
    """The backends of this build ('backends: npy hdf5 ...')."""
    try:
        p = subprocess.run([os.environ["FERRY"], "--version"],
                           capture_output=True, timeout=INFO_TIMEOUT)
    except subprocess.TimeoutExpired:
        return []
    for line in p.stdout.decode(errors="replace").splitlines():
        if line.startswith("backends:"):
            return line.split()[1:]
    return []


def write_jobs(path, jobs):
    with open(path, "w") as f:
        for j in jobs:
            f.write("\t".join([j["out"], str(j["np"]), j["env"], j["entry"],
                               j["var"], "1", DUMP_OPTS]) + "\n")


def run_test_dump(jobs, tmp, tag, limit):
    """Run jobs in one MPI job of 2 ranks; (rc, output)."""
    jf = os.path.join(tmp, "jobs.%s" % tag)
    write_jobs(jf, jobs)
    env = dict(os.environ, FERRY_MPI_TIMEOUT=str(limit))
    cmd = os.environ.get("RUN_MPI", "").split() + [
        "2", os.environ["TEST_DUMP"], jf]
    try:
        p = subprocess.run(cmd, cwd=FILES, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=limit + 30)
        return p.returncode, (p.stdout + p.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired:
        return 124, "timed out"


def job_result(j):
    def read(suffix):
        try:
            with open(j["out"] + suffix, errors="replace") as f:
                return f.read()
        except OSError:
            return None
    return read(".status"), read(".err"), read(".ranks"), read("")


def parse_dump(text, np_):
    """{index: hash}, or a problem string.  A ragged variable's lines have
    len=N before the hash (of all its values): (len, hash) then."""
    got = {}
    for n, line in enumerate(text.splitlines(), 1):
        f = line.split()
        ragged = len(f) == 6 and f[4].startswith("len=")
        if (len(f) != 5 and not ragged) or not f[-1].startswith("fnv="):
            return "dump line %d is not 'rank batch index value [len=N] " \
                "fnv=': %r" % (n, line)
        rank, g = int(f[0]), int(f[2])
        if not 0 <= rank < np_:
            return "dump line %d: rank %d of %d" % (n, rank, np_)
        if g in got:
            return "index %d served twice" % g
        h = int(f[-1][4:], 16)
        got[g] = (int(f[4][4:]), h) if ragged else h
    return got


def ragged_hashes(a, dtype):
    """(length, FNV-1a 64 of its values as served) of every item of an
    object array of variable-length items (h5py's vlen arrays and strings):
    strings as their UTF-8 bytes, arrays in dtype, native order."""
    out = []
    for x in np.asarray(a).reshape(-1):
        if isinstance(x, str):
            b = x.encode()
        elif isinstance(x, bytes):
            b = x
        else:
            b = np.ascontiguousarray(np.asarray(x).astype(
                np.dtype(dtype).newbyteorder("="))).tobytes()
        n = len(b) // np.dtype(dtype).itemsize
        out.append((n, fnv1a64(b)))
    return out


# ------------------------------------------------------------------ main

def check_entry(case, info, jobs_of, ref):
    """The outcome of one case: (outcome, detail, failure or None).
    outcome: served, unchecked, refused."""
    if "fail" in info:
        return None, None, info["fail"]
    jobs = jobs_of.get(case, [])
    entry = case_path(case)
    if info["rc"] != 0:
        # Refused by info: refused the same way on 2 ranks.
        msg = info["err"].strip()
        for j in jobs:
            st, err, ranks, _ = job_result(j)
            if st is None:
                return None, None, "the 2-rank open never ended (crash or hang)"
            if ranks is None or len(set(ranks.split())) != 1:
                return None, None, "ranks ended differently: %s" % ranks
            if st.strip() == "0":
                return None, None, ("ferry info refused it but 2 ranks "
                                    "opened and served it")
            why = message_problem(err, entry)
            if why:
                return None, None, "on 2 ranks: " + why
        return "refused", msg, None
    d = info["info"]
    per_np = {}
    refused = None
    refused_np, served_np = set(), set()
    problems, notes = [], []
    checked_vars = 0
    for v in d["vars"]:
        name = v["name"]
        for j in [j for j in jobs if j["var"] == name]:
            st, err, ranks, out = job_result(j)
            if st is None:
                return None, None, ("dump of %s on %d ranks never ended "
                                    "(crash or hang)" % (name, j["np"]))
            if ranks is None or len(set(ranks.split())) != 1:
                return None, None, ("dump of %s on %d ranks: the ranks ended "
                                    "differently (%s): %s" % (
                                        name, j["np"], (ranks or "").strip(),
                                        (err or "").strip()))
            if st.strip() != "0":
                why = message_problem(err, entry)
                if why:
                    return None, None, "dump of %s on %d ranks: %s" % (
                        name, j["np"], why)
                refused = refused or err.strip()
                refused_np.add(j["np"])
                continue
            served_np.add(j["np"])
            got = parse_dump(out or "", j["np"])
            if isinstance(got, str):
                return None, None, "dump of %s on %d ranks: %s" % (
                    name, j["np"], got)
            per_np.setdefault(name, {})[j["np"]] = got
    if refused and served_np & refused_np:
        return None, None, ("served on some variable(s) and refused on "
                            "others with the same ranks: %s" % refused)
    if refused and served_np:
        return None, None, ("served on %s rank(s), refused on %s: %s" % (
            sorted(served_np), sorted(refused_np), refused))
    if refused:
        return "refused", "served by info, refused when read: " + refused, None
    for v in d["vars"]:
        name = v["name"]
        runs = per_np.get(name, {})
        n = v["shape"][0] if v["shape"] else 0
        for np_, got in runs.items():
            if sorted(got) != list(range(n)):
                problems.append("%s on %d ranks: served %d indices, not each "
                                "of 0..%d once" % (name, np_, len(got), n - 1))
        if len(runs) == 2 and runs[1] != runs[2]:
            bad = [g for g in runs[1] if runs[2].get(g) != runs[1][g]]
            problems.append("%s: 1 and 2 ranks serve different rows (index "
                            "%s)" % (name, bad[:5]))
        if ref.error:
            continue
        try:
            ref.names = [x["name"] for x in d["vars"]]
            a = ref.get(name, len(d["vars"]), v)
        except Exception as e:  # the reference reader's own refusal
            notes.append("%s: %s cannot read it (%s: %s)" % (
                name, ref.who, type(e).__name__, str(e)[:120]))
            continue
        if v.get("ragged"):  # variable-length items: length and values
            if a.dtype.kind != "O" or a.ndim != 1 or \
                    a.shape[0] != v["shape"][0]:
                problems.append("%s: served as ragged %s, %s reads %s %s" % (
                    name, v["dtype"], ref.who, a.dtype, list(a.shape)))
                continue
            want = ragged_hashes(a, v["dtype"])
            for np_, got in runs.items():
                bad = [g for g in sorted(got) if g < len(want)
                       and got[g] != want[g]]
                if bad:
                    problems.append("%s on %d ranks: items %s differ from "
                                    "%s's" % (name, np_, bad[:5], ref.who))
            checked_vars += 1
            continue
        if a.dtype.kind == "S" and a.dtype.itemsize == 1 and \
                v["dtype"] in ("int8", "uint8"):
            a = a.view(v["dtype"])  # netCDF's char served as bytes
        if a.dtype.kind not in "biuf":
            problems.append("%s: served as %s, but %s reads %s (not numeric)"
                            % (name, v["dtype"], ref.who, a.dtype))
            continue
        want_dt = np.dtype("?" if v["dtype"] == "bool" else v["dtype"])
        if isinstance(a, Flagged) and want_dt.kind in "iu" and \
                want_dt.itemsize == a.dtype.itemsize:
            a = np.asarray(a).view(want_dt.newbyteorder(a.dtype.byteorder))
        if a.dtype.newbyteorder("=") != want_dt.newbyteorder("="):
            problems.append("%s: served as %s, %s reads %s" % (
                name, v["dtype"], ref.who, a.dtype))
            continue
        if list(a.shape) != list(v["shape"]):
            problems.append("%s: shape %s, %s reads %s" % (
                name, v["shape"], ref.who, list(a.shape)))
            continue
        want = row_hashes(a) if a.ndim else []
        # hyparquet's values are JavaScript numbers: a NaN's sign and
        # payload are not kept, so a NaN row is not compared
        skip = set(np.flatnonzero(np.isnan(a.reshape(len(a), -1)).any(axis=1))) \
            if ref.kind == "parquet" and a.dtype.kind == "f" and a.ndim else set()
        for np_, got in runs.items():
            bad = [g for g in sorted(got) if g < len(want)
                   and got[g] != want[g] and g not in skip]
            if bad:
                problems.append("%s on %d ranks: rows %s differ from %s's" % (
                    name, np_, bad[:5], ref.who))
        checked_vars += 1
    if problems:
        return None, None, "wrong values: " + "; ".join(problems)
    nv = len(d["vars"])
    if checked_vars == nv:
        return "served", "%s, %d variable%s, every row equal to %s's on 1 " \
            "and 2 ranks" % (d["backend"], nv, "s" * (nv != 1), ref.who), None
    why = ref.error or "; ".join(notes)
    return "unchecked", "%s, %d variable%s, %d checked; 1 and 2 ranks agree;" \
        " %s" % (d["backend"], nv, "s" * (nv != 1), checked_vars, why), None


def main(argv):
    update = "--update" in argv
    only = [a.rstrip("/") for a in argv if not a.startswith("--")]
    tmp = os.environ.get("CORPUS_TMP") or "/tmp/corpus.%d" % os.getpid()
    os.makedirs(tmp, exist_ok=True)
    ents = entries()
    if only:
        ents = [e for e in ents if e in only]
    if not ents:
        print("FAIL: no corpus entry under %s" % FILES)
        return 1
    # Zarr stores are read by netCDF-C where it can (zarr_reader=auto) and
    # by ferry's own chunk reader: both are checked.
    ents = [c for e in ents for c in ([e] + (
        [e + "|zarr_reader=native"] if os.path.isdir(os.path.join(FILES, e))
        else []))]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(INFO_WORKERS) as pool:
        infos = dict(zip(ents, pool.map(ferry_info, ents)))
    print("note: %d ferry info runs, %d at a time: %.1fs" % (
        len(ents), INFO_WORKERS, time.time() - t0))
    backends = build_backends()
    jobs, jobs_of = [], {}
    for e in ents:
        i = infos[e]
        if "fail" in i:
            continue
        names = [v["name"] for v in i["info"]["vars"]] if i["rc"] == 0 \
            else [""]
        for name in names:
            for np_ in ((1, 2) if i["rc"] == 0 else (2,)):
                j = {"entry": case_path(e), "env": case_env(e),
                     "var": name, "np": np_,
                     "out": os.path.join(tmp, "d%d" % len(jobs))}
                jobs.append(j)
                jobs_of.setdefault(e, []).append(j)
    t0 = time.time()
    rc, out = run_test_dump(jobs, tmp, "all", DUMP_TIMEOUT)
    print("note: %d dump jobs in one MPI job: exit %d, %.1fs" % (
        len(jobs), rc, time.time() - t0))
    if rc != 0:
        print("note: the batch failed (%s); running the entries left one "
              "MPI job each" % out.strip()[-300:].replace("\n", " | "))
        for e in ents:
            js = jobs_of.get(e, [])
            if js and any(job_result(j)[0] is None for j in js):
                for j in js:
                    for s in ("", ".status", ".err", ".ranks"):
                        if os.path.exists(j["out"] + s):
                            os.remove(j["out"] + s)
                rc1, out1 = run_test_dump(js, tmp, "one", ENTRY_TIMEOUT)
                if rc1 != 0:
                    infos[e]["fail"] = "%s: test_dump exit %d: %s" % (
                        "hang" if rc1 in (124, 137) else "crash", rc1,
                        out1.strip()[-400:])
    exp = read_expect()
    fails = 0
    counts = {}
    new_expect = {}
    for e in ents:
        ref = Reference(os.path.join(FILES, case_path(e)))
        try:
            outcome, detail, fail = check_entry(e, infos[e], jobs_of, ref)
        except Exception as ex:  # the test's own bug: say which entry
            outcome, detail, fail = None, None, "corpus.py: %s: %s" % (
                type(ex).__name__, ex)
        if infos[e].get("note"):
            print("note: %s: %s" % (e, infos[e]["note"]))
        if fail:
            print("FAIL: %s: %s" % (e, fail))
            fails += 1
            counts["failed"] = counts.get("failed", 0) + 1
            new_expect[e] = exp.get(e)
            continue
        counts[outcome] = counts.get(outcome, 0) + 1
        backend = infos[e].get("info", {}).get("backend", "")
        old = exp.get(e)
        if outcome == "refused":
            keep = old[1:2] if old and old[0] == "refused" and len(old) > 1 \
                and old[1] in detail else \
                [r for r in REASONS if r in detail][:1]
            new_expect[e] = ["refused"] + keep
        else:
            new_expect[e] = ["served", backend]
        change = None
        if old is None:
            change = "not in expect.txt"
        elif old[0] == "served" and outcome == "refused":
            change = "was served (%s), now refused" % " ".join(old[1:])
        elif old[0] == "refused" and outcome != "refused":
            change = "now served: update expect.txt"
        elif old[0] == "served" and len(old) > 1 and old[1] != backend:
            change = "now served by %s, not %s: update expect.txt" % (
                backend, old[1])
        elif old[0] == "refused" and len(old) > 1 and old[1] not in detail:
            change = "refused for another reason than '%s'" % old[1]
        if change and old and old[0] == "served" and len(old) > 1 and \
                old[1] not in backends and outcome == "refused":
            print("ok: %s: refused: this build has no %s backend" % (
                e, old[1]))
            new_expect[e] = old
            continue
        if change and not update:
            print("FAIL: %s: %s: %s: %s" % (e, change, outcome, detail))
            fails += 1
        else:
            print("ok: %s: %s: %s" % (e, outcome, detail))
    for e in sorted(set(exp) - set(ents)):
        if not only:
            print("FAIL: %s: in expect.txt but not in files/" % e)
            fails += 1
    if update:
        if only:
            for e, v in exp.items():
                new_expect.setdefault(e, v)
        with open(EXPECT, "w") as f:
            f.write("# The outcome of every corpus entry (tests/corpus/"
                    "corpus.sh checks it; written by\n# `tests/corpus/corpus"
                    ".sh --update`, which keeps the reason substrings that "
                    "still match).\n# ENTRY<TAB>served<TAB>BACKEND | "
                    "ENTRY<TAB>refused[<TAB>REASON SUBSTRING]\n")
            for e in sorted(new_expect):
                if new_expect[e]:
                    f.write("\t".join([e] + new_expect[e]) + "\n")
        print("note: wrote %s" % EXPECT)
    print("corpus: %d entries: %s" % (len(ents), ", ".join(
        "%d %s" % (n, k) for k, n in sorted(counts.items()))))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
