#!/bin/sh
# hdf5.sh - the parallel HDF5 backend (src/backends/hdf5.c) end to end.  Files written
# by h5py (tests/fixtures/make_h5.py: chunked with a partial last chunk,
# contiguous, gzip 1 and 9, shuffle+gzip, a dataset in a group, rows of
# shape (), (3,) and (2, 3, 4), big-endian floats and integers, bools,
# float16, every integer width, a netCDF-4-like .nc) are dumped by `ferry dump FILE --var NAME`
# over 1, 2 and 3 ranks, with --io independent and --io collective, and every
# served line is checked by tests/fixtures/dump_compare.py against the values
# h5py wrote: every index exactly once, each value exact.  `ferry verify`
# passes on a two-variable file.  Bad inputs fail with status 1 and one
# message naming the file or dataset, without hanging.
#
# Bugs it pins: a hyperslab offset by a chunk (the partial last chunk of 97
# rows in chunks of 10); a big-endian dataset read without conversion; a
# collective read left unmatched when a rank has no row (3 ranks, small
# batches); a group's dataset not found by its path ("group/targets"); a
# compound dataset or a missing filter plugin read as garbage instead of
# refused; a truncated file accepted.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no hdf5 backend, no h5py).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init hdf5
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* hdf5' >/dev/null; then
  echo "SKIP: this ferry has no hdf5 backend (configure did not find parallel HDF5)"
  exit 77
fi
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by h5py"
  exit 77
fi
if ! "$PYTHON_NUMPY" -c 'import h5py' >/dev/null 2>&1; then
  echo "SKIP: $PYTHON_NUMPY has no h5py (apt-get install python3-h5py): the fixtures are written by h5py"
  exit 77
fi
write_fixtures make_h5.py good.txt

BATCH=7
common="--epoch 0 --tail partial --chunk-samples 10 --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
dump_env=

# dump LABEL NP FLAGS DATASET VAR "LOADER OPTIONS" NPY...: dump_queue of
# common.sh, with $dump_env before the command.
dump() { dump_queue "$dump_env" "$@"; }

tab=`printf '\t'`
while IFS=$tab read -r file var ref; do
  base=`basename "$file"`
  for io in independent collective; do
    for np in 1 2 3; do
      flags=ordered
      test "$np" -gt 1 && flags=spread
      dump "$base:$var io=$io" "$np" "$flags" "$file" "$var" \
        "--io $io --shuffle none --shuffle-buffer 0" "$ref"
    done
  done
done <"$fx/good.txt"
# Shuffled, so reads jump between chunks.
dump "pair.h5:samples shuffled collective" 3 spread "$fx/pair.h5" samples \
  "--io collective --seed 5" "$fx/ref/pair_h5__samples.npy"
# Three parts (a glob of copies) with at most one file open: every switch
# of part closes and reopens a file, collectively.
mkdir -p "$fx/copies" || exit 1
for i in 0 1 2; do
  cp "$fx/pair.h5" "$fx/copies/p$i.h5" || exit 1
done
r=$fx/ref/pair_h5__group_targets.npy
for io in independent collective; do
  dump "copies/p*.h5:group/targets io=$io max_open_files=1" 3 spread \
    "$fx/copies/p*.h5" group/targets "--io $io --max-open-files 1 --seed 3" \
    "$r" "$r" "$r"
done
# Plan chunks that cut storage chunks (15 rows over chunks of 10: raw reads
# spanning two chunks, HDF5 decoding a chunk for two reads) and the
# automatic size (chunk_samples=0, aligned on the storage chunks).
for cs in 15 0; do
  for f in chunked_f32 shuffle_gzip; do
    dump "$f.h5:x chunk_samples=$cs collective" 3 spread "$fx/$f.h5" x \
      "--io collective --seed 2 --chunk-samples $cs" "$fx/ref/${f}_h5__x.npy"
  done
done
# ROMIO (MPICH's MPI-IO, also in Open MPI) leaves the status of a 0-byte
# read stale: the empty reads of collective rounds must not be checked.
if command -v ompi_info >/dev/null 2>&1 &&
   ompi_info 2>/dev/null | grep 'MCA io: romio' >/dev/null; then
  romio=`ompi_info 2>/dev/null | sed -n 's/.*MCA io: \(romio[0-9]*\).*/\1/p' | head -n 1`
  dump_env="env OMPI_MCA_io=$romio"
  for f in chunked_f32 contig_i64 gzip1; do
    dump "$f.h5:x io=collective $romio" 3 spread "$fx/$f.h5" x \
      "--io collective --seed 4" "$fx/ref/${f}_h5__x.npy"
  done
  dump_env=
fi
dump_run
echo "checking $njobs dumps against h5py's values"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# verify on a file of two variables (one in a group), both I/O modes.
for io in independent collective; do
  if $RUN_MPI 2 "$FERRY" verify "$fx/pair.h5" --batch-size 8 --chunk-samples 10 \
       --tail partial --io $io >"$tmp/verify.out" 2>&1 &&
     grep 'ferry verify: PASS' "$tmp/verify.out" >/dev/null; then
    echo "ok: ferry verify passes on pair.h5 (io=$io)"
  else
    echo "FAIL: ferry verify on pair.h5 (io=$io)"
    sed 's/^/    /' "$tmp/verify.out"
    fail=1
  fi
done

# A netCDF-4 file: its dimension-only dataset "n" is not a variable.
if "$FERRY" info "$fx/netcdf4.nc" >"$tmp/info.out" 2>&1 &&
   grep '^variables  *1$' "$tmp/info.out" >/dev/null &&
   grep '^  x  ' "$tmp/info.out" >/dev/null; then
  echo "ok: netcdf4.nc holds one variable, x (its dimension dataset is skipped)"
else
  echo "FAIL: netcdf4.nc should hold the one variable x"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi

# ferry info: chunking, filters, compression ratio, decode cache, and what
# was chosen and skipped.
# info_has FILE WORDS...: `ferry info FILE` succeeds and prints every WORD.
info_has() {
  f=$1
  shift
  why=
  "$FERRY" info "$f" >"$tmp/info.out" 2>&1 || why="status $?"
  for w in "$@"; do
    grep -F -e "$w" "$tmp/info.out" >/dev/null || why="$why; no '$w'"
  done
  if test -z "$why"; then
    echo "ok: ferry info `basename "$f"` shows: $*"
  else
    echo "FAIL: ferry info `basename "$f"`: $why"
    sed 's/^/    /' "$tmp/info.out"
    fail=1
  fi
}
info_has "$fx/shuffle_gzip.h5" 'storage        x: chunks (10, 3), shuffle+gzip(4), ratio ' \
  'decode cache 240 B per open file' 'decode caches 240 B'
# 97 rows in storage chunks of 10: the automatic chunk_samples wants 64
# chunks, the file has 10 storage chunks: one each, never cut.
info_has "$fx/chunked_f32.h5" 'storage        x: chunks (10, 3)' \
  'chunks         10 of at most 10 samples' \
  'chunk_samples  10 (auto: 97 samples / 64 chunks (max(64, 8 x 1 ranks x shuffle_buffer 4)), at least one storage chunk: 10 rows)'
info_has "$fx/contig_i64.h5" 'storage        x: contiguous'
info_has "$fx/pair.h5" 'notes          chose group/targets, samples (97 rows); skipped /meta/classes (5 rows where the sample dimension has 97); other selections: vars=meta/classes (5 rows)'
info_has "$fx/bad/mixed.h5" 'skipped /records (a compound type'
if test -f "$fx/ncgen.nc"; then
  info_has "$fx/ncgen.nc" 'shuffle+gzip(1)' 'skipped /c (a netCDF dimension without data); /k (5 rows'
else
  echo "FAIL: no ncgen.nc: netcdf-bin is not installed (./bootstrap deps installs it)"
  fail=1
fi
# Plan chunks that cut storage chunks are pointed out.
if "$FERRY" info "$fx/shuffle_gzip.h5" --chunk-samples 15 2>&1 |
   grep "not a multiple of x's storage chunk of 10 rows" >/dev/null; then
  echo "ok: ferry info warns when chunk_samples cuts storage chunks"
else
  echo "FAIL: ferry info --chunk-samples 15 does not warn about cut storage chunks"
  fail=1
fi
# Datasets named with a leading '/' are found.
if $RUN_MPI 2 "$FERRY" verify "$fx/pair.h5" --vars /samples,/group/targets \
     --batch-size 8 --tail partial >"$tmp/slash.out" 2>&1; then
  echo "ok: vars=/samples,/group/targets (HDF5 paths with the leading slash)"
else
  echo "FAIL: vars with leading slashes"
  sed 's/^/    /' "$tmp/slash.out"
  fail=1
fi

# bad FILE WORDS...: status 1, one "ferry:" message on stderr naming the file
# and holding every WORD, over 2 ranks.
mkdir -p "$tmp/noplugins" || exit 1
bad() {
  f=$1
  shift
  env HDF5_PLUGIN_PATH="$tmp/noplugins" $RUN_MPI 2 "$FERRY" dump "$f" --epoch 0 \
    --batch-size 8 --tail partial >"$tmp/bad.out" 2>"$tmp/bad.err"
  st=$?
  n=`grep -c '^ferry' "$tmp/bad.err"`
  why=
  test "$st" = 1 || why="status $st, not 1"
  test "$n" = 1 || why="$why; $n ferry messages, not 1"
  grep -F "$f" "$tmp/bad.err" >/dev/null || why="$why; the message does not name $f"
  for w in "$@"; do
    grep -i -F -e "$w" "$tmp/bad.err" >/dev/null || why="$why; no '$w' in the message"
  done
  if test -z "$why"; then
    echo "ok: `basename "$f"`: `grep '^ferry' "$tmp/bad.err"`"
  else
    echo "FAIL: `basename "$f"`: $why"
    sed 's/^/    /' "$tmp/bad.err"
    fail=1
  fi
}
bad "$fx/bad/truncated.h5" truncated
bad "$fx/bad/compound.h5" /records compound
bad "$fx/bad/text.h5" 'no backend'
bad "$fx/bad/lzf.h5" /x 32000 HDF5_PLUGIN_PATH
bad "$fx/bad/zerowidth.h5" "'z'" 'empty rows'
bad "$fx/bad/badgzip.h5" H5Dread 'HDF5 says'
bad "$fx/bad/openwrite.h5" 'HDF5 says' 'open for write'
info_has "$fx/bad/longcompound.h5" 'notes          chose x (50 rows); skipped /records (a compound type'
# Named datasets are served whatever the default would pick; an unselected
# dataset never makes the open fail (issue 11).
for case in "coords.h5 HT,DQF 300" "coords.h5 /DQF 300" "withlzf.h5 a 97"; do
  set -- $case
  if env HDF5_PLUGIN_PATH="$tmp/noplugins" $RUN_MPI 2 "$FERRY" verify "$fx/$1" \
       --vars "$2" --batch-size 8 --tail partial >"$tmp/verify.out" 2>&1 &&
     grep "exactly-once epoch 0: $3 of $3 samples" "$tmp/verify.out" >/dev/null; then
    echo "ok: $1 with vars=$2: $3 samples, verify passes"
  else
    echo "FAIL: $1 with vars=$2"; sed 's/^/    /' "$tmp/verify.out"; fail=1
  fi
done
bad "$fx/bad/badfletcher.h5" H5Dread 'HDF5 says'
if $RUN_MPI 2 "$FERRY" verify "$fx/bad/zerowidth.h5" --vars x --batch-size 8 \
     --tail partial >"$tmp/verify.out" 2>&1 &&
   grep 'ferry verify: PASS' "$tmp/verify.out" >/dev/null; then
  echo "ok: zerowidth.h5 with vars=x: ferry verify passes on 2 ranks"
else
  echo "FAIL: zerowidth.h5 with vars=x"; sed 's/^/    /' "$tmp/verify.out"; fail=1
fi

# vars naming what ferry cannot serve: status 1, one message naming it and
# saying why, on 2 ranks.
badvars() {
  f=$1 vars=$2
  shift 2
  $RUN_MPI 2 "$FERRY" dump "$f" --vars "$vars" --epoch 0 \
    >"$tmp/bad.out" 2>"$tmp/bad.err"
  st=$?
  n=`grep -c '^ferry' "$tmp/bad.err"`
  why=
  test "$st" = 1 || why="status $st, not 1"
  test "$n" = 1 || why="$why; $n ferry messages, not 1"
  for w in "$@"; do
    grep -F -e "$w" "$tmp/bad.err" >/dev/null || why="$why; no '$w' in the message"
  done
  if test -z "$why"; then
    echo "ok: vars=$vars: `grep '^ferry' "$tmp/bad.err"`"
  else
    echo "FAIL: vars=$vars on `basename "$f"`: $why"
    sed 's/^/    /' "$tmp/bad.err"
    fail=1
  fi
}
badvars "$fx/bad/mixed.h5" records "'records' not found" "/records (a compound type"
badvars "$fx/pair.h5" samples,meta/classes "'meta/classes' not found" \
  "/meta/classes (5 rows where the sample dimension has 97)"
badvars "$fx/pair.h5" nothing "'nothing' not found" "the dataset has: group/targets, samples"

# A file that one rank cannot open (permissions) while the others can: as
# root a chmod changes nothing, so tests/hdf5/eacces.c, preloaded, makes
# open() of it fail with EACCES on rank 1 only.  Every rank must stop with
# rank 1's reason, in both I/O modes, without hanging.
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || cc=gcc
if "$cc" -shared -fPIC -o "$tmp/eacces.so" "$top_srcdir/tests/hdf5/eacces.c" -ldl \
     2>"$tmp/cc.err"; then
  cp "$fx/pair.h5" "$tmp/denied.h5" || exit 1
  for io in independent collective; do
    env LD_PRELOAD="$tmp/eacces.so" FERRY_TEST_EACCES_PATH=/denied.h5 \
      FERRY_TEST_EACCES_RANK=1 $RUN_MPI 3 "$FERRY" dump "$tmp/denied.h5" \
      --epoch 0 --batch-size 8 --io $io >"$tmp/bad.out" 2>"$tmp/bad.err"
    st=$?
    if test "$st" = 1 &&
       test "`grep -c '^ferry' "$tmp/bad.err"`" = 1 &&
       grep "cannot open file $tmp/denied.h5 (dataset /group/targets) on rank 1: Permission denied" \
         "$tmp/bad.err" >/dev/null; then
      echo "ok: io=$io: rank 1 cannot open the file: `grep '^ferry' "$tmp/bad.err"`"
    else
      echo "FAIL: io=$io: a file rank 1 cannot open: status $st"
      sed 's/^/    /' "$tmp/bad.err"
      fail=1
    fi
  done
else
  echo "FAIL: cannot build the LD_PRELOAD shim tests/hdf5/eacces.c"
  sed 's/^/    /' "$tmp/cc.err"
  fail=1
fi
exit $fail
