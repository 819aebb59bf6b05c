#!/bin/sh
# ragged_scale.sh - the 10^8-sequence scale benchmark of docs/performance.md
# and docs/ragged.md ("At scale", issue 25): the offsets of a Megatron
# corpus held after a scan against mapped from a saved manifest.
#
# usage: tests/bench/ragged_scale.sh BUILD_DIR WORK_DIR [SEQUENCES [RANKS]]
#
# Writes (once) WORK_DIR/scale/c.idx, a Megatron index of SEQUENCES
# (default 10^8) uint16 sequences of 1 to 7 tokens (NumPy, seed 1; 1.3 GB)
# and a sparse c.bin (800 MB, a hole: nothing is written), then on RANKS
# (default 4) ranks, each rank's wall time and peak RSS (/usr/bin/time):
#   save      ferry info --save-manifest (1 rank): the scan, m.json.roff
#   scan      ferry dump --max-chunks 8: the open of a scan (every rank
#             holds the offsets) and a few batches
#   mapped    the same through the saved manifest (offsets mapped)
#   epoch     ferry bench of a whole epoch through the manifest,
#             batch_size=1024
#   tokens    the same with max_tokens=4096, and with bucket_window=4096
# Needs /usr/bin/python3 with NumPy.  Prints one line per run.
set -eu
build=$(cd "$1" && pwd)
work=$2
seqs=${3:-100000000}
np=${4:-4}
ferry=$build/ferry
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-mpirun --oversubscribe -np}
d=$work/scale
mkdir -p "$d"
if test ! -f "$d/c.idx"; then
  /usr/bin/python3 - "$d" "$seqs" <<'PY'
import sys, numpy as np
d, n = sys.argv[1], int(sys.argv[2])
sizes = np.random.default_rng(1).integers(1, 8, n, dtype=np.int32)
ptr = np.zeros(n, dtype=np.int64)
np.cumsum(sizes[:-1].astype(np.int64) * 2, out=ptr[1:])
docs = np.arange(0, n + 1, 10, dtype=np.int64)
if docs[-1] != n:
    docs = np.append(docs, n)
with open(d + "/c.idx", "wb") as f:      # MMIDIDX, version 1, uint16 (8)
    f.write(b"MMIDIDX\x00\x00" + np.array([1], "<u8").tobytes() + bytes([8]))
    f.write(np.array([n, len(docs)], "<u8").tobytes())
    f.write(sizes.tobytes() + ptr.tobytes() + docs.tobytes())
with open(d + "/c.bin", "wb") as f:
    f.truncate(int(ptr[-1]) + 2 * int(sizes[-1]))
PY
fi
rank_rss='exec /usr/bin/time -f "%e %M" -o "$0.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" "$@"'
run() { # LABEL NP ARGS...: one line, each rank's seconds and peak RSS (MiB)
  label=$1 n=$2
  shift 2
  rm -f "$d"/rss.*
  $mpirun "$n" sh -c "$rank_rss" "$d/rss" "$ferry" "$@" >"$d/$label.out" 2>&1 ||
    { echo "$label: failed"; tail -3 "$d/$label.out"; return 0; }
  printf '%-8s' "$label"
  for f in "$d"/rss.*; do
    awk '{printf " %.1f s %.1f MiB;", $1, $2 / 1024}' "$f"
  done
  echo
}
run save 1 info "$d/c.idx" --save-manifest "$d/m.json"
run scan "$np" dump "$d/c.idx" --max-chunks 8 --batch-size 256 --output /dev/null
run mapped "$np" dump "$d/c.idx" --manifest "$d/m.json" --max-chunks 8 \
  --batch-size 256 --output /dev/null
run epoch "$np" bench "$d/c.idx" --manifest "$d/m.json" --batch-size 1024
run tokens "$np" bench "$d/c.idx" --manifest "$d/m.json" --max-tokens 4096
run buckets "$np" bench "$d/c.idx" --manifest "$d/m.json" --max-tokens 4096 \
  --bucket-window 4096
