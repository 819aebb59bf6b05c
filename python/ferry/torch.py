"""ferry.torch - ferry batches as dicts of PyTorch tensors, zero copy.

Why: a PyTorch training script wants an iterable of dicts of tensors that it
can hand to ``DataLoader(batch_size=None)``, Lightning or torchdata's
``StatefulDataLoader``.  This module wraps a :class:`ferry.Loader` in an
``IterableDataset``: every variable of every batch becomes a tensor through
``torch.from_dlpack`` (no copy: the tensor points into the loader's buffer,
which goes back to the pipeline when the last tensor of the batch is gone).

No worker processes: ferry's own threads read, shuffle and assemble the
batches, and every MPI rank already gets its own share of the dataset.  A
``DataLoader`` with ``num_workers > 0`` would fork the loader into processes
that each read the whole share again, so it is refused with a clear error.

    import ferry.torch
    ds = ferry.torch.Dataset("/data/train/*.npy", batch_size=256, seed=1,
                             shuffle="block", vars="x,y")
    for epoch in range(10):
        ds.set_epoch(epoch)
        for batch in ds:           # {"x": tensor, "y": tensor,
            ...                    #  "index": int64 tensor, "padded": bool}

Launch with ``srun python train.py`` or ``mpirun -n N python train.py`` (not
torchrun: ferry shares the dataset between MPI ranks).

A ragged variable (samples of different lengths: token sequences of a
Megatron corpus, docs/ragged.md) arrives as a :class:`ferry.Ragged` of two
tensors, ``values`` and ``offsets`` (int64, FlashAttention's ``cu_seqlens``
once cast to int32), both zero-copy; :func:`padded` and :func:`nested` make
the other usual forms from it:

    r = batch["tokens"]                     # ferry.Ragged
    x, lengths = ferry.torch.padded(r, pad_value=0)   # [B, max_len], [B]
"""

try:
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "ferry.torch needs PyTorch, which is not installed for this Python "
        "(%s): install it (pip install torch, or apt install python3-torch) "
        "or use ferry.Loader and numpy.from_dlpack directly" % (_e,)
    ) from _e

import ferry as _ferry

__all__ = ["Dataset", "loader", "WorkerError", "padded", "nested", "varlen",
           "sparse_rows"]


class WorkerError(RuntimeError):
    """A ferry dataset was iterated in a DataLoader worker process."""


_WORKER_MESSAGE = (
    "ferry.torch.Dataset cannot run in DataLoader worker processes "
    "(num_workers=%s): ferry's own threads already read and assemble the "
    "batches, and a forked copy of the loader would read the same samples "
    "again.  Use DataLoader(ds, batch_size=None, num_workers=0), or iterate "
    "the dataset directly; set ferry's threads=, io= and prefetch= options "
    "for more parallelism."
)


def _check_not_in_worker():
    info = get_worker_info()
    if info is not None:
        raise WorkerError(_WORKER_MESSAGE % info.num_workers)


def _tensor(array):
    """A torch tensor over a ferry Array (or anything with __dlpack__); a
    ferry.Ragged of two torch tensors over a Ragged of Arrays."""
    if isinstance(array, _ferry.Ragged):
        return _ferry.Ragged(torch.from_dlpack(array.values),
                             torch.from_dlpack(array.offsets), array.max_len)
    return torch.from_dlpack(array)


# Unsigned integers wider than a byte: torch before 2.3 has no uint16/32/64
# tensors (DLPack import fails: "Unsupported kUInt bits 16"), yet token
# corpora are uint16 (Megatron-LM's .bin for vocabularies under 65536).
# Such a variable is copied, widened to the next signed type that holds it.
_WIDEN = {"<u2": "int32", ">u2": "int32", "<u4": "int64", ">u4": "int64"}


def _torch_lacks(typestr):
    names = {"<u2": "uint16", ">u2": "uint16", "<u4": "uint32",
             ">u4": "uint32"}
    # bool ("|b1": a nullable column's mask, h5py and Zarr bools): DLPack's
    # kDLBool is unknown to torch < 2 ("Unsupported code 6"), so host bools
    # always go through numpy, which shares the memory
    return typestr == "|b1" or (typestr in names and
                                not hasattr(torch, names[typestr]))


def _widened(array):
    """A torch tensor copied from a host ferry Array (or the values of a
    Ragged) torch has no type for, widened (uint16 -> int32, uint32 ->
    int64); a bool one shares the Array's memory."""
    import numpy
    if isinstance(array, _ferry.Ragged):
        return _ferry.Ragged(_widened(array.values),
                             torch.from_dlpack(array.offsets), array.max_len)
    a = numpy.asarray(array)
    if array.dtype == "|b1":  # no copy: torch.from_numpy shares it
        return torch.from_numpy(a)
    return torch.from_numpy(a.astype(_WIDEN[array.dtype]))


def _needs_widening(array):
    if isinstance(array, _ferry.Ragged):
        array = array.values
    return _torch_lacks(array.dtype)


def _pick_from_capsule():
    """The function making a tensor of a DLPack capsule: torch's own
    converter (what torch.utils.dlpack.from_dlpack calls after its checks)
    when it is there and does so without a copy, else the public one."""
    fast = getattr(torch._C, "_from_dlpack", None)
    if fast is not None:
        try:
            t = torch.arange(3)
            if fast(torch.utils.dlpack.to_dlpack(t)).data_ptr() == \
                    t.data_ptr():
                return fast
        except Exception:  # noqa: BLE001 - any failure: the public route
            pass
    return torch.utils.dlpack.from_dlpack


_from_capsule = _pick_from_capsule()


def _as_bool(t):
    """The uint8 padding mask as a bool tensor over the same memory (DLPack
    has no bool before PyTorch 2: reinterpret 0/1 bytes, else copy)."""
    try:
        return t.view(torch.bool)
    except (RuntimeError, TypeError):
        return t.to(torch.bool)


def _mask(array):
    """The padding mask as a bool tensor."""
    try:
        return _as_bool(_tensor(array))
    except (RuntimeError, TypeError, BufferError):
        import numpy
        return torch.from_numpy(numpy.array(array, dtype=bool))


class Dataset(IterableDataset):
    """An ``IterableDataset`` of ferry batches as dicts of torch tensors.

    dataset:   what ``ferry.Loader`` opens (files, a glob, a list file, a
               Zarr store, ``mem:...``).
    comm:      an mpi4py communicator, or None for MPI_COMM_WORLD.
    keys:      the variables to put in each dict (default: all the loader's
               variables; ``vars=`` selects which variables are *read*).
    transform: a function called on each dict before it is yielded (on the
               training thread), e.g. to cast, normalise or rename.  Its
               return value is what is yielded.
    epoch_fn:  optional function returning the epoch to run; called at the
               start of each iteration, its value is passed to
               ``set_epoch`` when it differs from the loader's epoch
               (ferry.lightning uses the trainer's current epoch).
    index_key, padded_key: the names of the global sample indices
               (int64 tensor) and of the padding mask (bool tensor, True
               for samples added by tail="pad"); None leaves them out.
    **options: the loader's options (batch_size, seed, shuffle, tail, vars,
               device, ... -- see docs/options.md), validated by ferry.

    Each dict holds a tensor per variable with the batch as first
    dimension.  On the host the tensors are CPU tensors over ferry's
    buffers, pinned when torch sees a GPU (ferry's ``pin_memory="yes"``,
    the default here with ``device="cpu"`` and CUDA available):
    ``pin_memory=True`` in a DataLoader would only copy them again.  With ``device="cuda"`` they are
    CUDA tensors on the loader's device, ready on the current stream.

    ``len(ds)`` is the number of batches every rank gets this epoch, the
    same on all ranks (what DDP needs to not hang).  As with ferry.Loader,
    iterating again after an epoch was served to its end starts the next
    epoch, and ``set_epoch(e)`` names the epoch (the DistributedSampler
    habit); an iteration stopped early (``break``) is restarted from the
    beginning of its epoch.  After ``load_state_dict`` the next iteration
    serves exactly the batches the saved run had not served yet.
    ``set_epoch``, ``load_state_dict`` and a restart need every tensor of
    the loader's earlier batches gone (ferry.StateError otherwise: ``del``
    the last batch, or ``clone()`` what you keep).
    """

    def __init__(self, dataset, comm=None, *, keys=None, transform=None,
                 epoch_fn=None, index_key="index", padded_key="padded",
                 sparse="csr", sparse_dtype=None, genes=None, **options):
        super().__init__()
        if sparse not in ("csr", "dense", "ragged"):
            raise ValueError("sparse=%r: 'csr', 'dense' or 'ragged'" %
                             (sparse,))
        if ("pin_memory" not in options and
                str(options.get("device", "auto")) == "cpu" and
                torch.cuda.is_available()):
            # host batches the training loop copies to its GPU itself:
            # pinned, so tensor.cuda(non_blocking=True) is asynchronous
            options["pin_memory"] = "yes"
        self.loader = _ferry.Loader(dataset, comm, **options)
        self.keys = list(keys) if keys is not None else list(self.loader.vars)
        # host batches: the dict is built in C (Batch.to_dict), one call
        # per batch; device batches go through torch.from_dlpack, which
        # passes torch's current stream
        self._host = self.loader.device == "cpu"
        self._wide = self._direct = None  # keys copied widened, the rest
        self.transform = transform
        self.epoch_fn = epoch_fn
        self.index_key = index_key
        self.padded_key = padded_key
        # pack=concat (docs/lm.md): cu_seqlens arrives per row [B, L + 1];
        # the dict gives the batch's varlen (THD) form and max_seqlen
        self._pack = (self.loader.pack_stats() is not None and
                      "cu_seqlens" in self.keys)
        # A sparse matrix's rows (an AnnData CSR matrix, docs/singlecell.md):
        # its indices and data arrive as two ragged variables M/indices and
        # M/data sharing offsets; sparse="csr" gives one
        # torch.sparse_csr_tensor M of [B, columns] (zero-copy), "dense" its
        # dense form (sparse_dtype: its dtype), "ragged" the two as they are
        self._sparse = {}
        widths = self.loader.widths
        if sparse != "ragged":
            for k in list(self.keys):
                if k.endswith("/indices") and k[:-8] + "/data" in self.keys:
                    m = k[:-8]
                    if widths.get(k) and widths.get(m + "/data") == widths[k]:
                        self._sparse[m] = widths[k]
        self._sparse_dense = sparse == "dense"
        self._sparse_dtype = sparse_dtype
        # genes=: a subset of the columns, in that order (names, indices
        # or "@file" of names); each matrix's column names are its
        # indices' categories (AnnData var/_index)
        self._columns = {}
        if genes is not None:
            if isinstance(genes, str) and genes.startswith("@"):
                with open(genes[1:]) as f:
                    genes = [line.strip() for line in f if line.strip()]
            elif isinstance(genes, str):
                genes = [g for g in genes.split(",") if g]
            for m, width in self._sparse.items():
                self._columns[m] = _column_map(
                    genes, self.loader.categories(m + "/indices"), width, m)
            if not self._sparse:
                raise ValueError("genes=: the loader serves no sparse matrix "
                                 "(M/indices and M/data of an AnnData file)")
        # Where the loader stands: "fresh" (just opened, set_epoch,
        # load_state_dict: the next iteration goes on from there), "done"
        # (the epoch was served to its end: ferry.Loader's next iteration
        # starts the next epoch) or "partial" (an iteration stopped early:
        # the epoch is restarted).
        self._where = "fresh"

    # -- the epoch ---------------------------------------------------------
    def set_epoch(self, epoch):
        """Plan epoch EPOCH (collective: every rank calls it)."""
        self.loader.set_epoch(int(epoch))
        self._where = "fresh"

    @property
    def epoch(self):
        return self.loader.epoch

    def __len__(self):
        return len(self.loader)

    def _position(self):
        """Put the loader where this iteration starts.  Collective (every
        rank iterates the same way).  set_epoch is only called when needed:
        ferry refuses it while tensors of the loader are alive."""
        target = None if self.epoch_fn is None else int(self.epoch_fn())
        current = self.loader.epoch
        if self._where == "fresh":
            natural = 0 if current is None else current
        elif self._where == "done":
            natural = current + 1
        else:
            natural = None   # restart
        if target is None:
            target = current if natural is None else natural
        if target != natural:
            self.set_epoch(target)
        self._where = "partial"

    def __iter__(self):
        _check_not_in_worker()
        self._position()
        for batch in self.loader:
            out = self._convert(batch)
            # The tensors hold the batch's memory; the Batch object itself
            # is no longer needed.
            del batch
            if self.transform is not None:
                out = self.transform(out)
            yield out
            # Hold nothing while the next batch is fetched.
            out = None
        self._where = "done"

    def _convert(self, batch):
        out = self._convert_vars(batch)
        if self._pack:
            out["cu_seqlens"], out["max_seqlen"] = varlen(out["cu_seqlens"])
        for m, width in self._sparse.items():
            out[m] = sparse_rows(out.pop(m + "/indices"), out.pop(m + "/data"),
                                 width, dense=self._sparse_dense,
                                 dtype=self._sparse_dtype,
                                 columns=self._columns.get(m))
        return out

    def _convert_vars(self, batch):
        if self._host:
            if self._wide is None:   # the first batch: what torch lacks
                self._wide = [k for k in self.keys
                              if _needs_widening(batch[k])]
                self._direct = [k for k in self.keys if k not in self._wide]
            out = batch.to_dict(_from_capsule, self._direct,
                                index_key=self.index_key,
                                padded_key=self.padded_key, capsule=True)
            if self.padded_key is not None:
                out[self.padded_key] = _as_bool(out[self.padded_key])
            for k in self._wide:
                out[k] = _widened(batch[k])
            return {k: out[k] for k in list(self.keys) +
                    [x for x in out if x not in self.keys]}
        out = {k: _tensor(batch[k]) for k in self.keys}
        if self.index_key is not None:
            out[self.index_key] = _tensor(batch.indices)
        if self.padded_key is not None:
            out[self.padded_key] = _mask(batch.padded)
        return out

    # -- checkpoints -------------------------------------------------------
    def state_dict(self):
        """The loader's position (collective: every rank calls it at the same
        batch).  A plain picklable dict, the same on every rank: save rank
        0's copy with the model checkpoint."""
        return {"ferry": self.loader.state_dict()}

    def load_state_dict(self, state):
        """Resume from a state_dict() (of a run with any number of ranks):
        the next iteration serves the rest of the saved epoch."""
        if isinstance(state, dict) and "ferry" in state:
            state = state["ferry"]
        self.loader.load_state_dict(state)
        self._where = "fresh"

    def checkpoint_requested(self):
        """True on every rank at the same batch once the checkpoint signal
        (sbatch --signal=B:USR1@120) arrived."""
        return self.loader.checkpoint_requested()

    # -- lifetime ----------------------------------------------------------
    def close(self):
        """Stop the pipeline (collective).  Tensors still held become
        invalid with device="cuda"; host tensors keep their memory."""
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

    def __getstate__(self):
        # DataLoader workers started with "spawn" pickle the dataset.
        raise WorkerError(_WORKER_MESSAGE % "> 0, or a pickled copy")

    def __repr__(self):
        return "ferry.torch.Dataset(%d samples, vars=%s, rank %d of %d)" % (
            self.loader.num_samples, self.keys, self.loader.rank,
            self.loader.world_size)


def _column_map(genes, names, width, matrix):
    """genes (names or indices) as a map: column c of the matrix -> its
    place in genes, -1 when not kept (a torch.long tensor [width])."""
    index = {n: i for i, n in enumerate(names)} if names else {}
    cols = []
    for g in genes:
        if isinstance(g, str) and g in index:
            cols.append(index[g])
        elif isinstance(g, str) and g.lstrip("-").isdigit() and g not in index:
            cols.append(int(g))
        elif isinstance(g, int):
            cols.append(g)
        else:
            raise ValueError("genes=: %r is not a column of %s (its %d names: "
                             "%s)" % (g, matrix, len(names or []),
                                      ", ".join((names or [])[:5]) + ", ..."))
    if any(c < 0 or c >= width for c in cols) or len(set(cols)) != len(cols):
        raise ValueError("genes=: columns out of [0, %d) or named twice in %s"
                         % (width, matrix))
    cmap = torch.full((int(width),), -1, dtype=torch.long)
    cmap[torch.tensor(cols, dtype=torch.long)] = torch.arange(len(cols))
    return cmap


_csr_unchecked = None


def _csr_maker():
    """torch.sparse_csr_tensor without its check of the invariants: rows
    ferry served are canonical already (checked at the read, decision
    0068), and torch 1.13 checks every row again on every batch (half the
    time of a batch of 64 cells).  torch >= 2.0: check_invariants=False
    (its default); 1.13: torch._sparse_csr_tensor_unsafe."""
    try:
        torch.sparse_csr_tensor(torch.zeros(2, dtype=torch.int64),
                                torch.zeros(0, dtype=torch.int64),
                                torch.zeros(0), size=(1, 1),
                                check_invariants=False)
        return lambda crow, col, val, size: torch.sparse_csr_tensor(
            crow, col, val, size=size, check_invariants=False)
    except TypeError:
        pass
    unsafe = getattr(torch, "_sparse_csr_tensor_unsafe", None)
    if unsafe is not None:
        return lambda crow, col, val, size: unsafe(crow, col, val, size)
    return lambda crow, col, val, size: torch.sparse_csr_tensor(
        crow, col, val, size=size)


def sparse_rows(indices, data, width, dense=False, dtype=None, columns=None,
                check=False):
    """The rows of a sparse matrix from its two ragged variables (an AnnData
    CSR matrix's M/indices and M/data, ferry.Ragged of torch tensors that
    share their offsets): a ``torch.sparse_csr_tensor`` of [B, width] over
    the batch's memory (no copy: its index dtype is the column indices'
    own, int32 or int64, the offsets converted to it), or with dense=True
    its dense form (on the tensors' device: a GPU batch is densified
    there), converted to dtype when given (torch.float32 for a model that
    takes float32).  columns: a map of the matrix's columns to the kept
    ones (Dataset's genes=): the rows of those columns only, in their
    order.  check: have torch check the rows (sorted, no column twice,
    inside the width) -- for arrays from elsewhere; ferry's own rows were
    checked when read (decision 0068), so by default torch does not check
    them again."""
    global _csr_unchecked
    crow = indices.offsets
    col = indices.values
    val = data.values
    n = crow.shape[0] - 1
    if col.dtype not in (torch.int32, torch.int64) or (
            col.dtype == torch.int32 and col.shape[0] >= 2 ** 31):
        col = col.to(torch.int64)
    if crow.dtype != col.dtype:
        crow = crow.to(col.dtype)   # B + 1 offsets: the copy is tiny
    if columns is not None:
        columns = columns.to(col.device)
        new = columns[col.long()]
        keep = new >= 0
        rows = torch.repeat_interleave(torch.arange(n, device=col.device),
                                       (crow[1:] - crow[:-1]).long())
        counts = torch.bincount(rows[keep], minlength=n)
        crow = torch.cat([crow.new_zeros(1), torch.cumsum(counts, 0)
                          .to(crow.dtype)])
        width = int((columns >= 0).sum())
        # each row's kept columns in order (a CSR tensor's invariant)
        order = torch.argsort(rows[keep] * width + new[keep])
        col, val = new[keep][order].to(crow.dtype), val[keep][order]
    if check:
        t = torch.sparse_csr_tensor(crow, col, val, size=(n, int(width)))
    else:
        if _csr_unchecked is None:
            _csr_unchecked = _csr_maker()
        t = _csr_unchecked(crow, col, val, (n, int(width)))
    if not dense:
        return t
    d = t.to_dense()
    return d if dtype is None else d.to(dtype)


def varlen(cu_rows):
    """A packed batch's ``cu_seqlens`` in the varlen (THD) layout.

    cu_rows: the loader's ``cu_seqlens`` of pack=concat, [B, L + 1] int32,
    row b holding 0, the end of each document piece of the row, then L
    repeated (padding is one piece).  Returns (cu, max_seqlen): cu, int32
    [pieces + 1], the bounds of every piece of the batch flattened to B * L
    tokens (0, ..., B * L), for flash_attn_varlen_func and
    torch.nn.attention's varlen kernels; max_seqlen, the longest piece (a
    Python int: on a GPU batch, one synchronisation).  ferry.torch.Dataset
    applies it to every packed batch.
    """
    d = cu_rows[:, 1:] - cu_rows[:, :-1]   # [B, L]: piece lengths, then 0
    lens = d[d > 0]                        # row by row: the batch's pieces
    cu = torch.zeros(lens.numel() + 1, dtype=torch.int32,
                     device=cu_rows.device)
    cu[1:] = torch.cumsum(lens, 0)
    return cu, int(lens.max()) if lens.numel() else 0


def padded(r, pad_value=0, length=None, truncate=False):
    """A ragged variable as a padded tensor and its lengths:
    ``(x, lengths)`` with ``x`` of shape ``[size, L, *inner]`` (L: the
    batch's max_len, or ``length``) and ``lengths`` int64 ``[size]``; the
    rows past a sample's length hold ``pad_value``.  A sample longer than
    ``length`` is cut to it with ``truncate=True`` (lengths then say the
    rows kept) and refused otherwise (ValueError naming it).  One scatter of
    the values, no Python loop over samples."""
    values, offsets = r.values, r.offsets
    if not isinstance(values, torch.Tensor):
        values, offsets = torch.from_dlpack(values), torch.from_dlpack(offsets)
    lengths = offsets[1:] - offsets[:-1]
    n = int(lengths.shape[0])
    width = int(r.max_len) if length is None else int(length)
    if length is not None and int(r.max_len) > width and not truncate:
        i = int(torch.argmax(lengths))
        raise ValueError("sample %d of the batch has %d rows, more than "
                         "length=%d (truncate=True cuts it)"
                         % (i, int(lengths[i]), width))
    out = torch.full((n, width) + tuple(values.shape[1:]), pad_value,
                     dtype=values.dtype, device=values.device)
    if values.shape[0] == 0 or n == 0:
        return out, torch.clamp(lengths, max=width)
    row = torch.repeat_interleave(torch.arange(n, device=values.device),
                                  lengths)
    col = torch.arange(values.shape[0], device=values.device) - offsets[row]
    keep = col < width
    out[row[keep], col[keep]] = values[keep]
    return out, torch.clamp(lengths, max=width)


def nested(r):
    """A ragged variable as a nested tensor (``torch.nested``): a view of
    the values with PyTorch 2.2's ``nested_tensor_from_jagged``, else
    (older PyTorch) a copy through ``torch.nested.nested_tensor``."""
    values, offsets = r.values, r.offsets
    if not isinstance(values, torch.Tensor):
        values, offsets = torch.from_dlpack(values), torch.from_dlpack(offsets)
    if offsets.dtype != torch.int64:  # offsets_dtype="int32"
        offsets = offsets.long()
    jagged = getattr(torch.nested, "nested_tensor_from_jagged", None)
    if jagged is not None:
        return jagged(values, offsets)
    o = offsets.tolist()
    import warnings
    with warnings.catch_warnings():  # "prototype stage" (PyTorch < 2.2)
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor(
            [values[o[i]:o[i + 1]] for i in range(len(o) - 1)])


def loader(dataset, comm=None, *, keys=None, transform=None, **options):
    """A ``DataLoader(Dataset(...), batch_size=None, num_workers=0)``: the
    drop-in for a DataLoader + DistributedSampler pair.  The Dataset is
    ``.dataset`` (for set_epoch and state_dict)."""
    ds = Dataset(dataset, comm, keys=keys, transform=transform, **options)
    return DataLoader(ds, batch_size=None, num_workers=0)
