#!/bin/sh
# nogpu.sh - the GPU stage where no GPU is usable (CI): device=auto keeps
# batches in host memory and rank 0 says so once, with the reason;
# device=cuda is an error on every rank (FERRY_ENODEV, or FERRY_ENOTSUP in
# a build without CUDA, saying so); ferry info --ranks shows each rank's
# choice.  Skipped where a GPU is usable (real.sh covers that machine).
. "`dirname "$0"`/../mpi/common.sh"
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
    # device=auto: host batches, said once on rank 0 with the reason.
    if $RUN_MPI 3 "$FERRY" bench "$mem" --batch-size 16 --device auto \
         >"$tmp/auto" 2>"$tmp/auto.err"; then
      said=`grep -c "ferry: note: batches stay in host memory: device=auto found no usable GPU (cudaGetDeviceCount: " "$tmp/auto.err"`
      if test "$said" = 1; then
        echo "ok: device=auto: `grep 'stay in host' "$tmp/auto.err"`"
      else
        echo "FAIL: device=auto said it $said times (want once)"
        sed 's/^/    /' "$tmp/auto.err"; fail=1
      fi
    else
      echo "FAIL: ferry bench --device auto"; sed 's/^/    /' "$tmp/auto.err"; fail=1
    fi
    if test -x "$prog"; then
      if $RUN_MPI 3 "$prog" expect-error NODEV "$mem" device=cuda \
           >"$tmp/cuda" 2>&1 && grep -q "rank 0: device=cuda but no usable GPU" "$tmp/cuda"; then
        echo "ok: device=cuda: `sed -n 's/^error [-0-9]*: //p' "$tmp/cuda"`"
      else
        echo "FAIL: device=cuda without a GPU"; sed 's/^/    /' "$tmp/cuda"; fail=1
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
exit $fail
