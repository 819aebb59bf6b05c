#!/usr/bin/env python3
"""make_data.py - the small datasets the examples read.

    python3 examples/make_data.py npy   DIR [N]   # DIR/x.npy, DIR/y.npy
    python3 examples/make_data.py parts DIR [N]   # DIR/part-000/{x,y,meta}.npy ...
    python3 examples/make_data.py zarr  DIR [N]   # a Zarr v2 group: x, y
    python3 examples/make_data.py h5    FILE [N]  # an HDF5 file: x, y

Every dataset holds N samples (default 4096) of a learnable problem: x is
float32 [N, 16] drawn from a fixed seed, y = argmax(x @ W) over 4 classes
(int64), so a linear model's loss goes down.  The examples call make() on
rank 0 when their DATA argument does not exist yet.
"""

import os
import sys

import numpy as np

FEATURES = 16
CLASSES = 4


def problem(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES), dtype=np.float32)
    w = np.random.default_rng(1234).standard_normal((FEATURES, CLASSES))
    y = np.argmax(x @ w, axis=1).astype(np.int64)
    return x, y


def make_npy(path, n):
    x, y = problem(n)
    os.makedirs(path, exist_ok=True)
    np.save(os.path.join(path, "x.npy"), x)
    np.save(os.path.join(path, "y.npy"), y)


def make_parts(path, n, parts=8):
    """Many files, one directory per part, with a column ("meta") the
    training does not read."""
    x, y = problem(n)
    for i, (xs, ys) in enumerate(zip(np.array_split(x, parts),
                                     np.array_split(y, parts))):
        d = os.path.join(path, "part-%03d" % i)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "x.npy"), xs)
        np.save(os.path.join(d, "y.npy"), ys)
        np.save(os.path.join(d, "meta.npy"),
                np.zeros((len(ys), 64), dtype=np.float64))


def make_zarr(path, n, chunk=256):
    import zarr
    x, y = problem(n)
    g = zarr.open_group(path, mode="w")
    g.create_dataset("x", data=x, chunks=(chunk, FEATURES))
    g.create_dataset("y", data=y, chunks=(chunk,))


def make_h5(path, n):
    import h5py
    x, y = problem(n)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=x, chunks=(256, FEATURES))
        f.create_dataset("y", data=y)


MAKERS = {"npy": make_npy, "parts": make_parts, "zarr": make_zarr,
          "h5": make_h5}


def make(kind, path, n=4096):
    MAKERS[kind](path, n)


def ensure(kind, path, comm=None, n=4096):
    """Make PATH on rank 0 if it does not exist; every rank waits."""
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    err = None
    if comm.Get_rank() == 0 and not os.path.exists(path):
        try:
            make(kind, path, n)
        except Exception as e:  # every rank must learn of it
            err = "cannot make %s data at %s: %s" % (kind, path, e)
    err = comm.bcast(err, root=0)
    if err:
        raise SystemExit(err)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in MAKERS:
        sys.exit(__doc__)
    make(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3
         else 4096)
