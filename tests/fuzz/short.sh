#!/bin/sh
# short.sh - a short real fuzzing run of every harness (tests/fuzz/
# README.md): libFuzzer, FERRY_FUZZ_SECONDS seconds each (default 20),
# fixed seed, starting from a scratch copy of the harness's corpus, with
# ASan (leaks included) and UBSan.  Any crash, sanitizer report, leak,
# input slower than 10 s or memory above 2 GiB fails the test, and the log
# names the input that did it (copy it into tests/fuzz/corpus/NAME/ as a
# regression).  Runs only in a configure --enable-fuzz build (./bootstrap
# check builds one, build-fuzz, when clang is installed); elsewhere it
# skips.
: "${top_srcdir:?}" "${top_builddir:?}"
if [ "${FERRY_FUZZ:-}" != libfuzzer ]; then
  echo "SKIP: not a libFuzzer build (configure --enable-fuzz with clang; ./bootstrap check builds one in build-fuzz)"
  exit 77
fi
secs=${FERRY_FUZZ_SECONDS:-20}
tmp="${FERRY_TEST_TMPDIR:-/tmp}/fuzz-short.$$"
rm -rf "$tmp"
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
status=0
for h in ${FUZZ_HARNESSES:?}; do
  name=${h##*/fuzz_}
  prog="$top_builddir/$h"
  test -x "$prog" || { echo "FAIL: $prog not built"; status=1; continue; }
  mkdir -p "$tmp/$name/corpus" "$tmp/$name/artifacts"
  cp "$top_srcdir/tests/fuzz/corpus/$name/"* "$tmp/$name/corpus/" 2>/dev/null
  echo "== fuzz_$name: ${secs}s"
  # The environment's ASAN_OPTIONS turn leak detection off for Open MPI;
  # the harnesses never start MPI, so leaks count here.
  if ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:verify_asan_link_order=0 \
     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "$prog" -seed=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$tmp/$name/artifacts/" \
       "$tmp/$name/corpus" >"$tmp/$name/log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units)' "$tmp/$name/log"
  else
    status=1
    echo "FAIL: fuzz_$name found a problem; its log ends:"
    tail -n 60 "$tmp/$name/log"
    for a in "$tmp/$name/artifacts/"*; do
      [ -f "$a" ] || continue
      echo "input $a (base64; save it as tests/fuzz/corpus/$name/regress-NAME):"
      base64 "$a"
    done
  fi
done
exit $status
