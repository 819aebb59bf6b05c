"""test_lightning.py DIR N - ferry.lightning.DataModule: the module imports,
the DataModule's loaders serve every sample once, its state round-trips."""
import sys

from mpi4py import MPI

from ferry.lightning import DataModule

comm = MPI.COMM_WORLD
d, n = sys.argv[1], int(sys.argv[2])
dm = DataModule(train=d, val=d, batch_size=32, comm=comm, vars="x,y")
ids = [int(i) for b in dm.val_dataloader() for i in b["index"]]
every = sorted(i for r in comm.allgather(ids) for i in r)
assert every == list(range(n)), "val: every sample once"
nb = sum(1 for _ in dm.train_dataloader())
assert comm.allgather(nb) == [nb] * comm.size, "equal train batches"
state = dm.state_dict()
dm.load_state_dict(state)
dm.close()
if comm.rank == 0:
    print("test_lightning: OK")
