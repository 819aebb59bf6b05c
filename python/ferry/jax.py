"""ferry.jax - ferry batches as jax.Arrays, split over the local devices.

Why: a JAX data-parallel step (``pmap``, ``shard_map``, or ``jit`` over a
sharded batch) wants each batch as one array whose first dimension is split
evenly over the process's devices.  The usual recipe feeds a PyTorch
DataLoader's numpy batches to ``jax.device_put`` one by one; this module
builds that layout directly from ferry's batches:

    import ferry.jax
    it = ferry.jax.iterator("/data/train", batch_size=512, seed=1)
    for epoch in range(10):
        it.set_epoch(epoch)
        for batch in it:      # {"x": jax.Array sharded over the local
            ...               #  devices on axis "data", "index", "padded"}

sharded=True (the default): every variable is assembled with
``jax.make_array_from_single_device_arrays`` over the process's local devices
(``jax.local_devices()``), with ``NamedSharding(Mesh(devices, ("data",)),
PartitionSpec("data"))``: device i holds samples [i*b/n, (i+1)*b/n) of the
rank's batch.  With one local device the batch goes through DLPack (a GPU
batch with ferry's default device="auto"); with several, the loader
delivers host batches (device="cpu" unless given) and each shard is put on
its device by ``jax.device_put``.  With ``device="cuda", devices="all"``
ferry copies each share to its GPU itself (``batch.shards``) and they are
used as they are.  ``batch_size`` must be a multiple of the number of
local devices, and so must every batch: use tail="drop_last" or "pad".

sharded=False: one array per variable on one device, through DLPack
(``jax.dlpack.from_dlpack``; no copy where JAX can alias the buffer).

Ragged variables (samples of different lengths, docs/ragged.md) need the
loader's ``pad`` option: JAX compiles for static shapes, so ``pad=L`` (with
``truncate="yes"`` to cut longer samples) gives every batch the shape
``[batch, L]``; ``pad="max"`` pads to each batch's longest (a shape per
batch: one compilation per length).  For a padded variable ``x`` the dict
also holds ``x_lengths`` (int32 ``[batch]``) and ``x_segment_ids`` (int32
``[batch, L]``: 1 on a sample's rows, 0 on padding, the convention of
attention masks and of ``segment_ids`` in Flax and MaxText).  A ragged
variable without ``pad`` is refused with that advice.

Each MPI rank is one JAX process (``srun python train.py``); the arrays are
process-local (fully addressable).  JAX is imported when an iterator is
made, so this module imports without it.
"""

import importlib

import ferry as _ferry

__all__ = ["iterator", "Iterator"]


def _import_jax():
    try:
        return importlib.import_module("jax")
    except ImportError as e:
        raise ImportError(
            "ferry.jax needs JAX, which is not installed for this Python "
            "(%s): pip install jax (jax[cuda12] for GPUs)" % (e,)) from e


def _numpy(array):
    """A numpy view of a host ferry Array (no copy)."""
    import numpy
    try:
        return numpy.from_dlpack(array)
    except (TypeError, RuntimeError, BufferError, AttributeError):
        return numpy.asarray(array)


def _from_dlpack(jax, array, device=None):
    """A jax.Array over a ferry Array, through DLPack."""
    import jax.dlpack
    try:
        out = jax.dlpack.from_dlpack(array)
    except (TypeError, AttributeError):
        # Older JAX wants the capsule itself.
        out = jax.dlpack.from_dlpack(array.__dlpack__())
    if device is not None and out.devices() != {device}:
        out = jax.device_put(out, device)
    return out


class Iterator:
    """Batches of a ferry.Loader as dicts of jax.Arrays.  Made by
    :func:`iterator`; ``set_epoch``, ``len``, ``state_dict`` and
    ``load_state_dict`` are the loader's (collective, as there)."""

    def __init__(self, dataset, comm=None, *, sharded=True, keys=None,
                 transform=None, index_key="index", padded_key="padded",
                 **options):
        jax = _import_jax()
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        import numpy

        self.jax = jax
        self.sharded = sharded
        self.devices = list(jax.local_devices())
        if sharded:
            if len(self.devices) > 1:
                # Split on the host, one device_put per device, unless
                # the caller asked for device="cuda", devices="all"
                # (ferry's own per-device copies: batch.shards).
                options.setdefault("device", "cpu")
            self.mesh = Mesh(numpy.array(self.devices), ("data",))
            self.sharding = NamedSharding(self.mesh, PartitionSpec("data"))
            bs = int(options.get("batch_size", 64))
            if bs % len(self.devices):
                raise ValueError(
                    "ferry.jax: batch_size=%d is not a multiple of the %d "
                    "local devices (sharded=True splits every batch "
                    "evenly)" % (bs, len(self.devices)))
        if str(options.get("pad", "none")) != "none":
            # padded ragged batches: their lengths and segment ids are
            # made on the host from the host batch; JAX moves them all
            options.setdefault("device", "cpu")
        self.loader = _ferry.Loader(dataset, comm, **options)
        self.keys = list(keys) if keys is not None else list(self.loader.vars)
        self.transform = transform
        self.index_key = index_key
        self.padded_key = padded_key
        self._where = "fresh"   # as in ferry.torch.Dataset

    def set_epoch(self, epoch):
        self.loader.set_epoch(int(epoch))
        self._where = "fresh"

    def __len__(self):
        return len(self.loader)

    def state_dict(self):
        return {"ferry": self.loader.state_dict()}

    def load_state_dict(self, state):
        if isinstance(state, dict) and "ferry" in state:
            state = state["ferry"]
        self.loader.load_state_dict(state)
        self._where = "fresh"

    def close(self):
        # JAX's DLPack import can keep the exporting Array in a reference
        # cycle until the collector runs (seen on an H200 with JAX on 2
        # ranks: close() found the last batch viewed, and closed after a
        # gc.collect()); collect first so that a caller who dropped the
        # batch's arrays can close
        import gc
        gc.collect()
        self.loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc and exc[0] is not None:
            # left by an exception, maybe this rank's alone: abandon the
            # loader rather than wait in a collective close for ranks that
            # may be stuck elsewhere (ferry.Loader.__exit__)
            self.loader.__exit__(*exc)
        else:
            self.close()
        return False

    def __iter__(self):
        # Fresh or served to its end: the loader goes on (the next epoch
        # after an end); stopped early: the epoch restarts.
        if self._where == "partial":
            self.set_epoch(self.loader.epoch)
        self._where = "partial"
        for batch in self.loader:
            out = self._convert(batch)
            del batch
            if self.transform is not None:
                out = self.transform(out)
            yield out
            out = None
        self._where = "done"

    # -- assembly ----------------------------------------------------------
    def _convert(self, batch):
        extra = {}
        if self.index_key is not None:
            # copies (a few bytes per sample): JAX's device_put of a host
            # array is asynchronous and holds its source until the
            # transfer ends, which would hold the batch past the caller's
            # last reference (close() then finds it still viewed)
            extra[self.index_key] = _numpy(batch.indices).copy()
        if self.padded_key is not None:
            extra[self.padded_key] = _numpy(batch.padded).astype(bool)
        for k in self.keys:
            self._ragged_extra(batch, k, extra)
        if not self.sharded:
            out = {k: _from_dlpack(self.jax, batch[k]) for k in self.keys}
            for k, v in extra.items():
                out[k] = self.jax.numpy.asarray(v)
            return out
        n = len(self.devices)
        if batch.size % n:
            raise ValueError(
                "ferry.jax: a batch of %d samples cannot be split over %d "
                "devices: use tail='drop_last' or tail='pad'"
                % (batch.size, n))
        out = {k: self._assemble(self._pieces(batch, k)) for k in self.keys}
        for k, v in extra.items():
            out[k] = self._assemble(self._split_host(v))
        return out

    def _ragged_extra(self, batch, name, extra):
        """A padded ragged variable's lengths and segment ids into extra
        (host copies); a ragged one without pad refused."""
        import numpy
        if isinstance(batch[name], _ferry.Ragged):
            raise ValueError(
                "ferry.jax: variable '%s' is ragged (samples of different "
                "lengths) and JAX wants static shapes: open the iterator "
                "with pad=L (a fixed length; truncate='yes' cuts longer "
                "samples) or pad='max'" % name)
        try:
            lengths = batch.lengths(name)
        except ValueError:
            return  # a dense variable
        if lengths.__dlpack_device__()[0] != 1:
            # device="cuda" on one device: the lengths are on the GPU
            # (kDLCPU is 1); the extras are host arrays, put like the rest
            lens = numpy.asarray(_from_dlpack(self.jax, lengths))
        else:
            lens = _numpy(lengths)
        lens = lens.astype(numpy.int32)
        width = int(batch[name].shape[1])
        extra[name + "_lengths"] = lens
        extra[name + "_segment_ids"] = (
            numpy.arange(width, dtype=numpy.int32)[None, :] <
            lens[:, None]).astype(numpy.int32)

    def _pieces(self, batch, name):
        """One jax.Array per local device holding its share of NAME."""
        shards = getattr(batch, "shards", None)
        if shards is not None and len(shards) == len(self.devices):
            # device="cuda", devices="all": ferry put shard i on GPU i.
            return [_from_dlpack(self.jax, s[name], d)
                    for s, d in zip(shards, self.devices)]
        if len(self.devices) == 1:
            return [_from_dlpack(self.jax, batch[name], self.devices[0])]
        return self._split_host(_numpy(batch[name]))

    def _split_host(self, array):
        import numpy
        pieces = [self.jax.device_put(piece, d) for piece, d in
                  zip(numpy.split(array, len(self.devices)), self.devices)]
        # the transfers read the batch's host memory: done before the
        # batch is released (device_put is asynchronous)
        for p in pieces:
            p.block_until_ready()
        return pieces

    def _assemble(self, pieces):
        shape = (sum(p.shape[0] for p in pieces),) + tuple(pieces[0].shape[1:])
        return self.jax.make_array_from_single_device_arrays(
            shape, self.sharding, pieces)


def iterator(dataset, comm=None, *, sharded=True, **options):
    """An :class:`Iterator` over DATASET (see the module's documentation);
    options are ferry.Loader's (batch_size, seed, shuffle, vars, ...) plus
    keys=, transform=, index_key=, padded_key=."""
    return Iterator(dataset, comm, sharded=sharded, **options)
