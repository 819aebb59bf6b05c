# tests/gpu/common.sh - shared by tests/gpu/fake.sh and real.sh: the
# datasets every backend serves, and the runs of tests/gpu/test_device on
# them.  Source it after tests/lib/common.sh's ferry_test_init.
#
#   gpu_datasets          fills $datasets: "NAME SPEC" lines (npy, mem, and
#                         hdf5/zarr when built in and their writers exist)
#   gpu_run NAME NP CHECK SPEC [OPTION=VALUE]...
#                         runs test_device, counts a failure in $fail

prog="$top_builddir/tests/gpu/test_device"

gpu_datasets() {
  datasets=
  "$FERRY" gen "$tmp/npy" --samples 1003 --var x:float32:3x5 --var y:int64 \
    --var m:uint8:7 >/dev/null || { echo "FAIL: ferry gen"; fail=1; return; }
  datasets="npy $tmp/npy
mem mem:N=777,vars=a:float64:3,b:int16:2x2"
  # a ragged variable: its offsets and values go to the device in one copy
  if "$FERRY" gen "$tmp/meg" --format megatron --samples 613 --mean-len 20 \
       --var tokens:uint16 >/dev/null; then
    datasets="$datasets
megatron $tmp/meg"
  else
    echo "FAIL: ferry gen --format megatron"
    fail=1
  fi
  py=${PYTHON_NUMPY:-/usr/bin/python3}
  features=`"$FERRY" --version 2>/dev/null`
  case $features in
    *hdf5*)
      if "$py" - "$tmp/d.h5" <<'PY' 2>/dev/null
import sys, numpy as np, h5py
with h5py.File(sys.argv[1], "w") as f:
    n = 997
    f.create_dataset("img", data=(np.arange(n * 12) % 251).astype("u1").reshape(n, 3, 4),
                     chunks=(64, 3, 4), compression="gzip", shuffle=True)
    f.create_dataset("label", data=np.arange(n, dtype=">i4"), chunks=(100,))
PY
      then datasets="$datasets
hdf5 $tmp/d.h5"
      else echo "note: no hdf5 dataset (h5py missing)"; fi ;;
  esac
  case $features in
    *zarr*)
      if "$py" - "$tmp/d.zarr" <<'PY' 2>/dev/null
import sys, numpy as np, zarr
root = zarr.open_group(sys.argv[1], mode="w")
n = 501
root.create_dataset("v", data=np.arange(n * 6, dtype="f4").reshape(n, 6), chunks=(50, 6))
root.create_dataset("w", data=(np.arange(n) % 7).astype("u2"), chunks=(77,))
PY
      then datasets="$datasets
zarr $tmp/d.zarr"
      else echo "note: no zarr dataset (zarr-python missing)"; fi ;;
  esac
}

gpu_run() {
  name=$1 np=$2 check=$3 spec=$4
  shift 4
  if $RUN_MPI "$np" "$prog" "$check" "$spec" "$@" >"$tmp/out" 2>&1; then
    echo "ok: $check $name np=$np $*"
  else
    st=$?
    if test $st = 77; then
      cat "$tmp/out"
      exit 77
    fi
    echo "FAIL: $check $name np=$np $* (status $st)"
    sed 's/^/    /' "$tmp/out" | head -40
    fail=1
  fi
}

# Every dataset through the checks, with the options that change the
# device path: partial batches, keep_host, a deep and a shallow ring,
# several workers, collective I/O where the backend has it.
gpu_all_checks() {
  while read name spec; do
    test -n "$name" || continue
    io=
    case $name in npy|hdf5) io=io=collective ;; esac
    gpu_run "$name" 2 values "$spec" batch_size=16 tail=partial seed=3
    gpu_run "$name" 1 values "$spec" batch_size=32 keep_host=yes \
      device_prefetch=2 prefetch=3 threads=3
    gpu_run "$name" 3 values "$spec" batch_size=8 device_prefetch=5 \
      shuffle=block tail=pad $io
  done <<EOF
$datasets
EOF
}
