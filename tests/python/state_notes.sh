#!/bin/sh
# state_notes.sh - the dataset's notes are not part of its identity (hash
# version 3, core/manifest.c): a state saved before a file that is not a
# shard appears in a directory of WebDataset shards resumes after it, on 2
# ranks (tests/python/state_notes_check.py); `ferry info` shows that the
# notes did change ("other files ignored"), so the check could fail.
. "$top_srcdir/tests/python/common.sh"
FERRY=${FERRY:-$top_builddir/ferry}
"$PY" - "$tmp/d" <<'PY' || { echo "FAIL: writing the shards"; exit 1; }
import io, os, sys, tarfile
d = sys.argv[1]
os.makedirs(d)
for s in range(2):
    with tarfile.open(os.path.join(d, "shard-%d.tar" % s), "w") as tf:
        for i in range(150):
            for ext, data in (("cls", b"%d" % (i % 5)), ("txt", b"x" * (i % 9))):
                ti = tarfile.TarInfo("k%d-%04d.%s" % (s, i, ext))
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
PY
"$FERRY" info "$tmp/d" >"$tmp/before.out" 2>&1 || { echo "FAIL: ferry info"; cat "$tmp/before.out"; exit 1; }
status=0
$RUN_MPI 2 "$PY" "$pydir/state_notes_check.py" "$tmp/d" >"$tmp/out" 2>&1 ||
  { echo "FAIL: state_notes_check.py on 2 ranks"; status=1; }
cat "$tmp/out"
"$FERRY" info "$tmp/d" >"$tmp/after.out" 2>&1
if test -f "$tmp/d/README.txt" &&
   ! grep 'other files ignored' "$tmp/before.out" >/dev/null &&
   grep 'other files ignored' "$tmp/after.out" >/dev/null; then
  echo "ok: the notes changed (other files ignored) and the state resumed"
else
  echo "FAIL: the notes should have changed with README.txt"
  grep -i notes "$tmp/before.out" "$tmp/after.out"
  status=1
fi
exit $status
