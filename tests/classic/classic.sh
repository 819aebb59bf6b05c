#!/bin/sh
# classic.sh - the netCDF classic backend (src/backends/classic.c) end to
# end.  Files written by python3-netcdf4 and ncgen in CDF-1 (classic), CDF-2
# (64-bit offset) and CDF-5 (64-bit data) (tests/fixtures/make_classic.py:
# fixed-size variables of every type, record variables of every type with
# rows that need padding in the record, a single record variable whose
# records are not padded, an unlimited dimension with no record, numrecs
# STREAMING) are dumped by `ferry dump FILE --var NAME` over 1 rank in
# storage order, 2 ranks shuffled and 3 ranks shuffled with --io collective,
# and every served row is checked by tests/fixtures/dump_compare.py against
# the values netCDF4 reads (the whole row's bytes, with --row-hash).
# `ferry info` shows the format, dimensions, record size and choices; vars
# serves a named variable along another dimension.  Bad inputs (hand-made
# CDF-1 files broken in one field each) fail with status 1 and one message
# naming the file, on 1 and 3 ranks, without hanging.
#
# Bugs it pins: big-endian data served unswapped; record variables read as
# if contiguous (rows strided by the record size); the padding of a record
# variable's row in the record, and its absence for a single record
# variable; the 64-bit fields of CDF-5 and begin offsets of CDF-2 read as
# 32 bits; a collective read left unmatched when a rank has no row.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no netCDF4 for Python, no ncgen).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init classic
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by netCDF4"
  exit 77
fi
if ! "$PYTHON_NUMPY" -c 'import netCDF4' >/dev/null 2>&1; then
  echo "SKIP: $PYTHON_NUMPY has no netCDF4 (apt-get install python3-netcdf4; ./bootstrap deps installs it)"
  exit 77
fi
if ! command -v ncgen >/dev/null 2>&1; then
  echo "SKIP: no ncgen (apt-get install netcdf-bin; ./bootstrap deps installs it)"
  exit 77
fi
write_fixtures make_classic.py good.txt

BATCH=7
common="--epoch 0 --tail partial --chunk-samples 10 --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
dump() { dump_queue "" "$@"; }

tab=`printf '\t'`
while IFS=$tab read -r file var ref; do
  base=`basename "$file"`
  # norecs_*.nc: its record variable has no row (only f is served).
  case $base:$var in norecs_*:r) continue ;; esac
  # The default selection does not hold the other dimension's variables:
  # vars names them.
  sel="--vars $var"
  dump "$base:$var np=1" 1 ordered "$file" "$var" \
    "$sel --io independent --shuffle none --shuffle-buffer 0" "$ref"
  dump "$base:$var np=2 shuffled" 2 spread "$file" "$var" \
    "$sel --io independent --seed 3" "$ref"
  dump "$base:$var np=3 shuffled collective" 3 spread "$file" "$var" \
    "$sel --io collective --seed 5" "$ref"
done <"$fx/good.txt"
# numrecs STREAMING: the records the file holds, the same values.
for k in classic offset cdf5; do
  for v in r_f8 r_c1; do
    dump "stream_$k.nc:$v np=2" 2 spread "$fx/stream_$k.nc" "$v" \
      "--io independent --seed 7" "$fx/ref/record_$k.nc__$v.npy"
  done
done
# Several variables of one record read together (the span buffer serves
# every record variable of the same rows), shuffled, small chunks.
for io in independent collective; do
  dump "record_cdf5.nc:r_u8 with all io=$io" 3 spread "$fx/record_cdf5.nc" r_u8 \
    "--io $io --seed 11 --chunk-samples 3" "$fx/ref/record_cdf5.nc__r_u8.npy"
done
# Three parts (copies) with at most one file open: every switch of part
# closes and reopens a file (collectively with io=collective), and the
# span buffer must not serve one part's records for another's.
mkdir -p "$fx/copies" || exit 1
for i in 0 1 2; do
  cp "$fx/record_offset.nc" "$fx/copies/p$i.nc" || exit 1
done
r=$fx/ref/record_offset.nc__r_i2.npy
for io in independent collective; do
  dump "copies/p*.nc:r_i2 io=$io max_open_files=1" 3 spread "$fx/copies/p*.nc" r_i2 \
    "--io $io --max-open-files 1 --seed 3" "$r" "$r" "$r"
done
dump_run
echo "checking $njobs dumps against netCDF4's values"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# ferry info: format, dimensions, record size, what was chosen and why.
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
info_has "$fx/record_offset.nc" 'backend        netcdf-classic' \
  'notes          netCDF CDF-2 (64-bit offset); dimensions t = UNLIMITED (97 records), m = 97, x = 4, c = 3, w = 5; record size 76 bytes; chose r_i1, r_c1, r_i2, r_i4, r_f4, r_f8 (97 rows along t); skipped fm (along m (97 rows), not t); fx (along x (4 rows), not t)' \
  'storage        r_i2: record variable, NC_SHORT big-endian, one row every 76 bytes' \
  'storage        r_c1: record variable, NC_CHAR big-endian served as uint8'
info_has "$fx/one_classic.nc" 'record size 3 bytes'
info_has "$fx/fixed_cdf5.nc" 'netCDF CDF-5 (64-bit data)' 'skipped scalar (a scalar' \
  'storage        v_f8: fixed-size variable, NC_DOUBLE big-endian, contiguous'
info_has "$fx/norecs_classic.nc" 't = UNLIMITED (0 records)' 'chose f (97 rows along n)'
info_has "$fx/stream_classic.nc" 'numrecs STREAMING' 't = UNLIMITED (97 records)'
info_has "$fx/ncgen_classic.nc" 'netCDF CDF-1 (classic)' 'chose time, tas (7 rows along time)'

# A file whose only variables are record variables without a record.
if "$PYTHON_NUMPY" -c '
import netCDF4, sys
with netCDF4.Dataset(sys.argv[1], "w", format="NETCDF3_CLASSIC") as ds:
    ds.createDimension("t", None)
    ds.createVariable("r", "f4", ("t",))
' "$tmp/empty.nc" 2>"$tmp/py.err"; then
  $RUN_MPI 2 "$FERRY" dump "$tmp/empty.nc" --epoch 0 >"$tmp/e.out" 2>"$tmp/e.err"
  st=$?
  if test "$st" = 1 && test "`grep -c '^ferry' "$tmp/e.err"`" = 1 &&
     grep -i 'no sample' "$tmp/e.err" >/dev/null; then
    echo "ok: numrecs 0: `grep '^ferry' "$tmp/e.err"`"
  else
    echo "FAIL: a file of record variables with no record: status $st"
    sed 's/^/    /' "$tmp/e.err"
    fail=1
  fi
else
  echo "FAIL: netCDF4 did not write empty.nc"; sed 's/^/    /' "$tmp/py.err"; fail=1
fi

# bad FILE WORDS...: status 1, one "ferry:" message naming the file and
# holding every WORD, on 1 and 3 ranks.
bad() {
  f=$1
  shift
  for np in 1 3; do
    $RUN_MPI $np "$FERRY" dump "$f" --epoch 0 --batch-size 8 --tail partial \
      >"$tmp/bad.out" 2>"$tmp/bad.err"
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
      echo "ok: np=$np `basename "$f"`: `grep '^ferry' "$tmp/bad.err"`"
    else
      echo "FAIL: np=$np `basename "$f"`: $why"
      sed 's/^/    /' "$tmp/bad.err"
      fail=1
    fi
  done
}
b=$fx/bad
bad "$b/trunc_header.nc" 'truncated netCDF classic header' 'nc_type at offset 68'
bad "$b/trunc_data.nc" truncated 'variable x' 'offset 96'
bad "$b/absurd_dim.nc" truncated 'variable x' 'offset 8589934668'
bad "$b/negative_dim.nc" 'offset 24' 'dimension length is negative'
bad "$b/begin_eof.nc" truncated 'begin 1048576'
bad "$b/begin_header.nc" 'offset 80' 'inside the header'
bad "$b/huge_name.nc" 'offset 16' 'dimension name length is 2147483632'
bad "$b/bad_type.nc" 'offset 68' 'nc_type 99 is not a netCDF type'
bad "$b/int64_in_cdf1.nc" 'nc_type 10 is not a netCDF type of CDF-1'
bad "$b/huge_count.nc" 'offset 40' 'variable list is 2147483647'
# vars naming what cannot be served: one message naming it and saying why.
badvars() {
  f=$1 vars=$2
  shift 2
  $RUN_MPI 2 "$FERRY" dump "$f" --vars "$vars" --epoch 0 \
    >"$tmp/bad.out" 2>"$tmp/bad.err"
  st=$?
  why=
  test "$st" = 1 || why="status $st, not 1"
  test "`grep -c '^ferry' "$tmp/bad.err"`" = 1 || why="$why; not one ferry message"
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
badvars "$fx/fixed_classic.nc" scalar "'scalar' not found" 'scalar (a scalar, no sample dimension)'
badvars "$fx/record_classic.nc" nothing "'nothing' not found" 'the dataset has: r_i1, r_c1'
badvars "$fx/record_classic.nc" fm,r_i1 "'r_i1' not found" 'r_i1 (along t (97 rows), not m)'
if $RUN_MPI 2 "$FERRY" dump "$b/good_hand.nc" --epoch 0 --batch-size 2 --tail partial >"$tmp/g.out" 2>&1 &&
   test "`grep -c '^[01] ' "$tmp/g.out"`" = 4; then
  echo "ok: the hand-made CDF-1 file the bad ones break is read (4 rows)"
else
  echo "FAIL: good_hand.nc"; sed 's/^/    /' "$tmp/g.out"; fail=1
fi
exit $fail
