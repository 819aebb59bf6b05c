#!/bin/sh
# example.sh - the README's C example (tests/example.c, built by "make
# check" against the installed API only) runs as documented over 3 ranks: on
# a `ferry gen` dataset of N samples it exits 0 and prints "served 2N
# samples in 2 epochs of N" (tail=partial: every sample exactly once per
# epoch); on a missing dataset it exits 1 on every rank and prints the error
# once.
#
# Bugs it pins: the example drifting from the API (it no longer builds, or
# its counts are wrong: samples lost, padded or served twice across two
# epochs, N misreported); an open failure printed by every rank or leaving a
# rank hanging.
#
# Environment (set by "make check"; see tests/README.md): top_builddir,
# FERRY, RUN_MPI, FERRY_TEST_TMPDIR.  Exit 0 pass, 1 fail, 77 skip.

prog=${top_builddir:-.}/tests/example
if test ! -x "$prog"; then
  echo "SKIP: $prog not built"
  exit 77
fi
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init example

# N is prime and not a multiple of the example's batch_size 32 nor of 3
# ranks, so some ranks get short last batches.
N=1013
if "$FERRY" gen "$tmp/data" --samples $N --var samples:float32:8 \
     --var targets:int64 >"$tmp/gen.log" 2>&1; then
  echo "ok: ferry gen wrote $N samples"
else
  echo "FAIL: ferry gen"
  sed 's/^/    /' "$tmp/gen.log"
  exit 1
fi

# ---- a dataset: exit 0 and the promised count ----------------------------
# run_ok LABEL [VAR=VALUE...]: the example over 3 ranks, with these FERRY_*
# variables (which it applies after its own options), exits 0 and prints
# exactly the count line.
want="served `expr 2 \* $N` samples in 2 epochs of $N"
run_ok() {
  label=$1
  shift
  env "$@" $RUN_MPI 3 "$prog" "$tmp/data" >"$tmp/out" 2>"$tmp/err"
  st=$?
  # nothing on stderr: a CUDA build on a machine without a GPU is silent
  if test "$st" != 0; then
    echo "FAIL: example $label exited $st"
    cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -20
    fail=1
  elif test "`cat "$tmp/out"`" != "$want"; then
    echo "FAIL: example $label printed '`cat "$tmp/out"`', expected '$want' and nothing else"
    fail=1
  elif test -s "$tmp/err"; then
    echo "FAIL: example $label printed on stderr:"
    sed 's/^/    /' "$tmp/err" | head -20
    fail=1
  else
    echo "ok: example $label: $want"
  fi
}
run_ok "over 3 ranks"
# Small chunks and batches spread the samples over the 3 ranks, with short
# and empty last batches.
run_ok "over 3 ranks, FERRY_BATCH_SIZE=7 FERRY_CHUNK_SAMPLES=50" \
  FERRY_BATCH_SIZE=7 FERRY_CHUNK_SAMPLES=50

# ---- a missing dataset: exit 1, one message ------------------------------
$RUN_MPI 3 "$prog" "$tmp/no-such-dataset" >"$tmp/out" 2>"$tmp/err"
st=$?
n=`grep -c '^ferry_open: ' "$tmp/err"`
if test "$st" != 1; then
  echo "FAIL: example on a missing dataset exited $st, expected 1"
  cat "$tmp/out" "$tmp/err" | sed 's/^/    /' | head -20
  fail=1
elif test "$n" != 1; then
  echo "FAIL: example on a missing dataset printed $n 'ferry_open:' messages, not one"
  sed 's/^/    /' "$tmp/err" | head -20
  fail=1
elif ! grep '^ferry_open: ' "$tmp/err" | grep -F "no-such-dataset" >/dev/null; then
  echo "FAIL: the message does not name the dataset: `grep '^ferry_open: ' "$tmp/err"`"
  fail=1
elif test -s "$tmp/out"; then
  echo "FAIL: example on a missing dataset printed on stdout: `head -3 "$tmp/out"`"
  fail=1
else
  echo "ok: example on a missing dataset: status 1, once: `grep '^ferry_open: ' "$tmp/err" | sed "s|$tmp/||g"`"
fi

exit $fail
