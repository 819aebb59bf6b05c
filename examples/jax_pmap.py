#!/usr/bin/env python3
"""jax_pmap.py - batches split over the process's GPUs for a data-parallel
JAX step (the "PyTorch DataLoader feeding jax.pmap" pattern).

Before (a torch DataLoader's numpy batches reshaped and put on the devices
one by one; every process reads through its own workers):

    for x, y in torch_loader:
        x = x.numpy().reshape(n_dev, -1, *x.shape[1:])
        x = jax.device_put_sharded(list(x), jax.local_devices())
        params, loss = p_step(params, x, y)

After (ferry deals the samples over the MPI ranks and hands each rank's
batch as jax.Arrays already sharded over its local devices on a "data"
axis, the layout pmap / shard_map / jit with NamedSharding expect):

    it = ferry.jax.iterator(DATA, batch_size=64 * n_dev, vars="x,y",
                            tail="drop_last")
    for b in it:
        params, loss = step(params, b["x"], b["y"])

Run:  mpirun -n 2 python3 examples/jax_pmap.py DATA
Needs JAX (the GPU machine has it); on a CPU JAX has one local device.
"""

import os
import sys

from mpi4py import MPI

import ferry.jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def loss_fn(w, x, y):
    logits = x @ w
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@jax.jit
def step(w, x, y):
    loss, g = jax.value_and_grad(loss_fn)(w, x, y)
    return w - 0.5 * g, loss


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "ferry-example-npy"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    comm = MPI.COMM_WORLD
    make_data.ensure("npy", data, comm)
    ndev = len(jax.local_devices())
    it = ferry.jax.iterator(data, comm, batch_size=64 * ndev, vars="x,y",
                            seed=1, tail="drop_last")
    w = jnp.zeros((make_data.FEATURES, make_data.CLASSES))
    losses, nb = [], 0
    for epoch in range(epochs):
        it.set_epoch(epoch)
        for b in it:
            # the gradient of each rank's shard would be all-reduced over
            # the ranks here in a multi-process job (jax.distributed or
            # mpi4jax); this example trains each rank on its share.
            w, loss = step(w, b["x"], b["y"].astype(jnp.int32))
            losses.append(float(loss))
            nb += 1
    batches = comm.allgather(nb)
    it.close()
    if comm.rank == 0:
        print("jax_pmap: %d ranks x %d devices, %d epochs, %d batches/rank "
              "(equal: %s), loss %.3f -> %.3f"
              % (comm.size, ndev, epochs, batches[0], len(set(batches)) == 1,
                 losses[0], losses[-1]))
    if not losses[-1] < losses[0]:
        sys.exit("jax_pmap: the loss did not decrease")


if __name__ == "__main__":
    main()
