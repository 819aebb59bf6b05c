#!/bin/sh
# megatron.sh - ragged variables end to end on Megatron-LM indexed datasets
# (src/backends/megatron.c, docs/ragged.md), written by
# tests/fixtures/make_megatron.py (Megatron's bytes, read back the way
# Megatron's own reader reads them): int32 tokens with empty sequences,
# uint16, uint8, int64 with a multimodal index, float32, a directory of
# three parts, a dataset whose every sample is empty, one huge sequence.
#
#  - `ferry dump --row-hash` over 1 (in order), 2 and 3 ranks (shuffled),
#    sequences and documents (megatron_sample=document): every sample's
#    length (len=N) and all of its values checked against the values the
#    writer drew (tests/fixtures/dump_compare.py, FILE.npz::ragged); the
#    same for two corpora written by Megatron-LM's own builder
#    (tests/ragged/megatron-testing/), against a NumPy reader of their
#    index;
#  - tests/ragged/test_ragged on 7 ranks: the batch layout (offsets,
#    nvalues, max_len), exactly once for each tail, equal batch counts on
#    1, 2, 3, 4 and 7 ranks, the same batches with 1 and 4 threads, and a
#    checkpoint resumed on 2, 3, 4 and 7 ranks;
#  - `ferry info` names the ragged variable, its lengths and the slot;
#  - `ferry gen --format megatron` checked by `ferry verify` on 3 ranks,
#    with weighted sampling and a subset of chunks too, and a changed
#    token caught; max_tokens batches (with buckets and pad=max too) on 3
#    ranks, on the all-empty and the huge datasets, and its refusals (a
#    sample over the budget, mix_by=batch, no ragged variable), and with
#    weighted sampling and a mix (ferry verify's sampling check);
#  - corrupt indexes (bad magic, version, dtype code, counts, sizes, a
#    negative length, a gap between sequences, a .bin shorter than the
#    index says, bad document indices) and what is not served for ragged
#    variables yet (shuffle=global, a mix of a ragged and a dense source)
#    are refused with one message on 1 rank, and a few of
#    them on 3, no hang;
#  - io=mmap (the values mapped from the .bin) and io=collective (MPI-IO
#    reads, every rank together): the samples of io=independent on 1 and 3
#    ranks (pad=max, token batches with buckets), ferry verify's content
#    check of a `ferry gen` corpus on 3 ranks;
#  - a mix of two ragged corpora on 1 and 3 ranks: every draw equal to its
#    source's sample (length and values), ferry verify on 3 ranks;
#  - a saved manifest keeps the offsets in PATH.roff: the same samples with
#    it as with a scan, on 1 and 3 ranks; that file changed, another
#    manifest's, or missing: refused.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# PYTHON_NUMPY, FERRY_TEST_TMPDIR, top_srcdir, top_builddir.
# Exit 0 pass, 1 fail, 77 skip (no NumPy).

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init megatron
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixtures are written by NumPy"
  exit 77
fi
if ! "$FERRY" --version | grep '^backends:.* megatron' >/dev/null; then
  echo "FAIL: ferry --version does not list the megatron backend"
  exit 1
fi
fx=$tmp/fx
mkdir -p "$fx/parts"
mk() {
  "$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_megatron.py" "$@" \
    >>"$tmp/make.log" 2>&1 || {
    failed "make_megatron.py $*" "$tmp/make.log"
    exit 1
  }
}
mk "$fx/i32" --docs 60 --empty 4 --seed 1
mk "$fx/u16" --dtype uint16 --docs 80 --mean 20 --seed 2
mk "$fx/u8" --dtype uint8 --docs 40 --mean 100 --seed 3
mk "$fx/i64" --dtype int64 --docs 30 --multimodal --seed 4
mk "$fx/f32" --dtype float32 --docs 25 --sigma 0.3 --seed 5
mkdir -p "$fx/ref"
for k in 0 1 2; do
  mk "$fx/parts/shard_0$k" --docs `expr 10 + 7 \* $k` --seed `expr 10 + $k`
  mv "$fx/parts/shard_0$k.seq.npz" "$fx/parts/shard_0$k.doc.npz" "$fx/ref/"
done
mk "$fx/empty" --docs 5 --seqs-per-doc 1 --empty 100 --seed 6
mk "$fx/huge" --docs 3 --seqs-per-doc 1 --mean 30000 --sigma 0.01 --seed 7
mk "$fx/bad" --bad --seed 8
ok "make_megatron.py wrote `grep -c tokens "$tmp/make.log"` datasets and `wc -l <"$fx/bad.bad.txt"` corrupt ones"

# ---- dumps against the writer's values ------------------------------------
BATCH=6
common="--epoch 0 --tail partial --batch-size $BATCH --row-hash"
jobs=$tmp/jobs
: >"$jobs"
njobs=0
export FERRY
i=0
for name in i32 u16 u8 i64 f32 empty huge; do
  for unit in seq doc; do
    i=`expr $i + 1`
    opts="--megatron-sample `test $unit = seq && echo sequence || echo document`"
    ref=$fx/$name.$unit.npz::ragged
    dump_queue "" "$name $unit ordered" 1 ordered "$fx/$name.idx" tokens \
      "$opts --shuffle none --shuffle-buffer 0 --chunk-samples 7" "$ref"
    np=`expr 2 + $i % 2`
    flags=spread
    case $name in huge|empty) flags=- ;; esac
    dump_queue "" "$name $unit shuffled" $np $flags "$fx/$name.idx" tokens \
      "$opts --seed $i --chunk-samples 5 --threads 3" "$ref"
  done
done
dump_queue "" "parts dir" 3 spread "$fx/parts" tokens \
  "--seed 4 --chunk-samples 9" "$fx/ref/shard_00.seq.npz::ragged" \
  "$fx/ref/shard_01.seq.npz::ragged" "$fx/ref/shard_02.seq.npz::ragged"
dump_queue "" "parts glob, documents" 2 spread "$fx/parts/shard_0*.bin" tokens \
  "--seed 5 --megatron-sample document" "$fx/ref/shard_00.doc.npz::ragged" \
  "$fx/ref/shard_01.doc.npz::ragged" "$fx/ref/shard_02.doc.npz::ragged"
# Megatron-LM's own test corpora (tests/ragged/megatron-testing/README.md),
# against a NumPy reader of their index
mt=$top_srcdir/tests/ragged/megatron-testing
for name in test fim; do
  "$PYTHON_NUMPY" - "$mt/${name}_text_document" "$fx/mt_$name" "$top_srcdir" <<'PY' || { failed "the reference of Megatron-LM's $name corpus"; exit 1; }
import os, struct, sys
import numpy as np
sys.path.insert(0, os.path.join(sys.argv[3], "tests", "fixtures"))
from ragged_ref import ragged_ref
prefix, out = sys.argv[1:3]
idx = open(prefix + ".idx", "rb").read()
assert idx[:9] == b"MMIDIDX\x00\x00" and struct.unpack("<Q", idx[9:17])[0] == 1
dt = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
      6: np.float64, 7: np.float32, 8: np.uint16}[idx[17]]
n, nd = struct.unpack("<QQ", idx[18:34])
sizes = np.frombuffer(idx, np.int32, n, 34)
ptrs = np.frombuffer(idx, np.int64, n, 34 + 4 * n)
docs = np.frombuffer(idx, np.int64, nd, 34 + 12 * n)
data = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r")
seqs = [np.frombuffer(data, dt, int(sizes[i]), int(ptrs[i])) for i in range(n)]
ragged_ref(out + ".seq.npz", seqs, dt)
ragged_ref(out + ".doc.npz", [np.concatenate(seqs[docs[j]:docs[j + 1]])
                              for j in range(nd - 1)], dt)
PY
  for unit in seq doc; do
    opts="--megatron-sample `test $unit = seq && echo sequence || echo document`"
    dump_queue "" "Megatron-LM's $name $unit ordered" 1 ordered \
      "$mt/${name}_text_document.idx" tokens \
      "$opts --shuffle none --shuffle-buffer 0" "$fx/mt_$name.$unit.npz::ragged"
    dump_queue "" "Megatron-LM's $name $unit shuffled" 3 spread \
      "$mt/${name}_text_document.idx" tokens \
      "$opts --seed 3 --chunk-samples 40" "$fx/mt_$name.$unit.npz::ragged"
  done
done
dump_run
echo "checking $njobs dumps against the values make_megatron.py drew and Megatron-LM's corpora"
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/dump_compare.py" "$jobs" \
  >"$tmp/compare.out" 2>&1 || fail=1
grep -c '^ok' "$tmp/compare.out" | sed 's/^/ok: dumps equal to the writer'"'"'s values: /'
grep -v '^ok' "$tmp/compare.out"

# ---- the promises, on 1 to 7 ranks ---------------------------------------
if $RUN_MPI 7 "$top_builddir/tests/ragged/test_ragged" "$fx/i32" "$tmp" \
     >"$tmp/test_ragged.out" 2>&1; then
  ok "`tail -1 "$tmp/test_ragged.out"`"
else
  failed "test_ragged on 7 ranks" "$tmp/test_ragged.out"
fi

# ---- ferry info -----------------------------------------------------------
if "$FERRY" info "$fx/i32.idx" --batch-size 4 >"$tmp/info.out" 2>&1 &&
   grep '^  tokens  *int32  *little (.*, \*)' "$tmp/info.out" >/dev/null &&
   grep '^ragged  *tokens: lengths 0 to [0-9]* (mean [0-9.]*), [0-9]* rows of 4 bytes; a batch slot holds [0-9]* rows (the 4 longest samples)' \
     "$tmp/info.out" >/dev/null; then
  ok "ferry info: `grep '^ragged' "$tmp/info.out"`"
else
  failed "ferry info should show the ragged variable and its lengths" "$tmp/info.out"
fi
# the slot: the 4 longest sequences, from the writer's own lengths
want=`"$PYTHON_NUMPY" -c "
import numpy as np, sys
o = np.load(sys.argv[1])['offsets']
print(int(np.sort(np.diff(o))[-4:].sum()))" "$fx/i32.seq.npz"`
if grep "a batch slot holds $want rows" "$tmp/info.out" >/dev/null; then
  ok "the batch slot holds the 4 longest samples' $want rows"
else
  failed "the batch slot should hold $want rows" "$tmp/info.out"
fi
# a token budget below that caps the slot, and the budget says so
cap=`expr $want - 1`
if "$FERRY" info "$fx/i32.idx" --batch-size 4 --max-tokens $cap >"$tmp/info2.out" 2>&1 &&
   grep "a batch slot holds $cap rows (max_tokens)" "$tmp/info2.out" >/dev/null; then
  ok "max_tokens=$cap caps the slot: `grep '^ragged' "$tmp/info2.out" | cut -c1-110`"
else
  failed "max_tokens=$cap should cap the batch slot" "$tmp/info2.out"
fi

# ---- ferry gen --format megatron, checked by ferry verify -----------------
if "$FERRY" gen "$tmp/gen" --format megatron --samples 3000 --mean-len 40 \
     --var tokens:uint16 --seed 5 >"$tmp/gen.out" 2>&1 &&
   $RUN_MPI 3 "$FERRY" verify "$tmp/gen" --batch-size 16 --tail pad \
     --shuffle block --block-size 8 --epochs 1 >"$tmp/verify.out" 2>&1 &&
   grep '^PASS content .*3024 samples' "$tmp/verify.out" >/dev/null &&
   grep '^ferry verify: PASS' "$tmp/verify.out" >/dev/null; then
  ok "ferry gen --format megatron, ferry verify on 3 ranks: `grep '^PASS content' "$tmp/verify.out"`"
else
  failed "ferry gen --format megatron then ferry verify" "$tmp/verify.out"
  cat "$tmp/gen.out"
fi
# weighted sampling (weights from a .npy) and a subset of the chunks over a
# ragged corpus: every served sample's tokens checked by verify
"$PYTHON_NUMPY" -c "
import numpy as np, sys
np.save(sys.argv[1], (np.arange(3000) % 5).astype(np.float32))" "$tmp/w.npy"
for o in "--weights $tmp/w.npy --draw-block 8" "--max-chunks 5 --chunk-samples 64"; do
  # $o: loader options, split on purpose
  if $RUN_MPI 2 "$FERRY" verify "$tmp/gen" --batch-size 8 --epochs 1 $o \
       >"$tmp/verify3.out" 2>&1 &&
     grep '^PASS content' "$tmp/verify3.out" >/dev/null; then
    ok "ferry verify $o on 2 ranks: `grep '^PASS content' "$tmp/verify3.out"`"
  else
    failed "ferry verify $o of a ragged corpus" "$tmp/verify3.out"
  fi
done
# max_tokens: batches within the budget, equal counts, every sample once,
# with buckets and pad=max too (ferry verify's batches and content checks)
for o in "--max-tokens 600 --batch-size 64 --tail partial" \
         "--max-tokens 900 --batch-size 40 --bucket-window 200 --pad max --tail pad" \
         "--max-tokens 600 --batch-size 64 --weights $tmp/w.npy --tail partial" \
         "--max-tokens 900 --batch-size 40 --weights $tmp/w.npy --bucket-window 200"; do
  if $RUN_MPI 3 "$FERRY" verify "$tmp/gen" --epochs 2 $o >"$tmp/verify4.out" 2>&1 &&
     grep '^PASS batches' "$tmp/verify4.out" >/dev/null &&
     grep '^PASS content .*samples' "$tmp/verify4.out" >/dev/null &&
     grep '^ferry verify: PASS' "$tmp/verify4.out" >/dev/null &&
     case $o in *weights*) grep '^PASS sampling' "$tmp/verify4.out" >/dev/null ;; esac; then
    ok "ferry verify $o on 3 ranks: `grep '^PASS batches' "$tmp/verify4.out" | head -1 | cut -c1-100`"
  else
    failed "ferry verify $o of a ragged corpus" "$tmp/verify4.out"
  fi
done
# every sample empty, and three huge ones: budgets that hold them
for c in "empty 3" "huge 100000"; do
  set -- $c
  if $RUN_MPI 2 "$FERRY" verify "$fx/$1.idx" --epochs 1 --batch-size 4 \
       --max-tokens $2 --tail partial >"$tmp/verify5.out" 2>&1 &&
     grep '^ferry verify: PASS' "$tmp/verify5.out" >/dev/null; then
    ok "ferry verify --max-tokens $2 of $1 on 2 ranks: `grep '^PASS exactly' "$tmp/verify5.out" | cut -c1-90`"
  else
    failed "ferry verify --max-tokens $2 of $1" "$tmp/verify5.out"
  fi
done
# a budget below the huge sequences, max_tokens with weights, without a
# ragged variable, bucket_window alone: refused on both ranks, one message
big=`"$PYTHON_NUMPY" -c "
import numpy as np, sys
print(int(np.diff(np.load(sys.argv[1])['offsets']).max()))" "$fx/huge.seq.npz"`
for c in "$fx/huge.idx|--max-tokens 20000|rows of variable 'tokens', more than max_tokens=20000 (3 samples are; the longest has $big)" \
         "mix:$fx/i32.idx=0.7,$fx/i32.idx=0.3|--max-tokens 500 --mix-by batch|use mix_by=epoch" \
         "$tmp/gen|--bucket-window 8|applies with max_tokens only" \
         "mem:N=10,vars=x:float32|--max-tokens 8|has no ragged variable"; do
  d=`echo "$c" | cut -d'|' -f1`
  o=`echo "$c" | cut -d'|' -f2`
  w=`echo "$c" | cut -d'|' -f3`
  $RUN_MPI 2 "$FERRY" info "$d" $o >"$tmp/tokref.out" 2>&1
  st=$?
  if test $st != 0 && test `grep -c "$w" "$tmp/tokref.out"` -ge 1 &&
     ! grep -i 'internal\|assert' "$tmp/tokref.out" >/dev/null; then
    ok "refused ($o): `grep -m1 "$w" "$tmp/tokref.out" | cut -c1-140`"
  else
    failed "$o on $d should be refused with '$w' (status $st)" "$tmp/tokref.out"
  fi
done
# a token changed in the .bin: verify names the sample and the element
"$PYTHON_NUMPY" -c "
import sys
p = sys.argv[1] + '/corpus.bin'
b = bytearray(open(p, 'rb').read()); b[2 * 1001] ^= 1
open(p, 'wb').write(b)" "$tmp/gen"
$RUN_MPI 2 "$FERRY" verify "$tmp/gen" --batch-size 16 --epochs 1 >"$tmp/verify2.out" 2>&1
st=$?
if test $st = 3 && grep '^FAIL content .*element' "$tmp/verify2.out" >/dev/null; then
  ok "a changed token: `grep '^FAIL content' "$tmp/verify2.out" | cut -c1-150`"
else
  failed "ferry verify should find the changed token (status $st, not 3)" "$tmp/verify2.out"
fi

# ---- io=mmap: the values mapped from the .bin ---------------------------------
for np in 1 3; do
  run="$RUN_MPI $np"
  test "$np" = 1 && run=
  if $run "$FERRY" dump "$fx/i32.idx" --row-hash --seed 6 --batch-size 5 \
       --io independent >"$tmp/mm.read" 2>&1 &&
     $run "$FERRY" dump "$fx/i32.idx" --row-hash --seed 6 --batch-size 5 \
       --io mmap >"$tmp/mm.map" 2>&1 && test -s "$tmp/mm.map" &&
     cmp -s "$tmp/mm.read" "$tmp/mm.map" &&
     $run "$FERRY" dump "$fx/i32.idx" --row-hash --seed 6 --batch-size 5 \
       --io mmap --pad max >"$tmp/mm.pad" 2>&1; then
    ok "io=mmap on $np rank(s): the samples of io=independent (`wc -l <"$tmp/mm.map"` rows), pad=max too"
  else
    failed "io=mmap on $np rank(s) should serve the samples of io=independent" "$tmp/mm.map"
  fi
done
"$FERRY" gen "$tmp/genm" --format megatron --samples 2000 --mean-len 30 \
  --var tokens:uint16 --seed 8 >/dev/null 2>&1 ||
  failed "ferry gen --format megatron (for io=mmap)"
expect_verify 3 "$tmp/genm" --io mmap --batch-size 16

# ---- io=collective: MPI-IO reads of the values, every rank together ----------
# (the loader's rounds: a rank with fewer extents on a part joins with empty
# reads) -- the samples of io=independent on 1 and 3 ranks, token batches
# with buckets and pad=max too
for np in 1 3; do
  run="$RUN_MPI $np"
  test "$np" = 1 && run=
  for o in "--batch-size 5 --tail partial" \
           "--max-tokens 400 --batch-size 16 --bucket-window 12 --pad max"; do
    if $run "$FERRY" dump "$fx/i32.idx" --row-hash --seed 6 $o \
         --io independent >"$tmp/co.read" 2>&1 &&
       $run "$FERRY" dump "$fx/i32.idx" --row-hash --seed 6 $o \
         --io collective >"$tmp/co.coll" 2>&1 && test -s "$tmp/co.coll" &&
       cmp -s "$tmp/co.read" "$tmp/co.coll"; then
      ok "io=collective on $np rank(s) $o: the samples of io=independent (`wc -l <"$tmp/co.coll"` rows)"
    else
      failed "io=collective on $np rank(s) $o should serve the samples of io=independent" "$tmp/co.coll"
    fi
  done
done
expect_verify 3 "$tmp/genm" --io collective --batch-size 16 --max-tokens 600

# ---- a mix of ragged datasets ------------------------------------------------
# two int32 corpora drawn 0.7 / 0.3 on 1 and 3 ranks: every sample drawn
# (its length and the hash of all its values) equal to its source's sample
mk "$fx/i32b" --docs 25 --mean 50 --seed 11
mixspec="mix:$fx/i32.idx=0.7,$fx/i32b.idx=0.3"
mix_ok=1
for src in i32 i32b; do
  "$FERRY" dump "$fx/$src.idx" --row-hash --shuffle none --shuffle-buffer 0 \
    --tail partial --batch-size 7 >"$tmp/mixsrc.$src" 2>"$tmp/mix.err" || mix_ok=0
done
for np in 1 3; do
  run="$RUN_MPI $np"
  test "$np" = 1 && run=
  if test $mix_ok = 1 &&
     $run "$FERRY" dump "$mixspec" --row-hash --batch-size 5 --seed 4 \
       >"$tmp/mix.$np" 2>"$tmp/mix.err" &&
     "$PYTHON_NUMPY" - "$tmp/mixsrc.i32" "$tmp/mixsrc.i32b" "$tmp/mix.$np" \
       >"$tmp/mixcheck" 2>&1 <<'PY'
import sys
def rows(p):  # global index -> (len=, fnv=)
    out = {}
    for l in open(p):
        f = l.split()
        out[int(f[2])] = (f[4], f[-1])
    return out
a, b, got = rows(sys.argv[1]), rows(sys.argv[2]), []
for l in open(sys.argv[3]):
    f = l.split()
    got.append((int(f[2]), f[4], f[-1]))
n = len(a)
bad = [g for g, ln, h in got if (a.get(g) if g < n else b.get(g - n)) != (ln, h)]
drawn = {g < n for g, _, _ in got}
print("%d draws, %d from the second source" % (len(got), sum(g >= n for g, _, _ in got)))
sys.exit(1 if bad or not got or drawn != {True, False} else 0)
PY
  then
    ok "a mix of two ragged corpora on $np rank(s): `cat "$tmp/mixcheck"`, each equal to its source's sample"
  else
    failed "a mix of two ragged corpora on $np rank(s)" "$tmp/mixcheck"
  fi
done
for o in "--batch-size 8" "--max-tokens 400 --batch-size 16"; do
  if $RUN_MPI 3 "$FERRY" verify "$mixspec" --epochs 1 $o \
       >"$tmp/verify.out" 2>&1 &&
     grep '^PASS sampling' "$tmp/verify.out" >/dev/null &&
     grep '^PASS batches' "$tmp/verify.out" >/dev/null &&
     grep '^PASS determinism' "$tmp/verify.out" >/dev/null; then
    ok "ferry verify $o of the mix on 3 ranks: `grep '^PASS sampling' "$tmp/verify.out" | cut -c1-100`"
  else
    failed "ferry verify $o of the mix of ragged corpora on 3 ranks" "$tmp/verify.out"
  fi
done

# ---- refusals -------------------------------------------------------------
refusals() {
  np=$1
  run="$RUN_MPI $np"
  test "$np" = 1 && run= # a singleton: no launcher to start
  tab=`printf '\t'`
  while IFS=$tab read -r path opts words; do
    # on 3 ranks, one index of each kind of check (rank 0 reads the index
    # and every rank fails with its message: the same path for all)
    case $np:$path in 3:*_magic.idx|3:*_truncated.idx|3:*_docs.idx|1:*) ;;
      *) continue ;;
    esac
    test "$opts" = - && opts=
    # $opts: loader options, split on purpose
    expect_refusal -l "`basename "$path"` np=$np" -n "$path" 1 "$words" \
      $run "$FERRY" dump "$path" --batch-size 3 $opts
  done <"$fx/bad.bad.txt"
  expect_refusal -l "shuffle=global np=$np" 1 "ragged|shuffle=global" \
    $run "$FERRY" dump "$fx/u16.idx" --shuffle global
  expect_refusal -l "mix of ragged and dense np=$np" 1 "ragged|mix|must agree" \
    $run "$FERRY" dump "mix:@$tmp/mixrd.txt"
}
"$PYTHON_NUMPY" -c "import numpy as np; np.save('$tmp/dense.npy', np.zeros((9, 3), np.int32))"
printf '%s 0.5\n%s 0.5 map=tokens:dense\n' "$fx/i32.idx" "$tmp/dense.npy" >"$tmp/mixrd.txt"
in_lanes refusals 1 3
# ---- a saved manifest holds the offsets ----------------------------------------
# (PATH.roff beside it): the same samples with it as without, on 1 and 3
# ranks; its offsets' file missing, changed or another manifest's refused
saved_same() { # NP: the same samples with the saved manifest as by a scan
  $RUN_MPI $1 "$FERRY" dump "$fx/i32.idx" --row-hash --seed 3 --batch-size 5 \
    >"$tmp/scan.$1" 2>&1 &&
  $RUN_MPI $1 "$FERRY" dump "$fx/i32.idx" --manifest "$tmp/m.json" \
    --row-hash --seed 3 --batch-size 5 >"$tmp/saved.$1" 2>&1 &&
  test -s "$tmp/scan.$1" &&
  test "`sort "$tmp/scan.$1"`" = "`sort "$tmp/saved.$1"`"
}
if "$FERRY" info "$fx/i32.idx" --save-manifest "$tmp/m.json" >"$tmp/save.out" 2>&1 &&
   test -s "$tmp/m.json.roff"; then
  ok "a saved manifest of a ragged dataset: its offsets in m.json.roff (`wc -c <"$tmp/m.json.roff"` bytes)"
else
  failed "ferry info --save-manifest of a ragged dataset" "$tmp/save.out"
fi
for np in 1 3; do
  if saved_same $np; then
    ok "the saved manifest serves the samples of a scan on $np rank(s)"
  else
    failed "the saved manifest should serve the samples of a scan on $np rank(s)" "$tmp/saved.$np"
  fi
done
if "$FERRY" info "$fx/i32.idx" --manifest "$tmp/m.json" >"$tmp/minfo.out" 2>&1 &&
   grep '^ragged  *tokens: lengths' "$tmp/minfo.out" >/dev/null; then
  ok "ferry info with the saved manifest: `grep '^ragged' "$tmp/minfo.out" | cut -c1-80`"
else
  failed "ferry info with the saved manifest should show the ragged variable" "$tmp/minfo.out"
fi
cp "$tmp/m.json.roff" "$tmp/m.keep"
"$PYTHON_NUMPY" -c '
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[40] ^= 1
open(sys.argv[1], "wb").write(b)' "$tmp/m.json.roff"
expect_refusal -l "a changed offsets' file" -n m.json.roff 1 "does not match" \
  "$FERRY" dump "$fx/i32.idx" --manifest "$tmp/m.json"
"$FERRY" info "$fx/u16.idx" --save-manifest "$tmp/other.json" >/dev/null 2>&1
cp "$tmp/other.json.roff" "$tmp/m.json.roff"
expect_refusal -l "another manifest's offsets" -n m.json.roff 1 "offsets" \
  "$FERRY" dump "$fx/i32.idx" --manifest "$tmp/m.json"
rm -f "$tmp/m.json.roff"
expect_refusal -l "no offsets' file" -n m.json.roff 1 "copy both" \
  "$FERRY" dump "$fx/i32.idx" --manifest "$tmp/m.json"
expect_refusal -l "a lone index" -n "$tmp/lone.idx" 1 "Megatron-LM index|PREFIX.bin" \
  sh -c "cp '$fx/u16.idx' '$tmp/lone.idx' && '$FERRY' dump '$tmp/lone.idx'"

exit $fail
