#!/bin/sh
# plan_scale.sh - the plan's scale run (issue 12): a .npy of N one-byte
# samples (default 10^8, 100 MB) read with chunk_samples=100 (10^6 chunks);
# for each rank count (oversubscribed on this machine) the time of
# ferry_open, ferry_set_epoch and the first ferry_next (slowest rank), and
# the peak RSS per rank (tests/bench/plan_scale.c, public API only).  Then
# the plan of one rank of WORLD simulated ranks computed alone
# (tests/bench/plan_sim.c, linked with the library's internals), time and
# peak RSS, when the build has it, and that of an elastic resume (4 ranks
# to 3).
#
# usage: tests/bench/plan_scale.sh BUILD_DIR WORK_DIR [RANKS...]
#        (default ranks: 4 16 64; N, WORLD (4096) from the environment;
#        ELASTIC=1: also a state saved on 4 ranks loaded on 3;
#        the data set is deleted at the end unless KEEP=1)
set -e
build=$(cd "${1:?usage: $0 BUILD_DIR WORK_DIR [RANKS...]}" && pwd)
work=${2:?usage: $0 BUILD_DIR WORK_DIR [RANKS...]}
shift 2
ranks=${*:-4 16 64}
n=${N:-100000000}
world=${WORLD:-4096}
py=${PYTHON:-/usr/bin/python3}
src=$(cd "$(dirname "$0")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work"
f=$work/scale.npy
if test ! -f "$f"; then
  "$py" -c "
import numpy as np
a = np.lib.format.open_memmap('$f', mode='w+', dtype=np.uint8, shape=($n,))
a[:] = np.arange($n) % 251
a.flush()"
fi
cat "$f" >/dev/null
lib=$build/.libs
mpicc -O2 -I"$src/include" -I"$build/include" "$src/tests/bench/plan_scale.c" \
  -o "$work/plan_scale" -L"$lib" -lferry -Wl,-rpath,"$lib"
for p in $ranks; do
  mpirun --oversubscribe -np "$p" "$work/plan_scale" "$f" chunk_samples=100
done
if test "${ELASTIC:-0}" = 1; then # a state saved on 4 ranks, loaded on 3
  FERRY_BENCH_SAVE=$work/scale.state mpirun --oversubscribe -np 4 \
    "$work/plan_scale" "$f" chunk_samples=100
  FERRY_BENCH_LOAD=$work/scale.state mpirun --oversubscribe -np 3 \
    "$work/plan_scale" "$f" chunk_samples=100
  rm -f "$work/scale.state"
fi
if test -x "$build/tests/bench/plan_sim"; then
  /usr/bin/time -f "plan_sim peak RSS %M KiB" \
    "$build/tests/bench/plan_sim" "$n" 100 "$world" 0
  /usr/bin/time -f "plan_sim peak RSS %M KiB" \
    "$build/tests/bench/plan_sim" "$n" 100 "$world" $((world - 1))
  # an elastic resume (ferry_state_load of a state saved on 4 ranks, loaded
  # on 3): rank 0's plan after 1000 batches per rank
  /usr/bin/time -f "plan_sim peak RSS %M KiB" \
    "$build/tests/bench/plan_sim" "$n" 100 3 0 4 1000
fi
test "${KEEP:-0}" = 1 || rm -f "$f"
