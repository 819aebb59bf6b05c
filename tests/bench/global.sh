#!/bin/sh
# global.sh - shuffle=global against shuffle=chunks and PyTorch, for
# docs/performance.md ("Global shuffle", issue 16).
#
# usage: tests/bench/global.sh BUILD_DIR WORK_DIR [SIZE] [TORCH_SECONDS]
#
# The .npy benchmark data of tests/bench/npy.sh (1 KiB rows, `ferry gen`,
# SIZE default 2GiB; reused when WORK_DIR/data exists), page cache warm,
# then in the same run, alternating so that the machine's noise hits every
# setting alike (3 rounds):
#   chunks    2 ranks, batch 1024, shuffle=chunks, shuffle_buffer=4
#   global    2 ranks, batch 1024, shuffle=global (exchange=1), shuffle_buffer=4
#   global05  the same with exchange=0.5
# then 4 ranks (oversubscribed) of chunks and global once each, and
# PyTorch DataLoader + DistributedSampler reading rows one by one (2
# processes, num_workers=0, tests/bench/torch_peer.py; skipped without
# torch).  Prints the ratios global/chunks and global/torch (bytes/s) and
# the exchange's bytes and time per epoch; results in WORK_DIR/global.jsonl.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-2GiB}
tsec=${4:-20}
ferry="$build/ferry"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
data="$work/data"
out="$work/global.jsonl"
: > "$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"
if ! test -f "$data/samples.npy"; then
  rm -rf "$data"
  "$ferry" gen "$data" --size "$size" --var samples:float32:256
fi
file="$data/samples.npy"
cat "$file" > /dev/null   # page cache warm

run() { # label ranks options...
  label=$1 np=$2; shift 2
  j=$($mpirun -np "$np" "$ferry" bench "$data" --epochs 2 --batch-size 1024 \
      --shuffle-buffer 4 --seed 1 --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"ranks\":$np,\"ferry\":$j}" >> "$out"
  echo "$label np=$np: $(echo "$j" | $py -c 'import json,sys; d=json.load(sys.stdin); print("%.1f MiB/s, exchange %.1f MiB, %.3f s" % (d["bytes_per_s"]/2**20, d.get("exchange_bytes",0)/2**20, d.get("exchange_seconds_max",0)))')"
}
for i in 1 2 3; do
  run chunks 2 --shuffle chunks
  run global 2 --shuffle global
  run global05 2 --shuffle global --exchange 0.5
done
run chunks4 4 --shuffle chunks
run global4 4 --shuffle global

if $py -c 'import torch' >/dev/null 2>&1; then
  echo "== torch DataLoader + DistributedSampler (2 processes, num_workers=0, $tsec s)"
  for r in 0 1; do
    $py "$here/torch_peer.py" "$file" $r 2 1024 0 "$tsec" > "$work/torch.$r" &
  done
  wait
  cat "$work"/torch.0 "$work"/torch.1 | $py -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
sps = sum(r["samples"] / r["seconds"] for r in rows)
print(json.dumps({"kind": "torch", "samples_per_s": sps, "bytes_per_s": sps * 1024}))' | tee -a "$out"
else
  echo "skip torch: $py has no torch"
fi

$py - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def bps(kind):
    v = [r["ferry"]["bytes_per_s"] for r in rows if r["kind"] == kind]
    return sorted(v)[len(v) // 2] if v else None
med = {k: bps(k) for k in ("chunks", "global", "global05", "chunks4", "global4")}
for k, v in med.items():
    print("%-9s median %8.1f MiB/s" % (k, (v or 0) / 2**20))
print("global/chunks (2 ranks, median of 3): %.2f" % (med["global"] / med["chunks"]))
print("global(Q=0.5)/chunks (2 ranks): %.2f" % (med["global05"] / med["chunks"]))
print("global/chunks (4 ranks, oversubscribed, one run): %.2f" % (med["global4"] / med["chunks4"]))
g = [r["ferry"] for r in rows if r["kind"] == "global"]
for d in g[:1]:
    ep = 2.0
    print("exchange per epoch (2 ranks, Q=1): %.1f MiB sent over all ranks, "
          "%.3f s on the slowest rank's I/O thread; bytes handed out per "
          "epoch %.1f MiB" % (d["exchange_bytes"] / ep / 2**20,
                              d["exchange_seconds_max"] / ep,
                              d["bytes_handed"] / ep / 2**20))
t = [r for r in rows if r["kind"] == "torch"]
if t:
    print("global/torch: %.1f" % (med["global"] / t[0]["bytes_per_s"]))
PY
