"""test_lightning.py DIR N - ferry.lightning.DataModule: the module imports,
the DataModule's loaders serve every sample once, its state round-trips."""
from helpers import comm, dataset, every_once, same_everywhere

from ferry.lightning import DataModule

d, n, _, _ = dataset()
dm = DataModule(train=d, val=d, batch_size=32, comm=comm, vars="x,y")
ids = [int(i) for b in dm.val_dataloader() for i in b["index"]]
every_once(ids, n, "val")
nb = sum(1 for _ in dm.train_dataloader())
same_everywhere(nb, "the number of train batches")
state = dm.state_dict()
dm.load_state_dict(state)
dm.close()
if comm.rank == 0:
    print("test_lightning: OK")
