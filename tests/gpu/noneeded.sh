#!/bin/sh
# noneeded.sh - libferry loads the CUDA runtime and NCCL at run time
# (src/gpu/cudalib.c), so one build serves CPU-only and GPU nodes: the
# dynamic section of libferry.so, of tests/example (a program that links
# libferry only) and of the ferry tool (whose bench links the static CUDA
# runtime for its GPU step kernel) names no libcudart, libcuda or libnccl;
# yet in a
# CUDA build that program loads the runtime (verbose=2 names it), and
# FERRY_CUDART chooses it.  Skipped without readelf or without a shared
# libferry (--disable-shared).
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init gpu-noneeded
lib="$top_builddir/.libs/libferry.so"
example="$top_builddir/tests/.libs/example"
test -x "$example" || example="$top_builddir/tests/example"
tool="$top_builddir/.libs/ferry"
test -x "$tool" || tool="$FERRY"
command -v readelf >/dev/null 2>&1 || {
  echo "SKIP: no readelf (binutils) to read the dynamic section"; exit 77; }
test -f "$lib" || { echo "SKIP: no shared $lib (--disable-shared?)"; exit 77; }

for f in "$lib" "$example" "$tool"; do
  test -f "$f" || continue
  if ! readelf -d "$f" >"$tmp/dyn" 2>&1; then
    echo "FAIL: readelf -d $f"; sed 's/^/    /' "$tmp/dyn"; fail=1; continue
  fi
  grep NEEDED "$tmp/dyn" >"$tmp/needed"
  if ! test -s "$tmp/needed"; then
    echo "FAIL: readelf -d $f lists no NEEDED entry at all"; fail=1
  elif grep -i -E 'cudart|libcuda|nccl' "$tmp/needed" >"$tmp/bad"; then
    echo "FAIL: $f needs the GPU libraries at link time:"
    sed 's/^/    /' "$tmp/bad"; fail=1
  else
    echo "ok: `basename "$f"`: `wc -l <"$tmp/needed" | tr -d ' '` NEEDED entries, none for CUDA or NCCL"
  fi
done

# The runtime is still found, by dlopen: tests/example does not link it,
# yet with verbose=2 rank 0 names the libcudart it loaded (by its soname or
# configure's directory), and FERRY_CUDART picks that same file by path.
case `"$FERRY" --version 2>/dev/null` in
  *cuda*) ;;
  *) echo "note: built without CUDA: nothing to load"; exit $fail ;;
esac
test -x "$top_builddir/tests/example" || { echo "note: tests/example not built"; exit $fail; }
"$FERRY" gen "$tmp/d" --samples 97 --var x:float32:2 >/dev/null 2>&1 || {
  echo "FAIL: ferry gen"; exit 1; }
FERRY_VERBOSE=2 $RUN_MPI 1 "$top_builddir/tests/example" "$tmp/d" \
  >"$tmp/out" 2>"$tmp/err"
path=`sed -n 's/^ferry: note: CUDA runtime \(\/[^;]*libcudart[^;]*\); .*/\1/p' "$tmp/err" | head -1`
if test -n "$path" && test -f "$path"; then
  echo "ok: dlopen found $path (`grep 'ferry: note: CUDA' "$tmp/err" | head -1`)"
  FERRY_CUDART=$path FERRY_VERBOSE=2 $RUN_MPI 1 "$top_builddir/tests/example" \
    "$tmp/d" >"$tmp/out" 2>"$tmp/err"
  if grep -q "^ferry: note: CUDA runtime $path; " "$tmp/err"; then
    echo "ok: FERRY_CUDART=$path is the one loaded"
  else
    echo "FAIL: FERRY_CUDART=$path was not the runtime loaded"
    sed 's/^/    /' "$tmp/err"; fail=1
  fi
else
  echo "FAIL: verbose=2 did not name a loaded libcudart"
  sed 's/^/    /' "$tmp/out" "$tmp/err"; fail=1
fi
exit $fail
