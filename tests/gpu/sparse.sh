#!/bin/sh
# sparse.sh - sparse=dense with device batches (issue 27, decision 0056):
# the CSR rows go to the device and ferry's kernel makes the dense rows
# there.  Under the fake CUDA runtime (tests/gpu/fakecuda.c, LD_PRELOAD),
# whose cuLaunchKernel runs its own plain loop of the kernel's contract on
# the stream's worker after the copies queued before it, on 1 and 2 ranks:
#  - test_device's values check: every device batch (dense X copied back)
#    byte-equal to the device=cpu loader's CPU view with the same options,
#    sample ids included, two epochs, the same number of batches: float32,
#    float16 (values not exact in half: rounded to nearest), the values'
#    own dtype (float64 with int64 indices), genes= by names and numbers,
#    partial batches, shuffle=block, held batches; the run says the rows
#    were made on the device (not the CPU fallback) and how many bytes went
#    over against the dense bytes handed out;
#  - a failed kernel launch on one rank: the same FERRY_ENODEV and message
#    on every rank;
#  - the budget's device memory counts the dense rows (ferry info);
#  - what keeps the CPU view (keep_host=yes, pad=max, sparse_dtype=bfloat16:
#    the kernel has no bfloat16): said in the notes,
#    and the batches still equal.
# Skips (77) in a build without CUDA, nvcc (the kernel) or HDF5, or
# without a Python with anndata to write the fixture.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init gpu-sparse
. "$top_srcdir/tests/gpu/common.sh"
fake="$top_builddir/tests/gpu/.libs/libfakecuda.so"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
test -f "$fake" || { echo "SKIP: $fake not built"; exit 77; }
case `"$FERRY" --version 2>/dev/null` in
  *hdf5*) ;;
  *) echo "SKIP: a build without HDF5"; exit 77 ;;
esac
py=${PYTHON_NUMPY:-/usr/bin/python3}
h5=$tmp/a.h5ad
# X: float32 values not exact in float16, int32 indices, an empty cell;
# layers/counts: float64 values, int64 indices
"$py" - "$h5" <<'PY' 2>/dev/null || { echo "SKIP: no Python with anndata"; exit 77; }
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, scipy.sparse as sp, pandas as pd, anndata
n, g = 301, 57
rng = np.random.default_rng(1)
X = sp.random(n, g, density=0.12, format="csr", dtype=np.float32,
              random_state=2)
X.data = (X.data * 3.7 + 1e-4).astype(np.float32)
X[5] = 0
X.eliminate_zeros()
layer = sp.random(n, g, density=0.2, format="csr", dtype=np.float64,
                  random_state=3)
layer.indices = layer.indices.astype(np.int64)
obs = pd.DataFrame({"n_counts": rng.integers(0, 1000, n).astype(np.int64)},
                   index=["c%d" % i for i in range(n)])
a = anndata.AnnData(X=X, obs=obs,
                    var=pd.DataFrame(index=["g%d" % j for j in range(g)]))
a.layers["counts"] = layer
a.write_h5ad(sys.argv[1])
PY
LD_PRELOAD=$fake
FAKECUDA_DEVICES=1
FAKECUDA_DELAY_US=300
export LD_PRELOAD FAKECUDA_DEVICES FAKECUDA_DELAY_US

# a CUDA build without nvcc has no kernel: the CPU view, said in the notes
if "$FERRY" info "$h5" --vars X/indices,X/data --device cuda --sparse dense \
     2>&1 | grep -q "built without nvcc"; then
  echo "SKIP: libferry was built without nvcc (no densify kernel)"
  exit 77
fi

# dense NP OPTION=VALUE...: the values check, the rows made on the device
dense() {
  np=$1
  shift
  if $RUN_MPI "$np" "$prog" values "$h5" sparse=dense "$@" >"$tmp/out" 2>&1 &&
     grep -q "sparse=dense on the device: h2d_bytes" "$tmp/out"; then
    echo "ok: np=$np $* (`sed -n 's/^rank 0: sparse=dense on the device: //p' "$tmp/out" | head -1`)"
  else
    echo "FAIL: sparse=dense on the device, np=$np $*"
    sed 's/^/    /' "$tmp/out" | head -30
    fail=1
  fi
}
x=vars=X/indices,X/data
for np in 1 2; do
  dense $np batch_size=16 tail=partial seed=3
  dense $np $x sparse_dtype=float16 batch_size=10 tail=partial
  dense $np $x genes=g5,g0,40,g56 batch_size=8 shuffle=block
  dense $np $x genes=g3,g1 sparse_dtype=float16 batch_size=32
  dense $np vars=layers/counts/indices,layers/counts/data,obs/n_counts \
    sparse_dtype=same genes=g2,g50,g7 batch_size=12 tail=partial
done
FERRY_TEST_HOLD=4 dense 1 $x batch_size=16 device_prefetch=2 sparse_dtype=float16

# A failed launch on rank 1: the same error on every rank.
if FAKECUDA_FAIL_LAUNCH_AT=3 FAKECUDA_FAIL_RANK=1 $RUN_MPI 2 "$prog" \
     expect-error NODEV "$h5" sparse=dense $x device=cuda batch_size=8 \
     >"$tmp/err" 2>&1 &&
   grep -q "rank 1: launching ferry's densify kernel (sparse=dense) for variable 'X'" "$tmp/err"; then
  echo "ok: a failed launch on rank 1: `sed -n 's/^error [-0-9]*: //p' "$tmp/err" | head -1`"
else
  echo "FAIL: a failed kernel launch on rank 1"
  sed 's/^/    /' "$tmp/err" | head -20
  fail=1
fi

# The budget's device memory: the dense rows (3 slots x 64 x 57 float32)
# on top of the CSR rows they stage.
devmem() { # OPTIONS...: ferry info's device memory in bytes
  "$FERRY" info "$h5" --vars X/indices,X/data --device cuda --batch-size 64 \
    --device-prefetch 3 "$@" 2>&1 |
    sed -n 's/.*device memory \([0-9.]*\) \([KM]i*B\).*/\1 \2/p' |
    awk '{ m = $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : 1; printf "%d\n", $1 * m }'
}
csr=`devmem`
dev=`devmem --sparse dense`
want=`expr 3 \* 64 \* 57 \* 4`
if test -n "$csr" && test -n "$dev" && test `expr $dev - $csr` -ge `expr $want - 1024`; then
  echo "ok: device memory $dev B with the dense rows, $csr B for the CSR rows alone"
else
  echo "FAIL: device memory '$dev' (sparse=dense) vs '$csr' (CSR): want $want B more"
  fail=1
fi
"$FERRY" info "$h5" --vars X/indices,X/data --device cuda --sparse dense \
  >"$tmp/info" 2>&1
if grep -q "^notes .*made on device 0 by ferry's kernel" "$tmp/info" &&
   grep -q "^  X  *float32 .*(301, 57)" "$tmp/info"; then
  echo "ok: ferry info: X dense, made on device 0"
else
  echo "FAIL: ferry info of sparse=dense on the device"
  sed 's/^/    /' "$tmp/info"
  fail=1
fi

# What keeps the CPU view: said, and the batches the same.
for opt in keep_host=yes pad=max sparse_dtype=bfloat16; do
  if $RUN_MPI 1 "$prog" values "$h5" sparse=dense $x $opt batch_size=16 \
       >"$tmp/out" 2>&1 &&
     ! grep -q "sparse=dense on the device" "$tmp/out"; then
    "$FERRY" info "$h5" --vars X/indices,X/data --device cuda --sparse dense \
      --`echo $opt | sed 's/_/-/; s/=/ /'` >"$tmp/info" 2>&1
    grep -q "bfloat16" "$tmp/info" || test "$opt" != sparse_dtype=bfloat16 ||
      echo "note: the notes do not name bfloat16"
    if grep -q "^notes .*on the CPU, not the device" "$tmp/info"; then
      echo "ok: $opt: the CPU view, said in the notes"
    else
      echo "FAIL: $opt: the notes do not say the rows are made on the CPU"
      sed 's/^/    /' "$tmp/info" | grep notes
      fail=1
    fi
  else
    echo "FAIL: sparse=dense $opt with device batches"
    sed 's/^/    /' "$tmp/out" | head -20
    fail=1
  fi
done
exit $fail
