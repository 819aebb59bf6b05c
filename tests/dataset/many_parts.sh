#!/bin/sh
# many_parts.sh - datasets of many small parts (issue 12): 10,000 .npy
# parts of 10 rows in one directory (with a _SUCCESS marker and a README
# beside them) are read as 10,000 parts of one variable, not as 10,000
# variables, and `ferry info` says so; every sample is served exactly once
# per epoch on 1, 2 and 4 ranks (`ferry verify`); the directory serves the
# same batches as the glob of its files; files named like parts that do not
# agree (dtype, row shape) stay the directory's variables, as do files with
# unrelated names.
. "`dirname "$0"`/../lib/common.sh"
ferry_test_init many_parts
py=${PYTHON_NUMPY:-}
if test -z "$py" || ! "$py" -c "import numpy" >/dev/null 2>&1; then
  echo "SKIP: no Python with NumPy (PYTHON_NUMPY='$py')"
  exit 77
fi
"$py" - "$tmp" <<'PY' || { echo "FAIL: writing the parts"; exit 1; }
import os, sys
import numpy as np
t = sys.argv[1]
os.makedirs(t + "/many")
for i in range(10000):
    rows = np.arange(10 * i, 10 * i + 10, dtype=np.float32)
    np.save(t + "/many/part-%05d.npy" % i, np.repeat(rows[:, None], 4, 1))
open(t + "/many/_SUCCESS", "w").close()
open(t + "/many/README.md", "w").write("shards\n")
os.makedirs(t + "/mixed")
np.save(t + "/mixed/x1.npy", np.zeros((10, 3), np.float32))
np.save(t + "/mixed/x2.npy", np.arange(10, dtype=np.int64))
os.makedirs(t + "/vars")
np.save(t + "/vars/a.npy", np.zeros((7, 2), np.float32))
np.save(t + "/vars/b.npy", np.arange(7, dtype=np.int64))
PY
if $RUN_MPI 1 "$FERRY" info "$tmp/many" >"$tmp/info" 2>&1 &&
   grep '^parts  *10000$' "$tmp/info" >/dev/null &&
   grep 'differ only in digits: read as 10000 parts' "$tmp/info" >/dev/null &&
   grep '^samples  *100000$' "$tmp/info" >/dev/null; then
  echo "ok: a directory of 10000 parts is read as parts, and info says so"
else
  echo "FAIL: ferry info on a directory of 10000 parts"
  sed 's/^/    /' "$tmp/info" | head -20
  fail=1
fi
for np in 1 2 4; do
  if $RUN_MPI $np "$FERRY" verify "$tmp/many" --epochs 2 --batch-size 100 >"$tmp/v" 2>&1 &&
     grep '^ferry verify: PASS' "$tmp/v" >/dev/null; then
    echo "ok: verify on $np ranks: `grep '^ferry verify: PASS' "$tmp/v"`"
  else
    echo "FAIL: verify of 10000 parts on $np ranks"
    sed 's/^/    /' "$tmp/v" | tail -20
    fail=1
  fi
done
$RUN_MPI 2 "$FERRY" dump "$tmp/many" --row-hash --seed 3 --tail partial >"$tmp/d1" 2>"$tmp/d1.err"
$RUN_MPI 2 "$FERRY" dump "$tmp/many/*.npy" --row-hash --seed 3 --tail partial >"$tmp/d2" 2>"$tmp/d2.err"
if test "`wc -l <"$tmp/d1"`" = 100000 && cmp -s "$tmp/d1" "$tmp/d2"; then
  echo "ok: the directory serves what the glob of its files serves (`wc -l <"$tmp/d1"` lines)"
else
  echo "FAIL: the directory and the glob of its files serve different batches"
  cat "$tmp/d1.err" "$tmp/d2.err" | head -5 | sed "s/^/    /"; diff "$tmp/d1" "$tmp/d2" | head -10 | sed "s/^/    /"
  fail=1
fi
for d in mixed vars; do
  if $RUN_MPI 1 "$FERRY" info "$tmp/$d" >"$tmp/i.$d" 2>&1 &&
     grep '^parts  *1$' "$tmp/i.$d" >/dev/null &&
     test "`grep -c '^  [a-z][a-z0-9]*  *\(float32\|int64\)' "$tmp/i.$d"`" = 2; then
    echo "ok: directory $d: its two files are two variables"
  else
    echo "FAIL: directory $d is not read as two variables"
    sed 's/^/    /' "$tmp/i.$d" | head -20
    fail=1
  fi
done
exit $fail
