#!/bin/sh
# tsan.sh - the pipeline under ThreadSanitizer over 2 ranks.  The library
# and tests/mpi/test_loader.c are compiled again with -fsanitize=thread into
# a scratch directory (the regular build stays unsanitised); the test fails
# on any data race, lock-order inversion or thread leak whose report passes
# through ferry's own sources.  Open MPI's internals are not instrumented
# and its own reports (its TCP transport's locks) are not ferry's.
cc=${MPICC:-mpicc}
command -v "$cc" >/dev/null 2>&1 || { echo "SKIP: no $cc"; exit 77; }
tmp="${FERRY_TEST_TMPDIR:-/tmp}/tsan.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/probe.c" <<'C'
int main(void) { return 0; }
C
if ! $cc -fsanitize=thread "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null || ! "$tmp/probe"; then
  echo "SKIP: $cc cannot build or run -fsanitize=thread programs here"
  exit 77
fi
src="$top_srcdir/src"
# The flags configure found, from the build's Makefile (the optional
# backends configure enabled are compiled in, as in libferry).
mkvar() { sed -n "s/^$1 = //p" "$top_builddir/Makefile" | head -n 1; }
flags="-std=gnu11 -g -O1 -fsanitize=thread -DHAVE_CONFIG_H -DFERRY_BUILDING -I$top_builddir -I$top_srcdir/include -I$src"
deps="`mkvar JANSSON_CFLAGS` `mkvar JANSSON_LIBS`"
sources="$src/util/error.c $src/util/hash.c $src/util/bytes.c $src/util/alloc.c $src/util/version.c $src/core/options.c $src/plan/plan.c $src/loader/open.c $src/loader/epoch.c $src/loader/pipeline.c $src/loader/next.c $src/loader/checkpoint.c $src/loader/inspect.c $src/util/agree.c $src/core/state.c $src/backends/npy.c $src/core/manifest.c $src/backends/mem.c $src/backends/registry.c $src/backends/toolkit.c $src/backends/zarr/zarr.c $src/backends/zarr/meta.c $src/backends/zarr/native.c $src/plugins/codec.c"
deps="$deps `mkvar CODEC_CPPFLAGS` `mkvar CODEC_LIBS`"
if grep -q '^#define HAVE_CUDA 1' "$top_builddir/config.h" 2>/dev/null; then
  # the runtime and NCCL are loaded at run time (dlopen), not linked
  sources="$sources $src/gpu/cuda.c $src/gpu/cudalib.c"
  deps="$deps `mkvar CUDA_CPPFLAGS` `mkvar NCCL_CPPFLAGS` `mkvar DL_LIBS`"
else
  sources="$sources $src/gpu/nocuda.c"
fi
if grep -q '^#define HAVE_HDF5 1' "$top_builddir/config.h" 2>/dev/null; then
  sources="$sources $src/backends/hdf5.c"
  deps="$deps `mkvar HDF5_CPPFLAGS` `mkvar HDF5_LIBS`"
fi
if grep -q '^#define HAVE_NCZARR 1' "$top_builddir/config.h" 2>/dev/null; then
  sources="$sources $src/backends/zarr/netcdf.c"
  deps="$deps `mkvar NETCDF_CPPFLAGS` `mkvar NETCDF_LIBS`"
fi
# shellcheck disable=SC2086 # lists of words
if ! $cc $flags "$top_srcdir/tests/mpi/test_loader.c" $sources \
     $deps -lpthread -o "$tmp/test_loader" 2> "$tmp/cc.log"; then
  echo "FAIL: cannot compile with ThreadSanitizer"; cat "$tmp/cc.log"; exit 1
fi
TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0 log_path=$tmp/tsan"
export TSAN_OPTIONS
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT_TSAN:-300}
export FERRY_MPI_TIMEOUT
$RUN_MPI 2 "$tmp/test_loader" > "$tmp/out" 2>&1
status=$?
tail -3 "$tmp/out"
grep -q "^PASS" "$tmp/out" || { echo "FAIL: test_loader under TSan (exit $status)"; cat "$tmp/out" | tail -30; exit 1; }
bad=`cat "$tmp"/tsan.* 2>/dev/null | awk '
  /WARNING: ThreadSanitizer/ { p = 1; blk = "" }
  p { blk = blk "\n" $0 }
  /^SUMMARY: ThreadSanitizer/ { if (p && blk ~ /\/src\/(util|core|plan|loader|backends|gpu|plugins)\/[a-z_\/]*\.c:/) print blk; p = 0 }'`
if test -n "$bad"; then
  echo "FAIL: ThreadSanitizer reports in ferry's code:"
  echo "$bad" | head -80
  exit 1
fi
echo "PASS: ThreadSanitizer clean in ferry's sources over 2 ranks (`cat "$tmp"/tsan.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer'` reports inside Open MPI ignored)"
exit 0
