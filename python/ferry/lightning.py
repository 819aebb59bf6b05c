"""ferry.lightning - a LightningDataModule over ferry loaders.

Why: Lightning users describe their data as a DataModule; the usual one
wraps a map-style dataset that Lightning splits with a DistributedSampler,
which reads through worker processes, gives ranks unequal batch counts near
the tail, and restarts the epoch on resume.  This DataModule hands Lightning
ferry datasets instead: the ranks share the samples through MPI, every rank
gets the same number of batches, and the loader's position is part of the
Lightning checkpoint.

Lightning is imported when ``DataModule`` is first used (``lightning.pytorch``,
else ``pytorch_lightning``): this module imports without it.

    from ferry.lightning import DataModule
    dm = DataModule(train="/data/train", val="/data/val", batch_size=256,
                    vars="x,y", seed=1)
    trainer = lightning.Trainer(strategy="ddp", devices=4, num_nodes=2,
                                use_distributed_sampler=False)
    trainer.fit(model, datamodule=dm)

Launch with ``srun python train.py`` (Lightning's SLURMEnvironment) or
``mpirun``: the MPI ranks are the Lightning processes.
"""

import importlib

__all__ = ["DataModule"]

_TRAIN_DEFAULTS = {"shuffle": "chunks", "tail": "drop_last"}
_EVAL_DEFAULTS = {"shuffle": "none", "tail": "partial"}


def _import_lightning():
    errors = []
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(name)
        except ImportError as e:
            errors.append("%s: %s" % (name, e))
    raise ImportError(
        "ferry.lightning.DataModule needs Lightning, which is not installed "
        "for this Python (%s): pip install lightning (or pytorch-lightning)"
        % "; ".join(errors))


def _make_class(pl):
    import ferry.torch as ft
    from torch.utils.data import DataLoader

    class DataModule(pl.LightningDataModule):
        """Training, validation and test data read by ferry.

        train, val, test: datasets as ferry.Loader opens them (val and test
                    may be None).
        batch_size: samples per batch on each rank.
        comm:       an mpi4py communicator, or None for MPI_COMM_WORLD.
        keys, transform: as for ferry.torch.Dataset (transform is applied
                    to every split; transforms=dict(train=f, val=g) per split).
        train_options: loader options of the training split only (default
                    shuffle="chunks", tail="drop_last"; tail="pad" keeps
                    every sample, the padding marked in batch["padded"]).
        eval_options: loader options of validation and test (default
                    shuffle="none", tail="partial": every sample exactly
                    once, the last batches of a rank may be smaller; ranks
                    still get the same number of batches).
        **common_options: loader options of every split (seed, vars,
                    device, threads, ...).

        Use it with ``Trainer(use_distributed_sampler=False)``: ferry
        already gives each rank its share (Lightning leaves iterable
        datasets alone anyway, but the flag states it).  Every training
        epoch runs ``set_epoch(trainer.current_epoch)``, so each epoch has
        its own order and a resumed run the one it would have had.  The
        loaders' positions are saved in Lightning checkpoints
        (``state_dict``/``load_state_dict``): a run resumed from a
        mid-epoch checkpoint serves exactly the batches not yet trained on.
        Use ``num_workers=0`` (the DataLoaders returned here do): ferry's
        threads do the reading.
        """

        def __init__(self, train=None, val=None, test=None, batch_size=64,
                     comm=None, train_options=None, eval_options=None,
                     keys=None, transform=None, transforms=None,
                     **common_options):
            super().__init__()
            self.datasets = {"train": train, "val": val, "test": test}
            self.batch_size = batch_size
            self.comm = comm
            self.keys = keys
            self.transforms = dict(transforms or {})
            for split in self.datasets:
                self.transforms.setdefault(split, transform)
            common = dict(common_options, batch_size=batch_size)
            self.split_options = {
                "train": dict(_TRAIN_DEFAULTS, **common,
                              **(train_options or {})),
                "val": dict(_EVAL_DEFAULTS, **common, **(eval_options or {})),
                "test": dict(_EVAL_DEFAULTS, **common,
                             **(eval_options or {})),
            }
            self._ds = {}
            self._pending_state = {}

        def _trainer_epoch(self):
            trainer = getattr(self, "trainer", None)
            return trainer.current_epoch if trainer is not None else 0

        def dataset(self, split):
            """The ferry.torch.Dataset of SPLIT, opened on first use
            (collective: every rank opens it)."""
            if split not in self._ds:
                path = self.datasets.get(split)
                if path is None:
                    raise ValueError("ferry.lightning.DataModule: no %s "
                                     "dataset was given" % split)
                ds = ft.Dataset(
                    path, self.comm, keys=self.keys,
                    transform=self.transforms.get(split),
                    epoch_fn=(self._trainer_epoch if split == "train"
                              else None),
                    **self.split_options[split])
                if split in self._pending_state:
                    ds.load_state_dict(self._pending_state.pop(split))
                self._ds[split] = ds
            return self._ds[split]

        def _dataloader(self, split):
            return DataLoader(self.dataset(split), batch_size=None,
                              num_workers=0)

        def train_dataloader(self):
            return self._dataloader("train")

        def val_dataloader(self):
            return self._dataloader("val")

        def test_dataloader(self):
            return self._dataloader("test")

        def state_dict(self):
            """The training loader's position.  Collective: Lightning calls
            it on every rank when it saves a checkpoint.  Validation and
            test restart at every run, so their position is not saved."""
            if "train" not in self._ds:
                return {}
            return {"train": self._ds["train"].state_dict()}

        def load_state_dict(self, state_dict):
            state = state_dict.get("train")
            if state is None:
                return
            if "train" in self._ds:
                self._ds["train"].load_state_dict(state)
            else:
                self._pending_state["train"] = state

        def teardown(self, stage):
            # The loaders stay open between fit/validate/test calls; close()
            # closes them.
            pass

        def close(self):
            """Close every loader (collective)."""
            for ds in self._ds.values():
                ds.close()
            self._ds.clear()

    DataModule.__module__ = __name__
    return DataModule


_cache = {}


def __getattr__(name):
    if name == "DataModule":
        if name not in _cache:
            _cache[name] = _make_class(_import_lightning())
        return _cache[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
