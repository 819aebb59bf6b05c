"""real_writer.py [--dyn] STREAMING_SRC OUT - MosaicML Streaming's own
MDSWriter (STREAMING_SRC: a checkout of github.com/mosaicml/streaming)
writes the samples of tests/mds/make_mds.py to OUT, raw shards, and the
result is compared byte for byte with make_mds.write's (--dyn: the
dynamic-shape ndarrays of make_mds.py --dyn's OUT/dyn).  Streaming's package cannot
be imported with Debian's packages (its __init__ pulls in torch.distributed
helpers, boto3, tqdm, python-zstd, xxhash...), so its format modules are
loaded one by one (format/index.py, format/base/writer.py,
format/mds/encodings.py, format/mds/writer.py, which need only NumPy,
Pillow and typing_extensions), with stand-ins for the helpers the base
writer imports: an uploader that keeps files local, no hashes, no
compression.  Run by mds.sh and mds_dyn.sh when MDS_STREAMING_SRC is set."""
import filecmp
import importlib.util
import os
import shutil
import sys
import types

dyn = sys.argv[1] == "--dyn"
src, out = sys.argv[1 + dyn], sys.argv[2 + dyn]
root = os.path.join(src, "streaming")
for name in ("streaming", "streaming.base", "streaming.base.format",
             "streaming.base.format.base", "streaming.base.format.mds",
             "streaming.base.storage"):
    m = types.ModuleType(name)
    m.__path__ = []
    sys.modules[name] = m


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m


class Uploader:
    @staticmethod
    def get(out, keep_local, progress_bar, retry):
        u = Uploader()
        u.local, u.remote = out, None
        os.makedirs(out, exist_ok=True)
        return u

    def upload_file(self, name):
        pass


stub("streaming.base.compression", compress=None,
     is_compression=lambda c: False, get_compression_extension=None)
stub("streaming.base.hashing", get_hash=None, is_hash=lambda a: False)
stub("streaming.base.storage.upload", CloudUploader=Uploader)
stub("streaming.base.util", bytes_to_int=int)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


load("streaming.base.format.index", root + "/base/format/index.py")
load("streaming.base.format.base.writer", root + "/base/format/base/writer.py")
load("streaming.base.format.mds.encodings",
     root + "/base/format/mds/encodings.py")
MDSWriter = load("streaming.base.format.mds.writer",
                 root + "/base/format/mds/writer.py").MDSWriter
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_mds  # noqa: E402

if dyn:
    rows = [make_mds.dyn_sample(i) for i in range(make_mds.DYN_N)]
    columns, limit = make_mds.DYN_COLUMNS, 6000
else:
    rows = [make_mds.sample(i) for i in range(make_mds.N)]
    columns, limit = make_mds.COLUMNS, 9000
shutil.rmtree(out, ignore_errors=True)
with MDSWriter(columns=columns, out=out, size_limit=limit) as w:
    for r in rows:
        w.write(r)
mine = out + ".mine"
make_mds.write(mine, columns, rows, limit)
names = sorted(os.listdir(out))
if names != sorted(os.listdir(mine)):
    sys.exit("MDSWriter wrote %s, make_mds.py %s" % (names, os.listdir(mine)))
for n in names:
    if not filecmp.cmp(os.path.join(out, n), os.path.join(mine, n), False):
        sys.exit("%s differs between MDSWriter and make_mds.py" % n)
shutil.rmtree(mine)
print("real_writer.py: MDSWriter's %d files equal make_mds.py's byte for byte"
      % len(names))
