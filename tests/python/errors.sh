#!/bin/sh
# errors.sh - bad options and datasets raise the ferry.Error subclass with
# the C message on every rank (2 ranks); a torchrun-style launch (WORLD_SIZE
# set, an MPI world of 1) is refused with a message naming srun and mpirun;
# an mpi4py over another MPI library is refused with a message naming both.
. "$top_srcdir/tests/python/common.sh"
"$PY" "$pydir/make_npy.py" "$tmp/data" 50 || exit 1
status=0
$RUN_MPI 2 "$PY" "$pydir/errors_check.py" "$tmp/data" || status=1
out=`RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 $RUN_MPI 1 "$PY" -c "
import ferry
try:
    ferry.Loader('$tmp/data')
    print('accepted')
except ferry.MPIError as e:
    print('refused:', e)
" 2>&1`
echo "$out"
case $out in
  *refused:*srun*mpirun*) ;;
  *) echo "FAIL: torchrun-style launch not refused"; status=1 ;;
esac
# mpi4py built against another MPI than ferry's (an mpi4py.MPI whose
# Get_library_version names MPICH): a clear ferry.MPIError naming both,
# before any MPI call, instead of a crash
out=`$RUN_MPI 1 "$PY" -c "
import sys, types
import ferry
fake = types.ModuleType('mpi4py.MPI')
fake.Get_library_version = lambda: 'MPICH Version: 4.1.2\\nMPICH Release date'
sys.modules['mpi4py.MPI'] = fake
try:
    ferry.Loader('$tmp/data')
    print('accepted')
except ferry.MPIError as e:
    print('refused:', e)
" 2>&1`
echo "$out"
case $out in
  *refused:*"different MPI libraries"*MPICH*"built with"*) ;;
  *) echo "FAIL: mpi4py's other MPI not refused clearly"; status=1 ;;
esac
exit $status
