#!/bin/sh
# fake_gpu.sh - the Python front's device batches (device="cuda", one and two
# devices per rank, batch.shards) under the fake CUDA runtime of
# tests/gpu/fakecuda.c on 1 and 2 ranks (fake_gpu_check.py).  Skips (77)
# without the extension, numpy or mpi4py, or in a build without CUDA.
. "$top_srcdir/tests/python/common.sh"
fake="$top_builddir/tests/gpu/.libs/libfakecuda.so"
test -f "$fake" || { echo "SKIP: $fake not built (a build without CUDA)"; exit 77; }
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 777 || exit 1
# a ragged variable (fake_gpu_check.py's last section: offsets, int32
# offsets, pad on one device and over two)
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/meg" --docs 40 \
  --empty 2 --seed 4 >/dev/null || exit 1
FERRY_TEST_MEGATRON=$tmp/meg
export FERRY_TEST_MEGATRON
# an AnnData file (fake_gpu_check.py's sparse=dense section: the rows made
# on the device), when anndata is there
if "$PY" - "$tmp/a.h5ad" <<'PY' >/dev/null 2>&1
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, scipy.sparse as sp, pandas as pd, anndata
X = sp.random(120, 57, density=0.12, format="csr", dtype=np.float32,
              random_state=2)
X.data = (X.data * 3.7 + 1e-4).astype(np.float32)
anndata.AnnData(X=X, var=pd.DataFrame(index=["g%d" % j for j in range(57)])
                ).write_h5ad(sys.argv[1])
PY
then
  FERRY_TEST_H5AD=$tmp/a.h5ad
  export FERRY_TEST_H5AD
else
  echo "note: no anndata: sparse=dense on the device not checked here"
fi
LD_PRELOAD=$fake FAKECUDA_DEVICES=2 FAKECUDA_DELAY_US=20000
export LD_PRELOAD FAKECUDA_DEVICES FAKECUDA_DELAY_US
status=0
for np in 1 2; do
  $RUN_MPI $np "$PY" "$pydir/fake_gpu_check.py" "$tmp/data" 777 ||
    { echo "FAIL: fake_gpu_check.py on $np ranks"; status=1; }
done
exit $status
