#!/bin/sh
# docs_example.sh - the C example shown in README.md and docs/user-guide.md
# is tests/example.c, letter for letter, so the example users copy is the one
# `make check` compiles and runs (tests/cli/example.sh).  Pins the bug of a
# README example that no longer compiles after an API change.
src="$top_srcdir/tests/example.c"
status=0
# the program without its leading comment, from the first #include on
body=$(sed -n '/^#include <ferry.h>/,$p' "$src")
test -n "$body" || { echo "FAIL: no '#include <ferry.h>' in $src"; exit 1; }
for doc in README.md docs/user-guide.md; do
  # the ```c block that starts with #include <ferry.h>
  shown=$(awk '/^```c$/ { inblk = 1; buf = ""; next }
              inblk && /^```$/ { if (buf ~ /^#include <ferry.h>/) { printf "%s", buf; exit } inblk = 0; next }
              inblk { buf = buf $0 "\n" }' "$top_srcdir/$doc")
  if test "$shown" = "$body"; then
    echo "ok: $doc shows tests/example.c"
  else
    echo "FAIL: the C example in $doc differs from tests/example.c:"
    printf '%s\n' "$shown" > "${FERRY_TEST_TMPDIR:-/tmp}/shown.$$"
    printf '%s\n' "$body" | diff - "${FERRY_TEST_TMPDIR:-/tmp}/shown.$$" | head -20
    rm -f "${FERRY_TEST_TMPDIR:-/tmp}/shown.$$"
    status=1
  fi
done
exit $status
