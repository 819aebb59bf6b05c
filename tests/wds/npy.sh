#!/bin/sh
# npy.sh - WebDataset .npy members served as their arrays (src/backends/tar.c
# and wds.c, docs/images.md, decision 0062), shards written by
# tests/wds/make_wds_npy.py with Python's tarfile and NumPy's write_array
# (WebDataset's TarWriter encoding):
#
#  - `ferry dump --row-hash` of every variable on 1 (in order), 2 and 3
#    ranks (shuffled), each sample's values checked against NumPy's
#    (tests/fixtures/dump_compare.py), the variables' plans aligned: npy
#    float32 (3, 4) dense, seg.npy int32 and box.npy float32 (n, 4) ragged,
#    s.npy 0-d scalars, be.npy big-endian, tail.npy (3,) in two shards and
#    (5,) in the third (ragged: settled over every shard), long.npy behind
#    a 100,000-byte header (past the scan's read window);
#  - ferry info: the dtypes, byte orders and shapes;
#  - a saved manifest serves the samples of a scan; one saved with the
#    records' version 1 (npy members as bytes) is refused;
#  - scan=ranks on 2 and 3 ranks saves the manifest of rank 0's scan, byte
#    for byte (tail.npy ragged though each rank saw one shape);
#  - missing=seg.npy= an empty sample; missing=s.npy= (0-d) refused;
#  - bad shards (mixed dtypes, Fortran order, object dtype, shapes that
#    differ after the first dimension or in their number, empty rows, a
#    header length past the member or past the limit, values past the
#    member, not a .npy file) refused naming the shard, member and offset,
#    on 1 and 3 ranks; two shards of different dtypes refused.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no NumPy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init wdsnpy
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the shards are written by NumPy"
  exit 77
fi
fx=$tmp/fx
"$PYTHON_NUMPY" "$top_srcdir/tests/wds/make_wds_npy.py" "$fx" >"$tmp/make.log" 2>&1 || {
  failed "make_wds_npy.py" "$tmp/make.log"
  exit 1
}
ok "`cat "$tmp/make.log"`"
g=$fx/good
r=$fx/ref

# ---- dumps against NumPy's arrays ----------------------------------------
BATCH=4
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
refs() { # refs EXT SUFFIX: the reference of every shard, in order
  for k in 0 1 2; do
    printf '%s ' "$r/shard-00000$k.$1$2"
  done
}
for var in npy seg.npy box.npy s.npy be.npy tail.npy long.npy cls; do
  case $var in
    seg.npy | box.npy | tail.npy) suf=.npz::ragged ;;
    *) suf=.npy ;;
  esac
  plan=
  test $var = npy || plan=",plan=npy-ordered np=1"
  dump_queue "" "$var-ordered" 1 "ordered$plan" "$g" $var \
    "--shuffle none --shuffle-buffer 0 --chunk-samples 7" `refs $var $suf`
  test $var = npy || plan=",plan=npy-dir np=3"
  dump_queue "" "$var-dir" 3 "spread$plan" "$g" $var \
    "--seed 4 --chunk-samples 5 --threads 2" `refs $var $suf`
  test $var = npy || plan=",plan=npy-glob np=2"
  dump_queue "" "$var-glob" 2 "spread$plan" "$g/shard-*.tar" $var \
    "--seed 5 --shuffle block --block-size 3" `refs $var $suf`
done
dump_run
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" || fail=1

# ---- ferry info ---------------------------------------------------------
"$FERRY" info "$g" >"$tmp/info.out" 2>&1 || failed "ferry info" "$tmp/info.out"
n=0
for want in 'npy  *float32  *little (50, 3, 4) ' \
  'seg.npy  *int32  *little (50, \*) ' \
  'box.npy  *float32  *little (50, \*, 4) ' \
  's.npy  *float64  *little (50,) ' \
  'be.npy  *float64  *big  *(50, 2, 3) ' \
  'tail.npy  *int16  *little (50, \*) ' \
  'long.npy  *uint8  *n/a  *(50, 2) ' \
  'storage  *npy: tar members \*.npy: NumPy arrays'; do
  if grep "^ *$want" "$tmp/info.out" >/dev/null; then
    n=`expr $n + 1`
  else
    failed "ferry info: no line '$want'" "$tmp/info.out"
  fi
done
test $n = 8 && ok "ferry info: dense (3, 4), 0-d, big-endian, ragged (n,) and (n, 4), tail.npy ragged over the shards"

# ---- a saved manifest ---------------------------------------------------
"$FERRY" info "$g" --save-manifest "$tmp/m.json" >"$tmp/sm.out" 2>&1 ||
  failed "ferry info --save-manifest" "$tmp/sm.out"
for var in npy box.npy; do
  for how in scan manifest; do
    m=
    test $how = manifest && m="--manifest $tmp/m.json"
    $RUN_MPI 2 "$FERRY" dump "$g" $m --var $var --epoch 0 --row-hash \
      --tail partial --seed 3 >"$tmp/sm.$var.$how" 2>&1 ||
      failed "dump $var by $how" "$tmp/sm.$var.$how"
  done
  if test -s "$tmp/sm.$var.scan" && cmp -s "$tmp/sm.$var.scan" "$tmp/sm.$var.manifest"; then
    ok "a saved manifest serves the $var samples of a scan, on 2 ranks"
  else
    failed "a saved manifest's $var samples differ from a scan's" "$tmp/sm.$var.manifest"
  fi
done
sed 's/"record_version": *2/"record_version": 1/' "$tmp/m.json" >"$tmp/v1.json"
cp "$tmp/m.json.roff" "$tmp/v1.json.roff"
expect_refusal -l "a manifest saved with records of version 1" -n "$tmp/v1.json" 1 \
  "version 1|reads version 2|scan the dataset again" \
  "$FERRY" dump "$g" --manifest "$tmp/v1.json" --var npy --epoch 0

# ---- the scan shared out: the finish after the shares --------------------
"$FERRY" info "$g" --scan rank0 --save-manifest "$tmp/ps1.json" \
  >"$tmp/ps1.out" 2>&1 || failed "ferry info --scan rank0" "$tmp/ps1.out"
sed 's/ps1.json.roff/X/' "$tmp/ps1.json" >"$tmp/ps1.sed"
for np in 2 3; do
  $RUN_MPI $np "$FERRY" info "$g" --save-manifest "$tmp/ps$np.json" \
    >"$tmp/ps$np.out" 2>&1 || failed "ferry info on $np ranks" "$tmp/ps$np.out"
  sed "s/ps$np.json.roff/X/" "$tmp/ps$np.json" >"$tmp/ps$np.sed"
  if test -s "$tmp/ps1.sed" && cmp -s "$tmp/ps1.sed" "$tmp/ps$np.sed" &&
    cmp -s "$tmp/ps1.json.roff" "$tmp/ps$np.json.roff"; then
    ok "scan=ranks on $np ranks: the manifest of rank 0's scan, byte for byte"
  else
    failed "scan=ranks on $np ranks: another manifest than rank 0's scan" "$tmp/ps$np.json"
  fi
done

# ---- missing= -----------------------------------------------------------
if "$FERRY" dump "$fx/miss.tar" --vars seg.npy,cls --var seg.npy \
     --missing seg.npy= --epoch 0 --tail partial --shuffle none \
     --shuffle-buffer 0 --row-hash >"$tmp/miss.out" 2>&1 &&
   test "`awk '{print $3, $4, $5}' "$tmp/miss.out" | tr '\n' ' '`" = "0 0 len=1 1 - len=0 2 0 len=3 "; then
  ok "missing=seg.npy= serves sample k1 without a seg.npy as an empty one"
else
  failed "missing=seg.npy=" "$tmp/miss.out"
fi
expect_refusal -l "missing=s.npy= (0-d arrays)" -n "s.npy=" 1 "0-d" \
  "$FERRY" info "$fx/miss.tar" --vars s.npy --missing s.npy=

# ---- bad shards ----------------------------------------------------------
tab=`printf '\t'`
while IFS=$tab read -r shard words; do
  for np in 1 3; do
    expect_refusal -l "`basename "$shard"` np=$np" -n "$shard" 1 "$words" \
      $RUN_MPI $np "$FERRY" dump "$shard" --epoch 0 --batch-size 5
  done
done <"$fx/bad/list.txt"
expect_refusal -l "two shards of different dtypes" -n "$fx/bad2/shard-000001.tar" 1 \
  "variable 'npy'|float64|float32|shard-000000.tar" \
  $RUN_MPI 2 "$FERRY" dump "$fx/bad2" --epoch 0
exit $fail
