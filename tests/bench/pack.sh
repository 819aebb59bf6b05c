#!/bin/sh
# pack.sh - the benchmarks of packed rows (pack=concat, docs/lm.md and
# docs/performance.md, "Packed rows", issue 26).
#
# usage: tests/bench/pack.sh BUILD_DIR WORK_DIR plan [DOCS [RANKS...]]
#        tests/bench/pack.sh BUILD_DIR WORK_DIR throughput
#
# plan: writes (once) WORK_DIR/plan-DOCS/c.idx, a Megatron index of DOCS
# (default 10^7) uint16 documents of 1 to 2 * MEAN - 1 tokens (MEAN,
# default 1000, from the environment; NumPy, seed 1) and a sparse c.bin
# (nothing written), saves its manifest (ferry info --save-manifest, 1
# rank), then runs tests/bench/plan_scale (ferry_open, ferry_set_epoch,
# the first batch: the slowest rank's seconds, every rank's peak RSS)
# through it with pack=concat seq_len=2048 overlap=1 on each of RANKS
# (default 4 64); and, with MEGATRON_LM set to a Megatron-LM checkout,
# Megatron's build_sample_idx over the same lengths
# (tests/pack/megatron_gpt.py's compiled helper; stored order, one epoch).
#
# throughput: a corpus of 200,000 uint16 documents (log-normal lengths,
# mean 300) in the page cache; ferry bench on 2 ranks (batch 64, 10
# epochs, threads=1), three rounds, alternated: the documents as ragged
# samples (pack=none), pack=concat seq_len=2048 with vars=tokens, and with
# every output (overlap=1), with io=auto (mapped); then io=independent:
# ragged, pack tokens, pack tokens with pack_chunk=64; then tests/bench/pack_peer.py, a per-rank Python
# loop over numpy.memmap (documents of the rank's contiguous share
# concatenated, cut into rows of 2049 tokens, batches of 64 rows), on 2
# processes for 10 s.  Prints tokens/s for each.
set -eu
build=$(cd "$1" && pwd)
work=$2
mode=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
ferry=$build/ferry
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-mpirun --oversubscribe -np}
mkdir -p "$work"

if test "$mode" = plan; then
  docs=${1:-10000000}
  test $# -gt 0 && shift
  ranks=${*:-4 64}
  d=$work/plan-$docs
  mkdir -p "$d"
  if test ! -f "$d/c.idx"; then
    /usr/bin/python3 - "$d" "$docs" "${MEAN:-1000}" <<'PY'
import sys, numpy as np
d, n, mean = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sizes = np.random.default_rng(1).integers(1, 2 * mean, n, dtype=np.int32)
ptr = np.zeros(n, dtype=np.int64)
np.cumsum(sizes[:-1].astype(np.int64) * 2, out=ptr[1:])
docs = np.arange(n + 1, dtype=np.int64)
with open(d + "/c.idx", "wb") as f:      # MMIDIDX, version 1, uint16 (8)
    f.write(b"MMIDIDX\x00\x00" + np.array([1], "<u8").tobytes() + bytes([8]))
    f.write(np.array([n, len(docs)], "<u8").tobytes())
    f.write(sizes.tobytes() + ptr.tobytes() + docs.tobytes())
with open(d + "/c.bin", "wb") as f:
    f.truncate(int(ptr[-1]) + 2 * int(sizes[-1]))
print("plan corpus: %d documents, %d tokens" % (n, int(sizes.sum(dtype=np.int64))))
PY
  fi
  if test ! -f "$d/m.json"; then
    /usr/bin/time -f "save: %e s %M KiB" "$ferry" info "$d/c.idx" \
      --save-manifest "$d/m.json" >/dev/null
  fi
  src=$(cd "$here/../.." && pwd)
  mpicc -O2 -I"$src/include" -I"$build/include" "$src/tests/bench/plan_scale.c" \
    -o "$work/plan_scale" -L"$build/.libs" -lferry -Wl,-rpath,"$build/.libs"
  for P in $ranks; do
    $mpirun "$P" "$work/plan_scale" "$d/c.idx" \
      manifest="$d/m.json" pack=concat seq_len=2048 overlap=1 \
      batch_size=8 2>&1 | tail -1
  done
  if test -n "${MEGATRON_LM:-}"; then
    PYTHONPATH="$build/python" /usr/bin/python3 - "$MEGATRON_LM" "$d" "$here/../pack" <<'PY'
import sys, time, numpy as np
sys.path.insert(0, sys.argv[3])
import megatron_gpt
h = megatron_gpt.build_helpers(sys.argv[1], "/tmp/ferry-megatron-helpers")
sizes, ptrs, dt = megatron_gpt.read_index(sys.argv[2] + "/c")
di = np.arange(len(sizes), dtype=np.int32)
t0 = time.perf_counter()
si = h.build_sample_idx_int64(sizes, di, 2048, 1, int(sizes.sum(dtype=np.int64)), True, 1)
t = time.perf_counter() - t0
import resource
print("megatron build_sample_idx: %d samples in %.2f s (stored order, "
      "one epoch; peak RSS %.0f MiB with the index read)"
      % (len(si) - 1, t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
PY
  fi
  exit 0
fi

# throughput
d=$work/tput
if test ! -f "$d/corpus.idx"; then
  "$ferry" gen "$d" --format megatron --samples 200000 --var tokens:uint16 \
    --mean-len 300 --len-sigma 1 >/dev/null
fi
cat "$d/corpus.bin" "$d/corpus.idx" >/dev/null
bench() { # LABEL ARGS...: tokens/s of a 2-rank ferry bench
  label=$1
  shift
  $mpirun 2 "$ferry" bench "$d" --batch-size 64 --epochs 10 \
    --threads 1 "$@" >"$d/$label.out" 2>&1 || {
    echo "$label: failed"
    tail -3 "$d/$label.out"
    return 0
  }
  grep -E '^(ragged|pack):' "$d/$label.out" | cut -d';' -f1 | sed "s/^/$label /"
}
for round in 1 2 3; do
  bench ragged --io auto
  bench concat --pack concat --seq-len 2048 --vars tokens --io auto
  bench concat_all --pack concat --seq-len 2048 --overlap 1 --io auto
  bench first_fit --pack first_fit --seq-len 2048 --vars tokens --io auto
  bench ragged_indep --io independent
  bench concat_indep --pack concat --seq-len 2048 --vars tokens --io independent
  bench concat_indep64 --pack concat --seq-len 2048 --vars tokens \
    --io independent --pack-chunk 64
done
$mpirun 2 /usr/bin/python3 "$here/pack_peer.py" "$d/corpus" 2048 64 10
