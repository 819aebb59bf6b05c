#!/bin/sh
# python.sh - the Python front against `ferry bench`, same data, same run:
# the .npy benchmark data (1 KiB rows: float32[256], written by ferry gen),
# page cache warm, 2 ranks, shuffle=chunks, shuffle_buffer=4, batch 256 and
# 1024.  tests/bench/python_bench.py iterates the epochs in Python taking
# torch.from_dlpack of every variable of every batch; the per-batch
# overhead of the Python layer is (python time - ferry bench time) / batches
# per rank.
#
# usage: [EPOCHS=6] tests/bench/python.sh BUILD_DIR WORK_DIR [SIZE]   (SIZE default 1GiB)
# BUILD_DIR holds the ferry tool and python/ferry (configure found Python).
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [SIZE]}
size=${3:-1GiB}
epochs=${EPOCHS:-6}
py=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONPATH=$build/python
mkdir -p "$work"
if test "`cat "$work/made" 2>/dev/null`" != "$size"; then
  rm -rf "$work/data"
  "$build/ferry" gen "$work/data" --size "$size" --var samples:float32:256 >/dev/null
  echo "$size" >"$work/made"
fi
cat "$work"/data/*.npy >/dev/null   # page cache warm
for bs in 256 1024; do
  for rep in 1 2 3; do
    mpirun --oversubscribe -np 2 "$build/ferry" bench "$work/data" --epochs $epochs \
      --batch-size $bs --shuffle chunks --shuffle-buffer 4 --json |
      sed "s/^{/{\"kind\": \"bench\", \"batch\": $bs, /"
    mpirun --oversubscribe -np 2 "$py" "$here/python_bench.py" "$work/data" $bs $epochs
  done
done >"$work/python.jsonl"
"$py" - "$work/python.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
for bs in (256, 1024):
    b = max((r for r in rows if r.get("kind") == "bench" and r["batch"] == bs),
            key=lambda r: r["samples_per_s"])
    p = max((r for r in rows if r.get("kind") == "python" and r["batch"] == bs),
            key=lambda r: r["samples_per_s"])
    nb = p["batches_per_rank"]
    over = (p["elapsed_s"] - b["elapsed_s"]) / nb * 1e6
    print("batch %5d: ferry bench %.3g samples/s, python+torch.from_dlpack "
          "%.3g samples/s: %.3fx; Python overhead %.1f us per batch "
          "(%d batches per rank)"
          % (bs, b["samples_per_s"], p["samples_per_s"],
             p["samples_per_s"] / b["samples_per_s"], over, nb))
PYEOF
