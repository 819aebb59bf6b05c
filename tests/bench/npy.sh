#!/bin/sh
# npy.sh - the .npy benchmark of docs/performance.md (issue: the loader).
#
# usage: tests/bench/npy.sh BUILD_DIR WORK_DIR [SIZE]
#
# Writes a SIZE (default 2GiB) dataset of 1 KiB rows with `ferry gen`, warms
# the page cache, then measures in the same run:
#   dd         dd if=samples.npy of=/dev/null bs=4M        (the machine's read rate)
#   ferry      mpirun -np 2 ferry bench ... shuffle=chunks, shuffle_buffer=4
#   torch      2 processes of DataLoader + DistributedSampler, rows one by one
#   sweeps     ferry over batch sizes (2 ranks) and ranks (batch 1024)
# Results go to WORK_DIR/results.jsonl and a summary table on stdout;
# tests/bench/plot.py turns results.jsonl into the plots of docs/.
set -eu
build=$(cd "$1" && pwd)
work=$2
size=${3:-2GiB}
ferry="$build/ferry"
py=/usr/bin/python3
mkdir -p "$work"
work=$(cd "$work" && pwd)
data="$work/data"
out="$work/results.jsonl"
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
bytes=$(stat -c %s "$file")
cat "$file" > /dev/null   # page cache warm

echo "== dd"
dd_bps=0
for i in 1 2 3; do
  # dd's own report: "N bytes (...) copied, T s, R GB/s"
  t=$(LC_ALL=C dd if="$file" of=/dev/null bs=4M 2>&1 | tail -1 | awk '{print $(NF-3)}')
  bps=$($py -c "print(int($bytes / max($t, 1e-9)))")
  echo "dd run $i: $t s, $bps B/s"
  echo "{\"kind\":\"dd\",\"bytes_per_s\":$bps,\"seconds\":$t}" >> "$out"
  test "$bps" -gt "$dd_bps" && dd_bps=$bps
done

run_ferry() { # ranks batch label extra-options... (default: 2 epochs)
  np=$1; b=$2; label=$3; shift 3
  j=$($mpirun -np "$np" "$ferry" bench "$data" --epochs 2 --batch-size "$b" \
      --shuffle chunks --shuffle-buffer 4 --seed 1 --json "$@" | tail -1)
  echo "{\"kind\":\"$label\",\"ranks\":$np,\"batch\":$b,\"ferry\":$j}" >> "$out"
  echo "$label np=$np batch=$b: $j"
}

echo "== ferry (2 ranks, shuffle=chunks, shuffle_buffer=4)"
for i in 1 2 3; do run_ferry 2 1024 main; done
for i in 1 2 3; do run_ferry 2 1024 main5 --epochs 5; done
run_ferry 2 1024 collective --io collective

# Both usual DataLoader settings: num_workers=0 (no inter-process copies,
# the fastest here) and num_workers=1 per process (2 processes on 2 cores).
for w in 0 1; do
  echo "== torch DataLoader + DistributedSampler (2 processes, num_workers=$w, 20 s)"
  for r in 0 1; do
    $py "$(dirname "$0")/torch_peer.py" "$file" $r 2 256 $w 20 > "$work/torch.$r" &
  done
  wait
  cat "$work"/torch.0 "$work"/torch.1 | $py -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
sps = sum(r["samples"] / r["seconds"] for r in rows)
print(json.dumps({"kind": "torch", "workers": int(sys.argv[1]), "samples_per_s": sps}))' "$w" | tee -a "$out"
done

echo "== sweeps"
for b in 16 64 256 1024 4096 16384; do run_ferry 2 "$b" sweep_batch; done
for np in 1 2 4; do run_ferry "$np" 1024 sweep_ranks; done

$py - "$out" "$dd_bps" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
dd = max(r["bytes_per_s"] for r in rows if r["kind"] == "dd")
main = [r["ferry"] for r in rows if r["kind"] == "main"]
best = max(main, key=lambda f: f["bytes_per_s"])
torch = {r["workers"]: r["samples_per_s"] for r in rows if r["kind"] == "torch"}
coll = [r["ferry"] for r in rows if r["kind"] == "collective"][0]
best5 = max((r["ferry"] for r in rows if r["kind"] == "main5"), key=lambda f: f["bytes_per_s"])
print()
print("| measure | value |")
print("|---|---|")
print("| dd bs=4M (best of 3) | %.2f GB/s |" % (dd / 1e9))
print("| ferry 2 ranks, batch 1024, independent (best of 3) | %.2f GB/s, %.0f samples/s |" % (best["bytes_per_s"] / 1e9, best["samples_per_s"]))
print("| ferry 2 ranks, batch 1024, 5 epochs (best of 3) | %.2f GB/s |" % (best5["bytes_per_s"] / 1e9))
print("| ferry 2 ranks, batch 1024, collective, 2 epochs | %.2f GB/s |" % (coll["bytes_per_s"] / 1e9))
print("| ferry / dd, 2 epochs | %.0f%% (target >= 50%%) |" % (100 * best["bytes_per_s"] / dd))
print("| ferry / dd, 5 epochs | %.0f%% (target >= 50%%) |" % (100 * best5["bytes_per_s"] / dd))
for w in sorted(torch):
    print("| torch DataLoader+DistributedSampler, 2 procs, num_workers=%d | %.0f samples/s |" % (w, torch[w]))
    print("| ferry / torch (num_workers=%d) | %.0fx (target >= 100x) |" % (w, best["samples_per_s"] / torch[w]))
print("| ferry wait fraction | %.3f |" % best["wait_fraction"])
print("| memory budget / peak RSS per rank | %.1f MiB / %.1f MiB |" % (best.get("budget_bytes", 0) / 2**20, best["peak_rss_bytes"] / 2**20))
PY
