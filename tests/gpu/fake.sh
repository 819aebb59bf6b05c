#!/bin/sh
# fake.sh - the GPU stage on this GPU-less machine, under the fake CUDA
# runtime (tests/gpu/fakecuda.c, LD_PRELOAD): its streams run copies
# asynchronously on threads with random delays, so a missing wait or an
# early reuse of a buffer shows up as wrong data.  Every backend, 1-3
# ranks, one and several devices per rank, keep_host, partial batches,
# ragged variables padded by the loader (pad=max, pad=12 truncate=yes), on
# one device and split over two;
# teardown mid-epoch; misuse; NCCL registration; and the errors: a batch
# size that does not split over the devices, an absent device, a failed
# copy or pinned allocation on one rank (the same error on every rank).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init gpu-fake
. "$top_srcdir/tests/gpu/common.sh"
fake="$top_builddir/tests/gpu/.libs/libfakecuda.so"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
test -f "$fake" || { echo "SKIP: $fake not built"; exit 77; }
LD_PRELOAD=$fake
FAKECUDA_DEVICES=1
FAKECUDA_DELAY_US=300
export LD_PRELOAD FAKECUDA_DEVICES FAKECUDA_DELAY_US

gpu_datasets
gpu_all_checks
npy=$tmp/npy
mem='mem:N=500,vars=x:float32:4,y:int64'

# Several devices per rank: one shard each.
FAKECUDA_DEVICES=2; export FAKECUDA_DEVICES
gpu_run npy 2 values "$npy" devices=all batch_size=16 tail=partial
gpu_run npy 1 values "$npy" devices=1,0 batch_size=10 tail=partial keep_host=yes
FAKECUDA_DEVICES=1; export FAKECUDA_DEVICES

# Weighted sampling and a mix: the same batches on the device as on the
# host (the pipeline after the plan is the same).
"${PYTHON_NUMPY:-/usr/bin/python3}" -c "
import numpy as np, sys
w = np.arange(1003, dtype=np.float32) % 7
np.save(sys.argv[1], w)" "$tmp/w.npy" 2>/dev/null &&
  gpu_run npy 2 values "$npy" weights=$tmp/w.npy batch_size=16 draw_block=8
gpu_run mix 2 values "mix:$npy=0.6,$npy=0.4" vars=x,y batch_size=12 \
  mix_exhaust=restart tail=partial

# A ragged variable padded by the loader (pad): the lengths and the padded
# values go to the device in one copy, equal to the host loader's.
gpu_run megatron 2 values "$tmp/meg" pad=max batch_size=16 tail=partial seed=5
gpu_run megatron 1 values "$tmp/meg" pad=12 truncate=yes batch_size=8 \
  keep_host=yes threads=3
# ... and over two devices a rank (devices=all): each shard its samples'
# lengths and padded rows; without pad refused (the offsets do not split).
FAKECUDA_DEVICES=2; export FAKECUDA_DEVICES
gpu_run megatron 2 values "$tmp/meg" pad=max devices=all batch_size=16 \
  tail=partial seed=5
gpu_run megatron 1 values "$tmp/meg" pad=12 truncate=yes devices=1,0 \
  batch_size=8 keep_host=yes
FAKECUDA_DEVICES=1; export FAKECUDA_DEVICES

gpu_run mem 2 teardown "$mem" batch_size=8 device_prefetch=3
gpu_run mem 2 misuse "$mem" batch_size=8 device_prefetch=2 held_memory=0

# Held batches do not stop training (issue 30): holding 3, 8 and 64
# device batches (more than device_prefetch) gives them slots of their own;
# each is re-checked against the host loader's batch just before its
# release, with and without keep_host (whose host slot is held too).
for k in 3 8 64; do
  FERRY_TEST_HOLD=$k; export FERRY_TEST_HOLD
  gpu_run npy 2 values "$npy" batch_size=16 device_prefetch=2 tail=partial
  gpu_run npy 1 values "$npy" batch_size=16 device_prefetch=2 keep_host=yes \
    prefetch=3
done
unset FERRY_TEST_HOLD
gpu_run mem 2 nccl "$mem" batch_size=8
# ragged: ferry_set_epoch makes the device slots for the epoch's largest
# batch, and moves the communicator's registrations to them
gpu_run megatron 1 nccl "$tmp/meg" batch_size=8

# Errors, the same code and message on every rank.
expect_err() { # CODE NP WHAT-THE-MESSAGE-SAYS OPTION=VALUE...
  code=$1 np=$2 says=$3
  shift 3
  if $RUN_MPI "$np" "$prog" expect-error "$code" "$@" >"$tmp/err" 2>&1 &&
     grep -q "$says" "$tmp/err"; then
    echo "ok: FERRY_E$code ($says): `sed -n 's/^error [-0-9]*: //p' "$tmp/err" | head -1`"
  else
    echo "FAIL: expected FERRY_E$code saying '$says' from $*"
    sed 's/^/    /' "$tmp/err" | head -20
    fail=1
  fi
}
FAKECUDA_DEVICES=2; export FAKECUDA_DEVICES
expect_err INVAL 2 "does not split evenly" "$mem" device=cuda devices=all batch_size=15
expect_err NOTSUP 2 "pad=max or pad=L" "$tmp/meg" device=cuda devices=all \
  batch_size=16
FAKECUDA_DEVICES=1; export FAKECUDA_DEVICES
expect_err NODEV 2 "device 5 is not visible" "$mem" device=cuda devices=5
FAKECUDA_DEVICES=0 expect_err NODEV 3 "no usable GPU" "$mem" device=cuda
FAKECUDA_FAIL_MEMCPY_AT=7 FAKECUDA_FAIL_RANK=1 \
  expect_err NODEV 3 "rank 1: cudaMemcpyAsync" "$mem" device=cuda batch_size=4
FAKECUDA_FAIL_HOSTALLOC=1 FAKECUDA_FAIL_RANK=2 \
  expect_err NODEV 3 "rank 2: cudaHostAlloc" "$mem" device=cuda

# device=auto with a GPU: batches on the device, nothing said.
if $RUN_MPI 2 "$FERRY" info "$mem" --ranks >"$tmp/info" 2>&1 &&
   grep -q "device 0 (local rank 0 modulo 1 visible device)" "$tmp/info" &&
   grep -q "device 0 (local rank 1 modulo 1 visible device)" "$tmp/info" &&
   ! grep -q "stay in host" "$tmp/info"; then
  echo "ok: ferry info --ranks shows each rank's device"
else
  echo "FAIL: ferry info --ranks under the fake runtime"
  sed 's/^/    /' "$tmp/info"
  fail=1
fi
# pin_memory=yes pins host batches with cudaHostAlloc: a failing one is
# named (the pinned path is taken), and the budget counts the pinned ring.
if FAKECUDA_FAIL_HOSTALLOC=1 $RUN_MPI 2 "$FERRY" info "$mem" --device cpu --pin-memory yes >"$tmp/pin" 2>&1; then
  echo "FAIL: pin_memory=yes with a failing cudaHostAlloc was accepted"; fail=1
elif ! grep -q "cudaHostAlloc (pinned batch buffer) failed" "$tmp/pin"; then
  echo "FAIL: pin_memory=yes: the failing cudaHostAlloc is not named"; sed 's/^/    /' "$tmp/pin"; fail=1
elif ! $RUN_MPI 2 "$FERRY" info "$mem" --device cpu --pin-memory yes 2>&1 | grep -q "(pinned "; then
  echo "FAIL: pin_memory=yes: the budget shows no pinned ring"; fail=1
else
  echo "ok: pin_memory=yes pins host batches (cudaHostAlloc; pinned budget)"
fi
exit $fail
