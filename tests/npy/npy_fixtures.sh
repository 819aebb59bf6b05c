#!/bin/sh
# npy_fixtures.sh - .npy files written by NumPy itself (tests/fixtures/
# make_npy.py: every dtype, both byte orders, header versions 1.0/2.0/3.0,
# rows of shape (), (3,) and (2, 3, 4), N = 97) read end to end through the
# loader by `ferry dump` over 1, 2 and 3 ranks, and every served line checked
# by tests/fixtures/dump_compare.py against NumPy's arr[g].flat[0]: every
# index exactly once, each value exact.
#
# Bugs it pins: a byte swap missed or done twice for one dtype (big-endian
# int16 96 read as 24576); the data offset of a v2.0/v3.0 header (4-byte
# length) taken as v1.0's, shifting every row; float16 converted wrongly;
# a row of a 3-d shape read with the wrong stride; parts of different header
# lengths concatenated at the wrong offset (each list below joins the
# v1.0, v2.0 and v3.0 files of one dtype, byte order and row shape as three
# parts); a sample lost or served twice at a part or chunk boundary or
# between ranks; the two variables of a directory served out of step.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no ferry program, no NumPy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init npy_fixtures
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by NumPy"
  exit 77
fi
write_fixtures make_npy.py index.json

# Small chunks and batches so that every rank reads several chunks, parts
# are split between chunks and batches end in the middle of chunks.
BATCH=7
common="--epoch 0 --tail partial --chunk-samples 10 --batch-size $BATCH"
jobs=$tmp/jobs
: >"$jobs"
# The dumps are queued, then dump_run runs them all in one MPI job
# (tests/lib/test_dump, see common.sh): most of a short MPI job is start-up
# time.
njobs=0
export FERRY

# dump LABEL NP FLAGS DATASET VAR "LOADER OPTIONS" NPY...: dump_queue of
# common.sh.  A list's or a glob's variable is named after its first part's
# file stem.
dump() { dump_queue "" "$@"; }

# ---- every dtype x byte order x row shape, three header versions as parts
# np cycles through 1, 2, 3 so that each dtype and byte order, and each row
# shape, is read over 1, 2 and 3 ranks.
di=0
for dtype in bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 \
             float16 float32 float64; do
  case $dtype in bool|int8|uint8) orders=na ;; *) orders='le be' ;; esac
  oi=0
  for order in $orders; do
    ri=0
    for row in r0 r1 r3; do
      np=`expr 1 + \( $di + $oi + $ri \) % 3`
      list=$fx/${dtype}_${order}_$row.txt
      printf '%s\n' "${dtype}_${order}_v1_$row.npy" \
        "${dtype}_${order}_v2_$row.npy" "${dtype}_${order}_v3_$row.npy" >"$list"
      flags=-
      test "$np" -gt 1 && flags=spread
      dump "${dtype}_${order}_$row v1+v2+v3" "$np" "$flags" "@$list" \
        "${dtype}_${order}_v1_$row" "" \
        "$fx/${dtype}_${order}_v1_$row.npy" "$fx/${dtype}_${order}_v2_$row.npy" \
        "$fx/${dtype}_${order}_v3_$row.npy"
      ri=`expr $ri + 1`
    done
    oi=`expr $oi + 1`
  done
  di=`expr $di + 1`
done

# ---- one file alone of each dtype and byte order, version and row shape
# varying, np varying the other way.
di=0
for dtype in bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 \
             float16 float32 float64; do
  case $dtype in bool|int8|uint8) orders=na ;; *) orders='le be' ;; esac
  oi=0
  for order in $orders; do
    v=`expr 1 + \( $di + $oi \) % 3`
    row=`expr \( $di + 2 \* $oi \) % 3`
    case $row in 0) row=r0 ;; 1) row=r1 ;; 2) row=r3 ;; esac
    np=`expr 1 + \( $di + 2 \* $oi + 1 \) % 3`
    name=${dtype}_${order}_v${v}_$row
    dump "$name.npy" "$np" - "$fx/$name.npy" "$name" "" "$fx/$name.npy"
    oi=`expr $oi + 1`
  done
  di=`expr $di + 1`
done

# ---- storage order and collective reads ----------------------------------
l=$fx/float16_be_r3.txt
f16="$fx/float16_be_v1_r3.npy $fx/float16_be_v2_r3.npy $fx/float16_be_v3_r3.npy"
# $f16 is a list of paths without blanks (the fixture names): split it.
dump "float16_be_r3 shuffle=none" 1 ordered "@$l" float16_be_v1_r3 \
  "--shuffle none --shuffle-buffer 0" $f16
dump "float16_be_r3 shuffle=none" 3 ordered,spread "@$l" float16_be_v1_r3 \
  "--shuffle none --shuffle-buffer 0" $f16
l=$fx/uint64_be_r3.txt
dump "uint64_be_r3 io=collective" 2 spread "@$l" uint64_be_v1_r3 \
  "--io collective" $fx/uint64_be_v1_r3.npy $fx/uint64_be_v2_r3.npy \
  $fx/uint64_be_v3_r3.npy
l=$fx/bool_na_r1.txt
dump "bool_na_r1 io=collective shuffle=block" 3 spread "@$l" bool_na_v1_r1 \
  "--io collective --shuffle block --block-size 5" $fx/bool_na_v1_r1.npy \
  $fx/bool_na_v2_r1.npy $fx/bool_na_v3_r1.npy
# Parts of 97, 89 and 83 samples whose values continue across the parts.
dump "parts/part-*.npy glob" 3 spread "$fx/parts/part-*.npy" part-000 "" \
  "$fx/parts/part-000.npy" "$fx/parts/part-001.npy" "$fx/parts/part-002.npy"

# ---- directories of two variables ----------------------------------------
# pair/: x float32 (97, 4) and y int64 (97,).  mixed/: a big-endian int16
# v2.0 file beside a little-endian float64 v3.0 one (copies of fixtures).
mkdir -p "$fx/mixed" &&
  cp "$fx/int16_be_v2_r3.npy" "$fx/mixed/a.npy" &&
  cp "$fx/float64_le_v3_r0.npy" "$fx/mixed/b.npy" || exit 1
dump "pair/ var x" 2 spread "$fx/pair" x "" "$fx/pair/x.npy"
dump "pair/ var y" 2 "spread,plan=pair/ var x np=2" "$fx/pair" y "" "$fx/pair/y.npy"
dump "mixed/ var a" 3 spread "$fx/mixed" a "" "$fx/mixed/a.npy"
dump "mixed/ var b" 3 "spread,plan=mixed/ var a np=3" "$fx/mixed" b "" "$fx/mixed/b.npy"
dump_run

echo "checking $njobs dumps against numpy"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1
exit $fail
