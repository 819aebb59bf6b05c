"""zarr_to_v3.py SRC DST - an AnnData Zarr store that anndata wrote (v2,
zarr-python 2) rewritten as a Zarr v3 store by the tests' own v3 writer
(tests/fixtures/zarr3_writer.py; Debian's zarr-python cannot write v3,
and anndata writes v3 only from 0.11 with zarr-python 3): every group's
zarr.json with its attributes, numeric arrays with [bytes, zstd], string
arrays as data_type "string" with [vlen-utf8, zstd], and the indices and
data of every sparse matrix sharded (shards of 256 values, inner chunks
of 64, [bytes, zstd, crc32c], the index with its crc32c at the end), as
annbatch and zarr-python 3 write large matrices."""
import os
import sys

import numpy as np
import zarr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fixtures"))
from zarr3_writer import codec, write_array, write_group  # noqa: E402

src, dst = sys.argv[1], sys.argv[2]
root = zarr.open_group(src, mode="r")
inner = [codec("bytes", endian="little"), codec("zstd", level=3),
         codec("crc32c")]
index = [codec("bytes", endian="little"), codec("crc32c")]


def sharded(path):
    parts = path.split("/")
    return parts[-1] in ("indices", "data") and (
        parts[:-1] in (["X"], ["raw", "X"]) or
        (len(parts) == 3 and parts[0] == "layers"))


def copy(group, path):
    write_group(os.path.join(dst, path), attributes=dict(group.attrs))
    for name, node in group.items():
        p = (path + "/" if path else "") + name
        if isinstance(node, zarr.hierarchy.Group):
            copy(node, p)
            continue
        arr = node[...]
        if arr.dtype == object:
            chunks = (max(1, min(64, arr.shape[0])),)
            write_array(os.path.join(dst, p), arr, chunks,
                        [codec("vlen-utf8"), codec("zstd", level=3)],
                        fill="", data_type="string")
        elif sharded(p):
            n = arr.shape[0]
            shard = 256 * max(1, -(-n // (256 * 64)))  # at most 64 shards
            write_array(os.path.join(dst, p), arr, (shard,),
                        [codec("sharding_indexed", chunk_shape=[shard // 4],
                               codecs=inner, index_codecs=index,
                               index_location="end")])
        else:
            chunks = tuple([max(1, min(64, arr.shape[0]))] +
                           list(arr.shape[1:])) if arr.ndim else ()
            write_array(os.path.join(dst, p), arr, chunks,
                        [codec("bytes", endian="little"),
                         codec("zstd", level=3)],
                        fill=False if arr.dtype == np.bool_ else 0)


copy(root, "")
