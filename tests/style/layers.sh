#!/bin/sh
# layers.sh - the folders of src/ form layers: every #include between
# folders points down, and no circle spans folders (issue 24, "A
# src/dataset/ layer"; docs/design.md, "What may include what").
#
# Reads every `#include "..."` of src/**/*.{c,h,cu}.  A path with a slash
# names its folder (src/FOLDER/...); a bare name is a header of the
# including file's own folder; "ferry.h" is the public API (below every
# layer).  Prints the graph between folders (each arrow with its count and
# one including file), then fails (exit 1) when
#   - a folder of src/ is not in ORDER below (a new folder must take its
#     place in the order, and in design.md's table);
#   - an include points up: from a folder to one later in ORDER;
#   - a circle spans folders (two folders that reach each other through
#     includes; an upward arrow always closes one with the downward ones
#     it goes against, so this also catches a peer's include of a peer).
# `layers.sh --graph` prints the graph and never fails (for the report).

# The layer order, bottom first: a folder may include the folders before
# it.  The one place it is written (design.md's table quotes it).
ORDER="util image codecs plugins core backends dataset plan gpu loader tool"

top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
mode=${1:-check}
[ -d "$top/src" ] || {
  echo "SKIP: no src/ under $top"
  exit 77
}

cd "$top/src" || exit 1
# One line per include: "FROM TO FILE" (FROM, TO: folders of src/).
edges=$(find . -name '*.[ch]' -o -name '*.cu' | sort | while read -r f; do
  from=$(echo "$f" | cut -d/ -f2)
  sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" |
    while read -r inc; do
      case $inc in
      ferry.h) continue ;;
      */*) to=${inc%%/*} ;;
      *) to=$from ;;
      esac
      echo "$from $to ${f#./}"
    done
done)
[ -n "$edges" ] || {
  echo "FAIL: no #include found under $top/src (is this the tree?)"
  exit 1
}

printf '%s\n' "$edges" | awk -v order="$ORDER" -v mode="$mode" '
BEGIN {
  n = split(order, name, " ")
  for (i = 1; i <= n; i++) rank[name[i]] = i
}
{
  if ($1 == $2) next
  k = $1 " " $2
  if (!(k in count)) { keys[++nk] = k; file[k] = $3 }
  count[k]++
  reach[$1, $2] = 1
  seen[$1] = 1; seen[$2] = 1
}
END {
  bad = 0
  print "layer order (bottom first): " order
  print "arrows between folders (count, one including file):"
  for (i = 1; i <= nk; i++) {
    split(keys[i], p, " ")
    dir = (p[1] in rank && p[2] in rank && rank[p[2]] > rank[p[1]]) ? "  UP" : ""
    printf "  %-9s -> %-9s %3d  %s%s\n", p[1], p[2], count[keys[i]], file[keys[i]], dir
  }
  for (f in seen)
    if (!(f in rank)) {
      print "FAIL: src/" f "/ is not in the layer order of tests/style/layers.sh"
      bad = 1
    }
  for (i = 1; i <= nk; i++) {
    split(keys[i], p, " ")
    if (p[1] in rank && p[2] in rank && rank[p[2]] > rank[p[1]]) {
      print "FAIL: src/" p[1] "/ includes src/" p[2] "/, a layer above it (" \
        file[keys[i]] ", " count[keys[i]] " include(s))"
      bad = 1
    }
  }
  # Circles: the transitive closure of the arrows (a handful of folders).
  for (k in seen) for (a in seen) for (b in seen)
    if (reach[a, k] && reach[k, b]) reach[a, b] = 1
  # One line per circle: the folders that all reach each other.
  for (a in seen) {
    if (a in done) continue
    c = ""
    for (b in seen)
      if (b != a && reach[a, b] && reach[b, a]) { c = c " src/" b "/"; done[b] = 1 }
    if (c != "") {
      print "FAIL: a circle spans src/" a "/" c " (each reaches the others)"
      bad = 1
    }
  }
  if (mode == "--graph") exit 0
  if (!bad) print "PASS: every arrow points down, no circle between folders"
  exit bad
}'
