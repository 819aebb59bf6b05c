#!/bin/sh
# real.sh - the GPU stage on a real GPU: the checks of fake.sh that need
# no fault injection, then compute-sanitizer memcheck over a teardown in
# the middle of an epoch when compute-sanitizer is installed.  Without a
# usable CUDA device test_device exits 77 and so does this script (CI has
# no GPU; docs/gpu.md says how to run it on a GPU machine).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init gpu-real
. "$top_srcdir/tests/gpu/common.sh"
test -x "$prog" || { echo "SKIP: $prog not built"; exit 77; }
unset LD_PRELOAD
mem='mem:N=500,vars=x:float32:4,y:int64'
# test_device exits 77 when no rank has a usable device; gpu_run passes
# the skip on.
gpu_run mem 1 values "$mem" batch_size=8
gpu_datasets
gpu_all_checks
gpu_run npy 1 values "$tmp/npy" devices=all batch_size=16 tail=partial
gpu_run mem 2 teardown "$mem" batch_size=8 device_prefetch=3
gpu_run mem 2 misuse "$mem" batch_size=8 device_prefetch=2 held_memory=0
gpu_run mem 1 nccl "$mem" batch_size=8
sanitizer=`command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null`
if test -n "$sanitizer"; then
  if $RUN_MPI 1 "$top_builddir/libtool" --mode=execute "$sanitizer" \
       --tool memcheck --error-exitcode 9 --leak-check full --report-api-errors no \
       "$prog" teardown "$mem" batch_size=8 >"$tmp/san" 2>&1 &&
     grep -q "ERROR SUMMARY: 0 errors" "$tmp/san"; then
    echo "ok: compute-sanitizer memcheck: teardown mid-epoch is clean"
  else
    echo "FAIL: compute-sanitizer memcheck"
    sed 's/^/    /' "$tmp/san" | tail -40
    fail=1
  fi
else
  echo "note: compute-sanitizer not found: memcheck not run"
fi
exit $fail
