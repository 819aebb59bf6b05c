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
ok "ferry gen wrote the corpora"

if $RUN_MPI 7 "$top_builddir/tests/pack/test_pack_rows" "$fx/c" "$tmp" "$fx/f" \
     >"$tmp/rows.out" 2>&1; then
  ok "`tail -1 "$tmp/rows.out"`"
else
  failed "test_pack_rows on 7 ranks" "$tmp/rows.out"
fi

expect_refusal -l "a dense dataset" 1 "ragged variables" \
  "$FERRY" dump "$fx/d" --pack concat --seq-len 8
expect_refusal -l "pack_var not there" 1 "'text' not found" \
  "$FERRY" dump "$fx/c" --pack concat --seq-len 8 --pack-var text

exit $fail
