#!/bin/sh
# circles.sh - no circle of calls between the files of one folder of src/
# but the ones listed below (issue 24: "the loader/ and plan/ circles
# removed"; docs/design.md, "What may include what").  layers.sh checks the
# arrows between folders; this checks the files inside each folder.
#
# A file calls another when it names a ferry__ function (or macro-free
# global) the other defines (a definition: a line starting with the
# function's name, or with its return type and name, and a "(").  From
# those arrows it finds the strongly connected groups of two or more files
# and fails (exit 1) when one is not in KNOWN, or when a KNOWN one is gone
# (so the list stays true: remove it here and in docs/design.md).
# `circles.sh --graph` prints every arrow inside a folder and never fails.

# Circles left on purpose: a subject split over two files that share
# helpers (each a line "FILE FILE", sorted, paths under src/).
KNOWN="backends/hdf5.c backends/hdf5_describe.c backends/hdf5_vlen.c
backends/zarr/describe.c backends/zarr/zarr.c
dataset/mix.c dataset/scan.c"

top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
py=
for p in "$FERRY_PYTHON" python3 /usr/bin/python3; do
  if test -n "$p" && command -v "$p" >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 to walk the calls"; exit 77; }
[ -d "$top/src" ] || { echo "SKIP: no src/ under $top"; exit 77; }

KNOWN="$KNOWN" exec "$py" - "$top/src" "${1:-check}" <<'PYEOF'
import collections, os, re, sys

src, mode = sys.argv[1], sys.argv[2]
files = []
for d, _, names in os.walk(src):
    files += [os.path.relpath(os.path.join(d, n), src)
              for n in names if n.endswith(('.c', '.cu'))]
files.sort()
text = {f: open(os.path.join(src, f), errors='replace').read() for f in files}
defined = {}
def_re = re.compile(r'^(?:[A-Za-z_][\w \t\*]*?[\s\*])?(ferry__\w+)\s*\(', re.M)
for f in files:
    for m in def_re.finditer(text[f]):
        line = text[f][m.start():text[f].find('\n', m.start())]
        if line.startswith('static') or line.rstrip().endswith(';'):
            continue
        defined.setdefault(m.group(1), f)
edges = collections.defaultdict(set)
for f in files:
    for name in set(re.findall(r'\bferry__\w+\b', text[f])):
        g = defined.get(name)
        if g and g != f and os.path.dirname(g) == os.path.dirname(f):
            edges[f].add(g)
if mode == '--graph':
    for f in files:
        for g in sorted(edges[f]):
            print(f, '->', g)
    sys.exit(0)

index, low, stack, on, groups = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop(); on.discard(w); group.append(w)
            if w == v:
                break
        if len(group) > 1:
            groups.append(' '.join(sorted(group)))
sys.setrecursionlimit(10000)
for f in files:
    if f not in index:
        visit(f)
known = set(l.strip() for l in os.environ['KNOWN'].splitlines() if l.strip())
found = set(groups)
bad = 0
for g in sorted(found - known):
    print('FAIL: a circle of calls inside a folder:', g)
    bad = 1
for g in sorted(known - found):
    print('FAIL: listed as a circle but gone (remove it from circles.sh and docs/design.md):', g)
    bad = 1
for g in sorted(found & known):
    print('ok: known circle:', g)
n = sum(len(v) for v in edges.values())
print('%s: %d files, %d arrows inside folders, %d circles (%d known)'
      % ('FAIL' if bad else 'PASS', len(files), n, len(found), len(found & known)))
sys.exit(bad)
PYEOF
