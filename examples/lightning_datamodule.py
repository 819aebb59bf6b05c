#!/usr/bin/env python3
"""lightning_datamodule.py - a Lightning DataModule over many files with
column selection and a transform (the Polars/Parquet DataModule pattern;
written over .npy parts, the same code reads Parquet shards).

Before (a LightningDataModule whose Dataset reads every file with Polars in
each worker, split by Lightning's DistributedSampler):

    class PolarsDM(L.LightningDataModule):
        def setup(self, stage):
            df = pl.read_parquet("data/train/**/*.parquet",
                                 columns=["x", "y"])
            self.train = TensorDataset(torch.tensor(df["x"].to_numpy()), ...)
        def train_dataloader(self):
            return DataLoader(self.train, batch_size=64, shuffle=True,
                              num_workers=8)

After (ferry reads only the selected columns of the rank's share through
MPI-IO; every rank gets the same number of batches; the position is saved
in Lightning checkpoints):

    dm = ferry.lightning.DataModule(train="data/train/part-*",
                                    val="data/train/part-*", batch_size=64,
                                    vars="x,y", transform=standardise)
    trainer = L.Trainer(max_epochs=3, use_distributed_sampler=False, ...)
    trainer.fit(model, datamodule=dm)

Run:  mpirun -n 2 python3 examples/lightning_datamodule.py DATA
      srun python3 examples/lightning_datamodule.py DATA     (Slurm)
Needs Lightning (lightning or pytorch_lightning); the GPU machine has it.
"""

import os
import sys

import torch
from mpi4py import MPI

import ferry.lightning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402

try:
    import lightning.pytorch as pl
    from lightning.pytorch.plugins.environments import MPIEnvironment
except ImportError:  # the older package name
    import pytorch_lightning as pl
    from pytorch_lightning.plugins.environments import MPIEnvironment


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(make_data.FEATURES, make_data.CLASSES)
        self.losses = []

    def training_step(self, batch, i):
        loss = torch.nn.functional.cross_entropy(self.net(batch["x"]),
                                                 batch["y"])
        self.losses.append(float(loss))
        return loss

    def validation_step(self, batch, i):
        self.log("val_loss", torch.nn.functional.cross_entropy(
            self.net(batch["x"]), batch["y"]), sync_dist=True,
            batch_size=len(batch["y"]))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


def standardise(b):
    """The per-batch transform (what the Polars pipeline did per column)."""
    b["x"] = (b["x"] - b["x"].mean(0)) / (b["x"].std(0) + 1e-6)
    return b


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-parts"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    comm = MPI.COMM_WORLD
    make_data.ensure("parts", data, comm)
    parts = os.path.join(data, "part-*")
    dm = ferry.lightning.DataModule(train=parts, val=parts, batch_size=64,
                                    comm=comm, vars="x,y", seed=1,
                                    transform=standardise, device="cpu")
    gpu = torch.cuda.is_available()
    # The MPI ranks are Lightning's processes: one device each.
    trainer = pl.Trainer(
        max_epochs=epochs, accelerator="gpu" if gpu else "cpu", devices=1,
        num_nodes=comm.size, strategy="ddp" if comm.size > 1 else "auto",
        plugins=[MPIEnvironment()] if "SLURM_JOB_ID" not in os.environ
        else None,
        use_distributed_sampler=False, logger=False,
        enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False)
    model = Model()
    trainer.fit(model, datamodule=dm)
    batches = comm.allgather(len(dm.dataset("train")))
    first, last = model.losses[0], model.losses[-1]
    dm.close()
    if comm.rank == 0:
        print("lightning_datamodule: %d ranks, %d epochs, %d batches/rank "
              "(equal: %s), loss %.3f -> %.3f"
              % (comm.size, epochs, batches[0], len(set(batches)) == 1,
                 first, last))
    if not last < first:
        sys.exit("lightning_datamodule: the loss did not decrease")


if __name__ == "__main__":
    main()
