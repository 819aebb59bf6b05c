"""ferry: an MPI-native training-data loader, for Python.

    import ferry, torch
    with ferry.Loader("data/train", batch_size=256, seed=42) as loader:
        for epoch in range(10):
            loader.set_epoch(epoch)
            for batch in loader:
                x = torch.from_dlpack(batch["x"])   # zero-copy

Run it like any MPI program: ``srun python train.py`` or ``mpirun -n 4
python train.py``.  The reference is docs/python-api.md.
"""

import atexit as _atexit
import os as _os
import sys as _sys
import weakref as _weakref

from ferry._ferry import (  # noqa: F401
    Array,
    Batch,
    CallbackError,
    EmptyError,
    Error,
    FormatError,
    InternalError,
    InvalidArgument,
    IOFailure,
    Mismatch,
    MPIError,
    NoDevice,
    NotFound,
    NotSupported,
    OutOfMemory,
    PeerError,
    PermissionDenied,
    ShapeError,
    StateError,
    __version__,
)
from ferry import _ferry

features = tuple(_ferry.features.split())

__all__ = [
    "Loader", "Batch", "Array", "Ragged", "Error", "options", "features", "__version__",
    "InvalidArgument", "OutOfMemory", "IOFailure", "NotFound", "FormatError",
    "NotSupported", "Mismatch", "MPIError", "StateError", "ShapeError",
    "EmptyError", "CallbackError", "PermissionDenied", "NoDevice",
    "InternalError", "PeerError",
]


class Ragged:
    """A ragged variable of a batch (docs/ragged.md): its samples differ in
    length.  ``values`` holds them one after the other (shape
    ``[nvalues, *inner]``), ``offsets`` (int64, ``[size + 1]``, from 0)
    where each starts: sample ``i`` is ``values[offsets[i]:offsets[i+1]]``.
    ``max_len`` is the longest sample of the batch, known without reading
    the offsets.  ``batch["tokens"]`` gives ferry Arrays (zero-copy, DLPack:
    ``numpy.from_dlpack(r.values)``); ``ferry.torch`` gives torch tensors,
    and its ``padded`` and ``nested`` build the usual forms from them."""

    __slots__ = ("values", "offsets", "max_len")

    def __init__(self, values, offsets, max_len):
        self.values, self.offsets, self.max_len = values, offsets, int(max_len)

    def __len__(self):
        return int(self.offsets.shape[0]) - 1

    @property
    def nvalues(self):
        """Rows of values: the sum of the lengths."""
        return int(self.values.shape[0])

    def lengths(self):
        """The samples' lengths, offsets[1:] - offsets[:-1], in the
        offsets' array type (a ferry Array goes through NumPy)."""
        o = self.offsets
        if not hasattr(o, "__sub__"):
            import numpy
            o = numpy.from_dlpack(o)
        return o[1:] - o[:-1]

    def __getitem__(self, i):
        """Sample i's values (a view where the array type makes one)."""
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("sample %d of a batch of %d" % (i, n))
        v = self.values
        if not hasattr(v, "__getitem__"):
            import numpy
            v = numpy.from_dlpack(v)
        o = self.offsets
        if not hasattr(o, "__getitem__"):
            import numpy
            o = numpy.from_dlpack(o)
        return v[int(o[i]):int(o[i + 1])]

    def __repr__(self):
        return "Ragged(%d samples, %d values, max_len %d)" % (
            len(self), self.nvalues, self.max_len)


def options():
    """The C option table: a list of dicts with keys name, default, values
    and help, in the table's order (what ``ferry --help`` lists)."""
    return _ferry.options()


def _error(cls, message):
    e = cls(message)
    e.code = cls.code
    e.message = message
    return e


def _first_line(s):
    return s.strip().splitlines()[0] if s.strip() else ""


def _check_mpi4py():
    """When mpi4py is loaded, it must use the MPI library ferry calls."""
    mod = _sys.modules.get("mpi4py.MPI")
    if mod is None:
        return
    theirs = mod.Get_library_version()
    ours = _ferry.mpi_library_version()
    if _first_line(theirs) != _first_line(ours):
        raise _error(
            MPIError,
            "mpi4py and ferry use different MPI libraries: mpi4py has '%s', "
            "ferry was built with '%s'; build mpi4py against ferry's MPI "
            "(or ferry against mpi4py's) and load that MPI's module"
            % (_first_line(theirs), _first_line(ours)))


def _check_launcher(world_size):
    """torchrun and friends start N separate MPI worlds of 1 process: each
    would read the whole dataset.  Refuse with a clear message."""
    try:
        want = int(_os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return
    if world_size == 1 and want > 1 and (
            "RANK" in _os.environ or "LOCAL_RANK" in _os.environ):
        raise _error(
            MPIError,
            "WORLD_SIZE=%d is set (torchrun or a similar launcher) but the "
            "MPI world has 1 process: every process would read the whole "
            "dataset.  ferry is launched as an MPI program: `srun python "
            "train.py` under Slurm or `mpirun -n %d python train.py`; "
            "torch.distributed can then be initialised from the MPI ranks"
            % (want, want))


def _fortran_handle(comm):
    if comm is None:
        return None
    py2f = getattr(comm, "py2f", None)
    if py2f is None:
        raise TypeError("comm must be an mpi4py communicator (with py2f()) "
                        "or None for MPI_COMM_WORLD, not %r"
                        % type(comm).__name__)
    return py2f()


_open_loaders = _weakref.WeakSet()
_atexit_registered = False


def _close_at_exit():
    """Close the loaders still open when the interpreter exits, before MPI
    is finalized (mpi4py's own exit handler, registered earlier, runs
    later).  Every rank exits the same way, so the collective close
    matches; a loader whose tensors are still alive is left open."""
    for loader in list(_open_loaders):
        try:
            loader.__exit__(KeyboardInterrupt, None, None)  # force
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


class Loader(_ferry.Loader):
    """Loader(dataset, comm=None, **options)

    Open DATASET (a directory of .npy files, an HDF5 file, a Zarr store, a
    glob, @list.txt or a mem: spec) over COMM, an mpi4py communicator, or
    MPI_COMM_WORLD when None (MPI is initialised with MPI_THREAD_MULTIPLE if
    nobody did).  OPTIONS are the C option table's names as keywords
    (``batch_size=256, seed=42, shuffle="block", vars=["x", "y"]``); values
    may be str, int, float, bool (yes/no) or a list (joined with commas).
    COLLECTIVE: every rank of COMM calls it.
    """

    def __init__(self, dataset, comm=None, **options):
        dataset = _os.fspath(dataset)
        _check_mpi4py()
        if comm is None:
            world, _multiple = _ferry.mpi_init()
            _check_launcher(world)
        fcomm = _fortran_handle(comm)
        super().__init__(dataset, fcomm, options)
        global _atexit_registered
        if not _atexit_registered:
            _atexit.register(_close_at_exit)
            _atexit_registered = True
        _open_loaders.add(self)

    def __repr__(self):
        if self.closed:
            return "ferry.Loader(closed)"
        return ("ferry.Loader(rank=%d, world_size=%d, num_samples=%d, "
                "vars=%r, epoch=%r, device=%r)"
                % (self.rank, self.world_size, self.num_samples, self.vars,
                   self.epoch, self.device))
