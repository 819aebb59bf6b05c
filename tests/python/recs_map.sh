#!/bin/sh
# recs_map.sh - a saved manifest's records mapped from its records' file
# (PATH.recs, decision 0066): WebDataset shards read by a scan and through
# the saved manifest on 2 ranks serve the same batches, and a state taken
# with either resumes with the other (tests/python/recs_map_check.py);
# then again with the manifest `ferry index --save-manifest` saves, the
# scan now checking the sidecars it wrote (their state is not part of the
# dataset's hash: a state taken before `ferry index` resumes after it).
. "$top_srcdir/tests/python/common.sh"
FERRY=${FERRY:-$top_builddir/ferry}
"$PY" - "$tmp/d" <<'PY' || { echo "FAIL: writing the shards"; exit 1; }
import io, os, random, sys, tarfile
d = sys.argv[1]
os.makedirs(d)
rnd = random.Random(3)
for s in range(3):
    with tarfile.open(os.path.join(d, "shard-%d.tar" % s), "w") as tf:
        for i in range(1100):
            body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 90)))
            for ext, data in (("cls", b"%d" % (i % 7)), ("jpg", body),
                              ("json", b"{}")):
                ti = tarfile.TarInfo("k%d-%05d.%s" % (s, i, ext))
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
PY
"$FERRY" info "$tmp/d" --save-manifest "$tmp/m.json" >"$tmp/save.out" 2>&1 &&
  test -s "$tmp/m.json.recs" ||
  {
    echo "FAIL: ferry info --save-manifest (a records' file expected)"
    cat "$tmp/save.out"
    exit 1
  }
status=0
$RUN_MPI 2 "$PY" "$pydir/recs_map_check.py" "$tmp/d" "$tmp/m.json" \
  >"$tmp/out" 2>&1 || { echo "FAIL: recs_map_check.py on 2 ranks"; status=1; }
cat "$tmp/out"
if $RUN_MPI 2 "$FERRY" index "$tmp/d" --save-manifest "$tmp/ix.json" \
     >"$tmp/ix.out" 2>&1 && test -s "$tmp/d/shard-0.tar.idx" &&
   test -s "$tmp/ix.json.recs"; then
  $RUN_MPI 2 "$PY" "$pydir/recs_map_check.py" "$tmp/d" "$tmp/ix.json" \
    >"$tmp/out2" 2>&1 ||
    { echo "FAIL: recs_map_check.py with ferry index's manifest"; status=1; }
  cat "$tmp/out2"
else
  echo "FAIL: ferry index --save-manifest on 2 ranks"
  cat "$tmp/ix.out"
  status=1
fi
exit $status
