#!/bin/sh
# zarr.sh - the Zarr backend (src/backends/zarr) and its NCZarr codec
# plugins (src/plugins) end to end.  Stores written by zarr-python and numcodecs
# (tests/fixtures/make_zarr.py: default Blosc, Blosc with zstd and shuffle,
# Blosc with bitshuffle, zlib, gzip, zstd, lz4, no compressor, the shuffle
# filter with zlib, chunks along dimension 1 too, the '/' separator and a
# sub-group, big-endian arrays, bool, a missing chunk read as fill value, a
# store that is one array) are dumped with `ferry dump --row-hash` over 1, 2
# and 3 ranks and every served row is compared by
# tests/fixtures/dump_compare.py with what zarr-python reads: every index
# exactly once, every byte of every row equal.  They are read by ferry's own
# chunk reader (the default); the stores netCDF-C reads are read again
# through it (FERRY_ZARR_READER=netcdf, the zarr_reader option).  The store
# of zarr-python's fixture/nested_legacy (nested chunk directories, no
# dimension_separator) must be read, not served as fill values, and
# zarr_reader=netcdf refuses it.  In a build without netCDF-C (no "nczarr" among the
# features) every store is read by the native reader, the checks that need
# netCDF-C are skipped, and zarr_reader=netcdf must be a clear refusal.
# Bad inputs fail on 1 and 3 ranks with status 1 and one message naming the
# store and what is wrong, without hanging.
#
# Bugs it pins: netCDF-C answering "undefined filter" (or, before 4.9,
# returning compressed bytes as data) when no codec plugin is found; a bool
# array crashing netCDF-C 4.9.0's nc_open; big-endian arrays served
# unswapped; Fortran-ordered arrays served transposed; a missing chunk file
# of an array without fill_value served as netCDF's default fill; a truncated
# uncompressed chunk served with garbage at its end; a partial last chunk or
# a chunk split along dimension 1 offset by a chunk.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no zarr backend, no zarr-python).  Without
# netCDF-C the run says "netCDF reader: skipped (built without netCDF-C)".

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init zarr
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* zarr' >/dev/null; then
  echo "SKIP: this ferry has no zarr backend"
  exit 77
fi
# The netCDF reader exists only in builds with netCDF-C (feature nczarr).
if "$FERRY" --version 2>/dev/null | grep '^features:.* nczarr' >/dev/null; then
  nczarr=yes
else
  nczarr=no
  echo "note: netCDF reader: skipped (built without netCDF-C); every store is read natively"
fi
# The python3 first on PATH may lack numpy and zarr: Debian's has them.
PY=/usr/bin/python3
if ! $PY -c 'import zarr, numcodecs, numpy' >/dev/null 2>&1; then
  echo "SKIP: $PY lacks zarr or numcodecs (apt-get install python3-zarr python3-numcodecs): the fixtures are written by zarr-python"
  exit 77
fi
# The plugins of this build tree, not an installed ferry's.
if test -n "${top_builddir:-}" && test -d "$top_builddir/src/plugins/.libs"; then
  FERRY_PLUGIN_DIR=$top_builddir/src/plugins/.libs
  export FERRY_PLUGIN_DIR
fi
fx=$tmp/fx
if $PY "$top_srcdir/tests/fixtures/make_zarr.py" "$fx" >"$tmp/make.log" 2>&1 &&
   test -f "$fx/good.txt" && test -f "$fx/bad.txt"; then
  echo "ok: make_zarr.py wrote the fixtures (`wc -l <"$fx/good.txt"` arrays, `wc -l <"$fx/bad.txt"` bad stores)"
else
  echo "FAIL: make_zarr.py did not write the fixtures"
  sed 's/^/    /' "$tmp/make.log"
  exit 1
fi

BATCH=7
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0

# dump LABEL NP FLAGS STORE VAR "ENV" "OPTIONS" NPY: dump_queue of common.sh
# with "env ENV" before the command.
dump() {
  z_label=$1 z_np=$2 z_flags=$3 z_ds=$4 z_var=$5 z_env=$6
  shift 6
  dump_queue "env $z_env" "$z_label" "$z_np" "$z_flags" "$z_ds" "$z_var" "$@"
}

tab=`printf '\t'`
while IFS=$tab read -r store var ref reader; do
  base=`basename "$store"`
  test "$nczarr" = yes || reader=native
  for np in 1 2 3; do
    flags=ordered
    test "$np" -gt 1 && flags=spread
    dump "$base:$var (native, the default)" "$np" "$flags" "$store" "$var" "FERRY_ZARR_READER=auto" \
      "--shuffle none --shuffle-buffer 0 --chunk-samples 10" "$ref"
  done
  if test "$reader" = netcdf; then
    dump "$base:$var (netcdf reader)" 2 spread "$store" "$var" "FERRY_ZARR_READER=netcdf" \
      "--shuffle none --shuffle-buffer 0 --chunk-samples 10" "$ref"
  fi
done <"$fx/good.txt"
# Shuffled, with chunks that split storage chunks: reads jump around.
shuffled_reader=netcdf
test "$nczarr" = yes || shuffled_reader=native
dump "default_blosc.zarr:samples shuffled $shuffled_reader" 3 spread "$fx/default_blosc.zarr" samples \
  FERRY_ZARR_READER=$shuffled_reader "--seed 5 --chunk-samples 6 --shuffle block --block-size 4" \
  "$fx/ref/default_blosc_zarr__samples.npy"
dump "chunked2d.zarr:targets shuffled native" 2 spread "$fx/chunked2d.zarr" targets \
  FERRY_ZARR_READER=native "--seed 9 --chunk-samples 4" \
  "$fx/ref/chunked2d_zarr__targets.npy"
dump_run
echo "checking $njobs dumps against zarr-python's values"
$PY "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# Which reader: ferry's own by default (netCDF-C only when asked for).
check_info() {
  store=$1 want=$2
  if "$FERRY" info "$store" >"$tmp/info.out" 2>&1 &&
     grep "reader $want" "$tmp/info.out" >/dev/null; then
    echo "ok: ferry info `basename "$store"`: reader $want"
  else
    echo "FAIL: ferry info `basename "$store"` should say reader $want"
    sed 's/^/    /' "$tmp/info.out"
    fail=1
  fi
}
check_info "$fx/bool.zarr" native
# xarray's _ARRAY_DIMENSIONS: lat, as long as time, is a coordinate.
if "$FERRY" info "$fx/xarray_v2.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'chose temp, time (97 rows along time); skipped lat (a coordinate of dimension lat' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info xarray_v2.zarr: `grep notes "$tmp/info.out"`"
else
  echo "FAIL: ferry info xarray_v2.zarr should skip the coordinate lat"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi
# The other groups of arrays that could be selected together are listed
# (issue 11): a and b share 20 rows where the default chose x (50).
if "$PYTHON_NUMPY" -c "
import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode='w')
g.create_dataset('x', data=np.zeros((50, 2), 'f4'))
g.create_dataset('a', data=np.zeros((20, 3), 'f4'))
g.create_dataset('b', data=np.zeros(20, 'i4'))" "$tmp/groups.zarr" &&
   "$FERRY" info "$tmp/groups.zarr" >"$tmp/info.out" 2>&1 &&
   grep 'other selections: vars=a,b (20 rows)' "$tmp/info.out" >/dev/null; then
  echo "ok: ferry info lists the other selections: `grep -o 'other selections.*' "$tmp/info.out"`"
else
  echo "FAIL: ferry info should list vars=a,b (20 rows) as another selection"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi

# zarr_reader=netcdf where netCDF-C cannot read: FERRY_ENOTSUP, one message
# naming the store and why, on every rank (a bool array; or no netCDF-C).
refuse_netcdf() {
  store=$1 why=$2
  if $RUN_MPI 2 "$FERRY" dump "$store" --zarr-reader netcdf --epoch 0 \
       --batch-size 5 >"$tmp/rn.out" 2>"$tmp/rn.err"; then
    echo "FAIL: zarr_reader=netcdf on `basename "$store"` was served"
    fail=1
  elif grep -F "$store" "$tmp/rn.err" | grep -F "$why" >/dev/null; then
    echo "ok: zarr_reader=netcdf on `basename "$store"`: `grep '^ferry' "$tmp/rn.err" | head -1 | cut -c1-200`"
  else
    echo "FAIL: zarr_reader=netcdf on `basename "$store"` should say '$why'"
    sed 's/^/    /' "$tmp/rn.err"
    fail=1
  fi
}
if test "$nczarr" = no; then
  check_info "$fx/default_blosc.zarr" native
  refuse_netcdf "$fx/default_blosc.zarr" "built without netCDF-C"
  echo "note: plugin checks skipped (built without netCDF-C)"
else
check_info "$fx/default_blosc.zarr" native
refuse_netcdf "$fx/bool.zarr" "netCDF-C cannot read it"
refuse_netcdf "$fx/nested_legacy.zarr" "nested directories"

# Without the plugins netCDF-C cannot decode: a clear error, not garbage.
mkdir -p "$tmp/noplugins" || exit 1
if env FERRY_PLUGIN_DIR="$tmp/noplugins" HDF5_PLUGIN_PATH="$tmp/noplugins" \
     $RUN_MPI 2 "$FERRY" dump "$fx/zstd.zarr" --zarr-reader netcdf --epoch 0 --batch-size 5 >"$tmp/np.out" 2>"$tmp/np.err"; then
  echo "FAIL: zstd.zarr without plugins was served"
  fail=1
elif grep 'FERRY_PLUGIN_DIR' "$tmp/np.err" >/dev/null && grep zstd "$tmp/np.err" >/dev/null; then
  echo "ok: without plugins: `grep '^ferry' "$tmp/np.err" | head -1`"
else
  echo "FAIL: without plugins the error should name the codec and FERRY_PLUGIN_DIR"
  sed 's/^/    /' "$tmp/np.err"
  fail=1
fi
fi

# Bad inputs: status 1, one "ferry:" line naming the store (or, for a
# selection, the variable) and holding every word, on 1 and 3 ranks at
# once (bad_stores in tests/lib/common.sh; most of each job is MPI start-up
# time, so the two lanes take the time of one).
bad_list=$fx/bad.txt
in_lanes bad_stores 1 3
exit $fail
