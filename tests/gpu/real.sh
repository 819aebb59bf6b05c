#!/bin/sh
# real.sh - the GPU stage on a real GPU: the checks of fake.sh that need
# no fault injection, sparse=dense made on the device by ferry's kernel
# (tests/gpu/sparse.sh's comparison with device=cpu, on files of ferry gen
# --anndata), then compute-sanitizer memcheck over a teardown in
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
# sparse=dense made on the device (decision 0056): every batch equal to
# device=cpu's CPU view; a run that fell back to the CPU (the kernel did
# not load: the notes say why) fails here, where a GPU is lent to test it.
case `"$FERRY" --version 2>/dev/null` in
  *hdf5*)
    for dt in float32 float64 int32; do
      "$FERRY" gen "$tmp/g_$dt.h5ad" --anndata --samples 3000 --genes 2000 \
        --density 0.05 --dtype $dt --seed 7 >/dev/null ||
        { echo "FAIL: ferry gen --anndata --dtype $dt"; fail=1; continue; }
      if "$FERRY" info "$tmp/g_$dt.h5ad" --sparse dense --device cuda \
           --vars X/indices,X/data 2>&1 | grep -q "built without nvcc"; then
        echo "note: libferry was built without nvcc: sparse=dense on the device not run"
        break
      fi
      for opts in "batch_size=64" "sparse_dtype=float16 batch_size=48 tail=partial" \
                  "genes=gene0,gene1999,5,gene7,gene1000 batch_size=32" "sparse_dtype=same batch_size=64"; do
        for np in 1 2; do
          if $RUN_MPI $np "$prog" values "$tmp/g_$dt.h5ad" sparse=dense \
               vars=X/indices,X/data $opts >"$tmp/out" 2>&1 &&
             grep -q "sparse=dense on the device: h2d_bytes" "$tmp/out"; then
            echo "ok: sparse=dense on the device, X of $dt, np=$np $opts"
          else
            echo "FAIL: sparse=dense on the device, X of $dt, np=$np $opts"
            sed 's/^/    /' "$tmp/out" | head -20
            "$FERRY" info "$tmp/g_$dt.h5ad" --sparse dense --device cuda \
              --vars X/indices,X/data 2>&1 | grep '^notes' | sed 's/^/    /'
            fail=1
          fi
        done
      done
    done
    if test -f "$tmp/g_float32.h5ad" &&
       ! "$FERRY" info "$tmp/g_float32.h5ad" --sparse dense --device cuda \
           --vars X/indices,X/data 2>&1 | grep -q "built without nvcc" &&
       test -n "`command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null`"; then
      san=`command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer`
      if $RUN_MPI 1 "$top_builddir/libtool" --mode=execute "$san" \
           --tool memcheck --error-exitcode 9 --report-api-errors no \
           "$prog" values "$tmp/g_float32.h5ad" sparse=dense \
           vars=X/indices,X/data genes=gene0,gene1999,5 batch_size=64 \
           >"$tmp/san" 2>&1 && grep -q "ERROR SUMMARY: 0 errors" "$tmp/san"; then
        echo "ok: compute-sanitizer memcheck: the densify kernel is clean"
      else
        echo "FAIL: compute-sanitizer memcheck of the densify kernel"
        sed 's/^/    /' "$tmp/san" | tail -30
        fail=1
      fi
    fi ;;
  *) echo "note: a build without HDF5: sparse=dense on the device not run" ;;
esac
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
