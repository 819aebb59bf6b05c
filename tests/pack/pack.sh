#!/bin/sh
# pack.sh - packed rows of a token corpus (pack=concat, src/loader/pack.c,
# docs/lm.md), end to end:
#
#  - tests/pack/test_pack_rows on 7 ranks over a `ferry gen --format
#    megatron` corpus whose documents are 0, 1, 7, 8, 9, 80, 3 and 5 tokens
#    long (cycled; token k of document i is i + k): every row's outputs
#    against its tokens, every token once, equal batch counts on 1 to 7
#    ranks, the golden rows of shuffle=none, the same rows with 1 and 4
#    threads, a state resumed on 2, 3, 4 and 7 ranks (test_pack_rows.c);
#  - `ferry info` reports the packing (rows, tokens, efficiency);
#  - `ferry verify` checks every token once on 3 ranks, and catches a
#    changed token;
#  - a mix of two corpora (decision 0053): tests/pack/test_pack_mix on 7
#    ranks (each row one source's, equal to that source's row packed alone,
#    the shares, resume on 2, 3 and 7 ranks); `ferry verify` of the mix
#    (stop and restart); a saved mix manifest packs the same rows;
#  - refusals on 1 rank: a dataset without a ragged integer variable, a
#    pack_var that is not there.
#
# Environment (set by "make check"; tests/README.md): FERRY, RUN_MPI,
# FERRY_TEST_TMPDIR, top_srcdir, top_builddir.  Exit 0 pass, 1 fail.

. "`dirname "$0"`/../lib/common.sh"
ferry_test_init pack
fx=$tmp/fx
mkdir -p "$fx"
gen() {
  "$FERRY" gen "$@" >>"$tmp/gen.log" 2>&1 || {
    failed "ferry gen $*" "$tmp/gen.log"
    exit 1
  }
}
gen "$fx/c" --format megatron --samples 400 --len-list 0,1,7,8,9,80,3,5
gen "$fx/f" --format megatron --samples 40 --var tokens:float32
gen "$fx/d" --samples 40
gen "$fx/b" --format megatron --samples 90 --len-list 20,3,11
ok "ferry gen wrote the corpora"

if $RUN_MPI 7 "$top_builddir/tests/pack/test_pack_rows" "$fx/c" "$tmp" "$fx/f" \
     >"$tmp/rows.out" 2>&1; then
  ok "`tail -1 "$tmp/rows.out"`"
else
  failed "test_pack_rows on 7 ranks" "$tmp/rows.out"
fi

# a mix of two corpora: each source packed alone, the mix draws rows
if $RUN_MPI 7 "$top_builddir/tests/pack/test_pack_mix" "$fx/c" "$fx/b" "$tmp" \
     >"$tmp/mix.out" 2>&1; then
  ok "`tail -1 "$tmp/mix.out"`"
else
  failed "test_pack_mix on 7 ranks" "$tmp/mix.out"
fi
mix="mix:$fx/c=0.7,$fx/b=0.3"
for ex in stop restart; do
  if $RUN_MPI 3 "$FERRY" verify "$mix" --pack concat --seq-len 8 \
       --batch-size 4 --mix-exhaust $ex --epochs 1 >"$tmp/verify.mix.$ex" 2>&1 &&
     grep "^PASS tokens .*a mix's draws" "$tmp/verify.mix.$ex" >/dev/null &&
     grep '^PASS sampling' "$tmp/verify.mix.$ex" >/dev/null; then
    ok "ferry verify, a packed mix, exhaust=$ex: `grep '^PASS tokens' "$tmp/verify.mix.$ex"`"
  else
    failed "ferry verify of a packed mix, exhaust=$ex" "$tmp/verify.mix.$ex"
  fi
done
"$FERRY" info "$mix" --pack concat --seq-len 8 --save-manifest "$tmp/mix.json" \
  >"$tmp/info.mix" 2>&1
"$FERRY" dump "$mix" --pack concat --seq-len 8 --batch-size 4 --row-hash \
  --seed 5 >"$tmp/mix.dump" 2>&1
"$FERRY" dump "$mix" --pack concat --seq-len 8 --batch-size 4 --row-hash \
  --seed 5 --manifest "$tmp/mix.json" >"$tmp/mix.saved.dump" 2>&1
if grep '^mix  *2 sources' "$tmp/info.mix" >/dev/null &&
   grep '^packing  *490 documents' "$tmp/info.mix" >/dev/null &&
   test -s "$tmp/mix.dump" && cmp "$tmp/mix.dump" "$tmp/mix.saved.dump" >/dev/null; then
  ok "a packed mix: ferry info (`grep '^packing' "$tmp/info.mix" | tr -s ' '`); its saved manifest packs the same rows"
else
  failed "ferry info / dump of a packed mix" "$tmp/info.mix"
fi

# ferry verify: every token once, the boundary outputs, ferry gen's values
for t in partial pad drop_last; do
  if $RUN_MPI 3 "$FERRY" verify "$fx/c" --pack concat --seq-len 9 \
       --batch-size 4 --tail $t --overlap 1 --mask-first yes \
       >"$tmp/verify.$t" 2>&1 &&
     grep '^PASS tokens .*every token is ferry gen' "$tmp/verify.$t" >/dev/null; then
    ok "ferry verify, tail=$t: `grep '^PASS tokens' "$tmp/verify.$t" | head -1`"
  else
    failed "ferry verify --pack concat --tail $t" "$tmp/verify.$t"
  fi
done
# shuffle=global: the rows exchanged between the ranks
if $RUN_MPI 3 "$FERRY" verify "$fx/c" --pack concat --seq-len 8 --batch-size 4 \
     --tail partial --shuffle global --epochs 1 >"$tmp/verify.global" 2>&1 &&
   grep '^PASS tokens .*every token is ferry gen' "$tmp/verify.global" >/dev/null; then
  ok "ferry verify, shuffle=global: `grep '^PASS tokens' "$tmp/verify.global"`"
else
  failed "ferry verify --pack concat --shuffle global" "$tmp/verify.global"
fi
# first_fit and best_fit: whole documents, the longer ones split or dropped
for m in first_fit:split first_fit:drop best_fit:split best_fit:drop; do
  ov=${m#*:}
  if $RUN_MPI 3 "$FERRY" verify "$fx/c" --pack ${m%:*} --seq-len 9 \
       --pack-window 32 --overflow $ov --batch-size 4 --tail partial \
       --mask-first yes >"$tmp/verify.fit.$ov" 2>&1 &&
     grep '^PASS tokens .*every token is ferry gen' "$tmp/verify.fit.$ov" >/dev/null; then
    ok "ferry verify, ${m%:*} overflow=$ov: `grep '^PASS tokens' "$tmp/verify.fit.$ov" | head -1`"
  else
    failed "ferry verify --pack ${m%:*} --overflow $ov" "$tmp/verify.fit.$ov"
  fi
done
"$FERRY" info "$fx/c" --pack first_fit --seq-len 8 --pack-window 8 \
  --overflow drop --shuffle none >"$tmp/info.fit" 2>&1
# each window of 8 documents (0 1 7 8 9 80 3 5 tokens): 9 and 80 dropped,
# 1 7 | 8 | 3 5 -> 3 rows; 50 windows
if grep '^packing  *400 documents, 5650 tokens -> 150 rows of seq_len 8' "$tmp/info.fit" >/dev/null &&
   grep '4450 tokens dropped' "$tmp/info.fit" >/dev/null; then
  ok "ferry info, first_fit: `grep -A1 '^packing' "$tmp/info.fit" | tr -s ' ' | tr '\n' ' '`"
else
  failed "ferry info --pack first_fit --overflow drop" "$tmp/info.fit"
fi
# a changed token: caught
cp -r "$fx/c" "$fx/bad"
"$PYTHON_NUMPY" -c 'import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[4000] ^= 1
open(p, "wb").write(b)' "$fx/bad/corpus.bin" 2>/dev/null ||
  printf '\001' | dd of="$fx/bad/corpus.bin" bs=1 seek=4000 conv=notrunc 2>/dev/null
$RUN_MPI 2 "$FERRY" verify "$fx/bad" --pack concat --seq-len 8 --batch-size 4 \
  --tail partial --epochs 1 >"$tmp/verify.bad" 2>&1
if grep '^FAIL tokens .*differ from the corpus' "$tmp/verify.bad" >/dev/null; then
  ok "a changed token: `grep '^FAIL tokens' "$tmp/verify.bad"`"
else
  failed "ferry verify did not catch a changed token" "$tmp/verify.bad"
fi

# ferry info: the packing's figures; a saved manifest packs the same rows
"$FERRY" info "$fx/c" --pack concat --seq-len 8 --save-manifest "$tmp/m.json" \
  >"$tmp/info" 2>&1
if grep '^packing  *400 documents, 5650 tokens -> 706 rows of seq_len 8' "$tmp/info" >/dev/null &&
   grep 'efficiency 1.0000 (0 padding tokens), 2 tokens dropped' "$tmp/info" >/dev/null &&
   test -f "$tmp/m.json.roff"; then
  ok "ferry info: `grep -A1 '^packing' "$tmp/info" | tr -s ' ' | tr '\n' ' '`"
else
  failed "ferry info --pack concat" "$tmp/info"
fi
"$FERRY" dump "$fx/c" --pack concat --seq-len 8 --batch-size 4 --row-hash \
  --seed 5 >"$tmp/scan.dump" 2>&1
"$FERRY" dump "$fx/c" --pack concat --seq-len 8 --batch-size 4 --row-hash \
  --seed 5 --manifest "$tmp/m.json" >"$tmp/saved.dump" 2>&1
if test -s "$tmp/scan.dump" && cmp "$tmp/scan.dump" "$tmp/saved.dump" >/dev/null; then
  ok "a saved manifest (the corpus's, with its .roff) packs the same rows"
else
  failed "dump with the saved manifest differs" "$tmp/saved.dump"
fi

# Megatron-LM's GPTDataset (tests/pack/megatron_gpt.py): only with a
# Megatron-LM checkout named by MEGATRON_LM (not shipped; docs/lm.md has
# the command and its last result) and pybind11
if test -n "${MEGATRON_LM:-}" && test -n "${PYTHON_NUMPY:-}" &&
   "$PYTHON_NUMPY" -c "import pybind11" >/dev/null 2>&1; then
  for c in "$top_srcdir/tests/ragged/megatron-testing/test_text_document:16" \
           "$top_srcdir/tests/ragged/megatron-testing/fim_text_document:50"; do
    if PYTHONPATH="$top_builddir/python${PYTHONPATH:+:$PYTHONPATH}" \
       $RUN_MPI 1 "$PYTHON_NUMPY" "$top_srcdir/tests/pack/megatron_gpt.py" \
         "$MEGATRON_LM" "${c%:*}" "${c##*:}" "$tmp/helpers" >"$tmp/meg" 2>&1 &&
       grep 'every row equal' "$tmp/meg" >/dev/null; then
      ok "`tail -1 "$tmp/meg"` (Megatron's build_sample_idx)"
    else
      failed "megatron_gpt.py ${c##*/}" "$tmp/meg"
    fi
  done
else
  echo "note: Megatron-LM's GPTDataset not compared (set MEGATRON_LM to a checkout; docs/lm.md)"
fi

expect_refusal -l "a dense dataset" 1 "ragged variables" \
  "$FERRY" dump "$fx/d" --pack concat --seq-len 8
expect_refusal -l "pack_var not there" 1 "'text' not found" \
  "$FERRY" dump "$fx/c" --pack concat --seq-len 8 --pack-var text

exit $fail
