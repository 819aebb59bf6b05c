#!/bin/sh
# mix.sh - several datasets read as one (src/dataset/mix.c, src/backends/mixread.c,
# docs/sampling.md "Mixing datasets: the specification"), on 1 and 3 ranks.
#
# Sources of different formats and sizes: a .npy directory written by
# `ferry gen` (50 samples), a big-endian glob of 3 .npy parts (30), and an
# HDF5 file written by h5py (23) whose variables have other names (map=),
# and a compressed Zarr store (41, decoded on 4 lanes, when zarr is there).
# A mix draws from its sources by proportion (tests/sampling/sampling.sh checks
# the proportions): every row `ferry dump --row-hash` of the mix serves must
# be the row of its source's own dump at that offset (every row's bytes, by
# hash),
# and the mapped HDF5 values must be the ones h5py wrote.  The mix file and
# the inline list give the same manifest (same hash: `ferry info --json`),
# a changed proportion or exhaust rule changes it, a saved manifest reads
# back the same rows, and `ferry info` shows the sources.  Each bad input
# (dtype mismatch, row-shape mismatch, a variable missing in a source, a
# bad proportion, a bad line, an unknown key, a nested mix) fails with
# status 1 on every rank and one message from rank 0 naming the problem;
# none hangs (run-mpi.sh bounds every job).
#
# Environment (set by "make check"): FERRY, RUN_MPI, PYTHON_NUMPY.
# Exit 0 pass, 1 fail, 77 skip (no h5py: the HDF5 source is written by it).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init mix
FERRY_MPI_TIMEOUT=${FERRY_MPI_TIMEOUT:-60}
export FERRY FERRY_MPI_TIMEOUT

have_h5=1
if ! "$FERRY" --version 2>/dev/null | grep '^backends:.* hdf5' >/dev/null; then
  have_h5=0
elif test -z "${PYTHON_NUMPY:-}" ||
     ! "$PYTHON_NUMPY" -c 'import h5py' >/dev/null 2>&1; then
  have_h5=0
fi
if test $have_h5 = 0; then
  echo "SKIP: no hdf5 backend or no h5py (PYTHON_NUMPY='${PYTHON_NUMPY:-}'): the HDF5 source is written by h5py"
  exit 77
fi

prog=`cd "${top_builddir:-.}" && pwd`/tests/sampling/test_mix_errors
cd "$tmp" || exit 1
"$FERRY" gen a --samples 50 --var x:float32:4 --var y:int64 >gen.log 2>&1 &&
  "$FERRY" gen b --samples 30 --var x:float32:4 --var y:int64 --parts 3 \
    --big-endian >>gen.log 2>&1 || { echo "FAIL: ferry gen"; cat gen.log; exit 1; }
"$PYTHON_NUMPY" - <<'EOF' || { echo "FAIL: h5py"; exit 1; }
import numpy as np, h5py
n = 23
with h5py.File('c.h5', 'w') as f:
    f['feat'] = (np.arange(n * 4).reshape(n, 4) % 7).astype('float32')
    f['label'] = np.arange(n, dtype='int64') * 3 + 1000
    f['wide'] = np.zeros((n, 5), dtype='float32')
    f['x'] = np.zeros((n, 4), dtype='float64')
    f['y'] = np.zeros((n,), dtype='int64')
    np.save('c_label.npy', f['label'][...])
EOF

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

cat >good.mix <<'EOF'
# three sources: npy, a big-endian npy glob, HDF5 with other names
a 1
b/part-* 2 exhaust=restart
c.h5   3   exhaust=drop map=x:feat,y:label
EOF
list="mix:a=1,b/part-*=2,c.h5=3"

# dump NP DATASET OUT [ARGS]: the rows served, sorted by global index, as
# "index first_value fnv".
dump() {
  np=$1 ds=$2 out=$3
  shift 3
  $RUN_MPI "$np" "$FERRY" dump "$ds" --shuffle none --tail partial \
    --batch-size 7 --row-hash "$@" >"$out.raw" 2>"$out.err" || return 1
  awk '{print $3, $4, $5}' "$out.raw" | sort -n >"$out"
}

# The sources alone, then concatenated with their offsets.
for v in x y; do
  dump 1 a src_a_$v --var $v || bad "dump a"
  dump 1 "b/part-*" src_b_$v --var $v || bad "dump b"
done
awk '{print $1 + 50, $2, $3}' src_b_x >b_x.off
awk '{print $1 + 50, $2, $3}' src_b_y >b_y.off
for np in 1 3; do
  for v in x y; do
    dump $np "mix:@good.mix" mix_$v.$np --var $v || {
      bad "np=$np mix dump of $v failed: `cat mix_$v.$np.err`"; continue; }
    # every row served is a source's own row (same index, value and
    # hash: big-endian swapped, byte for byte); a (stop) and c.h5 (drop)
    # never serve a row twice in an epoch; every row of a is served (the
    # epoch stops when a runs out)
    sort -u mix_$v.$np >mixu
    cat src_a_$v b_$v.off | sort >want80
    if test -z "`awk '$1 < 80' mixu | sort | comm -23 - want80`"; then
      ok "np=$np $v: the npy sources' rows are a's and b's own (big-endian swapped), byte for byte"
    else
      bad "np=$np $v: the mix serves rows that are not a's or b's"
    fi
    twice=`awk '$1 < 50 || $1 >= 80 {print $1}' mix_$v.$np | sort | uniq -d | wc -l`
    test "$twice" = 0 || bad "np=$np $v: $twice rows of a (stop) or c (drop) served twice"
    na=`awk '$1 < 50' mixu | wc -l`
    test "$na" -ge 49 || bad "np=$np $v: $na of a's 50 rows served before the epoch stopped"
  done
  # The HDF5 source, mapped: y is label (h5py's values), x is feat.
  awk '$1 >= 80 {print $1 - 80, $2}' mix_y.$np | sort -n -u >c_y
  "$PYTHON_NUMPY" -c '
import numpy as np, sys
want = np.load("c_label.npy")
got = [l.split() for l in open("c_y")]
assert len(got) > 0
for idx, val in got:
    assert int(val) == int(want[int(idx)]), (idx, val, want[int(idx)])
' && ok "np=$np: map=y:label serves h5py's label values as y" ||
    bad "np=$np: the mapped HDF5 values differ from h5py's"
done

# A compressed Zarr source read on decode lanes (threads=4: the zarr
# backend defers its decodes, the mix backend waits on them in io_wait):
# the mix's rows 50.. are the store's own rows, shuffled or not.
if "$PYTHON_NUMPY" -c 'import zarr' >/dev/null 2>&1; then
  "$PYTHON_NUMPY" - <<'EOF2' || bad "zarr fixture"
import numpy as np, zarr
g = zarr.open_group('e.zarr', mode='w')
g.create_dataset('x', data=(np.arange(41 * 4).reshape(41, 4) % 13).astype('float32'), chunks=(5, 4))
g.create_dataset('y', data=np.arange(41, dtype='int64') * 7, chunks=(7,))
EOF2
  dump 1 e.zarr src_e_x --var x --threads 4 || bad "dump e.zarr"
  awk '{print $1 + 50, $2, $3}' src_e_x >e_x.off
  cat src_a_x e_x.off | sort >want_ae
  for np in 1 3; do
    for sh in none chunks; do
      dump $np "mix:a=1,e.zarr=1" mix_ae.$np.$sh --var x --threads 4 \
        --shuffle $sh --seed 9 &&
        test -z "`sort -u mix_ae.$np.$sh | comm -23 - want_ae`" &&
        test -s mix_ae.$np.$sh &&
        ok "np=$np shuffle=$sh: a compressed Zarr source decoded on 4 lanes serves its own rows" ||
        bad "np=$np shuffle=$sh: the mix of a and e.zarr differs from their own rows: `cat mix_ae.$np.$sh.err`"
    done
  done
else
  echo "note: no zarr module in $PYTHON_NUMPY: the Zarr source is not tested"
fi

# The list, the file and the option give the same manifest: the saved
# manifests are the same but for the spec (which the hash leaves out; the
# records, proportions and rules included, are hashed: tests/unit/test_mix
# checks that a changed proportion or rule changes the hash).
printf 'a 1\nb/part-* 2\n' >ab.mix
m_of() {
  out=$1
  shift
  "$FERRY" info "$@" --save-manifest "$out.json" >/dev/null 2>"$out.err" &&
    grep -v '"spec":' "$out.json" >"$out"
}
m_of m1 "mix:@ab.mix" && m_of m2 "mix:a=1,b/part-*=2" &&
  m_of m3 "mix:a=1,b/part-*=3" && m_of m4 mix --mix "a=1,b/part-*=2" &&
  m_of m5 "mix:a=1,b/part-*=2" --mix-exhaust restart ||
  bad "ferry info --save-manifest of a mix failed: `cat m*.err`"
cmp -s m1 m2 && ok "the mix file and the inline list give the same manifest" ||
  bad "the mix file and the inline list give different manifests"
cmp -s m2 m4 && ok "the mix option gives the same manifest" ||
  bad "the mix option gives another manifest"
cmp -s m2 m3 && bad "a changed proportion kept the manifest's records" ||
  ok "a changed proportion changes the records"
cmp -s m2 m5 && bad "a changed exhaust rule kept the manifest's records" ||
  ok "a changed exhaust rule changes the records"

# A saved manifest reads back the same rows, also with a vars selection.
"$FERRY" info "mix:@good.mix" --save-manifest saved.json >/dev/null 2>&1 ||
  bad "ferry info --save-manifest of a mix"
# (draw_block fixed: its default, 256 KiB of a sample's rows, changes with
# the variables loaded, and with it the draws)
for np in 1 3; do
  dump $np "mix:@good.mix" saved_yb.$np --var y --draw-block 4 ||
    bad "np=$np: mix dump with draw_block=4"
  dump $np "mix:@good.mix" saved_y.$np --var y --manifest saved.json &&
    cmp -s saved_y.$np mix_y.$np && ok "np=$np: the saved manifest reads the same rows" ||
    bad "np=$np: the saved manifest read other rows: `cat saved_y.$np.err`"
  dump $np "mix:@good.mix" saved_yo.$np --var y --manifest saved.json --vars y \
    --draw-block 4 &&
    cmp -s saved_yo.$np saved_yb.$np && ok "np=$np: the saved manifest with vars=y" ||
    bad "np=$np: the saved manifest with vars=y read other rows: `cat saved_yo.$np.err`"
done

# ferry info shows the sources.
"$FERRY" info "mix:@good.mix" >info.txt 2>&1
if grep '^mix  *3 sources' info.txt >/dev/null &&
   grep '^  hdf5  *23  *0.5  *drop  *c.h5$' info.txt >/dev/null &&
   grep '^  npy  *30  *0.3333  *restart  *b/part-\*$' info.txt >/dev/null; then
  ok "ferry info lists the sources with backend, samples, proportion, rule"
else
  bad "ferry info does not show the mix:"; sed 's/^/    /' info.txt
fi

"$FERRY" info "mix:@good.mix" --json >info.json 2>&1
"$PYTHON_NUMPY" -c '
import json
d = json.load(open("info.json"))["mix"]
assert [s["path"] for s in d] == ["a", "b/part-*", "c.h5"], d
assert [s["backend"] for s in d] == ["npy", "npy", "hdf5"], d
assert [s["samples"] for s in d] == [50, 30, 23] and [s["first"] for s in d] == [0, 50, 80], d
assert [s["exhaust"] for s in d] == ["stop", "restart", "drop"], d
assert all(abs(s["proportion"] - p) < 1e-12 for s, p in zip(d, [1 / 6, 2 / 6, 3 / 6])), d
' && ok "ferry info --json lists the sources (key mix)" ||
  bad "ferry info --json of the mix: `cat info.json`"

# expect NP TEXT DATASET [ARGS]: every rank exits 1 (status files), rank 0
# prints one 'ferry:' message holding TEXT.
cat >rank.sh <<'EOF'
r=$1; shift
"$FERRY" "$@" >/dev/null 2>"$r.err.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
echo $? >"$r.st.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
EOF
k=0
expect() {
  np=$1 text=$2
  shift 2
  k=`expr $k + 1`
  $RUN_MPI "$np" sh rank.sh "e$k" info "$@" >launch.$k 2>&1
  st=$?
  case $st in 124|137) bad "np=$np ferry info $*: hung"; return ;; esac
  i=0 why=
  while test $i -lt "$np"; do
    test "`cat e$k.st.$i 2>/dev/null`" = 1 || why="rank $i exited `cat e$k.st.$i 2>/dev/null`"
    test $i -gt 0 && test -s "e$k.err.$i" && why="rank $i printed a message too"
    i=`expr $i + 1`
  done
  msgs=`grep -c '^ferry:' "e$k.err.0"`
  test "$msgs" = 1 || why="$why; rank 0 printed $msgs messages"
  grep -F -- "$text" "e$k.err.0" >/dev/null || why="$why; no '$text' in: `cat e$k.err.0`"
  if test -n "$why"; then bad "np=$np ferry info $*: $why"; else ok "np=$np: $text"; fi
}
printf 'a 1\nc.h5 1 map=y:label\n' >dtype.mix
printf 'a 1\nc.h5 1 map=x:wide,y:label\n' >shape.mix
printf 'a 1\nc.h5 1 map=x:feat,y:nothere\nb/part-* 1\n' >missing.mix
printf 'a 1\nb/part-* 0\n' >zero.mix
printf 'a 1\nb/part-*\n' >line.mix
printf 'a 1\nb/part-* 1 weight=2\n' >key.mix
printf 'a 1\nmix:@good.mix 1\n' >nested.mix
printf 'a 1\nb/part-* 1 exhaust=never\n' >rule.mix
for np in 1 3; do
  expect $np "mix: variable 'x' is float32 (4,) in a but float64 (4,) in c.h5" mix:@dtype.mix
  expect $np "mix: variable 'x' is float32 (4,) in a but float32 (5,) in c.h5" mix:@shape.mix
  expect $np "mix source 1 (c.h5): variable 'nothere' not found" mix:@missing.mix
  expect $np "mix file zero.mix, line 2: the proportion is not a positive finite number: '0'" mix:@zero.mix
  expect $np "mix list item 'b=nan': the proportion is not a positive finite number: 'nan'" "mix:a=1,b=nan"
  expect $np "mix file line.mix, line 2: expected 'PATH PROPORTION" mix:@line.mix
  expect $np "mix file key.mix, line 2: unknown or repeated key" mix:@key.mix
  expect $np "mix file nested.mix, line 2: a mix cannot be a source of a mix (nested mix): 'mix:@good.mix'" mix:@nested.mix
  expect $np "mix list item 'mix:a=1': a mix cannot be a source" "mix:mix:a=1"
  expect $np "exhaust is not stop, restart or drop: 'never'" mix:@rule.mix
  expect $np "mix list item 'b': no '=PROPORTION'" "mix:a=1,b"
done
# The same code and message on every rank, compared across ranks by
# tests/sampling/test_mix_errors (the tool prints rank 0's only).
if test -x "$prog"; then
  for np in 1 3; do
    if $RUN_MPI $np "$prog" \
        mix:@dtype.mix "is float32 (4,) in a but float64 (4,) in c.h5" \
        mix:@shape.mix "is float32 (4,) in a but float32 (5,) in c.h5" \
        mix:@missing.mix "variable 'nothere' not found" \
        mix:@zero.mix "line 2: the proportion" \
        mix:@line.mix "line 2: expected" \
        mix:@key.mix "line 2: unknown or repeated key" \
        mix:@nested.mix "nested mix" >errs.$np 2>&1; then
      ok "np=$np: every bad mix fails with the same message on every rank"
    else
      bad "np=$np: test_mix_errors:"; sed 's/^/    /' errs.$np
    fi
  done
else
  bad "no test program $prog (make check builds it)"
fi
# A mix cannot be read collectively (its sources read independently).
expect 1 "backend 'mix' has no collective reads" "mix:@good.mix" --io collective
exit $fail
