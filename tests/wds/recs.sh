#!/bin/sh
# recs.sh - a saved manifest's records in its records' file, PATH.recs
# (decision 0066, dataset/json.c): WebDataset shards written with Python's
# tarfile (3 shards of 1,200 samples: KEY.cls, KEY.jpg of 1 to 200 bytes,
# KEY.json), whose location tables take 86 KB, more than the 64 KiB kept
# in the JSON:
#   - --save-manifest writes m.json.recs and no hex record in m.json; a
#     dataset of 40 samples keeps its records in the JSON (no .recs);
#   - `ferry dump --row-hash` through the manifest serves the scan's
#     samples, byte for byte, on 1, 2 and 3 ranks (the other ranks map the
#     file and check their share of its blocks);
#   - a manifest saved over itself while it is mapped (written aside and
#     renamed) serves the same samples, and leaves no temporary file;
#   - a byte of the records' file changed, the file missing, a record
#     that runs past the file: refused with one message naming the file,
#     on 2 ranks.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init recs
if test -z "${PYTHON_NUMPY:-}"; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY is empty): the shards are written by Python's tarfile"
  exit 77
fi
write_shards() { # DIR SHARDS SAMPLES
  "$PYTHON_NUMPY" - "$@" <<'PY'
import io, os, random, sys, tarfile
d, shards, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rnd = random.Random(7)
for s in range(shards):
    with tarfile.open(os.path.join(d, "shard-%03d.tar" % s), "w") as tf:
        for i in range(n):
            key = "s%02d-%05d" % (s, i)
            body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 201)))
            for ext, data in (("cls", b"%d" % (i % 10)), ("jpg", body),
                              ("json", b'{"k": "%s"}' % key.encode())):
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
PY
}
d=$tmp/d
write_shards "$d" 3 1200 || { failed "writing the shards"; exit 1; }
"$FERRY" info "$d" --save-manifest "$tmp/m.json" >"$tmp/save.out" 2>&1 ||
  { failed "ferry info --save-manifest" "$tmp/save.out"; exit 1; }
recs_bytes=`wc -c <"$tmp/m.json.recs" 2>/dev/null || echo 0`
if test "$recs_bytes" -ge 65536 && ! grep '"record":' "$tmp/m.json" >/dev/null &&
   grep '"record_at":' "$tmp/m.json" >/dev/null; then
  ok "the records in m.json.recs ($recs_bytes bytes), none in the JSON ("`wc -c <"$tmp/m.json"`" bytes)"
else
  failed "the records should be in m.json.recs ($recs_bytes bytes), not the JSON" "$tmp/m.json"
fi
write_shards "$tmp/small" 1 40 &&
  "$FERRY" info "$tmp/small" --save-manifest "$tmp/s.json" >"$tmp/s.out" 2>&1 ||
  failed "ferry info --save-manifest of 40 samples" "$tmp/s.out"
if test -s "$tmp/s.json" && test ! -e "$tmp/s.json.recs" &&
   grep '"record":' "$tmp/s.json" >/dev/null; then
  ok "40 samples: the records in the JSON, no records' file"
else
  failed "40 samples should keep their records in the JSON" "$tmp/s.json"
fi

dump() { # NP OUT [OPTIONS...]
  d_np=$1 d_out=$2
  shift 2
  $RUN_MPI $d_np "$FERRY" dump "$d" --epoch 1 --row-hash --tail partial \
    --seed 5 --batch-size 64 "$@" >"$d_out" 2>"$d_out.err"
}
for np in 1 2 3; do
  if dump $np "$tmp/scan.$np" && dump $np "$tmp/man.$np" --manifest "$tmp/m.json" &&
     test "`grep -c . "$tmp/scan.$np"`" -ge 3600 &&
     cmp -s "$tmp/scan.$np" "$tmp/man.$np"; then
    ok "$np rank(s): the manifest with its records' file serves the scan's `grep -c . "$tmp/scan.$np"` lines"
  else
    failed "$np rank(s): the manifest's samples should be the scan's" "$tmp/man.$np.err"
  fi
done

# saved over itself while mapped
if "$FERRY" info "$d" --manifest "$tmp/m.json" --save-manifest "$tmp/m.json" \
     >"$tmp/resave.out" 2>&1 &&
   dump 2 "$tmp/again" --manifest "$tmp/m.json" &&
   cmp -s "$tmp/again" "$tmp/scan.2"; then
  ok "a manifest saved over itself while mapped serves the same samples"
else
  failed "a manifest saved over itself while mapped" "$tmp/resave.out"
fi
ls "$tmp" | grep '\.tmp$' >/dev/null && failed "a temporary records' file was left"

# a byte changed (the checksum left), the file missing, a record past it:
# c.json, a copy of m.json naming c.json.recs (EDIT: how the copy differs)
copy_manifest() { # EDIT
  "$PYTHON_NUMPY" - "$tmp/m.json" "$tmp/c.json" "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["records"]["file"] = "c.json.recs"
if sys.argv[3] == "past":
    m["parts"][-1]["files"][-1]["record_bytes"] += 4096
json.dump(m, open(sys.argv[2], "w"))
PY
}
copy_manifest same || failed "copying the manifest"
"$PYTHON_NUMPY" - "$tmp/m.json.recs" "$tmp/c.json.recs" <<'PY' || failed "changing a byte"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10
open(sys.argv[2], "wb").write(b)
PY
expect_refusal -l "a changed byte of the records' file, 2 ranks" \
  -n "$tmp/c.json.recs" 1 "does not match its checksum" \
  $RUN_MPI 2 "$FERRY" dump "$d" --manifest "$tmp/c.json" --epoch 0
rm -f "$tmp/c.json.recs"
expect_refusal -l "no records' file, 2 ranks" -n "c.json.recs" 1 \
  "records' file|copy both" \
  $RUN_MPI 2 "$FERRY" dump "$d" --manifest "$tmp/c.json" --epoch 0
cp "$tmp/m.json.recs" "$tmp/c.json.recs"
copy_manifest past || failed "editing the manifest"
expect_refusal -l "a record past the records' file, 2 ranks" \
  -n "c.json.recs" 1 "outside the records' file" \
  $RUN_MPI 2 "$FERRY" dump "$d" --manifest "$tmp/c.json" --epoch 0
exit $fail
