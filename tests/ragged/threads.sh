#!/bin/sh
# threads.sh - the ragged variables' promises where threads matter, for the
# TSan tier (tests/local.mk's TSAN_TESTS): tests/ragged/test_ragged on 7
# ranks over a corpus of tests/fixtures/make_megatron.py -- the batch
# layout, exactly once, equal counts, the same batches with 1 and 4
# threads, checkpoints (max_tokens, buckets, weighted sampling) -- and a
# dump of the corpus with 4 threads and buckets.  megatron.sh runs the same
# test_ragged and the formats' checks around it; under TSan those took 200
# s of single-threaded tool runs that this one leaves out.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init ragged-threads
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the fixture is written by NumPy"
  exit 77
fi
"$PYTHON_NUMPY" "$top_srcdir/tests/fixtures/make_megatron.py" "$tmp/i32" \
  --docs 60 --empty 4 --seed 1 >"$tmp/make.log" 2>&1 ||
  { failed "make_megatron.py" "$tmp/make.log"; exit 1; }
if $RUN_MPI 7 "$top_builddir/tests/ragged/test_ragged" "$tmp/i32" "$tmp" \
     >"$tmp/test_ragged.out" 2>&1; then
  ok "`tail -1 "$tmp/test_ragged.out"`"
else
  failed "test_ragged on 7 ranks" "$tmp/test_ragged.out"
fi
if $RUN_MPI 2 "$FERRY" dump "$tmp/i32.idx" --row-hash --threads 4 \
     --max-tokens 400 --bucket-window 16 --tail partial >"$tmp/dump.out" 2>&1 &&
   test "`grep -c 'len=' "$tmp/dump.out"`" -gt 0; then
  ok "ferry dump with 4 threads and buckets on 2 ranks: `grep -c 'len=' "$tmp/dump.out"` samples"
else
  failed "ferry dump with 4 threads and buckets" "$tmp/dump.out"
fi
exit $fail
