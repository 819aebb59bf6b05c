#!/bin/sh
# npz.sh - NumPy .npz archives written by NumPy itself (tests/fixtures/
# make_npz.py): numpy.savez (stored members) and savez_compressed (deflated
# members) of every dtype and byte order, rows of shape () and (2, 3); a
# 5 MiB deflated member read through its inflate checkpoints, shuffled, with
# chunks on and off the checkpoints; a Zip64 archive; glob and @list
# datasets of one-sample archives (DLIO's layout); io=collective.  `ferry
# dump` over 1, 2 and 3 ranks, every served row checked by
# tests/fixtures/dump_compare.py against numpy.load (first value and, with
# --row-hash, the whole row).  Then bad archives: each a clear error, the
# same on every rank, over 1 and 3 ranks, no hang.  Also a saved manifest
# read back, and one whose data offset was changed (refused).
#
# Bugs it pins: a member's data offset taken from the central directory's
# name/extra lengths instead of the local header's; the .npy header length
# not added to a stored member's offset; Zip64 sizes or offsets ignored; a
# checkpoint restored at the wrong row or with the wrong input position (a
# shuffled read of a deflated member shifted by rows); a byte swap missed
# for a big-endian member; rows of a glob of archives out of step; a CRC
# mismatch or a corrupt deflate stream served as data.
#
# Environment (set by "make check"; see tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no ferry program, no NumPy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init npz
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by NumPy"
  exit 77
fi
if ! "$FERRY" --version | grep '^backends:.* npz' >/dev/null; then
  echo "FAIL: ferry --version does not list the npz backend"
  exit 1
fi
if ! "$FERRY" --version | grep '^zlib ' >/dev/null; then
  echo "SKIP: this build has no zlib (configure --with-zlib): savez_compressed's deflated members cannot be read"
  exit 77
fi
write_fixtures make_npz.py z64.npz

BATCH=7
common="--epoch 0 --tail partial --chunk-samples 10 --batch-size $BATCH"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
dump() { dump_queue "" "$@"; }

# ---- every dtype x byte order, stored and deflated, two members ----------
i=0
for dtype in bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 \
             float16 float32 float64; do
  case $dtype in bool|int8|uint8) orders=na ;; *) orders='le be' ;; esac
  for order in $orders; do
    for kind in s c; do
      f=$fx/${dtype}_${order}_$kind.npz
      np=`expr 1 + $i % 3`
      flags=-
      test "$np" -gt 1 && flags=spread
      l="${dtype}_${order}_$kind"
      dump "$l a" "$np" "$flags" "$f" a "--row-hash" "$f::a"
      pl=plan="$l a np=$np"
      test "$np" -gt 1 && pl="spread,$pl"
      dump "$l b" "$np" "$pl" "$f" b "--row-hash" "$f::b"
      i=`expr $i + 1`
    done
  done
done

# ---- a 5 MiB deflated member: checkpoints every 4096 rows ----------------
# chunk_samples 0 (auto) aligns chunks on the checkpoints; 1000 and 300 do
# not, so reads start between checkpoints.  shuffle=chunks (the default).
for kind in s c; do
  f=$fx/ck_$kind.npz
  dump "ck_$kind auto chunks" 2 spread "$f" x "--chunk-samples 0 --row-hash" "$f::x"
  dump "ck_$kind 1000" 3 spread "$f" x "--chunk-samples 1000 --row-hash" "$f::x"
  dump "ck_$kind 300 y" 2 spread "$f" y "--chunk-samples 300 --seed 5" "$f::y"
  dump "ck_$kind io=collective" 3 spread "$f" x "--io collective --chunk-samples 700 --row-hash" "$f::x"
done
dump "ck_c shuffle=block" 2 spread "$fx/ck_c.npz" x \
  "--chunk-samples 2000 --shuffle block --block-size 50 --row-hash" "$fx/ck_c.npz::x"
dump "ck_c shuffle=none" 1 ordered "$fx/ck_c.npz" x \
  "--chunk-samples 3000 --shuffle none --shuffle-buffer 0 --row-hash" "$fx/ck_c.npz::x"
dump "ck_c max_open_files=1" 2 spread "$fx/ck_c.npz" x \
  "--chunk-samples 500 --max-open-files 1 --row-hash" "$fx/ck_c.npz::x"

# ---- Zip64: every size and offset through the Zip64 extra field ----------
dump "z64 x (stored)" 2 spread "$fx/z64.npz" x "--row-hash" "$fx/z64.npz::x"
dump "z64 y (deflated)" 3 spread "$fx/z64.npz" y "--row-hash" "$fx/z64.npz::y"

# ---- one sample per archive: a glob and an @list of parts ----------------
for kind in s c; do
  d=$fx/dlio_$kind
  parts=
  for k in 00 01 02 03 04 05; do parts="$parts $d/img_$k.npz::x"; done
  dump "dlio_$kind glob x" 2 spread "$d/img_*.npz" x "--chunk-samples 1 --batch-size 2 --row-hash" $parts
  ls "$d"/img_*.npz >"$d.list"
  yparts=`echo "$parts" | sed 's/::x/::y/g'`
  dump "dlio_$kind list y" 3 spread "@$d.list" y "--chunk-samples 1 --batch-size 1" $yparts
done
# ---- a saved manifest (the npz records travel as hex) read back ----------
if "$FERRY" info "$fx/ck_c.npz" --save-manifest "$tmp/ck_c.json" >"$tmp/save.log" 2>&1; then
  dump "ck_c --manifest" 2 spread "$fx/ck_c.npz" x "--manifest $tmp/ck_c.json --chunk-samples 900 --row-hash" "$fx/ck_c.npz::x"
  # The same manifest with y's data offset changed: refused by the record
  # check, never read at the wrong place.
  sed 's/"data_offset": 4747[0-9]*/"data_offset": 100/' "$tmp/ck_c.json" >"$tmp/ck_c_bad.json"
else
  echo "FAIL: ferry info --save-manifest"
  sed 's/^/    /' "$tmp/save.log"
  fail=1
fi

# ---- Zip64 beyond 4 GiB: a sparse archive whose member x is 4.1 GiB -----
# (stored, zeros but for its last rows) and whose member y lies after it,
# past the 4 GiB offset.  make_npz.py checks it with zipfile (x's last rows
# and CRC-32) and numpy.load (y) first.  FERRY_TEST_NPZ_BIG=no skips it.
big=$tmp/big.npz
if test "${FERRY_TEST_NPZ_BIG:-yes}" = no; then
  echo "note: FERRY_TEST_NPZ_BIG=no: the 4 GiB member is not tested"
elif "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_npz.py" --big "$big" >"$tmp/big.log" 2>&1; then
  echo "ok: make_npz.py --big wrote a 4.1 GiB member (`du -k "$big" | cut -f1` KiB on disk)"
  "$FERRY" info "$big" >"$tmp/big.info" 2>&1
  if grep '^samples *4200$' "$tmp/big.info" >/dev/null &&
     grep 'x: member x.npy, stored, 4.1 GiB at offset' "$tmp/big.info" >/dev/null &&
     grep 'y: member y.npy, stored, .* at offset 4404' "$tmp/big.info" >/dev/null; then
    echo "ok: ferry info reads the Zip64 sizes and offsets beyond 4 GiB"
  else
    echo "FAIL: ferry info on the 4 GiB archive"
    sed 's/^/    /' "$tmp/big.info"
    fail=1
  fi
  dump "big y (after 4 GiB)" 2 spread "$big" y "--vars y --chunk-samples 500 --row-hash" "$big::y"
else
  echo "FAIL: make_npz.py --big"
  sed 's/^/    /' "$tmp/big.log"
  fail=1
fi
dump_run

echo "checking $njobs dumps against numpy.load"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1
rm -f "$big"

# ---- ferry info: members, method, sizes -----------------------------------
"$FERRY" info "$fx/ck_c.npz" >"$tmp/info.out" 2>&1
if grep 'storage *x: member x.npy, deflate, 4.9 MiB -> .*, CRC-32 .*, checkpoints every 4096 rows' "$tmp/info.out" >/dev/null &&
   grep 'storage *y: member y.npy, deflate' "$tmp/info.out" >/dev/null &&
   "$FERRY" info "$fx/ck_s.npz" | grep 'storage *x: member x.npy, stored, 4.9 MiB at offset' >/dev/null; then
  echo "ok: ferry info shows members, methods and sizes"
else
  echo "FAIL: ferry info does not show the members"
  sed 's/^/    /' "$tmp/info.out"
  fail=1
fi

# ---- bad archives: one clear error on every rank -------------------------
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-30}
export FERRY_MPI_TIMEOUT
cat >"$tmp/rank.sh" <<'EOF'
d=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
test -n "$r" || r=unknown.$$
"$FERRY" "$@" >"$d/out.$r" 2>"$d/err.$r"
echo $? >"$d/status.$r"
EOF

# expect NP TEXT COMMAND ARGS...: every rank exits 1, rank 0 alone prints
# one 'ferry:' message, holding TEXT (a fixed string) and the file's name.
expect() {
  np=$1 t=$2
  shift 2
  what=`printf 'np=%s ferry %s' "$np" "$*" | sed "s|$fx|FX|g"`
  r=$tmp/r
  rm -rf "$r" && mkdir -p "$r" || exit 1
  $RUN_MPI "$np" sh "$tmp/rank.sh" "$r" "$@" >"$tmp/launcher.out" 2>&1
  st=$?
  why=
  case $st in
    0) ;;
    124|137) why="hung: killed after ${FERRY_MPI_TIMEOUT}s" ;;
    *) why="the launcher exited $st" ;;
  esac
  k=0
  while test -z "$why" && test $k -lt "$np"; do
    s=`cat "$r/status.$k" 2>/dev/null`
    if test "$s" != 1; then
      why="rank $k exited '$s', expected 1"
    elif test $k -gt 0 && test -s "$r/err.$k"; then
      why="rank $k printed: `head -3 "$r/err.$k"`"
    fi
    k=`expr $k + 1`
  done
  msg=`grep '^ferry:' "$r/err.0" 2>/dev/null`
  if test -z "$why"; then
    if test "`grep -c '^ferry:' "$r/err.0"`" != 1; then
      why="rank 0 printed `grep -c '^ferry:' "$r/err.0"` messages, not one"
    elif ! printf '%s\n' "$msg" | grep -F -e "$t" >/dev/null; then
      why="the message lacks '$t'"
    elif ! printf '%s\n' "$msg" | grep -F -e "$2" >/dev/null; then
      why="the message does not name $2"
    fi
  fi
  if test -n "$why"; then
    echo "FAIL: $what: $why"
    cat "$r"/err.* "$tmp/launcher.out" 2>/dev/null | sed 's/^/    /' | head -10
    fail=1
  else
    echo "ok: $what: `printf '%s' "$msg" | sed "s|$fx|FX|g"`"
  fi
}

b=$fx/bad
dumpopts="--epoch 0 --chunk-samples 500"
for np in 1 3; do
  expect $np "no end of central directory" info "$b/a1.npz"
  expect $np "end of central directory points outside" info "$b/a2.npz"
  expect $np "run past the end" info "$b/a3.npz"
  expect $np "compression method 12 is not read" info "$b/a4.npz"
  expect $np "is encrypted" info "$b/a5.npz"
  expect $np "CRC-32 mismatch" dump "$b/a6.npz" $dumpopts
  expect $np "corrupt deflate data" dump "$b/a7.npz" $dumpopts
  expect $np "multi-disk archives are not read" info "$b/a8.npz"
  expect $np "Fortran order" info "$fx/fortran.npz"
  expect $np "member readme.txt: is not a .npy array" info "$fx/notnpy.npz"
  expect $np "differ in length" info "$fx/ragged.npz"
  expect $np "npz record is missing or inconsistent" dump "$fx/ck_c.npz" --manifest "$tmp/ck_c_bad.json" --epoch 0
done
exit $fail
