#!/bin/sh
# python.sh - a Python training script under Slurm, the way users launch
# one: `sbatch slurm/ferry-generic.sbatch` with FERRY="python3 train.py"
# (the template's documented form for a command of several words), on the
# test cluster: srun starts 4 tasks of examples/ddp_distributed_sampler.py
# (ferry.torch + DistributedDataParallel, mpi4py's COMM_WORLD from srun's
# PMIx); the job exits 0, every rank got the same number of batches, every
# sample of every epoch was served once (the example checks len() against
# the batches served and the script sums the samples), and the loss fell.
#
# Environment: as tests/slurm/sbatch.sh, plus FERRY_PYTHON, FERRY_PYTHONPATH
# (make check sets them when the Python package is built).  Exit 0 pass,
# 1 fail, 77 skip (no cluster, no Python package, or no torch/mpi4py).
# (read before slurm_test_init, which unsets the FERRY_* loader options)
PY=${FERRY_PYTHON:-}
pypath=${FERRY_PYTHONPATH:-}
. "`dirname "$0"`/common.sh"
slurm_test_init python
if test -z "$PY" || test -z "$pypath"; then
  echo "SKIP: the Python package is not built"
  exit 77
fi
for m in numpy torch mpi4py; do
  "$PY" -c "import $m" >/dev/null 2>&1 ||
    { echo "SKIP: $PY cannot import $m"; exit 77; }
done
template=$top_srcdir/slurm/ferry-generic.sbatch
cd "$tmp" || exit 99
FERRY_MODULES=
PYTHONPATH=$pypath${PYTHONPATH:+:$PYTHONPATH}
export FERRY_MODULES PYTHONPATH
"$PY" "$top_srcdir/examples/make_data.py" npy "$tmp/data" 4096 >"$tmp/make.log" 2>&1 ||
  { echo "FAIL: make_data.py"; show "$tmp/make.log"; exit 1; }
FERRY="$PY $top_srcdir/examples/ddp_distributed_sampler.py" \
  slurm_run 240 sbatch --wait --output="$tmp/job.out" "$template" "$tmp/data" 2 \
  >"$tmp/sbatch.out" 2>&1
st=$?
line=`grep '^ddp_distributed_sampler: ' "$tmp/job.out"`
if test $st = 0 &&
   echo "$line" | grep '^ddp_distributed_sampler: 4 ranks, 2 epochs, .*(equal: True), 8192 samples' >/dev/null &&
   grep 'exited with status 0$' "$tmp/job.out" >/dev/null; then
  echo "ok: sbatch ferry-generic.sbatch with FERRY=\"python3 train.py\": $line"
else
  echo "FAIL: sbatch ferry-generic.sbatch with a Python script: sbatch status $st"
  show "$tmp/sbatch.out" "$tmp/job.out"
  fail=1
fi
exit $fail
