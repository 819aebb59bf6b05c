#!/bin/sh
# nogpu.sh - the GPU stage where no GPU is usable (CI): device=auto keeps
# batches in host memory, silently unless verbose=1 (rank 0 says so once,
# with the reason) or 2 (also the GPU libraries loaded); the same without a
# loadable CUDA runtime (FERRY_CUDART naming a missing file); device=cuda is
# an error on every rank (FERRY_ENODEV naming the missing GPU or library,
# or FERRY_ENOTSUP in a build without CUDA, saying so); ferry info --ranks
# shows each rank's choice.  Skipped where a GPU is usable (real.sh covers
# that machine).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init gpu-nogpu
unset LD_PRELOAD
mem='mem:N=3000,vars=x:float32:4,y:int64'
features=`"$FERRY" --version 2>/dev/null`
prog="$top_builddir/tests/gpu/test_device"

$RUN_MPI 3 "$FERRY" info "$mem" --ranks >"$tmp/info" 2>"$tmp/info.err" || {
  echo "FAIL: ferry info --ranks"; cat "$tmp/info" "$tmp/info.err"; exit 1; }
if grep -q "^ *[0-9]* .*cuda device" "$tmp/info"; then
  echo "SKIP: a GPU is usable here (tests/gpu/real.sh covers it)"
  exit 77
fi
n=`grep -c "host memory" "$tmp/info"`
if test "$n" = 3; then
  echo "ok: ferry info --ranks: 3 ranks in host memory"
else
  echo "FAIL: ferry info --ranks shows $n of 3 ranks in host memory"
  sed 's/^/    /' "$tmp/info"; fail=1
fi

case $features in
  *cuda*)
    # device=auto: host batches, silently; verbose=1 says it once on rank 0
    # with the reason, verbose=2 also names the GPU libraries.
    for v in 0 1 2; do
      if $RUN_MPI 3 "$FERRY" bench "$mem" --batch-size 16 --device auto \
           --verbose $v >"$tmp/auto" 2>"$tmp/auto.err"; then
        said=`grep -c "ferry: note: batches stay in host memory: device=auto found no usable GPU (cudaGetDeviceCount: " "$tmp/auto.err"`
        libs=`grep -c "ferry: note: CUDA runtime .*; NCCL " "$tmp/auto.err"`
        notes=`grep -c "ferry: note" "$tmp/auto.err"`
        case $v in 0) want_said=0 want_libs=0 ;; 1) want_said=1 want_libs=0 ;;
                   2) want_said=1 want_libs=1 ;; esac
        if test "$said" = "$want_said" && test "$libs" = "$want_libs" &&
           test "$notes" = `expr $want_said + $want_libs`; then
          echo "ok: device=auto verbose=$v: $notes note(s) `grep 'ferry: note' "$tmp/auto.err" | tr '\n' ' '`"
        else
          echo "FAIL: device=auto verbose=$v: $said host notes (want $want_said), $libs library notes (want $want_libs), $notes in all"
          sed 's/^/    /' "$tmp/auto.err"; fail=1
        fi
      else
        echo "FAIL: ferry bench --device auto --verbose $v"; sed 's/^/    /' "$tmp/auto.err"; fail=1
      fi
    done
    # No loadable runtime (FERRY_CUDART names a file that is not there):
    # device=auto stays silent, and with verbose=1 says why.
    bad=$tmp/no-such-libcudart.so
    FERRY_CUDART=$bad $RUN_MPI 2 "$FERRY" bench "$mem" --batch-size 16 \
      >"$tmp/nolib" 2>"$tmp/nolib.err"
    st=$?
    if test $st = 0 && ! grep -q "ferry: note" "$tmp/nolib.err"; then
      echo "ok: device=auto without a loadable CUDA runtime: silent"
    else
      echo "FAIL: device=auto without a loadable runtime: status $st, or it spoke"
      sed 's/^/    /' "$tmp/nolib.err"; fail=1
    fi
    FERRY_CUDART=$bad FERRY_VERBOSE=1 $RUN_MPI 2 "$FERRY" bench "$mem" \
      --batch-size 16 >"$tmp/nolib" 2>"$tmp/nolib.err"
    if grep -q "ferry: note: batches stay in host memory: device=auto found no usable GPU (no CUDA runtime: FERRY_CUDART: $bad: " "$tmp/nolib.err"; then
      echo "ok: FERRY_VERBOSE=1: `grep 'ferry: note' "$tmp/nolib.err"`"
    else
      echo "FAIL: FERRY_VERBOSE=1 without a loadable runtime did not say why"
      sed 's/^/    /' "$tmp/nolib.err"; fail=1
    fi
    if test -x "$prog"; then
      if $RUN_MPI 3 "$prog" expect-error NODEV "$mem" device=cuda \
           >"$tmp/cuda" 2>&1 && grep -q "rank 0: device=cuda but no usable GPU" "$tmp/cuda"; then
        echo "ok: device=cuda: `sed -n 's/^error [-0-9]*: //p' "$tmp/cuda"`"
      else
        echo "FAIL: device=cuda without a GPU"; sed 's/^/    /' "$tmp/cuda"; fail=1
      fi
      # device=cuda and no loadable runtime: FERRY_ENODEV on every rank,
      # naming the library and dlerror's reason.
      if FERRY_CUDART=$bad $RUN_MPI 3 "$prog" expect-error NODEV "$mem" \
           device=cuda >"$tmp/cuda" 2>&1 &&
         grep -q "rank 0: device=cuda but the CUDA runtime could not be loaded: FERRY_CUDART: $bad: .*No such file" "$tmp/cuda"; then
        echo "ok: device=cuda, no runtime: `sed -n 's/^error [-0-9]*: //p' "$tmp/cuda" | head -1`"
      else
        echo "FAIL: device=cuda without a loadable runtime"; sed 's/^/    /' "$tmp/cuda"; fail=1
      fi
    fi
    want="no usable GPU" ;;
  *)
    want="built without CUDA" ;;
esac
# The tool: --device cuda fails on every rank, saying why, exit 1.
$RUN_MPI 2 "$FERRY" bench "$mem" --device cuda >"$tmp/b" 2>&1
st=$?
if test $st = 1 && grep -q "$want" "$tmp/b"; then
  echo "ok: ferry bench --device cuda: exit 1, `grep "$want" "$tmp/b" | head -1`"
else
  echo "FAIL: ferry bench --device cuda: status $st, want 1 and '$want'"
  sed 's/^/    /' "$tmp/b"; fail=1
fi
# pin_memory=yes with no usable GPU: FERRY_ENODEV on every rank, saying why.
if $RUN_MPI 2 "$FERRY" info "$mem" --device cpu --pin-memory yes >"$tmp/pin" 2>&1; then
  echo "FAIL: pin_memory=yes without a GPU was accepted"; fail=1
elif test "`grep -c 'pin_memory=yes needs a CUDA runtime and a device' "$tmp/pin"`" -lt 1; then
  echo "FAIL: pin_memory=yes without a GPU: unclear message"; sed 's/^/    /' "$tmp/pin"; fail=1
else
  echo "ok: pin_memory=yes without a GPU is refused, saying why"
fi
exit $fail
