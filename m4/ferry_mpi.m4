# ferry_mpi.m4 - MPI: the compiler wrapper ferry is built with, and the
# launcher the tests run under.

# FERRY_PROG_MPICC
# Choose the compiler before AC_PROG_CC looks at CC.  Order: --with-mpicc,
# then $MPICC, then an explicit $CC (e.g. Cray's cc, which is MPI-aware),
# then the first mpicc on PATH.
AC_DEFUN([FERRY_PROG_MPICC], [
  AC_BEFORE([$0], [AC_PROG_CC])
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AC_ARG_WITH([mpicc],
    [AS_HELP_STRING([--with-mpicc=PROG],
      [MPI C compiler wrapper to build with (default: $MPICC, else $CC when
       set, else mpicc from PATH)])],
    [], [with_mpicc=check])
  AS_CASE([$with_mpicc],
    [no], [AC_MSG_ERROR([ferry is an MPI library: --without-mpicc is not possible])],
    [yes|check], [],
    [MPICC=$with_mpicc])
  AS_IF([test -n "$MPICC"], [
          ferry_mpicc_prog=`echo "$MPICC" | sed 's/ .*//'`
          AS_IF([command -v "$ferry_mpicc_prog" >/dev/null 2>&1], [],
            [_FERRY_NO_MPI([the MPI compiler wrapper $ferry_mpicc_prog (from --with-mpicc or MPICC) was not found])])
          CC=$MPICC],
        [test -z "$CC"], [
          AC_CHECK_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich])
          AS_IF([test -z "$MPICC"], [_FERRY_NO_MPI([no MPI C compiler wrapper (mpicc) was found on PATH])])
          CC=$MPICC])
])

# _FERRY_NO_MPI(WHAT) - stop with the ways to get an MPI.
AC_DEFUN([_FERRY_NO_MPI], [
  AC_MSG_ERROR([$1.
ferry needs an MPI C compiler wrapper whose MPI supports MPI_THREAD_MULTIPLE.
  Debian/Ubuntu:  apt-get install libopenmpi-dev openmpi-bin   (or: ./bootstrap deps)
  Fedora/RHEL:    dnf install openmpi-devel && module load mpi/openmpi-x86_64
  HPC cluster:    module load openmpi   (or your site's MPI module, e.g. mpich, intel-mpi)
  Or name it:     ./configure MPICC=/path/to/mpicc   (Cray: CC=cc)])
])

# FERRY_CHECK_MPI
# The chosen compiler must compile and link an MPI program that asks for
# MPI_THREAD_MULTIPLE.  Sets FERRY_MPI_DESC for the summary.
AC_DEFUN([FERRY_CHECK_MPI], [
  AC_REQUIRE([AC_PROG_CC])
  AC_CACHE_CHECK([whether $CC compiles and links MPI programs], [ferry_cv_mpi_link], [
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
        int provided;
        MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &provided);
        MPI_Finalize();]])],
      [ferry_cv_mpi_link=yes], [ferry_cv_mpi_link=no])])
  AS_IF([test "x$ferry_cv_mpi_link" != xyes],
    [_FERRY_NO_MPI([$CC cannot build a program that includes <mpi.h> and calls MPI_Init_thread (see config.log)])])
  AC_COMPUTE_INT([ferry_mpi_version], [MPI_VERSION], [[#include <mpi.h>]], [ferry_mpi_version=?])
  AC_COMPUTE_INT([ferry_mpi_subversion], [MPI_SUBVERSION], [[#include <mpi.h>]], [ferry_mpi_subversion=?])
  ferry_mpi_impl=
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif]], [])], [ferry_mpi_impl="Open MPI"])
  AS_IF([test -z "$ferry_mpi_impl"],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif]], [])], [ferry_mpi_impl="MPICH"])])
  FERRY_MPI_DESC="MPI $ferry_mpi_version.$ferry_mpi_subversion${ferry_mpi_impl:+, $ferry_mpi_impl}"
])

# FERRY_PROG_MPIRUN
# Find the launcher the tests use (mpirun or mpiexec, preferring the one
# installed next to the compiler wrapper) and the flags it needs to start
# more ranks than there are cores (Open MPI's --oversubscribe).  When the
# build machine can run programs, a 4-rank job is started to prove it.
# MPIRUN and MPIRUN_FLAGS given by the user are kept as they are.
AC_DEFUN([FERRY_PROG_MPIRUN], [
  AC_REQUIRE([FERRY_CHECK_MPI])
  AC_REQUIRE([FERRY_PROG_TIMEOUT])
  AC_ARG_VAR([MPIRUN], [MPI launcher the tests use (default: mpirun or mpiexec next to the MPI compiler wrapper)])
  AC_ARG_VAR([MPIRUN_FLAGS], [flags the tests pass to MPIRUN before -np (default: --oversubscribe when the launcher accepts it)])
  ferry_cc_prog=`echo "$CC" | sed 's/ .*//'`
  ferry_cc_path=`command -v "$ferry_cc_prog" 2>/dev/null`
  ferry_cc_dir=${ferry_cc_path%/*}
  dnl A launcher named without a path ("mpiexec", "srun --mpi=pmix") is
  dnl resolved here: AC_PATH_PROGS only keeps a value that is a path.
  AS_IF([test -n "$MPIRUN"], [
    ferry_first=`echo "$MPIRUN" | sed 's/ .*//'`
    ferry_rest=`echo "$MPIRUN" | sed -n 's/^@<:@^ @:>@* //p'`
    ferry_first_path=`command -v "$ferry_first" 2>/dev/null` ||
      AC_MSG_ERROR([MPIRUN=$MPIRUN: $ferry_first was not found])
    MPIRUN="$ferry_first_path${ferry_rest:+ $ferry_rest}"])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$ferry_cc_dir$PATH_SEPARATOR$PATH])
  FERRY_MPIRUN_STATUS="not found: MPI tests will fail"
  AS_IF([test -n "$MPIRUN"], [
    AS_IF([test "${MPIRUN_FLAGS+set}" = set],
      [ferry_mpirun_candidates="user"],
      [ferry_mpirun_candidates="--oversubscribe none"])
    FERRY_MPIRUN_STATUS="not tried"
    AS_IF([test "x$cross_compiling" = xyes],
      [FERRY_MPIRUN_STATUS="not tried (cross-compiling)"],
      [test -z "$TIMEOUT"],
      [FERRY_MPIRUN_STATUS="not tried (no timeout command)"],
      [
      AC_MSG_CHECKING([whether $MPIRUN starts a 4-rank job])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#include <stdio.h>]], [[
        int provided, one = 1, sum = 0, rank;
        MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) printf("ranks=%d thread_multiple=%d\n", sum,
                              provided == MPI_THREAD_MULTIPLE);
        MPI_Finalize();
        return sum == 4 ? 0 : 1;]])],
        [cp conftest$EXEEXT conftest_mpirun$EXEEXT
         FERRY_MPIRUN_STATUS="failed: MPI tests will fail (see config.log)"
         dnl srun counts tasks with -n, as tests/run-mpi.sh knows too.
         AS_CASE([`echo "$MPIRUN" | sed 's/ .*//; s,.*/,,'`],
           [srun], [ferry_npflag=-n], [ferry_npflag=-np])
         for ferry_flags in $ferry_mpirun_candidates; do
           AS_CASE([$ferry_flags],
             [user], [ferry_flags=$MPIRUN_FLAGS],
             [none], [ferry_flags=])
           echo "running: $MPIRUN $ferry_flags $ferry_npflag 4 ./conftest_mpirun$EXEEXT" >&AS_MESSAGE_LOG_FD
           ferry_out=`OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
             $TIMEOUT -k 5 60 $MPIRUN $ferry_flags $ferry_npflag 4 ./conftest_mpirun$EXEEXT 2>&AS_MESSAGE_LOG_FD`
           ferry_rc=$?
           echo "exit status $ferry_rc, output: $ferry_out" >&AS_MESSAGE_LOG_FD
           AS_IF([test $ferry_rc -eq 0], [
             MPIRUN_FLAGS=$ferry_flags
             AS_CASE([$ferry_out],
               [*thread_multiple=1*], [FERRY_MPIRUN_STATUS="works"],
               [FERRY_MPIRUN_STATUS="works, but MPI_THREAD_MULTIPLE is not provided"])
             break])
         done
         rm -f conftest_mpirun$EXEEXT],
        [FERRY_MPIRUN_STATUS="not tried (the test program did not link)"])
      AC_MSG_RESULT([$FERRY_MPIRUN_STATUS])
      AS_CASE([$FERRY_MPIRUN_STATUS], [works], [],
        [AC_MSG_WARN([$MPIRUN: $FERRY_MPIRUN_STATUS])])
    ])
  ], [AC_MSG_WARN([no MPI launcher (mpirun, mpiexec) found: the MPI tests will fail; set MPIRUN=...])])
  AC_SUBST([MPIRUN_FLAGS])
])

# FERRY_PROG_TIMEOUT
# timeout(1) bounds every test, so that a hang is a failure, not a stuck make.
AC_DEFUN([FERRY_PROG_TIMEOUT], [
  AC_ARG_VAR([TIMEOUT], [timeout(1) command used to bound every test])
  AC_PATH_PROGS([TIMEOUT], [timeout gtimeout])
  AS_IF([test -z "$TIMEOUT"],
    [AC_MSG_WARN([no timeout command (GNU coreutils): a hanging test will hang make check])])
  AM_CONDITIONAL([HAVE_TIMEOUT], [test -n "$TIMEOUT"])
])

# FERRY_PROG_PYTHON_NUMPY
# A Python 3 with numpy writes test fixtures.  /usr/bin/python3 comes first:
# on Debian it is the one that sees python3-numpy, whereas a python3 earlier
# on PATH (pyenv, conda, a venv) may not.  Tests skip (77) without one.
AC_DEFUN([FERRY_PROG_PYTHON_NUMPY], [
  AC_ARG_VAR([PYTHON_NUMPY], [Python 3 interpreter with numpy, for test fixtures])
  AC_CACHE_CHECK([for a Python 3 with numpy], [ferry_cv_python_numpy], [
    ferry_cv_python_numpy=no
    AS_IF([test -n "$PYTHON_NUMPY"], [ferry_candidates=$PYTHON_NUMPY],
          [ferry_candidates="/usr/bin/python3 python3 python"])
    for ferry_py in $ferry_candidates; do
      ferry_py_path=`command -v "$ferry_py" 2>/dev/null` || continue
      AS_IF(["$ferry_py_path" -c 'import sys, numpy; sys.exit(0 if sys.version_info.major >= 3 else 1)' >/dev/null 2>&1],
        [ferry_cv_python_numpy=$ferry_py_path; break])
    done])
  AS_IF([test "x$ferry_cv_python_numpy" = xno],
    [PYTHON_NUMPY=
     AC_MSG_WARN([no Python 3 with numpy: tests that need fixtures will be skipped (apt-get install python3-numpy)])],
    [PYTHON_NUMPY=$ferry_cv_python_numpy])
])
