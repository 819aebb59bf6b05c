#!/bin/sh
# cli_manpage.sh - the loader options of docs/ferry.1 are the library's
# option table: the same names, defaults, values and help, none missing and
# none extra.  The man page's entries were generated once from the table;
# when an option changes, this test names the entry to update.
#
# Environment (set by "make check"): FERRY, top_srcdir.
# Exit 0 pass, 1 fail, 77 skip (no ferry program or no man page).

if test -z "${FERRY:-}" || test ! -x "$FERRY"; then
  echo "SKIP: FERRY is not set to the ferry program"
  exit 77
fi
man=${top_srcdir:-`dirname "$0"`/../..}/docs/ferry.1
if test ! -f "$man"; then
  echo "SKIP: no $man"
  exit 77
fi
if test "`id -u 2>/dev/null`" = 0; then
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
tmp=${FERRY_TEST_TMPDIR:-${TMPDIR:-/tmp}}/cli_manpage.$$
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' 0

# The table, as `ferry help options` prints it: "  --name VALUE", then the
# help wrapped at spaces, ending "Default: D. Values: V."
"$FERRY" help options </dev/null >"$tmp/help" 2>&1 || {
  echo "FAIL: ferry help options"; cat "$tmp/help"; exit 1; }
awk '
function emit() {
  i = index(text, " Default: ")
  help = substr(text, 1, i - 1)
  rest = substr(text, i + 10)
  j = index(rest, ". Values: ")
  def = substr(rest, 1, j - 1)
  val = substr(rest, j + 10)
  sub(/\.$/, "", val)
  gsub(/`/, "", help)
  print name " | " def " | " val " | " help
}
/^  --/ { if (name != "") emit(); name = $1; sub(/^--/, "", name); text = ""; next }
/^      / { t = $0; sub(/^ +/, "", t); text = text (text == "" ? "" : " ") t; next }
END { if (name != "") emit() }
' "$tmp/help" | sort >"$tmp/table"

# The man page's loader entries: .BI \-\-name " VALUE", the help, then
# Default:, Values: and Environment: lines.
awk '
function plain(s) { gsub(/\\-/, "-", s); gsub(/\\f[BIRP]/, "", s); gsub(/\\e/, "\\", s); return s }
/^\.BI \\-\\-/ { name = plain($2); sub(/^--/, "", name); state = 1; help = ""; next }
state == 1 && /^Default: / { def = plain(substr($0, 10)); sub(/\.$/, "", def); state = 2; next }
state == 1 && !/^\./ { help = help (help == "" ? "" : " ") plain($0); next }
state == 2 && /^Values: / { val = plain(substr($0, 9)); sub(/\.$/, "", val); state = 3; next }
state == 3 && /^Environment: / { print name " | " def " | " val " | " help; state = 0; next }
/^\./ { state = 0 }
' "$man" | sort >"$tmp/man"

if test ! -s "$tmp/table"; then
  echo "FAIL: could not read the option table from 'ferry help options'"
  exit 1
fi
if cmp -s "$tmp/table" "$tmp/man"; then
  echo "ok: `wc -l <"$tmp/table"` loader options in docs/ferry.1 match the table"
  exit 0
fi
echo "FAIL: docs/ferry.1 and the option table differ (< table, > man page):"
diff "$tmp/table" "$tmp/man"
exit 1
