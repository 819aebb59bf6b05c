#!/bin/sh
# megatron.sh - the ragged-variable benchmark of docs/performance.md
# (issue 25): a Megatron-LM corpus read by ferry against the dense .npy path
# of the same bytes, and against the Megatron user's own loop.
#
# usage: tests/bench/megatron.sh BUILD_DIR WORK_DIR [SEQUENCES]
#
# Writes (once) WORK_DIR/meg, `ferry gen --format megatron` of SEQUENCES
# (default 10^7) int32 sequences of log-normal lengths (mean 16, sigma 0.6),
# and WORK_DIR/npy, a .npy of the same bytes (rows of 16 int32), reads both
# once to warm the page cache, then measures in the same run:
#   ragged/npy  ferry bench on the corpus and on the .npy, alternated, 3 runs
#               each (2 ranks, io=independent, batch 256, shuffle=chunks):
#               bytes handed out per second, the ratio of the medians
#   peer        2 processes of tests/bench/megatron_peer.py (numpy.memmap
#               indexed by the .idx, as Megatron's IndexedDataset.get
#               reads, the same batches of 256), 10 s, against ferry's
#               samples/s of the runs above
#   arrow/bin   (with node and apache-arrow) the same 2*10^6 sequences as
#               a Hugging Face shard (list<int32> input_ids, record batches
#               of 1000) and as a .bin/.idx (tests/bench/
#               make_arrow_corpus.mjs), and as Parquet list<int32>
#               (parquet-wasm, uncompressed and snappy, row groups of
#               100,000), and the same bytes as a Parquet binary column
#               (byte arrays, uncompressed), ferry bench on each,
#               alternated; the time of
#               `ferry info` on the Parquet files (the open, whose rank 0
#               decodes every chunk's levels for the offsets)
#   tokens      (the issue's max_tokens target) WORK_DIR/tok, 200,000
#               uint16 sequences of log-normal lengths (mean 300, sigma 1),
#               ferry bench on 2 ranks with max_tokens=16384 and
#               batch_size=1024, without buckets and with
#               bucket_window=4096 and pad=max (3 runs each, alternated),
#               and batch_size=64 batches for comparison: the padding
#               fraction (each batch padded to its longest sample) and
#               the rows (tokens) per second.  TOKENS_ONLY=1 runs only it.
# Results go to WORK_DIR/megatron-results.jsonl and a table on stdout.
# Run it on a quiet machine: every line is a ratio of runs made together.
set -eu
build=$(cd "$1" && pwd)
work=$2
seqs=${3:-10000000}
ferry="$build/ferry"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
out="$work/megatron-results.jsonl"
: >"$out"
if test "$(id -u)" = 0; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun="mpirun --oversubscribe --bind-to none"
if ! test -f "$work/tok/corpus.idx"; then
  "$ferry" gen "$work/tok" --format megatron --samples 200000 --mean-len 300 \
    --len-sigma 1.0 --var tokens:uint16
fi
cat "$work/tok/corpus.bin" "$work/tok/corpus.idx" >/dev/null
for run in 1 2 3; do
  for k in bs64 tok tokb; do
    case $k in
      bs64) o="--batch-size 64" ;;
      tok) o="--max-tokens 16384 --batch-size 1024" ;;
      tokb) o="--max-tokens 16384 --batch-size 1024 --bucket-window 4096 --pad max" ;;
    esac
    $mpirun -np 2 "$ferry" bench "$work/tok" $o --io independent --json |
      $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': 'tokens-$k', 'run': $run, 'samples_per_s': d['samples_per_s'], 'rows_per_s': d['rows_per_s'], 'padding_fraction': d['padding_fraction']}))" >>"$out"
  done
done
$py - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for k in ("bs64", "tok", "tokb"):
    r = [x for x in rows if x["what"] == "tokens-" + k]
    print("%-6s %12.0f tokens/s %10.0f samples/s  padding %5.1f%%" % (
        k, statistics.median(x["rows_per_s"] for x in r),
        statistics.median(x["samples_per_s"] for x in r),
        100 * statistics.median(x["padding_fraction"] for x in r)))
PY
test "${TOKENS_ONLY:-0}" = 1 && exit 0
if ! test -f "$work/meg/corpus.idx"; then
  "$ferry" gen "$work/meg" --format megatron --samples "$seqs" --mean-len 16 \
    --len-sigma 0.6
fi
if ! test -f "$work/npy/x.npy"; then
  "$ferry" gen "$work/npy" --var x:int32:16 --samples "$seqs"
fi
cat "$work/meg/corpus.bin" "$work/meg/corpus.idx" "$work/npy/x.npy" >/dev/null
opts="--batch-size 256 --io independent --json"
for run in 1 2 3; do
  for ds in meg npy; do
    $mpirun -np 2 "$ferry" bench "$work/$ds" $opts |
      $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': '$ds', 'run': $run, 'samples_per_s': d['samples_per_s'], 'bytes_per_s': d['bytes_per_s']}))" >>"$out"
  done
done
for r in 0 1; do
  $py "$here/megatron_peer.py" "$work/meg/corpus" $r 2 256 10 >"$work/peer.$r" &
done
wait
if command -v node >/dev/null 2>&1 &&
   test -d "$here/../parquet/node_modules/apache-arrow"; then
  test -f "$work/arb/pqb/binary.parquet" ||
    node "$here/make_arrow_corpus.mjs" "$work/arb" 2000000
  cat "$work/arb/hf/"*.arrow "$work/arb/meg/corpus."* "$work/arb/pq"*/* >/dev/null
  for ds in pq pqs; do # the open: rank 0 decodes every chunk's levels
    /usr/bin/time -f "%e" -o "$work/open.$ds" "$ferry" info "$work/arb/$ds" >/dev/null
    echo "{\"what\": \"open-$ds\", \"seconds\": `cat "$work/open.$ds"`}" >>"$out"
  done
  for run in 1 2 3; do
    for ds in hf meg pq pqs pqb; do
      $mpirun -np 2 "$ferry" bench "$work/arb/$ds" $opts |
        $py -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'what': 'arrow-$ds', 'run': $run, 'samples_per_s': d['samples_per_s'], 'bytes_per_s': d['bytes_per_s']}))" >>"$out"
    done
  done
fi
$py - "$out" "$work/peer.0" "$work/peer.1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda what, k: statistics.median(r[k] for r in rows if r["what"] == what)
peer = [json.loads(open(p).read()) for p in sys.argv[2:4]]
peer_sps = sum(p["samples"] / p["seconds"] for p in peer)
meg_b, npy_b = med("meg", "bytes_per_s"), med("npy", "bytes_per_s")
meg_s = med("meg", "samples_per_s")
print("ragged .bin/.idx  %8.1f MiB/s   .npy %8.1f MiB/s   ratio %.2f (target >= 0.8)"
      % (meg_b / 2**20, npy_b / 2**20, meg_b / npy_b))
print("ferry %12.0f samples/s   Megatron's memmap loop %10.0f samples/s   ratio %.1f (target >= 5)"
      % (meg_s, peer_sps, meg_s / peer_sps))
if any(r["what"] == "arrow-hf" for r in rows):
    a, b = med("arrow-hf", "bytes_per_s"), med("arrow-meg", "bytes_per_s")
    print("Hugging Face Arrow %8.1f MiB/s   .bin/.idx %8.1f MiB/s   ratio %.2f (target >= 0.8)"
          % (a / 2**20, b / 2**20, a / b))
    for ds in ("pq", "pqs"):
        p = med("arrow-" + ds, "bytes_per_s")
        o = [r["seconds"] for r in rows if r["what"] == "open-" + ds]
        print("Parquet list<int32> (%s) %8.1f MiB/s   .bin/.idx %8.1f MiB/s   ratio %.2f   ferry info (the open) %.2f s"
              % ("uncompressed" if ds == "pq" else "snappy", p / 2**20, b / 2**20, p / b, o[0]))
    if any(r["what"] == "arrow-pqb" for r in rows):
        p = med("arrow-pqb", "bytes_per_s")
        print("Parquet binary (byte arrays) %8.1f MiB/s   .bin/.idx %8.1f MiB/s   ratio %.2f"
              % (p / 2**20, b / 2**20, p / b))
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"what": "peer", "samples_per_s": peer_sps}) + "\n")
PY
