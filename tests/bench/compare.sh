#!/bin/sh
# compare.sh - the same benchmark with two builds of ferry, interleaved in
# one run, so that their ratio is measured under the same conditions (the
# "behaviour and performance unchanged" check of a refactoring).
#
# usage: tests/bench/compare.sh OLD_FERRY NEW_FERRY DATASET [ROUNDS] [ferry bench options]
#
# Each round runs `mpirun -np 2 ferry bench DATASET --epochs 2 --batch-size
# 1024 --shuffle chunks --shuffle-buffer 4 --json` with OLD then NEW (the
# order alternates between rounds); prints bytes/s of each run, the median
# of each build and NEW/OLD.
set -eu
old=$1 new=$2 data=$3 rounds=${4:-3}
shift 3; [ $# -gt 0 ] && shift
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
run() {
  f=$1
  shift
  mpirun --oversubscribe --bind-to none -np 2 "$f" bench "$data" --epochs 2 \
    --batch-size 1024 --shuffle chunks --shuffle-buffer 4 --device cpu \
    --json "$@" 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_s"])'
}
cat "$data"/* >/dev/null 2>&1 || cat "$data" >/dev/null # page cache warm
o="" n=""
i=0
while [ $i -lt "$rounds" ]; do
  if [ $((i % 2)) = 0 ]; then
    a=$(run "$old" "$@"); b=$(run "$new" "$@")
  else
    b=$(run "$new" "$@"); a=$(run "$old" "$@")
  fi
  /usr/bin/python3 -c 'import sys; print("round %s: old %.2f GB/s  new %.2f GB/s" % (sys.argv[1], float(sys.argv[2]) / 1e9, float(sys.argv[3]) / 1e9))' $((i + 1)) "$a" "$b"
  o="$o $a" n="$n $b"
  i=$((i + 1))
done
/usr/bin/python3 - "$o" "$n" <<'PY'
import statistics, sys
o = [float(x) for x in sys.argv[1].split()]
n = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(o), statistics.median(n)
print(f"median: old {mo/1e9:.2f} GB/s, new {mn/1e9:.2f} GB/s, new/old {mn/mo:.3f}")
PY
