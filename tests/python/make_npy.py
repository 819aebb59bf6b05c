"""make_npy.py DIR N - a small .npy dataset: x float32 (N, 3) with x[i] =
(i, i + 0.5, -i), y int64 (N,) with y[i] = 7 * i."""
import os
import sys

import numpy as np

d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
i = np.arange(n)
x = np.stack([i, i + 0.5, -i], axis=1).astype(np.float32)
np.save(os.path.join(d, "x.npy"), x)
np.save(os.path.join(d, "y.npy"), (7 * i).astype(np.int64))
