#!/bin/sh
# format-check.sh - every C file of the tree is formatted as .clang-format
# says (make format-check; run by make check).  "make format" fixes them.
# Skips (77) without clang-format, or with a major version other than the
# one the tree was formatted with: versions format some constructs
# differently, and a check that fails on a newer tool helps nobody.
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cf=${CLANG_FORMAT:-clang-format}
want=14
command -v "$cf" >/dev/null 2>&1 || { echo "SKIP: no $cf (apt-get install clang-format)"; exit 77; }
have=$("$cf" --version | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -n 1)
if [ "$have" != "$want" ]; then
  echo "SKIP: $cf is version $have; the tree is formatted with version $want"
  exit 77
fi
cd "$top" || exit 1
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find src include tests python -name '*.[ch]' | sort)
if [ "${1:-}" = "--fix" ]; then
  # shellcheck disable=SC2086
  "$cf" -i $files && echo "formatted $(echo $files | wc -w) files"
  exit $?
fi
bad=0 n=0
for f in $files; do
  n=$((n + 1))
  if ! "$cf" "$f" | cmp -s - "$f"; then
    echo "FAIL: $f is not formatted (make format; or clang-format -i $f)"
    "$cf" "$f" | diff -u "$f" - | head -n 20
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "FAIL: $bad of $n files differ from .clang-format"
  exit 1
fi
echo "PASS: $n files formatted as .clang-format says"
