#!/bin/sh
# lint.sh - the static checks of `make lint` (run by make check too):
#   cppcheck    warnings, portability and performance findings in src/ and
#               the Python extension
#   clang-tidy  the curated set of .clang-tidy: real bugs, and the ceilings
#               on function size (120 lines) and cognitive complexity
# Both compile the sources with the flags configure found (read from the
# build's Makefile).  A tool that is not installed is skipped with a note;
# with neither, the test skips (77).
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${top_builddir:-$top/build}
mk="$build/Makefile"
[ -f "$mk" ] || { echo "FAIL: no $mk: configure first"; exit 1; }
mkvar() { sed -n "s/^$1 = //p" "$mk" | head -n 1; }
mpicc=$(mkvar CC)
mpiflags=$($mpicc --showme:compile 2>/dev/null || $mpicc -compile-info 2>/dev/null | sed 's/^[^ ]* //; s/ -c$//')
defs="-DHAVE_CONFIG_H -DFERRY_BUILDING -I$build -I$top/include -I$top/src -I$top/src/tool"
deps="$(mkvar PYTHON_CPPFLAGS) $(mkvar JANSSON_CFLAGS) $(mkvar HDF5_CPPFLAGS) $(mkvar NETCDF_CPPFLAGS) $(mkvar CUDA_CPPFLAGS) $(mkvar NCCL_CPPFLAGS) $(mkvar CODEC_CPPFLAGS) $(mkvar IMAGE_CPPFLAGS)"
cd "$top" || exit 1
files=$(git ls-files 'src/*.c' 'python/*.c' 2>/dev/null)
[ -n "$files" ] || files=$(find src python -name '*.c' | sort)
# Sources of backends and stages this build left out are not compiled.
have() { grep -q "^#define $1 1" "$build/config.h"; }
skip=""
have HAVE_HDF5 || skip="$skip src/backends/hdf5.c src/backends/hdf5_describe.c"
have HAVE_NETCDF || skip="$skip src/backends/zarr/netcdf.c src/plugins/nczplugin.c"
have HAVE_CUDA || skip="$skip src/gpu/cuda.c src/gpu/cudalib.c"
have HAVE_CUDA && skip="$skip src/gpu/nocuda.c"
[ -n "$(mkvar PYTHON_CPPFLAGS)" ] || skip="$skip python/ferry/_ferry.c python/ferry/_ferry_array.c python/ferry/_ferry_batch.c python/ferry/_ferry_loader.c"
sel=""
for f in $files; do
  case " $skip " in *" $f "*) continue ;; esac
  sel="$sel $f"
done
status=0 ran=0
if command -v cppcheck >/dev/null 2>&1; then
  ran=1
  # shellcheck disable=SC2086
  if cppcheck --enable=warning,portability,performance --error-exitcode=1 \
      --inline-suppr -q --std=c11 --suppress=missingIncludeSystem \
      -DFERRY_PLUGIN_KIND=1 '-DPy_RETURN_NONE=return Py_None' \
      '-DPy_BEGIN_ALLOW_THREADS={' '-DPy_END_ALLOW_THREADS=}' $defs $sel; then
    echo "PASS: cppcheck clean ($(echo $sel | wc -w) files)"
  else
    echo "FAIL: cppcheck findings above"
    status=1
  fi
else
  echo "note: cppcheck not installed (apt-get install cppcheck): skipped"
fi
tidy=${CLANG_TIDY:-clang-tidy}
if command -v "$tidy" >/dev/null 2>&1; then
  ran=1
  out=$(mktemp)
  for f in $sel; do
    extra=""
    case $f in src/plugins/nczplugin.c) extra="-DFERRY_PLUGIN_KIND=FERRY__CODEC_ZLIB" ;; esac
    # shellcheck disable=SC2086
    "$tidy" --quiet "$f" -- -std=gnu11 $defs $deps $mpiflags $extra >>"$out" 2>&1
  done
  if grep -q 'error:' "$out"; then
    grep -A3 'error:' "$out"
    echo "FAIL: clang-tidy findings above ($(grep -c 'error:' "$out"))"
    status=1
  else
    echo "PASS: clang-tidy clean ($(echo $sel | wc -w) files)"
  fi
  rm -f "$out"
else
  echo "note: $tidy not installed (apt-get install clang-tidy): skipped"
fi
[ $ran = 1 ] || { echo "SKIP: neither cppcheck nor clang-tidy is installed"; exit 77; }
exit $status
