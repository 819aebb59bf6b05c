#!/bin/sh
# pack.sh - packed rows in Python (pack=concat, docs/lm.md;
# tests/python/pack_check.py on 1 and 3 ranks) over a uint16 Megatron
# corpus written by tests/fixtures/make_megatron.py: the tokens of every
# row the corpus's, every token once, ferry.torch's widened tokens and
# varlen cu_seqlens; a mix with a second corpus (rows of one source each,
# the shares).
. "$top_srcdir/tests/python/common.sh"
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/c" --docs 60 \
  --dtype uint16 --mean 20 --empty 3 --seqs-per-doc 1 --seed 4 \
  >"$tmp/make.out" 2>&1 || {
  echo "FAIL: make_megatron.py"
  cat "$tmp/make.out"
  exit 1
}
"$PY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/c2" --docs 30 \
  --dtype uint16 --mean 12 --seqs-per-doc 1 --seed 9 \
  >"$tmp/make2.out" 2>&1 || {
  echo "FAIL: make_megatron.py (the second corpus)"
  cat "$tmp/make2.out"
  exit 1
}
status=0
for np in 1 3; do
  $RUN_MPI $np "$PY" "$pydir/pack_check.py" "$tmp/c" "$tmp/c2" >"$tmp/out" 2>&1 ||
    { echo "FAIL: pack_check.py on $np ranks"; status=1; }
  cat "$tmp/out"
done
exit $status
