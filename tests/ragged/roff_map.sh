#!/bin/sh
# roff_map.sh - a saved manifest's ragged offsets are mapped from its
# PATH.roff, not held (core/roffmap.c, docs/ragged.md "At scale"): a
# `ferry gen` Megatron corpus of 2 million sequences (15 MiB of offsets),
# dumped whole on 2 ranks by a scan and through its saved manifest:
#   - the same samples either way;
#   - each rank's peak RSS (/usr/bin/time) through the manifest at least
#     12 MiB below the scan's (the scan's ranks hold the offsets, the
#     mapped ones only the pages a pass or a window touched: measured in
#     one run, not against a fixed size);
#   - a manifest saved over itself while it is mapped (the offsets' file is
#     written aside and renamed) still serves the same samples;
#   - an offsets' file whose checksum is right but whose offsets decrease
#     is refused with one message on each of 2 ranks, naming the file;
#   - a version 1 offsets' file (FNV-1a, before 2026-11-28) still loads.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init roff_map
py=${PYTHON_NUMPY:-}
test -x /usr/bin/time || { echo "SKIP: /usr/bin/time not installed"; exit 77; }
N=2000000
"$FERRY" gen "$tmp/c" --format megatron --samples $N --mean-len 2 \
  >"$tmp/gen.out" 2>&1 &&
  "$FERRY" info "$tmp/c" --save-manifest "$tmp/m.json" >>"$tmp/gen.out" 2>&1 ||
  { failed "ferry gen / info --save-manifest" "$tmp/gen.out"; exit 1; }

rank_rss='exec /usr/bin/time -f %M -o "$0.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-$$}}" "$@"'
dump() { # NAME OPTIONS...: dump on 2 ranks, peak RSS per rank in $tmp/NAME.rss.R
  d_name=$1
  shift
  $RUN_MPI 2 sh -c "$rank_rss" "$tmp/$d_name.rss" "$FERRY" dump "$tmp/c" \
    --batch-size 512 --tail partial --seed 3 --output "$tmp/$d_name.dump" \
    "$@" >"$tmp/$d_name.out" 2>&1
}
if dump scan && dump mapped --manifest "$tmp/m.json"; then
  if cmp -s "$tmp/scan.dump" "$tmp/mapped.dump" &&
     test "`grep -c . "$tmp/scan.dump"`" -ge $N; then
    ok "the same `grep -c . "$tmp/scan.dump"` lines with the offsets mapped as held"
  else
    failed "the mapped offsets should serve the scan's samples" "$tmp/mapped.out"
  fi
  for r in 0 1; do
    s=`tail -n 1 "$tmp/scan.rss.$r"` m=`tail -n 1 "$tmp/mapped.rss.$r"`
    if test "$m" -le $((s - 12288)); then
      ok "rank $r: peak RSS $m KiB mapped, $s KiB held (offsets: `wc -c <"$tmp/m.json.roff"` bytes)"
    else
      failed "rank $r: peak RSS $m KiB mapped should be 12 MiB below the $s KiB held"
    fi
  done
else
  failed "ferry dump by a scan and through the manifest" "$tmp/mapped.out"
  cat "$tmp/scan.out" | head -5
fi

# Saved over itself while mapped: written aside, renamed.
cp "$tmp/m.json.roff" "$tmp/keep.roff"
if "$FERRY" info "$tmp/c" --manifest "$tmp/m.json" --save-manifest \
     "$tmp/m.json" >"$tmp/resave.out" 2>&1 &&
   cmp -s "$tmp/m.json.roff" "$tmp/keep.roff" &&
   dump again --manifest "$tmp/m.json" &&
   cmp -s "$tmp/again.dump" "$tmp/scan.dump"; then
  ok "a manifest saved over itself while mapped serves the same samples"
else
  failed "a manifest saved over itself while mapped" "$tmp/resave.out"
fi
ls "$tmp" | grep '\.tmp$' >/dev/null && failed "a temporary offsets' file was left"

# Decreasing offsets under a right checksum: refused on every rank (a
# small corpus: the checksum, ferry__hash_words of the file's version 2,
# is recomputed word by word in Python).
if test -n "$py" &&
   "$FERRY" gen "$tmp/s" --format megatron --samples 5000 >/dev/null 2>&1 &&
   "$FERRY" info "$tmp/s" --save-manifest "$tmp/s.json" >/dev/null 2>&1; then
  # a version 1 file (FNV-1a, what ferry wrote before 2026-11-28) loads
  "$py" - "$tmp/s.json" "$tmp/v1.json" <<'PY' || failed "writing a version 1 offsets' file"
import json, sys
src, dst = sys.argv[1], sys.argv[2]
b = bytearray(open(src + ".roff", "rb").read())
b[4] = 1
h = 0xcbf29ce484222325
for x in bytes(b[:-8]):
    h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
b[-8:] = h.to_bytes(8, "little")
open(dst + ".roff", "wb").write(b)
m = json.load(open(src))
m["offsets"] = {"file": "v1.json.roff", "count": m["offsets"]["count"],
                "fnv1a": "%016x" % h}
json.dump(m, open(dst, "w"))
PY
  if $RUN_MPI 2 "$FERRY" dump "$tmp/s" --row-hash --manifest "$tmp/v1.json" \
       >"$tmp/v1.dump" 2>&1 &&
     $RUN_MPI 2 "$FERRY" dump "$tmp/s" --row-hash >"$tmp/v1.scan" 2>&1 &&
     test -s "$tmp/v1.dump" && cmp -s "$tmp/v1.dump" "$tmp/v1.scan"; then
    ok "a version 1 offsets' file (FNV-1a) serves the scan's samples on 2 ranks"
  else
    failed "a version 1 offsets' file should still load" "$tmp/v1.dump"
  fi
  "$py" - "$tmp/s.json" <<'PY' || failed "rewriting the offsets' file"
import json, struct, sys
path = sys.argv[1]
b = bytearray(open(path + ".roff", "rb").read())
k = 16 + 8 * 1234                        # an offset inside the first part
struct.pack_into("<q", b, k, struct.unpack_from("<q", b, k + 8)[0] + 5)
assert b[4] == 2                          # version 2: ferry__hash_words
h, M = 0xcbf29ce484222325, 0xFFFFFFFFFFFFFFFF
for (w,) in struct.iter_unpack("<Q", bytes(b[:-8])):   # a whole number
    h = ((h ^ w) * 0xff51afd7ed558ccd) & M             # of words
    h ^= h >> 32
struct.pack_into("<Q", b, len(b) - 8, h)
open(path + ".roff", "wb").write(b)
m = json.load(open(path))
m["offsets"]["hash"] = "%016x" % h
json.dump(m, open(path, "w"))
PY
  expect_refusal -l "decreasing offsets, 2 ranks" -n s.json.roff 1 \
    "not increasing" $RUN_MPI 2 "$FERRY" dump "$tmp/s" --manifest "$tmp/s.json"
elif test -z "$py"; then
  echo "skipped: decreasing offsets (no Python with NumPy: PYTHON_NUMPY)"
else
  failed "ferry gen / info --save-manifest of the small corpus"
fi
exit $fail
