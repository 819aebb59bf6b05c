"""interrupt_check.py DIR - run by interrupt.sh as a plain process (an MPI
singleton: ferry initialises MPI).  A real SIGINT (Ctrl-C) arrives from a
timer thread while the main thread iterates epoch after epoch, most of the
time inside ferry_next with the GIL released: KeyboardInterrupt is raised
in the loop, the `with` block abandons the loader (ResourceWarning), and a
second loader opens and serves a whole epoch afterwards; the process then
exits normally (MPI finalized at exit).  Prints one line."""
import os
import signal
import sys
import threading
import time
import warnings

import numpy as np

import ferry

d = sys.argv[1]
X = np.load(d + "/x.npy")
L = ferry.Loader(d, batch_size=4, prefetch=2, seed=1)
epochs = batches = 0
t0 = time.time()
timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    try:
        with L:
            timer.start()
            while time.time() - t0 < 60:
                L.set_epoch(epochs)
                for b in L:
                    x = np.from_dlpack(b["x"])
                    idx = np.from_dlpack(b.indices)
                    assert np.array_equal(x, X[idx])
                    batches += 1
                    del x, idx, b
                epochs += 1
        print("FAIL: no KeyboardInterrupt within 60 s")
        sys.exit(1)
    except KeyboardInterrupt:
        pass
if not L.closed or not any(issubclass(x.category, ResourceWarning)
                           for x in w):
    print("FAIL: the loader was not abandoned with a ResourceWarning")
    sys.exit(1)
if batches == 0:
    print("FAIL: the signal came before the first batch")
    sys.exit(1)
# the process goes on: another loader serves a whole epoch
with ferry.Loader(d, batch_size=7, tail="partial") as L2:
    n = sum(b.size for b in L2)
if n != len(X):
    print("FAIL: %d samples after the interrupt, expected %d" % (n, len(X)))
    sys.exit(1)
print("interrupt_check.py: KeyboardInterrupt after %d batches (%d epochs), "
      "loader abandoned, a new one served %d samples" % (batches, epochs, n))
