#!/usr/bin/env python3
"""Check `ferry dump` of an image folder against torchvision's ImageFolder.

Usage: /usr/bin/python3 check_dump.py REF NRANKS BATCH IMAGE_DUMP [LABEL_DUMP]

REF: the samples ImageFolder lists (make_tree.py's samples.txt or flat.txt:
path TAB label, in ImageFolder's order).  IMAGE_DUMP: the output of
`ferry dump ROOT --var image --row-hash --tail partial` on NRANKS ranks
with batch size BATCH; LABEL_DUMP (a folder of classes): the same with
--var label.  Checked: every line is `rank batch index first len=N
fnv=HEX`, ranks in order and batches of at most BATCH; every index of REF
served exactly once; sample g's bytes are those of REF's file g (length,
first byte, FNV-1a 64 of all of them); its label is REF's; the label dump
serves the same (rank, batch, index) sequence.  Prints one line, "ok: ..."
or "FAIL: ...", exits 1 on failure.
"""
import sys

sys.path.insert(0, __import__("os").path.join(
    __import__("os").path.dirname(__file__), "..", "fixtures"))
from rowhash import fnv1a64  # noqa: E402


def fail(why):
    print("FAIL: %s: %s" % (sys.argv[4], why))
    sys.exit(1)


def parse(path, nranks, batch, ragged):
    rows, last = [], (-1, -1)
    count = {}
    for ln, line in enumerate(open(path), 1):
        f = line.split()
        want = 6 if ragged else 4
        if len(f) != want:
            fail("line %d: %r is not %d fields" % (ln, line, want))
        r, b, g = int(f[0]), int(f[1]), int(f[2])
        if not 0 <= r < nranks or (r, b) < last:
            fail("line %d: rank %d batch %d out of order" % (ln, r, b))
        last = (r, b)
        count[(r, b)] = count.get((r, b), 0) + 1
        if count[(r, b)] > batch:
            fail("rank %d batch %d holds more than %d samples" % (r, b, batch))
        rows.append((r, b, g, f[3:]))
    return rows


def main():
    ref_path, nranks, batch, image_dump = sys.argv[1:5]
    nranks, batch = int(nranks), int(batch)
    ref = [l.rstrip("\n").split("\t") for l in open(ref_path)]
    rows = parse(image_dump, nranks, batch, True)
    seen = sorted(g for _, _, g, _ in rows)
    if seen != list(range(len(ref))):
        fail("indices served are not 0..%d once each (%d lines)"
             % (len(ref) - 1, len(rows)))
    for r, b, g, (first, ln, fnv) in rows:
        data = open(ref[g][0], "rb").read()
        if ln != "len=%d" % len(data) or first != str(data[0]) or \
                fnv != "fnv=%016x" % fnv1a64(data):
            fail("sample %d: %s %s %s, but %s holds %d bytes from %d, fnv %016x"
                 % (g, first, ln, fnv, ref[g][0], len(data), data[0],
                    fnv1a64(data)))
    what = "%d samples, every byte of each" % len(ref)
    if len(sys.argv) > 5:
        lab = parse(sys.argv[5], nranks, batch, False)
        if [x[:3] for x in lab] != [x[:3] for x in rows]:
            fail("the label dump's plan differs from the image dump's")
        for r, b, g, (first,) in lab:
            if first != ref[g][1]:
                fail("sample %d: label %s, ImageFolder's %s (%s)"
                     % (g, first, ref[g][1], ref[g][0]))
        what += " and its label"
    print("ok: %s: %d ranks: %s equal to ImageFolder's" % (
        image_dump, nranks, what))


main()
