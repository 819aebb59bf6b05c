#!/bin/sh
# srun.sh - ferry started by Slurm itself: `srun -n 4 --mpi=pmix ferry
# verify` on every backend this ferry has (npy and mem always; hdf5 and zarr
# when built and h5py or zarr-python can write the copy), then the README's
# example program through tests/run-mpi.sh with MPIRUN=srun.  Each run must exit 0, print "ferry
# verify: PASS" once and count 4 ranks: 4 tasks that each came up as a
# singleton (a PMIx wire-up that silently failed) would print 4 reports of
# 1 rank.
#
# It also records which MPI plugins `srun --mpi=list` offers and tries pmi2:
# Debian's Open MPI is built without Slurm's PMI-2 (ompi_info shows no pmix
# s1/s2 component), so there a pmi2 launch must fail fast with Open MPI's
# "not built with SLURM's PMI support" message rather than hang; with an Open
# MPI that has the s2 component it must pass like pmix.
#
# Bugs it pins: a ferry that needs mpirun (rank and size taken from
# OMPI_* variables instead of MPI); a job step that hangs in MPI_Init.
#
# Environment: as tests/lib/common.sh's scripts, plus FERRY_TEST_SLURM_DIR (the cluster of
# tests/slurm/cluster.sh; unset: skip).  Exit 0 pass, 1 fail, 77 skip.

. "`dirname "$0"`/common.sh"
slurm_test_init srun
STEP_LIMIT=${FERRY_MPI_TIMEOUT:-100}

# The plugin names are the indented lines of `srun --mpi=list`.
plugins() { sed -n 's/^[ 	][ 	]*\([a-z0-9_]*\)$/\1/p' "$tmp/list"; }
if slurm_run 20 srun --mpi=list >"$tmp/list" 2>&1; then
  echo "ok: srun --mpi=list offers: `plugins | tr '\n' ' '`"
else
  echo "FAIL: srun --mpi=list"
  show "$tmp/list"
  exit 1
fi
offers() { plugins | grep -x "$1" >/dev/null; }
if ! offers pmix; then
  echo "FAIL: this Slurm has no mpi/pmix plugin (Debian: slurm-wlm-basic-plugins); Open MPI 4 starts under srun only through PMIx"
  exit 1
fi

# verify_srun LABEL MPI DATASET [OPTIONS]: srun -n 4 --mpi=MPI ferry verify.
verify_srun() {
  label=$1 mpi=$2 ds=$3
  shift 3
  slurm_run "$STEP_LIMIT" srun -n 4 --mpi="$mpi" "$FERRY" verify "$ds" "$@" \
    >"$tmp/out" 2>&1
  st=$?
  npass=`grep -c '^ferry verify: PASS' "$tmp/out"`
  if test $st = 0 && test "$npass" = 1 && grep '^ferry verify: .*, 4 ranks,' "$tmp/out" >/dev/null; then
    echo "ok: srun -n 4 --mpi=$mpi ferry verify $label: `grep '^ferry verify: PASS' "$tmp/out"`"
  else
    echo "FAIL: srun -n 4 --mpi=$mpi ferry verify $label: status $st, $npass PASS lines (want 0 and 1, over 4 ranks)"
    show "$tmp/out"
    fail=1
  fi
}

if ! "$FERRY" gen "$tmp/npy" --size 8MiB --var samples:float32:256 \
     --var targets:int64 >"$tmp/gen.log" 2>&1; then
  echo "FAIL: ferry gen"
  show "$tmp/gen.log"
  exit 1
fi
backends=`"$FERRY" --version | sed -n 's/^backends: *//p'`
echo "ferry's backends: $backends"

for b in $backends; do
  case $b in
    npy)
      verify_srun "on .npy files" pmix "$tmp/npy" --epochs 2 ;;
    mem)
      verify_srun "on a mem: dataset" pmix "mem:N=5003,vars=x:float32:16,y:int64" \
        --epochs 2 --batch-size 32 ;;
    hdf5|zarr)
      # The same samples as the .npy dataset, in one HDF5 file (h5py) or one
      # Zarr store (zarr-python, its default Blosc compressor), chunked so
      # that the ranks read different chunks.
      mod=h5py
      test $b = zarr && mod=zarr
      if test -z "${PYTHON_NUMPY:-}" ||
         ! "$PYTHON_NUMPY" -c "import $mod" >/dev/null 2>&1; then
        echo "note: $b backend not tried: no Python with $mod (PYTHON_NUMPY='${PYTHON_NUMPY:-}')"
        continue
      fi
      if "$PYTHON_NUMPY" - $b "$tmp/npy" "$tmp/data.$b" >"$tmp/conv.log" 2>&1 <<'EOF'
import sys
import numpy as np
fmt, src, dst = sys.argv[1:4]
if fmt == "hdf5":
    import h5py
    out = h5py.File(dst, "w")
else:
    import zarr
    out = zarr.open_group(dst, mode="w")
for name in ("samples", "targets"):
    a = np.load(src + "/" + name + ".npy")
    out.create_dataset(name, data=a, chunks=(1000,) + a.shape[1:])
if fmt == "hdf5":
    out.close()
EOF
      then
        verify_srun "on a $b copy" pmix "$tmp/data.$b" --epochs 2 --tail partial
      else
        echo "FAIL: could not write the $b copy with $mod"
        show "$tmp/conv.log"
        fail=1
      fi ;;
    *)
      echo "note: no Slurm run for backend '$b' (this test does not know how to make its data)" ;;
  esac
done

# pmi2: what Open MPI can use depends on how it was built.
if offers pmi2; then
  if command -v ompi_info >/dev/null 2>&1 &&
     ompi_info 2>/dev/null | grep -E 'MCA pmix: (s1|s2)' >/dev/null; then
    verify_srun "on .npy files (Open MPI has Slurm PMI-2)" pmi2 "$tmp/npy" --epochs 1
  else
    slurm_run 60 srun -n 2 --mpi=pmi2 "$FERRY" verify "$tmp/npy" --epochs 1 \
      >"$tmp/out" 2>&1
    st=$?
    if test $st = 124 || test $st = 137; then
      echo "FAIL: srun --mpi=pmi2 hung instead of failing"
      fail=1
    elif test $st != 0 && grep "not built with SLURM's PMI support" "$tmp/out" >/dev/null; then
      echo "ok: srun --mpi=pmi2 is offered by Slurm, but this Open MPI has no PMI-2 client (no s1/s2 component): it stops at once with \"OMPI was not built with SLURM's PMI support\" (status $st); use --mpi=pmix"
    elif test $st = 0; then
      echo "ok: srun --mpi=pmi2 works with this MPI too"
    else
      echo "FAIL: srun --mpi=pmi2 failed (status $st) without Open MPI's PMI message"
      show "$tmp/out"
      fail=1
    fi
  fi
else
  echo "note: this Slurm offers no pmi2 plugin"
fi

# The test harness's own launcher wrapper with srun (run-mpi.sh passes -n):
# the README's example over 3 ranks prints the exact count.
example=$top_builddir/tests/example
if test -x "$example"; then
  N=1013
  "$FERRY" gen "$tmp/ex" --samples $N --var samples:float32:8 --var targets:int64 \
    >/dev/null 2>&1
  # srun --quiet: without it srun adds "srun: job N queued and waiting for
  # resources" when another test's job holds the one node (the Slurm tests
  # run two at a time: a fresh ./bootstrap check failed so, 2026-11-27);
  # its errors still show.
  MPIRUN=srun MPIRUN_FLAGS='--mpi=pmix --quiet' $RUN_MPI 3 "$example" "$tmp/ex" \
    >"$tmp/out" 2>&1
  st=$?
  # nothing else: a CUDA build on a machine without a GPU is silent
  want="served `expr 2 \* $N` samples in 2 epochs of $N"
  if test $st = 0 && test "`cat "$tmp/out"`" = "$want"; then
    echo "ok: MPIRUN=srun run-mpi.sh 3 tests/example: $want"
  else
    echo "FAIL: MPIRUN=srun run-mpi.sh 3 tests/example: status $st, expected exactly '$want'"
    show "$tmp/out"
    fail=1
  fi
else
  echo "note: $example not built: the run-mpi.sh-with-srun check is left out"
fi

exit $fail
